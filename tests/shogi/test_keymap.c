/*
 * tests/shogi/test_keymap.c — the key map (shogi/keymap.h): index maps and
 * sets find every key they were given and no other, across growth from empty
 * through many sizes; keys that share their first slot, their slot tag or
 * their whole hi half are told apart; the zero key is an ordinary key;
 * find-or-insert keeps the first index and put replaces it; set values
 * survive growth; iteration visits each entry once; reserve makes inserts
 * allocation-free; the filter never turns a held key away and keeps its
 * on-disk bit and size; deletion shifts the rest of a probe run back (also
 * around the table's end) so every other key stays found, of both kinds,
 * against a model under heavy collisions, before and after growth, and
 * keeps a caller's array dense by moving its last element into the hole.
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

/* A map in the heap, emptied and filled again in the same room (peta-shock's
 * buckets on disk): nothing of the last fill is found, the new fill is. */
static void test_keymap__a_cleared_heap_map_keeps_its_room_and_forgets_its_keys(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 5000 };
	Key *k = malloc(2 * N * sizeof *k);
	assert_non_null(k);
	for (size_t i = 0; i < 2 * N; i++) k[i] = rand_key(&st);
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	m.heap = true;
	assert_int_equal(keymap_reserve(&m, k, N), 0);
	uint64_t *slot = m.slot;
	size_t cap = m.cap;
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_put(&m, k, i), 0);
	keymap_clear(&m);
	assert_int_equal(m.n, 0);
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_find(&m, k, k[i]), KEYMAP_NONE);
	/* The second half of the keys, at indexes N..2N-1. */
	for (uint32_t i = N; i < 2 * N; i++) assert_int_equal(keymap_put(&m, k, i), 0);
	assert_ptr_equal(m.slot, slot);
	assert_int_equal(m.cap, cap);
	for (uint32_t i = 0; i < N; i++) assert_int_equal(keymap_find(&m, k, k[i]), KEYMAP_NONE);
	for (uint32_t i = N; i < 2 * N; i++) assert_int_equal(keymap_find(&m, k, k[i]), i);
	keymap_free(&m);
	assert_true(m.heap);
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
	/* The filter turns most absent keys away: 2^f >= 8 N bits for N keys
	 * (13 bits a key here), three bits a key in one word: about 1 % pass when
	 * it holds N; it holds 2 N here (6.6 bits a key: about 6 %). */
	size_t pass = 0;
	for (int j = 0; j < ABSENT; j++) {
		Key a = rand_key(&st);
		pass += keyfilter_maybe(m.filter, m.filter_mask, a);
		assert_int_equal(keymap_find(&m, k, a), KEYMAP_NONE);
	}
	assert_true(pass < ABSENT / 10);
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
	uint64_t h = 0xfedcba9876543210ULL ^ (0x0123456789abcdefULL >> 7);
	assert_int_equal(keyfilter_word(k, 0xffffffff), (h & 0xffffffff) >> 6);
	uint64_t want = 1ULL << (h & 63) | 1ULL << (0x0123456789abcdefULL & 63) | 1ULL << 0x3f;
	assert_int_equal(keyfilter_bits(k), want);
	uint64_t words[16] = {0};
	keyfilter_add(words, 1023, k);
	for (size_t w = 0; w < 16; w++)
		assert_int_equal(words[w], w == ((h & 1023) >> 6) ? want : 0);
	/* Two of its three bits are not enough. */
	words[(h & 1023) >> 6] &= ~(1ULL << 0x3f);
	assert_false(keyfilter_maybe(words, 1023, k));
	keyfilter_add(words, 1023, k);
	assert_true(keyfilter_maybe(words, 1023, k));
}

/* ---- deletion ---- */

/* A key whose probe starts at slot home of a map of 2^log2 slots (the low
 * bits vary with low): hi = (home << shift | low) / phi mod 2^64. */
static Key key_at_home(size_t home, unsigned log2, uint64_t low, uint64_t lo)
{
	uint64_t phi = 0x9e3779b97f4a7c15ULL, inv = phi;
	for (int i = 0; i < 5; i++) inv *= 2 - phi * inv; /* Newton: 3, 6, ... 96 bits */
	uint64_t p = (uint64_t)home << (64 - log2) | (low & (((uint64_t)1 << (64 - log2)) - 1));
	return (Key){lo, p * inv};
}

/* Slot of each key (the map's slot holding it), for checking the shift. */
static size_t slot_of(const KeyMap *m, const Key *keys, Key k)
{
	return m->stride ? keymap_probe(m, keys, k) : keymap_probe_set(m, k);
}

/*
 * Sixteen slots, eight keys. Run A wraps: homes 14, 15, 0, 15 fill slots
 * 14, 15, 0, 1; deleting the second (slot 15) keeps the third at its home 0
 * and moves the last (home 15) back past it, across the table's end. Run B: homes 6, 6, 8,
 * 7 fill 6..9; deleting the first moves the second back, keeps the one at
 * its home (8) and moves the last (home 7) past it into the hole.
 */
static void check_runs(bool set)
{
	enum { N = 8 };
	static const size_t home[N] = {14, 15, 0, 15, 6, 6, 8, 7};
	Key keys[N];
	for (int i = 0; i < N; i++) {
		keys[i] = key_at_home(home[i], 4, 1000 + (uint64_t)i, (uint64_t)i);
		assert_int_equal(keymap_home(&(KeyMap){.shift = 60}, keys[i].hi), home[i]);
	}
	KeyMap m;
	if (set)
		keymap_init_set(&m, true);
	else
		keymap_init(&m, sizeof(Key));
	assert_int_equal(keymap_reserve(&m, keys, N), 0);
	assert_int_equal(m.cap, 16);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *v = NULL;
		if (set) {
			assert_int_equal(keymap_add(&m, keys[i], &v), 1);
			*v = 100 + i;
		} else {
			assert_int_equal(keymap_find_or_insert(&m, keys, i), i);
		}
	}
	static const size_t before[N] = {14, 15, 0, 1, 6, 7, 8, 9};
	for (int i = 0; i < N; i++) assert_int_equal(slot_of(&m, keys, keys[i]), before[i]);

	uint32_t out = 0;
	assert_int_equal(keymap_del(&m, keys, keys[1], &out), 1);
	assert_int_equal(out, set ? 101 : 1);
	assert_int_equal(keymap_del(&m, keys, keys[4], &out), 1);
	assert_int_equal(out, set ? 104 : 4);
	assert_int_equal(m.n, N - 2);
	static const size_t after[N] = {14, 0, 0, 15, 0, 6, 8, 7};
	for (int i = 0; i < N; i++) {
		if (i == 1 || i == 4) {
			assert_int_equal(m.slot[slot_of(&m, keys, keys[i])], 0); /* absent */
			assert_int_equal(keymap_del(&m, keys, keys[i], NULL), 0);
			continue;
		}
		assert_int_equal(slot_of(&m, keys, keys[i]), after[i]);
		if (set) {
			assert_true(keymap_has(&m, keys[i]));
			assert_int_equal(*keymap_value(&m, keys[i]), 100 + i);
		} else {
			assert_int_equal(keymap_find(&m, keys, keys[i]), i);
		}
	}
	/* The runs got shorter: their old last slots are empty. */
	assert_int_equal(m.slot[1], 0);
	assert_int_equal(m.slot[9], 0);
	keymap_free(&m);
}

static void
test_keymap__deleting_in_a_probe_run_shifts_the_rest_back_and_keeps_it_found(void **state)
{
	(void)state;
	check_runs(false);
	check_runs(true);
}

static void test_keymap__a_deleted_key_is_gone_until_inserted_again(void **state)
{
	(void)state;
	Key keys[3] = {{1, 2}, {3, 4}, {1, 2}};
	KeyMap m;
	keymap_init(&m, sizeof(Key));
	assert_int_equal(keymap_del(&m, keys, keys[0], NULL), 0); /* nothing allocated */
	assert_int_equal(keymap_find_or_insert(&m, keys, 0), 0);
	assert_int_equal(keymap_find_or_insert(&m, keys, 1), 1);
	uint32_t out = 7;
	assert_int_equal(keymap_del(&m, keys, keys[0], &out), 1);
	assert_int_equal(out, 0);
	assert_int_equal(m.n, 1);
	assert_int_equal(keymap_find(&m, keys, keys[0]), KEYMAP_NONE);
	assert_int_equal(keymap_del(&m, keys, keys[0], &out), 0);
	/* Inserted again under another index (keys[2] == keys[0]): that index. */
	assert_int_equal(keymap_find_or_insert(&m, keys, 2), 2);
	assert_int_equal(keymap_find(&m, keys, keys[0]), 2);
	assert_int_equal(keymap_find(&m, keys, keys[1]), 1);
	assert_int_equal(m.n, 2);
	/* With a filter built, a deleted key passes it but is not found. */
	assert_int_equal(keymap_filter_build(&m, keys), 0);
	assert_int_equal(keymap_del(&m, keys, keys[1], NULL), 1);
	assert_true(keyfilter_maybe(m.filter, m.filter_mask, keys[1]));
	assert_int_equal(keymap_find(&m, keys, keys[1]), KEYMAP_NONE);
	assert_int_equal(keymap_find_or_insert(&m, keys, 1), 1);
	assert_int_equal(keymap_find(&m, keys, keys[1]), 1);
	keymap_free(&m);

	/* A set: removed, then added again with a fresh value. */
	keymap_init_set(&m, true);
	uint32_t *v = NULL;
	assert_int_equal(keymap_add(&m, keys[0], &v), 1);
	*v = 5;
	assert_int_equal(keymap_del(&m, NULL, keys[1], &out), 0);
	assert_int_equal(keymap_del(&m, NULL, keys[0], &out), 1);
	assert_int_equal(out, 5);
	assert_false(keymap_has(&m, keys[0]));
	assert_null(keymap_value(&m, keys[0]));
	assert_int_equal(keymap_add(&m, keys[0], &v), 1);
	assert_int_equal(*v, KEYMAP_NONE);
	assert_int_equal(m.n, 1);
	keymap_free(&m);
	/* A set without values gives KEYMAP_NONE. */
	keymap_init_set(&m, false);
	assert_int_equal(keymap_add(&m, keys[1], NULL), 1);
	out = 0;
	assert_int_equal(keymap_del(&m, NULL, keys[1], &out), 1);
	assert_int_equal(out, KEYMAP_NONE);
	assert_int_equal(m.n, 0);
	keymap_free(&m);
}

/*
 * Random inserts and deletes against a model (a flag a key), of both kinds,
 * over keys crowded into a few first slots of the table (long runs, wrapping
 * around its end) while it grows from 16 slots to past 1024, then iteration
 * over what is left: every held key found once, no deleted one.
 */
static void check_against_model(bool set, uint64_t *st)
{
	enum { U = 1200, OPS = 20000 };
	Key *keys = malloc(U * sizeof *keys);
	unsigned char *in = calloc(U, 1);
	uint32_t *val = calloc(U, sizeof *val);
	assert_non_null(keys);
	assert_non_null(in);
	assert_non_null(val);
	/* Homes in a 16-slot table: 13, 14, 15, 0 (scaled up as the table grows,
	 * they stay crowded at the table's end and start). */
	for (uint32_t i = 0; i < U; i++)
		keys[i] = key_at_home((13 + i % 4) % 16, 4, ts_rand(st), ts_rand(st));
	KeyMap m;
	if (set)
		keymap_init_set(&m, true);
	else
		keymap_init(&m, sizeof(Key));
	size_t n = 0;
	for (int op = 0; op < OPS; op++) {
		/* Inserting more than deleting early on, so the map grows. */
		uint32_t i = (uint32_t)(ts_rand(st) %
		                        (op < OPS / 2 ? U / 4 + op * (U - U / 4) / (OPS / 2) : U));
		bool del = ts_rand(st) % 3 == 0;
		if (del) {
			uint32_t out = KEYMAP_NONE;
			assert_int_equal(keymap_del(&m, set ? NULL : keys, keys[i], &out), in[i]);
			if (in[i]) assert_int_equal(out, set ? val[i] : i);
			n -= in[i];
			in[i] = 0;
		} else if (set) {
			uint32_t *v = NULL;
			assert_int_equal(keymap_add(&m, keys[i], &v), !in[i]);
			if (!in[i]) *v = val[i] = (uint32_t)op;
			n += !in[i];
			in[i] = 1;
		} else {
			assert_int_equal(keymap_find_or_insert(&m, keys, i), i);
			n += !in[i];
			in[i] = 1;
		}
		assert_int_equal(m.n, n);
		if (op % 97 == 0)
			for (uint32_t k = 0; k < U; k++) {
				if (set)
					assert_int_equal(keymap_has(&m, keys[k]), in[k]);
				else
					assert_int_equal(keymap_find(&m, keys, keys[k]),
					                 in[k] ? k : KEYMAP_NONE);
			}
	}
	assert_true(m.cap >= 1024);
	assert_true(m.n * 2 <= m.cap);
	size_t pos = 0, count = 0;
	uint64_t w;
	uint32_t v;
	while (keymap_next(&m, &pos, &w, &v) == 1) {
		uint32_t k;
		if (set) {
			for (k = 0; k < U && !(in[k] == 1 && keys[k].hi == w); k++) {
			}
			assert_true(k < U);
			assert_int_equal(v, val[k]);
		} else {
			k = (uint32_t)w;
			assert_true(k < U);
			assert_int_equal(in[k], 1);
		}
		in[k] = 2; /* seen */
		count++;
	}
	assert_int_equal(count, n);
	keymap_free(&m);
	free(keys);
	free(in);
	free(val);
}

static void test_keymap__inserts_and_deletes_agree_with_a_model_across_growth(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	check_against_model(false, &st);
	check_against_model(true, &st);
}

/* As cluster/coord.c keeps its array dense: delete, move the last element into
 * the hole, put it there. */
static void test_keymap__a_dense_array_stays_dense_through_deletes(void **state)
{
	(void)state;
	uint64_t st = ts_seed(__func__);
	enum { N = 5000 };
	Elem *e = calloc(N, sizeof *e);
	assert_non_null(e);
	KeyMap m;
	keymap_init(&m, sizeof(Elem));
	size_t n = 0;
	for (; n < N; n++) {
		e[n].key = rand_key(&st);
		e[n].other = (uint32_t)n;
		assert_int_equal(keymap_find_or_insert(&m, &e[0].key, (uint32_t)n), (int64_t)n);
	}
	Key *gone = malloc(N / 2 * sizeof *gone);
	assert_non_null(gone);
	for (size_t d = 0; d < N / 2; d++) {
		size_t i = ts_rand(&st) % n;
		gone[d] = e[i].key;
		uint32_t out;
		assert_int_equal(keymap_del(&m, &e[0].key, e[i].key, &out), 1);
		assert_int_equal(out, i);
		if (i != --n) {
			e[i] = e[n];
			assert_int_equal(keymap_put(&m, &e[0].key, (uint32_t)i), 0);
		}
	}
	assert_int_equal(m.n, n);
	for (size_t i = 0; i < n; i++) assert_int_equal(keymap_find(&m, &e[0].key, e[i].key), i);
	for (size_t d = 0; d < N / 2; d++)
		assert_int_equal(keymap_find(&m, &e[0].key, gone[d]), KEYMAP_NONE);
	keymap_free(&m);
	free(gone);
	free(e);
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
	    cmocka_unit_test(test_keymap__a_cleared_heap_map_keeps_its_room_and_forgets_its_keys),
	    cmocka_unit_test(test_keymap__the_filter_never_turns_a_held_key_away),
	    cmocka_unit_test(test_keymap__keys_alike_in_one_half_are_told_apart_through_the_filter),
	    cmocka_unit_test(test_keymap__the_filter_bit_and_size_are_the_graph_files),
	    cmocka_unit_test(
	        test_keymap__deleting_in_a_probe_run_shifts_the_rest_back_and_keeps_it_found),
	    cmocka_unit_test(test_keymap__a_deleted_key_is_gone_until_inserted_again),
	    cmocka_unit_test(test_keymap__inserts_and_deletes_agree_with_a_model_across_growth),
	    cmocka_unit_test(test_keymap__a_dense_array_stays_dense_through_deletes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
