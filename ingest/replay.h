/*
 * ingest/replay.h — replays a game under the rules and decides how it ended.
 *
 * Every move is checked for legality before it is made. After each move the
 * rules are asked, in this order: fourth repetition (a draw, or a loss for the
 * side that gave check throughout: perpetual check), mate (the side to move
 * has no legal move), the record's move limit. When the moves run out, the
 * record's special ending is judged: %TORYO resign, %KACHI a declaration that
 * wins if pos_declaration_ok() holds and loses otherwise, %TIME_UP, %CHUDAN,
 * ... A record's claim that the rules do not confirm (a %SENNICHITE without a
 * fourth repetition) gives "none". Without a % line, floodgate's summary
 * comment is taken as a hint (time up, illegal move, ...).
 */
#ifndef INGEST_REPLAY_H
#define INGEST_REPLAY_H

#include <stddef.h>

#include "ingest/csa.h"
#include "shogi/position.h"

typedef enum {
	REPLAY_END_NONE = 0, /* the record just stops */
	REPLAY_END_RESIGN,
	REPLAY_END_REPETITION,      /* fourth occurrence: a draw */
	REPLAY_END_PERPETUAL_CHECK, /* the checking side loses */
	REPLAY_END_DECLARATION,     /* entering-king declaration: valid wins, invalid loses */
	REPLAY_END_MATE,            /* the side to move has no legal move */
	REPLAY_END_ILLEGAL_MOVE,    /* an illegal move in the record (or recorded as such) */
	REPLAY_END_TIME_UP,
	REPLAY_END_MAX_MOVES,   /* the move limit was reached without a result */
	REPLAY_END_INTERRUPTED, /* %CHUDAN */
} ReplayEnd;

typedef enum {
	REPLAY_WINNER_NONE = 0,
	REPLAY_WINNER_BLACK,
	REPLAY_WINNER_WHITE,
	REPLAY_WINNER_DRAW,
} ReplayWinner;

/* "none", "resign", "repetition", ... as docs/csa.md spells them. */
const char *replay_end_name(ReplayEnd end);
/* "none", "black", "white", "draw". */
const char *replay_winner_name(ReplayWinner w);

typedef struct {
	int plies; /* legal moves made */
	ReplayEnd end;
	ReplayWinner winner;
	int error_line;         /* line of the offending move or statement; 0 if no error */
	char error[CSA_ERRLEN]; /* "illegal move -3334FU (reason)"; "" if none */
} ReplayResult;

/*
 * Called before each legal move is made, with the position before it. index
 * is the move's index in the record (0-based). A non-zero return stops the
 * replay and is returned by replay_csa / replay_usi.
 */
typedef int (*replay_move_fn)(void *ctx, const Position *before, Move m, size_t index);

/*
 * Replays rec from its start position; pos receives the final position.
 * Returns 0 when the game was replayed (an illegal move is a result, not a
 * failure: res->end is REPLAY_END_ILLEGAL_MOVE and res->error says why),
 * CSA_EILLEGAL when the start position is impossible or the game is longer
 * than a Position can hold (res->error says which), or the callback's value.
 * fn may be NULL.
 */
int replay_csa(ReplayResult *res, Position *pos, const CsaRecord *rec, replay_move_fn fn,
               void *ctx);

/*
 * Replays a USI game given as text (not NUL-terminated, len bytes):
 * "startpos moves 7g7f ...", "sfen <sfen> moves ...", with an optional
 * leading "position ", or a bare move list from the start position. line is
 * the text's line in its input, for res->error_line. Returns 0, SHOGI_EPARSE
 * when the position part is malformed (res->error says why), or the
 * callback's value.
 */
int replay_usi(ReplayResult *res, Position *pos, const char *text, size_t len, int line,
               replay_move_fn fn, void *ctx);

/* Called with each position of replay_file_positions; non-zero stops it. */
typedef int (*replay_pos_fn)(void *ctx, const Position *pos);

#define REPLAY_ERRLEN 512

/*
 * Each position along the games of path, up to max_ply moves into each game
 * (the position after the last move too, when the game is shorter), in order:
 * CSA records if the name ends in .csa (several games a file, separated by
 * "/"), else one USI game a line ("startpos moves ...", "sfen ... moves ...";
 * blank lines and # comments skipped). What `think --from-kifu` thinks first.
 * Returns 0; CSA_EIO when path cannot be read, CSA_EPARSE for a malformed
 * record or line or an impossible game (err, REPLAY_ERRLEN bytes, names the file
 * and the line); CSA_ENOMEM; or fn's non-zero value. Positions given to fn
 * before a failure stay given.
 */
int replay_file_positions(const char *path, int max_ply, replay_pos_fn fn, void *ctx, char *err);

#endif
