/*
 * tests/bookdb/test_index.c — the snapshot index: it finds every key of a
 * book at its place in key order and hands out the very bytes bookdb_get_raw
 * does, and finds no other key (random keys, keys one bit away from a book
 * key, keys in a book key's directory bucket); bookdb_index_get and
 * bookdb_index_get_moves agree with bookdb_get and bookdb_get_moves on a synth
 * book; empty and one-record books, keys at the extremes, many keys in one
 * bucket; an index holds its transaction's view at the build, and its keys
 * outlive the transaction. Every test uses a fresh mkdtemp book; randomised
 * tests print their seed (TEST_SEED repeats one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "bookdb/index.h"
#include "tests/support/support.h"

static Key random_key(uint64_t *rng)
{
	Key k = {ts_rand(rng), ts_rand(rng)};
	return k;
}

/* Stores keys[0..n) with bytes of their own (1 to 24 of them, from the key),
 * in one write transaction, so that each record can be told apart. */
static void put_keys(BookTxn *txn, const Key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t val[24];
		size_t len = 1 + (size_t)(keys[i].lo % sizeof val);
		for (size_t j = 0; j < len; j++)
			val[j] = (uint8_t)(keys[i].hi >> (8 * (j % 8))) ^ (uint8_t)j;
		assert_int_equal(bookdb_put_raw(txn, keys[i], val, len), 0);
	}
}

static void store(TsBook *b, const Key *keys, size_t n)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, b->db, true), 0);
	put_keys(txn, keys, n);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

/* A read transaction on the book and the index built from it. */
static BookIndex *index_of(TsBook *b, BookTxn **txn)
{
	BookIndex *ix;
	assert_int_equal(bookdb_txn_begin(txn, b->db, false), 0);
	assert_int_equal(bookdb_index_build(&ix, *txn), 0);
	return ix;
}

static void index_done(BookIndex *ix, BookTxn *txn, TsBook *b)
{
	bookdb_index_free(ix);
	bookdb_txn_abort(txn);
	ts_book_close(b);
}

/* Every key of the book is found at its place in key order, with the record
 * bookdb_get_raw gives (the same bytes of the same snapshot). */
static void check_all_present(const BookIndex *ix, BookTxn *txn)
{
	uint64_t count;
	assert_int_equal(bookdb_count(&count, txn, BOOKDB_POS), 0);
	assert_int_equal(bookdb_index_count(ix), count);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key k;
	const uint8_t *val, *ival;
	size_t len, ilen, i = 0;
	int rc;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		assert_true(key_equal(bookdb_index_key(ix, i), k));
		assert_true(key_equal(bookdb_index_keys(ix)[i], k));
		assert_int_equal(bookdb_index_find(ix, k), i);
		assert_int_equal(bookdb_index_get_raw(&ival, &ilen, ix, k), 0);
		assert_ptr_equal(ival, val);
		assert_int_equal(ilen, len);
		bookdb_index_raw(&ival, &ilen, ix, i);
		assert_ptr_equal(ival, val);
		assert_int_equal(ilen, len);
		i++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(i, count);
	bookdb_iter_free(it);
}

/* k is neither in the book nor found by the index. Returns whether it was
 * absent from the book (a random key might not be). */
static int check_absent(const BookIndex *ix, BookTxn *txn, Key k)
{
	const uint8_t *val;
	size_t len;
	if (bookdb_get_raw(&val, &len, txn, k) == 0) return 0;
	assert_int_equal(bookdb_index_find(ix, k), BOOKDB_INDEX_NONE);
	assert_int_equal(bookdb_index_get_raw(&val, &len, ix, k), BOOKDB_ENOTFOUND);
	BookRecord rec;
	assert_int_equal(bookdb_index_get(&rec, ix, k), BOOKDB_ENOTFOUND);
	assert_int_equal(bookdb_index_get_moves(&rec, ix, k), BOOKDB_ENOTFOUND);
	return 1;
}

/* A new book holding keys[0..n), and its index, checked against it. */
static BookIndex *stored_index(TsBook *b, BookTxn **txn, const Key *keys, size_t n)
{
	ts_book_open(b);
	store(b, keys, n);
	BookIndex *ix = index_of(b, txn);
	check_all_present(ix, *txn);
	return ix;
}

static void test_index__finds_every_key_of_a_random_book_and_no_other(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("finds_every_key_of_a_random_book_and_no_other");
	enum { N = 20000 };
	Key *keys = malloc(N * sizeof *keys);
	for (size_t i = 0; i < N; i++) keys[i] = random_key(&rng);
	TsBook b;
	BookTxn *txn;
	BookIndex *ix = stored_index(&b, &txn, keys, N);
	assert_true(bookdb_index_bytes(ix) >= N * 32);
	const BookKeyDir *kd = bookdb_index_dir(ix);
	assert_int_equal(kd->n, N);
	assert_ptr_equal(kd->keys, bookdb_index_keys(ix));
	size_t absent = 0;
	for (int i = 0; i < N; i++) absent += check_absent(ix, txn, random_key(&rng));
	assert_true(absent >= N - 1);
	/* One bit away from a book key: the same bucket or the same filter bit
	 * for many of them. */
	for (int i = 0; i < 300; i++) {
		Key k = keys[ts_rand(&rng) % N];
		for (int bit = 0; bit < 128; bit++) {
			Key x = k;
			if (bit < 64)
				x.lo ^= 1ULL << bit;
			else
				x.hi ^= 1ULL << (bit - 64);
			check_absent(ix, txn, x);
		}
		Key up = {k.lo + 1, k.hi}, down = {k.lo - 1, k.hi};
		check_absent(ix, txn, up);
		check_absent(ix, txn, down);
	}
	/* In a book key's directory bucket: its top bits, the rest random. */
	unsigned d = kd->dir_bits;
	for (int i = 0; i < N; i++) {
		Key k = keys[ts_rand(&rng) % N], x = random_key(&rng);
		uint64_t top = ~0ULL << (64 - d);
		x.hi = (k.hi & top) | (x.hi & ~top);
		check_absent(ix, txn, x);
	}
	index_done(ix, txn, &b);
	free(keys);
}

static void test_index__agrees_with_get_on_a_synth_book(void **state)
{
	(void)state;
	unsigned long long seed = ts_seed("agrees_with_get_on_a_synth_book");
	TsBook b;
	b.dir = ts_mkdtemp();
	snprintf(b.path, sizeof b.path, "%s/book", b.dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 3000 --seed %llu --quiet",
	                         ts_joseki(), b.path, seed),
	                 0);
	char err[BOOKDB_ERRLEN];
	BookDBOptions opt = {.read_only = true};
	if (bookdb_open(&b.db, b.path, &opt, err)) fail_msg("%s", err);
	BookTxn *txn;
	BookIndex *ix = index_of(&b, &txn);
	assert_int_equal(bookdb_index_count(ix), 3000);
	check_all_present(ix, txn);
	static BookRecord want, got;
	for (size_t i = 0; i < bookdb_index_count(ix); i++) {
		Key k = bookdb_index_key(ix, i);
		memset(&want, 0, sizeof want);
		memset(&got, 0, sizeof got);
		assert_int_equal(bookdb_get(&want, txn, k), 0);
		assert_int_equal(bookdb_index_get(&got, ix, k), 0);
		assert_memory_equal(&got, &want, sizeof want);
		memset(&want, 0, sizeof want);
		memset(&got, 0, sizeof got);
		assert_int_equal(bookdb_get_moves(&want, txn, k), 0);
		assert_int_equal(bookdb_index_get_moves(&got, ix, k), 0);
		assert_memory_equal(&got, &want, sizeof want);
	}
	index_done(ix, txn, &b);
}

static void test_index__empty_book(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	BookTxn *txn;
	BookIndex *ix = index_of(&b, &txn);
	assert_int_equal(bookdb_index_count(ix), 0);
	Key zero = {0, 0}, ones = {~0ULL, ~0ULL};
	assert_true(check_absent(ix, txn, zero));
	assert_true(check_absent(ix, txn, ones));
	uint64_t rng = 1;
	for (int i = 0; i < 1000; i++) assert_true(check_absent(ix, txn, random_key(&rng)));
	bookdb_index_free(ix);
	bookdb_index_free(NULL);
	bookdb_txn_abort(txn);
	ts_book_close(&b);
}

static void test_index__one_record(void **state)
{
	(void)state;
	Key k = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
	TsBook b;
	BookTxn *txn;
	BookIndex *ix = stored_index(&b, &txn, &k, 1);
	assert_int_equal(bookdb_index_find(ix, k), 0);
	Key lo1 = {k.lo ^ 1, k.hi}, hi1 = {k.lo, k.hi ^ 1}, zero = {0, 0};
	assert_true(check_absent(ix, txn, lo1));
	assert_true(check_absent(ix, txn, hi1));
	assert_true(check_absent(ix, txn, zero));
	index_done(ix, txn, &b);
}

static void test_index__keys_at_the_extremes(void **state)
{
	(void)state;
	/* The first and last directory buckets, and the keys that sort first
	 * and last: nothing before dir[0] or after dir[2^d]. */
	Key keys[] = {
	    {0, 0},
	    {~0ULL, 0},
	    {1, 0},
	    {0, 1},
	    {~0ULL, ~0ULL},
	    {0, ~0ULL},
	    {~0ULL - 1, ~0ULL},
	    {0, 0x8000000000000000ULL},
	    {0, 0x7fffffffffffffffULL},
	};
	size_t n = sizeof keys / sizeof keys[0];
	TsBook b;
	BookTxn *txn;
	BookIndex *ix = stored_index(&b, &txn, keys, n);
	assert_int_equal(bookdb_index_find(ix, keys[0]), 0);
	assert_int_equal(bookdb_index_find(ix, keys[4]), n - 1);
	Key absent[] = {{2, 0},
	                {~0ULL - 2, ~0ULL},
	                {1, ~0ULL},
	                {0, 0x8000000000000001ULL},
	                {0, 0x7ffffffffffffffeULL},
	                {0, 2}};
	for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
		assert_true(check_absent(ix, txn, absent[i]));
	index_done(ix, txn, &b);
}

static void test_index__many_keys_in_one_bucket(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("many_keys_in_one_bucket");
	/* 4,000 of 5,000 keys share their top 24 bits of hi: one bucket of
	 * thousands where a bucket holds about two. */
	enum { N = 5000, CROWD = 4000 };
	Key *keys = malloc(N * sizeof *keys);
	for (size_t i = 0; i < N; i++) {
		keys[i] = random_key(&rng);
		if (i < CROWD) keys[i].hi = 0x5a5a5a0000000000ULL | (keys[i].hi >> 24);
	}
	TsBook b;
	BookTxn *txn;
	BookIndex *ix = stored_index(&b, &txn, keys, N);
	for (int i = 0; i < 20000; i++) {
		Key x = random_key(&rng);
		if (i % 2) x.hi = 0x5a5a5a0000000000ULL | (x.hi >> 24);
		check_absent(ix, txn, x);
	}
	index_done(ix, txn, &b);
	free(keys);
}

static void test_index__holds_its_transaction_view_and_keys_outlive_it(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("holds_its_transaction_view_and_keys_outlive_it");
	enum { N = 1000 };
	Key keys[N + 1];
	for (size_t i = 0; i <= N; i++) keys[i] = random_key(&rng);
	TsBook b;
	ts_book_open(&b);
	store(&b, keys, N / 2);
	/* A write transaction: the committed half and its own uncommitted half. */
	BookTxn *txn;
	BookIndex *ix;
	assert_int_equal(bookdb_txn_begin(&txn, b.db, true), 0);
	put_keys(txn, keys + N / 2, N - N / 2);
	assert_int_equal(bookdb_index_build(&ix, txn), 0);
	check_all_present(ix, txn);
	assert_int_equal(bookdb_index_count(ix), N);
	/* A write after the build is not in it. */
	put_keys(txn, keys + N, 1);
	assert_int_equal(bookdb_index_find(ix, keys[N]), BOOKDB_INDEX_NONE);
	bookdb_txn_abort(txn);
	/* The transaction is gone: keys, find and the directory still work. */
	for (size_t i = 0; i < N; i++) {
		size_t at = bookdb_index_find(ix, keys[i]);
		assert_true(at < N);
		assert_true(key_equal(bookdb_index_key(ix, at), keys[i]));
		assert_int_equal(bookdb_keydir_find(bookdb_index_dir(ix), keys[i]), at);
	}
	bookdb_index_free(ix);
	ts_book_close(&b);
}

/* A pass told to stop (bookdb_index_build_until) ends with BOOKDB_ESTOPPED and
 * no index; not told, it builds the same index as bookdb_index_build. */
static void test_index__a_pass_told_to_stop_ends(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("a_pass_told_to_stop_ends");
	enum { N = 1000 };
	Key keys[N];
	for (size_t i = 0; i < N; i++) keys[i] = random_key(&rng);
	TsBook b;
	ts_book_open(&b);
	store(&b, keys, N);
	BookTxn *txn;
	BookIndex *ix = (BookIndex *)&rng;
	atomic_bool stop;
	atomic_init(&stop, true);
	assert_int_equal(bookdb_txn_begin(&txn, b.db, false), 0);
	assert_int_equal(bookdb_index_build_until(&ix, txn, &stop), BOOKDB_ESTOPPED);
	assert_null(ix);
	atomic_store(&stop, false);
	assert_int_equal(bookdb_index_build_until(&ix, txn, &stop), 0);
	assert_int_equal(bookdb_index_count(ix), N);
	check_all_present(ix, txn);
	bookdb_index_free(ix);
	bookdb_txn_abort(txn);
	ts_book_close(&b);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_index__finds_every_key_of_a_random_book_and_no_other),
	    cmocka_unit_test(test_index__agrees_with_get_on_a_synth_book),
	    cmocka_unit_test(test_index__empty_book),
	    cmocka_unit_test(test_index__one_record),
	    cmocka_unit_test(test_index__keys_at_the_extremes),
	    cmocka_unit_test(test_index__many_keys_in_one_bucket),
	    cmocka_unit_test(test_index__holds_its_transaction_view_and_keys_outlive_it),
	    cmocka_unit_test(test_index__a_pass_told_to_stop_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
