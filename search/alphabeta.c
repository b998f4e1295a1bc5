/*
 * search/alphabeta.c — the built-in engine's tree search: principal variation
 * search with a transposition table, and a quiescence search.
 *
 * Ordering (search/movepick.c): the hash move, captures that do not lose
 * material by static exchange (victim value plus a capture history), the two
 * killers and the counter move, quiet moves by their butterfly and
 * continuation histories, then the losing captures. Selectivity: mate-in-1 (and, deep in the tree,
 * mate-in-3) tests before anything else, razoring, reverse futility, null
 * move, internal iterative reduction, singular extension, late-move pruning,
 * futility and SEE pruning of moves, late-move reductions from a log-log
 * table adjusted by the histories, and check extensions of checks that do not
 * lose material. The quiescence search plays captures that do not lose
 * material, all evasions in check, and at its first ply quiet checks too.
 *
 * Repetitions within the search path score as a draw, or as a win for the
 * side that was being checked throughout the cycle (perpetual check loses).
 * Nothing allocates: move lists live on the stack, the rest in the Engine.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/clock.h"
#include "search/engine_priv.h"
#include "search/eval.h"
#include "search/mate.h"

#define INF VALUE_INFINITE
#define POLL_MASK 1023                    /* clock and stop flag are read every 1024 nodes */
#define EVAL_NONE INT16_MIN               /* "not computed", also in TT entries */
#define VALUE_WIN (VALUE_MATE_IN_MAX - 1) /* perpetual check: not a mate distance */
#define REPETITION_WINDOW 32              /* plies looked back for a repetition */
#define MATE3_DEPTH 6                     /* mate-in-3 at nodes this deep, */
#define MATE3_BUDGET 1500                 /* visiting at most so many positions */
#define QCHECK_DEPTH 0                    /* quiet checks at qsearch plies >= -this */

static int LMR[64][64];

void ab_init_tables(void)
{
	for (int d = 1; d < 64; d++)
		for (int m = 1; m < 64; m++) LMR[d][m] = (int)(0.6 + log(d) * log(m) / 2.1);
}

int ab_lmr(int depth, int move_count)
{
	return LMR[depth < 63 ? depth : 63][move_count < 63 ? move_count : 63];
}

/* ---- helpers ---------------------------------------------------------- */

bool ab_check_abort(Engine *e)
{
	if (!e->can_abort) return false;
	if (e->aborted) return true;
	if (e->node_limit && e->nodes >= e->node_limit) {
		e->aborted = true;
	} else if ((e->nodes & POLL_MASK) == 0) {
		if (atomic_load_explicit(&e->stop, memory_order_relaxed) ||
		    (e->cancel && *e->cancel))
			e->aborted = true;
		else if (e->hard_ms && !atomic_load_explicit(&e->pondering, memory_order_relaxed) &&
		         engine_elapsed_ms(e) >= e->hard_ms)
			e->aborted = true;
	}
	return e->aborted;
}

static inline int clamp_eval(int v)
{
	if (v > VALUE_MATE_IN_MAX - 2) return VALUE_MATE_IN_MAX - 2;
	if (v < -(VALUE_MATE_IN_MAX - 2)) return -(VALUE_MATE_IN_MAX - 2);
	return v;
}

static inline int mate_in(int ply)
{
	return VALUE_MATE - ply;
}
static inline int mated_in(int ply)
{
	return -VALUE_MATE + ply;
}

/*
 * 0 when the position is not repeated within the window; otherwise the value
 * for the side to move: a draw, or a win/loss when one side gave check with
 * every move of the cycle (perpetual check loses).
 */
static bool repetition(const Position *pos, int *value)
{
	int end = pos->nstates - 1;
	int lim = end - REPETITION_WINDOW < 0 ? 0 : end - REPETITION_WINDOW;
	const PosState *cur = &pos->states[end];
	for (int i = end - 4; i >= lim; i -= 2) {
		if (pos->states[i + 1].move == MOVE_NULL || pos->states[i + 2].move == MOVE_NULL ||
		    pos->states[i + 3].move == MOVE_NULL)
			break;
		if (key_equal(pos->states[i].board_key, cur->board_key) &&
		    key_equal(pos->states[i].hand_key, cur->hand_key)) {
			int d = end - i;
			Color us = pos->side, them = color_flip(us);
			if (cur->cont_check[them] * 2 >= d)
				*value = VALUE_WIN;
			else if (cur->cont_check[us] * 2 >= d)
				*value = -VALUE_WIN;
			else
				*value = 0;
			return true;
		}
	}
	return false;
}

/*
 * No legal move without being in check also loses in shogi. It needs a bare
 * side: few pieces and nothing but pawns in hand, so only such positions pay
 * for the count.
 */
static inline bool stalemated(const Position *pos)
{
	Hand h = pos->hand[pos->side];
	return (h & ~HAND_MASK[PAWN]) == 0 && bb_count(pos->by_color[pos->side]) <= 4 &&
	       movegen(pos, GEN_ALL, NULL) == 0;
}

void ab_update_pv(Engine *e, int ply, Move m)
{
	e->pv[ply][ply] = m;
	int len = e->pv_len[ply + 1];
	if (len > ENGINE_PV_MAX) len = ENGINE_PV_MAX;
	for (int i = ply + 1; i < len; i++) e->pv[ply][i] = e->pv[ply + 1][i];
	e->pv_len[ply] = len > ply + 1 ? len : ply + 1;
}

/* A move's value v against the node's best so far; true on a beta cut-off. */
static inline bool record(Engine *e, int ply, bool pv_node, Move m, int v, int beta, int *best,
                          int *alpha, Move *best_move)
{
	if (v <= *best) return false;
	*best = v;
	if (v <= *alpha) return false;
	*best_move = m;
	if (pv_node) ab_update_pv(e, ply, m);
	if (v >= beta) return true;
	*alpha = v;
	return false;
}

static inline void set_move(Engine *e, Stack *ss, Move m)
{
	ss->move = m;
	if (m == MOVE_NULL) {
		ss->cont = NULL;
		ss->pidx = 0;
		ss->to = 0;
		return;
	}
	Piece p = moved_piece(&e->pos, m);
	if (move_is_promote(m)) p = (Piece)(p + PROMOTE);
	ss->pidx = piece_idx(p);
	ss->to = move_to(m);
	ss->cont = &e->cont_hist[ss->pidx][ss->to];
}

/* A node's common start: counts it, and true with *v when it ends at once
 * (the search aborted, a repetition, the ply limit). */
static inline bool enter_node(Engine *e, int ply, int *v)
{
	*v = 0;
	if (e->aborted) return true; /* a re-search after the stop: not a node */
	e->nodes++;
	e->pv_len[ply] = ply;
	if (ply > e->seldepth) e->seldepth = ply;
	*v = 0;
	if (ab_check_abort(e)) return true;
	if (repetition(&e->pos, v)) return true;
	if (ply >= ENGINE_MAX_PLY - 1) {
		*v = clamp_eval(eval_position(&e->pos));
		return true;
	}
	return false;
}

/* ---- quiescence ------------------------------------------------------------ */

static int qsearch(Engine *e, Stack *ss, int alpha, int beta, int qdepth, bool pv_node)
{
	Position *pos = &e->pos;
	int ply = ss->ply;
	int rv;
	if (enter_node(e, ply, &rv)) return rv;

	bool in_check = pos_in_check(pos);
	ss->in_check = in_check;
	Key key = pos_key(pos);
	const TTEntry *te = tt_probe(&e->tt, key);
	Move tt_move = MOVE_NONE;
	int tt_value = 0, tt_bound = TT_NONE;
	if (te) {
		tt_move = te->move;
		tt_value = tt_value_from(te->value, ply);
		tt_bound = te->bound_gen & 3;
		if (!pv_node &&
		    ((tt_bound == TT_LOWER && tt_value >= beta) ||
		     (tt_bound == TT_UPPER && tt_value <= alpha) || tt_bound == TT_EXACT))
			return tt_value;
	}
	int best, stand = 0, old_alpha = alpha;
	if (in_check) {
		best = -INF;
		ss->static_eval = EVAL_NONE;
	} else {
		if (stalemated(pos)) return mated_in(ply);
		/* The side to move mates at once: nothing quieter matters. */
		if (qdepth == 0) {
			Move m = mate_in_1(pos);
			if (m != MOVE_NONE) {
				e->pv[ply][ply] = m;
				e->pv_len[ply] = ply + 1;
				return mate_in(ply + 1);
			}
		}
		stand = te && te->eval != EVAL_NONE ? te->eval : clamp_eval(eval_position(pos));
		ss->static_eval = stand;
		if (te && tt_bound != TT_NONE &&
		    (tt_bound == TT_EXACT ||
		     (tt_bound == TT_LOWER ? tt_value > stand : tt_value < stand)))
			stand = tt_value;
		if (stand >= beta) {
			if (!te)
				tt_store(&e->tt, key, MOVE_NONE, tt_value_to(stand, ply),
				         ss->static_eval, -1, TT_LOWER);
			return stand;
		}
		if (stand > alpha) alpha = stand;
		best = stand;
	}
	Picker pk;
	ab_picker_init(&pk, e, ss, tt_move, in_check, true, qdepth >= -QCHECK_DEPTH);
	Move m, best_move = MOVE_NONE;
	int move_count = 0;
	while ((m = ab_picker_next(e, ss, &pk)) != MOVE_NONE) {
		move_count++;
		bool gives_check = pos_gives_check(pos, m);
		if (!in_check && best > -VALUE_MATE_IN_MAX) {
			bool tactical = is_tactical(pos, m);
			if (tactical && !gives_check) {
				Piece cap = pos->board[move_to(m)];
				int gain = cap ? ab_see_value(piece_type(cap)) : 0;
				if (move_is_promote(m)) gain += 400;
				/* Futility: even winning the piece cannot reach alpha. */
				if (stand + gain + 200 <= alpha) {
					if (stand + gain + 200 > best) best = stand + gain + 200;
					continue;
				}
			}
			if (!ab_see_ge(pos, m, 0)) continue;
		}
		set_move(e, ss, m);
		pos_do_move(pos, m);
		int v = -qsearch(e, ss + 1, -beta, -alpha, qdepth - 1, pv_node);
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (record(e, ply, pv_node, m, v, beta, &best, &alpha, &best_move)) break;
	}
	if (in_check && move_count == 0) return mated_in(ply);
	int bound = best >= beta ? TT_LOWER : pv_node && best > old_alpha ? TT_EXACT : TT_UPPER;
	tt_store(&e->tt, key, best_move, tt_value_to(best, ply),
	         in_check ? EVAL_NONE : ss->static_eval, qdepth == 0 ? 0 : -1, bound);
	return best;
}

/* ---- main search ----------------------------------------------------------- */

int ab_search(Engine *e, Stack *ss, int alpha, int beta, int depth, bool cut_node, bool pv_node)
{
	Position *pos = &e->pos;
	int ply = ss->ply;
	if (depth <= 0) return qsearch(e, ss, alpha, beta, 0, pv_node);
	int rv;
	if (enter_node(e, ply, &rv)) return rv;

	/* Mate distance pruning: no line here can beat a mate already found nearer. */
	if (alpha < mated_in(ply)) alpha = mated_in(ply);
	if (beta > mate_in(ply + 1)) beta = mate_in(ply + 1);
	if (alpha >= beta) return alpha;

	bool in_check = pos_in_check(pos);
	ss->in_check = in_check;
	Move excluded = ss->excluded;
	(ss + 1)->killers[0] = (ss + 1)->killers[1] = MOVE_NONE;
	(ss + 1)->excluded = MOVE_NONE;
	Key key = pos_key(pos);
	if (excluded) key.lo ^= (uint64_t)excluded * 0x9e3779b97f4a7c15ULL;
	const TTEntry *te = tt_probe(&e->tt, key);
	Move tt_move = te ? te->move : MOVE_NONE;
	int tt_value = te ? tt_value_from(te->value, ply) : 0;
	int tt_bound = te ? te->bound_gen & 3 : TT_NONE;
	int tt_depth = te ? te->depth : -100;
	bool tt_capture =
	    tt_move != MOVE_NONE && movegen_is_legal(pos, tt_move) && is_tactical(pos, tt_move);
	if (!pv_node && te && tt_depth >= depth &&
	    (tt_bound == TT_EXACT || (tt_bound == TT_LOWER && tt_value >= beta) ||
	     (tt_bound == TT_UPPER && tt_value <= alpha))) {
		if (tt_value >= beta && tt_move != MOVE_NONE && !tt_capture &&
		    movegen_is_legal(pos, tt_move))
			ab_update_quiet_stats(e, ss, tt_move, NULL, 0, depth);
		return tt_value;
	}

	int static_eval, eval;
	bool improving = false;
	if (in_check) {
		static_eval = eval = ss->static_eval = EVAL_NONE;
	} else {
		if (stalemated(pos)) return mated_in(ply);
		/* A mate at once ends the node before anything else is spent on it. */
		if (!excluded) {
			Move m = mate_in_1(pos);
			if (m == MOVE_NONE && depth >= MATE3_DEPTH) {
				/* Within the node limit too, so a node-limited search
				 * never overshoots it by more than a node. */
				uint64_t n = 0, budget = MATE3_BUDGET;
				if (e->node_limit && e->node_limit - e->nodes < budget)
					budget =
					    e->node_limit > e->nodes ? e->node_limit - e->nodes : 1;
				m = mate_in_3(pos, &n, budget);
				e->nodes += n;
				if (m != MOVE_NONE) {
					/* Its distance is not known (1 or 3): score it as 3. */
					int v = mate_in(ply + 3);
					tt_store(&e->tt, key, m, tt_value_to(v, ply), EVAL_NONE,
					         depth, TT_EXACT);
					if (!pv_node) return v;
				}
			} else if (m != MOVE_NONE) {
				int v = mate_in(ply + 1);
				e->pv[ply][ply] = m;
				e->pv_len[ply] = ply + 1;
				tt_store(&e->tt, key, m, tt_value_to(v, ply), EVAL_NONE,
				         ENGINE_MAX_PLY, TT_EXACT);
				return v;
			}
		}
		if (te && te->eval != EVAL_NONE) {
			static_eval = te->eval;
		} else {
			static_eval = clamp_eval(eval_position(pos));
			if (!te && !excluded)
				tt_store(&e->tt, key, MOVE_NONE, 0, static_eval, -100, TT_NONE);
		}
		ss->static_eval = static_eval;
		eval = static_eval;
		if (te && tt_bound != TT_NONE && tt_value > -VALUE_MATE_IN_MAX &&
		    tt_value < VALUE_MATE_IN_MAX &&
		    (tt_bound == TT_EXACT ||
		     (tt_bound == TT_LOWER ? tt_value > eval : tt_value < eval)))
			eval = tt_value;
		int prev = (ss - 2)->static_eval != EVAL_NONE   ? (ss - 2)->static_eval
		           : (ss - 4)->static_eval != EVAL_NONE ? (ss - 4)->static_eval
		                                                : EVAL_NONE;
		improving = prev == EVAL_NONE || static_eval > prev;

		/* Razoring: far below alpha, only captures could help. */
		if (!pv_node && depth <= 3 && eval + 250 + 200 * depth * depth < alpha) {
			int v = qsearch(e, ss, alpha - 1, alpha, 0, false);
			if (e->aborted) return 0;
			if (v < alpha) return v;
		}
		/* Reverse futility: far above beta, a quiet move will not lose it all. */
		if (!pv_node && !excluded && depth < 9 &&
		    eval - 110 * (depth - improving) >= beta && eval < VALUE_MATE_IN_MAX)
			return eval;
		/* Null move: if passing still fails high, a real move will too. */
		if (!pv_node && !excluded && real_move((ss - 1)->move) && eval >= beta &&
		    static_eval >= beta - 20 * depth + 180 && beta > -VALUE_MATE_IN_MAX &&
		    depth >= 2) {
			int r = 3 + depth / 3 + ((eval - beta) / 200 < 3 ? (eval - beta) / 200 : 3);
			set_move(e, ss, MOVE_NULL);
			pos_do_null_move(pos);
			(ss + 1)->ply = ply + 1;
			int v =
			    -ab_search(e, ss + 1, -beta, -beta + 1, depth - r, !cut_node, false);
			pos_undo_move(pos);
			if (e->aborted) return 0;
			if (v >= beta) return v >= VALUE_MATE_IN_MAX ? beta : v;
		}
	}
	/* No hash move where one was expected: search shallower first. */
	if (tt_move == MOVE_NONE && depth >= 4 && (pv_node || cut_node)) depth -= 1 + pv_node;

	Picker pk;
	ab_picker_init(&pk, e, ss, tt_move, in_check, false, false);
	int best = -INF, old_alpha = alpha, move_count = 0;
	Move best_move = MOVE_NONE, m;
	Move quiets[64], captures[32];
	int nq = 0, nc = 0;
	(ss + 1)->ply = ply + 1;
	while ((m = ab_picker_next(e, ss, &pk)) != MOVE_NONE) {
		if (m == excluded) continue;
		move_count++;
		bool capture = is_tactical(pos, m);
		bool gives_check = pos_gives_check(pos, m);
		Piece mp = moved_piece(pos, m);
		int hist = capture ? 0 : ab_quiet_score(e, ss, m, piece_idx(mp));
		int new_depth = depth - 1;
		int r = ab_lmr(depth, move_count);

		/* Pruning at shallow depth, once a move has kept us from being mated. */
		if (best > -VALUE_MATE_IN_MAX && ply > 0) {
			if (move_count >= (3 + depth * depth) / (2 - improving))
				pk.skip_quiets = true;
			int lmr_depth = new_depth - r > 0 ? new_depth - r : 0;
			if (capture || gives_check) {
				if (capture && !gives_check && !in_check && lmr_depth < 6) {
					Piece cap = pos->board[move_to(m)];
					int gain = cap ? ab_see_value(piece_type(cap)) : 0;
					if (static_eval + 220 + 230 * lmr_depth + gain <= alpha)
						continue;
				}
				if (!ab_see_ge(pos, m, -180 * depth)) continue;
			} else {
				if (pk.skip_quiets && move_count > 1) continue;
				if (lmr_depth < 4 && hist < -4000 * (depth - 1)) continue;
				if (!in_check && lmr_depth < 8 &&
				    static_eval + 160 + 130 * lmr_depth <= alpha)
					continue;
				if (!ab_see_ge(pos, m, -30 * lmr_depth * lmr_depth)) continue;
			}
		}

		/* Extensions. */
		int ext = 0;
		if (depth >= 7 && m == tt_move && !excluded && tt_bound == TT_LOWER &&
		    tt_depth >= depth - 3 && tt_value > -VALUE_MATE_IN_MAX &&
		    tt_value < VALUE_MATE_IN_MAX) {
			int sbeta = tt_value - 2 * depth;
			ss->excluded = m;
			int v =
			    ab_search(e, ss, sbeta - 1, sbeta, (depth - 1) / 2, cut_node, false);
			ss->excluded = MOVE_NONE;
			if (e->aborted) return 0;
			if (v < sbeta)
				ext = 1;
			else if (sbeta >= beta)
				return sbeta; /* several moves beat beta: a cut anyway */
		} else if (gives_check && ply < 2 * e->root_depth && ab_see_ge(pos, m, 0)) {
			ext = 1;
		}
		new_depth += ext;

		set_move(e, ss, m);
		pos_do_move(pos, m);
		int v = -INF;
		bool full = !pv_node || move_count > 1;
		if (depth >= 2 && move_count > 1 + (ply == 0) && (!capture || cut_node)) {
			if (pv_node) r--;
			if (cut_node) r += 2;
			if (!improving) r++;
			if (tt_capture && !capture) r++;
			if (ab_is_refutation(&pk, m)) r--;
			if (!capture) r -= hist / 8000;
			if (in_check) r--;
			int d = new_depth - r;
			if (d < 1) d = 1;
			if (d > new_depth) d = new_depth;
			v = -ab_search(e, ss + 1, -alpha - 1, -alpha, d, true, false);
			full = v > alpha && d < new_depth;
		}
		if (full)
			v = -ab_search(e, ss + 1, -alpha - 1, -alpha, new_depth, !cut_node, false);
		if (pv_node && (move_count == 1 || (v > alpha && v < beta)))
			v = -ab_search(e, ss + 1, -beta, -alpha, new_depth, false, true);
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (record(e, ply, pv_node, m, v, beta, &best, &alpha, &best_move)) break;
		if (m != best_move) {
			if (capture && nc < 32)
				captures[nc++] = m;
			else if (!capture && nq < 64)
				quiets[nq++] = m;
		}
	}
	if (move_count == 0) return excluded ? alpha : mated_in(ply);
	if (best_move != MOVE_NONE) {
		int bonus = ab_stat_bonus(depth);
		if (!is_tactical(pos, best_move))
			ab_update_quiet_stats(e, ss, best_move, quiets, nq, depth);
		else if (is_capture(pos, best_move))
			ab_hist_update(ab_capt_entry(e, pos, best_move), bonus);
		for (int i = 0; i < nc; i++)
			if (is_capture(pos, captures[i]))
				ab_hist_update(ab_capt_entry(e, pos, captures[i]), -bonus);
		/* The previous move was refuted at once by a quiet reply. */
	}
	if (!excluded) {
		int bound = best >= beta                  ? TT_LOWER
		            : pv_node && best > old_alpha ? TT_EXACT
		                                          : TT_UPPER;
		tt_store(&e->tt, key, best_move, tt_value_to(best, ply), ss->static_eval, depth,
		         bound);
	}
	return best;
}
