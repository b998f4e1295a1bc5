/*
 * joseki bench-work --server URL --token-file F [--clients N] [--seconds S] [--max M]
 *                  [--rate R]
 *
 * Hidden: the load generator of tools/bench_cluster.sh. N client threads
 * (keep-alive libcurl handles) act as instant workers against a coordinator:
 * acquire up to M positions, answer each at once with a legal move of it and
 * a made-up score, submit, repeat, for S seconds. One summary line on stdout:
 * results stored per second, acquire latency percentiles, the time to the
 * first positions acquired (a fresh coordinator's first selection), requests.
 *
 * Closed loop by default: each client sends its next acquire when its last
 * submit is answered, so the coordinator runs saturated and the latency is
 * that of a full queue (clients / rate). --rate R paces the acquires instead
 * (open loop): one every M / R seconds in all, taken by whichever client is
 * free, so that R results/s are asked for; each acquire's latency counts
 * from the time it was due, not from when a client got round to sending it,
 * so a stall of the coordinator shows in full (no coordinated omission). The
 * schedule starts once a first acquire (a fresh coordinator's first
 * selection, reported apart) is answered; S seconds of schedule follow, and
 * every acquire due in them is sent, late or not.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/worker_wire.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

/* The paced schedule (--rate): acquire i is due at start_ms + i * every_ms. */
typedef struct {
	double start_ms, every_ms, end_ms;
	atomic_ullong next;
} Pace;

typedef struct {
	const char *server;
	const char *auth;
	int id, max;
	double deadline_ms;
	Pace *pace; /* NULL: closed loop */
	uint64_t results, requests, acquires, empty, errors;
	double *lat;               /* acquire latencies, ms */
	double *due;               /* ... and when each was due (clock_ms_f) */
	double submit_max;         /* the longest submit, ms */
	double warm_ms;            /* requests started after this count in the warm maxima */
	double start_ms, first_ms; /* the run's start; its first positions acquired (ms after) */
	bool got_first;
	/* No request before (clock_ms_f; 0: none): a 503's Retry-After, or a
	 * second after an acquire that got no answer (closed loop). */
	double retry_at;
	bool refused; /* a 401 or 403: the token is not let in, so no more requests */
	double acquire_max_warm, submit_max_warm;
	size_t nsub, nsubw; /* submits answered (204), of them in the warm window */
	size_t nlat, caplat, capdue;
	char *resp;
	size_t rlen, rcap;
	Position *pos;
	SearchResult *res;
	char fail[256]; /* the first failed request: what and why ("": none) */
} Client;

/* Keeps the first failure's description (stderr says it at the end). */
static void note_fail(Client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_fail(Client *c, const char *fmt, ...)
{
	if (c->fail[0]) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->fail, sizeof c->fail, fmt, ap);
	va_end(ap);
}

/* The answer's "error" text, or "" (not JSON, or none). */
static void answer_error(const Client *c, char *out, size_t len)
{
	json_t *j = c->resp ? json_loadb(c->resp, c->rlen, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));
	snprintf(out, len, "%s%.150s%s", e ? " (" : "", e ? e : "", e ? ")" : "");
	json_decref(j);
}

/* Keeps what answered status st to the request what ("POST /v1/work/acquire")
 * as the first failure, with the answer's error; no answer (st <= 0): post
 * kept the reason already. */
static void note_status(Client *c, const char *what, long st)
{
	if (st <= 0 || c->fail[0]) return;
	char why[200];
	answer_error(c, why, sizeof why);
	note_fail(c, "%s: HTTP %ld%s", what, st, why);
}

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
	Client *c = ud;
	size_t len = sz * n;
	if (array_grow((void **)&c->resp, &c->rcap, c->rlen + len + 1, 1, 4096)) return 0;
	memcpy(c->resp + c->rlen, p, len);
	c->rlen += len;
	c->resp[c->rlen] = 0;
	return len;
}

/* POST body to path, or GET it when body is NULL; the answer in c->resp. */
static long post(Client *c, CURL *h, const char *path, const char *body)
{
	char url[1024];
	snprintf(url, sizeof url, "%s%s", c->server, path);
	struct curl_slist *hd = curl_slist_append(NULL, c->auth);
	hd = curl_slist_append(hd, "Content-Type: application/json");
	c->rlen = 0;
	if (c->resp) c->resp[0] = 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	else
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	long status = 0;
	CURLcode rc = curl_easy_perform(h);
	curl_slist_free_all(hd);
	c->requests++;
	if (rc != CURLE_OK) {
		note_fail(c, "%s %s: %s", body ? "POST" : "GET", path, curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	/* Final, as for a worker (docs/cluster.md): asking again changes nothing. */
	if (status == 401 || status == 403) c->refused = true;
	/* A coordinator that stops (or cannot answer now) says when to ask
	 * again; a worker waits that long, and so does this client. */
	curl_off_t ra = -1;
	if (status == 503 && curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		c->retry_at = clock_ms_f() + (double)ra * 1000.0;
	return status;
}

/* The submit body for an acquire answer (read as a worker reads it): one
 * legal move per position, written as a worker writes it. NULL when the answer
 * is not a lease (*n 0) or out of memory. */
static char *answer(Client *c, char *lease, size_t leaselen, size_t *n)
{
	WorkerLease l;
	*n = 0;
	if (worker_lease_parse(&l, c->resp, c->rlen, WORKER_LEASE_MAX, NULL) < 0) return NULL;
	snprintf(lease, leaselen, "%s", l.id);
	json_t *rs = json_array();
	for (int i = 0; rs && i < l.n; i++) {
		const char *key = l.pos[i].key;
		Move mv[MOVEGEN_MAX];
		int nm = sfen_parse(c->pos, l.pos[i].sfen, NULL, NULL) == 0
		             ? movegen_legal(c->pos, mv)
		             : 0;
		SearchResult *r = c->res;
		if (nm > 0) {
			Move m = mv[(size_t)key[0] % (size_t)nm];
			memset(r, 0, sizeof *r);
			r->nlines = 1;
			r->bestmove = m;
			r->lines[0] =
			    (SearchLine){.move = m,
			                 .multipv = 1,
			                 .depth = 10,
			                 .nodes = 1000,
			                 .pv_len = 1,
			                 .value = (int)(strtoul(key + 24, NULL, 16) % 400) - 200};
			r->lines[0].pv[0] = m;
			usi_move_write(m, r->lines[0].usi);
		}
		json_t *e = worker_result_json(key, nm > 0 ? r : NULL, "no move");
		if (!e || json_array_append_new(rs, e) < 0) {
			json_decref(rs);
			rs = NULL;
		}
	}
	*n = (size_t)l.n;
	worker_lease_free(&l);
	if (!rs) return NULL;
	char name[32];
	snprintf(name, sizeof name, "bench-%d", c->id);
	json_t *body = json_pack("{s:s, s:s, s:i, s:o}", "worker", name, "engine", "instant", "nps",
	                         1000000, "results", rs);
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	return s;
}

/* One acquire due at due_ms (sent now) and the submit of its answer. The
 * acquire's latency counts from due_ms. Returns the acquire's HTTP status
 * (0: no answer). */
static long cycle(Client *c, CURL *h, const char *acq, double due_ms)
{
	long st = post(c, h, "/v1/work/acquire", acq);
	double dt = clock_ms_f() - due_ms;
	c->acquires++;
	if (st == 200 && !c->got_first) { /* a 204 while the first search runs is no answer */
		c->got_first = true;
		c->first_ms = due_ms + dt - c->start_ms;
	}
	/* The latencies are the answered acquires' (200, 204): a failed one
	 * (refused, timed out, 5xx) counts in errors alone. */
	bool answered = st == 200 || st == 204;
	if (answered && due_ms >= c->warm_ms && dt > c->acquire_max_warm) c->acquire_max_warm = dt;
	if (answered &&
	    !array_grow((void **)&c->lat, &c->caplat, c->nlat + 1, sizeof *c->lat, 1024) &&
	    !array_grow((void **)&c->due, &c->capdue, c->nlat + 1, sizeof *c->due, 1024)) {
		c->due[c->nlat] = due_ms;
		c->lat[c->nlat++] = dt;
	}
	if (st == 204) {
		c->empty++;
		if (!c->pace) usleep(10000);
		return st;
	}
	long acq_st = st;
	char lease[WORKER_LEASE_ID_MAX], path[WORKER_LEASE_ID_MAX + 32];
	size_t n = 0;
	char *body = st == 200 ? answer(c, lease, sizeof lease, &n) : NULL;
	if (!body) {
		if (st == 200)
			note_fail(c, "POST /v1/work/acquire: an answer that is not a lease");
		else
			note_status(c, "POST /v1/work/acquire", st);
		c->errors++;
		/* Closed loop: an error status again in 10 ms; no answer at all (a
		 * coordinator gone) in a second, not a hundred times a second. */
		if (!c->pace && st <= 0)
			c->retry_at = clock_ms_f() + 1000.0;
		else if (!c->pace)
			usleep(10000);
		return acq_st;
	}
	snprintf(path, sizeof path, "/v1/work/submit/%s", lease);
	double t0 = clock_ms_f();
	st = post(c, h, path, body);
	dt = clock_ms_f() - t0;
	free(body);
	if (st != 204) {
		char what[sizeof path + 8];
		snprintf(what, sizeof what, "POST %s", path);
		note_status(c, what, st);
		c->errors++;
		return acq_st;
	}
	if (dt > c->submit_max) c->submit_max = dt;
	if (t0 >= c->warm_ms && dt > c->submit_max_warm) c->submit_max_warm = dt;
	c->nsub++;
	c->nsubw += t0 >= c->warm_ms;
	c->results += n;
	return acq_st;
}

/* The coordinator's selection work so far: /v1/work/status's selector
 * object (docs/cluster.md). */
enum {
	SW_EXPANSIONS,
	SW_VISITS,
	SW_FETCHES,
	SW_FETCH_MISSES,
	SW_BOUND_HITS,
	SW_PATH_HITS,
	SW_PROVISIONAL,
	SW_N
};
static const char *const sw_names[SW_N] = {"expansions", "visits",    "fetches",    "fetch_misses",
                                           "bound_hits", "path_hits", "provisional"};

/* The selector's work counters in the status (w), and the coordinator's
 * instance ("" from one whose status has none): 0, or -1 (the status not
 * read: the fields are left 0). A 503 is asked again, every 50 ms for up
 * to 2 s, when retry: at the run's end a coordinator may refuse one more
 * connection from this address while it counts --per-ip-connections of
 * the clients' as open (joseki's does not count those closed). */
static int selector_work(Client *c, CURL *h, double w[SW_N], char instance[17], bool retry)
{
	memset(w, 0, SW_N * sizeof *w);
	instance[0] = 0;
	long st = post(c, h, "/v1/work/status", NULL);
	for (int i = 0; retry && st == 503 && i < 40; i++) {
		usleep(50000);
		st = post(c, h, "/v1/work/status", NULL);
	}
	if (st != 200) {
		note_status(c, "GET /v1/work/status", st);
		return -1;
	}
	json_t *root = json_loadb(c->resp, c->rlen, 0, NULL);
	json_t *sel = json_object_get(root, "selector");
	for (int i = 0; i < SW_N; i++) w[i] = json_number_value(json_object_get(sel, sw_names[i]));
	const char *in = json_string_value(json_object_get(root, "instance"));
	if (in) snprintf(instance, 17, "%s", in);
	int rc = json_is_object(sel) ? 0 : -1;
	json_decref(root);
	return rc;
}

static void acquire_body(char *acq, size_t len, const Client *c)
{
	snprintf(acq, len, "{\"worker\":\"bench-%d\",\"max\":%d,\"nps\":1000000}", c->id, c->max);
}

static void sleep_until(double t_ms)
{
	double now = clock_ms_f();
	if (now < t_ms) usleep((useconds_t)((t_ms - now) * 1000.0));
}

static void *client(void *arg)
{
	Client *c = arg;
	CURL *h = curl_easy_init();
	char acq[128];
	acquire_body(acq, sizeof acq, c);
	while (h && !c->refused) {
		double due;
		if (c->retry_at > 0) { /* up to the run's end */
			double end = c->pace ? c->pace->end_ms : c->deadline_ms;
			sleep_until(c->retry_at < end ? c->retry_at : end);
			c->retry_at = 0;
		}
		if (c->pace) {
			unsigned long long i = atomic_fetch_add(&c->pace->next, 1);
			due = c->pace->start_ms + (double)i * c->pace->every_ms;
			if (due >= c->pace->end_ms) break;
			sleep_until(due);
		} else if ((due = clock_ms_f()) >= c->deadline_ms) {
			break;
		}
		cycle(c, h, acq, due);
	}
	curl_easy_cleanup(h);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* --timeline: for each window_s seconds of the run from t0 (by when the
 * acquires were due), the acquires answered, their p50, p99 and longest
 * latency and how many took over 50 ms. 0, or -1 with errno. */
static int write_timeline(const char *path, const Client *cs, int clients, double t0, int seconds,
                          int window_s)
{
	const double WINDOW_MS = window_s * 1000.0;
	size_t nw = (size_t)seconds / (size_t)window_s + 2;
	double **w = calloc(nw, sizeof *w);
	size_t *n = calloc(nw, sizeof *n), *cap = calloc(nw, sizeof *cap);
	FILE *f = w && n && cap ? fopen(path, "w") : NULL;
	int rc = f ? 0 : -1;
	for (int i = 0; rc == 0 && i < clients; i++)
		for (size_t j = 0; rc == 0 && j < cs[i].nlat; j++) {
			double d = cs[i].due[j] < t0 ? 0 : cs[i].due[j] - t0;
			size_t k = (size_t)(d / WINDOW_MS);
			if (k >= nw) k = nw - 1;
			if (array_grow((void **)&w[k], &cap[k], n[k] + 1, sizeof **w, 256))
				rc = -1;
			else
				w[k][n[k]++] = cs[i].lat[j];
		}
	if (f && rc == 0) fprintf(f, "# from_s acquires p50_ms p99_ms max_ms over_50ms\n");
	for (size_t k = 0; f && rc == 0 && k < nw; k++) {
		if (!n[k]) continue;
		qsort(w[k], n[k], sizeof **w, cmp_double);
		size_t over = 0;
		for (size_t j = 0; j < n[k]; j++) over += w[k][j] > 50;
		fprintf(f, "%zu %zu %.2f %.2f %.2f %zu\n", k * (size_t)window_s, n[k],
		        w[k][n[k] / 2], w[k][n[k] * 99 / 100], w[k][n[k] - 1], over);
	}
	if (f && fclose(f) != 0) rc = -1;
	for (size_t k = 0; w && k < nw; k++) free(w[k]);
	free(w);
	free(n);
	free(cap);
	return rc;
}

int cmd_bench_work(int argc, char **argv)
{
	const char *server = NULL, *token_file = NULL;
	int clients = 8, seconds = 60, max = 32, rate = 0;
	double warm_opt = -1;
	const char *timeline = NULL;
	int window_s = 10;
	const CliOpt opts[] = {
	    CLI_STR("--server", &server, "URL", "the coordinator", .required = true),
	    CLI_STR("--token-file", &token_file, "F", "a worker token", .required = true),
	    CLI_NUM("--clients", &clients, 1, 256, "N", "client threads (default 8)"),
	    CLI_NUM("--seconds", &seconds, 1, 1000000, "S", "how long (default 60)"),
	    CLI_NUM("--max", &max, 1, 100000, "M", "positions an acquire (default 32)"),
	    CLI_NUM("--rate", &rate, 0, 10000000, "R",
	            "results/s asked for: acquires paced, open loop (default 0: closed loop)"),
	    CLI_REAL("--warm-seconds", &warm_opt, 0, 1000000, "W",
	             "the warm figures take the acquires due after W s (default 15, or half "
	             "of a run of 30 s or less)"),
	    CLI_STR(
	        "--timeline", &timeline, "FILE",
	        "the acquires' latencies by window of the run, a line each, into FILE (default: "
	        "none)"),
	    CLI_NUM("--timeline-seconds", &window_s, 1, 1000000, "T",
	            "--timeline's windows: T s each (default 10)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"bench-work", opts, "docs/cluster.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	char tok[256] = "", auth[300];
	FILE *f = fopen(token_file, "r");
	if (!f) {
		joseki_error("bench-work: cannot read %s: %s", token_file, strerror(errno));
		return 1;
	}
	if (!fgets(tok, sizeof tok, f)) tok[0] = 0;
	fclose(f);
	tok[strcspn(tok, "\r\n")] = 0;
	if (!tok[0]) {
		joseki_error("bench-work: %s: no token on its first line", token_file);
		return 1;
	}
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
	shogi_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	Client *cs = calloc((size_t)clients, sizeof *cs);
	pthread_t *th = calloc((size_t)clients, sizeof *th);
	Pace pace = {0};
	double start = clock_ms_f(), first = -1;
	int run_clients = clients;
	char fail[256] = "";
	uint64_t results = 0, requests = 0, acquires = 0, empty = 0, errors = 0;
	if (rate) {
		/* The first acquire alone, unpaced: a fresh coordinator's first
		 * selection is start-up, not the latency under load. */
		Client c0 = {.server = server,
		             .auth = auth,
		             .max = max,
		             .start_ms = start,
		             .pos = malloc(sizeof(Position)),
		             .res = malloc(sizeof(SearchResult))};
		CURL *h = curl_easy_init();
		char acq[128];
		acquire_body(acq, sizeof acq, &c0);
		/* Until it has positions: a coordinator selecting in slices
		 * answers 204 while its first search runs (up to 10 minutes);
		 * anything else but positions (nothing listening, a wrong token)
		 * ends the wait at once. */
		for (int k = 0; h && !c0.got_first && k < 12000; k++) {
			if (cycle(&c0, h, acq, clock_ms_f()) != 204) break;
			usleep(50000);
		}
		curl_easy_cleanup(h);
		/* Its results are not counted in the rate. Never positions: no
		 * paced run (exit status 1). */
		first = c0.got_first ? c0.first_ms : -1;
		requests = c0.requests;
		errors = c0.errors;
		snprintf(fail, sizeof fail, "%s", c0.fail);
		if (!c0.got_first) run_clients = 0;
		free(c0.lat);
		free(c0.due);
		free(c0.resp);
		free(c0.pos);
		free(c0.res);
		pace.start_ms = clock_ms_f();
		pace.every_ms = max * 1000.0 / rate;
		pace.end_ms = pace.start_ms + seconds * 1000.0;
	}
	/* The selection's work over the run (its status before and after). */
	Client cst = {.server = server, .auth = auth};
	CURL *hst = curl_easy_init();
	/* Its connection closed after each read: kept alive through the run, it
	 * would take one of the coordinator's connections from this address
	 * (--per-ip-connections) from the clients. */
	if (hst) curl_easy_setopt(hst, CURLOPT_FORBID_REUSE, 1L);
	double w0[SW_N], w1[SW_N];
	char in0[17], in1[17];
	bool have_work = hst && selector_work(&cst, hst, w0, in0, false) == 0;
	double t0 = rate ? pace.start_ms : start, deadline = t0 + seconds * 1000.0;
	/* The first selections of a fresh coordinator fault its book in: the
	 * warm figures leave out the acquires due in the first 15 s (the first
	 * half of a run of 30 s or less; --warm-seconds). */
	double warm_s = warm_opt >= 0 ? warm_opt : seconds > 30 ? 15.0 : seconds * 0.5;
	for (int i = 0; i < run_clients; i++) {
		cs[i] = (Client){.server = server,
		                 .auth = auth,
		                 .id = i,
		                 .max = max,
		                 .pace = rate ? &pace : NULL,
		                 .deadline_ms = deadline,
		                 .start_ms = start,
		                 .warm_ms = t0 + warm_s * 1000,
		                 .pos = malloc(sizeof(Position)),
		                 .res = malloc(sizeof(SearchResult))};
		pthread_create(&th[i], NULL, client, &cs[i]);
	}
	size_t nlat = 0, nlatw = 0, nsub = 0, nsubw = 0;
	double submit_max = 0, amax_warm = 0, smax_warm = 0;
	for (int i = 0; i < run_clients; i++) {
		pthread_join(th[i], NULL);
		if (!fail[0]) snprintf(fail, sizeof fail, "%s", cs[i].fail);
		if (!rate && cs[i].got_first && (first < 0 || cs[i].first_ms < first))
			first = cs[i].first_ms;
		if (cs[i].submit_max > submit_max) submit_max = cs[i].submit_max;
		if (cs[i].acquire_max_warm > amax_warm) amax_warm = cs[i].acquire_max_warm;
		if (cs[i].submit_max_warm > smax_warm) smax_warm = cs[i].submit_max_warm;
		results += cs[i].results;
		requests += cs[i].requests;
		acquires += cs[i].acquires;
		empty += cs[i].empty;
		errors += cs[i].errors;
		nlat += cs[i].nlat;
		nsub += cs[i].nsub;
		nsubw += cs[i].nsubw;
	}
	/* A paced run lasts its schedule at least: the last acquire, due just
	 * before the deadline, stands for the time up to it, so answers quicker
	 * than that do not raise the rate above the one asked for. */
	double end = clock_ms_f();
	if (rate && end < deadline) end = deadline;
	double el = (end - t0) / 1e3;
	have_work = have_work && selector_work(&cst, hst, w1, in1, true) == 0;
	curl_easy_cleanup(hst);
	free(cst.resp);
	/* The warm latencies: of the acquires due after warm_ms. */
	double *lat = malloc((nlat ? nlat : 1) * sizeof *lat),
	       *latw = malloc((nlat ? nlat : 1) * sizeof *latw);
	size_t k = 0;
	for (int i = 0; i < clients; i++)
		for (size_t j = 0; j < cs[i].nlat; j++) {
			lat[k++] = cs[i].lat[j];
			if (cs[i].due[j] >= cs[i].warm_ms) latw[nlatw++] = cs[i].lat[j];
		}
	if (timeline && write_timeline(timeline, cs, clients, t0, seconds, window_s) < 0) {
		joseki_error("bench-work: cannot write %s: %s", timeline, strerror(errno));
		errors++;
	}
	qsort(lat, nlat, sizeof *lat, cmp_double);
	qsort(latw, nlatw, sizeof *latw, cmp_double);
	/* A figure of requests none of which was answered is -1 (none), not 0. */
	double p50 = nlat ? lat[nlat / 2] : -1, p99 = nlat ? lat[(nlat * 99) / 100] : -1,
	       mx = nlat ? lat[nlat - 1] : -1, p50w = nlatw ? latw[nlatw / 2] : -1,
	       p99w = nlatw ? latw[(nlatw * 99) / 100] : -1;
	if (!nlatw) amax_warm = -1;
	if (!nsub) submit_max = -1;
	if (!nsubw) smax_warm = -1;
	printf(
	    "bench-work results %llu time_s %.1f results_per_s %.0f acquire_p50_ms %.2f "
	    "acquire_p99_ms %.2f acquire_max_ms %.2f submit_max_ms %.2f acquire_max_warm_ms %.2f "
	    "submit_max_warm_ms %.2f first_acquire_ms %.0f requests %llu acquires %llu no_work "
	    "%llu "
	    "errors %llu clients %d max %d rate %d acquire_p50_warm_ms %.2f acquire_p99_warm_ms "
	    "%.2f warm_after_s %g warm_acquires %zu\n",
	    (unsigned long long)results, el, results / el, p50, p99, mx, submit_max, amax_warm,
	    smax_warm, first, (unsigned long long)requests, (unsigned long long)acquires,
	    (unsigned long long)empty, (unsigned long long)errors, clients, max, rate, p50w, p99w,
	    warm_s, nlatw);
	/* Per result stored in the run: what the selection did for it. */
	/* Another instance, or counters that went back (a coordinator that says
	 * no instance): the coordinator restarted during the run. */
	bool other = have_work && strcmp(in0, in1) != 0, restarted = other;
	for (int i = 0; have_work && i < SW_N; i++) restarted |= w1[i] < w0[i];
	if (restarted) {
		printf("selector none (the coordinator restarted during the run: %s)\n",
		       other ? "another instance" : "its counters went back");
	} else if (have_work && !results) {
		printf("selector none (no results stored in the run)\n");
	} else if (have_work) {
		double per = (double)results;
		printf("selector");
		/* Three decimals: a figure of 0.015 a result is not 0.0. */
		for (int i = 0; i < SW_N; i++)
			printf(i == SW_PROVISIONAL ? " %s %.0f" : " %s_per_result %.3f",
			       sw_names[i], (w1[i] - w0[i]) / (i == SW_PROVISIONAL ? 1 : per));
		printf("\n");
	} else {
		printf("selector none (no selector work in /v1/work/status)\n");
	}
	for (int i = 0; i < clients; i++) {
		free(cs[i].lat);
		free(cs[i].due);
		free(cs[i].resp);
		free(cs[i].pos);
		free(cs[i].res);
	}
	free(lat);
	free(latw);
	free(cs);
	free(th);
	curl_global_cleanup();
	if (errors)
		joseki_error("bench-work: %llu of %llu requests failed; the first: %s%s",
		             (unsigned long long)errors, (unsigned long long)requests,
		             fail[0] ? fail : "(not said)",
		             rate && first < 0 ? "; no positions, so no paced run" : "");
	else if (rate && first < 0)
		joseki_error(
		    "bench-work: no positions in 10 minutes (the coordinator answered 204: "
		    "its first search still running?); no paced run");
	/* The selection's figures not had: said, and a failure. */
	bool unread = !have_work;
	if (unread)
		joseki_error("bench-work: the status could not be read: %s; no selection figures",
		             cst.fail[0] ? cst.fail : "(not said)");
	return errors || unread || (rate && first < 0) ? 1 : 0;
}
