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

#include "bookdb/minimax_hook.h"
#include "bookdb/prefetch.h"
#include "bookgen/selector.h"
#include "bookgen/snapshot.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "shogi/retro.h"

#define SEL_INF 32767

/* sel_attach sizes the node map for the book's positions, up to this many
 * (2^26 slots, 512 MB, for a book of 2^25 positions or more). */
#define SEL_RESERVE_MAX ((size_t)1 << 25)

/* Node flags. */
#define NF_THOUGHT 0x01
#define NF_EXPANDED 0x02
#define NF_LEASED 0x04
#define NF_ONPATH 0x08
/* Bounds cleared by an invalidation walk and the node not searched since: no
 * bound stored after that walk used its value, and every node above it was
 * cleared by that walk, so the next walk that reaches it stops there. */
#define NF_STALE 0x10
/* The record's bytes are held in memory (u.raw): a result (sel_add_result),
 * or a position lazy mode met. A thought node that is neither expanded nor
 * NF_RAW reads its record from the book when it is expanded. */
#define NF_RAW 0x20
/* Lazy mode: a stored move's child the key filter could not rule out: a node
 * (the graph holds it), but whether the book holds it, and its record, are
 * read only when a search first looks at it (sel_g_resolve): many children
 * are never looked at (a cut-off before them). */
#define NF_UNRESOLVED 0x40
/* An NF_UNRESOLVED node whose record was handed to the read-ahead threads
 * (sel_g_resolve_in): not handed again. */
#define NF_AHEAD 0x80

/* Edge flags. */
#define EF_EVAL 0x01
#define EF_KIF 0x02    /* the move was played in ingested games */
#define EF_BANNED 0x04 /* banned for selection: the PV ended here in a cycle */

/* Stored bounds. */
enum { B_NONE = 0, B_UPPER, B_LOWER, B_EXACT, B_NOLEAF };

#define NO_BEST 0xffff
/* u.e.best of an expanded node with no legal move (and so no edge): its
 * side to move is mated, a value (-VALUE_MATE), not a node without leaves. */
#define SEL_MATED 0xfffe
/* u.e.off of a node a trim took the edges of (until it is built again). */
#define SEL_EDGELESS UINT32_MAX

/*
 * 40 bytes. Until a node is expanded it has no edges, so the same 8 bytes
 * hold either its edge block (NF_EXPANDED) or its record's bytes (NF_RAW:
 * a malloc'd u32 length, then the bytes), freed once the edges are built.
 */
typedef struct {
	Key key;
	union {
		struct {
			uint32_t off; /* first edge in Selector.edges */
			uint16_t n;   /* edges */
			uint16_t
			    best; /* index of the best edge at the last full search (ordering) */
		} e;
		uint8_t *raw;
	} u;
	uint32_t parents; /* head of the parent link list, index + 1 (0: none) */
	uint32_t stamp;   /* visit mark of the last invalidation walk or batch */
	int16_t value;
	uint16_t ply; /* path ply while NF_ONPATH */
	uint16_t
	    seen; /* the call that last visited it (Selector.epoch): sel_trim keeps the recent */
	uint8_t flags;
	uint8_t bound;
} SelNode;
_Static_assert(sizeof(SelNode) == 40, "a node is 40 bytes");

/* Whether n is an expanded node with no legal move (sel_g_expand): mated. */
static inline bool sel_node_mated(const SelNode *n)
{
	return (n->flags & NF_EXPANDED) && n->u.e.n == 0 && n->u.e.best == SEL_MATED;
}

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

/*
 * A bound that depends on the path above its node: repetitions below it met
 * these nodes on the path above it (valued as draws). Kept apart from the
 * node and reused while those nodes are on the path again, whatever else
 * is (docs/bookgen.md, "The search"). One entry a slot, the slot by the
 * node (node + 1; 0: empty): a cache, where a later bound replaces another.
 */
#define SEL_DEP_MAX 8
typedef struct {
	uint32_t node;
	int16_t value;
	uint8_t bound, n;
	uint32_t dep[SEL_DEP_MAX];
} SelPathBound;
_Static_assert(sizeof(SelPathBound) == 40, "a path-dependent bound is 40 bytes");

/* A change kept while a call is suspended (sel_set_yield). */
enum { DEFER_RESULT, DEFER_LEASE, DEFER_RELEASE };
typedef struct {
	Key key;
	uint32_t prev;     /* the key's previous change (index + 1; 0: none) */
	uint32_t off, len; /* DEFER_RESULT of a thought position: its bytes in defer_bytes */
	uint8_t kind;
} SelDefer;

typedef struct SelTrimRun SelTrimRun;

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
	/* sel_trim: the calls counted (SelNode.seen); whether it ever dropped
	 * nodes (then a change to a node new to the graph may lie below a
	 * dropped part, whose ancestors' bounds no walk can reach: orphaned
	 * asks the next call to clear every bound). */
	uint16_t epoch;
	bool trimmed, orphaned;
	/* The keys the trims dropped since every bound was last cleared: a
	 * blocked Bloom filter as the key filter's, 16 bits a key, made at the
	 * first trim for four times the graph's nodes then (sel_g_was_dropped).
	 * gone_full: more keys than that, or no memory for it, or a restored
	 * selector that was trimmed (its snapshot holds no such filter): every
	 * key counts as dropped until the next clear. */
	uint64_t *gone;
	uint64_t gone_blocks; /* blocks - 1 */
	size_t gone_bytes;
	uint64_t gone_keys, gone_cap;
	bool gone_full;
	RetroMove *retro; /* sel_g_dropped_result's scratch (RETRO_MAX), made at first use */
	uint64_t memory;  /* sel_set_memory (0: none) */
	int err;          /* first error met during a search (corrupt record) */
	BookDB *db;       /* the book (sel_load, sel_attach): records read at expansion */
	bool lazy;        /* sel_attach: positions read on first use */
	BookTxn *txn;     /* the read transaction of the running public call */
	/* Lazy mode: a blocked Bloom filter of the book's keys (one 64-byte
	 * block a key), built by a background thread; once ready, a key it
	 * rules out is not looked up in LMDB. A search waits for it. bloom is
	 * set at the join only (the filter in use, on the selector's thread);
	 * the thread makes its filter in made. The graph's keys are not in it
	 * (a lookup asks the node map first): only the book's, so that a trim
	 * leaves none behind and the book's growth is what fills it. */
	uint64_t *bloom;
	size_t bloom_bytes;
	size_t bloom_expect;   /* sel_attach: the filter's bytes once built (filter_bytes_for) */
	uint64_t map_fixed;    /* the node map's bytes as made for the book (sel_g_fix_map) */
	uint64_t bloom_blocks; /* blocks - 1 */
	struct {
		uint64_t *words, blocks, keys; /* keys: the book's count it was made for */
		size_t bytes;
		bool kept;
		double ms;
	} made; /* written by the filter's thread before bloom_ready */
	atomic_int bloom_ready, bloom_cancel, bloom_finished;
	pthread_t bloom_thread;
	bool bloom_started, bloom_joined;
	/* The keys in the filter: the book's count, read as each call begins
	 * (the book gives it each key it gains: sel_g_filter_gained). Past one
	 * a byte (8 bits a key: about 2 % of absent keys pass, against 0.2 % at
	 * the 16 it is made with), a new one is made for the book as it is,
	 * beside the one in use (filter_regrow). regrow_at: the count that
	 * starts the next (doubled when one could not be made). regrows: those
	 * made, and one at a restore that made the snapshot's again. */
	uint64_t filter_keys, regrow_at;
	/* Filters a regrow replaced: a reader on another thread (sel_key_filter)
	 * may still hold one; freed with the selector. */
	uint64_t **retired;
	size_t nretired, retired_bytes;
	uint64_t regrows;
	bool bloom_deferred; /* sel_defer_filter: started by sel_start_filter or a search */
	/* sel_restore: the filter's section of the snapshot, read by the
	 * filter's thread instead of a build (fd -1: none); keys the book
	 * gained while it was not joined, added at the join. */
	SnapSection bloom_src;
	bool bloom_src_used; /* the filter is (being) read from a snapshot */
	uint64_t bloom_src_blocks;
	bool bloom_src_kept;
	double bloom_src_ms;
	Key *bloom_later;
	size_t nlater, caplater;
	BookMinimaxHook keys_hook; /* its keys, when offered, fill the filter */
	bool filter_kept;          /* the filter came from them */
	double filter_ms;          /* the filter's build */
	size_t raw_bytes;          /* record bytes held (NF_RAW) */
	/* Threads reading records ahead (sel_read_ahead), started at the
	 * first need; ahead_failed: they could not be. */
	BookPrefetch *ahead;
	bool ahead_failed;
	SelStats st;
	/* Slices (sel_set_yield): the function, its visit count, whether it
	 * stopped the search; in_call while a public call runs, and held
	 * (sel_hold), when the changes of sel_add_result, sel_lease and
	 * sel_release are kept in defer (in order; defer_map: a key's last one,
	 * index + 1) until it returns and the hold is off. */
	SelYieldFn yield;
	void *yield_ctx;
	unsigned yield_count;
	bool stop, in_call, held;
	/* A trim under way (sel_trim_slice; bookgen/selector_trim.c): its
	 * changes are kept as when held. */
	SelTrimRun *trim;
	SelDefer *defer;
	size_t ndefer, capdefer;
	uint8_t *defer_bytes;
	size_t ndefer_bytes, capdefer_bytes;
	KeyMap defer_map;
	/* scratch */
	BookRecord *rec;
	Position *pos;
	uint8_t *enc;
	Move legal[MOVEGEN_MAX];
	/* sel_g_expand: the keys after the stored moves and after the legal
	 * ones, computed (and their map slots prefetched) before the lookups. */
	Key stored_after[BOOKDB_MAX_MOVES], legal_after[MOVEGEN_MAX];
	/* Path-dependent bounds (SelPathBound): slots - 1, bounds stored since
	 * the table last grew. */
	SelPathBound *pbound;
	size_t pbound_mask, pbound_stored;
	uint32_t pv[SEL_MAX_PLY + 1][SEL_MAX_PLY + 1]; /* triangular PV of edge indices */
	int pvlen[SEL_MAX_PLY + 1];
};

/* selector_graph.c, used by the search */

/* Index of k's node, or -1 when absent (lookups only, nothing created). */
int64_t sel_g_find_node(const Selector *s, Key k);
/* Index of k's node, created (unthought, no record) if absent; or SEL_E*. */
int64_t sel_g_find_or_create(Selector *s, Key k);
/* Reserves room for n nodes in all (the node array and the key map). */
int sel_g_reserve_nodes(Selector *s, size_t n);
/* Zeroed memory for a key filter of bytes (2 MB pages when it is large). */
uint64_t *sel_g_bloom_alloc(size_t bytes);
/* Keeps node i's record bytes (a thought position) until it is expanded.
 * 0 or SEL_ENOMEM. */
int sel_g_add_raw(Selector *s, uint32_t i, const uint8_t *val, size_t len);
/* Node i is a leaf again (its analysis taken out of the book): not thought,
 * not expanded, no record held. */
void sel_g_unthink(Selector *s, uint32_t i);
/* Builds node i's edges (stored moves, then transpositions to nodes in the graph). */
int sel_g_expand(Selector *s, uint32_t i);
/* Reads an NF_UNRESOLVED node's record (lazy mode). 0 or SEL_E*. */
int sel_g_resolve_slow(Selector *s, uint32_t i);
/* Node parent's children still to be read, but child, handed to the
 * read-ahead threads (each once: NF_AHEAD). */
void sel_g_siblings_ahead(Selector *s, uint32_t parent, uint32_t child);
/* Reads parent's child's record if it is NF_UNRESOLVED. A search about to
 * read one child's record from the book mostly reads its siblings' next, so
 * they are read ahead meanwhile (a book larger than memory: several reads in
 * flight at once, where each waited alone) when ahead says so: not for the
 * first child a null-window search looks at, which mostly refutes the node
 * alone (its siblings' records, read ahead, were then reads nobody used). 0
 * or SEL_E*. */
static inline int sel_g_resolve_in(Selector *s, uint32_t parent, uint32_t child, bool ahead)
{
	if (!(s->nodes[child].flags & NF_UNRESOLVED)) return 0;
	if (ahead) sel_g_siblings_ahead(s, parent, child);
	return sel_g_resolve_slow(s, child);
}
/* Clears the bounds of node i and of every node that can reach it (and of
 * the pending ones' too), now. */
int sel_g_invalidate(Selector *s, uint32_t i);
/* The same, deferred to the next search (sel_g_call_begin). */
int sel_g_invalidate_later(Selector *s, uint32_t i);
/* Lazy mode: whether the book holds key as a thought position (a key the
 * graph has not met; nothing is created). */
bool sel_g_book_thought(const Selector *s, Key key);
/*
 * Catching up with another writer (sel_catch_up): key's record as the book
 * holds it now (val NULL: none), written since the snapshot. A node of the
 * graph gets what a result gives it (the new record kept, its ancestors'
 * bounds cleared); a thought position the graph has not met is made a node
 * when it is one move from expanded nodes, which are then built again (with
 * it as their child); the key filter learns the key. Runs with s->txn set.
 * 0 (nothing to do), 1 (a node changed), 2 (a node added; *parents counts
 * the nodes built again), SEL_ESTALE for a thought node the book no longer
 * holds as thought (the graph cannot forget one), or another SEL_E* code.
 * cand: RETRO_MAX entries of scratch.
 */
int sel_g_book_changed(Selector *s, Key k, const uint8_t *val, size_t len, RetroMove *cand,
                       uint64_t *parents);
/* Whether a trim may have dropped k since every bound was last cleared: a
 * change to k, absent from the graph, may then lie below a dropped part,
 * where no parent link leads (false: k was no node since, so no bound
 * depends on it). */
bool sel_g_was_dropped(const Selector *s, Key k);
/* A trim beginning: the dropped keys' filter made (for four times the nodes)
 * or marked full when this trim could overfill it. */
void sel_g_gone_begin(Selector *s);
/* A key the trim under way drops. */
void sel_g_gone_add(Selector *s, Key k);
/* Every bound cleared: no dropped key matters any more. */
void sel_g_gone_reset(Selector *s);
/* A result for node i (its record val, len), when no parent link leads to
 * it and a trim may have dropped it: the graph's nodes above it, found
 * through the positions the trims dropped (retrograde moves; each dropped
 * parent's position read from the book), are invalidated as a change of
 * theirs would be. More than SEL_WALK_MAX dropped positions on the way, an
 * error reading them, or no record (val NULL: a result that is no analysis,
 * seldom): s->orphaned (every bound cleared). */
#define SEL_WALK_MAX 64
int sel_g_dropped_result(Selector *s, uint32_t i, const uint8_t *val, size_t len);
/*
 * A result making node i (its record val, len) a position of the book: the
 * expanded nodes it is a child of by a move their records do not store were
 * built without that edge (the child then in neither graph nor book), and
 * get it now, as a selector attached now builds it; its parent link makes
 * the result's invalidation reach them. 0 or a SEL_E* code.
 */
int sel_g_new_in_book(Selector *s, uint32_t i, const uint8_t *val, size_t len);
/* Appends a parent link (child's parent is parent). 0 or SEL_ENOMEM. */
int sel_g_add_link(Selector *s, uint32_t child, uint32_t parent);
/* sel_trim_slice without applying the changes kept meanwhile: a trim begun
 * (between calls, nothing held or kept) or the one under way, for up to ms
 * (ms < 0: to its end). The nodes dropped by a trim that ended (0: none, or
 * none ended: s->trim then still set), or an error (the trim given up, the
 * graph unchanged). */
int64_t sel_g_trim(Selector *s, uint64_t budget, double ms);
/* A trim under way given up (sel_free). */
void sel_g_trim_free(Selector *s);
/* A trim under way ended (or given up, the graph as it was) and the changes
 * kept meanwhile made: before anything that changes or saves the graph (a
 * search, a new root, a snapshot). Nothing when none is under way. */
void sel_g_trim_end(Selector *s);
/* Clears the pending invalidations now (the walk of sel_g_call_begin). */
int sel_g_flush(Selector *s);
/* What sel_trim holds to its budget (SelStats.used_bytes): the graph's
 * nodes, edges and links in use, and what does not shrink: the node map
 * (sized when the selector attached) and the key filter (fixed bytes). */
uint64_t sel_g_used_bytes(const Selector *s);
uint64_t sel_g_fixed_bytes(const Selector *s);
/* The node map's size now is what was made for the book (SelStats.fixed_bytes:
 * at most an eighth of the budget; what it grows by later is the graph's). */
void sel_g_fix_map(Selector *s);
/* Joins the filter's thread if it has finished (never waits). */
void sel_g_filter_join_done(Selector *s);
/* The book holds k now (a result, a change caught up with): into the key
 * filter, and into the one being made, at its join. 0 or SEL_ENOMEM. */
int sel_g_filter_gained(Selector *s, Key k);
/* The book's positions (SEL_EBOOK when it cannot say). */
int sel_g_book_count(BookDB *db, uint64_t *count);
/* The node map sized for a book of count positions, as sel_attach does: at
 * most SEL_RESERVE_MAX, and 16 bytes a node in an eighth of the budget; but
 * for at least at_least nodes (one allocation for both). */
int sel_g_reserve_map(Selector *s, uint64_t count, size_t at_least);
/* The memory and filter figures of SelStats. */
void sel_g_memory(SelStats *out, const Selector *s);
/* Before a search: the pending invalidations; one read transaction for the
 * whole of a public call; in lazy mode the key filter waited for (yielding,
 * sel_set_yield). */
int sel_g_call_begin(Selector *s);
void sel_g_call_end(Selector *s);
/* Lazy mode: waits for the key filter's thread and joins it (as the first
 * search does). */
void sel_g_filter_wait(Selector *s);
/* Path-dependent bounds: node i's slot; node i's bound forgotten (something
 * below it changed); all forgotten (the graph renumbered, every bound
 * cleared); the table's bytes. */
static inline size_t sel_pb_slot(const Selector *s, uint32_t i)
{
	return (size_t)(((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull) >> 32) & s->pbound_mask;
}
static inline void sel_pb_drop(Selector *s, uint32_t i)
{
	if (!s->pbound) return;
	SelPathBound *b = &s->pbound[sel_pb_slot(s, i)];
	if (b->node == i + 1) b->node = 0;
}
void sel_pb_clear(Selector *s);
uint64_t sel_pb_bytes(const Selector *s);

/* Calls the yield function when weight more visits make SEL_YIELD_VISITS;
 * true when the search must stop (s->err is then SEL_ESTOPPED). */
static inline bool sel_g_yield(Selector *s, unsigned weight)
{
	if (!s->yield || s->stop) return s->stop;
	if ((s->yield_count += weight) < SEL_YIELD_VISITS) return false;
	s->yield_count = 0;
	/* A restored selector's filter, once its thread has read it, is joined
	 * here too: a search that goes on across many slices (the first after
	 * a restart) would otherwise look every child up in the book to its
	 * end, and the coordinator's provisional walk would have no filter. */
	sel_g_filter_join_done(s);
	if (s->yield(s->yield_ctx)) {
		s->stop = true;
		if (!s->err) s->err = SEL_ESTOPPED;
	}
	return s->stop;
}

#endif
