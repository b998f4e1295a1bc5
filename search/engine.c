/*
 * search/engine.c — the built-in alpha-beta searcher.
 *
 * Plain fail-soft principal variation search. Ordering: the hash move, then
 * captures and pawn promotions by MVV-LVA, then killers, then the history of
 * quiet moves. Selectivity: null move, late-move reductions of quiet moves,
 * and in the quiescence search delta pruning and skipping captures of a
 * defended piece by a more valuable one. Checks are extended (bounded by
 * twice the iteration depth so drop-check sequences cannot run away).
 *
 * Nothing in the search allocates: move lists live on the stack (MOVEGEN_MAX
 * entries per ply) and everything else in the Engine.
 */
#include "search/engine.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/clock.h"
#include "search/eval.h"
#include "search/tt.h"
#include "shogi/movegen.h"

#define INF VALUE_INFINITE
#define POLL_MASK 1023      /* clock and stop flag are read every 1024 nodes */
#define EVAL_NONE INT16_MIN /* "not computed", also in TT entries */

/* The search's tunables (the fixed-depth benchmark's node count pins them). */
#define REPETITION_WINDOW 32    /* plies looked back for a repetition */
#define PROMOTION_GAIN 300      /* what a promotion adds to a move's material gain */
#define MVV_SCALE 64            /* victim value × this − attacker value orders captures */
#define ORDER_TT (1 << 30)      /* move ordering bands: the TT move first, */
#define ORDER_CAPTURE (1 << 26) /* then captures, */
#define ORDER_PROMOTE (1 << 25) /* promotions, */
#define ORDER_KILLER (1 << 24)  /* the two killers, then quiet moves by history */
#define HISTORY_MAX (1 << 20)   /* history scores are halved beyond this */
#define DELTA_MARGIN 200        /* quiescence: a capture this far below alpha is skipped */
#define NULL_MIN_DEPTH 3        /* null move from this depth, reduced by */
#define NULL_R(depth) (2 + (depth) / 4)
#define LMR_MIN_DEPTH 3 /* late-move reductions: from this depth, */
#define LMR_FIRST_PV 5  /* after this many moves at a PV node, */
#define LMR_FIRST 3     /* after this many elsewhere; */
#define LMR_R(i, depth) (1 + ((i) >= 10) + ((depth) >= 7)) /* by so many plies */

typedef struct {
	Move move;
	int score;
} RootMove;

struct Engine {
	TT tt;
	size_t hash_mb;
	atomic_bool stop;
	atomic_bool pondering;
	atomic_llong start_ns;
	const volatile sig_atomic_t *cancel; /* the caller's flag, or NULL */

	/* Per search. */
	Position pos;
	uint64_t nodes;
	uint64_t node_limit;
	int64_t hard_ms;
	bool can_abort; /* false until depth 1 is complete */
	bool aborted;
	int seldepth;
	int root_depth;
	int nroot;
	RootMove root[MOVEGEN_MAX];
	Move killers[ENGINE_MAX_PLY][2];
	int history[PIECE_NB][SQ_NB];
	Move pv[ENGINE_MAX_PLY + 1][ENGINE_MAX_PLY + 1];
	int pv_len[ENGINE_MAX_PLY + 1];
};

const char *engine_strerror(int code)
{
	switch (code) {
	case ENGINE_OK:
		return "success";
	case ENGINE_ENOMEM:
		return "out of memory";
	case ENGINE_EINVAL:
		return "invalid search limits";
	default:
		return "unknown engine error";
	}
}

static int64_t elapsed_ms(const Engine *e)
{
	return (clock_ns() - atomic_load_explicit(&e->start_ns, memory_order_relaxed)) / 1000000;
}

int engine_new(Engine **out, size_t hash_mb)
{
	*out = NULL;
	Engine *e = calloc(1, sizeof *e);
	if (!e) return ENGINE_ENOMEM;
	if (hash_mb == 0) hash_mb = ENGINE_HASH_DEFAULT_MB;
	if (tt_init(&e->tt, hash_mb) < 0) {
		free(e);
		return ENGINE_ENOMEM;
	}
	e->hash_mb = hash_mb;
	atomic_init(&e->stop, false);
	atomic_init(&e->pondering, false);
	atomic_init(&e->start_ns, clock_ns());
	*out = e;
	return ENGINE_OK;
}

int engine_set_hash(Engine *e, size_t hash_mb)
{
	if (hash_mb == 0) hash_mb = ENGINE_HASH_DEFAULT_MB;
	TT nt;
	if (tt_init(&nt, hash_mb) < 0) return ENGINE_ENOMEM;
	tt_free(&e->tt);
	e->tt = nt;
	e->hash_mb = hash_mb;
	return ENGINE_OK;
}

void engine_clear(Engine *e)
{
	tt_clear(&e->tt);
	memset(e->history, 0, sizeof e->history);
}

void engine_free(Engine *e)
{
	if (!e) return;
	tt_free(&e->tt);
	free(e);
}

void engine_stop(Engine *e)
{
	atomic_store(&e->stop, true);
}

void engine_clear_stop(Engine *e)
{
	atomic_store(&e->stop, false);
}

void engine_set_cancel(Engine *e, const volatile sig_atomic_t *flag)
{
	e->cancel = flag;
}

void engine_set_pondering(Engine *e)
{
	atomic_store(&e->pondering, true);
}

void engine_ponderhit(Engine *e)
{
	atomic_store(&e->start_ns, clock_ns());
	atomic_store(&e->pondering, false);
}

/* ---- helpers ---------------------------------------------------------- */

static inline bool is_capture(const Position *pos, Move m)
{
	return !move_is_drop(m) && pos->board[move_to(m)] != PIECE_NONE;
}

/*
 * A position repeated within the last plies is scored as a draw. Looking back
 * a bounded window keeps this O(1) per node; a longer cycle is merely missed.
 */
static bool is_repetition(const Position *pos)
{
	int end = pos->nstates - 1;
	int lim = end - REPETITION_WINDOW < 0 ? 0 : end - REPETITION_WINDOW;
	const PosState *cur = &pos->states[end];
	for (int i = end - 1; i >= lim; i--) {
		if (pos->states[i + 1].move == MOVE_NULL) break;
		if (((end - i) & 1) == 0 && end - i >= 4 &&
		    key_equal(pos->states[i].board_key, cur->board_key) &&
		    key_equal(pos->states[i].hand_key, cur->hand_key))
			return true;
	}
	return false;
}

static inline bool check_abort(Engine *e)
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
		         elapsed_ms(e) >= e->hard_ms)
			e->aborted = true;
	}
	return e->aborted;
}

static inline int clamp_eval(int v)
{
	if (v > VALUE_MATE_IN_MAX - 1) return VALUE_MATE_IN_MAX - 1;
	if (v < -(VALUE_MATE_IN_MAX - 1)) return -(VALUE_MATE_IN_MAX - 1);
	return v;
}

static inline Piece moved_piece(const Position *pos, Move m)
{
	return move_is_drop(m) ? piece_make(pos->side, move_drop_type(m))
	                       : pos->board[move_from(m)];
}

/* Orders moves by the scores computed alongside: picks the best remaining. */
static inline Move pick(Move *moves, int *scores, int n, int i)
{
	int best = i;
	for (int j = i + 1; j < n; j++)
		if (scores[j] > scores[best]) best = j;
	Move m = moves[best];
	int s = scores[best];
	moves[best] = moves[i];
	scores[best] = scores[i];
	moves[i] = m;
	scores[i] = s;
	return m;
}

static int capture_score(const Position *pos, Move m)
{
	Piece victim = pos->board[move_to(m)];
	int attacker = EVAL_PIECE_VALUE[piece_type(pos->board[move_from(m)])];
	int v = victim ? EVAL_PIECE_VALUE[piece_type(victim)] : 0;
	if (move_is_promote(m)) v += PROMOTION_GAIN;
	return v * MVV_SCALE - attacker;
}

static void score_moves(const Engine *e, const Position *pos, const Move *moves, int *scores, int n,
                        Move tt_move, int ply)
{
	for (int i = 0; i < n; i++) {
		Move m = moves[i];
		if (m == tt_move) {
			scores[i] = ORDER_TT;
		} else if (is_capture(pos, m)) {
			scores[i] = ORDER_CAPTURE + capture_score(pos, m);
		} else if (move_is_promote(m)) {
			scores[i] = ORDER_PROMOTE + capture_score(pos, m);
		} else if (m == e->killers[ply][0]) {
			scores[i] = ORDER_KILLER + 1;
		} else if (m == e->killers[ply][1]) {
			scores[i] = ORDER_KILLER;
		} else {
			scores[i] = e->history[moved_piece(pos, m)][move_to(m)];
		}
	}
}

/*
 * Staged move picking for the main search: the hash move before anything is
 * generated, then captures (and pawn promotions) by MVV-LVA, then the quiet
 * moves by killer and history. A cut by the hash move or a capture saves the
 * generation of the quiet moves, drops included.
 */
typedef struct {
	Move moves[MOVEGEN_MAX];
	int scores[MOVEGEN_MAX];
	int n, i, stage;
	Move tt_move;
} Picker;

static void picker_init(Picker *p, Move tt_move)
{
	p->n = p->i = p->stage = 0;
	p->tt_move = tt_move;
}

static Move picker_next(const Engine *e, const Position *pos, Picker *p, int ply)
{
	for (;;) {
		switch (p->stage) {
		case 0:
			p->stage = 1;
			if (p->tt_move != MOVE_NONE && pos_is_legal(pos, p->tt_move))
				return p->tt_move;
			p->tt_move = MOVE_NONE;
			break;
		case 1:
		case 3:
			p->n = movegen(pos, p->stage == 1 ? GEN_CAPTURES : GEN_QUIETS, p->moves);
			score_moves(e, pos, p->moves, p->scores, p->n, MOVE_NONE, ply);
			p->i = 0;
			p->stage++;
			break;
		case 2:
		case 4:
			while (p->i < p->n) {
				Move m = pick(p->moves, p->scores, p->n, p->i++);
				if (m != p->tt_move) return m;
			}
			if (p->stage == 4) return MOVE_NONE;
			p->stage = 3;
			break;
		default:
			return MOVE_NONE;
		}
	}
}

static void update_pv(Engine *e, int ply, Move m)
{
	e->pv[ply][ply] = m;
	int len = e->pv_len[ply + 1];
	if (len > ENGINE_PV_MAX) len = ENGINE_PV_MAX;
	for (int i = ply + 1; i < len; i++) e->pv[ply][i] = e->pv[ply + 1][i];
	e->pv_len[ply] = len > ply + 1 ? len : ply + 1;
}

/* ---- quiescence ---------------------------------------------------------- */

static int qsearch(Engine *e, int alpha, int beta, int ply)
{
	Position *pos = &e->pos;
	e->nodes++;
	e->pv_len[ply] = ply;
	if (ply > e->seldepth) e->seldepth = ply;
	if (check_abort(e)) return 0;
	if (ply >= ENGINE_MAX_PLY - 1) return clamp_eval(eval_position(pos));

	bool in_check = pos_in_check(pos);
	Move moves[MOVEGEN_MAX];
	int scores[MOVEGEN_MAX];
	int n, best, stand = 0;
	if (in_check) {
		n = movegen(pos, GEN_ALL, moves);
		if (n == 0) return -(VALUE_MATE - ply);
		best = -INF;
	} else {
		stand = clamp_eval(eval_position(pos));
		if (stand >= beta) return stand;
		if (stand > alpha) alpha = stand;
		best = stand;
		n = movegen(pos, GEN_CAPTURES, moves);
	}
	score_moves(e, pos, moves, scores, n, MOVE_NONE, ply);
	Color them = color_flip(pos->side);
	for (int i = 0; i < n; i++) {
		Move m = pick(moves, scores, n, i);
		if (!in_check) {
			Piece victim = pos->board[move_to(m)];
			int gain = victim ? EVAL_PIECE_VALUE[piece_type(victim)] : 0;
			if (move_is_promote(m)) gain += PROMOTION_GAIN;
			/* Delta pruning: even winning the piece cannot reach alpha. */
			if (stand + gain + DELTA_MARGIN <= alpha) continue;
			/* A defended piece taken by a more valuable one: likely a loss. */
			int attacker = EVAL_PIECE_VALUE[piece_type(pos->board[move_from(m)])];
			if (attacker > gain && pos_attacked(pos, them, move_to(m))) continue;
		}
		pos_do_move(pos, m);
		int v = -qsearch(e, -beta, -alpha, ply + 1);
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (v > best) {
			best = v;
			if (v > alpha) {
				alpha = v;
				update_pv(e, ply, m);
				if (v >= beta) break;
			}
		}
	}
	return best;
}

/* ---- main search ----------------------------------------------------------- */

static int search(Engine *e, int depth, int alpha, int beta, int ply, bool pv_node)
{
	Position *pos = &e->pos;
	if (is_repetition(pos)) {
		e->pv_len[ply] = ply;
		return 0;
	}
	if (depth <= 0) return qsearch(e, alpha, beta, ply);
	e->nodes++;
	e->pv_len[ply] = ply;
	if (ply > e->seldepth) e->seldepth = ply;
	if (check_abort(e)) return 0;
	if (ply >= ENGINE_MAX_PLY - 1) return clamp_eval(eval_position(pos));

	/* Mate distance pruning: no line here can beat a mate already found nearer. */
	if (alpha < -(VALUE_MATE - ply)) alpha = -(VALUE_MATE - ply);
	if (beta > VALUE_MATE - ply - 1) beta = VALUE_MATE - ply - 1;
	if (alpha >= beta) return alpha;

	Key key = pos_key(pos);
	const TTEntry *te = tt_probe(&e->tt, key);
	Move tt_move = MOVE_NONE;
	int static_eval;
	bool in_check = pos_in_check(pos);
	if (te) {
		tt_move = te->move;
		int tv = tt_value_from(te->value, ply);
		int bound = te->bound_gen & 3;
		if (!pv_node && te->depth >= depth &&
		    (bound == TT_EXACT || (bound == TT_LOWER && tv >= beta) ||
		     (bound == TT_UPPER && tv <= alpha)))
			return tv;
		static_eval = te->eval;
	} else {
		static_eval = EVAL_NONE;
	}
	/* The static value only serves the null-move test: computed when that
	 * test can apply, which most nodes (near the leaves) never reach. */
	bool null_ok = !pv_node && !in_check && depth >= NULL_MIN_DEPTH;
	if (null_ok && static_eval == EVAL_NONE) static_eval = clamp_eval(eval_position(pos));

	/* Null move: if passing still fails high, a real move will too. */
	if (null_ok && static_eval >= beta && beta < VALUE_MATE_IN_MAX &&
	    beta > -VALUE_MATE_IN_MAX && pos_st(pos)->move != MOVE_NULL) {
		int r = NULL_R(depth);
		pos_do_null_move(pos);
		int v = -search(e, depth - 1 - r, -beta, -beta + 1, ply + 1, false);
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (v >= beta) return v >= VALUE_MATE_IN_MAX ? beta : v;
	}

	Picker pk;
	picker_init(&pk, tt_move);
	int best = -INF, old_alpha = alpha;
	Move best_move = MOVE_NONE;
	Move m;
	for (int i = 0; (m = picker_next(e, pos, &pk, ply)) != MOVE_NONE; i++) {
		bool capture = is_capture(pos, m);
		bool quiet = !capture && !move_is_promote(m);
		bool check = pos_gives_check(pos, m);
		int ext = check && ply < 2 * e->root_depth ? 1 : 0;
		int nd = depth - 1 + ext;
		Piece moved = moved_piece(pos, m);
		pos_do_move(pos, m);
		int v;
		if (i == 0) {
			v = -search(e, nd, -beta, -alpha, ply + 1, pv_node);
		} else {
			int r = 0;
			if (depth >= LMR_MIN_DEPTH && quiet && !in_check && !check &&
			    i >= (pv_node ? LMR_FIRST_PV : LMR_FIRST) && m != e->killers[ply][0] &&
			    m != e->killers[ply][1]) {
				r = LMR_R(i, depth);
				if (r > nd - 1) r = nd - 1;
				if (r < 0) r = 0;
			}
			v = -search(e, nd - r, -alpha - 1, -alpha, ply + 1, false);
			if (r && v > alpha && !e->aborted)
				v = -search(e, nd, -alpha - 1, -alpha, ply + 1, false);
			if (pv_node && v > alpha && v < beta && !e->aborted)
				v = -search(e, nd, -beta, -alpha, ply + 1, true);
		}
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (v > best) {
			best = v;
			if (v > alpha) {
				best_move = m;
				alpha = v;
				if (pv_node) update_pv(e, ply, m);
				if (v >= beta) {
					if (quiet) {
						if (e->killers[ply][0] != m) {
							e->killers[ply][1] = e->killers[ply][0];
							e->killers[ply][0] = m;
						}
						int *h = &e->history[moved][move_to(m)];
						*h += depth * depth;
						if (*h > HISTORY_MAX) {
							for (int p = 0; p < PIECE_NB; p++)
								for (int s = 0; s < SQ_NB; s++)
									e->history[p][s] /= 2;
						}
					}
					break;
				}
			}
		}
	}
	if (best == -INF) return -(VALUE_MATE - ply); /* no move: mated (no stalemate in shogi) */
	int bound = best >= beta ? TT_LOWER : alpha > old_alpha ? TT_EXACT : TT_UPPER;
	tt_store(&e->tt, key, best_move, tt_value_to(best, ply), static_eval, depth, bound);
	return best;
}

/* ---- root ------------------------------------------------------------------ */

/*
 * Searches root moves first..nroot-1 (the earlier ones are the previous
 * MultiPV lines, excluded) and moves the best to index first. Returns its
 * value; line receives its PV. Meaningless when e->aborted.
 */
static int search_root(Engine *e, int depth, int first, EngineLine *line)
{
	Position *pos = &e->pos;
	int alpha = -INF, beta = INF, best = -INF, best_i = first;
	e->pv_len[0] = 0;
	for (int i = first; i < e->nroot; i++) {
		Move m = e->root[i].move;
		bool check = pos_gives_check(pos, m);
		int nd = depth - 1 + (check ? 1 : 0);
		e->nodes++;
		pos_do_move(pos, m);
		int v;
		if (i == first) {
			v = -search(e, nd, -beta, -alpha, 1, true);
		} else {
			v = -search(e, nd, -alpha - 1, -alpha, 1, false);
			if (v > alpha && !e->aborted) v = -search(e, nd, -beta, -alpha, 1, true);
		}
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (v > best) {
			best = v;
			best_i = i;
			alpha = v;
			update_pv(e, 0, m);
			line->pv_len = e->pv_len[0] < ENGINE_PV_MAX ? e->pv_len[0] : ENGINE_PV_MAX;
			memcpy(line->pv, e->pv[0], (size_t)line->pv_len * sizeof(Move));
		}
	}
	/* Best to the front; the rest keep their order (the previous ranking). */
	RootMove bm = e->root[best_i];
	bm.score = best;
	memmove(&e->root[first + 1], &e->root[first], (size_t)(best_i - first) * sizeof(RootMove));
	e->root[first] = bm;
	line->move = bm.move;
	line->value = best;
	line->depth = depth;
	line->seldepth = e->seldepth;
	line->nodes = e->nodes;
	return best;
}

/* A copy of pos with room for a full-depth search in its history. */
static void load_position(Engine *e, const Position *pos)
{
	if (pos->nstates + ENGINE_MAX_PLY + 8 < POS_MAX_STATES) {
		memcpy(&e->pos, pos, sizeof *pos);
		return;
	}
	/* Too long a game: keep the position, drop the history (and so the
	 * repetitions it held). pos_set accepts any position that occurred. */
	if (pos_set(&e->pos, pos->board, pos->hand, pos->side, pos->game_ply, NULL) < 0)
		memcpy(&e->pos, pos, sizeof *pos);
}

int engine_search(Engine *e, EngineResult *out, const Position *pos, const EngineLimits *lim,
                  engine_info_fn info, void *ctx)
{
	int max_depth = lim->depth > 0 ? lim->depth : ENGINE_MAX_PLY - 1;
	int multipv = lim->multipv > 0 ? lim->multipv : 1;
	if (max_depth >= ENGINE_MAX_PLY || multipv > ENGINE_MULTIPV_MAX) return ENGINE_EINVAL;

	atomic_store(&e->start_ns, clock_ns());
	/* engine_stop() and engine_ponderhit() before the search starts are
	 * honoured, not lost: the flags are reset only when a search ends. */
	memset(out, 0, sizeof *out);
	if (lim->clear_hash) engine_clear(e);
	tt_new_search(&e->tt);
	memset(e->killers, 0, sizeof e->killers);
	load_position(e, pos);
	e->nodes = 0;
	e->node_limit = lim->nodes;
	e->hard_ms = lim->hard_ms;
	e->can_abort = false;
	e->aborted = false;
	e->seldepth = 0;

	Move moves[MOVEGEN_MAX];
	int n = movegen(&e->pos, GEN_ALL, moves);
	/* The rules core accepts a set-up position with the side not to move in
	 * check; capturing that king is not a shogi move, so it is not searched. */
	for (int i = 0; i < n; i++)
		if (!move_is_drop(moves[i]) && piece_type(e->pos.board[move_to(moves[i])]) == KING)
			moves[i--] = moves[--n];
	if (n == 0) {
		out->mated = true;
		out->time_ms = elapsed_ms(e);
		atomic_store(&e->stop, false);
		atomic_store(&e->pondering, false);
		return ENGINE_OK;
	}
	/* Initial root order: captures first by MVV-LVA, then the generator's. */
	int scores[MOVEGEN_MAX];
	score_moves(e, &e->pos, moves, scores, n, MOVE_NONE, 0);
	for (int i = 0; i < n; i++) {
		e->root[i].move = pick(moves, scores, n, i);
		e->root[i].score = -INF;
	}
	e->nroot = n;
	if (multipv > n) multipv = n;

	EngineLine lines[ENGINE_MULTIPV_MAX];
	for (int depth = 1; depth <= max_depth; depth++) {
		e->root_depth = depth;
		e->seldepth = 0;
		int k;
		for (k = 0; k < multipv; k++) {
			search_root(e, depth, k, &lines[k]);
			if (e->aborted) break;
		}
		if (e->aborted) break;
		/* Lines best first (a later line can come out higher after a re-search). */
		for (int i = 1; i < multipv; i++)
			for (int j = i; j > 0 && lines[j].value > lines[j - 1].value; j--) {
				EngineLine t = lines[j];
				lines[j] = lines[j - 1];
				lines[j - 1] = t;
				RootMove r = e->root[j];
				e->root[j] = e->root[j - 1];
				e->root[j - 1] = r;
			}
		memcpy(out->lines, lines, (size_t)multipv * sizeof(EngineLine));
		out->nlines = multipv;
		out->depth = depth;
		out->bestmove = lines[0].move;
		out->nodes = e->nodes;
		out->time_ms = elapsed_ms(e);
		if (info) info(ctx, out);
		e->can_abort = true;

		if (atomic_load(&e->stop) || (e->cancel && *e->cancel)) break;
		if (e->node_limit && e->nodes >= e->node_limit) break;
		bool pondering = atomic_load(&e->pondering);
		if (!pondering && lim->soft_ms && elapsed_ms(e) >= lim->soft_ms) break;
		/* A forced mate found within this depth will not change. */
		int bv = lines[0].value;
		if (multipv == 1 && !atomic_load(&e->pondering) &&
		    (bv >= VALUE_MATE_IN_MAX || bv <= -VALUE_MATE_IN_MAX) &&
		    VALUE_MATE - abs(bv) + 2 <= depth)
			break;
	}
	out->nodes = e->nodes;
	out->time_ms = elapsed_ms(e);
	atomic_store(&e->stop, false);
	atomic_store(&e->pondering, false);
	return ENGINE_OK;
}
