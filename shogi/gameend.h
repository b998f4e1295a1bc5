/*
 * shogi/gameend.h — how a game ended: one vocabulary for every game-record
 * format and every part that plays or replays games.
 *
 * Two things are told apart. A record *claims* an ending with a word (CSA's
 * %TORYO, KIF's 投了, JKF's "TORYO"): GameClaim lists those words, whatever
 * the format (KIF's results map onto them, docs/ingest.md). The *rules* then
 * decide what really happened (GameEnd, GameWinner): a claim is judged with
 * the position the moves reached (game_claim_judge), so a %SENNICHITE the
 * moves do not confirm decides nothing and an invalid %KACHI loses.
 */
#ifndef SHOGI_GAMEEND_H
#define SHOGI_GAMEEND_H

#include "shogi/position.h"

/* How a game ended, by the rules. */
typedef enum {
	GAME_END_NONE = 0, /* the record just stops, or claims what the rules do not confirm */
	GAME_END_RESIGN,
	GAME_END_REPETITION,      /* fourth occurrence: a draw */
	GAME_END_PERPETUAL_CHECK, /* the checking side loses */
	GAME_END_DECLARATION,     /* entering-king declaration: valid wins, invalid loses */
	GAME_END_MATE,            /* the side to move has no legal move */
	GAME_END_ILLEGAL_MOVE,    /* an illegal move in the record (or recorded as such) */
	GAME_END_TIME_UP,
	GAME_END_MAX_MOVES,   /* the move limit was reached without a result */
	GAME_END_INTERRUPTED, /* stopped (CSA's %CHUDAN, KIF's 中断 and 封じ手) */
} GameEnd;

typedef enum {
	GAME_WINNER_NONE = 0,
	GAME_WINNER_BLACK,
	GAME_WINNER_WHITE,
	GAME_WINNER_DRAW,
} GameWinner;

/* "none", "resign", "repetition", "perpetual_check", "declaration", "mate",
 * "illegal_move", "time_up", "max_moves", "interrupted" (the names of
 * `joseki replay --json`). */
const char *game_end_name(GameEnd end);
/* "none", "black", "white", "draw". */
const char *game_winner_name(GameWinner w);
/* The winner for colour c. */
static inline GameWinner game_winner_of(Color c)
{
	return c == BLACK ? GAME_WINNER_BLACK : GAME_WINNER_WHITE;
}

/*
 * The ending a record claims, in CSA's words (the CSA V2.2 special moves;
 * JKF uses the same words, KIF's results map onto them).
 */
typedef enum {
	GAME_CLAIM_NONE = 0, /* nothing claimed: the record just stops */
	GAME_CLAIM_TORYO,    /* the side to move resigns */
	GAME_CLAIM_CHUDAN,   /* interrupted */
	GAME_CLAIM_SENNICHITE,
	GAME_CLAIM_TIME_UP, /* the side to move lost on time */
	GAME_CLAIM_ILLEGAL_MOVE,
	GAME_CLAIM_BLACK_ILLEGAL_ACTION, /* +ILLEGAL_ACTION: White wins */
	GAME_CLAIM_WHITE_ILLEGAL_ACTION, /* -ILLEGAL_ACTION: Black wins */
	GAME_CLAIM_JISHOGI,
	GAME_CLAIM_KACHI, /* the side to move declares */
	GAME_CLAIM_HIKIWAKE,
	GAME_CLAIM_MATTA,
	GAME_CLAIM_TSUMI, /* the side to move is mated */
	GAME_CLAIM_FUZUMI,
	GAME_CLAIM_ERROR,
	GAME_CLAIM_OTHER /* a word no format here defines */
} GameClaim;

/* "TORYO", "CHUDAN", "+ILLEGAL_ACTION", ... as CSA spells them (without the
 * %); "" for GAME_CLAIM_NONE and GAME_CLAIM_OTHER. */
const char *game_claim_word(GameClaim c);
/* The claim a CSA/JKF word names ("TORYO", "+ILLEGAL_ACTION"; n bytes, no %),
 * or GAME_CLAIM_OTHER. */
GameClaim game_claim_parse(const char *word, size_t n);

/*
 * Judges a claimed ending with the position the moves reached (the side to
 * move there is the one a claim like TORYO names):
 *   TORYO, TSUMI          resign, the side not to move wins
 *   TIME_UP               time_up, the side not to move wins
 *   KACHI                 declaration, won by the side to move if
 *                         pos_declaration_ok() holds, else lost
 *   JISHOGI, HIKIWAKE     declaration if it is valid, else none with a draw
 *   CHUDAN                interrupted
 *   ILLEGAL_MOVE          illegal_move, the side not to move wins
 *   ±ILLEGAL_ACTION       illegal_move, the other colour wins
 *   anything else         *end and *winner left as they are (a SENNICHITE the
 *                         moves did not confirm, MATTA, ...: the caller's none)
 * Repetition and mate are not claims the record decides: the caller has
 * asked the rules about them before.
 */
void game_claim_judge(GameClaim c, const Position *pos, GameEnd *end, GameWinner *winner);

#endif
