/*
 * bookgen/think.c — the think loop (bookgen/think.h).
 *
 * One worker thread per engine; the calling thread owns the selector and the
 * book writer. A worker slot goes IDLE -> BUSY (position handed over) -> DONE
 * (answer ready) -> IDLE (answer stored). The selector reads the book
 * lazily (sel_attach), each call in a read transaction of its own beside the
 * writer's open one (the book is opened MDB_NOTLS), or comes back from the
 * selector's snapshot (bookgen/selection.h).
 */
#include "bookgen/think.h"
#include "bookdb/merge.h"
#include "bookdb/query.h"
#include "bookgen/reanalyse.h"
#include "bookgen/roots.h"
#include "bookgen/selection.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/errmsg.h"
#include "shogi/movegen.h"
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
	double since;      /* t->mu: when the search under way began (0: none) */
	SearchMeter meter; /* t->mu */
} Slot;

/* One run: the options, the workers, and the loop's state (calling thread). */
struct Think {
	const ThinkOptions *opt;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	Slot *slots;
	int n; /* engines (slots) */
	BookDB *db;
	Selector *sel;
	Plan *plan;
	BookWriter *w;
	BookRecord *rec;
	SelLeaf *leaf;
	ThinkStats *out;
	char *err;
	int ret; /* 0, or the THINK_E* the run ends with */
	double start, last_commit, last_progress;
	uint64_t thought_committed; /* out->thought at the last commit */
	int inflight, consecutive_failures;
	size_t next_first; /* next of opt->first to try */
	bool exhausted;    /* hand out nothing more (nothing left, or an error) */
	bool in_select;    /* in plan_next: the stop flag stops the search */
	double select_t0;  /* when that plan_next began */
	bool stopped;      /* a selection was stopped part-way */
	char last_error[SEARCH_ERRLEN];
	/* The book's lines from the positions on the way to the roots
	 * (plan_path_line), kept analysed: checked after minimax when due
	 * (line_due, or line_check_at results). */
	bool line_due, line_inflight, line_off;
	Key line_key;
	uint64_t line_check_at;
	BookRecord *line_rec;
	/* Re-analysis (opt->again): the next of the list, and the new analysis
	 * of an answer before it is merged into the record. */
	size_t next_again;
	BookRecord *again_new;
};

/* Commits the writer's transaction (think_flush), noting what it held. */
static int think_flush(Think *t)
{
	int rc = bookdb_writer_flush(t->w);
	if (rc >= 0) t->thought_committed = t->out->thought;
	return rc;
}

/* Results stored since the last commit. */
static uint64_t uncommitted(const Think *t)
{
	return t->out->thought - t->thought_committed;
}

/* Results after which a line found analysed is looked at again. */
#define LINE_RECHECK 64

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
		double t0 = clock_ms_f();
		s->since = t0;
		pthread_mutex_unlock(&t->mu);
		int rc =
		    search_analyse(s->engine, &s->res, s->pos, &t->opt->budget, t->opt->multipv);
		if (rc < 0)
			errmsg_set(s->errmsg, sizeof s->errmsg, 0, "%s",
			           search_last_error(s->engine));
		else if (search_result_bare(s->errmsg, sizeof s->errmsg, &s->res,
		                            search_name(s->engine)))
			rc = SEARCH_EPROTOCOL; /* a failure: nothing stored */
		double dt = clock_ms_f() - t0;
		pthread_mutex_lock(&t->mu);
		search_meter_note(&s->meter, s->engine, dt);
		s->rc = rc;
		s->busy_ms += dt;
		s->since = 0;
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
			if (!(m = bookdb_record_add_move(rec, l->move))) continue;
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
	/* No line and no legal move: mated by the rules, which no search
	 * deepens. Any least depth minimax asks of an inner node takes it (at
	 * depth 0, the parent's own opinion of the move into it stood). */
	Move legal[MOVEGEN_MAX];
	if (res->nlines == 0 && movegen_legal(pos, legal) == 0) depth = 255;
	rec->flags |= BOOKDB_REC_THOUGHT;
	rec->think_depth = (uint8_t)depth;
}

/* A re-analysis: the positions of its list not thought yet. */
static uint64_t again_left(const Think *t)
{
	uint64_t thought = t->out->thought;
	return t->opt->nagain > thought ? t->opt->nagain - thought : 0;
}

/* Seconds left by the time or position limit (a re-analysis: also the end of
 * its list), el seconds in; -1: no limit. */
static double eta(const Think *t, double el)
{
	const ThinkOptions *opt = t->opt;
	uint64_t thought = t->out->thought, limit = opt->max_positions;
	if (opt->max_seconds > 0) return opt->max_seconds > el ? opt->max_seconds - el : 0.0;
	if (opt->again && (!limit || opt->nagain < limit)) limit = opt->nagain;
	if (limit && thought)
		return el * (double)(limit > thought ? limit - thought : 0) / (double)thought;
	return -1;
}

/* The selector's yield (sel_set_yield), on the calling thread while a
 * selection searches: a "search" report about once a second, and the stop
 * flag heeded by the selection that hands out work (a first search over a
 * big book takes tens of seconds); the other searches (the progress line's
 * root value, the summary's) run to their end. */
static bool think_yield(void *ctx)
{
	Think *t = ctx;
	const ThinkOptions *opt = t->opt;
	if (!t->in_select) return false;
	double now = clock_ms_f();
	double every = opt->search_report_ms ? opt->search_report_ms : 1000;
	if (opt->progress && now - t->select_t0 >= every && now - t->last_progress >= every) {
		SelStats ss;
		sel_get_stats(&ss, t->sel);
		double el = (now - t->start) / 1e3;
		ThinkProgress p = {.thought = t->out->thought,
		                   .book_thought =
		                       selection_book_thought(t->db, t->sel, uncommitted(t)),
		                   .seconds = el,
		                   .eta = eta(t, el),
		                   .expanded = ss.expansions,
		                   .filter_ready = ss.filter_ready};
		opt->progress(opt->progress_ctx, "search", &p);
		t->last_progress = now;
	}
	return opt->stop && *opt->stop;
}

/* Allocations, the selector over the book with its roots, the writer, one
 * worker thread per engine. 0 or a THINK_E* (message in t->err). */
static int setup(Think *t)
{
	BookDB *db = t->db;
	const ThinkOptions *opt = t->opt;
	int n = t->n;
	t->rec = malloc(sizeof *t->rec);
	t->leaf = malloc(sizeof *t->leaf);
	if (!(t->line_rec = malloc(sizeof *t->line_rec))) return THINK_ENOMEM;
	t->slots = calloc((size_t)n, sizeof *t->slots);
	if (!t->rec || !t->leaf || !t->slots) return THINK_ENOMEM;
	for (int i = 0; i < n; i++)
		if (!(t->slots[i].pos = malloc(sizeof(Position)))) return THINK_ENOMEM;
	if (opt->again && !(t->again_new = malloc(sizeof *t->again_new))) return THINK_ENOMEM;
	SelectionSpec spec = {.sel = {.kif_bonus = opt->kif_bonus, .draw_value = 0},
	                      .keys = opt->keys,
	                      .plan = &opt->plan,
	                      .roots = opt->roots,
	                      .root_weights = opt->root_weights,
	                      .nroots = opt->nroots,
	                      .paths = opt->paths,
	                      .npaths = opt->npaths,
	                      .paths_only = opt->paths_only,
	                      .memory = opt->select_memory};
	char serr[SNAP_ERRLEN];
	double t0 = clock_ms_f();
	int rc = selection_resume(&t->sel, &t->plan, db, &spec, opt->snapshot,
	                          &t->out->snap_restored, t->out->snap_note, serr);
	t->out->snap_ms = clock_ms_f() - t0;
	if (rc == SEL_ENOMEM) return THINK_ENOMEM;
	if (rc < 0)
		return errmsg_set(t->err, THINK_ERRLEN,
		                  rc == SEL_EINVAL ? THINK_EINVAL : THINK_EBOOK, "think: %s", serr);
	/* Said now: a first search from scratch is the wait that follows. */
	if (opt->on_snapshot && opt->snapshot)
		opt->on_snapshot(opt->snapshot_ctx, t->out->snap_restored, t->out->snap_ms,
		                 t->out->snap_note);
	sel_set_yield(t->sel, think_yield, t);
	if (bookdb_writer_new(&t->w, db, opt->commit_every ? opt->commit_every : 64) < 0)
		return errmsg_set(t->err, THINK_ERRLEN, THINK_EBOOK, "think: %s",
		                  "cannot start the book writer");
	for (int i = 0; i < n; i++) {
		t->slots[i].t = t;
		t->slots[i].engine = opt->engines[i];
		search_meter_start(&t->slots[i].meter, opt->engines[i]);
		if (pthread_create(&t->slots[i].thread, NULL, worker, &t->slots[i]) != 0)
			return THINK_ENOMEM;
		t->slots[i].started = true;
	}
	return 0;
}

/* The next of opt->first (think --from-kifu/--extend) not thought or leased,
 * set up in slot s; false when none is left. Called without the lock. */
static bool next_first(Think *t, Slot *s)
{
	const ThinkOptions *opt = t->opt;
	while (t->next_first < opt->nfirst) {
		const char *spec = opt->first[t->next_first++];
		if (position_parse(s->pos, spec, NULL) < 0) continue; /* checked by caller */
		Key k = pos_key(s->pos);
		if (sel_is_thought(t->sel, k) || sel_is_leased(t->sel, k)) continue;
		s->key = k;
		return true;
	}
	return false;
}

/* Re-analysis: the next position of opt->again not in flight, set up in
 * slot s from its record (read through the writer, which sees every answer
 * stored); false when none is left. Called without the lock. */
static bool next_again(Think *t, Slot *s)
{
	const ThinkOptions *opt = t->opt;
	while (t->next_again < opt->nagain) {
		Key k = opt->again[t->next_again++];
		if (sel_is_leased(t->sel, k)) continue;
		if (bookdb_writer_get(t->line_rec, t->w, k) != 0 ||
		    bookdb_record_position(s->pos, t->line_rec, NULL) < 0)
			continue; /* gone since the list was made, or damaged: check says so */
		s->key = k;
		return true;
	}
	return false;
}

/* The next position to think of the book's lines from the positions on the
 * way to the roots (each line as deep as the roots lie below its start),
 * not thought and not leased, in s->pos: 1, or 0 when there is none. */
static int lines_leaf(Think *t, Slot *s)
{
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, t->db, false) < 0) return 0;
	const char *sfen;
	int plies, rc = 0;
	for (size_t i = 0; rc == 0 && plan_path_line(t->plan, i, &sfen, &plies); i++) {
		if (position_parse(s->pos, sfen, NULL) < 0) continue;
		rc = bookdb_line_leaf(t->line_rec, txn, plies, s->pos);
		if (rc == 1 && sel_is_leased(t->sel, pos_key(s->pos))) {
			t->line_due = true; /* being thought: look again once it is in */
			rc = 0;
		}
	}
	bookdb_txn_abort(txn);
	return rc;
}

/* The next position of the book's lines (think's lines, above) in slot s
 * when it is due: the book committed and minimax run first (an incremental
 * run; a whole-book one only on a book that is small, else the lines are
 * left to the selector's roots, said once). Called without the lock; false
 * when nothing of the lines is to be thought now. */
static bool next_line(Think *t, Slot *s)
{
	const ThinkOptions *opt = t->opt;
	const char *sfen;
	int plies;
	if (t->line_off || t->line_inflight || !book_minimax_hook_set(opt->minimax) ||
	    !plan_path_line(t->plan, 0, &sfen, &plies))
		return false;
	if (!t->line_due && t->out->thought < t->line_check_at) return false;
	if (plan_paths_left(t->plan)) return false; /* the paths first */
	t->line_due = false;
	t->line_check_at = t->out->thought + LINE_RECHECK;
	char merr[256] = "the commit failed";
	if (think_flush(t) < 0 ||
	    opt->minimax->run(opt->minimax->ctx, t->db, merr, sizeof merr) < 0) {
		t->line_off = true;
		if (opt->progress)
			fprintf(stderr,
			        "think: the book's lines on the way to the roots are not followed "
			        "(minimax: %s)\n",
			        merr);
		return false;
	}
	if (lines_leaf(t, s) != 1) return false;
	s->key = pos_key(s->pos);
	t->line_key = s->key;
	t->line_inflight = true;
	return true;
}

/* Gives work to every idle engine: the given positions first, then the
 * selector's leaves. Called and returns with the lock held; *stopping is set
 * on an error. */
static void hand_out(Think *t, bool *stopping)
{
	const ThinkOptions *opt = t->opt;
	for (int i = 0; i < t->n && !*stopping && !t->exhausted; i++) {
		Slot *s = &t->slots[i];
		if (s->state != SLOT_IDLE) continue;
		if (opt->max_positions &&
		    t->out->thought + (uint64_t)t->inflight >= opt->max_positions)
			break;
		pthread_mutex_unlock(&t->mu);
		bool forced = opt->again ? next_again(t, s) : next_first(t, s) || next_line(t, s);
		t->in_select = !forced;
		t->select_t0 = clock_ms_f();
		/* A re-analysis thinks its list and nothing else. */
		int rc = forced ? 1 : opt->again ? 0 : plan_next(t->plan, t->leaf, s->pos);
		t->in_select = false;
		pthread_mutex_lock(&t->mu);
		if (rc == SEL_ESTOPPED) { /* the stop flag, heard part-way */
			t->stopped = *stopping = true;
			break;
		}
		if (rc < 0) {
			t->ret =
			    errmsg_set(t->err, THINK_ERRLEN, THINK_EBOOK, "think: selection: %s",
			               rc == SEL_EINVAL
			                   ? "a leaf that its root does not reach (a selector bug)"
			                   : sel_strerror(rc));
			*stopping = true;
			break;
		}
		if (rc == 0) {
			t->exhausted = t->inflight == 0;
			break;
		}
		if (!forced) s->key = t->leaf->key;
		/* A leaf the selector cannot hold leased would be handed out again. */
		if (sel_lease(t->sel, s->key) < 0) {
			t->ret = errmsg_set(t->err, THINK_ERRLEN, THINK_ENOMEM, "think: %s",
			                    "out of memory leasing a leaf");
			*stopping = true;
			break;
		}
		s->state = SLOT_BUSY;
		t->inflight++;
		pthread_cond_broadcast(&t->work_cv);
	}
}

/* Waits (lock held) for an answer, or 100 ms to look at the flag and clock. */
static void wait_answer(Think *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->slots[i].state == SLOT_DONE) return;
	struct timespec ts = clock_realtime_in(100);
	pthread_cond_timedwait(&t->done_cv, &t->mu, &ts);
}

/* One finished slot's answer (lock held): stored with the selector told, or a
 * failure counted (the position stays leased for the rest of the run). */
static void collect(Think *t, Slot *s)
{
	t->inflight--;
	s->state = SLOT_IDLE;
	if (t->line_inflight && key_equal(s->key, t->line_key)) {
		t->line_inflight = false;
		t->line_due = true;
	}
	if (s->rc < 0) {
		if (s->rc == SEARCH_ECANCELED) {
			int rc = sel_release(t->sel, s->key);
			if (rc < 0)
				t->ret = errmsg_set(t->err, THINK_ERRLEN,
				                    rc == SEL_ENOMEM ? THINK_ENOMEM : THINK_EBOOK,
				                    "think: selection: %s", sel_strerror(rc));
			return;
		}
		t->out->failed++;
		errmsg_set(t->last_error, sizeof t->last_error, 0, "%s", s->errmsg);
		if (++t->consecutive_failures >= 3 * t->n)
			t->ret = errmsg_set(t->err, THINK_ERRLEN, THINK_EENGINE,
			                    "think: engines keep failing: %.300s", s->errmsg);
		return;
	}
	t->consecutive_failures = 0;
	bool replaced = false;
	int rc = t->opt->again ? think_store_again(t->w, t->sel, t->rec, t->again_new, s->key,
	                                           s->pos, &s->res, &t->opt->budget,
	                                           t->opt->campaign, &replaced, t->err)
	                       : think_store(t->w, t->sel, t->rec, s->key, s->pos, &s->res,
	                                     &t->opt->budget, t->err);
	if (rc < 0) {
		t->ret = THINK_EBOOK;
	} else {
		t->out->thought++;
		t->out->again_replaced += replaced;
	}
}

int think_store_again(BookWriter *w, Selector *sel, BookRecord *rec, BookRecord *b, Key key,
                      const Position *pos, const SearchResult *res, const SearchBudget *budget,
                      uint64_t campaign, bool *replaced, char *err)
{
	int g = bookdb_writer_get(rec, w, key), rc = 0;
	if (g < 0 && g != BOOKDB_ENOTFOUND)
		return errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "think: reading the book: %s",
		                  bookdb_strerror(g));
	fill_record(b, false, pos, res, budget);
	BookMergeDiff d = {.changed = true, .replaced = true};
	if (g == 0)
		bookdb_record_merge(rec, rec, b, BOOKDB_PREFER_DEEPER, -1, false, &d);
	else
		memcpy(rec, b,
		       offsetof(BookRecord, moves) + (size_t)b->nmoves * sizeof b->moves[0]);
	/* A new analysis that lost changes nothing (not even the moves it
	 * named that the record lacks): the record stays as it was, and the
	 * selector's lease is released. */
	*replaced = d.replaced;
	bool store = g != 0 || d.replaced;
	uint8_t kb[THINK_AGAIN_KEY_LEN], id[8];
	think_again_key(kb, key);
	for (int i = 0; i < 8; i++) id[i] = (uint8_t)(campaign >> (8 * i));
	BookTxn *txn;
	if ((store && (g = bookdb_writer_put(w, key, rec)) < 0) ||
	    (g = bookdb_writer_txn(&txn, w)) < 0 ||
	    (g = bookdb_kv_put(txn, BOOKDB_WORK, kb, sizeof kb, id, sizeof id)) < 0 ||
	    (sel && (rc = store ? sel_add_result(sel, key, rec) : sel_release(sel, key)) < 0))
		return errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "think: storing a result: %s",
		                  g < 0 ? bookdb_strerror(g) : sel_strerror(rc));
	return 0;
}

int think_store(BookWriter *w, Selector *sel, BookRecord *rec, Key key, const Position *pos,
                const SearchResult *res, const SearchBudget *budget, char *err)
{
	int g = bookdb_writer_get(rec, w, key), rc = 0;
	if (g < 0 && g != BOOKDB_ENOTFOUND)
		return errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "think: reading the book: %s",
		                  bookdb_strerror(g));
	fill_record(rec, g == 0, pos, res, budget);
	if ((g = bookdb_writer_put(w, key, rec)) < 0 ||
	    (sel && (rc = sel_add_result(sel, key, rec)) < 0))
		return errmsg_set(err, THINK_ERRLEN, THINK_EBOOK, "think: storing a result: %s",
		                  g < 0 ? bookdb_strerror(g) : sel_strerror(rc));
	return 0;
}

/* About once a second, and at the end: the progress report (thought,
 * engines busy, the root's value and PV, ETA). */
static void progress(Think *t, const char *phase, double now)
{
	const ThinkOptions *opt = t->opt;
	double busy = 0;
	int under_way = 0;
	pthread_mutex_lock(&t->mu);
	/* The searches under way count as far as they have gone (counted only
	 * when they ended, a long one showed its engine idle). */
	for (int i = 0; i < t->n; i++) {
		busy +=
		    t->slots[i].busy_ms +
		    (t->slots[i].since && now > t->slots[i].since ? now - t->slots[i].since : 0);
		under_way += t->slots[i].since != 0;
	}
	pthread_mutex_unlock(&t->mu);
	double el = (now - t->start) / 1e3;
	uint64_t thought = t->out->thought;
	SelStats ss;
	sel_get_stats(&ss, t->sel);
	ThinkProgress p = {.thought = thought,
	                   .book_thought = selection_book_thought(t->db, t->sel, uncommitted(t)),
	                   .busy = busy / (t->n * (now - t->start)),
	                   .seconds = el,
	                   .eta = -1};
	if (opt->again) {
		p.again_listed = opt->nagain;
		p.again_left = again_left(t);
		p.again_replaced = t->out->again_replaced;
	}
	/* The root's value and PV (the line to the next leaf; cheap: the bounds
	 * make it a re-search of the PV; not after a selection stopped part-way,
	 * which would search again). */
	int rv;
	bool has;
	SelLeaf *leaf = t->leaf;
	/* (Not before the root is thought: its value would be a leaf's 0. The
	 * line is the first root's own, whichever root the next leaf is of.) */
	if (!t->stopped && !opt->again && sel_root_thought(t->sel, 0) &&
	    sel_root_value(&rv, &has, t->sel, 0) == 0 && has) {
		p.has_root = true;
		p.root_value = rv;
		if (sel_select_root(leaf, t->sel, 0) == 1)
			for (; p.npv < leaf->nmoves && p.npv < THINK_PROGRESS_PV; p.npv++)
				p.pv[p.npv] = leaf->moves[p.npv];
	}
	p.eta = eta(t, el);
	/* Past --time the searches under way are finished, however long they
	 * take (a 10^8-node one: minutes): the line says so, not "eta 0s". */
	if (opt->max_seconds > 0 && el >= opt->max_seconds) p.finishing = under_way;
	opt->progress(opt->progress_ctx, phase, &p);
}

/* The engines' time so far, ms (t->mu held). */
static double engine_ms(const Think *t)
{
	double ms = 0;
	for (int i = 0; i < t->n; i++) ms += t->slots[i].meter.used_ms;
	return ms;
}

/* The loop: hand out, wait, collect, commit about once a second. */
static void run_loop(Think *t)
{
	const ThinkOptions *opt = t->opt;
	t->start = t->last_commit = t->last_progress = clock_ms_f();
	for (;;) {
		double now = clock_ms_f();
		bool stopping = (opt->stop && *opt->stop) ||
		                (opt->max_seconds > 0 && now - t->start >= opt->max_seconds * 1e3);
		pthread_mutex_lock(&t->mu);
		if (opt->max_engine_seconds > 0 && engine_ms(t) >= opt->max_engine_seconds * 1e3)
			stopping = true;
		hand_out(t, &stopping);
		if (t->inflight == 0 &&
		    (stopping || t->exhausted ||
		     (opt->max_positions && t->out->thought >= opt->max_positions))) {
			pthread_mutex_unlock(&t->mu);
			break;
		}
		wait_answer(t);
		for (int i = 0; i < t->n; i++)
			if (t->slots[i].state == SLOT_DONE) collect(t, &t->slots[i]);
		pthread_mutex_unlock(&t->mu);
		if (t->ret < 0) t->exhausted = true; /* hand out nothing more; collect, leave */
		now = clock_ms_f();
		if (now - t->last_commit >= 1000) {
			if (think_flush(t) < 0 && !t->ret) {
				t->ret = errmsg_set(t->err, THINK_ERRLEN, THINK_EBOOK, "think: %s",
				                    "commit failed");
				t->exhausted = true;
			} else if (opt->select_memory && t->sel) {
				/* All its results committed: the graph may be trimmed
				 * (out of memory for that: it stays as it is). */
				(void)sel_trim(t->sel, opt->select_memory);
			}
			t->last_commit = now;
		}
		if (opt->progress && now - t->last_progress >=
		                         (opt->status_report_ms ? opt->status_report_ms : 1000)) {
			progress(t, "status", now);
			t->last_progress = now;
		}
	}
}

/* The selection saved for the next run, once the book is committed: nothing
 * leased (positions whose analyses failed are tried again next time). A
 * failure is only reported: the book is whole, the next run searches anew. */
static void save_selection(Think *t)
{
	ThinkStats *out = t->out;
	double t0 = clock_ms_f();
	BookStamp st;
	/* Held first: the stamp then says where the writes to catch up with begin. */
	int rc = selection_hold(t->db, true);
	if (rc == 0) rc = bookdb_stamp(&st, t->db);
	if (rc < 0)
		errmsg_set(out->save_note, SNAP_ERRLEN, rc, "the book's stamp: %s",
		           bookdb_strerror(rc));
	else if ((rc = selection_release_all(t->sel)) < 0)
		errmsg_set(out->save_note, SNAP_ERRLEN, rc, "%s", sel_strerror(rc));
	else
		rc = selection_save(t->opt->snapshot, &st, t->sel, t->plan, 0, out->save_note);
	if (rc < 0) (void)selection_hold(t->db, false);
	out->snap_saved = rc == 0;
	out->save_ms = clock_ms_f() - t0;
}

/* The last commit and the summary. */
static void finish(Think *t)
{
	ThinkStats *out = t->out;
	if (!t->ret && out->failed && !out->thought) /* an engine that cannot work */
		t->ret = errmsg_set(t->err, THINK_ERRLEN, THINK_EENGINE,
		                    "think: every analysis failed: %.300s", t->last_error);
	out->exhausted = t->exhausted && t->ret == 0;
	out->search_stopped = t->stopped;
	if (think_flush(t) < 0 && !t->ret)
		t->ret = errmsg_set(t->err, THINK_ERRLEN, THINK_EBOOK, "think: %s",
		                    "final commit failed");
	out->commits = bookdb_writer_commits(t->w);
	double el = clock_ms_f() - t->start, busy = 0;
	for (int i = 0; i < t->n; i++) busy += t->slots[i].busy_ms;
	out->seconds = el / 1e3;
	pthread_mutex_lock(&t->mu);
	out->engine_seconds = engine_ms(t) / 1e3;
	pthread_mutex_unlock(&t->mu);
	out->busy_pct = el > 0 ? 100.0 * busy / (t->n * el) : 0;
	bool has; /* (not after a stopped selection: it would search again; not for a
	           * re-analysis, which selects nothing) */
	if (!t->stopped && !t->opt->again && sel_root_value(&out->root_value, &has, t->sel, 0) == 0)
		out->root_known = has && sel_root_thought(t->sel, 0);
	if (t->opt->again) out->again_left = again_left(t);
	if (t->opt->snapshot && t->ret == 0) save_selection(t);
}

/* Stops and joins the workers, frees everything. */
static void teardown(Think *t)
{
	if (t->slots) {
		pthread_mutex_lock(&t->mu);
		for (int i = 0; i < t->n; i++) t->slots[i].state = SLOT_QUIT;
		pthread_cond_broadcast(&t->work_cv);
		pthread_mutex_unlock(&t->mu);
		for (int i = 0; i < t->n; i++)
			if (t->slots[i].started) pthread_join(t->slots[i].thread, NULL);
		for (int i = 0; i < t->n; i++) free(t->slots[i].pos);
	}
	bookdb_writer_free(t->w);
	plan_free(t->plan);
	sel_free(t->sel);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->work_cv);
	pthread_cond_destroy(&t->done_cv);
	free(t->slots);
	free(t->leaf);
	free(t->line_rec);
	free(t->again_new);
	free(t->rec);
}

static int think_loop(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err)
{
	if (err) err[0] = 0;
	if (!opt->engines || opt->nengines < 1 || opt->multipv < 1 ||
	    opt->multipv > SEARCH_MULTIPV_MAX)
		return errmsg_set(err, THINK_ERRLEN, THINK_EINVAL, "think: %s",
		                  "need at least one engine and MultiPV 1..32");
	Think t = {.opt = opt, .db = db, .n = opt->nengines, .out = out, .err = err};
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.work_cv, NULL);
	pthread_cond_init(&t.done_cv, NULL);
	if ((t.ret = setup(&t)) == 0) {
		run_loop(&t);
		if (opt->progress) progress(&t, "done", clock_ms_f());
		finish(&t);
	}
	teardown(&t);
	return t.ret;
}

/* The roots queued in the book (joseki extend) come first, then opt->first. */
int think_run(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	if (opt->again) return think_loop(out, db, opt, err); /* its list alone */
	RootList q = {0};
	char rerr[ROOTS_ERRLEN];
	int rc = roots_queue_read(&q, db, rerr);
	if (rc < 0)
		return errmsg_set(err, THINK_ERRLEN,
		                  rc == ROOTS_ENOMEM ? THINK_ENOMEM : THINK_EBOOK,
		                  "queued roots: %s", rerr);
	if (q.n == 0) return think_loop(out, db, opt, err);
	for (size_t i = 0; i < opt->nfirst; i++)
		if (roots_add(&q, opt->first[i]) < 0) {
			roots_free(&q);
			return errmsg_set(err, THINK_ERRLEN, THINK_ENOMEM, "out of memory");
		}
	ThinkOptions o = *opt;
	o.first = (const char *const *)q.specs;
	o.nfirst = q.n;
	rc = think_loop(out, db, &o, err);
	roots_free(&q);
	return rc;
}

int think_paths(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	ThinkOptions o = *opt;
	o.first = NULL;
	o.nfirst = 0;
	o.paths_only = true;
	o.snapshot = NULL;
	return think_loop(out, db, &o, err);
}
