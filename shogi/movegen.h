/*
 * shogi/movegen.h — fully legal move generation.
 *
 * Generators fill a caller's buffer (at least MOVEGEN_MAX entries) and return
 * the count. Every move returned is legal: king safety, pins, nifu,
 * uchifuzume (pawn-drop mate), pieces that could never move again, and the
 * promotion zone are all respected; optional non-promotions are included
 * (pawn, bishop and rook non-promotions too). A king is never captured, even
 * in a set-up position whose side not to move stands in check. No allocation.
 */
#ifndef SHOGI_MOVEGEN_H
#define SHOGI_MOVEGEN_H

#include "shogi/position.h"
#include "shogi/errors.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MOVEGEN_MAX 600

typedef enum {
	GEN_ALL = 0,
	GEN_CAPTURES, /* captures, and promotions of pawns (quiescence moves) */
	GEN_QUIETS,   /* everything GEN_CAPTURES leaves out */
} GenType;

/* out may be NULL: the moves are then only counted. */
JOSEKI_MUST_USE int movegen(const Position *pos, GenType type, Move *out);
static inline int movegen_legal(const Position *pos, Move *out)
{
	return movegen(pos, GEN_ALL, out);
}
/* Whether m is one of list[0..n): eight moves a compare where SSE2 is (every
 * x86-64), for readers that check every record's moves against the legal ones. */
static inline bool movegen_listed(const Move *list, int n, Move m)
{
	int j = 0;
#ifdef __SSE2__
	__m128i v = _mm_set1_epi16((short)m);
	for (; j + 8 <= n; j += 8)
		if (_mm_movemask_epi8(
		        _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(list + j)), v)))
			return true;
#endif
	for (; j < n; j++)
		if (list[j] == m) return true;
	return false;
}

/*
 * The same answer as pos_is_legal (m is one of movegen_legal's moves) for any
 * 16-bit value, without generating the moves: what a search asks of a move it
 * remembered from another position (hash, killer and counter moves).
 */
bool movegen_is_legal(const Position *pos, Move m);

/*
 * Why m is not legal in pos: SHOGI_OK when it is, else SHOGI_EILLEGAL with the
 * rule it breaks in err (SHOGI_ERRLEN bytes, may be NULL), squares as USI
 * writes them: "the game is over: Black, to move, is checkmated", "the pawn on 3c is White's, and
 * Black is to move", "the pawn on 7g cannot move to 7e", "the rook on 2h cannot move to 2a: the way
 * is blocked", "Black has no bishop in hand", "it leaves Black's king in check". For any 16-bit
 * value, as movegen_is_legal.
 */
JOSEKI_MUST_USE int movegen_why_illegal(const Position *pos, Move m, char *err);

/* The pieces' English names ("pawn", ..., "promoted pawn", "horse", "dragon"). */
extern const char *const PIECE_ENGLISH[PT_NB];

/*
 * Pieces of colour blockers that stand alone (in occ) between a slider of
 * colour sliders and ksq, the square of the king of the colour other than
 * sliders: with blockers that king's colour, its pinned pieces; with blockers
 * the sliders' colour, the pieces whose moves off the line give check.
 */
Bitboard movegen_blockers(const Position *pos, Square ksq, Color sliders, Color blockers,
                          Bitboard occ);

/* Number of legal moves (0: the side to move is mated or stalemated). */
JOSEKI_MUST_USE int movegen_count(const Position *pos);

/* Leaf count of the legal-move tree to depth (bulk counting at the last ply). */
uint64_t perft(Position *pos, int depth);

#endif
