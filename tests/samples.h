/* SPDX-License-Identifier: MIT */
/*
 * samples — reproducible latency samples for the histogram tests and benchmarks
 * (tests/unit/test_hist.c, bench/hist_bench.c, bench/render_bench.c): a seeded
 * xorshift64 and the distributions built on it. Header-only, so a benchmark built
 * by a bench/ script with a bare cc line needs nothing more. Not daemon/rng: these
 * must be the same numbers for a given seed on every run, across versions.
 */
#ifndef IOPULSE_TESTS_SAMPLES_H
#define IOPULSE_TESTS_SAMPLES_H

#include <math.h>
#include <stdint.h>

static inline uint64_t sample_xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* Uniform in (0, 1]: never 0, so log() is safe. */
static inline double sample_uniform01(uint64_t *s)
{
	return ((double)(sample_xorshift(s) >> 11) + 1.0) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double sample_gaussian(uint64_t *s)
{
	double u1 = sample_uniform01(s), u2 = sample_uniform01(s);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Lognormal latency in ns with this median and sigma, at least 1. */
static inline uint64_t sample_lognormal_ns(uint64_t *s, double median_ns, double sigma)
{
	double x = median_ns * exp(sigma * sample_gaussian(s));

	return x < 1.0 ? 1 : (uint64_t)x;
}

#endif
