/*
 * tests/bookdb/test_stats.c — bookdb/stats.h in-process: the counts of a
 * synthetic book (positions, thought, moves) with and without the scan, and
 * the lookup benchmark (every way timed over the asked count, the index built
 * over every position, an empty book refused with a message); the scan past
 * its memory budget (the leaves by a sort-merge join on disk) counting what
 * the scan in memory counts, records that are not sound included.
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

#include "bookdb/stats.h"
#include "bookdb/synth.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* A new book dir/b (its path in path), unsynced. */
static BookDB *new_book(const char *dir, char *path, size_t cap)
{
	char err[BOOKDB_ERRLEN];
	snprintf(path, cap, "%s/b", dir);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	if (bookdb_open(&db, path, &o, err)) fail_msg("%s", err);
	return db;
}

static void test_stats__counts_and_the_lookup_benchmark(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	BookDB *db = new_book(dir, path, sizeof path);
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

static void test_stats__the_scan_past_its_budget_counts_the_same(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	BookDB *db = new_book(dir, path, sizeof path);
	BookSynthOptions so = {.positions = 60000, .seed = 5};
	BookSynthStats ss;
	assert_int_equal(bookdb_synth(&ss, db, &so, err), 0);
	/* Two records that are not sound: counted corrupt, neither leaf nor not. */
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	static const uint8_t junk[] = {0xff, 0xff, 0xff};
	assert_int_equal(bookdb_put_raw(txn, (Key){1, 2}, junk, sizeof junk), 0);
	assert_int_equal(bookdb_put_raw(txn, (Key){~0ull, ~0ull}, junk, 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookStats mem, disk;
	assert_int_equal(bookdb_stats_budget(&mem, db, txn, true, NULL, 0), 0);
	assert_int_equal(mem.sorted_bytes, 0);
	assert_int_equal(bookdb_stats_budget(&disk, db, txn, true, NULL, 1u << 20), 0);
	assert_true(disk.sorted_bytes > 0); /* the join's runs went to disk */
	assert_int_equal(disk.positions, mem.positions);
	assert_int_equal(disk.positions, 60002);
	assert_int_equal(disk.corrupt, 2);
	assert_int_equal(disk.corrupt, mem.corrupt);
	assert_int_equal(disk.thought, mem.thought);
	assert_int_equal(disk.moves, mem.moves);
	assert_int_equal(disk.minimax_seen, mem.minimax_seen);
	assert_true(mem.leaves > 0 && mem.leaves < 60000);
	assert_int_equal(disk.leaves, mem.leaves);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	/* The command: the same JSON figures, --memory only with --scan. */
	json_t *a =
	    ts_run_json(1, "%s stats %s --scan --json", ts_joseki(), path); /* exit 1: damaged */
	json_t *b = ts_run_json(1, "%s stats %s --scan --json --memory 1M", ts_joseki(), path);
	assert_int_equal(ts_jint(a, "leaves"), (json_int_t)mem.leaves);
	assert_int_equal(ts_jint(b, "leaves"), (json_int_t)mem.leaves);
	assert_int_equal(ts_jint(a, "sorted_bytes"), 0);
	assert_true(ts_jint(b, "sorted_bytes") > 0);
	json_decref(a);
	json_decref(b);
	char *e = NULL;
	assert_int_equal(ts_runf(NULL, &e, "%s stats %s --memory 1M", ts_joseki(), path), 2);
	assert_non_null(strstr(e, "--scan"));
	free(e);
	/* Runs that $TMPDIR cannot take: the variable and its directory named
	 * as the cause, and what to do; the same scan in memory needs none. */
	e = NULL;
	assert_int_equal(ts_runf(NULL, &e, "TMPDIR=%s/missing %s stats %s --scan --memory 1M", dir,
	                         ts_joseki(), path),
	                 1);
	if (!strstr(e, "stats: ") || !strstr(e, "go to $TMPDIR, ") || !strstr(e, "/missing, ") ||
	    !strstr(e, "No such file or directory; set TMPDIR"))
		fail_msg("stderr: %s", e);
	free(e);
	e = NULL;
	ts_runf(NULL, &e, "TMPDIR=%s/missing %s stats %s --scan", dir, ts_joseki(), path);
	assert_null(strstr(e, "TMPDIR"));
	free(e);
	ts_rmtree(dir);
	free(dir);
}

/* The text's corrupt line goes with leaves, as --json has them both: not
 * counted before a scan, counted by one, the last scan's when read (it was
 * printed only when not 0); cyclic is a line before minimax ran too. */
static void test_stats__the_text_says_corrupt_as_leaves(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL;
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s/b --positions 2000 --seed 4 --quiet",
	                         ts_joseki(), dir),
	                 0);
	static const struct {
		const char *args, *said;
	} RUNS[] = {
	    {"", "corrupt            - (not counted yet: joseki stats --scan)\n"},
	    /* Every field the JSON has is a line, before the first minimax too. */
	    {"",
	     "cyclic             - (minimax not run)\nroot_value         - (minimax not run)\n"},
	    {" --scan", "corrupt            0\n"},
	    {"", "corrupt            0 (the last scan's)\n"},
	};
	for (size_t i = 0; i < sizeof RUNS / sizeof *RUNS; i++) {
		assert_int_equal(
		    ts_runf(&out, NULL, "%s stats %s/b%s", ts_joseki(), dir, RUNS[i].args), 0);
		if (!strstr(out, RUNS[i].said)) fail_msg("stats%s:\n%s", RUNS[i].args, out);
		free(out);
	}
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats__counts_and_the_lookup_benchmark),
	    cmocka_unit_test(test_stats__the_scan_past_its_budget_counts_the_same),
	    cmocka_unit_test(test_stats__the_text_says_corrupt_as_leaves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
