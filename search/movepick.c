/*
 * search/movepick.c — the built-in engine's move ordering: static exchange
 * evaluation, the histories (butterfly, continuation, capture; killers and
 * counter moves), and the staged move picker of the main and quiescence
 * searches (engine_priv.h declares them; alphabeta.c uses them).
 */
#include <stdlib.h>

#include "search/engine_priv.h"
#include "search/eval.h"
#include "search/mate.h"

#define HIST_LIMIT 16384 /* histories saturate here (gravity) */

/* ---- static exchange ---------------------------------------------------- */

/* A capture's swing: the piece leaves the board and joins the capturer's hand. */
int ab_see_value(PieceType pt)
{
	if (pt == KING) return 20000;
	return EVAL_PIECE_VALUE[pt] + EVAL_HAND_VALUE[pt_unpromote(pt)];
}

/*
 * True when the exchange on the destination of m, each side taking back with
 * its least valuable piece and free to stop, leaves the mover at least
 * threshold. Pins are ignored; a promotion's gain counts for the first move.
 */
bool ab_see_ge(const Position *pos, Move m, int threshold)
{
	Square to = move_to(m);
	Color us = pos->side;
	Bitboard occ = pos->occupied;
	int swap;
	PieceType next;
	if (move_is_drop(m)) {
		swap = -threshold;
		if (swap < 0) return false;
		next = move_drop_type(m);
		bb_set(&occ, to);
	} else {
		Square from = move_from(m);
		Piece cap = pos->board[to];
		PieceType pt = piece_type(pos->board[from]);
		swap = (cap ? ab_see_value(piece_type(cap)) : 0) - threshold;
		next = pt;
		if (move_is_promote(m)) {
			swap += EVAL_PIECE_VALUE[pt + PROMOTE] - EVAL_PIECE_VALUE[pt];
			next = (PieceType)(pt + PROMOTE);
		}
		if (swap < 0) return false;
		bb_clear(&occ, from);
		bb_set(&occ, to);
	}
	swap = ab_see_value(next) - swap;
	if (swap <= 0) return true;
	Color stm = us;
	int res = 1;
	for (;;) {
		stm = color_flip(stm);
		Bitboard att = bb_and(pos_attackers_to(pos, stm, to, occ), occ);
		bb_clear(&att, to);
		if (bb_empty(att)) break;
		res ^= 1;
		/* The least valuable attacker. */
		Square best = SQ_NONE;
		int bv = 1 << 30;
		Square s;
		BB_FOREACH(s, att)
		{
			int v = ab_see_value(piece_type(pos->board[s]));
			if (v < bv) bv = v, best = s;
		}
		if (piece_type(pos->board[best]) == KING) {
			Bitboard other =
			    bb_and(pos_attackers_to(pos, color_flip(stm), to, occ), occ);
			bb_clear(&other, to);
			return bb_any(other) ? (bool)(res ^ 1) : (bool)res;
		}
		swap = bv - swap;
		if (swap < res) break;
		bb_clear(&occ, best);
	}
	return res != 0;
}

/* ---- histories ------------------------------------------------------------ */

void ab_hist_update(int16_t *h, int bonus)
{
	int v = *h + bonus - *h * abs(bonus) / HIST_LIMIT;
	*h = (int16_t)(v > HIST_LIMIT ? HIST_LIMIT : v < -HIST_LIMIT ? -HIST_LIMIT : v);
}

int ab_stat_bonus(int depth)
{
	int b = 16 * depth * depth + 32 * depth - 16;
	return b > 1600 ? 1600 : b;
}

int ab_quiet_score(const Engine *e, const Stack *ss, Move m, int pidx)
{
	Square to = move_to(m);
	int v = 2 * e->main_hist[e->pos.side][from_idx(m)][to];
	if ((ss - 1)->cont) v += (*(ss - 1)->cont)[pidx][to];
	if ((ss - 2)->cont) v += (*(ss - 2)->cont)[pidx][to];
	if ((ss - 4)->cont) v += (*(ss - 4)->cont)[pidx][to] / 2;
	return v;
}

void ab_update_quiet(Engine *e, Stack *ss, Move m, int pidx, int bonus)
{
	Square to = move_to(m);
	ab_hist_update(&e->main_hist[e->pos.side][from_idx(m)][to], bonus);
	if ((ss - 1)->cont) ab_hist_update(&(*(ss - 1)->cont)[pidx][to], bonus);
	if ((ss - 2)->cont) ab_hist_update(&(*(ss - 2)->cont)[pidx][to], bonus);
	if ((ss - 4)->cont) ab_hist_update(&(*(ss - 4)->cont)[pidx][to], bonus / 2);
}

/* A best quiet move: killers, counter move and histories (the quiets tried
 * before it lose what it gains). */
void ab_update_quiet_stats(Engine *e, Stack *ss, Move best, const Move *quiets, int nq, int depth)
{
	const Position *pos = &e->pos;
	int bonus = ab_stat_bonus(depth);
	if (ss->killers[0] != best) {
		ss->killers[1] = ss->killers[0];
		ss->killers[0] = best;
	}
	ab_update_quiet(e, ss, best, piece_idx(moved_piece(pos, best)), bonus);
	if (real_move((ss - 1)->move)) e->counter[(ss - 1)->pidx][(ss - 1)->to] = best;
	for (int i = 0; i < nq; i++)
		if (quiets[i] != best)
			ab_update_quiet(e, ss, quiets[i], piece_idx(moved_piece(pos, quiets[i])),
			                -bonus);
}

int16_t *ab_capt_entry(Engine *e, const Position *pos, Move m)
{
	Piece cap = pos->board[move_to(m)];
	return &e->capt_hist[piece_idx(moved_piece(pos, m))][move_to(m)][piece_type(cap)];
}

/* ---- move picking --------------------------------------------------------- */

static inline Move pick_best(Picker *p)
{
	int best = p->i;
	for (int j = p->i + 1; j < p->n; j++)
		if (p->scores[j] > p->scores[best]) best = j;
	Move m = p->moves[best];
	int s = p->scores[best];
	p->moves[best] = p->moves[p->i];
	p->scores[best] = p->scores[p->i];
	p->moves[p->i] = m;
	p->scores[p->i] = s;
	p->i++;
	return m;
}

static int capture_order(Engine *e, const Position *pos, Move m)
{
	Piece cap = pos->board[move_to(m)];
	int v = cap ? ab_see_value(piece_type(cap)) : 0;
	if (move_is_promote(m)) v += 400;
	return 8 * v + (cap ? *ab_capt_entry(e, pos, m) : 0);
}

void ab_picker_init(Picker *p, const Engine *e, const Stack *ss, Move tt_move, bool in_check,
                    bool qsearch, bool qchecks)
{
	const Position *pos = &e->pos;
	p->n = p->i = p->nbad = p->ibad = 0;
	p->skip_quiets = false;
	p->qchecks = qchecks;
	p->tt_move = MOVE_NONE;
	if (tt_move != MOVE_NONE && movegen_is_legal(pos, tt_move) &&
	    (!qsearch || in_check || is_tactical(pos, tt_move)))
		p->tt_move = tt_move;
	p->stage = ST_TT;
	p->next_stage = in_check  ? ST_EVASIONS_INIT
	                : qsearch ? ST_QCAPTURES_INIT
	                          : ST_CAPTURES_INIT;
	p->refut[0] = ss->killers[0];
	p->refut[1] = ss->killers[1];
	p->refut[2] =
	    real_move((ss - 1)->move) ? e->counter[(ss - 1)->pidx][(ss - 1)->to] : MOVE_NONE;
}

bool ab_is_refutation(const Picker *p, Move m)
{
	return m == p->refut[0] || m == p->refut[1] || m == p->refut[2];
}

Move ab_picker_next(Engine *e, const Stack *ss, Picker *p)
{
	const Position *pos = &e->pos;
	for (;;) {
		switch (p->stage) {
		case ST_TT:
			p->stage = p->next_stage;
			if (p->tt_move != MOVE_NONE) return p->tt_move;
			break;
		case ST_CAPTURES_INIT:
		case ST_QCAPTURES_INIT:
			p->n = movegen(pos, GEN_CAPTURES, p->moves);
			p->i = 0;
			for (int k = 0; k < p->n; k++)
				p->scores[k] = capture_order(e, pos, p->moves[k]);
			p->stage++;
			break;
		case ST_GOOD_CAPTURES:
			while (p->i < p->n) {
				Move m = pick_best(p);
				if (m == p->tt_move) continue;
				if (ab_see_ge(pos, m, 0)) return m;
				p->bad[p->nbad++] = m;
			}
			p->stage = ST_KILLER0;
			break;
		case ST_KILLER0:
		case ST_KILLER1:
		case ST_COUNTER: {
			int k = p->stage - ST_KILLER0;
			p->stage++;
			Move m = p->refut[k];
			if (p->skip_quiets && k < 3) break;
			if (m == MOVE_NONE || m == p->tt_move) break;
			if (k == 1 && m == p->refut[0]) break;
			if (k == 2 && (m == p->refut[0] || m == p->refut[1])) break;
			if (movegen_is_legal(pos, m) && !is_tactical(pos, m)) return m;
			/* Not a quiet move here: forget it so the quiet stage plays it. */
			p->refut[k] = MOVE_NONE;
			break;
		}
		case ST_QUIETS_INIT:
			p->stage = ST_QUIETS;
			if (p->skip_quiets) {
				p->n = p->i = 0;
				break;
			}
			p->n = movegen(pos, GEN_QUIETS, p->moves);
			p->i = 0;
			for (int k = 0; k < p->n; k++) {
				Move m = p->moves[k];
				p->scores[k] =
				    ab_quiet_score(e, ss, m, piece_idx(moved_piece(pos, m)));
			}
			break;
		case ST_QUIETS:
			while (!p->skip_quiets && p->i < p->n) {
				Move m = pick_best(p);
				if (m != p->tt_move && !ab_is_refutation(p, m)) return m;
			}
			p->stage = ST_BAD_CAPTURES;
			break;
		case ST_BAD_CAPTURES:
			if (p->ibad < p->nbad) return p->bad[p->ibad++];
			p->stage = ST_END;
			break;
		case ST_EVASIONS_INIT:
			p->n = movegen(pos, GEN_ALL, p->moves);
			p->i = 0;
			for (int k = 0; k < p->n; k++) {
				Move m = p->moves[k];
				if (is_capture(pos, m))
					p->scores[k] =
					    (1 << 24) +
					    ab_see_value(piece_type(pos->board[move_to(m)])) -
					    piece_type(pos->board[move_from(m)]);
				else
					p->scores[k] = ab_quiet_score(
					    e, ss, m, piece_idx(moved_piece(pos, m)));
			}
			p->stage = ST_EVASIONS;
			break;
		case ST_EVASIONS:
			while (p->i < p->n) {
				Move m = pick_best(p);
				if (m != p->tt_move) return m;
			}
			p->stage = ST_END;
			break;
		case ST_QCAPTURES:
			while (p->i < p->n) {
				Move m = pick_best(p);
				if (m != p->tt_move) return m;
			}
			p->stage = p->qchecks ? ST_QCHECKS_INIT : ST_END;
			break;
		case ST_QCHECKS_INIT:
			p->n = mate_gen_checks(pos, p->moves, true);
			p->i = 0;
			p->stage = ST_QCHECKS;
			break;
		case ST_QCHECKS:
			while (p->i < p->n) {
				Move m = p->moves[p->i++];
				if (m != p->tt_move && !is_tactical(pos, m)) return m;
			}
			p->stage = ST_END;
			break;
		default:
			return MOVE_NONE;
		}
	}
}
