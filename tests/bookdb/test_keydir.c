/*
 * tests/bookdb/test_keydir.c — the key directory and filter shared by the
 * snapshot index and the minimax graph file: the sizes follow the graph
 * file's rules, the directory holds each bucket's first key exactly as the
 * file format defines it (one bucket at a time), the filter has exactly the
 * keys' bits, find agrees with a binary search for present and absent keys,
 * and a damaged directory (as a damaged file maps it) never leads outside the
 * keys. Randomised tests print their seed (TEST_SEED repeats one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/keydir.h"
#include "tests/support/support.h"

static int cmp_key(const void *a, const void *b)
{
	return key_cmp(*(const Key *)a, *(const Key *)b);
}

/* n distinct random keys, ascending; clustered: all in a few buckets. */
static Key *sorted_keys(size_t n, uint64_t *rng, int clustered)
{
	Key *k = malloc((n + 1) * sizeof *k);
	for (size_t i = 0; i < n; i++) {
		k[i].lo = ts_rand(rng);
		k[i].hi = ts_rand(rng);
		if (clustered)
			k[i].hi = (k[i].hi & 0x00ffffffffffffffULL) | (ts_rand(rng) % 3) << 56;
	}
	qsort(k, n, sizeof *k, cmp_key);
	size_t m = 0; /* drop the (unlikely) duplicates */
	for (size_t i = 0; i < n; i++)
		if (!m || !key_equal(k[m - 1], k[i])) k[m++] = k[i];
	assert_int_equal(m, n);
	return k;
}

typedef struct {
	BookKeyDir kd;
	uint32_t *dir;
	uint64_t *filter;
} Dir;

static void dir_build(Dir *d, const Key *keys, size_t n)
{
	unsigned db = bookdb_keydir_dir_bits(n), fl = keyfilter_log2(n);
	d->dir = malloc(bookdb_keydir_dir_len(db) * sizeof *d->dir);
	d->filter = calloc(keyfilter_words(fl), sizeof *d->filter);
	memset(d->dir, 0xa5, bookdb_keydir_dir_len(db) * sizeof *d->dir); /* filled, not assumed */
	bookdb_keydir_fill(&d->kd, keys, n, d->dir, db, d->filter, fl);
}

static void dir_free(Dir *d)
{
	free(d->dir);
	free(d->filter);
}

static size_t bsearch_index(const Key *keys, size_t n, Key k)
{
	const Key *p = bsearch(&k, keys, n, sizeof *keys, cmp_key);
	return p ? (size_t)(p - keys) : BOOKDB_KEYDIR_NONE;
}

static void test_keydir__sizes_follow_the_graph_file_rules(void **state)
{
	(void)state;
	/* d: smallest of 4..30 with 2^d >= n/2; f: smallest of 10..40 with
	 * 2^f >= 8n (docs/minimax.md, "The graph file"). */
	assert_int_equal(bookdb_keydir_dir_bits(0), 4);
	assert_int_equal(bookdb_keydir_dir_bits(33), 4);
	assert_int_equal(bookdb_keydir_dir_bits(34), 5);
	assert_int_equal(bookdb_keydir_dir_bits(10000000), 23);
	assert_int_equal(bookdb_keydir_dir_bits((size_t)1 << 40), 30);
	assert_int_equal(keyfilter_log2(0), 10);
	assert_int_equal(keyfilter_log2(128), 10);
	assert_int_equal(keyfilter_log2(129), 11);
	assert_int_equal(keyfilter_log2(10000000), 27);
	assert_int_equal(bookdb_keydir_dir_len(23), (1u << 23) + 1);
	assert_int_equal(keyfilter_words(27), (1u << 27) / 64);
	Key k = {0x80, 0x3};
	assert_int_equal(keyfilter_word(k, 1023), 0);
	assert_int_equal(keyfilter_bits(k), 1ULL << (0x3 ^ 1) | 1ULL << 0);
}

static void test_keydir__fill_matches_the_format_definition(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("fill_matches_the_format_definition");
	size_t sizes[] = {0, 1, 2, 33, 34, 1000, 50000};
	for (int clustered = 0; clustered < 2; clustered++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			size_t n = sizes[s];
			Key *keys = sorted_keys(n, &rng, clustered);
			Dir d;
			dir_build(&d, keys, n);
			unsigned db = d.kd.dir_bits;
			assert_int_equal(db, bookdb_keydir_dir_bits(n));
			assert_int_equal(d.kd.n, n);
			assert_ptr_equal(d.kd.keys, keys);
			/* The definition, one bucket at a time: the first key whose
			 * top bits are >= the bucket, or n. */
			size_t i = 0;
			for (size_t b = 0; b < bookdb_keydir_dir_len(db); b++) {
				while (i < n && (keys[i].hi >> (64 - db)) < b) i++;
				assert_int_equal(d.dir[b], i);
			}
			unsigned fl = keyfilter_log2(n);
			uint64_t *want = calloc(keyfilter_words(fl), sizeof *want);
			for (i = 0; i < n; i++) {
				uint64_t h = keys[i].hi ^ keys[i].lo >> 7;
				want[(h & (((uint64_t)1 << fl) - 1)) >> 6] |=
				    1ULL << (h & 63) | 1ULL << (keys[i].lo & 63) |
				    1ULL << (keys[i].hi >> 58);
			}
			assert_memory_equal(d.filter, want, keyfilter_words(fl) * 8);
			free(want);
			dir_free(&d);
			free(keys);
		}
}

static void test_keydir__find_agrees_with_a_binary_search(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("find_agrees_with_a_binary_search");
	for (int clustered = 0; clustered < 2; clustered++) {
		size_t n = 20000;
		Key *keys = sorted_keys(n, &rng, clustered);
		Dir d;
		dir_build(&d, keys, n);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(bookdb_keydir_find(&d.kd, keys[i]), i);
		for (int t = 0; t < 100000; t++) {
			Key k = keys[ts_rand(&rng) % n];
			switch (t % 4) {
			case 0:
				k.lo = ts_rand(&rng);
				break;
			case 1:
				k.hi ^= 1ULL << (ts_rand(&rng) % 64);
				break;
			case 2:
				k.lo ^= 1ULL << (ts_rand(&rng) % 64);
				break;
			default:
				k.hi = ts_rand(&rng);
				break;
			}
			assert_int_equal(bookdb_keydir_find(&d.kd, k), bsearch_index(keys, n, k));
		}
		dir_free(&d);
		free(keys);
	}
}

/* Keys looked up together (a position's children: up to 593, in steps of
 * 64 inside) get what one by one would: present, absent, repeated, none. */
static void test_keydir__find_many_agrees_with_find(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("find_many_agrees_with_find");
	static const size_t SIZES[] = {1, 40, 5000, 200000};
	for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++) {
		size_t n = SIZES[s];
		Key *keys = sorted_keys(n, &rng, 0);
		Dir d;
		dir_build(&d, keys, n);
		static Key batch[600];
		static size_t many[600];
		static const size_t COUNTS[] = {0, 1, 63, 64, 65, 128, 200, 593, 600};
		for (size_t c = 0; c < sizeof COUNTS / sizeof *COUNTS; c++) {
			size_t m = COUNTS[c];
			for (size_t i = 0; i < m; i++) {
				Key k = keys[ts_rand(&rng) % n];
				if (ts_rand(&rng) % 3 == 0) k.lo ^= 1ULL << (ts_rand(&rng) % 64);
				batch[i] = k;
			}
			for (size_t i = 0; i < 600; i++) many[i] = 7; /* past m: untouched */
			bookdb_keydir_find_many(&d.kd, batch, m, many);
			for (size_t i = 0; i < m; i++)
				assert_int_equal(many[i], bsearch_index(keys, n, batch[i]));
			for (size_t i = m; i < 600; i++) assert_int_equal(many[i], 7);
		}
		dir_free(&d);
		free(keys);
	}
}

static void test_keydir__damaged_directory_stays_within_the_keys(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("damaged_directory_stays_within_the_keys");
	size_t n = 3000;
	Key *keys = sorted_keys(n, &rng, 0);
	Dir d;
	dir_build(&d, keys, n);
	size_t len = bookdb_keydir_dir_len(d.kd.dir_bits);
	/* Entries past n, decreasing, anything: a find may miss, but what it
	 * returns is a key's own index, and it reads only keys[0..n) (ASan). */
	for (size_t b = 0; b < len; b++) {
		uint64_t r = ts_rand(&rng);
		if (r % 3 == 0)
			d.dir[b] = (uint32_t)(r >> 32);
		else if (r % 3 == 1)
			d.dir[b] = (uint32_t)(n + (r >> 40));
	}
	for (int t = 0; t < 20000; t++) {
		Key k = t % 2 ? keys[ts_rand(&rng) % n] : (Key){ts_rand(&rng), ts_rand(&rng)};
		size_t i = bookdb_keydir_find(&d.kd, k);
		assert_true(i == BOOKDB_KEYDIR_NONE || (i < n && key_equal(keys[i], k)));
	}
	/* Together, the same answers. */
	Key batch[150];
	size_t many[150];
	for (int t = 0; t < 150; t++)
		batch[t] = t % 2 ? keys[ts_rand(&rng) % n] : (Key){ts_rand(&rng), ts_rand(&rng)};
	bookdb_keydir_find_many(&d.kd, batch, 150, many);
	for (int t = 0; t < 150; t++)
		assert_int_equal(many[t], bookdb_keydir_find(&d.kd, batch[t]));
	dir_free(&d);
	free(keys);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keydir__sizes_follow_the_graph_file_rules),
	    cmocka_unit_test(test_keydir__fill_matches_the_format_definition),
	    cmocka_unit_test(test_keydir__find_agrees_with_a_binary_search),
	    cmocka_unit_test(test_keydir__find_many_agrees_with_find),
	    cmocka_unit_test(test_keydir__damaged_directory_stays_within_the_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
