/*
 * bookgen/selector.h — the ranged alpha-beta selector (docs/bookgen.md).
 *
 * The selector holds the book graph in memory (a hash from position key to node
 * index; per thought node its moves as (move, child node, eval) built on first
 * visit from its record, read then from the book's mapped pages) and runs a
 * negamax with PVS over it from one or more roots. A move whose child is a thought position is
 * searched through; any other move with an engine evaluation is a leaf. The
 * leaf to think about next is the child of the PV's last move.
 *
 * Leased children (being thought about) count as absent; a move back into the
 * current path scores the draw value (0), and when the PV ends in such a move
 * the (node, move) pair is banned and the search repeated. Bounds (exact, lower,
 * upper) are kept per node and cleared for every ancestor of a node that
 * changes (lease, release, result, ban), so the next selection re-searches
 * little more than the PV. Repeated selections touch LMDB only for nodes
 * they expand for the first time.
 *
 * A Selector is not thread-safe: one thread selects, leases and adds results.
 */
#ifndef BOOKGEN_SELECTOR_H
#define BOOKGEN_SELECTOR_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "bookdb/record.h"
#include "shogi/types.h"
#include "shogi/zobrist.h"

/* Error codes (negative). */
enum {
	SEL_OK = 0,
	SEL_ENOMEM = ERR_SEL - 0,
	SEL_EINVAL = ERR_SEL - 1,   /* bad argument */
	SEL_ECORRUPT = ERR_SEL - 2, /* a record that does not decode */
	SEL_EBOOK = ERR_SEL - 3,    /* the book could not be read (bookdb error) */
	SEL_EFULL = ERR_SEL - 4,    /* more than 2^31 nodes */
	SEL_ESTOPPED = ERR_SEL - 5, /* the yield function stopped the search (sel_set_yield) */
	/* The selector's snapshot (bookgen/snapshot.h). */
	SEL_ENOSNAP = ERR_SEL - 6, /* no snapshot */
	SEL_ESTALE = ERR_SEL - 7,  /* a snapshot of another state of the book */
	SEL_ESNAP = ERR_SEL - 8,   /* a damaged snapshot, or of another build or run */
	SEL_EIO = ERR_SEL - 9,     /* the snapshot could not be read or written */
};
const char *sel_strerror(int code);

/* Longest line (plies from a root) the selector follows. */
#define SEL_MAX_PLY 500
/* Default bonus for a leaf move played in ingested games. */
#define SEL_KIF_BONUS_DEFAULT 100

typedef struct {
	int kif_bonus;  /* added to a leaf move's value when it has game statistics */
	int draw_value; /* value of a move back into the current path (0) */
} SelOptions;

/* Batch modes (sel_select_batch). */
typedef enum {
	/* Every side: the moves within window of the root value (from that side). */
	SEL_BATCH_WINDOW = 0,
	/* The book side only its best moves; the other side the moves within window
	 * of the root value (the sqrt(N) variant). */
	SEL_BATCH_SQRT,
	/* Coverage, for a book that must answer in games: the book side only its
	 * best moves (the node's exact value, ties included); the other side every
	 * move within window of the best at its own node, whatever that node's
	 * value (the replies an opponent plays are near its best, and an inferior
	 * reply still needs an answer). Leaves come shallowest first (a
	 * breadth-first walk of the covered tree, to the depth where max leaves
	 * are found), then closest to the root value. */
	SEL_BATCH_COVER,
} SelBatchMode;

/* One selected leaf. */
typedef struct {
	int root;   /* index of the root (order of sel_add_root) */
	Key key;    /* the leaf position's key */
	int value;  /* the leaf move's value (bonus included), root side's view */
	int nmoves; /* moves from the root to the leaf */
	Move moves[SEL_MAX_PLY];
} SelLeaf;

typedef struct {
	uint64_t visits;       /* nodes searched (move loops run) */
	uint64_t tt_hits;      /* NonPV nodes answered by a stored bound */
	uint64_t path_bounds;  /* bounds stored that depend on the path above their node */
	uint64_t path_hits;    /* ... of the tt_hits: answered by one of those */
	uint64_t path_ignored; /* bounds stored as if they did not: they met too many */
	uint64_t path_kept;    /* ... of those, carried over by trims (their nodes renumbered) */
	uint64_t expansions;   /* nodes whose moves were built */
	uint64_t reexpansions; /* ... of those, nodes a trim had taken the edges of */
	uint64_t remade;       /* nodes made for keys a trim had dropped (its filter's say) */
	uint64_t bans;         /* (node, move) pairs banned for repetition */
	uint64_t invalidated;  /* bounds cleared by changes */
	uint64_t nodes;        /* nodes in memory (thought, unthought, placeholders) */
	uint64_t thought;      /* thought nodes */
	uint64_t edges;        /* edges built */
	uint64_t new_edges;    /* ... of those, given to expanded nodes by results new to the
	                          book (transpositions into them: sel_add_result) */
	uint64_t fetches;      /* lazy mode: LMDB lookups */
	uint64_t fetch_misses; /* ... of those, for keys the book does not hold (the filter's
	                          false positives, and keys of positions deleted since) */
	uint64_t filtered;     /* lazy mode: lookups the key filter spared */
	uint64_t read_ahead;   /* keys handed to the threads that read the book ahead */
	uint64_t ahead_used;   /* ... whose records a search then read (the rest: not needed) */
	uint64_t trims;        /* sel_trim runs that dropped part of the graph */
	uint64_t trimmed;      /* nodes they dropped */
	uint64_t trim_clears;  /* every bound cleared: a change to a node new after a trim */
	/* Results for positions a trim had dropped whose graph nodes above were
	 * found through the dropped positions (sel_g_dropped_result), and walks
	 * that met too many of them (every bound cleared instead). */
	uint64_t walk_ups, walk_gave_up;
	uint64_t
	    trim_slices;   /* sel_trim_slice calls that worked on a trim (sel_trim: one a trim) */
	bool filter_ready; /* lazy mode: the key filter is built */
	bool filter_kept;  /* ... from the keys minimax keeps (not a pass over the book) */
	double filter_ms;  /* ... in this many milliseconds */
	/* The book's keys the filter holds (the book's count as the last call
	 * began; 0 until the filter is in use), and the filters made again as
	 * the book outgrew them (a regrow: fewer than 8 bits a key; one at a
	 * restore that did not read the snapshot's). */
	uint64_t filter_keys, filter_regrows;
	/* Memory held (bytes): the graph (nodes, key map, edges, parent links,
	 * the table of path-dependent bounds, as allocated), record bytes held until their nodes
	 * are expanded, and lazy mode's key filter. The book's pages are LMDB's mapping. */
	uint64_t graph_bytes, record_bytes, filter_bytes;
	/* What sel_trim holds to its budget: the nodes, edges and links in use,
	 * the table of path-dependent bounds, the node map and the key filter (the arrays' room
	 * beyond what is in use is not counted: a trim leaves it for the graph to grow into). */
	uint64_t used_bytes;
	/* What of it is made for the book at the start and does not shrink:
	 * the node map and the key filter (lazy mode; its size to be while
	 * its thread builds it). The graph has the rest of a budget. */
	uint64_t fixed_bytes;
} SelStats;

typedef struct Selector Selector;

/* An empty selector (opt may be NULL: defaults). */
JOSEKI_MUST_USE int sel_new(Selector **out, const SelOptions *opt);
/* Loads every position's key and whether it is thought (one read
 * transaction); a record itself is read when its node is first searched,
 * each public call holding a read transaction while it runs: db must
 * outlive the selector. */
JOSEKI_MUST_USE int sel_load(Selector *s, BookDB *db);
/*
 * Lazy mode instead of sel_load: a position is read from db the first time
 * the selector meets its key (then kept), so the first selection costs only
 * the nodes it visits. Selections, batches and root values then hold a read
 * transaction while they run; db must outlive the selector. Key queries
 * (sel_is_leased) answer for the positions met so far, sel_is_thought also
 * for the book's. A background thread (its own read transaction) builds a
 * filter of the book's keys meanwhile: from keys->keys when it is offered and
 * vouches for every key (minimax's kept graph: about a second less at 15 M
 * positions), else in one pass over the book; keys it rules out skip the
 * LMDB lookup. The first search waits for it. keys may be NULL; the hook is
 * copied, its ctx must outlive the selector.
 */
JOSEKI_MUST_USE int sel_attach(Selector *s, BookDB *db, const BookMinimaxHook *keys);
void sel_free(Selector *s);

/* Adds a root position (key and side to move). Returns its index or an error. */
JOSEKI_MUST_USE int sel_add_root(Selector *s, Key key, Color side);

/*
 * Records a newly thought position (rec with BOOKDB_REC_THOUGHT, its position
 * and evaluated moves) or a new version of one; releases its lease and clears
 * the bounds of its ancestors. A position the graph did not hold as thought
 * becomes the child of each expanded node one move above it that lacked the
 * edge (a move its record does not store: a transposition), as a load now
 * would build it. A record without BOOKDB_REC_THOUGHT makes a
 * thought position a leaf again (its analysis was taken out of the book: the
 * coordinator's spot checks, docs/cluster.md).
 */
JOSEKI_MUST_USE int sel_add_result(Selector *s, Key key, const BookRecord *rec);
/* The same with the record's bytes as the book stores them (len > 0). */
JOSEKI_MUST_USE int sel_add_result_raw(Selector *s, Key key, const uint8_t *val, size_t len);

/* Hands n keys whose records the caller will soon read or write (a batch of
 * results about to be stored) to the threads that read the book ahead, as
 * the searches do with the children they will read next: on a book larger
 * than memory several reads from disk are in flight at once. Nothing is
 * returned, nothing waits; without a book (sel_load, sel_attach) or a
 * selector (s NULL), nothing is done. May be called while a call is suspended. */
void sel_read_ahead(Selector *s, const Key *keys, size_t n);

/* Marks key as being thought about (absent for selection) / no longer. */
JOSEKI_MUST_USE int sel_lease(Selector *s, Key key);
JOSEKI_MUST_USE int sel_release(Selector *s, Key key);
bool sel_is_leased(const Selector *s, Key key);
/* Calls fn(ctx, key) for every node leased (not within a suspended call);
 * stops at fn's first non-zero return, which it returns. */
JOSEKI_MUST_USE int sel_each_leased(const Selector *s, int (*fn)(void *ctx, Key key), void *ctx);
/* True when key is a thought position of the graph. */
bool sel_is_thought(const Selector *s, Key key);

/*
 * Searching in slices. With a yield function, a selection call (sel_select*,
 * sel_root_value) calls fn(ctx) now and then while it runs: every
 * SEL_YIELD_VISITS node visits, before each expansion (a node's moves built,
 * records read) and while it waits for the key filter. fn may keep the search
 * suspended as long as it likes, typically handing the selector to another
 * thread meanwhile (one thread at a time), which may then call only
 * sel_add_result, sel_lease, sel_release, sel_is_thought, sel_is_leased,
 * sel_read_ahead and sel_get_stats. The first three are kept and applied in order when the call
 * returns: the search sees the graph as it was when it began, the queries
 * answer with the kept changes. So a search in slices selects what the same
 * search run at once at its start would. fn returning true stops the search:
 * the call returns SEL_ESTOPPED, the bounds it was computing forgotten (those
 * it finished are kept). fn NULL: none (the default).
 */
#define SEL_YIELD_VISITS 32
typedef bool (*SelYieldFn)(void *ctx);
void sel_set_yield(Selector *s, SelYieldFn fn, void *ctx);

/*
 * Changes held: with on, sel_add_result, sel_lease and sel_release are kept
 * as during a suspended search (the queries answer with them), and the
 * graph is not written by them, until sel_hold(s, false) applies them in
 * order (or the end of a search under way then does). A search meanwhile
 * sees the graph without them. For a forked child's copy on write
 * (cluster/coord_ckpt.c): each graph page the parent writes while the child
 * lives is copied, and a result's invalidation walk writes many. 0, or the
 * first error applying them (off).
 */
int sel_hold(Selector *s, bool on);

/*
 * Selects the next leaf: returns 1 and fills out, or 0 when no root has a
 * selectable leaf (everything thought, leased or banned). Roots are taken in
 * turn. Does not lease the leaf (the caller does, when it sends it).
 */
JOSEKI_MUST_USE int sel_select(SelLeaf *out, Selector *s);

/*
 * Sets pos to the leaf: root_sfen (the SFEN of the leaf's root, as given to
 * sel_add_root) and the leaf's moves, each checked to be legal. Returns 0, or
 * SEL_EINVAL when the SFEN does not parse or a move is illegal (a leaf of
 * another root); pos is then unspecified.
 */
JOSEKI_MUST_USE int sel_leaf_position(Position *pos, const char *root_sfen, const SelLeaf *leaf);

/*
 * Every selectable leaf within window centipawns (see SelBatchMode) of the
 * best line of each root, closest to the root value first, distinct, none
 * thought or leased; at most max. book_side: the side restricted to its best
 * moves in SEL_BATCH_SQRT (-1: each root's side to move). Returns the count.
 */
JOSEKI_MUST_USE int sel_select_batch(SelLeaf *out, size_t max, Selector *s, int window,
                                     SelBatchMode mode, int book_side);

/* sel_select_batch for root r alone (0 <= r < sel_nroots). */
JOSEKI_MUST_USE int sel_select_batch_root(SelLeaf *out, size_t max, Selector *s, int r, int window,
                                          SelBatchMode mode, int book_side);

/*
 * The SEL_BATCH_COVER batch of root r, walking to the depth where `want`
 * leaves are found and keeping every leaf of that depth and above (shallowest
 * first), at most max: a caller that hands leaves out one at a time searches
 * once a level rather than once every `want` leaves.
 */
JOSEKI_MUST_USE int sel_select_cover(SelLeaf *out, size_t max, size_t want, Selector *s, int r,
                                     int window, int book_side);

/* sel_select for root r alone: 1 (out filled), 0 (nothing selectable), or an error. */
JOSEKI_MUST_USE int sel_select_root(SelLeaf *out, Selector *s, int r);

/* Roots added so far. */
JOSEKI_MUST_USE int sel_nroots(const Selector *s);

/* Value of root r from its side to move (full search); *has_leaf false when
 * nothing is selectable below it. */
JOSEKI_MUST_USE int sel_root_value(int *value, bool *has_leaf, Selector *s, int r);
/* Whether root r is a thought position (its value then comes from analyses;
 * an unthought root is itself the leaf, valued 0 by sel_root_value). */
bool sel_root_thought(const Selector *s, int r);

void sel_get_stats(SelStats *out, const Selector *s);

/*
 * Keeps a lazy selector's memory within budget bytes: its key filter and
 * node map (made for the book's size when it attached) and its graph (nodes,
 * edges, parent links: what grows). Past the budget, the nodes least recently
 * visited lose their edges (a thought one keeps its bound, and is built
 * again from the book when a search needs more than that) and what no kept
 * node leads to is dropped, until the graph takes about half of what the
 * filter and the map leave. The bounds stay exact, the graph being a cache
 * of the book, but in one rare case (a position dropped from below an
 * edgeless node, met again by another path, then changed: docs/bookgen.md,
 * "Known limits" and "The graph within a budget"). Call it
 * between calls, and only when every result given to sel_add_result is in
 * the book as a new read transaction sees it (committed): a node built again
 * reads its record from the book. Nothing happens within a suspended call or
 * for a selector that is not lazy. Returns the nodes dropped (0: nothing to
 * do), or SEL_ENOMEM (the graph unchanged).
 */
int64_t sel_trim(Selector *s, uint64_t budget);
/*
 * sel_trim in slices of about ms milliseconds (ms < 0: at once), for a
 * caller whose thread also answers requests: a trim's passes over the graph
 * (which nodes stay, where they go, the links past dropped ones) are made
 * over as many calls as they take; its last call moves the graph down at
 * once. From the first slice to the last the graph does not change: results,
 * leases and releases are kept and the queries answer with them, as under
 * sel_hold, and applied in order when it ends (a hold on then keeps them on);
 * a search (any selection call, a snapshot) finishes the trim first. A trim
 * begins only where sel_trim would run (between calls, nothing held or kept).
 * Returns the nodes dropped by a trim that ended in this call (0: none ended,
 * or it dropped nothing), SEL_ENOMEM (the trim given up for want of memory,
 * the graph as it was), or the first error applying the changes kept.
 */
int64_t sel_trim_slice(Selector *s, uint64_t budget, double ms);
/* Whether a trim is under way (sel_trim_slice). */
bool sel_trimming(const Selector *s);

/* The budget s will be trimmed to (bytes; 0: none given), set before
 * sel_attach: the node map made there is then at most a 128th of it, in
 * nodes (16 bytes a node: an eighth of it), not of the process's budget
 * (bigmem_budget, else memuse_default_budget), so that a small budget
 * leaves the graph room. */
void sel_set_memory(Selector *s, uint64_t budget);
/* The key filter's bytes for a book of count positions (lazy mode: 16 to 32
 * bits a key, in a power of two of 64-byte blocks). */
size_t sel_filter_bytes(uint64_t count);

/* Lazy mode: with defer set before sel_attach, the thread that builds the
 * key filter is not started there but by sel_start_filter, or by the first
 * search that needs it: a caller with reads of its own to make at its start
 * (the coordinator's work state) has the disk to itself meanwhile. */
void sel_defer_filter(Selector *s, bool defer);
void sel_start_filter(Selector *s);

/*
 * The key filter, read on another thread (a walk of the book beside the
 * selector: the coordinator's provisional leaves). Once built and taken in
 * by a search (lazy mode), every key of the book passes it: a key it turns
 * away is not in the book (but for a result added while a call is
 * suspended, kept until the call returns). The selector's thread only ever
 * adds keys to it, word by word, and the reader loads the words one at a
 * time: a key added meanwhile may pass or not, none that was there fails.
 * It lives as long as the selector, but a book that outgrows it gets a new
 * one (SelStats.filter_regrows), which alone is added to from then on: the
 * reader asks again (a new *f) now and then. sel_key_filter, called on the
 * selector's thread (or while its call is suspended): false, *f zeroed,
 * when there is none yet (not lazy, not built, not yet taken in).
 */
typedef struct {
	const uint64_t *words;
	uint64_t blocks; /* blocks - 1: the mask of a key's block number */
} SelKeyFilter;
bool sel_key_filter(const Selector *s, SelKeyFilter *f);
/* Whether k may be in the book (f from sel_key_filter: any thread). */
bool sel_key_filter_maybe(const SelKeyFilter *f, Key k);
/* Frees the filters a regrow replaced, which the selector keeps for readers
 * of sel_key_filter's on other threads (SelStats.filter_bytes and
 * fixed_bytes count them until then): for the caller once no such reader
 * may read one any more (it has the filter in use since). On the
 * selector's thread. */
void sel_free_retired(Selector *s);

/* Forgets every stored bound (the next selection searches from scratch): for
 * checking the incremental bounds against a full search, and after changes
 * made behind the selector's back. */
void sel_clear_bounds(Selector *s);

#endif
