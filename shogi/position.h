/*
 * shogi/position.h — a shogi position with its game history: set up, make and
 * unmake moves, keys, checks, repetition and the entering-king declaration.
 *
 * A Position is a plain value that owns its history (states[]), so it may be
 * copied with memcpy/assignment. It is not thread-safe; give each thread its own.
 * shogi_init() must have been called once (before threads start).
 */
#ifndef SHOGI_POSITION_H
#define SHOGI_POSITION_H

#include "shogi/errors.h"

#include <stddef.h>

#include "shogi/bitboard.h"
#include "shogi/types.h"
#include "shogi/zobrist.h"

/* Error codes of the rules core (all negative). */
enum {
	SHOGI_OK = 0,
	SHOGI_EPARSE = ERR_SHOGI - 0,   /* malformed SFEN, move or record token */
	SHOGI_EILLEGAL = ERR_SHOGI - 1, /* well-formed but illegal move or impossible position */
	SHOGI_ETOOLONG = ERR_SHOGI - 2, /* game longer than POS_MAX_STATES - 1 plies */
	SHOGI_ENOMEM = ERR_SHOGI - 3,   /* out of memory (shogi/apery.h's walk of a book) */
};
/* Length of the error-message buffers the parsers fill (NUL included). */
#define SHOGI_ERRLEN 160
const char *shogi_strerror(int code);

/* Fills all read-only tables. Idempotent; call before starting threads. */
void shogi_init(void);

/* Max plies of history a Position holds (game plus search path). */
#define POS_MAX_STATES 1024

/* What changes with each move: copied forward by do_move, restored by undo. */
typedef struct {
	Key board_key;     /* XOR of board pieces and side to move */
	Key hand_key;      /* sum of hand-piece values */
	Bitboard checkers; /* pieces giving check to the side to move */
	Move move;         /* the move that led here (MOVE_NONE at the root) */
	Piece captured;    /* piece captured by that move */
	uint8_t pad;
	/* Consecutive checking moves, by each colour, ending at this position. */
	int16_t cont_check[COLOR_NB];
} PosState;

typedef struct {
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	Square king_sq[COLOR_NB]; /* SQ_NONE when that side has no king */
	int game_ply;             /* the move number of the current position (1 at start) */
	int nstates;              /* states[0..nstates-1] used; the current is last */
	Bitboard by_color[COLOR_NB];
	Bitboard by_type[PT_NB];
	Bitboard occupied;
	PosState states[POS_MAX_STATES];
} Position;

#define SFEN_STARTPOS "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"

static inline const PosState *pos_st(const Position *pos)
{
	return &pos->states[pos->nstates - 1];
}
static inline Key pos_key(const Position *pos)
{
	const PosState *st = pos_st(pos);
	return key_combine(st->board_key, st->hand_key);
}
static inline bool pos_in_check(const Position *pos)
{
	return bb_any(pos_st(pos)->checkers);
}
static inline Piece pos_piece(const Position *pos, Square sq)
{
	return pos->board[sq];
}
static inline Bitboard pos_pieces(const Position *pos, Color c, PieceType pt)
{
	return bb_and(pos->by_color[c], pos->by_type[pt]);
}
/* Number of moves made since the position was set up. */
static inline int pos_history_len(const Position *pos)
{
	return pos->nstates - 1;
}

/* Sets the start position. */
void pos_set_startpos(Position *pos);

/*
 * Sets a position from a board, hands and side to move. Checks it can occur:
 * at most one king per side, no pawn, lance or knight that could never move,
 * no two unpromoted pawns of a side on a file, no more pieces of a type in all
 * (board and hands) than HAND_MAX (what a hand can count).
 * Returns 0 or SHOGI_EILLEGAL with a message in err (SHOGI_ERRLEN bytes, may
 * be NULL); pos is left undefined then. Accepted on purpose, because problem
 * and perft positions use them (perft.tsv, rules.tsv): no kings or one king,
 * more material than one set (up to HAND_MAX), and the side not to move
 * standing in check.
 */
JOSEKI_MUST_USE int pos_set(Position *pos, const Piece board[SQ_NB], const Hand hand[COLOR_NB],
                            Color side, int game_ply, char *err);

/*
 * Checks what pos_set takes on purpose and a game from the start position
 * never reaches (a book holds game positions only: bookdb_query_position):
 * both kings on the board; no more pieces of a kind, board and both hands,
 * promoted ones counted as their base kind, than one set has (SET_COUNT:
 * king 2, rook 2, bishop 2, gold 4, silver 4, knight 4, lance 4, pawn 18);
 * and the side not to move not in check (its king could be taken). Returns
 * 0 or SHOGI_EILLEGAL with the reason in err (SHOGI_ERRLEN bytes, may be
 * NULL), e.g. "3 rooks (board and hands, promoted counted): a set has 2".
 */
extern const uint8_t SET_COUNT[PT_NB];
JOSEKI_MUST_USE int pos_check_game(const Position *pos, char *err);

/* Makes a legal move (undefined for an illegal one). The caller ensures
 * pos_history_len(pos) < POS_MAX_STATES - 1. */
void pos_do_move(Position *pos, Move m);
/* Unmakes the last move made. */
void pos_undo_move(Position *pos);
/* Passes the turn (for search null-move); undone by pos_undo_move. */
void pos_do_null_move(Position *pos);

/* The key the position would have after the legal move m, without making it. */
Key pos_key_after(const Position *pos, Move m);

/* Pieces of colour c attacking sq, with occupancy occ. */
Bitboard pos_attackers_to(const Position *pos, Color c, Square sq, Bitboard occ);
static inline bool pos_attacked(const Position *pos, Color c, Square sq)
{
	return bb_any(pos_attackers_to(pos, c, sq, pos->occupied));
}

/* True when the legal move m gives check. */
bool pos_gives_check(const Position *pos, Move m);

/* True when m is a legal move in pos (any 16-bit value may be passed). */
bool pos_is_legal(const Position *pos, Move m);

/* The piece that the move m moves (for a drop, the dropped piece). */
Piece pos_moved_piece(const Position *pos, Move m);

/* Outcome of the game path held by the position, as far as repetition goes. */
typedef enum {
	REP_NONE = 0,
	REP_DRAW,        /* fourth occurrence, no perpetual check: a draw */
	REP_BLACK_LOSES, /* fourth occurrence while Black checked throughout */
	REP_WHITE_LOSES, /* fourth occurrence while White checked throughout */
} RepResult;

/*
 * Checks whether the current position occurs for the fourth time along the
 * history (the set-up position counts). If every move of one side since the
 * first of those occurrences gave check, that side loses (perpetual check).
 */
RepResult pos_repetition(const Position *pos);

/* Number of earlier occurrences of the current position along the history. */
JOSEKI_MUST_USE int pos_repetition_count(const Position *pos, int *first_ply_back);

/*
 * Entering-king declaration under the CSA rule for the side to move: king in
 * the opponent's camp (the three far ranks), not in check, at least ten other
 * pieces of its own in that camp, and at least 28 (Black) or 27 (White)
 * points counting those pieces and the hand (rook/bishop and their
 * promotions 5, the others 1).
 */
bool pos_declaration_ok(const Position *pos);
/* Declaration points of colour c (as above; pieces in the camp plus hand). */
JOSEKI_MUST_USE int pos_declaration_points(const Position *pos, Color c, int *pieces_in_camp);

/* Internal consistency check (for asserts and tests). */
bool pos_is_ok(const Position *pos);

#endif
