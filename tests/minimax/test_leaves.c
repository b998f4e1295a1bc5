/*
 * tests/minimax/test_leaves.c — the leaf policy of joseki minimax (values come
 * from thought, not from a lone game line; game comments only with
 * --game-evals), game-record mate scores, the win-rate blend, and where query
 * says each value came from.
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
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define PLANTED "tests/data/planted/7g7f-mated-in-86.csa"
#define CLAMP 2000

/* The move object for usi in a query --json answer (NULL if absent). */
static json_t *query_move(json_t *q, const char *usi)
{
	json_t *moves = json_object_get(q, "moves"), *m;
	size_t i;
	json_array_foreach(moves, i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "move")), usi)) return m;
	}
	return NULL;
}

static long long move_int(json_t *q, const char *usi, const char *k)
{
	json_t *m = query_move(q, usi);
	if (!m) fail_msg("move %s not in the answer", usi);
	return ts_jint(m, k);
}

/* The floodgate fixtures and the planted game in a book. */
static char *ingested_book(void)
{
	char *dir = ts_mkdtemp();
	char *err = NULL;
	int rc = ts_runf(NULL, &err, "%s ingest %s/b tests/data/floodgate %s --quiet", ts_joseki(),
	                 dir, PLANTED);
	if (rc != 0) fail_msg("ingest: %s", err);
	free(err);
	return dir;
}

/* That book thought about by the built-in engine (a fixed budget: the same
 * book every run). */
static void think_about(const char *dir)
{
	char *err = NULL;
	int rc = ts_runf(NULL, &err,
	                 "%s think %s/b --engines 2 --depth 3 --multipv 12 --positions 300 --quiet",
	                 ts_joseki(), dir);
	if (rc != 0) fail_msg("think: %s", err);
	free(err);
}

static char *planted_book(void)
{
	char *dir = ingested_book();
	think_about(dir);
	return dir;
}

/*
 * The defect this policy fixes: along a game line each position has one move,
 * so backing values up along it takes one game's ending as proven. The planted
 * game opens 7g7f and is mated 86 plies later with mate scores in its last
 * comments: with --leaves games the start position's 7g7f is lost; once the
 * book is thought about, with the default policy it is valued from thought,
 * near the engine's own evaluations.
 */
static void test_leaves__a_lone_game_line_does_not_decide_the_root(void **state)
{
	(void)state;
	/* The games alone, their comments taken as values (--game-evals): the
	 * line is lone (thought may add other moves along it, as the built-in
	 * engine's does since it values 7g7f highest). */
	char *dir = ingested_book();
	json_t *o =
	    ts_run_json(0, "%s minimax %s/b --leaves games --game-evals --json", ts_joseki(), dir);
	json_decref(o);
	json_t *q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
	long long v = move_int(q, "7g7f", "value");
	if (v > -30000) fail_msg("--leaves games: 7g7f is valued %lld, a mate was expected", v);
	json_decref(q);
	/* Without the comments nothing is valued: the games give positions. */
	json_decref(ts_run_json(0, "%s minimax %s/b --leaves games --json", ts_joseki(), dir));
	q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
	assert_true(json_is_null(json_object_get(query_move(q, "7g7f"), "value")));
	assert_null(json_object_get(q, "bestmove"));
	json_decref(q);
	think_about(dir);

	o = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
	/* Another policy than the last run's: the whole book is analysed again. */
	assert_false(json_is_true(json_object_get(o, "incremental")));
	json_decref(o);
	q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
	assert_true(ts_jint(q, "thought_depth") >= 1);
	v = move_int(q, "7g7f", "value");
	if (v < -CLAMP || v > CLAMP) fail_msg("thought policy: 7g7f is valued %lld", v);
	/* Every root move's value is a thought one or backed up from thought. */
	json_t *moves = json_object_get(q, "moves"), *m;
	size_t i;
	json_array_foreach(moves, i, m)
	{
		json_t *src = json_object_get(m, "value_source");
		if (!src) continue;
		long long mv = ts_jint(m, "value");
		if (mv <= -30000 || mv >= 30000)
			fail_msg("root move %s valued %lld (%s)",
			         json_string_value(json_object_get(m, "move")), mv,
			         json_string_value(src));
	}
	json_decref(q);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Whether the value of move mv at pos is supported by thought: the line of
 * best moves it stands for runs through thought records only and ends in a
 * thought evaluation, a position without legal moves, or a repetition
 * (dist 9997..9999). rec and p are scratch space.
 */
static bool pv_supported(BookTxn *txn, const Position *pos, Move mv, int value, BookRecord *rec,
                         Position *p)
{
	*p = *pos;
	for (int ply = 0; ply < 400; ply++) {
		pos_do_move(p, mv);
		if (bookdb_get(rec, txn, pos_key(p)) != 0) return false;
		Move legal[MOVEGEN_MAX];
		if (movegen_legal(p, legal) == 0) return true;
		if (!(rec->flags & BOOKDB_REC_THOUGHT) || !(rec->flags & BOOKDB_REC_MINIMAX))
			return false;
		const BookMove *best = NULL;
		for (int c = 0; c < rec->nmoves; c++)
			if (rec->moves[c].value == -value) best = &rec->moves[c];
		if (!best) return false;
		if (best->dist >= 9997) return true;
		if (best->dist == 0)
			return (best->flags & BOOKDB_MOVE_EVAL) &&
			       best->source != BOOKDB_SOURCE_GAME && best->value == best->eval;
		mv = best->move;
		value = best->value;
	}
	return false;
}

/*
 * The moves of thought records whose value differs from the record's own
 * engine evaluation by more than the clamp without thought below to support
 * it (pv_supported). Returns how many such moves book path has; *checked
 * gets how many thought moves were looked at.
 */
static size_t unsupported(const char *path, size_t *checked)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, path, &ro, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	BookRecord *rec = malloc(sizeof *rec), *child = malloc(sizeof *child);
	Position *pos = malloc(sizeof *pos), *cpos = malloc(sizeof *cpos);
	Key k;
	const uint8_t *val;
	size_t len, bad = 0;
	*checked = 0;
	while (bookdb_iter_next(it, &k, &val, &len) == 1) {
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		if (!(rec->flags & BOOKDB_REC_THOUGHT) || !(rec->flags & BOOKDB_REC_MINIMAX))
			continue;
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		for (int i = 0; i < rec->nmoves; i++) {
			const BookMove *m = &rec->moves[i];
			if (!(m->flags & BOOKDB_MOVE_EVAL) || m->source != BOOKDB_SOURCE_ENGINE)
				continue;
			if (m->value == INT16_MIN) continue;
			(*checked)++;
			int diff = m->value - m->eval;
			if (diff >= -CLAMP && diff <= CLAMP) continue;
			bool ok = pv_supported(txn, pos, m->move, m->value, child, cpos);
			if (!ok) {
				char usi[USI_MOVE_MAX];
				usi_move_write(m->move, usi);
				print_message("  %s valued %d (dist %d) against its eval %d\n", usi,
				              m->value, m->dist, m->eval);
				bad++;
			}
		}
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(child);
	free(pos);
	free(cpos);
	return bad;
}

/*
 * A value at a thought node differs from that node's own thought evaluation of
 * the same move by more than the clamp only when thought nodes below it
 * support the difference (over a book like make demo's). The same check finds
 * such moves under --leaves games, so it is able to fail.
 */
static void test_leaves__values_far_from_the_engine_are_supported_by_thought_below(void **state)
{
	(void)state;
	char *dir = planted_book();
	char path[512];
	snprintf(path, sizeof path, "%s/b", dir);
	size_t checked;
	json_decref(
	    ts_run_json(0, "%s minimax %s --leaves games --game-evals --json", ts_joseki(), path));
	size_t bad = unsupported(path, &checked);
	print_message("--leaves games: %zu of %zu thought moves unsupported\n", bad, checked);
	assert_true(bad > 0);
	json_decref(ts_run_json(0, "%s minimax %s --json", ts_joseki(), path));
	bad = unsupported(path, &checked);
	print_message("--leaves thought: %zu of %zu thought moves unsupported\n", bad, checked);
	assert_true(checked > 50);
	assert_int_equal(bad, 0);
	ts_rmtree(dir);
	free(dir);
}

/* The stored eval of move usi at position in book path. */
static long long stored_eval(const char *path, const char *position, const char *usi)
{
	json_t *q = ts_run_json(0, "%s query %s '%s' --json", ts_joseki(), path, position);
	long long e = move_int(q, usi, "game_eval");
	json_decref(q);
	return e;
}

/* Writes the planted game's first n moves (with their comments, then
 * %TORYO) to path, and returns the SFEN after them ("sfen ..."). */
static char *planted_prefix(const char *path, int n)
{
	char *head = NULL;
	int rc =
	    ts_runf(&head, NULL,
	            "awk '/^[+-][0-9][0-9][0-9][0-9][A-Z][A-Z]/{n++} /^%%/{exit} n<=%d{print}' %s",
	            n, PLANTED);
	assert_int_equal(rc, 0);
	size_t len = strlen(head);
	head = realloc(head, len + 16);
	strcpy(head + len, "%TORYO\n");
	assert_int_equal(ts_write_file(path, head, strlen(head)), 0);
	free(head);
	json_t *r = ts_run_json(0, "%s replay %s --json", ts_joseki(), path);
	json_t *g = json_array_get(json_object_get(r, "games"), 0);
	assert_int_equal(ts_jint(g, "plies"), n);
	const char *sfen = json_string_value(json_object_get(g, "final_sfen"));
	assert_non_null(sfen);
	char *out = malloc(strlen(sfen) + 8);
	sprintf(out, "sfen %s", sfen);
	json_decref(r);
	return out;
}

/*
 * A mate score in a game comment stands where the game really ended in mate on
 * the board near it (the planted game: Black's 85th move 5i4h carries
 * -31988, and White mates the next ply); the same comment in a game that
 * stops before the mate becomes -2000 (or --mate-clamp).
 */
static void test_leaves__game_mate_scores_count_only_near_a_real_mate(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[512], book[512];
	snprintf(path, sizeof path, "%s/first84.csa", dir);
	char *position = planted_prefix(path, 84);
	snprintf(path, sizeof path, "%s/first85.csa", dir);
	free(planted_prefix(path, 85));

	snprintf(book, sizeof book, "%s/mated", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s --quiet", ts_joseki(), book, PLANTED),
	                 0);
	long long e = stored_eval(book, position, "5i4h");
	if (e > -31000) fail_msg("a mate score next to a real mate became %lld", e);

	snprintf(book, sizeof book, "%s/stopped", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s --quiet", ts_joseki(), book, path),
	                 0);
	assert_int_equal(stored_eval(book, position, "5i4h"), -CLAMP);

	snprintf(book, sizeof book, "%s/stopped1500", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s --mate-clamp 1500 --quiet",
	                         ts_joseki(), book, path),
	                 0);
	assert_int_equal(stored_eval(book, position, "5i4h"), -1500);

	/* --mate-plies 0: even one ply before the mate is too far. */
	snprintf(book, sizeof book, "%s/strict", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s --mate-plies 0 --quiet", ts_joseki(),
	                         book, PLANTED),
	                 0);
	assert_int_equal(stored_eval(book, position, "5i4h"), -CLAMP);
	free(position);
	ts_rmtree(dir);
	free(dir);
}

/* A hand-built record: moves with an engine eval and optional game results. */
typedef struct {
	const char *usi;
	int eval; /* INT16_MIN: none */
	uint32_t wins, draws, losses;
} Mv;

static void put(BookDB *db, const Position *pos, bool thought, int depth, const Mv *mv, int n)
{
	BookRecord *rec = calloc(1, sizeof *rec);
	bookdb_record_init(rec, pos);
	if (thought) {
		rec->flags |= BOOKDB_REC_THOUGHT;
		rec->think_depth = (uint8_t)depth;
	}
	for (int k = 0; k < n; k++) {
		BookMove *bm = &rec->moves[rec->nmoves++];
		assert_int_equal(
		    usi_move_parse_legal(&bm->move, pos, mv[k].usi, strlen(mv[k].usi), NULL), 0);
		if (mv[k].eval != INT16_MIN) {
			bm->flags |= BOOKDB_MOVE_EVAL;
			bm->eval = (int16_t)mv[k].eval;
			bm->depth = (uint8_t)depth;
			bm->source = thought ? BOOKDB_SOURCE_ENGINE : BOOKDB_SOURCE_GAME;
		}
		uint32_t c = mv[k].wins + mv[k].draws + mv[k].losses;
		if (c) {
			bm->flags |= BOOKDB_MOVE_STATS;
			bm->count = c;
			bm->wins = mv[k].wins;
			bm->draws = mv[k].draws;
			bm->losses = mv[k].losses;
		}
	}
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(rec);
}

/*
 * The policy's options on a three-position line: the start position (thought),
 * the position after 7g7f (games only: 40 of them) and after 7g7f 3c3d
 * (thought). A game-only position is a leaf unless --min-games counts it in;
 * --blend mixes a move's win rate into its leaf value; query names each source.
 */
static void test_leaves__min_depth_min_games_blend_and_value_sources(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[512];
	snprintf(path, sizeof path, "%s/b", dir);
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	Position *p0 = malloc(sizeof *p0), *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2);
	pos_set_startpos(p0);
	assert_int_equal(position_parse(p1, "startpos moves 7g7f", NULL), 0);
	assert_int_equal(position_parse(p2, "startpos moves 7g7f 3c3d", NULL), 0);
	/* Thought at depth 6: 7g7f +50 (one of its candidates), 2g2f +30. */
	put(db, p0, true, 6, (Mv[]){{"7g7f", 50, 10, 0, 30}, {"2g2f", 30, 0, 0, 0}}, 2);
	/* Games only: 3c3d (White's game comment says -400 for White). */
	put(db, p1, false, 0, (Mv[]){{"3c3d", -400, 20, 0, 20}}, 1);
	/* Thought at depth 2: Black's best after 3c3d is +700. */
	put(db, p2, true, 2, (Mv[]){{"2g2f", 700, 0, 0, 0}}, 1);
	bookdb_free(db);

	/* Default: the game-only position is a leaf; the root's own eval of
	 * 7g7f stands ("thought", dist 0). */
	json_decref(ts_run_json(0, "%s minimax %s --json", ts_joseki(), path));
	json_t *q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 50);
	assert_int_equal(move_int(q, "7g7f", "dist"), 0);
	assert_string_equal(
	    json_string_value(json_object_get(query_move(q, "7g7f"), "value_source")), "thought");
	json_decref(q);
	/* At the game-only position its game comment is shown, not a value. */
	q = ts_run_json(0, "%s query %s 'startpos moves 7g7f' --json", ts_joseki(), path);
	assert_true(json_is_null(json_object_get(query_move(q, "3c3d"), "value")));
	assert_string_equal(json_string_value(json_object_get(query_move(q, "3c3d"), "unvalued")),
	                    "game comment only");
	assert_int_equal(move_int(q, "3c3d", "game_eval"), -400);
	json_decref(q);
	/* With --game-evals it is the value, as before the rule. */
	json_decref(ts_run_json(0, "%s minimax %s --game-evals --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s 'startpos moves 7g7f' --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "3c3d", "value"), -400);
	assert_string_equal(
	    json_string_value(json_object_get(query_move(q, "3c3d"), "value_source")), "game");
	json_decref(q);

	/* --min-games 40: 40 games make it inner; the line is backed up from the
	 * thought position two plies down: 7g7f = +700 (minimax, dist 2). */
	json_decref(ts_run_json(0, "%s minimax %s --min-games 40 --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 700);
	assert_int_equal(move_int(q, "7g7f", "dist"), 2);
	assert_string_equal(
	    json_string_value(json_object_get(query_move(q, "7g7f"), "value_source")), "minimax");
	json_decref(q);
	/* 41 games are not there: a leaf again. */
	json_decref(ts_run_json(0, "%s minimax %s --min-games 41 --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 50);
	json_decref(q);

	/* --min-depth 3: the depth-2 analysis is not enough; with --min-games 40
	 * the game position is inner, its move into the shallow one a leaf by
	 * the game's eval when comments count: 7g7f = -(-400) = 400, dist 1;
	 * without them, an edge to the shallow position's own +700 (dist 2). */
	json_decref(ts_run_json(0, "%s minimax %s --min-games 40 --min-depth 3 --game-evals --json",
	                        ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 400);
	assert_int_equal(move_int(q, "7g7f", "dist"), 1);
	json_decref(q);
	json_t *j =
	    ts_run_json(0, "%s minimax %s --min-games 40 --min-depth 3 --json", ts_joseki(), path);
	assert_int_equal(ts_jint(j, "shallow_leaves"), 1); /* the depth-2 position */
	json_decref(j);
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 700);
	assert_int_equal(move_int(q, "7g7f", "dist"), 2);
	json_decref(q);
	/* Said: a value that stops at a shallow analysis is no surprise. */
	char *o = NULL;
	assert_int_equal(ts_runf(&o, NULL, "%s minimax %s --min-depth 3 --full", ts_joseki(), path),
	                 0);
	if (!strstr(o, "1 position analysed shallower than --min-depth 3 (imported with no depth: "
	               "0): leaves,"))
		fail_msg("%s", o);
	free(o);
	j = ts_run_json(0, "%s minimax %s --full --json", ts_joseki(), path);
	assert_int_equal(ts_jint(j, "shallow_leaves"), 0); /* depth 2 is deep enough for 1 */
	json_decref(j);

	/* --blend 0.5 --blend-games 10: 7g7f has 40 games, 10 won: p = 0.25,
	 * 600·ln(0.25/0.75) = -659.17; (50 - 659.17) / 2 = -304.6 -> -305. */
	json_decref(
	    ts_run_json(0, "%s minimax %s --blend 0.5 --blend-games 10 --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), -305);
	assert_string_equal(
	    json_string_value(json_object_get(query_move(q, "7g7f"), "value_source")), "blend");
	/* 2g2f has no games: its eval alone. */
	assert_int_equal(move_int(q, "2g2f", "value"), 30);
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "2g2f");
	json_decref(q);
	/* Too few games for the threshold: no blend. */
	json_decref(
	    ts_run_json(0, "%s minimax %s --blend 0.5 --blend-games 41 --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 50);
	json_decref(q);

	/* --leaves games: everything inner, the thought position's +700 again. */
	json_decref(ts_run_json(0, "%s minimax %s --leaves games --json", ts_joseki(), path));
	q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), path);
	assert_int_equal(move_int(q, "7g7f", "value"), 700);
	json_decref(q);

	/* Bad values are usage errors. */
	char *e = NULL;
	assert_int_equal(ts_runf(NULL, &e, "%s minimax %s --leaves some", ts_joseki(), path), 2);
	free(e);
	assert_int_equal(ts_runf(NULL, &e, "%s minimax %s --blend 1.5", ts_joseki(), path), 2);
	assert_non_null(strstr(e, "--blend"));
	free(e);
	assert_int_equal(ts_runf(NULL, &e, "%s minimax %s --min-depth 300", ts_joseki(), path), 2);
	free(e);
	free(p0);
	free(p1);
	free(p2);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_leaves__a_lone_game_line_does_not_decide_the_root),
	    cmocka_unit_test(
	        test_leaves__values_far_from_the_engine_are_supported_by_thought_below),
	    cmocka_unit_test(test_leaves__game_mate_scores_count_only_near_a_real_mate),
	    cmocka_unit_test(test_leaves__min_depth_min_games_blend_and_value_sources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
