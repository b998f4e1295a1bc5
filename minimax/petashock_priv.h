/*
 * minimax/petashock_priv.h — what peta-shock's two files share: the graph and
 * the per-part buffers (petashock_graph.c: the graph passes, i.e. records as
 * nodes, transposition edges, a node with its backed-up values written out;
 * petashock.c: the parallel driver, i.e. parts, threads, joins, warnings,
 * temporary files, petashock_run). Not for use outside minimax/.
 */
#ifndef MINIMAX_PETASHOCK_PRIV_H
#define MINIMAX_PETASHOCK_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "minimax/graph.h"
#include "minimax/petashock.h"
#include "shogi/keymap.h"
#include "shogi/position.h"

#define PS_DEPTH_PCHECK MM_DEPTH_PCHECK
#define PS_NONE MM_NONE

/* F_WHITE: the record was White to move (the node is its Black-to-move
 * form, so the core's MM_F_WHITE is never set and both draw values are 0). */
enum { F_WHITE = 0x01, F_CHECKED = MM_F_CHECKED, F_LOOP = MM_F_LOOP };

typedef MmVd Vd;
typedef MmMove PsMove; /* move in the node's Black-to-move form */

typedef struct {
	uint16_t move;
	int16_t value;
} PsLeaf;

/* Phase 1's per-node arrays, filled by one part of the file. */
typedef struct {
	size_t n, cap;
	MmFlags *flags;
	uint32_t *lstart; /* leaves of node i are leaves[lstart[i]..lstart[i+1]) */
	Key *keys;        /* White-to-move key of each node */
	PsLeaf *leaves;
	size_t nleaves, leaves_cap;
} NodeBuf;

typedef struct {
	MmGraph m;        /* nodes and moves: the shared core (minimax/graph.h) */
	uint32_t *lstart; /* phase 1: leaves of node i are leaves[lstart[i]..lstart[i+1]) */
	PsLeaf *leaves;
	Key *keys;  /* White-to-move key of each node (while the map lives) */
	KeyMap map; /* keys[i] -> i (filtered once built) */
} Graph;

/* One part's moves (phase 2): node i's go to moves[..], and g->m.mstart[i + 1]
 * is the part's count so far (made global at the merge). */
typedef struct {
	MmMove *moves;
	size_t n, cap;
	size_t converged;    /* edges not listed in the input */
	uint64_t seen[1024]; /* scratch bitmap over 16-bit moves, kept all zero */
} EdgeBuf;

typedef struct {
	Move move;
	Vd vd;
} OutMove;

void ps_nodebuf_free(NodeBuf *b);
void ps_graph_free(Graph *g);
/* The position rotated 180°, colours, hands and side to move swapped. */
int ps_flip_position(Position *out, const Position *in);
/* Pass 1: record rec as the next node of b. 0 or PETASHOCK_ENOMEM. */
int ps_add_node(NodeBuf *b, const Db2016Record *rec);
/* keymap_put of keys[0..n-1] in order (a later duplicate wins). 0 or -1. */
int ps_put_all(KeyMap *m, const Key *keys, size_t n);
/* Pass 2: node i's moves (bpos: its Black-to-move position) into eb. 0 or
 * PETASHOCK_ENOMEM. */
int ps_add_edges(const Graph *g, uint32_t i, const Position *bpos, EdgeBuf *eb);
/* Pass 3: node i with its backed-up values to f (buf: room for its moves).
 * 0 or PETASHOCK_EIO. */
int ps_write_node(FILE *f, const Graph *g, uint32_t i, const char *sfen, size_t sfen_len,
                  bool shrink, OutMove *buf);

#endif
