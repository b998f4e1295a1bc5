/*
 * bookdb/scan.c — a pass over the positions reads ahead on threads of its own
 * (bookdb_priv.h, "Passes read ahead").
 *
 * A book grown by many small writes no longer has its leaf pages in key order
 * in the file: every write copies a leaf to wherever LMDB finds room. A pass
 * in key order then jumps about the file, and waits for each page alone
 * (measured at 10^8 positions in 2.4 GB: 3.5 M records a minute, the kernel's
 * read-around 8 MiB at every jump without MDB_NORDAHEAD; docs/bookdb.md). Its
 * order is still known: the keys are hashes, spread evenly, so the key space
 * cut in equal chunks cuts the book in nearly equal parts. Helper threads walk
 * the chunks just ahead of the pass, each with a cursor in a read transaction
 * of its own, and so bring their pages in, many at once; the pass then finds
 * them in memory. A helper that meets page after page in the file (a book in
 * key order) asks the kernel for a window ahead that doubles as long as that
 * goes on, so that such a book is still read in large requests.
 *
 * The helpers read whatever snapshot is newest when they take a chunk: a page
 * written since the pass's own snapshot is one the pass reads itself. They
 * change nothing, and hold a snapshot only while they walk one chunk.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bookdb/bookdb_priv.h"
#include "shogi/memuse.h"

#define SCAN_THREADS 16
#define CHUNK_PAGES 64           /* leaf pages a chunk holds, about */
#define WINDOW_MAX (64u << 20)   /* how far ahead of the pass the helpers read, at most */
#define WILLNEED_MIN (16u << 10) /* the first window of a run of pages in order */
#define WILLNEED_MAX (1u << 20)  /* the largest */

struct BdbScanAhead {
	MDB_env *env;
	MDB_dbi dbi;
	unsigned bits;            /* chunks: the top bits of a key */
	uint32_t nchunks, window; /* chunks; how many ahead of the pass's */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t next;           /* the next chunk a helper takes (under mu) */
	atomic_uint_fast32_t at; /* the pass's chunk */
	atomic_bool quit;
	atomic_uint_fast64_t chunks;
	int nthreads;
	pthread_t tid[SCAN_THREADS];
};

static uint32_t chunk_of(const BdbScanAhead *sa, const void *key)
{
	const uint8_t *b = key;
	uint32_t top = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return top >> (32 - sa->bits);
}

static void ahead_meet(BdbAhead *a, const void *p)
{
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
	if (page == a->last) return;
	bool in_order = page == a->last + 4096;
	a->last = page;
	if (!in_order) {
		a->win = 0;
		return;
	}
	if (page < a->asked_to) return;
	a->win = a->win ? (a->win * 2 > WILLNEED_MAX ? WILLNEED_MAX : a->win * 2) : WILLNEED_MIN;
	(void)madvise((void *)page, a->win, MADV_WILLNEED);
	a->asked_to = page + a->win;
}

/* Brings in the pages of every record of chunk c. */
static void walk_chunk(BdbScanAhead *sa, MDB_cursor *cur, uint32_t c, BdbAhead *a)
{
	uint8_t from[4];
	uint32_t top = c << (32 - sa->bits);
	for (int i = 0; i < 4; i++) from[i] = (uint8_t)(top >> (24 - 8 * i));
	MDB_val k = {.mv_size = sizeof from, .mv_data = from}, v;
	int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= 4 && chunk_of(sa, k.mv_data) == c &&
	       !atomic_load_explicit(&sa->quit, memory_order_relaxed)) {
		ahead_meet(a, k.mv_data);
		/* A record longer than a page lies on pages of its own. */
		volatile const uint8_t *val = v.mv_data;
		for (size_t off = 0; off < v.mv_size; off += 4096) (void)val[off];
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
}

static void *helper_main(void *arg)
{
	BdbScanAhead *sa = arg;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	BdbAhead a = {0};
	for (;;) {
		pthread_mutex_lock(&sa->mu);
		uint32_t c;
		for (;;) {
			uint32_t at = (uint32_t)atomic_load(&sa->at);
			if (sa->next < at) sa->next = at + 1; /* the pass has gone past */
			if (atomic_load(&sa->quit) || sa->next >= sa->nchunks) {
				c = UINT32_MAX;
				break;
			}
			if (sa->next <= at + sa->window) {
				c = sa->next++;
				break;
			}
			pthread_cond_wait(&sa->cv, &sa->mu);
		}
		pthread_mutex_unlock(&sa->mu);
		if (c == UINT32_MAX) break;
		int rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(sa->env, NULL, MDB_RDONLY, &txn);
		if (rc == 0)
			rc = cur ? mdb_cursor_renew(txn, cur) : mdb_cursor_open(txn, sa->dbi, &cur);
		if (rc) break;
		walk_chunk(sa, cur, c, &a);
		mdb_txn_reset(txn);
		atomic_fetch_add(&sa->chunks, 1);
	}
	if (cur) mdb_cursor_close(cur);
	if (txn) mdb_txn_abort(txn);
	return NULL;
}

static void scan_stop(BdbScanAhead *sa);

/* The threads for a pass whose first key is from; NULL when the database is
 * too small to cut or no thread starts. */
static BdbScanAhead *scan_start(MDB_txn *txn, MDB_dbi dbi, const void *from)
{
	MDB_stat ms;
	if (mdb_stat(txn, dbi, &ms) || ms.ms_leaf_pages < 2 * CHUNK_PAGES) return NULL;
	BdbScanAhead *sa = calloc(1, sizeof *sa);
	if (!sa) return NULL;
	sa->env = mdb_txn_env(txn);
	sa->dbi = dbi;
	sa->bits = 8;
	while (sa->bits < 24 && ((size_t)1 << sa->bits) * CHUNK_PAGES < ms.ms_leaf_pages)
		sa->bits++;
	sa->nchunks = (uint32_t)1 << sa->bits;
	uint64_t chunk_bytes = (uint64_t)ms.ms_psize * CHUNK_PAGES;
	/* What they read ahead must stay in the page cache until the pass
	 * comes to it, beside what the command holds (minimax's arrays in
	 * files): a 64th of the memory the process may have. With 64 MiB in a
	 * 240 MB group, minimax --full of 10^7 positions wrote its book a
	 * third slower, the pages read ahead pushed out before their turn. */
	uint64_t ram = memuse_ram(), window = ram && ram / 64 < WINDOW_MAX ? ram / 64 : WINDOW_MAX;
	sa->window = (uint32_t)(window / chunk_bytes);
	if (sa->window < 2 * SCAN_THREADS) sa->window = 2 * SCAN_THREADS;
	uint32_t at = chunk_of(sa, from);
	sa->next = at;
	atomic_init(&sa->at, at);
	atomic_init(&sa->quit, false);
	atomic_init(&sa->chunks, 0);
	pthread_mutex_init(&sa->mu, NULL);
	pthread_cond_init(&sa->cv, NULL);
	for (int i = 0; i < SCAN_THREADS; i++) {
		if (pthread_create(&sa->tid[sa->nthreads], NULL, helper_main, sa) != 0) break;
		sa->nthreads++;
	}
	if (sa->nthreads == 0) {
		scan_stop(sa);
		return NULL;
	}
	return sa;
}

/* Tells the threads the pass's key. */
static void scan_at(BdbScanAhead *sa, const void *key)
{
	uint32_t c = chunk_of(sa, key);
	if (c == (uint32_t)atomic_load_explicit(&sa->at, memory_order_relaxed)) return;
	atomic_store(&sa->at, c);
	pthread_mutex_lock(&sa->mu);
	pthread_cond_broadcast(&sa->cv);
	pthread_mutex_unlock(&sa->mu);
}

static void scan_stop(BdbScanAhead *sa)
{
	atomic_store(&sa->quit, true);
	pthread_mutex_lock(&sa->mu);
	pthread_cond_broadcast(&sa->cv);
	pthread_mutex_unlock(&sa->mu);
	for (int i = 0; i < sa->nthreads; i++) pthread_join(sa->tid[i], NULL);
	pthread_cond_destroy(&sa->cv);
	pthread_mutex_destroy(&sa->mu);
	free(sa);
}

void bdb_pass_ahead_init(BdbPassAhead *p, MDB_txn *txn, MDB_dbi dbi, bool pos)
{
	unsigned flags = 0;
	*p = (BdbPassAhead){.txn = txn,
	                    .dbi = dbi,
	                    .pos = pos,
	                    .on = !mdb_env_get_flags(mdb_txn_env(txn), &flags) &&
	                          (flags & MDB_NORDAHEAD)};
}

void bdb_pass_ahead_step(BdbPassAhead *p, const MDB_val *key)
{
	if (!p->on) return;
	bool hashed = p->pos && key->mv_size >= 4;
	if (!p->started) {
		p->started = true;
		if (hashed) p->sa = scan_start(p->txn, p->dbi, key->mv_data);
	}
	if (p->sa && hashed)
		scan_at(p->sa, key->mv_data);
	else if (!p->sa)
		ahead_meet(&p->window, key->mv_data);
}

uint64_t bdb_pass_ahead_chunks(const BdbPassAhead *p)
{
	return p->sa ? (uint64_t)atomic_load(&p->sa->chunks) : 0;
}

void bdb_pass_ahead_end(BdbPassAhead *p)
{
	if (p->sa) scan_stop(p->sa);
	p->sa = NULL;
}
