/*
 * minimax/petashock.c — YaneuraOu's "makebook peta_shock" over a compact graph.
 *
 * Every step reproduces the observable behaviour of the reference command
 * (YaneuraOu 9.80, docs/peta-shock.md), because its output is what users
 * compare against byte for byte:
 *   1. read: one node per record, stored as if Black were to move (a White
 *      record is colour-flipped, its moves too); the key map holds the
 *      White-to-move form of each record, later records overriding earlier
 *      ones with the same key; values clamped to ±32000, depths dropped;
 *   2. edges: every legal move whose child key is in the map, in (an
 *      approximation of) YaneuraOu's generation order, then the listed moves
 *      that are not edges, as leaves, in file order;
 *   3. peel: up to 256 in-place sweeps settle nodes whose moves are all leaves
 *      or settled nodes ("const" nodes);
 *   4. check loops: in-check nodes with no in-check node two plies ahead are
 *      discarded until none is (up to 256 sweeps); the survivors and the nodes
 *      between two of them are the check-loop nodes;
 *   5. start values: other unsettled nodes (0, 9999); check-loop nodes
 *      (∓32000, 9999) as seen by their parent;
 *   6. relax: up to 356 in-place sweeps over the unsettled non-loop nodes,
 *      each followed by a path-aware depth-first walk from every loop node,
 *      stopping after the first sweep that changes nothing;
 *   7. write in input order, moves sorted best first.
 * A node's vd is always the value and depth *as seen by its parent*.
 */
#include "minimax/petashock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "minimax/graph.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

#define PS_DEPTH_PCHECK MM_DEPTH_PCHECK
#define PS_NONE MM_NONE
#define YO_LIST_MAX 1024 /* pseudo-legal moves of a position, with room to spare */

/* F_WHITE: the record was White to move (the node is its Black-to-move
 * form, so the core's MM_F_WHITE is never set and both draw values are 0). */
enum { F_WHITE = 0x01, F_CHECKED = MM_F_CHECKED, F_LOOP = MM_F_LOOP };

typedef MmVd Vd;
typedef MmMove PsMove; /* move in the node's Black-to-move form */

typedef struct {
	uint16_t move;
	int16_t value;
} PsLeaf;

typedef struct {
	MmGraph m; /* nodes and moves: the shared core (minimax/graph.h) */
	size_t cap;
	uint32_t *lstart; /* phase 1: leaves of node i are leaves[lstart[i]..lstart[i+1]) */
	PsLeaf *leaves;
	size_t nleaves, leaves_cap;
	Key *keys;           /* White-to-move key of each node (while the map lives) */
	uint64_t seen[1024]; /* scratch bitmap over 16-bit moves, kept all zero */
	KeyMap map;          /* keys[i] -> i (filtered once built) */
} Graph;

static void graph_free(Graph *g)
{
	mm_graph_free(&g->m);
	free(g->lstart);
	free(g->leaves);
	free(g->keys);
	keymap_free(&g->map);
}

const char *petashock_strerror(int code)
{
	switch (code) {
	case PETASHOCK_OK:
		return "success";
	case PETASHOCK_EIO:
		return "I/O error";
	case PETASHOCK_ENOMEM:
		return "out of memory";
	case PETASHOCK_ECHANGED:
		return "input changed while reading";
	default:
		return "unknown error";
	}
}

#define fail errmsg_set

#define PS_PROGRESS_EVERY 65536

static void report(const PetashockOptions *opt, const char *phase, size_t done)
{
	if (opt && opt->progress) opt->progress(opt->progress_ctx, phase, done);
}

/* ---- colour flip ---------------------------------------------------------- */

/* The position rotated 180°, colours, hands and side to move swapped. */
static int flip_position(Position *out, const Position *in)
{
	Piece board[SQ_NB];
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = in->board[sq];
		board[SQ_NB - 1 - sq] = p == PIECE_NONE
		                            ? PIECE_NONE
		                            : piece_make(color_flip(piece_color(p)), piece_type(p));
	}
	Hand hand[COLOR_NB] = {in->hand[WHITE], in->hand[BLACK]};
	return pos_set(out, board, hand, color_flip(in->side), in->game_ply, NULL);
}

static Move flip_move(Move m)
{
	if (m == MOVE_NONE) return m;
	if (move_is_drop(m)) return move_make_drop(move_drop_type(m), SQ_NB - 1 - move_to(m));
	return move_make(SQ_NB - 1 - move_from(m), SQ_NB - 1 - move_to(m), move_is_promote(m));
}

/* ---- pass 1: records, keys, listed moves ----------------------------------- */

/*
 * The key of the position colour-flipped (zobrist.h's definition applied to
 * the flipped board, hands and side), without building the flipped position.
 */
static Key flipped_key(const Position *pos)
{
	Key board = {0, 0}, hand = {0, 0};
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = pos->board[sq];
		if (p == PIECE_NONE) continue;
		Piece f = piece_make(color_flip(piece_color(p)), piece_type(p));
		board = key_xor(board, ZOB_PSQ[f][SQ_NB - 1 - sq]);
	}
	if (color_flip(pos->side) == WHITE) board = key_xor(board, ZOB_SIDE);
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++) {
			uint64_t n = (uint64_t)hand_count(pos->hand[c], (PieceType)pt);
			Key z = ZOB_HAND[c ^ 1][pt];
			hand.lo += n * z.lo;
			hand.hi += n * z.hi;
		}
	return key_combine(board, hand);
}

static int add_node(Graph *g, const Db2016Record *rec)
{
	if (g->m.n + 2 > g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 1024;
		MmFlags *f = realloc(g->m.flags, nc * sizeof *f);
		if (!f) return PETASHOCK_ENOMEM;
		g->m.flags = f;
		uint32_t *ls = realloc(g->lstart, (nc + 1) * sizeof *ls);
		if (!ls) return PETASHOCK_ENOMEM;
		g->lstart = ls;
		Key *k = realloc(g->keys, nc * sizeof *k);
		if (!k) return PETASHOCK_ENOMEM;
		g->keys = k;
		g->cap = nc;
	}
	const Position *pos = rec->pos;
	bool white = pos->side == WHITE;
	uint32_t i = (uint32_t)g->m.n++;
	/* The map is keyed by the White-to-move form, which is what a move from
	 * a (Black-to-move) node leads to. */
	g->keys[i] = white ? pos_key(pos) : flipped_key(pos);
	int rc = keymap_put(&g->map, g->keys, i) < 0 ? PETASHOCK_ENOMEM : 0;
	if (rc < 0) return rc;
	g->m.flags[i] = (MmFlags)((white ? F_WHITE : 0) | (pos_in_check(pos) ? F_CHECKED : 0));
	g->lstart[i] = (uint32_t)g->nleaves;
	rc = (array_grow((void **)&g->leaves, &g->leaves_cap, g->nleaves + rec->nmoves,
	                 sizeof *g->leaves, 1024)
	          ? PETASHOCK_ENOMEM
	          : 0);
	if (rc < 0) return rc;
	for (size_t k = 0; k < rec->nmoves; k++) {
		const Db2016Move *m = &rec->moves[k];
		if (m->move == MOVE_NONE) continue;
		int32_t v = value_clamp(m->value);
		PsLeaf l = {white ? flip_move(m->move) : m->move, (int16_t)v};
		g->leaves[g->nleaves++] = l;
	}
	g->lstart[i + 1] = (uint32_t)g->nleaves;
	return 0;
}

/* ---- pass 2: transposition edges ------------------------------------------------ */

/*
 * Rank of a move in YaneuraOu's generation order, which decides the order of
 * moves tying on (value, depth) in the output: evasions start with king moves;
 * then pawns, lances, knights, silvers, bishops and rooks together, then
 * gold-like pieces, horses, dragons and the king together, each group by
 * origin then destination square, promotion first; drops last (pawn drops
 * first). (YaneuraOu then removes illegal moves by swapping in the last one,
 * which this does not imitate.)
 */
static uint32_t gen_rank(const Position *pos, Move m, bool in_check)
{
	static const uint8_t GROUP[PT_NB] = {
	    [PAWN] = 1,       [LANCE] = 2, [KNIGHT] = 3,   [SILVER] = 4,    [BISHOP] = 5,
	    [ROOK] = 5,       [GOLD] = 6,  [PRO_PAWN] = 6, [PRO_LANCE] = 6, [PRO_KNIGHT] = 6,
	    [PRO_SILVER] = 6, [HORSE] = 6, [DRAGON] = 6,   [KING] = 6,
	};
	if (move_is_drop(m)) {
		/* Pawn drops by square; then the other drops to the far rank, to the
		 * next rank, then to the rest, each by square, knight, lance, silver,
		 * gold, bishop, rook at a square. */
		static const uint8_t DROP_ORDER[HAND_PT_NB] = {
		    [KNIGHT] = 0, [LANCE] = 1, [SILVER] = 2, [GOLD] = 3, [BISHOP] = 4, [ROOK] = 5,
		};
		PieceType pt = move_drop_type(m);
		Square to = move_to(m);
		if (pt == PAWN) return 7u << 24 | (uint32_t)to << 8;
		uint32_t band = sq_rank(to) < 2 ? (uint32_t)sq_rank(to) : 2;
		return (8u + band) << 24 | (uint32_t)to << 8 | DROP_ORDER[pt];
	}
	PieceType pt = piece_type(pos->board[move_from(m)]);
	uint32_t group = (in_check && pt == KING) ? 0 : GROUP[pt];
	return group << 24 | (uint32_t)move_from(m) << 16 | (uint32_t)move_to(m) << 8 |
	       (move_is_promote(m) ? 0u : 1u);
}

typedef struct {
	uint32_t rank;
	Move move;
	uint32_t next;
} EdgeCand;

/* Pseudo-legal moves of one piece as YaneuraOu generates them: targets by
 * square, the promotion before the non-promotion. Black to move. */
static int yo_piece_moves(Move *out, int n, PieceType pt, Square from, Bitboard targets)
{
	while (bb_any(targets) && n < YO_LIST_MAX - 2) {
		Square to = bb_pop(&targets);
		if (pt_can_promote(pt) && (sq_in_zone(BLACK, from) || sq_in_zone(BLACK, to)))
			out[n++] = move_make(from, to, true);
		int r = sq_rank(to);
		bool plain = (pt == PAWN || pt == LANCE) ? r != 0 : pt == KNIGHT ? r >= 2 : true;
		if (plain) out[n++] = move_make(from, to, false);
	}
	return n;
}

/*
 * The order of YaneuraOu's MoveList<LEGAL_ALL> for a Black-to-move position:
 * its pseudo-legal list (evasions: king moves avoiding the checkers' attacks,
 * then captures and interpositions; otherwise every piece), each illegal move
 * replaced by the list's last move, as its generator does. Drops are taken as
 * always legal and in gen_rank's order. Legal moves the emulation misses are
 * appended. seen is a 65536-bit scratch bitmap, all zero on entry and exit.
 */
static int yo_legal_order(Move *out, const Position *pos, const Move *legal, int nl, uint64_t *seen)
{
	static const PieceType GROUPS[6][8] = {
	    {PAWN},
	    {LANCE},
	    {KNIGHT},
	    {SILVER},
	    {BISHOP, ROOK},
	    {GOLD, PRO_PAWN, PRO_LANCE, PRO_KNIGHT, PRO_SILVER, HORSE, DRAGON, KING},
	};
	Move ps[YO_LIST_MAX];
	int n = 0;
	Bitboard own = pos->by_color[BLACK];
	Bitboard target = bb_not(own);
	Square ksq = pos->king_sq[BLACK];
	bool check = pos_in_check(pos), moves_too = true;
	if (check && ksq != SQ_NONE) {
		Bitboard checkers = pos_st(pos)->checkers, slider = bb_make(0, 0);
		Bitboard occ = bb_andnot(pos->occupied, SQ_BB[ksq]);
		int cnt = 0;
		Square csq = SQ_NONE;
		while (bb_any(checkers)) {
			csq = bb_pop(&checkers);
			cnt++;
			slider = bb_or(slider, bb_piece_attacks(pos->board[csq], csq, occ));
		}
		n = yo_piece_moves(ps, n, KING, ksq, bb_andnot(KING_ATK[ksq], bb_or(own, slider)));
		moves_too = cnt == 1;
		if (moves_too) target = bb_or(BETWEEN_BB[csq][ksq], SQ_BB[csq]);
	}
	for (int gi = 0; gi < 6 && moves_too; gi++) {
		Bitboard from_bb = bb_make(0, 0);
		for (int k = 0; k < 8 && GROUPS[gi][k]; k++) {
			if (check && GROUPS[gi][k] == KING) continue;
			from_bb = bb_or(from_bb, pos_pieces(pos, BLACK, GROUPS[gi][k]));
		}
		while (bb_any(from_bb)) {
			Square from = bb_pop(&from_bb);
			Piece p = pos->board[from];
			Bitboard t = bb_and(bb_piece_attacks(p, from, pos->occupied), target);
			n = yo_piece_moves(ps, n, piece_type(p), from, t);
		}
	}
	/* Drops, in gen_rank order (insertion into the tail). */
	int d0 = n;
	for (int k = 0; k < nl && n < YO_LIST_MAX; k++) {
		if (!move_is_drop(legal[k])) continue;
		uint32_t r = gen_rank(pos, legal[k], check);
		int q = n++;
		while (q > d0 && gen_rank(pos, ps[q - 1], check) > r) {
			ps[q] = ps[q - 1];
			q--;
		}
		ps[q] = legal[k];
	}
	for (int k = 0; k < nl; k++) seen[legal[k] >> 6] |= 1ULL << (legal[k] & 63);
	int i = 0, last = n;
	while (i < last) {
		if (!(seen[ps[i] >> 6] & (1ULL << (ps[i] & 63))))
			ps[i] = ps[--last];
		else
			i++;
	}
	int m = 0;
	for (int k = 0; k < last; k++) {
		uint64_t bit = 1ULL << (ps[k] & 63);
		if (!(seen[ps[k] >> 6] & bit)) continue; /* listed twice: keep the first */
		seen[ps[k] >> 6] &= ~bit;
		out[m++] = ps[k];
	}
	for (int k = 0; k < nl; k++) {
		uint64_t bit = 1ULL << (legal[k] & 63);
		if (!(seen[legal[k] >> 6] & bit)) continue;
		seen[legal[k] >> 6] &= ~bit;
		out[m++] = legal[k];
	}
	return m;
}

static int add_edges(Graph *g, uint32_t i, const Position *bpos, size_t *converged)
{
	Move legal[MOVEGEN_MAX];
	EdgeCand cand[MOVEGEN_MAX];
	int n = movegen_legal(bpos, legal), ne = 0;
	bool in_check = pos_in_check(bpos);
	for (int k = 0; k < n; k++) {
		uint32_t j = keymap_find(&g->map, g->keys, pos_key_after(bpos, legal[k]));
		if (j == PS_NONE) continue;
		EdgeCand c = {gen_rank(bpos, legal[k], in_check), legal[k], j};
		int p = ne++;
		while (p > 0 && cand[p - 1].rank > c.rank) {
			cand[p] = cand[p - 1];
			p--;
		}
		cand[p] = c;
	}
	if (ne >= 2) {
		/* Exact ties keep this order in the output: use YaneuraOu's. */
		Move order[YO_LIST_MAX];
		int no = yo_legal_order(order, bpos, legal, n, g->seen);
		for (int k = 0; k < ne; k++) {
			int at = 0;
			while (at < no && order[at] != cand[k].move) at++;
			cand[k].rank = (uint32_t)at;
		}
		for (int k = 1; k < ne; k++) {
			EdgeCand c = cand[k];
			int p = k;
			while (p > 0 && cand[p - 1].rank > c.rank) {
				cand[p] = cand[p - 1];
				p--;
			}
			cand[p] = c;
		}
	}
	const PsLeaf *lv = g->leaves + g->lstart[i];
	size_t nl = g->lstart[i + 1] - g->lstart[i];
	int rc = (array_grow((void **)&g->m.moves, &g->m.moves_cap, g->m.nmoves + (size_t)ne + nl,
	                     sizeof *g->m.moves, 1024)
	              ? PETASHOCK_ENOMEM
	              : 0);
	if (rc < 0) return rc;
	PsMove *base = g->m.moves + g->m.nmoves;
	size_t cnt = 0;
	for (int k = 0; k < ne; k++) {
		bool listed = false;
		for (size_t l = 0; l < nl; l++)
			if (lv[l].move == cand[k].move) listed = true;
		if (!listed) (*converged)++;
		PsMove pm = {cand[k].move, 0, cand[k].next};
		base[cnt++] = pm;
	}
	/* Listed moves that are not edges stay leaves; a move listed twice keeps
	 * its first line. */
	for (size_t l = 0; l < nl; l++) {
		bool dup = false;
		for (size_t k = 0; k < cnt && !dup; k++)
			if (base[k].move == lv[l].move) dup = true;
		if (dup) continue;
		PsMove pm = {lv[l].move, lv[l].value, PS_NONE};
		base[cnt++] = pm;
	}
	g->m.nmoves += cnt;
	g->m.mstart[i + 1] = (uint32_t)g->m.nmoves;
	return 0;
}

/* ---- pass 3: output ----------------------------------------------------------------- */

typedef struct {
	Move move;
	Vd vd;
} OutMove;

static int write_node(FILE *f, const Graph *g, uint32_t i, const char *sfen, size_t sfen_len,
                      bool shrink, OutMove *buf)
{
	if (fwrite("sfen ", 1, 5, f) != 5 || fwrite(sfen, 1, sfen_len, f) != sfen_len ||
	    fputc('\n', f) == EOF)
		return PETASHOCK_EIO;
	size_t n = 0;
	for (uint32_t k = g->m.mstart[i]; k < g->m.mstart[i + 1]; k++) {
		const PsMove *m = &g->m.moves[k];
		OutMove o = {m->move, mm_move_vd(&g->m, m)};
		/* A move into a perpetual-check loop where the opponent is in check
		 * must not win a tie against an equal exit. */
		if (m->next != PS_NONE && (g->m.flags[m->next] & F_LOOP) &&
		    (g->m.flags[m->next] & F_CHECKED))
			o.vd.depth = PS_DEPTH_PCHECK;
		/* Insertion sort: stable, like the reference's sort on short lists. */
		size_t p = n++;
		while (p > 0 && mm_vd_better(o.vd, buf[p - 1].vd)) {
			buf[p] = buf[p - 1];
			p--;
		}
		buf[p] = o;
	}
	bool white = g->m.flags[i] & F_WHITE;
	char line[DB2016_LINE_MAX];
	for (size_t k = 0; k < n; k++) {
		Vd v = buf[k].vd;
		if (shrink && v.value != buf[0].vd.value) continue;
		/* Same value as the best by another route: shown one lower so that
		 * an engine reading the book prefers the best line. */
		int value = v.value;
		if (k > 0 && v.value == buf[0].vd.value && v.depth != buf[0].vd.depth) value--;
		Move m = white ? flip_move(buf[k].move) : buf[k].move;
		size_t len = db2016_format_move(line, m, MOVE_NONE, value, v.depth);
		if (fwrite(line, 1, len, f) != len) return PETASHOCK_EIO;
	}
	return 0;
}

/* ---- driver ------------------------------------------------------------------------- */

/* One run's state, shared by its passes. */
typedef struct {
	const char *in_path, *out_path;
	const PetashockOptions *opt;
	char *err;
	size_t errlen;
	PetashockStats st;
	Graph g;
	Db2016Reader *r;
	Position *tmp, *tmp2;
	/* Ordinals of records the reader skipped (bad SFEN) in pass 1, skipped
	 * again by ordinal in the passes that do not parse. */
	size_t *skip, nskip, skip_cap;
} PsRun;

/* Pass 1: every record as a node (its key, side, leaves); the key filter. */
static int read_nodes(PsRun *p)
{
	const PetashockOptions *opt = p->opt;
	Graph *g = &p->g;
	Db2016Record rec;
	keymap_init(&g->map, sizeof *g->keys);
	int rc =
	    db2016_open(&p->r, p->in_path, 0, opt ? opt->warn : NULL, opt ? opt->warn_ctx : NULL);
	if (rc < 0)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot open: %s", p->in_path,
		            rc == DB2016_EIO ? "I/O error" : db2016_strerror(rc));
	while ((rc = db2016_next(p->r, &rec)) == 1) {
		if (g->m.n >= PS_NONE - 1)
			return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "%s: too many positions",
			            p->in_path);
		for (size_t o = g->m.n + p->nskip; o < rec.ordinal; o++) {
			if (array_grow((void **)&p->skip, &p->skip_cap, p->nskip + 1,
			               sizeof *p->skip, 1024))
				return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
			p->skip[p->nskip++] = o;
		}
		if (g->m.n % PS_PROGRESS_EVERY == 0) report(opt, "reading", g->m.n);
		if ((rc = add_node(g, &rec)) < 0)
			return fail(p->err, p->errlen, rc, "%s:%ld: %s", p->in_path, rec.line,
			            petashock_strerror(rc));
	}
	if (rc < 0)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: read error after line %ld",
		            p->in_path, db2016_lines(p->r));
	p->st.warnings = db2016_warnings(p->r);
	db2016_close(p->r);
	p->r = NULL;
	p->st.nodes = g->m.n;
	p->st.in_check = 0;
	for (size_t i = 0; i < g->m.n; i++)
		if (g->m.flags[i] & F_CHECKED) p->st.in_check++;
	if (keymap_filter_build(&g->map, g->keys) < 0)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	return 0;
}

/* Reopens the input for another pass without parsing positions. */
static int reopen(PsRun *p)
{
	if (db2016_open(&p->r, p->in_path, DB2016_NO_POSITION, NULL, NULL) < 0)
		return fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot reopen", p->in_path);
	return 0;
}

/* The next record of a later pass that pass 1 kept as node i: 1 with *rec,
 * or 0 at the end, or a negative db2016 code. */
static int next_kept(PsRun *p, Db2016Record *rec, size_t *sp)
{
	int rc;
	while ((rc = db2016_next(p->r, rec)) == 1) {
		if (*sp < p->nskip && p->skip[*sp] == rec->ordinal) {
			(*sp)++;
			continue;
		}
		return 1;
	}
	return rc;
}

static int changed(PsRun *p)
{
	return fail(p->err, p->errlen, PETASHOCK_ECHANGED, "%s: input changed between passes",
	            p->in_path);
}

/* Pass 2: each node's moves (edges to other nodes, or listed leaves). */
static int read_edges(PsRun *p)
{
	Graph *g = &p->g;
	g->m.vd = malloc((g->m.n + 1) * sizeof *g->m.vd);
	g->m.mstart = malloc((g->m.n + 1) * sizeof *g->m.mstart);
	if (!g->m.vd || !g->m.mstart)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	g->m.mstart[0] = 0;
	/* Most moves are the listed leaves plus about one edge per node: reserve
	 * that much at once rather than doubling through it. */
	if (array_grow((void **)&g->m.moves, &g->m.moves_cap, g->nleaves + g->m.n + 1,
	               sizeof *g->m.moves, 1024))
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	int rc = reopen(p);
	if (rc < 0) return rc;
	uint32_t i = 0;
	size_t sp = 0;
	Db2016Record rec;
	while (i < g->m.n && (rc = next_kept(p, &rec, &sp)) == 1) {
		if (i % PS_PROGRESS_EVERY == 0) report(p->opt, "edges", i);
		const Position *bpos = p->tmp;
		if (sfen_parse(p->tmp, rec.sfen, NULL, NULL) < 0 ||
		    (p->tmp->side == WHITE && flip_position(p->tmp2, p->tmp) < 0))
			return fail(p->err, p->errlen, PETASHOCK_ECHANGED,
			            "%s:%ld: input changed between passes", p->in_path, rec.line);
		if (p->tmp->side == WHITE) bpos = p->tmp2;
		if ((rc = add_edges(g, i, bpos, &p->st.converged_moves)) < 0)
			return fail(p->err, p->errlen, rc, "out of memory");
		i++;
	}
	if (rc < 0 || i != g->m.n) return changed(p);
	db2016_close(p->r);
	p->r = NULL;
	free(g->leaves);
	g->leaves = NULL;
	free(g->lstart);
	g->lstart = NULL;
	free(g->keys);
	g->keys = NULL;
	keymap_free(&g->map);
	p->st.moves = g->m.nmoves;
	for (size_t k = 0; k < g->m.nmoves; k++)
		if (g->m.moves[k].next != PS_NONE) p->st.edges++;
	return 0;
}

/* The back-up over the graph (YaneuraOu's peel order). */
static int analyse(PsRun *p)
{
	p->g.m.yo_peel = true;
	report(p->opt, "peel", 0);
	MmStats ms;
	if (mm_backup(&p->g.m, &ms) < 0)
		return fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
	p->st.peel_sweeps = ms.peel_sweeps;
	p->st.relax_sweeps = ms.relax_sweeps;
	p->st.const_nodes = ms.const_nodes;
	p->st.check_loop1 = ms.check_loop1;
	p->st.check_loop2 = ms.check_loop2;
	return 0;
}

/* Pass 3: the book with the backed-up values, to a temporary file renamed
 * over out_path when whole. */
static int write_book(PsRun *p)
{
	Graph *g = &p->g;
	size_t maxm = 1;
	for (size_t k = 0; k < g->m.n; k++)
		if (g->m.mstart[k + 1] - g->m.mstart[k] > maxm)
			maxm = g->m.mstart[k + 1] - g->m.mstart[k];
	OutMove *obuf = malloc(maxm * sizeof *obuf);
	size_t plen = strlen(p->out_path) + 32;
	char *tmp_path = malloc(plen);
	FILE *out = NULL;
	int rc;
	if (!obuf || !tmp_path) {
		rc = fail(p->err, p->errlen, PETASHOCK_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(tmp_path, plen, "%s.tmp%ld", p->out_path, (long)getpid());
	if (!(out = fopen(tmp_path, "wb"))) {
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot create", tmp_path);
		goto done;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	if (fprintf(out, "%s\n# NOE:%zu\n", DB2016_HEADER, g->m.n) < 0) {
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error", tmp_path);
		goto done;
	}
	if ((rc = reopen(p)) < 0) goto done;
	uint32_t i = 0;
	size_t sp = 0;
	Db2016Record rec;
	while (i < g->m.n && (rc = next_kept(p, &rec, &sp)) == 1) {
		if (i % PS_PROGRESS_EVERY == 0) report(p->opt, "writing", i);
		if (write_node(out, g, i, rec.sfen, rec.sfen_len, p->opt && p->opt->shrink, obuf) <
		    0) {
			rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error", tmp_path);
			goto done;
		}
		i++;
	}
	if (rc < 0 || i != g->m.n) {
		rc = changed(p);
		goto done;
	}
	FILE *o = out;
	out = NULL;
	if (fclose(o) != 0) {
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: write error", tmp_path);
		goto done;
	}
	if (rename(tmp_path, p->out_path) != 0) {
		rc = fail(p->err, p->errlen, PETASHOCK_EIO, "%s: cannot rename to %s", tmp_path,
		          p->out_path);
		goto done;
	}
	free(tmp_path);
	tmp_path = NULL;
	rc = 0;
done:
	if (out) fclose(out);
	if (tmp_path) remove(tmp_path);
	free(tmp_path);
	free(obuf);
	return rc;
}

int petashock_run(PetashockStats *stats, const char *in_path, const char *out_path,
                  const PetashockOptions *opt, char *err, size_t errlen)
{
	PsRun p = {
	    .in_path = in_path, .out_path = out_path, .opt = opt, .err = err, .errlen = errlen};
	p.tmp = malloc(sizeof *p.tmp);
	p.tmp2 = malloc(sizeof *p.tmp2);
	int rc = !p.tmp || !p.tmp2 ? fail(err, errlen, PETASHOCK_ENOMEM, "out of memory") : 0;
	if (!rc) rc = read_nodes(&p);
	if (!rc) rc = read_edges(&p);
	if (!rc) rc = analyse(&p);
	if (!rc) rc = write_book(&p);
	db2016_close(p.r);
	graph_free(&p.g);
	free(p.skip);
	free(p.tmp);
	free(p.tmp2);
	if (stats) *stats = p.st;
	return rc;
}
