/*
 * search/eval.h — the built-in engine's static evaluation: a linear function
 * of features of the position, with weights fitted to data
 * (search/eval_weights.c, made by tools/tune; see docs/search.md).
 *
 * The features, each counted +1 for Black's and -1 for White's (every
 * colour's features are taken from its own side of the board):
 *   - material on the board, and in hand by count (the n-th piece of a kind in
 *     hand has its own worth);
 *   - each piece's rank and distance from the side edge, and its place relative
 *     to its own king and to the enemy king (rank difference within ±4, file
 *     distance up to 4);
 *   - king safety: each square next to a king by direction, by what stands on
 *     it and by how often each side attacks it; the board's edge; the number
 *     of squares next to it the enemy attacks and the king's side does not
 *     defend, by how many pieces the enemy holds in hand;
 *   - pieces attacked and not defended, by type, for the side to move and the
 *     other (the side to move may take the other's);
 *   - the number of squares each lance, bishop, rook, horse and dragon attacks;
 * plus a bonus for the side to move. Pure function of the position; no state,
 * no allocation.
 */
#ifndef SEARCH_EVAL_H
#define SEARCH_EVAL_H

#include <stdint.h>

#include "shogi/position.h"

/* Material values in centipawns, indexed by PieceType (board pieces): the
 * exchange values of the search's SEE and of eval_material. */
extern const int EVAL_PIECE_VALUE[PT_NB];
/* Value of a piece held in hand, indexed PAWN..GOLD (hand pieces are worth
 * a little more than the same piece on the board: they can go anywhere). */
extern const int EVAL_HAND_VALUE[HAND_PT_NB];

/* The feature layout (indices into EVAL_WEIGHTS). */
enum {
	EVF_MAT = 0,                    /* [piece type] */
	EVF_HAND = EVF_MAT + PT_NB,     /* [hand slot]: see eval.c */
	EVF_PSQ = EVF_HAND + 40,        /* [type - 1][relative rank][file from the edge] */
	EVF_KOWN = EVF_PSQ + 14 * 45,   /* [type - 1][rank diff + 4][file dist], clamped */
	EVF_KOPP = EVF_KOWN + 14 * 45,  /* same, to the enemy king */
	EVF_KSQ = EVF_KOPP + 14 * 45,   /* [direction 5][occupant 3][att 3][def 3] */
	EVF_KEDGE = EVF_KSQ + 5 * 27,   /* [direction 5] */
	EVF_KDANGER = EVF_KEDGE + 5,    /* [undefended attacked 0..8][enemy hand 0..4] */
	EVF_HANG = EVF_KDANGER + 9 * 5, /* [side to move's 0 / other's 1][type - 1] */
	EVF_MOB = EVF_HANG + 28,        /* [lance, bishop, rook, horse, dragon][squares 0..15] */
	EVF_KZONE = EVF_MOB + 5 * 16,   /* [enemy attacks near the king 0..31] */
	EVF_TEMPO = EVF_KZONE + 32,     /* the side to move's bonus (not counted ±) */
	EVAL_NFEATURES = EVF_TEMPO + 1
};
#define EVAL_MAX_FEATURES 512

/* The weights, centipawns (search/eval_weights.c). */
extern const int16_t EVAL_WEIGHTS[EVAL_NFEATURES];

/* The features of a position, Black's point of view: value = Σ coef × weight,
 * and the tempo feature from the side to move's. */
typedef struct {
	int n;
	uint16_t idx[EVAL_MAX_FEATURES];
	int8_t coef[EVAL_MAX_FEATURES];
} EvalFeatures;

/* Static value of pos in centipawns from the side to move. */
int eval_position(const Position *pos);

/* The same value with the features it adds up (f may be NULL), and optional
 * weights instead of EVAL_WEIGHTS (the tuner's; NULL: the built-in ones). */
int eval_features(const Position *pos, EvalFeatures *f, const int16_t *weights);

/* Material only, from Black's point of view (for tests and diagnostics). */
int eval_material(const Position *pos);

#endif
