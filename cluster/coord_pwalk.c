/*
 * cluster/coord_pwalk.c — provisional leaves walked ahead, on a thread of
 * their own (docs/cluster.md, "Provisional leaves").
 *
 * The walk (bookgen/provisional.h) reads a record for each position it
 * meets; on a book larger than memory most of those reads wait for the disk.
 * Walked in the service thread, an acquire's slice went to them while the
 * requests of its round waited. So a thread walks the roots in turn, a few
 * leaves at a time, each in a read transaction of its own, and keeps up to
 * PW_RING of them (key and SFEN) ready; the service thread takes them and
 * sorts out those leased or thought since (the walk asks nothing of the
 * selector, which only the service thread and the selection thread use, one
 * at a time). The thread reads ahead with threads of its own, not the
 * selector's. It stops when told, or when every line is walked.
 */
#include "cluster/coord_priv.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/prefetch.h"
#include "bookgen/provisional.h"

#define PW_RING 1024 /* leaves kept ready */
#define PW_BATCH 16  /* leaves a call of the walk (positions are large) */
#define PW_READS 512 /* records read at most a call: quit is seen between */
#define PW_AHEAD 16  /* threads reading ahead */
/* How far below a position the walk enters its records are read ahead:
 * PROV_AHEAD_DEPTH (bookgen/provisional.h; on a 10⁸ book grown by benchmark
 * runs the walk read 4.7 records a leaf, down the lines results make,
 * against 0.15 on a 10⁷ book fresh from synth). */

struct CoPwalk {
	BookDB *db;
	BookPrefetch *pf;
	ProvWalk **walk;
	int nroots, next;
	SelLeaf *leaf;
	Position *pos;
	PwLeaf *batch;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t room, ready;
	/* Under mu: the ring (n leaves from head), quit, paused (no walking
	 * until resumed), done (every line walked), err (the walk's error,
	 * SEL_*). */
	PwLeaf ring[PW_RING];
	int head, n, err;
	bool quit, paused, done, started;
	/* The selector's key filter (co_pwalk_set_filter), once it has one, in
	 * one word (so that a regrown filter replaces it whole): its words'
	 * address (64-byte aligned), or'ed with log2(blocks + 1); 0: none. */
	atomic_uint_fast64_t filter;
	atomic_uint_fast64_t spared; /* reads the filter spared */
	/* The filter's readers (a batch of the walk's, a record read ahead),
	 * counted by the parity of the handovers when each began (epoch: the
	 * handovers so far), so that the filter a handover replaced is known
	 * unread once those that began before it are done (co_pwalk_set_filter:
	 * a read-copy-update's grace period, in two counters). */
	atomic_uint epoch, users[2];
};

/* A reader begins: its counter (pw_leave's argument). */
static unsigned pw_enter(CoPwalk *p)
{
	unsigned e = atomic_load(&p->epoch) & 1;
	atomic_fetch_add(&p->users[e], 1);
	return e;
}

static void pw_leave(CoPwalk *p, unsigned e)
{
	atomic_fetch_sub(&p->users[e], 1);
}

/* The selector's filter, once handed over (false: none yet). */
static bool pw_filter(CoPwalk *p, SelKeyFilter *f)
{
	/* Sequentially consistent, as the reader's count before it and the
	 * handover's store and count after it: either the handover finds the
	 * reader counted or the reader finds the new word. */
	uint64_t v = atomic_load(&p->filter);
	if (!v) return false;
	f->words = (const uint64_t *)(uintptr_t)(v & ~(uint64_t)63);
	f->blocks = ((uint64_t)1 << (v & 63)) - 1;
	return true;
}

/* Whether the book may hold key: the selector's filter, once handed over. */
static bool pw_held(void *ctx, Key key)
{
	SelKeyFilter f;
	return !pw_filter(ctx, &f) || sel_key_filter_maybe(&f, key);
}

bool co_pwalk_set_filter(CoPwalk *p, const SelKeyFilter *f)
{
	uintptr_t a = (uintptr_t)f->words;
	if (!p || !a || (a & 63) || (f->blocks & (f->blocks + 1))) return false;
	uint64_t v = (uint64_t)a | (uint64_t)__builtin_ctzll(f->blocks + 1);
	/* Readers that began before the last handover: done or not. A reader
	 * counts itself before it reads the word, so one not counted yet when
	 * they are found done reads the word stored before. */
	unsigned e = atomic_load(&p->epoch);
	bool quiet = atomic_load(&p->users[(e & 1) ^ 1]) == 0;
	if (atomic_load(&p->filter) == v) return quiet;
	/* The last handover's grace not over: this one waits (the walk goes on
	 * with the filter before, which the caller keeps). */
	if (!quiet) return false;
	atomic_store(&p->filter, v);
	atomic_store(&p->epoch, e + 1);
	return atomic_load(&p->users[e & 1]) == 0;
}

bool co_pwalk_read_begin(CoPwalk *p, SelKeyFilter *f, unsigned *token)
{
	*token = pw_enter(p);
	if (pw_filter(p, f)) return true;
	pw_leave(p, *token);
	return false;
}

void co_pwalk_read_end(CoPwalk *p, unsigned token)
{
	pw_leave(p, token);
}

uint64_t co_pwalk_spared(const CoPwalk *p)
{
	return p ? atomic_load_explicit(&((CoPwalk *)p)->spared, memory_order_relaxed) : 0;
}

static void pw_ahead(void *ctx, const Key *keys, size_t n)
{
	CoPwalk *p = ctx;
	if (p->pf) bookdb_prefetch_keys_deep(p->pf, keys, n, PROV_AHEAD_DEPTH);
}

/* On a read-ahead thread: a record read ahead at depth (PROV_AHEAD_DEPTH). A thought position's
 * children the filter does not rule out are read ahead in turn, so that the walk, one read at a
 * time down its line, finds the records under its next positions in memory: the reads of several
 * lines in flight together. (Without the filter, nothing more: most children are not in the book,
 * and reading their places would crowd the reads the walk waits for.) */
static void pw_then(void *ctx, BookPrefetch *pf, Key key, const uint8_t *val, size_t len, int depth)
{
	CoPwalk *p = ctx;
	(void)key;
	SelKeyFilter f;
	unsigned e;
	if (!co_pwalk_read_begin(p, &f, &e)) return;
	Key keys[BOOKDB_MAX_MOVES];
	size_t n = prov_record_children(keys, val, len, pw_held, p);
	co_pwalk_read_end(p, e);
	int next = prov_ahead_depth(depth, n);
	if (next >= 0) bookdb_prefetch_keys_deep(pf, keys, n, next);
}

/* A batch from the roots in turn: its count (0 with *all_done when every
 * walk is done), or a SEL_* error. */
static int pw_batch(CoPwalk *p, bool *all_done)
{
	ProvAsk ask = {.held = pw_held, .ahead = pw_ahead, .ctx = p, .max_reads = PW_READS};
	*all_done = false;
	int done = 0;
	for (int tried = 0; tried < p->nroots; tried++) {
		int r = p->next++ % p->nroots;
		if (prov_done(p->walk[r])) {
			done++;
			continue;
		}
		uint64_t spared0 = prov_spared(p->walk[r]);
		unsigned e = pw_enter(p);
		int n = prov_next(p->walk[r], p->leaf, p->pos, PW_BATCH, p->db, &ask);
		pw_leave(p, e);
		atomic_fetch_add_explicit(&p->spared, prov_spared(p->walk[r]) - spared0,
		                          memory_order_relaxed);
		if (n < 0) return n;
		for (int i = 0; i < n; i++) {
			p->batch[i].key = p->leaf[i].key;
			sfen_write(&p->pos[i], p->batch[i].sfen, sizeof p->batch[i].sfen);
		}
		if (n > 0) return n;
		done += prov_done(p->walk[r]);
	}
	*all_done = done == p->nroots;
	return 0;
}

static void *pw_main(void *arg)
{
	CoPwalk *p = arg;
	pthread_setname_np(pthread_self(), "work-pwalk");
	if (bookdb_prefetch_open(&p->pf, p->db, PW_AHEAD) < 0) p->pf = NULL; /* a hint only */
	if (p->pf) {
		bookdb_prefetch_name(p->pf, "pwalk-ahead");
		bookdb_prefetch_then(p->pf, pw_then, p);
	}
	pthread_mutex_lock(&p->mu);
	while (!p->quit && !p->done && !p->err) {
		if (p->paused || p->n > PW_RING - PW_BATCH) {
			pthread_cond_wait(&p->room, &p->mu);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		bool all_done;
		int n = pw_batch(p, &all_done);
		pthread_mutex_lock(&p->mu);
		if (n < 0) p->err = n;
		for (int i = 0; i < n; i++) p->ring[(p->head + p->n++) % PW_RING] = p->batch[i];
		if (all_done) p->done = true;
		pthread_cond_broadcast(&p->ready);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int co_pwalk_start(CoPwalk **out, BookDB *db, const Plan *plan)
{
	*out = NULL;
	CoPwalk *p = calloc(1, sizeof *p);
	if (!p) return SEL_ENOMEM;
	p->db = db;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->room, NULL);
	pthread_cond_init(&p->ready, NULL);
	int nroots = plan_nroots(plan);
	p->walk = calloc((size_t)(nroots > 0 ? nroots : 1), sizeof *p->walk);
	p->leaf = malloc(PW_BATCH * sizeof *p->leaf);
	p->pos = malloc(PW_BATCH * sizeof *p->pos);
	p->batch = malloc(PW_BATCH * sizeof *p->batch);
	int rc = p->walk && p->leaf && p->pos && p->batch ? 0 : SEL_ENOMEM;
	for (int r = 0; r < nroots && rc == 0; r++, p->nroots++)
		rc = prov_open(&p->walk[r], plan_root_sfen(plan, r), r);
	if (rc == 0 && nroots == 0) p->done = true;
	if (rc == 0 && pthread_create(&p->thread, NULL, pw_main, p) != 0) rc = SEL_ENOMEM;
	p->started = rc == 0;
	if (rc < 0) {
		co_pwalk_stop(p);
		return rc;
	}
	*out = p;
	return 0;
}

int co_pwalk_take(CoPwalk *p, PwLeaf *out, int max, double wait_ms)
{
	pthread_mutex_lock(&p->mu);
	if (p->n == 0 && !p->done && !p->err && !p->quit && wait_ms > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		long ns = ts.tv_nsec + (long)(wait_ms * 1e6);
		ts.tv_sec += ns / 1000000000L;
		ts.tv_nsec = ns % 1000000000L;
		while (p->n == 0 && !p->done && !p->err &&
		       pthread_cond_timedwait(&p->ready, &p->mu, &ts) == 0)
			;
	}
	int n = p->n < max ? p->n : max;
	for (int i = 0; i < n; i++) out[i] = p->ring[(p->head + i) % PW_RING];
	p->head = (p->head + n) % PW_RING;
	p->n -= n;
	int rc = n > 0 ? n : p->err;
	if (n > 0) pthread_cond_signal(&p->room);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int co_pwalk_ready(CoPwalk *p)
{
	if (!p) return -1;
	pthread_mutex_lock(&p->mu);
	int n = p->quit ? 0 : p->n;
	pthread_mutex_unlock(&p->mu);
	return n;
}

int co_pwalk_pause(CoPwalk *p, bool paused)
{
	if (!p) return 0;
	pthread_mutex_lock(&p->mu);
	p->paused = paused;
	/* Resumed: what the ring kept was walked before the pause, on values
	 * the results since may have changed. */
	if (!paused) p->head = p->n = 0;
	bool over = p->done || p->err || p->quit;
	pthread_cond_broadcast(&p->room);
	pthread_mutex_unlock(&p->mu);
	return over ? -1 : 0;
}

/* The thread stops soon (not waited for). */
static void pw_quit(CoPwalk *p)
{
	if (!p) return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->room);
	pthread_mutex_unlock(&p->mu);
}

void co_pwalk_stop(CoPwalk *p)
{
	if (!p) return;
	pw_quit(p);
	if (p->started) pthread_join(p->thread, NULL);
	for (int r = 0; r < p->nroots; r++) prov_free(p->walk[r]);
	bookdb_prefetch_close(p->pf);
	pthread_cond_destroy(&p->room);
	pthread_cond_destroy(&p->ready);
	pthread_mutex_destroy(&p->mu);
	free(p->walk);
	free(p->leaf);
	free(p->pos);
	free(p->batch);
	free(p);
}
