/*
 * shogi/types.h — the vocabulary of the rules core: colours, squares, pieces,
 * hands and moves. Everything here is a plain value; nothing allocates.
 *
 * Squares are numbered file-major: sq = (file - 1) * 9 + (rank - 1), where file
 * is 1..9 (USI's digit) and rank 1..9 is USI's letter a..i. So 1a = 0, 1i = 8,
 * 2a = 9, 9i = 80. A file's nine squares are contiguous, which makes lance and
 * rook file attacks plain bit arithmetic.
 */
#ifndef SHOGI_TYPES_H
#define SHOGI_TYPES_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { BLACK = 0, WHITE = 1 } Color; /* Black = sente, moves first */
#define COLOR_NB 2

static inline Color color_flip(Color c)
{
	return (Color)(c ^ 1);
}

typedef int Square;
#define SQ_NB 81
#define SQ_NONE 81
#define FILE_NB 9
#define RANK_NB 9

/* file and rank are 0-based here: file 0 is USI file 1, rank 0 is rank 'a'. */
static inline Square sq_make(int file, int rank)
{
	return file * 9 + rank;
}
static inline int sq_file(Square sq)
{
	return sq / 9;
}
static inline int sq_rank(Square sq)
{
	return sq % 9;
}

/* Rank index relative to colour c: 0 is the far (promotion) edge for c. */
static inline int rank_rel(Color c, int rank)
{
	return c == BLACK ? rank : 8 - rank;
}
/* True for the three ranks nearest the opponent (c's promotion zone). */
static inline bool sq_in_zone(Color c, Square sq)
{
	return rank_rel(c, sq_rank(sq)) < 3;
}

/*
 * Piece types. Unpromoted PAWN..GOLD are the seven hand pieces; a promotable
 * type t promotes to t + PROMOTE (gold and king do not promote).
 */
typedef enum {
	PT_NONE = 0,
	PAWN = 1,
	LANCE = 2,
	KNIGHT = 3,
	SILVER = 4,
	BISHOP = 5,
	ROOK = 6,
	GOLD = 7,
	KING = 8,
	PRO_PAWN = 9,
	PRO_LANCE = 10,
	PRO_KNIGHT = 11,
	PRO_SILVER = 12,
	HORSE = 13,
	DRAGON = 14,
	PT_NB = 15
} PieceType;
#define PROMOTE 8
#define HAND_PT_NB 8 /* hand arrays are indexed PAWN..GOLD (index 0 unused) */

static inline bool pt_can_promote(PieceType pt)
{
	return pt >= PAWN && pt <= ROOK;
}
static inline PieceType pt_unpromote(PieceType pt)
{
	return pt > KING ? (PieceType)(pt - PROMOTE) : pt;
}

/* A piece on the board: type | colour << 4. 0 is an empty square. */
typedef uint8_t Piece;
#define PIECE_NONE 0
#define PIECE_NB 32
static inline Piece piece_make(Color c, PieceType pt)
{
	return (Piece)(pt | (c << 4));
}
static inline PieceType piece_type(Piece p)
{
	return (PieceType)(p & 15);
}
static inline Color piece_color(Piece p)
{
	return (Color)(p >> 4);
}

/*
 * A hand, packed in 32 bits so that adding or removing one piece is one
 * addition and "has any" is one mask test. Field widths hold the maximum
 * count of each type (18 pawns, 4 lances/knights/silvers/golds, 2 bishops/rooks).
 */
typedef uint32_t Hand;
#define HAND_SHIFT_PAWN 0
#define HAND_SHIFT_LANCE 6
#define HAND_SHIFT_KNIGHT 10
#define HAND_SHIFT_SILVER 14
#define HAND_SHIFT_BISHOP 18
#define HAND_SHIFT_ROOK 21
#define HAND_SHIFT_GOLD 24
extern const uint8_t HAND_SHIFT[HAND_PT_NB];
extern const uint32_t HAND_MASK[HAND_PT_NB];
/*
 * Most pieces of a type a position may hold in all (board, promoted or not,
 * plus both hands): what a hand field can count (P 31, B/R 3, others 7). More
 * than a real set is accepted on purpose (perft.tsv has three rooks), but no
 * capture can then ever overflow a hand, and every position written as SFEN
 * parses again.
 */
extern const uint8_t HAND_MAX[HAND_PT_NB];

static inline int hand_count(Hand h, PieceType pt)
{
	return (int)((h & HAND_MASK[pt]) >> HAND_SHIFT[pt]);
}
static inline Hand hand_add(Hand h, PieceType pt)
{
	return h + (1u << HAND_SHIFT[pt]);
}
static inline Hand hand_sub(Hand h, PieceType pt)
{
	return h - (1u << HAND_SHIFT[pt]);
}
static inline bool hand_has(Hand h, PieceType pt)
{
	return (h & HAND_MASK[pt]) != 0;
}

/*
 * A move in 16 bits, the form stored in the book:
 *   bits 0-6   destination square
 *   bits 7-13  origin square, or the dropped piece type for a drop
 *   bit 14     promotion
 *   bit 15     drop
 * MOVE_NONE (0) is never a legal move (origin == destination).
 */
typedef uint16_t Move;
#define MOVE_NONE ((Move)0)
#define MOVE_NULL ((Move)((1 << 7) | 1))
#define MOVE_PROMOTE (1u << 14)
#define MOVE_DROP (1u << 15)

static inline Move move_make(Square from, Square to, bool promote)
{
	return (Move)(to | (from << 7) | (promote ? MOVE_PROMOTE : 0));
}
static inline Move move_make_drop(PieceType pt, Square to)
{
	return (Move)(to | (pt << 7) | MOVE_DROP);
}
static inline Square move_to(Move m)
{
	return m & 0x7f;
}
static inline Square move_from(Move m)
{
	return (m >> 7) & 0x7f;
}
static inline bool move_is_drop(Move m)
{
	return (m & MOVE_DROP) != 0;
}
static inline bool move_is_promote(Move m)
{
	return (m & MOVE_PROMOTE) != 0;
}
static inline PieceType move_drop_type(Move m)
{
	return (PieceType)((m >> 7) & 0x7f);
}

/*
 * For a move m on board (Piece[81]) that leaves a pawn, bishop or rook
 * unpromoted where it could promote: the same move promoting; else
 * MOVE_NONE. Such a move is never better than its promotion outside
 * composed problems (YaneuraOu does not even generate it), but an engine that
 * lists every legal move (fairy-stockfish) can rank it a few centipawns above
 * by noise: a book plays the promotion.
 */
static inline Move move_declined_promotion(const Piece *board, Move m)
{
	if (m == MOVE_NONE || move_is_drop(m) || move_is_promote(m)) return MOVE_NONE;
	Piece p = board[move_from(m)];
	PieceType pt = piece_type(p);
	if (pt != PAWN && pt != BISHOP && pt != ROOK) return MOVE_NONE;
	Color c = piece_color(p);
	if (!sq_in_zone(c, move_from(m)) && !sq_in_zone(c, move_to(m))) return MOVE_NONE;
	return (Move)(m | MOVE_PROMOTE);
}

/* Values: centipawns from the side to move; mate in n plies is ±(VALUE_MATE - n). */
#define VALUE_MATE 32000
#define VALUE_INFINITE 32001
#define VALUE_MATE_IN_MAX (VALUE_MATE - 1000)

/* v bounded to ±VALUE_MATE, the range a book stores. */
static inline int value_clamp(int v)
{
	return v > VALUE_MATE ? VALUE_MATE : v < -VALUE_MATE ? -VALUE_MATE : v;
}

/*
 * One side's time control in a game, in milliseconds (all >= 0): a main
 * time, then a byoyomi for each move once the main time is spent, and a
 * Fischer increment credited as each move starts (floodgate's way). A move
 * may take what is left of the main time + increment + byoyomi.
 */
typedef struct {
	int64_t main_ms;
	int64_t byoyomi_ms;
	int64_t inc_ms;
} TimeControl;

#endif
