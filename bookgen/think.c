/*
 * bookgen/think.c — the think loop (bookgen/think.h).
 *
 * One worker thread per engine; the calling thread owns the selector and the
 * book writer. A worker slot goes IDLE -> BUSY (position handed over) -> DONE
 * (answer ready) -> IDLE (answer stored). The selector is loaded whole
 * (sel_load) before the writer starts, because the writer keeps a write
 * transaction open between commits and LMDB allows one transaction per thread.
 */
#include "bookgen/think.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/errmsg.h"
#include "shogi/clock.h"
#include "bookgen/selector.h"
#include "shogi/notation.h"
#include "shogi/position.h"

enum { SLOT_IDLE = 0, SLOT_BUSY, SLOT_DONE, SLOT_QUIT };

typedef struct Think Think;

typedef struct {
	Think *t;
	SearchEngine *engine;
	pthread_t thread;
	bool started;
	int state;
	Position *pos;
	Key key;
	SearchResult res;
	int rc;
	char errmsg[SEARCH_ERRLEN];
	double busy_ms;
} Slot;

struct Think {
	const ThinkOptions *opt;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	Slot *slots;
};

const char *think_strerror(int code)
{
	switch (code) {
	case THINK_OK:
		return "success";
	case THINK_EINVAL:
		return "invalid argument";
	case THINK_ENOMEM:
		return "out of memory";
	case THINK_EBOOK:
		return "book error";
	case THINK_EENGINE:
		return "engine failure";
	}
	return "unknown think error";
}

static void *worker(void *arg)
{
	Slot *s = arg;
	Think *t = s->t;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (s->state != SLOT_BUSY && s->state != SLOT_QUIT)
			pthread_cond_wait(&t->work_cv, &t->mu);
		if (s->state == SLOT_QUIT) break;
		pthread_mutex_unlock(&t->mu);
		double t0 = clock_ms_f();
		int rc =
		    search_analyse(s->engine, &s->res, s->pos, &t->opt->budget, t->opt->multipv);
		if (rc < 0)
			snprintf(s->errmsg, sizeof s->errmsg, "%s", search_last_error(s->engine));
		double dt = clock_ms_f() - t0;
		pthread_mutex_lock(&t->mu);
		s->rc = rc;
		s->busy_ms += dt;
		s->state = SLOT_DONE;
		pthread_cond_signal(&t->done_cv);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* The record to store for an answer: the old record (game statistics, other
 * evaluations) with the engine's value of every returned move. */
static void fill_record(BookRecord *rec, bool found, const Position *pos, const SearchResult *res,
                        const SearchBudget *budget)
{
	if (!found) bookdb_record_init(rec, pos);
	int depth = 0;
	for (int i = 0; i < res->nlines; i++) {
		const SearchLine *l = &res->lines[i];
		BookMove *m = NULL;
		for (int k = 0; k < rec->nmoves; k++)
			if (rec->moves[k].move == l->move) m = &rec->moves[k];
		if (!m) {
			if (rec->nmoves >= BOOKDB_MAX_MOVES) continue;
			m = &rec->moves[rec->nmoves++];
			memset(m, 0, sizeof *m);
			m->move = l->move;
		}
		int v = value_clamp(l->value);
		int d = l->depth > 255 ? 255 : l->depth < 0 ? 0 : l->depth;
		m->flags |= BOOKDB_MOVE_EVAL;
		m->eval = (int16_t)v;
		m->depth = (uint8_t)d;
		m->nodes = l->nodes;
		m->source = BOOKDB_SOURCE_ENGINE;
		if (d > depth) depth = d;
	}
	if (!depth && budget->kind == SEARCH_BUDGET_DEPTH)
		depth = budget->amount > 255 ? 255 : (int)budget->amount;
	rec->flags |= BOOKDB_REC_THOUGHT;
	rec->think_depth = (uint8_t)depth;
}

typedef struct {
	char sfen[SFEN_MAX];
} RootSfen;

int think_run(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	if (!opt->engines || opt->nengines < 1 || opt->multipv < 1 ||
	    opt->multipv > SEARCH_MULTIPV_MAX) {
		errmsg_set(err, THINK_ERRLEN, 0, "think: %s",
		           "need at least one engine and MultiPV 1..32");
		return THINK_EINVAL;
	}
	int n = opt->nengines, nroots = opt->roots && opt->nroots > 0 ? opt->nroots : 1;
	int ret = 0;
	Think t = {.opt = opt};
	Selector *sel = NULL;
	BookWriter *w = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	RootSfen *roots = calloc((size_t)nroots, sizeof *roots);
	SelLeaf *leaf = malloc(sizeof *leaf);
	t.slots = calloc((size_t)n, sizeof *t.slots);
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.work_cv, NULL);
	pthread_cond_init(&t.done_cv, NULL);
	if (!rec || !roots || !leaf || !t.slots) {
		ret = THINK_ENOMEM;
		goto done;
	}
	for (int i = 0; i < n; i++) {
		t.slots[i].pos = malloc(sizeof(Position));
		if (!t.slots[i].pos) {
			ret = THINK_ENOMEM;
			goto done;
		}
	}
	SelOptions so = {.kif_bonus = opt->kif_bonus, .draw_value = 0};
	if (sel_new(&sel, &so) < 0) {
		ret = THINK_ENOMEM;
		goto done;
	}
	int rc = sel_load(sel, db);
	if (rc < 0) {
		errmsg_set(err, THINK_ERRLEN, 0, "think: loading the book: %s", sel_strerror(rc));
		ret = THINK_EBOOK;
		goto done;
	}
	for (int r = 0; r < nroots; r++) {
		const char *spec = opt->roots && opt->nroots > 0 ? opt->roots[r] : "startpos";
		char perr[SHOGI_ERRLEN];
		Position *p = t.slots[0].pos;
		if (position_parse(p, spec, perr) < 0) {
			errmsg_set(err, THINK_ERRLEN, 0, "think: bad root '%.200s': %.200s", spec,
			           perr);
			ret = THINK_EINVAL;
			goto done;
		}
		sfen_write(p, roots[r].sfen, sizeof roots[r].sfen);
		if ((rc = sel_add_root(sel, pos_key(p), p->side)) < 0) {
			ret = THINK_ENOMEM;
			goto done;
		}
	}
	if (bookdb_writer_new(&w, db, opt->commit_every ? opt->commit_every : 64) < 0) {
		errmsg_set(err, THINK_ERRLEN, 0, "think: %s", "cannot start the book writer");
		ret = THINK_EBOOK;
		goto done;
	}
	for (int i = 0; i < n; i++) {
		t.slots[i].t = &t;
		t.slots[i].engine = opt->engines[i];
		if (pthread_create(&t.slots[i].thread, NULL, worker, &t.slots[i]) != 0) {
			ret = THINK_ENOMEM;
			goto done;
		}
		t.slots[i].started = true;
	}

	double start = clock_ms_f(), last_commit = start, last_progress = start;
	int inflight = 0, consecutive_failures = 0;
	size_t next_first = 0;
	char last_error[SEARCH_ERRLEN] = "";
	bool exhausted = false;
	for (;;) {
		double now = clock_ms_f();
		bool stopping = (opt->stop && *opt->stop) ||
		                (opt->max_seconds > 0 && now - start >= opt->max_seconds * 1e3);
		/* Hand out work to every idle core. */
		pthread_mutex_lock(&t.mu);
		for (int i = 0; i < n && !stopping && !exhausted; i++) {
			Slot *s = &t.slots[i];
			if (s->state != SLOT_IDLE) continue;
			if (opt->max_positions &&
			    out->thought + (uint64_t)inflight >= opt->max_positions)
				break;
			pthread_mutex_unlock(&t.mu);
			bool forced = false;
			while (next_first < opt->nfirst && !forced) {
				const char *spec = opt->first[next_first++];
				if (position_parse(s->pos, spec, NULL) < 0)
					continue; /* checked by caller */
				Key k = pos_key(s->pos);
				if (sel_is_thought(sel, k) || sel_is_leased(sel, k)) continue;
				s->key = k;
				forced = true;
			}
			if (forced) {
				pthread_mutex_lock(&t.mu);
				sel_lease(sel, s->key);
				s->state = SLOT_BUSY;
				inflight++;
				pthread_cond_broadcast(&t.work_cv);
				continue;
			}
			rc = sel_select(leaf, sel);
			pthread_mutex_lock(&t.mu);
			if (rc < 0) {
				errmsg_set(err, THINK_ERRLEN, 0, "think: selection: %s",
				           sel_strerror(rc));
				ret = THINK_EBOOK;
				stopping = true;
				break;
			}
			if (rc == 0) {
				exhausted = inflight == 0;
				break;
			}
			if (sel_leaf_position(s->pos, roots[leaf->root].sfen, leaf) < 0) {
				errmsg_set(err, THINK_ERRLEN, 0, "think: selection: %s",
				           "a leaf that its root does not reach (a selector bug)");
				ret = THINK_EBOOK;
				stopping = true;
				break;
			}
			sel_lease(sel, leaf->key);
			s->key = leaf->key;
			s->state = SLOT_BUSY;
			inflight++;
			pthread_cond_broadcast(&t.work_cv);
		}
		if (inflight == 0 && (stopping || exhausted ||
		                      (opt->max_positions && out->thought >= opt->max_positions))) {
			pthread_mutex_unlock(&t.mu);
			break;
		}
		/* Wait for an answer (or a tick to look at the stop flag and clock). */
		bool any_done = false;
		for (int i = 0; i < n; i++) any_done |= t.slots[i].state == SLOT_DONE;
		if (!any_done) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&t.done_cv, &t.mu, &ts);
		}
		for (int i = 0; i < n; i++) {
			Slot *s = &t.slots[i];
			if (s->state != SLOT_DONE) continue;
			inflight--;
			if (s->rc < 0) {
				if (s->rc == SEARCH_ECANCELED) {
					sel_release(sel, s->key);
				} else {
					/* Left leased: not sent again in this run. */
					out->failed++;
					snprintf(last_error, sizeof last_error, "%s", s->errmsg);
					if (++consecutive_failures >= 3 * n) {
						errmsg_set(err, THINK_ERRLEN, 0,
						           "think: engines keep failing: %.200s",
						           s->errmsg);
						ret = THINK_EENGINE;
					}
				}
				s->state = SLOT_IDLE;
				continue;
			}
			consecutive_failures = 0;
			BookRecord *r2 = rec;
			int g = bookdb_writer_get(r2, w, s->key);
			if (g < 0 && g != BOOKDB_ENOTFOUND) {
				errmsg_set(err, THINK_ERRLEN, 0, "think: reading the book: %s",
				           bookdb_strerror(g));
				ret = THINK_EBOOK;
				s->state = SLOT_IDLE;
				continue;
			}
			fill_record(r2, g == 0, s->pos, &s->res, &opt->budget);
			if ((g = bookdb_writer_put(w, s->key, r2)) < 0 ||
			    (rc = sel_add_result(sel, s->key, r2)) < 0) {
				errmsg_set(err, THINK_ERRLEN, 0, "think: storing a result: %s",
				           g < 0 ? bookdb_strerror(g) : sel_strerror(rc));
				ret = THINK_EBOOK;
			} else {
				out->thought++;
			}
			s->state = SLOT_IDLE;
		}
		pthread_mutex_unlock(&t.mu);
		if (ret < 0) exhausted = true; /* hand out nothing more; collect, leave */
		now = clock_ms_f();
		if (now - last_commit >= 1000) {
			if (bookdb_writer_flush(w) < 0 && !ret) {
				errmsg_set(err, THINK_ERRLEN, 0, "think: %s", "commit failed");
				ret = THINK_EBOOK;
				exhausted = true;
			}
			last_commit = now;
		}
		if (opt->progress && now - last_progress >= 1000) {
			double busy = 0;
			pthread_mutex_lock(&t.mu);
			for (int i = 0; i < n; i++) busy += t.slots[i].busy_ms;
			pthread_mutex_unlock(&t.mu);
			double el = (now - start) / 1e3;
			SelStats ss;
			sel_get_stats(&ss, sel);
			fprintf(
			    opt->progress,
			    "think: %llu thought, %.1f/s, book %llu thought, engines busy %.0f%%, "
			    "elapsed %.0fs",
			    (unsigned long long)out->thought, out->thought / (el > 0 ? el : 1),
			    (unsigned long long)ss.thought, 100.0 * busy / (n * (now - start)), el);
			/* The root's value and PV (the line to the next leaf; cheap: the
			 * bounds make it a re-search of the PV). */
			int rv;
			bool has;
			if (sel_root_value(&rv, &has, sel, 0) == 0 && has &&
			    sel_select(leaf, sel) == 1 && leaf->root == 0) {
				fprintf(opt->progress, ", root %+d pv", rv);
				for (int j = 0; j < leaf->nmoves && j < 8; j++) {
					char mv[USI_MOVE_MAX];
					usi_move_write(leaf->moves[j], mv);
					fprintf(opt->progress, " %s", mv);
				}
			}
			if (opt->max_seconds > 0)
				fprintf(opt->progress, ", eta %.0fs", opt->max_seconds - el);
			else if (opt->max_positions && out->thought)
				fprintf(opt->progress, ", eta %.0fs",
				        el * (double)(opt->max_positions - out->thought) /
				            (double)out->thought);
			fputc('\n', opt->progress);
			last_progress = now;
		}
	}
	if (!ret && out->failed && !out->thought) {
		/* Nothing but failures: an engine that cannot work is an error. */
		errmsg_set(err, THINK_ERRLEN, 0, "think: every analysis failed: %.200s",
		           last_error);
		ret = THINK_EENGINE;
	}
	out->exhausted = exhausted && ret == 0;
	if (bookdb_writer_flush(w) < 0 && !ret) {
		errmsg_set(err, THINK_ERRLEN, 0, "think: %s", "final commit failed");
		ret = THINK_EBOOK;
	}
	out->commits = bookdb_writer_commits(w);
	double el = clock_ms_f() - start, busy = 0;
	for (int i = 0; i < n; i++) busy += t.slots[i].busy_ms;
	out->seconds = el / 1e3;
	out->busy_pct = el > 0 ? 100.0 * busy / (n * el) : 0;
	bool has;
	if (sel_root_value(&out->root_value, &has, sel, 0) == 0) out->root_known = has;
done:
	if (t.slots) {
		pthread_mutex_lock(&t.mu);
		for (int i = 0; i < n; i++) t.slots[i].state = SLOT_QUIT;
		pthread_cond_broadcast(&t.work_cv);
		pthread_mutex_unlock(&t.mu);
		for (int i = 0; i < n; i++)
			if (t.slots[i].started) pthread_join(t.slots[i].thread, NULL);
		for (int i = 0; i < n; i++) free(t.slots[i].pos);
	}
	bookdb_writer_free(w);
	sel_free(sel);
	pthread_mutex_destroy(&t.mu);
	pthread_cond_destroy(&t.work_cv);
	pthread_cond_destroy(&t.done_cv);
	free(t.slots);
	free(leaf);
	free(roots);
	free(rec);
	return ret;
}
