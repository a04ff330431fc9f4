/* SPDX-License-Identifier: MIT */
/* rng: known answers, determinism, unbiased rng_below, incompressible rng_fill. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "lib/rng.h"

static void test_known_answer(void **state)
{
	/* xoshiro256** seeded by four splitmix64 outputs from 42, computed
	 * independently (Python reference of both algorithms). */
	static const uint64_t want[] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL,
					0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL};
	struct rng r;

	(void)state;
	rng_seed_with(&r, 42);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(rng_next(&r), want[i]);
}

static void test_determinism(void **state)
{
	struct rng a, b, c;
	unsigned same = 0;

	(void)state;
	rng_seed_with(&a, 7);
	rng_seed_with(&b, 7);
	rng_seed_with(&c, 8);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = rng_next(&a);

		assert_int_equal(x, rng_next(&b));
		same += x == rng_next(&c);
	}
	assert_int_equal(same, 0);
}

static void test_seed_getrandom(void **state)
{
	struct rng a, b;

	(void)state;
	assert_int_equal(rng_seed(&a), 0);
	assert_int_equal(rng_seed(&b), 0);
	assert_true(a.s[0] | a.s[1] | a.s[2] | a.s[3]);
	assert_memory_not_equal(a.s, b.s, sizeof(a.s));
}

static void test_below_range(void **state)
{
	static const uint64_t ns[] = {1, 2, 3, 7, 1000, 4097, (1ULL << 63) + 1, UINT64_MAX};
	struct rng r;

	(void)state;
	rng_seed_with(&r, 1);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (int j = 0; j < 10000; j++)
			assert_true(rng_below(&r, ns[i]) < ns[i]);
	for (int j = 0; j < 100; j++)
		assert_int_equal(rng_below(&r, 1), 0);
}

/* Chi-square of @k observed counts against a uniform expectation. */
static double chi_square(const unsigned *obs, unsigned k, unsigned total)
{
	double e = (double)total / k, x = 0;

	for (unsigned i = 0; i < k; i++)
		x += ((double)obs[i] - e) * ((double)obs[i] - e) / e;
	return x;
}

static void test_below_uniform(void **state)
{
	unsigned counts[10] = {0};
	struct rng r;

	(void)state;
	rng_seed_with(&r, 2);
	for (int i = 0; i < 100000; i++)
		counts[rng_below(&r, 10)]++;
	/* 9 degrees of freedom: p = 0.001 at 27.9. Loose, and the seed is fixed. */
	assert_true(chi_square(counts, 10, 100000) < 40.0);
}

static void test_below_no_modulo_bias(void **state)
{
	/* n = 3 * 2^62: plain "rng_next() % n" would put half of all values in the
	 * first third. Unbiased, each third gets a third. */
	const uint64_t third = 1ULL << 62, n = 3 * third;
	unsigned counts[3] = {0};
	struct rng r;

	(void)state;
	rng_seed_with(&r, 3);
	for (int i = 0; i < 60000; i++)
		counts[rng_below(&r, n) / third]++;
	assert_true(chi_square(counts, 3, 60000) < 20.0);
}

static void test_fill_incompressible(void **state)
{
	static unsigned char buf[64 * 1024];
	unsigned hist[256] = {0};
	struct rng r;

	(void)state;
	rng_seed_with(&r, 4);
	rng_fill(&r, buf, sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		hist[buf[i]]++;
	/* 255 degrees of freedom: p = 0.001 at ~330. Every byte value present. */
	for (int i = 0; i < 256; i++)
		assert_true(hist[i] > 0);
	assert_true(chi_square(hist, 256, sizeof(buf)) < 400.0);

	/* And no repeated 8-byte words (a stuck generator would repeat). */
	uint64_t w0, w1;
	for (size_t i = 8; i < sizeof(buf); i += 8) {
		memcpy(&w0, buf + i - 8, 8);
		memcpy(&w1, buf + i, 8);
		assert_true(w0 != w1);
	}
}

static void test_fill_lengths(void **state)
{
	unsigned char buf[64];
	struct rng a, b;

	(void)state;
	/* Short fills write exactly len bytes, and the bytes are rng_next()'s. */
	for (size_t len = 0; len <= 40; len++) {
		memset(buf, 0xAA, sizeof(buf));
		rng_seed_with(&a, 5);
		rng_seed_with(&b, 5);
		rng_fill(&a, buf, len);
		for (size_t i = len; i < sizeof(buf); i++)
			assert_int_equal(buf[i], 0xAA);
		for (size_t off = 0; off + 8 <= len; off += 8) {
			uint64_t v = rng_next(&b);

			assert_memory_equal(buf + off, &v, 8);
		}
	}
}

/* Long fills (the vector lanes): exactly len bytes, fresh on every call, no
 * repeated 32-byte block, and a flat byte distribution. */
static void test_fill_long(void **state)
{
	static unsigned char a[65536 + 64], b[65536 + 64];
	unsigned long counts[256] = {0};
	double chi = 0, expect;
	struct rng r;

	(void)state;
	rng_seed_with(&r, 9);
	for (size_t len = 256; len <= 65536; len = len * 2 + 8) {
		memset(a, 0xAA, sizeof(a));
		rng_fill(&r, a, len);
		for (size_t i = len; i < sizeof(a); i++)
			assert_int_equal(a[i], 0xAA);
		rng_fill(&r, b, len);
		assert_memory_not_equal(a, b, len); /* fresh data per call */
	}
	rng_fill(&r, a, 65536);
	for (size_t i = 0; i < 65536; i += 32)
		for (size_t j = i + 32; j < 65536; j += 32 * 97) /* sampled pairs */
			assert_memory_not_equal(a + i, a + j, 32);
	for (size_t i = 0; i < 65536; i++)
		counts[a[i]]++;
	expect = 65536.0 / 256;
	for (int i = 0; i < 256; i++)
		chi += (counts[i] - expect) * (counts[i] - expect) / expect;
	assert_true(chi < 400); /* 255 degrees of freedom: p ~ 1e-8 */
}

/*
 * The promise for write data (README, iopulse.yaml(5)): each 4KiB write is fresh
 * random bytes. zlib at its best cannot shrink one write's buffer, no 512-byte
 * sector of it repeats another, and the next write differs from it in every
 * sector (a deduplicating backend finds nothing to share) -- on every vector
 * path this CPU has (16 lanes where AVX-512F is, 4 lanes always).
 */
static void check_write_buffers(void)
{
	static unsigned char a[4096], b[4096], z[8192];
	struct rng r;

	rng_seed_with(&r, 11);
	for (int w = 0; w < 64; w++) {
		uLongf zlen = sizeof(z);

		rng_fill(&r, a, sizeof(a));
		rng_fill(&r, b, sizeof(b));
		assert_int_equal(compress2(z, &zlen, a, sizeof(a), Z_BEST_COMPRESSION), Z_OK);
		assert_true(zlen >= sizeof(a)); /* stored: nothing to gain */
		for (size_t i = 0; i < sizeof(a); i += 512) {
			assert_memory_not_equal(a + i, b + i, 512);
			for (size_t j = i + 512; j < sizeof(a); j += 512)
				assert_memory_not_equal(a + i, a + j, 512);
		}
	}
}

static void test_fill_write_buffers(void **state)
{
	(void)state;
	rng_fill_force(RNG_FILL_X4);
	assert_int_equal(rng_fill_used(), RNG_FILL_X4);
	check_write_buffers();
	test_fill_long(state);
	rng_fill_force(RNG_FILL_AUTO);
	if (rng_fill_used() == RNG_FILL_X16) {
		check_write_buffers();
		test_fill_long(state);
	} else {
		print_message("no AVX-512F here: the 16-lane path is not tested\n");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answer),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_seed_getrandom),
		cmocka_unit_test(test_below_range),
		cmocka_unit_test(test_below_uniform),
		cmocka_unit_test(test_below_no_modulo_bias),
		cmocka_unit_test(test_fill_incompressible),
		cmocka_unit_test(test_fill_lengths),
		cmocka_unit_test(test_fill_long),
		cmocka_unit_test(test_fill_write_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
