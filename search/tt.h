/*
 * search/tt.h — the built-in engine's transposition table: a power-of-two
 * array of 16-byte entries in 4-entry buckets, indexed by the low half of the
 * 128-bit position key and verified by 32 bits of the high half.
 * One table belongs to one engine; it is not shared between threads.
 */
#ifndef SEARCH_TT_H
#define SEARCH_TT_H

#include <stddef.h>
#include <stdint.h>

#include "shogi/zobrist.h"
#include "shogi/types.h"
#include "shogi/errors.h"

enum { TT_NONE = 0, TT_UPPER = 1, TT_LOWER = 2, TT_EXACT = 3 };

typedef struct {
	uint32_t check; /* key.hi >> 32 */
	Move move;
	int16_t value; /* mate scores relative to this node (see tt_value_to) */
	int16_t eval;
	int8_t depth;
	uint8_t bound_gen; /* bound in bits 0-1, generation in bits 2-7 */
	uint32_t epoch;    /* tt_clear() count when stored: other epochs are empty */
} TTEntry;

typedef struct {
	TTEntry *entries;
	size_t mask; /* bucket count - 1 */
	uint8_t gen;
	uint32_t epoch; /* entries of another epoch do not exist (O(1) clearing) */
} TT;

/* Allocates about mb megabytes (at least one bucket). Returns 0 or -1 (ENOMEM);
 * on failure tt is left empty but usable by tt_free. */
JOSEKI_MUST_USE int tt_init(TT *tt, size_t mb);
void tt_free(TT *tt);
/* Empties the table in O(1) (a new epoch); the table then behaves exactly as
 * a freshly allocated one, so searches after a clear are reproducible. */
void tt_clear(TT *tt);
/* Starts a new search. A store replaces, in its bucket, the entry of least
 * worth: its depth less 8 per search of age (an entry of a cleared table worth
 * nothing), so an old deep entry can outlive a new shallow one. */
static inline void tt_new_search(TT *tt)
{
	tt->gen = (uint8_t)((tt->gen + 4) & 0xfc);
}

/* Finds pos's entry; NULL when absent. */
const TTEntry *tt_probe(const TT *tt, Key key);
void tt_store(TT *tt, Key key, Move move, int value, int eval, int depth, int bound);

/* Mate scores are stored relative to the node, not the root. */
static inline int tt_value_to(int v, int ply)
{
	return v >= VALUE_MATE_IN_MAX ? v + ply : v <= -VALUE_MATE_IN_MAX ? v - ply : v;
}
static inline int tt_value_from(int v, int ply)
{
	return v >= VALUE_MATE_IN_MAX ? v - ply : v <= -VALUE_MATE_IN_MAX ? v + ply : v;
}

#endif
