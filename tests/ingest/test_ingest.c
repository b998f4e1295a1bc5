/* tests/ingest/test_ingest.c — joseki ingest end to end on real fixture games. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "ingest/ingest.h"
#include "ingest/kifu.h"
#include "shogi/clock.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

#define FIXTURES "tests/data/floodgate tests/data/csa-dialects"
#define NGAMES 22

/* Sums over the whole book: (positions, moves, sum of counts, games with stats ok). */
static void book_totals(const char *dir, uint64_t *positions, uint64_t *count_sum, bool *stats_ok)
{
	BookDB *db;
	BookDBOptions o = {.read_only = true};
	assert_int_equal(bookdb_open(&db, dir, &o, NULL), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	static BookRecord rec;
	Key k;
	const uint8_t *v;
	size_t len;
	*positions = *count_sum = 0;
	*stats_ok = true;
	while (bookdb_iter_next(it, &k, &v, &len) == 1) {
		assert_int_equal(bookdb_record_decode(&rec, v, len), 0);
		(*positions)++;
		for (int i = 0; i < rec.nmoves; i++) {
			const BookMove *m = &rec.moves[i];
			*count_sum += m->count;
			if (m->wins + m->draws + m->losses > m->count) *stats_ok = false;
		}
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_free(db);
}

/* Independent count: plies of each game by `joseki replay`, capped at max_ply. */
static uint64_t replayed_plies(int max_ply)
{
	json_t *j = ts_run_json(
	    0, "%s replay --json tests/data/floodgate/*.csa tests/data/csa-dialects/*.csa",
	    ts_joseki());
	json_t *games = json_object_get(j, "games");
	assert_int_equal(json_array_size(games), NGAMES);
	uint64_t total = 0;
	size_t i;
	json_t *g;
	json_array_foreach(games, i, g)
	{
		long long p = ts_jint(g, "plies");
		total += (uint64_t)(p < max_ply ? p : max_ply);
	}
	json_decref(j);
	return total;
}

static void test_ingest__fixture_games_ingest_without_errors_and_counts_add_up(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *j =
	    ts_run_json(0, "%s ingest %s/book " FIXTURES " --json --quiet", ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "games_read"), NGAMES);
	assert_int_equal(ts_jint(j, "games_ingested"), NGAMES);
	assert_int_equal(ts_jint(j, "games_rejected"), 0);
	assert_int_equal(ts_jint(j, "duplicates"), 0);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 0);
	long long positions = ts_jint(j, "positions_added");
	assert_true(ts_jint(j, "evals_added") > 1000);
	json_decref(j);

	char path[4200];
	snprintf(path, sizeof path, "%s/book", dir);
	uint64_t npos, counts;
	bool ok;
	book_totals(path, &npos, &counts, &ok);
	assert_int_equal(npos, (uint64_t)positions);
	assert_int_equal(counts, replayed_plies(128)); /* one count per stored ply */
	assert_true(ok);

	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s check %s/book", ts_joseki(), dir), 0);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* The repository's own position lists ingest without an error: a position
 * line may end in a comment ("<sfen>\t# game=... ply=..."), which had been
 * read as the line's game after an id (40 errors "illegal move #"). */
static void test_ingest__position_lists_with_trailing_comments(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *j =
	    ts_run_json(0, "%s ingest %s/b tests/data/positions --json --quiet", ts_joseki(), dir);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 0);
	assert_int_equal(ts_jint(j, "games_rejected"), 0);
	assert_true(ts_jint(j, "games_ingested") >= 300);
	json_decref(j);
	ts_rmtree(dir);
	free(dir);
}

/* The position of a real 301-ply entering-king game that the store once
 * could not hold (its packing did not read back): ingested with games
 * before and after it in one batch, with --max-ply 1000, everything is
 * stored and the counters are exactly what the book holds. */
static void test_ingest__an_extreme_position_among_ordinary_games(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *j = ts_run_json(
	    0,
	    "%s ingest %s/book tests/data/floodgate/*2026060113*.csa "
	    "tests/data/planted/entering-king-ply-290.csa tests/data/floodgate/*2026060114*.csa "
	    "--max-ply 1000 --json --quiet",
	    ts_joseki(), dir);
	long long games = ts_jint(j, "games_read");
	assert_true(games >= 3);
	assert_int_equal(ts_jint(j, "games_ingested"), games);
	assert_int_equal(ts_jint(j, "errors_total"), 0);
	long long positions = ts_jint(j, "positions_added");
	json_decref(j);
	char path[4200];
	snprintf(path, sizeof path, "%s/book", dir);
	uint64_t npos, counts;
	bool ok;
	book_totals(path, &npos, &counts, &ok);
	assert_true(ok);
	assert_int_equal(npos, (uint64_t)positions);
	json_t *q = ts_run_json(
	    0, "%s query %s/book 'sfen 8+r/9/9/9/4K4/k8/+n6B1/+l8/9 w BG2S18Pr3g2s3n3l 290' --json",
	    ts_joseki(), dir);
	assert_true(json_is_true(json_object_get(q, "in_book")));
	/* Games give positions and moves, not values: no book move yet. */
	json_t *m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "1a1b");
	assert_null(json_object_get(q, "bestmove"));
	json_decref(q);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s check %s/book", ts_joseki(), dir), 0);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* Walking a tree (as `joseki ingest BOOK /` does): special files (a FIFO, a
 * socket, both named .csa), symbolic links (one looping to a parent, one to
 * the tree itself) and kernel file systems (/proc) are skipped, the run ends,
 * and the regular files are counted and read. */
static void test_ingest__a_walk_skips_special_files_links_and_proc(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char p[4200];
	snprintf(p, sizeof p, "%s/t/sub", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "mkdir -p %s && cp tests/data/csa-dialects/v2.csa %s/ && "
	            "echo hello > %s/notes.txt && ln -s .. %s/loop && ln -s %s/t %s/t/self",
	            p, p, p, p, dir, dir),
	    0);
	snprintf(p, sizeof p, "%s/t/fifo.csa", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	int sock = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(sock >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/t/sock.csa", dir);
	assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof sa), 0);
	json_t *j = ts_run_json(0, "timeout 60 %s ingest %s/book %s/t --json --quiet", ts_joseki(),
	                        dir, dir);
	assert_int_equal(ts_jint(j, "files"), 2); /* v2.csa and notes.txt */
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "errors_total"), 0);
	json_decref(j);
	close(sock);
	j = ts_run_json(0, "timeout 60 %s ingest %s/proc-book /proc --json --quiet", ts_joseki(),
	                dir);
	assert_int_equal(ts_jint(j, "files"), 0);
	assert_int_equal(ts_jint(j, "games_read"), 0);
	json_decref(j);
	ts_rmtree(dir);
	free(dir);
}

static void test_ingest__second_run_adds_nothing(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *j =
	    ts_run_json(0, "%s ingest %s/book " FIXTURES " --json --quiet", ts_joseki(), dir);
	json_decref(j);
	json_t *s1 = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
	j = ts_run_json(0, "%s ingest %s/book " FIXTURES " --json --quiet --jobs 1", ts_joseki(),
	                dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 0);
	assert_int_equal(ts_jint(j, "duplicates"), NGAMES);
	assert_int_equal(ts_jint(j, "positions_added"), 0);
	assert_int_equal(ts_jint(j, "moves_added"), 0);
	assert_int_equal(ts_jint(j, "evals_added"), 0);
	json_decref(j);
	json_t *s2 = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
	assert_int_equal(ts_jint(s1, "positions"), ts_jint(s2, "positions"));
	assert_int_equal(ts_jint(s1, "moves"), ts_jint(s2, "moves"));
	json_decref(s1);
	json_decref(s2);
	/* A deeper --max-ply adds nothing either, and the run says why. */
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s ingest %s/book " FIXTURES " --max-ply 300", ts_joseki(), dir),
	    0);
	if (!strstr(err, " already (by their ids) and change nothing, whatever --max-ply"))
		fail_msg("said: %s", err);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Whether two books hold the same bytes: every record and every game mark. */
static void assert_same_books(const char *dir, const char *a, const char *b)
{
	BookDB *db[2];
	BookTxn *t[2];
	BookDBOptions o = {.read_only = true};
	const char *names[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		assert_int_equal(bookdb_open(&db[i], path, &o, NULL), 0);
		assert_int_equal(bookdb_txn_begin(&t[i], db[i], false), 0);
	}
	BookIter *it[2];
	for (int i = 0; i < 2; i++) assert_int_equal(bookdb_iter_open(&it[i], t[i]), 0);
	size_t n = 0;
	for (;; n++) {
		Key k[2];
		const uint8_t *v[2];
		size_t len[2];
		int r0 = bookdb_iter_next(it[0], &k[0], &v[0], &len[0]);
		int r1 = bookdb_iter_next(it[1], &k[1], &v[1], &len[1]);
		assert_int_equal(r0, r1);
		if (r0 != 1) break;
		assert_true(key_equal(k[0], k[1]));
		assert_int_equal(len[0], len[1]);
		if (memcmp(v[0], v[1], len[0])) fail_msg("record %zu differs", n);
	}
	assert_true(n > 0);
	for (int i = 0; i < 2; i++) bookdb_iter_free(it[i]);
	for (int i = 0; i < 2; i++)
		assert_int_equal(bookdb_kv_iter_open(&it[i], t[i], BOOKDB_GAMES), 0);
	for (n = 0;; n++) {
		const void *k[2], *v[2];
		size_t kl[2], vl[2];
		int r0 = bookdb_kv_iter_next(it[0], &k[0], &kl[0], &v[0], &vl[0]);
		int r1 = bookdb_kv_iter_next(it[1], &k[1], &kl[1], &v[1], &vl[1]);
		assert_int_equal(r0, r1);
		if (r0 != 1) break;
		assert_int_equal(kl[0], kl[1]);
		assert_memory_equal(k[0], k[1], kl[0]);
		assert_int_equal(vl[0], vl[1]);
		if (memcmp(v[0], v[1], vl[0])) fail_msg("game mark %zu differs", n);
	}
	assert_true(n > 0);
	for (int i = 0; i < 2; i++) {
		bookdb_iter_free(it[i]);
		bookdb_txn_abort(t[i]);
		bookdb_free(db[i]);
	}
}

/* A floodgate record cut short (a download broken off, a game read while it
 * was played) is a game without a result under its floodgate id: the whole
 * record of it, read later, completes it (its result, the plies past those
 * counted), where it used to be a duplicate that changed nothing. */
static void test_ingest__a_whole_record_completes_the_one_cut_short(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *full =
	    "tests/data/floodgate/"
	    "wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa";
	assert_int_equal(ts_runf(NULL, NULL, "head -n 200 %s > %s/cut.csa", full, dir), 0);
	/* The reference: the whole record alone. */
	json_t *j = ts_run_json(0, "%s ingest %s/ref %s --json --quiet", ts_joseki(), dir, full);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	long long plies = ts_jint(j, "positions_added");
	assert_true(plies > 100);
	json_decref(j);
	/* The cut record, then the whole one; then the whole one again. */
	j = ts_run_json(0, "%s ingest %s/b %s/cut.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "games_unended"), 1);
	long long cut = ts_jint(j, "positions_added");
	assert_true(cut > 20 && cut < plies);
	json_decref(j);
	/* Said, since nothing else says it: the record is no error. */
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s ingest %s/said %s/cut.csa", ts_joseki(), dir, dir),
	                 0);
	if (!strstr(err,
	            "ingest: 1 game ingested without a result: its record stops without an end"))
		fail_msg("%s", err);
	free(err);
	/* A USI line has no end either, but is no floodgate game to complete. */
	assert_int_equal(ts_runf(NULL, NULL, "echo 'startpos moves 7g7f 3c3d' > %s/l.usi", dir), 0);
	j = ts_run_json(0, "%s ingest %s/said %s/l.usi --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "games_unended"), 0);
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/b %s --json --quiet", ts_joseki(), dir, full);
	assert_int_equal(ts_jint(j, "games_ingested"), 0);
	assert_int_equal(ts_jint(j, "games_unended"), 0);
	assert_int_equal(ts_jint(j, "games_completed"), 1);
	assert_int_equal(ts_jint(j, "duplicates"), 0);
	assert_int_equal(ts_jint(j, "positions_added"), plies - cut);
	json_decref(j);
	assert_same_books(dir, "ref", "b");
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s ingest %s/b %s", ts_joseki(), dir, full), 0);
	assert_non_null(strstr(out, " 1 duplicates; "));
	assert_null(strstr(out, "completed"));
	free(out);
	/* Both in one run, the cut one first; and the cut one counted only to
	 * --max-ply 10: the whole record counts the rest to this run's. */
	j = ts_run_json(0, "%s ingest %s/c %s/cut.csa %s --json --quiet --jobs 1", ts_joseki(), dir,
	                dir, full);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "games_completed"), 1);
	assert_int_equal(ts_jint(j, "games_unended"), 0); /* completed in the same run */
	json_decref(j);
	assert_same_books(dir, "ref", "c");
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s/d %s/cut.csa --max-ply 10 --quiet",
	                         ts_joseki(), dir, dir),
	                 0);
	assert_int_equal(ts_runf(&out, NULL, "%s ingest %s/d %s", ts_joseki(), dir, full), 0);
	assert_non_null(strstr(out, " 0 duplicates, 1 completed; "));
	free(out);
	assert_same_books(dir, "ref", "d");
	/* Cut in a move's line (a download broken off there): the moves before
	 * it are the game, without a result, said; the whole record completes it. */
	assert_int_equal(ts_runf(NULL, NULL, "head -n 200 %s | head -c -3 > %s/mid.csa", full, dir),
	                 0);
	j = ts_run_json(0, "%s ingest %s/m %s/mid.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "errors_total"), 1);
	json_t *e = json_array_get(json_object_get(j, "errors"), 0);
	assert_int_equal(ts_jint(e, "line"), 200);
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "malformed move"));
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/m %s --json --quiet", ts_joseki(), dir, full);
	assert_int_equal(ts_jint(j, "games_completed"), 1);
	json_decref(j);
	assert_same_books(dir, "ref", "m");
	/* A finished game is not completed again by a cut record of it, and a
	 * cut record is not completed by another game under its id. */
	j = ts_run_json(0, "%s ingest %s/ref %s/cut.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "duplicates"), 1);
	json_decref(j);
	const char *ev = "V2.2\n$EVENT:wdoor+floodgate-300-10F+x+y+20260101000000\nPI\n+\n";
	char text[512], path[4200];
	snprintf(text, sizeof text, "%s+7776FU\n-3334FU\n", ev);
	snprintf(path, sizeof path, "%s/open.csa", dir);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	snprintf(text, sizeof text, "%s+2726FU\n-3334FU\n+7776FU\n%%TORYO\n", ev);
	snprintf(path, sizeof path, "%s/other.csa", dir);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	snprintf(text, sizeof text, "%s+7776FU\n-3334FU\n+2726FU\n%%TORYO\n", ev);
	snprintf(path, sizeof path, "%s/same.csa", dir);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	j = ts_run_json(0, "%s ingest %s/e %s/open.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/e %s/other.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "duplicates"), 1);
	assert_int_equal(ts_jint(j, "games_completed"), 0);
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/e %s/same.csa --json --quiet", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(j, "games_completed"), 1);
	assert_int_equal(ts_jint(j, "positions_added"), 1);
	json_decref(j);
	/* 7g7f: counted once, and now a win for Black (the mover). */
	j = ts_run_json(0, "%s query %s/e startpos --json", ts_joseki(), dir);
	json_t *m = json_array_get(json_object_get(j, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "move")), "7g7f");
	assert_int_equal(ts_jint(m, "count"), 1);
	assert_int_equal(ts_jint(m, "wins"), 1);
	json_decref(j);
	ts_rmtree(dir);
	free(dir);
}

/* The first moves of the games that start from the start position, counted
 * straight from the records. */
/* A game ingested into a minimaxed book adds its new moves unvalued: they are
 * not the book's move with a value of 0 before minimax gives them one. */
static void test_ingest__a_new_move_in_a_minimaxed_book_is_unvalued(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600];
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "%s ingest %s/book " FIXTURES " --quiet && %s think %s/book "
	            "--positions 3 --nodes 1000 --multipv 1 --quiet && %s minimax %s/book --quiet",
	            ts_joseki(), dir, ts_joseki(), dir, ts_joseki(), dir),
	    0);
	snprintf(path, sizeof path, "%s/g.usi", dir);
	const char *g = "startpos moves 9i9h 1c1d\n";
	assert_int_equal(ts_write_file(path, g, strlen(g)), 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/book %s --quiet", ts_joseki(), dir, path), 0);
	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	json_t *moves = json_object_get(q, "moves"), *m;
	size_t i;
	bool seen = false;
	json_array_foreach(moves, i, m)
	{
		if (strcmp(json_string_value(json_object_get(m, "move")), "9i9h")) continue;
		seen = true;
		if (!json_is_null(json_object_get(m, "value"))) fail_msg("%s", json_dumps(m, 0));
		assert_non_null(json_string_value(json_object_get(m, "unvalued")));
	}
	assert_true(seen);
	assert_string_not_equal(json_string_value(json_object_get(q, "bestmove")), "9i9h");
	json_decref(q);
	ts_rmtree(dir);
	free(dir);
}

static void test_ingest__query_startpos_shows_first_moves_with_counts(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_decref(
	    ts_run_json(0, "%s ingest %s/book " FIXTURES " --json --quiet", ts_joseki(), dir));

	Position start, pos;
	pos_set_startpos(&start);
	char names[64][16];
	int counts[64] = {0}, nnames = 0, games = 0;
	char *list = NULL;
	assert_int_equal(
	    ts_run("ls tests/data/floodgate/*.csa tests/data/csa-dialects/*.csa", &list, NULL), 0);
	for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
		KifuReader *r;
		assert_int_equal(kifu_reader_open_file(&r, line), 0);
		KifuRecord *rec;
		while (kifu_reader_next(r, &rec) == 1) {
			if (kifu_record_position(&pos, rec, NULL) == 0 &&
			    key_equal(pos_key(&pos), pos_key(&start)) && rec->nmoves > 0) {
				Move m;
				assert_int_equal(
				    csa_move_parse(&m, &pos, rec->moves[0].token, 7, NULL), 0);
				char u[USI_MOVE_MAX];
				usi_move_write(m, u);
				int k = 0;
				while (k < nnames && strcmp(names[k], u)) k++;
				if (k == nnames) snprintf(names[nnames++], 16, "%s", u);
				counts[k]++;
				games++;
			}
			kifu_record_free(rec);
		}
		kifu_reader_free(r);
	}
	free(list);
	assert_true(games >= 15);

	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	assert_true(json_is_true(json_object_get(q, "in_book")));
	json_t *moves = json_object_get(q, "moves");
	assert_int_equal((int)json_array_size(moves), nnames);
	size_t i;
	json_t *m;
	json_array_foreach(moves, i, m)
	{
		const char *u = json_string_value(json_object_get(m, "move"));
		int k = 0;
		while (k < nnames && strcmp(names[k], u)) k++;
		assert_true(k < nnames);
		assert_int_equal(ts_jint(m, "count"), counts[k]);
		assert_true(ts_jint(m, "wins") + ts_jint(m, "draws") + ts_jint(m, "losses") <=
		            counts[k]);
	}
	json_decref(q);
	ts_rmtree(dir);
	free(dir);
}

static const char *GAME_TEXT = "V2.2\n"
                               "N+alice\nN-bob\n"
                               "$EVENT:wdoor+floodgate-300-10F+alice+bob+20260101120000\n"
                               "$START_TIME:2026/01/01 12:00:00\n"
                               "PI\n+\n"
                               "'black_rate:alice+x:3000\n'white_rate:bob+y:2500.0\n"
                               "+7776FU\nT1\n'** 45 -3334FU\n"
                               "-3334FU\nT1\n'** 30 +2726FU\n"
                               "+2726FU\nT1\n'** 0\n"
                               "-8384FU\nT1\n'** -100000 +1111FU\n"
                               "%TORYO\n";

static void test_ingest__evaluations_become_the_movers_view(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	snprintf(path, sizeof path, "%s/g.csa", dir);
	assert_int_equal(ts_write_file(path, GAME_TEXT, strlen(GAME_TEXT)), 0);
	json_t *j = ts_run_json(0, "%s ingest %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "positions_added"), 4);
	assert_int_equal(ts_jint(j, "evals_added"), 3); /* "'** 0" alone is a book move */
	json_decref(j);
	struct {
		const char *pos, *move;
		int eval; /* 99999: none */
		int wins, losses;
	} cases[] = {
	    {"startpos", "7g7f", 45, 0, 1},
	    {"startpos moves 7g7f", "3c3d", -30, 1, 0},
	    {"startpos moves 7g7f 3c3d", "2g2f", 99999, 0, 1},
	    /* A mate for White, in White's view; Black resigned before any mate
	     * on the board, so the claim is bounded by --mate-clamp (2000). */
	    {"startpos moves 7g7f 3c3d 2g2f", "8c8d", 2000, 1, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *q =
		    ts_run_json(0, "%s query %s/book '%s' --json", ts_joseki(), dir, cases[i].pos);
		json_t *m = json_array_get(json_object_get(q, "moves"), 0);
		assert_non_null(m);
		assert_string_equal(json_string_value(json_object_get(m, "move")), cases[i].move);
		/* A game's comment: shown as such, not as an analysis. */
		assert_null(json_object_get(m, "eval"));
		json_t *e = json_object_get(m, "game_eval");
		if (cases[i].eval == 99999)
			assert_true(!e || json_is_null(e));
		else
			assert_int_equal(json_integer_value(e), cases[i].eval);
		/* %TORYO by Black after White's 8c8d: White won */
		assert_int_equal(ts_jint(m, "wins"), cases[i].wins);
		assert_int_equal(ts_jint(m, "losses"), cases[i].losses);
		json_decref(q);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_ingest__filters_skip_games(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	snprintf(path, sizeof path, "%s/g.csa", dir);
	assert_int_equal(ts_write_file(path, GAME_TEXT, strlen(GAME_TEXT)), 0);
	json_t *j = ts_run_json(0, "%s ingest %s/b1 %s --min-rating 2600 --json --quiet",
	                        ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "games_skipped"), 1);
	assert_int_equal(ts_jint(j, "games_ingested"), 0);
	json_decref(j);
	j = ts_run_json(
	    0,
	    "%s ingest %s/b2 %s --min-rating 2500 --since 2026-01-01 --until 2026/01/01 "
	    "--time-control 'floodgate-300-*' --event 'wdoor+*' --json --quiet",
	    ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/b3 %s --since 20260102 --json --quiet", ts_joseki(), dir,
	                path);
	assert_int_equal(ts_jint(j, "games_skipped"), 1);
	json_decref(j);
	j = ts_run_json(
	    0, "%s ingest %s/b4 " FIXTURES " --time-control floodgate-600-10 --json --quiet",
	    ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1); /* the 2015 game */
	json_decref(j);
	j = ts_run_json(0, "%s ingest %s/b5 %s --max-ply 2 --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 2);
	json_decref(j);
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s ingest %s/b6 %s --since yesterday", ts_joseki(), dir, path), 2);
	assert_non_null(strstr(err, "yesterday"));
	free(err);
	ts_rmtree(dir);
	free(dir);
}

static void test_ingest__illegal_move_keeps_moves_before_it_and_names_the_line(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *bad = "V2.2\nPI\n+\n+7776FU\n-3334FU\n+7775FU\n-8384FU\n%TORYO\n";
	char path[4200];
	snprintf(path, sizeof path, "%s/bad.csa", dir);
	assert_int_equal(ts_write_file(path, bad, strlen(bad)), 0);
	json_t *j = ts_run_json(0, "%s ingest %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "positions_added"), 2);
	json_t *e = json_array_get(json_object_get(j, "errors"), 0);
	assert_non_null(e);
	assert_int_equal(ts_jint(e, "line"), 6);
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "+7775FU"));
	json_decref(j);
	/* garbage is rejected, and the good games beside it still go in */
	snprintf(path, sizeof path, "%s/garbage.csa", dir);
	assert_int_equal(ts_write_file(path, "\x01\x02PX\n+99\n%%%\n", 12), 0);
	j = ts_run_json(0, "%s ingest %s/book2 %s tests/data/floodgate --json --quiet", ts_joseki(),
	                dir, path);
	assert_int_equal(ts_jint(j, "games_ingested"), 15);
	assert_true(ts_jint(j, "games_rejected") >= 1);
	assert_true(json_array_size(json_object_get(j, "errors")) >= 1);
	json_decref(j);
	/* A game past 1,023 plies is rejected, not ended there with a result
	 * (it was ingested, its first 128 plies a win for Black). */
	j = ts_run_json(0, "%s ingest %s/book3 tests/data/planted/1026-plies.usi --json --quiet",
	                ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "games_rejected"), 1);
	assert_int_equal(ts_jint(j, "games_ingested"), 0);
	assert_int_equal(ts_jint(j, "positions_added"), 0);
	e = json_array_get(json_object_get(j, "errors"), 0);
	assert_non_null(e);
	assert_string_equal(json_string_value(json_object_get(e, "message")),
	                    "game longer than 1023 plies");
	json_decref(j);
	/* A game whose start the book cannot hold (three rooks) is skipped with
	 * the reason query and import give (it said only that it could not). */
	snprintf(path, sizeof path, "%s/rooks.usi", dir);
	static const char ROOKS[] = "startpos moves 7g7f\nsfen 4k4/9/9/9/9/9/9/9/4K4 b 3R 1 "
	                            "moves R*5e\n";
	assert_int_equal(ts_write_file(path, ROOKS, sizeof ROOKS - 1), 0);
	j = ts_run_json(0, "%s ingest %s/book5 %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	assert_int_equal(ts_jint(j, "games_rejected"), 1);
	e = json_array_get(json_object_get(j, "errors"), 0);
	assert_non_null(e);
	assert_int_equal(ts_jint(e, "line"), 2);
	assert_string_equal(json_string_value(json_object_get(e, "message")),
	                    "the position before move 1 cannot be stored in the book: 3 rooks "
	                    "(board and hands, promoted counted): a set has 2; game skipped");
	json_decref(j);
	/* A YaneuraOu book given to ingest (import reads it): its sfen and move
	 * lines were read as USI games, 8 of 11 "ingested", positions and game
	 * counts no game had. Refused whole at its header, BOM or not. */
	static const char YO[] =
	    "\xEF\xBB\xBF#YANEURAOU-DB2016 1.00\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
	    "7g7f 3c3d 50 20 1\n2g2f none 30 20 1\n";
	for (int bom = 0; bom < 2; bom++) {
		snprintf(path, sizeof path, "%s/yo%d.db", dir, bom);
		assert_int_equal(ts_write_file(path, YO + 3 * !bom, sizeof YO - 1 - 3 * !bom), 0);
		j = ts_run_json(1, "%s ingest %s/book4 %s --json --quiet", ts_joseki(), dir, path);
		assert_int_equal(ts_jint(j, "games_read"), 0);
		assert_int_equal(ts_jint(j, "positions_added"), 0);
		e = json_array_get(json_object_get(j, "errors"), 0);
		assert_non_null(e);
		assert_int_equal(ts_jint(e, "line"), 1);
		const char *m = json_string_value(json_object_get(e, "message"));
		if (!m || !strstr(m, "a YaneuraOu book (its #YANEURAOU-DB2016 header), not game "
		                     "records: joseki import BOOK FILE reads it"))
			fail_msg("not said: %s", m ? m : "(none)");
		json_decref(j);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_ingest__archives_and_stdin_give_the_same_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(
	        NULL, NULL,
	        "cd tests/data && tar czf %s/g.tar.gz floodgate && zip -qr %s/g.zip floodgate && "
	        "tar cJf %s/g.tar.xz floodgate && 7z a -bd -y %s/g.7z floodgate >/dev/null",
	        dir, dir, dir, dir),
	    0);
	json_t *ref = ts_run_json(0, "%s ingest %s/ref tests/data/floodgate --json --quiet",
	                          ts_joseki(), dir);
	const char *arch[] = {"g.tar.gz", "g.zip", "g.tar.xz", "g.7z"};
	for (size_t i = 0; i < 4; i++) {
		json_t *j = ts_run_json(0, "%s ingest %s/b%zu %s/%s --json --quiet", ts_joseki(),
		                        dir, i, dir, arch[i]);
		assert_int_equal(ts_jint(j, "games_ingested"), 15);
		assert_int_equal(ts_jint(j, "positions_added"), ts_jint(ref, "positions_added"));
		assert_int_equal(ts_jint(j, "evals_added"), ts_jint(ref, "evals_added"));
		json_decref(j);
	}
	json_t *j =
	    ts_run_json(0, "cat tests/data/floodgate/*.csa | %s ingest %s/stdin - --json --quiet",
	                ts_joseki(), dir);
	/* concatenated files are one input without '/' separators: the first record reads
	 * to the end, so only require that nothing crashes and something was read */
	assert_true(ts_jint(j, "games_read") >= 1);
	json_decref(j);
	j = ts_run_json(0,
	                "%s ingest %s/stdin2 - --json --quiet < tests/data/floodgate/"
	                "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+jhbr2+20260601113000.csa",
	                ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "games_ingested"), 1);
	json_decref(j);
	/* a truncated archive: an error naming it, the entries before the damage
	 * kept, and exit 1 (an input not read whole) */
	assert_int_equal(ts_runf(NULL, NULL, "head -c 20000 %s/g.tar.gz > %s/cut.tar.gz", dir, dir),
	                 0);
	j = ts_run_json(1, "%s ingest %s/cut %s/cut.tar.gz --json --quiet", ts_joseki(), dir, dir);
	assert_true(json_array_size(json_object_get(j, "errors")) >= 1);
	assert_int_equal(ts_jint(j, "unreadable"), 1);
	json_decref(j);
	/* A truncated 7z, for which libarchive gives no reason: said, never
	 * "(null)". */
	assert_int_equal(ts_runf(NULL, NULL, "head -c 30000 %s/g.7z > %s/cut.7z", dir, dir), 0);
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s ingest %s/cut7 %s/cut.7z --quiet", ts_joseki(), dir, dir), 1);
	assert_non_null(strstr(err, "cut.7z: archive damaged or truncated: "));
	assert_null(strstr(err, "(null)"));
	free(err);
	json_decref(ref);
	ts_rmtree(dir);
	free(dir);
}

/* What a bounded-input run is fed on its standard input (a thread of the
 * test writes it into a pipe, until the run closes it or limit bytes). */
typedef struct {
	int fd;
	int kind;     /* FEED_ZEROS, FEED_COMMENTS: a game, then comment lines */
	size_t limit; /* bytes (0: until the reader goes) */
	size_t written;
} Feed;
enum { FEED_ZEROS, FEED_COMMENTS };

static void *feed_main(void *arg)
{
	Feed *f = arg;
	static char chunk[1 << 16];
	if (f->kind == FEED_ZEROS) {
		memset(chunk, 0, sizeof chunk);
	} else {
		static const char LINE[] =
		    "# a comment line, as long as a long game's move list is "
		    "not, repeated for ever and ever and ever\n";
		size_t n = strlen(LINE), o = 0;
		for (; o + n <= sizeof chunk; o += n) memcpy(chunk + o, LINE, n);
		memset(chunk + o, ' ', sizeof chunk - o); /* and a blank line */
		chunk[sizeof chunk - 1] = '\n';
		const char *first = "startpos moves 7g7f 3c3d\n";
		if (write(f->fd, first, strlen(first)) > 0) f->written += strlen(first);
	}
	while (!f->limit || f->written < f->limit) {
		ssize_t w = write(f->fd, chunk, sizeof chunk);
		if (w <= 0) break; /* EPIPE: the run stopped reading */
		f->written += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

/* AddressSanitizer, as GCC says it and as clang (make asan) does. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/*
 * Runs `joseki ingest BOOK INPUT --quiet` under a 1 GB address-space limit
 * (an unbounded reader fails there instead of taking the machine), its
 * stdin fed by feed (NULL: /dev/null), stderr into *err. Returns its exit
 * status, *rss_kb its peak resident set, *ms how long it took; a run still
 * going after 120 s is killed and fails the test.
 */
static int run_bounded(const char *book, const char *input, Feed *feed, char **err, long *rss_kb,
                       double *ms)
{
	char errpath[600];
	snprintf(errpath, sizeof errpath, "%s.stderr", book);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	double t0 = clock_ms_f();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* (Not under AddressSanitizer, whose shadow does not fit: the
		 * peak RSS is checked all the same.) */
#if !defined(UNDER_ASAN)
		struct rlimit as = {1L << 30, 1L << 30};
		setrlimit(RLIMIT_AS, &as);
#endif
		int in = feed ? fds[0] : open("/dev/null", O_RDONLY);
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int o = open("/dev/null", O_WRONLY);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		close(fds[1]);
		execl(ts_joseki(), "joseki", "ingest", book, input, "--quiet", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	pthread_t th;
	if (feed) {
		feed->fd = fds[1];
		assert_int_equal(pthread_create(&th, NULL, feed_main, feed), 0);
	} else {
		close(fds[1]);
	}
	int st = 0;
	struct rusage ru;
	int64_t end = clock_ms() + 120000;
	pid_t r;
	while ((r = wait4(pid, &st, WNOHANG, &ru)) == 0 && clock_ms() < end) usleep(2000);
	if (r != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("ingest %s: still running after 120 s", input);
	}
	*ms = clock_ms_f() - t0;
	if (feed) pthread_join(th, NULL);
	*rss_kb = ru.ru_maxrss;
	*err = ts_read_file(errpath, NULL);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A peak RSS (KB) under 100 MB: what an ingest of any input stays in (not
 * checked under AddressSanitizer, whose shadow memory counts in it). */
static void assert_flat(long rss_kb)
{
#if defined(UNDER_ASAN)
	(void)rss_kb;
#else
	assert_true(rss_kb < 100 * 1024);
#endif
}

/* input (its stdin fed by feed) is refused, exit 1, saying says, in less
 * than 100 MB. */
static void expect_refused(const char *book, const char *input, Feed *feed, const char *says)
{
	char *err;
	long rss;
	double ms;
	int st = run_bounded(book, input, feed, &err, &rss, &ms);
	print_message("ingest %s: status %d, %.0f ms, peak RSS %ld KB\n", input, st, ms, rss);
	if (st != 1 || !strstr(err, says) || !strstr(err, "1 input refused"))
		fail_msg("%s: status %d, said:\n%s", input, st, err);
	assert_flat(rss);
	free(err);
}

/*
 * Input with no end and no game in it: /dev/zero, /dev/urandom, zeros on a
 * pipe, a line without an end, a CSA record without an end, a KIF file of
 * endless comments. Each is refused at its first absurd line (a NUL byte, a
 * line over 1 MiB, a record over 16 MiB) with an error naming the input and
 * the line, exit 1, in well under 100 MB; the games before that line are in.
 * An endless stream of real lines is read in flat memory (200 MB of it here).
 * (Every input was read whole into memory first: ingest /dev/zero reached
 * 2.5-5.5 GB within 20 s.)
 */
static void test_ingest__endless_or_binary_input_is_refused_at_its_first_absurd_line(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], path[700];
	snprintf(book, sizeof book, "%s/b", dir);
	signal(SIGPIPE, SIG_IGN);
	static const struct {
		const char *input, *says;
	} DEVICES[] = {{"/dev/zero", "/dev/zero:1: a NUL byte"}, {"/dev/urandom", ": a NUL byte"}};
	for (size_t i = 0; i < sizeof DEVICES / sizeof *DEVICES; i++)
		expect_refused(book, DEVICES[i].input, NULL, DEVICES[i].says);
	/* Zeros on a pipe, for ever. */
	Feed zeros = {.kind = FEED_ZEROS};
	expect_refused(book, "-", &zeros, "-:1: a NUL byte");
	/* A record in UTF-16 (with its byte-order mark): said to be UTF-16, with
	 * how to convert it, not binary data. */
	snprintf(path, sizeof path, "%s/u16.csa", dir);
	static const char U16[] = "\xff\xfeV\0002\0\n\0P\0I\0\n\0";
	assert_int_equal(ts_write_file(path, U16, sizeof U16 - 1), 0);
	expect_refused(book, path, NULL,
	               "u16.csa:1: a NUL byte: UTF-16 text, not UTF-8 or Shift_JIS");
	/* A line without an end; a CSA record without an end; a KIF file of
	 * endless comments: files of 40 MB, each refused at its limit. */
	static const struct {
		const char *name, *head, *line, *says;
	} ENDLESS[] = {
	    {"line.usi", "startpos moves 7g7f\n", "7g7f ", "line.usi:2: a line longer than 1 MiB"},
	    {"record.csa", "V2.2\nPI\n+\n+7776FU\n", "'a comment that never ends\n",
	     "a record longer than 16 MiB (from line 1)"},
	    {"comments.kif", "手合割：平手\n手数----指手---------消費時間--\n", "*コメント\n",
	     "comments.kif:"},
	};
	for (size_t i = 0; i < sizeof ENDLESS / sizeof *ENDLESS; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, ENDLESS[i].name);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(ENDLESS[i].head, f);
		for (size_t n = 0; n < (40u << 20); n += strlen(ENDLESS[i].line))
			fputs(ENDLESS[i].line, f);
		fclose(f);
		expect_refused(book, path, NULL, ENDLESS[i].says);
		unlink(path);
	}
	/* Games, then binary data: the games are in, the rest refused. */
	snprintf(path, sizeof path, "%s/then.csa", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "for f in tests/data/floodgate/*.csa; do cat $f; echo /; done > %s "
	            "&& head -c 100000 /dev/urandom >> %s",
	            path, path),
	    0);
	char *out = NULL;
	int st = ts_runf(&out, NULL, "%s ingest %s/then %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(st, 1);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_int_equal(ts_jint(j, "games_ingested"), 15);
	assert_int_equal(ts_jint(j, "inputs_refused"), 1);
	json_decref(j);
	free(out);
	/* An endless stream of real lines: flat memory, and a run that ends
	 * with its input. */
	Feed lines = {.kind = FEED_COMMENTS, .limit = (size_t)200 << 20};
	char *err;
	long rss;
	double ms;
	st = run_bounded(book, "-", &lines, &err, &rss, &ms);
	print_message("ingest - (%zu bytes of lines): status %d, %.0f ms, peak RSS %ld KB\n",
	              lines.written, st, ms, rss);
	if (st != 0) fail_msg("status %d, said:\n%s", st, err);
	assert_true(lines.written >= lines.limit);
	assert_flat(rss);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Memory running out (an address-space limit, `ulimit -v`, at several sizes
 * around what an ingest of 3,000 games needs): every run ends by itself with
 * status 0 (and every game in) or 1 with "out of memory" / "Cannot allocate
 * memory" on stderr, never a signal, a hang or a silent loss; the book passes
 * check and holds exactly what the summary counts. Not under AddressSanitizer,
 * whose shadow memory does not fit under such a limit (the test says so).
 */

static void test_ingest__out_of_memory_fails_cleanly(void **state)
{
	(void)state;
#if defined(UNDER_ASAN)
	print_message("skipped: an address-space limit and AddressSanitizer do not mix\n");
	skip();
#endif
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL, "%s gen-games %s/g --games 3000 --seed 5 >/dev/null",
	                         ts_joseki(), dir),
	                 0);
	int failed = 0, passed = 0;
	for (long kb = 300000; kb <= 620000; kb += 40000) {
		char *out = NULL, *err = NULL;
		ts_runf(NULL, NULL, "rm -rf %s/b", dir);
		int rc = ts_runf(&out, &err,
		                 "ulimit -v %ld; timeout 120 %s ingest %s/b %s/g --quiet --json",
		                 kb, ts_joseki(), dir, dir);
		if (rc != 0 && rc != 1)
			fail_msg("limit %ld kB: status %d (signal or timeout)\n%s", kb, rc, err);
		if (rc == 1) {
			failed++;
			if (!strstr(err, "out of memory") && !strstr(err, "Cannot allocate memory"))
				fail_msg("limit %ld kB: no word of memory:\n%s", kb, err);
		} else {
			passed++;
			if (!strstr(out, "\"games_ingested\":3000"))
				fail_msg("limit %ld kB: status 0 without every game:\n%s\n%s", kb,
				         out, err);
		}
		free(err);
		char path[512];
		snprintf(path, sizeof path, "%s/b/data.mdb", dir);
		if (access(path, F_OK) == 0) {
			/* What the summary counts is what the book holds. */
			char *cout = NULL, *cerr = NULL;
			int crc = ts_runf(&cout, &cerr, "%s check %s/b", ts_joseki(), dir);
			/* No summary: the book could not even be opened (nothing added). */
			const char *pa = strstr(out, "\"positions_added\":");
			if (!pa) pa = "\"positions_added\":0,";
			/* A first ingest that failed while the book was being set up
			 * leaves LMDB's files without the book's own: nothing was added. */
			if (crc != 0 && rc == 1 && strstr(cerr, "not a joseki book") &&
			    !strncmp(pa, "\"positions_added\":0,", 20)) {
				free(cout);
				free(cerr);
				free(out);
				continue;
			}
			if (crc != 0) fail_msg("limit %ld kB: check failed:\n%s", kb, cerr);
			free(cerr);
			char want[64];
			snprintf(want, sizeof want, "check: %llu records",
			         strtoull(pa + strlen("\"positions_added\":"), NULL, 10));
			if (!strstr(cout, want))
				fail_msg("limit %ld kB: summary %s but %s", kb, pa, cout);
			free(cout);
		}
		free(out);
	}
	/* The sizes straddle the need: some runs fail, some finish. */
	fprintf(stderr, "out of memory runs: %d failed cleanly, %d finished\n", failed, passed);
	assert_true(passed > 0);
	ts_rmtree(dir);
	free(dir);
}

/* An IngestProgressFn: the walk counts files, the writer games read. */
static void count_progress(void *ctx, const char *phase, const IngestProgress *p)
{
	if (!strcmp(phase, "walk")) assert_non_null(p->dir);
	ts_progress_note(ctx, phase, !strcmp(phase, "walk") ? p->files : p->games_read);
	if (!strcmp(phase, "done")) assert_true(p->games_ingested <= p->games_read);
}

/* ingest_run reports through its callback (a call per directory and per
 * game when the interval is tiny; the walk first, the "done" last with the
 * run's counts), and prints nothing without one. */
static void test_ingest__progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	const char *inputs[] = {"tests/data/floodgate", "tests/data/csa-dialects"};
	TsProgress *rec = ts_progress_new();
	for (int quiet = 0; quiet < 2; quiet++) {
		snprintf(path, sizeof path, "%s/book%d", dir, quiet);
		BookDB *db;
		assert_int_equal(bookdb_open(&db, path, NULL, NULL), 0);
		IngestOptions opt;
		ingest_options_init(&opt);
		opt.jobs = 2;
		if (!quiet) {
			opt.progress = count_progress;
			opt.progress_ctx = rec;
			opt.progress_interval_s = 1e-9;
		}
		snprintf(path, sizeof path, "%s/stderr", dir);
		int saved = ts_stderr_begin(path);
		IngestStats st;
		int rc = ingest_run(&st, db, inputs, 2, &opt);
		char *err = ts_stderr_end(saved, path);
		assert_int_equal(rc, 0);
		assert_string_equal(err, "");
		free(err);
		assert_int_equal(st.games_read, NGAMES);
		if (!quiet) {
			static const char *const phases[] = {"walk", "games", "done", NULL};
			ts_progress_check(rec, phases);
			assert_string_equal(rec->phase[0], "walk");
			assert_true(ts_progress_count(rec, "walk") >= 2); /* a call per directory */
			assert_true(ts_progress_count(rec, "games") >= 1);
			assert_int_equal(ts_progress_last(rec), st.games_read);
		}
		ingest_stats_free(&st);
		bookdb_free(db);
	}
	free(rec);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ingest__fixture_games_ingest_without_errors_and_counts_add_up),
	    cmocka_unit_test(test_ingest__an_extreme_position_among_ordinary_games),
	    cmocka_unit_test(test_ingest__position_lists_with_trailing_comments),
	    cmocka_unit_test(test_ingest__a_walk_skips_special_files_links_and_proc),
	    cmocka_unit_test(test_ingest__second_run_adds_nothing),
	    cmocka_unit_test(test_ingest__query_startpos_shows_first_moves_with_counts),
	    cmocka_unit_test(test_ingest__a_new_move_in_a_minimaxed_book_is_unvalued),
	    cmocka_unit_test(test_ingest__evaluations_become_the_movers_view),
	    cmocka_unit_test(test_ingest__filters_skip_games),
	    cmocka_unit_test(test_ingest__illegal_move_keeps_moves_before_it_and_names_the_line),
	    cmocka_unit_test(test_ingest__a_whole_record_completes_the_one_cut_short),
	    cmocka_unit_test(test_ingest__archives_and_stdin_give_the_same_book),
	    cmocka_unit_test(
	        test_ingest__endless_or_binary_input_is_refused_at_its_first_absurd_line),
	    cmocka_unit_test(test_ingest__out_of_memory_fails_cleanly),
	    cmocka_unit_test(test_ingest__progress_goes_to_the_callback_and_null_is_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
