/* shogi/retro.c — candidate parents of a position (retro.h). */
#include "shogi/retro.h"

#include <assert.h>

/* One way the move's destination may have been occupied in the parent: an
 * opponent piece that the mover then took into its hand. */
typedef struct {
	Piece piece;   /* the opponent's piece as it stood (promoted or not) */
	PieceType hpt; /* the hand type it became */
} Capture;

typedef struct {
	const Position *pos;
	Color us;          /* the side that made the move (to move in the parent) */
	Color them;        /* the side to move in pos */
	Square ksq;        /* their king, SQ_NONE if none */
	Bitboard checkers; /* our pieces attacking it now */
	Bitboard occ;
	Bitboard empty;
	Key board_key; /* pos's board key with the side already flipped */
	Key hand_key;
	Capture caps[2 * HAND_PT_NB]; /* what our hand allows */
	int ncaps;
	RetroMove *out;
	int n;
} Retro;

/* What the parents that moved a piece onto one square t have in common. */
typedef struct {
	Square sq;
	Key board_key;      /* the Retro's, with our piece lifted off t */
	Bitboard occ_quiet; /* the occupancy with t empty, as before a quiet move */
	/* our pieces other than t attacking their king through the occupancy
	 * before a quiet move (t empty) and before a capture (t occupied) */
	Bitboard att_quiet, att_cap;
	Capture caps[2 * HAND_PT_NB]; /* the captures that could have been on t */
	int ncaps;
} Target;

static inline void emit(Retro *r, Key board, Key hand, Move m)
{
	assert(r->n < RETRO_MAX);
	r->out[r->n].key = key_combine(board, hand);
	r->out[r->n].move = m;
	r->n++;
}

/*
 * Squares from which a piece p attacks sq through occ: attack sets are
 * symmetric under a half turn, so these are the attacks of p's mirror image
 * (same type, other colour) standing on sq.
 */
static inline Bitboard origins(Piece p, Square sq, Bitboard occ)
{
	return bb_piece_attacks(piece_make(color_flip(piece_color(p)), piece_type(p)), sq, occ);
}

/*
 * Squares f from which a move onto t leaves their king unattacked in the
 * parent, whose occupancy is occ (t empty or not) plus f. attackers are our
 * pieces other than t attacking the king through occ: f must block the one
 * there may be (it blocks one line at most), and mover must not attack the
 * king from f. Without a king every square will do.
 */
static Bitboard unchecked_from(const Retro *r, Bitboard attackers, Piece mover, Bitboard occ)
{
	if (r->ksq == SQ_NONE) return BB_ALL;
	if (bb_more_than_one(attackers)) return bb_make(0, 0);
	Bitboard ok = bb_any(attackers) ? BETWEEN_BB[r->ksq][bb_lsb(attackers)] : BB_ALL;
	return bb_andnot(ok, origins(mover, r->ksq, occ));
}

/* The parents in which mover went from a square of from onto the target, with
 * or without a capture, and their king was not in check. */
static void add_moves(Retro *r, const Target *tg, Piece mover, bool promote, Bitboard from)
{
	if (bb_empty(from)) return;
	Bitboard from_quiet = bb_and(from, unchecked_from(r, tg->att_quiet, mover, tg->occ_quiet));
	Bitboard from_cap =
	    tg->ncaps ? bb_and(from, unchecked_from(r, tg->att_cap, mover, r->occ)) : bb_make(0, 0);
	Square f, t = tg->sq;
	BB_FOREACH(f, bb_or(from_quiet, from_cap))
	{
		Key bk = key_xor(tg->board_key, ZOB_PSQ[mover][f]);
		Move m = move_make(f, t, promote);
		if (bb_test(from_quiet, f)) emit(r, bk, r->hand_key, m);
		if (!bb_test(from_cap, f)) continue;
		for (int i = 0; i < tg->ncaps; i++)
			emit(r, key_xor(bk, ZOB_PSQ[tg->caps[i].piece][t]),
			     key_sub(r->hand_key, ZOB_HAND[r->us][tg->caps[i].hpt]), m);
	}
}

/* An opponent pawn, lance or knight that could never move again cannot have
 * stood on sq; nor an unpromoted pawn beside another of theirs on the file. */
static bool capture_possible(const Retro *r, Piece cap, Square sq)
{
	PieceType pt = piece_type(cap);
	int rel = rank_rel(r->them, sq_rank(sq));
	if (pt == PAWN)
		return rel >= 1 &&
		       bb_empty(bb_and(pos_pieces(r->pos, r->them, PAWN), FILE_BB[sq_file(sq)]));
	if (pt == LANCE) return rel >= 1;
	if (pt == KNIGHT) return rel >= 2;
	return true;
}

/* Every parent in which our piece now on t stood elsewhere or in hand. */
static void add_parents_to(Retro *r, Square t)
{
	const Position *pos = r->pos;
	Piece pc = pos->board[t];
	PieceType pt = piece_type(pc);
	Bitboard our_pawns_on_file = bb_and(pos_pieces(pos, r->us, PAWN), FILE_BB[sq_file(t)]);
	Target tg = {
	    .sq = t,
	    .board_key = key_xor(r->board_key, ZOB_PSQ[pc][t]),
	    .occ_quiet = bb_andnot(r->occ, SQ_BB[t]),
	    .att_cap = bb_andnot(r->checkers, SQ_BB[t]),
	};
	/* With t empty a slider behind it may reach their king too: only worth a
	 * look when t is on a line with the king. */
	tg.att_quiet = tg.att_cap;
	if (r->ksq != SQ_NONE && bb_any(LINE_BB[r->ksq][t]))
		tg.att_quiet =
		    bb_andnot(pos_attackers_to(pos, r->us, r->ksq, tg.occ_quiet), SQ_BB[t]);
	for (int i = 0; i < r->ncaps; i++)
		if (capture_possible(r, r->caps[i].piece, t)) tg.caps[tg.ncaps++] = r->caps[i];

	/* Dropped there (not a king, nor promoted; no pawn beside another of ours). */
	if (pt >= PAWN && pt <= GOLD && bb_empty(tg.att_quiet) &&
	    (pt != PAWN || !bb_more_than_one(our_pawns_on_file)))
		emit(r, tg.board_key, key_add(r->hand_key, ZOB_HAND[r->us][pt]),
		     move_make_drop(pt, t));

	/* Moved there as it is now (gold, king and promoted pieces included). */
	add_moves(r, &tg, pc, false, bb_and(origins(pc, t, r->occ), r->empty));

	/* Or promoted on arriving: the origin or t is in our zone, and a pawn that
	 * promoted had no other pawn of ours on its file. */
	if (pt > KING && (pt != PRO_PAWN || bb_empty(our_pawns_on_file))) {
		Piece base = (Piece)(pc - PROMOTE);
		Bitboard from = bb_and(origins(base, t, r->occ), r->empty);
		if (!sq_in_zone(r->us, t)) from = bb_and(from, ZONE_BB[r->us]);
		add_moves(r, &tg, base, true, from);
	}
}

int retro_parents(const Position *pos, RetroMove *out)
{
	/* The last move cannot have left the mover's own king attacked. */
	Square own_king = pos->king_sq[color_flip(pos->side)];
	if (own_king != SQ_NONE && pos_attacked(pos, pos->side, own_king)) return 0;
	const PosState *st = pos_st(pos);
	Retro r = {
	    .pos = pos,
	    .them = pos->side,
	    .us = color_flip(pos->side),
	    .ksq = pos->king_sq[pos->side],
	    .checkers = st->checkers,
	    .occ = pos->occupied,
	    .empty = bb_not(pos->occupied),
	    .board_key = key_xor(st->board_key, ZOB_SIDE),
	    .hand_key = st->hand_key,
	    .out = out,
	};
	/* What the mover holds may have been taken by the move, promoted or not. */
	for (int pt = PAWN; pt <= GOLD; pt++) {
		if (!hand_has(pos->hand[r.us], (PieceType)pt)) continue;
		r.caps[r.ncaps++] = (Capture){piece_make(r.them, (PieceType)pt), (PieceType)pt};
		if (pt_can_promote((PieceType)pt))
			r.caps[r.ncaps++] =
			    (Capture){piece_make(r.them, (PieceType)(pt + PROMOTE)), (PieceType)pt};
	}
	Square t;
	BB_FOREACH(t, pos->by_color[r.us]) add_parents_to(&r, t);
	return r.n;
}
