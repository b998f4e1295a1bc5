/*
 * tests/bookdb/test_stats.c — bookdb/stats.h in-process: the counts of a
 * synthetic book (positions, thought, moves) with and without the scan, and
 * the lookup benchmark (every way timed over the asked count, the index built
 * over every position, an empty book refused with a message).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/stats.h"
#include "bookdb/synth.h"
#include "shogi/position.h"
#include "tests/support/support.h"

static void test_stats__counts_and_the_lookup_benchmark(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/b", dir);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	if (bookdb_open(&db, path, &o, err)) fail_msg("%s", err);
	BookTxn *txn;
	BookRecord *rec = malloc(sizeof *rec);
	BookLookupBench lb;
	/* An empty book: nothing to look up. */
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_bench_lookups(&lb, txn, rec, 100, err), BOOKDB_EINVAL);
	assert_non_null(strstr(err, "empty"));
	bookdb_txn_abort(txn);

	BookSynthOptions so = {.positions = 2000, .seed = 3};
	BookSynthStats ss;
	assert_int_equal(bookdb_synth(&ss, db, &so, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookStats st;
	assert_int_equal(bookdb_stats(&st, db, txn, false), 0);
	assert_int_equal(st.positions, 2000);
	assert_false(st.scanned);
	assert_int_equal(bookdb_stats(&st, db, txn, true), 0);
	assert_true(st.scanned);
	assert_int_equal(st.thought, 2000); /* every synthetic position is analysed */
	assert_true(st.moves >= 2000 && st.moves <= 2000 * 8);
	assert_int_equal(st.corrupt, 0);

	/* More lookups than positions: the sample is the whole book, looked up
	 * over and over. */
	assert_int_equal(bookdb_bench_lookups(&lb, txn, rec, 5000, err), 0);
	static const char *const NAMES[] = {"lookups", "lookups_full", "index_lookups",
	                                    "index_lookups_full"};
	for (int i = 0; i < 4; i++) {
		assert_string_equal(lb.via[i].name, NAMES[i]);
		assert_int_equal(lb.via[i].n, 5000);
		assert_true(lb.via[i].ms >= 0);
	}
	assert_int_equal(lb.index_positions, 2000);
	assert_true(lb.index_bytes > 0);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats__counts_and_the_lookup_benchmark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
