/*
 * tests/bookgen/test_match.c — `joseki match` as a user runs it: the built-in
 * engine against itself is deterministic for a seed with fixed nodes (same
 * records, whatever the concurrency); games that end by the move limit, by
 * perpetual check, by a declaration (valid or not), by an illegal move and
 * by an engine crash or timeout are scored by the rules, and the match goes on after a
 * crash; a side with a book plays the book's moves; every CSA record written
 * replays (`joseki replay --json`) to the result the match reported.
 * Scripted engines: tests/search/fakes/script_engine.py behind a wrapper.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>
#include <jansson.h>

#include "play/match.h"
#include "tests/support/support.h"

#define SCRIPT_ENGINE "tests/search/fakes/script_engine.py"
/* A legal 20-ply game from the start position. */
#define GAME20                                                                                     \
	"7g7f 3c3d 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b 3i3h 7a7b 5i6h 5a4b 1g1f 1c1d 9g9f 9c9d "         \
	"4i5h 6a5b 3g3f 7c7d"
/* Black's rook checks from 3a and 3b while White's king steps 1a-1b: the
 * fourth occurrence comes at ply 13 and Black, checking throughout, loses. */
#define PERPETUAL_SFEN "sfen 8k/9/6R2/9/9/9/9/9/K8 b - 1"
#define PERPETUAL_MOVES                                                                            \
	"3c3a 1a1b 3a3b 1b1a 3b3a 1a1b 3a3b 1b1a 3b3a 1a1b 3a3b 1b1a 3b3a 1a1b 3a3b 1b1a"
/* Black's king in White's camp with ten pieces and 28 points: Black may declare. */
#define DECLARE_SFEN "sfen GGGGKSS2/RRBB5/9/9/9/9/9/9/8k b 2P 1"

/* Writes dir/name: a shell wrapper that runs the script engine with args. */
static char *write_engine(const char *dir, const char *name, const char *args)
{
	char *path, *text, cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	assert_true(
	    asprintf(&text, "#!/bin/sh\nexec python3 -S %s/%s %s\n", cwd, SCRIPT_ENGINE, args) > 0);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	assert_int_equal(chmod(path, 0755), 0);
	free(text);
	return path;
}

static char *write_openings(const char *dir, const char *text)
{
	char *path;
	assert_true(asprintf(&path, "%s/openings.txt", dir) > 0);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	return path;
}

static json_t *game_of(json_t *match, int i)
{
	json_t *g = json_array_get(json_object_get(match, "results"), (size_t)i);
	assert_non_null(g);
	return g;
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_true(json_is_string(v));
	return json_string_value(v);
}

static void assert_game(json_t *match, int i, const char *end, const char *winner,
                        const char *result, int plies)
{
	json_t *g = game_of(match, i);
	assert_string_equal(jstr(g, "end"), end);
	assert_string_equal(jstr(g, "winner"), winner);
	assert_string_equal(jstr(g, "result"), result);
	if (plies >= 0) assert_int_equal(ts_jint(g, "plies"), plies);
}

/* The replay name of a match end (match_end_replay_name, by its name). */
static const char *replay_name(const char *end)
{
	for (int e = MATCH_END_RESIGN; e <= MATCH_END_CRASH; e++)
		if (!strcmp(match_end_name((MatchEnd)e), end))
			return match_end_replay_name((MatchEnd)e);
	fail_msg("unknown end '%s'", end);
	return NULL;
}

/* `joseki replay --json DIR` gives every game the match's plies, end and winner. */
static void assert_replays(json_t *match, const char *dir)
{
	json_t *rep = ts_run_json(0, "%s replay --json %s", ts_joseki(), dir);
	json_t *games = json_object_get(rep, "games");
	json_t *results = json_object_get(match, "results");
	assert_int_equal(json_array_size(games), json_array_size(results));
	for (size_t i = 0; i < json_array_size(results); i++) {
		json_t *m = json_array_get(results, i), *r = json_array_get(games, i);
		char *want;
		assert_true(asprintf(&want, "%s/game-%04d.csa", dir, (int)ts_jint(m, "game")) > 0);
		assert_string_equal(jstr(r, "input"), want);
		assert_string_equal(jstr(m, "csa"), want);
		free(want);
		assert_int_equal(ts_jint(r, "plies"), ts_jint(m, "plies"));
		assert_string_equal(jstr(r, "end"), replay_name(jstr(m, "end")));
		assert_string_equal(jstr(r, "winner"), jstr(m, "winner"));
		assert_true(json_is_null(json_object_get(r, "error")));
		/* The moves the match reports replay to the same number of plies. */
		json_t *u =
		    ts_run_json(0, "echo '%s' | %s replay --json -", jstr(m, "moves"), ts_joseki());
		json_t *ug = json_array_get(json_object_get(u, "games"), 0);
		assert_int_equal(ts_jint(ug, "plies"), ts_jint(m, "plies"));
		json_decref(u);
	}
	json_decref(rep);
}

static void test_match__builtin_is_deterministic_for_a_seed(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *op = write_openings(
	    dir, "# two openings\nstartpos moves 7g7f\n\nstartpos moves 2g2f 8c8d\n");
	json_t *m[2];
	for (int run = 0; run < 2; run++) {
		m[run] = ts_run_json(
		    0,
		    "%s match --engine-a builtin --engine-b builtin --games 4 --nodes 3000 "
		    "--max-moves 40 --openings %s --seed 11 --concurrency %d --out %s/run%d --json",
		    ts_joseki(), op, run + 1, dir, run);
		assert_int_equal(ts_jint(m[run], "played"), 4);
		for (int i = 0; i < 4; i++) {
			/* Forty plies without a result: a draw by the move limit. */
			assert_game(m[run], i, "max_moves", "draw", "draw", 40);
			/* No book: the engines made every move after the opening. */
			json_t *g = game_of(m[run], i);
			int opening_plies = ts_jint(g, "opening") == 1 ? 1 : 2;
			assert_int_equal(ts_jint(g, "engine_moves"), 40 - opening_plies);
		}
		char *out;
		assert_true(asprintf(&out, "%s/run%d", dir, run) > 0);
		assert_replays(m[run], out);
		free(out);
	}
	/* Pairs play their opening with colours swapped; the seed orders the openings. */
	for (int i = 0; i < 4; i++) {
		json_t *a = game_of(m[0], i), *b = game_of(m[1], i);
		assert_string_equal(jstr(a, "moves"), jstr(b, "moves"));
		assert_string_equal(jstr(a, "a_color"), i % 2 ? "white" : "black");
		assert_int_equal(ts_jint(a, "opening"), ts_jint(game_of(m[0], i ^ 1), "opening"));
		char *p0, *p1, *t0, *t1;
		assert_true(asprintf(&p0, "%s/run0/game-%04d.csa", dir, i + 1) > 0);
		assert_true(asprintf(&p1, "%s/run1/game-%04d.csa", dir, i + 1) > 0);
		assert_non_null(t0 = ts_read_file(p0, NULL));
		assert_non_null(t1 = ts_read_file(p1, NULL));
		assert_string_equal(t0, t1);
		assert_non_null(strstr(t0, "\n'** "));
		free(p0), free(p1), free(t0), free(t1);
	}
	assert_int_not_equal(ts_jint(game_of(m[0], 0), "opening"),
	                     ts_jint(game_of(m[0], 2), "opening"));
	/* The records ingest back with their evaluations. */
	json_t *ing = ts_run_json(0, "%s ingest %s/book %s/run0 --json", ts_joseki(), dir, dir);
	assert_int_equal(ts_jint(ing, "games_read"), 4);
	assert_int_equal(ts_jint(ing, "errors_total"), 0);
	assert_true(ts_jint(ing, "evals_added") > 50);
	json_decref(ing);
	json_decref(m[0]);
	json_decref(m[1]);
	free(op);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__perpetual_check_loses_for_the_checking_side(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *eng = write_engine(dir, "perpetual.sh", "--moves '" PERPETUAL_MOVES "'");
	char *op = write_openings(dir, PERPETUAL_SFEN "\n");
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a %s --engine-b %s --games 2 --openings %s "
	                        "--out %s/out --json",
	                        ts_joseki(), eng, eng, op, dir);
	/* Game 1: A is Black and checks throughout; game 2: B is. */
	assert_game(m, 0, "perpetual_check", "white", "loss", 13);
	assert_game(m, 1, "perpetual_check", "white", "win", 13);
	assert_int_equal(ts_jint(m, "wins"), 1);
	assert_int_equal(ts_jint(m, "losses"), 1);
	char *out;
	assert_true(asprintf(&out, "%s/out", dir) > 0);
	assert_replays(m, out);
	json_decref(m);
	free(out), free(eng), free(op);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__declarations_are_judged_by_the_rules(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *op = write_openings(dir, DECLARE_SFEN "\n");
	/* The built-in engine declares at once where the rule allows it. */
	json_t *m =
	    ts_run_json(0,
	                "%s match --engine-a builtin --engine-b builtin --games 2 --nodes 500 "
	                "--openings %s --out %s/valid --json",
	                ts_joseki(), op, dir);
	assert_game(m, 0, "declaration", "black", "win", 0);
	assert_game(m, 1, "declaration", "black", "loss", 0);
	char *out;
	assert_true(asprintf(&out, "%s/valid", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	/* White declaring after 7g7f is not valid: White loses. */
	char *eng = write_engine(dir, "declare.sh", "--moves '7g7f win'");
	m = ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 2 --out %s/invalid --json",
	                ts_joseki(), eng, eng, dir);
	assert_game(m, 0, "declaration", "black", "win", 1);
	assert_game(m, 1, "declaration", "black", "loss", 1);
	assert_non_null(strstr(jstr(game_of(m, 0), "error"), "declaration not valid"));
	assert_true(asprintf(&out, "%s/invalid", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	free(eng), free(op);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__crash_and_illegal_move_lose_and_the_match_goes_on(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *args;
	/* A crashes at ply 4 on its first start only (the driver restarts it). */
	assert_true(asprintf(&args, "--moves '" GAME20 "' --crash-at 4 --state %s/starts", dir) >
	            0);
	char *crasher = write_engine(dir, "crasher.sh", args);
	char *plain = write_engine(dir, "plain.sh", "--moves '" GAME20 "'");
	json_t *m =
	    ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 3 --out %s/crash --json",
	                ts_joseki(), crasher, plain, dir);
	assert_int_equal(ts_jint(m, "played"), 3);
	/* Game 1: A (Black) crashes before ply 5 and loses. */
	assert_game(m, 0, "crash", "white", "loss", 4);
	assert_non_null(strstr(jstr(game_of(m, 0), "error"), "A: "));
	/* Then the script runs out at ply 20, Black to move: Black resigns. */
	assert_game(m, 1, "resign", "white", "win", 20);
	assert_game(m, 2, "resign", "white", "loss", 20);
	char *out;
	assert_true(asprintf(&out, "%s/crash", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	/* The engine was restarted after its crash (the state file counts starts). */
	char *starts, *n;
	assert_true(asprintf(&starts, "%s/starts", dir) > 0);
	assert_non_null(n = ts_read_file(starts, NULL));
	assert_true(atoi(n) >= 2);
	free(n), free(starts);

	/* A crash on the driver's retry too: the same. */
	char *args2, *crasher2;
	assert_true(asprintf(&args2,
	                     "--moves '" GAME20
	                     "' --crash-at 3 --crash-starts 2 --state %s/starts2",
	                     dir) > 0);
	crasher2 = write_engine(dir, "crasher2.sh", args2);
	m = ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 2 --out %s/crash2 --json",
	                ts_joseki(), plain, crasher2, dir);
	assert_game(m, 0, "crash", "black", "win", 3);
	assert_non_null(strstr(jstr(game_of(m, 0), "error"), "B: "));
	assert_game(m, 1, "resign", "white", "win", 20);
	assert_true(asprintf(&out, "%s/crash2", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	free(args2), free(crasher2);

	/* An illegal move (5e5d: no piece there) loses too. */
	char *illegal = write_engine(dir, "illegal.sh", "--moves '7g7f 5e5d'");
	m = ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 2 --out %s/illegal --json",
	                ts_joseki(), illegal, illegal, dir);
	assert_game(m, 0, "illegal_move", "black", "win", 1);
	assert_game(m, 1, "illegal_move", "black", "loss", 1);
	assert_true(asprintf(&out, "%s/illegal", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	/* No answer within the driver's hard limit (movetime 10 ms: 2.03 s, twice). */
	char *hang = write_engine(dir, "hang.sh", "--moves '7g7f hang'");
	m = ts_run_json(
	    0, "%s match --engine-a %s --engine-b %s --games 1 --movetime 10 --out %s/hang --json",
	    ts_joseki(), hang, hang, dir);
	assert_game(m, 0, "timeout", "black", "win", 1);
	assert_true(asprintf(&out, "%s/hang", dir) > 0);
	assert_replays(m, out);
	/* With a time budget the record has T lines and a start time. */
	char *rec;
	assert_true(asprintf(&rec, "%s/game-0001.csa", out) > 0);
	char *text = ts_read_file(rec, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\n+7776FU\nT0\n"));
	assert_non_null(strstr(text, "\n$START_TIME:"));
	assert_non_null(strstr(text, "\n%TIME_UP\n"));
	free(text), free(rec), free(out);
	json_decref(m);
	free(args), free(crasher), free(plain), free(illegal), free(hang);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__a_side_with_a_book_plays_its_moves(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *o = NULL, *e = NULL;
	int rc =
	    ts_runf(&o, &e, "%s ingest %s/book tests/data/floodgate --quiet", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	free(o), free(e);
	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	const char *best = jstr(q, "bestmove");
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a builtin --engine-b builtin --book-a %s/book "
	                        "--book-b none --games 2 --nodes 500 --max-moves 16 --json",
	                        ts_joseki(), dir);
	/* Game 1: A is Black and opens with the book's best move. */
	char *want;
	assert_true(asprintf(&want, "startpos moves %s ", best) > 0);
	assert_true(!strncmp(jstr(game_of(m, 0), "moves"), want, strlen(want)));
	free(want);
	json_t *bp = json_object_get(game_of(m, 0), "book_plies");
	assert_true(json_integer_value(json_array_get(bp, 0)) >= 1);
	assert_int_equal(json_integer_value(json_array_get(bp, 1)), 0);
	assert_true(json_real_value(json_object_get(json_object_get(m, "book_plies"), "a")) > 0.0);
	assert_true(json_real_value(json_object_get(json_object_get(m, "book_plies"), "b")) == 0.0);
	json_decref(m);
	json_decref(q);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__bad_input_is_reported(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *op = write_openings(dir, "startpos moves 7g7f\nstartpos moves 7g7f 7g7f\n");
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s match --engine-a builtin --engine-b builtin --openings %s",
	                 ts_joseki(), op);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "openings.txt:2:"));
	free(out), free(err);
	rc = ts_runf(&out, &err, "%s match --engine-a builtin --engine-b %s/missing --games 1",
	             ts_joseki(), dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "engine B"));
	free(out), free(err);
	rc = ts_runf(&out, &err, "%s match --engine-a builtin --engine-b builtin --option-b Foo=1",
	             ts_joseki());
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "option Foo=1 not taken"));
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s match --engine-a builtin --engine-b builtin --option-b USI_Hash=8 --games "
	             "1 --nodes 100 --max-moves 4",
	             ts_joseki());
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "1 games, A +0 =1 -0"));
	free(out), free(err);
	rc = ts_runf(&out, &err, "%s match --engine-a builtin", ts_joseki());
	assert_int_equal(rc, 2);
	free(out), free(err);
	free(op);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__elo(void **state)
{
	(void)state;
	double elo, lo, hi;
	match_elo(10, 0, 10, &elo, &lo, &hi);
	assert_true(elo == 0 && lo < -100 && hi > 100 && fabs(lo + hi) < 1e-9);
	match_elo(75, 0, 25, &elo, &lo, &hi);
	assert_true(elo > 190 && elo < 192); /* 400·log10(3) = 190.8 */
	assert_true(lo > 0 && lo < elo && hi > elo);
	match_elo(3, 0, 0, &elo, &lo, &hi);
	assert_true(isinf(elo) && elo > 0);
	match_elo(0, 0, 0, &elo, &lo, &hi);
	assert_true(elo == 0 && lo == 0 && hi == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match__builtin_is_deterministic_for_a_seed),
	    cmocka_unit_test(test_match__perpetual_check_loses_for_the_checking_side),
	    cmocka_unit_test(test_match__declarations_are_judged_by_the_rules),
	    cmocka_unit_test(test_match__crash_and_illegal_move_lose_and_the_match_goes_on),
	    cmocka_unit_test(test_match__a_side_with_a_book_plays_its_moves),
	    cmocka_unit_test(test_match__bad_input_is_reported),
	    cmocka_unit_test(test_match__elo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
