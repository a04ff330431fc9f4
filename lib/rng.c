/* SPDX-License-Identifier: MIT */
/*
 * rng — xoshiro256** (Blackman & Vigna, public domain reference at
 * prng.di.unimi.it), seeded from getrandom() or, for tests, from splitmix64.
 * 2^256-1 period, passes BigCrush; a few ns per 8 bytes, no syscalls after seeding.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "lib/rng.h"

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

/*
 * The same words rng_next() would return, in order, but with the state held in
 * locals: through r->s, every store into the char buffer may alias the state
 * (char aliases anything), and the compiler reloads and stores all four words
 * per step. Held in registers, a 4KiB fill takes ~0.55us instead of ~1.5us.
 */
static void rng_fill_serial(struct rng *r, void *buf, size_t len)
{
	unsigned char *p = buf;
	uint64_t s0 = r->s[0], s1 = r->s[1], s2 = r->s[2], s3 = r->s[3];
	uint64_t v, t;

#define RNG_STEP()                                                                                 \
	do {                                                                                       \
		v = rotl(s1 * 5, 7) * 9;                                                           \
		t = s1 << 17;                                                                      \
		s2 ^= s0;                                                                          \
		s3 ^= s1;                                                                          \
		s1 ^= s2;                                                                          \
		s0 ^= s3;                                                                          \
		s2 ^= t;                                                                           \
		s3 = rotl(s3, 45);                                                                 \
	} while (0)

	while (len >= 8) {
		RNG_STEP();
		memcpy(p, &v, 8); /* compiles to one unaligned store */
		p += 8;
		len -= 8;
	}
	if (len) {
		RNG_STEP();
		memcpy(p, &v, len);
	}
#undef RNG_STEP
	r->s[0] = s0;
	r->s[1] = s1;
	r->s[2] = s2;
	r->s[3] = s3;
}

/*
 * Fills of 256 bytes and more (every write's data) run several independent
 * xoshiro256** lanes, seeded afresh from @r on each call, so that the compiler
 * keeps them in vector registers: four lanes in one AVX2 register (~3x the
 * serial rate), or, where the CPU has AVX-512, sixteen lanes in two registers
 * (~2.5x that again: twice the width, native rotates, and two independent
 * chains to hide each step's latency). A 4KiB write's data then costs ~0.1us,
 * which is what lets a write burst keep up with its disk instead of with its
 * data (at QD1 on the null engine it was 75% of a write burst's CPU). The bytes
 * are as random, but not rng_next()'s sequence.
 */
typedef uint64_t u64x4 __attribute__((vector_size(32)));
typedef uint64_t u64x8 __attribute__((vector_size(64)));

#define ROTL4(x, k)   (((x) << (k)) | ((x) >> (64 - (k))))
#define RNG_LANES_MIN 256

/* One xoshiro256** step on every lane of the vectors s0..s3 (any width): v gets
 * the outputs. */
#define XOSHIRO_LANES(v, s0, s1, s2, s3)                                                           \
	do {                                                                                       \
		__typeof__(s1) x_ = (s1) + ((s1) << 2); /* s1 * 5 */                               \
		__typeof__(s1) t_ = (s1) << 17;                                                    \
		x_ = ROTL4(x_, 7);                                                                 \
		(v) = x_ + (x_ << 3); /* * 9 */                                                    \
		(s2) ^= (s0);                                                                      \
		(s3) ^= (s1);                                                                      \
		(s1) ^= (s2);                                                                      \
		(s0) ^= (s3);                                                                      \
		(s2) ^= t_;                                                                        \
		(s3) = ROTL4(s3, 45);                                                              \
	} while (0)

/* target_clones makes an ifunc whose resolver runs during relocation, before a
 * ThreadSanitizer runtime is up (GCC instruments the resolver): not under TSan.
 * Nor with clang before 18, which names the symbol fill_x4.ifunc and leaves
 * it undefined at link time (llvm-project #71706). */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) &&                                        \
	!(defined(__clang__) && __clang_major__ < 18)
#define RNG_X86_CLONES 1
#endif

/* @n state words for the lanes of one fill, from one rng_next(): any nonzero
 * seed gives lanes that are valid (never all-zero) and independent. */
static void seed_lanes(struct rng *r, uint64_t *w, unsigned n)
{
	uint64_t seed = rng_next(r);

	for (unsigned i = 0; i < n; i++)
		w[i] = splitmix64(&seed);
}

#ifdef RNG_X86_CLONES
__attribute__((target_clones("avx2", "default")))
#endif
static void
fill_x4(struct rng *r, unsigned char *p, size_t len)
{
	uint64_t w[16];
	u64x4 s0, s1, s2, s3, v;

	seed_lanes(r, w, 16);
	memcpy(&s0, w, 32);
	memcpy(&s1, w + 4, 32);
	memcpy(&s2, w + 8, 32);
	memcpy(&s3, w + 12, 32);
	while (len >= 32) {
		XOSHIRO_LANES(v, s0, s1, s2, s3);
		memcpy(p, &v, 32);
		p += 32;
		len -= 32;
	}
	rng_fill_serial(r, p, len);
}

#ifdef RNG_X86_CLONES
/* Two sets of eight lanes: each step's chain is a few dependent operations, and
 * two independent ones keep the vector units busy. Only called where the CPU
 * has AVX-512F (rng_fill() checks). */
__attribute__((target("avx512f"))) static void fill_x16(struct rng *r, unsigned char *p, size_t len)
{
	uint64_t w[64];
	u64x8 a0, a1, a2, a3, b0, b1, b2, b3, va, vb;

	seed_lanes(r, w, 64);
	memcpy(&a0, w, 64);
	memcpy(&a1, w + 8, 64);
	memcpy(&a2, w + 16, 64);
	memcpy(&a3, w + 24, 64);
	memcpy(&b0, w + 32, 64);
	memcpy(&b1, w + 40, 64);
	memcpy(&b2, w + 48, 64);
	memcpy(&b3, w + 56, 64);
	while (len >= 128) {
		XOSHIRO_LANES(va, a0, a1, a2, a3);
		XOSHIRO_LANES(vb, b0, b1, b2, b3);
		memcpy(p, &va, 64);
		memcpy(p + 64, &vb, 64);
		p += 128;
		len -= 128;
	}
	rng_fill_serial(r, p, len);
}
#endif

static enum rng_fill_impl fill_forced; /* RNG_FILL_AUTO: the widest the CPU has */

void rng_fill_force(enum rng_fill_impl impl)
{
	fill_forced = impl;
}

enum rng_fill_impl rng_fill_used(void)
{
#ifdef RNG_X86_CLONES
	if (fill_forced != RNG_FILL_X4 && __builtin_cpu_supports("avx512f"))
		return RNG_FILL_X16;
#endif
	return RNG_FILL_X4;
}

void rng_fill(struct rng *r, void *buf, size_t len)
{
	if (len < RNG_LANES_MIN) {
		rng_fill_serial(r, buf, len);
		return;
	}
#ifdef RNG_X86_CLONES
	if (fill_forced != RNG_FILL_X4 && __builtin_cpu_supports("avx512f")) {
		fill_x16(r, buf, len);
		return;
	}
#endif
	fill_x4(r, buf, len);
}
