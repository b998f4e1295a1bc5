/*
 * search/eval.c — material and placement evaluation.
 *
 * Computed from scratch at every call: the board holds at most 40 pieces, so
 * one pass over the occupied squares costs less than generating the moves
 * that led here, and a from-scratch evaluation cannot drift out of sync.
 */
#include "search/eval.h"

const int EVAL_PIECE_VALUE[PT_NB] = {
    [PAWN] = 90,        [LANCE] = 315,      [KNIGHT] = 405, [SILVER] = 495,   [BISHOP] = 855,
    [ROOK] = 990,       [GOLD] = 540,       [KING] = 0,     [PRO_PAWN] = 540, [PRO_LANCE] = 540,
    [PRO_KNIGHT] = 540, [PRO_SILVER] = 540, [HORSE] = 945,  [DRAGON] = 1395,
};

const int EVAL_HAND_VALUE[HAND_PT_NB] = {
    [PAWN] = 100,   [LANCE] = 340, [KNIGHT] = 430, [SILVER] = 540,
    [BISHOP] = 920, [ROOK] = 1060, [GOLD] = 590,
};

/*
 * Bonus for a piece of type pt at Chebyshev distance d (0..8) from the enemy
 * king: pieces that can take part in an attack are worth more close to it.
 */
static const int ATTACK_NEAR[9] = {0, 40, 26, 14, 6, 2, 0, 0, 0};
/* Bonus for a gold or silver at distance d from its own king (the shelter). */
static const int DEFEND_NEAR[9] = {0, 36, 22, 8, 0, 0, 0, 0, 0};
/* Pawn bonus by relative rank (0 = far edge): advanced pawns gain ground. */
static const int PAWN_RANK[9] = {0, 0, 0, 12, 8, 4, 0, 0, 0};
/* King bonus by relative rank: a king that wanders up the board is exposed. */
static const int KING_RANK[9] = {-60, -60, -50, -40, -30, -20, -5, 8, 10};

/* Chebyshev distance from sq to the square at (file, rank). */
static inline int dist_fr(Square sq, int file, int rank)
{
	int df = sq_file(sq) - file, dr = sq_rank(sq) - rank;
	if (df < 0) df = -df;
	if (dr < 0) dr = -dr;
	return df > dr ? df : dr;
}

int eval_material(const Position *pos)
{
	int v = 0;
	for (int pt = PAWN; pt < PT_NB; pt++) {
		if (pt == KING) continue;
		int n = bb_count(pos_pieces(pos, BLACK, (PieceType)pt)) -
		        bb_count(pos_pieces(pos, WHITE, (PieceType)pt));
		v += n * EVAL_PIECE_VALUE[pt];
	}
	for (int pt = PAWN; pt <= GOLD; pt++)
		v += (hand_count(pos->hand[BLACK], (PieceType)pt) -
		      hand_count(pos->hand[WHITE], (PieceType)pt)) *
		     EVAL_HAND_VALUE[pt];
	return v;
}

/* Placement of colour c's pieces, from c's point of view. Pieces are taken
 * by group from the bitboards so the loop bodies need no piece-type tests. */
static int eval_placement(const Position *pos, Color c)
{
	Square own_k = pos->king_sq[c], opp_k = pos->king_sq[color_flip(c)];
	Bitboard own = pos->by_color[c];
	int v = 0;
	Square sq;
	if (own_k != SQ_NONE) v += KING_RANK[rank_rel(c, sq_rank(own_k))];
	BB_FOREACH(sq, bb_and(own, pos->by_type[PAWN])) v += PAWN_RANK[rank_rel(c, sq_rank(sq))];
	if (opp_k != SQ_NONE) {
		int kf = sq_file(opp_k), kr = sq_rank(opp_k);
		Bitboard att = bb_andnot(
		    own, bb_or(pos->by_type[PAWN], bb_or(pos->by_type[LANCE], pos->by_type[KING])));
		BB_FOREACH(sq, att) v += ATTACK_NEAR[dist_fr(sq, kf, kr)];
	}
	if (own_k != SQ_NONE) {
		int kf = sq_file(own_k), kr = sq_rank(own_k);
		Bitboard minor =
		    bb_or(bb_or(pos->by_type[GOLD], pos->by_type[SILVER]),
		          bb_or(bb_or(pos->by_type[PRO_PAWN], pos->by_type[PRO_LANCE]),
		                bb_or(pos->by_type[PRO_KNIGHT], pos->by_type[PRO_SILVER])));
		BB_FOREACH(sq, bb_and(own, minor)) v += DEFEND_NEAR[dist_fr(sq, kf, kr)];
	}
	return v;
}

int eval_position(const Position *pos)
{
	int v = eval_material(pos) + eval_placement(pos, BLACK) - eval_placement(pos, WHITE);
	/* Tempo: having the move is worth something in a game without zugzwang. */
	v = pos->side == BLACK ? v : -v;
	return v + 20;
}
