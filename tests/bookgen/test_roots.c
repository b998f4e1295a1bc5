/*
 * tests/bookgen/test_roots.c — positions to think first (bookgen/roots.h):
 * position lists (order kept, comments skipped, a bad line named), positions
 * collected from a position, and Shiba's extension over a real book (ingested
 * floodgate fixtures, the start position thought): every root is a child, by a
 * move played in the games, of a thought position, is not thought itself, and
 * the most played come first.
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
#include "bookgen/roots.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

static void test_roots__position_lists(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[512], err[ROOTS_ERRLEN];
	snprintf(path, sizeof path, "%s/roots.txt", dir);
	static const char GOOD[] =
	    "# roots\n\nstartpos\n  startpos moves 7g7f 3c3d  \n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n";
	assert_int_equal(ts_write_file(path, GOOD, sizeof GOOD - 1), 0);
	RootList r = {0};
	assert_int_equal(roots_from_lines(&r, path, err), 0);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.specs[0], "startpos");
	assert_string_equal(r.specs[1], "startpos moves 7g7f 3c3d");
	assert_non_null(strstr(r.specs[2], "w - 2"));

	/* roots_add_position appends the SFEN, after what is there. */
	Position pos;
	assert_int_equal(position_parse(&pos, "startpos moves 2g2f", NULL), 0);
	assert_int_equal(roots_add_position(&r, &pos), 0);
	char sfen[SFEN_MAX];
	sfen_write(&pos, sfen, sizeof sfen);
	assert_int_equal(r.n, 4);
	assert_string_equal(r.specs[3], sfen);
	roots_free(&r);
	assert_int_equal(r.n, 0);

	static const char BAD[] = "startpos\n# ok so far\nstartpos moves 7g7f 7g7f\n";
	assert_int_equal(ts_write_file(path, BAD, sizeof BAD - 1), 0);
	assert_int_equal(roots_from_lines(&r, path, err), ROOTS_EINPUT);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "line 3"));
	assert_int_equal(r.n, 1); /* what came before stays */
	roots_free(&r);
	assert_int_equal(roots_from_lines(&r, "/no/such/roots.txt", err), ROOTS_EINPUT);
	assert_non_null(strstr(err, "/no/such/roots.txt"));
	ts_rmtree(dir);
	free(dir);
}

/* The record's THOUGHT flag, or -1 when the position is not in the book. */
static int thought(BookTxn *txn, BookRecord *rec, Key k)
{
	int rc = bookdb_get(rec, txn, k);
	if (rc == BOOKDB_ENOTFOUND) return -1;
	assert_int_equal(rc, 0);
	return (rec->flags & BOOKDB_REC_THOUGHT) != 0;
}

static void test_roots__shibas_extension(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[512], err[ROOTS_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);
	BookDB *db;
	char derr[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, NULL, derr), 0);
	RootList r = {0};
	/* Nothing thought: nothing past the end of the book. */
	assert_int_equal(roots_from_extension(&r, db, err), 0);
	assert_int_equal(r.n, 0);
	bookdb_free(db);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s think %s --depth 1 --positions 1 --quiet", ts_joseki(), book),
	    0);
	assert_int_equal(bookdb_open(&db, book, NULL, derr), 0);
	assert_int_equal(roots_from_extension(&r, db, err), 0);

	BookRecord *rec = malloc(sizeof *rec);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	Position start, pos;
	pos_set_startpos(&start);
	assert_int_equal(thought(txn, rec, pos_key(&start)), 1);
	/* The start position's game moves whose child is not thought, by count. */
	BookRecord *srec = malloc(sizeof *srec);
	assert_int_equal(bookdb_get(srec, txn, pos_key(&start)), 0);
	size_t played = 0;
	uint32_t most = 0;
	for (int i = 0; i < srec->nmoves; i++)
		if ((srec->moves[i].flags & BOOKDB_MOVE_STATS) && srec->moves[i].count) {
			played++;
			if (srec->moves[i].count > most) most = srec->moves[i].count;
		}
	assert_true(played > 0);
	assert_int_equal(r.n, played); /* only the start position is thought */
	uint32_t prev = UINT32_MAX;
	for (size_t i = 0; i < r.n; i++) {
		assert_int_equal(position_parse(&pos, r.specs[i], NULL), 0);
		assert_int_equal(thought(txn, rec, pos_key(&pos)),
		                 0); /* in the book, not thought */
		/* A child of the start position by a played move; counts never rise. */
		uint32_t count = 0;
		for (int k = 0; k < srec->nmoves; k++)
			if (key_equal(pos_key_after(&start, srec->moves[k].move), pos_key(&pos)))
				count = srec->moves[k].count;
		assert_true(count > 0);
		assert_true(count <= prev);
		prev = count;
	}
	assert_int_equal(position_parse(&pos, r.specs[0], NULL), 0);
	for (int k = 0; k < srec->nmoves; k++)
		if (key_equal(pos_key_after(&start, srec->moves[k].move), pos_key(&pos)))
			assert_int_equal(srec->moves[k].count, most);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	roots_free(&r);
	free(rec);
	free(srec);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roots__position_lists),
	    cmocka_unit_test(test_roots__shibas_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
