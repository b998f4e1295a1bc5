/*
 * bookgen/probe.h — growing the lines an opponent really plays (docs/bookgen.md,
 * "Probing an opponent").
 *
 * Coverage (bookgen/plan.h) guesses the opponent's replies from the book's
 * own evaluations. Against an engine at a small budget the guess is poor: its
 * move depends on what it searched before in the game (its hash and history
 * tables), so a fresh analysis of the same position agrees with the move it
 * plays in a game less than half the time. Probing asks the opponent itself.
 * Each line — a root (an opening) and the colour the book plays — is walked
 * as a game between the book and the opponent engine, started afresh
 * (usinewgame) and asked for each of its moves exactly as `joseki match`
 * asks (one search, MultiPV 1, the same budget): the book side plays the
 * book's best move, the opponent its own. Every position on the way that the
 * book has not thought about is analysed (MultiPV K) and stored, the values
 * backed up (the minimax hook), and the book's choices are read after that;
 * when a result changes a choice the walk already went past, the walk starts
 * again from the root and follows the new choice, so the book's choices are
 * always the ones walked (a match from the root then leaves the book where the
 * walks stopped, not where a late result turned it). A walk ends after `burst` new positions (the
 * next walk starts from the root and sees the choices changed meanwhile), at `max_plies`, or where
 * the game ends; a line whose walk thinks nothing new is done (until a walk of another line stores
 * something, which may change its choices). Lines are served in proportion to their roots' weights.
 *
 * Against an opponent that answers the same way in the same game (an engine
 * at a node budget, single-threaded, that starts each game in the same state:
 * for one whose state outlives usinewgame, as fairy-stockfish's does, a new
 * process every game here and in the match: UsiEngineConfig's
 * restart_each_game), a match from the same roots then stays in book for as
 * long as the walks reached: ProbeStats.reach says how far. Each worker has two engines: one
 * that analyses, and the opponent, which does nothing else (its state must be
 * the one it has in a game).
 *
 * A varying opponent (opp_jitter): such an engine is chaotic in its budget
 * (fairy-stockfish at 20,000 nodes plays another move in about half of the
 * positions when its nodes move by 1%), so a book grown against its one game
 * an opening is left at once by a match whose nodes vary. With opp_jitter
 * each walk is a game of its own: a new game, every opponent move searched
 * (none taken from an earlier walk) at nodes drawn for that walk and ply.
 * A reply the position's record does not hold yet is added to it (its
 * evaluation as the opponent's analysis), so the opponent's positions gather
 * the replies it plays, the book side gets its move after each, and values
 * are backed up over all of them. A line is done after JITTER_DONE_WALKS
 * walks in a row that met nothing new (one, without jitter).
 */
#ifndef BOOKGEN_PROBE_H
#define BOOKGEN_PROBE_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "bookgen/plan.h"
#include "search/search.h"

/*
 * Progress of probe_run, for ProbeOptions.progress: phase "status" about once
 * a second while the walks run, and one "done" when they have ended.
 */
typedef struct {
	uint64_t thought, walks; /* positions analysed and stored, walks started */
	uint64_t done;           /* lines walked to the end ... */
	int lines;               /* ... of lines */
	int deepest;             /* the longest walk, plies from its root */
	double seconds;          /* since probe_run began */
	double reach;            /* the lines' mean reach by weight, as last read (ProbeStats) */
} ProbeProgress;
typedef void (*ProbeProgressFn)(void *ctx, const char *phase, const ProbeProgress *p);

typedef struct {
	SearchEngine **engines;   /* analyse: one per worker */
	SearchEngine **opponents; /* the opponent: one per worker, used for nothing else */
	int nworkers;
	SearchBudget budget;     /* an analysis */
	SearchBudget opp_budget; /* an opponent's move (as `match` gives it) */
	/* With a nodes opp_budget of N: each of the opponent's searches gets
	 * N * (1 + u * opp_jitter / 100) nodes, u uniform in [-1, 1) drawn from
	 * seed, the walk and the ply, as `match --nodes-jitter` draws them; 0..50,
	 * 0: exactly N. Each walk is then a new sample of the games that opponent
	 * plays (see "A varying opponent" above). */
	int opp_jitter;
	uint64_t seed;
	int multipv;
	const char *const *roots; /* position specs; NULL/0: the start position */
	const double *root_weights;
	int nroots;
	PlanSide book_side; /* the colour(s) the book plays */
	/* Per root, the colour(s) the book plays from it (NULL: book_side for
	 * every root): the cycle walks each lost game's line alone. */
	const PlanSide *root_sides;
	int max_plies; /* plies of a walk from its root; 0: 32 */
	int burst;     /* new positions a walk thinks before it yields; 0: 8 */
	int max_moves; /* a walk ends at this game length, as match's --max-moves; 0: 320 */
	uint64_t max_positions;    /* 0: no limit */
	double max_seconds;        /* 0: no limit */
	double max_engine_seconds; /* both engines' time in all (SearchMeter); 0: no limit */
	const volatile sig_atomic_t *stop; /* may be NULL */
	BookMinimaxHook minimax;           /* required: the book's choices follow its values */
	ProbeProgressFn progress;          /* NULL: quiet */
	void *progress_ctx;
	double status_report_ms; /* between two "status" reports (0: 1000) */
} ProbeOptions;

typedef struct {
	uint64_t thought;      /* positions analysed and stored */
	uint64_t failed;       /* analyses or opponent moves that failed */
	uint64_t walks;        /* walks started */
	uint64_t opp_moves;    /* opponent searches */
	uint64_t opp_cached;   /* opponent moves a walk took from an earlier one's */
	uint64_t opp_replayed; /* of opp_moves: searches that rebuilt an engine's state */
	uint64_t opp_differ;   /* searches of a walk whose reply differed from before */
	uint64_t opp_added;    /* opp_jitter: replies added to a thought position */
	uint64_t restarts;     /* walks started again: a result changed a choice above */
	uint64_t book_plies;   /* book moves played in the walks */
	double reach;          /* at the end: book plies a match from a line's root
	                        * gets, the mean over the lines by weight (what the
	                        * walks' replies show; a run of `match` measures it) */
	uint64_t lines, done;  /* lines, and lines walked to the end */
	int deepest;           /* the longest walk, plies from its root */
	double seconds;
	double engine_seconds; /* both engines' time (SearchMeter) */
} ProbeStats;

/*
 * Runs the probes on db (opened read-write) until every line is done, a limit
 * is reached or the stop flag is raised. Returns 0, or a THINK_E* code with a
 * message in err (THINK_ERRLEN bytes, may be NULL).
 */
JOSEKI_MUST_USE int probe_run(ProbeStats *out, BookDB *db, const ProbeOptions *opt, char *err);

#endif
