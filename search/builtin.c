/* search/builtin.c — the built-in engine as a SearchEngine. */
#include "search/builtin.h"
#include "shogi/errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/engine.h"
#include "search/usi_server.h"
#include "shogi/clock.h"
#include "shogi/movegen.h"

typedef struct {
	SearchEngine base; /* first: a SearchEngine * is a Builtin * */
	Engine *engine;
	const volatile sig_atomic_t *cancel;
	double cpu_ms; /* its searches' CPU time (each on the caller's thread) */
	char err[SEARCH_ERRLEN];
} Builtin;

static int fail(Builtin *b, int code, const char *msg)
{
	return errmsg_set(b->err, sizeof b->err, code, "%s", msg);
}

static void fill_line(SearchLine *sl, const EngineLine *l, int rank)
{
	memset(sl, 0, sizeof *sl);
	sl->move = l->move;
	usi_move_write(l->move, sl->usi);
	sl->multipv = rank;
	sl->value = l->value;
	if (l->value >= VALUE_MATE_IN_MAX || l->value <= -VALUE_MATE_IN_MAX) {
		sl->mate = true;
		sl->mate_plies = l->value > 0 ? VALUE_MATE - l->value : -(VALUE_MATE + l->value);
	}
	sl->depth = l->depth;
	sl->seldepth = l->seldepth;
	sl->nodes = l->nodes;
	sl->pv_len = l->pv_len < SEARCH_PV_MAX ? l->pv_len : SEARCH_PV_MAX;
	memcpy(sl->pv, l->pv, (size_t)sl->pv_len * sizeof(Move));
}

static int builtin_analyse(SearchEngine *se, SearchResult *out, const Position *pos,
                           const SearchBudget *budget, int multipv)
{
	Builtin *b = (Builtin *)se;
	b->err[0] = '\0';
	if (multipv < 1 || multipv > SEARCH_MULTIPV_MAX || multipv > ENGINE_MULTIPV_MAX)
		return fail(b, SEARCH_EINVAL, "builtin: MultiPV must be 1..32");
	if (!search_budget_ok(budget, pos->side))
		return fail(b, SEARCH_EINVAL, "builtin: the budget must be at least 1");
	EngineLimits lim = {.multipv = multipv, .clear_hash = true};
	switch (budget->kind) {
	case SEARCH_BUDGET_CLOCK: {
		/* The time allocation `joseki usi` makes for the same `go`. */
		const SearchClock *c = &budget->clock;
		UsiGo go = {.byoyomi = c->byoyomi, .timed = true};
		for (int i = 0; i < COLOR_NB; i++) {
			go.time[i] = c->time[i];
			go.inc[i] = c->inc[i];
		}
		usi_go_limits(&lim, &go, pos->side, multipv);
		lim.clear_hash = true;
		break;
	}
	case SEARCH_BUDGET_NODES:
		lim.nodes = budget->amount;
		break;
	case SEARCH_BUDGET_MOVETIME:
		lim.hard_ms = lim.soft_ms = (int64_t)budget->amount;
		break;
	case SEARCH_BUDGET_DEPTH:
		lim.depth =
		    budget->amount >= ENGINE_MAX_PLY ? ENGINE_MAX_PLY - 1 : (int)budget->amount;
		break;
	default:
		return fail(b, SEARCH_EINVAL, "builtin: unknown budget kind");
	}
	memset(out, 0, sizeof *out);
	out->attempts = 1;
	if (b->cancel && *b->cancel) return fail(b, SEARCH_ECANCELED, "builtin: cancelled");
	if (pos_declaration_ok(pos)) {
		out->win = true;
		strcpy(out->bestmove_usi, "win");
		return SEARCH_OK;
	}
	EngineResult r;
	double c0 = clock_thread_cpu_ms();
	int src = engine_search(b->engine, &r, pos, &lim, NULL, NULL);
	b->cpu_ms += clock_thread_cpu_ms() - c0;
	if (src < 0) return fail(b, SEARCH_EINVAL, "builtin: bad search limits");
	if (b->cancel && *b->cancel) return fail(b, SEARCH_ECANCELED, "builtin: cancelled");
	out->nodes = r.nodes;
	out->time_ms = (int)r.time_ms;
	if (r.nlines == 0) {
		out->resign = true;
		strcpy(out->bestmove_usi, "resign");
		return SEARCH_OK;
	}
	out->nlines = r.nlines;
	for (int k = 0; k < r.nlines; k++) fill_line(&out->lines[k], &r.lines[k], k + 1);
	out->bestmove = r.bestmove;
	usi_move_write(r.bestmove, out->bestmove_usi);
	return SEARCH_OK;
}

static void builtin_new_game(SearchEngine *se)
{
	engine_clear(((Builtin *)se)->engine);
}

static void builtin_free(SearchEngine *se)
{
	Builtin *b = (Builtin *)se;
	engine_free(b->engine);
	free(b);
}

static const char *builtin_name(const SearchEngine *se)
{
	(void)se;
	return "joseki builtin";
}

static const char *builtin_last_error(const SearchEngine *se)
{
	return ((const Builtin *)se)->err;
}

static int64_t builtin_cpu_ms(const SearchEngine *se)
{
	return (int64_t)((const Builtin *)se)->cpu_ms;
}

static const SearchEngineOps BUILTIN_OPS = {
    .analyse = builtin_analyse,
    .new_game = builtin_new_game,
    .free = builtin_free,
    .name = builtin_name,
    .last_error = builtin_last_error,
    .cpu_ms = builtin_cpu_ms,
};

int builtin_engine_options(size_t *hash_mb, const UsiOption *opts, int n, char *err)
{
	size_t mb = *hash_mb;
	for (int i = 0; i < n; i++) {
		const UsiOption *o = &opts[i];
		char *end;
		errno = 0;
		long v = strtol(o->value, &end, 10);
		bool number = end != o->value && !*end && errno == 0;
		bool hash = !strcmp(o->name, "USI_Hash") || !strcmp(o->name, "Hash");
		if (hash && number && v >= 1 && v <= USI_HASH_MAX_MB) {
			mb = (size_t)v;
		} else if (!(!strcmp(o->name, "Threads") && number && v == 1)) {
			return errmsg_set(
			    err, SEARCH_ERRLEN, SEARCH_EINVAL,
			    "builtin engine: option %s=%s not taken (it takes USI_Hash "
			    "or Hash=1..%d and Threads=1)",
			    o->name, o->value, USI_HASH_MAX_MB);
		}
	}
	*hash_mb = mb;
	return 0;
}

int builtin_engine_new(SearchEngine **out, size_t hash_mb, const volatile sig_atomic_t *cancel)
{
	*out = NULL;
	Builtin *b = calloc(1, sizeof *b);
	if (!b) return SEARCH_ENOMEM;
	if (engine_new(&b->engine, hash_mb) < 0) {
		free(b);
		return SEARCH_ENOMEM;
	}
	engine_set_cancel(b->engine, cancel);
	b->base.ops = &BUILTIN_OPS;
	b->cancel = cancel;
	*out = &b->base;
	return SEARCH_OK;
}
