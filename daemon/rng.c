/* SPDX-License-Identifier: MIT */
/*
 * rng — xoshiro256** (Blackman & Vigna, public domain reference at
 * prng.di.unimi.it), seeded from getrandom() or, for tests, from splitmix64.
 * 2^256-1 period, passes BigCrush; a few ns per 8 bytes, no syscalls after seeding.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "rng.h"

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed_with(struct rng *r, uint64_t seed)
{
	/* splitmix64 never yields four zero words in a row: the state is valid. */
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

int rng_seed(struct rng *r)
{
	unsigned char *p = (unsigned char *)r->s;
	size_t got = 0;

	while (got < sizeof(r->s)) {
		ssize_t n = getrandom(p + got, sizeof(r->s) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	/* The all-zero state is the one xoshiro cannot leave. */
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		rng_seed_with(r, 0);
	return 0;
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	const uint64_t result = rotl(s[1] * 5, 7) * 9;
	const uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/*
 * Lemire, "Fast Random Integer Generation in an Interval" (2019): the high word of
 * a 64x64->128 multiply, rejecting the few low words that would bias it. The
 * division runs only when the low word lands in the rejection zone.
 */
uint64_t rng_below(struct rng *r, uint64_t n)
{
	if (n <= 1)
		return 0; /* n == 0 is a caller bug; answer something in range of n == 1 */

	unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
	uint64_t low = (uint64_t)m;

	if (low < n) {
		uint64_t threshold = -n % n; /* 2^64 mod n */

		while (low < threshold) {
			m = (unsigned __int128)rng_next(r) * n;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

void rng_fill(struct rng *r, void *buf, size_t len)
{
	unsigned char *p = buf;
	uint64_t v;

	while (len >= 8) {
		v = rng_next(r);
		memcpy(p, &v, 8); /* compiles to one unaligned store */
		p += 8;
		len -= 8;
	}
	if (len) {
		v = rng_next(r);
		memcpy(p, &v, len);
	}
}
