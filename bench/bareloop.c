/* SPDX-License-Identifier: MIT */
/*
 * bareloop — the floor for a QD1 read ping: open O_DIRECT, then N times pick a
 * random block-aligned offset in the working set, clock_gettime, pread,
 * clock_gettime. Nothing else. Prints "p50_ns p99_ns mean_ns count".
 *
 *   cc -O2 -o bareloop bareloop.c && ./bareloop FILE COUNT [BLOCK [WORKING_SET]]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t bs = 4096, ws, n, x, sum = 0, *lat;
	struct stat st;
	void *buf;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE COUNT [BLOCK [WORKING_SET]]\n", argv[0]);
		return 64;
	}
	n = strtoull(argv[2], NULL, 10);
	if (argc > 3)
		bs = strtoull(argv[3], NULL, 10);
	fd = open(argv[1], O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	ws = argc > 4 ? strtoull(argv[4], NULL, 10) : (uint64_t)st.st_size;
	lat = calloc(n ? n : 1, sizeof(*lat));
	if (!n || !bs || ws < bs || !lat || posix_memalign(&buf, 4096, bs) != 0) {
		fprintf(stderr, "bad arguments or out of memory\n");
		return 1;
	}
	x = now_ns() | 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off, t0, t1;

		x ^= x << 13; /* xorshift64: offsets only */
		x ^= x >> 7;
		x ^= x << 17;
		off = (x % (ws / bs)) * bs;
		t0 = now_ns();
		if (pread(fd, buf, bs, (off_t)off) != (ssize_t)bs) {
			perror("pread");
			return 1;
		}
		t1 = now_ns();
		lat[i] = t1 - t0;
		sum += lat[i];
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	/* Nearest rank, as iopulse's histogram and fio do. */
	printf("%llu %llu %llu %llu\n", (unsigned long long)lat[(n * 50 + 99) / 100 - 1],
	       (unsigned long long)lat[(n * 99 + 99) / 100 - 1], (unsigned long long)(sum / n),
	       (unsigned long long)n);
	return 0;
}
