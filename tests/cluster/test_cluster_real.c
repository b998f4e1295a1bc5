/*
 * tests/cluster/test_cluster_real.c — the coordinator (`joseki serve --work`
 * on 127.0.0.1) with workers running the real USI engines Debian ships (a
 * missing one fails the test with a message naming tools/install-deps.sh):
 *  - one worker with fairy-stockfish (node budget, MultiPV 2) and one with
 *    gpsusi (a movetime budget: gpsusi takes only time controls), each for a
 *    fixed number of positions: every position accepted, none failed, the
 *    book gains exactly those thought positions, `joseki check` passes and
 *    every thought record holds legal lines with the engine's depth and score;
 *  - two fairy-stockfish workers side by side, stopped with SIGTERM while
 *    they think: both exit 0 having sent every finished result, no lease is
 *    left live, and the coordinator's result count is the book's gain.
 * Seconds each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define NW 2

typedef struct {
	char *dir;
	char book[512], token[512], tokfile[600], log[600], out[NW][600], err[NW][600];
	pid_t coord, w[NW];
	FILE *clog;
	int port;
} Fx;

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->book, sizeof f->book, "%s/book", f->dir);
	snprintf(f->tokfile, sizeof f->tokfile, "%s/token", f->dir);
	for (int i = 0; i < NW; i++) {
		snprintf(f->out[i], sizeof f->out[i], "%s/worker%d.out", f->dir, i);
		snprintf(f->err[i], sizeof f->err[i], "%s/worker%d.err", f->dir, i);
	}
	ts_gpsshogi_home(f->dir);
	char *out = NULL, *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(),
	            f->book) != 0)
		fail_msg("ingest: %s", err);
	free(err);
	err = NULL;
	if (ts_runf(&out, &err, "%s token add %s/tokens real", ts_joseki(), f->book) != 0)
		fail_msg("token add: %s", err);
	snprintf(f->token, sizeof f->token, "%.64s", out);
	assert_int_equal(ts_write_file(f->tokfile, out, strlen(out)), 0);
	free(out);
	free(err);
	*state = f;
	return 0;
}

static void kill_wait(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	for (int i = 0; i < NW; i++) kill_wait(&f->w[i]);
	kill_wait(&f->coord);
	if (f->clog) fclose(f->clog);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void start_coordinator(Fx *f, const char *limits)
{
	char extra[256];
	snprintf(extra, sizeof extra, "--work --quiet --lease-seconds 60 %s", limits);
	f->port = ts_serve_start(&f->coord, &f->clog, f->book, extra);
	if (!f->port) fail_msg("serve --work did not start");
}

/* Stops the coordinator with SIGTERM: exit 0. */
static void stop_coordinator(Fx *f)
{
	int st = 0;
	kill(f->coord, SIGTERM);
	waitpid(f->coord, &st, 0);
	f->coord = 0;
	fclose(f->clog);
	f->clog = NULL;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Starts worker i with engine (a path) and its options string. */
static void start_worker(Fx *f, int i, const char *engine, const char *opts, int positions)
{
	char url[64], name[16], npos[16];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	snprintf(name, sizeof name, "real%d", i);
	snprintf(npos, sizeof npos, "%d", positions);
	char *argv[40] = {(char *)ts_joseki(), "worker",   "--server", url,
	                  "--token-file",      f->tokfile, "--engine", (char *)engine,
	                  "--engines",         "1",        "--name",   name,
	                  "--max-backoff",     "1",        "--quiet"};
	int n = 15;
	if (positions > 0) {
		argv[n++] = "--positions";
		argv[n++] = npos;
	}
	/* opts: "--option A=B --option C=D" split on spaces into the argv. */
	char *copy = strdup(opts), *save = NULL;
	for (char *t = strtok_r(copy, " ", &save); t && n < 38; t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
	f->w[i] = ts_spawn(argv, f->out[i], f->err[i], false);
	free(copy); /* the child has its own copy since fork */
}

/* Waits for worker i to exit (within secs); returns its summary line's
 * counts and asserts exit 0. */
static void wait_worker(Fx *f, int i, double secs, long long *positions, long long *failed,
                        long long *unsent)
{
	int st = 0;
	int64_t end = clock_ms() + (int64_t)(secs * 1000);
	while (waitpid(f->w[i], &st, WNOHANG) == 0) {
		if (clock_ms() > end) {
			char *e = ts_read_file(f->err[i], NULL);
			fail_msg("worker %d did not finish within %.0f s: %s", i, secs, e ? e : "");
		}
		usleep(50000);
	}
	f->w[i] = 0;
	char *out = ts_read_file(f->out[i], NULL), *err = ts_read_file(f->err[i], NULL);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("worker %d: status 0x%x: %s%s", i, st, out ? out : "", err ? err : "");
	const char *p = out ? strstr(out, "worker positions ") : NULL;
	long long rej = -1;
	if (!p || sscanf(p, "worker positions %lld failed %lld rejected %lld unsent %lld",
	                 positions, failed, &rej, unsent) != 4)
		fail_msg("worker %d: no summary line: %s%s", i, out ? out : "", err ? err : "");
	assert_int_equal(rej, 0);
	free(out);
	free(err);
}

/* GET /v1/work/status: the object (decref it). */
static json_t *status(const Fx *f)
{
	json_t *j = ts_work_status(f->port, f->token);
	if (!j) fail_msg("GET /v1/work/status on port %d: no answer, not 200 or not JSON", f->port);
	return j;
}

static long long live_leases(const Fx *f)
{
	json_t *s = status(f);
	long long n = json_integer_value(json_object_get(json_object_get(s, "leases"), "live"));
	json_decref(s);
	return n;
}

static long long thought(const Fx *f)
{
	json_t *o = ts_run_json(0, "%s stats %s --json", ts_joseki(), f->book);
	long long n = ts_jint(o, "thought");
	json_decref(o);
	return n;
}

static void check_book(const Fx *f, long long want, int max_depth)
{
	char *out = NULL;
	if (ts_runf(&out, NULL, "%s check %s", ts_joseki(), f->book) != 0)
		fail_msg("check: %s", out);
	free(out);
	long nonzero = 0;
	assert_int_equal(ts_book_check_thought(f->book, max_depth, &nonzero), want);
	assert_true(2 * nonzero > want);
}

/* One worker with engine for n positions against a coordinator with limits. */
static void one_worker(Fx *f, const char *limits, const char *engine, const char *opts, int n,
                       int max_depth)
{
	start_coordinator(f, limits);
	start_worker(f, 0, engine, opts, n);
	long long positions = 0, failed = 0, unsent = 0;
	wait_worker(f, 0, 120, &positions, &failed, &unsent);
	assert_int_equal(positions, n);
	assert_int_equal(failed, 0);
	assert_int_equal(unsent, 0);
	json_t *s = status(f);
	assert_int_equal(json_integer_value(json_object_get(s, "results")), n);
	assert_int_equal(json_integer_value(json_object_get(s, "failed_tries")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "leases"), "live")),
	                 0);
	json_decref(s);
	stop_coordinator(f);
	assert_int_equal(thought(f), n);
	check_book(f, n, max_depth);
}

static void test_cluster__worker_with_fairy_stockfish(void **state)
{
	Fx *f = *state;
	one_worker(f, "--nodes 3000 --multipv 2", ts_real_engine("fairy-stockfish"),
	           "--option Threads=1 --option Hash=16", 16, 0);
}

static void test_cluster__worker_with_gpsusi(void **state)
{
	Fx *f = *state;
	one_worker(f, "--movetime 1000", ts_real_engine("gpsusi"),
	           "--option BookDepth=0 --option Thread=1 --option LimitDepth=4", 8, 4);
}

/* gpsusi against a coordinator that asks for nodes: the engine takes only
 * time controls, so every position would fail. The worker reports the first
 * one failed, gives its lease back, says why and exits 1 (under Slurm the
 * task ends instead of failing the book's positions one by one), and the
 * coordinator shows the failed try. */
static void worker_stops_saying(Fx *f, const char *coord, const char *opts, const char *why)
{
	start_coordinator(f, coord);
	start_worker(f, 0, ts_real_engine("gpsusi"), opts, 0);
	int st = 0;
	int64_t end = clock_ms() + 60000;
	while (waitpid(f->w[0], &st, WNOHANG) == 0) {
		if (clock_ms() > end) fail_msg("the worker did not stop");
		usleep(50000);
	}
	f->w[0] = 0;
	char *err = ts_read_file(f->err[0], NULL), *out = ts_read_file(f->out[0], NULL);
	assert_non_null(err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 1 ||
	    !strstr(err, "the engine cannot do this coordinator's searches") || !strstr(err, why) ||
	    !strstr(out, "unsent 0"))
		fail_msg("status 0x%x: %s%s", st, out ? out : "", err);
	free(err);
	free(out);
	json_t *s = status(f);
	assert_true(json_integer_value(json_object_get(s, "failed_tries")) >= 1);
	assert_int_equal(json_integer_value(json_object_get(s, "results")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "leases"), "live")),
	                 0);
	json_decref(s);
	stop_coordinator(f);
}

static void test_cluster__a_worker_whose_engine_cannot_do_the_work_stops(void **state)
{
	worker_stops_saying(*state, "--nodes 3000", "--option BookDepth=0 --option Thread=1",
	                    "takes only time controls (go byoyomi), not a nodes budget: give it "
	                    "--movetime; the budget is the coordinator's: its serve --work");
}

/* gpsusi with its own book on answers the book's first positions with a
 * bare bestmove: no analysis. Each worker failed them one after another
 * (three workers would set every opening position aside); it stops at the
 * first, saying why. */
static void test_cluster__a_worker_whose_engine_recites_its_book_stops(void **state)
{
	worker_stops_saying(*state, "--movetime 1000",
	                    "--option BookDepth=30 --option Thread=1 --option LimitDepth=4",
	                    "with no analysis (no info line with a score): its own opening book? "
	                    "Turn it off (USI_OwnBook=false; gpsshogi: BookDepth=0;");
}

static void test_cluster__two_fairy_stockfish_workers_stopped_by_sigterm(void **state)
{
	Fx *f = *state;
	start_coordinator(f, "--nodes 5000 --multipv 2");
	const char *fsf = ts_real_engine("fairy-stockfish");
	for (int i = 0; i < NW; i++) start_worker(f, i, fsf, "--option Threads=1", 0);
	/* Until both have thought (their nodes/s known to the coordinator) and
	 * hold work. */
	int64_t end = clock_ms() + 60000;
	for (;;) {
		json_t *s = status(f), *ws = json_object_get(s, "workers");
		long long results = json_integer_value(json_object_get(s, "results"));
		size_t busy = 0;
		for (size_t i = 0; i < json_array_size(ws); i++)
			busy +=
			    json_integer_value(json_object_get(json_array_get(ws, i), "nps")) > 0;
		json_decref(s);
		if (results >= 12 && busy == NW && live_leases(f) > 0) break;
		if (clock_ms() > end)
			fail_msg("the workers did not get going: %lld results", results);
		usleep(100000);
	}
	long long total = 0;
	for (int i = 0; i < NW; i++) kill(f->w[i], SIGTERM);
	for (int i = 0; i < NW; i++) {
		long long positions = 0, failed = 0, unsent = 0;
		wait_worker(f, i, 10, &positions, &failed, &unsent);
		assert_int_equal(failed, 0);
		assert_int_equal(unsent, 0);
		assert_true(positions > 0);
		total += positions;
	}
	assert_int_equal(live_leases(f), 0);
	json_t *s = status(f);
	assert_int_equal(json_integer_value(json_object_get(s, "results")), total);
	assert_int_equal(json_integer_value(json_object_get(s, "failed_tries")), 0);
	json_decref(s);
	stop_coordinator(f);
	print_message("two fairy-stockfish workers: %lld results\n", total);
	assert_int_equal(thought(f), total);
	check_book(f, total, 0);
}

int main(void)
{
	shogi_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_cluster__worker_with_fairy_stockfish, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cluster__worker_with_gpsusi, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_cluster__a_worker_whose_engine_cannot_do_the_work_stops, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_cluster__a_worker_whose_engine_recites_its_book_stops, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_cluster__two_fairy_stockfish_workers_stopped_by_sigterm, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
