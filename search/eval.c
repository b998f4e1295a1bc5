/*
 * search/eval.c — the linear evaluation (eval.h).
 *
 * Computed from scratch at every call: one pass over the pieces for the
 * attack maps, one for the piece features, then the squares around the two
 * kings. A from-scratch evaluation cannot drift out of sync, and the same code
 * gives the tuner its features (tools/tune), so what is fitted is what runs.
 */
#include "search/eval.h"

const int EVAL_PIECE_VALUE[PT_NB] = {
    [PAWN] = 90,        [LANCE] = 315,      [KNIGHT] = 405, [SILVER] = 495,   [BISHOP] = 855,
    [ROOK] = 990,       [GOLD] = 540,       [KING] = 0,     [PRO_PAWN] = 540, [PRO_LANCE] = 540,
    [PRO_KNIGHT] = 540, [PRO_SILVER] = 540, [HORSE] = 945,  [DRAGON] = 1395,
};

const int EVAL_HAND_VALUE[HAND_PT_NB] = {
    [PAWN] = 100,   [LANCE] = 340, [KNIGHT] = 430, [SILVER] = 540,
    [BISHOP] = 920, [ROOK] = 1060, [GOLD] = 590,
};

/* Hand slots: the n-th piece of a type (n from 1) is HAND_BASE[pt] + n - 1;
 * pawns beyond the 10th share the 10th's slot. */
static const uint8_t HAND_BASE[HAND_PT_NB] = {0, 0, 10, 14, 18, 22, 24, 26};
static const uint8_t HAND_SLOTS[HAND_PT_NB] = {0, 10, 4, 4, 4, 2, 2, 4};

/* The sliders whose reach is a feature, by piece type (-1: none). */
static const int8_t MOB_KIND[PT_NB] = {-1, -1, 0, -1, -1, 1, 2, -1, -1, -1, -1, -1, -1, 3, 4};

typedef struct {
	int sum;
	EvalFeatures *f;
	const int16_t *w;
} Acc;

static inline void emit(Acc *a, int idx, int coef)
{
	a->sum += coef * a->w[idx];
	if (a->f && a->f->n < EVAL_MAX_FEATURES) {
		a->f->idx[a->f->n] = (uint16_t)idx;
		a->f->coef[a->f->n] = (int8_t)coef;
		a->f->n++;
	}
}

/* The square as colour c sees it (Black's own numbering; White's turned). */
static inline Square rel_sq(Color c, Square sq)
{
	return c == BLACK ? sq : 80 - sq;
}

/* Attack maps of one colour without its king: squares attacked at least
 * once and at least twice. */
static void attack_maps(const Position *pos, Color c, Bitboard *once, Bitboard *twice)
{
	Bitboard a1 = bb_make(0, 0), a2 = bb_make(0, 0);
	Bitboard pieces = bb_andnot(pos->by_color[c], pos->by_type[KING]);
	Square sq;
	BB_FOREACH(sq, pieces)
	{
		Bitboard a = bb_piece_attacks(pos->board[sq], sq, pos->occupied);
		a2 = bb_or(a2, bb_and(a1, a));
		a1 = bb_or(a1, a);
	}
	*once = a1;
	*twice = a2;
}

/* A place relative to a king: rank difference within ±4, file distance up to 4. */
static inline int king_rel(int dr, int df)
{
	dr = dr < -4 ? -4 : dr > 4 ? 4 : dr;
	df = df < 0 ? -df : df;
	return (dr + 4) * 5 + (df > 4 ? 4 : df);
}

/* Direction class of a king's neighbour, from the king's side: rank step dr
 * (-1 toward the enemy) and file distance adf. */
static inline int dir_class(int dr, int adf)
{
	if (dr < 0) return adf ? 0 : 1;
	if (dr == 0) return 2;
	return adf ? 3 : 4;
}

static void king_features(Acc *a, const Position *pos, Color c, int sign, const Bitboard *once,
                          const Bitboard *twice)
{
	Square k = pos->king_sq[c];
	if (k == SQ_NONE) return;
	Color them = color_flip(c);
	int kf = sq_file(k), kr = sq_rank(k);
	int undefended = 0;
	for (int df = -1; df <= 1; df++)
		for (int dr = -1; dr <= 1; dr++) {
			if (!df && !dr) continue;
			int rdr = c == BLACK ? dr : -dr; /* toward the enemy is negative */
			int cls = dir_class(rdr, df ? 1 : 0);
			int f = kf + df, r = kr + dr;
			if (f < 0 || f > 8 || r < 0 || r > 8) {
				emit(a, EVF_KEDGE + cls, sign);
				continue;
			}
			Square s = sq_make(f, r);
			Piece p = pos->board[s];
			int occ = p == PIECE_NONE ? 0 : piece_color(p) == c ? 1 : 2;
			int att = bb_test(twice[them], s) ? 2 : bb_test(once[them], s) ? 1 : 0;
			int def = bb_test(twice[c], s) ? 2 : bb_test(once[c], s) ? 1 : 0;
			emit(a, EVF_KSQ + cls * 27 + occ * 9 + att * 3 + def, sign);
			if (att && !def) undefended++;
		}
	Bitboard zone = bb_make(0, 0);
	Square n;
	BB_FOREACH(n, KING_ATK[k]) zone = bb_or(zone, KING_ATK[n]);
	bb_clear(&zone, k);
	int press = bb_count(bb_and(zone, once[them])) + bb_count(bb_and(zone, twice[them]));
	emit(a, EVF_KZONE + (press > 31 ? 31 : press), sign);
	Hand h = pos->hand[them];
	int held = hand_count(h, LANCE) + hand_count(h, KNIGHT) + hand_count(h, SILVER) +
	           hand_count(h, GOLD) + hand_count(h, BISHOP) + hand_count(h, ROOK);
	emit(a, EVF_KDANGER + undefended * 5 + (held > 4 ? 4 : held), sign);
}

static int evaluate(const Position *pos, EvalFeatures *f, const int16_t *w)
{
	Acc a = {0, f, w};
	if (f) f->n = 0;
	Bitboard once[COLOR_NB], twice[COLOR_NB];
	attack_maps(pos, BLACK, &once[BLACK], &twice[BLACK]);
	attack_maps(pos, WHITE, &once[WHITE], &twice[WHITE]);
	for (int c = 0; c < COLOR_NB; c++) {
		Color us = (Color)c, them = color_flip(us);
		int sign = c == BLACK ? 1 : -1;
		Square own_k = pos->king_sq[us], opp_k = pos->king_sq[them];
		Square rok = own_k == SQ_NONE ? SQ_NONE : rel_sq(us, own_k);
		Square rek = opp_k == SQ_NONE ? SQ_NONE : rel_sq(us, opp_k);
		int hang_side = us == pos->side ? 0 : 1;
		Bitboard hanging = bb_andnot(bb_and(pos->by_color[us], once[them]), once[us]);
		Square sq;
		BB_FOREACH(sq, pos->by_color[us])
		{
			PieceType pt = piece_type(pos->board[sq]);
			Square rs = rel_sq(us, sq);
			int t = pt - 1;
			if (pt != KING) emit(&a, EVF_MAT + pt, sign);
			int rf = sq_file(rs), rr = sq_rank(rs);
			emit(&a, EVF_PSQ + t * 45 + rr * 5 + (rf < 4 ? rf : 8 - rf), sign);
			if (pt == KING) continue;
			if (rok != SQ_NONE)
				emit(&a,
				     EVF_KOWN + t * 45 +
				         king_rel(rr - sq_rank(rok), rf - sq_file(rok)),
				     sign);
			if (rek != SQ_NONE)
				emit(&a,
				     EVF_KOPP + t * 45 +
				         king_rel(rr - sq_rank(rek), rf - sq_file(rek)),
				     sign);
			if (bb_test(hanging, sq)) emit(&a, EVF_HANG + hang_side * 14 + t, sign);
			int kind = MOB_KIND[pt];
			if (kind >= 0) {
				int n =
				    bb_count(bb_piece_attacks(pos->board[sq], sq, pos->occupied));
				emit(&a, EVF_MOB + kind * 16 + (n > 15 ? 15 : n), sign);
			}
		}
		Hand h = pos->hand[us];
		for (int pt = PAWN; pt <= GOLD; pt++) {
			int n = hand_count(h, (PieceType)pt);
			for (int i = 0; i < n; i++) {
				int slot = i < HAND_SLOTS[pt] ? i : HAND_SLOTS[pt] - 1;
				emit(&a, EVF_HAND + HAND_BASE[pt] + slot, sign);
			}
		}
		king_features(&a, pos, us, sign, once, twice);
	}
	int v = pos->side == BLACK ? a.sum : -a.sum;
	if (f && f->n < EVAL_MAX_FEATURES) {
		f->idx[f->n] = EVF_TEMPO;
		f->coef[f->n] = 1;
		f->n++;
	}
	return v + w[EVF_TEMPO];
}

int eval_features(const Position *pos, EvalFeatures *f, const int16_t *weights)
{
	return evaluate(pos, f, weights ? weights : EVAL_WEIGHTS);
}

int eval_position(const Position *pos)
{
	return evaluate(pos, NULL, EVAL_WEIGHTS);
}

int eval_material(const Position *pos)
{
	int v = 0;
	for (int pt = PAWN; pt < PT_NB; pt++) {
		if (pt == KING) continue;
		int n = bb_count(pos_pieces(pos, BLACK, (PieceType)pt)) -
		        bb_count(pos_pieces(pos, WHITE, (PieceType)pt));
		v += n * EVAL_PIECE_VALUE[pt];
	}
	for (int pt = PAWN; pt <= GOLD; pt++)
		v += (hand_count(pos->hand[BLACK], (PieceType)pt) -
		      hand_count(pos->hand[WHITE], (PieceType)pt)) *
		     EVAL_HAND_VALUE[pt];
	return v;
}
