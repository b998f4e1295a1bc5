/*
 * search/mate.c — checking moves, mate in 1, mate in 3 (mate.h).
 *
 * The checks are found the way a rules core would see them from the enemy
 * king: a drop or a move whose piece then attacks the king (the squares a
 * piece of the king's colour on the king's square would attack, in reverse),
 * and any move of a piece that stands alone between one of our sliders and
 * the king off that line (a discovered check). Each candidate is confirmed by
 * movegen_is_legal, so pins, nifu, dead squares and uchifuzume are the rules
 * core's own.
 */
#include "search/mate.h"

typedef struct {
	Move *out;
	int n;
	Bitboard seen; /* board moves already added, by origin (discovered checks) */
} CheckList;

static inline void add(const Position *pos, CheckList *l, Move m)
{
	if (movegen_is_legal(pos, m)) l->out[l->n++] = m;
}

/* Squares from which a piece of colour us and type pt attacks ksq: what the
 * same piece of the other colour would attack from ksq. */
static Bitboard check_squares(Color us, PieceType pt, Square ksq, Bitboard occ)
{
	return bb_piece_attacks(piece_make(color_flip(us), pt), ksq, occ);
}

int mate_gen_checks(const Position *pos, Move *out, bool pawn_drops)
{
	CheckList l = {out, 0, bb_make(0, 0)};
	Color us = pos->side, them = color_flip(us);
	Square ksq = pos->king_sq[them];
	if (ksq == SQ_NONE) return 0;
	Bitboard occ = pos->occupied, empty = bb_not(occ);
	Bitboard chk[PT_NB];
	for (int pt = PAWN; pt < PT_NB; pt++)
		chk[pt] = pt == KING ? bb_make(0, 0) : check_squares(us, (PieceType)pt, ksq, occ);
	Square to, from;
	/* Drops. */
	Hand h = pos->hand[us];
	for (int pt = pawn_drops ? PAWN : LANCE; pt <= GOLD && h; pt++) {
		if (!hand_has(h, (PieceType)pt)) continue;
		BB_FOREACH(to, bb_and(chk[pt], empty))
		add(pos, &l, move_make_drop((PieceType)pt, to));
	}
	/* Discovered checks: any move of such a piece off the line. */
	Bitboard disc = movegen_blockers(pos, ksq, us, us, occ);
	Bitboard targets = bb_andnot(bb_not(pos->by_color[us]), pos_pieces(pos, them, KING));
	BB_FOREACH(from, disc)
	{
		Piece p = pos->board[from];
		Bitboard t =
		    bb_andnot(bb_and(bb_piece_attacks(p, from, occ), targets), LINE_BB[ksq][from]);
		BB_FOREACH(to, t)
		{
			add(pos, &l, move_make(from, to, true));
			add(pos, &l, move_make(from, to, false));
		}
	}
	/* Direct checks by a board move (with or without promotion). */
	Bitboard pieces = bb_andnot(bb_andnot(pos->by_color[us], pos->by_type[KING]), disc);
	BB_FOREACH(from, pieces)
	{
		Piece p = pos->board[from];
		PieceType pt = piece_type(p);
		Bitboard atk = bb_and(bb_piece_attacks(p, from, occ), targets);
		if (bb_empty(atk)) continue;
		Bitboard plain = bb_and(atk, chk[pt]);
		BB_FOREACH(to, plain) add(pos, &l, move_make(from, to, false));
		if (pt_can_promote(pt)) {
			Bitboard pro = bb_and(atk, chk[pt + PROMOTE]);
			if (!sq_in_zone(us, from)) pro = bb_and(pro, ZONE_BB[us]);
			BB_FOREACH(to, pro) add(pos, &l, move_make(from, to, true));
		}
	}
	/* Discovered checks by pieces on the line that also check directly were
	 * added twice only if the move left the line, which the first loop did;
	 * moves of discoverers along the line that check directly: */
	BB_FOREACH(from, disc)
	{
		Piece p = pos->board[from];
		PieceType pt = piece_type(p);
		if (pt == KING) continue;
		Bitboard atk =
		    bb_and(bb_and(bb_piece_attacks(p, from, occ), targets), LINE_BB[ksq][from]);
		BB_FOREACH(to, bb_and(atk, chk[pt])) add(pos, &l, move_make(from, to, false));
		if (pt_can_promote(pt)) {
			Bitboard pro = bb_and(atk, chk[pt + PROMOTE]);
			if (!sq_in_zone(us, from)) pro = bb_and(pro, ZONE_BB[us]);
			BB_FOREACH(to, pro) add(pos, &l, move_make(from, to, true));
		}
	}
	return l.n;
}

static bool is_mated(const Position *pos)
{
	return movegen(pos, GEN_ALL, NULL) == 0;
}

Move mate_in_1(Position *pos)
{
	Move checks[MOVEGEN_MAX];
	int n;
	/* A bare enemy (few pieces, no drop but pawns) may be left without a
	 * move by a quiet move too, which also wins: every move is tried. */
	Color them = color_flip(pos->side);
	bool bare = (pos->hand[them] & ~HAND_MASK[PAWN]) == 0 && bb_count(pos->by_color[them]) <= 4;
	if (bare) {
		n = movegen(pos, GEN_ALL, checks);
	} else if (pos_in_check(pos)) {
		Move all[MOVEGEN_MAX];
		int na = movegen(pos, GEN_ALL, all);
		n = 0;
		for (int i = 0; i < na; i++)
			if (pos_gives_check(pos, all[i])) checks[n++] = all[i];
	} else {
		n = mate_gen_checks(pos, checks, false);
	}
	for (int i = 0; i < n; i++) {
		if (pos_history_len(pos) >= POS_MAX_STATES - 2) break;
		pos_do_move(pos, checks[i]);
		bool mate = is_mated(pos);
		pos_undo_move(pos);
		if (mate) return checks[i];
	}
	return MOVE_NONE;
}

Move mate_in_3(Position *pos, uint64_t *nodes, uint64_t budget)
{
	if (pos_in_check(pos) || pos_history_len(pos) >= POS_MAX_STATES - 4) return MOVE_NONE;
	Move m1 = mate_in_1(pos);
	if (m1 != MOVE_NONE) return m1;
	Move checks[MOVEGEN_MAX], evasions[MOVEGEN_MAX];
	int n = mate_gen_checks(pos, checks, true);
	for (int i = 0; i < n; i++) {
		if (budget && *nodes >= budget) return MOVE_NONE;
		pos_do_move(pos, checks[i]);
		(*nodes)++;
		int ne = movegen(pos, GEN_ALL, evasions);
		bool all_mated = ne > 0;
		for (int j = 0; j < ne && all_mated; j++) {
			if (budget && *nodes >= budget) {
				pos_undo_move(pos);
				return MOVE_NONE;
			}
			pos_do_move(pos, evasions[j]);
			(*nodes)++;
			if (mate_in_1(pos) == MOVE_NONE) all_mated = false;
			pos_undo_move(pos);
		}
		pos_undo_move(pos);
		if (all_mated) return checks[i];
	}
	return MOVE_NONE;
}
