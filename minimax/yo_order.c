/*
 * minimax/yo_order.c — the order in which YaneuraOu generates legal moves,
 * emulated for peta-shock: moves that tie on (value, depth) are written in
 * that order, and the output must match YaneuraOu's byte for byte.
 */
#include "minimax/yo_order.h"

#include "shogi/movegen.h"

/*
 * Rank of a move in YaneuraOu's generation order, which decides the order of
 * moves tying on (value, depth) in the output: evasions start with king moves;
 * then pawns, lances, knights, silvers, bishops and rooks together, then
 * gold-like pieces, horses, dragons and the king together, each group by
 * origin then destination square, promotion first; drops last (pawn drops
 * first). (YaneuraOu then removes illegal moves by swapping in the last one,
 * which this does not imitate.)
 */
uint32_t yo_gen_rank(const Position *pos, Move m, bool in_check)
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
 * always legal and in yo_gen_rank's order. Legal moves the emulation misses are
 * appended. seen is a 65536-bit scratch bitmap, all zero on entry and exit.
 */
int yo_legal_order(Move *out, const Position *pos, const Move *legal, int nl, uint64_t *seen)
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
	/* Drops, in yo_gen_rank order (insertion into the tail). */
	int d0 = n;
	for (int k = 0; k < nl && n < YO_LIST_MAX; k++) {
		if (!move_is_drop(legal[k])) continue;
		uint32_t r = yo_gen_rank(pos, legal[k], check);
		int q = n++;
		while (q > d0 && yo_gen_rank(pos, ps[q - 1], check) > r) {
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
