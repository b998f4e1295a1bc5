/*
 * tests/bookdb/test_prefetch.c — reading records ahead (bookdb/prefetch.h):
 * every key handed in is looked up (present ones, absent ones, records long
 * enough to lie on pages of their own), while a writer commits beside the
 * threads; a full stack drops its oldest keys, exactly as many as it has no
 * room for; closing with keys waiting stops the threads at once; after all
 * of it the book reads back as it was written. Every test uses a fresh
 * mkdtemp book.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "bookdb/prefetch.h"
#include "tests/support/support.h"

/* Record i's length: every 100th one 20,000 bytes (pages of its own). */
static size_t rec_len(size_t i)
{
	return i % 100 == 7 ? 20000 : 1 + i % 40;
}

static uint8_t rec_byte(size_t i, size_t j)
{
	return (uint8_t)(i * 31 + j * 7);
}

static Key key_of(size_t i)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (i + 1);
	Key k = {ts_rand(&rng), ts_rand(&rng)};
	return k;
}

static void store(TsBook *b, size_t from, size_t to)
{
	BookTxn *txn;
	uint8_t *val = malloc(20000);
	assert_non_null(val);
	assert_int_equal(bookdb_txn_begin(&txn, b->db, true), 0);
	for (size_t i = from; i < to; i++) {
		for (size_t j = 0; j < rec_len(i); j++) val[j] = rec_byte(i, j);
		assert_int_equal(bookdb_put_raw(txn, key_of(i), val, rec_len(i)), 0);
	}
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(val);
}

static void check_book(TsBook *b, size_t n)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, b->db, false), 0);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *val;
		size_t len;
		assert_int_equal(bookdb_get_raw(&val, &len, txn, key_of(i)), 0);
		assert_int_equal(len, rec_len(i));
		for (size_t j = 0; j < len; j++) assert_int_equal(val[j], rec_byte(i, j));
	}
	bookdb_txn_abort(txn);
}

/* Waits until every key handed in was read or dropped (a minute at most:
 * then the threads are stuck, and the test says so). */
static BookPrefetchStats wait_done(BookPrefetch *pf)
{
	BookPrefetchStats st;
	for (int k = 0; k < 60000; k++) {
		bookdb_prefetch_stats(&st, pf);
		if (st.read + st.dropped == st.asked) return st;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	fail_msg("read %llu + dropped %llu of %llu keys after a minute",
	         (unsigned long long)st.read, (unsigned long long)st.dropped,
	         (unsigned long long)st.asked);
	return st;
}

static void test_prefetch__reads_every_key_handed_in_beside_a_writer(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, 3000);
	BookPrefetch *pf;
	assert_int_equal(bookdb_prefetch_open(&pf, b.db, 8), 0);
	/* Batches of the book's keys and of keys it does not hold (up to 6000),
	 * each batch read before the next: nothing is dropped. A writer adds
	 * the keys from 3000 on meanwhile. */
	Key keys[500];
	uint64_t asked = 0;
	for (size_t from = 0; from < 6000; from += 500) {
		for (size_t j = 0; j < 500; j++) keys[j] = key_of(from + j);
		bookdb_prefetch_keys(pf, keys, 500);
		asked += 500;
		if (from == 2500) store(&b, 3000, 4000);
		BookPrefetchStats st = wait_done(pf);
		assert_int_equal(st.asked, asked);
		assert_int_equal(st.read, asked);
		assert_int_equal(st.dropped, 0);
	}
	bookdb_prefetch_keys(pf, keys, 0);
	BookPrefetchStats st;
	bookdb_prefetch_stats(&st, pf);
	assert_int_equal(st.asked, asked);
	bookdb_prefetch_close(pf);
	check_book(&b, 4000);
	ts_book_close(&b);
}

static void test_prefetch__a_full_stack_drops_its_oldest_keys(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, 3000);
	BookPrefetch *pf;
	assert_int_equal(bookdb_prefetch_open(&pf, b.db, 1), 0);
	/* One batch of 3000 onto an empty stack of 1024: the thread cannot take
	 * a key while the batch goes on, so 1976 are dropped, and 1024 read. */
	Key *keys = malloc(3000 * sizeof *keys);
	assert_non_null(keys);
	for (size_t i = 0; i < 3000; i++) keys[i] = key_of(i);
	bookdb_prefetch_keys(pf, keys, 3000);
	BookPrefetchStats st = wait_done(pf);
	assert_int_equal(st.asked, 3000);
	assert_int_equal(st.dropped, 1976);
	assert_int_equal(st.read, 1024);
	free(keys);
	bookdb_prefetch_close(pf);
	check_book(&b, 3000);
	ts_book_close(&b);
}

static void test_prefetch__closing_with_keys_waiting(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, 1000);
	for (int round = 0; round < 20; round++) {
		BookPrefetch *pf;
		assert_int_equal(bookdb_prefetch_open(&pf, b.db, 1 + round % 4), 0);
		Key keys[1000];
		for (size_t i = 0; i < 1000; i++) keys[i] = key_of(i);
		bookdb_prefetch_keys(pf, keys, 1000);
		BookPrefetchStats st;
		bookdb_prefetch_stats(&st, pf);
		assert_int_equal(st.asked, 1000);
		assert_true(st.read <= 1000);
		bookdb_prefetch_close(pf); /* the keys left are dropped, the threads joined */
	}
	bookdb_prefetch_close(NULL);
	check_book(&b, 1000);
	ts_book_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prefetch__reads_every_key_handed_in_beside_a_writer),
	    cmocka_unit_test(test_prefetch__a_full_stack_drops_its_oldest_keys),
	    cmocka_unit_test(test_prefetch__closing_with_keys_waiting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
