/*
 * tests/search/test_usi_engine.c — the USI engine driver against fake engines
 * (tests/search/fakes/fake_engine.py, and this binary itself run with
 * --instant-fake) that behave, crash, hang, stall in the handshake, print
 * malformed info or answer illegal moves. Every case checks the documented
 * outcome: the position is retried once, then reported failed with a clear
 * code, and the driver analyses the next position normally.
 *
 * When JOSEKI_TEST_ENGINE names a real engine binary (optionally followed by
 * arguments: "./joseki usi"), the normal-behaviour case also runs against it;
 * otherwise that case is skipped with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "shogi/clock.h"
#include "search/search.h"
#include "search/usi_engine.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

#define FAKE "tests/search/fakes/fake_engine.py"
#define MATE_SFEN "4k4/9/4G4/9/9/9/9/9/4K4 b G 1"

static char self_path[4096];

typedef struct {
	char *dir;
	char state[4200];
	char transcript[4200];
	char log[4200];
	const char *argv[8];
	UsiEngineConfig cfg;
	UsiEngine *e;
	SearchResult res;
} Fixture;

static int setup(void **state)
{
	Fixture *f = calloc(1, sizeof *f);
	if (!f || !(f->dir = ts_mkdtemp())) return -1;
	snprintf(f->state, sizeof f->state, "%s/state", f->dir);
	snprintf(f->transcript, sizeof f->transcript, "%s/transcript", f->dir);
	snprintf(f->log, sizeof f->log, "%s/engine.log", f->dir);
	usi_engine_config_init(&f->cfg);
	f->cfg.path = FAKE;
	f->cfg.log_path = f->log;
	/* Short limits so the failure cases take hundreds of ms, not seconds. */
	f->cfg.handshake_timeout_ms = 3000; /* python start-up under a loaded make -j */
	f->cfg.time_factor = 1.0;
	f->cfg.slack_ms = 200;
	f->cfg.stop_grace_ms = 200;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fixture *f = *state;
	usi_engine_free(f->e);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* The fake's arguments in f->cfg: the per-start script of modes, the state
 * file that counts the starts, the transcript. */
static void fake_argv(Fixture *f, const char *script)
{
	f->argv[0] = "--script";
	f->argv[1] = script;
	f->argv[2] = "--state";
	f->argv[3] = f->state;
	f->argv[4] = "--transcript";
	f->argv[5] = f->transcript;
	f->argv[6] = NULL;
	f->cfg.argv = f->argv;
}

/* Runs the fake with the given per-start script of modes. */
static int open_fake(Fixture *f, const char *script)
{
	char err[SEARCH_ERRLEN];
	fake_argv(f, script);
	int rc = usi_engine_open(&f->e, &f->cfg, err);
	if (rc < 0) print_message("open: %s\n", err);
	return rc;
}

static const SearchBudget movetime50 = {.kind = SEARCH_BUDGET_MOVETIME, .amount = 50};

/* Analyses spec with a 50 ms budget into f->res. */
static int analyse(Fixture *f, const char *spec, int multipv)
{
	return usi_engine_analyse_spec(f->e, &f->res, spec, &movetime50, multipv);
}

/* The fake's normal answer for the start position with MultiPV 3. */
static void assert_startpos_answer(const SearchResult *r)
{
	assert_string_equal(r->bestmove_usi, "7g7f");
	assert_int_equal(r->nlines, 3);
	assert_string_equal(r->lines[0].usi, "7g7f");
	assert_string_equal(r->lines[1].usi, "2g2f");
	assert_string_equal(r->lines[2].usi, "6g6f");
	/* the depth-3 lines are the last complete ones: bound lines are ignored */
	assert_int_equal(r->lines[0].value, 50);
	assert_int_equal(r->lines[1].value, 40);
	assert_int_equal(r->lines[2].value, 10);
	assert_int_equal(r->lines[0].depth, 3);
	assert_int_equal(r->lines[0].seldepth, 5);
	assert_int_equal(r->lines[0].nodes, 3000);
	assert_int_equal(r->lines[0].multipv, 1);
	assert_int_equal(r->lines[2].multipv, 3);
	assert_int_equal(r->lines[0].pv_len, 3);
	assert_int_equal(r->lines[1].pv_len, 2);
	assert_false(r->lines[0].mate);
	assert_int_equal(r->nodes, 9999); /* largest count seen, bound line included */
}

static void test_search__usi_normal_engine_answers(void **state)
{
	Fixture *f = *state;
	char *tr;

	assert_int_equal(open_fake(f, "ok"), 0);
	assert_string_equal(usi_engine_name(f->e), "FakeEngine ok");
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 1);
	assert_int_equal(f->res.malformed, 0);

	/* second position, side to move White, through the moves form */
	assert_int_equal(
	    usi_engine_analyse_spec(f->e, &f->res, "startpos moves 7g7f", &movetime50, 2), 0);
	assert_string_equal(f->res.bestmove_usi, "3c3d");
	assert_int_equal(f->res.nlines, 2);
	assert_int_equal(f->res.lines[0].value, -40);
	assert_string_equal(f->res.lines[1].usi, "8c8d");

	UsiEngineStats st;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.positions, 2);
	assert_int_equal(st.starts, 1);
	assert_int_equal(st.failures, 0);

	tr = ts_read_file(f->transcript, NULL);
	assert_non_null(tr);
	assert_non_null(strstr(tr, "usi\nisready\nusinewgame\n"));
	assert_non_null(strstr(tr, "setoption name MultiPV value 3\nposition startpos\n"
	                           "go movetime 50\n"));
	assert_non_null(strstr(tr, "setoption name MultiPV value 2\n"
	                           "position startpos moves 7g7f\ngo movetime 50\n"));
	free(tr);
}

static void test_search__usi_mate_scores_count_plies(void **state)
{
	Fixture *f = *state;
	SearchBudget depth = {.kind = SEARCH_BUDGET_DEPTH, .amount = 3};
	assert_int_equal(open_fake(f, "ok"), 0);
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, MATE_SFEN, &depth, 2), 0);
	assert_string_equal(f->res.bestmove_usi, "G*5b");
	assert_int_equal(f->res.nlines, 2);
	assert_true(f->res.lines[0].mate);
	assert_int_equal(f->res.lines[0].mate_plies, 1);
	assert_int_equal(f->res.lines[0].value, VALUE_MATE - 1);
	assert_false(f->res.lines[1].mate);
	assert_int_equal(f->res.lines[1].value, 800);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "position sfen " MATE_SFEN "\ngo depth 3\n"));
	free(tr);
}

static void test_search__usi_options_and_new_game_are_sent(void **state)
{
	Fixture *f = *state;
	UsiOption opts[] = {{"USI_Hash", "16"}, {"Threads", "1"}};
	f->cfg.options = opts;
	f->cfg.noptions = 2;
	assert_int_equal(open_fake(f, "ok"), 0);
	usi_engine_new_game(f->e);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	assert_int_equal(f->res.nlines, 1);
	/* MultiPV unchanged: not sent again */
	assert_int_equal(analyse(f, "startpos", 1), 0);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "usi\nsetoption name USI_Hash value 16\n"
	                           "setoption name Threads value 1\nisready\nusinewgame\n"));
	assert_non_null(strstr(tr, "usinewgame\nisready\nusinewgame\n"
	                           "setoption name MultiPV value 1\nposition startpos\n"
	                           "go movetime 50\nposition startpos\ngo movetime 50\n"));
	free(tr);
}

/* What a notice callback was told: how often, and the last message. */
typedef struct {
	int count;
	char last[SEARCH_ERRLEN];
} Notices;

static void count_notice(void *ctx, const char *msg)
{
	Notices *n = ctx;
	n->count++;
	snprintf(n->last, sizeof n->last, "%s", msg);
}

/*
 * An option the engine does not list (the fake lists MultiPV, USI_Hash,
 * Threads, EvalDir and "Debug Log File") fails the start with a message
 * naming the option, the engine and the names it lists nearest, and leaves
 * no process; the names are read whole, blanks included.
 */
static void test_search__usi_an_option_the_engine_does_not_list_fails_the_start(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	UsiOption typo[] = {{"Threads", "1"}, {"USI_Hahs", "256"}};
	f->cfg.options = typo;
	f->cfg.noptions = 2;
	assert_int_equal(open_fake(f, "ok"), SEARCH_EINVAL);
	assert_null(f->e);
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_EINVAL);
	print_message("%s\n", err);
	assert_non_null(strstr(err,
	                       FAKE ": option USI_Hahs=256 not taken: the engine (FakeEngine "
	                            "ok) lists no USI_Hahs; the nearest it lists: USI_Hash, "));
	/* The engine was asked nothing after its list: no setoption, no isready. */
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(tr);
	assert_null(strstr(tr, "setoption"));
	assert_null(strstr(tr, "isready"));
	free(tr);
	/* A name with blanks is one the engine lists, as are the others. */
	UsiOption good[] = {{"Debug Log File", "x.log"}, {"EvalDir", "/e"}, {"USI_Hash", "8"}};
	f->cfg.options = good;
	f->cfg.noptions = 3;
	assert_int_equal(open_fake(f, "ok"), 0);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "setoption name Debug Log File value x.log\n"
	                           "setoption name EvalDir value /e\n"
	                           "setoption name USI_Hash value 8\nisready\n"));
	free(tr);
	usi_engine_free(f->e);
	f->e = NULL;
	/* An engine that lists no option takes none, not even one another lists. */
	f->cfg.noptions = 1;
	f->argv[1] = "bare";
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_EINVAL);
	assert_non_null(strstr(err, "option Debug Log File=x.log not taken: the engine "
	                            "(FakeEngine bare) lists no options"));
}

/*
 * A name the engine lists in another case is sent in the engine's spelling
 * and said once through the notice callback, not again when the engine is
 * started again after a crash.
 */
static void test_search__usi_an_option_in_another_case_is_sent_as_the_engine_spells_it(void **state)
{
	Fixture *f = *state;
	Notices n = {0, ""};
	UsiOption opts[] = {{"threads", "2"}, {"USI_Hash", "8"}};
	f->cfg.options = opts;
	f->cfg.noptions = 2;
	f->cfg.notice = count_notice;
	f->cfg.notice_ctx = &n;
	assert_int_equal(open_fake(f, "crash_go,ok"), 0);
	assert_int_equal(n.count, 1);
	assert_string_equal(n.last, FAKE ": option threads sent as Threads, the spelling "
	                                 "FakeEngine crash_go lists");
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_int_equal(f->res.attempts, 2); /* a second process, started the same way */
	assert_int_equal(n.count, 1);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_null(strstr(tr, "name threads"));
	const char *first = strstr(tr, "usi\nsetoption name Threads value 2\n"
	                               "setoption name USI_Hash value 8\nisready\n");
	assert_non_null(first);
	assert_non_null(strstr(first + 1, "usi\nsetoption name Threads value 2\n"
	                                  "setoption name USI_Hash value 8\nisready\n"));
	free(tr);
	/* The driver's log says it too. */
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(strstr(log, "option threads sent as Threads"));
	free(log);
}

/* restart_each_game: a new game ends the process (quit, nothing killed) and
 * the next search starts another, handshake and usinewgame again; the CPU
 * time of the first is kept. Without it the process stays. */
static void test_search__usi_restart_each_game_starts_a_new_process(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	f->cfg.restart_each_game = true;
	assert_int_equal(open_fake(f, "ok"), 0);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	int pid = usi_engine_pid(f->e);
	assert_true(pid > 0);
	int64_t cpu = search_cpu_ms(usi_engine_search(f->e));
	usi_engine_new_game(f->e);
	assert_int_equal(usi_engine_pid(f->e), -1);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	assert_true(usi_engine_pid(f->e) > 0);
	assert_int_not_equal(usi_engine_pid(f->e), pid);
	assert_true(search_cpu_ms(usi_engine_search(f->e)) >= cpu);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.starts, 2);
	assert_int_equal(st.kills, 0);
	assert_int_equal(st.crashes, 0);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(tr);
	assert_non_null(strstr(tr, "go movetime 50\nquit\n"));
	assert_non_null(strstr(tr, "quit\nusi\nisready\nusinewgame\n"));
	free(tr);
	/* Without the flag, a new game is only usinewgame. */
	usi_engine_free(f->e);
	f->e = NULL;
	f->cfg.restart_each_game = false;
	assert_int_equal(open_fake(f, "ok"), 0);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	pid = usi_engine_pid(f->e);
	usi_engine_new_game(f->e);
	assert_int_equal(analyse(f, "startpos", 1), 0);
	assert_int_equal(usi_engine_pid(f->e), pid);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.starts, 1);
}

static void test_search__usi_bad_input_does_not_touch_the_engine(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "ok"), 0);
	int pid = usi_engine_pid(f->e);
	assert_int_equal(
	    usi_engine_analyse_spec(f->e, &f->res, "startpos moves 7g7g", &movetime50, 1),
	    SEARCH_EINVAL);
	assert_non_null(strstr(usi_engine_last_error(f->e), "7g7g"));
	SearchBudget zero = {.kind = SEARCH_BUDGET_NODES, .amount = 0};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &zero, 1),
	                 SEARCH_EINVAL);
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &movetime50, 0),
	                 SEARCH_EINVAL);
	assert_int_equal(usi_engine_pid(f->e), pid);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
}

static void test_search__usi_crash_is_retried_once(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "crash_go,ok"), 0);
	int pid = usi_engine_pid(f->e);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 2);
	assert_int_not_equal(usi_engine_pid(f->e), pid);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.crashes, 1);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.starts, 2);
	assert_int_equal(st.positions, 1);
	/* the engine's stderr and the driver's report both reach the log */
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(log);
	assert_non_null(strstr(log, "fake: crashing on purpose"));
	assert_non_null(strstr(log, "engine ended during the search (exit status 3)"));
	assert_non_null(strstr(log, "attempt 1 failed"));
	free(log);
}

static void test_search__usi_crash_twice_fails_then_recovers(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "crash_go,crash_go,ok"), 0);
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_ECRASH);
	assert_non_null(strstr(usi_engine_last_error(f->e), "exit status 3"));
	/* the next position gets a fresh engine */
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 1);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.positions, 1);
	assert_int_equal(st.crashes, 2);
	assert_int_equal(st.starts, 3);
}

static void test_search__usi_hang_is_stopped_killed_and_reported(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "hang_go,hang_go,ok"), 0);
	int64_t t0 = clock_ms();
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_ETIMEOUT);
	int64_t took = clock_ms() - t0;
	/* two attempts, each waited for its full 50 + 200 ms limit and 200 ms
	 * grace, then stopped and killed, and a restart */
	assert_true(took >= 2 * 450);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.timeouts, 2);
	assert_int_equal(st.kills, 2);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "go movetime 50\nstop\n"));
	free(tr);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
}

static void test_search__usi_clock_budget_sends_the_clocks(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "ok"), 0);
	/* Fischer: both increments, no byoyomi. */
	SearchBudget b = {.kind = SEARCH_BUDGET_CLOCK,
	                  .clock = {.time = {61000, 59500}, .inc = {1000, 2000}}};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), 0);
	assert_string_equal(f->res.bestmove_usi, "7g7f");
	/* Byoyomi after the main time, White to move. */
	b.clock = (SearchClock){.time = {0, 1500}, .byoyomi = 3000};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos moves 7g7f", &b, 1), 0);
	assert_string_equal(f->res.bestmove_usi, "3c3d");
	/* Sudden death says byoyomi 0. */
	b.clock = (SearchClock){.time = {700, 800}};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), 0);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "position startpos\ngo btime 61000 wtime 59500 binc 1000 winc "
	                           "2000\n"));
	assert_non_null(strstr(tr, "position startpos moves 7g7f\ngo btime 0 wtime 1500 byoyomi "
	                           "3000\n"));
	assert_non_null(strstr(tr, "position startpos\ngo btime 700 wtime 800 byoyomi 0\n"));
	free(tr);
	/* A clock with no time for the side to move, or a negative field, is refused. */
	b.clock = (SearchClock){.time = {0, 5000}};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), SEARCH_EINVAL);
	b.clock = (SearchClock){.time = {1000, -1}};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), SEARCH_EINVAL);
	/* The hard limit is the mover's own time plus the slack. */
	b.clock = (SearchClock){.time = {1000, 7000}, .inc = {100, 300}, .byoyomi = 50};
	assert_int_equal(usi_engine_hard_limit_ms(&f->cfg, &b, BLACK), 1000 + 100 + 50 + 200);
	assert_int_equal(usi_engine_hard_limit_ms(&f->cfg, &b, WHITE), 7000 + 300 + 50 + 200);
}

static void test_search__usi_clock_timeout_is_not_retried(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "hang_go,ok"), 0);
	SearchBudget b = {.kind = SEARCH_BUDGET_CLOCK, .clock = {.time = {100, 100}}};
	int64_t t0 = clock_ms();
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1),
	                 SEARCH_ETIMEOUT);
	int64_t took = clock_ms() - t0;
	/* one attempt: 100 ms of clock + 200 ms slack, then 200 ms after stop */
	assert_true(took >= 500);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.starts, 1);
	/* The next position gets a fresh engine. */
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), 0);
	assert_string_equal(f->res.bestmove_usi, "7g7f");
}

static void test_search__usi_answer_after_stop_is_accepted(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "hang_stop"), 0);
	int pid = usi_engine_pid(f->e);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 1);
	assert_int_equal(usi_engine_pid(f->e), pid);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.kills, 0);
}

static void test_search__usi_handshake_stall_times_out(void **state)
{
	Fixture *f = *state;
	f->cfg.handshake_timeout_ms = 700;
	assert_int_equal(open_fake(f, "stall_usi"), SEARCH_EHANDSHAKE);
	assert_null(f->e);
	assert_int_equal(open_fake(f, "stall_ready"), SEARCH_EHANDSHAKE);
	assert_null(f->e);
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(strstr(log, "no \"usiok\" within 700 ms"));
	assert_non_null(strstr(log, "no \"readyok\" within 700 ms"));
	free(log);
}

static void test_search__usi_handshake_stall_on_restart_fails_the_position(void **state)
{
	Fixture *f = *state;
	f->cfg.handshake_timeout_ms = 700;
	/* open: ok handshake but crashes on go; restart stalls; then healthy */
	assert_int_equal(open_fake(f, "crash_go,stall_ready,ok"), 0);
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_EHANDSHAKE);
	assert_int_equal(usi_engine_pid(f->e), -1);
	f->cfg.handshake_timeout_ms = 3000;
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
}

static void test_search__usi_crash_in_handshake(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	f->argv[0] = "--script";
	f->argv[1] = "crash_usi";
	f->argv[2] = NULL;
	f->cfg.argv = f->argv;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_ECRASH);
	assert_non_null(strstr(err, "after usi"));
	assert_null(f->e);
}

static void test_search__usi_missing_program_is_a_spawn_error(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	f->cfg.path = "tests/search/fakes/no-such-engine";
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_ESPAWN);
	assert_non_null(strstr(err, "no-such-engine"));
	assert_null(f->e);
	f->cfg.path = NULL;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_EINVAL);
	UsiOption bad = {"USI_Hash", "16\nquit"};
	f->cfg.path = FAKE;
	f->cfg.options = &bad;
	f->cfg.noptions = 1;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), SEARCH_EINVAL);
}

static void test_search__usi_malformed_info_is_skipped(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "malformed"), 0);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.malformed, 6);
	assert_int_equal(f->res.attempts, 1);
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(strstr(log, "malformed output skipped: info line, byte"));
	free(log);
}

static void test_search__usi_only_garbage_is_a_protocol_error(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "garbage,ok"), 0);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 2);
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.protocol, 1);

	/* too many unreadable lines give up early, even before bestmove */
	usi_engine_free(f->e);
	f->e = NULL;
	f->cfg.max_garbage = 2;
	unlink(f->state);
	assert_int_equal(open_fake(f, "garbage"), 0);
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_EPROTOCOL);
	assert_non_null(strstr(usi_engine_last_error(f->e), "more than 2 unreadable lines"));
}

static void test_search__usi_illegal_bestmove_is_detected(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	assert_int_equal(open_fake(f, "illegal,illegal,ok"), 0);
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_EILLEGAL);
	assert_non_null(strstr(usi_engine_last_error(f->e), "5e5d"));
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.illegal, 2);
	assert_int_equal(st.failures, 1);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
}

static void test_search__usi_unreadable_bestmove_is_retried(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "badmove,ok"), 0);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_int_equal(f->res.attempts, 2);
	assert_startpos_answer(&f->res);
}

/* True once pid has ended (no such process, or a zombie not yet reaped). */
static bool process_gone(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "r");
	if (!fp) return true;
	size_t n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'); /* zombie: dead */
}

static void test_search__usi_engine_that_quits_does_not_kill_us(void **state)
{
	Fixture *f = *state;
	/* The engine exits while idle: writing the position meets a closed pipe
	 * (SIGPIPE must not end this process) or reading meets EOF. */
	assert_int_equal(open_fake(f, "quit_idle,ok"), 0);
	pid_t pid = (pid_t)usi_engine_pid(f->e);
	assert_true(pid > 1);
	for (int i = 0; i < 3000 && !process_gone(pid); i++) usleep(10 * 1000);
	assert_true(process_gone(pid)); /* it has quit before the position is sent */
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 2);
}

static void test_search__usi_unknown_position_resigns(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "ok"), 0);
	assert_int_equal(
	    usi_engine_analyse_spec(f->e, &f->res, "startpos moves 2g2f", &movetime50, 1), 0);
	assert_true(f->res.resign);
	assert_int_equal(f->res.bestmove, MOVE_NONE);
	assert_int_equal(f->res.nlines, 0);
	/* a non-start root goes out as sfen plus the moves, so repetitions stay visible */
	assert_int_equal(analyse(f, MATE_SFEN " moves G*5b", 1), 0);
	assert_true(f->res.resign);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "\nposition sfen " MATE_SFEN " moves G*5b\n"));
	free(tr);
}

static void test_search__usi_through_the_search_interface(void **state)
{
	Fixture *f = *state;
	Position *pos = malloc(sizeof *pos);
	assert_int_equal(open_fake(f, "ok"), 0);
	SearchEngine *se = usi_engine_search(f->e);
	assert_string_equal(search_name(se), "FakeEngine ok");
	search_new_game(se);
	pos_set_startpos(pos);
	assert_int_equal(search_analyse(se, &f->res, pos, &movetime50, 3), 0);
	assert_startpos_answer(&f->res);
	assert_string_equal(search_last_error(se), "");
	char err[SEARCH_ERRLEN];
	assert_int_equal(
	    search_analyse_spec(se, &f->res, "startpos moves 7g7f", &movetime50, 1, err), 0);
	assert_string_equal(f->res.bestmove_usi, "3c3d");
	assert_string_equal(err, "");
	assert_int_equal(
	    search_analyse_spec(se, &f->res, "startpos moves 9a9b", &movetime50, 1, err),
	    SEARCH_EINVAL);
	assert_non_null(strstr(err, "9a9b"));
	search_free(se);
	f->e = NULL;
	free(pos);
}

static void test_search__usi_hard_limit_follows_the_budget(void **state)
{
	(void)state;
	UsiEngineConfig cfg;
	usi_engine_config_init(&cfg);
	SearchBudget b = {.kind = SEARCH_BUDGET_MOVETIME, .amount = 1000};
	assert_int_equal(usi_engine_hard_limit_ms(&cfg, &b, BLACK), 3 * 1000 + 2000);
	b.kind = SEARCH_BUDGET_NODES;
	b.amount = 1000000; /* 10 s at the 100k nps floor */
	assert_int_equal(usi_engine_hard_limit_ms(&cfg, &b, BLACK), 3 * 10000 + 2000);
	b.kind = SEARCH_BUDGET_DEPTH;
	b.amount = 20;
	assert_int_equal(usi_engine_hard_limit_ms(&cfg, &b, BLACK), cfg.depth_limit_ms);
}

/* A C engine that answers at once, for the overhead figure. */
static int instant_fake(void)
{
	char line[8192];
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	while (fgets(line, sizeof line, stdin)) {
		if (strcmp(line, "usi\n") == 0)
			fputs("id name instant\nusiok\n", stdout);
		else if (strcmp(line, "isready\n") == 0)
			fputs("readyok\n", stdout);
		else if (strncmp(line, "go", 2) == 0)
			fputs(
			    "info depth 1 seldepth 1 multipv 1 score cp 0 nodes 1 nps 1 time 0 pv "
			    "7g7f 3c3d\nbestmove 7g7f\n",
			    stdout);
		else if (strcmp(line, "quit\n") == 0)
			break;
		else
			continue;
		fflush(stdout);
	}
	return 0;
}

static void test_search__usi_driver_overhead_is_small(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	const char *args[] = {"--instant-fake", NULL};
	Position *pos = malloc(sizeof *pos);
	SearchBudget nodes = {.kind = SEARCH_BUDGET_NODES, .amount = 1};
	double us = 0;

	f->cfg.path = self_path;
	f->cfg.argv = args;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), 0);
	pos_set_startpos(pos);
	assert_int_equal(usi_engine_bench_overhead(&us, f->e, pos, &nodes, 1, 2000), 0);
	print_message("usi driver overhead: %.1f us per position (instant fake engine)\n", us);
	assert_true(us > 0);
	assert_true(us < 5000); /* the target is < 1000; generous for loaded CI machines */
	UsiEngineStats st;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.positions, 2000);
	assert_int_equal(st.starts, 1);
	free(pos);
}

static volatile sig_atomic_t cancel_flag;

static void on_alarm(int sig)
{
	(void)sig;
	cancel_flag = 1;
}

/* Raises cancel_flag from a signal handler after ms, as a Ctrl-C would. */
static void cancel_after(int ms)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 0}, {0, ms * 1000}};
	cancel_flag = 0;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void test_search__usi_cancel_stops_and_keeps_an_answering_engine(void **state)
{
	Fixture *f = *state;
	UsiEngineStats st;
	f->cfg.cancel = &cancel_flag;
	assert_int_equal(open_fake(f, "hang_stop"), 0);
	int pid = usi_engine_pid(f->e);
	SearchBudget long_think = {.kind = SEARCH_BUDGET_MOVETIME, .amount = 60000};
	cancel_after(100);
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &long_think, 3),
	                 SEARCH_ECANCELED);
	/* the cancel, not the minute, ended it: stop was sent during the go */
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(strstr(tr, "go movetime 60000\nstop\n"));
	free(tr);
	/* it answered stop: same process, still in step */
	assert_int_equal(usi_engine_pid(f->e), pid);
	assert_int_equal(analyse(f, "startpos", 3), SEARCH_ECANCELED); /* flag still up */
	cancel_flag = 0;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.failures, 0);
	assert_int_equal(st.retries, 0);
	usi_engine_free(f->e);
	f->e = NULL;

	/* an engine that ignores stop is killed; the next position gets a new one */
	unlink(f->state);
	assert_int_equal(open_fake(f, "hang_go,ok"), 0);
	pid = usi_engine_pid(f->e);
	cancel_after(100);
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &long_think, 3),
	                 SEARCH_ECANCELED);
	assert_int_equal(usi_engine_pid(f->e), -1);
	cancel_flag = 0;
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_not_equal(usi_engine_pid(f->e), pid);
}

static void test_search__usi_overlong_lines_and_chatter_are_skipped(void **state)
{
	Fixture *f = *state;
	f->cfg.log_io = true;
	assert_int_equal(open_fake(f, "overlong"), 0);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_startpos_answer(&f->res);
	assert_int_equal(f->res.attempts, 1);
	/* log_io: both directions are in the log */
	char *log = ts_read_file(f->log, NULL);
	assert_non_null(strstr(log, "> go movetime 50"));
	assert_non_null(strstr(log, "< bestmove 7g7f ponder 3c3d"));
	free(log);
}

static void test_search__usi_illegal_pv_moves_are_cut(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "badpv"), 0);
	assert_int_equal(analyse(f, "startpos", 3), 0);
	assert_string_equal(f->res.bestmove_usi, "7g7f");
	/* MultiPV 2 began with an illegal move: dropped, the others keep their rank */
	assert_int_equal(f->res.nlines, 2);
	assert_string_equal(f->res.lines[0].usi, "7g7f");
	assert_string_equal(f->res.lines[1].usi, "6g6f");
	assert_int_equal(f->res.lines[1].multipv, 3);
	assert_int_equal(f->res.malformed, 1);
	/* 7g7f 3c3d 3c3d ...: the PV stops before the impossible third move */
	assert_int_equal(f->res.lines[0].pv_len, 2);
	char mv[USI_MOVE_MAX];
	usi_move_write(f->res.lines[0].pv[1], mv);
	assert_string_equal(mv, "3c3d");
}

static void test_search__usi_script_engine_children_die_with_it(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	const char *args[] = {f->state, NULL};
	f->cfg.path = "tests/search/fakes/hang_child.sh";
	f->cfg.argv = args;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), 0);
	assert_int_equal(analyse(f, "startpos", 1), SEARCH_ETIMEOUT);
	/* the shell's sleep child wrote its pid; it must be gone with the group */
	char *pidtxt = ts_read_file(f->state, NULL);
	assert_non_null(pidtxt);
	pid_t child = (pid_t)atoi(pidtxt);
	free(pidtxt);
	assert_true(child > 1);
	bool gone = false;
	for (int i = 0; i < 50 && !gone; i++) {
		gone = process_gone(child);
		if (!gone) usleep(10 * 1000);
	}
	assert_true(gone);
}

/* Several engines at once: each started (distinct processes), each analyses;
 * the one whose start is scripted to crash on its first go is restarted by
 * its own driver while the others are untouched. */
static void test_search__usi_open_many_starts_independent_engines(void **state)
{
	Fixture *f = *state;
	char err[SEARCH_ERRLEN];
	enum { N = 3 };
	UsiEngine *e[N];
	SearchResult *res = calloc(1, sizeof *res);

	/* the state file is shared: exactly one of the engines crashes on its first go */
	fake_argv(f, "crash_go,ok");
	assert_int_equal(usi_engine_open_many(e, &f->cfg, N, err), 0);
	for (int i = 0; i < N; i++) {
		assert_non_null(e[i]);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(usi_engine_pid(e[i]), usi_engine_pid(e[j]));
	}
	uint64_t retries = 0, crashes = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(usi_engine_analyse_spec(e[i], res, "startpos", &movetime50, 3), 0);
		assert_string_equal(res->bestmove_usi, "7g7f");
		assert_startpos_answer(res);
		UsiEngineStats st;
		usi_engine_stats(&st, e[i]);
		assert_int_equal(st.positions, 1);
		retries += st.retries;
		crashes += st.crashes;
	}
	assert_int_equal(retries, 1);
	assert_int_equal(crashes, 1);
	for (int i = 0; i < N; i++) usi_engine_free(e[i]);
	free(res);
}

/* A failure leaves no engine; the message names the engine that failed,
 * unless every one failed alike. */
static void test_search__usi_open_many_failure_leaves_nothing(void **state)
{
	Fixture *f = *state;
	UsiEngine *e[2] = {(UsiEngine *)1, (UsiEngine *)1};
	char err[SEARCH_ERRLEN];
	f->cfg.path = "tests/search/fakes/no-such-engine";
	assert_int_equal(usi_engine_open_many(e, &f->cfg, 2, err), SEARCH_ESPAWN);
	assert_null(e[0]);
	assert_null(e[1]);
	assert_int_equal(strncmp(err, "tests/search/fakes/no-such-engine: ", 35), 0);
	/* One of the two (the first to start: they share the state file) exits at usi. */
	f->cfg.path = FAKE;
	fake_argv(f, "crash_usi,ok");
	e[0] = e[1] = (UsiEngine *)1;
	assert_int_equal(usi_engine_open_many(e, &f->cfg, 2, err), SEARCH_ECRASH);
	assert_null(e[0]);
	assert_null(e[1]);
	if (strncmp(err, "engine 1 of 2: ", 15) && strncmp(err, "engine 2 of 2: ", 15))
		fail_msg("%s", err);
	assert_int_equal(usi_engine_open_many(e, &f->cfg, 0, err), SEARCH_EINVAL);
}

static void test_search__usi_real_engine(void **state)
{
	Fixture *f = *state;
	const char *path = getenv("JOSEKI_TEST_ENGINE");
	char err[SEARCH_ERRLEN], own[4200];
	Position *pos;
	if (!path || !*path) {
		/* No other engine given: the built-in one, as a real USI process. */
		snprintf(own, sizeof own, "%s usi", ts_joseki());
		path = own;
	}
	/* "PATH [ARG...]", split at spaces, so "./joseki usi" works too. */
	char *words = strdup(path), *save = NULL;
	const char *args[16] = {NULL};
	int nargs = 0;
	f->cfg.path = strtok_r(words, " ", &save);
	for (char *w; nargs < 15 && (w = strtok_r(NULL, " ", &save));) args[nargs++] = w;
	f->cfg.argv = args;
	f->cfg.handshake_timeout_ms = 60000;
	f->cfg.time_factor = 3.0;
	f->cfg.slack_ms = 5000;
	assert_int_equal(usi_engine_open(&f->e, &f->cfg, err), 0);
	print_message("real engine: %s\n", usi_engine_name(f->e));
	static const char *const specs[] = {"startpos", "startpos moves 7g7f", MATE_SFEN,
	                                    "startpos moves 7g7f 3c3d 8h2b+"};
	pos = malloc(sizeof *pos);
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		SearchBudget b = {.kind = SEARCH_BUDGET_NODES, .amount = 20000};
		assert_int_equal(position_parse(pos, specs[i], NULL), 0);
		int rc = usi_engine_analyse(f->e, &f->res, pos, &b, 3);
		if (rc < 0) fail_msg("%s: %s", specs[i], usi_engine_last_error(f->e));
		assert_true(pos_is_legal(pos, f->res.bestmove));
		assert_true(f->res.nlines >= 1);
		for (int k = 0; k < f->res.nlines; k++) {
			assert_true(pos_is_legal(pos, f->res.lines[k].move));
			assert_true(f->res.lines[k].pv_len >= 1);
			for (int j = 0; j < k; j++)
				assert_int_not_equal(f->res.lines[j].move, f->res.lines[k].move);
		}
		if (i == 2) {
			assert_true(f->res.lines[0].mate);
			assert_int_equal(f->res.lines[0].value, VALUE_MATE - 1);
		}
	}
	free(pos);
	usi_engine_free(f->e);
	f->e = NULL;
	free(words);
}

/* An engine known to take only time controls (gpsshogi, here the fake calling
 * itself so): a movetime budget goes out as byoyomi in whole seconds, at least
 * one; a nodes or depth budget is refused without touching the engine, which
 * stays usable. The fake aborts on any other go, as gpsusi does. */
static void test_search__usi_time_only_engine_gets_byoyomi(void **state)
{
	Fixture *f = *state;
	assert_int_equal(open_fake(f, "timeonly"), 0);
	assert_int_equal(analyse(f, "startpos", 2), 0); /* movetime 50 */
	assert_string_equal(f->res.bestmove_usi, "7g7f");
	assert_int_equal(f->res.nlines, 2);
	SearchBudget b = {.kind = SEARCH_BUDGET_MOVETIME, .amount = 2500};
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), 0);
	b.kind = SEARCH_BUDGET_NODES;
	b.amount = 1000;
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), SEARCH_EINVAL);
	assert_non_null(strstr(usi_engine_last_error(f->e), "only time controls"));
	assert_non_null(strstr(usi_engine_last_error(f->e), "--movetime"));
	b.kind = SEARCH_BUDGET_DEPTH;
	b.amount = 3;
	assert_int_equal(usi_engine_analyse_spec(f->e, &f->res, "startpos", &b, 1), SEARCH_EINVAL);
	assert_int_equal(analyse(f, "startpos moves 7g7f", 1), 0);
	UsiEngineStats st;
	usi_engine_stats(&st, f->e);
	assert_int_equal(st.starts, 1);
	assert_int_equal(st.crashes, 0);
	char *tr = ts_read_file(f->transcript, NULL);
	assert_non_null(tr);
	assert_non_null(strstr(tr, "\ngo btime 0 wtime 0 byoyomi 1000\n"));
	assert_non_null(strstr(tr, "\ngo btime 0 wtime 0 byoyomi 2000\n"));
	assert_null(strstr(tr, "go movetime"));
	assert_null(strstr(tr, "go nodes"));
	assert_null(strstr(tr, "go depth"));
	free(tr);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--instant-fake") == 0) return instant_fake();
	shogi_init();
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	if (n > 0) self_path[n] = '\0';
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	    T(test_search__usi_normal_engine_answers),
	    T(test_search__usi_mate_scores_count_plies),
	    T(test_search__usi_options_and_new_game_are_sent),
	    T(test_search__usi_an_option_the_engine_does_not_list_fails_the_start),
	    T(test_search__usi_an_option_in_another_case_is_sent_as_the_engine_spells_it),
	    T(test_search__usi_restart_each_game_starts_a_new_process),
	    T(test_search__usi_bad_input_does_not_touch_the_engine),
	    T(test_search__usi_crash_is_retried_once),
	    T(test_search__usi_crash_twice_fails_then_recovers),
	    T(test_search__usi_hang_is_stopped_killed_and_reported),
	    T(test_search__usi_clock_budget_sends_the_clocks),
	    T(test_search__usi_clock_timeout_is_not_retried),
	    T(test_search__usi_answer_after_stop_is_accepted),
	    T(test_search__usi_handshake_stall_times_out),
	    T(test_search__usi_handshake_stall_on_restart_fails_the_position),
	    T(test_search__usi_crash_in_handshake),
	    T(test_search__usi_missing_program_is_a_spawn_error),
	    T(test_search__usi_malformed_info_is_skipped),
	    T(test_search__usi_only_garbage_is_a_protocol_error),
	    T(test_search__usi_illegal_bestmove_is_detected),
	    T(test_search__usi_unreadable_bestmove_is_retried),
	    T(test_search__usi_engine_that_quits_does_not_kill_us),
	    T(test_search__usi_unknown_position_resigns),
	    T(test_search__usi_through_the_search_interface),
	    T(test_search__usi_hard_limit_follows_the_budget),
	    T(test_search__usi_time_only_engine_gets_byoyomi),
	    T(test_search__usi_driver_overhead_is_small),
	    T(test_search__usi_cancel_stops_and_keeps_an_answering_engine),
	    T(test_search__usi_overlong_lines_and_chatter_are_skipped),
	    T(test_search__usi_illegal_pv_moves_are_cut),
	    T(test_search__usi_script_engine_children_die_with_it),
	    T(test_search__usi_open_many_starts_independent_engines),
	    T(test_search__usi_open_many_failure_leaves_nothing),
	    T(test_search__usi_real_engine),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
