/*
 * bookgen/worker.c — the cluster worker's loop (bookgen/worker.h).
 *
 * State: a list of leases in hand, each with its positions in one of four
 * states (QUEUED → RUNNING → DONE → SENT). Engine threads take the first
 * QUEUED position of the oldest lease, analyse it and leave a ready JSON
 * result (DONE). The calling thread, between HTTP requests, submits a lease's
 * DONE results when the lease has nothing QUEUED or RUNNING left (or a result
 * has waited a second), acquires when no more than N positions are
 * unfinished, and forgets a lease whose positions are all SENT. All of this
 * under one mutex; HTTP requests run without it.
 */
#include "bookgen/worker.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bookgen/worker_wire.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/position.h"
#include "shogi/rng.h"

enum { POS_QUEUED = 0, POS_RUNNING, POS_DONE, POS_SENT };

/* Largest batch grown for quick positions (see batch_size). */
#define WORKER_QUICK_BATCH 64

typedef struct Lease {
	struct Lease *next;
	WorkerLease l;
	int *state;     /* per position */
	json_t **res;   /* per position: the result while DONE */
	double *doneat; /* per position: when it became DONE (ms) */
	int unsent;     /* positions not SENT */
} Lease;

typedef struct Worker Worker;

typedef struct {
	Worker *w;
	SearchEngine *engine;
	pthread_t thread;
	bool started;
	Position *pos;
	SearchResult *res;
	double nps;     /* recent nodes/s of this engine */
	double busy_ms; /* summed analyse time */
	double cpu_ms;  /* this thread's CPU time inside analyse */
	uint64_t count; /* analyse calls */
} Slot;

/* One HTTP exchange's answer. */
typedef struct {
	long status; /* 0: no answer (connection error) */
	char *body;
	size_t len, cap;
	double retry_after; /* seconds, -1 if absent */
	char cerr[CURL_ERROR_SIZE];
	double sent_ms, recv_ms; /* unix ms: the request started, the answer was in */
} Reply;

struct Worker {
	const WorkerOptions *opt;
	WorkerStats *out;
	char *err;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	Slot *slots;
	int n;
	bool quit;
	Lease *leases; /* oldest first */
	int in_hand;   /* positions QUEUED or RUNNING */
	int batch;     /* the last batch size (the engines wake the loop when in_hand reaches it) */
	uint64_t acquired;
	CURL *h;
	struct curl_slist *hdrs;
	char engine_id[128];
	char base[1024];
	Reply r;
	uint64_t rng;
	double step_s;     /* back-off step (doubles up to the cap) */
	double acquire_at; /* ms: no acquire before */
	bool no_work_wait; /* acquire_at is a 204's wait (not a server error's) */
	double submit_at;  /* ms: no submit before */
	double start, last_progress;
	const char *state;  /* for the progress line: "working", "no work", ... */
	bool shutting_down; /* after the stop flag: requests are no longer cut short */
	bool acquiring;     /* an acquire is in flight (not cut short at once on stop) */
	double stop_seen;   /* ms: when a request in flight first saw the stop flag */
};

const char *worker_strerror(int code)
{
	switch (code) {
	case WORKER_OK:
		return "success";
	case WORKER_EINVAL:
		return "invalid argument";
	case WORKER_ENOMEM:
		return "out of memory";
	case WORKER_EAUTH:
		return "the coordinator refused the token";
	case WORKER_EREFUSED:
		return "the coordinator refused the request";
	case WORKER_EHTTP:
		return "HTTP client could not be set up";
	}
	return "unknown worker error";
}

int worker_read_token(char *out, const char *path, char *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return errmsg_set(err, WORKER_ERRLEN, WORKER_EINVAL,
		                  "%s: cannot read the token file", path);
	char line[WORKER_TOKEN_MAX + 2];
	bool got = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	size_t n = got ? strlen(line) : 0;
	if (n > WORKER_TOKEN_MAX)
		return errmsg_set(err, WORKER_ERRLEN, WORKER_EINVAL,
		                  "%s: the token is longer than %d bytes", path,
		                  WORKER_TOKEN_MAX - 1);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
	             line[n - 1] == '\t'))
		line[--n] = 0;
	size_t s = 0;
	while (line[s] == ' ' || line[s] == '\t') s++;
	if (!got || s == n)
		return errmsg_set(err, WORKER_ERRLEN, WORKER_EINVAL, "%s: the token file is empty",
		                  path);
	for (size_t i = s; i < n; i++)
		if ((unsigned char)line[i] <= ' ' || (unsigned char)line[i] >= 127)
			return errmsg_set(
			    err, WORKER_ERRLEN, WORKER_EINVAL,
			    "%s: the token holds a blank or unprintable byte at column %zu", path,
			    i + 1);
	memmove(out, line + s, n - s + 1);
	return 0;
}

/* ---- engine threads ---------------------------------------------------- */

/* The first QUEUED position (lock held), or false. */
static bool take(Worker *w, Lease **lp, int *ip)
{
	for (Lease *l = w->leases; l; l = l->next)
		for (int i = 0; i < l->l.n; i++)
			if (l->state[i] == POS_QUEUED) {
				*lp = l;
				*ip = i;
				return true;
			}
	return false;
}

static void *engine_thread(void *arg)
{
	Slot *s = arg;
	Worker *w = s->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		Lease *l = NULL;
		int i = 0;
		bool stop = false;
		while (!w->quit && !(stop = w->opt->stop && *w->opt->stop) && !take(w, &l, &i))
			pthread_cond_wait(&w->work_cv, &w->mu);
		if (w->quit || stop) break;
		l->state[i] = POS_RUNNING;
		const WorkerLeasePos *p = &l->l.pos[i];
		SearchBudget budget = l->l.budget;
		int multipv = l->l.multipv;
		pthread_mutex_unlock(&w->mu);

		char perr[SHOGI_ERRLEN], msg[SEARCH_ERRLEN + 64];
		int rc;
		double t0 = clock_ms_f(), c0 = clock_thread_cpu_ms();
		if (position_parse(s->pos, p->sfen, perr) < 0) {
			snprintf(msg, sizeof msg, "bad position: %.200s", perr);
			rc = SEARCH_EINVAL;
		} else {
			rc = search_analyse(s->engine, s->res, s->pos, &budget, multipv);
			if (rc < 0)
				snprintf(msg, sizeof msg, "%s: %.200s", search_strerror(rc),
				         search_last_error(s->engine));
			else if (s->res->nlines == 0) /* the protocol wants at least one line */
				snprintf(msg, sizeof msg, "the engine gave no line (bestmove %s)",
				         s->res->resign ? "resign"
				         : s->res->win  ? "win"
				                        : s->res->bestmove_usi);
		}
		double dt = clock_ms_f() - t0, dc = clock_thread_cpu_ms() - c0;
		json_t *j = NULL;
		bool failed = rc < 0 || s->res->nlines == 0;
		if (rc != SEARCH_ECANCELED)
			j = worker_result_json(p->key, failed ? NULL : s->res, failed ? msg : NULL);

		pthread_mutex_lock(&w->mu);
		s->busy_ms += dt;
		s->cpu_ms += dc;
		s->count++;
		if (rc == 0 && dt > 0) {
			double nps = (double)s->res->nodes * 1000.0 / dt;
			s->nps = s->nps > 0 ? 0.8 * s->nps + 0.2 * nps : nps;
		}
		if (!j) { /* cancelled (stopping) or out of memory: not done */
			l->state[i] = POS_QUEUED;
			if (rc != SEARCH_ECANCELED) w->quit = true;
			pthread_cond_broadcast(&w->done_cv);
		} else {
			l->state[i] = POS_DONE;
			l->res[i] = j;
			l->doneat[i] = clock_ms_f();
			w->in_hand--;
			/* Wake the HTTP loop only when it has something to do (a lease
			 * to submit, a batch to fetch): a wake-up per position costs the
			 * engine its CPU on a busy machine. The loop also looks every
			 * 50 ms. */
			bool lease_done = true;
			for (int k = 0; k < l->l.n && lease_done; k++)
				lease_done =
				    l->state[k] != POS_QUEUED && l->state[k] != POS_RUNNING;
			if (lease_done || w->in_hand <= w->batch)
				pthread_cond_broadcast(&w->done_cv);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- HTTP ---------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *u)
{
	Reply *r = u;
	size_t k = size * n;
	if (r->len + k > (4u << 20)) return 0; /* an answer this large is not ours */
	if (array_grow((void **)&r->body, &r->cap, r->len + k + 1, 1, 4096) < 0) return 0;
	memcpy(r->body + r->len, p, k);
	r->len += k;
	r->body[r->len] = 0;
	return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *u)
{
	Reply *r = u;
	size_t k = size * n;
	if (k > 12 && !strncasecmp(p, "retry-after:", 12)) {
		char buf[32];
		size_t m = k - 12 < sizeof buf - 1 ? k - 12 : sizeof buf - 1;
		memcpy(buf, p + 12, m);
		buf[m] = 0;
		char *end;
		double v = strtod(buf, &end);
		if (end != buf && v >= 0) r->retry_after = v;
	}
	return k;
}

/* Cuts a request short when the stop flag rises (a coordinator that hangs
 * must not keep a SIGTERM waiting), except while shutting down. An acquire
 * is let finish within the stop grace time: the coordinator may have granted
 * the lease already, and a lease whose id the worker never read cannot be
 * aborted (its positions would wait for the expiry and be charged a failed
 * try); shut_down aborts it with the others. */
static int on_xfer(void *u, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	Worker *w = u;
	(void)dt, (void)dn, (void)ut, (void)un;
	if (!(w->opt->stop && *w->opt->stop) || w->shutting_down) return 0;
	if (!w->acquiring) return 1;
	double now = clock_ms_f(), grace = w->opt->stop_grace_s > 0 ? w->opt->stop_grace_s : 3;
	if (w->stop_seen <= 0) w->stop_seen = now;
	return now - w->stop_seen > grace * 1000 / 2;
}

static double unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The journal (WorkerOptions.journal): a line is "what sent_ms recv_ms" of
 * the last exchange, then its fields; journal_end ends and flushes it, so a
 * worker killed with SIGKILL leaves whole lines. */
static bool journal_begin(Worker *w, const char *what)
{
	if (!w->opt->journal) return false;
	fprintf(w->opt->journal, "%s %.3f %.3f", what, w->r.sent_ms, w->r.recv_ms);
	return true;
}

static void journal_end(Worker *w)
{
	fputc('\n', w->opt->journal);
	fflush(w->opt->journal);
}

/* POST base+path with body (may be NULL). r->status 0 on a connection error
 * (message in r->cerr). timeout_s bounds the whole exchange. */
static void post(Worker *w, const char *path, const char *body, double timeout_s)
{
	Reply *r = &w->r;
	char url[1200];
	snprintf(url, sizeof url, "%s%s", w->base, path);
	r->status = 0;
	r->len = 0;
	if (r->body) r->body[0] = 0;
	r->retry_after = -1;
	r->cerr[0] = 0;
	r->sent_ms = unix_ms();
	curl_easy_setopt(w->h, CURLOPT_URL, url);
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
	long ms = (long)(timeout_s * 1000);
	curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS, ms < 200 ? 200L : ms);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, ms < 200 ? 200L : ms > 5000 ? 5000L : ms);
	CURLcode c = curl_easy_perform(w->h);
	r->recv_ms = unix_ms();
	if (c != CURLE_OK) {
		if (!r->cerr[0]) snprintf(r->cerr, sizeof r->cerr, "%s", curl_easy_strerror(c));
		return;
	}
	curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &r->status);
}

/* The "error" of a JSON error body, or the start of the body. */
static const char *reply_error(Worker *w, char *buf, size_t cap)
{
	Reply *r = &w->r;
	buf[0] = 0;
	json_t *j = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));
	snprintf(buf, cap, "%.200s", e ? e : r->len ? r->body : "no message");
	json_decref(j);
	return buf;
}

static void say(Worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(Worker *w, const char *fmt, ...)
{
	if (!w->opt->log) return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(w->opt->log, "worker: ");
	vfprintf(w->opt->log, fmt, ap);
	fputc('\n', w->opt->log);
	va_end(ap);
}

/* Waits after a failure: Retry-After when given, else a random share of the
 * step, which doubles up to the cap. Returns the wait in seconds. */
static double backoff(Worker *w)
{
	double cap = w->opt->max_backoff_s > 0 ? w->opt->max_backoff_s : 30;
	double d;
	if (w->r.retry_after >= 0) {
		d = w->r.retry_after;
	} else {
		double u = (double)(rng_next(&w->rng) >> 11) / 9007199254740992.0;
		d = w->step_s * (0.5 + 0.5 * u);
	}
	w->step_s = w->step_s * 2 > cap ? cap : w->step_s * 2;
	return d;
}

/* A connection error or a 5xx: every request waits. */
static void server_trouble(Worker *w, const char *what)
{
	char eb[256];
	double d = backoff(w);
	w->out->retries++;
	w->acquire_at = w->submit_at = clock_ms_f() + d * 1000;
	w->no_work_wait = false;
	if (w->r.status)
		say(w, "%s: %s answered %ld (%s); retrying in %.1fs", what, w->base, w->r.status,
		    reply_error(w, eb, sizeof eb), d);
	else
		say(w, "%s: %s: %s; retrying in %.1fs", what, w->base, w->r.cerr, d);
	w->state = "server unavailable";
}

static int auth_failed(Worker *w)
{
	char eb[256];
	return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EAUTH,
	                  "%s refused the token from %s (HTTP %ld: %s); not retrying", w->base,
	                  w->opt->token_file ? w->opt->token_file : "the command line", w->r.status,
	                  reply_error(w, eb, sizeof eb));
}

/* The engines' recent speeds, summed (takes the lock). */
static double recent_nps(Worker *w)
{
	double nps = 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < w->n; i++) nps += w->slots[i].nps;
	pthread_mutex_unlock(&w->mu);
	return nps;
}

/* ---- acquire ------------------------------------------------------------- */

/* Adds a parsed lease to the hand (lock taken here). 0 or WORKER_ENOMEM. */
static int add_lease(Worker *w, WorkerLease *wl)
{
	Lease *l = calloc(1, sizeof *l);
	if (!l) return WORKER_ENOMEM;
	l->l = *wl;
	l->state = calloc((size_t)wl->n, sizeof *l->state);
	l->res = calloc((size_t)wl->n, sizeof *l->res);
	l->doneat = calloc((size_t)wl->n, sizeof *l->doneat);
	if (!l->state || !l->res || !l->doneat) {
		free(l->state);
		free(l->res);
		free(l->doneat);
		free(l);
		return WORKER_ENOMEM;
	}
	l->unsent = wl->n;
	pthread_mutex_lock(&w->mu);
	Lease **tail = &w->leases;
	while (*tail) tail = &(*tail)->next;
	*tail = l;
	w->in_hand += wl->n;
	pthread_cond_broadcast(&w->work_cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* One acquire of up to max positions. 0 (whatever the answer), or a fatal code. */
static int acquire(Worker *w, int max)
{
	json_t *b = json_pack("{s:s, s:i, s:s, s:I}", "worker", w->opt->name, "max", max, "engine",
	                      w->engine_id, "nps", (json_int_t)recent_nps(w));
	char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!body) return WORKER_ENOMEM;
	w->acquiring = true;
	post(w, "/v1/work/acquire", body, 30);
	w->acquiring = false;
	free(body);
	long st = w->r.status;
	if (st == 200) {
		WorkerLease wl;
		char perr[256];
		if (worker_lease_parse(&wl, w->r.body ? w->r.body : "", w->r.len, max, perr,
		                       sizeof perr) < 0) {
			w->r.retry_after = -1;
			w->r.status = 0;
			snprintf(w->r.cerr, sizeof w->r.cerr, "unreadable lease: %.200s", perr);
			server_trouble(w, "acquire");
			return 0;
		}
		int rc = add_lease(w, &wl);
		if (rc < 0) {
			worker_lease_free(&wl);
			return rc;
		}
		if (journal_begin(w, "lease")) {
			fprintf(w->opt->journal, " %s %g", wl.id, wl.expires_in);
			for (int i = 0; i < wl.n; i++)
				fprintf(w->opt->journal, " %s", wl.pos[i].key);
			journal_end(w);
		}
		w->out->leases++;
		w->acquired += (uint64_t)wl.n;
		w->step_s = 1; /* work arrived */
		w->state = "working";
		return 0;
	}
	if (st == 204) {
		double d = backoff(w);
		w->out->no_work++;
		w->acquire_at = clock_ms_f() + d * 1000;
		w->no_work_wait = true;
		w->state = "no work";
		return 0;
	}
	if (st == 401 || st == 403) return auth_failed(w);
	if (st == 0 || st >= 500) {
		server_trouble(w, "acquire");
		return 0;
	}
	char eb[256];
	return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EREFUSED,
	                  "%s/v1/work/acquire answered %ld (%s): is it a joseki coordinator "
	                  "(joseki serve --work)?",
	                  w->base, st, reply_error(w, eb, sizeof eb));
}

/* ---- submit -------------------------------------------------------------- */

/* Marks a DONE position SENT (lock held); accepted counts it. */
static void mark_sent(Worker *w, Lease *l, int i, bool accepted)
{
	json_t *r = l->res[i];
	if (accepted && journal_begin(w, json_object_get(r, "failed") ? "failed" : "result")) {
		fprintf(w->opt->journal, " %s %s", l->l.id, l->l.pos[i].key);
		journal_end(w);
	}
	if (accepted) {
		if (json_object_get(r, "failed"))
			w->out->failed++;
		else
			w->out->positions++;
	} else {
		w->out->rejected++;
	}
	json_decref(r);
	l->res[i] = NULL;
	l->state[i] = POS_SENT;
	l->unsent--;
}

/* POSTs the results of positions idx[0..k) of lease l. Returns the status
 * (0: connection error). */
static long submit_some(Worker *w, Lease *l, const int *idx, int k, double timeout_s)
{
	json_t *arr = json_array(), *b;
	pthread_mutex_lock(&w->mu);
	for (int j = 0; arr && j < k; j++)
		if (json_array_append(arr, l->res[idx[j]]) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	pthread_mutex_unlock(&w->mu);
	b = arr ? json_pack("{s:s, s:s, s:I, s:o}", "worker", w->opt->name, "engine", w->engine_id,
	                    "nps", (json_int_t)recent_nps(w), "results", arr)
	        : NULL;
	char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!body) return -1;
	char path[128];
	snprintf(path, sizeof path, "/v1/work/submit/%s", l->l.id);
	post(w, path, body, timeout_s);
	free(body);
	return w->r.status;
}

/* Submits lease l's DONE results: all at once, and one by one after a 400 (so
 * that a refused result does not take the others with it) or a 413 (too
 * large a body). 0, or a fatal code. */
static int submit(Worker *w, Lease *l, double timeout_s)
{
	int idx[WORKER_LEASE_MAX], k = 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < l->l.n; i++)
		if (l->state[i] == POS_DONE) idx[k++] = i;
	pthread_mutex_unlock(&w->mu);
	if (!k) return 0;
	long st = submit_some(w, l, idx, k, timeout_s);
	if (st < 0) return WORKER_ENOMEM;
	char eb[256];
	if ((st == 400 || st == 413) && k > 1) { /* 413: over 1 MiB (many long MultiPV lines) */
		say(w, "lease %s: %d results refused together (%s); sending them one by one",
		    l->l.id, k, reply_error(w, eb, sizeof eb));
		for (int j = 0; j < k; j++) {
			st = submit_some(w, l, &idx[j], 1, timeout_s);
			if (st < 0) return WORKER_ENOMEM;
			if (st == 401 || st == 403) return auth_failed(w);
			if (st == 0 || st >= 500) break;
			if (st != 204 && st != 200)
				say(w, "lease %s: result for %s refused (%ld: %s)", l->l.id,
				    l->l.pos[idx[j]].key, st, reply_error(w, eb, sizeof eb));
			else
				w->out->submits++;
			pthread_mutex_lock(&w->mu);
			mark_sent(w, l, idx[j], st == 204 || st == 200);
			pthread_mutex_unlock(&w->mu);
		}
		if (st == 0 || st >= 500) server_trouble(w, "submit");
		return 0;
	}
	if (st == 401 || st == 403) return auth_failed(w);
	if (st == 0 || st >= 500) {
		server_trouble(w, "submit");
		return 0;
	}
	if (st == 204 || st == 200) {
		w->out->submits++;
		/* "No work" was said before these results: they make new leaves
		 * (their children), so ask again now rather than after the wait. */
		if (w->no_work_wait) {
			w->acquire_at = 0;
			w->no_work_wait = false;
		}
	} else
		say(w, "lease %s: %d results refused (%ld: %s); dropped", l->l.id, k, st,
		    reply_error(w, eb, sizeof eb));
	pthread_mutex_lock(&w->mu);
	for (int j = 0; j < k; j++) mark_sent(w, l, idx[j], st == 204 || st == 200);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* Frees leases with every position SENT (lock held). */
static void drop_finished(Worker *w)
{
	for (Lease **lp = &w->leases; *lp;) {
		Lease *l = *lp;
		if (l->unsent > 0) {
			lp = &l->next;
			continue;
		}
		*lp = l->next;
		worker_lease_free(&l->l);
		free(l->state);
		free(l->res);
		free(l->doneat);
		free(l);
	}
}

/* The lease to submit now, if any (lock held): one with DONE results and
 * nothing QUEUED or RUNNING, or a result older than a second. */
static Lease *due(Worker *w, double now)
{
	for (Lease *l = w->leases; l; l = l->next) {
		bool busy = false, done = false, old = false;
		for (int i = 0; i < l->l.n; i++) {
			if (l->state[i] == POS_QUEUED || l->state[i] == POS_RUNNING) busy = true;
			if (l->state[i] == POS_DONE) {
				done = true;
				if (now - l->doneat[i] >= 1000) old = true;
			}
		}
		if (done && (!busy || old)) return l;
	}
	return NULL;
}

/* ---- the loop ------------------------------------------------------------ */

static void progress(Worker *w, double now)
{
	double el = (now - w->start) / 1e3;
	uint64_t kept = 0;
	pthread_mutex_lock(&w->mu);
	for (Lease *l = w->leases; l; l = l->next)
		for (int i = 0; i < l->l.n; i++) kept += l->state[i] == POS_DONE;
	pthread_mutex_unlock(&w->mu);
	double nps = recent_nps(w);
	fprintf(w->opt->progress,
	        "\rworker: %llu done, %llu failed, %.1f/s, %llu waiting to be sent, %.0f nodes/s, "
	        "%s, %.0fs   ",
	        (unsigned long long)w->out->positions, (unsigned long long)w->out->failed,
	        el > 0 ? w->out->positions / el : 0.0, (unsigned long long)kept, nps, w->state, el);
	fflush(w->opt->progress);
}

/* Positions per acquire: N, or more when positions are quick, so that a
 * batch holds about half a second of the engines' work and round trips do not
 * dominate a small budget; but at most max(N, WORKER_QUICK_BATCH): a worker
 * killed with SIGKILL costs each position it held a failed try, and one worker
 * should not hoard what others could think. */
static int batch_size(Worker *w)
{
	double ms = 0;
	uint64_t count = 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < w->n; i++) {
		ms += w->slots[i].busy_ms;
		count += w->slots[i].count;
	}
	pthread_mutex_unlock(&w->mu);
	int b = w->n;
	if (count >= (uint64_t)w->n) {
		double per = ms / (double)count, want = w->n * 500.0 / (per > 0.01 ? per : 0.01);
		int cap = w->n > WORKER_QUICK_BATCH ? w->n : WORKER_QUICK_BATCH;
		b = want > cap ? cap : want < w->n ? w->n : (int)want;
	}
	pthread_mutex_lock(&w->mu);
	w->batch = b;
	pthread_mutex_unlock(&w->mu);
	return b;
}

static bool limit_reached(Worker *w)
{
	return w->opt->max_positions && w->acquired >= w->opt->max_positions;
}

static int run_loop(Worker *w)
{
	const WorkerOptions *opt = w->opt;
	for (;;) {
		if (opt->stop && *opt->stop) return 0;
		double now = clock_ms_f();
		pthread_mutex_lock(&w->mu);
		if (w->quit) { /* an engine thread ran out of memory */
			pthread_mutex_unlock(&w->mu);
			return WORKER_ENOMEM;
		}
		drop_finished(w);
		if (!w->leases && limit_reached(w)) {
			pthread_mutex_unlock(&w->mu);
			return 0;
		}
		Lease *l = now >= w->submit_at ? due(w, now) : NULL;
		int in_hand = w->in_hand;
		pthread_mutex_unlock(&w->mu);
		bool acted = false;
		int rc = 0, batch;
		if (l) {
			rc = submit(w, l, 30);
			acted = true;
		} else if (now >= w->acquire_at && !limit_reached(w) &&
		           in_hand <= (batch = batch_size(w))) {
			/* One batch is left: fetch the next before the engines run dry. */
			uint64_t max = (uint64_t)batch;
			if (opt->max_positions && max > opt->max_positions - w->acquired)
				max = opt->max_positions - w->acquired;
			rc = acquire(w, (int)max);
			acted = true;
		}
		if (rc < 0) return rc;
		now = clock_ms_f();
		if (opt->progress && now - w->last_progress >= 1000) {
			progress(w, now);
			w->last_progress = now;
		}
		if (acted) continue;
		/* Nothing to do now: wait for an engine, a timer or the stop flag. */
		pthread_mutex_lock(&w->mu);
		struct timespec ts = clock_realtime_in(50);
		pthread_cond_timedwait(&w->done_cv, &w->mu, &ts);
		pthread_mutex_unlock(&w->mu);
	}
}

/* After the stop flag: the engines are cancelled and joined; finished results
 * are submitted and every lease's rest aborted, within the grace time. */
static void shut_down(Worker *w)
{
	double grace = w->opt->stop_grace_s > 0 ? w->opt->stop_grace_s : 3;
	double end = clock_ms_f() + grace * 1000;
	for (Lease *l = w->leases; l; l = l->next) {
		double left = (end - clock_ms_f()) / 1000;
		if (left <= 0.05) break;
		if (submit(w, l, left) < 0) break;
	}
	drop_finished(w);
	for (Lease *l = w->leases; l; l = l->next) {
		double left = (end - clock_ms_f()) / 1000;
		if (left <= 0.05) continue;
		char path[128], body[256];
		snprintf(path, sizeof path, "/v1/work/abort/%s", l->l.id);
		json_t *b = json_pack("{s:s}", "worker", w->opt->name);
		char *s = b ? json_dumps(b, JSON_COMPACT) : NULL;
		snprintf(body, sizeof body, "%s", s ? s : "{}");
		free(s);
		json_decref(b);
		post(w, path, body, left);
		if (w->r.status == 204 && journal_begin(w, "abort")) {
			fprintf(w->opt->journal, " %s", l->l.id);
			journal_end(w);
		}
		if (w->r.status != 204)
			say(w, "abort of lease %s: %s", l->l.id,
			    w->r.status ? "refused" : w->r.cerr);
	}
}

static int setup(Worker *w)
{
	const WorkerOptions *opt = w->opt;
	size_t bl = strlen(opt->server);
	while (bl && opt->server[bl - 1] == '/') bl--;
	if (!bl || bl >= sizeof w->base)
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EINVAL, "bad server URL '%.200s'",
		                  opt->server);
	memcpy(w->base, opt->server, bl);
	w->base[bl] = 0;
	snprintf(w->engine_id, sizeof w->engine_id, "%s", search_name(opt->engines[0]));
	w->rng = opt->seed ? opt->seed : (uint64_t)clock_ns() ^ ((uint64_t)getpid() << 32);
	w->step_s = 1;
	w->state = "starting";
	json_object_seed(0);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(w->h = curl_easy_init()))
		return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EHTTP, "%s",
		                  "libcurl could not be initialised");
	char auth[WORKER_TOKEN_MAX + 32];
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", opt->token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	if (h) h = curl_slist_append(w->hdrs = h, "Content-Type: application/json");
	if (h) h = curl_slist_append(w->hdrs = h, "Expect:"); /* no 100-continue round trip */
	if (!h) return WORKER_ENOMEM;
	w->hdrs = h;
	curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, w->hdrs);
	curl_easy_setopt(w->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->h, CURLOPT_USERAGENT, "joseki-worker");
	curl_easy_setopt(w->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(w->h, CURLOPT_ERRORBUFFER, w->r.cerr);
	curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(w->h, CURLOPT_WRITEDATA, &w->r);
	curl_easy_setopt(w->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(w->h, CURLOPT_HEADERDATA, &w->r);
	curl_easy_setopt(w->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(w->h, CURLOPT_XFERINFOFUNCTION, on_xfer);
	curl_easy_setopt(w->h, CURLOPT_XFERINFODATA, w);
	w->slots = calloc((size_t)w->n, sizeof *w->slots);
	if (!w->slots) return WORKER_ENOMEM;
	for (int i = 0; i < w->n; i++) {
		Slot *s = &w->slots[i];
		s->w = w;
		s->engine = opt->engines[i];
		if (!(s->pos = malloc(sizeof *s->pos)) || !(s->res = malloc(sizeof *s->res)))
			return WORKER_ENOMEM;
		if (pthread_create(&s->thread, NULL, engine_thread, s) != 0) return WORKER_ENOMEM;
		s->started = true;
	}
	return 0;
}

static void join_engines(Worker *w)
{
	if (!w->slots) return;
	pthread_mutex_lock(&w->mu);
	w->quit = true;
	pthread_cond_broadcast(&w->work_cv);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < w->n; i++)
		if (w->slots[i].started) {
			pthread_join(w->slots[i].thread, NULL);
			w->slots[i].started = false;
			w->out->engine_s += w->slots[i].busy_ms / 1e3;
			w->out->engine_cpu_s += w->slots[i].cpu_ms / 1e3;
		}
}

static void teardown(Worker *w)
{
	join_engines(w);
	if (w->slots)
		for (int i = 0; i < w->n; i++) {
			free(w->slots[i].pos);
			free(w->slots[i].res);
		}
	free(w->slots);
	/* What is left was aborted (or the run failed): finished results not sent
	 * are counted, then freed. */
	for (Lease *l = w->leases; l; l = l->next) {
		for (int i = 0; i < l->l.n; i++) {
			w->out->unsent += l->state[i] == POS_DONE;
			json_decref(l->res[i]);
			l->res[i] = NULL;
		}
		l->unsent = 0;
	}
	drop_finished(w);
	if (w->h) curl_easy_cleanup(w->h);
	curl_slist_free_all(w->hdrs);
	free(w->r.body);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work_cv);
	pthread_cond_destroy(&w->done_cv);
}

int worker_run(WorkerStats *out, const WorkerOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	if (!opt->server || !opt->token || !opt->name || !opt->engines || opt->nengines < 1 ||
	    opt->nengines > WORKER_LEASE_MAX / 2)
		return errmsg_set(err, WORKER_ERRLEN, WORKER_EINVAL, "worker: %s",
		                  "need a server, a token, a name and 1..128 engines");
	if (!opt->name[0] || strlen(opt->name) > WORKER_NAME_MAX)
		return errmsg_set(err, WORKER_ERRLEN, WORKER_EINVAL,
		                  "worker name '%.80s' is not 1..%d bytes", opt->name,
		                  WORKER_NAME_MAX);
	Worker w = {.opt = opt, .out = out, .err = err, .n = opt->nengines};
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.work_cv, NULL);
	pthread_cond_init(&w.done_cv, NULL);
	w.start = w.last_progress = clock_ms_f();
	double cpu0 = clock_cpu_ms();
	int rc = setup(&w);
	if (rc == 0) rc = run_loop(&w);
	join_engines(&w); /* cancelled by the stop flag, or done */
	if (rc == 0 && opt->stop && *opt->stop) {
		w.state = "stopping";
		w.shutting_down = true;
		shut_down(&w);
	}
	if (opt->progress) {
		progress(&w, clock_ms_f());
		fputc('\n', opt->progress);
	}
	out->seconds = (clock_ms_f() - w.start) / 1e3;
	out->cpu_s = (clock_cpu_ms() - cpu0) / 1e3;
	teardown(&w);
	if (rc < 0 && err && !err[0]) errmsg_set(err, WORKER_ERRLEN, rc, "%s", worker_strerror(rc));
	return rc;
}
