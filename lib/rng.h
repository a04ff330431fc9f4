/* SPDX-License-Identifier: MIT */
/*
 * rng — xoshiro256** for offsets and write data. Written by hand because it is
 * twenty lines and must be allocation- and syscall-free on the I/O path;
 * seeded once from getrandom(). Not for cryptography: its job is data that no
 * compressing or deduplicating backend can shrink.
 */
#ifndef IOPULSE_RNG_H
#define IOPULSE_RNG_H

#include <stddef.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Seed from getrandom(); 0 or -errno. */
int rng_seed(struct rng *r);
/* Seed deterministically (tests). */
void rng_seed_with(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Fill @len bytes with random data: fresh on every call (see rng.c). */
void rng_fill(struct rng *r, void *buf, size_t len);

/* rng_fill()'s vector paths, for tests: 4 lanes (AVX2 or plain), 16 (AVX-512F). */
enum rng_fill_impl {
	RNG_FILL_AUTO, /* the widest the CPU has */
	RNG_FILL_X4,
	RNG_FILL_X16,
};
/* Tests: forbid the 16-lane path (RNG_FILL_X4) or allow it again (RNG_FILL_AUTO). */
void rng_fill_force(enum rng_fill_impl impl);
/* The path rng_fill() takes now: RNG_FILL_X4 or RNG_FILL_X16. */
enum rng_fill_impl rng_fill_used(void);

#endif
