/*
 * tests/cluster/test_spot.c — spot checks of workers end to end
 * (docs/cluster.md, "Spot checks"): a real coordinator (`joseki serve BOOK
 * --work` on 127.0.0.1) over a book of the floodgate fixtures, real workers
 * (`joseki worker`), honest ones and a forger, the engines the built-in one,
 * in process or behind tests/cluster/fakes/noisy_engine.py (a USI proxy that
 * varies each search's nodes, as two machines' searches differ, or forges a
 * share of its results).
 *  - Honest workers with their search noise (nodes within 25 %, each
 *    engine's hash carried from position to position), every result of a
 *    new token checked, thousands of results: nobody is put in quarantine.
 *  - A forger among honest workers (mate 1 at depth 1000 on 1 % of its
 *    searches, its other results honest): put in quarantine within its
 *    first 500 results, refused (403, the documented JSON), its results
 *    since its last good check thought again by others; and the book after
 *    minimax is the honest book: every analysis in it is what the honest
 *    engine gives for its position (the test thinks each one again), and
 *    `minimax --full` then `export` give the same file as the same
 *    positions thought by the honest engine into a copy of the book.
 *  - A forger whose lie the coordinator cannot disprove itself (mate 5 at
 *    depth 1000): found by the spot checks alone. (How soon depends on which
 *    positions it is given and when the others think them: 98 to 715 results
 *    in the runs seen; the figures are docs/notes/cluster.md's, the test
 *    asserts it is found, within 2,000.)
 * TEST_SPOT_KEEP=1 keeps the run's directory.
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

#include "bookdb/bookdb.h"
#include "bookgen/think.h"
#include "search/builtin.h"
#include "shogi/clock.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/zobrist.h"
#include "tests/support/support.h"

#define NODES 3000
#define MULTIPV 2
#define MAXW 4

typedef struct {
	char *dir;
	char book[600], initial[600], engine[600];
	char tok[MAXW][600], out[MAXW][600], err[MAXW][600], journal[MAXW][600];
	char token[MAXW][80];
	pid_t coord, w[MAXW];
	FILE *log;
	char coord_err[600]; /* what the coordinator says after its start line */
	TsDrain *drain;      /* copies it there */
	int port;
} Fx;

static const char *const NAMES[MAXW] = {"h1", "h2", "h3", "f"};

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->book, sizeof f->book, "%s/book", f->dir);
	snprintf(f->initial, sizeof f->initial, "%s/initial", f->dir);
	char *cwd = getcwd(NULL, 0);
	snprintf(f->engine, sizeof f->engine, "%s/tests/cluster/fakes/noisy_engine.py", cwd);
	free(cwd);
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s tests/data/floodgate --quiet >/dev/null", ts_joseki(),
	            f->book) != 0)
		fail_msg("ingest: %s", err);
	free(err);
	for (int i = 0; i < MAXW; i++) {
		char *out = NULL;
		snprintf(f->tok[i], sizeof f->tok[i], "%s/token.%s", f->dir, NAMES[i]);
		snprintf(f->out[i], sizeof f->out[i], "%s/worker.%s.out", f->dir, NAMES[i]);
		snprintf(f->err[i], sizeof f->err[i], "%s/worker.%s.err", f->dir, NAMES[i]);
		snprintf(f->journal[i], sizeof f->journal[i], "%s/journal.%s", f->dir, NAMES[i]);
		if (ts_runf(&out, &err, "%s token add %s/tokens %s > %s && cat %s", ts_joseki(),
		            f->book, NAMES[i], f->tok[i], f->tok[i]) != 0)
			fail_msg("token add: %s", err);
		snprintf(f->token[i], sizeof f->token[i], "%.64s", out);
		free(out);
		free(err);
		err = NULL;
	}
	/* The book before any work, for the honest book built beside it. */
	if (ts_runf(NULL, &err, "cp -a %s %s", f->book, f->initial) != 0) fail_msg("cp: %s", err);
	free(err);
	setenv("JOSEKI_BIN", ts_joseki(), 1);
	*state = f;
	return 0;
}

static void stop_pid(pid_t *pid, int sig)
{
	if (*pid > 0) {
		kill(*pid, sig);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	for (int i = 0; i < MAXW; i++) stop_pid(&f->w[i], SIGKILL);
	stop_pid(&f->coord, SIGKILL);
	ts_log_drain_end(f->drain, 5);
	if (f->log) fclose(f->log);
	if (getenv("TEST_SPOT_KEEP"))
		fprintf(stderr, "kept %s\n", f->dir);
	else
		ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void start_coordinator(Fx *f, const char *extra)
{
	char args[600];
	snprintf(args, sizeof args, "--work --quiet --nodes %d --multipv %d %s", NODES, MULTIPV,
	         extra);
	f->port = ts_serve_start(&f->coord, &f->log, f->book, args);
	if (!f->port) fail_msg("serve --work did not say where it listens");
	/* The rest of what it says, kept (a failure's message shows it). */
	snprintf(f->coord_err, sizeof f->coord_err, "%s/coordinator.err", f->dir);
	f->drain = ts_log_drain(f->log, f->coord_err);
	f->log = NULL;
}

/* Worker i: the built-in engine in process (env NULL), or behind the proxy
 * with env (space-separated VAR=VALUE words); positions: --positions (0: none). */
static void start_worker(Fx *f, int i, const char *env, int positions)
{
	char url[64], npos[32];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	snprintf(npos, sizeof npos, "%d", positions);
	char *argv[40];
	int n = 0;
	char envcopy[800];
	argv[n++] = "env";
	if (env) {
		snprintf(envcopy, sizeof envcopy, "%s", env);
		for (char *w = strtok(envcopy, " "); w; w = strtok(NULL, " ")) argv[n++] = w;
	}
	char *rest[] = {(char *)ts_joseki(),
	                "worker",
	                "--server",
	                url,
	                "--token-file",
	                f->tok[i],
	                "--name",
	                (char *)NAMES[i],
	                "--engine",
	                env ? f->engine : "builtin",
	                "--max-backoff",
	                "1",
	                "--journal",
	                f->journal[i],
	                "--quiet"};
	for (size_t k = 0; k < sizeof rest / sizeof *rest; k++) argv[n++] = rest[k];
	if (positions) {
		argv[n++] = "--positions";
		argv[n++] = npos;
	}
	argv[n] = NULL;
	f->w[i] = ts_spawn(argv, f->out[i], f->err[i], false);
}

/* Waits for worker i to exit (deadline s seconds); its exit status. */
static int wait_worker(Fx *f, int i, double s)
{
	int64_t end = clock_ms() + (int64_t)(s * 1000);
	int st = 0;
	for (;;) {
		pid_t r = waitpid(f->w[i], &st, WNOHANG);
		if (r == f->w[i]) break;
		if (clock_ms() > end) fail_msg("worker %s still runs after %.0f s", NAMES[i], s);
		usleep(100000);
	}
	f->w[i] = 0;
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static long request(Fx *f, const char *token, const char *method, const char *path,
                    const char *body, char **out)
{
	CURL *c = curl_easy_init();
	char url[512], auth[200];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", f->port, path);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	TsBuf b = {NULL, 0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		char *said = ts_child_said(&f->coord, &f->drain, f->coord_err);
		fail_msg("%s %s: %s; %s", method, path, curl_easy_strerror(rc), said);
	}
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	*out = b.data ? b.data : strdup("");
	return status;
}

static json_t *status(Fx *f)
{
	char *out;
	long st = request(f, f->token[0], "GET", "/v1/work/status", NULL, &out);
	if (st != 200) fail_msg("status: %ld %s", st, out);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	return j;
}

static json_t *token_of(json_t *st, const char *name)
{
	json_t *ts = json_object_get(json_object_get(st, "spot"), "tokens");
	for (size_t i = 0; i < json_array_size(ts); i++) {
		json_t *t = json_array_get(ts, i);
		if (!strcmp(json_string_value(json_object_get(t, "token")), name)) return t;
	}
	return NULL;
}

static long long num(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b) v = json_object_get(v, b);
	if (!json_is_integer(v)) fail_msg("no integer %s%s%s", a, b ? "." : "", b ? b : "");
	return json_integer_value(v);
}

static void stop_coordinator(Fx *f)
{
	kill(f->coord, SIGTERM);
	int st = 0;
	waitpid(f->coord, &st, 0);
	f->coord = 0;
	ts_log_drain_end(f->drain, 5);
	f->drain = NULL;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *text = ts_read_file(f->coord_err, NULL);
		fail_msg("the coordinator ended with status %#x; it said:\n%s", st,
		         text ? text : "");
	}
}

static void test_spot__honest_workers_with_their_noise_are_never_quarantined(void **state)
{
	Fx *f = *state;
	/* Every result of a new token checked: as many comparisons as can be;
	 * at 10,000 nodes, where the measured noise never reached the tolerance
	 * (at 3,000 a loaded CI run met three results apart in 1,022 checks,
	 * and a quarantine: docs/notes/cluster.md). */
	start_coordinator(f, "--spot-new-rate 1 --nodes 10000");
	for (int i = 0; i < 3; i++) start_worker(f, i, "NODES_JITTER=25", 1000);
	for (int i = 0; i < 3; i++) assert_int_equal(wait_worker(f, i, 540), 0);
	json_t *st = status(f);
	json_t *spot = json_object_get(st, "spot"), *o = json_object_get(spot, "outcomes");
	print_message("results %lld; checks agreed %lld, disagreed %lld, undecided %lld, strikes "
	              "%lld, quarantines %lld\n",
	              num(st, "results", NULL), num(o, "agreed", NULL), num(o, "disagreed", NULL),
	              num(o, "undecided", NULL), num(o, "strikes", NULL),
	              num(spot, "quarantines", NULL));
	long long accepted = 0;
	for (int i = 0; i < 3; i++) {
		json_t *t = token_of(st, NAMES[i]);
		assert_non_null(t);
		const char *fault = json_string_value(json_object_get(t, "last_fault"));
		if (fault && fault[0]) print_message("%s's last fault: %s\n", NAMES[i], fault);
		json_t *q = json_object_get(t, "quarantined");
		if (!json_is_null(q)) {
			char *why = json_dumps(q, JSON_COMPACT);
			print_message("%s in quarantine: %s\n", NAMES[i], why ? why : "?");
			free(why);
		}
		assert_true(json_is_null(q));
		accepted += num(t, "results", NULL);
	}
	assert_int_equal(num(spot, "quarantines", NULL), 0);
	/* Of the 3,000 searches, up to half answered others' checks. */
	assert_true(accepted >= 1400);
	assert_true(num(o, "agreed", NULL) >= 900);
	json_decref(st);
	stop_coordinator(f);
}

/* Keys of the results a worker's journal says were accepted. */
static size_t journal_results(const char *path, char (*keys)[KEY_HEX_LEN], size_t max)
{
	char *s = ts_read_file(path, NULL);
	size_t n = 0;
	for (char *p = s; p && *p && n < max;) {
		char *nl = strchr(p, '\n');
		if (!nl) break;
		*nl = 0;
		if (!strncmp(p, "result ", 7)) {
			const char *k = strrchr(p, ' ');
			snprintf(keys[n++], KEY_HEX_LEN, "%s", k + 1);
		}
		p = nl + 1;
	}
	free(s);
	return n;
}

/* Thinks every position the run thought again with the honest engine, into
 * a copy of the book as it was before the run; returns how many. */
static long think_again(const char *from, const char *into)
{
	BookDB *src, *dst;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&src, from, &ro, err), 0);
	assert_int_equal(bookdb_open(&dst, into, NULL, err), 0);
	BookWriter *w;
	assert_int_equal(bookdb_writer_new(&w, dst, 256), 0);
	SearchEngine *e;
	assert_int_equal(builtin_engine_new(&e, 16, NULL), 0);
	SearchBudget budget = {.kind = SEARCH_BUDGET_NODES, .amount = NODES};
	BookRecord *rec = malloc(sizeof *rec), *scratch = malloc(sizeof *scratch);
	Position *pos = malloc(sizeof *pos);
	SearchResult *res = malloc(sizeof *res);
	BookTxn *t;
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(&t, src, false), 0);
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	Key key;
	const uint8_t *val;
	size_t len;
	long n = 0;
	int rc;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		if (!(rec->flags & BOOKDB_REC_THOUGHT)) continue;
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		memset(res, 0, sizeof *res);
		if (rec->nmoves) assert_int_equal(search_analyse(e, res, pos, &budget, MULTIPV), 0);
		assert_int_equal(think_store(w, NULL, scratch, key, pos, res, &budget, NULL), 0);
		n++;
	}
	assert_int_equal(rc, 0);
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	assert_int_equal(bookdb_writer_flush(w), 0);
	bookdb_writer_free(w);
	search_free(e);
	bookdb_free(src);
	bookdb_free(dst);
	free(rec);
	free(scratch);
	free(pos);
	free(res);
	return n;
}

/* minimax --full, then the export and the root's best move. */
static char *export_of(const char *book, const char *dir, const char *name, char *best, size_t cap)
{
	char *err = NULL;
	if (ts_runf(NULL, &err,
	            "%s minimax %s --full >/dev/null && %s export %s %s/%s.db >/dev/null",
	            ts_joseki(), book, ts_joseki(), book, dir, name) != 0)
		fail_msg("minimax/export %s: %s", book, err);
	free(err);
	json_t *q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), book);
	json_t *b = json_object_get(q, "bestmove");
	snprintf(best, cap, "%s", json_is_string(b) ? json_string_value(b) : "(none)");
	json_decref(q);
	char path[700];
	snprintf(path, sizeof path, "%s/%s.db", dir, name);
	size_t len;
	char *s = ts_read_file(path, &len);
	assert_non_null(s);
	return s;
}

static void test_spot__a_forger_is_quarantined_and_the_book_is_the_honest_one(void **state)
{
	Fx *f = *state;
	start_coordinator(f, ""); /* the default rates and tolerance */
	for (int i = 0; i < 3; i++) start_worker(f, i, NULL, 0);
	/* The forger: its engine's hash cleared before each position, so that
	 * its honest results are what the honest workers' engine gives; its
	 * first lie at its 171st search (checks of others' results among them). */
	char env[800], forged[600];
	snprintf(forged, sizeof forged, "%s/forged.log", f->dir);
	snprintf(env, sizeof env,
	         "FORGE_RATE=0.01 FORGE_SCORE=mate_1 FORGE_DEPTH=1000 NOISE_SEED=2 NEWGAME=1 "
	         "FORGE_LOG=%s",
	         forged);
	start_worker(f, 3, env, 0);
	assert_int_equal(wait_worker(f, 3, 300), 1);
	char *said = ts_read_file(f->err[3], NULL);
	print_message("the forger: %s", said);
	assert_non_null(strstr(said, "HTTP 403"));
	assert_non_null(strstr(said, "in quarantine"));
	free(said);
	/* Refused, with the documented JSON error. */
	char *out;
	long code = request(f, f->token[3], "POST", "/v1/work/acquire",
	                    "{\"worker\": \"f\", \"max\": 1}", &out);
	assert_int_equal(code, 403);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "quarantine"));
	json_decref(j);
	free(out);
	json_t *st = status(f);
	json_t *tf = token_of(st, "f"), *q = json_object_get(tf, "quarantined");
	assert_true(json_is_object(q));
	long long results = num(tf, "results", NULL), taken = num(q, "taken_out", NULL);
	print_message("quarantined after %lld accepted results (%lld taken out): %s\n", results,
	              taken, json_string_value(json_object_get(q, "reason")));
	assert_true(results <= 500);
	/* Its results stored before the lie are taken out. Half of a new
	 * token's results are held for checks, not stored, and the forger,
	 * started last, may spend its first searches on a backlog of others'
	 * checks (a CI run met a quarantine with none taken out): with 20
	 * results, that none was stored has odds of 2^-20. */
	assert_true(taken <= results);
	if (results >= 20) assert_true(taken >= 1);
	json_decref(st);
	/* Every result it had accepted ends up thought: those taken out and its
	 * held ones again, by the others. */
	static char keys[2000][KEY_HEX_LEN];
	size_t nk = journal_results(f->journal[3], keys, 2000);
	assert_true(nk >= (size_t)results / 2);
	int64_t end = clock_ms() + 240000;
	for (size_t i = 0; i < nk; i++)
		while (!ts_book_thought(f->book, keys[i])) {
			if (clock_ms() > end)
				fail_msg("%s (the forger's) never thought again", keys[i]);
			usleep(100000);
		}
	for (int i = 0; i < 3; i++) {
		kill(f->w[i], SIGTERM);
		assert_int_equal(wait_worker(f, i, 30), 0);
	}
	st = status(f);
	for (int i = 0; i < 3; i++)
		assert_true(json_is_null(json_object_get(token_of(st, NAMES[i]), "quarantined")));
	json_decref(st);
	stop_coordinator(f);
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s check %s >/dev/null", ts_joseki(), f->book), 0);
	free(err);
	/* The honest book: the same positions thought by the honest engine. */
	long n = think_again(f->book, f->initial);
	print_message("%ld positions thought again by the honest engine\n", n);
	char best_run[32], best_honest[32];
	char *a = export_of(f->book, f->dir, "run", best_run, sizeof best_run),
	     *b = export_of(f->initial, f->dir, "honest", best_honest, sizeof best_honest);
	print_message("the root's best move: %s (the honest book's: %s)\n", best_run, best_honest);
	assert_string_equal(best_run, best_honest);
	assert_true(strcmp(a, b) == 0);
	free(a);
	free(b);
}

static void test_spot__a_lie_the_coordinator_cannot_disprove_is_found_by_the_checks(void **state)
{
	Fx *f = *state;
	/* Every result of a new token checked: its first lie is compared. */
	start_coordinator(f, "--spot-new-rate 1");
	for (int i = 0; i < 3; i++) start_worker(f, i, NULL, 0);
	start_worker(f, 3, "FORGE_RATE=0.01 FORGE_SCORE=mate_5 FORGE_DEPTH=1000 NOISE_SEED=7", 0);
	assert_int_equal(wait_worker(f, 3, 300), 1);
	json_t *st = status(f);
	json_t *tf = token_of(st, "f"), *q = json_object_get(tf, "quarantined");
	assert_true(json_is_object(q));
	const char *reason = json_string_value(json_object_get(q, "reason"));
	print_message("quarantined after %lld results: %s\n", num(tf, "results", NULL), reason);
	assert_true(num(tf, "results", NULL) <= 2000);
	assert_non_null(strstr(reason, "depth 1000"));
	assert_int_equal(num(json_object_get(st, "spot"), "outcomes", "disproved"), 0);
	json_decref(st);
	for (int i = 0; i < 3; i++) {
		kill(f->w[i], SIGTERM);
		assert_int_equal(wait_worker(f, i, 30), 0);
	}
	stop_coordinator(f);
}

int main(void)
{
	shogi_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_spot__honest_workers_with_their_noise_are_never_quarantined, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_spot__a_forger_is_quarantined_and_the_book_is_the_honest_one, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_spot__a_lie_the_coordinator_cannot_disprove_is_found_by_the_checks, setup,
	        teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
