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

#include "bookdb/check.h"
#include "bookdb/synth.h"
#include "shogi/position.h"
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

static void synth(BookDB *db, uint64_t n, uint64_t seed, bool unsorted)
{
	char err[BOOKDB_ERRLEN];
	BookSynthOptions o = {.positions = n, .seed = seed, .unsorted = unsorted};
	BookSynthStats st;
	if (bookdb_synth(&st, db, &o, err)) fail_msg("synth: %s", err);
	assert_int_equal(st.positions, n);
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
	assert_int_equal(bookdb_check(&cs, a, NULL, NULL, NULL, err), 0);
	assert_int_equal(cs.records, 3000);
	assert_int_equal(cs.bad, 0);
	/* Adding to a book: new positions only, still sound. */
	synth(a, 1000, 9, false);
	assert_int_equal(count(a), 4000);
	assert_int_equal(bookdb_check(&cs, a, NULL, NULL, NULL, err), 0);
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

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_synth__sound_deterministic_books),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
