/*
 * shogi/spec.h — writing a USI position spec: the set-up position ("startpos",
 * or "sfen <SFEN>") and "moves m1 m2 ..." when there are any, the text
 * position_parse (shogi/notation.h) reads and a USI engine's "position"
 * command carries (docs/shogi.md). One writer for every caller: the USI
 * driver, joseki select's lines, and position_spec_write (notation.h: the
 * malloc'd spec of a game, for the match's records and the game readers).
 */
#ifndef SHOGI_SPEC_H
#define SHOGI_SPEC_H

#include <stddef.h>

#include "shogi/notation.h"
#include "shogi/position.h"

/* Room for the spec of a set-up position and n moves (NUL included). */
#define POSITION_SPEC_MAX(n) ((size_t)SFEN_MAX + 16 + (size_t)(n)*USI_MOVE_MAX)

/*
 * The spec of root_sfen (an SFEN; "startpos" is written when it is the start
 * position's, SFEN_STARTPOS, move number 1 included) followed by moves[0..n).
 * Writes at most cap bytes into out, always NUL-terminated when cap > 0, and
 * returns the length of the whole spec (as snprintf: >= cap means it was cut).
 */
size_t position_spec_format(char *out, size_t cap, const char *root_sfen, const Move *moves, int n);

/*
 * The spec of the game pos holds: the position its history starts from and
 * the moves played since. pos is unwound and played forward again (left as
 * it was). As position_spec_format otherwise.
 */
size_t position_spec_of_game(char *out, size_t cap, Position *pos);

#endif
