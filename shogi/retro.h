/*
 * shogi/retro.h — retrograde moves: which positions could have led here?
 *
 * For a position P, retro_parents() lists candidate parents Q, each as the key Q
 * would have and the move m that takes Q to P, without building Q. The list is a
 * superset: a candidate may be a set-up no game reaches (a capture leaving a
 * hand no game could have produced), or a pawn drop that mates, which is not
 * tested; so a caller looks each key up (the book) and then verifies m forward
 * on the real Q with movegen.
 * It is complete: every pair (Q, m) with m legal in Q and Q after m == P is
 * listed, for every Q in which the side not to move is not in check (every
 * position of legal play; set-up positions where it is are not parents).
 * Minimax uses it to find the book's transposition edges into a new position.
 */
#ifndef SHOGI_RETRO_H
#define SHOGI_RETRO_H

#include "shogi/position.h"
#include "shogi/errors.h"

/* A candidate parent: its key, and the move from it to the position asked about,
 * exactly as movegen_legal() on the parent would give it. */
typedef struct {
	Key key;
	Move move;
} RetroMove;

/*
 * The most candidates retro_parents() can return for any position pos_set()
 * accepts. The origins a piece of the mover can have come from, as itself or
 * unpromoted before promoting: dragon or horse 36, rook or bishop 16, promoted
 * lance 13, promoted silver 11, king 8, promoted knight 8, tokin 7, gold 6. At
 * most HAND_MAX of each kind (3 + 3 big pieces, 7 each of lances, silvers,
 * knights and golds, 31 pawns) makes 707 origins. Each stands for up to 14
 * parents (no capture, or one of the seven hand types captured as itself or
 * promoted); one drop per piece adds at most 65: 9,963 in all. The buffer is
 * about 240 KB, so give it a static or heap home. Game positions give tens to a
 * few hundred; crowded set-ups with every hand type about 1,300.
 */
#define RETRO_MAX 10240

/*
 * Fills out (RETRO_MAX entries) with candidate parents of pos and returns their
 * count (0 or more; no pair twice). In every parent the side to move is the
 * opponent of pos->side. Keys follow from pos's own key (zobrist.h): the
 * board part is XORed with the moved piece off its square and onto its origin,
 * the side, and a captured piece put back; the hand part loses the captured
 * piece or regains the dropped one. Filtered out, as no legal parent can have
 * them: a promotion with neither square in the mover's zone; a pawn drop onto a
 * file where the mover has another pawn; a captured pawn, lance or knight that
 * could never move where it stood, or a pawn beside another on its file; a
 * parent whose side not to move would be in check; and every parent when pos's
 * side not to move stands in check (a set-up no move can lead to). No
 * allocation; pos is only read, so threads may share it.
 */
JOSEKI_MUST_USE int retro_parents(const Position *pos, RetroMove *out);

#endif
