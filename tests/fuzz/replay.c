/* SPDX-License-Identifier: MIT */
/*
 * replay — runs a fuzz harness on a corpus without libFuzzer, as a test.
 *
 * Usage: replay_<name> PATH...  Each PATH is a file (one input) or a directory
 * (every regular file under it, recursively). Each input goes to
 * LLVMFuzzerTestOneInput() in a buffer of exactly its size, so a sanitizer build
 * catches a read past the end as libFuzzer would. Prints how many inputs ran;
 * fails when one crashes (the harness aborts), when a path cannot be read, or when
 * there was nothing to run: a corpus that went missing must not pass.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

#define REPLAY_MAX_INPUT (16U << 20) /* bytes: larger is not a fuzz input */

static unsigned replay_ran;

/* Reads @path into an exactly sized buffer and runs the harness on it. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *data = NULL;
	long size;
	int r = -EIO;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	if ((unsigned long)size > REPLAY_MAX_INPUT) {
		r = -EFBIG;
		goto out;
	}
	data = malloc(size ? (size_t)size : 1);
	if (!data) {
		r = -ENOMEM;
		goto out;
	}
	if (size && fread(data, 1, (size_t)size, f) != (size_t)size)
		goto out;
	/* Named before it runs: a crash report then says which input it was. */
	fprintf(stderr, "replay: %s (%ld bytes)\n", path, size);
	LLVMFuzzerTestOneInput(data, (size_t)size);
	replay_ran++;
	r = 0;
out:
	free(data);
	fclose(f);
	return r;
}

static int replay_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	int r;

	(void)st;
	(void)ftw;
	if (type == FTW_D)
		return 0;
	if (type != FTW_F) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		return 1;
	}
	r = replay_file(path);
	if (r < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-r));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		/* 1: replay_visit() said what went wrong; -1: nftw() itself failed. */
		int r = nftw(argv[i], replay_visit, 16, FTW_PHYS);

		if (r < 0)
			fprintf(stderr, "replay: %s: %m\n", argv[i]);
		if (r != 0)
			return 1;
	}
	printf("replay: %s: ran %u inputs\n", program_invocation_short_name, replay_ran);
	if (replay_ran == 0) {
		fprintf(stderr, "replay: no inputs: the corpus is missing\n");
		return 1;
	}
	return 0;
}
