/*
 * bookgen/selector.c — the ranged alpha-beta selector over the in-memory book
 * graph (bookgen/selector.h, docs/bookgen.md).
 *
 * Memory: per node 56 bytes (key, record bytes offset, edge block, bound,
 * flags), per built edge 12 bytes, one parent link (8 bytes) per edge, the
 * record bytes of thought positions, and a 4-byte-per-slot hash at most half
 * full. Edges are built when a node is first searched, not at load, so opening
 * a large book costs one pass over LMDB and the first selection expands only
 * the nodes it visits.
 */
#include "bookgen/selector.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/grow.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

#define SEL_INF 32767

/* Node flags. */
#define NF_THOUGHT 0x01
#define NF_EXPANDED 0x02
#define NF_LEASED 0x04
#define NF_ONPATH 0x08

/* Edge flags. */
#define EF_EVAL 0x01
#define EF_KIF 0x02    /* the move was played in ingested games */
#define EF_BANNED 0x04 /* banned for selection: the PV ended here in a cycle */

/* Stored bounds. */
enum { B_NONE = 0, B_UPPER, B_LOWER, B_EXACT, B_NOLEAF };

#define NO_BEST 0xffff

typedef struct {
	Key key;
	uint64_t raw_off; /* record bytes (thought nodes) */
	uint32_t raw_len;
	uint32_t edge_off;
	uint16_t nedges;
	uint16_t best; /* index of the best edge at the last full search (ordering) */
	uint8_t flags;
	uint8_t bound;
	int16_t value;
	uint16_t ply;     /* path ply while NF_ONPATH */
	uint32_t parents; /* head of the parent link list, index + 1 (0: none) */
	uint32_t stamp;   /* visit mark of the last invalidation walk or batch */
} SelNode;

typedef struct {
	int32_t child;
	int16_t eval;
	Move move;
	uint8_t flags;
} SelEdge;

typedef struct {
	uint32_t node, next;
} SelLink;

typedef struct {
	uint32_t node;
	Color side;
} SelRoot;

struct Selector {
	SelOptions opt;
	SelNode *nodes;
	size_t nnodes, capnodes;
	uint64_t *slots; /* key tag << 32 | node index + 1; 0 empty */
	size_t capslots;
	SelEdge *edges;
	size_t nedges, capedges;
	SelLink *links;
	size_t nlinks, caplinks;
	uint8_t *raw;
	size_t nraw, capraw;
	SelRoot *roots;
	size_t nroots, caproots, next_root;
	uint32_t *stack;
	size_t capstack;
	uint32_t stamp;
	int err;      /* first error met during a search (corrupt record) */
	BookDB *db;   /* lazy mode (sel_attach): positions read on first use */
	BookTxn *txn; /* lazy mode: the read transaction of the running call */
	/* Lazy mode: a Bloom filter of the book's keys, built by a background
	 * thread; once ready, a key it rules out is not looked up in LMDB. */
	uint64_t *bloom;
	uint64_t bloom_mask; /* bits - 1 */
	atomic_int bloom_ready, bloom_cancel;
	pthread_t bloom_thread;
	bool bloom_started;
	SelStats st;
	/* scratch */
	BookRecord *rec;
	Position *pos;
	uint8_t *enc;
	Move legal[MOVEGEN_MAX];
	uint32_t pv[SEL_MAX_PLY + 1][SEL_MAX_PLY + 1]; /* triangular PV of edge indices */
	int pvlen[SEL_MAX_PLY + 1];
};

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

static inline uint64_t key_hash(Key k)
{
	uint64_t z = k.lo ^ (k.hi * 0x9e3779b97f4a7c15ULL);
	z ^= z >> 29;
	return z;
}

/* 32 key bits kept in the slot: a probe past another key rarely has to read
 * that node (a cache miss) to tell them apart. */
static inline uint64_t key_tag(Key k)
{
	return (k.hi >> 32) << 32;
}

static int64_t find_node(const Selector *s, Key k)
{
	if (!s->capslots) return -1;
	size_t mask = s->capslots - 1;
	uint64_t tag = key_tag(k);
	for (size_t h = key_hash(k) & mask;; h = (h + 1) & mask) {
		uint64_t v = s->slots[h];
		if (!v) return -1;
		if ((v & 0xffffffff00000000ULL) != tag) continue;
		uint32_t i = (uint32_t)v - 1;
		if (key_equal(s->nodes[i].key, k)) return i;
	}
}

static int rehash(Selector *s, size_t cap)
{
	uint64_t *slots = calloc(cap, sizeof *slots);
	if (!slots) return SEL_ENOMEM;
	size_t mask = cap - 1;
	for (size_t i = 0; i < s->nnodes; i++) {
		size_t h = key_hash(s->nodes[i].key) & mask;
		while (slots[h]) h = (h + 1) & mask;
		slots[h] = key_tag(s->nodes[i].key) | (uint64_t)(i + 1);
	}
	free(s->slots);
	s->slots = slots;
	s->capslots = cap;
	return 0;
}

/* Reserves room for n nodes in all. */
static int reserve_nodes(Selector *s, size_t n)
{
	if (n >= INT32_MAX) return SEL_EFULL;
	int r = (array_grow((void **)&s->nodes, &s->capnodes, n, sizeof *s->nodes, 64) ? SEL_ENOMEM
	                                                                               : 0);
	if (r) return r;
	if (n * 2 > s->capslots) {
		size_t cap = s->capslots ? s->capslots : 1024;
		while (n * 2 > cap) cap *= 2;
		r = rehash(s, cap);
	}
	return r;
}

static int add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len);
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
			int r = add_raw(s, (uint32_t)i, val, len);
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
	int64_t i = find_node(s, k);
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
static int64_t find_or_create(Selector *s, Key k)
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
	size_t mask = s->capslots - 1;
	size_t h = key_hash(k) & mask;
	while (s->slots[h]) h = (h + 1) & mask;
	s->slots[h] = key_tag(k) | (uint64_t)(s->nnodes + 1);
	s->st.nodes = ++s->nnodes;
	return (int64_t)(s->nnodes - 1);
}

static int add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len)
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
	free(s->slots);
	free(s->edges);
	free(s->links);
	free(s->raw);
	free(s->roots);
	free(s->stack);
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
		int64_t i = find_or_create(s, k);
		if (i < 0) {
			r = (int)i;
			goto done;
		}
		/* Unthought records (game positions only) need no bytes: their moves
		 * are never searched through, and a parent's edge carries the eval. */
		if (val[0] & BOOKDB_REC_THOUGHT) {
			r = add_raw(s, (uint32_t)i, val, len);
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
static int call_begin(Selector *s)
{
	if (!s->db || s->txn) return 0;
	return bookdb_txn_begin(&s->txn, s->db, false) < 0 ? SEL_EBOOK : 0;
}

static void call_end(Selector *s)
{
	bookdb_txn_abort(s->txn);
	s->txn = NULL;
}

int sel_add_root(Selector *s, Key key, Color side)
{
	int64_t i = find_or_create(s, key);
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
static int expand(Selector *s, uint32_t i)
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
	for (int k = 0; k < rec->nmoves; k++) {
		const BookMove *bm = &rec->moves[k];
		if (!pos_is_legal(pos, bm->move)) continue;
		int64_t c = find_or_create(s, pos_key_after(pos, bm->move));
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
		int64_t c = lookup(s, pos_key_after(pos, m));
		if (c == -1) continue;
		if (c < 0) return (int)c;
		r = add_edge(s, i, (uint32_t)c, m, 0, 0);
		if (r) return r;
		s->nodes[i].nedges++;
	}
	return 0;
}

/* Clears the bounds of node i and of every node that can reach it. */
static int invalidate(Selector *s, uint32_t i)
{
	uint32_t stamp = ++s->stamp;
	size_t sp = 0;
	int r = (array_grow((void **)&s->stack, &s->capstack, 1, sizeof *s->stack, 64) ? SEL_ENOMEM
	                                                                               : 0);
	if (r) return r;
	s->stack[sp++] = i;
	s->nodes[i].stamp = stamp;
	while (sp) {
		SelNode *n = &s->nodes[s->stack[--sp]];
		if (n->bound != B_NONE) s->st.invalidated++;
		n->bound = B_NONE;
		for (uint32_t l = n->parents; l; l = s->links[l - 1].next) {
			uint32_t p = s->links[l - 1].node;
			if (s->nodes[p].stamp == stamp) continue;
			s->nodes[p].stamp = stamp;
			r = (array_grow((void **)&s->stack, &s->capstack, sp + 1, sizeof *s->stack,
			                64)
			         ? SEL_ENOMEM
			         : 0);
			if (r) return r;
			s->stack[sp++] = p;
		}
	}
	return 0;
}

static int leaf_value(const Selector *s, const SelEdge *e)
{
	int v = e->eval;
	if (e->flags & EF_KIF) v += s->opt.kif_bonus;
	return value_clamp(v);
}

/*
 * Fail-soft negamax with PVS over the graph. Returns the value of node i for
 * its side to move; *noleaf when no move below is selectable (the parent then
 * treats the move as absent). *rmin is the smallest path ply that a repetition
 * below referred to: a bound that depends on the path above i is not stored.
 */
static int search(Selector *s, uint32_t i, int alpha, int beta, int ply, bool pv, int *rmin,
                  bool *noleaf)
{
	*noleaf = false;
	*rmin = INT_MAX;
	SelNode *n = &s->nodes[i];
	if (!pv && n->bound != B_NONE) {
		int v = n->value;
		if (n->bound == B_NOLEAF) {
			s->st.tt_hits++;
			*noleaf = true;
			return 0;
		}
		if (n->bound == B_EXACT || (n->bound == B_LOWER && v >= beta) ||
		    (n->bound == B_UPPER && v <= alpha)) {
			s->st.tt_hits++;
			return v;
		}
	}
	if (!(n->flags & NF_EXPANDED)) {
		int r = expand(s, i);
		if (r) {
			if (!s->err) s->err = r;
			*noleaf = true;
			return 0;
		}
		n = &s->nodes[i];
	}
	s->st.visits++;
	n->flags |= NF_ONPATH;
	n->ply = (uint16_t)ply;
	s->pvlen[ply] = 0;
	int alpha0 = alpha, best = -SEL_INF, bestk = -1, usable = 0, rm = INT_MAX;
	int ne = n->nedges, hint = n->best < ne ? n->best : -1;
	uint32_t off = n->edge_off;
	for (int t = -1; t < ne; t++) {
		int k = t < 0 ? hint : t;
		if (k < 0 || (t >= 0 && t == hint)) continue;
		SelEdge e = s->edges[off + k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & NF_LEASED) continue;
		int v;
		bool child_pv = false;
		if (cn->flags & NF_ONPATH) {
			v = s->opt.draw_value;
			if (cn->ply < rm) rm = cn->ply;
		} else if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			int cr;
			bool cnl;
			if (pv && usable == 0) {
				v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1, true, &cr,
				            &cnl);
				child_pv = true;
			} else {
				v = -search(s, (uint32_t)e.child, -alpha - 1, -alpha, ply + 1,
				            false, &cr, &cnl);
				if (!cnl && pv && v > alpha && v < beta) {
					int cr2;
					v = -search(s, (uint32_t)e.child, -beta, -alpha, ply + 1,
					            true, &cr2, &cnl);
					if (cr2 < cr) cr = cr2;
					child_pv = true;
				}
			}
			if (cnl) continue;
			if (cr < rm) rm = cr;
		} else {
			if (!(e.flags & EF_EVAL)) continue;
			v = leaf_value(s, &e);
		}
		usable++;
		if (v > best) {
			best = v;
			bestk = k;
			if (pv) {
				s->pv[ply][0] = off + (uint32_t)k;
				int len = 1;
				if (child_pv) {
					for (int j = 0; j < s->pvlen[ply + 1]; j++)
						s->pv[ply][len++] = s->pv[ply + 1][j];
				}
				s->pvlen[ply] = len;
			}
			if (v > alpha) alpha = v;
			if (v >= beta) break;
		}
	}
	n = &s->nodes[i];
	n->flags &= (uint8_t)~NF_ONPATH;
	*rmin = rm;
	if (!usable) {
		*noleaf = true;
		if (rm >= ply) n->bound = B_NOLEAF;
		return 0;
	}
	n->best = (uint16_t)bestk;
	if (rm >= ply) {
		n->bound = best >= beta ? B_LOWER : best > alpha0 ? B_EXACT : B_UPPER;
		n->value = (int16_t)best;
	}
	return best;
}

int sel_add_result(Selector *s, Key key, const BookRecord *rec)
{
	int len = bookdb_record_encode(s->enc, BOOKDB_RECORD_MAX, rec);
	if (len < 0) return SEL_EINVAL;
	int64_t i = find_or_create(s, key);
	if (i < 0) return (int)i;
	SelNode *n = &s->nodes[i];
	n->flags &= (uint8_t)~NF_LEASED;
	if (rec->flags & BOOKDB_REC_THOUGHT) {
		int r = add_raw(s, (uint32_t)i, s->enc, (size_t)len);
		if (r) return r;
	}
	return invalidate(s, (uint32_t)i);
}

int sel_lease(Selector *s, Key key)
{
	int64_t i = find_or_create(s, key);
	if (i < 0) return (int)i;
	s->nodes[i].flags |= NF_LEASED;
	return invalidate(s, (uint32_t)i);
}

int sel_release(Selector *s, Key key)
{
	int64_t i = find_node(s, key);
	if (i < 0) return 0;
	s->nodes[i].flags &= (uint8_t)~NF_LEASED;
	return invalidate(s, (uint32_t)i);
}

bool sel_is_leased(const Selector *s, Key key)
{
	int64_t i = find_node(s, key);
	return i >= 0 && (s->nodes[i].flags & NF_LEASED);
}

bool sel_is_thought(const Selector *s, Key key)
{
	int64_t i = find_node(s, key);
	return i >= 0 && (s->nodes[i].flags & NF_THOUGHT);
}

static int root_value(int *value, bool *has_leaf, Selector *s, int r)
{
	if (r < 0 || (size_t)r >= s->nroots) return SEL_EINVAL;
	uint32_t root = s->roots[r].node;
	*value = 0;
	*has_leaf = false;
	if (!(s->nodes[root].flags & NF_THOUGHT)) {
		*has_leaf = !(s->nodes[root].flags & NF_LEASED);
		return 0;
	}
	int rm;
	bool nl;
	s->err = 0;
	int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
	if (s->err) return s->err;
	*value = v;
	*has_leaf = !nl;
	return 0;
}

/* One selection from root r: 1 (out filled), 0 (nothing selectable), error. */
static int select_root(SelLeaf *out, Selector *s, int r)
{
	uint32_t root = s->roots[r].node;
	if (!(s->nodes[root].flags & NF_THOUGHT)) {
		/* An unthought root is itself the position to think about. */
		if (s->nodes[root].flags & NF_LEASED) return 0;
		out->root = r;
		out->key = s->nodes[root].key;
		out->value = 0;
		out->nmoves = 0;
		return 1;
	}
	for (;;) {
		int rm;
		bool nl;
		s->err = 0;
		int v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
		if (s->err) return s->err;
		if (nl || s->pvlen[0] == 0) return 0;
		uint32_t node = root, parent = root, last = 0;
		for (int j = 0; j < s->pvlen[0]; j++) {
			last = s->pv[0][j];
			parent = node;
			node = (uint32_t)s->edges[last].child;
			out->moves[j] = s->edges[last].move;
		}
		if (s->nodes[node].flags & NF_THOUGHT) {
			/* The PV ends in a move back into the path: ban it so that the
			 * selection moves on instead of stalling on the cycle. */
			s->edges[last].flags |= EF_BANNED;
			s->st.bans++;
			int e = invalidate(s, parent);
			if (e) return e;
			continue;
		}
		out->root = r;
		out->key = s->nodes[node].key;
		out->value = v;
		out->nmoves = s->pvlen[0];
		return 1;
	}
}

static int select_any(SelLeaf *out, Selector *s)
{
	for (size_t t = 0; t < s->nroots; t++) {
		size_t r = (s->next_root + t) % s->nroots;
		int got = select_root(out, s, (int)r);
		if (got < 0) return got;
		if (got) {
			s->next_root = (r + 1) % s->nroots;
			return 1;
		}
	}
	return 0;
}

typedef struct {
	SelLeaf *out;
	size_t max, count;
	int root, root_value, window, book_side;
	Color root_side;
	SelBatchMode mode;
	uint32_t stamp;
	Move path[SEL_MAX_PLY];
} Batch;

static void add_leaf(Selector *s, Batch *b, uint32_t c, int ply, Move m, int value)
{
	if (b->count >= b->max || s->nodes[c].stamp == b->stamp) return;
	s->nodes[c].stamp = b->stamp;
	SelLeaf *l = &b->out[b->count++];
	l->root = b->root;
	l->key = s->nodes[c].key;
	l->value = value;
	memcpy(l->moves, b->path, (size_t)ply * sizeof(Move));
	l->moves[ply] = m;
	l->nmoves = ply + 1;
}

/* Collects the leaves below thought node i whose moves pass each side's bar. */
static int collect(Selector *s, Batch *b, uint32_t i, int ply)
{
	if (s->nodes[i].stamp == b->stamp || b->count >= b->max) return 0;
	Color side = (Color)(b->root_side ^ (ply & 1));
	int bar;
	int rm;
	bool nl;
	if (b->mode == SEL_BATCH_SQRT && (int)side == b->book_side) {
		bar = search(s, i, -SEL_INF, SEL_INF, ply, true, &rm, &nl);
		if (s->err) return s->err;
		if (nl) return 0;
	} else {
		bar = side == b->root_side ? b->root_value - b->window : -b->root_value - b->window;
	}
	bar = value_clamp(bar);
	s->nodes[i].stamp = b->stamp;
	if (!(s->nodes[i].flags & NF_EXPANDED)) {
		int r = expand(s, i);
		if (r) return r;
	}
	s->nodes[i].flags |= NF_ONPATH;
	s->nodes[i].ply = (uint16_t)ply;
	int ret = 0;
	int ne = s->nodes[i].nedges;
	for (int k = 0; k < ne && !ret; k++) {
		SelEdge e = s->edges[s->nodes[i].edge_off + (uint32_t)k];
		if (e.flags & EF_BANNED) continue;
		const SelNode *cn = &s->nodes[e.child];
		if (cn->flags & (NF_LEASED | NF_ONPATH)) continue;
		if (cn->flags & NF_THOUGHT) {
			if (ply + 1 >= SEL_MAX_PLY) continue;
			int v =
			    -search(s, (uint32_t)e.child, -bar, -bar + 1, ply + 1, false, &rm, &nl);
			if (s->err)
				ret = s->err;
			else if (!nl && v >= bar) {
				b->path[ply] = e.move;
				ret = collect(s, b, (uint32_t)e.child, ply + 1);
			}
		} else if (e.flags & EF_EVAL) {
			int v = leaf_value(s, &e);
			if (v >= bar)
				add_leaf(s, b, (uint32_t)e.child, ply, e.move,
				         side == b->root_side ? v : -v);
		}
	}
	s->nodes[i].flags &= (uint8_t)~NF_ONPATH;
	return ret;
}

typedef struct {
	const SelLeaf *leaves;
	int value;
} GapCtx;

/* Closest to the root value first; ties in collection order (stored move
 * order: best first). */
static int cmp_gap(const void *a, const void *b, void *ctx)
{
	const GapCtx *g = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int gx = abs(g->leaves[x].value - g->value), gy = abs(g->leaves[y].value - g->value);
	if (gx != gy) return gx < gy ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int sort_leaves(SelLeaf *out, size_t n, int value)
{
	if (n < 2) return 0;
	uint32_t *idx = malloc(n * sizeof *idx);
	SelLeaf *tmp = malloc(n * sizeof *tmp);
	if (!idx || !tmp) {
		free(idx);
		free(tmp);
		return SEL_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
	GapCtx g = {out, value};
	qsort_r(idx, n, sizeof *idx, cmp_gap, &g);
	for (size_t i = 0; i < n; i++) tmp[i] = out[idx[i]];
	memcpy(out, tmp, n * sizeof *tmp);
	free(idx);
	free(tmp);
	return 0;
}

static int select_batch(SelLeaf *out, size_t max, Selector *s, int window, SelBatchMode mode,
                        int book_side)
{
	Batch *b = calloc(1, sizeof *b);
	if (!b) return SEL_ENOMEM;
	b->out = out;
	b->max = max;
	b->window = window < 0 ? 0 : window;
	b->mode = mode;
	b->stamp = ++s->stamp;
	int ret = 0;
	for (size_t r = 0; r < s->nroots && b->count < max && !ret; r++) {
		uint32_t root = s->roots[r].node;
		b->root = (int)r;
		b->root_side = s->roots[r].side;
		b->book_side = book_side < 0 ? (int)b->root_side : book_side;
		size_t first = b->count;
		if (!(s->nodes[root].flags & NF_THOUGHT)) {
			if (!(s->nodes[root].flags & NF_LEASED) &&
			    s->nodes[root].stamp != b->stamp) {
				s->nodes[root].stamp = b->stamp;
				SelLeaf *l = &out[b->count++];
				l->root = (int)r;
				l->key = s->nodes[root].key;
				l->value = 0;
				l->nmoves = 0;
			}
			continue;
		}
		int v, rm;
		bool nl;
		s->err = 0;
		v = search(s, root, -SEL_INF, SEL_INF, 0, true, &rm, &nl);
		if (s->err) {
			ret = s->err;
			break;
		}
		if (nl) continue;
		b->root_value = v;
		ret = collect(s, b, root, 0);
		if (!ret) ret = sort_leaves(out + first, b->count - first, v);
	}
	size_t n = b->count;
	free(b);
	return ret < 0 ? ret : (int)n;
}

void sel_get_stats(SelStats *out, const Selector *s)
{
	*out = s->st;
	out->filter_ready =
	    atomic_load_explicit(&((Selector *)s)->bloom_ready, memory_order_acquire);
}

void sel_clear_bounds(Selector *s)
{
	for (size_t i = 0; i < s->nnodes; i++) s->nodes[i].bound = B_NONE;
}

int sel_select(SelLeaf *out, Selector *s)
{
	int r = call_begin(s);
	if (!r) r = select_any(out, s);
	call_end(s);
	return r;
}

int sel_root_value(int *value, bool *has_leaf, Selector *s, int root)
{
	int r = call_begin(s);
	if (!r) r = root_value(value, has_leaf, s, root);
	call_end(s);
	return r;
}

int sel_select_batch(SelLeaf *out, size_t max, Selector *s, int window, SelBatchMode mode,
                     int book_side)
{
	int r = call_begin(s);
	if (!r) r = select_batch(out, max, s, window, mode, book_side);
	call_end(s);
	return r;
}

int sel_leaf_position(Position *pos, const char *root_sfen, const SelLeaf *leaf)
{
	if (sfen_parse(pos, root_sfen, NULL, NULL) < 0) return SEL_EINVAL;
	for (int j = 0; j < leaf->nmoves; j++) {
		if (!pos_is_legal(pos, leaf->moves[j])) return SEL_EINVAL;
		pos_do_move(pos, leaf->moves[j]);
	}
	return 0;
}
