/*
 * tests/server/test_bench_work.c — the load generator of tools/bench_cluster.sh
 * (`joseki bench-work`) in its paced mode (--rate R), against the real
 * coordinator (`joseki serve --work` on a synthetic book, 127.0.0.1): every
 * acquire the schedule holds is sent, no more (the rate asked for is not
 * exceeded), and a coordinator stopped for a second shows in the latencies of
 * the acquires that fell due meanwhile (counted from when they were due), not
 * only in the few that were in flight. And the coordinator's summary line at
 * exit (with --verbose, as tools/bench_cluster.sh runs it) counts its service
 * rounds and their longest parts, and bench-work's second line the selection's
 * work over the run. Failed requests count in errors, not in the latencies,
 * and a first acquire that fails ends the run at once, saying why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "tests/support/support.h"

static pid_t g_child;

static void kill_child(void)
{
	if (g_child > 0) kill(g_child, SIGKILL);
}

typedef struct {
	char *dir;
	pid_t pid;
	int port;
	FILE *log;
} Fixture;

/* The coordinator on f's book, its console in serve.out (appended to), more
 * options in more; the port it listens on (0: it did not say). */
static int serve(Fixture *f, const char *more)
{
	char book[600], extra[1000];
	snprintf(book, sizeof book, "%s/b", f->dir);
	snprintf(extra, sizeof extra,
	         "--work --quiet --verbose --nodes 1000 --select pv --lease-seconds 600 --tokens "
	         "%s/tokens %s >> %s/serve.out",
	         f->dir, more, f->dir);
	int port = ts_serve_start(&f->pid, &f->log, book, extra);
	g_child = f->pid;
	return port;
}

/* f's coordinator stopped (SIGTERM) and waited for. */
static void stop(Fixture *f)
{
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	f->pid = g_child = 0;
}

/* f's coordinator stopped and started again on its port with more options
 * in more; the port the new one listens on. */
static int restart(Fixture *f, const char *more)
{
	stop(f);
	fclose(f->log);
	char opts[256];
	snprintf(opts, sizeof opts, "--listen 127.0.0.1:%d %s", f->port, more);
	return serve(f, opts);
}

/* A synthetic book, a worker token, and a coordinator on it. */
static int setup(void **state)
{
	Fixture *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s synth %s/b --positions 3000 --seed 1 --quiet >/dev/null",
	            ts_joseki(), f->dir) != 0)
		fail_msg("synth: %s", err);
	free(err);
	err = NULL;
	if (ts_runf(NULL, &err, "%s token add %s/tokens bench > %s/token", ts_joseki(), f->dir,
	            f->dir) != 0)
		fail_msg("token add: %s", err);
	free(err);
	f->port = serve(f, "");
	if (!f->port) fail_msg("serve --work did not say where it listens");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fixture *f = *state;
	if (f->pid > 0) {
		kill(f->pid, SIGTERM);
		waitpid(f->pid, NULL, 0);
	}
	g_child = 0;
	fclose(f->log);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* The number after `name ` in bench-work's summary line. */
static double field(const char *line, const char *name)
{
	char pat[64];
	snprintf(pat, sizeof pat, " %s ", name);
	const char *p = strstr(line, pat);
	if (!p) fail_msg("no %s in: %s", name, line);
	return strtod(p + strlen(pat), NULL);
}

static void command(char *cmd, size_t len, const Fixture *f, int rate, int max, int clients,
                    int seconds)
{
	snprintf(cmd, len,
	         "%s bench-work --server http://127.0.0.1:%d --token-file %s/token --rate %d "
	         "--max %d --clients %d --seconds %d",
	         ts_joseki(), f->port, f->dir, rate, max, clients, seconds);
}

/* 800 results/s in acquires of 8 for 2 s: one acquire every 10 ms, 200 in
 * all, whatever the coordinator's speed; never more results than asked for. */
static void test_bench_work__paced_sends_exactly_the_scheduled_acquires(void **state)
{
	Fixture *f = *state;
	char cmd[1024], *out = NULL, *err = NULL;
	command(cmd, sizeof cmd, f, 800, 8, 4, 2);
	int rc = ts_run(cmd, &out, &err);
	if (rc != 0) fail_msg("bench-work: %d %s %s", rc, out, err);
	assert_int_equal((int)field(out, "acquires"), 200);
	assert_int_equal((int)field(out, "errors"), 0);
	assert_true(field(out, "rate") == 800);
	double results = field(out, "results");
	assert_true(results > 0);
	assert_true(results <= 200 * 8);
	assert_true(field(out, "results_per_s") <= 800.0);
	/* The warm figures: the acquires due in the second half of a 2 s run. */
	assert_true(field(out, "warm_after_s") == 1.0);
	double warm = field(out, "warm_acquires");
	if (warm < 1 || warm > 200) fail_msg("warm_acquires %.0f of 200: %s", warm, out);
	/* Its second line: the coordinator's selection work over the run, from
	 * /v1/work/status before and after (every result asks for more). */
	const char *sel = strstr(out, "\nselector ");
	if (!sel) fail_msg("no selector line: %s", out);
	assert_true(field(sel, "visits_per_result") > 0);
	assert_true(field(sel, "expansions_per_result") >= 0);
	assert_true(field(sel, "fetches_per_result") >= 0);
	assert_true(field(sel, "fetch_misses_per_result") <= field(sel, "fetches_per_result"));
	/* Each figure a result with three decimals (0.015 a result is not 0.0). */
	const char *v = strstr(sel, " visits_per_result ");
	assert_non_null(v);
	v += strlen(" visits_per_result ");
	size_t digits = strspn(v, "0123456789");
	if (v[digits] != '.' || strspn(v + digits + 1, "0123456789") != 3)
		fail_msg("visits_per_result not with three decimals: %s", sel);
	free(out);
	free(err);
	/* The coordinator's last status line says where its rounds' time went. */
	kill(f->pid, SIGTERM);
	int st = 0;
	waitpid(f->pid, &st, 0);
	f->pid = g_child = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char path[700];
	snprintf(path, sizeof path, "%s/serve.out", f->dir);
	char *line = ts_read_file(path, NULL);
	assert_non_null(line);
	double rounds = field(line, "rounds"); /* requests share rounds of 20 ms */
	assert_true(rounds >= 1 && rounds <= 2 * 200 + 2);
	assert_non_null(strstr(line, "longest over 50 ms: wait for a round "));
	assert_non_null(strstr(line, "ms ("));  /* counts, not cut short */
	assert_non_null(strstr(line, "tick ")); /* its clauses wrap at 120 columns */
	free(line);
}

/* The coordinator stopped (SIGSTOP) for 1 s in the middle of a 4 s run at 50
 * acquires a second with two clients: about 50 acquires fall due while it is
 * stopped, two of them in flight. Counted from when they were due, a quarter
 * of all acquires waited hundreds of ms, so the 99th percentile shows the
 * stall (a closed loop would show it in two requests out of many). */
static void test_bench_work__a_stall_shows_in_the_acquires_due_meanwhile(void **state)
{
	Fixture *f = *state;
	char cmd[1024];
	command(cmd, sizeof cmd, f, 200, 4, 2, 4);
	char tl[700];
	snprintf(tl, sizeof tl, " --warm-seconds 3 --timeline %s/timeline --timeline-seconds 1",
	         f->dir);
	strncat(cmd, tl, sizeof cmd - strlen(cmd) - 1);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	usleep(1500 * 1000);
	kill(f->pid, SIGSTOP);
	usleep(1000 * 1000);
	kill(f->pid, SIGCONT);
	char line[2048] = "";
	if (!fgets(line, sizeof line, p)) line[0] = 0;
	int rc = pclose(p);
	if (rc != 0) fail_msg("bench-work: %d %s", rc, line);
	assert_int_equal((int)field(line, "acquires"), 200);
	assert_true(field(line, "acquire_max_ms") >= 900.0);
	assert_true(field(line, "acquire_p99_ms") >= 500.0);
	/* --warm-seconds 3: the warm figures take the last 50 acquires (due
	 * every 20 ms, the 150th at 3 s), all answered. */
	assert_true(field(line, "warm_after_s") == 3.0);
	assert_true(field(line, "warm_acquires") == 50);
	/* --timeline, a line a second (by when the acquires were due): all 200
	 * acquires, in four seconds, the stall in the second or third. */
	snprintf(tl, sizeof tl, "%s/timeline", f->dir);
	char *t = ts_read_file(tl, NULL);
	assert_non_null(t);
	print_message("%s", t);
	assert_true(!strncmp(t, "# from_s acquires p50_ms p99_ms max_ms over_50ms\n", 49));
	int lines = 0, total = 0;
	double stalled = 0;
	for (char *q = strchr(t, '\n'); q && q[1]; q = strchr(q + 1, '\n')) {
		int from, n, over;
		double p50, p99, mx;
		assert_int_equal(
		    sscanf(q + 1, "%d %d %lf %lf %lf %d", &from, &n, &p50, &p99, &mx, &over), 6);
		assert_true(from == lines);
		assert_true(p50 <= p99 && p99 <= mx && over <= n);
		if ((from == 1 || from == 2) && mx > stalled) stalled = mx;
		lines++;
		total += n;
	}
	free(t);
	assert_int_equal(lines, 4);
	assert_int_equal(total, 200);
	assert_true(stalled >= 900.0);
}

/* With nothing listening the first acquire, sent alone before the paced
 * ones, fails: bench-work stops there (it went on for the whole run, and
 * waited ten minutes for positions before that), exit status 1, and stderr
 * says which request failed and why. */
static void test_bench_work__nothing_listening_ends_it_at_once_saying_why(void **state)
{
	Fixture *f = *state;
	stop(f);
	char cmd[1024], *out = NULL, *err = NULL;
	command(cmd, sizeof cmd, f, 100, 4, 2, 600);
	int rc = ts_run(cmd, &out, &err);
	if (rc != 1) fail_msg("bench-work: exit %d (1 wanted) %s %s", rc, out, err);
	assert_true(field(out, "requests") == 1);
	assert_true(field(out, "errors") == 1);
	assert_true(field(out, "acquires") == 0);
	assert_true(field(out, "first_acquire_ms") == -1);
	if (!strstr(err, "1 of 1 requests failed; the first: POST /v1/work/acquire: ") ||
	    !strstr(err, "no positions, so no paced run"))
		fail_msg("what it said: %s", err);
	free(out);
	free(err);
}

/* The coordinator's status: the results it stored (-1: not read). */
static long long stored_results(const Fixture *f, const char *token)
{
	json_t *j = ts_work_status(f->port, token);
	json_t *r = json_object_get(j, "results");
	long long n = json_is_integer(r) ? json_integer_value(r) : -1;
	json_decref(j);
	return n;
}

/* A paced run of S seconds (100 results/s in acquires of 4, two clients)
 * started, returned once the coordinator has stored a paced acquire's
 * results (more than the first acquire's 4, not counted in the run's); *t0
 * when it started, *tok the worker token (malloc'd). 60 s only bound a
 * failure. */
static FILE *run_until_stored(const Fixture *f, int seconds, double *t0, char **tok)
{
	char cmd[1024];
	command(cmd, sizeof cmd, f, 100, 4, 2, seconds);
	char path[700];
	snprintf(path, sizeof path, "%s/token", f->dir);
	*tok = ts_read_file(path, NULL);
	assert_non_null(*tok);
	(*tok)[strcspn(*tok, "\r\n")] = 0;
	*t0 = clock_ms_f();
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (stored_results(f, *tok) <= 4 && clock_ms_f() - *t0 < 60000) usleep(20000);
	return p;
}

/* The coordinator killed once it has stored paced results, early in a 12 s
 * run: the acquires after fail (errors, exit status 1) and count in no
 * latency. Its warm window (after 6 s) holds none of the answered ones, so
 * warm_acquires is 0 (it counted the failed ones) and the warm figures are -1
 * (none), not 0. */
static void test_bench_work__failed_requests_count_in_errors_not_in_latencies(void **state)
{
	Fixture *f = *state;
	double t0;
	char *tok;
	FILE *p = run_until_stored(f, 12, &t0, &tok);
	free(tok);
	double killed = clock_ms_f() - t0;
	kill(f->pid, SIGKILL);
	waitpid(f->pid, NULL, 0);
	f->pid = g_child = 0;
	char line[2048] = "";
	if (!fgets(line, sizeof line, p)) line[0] = 0;
	int rc = pclose(p);
	if (killed > 6000)
		fail_msg(
		    "the coordinator stored its first results %.0f ms after the start, after the "
		    "run's warm window began (6 s): the check below means nothing then",
		    killed);
	if (WEXITSTATUS(rc) != 1) fail_msg("bench-work: %d (1 wanted) %s", rc, line);
	double acquires = field(line, "acquires"), errors = field(line, "errors");
	if (acquires < 100 || errors < acquires / 2)
		fail_msg("%.0f acquires, %.0f errors: %s", acquires, errors, line);
	assert_true(field(line, "results") > 0);
	assert_true(field(line, "warm_acquires") == 0);
	/* None answered: -1, not a 0 that reads as fast; the run's own were. */
	assert_true(field(line, "acquire_p50_warm_ms") == -1);
	assert_true(field(line, "acquire_p99_warm_ms") == -1);
	assert_true(field(line, "acquire_max_warm_ms") == -1);
	assert_true(field(line, "submit_max_warm_ms") == -1);
	assert_true(field(line, "acquire_p50_ms") > 0);
	assert_true(field(line, "submit_max_ms") > 0);
}

/* The coordinator stopped once it has stored paced results, early in a 10 s
 * run, and started again on the same port: the run goes on against the new
 * process, and the second line says the selection's figures are none, the
 * coordinator another instance at the end (its counters, counting from zero
 * again, may have passed the first one's by then). */
static void test_bench_work__a_coordinator_restarted_meanwhile_is_said(void **state)
{
	Fixture *f = *state;
	double t0;
	char *tok;
	FILE *p = run_until_stored(f, 10, &t0, &tok);
	int port = restart(f, "");
	double up = clock_ms_f() - t0;
	assert_int_equal(port, f->port);
	/* Results stored by the new one too. */
	while (stored_results(f, tok) < 1 && clock_ms_f() - t0 < 60000) usleep(20000);
	free(tok);
	char line[2048] = "", sel[2048] = "";
	if (!fgets(line, sizeof line, p)) line[0] = 0;
	if (!fgets(sel, sizeof sel, p)) sel[0] = 0;
	(void)pclose(p); /* the requests while it was down failed: exit status 1 */
	if (up > 9000)
		fail_msg("the coordinator was up again %.0f ms after the start, near the run's end "
		         "(10 s): the check below means nothing then",
		         up);
	print_message("%s%s", line, sel);
	if (!strstr(sel, "selector none (the coordinator restarted during the run: another "
	                 "instance)"))
		fail_msg("the second line: %s", sel);
}

/* A closed loop of clients for seconds against f's coordinator, with the
 * token in f's directory's file token: its exit status, its stdout and
 * stderr (malloc'd) in *out and *err, shown. */
static int closed_loop(const Fixture *f, const char *token, int clients, int seconds, char **out,
                       char **err)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
	         "%s bench-work --server http://127.0.0.1:%d --token-file %s/%s --clients %d "
	         "--seconds %d",
	         ts_joseki(), f->port, f->dir, token, clients, seconds);
	int rc = ts_run(cmd, out, err);
	print_message("%s%s", *out, *err);
	return rc;
}

/* A coordinator that answers 503 with Retry-After (here its gate, one
 * connection an address) is asked again only after that long, as a worker
 * does: of a 3 s closed loop's two clients, the one whose connection the
 * gate refused sends one acquire, not one every 10 ms (bench-work's status
 * reads keep no connection: both may be refused, but no more). */
static void test_bench_work__a_503s_retry_after_is_honoured(void **state)
{
	Fixture *f = *state;
	assert_int_equal(restart(f, "--per-ip-connections 1"), f->port);
	char *out = NULL, *err = NULL;
	assert_int_equal(closed_loop(f, "token", 2, 3, &out, &err), 1);
	if (!strstr(err, "HTTP 503")) fail_msg("stderr: %s", err);
	double errors = field(out, "errors");
	if (errors < 1 || errors > 2) fail_msg("%s", out);
	free(out);
	free(err);
}

/* A coordinator taking as many connections from an address as there are
 * clients: no acquire is refused for a connection closed just before (the
 * first status read's, the run before's), and the status read at the run's
 * end, sent as the clients close theirs, is let in (or asked again): every
 * run has its selection figures. */
static void test_bench_work__the_last_status_read_waits_for_the_clients_to_close(void **state)
{
	Fixture *f = *state;
	assert_int_equal(restart(f, "--per-ip-connections 4"), f->port);
	for (int round = 0; round < 3; round++) {
		char *out = NULL, *err = NULL;
		assert_int_equal(closed_loop(f, "token", 4, 1, &out, &err), 0);
		assert_true(field(out, "errors") == 0);
		if (!strstr(out, "\nselector expansions_per_result ")) fail_msg("%s", out);
		free(out);
		free(err);
	}
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* A client that closes its connection and opens another at once is not
 * refused for the one it closed, though the coordinator may not have seen
 * the close yet: with one connection an address, 300 requests in a row, each
 * on a connection of its own closed after it, are all answered. */
static void test_bench_work__a_closed_connection_leaves_room_for_the_next_at_once(void **state)
{
	Fixture *f = *state;
	assert_int_equal(restart(f, "--per-ip-connections 1"), f->port);
	char url[64], token[128] = "Authorization: Bearer ", path[700];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/work/status", f->port);
	snprintf(path, sizeof path, "%s/token", f->dir);
	char *tok = ts_read_file(path, NULL);
	assert_non_null(tok);
	strncat(token, tok, 64);
	free(tok);
	struct curl_slist *hd = curl_slist_append(NULL, token);
	int refused = 0, other = 0;
	for (int i = 0; i < 300; i++) {
		CURL *h = curl_easy_init();
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
		long st = 0;
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		refused += st == 503;
		other += st != 503 && st != 200;
		curl_easy_cleanup(h);
	}
	curl_slist_free_all(hd);
	if (refused || other)
		fail_msg("of 300 requests, %d refused (503), %d failed", refused, other);
}

/* With nothing listening, a closed loop's client asks again a second after
 * each acquire that got no answer: two clients for 2 s send a few, not 400. */
static void test_bench_work__a_closed_loop_with_nothing_listening_asks_once_a_second(void **state)
{
	Fixture *f = *state;
	stop(f);
	char *out = NULL, *err = NULL;
	assert_int_equal(closed_loop(f, "token", 2, 2, &out, &err), 1);
	double requests = field(out, "requests"), errors = field(out, "errors");
	if (requests < 2 || requests > 6 || errors != requests) fail_msg("%s", out);
	if (!strstr(err, "the first: POST /v1/work/acquire: Couldn't connect to server") ||
	    !strstr(err, "the status could not be read: GET /v1/work/status: Couldn't connect to "
	                 "server; no selection figures"))
		fail_msg("stderr: %s", err);
	free(out);
	free(err);
}

/* A run that stored nothing (a read-only token: every client's first acquire
 * refused, and final, the status read) divides the selection's work by
 * nothing: its second line says so rather than giving the whole work as
 * each result's. */
static void test_bench_work__a_run_without_results_has_no_figures_per_result(void **state)
{
	Fixture *f = *state;
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s token add %s/tokens reader --read > %s/reader", ts_joseki(),
	            f->dir, f->dir) != 0)
		fail_msg("token add: %s", err);
	free(err);
	char *out = NULL;
	err = NULL;
	assert_int_equal(closed_loop(f, "reader", 2, 1, &out, &err), 1);
	assert_true(field(out, "results") == 0);
	/* A 403 is final, as for a worker: each client asked once. */
	assert_true(field(out, "requests") == 2);
	if (!strstr(out, "\nselector none (no results stored in the run)\n")) fail_msg("%s", out);
	if (!strstr(err, "HTTP 403")) fail_msg("stderr: %s", err);
	free(out);
	free(err);
}

int main(void)
{
	atexit(kill_child);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__paced_sends_exactly_the_scheduled_acquires, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__a_stall_shows_in_the_acquires_due_meanwhile, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__nothing_listening_ends_it_at_once_saying_why, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__failed_requests_count_in_errors_not_in_latencies, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__a_coordinator_restarted_meanwhile_is_said, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bench_work__a_503s_retry_after_is_honoured, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__the_last_status_read_waits_for_the_clients_to_close, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__a_closed_connection_leaves_room_for_the_next_at_once, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__a_closed_loop_with_nothing_listening_asks_once_a_second, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_bench_work__a_run_without_results_has_no_figures_per_result, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
