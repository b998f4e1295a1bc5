/*
 * shogi/bitboard.h — 81-square bitboards and attack tables.
 *
 * A Bitboard is two 64-bit words: p[0] holds squares 0..62 (files 1-7),
 * p[1] holds squares 63..80 (files 8-9) in its bits 0..17. No file straddles
 * the two words. Attack tables are filled once by bb_init() (called by
 * shogi_init()) before any thread starts and are read-only afterwards.
 */
#ifndef SHOGI_BITBOARD_H
#define SHOGI_BITBOARD_H

#include "shogi/types.h"

typedef struct {
	uint64_t p[2];
} Bitboard;

extern Bitboard SQ_BB[SQ_NB];
extern Bitboard FILE_BB[FILE_NB];
extern Bitboard RANK_BB[RANK_NB];
extern Bitboard ZONE_BB[COLOR_NB];        /* the three ranks where c promotes */
extern Bitboard BB_ALL;                   /* all 81 squares */
extern Bitboard BETWEEN_BB[SQ_NB][SQ_NB]; /* squares strictly between, on a line */
extern Bitboard LINE_BB[SQ_NB][SQ_NB];    /* the whole line through both, or empty */

/* Step attacks, [colour][square]. */
extern Bitboard PAWN_ATK[COLOR_NB][SQ_NB];
extern Bitboard KNIGHT_ATK[COLOR_NB][SQ_NB];
extern Bitboard SILVER_ATK[COLOR_NB][SQ_NB];
extern Bitboard GOLD_ATK[COLOR_NB][SQ_NB];
extern Bitboard KING_ATK[SQ_NB];
/* Lance attack rays on an empty board (used for pins and drop checks). */
extern Bitboard LANCE_STEP_RAY[COLOR_NB][SQ_NB];
extern Bitboard BISHOP_PSEUDO[SQ_NB]; /* bishop attacks on an empty board */
extern Bitboard ROOK_PSEUDO[SQ_NB];

static inline Bitboard bb_make(uint64_t a, uint64_t b)
{
	Bitboard r = {{a, b}};
	return r;
}
static inline Bitboard bb_and(Bitboard a, Bitboard b)
{
	return bb_make(a.p[0] & b.p[0], a.p[1] & b.p[1]);
}
static inline Bitboard bb_or(Bitboard a, Bitboard b)
{
	return bb_make(a.p[0] | b.p[0], a.p[1] | b.p[1]);
}
static inline Bitboard bb_xor(Bitboard a, Bitboard b)
{
	return bb_make(a.p[0] ^ b.p[0], a.p[1] ^ b.p[1]);
}
static inline Bitboard bb_andnot(Bitboard a, Bitboard b) /* a & ~b */
{
	return bb_make(a.p[0] & ~b.p[0], a.p[1] & ~b.p[1]);
}
static inline Bitboard bb_not(Bitboard a) /* complement within the 81 squares */
{
	return bb_make(~a.p[0] & 0x7fffffffffffffffULL, ~a.p[1] & 0x3ffffULL);
}
static inline bool bb_any(Bitboard a)
{
	return (a.p[0] | a.p[1]) != 0;
}
static inline bool bb_empty(Bitboard a)
{
	return (a.p[0] | a.p[1]) == 0;
}
static inline bool bb_test(Bitboard a, Square sq)
{
	return bb_any(bb_and(a, SQ_BB[sq]));
}
static inline int bb_count(Bitboard a)
{
	return __builtin_popcountll(a.p[0]) + __builtin_popcountll(a.p[1]);
}
static inline bool bb_more_than_one(Bitboard a)
{
	if (a.p[0] && a.p[1]) return true;
	uint64_t w = a.p[0] | a.p[1];
	return (w & (w - 1)) != 0;
}
static inline bool bb_equal(Bitboard a, Bitboard b)
{
	return a.p[0] == b.p[0] && a.p[1] == b.p[1];
}
/* Lowest set square; a must not be empty. */
static inline Square bb_lsb(Bitboard a)
{
	return a.p[0] ? __builtin_ctzll(a.p[0]) : 63 + __builtin_ctzll(a.p[1]);
}
/* Removes and returns the lowest set square; *a must not be empty. */
static inline Square bb_pop(Bitboard *a)
{
	if (a->p[0]) {
		Square s = __builtin_ctzll(a->p[0]);
		a->p[0] &= a->p[0] - 1;
		return s;
	}
	Square s = 63 + __builtin_ctzll(a->p[1]);
	a->p[1] &= a->p[1] - 1;
	return s;
}
static inline void bb_set(Bitboard *a, Square sq)
{
	a->p[0] |= SQ_BB[sq].p[0];
	a->p[1] |= SQ_BB[sq].p[1];
}
static inline void bb_clear(Bitboard *a, Square sq)
{
	a->p[0] &= ~SQ_BB[sq].p[0];
	a->p[1] &= ~SQ_BB[sq].p[1];
}

#define BB_FOREACH(sq, bb)                                                                         \
	for (Bitboard bb_it_ = (bb); bb_any(bb_it_) && ((sq) = bb_pop(&bb_it_), 1);)

/* Sliding attacks given the occupancy. */
Bitboard bb_lance_attacks(Color c, Square sq, Bitboard occ);
Bitboard bb_bishop_attacks(Square sq, Bitboard occ);
Bitboard bb_rook_attacks(Square sq, Bitboard occ);
Bitboard bb_rook_file_attacks(Square sq, Bitboard occ);

static inline Bitboard bb_horse_attacks(Square sq, Bitboard occ)
{
	return bb_or(bb_bishop_attacks(sq, occ), KING_ATK[sq]);
}
static inline Bitboard bb_dragon_attacks(Square sq, Bitboard occ)
{
	return bb_or(bb_rook_attacks(sq, occ), KING_ATK[sq]);
}

/* Attacks of any piece (colour and type from p) from sq given the occupancy. */
Bitboard bb_piece_attacks(Piece p, Square sq, Bitboard occ);

void bb_init(void);

#endif
