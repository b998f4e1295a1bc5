/*
 * search/search.h — the one interface every search core implements: "analyse
 * this position with this budget and MultiPV K; give me, per move, its value
 * (centipawns or mate), depth, seldepth, nodes and principal variation".
 *
 * Two cores sit behind it: the external USI engine driver (search/usi_engine.h)
 * and the built-in alpha-beta engine. A core is a SearchEngine: a small vtable
 * (analyse, new_game, free, name, last_error) that an implementation embeds as
 * the first member of its own opaque struct. Callers only ever hold a
 * SearchEngine * and call the search_*() wrappers below.
 *
 * Values are from the side to move, in centipawns; a mate in n plies is
 * ±(VALUE_MATE − n) (shogi/types.h), negative when the side to move is mated.
 * Centipawn scores are clamped into ±(VALUE_MATE_IN_MAX − 1) so they are never
 * mistaken for mates.
 *
 * Threads: one SearchEngine is used by one thread at a time; distinct engines
 * may be used from distinct threads at once.
 */
#ifndef SEARCH_SEARCH_H
#define SEARCH_SEARCH_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/rng.h"
#include "shogi/types.h"

/* Error codes of the search module (all negative). */
enum {
	SEARCH_OK = 0,
	SEARCH_EINVAL = ERR_SEARCH - 0,     /* bad argument: budget, MultiPV, position spec */
	SEARCH_ENOMEM = ERR_SEARCH - 1,     /* out of memory */
	SEARCH_ESPAWN = ERR_SEARCH - 2,     /* the engine program could not be started */
	SEARCH_EHANDSHAKE = ERR_SEARCH - 3, /* no usiok/readyok within the handshake timeout */
	SEARCH_ETIMEOUT =
	    ERR_SEARCH - 4,             /* no bestmove within the hard limit plus the stop grace */
	SEARCH_ECRASH = ERR_SEARCH - 5, /* the engine exited or closed its pipes */
	SEARCH_EPROTOCOL = ERR_SEARCH - 6, /* unreadable bestmove, or only malformed output */
	SEARCH_EILLEGAL = ERR_SEARCH - 7,  /* the engine's best move is illegal in the position */
	SEARCH_EIO = ERR_SEARCH - 8,       /* a system call failed (pipe, poll, write) */
	SEARCH_ECANCELED = ERR_SEARCH - 9, /* the caller's cancel flag was raised (Ctrl-C) */
};

/* Largest MultiPV a core accepts, and longest PV kept per line. */
#define SEARCH_MULTIPV_MAX 32
#define SEARCH_PV_MAX 64
/* Length of error-message buffers (NUL included). */
#define SEARCH_ERRLEN 256

typedef enum {
	SEARCH_BUDGET_NODES = 1,    /* amount = nodes */
	SEARCH_BUDGET_MOVETIME = 2, /* amount = milliseconds */
	SEARCH_BUDGET_DEPTH = 3,    /* amount = plies */
	SEARCH_BUDGET_CLOCK = 4,    /* a game clock (clock below); amount unused */
} SearchBudgetKind;

/*
 * A game clock as a USI `go` states it, in milliseconds: the time left on each
 * side's clock (btime, wtime), each side's Fischer increment (binc, winc) and
 * the byoyomi of the side to move. The side to move may spend time + inc +
 * byoyomi of its own on this move (the increment is credited as the move
 * starts, as floodgate and the shogi GUIs count it).
 */
typedef struct {
	int64_t time[COLOR_NB];
	int64_t inc[COLOR_NB];
	int64_t byoyomi;
} SearchClock;

typedef struct {
	SearchBudgetKind kind;
	uint64_t amount;   /* at least 1 (not for a clock) */
	SearchClock clock; /* SEARCH_BUDGET_CLOCK only */
} SearchBudget;

/*
 * True when a core can search with the budget for the side to move us: a
 * known kind with an amount of at least 1, or a clock with no negative field
 * that leaves us some time (time + inc + byoyomi >= 1).
 */
static inline bool search_budget_ok(const SearchBudget *b, Color us)
{
	if (!b) return false;
	if (b->kind == SEARCH_BUDGET_CLOCK) {
		const SearchClock *c = &b->clock;
		for (int i = 0; i < COLOR_NB; i++)
			if (c->time[i] < 0 || c->inc[i] < 0) return false;
		return c->byoyomi >= 0 && c->time[us] + c->inc[us] + c->byoyomi >= 1;
	}
	return b->kind >= SEARCH_BUDGET_NODES && b->kind <= SEARCH_BUDGET_DEPTH && b->amount >= 1;
}

/*
 * A nodes budget moved by a jitter of pct percent (0..50): N * (1 + u * pct /
 * 100) nodes, at least 1, u uniform in [-1, 1) drawn from draw (a hash of
 * what the draw is for: `match --nodes-jitter`'s game and ply, a probe's walk
 * and ply). Other budgets, and pct 0, as they are.
 */
static inline SearchBudget search_budget_jittered(SearchBudget b, int pct, uint64_t draw)
{
	if (b.kind != SEARCH_BUDGET_NODES || pct <= 0) return b;
	double u = rng_unit(&draw) * 2 - 1;
	double n = (double)b.amount * (1 + u * pct / 100.0);
	b.amount = n < 1 ? 1 : (uint64_t)(n + 0.5);
	return b;
}

/* One analysed move (one MultiPV line). */
typedef struct {
	Move move;              /* first move of the PV, legal in the position */
	char usi[USI_MOVE_MAX]; /* the same move in USI notation */
	int multipv;            /* 1-based rank the engine gave the line */
	int value;              /* cp, or ±(VALUE_MATE − plies) */
	bool mate;              /* value is a mate score */
	int mate_plies;         /* plies to mate when mate (negative: mated) */
	int depth;              /* 0 when the engine did not say */
	int seldepth;           /* 0 when the engine did not say */
	uint64_t nodes;         /* nodes the engine reported with this line */
	int pv_len;             /* moves in pv (at least 1) */
	Move pv[SEARCH_PV_MAX]; /* legal sequence from the position */
} SearchLine;

/*
 * The answer for one position. lines[] are sorted by multipv rank, best
 * first, one per distinct first move; nlines may be less than the MultiPV
 * asked for (fewer legal moves, or an engine that said less) and may be 0 for
 * an engine that answered a bare bestmove, or for resign/win.
 */
typedef struct {
	int nlines;
	SearchLine lines[SEARCH_MULTIPV_MAX];
	Move bestmove; /* MOVE_NONE for resign/win */
	char bestmove_usi[USI_MOVE_MAX];
	bool resign;    /* the engine answered "bestmove resign" */
	bool win;       /* the engine answered "bestmove win" (declaration) */
	uint64_t nodes; /* largest node count reported */
	int time_ms;    /* wall time of the successful attempt */
	int malformed;  /* output lines that were skipped as malformed */
	int attempts;   /* 1, or 2 when the position was retried */
} SearchResult;

typedef struct SearchEngine SearchEngine;

typedef struct {
	/* See search_analyse. */
	int (*analyse)(SearchEngine *e, SearchResult *out, const Position *pos,
	               const SearchBudget *budget, int multipv);
	/* See search_new_game. */
	void (*new_game)(SearchEngine *e);
	/* Releases everything; e is not NULL. */
	void (*free)(SearchEngine *e);
	/* Display name ("YaneuraOu 8.00", "joseki builtin"). */
	const char *(*name)(const SearchEngine *e);
	/* Message of the last failure ("" if none). */
	const char *(*last_error)(const SearchEngine *e);
	/* See search_cpu_ms; NULL when the engine cannot tell. */
	int64_t (*cpu_ms)(const SearchEngine *e);
} SearchEngineOps;

/* Embedded as the first member of each implementation's struct. */
struct SearchEngine {
	const SearchEngineOps *ops;
};

/*
 * Analyses pos (whose move history, if any, is passed on so the engine can
 * see repetitions) with the given budget and MultiPV 1..SEARCH_MULTIPV_MAX.
 * Returns 0 with *out filled, or a negative SEARCH_E* code with *out left
 * undefined and a message in search_last_error(). A failed call leaves the
 * engine usable for the next position.
 */
JOSEKI_MUST_USE static inline int search_analyse(SearchEngine *e, SearchResult *out,
                                                 const Position *pos, const SearchBudget *budget,
                                                 int multipv)
{
	return e->ops->analyse(e, out, pos, budget, multipv);
}

/*
 * As search_analyse, for a position spec (docs/shogi.md: an SFEN, "startpos",
 * either followed by "moves ..."). A spec that does not parse is
 * SEARCH_EINVAL with the rules core's message in err (SEARCH_ERRLEN bytes,
 * may be NULL); other failures leave err empty (see search_last_error).
 */
JOSEKI_MUST_USE static inline int search_analyse_spec(SearchEngine *e, SearchResult *out,
                                                      const char *spec, const SearchBudget *budget,
                                                      int multipv, char *err)
{
	char perr[SHOGI_ERRLEN];
	Position *pos = (Position *)malloc(sizeof *pos); /* too big for a worker's stack */
	int rc;

	if (err) err[0] = '\0';
	if (!pos) return SEARCH_ENOMEM;
	if (!spec || position_parse(pos, spec, perr) < 0) {
		if (err)
			snprintf(err, SEARCH_ERRLEN, "position \"%.60s\": %s", spec ? spec : "",
			         spec ? perr : "missing");
		rc = SEARCH_EINVAL;
	} else {
		rc = search_analyse(e, out, pos, budget, multipv);
	}
	free(pos);
	return rc;
}

/* Tells the engine that the next position starts a new game (clears its hash). */
static inline void search_new_game(SearchEngine *e)
{
	e->ops->new_game(e);
}

static inline const char *search_name(const SearchEngine *e)
{
	return e->ops->name(e);
}

static inline const char *search_last_error(const SearchEngine *e)
{
	return e->ops->last_error(e);
}

/*
 * The CPU time (user + system, milliseconds) the engine has used since it was
 * made, as of the end of its last search, whatever it was doing (searches, new
 * games, start-up): an external engine's processes (those that ended too, and
 * the children they reaped; read from /proc once a search), the built-in
 * engine's searches. -1 when the engine cannot tell. What `think
 * --engine-seconds` counts: a budget in engine time that a busy machine does
 * not shrink, as a wall-clock one is.
 */
static inline int64_t search_cpu_ms(const SearchEngine *e)
{
	return e->ops->cpu_ms ? e->ops->cpu_ms(e) : -1;
}

/* The engine time a run's searches used: CPU time where the engine tells it
 * (search_cpu_ms), else the searches' wall time. Noted by the thread that
 * uses the engine, after each search. */
typedef struct {
	int64_t last; /* search_cpu_ms at the last note (-1: not known) */
	double used_ms;
} SearchMeter;

static inline void search_meter_start(SearchMeter *m, const SearchEngine *e)
{
	m->last = search_cpu_ms(e);
	m->used_ms = 0;
}

/* After a search that took wall_ms (what is counted when the CPU time is not
 * known). */
static inline void search_meter_note(SearchMeter *m, const SearchEngine *e, double wall_ms)
{
	int64_t c = search_cpu_ms(e);
	m->used_ms += c >= 0 && m->last >= 0 ? (double)(c - m->last) : wall_ms;
	m->last = c;
}

/* Frees the engine; accepts NULL. */
static inline void search_free(SearchEngine *e)
{
	if (e) e->ops->free(e);
}

/*
 * Mate score of a mate in |plies| plies; plies < 0 (or negative zero, passed
 * as mated = true) means the side to move is mated. Distances beyond 999 are
 * clamped so the value stays above VALUE_MATE_IN_MAX.
 */
static inline int search_mate_value(int plies, bool mated)
{
	if (plies < 0) {
		plies = -plies;
		mated = true;
	}
	if (plies > 999) plies = 999;
	return mated ? -(VALUE_MATE - plies) : VALUE_MATE - plies;
}

/*
 * An answer that is no analysis: a move (not resign, not win) with no line,
 * the engine's bare "bestmove" with no info line holding a score, which an
 * engine playing from its own opening book gives (gpsshogi does for 30
 * plies unless told BookDepth=0). Playing a game, it is a move like any
 * other; storing it as an analysis would mark its position thought with no
 * value for good. Writes why into buf (the engine named by name) when it is
 * one.
 */
static inline bool search_result_bare(char *buf, size_t n, const SearchResult *r, const char *name)
{
	if (r->nlines > 0 || r->resign || r->win) return false;
	snprintf(buf, n,
	         "%s answered bestmove %s with no analysis (no info line with a score): its own "
	         "opening book? Turn it off (USI_OwnBook=false; gpsshogi: BookDepth=0; "
	         "YaneuraOu: BookFile=no_book)",
	         name, r->bestmove_usi);
	return true;
}

static inline const char *search_strerror(int code)
{
	switch (code) {
	case SEARCH_OK:
		return "success";
	case SEARCH_EINVAL:
		return "invalid argument";
	case SEARCH_ENOMEM:
		return "out of memory";
	case SEARCH_ESPAWN:
		return "engine could not be started";
	case SEARCH_EHANDSHAKE:
		return "engine handshake timed out";
	case SEARCH_ETIMEOUT:
		return "engine did not answer within the hard limit";
	case SEARCH_ECRASH:
		return "engine exited unexpectedly";
	case SEARCH_EPROTOCOL:
		return "engine output unreadable";
	case SEARCH_EILLEGAL:
		return "engine answered an illegal move";
	case SEARCH_EIO:
		return "engine I/O error";
	case SEARCH_ECANCELED:
		return "search cancelled";
	default:
		return "unknown search error";
	}
}

#endif
