/*
 * ingest/replay.h — replays a game record under the rules and decides how it
 * ended (shogi/gameend.h).
 *
 * Every move is checked for legality before it is made. After each move the
 * rules are asked, in this order: fourth repetition (a draw, or a loss for the
 * side that gave check throughout: perpetual check), mate (the side to move
 * has no legal move), the record's move limit. When the moves run out, the
 * ending the record claims is judged (game_claim_judge): TORYO resign, KACHI a
 * declaration that wins if pos_declaration_ok() holds and loses otherwise,
 * TIME_UP, CHUDAN, ... A claim the rules do not confirm (a SENNICHITE without
 * a fourth repetition) gives "none". Without a claim, floodgate's summary
 * comment is taken as a hint (time up, illegal move, ...).
 */
#ifndef INGEST_REPLAY_H
#define INGEST_REPLAY_H

#include <stddef.h>

#include "ingest/kifu.h"
#include "ingest/walk.h"
#include "shogi/gameend.h"
#include "shogi/position.h"

typedef struct {
	int plies; /* legal moves made */
	GameEnd end;
	GameWinner winner;
	int error_line;          /* line of the offending move or statement; 0 if no error */
	char error[KIFU_ERRLEN]; /* "illegal move -3334FU (reason)"; "" if none */
} ReplayResult;

/*
 * Called before each legal move is made, with the position before it. index
 * is the move's index in the record (0-based). A non-zero return stops the
 * replay and is returned by replay_kifu / replay_usi.
 */
typedef int (*replay_move_fn)(void *ctx, const Position *before, Move m, size_t index);

/*
 * Replays rec from its start position; pos receives the final position.
 * Returns 0 when the game was replayed (an illegal move is a result, not a
 * failure: res->end is GAME_END_ILLEGAL_MOVE and res->error says why, with
 * the move as the record writes it), KIFU_EILLEGAL when the start position is
 * impossible or the game is longer than a Position can hold (res->error says
 * which), or the callback's value. fn may be NULL.
 */
int replay_kifu(ReplayResult *res, Position *pos, const KifuRecord *rec, replay_move_fn fn,
                void *ctx);

/*
 * Replays a USI game given as text (not NUL-terminated, len bytes):
 * "startpos moves 7g7f ...", "sfen <sfen> moves ...", with an optional
 * leading "position ", or a bare move list from the start position (one line
 * of a USI game list, ingest/kifu.h). line is the text's line in its input,
 * for res->error_line. Returns 0, SHOGI_EPARSE when the position part is
 * malformed (res->error says why), KIFU_ENOMEM, or the callback's value.
 */
int replay_usi(ReplayResult *res, Position *pos, const char *text, size_t len, int line,
               replay_move_fn fn, void *ctx);

#define REPLAY_ERRLEN 512

/*
 * Called with each game of replay_file_games after its replay: input is the
 * file it came from, rc what replay_kifu returned (0, or KIFU_EILLEGAL for an
 * impossible start position or a game too long: pos is then not to be
 * used), res its result, pos the position reached with
 * the game's legal moves in its history (position_spec_write gives the game
 * back). err (REPLAY_ERRLEN bytes) is the caller's, for a message. A
 * non-zero return stops the walk and is returned.
 */
typedef int (*replay_game_fn)(void *ctx, const char *input, const KifuRecord *rec, int rc,
                              const ReplayResult *res, Position *pos, char *err);

/*
 * Each game of path — a file in any format kifu.h reads, or a directory or
 * an archive as ingest/walk.h walks them — replayed, in order: what `think
 * --from-kifu`, extend, prune and match --openings read. Returns 0; KIFU_EIO
 * when a file cannot be read, KIFU_EPARSE for a malformed record, KIFU_ENOMEM
 * (err, REPLAY_ERRLEN bytes, says "file:line: what"); or fn's non-zero value.
 * st (may be NULL) counts what the walk left out.
 */
int replay_file_games(const char *path, replay_game_fn fn, void *ctx, WalkStats *st, char *err);

/* Called with each position of replay_file_positions; non-zero stops it. */
typedef int (*replay_pos_fn)(void *ctx, const Position *pos);

/*
 * Each position along the games of path (as replay_file_games reads it), up
 * to max_ply moves into each game (the position after the last move too, when
 * the game is shorter), in order. What `think --from-kifu` thinks first.
 * Returns what replay_file_games returns; a game with an illegal move or an
 * impossible start is KIFU_EPARSE ("file:line: illegal move ..."), after the
 * positions before its illegal move. Positions given to fn before a failure
 * stay given.
 */
int replay_file_positions(const char *path, int max_ply, replay_pos_fn fn, void *ctx, char *err);

#endif
