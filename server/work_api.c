/* server/work_api.c — the work endpoints and their service thread (work_api.h). */
#include "server/work_api.h"
#include "shogi/errmsg.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/api.h"
#include "server/work_parse.h"
#include "shogi/clock.h"
#include "shogi/memuse.h"

#define TICK_MS 100
/* Rounds (one commit each) start at most this often: requests arriving in
 * between wait a little and share the commit, so a busy coordinator commits
 * some 50 times a second rather than once per request. */
#define ROUND_MS 20

/* OP_BIND: an acquire answered from a lease made ahead, told to the
 * coordinator (the request's thread answered it; the op is the service's to
 * free). */
enum { OP_ACQUIRE = 1, OP_SUBMIT, OP_ABORT, OP_STATUS, OP_HEARTBEAT, OP_BIND };

typedef struct Op {
	int kind;
	ApiWorkBody body;
	char token[TOKENS_NAME_MAX + 1];
	uint64_t lease;
	int64_t expires_ms; /* bind */
	CoordLease *out;    /* acquire */
	CoordStatus st;     /* status */
	int rc;
	bool busy; /* an acquire answered with none while a search was under way */
	bool done;
	double queued_ms; /* when it was handed to the service thread (clock_ms_f) */
	char err[COORD_ERRLEN];
	struct Op *next;
	/* A request not waited for (api_work_call_start): told it is answered,
	 * from the service thread, after its round; wnext links the round's. */
	ApiWorkWake wake;
	void *wake_ctx;
	struct Op *wnext;
} Op;

/* An Op is a request's call: its own until started, the service's until
 * woken, then the request's again to finish and free. */
struct ApiWorkCall {
	Op op;
};

/* Where a request's time goes, per part of the service thread's rounds: the
 * longest, and how many took more than SLOW_MS (the status line shows them). */
#define SLOW_MS 50
typedef struct {
	double max_ms;
	uint64_t slow;
} Part;

static void part_add(Part *p, double ms)
{
	if (ms > p->max_ms) p->max_ms = ms;
	if (ms > SLOW_MS) p->slow++;
}

enum { PART_WAIT, PART_OPS, PART_COMMIT, PART_TICK, PART_ACQUIRE, PART_SUBMIT, PART_NB };

/* Workers api_work_over_told counts, at most. */
#define OVER_TOLD_MAX 4096

struct ApiWork {
	Coord *c;
	ServerTokens *tokens;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	Op *head, *tail;
	bool quit;
	atomic_bool failed;
	/* Under mu: rounds run, and their parts (PART_*): the longest wait of a
	 * request for its round, the round's requests, its commit, the tick; and
	 * of the requests, one acquire and one submit. */
	uint64_t rounds;
	Part part[PART_NB];
	/* Under mu: leases made ahead, committed and handed over by the
	 * coordinator (coord_ahead_export), with when; whether an acquire may
	 * take one (coord_ahead_ok, as of the last round). */
	CoordAhead *ready[COORD_AHEAD_MAX];
	int64_t ready_ms[COORD_AHEAD_MAX];
	int nready;
	bool ahead_ok;
	/* Under mu: api_work_over's why (NULL: the run goes on), and the
	 * workers answered 410 since (hashes of their instance or token). */
	char *over;
	uint64_t told[OVER_TOLD_MAX];
	size_t ntold;
};

static void run_op(ApiWork *w, Op *op, int64_t now)
{
	/* Unnamed, a worker is its token; on a lease (submit, abort), the lease's
	 * worker (cluster/coord.h). */
	bool on_lease = op->kind == OP_SUBMIT || op->kind == OP_ABORT;
	CoordWorker who = {.token = op->token,
	                   .name = op->body.worker[0] ? op->body.worker
	                           : on_lease         ? NULL
	                                              : op->token,
	                   .instance = op->body.instance,
	                   .engine = op->body.engine[0] ? op->body.engine : NULL,
	                   .nps = op->body.nps};
	op->err[0] = 0;
	/* Answered already: a token put in quarantine since gets its lease
	 * released by coord_bind. */
	if (op->kind == OP_BIND) {
		op->rc =
		    coord_bind(w->c, op->lease, &who, op->body.max, op->expires_ms, now, op->err);
		return;
	}
	/* A token in quarantine (spot checks) is refused whatever it asks. */
	if (coord_quarantined(w->c, op->token, op->err)) {
		op->rc = COORD_EQUARANTINE;
		return;
	}
	switch (op->kind) {
	case OP_ACQUIRE:
		op->rc = coord_acquire(w->c, op->out, &who, op->body.max, now, op->err);
		op->busy = op->rc == 0 && coord_select_busy(w->c);
		break;
	case OP_SUBMIT:
		op->rc = coord_submit(w->c, op->lease, &who, op->body.results, op->body.nresults,
		                      now, op->err);
		break;
	case OP_ABORT:
		op->rc = coord_abort(w->c, op->lease, &who, now, op->err);
		break;
	case OP_STATUS:
		op->rc = coord_status(w->c, &op->st, now);
		break;
	case OP_HEARTBEAT:
		coord_heartbeat(w->c, &who, op->body.leaving, now);
		op->rc = 0;
		break;
	}
}

/* Queues op for the service thread (under mu). */
static void enqueue(ApiWork *w, Op *op)
{
	op->queued_ms = clock_ms_f();
	if (w->tail)
		w->tail->next = op;
	else
		w->head = op;
	w->tail = op;
	pthread_cond_signal(&w->work_cv);
}

/* The leases made ahead that the last commit made ready, handed over to the
 * requests' threads (ready), those unused for COORD_AHEAD_KEEP_MS given back,
 * and whether acquires may take them now. Service thread. */
static void ahead_publish(ApiWork *w, int64_t now)
{
	CoordAhead *got[COORD_AHEAD_MAX], *old[COORD_AHEAD_MAX];
	int ngot = 0, nold = 0;
	/* (At most COORD_AHEAD_MAX are made ahead at once, those ready here
	 * included.) */
	while (ngot < COORD_AHEAD_MAX) {
		CoordAhead *l = malloc(sizeof *l);
		if (!l || coord_ahead_export(w->c, l, 1) != 1) {
			free(l); /* (out of memory: they wait for the next round) */
			break;
		}
		got[ngot++] = l;
	}
	bool ok = coord_ahead_ok(w->c);
	pthread_mutex_lock(&w->mu);
	int j = 0;
	for (int i = 0; i < w->nready; i++)
		if (w->ready_ms[i] + COORD_AHEAD_KEEP_MS <= now) {
			old[nold++] = w->ready[i];
		} else {
			w->ready[j] = w->ready[i];
			w->ready_ms[j++] = w->ready_ms[i];
		}
	w->nready = j;
	for (int i = 0; i < ngot && w->nready < COORD_AHEAD_MAX; i++) {
		w->ready[w->nready] = got[i];
		w->ready_ms[w->nready++] = now;
		got[i] = NULL;
	}
	w->ahead_ok = ok;
	pthread_mutex_unlock(&w->mu);
	char err[COORD_ERRLEN];
	for (int i = 0; i < ngot; i++)
		if (got[i]) old[nold++] = got[i]; /* cannot happen: never more than made */
	for (int i = 0; i < nold; i++) {
		(void)coord_ahead_release(w->c, old[i]->lease.id, now,
		                          err); /* a failure breaks c */
		free(old[i]);
	}
}

/* An acquire answered from a lease made ahead, in the request's thread: the
 * oldest of at most the size it asks that its token may have, while the
 * coordinator allows it (coord_ahead_ok); its binding queued for the service
 * (OP_BIND). The lease (the caller frees it), or NULL: the acquire goes to
 * the service. */
static CoordAhead *ahead_take(ApiWork *w, const Op *op)
{
	Op *b = calloc(1, sizeof *b);
	if (!b) return NULL;
	CoordAhead *l = NULL;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; !w->quit && w->ahead_ok && !atomic_load(&w->failed) && i < w->nready; i++)
		if (w->ready[i]->lease.n <= op->body.max &&
		    !coord_ahead_excludes(w->ready[i], op->token)) {
			l = w->ready[i];
			memmove(w->ready + i, w->ready + i + 1,
			        (size_t)(w->nready - i - 1) * sizeof *w->ready);
			memmove(w->ready_ms + i, w->ready_ms + i + 1,
			        (size_t)(w->nready - i - 1) * sizeof *w->ready_ms);
			w->nready--;
			break;
		}
	if (l) {
		l->lease.expires_ms =
		    clock_unix_ms() + (int64_t)(coord_options(w->c)->lease_seconds * 1000);
		b->kind = OP_BIND;
		b->body = op->body; /* an acquire's: nothing malloc'd */
		memcpy(b->token, op->token, sizeof b->token);
		b->lease = l->lease.id;
		b->expires_ms = l->lease.expires_ms;
		enqueue(w, b);
	}
	pthread_mutex_unlock(&w->mu);
	if (!l) free(b);
	return l;
}

static void *service(void *arg)
{
	ApiWork *w = arg;
	pthread_setname_np(pthread_self(), "work-service"); /* for top -H, perf */
	int64_t last_tick = 0, last_round = 0;
	pthread_mutex_lock(&w->mu);
	while (!w->quit || w->head) {
		/* Sleep until there is work (or a tick is due), then until the
		 * round's time has come (more requests meanwhile join it). */
		for (;;) {
			int64_t now = clock_unix_ms(),
			        until = w->head ? last_round + ROUND_MS : now + TICK_MS;
			if (now >= until || w->quit) break;
			/* Meanwhile the selection goes on beside the service
			 * (coord_select_ahead): the next round's coordinator calls
			 * stop it first. */
			coord_select_ahead(w->c);
			struct timespec ts = {.tv_sec = until / 1000,
			                      .tv_nsec = (until % 1000) * 1000000L};
			if (pthread_cond_timedwait(&w->work_cv, &w->mu, &ts) != 0 && !w->head)
				break;
		}
		last_round = clock_unix_ms();
		Op *ops = w->head;
		w->head = w->tail = NULL;
		pthread_mutex_unlock(&w->mu);
		double t0 = clock_ms_f(), wait = 0;
		for (Op *op = ops; op; op = op->next)
			if (op->kind != OP_BIND && t0 - op->queued_ms > wait)
				wait = t0 - op->queued_ms;
		int64_t now = clock_unix_ms();
		bool wrote = false;
		Part one[2] = {{0}};
		coord_round_begin(w->c);
		for (Op **at = &ops, *op; (op = *at);) {
			double t = clock_ms_f();
			run_op(w, op, now);
			if (op->kind == OP_ACQUIRE || op->kind == OP_SUBMIT)
				part_add(&one[op->kind == OP_SUBMIT], clock_ms_f() - t);
			wrote |= op->kind != OP_STATUS && op->kind != OP_HEARTBEAT;
			if (op->kind == OP_BIND) { /* nobody waits for it */
				if (op->rc == COORD_EBOOK && op->err[0] &&
				    !atomic_load(&w->failed)) {
					atomic_store(&w->failed, true);
					fprintf(stderr, "joseki: %s\n", op->err);
				}
				*at = op->next;
				free(op);
				continue;
			}
			at = &op->next;
		}
		char err[COORD_ERRLEN] = "";
		/* Leases made ahead for the acquires of this round, committed with it. */
		if (wrote)
			(void)coord_make_ahead(w->c, now, err); /* a failure: the commit says it */
		double t1 = clock_ms_f();
		err[0] = 0;
		/* The commit waits for the disk: the selection runs meanwhile. */
		coord_select_ahead(w->c);
		if (wrote && coord_commit(w->c, err) < 0) {
			/* Nothing of this round is on disk: no answer may say otherwise. */
			for (Op *op = ops; op; op = op->next)
				if (op->kind != OP_STATUS && op->kind != OP_HEARTBEAT &&
				    op->rc >= 0) {
					op->rc = COORD_EBOOK;
					errmsg_set(op->err, sizeof op->err, 0, "%s", err);
				}
		}
		double t2 = clock_ms_f();
		ahead_publish(w, now);
		bool failed = false;
		for (Op *op = ops; op; op = op->next) failed |= op->rc == COORD_EBOOK;
		if (failed && !atomic_load(&w->failed)) {
			atomic_store(&w->failed, true);
			for (Op *op = ops; op; op = op->next)
				if (op->rc == COORD_EBOOK && op->err[0]) {
					fprintf(stderr, "joseki: %s\n", op->err);
					break;
				}
		}
		/* The round's answers go now: the tick below (expiries, minimax's
		 * writes) is no part of them, and what it writes is committed with
		 * the next round. */
		/* The requests not waited for are told after the lock: waking one
		 * lets its thread free it, so the list is read before each. */
		Op *woken = NULL;
		for (Op *op = ops; op; op = op->next)
			if (op->wake) {
				op->wnext = woken;
				woken = op;
			}
		pthread_mutex_lock(&w->mu);
		for (Op *op = ops; op; op = op->next) op->done = true;
		if (ops) pthread_cond_broadcast(&w->done_cv);
		pthread_mutex_unlock(&w->mu);
		while (woken) {
			Op *next = woken->wnext;
			woken->wake(woken->wake_ctx);
			woken = next;
		}
		double t3 = clock_ms_f();
		if (now - last_tick >= TICK_MS) {
			last_tick = now;
			err[0] = 0;
			/* A failed minimax is said and the service goes on; a broken
			 * book stops it, as a request's would. */
			int trc = coord_tick(w->c, now, err);
			if (trc == COORD_EMINIMAX && err[0])
				fprintf(
				    stderr,
				    "joseki: %s (the coordinator goes on and the next run tries "
				    "again; should every run fail, stop it and run joseki minimax "
				    "BOOK to see why)\n",
				    err);
			else if (trc < 0 && err[0])
				fprintf(stderr, "joseki: %s\n", err);
			if (trc == COORD_EBOOK) atomic_store(&w->failed, true);
		} else {
			/* A trim of the selector's graph the tick began goes on
			 * a slice a round, not only a tick. */
			coord_trim_on(w->c);
		}
		double t4 = clock_ms_f();
		pthread_mutex_lock(&w->mu);
		if (ops) {
			w->rounds++;
			part_add(&w->part[PART_WAIT], wait);
			part_add(&w->part[PART_OPS], t1 - t0);
			part_add(&w->part[PART_COMMIT], t2 - t1);
			for (int k = 0; k < 2; k++) {
				Part *p = &w->part[PART_ACQUIRE + k];
				if (one[k].max_ms > p->max_ms) p->max_ms = one[k].max_ms;
				p->slow += one[k].slow;
			}
		}
		part_add(&w->part[PART_TICK], t4 - t3);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int api_work_start(ApiWork **out, Coord *c, ServerTokens *tokens)
{
	*out = NULL;
	ApiWork *w = calloc(1, sizeof *w);
	if (!w) return -1;
	w->c = c;
	w->tokens = tokens;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work_cv, NULL);
	pthread_cond_init(&w->done_cv, NULL);
	if (pthread_create(&w->thread, NULL, service, w) != 0) {
		free(w);
		return -1;
	}
	*out = w;
	return 0;
}

void api_work_stop(ApiWork *w)
{
	if (!w) return;
	pthread_mutex_lock(&w->mu);
	w->quit = true;
	pthread_cond_signal(&w->work_cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	/* Those left are released by coord_close. */
	for (int i = 0; i < w->nready; i++) free(w->ready[i]);
	free(w->over);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->work_cv);
	pthread_cond_destroy(&w->done_cv);
	free(w);
}

bool api_work_failed(ApiWork *w)
{
	return atomic_load(&w->failed);
}

void api_work_over(ApiWork *w, const char *why)
{
	char *d = strdup(why);
	pthread_mutex_lock(&w->mu);
	free(w->over);
	w->over = d;
	pthread_mutex_unlock(&w->mu);
}

size_t api_work_over_told(ApiWork *w)
{
	pthread_mutex_lock(&w->mu);
	size_t n = w->ntold;
	pthread_mutex_unlock(&w->mu);
	return n;
}

/* An acquire after the run is over: answered 410 with why (NULL when the run
 * goes on), its worker counted once. */
static char *over_answer(ApiWork *w, const Op *op, int *status)
{
	pthread_mutex_lock(&w->mu);
	char *out = NULL;
	if (w->over) {
		const char *who = op->body.instance[0] ? op->body.instance : op->token;
		uint64_t h = 1469598103934665603ULL; /* FNV-1a */
		for (const char *p = who; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
		size_t i = 0;
		while (i < w->ntold && w->told[i] != h) i++;
		if (i == w->ntold && w->ntold < OVER_TOLD_MAX) w->told[w->ntold++] = h;
		*status = 410;
		out = api_error_body(w->over);
	}
	pthread_mutex_unlock(&w->mu);
	return out;
}

/* Hands op to the service thread and waits for its answer. */
static int submit_op(ApiWork *w, Op *op)
{
	pthread_mutex_lock(&w->mu);
	if (w->quit) {
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	enqueue(w, op);
	while (!op->done) pthread_cond_wait(&w->done_cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static char *acquire_body(const CoordLease *l, const CoordOptions *o, int64_t now)
{
	json_t *ps = json_array();
	for (int i = 0; i < l->n; i++) {
		char hex[KEY_HEX_LEN];
		key_to_hex(l->pos[i].key, hex);
		json_array_append_new(ps,
		                      json_pack("{s:s, s:s}", "sfen", l->pos[i].sfen, "key", hex));
	}
	json_t *lim = json_object();
	const char *k = o->budget.kind == SEARCH_BUDGET_NODES      ? "nodes"
	                : o->budget.kind == SEARCH_BUDGET_MOVETIME ? "movetime"
	                                                           : "depth";
	json_object_set_new(lim, k, json_integer((json_int_t)o->budget.amount));
	json_object_set_new(lim, "multipv", json_integer(o->multipv));
	char id[17];
	snprintf(id, sizeof id, "%016llx", (unsigned long long)l->id);
	int64_t left = (l->expires_ms - now + 999) / 1000;
	return api_json_body(json_pack("{s:s, s:I, s:o, s:o}", "lease", id, "expires_in",
	                               (json_int_t)(left > 0 ? left : 0), "positions", ps, "limits",
	                               lim));
}

/* The spot checks of the status (docs/cluster.md, "Spot checks"). */
static json_t *spot_json(const CoordStatus *st)
{
	json_t *tokens = json_array();
	for (size_t i = 0; i < st->ntokens; i++) {
		const CoordTokenTrust *t = &st->tokens[i];
		json_t *q = json_null();
		if (t->quarantined)
			q = json_pack("{s:I, s:I, s:s}", "since",
			              (json_int_t)(t->quarantined_ms / 1000), "taken_out",
			              (json_int_t)t->taken_out, "reason", t->reason);
		json_array_append_new(
		    tokens,
		    json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:o}", "token",
		              t->token, "results", (json_int_t)t->results, "compared",
		              (json_int_t)t->compared, "passed", (json_int_t)t->passed, "strikes",
		              (json_int_t)t->strikes, "last_fault", t->fault, "unverified",
		              (json_int_t)t->unverified, "kept", (json_int_t)t->kept, "held",
		              (json_int_t)t->held, "quarantined", q));
	}
	return json_pack(
	    "{s:b, s:f, s:f, s:I, s:f, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, "
	    "s:I, s:I}, s:I, s:I, s:o}",
	    "on", st->spot, "rate", st->spot_rate, "new_rate", st->spot_new_rate, "new_results",
	    (json_int_t)st->spot_new_results, "tolerance", st->spot_tolerance, "checks", "waiting",
	    (json_int_t)st->spot_waiting, "leased", (json_int_t)st->spot_leased, "deciding",
	    (json_int_t)st->spot_deciding, "outcomes", "agreed", (json_int_t)st->spot_passed,
	    "disagreed", (json_int_t)st->spot_disagreed, "undecided",
	    (json_int_t)st->spot_undecided, "unchecked", (json_int_t)st->spot_unchecked,
	    "disproved", (json_int_t)st->spot_disproved, "strikes", (json_int_t)st->spot_strikes,
	    "quarantines", (json_int_t)st->spot_quarantines, "taken_out",
	    (json_int_t)st->spot_taken_out, "tokens", tokens);
}

/* The workers gone in the last hour: stopped (said so), or silent. */
static json_t *gone_json(const CoordStatus *st, int64_t now)
{
	json_t *a = json_array();
	for (size_t i = 0; i < st->ngone; i++) {
		const CoordWorkerSeen *s = &st->gone[i];
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "name",
		                                   s->name, "instance", s->instance, "token",
		                                   s->token, "engine", s->engine, "last_seen_s",
		                                   (json_int_t)((now - s->last_seen_ms) / 1000),
		                                   "why", s->left ? "stopped" : "silent"));
	}
	return a;
}

/* Milliseconds as seconds for a JSON answer, to the whole ms: with six
 * significant digits a few microseconds would print as 1.2e-05. */
static double ms_to_s(double ms)
{
	return round(ms) / 1000;
}

static char *status_body(const CoordStatus *st)
{
	json_t *aside = json_array(), *workers = json_array();
	for (size_t i = 0; i < st->naside; i++) {
		char hex[KEY_HEX_LEN];
		key_to_hex(st->aside[i].key, hex);
		json_array_append_new(aside,
		                      json_pack("{s:s, s:s, s:i}", "key", hex, "sfen",
		                                st->aside[i].sfen, "tries", st->aside[i].tries));
	}
	int64_t now = clock_unix_ms();
	for (size_t i = 0; i < st->nworkers; i++) {
		const CoordWorkerSeen *s = &st->workers[i];
		json_array_append_new(
		    workers, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "name", s->name,
		                       "instance", s->instance, "token", s->token, "engine",
		                       s->engine, "nps", (json_int_t)s->nps, "last_seen_s",
		                       (json_int_t)((now - s->last_seen_ms) / 1000)));
	}
	json_t *sel = json_pack(
	    "{s:b, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:b, s:I, s:b, s:I, s:I, s:I, s:f, s:I, "
	    "s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	    "s:I, s:I, s:I, s:I}",
	    "restored", st->snapshot_restored, "note", st->snapshot_note ? st->snapshot_note : "",
	    "checkpoints", (json_int_t)st->checkpoints, "checkpoints_failed",
	    (json_int_t)st->checkpoints_failed, "checkpoints_unchanged",
	    (json_int_t)st->checkpoints_unchanged, "checkpoint_s", ms_to_s(st->checkpoint_ms),
	    "checkpoint_fork_s", ms_to_s(st->checkpoint_fork_ms), "checkpoint_held_s",
	    ms_to_s(st->checkpoint_held_ms), "selected", (json_int_t)st->selected, "answered",
	    st->select_answered, "provisional", (json_int_t)st->provisional, "provisional_over",
	    st->provisional_over, "provisional_back", (json_int_t)st->provisional_back,
	    "provisional_spared", (json_int_t)st->provisional_spared, "provisional_dry",
	    (json_int_t)st->provisional_dry, "provisional_dry_s", ms_to_s(st->provisional_dry_ms),
	    "nodes", (json_int_t)st->select_nodes, "bytes", (json_int_t)st->select_bytes, "fixed",
	    (json_int_t)st->select_fixed, "budget", (json_int_t)st->select_budget, "trims",
	    (json_int_t)st->select_trims, "trimmed", (json_int_t)st->select_trimmed, "trim_s",
	    ms_to_s(st->trim_ms), "trim_slices", (json_int_t)st->trim_slices, "trimming",
	    st->trimming, "trim_clears", (json_int_t)st->trim_clears, "trim_walks",
	    (json_int_t)st->trim_walks, "expansions", (json_int_t)st->select_expansions, "visits",
	    (json_int_t)st->select_visits, "fetches", (json_int_t)st->select_fetches,
	    "fetch_misses", (json_int_t)st->select_fetch_misses, "bound_hits",
	    (json_int_t)st->select_tt_hits, "path_hits", (json_int_t)st->select_path_hits,
	    "reexpansions", (json_int_t)st->select_reexpansions, "remade",
	    (json_int_t)st->select_remade, "invalidated", (json_int_t)st->select_invalidated,
	    "filter_keys", (json_int_t)st->filter_keys, "filter_regrows",
	    (json_int_t)st->filter_regrows);
	json_t *o = json_pack(
	    "{s:I, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:I, s:f, s:I, s:I, s:I, s:o, s:o, s:o, "
	    "s:o}",
	    "queue", (json_int_t)st->queue, "leases", "live", (json_int_t)st->leases_live,
	    "expired", (json_int_t)st->leases_expired, "returned", (json_int_t)st->leases_returned,
	    "ahead", (json_int_t)st->leases_ahead, "unclaimed", (json_int_t)st->leases_unclaimed,
	    "acquired_ahead", (json_int_t)st->acquired_ahead, "ahead_released",
	    (json_int_t)st->ahead_released, "results", (json_int_t)st->results, "results_per_s",
	    st->results_per_s, "failed_tries", (json_int_t)st->failed, "mated",
	    (json_int_t)st->mated, "minimax_runs", (json_int_t)st->minimax_runs, "set_aside", aside,
	    "workers", workers, "selector", sel, "spot", spot_json(st));
	/* A re-analysis: its list's progress. */
	if (o && st->again)
		json_object_set_new(o, "reanalyse",
		                    json_pack("{s:I, s:I}", "replaced",
		                              (json_int_t)st->again_replaced, "left",
		                              (json_int_t)st->again_left));
	if (o) json_object_set_new(o, "workers_gone", gone_json(st, now));
	/* minimax_runs counts those started: whether one is under way. */
	if (o) json_object_set_new(o, "minimax_running", json_boolean(st->minimax_running));
	/* This coordinator process: new at each restart. */
	if (o) {
		json_object_set_new(o, "instance", json_string(st->instance));
		json_object_set_new(o, "started",
		                    json_integer((json_int_t)(st->started_ms / 1000)));
	}
	/* The book's lines from the way to the roots: their positions queued. */
	if (o) json_object_set_new(o, "lines_queued", json_integer((json_int_t)st->lines_queued));
	return api_json_body(o);
}

/* The lease id after prefix in url: 16 hex digits, nothing after. */
static int lease_of(uint64_t *id, const char *url, const char *prefix)
{
	size_t pl = strlen(prefix);
	if (strncmp(url, prefix, pl)) return -1;
	const char *s = url + pl;
	if (strlen(s) != 16) return -1;
	uint64_t v = 0;
	for (int i = 0; i < 16; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9'   ? ch - '0'
		        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		                                 : -1;
		if (d < 0) return -1;
		v = v << 4 | (uint64_t)d;
	}
	*id = v;
	return 0;
}

static char *error(int *status, int code, const char *msg)
{
	*status = code;
	return api_error_body(msg);
}

/* The answer to op, done by the service thread (or refused: refused), as
 * api_work_handle gives it; op's body and lease freed. */
static char *answer(ApiWork *w, Op *op, bool refused, int *status, int *retry_after)
{
	api_work_body_free(&op->body);
	CoordLease *lease = op->out;
	op->out = NULL;
	char *out = NULL;
	if (refused) {
		*retry_after = API_WORK_RETRY_S;
		out = error(status, 503, "shutting down");
	} else if (op->rc == COORD_EINVAL) {
		out = error(status, 400, op->err);
	} else if (op->rc == COORD_ENOLEASE) {
		out = error(status, 404, op->err);
	} else if (op->rc == COORD_EQUARANTINE) {
		out = error(status, 403, op->err);
	} else if (op->rc < 0) {
		out = error(status, 500, op->err[0] ? op->err : coord_strerror(op->rc));
	} else if (op->kind == OP_ACQUIRE && op->rc == 0) {
		*status = 204;
		/* None yet: a search is under way (selection in slices). */
		*retry_after = op->busy ? API_WORK_BUSY_RETRY_S : API_WORK_RETRY_S;
	} else if (op->kind == OP_ACQUIRE) {
		*status = 200;
		out = acquire_body(lease, coord_options(w->c), clock_unix_ms());
	} else if (op->kind == OP_STATUS) {
		*status = 200;
		out = status_body(&op->st);
		coord_status_free(&op->st);
	} else {
		*status = 204;
	}
	free(lease);
	return out;
}

char *api_work_handle(ApiWork *w, const char *method, const char *url, const char *auth,
                      const char *body, size_t len, bool too_large, int *status, int *retry_after,
                      ApiWorkCall **call)
{
	*retry_after = 0;
	*call = NULL;
	Op op = {0};
	/* The scheme is case-insensitive (RFC 7235), then one or more spaces. */
	const char *tok = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
	while (tok && *tok == ' ') tok++;
	bool read_only = false;
	if (!tok || !server_tokens_check_ro(w->tokens, tok, op.token, &read_only))
		return error(status, 401,
		             "a valid token is required (Authorization: Bearer TOKEN)");
	if (atomic_load(&w->failed))
		return error(status, 500, "the coordinator failed; it must be restarted");
	bool post = !strcmp(method, "POST");
	char perr[API_PARSE_ERRLEN] = "";
	if (!strcmp(url, "/v1/work/status")) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return error(status, 405, "GET /v1/work/status");
		op.kind = OP_STATUS;
	} else if (!strcmp(url, "/v1/work/acquire")) {
		op.kind = OP_ACQUIRE;
	} else if (!lease_of(&op.lease, url, "/v1/work/submit/")) {
		op.kind = OP_SUBMIT;
	} else if (!lease_of(&op.lease, url, "/v1/work/abort/")) {
		op.kind = OP_ABORT;
	} else if (!strcmp(url, "/v1/work/heartbeat")) {
		op.kind = OP_HEARTBEAT;
	} else {
		return error(status, 404,
		             "no such work path (see /v1/work/acquire, /v1/work/submit/LEASE, "
		             "/v1/work/abort/LEASE, /v1/work/heartbeat, /v1/work/status; LEASE: 16 "
		             "hex digits)");
	}
	if (op.kind != OP_STATUS && !post) return error(status, 405, "this work path takes POST");
	if (op.kind != OP_STATUS && read_only)
		return error(status, 403, "this token may only read the status (a --read token)");
	if (too_large) return error(status, 413, "request body larger than 1 MiB");
	int prc = op.kind == OP_ACQUIRE     ? api_parse_acquire(&op.body, body, len, perr)
	          : op.kind == OP_SUBMIT    ? api_parse_submit(&op.body, body, len, perr)
	          : op.kind == OP_ABORT     ? api_parse_abort(&op.body, body, len, perr)
	          : op.kind == OP_HEARTBEAT ? api_parse_heartbeat(&op.body, body, len, perr)
	                                    : 0;
	if (prc < 0) return error(status, 400, perr);
	/* The records a submission stores are read here, beside the other
	 * requests, not in the service's round (on a book larger than memory
	 * each is a read from disk). */
	if (op.kind == OP_SUBMIT) coord_submit_warm(w->c, op.body.results, op.body.nresults);
	CoordLease *lease = NULL;
	char *over = op.kind == OP_ACQUIRE ? over_answer(w, &op, status) : NULL;
	if (over) {
		api_work_body_free(&op.body);
		return over;
	}
	/* A lease made ahead is on disk already: answered here, at once. */
	CoordAhead *ahead = op.kind == OP_ACQUIRE ? ahead_take(w, &op) : NULL;
	if (ahead) {
		api_work_body_free(&op.body);
		*status = 200;
		char *out = acquire_body(&ahead->lease, coord_options(w->c), clock_unix_ms());
		free(ahead);
		return out;
	}
	ApiWorkCall *c = NULL;
	if ((op.kind == OP_ACQUIRE && !(op.out = lease = malloc(sizeof *lease))) ||
	    !(c = malloc(sizeof *c))) {
		free(lease);
		api_work_body_free(&op.body);
		return error(status, 500, "out of memory");
	}
	/* The caller starts it once it can be woken. */
	c->op = op;
	*call = c;
	*status = 0;
	return NULL;
}

void api_work_call_start(ApiWork *w, ApiWorkCall *call, ApiWorkWake wake, void *ctx)
{
	Op *op = &call->op;
	op->wake = wake;
	op->wake_ctx = ctx;
	pthread_mutex_lock(&w->mu);
	bool quit = w->quit;
	if (!quit) enqueue(w, op);
	pthread_mutex_unlock(&w->mu);
	if (quit) { /* refused: answered 503 (rc stays 0, done stays false) */
		op->wake = NULL;
		wake(ctx);
	}
}

char *api_work_call_finish(ApiWork *w, ApiWorkCall *call, int *status, int *retry_after)
{
	*retry_after = 0;
	char *out = answer(w, &call->op, !call->op.done, status, retry_after);
	free(call);
	return out;
}

void api_work_metrics(ApiWork *w, FILE *f)
{
	Op op = {.kind = OP_STATUS};
	if (submit_op(w, &op) < 0 || op.rc < 0) return; /* left out, not shown as 0 */
	const CoordStatus *st = &op.st;
	uint64_t quarantined = 0, unverified = 0;
	for (size_t i = 0; i < st->ntokens; i++) {
		quarantined += st->tokens[i].quarantined;
		unverified += st->tokens[i].unverified;
	}
	fprintf(f,
	        "# HELP joseki_work_spot_checks_total Spot checks of workers' results settled or "
	        "sent to a third worker since the coordinator started, by outcome.\n"
	        "# TYPE joseki_work_spot_checks_total counter\n"
	        "joseki_work_spot_checks_total{outcome=\"agreed\"} %llu\n"
	        "joseki_work_spot_checks_total{outcome=\"disagreed\"} %llu\n"
	        "joseki_work_spot_checks_total{outcome=\"undecided\"} %llu\n"
	        "joseki_work_spot_checks_total{outcome=\"unchecked\"} %llu\n"
	        "# HELP joseki_work_spot_checks Spot checks under way, by state.\n"
	        "# TYPE joseki_work_spot_checks gauge\n"
	        "joseki_work_spot_checks{state=\"waiting\"} %llu\n"
	        "joseki_work_spot_checks{state=\"leased\"} %llu\n"
	        "joseki_work_spot_checks{state=\"deciding\"} %llu\n"
	        "# HELP joseki_work_mate_claims_disproved_total Short mate claims the coordinator "
	        "disproved since it started.\n"
	        "# TYPE joseki_work_mate_claims_disproved_total counter\n"
	        "joseki_work_mate_claims_disproved_total %llu\n"
	        "# HELP joseki_work_tokens_quarantined Worker tokens in quarantine.\n"
	        "# TYPE joseki_work_tokens_quarantined gauge\n"
	        "joseki_work_tokens_quarantined %llu\n"
	        "# HELP joseki_work_results_taken_out_total Results taken out of the book by "
	        "quarantines since the coordinator started.\n"
	        "# TYPE joseki_work_results_taken_out_total counter\n"
	        "joseki_work_results_taken_out_total %llu\n"
	        "# HELP joseki_work_results_unverified Results in the book stored since their "
	        "token's last good check.\n"
	        "# TYPE joseki_work_results_unverified gauge\n"
	        "joseki_work_results_unverified %llu\n",
	        (unsigned long long)st->spot_passed, (unsigned long long)st->spot_disagreed,
	        (unsigned long long)st->spot_undecided, (unsigned long long)st->spot_unchecked,
	        (unsigned long long)st->spot_waiting, (unsigned long long)st->spot_leased,
	        (unsigned long long)st->spot_deciding, (unsigned long long)st->spot_disproved,
	        (unsigned long long)quarantined, (unsigned long long)st->spot_taken_out,
	        (unsigned long long)unverified);
	fprintf(f,
	        "# HELP joseki_work_selector_nodes Positions the selector's graph holds.\n"
	        "# TYPE joseki_work_selector_nodes gauge\n"
	        "joseki_work_selector_nodes %llu\n"
	        "# HELP joseki_work_selector_bytes The selector's memory as its budget counts it "
	        "(key filter, node map, graph).\n"
	        "# TYPE joseki_work_selector_bytes gauge\n"
	        "joseki_work_selector_bytes %llu\n"
	        "# HELP joseki_work_selector_budget_bytes The selector's budget (half of serve's "
	        "--memory).\n"
	        "# TYPE joseki_work_selector_budget_bytes gauge\n"
	        "joseki_work_selector_budget_bytes %llu\n"
	        "# HELP joseki_work_selector_trims_total Trims of the selector's graph since the "
	        "coordinator started.\n"
	        "# TYPE joseki_work_selector_trims_total counter\n"
	        "joseki_work_selector_trims_total %llu\n"
	        "# HELP joseki_work_provisional_leaves_total Positions leased as provisional "
	        "leaves (the book's own values): during the first search, and when the "
	        "selection fell behind after it.\n"
	        "# TYPE joseki_work_provisional_leaves_total counter\n"
	        "joseki_work_provisional_leaves_total %llu\n",
	        (unsigned long long)st->select_nodes, (unsigned long long)st->select_bytes,
	        (unsigned long long)st->select_budget, (unsigned long long)st->select_trims,
	        (unsigned long long)st->provisional);
	coord_status_free(&op.st);
}

int api_work_status(ApiWork *w, CoordStatus *st)
{
	Op op = {.kind = OP_STATUS};
	if (submit_op(w, &op) < 0) {
		memset(st, 0, sizeof *st);
		return -1;
	}
	*st = op.st;
	return op.rc < 0 ? -1 : 0;
}

/* Lines of at most STATUS_WIDTH columns, each starting "work: ", built a
 * clause at a time into a caller's buffer (cut short when it is full). */
#define STATUS_WIDTH 120
typedef struct {
	char *buf;
	size_t len, used, line; /* line: where the current line starts */
	bool fresh;             /* no clause on the current line yet */
} StatusLines;

static void status_put(StatusLines *l, const char *s)
{
	size_t n = strlen(s);
	if (l->used + n >= l->len) n = l->len - 1 - l->used;
	memcpy(l->buf + l->used, s, n);
	l->used += n;
	l->buf[l->used] = '\0';
}

/* Starts a line: the figures that follow belong together. */
static void status_line(StatusLines *l)
{
	if (l->used) status_put(l, "\n");
	l->line = l->used;
	status_put(l, "work: ");
	l->fresh = true;
}

/* One clause, after ", " on the current line, or on a line of its own when
 * it would pass the width. */
static void status_clause(StatusLines *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void status_clause(StatusLines *l, const char *fmt, ...)
{
	char c[STATUS_WIDTH];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c, sizeof c, fmt, ap);
	va_end(ap);
	if (!l->fresh && l->used - l->line + 2 + strlen(c) > STATUS_WIDTH) status_line(l);
	if (!l->fresh) status_put(l, ", ");
	status_put(l, c);
	l->fresh = false;
}

void api_work_status_line(ApiWork *w, char *buf, size_t len, bool internals)
{
	CoordStatus st;
	if (api_work_status(w, &st) < 0) {
		coord_status_free(&st);
		snprintf(buf, len, "work: no status");
		return;
	}
	uint64_t nps = 0;
	for (size_t i = 0; i < st.nworkers; i++) nps += st.workers[i].nps;
	pthread_mutex_lock(&w->mu);
	uint64_t rounds = w->rounds;
	Part part[PART_NB];
	memcpy(part, w->part, sizeof part);
	pthread_mutex_unlock(&w->mu);
	if (!len) {
		coord_status_free(&st);
		return;
	}
	StatusLines l = {buf, len, 0, 0, true};
	buf[0] = '\0';
	status_line(&l);
	status_clause(&l, "%llu result%s (%.1f/s)", (unsigned long long)st.results,
	              st.results == 1 ? "" : "s", st.results_per_s);
	status_clause(&l, "queue %llu", (unsigned long long)st.queue);
	status_clause(&l, "leases %llu live %llu expired %llu returned",
	              (unsigned long long)st.leases_live, (unsigned long long)st.leases_expired,
	              (unsigned long long)st.leases_returned);
	if (st.leases_unclaimed) /* after a crash: see docs/cluster.md */
		status_clause(&l, "%llu unclaimed", (unsigned long long)st.leases_unclaimed);
	status_clause(&l, "set aside %zu", st.naside);
	status_clause(&l, "failed tries %llu", (unsigned long long)st.failed);
	status_line(&l);
	status_clause(&l, "workers %zu live %zu gone (%.1f Mnps)", st.nworkers, st.ngone,
	              nps / 1e6);
	/* A run under way is counted from its start: "last" is the one before. */
	uint64_t done = st.minimax_runs - (st.minimax_running && st.minimax_runs > 0);
	if (done)
		status_clause(&l, "minimax runs %llu (last %.0f ms)%s", (unsigned long long)done,
		              st.last_minimax_ms, st.minimax_running ? ", one running" : "");
	else
		status_clause(&l, "minimax runs 0%s",
		              st.minimax_running ? ", the first running" : "");
	if (internals) {
		status_line(&l);
		status_clause(&l, "time in select %.0f ms", st.select_ms);
		status_clause(&l, "suspended %llu times", (unsigned long long)st.select_slices);
		status_clause(&l, "%llu acquires ended with it suspended",
		              (unsigned long long)st.select_short);
		status_clause(&l, "beside the service %.0f ms and %llu leaves", st.select_ahead_ms,
		              (unsigned long long)st.select_ahead_leaves);
		status_clause(&l, "leases made ahead: %llu acquires took one, %llu released unused",
		              (unsigned long long)st.acquired_ahead,
		              (unsigned long long)st.ahead_released);
		if (st.provisional) {
			/* Two clauses: with both asides one passed the width, cut. */
			status_clause(&l, "provisional leaves %llu%s%s",
			              (unsigned long long)st.provisional,
			              !st.select_answered    ? " (the first search under way)"
			              : !st.provisional_over ? " (until the selection keeps up)"
			                                     : "",
			              st.provisional_back ? ", back when it fell behind" : "");
			status_clause(&l, "reads spared %llu, walk dry %llu times (%.0f ms)",
			              (unsigned long long)st.provisional_spared,
			              (unsigned long long)st.provisional_dry,
			              st.provisional_dry_ms);
		}
		char sb[24], sg[24], sf[24], sr[24], rg[64] = "";
		if (st.filter_regrows)
			snprintf(rg, sizeof rg, ", filter made again %llu",
			         (unsigned long long)st.filter_regrows);
		status_clause(&l, "selector %llu nodes, %s of %s (filter and map %s, records %s%s)",
		              (unsigned long long)st.select_nodes,
		              memuse_format(st.select_bytes, sb, sizeof sb),
		              memuse_format(st.select_budget, sg, sizeof sg),
		              memuse_format(st.select_fixed, sf, sizeof sf),
		              memuse_format(st.select_record_bytes, sr, sizeof sr), rg);
		status_clause(&l,
		              "trims %llu (%.0f ms, %llu nodes dropped, %llu walks up, %llu bound "
		              "clears)",
		              (unsigned long long)st.select_trims, st.trim_ms,
		              (unsigned long long)st.select_trimmed,
		              (unsigned long long)st.trim_walks,
		              (unsigned long long)st.trim_clears);
		if (st.checkpoints || st.checkpoints_failed) {
			/* Two clauses: one of 120 columns would be cut. */
			status_clause(&l, "checkpoints %llu, %llu failed, %llu not needed",
			              (unsigned long long)st.checkpoints,
			              (unsigned long long)st.checkpoints_failed,
			              (unsigned long long)st.checkpoints_unchanged);
			status_clause(&l,
			              "the last written in %.0f ms (its fork %.0f ms, the changes "
			              "held meanwhile made in %.0f ms)",
			              st.checkpoint_ms, st.checkpoint_fork_ms,
			              st.checkpoint_held_ms);
		}
		status_clause(&l, "store %.0f ms", st.store_ms);
		status_clause(&l, "commit %.0f ms", st.commit_ms);
		status_clause(&l, "minimax %.0f ms (its writes %.0f ms)", st.minimax_ms,
		              st.minimax_apply_ms);
		status_line(&l);
		status_clause(&l, "rounds %llu", (unsigned long long)rounds);
		status_clause(&l, "longest over %d ms: wait for a round %.0f ms (%llu)", SLOW_MS,
		              part[PART_WAIT].max_ms, (unsigned long long)part[PART_WAIT].slow);
		status_clause(&l, "requests %.0f ms (%llu)", part[PART_OPS].max_ms,
		              (unsigned long long)part[PART_OPS].slow);
		status_clause(&l, "one acquire %.0f ms (%llu)", part[PART_ACQUIRE].max_ms,
		              (unsigned long long)part[PART_ACQUIRE].slow);
		status_clause(&l, "one submit %.0f ms (%llu)", part[PART_SUBMIT].max_ms,
		              (unsigned long long)part[PART_SUBMIT].slow);
		status_clause(&l, "commit %.0f ms (%llu)", part[PART_COMMIT].max_ms,
		              (unsigned long long)part[PART_COMMIT].slow);
		status_clause(&l, "tick %.0f ms (%llu)", part[PART_TICK].max_ms,
		              (unsigned long long)part[PART_TICK].slow);
	}
	if (st.spot) {
		status_line(&l);
		status_clause(&l, "spot checks %llu waiting", (unsigned long long)st.spot_waiting);
		status_clause(&l, "%llu leased", (unsigned long long)st.spot_leased);
		status_clause(&l, "%llu deciding", (unsigned long long)st.spot_deciding);
		status_clause(&l, "%llu agreed", (unsigned long long)st.spot_passed);
		status_clause(&l, "%llu disagreed", (unsigned long long)st.spot_disagreed);
		status_clause(&l, "%llu strikes", (unsigned long long)st.spot_strikes);
		status_clause(&l, "%llu quarantines", (unsigned long long)st.spot_quarantines);
	}
	coord_status_free(&st);
}
