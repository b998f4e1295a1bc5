/*
 * minimax/graph.h — the back-up core shared by peta-shock (DB2016 files) and
 * book minimax (joseki minimax): a graph of nodes and moves in flat arrays, a
 * key → node hash, and the backward analysis of docs/minimax.md (acyclic
 * peel, perpetual-check loop extraction, in-place relaxation from the draw
 * value, the (value, depth) comparison with the 9997/9998/9999 depths).
 *
 * A node's vd is always its value and depth *as seen by its parent* (the side
 * that moved into it). Callers fill n, flags (MM_F_CHECKED, MM_F_WHITE) and
 * either the moves form (mstart and moves) or the analysis form (estart, edge,
 * leaf and MM_F_LEAF), then call mm_backup.
 */
#ifndef MINIMAX_GRAPH_H
#define MINIMAX_GRAPH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shogi/zobrist.h"
#include "shogi/errors.h"

#define MM_VALUE_INF 32767 /* beyond any clamped value */
#define MM_VALUE_MAX 32000
#define MM_DEPTH_MAX 9999      /* "repeats forever" */
#define MM_DEPTH_PCHECKED 9998 /* perpetual check, seen from the checked side */
#define MM_DEPTH_PCHECK 9997   /* perpetual check, seen from the checking side */
#define MM_MAX_PLY 256         /* peel and loop-extraction sweeps; relax depth cap */
#define MM_RELAX_SWEEPS (MM_MAX_PLY + 100)
#define MM_NONE UINT32_MAX

/* Node flags owned by the core; bit 0x01 is left to callers. */
typedef uint16_t MmFlags;
enum {
	MM_F_CHECKED = 0x02,  /* side to move is in check */
	MM_F_LOOP = 0x04,     /* on a perpetual-check loop */
	MM_F_CONST = 0x08,    /* settled by the acyclic peel */
	MM_F_PATH = 0x10,     /* on the current depth-first path */
	MM_F_SURVIVOR = 0x20, /* in-check node surviving loop extraction */
	MM_F_WHITE = 0x40,    /* White to move in the node (for the draw values) */
	MM_F_FROZEN = 0x80,   /* vd and flags given (a boundary node): not analysed */
	/* Set by mm_backup on a frozen node that the analysis would have put on a
	 * perpetual-check loop (a survivor above it, one below): its given flags
	 * are out of date, so the caller must analyse it as well. */
	MM_F_STALE = 0x100,
	MM_F_LEAF = 0x200, /* the analysis form: leaf[i] is the node's best leaf */
};

typedef struct {
	int16_t value;
	uint16_t depth;
} MmVd;

/* One move of a node: an edge (next is a node) or a leaf (value, depth 0). */
typedef struct {
	uint16_t move;
	int16_t value; /* leaf value (unused for edges) */
	uint32_t next; /* child node, or MM_NONE for a leaf */
} MmMove;

typedef struct {
	size_t n;
	MmFlags *flags;
	MmVd *vd;
	/* The moves form: moves of node i are moves[mstart[i]..mstart[i+1]). */
	uint32_t *mstart;
	MmMove *moves;
	size_t nmoves, moves_cap;
	/*
	 * The analysis form, all the analysis reads: node i's edges are its
	 * children edge[estart[i]..estart[i+1]) (in its moves' order), and of its
	 * leaves only the best counts (the order of moves never changes which
	 * (value, depth) is best): leaf[i], when flags[i] has MM_F_LEAF. 6 bytes a
	 * node and 4 an edge, where the moves form takes 4 a node and 8 a move.
	 * When edge is NULL mm_backup makes it from the moves form for the run
	 * (and frees it after).
	 */
	uint32_t *estart, *edge;
	int16_t *leaf;
	/* May be NULL: the order in which a cycle's nodes are relaxed, rank[i]
	 * for node i (a caller that numbered the nodes for the analysis's sake
	 * gives their own order, so that the values do not depend on it); NULL:
	 * index order. */
	const uint32_t *rank;
	/* Value of a repetition for the side to move, Black and White (0 for
	 * peta-shock; with 0/0 the analysis is exactly YaneuraOu's). */
	int16_t draw[2];
	/* Emulate the reference's peel exactly: only what 256 in-place sweeps
	 * in index order settle counts as const (peta-shock). */
	bool yo_peel;
	/* May be NULL: when it turns true, mm_backup ends early (MM_STOPPED). */
	const atomic_bool *stop;
} MmGraph;

typedef struct {
	size_t const_nodes; /* settled by the acyclic peel */
	size_t check_loop1; /* in-check nodes on perpetual-check loops */
	size_t check_loop2; /* all nodes on perpetual-check loops */
	int peel_sweeps;
	int relax_sweeps;
	/* Cycles whose last relaxation sweep (MM_RELAX_SWEEPS) still changed a
	 * value, and their nodes: values that turn round a cycle without end
	 * (the one seen has perpetual-check loop nodes among its own), left as
	 * that sweep left them; YaneuraOu's peta-shock stops at the same cap. */
	size_t unsettled_cycles, unsettled_nodes;
} MmStats;

/* "a is better than b" for the side choosing between two moves (§7.7). */
static inline bool mm_vd_better(MmVd a, MmVd b)
{
	if (a.value != b.value) return a.value > b.value;
	if (a.depth == MM_DEPTH_PCHECK) return false;
	if (b.depth == MM_DEPTH_PCHECK) return true;
	if (a.value >= 0) return a.depth < b.depth;
	return a.depth > b.depth;
}

static inline MmVd mm_move_vd(const MmGraph *g, const MmMove *m)
{
	if (m->next == MM_NONE) {
		MmVd v = {m->value, 0};
		return v;
	}
	return g->vd[m->next];
}

/* Gives node i of the analysis form a leaf worth v (its best leaf is the
 * largest). */
static inline void mm_leaf_add(MmGraph *g, uint32_t i, int16_t v)
{
	if (!(g->flags[i] & MM_F_LEAF) || v > g->leaf[i]) g->leaf[i] = v;
	g->flags[i] |= MM_F_LEAF;
}

/* Appends a move to g->moves; 0 or -1 (out of memory). */
JOSEKI_MUST_USE int mm_push_move(MmGraph *g, MmMove m);

/* Runs the analysis (check loops, then each strongly connected component as
 * the search completes it, children first); allocates g->vd if NULL.
 * Returns 0, -1 (out of memory) or MM_STOPPED (g->stop set: the values are
 * then partial). Precondition: a frozen node (MM_F_FROZEN) is never on a
 * cycle with unfrozen nodes: every strongly connected component is frozen
 * whole or not at all (the incremental run freezes only the children of its
 * analysed set, whose components it analyses whole); otherwise a frozen value
 * may be overwritten or an unfrozen one left unset. */
#define MM_STOPPED (-2)
JOSEKI_MUST_USE int mm_backup(MmGraph *g, MmStats *st);

/* Frees the arrays, both forms (not g itself). */
void mm_graph_free(MmGraph *g);

/* Frees the analysis form alone (the values, flags and moves stay). */
void mm_graph_free_edges(MmGraph *g);

/* Strongly connected components, children first; count, -1, or MM_STOPPED
 * (g->stop turned true). */
long mm_scc(const MmGraph *g, uint32_t *comp);

#endif
