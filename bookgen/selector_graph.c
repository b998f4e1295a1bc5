/*
 * bookgen/selector_graph.c — the selector's graph store (selector_priv.h).
 *
 * Memory: per node 40 bytes (key, edge block or record bytes, bound, flags),
 * per built edge 12 bytes, one parent link (8 bytes) per edge, and the key
 * map (shogi/keymap.h: 8 bytes a slot, at most half full). Edges are built
 * when a node is first searched, not at load. A book position's record is
 * read from LMDB's mapped pages when its node is expanded, not copied at
 * load; only records not (yet) readable there are held, each until its node
 * is expanded: results (sel_add_result), and in lazy mode positions met
 * before they are searched.
 */
#include "bookgen/selector_priv.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bookdb/query.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/memuse.h"
#include "shogi/notation.h"

const char *sel_strerror(int code)
{
	switch (code) {
	case SEL_OK:
		return "success";
	case SEL_ENOMEM:
		return "out of memory";
	case SEL_EINVAL:
		return "invalid argument";
	case SEL_ECORRUPT:
		return "corrupt book record";
	case SEL_EBOOK:
		return "book read error";
	case SEL_EFULL:
		return "selector graph too large";
	case SEL_ESTOPPED:
		return "selection stopped";
	case SEL_ENOSNAP:
		return "no selector snapshot";
	case SEL_ESTALE:
		return "selector snapshot of another state of the book";
	case SEL_ESNAP:
		return "damaged selector snapshot";
	case SEL_EIO:
		return "selector snapshot I/O error";
	}
	return "unknown selector error";
}

/* The nodes' keys as the key map reads them. */
static inline const void *node_keys(const Selector *s)
{
	return (const char *)s->nodes + offsetof(SelNode, key);
}

int64_t sel_g_find_node(const Selector *s, Key k)
{
	uint32_t i = keymap_find(&s->map, node_keys(s), k);
	return i == KEYMAP_NONE ? -1 : (int64_t)i;
}

/* Reserves room for n nodes in all. */
int sel_g_reserve_nodes(Selector *s, size_t n)
{
	if (n >= INT32_MAX) return SEL_EFULL;
	int r = (bigmem_grow((void **)&s->nodes, &s->capnodes, n, sizeof *s->nodes, 64) ? SEL_ENOMEM
	                                                                                : 0);
	if (r) return r;
	return keymap_reserve(&s->map, node_keys(s), n) ? SEL_ENOMEM : 0;
}

static int64_t create_node(Selector *s, Key k);

/* The read transaction of the running call, or a new one in *own. */
static BookTxn *read_txn(const Selector *s, BookTxn **own)
{
	*own = NULL;
	if (s->txn) return s->txn;
	return bookdb_txn_begin(own, s->db, false) < 0 ? NULL : *own;
}

/*
 * Lazy mode: reads k's record and makes it a node (a thought position's
 * bytes kept until it is expanded). -1 when the book does not hold k
 * (nothing is created: the caller decides), another negative value on an
 * error.
 */
static int64_t fetch(Selector *s, Key k)
{
	BookTxn *own, *txn = read_txn(s, &own);
	if (!txn) return SEL_EBOOK;
	const uint8_t *val;
	size_t len;
	int rc = bookdb_get_raw(&val, &len, txn, k);
	int64_t i = -1;
	if (rc == 0) {
		/* A length no record has: a damaged leaf node (read past it, a SIGBUS). */
		i = len && len <= BOOKDB_RECORD_MAX ? create_node(s, k) : SEL_ECORRUPT;
		if (i >= 0 && (val[0] & BOOKDB_REC_THOUGHT)) {
			int r = sel_g_add_raw(s, (uint32_t)i, val, len);
			if (r) i = r;
		}
	} else if (rc != BOOKDB_ENOTFOUND) {
		i = SEL_EBOOK;
	} else {
		s->st.fetch_misses++;
	}
	bookdb_txn_abort(own);
	return i;
}

/*
 * The key filter: a blocked Bloom filter, one 64-byte block a key (so a
 * lookup waits for one cache line), chosen by key.hi; four bits of the block
 * from key.lo (the two halves of a Zobrist key are independent). 16 to 32
 * bits a key: an absent key passes with probability about 0.2-1 %.
 */
#define BLOOM_BLOCK_WORDS 8

static inline const uint64_t *bloom_block(const uint64_t *bloom, uint64_t blocks, Key k)
{
	return bloom + (k.hi & blocks) * BLOOM_BLOCK_WORDS;
}

static inline uint64_t bloom_bits(Key k, int j)
{
	return (k.lo >> (9 * j)) & 511;
}

/* Words stored whole (a relaxed atomic store: one writer at a time, the
 * selector's thread, but sel_key_filter_maybe may read them on another). */
static inline void bloom_add(uint64_t *bloom, uint64_t blocks, Key k)
{
	uint64_t *b = bloom + (k.hi & blocks) * BLOOM_BLOCK_WORDS;
	for (int j = 0; j < 4; j++) {
		uint64_t x = bloom_bits(k, j), *w = &b[x >> 6], bit = 1ULL << (x & 63);
		__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | bit, __ATOMIC_RELAXED);
	}
}

/* Words loaded one at a time (relaxed: another thread may read while the
 * selector's adds). */
bool sel_key_filter_maybe(const SelKeyFilter *f, Key k)
{
	const uint64_t *b = bloom_block(f->words, f->blocks, k);
	for (int j = 0; j < 4; j++) {
		uint64_t x = bloom_bits(k, j);
		if (!(__atomic_load_n(&b[x >> 6], __ATOMIC_RELAXED) >> (x & 63) & 1)) return false;
	}
	return true;
}

static bool bloom_maybe(const Selector *s, Key k)
{
	return sel_key_filter_maybe(&(SelKeyFilter){s->bloom, s->bloom_blocks}, k);
}

bool sel_key_filter(const Selector *s, SelKeyFilter *f)
{
	bool ok = s->lazy && s->bloom;
	*f = ok ? (SelKeyFilter){s->bloom, s->bloom_blocks} : (SelKeyFilter){NULL, 0};
	return ok;
}

void sel_free_retired(Selector *s)
{
	for (size_t i = 0; i < s->nretired; i++) free(s->retired[i]);
	s->nretired = 0;
	s->retired_bytes = 0;
}

size_t sel_filter_bytes(uint64_t count)
{
	uint64_t blocks = 1;
	while (blocks * 512 < count * 16) blocks *= 2;
	return (size_t)blocks * 64;
}

/* Whether the filter's thread has made the filter (s->bloom and its sizes
 * written before, by a build or a snapshot's read), joined or not. */
static inline bool bloom_made(const Selector *s)
{
	return atomic_load_explicit(&((Selector *)s)->bloom_ready, memory_order_acquire);
}

/* The filter a lookup may ask (false: none yet): the one in use, else one
 * the thread has built from the book and not yet handed over (the keys the
 * book gained since its read began are nodes of the graph, which a lookup
 * asks first). A snapshot's filter (sel_restore) is used once joined only:
 * until then it lacks the keys the book gained since the snapshot
 * (sel_g_book_changed). */
static inline bool usable_filter(const Selector *s, SelKeyFilter *f)
{
	if (s->bloom)
		*f = (SelKeyFilter){s->bloom, s->bloom_blocks};
	else if (s->lazy && !s->bloom_src_used && bloom_made(s))
		*f = (SelKeyFilter){s->made.words, s->made.blocks};
	else
		return false;
	return true;
}

/* Lazy mode, k in no node: the book's record of it, made a node (fetch),
 * unless the filter rules k out (-1). */
static int64_t lookup_book(Selector *s, Key k)
{
	SelKeyFilter f;
	if (usable_filter(s, &f) && !sel_key_filter_maybe(&f, k)) {
		s->st.filtered++;
		return -1;
	}
	s->st.fetches++;
	return fetch(s, k);
}

/* k's node if the graph (or, lazily, the book) has it; -1 if not. The node
 * map first (its slot is mostly prefetched), then the filter: most keys
 * asked about (children of legal moves) are in neither, and cost no more. */
static int64_t lookup(Selector *s, Key k)
{
	int64_t i = sel_g_find_node(s, k);
	if (i >= 0 || !s->lazy) return i;
	return lookup_book(s, k);
}

/* Memory for the filter: 2 MB pages when the system gives them (a lookup
 * then seldom misses the TLB as well as the cache). */
uint64_t *sel_g_bloom_alloc(size_t bytes)
{
	void *p = NULL;
	size_t align = bytes >= (2u << 20) ? (2u << 20) : 64;
	if (posix_memalign(&p, align, bytes)) return NULL;
	if (align > 64) madvise(p, bytes, MADV_HUGEPAGE);
	memset(p, 0, bytes);
	return p;
}

/* Filling the filter: each key's block is prefetched AHEAD keys before its
 * bits are set, so the source's reads and the filter's cache misses overlap
 * (a filter larger than the caches otherwise costs more than a pass over
 * LMDB). */
enum { AHEAD = 16 };
typedef struct {
	uint64_t *bloom, blocks;
	Key ring[AHEAD];
	size_t n;
} BloomFill;

static void fill_add(BloomFill *f, Key k)
{
	__builtin_prefetch(bloom_block(f->bloom, f->blocks, k), 1);
	if (f->n >= AHEAD) bloom_add(f->bloom, f->blocks, f->ring[f->n % AHEAD]);
	f->ring[f->n++ % AHEAD] = k;
}

static void fill_end(BloomFill *f)
{
	for (size_t j = f->n > AHEAD ? f->n - AHEAD : 0; j < f->n; j++)
		bloom_add(f->bloom, f->blocks, f->ring[j % AHEAD]);
	f->n = 0;
}

static void fill_keys(void *ctx, const Key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) fill_add(ctx, keys[i]);
}

static void *bloom_build(void *arg)
{
	Selector *s = arg;
	pthread_setname_np(pthread_self(), "sel-filter");
	double t0 = clock_ms_f();
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	uint64_t count = 0;
	BloomFill f = {0};
	if (bookdb_txn_begin(&txn, s->db, false) < 0) goto out;
	if (bookdb_count(&count, txn, BOOKDB_POS) < 0) goto out;
	size_t bytes = sel_filter_bytes(count);
	uint64_t blocks = bytes / 64;
	if (!(f.bloom = sel_g_bloom_alloc(bytes))) goto out;
	f.blocks = blocks - 1;
	/* The keys minimax keeps, when it vouches for them all: a read of a
	 * sixteenth of the bytes a pass over the book reads. */
	if (book_minimax_hook_keys(&s->keys_hook, s->db, txn, fill_keys, &f) == 0) {
		fill_end(&f);
		s->made.kept = true;
	} else {
		fill_end(&f);
		Key k;
		const uint8_t *val;
		size_t len;
		int rc;
		if (bookdb_iter_open(&it, txn) < 0) goto out;
		while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
			if (atomic_load_explicit(&s->bloom_cancel, memory_order_relaxed)) break;
			fill_add(&f, k);
		}
		fill_end(&f);
		if (rc != 0) goto out;
	}
	s->made.words = f.bloom;
	s->made.bytes = bytes;
	s->made.blocks = blocks - 1;
	s->made.keys = count;
	s->made.ms = clock_ms_f() - t0;
	f.bloom = NULL;
	atomic_store_explicit(&s->bloom_ready, 1, memory_order_release);
out:
	free(f.bloom);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	atomic_store_explicit(&s->bloom_finished, 1, memory_order_release);
	return NULL;
}

/* sel_restore's filter: its section of the snapshot read on this thread,
 * while the restored selector is already in use; a section that cannot be
 * read or is damaged is built from the book instead. */
static void *bloom_load(void *arg)
{
	Selector *s = arg;
	pthread_setname_np(pthread_self(), "sel-filter");
	double t0 = clock_ms_f();
	uint64_t *b = sel_g_bloom_alloc((size_t)s->bloom_src.len);
	int rc = b ? snap_section_read(&s->bloom_src, b) : SEL_ENOMEM;
	snap_section_close(&s->bloom_src);
	if (rc) {
		free(b);
		return bloom_build(s);
	}
	s->made.words = b;
	s->made.bytes = (size_t)s->bloom_src.len;
	s->made.blocks = s->bloom_src_blocks;
	s->made.keys = s->filter_keys; /* sel_restore: the book's count then */
	s->made.kept = s->bloom_src_kept;
	s->made.ms = s->bloom_src_ms + (clock_ms_f() - t0);
	atomic_store_explicit(&s->bloom_ready, 1, memory_order_release);
	atomic_store_explicit(&s->bloom_finished, 1, memory_order_release);
	return NULL;
}

int sel_g_resolve_slow(Selector *s, uint32_t i)
{
	s->st.ahead_used += (s->nodes[i].flags & NF_AHEAD) != 0;
	s->nodes[i].flags &= (uint8_t) ~(NF_UNRESOLVED | NF_AHEAD);
	s->st.fetches++;
	BookTxn *own, *txn = read_txn(s, &own);
	if (!txn) return SEL_EBOOK;
	const uint8_t *val;
	size_t len;
	int rc = bookdb_get_raw(&val, &len, txn, s->nodes[i].key), r = 0;
	if (rc == 0 && !len)
		r = SEL_ECORRUPT;
	else if (rc == 0 && (val[0] & BOOKDB_REC_THOUGHT))
		r = sel_g_add_raw(s, i, val, len);
	else if (rc < 0 && rc != BOOKDB_ENOTFOUND)
		r = SEL_EBOOK;
	bookdb_txn_abort(own);
	return r;
}

/* Threads reading ahead: enough for the disk to have several reads in flight
 * (they wait on it, not on the cores). */
#define AHEAD_THREADS 8

void sel_read_ahead(Selector *s, const Key *keys, size_t n)
{
	if (!s || !n || !s->db || s->ahead_failed) return;
	if (!s->ahead) {
		if (bookdb_prefetch_open(&s->ahead, s->db, AHEAD_THREADS) < 0) {
			s->ahead_failed = true;
			return;
		}
		bookdb_prefetch_name(s->ahead, "sel-ahead");
	}
	bookdb_prefetch_keys(s->ahead, keys, n);
}

void sel_g_siblings_ahead(Selector *s, uint32_t parent, uint32_t child)
{
	const SelNode *p = &s->nodes[parent];
	if (!(p->flags & NF_EXPANDED)) return;
	Key keys[64];
	size_t n = 0;
	for (uint32_t k = 0; k < p->u.e.n && n < 64; k++) {
		uint32_t c = (uint32_t)s->edges[p->u.e.off + k].child;
		SelNode *cn = &s->nodes[c];
		if (c == child || (cn->flags & (NF_UNRESOLVED | NF_AHEAD)) != NF_UNRESOLVED)
			continue;
		cn->flags |= NF_AHEAD;
		keys[n++] = cn->key;
	}
	sel_read_ahead(s, keys, n);
}

/*
 * A stored move's child: its node, created if absent (a placeholder when
 * neither the graph nor the book holds k). In lazy mode with the filter, a
 * key it cannot rule out becomes an NF_UNRESOLVED node: the book is asked
 * only when a search looks at the child.
 */
static int64_t child_node(Selector *s, Key k)
{
	int64_t i = sel_g_find_node(s, k);
	if (i >= 0) return i;
	if (!s->lazy || !s->bloom) {
		i = s->lazy ? lookup_book(s, k) : -1;
		return i != -1 ? i : create_node(s, k);
	}
	if (!bloom_maybe(s, k)) {
		s->st.filtered++;
		return create_node(s, k);
	}
	i = create_node(s, k);
	if (i >= 0) s->nodes[i].flags |= NF_UNRESOLVED;
	return i;
}

/* Index of k's node, created (unthought, no record) if absent. */
int64_t sel_g_find_or_create(Selector *s, Key k)
{
	int64_t i = lookup(s, k);
	if (i != -1) return i;
	return create_node(s, k);
}

static int64_t create_node(Selector *s, Key k)
{
	int r = sel_g_reserve_nodes(s, s->nnodes + 1);
	if (r) return r;
	SelNode *n = &s->nodes[s->nnodes];
	memset(n, 0, sizeof *n);
	n->key = k;
	/* Room reserved above, and k is not in the map: this only inserts. */
	if (keymap_find_or_insert(&s->map, node_keys(s), (uint32_t)s->nnodes) < 0)
		return SEL_ENOMEM;
	if (s->gone && !s->gone_full && sel_g_was_dropped(s, k)) s->st.remade++;
	s->st.nodes = ++s->nnodes;
	return (int64_t)(s->nnodes - 1);
}

/* Forgets node i's held record bytes, if any. */
static void drop_raw(Selector *s, SelNode *n)
{
	if (!(n->flags & NF_RAW)) return;
	uint32_t len;
	memcpy(&len, n->u.raw, sizeof len);
	s->raw_bytes -= len;
	free(n->u.raw);
	n->u.raw = NULL;
	n->flags &= (uint8_t)~NF_RAW;
}

int sel_g_add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len)
{
	if (len > UINT32_MAX - sizeof(uint32_t)) return SEL_EINVAL;
	uint8_t *p = malloc(sizeof(uint32_t) + len);
	if (!p) return SEL_ENOMEM;
	uint32_t l = (uint32_t)len;
	memcpy(p, &l, sizeof l);
	memcpy(p + sizeof l, val, len);
	SelNode *n = &s->nodes[i];
	drop_raw(s, n);
	/* A new version of an expanded node: its edges are built again. */
	n->flags = (uint8_t)((n->flags & ~(NF_EXPANDED | NF_UNRESOLVED)) | NF_RAW);
	n->u.raw = p;
	s->raw_bytes += len;
	if (!(n->flags & NF_THOUGHT)) s->st.thought++;
	n->flags |= NF_THOUGHT;
	return 0;
}

void sel_g_unthink(Selector *s, uint32_t i)
{
	SelNode *n = &s->nodes[i];
	if (!(n->flags & NF_THOUGHT)) return;
	drop_raw(s, n);
	/* Its edge block, if any, is left unused: a leaf has none. */
	n->flags &= (uint8_t) ~(NF_THOUGHT | NF_EXPANDED);
	n->u.e.off = 0;
	n->u.e.n = 0;
	n->u.e.best = NO_BEST;
	n->bound = B_NONE;
	sel_pb_drop(s, i);
	s->st.thought--;
}

int sel_new(Selector **out, const SelOptions *opt)
{
	*out = NULL;
	Selector *s = calloc(1, sizeof *s);
	if (!s) return SEL_ENOMEM;
	s->opt.kif_bonus = SEL_KIF_BONUS_DEFAULT;
	if (opt) s->opt = *opt;
	s->bloom_src.fd = -1;
	keymap_init(&s->map, sizeof(SelNode));
	keymap_init_set(&s->defer_map, true);
	s->rec = malloc(sizeof *s->rec);
	s->pos = malloc(sizeof *s->pos);
	s->enc = malloc(BOOKDB_RECORD_MAX);
	if (!s->rec || !s->pos || !s->enc || sel_g_reserve_nodes(s, 1024)) {
		sel_free(s);
		return SEL_ENOMEM;
	}
	*out = s;
	return 0;
}

/* Lazy mode: the filter thread finished (the first search waits for it; a
 * regrow's, the one in use meanwhile). Its filter becomes the one in use,
 * with the keys the book gained meanwhile (sel_g_filter_gained); one it
 * replaces is retired (sel_key_filter's readers). */
static void bloom_join(Selector *s)
{
	if (!s->bloom_started || s->bloom_joined) return;
	pthread_join(s->bloom_thread, NULL);
	s->bloom_joined = true;
	if (s->made.words && s->bloom) {
		uint64_t **r = realloc(s->retired, (s->nretired + 1) * sizeof *r);
		if (!r) { /* kept as it is: the new one is dropped */
			free(s->made.words);
			s->made.words = NULL;
		} else {
			s->retired = r;
			s->retired[s->nretired++] = s->bloom;
			s->retired_bytes += s->bloom_bytes;
			s->regrows++;
		}
	}
	if (s->made.words) {
		s->bloom = s->made.words;
		s->bloom_bytes = s->made.bytes;
		s->bloom_blocks = s->made.blocks;
		s->filter_keys = s->made.keys;
		s->filter_kept = s->made.kept;
		s->filter_ms = s->made.ms;
		s->made.words = NULL;
		for (size_t i = 0; i < s->nlater; i++)
			bloom_add(s->bloom, s->bloom_blocks, s->bloom_later[i]);
		s->regrow_at = s->bloom_bytes;
	} else if (s->bloom) {
		s->regrow_at *= 2; /* not made: tried again at twice the keys */
	}
	free(s->bloom_later);
	s->bloom_later = NULL;
	s->nlater = s->caplater = 0;
}

int sel_g_filter_gained(Selector *s, Key k)
{
	if (!s->lazy) return 0;
	if (s->bloom) bloom_add(s->bloom, s->bloom_blocks, k);
	/* A filter being made (or read from a snapshot) may have been read
	 * from the book before k was written: it goes in at the join. */
	if (!s->bloom_joined) {
		if (array_grow((void **)&s->bloom_later, &s->caplater, s->nlater + 1,
		               sizeof *s->bloom_later, 64))
			return SEL_ENOMEM;
		s->bloom_later[s->nlater++] = k;
	}
	return 0;
}

/* A filter in use past 8 bits a key: a new one made from the book beside
 * it (used once made; a search never waits for it). */
static void filter_regrow(Selector *s)
{
	if (!s->bloom || !s->bloom_joined || !s->db || s->filter_keys <= s->regrow_at) return;
	s->bloom_started = s->bloom_joined = false;
	s->bloom_src_used = false;
	atomic_store(&s->bloom_ready, 0);
	atomic_store(&s->bloom_finished, 0);
	atomic_store(&s->bloom_cancel, 0);
	memset(&s->made, 0, sizeof s->made);
	s->bloom_expect = sel_filter_bytes(s->filter_keys);
	sel_start_filter(s);
	if (!s->bloom_started) { /* no thread: tried again at twice the keys */
		s->bloom_joined = true;
		s->regrow_at *= 2;
	}
}

void sel_free(Selector *s)
{
	if (!s) return;
	sel_g_trim_free(s);
	bookdb_prefetch_close(s->ahead);
	atomic_store(&s->bloom_cancel, 1);
	bloom_join(s);
	snap_section_close(&s->bloom_src);
	free(s->bloom_later);
	free(s->bloom);
	free(s->made.words);
	for (size_t i = 0; i < s->nretired; i++) free(s->retired[i]);
	free(s->retired);
	free(s->gone);
	free(s->retro);
	for (size_t i = 0; s->nodes && i < s->nnodes; i++) drop_raw(s, &s->nodes[i]);
	bigmem_free(s->nodes);
	keymap_free(&s->map);
	bigmem_free(s->edges);
	bigmem_free(s->links);
	free(s->roots);
	free(s->stack);
	free(s->pbound);
	bigmem_free(s->pending);
	free(s->rec);
	free(s->pos);
	free(s->enc);
	free(s->defer);
	free(s->defer_bytes);
	keymap_free(&s->defer_map);
	free(s);
}

int sel_load(Selector *s, BookDB *db)
{
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	uint64_t count = 0;
	int r = bookdb_txn_begin(&txn, db, false);
	if (r < 0) return SEL_EBOOK;
	if (bookdb_count(&count, txn, BOOKDB_POS) == 0) {
		r = sel_g_reserve_nodes(s, s->nnodes + (size_t)count + 1024);
		if (r) goto done;
	}
	r = bookdb_iter_open(&it, txn);
	if (r < 0) {
		r = SEL_EBOOK;
		goto done;
	}
	for (;;) {
		Key k;
		const uint8_t *val;
		size_t len;
		int n = bookdb_iter_next(it, &k, &val, &len);
		if (n < 0) {
			r = SEL_EBOOK;
			goto done;
		}
		if (n == 0) break;
		if (len < 1) {
			r = SEL_ECORRUPT;
			goto done;
		}
		int64_t i = sel_g_find_or_create(s, k);
		if (i < 0) {
			r = (int)i;
			goto done;
		}
		/* The record itself is read again when the node is expanded. */
		if ((val[0] & BOOKDB_REC_THOUGHT) && !(s->nodes[i].flags & NF_THOUGHT)) {
			s->nodes[i].flags |= NF_THOUGHT;
			s->st.thought++;
		}
	}
	s->db = db;
	r = 0;
done:
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	return r;
}

/* The budget the node map is sized within: the selector's own
 * (sel_set_memory: the coordinator's and think's), else the process's, else
 * the default one. */
static uint64_t map_budget(const Selector *s)
{
	return s->memory ? s->memory : bigmem_budget() ? bigmem_budget() : memuse_default_budget();
}

void sel_g_fix_map(Selector *s)
{
	uint64_t map = (uint64_t)s->map.cap * sizeof *s->map.slot, most = map_budget(s) / 8;
	s->map_fixed = map < most ? map : most;
}

void sel_set_memory(Selector *s, uint64_t budget)
{
	s->memory = budget;
}

void sel_defer_filter(Selector *s, bool defer)
{
	s->bloom_deferred = defer;
}

void sel_start_filter(Selector *s)
{
	/* Without the filter every selection still works, only slower. */
	if (s->lazy && s->db && !s->bloom_started && !s->bloom_joined &&
	    pthread_create(&s->bloom_thread, NULL, s->bloom_src.fd >= 0 ? bloom_load : bloom_build,
	                   s) == 0)
		s->bloom_started = true;
}

int sel_attach(Selector *s, BookDB *db, const BookMinimaxHook *keys)
{
	s->db = db;
	s->lazy = true;
	if (keys) s->keys_hook = *keys;
	/* The node map sized for the book at once: growing it later rehashes
	 * every node met so far in one go (about 1 s at 8 M nodes), a stall in
	 * the middle of a search. Its slots are touched as nodes come. But at
	 * most an eighth of the budget (16 bytes a node): the selector's own
	 * (sel_set_memory: the coordinator's and think's), else the process's,
	 * else the default one. A map past the process's budget is made
	 * in a file, and a file touched at random in a slot a page, dirty pages
	 * written back to make room for the next, costs minutes (a 256 MB map
	 * for 10 M positions in 240 MB: 1,000 leaves in 330 s, not 2 s). */
	uint64_t count = 0;
	if (sel_g_book_count(db, &count) == 0 && count > 0) {
		s->bloom_expect = sel_filter_bytes(count);
		if (sel_g_reserve_map(s, count, 0)) return SEL_ENOMEM;
	}
	sel_g_fix_map(s);
	if (!s->bloom_deferred) sel_start_filter(s);
	return 0;
}

int sel_g_book_count(BookDB *db, uint64_t *count)
{
	BookTxn *txn = NULL;
	*count = 0;
	int rc = bookdb_txn_begin(&txn, db, false) < 0 || bookdb_count(count, txn, BOOKDB_POS) < 0
	             ? SEL_EBOOK
	             : 0;
	bookdb_txn_abort(txn);
	return rc;
}

int sel_g_reserve_map(Selector *s, uint64_t count, size_t at_least)
{
	size_t want = count < SEL_RESERVE_MAX ? (size_t)count : SEL_RESERVE_MAX;
	uint64_t budget = map_budget(s);
	if (want > budget / 128) want = (size_t)(budget / 128);
	if (want < at_least) want = at_least;
	return keymap_reserve(&s->map, node_keys(s), want) < 0 ? SEL_ENOMEM : 0;
}

/* Clears the bounds of the pending nodes and of every node that can reach
 * one, in one walk (one stamp: a shared ancestor is visited once). */
static int flush_invalidations(Selector *s)
{
	if (!s->npending) return 0;
	uint32_t stamp = ++s->stamp;
	size_t sp = 0;
	if (array_grow((void **)&s->stack, &s->capstack, s->npending, sizeof *s->stack, 64))
		return SEL_ENOMEM;
	/* The changed nodes themselves always pass the walk on to their parents
	 * (what changed is their state, not only a value below them). */
	for (size_t k = 0; k < s->npending; k++) {
		uint32_t i = s->pending[k];
		if (s->nodes[i].stamp == stamp) continue;
		s->nodes[i].stamp = stamp;
		s->nodes[i].flags &= (uint8_t)~NF_STALE;
		s->stack[sp++] = i;
	}
	s->npending = 0;
	while (sp) {
		/* Thousands of changes kept while a search was suspended make a
		 * long walk: it yields too (inside a call only; a stop is for the
		 * search after it, the walk always ends). */
		if (s->in_call) (void)sel_g_yield(s, 1);
		uint32_t i = s->stack[--sp];
		SelNode *n = &s->nodes[i];
		if (n->bound != B_NONE) s->st.invalidated++;
		n->bound = B_NONE;
		sel_pb_drop(s, i);
		/* Stale: the walk that cleared it went on above, and nothing above
		 * has used its value since; the walk stops here. */
		if (n->flags & NF_STALE) continue;
		n->flags |= NF_STALE;
		for (uint32_t l = n->parents; l; l = s->links[l - 1].next) {
			uint32_t p = s->links[l - 1].node;
			if (s->nodes[p].stamp == stamp) continue;
			s->nodes[p].stamp = stamp;
			if (array_grow((void **)&s->stack, &s->capstack, sp + 1, sizeof *s->stack,
			               64))
				return SEL_ENOMEM;
			s->stack[sp++] = p;
		}
	}
	return 0;
}

int sel_g_flush(Selector *s)
{
	return flush_invalidations(s);
}

static bool is_root(const Selector *s, uint32_t i)
{
	for (size_t r = 0; r < s->nroots; r++)
		if (s->roots[r].node == i) return true;
	return false;
}

/* Whether key k was already met by this walk (seen[0..n)), else noted. */
static bool walk_seen(Key *seen, int *n, Key k)
{
	for (int j = 0; j < *n; j++)
		if (key_equal(seen[j], k)) return true;
	seen[(*n)++] = k;
	return false;
}

int sel_g_dropped_result(Selector *s, uint32_t i, const uint8_t *val, size_t len)
{
	if (s->nodes[i].parents || is_root(s, i) || !sel_g_was_dropped(s, s->nodes[i].key))
		return 0;
	if (!val) { /* no position to walk up from */
		s->orphaned = true;
		return 0;
	}
	if (!s->retro && !(s->retro = malloc(RETRO_MAX * sizeof *s->retro))) return SEL_ENOMEM;
	/* Breadth first: todo[] the dropped positions to walk up from, the
	 * first the result's own; seen[] every key met. */
	Key todo[SEL_WALK_MAX + 1], seen[4 * SEL_WALK_MAX];
	int ntodo = 1, nseen = 1, r = 0;
	todo[0] = seen[0] = s->nodes[i].key;
	BookTxn *own = NULL, *txn = NULL;
	for (int t = 0; t < ntodo && !r; t++) {
		if (t > 0) {
			if (!txn && !(txn = read_txn(s, &own))) {
				r = SEL_EBOOK;
				break;
			}
			int g = bookdb_get_raw(&val, &len, txn, todo[t]);
			/* Not in the book, or not thought: no parent of anything
			 * (a filter's false positive). */
			if (g == BOOKDB_ENOTFOUND ||
			    (g == 0 && (!len || !(val[0] & BOOKDB_REC_THOUGHT))))
				continue;
			if (g < 0) {
				r = SEL_EBOOK;
				break;
			}
		}
		if (bookdb_record_decode(s->rec, val, len) < 0 ||
		    bookdb_record_position(s->pos, s->rec, NULL) < 0) {
			r = SEL_ECORRUPT;
			break;
		}
		int nc = retro_parents(s->pos, s->retro);
		for (int c = 0; c < nc && !r; c++) {
			Key pk = s->retro[c].key;
			int64_t j = sel_g_find_node(s, pk);
			bool dropped = sel_g_was_dropped(s, pk);
			if (j < 0 && !dropped) continue;
			if (ntodo > SEL_WALK_MAX || nseen == 4 * SEL_WALK_MAX) {
				s->orphaned = true;
				s->st.walk_gave_up++;
				bookdb_txn_abort(own);
				return r;
			}
			if (walk_seen(seen, &nseen, pk)) continue;
			/* In the graph: its bounds and those above it by its links.
			 * Made again since a trim dropped it: above it too. */
			if (j >= 0) r = sel_g_invalidate_later(s, (uint32_t)j);
			if (dropped) todo[ntodo++] = pk;
		}
	}
	bookdb_txn_abort(own);
	s->st.walk_ups++;
	if (r == SEL_EBOOK || r == SEL_ECORRUPT) {
		/* What could not be read may lie between: every bound. */
		s->orphaned = true;
		r = 0;
	}
	return r;
}

/* A key nearly always absent from the filter: one cache line read. Before
 * it, every change to a node new after a trim cleared every bound: after
 * the first trim of a coordinator handing out provisional leaves (most of
 * them new to the graph), tens of times a second. */
bool sel_g_was_dropped(const Selector *s, Key k)
{
	if (!s->trimmed) return false;
	if (!s->gone || s->gone_full) return true;
	return sel_key_filter_maybe(&(SelKeyFilter){s->gone, s->gone_blocks}, k);
}

void sel_g_gone_begin(Selector *s)
{
	if (!s->gone && !s->gone_full) {
		uint64_t cap = 4 * (uint64_t)(s->nnodes > 1024 ? s->nnodes : 1024);
		size_t bytes = sel_filter_bytes(cap);
		if ((s->gone = calloc(1, bytes))) {
			s->gone_bytes = bytes;
			s->gone_blocks = bytes / (BLOOM_BLOCK_WORDS * sizeof(uint64_t)) - 1;
			s->gone_cap = cap;
		}
	}
	if (!s->gone || s->gone_keys + s->nnodes > s->gone_cap) s->gone_full = true;
}

void sel_g_gone_add(Selector *s, Key k)
{
	if (s->gone_full) return;
	bloom_add(s->gone, s->gone_blocks, k);
	s->gone_keys++;
}

void sel_g_gone_reset(Selector *s)
{
	if (s->gone && s->gone_keys) memset(s->gone, 0, s->gone_bytes);
	s->gone_keys = 0;
	s->gone_full = false;
	s->trimmed = false;
}

int sel_g_call_begin(Selector *s)
{
	int r = flush_invalidations(s);
	if (r) return r;
	/* A change to a node the graph had not met, after a trim: it may lie
	 * below a part trimmed away, above which no walk reaches (sel_trim). */
	if (s->orphaned) {
		sel_clear_bounds(s);
		s->orphaned = false;
		s->st.trim_clears++;
	}
	if (++s->epoch == UINT16_MAX) {
		/* Ages kept relative: the oldest half merged into age "old". */
		for (size_t i = 0; i < s->nnodes; i++) {
			uint16_t v = s->nodes[i].seen;
			s->nodes[i].seen = v > 0x8000 ? (uint16_t)(v - 0x8000) : 0;
		}
		s->epoch -= 0x8000;
	}
	/* A search before the filter meets every child of every legal move in
	 * LMDB (a B-tree walk each, most of them for keys the book does not
	 * hold): waiting for the one pass that builds the filter is quicker. */
	if (s->lazy && s->bloom) {
		/* A regrow: the filter in use until the new one is made. */
		sel_g_filter_join_done(s);
	} else if (s->lazy) {
		sel_start_filter(s); /* deferred (sel_defer_filter) until now */
		if (s->bloom_src_used) {
			/* A restored graph holds the positions its searches meet:
			 * they go on while the thread reads the filter (a lookup
			 * meanwhile asks LMDB), which is joined once read. */
			sel_g_filter_join_done(s);
		} else {
			/* Slices: the wait is polled, so that the search can be
			 * suspended. */
			struct timespec ms = {0, 1000000};
			while (s->yield && s->bloom_started && !s->bloom_joined &&
			       !atomic_load_explicit(&s->bloom_finished, memory_order_acquire)) {
				if (sel_g_yield(s, SEL_YIELD_VISITS)) return SEL_ESTOPPED;
				nanosleep(&ms, NULL);
			}
			bloom_join(s);
		}
	}
	if (!s->db) return 0;
	if (!s->txn && bookdb_txn_begin(&s->txn, s->db, false) < 0) return SEL_EBOOK;
	/* The book's count (kept by LMDB, read at once): the keys the filter
	 * holds, the book having given it each key it gained since. */
	uint64_t n;
	if (s->lazy && s->bloom && bookdb_count(&n, s->txn, BOOKDB_POS) == 0) {
		s->filter_keys = n;
		filter_regrow(s);
	}
	return 0;
}

void sel_g_filter_join_done(Selector *s)
{
	if (s->bloom_started && !s->bloom_joined &&
	    atomic_load_explicit(&s->bloom_finished, memory_order_acquire))
		bloom_join(s);
}

void sel_g_filter_wait(Selector *s)
{
	if (!s->lazy) return;
	if (s->bloom) { /* a regrow is not waited for */
		sel_g_filter_join_done(s);
		return;
	}
	sel_start_filter(s);
	bloom_join(s);
}

void sel_g_call_end(Selector *s)
{
	bookdb_txn_abort(s->txn);
	s->txn = NULL;
}

int sel_add_root(Selector *s, Key key, Color side)
{
	sel_g_trim_end(s); /* a new node */
	int64_t i = sel_g_find_or_create(s, key);
	if (i < 0) return (int)i;
	int r = (array_grow((void **)&s->roots, &s->caproots, s->nroots + 1, sizeof *s->roots, 64)
	             ? SEL_ENOMEM
	             : 0);
	if (r) return r;
	s->roots[s->nroots].node = (uint32_t)i;
	s->roots[s->nroots].side = side;
	return (int)s->nroots++;
}

int sel_g_add_link(Selector *s, uint32_t child, uint32_t parent)
{
	int r = (bigmem_grow((void **)&s->links, &s->caplinks, s->nlinks + 1, sizeof *s->links, 64)
	             ? SEL_ENOMEM
	             : 0);
	if (r) return r;
	s->links[s->nlinks].node = parent;
	s->links[s->nlinks].next = s->nodes[child].parents;
	s->nodes[child].parents = (uint32_t)(++s->nlinks);
	return 0;
}

/* Appends one edge to the block being built for node parent. */
static int add_edge(Selector *s, uint32_t parent, uint32_t child, Move m, uint8_t flags, int eval)
{
	if (s->nedges >= UINT32_MAX) return SEL_EFULL;
	int r = (bigmem_grow((void **)&s->edges, &s->capedges, s->nedges + 1, sizeof *s->edges, 64)
	             ? SEL_ENOMEM
	             : 0);
	if (r) return r;
	SelEdge *e = &s->edges[s->nedges++];
	e->child = (int32_t)child;
	e->eval = (int16_t)eval;
	e->move = m;
	e->flags = flags;
	s->st.edges++;
	return sel_g_add_link(s, child, parent);
}

/* Whether stored move bm of rec is searched: legal, not marked avoided
 * (joseki prune), not a declined promotion (8h2b beside a valued 8h2b+,
 * bookdb_move_declined; promotes: some stored move of rec promotes, without
 * which none is): the moves the book may play. */
static bool stored_played(const BookRecord *rec, const BookMove *bm, const Position *pos,
                          bool promotes)
{
	return !(bm->flags & BOOKDB_MOVE_AVOIDED) && !(promotes && bookdb_move_declined(rec, bm)) &&
	       pos_is_legal(pos, bm->move);
}

/*
 * Builds node i's edges: every stored move played (stored_played; its child created as a
 * placeholder when absent, so that leasing or thinking it later reaches this
 * node through the parent links), then every other legal move whose child is
 * already in the graph (transposition edges).
 */
int sel_g_expand(Selector *s, uint32_t i)
{
	BookRecord *rec = s->rec;
	Position *pos = s->pos;
	s->st.expansions++;
	/* The record: its held bytes, else the book's (in LMDB's mapped pages,
	 * valid while the transaction lives: decoded at once). A book position
	 * gone from the book since it was loaded has no moves. */
	SelNode *n = &s->nodes[i];
	if (!(n->flags & NF_RAW) && n->u.e.off == SEL_EDGELESS) s->st.reexpansions++;
	const uint8_t *val = NULL;
	size_t len = 0;
	BookTxn *own = NULL;
	int d = 0;
	if (n->flags & NF_RAW) {
		uint32_t l;
		memcpy(&l, n->u.raw, sizeof l);
		val = n->u.raw + sizeof l;
		len = l;
	} else {
		BookTxn *txn = s->db ? read_txn(s, &own) : NULL;
		int g = txn ? bookdb_get_raw(&val, &len, txn, n->key) : BOOKDB_EIO;
		if (g == BOOKDB_ENOTFOUND)
			len = 0;
		else if (g < 0)
			d = SEL_EBOOK;
	}
	/* (A record holding another key's position is damage too, as joseki
	 * check has it.) */
	if (!d && len &&
	    (bookdb_record_decode(rec, val, len) < 0 ||
	     bookdb_record_position(pos, rec, NULL) < 0 || !key_equal(pos_key(pos), n->key)))
		d = SEL_ECORRUPT;
	bookdb_txn_abort(own);
	drop_raw(s, n);
	n->u.e.n = 0;
	n->u.e.off = (uint32_t)s->nedges;
	n->u.e.best = NO_BEST;
	n->flags |= NF_EXPANDED;
	n->seen = s->epoch;
	if (d < 0) {
		if (!s->err) s->err = d;
		return d;
	}
	if (!len) return 0;
	int nlegal = movegen_legal(pos, s->legal);
	if (nlegal == 0) {
		s->nodes[i].u.e.best = SEL_MATED;
		return 0;
	}
	/* Only where a stored move promotes can a move (stored or not) decline
	 * it: nearly no record. */
	bool promotes = false;
	for (int k = 0; k < rec->nmoves && !promotes; k++)
		promotes = move_is_promote(rec->moves[k].move);
	SelKeyFilter kf;
	bool filter = s->lazy && usable_filter(s, &kf);
	int r;
	/* Every key first, its map slot (and filter block) prefetched: the
	 * lookups below then mostly wait for one memory access at a time no
	 * more (a big book's map is far larger than the caches). */
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *bm = &rec->moves[k];
		bool use = stored_played(rec, bm, pos, promotes);
		s->stored_after[k] = use ? pos_key_after(pos, bm->move) : (Key){0, 0};
		if (use) keymap_prefetch(&s->map, s->stored_after[k]);
		if (use && filter)
			__builtin_prefetch(bloom_block(kf.words, kf.blocks, s->stored_after[k]));
	}
	for (int j = 0; j < nlegal; j++) {
		s->legal_after[j] = pos_key_after(pos, s->legal[j]);
		keymap_prefetch(&s->map, s->legal_after[j]);
		if (filter) __builtin_prefetch(bloom_block(kf.words, kf.blocks, s->legal_after[j]));
	}
	/* The first search tries first the move minimax valued best (its last
	 * run's values, when the record has them): the selector's own values
	 * are much the same, so the other moves are mostly refuted by a null
	 * window at once. */
	bool mm = rec->flags & BOOKDB_REC_MINIMAX;
	int best_value = INT_MIN;
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *bm = &rec->moves[k];
		if (!stored_played(rec, bm, pos, promotes)) continue;
		int64_t c = child_node(s, s->stored_after[k]);
		if (c < 0) return (int)c;
		uint8_t f = 0;
		if (bm->flags & BOOKDB_MOVE_EVAL) f |= EF_EVAL;
		if ((bm->flags & BOOKDB_MOVE_STATS) && bm->count > 0) f |= EF_KIF;
		r = add_edge(s, i, (uint32_t)c, bm->move, f, bm->eval);
		if (r) return r;
		if (mm && bm->value > best_value) {
			best_value = bm->value;
			s->nodes[i].u.e.best = s->nodes[i].u.e.n;
		}
		s->nodes[i].u.e.n++;
	}
	for (int j = 0; j < nlegal; j++) {
		Move m = s->legal[j];
		int k;
		for (k = 0; k < rec->nmoves; k++)
			if (rec->moves[k].move == m) break;
		if (k < rec->nmoves) continue;
		/* Nor a transposition by a declined promotion (minimax drops it). */
		if (promotes && bookdb_declines(rec, m)) continue;
		int64_t c = lookup(s, s->legal_after[j]);
		if (c == -1) continue;
		if (c < 0) return (int)c;
		r = add_edge(s, i, (uint32_t)c, m, 0, 0);
		if (r) return r;
		s->nodes[i].u.e.n++;
	}
	return 0;
}

/* Whether node j has an edge to node child. */
static bool has_edge(const Selector *s, uint32_t j, uint32_t child)
{
	const SelNode *n = &s->nodes[j];
	for (uint32_t e = 0; e < n->u.e.n; e++)
		if (s->edges[n->u.e.off + e].child == (int32_t)child) return true;
	return false;
}

/* Gives expanded node j one more edge (to child, by move m, a move its
 * record does not store), at the end of its block: the block is moved to
 * the end of the edges first unless it lies there (the old one left
 * unused, as sel_g_unthink leaves one). */
static int append_edge(Selector *s, uint32_t j, uint32_t child, Move m)
{
	uint32_t off = s->nodes[j].u.e.off, n = s->nodes[j].u.e.n;
	if (off + n != s->nedges) {
		if (s->nedges + n >= UINT32_MAX) return SEL_EFULL;
		if (bigmem_grow((void **)&s->edges, &s->capedges, s->nedges + n + 1,
		                sizeof *s->edges, 64))
			return SEL_ENOMEM;
		memcpy(s->edges + s->nedges, s->edges + off, (size_t)n * sizeof *s->edges);
		s->nodes[j].u.e.off = (uint32_t)s->nedges;
		s->nedges += n;
	}
	int r = add_edge(s, j, child, m, 0, 0);
	if (!r) s->nodes[j].u.e.n++;
	return r;
}

int sel_g_new_in_book(Selector *s, uint32_t i, const uint8_t *val, size_t len)
{
	if (!s->retro && !(s->retro = malloc(RETRO_MAX * sizeof *s->retro))) return SEL_ENOMEM;
	if (bookdb_record_decode(s->rec, val, len) < 0 ||
	    bookdb_record_position(s->pos, s->rec, NULL) < 0)
		return SEL_ECORRUPT;
	int nc = retro_parents(s->pos, s->retro);
	for (int c = 0; c < nc; c++) keymap_prefetch(&s->map, s->retro[c].key);
	/* A pawn dropped to mate is no move: the only parent move that
	 * retro_parents lists and movegen_legal does not. */
	int mated = -1;
	BookTxn *own = NULL, *txn = NULL;
	int r = 0;
	for (int c = 0; c < nc && !r; c++) {
		int64_t j = sel_g_find_node(s, s->retro[c].key);
		Move m = s->retro[c].move;
		if (j < 0 ||
		    (s->nodes[j].flags & (NF_EXPANDED | NF_THOUGHT)) !=
		        (NF_EXPANDED | NF_THOUGHT) ||
		    has_edge(s, (uint32_t)j, i))
			continue;
		if (move_is_drop(m) && move_drop_type(m) == PAWN) {
			if (mated < 0)
				mated =
				    pos_in_check(s->pos) && movegen_legal(s->pos, s->legal) == 0;
			if (mated) continue;
		}
		/* Every stored move has its edge, but one marked avoided (joseki
		 * prune, joseki avoid) or a declined promotion, which sel_g_expand
		 * leaves out: the parent's
		 * record as the book holds it (marks are written to the book, so a
		 * version older than the one the node was built from has them). */
		if (!txn && !(txn = read_txn(s, &own))) {
			r = SEL_EBOOK;
			break;
		}
		const uint8_t *pv;
		size_t pl;
		int g = bookdb_get_raw(&pv, &pl, txn, s->retro[c].key);
		if (g < 0 && g != BOOKDB_ENOTFOUND) {
			r = SEL_EBOOK;
			break;
		}
		bool stored = false;
		if (g == 0 && pl) {
			if (bookdb_record_decode(s->rec, pv, pl) < 0) {
				r = SEL_ECORRUPT;
				break;
			}
			for (int k = 0; k < s->rec->nmoves && !stored; k++)
				stored = s->rec->moves[k].move == m;
			/* A declined promotion has no edge either (sel_g_expand). */
			stored = stored || bookdb_declines(s->rec, m);
		}
		if (stored) continue;
		r = append_edge(s, (uint32_t)j, i, m);
		if (!r) s->st.new_edges++;
	}
	bookdb_txn_abort(own);
	return r;
}

int sel_g_invalidate_later(Selector *s, uint32_t i)
{
	if (bigmem_grow((void **)&s->pending, &s->cappending, s->npending + 1, sizeof *s->pending,
	                64))
		return SEL_ENOMEM;
	s->pending[s->npending++] = i;
	return 0;
}

bool sel_g_book_thought(const Selector *s, Key key)
{
	SelKeyFilter f;
	if (usable_filter(s, &f) && !sel_key_filter_maybe(&f, key)) return false;
	BookTxn *own, *txn = read_txn(s, &own);
	const uint8_t *val;
	size_t len;
	bool thought = txn && bookdb_get_raw(&val, &len, txn, key) == 0 && len &&
	               (val[0] & BOOKDB_REC_THOUGHT);
	bookdb_txn_abort(own);
	return thought;
}

int sel_g_book_changed(Selector *s, Key k, const uint8_t *val, size_t len, RetroMove *cand,
                       uint64_t *parents)
{
	if (val && sel_g_filter_gained(s, k)) return SEL_ENOMEM;
	bool thought = val && len && (val[0] & BOOKDB_REC_THOUGHT);
	int64_t i = sel_g_find_node(s, k);
	if (i >= 0) {
		SelNode *n = &s->nodes[i];
		/* Read from the book when a search first looks at it. */
		if (n->flags & NF_UNRESOLVED) return 0;
		if (!thought) return (n->flags & NF_THOUGHT) ? SEL_ESTALE : 0;
		int r = sel_g_add_raw(s, (uint32_t)i, val, len);
		if (!r) r = sel_g_invalidate_later(s, (uint32_t)i);
		return r ? r : 1;
	}
	if (!thought) return 0;
	/* A position new to the graph: its parents in the graph, by the
	 * retrograde moves (a key found is the position itself). */
	if (bookdb_record_decode(s->rec, val, len) < 0 ||
	    bookdb_record_position(s->pos, s->rec, NULL) < 0)
		return SEL_ECORRUPT;
	int nc = retro_parents(s->pos, cand);
	/* Most candidates are in neither graph nor book: their map slots
	 * fetched together, so that the misses overlap. */
	for (int c = 0; c < nc; c++) keymap_prefetch(&s->map, cand[c].key);
	int r = 0;
	bool dropped = sel_g_was_dropped(s, k);
	for (int c = 0; !r && c < nc; c++) {
		int64_t j = sel_g_find_node(s, cand[c].key);
		/* A parent a trim dropped: its value, and the bounds above it,
		 * may have changed with it. */
		if (j < 0 && !dropped) dropped = sel_g_was_dropped(s, cand[c].key);
		if (j < 0 ||
		    (s->nodes[j].flags & (NF_EXPANDED | NF_THOUGHT)) != (NF_EXPANDED | NF_THOUGHT))
			continue;
		/* A parent: the position becomes a node (at the first), the
		 * parent is built again from the book, the new child getting its
		 * edge. */
		if (i < 0) {
			if ((i = create_node(s, k)) < 0) return (int)i;
			if ((r = sel_g_add_raw(s, (uint32_t)i, val, len))) break;
		}
		const uint8_t *pv;
		size_t pl;
		int g = bookdb_get_raw(&pv, &pl, s->txn, cand[c].key);
		if (g < 0 || !pl || !(pv[0] & BOOKDB_REC_THOUGHT)) {
			r = g < 0 && g != BOOKDB_ENOTFOUND ? SEL_EBOOK : SEL_ESTALE;
			break;
		}
		if (!(r = sel_g_add_raw(s, (uint32_t)j, pv, pl)))
			r = sel_g_invalidate_later(s, (uint32_t)j);
		(*parents)++;
	}
	/* No parent: a search meets it through the book, if ever (but a parent
	 * trimmed away may have been searched: sel_trim). */
	if (!r && dropped) s->orphaned = true;
	return r ? r : i < 0 ? 0 : 2;
}

/* The filters' bytes: the one in use, those it replaced, and the one its
 * thread makes, once made (expect: while made, as it will be). */
static uint64_t filter_held(const Selector *s, bool expect)
{
	uint64_t b = (s->bloom ? s->bloom_bytes : 0) + s->retired_bytes;
	if (!s->lazy || (s->bloom_joined && s->bloom)) return b;
	/* Written by the filter's thread before it said ready. */
	if (bloom_made(s)) return b + s->made.bytes;
	return b + (expect ? s->bloom_expect : 0);
}

uint64_t sel_g_fixed_bytes(const Selector *s)
{
	return (uint64_t)s->map.cap * sizeof *s->map.slot + filter_held(s, false);
}

uint64_t sel_g_used_bytes(const Selector *s)
{
	return (uint64_t)s->nnodes * sizeof(SelNode) + (uint64_t)s->nedges * sizeof(SelEdge) +
	       (uint64_t)s->nlinks * sizeof(SelLink) + sel_pb_bytes(s) + s->gone_bytes +
	       sel_g_fixed_bytes(s);
}

void sel_g_memory(SelStats *out, const Selector *s)
{
	out->used_bytes = sel_g_used_bytes(s);
	out->graph_bytes = s->capnodes * sizeof *s->nodes + s->map.cap * sizeof *s->map.slot +
	                   s->capedges * sizeof *s->edges + s->caplinks * sizeof *s->links +
	                   sel_pb_bytes(s) + s->gone_bytes;
	out->record_bytes = s->raw_bytes;
	/* The filter in use, else the one its thread made (written before it
	 * said ready). */
	bool inuse = s->bloom != NULL, ready = inuse || bloom_made(s);
	out->filter_ready = ready;
	out->filter_bytes = filter_held(s, false);
	uint64_t map = (uint64_t)s->map.cap * sizeof *s->map.slot;
	out->fixed_bytes = (map < s->map_fixed ? map : s->map_fixed) + filter_held(s, true);
	out->filter_kept = inuse ? s->filter_kept : ready && s->made.kept;
	out->filter_ms = inuse ? s->filter_ms : ready ? s->made.ms : 0;
	out->filter_keys = inuse ? s->filter_keys : 0;
	out->filter_regrows = s->regrows;
}

int sel_g_invalidate(Selector *s, uint32_t i)
{
	int r = sel_g_invalidate_later(s, i);
	return r ? r : flush_invalidations(s);
}
