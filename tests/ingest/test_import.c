/* tests/ingest/test_import.c — joseki import of YaneuraOu DB2016 books and
 * Apery binary books, and export --format apery back to the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bookdb/bookdb.h"
#include "ingest/import.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* Every variant docs/ingest.md lists: comments (# and //), missing fields,
 * none/resign, no ply, CRLF, blank lines, an illegal move (line 12). */
static const char *BOOK =
    "#YANEURAOU-DB2016 1.00\r\n"
    "# NOE:4\r\n"
    "// a comment\n"
    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
    "7g7f 3c3d 50 20 7\n"
    "2g2f none 45\n"
    "\n"
    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w -\r\n"
    "3c3d\r\n"
    "resign none -999 5\n"
    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
    "5e5d none 10 10\n"
    "8h2b+ None 40000 12 1\n"
    "\n";

static void test_import__every_variant_of_the_format(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	snprintf(path, sizeof path, "%s/b.db", dir);
	assert_int_equal(ts_write_file(path, BOOK, strlen(BOOK)), 0);
	json_t *j = ts_run_json(0, "%s import %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 3);
	/* A book's fields, not a game's. */
	assert_int_equal(ts_jint(j, "files"), 1);
	assert_int_equal(ts_jint(j, "unreached"), 0);
	assert_null(json_object_get(j, "games_read"));
	assert_int_equal(ts_jint(j, "moves_added"), 4); /* 7g7f 2g2f 3c3d 8h2b+ */
	assert_int_equal(ts_jint(j, "evals_added"), 4);
	assert_int_equal(ts_jint(j, "depth0_positions"), 1); /* 3c3d alone, no depth */
	json_t *errs = json_object_get(j, "errors");
	assert_int_equal(json_array_size(errs), 1);
	assert_int_equal(ts_jint(json_array_get(errs, 0), "line"), 12);
	json_decref(j);

	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	json_t *m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "7g7f");
	assert_int_equal(ts_jint(m0, "eval"), 50);
	assert_int_equal(ts_jint(m0, "depth"), 20);
	json_t *m1 = json_array_get(json_object_get(q, "moves"), 1);
	assert_string_equal(json_string_value(json_object_get(m1, "move")), "2g2f");
	assert_int_equal(ts_jint(m1, "eval"), 45);
	assert_int_equal(ts_jint(m1, "depth"), 0);
	json_decref(q);
	q = ts_run_json(0, "%s query %s/book 'startpos moves 7g7f' --json", ts_joseki(), dir);
	m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "3c3d");
	assert_int_equal(ts_jint(m0, "eval"), 0); /* missing value is 0 */
	json_decref(q);
	q = ts_run_json(0, "%s query %s/book 'startpos moves 7g7f 3c3d' --json", ts_joseki(), dir);
	m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "8h2b+");
	assert_int_equal(ts_jint(m0, "eval"), 32000); /* clamped */
	json_decref(q);

	/* a second import changes nothing */
	j = ts_run_json(0, "%s import %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 0);
	assert_int_equal(ts_jint(j, "moves_added"), 0);
	assert_int_equal(ts_jint(j, "evals_added"), 0);
	json_decref(j);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/book", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

static void test_import__fixture_books_import_cleanly(void **state)
{
	(void)state;
	const char *files[] = {"rshogi_book_backprop_yo_in.db", "rshogi_book_backprop_check_in.db"};
	for (size_t i = 0; i < 2; i++) {
		char *dir = ts_mkdtemp();
		char *out = NULL;
		char cmd[4400];
		snprintf(cmd, sizeof cmd, "grep -c '^sfen ' tests/data/yaneuraou-db/%s", files[i]);
		assert_int_equal(ts_run(cmd, &out, NULL), 0);
		long records = strtol(out, NULL, 10);
		free(out);
		json_t *j =
		    ts_run_json(0, "%s import %s/book tests/data/yaneuraou-db/%s --json --quiet",
		                ts_joseki(), dir, files[i]);
		assert_int_equal(json_array_size(json_object_get(j, "errors")), 0);
		assert_int_equal(ts_jint(j, "positions_added"), records);
		json_decref(j);
		json_t *s = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
		assert_int_equal(ts_jint(s, "positions"), records);
		assert_int_equal(ts_jint(s, "thought"), records);
		json_decref(s);
		ts_rmtree(dir);
		free(dir);
	}
}

/* Runs `joseki import BOOK FILE` into a new book, expecting exit 1 and
 * stderr to be exactly the two lines want (the cause) and then how the run
 * stopped, no book left. */
static void import_fails_saying(const char *dir, const char *file, const char *want)
{
	char *out = NULL, *err = NULL, whole[2000];
	int rc = ts_runf(&out, &err, "%s import %s/book %s --quiet", ts_joseki(), dir, file);
	snprintf(whole, sizeof whole,
	         "%s\njoseki: import: stopped at %s (said above): nothing "
	         "imported; no book made\n",
	         want, file);
	if (rc != 1 || strcmp(err, whole)) fail_msg("exit %d, said:\n%s", rc, err);
	assert_non_null(strstr(out, "import: 0 positions, 0 moves, 0 evaluations added; 1 errors"));
	free(out);
	free(err);
	char book[700];
	snprintf(book, sizeof book, "%s/book", dir);
	struct stat sb;
	if (stat(book, &sb) == 0) fail_msg("%s: an empty book left behind", book);
}

/*
 * A file that cannot be read as a book says why, as ingest says it (not "I/O
 * error"), exit 1: a missing file, a directory, and a file nothing of which
 * is a book's (no header, no record: a CSA game) — one line, not its lines'
 * warnings. A book with a bad record stays a book: the record is reported and
 * skipped, exit 0 (every_variant_of_the_format), and so does one without its
 * header (said, read on).
 */
static void test_import__a_file_that_is_no_book_says_why(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200], want[4400];
	snprintf(path, sizeof path, "%s/nope.db", dir);
	snprintf(want, sizeof want, "%s: cannot read: No such file or directory", path);
	import_fails_saying(dir, path, want);
	snprintf(path, sizeof path, "%s/d0", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(want, sizeof want, "%s: is a directory", path);
	import_fails_saying(dir, path, want);
	snprintf(path, sizeof path, "%s/bad.csa", dir);
	const char *csa = "V2.2\nPI\n+\n+7776FU\n-3334FU\n%TORYO\n";
	assert_int_equal(ts_write_file(path, csa, strlen(csa)), 0);
	snprintf(want, sizeof want, "%s: not a YaneuraOu/Apery book: no header and no record",
	         path);
	import_fails_saying(dir, path, want);
	/* Without its header, a book's records are still read. */
	snprintf(path, sizeof path, "%s/headless.db", dir);
	const char *body = strchr(BOOK, '\n') + 1;
	assert_int_equal(ts_write_file(path, body, strlen(body)), 0);
	json_t *j = ts_run_json(0, "%s import %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 3);
	assert_int_equal(json_array_size(json_object_get(j, "errors")), 2); /* header, line 11 */
	json_decref(j);
	/* The files before the one that is no book are in; the run stops there. */
	char *out = NULL, *err = NULL;
	char bad[4200];
	snprintf(bad, sizeof bad, "%s/bad.csa", dir);
	assert_int_equal(
	    ts_runf(&out, &err, "%s import %s/book %s %s --quiet", ts_joseki(), dir, path, bad), 1);
	snprintf(want, sizeof want,
	         "joseki: import: stopped at %s (said above): the files before it are in %s/book\n",
	         bad, dir);
	if (!strstr(err, want)) fail_msg("said: %s", err);
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s import %s/book", ts_joseki(), dir), 2);
	ts_rmtree(dir);
	free(dir);
}

/* A record whose position no game reaches (more pieces than a set, a king
 * missing, the side not to move in check) is skipped alone, said with its
 * line; the book's other records are in and the run ends 0. (It failed the
 * whole file's write: nothing imported, exit 1.) */
static void test_import__a_position_the_book_cannot_hold_is_skipped_alone(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	snprintf(path, sizeof path, "%s/r.db", dir);
	const char *db = "#YANEURAOU-DB2016 1.00\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
	                 "7g7f none 50 20 1\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1\n"
	                 "2g2f none 30 20 1\n"
	                 "sfen 9/9/9/9/9/9/9/9/4K4 b R 1\n"
	                 "5i5h none 0 1 1\n"
	                 "sfen 4k4/9/9/9/4R4/9/9/9/4K4 b - 1\n"
	                 "5i5h none 0 1 1\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	                 "3c3d none -40 20 1\n";
	assert_int_equal(ts_write_file(path, db, strlen(db)), 0);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s import %s/book %s", ts_joseki(), dir, path), 0);
	static const char *const SAID[] = {
	    ":4: sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1: 19 pawns",
	    ":6: sfen 9/9/9/9/9/9/9/9/4K4 b R 1: no white king",
	    ":8: sfen 4k4/9/9/9/4R4/9/9/9/4K4 b - 1: the white king is in check with black to move",
	};
	for (size_t i = 0; i < sizeof SAID / sizeof *SAID; i++)
		if (!strstr(err, SAID[i])) fail_msg("not said: %s\nin: %s", SAID[i], err);
	assert_non_null(strstr(out, "import: 2 positions, 2 moves, 2 evaluations added; 3 errors"));
	free(out);
	free(err);
	json_t *j = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "positions"), 2);
	json_decref(j);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/book", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

/* The move m of query's answer for the start position, or NULL. */
static json_t *start_move(json_t *q, const char *m)
{
	json_t *moves = json_object_get(q, "moves");
	for (size_t i = 0; i < json_array_size(moves); i++) {
		json_t *x = json_array_get(moves, i);
		if (!strcmp(json_string_value(json_object_get(x, "move")), m)) return x;
	}
	return NULL;
}

/* Several files in one run: --prefer deeper takes the deeper analysis of a
 * position whole, in either order (a tie goes to the later file); first keeps
 * the first file's, last takes the last's. Game statistics stay. */
static void test_import__several_files_prefer_deeper_first_or_last(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char f1[4200], f2[4200], f3[4200];
	snprintf(f1, sizeof f1, "%s/shallow.db", dir);
	snprintf(f2, sizeof f2, "%s/deep.db", dir);
	snprintf(f3, sizeof f3, "%s/tie.db", dir);
	const char *start =
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n";
	char text[1024];
	snprintf(text, sizeof text, "#YANEURAOU-DB2016 1.00\n%s7g7f none 50 10\n2g2f none 30 10\n",
	         start);
	assert_int_equal(ts_write_file(f1, text, strlen(text)), 0);
	snprintf(text, sizeof text, "#YANEURAOU-DB2016 1.00\n%s7g7f none 10 20\n", start);
	assert_int_equal(ts_write_file(f2, text, strlen(text)), 0);
	snprintf(text, sizeof text, "#YANEURAOU-DB2016 1.00\n%s7g7f none -5 20\n", start);
	assert_int_equal(ts_write_file(f3, text, strlen(text)), 0);
	struct {
		const char *files, *prefer;
		int eval, depth;
		bool has_2g2f_eval;
	} cases[] = {
	    {"shallow deep", "deeper", 10, 20, false}, {"deep shallow", "deeper", 10, 20, false},
	    {"shallow deep", "first", 50, 10, true},   {"deep shallow", "first", 10, 20, false},
	    {"shallow deep", "last", 10, 20, false},   {"deep shallow", "last", 50, 10, true},
	    {"deep tie", "deeper", -5, 20, false},     {"tie deep", "deeper", 10, 20, false},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		char a[64], b[64];
		assert_int_equal(sscanf(cases[c].files, "%63s %63s", a, b), 2);
		/* A game through the start position first: its statistics stay. */
		json_t *j = ts_run_json(
		    0,
		    "rm -rf %s/b && %s ingest %s/b 'tests/data/floodgate/%s' --quiet >/dev/null && "
		    "%s import %s/b %s/%s.db %s/%s.db --prefer %s --json --quiet",
		    dir, ts_joseki(), dir,
		    "wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa",
		    ts_joseki(), dir, dir, a, dir, b, cases[c].prefer);
		json_decref(j);
		json_t *q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
		json_t *m = start_move(q, "7g7f");
		assert_non_null(m);
		if (ts_jint(m, "eval") != cases[c].eval || ts_jint(m, "depth") != cases[c].depth)
			fail_msg("%s --prefer %s: 7g7f %lld at depth %lld, want %d at %d",
			         cases[c].files, cases[c].prefer, ts_jint(m, "eval"),
			         ts_jint(m, "depth"), cases[c].eval, cases[c].depth);
		assert_int_equal(ts_jint(q, "thought_depth"), cases[c].depth);
		json_t *m2 = start_move(q, "2g2f");
		assert_non_null(m2);
		/* The shallow file's 2g2f goes with its analysis; a game comment on it stays. */
		bool imported = json_object_get(m2, "eval") && ts_jint(m2, "source") == 2;
		assert_int_equal(imported, cases[c].has_2g2f_eval);
		long long games = 0;
		json_t *moves = json_object_get(q, "moves");
		for (size_t i = 0; i < json_array_size(moves); i++)
			games += ts_jint(json_array_get(moves, i), "count");
		assert_int_equal(games, 1);
		json_decref(q);
	}
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s import %s/b %s --prefer newest", ts_joseki(), dir, f1), 2);
	assert_non_null(strstr(err, "newest"));
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* ---- Apery books ---------------------------------------------------------- */

#define APERY_BIN "tests/data/apery/apery.bin"
#define APERY_DB "tests/data/apery/yaneuraou.db"

/* query --json of spec in book dir/name, without the ply (the walk's ply and
 * the file's may differ). */
static char *query_moves(const char *dir, const char *name, const char *spec)
{
	json_t *q = ts_run_json(0, "%s query %s/%s '%s' --json", ts_joseki(), dir, name, spec);
	json_object_del(q, "ply");
	char *s = json_dumps(q, JSON_SORT_KEYS);
	json_decref(q);
	return s;
}

static void test_import__apery_book_same_as_its_db2016_twin(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *j = ts_run_json(0, "%s import %s/a " APERY_BIN " --json --quiet", ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "positions_added"), 73);
	assert_int_equal(ts_jint(j, "moves_added"), 73);
	assert_int_equal(ts_jint(j, "errors_total"), 0);
	assert_int_equal(ts_jint(j, "unreached"), 0);
	assert_int_equal(ts_jint(j, "depth0_positions"), 73); /* Apery keeps no depth */
	json_decref(j);
	/* Said in the text: a depth-0 position is a leaf under minimax's default
	 * --min-depth, so an imported book's values went nowhere, unsaid. */
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(&out, &err, "%s import %s/a2 " APERY_BIN " --quiet", ts_joseki(), dir), 0);
	if (!strstr(err, "import: 73 positions came with no depth (depth 0): minimax backs no "
	                 "value up through a position analysed below its --min-depth (default 1); "
	                 "to back values up through them: joseki minimax BOOK --min-depth 0\n"))
		fail_msg("the depth-0 positions not said: %s", err);
	free(out), free(err);
	j = ts_run_json(0, "%s import %s/d " APERY_DB " --json --quiet", ts_joseki(), dir);
	assert_int_equal(ts_jint(j, "positions_added"), 73);
	assert_int_equal(ts_jint(j, "errors_total"), 0); /* its byte-order mark is no error */
	json_decref(j);
	/* Every position of the DB2016 book: the same moves and evaluations. */
	char *db = ts_read_file(APERY_DB, NULL);
	int n = 0;
	for (char *line = strtok(db, "\r\n"); line; line = strtok(NULL, "\r\n")) {
		if (strncmp(line, "sfen ", 5)) continue;
		char *a = query_moves(dir, "a", line), *d = query_moves(dir, "d", line);
		if (strcmp(a, d)) fail_msg("%s: %s against %s", line, a, d);
		assert_non_null(strstr(a, "\"in_book\": true"));
		free(a);
		free(d);
		n++;
	}
	assert_int_equal(n, 73);
	free(db);
	/* Exported as an Apery book, either gives the original file byte for byte. */
	for (int k = 0; k < 2; k++) {
		char out[4300];
		snprintf(out, sizeof out, "%s/%c.bin", dir, "ad"[k]);
		j = ts_run_json(0, "%s export %s/%c %s --moves all --json", ts_joseki(), dir,
		                "ad"[k], out);
		assert_int_equal(ts_jint(j, "entries"), 73);
		assert_int_equal(ts_jint(j, "collisions"), 0);
		json_decref(j);
		size_t la, lb;
		char *x = ts_read_file(out, &la), *y = ts_read_file(APERY_BIN, &lb);
		assert_int_equal(la, lb);
		assert_memory_equal(x, y, la);
		free(x);
		free(y);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_import__apery_round_trip_of_a_synthetic_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/s --positions 3000 --seed 7", ts_joseki(), dir), 0);
	for (int k = 0; k < 2; k++) {
		json_t *j =
		    ts_run_json(0, "%s export %s/%s %s/%s.bin --format apery --moves all --json",
		                ts_joseki(), dir, k ? "t" : "s", dir, k ? "t" : "s");
		assert_int_equal(ts_jint(j, "positions"), 3000);
		json_decref(j);
		if (k) break;
		j = ts_run_json(0, "%s import %s/t %s/s.bin --json --quiet", ts_joseki(), dir, dir);
		assert_int_equal(ts_jint(j, "positions_added"), 3000);
		assert_int_equal(ts_jint(j, "errors_total"), 0);
		json_decref(j);
	}
	char a[4300], b[4300];
	snprintf(a, sizeof a, "%s/s.bin", dir);
	snprintf(b, sizeof b, "%s/t.bin", dir);
	size_t la, lb;
	char *x = ts_read_file(a, &la), *y = ts_read_file(b, &lb);
	assert_true(la > 3000 * 16);
	assert_int_equal(la, lb);
	assert_memory_equal(x, y, la);
	/* sorted by key, as Apery's binary search needs */
	for (size_t i = 16; i < la; i += 16) {
		uint64_t k0 = 0, k1 = 0;
		for (int c = 7; c >= 0; c--) {
			k0 = k0 << 8 | (unsigned char)x[i - 16 + (size_t)c];
			k1 = k1 << 8 | (unsigned char)x[i + (size_t)c];
		}
		assert_true(k0 <= k1);
	}
	free(x);
	free(y);
	ts_rmtree(dir);
	free(dir);
}

static void test_import__apery_bad_files(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	/* not a whole number of entries */
	snprintf(path, sizeof path, "%s/short.bin", dir);
	assert_int_equal(ts_write_file(path, "0123456789", 10), 0);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s import %s/b %s", ts_joseki(), dir, path), 1);
	assert_non_null(strstr(err, "not an Apery book"));
	free(out);
	free(err);
	/* an entry whose move is not legal where its key leads, and one nothing reaches */
	size_t len;
	char *book = ts_read_file(APERY_BIN, &len);
	char *more = malloc(len + 16);
	memcpy(more, book, len);
	memset(more + len, 0x5a, 16);
	/* the start position's entry, 2g2f (15 << 7 | 14), made 5e5d (40 << 7 | 39) */
	int patched = 0;
	for (size_t i = 0; i < len; i += 16)
		if ((unsigned char)more[i + 8] == 0x8e && (unsigned char)more[i + 9] == 0x07) {
			more[i + 8] = 0x27;
			more[i + 9] = 0x14;
			patched++;
		}
	assert_int_equal(patched, 1);
	snprintf(path, sizeof path, "%s/odd.bin", dir);
	assert_int_equal(ts_write_file(path, more, len + 16), 0);
	json_t *j = ts_run_json(0, "%s import %s/c %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "unreached"), 1);
	assert_int_equal(ts_jint(j, "positions_added"), 72); /* the rest is still found */
	json_t *errs = json_object_get(j, "errors");
	assert_int_equal(json_array_size(errs), 2);
	assert_non_null(
	    strstr(json_string_value(json_object_get(json_array_get(errs, 0), "message")),
	           "move 0x1427 is not legal in lnsgkgsnl/1r5b1/ppppppppp/9/9/9/"));
	assert_non_null(
	    strstr(json_string_value(json_object_get(json_array_get(errs, 1), "message")),
	           "1 of 74 entries are not on a line"));
	json_decref(j);
	free(book);
	free(more);
	ts_rmtree(dir);
	free(dir);
}

/* An ImportProgressFn. */
static void count_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	assert_true(!strcmp(phase, "done") ? total == done : total == 0);
	ts_progress_note(ctx, phase, done);
}

/* import_db2016 and import_apery report through their callback (every
 * 65536th position, then "done" with the count), and print nothing without
 * one. */
static void test_import__progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char db16[4200], path[4200], errf[4200];
	snprintf(db16, sizeof db16, "%s/big.db", dir);
	snprintf(errf, sizeof errf, "%s/stderr", dir);
	/* 70000 records (of one position): past one report */
	FILE *f = fopen(db16, "w");
	assert_non_null(f);
	fputs("#YANEURAOU-DB2016 1.00\n", f);
	for (int i = 0; i < 70000; i++)
		fprintf(f,
		        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
		        "7g7f none %d 5\n",
		        i % 100);
	fclose(f);
	for (int quiet = 0; quiet < 2; quiet++) {
		snprintf(path, sizeof path, "%s/book%d", dir, quiet);
		BookDB *db;
		assert_int_equal(bookdb_open(&db, path, NULL, NULL), 0);
		TsProgress *r16 = ts_progress_new(), *rap = ts_progress_new();
		IngestStats st16, stap;
		int saved = ts_stderr_begin(errf);
		int rc16 = import_db2016(&st16, db, db16, BOOKDB_PREFER_DEEPER,
		                         quiet ? NULL : count_progress, r16);
		int rcap = import_apery(&stap, db, "tests/data/apery/apery.bin",
		                        BOOKDB_PREFER_DEEPER, quiet ? NULL : count_progress, rap);
		char *err = ts_stderr_end(saved, errf);
		assert_int_equal(rc16, 0);
		assert_int_equal(rcap, 0);
		assert_string_equal(err, "");
		free(err);
		static const char *const phases[] = {"positions", "done", NULL};
		if (!quiet) {
			ts_progress_check(r16, phases);
			assert_int_equal(r16->n, 2);
			assert_int_equal(r16->done[0], 65536);
			assert_int_equal(ts_progress_last(r16), 70000);
			ts_progress_check(rap, phases);
			assert_true(stap.positions_added > 0);
			assert_int_equal(ts_progress_last(rap), stap.positions_added);
		} else {
			assert_int_equal(r16->n + rap->n, 0);
		}
		ingest_stats_free(&st16);
		ingest_stats_free(&stap);
		free(r16);
		free(rap);
		bookdb_free(db);
	}
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_import__every_variant_of_the_format),
	    cmocka_unit_test(test_import__fixture_books_import_cleanly),
	    cmocka_unit_test(test_import__a_file_that_is_no_book_says_why),
	    cmocka_unit_test(test_import__a_position_the_book_cannot_hold_is_skipped_alone),
	    cmocka_unit_test(test_import__several_files_prefer_deeper_first_or_last),
	    cmocka_unit_test(test_import__apery_book_same_as_its_db2016_twin),
	    cmocka_unit_test(test_import__apery_round_trip_of_a_synthetic_book),
	    cmocka_unit_test(test_import__apery_bad_files),
	    cmocka_unit_test(test_import__progress_goes_to_the_callback_and_null_is_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
