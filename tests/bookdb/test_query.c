/*
 * tests/bookdb/test_query.c — the shared book answer: moves ordered by minimax
 * value once minimax ran, else analysed moves first by eval, then by games; a
 * game comment shown but never a value; the JSON object's fields; a position
 * not in the book; a stored record read back through a real LMDB book in that
 * order.
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

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

static Position *startpos(void)
{
	Position *pos = malloc(sizeof *pos);
	char err[SHOGI_ERRLEN];
	assert_non_null(pos);
	if (position_parse(pos, "startpos", err) < 0) fail_msg("%s", err);
	return pos;
}

static Move usi(const Position *pos, const char *s)
{
	Move m;
	char err[SHOGI_ERRLEN];
	if (usi_move_parse_legal(&m, pos, s, strlen(s), err) < 0) fail_msg("%s: %s", s, err);
	return m;
}

/* A start-position record: 7g7f (eval 30, 5 games), 2g2f (eval 50, 1 game),
 * 5g5f (no eval, 9 games), 1g1f (no eval, 9 games). */
static BookRecord *record(const Position *pos)
{
	BookRecord *rec = calloc(1, sizeof *rec);
	assert_non_null(rec);
	bookdb_record_init(rec, pos);
	const char *mv[] = {"7g7f", "2g2f", "5g5f", "1g1f"};
	int eval[] = {30, 50, 0, 0}, count[] = {5, 1, 9, 9};
	for (int i = 0; i < 4; i++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		m->move = usi(pos, mv[i]);
		m->flags = BOOKDB_MOVE_STATS | (i < 2 ? BOOKDB_MOVE_EVAL : 0);
		m->eval = (int16_t)eval[i];
		m->depth = 10;
		m->count = m->wins = (uint32_t)count[i];
	}
	return rec;
}

static void expect_order(const BookRecord *rec, const char *const want[4])
{
	for (int i = 0; i < 4; i++) {
		char s[USI_MOVE_MAX];
		usi_move_write(rec->moves[i].move, s);
		assert_string_equal(s, want[i]);
	}
}

static void test_bookdb__moves_sort_by_eval_then_games_before_minimax(void **state)
{
	(void)state;
	Position *pos = startpos();
	BookRecord *rec = record(pos);
	bookdb_moves_sort(rec);
	/* 5g5f and 1g1f have the same games: the smaller move number first. */
	const char *order[4] = {"2g2f", "7g7f", NULL, NULL};
	Move a = usi(pos, "5g5f"), b = usi(pos, "1g1f");
	order[2] = a < b ? "5g5f" : "1g1f";
	order[3] = a < b ? "1g1f" : "5g5f";
	expect_order(rec, order);
	free(rec);
	free(pos);
}

static void test_bookdb__moves_sort_by_minimax_value_once_minimax_ran(void **state)
{
	(void)state;
	Position *pos = startpos();
	BookRecord *rec = record(pos);
	rec->flags |= BOOKDB_REC_MINIMAX;
	int value[] = {-5, 20, 40, -100}; /* 7g7f 2g2f 5g5f 1g1f */
	for (int i = 0; i < 4; i++) rec->moves[i].value = (int16_t)value[i];
	bookdb_moves_sort(rec);
	const char *order[4] = {"5g5f", "2g2f", "7g7f", "1g1f"};
	expect_order(rec, order);
	assert_true(bookdb_move_better(rec, &rec->moves[0], &rec->moves[3]));
	assert_false(bookdb_move_better(rec, &rec->moves[3], &rec->moves[0]));
	/* At an equal value the games decide, whatever the distance (export
	 * writes them so: test_export). */
	for (int i = 0; i < 4; i++) {
		rec->moves[i].value = 30;
		rec->moves[i].dist = (uint16_t)(i + 1);
	}
	bookdb_moves_sort(rec);
	bool five = usi(pos, "5g5f") < usi(pos, "1g1f"); /* 9 games each */
	const char *by_games[4] = {five ? "5g5f" : "1g1f", five ? "1g1f" : "5g5f", "7g7f", "2g2f"};
	expect_order(rec, by_games);
	free(rec);
	free(pos);
}

static void test_bookdb__query_reads_the_record_sorted_and_builds_its_json(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[4200], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/book", dir);
	BookDB *db;
	BookDBOptions opt = {.no_sync = true};
	if (bookdb_open(&db, path, &opt, err)) fail_msg("%s", err);
	Position *pos = startpos();
	BookRecord *rec = record(pos);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);

	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_query(rec, txn, pos), 1);
	size_t len;
	char *text = bookdb_query_json(rec, true, pos, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_int_equal(text[len - 1], '\n');
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);
	if (!o) fail_msg("not JSON (%s): %s", jerr.text, text);
	/* The same bytes as jansson's compact dump of what it read. */
	char *again = json_dumps(o, JSON_COMPACT);
	assert_int_equal(strlen(again) + 1, len);
	assert_memory_equal(again, text, len - 1);
	free(again);
	free(text);
	assert_true(json_is_true(json_object_get(o, "in_book")));
	assert_string_equal(json_string_value(json_object_get(o, "bestmove")), "2g2f");
	/* No minimax yet: the values are the moves' own analyses. */
	assert_int_equal(json_integer_value(json_object_get(o, "value")), 50);
	json_t *moves = json_object_get(o, "moves");
	assert_int_equal(json_array_size(moves), 4);
	json_t *m0 = json_array_get(moves, 0);
	assert_int_equal(json_integer_value(json_object_get(m0, "eval")), 50);
	assert_int_equal(json_integer_value(json_object_get(m0, "value")), 50);
	assert_string_equal(json_string_value(json_object_get(m0, "value_source")), "thought");
	assert_null(json_object_get(m0, "unvalued"));
	assert_int_equal(json_integer_value(json_object_get(m0, "count")), 1);
	/* each move also as a player writes it (shogi/japanese.h) */
	assert_string_equal(json_string_value(json_object_get(m0, "name")), "▲２六歩");
	json_t *m2 = json_array_get(moves, 2);
	assert_null(json_object_get(m2, "eval"));
	assert_true(json_is_null(json_object_get(m2, "value")));
	assert_string_equal(json_string_value(json_object_get(m2, "unvalued")), "not analysed");
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	assert_string_equal(json_string_value(json_object_get(o, "sfen")), sfen);
	json_decref(o);

	/* After one move the position is not in the book. */
	Move m = usi(pos, "7g7f");
	pos_do_move(pos, m);
	assert_int_equal(bookdb_query(rec, txn, pos), 0);
	assert_int_equal(rec->nmoves, 0);
	text = bookdb_query_json(rec, false, pos, NULL);
	assert_non_null(text);
	o = json_loads(text, 0, &jerr);
	free(text);
	assert_non_null(o);
	assert_true(json_is_false(json_object_get(o, "in_book")));
	assert_int_equal(json_array_size(json_object_get(o, "moves")), 0);
	assert_null(json_object_get(o, "bestmove"));
	assert_null(json_object_get(o, "ply"));
	json_decref(o);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	ts_rmtree(dir);
	free(dir);
}

/* A game comment is shown, never a value: not ranked over an analysed move,
 * never the best, null with its reason; a position whose moves only have
 * comments has no book move; the same after minimax (NOVALUE). */
static void test_bookdb__game_comments_are_shown_not_valued(void **state)
{
	(void)state;
	Position *pos = startpos();
	BookRecord *rec = record(pos);
	/* 5g5f: a bot's '** 900 on its own move. */
	rec->moves[2].flags |= BOOKDB_MOVE_EVAL;
	rec->moves[2].source = BOOKDB_SOURCE_GAME;
	rec->moves[2].eval = 900;
	bookdb_moves_sort(rec);
	const char *order[4] = {"2g2f", "7g7f", NULL, NULL};
	Move a = usi(pos, "5g5f"), b = usi(pos, "1g1f");
	order[2] = a < b ? "5g5f" : "1g1f";
	order[3] = a < b ? "1g1f" : "5g5f";
	expect_order(rec, order);
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "2g2f"));
	char *text = bookdb_query_json(rec, true, pos, NULL);
	json_t *o = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(o);
	json_t *mv = json_object_get(o, "moves"), *c = NULL;
	for (size_t i = 0; i < json_array_size(mv); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(mv, i), "move")),
		            "5g5f"))
			c = json_array_get(mv, i);
	assert_non_null(c);
	assert_true(json_is_null(json_object_get(c, "value")));
	assert_string_equal(json_string_value(json_object_get(c, "unvalued")), "game comment only");
	assert_int_equal(json_integer_value(json_object_get(c, "game_eval")), 900);
	assert_null(json_object_get(c, "eval"));
	assert_null(json_object_get(c, "value_source"));
	json_decref(o);

	/* Only comments: no book move, no bestmove. */
	for (int i = 0; i < rec->nmoves; i++) {
		rec->moves[i].flags |= BOOKDB_MOVE_EVAL;
		rec->moves[i].source = BOOKDB_SOURCE_GAME;
	}
	bookdb_moves_sort(rec);
	assert_int_equal(bookdb_best_move(rec, pos), MOVE_NONE);
	text = bookdb_query_json(rec, true, pos, NULL);
	o = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(o);
	assert_null(json_object_get(o, "bestmove"));
	assert_null(json_object_get(o, "value"));
	json_decref(o);

	/* After minimax: NOVALUE is unvalued, sorted last, never the best. */
	rec->flags |= BOOKDB_REC_MINIMAX;
	for (int i = 0; i < rec->nmoves; i++) rec->moves[i].value = INT16_MIN;
	rec->moves[3].value = -300;
	rec->moves[3].dist = 2;
	bookdb_moves_sort(rec);
	Move only = rec->moves[0].move;
	assert_int_equal(rec->moves[0].value, -300);
	assert_int_equal(bookdb_best_move(rec, pos), only);
	assert_string_equal(bookdb_value_source(rec, &rec->moves[0]), "minimax");
	assert_null(bookdb_value_source(rec, &rec->moves[1]));
	assert_string_equal(bookdb_unvalued_reason(rec, &rec->moves[1]), "game comment only");
	text = bookdb_query_json(rec, true, pos, NULL);
	o = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "value")), -300);
	json_t *last = json_array_get(json_object_get(o, "moves"), 3);
	assert_true(json_is_null(json_object_get(last, "value")));
	assert_null(json_object_get(last, "dist"));
	json_decref(o);

	/* A games-only book: the source says so, the others why not. */
	rec->flags |= BOOKDB_REC_GAMES;
	assert_string_equal(bookdb_value_source(rec, &rec->moves[0]), "games");
	assert_string_equal(bookdb_unvalued_reason(rec, &rec->moves[1]),
	                    "not chosen from the games");
	free(rec);
	free(pos);
}

/* After 7g7f 3c3d: 8h2b (the bishop left unpromoted) valued above 8h2b+ by an
 * engine that lists every move. The book plays the promotion: 8h2b goes after
 * the moves played with a value (before those without, and avoided ones), is
 * no part of the position's value,
 * and says why; it counts again when the promotion is avoided or has no
 * value. A silver's declined promotion is a move like any other. */
static void test_bookdb__a_declined_promotion_goes_after_the_moves_played(void **state)
{
	(void)state;
	Position *pos = malloc(sizeof *pos);
	char err[SHOGI_ERRLEN];
	assert_non_null(pos);
	if (position_parse(pos, "startpos moves 7g7f 3c3d", err) < 0) fail_msg("%s", err);
	BookRecord *rec = calloc(1, sizeof *rec);
	assert_non_null(rec);
	bookdb_record_init(rec, pos);
	const char *mv[] = {"8h2b", "8h2b+", "2g2f", "7i7h"};
	int eval[] = {60, 50, 55, 40};
	for (int i = 0; i < 4; i++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		m->move = usi(pos, mv[i]);
		m->flags = BOOKDB_MOVE_EVAL;
		m->eval = (int16_t)eval[i];
		m->depth = 10;
	}
	assert_true(bookdb_move_declined(rec, &rec->moves[0]));
	assert_false(bookdb_move_declined(rec, &rec->moves[1]));
	assert_false(bookdb_move_declined(rec, &rec->moves[3])); /* a silver */
	/* A move only games played, without a value: after the declined one,
	 * whose value the user compares with the promotion's. */
	BookMove *g = &rec->moves[rec->nmoves++];
	g->move = usi(pos, "6i7h");
	g->flags = BOOKDB_MOVE_STATS;
	g->count = 9;
	bookdb_moves_sort(rec);
	const char *order[4] = {"2g2f", "8h2b+", "7i7h", "8h2b"};
	expect_order(rec, order);
	char last[USI_MOVE_MAX];
	usi_move_write(rec->moves[4].move, last);
	assert_string_equal(last, "6i7h");
	rec->nmoves--; /* the rest as before */
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "2g2f"));
	int v = 0;
	assert_true(bookdb_position_value(&v, rec));
	assert_int_equal(v, 55);
	char *text = bookdb_query_json(rec, true, pos, NULL);
	json_t *o = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(o);
	json_t *mvs = json_object_get(o, "moves");
	assert_true(json_is_true(json_object_get(json_array_get(mvs, 3), "declined")));
	assert_null(json_object_get(json_array_get(mvs, 1), "declined"));
	json_decref(o);
	/* Preferred by hand (joseki prefer): a move as any, played within its
	 * window. */
	for (int i = 0; i < 4; i++)
		if (rec->moves[i].move == usi(pos, "8h2b")) {
			rec->moves[i].flags |= BOOKDB_MOVE_PREFERRED;
			rec->moves[i].prefer_window = 50;
			assert_false(bookdb_move_declined(rec, &rec->moves[i]));
		}
	rec->flags |= BOOKDB_REC_PREFER;
	bookdb_moves_sort(rec);
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "8h2b"));
	assert_true(bookdb_position_value(&v, rec));
	assert_int_equal(v, 60);
	for (int i = 0; i < 4; i++) rec->moves[i].flags &= (uint8_t)~BOOKDB_MOVE_PREFERRED;
	rec->flags &= (uint8_t)~BOOKDB_REC_PREFER;
	/* Without 2g2f's 55 the promotion is the best, not 8h2b's 60. */
	for (int i = 0; i < 4; i++)
		if (rec->moves[i].move == usi(pos, "2g2f")) rec->moves[i].eval = 10;
	bookdb_moves_sort(rec);
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "8h2b+"));
	/* The promotion avoided: 8h2b is played again, valued. */
	for (int i = 0; i < 4; i++)
		if (rec->moves[i].move == usi(pos, "8h2b+"))
			rec->moves[i].flags |= BOOKDB_MOVE_AVOIDED;
	bookdb_moves_sort(rec);
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "8h2b"));
	assert_true(bookdb_position_value(&v, rec));
	assert_int_equal(v, 60);
	/* The promotion without a value: the same. */
	for (int i = 0; i < 4; i++)
		if (rec->moves[i].move == usi(pos, "8h2b+")) rec->moves[i].flags = 0;
	bookdb_moves_sort(rec);
	assert_int_equal(bookdb_best_move(rec, pos), usi(pos, "8h2b"));
	free(rec);
	free(pos);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bookdb__moves_sort_by_eval_then_games_before_minimax),
	    cmocka_unit_test(test_bookdb__moves_sort_by_minimax_value_once_minimax_ran),
	    cmocka_unit_test(test_bookdb__query_reads_the_record_sorted_and_builds_its_json),
	    cmocka_unit_test(test_bookdb__game_comments_are_shown_not_valued),
	    cmocka_unit_test(test_bookdb__a_declined_promotion_goes_after_the_moves_played),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
