/*
 * shogi/rng.h — the one pseudo-random generator of the tree: splitmix64, a
 * fixed and portable stream (the Zobrist keys come from it, so changing it
 * changes every key in every book), and its finaliser as a 64-bit mixer.
 */
#ifndef SHOGI_RNG_H
#define SHOGI_RNG_H

#include <stdint.h>
#include <unistd.h>

#include "shogi/clock.h"

/* The splitmix64 finaliser: a bijective 64-bit hash. */
static inline uint64_t rng_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64's output for the state x (a hash of x; the stream's next number
 * is rng_hash(*s) with *s advanced by the same step). */
static inline uint64_t rng_hash(uint64_t x)
{
	return rng_mix(x + 0x9e3779b97f4a7c15ULL);
}

/* The next number of the stream whose state is *s. */
static inline uint64_t rng_next(uint64_t *s)
{
	return rng_mix(*s += 0x9e3779b97f4a7c15ULL);
}

/* The next number of the stream as a double uniform in [0, 1) (its top 53 bits). */
static inline double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* A process's id, 16 lowercase hex digits and a NUL, from the monotonic
 * clock, the pid and self (the object it names) mixed: a worker's or a
 * coordinator's `instance`, new at each start. */
static inline void rng_instance(char out[17], const void *self)
{
	uint64_t salt =
	    (uint64_t)clock_ns() ^ ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)self;
	uint64_t bits = rng_next(&salt);
	for (int i = 0; i < 16; i++) out[i] = "0123456789abcdef"[(bits >> (4 * i)) & 15];
	out[16] = 0;
}

#endif
