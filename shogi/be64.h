/*
 * shogi/be64.h — the one big-endian u64 encoding of the tree: the form keys
 * and counters take in LMDB's sorted databases (sequence numbers, lease ids,
 * history times), so that byte order is numeric order; and its n-byte form,
 * for the fields of records a pass sorts by their bytes (shogi/extsort.h).
 */
#ifndef SHOGI_BE64_H
#define SHOGI_BE64_H

#include <stdint.h>

static inline void be64_put(uint8_t out[8], uint64_t x)
{
	for (int i = 7; i >= 0; i--, x >>= 8) out[i] = (uint8_t)x;
}

static inline uint64_t be64_get(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 0; i < 8; i++) x = x << 8 | p[i];
	return x;
}

/* The low n bytes of x (n <= 8), big-endian. */
static inline void be_put(uint8_t *out, uint64_t x, int n)
{
	for (int i = n; i-- > 0; x >>= 8) out[i] = (uint8_t)x;
}

static inline uint64_t be_get(const uint8_t *p, int n)
{
	uint64_t x = 0;
	for (int i = 0; i < n; i++) x = x << 8 | p[i];
	return x;
}

#endif
