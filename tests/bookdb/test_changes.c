/*
 * tests/bookdb/test_changes.c — the change log of the pos database: nothing is
 * logged while tracking is off; once on, every write path logs its key once,
 * in order, in the writing transaction (an abort logs nothing, a transaction or
 * writer with tracking off logs nothing); consume deletes exactly up to its
 * bound and sequence numbers never go back; the log overflows at its limit;
 * a transaction replayed after map growth logs each write once; a version-1
 * book is upgraded when opened read-write and read as it is read-only. The
 * kill -9 case is part of the crash test in test_bookdb.c. Every test uses a
 * fresh mkdtemp book.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

#include "bookdb/bookdb.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* A book in a fresh directory; *dir is the caller's to remove and free. */
static BookDB *new_book(char **dir, char *path, uint64_t changes_max, size_t map_size)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	BookDBOptions opt = {.no_sync = true, .changes_max = changes_max, .map_size = map_size};
	*dir = ts_mkdtemp();
	snprintf(path, 4200, "%s/book", *dir);
	if (bookdb_open(&db, path, &opt, err)) fail_msg("%s", err);
	return db;
}

static void done(BookDB *db, char *dir)
{
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* The i-th test key: distinct, in increasing key order with i. */
static Key key_n(uint64_t i)
{
	Key k = {0x1000 + i, i * 0x9e3779b97f4a7c15ULL};
	return k;
}

static void enable(BookDB *db)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_enable(txn), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

static BookChangesInfo info_of(BookDB *db)
{
	BookTxn *txn;
	BookChangesInfo in;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_info(&in, txn), 0);
	bookdb_txn_abort(txn);
	return in;
}

/* The log from sequence number from on, as a fresh read transaction sees it;
 * returns the number of entries (at most max are stored). */
static size_t read_log(BookDB *db, uint64_t from, uint64_t *seqs, Key *keys, size_t max)
{
	BookTxn *txn;
	BookChangesIter *it;
	uint64_t seq;
	Key key;
	size_t n = 0;
	int rc;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_iter_open(&it, txn, from), 0);
	while ((rc = bookdb_changes_iter_next(it, &seq, &key)) == 1) {
		if (n < max) {
			seqs[n] = seq;
			keys[n] = key;
		}
		n++;
	}
	assert_int_equal(rc, 0);
	bookdb_changes_iter_free(it);
	bookdb_txn_abort(txn);
	return n;
}

/* The log holds exactly keys[0..n) with sequence numbers first, first+1, ... */
static void assert_log(BookDB *db, uint64_t first, const Key *keys, size_t n)
{
	uint64_t *s = calloc(n + 1, sizeof *s);
	Key *k = calloc(n + 1, sizeof *k);
	assert_int_equal(read_log(db, 0, s, k, n + 1), n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(s[i], first + i);
		if (!key_equal(k[i], keys[i]))
			fail_msg("entry %zu (seq %llu): wrong key", i, (unsigned long long)s[i]);
	}
	free(s);
	free(k);
}

/* The bytes these tests store: what the log does with them is the matter, so
 * no record (stats counts them corrupt and exits 1 over such a book). */
static const uint8_t VAL[4] = {1, 2, 3, 4};

static void put_n(BookDB *db, uint64_t from, uint64_t n)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (uint64_t i = from; i < from + n; i++)
		assert_int_equal(bookdb_put_raw(txn, key_n(i), VAL, sizeof VAL), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

/* Writes through every path that writes pos, in this order:
 * put, put_raw, kv_put, kv_del, writer_put, writer_put_raw, writer_append. */
static void write_every_path(BookDB *db, uint64_t base, Key *keys)
{
	static Position pos;
	static BookRecord rec;
	BookTxn *txn;
	BookWriter *w;
	uint8_t kb[16];
	pos_set_startpos(&pos);
	bookdb_record_init(&rec, &pos);
	for (int i = 0; i < 7; i++) keys[i] = key_n(base + (uint64_t)i);
	keys[6].hi = UINT64_MAX - 1000 + base; /* past every key for the append */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, keys[0], &rec), 0);
	assert_int_equal(bookdb_put_raw(txn, keys[1], VAL, sizeof VAL), 0);
	key_to_bytes(keys[2], kb);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_POS, kb, 16, VAL, sizeof VAL), 0);
	key_to_bytes(keys[3], kb);
	assert_int_equal(bookdb_kv_del(txn, BOOKDB_POS, kb, 16), 0);
	/* Other databases are not pos: not logged. */
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_GAMES, "g", 1, "x", 1), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "w", 1, "x", 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_int_equal(bookdb_writer_new(&w, db, 2), 0);
	assert_int_equal(bookdb_writer_put(w, keys[4], &rec), 0);
	assert_int_equal(bookdb_writer_put_raw(w, keys[5], VAL, sizeof VAL), 0); /* commits */
	assert_int_equal(bookdb_writer_append(w, keys[6], VAL, sizeof VAL), 0);
	assert_int_equal(bookdb_writer_flush(w), 0);
	assert_int_equal(bookdb_writer_commits(w), 2);
	bookdb_writer_free(w);
}

static void test_changes__nothing_is_logged_while_tracking_is_off(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 0);
	Key keys[7];
	write_every_path(db, 0, keys);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OFF);
	assert_int_equal(in.entries, 0);
	assert_int_equal(in.first, 0);
	assert_int_equal(in.last, 0);
	assert_int_equal(in.seq, 0);
	/* Not even the sequence number is kept: an untracked book pays nothing. */
	BookTxn *txn;
	const void *v;
	size_t vlen;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_kv_get(&v, &vlen, txn, BOOKDB_META, "changes_seq", 11),
	                 BOOKDB_ENOTFOUND);
	assert_int_equal(bookdb_kv_get(&v, &vlen, txn, BOOKDB_META, "changes", 7),
	                 BOOKDB_ENOTFOUND);
	bookdb_txn_abort(txn);
	/* Enabled in the middle of a transaction: the writes after it are logged. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put_raw(txn, key_n(50), VAL, sizeof VAL), 0);
	assert_int_equal(bookdb_changes_enable(txn), 0);
	assert_int_equal(bookdb_put_raw(txn, key_n(51), VAL, sizeof VAL), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	Key k = key_n(51);
	assert_log(db, 1, &k, 1);
	done(db, dir);
}

static void test_changes__every_pos_write_is_logged_once_in_order(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 0);
	Key keys[14];
	write_every_path(db, 0, keys); /* before enabling: not logged */
	enable(db);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_ON);
	assert_int_equal(in.entries, 0);
	write_every_path(db, 100, keys);
	write_every_path(db, 200, keys + 7);
	assert_log(db, 1, keys, 14);
	in = info_of(db);
	assert_int_equal(in.entries, 14);
	assert_int_equal(in.first, 1);
	assert_int_equal(in.last, 14);
	assert_int_equal(in.seq, 14);
	/* The same key written twice is logged twice; a transaction sees its own
	 * entries and numbering before it commits. */
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put_raw(txn, keys[0], VAL, 2), 0);
	assert_int_equal(bookdb_put_raw(txn, keys[0], VAL, 3), 0);
	assert_int_equal(bookdb_changes_info(&in, txn), 0);
	assert_int_equal(in.entries, 16);
	assert_int_equal(in.seq, 16);
	/* The store alone writes the log. */
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_CHANGES, "\0\0\0\0\0\0\0\x63", 8, keys, 16),
	                 BOOKDB_EINVAL);
	assert_int_equal(bookdb_kv_del(txn, BOOKDB_CHANGES, "\0\0\0\0\0\0\0\x01", 8),
	                 BOOKDB_EINVAL);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	uint64_t s[3];
	Key k[3];
	assert_int_equal(read_log(db, 15, s, k, 3), 2);
	assert_int_equal(s[0], 15);
	assert_int_equal(s[1], 16);
	assert_true(key_equal(k[0], keys[0]) && key_equal(k[1], keys[0]));
	/* The counters agree with the database itself. */
	uint64_t n;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_CHANGES), 0);
	assert_int_equal(n, 16);
	bookdb_txn_abort(txn);
	done(db, dir);
}

static void test_changes__an_aborted_transaction_logs_nothing(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 0);
	enable(db);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (uint64_t i = 0; i < 50; i++)
		assert_int_equal(bookdb_put_raw(txn, key_n(i), VAL, sizeof VAL), 0);
	bookdb_txn_abort(txn);
	BookWriter *w; /* a writer freed with its batch open discards it */
	assert_int_equal(bookdb_writer_new(&w, db, 1000), 0);
	for (uint64_t i = 0; i < 50; i++)
		assert_int_equal(bookdb_writer_put_raw(w, key_n(i), VAL, sizeof VAL), 0);
	bookdb_writer_free(w);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.entries, 0);
	assert_int_equal(in.seq, 0);
	/* Numbers an aborted transaction took were never committed: the next is 1. */
	put_n(db, 7, 1);
	Key k = key_n(7);
	assert_log(db, 1, &k, 1);
	done(db, dir);
}

static void test_changes__writes_with_tracking_off_are_not_logged(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 0);
	enable(db);
	BookTxn *txn;
	Key want[4];
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	bookdb_txn_set_tracking(txn, false);
	assert_int_equal(bookdb_put_raw(txn, key_n(1), VAL, sizeof VAL), 0);
	bookdb_txn_set_tracking(txn, true); /* applies to the writes after it */
	assert_int_equal(bookdb_put_raw(txn, key_n(2), VAL, sizeof VAL), 0);
	want[0] = key_n(2);
	assert_int_equal(bookdb_txn_commit(txn), 0);

	BookWriter *w;
	assert_int_equal(bookdb_writer_new(&w, db, 10), 0);
	bookdb_writer_set_tracking(w, false);
	for (uint64_t i = 100; i < 135; i++) /* three batches committed, one open */
		assert_int_equal(bookdb_writer_put_raw(w, key_n(i), VAL, sizeof VAL), 0);
	bookdb_writer_set_tracking(w, true); /* the open batch too, from here on */
	for (uint64_t i = 200; i < 203; i++) {
		assert_int_equal(bookdb_writer_put_raw(w, key_n(i), VAL, sizeof VAL), 0);
		want[1 + i - 200] = key_n(i);
	}
	assert_int_equal(bookdb_writer_flush(w), 0);
	bookdb_writer_free(w);
	assert_log(db, 1, want, 4);
	done(db, dir);
}

static void test_changes__consume_deletes_exactly_up_to_its_bound(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 0);
	enable(db);
	enum { N = 3000 }; /* many leaf pages */
	static Key keys[N];
	for (uint64_t i = 0; i < N; i++) keys[i] = key_n(i);
	put_n(db, 0, N / 2);
	put_n(db, N / 2, N / 2);
	BookTxn *txn;
	/* Consumed in an aborted transaction: still there. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, N), 0);
	bookdb_txn_abort(txn);
	assert_log(db, 1, keys, N);
	/* A read transaction cannot consume. */
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_consume(txn, 10), BOOKDB_EREADONLY);
	bookdb_txn_abort(txn);

	BookChangesInfo in;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, 0), 0); /* nothing is <= 0 */
	assert_int_equal(bookdb_changes_consume(txn, 700), 0);
	assert_int_equal(bookdb_changes_info(&in, txn), 0);
	assert_int_equal(in.entries, N - 700);
	assert_int_equal(in.first, 701);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_log(db, 701, keys + 700, N - 700);
	/* From a sequence number inside the log: exactly from there. */
	uint64_t s[1];
	Key k[1];
	assert_int_equal(read_log(db, 2500, s, k, 1), N - 2499);
	assert_int_equal(s[0], 2500);
	/* Everything but the last: a cursor walk, not the whole-database path. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, N - 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_log(db, N, keys + N - 1, 1);
	/* Beyond the last: empty. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, UINT64_MAX), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_ON);
	assert_int_equal(in.entries, 0);
	assert_int_equal(in.first, 0);
	assert_int_equal(in.last, 0);
	assert_int_equal(in.seq, N);

	/* The emptied log, reopened, goes on from the last number given out. */
	char err[BOOKDB_ERRLEN];
	bookdb_free(db);
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	put_n(db, 5, 2);
	assert_log(db, N + 1, keys + 5, 2);
	in = info_of(db);
	assert_int_equal(in.seq, N + 2);
	done(db, dir);
}

static void test_changes__the_log_overflows_at_its_limit(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 10, 0);
	enable(db);
	static Key keys[40];
	for (uint64_t i = 0; i < 40; i++) keys[i] = key_n(i);
	put_n(db, 0, 15);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OVERFLOW);
	assert_int_equal(in.entries, 10); /* the first ten, then nothing */
	assert_int_equal(in.seq, 15);     /* but writes are still numbered */
	assert_log(db, 1, keys, 10);
	put_n(db, 15, 5);
	in = info_of(db);
	assert_int_equal(in.entries, 10);
	assert_int_equal(in.seq, 20);

	/* A consumer's snapshot sees seq 20; a write lands after it (21). Consuming
	 * up to 20 empties the log but keeps the overflow: write 21 was not seen. */
	BookTxn *snap, *txn;
	assert_int_equal(bookdb_txn_begin(&snap, db, false), 0);
	assert_int_equal(bookdb_changes_info(&in, snap), 0);
	bookdb_txn_abort(snap);
	put_n(db, 20, 1);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, in.seq), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OVERFLOW);
	assert_int_equal(in.entries, 0);
	assert_int_equal(in.seq, 21);
	/* Up to the last number given out: on again, and logging resumes. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, 21), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_int_equal(info_of(db).state, BOOKDB_CHANGES_ON);
	put_n(db, 21, 12);
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OVERFLOW);
	assert_log(db, 22, keys + 21, 10);

	/* Enabling ends an overflow too; the log being still full, the next write
	 * overflows again. */
	enable(db);
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_ON);
	assert_int_equal(in.entries, 10);
	put_n(db, 0, 1);
	assert_int_equal(info_of(db).state, BOOKDB_CHANGES_OVERFLOW);
	done(db, dir);
}

/* Consumes up to upto in a transaction of its own. */
static void consume(BookDB *db, uint64_t upto)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, upto), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

static void hold(BookDB *db, bool on)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_hold(txn, on), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

/*
 * A hold (bookdb_changes_hold) keeps the entries written after it through
 * consumes, those before it go as ever; dropped, the next consume deletes
 * them. It gives way when the entries kept pass half the log's limit, and
 * when the log overflows; it is not set while the log is off.
 */
static void test_changes__a_hold_keeps_what_was_written_after_it(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 40, 0);
	static Key keys[80];
	for (uint64_t i = 0; i < 80; i++) keys[i] = key_n(i);
	/* Off: no hold to set (a later consume deletes everything). */
	hold(db, true);
	enable(db);
	put_n(db, 0, 5); /* 1..5 */
	assert_false(info_of(db).held);
	hold(db, true);  /* from 5 on */
	put_n(db, 5, 6); /* 6..11 */
	assert_true(info_of(db).held);
	assert_int_equal(info_of(db).hold, 5);
	/* stats says so (a reader beside this writer; it reads no record). */
	json_t *st = ts_run_json(0, "%s stats %s --json", ts_joseki(), path);
	assert_int_equal(ts_jint(st, "changes_hold"), 5);
	json_decref(st);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s stats %s", ts_joseki(), path), 0);
	assert_non_null(strstr(
	    out, "changes            11 (tracking on; held after 5 for a selector snapshot)"));
	free(out);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_hold(txn, true), BOOKDB_EREADONLY);
	bookdb_txn_abort(txn);
	consume(db, 11);
	assert_log(db, 6, keys + 5, 6); /* 1..5 gone, 6..11 kept */
	consume(db, 3);                 /* below the hold: as ever */
	assert_log(db, 6, keys + 5, 6);
	put_n(db, 11, 2); /* 12, 13 */
	consume(db, 13);
	assert_log(db, 6, keys + 5, 8);
	/* A new hold moves it: what was before it goes. */
	hold(db, true); /* from 13 */
	put_n(db, 13, 1);
	consume(db, 14);
	assert_log(db, 14, keys + 13, 1);
	/* Dropped: the next consume deletes everything it is given. */
	hold(db, false);
	assert_false(info_of(db).held);
	st = ts_run_json(0, "%s stats %s --json", ts_joseki(), path);
	assert_true(json_is_null(json_object_get(st, "changes_hold")));
	json_decref(st);
	hold(db, false); /* none: nothing to drop */
	put_n(db, 14, 2);
	consume(db, 15);
	assert_log(db, 16, keys + 15, 1);
	consume(db, 16);
	/* Past half the limit (20 of 40) kept, it gives way. */
	hold(db, true); /* from 16 */
	put_n(db, 16, 20);
	consume(db, 36);
	assert_int_equal(info_of(db).entries, 20);
	put_n(db, 36, 1);
	consume(db, 37);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.entries, 0);
	put_n(db, 37, 3);
	consume(db, 38);
	assert_log(db, 39, keys + 38, 2); /* the hold is gone */
	consume(db, 40);
	/* An overflow drops it at the consume that ends it. */
	hold(db, true);    /* from 40 */
	put_n(db, 40, 41); /* 41..81: 40 logged, then the overflow */
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OVERFLOW);
	consume(db, in.seq);
	in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_ON);
	assert_int_equal(in.entries, 0);
	put_n(db, 0, 2);
	consume(db, in.seq + 1);
	assert_log(db, in.seq + 2, keys + 1, 1); /* no hold: consumed as asked */
	done(db, dir);
}

static void test_changes__a_replay_after_map_growth_logs_each_write_once(void **state)
{
	(void)state;
	char *dir, path[4200];
	BookDB *db = new_book(&dir, path, 0, 256 << 10);
	size_t start = bookdb_map_size(db);
	enum { N = 20000 };
	static Key keys[N];
	static uint8_t val[120];
	for (size_t i = 0; i < sizeof val; i++) val[i] = (uint8_t)i;
	enable(db);
	/* A writer's batches, each growing the map in the middle. */
	BookWriter *w;
	assert_int_equal(bookdb_writer_new(&w, db, 3000), 0);
	for (uint64_t i = 0; i < N / 2; i++) {
		keys[i] = key_n(i * 7919 % N); /* random order: pages split everywhere */
		assert_int_equal(bookdb_writer_put_raw(w, keys[i], val, sizeof val), 0);
	}
	assert_int_equal(bookdb_writer_flush(w), 0);
	bookdb_writer_free(w);
	size_t mid = bookdb_map_size(db);
	assert_true(mid >= start * 8);
	/* One transaction that consumes, then grows the map: the replay consumes
	 * the same entries once and logs the later writes once. */
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_consume(txn, 1000), 0);
	for (uint64_t i = N / 2; i < N; i++) {
		keys[i] = key_n(i * 7919 % N + N);
		assert_int_equal(bookdb_put_raw(txn, keys[i], val, sizeof val), 0);
	}
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_true(bookdb_map_size(db) > mid);
	assert_log(db, 1001, keys + 1000, N - 1000);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.entries, N - 1000);
	assert_int_equal(in.seq, N);
	done(db, dir);
}

/* Turns the book at path into a version-1 book, as the previous joseki made
 * them: no changes database, meta schema 1. */
static void make_version_1(const char *path)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta, chg;
	uint8_t one[4] = {1, 0, 0, 0};
	MDB_val k = {6, "schema"}, v = {4, one};
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 0), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0664), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "changes", 0, &chg), 0);
	assert_int_equal(mdb_drop(txn, chg, 1), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &meta), 0);
	assert_int_equal(mdb_put(txn, meta, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static unsigned schema_of(BookDB *db)
{
	BookTxn *txn;
	const void *v;
	size_t vlen;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_kv_get(&v, &vlen, txn, BOOKDB_META, "schema", 6), 0);
	assert_int_equal(vlen, 4);
	unsigned ver = ((const uint8_t *)v)[0];
	bookdb_txn_abort(txn);
	return ver;
}

static void test_changes__a_version_1_book_is_upgraded_read_write_and_read_read_only(void **state)
{
	(void)state;
	char *dir, path[4200], err[BOOKDB_ERRLEN];
	BookDB *db = new_book(&dir, path, 0, 0);
	static Position pos;
	static BookRecord rec, back;
	BookTxn *txn;
	pos_set_startpos(&pos);
	bookdb_record_init(&rec, &pos);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(&pos), &rec), 0);
	for (uint64_t i = 0; i < 100; i++)
		assert_int_equal(bookdb_put_raw(txn, key_n(i), VAL, sizeof VAL), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	make_version_1(path);

	/* Read-only: readable as before, tracking off, nothing written. */
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
	assert_int_equal(schema_of(db), 1);
	BookChangesInfo in = info_of(db);
	assert_int_equal(in.state, BOOKDB_CHANGES_OFF);
	assert_int_equal(in.entries, 0);
	uint64_t s[1], n, pages;
	unsigned psize;
	Key k[1];
	assert_int_equal(read_log(db, 0, s, k, 1), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_get(&back, txn, pos_key(&pos)), 0);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_POS), 0);
	assert_int_equal(n, 101);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_CHANGES), 0);
	assert_int_equal(n, 0);
	assert_int_equal(bookdb_pages(&pages, &psize, txn, BOOKDB_CHANGES), 0);
	assert_int_equal(pages, 0);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	/* The commands that only read open it too. */
	json_t *st = ts_run_json(0, "%s stats %s --json", ts_joseki(), path);
	assert_int_equal(ts_jint(st, "positions"), 101);
	assert_int_equal(ts_jint(st, "changes"), 0);
	json_decref(st);

	/* Read-write: upgraded in place, the records untouched, tracking works. */
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	assert_int_equal(schema_of(db), BOOKDB_SCHEMA_VERSION);
	assert_int_equal(info_of(db).state, BOOKDB_CHANGES_OFF);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_get(&back, txn, pos_key(&pos)), 0);
	assert_int_equal(back.nmoves, 0);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_POS), 0);
	assert_int_equal(n, 101);
	bookdb_txn_abort(txn);
	enable(db);
	put_n(db, 500, 3);
	assert_int_equal(info_of(db).entries, 3);
	bookdb_free(db);
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0); /* and stays upgraded */
	assert_int_equal(schema_of(db), BOOKDB_SCHEMA_VERSION);
	assert_int_equal(info_of(db).entries, 3);
	bookdb_free(db);
	st = ts_run_json(0, "%s stats %s --json", ts_joseki(), path);
	assert_int_equal(ts_jint(st, "changes"), 3);
	json_decref(st);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_changes__nothing_is_logged_while_tracking_is_off),
	    cmocka_unit_test(test_changes__every_pos_write_is_logged_once_in_order),
	    cmocka_unit_test(test_changes__an_aborted_transaction_logs_nothing),
	    cmocka_unit_test(test_changes__writes_with_tracking_off_are_not_logged),
	    cmocka_unit_test(test_changes__consume_deletes_exactly_up_to_its_bound),
	    cmocka_unit_test(test_changes__the_log_overflows_at_its_limit),
	    cmocka_unit_test(test_changes__a_hold_keeps_what_was_written_after_it),
	    cmocka_unit_test(test_changes__a_replay_after_map_growth_logs_each_write_once),
	    cmocka_unit_test(
	        test_changes__a_version_1_book_is_upgraded_read_write_and_read_read_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
