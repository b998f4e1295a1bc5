/*
 * search/mate.h — short mates for the built-in engine: the checking moves of a
 * position, a mate-in-1 test and a mate-in-3 search.
 *
 * Everything here plays by the rules core: a move is only ever one that
 * movegen_is_legal accepts, so a mate by pawn drop (uchifuzume, illegal) is
 * never found, played or counted as a mate. Nothing allocates; pos is
 * modified during the call and restored before it returns.
 */
#ifndef SEARCH_MATE_H
#define SEARCH_MATE_H

#include <stdint.h>

#include "shogi/movegen.h"
#include "shogi/position.h"

/*
 * The legal moves of the side to move that give check (out: MOVEGEN_MAX
 * entries), each once. With pawn_drops false, pawn drops are left out (a
 * pawn-drop check can never mate at once: that mate would be illegal).
 * Returns the count.
 */
int mate_gen_checks(const Position *pos, Move *out, bool pawn_drops);

/* A legal move that mates at once, or MOVE_NONE. Against a bare enemy (at
 * most 4 pieces, nothing but pawns in hand) a move that leaves it without a
 * legal move, check or not, also counts (no legal move loses in shogi). */
Move mate_in_1(Position *pos);

/*
 * A move that mates in at most 3 plies (check, any reply, mate), or
 * MOVE_NONE. *nodes counts the positions visited; the search gives up (and
 * returns MOVE_NONE) once it has visited budget of them (0: no budget).
 */
Move mate_in_3(Position *pos, uint64_t *nodes, uint64_t budget);

#endif
