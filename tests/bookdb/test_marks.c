/*
 * tests/bookdb/test_marks.c — hand marks on book moves (joseki avoid, joseki
 * prefer, bookdb/marks.h) over real LMDB books and the real joseki binary:
 * a mark is kept with its source, note and time and shown by query; --undo
 * takes exactly it off (the record's bytes as before, no entry left) and
 * prune --undo leaves hand marks; an avoided move is never played by usi
 * --book nor match, a preferred one is where it is valued within its window
 * and not outside it; the marks survive minimax (whole and incremental),
 * export, merge and backup; the record codec round-trips preferences and
 * refuses a move both avoided and preferred.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "bookdb/marks.h"
#include "bookdb/query.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* The start position: four analysed moves; 7g7f is the best. */
#define START_MOVES "7g7f:100 6g6f:90 2g2f:80 5g5f:30"

static json_t *query(const char *book, const char *spec)
{
	return ts_run_json(0, "%s query %s '%s' --json", ts_joseki(), book, spec);
}

static json_t *move_of(json_t *q, const char *usi)
{
	json_t *m;
	size_t i;
	json_array_foreach(json_object_get(q, "moves"), i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "move")), usi)) return m;
	}
	fail_msg("%s is not among the moves", usi);
	return NULL;
}

static const char *bestmove(json_t *q)
{
	json_t *b = json_object_get(q, "bestmove");
	return b ? json_string_value(b) : "";
}

/* What `joseki usi --book` plays at the start ("" when its engine searched). */
static char *usi_book_move(const char *book)
{
	char *out = NULL;
	assert_int_equal(
	    ts_runf(&out, NULL,
	            "printf 'usi\\nisready\\nposition startpos\\ngo depth 1\\nquit\\n' "
	            "| %s usi --book %s",
	            ts_joseki(), book),
	    0);
	const char *b = strstr(out, "info string book move ");
	char *m = strdup("");
	if (b) {
		b += strlen("info string book move ");
		free(m);
		m = strndup(b, strcspn(b, " \n"));
	}
	free(out);
	return m;
}

/* The first move A plays as Black in a match from the start with book ("":
 * none from its book). */
static char *match_first_move(const char *book)
{
	json_t *o = ts_run_json(0,
	                        "%s match --engine-a builtin --engine-b builtin --book-a %s "
	                        "--games 2 --nodes 200 --max-moves 2 --json --quiet",
	                        ts_joseki(), book);
	json_t *g;
	size_t i;
	char *m = NULL;
	json_array_foreach(json_object_get(o, "results"), i, g)
	{
		if (strcmp(json_string_value(json_object_get(g, "a_color")), "black")) continue;
		json_t *bp = json_object_get(g, "book_plies");
		const char *moves = json_string_value(json_object_get(g, "moves"));
		const char *first = strstr(moves, "moves ") + 6;
		m = json_integer_value(json_array_get(bp, 0)) > 0
		        ? strndup(first, strcspn(first, " "))
		        : strdup("");
	}
	json_decref(o);
	assert_non_null(m);
	return m;
}

static void run_ok(const char *fmt, const char *book, const char *rest)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, fmt, ts_joseki(), book, rest);
	if (rc) fail_msg("exit %d: %s%s", rc, out, err);
	free(out);
	free(err);
}

/* The raw bytes of the start position's record, and the marks entries. */
static uint8_t *start_record(const char *book, size_t *len, uint64_t *entries)
{
	BookDB *db;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &ro, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	Position pos;
	pos_set_startpos(&pos);
	const uint8_t *v;
	assert_int_equal(bookdb_get_raw(&v, len, t, pos_key(&pos)), 0);
	uint8_t *copy = malloc(*len);
	memcpy(copy, v, *len);
	assert_int_equal(bookdb_count(entries, t, BOOKDB_MARKS), 0);
	bookdb_txn_abort(t);
	bookdb_free(db);
	return copy;
}

static void
test_marks__a_mark_is_kept_with_its_note_and_time_and_undo_takes_exactly_it_off(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	size_t len0, len;
	uint64_t entries;
	uint8_t *before = start_record(book, &len0, &entries);
	assert_int_equal(entries, 0);
	long long t0 = (long long)time(NULL);
	/* Without minimax: the record's bytes are compared after --undo. */
	run_ok("%s avoid %s startpos 7g7f --note 'loses to ▲７六歩 △３四歩' --no-minimax%s", book,
	       "");
	long long t1 = (long long)time(NULL);
	json_t *q = query(book, "startpos");
	assert_string_equal(bestmove(q), "6g6f");
	json_t *m = move_of(q, "7g7f");
	assert_true(json_is_true(json_object_get(m, "avoided")));
	json_t *mk = json_object_get(m, "mark");
	assert_string_equal(json_string_value(json_object_get(mk, "kind")), "avoid");
	assert_string_equal(json_string_value(json_object_get(mk, "source")), "hand");
	assert_string_equal(json_string_value(json_object_get(mk, "note")),
	                    "loses to ▲７六歩 △３四歩");
	long long when = ts_jint(mk, "time");
	assert_true(when >= t0 && when <= t1);
	json_decref(q);
	/* The text form names the mark too. */
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s query %s startpos", ts_joseki(), book), 0);
	assert_non_null(strstr(out, "avoided (hand, "));
	assert_non_null(strstr(out, ": loses to ▲７六歩 △３四歩)"));
	free(out);

	/* A prune mark beside it: prune --undo takes prune's off, not the hand mark. */
	run_ok("%s prefer %s startpos 2g2f --note 'my style' --no-minimax%s", book, "");
	char games[700];
	snprintf(games, sizeof games, "%s/lost.csa", dir);
	static const char LOST[] = "V2.2\nN+book\nN-other\nPI\n+\n+5756FU\n-3334FU\n%TORYO\n";
	assert_int_equal(ts_write_file(games, LOST, sizeof LOST - 1), 0);
	run_ok("%s prune %s %s --book-side black --min-games 1", book, games);
	q = query(book, "startpos");
	mk = json_object_get(move_of(q, "5g5f"), "mark");
	assert_string_equal(json_string_value(json_object_get(mk, "source")), "prune");
	assert_non_null(strstr(json_string_value(json_object_get(mk, "note")), "in 1 game "));
	json_decref(q);
	/* A hand mark over prune's stays through prune --undo, which makes its
	 * own --undo forget prune's: the move is then unmarked. */
	run_ok("%s prefer %s startpos 5g5f --note 'over prune' --no-minimax%s", book, "");
	run_ok("%s prune %s --undo%s", book, "");
	q = query(book, "startpos");
	mk = json_object_get(move_of(q, "5g5f"), "mark");
	assert_string_equal(json_string_value(json_object_get(mk, "source")), "hand");
	assert_string_equal(json_string_value(json_object_get(mk, "kind")), "prefer");
	json_decref(q);
	run_ok("%s prefer %s startpos 5g5f --undo --no-minimax%s", book, "");
	q = query(book, "startpos");
	assert_null(json_object_get(move_of(q, "5g5f"), "mark"));
	assert_null(json_object_get(move_of(q, "5g5f"), "avoided"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(move_of(q, "7g7f"), "mark"), "note")),
	    "loses to ▲７六歩 △３四歩");
	assert_true(json_is_true(json_object_get(move_of(q, "2g2f"), "preferred")));
	json_decref(q);

	/* --undo of the other kind is refused and names the move; the right
	 * kind takes exactly the mark off: the record as it was, no entry. */
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s prefer %s startpos 7g7f --undo", ts_joseki(), book), 1);
	assert_non_null(strstr(err, "7g7f carries no prefer mark"));
	free(err);
	run_ok("%s avoid %s startpos 7g7f --undo --no-minimax%s", book, "");
	run_ok("%s prefer %s startpos ２六歩 --undo --no-minimax%s", book, "");
	uint8_t *after = start_record(book, &len, &entries);
	assert_int_equal(entries, 0);
	assert_int_equal(len, len0);
	assert_memory_equal(after, before, len0);
	free(after);
	free(before);
	/* A move not legal there, a note that is not text: clear errors. */
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s avoid %s startpos 7g6f", ts_joseki(), book), 2);
	assert_non_null(strstr(err, "'7g6f' is not a legal move in startpos"));
	free(err);
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err,
	                         "%s avoid %s startpos 7g7f --note \"$(printf 'a\\001b')\"",
	                         ts_joseki(), book),
	                 2);
	assert_non_null(strstr(err, "--note is not UTF-8 text"));
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

static void
test_marks__an_avoided_move_is_never_played_and_a_preferred_one_within_its_window(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	run_ok("%s minimax %s --quiet%s", book, "");
	char *m = usi_book_move(book);
	assert_string_equal(m, "7g7f");
	free(m);
	/* Avoided: neither usi --book nor match plays it. */
	run_ok("%s avoid %s startpos 7g7f%s", book, "");
	m = usi_book_move(book);
	assert_string_equal(m, "6g6f");
	free(m);
	m = match_first_move(book);
	assert_string_equal(m, "6g6f");
	free(m);
	/* Preferred within its window (80 is at most 50 below 90): played. */
	run_ok("%s prefer %s startpos 2g2f%s", book, "");
	m = usi_book_move(book);
	assert_string_equal(m, "2g2f");
	free(m);
	m = match_first_move(book);
	assert_string_equal(m, "2g2f");
	free(m);
	/* 5g5f (30) is 60 below the best (90): not with a window of 50, with 60. */
	run_ok("%s prefer %s startpos 2g2f --undo%s", book, "");
	run_ok("%s prefer %s startpos 5g5f --window 50%s", book, "");
	m = usi_book_move(book);
	assert_string_equal(m, "6g6f");
	free(m);
	json_t *q = query(book, "startpos");
	assert_string_equal(bestmove(q), "6g6f");
	json_decref(q);
	run_ok("%s prefer %s startpos 5g5f --window 60%s", book, "");
	m = usi_book_move(book);
	assert_string_equal(m, "5g5f");
	free(m);
	m = match_first_move(book);
	assert_string_equal(m, "5g5f");
	free(m);
	/* Avoiding a preferred move replaces the mark: never played. */
	run_ok("%s avoid %s startpos 5g5f%s", book, "");
	q = query(book, "startpos");
	assert_string_equal(bestmove(q), "6g6f");
	assert_null(json_object_get(move_of(q, "5g5f"), "preferred"));
	json_decref(q);
	/* Every move avoided: no book move at all. */
	run_ok("%s avoid %s startpos 6g6f%s", book, "");
	run_ok("%s avoid %s startpos 2g2f%s", book, "");
	m = usi_book_move(book);
	assert_string_equal(m, "");
	free(m);
	ts_rmtree(dir);
	free(dir);
}

/* The start position's marks as "move kind source note" lines. */
static char *marks_text(const char *book)
{
	json_t *q = query(book, "startpos"), *m;
	char *text = calloc(1, 4096);
	size_t i;
	json_array_foreach(json_object_get(q, "moves"), i, m)
	{
		json_t *mk = json_object_get(m, "mark");
		if (!mk) continue;
		json_t *note = json_object_get(mk, "note");
		snprintf(text + strlen(text), 4096 - strlen(text), "%s %s %s %s %lld\n",
		         json_string_value(json_object_get(m, "move")),
		         json_string_value(json_object_get(mk, "kind")),
		         json_string_value(json_object_get(mk, "source")),
		         note ? json_string_value(note) : "-",
		         json_object_get(mk, "window") ? ts_jint(mk, "window") : -1);
	}
	json_decref(q);
	return text;
}

static void test_marks__marks_survive_minimax_export_merge_and_backup(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], path[700];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	ts_plant(book, "startpos moves 6g6f", "3c3d:-20 8c8d:-40", 12);
	run_ok("%s minimax %s --full --quiet%s", book, "");
	run_ok("%s avoid %s startpos 5g5f --note 'too slow'%s", book, "");
	run_ok("%s prefer %s startpos 2g2f --window 70 --note 'sharp'%s", book, "");
	char *want = marks_text(book);
	assert_string_equal(want, "2g2f prefer hand sharp 70\n5g5f avoid hand too slow -1\n");
	/* minimax, whole and incremental. */
	run_ok("%s minimax %s --full --quiet%s", book, "");
	char *got = marks_text(book);
	assert_string_equal(got, want);
	free(got);
	ts_plant(book, "startpos moves 6g6f", "3c3d:-20 8c8d:-60", 12);
	run_ok("%s minimax %s --quiet%s", book, "");
	got = marks_text(book);
	assert_string_equal(got, want);
	free(got);
	/* export: the avoided move left out, the preferred one first and the
	 * better one above it (7g7f) left out, since an engine plays the highest
	 * value; 6g6f (20 after minimax: 3c3d is -20) below it stays; with
	 * --with-avoided the avoided one comes too. */
	snprintf(path, sizeof path, "%s/out.db", dir);
	run_ok("%s export %s %s --moves all --quiet", book, path);
	char *text = ts_read_file(path, NULL);
	const char *start =
	    strstr(text, "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b");
	assert_non_null(start);
	const char *line = strchr(start, '\n') + 1;
	assert_int_equal(strncmp(line, "2g2f none 80 ", 13), 0);
	line = strchr(line, '\n') + 1;
	assert_int_equal(strncmp(line, "6g6f 3c3d 20 ", 13), 0);
	const char *next = strchr(line, '\n') + 1;
	assert_true(*next == 0 || !strncmp(next, "sfen", 4));
	free(text);
	run_ok("%s export %s %s --moves all --with-avoided --quiet", book, path);
	text = ts_read_file(path, NULL);
	assert_non_null(strstr(text, "\n5g5f "));
	assert_null(strstr(text, "\n7g7f "));
	free(text);
	/* merge into a new book, and into one with its own note on 2g2f (kept). */
	char other[700];
	snprintf(other, sizeof other, "%s/merged", dir);
	run_ok("%s merge %s %s --quiet", other, book);
	got = marks_text(other);
	assert_string_equal(got, want);
	free(got);
	snprintf(other, sizeof other, "%s/own", dir);
	ts_plant(other, "startpos", START_MOVES, 12);
	run_ok("%s prefer %s startpos 2g2f --window 70 --note 'mine'%s", other, "");
	run_ok("%s merge %s %s --quiet", other, book);
	got = marks_text(other);
	assert_string_equal(got, "2g2f prefer hand mine 70\n5g5f avoid hand too slow -1\n");
	free(got);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), other), 0);
	/* backup. */
	snprintf(other, sizeof other, "%s/backup", dir);
	run_ok("%s backup %s %s", book, other);
	got = marks_text(other);
	assert_string_equal(got, want);
	free(got);
	free(want);
	ts_rmtree(dir);
	free(dir);
}

/* A USI move that parses but is not legal is refused with the rule it
 * breaks (not as a Japanese move without a square), nothing written. */
static void test_marks__an_illegal_move_is_refused_with_the_rule_it_breaks(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	static const struct {
		const char *pos, *move, *why;
	} cases[] = {
	    {"startpos", "3c3d", "(the pawn on 3c is White's, and Black is to move)"},
	    {"startpos", "7g7e", "(the pawn on 7g cannot move to 7e)"},
	    {"startpos moves 7g7f 3c3d 8h2b", "2g2f",
	     "(the pawn on 2g is Black's, and White is to move)"},
	    {"sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1", "5a4a",
	     "(the game is over: White, to move, is checkmated)"},
	    {"startpos", "７五歩", "(Black has no pawn that can move to 7e)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *err = NULL;
		assert_int_equal(ts_runf(NULL, &err, "%s avoid %s '%s' %s", ts_joseki(), book,
		                         cases[i].pos, cases[i].move),
		                 2);
		char want[300];
		snprintf(want, sizeof want, "'%s' is not a legal move in %s %s", cases[i].move,
		         cases[i].pos, cases[i].why);
		if (!strstr(err, want)) fail_msg("%s: not '%s'", err, want);
		assert_null(strstr(err, "no square in the move"));
		free(err);
	}
	size_t len;
	uint64_t entries;
	free(start_record(book, &len, &entries));
	assert_int_equal(entries, 0);
	ts_rmtree(dir);
	free(dir);
}

/* The position after 6g6f: White's two analysed replies (-20 the best). */
#define AFTER_6G6F "startpos moves 6g6f"

/* Whether the export of book (--moves all) writes move as a move of the
 * position after 6g6f. */
static bool exported_after_6g6f(const char *book, const char *dir, const char *move)
{
	char path[700];
	snprintf(path, sizeof path, "%s/out.db", dir);
	run_ok("%s export %s %s --moves all --quiet", book, path);
	char *text = ts_read_file(path, NULL);
	const char *at =
	    strstr(text, "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/3P5/PPP1PPPPP/1B5R1/LNSGKGSNL w");
	if (!at) { /* no move of it exported */
		free(text);
		return false;
	}
	const char *end = strstr(at + 4, "\nsfen ");
	size_t n = end ? (size_t)(end - at) : strlen(at);
	char *block = strndup(at, n), want[32];
	snprintf(want, sizeof want, "\n%s ", move);
	bool found = strstr(block, want) != NULL;
	free(block);
	free(text);
	return found;
}

/* An analysis of move in spec's record, as think writes it (the rest of the
 * record, its marks included, as it is). */
static void analyse(const char *book, const char *spec, const char *usi, int eval)
{
	Position pos;
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	BookRecord *rec = malloc(sizeof *rec);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_get(rec, t, pos_key(&pos)), 0);
	Move mv;
	assert_int_equal(usi_move_parse(&mv, usi, strlen(usi), NULL), 0);
	BookMove *m = NULL;
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == mv) m = &rec->moves[i];
	assert_non_null(m);
	m->flags |= BOOKDB_MOVE_EVAL;
	m->eval = (int16_t)eval;
	m->depth = 12;
	assert_int_equal(bookdb_put(t, pos_key(&pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	free(rec);
}

/* A legal move the record lacks, added by a mark, is unvalued until an
 * analysis or minimax values it: shown without a value (why: not analysed),
 * never the best move, never exported; where no move of the position is
 * valued the book has no move there. With and without --no-minimax, and after
 * minimax. */
static void test_marks__a_move_a_mark_adds_is_unvalued_until_valued(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	ts_plant(book, AFTER_6G6F, "3c3d:-20 8c8d:-40", 12);
	run_ok("%s minimax %s --full --quiet%s", book, "");
	for (int with_minimax = 0; with_minimax < 2; with_minimax++) {
		const char *mm = with_minimax ? "" : " --no-minimax";
		/* Preferred: within its window of -20 were 0 a value, so played. */
		run_ok("%s prefer %s '" AFTER_6G6F "' 9c9d%s", book, mm);
		json_t *q = query(book, AFTER_6G6F);
		assert_string_equal(bestmove(q), "3c3d");
		assert_int_equal(ts_jint(q, "value"), -20);
		json_t *m = move_of(q, "9c9d");
		assert_true(json_is_null(json_object_get(m, "value")));
		assert_null(json_object_get(m, "value_source"));
		assert_string_equal(json_string_value(json_object_get(m, "unvalued")),
		                    "not analysed");
		assert_true(json_is_true(json_object_get(m, "preferred")));
		json_decref(q);
		char *out = NULL;
		assert_int_equal(
		    ts_runf(&out, NULL, "%s query %s '" AFTER_6G6F "'", ts_joseki(), book), 0);
		const char *line = strstr(out, "\n9c9d ");
		assert_non_null(line);
		assert_non_null(strstr(line, "unvalued: not analysed"));
		assert_null(strstr(line, "minimax"));
		free(out);
		assert_false(exported_after_6g6f(book, dir, "9c9d"));
		assert_true(exported_after_6g6f(book, dir, "3c3d"));
		/* Every valued move avoided: no book move there, the added one
		 * included (it is no value of the position either). */
		run_ok("%s avoid %s '" AFTER_6G6F "' 3c3d%s", book, mm);
		run_ok("%s avoid %s '" AFTER_6G6F "' 8c8d%s", book, mm);
		q = query(book, AFTER_6G6F);
		assert_null(json_object_get(q, "bestmove"));
		assert_null(json_object_get(q, "value"));
		json_decref(q);
		assert_false(exported_after_6g6f(book, dir, "9c9d"));
		/* minimax afterwards (whole book): still unvalued. */
		run_ok("%s minimax %s --full --quiet%s", book, "");
		q = query(book, AFTER_6G6F);
		assert_null(json_object_get(q, "bestmove"));
		assert_true(json_is_null(json_object_get(move_of(q, "9c9d"), "value")));
		json_decref(q);
		run_ok("%s avoid %s '" AFTER_6G6F "' 3c3d --undo%s", book, mm);
		run_ok("%s avoid %s '" AFTER_6G6F "' 8c8d --undo%s", book, mm);
		run_ok("%s prefer %s '" AFTER_6G6F "' 9c9d --undo%s", book, mm);
		run_ok("%s minimax %s --full --quiet%s", book, "");
	}
	/* Once analysed it is valued and, preferred within its window, played. */
	run_ok("%s prefer %s '" AFTER_6G6F "' 9c9d --no-minimax%s", book, "");
	analyse(book, AFTER_6G6F, "9c9d", -50);
	run_ok("%s minimax %s --full --quiet%s", book, "");
	json_t *q = query(book, AFTER_6G6F);
	assert_string_equal(bestmove(q), "9c9d");
	assert_int_equal(ts_jint(move_of(q, "9c9d"), "value"), -50);
	json_decref(q);
	assert_true(exported_after_6g6f(book, dir, "9c9d"));
	ts_rmtree(dir);
	free(dir);
}

/* A move valued only through the position it leads to (no analysis of its
 * own: games played it) has no value once avoided, even --with-avoided:
 * minimax backs nothing up through an avoided move. query says so, not
 * "game comment only". */
static void test_marks__an_avoided_move_valued_only_by_its_child_is_unvalued(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", "7g7f:100 2g2f:-:3", 12);
	ts_plant(book, "startpos moves 2g2f", "8c8d:-150", 12);
	run_ok("%s minimax %s --full --quiet%s", book, "");
	json_t *q = query(book, "startpos");
	assert_string_equal(bestmove(q), "2g2f");
	assert_int_equal(ts_jint(move_of(q, "2g2f"), "value"), 150);
	json_decref(q);
	run_ok("%s avoid %s startpos 2g2f%s", book, "");
	for (int with = 0; with < 2; with++) {
		q = ts_run_json(0, "%s query %s startpos --json%s", ts_joseki(), book,
		                with ? " --with-avoided" : "");
		assert_string_equal(bestmove(q), "7g7f");
		json_t *m = move_of(q, "2g2f");
		assert_true(json_is_null(json_object_get(m, "value")));
		assert_string_equal(
		    json_string_value(json_object_get(m, "unvalued")),
		    "avoided: no analysis of its own, and minimax backs none up through it");
		json_decref(q);
	}
	ts_rmtree(dir);
	free(dir);
}

/* The start position's query as JSON text. */
static char *query_text(const char *book)
{
	json_t *q = query(book, "startpos");
	char *t = json_dumps(q, JSON_SORT_KEYS);
	json_decref(q);
	return t;
}

/* Whether the start position's record and the marks database are what they
 * were (bytes, entries) and query says the same. */
static void assert_as_before(const char *book, const uint8_t *rec0, size_t len0, uint64_t entries0,
                             const char *query0, const char *what)
{
	size_t len;
	uint64_t entries;
	uint8_t *rec = start_record(book, &len, &entries);
	char *q = query_text(book);
	if (len != len0 || memcmp(rec, rec0, len0) || entries != entries0 || strcmp(q, query0))
		fail_msg("%s: not as before the mark:\n%s\nbefore:\n%s", what, q, query0);
	free(q);
	free(rec);
}

/* --undo restores the record the mark found: for avoid and prefer, on a move
 * the record had and one it lacked (taken out again), with and without
 * minimax; a mark that replaced another kind's brings that one back with its
 * note; a move the mark added and an analysis valued since stays. */
static void test_marks__undo_restores_the_record_the_mark_found(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	run_ok("%s minimax %s --full --quiet%s", book, "");
	size_t len0;
	uint64_t entries0;
	uint8_t *rec0 = start_record(book, &len0, &entries0);
	char *query0 = query_text(book);
	static const char *const KINDS[] = {"avoid", "prefer"};
	static const char *const MOVES[] = {"7g7f", "8g8f"}; /* had, lacked */
	for (int k = 0; k < 2; k++)
		for (int mv = 0; mv < 2; mv++)
			for (int mm = 0; mm < 2; mm++) {
				const char *opt = mm ? "" : " --no-minimax";
				char what[64], rest[64];
				snprintf(what, sizeof what, "%s %s%s", KINDS[k], MOVES[mv], opt);
				snprintf(rest, sizeof rest, "%s --note n%s", MOVES[mv], opt);
				char *out = NULL, *err = NULL;
				if (ts_runf(&out, &err, "%s %s %s startpos %s", ts_joseki(),
				            KINDS[k], book, rest))
					fail_msg("%s: %s", what, err);
				free(out);
				free(err);
				json_t *q = query(book, "startpos");
				json_t *mark = json_object_get(move_of(q, MOVES[mv]), "mark");
				assert_string_equal(
				    json_string_value(json_object_get(mark, "kind")), KINDS[k]);
				json_decref(q);
				snprintf(rest, sizeof rest, "%s --undo%s", MOVES[mv], opt);
				out = err = NULL;
				if (ts_runf(&out, &err, "%s %s %s startpos %s", ts_joseki(),
				            KINDS[k], book, rest))
					fail_msg("%s --undo: %s", what, err);
				free(out);
				free(err);
				assert_as_before(book, rec0, len0, entries0, query0, what);
			}
	/* A mark replaced by the other kind comes back with its note and time. */
	run_ok("%s avoid %s startpos 6g6f --note 'first' --no-minimax%s", book, "");
	json_t *q = query(book, "startpos");
	long long t0 = ts_jint(json_object_get(move_of(q, "6g6f"), "mark"), "time");
	json_decref(q);
	run_ok("%s prefer %s startpos 6g6f --note 'second' --window 70 --no-minimax%s", book, "");
	run_ok("%s avoid %s startpos 6g6f --note 'third' --no-minimax%s", book, "");
	run_ok("%s avoid %s startpos 6g6f --undo --no-minimax%s", book, "");
	q = query(book, "startpos");
	json_t *mk = json_object_get(move_of(q, "6g6f"), "mark");
	assert_string_equal(json_string_value(json_object_get(mk, "kind")), "prefer");
	assert_string_equal(json_string_value(json_object_get(mk, "note")), "second");
	assert_int_equal(ts_jint(mk, "window"), 70);
	json_decref(q);
	run_ok("%s prefer %s startpos 6g6f --undo --no-minimax%s", book, "");
	q = query(book, "startpos");
	mk = json_object_get(move_of(q, "6g6f"), "mark");
	assert_string_equal(json_string_value(json_object_get(mk, "kind")), "avoid");
	assert_string_equal(json_string_value(json_object_get(mk, "note")), "first");
	assert_int_equal(ts_jint(mk, "time"), t0);
	json_decref(q);
	run_ok("%s avoid %s startpos 6g6f --undo --no-minimax%s", book, "");
	assert_as_before(book, rec0, len0, entries0, query0, "avoid, prefer, avoid 6g6f undone");
	/* On a move it added: the move goes with the last undo. */
	run_ok("%s avoid %s startpos 8g8f --no-minimax%s", book, "");
	run_ok("%s prefer %s startpos 8g8f --no-minimax%s", book, "");
	run_ok("%s prefer %s startpos 8g8f --undo --no-minimax%s", book, "");
	q = query(book, "startpos");
	assert_true(json_is_true(json_object_get(move_of(q, "8g8f"), "avoided")));
	json_decref(q);
	run_ok("%s avoid %s startpos 8g8f --undo --no-minimax%s", book, "");
	assert_as_before(book, rec0, len0, entries0, query0, "avoid, prefer 8g8f undone");
	/* Analysed since the mark added it: the move and its analysis stay. */
	run_ok("%s prefer %s startpos 8g8f --no-minimax%s", book, "");
	analyse(book, "startpos", "8g8f", 20);
	run_ok("%s prefer %s startpos 8g8f --undo%s", book, "");
	q = query(book, "startpos");
	json_t *m = move_of(q, "8g8f");
	assert_int_equal(ts_jint(m, "eval"), 20);
	assert_null(json_object_get(m, "mark"));
	json_decref(q);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	free(query0);
	free(rec0);
	ts_rmtree(dir);
	free(dir);
}

/* joseki marks lists every mark of the book, hand marks and prune's: a line
 * a mark (SFEN, move, kind, source, time, note; tabs between), or one JSON
 * array; none in a book without marks. */
static void test_marks__marks_lists_every_mark_of_the_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	ts_plant(book, "startpos", START_MOVES, 12);
	ts_plant(book, AFTER_6G6F, "3c3d:-20 8c8d:-40", 12);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s marks %s", ts_joseki(), book), 0);
	assert_string_equal(out, "");
	free(out);
	json_t *a = ts_run_json(0, "%s marks %s --json", ts_joseki(), book);
	assert_true(json_is_array(a));
	assert_int_equal(json_array_size(a), 0);
	json_decref(a);
	long long t0 = (long long)time(NULL);
	run_ok("%s avoid %s startpos 7g7f --note 'loses	to ▲７六歩' --no-minimax%s", book, "");
	run_ok("%s prefer %s '" AFTER_6G6F "' 8c8d --window 70 --no-minimax%s", book, "");
	long long t1 = (long long)time(NULL);
	char games[700];
	snprintf(games, sizeof games, "%s/lost.csa", dir);
	static const char LOST[] = "V2.2\nN+book\nN-other\nPI\n+\n+5756FU\n-3334FU\n%TORYO\n";
	assert_int_equal(ts_write_file(games, LOST, sizeof LOST - 1), 0);
	run_ok("%s prune %s %s --book-side black --min-games 1", book, games);
	static const char START[] =
	    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
	                  AFTER[] =
	                      "lnsgkgsnl/1r5b1/ppppppppp/9/9/3P5/PPP1PPPPP/1B5R1/LNSGKGSNL w - 2";
	/* JSON: every mark, with its position, as query shows it. */
	a = ts_run_json(0, "%s marks %s --json", ts_joseki(), book);
	assert_int_equal(json_array_size(a), 3);
	int seen = 0;
	json_t *m;
	size_t i;
	json_array_foreach(a, i, m)
	{
		const char *sfen = json_string_value(json_object_get(m, "sfen")),
		           *move = json_string_value(json_object_get(m, "move")),
		           *kind = json_string_value(json_object_get(m, "kind")),
		           *source = json_string_value(json_object_get(m, "source")),
		           *note = json_string_value(json_object_get(m, "note"));
		long long t = ts_jint(m, "time");
		assert_true(t >= t0);
		if (!strcmp(move, "7g7f")) {
			assert_string_equal(sfen, START);
			assert_string_equal(kind, "avoid");
			assert_string_equal(source, "hand");
			assert_string_equal(note, "loses	to ▲７六歩");
			assert_true(t <= t1);
			assert_null(json_object_get(m, "window"));
			seen |= 1;
		} else if (!strcmp(move, "8c8d")) {
			assert_string_equal(sfen, AFTER);
			assert_string_equal(kind, "prefer");
			assert_int_equal(ts_jint(m, "window"), 70);
			assert_string_equal(source, "hand");
			seen |= 2;
		} else if (!strcmp(move, "5g5f")) {
			assert_string_equal(sfen, START);
			assert_string_equal(kind, "avoid");
			assert_string_equal(source, "prune");
			assert_non_null(strstr(note, "in 1 game "));
			seen |= 4;
		} else {
			fail_msg("a mark on %s", move);
		}
	}
	assert_int_equal(seen, 7);
	json_decref(a);
	/* Text: a line a mark, the fields between tabs; the SFEN is a POS that
	 * --undo takes. */
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s marks %s", ts_joseki(), book), 0);
	int lines = 0;
	for (char *l = out; *l; l = strchr(l, '\n') + 1) lines++;
	assert_int_equal(lines, 3);
	char want[400];
	snprintf(want, sizeof want, "%s\t8c8d\tprefer 70\thand\t", AFTER);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof want, "%s\t7g7f\tavoid\thand\t", START);
	char *l = strstr(out, want);
	assert_non_null(l);
	l += strlen(want);
	assert_non_null(strstr(l, " UTC\tloses	to ▲７六歩\n"));
	free(out);
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s prefer %s '%s' 8c8d --undo --no-minimax",
	                         ts_joseki(), book, AFTER),
	                 0);
	free(err);
	a = ts_run_json(0, "%s marks %s --json", ts_joseki(), book);
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
	/* A book that is not there: said, exit 1. */
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s marks %s/none", ts_joseki(), dir), 1);
	assert_non_null(strstr(err, "marks: "));
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* The codec: a preference and its window round-trip; a move both avoided
 * and preferred is refused by the encoder and, in bytes, by the decoder. */
static void
test_marks__the_record_keeps_preferences_and_refuses_both_marks_on_one_move(void **state)
{
	(void)state;
	BookRecord *rec = calloc(1, sizeof *rec), *back = calloc(1, sizeof *back);
	Position pos;
	pos_set_startpos(&pos);
	bookdb_record_init(rec, &pos);
	rec->nmoves = 3;
	rec->moves[0].move = (Move)0x1234;
	rec->moves[1].move = (Move)0x1235;
	rec->moves[1].flags = BOOKDB_MOVE_PREFERRED;
	rec->moves[1].prefer_window = 300;
	rec->moves[2].move = (Move)0x1236;
	rec->moves[2].flags = BOOKDB_MOVE_AVOIDED;
	uint8_t buf[BOOKDB_RECORD_MAX];
	int n = bookdb_record_encode(buf, sizeof buf, rec);
	assert_true(n > 0);
	assert_int_equal(buf[0], BOOKDB_REC_AVOID | BOOKDB_REC_PREFER);
	assert_int_equal(bookdb_record_decode(back, buf, (size_t)n), 0);
	assert_true(back->moves[1].flags & BOOKDB_MOVE_PREFERRED);
	assert_int_equal(back->moves[1].prefer_window, 300);
	assert_true(back->moves[2].flags & BOOKDB_MOVE_AVOIDED);
	assert_false(back->moves[0].flags & (BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED));
	/* The avoided list is [2] (3 bytes: flag byte... k=1, gap 2); pointing the
	 * preference list at index 2 too makes both marks on one move. */
	rec->moves[1].flags = BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED;
	assert_int_equal(bookdb_record_encode(buf, sizeof buf, rec), BOOKDB_EINVAL);
	rec->moves[1].flags = BOOKDB_MOVE_PREFERRED;
	n = bookdb_record_encode(buf, sizeof buf, rec);
	/* Find the preference list (k=1, gap 1, window 300 = 0xac 0x02) and
	 * point it at the avoided move (gap 2). */
	int at = -1;
	for (int i = 0; i + 3 < n; i++)
		if (buf[i] == 1 && buf[i + 1] == 1 && buf[i + 2] == 0xac && buf[i + 3] == 0x02)
			at = i;
	assert_true(at > 0);
	buf[at + 1] = 2;
	assert_int_equal(bookdb_record_decode(back, buf, (size_t)n), BOOKDB_ECORRUPT);
	free(rec);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_marks__a_mark_is_kept_with_its_note_and_time_and_undo_takes_exactly_it_off),
	    cmocka_unit_test(
	        test_marks__an_avoided_move_is_never_played_and_a_preferred_one_within_its_window),
	    cmocka_unit_test(test_marks__marks_survive_minimax_export_merge_and_backup),
	    cmocka_unit_test(
	        test_marks__the_record_keeps_preferences_and_refuses_both_marks_on_one_move),
	    cmocka_unit_test(test_marks__an_illegal_move_is_refused_with_the_rule_it_breaks),
	    cmocka_unit_test(test_marks__a_move_a_mark_adds_is_unvalued_until_valued),
	    cmocka_unit_test(test_marks__an_avoided_move_valued_only_by_its_child_is_unvalued),
	    cmocka_unit_test(test_marks__undo_restores_the_record_the_mark_found),
	    cmocka_unit_test(test_marks__marks_lists_every_mark_of_the_book),
	};
	shogi_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
