/*
 * tests/bookdb/test_prefetch.c — reading records ahead (bookdb/prefetch.h):
 * every key handed in is looked up (present ones, absent ones, records long
 * enough to lie on pages of their own), while a writer commits beside the
 * threads, and read in the calling thread (bookdb_prefetch_now) beside a
 * writer's open transaction; a full stack drops its oldest keys, exactly as many as it has no
 * room for; keys handed in deeper have their records shown to a then
 * function, which hands in the next level's; closing with keys waiting stops the threads at once;
 * after all of it the book reads back as it was written. A pass over a book read at random
 * (bookdb_iter_open, BookDBOptions.random) reads ahead on threads of its own and still reads
 * exactly its snapshot, from the first key or from one in the middle, while a writer commits; freed
 * part way, its threads are joined; a book not read at random has none. Every test uses a fresh
 * mkdtemp book.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* The same reads in the calling thread: present keys (some on pages of
 * their own), absent ones, none; between a writer's commits, and with a
 * write transaction of this thread open (the coordinator's HTTP threads warm
 * while its service thread writes). */
static void test_prefetch__now_reads_in_the_calling_thread(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, 1000);
	Key keys[400];
	for (size_t j = 0; j < 400; j++) keys[j] = key_of(j * 3); /* 0..1197: a sixth absent */
	bookdb_prefetch_now(b.db, keys, 0);
	bookdb_prefetch_now(b.db, keys, 400);
	store(&b, 1000, 2000);
	BookTxn *w;
	assert_int_equal(bookdb_txn_begin(&w, b.db, true), 0);
	assert_int_equal(bookdb_put_raw(w, key_of(5000), (const uint8_t *)"x", 1), 0);
	bookdb_prefetch_now(b.db, keys, 400);
	assert_int_equal(bookdb_txn_commit(w), 0);
	check_book(&b, 2000);
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

/* The then function's calls: key index, depth, and whether the record it
 * was shown is record i's. */
typedef struct {
	pthread_mutex_t mu;
	int n, idx[16], depth[16];
	bool right[16];
} Then;

static int index_of(Key k)
{
	for (int i = 0; i < 3000; i++)
		if (key_equal(key_of((size_t)i), k)) return i;
	return -1;
}

/* Record i's then: record i + 1 one level deeper down. */
static void then_fn(void *ctx, BookPrefetch *pf, Key key, const uint8_t *val, size_t len, int depth)
{
	Then *t = ctx;
	int i = index_of(key);
	bool right = i >= 0 && len == rec_len((size_t)i);
	for (size_t j = 0; right && j < len; j++) right = val[j] == rec_byte((size_t)i, j);
	pthread_mutex_lock(&t->mu);
	if (t->n < 16) {
		t->idx[t->n] = i;
		t->depth[t->n] = depth;
		t->right[t->n] = right;
		t->n++;
	}
	pthread_mutex_unlock(&t->mu);
	Key next = key_of((size_t)i + 1);
	bookdb_prefetch_keys_deep(pf, &next, 1, depth - 1);
}

/* Reading ahead deeper: a key handed in with depth 3 has its record shown
 * to the then function, which hands in the next one a level down, down to
 * depth 0, read but not shown; a key the book does not hold and keys
 * handed in by bookdb_prefetch_keys are shown to nobody. */
static void test_prefetch__deeper_keys_go_to_the_then_function(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, 3000);
	BookPrefetch *pf;
	assert_int_equal(bookdb_prefetch_open(&pf, b.db, 4), 0);
	Then t = {.n = 0};
	pthread_mutex_init(&t.mu, NULL);
	bookdb_prefetch_then(pf, then_fn, &t);
	Key k[3] = {key_of(5), key_of(1000), key_of(5000)};
	bookdb_prefetch_keys(pf, &k[1], 1);
	bookdb_prefetch_keys_deep(pf, &k[2], 1, 2); /* absent */
	bookdb_prefetch_keys_deep(pf, &k[0], 1, 3);
	BookPrefetchStats st = wait_done(pf);
	/* 5 (shown at 3), 6 (2), 7 (1), 8 (read only), 1000, 5000. */
	assert_int_equal(st.read, 6);
	assert_int_equal(st.asked, 6);
	pthread_mutex_lock(&t.mu);
	assert_int_equal(t.n, 3);
	for (int j = 0; j < 3; j++) {
		assert_int_equal(t.idx[j], 5 + j);
		assert_int_equal(t.depth[j], 3 - j);
		assert_true(t.right[j]);
	}
	pthread_mutex_unlock(&t.mu);
	bookdb_prefetch_close(pf);
	pthread_mutex_destroy(&t.mu);
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

/* The book reopened for random reads, whatever its size. */
static void reopen_random(TsBook *b)
{
	char err[BOOKDB_ERRLEN];
	bookdb_free(b->db);
	BookDBOptions opt = {.no_sync = true, .random = true, .random_above = 1};
	if (bookdb_open(&b->db, b->path, &opt, err)) fail_msg("%s", err);
}

static int cmp_key(const void *a, const void *b)
{
	return key_cmp(*(const Key *)a, *(const Key *)b);
}

/* Waits until the pass's threads walked a part of the book (a minute at most). */
static void wait_read_ahead(const BookIter *it)
{
	for (int k = 0; k < 60000 && bookdb_iter_read_ahead(it) == 0; k++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_true(bookdb_iter_read_ahead(it) > 0);
}

/* Reads the pass to its end: exactly keys[from..n) in order, their records
 * as written (i of key keys[j] found through index). */
static void read_rest(BookIter *it, const Key *keys, const size_t *index, size_t from, size_t n)
{
	Key k;
	const uint8_t *val;
	size_t len, j = from;
	int rc;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		assert_true(j < n);
		assert_true(key_cmp(k, keys[j]) == 0);
		size_t i = index[j];
		assert_int_equal(len, rec_len(i));
		assert_int_equal(val[0], rec_byte(i, 0));
		assert_int_equal(val[len - 1], rec_byte(i, len - 1));
		j++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(j, n);
}

#define PASS_N 20000

/* A pass over the positions from the first, in a read transaction of its own. */
static BookIter *open_pass(TsBook *b, BookTxn **txn)
{
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(txn, b->db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, *txn), 0);
	return it;
}

/* Records 0..n's keys in order (keys), and which record each is (index). */
static void sorted_keys(Key *keys, size_t *index, size_t n)
{
	for (size_t i = 0; i < n; i++) keys[i] = key_of(i);
	qsort(keys, n, sizeof *keys, cmp_key);
	for (size_t i = 0; i < n; i++) {
		Key want = key_of(i);
		Key *at = bsearch(&want, keys, n, sizeof *keys, cmp_key);
		assert_non_null(at);
		index[at - keys] = i;
	}
}

static void test_prefetch__a_pass_reads_ahead_and_reads_its_snapshot(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, PASS_N);
	reopen_random(&b);
	Key *keys = malloc((PASS_N + 2000) * sizeof *keys);
	size_t *index = malloc((PASS_N + 2000) * sizeof *index);
	assert_non_null(keys);
	assert_non_null(index);
	for (int from_middle = 0; from_middle < 2; from_middle++) {
		BookTxn *txn;
		BookIter *it = open_pass(&b, &txn);
		/* The snapshot: the first PASS_N records, and the writer's of the
		 * pass before. */
		size_t n = PASS_N + 1000 * (size_t)from_middle;
		sorted_keys(keys, index, n);
		size_t first = from_middle ? n / 3 : 0;
		if (from_middle) { /* from a key in the middle instead */
			uint8_t kb[16];
			key_to_bytes(keys[first], kb);
			bookdb_iter_free(it);
			assert_int_equal(bookdb_kv_iter_open_at(&it, txn, BOOKDB_POS, kb, 16), 0);
		}
		Key k;
		const uint8_t *val;
		size_t len;
		assert_int_equal(bookdb_iter_next(it, &k, &val, &len), 1);
		assert_true(key_cmp(k, keys[first]) == 0);
		wait_read_ahead(it);
		/* A writer adds records while the pass goes on: not in its snapshot. */
		store(&b, PASS_N + 1000 * (size_t)from_middle,
		      PASS_N + 1000 * (size_t)(from_middle + 1));
		read_rest(it, keys, index, first + 1, n);
		bookdb_iter_free(it);
		bookdb_txn_abort(txn);
	}
	/* Freed part way, again and again: the threads are joined each time. */
	for (int round = 0; round < 20; round++) {
		BookTxn *txn;
		BookIter *it = open_pass(&b, &txn);
		Key k;
		const uint8_t *val;
		size_t len;
		for (int s = 0; s < 1 + round * 50; s++)
			assert_int_equal(bookdb_iter_next(it, &k, &val, &len), 1);
		bookdb_iter_free(it);
		bookdb_txn_abort(txn);
	}
	check_book(&b, PASS_N + 2000);
	free(keys);
	free(index);
	ts_book_close(&b);
}

static void test_prefetch__a_book_not_read_at_random_has_no_threads(void **state)
{
	(void)state;
	TsBook b;
	ts_book_open(&b);
	store(&b, 0, PASS_N);
	BookTxn *txn;
	BookIter *it = open_pass(&b, &txn);
	Key k;
	const uint8_t *val;
	size_t len, n = 0;
	while (bookdb_iter_next(it, &k, &val, &len) == 1) n++;
	assert_int_equal(n, PASS_N);
	assert_int_equal(bookdb_iter_read_ahead(it), 0);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	ts_book_close(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prefetch__reads_every_key_handed_in_beside_a_writer),
	    cmocka_unit_test(test_prefetch__now_reads_in_the_calling_thread),
	    cmocka_unit_test(test_prefetch__a_full_stack_drops_its_oldest_keys),
	    cmocka_unit_test(test_prefetch__closing_with_keys_waiting),
	    cmocka_unit_test(test_prefetch__deeper_keys_go_to_the_then_function),
	    cmocka_unit_test(test_prefetch__a_pass_reads_ahead_and_reads_its_snapshot),
	    cmocka_unit_test(test_prefetch__a_book_not_read_at_random_has_no_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
