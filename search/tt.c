/* search/tt.c — transposition table storage and replacement. */
#include "search/tt.h"

#include <stdlib.h>
#include <string.h>

#define TT_BUCKET 4

int tt_init(TT *tt, size_t mb)
{
	tt->entries = NULL;
	tt->mask = 0;
	tt->gen = 0;
	tt->epoch = 1; /* calloc'd entries have epoch 0: empty */
	if (mb < 1) mb = 1;
	size_t buckets = 1;
	while (buckets * 2 * TT_BUCKET * sizeof(TTEntry) <= mb * 1024 * 1024) buckets *= 2;
	tt->entries = calloc(buckets * TT_BUCKET, sizeof(TTEntry));
	if (!tt->entries) return -1;
	tt->mask = buckets - 1;
	return 0;
}

void tt_free(TT *tt)
{
	free(tt->entries);
	tt->entries = NULL;
	tt->mask = 0;
}

void tt_clear(TT *tt)
{
	tt->gen = 0;
	if (++tt->epoch == 0) {
		/* After 2^32 clears the stamps wrap: wipe for real, once. */
		if (tt->entries)
			memset(tt->entries, 0, (tt->mask + 1) * TT_BUCKET * sizeof(TTEntry));
		tt->epoch = 1;
	}
}

static inline TTEntry *bucket(const TT *tt, Key key)
{
	return &tt->entries[(key.lo & tt->mask) * TT_BUCKET];
}

const TTEntry *tt_probe(const TT *tt, Key key)
{
	TTEntry *b = bucket(tt, key);
	uint32_t check = (uint32_t)(key.hi >> 32);
	for (int i = 0; i < TT_BUCKET; i++)
		if (b[i].check == check && b[i].epoch == tt->epoch) return &b[i];
	return NULL;
}

void tt_store(TT *tt, Key key, Move move, int value, int eval, int depth, int bound)
{
	TTEntry *b = bucket(tt, key);
	uint32_t check = (uint32_t)(key.hi >> 32);
	TTEntry *e = NULL;
	for (int i = 0; i < TT_BUCKET; i++)
		if (b[i].check == check && b[i].epoch == tt->epoch) {
			e = &b[i];
			break;
		}
	if (e) {
		/* Keep the old move when the new search of this node found none. */
		if (move == MOVE_NONE) move = e->move;
		/* A shallower non-exact result does not overwrite a deeper one. */
		if (bound != TT_EXACT && depth + 2 < e->depth && (e->bound_gen & 0xfc) == tt->gen)
			return;
	} else {
		/* Replace the entry worth least: old generation first, then shallow. */
		int worst = 1 << 30;
		for (int i = 0; i < TT_BUCKET; i++) {
			int age = ((tt->gen - (b[i].bound_gen & 0xfc)) & 0xff) >> 2;
			int worth = b[i].epoch != tt->epoch ? -1000 : b[i].depth - 8 * age;
			if (worth < worst) {
				worst = worth;
				e = &b[i];
			}
		}
	}
	e->check = check;
	e->move = move;
	e->value = (int16_t)value;
	e->eval = (int16_t)eval;
	e->depth = (int8_t)(depth < -100 ? -100 : depth > 127 ? 127 : depth);
	e->bound_gen = (uint8_t)(tt->gen | bound);
	e->epoch = tt->epoch;
}
