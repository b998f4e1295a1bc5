/*
 * shogi/notation.h — SFEN, USI moves, CSA moves, and USI position specs.
 *
 * Parsers never crash on any input; on failure they return a negative
 * SHOGI_E* code and write a message naming the offending token into err
 * (SHOGI_ERRLEN bytes; may be NULL).
 */
#ifndef SHOGI_NOTATION_H
#define SHOGI_NOTATION_H

#include <stddef.h>

#include "shogi/position.h"
#include "shogi/errors.h"

/*
 * Parses an SFEN "board side hand [ply]" leniently: any hand order, repeated
 * letters ("SPbslpppp"), a missing move number, a leading "sfen ". Trailing
 * text after the move number is an error unless *rest is non-NULL, which
 * then receives the unparsed remainder.
 */
JOSEKI_MUST_USE int sfen_parse(Position *out, const char *sfen, const char **rest, char *err);
/* Writes the canonical SFEN (hand R B G S N L P, Black first, counts > 1,
 * "-" for empty) with the position's move number. Returns the length.
 * SFEN_MAX bytes are always enough. */
#define SFEN_MAX 160
size_t sfen_write(const Position *pos, char *out, size_t len);
/* As sfen_write but with the given move number. */
size_t sfen_write_ply(const Position *pos, int ply, char *out, size_t len);

/* USI moves: "7g7f", "8h2b+", "P*5e". Syntax only; see pos_is_legal. */
JOSEKI_MUST_USE int usi_move_parse(Move *out, const char *s, size_t len, char *err);
/* Writes the USI form (at most 5 chars + NUL); returns the length. */
#define USI_MOVE_MAX 8
size_t usi_move_write(Move m, char out[USI_MOVE_MAX]);
/* Parses a USI move and checks it is legal in pos. An illegal one:
 * SHOGI_EILLEGAL, err naming it and the rule it breaks ("'7g7e' is not legal
 * in this position: the pawn on 7g cannot move to 7e"; movegen_why_illegal). */
JOSEKI_MUST_USE int usi_move_parse_legal(Move *out, const Position *pos, const char *s, size_t len,
                                         char *err);

/*
 * CSA moves: "+7776FU" (sign optional when the side is known), the piece
 * named after the move, "00" as origin for a drop. Checks legality in pos:
 * an illegal move is SHOGI_EILLEGAL, err saying why without naming the move
 * ("no Black piece on 99", "not legal in this position"; the caller does).
 */
JOSEKI_MUST_USE int csa_move_parse(Move *out, const Position *pos, const char *s, size_t len,
                                   char *err);
/* Writes "+7776FU" for the legal move m in pos; returns the length. */
#define CSA_MOVE_MAX 8
size_t csa_move_write(const Position *pos, Move m, char out[CSA_MOVE_MAX]);

/* CSA two-letter piece names, indexed by PieceType ("FU".."RY"); NULL for none. */
extern const char *const CSA_PIECE_NAMES[PT_NB];
/* Parses a CSA piece name; returns PT_NONE if unknown. */
PieceType csa_piece_parse(const char *s);

/*
 * Parses a position spec as docs/shogi.md gives it: an SFEN, "startpos", or either
 * followed by "moves m1 m2 ...", with an optional leading "position " and/or
 * "sfen "; or a bare move list from the start position ("7g7f 3c3d", as a USI
 * game line; "moves 7g7f ..." too). Each move is checked for legality and
 * made; on an illegal move the error names it and its index.
 */
JOSEKI_MUST_USE int position_parse(Position *out, const char *spec, char *err);

/*
 * The length of the line s[0..n) without a trailing comment (a '#' at its
 * start or after a blank: "<sfen>\t# game=..." in position lists) and the
 * blanks (spaces, tabs, CR) before it: 0 for a comment line. No '#' belongs to
 * an SFEN or a USI move.
 */
size_t position_line_len(const char *s, size_t n);

/*
 * The game pos holds in its history, as a position spec position_parse reads
 * back: "startpos" or "sfen <the start>", then " moves m1 m2 ..." when moves
 * were made. pos is unwound and played forward again (unchanged afterwards).
 * Returns a malloc'd string, or NULL when out of memory.
 */
char *position_spec_write(Position *pos);

#endif
