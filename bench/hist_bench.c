/* SPDX-License-Identifier: MIT */
/*
 * hist_bench — the cost of hist_record() per sample, against the floor: a plain
 * array increment (counts[x & mask]++) over the same stream of latencies.
 *
 * The stream is pre-generated (the RNG and exp() stay out of the timing):
 * lognormal latencies, median 100 us, sigma 0.5 (a healthy SSD with a tail),
 * and a wide one (median 200 us, sigma 2: ns to seconds) where the table
 * lookups and classic slots vary more. Each variant runs ROUNDS times over the
 * stream; the best round counts (least disturbed by the machine). Prints one
 * line per variant: ns/sample and the ratio to the floor.
 *
 *   cc -O2 -I. -o hist_bench bench/hist_bench.c daemon/metrics/hist.c -lm -lpthread
 *   ./hist_bench [SAMPLES [ROUNDS]]
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "config/default_buckets.h"
#include "daemon/metrics/hist.h"
#include "tests/samples.h"

/* iopulse's default classic buckets, 10 us .. 10 s. */
static const uint64_t default_bounds[] = CFG_DEFAULT_BUCKETS_NS;
#define N_DEFAULT (sizeof(default_bounds) / sizeof(default_bounds[0]))

#define FLOOR_MASK 4095u

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void fill_lognormal(uint64_t *v, size_t n, double median_ns, double sigma, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = sample_lognormal_ns(&seed, median_ns, sigma);
}

/* The floor: one increment per sample, indexed by the sample. Not inlined, so
 * the loop is as opaque to the compiler as the hist_record() one. */
static __attribute__((noinline)) void floor_pass(uint64_t *counts, const uint64_t *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		counts[v[i] & FLOOR_MASK]++;
}

static __attribute__((noinline)) void hist_pass(struct hist *h, const uint64_t *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		hist_record(h, v[i]);
}

/* Best ns/sample over @rounds passes of each of the three variants, interleaved
 * so that frequency changes hit them alike. */
static void run(const char *name, const uint64_t *v, size_t n, unsigned rounds)
{
	static uint64_t counts[FLOOR_MASK + 1];
	unsigned i;
	struct hist *plain = hist_new(NULL, 0), *classic = hist_new(default_bounds, N_DEFAULT);
	double best[3] = {1e30, 1e30, 1e30};
	uint64_t check = 0;
	unsigned r, k;

	for (i = 0; i <= FLOOR_MASK; i++)
		counts[i] = 0;
	if (!plain || !classic) {
		fprintf(stderr, "hist_new failed\n");
		exit(1);
	}
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < 3; k++) {
			uint64_t t0 = now_ns(), t;

			if (k == 0)
				floor_pass(counts, v, n);
			else
				hist_pass(k == 1 ? plain : classic, v, n);
			t = now_ns() - t0;
			if ((double)t / (double)n < best[k])
				best[k] = (double)t / (double)n;
		}
	}
	for (k = 0; k <= FLOOR_MASK; k++)
		check += counts[k];
	if (check != (uint64_t)n * rounds || hist_count(plain) != check ||
	    hist_count(classic) != check) {
		fprintf(stderr, "count mismatch\n");
		exit(1);
	}
	printf("%-28s floor %5.2f ns  hist_record %5.2f ns (%4.1fx)  + %zu classic bounds %5.2f ns "
	       "(%4.1fx)"
	       "  p99 %.1f us\n",
	       name, best[0], best[1], best[1] / best[0], N_DEFAULT, best[2], best[2] / best[0],
	       hist_quantile_ns(classic, 0.99) / 1e3);
	hist_free(plain);
	hist_free(classic);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (1u << 20);
	unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 15;
	uint64_t *v = malloc(n * sizeof(*v));

	if (!v || !n || !rounds) {
		fprintf(stderr, "usage: hist_bench [SAMPLES [ROUNDS]]\n");
		return 2;
	}
	printf("%zu samples x %u rounds, best round, ns/sample\n", n, rounds);
	fill_lognormal(v, n, 100e3, 0.5, 1);
	run("lognormal 100us sigma 0.5", v, n, rounds);
	fill_lognormal(v, n, 200e3, 2.0, 2);
	run("lognormal 200us sigma 2", v, n, rounds);
	free(v);
	return 0;
}
