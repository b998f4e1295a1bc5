/*
 * search/eval.h — the built-in engine's static evaluation: material (board and
 * hand) plus piece placement (advancement, king shelter, pressure near the
 * enemy king). Pure function of the position; no state, no allocation.
 */
#ifndef SEARCH_EVAL_H
#define SEARCH_EVAL_H

#include "shogi/position.h"

/* Material values in centipawns, indexed by PieceType (board pieces). */
extern const int EVAL_PIECE_VALUE[PT_NB];
/* Value of a piece held in hand, indexed PAWN..GOLD (hand pieces are worth
 * a little more than the same piece on the board: they can go anywhere). */
extern const int EVAL_HAND_VALUE[HAND_PT_NB];

/* Static value of pos in centipawns from the side to move. */
int eval_position(const Position *pos);

/* Material only, from Black's point of view (for tests and diagnostics). */
int eval_material(const Position *pos);

#endif
