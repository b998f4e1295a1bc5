/*
 * minimax/petashock_priv.h — what peta-shock's three files share: the graph,
 * the run and its parts (petashock_graph.c: the graph passes, i.e. records as
 * nodes, transposition edges, a node with its backed-up values written out;
 * petashock.c: the parallel driver, i.e. parts, threads, joins, warnings,
 * temporary files, petashock_run; petashock_disk.c: the edges found by a join
 * on disk past the memory budget). Not for use outside minimax/.
 */
#ifndef MINIMAX_PETASHOCK_PRIV_H
#define MINIMAX_PETASHOCK_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "minimax/graph.h"
#include "minimax/petashock.h"
#include "shogi/errmsg.h"
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
	size_t left_out;     /* edges the book's rules left out (PetashockOptions.book_rules) */
	uint64_t seen[1024]; /* scratch bitmap over 16-bit moves, kept all zero */
} EdgeBuf;

typedef struct {
	Move move;
	Vd vd;
} OutMove;

/* ---- the driver's run and parts (minimax/petashock.c) -------------------- */

#define PS_MAX_PARTS 8
#define PS_PART_MIN_BYTES (4u << 20) /* automatic: a part per 4 MiB at most */
#define PS_WARN_KEEP 10000           /* warnings a part keeps word for word */
#define PS_PROGRESS_EVERY 65536      /* records between progress calls (part 0's) */

typedef struct {
	char **msg;
	size_t n, cap;
	size_t dropped; /* further warnings, counted only */
} WarnBuf;

struct PsRun;
typedef struct PsDisk PsDisk;         /* the edges found on disk (petashock_disk.c) */
typedef struct PsPartDisk PsPartDisk; /* a part's share of it */

typedef struct {
	struct PsRun *run;
	int k;
	uint64_t start, end; /* bytes of the file */
	long first_line;
	size_t first_ordinal; /* of its first "sfen" line in the file */
	size_t node0, n;      /* its nodes: node0 .. node0 + n - 1 */
	size_t skip0;         /* its first entry in the run's skip list */
	int rc;
	char err[256];
	Position *tmp, *tmp2;
	/* pass 1 */
	NodeBuf nb;
	size_t *skip, nskip, skip_cap; /* ordinals (counted from the part) of bad records */
	size_t sfen_lines, warnings;
	WarnBuf wb;
	/* pass 2 */
	EdgeBuf eb;
	PsPartDisk *disk; /* on disk: its buffers and its edges' reader */
	/* pass 3 */
	FILE *out;
} PsPart;

/* One run's state, shared by its passes. */
typedef struct PsRun {
	const char *in_path, *out_path;
	const PetashockOptions *opt;
	char *err;
	size_t errlen;
	PetashockStats st;
	Graph g;
	int nparts;
	PsPart part[PS_MAX_PARTS];
	/* Ordinals of records the reader skipped (bad SFEN) in pass 1, skipped
	 * again by ordinal in the passes that do not parse. */
	size_t *skip, nskip;
	unsigned buckets; /* pass 2 on disk in this many buckets of keys; 0: in memory */
	PsDisk *disk;
} PsRun;

#define ps_fail errmsg_set
#define ps_part_fail(pt, code, ...)                                                                \
	((pt)->rc = ps_fail((pt)->err, sizeof(pt)->err, code, __VA_ARGS__))

/* Runs fn on every part, part 0 in this thread, the others in their own. */
void ps_run_parts(PsRun *p, void *(*fn)(void *));
/* The first failing part's error as the run's, or 0. */
int ps_parts_failed(PsRun *p);
/* Calls fn on each record of the part that pass 1 kept as a node, with the
 * node's index; stops at fn's first failure (fn sets pt->rc). */
void ps_part_each(PsPart *pt, const char *phase,
                  int (*fn)(PsPart *pt, uint32_t i, const Db2016Record *rec, void *ctx), void *ctx);
/* The record's position as the node holds it (Black to move): *bpos is
 * pt->tmp or pt->tmp2. 0, or the part's failure (the input changed). */
int ps_black_position(PsPart *pt, const Db2016Record *rec, const Position **bpos);
/* Progress of the run (part 0 only). */
void ps_report(const PsRun *p, const char *phase, size_t done);

/* ---- pass 2 on disk (minimax/petashock_disk.c) ------------------------------ */

/* The buckets pass 2 takes on disk for n keys within budget bytes (0: it
 * runs in memory, the key map fitting). */
unsigned ps_disk_buckets(size_t n, uint64_t budget);
/* Finds every node's edges by a join on disk (the key map never made):
 * afterwards ps_disk_edges gives each part its nodes' moves. 0 or the
 * run's failure. */
int ps_disk_join(PsRun *p);
/* Pass 2 of one part from the join's edges (run by ps_run_parts). */
void *ps_disk_part_edges(void *arg);
void ps_disk_free(PsRun *p);

/* ---- the graph passes (minimax/petashock_graph.c) ----------------------------- */

void ps_nodebuf_free(NodeBuf *b);
void ps_graph_free(Graph *g);
/* The position rotated 180°, colours, hands and side to move swapped. */
int ps_flip_position(Position *out, const Position *in);
/* Pass 1: record rec as the next node of b. 0 or PETASHOCK_ENOMEM. */
int ps_add_node(NodeBuf *b, const Db2016Record *rec);
/* keymap_put of keys[0..n-1] in order (a later duplicate wins). 0 or -1. */
int ps_put_all(KeyMap *m, const Key *keys, size_t n);
/* Pass 2: node i's moves (real: its record's position; bpos: its
 * Black-to-move form) into eb. 0 or PETASHOCK_ENOMEM. */
int ps_add_edges(const Graph *g, const PetashockOptions *opt, uint32_t i, const Position *real,
                 const Position *bpos, EdgeBuf *eb);
/* Whether opt's book rules (book_rules) leave out node i's move m (in bpos's
 * form) as an edge: not listed in the input, and avoided, or a declined
 * promotion (PetashockOptions). real, bpos: as ps_add_edges; legal[0..n)
 * bpos's legal moves. */
bool ps_left_out(const Graph *g, const PetashockOptions *opt, uint32_t i, const Position *real,
                 const Position *bpos, const Move *legal, int n, Move m);

/* An edge of a node: the move, the child node; rank: scratch for the
 * ordering. */
typedef struct {
	uint32_t rank;
	Move move;
	uint32_t next;
} EdgeCand;

/* m's place in order[0..no), YaneuraOu's legal-move list (yo_legal_order),
 * which lists every legal move once: a node's edges go out in this order. */
static inline int ps_yo_place(const Move *order, int no, Move m)
{
	int at = 0;
	while (at < no && order[at] != m) at++;
	return at;
}

/* Node i's moves into eb: its edges cand[0..ne) (put in YaneuraOu's order
 * here: bpos, legal[0..n) are its position and legal moves, only read when
 * ne >= 2; bpos NULL: cand is in that order already), then its listed moves
 * that are not edges, as leaves. 0 or PETASHOCK_ENOMEM. */
int ps_put_moves(const Graph *g, uint32_t i, const Position *bpos, const Move *legal, int n,
                 EdgeCand *cand, int ne, EdgeBuf *eb);
/* Pass 3: node i with its backed-up values to f (buf: room for its moves).
 * 0 or PETASHOCK_EIO. */
int ps_write_node(FILE *f, const Graph *g, uint32_t i, const char *sfen, size_t sfen_len,
                  bool shrink, OutMove *buf);

#endif
