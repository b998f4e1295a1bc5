/*
 * play/cycle.h — Shiba's extension/deletion cycle (docs/bookgen.md, "The
 * cycle"): play games with the book on one side only (play/match.h), mark
 * the book moves after which the book side lost too often as avoided
 * (deletion: prune), queue where the book ran out and the next plies of those
 * games as roots for think (extension), think, back the values up, and again.
 *
 * Games reach this module as position specs ("startpos moves ...", "sfen ...
 * moves ...") with the book side's colour and result: match gives them so,
 * and play/games.h reads them from game files (through ingest/replay.h).
 */
#ifndef BOOKGEN_CYCLE_H
#define BOOKGEN_CYCLE_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "play/match.h"
#include "bookgen/probe.h"
#include "bookgen/think.h"

enum {
	CYCLE_OK = 0,
	CYCLE_EINVAL = ERR_CYCLE - 0, /* a bad option or game (message says which) */
	CYCLE_EBOOK = ERR_CYCLE - 1,  /* the book could not be read or written */
	CYCLE_ENOMEM = ERR_CYCLE - 2,
	CYCLE_ESTEP = ERR_CYCLE - 3, /* a step (match, think, minimax) failed: message says which */
};
const char *cycle_strerror(int code);

#define CYCLE_ERRLEN 640

/* One game, from the book side's point of view. */
typedef struct {
	const char *spec; /* the whole game as a position spec */
	int book_color;   /* BLACK or WHITE: the side that played from the book */
	int result;       /* for the book side: 1 win, 0 draw, -1 loss */
} CycleGame;

/* ---- deletion ---- */

typedef struct {
	double max_winrate; /* mark moves whose score (wins + draws/2) / games is at most this */
	uint32_t min_games; /* ... over at least this many games (0 counts as 1) */
} CyclePruneOptions;

typedef struct {
	size_t games;   /* games looked at */
	size_t moves;   /* distinct book moves of the book side met in them */
	size_t marked;  /* moves newly marked avoided */
	size_t avoided; /* moves marked avoided in the book after the run */
} CyclePruneStats;

/*
 * Counts, for each move of the book side found in a record of the book
 * (position and move), the games it was played in and the book side's
 * results (a game counts once per move however often it passes), and marks
 * as avoided (BOOKDB_MOVE_AVOIDED, in one write transaction; statistics and
 * values kept) the moves at or below opt->max_winrate over at least
 * opt->min_games games. Marks already there stay. Returns 0, or CYCLE_EINVAL
 * (a game that does not parse: err names it), CYCLE_EBOOK, CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_prune(CyclePruneStats *st, BookDB *db, const CycleGame *games, size_t n,
                                const CyclePruneOptions *opt, char *err);

/* Clears every avoided mark (one write transaction); *cleared gets how many
 * moves were marked. 0, CYCLE_EBOOK or CYCLE_ENOMEM. */
JOSEKI_MUST_USE int cycle_prune_undo(size_t *cleared, BookDB *db, char *err);

/* ---- extension ---- */

typedef struct {
	size_t games;   /* games looked at */
	size_t ran_out; /* games in which the book side met a position without a book move */
	size_t queued;  /* positions newly queued */
	size_t pending; /* positions in the queue, not thought yet, after the run */
} CycleExtendStats;

/*
 * For each game, finds the first position where the book side was to move
 * and the book had no move for it (bookdb_best_move: none, or all avoided or
 * illegal), and queues that position and the next `plies` positions of the
 * game (those not thought yet) as roots (roots_queue_add: once each, so
 * running it twice queues nothing more). Queued positions already thought
 * are dropped from the queue. One write transaction. Returns 0, or
 * CYCLE_EINVAL (a game that does not parse), CYCLE_EBOOK, CYCLE_ENOMEM.
 */
JOSEKI_MUST_USE int cycle_extend(CycleExtendStats *st, BookDB *db, const CycleGame *games, size_t n,
                                 int plies, char *err);

/* ---- the whole cycle ---- */

/* A generation's games as the book keeps them (meta "cycle_games", written
 * once its match is over; layout in docs/bookdb.md). */
typedef struct {
	char *text; /* owned; the games' specs point into it */
	CycleGame *games;
	size_t n;
	int wins, draws, losses; /* the book side's */
} CycleGameSet;

/*
 * Parses len bytes of meta "cycle_games": "W D L\n", then one line a game,
 * "b|w -1|0|1 SPEC\n". Any bytes may be given: 0, or BOOKDB_ECORRUPT (out
 * then holds what was read so far) or BOOKDB_ENOMEM. The specs are not
 * checked here (the steps that use them are). Free with cycle_games_free,
 * also after a failure.
 */
JOSEKI_MUST_USE int cycle_games_parse(CycleGameSet *out, const void *bytes, size_t len);
void cycle_games_free(CycleGameSet *gs);

/* One generation's figures. */
typedef struct {
	int generation;          /* 1-based */
	int games;               /* games played */
	int wins, draws, losses; /* the book side's */
	double score;            /* the book side's points per game */
	size_t queued;           /* positions queued by extend */
	uint64_t thought;        /* positions think added */
	size_t marked;           /* moves newly avoided */
	size_t avoided;          /* moves avoided in the book */
	bool resumed;            /* the generation was resumed after an interruption */
} CycleGenStats;

typedef struct {
	const char *book;   /* the BOOK directory: side A's book, and the one grown */
	int generations;    /* total generations: a rerun goes on from the last finished step */
	MatchOptions match; /* side[0] = the book side (its book set to `book`), side[1] the
	                       opponent; out_dir is set per generation (BOOK/cycle/gen-NNNN),
	                       and the seed is match.seed + generation - 1 */
	CyclePruneOptions prune;
	int plies;          /* extend: positions after the first out of book */
	ThinkOptions think; /* first is the queue's (think_run); roots: the openings, or --roots */
	/* With probe.opponents set (one per think engine; opp_budget, book_side,
	 * max_plies, burst), the think step walks the lines those opponents play
	 * from think's roots (bookgen/probe.h) instead of selecting; the rest of
	 * ProbeOptions is taken from think and minimax. */
	ProbeOptions probe;
	BookMinimaxHook minimax;           /* backs the values up (bookmm_hook(); unset: none) */
	const volatile sig_atomic_t *stop; /* raised: the current step ends, the state is kept */
	void (*on_generation)(void *ctx, const CycleGenStats *g);     /* after each generation */
	void (*on_step)(void *ctx, int generation, const char *step); /* before each step */
	void *ctx;
} CycleOptions;

/*
 * Runs generations until opt->generations are done. The state (the last
 * generation finished and the last step of the current one, and the current
 * generation's games) is kept in the book (meta "cycle", "cycle_games"), each
 * step's state written once the step has finished, so a run stopped at any
 * moment (Ctrl-C, kill -9) is resumed by the same command from the step it
 * was in. *done gets the generations finished in all. Returns 0 (also when
 * stopped: *stopped set), or CYCLE_E* with a message in err (CYCLE_ERRLEN).
 */
JOSEKI_MUST_USE int cycle_run(int *done, bool *stopped, const CycleOptions *opt, char *err);

/* The generations finished so far according to the book's state (0 for a
 * book the cycle never ran on). 0 or CYCLE_EBOOK. */
JOSEKI_MUST_USE int cycle_generations_done(int *done, BookDB *db);

#endif
