/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the configuration loader: cfg_load_string() on arbitrary bytes (not
 * NUL-terminated: it takes a length) must return 0 with a config or an error
 * with a message, never crash, leak or read past the input. A config it accepts
 * must print (cfg_print()) as YAML that loads again and prints the same: `iopulse
 * check` shows that text as the effective schedule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "tests/fuzz/fuzz.h"

/* Prints @c into a fresh malloc'd string; aborts when out of memory. */
static char *print_config(const struct config *c, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	cfg_print(c, f);
	if (fclose(f) != 0)
		abort();
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *c = NULL, *again = NULL;
	struct cfg_error err;
	char *printed, *reprinted;
	size_t printed_len, reprinted_len;
	int r;

	r = cfg_load_string("fuzz.yaml", (const char *)data, size, &c, &err);
	if (r < 0) {
		/* Every failure says why, and leaves nothing to free. */
		if (c || !err.msg[0] || !memchr(err.msg, '\0', sizeof(err.msg)))
			abort();
		return 0;
	}
	if (r != 0 || !c)
		abort();

	/* The same name: the printed header comment names the source. */
	printed = print_config(c, &printed_len);
	r = cfg_load_string("fuzz.yaml", printed, printed_len, &again, &err);
	if (r < 0) {
		fprintf(stderr, "fuzz_config: the printed schedule does not load: %s\n%s", err.msg,
			printed);
		abort();
	}
	reprinted = print_config(again, &reprinted_len);
	if (reprinted_len != printed_len || memcmp(printed, reprinted, printed_len) != 0) {
		fprintf(stderr, "fuzz_config: printing is not stable:\n%s\n---\n%s", printed,
			reprinted);
		abort();
	}
	free(reprinted);
	free(printed);
	cfg_free(again);
	cfg_free(c);
	return 0;
}
