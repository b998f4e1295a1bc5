/*
 * cluster/worker.c — the cluster worker's loop (cluster/worker.h).
 *
 * State: a list of leases in hand, each with its positions in one of four
 * states (QUEUED → RUNNING → DONE → SENT). Engine threads take the first
 * QUEUED position of the oldest lease, analyse it and leave a ready JSON
 * result (DONE). The calling thread, between HTTP requests, submits a lease's
 * DONE results when the lease has nothing QUEUED or RUNNING left (or a result
 * has waited a second), acquires when no more than N positions are
 * unfinished, and forgets a lease whose positions are all SENT. All of this
 * under one mutex; HTTP requests run without it.
 *
 * This file: the engine threads and the loop. The HTTP client side (requests,
 * back-off, journal, acquire, submit, abort) is cluster/worker_http.c; the
 * state both share is in cluster/worker_priv.h.
 */
#include "cluster/worker.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/worker_priv.h"
#include "cluster/worker_wire.h"
#include "shogi/clock.h"
#include "shogi/rng.h"
#include "shogi/errmsg.h"
#include "shogi/position.h"

/* Largest batch grown for quick positions (see batch_size). */
#define WORKER_QUICK_BATCH 64

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
	case WORKER_EENGINE:
		return "the engine cannot do the coordinator's searches";
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

/* A failed position's reason on the log (the first, then at most one line a
 * minute with the count since): an engine that fails every position (one
 * that cannot obey the lease's limit, a wrong option) says why at once.
 * Called with the lock held. */
static void say_failure(Worker *w, const char *msg)
{
	if (!w->opt->log) return;
	double now = clock_ms_f();
	w->fails_unsaid++;
	if (w->fail_said && now - w->fail_said < 60000) return;
	wk_say(w, "a position failed (%llu since the last such line): %s",
	       (unsigned long long)w->fails_unsaid, msg);
	w->fail_said = now;
	w->fails_unsaid = 0;
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
		bool bare = false;
		double t0 = clock_ms_f(), c0 = clock_thread_cpu_ms();
		bool parsed = position_parse(s->pos, p->sfen, perr) == 0;
		if (!parsed) {
			snprintf(msg, sizeof msg, "bad position: %.200s", perr);
			rc = SEARCH_EINVAL;
		} else {
			rc = search_analyse(s->engine, s->res, s->pos, &budget, multipv);
			if (rc < 0)
				snprintf(msg, sizeof msg, "%s: %.200s", search_strerror(rc),
				         search_last_error(s->engine));
			else if ((bare = search_result_bare(msg, sizeof msg, s->res,
			                                    search_name(s->engine))))
				;
			else if (s->res->nlines == 0) /* the protocol wants at least one line */
				snprintf(msg, sizeof msg, "the engine gave no line (bestmove %s)",
				         s->res->resign ? "resign" : "win");
		}
		double dt = clock_ms_f() - t0, dc = clock_thread_cpu_ms() - c0;
		json_t *j = NULL;
		bool failed = rc < 0 || s->res->nlines == 0;
		if (rc != SEARCH_ECANCELED)
			j = worker_result_json(p->key, failed ? NULL : s->res, failed ? msg : NULL);

		pthread_mutex_lock(&w->mu);
		if (j && failed) say_failure(w, msg);
		/* The search refused as asked (not a crash, not this position): the
		 * engine cannot do the coordinator's searches at all. An answer from
		 * the engine's own book neither: every worker of that engine would
		 * fail the book's first positions until they were set aside. */
		if (((rc == SEARCH_EINVAL && parsed) || bare) && !w->unfit) {
			w->unfit = true;
			snprintf(
			    w->unfit_why, sizeof w->unfit_why, "%s%s", msg,
			    bare ? ""
			         : "; the budget is the coordinator's: its serve --work --nodes, "
			           "--movetime or --depth");
		}
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
			wk_spool_done(w, l, i);
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

/* ---- the loop ------------------------------------------------------------ */

static void progress(Worker *w, const char *phase, double now)
{
	uint64_t kept = 0;
	pthread_mutex_lock(&w->mu);
	for (Lease *l = w->leases; l; l = l->next)
		for (int i = 0; i < l->l.n; i++) kept += l->state[i] == POS_DONE;
	pthread_mutex_unlock(&w->mu);
	WorkerProgress p = {w->out->positions, w->out->failed, kept,
	                    wk_recent_nps(w),  w->state,       (now - w->start) / 1e3};
	w->opt->progress(w->opt->progress_ctx, phase, &p);
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

/* Nothing more to acquire: its --positions, or the coordinator's run over. */
static bool limit_reached(Worker *w)
{
	return (w->opt->max_positions && w->acquired >= w->opt->max_positions) || w->out->over[0];
}

static int run_loop(Worker *w)
{
	const WorkerOptions *opt = w->opt;
	double heartbeat_ms = (opt->heartbeat_s > 0 ? opt->heartbeat_s : WORKER_HEARTBEAT_S) * 1000;
	for (;;) {
		if (opt->stop && *opt->stop) return 0;
		double now = clock_ms_f();
		pthread_mutex_lock(&w->mu);
		if (w->quit) { /* an engine thread ran out of memory */
			pthread_mutex_unlock(&w->mu);
			return WORKER_ENOMEM;
		}
		if (w->unfit) {
			pthread_mutex_unlock(&w->mu);
			return errmsg_set(w->err, WORKER_ERRLEN, WORKER_EENGINE,
			                  "the engine cannot do this coordinator's searches (%s); "
			                  "stopping, its leases given back",
			                  w->unfit_why);
		}
		wk_drop_finished(w);
		if (!w->leases && limit_reached(w)) {
			pthread_mutex_unlock(&w->mu);
			return 0;
		}
		Lease *l = now >= w->submit_at ? wk_due(w, now) : NULL;
		int in_hand = w->in_hand;
		pthread_mutex_unlock(&w->mu);
		bool acted = false;
		int rc = 0, batch;
		if (l) {
			rc = wk_submit(w, l, 30);
			acted = true;
		} else if (now >= w->acquire_at && !limit_reached(w) &&
		           in_hand <= (batch = batch_size(w))) {
			/* One batch is left: fetch the next before the engines run dry. */
			uint64_t max = (uint64_t)batch;
			if (opt->max_positions && max > opt->max_positions - w->acquired)
				max = opt->max_positions - w->acquired;
			rc = wk_acquire(w, (int)max);
			acted = true;
		} else if (now - w->last_post >= heartbeat_ms && now >= w->submit_at) {
			/* Long searches: no request for a while, and none is due. */
			rc = wk_heartbeat(w);
			acted = true;
		}
		if (rc < 0) return rc;
		now = clock_ms_f();
		wk_spool_tend(w, now);
		if (opt->progress &&
		    now - w->last_progress >= (opt->progress_ms > 0 ? opt->progress_ms : 1000)) {
			progress(w, "status", now);
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
	curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, wk_on_body);
	curl_easy_setopt(w->h, CURLOPT_WRITEDATA, &w->r);
	curl_easy_setopt(w->h, CURLOPT_HEADERFUNCTION, wk_on_header);
	curl_easy_setopt(w->h, CURLOPT_HEADERDATA, &w->r);
	curl_easy_setopt(w->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(w->h, CURLOPT_XFERINFOFUNCTION, wk_on_xfer);
	curl_easy_setopt(w->h, CURLOPT_XFERINFODATA, w);
	/* Not from the back-off's stream: tests seed that alike for two workers. */
	rng_instance(w->instance, w);
	int rc = wk_spool_open(w); /* before the engines: it adds leases */
	if (rc < 0) return rc;
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
	wk_drop_finished(w);
	wk_spool_close(w);
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
	Worker w = {.opt = opt,
	            .out = out,
	            .err = err,
	            .n = opt->nengines,
	            .spool_fd = -1,
	            .spool_lock = -1};
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.work_cv, NULL);
	pthread_cond_init(&w.done_cv, NULL);
	w.start = w.last_progress = w.last_post = clock_ms_f();
	double cpu0 = clock_cpu_ms();
	int rc = setup(&w);
	if (rc == 0) rc = run_loop(&w);
	join_engines(&w); /* cancelled by the stop flag, or done */
	/* Stopped, or an engine unfit for the work: what is finished is sent,
	 * the rest given back at once. */
	if ((rc == 0 && opt->stop && *opt->stop) || rc == WORKER_EENGINE) {
		w.state = "stopping";
		w.shutting_down = true;
		wk_shut_down(&w);
	} else if (rc == 0) {
		wk_leave(&w, 3); /* --positions done: it stops too */
	}
	if (opt->progress) progress(&w, "done", clock_ms_f());
	out->seconds = (clock_ms_f() - w.start) / 1e3;
	out->cpu_s = (clock_cpu_ms() - cpu0) / 1e3;
	teardown(&w);
	if (rc < 0 && err && !err[0]) errmsg_set(err, WORKER_ERRLEN, rc, "%s", worker_strerror(rc));
	return rc;
}
