/* bookdb/prefetch.c — records read ahead by threads (bookdb/prefetch.h). */
#include "bookdb/prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* Keys waiting at most: a few searches' worth of children. */
#define STACK_KEYS 1024
#define MAX_THREADS 64

struct BookPrefetch {
	BookDB *db;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* A ring: the keys waiting are ring[(bottom + j) % STACK_KEYS] for
	 * j < n, the top (read next) at j = n - 1. */
	Key ring[STACK_KEYS];
	uint8_t depth[STACK_KEYS]; /* of each key (bookdb_prefetch_keys_deep) */
	size_t bottom, n;
	BookPrefetchThen then;
	void *then_ctx;
	bool quit;
	int nthreads;
	pthread_t tid[MAX_THREADS];
	BookPrefetchStats st;
};

/* Brings in the pages of key's record (or of the place it would go) in t:
 * 1 with *val, *len when it is there, else 0. */
static int touch(const uint8_t **val, size_t *len, BookTxn *t, Key key)
{
	if (bookdb_get_raw(val, len, t, key) != 0 || !*len) return 0;
	/* A record longer than a page lies on pages of its own, which the
	 * lookup does not read: one byte of each. */
	const uint8_t *v = *val;
	volatile uint8_t sink = v[0];
	for (size_t off = 4096 - ((uintptr_t)v & 4095); off < *len; off += 4096) sink = v[off];
	sink = v[*len - 1];
	(void)sink;
	return 1;
}

/* Brings in the pages of key's record; a record found with depth above 0
 * goes to the then function. */
static void read_one(BookPrefetch *pf, Key key, int depth)
{
	BookTxn *t;
	if (bookdb_txn_begin(&t, pf->db, false) < 0) return;
	const uint8_t *val;
	size_t len;
	if (touch(&val, &len, t, key) && depth > 0 && pf->then)
		pf->then(pf->then_ctx, pf, key, val, len, depth);
	bookdb_txn_abort(t);
}

void bookdb_prefetch_now(BookDB *db, const Key *keys, size_t n)
{
	BookTxn *t;
	if (!n || bookdb_txn_begin(&t, db, false) < 0) return;
	const uint8_t *val;
	size_t len;
	for (size_t i = 0; i < n; i++) (void)touch(&val, &len, t, keys[i]);
	bookdb_txn_abort(t);
}

static void *worker(void *arg)
{
	BookPrefetch *pf = arg;
	pthread_mutex_lock(&pf->mu);
	for (;;) {
		while (!pf->n && !pf->quit) pthread_cond_wait(&pf->cv, &pf->mu);
		if (pf->quit) break;
		size_t at = (pf->bottom + --pf->n) % STACK_KEYS;
		Key k = pf->ring[at];
		int depth = pf->depth[at];
		pthread_mutex_unlock(&pf->mu);
		read_one(pf, k, depth);
		pthread_mutex_lock(&pf->mu);
		/* Counted once read, its then function's keys handed in: read +
		 * dropped == asked means every read is over. */
		pf->st.read++;
	}
	pthread_mutex_unlock(&pf->mu);
	return NULL;
}

int bookdb_prefetch_open(BookPrefetch **out, BookDB *db, int threads)
{
	*out = NULL;
	if (threads < 1) threads = 1;
	if (threads > MAX_THREADS) threads = MAX_THREADS;
	BookPrefetch *pf = calloc(1, sizeof *pf);
	if (!pf) return BOOKDB_ENOMEM;
	pf->db = db;
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->cv, NULL);
	/* Small stacks: a lookup needs little. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&pf->tid[i], &attr, worker, pf) != 0) break;
		/* Named apart from the thread that started it (by this thread, so
		 * that bookdb_prefetch_name's comes after): a profile tells the
		 * page faults they take for the search's from the search's own. */
		(void)pthread_setname_np(pf->tid[i], "book-ahead");
		pf->nthreads++;
	}
	pthread_attr_destroy(&attr);
	if (!pf->nthreads) {
		bookdb_prefetch_close(pf);
		return BOOKDB_EIO;
	}
	*out = pf;
	return 0;
}

void bookdb_prefetch_then(BookPrefetch *pf, BookPrefetchThen fn, void *ctx)
{
	pthread_mutex_lock(&pf->mu);
	pf->then = fn;
	pf->then_ctx = ctx;
	pthread_mutex_unlock(&pf->mu);
}

void bookdb_prefetch_name(BookPrefetch *pf, const char *name)
{
	for (int i = 0; i < pf->nthreads; i++) (void)pthread_setname_np(pf->tid[i], name);
}

void bookdb_prefetch_keys(BookPrefetch *pf, const Key *keys, size_t n)
{
	bookdb_prefetch_keys_deep(pf, keys, n, 0);
}

void bookdb_prefetch_keys_deep(BookPrefetch *pf, const Key *keys, size_t n, int depth)
{
	if (!n) return;
	uint8_t d = (uint8_t)(depth < 0 ? 0 : depth > 255 ? 255 : depth);
	pthread_mutex_lock(&pf->mu);
	pf->st.asked += n;
	/* keys[0] last: on top. */
	for (size_t j = n; j-- > 0;) {
		if (pf->n == STACK_KEYS) {
			pf->bottom = (pf->bottom + 1) % STACK_KEYS;
			pf->n--;
			pf->st.dropped++;
		}
		size_t at = (pf->bottom + pf->n++) % STACK_KEYS;
		pf->ring[at] = keys[j];
		pf->depth[at] = d;
	}
	if (n == 1)
		pthread_cond_signal(&pf->cv);
	else
		pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
}

void bookdb_prefetch_stats(BookPrefetchStats *out, BookPrefetch *pf)
{
	pthread_mutex_lock(&pf->mu);
	*out = pf->st;
	pthread_mutex_unlock(&pf->mu);
}

void bookdb_prefetch_close(BookPrefetch *pf)
{
	if (!pf) return;
	pthread_mutex_lock(&pf->mu);
	pf->quit = true;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	for (int i = 0; i < pf->nthreads; i++) pthread_join(pf->tid[i], NULL);
	pthread_mutex_destroy(&pf->mu);
	pthread_cond_destroy(&pf->cv);
	free(pf);
}
