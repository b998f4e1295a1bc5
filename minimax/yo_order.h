/*
 * minimax/yo_order.h — YaneuraOu's legal move generation order (peta-shock's
 * tie order), for a Black-to-move position.
 */
#ifndef MINIMAX_YO_ORDER_H
#define MINIMAX_YO_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "shogi/position.h"
#include "shogi/errors.h"

#define YO_LIST_MAX 1024 /* pseudo-legal moves of a position, with room to spare */

/* Rank of legal move m in YaneuraOu's generation order (smaller first);
 * in_check: pos is in check (evasions). */
uint32_t yo_gen_rank(const Position *pos, Move m, bool in_check);

/* YaneuraOu's MoveList<LEGAL_ALL> order of the nl legal moves of pos into out
 * (at least YO_LIST_MAX); returns how many (nl). seen: a 65536-bit scratch
 * bitmap, all zero on entry and exit. */
JOSEKI_MUST_USE int yo_legal_order(Move *out, const Position *pos, const Move *legal, int nl,
                                   uint64_t *seen);

#endif
