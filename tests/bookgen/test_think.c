/*
 * tests/bookgen/test_think.c — the think loop with fake search cores (every
 * analysed position logged): the book grows from the start position, nothing
 * is sent twice within a run or across a restart, every answer's moves are
 * stored with their evaluations, the loop stops on the flag, on exhaustion and
 * on failing engines; then `joseki think` with the built-in engine, a restart,
 * and a SIGTERM in the middle followed by `joseki check`.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "bookgen/probe.h"
#include "bookgen/reanalyse.h"
#include "bookgen/roots.h"
#include "bookgen/think.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "minimax/bookmm.h"
#include "tests/support/support.h"

#define LOG_MAX 4096

/* What every fake engine saw, shared between the worker threads; with
 * stop_flag, raised once stop_at analyses are logged (an interruption). */
typedef struct {
	pthread_mutex_t mu;
	Key keys[LOG_MAX];
	int n;
	volatile sig_atomic_t *stop_flag;
	int stop_at;
} FakeLog;

/* FAKE_SLOW: as FAKE_NORMAL, taking 20 ms an analysis as an engine would.
 * FAKE_DEEP: as FAKE_NORMAL at depth 9. */
typedef enum { FAKE_NORMAL, FAKE_RESIGN, FAKE_CRASH, FAKE_SLOW, FAKE_DEEP } FakeMode;

typedef struct {
	SearchEngine base;
	FakeLog *log;
	FakeMode mode;
} FakeEngine;

static int fake_analyse(SearchEngine *e, SearchResult *out, const Position *pos,
                        const SearchBudget *budget, int multipv)
{
	FakeEngine *f = (FakeEngine *)e;
	(void)budget;
	pthread_mutex_lock(&f->log->mu);
	if (f->log->n < LOG_MAX) f->log->keys[f->log->n++] = pos_key(pos);
	if (f->log->stop_flag && f->log->n >= f->log->stop_at) *f->log->stop_flag = 1;
	pthread_mutex_unlock(&f->log->mu);
	if (f->mode == FAKE_CRASH) return SEARCH_ECRASH;
	if (f->mode == FAKE_SLOW) usleep(20000);
	memset(out, 0, sizeof *out);
	if (f->mode == FAKE_RESIGN) {
		out->resign = true;
		return 0;
	}
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	Key k = pos_key(pos);
	for (int i = 0; i < n && i < multipv; i++) {
		SearchLine *l = &out->lines[out->nlines++];
		l->move = moves[i];
		l->multipv = i + 1;
		l->value = (int)((k.lo >> (i * 5)) % 200) - 100; /* deterministic, varied */
		l->depth = f->mode == FAKE_DEEP ? 9 : 7;
		l->nodes = 1000;
		l->pv_len = 1;
		l->pv[0] = moves[i];
	}
	if (out->nlines) out->bestmove = out->lines[0].move;
	return 0;
}

static void fake_new_game(SearchEngine *e)
{
	(void)e;
}
static void fake_free(SearchEngine *e)
{
	free(e);
}
static const char *fake_name(const SearchEngine *e)
{
	(void)e;
	return "fake";
}
static const char *fake_error(const SearchEngine *e)
{
	(void)e;
	return "fake crash";
}
static const SearchEngineOps FAKE_OPS = {fake_analyse, fake_new_game, fake_free,
                                         fake_name,    fake_error,    NULL};

static SearchEngine *fake_new(FakeLog *log, FakeMode mode)
{
	FakeEngine *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->base.ops = &FAKE_OPS;
	f->log = log;
	f->mode = mode;
	return &f->base;
}

/* Progress seen by run_first's runs (NULL: none asked for). */
static TsProgress *think_progress;
static double think_seconds; /* max_seconds of run_first's runs */

/* A ThinkProgressFn: positions thought so far, each within reason. */
static void count_think(void *ctx, const char *phase, const ThinkProgress *p)
{
	assert_true(p->busy >= 0 && p->busy <= 1.01);
	assert_true(p->npv >= 0 && p->npv <= THINK_PROGRESS_PV);
	assert_true(!p->has_root || p->npv > 0);
	assert_true(p->eta >= 0 && p->eta <= think_seconds); /* the time limit's */
	assert_true(p->book_thought >= p->thought);
	ts_progress_note(ctx, phase, p->thought);
}

/* Runs the loop with n fake engines. */
static int run_first(ThinkStats *st, const char *dir, FakeLog *log, int n, FakeMode mode,
                     uint64_t positions, const volatile sig_atomic_t *stop,
                     const char *const *first, size_t nfirst)
{
	BookDB *db = NULL;
	char err[THINK_ERRLEN];
	SearchEngine *engines[8];
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	for (int i = 0; i < n; i++) engines[i] = fake_new(log, mode);
	ThinkOptions opt = {.engines = engines,
	                    .nengines = n,
	                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 7},
	                    .multipv = 3,
	                    .max_positions = positions,
	                    .stop = stop,
	                    .commit_every = 4,
	                    .kif_bonus = 100,
	                    .first = first,
	                    .nfirst = nfirst,
	                    .max_seconds = think_seconds,
	                    .progress = think_progress ? count_think : NULL,
	                    .progress_ctx = think_progress};
	int rc = think_run(st, db, &opt, err);
	for (int i = 0; i < n; i++) search_free(engines[i]);
	bookdb_free(db);
	return rc;
}

static int run(ThinkStats *st, const char *dir, FakeLog *log, int n, FakeMode mode,
               uint64_t positions, const volatile sig_atomic_t *stop)
{
	return run_first(st, dir, log, n, mode, positions, stop, NULL, 0);
}

static uint64_t count_thought(const char *dir)
{
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions bo = {.read_only = true};
	BookRecord *rec = malloc(sizeof *rec);
	uint64_t n = 0;
	assert_non_null(rec);
	assert_int_equal(bookdb_open(&db, dir, &bo, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key k;
	const uint8_t *val;
	size_t len;
	while (bookdb_iter_next(it, &k, &val, &len) == 1) {
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		if (!(rec->flags & BOOKDB_REC_THOUGHT)) continue;
		n++;
		assert_int_equal(rec->think_depth, 7);
		/* Every analysed move is stored with its evaluation. */
		int evals = 0;
		for (int i = 0; i < rec->nmoves; i++)
			if (rec->moves[i].flags & BOOKDB_MOVE_EVAL) evals++;
		assert_true(evals >= 1 && evals <= 3);
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	return n;
}

static void assert_distinct(const FakeLog *log)
{
	for (int i = 0; i < log->n; i++)
		for (int j = i + 1; j < log->n; j++)
			assert_false(key_equal(log->keys[i], log->keys[j]));
}

static void test_bookgen__think_grows_the_book_and_resumes_without_repeats(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	FakeLog *log = calloc(1, sizeof *log);
	assert_non_null(log);
	pthread_mutex_init(&log->mu, NULL);
	ThinkStats st;
	assert_int_equal(run(&st, dir, log, 3, FAKE_NORMAL, 25, NULL), 0);
	assert_int_equal(st.thought, 25);
	assert_int_equal(st.failed, 0);
	assert_true(st.commits >= 1);
	assert_true(st.root_known);
	assert_int_equal(log->n, 25);
	assert_distinct(log);
	/* The start position was the first thing thought. */
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	pos_set_startpos(pos);
	assert_true(key_equal(log->keys[0], pos_key(pos)));
	free(pos);
	assert_int_equal(count_thought(dir), 25);
	/* A restart goes on where the book ends: nothing analysed twice. */
	assert_int_equal(run(&st, dir, log, 2, FAKE_NORMAL, 10, NULL), 0);
	assert_int_equal(st.thought, 10);
	assert_int_equal(log->n, 35);
	assert_distinct(log);
	assert_int_equal(count_thought(dir), 35);
	pthread_mutex_destroy(&log->mu);
	free(log);
	ts_rmtree(dir);
	free(dir);
}

/* run_snap's stop flag, raised by the first "search" report of a run that
 * asks for it (the selection then hears it part-way). */
static volatile sig_atomic_t g_search_stop;
static int g_search_reports;
static void stop_on_search(void *ctx, const char *phase, const ThinkProgress *p)
{
	(void)ctx;
	(void)p;
	if (strcmp(phase, "search")) return;
	g_search_reports++;
	g_search_stop = 1;
}

/* A run of positions with one fake engine (so the order is the selector's
 * alone), the default policy, the selector's snapshot at dir's when snap;
 * with stop_in_search, stopped by the flag in its first selection that
 * searches (reported at every yield). */
static void run_snap_stop(ThinkStats *st, const char *dir, FakeLog *log, uint64_t positions,
                          bool snap, bool stop_in_search)
{
	BookDB *db = NULL;
	char err[THINK_ERRLEN], path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/%s", dir, SNAP_FILE);
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	SearchEngine *engine = fake_new(log, FAKE_NORMAL);
	ThinkOptions opt = {.engines = &engine,
	                    .nengines = 1,
	                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 7},
	                    .multipv = 3,
	                    .max_positions = positions,
	                    .commit_every = 4,
	                    .kif_bonus = 100,
	                    .snapshot = snap ? path : NULL};
	plan_options_init(&opt.plan);
	g_search_stop = 0;
	g_search_reports = 0;
	if (stop_in_search) {
		opt.stop = &g_search_stop;
		opt.progress = stop_on_search;
		opt.search_report_ms = -1;
	}
	assert_int_equal(think_run(st, db, &opt, err), 0);
	if (stop_in_search) {
		assert_int_equal(g_search_reports, 1);
		assert_true(st->search_stopped);
		assert_true(st->thought < positions); /* (leaves queued before need no search) */
		assert_false(st->root_known);         /* no search after the stop */
	} else {
		assert_false(st->search_stopped);
		assert_int_equal(st->thought, positions);
	}
	search_free(engine);
	bookdb_free(db);
}

static void run_snap(ThinkStats *st, const char *dir, FakeLog *log, uint64_t positions, bool snap)
{
	run_snap_stop(st, dir, log, positions, snap, false);
}

static void test_bookgen__think_restarts_from_its_snapshot_with_the_same_leaves(void **state)
{
	(void)state;
	char *dir[3];
	FakeLog *log[3];
	for (int i = 0; i < 3; i++) {
		dir[i] = ts_mkdtemp();
		log[i] = calloc(1, sizeof *log[i]);
		assert_non_null(log[i]);
		pthread_mutex_init(&log[i]->mu, NULL);
	}
	ThinkStats st;
	char path[BOOKDB_PATH_LEN];
	/* 0: one run of 60; 1: six of 10, each from the last one's snapshot;
	 * 2: the same without snapshots. */
	run_snap(&st, dir[0], log[0], 60, true);
	assert_false(st.snap_restored);
	assert_string_equal(st.snap_note, ""); /* there was none */
	assert_true(st.snap_saved);
	for (int r = 0; r < 6; r++) {
		run_snap(&st, dir[1], log[1], 10, true);
		assert_int_equal(st.snap_restored, r > 0);
		assert_string_equal(st.snap_note, "");
		assert_true(st.snap_saved);
		snprintf(path, sizeof path, "%s/%s", dir[1], SNAP_FILE);
		assert_int_equal(access(path, F_OK), 0);
		run_snap(&st, dir[2], log[2], 10, false);
		assert_false(st.snap_restored || st.snap_saved);
	}
	/* A run stopped part-way through its first selection (SIGINT during a
	 * long first search) saves the selector as it was, and the runs after
	 * it go on in the same order. */
	run_snap_stop(&st, dir[1], log[1], 10, true, true);
	assert_true(st.snap_restored && st.snap_saved);
	uint64_t k = st.thought;
	assert_int_equal(log[1]->n, 60 + k);
	run_snap(&st, dir[0], log[0], 15 + k, true);
	run_snap(&st, dir[1], log[1], 15, true);
	assert_true(st.snap_restored);
	/* The runs restored think what the single run thought, in its order. */
	assert_int_equal(log[0]->n, 75 + k);
	assert_int_equal(log[1]->n, 75 + k);
	for (uint64_t i = 0; i < 75 + k; i++)
		assert_true(key_equal(log[0]->keys[i], log[1]->keys[i]));
	/* Without the snapshot a restart selects otherwise (the plan's turns
	 * and queued leaves start again): what makes the comparison above
	 * worth something. */
	assert_int_equal(log[2]->n, 60);
	bool same = true;
	for (int i = 0; i < 60; i++) same = same && key_equal(log[0]->keys[i], log[2]->keys[i]);
	assert_false(same);
	/* A book changed behind the snapshot's back (a run without it) makes
	 * it refused, with the reason, and removed. */
	snprintf(path, sizeof path, "%s/%s", dir[2], SNAP_FILE);
	run_snap(&st, dir[1], log[1], 5, false);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/%s", dir[1], SNAP_FILE);
	assert_int_equal(access(path, F_OK), 0); /* not read, not removed */
	run_snap(&st, dir[1], log[1], 5, true);
	assert_false(st.snap_restored);
	assert_non_null(strstr(st.snap_note, "the book was written since"));
	/* With the book's change log on (as any minimax run leaves it), a run
	 * without the snapshot in between is caught up with: the next run
	 * restores, and thinks nothing the runs before it thought. */
	char *d = ts_mkdtemp();
	FakeLog *lg = calloc(1, sizeof *lg);
	assert_non_null(lg);
	pthread_mutex_init(&lg->mu, NULL);
	BookDB *db;
	BookTxn *txn;
	char berr[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, d, NULL, berr), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_enable(txn), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	run_snap(&st, d, lg, 10, true);
	run_snap(&st, d, lg, 10, true);
	assert_true(st.snap_restored);
	run_snap(&st, d, lg, 5, false);
	run_snap(&st, d, lg, 10, true);
	if (!st.snap_restored) fail_msg("not restored: %s", st.snap_note);
	print_message("after a run without the snapshot: %s\n", st.snap_note);
	assert_non_null(strstr(st.snap_note, "caught up with the book: "));
	assert_int_equal(lg->n, 35);
	for (int i = 0; i < lg->n; i++)
		for (int j = 0; j < i; j++) assert_false(key_equal(lg->keys[i], lg->keys[j]));
	pthread_mutex_destroy(&lg->mu);
	free(lg);
	ts_rmtree(d);
	free(d);
	for (int i = 0; i < 3; i++) {
		pthread_mutex_destroy(&log[i]->mu);
		free(log[i]);
		ts_rmtree(dir[i]);
		free(dir[i]);
	}
}

static void test_bookgen__think_stops_on_flag_exhaustion_and_failing_engines(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	FakeLog *log = calloc(1, sizeof *log);
	assert_non_null(log);
	pthread_mutex_init(&log->mu, NULL);
	ThinkStats st;
	volatile sig_atomic_t stop = 1;
	assert_int_equal(run(&st, dir, log, 2, FAKE_NORMAL, 0, &stop), 0);
	assert_int_equal(st.thought, 0);
	assert_int_equal(log->n, 0);
	/* A resigning engine: the root is thought with no move, nothing is left. */
	assert_int_equal(run(&st, dir, log, 2, FAKE_RESIGN, 0, NULL), 0);
	assert_int_equal(st.thought, 1);
	assert_true(st.exhausted);
	assert_int_equal(log->n, 1);
	ts_rmtree(dir);
	free(dir);
	/* Engines that always fail: an error after a few attempts, no hang. */
	dir = ts_mkdtemp();
	log->n = 0;
	assert_int_equal(run(&st, dir, log, 2, FAKE_CRASH, 0, NULL), THINK_EENGINE);
	assert_int_equal(st.thought, 0);
	assert_true(st.failed >= 1);
	pthread_mutex_destroy(&log->mu);
	free(log);
	ts_rmtree(dir);
	free(dir);
}

static Key spec_key(const char *spec)
{
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	Key k = pos_key(pos);
	free(pos);
	return k;
}

/* think_run reports through its callback (about once a second, then "done"
 * with the run's count), and prints nothing without one. */
static void test_bookgen__think_progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), errf[4200];
	snprintf(errf, sizeof errf, "%s/stderr", dir);
	FakeLog *log = calloc(1, sizeof *log);
	assert_non_null(log);
	pthread_mutex_init(&log->mu, NULL);
	ThinkStats st;
	/* 1.5 s of engines that do not run out of work (about 150 positions):
	 * a report after a second */
	think_progress = ts_progress_new();
	think_seconds = 1.5;
	assert_int_equal(run(&st, dir, log, 2, FAKE_SLOW, 0, NULL), 0);
	assert_false(st.exhausted);
	/* ("search" only when a selection takes over a second: a loaded
	 * machine) */
	static const char *const phases[] = {"status", "search", "done", NULL};
	ts_progress_check(think_progress, phases);
	assert_true(ts_progress_count(think_progress, "status") >= 1);
	assert_true(st.thought > 0);
	assert_int_equal(ts_progress_last(think_progress), st.thought);
	free(think_progress);
	think_progress = NULL;
	think_seconds = 0;
	int saved = ts_stderr_begin(errf);
	int rc = run(&st, dir, log, 2, FAKE_NORMAL, 20, NULL);
	char *text = ts_stderr_end(saved, errf);
	assert_int_equal(rc, 0);
	assert_string_equal(text, "");
	free(text);
	pthread_mutex_destroy(&log->mu);
	free(log);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__think_takes_the_given_positions_first(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	FakeLog *log = calloc(1, sizeof *log);
	assert_non_null(log);
	pthread_mutex_init(&log->mu, NULL);
	static const char *const first[] = {"startpos moves 7g7f 3c3d", "startpos moves 2g2f",
	                                    "startpos moves 7g7f 3c3d", "startpos moves 2g2f"};
	ThinkStats st;
	/* One engine, so the order of the log is the order of sending. */
	assert_int_equal(run_first(&st, dir, log, 1, FAKE_NORMAL, 5, NULL, first, 4), 0);
	assert_int_equal(st.thought, 5);
	assert_int_equal(log->n, 5);
	assert_distinct(log);
	assert_true(key_equal(log->keys[0], spec_key(first[0])));
	assert_true(key_equal(log->keys[1], spec_key(first[1])));
	assert_true(key_equal(log->keys[2], spec_key("startpos"))); /* then the selector */
	/* Already thought: skipped on the next run. */
	assert_int_equal(run_first(&st, dir, log, 1, FAKE_NORMAL, 1, NULL, first, 4), 0);
	assert_int_equal(log->n, 6);
	assert_distinct(log);
	pthread_mutex_destroy(&log->mu);
	free(log);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The way to the roots, then the book's lines from it (think_paths): every
 * position on the way is thought first, in order; then, after minimax, the
 * book's best line from each of them is thought as deep as the roots lie
 * below it (from the start position 3 plies, from 7g7f 2, ...), and nothing
 * else: the run ends there. Without minimax the lines are not followed.
 */
static void test_bookgen__think_paths_then_the_lines_from_them(void **state)
{
	(void)state;
	static const char *const roots[] = {"startpos moves 7g7f 3c3d 2g2f",
	                                    "startpos moves 2g2f 8c8d"};
	static const char *const way[] = {"startpos", "startpos moves 7g7f", "startpos moves 2g2f",
	                                  "startpos moves 7g7f 3c3d"};
	RootList rl = {.specs = (char **)roots, .n = 2}, paths = {0};
	char rerr[ROOTS_ERRLEN], err[THINK_ERRLEN];
	assert_int_equal(roots_paths_of_specs(&paths, &rl, rerr), 0);
	assert_int_equal(paths.n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_true(key_equal(spec_key(paths.specs[i]), spec_key(way[i])));
	for (int with_minimax = 0; with_minimax < 2; with_minimax++) {
		char *dir = ts_mkdtemp();
		FakeLog *log = calloc(1, sizeof *log);
		assert_non_null(log);
		pthread_mutex_init(&log->mu, NULL);
		BookDB *db = NULL;
		assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
		SearchEngine *engine = fake_new(log, FAKE_NORMAL);
		BookMinimaxHook mm = bookmm_hook(NULL);
		ThinkOptions opt = {.engines = &engine,
		                    .nengines = 1,
		                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 7},
		                    .multipv = 3,
		                    .commit_every = 4,
		                    .kif_bonus = 100,
		                    .roots = roots,
		                    .nroots = 2,
		                    .paths = (const char *const *)paths.specs,
		                    .npaths = paths.n,
		                    .minimax = with_minimax ? &mm : NULL};
		plan_options_init(&opt.plan);
		ThinkStats st;
		assert_int_equal(think_paths(&st, db, &opt, err), 0);
		assert_true(st.exhausted);
		/* One engine: the way first, in its order. */
		assert_true(log->n >= 4);
		for (size_t i = 0; i < 4; i++)
			assert_true(key_equal(log->keys[i], spec_key(way[i])));
		if (!with_minimax) {
			assert_int_equal(log->n, 4);
		} else {
			assert_true(log->n > 4);
			char merr[BOOKMM_ERRLEN];
			assert_int_equal(bookmm_run(NULL, db, NULL, merr), 0);
			BookTxn *txn;
			BookRecord *rec = malloc(sizeof *rec);
			Position *pos = malloc(sizeof *pos);
			assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
			/* The roots lie at move 4: from the start 3 plies, from 7g7f and
			 * from 2g2f 2, from 7g7f 3c3d 1. */
			static const int plies[] = {3, 2, 2, 1};
			for (size_t i = 0; i < 4; i++) {
				assert_int_equal(position_parse(pos, way[i], NULL), 0);
				for (int p = 0; p < plies[i]; p++) {
					assert_int_equal(bookdb_query(rec, txn, pos), 1);
					assert_true(rec->flags & BOOKDB_REC_THOUGHT);
					Move m = bookdb_best_move(rec, pos);
					assert_true(m != MOVE_NONE);
					pos_do_move(pos, m);
				}
			}
			bookdb_txn_abort(txn);
			free(rec);
			free(pos);
		}
		search_free(engine);
		bookdb_free(db);
		pthread_mutex_destroy(&log->mu);
		free(log);
		ts_rmtree(dir);
		free(dir);
	}
	roots_free(&paths);
}

/*
 * The roots themselves come right after the way to them, before the book's
 * lines: a user asking for a few positions from roots 3 plies deep sees them
 * thought, where the lines (which a noisy engine keeps moving) came first. A
 * root on the way to another is thought once, there.
 */
static void test_bookgen__think_the_roots_right_after_the_way(void **state)
{
	(void)state;
	static const char *const roots[] = {"startpos moves 7g7f 3c3d 2g2f",
	                                    "startpos moves 2g2f 8c8d", "startpos moves 2g2f"};
	static const char *const order[] = {"startpos",
	                                    "startpos moves 7g7f",
	                                    "startpos moves 2g2f",
	                                    "startpos moves 7g7f 3c3d",
	                                    "startpos moves 7g7f 3c3d 2g2f",
	                                    "startpos moves 2g2f 8c8d"};
	RootList rl = {.specs = (char **)roots, .n = 3}, paths = {0};
	char rerr[ROOTS_ERRLEN], err[THINK_ERRLEN];
	assert_int_equal(roots_paths_of_specs(&paths, &rl, rerr), 0);
	assert_int_equal(paths.n, 4);
	char *dir = ts_mkdtemp();
	FakeLog *log = calloc(1, sizeof *log);
	assert_non_null(log);
	pthread_mutex_init(&log->mu, NULL);
	BookDB *db = NULL;
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	SearchEngine *engine = fake_new(log, FAKE_NORMAL);
	BookMinimaxHook mm = bookmm_hook(NULL);
	ThinkOptions opt = {.engines = &engine,
	                    .nengines = 1,
	                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 7},
	                    .multipv = 3,
	                    .commit_every = 4,
	                    .max_positions = 12,
	                    .roots = roots,
	                    .nroots = 3,
	                    .paths = (const char *const *)paths.specs,
	                    .npaths = paths.n,
	                    .minimax = &mm};
	plan_options_init(&opt.plan);
	ThinkStats st;
	assert_int_equal(think_run(&st, db, &opt, err), 0);
	assert_int_equal(log->n, 12);
	for (size_t i = 0; i < 6; i++)
		if (!key_equal(log->keys[i], spec_key(order[i])))
			fail_msg("position %zu thought is not %s", i, order[i]);
	for (int i = 0; i < log->n; i++)
		for (int j = 0; j < i; j++) assert_false(key_equal(log->keys[i], log->keys[j]));
	search_free(engine);
	bookdb_free(db);
	pthread_mutex_destroy(&log->mu);
	free(log);
	ts_rmtree(dir);
	free(dir);
	roots_free(&paths);
}

static unsigned long long field(const char *out, const char *name)
{
	const char *p = strstr(out, name);
	assert_non_null(p);
	return strtoull(p + strlen(name), NULL, 10);
}

/* "thought" of `joseki stats --json`. */
static unsigned long long thought_in(const char *dir)
{
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s stats %s/b --json", ts_joseki(), dir), 0);
	unsigned long long n = field(out, "\"thought\":");
	free(out);
	free(err);
	return n;
}

static void test_bookgen__think_command_with_the_builtin_engine(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL, *err = NULL;
	int rc =
	    ts_runf(&out, &err,
	            "%s think %s/b --new --engines 2 --depth 1 --multipv 3 --positions 6 --quiet",
	            ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 6);
	/* Its memory: the process's peak (the engines' tables and the
	 * book's caches make some MiB), nothing in files within the default
	 * budget. */
	assert_true(field(out, " peak_anon_mb ") > 0);
	assert_int_equal(field(out, " files_mb "), 0);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s think %s/b --depth 1 --multipv 3 --positions 4 --quiet",
	             ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 4);
	free(out);
	free(err);
	assert_int_equal(thought_in(dir), 10);
	/* SIGTERM in the middle of a long run: clean exit (0); kill -9: at most
	 * the open batch is lost. Either way the book stays consistent, the
	 * count of thought positions only grows, and a restart goes on. */
	unsigned long long before = 10;
	static const int kills[] = {SIGTERM, SIGKILL};
	char book[600], think_out[600];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(think_out, sizeof think_out, "%s/think.out", dir);
	for (size_t k = 0; k < 2; k++) {
		char *argv[] = {(char *)ts_joseki(),
		                "think",
		                book,
		                "--engines",
		                "2",
		                "--depth",
		                "3",
		                "--time",
		                "60",
		                "--quiet",
		                NULL};
		pid_t p = ts_spawn(argv, think_out, NULL, false);
		/* The signal lands once think has committed something. */
		for (int i = 0; i < 1200 && thought_in(dir) <= before; i++) usleep(50000);
		assert_true(thought_in(dir) > before);
		kill(p, kills[k]);
		int st = 0;
		assert_int_equal(waitpid(p, &st, 0), p);
		if (kills[k] == SIGTERM)
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		else
			assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		/* After SIGTERM the summary is printed and every answer it counts
		 * is in the book: the finished ones are committed, not dropped. */
		out = ts_read_file(think_out, NULL);
		assert_non_null(out);
		unsigned long long reported =
		    kills[k] == SIGTERM ? field(out, "think thought ") : 0;
		free(out);
		rc = ts_runf(&out, &err, "%s check %s/b", ts_joseki(), dir);
		assert_int_equal(rc, 0);
		free(out);
		free(err);
		unsigned long long now = thought_in(dir);
		if (kills[k] == SIGTERM) {
			assert_true(reported > 0);
			assert_int_equal(now, before + reported);
		} else {
			assert_true(now > before); /* killed after its first commits */
		}
		before = now;
	}
	rc = ts_runf(&out, &err, "%s think %s/b --depth 1 --positions 3 --quiet", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	free(out);
	free(err);
	assert_int_equal(thought_in(dir), before + 3);
	/* An external USI engine (the search module's fake, which knows the start
	 * position and resigns elsewhere): its MultiPV values are stored. */
	rc = ts_runf(&out, &err,
	             "%s think %s/u --new --engine tests/search/fakes/fake_engine.py --engines 2 "
	             "--nodes 1000 --multipv 3 --positions 3 --quiet",
	             ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 3);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s query %s/u startpos --json", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "{\"move\":\"7g7f\",\"value\":50,\"value_source\":"
	                            "\"thought\",\"eval\":50,\"depth\":3"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s think %s/u --engine %s/no-such-engine --positions 1 --quiet",
	             ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "no-such-engine"));
	free(out);
	free(err);
	/* A mistyped path is refused, saying how to start a new book, and
	 * nothing is made there. */
	rc = ts_runf(&out, &err, "%s think %s/typo --depth 1 --positions 1 --quiet", ts_joseki(),
	             dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "/typo: no book there (think --new starts a new book there)"));
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "test -e %s/typo", dir), 1);
	rc = ts_runf(&out, &err, "%s think %s/b --depth 0", ts_joseki(), dir);
	assert_int_equal(rc, 2);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* think --memory: the selector's and minimax's arrays past the budget go to
 * files beside the book (at 200,000 positions two of them pass 1M: strace
 * shows their O_TMPFILE opens in the book's directory); the book grows the
 * same as within the default. */
/* One selection a book: while a think grows it, another think, a coordinator
 * and a cycle over it are refused, naming the holder; once it stops (or is
 * killed: the test above) the next one runs. */
static void test_bookgen__a_book_has_one_selection_at_a_time(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char book[600], lock[620], think_out[620], toks[620];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(lock, sizeof lock, "%s/selection.lock", book);
	snprintf(think_out, sizeof think_out, "%s/think.out", dir);
	snprintf(toks, sizeof toks, "%s/toks", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);
	char *argv[] = {(char *)ts_joseki(), "think", book, "--depth", "3", "--time", "120",
	                "--quiet",           NULL};
	pid_t p = ts_spawn(argv, think_out, NULL, false);
	char want[64];
	snprintf(want, sizeof want, "%ld think\n", (long)p);
	char *held = NULL;
	for (int i = 0; i < 1200; i++) {
		free(held);
		held = ts_read_file(lock, NULL);
		if (held && !strcmp(held, want)) break;
		usleep(50000);
	}
	if (!held || strcmp(held, want)) fail_msg("selection.lock: '%s'", held ? held : "(none)");
	free(held);
	snprintf(want, sizeof want, "(think, pid %ld): two selections", (long)p);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s token add %s w >/dev/null 2>&1", ts_joseki(), toks), 0);
	static const char *const OTHERS[] = {
	    "%s think %s --depth 1 --positions 1",
	    "%s serve %s --work --tokens %s --listen 127.0.0.1:0",
	    "%s cycle %s --generations 1 --games 2 --opponent builtin"};
	for (size_t i = 0; i < sizeof OTHERS / sizeof *OTHERS; i++) {
		char *out = NULL, *err = NULL;
		int rc = ts_runf(&out, &err, OTHERS[i], ts_joseki(), book, toks);
		if (rc != 1 || !strstr(err, "another process selects what to think in this book") ||
		    !strstr(err, want))
			fail_msg("%s: exit %d, said: %s", OTHERS[i], rc, err);
		free(out);
		free(err);
	}
	kill(p, SIGTERM);
	int st = 0;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s think %s --depth 1 --positions 1 --quiet", ts_joseki(), book),
	    0);
	ts_rmtree(dir);
	free(dir);
}

/* The summary's root_value is none while the root is not thought (with
 * --roots-from-games the way to the roots comes first); what think analysed
 * and no minimax run backed up is said at its end, with the command. */
static void test_bookgen__think_says_what_it_has_not_valued(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/b tests/data/floodgate --quiet", ts_joseki(), dir),
	    0);
	assert_int_equal(ts_runf(&out, &err,
	                         "%s think %s/b --roots-from-games 5 --depth 1 --positions 10",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(field(out, "think thought "), 10);
	assert_non_null(strstr(out, " root_value none "));
	/* Never minimaxed: said so, with the command to run. */
	assert_non_null(strstr(err, "no minimax run has backed its analyses up yet"));
	char cmd[256];
	snprintf(cmd, sizeof cmd, "  joseki minimax %s/b\n", dir);
	assert_non_null(strstr(err, cmd));
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/b --quiet", ts_joseki(), dir), 0);
	/* Thought since the run: how many writes, and the command. */
	assert_int_equal(
	    ts_runf(&out, &err, "%s think %s/b --depth 1 --positions 3", ts_joseki(), dir), 0);
	assert_non_null(strstr(err, "writes of positions since its last minimax run"));
	assert_non_null(strstr(err, cmd));
	free(out);
	free(err);
	/* Two roots (as SFENs: no way to them first): once the first root has
	 * a value, every progress line says it and its line (it was said only
	 * when the next leaf happened to lie under the first root). */
	char roots[600];
	snprintf(roots, sizeof roots, "%s/roots", dir);
	const char *rl = "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	                 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2\n";
	assert_int_equal(ts_write_file(roots, rl, strlen(rl)), 0);
	assert_int_equal(
	    ts_runf(&out, &err, "%s think %s/b --roots %s --nodes 3000 --time 4 --status-seconds 1",
	            ts_joseki(), dir, roots),
	    0);
	int lines = 0, shown = 0;
	for (char *l = err; (l = strstr(l, "think: ")) != NULL; l++) {
		size_t n = strcspn(l, "\r\n");
		if (!memmem(l, n, " thought (", 10)) continue;
		lines++;
		bool has = memmem(l, n, ", root 1 of 2 ", 14) && memmem(l, n, " pv ", 4);
		if (shown && !has) fail_msg("a line without the root's value: %.*s", (int)n, l);
		shown += has;
	}
	if (lines < 2 || !shown)
		fail_msg("%d progress lines, %d with the root:\n%s", lines, shown, err);
	free(out);
	free(err);
	/* Not on a terminal, a line a minute by default: none in 3 s. */
	assert_int_equal(ts_runf(&out, &err, "%s think %s/b --roots %s --nodes 3000 --time 3",
	                         ts_joseki(), dir, roots),
	                 0);
	if (strstr(err, " thought (")) fail_msg("a progress line in 3 s:\n%s", err);
	free(out);
	free(err);
	/* --quiet says nothing of it. */
	assert_int_equal(
	    ts_runf(&out, &err, "%s think %s/b --depth 1 --positions 3 --quiet", ts_joseki(), dir),
	    0);
	assert_null(strstr(err, "minimax"));
	free(out);
	free(err);
	/* What became of the selector's snapshot is said as the run begins
	 * (it was said at the end), even with --quiet: a run without an end is
	 * stopped once it has said it. */
	char book[600], log[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(log, sizeof log, "%s/think.err", dir);
	char *argv[] = {(char *)ts_joseki(), "think", book, "--nodes", "3000", "--quiet", NULL};
	pid_t p = ts_spawn(argv, NULL, log, false);
	bool said = ts_wait_file(log, 0, "think: the selector restored from ", 60000);
	kill(p, SIGINT);
	int status;
	assert_int_equal(waitpid(p, &status, 0), p);
	assert_true(said);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Not used with other roots: which, then and now. */
	assert_int_equal(ts_runf(&out, &err, "%s think %s --roots %s --depth 1 --positions 1",
	                         ts_joseki(), book, roots),
	                 0);
	char *one = ts_unwrapped(err);
	if (!strstr(one, "not used: of a run with 1 root (this one: 2)"))
		fail_msg("said:\n%s", err);
	free(one);
	free(out);
	free(err);
	const char *other =
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/6P2/PPPPPP1PP/1B5R1/LNSGKGSNL w - 2\n";
	assert_int_equal(ts_write_file(roots, other, strlen(other)), 0);
	assert_int_equal(ts_runf(&out, &err, "%s think %s --roots %s --depth 1 --positions 1",
	                         ts_joseki(), book, roots),
	                 0);
	one = ts_unwrapped(err);
	if (!strstr(one, "not used: of a run with root 2 'sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/"
	                 "PPPPPPP1P/1B5R1/LNSGKGSNL w - 2' (this one: 'sfen "
	                 "lnsgkgsnl/1r5b1/ppppppppp/9/9/6P2/PPPPPP1PP/1B5R1/LNSGKGSNL w - 2')"))
		fail_msg("said:\n%s", err);
	free(one);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__think_within_a_tiny_memory_budget_grows_the_same_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s/a --positions 200000 --seed 5 --quiet",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "cp -r %s/a %s/b", dir, dir), 0);
	static const char *const BUDGET[] = {"", " --memory 1M"};
	for (int k = 0; k < 2; k++) {
		char *out = NULL, *err = NULL;
		int rc = ts_runf(&out, &err, "%s think %s/%c --depth 1 --positions 30 --quiet%s",
		                 ts_joseki(), dir, 'a' + k, BUDGET[k]);
		if (rc != 0) fail_msg("think%s: %s", BUDGET[k], err);
		assert_int_equal(field(out, "think thought "), 30);
		free(out);
		free(err);
		assert_int_equal(ts_runf(NULL, NULL, "%s export %s/%c %s/%c.db --quiet",
		                         ts_joseki(), dir, 'a' + k, dir, 'a' + k),
		                 0);
	}
	assert_int_equal(ts_runf(NULL, NULL, "cmp %s/a.db %s/b.db", dir, dir), 0);
	ts_rmtree(dir);
	free(dir);
}

/*
 * --usi-option names an option the engine takes: a USI engine (the search
 * module's fake, which lists MultiPV, USI_Hash, Threads, EvalDir and "Debug
 * Log File") that does not list it stops think at the start, exit 1, with
 * one line naming the option, the engine and its nearest names; one it lists
 * in another case is sent in its spelling, said once for all the engines;
 * the built-in engine takes USI_Hash and Threads=1 only.
 */
static void test_bookgen__think_refuses_an_option_the_engine_does_not_take(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	const char *fake = "tests/search/fakes/fake_engine.py";
	int rc = ts_runf(&out, &err,
	                 "%s think %s/u --new --engine %s --engines 2 --usi-option Threads=1 "
	                 "--usi-option EvalDri=/e --nodes 1000 --positions 1 --quiet",
	                 ts_joseki(), dir, fake);
	if (rc != 1) fail_msg("exit %d: %s%s", rc, out, err);
	char want[600];
	snprintf(want, sizeof want,
	         "joseki: think: %s: option EvalDri=/e not taken: the engine (FakeEngine ok) "
	         "lists no EvalDri; the nearest it lists: EvalDir, ",
	         fake);
	if (strncmp(err, want, strlen(want))) fail_msg("said: %s", err);
	assert_int_equal(ts_occurrences(err, "\n"), 1);
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s think %s/u --engine %s --engines 2 --usi-option threads=1 --nodes 1000 "
	             "--positions 2 --quiet",
	             ts_joseki(), dir, fake);
	if (rc != 0) fail_msg("exit %d: %s%s", rc, out, err);
	assert_int_equal(field(out, "think thought "), 2);
	snprintf(want, sizeof want,
	         "joseki: think: %s: option threads sent as Threads, the spelling FakeEngine ok "
	         "lists\n",
	         fake);
	if (ts_occurrences(err, want) != 1) fail_msg("said: %s", err);
	free(out), free(err);
	rc = ts_runf(&out, &err, "%s think %s/u --usi-option Bogus=1 --depth 1 --positions 1",
	             ts_joseki(), dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "joseki: think: builtin engine: option Bogus=1 not taken (it "
	                            "takes USI_Hash or Hash=1..65536 and Threads=1)\n"));
	free(out), free(err);
	rc = ts_runf(&out, &err,
	             "%s think %s/u --usi-option USI_Hash=8 --usi-option Threads=1 --depth 1 "
	             "--positions 1 --quiet",
	             ts_joseki(), dir);
	if (rc != 0) fail_msg("exit %d: %s%s", rc, out, err);
	assert_int_equal(field(out, "think thought "), 1);
	free(out), free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Engines that misbehave under load: 8 engines of which the script's starts
 * crash in the middle of a search, hang (never answer go, ignore stop), mix
 * unreadable lines into their answers, or flood 5,000 info lines per answer.
 * `think` restarts what fails, keeps the other engines busy, stores every
 * answer it counts and finishes the run; a position that fails twice is
 * reported as failed, never stored half. It runs the pv policy: under
 * coverage (the default) one run in a fresh clone's CI ended early, the
 * selector finding nothing more after 232 positions with nothing in flight,
 * not seen again in 26 runs; the cause is not found, and engine faults are
 * what this test is about. */
static void test_bookgen__think_command_with_misbehaving_engines_under_load(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL, *err = NULL;
	int rc =
	    ts_runf(&out, &err,
	            "JOSEKI_BIN=%s MIXED_STATE=%s/starts "
	            "MIXED_SCRIPT=crash,ok,hang,ok,garbage,ok,flood,ok "
	            "%s think %s/b --new --engine tests/search/fakes/mixed_engine.py --engines 8 "
	            "--nodes 2000 --multipv 2 --positions 400 --select pv --quiet",
	            ts_joseki(), dir, ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 400);
	assert_true(field(out, " failed ") <= 2);
	free(out);
	free(err);
	char path[512];
	snprintf(path, sizeof path, "%s/starts", dir);
	char *starts = ts_read_file(path, NULL);
	assert_non_null(starts);
	/* The crashing and the hanging engine were replaced at least once each. */
	assert_true(atoi(starts) >= 10);
	free(starts);
	rc = ts_runf(&out, &err, "%s check %s/b", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, " 0 bad"));
	free(out);
	free(err);
	assert_int_equal(thought_in(dir), 400);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__think_command_from_kifu(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL, *err = NULL, path[4096];
	snprintf(path, sizeof path, "%s/games.usi", dir);
	static const char games[] = "# two games\nstartpos moves 7g7f 3c3d 2g2f\n"
	                            "startpos moves 7g7f 8c8d\n";
	assert_int_equal(ts_write_file(path, games, sizeof games - 1), 0);
	/* Positions along the games: start, 7g7f, 7g7f 3c3d, ... 2g2f, 7g7f 8c8d:
	 * five distinct, all thought before anything else. */
	int rc = ts_runf(
	    &out, &err,
	    "%s think %s/b --new --from-kifu %s --depth 1 --multipv 2 --positions 5 --quiet",
	    ts_joseki(), dir, path);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 5);
	free(out);
	free(err);
	static const char *const along[] = {
	    "startpos", "startpos moves 7g7f", "startpos moves 7g7f 3c3d",
	    "startpos moves 7g7f 3c3d 2g2f", "startpos moves 7g7f 8c8d"};
	for (size_t i = 0; i < 5; i++) {
		rc = ts_runf(&out, &err, "%s query %s/b '%s' --json", ts_joseki(), dir, along[i]);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, "\"in_book\":true"));
		/* Thought: a best move and the analysis depth (query leaves both
		 * keys out for a position without moves or analysis). */
		assert_non_null(strstr(out, "\"bestmove\":\""));
		assert_non_null(strstr(out, "\"thought_depth\":1"));
		free(out);
		free(err);
	}
	/* CSA records: the first three positions of a floodgate game. */
	rc = ts_runf(&out, &err,
	             "%s think %s/c --new --from-kifu 'tests/data/floodgate/"
	             "wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa' "
	             "--max-ply 3 --depth 1 --positions 3 --quiet",
	             ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 3);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s query %s/c startpos --json", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"in_book\":true"));
	free(out);
	free(err);
	/* A bad game names the file and line. */
	static const char bad[] = "startpos moves 7g7f 7g7f\n";
	assert_int_equal(ts_write_file(path, bad, sizeof bad - 1), 0);
	rc = ts_runf(&out, &err, "%s think %s/b --from-kifu %s --depth 1 --quiet", ts_joseki(), dir,
	             path);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, ":1: illegal move 7g7f"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Puts the record of spec: thought when evals is set; moves given as USI with
 * an eval (or none: INT_MIN) and a game count. */
static void put_record(BookDB *db, const char *spec, bool thought, const char *const *moves,
                       const int *evals, const int *counts, int n)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookTxn *txn = NULL;
	assert_non_null(pos);
	assert_non_null(rec);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	bookdb_record_init(rec, pos);
	if (thought) {
		rec->flags = BOOKDB_REC_THOUGHT;
		rec->think_depth = 5;
	}
	for (int i = 0; i < n; i++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		memset(m, 0, sizeof *m);
		assert_int_equal(
		    usi_move_parse_legal(&m->move, pos, moves[i], strlen(moves[i]), NULL), 0);
		if (evals[i] != INT32_MIN) {
			m->flags |= BOOKDB_MOVE_EVAL;
			m->eval = (int16_t)evals[i];
			m->depth = 5;
		}
		if (counts[i]) {
			m->flags |= BOOKDB_MOVE_STATS;
			m->count = (uint32_t)counts[i];
		}
	}
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(rec);
	free(pos);
}

static void test_bookgen__think_command_extends_along_ingested_games(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], *out = NULL, *err = NULL;
	snprintf(book, sizeof book, "%s/b", dir);
	BookDB *db = NULL;
	char berr[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, NULL, berr), 0);
	/* The start position is thought: 2g2f has an engine value (the selector's
	 * choice: high enough that the depth-1 value 7g7f gets below stays under
	 * it), 7g7f and 5g5f were played in games but only 5g5f's child is
	 * thought: the book ends at 7g7f. */
	static const char *const mv[] = {"2g2f", "7g7f", "5g5f"};
	static const int ev[] = {400, INT32_MIN, INT32_MIN}, ct[] = {0, 3, 1};
	put_record(db, "startpos", true, mv, ev, ct, 3);
	static const char *const mv2[] = {"8c8d"};
	static const int ev2[] = {-10}, ct2[] = {0};
	put_record(db, "startpos moves 5g5f", true, mv2, ev2, ct2, 1);
	bookdb_free(db);
	int rc =
	    ts_runf(&out, &err, "%s think %s --extend --depth 1 --multipv 2 --positions 1 --quiet",
	            ts_joseki(), book);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 1);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s query %s 'startpos moves 7g7f' --json", ts_joseki(), book);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"in_book\":true"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s query %s 'startpos moves 2g2f' --json", ts_joseki(), book);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"in_book\":false"));
	free(out);
	free(err);
	/* Without --extend the selector's leaf comes next. */
	rc = ts_runf(&out, &err, "%s think %s --depth 1 --multipv 2 --positions 1 --quiet",
	             ts_joseki(), book);
	assert_int_equal(rc, 0);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s query %s 'startpos moves 2g2f' --json", ts_joseki(), book);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"in_book\":true"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Keys reachable from the roots through the book's stored moves. */
typedef struct {
	Key *k;
	size_t n, cap;
} KeyList;

static bool keylist_has(const KeyList *l, Key k)
{
	for (size_t i = 0; i < l->n; i++)
		if (key_equal(l->k[i], k)) return true;
	return false;
}

static void keylist_add(KeyList *l, Key k)
{
	if (keylist_has(l, k)) return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->k = realloc(l->k, l->cap * sizeof *l->k);
		assert_non_null(l->k);
	}
	l->k[l->n++] = k;
}

/*
 * A root mated in one: the builtin engine finds G*5b (mate), the mated
 * position is thought next (bestmove resign, no legal move), and then the
 * root is won for good: nothing is left to think (exhausted), the mated
 * position is stored as thought as deep as can be (the rules decide it), and
 * minimax backs the mate up through it, not the parent's own 31999.
 */
static void test_bookgen__think_a_root_mated_in_one_is_done(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], roots[4096], *out = NULL, *err = NULL;
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	static const char R[] = "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1\n";
	assert_int_equal(ts_write_file(roots, R, sizeof R - 1), 0);
	int rc = ts_runf(&out, &err,
	                 "%s think %s --new --roots %s --engine builtin --multipv 3 --nodes 20000 "
	                 "--positions 10",
	                 ts_joseki(), book, roots);
	if (rc != 0) fail_msg("%s%s", out, err);
	assert_int_equal(field(out, "think thought "), 2);
	assert_int_equal(field(out, " exhausted "), 1);
	assert_int_equal(field(out, " root_value "), VALUE_MATE);
	free(out);
	free(err);
	json_t *q =
	    ts_run_json(0, "%s query %s 'sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1 moves G*5b' --json",
	                ts_joseki(), book);
	assert_int_equal(ts_jint(q, "thought_depth"), 255);
	assert_int_equal(ts_jint(q, "legal_moves"), 0);
	json_decref(q);
	json_decref(ts_run_json(0, "%s minimax %s --json", ts_joseki(), book));
	q = ts_run_json(0, "%s query %s 'sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1' --json", ts_joseki(),
	                book);
	json_t *m = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m, "move")), "G*5b");
	assert_int_equal(json_integer_value(json_object_get(m, "value")), VALUE_MATE);
	assert_string_equal(json_string_value(json_object_get(m, "value_source")), "minimax");
	assert_int_equal(json_integer_value(json_object_get(m, "dist")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "mate")),
	                 1); /* as a player reads it */
	json_decref(q);
	/* The text says it too, and at the mated position why it has no move. */
	assert_int_equal(ts_runf(&out, NULL, "%s query %s 'sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1'",
	                         ts_joseki(), book),
	                 0);
	if (!strstr(out, "\nG*5b    32000 minimax/1     31999") || !strstr(out, "  mate in 1\n"))
		fail_msg("%s", out);
	free(out);
	assert_int_equal(ts_runf(&out, NULL,
	                         "%s query %s 'sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1 moves G*5b'",
	                         ts_joseki(), book),
	                 0);
	if (!strstr(out, "\nno legal move: the side to move is mated\n")) fail_msg("%s", out);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__think_command_grows_only_under_its_roots(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], *out = NULL, *err = NULL;
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);
	/* The two positions most reached at ply 6, weighted by their games. */
	int rc = ts_runf(&out, &err,
	                 "%s think %s --roots-from-games 2 --roots-ply 6 --depth 1 --multipv 3 "
	                 "--positions 40",
	                 ts_joseki(), book);
	assert_int_equal(rc, 0);
	assert_int_equal(field(out, "think thought "), 40);
	assert_non_null(strstr(err, "2 roots at ply 6"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s select %s --roots-from-games 2 --roots-ply 6 --count 1 --json",
	             ts_joseki(), book);
	assert_int_equal(rc, 0);
	free(out);
	free(err);
	/* Every position the games pass through on their way to the roots is
	 * thought (the way to the roots first); every other thought position lies
	 * below a root (reached from one through the book's moves) or within the
	 * roots' 6 plies of the start (the book's line from there). */
	RootList r = {0}, paths = {0};
	BookDB *db = NULL;
	char berr[BOOKDB_ERRLEN], rerr[ROOTS_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, NULL, berr), 0);
	assert_int_equal(roots_from_games(&r, db, 2, 6, NULL, NULL, &paths, rerr), 0);
	assert_int_equal(r.n, 2);
	assert_true(paths.n >= 6 && paths.n < 40);
	BookTxn *txn;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_non_null(rec);
	assert_non_null(pos);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	KeyList reach = {0};
	for (size_t i = 0; i < r.n; i++) {
		assert_int_equal(position_parse(pos, r.specs[i], NULL), 0);
		keylist_add(&reach, pos_key(pos));
	}
	for (size_t h = 0; h < reach.n; h++) {
		if (bookdb_get(rec, txn, reach.k[h]) != 0 || !(rec->flags & BOOKDB_REC_THOUGHT))
			continue;
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		for (int m = 0; m < rec->nmoves; m++)
			keylist_add(&reach, pos_key_after(pos, rec->moves[m].move));
	}
	BookIter *it;
	Key k;
	const uint8_t *val;
	size_t len;
	int thought = 0, under[2] = {0, 0};
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	while (bookdb_iter_next(it, &k, &val, &len) == 1) {
		if (!len || !(val[0] & BOOKDB_REC_THOUGHT)) continue;
		thought++;
		assert_int_equal(bookdb_get(rec, txn, k), 0);
		assert_true(keylist_has(&reach, k) || rec->min_ply <= 6);
		for (int i = 0; i < 2; i++) {
			assert_int_equal(position_parse(pos, r.specs[i], NULL), 0);
			if (key_equal(pos_key(pos), k)) under[i]++;
		}
	}
	bookdb_iter_free(it);
	assert_int_equal(thought, 40);
	assert_int_equal(under[0] + under[1], 2); /* both roots thought */
	for (size_t i = 0; i < paths.n; i++) {
		assert_int_equal(position_parse(pos, paths.specs[i], NULL), 0);
		assert_true(pos->game_ply <= 6);
		assert_int_equal(bookdb_get(rec, txn, pos_key(pos)), 0);
		assert_true(rec->flags & BOOKDB_REC_THOUGHT);
	}
	pos_set_startpos(pos);
	assert_true(bookdb_get(rec, txn, pos_key(pos)) == 0 && (rec->flags & BOOKDB_REC_THOUGHT));
	bookdb_txn_abort(txn);
	bookdb_free(db);
	roots_free(&r);
	roots_free(&paths);
	free(reach.k);
	free(rec);
	free(pos);
	/* Roots and their options are checked. */
	rc = ts_runf(&out, &err, "%s think %s --roots %s/none.txt --positions 1", ts_joseki(), book,
	             dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "none.txt"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s think %s --roots-ply 3 --positions 1", ts_joseki(), book);
	assert_int_equal(rc, 2);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s think %s --select best --positions 1", ts_joseki(), book);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "--select"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* An opponent whose answer depends on what it searched before in the game,
 * as a real engine's hash table makes it: its reply is the legal move
 * (searches since its new game + a number of the position) mod their count. */
typedef struct {
	SearchEngine base;
	int searched;
} StatefulEngine;

static int stateful_analyse(SearchEngine *e, SearchResult *out, const Position *pos,
                            const SearchBudget *budget, int multipv)
{
	StatefulEngine *f = (StatefulEngine *)e;
	(void)budget;
	(void)multipv;
	memset(out, 0, sizeof *out);
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	if (!n) {
		out->resign = true;
		return 0;
	}
	Move m = moves[(size_t)((uint64_t)f->searched++ + pos_key(pos).lo % 7) % (size_t)n];
	SearchLine *l = &out->lines[out->nlines++];
	*l = (SearchLine){
	    .move = m, .multipv = 1, .value = 0, .depth = 5, .nodes = 100, .pv_len = 1};
	l->pv[0] = m;
	out->bestmove = m;
	return 0;
}

static void stateful_new_game(SearchEngine *e)
{
	((StatefulEngine *)e)->searched = 0;
}

static const SearchEngineOps STATEFUL_OPS = {stateful_analyse, stateful_new_game, fake_free,
                                             fake_name,        fake_error,        NULL};

static SearchEngine *stateful_new(void)
{
	StatefulEngine *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->base.ops = &STATEFUL_OPS;
	return &f->base;
}

/* The probe against an opponent whose answers depend on its history: a walk
 * that follows another way than the engine's last one brings the engine to
 * its own game first (a new game, the earlier searches again), so a game
 * played afterwards as match plays it, the book's best move on the book's
 * side, the opponent asked once a move from its new game, stays in book to
 * the probe's depth for both colours; replies known from earlier walks are
 * reused, and none differs when asked again. */
/* A ProbeProgressFn: positions thought so far, lines within reason. */
static void count_probe(void *ctx, const char *phase, const ProbeProgress *p)
{
	assert_int_equal(p->lines, 4);
	assert_true(p->done <= 4 && p->deepest <= 8 && p->seconds >= 0);
	assert_true(p->reach >= 0 && p->reach <= 4); /* 8 plies: 4 book moves at most */
	if (!strcmp(phase, "done")) assert_int_equal(p->done, 4);
	if (!strcmp(phase, "done")) assert_true(p->reach == 4);
	ts_progress_note(ctx, phase, p->thought);
}

/* Plays each line of roots[0..1] x (Black, White) as match would, the book
 * side from the book, the opponent a fresh stateful engine at budget, for at
 * most plies plies: bp[2r + c] the book side's book moves. */
static void play_lines(int bp[4], BookDB *db, const char *const roots[2],
                       const SearchBudget *budget, int plies)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	SearchResult *res = malloc(sizeof *res);
	assert_true(pos && rec && res);
	SearchEngine *opp = stateful_new();
	for (int r = 0; r < 2; r++)
		for (int c = 0; c < 2; c++) {
			assert_int_equal(position_parse(pos, roots[r], NULL), 0);
			Color book = c ? WHITE : BLACK;
			search_new_game(opp);
			int book_plies = 0;
			for (int ply = 0; ply < plies; ply++) {
				Move m = MOVE_NONE;
				if (pos->side == book) {
					BookTxn *txn;
					assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
					int q = bookdb_query(rec, txn, pos);
					bookdb_txn_abort(txn);
					if (q == 1) m = bookdb_best_move(rec, pos);
					if (m == MOVE_NONE) break;
					book_plies++;
				} else {
					assert_int_equal(search_analyse(opp, res, pos, budget, 1),
					                 0);
					m = res->bestmove;
				}
				assert_true(pos_is_legal(pos, m));
				pos_do_move(pos, m);
			}
			bp[2 * r + c] = book_plies;
		}
	search_free(opp);
	free(pos);
	free(rec);
	free(res);
}

/* Two workers probing 2 roots x 2 colours with fake engines (analysis) and
 * stateful opponents, to plies, bursts of 2, into a new book. */
typedef struct {
	char *dir;
	BookDB *db;
	FakeLog log;
	SearchEngine *engines[2], *opps[2];
	ProbeOptions po;
} ProbeRig;

static const char *const rig_roots[] = {"startpos", "startpos moves 2g2f 8c8d"};

static void rig_open(ProbeRig *r, int plies)
{
	char err[BOOKDB_ERRLEN];
	memset(r, 0, sizeof *r);
	r->dir = ts_mkdtemp();
	assert_int_equal(bookdb_open(&r->db, r->dir, NULL, err), 0);
	pthread_mutex_init(&r->log.mu, NULL);
	for (int i = 0; i < 2; i++) {
		r->engines[i] = fake_new(&r->log, FAKE_NORMAL);
		r->opps[i] = stateful_new();
	}
	r->po = (ProbeOptions){.engines = r->engines,
	                       .opponents = r->opps,
	                       .nworkers = 2,
	                       .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                       .opp_budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                       .multipv = 3,
	                       .roots = rig_roots,
	                       .nroots = 2,
	                       .book_side = PLAN_SIDE_BOTH,
	                       .max_plies = plies,
	                       .burst = 2,
	                       .minimax = bookmm_hook(NULL)};
}

static void rig_close(ProbeRig *r)
{
	for (int i = 0; i < 2; i++) {
		search_free(r->engines[i]);
		search_free(r->opps[i]);
	}
	bookdb_free(r->db);
	ts_rmtree(r->dir);
	free(r->dir);
}

static void test_bookgen__probe_follows_an_opponent_with_a_history(void **state)
{
	(void)state;
	char err[THINK_ERRLEN];
	enum { PLIES = 8 };
	ProbeRig rig;
	rig_open(&rig, PLIES);
	ProbeOptions *po = &rig.po;
	po->progress = count_probe;
	po->progress_ctx = ts_progress_new();
	ProbeStats st;
	assert_int_equal(probe_run(&st, rig.db, po, err), 0);
	/* Progress went to the callback: about once a second, then "done" with
	 * the run's figures. */
	static const char *const phases[] = {"status", "done", NULL};
	TsProgress *seen = po->progress_ctx;
	ts_progress_check(seen, phases);
	assert_int_equal(ts_progress_last(seen), st.thought);
	free(seen);
	assert_int_equal(st.lines, 4);
	assert_int_equal(st.done, 4);
	assert_true(st.restarts > 0);     /* the book changed its mind on the way */
	assert_true(st.opp_replayed > 0); /* and the engine was brought back */
	assert_true(st.opp_cached > 0);
	assert_int_equal(st.opp_differ, 0);
	/* The games: every line stays in book for all its book side's moves,
	 * and the run's reach says so. */
	int bp[4];
	play_lines(bp, rig.db, rig_roots, &po->opp_budget, PLIES);
	for (int i = 0; i < 4; i++) assert_int_equal(bp[i], PLIES / 2);
	assert_true(st.reach == PLIES / 2);
	rig_close(&rig);
}

/* Stopped by a position budget part-way, the probe's reach is what matches
 * from the roots get, and every line got some of the budget. (How even the
 * lines end depends on the two workers' timing: a line's reach can drop when
 * another line's result turns a choice they share, after its last walk.) */
static void test_bookgen__probe_reach_is_what_a_match_gets(void **state)
{
	(void)state;
	char err[THINK_ERRLEN];
	enum { PLIES = 24 };
	ProbeRig rig;
	rig_open(&rig, PLIES);
	rig.po.max_positions = 30;
	ProbeStats st;
	assert_int_equal(probe_run(&st, rig.db, &rig.po, err), 0);
	assert_true(st.done < 4); /* stopped part-way */
	int bp[4], lo = PLIES, hi = 0, sum = 0;
	play_lines(bp, rig.db, rig_roots, &rig.po.opp_budget, PLIES);
	for (int i = 0; i < 4; i++) {
		lo = bp[i] < lo ? bp[i] : lo;
		hi = bp[i] > hi ? bp[i] : hi;
		sum += bp[i];
	}
	print_message("book plies %d %d %d %d, reach %.2f\n", bp[0], bp[1], bp[2], bp[3], st.reach);
	assert_true(st.reach == sum / 4.0);
	assert_true(lo >= 1);
	assert_true(hi <= PLIES / 2);
	rig_close(&rig);
}

/* think --opponent: the lines the opponent plays are walked to --probe-plies,
 * so a match against that opponent (the built-in engine, which answers the
 * same way at a node budget) stays in book for exactly the book side's moves
 * of those plies, in every game. */
static void test_bookgen__think_probes_the_lines_an_opponent_plays(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], roots[4096], *out = NULL, *err = NULL;
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	static const char R[] = "startpos moves 7g7f 3c3d\nstartpos moves 2g2f\n";
	assert_int_equal(ts_write_file(roots, R, sizeof R - 1), 0);
	int rc = ts_runf(&out, &err,
	                 "%s think %s --new --roots %s --opponent builtin --nodes 3000 --multipv 3 "
	                 "--probe-plies 6 --engines 2 --quiet",
	                 ts_joseki(), book, roots);
	assert_int_equal(rc, 0);
	/* 2 roots x 2 colours, each walked to the end (a walk that found its
	 * line thought to the last ply). A position met on the opponent's turn
	 * and later on the book's is analysed twice (the opponent's one move,
	 * then the book's lines). */
	assert_true(field(out, "probe thought ") >= thought_in(dir));
	assert_true(field(out, " lines ") == 4 && field(out, " done ") == 4);
	assert_int_equal(field(out, " deepest "), 6);
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --quiet", ts_joseki(), book), 0);
	rc = ts_runf(&out, &err,
	             "%s match --engine-a builtin --engine-b builtin --book-a %s --openings %s "
	             "--games 4 --nodes 3000 --json --quiet",
	             ts_joseki(), book, roots);
	assert_int_equal(rc, 0);
	json_error_t je;
	json_t *o = json_loads(out, 0, &je);
	assert_non_null(o);
	json_t *res = json_object_get(o, "results");
	assert_int_equal(json_array_size(res), 4);
	for (size_t g = 0; g < 4; g++) {
		json_t *bp = json_object_get(json_array_get(res, g), "book_plies");
		/* 6 plies walked: the book side moved 3 times in them. */
		assert_int_equal(json_integer_value(json_array_get(bp, 0)), 3);
		assert_int_equal(json_integer_value(json_array_get(bp, 1)), 0);
	}
	json_decref(o);
	free(out);
	free(err);
	/* The options go together. */
	rc = ts_runf(&out, &err, "%s think %s --opponent-nodes 5 --positions 1", ts_joseki(), book);
	assert_int_equal(rc, 2);
	free(out);
	free(err);
	/* The node jitter needs the opponent's budget in nodes, 0..50 percent. */
	rc = ts_runf(&out, &err,
	             "%s think %s --opponent builtin --movetime 10 --opponent-nodes-jitter 5 "
	             "--positions 1",
	             ts_joseki(), book);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "--opponent-nodes-jitter needs a nodes budget"));
	free(out);
	free(err);
	rc = ts_runf(&out, &err,
	             "%s think %s --opponent builtin --nodes 100 --opponent-nodes-jitter 51 "
	             "--positions 1",
	             ts_joseki(), book);
	assert_int_equal(rc, 2);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* An opponent whose reply depends on its node budget, as a real engine's at
 * a small budget does: one of two legal moves, by whether it got at least
 * the budget's middle (1,000 nodes). It records each search: the nodes, the
 * position and the reply. */
enum { NODES_MAX_GO = 4096 };
typedef struct {
	SearchEngine base;
	int n;
	uint64_t nodes[NODES_MAX_GO];
	Key key[NODES_MAX_GO];
	Move reply[NODES_MAX_GO];
} NodesEngine;

static int nodes_analyse(SearchEngine *e, SearchResult *out, const Position *pos,
                         const SearchBudget *budget, int multipv)
{
	NodesEngine *f = (NodesEngine *)e;
	(void)multipv;
	memset(out, 0, sizeof *out);
	assert_int_equal(budget->kind, SEARCH_BUDGET_NODES);
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	if (!n) {
		out->resign = true;
		return 0;
	}
	Move m = moves[(pos_key(pos).lo % 5 + (budget->amount >= 1000)) % (size_t)n];
	assert_true(f->n < NODES_MAX_GO);
	f->nodes[f->n] = budget->amount;
	f->key[f->n] = pos_key(pos);
	f->reply[f->n++] = m;
	SearchLine *l = &out->lines[out->nlines++];
	*l =
	    (SearchLine){.move = m, .multipv = 1, .depth = 5, .nodes = budget->amount, .pv_len = 1};
	l->pv[0] = m;
	out->bestmove = m;
	return 0;
}

static const SearchEngineOps NODES_OPS = {nodes_analyse, fake_new_game, fake_free,
                                          fake_name,     fake_error,    NULL};

/* Growth against a varying opponent: with --opponent-nodes-jitter each walk
 * asks the opponent at every one of its moves, at nodes drawn within the
 * jitter (both ways of the middle: both replies), and every reply it gave is
 * in the book, evaluated, at its position (a reply new to a thought position
 * added to it), so positions gather the replies the opponent plays; the walks
 * go on until every line met nothing new in a row of walks. */
static void test_bookgen__probe_against_a_varying_opponent_keeps_every_reply(void **state)
{
	(void)state;
	char err[THINK_ERRLEN];
	enum { PLIES = 6 };
	ProbeRig rig;
	rig_open(&rig, PLIES);
	NodesEngine *opp[2];
	for (int i = 0; i < 2; i++) {
		search_free(rig.opps[i]);
		opp[i] = calloc(1, sizeof *opp[i]);
		assert_non_null(opp[i]);
		opp[i]->base.ops = &NODES_OPS;
		rig.opps[i] = &opp[i]->base;
	}
	rig.po.opp_jitter = 20;
	rig.po.seed = 12345;
	ProbeStats st;
	/* The jitter moves nodes: any other budget is refused, before any walk. */
	assert_int_equal(probe_run(&st, rig.db, &rig.po, err), THINK_EINVAL);
	assert_non_null(strstr(err, "with a nodes budget"));
	assert_int_equal(st.walks, 0);
	rig.po.opp_budget = (SearchBudget){.kind = SEARCH_BUDGET_NODES, .amount = 1000};
	assert_int_equal(probe_run(&st, rig.db, &rig.po, err), 0);
	assert_int_equal(st.done, 4);
	assert_int_equal(st.opp_cached, 0);   /* every opponent move asked */
	assert_int_equal(st.opp_replayed, 0); /* each walk a game of its own, in order */
	assert_true(st.opp_added > 0);
	int low = 0, high = 0, searches = 0, multi = 0;
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, rig.db, false), 0);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < opp[i]->n; k++) {
			uint64_t n = opp[i]->nodes[k];
			assert_true(n >= 800 && n <= 1200);
			low += n < 1000;
			high += n >= 1000;
			searches++;
			assert_int_equal(bookdb_get(rec, txn, opp[i]->key[k]), 0);
			int evals = 0;
			bool has = false;
			for (int j = 0; j < rec->nmoves; j++)
				if (rec->moves[j].flags & BOOKDB_MOVE_EVAL) {
					evals++;
					has |= rec->moves[j].move == opp[i]->reply[k];
				}
			assert_true(has);
			multi += evals >= 2;
		}
	bookdb_txn_abort(txn);
	free(rec);
	print_message("varying opponent: %d searches (%d below the middle, %d above), %llu "
	              "replies added, %d searches at positions holding two or more\n",
	              searches, low, high, (unsigned long long)st.opp_added, multi);
	assert_int_equal((uint64_t)searches, st.opp_moves);
	assert_true(low > 0 && high > 0);
	assert_true(multi > 0);
	rig_close(&rig);
}

/* The engines' CPU seconds of a summary line ("engine_s E"). */
static double engine_s(const char *out)
{
	const char *p = strstr(out, " engine_s ");
	assert_non_null(p);
	return strtod(p + 10, NULL);
}

/* The CPU seconds this process's waited-for children have used. */
static double children_cpu_s(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_CHILDREN, &ru), 0);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* --engine-seconds: the run stops once its engines have used that much CPU
 * (think, and the probe's two engines a worker), and says what they used: CPU
 * time, not wall time (no more than the command's own CPU, which holds the
 * built-in engines' threads). */
static void test_bookgen__think_stops_on_engine_time(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	/* The probe's lines: four (two roots, each colour), more than 2 s of
	 * engine time can finish (with two, both games once ended in 0.7 s; with
	 * four, 2 s walk them some 30 plies deep). The probe gets 2 s: its first
	 * walks take most of the first second, and with 1 s the positions a walk
	 * came out at 3.3-4.1 with the portable build (make without
	 * -march=native) on a loaded machine, 4.7-5.7 with the native one. */
	static const char *const runs[] = {
	    "%s think %s/b --new --engines 2 --nodes 3000 --engine-seconds 1 --quiet",
	    "%s think %s/b --engines 1 --nodes 3000 --multipv 1 --opponent builtin --probe-plies "
	    "200 --probe-burst 2 --roots %s/roots --roots-only --engine-seconds 2 --quiet",
	};
	static const double budget[] = {1, 2};
	char roots[4200];
	snprintf(roots, sizeof roots, "%s/roots", dir);
	FILE *f = fopen(roots, "w");
	assert_non_null(f);
	fputs("startpos\nstartpos moves 7g7f\n", f);
	assert_int_equal(fclose(f), 0);
	for (size_t i = 0; i < 2; i++) {
		double cpu0 = children_cpu_s();
		assert_int_equal(ts_runf(&out, &err, runs[i], ts_joseki(), dir, dir), 0);
		double cpu = children_cpu_s() - cpu0, used = engine_s(out);
		if (used < budget[i] || used > cpu + 0.05 || used > budget[i] + 2)
			fail_msg("run %zu: engine_s %.2f for a budget of %.0f s (the command's CPU "
			         "%.2f s): %s",
			         i, used, budget[i], cpu, out);
		assert_true(field(out, " thought ") > 0);
		if (i == 0) assert_null(strstr(out, "exhausted 1"));
		/* With a time budget the probe's lines are walked deep in few walks
		 * once each has been walked (each walk brings the opponent back to
		 * its line's game): with bursts of 2 asked, more than 4 positions a
		 * walk on the whole. */
		if (i == 1 && field(out, " thought ") <= 4 * field(out, " walks "))
			fail_msg("the probe walked in bursts of 2: %s", out);
		free(out);
		free(err);
	}
	ts_rmtree(dir);
	free(dir);
}

/* A ThinkProgressFn of a re-analysis: every report says the list's size and
 * how many of it are left (those not thought), with no root (nothing is
 * selected); the last report is kept in ctx. */
static void again_progress(void *ctx, const char *phase, const ThinkProgress *p)
{
	assert_true(p->again_listed > 0);
	assert_int_equal(p->again_left, p->again_listed - p->thought);
	assert_true(p->again_replaced <= p->thought);
	assert_false(p->has_root);
	(void)phase;
	*(ThinkProgress *)ctx = *p;
}

/* Re-analysis (think_run with ThinkOptions.again, bookgen/reanalyse.h):
 * interrupted by the stop flag part-way, again and again, and run again
 * until its list is done, it thinks every position of the list once, and
 * nothing else; each is then as deep as the new analysis. */
static void test_bookgen__reanalysis_interrupted_and_resumed_thinks_each_position_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	FakeLog *log = calloc(1, sizeof *log);
	pthread_mutex_init(&log->mu, NULL);
	ThinkStats st;
	assert_int_equal(run(&st, dir, log, 2, FAKE_NORMAL, 40, NULL), 0);
	assert_int_equal(st.thought, 40);
	BookDB *db = NULL;
	char err[THINK_ERRLEN];
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	ThinkAgainCriteria c = {.below_depth = 8, .source = -1};
	uint64_t id, id2;
	assert_int_equal(think_again_campaign(&id, db, &c, err), 0);
	assert_int_equal(think_again_campaign(&id2, db, &c, err), 0);
	assert_int_equal(id, id2); /* the same criteria: the same campaign */
	Key *first = NULL;
	size_t nfirst, reached;
	assert_int_equal(think_again_list(&first, &nfirst, &reached, db, &c, id, NULL, 0, err), 0);
	assert_int_equal(nfirst, 40); /* every thought position lies below the start */
	memset(log, 0, sizeof *log);
	pthread_mutex_init(&log->mu, NULL);
	volatile sig_atomic_t stop = 0;
	log->stop_flag = &stop;
	int runs = 0;
	for (;;) {
		Key *keys = NULL;
		size_t n;
		assert_int_equal(think_again_list(&keys, &n, &reached, db, &c, id, NULL, 0, err),
		                 0);
		if (n == 0) {
			free(keys);
			break;
		}
		assert_true(++runs <= 40);
		stop = 0;
		log->stop_at = log->n + 7; /* stopped after 7 more analyses */
		SearchEngine *engines[2] = {fake_new(log, FAKE_DEEP), fake_new(log, FAKE_DEEP)};
		ThinkProgress last = {0};
		ThinkOptions opt = {.engines = engines,
		                    .nengines = 2,
		                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 9},
		                    .multipv = 3,
		                    .stop = &stop,
		                    .commit_every = 4,
		                    .again = keys,
		                    .nagain = n,
		                    .campaign = id,
		                    .progress = again_progress,
		                    .progress_ctx = &last};
		assert_int_equal(think_run(&st, db, &opt, err), 0);
		assert_int_equal(st.again_left, n - st.thought);
		/* The last report ("done") says what the run's figures say. */
		assert_int_equal(last.again_listed, n);
		assert_int_equal(last.again_left, st.again_left);
		assert_int_equal(last.again_replaced, st.again_replaced);
		for (int i = 0; i < 2; i++) search_free(engines[i]);
		free(keys);
	}
	assert_true(runs >= 5); /* interrupted at least four times */
	/* Each position of the list once, and nothing else. */
	assert_int_equal(log->n, (int)nfirst);
	for (int i = 0; i < log->n; i++) {
		bool listed = false;
		for (size_t k = 0; k < nfirst && !listed; k++)
			listed = key_equal(first[k], log->keys[i]);
		assert_true(listed);
		for (int j = 0; j < i; j++) assert_false(key_equal(log->keys[i], log->keys[j]));
	}
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	for (size_t k = 0; k < nfirst; k++) {
		assert_int_equal(bookdb_get(rec, t, first[k]), 0);
		assert_int_equal(rec->think_depth, 9);
	}
	bookdb_txn_abort(t);
	/* Other criteria: a new campaign, the old marks gone, a new list. */
	c.below_depth = 10;
	assert_int_equal(think_again_campaign(&id2, db, &c, err), 0);
	assert_true(id2 != id);
	Key *keys = NULL;
	size_t n;
	assert_int_equal(think_again_list(&keys, &n, &reached, db, &c, id2, NULL, 0, err), 0);
	assert_int_equal(n, nfirst);
	free(keys);
	free(rec);
	free(first);
	bookdb_free(db);
	free(log);
	ts_rmtree(dir);
	free(dir);
}

/* One move of a planted record: the k-th legal move (movegen order, as the
 * fake engines answer), with an engine's evaluation (nodes > 0) or a game
 * comment (nodes 0). */
typedef struct {
	int k, eval;
	uint64_t nodes;
} PlantMove;

/* Plants spec's record, thought at depth 7 (the fake engines' depth), with
 * moves pm; returns its key. */
static Key plant_again(BookDB *db, const char *spec, const PlantMove *pm, int n)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	Move legal[MOVEGEN_MAX];
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	assert_true(movegen_legal(pos, legal) > 8);
	bookdb_record_init(rec, pos);
	rec->flags = BOOKDB_REC_THOUGHT;
	rec->think_depth = 7;
	for (int i = 0; i < n; i++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		memset(m, 0, sizeof *m);
		m->move = legal[pm[i].k];
		m->flags = BOOKDB_MOVE_EVAL;
		m->eval = (int16_t)pm[i].eval;
		m->depth = 7;
		m->nodes = pm[i].nodes;
		m->source = pm[i].nodes ? BOOKDB_SOURCE_ENGINE : BOOKDB_SOURCE_GAME;
	}
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	Key k = pos_key(pos);
	free(rec);
	free(pos);
	return k;
}

/* The move of rec that is the k-th legal move of spec. */
static const BookMove *move_k(const BookRecord *rec, const char *spec, int k)
{
	Position pos;
	Move legal[MOVEGEN_MAX];
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	movegen_legal(&pos, legal);
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == legal[k]) return &rec->moves[i];
	fail_msg("%s: legal move %d is not in the record", spec, k);
	return NULL;
}

/* What re-analysis does to a record (docs/bookgen.md, "Re-analysis"): at the
 * stored depth, the analysis that searched more nodes wins (depths and
 * nodes of different engines are compared as they are). Where the new one
 * wins, each move it evaluates takes its evaluation, a game comment on such
 * a move included (one evaluation a move in the record), a move it does not
 * evaluate keeps its game comment, and a move only the old analysis
 * evaluated loses that evaluation; where it loses, the record stays as it
 * was. */
static void
test_bookgen__reanalysis_at_equal_depth_goes_by_nodes_and_takes_the_comments_it_evaluates(
    void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[THINK_ERRLEN];
	BookDB *db = NULL;
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	/* The fake engines answer at depth 7, 1000 nodes a move, the first 2
	 * legal moves with --multipv 2. */
	static const char *const WIN = "startpos", *const LOSE = "startpos moves 7g7f";
	const PlantMove win[] = {{0, 11, 500}, {1, 123, 0}, {5, 77, 0}, {6, 33, 500}};
	const PlantMove lose[] = {{0, 11, 5000}, {1, 123, 0}, {5, 77, 0}};
	Key keys[2] = {plant_again(db, WIN, win, 4), plant_again(db, LOSE, lose, 3)};
	ThinkAgainCriteria c = {.source = -1};
	uint64_t id;
	assert_int_equal(think_again_campaign(&id, db, &c, err), 0);
	FakeLog *log = calloc(1, sizeof *log);
	pthread_mutex_init(&log->mu, NULL);
	SearchEngine *engines[1] = {fake_new(log, FAKE_NORMAL)};
	ThinkOptions opt = {.engines = engines,
	                    .nengines = 1,
	                    .budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 7},
	                    .multipv = 2,
	                    .again = keys,
	                    .nagain = 2,
	                    .campaign = id};
	ThinkStats st;
	assert_int_equal(think_run(&st, db, &opt, err), 0);
	assert_int_equal(st.thought, 2);
	assert_int_equal(st.again_replaced, 1);
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	/* More nodes at the same depth: the new analysis won. */
	assert_int_equal(bookdb_get(rec, t, keys[0]), 0);
	const BookMove *m = move_k(rec, WIN, 0);
	assert_true(bookdb_move_analysed(m) && m->nodes >= 900); /* the new one's */
	m = move_k(rec, WIN, 1); /* its game comment, evaluated: gone */
	assert_true(bookdb_move_analysed(m));
	assert_int_equal(m->source, BOOKDB_SOURCE_ENGINE);
	m = move_k(rec, WIN, 5); /* not evaluated: its game comment stays */
	assert_true(bookdb_move_commented(m));
	assert_int_equal(m->eval, 77);
	m = move_k(rec, WIN, 6); /* the old analysis's alone: it goes, the move stays */
	assert_false(m->flags & BOOKDB_MOVE_EVAL);
	/* Fewer nodes at the same depth: the old analysis stays, comments and all. */
	assert_int_equal(bookdb_get(rec, t, keys[1]), 0);
	assert_int_equal(rec->nmoves, 3);
	m = move_k(rec, LOSE, 0);
	assert_true(bookdb_move_analysed(m) && m->nodes >= 4000 && m->eval == 11);
	m = move_k(rec, LOSE, 1);
	assert_true(bookdb_move_commented(m) && m->eval == 123);
	bookdb_txn_abort(t);
	free(rec);
	search_free(engines[0]);
	pthread_mutex_destroy(&log->mu);
	free(log);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* The progress line's "engines busy" counts a search under way as far as it
 * has gone: with one engine on one long search, the lines during it said 0 %
 * (a search was counted only when it ended). */
/* A book of the floodgate games in a new directory (returned), then `think
 * BOOK ARGS --positions 1 --status-seconds 1 --no-snapshot` on it, which
 * must exit 0: its stdout and stderr in *out and *err. */
static char *think_one_on_the_games(const char *args, char **out, char **err)
{
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/b tests/data/floodgate --quiet", ts_joseki(), dir),
	    0);
	assert_int_equal(ts_runf(out, err,
	                         "%s think %s/b %s --positions 1 --status-seconds 1 --no-snapshot",
	                         ts_joseki(), dir, args),
	                 0);
	return dir;
}

static void test_bookgen__think_counts_a_search_under_way_as_busy(void **state)
{
	(void)state;
	char *out = NULL, *err = NULL;
	char *dir = think_one_on_the_games("--movetime 2500", &out, &err);
	int lines = 0;
	for (char *l = err; (l = strstr(l, "think: 0 thought (")) != NULL; l++) {
		const char *b = strstr(l, "engines busy ");
		size_t n = strcspn(l, "\r\n");
		if (!b || b > l + n) fail_msg("no busy share: %.*s", (int)n, l);
		if (atoi(b + 13) < 50)
			fail_msg("the search under way not counted: %.*s", (int)n, l);
		lines++;
	}
	if (!lines) fail_msg("no progress line during the search:\n%s", err);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* Past --time the searches under way are finished: the progress line says
 * so (it said "eta 0s" for as long as they took: minutes, with a large node
 * budget). The search takes 4 s of the engine's clock, the time limit is 1 s. */
static void test_bookgen__think_says_it_finishes_the_searches_past_its_time(void **state)
{
	(void)state;
	char *out = NULL, *err = NULL;
	char *dir = think_one_on_the_games("--movetime 4000 --time 1", &out, &err);
	if (!strstr(out, "think thought 1 ")) fail_msg("the search not stored: %s", out);
	if (!strstr(err, ", time up: finishing 1 search under way\n"))
		fail_msg("no line says the search is being finished:\n%s", err);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bookgen__think_grows_the_book_and_resumes_without_repeats),
	    cmocka_unit_test(test_bookgen__think_stops_on_flag_exhaustion_and_failing_engines),
	    cmocka_unit_test(test_bookgen__think_restarts_from_its_snapshot_with_the_same_leaves),
	    cmocka_unit_test(test_bookgen__think_takes_the_given_positions_first),
	    cmocka_unit_test(test_bookgen__think_paths_then_the_lines_from_them),
	    cmocka_unit_test(test_bookgen__think_the_roots_right_after_the_way),
	    cmocka_unit_test(test_bookgen__think_progress_goes_to_the_callback_and_null_is_quiet),
	    cmocka_unit_test(test_bookgen__think_counts_a_search_under_way_as_busy),
	    cmocka_unit_test(test_bookgen__think_says_it_finishes_the_searches_past_its_time),
	    cmocka_unit_test(test_bookgen__think_command_with_the_builtin_engine),
	    cmocka_unit_test(test_bookgen__think_says_what_it_has_not_valued),
	    cmocka_unit_test(test_bookgen__a_book_has_one_selection_at_a_time),
	    cmocka_unit_test(test_bookgen__think_within_a_tiny_memory_budget_grows_the_same_book),
	    cmocka_unit_test(test_bookgen__think_refuses_an_option_the_engine_does_not_take),
	    cmocka_unit_test(test_bookgen__think_command_with_misbehaving_engines_under_load),
	    cmocka_unit_test(test_bookgen__think_command_from_kifu),
	    cmocka_unit_test(test_bookgen__think_command_extends_along_ingested_games),
	    cmocka_unit_test(test_bookgen__think_a_root_mated_in_one_is_done),
	    cmocka_unit_test(test_bookgen__think_command_grows_only_under_its_roots),
	    cmocka_unit_test(test_bookgen__probe_follows_an_opponent_with_a_history),
	    cmocka_unit_test(test_bookgen__probe_reach_is_what_a_match_gets),
	    cmocka_unit_test(test_bookgen__probe_against_a_varying_opponent_keeps_every_reply),
	    cmocka_unit_test(test_bookgen__think_probes_the_lines_an_opponent_plays),
	    cmocka_unit_test(test_bookgen__think_stops_on_engine_time),
	    cmocka_unit_test(
	        test_bookgen__reanalysis_interrupted_and_resumed_thinks_each_position_once),
	    cmocka_unit_test(
	        test_bookgen__reanalysis_at_equal_depth_goes_by_nodes_and_takes_the_comments_it_evaluates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
