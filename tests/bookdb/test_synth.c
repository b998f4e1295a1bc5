/*
 * tests/bookdb/test_synth.c — the synthetic book generator in-process
 * (bookdb/synth.h): the count asked for, every record sound (bookdb_check), the
 * same seed giving the same bytes, another seed another book, adding to a book
 * that has positions (no duplicates), sorted and unsorted writes giving the
 * same book, and a count too large refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "bookdb/check.h"
#include "bookdb/synth.h"
#include "shogi/position.h"
#include "shogi/clock.h"
#include "tests/support/support.h"

static BookDB *open_book(const char *dir, const char *name)
{
	char path[600], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	if (bookdb_open(&db, path, &o, err)) fail_msg("%s", err);
	return db;
}

static BookSynthStats synth_mem(BookDB *db, uint64_t n, uint64_t seed, bool unsorted,
                                uint64_t memory, const char *tmpdir)
{
	char err[BOOKDB_ERRLEN];
	BookSynthOptions o = {
	    .positions = n, .seed = seed, .unsorted = unsorted, .memory = memory, .tmpdir = tmpdir};
	BookSynthStats st;
	if (bookdb_synth(&st, db, &o, err)) fail_msg("synth: %s", err);
	assert_int_equal(st.positions, n);
	return st;
}

static void synth(BookDB *db, uint64_t n, uint64_t seed, bool unsorted)
{
	synth_mem(db, n, seed, unsorted, 0, NULL);
}

static uint64_t count(BookDB *db)
{
	BookTxn *t;
	uint64_t n = 0;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_count(&n, t, BOOKDB_POS), 0);
	bookdb_txn_abort(t);
	return n;
}

/* 1 when both books hold the same keys with the same bytes. */
static int same(BookDB *a, BookDB *b)
{
	BookTxn *ta, *tb;
	BookIter *ia, *ib;
	assert_int_equal(bookdb_txn_begin(&ta, a, false), 0);
	assert_int_equal(bookdb_txn_begin(&tb, b, false), 0);
	assert_int_equal(bookdb_iter_open(&ia, ta), 0);
	assert_int_equal(bookdb_iter_open(&ib, tb), 0);
	int eq = 1;
	for (;;) {
		Key ka, kb;
		const uint8_t *va, *vb;
		size_t la, lb;
		int ra = bookdb_iter_next(ia, &ka, &va, &la),
		    rb = bookdb_iter_next(ib, &kb, &vb, &lb);
		assert_true(ra >= 0 && rb >= 0);
		if (ra != rb) eq = 0;
		if (!ra || !rb || !eq) break;
		if (!key_equal(ka, kb) || la != lb || memcmp(va, vb, la)) {
			eq = 0;
			break;
		}
	}
	bookdb_iter_free(ia);
	bookdb_iter_free(ib);
	bookdb_txn_abort(ta);
	bookdb_txn_abort(tb);
	return eq;
}

static void test_synth__sound_deterministic_books(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[BOOKDB_ERRLEN];
	BookDB *a = open_book(dir, "a"), *b = open_book(dir, "b"), *c = open_book(dir, "c"),
	       *u = open_book(dir, "u");
	synth(a, 3000, 7, false);
	synth(b, 3000, 7, false);
	synth(c, 3000, 8, false);
	synth(u, 3000, 7, true);
	assert_int_equal(count(a), 3000);
	assert_true(same(a, b));  /* the same seed, the same bytes */
	assert_false(same(a, c)); /* another seed, another book */
	assert_true(same(a, u));  /* the write order does not show */
	BookCheckStats cs;
	assert_int_equal(bookdb_check(&cs, a, NULL, NULL, NULL, NULL, NULL, err), 0);
	assert_int_equal(cs.records, 3000);
	assert_int_equal(cs.bad, 0);
	/* Adding to a book: new positions only, still sound. */
	synth(a, 1000, 9, false);
	assert_int_equal(count(a), 4000);
	assert_int_equal(bookdb_check(&cs, a, NULL, NULL, NULL, NULL, NULL, err), 0);
	assert_int_equal(cs.bad, 0);
	BookSynthOptions o = {.positions = UINT32_MAX};
	BookSynthStats st;
	assert_int_equal(bookdb_synth(&st, a, &o, err), BOOKDB_EINVAL);
	assert_non_null(strstr(err, "too many"));
	bookdb_free(a);
	bookdb_free(b);
	bookdb_free(c);
	bookdb_free(u);
	ts_rmtree(dir);
	free(dir);
}

/* The names in dir that start with joseki- (the sort's and synth's temporary
 * files). */
static int temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "joseki-", 7)) n++;
	closedir(d);
	return n;
}

static void test_synth__same_book_whatever_the_memory(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	BookDB *a = open_book(dir, "a"), *b = open_book(dir, "b"), *u = open_book(dir, "u");
	/* 20,000 positions: about 2.5 MB of records, past a 1 MiB budget. */
	BookSynthStats sa = synth_mem(a, 20000, 3, false, 0, dir);
	BookSynthStats sb = synth_mem(b, 20000, 3, false, 1 << 20, dir);
	synth_mem(u, 20000, 3, true, 1 << 20, dir);
	assert_int_equal(sa.sort_runs, 0); /* all in memory */
	assert_true(sb.sort_runs > 1);     /* sorted runs on disk */
	assert_true(sb.visits > sb.positions);
	assert_true(same(a, b));
	assert_true(same(a, u));
	assert_int_equal(temp_files(dir), 0);
	/* Into books that have positions: the book's are left out, the same way. */
	sa = synth_mem(a, 15000, 4, false, 0, dir);
	sb = synth_mem(b, 15000, 4, false, 1 << 20, dir);
	assert_int_equal(sa.sort_runs, 0);
	assert_true(sb.sort_runs > 1);
	assert_int_equal(count(a), 35000);
	assert_true(same(a, b));
	char err[BOOKDB_ERRLEN];
	BookCheckStats cs;
	assert_int_equal(bookdb_check(&cs, b, NULL, NULL, NULL, NULL, NULL, err), 0);
	assert_int_equal(cs.records, 35000);
	assert_int_equal(cs.bad, 0);
	bookdb_free(a);
	bookdb_free(b);
	bookdb_free(u);
	ts_rmtree(dir);
	free(dir);
}

/* The summary line's peak: the in-memory path holds every record (over 100
 * bytes each) with its key map, so 500,000 positions peak past 80 MB. (The
 * meter's thread once failed to start in joseki, whose thread-local storage
 * outgrew the small stack it asked for: the peak was then the last sample.) */
static void test_synth__the_summary_says_the_peak_memory(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s synth %s/b --positions 500000 --quiet", ts_joseki(), dir);
	if (rc != 0) fail_msg("synth: %s", err);
	const char *p = strstr(out, " peak_anon_mb ");
	if (!p) fail_msg("no peak_anon_mb: %s", out);
	double mb = strtod(p + 14, NULL);
	if (mb < 80) fail_msg("peak_anon_mb %.0f for 500,000 positions in memory: %s", mb, out);
	assert_non_null(strstr(out, "synth positions 500000 "));
	assert_non_null(strstr(out, " rounds 1 sort_runs 0 "));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* 1 when every record of part is in whole with the same bytes. */
static int subset(BookDB *part, BookDB *whole)
{
	BookTxn *tp, *tw;
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(&tp, part, false), 0);
	assert_int_equal(bookdb_txn_begin(&tw, whole, false), 0);
	assert_int_equal(bookdb_iter_open(&it, tp), 0);
	int ok = 1, r;
	Key k;
	const uint8_t *v, *w;
	size_t lv, lw;
	while (ok && (r = bookdb_iter_next(it, &k, &v, &lv)) == 1)
		ok = bookdb_get_raw(&w, &lw, tw, k) == 0 && lw == lv && !memcmp(v, w, lv);
	bookdb_iter_free(it);
	bookdb_txn_abort(tp);
	bookdb_txn_abort(tw);
	return ok;
}

/* kill -9 at random moments of synth in sorted runs: the book opens, passes
 * check and holds only records of the uninterrupted run; no temporary file is
 * left beside it. */
static void test_synth__kill_9_out_of_core(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_synth__kill_9_out_of_core");
	char *dir = ts_mkdtemp(), *err = NULL;
	double t0 = clock_ms_f();
	int rc = ts_runf(NULL, &err, "%s synth %s/ref --positions 60000 --memory 1M --quiet",
	                 ts_joseki(), dir);
	if (rc != 0) fail_msg("reference: %s", err);
	/* The kills fall within the time a whole run takes here (a fixed half
	 * second let a quick machine finish all eight first). */
	unsigned span = ts_kill_span_us(clock_ms_f() - t0);
	free(err);
	BookDB *ref = open_book(dir, "ref");
	int killed = 0, partial = 0;
	for (int round = 0; round < 8; round++) {
		unsigned us = (unsigned)(ts_rand(&rng) % span);
		char *out = NULL, book[600];
		snprintf(book, sizeof book, "%s/k%d", dir, round);
		rc = ts_runf(
		    &out, NULL,
		    "%s synth %s --positions 60000 --memory 1M --batch 4000 --quiet "
		    ">/dev/null 2>&1 & p=$!; sleep 0.%06u; kill -9 $p 2>/dev/null; wait $p; "
		    "echo rc=$?",
		    ts_joseki(), book, us);
		assert_int_equal(rc, 0);
		if (strstr(out, "rc=137")) killed++;
		free(out);
		if (temp_files(book))
			fail_msg("round %d (after %u us): a temporary file left", round, us);
		char path[700];
		snprintf(path, sizeof path, "%s/data.mdb", book);
		if (ts_file_size(path) == 0) continue; /* killed before the book was made */
		err = NULL;
		rc = ts_runf(NULL, &err, "%s check %s", ts_joseki(), book);
		/* Killed before the first commit, which makes the book's databases
		 * and schema at once: an LMDB file that is no book yet (the next
		 * writer makes it), never a half-made one. */
		if (rc != 0 && err && strstr(err, "not a joseki book") && !strstr(err, "schema")) {
			free(err);
			continue;
		}
		if (rc != 0) fail_msg("round %d (killed after %u us): check: %s", round, us, err);
		free(err);
		BookDB *k = open_book(dir, book + strlen(dir) + 1);
		uint64_t n = count(k);
		if (n > 0 && n < 60000) partial++;
		if (!subset(k, ref)) fail_msg("round %d: a record not the full run's", round);
		bookdb_free(k);
	}
	print_message("%d of 8 runs killed mid-way, %d with part of the book written\n", killed,
	              partial);
	assert_true(killed > 0);
	bookdb_free(ref);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_synth__sound_deterministic_books),
	    cmocka_unit_test(test_synth__same_book_whatever_the_memory),
	    cmocka_unit_test(test_synth__kill_9_out_of_core),
	    cmocka_unit_test(test_synth__the_summary_says_the_peak_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
