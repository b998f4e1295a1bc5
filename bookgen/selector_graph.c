/*
 * bookgen/selector_graph.c — the selector's graph store (selector_priv.h).
 *
 * Memory: per node 56 bytes (key, record bytes offset, edge block, bound,
 * flags), per built edge 12 bytes, one parent link (8 bytes) per edge, the
 * record bytes of thought positions, and the key map (shogi/keymap.h: 8 bytes
 * a slot, at most half full). Edges are built when a node is first searched,
 * not at load, so opening a large book costs one pass over LMDB and the first
 * selection expands only the nodes it visits.
 */
#include "bookgen/selector_priv.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/grow.h"
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
static int reserve_nodes(Selector *s, size_t n)
{
	if (n >= INT32_MAX) return SEL_EFULL;
	int r = (array_grow((void **)&s->nodes, &s->capnodes, n, sizeof *s->nodes, 64) ? SEL_ENOMEM
	                                                                               : 0);
	if (r) return r;
	return keymap_reserve(&s->map, node_keys(s), n) ? SEL_ENOMEM : 0;
}

static int64_t create_node(Selector *s, Key k);

/*
 * Lazy mode: reads k's record and makes it a node. -1 when the book does not
 * hold k (nothing is created: the caller decides), another negative value on
 * an error.
 */
static int64_t fetch(Selector *s, Key k)
{
	BookTxn *txn = s->txn, *own = NULL;
	const uint8_t *val;
	size_t len;
	if (!txn) {
		if (bookdb_txn_begin(&own, s->db, false) < 0) return SEL_EBOOK;
		txn = own;
	}
	int rc = bookdb_get_raw(&val, &len, txn, k);
	int64_t i = -1;
	if (rc == 0) {
		i = len ? create_node(s, k) : SEL_ECORRUPT;
		if (i >= 0 && (val[0] & BOOKDB_REC_THOUGHT)) {
			int r = sel_g_add_raw(s, (uint32_t)i, val, len);
			if (r) i = r;
		}
	} else if (rc != BOOKDB_ENOTFOUND) {
		i = SEL_EBOOK;
	}
	bookdb_txn_abort(own);
	return i;
}

/* k's node if the graph (or, lazily, the book) has it; -1 if not. */
/* Three probe positions from the key's independent halves. */
static inline uint64_t bloom_bit(Key k, int j, uint64_t mask)
{
	return (k.lo + (uint64_t)j * (k.hi | 1)) & mask;
}

static bool bloom_maybe(const Selector *s, Key k)
{
	for (int j = 0; j < 3; j++) {
		uint64_t b = bloom_bit(k, j, s->bloom_mask);
		if (!(s->bloom[b >> 6] >> (b & 63) & 1)) return false;
	}
	return true;
}

static int64_t lookup(Selector *s, Key k)
{
	int64_t i = sel_g_find_node(s, k);
	if (i >= 0 || !s->db) return i;
	/* Most keys asked about (children of legal moves) are not in the book. */
	if (atomic_load_explicit(&s->bloom_ready, memory_order_acquire) && !bloom_maybe(s, k)) {
		s->st.filtered++;
		return -1;
	}
	s->st.fetches++;
	return fetch(s, k);
}

static void *bloom_build(void *arg)
{
	Selector *s = arg;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	uint64_t count = 0;
	if (bookdb_txn_begin(&txn, s->db, false) < 0) return NULL;
	if (bookdb_count(&count, txn, BOOKDB_POS) < 0 || bookdb_iter_open(&it, txn) < 0) goto out;
	uint64_t bits = 1024;
	while (bits < count * 12) bits *= 2; /* 12-24 bits a key, 3 probes: < 2% false */
	uint64_t *bloom = calloc(bits / 64, sizeof *bloom);
	if (!bloom) goto out;
	Key k;
	const uint8_t *val;
	size_t len;
	int rc;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		if (atomic_load_explicit(&s->bloom_cancel, memory_order_relaxed)) break;
		for (int j = 0; j < 3; j++) {
			uint64_t b = bloom_bit(k, j, bits - 1);
			bloom[b >> 6] |= 1ULL << (b & 63);
		}
	}
	if (rc != 0) {
		free(bloom);
		goto out;
	}
	s->bloom = bloom;
	s->bloom_mask = bits - 1;
	atomic_store_explicit(&s->bloom_ready, 1, memory_order_release);
out:
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	return NULL;
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
	int r = reserve_nodes(s, s->nnodes + 1);
	if (r) return r;
	SelNode *n = &s->nodes[s->nnodes];
	memset(n, 0, sizeof *n);
	n->key = k;
	n->best = NO_BEST;
	/* Room reserved above, and k is not in the map: this only inserts. */
	if (keymap_find_or_insert(&s->map, node_keys(s), (uint32_t)s->nnodes) < 0)
		return SEL_ENOMEM;
	s->st.nodes = ++s->nnodes;
	return (int64_t)(s->nnodes - 1);
}

int sel_g_add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len)
{
	int r = (array_grow((void **)&s->raw, &s->capraw, s->nraw + len, 1, 64) ? SEL_ENOMEM : 0);
	if (r) return r;
	memcpy(s->raw + s->nraw, val, len);
	s->nodes[i].raw_off = s->nraw;
	s->nodes[i].raw_len = (uint32_t)len;
	s->nraw += len;
	if (!(s->nodes[i].flags & NF_THOUGHT)) s->st.thought++;
	s->nodes[i].flags |= NF_THOUGHT;
	s->nodes[i].flags &= (uint8_t)~NF_EXPANDED;
	return 0;
}

int sel_new(Selector **out, const SelOptions *opt)
{
	*out = NULL;
	Selector *s = calloc(1, sizeof *s);
	if (!s) return SEL_ENOMEM;
	s->opt.kif_bonus = SEL_KIF_BONUS_DEFAULT;
	if (opt) s->opt = *opt;
	keymap_init(&s->map, sizeof(SelNode));
	s->rec = malloc(sizeof *s->rec);
	s->pos = malloc(sizeof *s->pos);
	s->enc = malloc(BOOKDB_RECORD_MAX);
	if (!s->rec || !s->pos || !s->enc || reserve_nodes(s, 1024)) {
		sel_free(s);
		return SEL_ENOMEM;
	}
	*out = s;
	return 0;
}

void sel_free(Selector *s)
{
	if (!s) return;
	if (s->bloom_started) {
		atomic_store(&s->bloom_cancel, 1);
		pthread_join(s->bloom_thread, NULL);
	}
	free(s->bloom);
	free(s->nodes);
	keymap_free(&s->map);
	free(s->edges);
	free(s->links);
	free(s->raw);
	free(s->roots);
	free(s->stack);
	free(s->pending);
	free(s->rec);
	free(s->pos);
	free(s->enc);
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
		r = reserve_nodes(s, s->nnodes + (size_t)count + 1024);
		if (r) goto done;
	}
	/* The record bytes fit in the pages the database uses: reserving that
	 * much up front (untouched pages cost nothing) spares the copies of a
	 * doubling arena, which dominated loading. */
	uint64_t pages = 0;
	unsigned psize = 0;
	if (bookdb_pages(&pages, &psize, txn, BOOKDB_POS) == 0 && pages) {
		r = (array_grow((void **)&s->raw, &s->capraw, s->nraw + (size_t)(pages * psize), 1,
		                64)
		         ? SEL_ENOMEM
		         : 0);
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
		/* Unthought records (game positions only) need no bytes: their moves
		 * are never searched through, and a parent's edge carries the eval. */
		if (val[0] & BOOKDB_REC_THOUGHT) {
			r = sel_g_add_raw(s, (uint32_t)i, val, len);
			if (r) goto done;
		}
	}
	r = 0;
done:
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	return r;
}

int sel_attach(Selector *s, BookDB *db)
{
	s->db = db;
	/* Without the filter every selection still works, only slower. */
	if (!s->bloom_started && pthread_create(&s->bloom_thread, NULL, bloom_build, s) == 0)
		s->bloom_started = true;
	return 0;
}

/* Lazy mode: one read transaction for the whole of a public call. */
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
		SelNode *n = &s->nodes[s->stack[--sp]];
		if (n->bound != B_NONE) s->st.invalidated++;
		n->bound = B_NONE;
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

int sel_g_call_begin(Selector *s)
{
	int r = flush_invalidations(s);
	if (r) return r;
	if (!s->db || s->txn) return 0;
	return bookdb_txn_begin(&s->txn, s->db, false) < 0 ? SEL_EBOOK : 0;
}

void sel_g_call_end(Selector *s)
{
	bookdb_txn_abort(s->txn);
	s->txn = NULL;
}

int sel_add_root(Selector *s, Key key, Color side)
{
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

static int add_link(Selector *s, uint32_t child, uint32_t parent)
{
	int r = (array_grow((void **)&s->links, &s->caplinks, s->nlinks + 1, sizeof *s->links, 64)
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
	int r = (array_grow((void **)&s->edges, &s->capedges, s->nedges + 1, sizeof *s->edges, 64)
	             ? SEL_ENOMEM
	             : 0);
	if (r) return r;
	SelEdge *e = &s->edges[s->nedges++];
	e->child = (int32_t)child;
	e->eval = (int16_t)eval;
	e->move = m;
	e->flags = flags;
	s->st.edges++;
	return add_link(s, child, parent);
}

/*
 * Builds node i's edges: every legal stored move (its child created as a
 * placeholder when absent, so that leasing or thinking it later reaches this
 * node through the parent links), then every other legal move whose child is
 * already in the graph (transposition edges).
 */
int sel_g_expand(Selector *s, uint32_t i)
{
	SelNode *n = &s->nodes[i];
	BookRecord *rec = s->rec;
	Position *pos = s->pos;
	s->st.expansions++;
	n->nedges = 0;
	n->edge_off = (uint32_t)s->nedges;
	n->best = NO_BEST;
	n->flags |= NF_EXPANDED;
	if (bookdb_record_decode(rec, s->raw + n->raw_off, n->raw_len) < 0 ||
	    bookdb_record_position(pos, rec, NULL) < 0) {
		if (!s->err) s->err = SEL_ECORRUPT;
		return SEL_ECORRUPT;
	}
	int nlegal = movegen_legal(pos, s->legal);
	int r;
	/* Every key first, its slot prefetched: the lookups below then mostly
	 * wait for one memory access at a time no more (a big book's map is far
	 * larger than the caches). */
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *bm = &rec->moves[k];
		/* A move joseki prune marked avoided is not played: not searched. */
		bool use = !(bm->flags & BOOKDB_MOVE_AVOIDED) && pos_is_legal(pos, bm->move);
		s->stored_after[k] = use ? pos_key_after(pos, bm->move) : (Key){0, 0};
		if (use) keymap_prefetch(&s->map, s->stored_after[k]);
	}
	for (int j = 0; j < nlegal; j++) {
		s->legal_after[j] = pos_key_after(pos, s->legal[j]);
		keymap_prefetch(&s->map, s->legal_after[j]);
	}
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *bm = &rec->moves[k];
		if ((bm->flags & BOOKDB_MOVE_AVOIDED) || !pos_is_legal(pos, bm->move)) continue;
		int64_t c = sel_g_find_or_create(s, s->stored_after[k]);
		if (c < 0) return (int)c;
		uint8_t f = 0;
		if (bm->flags & BOOKDB_MOVE_EVAL) f |= EF_EVAL;
		if ((bm->flags & BOOKDB_MOVE_STATS) && bm->count > 0) f |= EF_KIF;
		r = add_edge(s, i, (uint32_t)c, bm->move, f, bm->eval);
		if (r) return r;
		s->nodes[i].nedges++;
	}
	for (int j = 0; j < nlegal; j++) {
		Move m = s->legal[j];
		int k;
		for (k = 0; k < rec->nmoves; k++)
			if (rec->moves[k].move == m) break;
		if (k < rec->nmoves) continue;
		int64_t c = lookup(s, s->legal_after[j]);
		if (c == -1) continue;
		if (c < 0) return (int)c;
		r = add_edge(s, i, (uint32_t)c, m, 0, 0);
		if (r) return r;
		s->nodes[i].nedges++;
	}
	return 0;
}

int sel_g_invalidate_later(Selector *s, uint32_t i)
{
	if (array_grow((void **)&s->pending, &s->cappending, s->npending + 1, sizeof *s->pending,
	               64))
		return SEL_ENOMEM;
	s->pending[s->npending++] = i;
	return 0;
}

int sel_g_invalidate(Selector *s, uint32_t i)
{
	int r = sel_g_invalidate_later(s, i);
	return r ? r : flush_invalidations(s);
}
