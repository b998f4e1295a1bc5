/*
 * tests/bookgen/test_worker.c — `joseki worker` (the real binary, the real
 * built-in engine or a real engine process) against a fake coordinator
 * (tests/cluster/fakes/fake_coordinator.py, a real HTTP server on 127.0.0.1)
 * that records every request. Each case asserts on that record: every
 * position leased is submitted exactly once, with moves legal in it (checked
 * here with the rules core), through back-off on 204/503/closed connections,
 * across a coordinator killed and started again, with crashing engines; a
 * refused token ends the worker at once; SIGTERM aborts the lease, exit 0.
 * Also the lease parser and the result encoding in-process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster/worker.h"
#include "search/builtin.h"
#include "cluster/worker_wire.h"
#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/zobrist.h"
#include "tests/support/support.h"

#define FAKE "tests/cluster/fakes/fake_coordinator.py"
#define NPOS_MAX 64

typedef struct {
	char *dir;
	char positions[512], record[512], state[512], portfile[512], token[512], out[512],
	    errf[512], badtok[512];
	int npos;
	char sfen[NPOS_MAX][SFEN_MAX];
	char key[NPOS_MAX][KEY_HEX_LEN];
	pid_t fake, worker;
	int port;
} Fx;

/* n distinct positions along a seeded random game from the start position. */
static void make_positions(Fx *f, int n)
{
	Position *p = malloc(sizeof *p);
	assert_non_null(p);
	assert_int_equal(position_parse(p, "startpos", NULL), 0);
	uint64_t rng = 12345;
	FILE *o = fopen(f->positions, "w");
	assert_non_null(o);
	for (f->npos = 0; f->npos < n;) {
		sfen_write(p, f->sfen[f->npos], SFEN_MAX);
		key_to_hex(pos_key(p), f->key[f->npos]);
		fprintf(o, "%s %s\n", f->key[f->npos], f->sfen[f->npos]);
		f->npos++;
		Move mv[MOVEGEN_MAX];
		int k = movegen_legal(p, mv);
		assert_true(k > 0);
		pos_do_move(p, mv[ts_rand(&rng) % (uint64_t)k]);
	}
	fclose(o);
	free(p);
}

/* One more position, given by SFEN. */
static void add_position(Fx *f, const char *sfen)
{
	Position *p = malloc(sizeof *p);
	assert_int_equal(position_parse(p, sfen, NULL), 0);
	snprintf(f->sfen[f->npos], SFEN_MAX, "%s", sfen);
	key_to_hex(pos_key(p), f->key[f->npos]);
	FILE *o = fopen(f->positions, "a");
	assert_non_null(o);
	fprintf(o, "%s %s\n", f->key[f->npos], f->sfen[f->npos]);
	fclose(o);
	f->npos++;
	free(p);
}

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->positions, sizeof f->positions, "%s/positions", f->dir);
	snprintf(f->record, sizeof f->record, "%s/record.jsonl", f->dir);
	snprintf(f->state, sizeof f->state, "%s/state.json", f->dir);
	snprintf(f->portfile, sizeof f->portfile, "%s/port", f->dir);
	snprintf(f->token, sizeof f->token, "%s/token", f->dir);
	snprintf(f->badtok, sizeof f->badtok, "%s/wrong-token", f->dir);
	snprintf(f->out, sizeof f->out, "%s/worker.out", f->dir);
	snprintf(f->errf, sizeof f->errf, "%s/worker.err", f->dir);
	ts_write_file(f->token, "secret-token\n", 13);
	ts_write_file(f->badtok, "not-the-token\n", 14);
	*state = f;
	return 0;
}

static void stop_pid(pid_t *pid)
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
	stop_pid(&f->worker);
	stop_pid(&f->fake);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Starts the fake coordinator (port 0: any) and waits for its port. */
static void start_fake(Fx *f, int port, const char *script, const char *limits)
{
	char portarg[16];
	snprintf(portarg, sizeof portarg, "%d", port);
	unlink(f->portfile);
	char *argv[] = {"python3",      FAKE,          "--positions", f->positions,   "--record",
	                f->record,      "--port-file", f->portfile,   "--state",      f->state,
	                "--port",       portarg,       "--script",    (char *)script, "--limits",
	                (char *)limits, NULL};
	f->fake = ts_spawn(argv, NULL, NULL, false);
	for (int i = 0; i < 200; i++) {
		char *s = ts_read_file(f->portfile, NULL);
		if (s) {
			f->port = atoi(s);
			free(s);
			return;
		}
		usleep(25000);
	}
	fail_msg("the fake coordinator did not start");
}

/* Starts `joseki worker` against the fake; extra: NULL-terminated. */
static void start_worker(Fx *f, const char *token, const char *const *extra)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	char *argv[32] = {
	    (char *)ts_joseki(), "worker",        "--server", url,      "--token-file",
	    (char *)token,       "--max-backoff", "2",        "--name", "w1"};
	int n = 10;
	for (int i = 0; extra && extra[i]; i++) argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	f->worker = ts_spawn(argv, f->out, f->errf, false);
}

/* The recorded events, as an array. */
static json_t *events(Fx *f)
{
	json_t *a = json_array();
	char *s = ts_read_file(f->record, NULL);
	for (char *line = s ? strtok(s, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		json_t *e = json_loads(line, 0, NULL);
		if (e) json_array_append_new(a, e);
	}
	free(s);
	return a;
}

/* Per position: how many submitted results name it (moves or failed). */
static void count_results(Fx *f, json_t *ev, int *with_moves, int *failed)
{
	memset(with_moves, 0, sizeof(int) * NPOS_MAX);
	memset(failed, 0, sizeof(int) * NPOS_MAX);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ev")), "submit") ||
		    json_integer_value(json_object_get(e, "status")) != 204)
			continue;
		json_t *rs = json_object_get(json_object_get(e, "body"), "results"), *r;
		size_t k;
		json_array_foreach(rs, k, r)
		{
			const char *key = json_string_value(json_object_get(r, "key"));
			int p = -1;
			for (int j = 0; j < f->npos; j++)
				if (key && !strcmp(key, f->key[j])) p = j;
			if (p < 0) fail_msg("a result for a key never leased: %s", key ? key : "?");
			if (json_object_get(r, "failed"))
				failed[p]++;
			else
				with_moves[p]++;
		}
	}
}

/* Every move of every accepted result is legal in its position, its PV starts
 * with it, scores are in range. Returns the number of moves checked. */
static int check_legal(Fx *f, json_t *ev)
{
	Position *p = malloc(sizeof *p);
	int checked = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ev")), "submit")) continue;
		json_t *rs = json_object_get(json_object_get(e, "body"), "results"), *r;
		size_t k;
		json_array_foreach(rs, k, r)
		{
			const char *key = json_string_value(json_object_get(r, "key"));
			int j = 0;
			while (j < f->npos && strcmp(key, f->key[j])) j++;
			assert_true(j < f->npos);
			assert_int_equal(position_parse(p, f->sfen[j], NULL), 0);
			json_t *ms = json_object_get(r, "moves"), *m;
			size_t q;
			json_array_foreach(ms, q, m)
			{
				const char *mv = json_string_value(json_object_get(m, "move"));
				Move out;
				char perr[SHOGI_ERRLEN];
				assert_non_null(mv);
				if (usi_move_parse_legal(&out, p, mv, strlen(mv), perr) < 0)
					fail_msg("%s: illegal move %s: %s", f->sfen[j], mv, perr);
				const char *pv = json_string_value(json_object_get(m, "pv"));
				assert_non_null(pv);
				assert_int_equal(strncmp(pv, mv, strlen(mv)), 0);
				json_t *sc = json_object_get(m, "score");
				json_t *cp = json_object_get(sc, "cp"),
				       *mate = json_object_get(sc, "mate");
				assert_true(cp || mate);
				if (cp) assert_true(llabs(json_integer_value(cp)) <= 32000);
				assert_true(json_integer_value(json_object_get(m, "depth")) >= 0);
				checked++;
			}
		}
	}
	free(p);
	return checked;
}

/* Waits (up to secs) until every position has a submitted result. */
static bool wait_all_submitted(Fx *f, double secs)
{
	int64_t end = clock_ms() + (int64_t)(secs * 1000);
	int mv[NPOS_MAX], fl[NPOS_MAX];
	while (clock_ms() < end) {
		json_t *ev = events(f);
		count_results(f, ev, mv, fl);
		json_decref(ev);
		int done = 0;
		for (int j = 0; j < f->npos; j++) done += mv[j] + fl[j] > 0;
		if (done == f->npos) return true;
		usleep(50000);
	}
	return false;
}

/* SIGTERM to the worker; asserts it exits 0 within 6 s. */
static void term_worker(Fx *f)
{
	kill(f->worker, SIGTERM);
	int st = 0;
	for (int i = 0; i < 120; i++) {
		if (waitpid(f->worker, &st, WNOHANG) == f->worker) {
			f->worker = 0;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				char *e = ts_read_file(f->errf, NULL);
				fail_msg("worker ended with status %d: %s", st, e ? e : "");
			}
			return;
		}
		usleep(50000);
	}
	fail_msg("the worker did not exit within 6 s of SIGTERM");
}

static int count_ev(json_t *ev, const char *name, long status)
{
	int n = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		if (!strcmp(json_string_value(json_object_get(e, "ev")), name) &&
		    (status < 0 || json_integer_value(json_object_get(e, "status")) == status))
			n++;
	}
	return n;
}

/* The number of moves of the accepted result for key (-1: none). */
static int moves_of(json_t *ev, const char *key)
{
	size_t i, k;
	json_t *e, *r;
	json_array_foreach(ev, i, e)
	{
		if (json_integer_value(json_object_get(e, "status")) != 204) continue;
		json_array_foreach(json_object_get(json_object_get(e, "body"), "results"), k, r)
		{
			if (!strcmp(json_string_value(json_object_get(r, "key")), key))
				return (int)json_array_size(json_object_get(r, "moves"));
		}
	}
	return -1;
}

/* Each position submitted exactly once with legal moves (none failed). */
static void assert_each_once(Fx *f, json_t *ev)
{
	int mv[NPOS_MAX], fl[NPOS_MAX];
	count_results(f, ev, mv, fl);
	for (int j = 0; j < f->npos; j++)
		if (mv[j] != 1 || fl[j] != 0)
			fail_msg("position %d (%s): %d results with moves, %d failed", j,
			         f->sfen[j], mv[j], fl[j]);
	assert_true(check_legal(f, ev) >= f->npos);
}

static void test_worker__every_position_submitted_once_with_legal_moves(void **state)
{
	Fx *f = *state;
	make_positions(f, 24);
	start_fake(f, 0, "", "{\"nodes\": 300, \"multipv\": 3}");
	const char *extra[] = {"--engines", "2", "--status-seconds", "1", NULL};
	start_worker(f, f->token, extra);
	assert_true(wait_all_submitted(f, 20));
	term_worker(f);
	/* --status-seconds: a start line and whole status lines on a log (not
	 * a terminal), the last at the end. */
	char *said = ts_read_file(f->errf, NULL);
	assert_non_null(said);
	if (!strstr(said, "worker: w1, 2 engines (builtin), for http://127.0.0.1:") ||
	    !strstr(said, "worker: 24 done, 0 failed, ") || !strstr(said, " (the end)\n") ||
	    strchr(said, '\r'))
		fail_msg("the worker said: %s", said);
	free(said);
	json_t *ev = events(f);
	assert_each_once(f, ev);
	/* MultiPV 3 was asked for: the start position's result has 3 lines. */
	assert_int_equal(moves_of(ev, f->key[0]), 3);
	/* Keep-alive: far fewer connections than requests. */
	int reqs = (int)json_array_size(ev), peers = 0;
	long seen[256];
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		long p = (long)json_integer_value(json_object_get(e, "peer"));
		bool known = false;
		for (int k = 0; k < peers; k++) known |= seen[k] == p;
		if (!known && peers < 256) seen[peers++] = p;
	}
	if (peers > 2) fail_msg("%d connections for %d requests: no keep-alive", peers, reqs);
	/* Name, engine id and nodes/s came with the requests. */
	json_t *a = NULL;
	json_array_foreach(
	    ev, i, e) if (!strcmp(json_string_value(json_object_get(e, "ev")), "acquire") && !a) a =
	    e;
	assert_string_equal(json_string_value(json_object_get(a, "worker")), "w1");
	assert_string_equal(json_string_value(json_object_get(a, "engine")), "joseki builtin");
	assert_true(json_integer_value(json_object_get(a, "max")) >= 2);
	json_decref(ev);
	char *out = ts_read_file(f->out, NULL);
	assert_non_null(out);
	assert_non_null(strstr(out, "worker positions 24 failed 0"));
	free(out);
}

/* A WorkerProgressFn: results sent so far, and a state. */
static void count_progress(void *ctx, const char *phase, const WorkerProgress *p)
{
	assert_non_null(p->state);
	assert_true(p->seconds >= 0 && p->nps >= 0);
	ts_progress_note(ctx, phase, p->positions);
}

/* worker_run (in this process, two built-in engines) reports through its
 * callback (about once a second, then "done" with what it sent), and prints
 * nothing without one. */
static void test_worker__progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	Fx *f = *state;
	make_positions(f, 24);
	/* positions of a few tenths of a second: a run of several seconds */
	start_fake(f, 0, "", "{\"nodes\": 150000, \"multipv\": 1}");
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	SearchEngine *engines[2];
	for (int i = 0; i < 2; i++) assert_int_equal(builtin_engine_new(&engines[i], 16, NULL), 0);
	TsProgress *rec = ts_progress_new();
	for (int quiet = 1; quiet >= 0; quiet--) {
		WorkerOptions opt = {.server = url,
		                     .token = "secret-token",
		                     .name = "w1",
		                     .engines = engines,
		                     .nengines = 2,
		                     .max_backoff_s = 1,
		                     .max_positions = quiet ? 2 : 12,
		                     .progress = quiet ? NULL : count_progress,
		                     .progress_ctx = rec};
		WorkerStats st;
		char err[WORKER_ERRLEN];
		int saved = ts_stderr_begin(f->errf);
		int rc = worker_run(&st, &opt, err);
		char *text = ts_stderr_end(saved, f->errf);
		if (rc != 0) fail_msg("worker_run: %s", err);
		assert_string_equal(text, "");
		free(text);
		assert_int_equal(st.positions, opt.max_positions);
		if (!quiet) {
			static const char *const phases[] = {"status", "done", NULL};
			ts_progress_check(rec, phases);
			assert_true(ts_progress_count(rec, "status") >= 1);
			assert_int_equal(ts_progress_last(rec), st.positions);
		}
	}
	for (int i = 0; i < 2; i++) search_free(engines[i]);
	free(rec);
}

static void test_worker__backs_off_on_204_503_and_closed_connections(void **state)
{
	Fx *f = *state;
	make_positions(f, 10);
	start_fake(f, 0, "acquire=204*2,acquire=503,submit=close,submit=503,submit=500",
	           "{\"nodes\": 200}");
	start_worker(f, f->token, NULL);
	assert_true(wait_all_submitted(f, 30));
	term_worker(f);
	json_t *ev = events(f);
	assert_each_once(f, ev);
	/* The scripted answers to the first three acquires (204, 204, 503) asked
	 * for a 1 s wait each: each next acquire came at least that much later,
	 * by the coordinator's clock. */
	double prev = -1;
	int acquires = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "ev")), "acquire")) continue;
		double t = json_real_value(json_object_get(e, "t"));
		long st = (long)json_integer_value(json_object_get(e, "status"));
		if (acquires < 3 && st != (acquires < 2 ? 204 : 503))
			fail_msg("acquire %d answered %ld, not as scripted", acquires + 1, st);
		if (prev >= 0 && t - prev < 0.9)
			fail_msg("acquire %d came %.2fs after a Retry-After: 1", acquires + 1,
			         t - prev);
		prev = ++acquires <= 3 ? t : -1;
	}
	assert_true(acquires > 3);
	assert_int_equal(count_ev(ev, "submit", -1) >= 4, 1);
	json_decref(ev);
	/* Each failure was said with its wait, and the coordinator's answer after
	 * the 503 acquire (one failed request) once, however long the run. */
	char *e2 = ts_read_file(f->errf, NULL);
	assert_non_null(e2);
	if (!strstr(e2, "retrying in") || !strstr(e2, " answering again (after 1 failed request)"))
		fail_msg("the worker said: %s", e2);
	free(e2);
}

/* A submit refused with 400 is sent again one result at a time; a result
 * refused alone is dropped (counted rejected), the others go in. */
static void test_worker__refused_submit_is_retried_result_by_result(void **state)
{
	Fx *f = *state;
	make_positions(f, 6);
	/* Three engines: leases of three positions. The first submit (three
	 * results) is refused, then the first result sent alone is refused too:
	 * that one is dropped, the other two and the second lease go in. */
	start_fake(f, 0, "submit=400*2", "{\"nodes\": 200}");
	const char *extra[] = {"--engines", "3", NULL};
	start_worker(f, f->token, extra);
	int64_t end = clock_ms() + 20000;
	int mv[NPOS_MAX], fl[NPOS_MAX], done = 0;
	while (done < f->npos - 1 && clock_ms() < end) {
		json_t *ev = events(f);
		count_results(f, ev, mv, fl);
		json_decref(ev);
		done = 0;
		for (int j = 0; j < f->npos; j++) done += mv[j];
		usleep(50000);
	}
	term_worker(f);
	json_t *ev = events(f);
	count_results(f, ev, mv, fl);
	int once = 0, none = 0;
	for (int j = 0; j < f->npos; j++) {
		assert_true(mv[j] <= 1);
		once += mv[j] == 1;
		none += mv[j] == 0;
	}
	assert_int_equal(once, f->npos - 1);
	assert_int_equal(none, 1);
	assert_int_equal(count_ev(ev, "submit", 400), 2);
	json_t *first = NULL;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i,
	                   e) if (!first && json_integer_value(json_object_get(e, "status")) == 400)
	    first = e;
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(first, "body"), "results")), 3);
	json_decref(ev);
	char *out = ts_read_file(f->out, NULL);
	assert_non_null(strstr(out, "rejected 1 "));
	free(out);
}

static void test_worker__results_kept_while_the_coordinator_is_away(void **state)
{
	Fx *f = *state;
	make_positions(f, 8);
	/* The coordinator dies on the first submit (no answer). */
	start_fake(f, 0, "submit=exit", "{\"nodes\": 200}");
	start_worker(f, f->token, NULL);
	int st;
	int64_t end = clock_ms() + 15000;
	while (waitpid(f->fake, &st, WNOHANG) != f->fake) {
		if (clock_ms() > end) fail_msg("the worker never submitted");
		usleep(20000);
	}
	f->fake = 0;
	/* Away until the worker has met the absence (and kept its results). */
	assert_true(ts_wait_file(f->errf, 0, "retrying", 20000));
	start_fake(f, f->port, "", "{\"nodes\": 200}");
	assert_true(wait_all_submitted(f, 20));
	term_worker(f);
	json_t *ev = events(f);
	assert_each_once(f, ev);
	/* The first coordinator died before answering any submit: the first
	 * lease's results were kept and went to the second one. */
	const char *first = json_string_value(json_object_get(json_array_get(ev, 0), "lease"));
	size_t i;
	json_t *e;
	bool kept = false;
	json_array_foreach(ev, i, e)
	{
		const char *l = json_string_value(json_object_get(e, "lease"));
		if (!strcmp(json_string_value(json_object_get(e, "ev")), "submit") && l &&
		    !strcmp(l, first) && json_integer_value(json_object_get(e, "status")) == 204)
			kept = true;
	}
	assert_true(kept);
	json_decref(ev);
	char *err = ts_read_file(f->errf, NULL);
	assert_non_null(strstr(err, "retrying"));
	free(err);
}

static void test_worker__refused_token_ends_at_once_with_a_message(void **state)
{
	Fx *f = *state;
	make_positions(f, 4);
	start_fake(f, 0, "", "{\"nodes\": 200}");
	int64_t t0 = clock_ms();
	start_worker(f, f->badtok, NULL);
	int st;
	while (waitpid(f->worker, &st, WNOHANG) != f->worker) {
		/* A bound on a failure only: "at once" is the one acquire below. */
		if (clock_ms() - t0 > 20000) fail_msg("the worker did not stop on 401");
		usleep(20000);
	}
	f->worker = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
	char *err = ts_read_file(f->errf, NULL), url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	assert_non_null(strstr(err, url));
	assert_non_null(strstr(err, f->badtok));
	assert_non_null(strstr(err, "401"));
	free(err);
	json_t *ev = events(f);
	assert_int_equal(count_ev(ev, "acquire", 401), 1); /* tried once, not again */
	assert_int_equal(count_ev(ev, "acquire", -1), 1);
	json_decref(ev);
}

/* The built-in engine behind tests/cluster/fakes/crash_engine.py, which
 * appends each search's position to go_log as it starts. */
static void proxy_engine(Fx *f, char *eng, size_t cap, char *go_log, size_t logcap)
{
	snprintf(go_log, logcap, "%s/go.log", f->dir);
	setenv("GO_LOG", go_log, 1);
	setenv("JOSEKI_BIN", ts_joseki(), 1);
	char *cwd = getcwd(NULL, 0);
	snprintf(eng, cap, "%s/tests/cluster/fakes/crash_engine.py", cwd);
	free(cwd);
}

static void test_worker__sigterm_aborts_the_lease_and_exits_0(void **state)
{
	Fx *f = *state;
	make_positions(f, 6);
	/* Long searches: the signal comes once the engine thinks. */
	char eng[600], go_log[600];
	proxy_engine(f, eng, sizeof eng, go_log, sizeof go_log);
	unsetenv("CRASH_SFENS");
	unsetenv("HANG_SFENS");
	start_fake(f, 0, "", "{\"movetime\": 20000}");
	const char *extra[] = {"--engine", eng, "--heartbeat-seconds", "1", NULL};
	start_worker(f, f->token, extra);
	assert_true(ts_wait_file(go_log, 0, "position", 20000));
	/* Silent while it thinks: a heartbeat says it is alive. */
	assert_true(ts_wait_file(f->record, 0, "\"leaving\": false", 20000));
	term_worker(f);
	unsetenv("GO_LOG");
	json_t *ev = events(f);
	assert_true(count_ev(ev, "abort", 204) >= 1);
	/* Its last word: it leaves (the coordinator shows it gone at once). */
	json_t *last = json_array_get(ev, json_array_size(ev) - 1);
	assert_string_equal(json_string_value(json_object_get(last, "ev")), "heartbeat");
	assert_true(json_is_true(json_object_get(last, "leaving")));
	int mv[NPOS_MAX], fl[NPOS_MAX];
	count_results(f, ev, mv, fl);
	/* Cancelled, not failed, and not waited for: no 20 s search ended. */
	for (int j = 0; j < f->npos; j++) {
		assert_int_equal(fl[j], 0);
		assert_int_equal(mv[j], 0);
	}
	json_decref(ev);
}

/* A USI engine that crashes on two positions (restarted and tried again by
 * the driver, then reported failed) and a mated position (no line: failed,
 * since a result needs at least one move); the others have moves. */
static void test_worker__crashing_positions_are_reported_failed(void **state)
{
	Fx *f = *state;
	make_positions(f, 8);
	/* White to move is mated: the engine answers "bestmove resign", no line. */
	add_position(f, "4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1");
	char crash[600], eng[600];
	snprintf(crash, sizeof crash, "%s/crash", f->dir);
	char buf[2 * SFEN_MAX + 4];
	int n = snprintf(buf, sizeof buf, "%s\n%s\n", f->sfen[2], f->sfen[5]);
	ts_write_file(crash, buf, (size_t)n);
	setenv("CRASH_SFENS", crash, 1);
	setenv("JOSEKI_BIN", ts_joseki(), 1);
	char *cwd = getcwd(NULL, 0);
	snprintf(eng, sizeof eng, "%s/tests/cluster/fakes/crash_engine.py", cwd);
	free(cwd);
	start_fake(f, 0, "", "{\"nodes\": 200}");
	const char *extra[] = {"--engine", eng, "--engines", "2", NULL};
	start_worker(f, f->token, extra);
	assert_true(wait_all_submitted(f, 30));
	term_worker(f);
	json_t *ev = events(f);
	int mv[NPOS_MAX], fl[NPOS_MAX];
	count_results(f, ev, mv, fl);
	/* Delivery is at least once (see sigterm_submits_what_is_finished): a
	 * result may come twice under load (one CI run saw it), never none and
	 * never of the wrong kind. */
	for (int j = 0; j < f->npos; j++) {
		bool bad = j == 2 || j == 5 || j == 8;
		if (bad ? (mv[j] != 0 || fl[j] < 1) : (mv[j] < 1 || fl[j] != 0)) {
			char *e = ts_read_file(f->errf, NULL);
			fail_msg("position %d: %d with moves, %d failed; the worker said: %s", j,
			         mv[j], fl[j], e ? e : "");
		}
	}
	check_legal(f, ev);
	json_decref(ev);
	char *rec = ts_read_file(f->record, NULL);
	assert_non_null(strstr(rec, "engine exited unexpectedly"));
	assert_non_null(strstr(rec, "the engine gave no line (bestmove resign)"));
	free(rec);
	/* Its stderr says why at the first failure, then not again within the
	 * minute (three failed here). */
	char *e = ts_read_file(f->errf, NULL);
	assert_non_null(e);
	const char *said = strstr(e, "worker: a position failed (1 since the last such line): ");
	if (!said) fail_msg("no failure line: %s", e);
	assert_null(strstr(said + 20, "a position failed"));
	free(e);
}

/* SIGTERM while one position hangs in the engine: the finished positions of
 * the lease are submitted, the lease is aborted (the hanging one and those not
 * started are not reported at all), exit 0. */
static void test_worker__sigterm_submits_what_is_finished(void **state)
{
	Fx *f = *state;
	make_positions(f, 6);
	char hang[600], eng[600];
	snprintf(hang, sizeof hang, "%s/hang", f->dir);
	char buf[SFEN_MAX + 2];
	int n = snprintf(buf, sizeof buf, "%s\n", f->sfen[2]);
	ts_write_file(hang, buf, (size_t)n);
	setenv("HANG_SFENS", hang, 1);
	unsetenv("CRASH_SFENS");
	char go_log[600];
	proxy_engine(f, eng, sizeof eng, go_log, sizeof go_log);
	start_fake(f, 0, "", "{\"nodes\": 200}");
	const char *extra[] = {"--engine", eng, NULL};
	start_worker(f, f->token, extra);
	/* Positions 0 and 1 are finished once the engine is on the hanging one. */
	assert_true(ts_wait_file(go_log, 0, f->sfen[2], 20000));
	term_worker(f);
	unsetenv("HANG_SFENS");
	unsetenv("GO_LOG");
	json_t *ev = events(f);
	int mv[NPOS_MAX], fl[NPOS_MAX];
	count_results(f, ev, mv, fl);
	/* Delivery is at least once: a submit whose answer the worker did not
	 * get is sent again, and the coordinator ignores a result it has (one
	 * CI run under heavy load saw position 1 twice; the worker's messages
	 * say why when it happens). Never a result for the others. */
	for (int j = 0; j < f->npos; j++) {
		if (fl[j] || (j < 2 ? mv[j] < 1 : mv[j] != 0)) {
			char *e = ts_read_file(f->errf, NULL);
			fail_msg("position %d: %d results, %d failed; the worker said: %s", j,
			         mv[j], fl[j], e ? e : "");
		}
		if (mv[j] > 1) {
			char *e = ts_read_file(f->errf, NULL);
			print_message("position %d sent %d times; the worker said: %s\n", j, mv[j],
			              e ? e : "");
			free(e);
		}
	}
	assert_true(count_ev(ev, "abort", 204) >= 1);
	json_decref(ev);
}

/* SIGTERM while an acquire is on its way: the coordinator may already have
 * granted the lease, so the worker waits for the answer (within its grace
 * time) and aborts that lease too; cut short, the lease would be nobody's
 * until it expired, its positions held back and charged a failed try. */
static void test_worker__sigterm_during_an_acquire_aborts_the_lease_it_brings(void **state)
{
	Fx *f = *state;
	make_positions(f, 6);
	/* The first lease is answered at once, the next 1 s late; long searches. */
	start_fake(f, 0, "acquire=normal,acquire=slow*4", "{\"movetime\": 20000}");
	start_worker(f, f->token, NULL);
	int64_t end = clock_ms() + 10000;
	for (;;) {
		json_t *ev = events(f);
		int n = count_ev(ev, "acquire", 200);
		json_decref(ev);
		if (n >= 2) break; /* the second is granted, its answer not yet sent */
		if (clock_ms() > end) fail_msg("no second lease asked for");
		usleep(20000);
	}
	term_worker(f);
	json_t *ev = events(f);
	/* The 20 s searches were stopped, not waited for: nothing was submitted. */
	assert_int_equal(count_ev(ev, "submit", -1), 0);
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		const char *lid = json_string_value(json_object_get(e, "lease"));
		if (strcmp(json_string_value(json_object_get(e, "ev")), "acquire") || !lid)
			continue;
		bool aborted = false;
		size_t j;
		json_t *a;
		json_array_foreach(ev, j, a)
		{
			const char *al = json_string_value(json_object_get(a, "lease"));
			aborted |= !strcmp(json_string_value(json_object_get(a, "ev")), "abort") &&
			           al && !strcmp(al, lid) &&
			           json_integer_value(json_object_get(a, "status")) == 204;
		}
		if (!aborted) fail_msg("lease %s was granted and never aborted", lid);
	}
	assert_int_equal(count_ev(ev, "abort", 204), 2);
	json_decref(ev);
}

/* Starts `joseki serve BOOK --work` on port (0: any) with stderr in log;
 * returns its port. */
static int start_coordinator(pid_t *pid, const char *book, const char *log, int port)
{
	char listen[64];
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	unlink(log);
	/* 50 ms a position: 120 positions on 2 engines take about 3 s, so the
	 * kill lands in the middle of the run. */
	char *argv[] = {(char *)ts_joseki(),
	                "serve",
	                (char *)book,
	                "--work",
	                "--listen",
	                listen,
	                "--movetime",
	                "50",
	                "--multipv",
	                "2",
	                "--lease-seconds",
	                "60",
	                NULL};
	*pid = ts_spawn(argv, NULL, log, false);
	for (int i = 0; i < 400; i++) {
		char *s = ts_read_file(log, NULL);
		const char *p = s ? strstr(s, "http://127.0.0.1:") : NULL;
		int got = p && strchr(p, '/') ? atoi(p + 17) : 0;
		free(s);
		if (got > 0) return got;
		usleep(25000);
	}
	fail_msg("the coordinator did not start");
	return 0;
}

static long long thought(const char *book)
{
	json_t *o = ts_run_json(0, "%s stats %s --json", ts_joseki(), book);
	long long n = ts_jint(o, "thought");
	json_decref(o);
	return n;
}

/* The real coordinator (`joseki serve --work`) on a book of the floodgate
 * fixtures, killed with SIGKILL while the worker works and started again on
 * the same port: the worker ends its --positions run with every result
 * accepted, the book holds exactly that many more thought positions, and
 * `joseki check` passes. */
static void test_worker__against_the_real_coordinator_through_a_restart(void **state)
{
	Fx *f = *state;
	char book[600], log[600], tok[600];
	snprintf(book, sizeof book, "%s/book", f->dir);
	snprintf(log, sizeof log, "%s/serve.log", f->dir);
	snprintf(tok, sizeof tok, "%s/real-token", f->dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate", ts_joseki(), book), 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s token add %s/tokens w1 > %s", ts_joseki(), book, tok), 0);
	long long before = thought(book);
	f->port = start_coordinator(&f->fake, book, log, 0);
	char journal[600];
	snprintf(journal, sizeof journal, "%s/journal", f->dir);
	const char *extra[] = {"--engines", "2", "--positions", "120", "--journal", journal, NULL};
	start_worker(f, tok, extra);
	/* The kill lands mid-run: some results in, far from all. */
	assert_true(ts_wait_file(journal, 0, "\nresult ", 30000));
	stop_pid(&f->fake); /* SIGKILL */
	char *j = ts_read_file(journal, NULL);
	int in = 0;
	for (const char *p = j; (p = strstr(p, "\nresult ")); p++) in++;
	free(j);
	if (in >= 120) fail_msg("the kill came after the run (%d results in)", in);
	/* Away until the worker has met the absence. */
	size_t from = ts_file_size(f->errf);
	assert_true(ts_wait_file(f->errf, from, "retrying", 30000));
	assert_int_equal(start_coordinator(&f->fake, book, log, f->port), f->port);
	int st = 0;
	int64_t end = clock_ms() + 60000;
	while (waitpid(f->worker, &st, WNOHANG) != f->worker) {
		if (clock_ms() > end) fail_msg("the worker did not finish its 120 positions");
		usleep(50000);
	}
	f->worker = 0;
	char *out = ts_read_file(f->out, NULL), *err = ts_read_file(f->errf, NULL);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    !strstr(out, "positions 120 failed 0 rejected 0 unsent 0"))
		fail_msg("worker: %s %s", out ? out : "", err ? err : "");
	if (!err || !strstr(err, "retrying"))
		fail_msg("the worker never met the coordinator's absence: %s", err ? err : "");
	free(out);
	free(err);
	kill(f->fake, SIGTERM);
	waitpid(f->fake, NULL, 0);
	f->fake = 0;
	assert_int_equal(thought(book) - before, 120);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
}

/* deploy/slurm/joseki-worker.sbatch run as Slurm runs it (bash, the array
 * task's variables): a worker named after the task thinks, SIGTERM (what
 * Slurm sends before the time limit) ends the task with 0. */
static void test_worker__slurm_script_runs_a_worker_and_stops_on_sigterm(void **state)
{
	Fx *f = *state;
	make_positions(f, 6);
	start_fake(f, 0, "", "{\"nodes\": 200}");
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	setenv("JOSEKI_SERVER", url, 1);
	setenv("JOSEKI_TOKEN_FILE", f->token, 1);
	setenv("JOSEKI_BIN", ts_joseki(), 1);
	setenv("SLURM_CPUS_PER_TASK", "2", 1);
	setenv("SLURM_ARRAY_JOB_ID", "777", 1);
	setenv("SLURM_ARRAY_TASK_ID", "5", 1);
	char spool[700];
	snprintf(spool, sizeof spool, "%s.spool", f->out);
	setenv("JOSEKI_SPOOL", spool, 1);
	char *argv[] = {"bash", "deploy/slurm/joseki-worker.sbatch", NULL};
	f->worker = ts_spawn(argv, f->out, f->errf, false);
	assert_true(wait_all_submitted(f, 20));
	term_worker(f);
	json_t *ev = events(f);
	assert_each_once(f, ev);
	const char *name = json_string_value(json_object_get(json_array_get(ev, 0), "worker"));
	assert_non_null(name);
	assert_non_null(strstr(name, "-777-5"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(ev, 0), "max")), 2);
	json_decref(ev);
	/* Its log (the task's output file) says what runs, and how far it got. */
	char *said = ts_read_file(f->errf, NULL);
	assert_non_null(said);
	if (!strstr(said, "-777-5, 2 engines (builtin), for http://127.0.0.1:") ||
	    !strstr(said, " (the end)\n"))
		fail_msg("the task's log: %s", said);
	free(said);
	/* The worker kept its spool where the script said. */
	struct stat sb;
	assert_int_equal(stat(spool, &sb), 0);
	unsetenv("JOSEKI_SERVER");
	unsetenv("JOSEKI_SPOOL");
}

/* The Slurm script and a binary built for another CPU (make native, copied to
 * a node without its instructions): the worker dies of SIGILL at once, which
 * another start cannot mend, so the task ends with 1 and says what to do
 * instead of starting it again every 10 s. */
static void test_worker__slurm_script_stops_on_a_binary_for_another_cpu(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), bin[600], runs[600], script[1400];
	snprintf(bin, sizeof bin, "%s/joseki-native", dir);
	snprintf(runs, sizeof runs, "%s/runs", dir);
	snprintf(script, sizeof script, "#!/bin/sh\necho run >> %s\nkill -ILL $$\n", runs);
	assert_int_equal(ts_write_file(bin, script, strlen(script)), 0);
	assert_int_equal(chmod(bin, 0755), 0);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "JOSEKI_SERVER=http://127.0.0.1:9 JOSEKI_BIN=%s JOSEKI_SPOOL=%s/spool "
	                 "timeout 30 bash deploy/slurm/joseki-worker.sbatch",
	                 bin, dir);
	if (rc != 1 || !strstr(err, "SIGILL") || !strstr(err, "plain make"))
		fail_msg("sbatch: exit %d, stderr: %s", rc, err);
	char *ran = ts_read_file(runs, NULL);
	assert_non_null(ran);
	assert_string_equal(ran, "run\n"); /* started once, not again */
	free(ran);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

static void test_worker__lease_parser_takes_the_protocol_and_refuses_the_rest(void **state)
{
	(void)state;
	WorkerLease l;
	char err[WORKER_LEASE_ERRLEN];
	const char *good = "{\"lease\":\"00000000000000ab\",\"expires_in\":60,"
	                   "\"positions\":[{\"sfen\":\"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/"
	                   "1B5R1/LNSGKGSNL b - 1\",\"key\":\"0123456789abcdef0123456789abcdef\"}],"
	                   "\"limits\":{\"movetime\":500,\"depth\":9,\"multipv\":99}}";
	assert_int_equal(worker_lease_parse(&l, good, strlen(good), 4, err), 0);
	assert_string_equal(l.id, "00000000000000ab");
	assert_int_equal(l.n, 1);
	assert_int_equal(l.budget.kind, SEARCH_BUDGET_MOVETIME);
	assert_int_equal(l.budget.amount, 500);
	assert_int_equal(l.multipv, SEARCH_MULTIPV_MAX);
	worker_lease_free(&l);
	static const char *const BAD[][2] = {
	    {"{", "bad JSON"},
	    {"[]", "not a JSON object"},
	    {"{\"lease\":\"../x\",\"positions\":[],\"limits\":{\"nodes\":1}}", "\"lease\""},
	    {"{\"lease\":\"a\",\"positions\":[],\"limits\":{\"nodes\":1}}", "positions"},
	    {"{\"lease\":\"a\",\"positions\":[{\"sfen\":\"x\",\"key\":\"12\"}],"
	     "\"limits\":{\"nodes\":1}}",
	     "positions[0].key"},
	    {"{\"lease\":\"a\",\"positions\":[{\"sfen\":3,\"key\":\"12\"}],"
	     "\"limits\":{\"nodes\":1}}",
	     "positions[0].sfen"},
	    {"{\"lease\":\"a\",\"positions\":[{\"sfen\":\"x\",\"key\":"
	     "\"0123456789abcdef0123456789abcdef\"}],\"limits\":{\"multipv\":1}}",
	     "none of nodes"},
	    {"{\"lease\":\"a\",\"positions\":[{\"sfen\":\"x\",\"key\":"
	     "\"0123456789abcdef0123456789abcdef\"}],\"limits\":{\"nodes\":\"9\"}}",
	     "limits.nodes"},
	    {"{\"lease\":\"a\",\"positions\":[{\"sfen\":\"x\",\"key\":"
	     "\"0123456789abcdef0123456789abcdef\"},{\"sfen\":\"x\",\"key\":"
	     "\"0123456789abcdef0123456789abcdef\"}],\"limits\":{\"nodes\":5}}",
	     "1..1 entries"},
	};
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
		int rc = worker_lease_parse(&l, BAD[i][0], strlen(BAD[i][0]), 1, err);
		if (rc != -1 || !strstr(err, BAD[i][1]))
			fail_msg("case %zu: rc %d, message '%s' (wanted '%s')", i, rc, err,
			         BAD[i][1]);
	}
}

static void test_worker__result_encoding_follows_the_protocol(void **state)
{
	(void)state;
	Position *p = malloc(sizeof *p);
	SearchResult *r = calloc(1, sizeof *r);
	assert_int_equal(position_parse(p, "startpos", NULL), 0);
	r->nlines = 2;
	assert_int_equal(usi_move_parse_legal(&r->lines[0].move, p, "7g7f", 4, NULL), 0);
	snprintf(r->lines[0].usi, sizeof r->lines[0].usi, "7g7f");
	r->lines[0].value = 99999; /* out of range: clamped */
	r->lines[0].depth = 5000;
	r->lines[0].nodes = 1234;
	r->lines[0].pv_len = 1;
	r->lines[0].pv[0] = r->lines[0].move;
	r->lines[1] = r->lines[0];
	r->lines[1].mate = true;
	r->lines[1].mate_plies = -7;
	r->lines[1].value = search_mate_value(-7, true);
	json_t *j = worker_result_json("0123456789abcdef0123456789abcdef", r, NULL);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"key\":\"0123456789abcdef0123456789abcdef\",\"moves\":["
	                       "{\"depth\":1000,\"move\":\"7g7f\",\"nodes\":1234,\"pv\":\"7g7f\","
	                       "\"score\":{\"cp\":32000}},"
	                       "{\"depth\":1000,\"move\":\"7g7f\",\"nodes\":1234,\"pv\":\"7g7f\","
	                       "\"score\":{\"mate\":-7}}]}");
	free(s);
	json_decref(j);
	j = worker_result_json("0123456789abcdef0123456789abcdef", NULL, "engine crashed");
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
	    s, "{\"failed\":\"engine crashed\",\"key\":\"0123456789abcdef0123456789abcdef\"}");
	free(s);
	json_decref(j);
	free(r);
	free(p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worker__lease_parser_takes_the_protocol_and_refuses_the_rest),
	    cmocka_unit_test(test_worker__result_encoding_follows_the_protocol),
	    cmocka_unit_test(test_worker__slurm_script_stops_on_a_binary_for_another_cpu),
	    cmocka_unit_test_setup_teardown(
	        test_worker__every_position_submitted_once_with_legal_moves, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_worker__backs_off_on_204_503_and_closed_connections, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__refused_submit_is_retried_result_by_result,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__results_kept_while_the_coordinator_is_away,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__refused_token_ends_at_once_with_a_message,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__sigterm_aborts_the_lease_and_exits_0,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_worker__sigterm_during_an_acquire_aborts_the_lease_it_brings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__crashing_positions_are_reported_failed,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_worker__progress_goes_to_the_callback_and_null_is_quiet, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_worker__sigterm_submits_what_is_finished, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_worker__slurm_script_runs_a_worker_and_stops_on_sigterm, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_worker__against_the_real_coordinator_through_a_restart, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
