/*
 * tests/server/test_work.c — the cluster work endpoints of `joseki serve
 * --work`: the real binary as a child on a free 127.0.0.1 port, driven with
 * libcurl. Tokens (missing, wrong, revoked → 401, nothing written), a
 * submission outside the worker's lease (400), malformed bodies (400/413, the
 * coordinator keeps serving), and a SIGKILL of the coordinator (restarted, it
 * keeps its leases and takes their results).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "cluster/coord.h"

#include "shogi/clock.h"
#include "shogi/position.h"
#include "shogi/notation.h"
#include "shogi/movegen.h"
#include "tests/support/support.h"

typedef struct {
	pid_t pid;
	int port;
	FILE *log;
} Coordinator;

static pid_t g_child;

static void kill_child(void)
{
	if (g_child > 0) kill(g_child, SIGKILL);
}

/* A test's teardown: a coordinator a failed assertion left running is killed
 * (the next test sets g_child anew, so atexit would not find it). */
static int kill_left(void **state)
{
	(void)state;
	if (g_child > 0) {
		kill(g_child, SIGKILL);
		waitpid(g_child, NULL, 0);
	}
	g_child = 0;
	return 0;
}

/* A book from the floodgate fixtures and two tokens (t1, t2) in dir/b/tokens. */
static char *make_book(char tok1[80], char tok2[80])
{
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s/b tests/data/floodgate --quiet >/dev/null",
	            ts_joseki(), dir) != 0)
		fail_msg("ingest: %s", err);
	free(err);
	char *toks[2] = {tok1, tok2};
	for (int i = 0; i < 2; i++) {
		err = NULL;
		if (ts_runf(&out, &err, "%s token add %s/b/tokens w%d", ts_joseki(), dir, i + 1) !=
		    0)
			fail_msg("token add: %s", err);
		assert_int_equal(strlen(out), 65); /* 64 hex digits and a newline */
		memcpy(toks[i], out, 64);
		toks[i][64] = 0;
		free(out);
		free(err);
	}
	return dir;
}

/* The coordinator over dir/b with the options extra too, keeping what it
 * said up to its start line in said (unless NULL). */
static void start_opts(Coordinator *s, const char *dir, const char *extra, char *said, size_t len)
{
	char book[600], opts[600];
	snprintf(book, sizeof book, "%s/b", dir);
	/* Without spot checks: every result accepted is stored at once (they
	 * are tested in tests/cluster/test_spot.c). */
	snprintf(opts, sizeof opts,
	         "--work --quiet --depth 3 --lease-seconds 600 --history-seconds 1 --spot-rate 0 "
	         "--spot-new-rate 0 %s",
	         extra);
	s->port = ts_serve_start_said(&s->pid, &s->log, book, opts, said, len);
	g_child = s->pid;
	if (!s->port) fail_msg("serve --work did not say where it listens");
}

static void start_said(Coordinator *s, const char *dir, char *said, size_t len)
{
	start_opts(s, dir, "", said, len);
}

static void start(Coordinator *s, const char *dir)
{
	start_said(s, dir, NULL, 0);
}

/* Every line of text fits the console's 120 columns (issue 44); what names
 * the text in the failure. */
static void lines_fit(const char *what, const char *text)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n > 120) fail_msg("%s: a line of %zu columns: %.*s", what, n, (int)n, l);
		l = nl ? nl + 1 : NULL;
	}
}

static void stop(Coordinator *s, int sig)
{
	kill(s->pid, sig);
	int st = 0;
	waitpid(s->pid, &st, 0);
	g_child = 0;
	if (sig == SIGTERM) {
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	fclose(s->log);
}

/* stop(s, SIGTERM), keeping what the coordinator said on stderr until it
 * exited (the lines after the one that named its port) in out. */
static void stop_said(Coordinator *s, char *out, size_t len)
{
	kill(s->pid, SIGTERM);
	size_t n = 0;
	char line[2048];
	out[0] = 0;
	while (fgets(line, sizeof line, s->log)) {
		size_t k = strlen(line);
		if (n + k < len) {
			memcpy(out + n, line, k + 1);
			n += k;
		}
	}
	int st = 0;
	waitpid(s->pid, &st, 0);
	g_child = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	fclose(s->log);
}

/* Whether call_retry's last answer had a Content-Type (which a 204 has no
 * content to have). */
static bool last_had_type;

/* The Retry-After of an answer (0: none), and whether it has a Content-Type. */
static size_t grab_retry(char *buf, size_t size, size_t n, void *ud)
{
	size_t len = size * n;
	if (len > 12 && !strncasecmp(buf, "Retry-After:", 12)) *(long *)ud = atol(buf + 12);
	if (len > 13 && !strncasecmp(buf, "Content-Type:", 13)) last_had_type = true;
	return len;
}

/* When this thread's t_sent is set, call_retry sets it true once the
 * request's body has gone (note_sent: libcurl's progress callback). */
static _Thread_local atomic_bool *t_sent;

static int note_sent(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                     curl_off_t ulnow)
{
	(void)dltotal;
	(void)dlnow;
	if (ultotal > 0 && ulnow == ultotal) atomic_store((atomic_bool *)ud, true);
	return 0;
}

/* One request with an optional token; the status, *out the body (free it),
 * *retry its Retry-After (0: none) unless retry is NULL. */
static long call_retry(const Coordinator *s, const char *token, const char *method,
                       const char *path, const char *body, size_t len, char **out, long *retry)
{
	CURL *c = curl_easy_init();
	char url[512], auth[200];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port, path);
	struct curl_slist *h = NULL;
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	TsBuf b = {NULL, 0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (retry) {
		*retry = 0;
		last_had_type = false;
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grab_retry);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, retry);
	}
	if (t_sent) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, note_sent);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, t_sent);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK) fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (out)
		*out = b.data ? b.data : strdup("");
	else
		free(b.data);
	return status;
}

static long call(const Coordinator *s, const char *token, const char *method, const char *path,
                 const char *body, size_t len, char **out)
{
	return call_retry(s, token, method, path, body, len, out, NULL);
}

static long post(const Coordinator *s, const char *token, const char *path, const char *body,
                 char **out)
{
	return call(s, token, "POST", path, body, body ? strlen(body) : 0, out);
}

static long acquire_raw(const Coordinator *s, const char *token, char **out, long *retry)
{
	static const char body[] = "{\"worker\": \"w\", \"max\": 2}";
	return call_retry(s, token, "POST", "/v1/work/acquire", body, strlen(body), out, retry);
}

/* Expects status want and a JSON error mentioning says. */
static void expect(const Coordinator *s, const char *token, const char *path, const char *body,
                   long want, const char *says)
{
	char *out;
	long st = post(s, token, path, body, &out);
	if (st != want) fail_msg("POST %s: %ld, %ld expected (%s)", path, st, want, out);
	json_t *j = json_loads(out, 0, NULL);
	if (!j || !json_is_string(json_object_get(j, "error")))
		fail_msg("POST %s: not a JSON error: %s", path, out);
	if (says && !strstr(json_string_value(json_object_get(j, "error")), says))
		fail_msg("POST %s: '%s' does not say '%s'", path, out, says);
	json_decref(j);
	free(out);
}

/* GET /v1/work/status with token: the object (decref it). */
static json_t *status(const Coordinator *s, const char *token)
{
	char *out;
	assert_int_equal(call(s, token, "GET", "/v1/work/status", NULL, 0, &out), 200);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	free(out);
	return j;
}

static long long jget(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);
	if (b) v = json_object_get(v, b);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

/* Acquires with token: the answer (decref it); fails unless 200. */
static json_t *acquire(const Coordinator *s, const char *token, const char *worker, int max)
{
	char body[200], *out;
	snprintf(body, sizeof body, "{\"worker\": \"%s\", \"max\": %d, \"engine\": \"t\"}", worker,
	         max);
	long st = post(s, token, "/v1/work/acquire", body, &out);
	/* A 204 while a search is under way (selection in slices; seldom on
	 * these small books, but a loaded machine stretches a slice): again. */
	for (int i = 0; st == 204 && i < 400; i++) {
		free(out);
		usleep(50000);
		st = post(s, token, "/v1/work/acquire", body, &out);
	}
	if (st != 200) fail_msg("acquire: %ld %s", st, out);
	json_t *j = json_loads(out, 0, NULL);
	free(out);
	assert_non_null(j);
	return j;
}

static const char *lease_id(json_t *acq)
{
	return json_string_value(json_object_get(acq, "lease"));
}

static const char *acq_key(json_t *acq, size_t i)
{
	return json_string_value(
	    json_object_get(json_array_get(json_object_get(acq, "positions"), i), "key"));
}

/* A submit body: for each key a result with the given move. */
static char *result_body(const char *key, const char *move)
{
	char *b = malloc(512);
	snprintf(
	    b, 512,
	    "{\"worker\": \"w\", \"results\": [{\"key\": \"%s\", \"moves\": [{\"move\": "
	    "\"%s\", \"score\": {\"cp\": 35}, \"depth\": 3, \"nodes\": 1000, \"pv\": \"%s\"}]}]}",
	    key, move, move);
	return b;
}

/* Answers every position of lease a (REPLY moves from shift on: the
 * positions are White's after one Black move), each submit 204. */
static void answer_lease(const Coordinator *s, const char *token, json_t *a, size_t shift)
{
	static const char *const REPLY[] = {"8c8d", "3c3d", "4a3b", "7a6b", "5c5d", "1c1d"};
	char sub[64], *out = NULL;
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	size_t n = json_array_size(json_object_get(a, "positions"));
	for (size_t i = 0; i < n; i++) {
		char *body = result_body(acq_key(a, i), REPLY[(i + shift) % 6]);
		if (post(s, token, sub, body, &out) != 204) fail_msg("submit: %s", out);
		free(out);
		free(body);
	}
}

static bool startpos_thought(const char *dir)
{
	json_t *q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
	json_t *d = json_object_get(q, "thought_depth"); /* only for thought positions */
	bool th = json_is_integer(d) && json_integer_value(d) > 0;
	json_decref(q);
	return th;
}

typedef struct {
	char *dir;
	char t1[80], t2[80];
	Coordinator s;
	bool running;
} Fx;

/* Each test: a fresh book with two tokens and its coordinator running. */
static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = make_book(f->t1, f->t2);
	start(&f->s, f->dir);
	f->running = true;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	if (f->running) stop(&f->s, SIGTERM);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Stops the coordinator (SIGTERM: it must exit 0) before the test looks at the book. */
static void finish(Fx *f)
{
	stop(&f->s, SIGTERM);
	f->running = false;
}

/*
 * An abort may come with an empty body: the lease's positions go back to the
 * queue at once, the lease counts as returned, and the request is the lease's
 * worker's: the status lists no second worker named after the token (w1) as
 * it did.
 */
static void test_work__an_abort_without_a_body_returns_the_lease(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	json_t *a = acquire(s, f->t1, "curl-a", 2);
	size_t n = json_array_size(json_object_get(a, "positions"));
	assert_true(n >= 1);
	char path[64];
	snprintf(path, sizeof path, "/v1/work/abort/%s", lease_id(a));
	json_decref(a);
	/* Done: nothing to try again later (no Retry-After, which an acquire's 204 has). */
	char *out;
	long retry;
	assert_int_equal(call_retry(s, f->t1, "POST", path, "", 0, &out, &retry), 204);
	assert_int_equal(retry, 0);
	assert_false(last_had_type); /* no content, so no type of it */
	free(out);
	json_t *st = status(s, f->t1);
	assert_int_equal(jget(st, "leases", "live"), 0);
	assert_int_equal(jget(st, "leases", "expired"), 0);
	assert_int_equal(jget(st, "leases", "returned"), 1);
	assert_true(jget(st, "queue", NULL) >= (long long)n);
	assert_int_equal(jget(st, "failed_tries", NULL), 0);
	json_t *w = json_object_get(st, "workers");
	assert_int_equal(json_array_size(w), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(w, 0), "name")),
	                    "curl-a");
	json_decref(st);
}

static void test_work__tokens_missing_wrong_or_revoked_get_401_and_write_nothing(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	const char *t1 = f->t1, *t2 = f->t2, *dir = f->dir;
	const char *acq = "{\"worker\": \"w\", \"max\": 4}";
	static const char WRONG[] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	expect(s, NULL, "/v1/work/acquire", acq, 401, "token");
	expect(s, WRONG, "/v1/work/acquire", acq, 401, "token");
	expect(s, "", "/v1/work/acquire", acq, 401, "token");
	assert_int_equal(call(s, NULL, "GET", "/v1/work/status", NULL, 0, NULL), 401);
	/* The read-only API stays open. */
	assert_int_equal(call(s, NULL, "GET", "/healthz", NULL, 0, NULL), 200);
	/* Nothing was leased by those: t2's first lease is the first ever issued. */
	json_t *a2 = acquire(s, t2, "w2", 4);
	assert_string_equal(lease_id(a2), "0000000000000001");
	/* t2 revoked (its line deleted; the file is re-read): 401 from then on. */
	char path[600], *file;
	snprintf(path, sizeof path, "%s/b/tokens", dir);
	size_t len;
	assert_non_null(file = ts_read_file(path, &len));
	char *nl = strchr(file, '\n');
	assert_non_null(nl);
	assert_int_equal(ts_write_file(path, file, (size_t)(nl + 1 - file)), 0);
	free(file);
	char sub[64];
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a2));
	char *body = result_body(acq_key(a2, 0), "7g7f");
	expect(s, t2, sub, body, 401, "token");
	expect(s, t2, "/v1/work/acquire", acq, 401, "token");
	expect(s, NULL, sub, body, 401, "token");
	json_t *st = status(s, t1);
	assert_int_equal(jget(st, "results", NULL), 0);
	json_decref(st);
	finish(f);
	assert_false(startpos_thought(dir));
	free(body);
	json_decref(a2);
}

/* Waits (at most ms) for pid to exit: its status, or -1 when it had not (it
 * is then killed). */
static int exit_within(pid_t pid, int ms)
{
	int64_t end = clock_ms() + ms;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 || clock_ms() >= end) break;
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* Starts `serve BOOK --work --quiet EXTRA` with its stderr in the file log. */
static pid_t serve_logged(const char *book, const char *extra, const char *log)
{
	char cmd[2400];
	snprintf(cmd, sizeof cmd, "exec %s serve %s --work --quiet --listen 127.0.0.1:0 %s 2>%s",
	         ts_joseki(), book, extra, log);
	char *argv[] = {"sh", "-c", cmd, NULL};
	return ts_spawn(argv, NULL, NULL, false);
}

/* Occurrences of needle in the file at path. */
static int count_in(const char *path, const char *needle)
{
	char *text = ts_read_file(path, NULL);
	int n = 0;
	for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
	free(text);
	return n;
}

/*
 * The tokens file must be an owner-only regular file: --tokens naming
 * /dev/zero, a FIFO, a directory or a file others may write makes the
 * coordinator refuse to start, at once, naming the file and what to do (it
 * hung for ever before listening, deaf to SIGTERM, or started admitting
 * nobody, or took the file others could add tokens to). Replaced by a link to
 * /dev/zero while it runs, the tokens read before stay in force (every
 * authenticated request hung for ever, also after the real file was back, and
 * SIGTERM did not end the process), which is said once, as is the file read
 * again; SIGTERM then ends it.
 */
static void test_work__a_tokens_file_that_is_not_an_owner_only_regular_file(void **state)
{
	(void)state;
	char t1[80], t2[80], book[600], path[700], log[700], fifo[700], sub[700], lax[700];
	char *dir = make_book(t1, t2);
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(path, sizeof path, "%s/b/tokens", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(sub, sizeof sub, "%s/sub", dir);
	snprintf(lax, sizeof lax, "%s/lax", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s && chmod 666 %s", path, lax, lax), 0);
	const struct {
		const char *file, *says;
	} REFUSED[] = {{lax, "chmod 600"},
	               {"/dev/zero", "a character device"},
	               {fifo, "a FIFO"},
	               {sub, "a directory"}};
	for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++) {
		char extra[800];
		snprintf(extra, sizeof extra, "--tokens %s", REFUSED[i].file);
		pid_t pid = serve_logged(book, extra, log);
		int st = exit_within(pid, 60000);
		char *said = ts_read_file(log, NULL);
		if (st != 1 || !strstr(said, REFUSED[i].file) || !strstr(said, REFUSED[i].says))
			fail_msg(
			    "--tokens %s: status %d (1 expected, -1: still running after 60 s), "
			    "said:\n%s",
			    REFUSED[i].file, st, said);
		free(said);
	}
	/* Running: the file replaced by a link to /dev/zero, then by the real one. */
	pid_t pid = serve_logged(book, "", log);
	g_child = pid;
	if (!ts_wait_file(log, 0, "listening on http://127.0.0.1:", 60000))
		fail_msg("serve --work did not start");
	char *said = ts_read_file(log, NULL);
	Coordinator s = {.pid = pid, .port = atoi(strstr(said, "http://127.0.0.1:") + 17)};
	free(said);
	json_decref(status(&s, t1));
	char real[800];
	snprintf(real, sizeof real, "%s.real", path);
	assert_int_equal(rename(path, real), 0);
	assert_int_equal(symlink("/dev/zero", path), 0);
	for (int i = 0; i < 20; i++) json_decref(status(&s, i % 2 ? t1 : t2));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(real, path), 0);
	json_decref(status(&s, t1));
	assert_true(ts_wait_file(log, 0, "read again: 2 tokens", 60000));
	assert_int_equal(count_in(log, "a character device"), 1);
	assert_int_equal(count_in(log, "the tokens read before (2) stay in force"), 1);
	kill(pid, SIGTERM);
	int st = exit_within(pid, 60000);
	g_child = 0;
	if (st != 0) fail_msg("SIGTERM: status %d (-1: still running after 60 s)", st);
	ts_rmtree(dir);
	free(dir);
}

static void test_work__submissions_outside_the_lease_or_malformed_are_refused(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	const char *t1 = f->t1, *t2 = f->t2, *dir = f->dir;
	json_t *a = acquire(s, t1, "w1", 4);
	char sub[64], *body;
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	const char *key = acq_key(a, 0);
	/* A key the lease does not hold (a position two plies in). */
	body = result_body("2ec7d6218a802fbf2587a4868967639f", "3c3d");
	expect(s, t1, sub, body, 400, "not in lease");
	free(body);
	/* Another token's lease: not found for it. */
	body = result_body(key, "7g7f");
	expect(s, t2, sub, body, 404, "not this token's");
	free(body);
	/* An illegal move, a move of the wrong side. */
	body = result_body(key, "5e5d");
	expect(s, t1, sub, body, 400, "legal");
	free(body);
	body = result_body(key, "3c3d");
	expect(s, t1, sub, body, 400, "legal");
	free(body);
	/* Bad JSON, wrong types, out of range, missing fields, unknown lease. */
	static const struct {
		const char *body, *says;
	} BAD[] = {
	    {"{\"worker\": \"w\", \"results\": [", "bad JSON"},
	    {"[1, 2]", "object"},
	    {"{\"worker\": 5, \"results\": []}", "worker"},
	    {"{\"worker\": \"w\", \"results\": {}}", "results"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": 12}]}", "key"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": \"7g7f\"}]}",
	     "moves"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"cp\": \"35\"}}]}]}",
	     "integer"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"cp\": 99999}}]}]}",
	     "range"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"mate\": 0}}]}]}",
	     "mate"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"cp\": 1}, \"depth\": -1}]}]}",
	     "depth"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"cp\": 1}, \"pv\": \"2g2f 3c3d\"}]}]}",
	     "pv"},
	    {"{\"worker\": \"w\", \"results\": [{\"key\": \"KEY\", \"moves\": [{\"move\": "
	     "\"7g7f\", "
	     "\"score\": {\"cp\": 1}}], \"failed\": \"x\"}]}",
	     "both"},
	};
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
		char b[1024], *p;
		snprintf(b, sizeof b, "%s", BAD[i].body);
		if ((p = strstr(b, "KEY"))) {
			memmove(p + 32, p + 3, strlen(p + 3) + 1);
			memcpy(p, key, 32);
		}
		expect(s, t1, sub, b, 400, BAD[i].says);
	}
	expect(s, t1, "/v1/work/acquire", "{\"worker\": \"w\", \"max\": 257}", 400, "max");
	expect(s, t1, "/v1/work/acquire", "{\"max\": 2}", 400, "worker");
	body = result_body(key, "7g7f");
	expect(s, t1, "/v1/work/submit/00000000000000ff", body, 404, "never issued");
	expect(s, t1, "/v1/work/submit/nothex", body, 404, "work path");
	free(body);
	/* Huge arrays: 300 results, 100 moves in one result. */
	size_t cap = 2 * 1024 * 1024;
	char *big = malloc(cap);
	int n = snprintf(big, cap, "{\"worker\": \"w\", \"results\": [");
	for (int i = 0; i < 300; i++)
		n += snprintf(big + n, cap - (size_t)n, "%s{\"key\": \"%s\", \"failed\": \"x\"}",
		              i ? "," : "", key);
	snprintf(big + n, cap - (size_t)n, "]}");
	expect(s, t1, sub, big, 400, "at most");
	n = snprintf(big, cap, "{\"worker\": \"w\", \"results\": [{\"key\": \"%s\", \"moves\": [",
	             key);
	for (int i = 0; i < 100; i++)
		n += snprintf(big + n, cap - (size_t)n,
		              "%s{\"move\": \"7g7f\", \"score\": {\"cp\": 1}}", i ? "," : "");
	snprintf(big + n, cap - (size_t)n, "]}]}");
	expect(s, t1, sub, big, 400, "at most");
	/* More than 1 MiB: 413. */
	memset(big, ' ', cap - 1);
	big[0] = '{';
	big[cap - 2] = '}';
	big[cap - 1] = 0;
	expect(s, t1, sub, big, 413, "1 MiB");
	free(big);
	/* Nothing was written; the coordinator still serves and takes a good body. */
	json_t *st = status(s, t1);
	assert_int_equal(jget(st, "results", NULL), 0);
	assert_int_equal(jget(st, "leases", "live"), 1);
	json_decref(st);
	body = result_body(key, "7g7f");
	assert_int_equal(post(s, t1, sub, body, NULL), 204);
	assert_int_equal(post(s, t1, sub, body, NULL), 204); /* idempotent */
	free(body);
	st = status(s, t1);
	assert_int_equal(jget(st, "results", NULL), 1);
	json_decref(st);
	finish(f);
	assert_true(startpos_thought(dir));
	json_decref(a);
}

/* The start position (a fresh book's first leaf), thought: three moves. */
static void think_start(const Coordinator *s, const char *token)
{
	json_t *a = acquire(s, token, "w1", 4);
	char sub[64], *body = malloc(1024), *out = NULL;
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	snprintf(body, 1024,
	         "{\"worker\": \"w1\", \"results\": [{\"key\": \"%s\", \"moves\": ["
	         "{\"move\": \"7g7f\", \"score\": {\"cp\": 30}, \"depth\": 3},"
	         "{\"move\": \"2g2f\", \"score\": {\"cp\": 20}, \"depth\": 3},"
	         "{\"move\": \"5g5f\", \"score\": {\"cp\": 10}, \"depth\": 3}]}]}",
	         acq_key(a, 0));
	assert_int_equal(post(s, token, sub, body, &out), 204);
	free(out);
	free(body);
	json_decref(a);
}

/* `joseki check` of book passes, saying that a minimax run did not finish
 * exactly when unfinished. */
static void check_passes(const char *book, bool unfinished)
{
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s check %s", ts_joseki(), book), 0);
	if (unfinished)
		assert_non_null(
		    strstr(out, "a minimax run on this book was stopped before its end"));
	else
		assert_null(strstr(out, "minimax run"));
	free(out);
	free(err);
}

/*
 * A minimax that must do the whole book (here: the book never had one) runs as
 * a `joseki minimax` child process, not on the coordinator's thread (its
 * allocations held the service up for seconds on a large book): the
 * coordinator says so, the run leaves the book with minimax's state (the next
 * run is incremental), and the coordinator goes on serving.
 */
static void test_work__a_whole_book_minimax_runs_in_a_child_process(void **state)
{
	(void)state;
	char t1[80], t2[80], book[600];
	char *dir = make_book(t1, t2);
	snprintf(book, sizeof book, "%s/b", dir);
	Coordinator s;
	s.port = ts_serve_start(&s.pid, &s.log, book,
	                        "--work --depth 3 --lease-seconds 600 --minimax-seconds 1");
	g_child = s.pid;
	if (!s.port) fail_msg("serve --work did not say where it listens");
	think_start(&s, t1);
	assert_true(ts_wait_output(
	    s.log, "the whole book (no earlier minimax run), in child process", 30000));
	/* The child's summary, on the coordinator's stderr; the service goes on. */
	assert_true(ts_wait_output(s.log, "(whole book: no earlier minimax run)", 30000));
	json_t *st = status(&s, t1);
	assert_true(jget(st, "minimax_runs", NULL) >= 1);
	json_decref(st);
	json_t *a = acquire(&s, t1, "w2", 2);
	json_decref(a);
	stop(&s, SIGTERM);
	json_t *mm = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_true(json_is_true(json_object_get(mm, "incremental")));
	json_decref(mm);
	check_passes(book, false);
	ts_rmtree(dir);
	free(dir);
}

/* Submits for lease a, for each of its positions, its first legal move, scored 10. */
static void answer_first_legal(const Coordinator *s, const char *token, json_t *a)
{
	json_t *ps = json_object_get(a, "positions");
	size_t n = json_array_size(ps), cap = 256 + n * 256, len = 0;
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	char usi[USI_MOVE_MAX], sub[64], *body = malloc(cap);
	assert_non_null(pos);
	assert_non_null(body);
	len += (size_t)snprintf(body, cap, "{\"worker\": \"w1\", \"results\": [");
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(ps, i);
		assert_int_equal(
		    sfen_parse(pos, json_string_value(json_object_get(p, "sfen")), NULL, NULL), 0);
		assert_true(movegen_legal(pos, mv) > 0);
		usi_move_write(mv[0], usi);
		len += (size_t)snprintf(
		    body + len, cap - len,
		    "%s{\"key\": \"%s\", \"moves\": [{\"move\": \"%s\", \"score\": {\"cp\": 10}, "
		    "\"depth\": 3}]}",
		    i ? ", " : "", json_string_value(json_object_get(p, "key")), usi);
	}
	snprintf(body + len, cap - len, "]}");
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	assert_int_equal(post(s, token, sub, body, NULL), 204);
	free(body);
	free(pos);
}

/* A coordinator killed (kill -9) while its whole-book minimax child runs
 * takes the child with it: the child stops as on SIGTERM (nothing lost)
 * rather than writing on beside the next coordinator, and the book passes
 * check, its run marked stopped for the next to mend. */
static void test_work__a_killed_coordinators_minimax_child_stops_too(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], tok[80], *out = NULL, *err = NULL;
	snprintf(book, sizeof book, "%s/b", dir);
	/* Large enough that its whole-book run outlasts the kill. */
	if (ts_runf(NULL, &err, "%s synth %s --positions 600000 --seed 3 --quiet >/dev/null",
	            ts_joseki(), book) != 0)
		fail_msg("synth: %s", err);
	free(err);
	assert_int_equal(ts_runf(&out, NULL, "%s token add %s/tokens w1", ts_joseki(), book), 0);
	memcpy(tok, out, 64);
	tok[64] = 0;
	free(out);
	Coordinator s;
	s.port = ts_serve_start(&s.pid, &s.log, book,
	                        "--work --depth 3 --lease-seconds 600 --minimax-seconds 1");
	g_child = s.pid;
	if (!s.port) fail_msg("serve --work did not say where it listens");
	json_t *a = acquire(&s, tok, "w1", 4);
	answer_first_legal(&s, tok, a);
	json_decref(a);
	char *text = NULL;
	size_t len = 0;
	if (!ts_read_until(s.log, &text, &len, " (--memory", 60000))
		fail_msg("no child started: %s", text ? text : "");
	const char *at = strstr(text, " in child process ");
	pid_t child = (pid_t)atoi(at + strlen(" in child process "));
	assert_true(child > 0);
	free(text);
	text = NULL;
	len = 0;
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	g_child = 0;
	/* The child says it stopped, on the stderr it shares with its coordinator
	 * (the log's pipe ends once it is gone too). */
	int64_t end = clock_ms() + 60000;
	for (; kill(child, 0) == 0; usleep(50000))
		if (clock_ms() > end)
			fail_msg("the child %d still runs 60 s after its coordinator died",
			         (int)child);
	ts_read_until(s.log, &text, &len, "\x01", 10000); /* to its end */
	fclose(s.log);
	if (!text || !strstr(text, "by SIGTERM; nothing is lost"))
		fail_msg("the child's stderr: %s", text ? text : "");
	free(text);
	char *cout = NULL;
	assert_int_equal(ts_runf(&cout, NULL, "%s check %s", ts_joseki(), book), 0);
	free(cout);
	json_t *mm = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_false(json_is_true(json_object_get(mm, "incremental")));
	json_decref(mm);
	ts_rmtree(dir);
	free(dir);
}

/* Results a coordinator stored and did not back up before its stop (its
 * minimax due only every 600 s) are backed up by the next coordinator's
 * first run, with no result of its own (it waited for one: the book served
 * values behind its records for as long as no worker came). */
static void test_work__a_restarted_coordinator_backs_up_what_the_last_one_left(void **state)
{
	(void)state;
	/* A book minimax never ran on (its first run the whole book, in a child
	 * process), then one it ran on (incremental). */
	for (int ran = 0; ran < 2; ran++) {
		char t1[80], t2[80], book[600];
		char *dir = make_book(t1, t2);
		snprintf(book, sizeof book, "%s/b", dir);
		if (ran)
			assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --quiet >/dev/null",
			                         ts_joseki(), book),
			                 0);
		Coordinator s;
		start_opts(&s, dir, "--minimax-seconds 600", NULL, 0);
		json_t *a = acquire(&s, t1, "w1", 4);
		answer_first_legal(&s, t1, a);
		json_decref(a);
		char said[8192];
		stop_said(&s, said, sizeof said);
		if (!strstr(said, ran ? " since its last minimax run"
		                      : "no minimax run has backed its analyses up yet"))
			fail_msg("said at the stop:\n%s", said);
		start_opts(&s, dir, "--minimax-seconds 1", NULL, 0);
		/* Its first run, started and ended with no result of its own. */
		for (int w = 0;; w++) {
			if (w == 1200) fail_msg("no minimax run ended in 60 s");
			usleep(50000);
			json_t *st = status(&s, t1);
			bool ended = jget(st, "minimax_runs", NULL) >= 1 &&
			             json_is_false(json_object_get(st, "minimax_running"));
			assert_int_equal(jget(st, "results", NULL), 0);
			json_decref(st);
			if (ended) break;
		}
		stop_said(&s, said, sizeof said);
		if (strstr(said, "since its last minimax run") || strstr(said, "no minimax run"))
			fail_msg("said at the stop:\n%s", said);
		check_passes(book, false);
		ts_rmtree(dir);
		free(dir);
	}
}

/* Starts a coordinator on book (serve's arguments extra) and submits one
 * result with token: its first minimax run is then due. */
static void serve_one_result(Coordinator *s, const char *book, const char *token, const char *extra)
{
	s->port = ts_serve_start(&s->pid, &s->log, book, extra);
	g_child = s->pid;
	if (!s->port) fail_msg("serve --work did not say where it listens");
	json_t *a = acquire(s, token, "w1", 1);
	answer_first_legal(s, token, a);
	json_decref(a);
}

/* The one child process of pid (the coordinator's minimax child), as its
 * threads' /proc children lists say; 0 while it has none. */
static pid_t child_of(pid_t pid)
{
	char path[96];
	pid_t found = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d) return 0;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.') continue;
		char cp[320];
		snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", (int)pid, de->d_name);
		FILE *f = fopen(cp, "r");
		int c = 0;
		if (f && fscanf(f, "%d", &c) == 1) found = c;
		if (f) fclose(f);
	}
	closedir(d);
	return found;
}

/* A line of /proc/PID/status starting with field ("State:", "ShdPnd:"), or
 * "" when the process is gone. */
static void proc_status(pid_t pid, const char *field, char *out, size_t len)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f) return;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, strlen(field))) {
			snprintf(out, len, "%s", line + strlen(field));
			break;
		}
	fclose(f);
}

/* True when the book at path holds the mark of a whole-book minimax run
 * under way (meta "mmfull", put at the run's start, cleared at its end). */
static bool whole_run_marked(const char *path)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, path, &ro, err) < 0) fail_msg("%s", err);
	BookTxn *txn;
	const void *v;
	size_t vl;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	bool marked = bookdb_kv_get(&v, &vl, txn, BOOKDB_META, "mmfull", 6) == 0;
	bookdb_txn_abort(txn);
	bookdb_free(db);
	return marked;
}

/*
 * A coordinator stopped (SIGTERM) while its whole-book minimax child runs (a
 * 1 M-position synthetic book, never backed up) stops the child and exits;
 * the book says the run did not finish until the next run, a whole-book one,
 * has done it. The stop must land while the child's run is under way on any
 * machine, however loaded: the test waits until the child has marked the
 * book (its run has begun), holds it there (SIGSTOP), sends SIGTERM to the
 * coordinator, waits until the child has the coordinator's SIGTERM pending,
 * and only then lets it go on (SIGCONT). (It used to send SIGTERM as soon as
 * the coordinator said it had started the child: on a loaded machine the stop
 * came before the child had begun its run or after it had ended.)
 */
static void test_work__a_stop_stops_the_whole_book_child(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], *out = NULL, *err = NULL, tok[80];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, &err, "%s synth %s --positions 1000000 --seed 5 --quiet",
	                         ts_joseki(), book),
	                 0);
	free(err);
	assert_int_equal(ts_runf(&out, &err, "%s token add %s/tokens w1", ts_joseki(), book), 0);
	snprintf(tok, sizeof tok, "%.64s", out);
	free(out);
	free(err);
	Coordinator s;
	serve_one_result(&s, book, tok,
	                 "--work --quiet --depth 3 --lease-seconds 600 --minimax-seconds 1");
	assert_true(ts_wait_output(
	    s.log, "the whole book (no earlier minimax run), in child process", 30000));
	/* The child, once its run has marked the book. */
	pid_t child = 0;
	bool marked = false;
	int64_t end = clock_ms() + 120000;
	while (!marked && clock_ms() < end) {
		if (!child) child = child_of(s.pid);
		marked = child && whole_run_marked(book);
		if (!marked) usleep(2000);
	}
	if (!marked) fail_msg("the minimax child (pid %d) never marked the book", (int)child);
	/* Held, with its mark still there: its run is under way and stays so. */
	char st[256];
	assert_int_equal(kill(child, SIGSTOP), 0);
	end = clock_ms() + 60000;
	for (;;) {
		proc_status(child, "State:", st, sizeof st);
		if (strchr(st, 'T') || !st[0] || clock_ms() >= end) break;
		usleep(1000);
	}
	if (!strchr(st, 'T')) fail_msg("the minimax child did not stop: state '%s'", st);
	if (!whole_run_marked(book)) fail_msg("the minimax child ended its run before it was held");
	kill(s.pid, SIGTERM);
	/* The coordinator's SIGTERM (15: bit 0x4000) waits in the held child. */
	bool pending = false;
	end = clock_ms() + 60000;
	while (!pending && clock_ms() < end) {
		proc_status(child, "ShdPnd:", st, sizeof st);
		pending = strtoull(st, NULL, 16) & (1ull << (SIGTERM - 1));
		if (!pending) usleep(2000);
	}
	if (!pending) fail_msg("the coordinator did not send its minimax child SIGTERM");
	double t0 = clock_ms_f();
	assert_int_equal(kill(child, SIGCONT), 0);
	assert_true(ts_wait_output(s.log, "stopped; the next run does it again", 60000));
	int wst = 0;
	waitpid(s.pid, &wst, 0);
	g_child = 0;
	fclose(s.log);
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	print_message("the child's SIGTERM delivered to the coordinator's exit: %.0f ms\n",
	              clock_ms_f() - t0);
	check_passes(book, true);
	/* (The book never had a minimax: that is the reason the next run gives.) */
	json_t *mm = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_true(json_is_false(json_object_get(mm, "incremental")));
	json_decref(mm);
	check_passes(book, false);
	ts_rmtree(dir);
	free(dir);
}

static void test_work__a_coordinator_killed_with_sigkill_keeps_its_leases(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	const char *t1 = f->t1, *t2 = f->t2, *dir = f->dir;
	/* The start position, thought; then a lease of three of its children. */
	think_start(s, t1);
	json_t *a = acquire(s, t1, "w1", 3);
	char sub[64], *body, *out = NULL;
	size_t n = json_array_size(json_object_get(a, "positions"));
	assert_true(n >= 1);
	/* Leases made ahead for the next acquires (none handed out): after a
	 * kill, each is unclaimed, as one perhaps handed out before it. */
	json_t *st = status(s, t1);
	long long ahead = jget(st, "leases", "ahead");
	assert_int_equal(jget(st, "leases", "live"), 1);
	json_decref(st);
	stop(s, SIGKILL);

	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s check %s/b >/dev/null", ts_joseki(), dir), 0);
	free(err);
	start(s, dir);
	st = status(s, t1);
	/* (Those made ahead may have been released in between: 2 s unused.) */
	assert_int_equal(jget(st, "leases", "live"), 1);
	long long unclaimed = jget(st, "leases", "unclaimed");
	assert_true(unclaimed >= 0 && unclaimed <= ahead);
	assert_int_equal(jget(st, "leases", "ahead"), 0);
	/* The selector's figures: its first search (beside the service, from
	 * scratch: no checkpoint was written) done without a provisional leaf,
	 * its graph within its budget; /metrics says the same. Waited for: the
	 * status may come before the search's end. */
	json_t *sel = json_object_get(st, "selector");
	while (!json_is_true(json_object_get(sel, "answered"))) {
		json_decref(st);
		usleep(10000);
		st = status(s, t1);
		sel = json_object_get(st, "selector");
	}
	assert_int_equal(jget(st, "selector", "provisional"), 0);
	assert_int_equal(jget(st, "selector", "provisional_dry"), 0); /* no walk, never dry */
	assert_true(json_is_real(json_object_get(sel, "provisional_dry_s")));
	long long nodes = jget(st, "selector", "nodes");
	assert_true(nodes > 0);
	assert_true(jget(st, "selector", "bytes") > 0);
	assert_true(jget(st, "selector", "bytes") <= jget(st, "selector", "budget"));
	/* Its work: the first search expanded nodes (each record read from the
	 * book), and visited at least those. */
	long long expanded = jget(st, "selector", "expansions");
	assert_true(expanded > 0);
	assert_true(jget(st, "selector", "visits") >= expanded);
	assert_true(jget(st, "selector", "fetches") > 0);
	assert_true(jget(st, "selector", "fetch_misses") >= 0);
	assert_true(jget(st, "selector", "fetch_misses") <= jget(st, "selector", "fetches"));
	assert_true(jget(st, "selector", "bound_hits") >= jget(st, "selector", "path_hits"));
	/* No trim yet: nothing built again. */
	assert_int_equal(jget(st, "selector", "reexpansions"), 0);
	assert_int_equal(jget(st, "selector", "remade"), 0);
	assert_true(jget(st, "selector", "invalidated") >= 0);
	/* The key filter, taken in by the first search: the book's keys. */
	assert_true(jget(st, "selector", "filter_keys") > 0);
	assert_int_equal(jget(st, "selector", "filter_regrows"), 0);
	json_decref(st);
	char *metrics = NULL;
	assert_int_equal(call(s, NULL, "GET", "/metrics", NULL, 0, &metrics), 200);
	/* (The selection beside the service may have met more nodes since.) */
	const char *at = strstr(metrics, "\njoseki_work_selector_nodes ");
	if (!at || atoll(at + strlen("\njoseki_work_selector_nodes ")) < nodes ||
	    !strstr(metrics, "\njoseki_work_provisional_leaves_total 0\n") ||
	    !strstr(metrics, "\njoseki_work_selector_budget_bytes "))
		fail_msg("the selector's lines are not in:\n%s", metrics);
	free(metrics);
	/* Its positions are not handed out again while the lease lives. */
	char *o2;
	long code = post(s, t2, "/v1/work/acquire", "{\"worker\": \"w2\", \"max\": 8}", &o2);
	if (code == 200) {
		json_t *b = json_loads(o2, 0, NULL);
		for (size_t i = 0; i < json_array_size(json_object_get(b, "positions")); i++)
			for (size_t k = 0; k < n; k++)
				assert_string_not_equal(acq_key(b, i), acq_key(a, k));
		json_decref(b);
	} else {
		assert_int_equal(code, 204);
	}
	free(o2);
	/* And the old lease takes its results. */
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	static const char *const REPLY[] = {"8c8d", "3c3d", "4a3b", "7a6b", "5c5d", "1c1d"};
	for (size_t i = 0; i < n; i++) {
		const char *sfen = json_string_value(
		    json_object_get(json_array_get(json_object_get(a, "positions"), i), "sfen"));
		assert_non_null(strstr(sfen, " w "));
		body = result_body(acq_key(a, i), REPLY[i % 6]);
		if (post(s, t1, sub, body, &out) != 204) fail_msg("submit after restart: %s", out);
		free(out);
		free(body);
	}
	st = status(s, t1);
	assert_int_equal(jget(st, "results", NULL), (long long)n);
	assert_int_equal(jget(st, "leases", "live"), code == 200 ? 1 : 0); /* w2's only */
	assert_int_equal(jget(st, "leases", "unclaimed"), unclaimed);
	json_decref(st);
	finish(f);
	assert_int_equal(ts_runf(NULL, &err, "%s check %s/b >/dev/null", ts_joseki(), dir), 0);
	free(err);
	json_decref(a);
}

/*
 * Acquires coming often are answered from leases made ahead (the status's
 * acquired_ahead): the positions of every lease are new, a lease taken by one
 * token refuses the other's results and takes its own, and once every lease
 * is answered none is live. docs/cluster.md, "Leases, expiry, restarts".
 */
static void submit_some_moves(const Coordinator *s, const char *token, const char *text);

static void test_work__frequent_acquires_take_leases_made_ahead(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	think_start(s, f->t1);
	enum { MAXKEYS = 4000 };
	char(*seen)[KEY_HEX_LEN] = malloc(MAXKEYS * sizeof *seen);
	assert_non_null(seen);
	size_t nseen = 0;
	long long ahead = 0;
	int leases = 0, refused = 0;
	for (int i = 0; i < 1000 && (ahead < 3 || leases < 20); i++) {
		const char *tok = i % 2 ? f->t2 : f->t1, *other = i % 2 ? f->t1 : f->t2;
		char *out = NULL;
		long retry;
		long code = acquire_raw(s, tok, &out, &retry);
		if (code == 204) {
			free(out);
			usleep(2000);
			continue;
		}
		if (code != 200) fail_msg("acquire: %ld %s", code, out);
		json_t *a = json_loads(out, 0, NULL);
		assert_non_null(a);
		for (size_t k = 0; k < json_array_size(json_object_get(a, "positions")); k++) {
			for (size_t j = 0; j < nseen; j++)
				if (!strcmp(seen[j], acq_key(a, k)))
					fail_msg("position %s handed out twice", seen[j]);
			assert_true(nseen < MAXKEYS);
			snprintf(seen[nseen++], KEY_HEX_LEN, "%s", acq_key(a, k));
		}
		/* The other token's results are refused, its own taken. */
		if (leases % 5 == 0) {
			char url[64], *body = result_body(acq_key(a, 0), "1g1f"), *o2 = NULL;
			snprintf(url, sizeof url, "/v1/work/submit/%s", lease_id(a));
			assert_int_equal(post(s, other, url, body, &o2), 404);
			assert_non_null(strstr(o2, "not this token's"));
			free(o2);
			free(body);
			refused++;
		}
		submit_some_moves(s, tok, out);
		json_decref(a);
		free(out);
		leases++;
		if (i % 10 == 9) {
			json_t *st = status(s, f->t1);
			ahead = jget(st, "leases", "acquired_ahead");
			assert_true(jget(st, "leases", "ahead") <= COORD_AHEAD_MAX);
			json_decref(st);
		}
	}
	json_t *st = status(s, f->t1);
	ahead = jget(st, "leases", "acquired_ahead");
	print_message("%d leases, %lld of them made ahead, %zu positions\n", leases, ahead, nseen);
	assert_true(ahead >= 3);
	assert_true(refused >= 4);
	assert_int_equal(jget(st, "leases", "live"), 0);
	assert_int_equal(jget(st, "leases", "unclaimed"), 0);
	assert_int_equal(jget(st, "results", NULL), (long long)nseen + 1); /* + think_start's */
	json_decref(st);
	free(seen);
	finish(f);
}

/* A submission posted from a thread of its own, its answer in code. */
typedef struct {
	const Coordinator *s;
	const char *token;
	char url[64];
	char *body;
	long code;
	atomic_bool sent, answered;
} Pending;

static void *post_pending(void *arg)
{
	Pending *p = arg;
	t_sent = &p->sent;
	p->code = post(p->s, p->token, p->url, p->body, NULL);
	atomic_store(&p->answered, true);
	return NULL;
}

/* Whether some connection to the server at port has bytes it has not read
 * yet (/proc/net/tcp: local port, not listening, rx_queue > 0). */
static bool unread_at(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	assert_non_null(f);
	char line[512];
	bool unread = false;
	while (fgets(line, sizeof line, f)) {
		unsigned lport, st, tx, rx;
		if (sscanf(line, " %*d: %*8x:%x %*8x:%*x %x %x:%x", &lport, &st, &tx, &rx) == 4 &&
		    (int)lport == port && st != 0x0a && rx > 0)
			unread = true;
	}
	fclose(f);
	return unread;
}

/*
 * A request the service thread answers holds no request thread while it
 * waits: with one request thread and the service held in its commit (another
 * process holds the book's write transaction), a submission waits, and an
 * acquire a lease made ahead answers is answered meanwhile. Before, the
 * submission held the only thread, and the acquire waited for the commit.
 * docs/cluster.md, "Leases made ahead".
 */
static void test_work__a_request_with_the_service_holds_no_request_thread(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	stop(s, SIGTERM);
	start_opts(s, f->dir, "--threads 1", NULL, 0);
	think_start(s, f->t1);
	/* Acquires often enough for leases made ahead, and one kept to submit. */
	json_t *kept = acquire(s, f->t1, "w1", 2);
	long long ahead = 0;
	for (int i = 0; i < 400 && ahead < 2; i++) {
		json_t *a = acquire(s, f->t1, "w1", 2);
		char *text = json_dumps(a, 0);
		submit_some_moves(s, f->t1, text);
		free(text);
		json_decref(a);
		json_t *st = status(s, f->t1);
		ahead = jget(st, "leases", "ahead");
		json_decref(st);
	}
	assert_true(ahead >= 2);
	/* The service held: its next commit waits for this transaction. */
	char book[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", f->dir);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	Pending p = {.s = s, .token = f->t1};
	snprintf(p.url, sizeof p.url, "/v1/work/submit/%s", lease_id(kept));
	char usi[16];
	ts_some_move(json_string_value(json_object_get(
	                 json_array_get(json_object_get(kept, "positions"), 0), "sfen")),
	             usi);
	p.body = result_body(acq_key(kept, 0), usi);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, post_pending, &p), 0);
	/* Sent, and read by the server: its one thread has it. */
	while (!atomic_load(&p.sent) || unread_at(s->port)) usleep(1000);
	char *out = NULL;
	long code = acquire_raw(s, f->t2, &out, NULL);
	if (code != 200) fail_msg("acquire while a submission waits: %ld %s", code, out);
	assert_false(atomic_load(&p.answered));
	free(out);
	bookdb_txn_abort(t);
	bookdb_free(db);
	pthread_join(th, NULL);
	assert_int_equal(p.code, 204);
	free(p.body);
	json_decref(kept);
	finish(f);
}

/* GET /v1/work/history (no token): the points, oldest first (decref it). */
static json_t *history(const Coordinator *s)
{
	char *out;
	long code = call(s, NULL, "GET", "/v1/work/history?hours=1", NULL, 0, &out);
	if (code != 200) fail_msg("history: %ld %s", code, out);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_null(strstr(out, "histworker")); /* no worker names without a token */
	free(out);
	json_t *pts = json_object_get(j, "points");
	assert_true(json_is_array(pts));
	for (size_t i = 1; i < json_array_size(pts); i++)
		assert_true(jget(json_array_get(pts, i), "t", NULL) >
		            jget(json_array_get(pts, i - 1), "t", NULL));
	return j;
}

/* The results in the history's points, and the newest point's t. */
static long long history_results(const Coordinator *s, long long *last_t)
{
	json_t *h = history(s), *pts = json_object_get(h, "points");
	long long sum = 0;
	*last_t = 0;
	for (size_t i = 0; i < json_array_size(pts); i++) {
		json_t *p = json_array_get(pts, i);
		sum += jget(p, "results", NULL);
		*last_t = jget(p, "t", NULL);
		assert_true(json_is_string(json_object_get(p, "pv")));
		assert_true(jget(p, "positions", NULL) >= jget(p, "thought", NULL));
	}
	json_decref(h);
	return sum;
}

/* Waits (up to 10 s) for the history to hold a point newer than after with
 * at least want results in all. */
static long long wait_history(const Coordinator *s, long long want, long long after)
{
	long long t = 0, sum = 0;
	for (int i = 0; i < 100; i++) {
		sum = history_results(s, &t);
		if (sum >= want && t > after) return t;
		usleep(100000);
	}
	fail_msg("the history has %lld results up to %lld, %lld after %lld wanted", sum, t, want,
	         after);
	return 0;
}

/* The history needs no token and names no worker; a read-only token sees the
 * status and cannot lease; the points survive a restart of the coordinator
 * and are served by a plain `joseki serve` too. */
static void test_work__history_is_public_read_tokens_only_read_and_it_survives(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	char *out = NULL, *err = NULL, tr[80];
	assert_int_equal(
	    ts_runf(&out, &err, "%s token add %s/b/tokens dash --read", ts_joseki(), f->dir), 0);
	snprintf(tr, sizeof tr, "%.64s", out);
	free(out);
	free(err);
	/* One result: the start position. */
	json_t *a = acquire(s, f->t1, "histworker", 1);
	char sub[64], *body = result_body(acq_key(a, 0), "7g7f");
	snprintf(sub, sizeof sub, "/v1/work/submit/%s", lease_id(a));
	assert_int_equal(post(s, f->t1, sub, body, NULL), 204);
	free(body);
	json_decref(a);
	long long t1 = wait_history(s, 1, 0);
	/* Its last point: the start position thought, the book's value and line
	 * from it (the line is what `joseki query` ranks first, move by move). */
	json_t *h = history(s), *pts = json_object_get(h, "points");
	json_t *last = json_array_get(pts, json_array_size(pts) - 1);
	assert_int_equal(jget(last, "thought", NULL), 1);
	assert_true(json_is_integer(json_object_get(last, "root_value")));
	json_t *q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), f->dir);
	const char *best = json_string_value(json_object_get(q, "bestmove"));
	assert_non_null(best);
	assert_int_equal(strncmp(json_string_value(json_object_get(last, "pv")), best, 4), 0);
	/* ... which root they are of, and the moves as a player writes them
	 * (the query's name for its best move). */
	assert_string_equal(json_string_value(json_object_get(last, "root")),
	                    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1");
	assert_int_equal(jget(last, "roots", NULL), 1);
	const char *name = NULL;
	json_t *mv;
	size_t mi;
	json_array_foreach(json_object_get(q, "moves"), mi, mv)
	{
		if (!strcmp(json_string_value(json_object_get(mv, "move")), best))
			name = json_string_value(json_object_get(mv, "name"));
	}
	assert_non_null(name);
	assert_string_equal(json_string_value(json_array_get(json_object_get(last, "pv_names"), 0)),
	                    name);
	json_decref(q);
	json_decref(h);
	/* Bad hours (plain digits only, as plies): 400; anything but GET: 405. */
	static const char *const BAD_HOURS[] = {"x", "%2B1", "01", "-1", "%201", "1e3", ""};
	for (size_t k = 0; k < sizeof BAD_HOURS / sizeof *BAD_HOURS; k++) {
		char path[64];
		snprintf(path, sizeof path, "/v1/work/history?hours=%s", BAD_HOURS[k]);
		if (call(s, NULL, "GET", path, NULL, 0, NULL) != 400) fail_msg("%s answered", path);
	}
	assert_int_equal(call(s, NULL, "POST", "/v1/work/history", "{}", 2, NULL), 405);
	/* The read token: the status with the worker's name, but no lease. */
	json_t *st = status(s, tr);
	char *text = json_dumps(st, 0);
	assert_non_null(strstr(text, "histworker"));
	free(text);
	json_decref(st);
	expect(s, tr, "/v1/work/acquire", "{\"worker\": \"dash\", \"max\": 4}", 403, "read");
	st = status(s, f->t1);
	assert_int_equal(jget(st, "leases", "live"), 0);
	json_decref(st);
	/* A restart keeps the points; new ones follow. */
	stop(s, SIGTERM);
	start(s, f->dir);
	long long t2 = wait_history(s, 1, t1);
	long long tt;
	assert_true(history_results(s, &tt) >= 1);
	h = history(s);
	pts = json_object_get(h, "points");
	bool kept = false;
	for (size_t i = 0; i < json_array_size(pts); i++)
		kept |= jget(json_array_get(pts, i), "t", NULL) == t1;
	assert_true(kept);
	json_decref(h);
	finish(f);
	/* A plain serve of the book answers the same history. */
	Coordinator plain;
	char book[600];
	snprintf(book, sizeof book, "%s/b", f->dir);
	plain.port = ts_serve_start(&plain.pid, &plain.log, book, "--quiet");
	g_child = plain.pid;
	assert_true(plain.port > 0);
	long long pt;
	assert_true(history_results(&plain, &pt) >= 1);
	assert_true(pt >= t2);
	stop(&plain, SIGTERM);
}

/* Submits a legal move (ts_some_move) for each position of the lease in
 * the acquire answer text, each 204. */
static void submit_some_moves(const Coordinator *s, const char *token, const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	json_t *ps = json_object_get(j, "positions");
	for (size_t k = 0; k < json_array_size(ps); k++) {
		json_t *p = json_array_get(ps, k);
		char usi[16], url[100], *body;
		ts_some_move(json_string_value(json_object_get(p, "sfen")), usi);
		body = result_body(json_string_value(json_object_get(p, "key")), usi);
		snprintf(url, sizeof url, "/v1/work/submit/%s", lease_id(j));
		assert_int_equal(post(s, token, url, body, NULL), 204);
		free(body);
	}
	json_decref(j);
}

/* A synthetic book of n positions at dir/b (its path in book) with a token
 * "w" (64 characters, in tok). */
static void synth_with_token(char *book, size_t cap, const char *dir, int n, int seed, char *tok)
{
	char *out = NULL, *err = NULL;
	snprintf(book, cap, "%s/b", dir);
	if (ts_runf(NULL, &err, "%s synth %s --positions %d --seed %d --quiet", ts_joseki(), book,
	            n, seed) != 0)
		fail_msg("synth: %s", err);
	free(err);
	err = NULL;
	if (ts_runf(&out, &err, "%s token add %s/tokens w", ts_joseki(), book) != 0)
		fail_msg("token add: %s", err);
	memcpy(tok, out, 64);
	tok[64] = 0;
	free(out);
	free(err);
}

/*
 * serve's --memory holds the whole-book child too: the selector takes half of
 * it, the `joseki minimax` child the other half as its --memory (said on the
 * line that starts it). Half of 2M on a book of 30,000 positions puts the key
 * index past half of the child's budget: it looks the children up in sorted
 * runs, which it says; with its own default budget it would not.
 */
static void test_work__the_whole_book_child_gets_the_other_half_of_the_memory(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], tok[65];
	synth_with_token(book, sizeof book, dir, 30000, 3, tok);
	Coordinator s;
	serve_one_result(&s, book, tok,
	                 "--work --depth 3 --lease-seconds 600 --minimax-seconds 1 --memory 2M");
	/* The end of the line that starts the child ("serve: minimax: the whole
	 * book (no earlier minimax run), in child process PID (--memory 1M)"). */
	assert_true(ts_wait_output(s.log, "(--memory 1M)", 30000));
	/* The child's summary: its second line, then the fourth. */
	assert_true(ts_wait_output(s.log, "(whole book: no earlier minimax run)", 60000));
	assert_true(ts_wait_output(s.log, "children looked up in sorted runs", 30000));
	stop(&s, SIGTERM);
	check_passes(book, false);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Selection in slices over HTTP: with the shortest slices (a search of the
 * thought book takes many) and no stock selected ahead (--select-ahead 0, so
 * that an acquire that finds the cover policy's batch spent begins a search:
 * PV searches after a result are mostly too short to be cut), a coordinator left
 * alone finishes its first search between requests (the first acquire gets
 * positions at once); an acquire that comes while a search is under way is
 * answered 204 with Retry-After: 1 (not the 5 s of no work), /healthz answers
 * meanwhile, and the positions come on a later try.
 */
static void test_work__a_search_in_slices_answers_204_retry_1_until_done(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, tok[80], book[600];
	synth_with_token(book, sizeof book, dir, 3000, 7, tok);
	Coordinator co, *s = &co;
	s->port = ts_serve_start(&s->pid, &s->log, book,
	                         "--work --quiet --depth 3 --select cover --select-slice-ms 0 "
	                         "--select-ahead 0");
	g_child = s->pid;
	assert_true(s->port > 0);
	/* Alone, it selects between requests: its first search ends with
	 * leaves selected, which the status shows (the status is no acquire and
	 * starts no search). */
	for (;;) {
		json_t *j = status(s, tok);
		long long q = jget(j, "selector", "selected");
		json_decref(j);
		if (q > 0) break;
		usleep(20000);
	}
	long retry;
	long st = acquire_raw(s, tok, &out, &retry);
	if (st != 200) fail_msg("the first acquire once positions were queued: %ld %s", st, out);
	free(out);
	/* Until a lease came after a busy answer. Not more: the cover policy's
	 * next search after its batch of this book is spent finds no leaf (204
	 * with the Retry-After of no work), and it is not cut at every request. */
	int busy = 0, leased = 0, after_busy = 0;
	for (int i = 0; i < 400 && (busy < 1 || after_busy < 1 || leased < 6); i++) {
		st = acquire_raw(s, tok, &out, &retry);
		if (st == 204) {
			assert_int_equal(retry, 1);
			assert_int_equal(call(s, NULL, "GET", "/healthz", NULL, 0, NULL), 200);
			busy++;
		} else {
			if (st != 200) fail_msg("acquire: %ld %s", st, out);
			json_t *j = json_loads(out, 0, NULL);
			assert_non_null(j);
			/* Each answered: the next PV search has work to do. */
			assert_true(json_array_size(json_object_get(j, "positions")) >= 1);
			json_decref(j);
			submit_some_moves(s, tok, out);
			leased++;
			after_busy += busy > 0;
		}
		free(out);
	}
	print_message("slices over HTTP: %d busy answers, %d leases\n", busy, leased);
	assert_true(busy >= 1);
	assert_true(after_busy >= 1);
	assert_true(leased >= 6);
	stop(s, SIGTERM);
	ts_rmtree(dir);
	free(dir);
}

/*
 * serve --work --memory too small for the selector's graph beside its key
 * filter and node map (made for the book at the start) says so at the start,
 * with a --memory that holds it; the status shows that fixed part, the same
 * after the graph was trimmed. Given the --memory it named, it says nothing;
 * nor with --preload, which trims nothing.
 */
static void test_work__a_budget_that_leaves_the_graph_no_room_is_said(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), tok[80], book[600], said[8192];
	synth_with_token(book, sizeof book, dir, 100000, 5, tok);
	const char *want = NULL;
	for (int round = 0; round < 3; round++) {
		Coordinator co, *s = &co;
		char opts[200];
		snprintf(opts, sizeof opts, "--work --quiet --depth 3 --no-snapshot --memory %s%s",
		         round == 1 ? want : "1M", round == 2 ? " --preload" : "");
		s->port = ts_serve_start_said(&s->pid, &s->log, book, opts, said, sizeof said);
		g_child = s->pid;
		assert_true(s->port > 0);
		lines_fit("serve's start", said);
		char *one = ts_unwrapped(said);
		const char *w = strstr(one, "leaves its graph");
		json_t *st = status(s, tok);
		long long fixed = jget(st, "selector", "fixed");
		long long budget = jget(st, "selector", "budget");
		json_decref(st);
		print_message("round %d: fixed %lld of %lld bytes\n", round, fixed, budget);
		if (round == 2) {
			if (w) fail_msg("said with --preload:\n%s", said);
			free(one);
			stop(s, SIGTERM);
			continue;
		}
		assert_true(fixed > 0);
		if (round == 0) {
			/* --no-snapshot is said, not silent. */
			if (!strstr(one,
			            "serve: --no-snapshot: the first search starts from scratch"))
				fail_msg("--no-snapshot not said:\n%s", said);
			/* Half of 1 MiB, the filter and map more than half of it. */
			assert_int_equal(budget, 512 * 1024);
			assert_true(fixed > budget / 2 && fixed < budget);
			if (!w || !strstr(one, "beside its key filter and node map"))
				fail_msg("not said:\n%s", said);
			const char *m = strstr(one, "; --memory ");
			assert_non_null(m);
			static char size[32];
			sscanf(m + strlen("; --memory "), "%31s", size);
			want = size;
			/* Acquired and submitted until a trim: the fixed part
			 * stays what it was (what the map grows by is the
			 * graph's). */
			for (int i = 0; i < 200; i++) {
				char *got = NULL;
				long retry;
				if (acquire_raw(s, tok, &got, &retry) == 200)
					submit_some_moves(s, tok, got);
				free(got);
				json_t *st2 = status(s, tok);
				long long trims = jget(st2, "selector", "trims");
				assert_int_equal(jget(st2, "selector", "fixed"), fixed);
				if (trims > 0) {
					/* Their time, their slices (one at least each),
					 * and whether one is under way. */
					json_t *sel = json_object_get(st2, "selector");
					json_t *ts = json_object_get(sel, "trim_s");
					assert_true(json_is_real(ts) && json_real_value(ts) >= 0);
					assert_true(jget(st2, "selector", "trim_slices") >= trims);
					assert_true(
					    json_is_boolean(json_object_get(sel, "trimming")));
					/* Searches begun with every bound cleared
					 * (a count). */
					assert_true(jget(st2, "selector", "trim_clears") >= 0);
					assert_true(jget(st2, "selector", "trim_walks") >= 0);
					assert_true(jget(st2, "selector", "reexpansions") <=
					            jget(st2, "selector", "expansions"));
					assert_true(jget(st2, "selector", "remade") >= 0);
				}
				json_decref(st2);
				if (trims > 0) break;
				assert_true(i < 199);
			}
		} else {
			/* The --memory it named: room enough (16 bytes a
			 * position), nothing said. */
			assert_true(budget - fixed >= 100000 * 16);
			if (w) fail_msg("said with --memory %s:\n%s", want, said);
		}
		free(one);
		stop(s, SIGTERM);
	}
	ts_rmtree(dir);
	free(dir);
}

/* The status's selector fields: whether it was restored, and the note. */
static bool selector_restored(const Coordinator *s, const char *token, char *note, size_t len)
{
	json_t *st = status(s, token);
	json_t *sel = json_object_get(st, "selector");
	assert_non_null(sel);
	bool r = json_is_true(json_object_get(sel, "restored"));
	const char *n = json_string_value(json_object_get(sel, "note"));
	assert_non_null(n);
	snprintf(note, len, "%s", n);
	json_decref(st);
	return r;
}

/*
 * A coordinator stopped with SIGTERM writes the selector's snapshot beside
 * the book; the next one over the unchanged book reads it back (the status
 * says so, the file is gone), keeps the lease that was out and takes its
 * results. After another writer's commit (a minimax) the snapshot is stale:
 * the status says why, and the coordinator works from scratch. A think run
 * in between takes the coordinator's snapshot and leaves its own.
 */
static void test_work__a_restart_after_sigterm_reads_the_selector_back(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	const char *t1 = f->t1, *dir = f->dir;
	char note[512], snap[700], *err = NULL;
	snprintf(snap, sizeof snap, "%s/b/selector.snap", dir);
	/* A start that finds no snapshot (a first one, or after a kill before
	 * any checkpoint) says so on stderr, not only in the status. */
	stop(s, SIGKILL);
	char first[8192], nosnap[800];
	start_said(s, dir, first, sizeof first);
	snprintf(nosnap, sizeof nosnap,
	         "serve: no selector snapshot at %s: the first search starts from scratch\n", snap);
	if (!strstr(first, nosnap)) fail_msg("no '%s' in:\n%s", nosnap, first);
	assert_false(selector_restored(s, t1, note, sizeof note));
	assert_string_equal(note, "no snapshot: the first search starts from scratch");
	think_start(s, t1);
	json_t *a = acquire(s, t1, "w1", 3);
	assert_true(json_array_size(json_object_get(a, "positions")) >= 1);
	char said[8192], want[800];
	stop_said(s, said, sizeof said);
	snprintf(want, sizeof want, "serve: the selector saved to %s in ", snap);
	if (!strstr(said, want)) fail_msg("no '%s' in:\n%s", want, said);
	assert_int_equal(access(snap, F_OK), 0);
	start(s, dir);
	if (!selector_restored(s, t1, note, sizeof note)) fail_msg("not restored: %s", note);
	assert_true(access(snap, F_OK) != 0);
	json_t *st = status(s, t1);
	assert_int_equal(jget(st, "leases", "live"), 1);
	json_decref(st);
	answer_lease(s, t1, a, 0);
	json_decref(a);
	/* It goes on selecting: a new lease, none of whose positions is thought. */
	a = acquire(s, t1, "w1", 2);
	assert_true(json_array_size(json_object_get(a, "positions")) >= 1);
	json_decref(a);
	/* Another writer's commit in between: stale. */
	stop(s, SIGTERM);
	assert_int_equal(access(snap, F_OK), 0);
	assert_int_equal(
	    ts_runf(NULL, &err, "%s minimax %s/b --quiet >/dev/null", ts_joseki(), dir), 0);
	free(err);
	/* It says why on stderr, with what to do, in lines that fit 120 columns. */
	char start_said_text[8192];
	start_said(s, dir, start_said_text, sizeof start_said_text);
	lines_fit("serve's start", start_said_text);
	char *one = ts_unwrapped(start_said_text);
	snprintf(want, sizeof want, "serve: %s not used: ", snap);
	if (!strstr(one, want) || !strstr(one, "written since") ||
	    !strstr(one, "; the first search starts from scratch (no action needed: a start from "
	                 "scratch costs time once, and a snapshot is saved again at the stop)\n"))
		fail_msg("said:\n%s", start_said_text);
	free(one);
	assert_false(selector_restored(s, t1, note, sizeof note));
	print_message("after a minimax: %s\n", note);
	assert_non_null(strstr(note, "written since"));
	assert_true(access(snap, F_OK) != 0);
	a = acquire(s, t1, "w1", 2);
	assert_true(json_array_size(json_object_get(a, "positions")) >= 1);
	/* Its results, not backed up by a minimax run before the stop (every
	 * 60 s): the stop says so, and what to run. */
	answer_first_legal(s, t1, a);
	json_decref(a);
	char stop_text[8192];
	stop_said(s, stop_text, sizeof stop_text);
	one = ts_unwrapped(stop_text);
	if (!strstr(one, "joseki: serve: ") ||
	    !strstr(one, " since its last minimax run, whose values are not backed up yet; to "
	                 "back them up (before an export): joseki minimax ") ||
	    !strstr(stop_text, "\n  joseki minimax "))
		fail_msg("said at the stop:\n%s", stop_text);
	free(one);
	lines_fit("serve's stop", stop_text);
	/* think takes the coordinator's snapshot (its leases released) and
	 * leaves its own, which the next coordinator takes; each after a
	 * compaction (the book another file: the snapshot carries over). */
	err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err,
	            "%s compact %s/b >/dev/null && %s think %s/b --positions 3 --depth 3 "
	            "--quiet",
	            ts_joseki(), dir, ts_joseki(), dir),
	    0);
	snprintf(want, sizeof want, "think: the selector restored from %s in ", snap);
	lines_fit("think's restore", err);
	one = ts_unwrapped(err);
	if (!strstr(one, want) || !strstr(one, "written before the book was written anew"))
		fail_msg("no '%s' (written anew) in:\n%s", want, err);
	free(one);
	snprintf(want, sizeof want, "think: the selector saved to %s in ", snap);
	if (!strstr(err, want)) fail_msg("no '%s' in:\n%s", want, err);
	free(err);
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s compact %s/b >/dev/null", ts_joseki(), dir), 0);
	free(err);
	start(s, dir);
	if (!selector_restored(s, t1, note, sizeof note)) fail_msg("not restored: %s", note);
	assert_non_null(strstr(note, "written before the book was written anew"));
	a = acquire(s, t1, "w1", 2);
	assert_true(json_array_size(json_object_get(a, "positions")) >= 1);
	json_decref(a);
	finish(f);
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s check %s/b >/dev/null", ts_joseki(), dir), 0);
	free(err);
}

/*
 * kill -9 after a checkpoint (--checkpoint-seconds 1): the next start reads
 * the checkpoint back with the results stored since (the status says so),
 * and the lease that was out takes its results.
 */
static void test_work__a_restart_after_sigkill_reads_the_last_checkpoint(void **state)
{
	Fx *f = *state;
	Coordinator *s = &f->s;
	const char *t1 = f->t1, *dir = f->dir;
	char note[512], book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	stop(s, SIGTERM);
	s->port = ts_serve_start(&s->pid, &s->log, book,
	                         "--work --quiet --depth 3 --lease-seconds 600 "
	                         "--checkpoint-seconds 1");
	g_child = s->pid;
	assert_true(s->port > 0);
	think_start(s, t1);
	/* Until a checkpoint was written. */
	long long ck = 0;
	for (int i = 0; i < 100 && ck < 1; i++) {
		usleep(100000);
		json_t *st = status(s, t1);
		ck = jget(st, "selector", "checkpoints");
		if (ck >= 1) {
			/* The time its fork held the service, there to be read. */
			json_t *fk =
			    json_object_get(json_object_get(st, "selector"), "checkpoint_fork_s");
			assert_true(json_is_real(fk) && json_real_value(fk) > 0);
			json_t *hd =
			    json_object_get(json_object_get(st, "selector"), "checkpoint_held_s");
			assert_true(json_is_real(hd) && json_real_value(hd) >= 0);
		}
		json_decref(st);
	}
	assert_true(ck >= 1);
	/* Idle (nothing committed since a checkpoint written): the next ones are
	 * not needed, and not written. */
	long long unneeded = 0;
	for (int i = 0; i < 100 && unneeded < 2; i++) {
		usleep(100000);
		json_t *st = status(s, t1);
		unneeded = jget(st, "selector", "checkpoints_unchanged");
		json_decref(st);
	}
	assert_true(unneeded >= 2);
	/* This coordinator: its instance and when it started. */
	json_t *st0 = status(s, t1);
	char inst0[17];
	const char *in = json_string_value(json_object_get(st0, "instance"));
	assert_non_null(in);
	assert_int_equal(strspn(in, "0123456789abcdef"), 16);
	assert_int_equal(strlen(in), 16);
	snprintf(inst0, sizeof inst0, "%s", in);
	json_int_t started0 = json_integer_value(json_object_get(st0, "started"));
	assert_true(started0 > 1700000000 && started0 <= (json_int_t)time(NULL));
	json_decref(st0);
	/* Results after it, then a lease out, then kill -9. */
	json_t *a = acquire(s, t1, "w1", 2);
	answer_lease(s, t1, a, 0);
	json_decref(a);
	a = acquire(s, t1, "w1", 2);
	stop(s, SIGKILL);
	start(s, dir);
	/* Another process: another instance, started no earlier. */
	st0 = status(s, t1);
	in = json_string_value(json_object_get(st0, "instance"));
	assert_non_null(in);
	assert_string_not_equal(in, inst0);
	assert_true(json_integer_value(json_object_get(st0, "started")) >= started0);
	json_decref(st0);
	if (!selector_restored(s, t1, note, sizeof note)) fail_msg("not restored: %s", note);
	print_message("after kill -9: %s\n", note);
	assert_non_null(strstr(note, "from a checkpoint"));
	answer_lease(s, t1, a, 2);
	json_decref(a);
	a = acquire(s, t1, "w1", 2);
	assert_true(json_array_size(json_object_get(a, "positions")) >= 1);
	json_decref(a);
	finish(f);
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s check %s >/dev/null", ts_joseki(), book), 0);
	free(err);
}

/* The workers of the console's test, killed by its teardown if it fails. */
static pid_t g_workers[2];

static int kill_workers_left(void **state)
{
	for (int i = 0; i < 2; i++)
		if (g_workers[i] > 0) {
			kill(g_workers[i], SIGKILL);
			waitpid(g_workers[i], NULL, 0);
			g_workers[i] = 0;
		}
	return kill_left(state);
}

/*
 * The console (serve --work --status-seconds 0.5 --verbose --positions N --time S):
 * every status line fits 120 columns and says the book's positions and
 * thought ones, the results and their rate, the workers live and gone, the
 * ETA of the budget and the value and line from the start position (the
 * roots, listed at the start, come with their way from it: "startpos moves
 * 7g7f"); a worker stopped with SIGTERM is gone
 * at once (it was counted for its minute, its leases live for theirs); the
 * service's timings follow each line only with --verbose; the budget stops
 * the coordinator with exit 0. (--time too: once in about eight runs here the
 * coordinator over these two roots ran out of leaves at some 280 results,
 * answering "no work" with the queue empty and no lease live; the results
 * budget is then never reached. Not examined further.)
 */
static void test_work__the_console_says_what_an_operator_needs(void **state)
{
	(void)state;
	char t1[80], t2[80], book[600], roots[600], tokf[600], cmd[2400];
	char *dir = make_book(t1, t2);
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(roots, sizeof roots, "%s/roots", dir);
	snprintf(tokf, sizeof tokf, "%s/tok", dir);
	const char *rl = "startpos\nstartpos moves 7g7f\n";
	assert_int_equal(ts_write_file(roots, rl, strlen(rl)), 0);
	assert_int_equal(ts_write_file(tokf, t1, 64), 0);
	Coordinator s;
	/* stdout (the summary at the stop) into the log too. A budget the two
	 * workers spend in several status lines' time (200 took 2 s once: two
	 * lines, and the check below wants three). */
	snprintf(cmd, sizeof cmd,
	         "--work --quiet --movetime 10 --status-seconds 0.5 --verbose --positions 600 "
	         "--time 40 --minimax-seconds 1 --checkpoint-seconds 1 --roots %s 1>&2",
	         roots);
	s.port = ts_serve_start(&s.pid, &s.log, book, cmd);
	g_child = s.pid;
	assert_true(s.port > 0);
	pid_t *w = g_workers;
	char werr[620];
	snprintf(werr, sizeof werr, "%s/wa.err", dir);
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof cmd,
		         "exec %s worker --server http://127.0.0.1:%d --token-file %s --name w%c "
		         "--quiet",
		         ts_joseki(), s.port, tokf, 'a' + i);
		char *argv[] = {"/bin/sh", "-c", cmd, NULL};
		w[i] = ts_spawn(argv, "/dev/null", i ? "/dev/null" : werr, false);
	}
	char *text = NULL;
	size_t len = 0;
	if (!ts_read_until(s.log, &text, &len, "workers 2 live, 0 gone", 60000))
		fail_msg("no line with both workers:\n%s", text);
	kill(w[1], SIGTERM);
	int st = 0;
	assert_int_equal(waitpid(w[1], &st, 0), w[1]);
	w[1] = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	size_t mark = len;
	if (!ts_read_until(s.log, &text, &len, "workers 1 live, 1 gone", 30000))
		fail_msg("the stopped worker is not shown gone:\n%s", text + mark);
	json_t *j = status(&s, t1);
	json_t *gone = json_array_get(json_object_get(j, "workers_gone"), 0);
	assert_string_equal(json_string_value(json_object_get(gone, "name")), "wb");
	assert_string_equal(json_string_value(json_object_get(gone, "why")), "stopped");
	assert_int_equal(json_array_size(json_object_get(j, "workers")), 1);
	json_decref(j);
	/* The budget: the coordinator stops by itself, exit 0. */
	if (!ts_read_until(s.log, &text, &len, "serve: stopped", 120000)) {
		fputs(text + mark, stderr); /* whole: a failure's message is cut short */
		fail_msg("the budget did not stop the coordinator (what it said: above)");
	}
	assert_int_equal(waitpid(s.pid, &st, 0), s.pid);
	g_child = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The summary after the stop, to the end of what it wrote. */
	size_t stopped = len;
	(void)ts_read_until(s.log, &text, &len, "(never said)", 30000);
	fclose(s.log);
	/* The worker left stopped by itself: the coordinator answered its
	 * acquires 410 (the run is over) until it had sent its results, and
	 * waited for it to be told. (It went on retrying an absent server.) */
	assert_int_equal(waitpid(w[0], &st, 0), w[0]);
	w[0] = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char *said = ts_read_file(werr, NULL);
	if (!said || !strstr(said, "answered 410: the run is over: its budget (--positions) is "
	                           "spent; its results sent, stopped"))
		fail_msg("the worker said: %s", said ? said : "(nothing)");
	free(said);
	fputs(text, stdout); /* whole: print_message cuts it short */
	assert_non_null(strstr(text, "the budget (--"));
	int lines = 0, verbose = 0;
	bool valued = false;
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (!strncmp(l, "work ", 5)) {
			lines++;
			if (n > 120) fail_msg("a line of %zu columns: %.*s", n, (int)n, l);
			for (const char *q = l; q < l + n; q++)
				if (*q < 0x20 || *q > 0x7e) fail_msg("not ASCII: %.*s", (int)n, l);
			static const char *const SAYS[] = {
			    ": book ", " pos, ", " thought (+", "/s); workers ",
			    " live, ", " gone",  "; eta ",      "; start"};
			for (size_t k = 0; k < sizeof SAYS / sizeof SAYS[0]; k++)
				if (!memmem(l, n, SAYS[k], strlen(SAYS[k])))
					fail_msg("no '%s' in: %.*s", SAYS[k], (int)n, l);
			valued |= memmem(l, n, "; start +", 9) || memmem(l, n, "; start -", 9);
			/* --verbose: the service's timings on the next line. */
			verbose +=
			    nl && !strncmp(nl + 1, "work: ", 6) && strstr(nl + 1, "time in select");
		}
		l = nl ? nl + 1 : NULL;
	}
	assert_true(lines >= 3);
	assert_int_equal(verbose, lines);
	/* Every line fits 120 columns: the operator's, the service's timings,
	 * the spot checks, and the summary at the stop, several lines of
	 * "work: ..." (results and leases; workers and minimax runs; timings;
	 * spot checks). */
	lines_fit("serve --work", text);
	const char *sum = text + stopped;
	if (!strstr(sum, "\nwork: ") || !strstr(sum, " results (") ||
	    !strstr(sum, ", failed tries ") || !strstr(sum, "\nwork: workers ") ||
	    !strstr(sum, "minimax runs ") || !strstr(sum, "\nwork: time in select ") ||
	    !strstr(sum, "\nwork: spot checks "))
		fail_msg("the summary: %s", sum);
	/* The checkpoints (--checkpoint-seconds 1), their clauses whole. */
	const char *ck = strstr(sum, "checkpoints ");
	if (!ck || !strstr(ck, " not needed") || !strstr(ck, "the last written in ") ||
	    !strstr(ck, "the changes held meanwhile made in ") ||
	    !strstr(strstr(ck, "the changes held meanwhile made in "), " ms)"))
		fail_msg("the summary's checkpoints: %s", sum);
	assert_true(valued); /* the root's value and line once minimax ran */
	free(text);
	ts_rmtree(dir);
	free(dir);
}

/* The inode of a file (0: none). */
static ino_t inode_of(const char *dir, const char *name)
{
	char path[700];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Exports book in YaneuraOu's format (with every move) to path. */
static void export_to(const char *book, const char *path)
{
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s export %s %s --moves all", ts_joseki(), book, path) != 0)
		fail_msg("export %s: %s", book, err);
	free(err);
}

/*
 * The coordinator's kept graph folds its journal into a new graph file when
 * its changes pass a quarter of the memory its minimax has (the half of
 * serve's --memory the selector does not take; here 1M of 2M): results come
 * in, run after run, until the graph file is replaced; the coordinator says
 * so, and says what each run took (--verbose). The book then records the new
 * graph: the next `joseki minimax` is an incremental one, and its values are
 * a whole-book run's, export for export.
 */
static void test_work__the_coordinators_kept_graph_folds_its_journal(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], tok[65], copy[700], e1[700], e2[700];
	synth_with_token(book, sizeof book, dir, 30000, 5, tok);
	json_t *mm = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_false(json_is_true(json_object_get(mm, "incremental")));
	json_decref(mm);
	ino_t graph = inode_of(book, "minimax.graph");
	assert_true(graph != 0);
	Coordinator s;
	s.port = ts_serve_start(&s.pid, &s.log, book,
	                        "--work --depth 3 --lease-seconds 600 --minimax-seconds 1 "
	                        "--memory 2M --verbose");
	g_child = s.pid;
	if (!s.port) fail_msg("serve --work did not say where it listens");
	/* Each round: results for 128 positions, then the next minimax run
	 * started (its status count), which finds the last one's changes kept. */
	int rounds = 0;
	for (; inode_of(book, "minimax.graph") == graph; rounds++) {
		if (rounds == 200) fail_msg("no fold after %d rounds of results", rounds);
		for (int k = 0; k < 4; k++) {
			json_t *a = acquire(&s, tok, "w1", 32);
			if (json_array_size(json_object_get(a, "positions")))
				answer_first_legal(&s, tok, a);
			json_decref(a);
		}
		json_t *st = status(&s, tok);
		long long runs = jget(st, "minimax_runs", NULL), now = runs;
		json_decref(st);
		for (int w = 0; now == runs; w++) {
			if (w == 1200) fail_msg("no minimax run started in 60 s");
			usleep(50000);
			st = status(&s, tok);
			now = jget(st, "minimax_runs", NULL);
			json_decref(st);
		}
	}
	print_message("the graph file replaced after %d rounds of results\n", rounds);
	assert_true(ts_wait_output(s.log, "serve: minimax: ", 30000));
	assert_true(ts_wait_output(s.log, " analysed again: read ", 30000));
	assert_true(ts_wait_output(s.log, "folded into a new graph file in", 60000));
	stop(&s, SIGTERM);
	check_passes(book, false);
	snprintf(copy, sizeof copy, "%s/copy", dir);
	assert_int_equal(ts_runf(NULL, NULL, "cp -a %s %s", book, copy), 0);
	mm = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_true(json_is_true(json_object_get(mm, "incremental")));
	json_decref(mm);
	mm = ts_run_json(0, "%s minimax %s --full --json", ts_joseki(), copy);
	assert_false(json_is_true(json_object_get(mm, "incremental")));
	json_decref(mm);
	snprintf(e1, sizeof e1, "%s/inc.db", dir);
	snprintf(e2, sizeof e2, "%s/full.db", dir);
	export_to(book, e1);
	export_to(copy, e2);
	assert_int_equal(ts_runf(NULL, NULL, "cmp -s %s %s", e1, e2), 0);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	atexit(kill_child);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_work__a_search_in_slices_answers_204_retry_1_until_done,
	                              kill_left),
	    cmocka_unit_test_teardown(test_work__a_budget_that_leaves_the_graph_no_room_is_said,
	                              kill_left),
	    cmocka_unit_test_setup_teardown(test_work__an_abort_without_a_body_returns_the_lease,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__tokens_missing_wrong_or_revoked_get_401_and_write_nothing, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__submissions_outside_the_lease_or_malformed_are_refused, setup, teardown),
	    cmocka_unit_test_teardown(
	        test_work__a_restarted_coordinator_backs_up_what_the_last_one_left, kill_left),
	    cmocka_unit_test_teardown(test_work__a_killed_coordinators_minimax_child_stops_too,
	                              kill_left),
	    cmocka_unit_test_teardown(test_work__a_whole_book_minimax_runs_in_a_child_process,
	                              kill_left),
	    cmocka_unit_test_teardown(test_work__a_stop_stops_the_whole_book_child, kill_left),
	    cmocka_unit_test_teardown(
	        test_work__the_whole_book_child_gets_the_other_half_of_the_memory, kill_left),
	    cmocka_unit_test_teardown(
	        test_work__a_tokens_file_that_is_not_an_owner_only_regular_file, kill_left),
	    cmocka_unit_test_setup_teardown(test_work__frequent_acquires_take_leases_made_ahead,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__a_request_with_the_service_holds_no_request_thread, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__a_coordinator_killed_with_sigkill_keeps_its_leases, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__history_is_public_read_tokens_only_read_and_it_survives, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__a_restart_after_sigterm_reads_the_selector_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_work__a_restart_after_sigkill_reads_the_last_checkpoint, setup, teardown),
	    cmocka_unit_test_teardown(test_work__the_console_says_what_an_operator_needs,
	                              kill_workers_left),
	    cmocka_unit_test_teardown(test_work__the_coordinators_kept_graph_folds_its_journal,
	                              kill_left),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
