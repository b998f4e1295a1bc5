/*
 * tests/search/test_tt.c — the built-in engine's transposition table
 * (search/tt.h): a stored entry is probed back with every field; other keys
 * miss (same bucket, other check; same check, other bucket; the all-zero
 * key in a fresh table); a bucket holds four keys and a fifth evicts one;
 * entries of older searches go first, within one search the shallowest;
 * storing the same key again updates it (keeping the move when the new one is
 * none, not overwriting a much deeper non-exact result); clearing empties the
 * table and it then behaves exactly as a fresh one (also across the epoch
 * wrap); sizes for several megabyte counts; mate scores re-based by ply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/tt.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define BUCKET 4 /* entries per bucket (tt.h) */

static size_t buckets(const TT *tt)
{
	return tt->mask + 1;
}

/* A key that falls in bucket b with the given 32-bit check; other bits random. */
static Key key_at(const TT *tt, size_t b, uint32_t check, uint64_t *rng)
{
	Key k;
	k.lo = (ts_rand(rng) & ~(uint64_t)tt->mask) | (uint64_t)b;
	k.hi = ((uint64_t)check << 32) | (ts_rand(rng) & 0xffffffffULL);
	return k;
}

static int bound_of(const TTEntry *e)
{
	return e->bound_gen & 3;
}

static void expect_entry(const TT *tt, Key k, Move move, int value, int eval, int depth, int bound)
{
	const TTEntry *e = tt_probe(tt, k);
	if (!e)
		fail_msg("key %016llx%016llx: not found", (unsigned long long)k.hi,
		         (unsigned long long)k.lo);
	assert_int_equal(e->check, (uint32_t)(k.hi >> 32));
	assert_int_equal(e->move, move);
	assert_int_equal(e->value, value);
	assert_int_equal(e->eval, eval);
	assert_int_equal(e->depth, depth);
	assert_int_equal(bound_of(e), bound);
}

static void test_tt__store_then_probe_returns_the_entry(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__store_then_probe_returns_the_entry");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	size_t n = buckets(&tt) < 4000 ? buckets(&tt) : 4000;
	Key *keys = malloc(n * sizeof *keys);
	assert_non_null(keys);
	/* one key per bucket: nothing is evicted */
	for (size_t i = 0; i < n; i++) {
		keys[i] = key_at(&tt, i, (uint32_t)ts_rand(&rng), &rng);
		int v = (int)(i % 64001) - 32000; /* -32000 .. 32000 */
		tt_store(&tt, keys[i], (Move)(i * 7919), v, -v / 3, (int)(i % 120) - 10,
		         (int)(i % 4));
	}
	for (size_t i = 0; i < n; i++) {
		int v = (int)(i % 64001) - 32000;
		expect_entry(&tt, keys[i], (Move)(i * 7919), v, -v / 3, (int)(i % 120) - 10,
		             (int)(i % 4));
	}
	/* the extremes a search stores survive the 16-bit fields */
	Key k = key_at(&tt, 1, 12345, &rng);
	tt_store(&tt, k, move_make(sq_make(6, 6), sq_make(6, 5), false), VALUE_MATE - 1,
	         -VALUE_MATE, 1, TT_LOWER);
	expect_entry(&tt, k, move_make(sq_make(6, 6), sq_make(6, 5), false), VALUE_MATE - 1,
	             -VALUE_MATE, 1, TT_LOWER);
	tt_store(&tt, k, MOVE_NULL, -VALUE_INFINITE, VALUE_INFINITE, 2, TT_UPPER);
	expect_entry(&tt, k, MOVE_NULL, -VALUE_INFINITE, VALUE_INFINITE, 2, TT_UPPER);
	free(keys);
	tt_free(&tt);
}

static void test_tt__other_keys_miss(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__other_keys_miss");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	/* a fresh table holds nothing, not even the all-zero key */
	assert_null(tt_probe(&tt, (Key){0, 0}));
	for (int i = 0; i < 1000; i++) {
		Key k = {ts_rand(&rng), ts_rand(&rng)};
		assert_null(tt_probe(&tt, k));
	}
	size_t b = (size_t)(ts_rand(&rng) & tt.mask);
	Key k = key_at(&tt, b, 0xdeadbeef, &rng);
	tt_store(&tt, k, 77, 100, 50, 6, TT_EXACT);
	assert_non_null(tt_probe(&tt, k));
	/* same bucket, another check */
	for (uint32_t c = 0; c < 1000; c++)
		if (c != 0xdeadbeef) assert_null(tt_probe(&tt, key_at(&tt, b, c, &rng)));
	assert_null(tt_probe(&tt, key_at(&tt, b, 0xdeadbeef ^ 0x80000000u, &rng)));
	/* same check, every other bucket */
	for (size_t o = 0; o < buckets(&tt); o++)
		if (o != b) assert_null(tt_probe(&tt, key_at(&tt, o, 0xdeadbeef, &rng)));
	/* the key is verified by the top 32 bits of hi only (tt.h): the low half of
	 * hi and the bits of lo above the bucket index are not looked at */
	Key alias = key_at(&tt, b, 0xdeadbeef, &rng);
	assert_non_null(tt_probe(&tt, alias));
	tt_free(&tt);
}

static void test_tt__a_bucket_holds_four_keys_and_a_fifth_evicts_one(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__a_bucket_holds_four_keys_and_a_fifth_evicts_one");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	for (int round = 0; round < 200; round++) {
		tt_clear(&tt);
		size_t b = (size_t)(ts_rand(&rng) & tt.mask);
		Key k[BUCKET + 1];
		int depth[BUCKET];
		/* four keys at distinct depths (in a random order), one search */
		int order[BUCKET] = {0, 1, 2, 3};
		for (int i = BUCKET - 1; i > 0; i--) {
			int j = (int)(ts_rand(&rng) % (uint64_t)(i + 1)), t = order[i];
			order[i] = order[j], order[j] = t;
		}
		for (int i = 0; i < BUCKET; i++) {
			k[i] = key_at(&tt, b, 1000u + (uint32_t)i, &rng);
			depth[i] = 3 + 4 * order[i];
			tt_store(&tt, k[i], (Move)(i + 1), i, i, depth[i], TT_LOWER);
		}
		for (int i = 0; i < BUCKET; i++)
			expect_entry(&tt, k[i], (Move)(i + 1), i, i, depth[i], TT_LOWER);
		/* a fifth key: it is found, and exactly one of the four is gone —
		 * the shallowest */
		k[BUCKET] = key_at(&tt, b, 2000u, &rng);
		tt_store(&tt, k[BUCKET], 99, 5, 5, 2, TT_EXACT);
		expect_entry(&tt, k[BUCKET], 99, 5, 5, 2, TT_EXACT);
		int gone = -1, present = 0;
		for (int i = 0; i < BUCKET; i++) {
			if (tt_probe(&tt, k[i]))
				present++;
			else
				gone = i;
		}
		assert_int_equal(present, BUCKET - 1);
		assert_int_equal(order[gone], 0);
	}
	tt_free(&tt);
}

static void test_tt__entries_of_older_searches_are_replaced_first(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__entries_of_older_searches_are_replaced_first");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	for (int round = 0; round < 100; round++) {
		tt_clear(&tt);
		size_t b = (size_t)(ts_rand(&rng) & tt.mask);
		int d = 1 + (int)(ts_rand(&rng) % 40);
		Key old[BUCKET], cur[BUCKET];
		for (int i = 0; i < BUCKET; i++) {
			old[i] = key_at(&tt, b, 100u + (uint32_t)i, &rng);
			tt_store(&tt, old[i], 1, 0, 0, d, TT_EXACT);
		}
		tt_new_search(&tt);
		/* the old entries are still found in the next search */
		for (int i = 0; i < BUCKET; i++) assert_non_null(tt_probe(&tt, old[i]));
		/* four new keys of the same depth: each replaces an old entry, none
		 * of the new ones */
		for (int i = 0; i < BUCKET; i++) {
			cur[i] = key_at(&tt, b, 200u + (uint32_t)i, &rng);
			tt_store(&tt, cur[i], 2, 0, 0, d, TT_EXACT);
			for (int j = 0; j <= i; j++) assert_non_null(tt_probe(&tt, cur[j]));
			int olds = 0;
			for (int j = 0; j < BUCKET; j++) olds += tt_probe(&tt, old[j]) != NULL;
			assert_int_equal(olds, BUCKET - 1 - i);
		}
	}
	tt_free(&tt);
}

static void test_tt__storing_the_same_key_again_updates_it(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__storing_the_same_key_again_updates_it");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	Key k = key_at(&tt, 5, 4242, &rng);
	tt_store(&tt, k, 11, 100, 10, 4, TT_LOWER);
	tt_store(&tt, k, 12, -50, 20, 6, TT_UPPER);
	expect_entry(&tt, k, 12, -50, 20, 6, TT_UPPER);
	/* one entry per key: the bucket's other three slots are still free */
	for (uint32_t c = 0; c < 3; c++) tt_store(&tt, key_at(&tt, 5, c, &rng), 1, 0, 0, 1, 1);
	expect_entry(&tt, k, 12, -50, 20, 6, TT_UPPER);
	/* no move this time: the old move is kept, the rest updated */
	tt_store(&tt, k, MOVE_NONE, 30, 40, 7, TT_EXACT);
	expect_entry(&tt, k, 12, 30, 40, 7, TT_EXACT);
	/* a much shallower bound does not overwrite a deeper result of this search */
	tt_store(&tt, k, 13, 999, 999, 20, TT_LOWER);
	tt_store(&tt, k, 14, -999, -999, 3, TT_UPPER);
	expect_entry(&tt, k, 13, 999, 999, 20, TT_LOWER);
	tt_store(&tt, k, 15, -998, -998, 2, TT_LOWER);
	expect_entry(&tt, k, 13, 999, 999, 20, TT_LOWER);
	/* an exact result does, however shallow */
	tt_store(&tt, k, 16, 1, 2, 1, TT_EXACT);
	expect_entry(&tt, k, 16, 1, 2, 1, TT_EXACT);
	/* in a later search the shallow bound replaces the old deep one */
	tt_store(&tt, k, 17, 5, 5, 30, TT_LOWER);
	tt_new_search(&tt);
	tt_store(&tt, k, 18, 6, 6, 3, TT_UPPER);
	expect_entry(&tt, k, 18, 6, 6, 3, TT_UPPER);
	tt_free(&tt);
}

static void test_tt__depth_saturates_instead_of_wrapping(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__depth_saturates_instead_of_wrapping");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	Key a = key_at(&tt, 1, 1, &rng), b = key_at(&tt, 2, 2, &rng), c = key_at(&tt, 3, 3, &rng);
	tt_store(&tt, a, 1, 0, 0, 127, TT_EXACT);
	tt_store(&tt, b, 1, 0, 0, 300, TT_EXACT);
	tt_store(&tt, c, 1, 0, 0, -1000, TT_EXACT);
	assert_int_equal(tt_probe(&tt, a)->depth, 127);
	assert_int_equal(tt_probe(&tt, b)->depth, 127);
	assert_true(tt_probe(&tt, c)->depth < 0);
	tt_free(&tt);
}

/* One random operation sequence on a table; probes every key afterwards. */
typedef struct {
	bool found;
	TTEntry e;
} Probe;

static void run_ops(TT *tt, uint64_t seed, Key *keys, size_t nkeys, Probe *out)
{
	uint64_t rng = seed;
	for (int op = 0; op < 20000; op++) {
		uint64_t r = ts_rand(&rng);
		if (r % 500 == 0) {
			tt_new_search(tt);
			continue;
		}
		Key k = keys[(r >> 8) % nkeys];
		int depth = (int)((r >> 32) % 40) - 2, bound = (int)((r >> 40) % 3) + 1;
		Move m = (r >> 48) % 5 == 0 ? MOVE_NONE : (Move)(r >> 48);
		tt_store(tt, k, m, (int)((r >> 20) % 2001) - 1000, (int)(r % 301), depth, bound);
	}
	for (size_t i = 0; i < nkeys; i++) {
		const TTEntry *e = tt_probe(tt, keys[i]);
		out[i].found = e != NULL;
		memset(&out[i].e, 0, sizeof out[i].e);
		if (e) {
			out[i].e.check = e->check;
			out[i].e.move = e->move;
			out[i].e.value = e->value;
			out[i].e.eval = e->eval;
			out[i].e.depth = e->depth;
			out[i].e.bound_gen = e->bound_gen;
		}
	}
}

static void test_tt__a_cleared_table_behaves_as_a_fresh_one(void **state)
{
	(void)state;
	uint64_t seed = ts_seed("test_tt__a_cleared_table_behaves_as_a_fresh_one");
	uint64_t rng = seed;
	TT fresh, used;
	assert_int_equal(tt_init(&fresh, 1), 0);
	assert_int_equal(tt_init(&used, 1), 0);
	/* keys crowded into 64 buckets so that the replacement policy works hard */
	size_t nkeys = 64 * 12;
	Key *keys = malloc(nkeys * sizeof *keys);
	Probe *a = malloc(nkeys * sizeof *a), *b = malloc(nkeys * sizeof *b);
	assert_true(keys && a && b);
	for (size_t i = 0; i < nkeys; i++)
		keys[i] = key_at(&fresh, (i % 64) * 97, (uint32_t)ts_rand(&rng), &rng);
	/* dirty the second table with another sequence and several searches */
	run_ops(&used, seed ^ 0x5555, keys, nkeys, b);
	size_t before = 0;
	for (size_t i = 0; i < nkeys; i++) before += b[i].found;
	assert_true(before >= 64 * 3);
	tt_clear(&used);
	for (size_t i = 0; i < nkeys; i++) assert_null(tt_probe(&used, keys[i]));
	/* the same sequence on both: the same answers for every key */
	run_ops(&fresh, seed, keys, nkeys, a);
	run_ops(&used, seed, keys, nkeys, b);
	size_t found = 0;
	for (size_t i = 0; i < nkeys; i++) {
		assert_int_equal(a[i].found, b[i].found);
		assert_memory_equal(&a[i].e, &b[i].e, sizeof a[i].e);
		found += a[i].found;
	}
	assert_int_equal(found, 64 * BUCKET);
	free(keys), free(a), free(b);
	tt_free(&fresh);
	tt_free(&used);
}

/*
 * Clearing is a new epoch; after 2^32 clears the epoch counter wraps. Entries
 * stored long ago under the epoch the counter comes back to must not return.
 */
static void test_tt__clearing_across_the_epoch_wrap(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__clearing_across_the_epoch_wrap");
	TT tt;
	assert_int_equal(tt_init(&tt, 1), 0);
	Key k[16];
	for (int i = 0; i < 16; i++) {
		k[i] = key_at(&tt, (size_t)i * 3, (uint32_t)ts_rand(&rng), &rng);
		tt_store(&tt, k[i], 1, 2, 3, 4, TT_EXACT);
	}
	uint32_t first = tt.epoch;
	/* stand for 2^32 - 2 clears, then clear across the wrap */
	tt.epoch = UINT32_MAX;
	for (int i = 0; i < 16; i++) assert_null(tt_probe(&tt, k[i]));
	tt_clear(&tt);
	for (int i = 0; i < 16; i++) assert_null(tt_probe(&tt, k[i]));
	/* and the table still works, in the epoch it started in */
	assert_int_equal(tt.epoch, first);
	tt_store(&tt, k[0], 5, 6, 7, 8, TT_UPPER);
	expect_entry(&tt, k[0], 5, 6, 7, 8, TT_UPPER);
	for (int i = 1; i < 16; i++) assert_null(tt_probe(&tt, k[i]));
	tt_free(&tt);
}

static void test_tt__sizes_and_resizing(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_tt__sizes_and_resizing");
	size_t sizes[] = {0, 1, 2, 3, 5, 16, 1};
	TT tt;
	memset(&tt, 0, sizeof tt);
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		tt_free(&tt); /* a second free of the same table is harmless */
		assert_int_equal(tt_init(&tt, sizes[s]), 0);
		size_t mb = sizes[s] ? sizes[s] : 1;
		size_t n = buckets(&tt), bytes = n * BUCKET * sizeof(TTEntry);
		/* a power of two of buckets, "about mb megabytes": at most mb, more
		 * than half of it */
		assert_true((n & (n - 1)) == 0);
		assert_true(bytes <= mb << 20);
		assert_true(bytes * 2 > mb << 20);
		/* nothing of the previous size survives; every bucket is usable */
		Key *keys = malloc(n * sizeof *keys);
		assert_non_null(keys);
		for (size_t b = 0; b < n; b++) {
			keys[b] = key_at(&tt, b, (uint32_t)ts_rand(&rng), &rng);
			assert_null(tt_probe(&tt, keys[b]));
		}
		for (size_t b = 0; b < n; b++)
			tt_store(&tt, keys[b], (Move)b, (int)(b % 1000), 0, (int)(b % 50),
			         TT_EXACT);
		for (size_t b = 0; b < n; b++)
			expect_entry(&tt, keys[b], (Move)b, (int)(b % 1000), 0, (int)(b % 50),
			             TT_EXACT);
		free(keys);
	}
	tt_free(&tt);
	assert_null(tt.entries);
	tt_free(&tt);
}

/*
 * Mate scores: a mate k plies below a node at ply p is VALUE_MATE - (p + k)
 * from the root and VALUE_MATE - k from the node; stored relative to the node,
 * it reads back right when the node is met again at another ply.
 */
static void test_tt__mate_scores_are_rebased_by_ply(void **state)
{
	(void)state;
	for (int p = 0; p < 200; p += 3)
		for (int k = 0; k < 200; k += 7) {
			int root = VALUE_MATE - (p + k), node = VALUE_MATE - k;
			assert_int_equal(tt_value_to(root, p), node);
			assert_int_equal(tt_value_to(-root, p), -node);
			for (int p2 = 0; p2 < 200; p2 += 11) {
				assert_int_equal(tt_value_from(node, p2), VALUE_MATE - (p2 + k));
				assert_int_equal(tt_value_from(-node, p2),
				                 -(VALUE_MATE - (p2 + k)));
			}
			assert_int_equal(tt_value_from(tt_value_to(root, p), p), root);
		}
	/* other values are stored as they are */
	for (int v = -VALUE_MATE_IN_MAX + 1; v < VALUE_MATE_IN_MAX; v += 37)
		for (int p = 0; p < 256; p += 17) {
			assert_int_equal(tt_value_to(v, p), v);
			assert_int_equal(tt_value_from(v, p), v);
		}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tt__store_then_probe_returns_the_entry),
	    cmocka_unit_test(test_tt__other_keys_miss),
	    cmocka_unit_test(test_tt__a_bucket_holds_four_keys_and_a_fifth_evicts_one),
	    cmocka_unit_test(test_tt__entries_of_older_searches_are_replaced_first),
	    cmocka_unit_test(test_tt__storing_the_same_key_again_updates_it),
	    cmocka_unit_test(test_tt__depth_saturates_instead_of_wrapping),
	    cmocka_unit_test(test_tt__a_cleared_table_behaves_as_a_fresh_one),
	    cmocka_unit_test(test_tt__clearing_across_the_epoch_wrap),
	    cmocka_unit_test(test_tt__sizes_and_resizing),
	    cmocka_unit_test(test_tt__mate_scores_are_rebased_by_ply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
