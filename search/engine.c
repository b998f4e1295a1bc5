/*
 * search/engine.c — the built-in engine's root: iterative deepening with
 * aspiration windows and MultiPV over the tree search of alphabeta.c, the
 * limits, and the engine object's life.
 */
#include "search/engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/clock.h"
#include "search/engine_priv.h"

#define INF VALUE_INFINITE
#define ASPIRATION_DEPTH 4  /* aspiration windows from this iteration, */
#define ASPIRATION_DELTA 30 /* this wide at first (cp) */

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

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

int engine_new(Engine **out, size_t hash_mb)
{
	*out = NULL;
	pthread_once(&tables_once, ab_init_tables);
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
	memset(e->main_hist, 0, sizeof e->main_hist);
	memset(e->capt_hist, 0, sizeof e->capt_hist);
	memset(e->counter, 0, sizeof e->counter);
	memset(e->cont_hist, 0, sizeof e->cont_hist);
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

void engine_set_clock(Engine *e, int64_t (*now_ns)(void *ctx), void *ctx)
{
	e->now_ns = now_ns;
	e->now_ctx = ctx;
}

void engine_set_pondering(Engine *e)
{
	atomic_store(&e->pondering, true);
}

void engine_ponderhit(Engine *e)
{
	atomic_store(&e->start_ns, engine_now_ns(e));
	atomic_store(&e->pondering, false);
}

/* ---- root ------------------------------------------------------------------ */

static int cmp_root(const void *a, const void *b)
{
	const RootMove *x = a, *y = b;
	return (y->score > x->score) - (y->score < x->score);
}

/* Stable by construction: ties keep their order (insertion sort on few moves). */
static void sort_root(RootMove *r, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && cmp_root(&r[j - 1], &r[j]) > 0; j--) {
			RootMove t = r[j];
			r[j] = r[j - 1];
			r[j - 1] = t;
		}
}

/*
 * Searches root moves first..nroot-1 (the earlier ones are the previous
 * MultiPV lines, excluded) within (alpha, beta) and sorts them best first,
 * moves that failed low keeping their order. Returns the best value; line
 * receives its PV when it is inside the window. Meaningless when e->aborted.
 */
static int search_root(Engine *e, int depth, int alpha, int beta, int first, EngineLine *line)
{
	Position *pos = &e->pos;
	Stack *ss = &e->stack[STACK_OFFSET];
	int best = -INF;
	e->pv_len[0] = 0;
	for (int i = first; i < e->nroot; i++) e->root[i].score = -INF;
	int searched = 0;
	for (int i = first; i < e->nroot; i++) {
		Move m = e->root[i].move;
		bool check = pos_gives_check(pos, m);
		bool capture = !move_is_drop(m) && pos->board[move_to(m)] != PIECE_NONE;
		int nd = depth - 1 + (check ? 1 : 0);
		e->nodes++;
		Piece p = move_is_drop(m) ? piece_make(pos->side, move_drop_type(m))
		                          : pos->board[move_from(m)];
		if (move_is_promote(m)) p = (Piece)(p + PROMOTE);
		ss->move = m;
		ss->pidx = piece_idx(p);
		ss->to = move_to(m);
		ss->cont = &e->cont_hist[ss->pidx][ss->to];
		(ss + 1)->ply = 1;
		pos_do_move(pos, m);
		int v;
		searched++;
		if (searched == 1) {
			v = -ab_search(e, ss + 1, -beta, -alpha, nd, false, true);
		} else {
			int r = 0;
			if (depth >= 3 && searched > 3 && !capture && !check &&
			    !move_is_promote(m)) {
				r = ab_lmr(depth, searched) - 1;
				if (r < 0) r = 0;
			}
			v = -ab_search(e, ss + 1, -alpha - 1, -alpha, nd - r, true, false);
			if (r && v > alpha && !e->aborted)
				v = -ab_search(e, ss + 1, -alpha - 1, -alpha, nd, false, false);
			if (v > alpha && v < beta && !e->aborted)
				v = -ab_search(e, ss + 1, -beta, -alpha, nd, false, true);
		}
		pos_undo_move(pos);
		if (e->aborted) return 0;
		if (v > best) best = v;
		if (v > alpha || searched == 1) {
			e->root[i].score = v;
			if (v > alpha) {
				ab_update_pv(e, 0, m);
				line->pv_len =
				    e->pv_len[0] < ENGINE_PV_MAX ? e->pv_len[0] : ENGINE_PV_MAX;
				memcpy(line->pv, e->pv[0], (size_t)line->pv_len * sizeof(Move));
				line->move = m;
				line->value = v;
				if (v >= beta) break;
				alpha = v;
			}
		}
	}
	sort_root(&e->root[first], e->nroot - first);
	line->depth = depth;
	line->seldepth = e->seldepth;
	line->nodes = e->nodes;
	return best;
}

/* One iteration for MultiPV line k: aspiration windows around its last value. */
static int search_line(Engine *e, int depth, int k, EngineLine *line)
{
	int prev = e->root[k].prev_score;
	int delta = ASPIRATION_DELTA + (prev > 0 ? prev : -prev) / 16;
	int alpha = -INF, beta = INF;
	if (depth >= ASPIRATION_DEPTH && prev > -VALUE_MATE_IN_MAX && prev < VALUE_MATE_IN_MAX) {
		alpha = prev - delta > -INF ? prev - delta : -INF;
		beta = prev + delta < INF ? prev + delta : INF;
	}
	for (;;) {
		EngineLine l = *line;
		int v = search_root(e, depth, alpha, beta, k, &l);
		if (e->aborted) return 0;
		if (v <= alpha && alpha > -INF) {
			beta = (alpha + beta) / 2;
			alpha = v - delta > -INF ? v - delta : -INF;
		} else if (v >= beta && beta < INF) {
			beta = v + delta < INF ? v + delta : INF;
			*line = l;
		} else {
			*line = l;
			line->move = e->root[k].move;
			line->value = v;
			return v;
		}
		delta += delta / 2;
		if (delta > 1000) {
			alpha = alpha > -INF ? alpha : -INF;
			if (delta > 4000) alpha = -INF, beta = INF;
		}
	}
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
	if (max_depth > ENGINE_MAX_PLY - 8) max_depth = ENGINE_MAX_PLY - 8;

	atomic_store(&e->start_ns, engine_now_ns(e));
	/* engine_stop() and engine_ponderhit() before the search starts are
	 * honoured, not lost: the flags are reset only when a search ends. */
	memset(out, 0, sizeof *out);
	if (lim->clear_hash) engine_clear(e);
	tt_new_search(&e->tt);
	memset(e->stack, 0, sizeof e->stack);
	for (int i = 0; i < ENGINE_MAX_PLY + STACK_OFFSET + 2; i++) {
		e->stack[i].static_eval = INT16_MIN;
		e->stack[i].ply = i - STACK_OFFSET;
	}
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
		out->time_ms = engine_elapsed_ms(e);
		atomic_store(&e->stop, false);
		atomic_store(&e->pondering, false);
		return ENGINE_OK;
	}
	/* Initial root order: captures first by the victim, then the generator's. */
	for (int i = 0; i < n; i++) {
		Move m = moves[i];
		Piece cap = move_is_drop(m) ? PIECE_NONE : e->pos.board[move_to(m)];
		e->root[i].move = m;
		e->root[i].score = cap ? ab_see_value(piece_type(cap)) : 0;
		e->root[i].prev_score = -INF;
	}
	sort_root(e->root, n);
	for (int i = 0; i < n; i++) e->root[i].score = -INF;
	e->nroot = n;
	if (multipv > n) multipv = n;

	EngineLine lines[ENGINE_MULTIPV_MAX];
	memset(lines, 0, sizeof lines);
	for (int depth = 1; depth <= max_depth; depth++) {
		e->root_depth = depth;
		e->seldepth = 0;
		for (int i = 0; i < e->nroot; i++) e->root[i].prev_score = e->root[i].score;
		int k;
		for (k = 0; k < multipv; k++) {
			EngineLine l = lines[k];
			search_line(e, depth, k, &l);
			if (e->aborted) break;
			lines[k] = l;
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
		out->time_ms = engine_elapsed_ms(e);
		if (info) info(ctx, out);
		e->can_abort = true;

		if (atomic_load(&e->stop) || (e->cancel && *e->cancel)) break;
		if (e->node_limit && e->nodes >= e->node_limit) break;
		bool pondering = atomic_load(&e->pondering);
		if (!pondering && lim->soft_ms && engine_elapsed_ms(e) >= lim->soft_ms) break;
		/* A forced mate found within this depth will not change. */
		int bv = lines[0].value;
		if (multipv == 1 && !atomic_load(&e->pondering) &&
		    (bv >= VALUE_MATE_IN_MAX || bv <= -VALUE_MATE_IN_MAX) &&
		    VALUE_MATE - abs(bv) + 2 <= depth)
			break;
	}
	out->nodes = e->nodes;
	out->time_ms = engine_elapsed_ms(e);
	atomic_store(&e->stop, false);
	atomic_store(&e->pondering, false);
	return ENGINE_OK;
}
