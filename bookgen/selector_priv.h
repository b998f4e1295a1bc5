/*
 * bookgen/selector_priv.h — what the selector's two files share: the graph
 * store (selector_graph.c: nodes in a hash by key, the record bytes of thought
 * positions, edges built on first visit, parent links, the Bloom filter of the
 * book's keys, loading) and the search over it (selector.c: ranged alpha-beta,
 * leaves, batches, leases). Not for use outside bookgen/.
 */
#ifndef BOOKGEN_SELECTOR_PRIV_H
#define BOOKGEN_SELECTOR_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bookgen/selector.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/position.h"

#define SEL_INF 32767

/* Node flags. */
#define NF_THOUGHT 0x01
#define NF_EXPANDED 0x02
#define NF_LEASED 0x04
#define NF_ONPATH 0x08
/* Bounds cleared by an invalidation walk and the node not searched since: no
 * bound stored after that walk used its value, and every node above it was
 * cleared by that walk, so the next walk that reaches it stops there. */
#define NF_STALE 0x10

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
	KeyMap map; /* nodes[i].key -> i (sel_g_node_keys) */
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
	/* Nodes changed (lease, release, result) whose ancestors' bounds are
	 * still to be cleared: one walk at the next search clears them all, so
	 * ancestors shared by many changes are visited once. */
	uint32_t *pending;
	size_t npending, cappending;
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
	/* sel_g_expand: the keys after the stored moves and after the legal
	 * ones, computed (and their map slots prefetched) before the lookups. */
	Key stored_after[BOOKDB_MAX_MOVES], legal_after[MOVEGEN_MAX];
	uint32_t pv[SEL_MAX_PLY + 1][SEL_MAX_PLY + 1]; /* triangular PV of edge indices */
	int pvlen[SEL_MAX_PLY + 1];
};

/* selector_graph.c, used by the search */

/* Index of k's node, or -1 when absent (lookups only, nothing created). */
int64_t sel_g_find_node(const Selector *s, Key k);
/* Index of k's node, created (unthought, no record) if absent; or SEL_E*. */
int64_t sel_g_find_or_create(Selector *s, Key k);
/* Keeps node i's record bytes (a thought position). 0 or SEL_ENOMEM. */
int sel_g_add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len);
/* Builds node i's edges (stored moves, then transpositions to nodes in the graph). */
int sel_g_expand(Selector *s, uint32_t i);
/* Clears the bounds of node i and of every node that can reach it (and of
 * the pending ones' too), now. */
int sel_g_invalidate(Selector *s, uint32_t i);
/* The same, deferred to the next search (sel_g_call_begin). */
int sel_g_invalidate_later(Selector *s, uint32_t i);
/* Before a search: the pending invalidations; in lazy mode one read
 * transaction for the whole of a public call. */
int sel_g_call_begin(Selector *s);
void sel_g_call_end(Selector *s);

#endif
