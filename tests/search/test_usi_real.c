/*
 * tests/search/test_usi_real.c — the USI driver against the two real engines
 * Debian ships (tools/install-deps.sh installs both; a missing one fails the
 * test with a message saying so):
 *  - fairy-stockfish (shogi by default; a banner line before `usi`): node
 *    budgets, MultiPV lines that are distinct, legal and carry depth, nodes
 *    and a score; a mate in one found as a mate; a mated position resigns;
 *  - gpsusi (gpsshogi; `go` takes only time controls, byoyomi in whole
 *    seconds, options written to a gpsusi.conf read back at the next start):
 *    a movetime budget sent as byoyomi gives a legal, scored line; a nodes
 *    budget is refused without a crash or a restart; a mated position
 *    resigns.
 * Each engine thinks a few positions at small budgets: seconds in all.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/search.h"
#include "search/usi_engine.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define MATE_IN_1 "sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1"
#define MATED "sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1"

/* Positions from the start and a few openings. */
static const char *const SPECS[] = {
    "startpos",
    "startpos moves 7g7f",
    "startpos moves 7g7f 3c3d 2g2f",
    "startpos moves 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b",
    "startpos moves 7g7f 8c8d 7i6h 3c3d 6h7g 7a6b",
};

typedef struct {
	char *dir;
	char log[1024];
	UsiEngine *e;
	SearchResult res;
	Position pos;
	bool restart; /* open_engine: restart_each_game */
} Fx;

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->log, sizeof f->log, "%s/engine.log", f->dir);
	ts_gpsshogi_home(f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	usi_engine_free(f->e);
	if (getenv("TEST_KEEP")) {
		char *log = ts_read_file(f->log, NULL);
		fprintf(stderr, "%s\n", log ? log : "");
		free(log);
	}
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void open_engine(Fx *f, const char *name, const UsiOption *opts, int nopts)
{
	UsiEngineConfig cfg;
	usi_engine_config_init(&cfg);
	cfg.path = ts_real_engine(name);
	cfg.options = opts;
	cfg.noptions = nopts;
	cfg.log_path = f->log;
	cfg.log_io = true;
	cfg.restart_each_game = f->restart;
	char err[SEARCH_ERRLEN];
	if (usi_engine_open(&f->e, &cfg, err) < 0) fail_msg("%s: %s", name, err);
}

/* Every line of f->res (1..max_lines of them): legal in spec's position,
 * distinct, a score in range, depth and nodes from the engine, a PV starting
 * with the move. (Fewer lines than asked for is real behaviour: a search
 * stopped by its node budget in the middle of an iteration reports the
 * unfinished MultiPV indices with the previous iteration's lines, and one of
 * them may repeat a move that now ranks higher; the driver drops the copy.) */
static void check_lines(Fx *f, const char *spec, int max_lines)
{
	char err[SHOGI_ERRLEN];
	if (position_parse(&f->pos, spec, err) < 0) fail_msg("%s: %s", spec, err);
	const SearchResult *r = &f->res;
	if (r->nlines < 1 || r->nlines > max_lines)
		fail_msg("%s: %d lines, 1..%d wanted (bestmove %s)", spec, r->nlines, max_lines,
		         r->bestmove_usi);
	assert_true(pos_is_legal(&f->pos, r->bestmove));
	for (int i = 0; i < r->nlines; i++) {
		const SearchLine *l = &r->lines[i];
		assert_true(pos_is_legal(&f->pos, l->move));
		for (int j = 0; j < i; j++) assert_int_not_equal(l->move, r->lines[j].move);
		assert_true(l->value > -VALUE_MATE && l->value < VALUE_MATE);
		if (l->depth < 1 || l->nodes < 1)
			fail_msg("%s: line %d (%s) has depth %d nodes %llu", spec, i + 1, l->usi,
			         l->depth, (unsigned long long)l->nodes);
		assert_true(l->pv_len >= 1);
		assert_int_equal(l->pv[0], l->move);
	}
}

/* A mated position: resign, no line; and the engine ran all along, first
 * start, no failure, retry or malformed line. */
static void mated_resigns_in_one_engine(Fx *f, const SearchBudget *b)
{
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, MATED, b, 1), 0);
	assert_true(f->res.resign);
	assert_int_equal(f->res.nlines, 0);
	UsiEngineStats st;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.starts, 1);
	assert_int_equal(st.crashes + st.failures + st.retries + st.malformed, 0);
}

static void test_search__fairy_stockfish_through_the_driver(void **state)
{
	Fx *f = *state;
	const UsiOption opts[] = {{"Threads", "1"}, {"Hash", "16"}};
	open_engine(f, "fairy-stockfish", opts, 2);
	assert_non_null(strstr(usi_engine_name(f->e), "Fairy-Stockfish"));
	SearchBudget b = {.kind = SEARCH_BUDGET_NODES, .amount = 3000};
	int lines = 0;
	for (size_t i = 0; i < sizeof SPECS / sizeof *SPECS; i++) {
		assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, SPECS[i], &b, 3), 0);
		check_lines(f, SPECS[i], 3);
		lines += f->res.nlines;
		/* A node budget is honoured (the last iteration may run a little over). */
		assert_true(f->res.lines[0].nodes <= 2 * b.amount);
		assert_int_equal(f->res.attempts, 1);
	}
	assert_true(lines > 2 * (int)(sizeof SPECS / sizeof *SPECS)); /* MultiPV works */
	/* A mate in one: found, as a mate of one ply. */
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, MATE_IN_1, &b, 1), 0);
	assert_string_equal(f->res.bestmove_usi, "G*5b");
	assert_true(f->res.lines[0].mate);
	assert_int_equal(f->res.lines[0].mate_plies, 1);
	mated_resigns_in_one_engine(f, &b);
	/* Its CPU time is counted (think --engine-seconds): it grows with the
	 * searches, by no more than their wall time (one search thread), and what
	 * a process used is kept when it is killed and started again. */
	SearchEngine *se = usi_engine_search(f->e);
	int64_t c0 = search_cpu_ms(se), wall = 0;
	assert_true(c0 >= 0);
	SearchBudget more = {.kind = SEARCH_BUDGET_NODES, .amount = 100000};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, SPECS[i], &more, 1), 0);
		wall += f->res.time_ms;
	}
	int64_t c1 = search_cpu_ms(se);
	if (c1 <= c0 || c1 - c0 > wall + 50)
		fail_msg("CPU %lld -> %lld ms over searches of %lld ms wall", (long long)c0,
		         (long long)c1, (long long)wall);
	assert_int_equal(kill(usi_engine_pid(f->e), SIGKILL), 0);
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, SPECS[0], &b, 1), 0);
	assert_true(search_cpu_ms(se) >= c1);
}

/* The bestmoves of one game: a new game, then SPECS in order at nodes. */
static void play_specs(Fx *f, uint64_t nodes, Move *out)
{
	SearchBudget b = {.kind = SEARCH_BUDGET_NODES, .amount = nodes};
	usi_engine_new_game(f->e);
	for (size_t i = 0; i < sizeof SPECS / sizeof *SPECS; i++) {
		assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, SPECS[i], &b, 1), 0);
		out[i] = f->res.bestmove;
	}
}

/* With restart_each_game, fairy-stockfish at a node budget answers a game's
 * positions the same way whatever it searched in the games before (told only
 * usinewgame, it does not always: think --opponent-restart, match
 * --restart-engines). */
static void test_search__fairy_stockfish_restarted_repeats_its_game(void **state)
{
	Fx *f = *state;
	f->restart = true;
	const UsiOption opts[] = {{"Threads", "1"}};
	open_engine(f, "fairy-stockfish", opts, 1);
	enum { N = sizeof SPECS / sizeof *SPECS };
	Move first[N], other[N], again[N];
	play_specs(f, 20000, first);
	play_specs(f, 7000, other); /* another game between */
	play_specs(f, 20000, again);
	for (int i = 0; i < N; i++)
		if (first[i] != again[i]) fail_msg("%s: another move the second time", SPECS[i]);
	UsiEngineStats st;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.starts, 3);
	assert_int_equal(st.crashes + st.failures + st.kills, 0);
}

static void test_search__gpsusi_through_the_driver(void **state)
{
	Fx *f = *state;
	/* No opening book, one thread, iterative deepening to depth 4 (each search
	 * ends there, in about 0.1 s, well inside its byoyomi). */
	const UsiOption opts[] = {{"BookDepth", "0"}, {"Thread", "1"}, {"LimitDepth", "4"}};
	open_engine(f, "gpsusi", opts, 3);
	assert_true(!strncmp(usi_engine_name(f->e), "gpsshogi", 8));
	SearchBudget b = {.kind = SEARCH_BUDGET_MOVETIME, .amount = 1000};
	for (size_t i = 0; i < sizeof SPECS / sizeof *SPECS; i++) {
		assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, SPECS[i], &b, 1), 0);
		check_lines(f, SPECS[i], 1);
		assert_true(f->res.lines[0].depth <= 4);
	}
	/* gpsusi aborts on go nodes: the driver refuses the budget instead. */
	SearchBudget nodes = {.kind = SEARCH_BUDGET_NODES, .amount = 1000};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &nodes, 1),
	                 SEARCH_EINVAL);
	assert_non_null(strstr(usi_engine_last_error(f->e), "--movetime"));
	/* (gpsusi's info line for it says "pv resign" with a huge cp.) */
	mated_resigns_in_one_engine(f, &b);
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(strstr(log, "> go btime 0 wtime 0 byoyomi 1000"));
	assert_null(strstr(log, "> go nodes"));
	free(log);
	/* Its options went to the private gpsusi.conf, not the shared one. */
	char conf[1100];
	snprintf(conf, sizeof conf, "%s/gpsshogi-home/gpsusi.conf", f->dir);
	char *c = ts_read_file(conf, NULL);
	assert_non_null(c);
	assert_non_null(strstr(c, "LimitDepth 4"));
	free(c);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_search__fairy_stockfish_through_the_driver, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_search__fairy_stockfish_restarted_repeats_its_game,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_search__gpsusi_through_the_driver, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
