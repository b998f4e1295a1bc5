/*
 * tests/ingest/test_fetch.c — joseki fetch against a floodgate-like HTTP server
 * on loopback (libmicrohttpd, inside this process), which the test builds and
 * breaks on purpose: 404s, 500s, a dropped connection, a truncated archive.
 * The daily .7z archives are made at test time from tests/data/floodgate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "ingest/fetch.h"
#include "tests/support/support.h"

/* ---- the server ---- */

typedef struct {
	struct MHD_Daemon *d;
	unsigned port;
	char root[512];
	pthread_mutex_t mu;
	/* misbehaviour, set by the tests */
	int fail_500;       /* answer 500 to this many next requests */
	int retry_after;    /* with this Retry-After (seconds; 0: none) */
	bool drop;          /* send half the body, then break the connection */
	bool ignore_range;  /* answer Range requests with the whole file (200) */
	char truncate[128]; /* this path is served cut in half, with a matching length */
	/* what it saw */
	int requests, full, partial, not_modified, missing, errors500;
	char user_agent[256], last_range[64];
} Server;

typedef struct {
	const char *data;
	size_t limit;
	char *owned;
} DropBody;

static ssize_t drop_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	DropBody *b = cls;
	if (pos >= b->limit) return MHD_CONTENT_READER_END_WITH_ERROR;
	size_t n = b->limit - (size_t)pos;
	if (n > max) n = max;
	memcpy(buf, b->data + pos, n);
	return (ssize_t)n;
}

static void drop_free(void *cls)
{
	DropBody *b = cls;
	free(b->owned);
	free(b);
}

/* Whole file, binary-safe (ts_read_file stops at a NUL). */
static char *read_bin(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	*len = n;
	return buf;
}

/* FNV-1a: the ETag changes whenever the served bytes do. */
static unsigned long long fnv(const char *p, size_t n)
{
	unsigned long long h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *body)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	Server *s = cls;
	if (strcmp(method, "GET")) return queue(c, 405, "GET only\n");
	pthread_mutex_lock(&s->mu);
	s->requests++;
	const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
	snprintf(s->user_agent, sizeof s->user_agent, "%s", ua ? ua : "");
	if (s->fail_500 > 0) {
		s->fail_500--;
		s->errors500++;
		int ra = s->retry_after;
		pthread_mutex_unlock(&s->mu);
		struct MHD_Response *r = MHD_create_response_from_buffer(16, "try again later\n",
		                                                         MHD_RESPMEM_PERSISTENT);
		char secs[16];
		snprintf(secs, sizeof secs, "%d", ra);
		if (ra > 0) MHD_add_response_header(r, "Retry-After", secs);
		enum MHD_Result rc = MHD_queue_response(c, 500, r);
		MHD_destroy_response(r);
		return rc;
	}
	bool drop = s->drop, ignore_range = s->ignore_range, cut = !strcmp(url, s->truncate);
	pthread_mutex_unlock(&s->mu);

	char path[1024];
	snprintf(path, sizeof path, "%s%s", s->root, url);
	size_t len;
	char *data = strstr(url, "..") ? NULL : read_bin(path, &len);
	if (!data) {
		pthread_mutex_lock(&s->mu);
		s->missing++;
		pthread_mutex_unlock(&s->mu);
		return queue(c, 404, "not found\n");
	}
	if (cut) len /= 2;
	char etag[64], range_hdr[64] = "";
	snprintf(etag, sizeof etag, "\"%zx-%llx\"", len, fnv(data, len));
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
	if (inm && !strcmp(inm, etag)) {
		free(data);
		pthread_mutex_lock(&s->mu);
		s->not_modified++;
		pthread_mutex_unlock(&s->mu);
		struct MHD_Response *r =
		    MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "ETag", etag);
		enum MHD_Result rc = MHD_queue_response(c, 304, r);
		MHD_destroy_response(r);
		return rc;
	}
	size_t off = 0;
	unsigned status = 200;
	const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
	const char *if_range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Range");
	unsigned long long start;
	if (range) snprintf(range_hdr, sizeof range_hdr, "%s", range);
	if (range && !ignore_range && (!if_range || !strcmp(if_range, etag)) &&
	    sscanf(range, "bytes=%llu-", &start) == 1) {
		if (start >= len) {
			free(data);
			return queue(c, 416, "range not satisfiable\n");
		}
		off = (size_t)start;
		status = 206;
	}
	pthread_mutex_lock(&s->mu);
	if (status == 206)
		s->partial++;
	else
		s->full++;
	snprintf(s->last_range, sizeof s->last_range, "%s", range_hdr);
	pthread_mutex_unlock(&s->mu);

	struct MHD_Response *r;
	if (drop) {
		DropBody *b = calloc(1, sizeof *b);
		b->owned = data;
		b->data = data + off;
		b->limit = (len - off) / 2;
		r = MHD_create_response_from_callback(len - off, 4096, drop_reader, b, drop_free);
	} else {
		r = MHD_create_response_from_buffer(len - off, data + off, MHD_RESPMEM_MUST_COPY);
		free(data);
	}
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Last-Modified", "Mon, 01 Jun 2026 23:59:00 GMT");
	MHD_add_response_header(r, "Accept-Ranges", "bytes");
	if (status == 206) {
		char cr[96];
		snprintf(cr, sizeof cr, "bytes %zu-%zu/%zu", off, len - 1, len);
		MHD_add_response_header(r, "Content-Range", cr);
	}
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* ---- the fixture: archives, server, book, cache ---- */

typedef struct {
	char *dir;
	char book[600], cache[600];
	Server srv;
	int games[3]; /* fixture files packed for 2026-06-01, -02, -05 */
} Fx;

static const char *const DAYS[3] = {"20260601", "20260602", "20260605"};

static int count_fixtures(const char *day)
{
	char pat[256];
	snprintf(pat, sizeof pat, "tests/data/floodgate/*+%s[0-9][0-9][0-9][0-9][0-9][0-9].csa",
	         day);
	glob_t g;
	int n = glob(pat, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
	globfree(&g);
	return n;
}

/* Made once for the group: daily/wdoorYYYYMMDD.7z holding YYYYMMDD/<id>.csa,
 * as floodgate lays it out; each test serves its own copy. */
typedef struct {
	char *dir;
	int games[3];
} Archives;

static int group_setup(void **state)
{
	Archives *g = calloc(1, sizeof *g);
	g->dir = ts_mkdtemp();
	for (int i = 0; i < 3; i++) {
		g->games[i] = count_fixtures(DAYS[i]);
		assert_true(g->games[i] > 0);
		int rc = ts_runf(
		    NULL, NULL,
		    "mkdir -p %s/stage/%s %s/srv/daily && cp "
		    "tests/data/floodgate/*+%s[0-9][0-9][0-9][0-9][0-9][0-9].csa %s/stage/%s/ "
		    "&& cd %s/stage && 7z a -t7z -bd %s/srv/daily/wdoor%s.7z %s",
		    g->dir, DAYS[i], g->dir, DAYS[i], g->dir, DAYS[i], g->dir, g->dir, DAYS[i],
		    DAYS[i]);
		assert_int_equal(rc, 0);
	}
	*state = g;
	return 0;
}

static int group_teardown(void **state)
{
	Archives *g = *state;
	ts_rmtree(g->dir);
	free(g->dir);
	free(g);
	return 0;
}

static int setup(void **state)
{
	const Archives *g = *state; /* the group's state */
	assert_non_null(g);
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->book, sizeof f->book, "%s/book", f->dir);
	snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
	snprintf(f->srv.root, sizeof f->srv.root, "%s/srv", f->dir);
	memcpy(f->games, g->games, sizeof f->games);
	assert_int_equal(ts_runf(NULL, NULL, "cp -r %s/srv %s/", g->dir, f->dir), 0);
	pthread_mutex_init(&f->srv.mu, NULL);
	f->srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, &f->srv,
	                            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
	assert_non_null(f->srv.d);
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(f->srv.d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(di);
	f->srv.port = di->port;
	assert_true(f->srv.port > 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	MHD_stop_daemon(f->srv.d);
	pthread_mutex_destroy(&f->srv.mu);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Runs joseki fetch --json against the fixture's server; returns the JSON. */
static json_t *fetch_with(Fx *f, int expect_rc, const char *from, const char *to, const char *extra,
                          char **err_out)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "JOSEKI_FETCH_BACKOFF_MS=5 %s fetch %s --from %s --to %s --base-url "
	                 "http://127.0.0.1:%u/ --cache %s --jobs 2 --json --quiet %s",
	                 ts_joseki(), f->book, from, to, f->srv.port, f->cache, extra);
	if (rc != expect_rc) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
	assert_int_equal(rc, expect_rc);
	json_error_t je;
	json_t *j = json_loads(out ? out : "", 0, &je);
	if (!j) fprintf(stderr, "not JSON: %s\n", out);
	assert_non_null(j);
	free(out);
	if (err_out)
		*err_out = err;
	else
		free(err);
	return j;
}

static json_t *fetch(Fx *f, int expect_rc, const char *from, const char *to, char **err_out)
{
	return fetch_with(f, expect_rc, from, to, "", err_out);
}

static long long jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	if (!v) fprintf(stderr, "no field '%s'\n", k);
	assert_non_null(v);
	return json_integer_value(v);
}

static const char *day_status(json_t *j, size_t i)
{
	json_t *d = json_array_get(json_object_get(j, "day_list"), i);
	assert_non_null(d);
	return json_string_value(json_object_get(d, "status"));
}

static int srv_get(Fx *f, const int *field)
{
	pthread_mutex_lock(&f->srv.mu);
	int v = *field;
	pthread_mutex_unlock(&f->srv.mu);
	return v;
}

static void cache_path(char *out, size_t cap, Fx *f, const char *day, const char *suffix)
{
	snprintf(out, cap, "%s/daily/wdoor%s.7z%s", f->cache, day, suffix);
}

static bool exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* The cached archive of day is byte for byte the one the server holds. */
static void assert_cached_as_served(Fx *f, const char *day)
{
	char final[1024], src[1024];
	cache_path(final, sizeof final, f, day, "");
	snprintf(src, sizeof src, "%s/daily/wdoor%s.7z", f->srv.root, day);
	size_t a, b;
	char *x = read_bin(final, &a), *y = read_bin(src, &b);
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(a, b);
	assert_memory_equal(x, y, a);
	free(x);
	free(y);
}

/* ---- cases ---- */

static void test_fetch__dates_are_parsed_and_checked(void **state)
{
	(void)state;
	char d[9];
	assert_int_equal(fetch_date_parse(d, "2026-06-01"), 0);
	assert_string_equal(d, "20260601");
	assert_int_equal(fetch_date_parse(d, "2024/02/29"), 0);
	assert_string_equal(d, "20240229");
	assert_int_equal(fetch_date_parse(d, "20231231"), 0);
	assert_int_equal(fetch_date_parse(d, "2023-02-29"), FETCH_EINVAL);
	assert_int_equal(fetch_date_parse(d, "2026-13-01"), FETCH_EINVAL);
	assert_int_equal(fetch_date_parse(d, "2026-06-31"), FETCH_EINVAL);
	assert_int_equal(fetch_date_parse(d, "2026-6-1"), FETCH_EINVAL);
	assert_int_equal(fetch_date_parse(d, "yesterday"), FETCH_EINVAL);
	assert_int_equal(fetch_date_parse(d, "202606011"), FETCH_EINVAL);
	assert_int_equal(fetch_date_span("20260601", "20260601"), 1);
	assert_int_equal(fetch_date_span("20240228", "20240301"), 3); /* leap day */
	assert_int_equal(fetch_date_span("20251231", "20260101"), 2);
	assert_int_equal(fetch_date_span("20260101", "20261231"), 365);
	assert_true(fetch_date_span("20260602", "20260601") <= 0);
}

static void test_fetch__fresh_fetch_downloads_and_ingests(void **state)
{
	Fx *f = *state;
	int n = f->games[0] + f->games[1];
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-02", NULL);
	assert_int_equal(jint(j, "days"), 2);
	assert_int_equal(jint(j, "downloaded"), 2);
	assert_int_equal(jint(j, "cached"), 0);
	assert_int_equal(jint(j, "missing"), 0);
	assert_int_equal(jint(j, "failed"), 0);
	assert_int_equal(jint(j, "games_read"), n);
	assert_int_equal(jint(j, "games_ingested"), n);
	assert_int_equal(jint(j, "errors_total"), 0);
	assert_true(jint(j, "positions_added") > 0);
	json_decref(j);
	assert_int_equal(srv_get(f, &f->srv.full), 2);
	assert_int_equal(srv_get(f, &f->srv.requests), 2);
	assert_memory_equal(f->srv.user_agent, "joseki/", 7);
	assert_non_null(strstr(f->srv.user_agent, "opening-book builder"));
	/* cached byte for byte, no leftovers */
	for (int i = 0; i < 2; i++) {
		char q[1024], m[1024];
		assert_cached_as_served(f, DAYS[i]);
		cache_path(q, sizeof q, f, DAYS[i], ".part");
		cache_path(m, sizeof m, f, DAYS[i], ".meta");
		assert_false(exists(q));
		assert_true(exists(m));
	}
}

static void test_fetch__second_fetch_downloads_and_ingests_nothing(void **state)
{
	Fx *f = *state;
	int n = f->games[0] + f->games[1];
	json_decref(fetch(f, 0, "2026-06-01", "2026-06-02", NULL));
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-02", NULL);
	assert_int_equal(jint(j, "downloaded"), 0);
	assert_int_equal(jint(j, "cached"), 2);
	assert_int_equal(jint(j, "bytes_downloaded"), 0);
	assert_int_equal(jint(j, "games_ingested"), 0);
	assert_int_equal(jint(j, "duplicates"), n);
	assert_int_equal(jint(j, "positions_added"), 0);
	assert_int_equal(jint(j, "moves_added"), 0);
	json_decref(j);
	/* the second run only asked: two conditional requests, both 304 */
	assert_int_equal(srv_get(f, &f->srv.full), 2);
	assert_int_equal(srv_get(f, &f->srv.not_modified), 2);
	assert_int_equal(srv_get(f, &f->srv.requests), 4);
}

static void test_fetch__missing_day_is_reported_and_others_go_in(void **state)
{
	Fx *f = *state;
	char *err = NULL;
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-03", &err);
	assert_int_equal(jint(j, "days"), 3);
	assert_int_equal(jint(j, "downloaded"), 2);
	assert_int_equal(jint(j, "missing"), 1);
	assert_int_equal(jint(j, "failed"), 0);
	assert_string_equal(day_status(j, 2), "missing");
	assert_int_equal(jint(j, "games_ingested"), f->games[0] + f->games[1]);
	json_decref(j);
	free(err);
	/* and the human summary says so */
	char *out = NULL;
	int rc =
	    ts_runf(&out, &err,
	            "%s fetch %s --from 2026-06-03 --to 2026-06-05 --base-url http://127.0.0.1:%u "
	            "--cache %s --quiet",
	            ts_joseki(), f->book, f->srv.port, f->cache);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "3 days (1 downloaded, 0 cached, 2 missing, 0 failed)"));
	assert_non_null(strstr(err, "wdoor20260603.7z: not on the server (404)"));
	free(out);
	free(err);
}

static void test_fetch__server_errors_are_retried(void **state)
{
	Fx *f = *state;
	f->srv.fail_500 = 2;
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-01", NULL);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_int_equal(jint(j, "failed"), 0);
	assert_int_equal(jint(j, "games_ingested"), f->games[0]);
	json_decref(j);
	assert_int_equal(srv_get(f, &f->srv.errors500), 2);
	assert_int_equal(srv_get(f, &f->srv.requests), 3);
}

static void test_fetch__persistent_server_errors_fail_the_day_only(void **state)
{
	Fx *f = *state;
	f->srv.fail_500 = 5; /* every attempt for the first day */
	char *err = NULL;
	json_t *j = fetch(f, 1, "2026-06-01", "2026-06-02", &err);
	assert_int_equal(jint(j, "failed"), 1);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_string_equal(day_status(j, 0), "failed");
	assert_int_equal(jint(j, "games_ingested"), f->games[1]);
	json_t *e = json_array_get(json_object_get(j, "errors"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(e, "input")), "wdoor20260601.7z"));
	assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "HTTP 500"));
	json_decref(j);
	assert_non_null(strstr(err, "HTTP 500 (after 5 attempts)"));
	free(err);
}

/* The ingest filters apply to fetched games as to ingested ones. */
static void test_fetch__filters_apply(void **state)
{
	Fx *f = *state;
	int n = f->games[0] + f->games[1];
	json_t *j =
	    fetch_with(f, 0, "2026-06-01", "2026-06-02", "--time-control 'nothing-*'", NULL);
	assert_int_equal(jint(j, "downloaded"), 2);
	assert_int_equal(jint(j, "games_read"), n);
	assert_int_equal(jint(j, "games_skipped"), n);
	assert_int_equal(jint(j, "games_ingested"), 0);
	json_decref(j);
	j = fetch_with(f, 0, "2026-06-01", "2026-06-02", "--since 2026-06-02", NULL);
	assert_int_equal(jint(j, "cached"), 2);
	assert_int_equal(jint(j, "games_ingested"), f->games[1]);
	assert_int_equal(jint(j, "games_skipped"), f->games[0]);
	json_decref(j);
}

/* Retry-After is honoured even when our own back-off is shorter. */
static void test_fetch__retry_after_is_honoured(void **state)
{
	Fx *f = *state;
	f->srv.fail_500 = 1;
	f->srv.retry_after = 1;
	double t0 = clock_s();
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-01", NULL);
	double t1 = clock_s();
	assert_int_equal(jint(j, "downloaded"), 1);
	json_decref(j);
	double secs = t1 - t0;
	assert_true(secs >= 1.0);
	assert_int_equal(srv_get(f, &f->srv.requests), 2);
}

/* The server down on a rerun: the cached copy still serves, with a note. */
static void test_fetch__cached_copy_is_used_when_the_server_fails(void **state)
{
	Fx *f = *state;
	json_decref(fetch(f, 0, "2026-06-01", "2026-06-01", NULL));
	f->srv.fail_500 = 5;
	char *err = NULL;
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-01", &err);
	assert_int_equal(jint(j, "cached"), 1);
	assert_int_equal(jint(j, "failed"), 0);
	assert_int_equal(jint(j, "duplicates"), f->games[0]);
	json_decref(j);
	assert_non_null(
	    strstr(err, "not revalidated (HTTP 500 (after 5 attempts)); using the cached copy"));
	free(err);
	assert_int_equal(srv_get(f, &f->srv.errors500), 5);
}

/* A connection broken mid-body keeps the .part; the rerun continues it with Range. */
static void test_fetch__dropped_connection_resumes(void **state)
{
	Fx *f = *state;
	f->srv.drop = true;
	char *err = NULL;
	json_t *j = fetch(f, 1, "2026-06-01", "2026-06-01", &err);
	assert_int_equal(jint(j, "failed"), 1);
	assert_int_equal(jint(j, "games_read"), 0);
	assert_int_equal(jint(j, "positions_added"), 0);
	json_decref(j);
	assert_non_null(strstr(err, "a rerun continues from there"));
	free(err);
	char part[1024], final[1024], src[1024];
	cache_path(part, sizeof part, f, DAYS[0], ".part");
	cache_path(final, sizeof final, f, DAYS[0], "");
	snprintf(src, sizeof src, "%s/daily/wdoor%s.7z", f->srv.root, DAYS[0]);
	size_t plen, slen;
	char *p = read_bin(part, &plen), *s = read_bin(src, &slen);
	assert_non_null(p);
	assert_non_null(s);
	assert_true(plen > 0 && plen < slen);
	assert_memory_equal(p, s, plen);
	assert_false(exists(final));
	free(p);

	pthread_mutex_lock(&f->srv.mu);
	f->srv.drop = false;
	int partial_before = f->srv.partial;
	pthread_mutex_unlock(&f->srv.mu);
	j = fetch(f, 0, "2026-06-01", "2026-06-01", NULL);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_int_equal(jint(j, "games_ingested"), f->games[0]);
	json_decref(j);
	char want[64];
	snprintf(want, sizeof want, "bytes=%zu-", plen);
	assert_string_equal(f->srv.last_range, want);
	assert_int_equal(srv_get(f, &f->srv.partial), partial_before + 1);
	assert_cached_as_served(f, DAYS[0]);
	assert_false(exists(part));
	free(s);
}

/*
 * Interrupts a download, then lets the rerun meet a server that ignores Range
 * or an archive that changed meanwhile (If-Range no longer matches): either
 * way a 200 comes back and the .part must restart, not be appended to.
 */
static void check_resume_restarts(Fx *f, bool ignore_range, bool change_archive)
{
	f->srv.drop = true;
	json_decref(fetch(f, 1, "2026-06-01", "2026-06-01", NULL));
	char a[1024], b[1024];
	snprintf(a, sizeof a, "%s/daily/wdoor%s.7z", f->srv.root, DAYS[0]);
	snprintf(b, sizeof b, "%s/daily/wdoor%s.7z", f->srv.root, DAYS[1]);
	pthread_mutex_lock(&f->srv.mu);
	f->srv.drop = false;
	f->srv.ignore_range = ignore_range;
	if (change_archive) assert_int_equal(rename(b, a), 0); /* now the other day's games */
	int partial_before = f->srv.partial, full_before = f->srv.full;
	pthread_mutex_unlock(&f->srv.mu);
	json_t *j = fetch(f, 0, "2026-06-01", "2026-06-01", NULL);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_int_equal(jint(j, "games_ingested"), f->games[change_archive ? 1 : 0]);
	json_decref(j);
	assert_non_null(strstr(f->srv.last_range, "bytes="));
	assert_int_equal(srv_get(f, &f->srv.partial), partial_before);
	assert_int_equal(srv_get(f, &f->srv.full), full_before + 1);
	assert_cached_as_served(f, DAYS[0]);
}

static void test_fetch__resume_restarts_when_range_is_ignored(void **state)
{
	check_resume_restarts(*state, true, false);
}

static void test_fetch__resume_of_a_changed_archive_restarts(void **state)
{
	check_resume_restarts(*state, false, true);
}

/* Two fetches never share a cache: the second one stops before any request. */
static void test_fetch__a_busy_cache_is_refused(void **state)
{
	Fx *f = *state;
	char lock[1024];
	snprintf(lock, sizeof lock, "%s/.lock", f->cache);
	assert_int_equal(ts_runf(NULL, NULL, "mkdir -p %s", f->cache), 0);
	int fd = open(lock, O_RDWR | O_CREAT, 0666);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s fetch %s --from 2026-06-01 --to 2026-06-01 --base-url "
	                 "http://127.0.0.1:%u/ --cache %s --quiet",
	                 ts_joseki(), f->book, f->srv.port, f->cache);
	close(fd);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "in use by another joseki fetch"));
	assert_int_equal(srv_get(f, &f->srv.requests), 0);
	free(out);
	free(err);
}

/* Cut in half but served as if whole: caught before ingesting, dropped from the cache. */
static void test_fetch__truncated_archive_is_not_ingested(void **state)
{
	Fx *f = *state;
	snprintf(f->srv.truncate, sizeof f->srv.truncate, "/daily/wdoor%s.7z", DAYS[0]);
	char *err = NULL;
	json_t *j = fetch(f, 1, "2026-06-01", "2026-06-02", &err);
	assert_int_equal(jint(j, "failed"), 1);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_string_equal(day_status(j, 0), "failed");
	/* nothing of the broken day: exactly the other day's games were read */
	assert_int_equal(jint(j, "games_read"), f->games[1]);
	assert_int_equal(jint(j, "games_ingested"), f->games[1]);
	json_decref(j);
	assert_non_null(strstr(err, "removed from the cache, a rerun downloads it again"));
	free(err);
	char final[1024], meta[1024];
	cache_path(final, sizeof final, f, DAYS[0], "");
	cache_path(meta, sizeof meta, f, DAYS[0], ".meta");
	assert_false(exists(final));
	assert_false(exists(meta));

	pthread_mutex_lock(&f->srv.mu);
	f->srv.truncate[0] = 0;
	pthread_mutex_unlock(&f->srv.mu);
	j = fetch(f, 0, "2026-06-01", "2026-06-02", NULL);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_int_equal(jint(j, "cached"), 1);
	assert_int_equal(jint(j, "failed"), 0);
	assert_int_equal(jint(j, "games_ingested"), f->games[0]);
	assert_int_equal(jint(j, "duplicates"), f->games[1]);
	json_decref(j);
	assert_true(exists(final));
}

/* A cached file that went bad on disk is caught the same way. */
static void test_fetch__corrupt_cached_copy_is_dropped(void **state)
{
	Fx *f = *state;
	json_decref(fetch(f, 0, "2026-06-02", "2026-06-02", NULL));
	char final[1024];
	cache_path(final, sizeof final, f, DAYS[1], "");
	assert_int_equal(ts_write_file(final, "7z\xbc\xaf\x27\x1c garbage", 14), 0);
	char *err = NULL;
	json_t *j = fetch(f, 1, "2026-06-02", "2026-06-02", &err);
	assert_int_equal(jint(j, "failed"), 1);
	assert_int_equal(jint(j, "games_read"), 0);
	json_decref(j);
	assert_non_null(strstr(err, "cached copy"));
	free(err);
	assert_false(exists(final));
	j = fetch(f, 0, "2026-06-02", "2026-06-02", NULL);
	assert_int_equal(jint(j, "downloaded"), 1);
	assert_int_equal(jint(j, "duplicates"), f->games[1]);
	json_decref(j);
}

/* A FetchProgressFn; "download" counts as day << 40 | bytes, so it only
 * grows while the days go by and each day's bytes arrive. */
static void count_progress(void *ctx, const char *phase, const FetchProgress *p)
{
	if (!strcmp(phase, "done")) {
		ts_progress_note(ctx, phase, p->days);
		return;
	}
	assert_true(p->day >= 1 && p->day <= p->days && p->days == 5);
	assert_int_equal(strlen(p->date), 8);
	if (!strcmp(phase, "download")) {
		assert_true(p->total_bytes == 0 || p->bytes <= p->total_bytes);
		ts_progress_note(ctx, phase, (uint64_t)p->day << 40 | p->bytes);
	} else {
		ts_progress_note(ctx, phase, p->day);
	}
}

/* fetch_days reports through its callback (each day as it begins, what has
 * arrived, then "done"), and prints nothing without one. */
static void test_fetch__progress_goes_to_the_callback_and_null_is_quiet(void **state)
{
	Fx *f = *state;
	char base[64], cache[700], errf[700];
	snprintf(base, sizeof base, "http://127.0.0.1:%u/", f->srv.port);
	snprintf(errf, sizeof errf, "%s/stderr", f->dir);
	TsProgress *rec = ts_progress_new();
	for (int quiet = 0; quiet < 2; quiet++) {
		snprintf(cache, sizeof cache, "%s/cache%d", f->dir, quiet);
		FetchOptions opt;
		fetch_options_init(&opt);
		opt.base_url = base;
		opt.cache_dir = cache;
		opt.backoff_ms = -1;
		if (!quiet) {
			opt.progress = count_progress;
			opt.progress_ctx = rec;
		}
		FetchResult res;
		int saved = ts_stderr_begin(errf);
		int rc = fetch_days(&res, "20260601", "20260605", &opt);
		char *err = ts_stderr_end(saved, errf);
		assert_int_equal(rc, 0);
		assert_string_equal(err, "");
		free(err);
		assert_int_equal(res.downloaded, 3);
		assert_int_equal(res.missing, 2);
		fetch_result_free(&res);
	}
	static const char *const phases[] = {"day", "download", "done", NULL};
	ts_progress_check(rec, phases);
	assert_int_equal(ts_progress_count(rec, "day"), 5);
	assert_int_equal(ts_progress_last(rec), 5);
	free(rec);
}

static void test_fetch__bad_arguments_exit_2(void **state)
{
	Fx *f = *state;
	static const char *const BAD[][2] = {
	    {"--from 2026-02-30 --to 2026-03-01",
	     "--from wants a date YYYY-MM-DD, not '2026-02-30'"},
	    {"--from 2026-06-01 --to 06/02", "--to wants a date YYYY-MM-DD, not '06/02'"},
	    {"--from 2026-06-02 --to 2026-06-01", "is before --from"},
	    {"--to 2026-06-01", "--from is needed"},
	    {"--from 2026-06-01 --to 2026-06-01 --base-url ftp://x/",
	     "--base-url wants an http:// or https:// URL, not 'ftp://x/'"},
	    {"--from 2026-06-01 --bogus", "unknown option '--bogus'"},
	    {"--from 1900-01-01 --to 2026-06-01", "longer than 20000 days"},
	    {"--from 2026-06-01 --max-ply x", "--max-ply wants a number from 1 to 10000, not 'x'"},
	};
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
		char *out = NULL, *err = NULL;
		int rc =
		    ts_runf(&out, &err, "%s fetch %s --cache %s --base-url http://127.0.0.1:%u/ %s",
		            ts_joseki(), f->book, f->cache, f->srv.port, BAD[i][0]);
		if (rc != 2 || !strstr(err, BAD[i][1]))
			fprintf(stderr, "args: %s\nstderr: %s\n", BAD[i][0], err);
		assert_int_equal(rc, 2);
		assert_non_null(strstr(err, BAD[i][1]));
		free(out);
		free(err);
	}
	assert_int_equal(srv_get(f, &f->srv.requests), 0);
	assert_false(exists(f->book)); /* refused before the book was opened */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fetch__dates_are_parsed_and_checked),
	    cmocka_unit_test_setup_teardown(test_fetch__fresh_fetch_downloads_and_ingests, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__second_fetch_downloads_and_ingests_nothing,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__missing_day_is_reported_and_others_go_in,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__server_errors_are_retried, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__persistent_server_errors_fail_the_day_only,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__filters_apply, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__retry_after_is_honoured, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__cached_copy_is_used_when_the_server_fails,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__dropped_connection_resumes, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__resume_restarts_when_range_is_ignored,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__resume_of_a_changed_archive_restarts, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__a_busy_cache_is_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__truncated_archive_is_not_ingested, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__corrupt_cached_copy_is_dropped, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fetch__bad_arguments_exit_2, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_fetch__progress_goes_to_the_callback_and_null_is_quiet, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
