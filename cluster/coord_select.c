/*
 * cluster/coord_select.c — the coordinator's selection in slices.
 *
 * A selection (plan_next) can take from microseconds (the next leaf of a
 * covered tree's batch) to seconds (the first search over the thought part of
 * a large book; a search that meets a part of the book its cut-offs had left
 * unexpanded). Run in the service thread, it held every request of its round
 * for that long. So plan_next runs on a thread of its own, and the service
 * thread gives it slices: "up to N leaves, for so many milliseconds", and
 * waits meanwhile. The thread selects leaves one after another, leasing each
 * in the selector before the next (as the acquire would); when the slice is
 * over between two leaves it stops, and when it is over inside a search the
 * selector's yield function (sel_set_yield) suspends the search and hands
 * control back. Either way the service thread takes the leaves found so far.
 * While a search is suspended the service thread stores results and leases
 * (the selector keeps those changes and applies them when the search
 * returns, so it selects what it would have selected at once when it began)
 * and answers the round's other requests. One handoff a slice, not a leaf:
 * on a loaded machine each wake-up of the other thread can cost a scheduler
 * delay.
 *
 * A slice may also run beside the service thread (co_select_begin), with no
 * time limit, while the service commits or waits for its next round; the
 * service's next call into the coordinator stops it first (co_select_hold:
 * sr_cut, seen at the next leaf or yield). So the two threads never use the
 * selector, the plan or the sr_* fields at once, and need no lock for them.
 */
#include "cluster/coord_priv.h"

#include <stdlib.h>
#include <string.h>

#include "shogi/clock.h"

enum { SR_IDLE, SR_RUN, SR_PAUSED, SR_DONE };

/* The slice is over: its time is up, or the service cut it. sr_until is
 * written by the service thread only while this thread waits (before the
 * slice began, under the mutex). */
static bool sr_over(Coord *c)
{
	return atomic_load_explicit(&c->sr_cut, memory_order_relaxed) ||
	       clock_ms_f() >= c->sr_until;
}

/* The selector's yield function, on the selection thread. */
static bool sr_yield(void *arg)
{
	Coord *c = arg;
	if (!sr_over(c)) return false;
	pthread_mutex_lock(&c->sr_mu);
	c->sr_state = SR_PAUSED;
	c->sr_t1 = clock_ms_f();
	c->sr_slices++;
	pthread_cond_broadcast(&c->sr_cv);
	while (c->sr_state == SR_PAUSED && !c->sr_quit) pthread_cond_wait(&c->sr_cv, &c->sr_mu);
	bool quit = c->sr_quit;
	pthread_mutex_unlock(&c->sr_mu);
	return quit;
}

/* Re-analysis: the next of the list not leased, as a leaf in *leaf and its
 * position (from its record, read in a transaction of this thread's) in
 * *pos: 1, or 0 when the list is done. */
static int next_again(Coord *c, SelLeaf *leaf, Position *pos)
{
	while (c->again_next < c->opt.nagain) {
		Key k = c->opt.again[c->again_next++];
		if (sel_is_leased(c->sel, k)) continue;
		BookTxn *t;
		if (bookdb_txn_begin(&t, c->db, false) < 0) return SEL_EBOOK;
		int rc = bookdb_get(c->again_rec, t, k);
		bookdb_txn_abort(t);
		if (rc < 0 || bookdb_record_position(pos, c->again_rec, NULL) < 0)
			continue; /* gone since the list was made, or damaged: check says so */
		memset(leaf, 0, sizeof *leaf);
		leaf->key = k;
		return 1;
	}
	return 0;
}

/* Leaves into sr_leaf/sr_sfen until sr_want of them, the slice's end, no
 * leaf, or an error (sr_rc: plan_next's last result). */
static void select_leaves(Coord *c)
{
	c->sr_rc = 1;
	while (c->sr_n < c->sr_want) {
		if (c->sr_n > 0 && sr_over(c)) break;
		int n = c->sr_n;
		int rc = c->opt.again ? next_again(c, &c->sr_leaf[n], c->sr_tmp)
		                      : plan_next(c->plan, &c->sr_leaf[n], c->sr_tmp);
		/* After a suspension the service may have taken the leaves: the
		 * new one goes first. */
		if (rc == 1 && c->sr_n != n) c->sr_leaf[c->sr_n] = c->sr_leaf[n];
		c->sr_rc = rc;
		if (rc == 0 || rc == 1) c->sr_answered = true;
		if (rc != 1) break;
		/* Leased meanwhile as a provisional leaf (coord.c), while the
		 * search was suspended, and maybe thought since: its lease or
		 * result, applied as the search returned, has the next search
		 * select around it. */
		if (!c->opt.again && (sel_is_leased(c->sel, c->sr_leaf[c->sr_n].key) ||
		                      sel_is_thought(c->sel, c->sr_leaf[c->sr_n].key)))
			continue;
		/* Leased before the next search, which must not select it again
		 * (sr_rc stays 1: a leaf was found). */
		int lr = sel_lease(c->sel, c->sr_leaf[c->sr_n].key);
		if (lr < 0) {
			c->sr_rc = lr;
			break;
		}
		/* Kept: its SFEN, all a lease needs of its position (sr_tmp). */
		sfen_write(c->sr_tmp, c->sr_sfen[c->sr_n], SFEN_MAX);
		c->sr_n++;
	}
}

static void *sr_main(void *arg)
{
	Coord *c = arg;
	pthread_setname_np(pthread_self(), "work-select");
	pthread_mutex_lock(&c->sr_mu);
	for (;;) {
		while (c->sr_state != SR_RUN && !c->sr_quit)
			pthread_cond_wait(&c->sr_cv, &c->sr_mu);
		if (c->sr_quit) break;
		pthread_mutex_unlock(&c->sr_mu);
		select_leaves(c);
		pthread_mutex_lock(&c->sr_mu);
		c->sr_state = SR_DONE;
		c->sr_t1 = clock_ms_f();
		pthread_cond_broadcast(&c->sr_cv);
	}
	pthread_mutex_unlock(&c->sr_mu);
	return NULL;
}

int co_select_start(Coord *c)
{
	c->sr_leaf = calloc(COORD_MAX_BATCH, sizeof *c->sr_leaf);
	c->sr_sfen = calloc(COORD_MAX_BATCH, sizeof *c->sr_sfen);
	c->sr_tmp = malloc(sizeof *c->sr_tmp);
	if (!c->sr_leaf || !c->sr_sfen || !c->sr_tmp) return COORD_ENOMEM;
	if (c->opt.select_slice_ms < 0) return 0; /* whole searches, in the service thread */
	pthread_mutex_init(&c->sr_mu, NULL);
	pthread_cond_init(&c->sr_cv, NULL);
	c->sr_state = SR_IDLE;
	if (pthread_create(&c->sr_thread, NULL, sr_main, c) != 0) {
		pthread_cond_destroy(&c->sr_cv);
		pthread_mutex_destroy(&c->sr_mu);
		return 0; /* the same, without the thread */
	}
	c->sr_started = true;
	sel_set_yield(c->sel, sr_yield, c);
	return 0;
}

void co_select_stop(Coord *c)
{
	if (c->sr_started) {
		/* A suspended search is stopped (its yield returns true); the
		 * thread then finds sr_quit and ends. */
		pthread_mutex_lock(&c->sr_mu);
		c->sr_quit = true;
		atomic_store(&c->sr_cut, true); /* a running slice stops */
		pthread_cond_broadcast(&c->sr_cv);
		pthread_mutex_unlock(&c->sr_mu);
		pthread_join(c->sr_thread, NULL);
		pthread_cond_destroy(&c->sr_cv);
		pthread_mutex_destroy(&c->sr_mu);
		sel_set_yield(c->sel, NULL, NULL);
		c->sr_started = false;
	}
	/* The stock, never handed out, is free for the selection again (a
	 * snapshot written now selects it anew at the next start). */
	for (int i = 0; c->sr_leaf && i < c->sr_n; i++)
		(void)sel_release(c->sel, c->sr_leaf[i].key); /* only marks: no error */
	c->sr_n = 0;
	free(c->sr_leaf);
	free(c->sr_sfen);
	free(c->sr_tmp);
	c->sr_leaf = NULL;
	c->sr_sfen = NULL;
	c->sr_tmp = NULL;
}

bool co_select_paused(const Coord *c)
{
	return c->sr_started && c->sr_state == SR_PAUSED;
}

/* A slice is over (the thread waits): its result; a finished slice's state
 * back to idle. Under sr_mu. */
static int slice_result(Coord *c)
{
	int rc = c->sr_state == SR_PAUSED ? CO_SELECT_BUSY
	         : c->sr_rc < 0           ? c->sr_rc
	         : c->sr_rc == 1          ? 1
	                                  : 0;
	if (c->sr_state == SR_DONE) c->sr_state = SR_IDLE;
	return rc;
}

/* A new slice (from SR_IDLE) or the suspended search's (from SR_PAUSED).
 * Under sr_mu. */
static void slice_run(Coord *c, double until, int want)
{
	atomic_store(&c->sr_cut, false);
	c->sr_until = until;
	c->sr_want = want > COORD_MAX_BATCH ? COORD_MAX_BATCH : want;
	c->sr_state = SR_RUN;
	pthread_cond_broadcast(&c->sr_cv);
}

int co_select_step(Coord *c, double ms, int want)
{
	if (want > COORD_MAX_BATCH) want = COORD_MAX_BATCH;
	if (!c->sr_started) {
		c->sr_want = want;
		c->sr_until = ms < 0 ? 1e300 : clock_ms_f() + ms;
		select_leaves(c);
		return c->sr_rc < 0 ? c->sr_rc : c->sr_rc == 1 ? 1 : 0;
	}
	pthread_mutex_lock(&c->sr_mu);
	slice_run(c, clock_ms_f() + ms, want);
	while (c->sr_state == SR_RUN) pthread_cond_wait(&c->sr_cv, &c->sr_mu);
	int rc = slice_result(c);
	pthread_mutex_unlock(&c->sr_mu);
	return rc;
}

void co_select_begin(Coord *c, int want)
{
	if (!c->sr_started || c->sr_bg) return;
	pthread_mutex_lock(&c->sr_mu);
	c->sr_bg = true;
	c->sr_t0 = clock_ms_f();
	c->sr_n0 = c->sr_n;
	slice_run(c, 1e300, want);
	pthread_mutex_unlock(&c->sr_mu);
}

int co_select_hold(Coord *c)
{
	if (!c->sr_bg) return CO_SELECT_NONE;
	pthread_mutex_lock(&c->sr_mu);
	atomic_store(&c->sr_cut, true);
	while (c->sr_state == SR_RUN) pthread_cond_wait(&c->sr_cv, &c->sr_mu);
	c->sr_bg = false;
	c->sr_ahead_ms += c->sr_t1 - c->sr_t0;
	c->sr_ahead_leaves += (uint64_t)(c->sr_n - c->sr_n0);
	int rc = slice_result(c);
	pthread_mutex_unlock(&c->sr_mu);
	return rc;
}
