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
#include <dirent.h>

#include "bookdb/bookdb.h"
#include "bookgen/roots.h"
#include "ingest/replay.h"
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
	/* A file that opens but cannot be read (a directory) is not an empty list. */
	assert_int_equal(roots_from_lines(&r, dir, err), ROOTS_EINPUT);
	assert_non_null(strstr(err, "read error"));
	assert_int_equal(r.n, 0);
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

/* The position each game of a file reaches after `ply` moves, before its next
 * move: the last position replay_file_positions gives at max_ply = ply + 1,
 * when it gave ply + 1 of them. */
typedef struct {
	Key key[64];
	int count[64];
	int n, seen;
	Key last;
} PlyCount;

static int on_pos(void *ctx, const Position *pos)
{
	PlyCount *c = ctx;
	c->seen++;
	c->last = pos_key(pos);
	return 0;
}

static void test_roots__roots_from_games_are_the_most_reached_positions(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[512], err[ROOTS_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);
	/* Independently: each game file replayed by the CSA reader to ply 4. */
	const int ply = 4;
	PlyCount pc = {0};
	DIR *d = opendir("tests/data/floodgate");
	assert_non_null(d);
	int games = 0, nfiles = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strstr(de->d_name, ".csa")) continue;
		char path[600], rerr[REPLAY_ERRLEN];
		snprintf(path, sizeof path, "tests/data/floodgate/%s", de->d_name);
		nfiles++;
		pc.seen = 0;
		assert_int_equal(replay_file_positions(path, ply + 1, on_pos, &pc, rerr), 0);
		if (pc.seen != ply + 1) continue;
		games++;
		int k = 0;
		while (k < pc.n && !key_equal(pc.key[k], pc.last)) k++;
		if (k == pc.n) pc.key[pc.n++] = pc.last;
		pc.count[k]++;
	}
	closedir(d);
	assert_true(nfiles >= 10);
	BookDB *db;
	char derr[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, NULL, derr), 0);
	RootList r = {0};
	size_t nshort = 99, nlegacy = 99;
	assert_int_equal(roots_from_games(&r, db, 1000, ply, &nshort, &nlegacy, NULL, err), 0);
	assert_int_equal(nshort, 0);
	assert_int_equal(nlegacy, 0);
	/* Every position, once, weighted by its games, most reached first. */
	assert_int_equal((int)r.n, pc.n);
	double sum = 0;
	for (size_t i = 0; i < r.n; i++) {
		Position pos;
		assert_int_equal(position_parse(&pos, r.specs[i], NULL), 0);
		int k = 0;
		while (k < pc.n && !key_equal(pc.key[k], pos_key(&pos))) k++;
		assert_true(k < pc.n);
		assert_true(r.weights[i] == (double)pc.count[k]);
		if (i) assert_true(r.weights[i] <= r.weights[i - 1]);
		sum += r.weights[i];
	}
	assert_true(sum == (double)games);
	roots_free(&r);
	/* n caps the list, keeping the most reached; a ply no game reaches
	 * gives nothing, and the games are counted as shorter. */
	assert_int_equal(roots_from_games(&r, db, 1, ply, NULL, NULL, NULL, err), 0);
	assert_int_equal(r.n, 1);
	int most = 0;
	for (int k = 0; k < pc.n; k++)
		if (pc.count[k] > most) most = pc.count[k];
	assert_true(r.weights[0] == (double)most);
	roots_free(&r);
	assert_int_equal(roots_from_games(&r, db, 10, 1000, &nshort, NULL, NULL, err), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal((int)nshort, games);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roots__position_lists),
	    cmocka_unit_test(test_roots__shibas_extension),
	    cmocka_unit_test(test_roots__roots_from_games_are_the_most_reached_positions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
