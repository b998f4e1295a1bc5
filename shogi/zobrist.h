/*
 * shogi/zobrist.h — the 128-bit position key (docs/shogi.md, "The key").
 *
 * key = board_key + hand_key, lane by lane (each 64-bit half added mod 2^64):
 *   board_key = XOR of ZOB_PSQ[piece][sq] over the board, XOR ZOB_SIDE when
 *               White is to move;
 *   hand_key  = sum of ZOB_HAND[colour][type] once per piece held.
 * The tables come from a fixed-seed splitmix64 stream, so a key is the same on
 * every machine and in every book: they are part of the on-disk format and must
 * never change (docs/bookdb.md). The move number is not part of the key.
 */
#ifndef SHOGI_ZOBRIST_H
#define SHOGI_ZOBRIST_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "shogi/types.h"
#include "shogi/errors.h"

typedef struct {
	uint64_t lo, hi;
} Key;

extern Key ZOB_PSQ[PIECE_NB][SQ_NB];
extern Key ZOB_HAND[COLOR_NB][HAND_PT_NB];
extern Key ZOB_SIDE;

static inline Key key_xor(Key a, Key b)
{
	Key r = {a.lo ^ b.lo, a.hi ^ b.hi};
	return r;
}
static inline Key key_add(Key a, Key b)
{
	Key r = {a.lo + b.lo, a.hi + b.hi};
	return r;
}
static inline Key key_sub(Key a, Key b)
{
	Key r = {a.lo - b.lo, a.hi - b.hi};
	return r;
}
static inline Key key_combine(Key board, Key hand)
{
	return key_add(board, hand);
}
static inline bool key_equal(Key a, Key b)
{
	return a.lo == b.lo && a.hi == b.hi;
}
/* Total order (hi, then lo), for sorting. */
static inline int key_cmp(Key a, Key b)
{
	if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
	if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
	return 0;
}

/* 32 lower-case hex digits (hi then lo) plus NUL. */
#define KEY_HEX_LEN 33
void key_to_hex(Key k, char out[KEY_HEX_LEN]);
/* Parses exactly 32 hex digits; returns 0 or -1. */
JOSEKI_MUST_USE int key_from_hex(Key *out, const char *hex);
/* 16 bytes, big-endian hi then lo: byte order equals key_cmp order. */
void key_to_bytes(Key k, uint8_t out[16]);
Key key_from_bytes(const uint8_t in[16]);

void zobrist_init(void);

#endif
