/*
 * tests/shogi/test_keymap.c — the key map (shogi/keymap.h): index maps and
 * sets find every key they were given and no other, across growth from empty
 * through many sizes; keys that share their first slot, their slot tag or
 * their whole hi half are told apart; the zero key is an ordinary key;
 * find-or-insert keeps the first index and put replaces it; set values
 * survive growth; iteration visits each entry once; reserve makes inserts
 * allocation-free; the filter never turns a held key away and keeps its
 * on-disk bit and size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/keymap.h"
#include "tests/support/support.h"

/* A caller's element with its key not first, so the stride is not sizeof(Key). */
typedef struct {
	uint32_t other;
	Key key;
	uint64_t more;
} Elem;

static Key rand_key(uint64_t *st)
{
	Key k;
	k.lo = ts_rand(st);
	k.hi = ts_rand(st);
	return k;
}

static void test_keymap__an_index_map_finds_every_key_at_every_size_and_no_other(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	static const size_t sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 100, 1000, 4097, 30000};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		size_t n = sizes[s];
		Elem *e = calloc(n + 1, sizeof *e);
		assert_non_null(e);
		KeyMap m;
		keymap_init(&m, sizeof(Elem));
		for (size_t i = 0; i < n; i++) {
			e[i].key = rand_key(&st);
			assert_int_equal(keymap_find_or_insert(&m, &e[0].key, (uint32_t)i),
			                 (int64_t)i);
			/* Found at once, and the first one still (growth moved it). */
			assert_int_equal(keymap_find(&m, &e[0].key, e[i].key), i);
			assert_int_equal(keymap_find(&m, &e[0].key, e[0].key), 0);
		}
		assert_int_equal(m.n, n);
		assert_true(m.cap == 0 || m.n * 2 <= m.cap);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(keymap_find(&m, &e[0].key, e[i].key), i);
		for (int j = 0; j < 1000; j++)
			assert_int_equal(keymap_find(&m, &e[0].key, rand_key(&st)), KEYMAP_NONE);
		keymap_free(&m);
		assert_int_equal(keymap_find(&m, &e[0].key, e[0].key), KEYMAP_NONE);
		free(e);
	}
}

/*
 * Keys chosen to collide: all with one hi (same first slot, same tag: only
 * the whole key tells them apart), hi differing only in the low 32 bits (same
 * tag), and hi differing only in the top bits (the first slot's bits).
 */
static void test_keymap__keys_sharing_their_first_slot_or_tag_are_told_apart(void **state)
{
	(void)state;
	enum { N = 600 };
	Key keys[3 * N];
	for (int i = 0; i < N; i++) {
		keys[i] = (Key){(uint64_t)i, 0x123456789abcdef0ULL};
		keys[N + i] = (Key){7, 0xfedcba9800000000ULL | (uint64_t)i};
		keys[2 * N + i] = (Key){9, ((uint64_t)i << 52) | 0x5555ULL};
	}
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	for (uint32_t i = 0; i < 3 * N; i++)
		assert_int_equal(keymap_find_or_insert(&m, keys, i), (int64_t)i);
	for (uint32_t i = 0; i < 3 * N; i++) assert_int_equal(keymap_find(&m, keys, keys[i]), i);
	/* Near misses of each family are absent. */
	assert_int_equal(keymap_find(&m, keys, (Key){N, 0x123456789abcdef0ULL}), KEYMAP_NONE);
	assert_int_equal(keymap_find(&m, keys, (Key){8, 0xfedcba9800000000ULL}), KEYMAP_NONE);
	assert_int_equal(keymap_find(&m, keys, (Key){9, 0x5556ULL}), KEYMAP_NONE);
	keymap_free(&m);
}

static void test_keymap__the_zero_key_is_an_ordinary_key(void **state)
{
	(void)state;
	Key keys[3] = {{0, 0}, {1, 0}, {0, 1}};
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	assert_int_equal(keymap_find(&m, keys, keys[0]), KEYMAP_NONE);
	assert_int_equal(keymap_find_or_insert(&m, keys, 0), 0);
	assert_int_equal(keymap_find(&m, keys, keys[0]), 0);
	assert_int_equal(keymap_find(&m, keys, keys[1]), KEYMAP_NONE);
	assert_int_equal(keymap_find_or_insert(&m, keys, 1), 1);
	assert_int_equal(keymap_find_or_insert(&m, keys, 2), 2);
	for (uint32_t i = 0; i < 3; i++) assert_int_equal(keymap_find(&m, keys, keys[i]), i);
	keymap_free(&m);

	/* A set tells hi 0 from hi 2, and holds the zero key. */
	keymap_init_set(&m, false);
	assert_false(keymap_has(&m, (Key){0, 0}));
	assert_int_equal(keymap_add(&m, (Key){0, 0}, NULL), 1);
	assert_true(keymap_has(&m, (Key){0, 0}));
	assert_false(keymap_has(&m, (Key){0, 2}));
	assert_int_equal(keymap_add(&m, (Key){0, 0}, NULL), 0);
	assert_int_equal(m.n, 1);
	keymap_free(&m);
}

static void test_keymap__find_or_insert_keeps_the_first_index_and_put_replaces_it(void **state)
{
	(void)state;
	Key keys[4] = {{1, 2}, {3, 4}, {1, 2}, {5, 6}};
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	assert_int_equal(keymap_find_or_insert(&m, keys, 0), 0);
	assert_int_equal(keymap_find_or_insert(&m, keys, 1), 1);
	assert_int_equal(keymap_find_or_insert(&m, keys, 2), 0); /* keys[2] == keys[0] */
	assert_int_equal(m.n, 2);
	assert_int_equal(keymap_put(&m, keys, 2), 0);
	assert_int_equal(keymap_find(&m, keys, keys[0]), 2);
	assert_int_equal(m.n, 2);
	assert_int_equal(keymap_put(&m, keys, 3), 0);
	assert_int_equal(keymap_find(&m, keys, keys[3]), 3);
	assert_int_equal(m.n, 3);
	/* An index beyond KEYMAP_MAX is refused, the map unchanged. */
	assert_int_equal(keymap_find_or_insert(&m, keys, (uint32_t)KEYMAP_MAX), -1);
	assert_int_equal(m.n, 3);
	keymap_free(&m);
}

static void test_keymap__a_set_holds_its_keys_and_values_across_growth(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 50000 };
	Key *k = malloc(N * sizeof *k);
	assert_non_null(k);
	KeyMap m;
	keymap_init_set(&m, true);
	for (uint32_t i = 0; i < N; i++) {
		k[i] = rand_key(&st);
		uint32_t *v = NULL;
		assert_int_equal(keymap_add(&m, k[i], &v), 1);
		assert_non_null(v);
		assert_int_equal(*v, KEYMAP_NONE);
		*v = i * 3;
	}
	assert_int_equal(m.n, N);
	for (uint32_t i = 0; i < N; i++) {
		assert_true(keymap_has(&m, k[i]));
		uint32_t *v = keymap_value(&m, k[i]);
		assert_non_null(v);
		assert_int_equal(*v, i * 3);
		assert_int_equal(keymap_add(&m, k[i], &v), 0);
		assert_int_equal(*v, i * 3);
	}
	for (int j = 0; j < 1000; j++) {
		Key a = rand_key(&st);
		assert_false(keymap_has(&m, a));
		assert_null(keymap_value(&m, a));
	}
	/* Small keys that are not random, as minimax's node maps use: hi = node + 1. */
	KeyMap nm;
	keymap_init_set(&nm, true);
	for (uint32_t node = 0; node < 5000; node += 2) {
		uint32_t *v = NULL;
		assert_int_equal(keymap_add(&nm, (Key){0, (uint64_t)node + 1}, &v), 1);
		*v = node;
	}
	for (uint32_t node = 0; node < 5000; node++) {
		uint32_t *v = keymap_value(&nm, (Key){0, (uint64_t)node + 1});
		if (node % 2)
			assert_null(v);
		else
			assert_int_equal(*v, node);
	}
	keymap_free(&nm);
	keymap_free(&m);
	free(k);
}

static void test_keymap__iteration_visits_each_entry_once(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 3000 };
	Key *k = malloc(N * sizeof *k);
	unsigned char *seen = calloc(N, 1);
	assert_non_null(k);
	assert_non_null(seen);
	KeyMap m, s;
	keymap_init(&m, sizeof(Key));
	keymap_init_set(&s, true);
	size_t pos = 0;
	uint64_t w;
	uint32_t v;
	assert_int_equal(keymap_next(&m, &pos, &w, &v), 0); /* empty */
	for (uint32_t i = 0; i < N; i++) {
		k[i] = rand_key(&st);
		assert_int_equal(keymap_find_or_insert(&m, k, i), i);
		uint32_t *pv = NULL;
		assert_int_equal(keymap_add(&s, k[i], &pv), 1);
		*pv = i;
	}
	size_t count = 0;
	for (pos = 0; keymap_next(&m, &pos, &w, &v) == 1; count++) {
		assert_true(w < N);
		assert_int_equal(v, KEYMAP_NONE);
		assert_int_equal(seen[w], 0);
		seen[w] = 1;
	}
	assert_int_equal(count, N);
	count = 0;
	for (pos = 0; keymap_next(&s, &pos, &w, &v) == 1; count++) {
		assert_true(v < N);
		assert_int_equal(seen[v], 1);
		assert_true(w == k[v].hi);
		seen[v] = 2;
	}
	assert_int_equal(count, N);
	keymap_free(&m);
	keymap_free(&s);
	free(k);
	free(seen);
}

static void test_keymap__reserve_makes_room_so_inserts_do_not_move_the_table(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 10000 };
	Key *k = malloc(N * sizeof *k);
	assert_non_null(k);
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	assert_int_equal(keymap_reserve(&m, k, N), 0);
	uint64_t *slot = m.slot;
	size_t cap = m.cap;
	assert_true(cap >= 2 * N);
	for (uint32_t i = 0; i < N; i++) {
		k[i] = rand_key(&st);
		assert_int_equal(keymap_find_or_insert(&m, k, i), i);
	}
	assert_ptr_equal(m.slot, slot);
	assert_int_equal(m.cap, cap);
	/* Reserving less than the map holds changes nothing; too many is refused. */
	assert_int_equal(keymap_reserve(&m, k, 5), 0);
	assert_int_equal(m.cap, cap);
	assert_int_equal(keymap_reserve(&m, k, KEYMAP_MAX + 1), -1);
	assert_int_equal(m.cap, cap);
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_find(&m, k, k[i]), i);
	keymap_free(&m);
	free(k);
}

static void test_keymap__the_filter_never_turns_a_held_key_away(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 20000, LATER = 20000, ABSENT = 100000 };
	Key *k = malloc((N + LATER) * sizeof *k);
	assert_non_null(k);
	for (size_t i = 0; i < N + LATER; i++) k[i] = rand_key(&st);
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_put(&m, k, i), 0);
	assert_int_equal(keymap_filter_build(&m, k), 0);
	assert_non_null(m.filter);
	assert_int_equal(m.filter_mask + 1, (uint64_t)1 << keyfilter_log2(N));
	/* Keys inserted after the filter was built are found too. */
	for (uint32_t i = N; i < N + LATER; i++) assert_int_equal(keymap_put(&m, k, i), 0);
	for (uint32_t i = 0; i < N + LATER; i++) assert_int_equal(keymap_find(&m, k, k[i]), i);
	/* The filter turns most absent keys away: 2^f >= 8 N bits for N keys, so
	 * at most 1 - e^(-1/8) (12 %) pass when it holds N; it holds 2 N here. */
	size_t pass = 0;
	for (int j = 0; j < ABSENT; j++) {
		Key a = rand_key(&st);
		pass += keyfilter_maybe(m.filter, m.filter_mask, a);
		assert_int_equal(keymap_find(&m, k, a), KEYMAP_NONE);
	}
	assert_true(pass < ABSENT / 4);
	keymap_free(&m);
	assert_null(m.filter);
	free(k);
}

static void test_keymap__keys_alike_in_one_half_are_told_apart_through_the_filter(void **state)
{
	(void)state;
	uint64_t rng =
	    ts_seed("test_keymap__keys_alike_in_one_half_are_told_apart_through_the_filter");
	enum { N = 20000 };
	Key *keys = malloc((N + 1) * sizeof *keys);
	assert_non_null(keys);
	for (size_t i = 0; i < N; i++) {
		keys[i].lo = ts_rand(&rng);
		keys[i].hi = ts_rand(&rng);
	}
	/* keys alike in one half or the other */
	keys[1].lo = keys[0].lo;
	keys[3].hi = keys[2].hi;
	keys[5].hi = (keys[4].hi & 0xffffffff00000000ULL) | 7;
	KeyMap m;
	keymap_init(&m, sizeof *keys);
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_put(&m, keys, i), 0);
	assert_int_equal(m.n, N);
	assert_true(m.n * 2 <= m.cap);
	assert_true((m.cap & (m.cap - 1)) == 0);
	assert_int_equal(keymap_filter_build(&m, keys), 0);
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_find(&m, keys, keys[i]), i);
	int misses = 0;
	for (int t = 0; t < 20000; t++) {
		Key k = {ts_rand(&rng), ts_rand(&rng)};
		if (t % 3 == 0) k.lo = keys[t].lo; /* half of a stored key */
		if (t % 3 == 1) k.hi = keys[t].hi;
		assert_int_equal(keymap_find(&m, keys, k), KEYMAP_NONE);
		misses++;
	}
	assert_int_equal(misses, 20000);
	/* a key put again under another index: that index, no new entry */
	keys[N] = keys[1234];
	assert_int_equal(keymap_put(&m, keys, N), 0);
	assert_int_equal(m.n, N);
	assert_int_equal(keymap_filter_build(&m, keys), 0);
	assert_int_equal(keymap_find(&m, keys, keys[1234]), N);
	assert_int_equal(keymap_find(&m, keys, keys[1233]), 1233);
	keymap_free(&m);
	assert_null(m.slot);
	/* an empty map finds nothing */
	assert_int_equal(keymap_find(&m, keys, keys[0]), KEYMAP_NONE);
	free(keys);
}

/* The graph file stores a filter: its bit and its size must never change. */
static void test_keymap__the_filter_bit_and_size_are_the_graph_files(void **state)
{
	(void)state;
	assert_int_equal(keyfilter_log2(0), 10);
	assert_int_equal(keyfilter_log2(128), 10);
	assert_int_equal(keyfilter_log2(129), 11);
	assert_int_equal(keyfilter_log2(10000000), 27);
	assert_int_equal(keyfilter_log2((size_t)1 << 40), 40);
	assert_int_equal(keyfilter_words(10), 16);
	Key k = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
	assert_int_equal(keyfilter_bit(k, 0xffffffff),
	                 (0xfedcba9876543210ULL ^ (0x0123456789abcdefULL >> 7)) & 0xffffffff);
	uint64_t words[16] = {0};
	keyfilter_add(words, 1023, k);
	uint64_t b = keyfilter_bit(k, 1023);
	assert_int_equal(words[b >> 6], 1ULL << (b & 63));
	assert_true(keyfilter_maybe(words, 1023, k));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keymap__an_index_map_finds_every_key_at_every_size_and_no_other),
	    cmocka_unit_test(test_keymap__keys_sharing_their_first_slot_or_tag_are_told_apart),
	    cmocka_unit_test(test_keymap__the_zero_key_is_an_ordinary_key),
	    cmocka_unit_test(test_keymap__find_or_insert_keeps_the_first_index_and_put_replaces_it),
	    cmocka_unit_test(test_keymap__a_set_holds_its_keys_and_values_across_growth),
	    cmocka_unit_test(test_keymap__iteration_visits_each_entry_once),
	    cmocka_unit_test(test_keymap__reserve_makes_room_so_inserts_do_not_move_the_table),
	    cmocka_unit_test(test_keymap__the_filter_never_turns_a_held_key_away),
	    cmocka_unit_test(test_keymap__keys_alike_in_one_half_are_told_apart_through_the_filter),
	    cmocka_unit_test(test_keymap__the_filter_bit_and_size_are_the_graph_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
