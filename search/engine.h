/*
 * search/engine.h — the built-in alpha-beta engine.
 *
 * Iterative deepening with aspiration windows over a principal variation
 * search (search/alphabeta.c: staged move ordering with SEE and histories,
 * null move, futility, late-move reductions and pruning, singular and check
 * extensions, a quiescence search that knows checks), mate-in-1 and mate-in-3
 * tests (search/mate.h), a linear evaluation fitted to data (search/eval.h)
 * and MultiPV. Values are centipawns from the side to move; a mate in n plies
 * is ±(VALUE_MATE − n).
 *
 * Threads: an Engine is used by one searching thread at a time. engine_stop()
 * and engine_ponderhit() may be called from any other thread while
 * engine_search() runs. With a depth or node limit and engine_search's
 * clear_hash set, the node count of a search is deterministic.
 */
#ifndef SEARCH_ENGINE_H
#define SEARCH_ENGINE_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "shogi/position.h"

/* Error codes of the engine (negative). */
enum {
	ENGINE_OK = 0,
	ENGINE_ENOMEM = ERR_ENGINE - 0,
	ENGINE_EINVAL = ERR_ENGINE - 1,
};
const char *engine_strerror(int code);

#define ENGINE_MAX_PLY 128
#define ENGINE_MULTIPV_MAX 32
#define ENGINE_PV_MAX 64
#define ENGINE_HASH_DEFAULT_MB 16

/* What bounds a search. Zero fields are "no limit"; at least depth 1 is always
 * completed (so a legal move is returned whenever one exists). */
typedef struct {
	int depth;       /* max iteration depth, 1..ENGINE_MAX_PLY-1 (0 = max) */
	uint64_t nodes;  /* stop after about this many nodes */
	int64_t hard_ms; /* abort the search at this elapsed time */
	int64_t soft_ms; /* do not start a new iteration after this time */
	int multipv;     /* 1..ENGINE_MULTIPV_MAX (0 = 1) */
	bool clear_hash; /* clear the transposition table first (reproducible) */
} EngineLimits;

/* One MultiPV line. */
typedef struct {
	Move move;
	int value;
	int depth;
	int seldepth;
	uint64_t nodes; /* total nodes of the search when the line was completed */
	int pv_len;     /* at least 1 */
	Move pv[ENGINE_PV_MAX];
} EngineLine;

typedef struct {
	int nlines; /* 0 only when the side to move has no legal move (king captures,
	               possible in a bad set-up, are not moves) */
	EngineLine lines[ENGINE_MULTIPV_MAX];
	Move bestmove;  /* lines[0].move, or MOVE_NONE when mated */
	int depth;      /* last completed iteration */
	uint64_t nodes; /* all nodes searched */
	int64_t time_ms;
	bool mated; /* no legal move at the root */
} EngineResult;

/* Called after each completed iteration with the lines so far (in order). */
typedef void (*engine_info_fn)(void *ctx, const EngineResult *partial);

typedef struct Engine Engine;

/* Creates an engine with a hash table of hash_mb megabytes (0: default).
 * Returns 0 or ENGINE_ENOMEM. */
int engine_new(Engine **out, size_t hash_mb);
/* Resizes the hash table (clears it). Returns 0 or ENGINE_ENOMEM, in which
 * case the old table is kept. */
int engine_set_hash(Engine *e, size_t hash_mb);
/* Forgets everything learnt (hash, history): a new game starts. */
void engine_clear(Engine *e);
void engine_free(Engine *e);

/*
 * Searches pos (its history is used for repetitions; pos is not modified)
 * within lim. info may be NULL. Returns 0 with *out filled, or ENGINE_EINVAL
 * for bad limits.
 */
int engine_search(Engine *e, EngineResult *out, const Position *pos, const EngineLimits *lim,
                  engine_info_fn info, void *ctx);

/* Asks a running search to finish as soon as possible (thread-safe). */
void engine_stop(Engine *e);
/* A flag (e.g. set by a SIGINT handler) that acts as engine_stop() while it is
 * non-zero; polled with the clock. NULL removes it. */
void engine_set_cancel(Engine *e, const volatile sig_atomic_t *flag);
/* The clock the time limits are measured by: now_ns(ctx), monotonic
 * nanoseconds (a test's fake clock); NULL restores the system's. Set it while
 * no search runs. */
void engine_set_clock(Engine *e, int64_t (*now_ns)(void *ctx), void *ctx);
/* Forgets a stop request that arrived after a search had already ended. */
void engine_clear_stop(Engine *e);
/*
 * Pondering: between engine_set_pondering(e) (called before engine_search
 * starts) and engine_ponderhit() the time limits do not apply; at the
 * ponderhit they start counting from that moment. Every search ends the
 * pondering state. Both are thread-safe.
 */
void engine_set_pondering(Engine *e);
void engine_ponderhit(Engine *e);

/* The built-in bench: position specs, NULL-terminated (from bench-v1.sfen). */
extern const char *const ENGINE_BENCH_POSITIONS[];
#define ENGINE_BENCH_DEPTH 12
/*
 * Searches every bench position to depth (TT cleared before each, one thread),
 * a line per position on log, then "bench nodes N time_ms T nps X" on out.
 * Returns 0, ENGINE_ENOMEM, or ENGINE_EINVAL if a position does not parse.
 */
int engine_bench(FILE *out, FILE *log, int depth);

#endif
