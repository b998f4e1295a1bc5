/*
 * cluster/worker_http.c — the cluster worker's HTTP client side
 * (cluster/worker_priv.h): libcurl's callbacks, one POST at a time, the
 * back-off after failures, the journal, and the wire handling of acquire,
 * submit and abort (the JSON itself: cluster/worker_wire.h). Requests run
 * without the worker's mutex; the lease states they change are changed under
 * it.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cluster/worker_priv.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/rng.h"

/* ---- HTTP ---------------------------------------------------------------- */

size_t wk_on_body(char *p, size_t size, size_t n, void *u)
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

size_t wk_on_header(char *p, size_t size, size_t n, void *u)
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
 * try); wk_shut_down aborts it with the others. */
int wk_on_xfer(void *u, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
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
	w->last_post = clock_ms_f();
	curl_easy_setopt(w->h, CURLOPT_URL, url);
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
	long ms = (long)(timeout_s * 1000);
	curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS, ms < 200 ? 200L : ms);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, ms < 200 ? 200L : ms > 5000 ? 5000L : ms);
	CURLcode c = curl_easy_perform(w->h);
	r->recv_ms = unix_ms();
	if (c != CURLE_OK) {
		if (!r->cerr[0])
			errmsg_set(r->cerr, sizeof r->cerr, 0, "%s", curl_easy_strerror(c));
		return;
	}
	curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &r->status);
	/* Back after failures (server_trouble said each): said once. */
	if (w->troubles && r->status < 500) {
		wk_say(w, "%s answering again (after %llu failed request%s)", w->base,
		       (unsigned long long)w->troubles, w->troubles == 1 ? "" : "s");
		w->troubles = 0;
	}
}

/* The "error" of a JSON error body, or the start of the body. */
static const char *reply_error(Worker *w, char *buf, size_t cap)
{
	Reply *r = &w->r;
	buf[0] = 0;
	json_t *j = r->len ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));
	if (e)
		snprintf(buf, cap, "%s", e);
	else if (r->len)
		snprintf(buf, cap, "%.*s", (int)(r->len < 200 ? r->len : 200), r->body);
	else
		snprintf(buf, cap, "no message");
	json_decref(j);
	return buf;
}

void wk_say(Worker *w, const char *fmt, ...)
{
	if (!w->opt->log) return;
	/* What the server answered is shown as text, whatever it sent. */
	char raw[1024], line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	fprintf(w->opt->log, "worker: %s\n", errmsg_escape(line, sizeof line, raw, strlen(raw)));
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
		double u = rng_unit(&w->rng);
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
	w->troubles++;
	w->acquire_at = w->submit_at = clock_ms_f() + d * 1000;
	w->no_work_wait = false;
	if (w->r.status)
		wk_say(w, "%s: %s answered %ld (%s); retrying in %.1fs", what, w->base, w->r.status,
		       reply_error(w, eb, sizeof eb), d);
	else
		wk_say(w, "%s: %s: %s; retrying in %.1fs", what, w->base, w->r.cerr, d);
	w->state = "server unavailable";
}

static int auth_failed(Worker *w)
{
	char eb[400]; /* a quarantine's reason is long (docs/cluster.md) */
	return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EAUTH,
	                  "%s refused the token from %s (HTTP %ld: %s); not retrying", w->base,
	                  w->opt->token_file ? w->opt->token_file : "the command line", w->r.status,
	                  reply_error(w, eb, sizeof eb));
}

/* The engines' recent speeds, summed (takes the lock). */
double wk_recent_nps(Worker *w)
{
	double nps = 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; w->slots && i < w->n; i++) nps += w->slots[i].nps; /* none before setup */
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
int wk_acquire(Worker *w, int max)
{
	json_t *b =
	    json_pack("{s:s, s:s, s:i, s:s, s:I}", "worker", w->opt->name, "instance", w->instance,
	              "max", max, "engine", w->engine_id, "nps", (json_int_t)wk_recent_nps(w));
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
		char perr[WORKER_LEASE_ERRLEN];
		if (worker_lease_parse(&wl, w->r.body ? w->r.body : "", w->r.len, max, perr) < 0) {
			w->r.retry_after = -1;
			w->r.status = 0;
			errmsg_set(w->r.cerr, sizeof w->r.cerr, 0, "unreadable lease: %.200s",
			           perr);
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
	if (st == 410) {
		/* The run is over (its budget spent): what is held is finished
		 * and sent, nothing more is asked for. */
		char eb[256];
		snprintf(w->out->over, sizeof w->out->over, "%s", reply_error(w, eb, sizeof eb));
		w->state = "run over";
		return 0;
	}
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
	wk_spool_sent(w, l, i);
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
	b = arr ? json_pack("{s:s, s:s, s:s, s:I, s:o}", "worker", w->opt->name, "instance",
	                    w->instance, "engine", w->engine_id, "nps",
	                    (json_int_t)wk_recent_nps(w), "results", arr)
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
int wk_submit(Worker *w, Lease *l, double timeout_s)
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
		wk_say(w, "lease %s: %d results refused together (%s); sending them one by one",
		       l->l.id, k, reply_error(w, eb, sizeof eb));
		for (int j = 0; j < k; j++) {
			st = submit_some(w, l, &idx[j], 1, timeout_s);
			if (st < 0) return WORKER_ENOMEM;
			if (st == 401 || st == 403) return auth_failed(w);
			if (st == 0 || st >= 500) break;
			if (st != 204 && st != 200)
				wk_say(w, "lease %s: result for %s refused (%ld: %s)", l->l.id,
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
		wk_say(w, "lease %s: %d results refused (%ld: %s); dropped", l->l.id, k, st,
		       reply_error(w, eb, sizeof eb));
	pthread_mutex_lock(&w->mu);
	for (int j = 0; j < k; j++) mark_sent(w, l, idx[j], st == 204 || st == 200);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* Frees leases with every position SENT (lock held). */
void wk_drop_finished(Worker *w)
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
Lease *wk_due(Worker *w, double now)
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

/* ---- heartbeat ----------------------------------------------------------- */

/* POST /v1/work/heartbeat: the worker is alive, or with leaving, stops now (the
 * coordinator shows it gone at once instead of after a minute's silence). The
 * answer is not looked at but for a refused token: an older coordinator
 * answers 404, and a failure here is the next request's to meet. */
static long heartbeat(Worker *w, bool leaving, double timeout_s)
{
	json_t *b = json_pack("{s:s, s:s, s:s, s:I, s:b}", "worker", w->opt->name, "instance",
	                      w->instance, "engine", w->engine_id, "nps",
	                      (json_int_t)wk_recent_nps(w), "leaving", leaving);
	char *body = b ? json_dumps(b, JSON_COMPACT) : NULL;
	json_decref(b);
	if (!body) return 0;
	post(w, "/v1/work/heartbeat", body, timeout_s);
	free(body);
	return w->r.status;
}

int wk_heartbeat(Worker *w)
{
	long st = heartbeat(w, false, 5);
	return st == 401 || st == 403 ? auth_failed(w) : 0;
}

void wk_leave(Worker *w, double timeout_s)
{
	(void)heartbeat(w, true, timeout_s); /* best effort: it may be gone */
}

/* After the stop flag: the engines are cancelled and joined; finished results
 * are submitted and every lease's rest aborted, within the grace time; then
 * the coordinator is told the worker leaves. */
void wk_shut_down(Worker *w)
{
	double grace = w->opt->stop_grace_s > 0 ? w->opt->stop_grace_s : 3;
	double end = clock_ms_f() + grace * 1000;
	for (Lease *l = w->leases; l; l = l->next) {
		double left = (end - clock_ms_f()) / 1000;
		if (left <= 0.05) break;
		if (wk_submit(w, l, left) < 0) break;
	}
	wk_drop_finished(w);
	for (Lease *l = w->leases; l; l = l->next) {
		double left = (end - clock_ms_f()) / 1000;
		if (left <= 0.05) continue;
		char path[128], body[256];
		snprintf(path, sizeof path, "/v1/work/abort/%s", l->l.id);
		json_t *b =
		    json_pack("{s:s, s:s}", "worker", w->opt->name, "instance", w->instance);
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
			wk_say(w, "abort of lease %s: %s", l->l.id,
			       w->r.status ? "refused" : w->r.cerr);
	}
	double left = (end - clock_ms_f()) / 1000;
	if (left > 0.05) wk_leave(w, left);
}
