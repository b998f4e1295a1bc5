/*
 * tests/play/test_match.c — `joseki match` as a user runs it: the built-in
 * engine against itself is deterministic for a seed with fixed nodes (same
 * records, whatever the concurrency); games that end by the move limit, by
 * perpetual check, by a declaration (valid or not), by an illegal move and
 * by an engine crash or timeout are scored by the rules, and the match goes on after a
 * crash; a side with a book plays the book's moves; every CSA record written
 * replays (`joseki replay --json`) to the result the match reported.
 * Clocks: a scripted engine logs every go line, so the times it was told are
 * checked move by move (countdown, increments, byoyomi, a book move's
 * cost), and one that thinks past its clock loses on time. Book against
 * book, the pentanomial pairs and their Elo, the SPRT's LLR against a table
 * computed apart (tests/play/sprt_reference.py) and its early stop; real
 * engines (fairy-stockfish, gpsshogi, the built-in one) on clocks.
 * Scripted engines: tests/search/fakes/script_engine.py behind a wrapper.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	if (strcmp(jstr(g, "end"), end)) {
		char *dump = json_dumps(g, 0);
		print_error("game %d: %s\n", i + 1, dump);
		free(dump);
	}
	assert_string_equal(jstr(g, "end"), end);
	assert_string_equal(jstr(g, "winner"), winner);
	assert_string_equal(jstr(g, "result"), result);
	if (plies >= 0) assert_int_equal(ts_jint(g, "plies"), plies);
}

/* The replay name of a match end (match_end_replayed, by its name). */
static const char *replay_name(const char *end)
{
	for (int e = GAME_END_RESIGN; e <= GAME_END_CRASH; e++)
		if (!strcmp(game_end_name((GameEnd)e), end))
			return game_end_name(match_end_replayed((GameEnd)e));
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

/* A MatchProgressFn: the games finished, and the tally is theirs. */
static void count_progress(void *ctx, const char *phase, const MatchProgress *p)
{
	assert_true(p->done >= 0 && p->done <= p->games && p->games == 4);
	assert_int_equal(p->res->wins + p->res->draws + p->res->losses, p->done);
	assert_false(p->sprt);
	ts_progress_note(ctx, phase, (uint64_t)p->done);
}

/* match_run reports through its callback (a finished game at most once a
 * second, always the last one, then "done"), and prints nothing without one. */
static void test_match__progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char errf[4200];
	snprintf(errf, sizeof errf, "%s/stderr", dir);
	TsProgress *rec = ts_progress_new();
	for (int quiet = 0; quiet < 2; quiet++) {
		MatchOptions opt = {
		    .side = {{.engine = "builtin"}, {.engine = "builtin"}},
		    .games = 4,
		    .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 300},
		    .concurrency = 2,
		    .max_moves = 30,
		    .seed = 1,
		    .progress = quiet ? NULL : count_progress,
		    .progress_ctx = rec,
		};
		MatchResult r;
		char err[MATCH_ERRLEN];
		int saved = ts_stderr_begin(errf);
		int rc = match_run(&r, &opt, err);
		char *text = ts_stderr_end(saved, errf);
		assert_int_equal(rc, 0);
		assert_string_equal(text, "");
		free(text);
		assert_int_equal(r.played, 4);
		match_result_free(&r);
	}
	static const char *const phases[] = {"game", "done", NULL};
	ts_progress_check(rec, phases);
	/* the last game is reported, then the end */
	assert_true(rec->n >= 2 && rec->n <= 5);
	assert_string_equal(rec->phase[rec->n - 2], "game");
	assert_int_equal(rec->done[rec->n - 2], 4);
	assert_int_equal(ts_progress_last(rec), 4);
	free(rec);
	ts_rmtree(dir);
	free(dir);
}

/* opt.only: the games given are played as they are in the whole match (the
 * same opening, colours, node draws and so moves), the others not at all;
 * match_game_index finds each game of the whole match by its opening and
 * colour. */
static void test_match__only_the_games_given_are_played_as_in_the_whole_match(void **state)
{
	(void)state;
	static const char *const openings[] = {"startpos moves 7g7f", "startpos moves 2g2f 8c8d",
	                                       "startpos moves 7g7f 3c3d"};
	MatchOptions o = {
	    .side = {{.engine = "builtin"}, {.engine = "builtin"}},
	    .games = 6,
	    .budget = {.kind = SEARCH_BUDGET_NODES, .amount = 1500},
	    .openings = openings,
	    .nopenings = 3,
	    .concurrency = 2,
	    .max_moves = 40,
	    .seed = 5,
	    .nodes_jitter = 20,
	};
	MatchResult all, part;
	char err[MATCH_ERRLEN];
	assert_int_equal(match_run(&all, &o, err), 0);
	assert_int_equal(all.played, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(match_game_index(&o, all.games[i].opening, all.games[i].a_color),
		                 i);
	static const int only[] = {1, 4};
	o.only = only;
	o.nonly = 2;
	assert_int_equal(match_run(&part, &o, err), 0);
	assert_int_equal(part.played, 2);
	assert_int_equal(part.ngames, 6);
	for (int i = 0; i < 6; i++) {
		const MatchGame *a = &all.games[i], *b = &part.games[i];
		assert_int_equal(b->played, i == 1 || i == 4);
		if (!b->played) continue;
		assert_int_equal(b->opening, a->opening);
		assert_int_equal(b->a_color, a->a_color);
		assert_string_equal(b->usi, a->usi);
		assert_int_equal(b->result, a->result);
	}
	assert_int_equal(part.wins + part.draws + part.losses, 2);
	match_result_free(&part);
	match_result_free(&all);
	/* Indices out of order, out of range, or none: refused. */
	static const int unordered[] = {4, 1}, beyond[] = {6};
	const int *bad[] = {unordered, beyond, only};
	const int nbad[] = {2, 1, 0};
	for (int k = 0; k < 3; k++) {
		o.only = bad[k];
		o.nonly = nbad[k];
		assert_int_equal(match_run(&part, &o, err), MATCH_EINVAL);
		assert_non_null(strstr(err, "ascending indices below 6"));
	}
	/* An opening the match does not play, and the start position without
	 * openings: game 0 is Black's, game 1 White's. */
	assert_int_equal(match_game_index(&o, 3, BLACK), -1);
	assert_int_equal(match_game_index(&o, -1, BLACK), -1);
	o.nopenings = 0;
	assert_int_equal(match_game_index(&o, -1, WHITE), 1);
	assert_int_equal(match_game_index(&o, 0, BLACK), -1);
	o.games = 1;
	assert_int_equal(match_game_index(&o, -1, WHITE), -1);
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
	/* The two games of the opening are one pair: a loss and a win. */
	json_t *p = json_object_get(m, "pairs");
	assert_int_equal(ts_jint(p, "count"), 1);
	assert_int_equal(ts_jint(p, "wl"), 1);
	assert_int_equal(ts_jint(p, "ww") + ts_jint(p, "ll") + ts_jint(p, "dd"), 0);
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

/* A match of a few games says its interval says little (two games can give
 * one of no width); one of ten games or more does not. */
static void test_match__a_few_games_are_said_to_be_too_few(void **state)
{
	(void)state;
	static const struct {
		int games;
		bool said;
	} RUNS[] = {{2, true}, {10, false}};
	for (size_t i = 0; i < 2; i++) {
		char *out = NULL, *err = NULL;
		assert_int_equal(
		    ts_runf(&out, &err,
		            "%s match --engine-a builtin --engine-b builtin --games %d "
		            "--nodes 200 --max-moves 40",
		            ts_joseki(), RUNS[i].games),
		    0);
		char want[80];
		snprintf(want, sizeof want, "match: %d games: too few for the interval",
		         RUNS[i].games);
		if (!strstr(err, want) != !RUNS[i].said)
			fail_msg("%d games said: %s", RUNS[i].games, err);
		free(out);
		free(err);
	}
}

/* An engine that refuses the match's searches (a gpsshogi-like one against
 * --nodes) stops the match, exit 1, naming it: no game is lost for it. (Each
 * game was a "crash", and the match ended a perfect win, elo +inf, exit 0.) */
static void test_match__an_engine_that_refuses_the_searches_stops_the_match(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), cwd[1024], *path = NULL, *text = NULL;
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_true(asprintf(&path, "%s/timeonly.sh", dir) > 0);
	assert_true(asprintf(&text,
	                     "#!/bin/sh\nexec python3 -S %s/tests/search/fakes/fake_engine.py "
	                     "--script timeonly\n",
	                     cwd) > 0);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	assert_int_equal(chmod(path, 0755), 0);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s match --engine-a builtin --engine-b %s --games 2 --nodes 2000 --out "
	                 "%s/games",
	                 ts_joseki(), path, dir);
	if (rc != 1 || !strstr(err, "engine B refuses the match's searches: ") ||
	    !strstr(err, "give it --movetime"))
		fail_msg("exit %d, said: %s%s", rc, out, err);
	assert_null(strstr(out, "elo +inf"));
	free(out);
	free(err);
	free(text);
	free(path);
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
	/* A book from the games alone, by choice: their most played moves. */
	int rc = ts_runf(&o, &e,
	                 "%s ingest %s/book tests/data/floodgate --quiet && %s minimax %s/book "
	                 "--games-book most-played --quiet",
	                 ts_joseki(), dir, ts_joseki(), dir);
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
	/* From openings the book does not hold, it checks nothing, and says so;
	 * from the start position it says nothing. */
	char path[600];
	snprintf(path, sizeof path, "%s/far.txt", dir);
	const char *far = "startpos moves 1g1f 9c9d 9g9f 1c1d 5g5f 5c5d\n";
	assert_int_equal(ts_write_file(path, far, strlen(far)), 0);
	rc = ts_runf(&o, &e,
	             "%s match --engine-a builtin --engine-b builtin --book-a %s/book --games 2 "
	             "--nodes 300 --max-moves 12 --openings %s",
	             ts_joseki(), dir, path);
	assert_int_equal(rc, 0);
	if (!strstr(e, "A's book") || !strstr(e, "gave no move in any game"))
		fail_msg("no word of the unused book: %s", e);
	free(o), free(e);
	rc = ts_runf(&o, &e,
	             "%s match --engine-a builtin --engine-b builtin --book-a %s/book --games 2 "
	             "--nodes 300 --max-moves 12",
	             ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_null(strstr(e, "gave no move"));
	free(o), free(e);
	/* A book of Black's first move alone: as White it never has a move, and
	 * that half of the match measured nothing of it. Said, though its mean
	 * over all the games is not 0 (a new user found it in the records). */
	snprintf(path, sizeof path, "%s/one.usi", dir);
	assert_int_equal(ts_write_file(path, "startpos moves 7g7f\n", 20), 0);
	rc = ts_runf(&o, &e,
	             "%s ingest %s/one %s --quiet && %s minimax %s/one --games-book most-played "
	             "--quiet && %s match --engine-a builtin --engine-b builtin --book-a %s/one "
	             "--games 2 --nodes 300 --max-moves 8",
	             ts_joseki(), dir, path, ts_joseki(), dir, ts_joseki(), dir);
	assert_int_equal(rc, 0);
	if (!strstr(e, "/one gave no move in any of its 1 game as White: those games measured "
	               "its engine alone (the other side's first moves lie outside it)") ||
	    strstr(e, "as Black"))
		fail_msg("the unused half not said: %s", e);
	free(o), free(e);
	ts_rmtree(dir);
	free(dir);
}

/* A match stopped before any game ended has no figures: its summary says
 * "-" (it said "score 0.000, elo +0 [+0, +0]"), then that no game was
 * played. Stopped (SIGTERM) while B, a fake engine that never answers,
 * thinks its first move. */
static void test_match__stopped_before_a_game_ends_gives_no_figures(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *eng, *tr, *out, *err, cwd[1024];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_true(asprintf(&eng, "%s/hang.sh", dir) > 0);
	assert_true(asprintf(&tr, "%s/transcript", dir) > 0);
	assert_true(asprintf(&out, "%s/out", dir) > 0);
	assert_true(asprintf(&err, "%s/err", dir) > 0);
	char *text;
	assert_true(asprintf(&text,
	                     "#!/bin/sh\nexec python3 -S %s/tests/search/fakes/fake_engine.py "
	                     "--script hang_go --transcript %s\n",
	                     cwd, tr) > 0);
	assert_int_equal(ts_write_file(eng, text, strlen(text)), 0);
	assert_int_equal(chmod(eng, 0755), 0);
	char *argv[] = {(char *)ts_joseki(), "match", "--engine-a", "builtin", "--engine-b", eng,
	                "--games",           "2",     "--nodes",    "100",     NULL};
	pid_t pid = ts_spawn(argv, out, err, false);
	/* Until B has been asked for a move. */
	for (int i = 0; i < 600; i++) {
		char *t = ts_read_file(tr, NULL);
		bool asked = t && strstr(t, "\ngo ");
		free(t);
		if (asked) break;
		usleep(50000);
	}
	kill(pid, SIGTERM);
	int st = 0;
	waitpid(pid, &st, 0);
	char *o = ts_read_file(out, NULL), *e = ts_read_file(err, NULL);
	if (!o || !strstr(o, ": 0 games, A +0 =0 -0, score -, elo - [-, -] (95%)") || !e ||
	    !strstr(e, "no game was played"))
		fail_msg("status 0x%x: %s%s", st, o ? o : "", e ? e : "");
	free(o), free(e), free(text), free(eng), free(tr), free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Two move orders of one opening play the same games (a new user counted
 * 16 games that were about 7): said, the first pair named; none said for
 * openings that differ. */
static void test_match__openings_that_transpose_are_said(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *op = write_openings(dir, "startpos moves 2g2f 8c8d 7g7f 8d8e\n"
	                               "startpos moves 7g7f 3c3d\n"
	                               "startpos moves 7g7f 8c8d 2g2f 8d8e\n"
	                               "startpos moves 7g7f 3c3d\n");
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s match --engine-a builtin --engine-b builtin --openings %s --games 2 "
	                 "--nodes 100 --max-moves 10",
	                 ts_joseki(), op);
	assert_int_equal(rc, 0);
	if (!strstr(err, "match: --openings: 2 of the 4 openings of ") ||
	    !strstr(err, " reach the position an earlier one reaches (the first: opening 3, as "
	                 "opening 1): they play its games again"))
		fail_msg("not said: %s", err);
	free(out), free(err), free(op);
	op = write_openings(dir, "startpos moves 2g2f 8c8d\nstartpos moves 7g7f 8c8d\n");
	rc = ts_runf(&out, &err,
	             "%s match --engine-a builtin --engine-b builtin --openings %s --games 2 "
	             "--nodes 100 --max-moves 10",
	             ts_joseki(), op);
	assert_int_equal(rc, 0);
	assert_null(strstr(err, "earlier one reaches"));
	free(out), free(err), free(op);
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
	/* Clock and SPRT options: bad usage, said plainly. */
	const struct {
		const char *args, *says;
	} usage[] = {
	    {"--tc 1x", "time control '1x': '1x' is not a time"},
	    {"--tc 1 --tc 2 --tc 3", "--tc at most 2 times"},
	    {"--tc 1+1 --byoyomi 100", "clock A has both an increment and a byoyomi"},
	    {"--tc 60 --byoyomi 100 --tc 1+1", "clock B has both"},
	    {"--tc 1 --nodes 10", "give only one of --nodes, --movetime, or clocks"},
	    {"--byoyomi 0", "clock A gives no time"},
	    {"--sprt 5,0", "--sprt '5,0': wants ELO0 < ELO1"},
	    {"--time-margin -1", "--time-margin wants a number from 0 to 600000, not '-1'"},
	};
	for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
		rc = ts_runf(&out, &err, "%s match --engine-a builtin --engine-b builtin %s",
		             ts_joseki(), usage[i].args);
		assert_int_equal(rc, 2);
		if (!strstr(err, usage[i].says))
			fail_msg("'%s' says '%s', not '%s'", usage[i].args, err, usage[i].says);
		free(out), free(err);
	}
	free(op);
	ts_rmtree(dir);
	free(dir);
}

/* ---- clocks ------------------------------------------------------------- */

/* One go command a script engine logged (script_engine.py --go-log). */
typedef struct {
	int ply;                                     /* moves of the position */
	long long btime, wtime, binc, winc, byoyomi; /* -1: not sent */
} GoLine;

/* The go lines of a log, in order; asserts each is a clock `go`. */
static int read_go_log(const char *path, GoLine *out, int max)
{
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	int n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		assert_true(n < max);
		GoLine *g = &out[n++];
		*g = (GoLine){.btime = -1, .wtime = -1, .binc = -1, .winc = -1, .byoyomi = -1};
		char *save, *w = strtok_r(line, " ", &save);
		g->ply = atoi(w);
		assert_string_equal(strtok_r(NULL, " ", &save), "go");
		while ((w = strtok_r(NULL, " ", &save))) {
			char *v = strtok_r(NULL, " ", &save);
			assert_non_null(v);
			long long x = atoll(v);
			if (!strcmp(w, "btime"))
				g->btime = x;
			else if (!strcmp(w, "wtime"))
				g->wtime = x;
			else if (!strcmp(w, "binc"))
				g->binc = x;
			else if (!strcmp(w, "winc"))
				g->winc = x;
			else if (!strcmp(w, "byoyomi"))
				g->byoyomi = x;
			else
				fail_msg("unexpected go word '%s'", w);
		}
		assert_true(g->btime >= 0 && g->wtime >= 0);
	}
	free(text);
	return n;
}

/* A script engine playing GAME20 (with a word replaced) that logs its go lines. */
static char *clock_engine(const char *dir, const char *name, const char *moves, int think)
{
	char *args, *file, *path;
	assert_true(asprintf(&args, "--moves '%s' --think %d --go-log %s/%s.go", moves, think, dir,
	                     name) > 0);
	assert_true(asprintf(&file, "%s.sh", name) > 0);
	path = write_engine(dir, file, args);
	free(args), free(file);
	return path;
}

static int go_log(const char *dir, const char *name, GoLine *out, int max)
{
	char *path;
	assert_true(asprintf(&path, "%s/%s.go", dir, name) > 0);
	int n = read_go_log(path, out, max);
	free(path);
	return n;
}

static char *record_of(const char *dir, const char *sub, int game)
{
	char *path, *text;
	assert_true(asprintf(&path, "%s/%s/game-%04d.csa", dir, sub, game) > 0);
	assert_non_null(text = ts_read_file(path, NULL));
	free(path);
	return text;
}

static json_t *jarr(json_t *o, const char *k, size_t i)
{
	json_t *v = json_array_get(json_object_get(o, k), i);
	assert_non_null(v);
	return v;
}

/*
 * One game on clocks (the match options in clock) between two script
 * engines playing moves, thinking think ms a move; their go lines into ga
 * (A, Black: plies 0, 2, ..., 20) and gb (B: plies 1, ..., 19). The script
 * ends at ply 20, where A resigns. Each side's clock stands still while the
 * other thinks.
 */
static json_t *clock_game(const char *dir, const char *moves, int think, const char *clock,
                          GoLine ga[11], GoLine gb[10])
{
	char *a = clock_engine(dir, "a", moves, think);
	char *b = clock_engine(dir, "b", moves, think);
	json_t *m =
	    ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 1 %s --out %s/out --json",
	                ts_joseki(), a, b, clock, dir);
	assert_game(m, 0, "resign", "white", "loss", 20);
	GoLine all[32];
	int n = go_log(dir, "a", all, 32);
	assert_int_equal(n, 11);
	memcpy(ga, all, 11 * sizeof *ga);
	n = go_log(dir, "b", all, 32);
	assert_int_equal(n, 10);
	memcpy(gb, all, 10 * sizeof *gb);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(ga[i].ply, 2 * i);
		assert_int_equal(gb[i].ply, 2 * i + 1);
		assert_int_equal(gb[i].btime, ga[i + 1].btime);
		assert_int_equal(ga[i].wtime, gb[i].wtime);
	}
	free(a), free(b);
	return m;
}

/* The node budgets of a script engine's go log ("N go nodes X"), in order;
 * the log is removed after. */
static int read_nodes(const char *dir, const char *name, long long *out, int max)
{
	char *path;
	assert_true(asprintf(&path, "%s/%s.go", dir, name) > 0);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	int n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		int ply;
		long long x;
		assert_int_equal(sscanf(line, "%d go nodes %lld", &ply, &x), 2);
		assert_true(n < max);
		out[n++] = x;
	}
	free(text);
	assert_int_equal(unlink(path), 0);
	free(path);
	return n;
}

/* --nodes-jitter: every search's nodes within the percentage of --nodes, not
 * all the same, drawn from the seed (the same seed, the same budgets). */
static void test_match__nodes_jitter_varies_the_budget_by_the_seed(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *a = clock_engine(dir, "a", GAME20, 0), *b = clock_engine(dir, "b", GAME20, 0);
	long long runs[3][64];
	int n[3];
	static const char *const flags[3] = {"--nodes-jitter 10 --seed 3",
	                                     "--nodes-jitter 10 --seed 3",
	                                     "--nodes-jitter 10 --seed 4"};
	for (int r = 0; r < 3; r++) {
		json_t *m = ts_run_json(
		    0, "%s match --engine-a %s --engine-b %s --games 2 --nodes 10000 %s --json",
		    ts_joseki(), a, b, flags[r]);
		assert_int_equal(ts_jint(m, "nodes_jitter"), 10);
		json_decref(m);
		n[r] = read_nodes(dir, "a", runs[r], 32);
		n[r] += read_nodes(dir, "b", runs[r] + n[r], 32);
		assert_int_equal(n[r], 42); /* 21 searches a game: A resigns at the 21st */
		long long lo = runs[r][0], hi = runs[r][0];
		for (int i = 0; i < n[r]; i++) {
			assert_in_range(runs[r][i], 9000, 11000);
			lo = runs[r][i] < lo ? runs[r][i] : lo;
			hi = runs[r][i] > hi ? runs[r][i] : hi;
		}
		assert_true(hi - lo > 1000); /* spread over the range, not one value */
	}
	assert_memory_equal(runs[0], runs[1], sizeof runs[0][0] * 42);
	assert_memory_not_equal(runs[0], runs[2], sizeof runs[0][0] * 42);
	/* Without it, exactly --nodes; and it wants a nodes budget. */
	json_decref(
	    ts_run_json(0, "%s match --engine-a %s --engine-b %s --games 1 --nodes 10000 --json",
	                ts_joseki(), a, b));
	long long plain[32];
	int k = read_nodes(dir, "a", plain, 32);
	assert_int_equal(k, 11);
	for (int i = 0; i < k; i++) assert_int_equal(plain[i], 10000);
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(&out, &err,
	            "%s match --engine-a %s --engine-b %s --movetime 10 --nodes-jitter 5",
	            ts_joseki(), a, b),
	    2);
	assert_non_null(strstr(err, "--nodes-jitter needs --nodes"));
	free(out), free(err), free(a), free(b);
	ts_rmtree(dir);
	free(dir);
}

/* The times "engine ready" stands in a log (one per process started). */
static int ready_lines(const char *dir, const char *log)
{
	char *path;
	assert_true(asprintf(&path, "%s/%s", dir, log) > 0);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	int n = 0;
	for (const char *p = text; (p = strstr(p, "engine ready")); p++) n++;
	free(text);
	free(path);
	return n;
}

/* --restart-engines: a new process for every game, on both sides; without
 * it one process plays them all. */
static void test_match__restart_engines_gives_every_game_a_new_process(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *e = write_engine(dir, "e.sh", "--moves '" GAME20 "'");
	static const char *const flags[2] = {"", "--restart-engines"};
	for (int r = 0; r < 2; r++) {
		json_decref(
		    ts_run_json(0,
		                "%s match --engine-a %s --engine-b %s --games 3 --nodes 100 %s "
		                "--out %s/out%d --json",
		                ts_joseki(), e, e, flags[r], dir, r));
		char a[64], b[64];
		snprintf(a, sizeof a, "out%d/engine-a-1.log", r);
		snprintf(b, sizeof b, "out%d/engine-b-1.log", r);
		assert_int_equal(ready_lines(dir, a), r ? 3 : 1);
		assert_int_equal(ready_lines(dir, b), r ? 3 : 1);
	}
	free(e);
	ts_rmtree(dir);
	free(dir);
}

/* Black thinks 1.2 s at ply 4: its record line says T1. */
#define GAME20_SLOW4                                                                               \
	"7g7f 3c3d 2g2f 8c8d 2f2e@1200 8d8e 6i7h 4a3b 3i3h 7a7b 5i6h 5a4b 1g1f 1c1d 9g9f 9c9d "    \
	"4i5h 6a5b 3g3f 7c7d"

static void test_match__fischer_clocks_count_down_with_the_increment(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	GoLine ga[11], gb[10];
	const int na = 11, nb = 10;
	json_t *m = clock_game(dir, GAME20_SLOW4, 150, "--tc 3+0.5", ga, gb);
	assert_int_equal(ga[0].btime, 3000);
	assert_int_equal(ga[0].wtime, 3000);
	for (int i = 0; i < na; i++) {
		assert_int_equal(ga[i].binc, 500);
		assert_int_equal(ga[i].winc, 500);
		assert_int_equal(ga[i].byoyomi, -1);
	}
	for (int i = 0; i < nb; i++) {
		assert_int_equal(gb[i].binc, 500);
		assert_int_equal(gb[i].byoyomi, -1);
	}
	/* Each move cost what the engine took (150 ms; 1.2 s at ply 4), less the
	 * increment credited as it started. */
	for (int i = 0; i + 1 < na; i++) {
		long long used = ga[i].btime + 500 - gb[i].btime;
		long long want = ga[i].ply == 4 ? 1200 : 150;
		if (used < want || used > want + 1000)
			fail_msg("A's move at ply %d cost %lld ms, not %lld", ga[i].ply, used,
			         want);
	}
	for (int i = 0; i < nb; i++) {
		long long used = gb[i].wtime + 500 - ga[i + 1].wtime;
		if (used < 150 || used > 1150)
			fail_msg("B's move at ply %d cost %lld ms, not 150", gb[i].ply, used);
	}
	/* What is left is the main time, the increments, less the time used. */
	json_t *g = game_of(m, 0);
	long long left_a = json_integer_value(jarr(g, "clock_ms", 0));
	long long used_a = json_integer_value(jarr(g, "time_ms", 0));
	long long left_b = json_integer_value(jarr(g, "clock_ms", 1));
	long long used_b = json_integer_value(jarr(g, "time_ms", 1));
	assert_int_equal(left_a, 3000 + 11 * 500 - used_a);
	assert_int_equal(left_b, 3000 + 10 * 500 - used_b);
	assert_true(used_a >= 11 * 150 + 1050);
	json_t *tc = json_object_get(m, "time_control");
	assert_int_equal(ts_jint(json_object_get(tc, "a"), "main_ms"), 3000);
	assert_int_equal(ts_jint(json_object_get(tc, "b"), "inc_ms"), 500);
	assert_int_equal(ts_jint(tc, "margin_ms"), MATCH_TIME_MARGIN_DEFAULT);
	/* The record: the time control as CSA V3.0 and floodgate write it, the real seconds. */
	char *rec = record_of(dir, "out", 1);
	assert_non_null(strstr(rec, "\n$TIME:3+0+0.5\n'Increment:0.5\n"));
	assert_null(strstr(rec, "$TIME_LIMIT"));
	assert_non_null(strstr(rec, "\n$START_TIME:"));
	assert_non_null(strstr(rec, "\n+2625FU\nT1\n"));
	assert_non_null(strstr(rec, "\n+7776FU\nT0\n"));
	free(rec);
	char *out;
	assert_true(asprintf(&out, "%s/out", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__byoyomi_follows_the_main_time(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	GoLine ga[32], gb[32];
	const int na = 11, nb = 10;
	/* A generous margin: 200 ms of thinking must not lose on a loaded machine. */
	json_t *m =
	    clock_game(dir, GAME20, 200, "--tc 0.3 --byoyomi 300 --time-margin 1000", ga, gb);
	assert_int_equal(ga[0].btime, 300);
	assert_int_equal(ga[0].wtime, 300);
	for (int i = 0; i < na; i++) {
		assert_int_equal(ga[i].byoyomi, 300);
		assert_int_equal(ga[i].binc, -1);
		/* The main time runs down to 0 and stays there; byoyomi is not banked. */
		if (i > 0) assert_true(ga[i].btime <= ga[i - 1].btime);
		if (i >= 2) assert_int_equal(ga[i].btime, 0);
	}
	for (int i = 0; i < nb; i++) assert_int_equal(gb[i].byoyomi, 300);
	/* 300 - 200 - (up to 1000 of load) >= 0, then nothing left. */
	assert_true(ga[1].btime <= 100);
	assert_int_equal(
	    ts_jint(json_object_get(json_object_get(m, "time_control"), "a"), "byoyomi_ms"), 300);
	char *rec = record_of(dir, "out", 1);
	assert_non_null(strstr(rec, "\n$TIME:0.3+0.3+0\n"));
	assert_null(strstr(rec, "'Increment"));
	free(rec);
	json_decref(m);

	/* Byoyomi only, each side its own: A 1 s, B 2 s; the record says both. */
	char *a2 = clock_engine(dir, "a2", "7g7f 3c3d 2g2f", 0);
	char *b2 = clock_engine(dir, "b2", "7g7f 3c3d 2g2f", 0);
	m = ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --games 2 --byoyomi 1000 --byoyomi "
	                "2000 --out %s/own --json",
	                ts_joseki(), a2, b2, dir);
	/* The script ends at ply 3, White to move: White resigns. */
	assert_game(m, 0, "resign", "black", "win", 3);
	assert_game(m, 1, "resign", "black", "loss", 3);
	int n2a = go_log(dir, "a2", ga, 32), n2b = go_log(dir, "b2", gb, 32);
	assert_int_equal(n2a, 4);
	assert_int_equal(n2b, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ga[i].byoyomi, 1000);
		assert_int_equal(gb[i].byoyomi, 2000);
		assert_int_equal(ga[i].btime, 0);
		assert_int_equal(ga[i].wtime, 0);
	}
	rec = record_of(dir, "own", 1); /* A is Black */
	assert_non_null(strstr(rec, "\n$TIME+:0+1+0\n$TIME-:0+2+0\n"));
	assert_null(strstr(rec, "$TIME_LIMIT"));
	free(rec);
	rec = record_of(dir, "own", 2); /* A is White */
	assert_non_null(strstr(rec, "\n$TIME+:0+2+0\n$TIME-:0+1+0\n"));
	free(rec);
	char *out;
	assert_true(asprintf(&out, "%s/own", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	/* The same byoyomi for both: V2.2's $TIME_LIMIT too. */
	m = ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --games 1 --tc 60 --byoyomi 10000 "
	                "--out %s/same --json",
	                ts_joseki(), a2, b2, dir);
	rec = record_of(dir, "same", 1);
	assert_non_null(strstr(rec, "\n$TIME_LIMIT:00:01+10\n$TIME:60+10+0\n"));
	free(rec);
	json_decref(m);
	free(a2), free(b2);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__a_side_past_its_clock_loses_on_time(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	/* Black thinks 1.5 s at ply 4 with a byoyomi of 0.4 s. */
	char *slow = clock_engine(dir, "slow", "7g7f 3c3d 2g2f 8c8d 2f2e@1500 8d8e", 0);
	json_t *m =
	    ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --games 2 --byoyomi 400 --out "
	                "%s/byo --json",
	                ts_joseki(), slow, slow, dir);
	/* Game 1: A is Black and loses on time; game 2: B is. */
	assert_game(m, 0, "time_up", "white", "loss", 4);
	assert_game(m, 1, "time_up", "white", "win", 4);
	const char *err = jstr(game_of(m, 0), "error");
	assert_non_null(strstr(err, "A: time up: "));
	assert_non_null(strstr(err, "400 ms on the clock"));
	assert_non_null(strstr(jstr(game_of(m, 1), "error"), "B: time up: "));
	assert_true(json_integer_value(jarr(game_of(m, 0), "time_ms", 0)) >= 1500);
	char *rec = record_of(dir, "byo", 1);
	assert_non_null(strstr(rec, "\n-8384FU\nT0\n"));
	assert_non_null(strstr(rec, "%TIME_UP\n"));
	assert_null(strstr(rec, "2625FU")); /* the late move is not played */
	free(rec);
	char *out;
	assert_true(asprintf(&out, "%s/byo", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	/* Fischer: 0.5 s and two increments of 0.1 s banked, one more for the move:
	 * 0.8 s (+ 0.1 s of margin) are gone after 1.5 s. */
	m = ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --games 1 --tc 0.5+0.1 --out "
	                "%s/fischer --json",
	                ts_joseki(), slow, slow, dir);
	assert_game(m, 0, "time_up", "white", "loss", 4);
	int used = 0, on_clock = 0;
	assert_int_equal(sscanf(jstr(game_of(m, 0), "error"),
	                        "A: time up: %d ms used, %d ms on the clock", &used, &on_clock),
	                 2);
	assert_true(used >= 1500 && on_clock <= 800 && on_clock > 600);
	json_decref(m);
	/* No answer at all: the driver stops waiting after the clock and its slack,
	 * and the side has lost on time (not a fault, no retry). */
	char *hang = clock_engine(dir, "hang", "7g7f hang", 0);
	m = ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --games 1 --byoyomi 200 --out "
	                "%s/hang --json",
	                ts_joseki(), hang, hang, dir);
	assert_game(m, 0, "time_up", "black", "win", 1);
	assert_non_null(strstr(jstr(game_of(m, 0), "error"), "B: time up: no answer"));
	GoLine gh[8];
	assert_int_equal(go_log(dir, "hang", gh, 8), 2); /* ply 0, then ply 1 once */
	assert_true(asprintf(&out, "%s/hang", dir) > 0);
	assert_replays(m, out);
	free(out);
	json_decref(m);
	free(slow), free(hang);
	ts_rmtree(dir);
	free(dir);
}

/* A book that knows GAME20's positions (plies 0..19), from a match's record. */
static char *game20_book(const char *dir)
{
	char *eng = write_engine(dir, "book20.sh", "--moves '" GAME20 "'");
	char *o = NULL, *e = NULL, *book;
	int rc = ts_runf(&o, &e, "%s match --engine-a %s --engine-b %s --games 1 --out %s/book20",
	                 ts_joseki(), eng, eng, dir);
	assert_int_equal(rc, 0);
	free(o), free(e);
	assert_true(asprintf(&book, "%s/book", dir) > 0);
	/* Its moves the book's, as a games-only book (minimax --games-book). */
	rc = ts_runf(&o, &e,
	             "%s ingest %s %s/book20/game-0001.csa --quiet && %s minimax %s --games-book "
	             "most-played --quiet",
	             ts_joseki(), book, dir, ts_joseki(), book);
	assert_int_equal(rc, 0);
	free(o), free(e), free(eng);
	return book;
}

static void test_match__a_book_move_costs_no_clock(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *book = game20_book(dir);
	char *a = clock_engine(dir, "a", GAME20, 100);
	char *b = clock_engine(dir, "b", GAME20, 100);
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a %s --engine-b %s --book-a %s --games 1 --tc 2 "
	                        "--out %s/out --json",
	                        ts_joseki(), a, b, book, dir);
	assert_game(m, 0, "resign", "white", "loss", 20);
	json_t *g = game_of(m, 0);
	assert_int_equal(json_integer_value(jarr(g, "book_plies", 0)), 10);
	assert_int_equal(json_integer_value(jarr(g, "book_plies", 1)), 0);
	/* A played plies 0..18 from its book and asked its engine at ply 20 (move 21). */
	assert_int_equal(json_integer_value(jarr(g, "exit_plies", 0)), 21);
	assert_int_equal(json_integer_value(jarr(g, "exit_plies", 1)), 2);
	GoLine ga[8], gb[16];
	assert_int_equal(go_log(dir, "a", ga, 8), 1);
	int nb = go_log(dir, "b", gb, 16);
	assert_int_equal(nb, 10);
	/* Ten book moves later A's clock is where it started. */
	assert_int_equal(ga[0].ply, 20);
	assert_int_equal(ga[0].btime, 2000);
	for (int i = 0; i < nb; i++) assert_int_equal(gb[i].btime, 2000);
	/* B's clock ran down by its ten moves of 100 ms (sudden death: no increment). */
	for (int i = 1; i < nb; i++) assert_true(gb[i].wtime <= gb[i - 1].wtime - 100);
	assert_true(ga[0].wtime <= gb[nb - 1].wtime - 100);
	/* The clocks at each side's exit: at A's, A's whole main time and B's
	 * clock as A's engine was told it; at B's (its first move), both whole. */
	json_t *ec = json_object_get(g, "exit_clock_ms");
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ec, 0), 0)), 2000);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ec, 0), 1)), ga[0].wtime);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ec, 1), 0)), 2000);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ec, 1), 1)), 2000);
	/* Only A's resignation cost A time. */
	long long used_a = json_integer_value(jarr(g, "time_ms", 0));
	assert_int_equal(json_integer_value(jarr(g, "clock_ms", 0)), 2000 - used_a);
	assert_true(used_a >= 100 && used_a < 2000);
	/* The book's moves show T0 and a book comment. */
	char *rec = record_of(dir, "out", 1);
	assert_non_null(strstr(rec, "\n+7776FU\nT0\n'** 0\n"));
	free(rec);
	json_decref(m);
	free(a), free(b), free(book);
	ts_rmtree(dir);
	free(dir);
}

static void test_match__book_against_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *book = game20_book(dir);
	char *copy = NULL, *o = NULL, *e = NULL;
	/* B's book: the same positions in another directory (a second handle). */
	assert_true(asprintf(&copy, "%s/book-b", dir) > 0);
	assert_int_equal(ts_runf(&o, &e, "cp -r %s %s", book, copy), 0);
	free(o), free(e);
	char *eng = write_engine(dir, "eng.sh", "--moves '" GAME20 "'");
	const char *books_b[2] = {book, copy};
	for (int run = 0; run < 2; run++) {
		json_t *m =
		    ts_run_json(0,
		                "%s match --engine-a %s --engine-b %s --book-a %s --book-b %s "
		                "--games 2 --out %s/run%d --json",
		                ts_joseki(), eng, eng, book, books_b[run], dir, run);
		/* Both books play the line to its end; the side to move at ply 20 leaves
		 * its book, and its engine (whose script ends there) resigns. */
		assert_game(m, 0, "resign", "white", "loss", 20);
		assert_game(m, 1, "resign", "white", "win", 20);
		for (int i = 0; i < 2; i++) {
			json_t *g = game_of(m, i);
			assert_int_equal(json_integer_value(jarr(g, "book_plies", 0)), 10);
			assert_int_equal(json_integer_value(jarr(g, "book_plies", 1)), 10);
			assert_int_equal(ts_jint(g, "engine_moves"), 1);
			/* The side that was Black left at move 21; the other never did. */
			int black = i == 0 ? 0 : 1;
			assert_int_equal(json_integer_value(jarr(g, "exit_plies", (size_t)black)),
			                 21);
			assert_true(json_is_null(jarr(g, "exit_plies", (size_t)!black)));
		}
		json_t *bp = json_object_get(m, "book_plies");
		assert_true(json_real_value(json_object_get(bp, "a")) == 10.0);
		assert_true(json_real_value(json_object_get(bp, "b")) == 10.0);
		json_t *ex = json_object_get(m, "exit_plies");
		for (int s = 0; s < 2; s++) {
			json_t *x = json_object_get(ex, s ? "b" : "a");
			assert_int_equal(ts_jint(x, "games"), 1);
			assert_int_equal(ts_jint(x, "never"), 1);
			assert_int_equal(ts_jint(x, "median"), 21);
			assert_int_equal(ts_jint(json_object_get(x, "histogram"), "21"), 1);
		}
		/* One pair: a loss and a win. */
		json_t *p = json_object_get(m, "pairs");
		assert_int_equal(ts_jint(p, "count"), 1);
		assert_int_equal(ts_jint(p, "wl"), 1);
		assert_int_equal(ts_jint(p, "dd"), 0);
		assert_int_equal(json_integer_value(jarr(p, "pentanomial", MATCH_DD_WL)), 1);
		char *out;
		assert_true(asprintf(&out, "%s/run%d", dir, run) > 0);
		assert_replays(m, out);
		free(out);
		json_decref(m);
	}
	/* The summary line's short form: median exit ply [quartiles] per side. */
	int rc = ts_runf(&o, &e,
	                 "%s match --engine-a %s --engine-b %s --book-a %s --book-b %s --games 2",
	                 ts_joseki(), eng, eng, book, copy);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(o, "+book vs B ScriptEngine+book: 2 games, A +1 =0 -1"));
	assert_non_null(strstr(o, ", 1 pairs LL-LD-DD-WD-WW 0-0-1-0-0, "));
	assert_non_null(
	    strstr(o, ", book plies A 10.0 B 10.0, exit ply A 21 [21, 21] B 21 [21, 21], "));
	free(o), free(e);
	free(eng), free(book), free(copy);
	ts_rmtree(dir);
	free(dir);
}

/* ---- statistics --------------------------------------------------------- */

static void test_match__pairs_are_counted_pentanomially(void **state)
{
	(void)state;
	/* A's results, two games a pair: WW WD DD WL LD LL WW DW. */
	const int res[][2] = {{1, 1}, {1, 0}, {0, 0}, {1, -1}, {-1, 0}, {-1, -1}, {1, 1}, {0, 1}};
	MatchPairs p = {0};
	for (int i = 0; i < 8; i++) match_pairs_add(&p, res[i][0], res[i][1]);
	match_pairs_finish(&p);
	assert_int_equal(p.pairs, 8);
	const int want[MATCH_PENTA_NB] = {1, 1, 2, 2, 2};
	for (int k = 0; k < MATCH_PENTA_NB; k++) assert_int_equal(p.penta[k], want[k]);
	assert_int_equal(p.dd, 1);
	assert_int_equal(p.wl, 1);
	/* By hand: pair scores 0, 1/4, 1/2 ×2, 3/4 ×2, 1 ×2 → mean 19/32; the
	 * deviations in 32nds -19, -11, -3, -3, 5, 5, 13, 13 → variance 888/1024/8;
	 * se = √(var/8) = 0.1164036; Elo = −400·log10(1/s − 1) at s and s ± 1.96·se;
	 * LOS = Φ((s − ½)/se). */
	assert_true(p.score == 0.59375);
	assert_true(fabs(p.elo - 65.9241) < 1e-3);
	assert_true(fabs(p.elo_low - -95.7405) < 1e-3);
	assert_true(fabs(p.elo_high - 265.6584) < 1e-3);
	assert_true(fabs(p.los - 0.789702) < 1e-5);
	/* The same 16 games one by one (+7 =5 -4): the same Elo, another
	 * interval (narrower: these pairs' two games tend to agree). */
	double elo, lo, hi;
	match_elo(7, 5, 4, &elo, &lo, &hi);
	assert_true(fabs(elo - p.elo) < 1e-9);
	assert_true(hi - lo < p.elo_high - p.elo_low);
	/* Openings that decide the game (Black wins each): every pair a win and a
	 * loss. The games look like a coin flipped 8 times; the pairs show no
	 * difference between the sides at all. */
	MatchPairs wl = {0};
	for (int i = 0; i < 4; i++) match_pairs_add(&wl, 1, -1);
	match_pairs_finish(&wl);
	match_elo(4, 0, 4, &elo, &lo, &hi);
	assert_true(lo < -150 && hi > 150);
	assert_true(wl.elo == 0 && wl.elo_low == 0 && wl.elo_high == 0 && wl.los == 0.5);
	assert_int_equal(wl.wl, 4);
	/* All pairs alike: no spread, LOS certain (or even). */
	MatchPairs ww = {0}, dd = {0}, none = {0};
	for (int i = 0; i < 3; i++) match_pairs_add(&ww, 1, 1), match_pairs_add(&dd, 0, 0);
	match_pairs_finish(&ww);
	match_pairs_finish(&dd);
	match_pairs_finish(&none);
	assert_true(isinf(ww.elo) && ww.elo > 0 && ww.los == 1.0);
	assert_true(dd.elo == 0 && dd.elo_low == 0 && dd.elo_high == 0 && dd.los == 0.5);
	assert_true(none.pairs == 0 && isnan(none.los));
}

/* From tests/play/sprt_reference.py (an implementation of the published
 * formulas apart from play/match_stats.c; see its header). */
static const struct {
	int penta[MATCH_PENTA_NB];
	double elo0, elo1, llr;
} SPRT_TABLE[] = {
    {{10, 20, 40, 25, 15}, 0, 5, 0.293285791},    {{10, 20, 40, 25, 15}, -5, 5, 0.654275426},
    {{30, 60, 100, 55, 25}, 0, 10, -1.053647273}, {{3, 41, 160, 60, 9}, 0, 5, 1.450137485},
    {{0, 5, 20, 8, 0}, 0, 10, 0.301627231},       {{0, 0, 0, 0, 6}, 0, 10, 0.170264826},
    {{4, 0, 0, 0, 0}, 0, 10, -0.116845030},       {{12, 30, 70, 31, 12}, -3, 1, 0.042997614},
    {{0, 0, 0, 0, 7}, 0, 200, 2.929161895},       {{0, 0, 0, 0, 8}, 0, 200, 3.347539350},
    {{4, 0, 0, 0, 0}, 0, 200, -2.933440661},      {{5, 0, 0, 0, 0}, 0, 200, -3.666356068},
    {{20, 10, 5, 0, 0}, 0, 10, -1.021859846},
};

static void test_match__sprt_llr_agrees_with_the_reference(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof SPRT_TABLE / sizeof *SPRT_TABLE; i++) {
		double llr =
		    match_sprt_llr(SPRT_TABLE[i].penta, SPRT_TABLE[i].elo0, SPRT_TABLE[i].elo1);
		if (fabs(llr - SPRT_TABLE[i].llr) > 1e-6)
			fail_msg("row %zu: LLR %.9f, reference %.9f", i, llr, SPRT_TABLE[i].llr);
	}
	const int none[MATCH_PENTA_NB] = {0};
	assert_true(match_sprt_llr(none, 0, 5) == 0);
	double lo, hi;
	match_sprt_bounds(&(MatchSprt){0, 5, 0.05, 0.05}, &lo, &hi);
	assert_true(fabs(lo - -2.944438979166) < 1e-9 && fabs(hi - 2.944438979166) < 1e-9);
	match_sprt_bounds(&(MatchSprt){0, 5, 0.05, 0.1}, &lo, &hi);
	assert_true(fabs(lo - -2.251291798606) < 1e-9 && fabs(hi - 2.890371757896) < 1e-9);
	/* The option string. */
	MatchSprt s;
	char err[MATCH_ERRLEN];
	assert_int_equal(match_sprt_parse(&s, "0,5", err), 0);
	assert_true(s.elo0 == 0 && s.elo1 == 5 && s.alpha == 0.05 && s.beta == 0.05);
	assert_int_equal(match_sprt_parse(&s, "-1.5,3,0.1,0.2", err), 0);
	assert_true(s.elo0 == -1.5 && s.elo1 == 3 && s.alpha == 0.1 && s.beta == 0.2);
	const char *bad[] = {"5,0", "0",    "0,5,0.05", "0,5,0,0.05", "0,5,0.6,0.5",
	                     "a,b", "0,5,", "0,inf",    " 0,5",       "0,2000"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (match_sprt_parse(&s, bad[i], err) != MATCH_EINVAL)
			fail_msg("--sprt '%s' was taken", bad[i]);
	assert_non_null(strstr(err, "--sprt '0,2000'"));
	/* Time controls. */
	TimeControl tc = {.byoyomi_ms = 7};
	assert_int_equal(match_tc_parse(&tc, "60+1", err), 0);
	assert_true(tc.main_ms == 60000 && tc.inc_ms == 1000 && tc.byoyomi_ms == 7);
	assert_int_equal(match_tc_parse(&tc, "10+0.1", err), 0);
	assert_true(tc.main_ms == 10000 && tc.inc_ms == 100);
	assert_int_equal(match_tc_parse(&tc, "5m+10s", err), 0);
	assert_true(tc.main_ms == 300000 && tc.inc_ms == 10000);
	assert_int_equal(match_tc_parse(&tc, "500ms", err), 0);
	assert_true(tc.main_ms == 500 && tc.inc_ms == 0);
	assert_int_equal(match_tc_parse(&tc, "1h+50ms", err), 0);
	assert_true(tc.main_ms == 3600000 && tc.inc_ms == 50);
	const char *badtc[] = {"", "+1", "1+", "-1+0", "1e3", "1+1+1", "1x", "inf", "101h", "1..2"};
	for (size_t i = 0; i < sizeof badtc / sizeof *badtc; i++)
		if (match_tc_parse(&tc, badtc[i], err) != MATCH_EINVAL)
			fail_msg("--tc '%s' was taken", badtc[i]);
}

static void test_match__sprt_stops_the_match_at_its_verdict(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	/* An engine that resigns at once: the built-in engine wins every game. */
	char *resigner = write_engine(dir, "resign.sh", "--moves ''");
	for (int conc = 1; conc <= 2; conc++) {
		json_t *m =
		    ts_run_json(0,
		                "%s match --engine-a builtin --engine-b %s --games 100 --nodes "
		                "300 --sprt 0,200 --concurrency %d --out %s/h1-%d --json",
		                ts_joseki(), resigner, conc, dir, conc);
		/* The reference table: 7 WW pairs give 2.929 (< 2.944), 8 give 3.348. */
		json_t *sp = json_object_get(m, "sprt");
		assert_string_equal(jstr(sp, "verdict"), "H1");
		assert_int_equal(ts_jint(sp, "pairs"), 8);
		assert_true(fabs(json_real_value(json_object_get(sp, "llr")) - 3.348) < 1e-3);
		assert_true(fabs(json_real_value(json_object_get(sp, "upper")) - 2.944438979) <
		            1e-6);
		json_t *p = json_object_get(m, "pairs");
		assert_int_equal(ts_jint(p, "count"), 8);
		assert_int_equal(ts_jint(p, "ww"), 8);
		/* With two games at a time a game of pair 9 may have ended first; games
		 * still running at the verdict are abandoned, and no more start. */
		int played = (int)ts_jint(m, "played");
		if (conc == 1)
			assert_int_equal(played, 16);
		else
			assert_true(played == 16 || played == 17);
		assert_int_equal(ts_jint(m, "wins"), played);
		int records = 0;
		for (int i = 1; i <= 100; i++) {
			char *path;
			assert_true(asprintf(&path, "%s/h1-%d/game-%04d.csa", dir, conc, i) > 0);
			records += access(path, F_OK) == 0;
			free(path);
		}
		assert_int_equal(records, played);
		json_decref(m);
	}
	/* The other way round: H0 after five lost pairs (-3.666; four give -2.933). */
	char *o = NULL, *e = NULL;
	int rc = ts_runf(&o, &e,
	                 "%s match --engine-a %s --engine-b builtin --games 100 --nodes 300 --sprt "
	                 "0,200",
	                 ts_joseki(), resigner);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(o, ": 10 games, A +0 =0 -10, "));
	assert_non_null(strstr(o, ", 5 pairs LL-LD-DD-WD-WW 5-0-0-0-0, "));
	assert_non_null(strstr(o, ", LLR -3.67 [-2.94, 2.94] H0, "));
	free(o), free(e);
	/* Without a verdict the LLR is still reported. */
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a builtin --engine-b %s --games 4 --nodes 300 "
	                        "--sprt 0,200 --json",
	                        ts_joseki(), resigner);
	json_t *sp = json_object_get(m, "sprt");
	assert_true(json_is_null(json_object_get(sp, "verdict")));
	assert_int_equal(ts_jint(m, "played"), 4);
	const int two[MATCH_PENTA_NB] = {0, 0, 0, 0, 2};
	assert_true(
	    fabs(json_real_value(json_object_get(sp, "llr")) - match_sprt_llr(two, 0, 200)) < 1e-3);
	json_decref(m);
	free(resigner);
	ts_rmtree(dir);
	free(dir);
}

/* ---- real engines -------------------------------------------------------- */

static void require_engine(const char *path)
{
	if (access(path, X_OK) != 0)
		fail_msg("%s is not installed: tools/install-deps.sh installs it (Debian packages "
		         "fairy-stockfish, gpsshogi)",
		         path);
}

/* Every game of a real match ended by the rules, with the clocks in the record. */
static void assert_clean_games(json_t *m, const char *dir, int games)
{
	assert_int_equal(ts_jint(m, "played"), games);
	for (int i = 0; i < games; i++) {
		json_t *g = game_of(m, i);
		const char *end = jstr(g, "end");
		if (!strcmp(end, "crash") || !strcmp(end, "illegal_move") ||
		    !strcmp(end, "timeout") || !strcmp(end, "time_up"))
			fail_msg("game %d ended by %s: %s", i + 1, end,
			         json_string_value(json_object_get(g, "error")));
		for (int s = 0; s < 2; s++) {
			assert_true(json_integer_value(jarr(g, "time_ms", (size_t)s)) > 0);
			assert_true(json_integer_value(jarr(g, "clock_ms", (size_t)s)) >= 0);
		}
		char *rec = record_of(dir, ".", i + 1);
		assert_non_null(strstr(rec, "\n$TIME:"));
		free(rec);
	}
	assert_replays(m, dir);
}

static void test_match__real_engines_play_on_clocks(void **state)
{
	(void)state;
	const char *fairy = "/usr/games/fairy-stockfish", *gps = "/usr/games/gpsusi";
	require_engine(fairy);
	require_engine(gps);
	char *dir = ts_mkdtemp();
	/* gpsusi writes every setoption into its home's gpsusi.conf, read back at
	 * its next start: a home of the test's own, or LimitDepth 4 stays in the
	 * machine's for every later gpsusi (docs/search.md). */
	ts_gpsshogi_home(dir);
	/* Small clocks; a wide margin, because the test machine may be loaded and
	 * an engine that spends its clock to the last ms is then late by more than
	 * the default 100 ms. gpsshogi: no book, shallow, one thread. */
	json_t *m =
	    ts_run_json(0,
	                "%s match --engine-a %s --engine-b %s --option-b BookDepth=0 "
	                "--option-b LimitDepth=4 --option-b Thread=1 --games 2 --tc 2 "
	                "--byoyomi 300 --time-margin 3000 --max-moves 24 --out %s/gps --json",
	                ts_joseki(), fairy, gps, dir);
	assert_non_null(strstr(jstr(m, "engine_a"), "Fairy-Stockfish"));
	assert_non_null(strstr(jstr(m, "engine_b"), "gpsshogi"));
	char *out;
	assert_true(asprintf(&out, "%s/gps", dir) > 0);
	assert_clean_games(m, out, 2);
	free(out);
	json_decref(m);
	/* The built-in engine on a Fischer clock against fairy-stockfish. */
	m = ts_run_json(0,
	                "%s match --engine-a builtin --engine-b %s --games 2 --tc 1+0.1 "
	                "--time-margin 3000 --max-moves 24 --out %s/builtin --json",
	                ts_joseki(), fairy, dir);
	assert_true(asprintf(&out, "%s/builtin", dir) > 0);
	assert_clean_games(m, out, 2);
	/* The built-in engine spends what `joseki usi` would: at most a fifth of
	 * its clock plus the increment a move, so it never runs its clock down. */
	for (int i = 0; i < 2; i++)
		assert_true(json_integer_value(jarr(game_of(m, i), "clock_ms", 0)) > 100);
	free(out);
	json_decref(m);
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
	    cmocka_unit_test(test_match__only_the_games_given_are_played_as_in_the_whole_match),
	    cmocka_unit_test(test_match__perpetual_check_loses_for_the_checking_side),
	    cmocka_unit_test(test_match__declarations_are_judged_by_the_rules),
	    cmocka_unit_test(test_match__crash_and_illegal_move_lose_and_the_match_goes_on),
	    cmocka_unit_test(test_match__an_engine_that_refuses_the_searches_stops_the_match),
	    cmocka_unit_test(test_match__a_few_games_are_said_to_be_too_few),
	    cmocka_unit_test(test_match__a_side_with_a_book_plays_its_moves),
	    cmocka_unit_test(test_match__openings_that_transpose_are_said),
	    cmocka_unit_test(test_match__stopped_before_a_game_ends_gives_no_figures),
	    cmocka_unit_test(test_match__bad_input_is_reported),
	    cmocka_unit_test(test_match__elo),
	    cmocka_unit_test(test_match__progress_goes_to_the_callback_and_null_is_quiet),
	    cmocka_unit_test(test_match__fischer_clocks_count_down_with_the_increment),
	    cmocka_unit_test(test_match__byoyomi_follows_the_main_time),
	    cmocka_unit_test(test_match__a_side_past_its_clock_loses_on_time),
	    cmocka_unit_test(test_match__a_book_move_costs_no_clock),
	    cmocka_unit_test(test_match__book_against_book),
	    cmocka_unit_test(test_match__pairs_are_counted_pentanomially),
	    cmocka_unit_test(test_match__sprt_llr_agrees_with_the_reference),
	    cmocka_unit_test(test_match__nodes_jitter_varies_the_budget_by_the_seed),
	    cmocka_unit_test(test_match__restart_engines_gives_every_game_a_new_process),
	    cmocka_unit_test(test_match__sprt_stops_the_match_at_its_verdict),
	    cmocka_unit_test(test_match__real_engines_play_on_clocks),
	};
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
