/* server/server.c — the HTTP daemon: routing, limits, errors, metrics (see server.h). */
#include "server/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "server/api.h"
#include "server/assets.h"
#include "server/gate.h"
#include "server/history_api.h"
#include "server/work_api.h"

#define URL_MAX 8192      /* longer: 414 */
#define HEADERS_MAX 16384 /* more header bytes: 431 */
#define BODY_MAX 16384    /* a larger body: 413 (the read-only API takes none) */
/* Per connection: a first head the gate lets in (24 KB, 100 fields, 100
 * cookies, 100 URL parameters) and libmicrohttpd's records of its parts fit
 * with room to spare, so that libmicrohttpd never answers one itself. */
#define CONN_MEMORY (128 * 1024)

/* Latency histogram bounds, seconds (Prometheus "le"). */
static const double BUCKETS[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 1};
#define NBUCKETS (sizeof BUCKETS / sizeof BUCKETS[0])
/* Statuses counted on their own; others under "other". */
static const int STATUSES[] = {200, 204, 400, 401, 404, 405, 408, 413, 414, 431, 500, 503};
#define NSTATUS (sizeof STATUSES / sizeof STATUSES[0])

struct Server {
	struct MHD_Daemon *d;
	Gate *gate;
	BookDB *db;
	ServerOptions opt;
	int fd;
	uint16_t port;
	atomic_bool stopping;
	/* Requests begun and not yet completed (kept-alive connections between
	 * two requests not counted): what a stop waits for. */
	atomic_int inflight;
	atomic_int cut; /* requests the daemon's stop ended, unanswered */
	time_t started;
	atomic_ullong requests[NSTATUS + 1];
	atomic_ullong buckets[NBUCKETS + 1];
	atomic_ullong latency_us;
	ApiStatsCache cache;
	/* Requests read db under the read side; follow_book reopens it under
	 * the write side. */
	pthread_rwlock_t dblock;
	atomic_llong checked_ms; /* when follow_book last looked at the file */
	/* Work requests handed to the service thread whose connections are
	 * suspended, or woken and not yet answered: the daemon stops after them. */
	atomic_int parked;
};

const char *server_strerror(int code)
{
	switch (code) {
	case SERVER_OK:
		return "ok";
	case SERVER_EINVAL:
		return "bad listen address";
	case SERVER_ELISTEN:
		return "cannot listen";
	case SERVER_ENOMEM:
		return "out of memory";
	case SERVER_EMHD:
		return "the HTTP daemon did not start";
	default:
		return "unknown error";
	}
}

uint16_t server_port(const Server *s)
{
	return s->port;
}

typedef struct {
	int64_t t0;    /* clock_ns() at the request line */
	bool begun;    /* the handler has seen its head */
	bool answered; /* the gate knows an answer is queued */
	size_t body;
	int status;
	bool work;       /* a /v1/work/ request: its body is kept */
	int retry_after; /* a work answer's Retry-After (s; 0: the default) */
	char *buf;       /* the body (work requests), at most API_WORK_BODY_MAX bytes */
	size_t len, cap;
	bool too_large;    /* the body went past API_WORK_BODY_MAX (the rest was dropped) */
	const char *allow; /* the Allow header of a 405 */
	/* A work request the service thread answers, its connection suspended
	 * meanwhile (api_work_call_start), and whether it was woken. */
	ApiWorkCall *call;
	struct MHD_Connection *conn;
	atomic_bool woken;
	char *query; /* the URL's text after its '?', as sent (NULL: none) */
} Req;

/* The work endpoints behind a token; the history is read-only and public. */
static bool is_work(const Server *s, const char *url)
{
	return s->opt.work && !strncmp(url, "/v1/work/", 9) && strcmp(url, "/v1/work/history");
}

/* Keeps a work request's body up to API_WORK_BODY_MAX bytes. */
static void keep_body(Req *r, const char *data, size_t n)
{
	if (r->too_large || r->len + n > API_WORK_BODY_MAX) {
		r->too_large = true;
		return;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n) cap *= 2;
		char *nb = realloc(r->buf, cap);
		if (!nb) {
			r->too_large = true;
			return;
		}
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
}

static double since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e9;
}

/* Queues body (taken: freed by libmicrohttpd) with status and type. */
static enum MHD_Result reply(Server *s, struct MHD_Connection *c, Req *r, int status,
                             const char *type, char *body, size_t len, bool api)
{
	r->status = status;
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	/* A 204 has no content, so no type of it. */
	if (status != 204) MHD_add_response_header(resp, "Content-Type", type);
	if (api && !s->opt.no_cors)
		MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
	if (status == 405)
		MHD_add_response_header(resp, "Allow", r->allow ? r->allow : "GET, HEAD, OPTIONS");
	/* A 204 of the work API is "none yet" only to an acquire (which sets its
	 * retry_after); a submit's or an abort's 204 is done, nothing to retry. */
	if (status == 503 || (r->work && status == 204 && r->retry_after > 0)) {
		char ra[16];
		snprintf(ra, sizeof ra, "%d",
		         r->retry_after > 0 ? r->retry_after : API_WORK_RETRY_S);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	if (api) MHD_add_response_header(resp, "Cache-Control", "no-store");
	/* Stopping: the connection ends with this answer, so a client that keeps
	 * its connection alive and asks again holds no request in flight. */
	if (atomic_load(&s->stopping)) MHD_add_response_header(resp, "Connection", "close");
	enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result reply_json(Server *s, struct MHD_Connection *c, Req *r, int status,
                                  char *body)
{
	if (!body)
		return reply(s, c, r, 500, "application/json",
		             strdup("{\"error\":\"out of memory\"}\n"), 26, true);
	return reply(s, c, r, status, "application/json", body, strlen(body), true);
}

static enum MHD_Result reply_error(Server *s, struct MHD_Connection *c, Req *r, int status,
                                   const char *msg)
{
	return reply_json(s, c, r, status, api_error_body(msg));
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
	(void)kind;
	size_t *n = cls;
	*n += strlen(key) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

static enum MHD_Result count_one(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
	(void)kind, (void)key, (void)value;
	++*(size_t *)cls;
	return MHD_YES;
}

static enum MHD_Result check_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
	(void)kind;
	gate_field(cls, key, key_size, value ? value : "", value ? value_size : 0);
	return MHD_YES;
}

/*
 * What is refused as soon as a request's head is read, before its body: the
 * fields the gate checks on a first request (a later one's reach here only),
 * a URL or head too large, too many URL parameters, a body announced larger
 * than the path takes. 0, or the status with *msg. An answer queued now
 * makes libmicrohttpd close the connection instead of reading the body.
 */
static int head_refusal(Req *r, struct MHD_Connection *c, const char *url, const char **msg)
{
	GateFields f = {0};
	MHD_get_connection_values_n(c, MHD_HEADER_KIND, check_field, &f);
	int st = gate_fields_verdict(&f, msg);
	if (st) return st;
	size_t ubytes = strlen(url), hbytes = 0, params = 0;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_header, &ubytes);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_one, &params);
	if (ubytes > URL_MAX || params > GATE_PARAMS_MAX) {
		*msg = ubytes > URL_MAX ? "request URL too long (over 8 KB)"
		                        : "request URL with more than 100 parameters";
		return 414;
	}
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &hbytes);
	if (hbytes > HEADERS_MAX) {
		*msg = "request headers too large (over 16 KB)";
		return 431;
	}
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
	if (len > (r->work ? API_WORK_BODY_MAX : BODY_MAX)) {
		*msg = r->work ? "request body larger than 1 MiB" : "request body too large";
		return 413;
	}
	return 0;
}

static const ServerAsset *asset(const char *url)
{
	for (const ServerAsset *a = SERVER_ASSETS; a->path; a++)
		if (!strcmp(a->path, url)) return a;
	return NULL;
}

static bool is_route(const char *url)
{
	static const char *const ROUTES[] = {"/v1/query", "/v1/stats",        "/v1/line",
	                                     "/healthz",  "/v1/work/history", "/metrics"};
	for (size_t i = 0; i < sizeof ROUTES / sizeof *ROUTES; i++)
		if (!strcmp(url, ROUTES[i])) return true;
	return asset(url) != NULL;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* Parameter name's value as the URL sent it, with its %XX decoded and its
 * '+' kept, when that had a '+' (HTTP reads it as a space: api_query); NULL
 * otherwise. Malloc'd. */
static char *plus_value(const Req *r, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = r->query, *amp; p && *p; p = (amp = strchr(p, '&')) ? amp + 1 : NULL) {
		if (strncmp(p, name, nl) || p[nl] != '=') continue;
		const char *v = p + nl + 1;
		size_t n = strcspn(v, "&");
		if (!memchr(v, '+', n)) return NULL;
		char *out = malloc(n + 1), *o = out;
		for (size_t i = 0; out && i < n; i++) {
			int hi, lo;
			if (v[i] == '%' && i + 2 < n && (hi = hex_digit(v[i + 1])) >= 0 &&
			    (lo = hex_digit(v[i + 2])) >= 0) {
				*o++ = (char)(hi * 16 + lo);
				i += 2;
			} else {
				*o++ = v[i];
			}
		}
		if (o) *o = 0;
		return out;
	}
	return NULL;
}

/* The API's parameters, checked before any is used. */
static const char *const PARAMS[] = {"sfen", "position", "plies", "hours"};
#define NPARAMS (sizeof PARAMS / sizeof *PARAMS)

typedef struct {
	int seen[NPARAMS];
	char msg[128];
} ArgCheck;

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 size_t key_size, const char *value, size_t value_size)
{
	(void)kind;
	ArgCheck *a = cls;
	size_t i = 0;
	while (i < NPARAMS && (strlen(PARAMS[i]) != key_size || memcmp(PARAMS[i], key, key_size)))
		i++;
	if (i == NPARAMS) return MHD_YES; /* not ours (a cache buster, say): ignored */
	if (++a->seen[i] > 1) {
		snprintf(a->msg, sizeof a->msg, "parameter '%s' given more than once", PARAMS[i]);
		return MHD_NO;
	}
	/* Positions and numbers are printable ASCII; a %00 would cut the value
	 * short for the C string the rest reads. */
	for (size_t k = 0; value && k < value_size; k++)
		if ((unsigned char)value[k] < 0x20 || (unsigned char)value[k] > 0x7e) {
			snprintf(a->msg, sizeof a->msg,
			         "parameter '%s': byte %zu is not printable ASCII (0x%02x)",
			         PARAMS[i], k, (unsigned char)value[k]);
			return MHD_NO;
		} else if (value[k] == '%') {
			/* Left by the decoding: no %-escape there (%zz), or a %25;
			 * neither is a position's or a number's. */
			snprintf(a->msg, sizeof a->msg,
			         "parameter '%s': byte %zu is '%%', not a %%-escape of a byte",
			         PARAMS[i], k);
			return MHD_NO;
		}
	return MHD_YES;
}

static char *metrics_text(Server *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) return NULL;
	fprintf(f, "# HELP joseki_requests_total HTTP requests answered, by status.\n"
	           "# TYPE joseki_requests_total counter\n");
	for (size_t i = 0; i < NSTATUS; i++)
		fprintf(f, "joseki_requests_total{status=\"%d\"} %llu\n", STATUSES[i],
		        (unsigned long long)atomic_load(&s->requests[i]));
	fprintf(f, "joseki_requests_total{status=\"other\"} %llu\n",
	        (unsigned long long)atomic_load(&s->requests[NSTATUS]));
	fprintf(
	    f,
	    "# HELP joseki_request_duration_seconds Time from a request's arrival to its answer.\n"
	    "# TYPE joseki_request_duration_seconds histogram\n");
	unsigned long long cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += atomic_load(&s->buckets[i]);
		fprintf(f, "joseki_request_duration_seconds_bucket{le=\"%g\"} %llu\n", BUCKETS[i],
		        cum);
	}
	cum += atomic_load(&s->buckets[NBUCKETS]);
	fprintf(f, "joseki_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	fprintf(f, "joseki_request_duration_seconds_sum %.6f\n",
	        (double)atomic_load(&s->latency_us) / 1e6);
	fprintf(f, "joseki_request_duration_seconds_count %llu\n", cum);
	fprintf(f,
	        "# HELP joseki_requests_in_flight Requests begun and not yet answered, this "
	        "one among them.\n# TYPE joseki_requests_in_flight gauge\n"
	        "joseki_requests_in_flight %d\n",
	        atomic_load(&s->inflight));
	uint64_t positions = 0;
	BookTxn *t;
	int crc = bookdb_txn_begin(&t, s->db, false);
	if (crc == 0) {
		crc = bookdb_count(&positions, t, BOOKDB_POS);
		bookdb_txn_abort(t);
	}
	if (crc == 0) /* a value the book could not give is left out, not shown as 0 */
		fprintf(f,
		        "# HELP joseki_book_positions Positions in the book.\n# TYPE "
		        "joseki_book_positions gauge\n"
		        "joseki_book_positions %llu\n",
		        (unsigned long long)positions);
	if (s->opt.work) api_work_metrics(s->opt.work, f);
	fprintf(f,
	        "# HELP joseki_uptime_seconds Seconds since the server started.\n"
	        "# TYPE joseki_uptime_seconds gauge\njoseki_uptime_seconds %lld\n",
	        (long long)(time(NULL) - s->started));
	fclose(f);
	return buf;
}

/*
 * A plain serve (no --work: then it writes, and nothing replaces the file
 * under a writer) follows its book: once BOOK/data.mdb is another file
 * (joseki compact, or a whole-book minimax that rebuilt the book), the next
 * request, looking at most once a second, opens the new one; the requests
 * in flight end on the old one first.
 */
static void follow_book(Server *s)
{
	if (s->opt.work) return;
	long long now = (long long)clock_ms_f(), last = atomic_load(&s->checked_ms);
	/* One request a second looks (the others go on at once). */
	if (now - last < 1000 || !atomic_compare_exchange_strong(&s->checked_ms, &last, now))
		return;
	/* The handle is looked at under the read side: a reopen under way has
	 * the write side. */
	pthread_rwlock_rdlock(&s->dblock);
	bool current = bookdb_file_current(s->db);
	pthread_rwlock_unlock(&s->dblock);
	if (current) return;
	pthread_rwlock_wrlock(&s->dblock);
	if (!bookdb_file_current(s->db)) {
		char err[BOOKDB_ERRLEN], line[BOOKDB_ERRLEN + 128];
		/* The last scan counted the old file (and its thread reads db). */
		api_stats_cache_free(&s->cache);
		api_stats_cache_init(&s->cache);
		int rc = bookdb_reopen(s->db, err);
		if (rc == 0)
			api_stats_scan(s->db, &s->cache); /* damage looked for, as at the start */
		int n = rc < 0 ? snprintf(line, sizeof line,
		                          "serve: %s: the book's file was replaced, and opening "
		                          "the new one failed: %s\n",
		                          bookdb_dir(s->db), err)
		               : snprintf(line, sizeof line,
		                          "serve: %s: the book's file was replaced (compact, or "
		                          "minimax --full): serving the new one\n",
		                          bookdb_dir(s->db));
		if (n > 0)
			(void)!write(2, line,
			             (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	pthread_rwlock_unlock(&s->dblock);
}

/* A suspended work request answered (the service thread's ApiWorkWake): its
 * connection goes on, and the handler is called again to send the answer. */
static void wake_request(void *ctx)
{
	Req *r = ctx;
	atomic_store(&r->woken, true);
	MHD_resume_connection(r->conn);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
	(void)version;
	Server *s = cls;
	Req *r = *con_cls; /* made at its request line (begin_request) */
	if (!r) return MHD_NO;
	if (!r->begun) {
		r->begun = true;
		r->work = is_work(s, url);
		const char *msg;
		int st = head_refusal(r, c, url, &msg);
		return st ? reply_error(s, c, r, st, msg) : MHD_YES;
	}
	/* A body is read to its end (counted, and kept for the work API) before
	 * the answer. */
	if (*upload_size) {
		r->body += *upload_size;
		if (r->work) keep_body(r, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	int status = 500, retry = 0;
	char *body = NULL;
	if (r->call) { /* woken: the service thread has answered it */
		body = api_work_call_finish(s->opt.work, r->call, &status, &retry);
		r->call = NULL;
		atomic_fetch_sub(&s->parked, 1);
	} else if (atomic_load(&s->stopping)) {
		return reply_error(s, c, r, 503, "shutting down");
	} else if (r->work) {
		const char *auth =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		ApiWorkCall *call = NULL;
		body = api_work_handle(s->opt.work, method, url, auth, r->buf, r->len, r->too_large,
		                       &status, &retry, &call);
		if (call) {
			/* Whole: no deadline at the gate while the service works on
			 * it, and this thread free for the other connections. */
			r->call = call;
			r->conn = c;
			r->answered = true;
			gate_request(s->gate, c, GATE_REQ_ANSWER);
			atomic_fetch_add(&s->parked, 1);
			MHD_suspend_connection(c);
			api_work_call_start(s->opt.work, call, wake_request, r);
			return MHD_YES;
		}
	}
	if (r->work) {
		r->retry_after = retry;
		if (status == 405) r->allow = strcmp(url, "/v1/work/status") ? "POST" : "GET, HEAD";
		if (status == 204 || (!body && status < 300))
			return reply(s, c, r, status, "application/json", body ? body : strdup(""),
			             body ? strlen(body) : 0, true);
		return reply_json(s, c, r, status, body);
	}
	if (r->body > BODY_MAX) return reply_error(s, c, r, 413, "request body too large");
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
	if (!strcmp(method, MHD_HTTP_METHOD_OPTIONS) && is_route(url)) {
		/* CORS preflight. */
		struct MHD_Response *resp =
		    MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		if (!resp) return MHD_NO;
		if (!s->opt.no_cors) {
			MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
			MHD_add_response_header(resp, "Access-Control-Allow-Methods",
			                        "GET, HEAD, OPTIONS");
		}
		MHD_add_response_header(resp, "Allow", "GET, HEAD, OPTIONS");
		r->status = 204;
		enum MHD_Result rc = MHD_queue_response(c, 204, resp);
		MHD_destroy_response(resp);
		return rc;
	}
	if (!is_route(url))
		return reply_error(
		    s, c, r, 404,
		    "no such path (see /, /work.html, /v1/query, /v1/stats, /v1/line, "
		    "/v1/work/history, /healthz, /metrics)");
	if (!get)
		return reply_error(s, c, r, 405, "method not allowed: the API is read-only (GET)");

	const ServerAsset *a = asset(url);
	if (a)
		return reply(s, c, r, 200, a->content_type,
		             memcpy(malloc(a->len + 1), a->data, a->len), a->len, false);
	status = 200;
	ArgCheck ac = {{0}, ""};
	MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, check_arg, &ac);
	if (ac.msg[0]) return reply_error(s, c, r, 400, ac.msg);
	follow_book(s);
	pthread_rwlock_rdlock(&s->dblock);
	if (!strcmp(url, "/v1/query") || !strcmp(url, "/v1/line")) {
		const char *sfen = arg(c, "sfen"), *position = arg(c, "position");
		char *plus = plus_value(r, position ? "position" : "sfen");
		body = !strcmp(url, "/v1/query")
		           ? api_query(s->db, &s->cache, sfen, position, plus, &status)
		           : api_line(s->db, &s->cache, sfen, position, plus, arg(c, "plies"),
		                      &status);
		free(plus);
	} else if (!strcmp(url, "/v1/stats")) {
		body = api_stats(s->db, &s->cache, &status);
	} else if (!strcmp(url, "/v1/work/history")) {
		body = api_work_history(s->db, arg(c, "hours"), &status);
	} else if (!strcmp(url, "/healthz")) {
		body = api_health(s->db, &s->cache, &status);
	} else if (!strcmp(url, "/metrics")) {
		char *m = metrics_text(s);
		pthread_rwlock_unlock(&s->dblock);
		if (!m) return reply_error(s, c, r, 500, "out of memory");
		return reply(s, c, r, 200, "text/plain; version=0.0.4; charset=utf-8", m, strlen(m),
		             false);
	}
	pthread_rwlock_unlock(&s->dblock);
	return reply_json(s, c, r, status, body);
}

static void count_status(Server *s, int status)
{
	size_t i = 0;
	while (i < NSTATUS && STATUSES[i] != status) i++;
	atomic_fetch_add(&s->requests[i], 1);
}

/* An answer the gate gave itself (it never reaches the handler). */
static void gate_status(void *ctx, int status)
{
	count_status(ctx, status);
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                              enum MHD_ConnectionNotificationCode toe)
{
	Server *s = cls;
	gate_notify(s->gate, c, socket_ctx, toe == MHD_CONNECTION_NOTIFY_STARTED);
}

/* A request line read (libmicrohttpd's URI log callback, for every request,
 * the later ones on a kept-alive connection too): its record, and its
 * deadline at the gate. */
static void *begin_request(void *cls, const char *uri, struct MHD_Connection *c)
{
	Server *s = cls;
	Req *r = calloc(1, sizeof *r);
	if (r) {
		r->t0 = clock_ns();
		atomic_fetch_add(&s->inflight, 1);
		/* Kept for the position's '+' (plus_value): none is in most. */
		const char *q = uri ? strchr(uri, '?') : NULL;
		if (q && strchr(q, '+')) r->query = strdup(q + 1);
	}
	gate_request(s->gate, c, GATE_REQ_BEGIN);
	return r;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	Server *s = cls;
	gate_request(s->gate, c, GATE_REQ_DONE);
	Req *r = *con_cls;
	if (!r) return;
	*con_cls = NULL;
	atomic_fetch_sub(&s->inflight, 1);
	if (toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN) atomic_fetch_add(&s->cut, 1);
	if (r->call && atomic_load(&r->woken)) {
		/* Closed once woken, before its answer went: thrown away. (Never
		 * before: a suspended connection is not closed, and the daemon
		 * stops only when none is left, server_stop.) */
		int st, ra;
		free(api_work_call_finish(s->opt.work, r->call, &st, &ra));
		atomic_fetch_sub(&s->parked, 1);
	}
	free(r->buf);
	free(r->query);
	double t = since(r->t0);
	if (r->status) {
		count_status(s, r->status);
		size_t b = 0;
		while (b < NBUCKETS && t > BUCKETS[b]) b++;
		atomic_fetch_add(&s->buckets[b], 1);
		atomic_fetch_add(&s->latency_us, (unsigned long long)(t * 1e6));
	}
	free(r);
}

/* The one log line of a request: method, path, status, microseconds. */
static enum MHD_Result log_handle(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
	Server *s = cls;
	enum MHD_Result rc = handle(cls, c, url, method, version, upload, upload_size, con_cls);
	Req *r = *con_cls;
	if (r && r->status && !r->answered) {
		/* Whole and answered: no deadline while the server works on it. */
		r->answered = true;
		gate_request(s->gate, c, GATE_REQ_ANSWER);
	}
	if (s->opt.log && r && r->status && !*upload_size) {
		/* The client's bytes are shown as text: a newline or an escape
		 * sequence in a path (%0a, %1b) forges no line and moves no cursor. */
		char line[256], m[24], u[160];
		int n = snprintf(line, sizeof line, "%s %s %d %.0fus\n",
		                 errmsg_escape(m, sizeof m, method, strlen(method)),
		                 errmsg_escape(u, sizeof u, url, strlen(url)), r->status,
		                 since(r->t0) * 1e6);
		if (n > 0)
			(void)!write(2, line,
			             (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	return rc;
}

int server_start(Server **out, BookDB *db, const ServerOptions *opt, char *err)
{
	*out = NULL;
	Server *s = calloc(1, sizeof *s);
	if (!s) return errmsg_set(err, SERVER_ERRLEN, SERVER_ENOMEM, "out of memory");
	s->db = db;
	s->opt = *opt;
	s->fd = -1;
	s->started = time(NULL);
	api_stats_cache_init(&s->cache);
	/* A writer waiting (follow_book) goes before new readers: requests that
	 * never stop must not starve it. */
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->dblock, &ra);
	pthread_rwlockattr_destroy(&ra);
	atomic_init(&s->checked_ms, (long long)clock_ms_f());
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(opt->port)};
	const char *addr = opt->addr ? opt->addr : "127.0.0.1";
	int rc = SERVER_EINVAL;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		errmsg_set(err, SERVER_ERRLEN, rc, "'%s' is not an IPv4 address", addr);
		goto fail;
	}
	rc = SERVER_ELISTEN;
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s->fd, 1024) < 0) {
		errmsg_set(err, SERVER_ERRLEN, rc, "%s:%u: %s", addr, opt->port, strerror(errno));
		goto fail;
	}
	socklen_t sl = sizeof sa;
	getsockname(s->fd, (struct sockaddr *)&sa, &sl);
	s->port = ntohs(sa.sin_port);
	unsigned threads = opt->threads;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned)n : 1;
	}
	unsigned maxc = opt->max_connections ? opt->max_connections : 1024u;
	/* libmicrohttpd's own time-out (silence) is a backstop behind the
	 * gate's deadlines: a kept-alive connection is the gate's to close. */
	unsigned keepalive_s =
	    (opt->keepalive_ms ? opt->keepalive_ms : GATE_KEEPALIVE_MS) / 1000 + 1;
	/* Room for every connection the gate lets in, plus the book's files. */
	struct rlimit nl;
	if (getrlimit(RLIMIT_NOFILE, &nl) == 0 && nl.rlim_cur < (rlim_t)maxc + 256) {
		nl.rlim_cur = nl.rlim_max < (rlim_t)maxc + 256 ? nl.rlim_max : (rlim_t)maxc + 256;
		setrlimit(RLIMIT_NOFILE, &nl);
	}
	/* The gate accepts (server/gate.h) and hands each connection over once
	 * its first request's head is whole: libmicrohttpd listens on nothing,
	 * and its own cap, above the gate's, never refuses one. poll(), not
	 * epoll: libmicrohttpd's epoll loop (0.9.75, and as of 2026) reads
	 * events until a call returns fewer than its batch of 128, each call
	 * with the loop's timeout, so a worker whose ready events came to
	 * exactly 128 blocks in the next call (up to the connection timeout)
	 * with the connections it found ready not yet served: a /healthz
	 * handed over as a flood's connections closed waited 1 s, once 10 s
	 * (docs/notes/server.md). Its poll() loop makes one call a round. */
	s->d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
	        MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME,
	    0, NULL, NULL, log_handle, s, MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_LIMIT, maxc + 64 * threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)CONN_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT, keepalive_s,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_NOTIFY_CONNECTION,
	    notify_connection, s, MHD_OPTION_URI_LOG_CALLBACK, begin_request, s, MHD_OPTION_END);
	if (!s->d) {
		rc = SERVER_EMHD;
		errmsg_set(err, SERVER_ERRLEN, rc, "%s:%u: libmicrohttpd did not start", addr,
		           s->port);
		goto fail;
	}
	GateOptions go = {.max_connections = maxc,
	                  .per_ip = opt->per_ip == SERVER_PER_IP_OFF ? 0
	                            : opt->per_ip                    ? opt->per_ip
	                                                             : GATE_PER_IP_DEFAULT,
	                  .request_ms = opt->request_ms,
	                  .keepalive_ms = opt->keepalive_ms,
	                  .on_status = gate_status,
	                  .ctx = s,
	                  .cors = !opt->no_cors};
	if (gate_start(&s->gate, s->fd, s->d, &go) < 0) {
		rc = SERVER_EMHD;
		errmsg_set(err, SERVER_ERRLEN, rc, "%s:%u: the accept thread did not start: %s",
		           addr, s->port, strerror(errno));
		MHD_stop_daemon(s->d);
		goto fail;
	}
	s->fd = -1; /* the gate's now */
	/* Damage is looked for at once (the scan of /v1/stats): /healthz says
	 * degraded as soon as it is found. Not for the coordinator, whose first
	 * search reads the book meanwhile and which meets damage there. */
	if (!opt->work) api_stats_scan(db, &s->cache);
	*out = s;
	return 0;
fail:
	if (s->fd >= 0) close(s->fd);
	api_stats_cache_free(&s->cache);
	pthread_rwlock_destroy(&s->dblock);
	free(s);
	return rc;
}

int server_stop(Server *s)
{
	if (!s) return 0;
	atomic_store(&s->stopping, true);
	/* No new connections (those waiting in the gate get 503); those open
	 * get 503 to any new request; then the requests in flight end. */
	gate_stop(s->gate);
	/* The work requests with the service thread are answered first, however
	 * long its round takes: a suspended connection must not outlive the
	 * daemon (api_work_stop, which stops that thread, comes after this). */
	while (atomic_load(&s->parked) > 0) usleep(1000);
	/* Up to 2 s for the requests in flight to finish, then the daemon stops
	 * (closing the kept-alive connections between two requests: waiting for
	 * them to go let clients that kept asking hold the stop for the whole 2 s,
	 * each request answered 503). */
	for (int i = 0; i < 200 && atomic_load(&s->inflight) > 0; i++) usleep(10000);
	MHD_stop_daemon(s->d);
	int cut = atomic_load(&s->cut);
	gate_free(s->gate);
	api_stats_cache_free(&s->cache);
	pthread_rwlock_destroy(&s->dblock);
	free(s);
	return cut;
}
