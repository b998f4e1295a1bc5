/*
 * minimax/bookmm.h — minimax over a whole book (joseki minimax, docs/minimax.md).
 *
 * Loads the book graph (every record is a node; every legal move reaching a
 * book position is an edge; other moves with an engine evaluation are leaves
 * valued by it; moves with neither are ignored), backs the values up with the
 * shared core (minimax/graph.h: acyclic peel, perpetual-check loops, in-place
 * relaxation from the draw value) and stores each move's value and dist in the
 * records (flag BOOKDB_REC_MINIMAX), in batched write transactions.
 */
#ifndef MINIMAX_BOOKMM_H
#define MINIMAX_BOOKMM_H

#include "shogi/errors.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"

/* Value stored for a move minimax could not value (no eval, no book child). */
#define BOOKMM_NOVALUE BOOKDB_NOVALUE

enum {
	BOOKMM_OK = 0,
	BOOKMM_ENOMEM = ERR_BOOKMM - 0,
	BOOKMM_EBOOK = ERR_BOOKMM - 1,    /* the book store failed (message says how) */
	BOOKMM_ESTOPPED = ERR_BOOKMM - 2, /* opt->stop was set: the run ended early */
	BOOKMM_EWHOLE = ERR_BOOKMM - 3,   /* opt->no_whole: only a whole-book run can answer */
	BOOKMM_EBUSY = ERR_BOOKMM - 4,    /* another run holds the book (BOOK/minimax.lock) */
};
const char *bookmm_strerror(int code);

/* Progress of a whole-book run: phase "index", ("children", "lookups" when
 * the children are looked up in sorted runs), "moves", "analysis", "writing"
 * or "graph"; done of total records (of the children to look up, for
 * "lookups"; 0 of 0 for a phase without a count). Called every so often from
 * the calling thread. */
typedef void (*BookmmProgressFn)(void *ctx, const char *phase, size_t done, size_t total);

/*
 * Which positions count as inner nodes of the minimax (docs/minimax.md, "The
 * leaf policy"). THOUGHT (the default): a position an engine analysed at depth >=
 * min_depth, or whose games number at least min_games (when min_games > 0);
 * every other record is a leaf, valued by its own moves' evaluations only, and
 * a move of an inner node into such a position is a leaf valued by the move's
 * own evaluation when it has one. GAMES: every record is an inner node (a
 * value may be backed up along a lone game line; the behaviour before the
 * policy existed). An evaluation is an analysis (bookdb_move_analysed), or
 * also a game comment with game_evals.
 */
typedef enum { BOOKMM_LEAVES_THOUGHT = 0, BOOKMM_LEAVES_GAMES = 1 } BookmmLeaves;
#define BOOKMM_ANY_DEPTH (-1)

/*
 * A book from games alone (docs/minimax.md, "Where values come from"), by
 * choice: no analysis is a value, each position's moves are valued by their
 * game results, nothing is backed up. MOST_PLAYED (Bonanza's narrow book): the
 * move played in the most games (ties: the better score rate), the position's
 * only valued move; WINRATE (dlshogi's): every move with enough games, by its
 * score rate. A valued move's value is its score rate p (wins + draws/2 over
 * games, bounded to 0.01..0.99) as 600 ln(p / (1 - p)) centipawns.
 */
typedef enum {
	BOOKMM_GAMES_NONE = 0,
	BOOKMM_GAMES_MOST_PLAYED = 1,
	BOOKMM_GAMES_WINRATE = 2,
} BookmmGamesBook;

typedef struct {
	BookmmLeaves leaves;
	int min_depth;        /* THOUGHT: least think depth of an inner node (0: 1;
	                         BOOKMM_ANY_DEPTH: any thought position) */
	uint32_t min_games;   /* THOUGHT: games through a position that make it inner (0: off) */
	double blend;         /* weight 0..1 of the win rate in a leaf's value (0: off) */
	uint32_t blend_games; /* least games of a move for the blend (0: 10) */
	/* Game records' comments ('** in CSA) count as evaluations, as an
	 * analysis does (off: they are shown, never values). */
	bool game_evals;
	BookmmGamesBook games_book; /* a book from games alone (the fields above unused) */
	uint32_t games_min;         /* games_book: the least games of a valued move (0: 1) */
} BookmmPolicy;

typedef struct BookmmKeep BookmmKeep;

typedef struct {
	int draw_black, draw_white; /* value of a repetition for the side to move */
	BookmmPolicy policy;
	bool full; /* rewrite every record, changed or not */
	/* A whole-book run (full, or one an incremental run gave way to) writes
	 * the book anew into a new file with full pages (bookdb_rebuild_rewrite)
	 * when it is the book's only writer: always with full, and without it
	 * when rebuild is set (the `joseki minimax` command, whose process has
	 * nothing else of the book open: its first run on a book then leaves
	 * 110 bytes a position, not 200). Readers that stay open go on with the
	 * old file. An in-process caller that holds records of the book (think,
	 * merge) leaves rebuild unset. */
	bool rebuild;
	/* Rewrite the records where they are (bookdb_rewrite) even so. */
	bool in_place;
	size_t batch; /* records per write transaction (0: 10000 whole-book; incremental: 250 ms) */
	BookmmProgressFn progress; /* may be NULL */
	void *progress_ctx;
	/* May be NULL. When it turns true (another thread, a signal handler) the
	 * run ends at its next check, within a fraction of a second on any book,
	 * with BOOKMM_ESTOPPED; the book is left as a run killed there leaves it,
	 * which the next run mends (a whole-book run stopped part way makes the
	 * next run a whole-book one: docs/minimax.md, "Stopping a run"). */
	const atomic_bool *stop;
	/* Incremental or nothing: when only a whole-book run can answer, the run
	 * does nothing and returns BOOKMM_EWHOLE with the reason in err (the
	 * coordinator then runs the whole book in a process of its own). */
	bool no_whole;
	/* May be NULL. The kept graph as the last incremental run left it, held
	 * in memory for the next (a caller that runs minimax again and again on
	 * one book: the coordinator): that run then neither maps the graph file
	 * nor replays its journal, and the pages it read stay mapped. Used only
	 * when the book's state is the one it was left for; one run at a time
	 * (bookmm_keep_new, bookmm_keep_free). */
	BookmmKeep *keep;
	/* An incremental run whose kept graph's journal is longer than this
	 * folds it into a new graph file first (0: a quarter of the graph file,
	 * and at least 1 MiB; docs/minimax.md, "Folding the journal"); and one
	 * whose kept graph holds more than a quarter of memory in changes
	 * (0: bigmem_budget(); no such bound when both are 0). */
	uint64_t fold_at;
	uint64_t memory;
	/* Where an incremental run keeps its marks on the graph's nodes: 0, a
	 * byte a node, or a set of the nodes it marks when the graph is large
	 * beside the changes (docs/minimax.md); BOOKMM_MARKS_BYTES or
	 * BOOKMM_MARKS_SET, that one (tests take each). */
	int marks;
} BookmmOptions;

enum { BOOKMM_MARKS_AUTO, BOOKMM_MARKS_BYTES, BOOKMM_MARKS_SET };

/* An empty keep (NULL when out of memory); freed, with what it holds, by
 * bookmm_keep_free (NULL is fine). */
BookmmKeep *bookmm_keep_new(void);
void bookmm_keep_free(BookmmKeep *k);

/* A whole-book run's phases, in the order they run (docs/minimax.md, "A run's
 * passes"): BookmmStats.phase_ms[k] is bookmm_phase_name[k]'s. A phase a run
 * did not need took 0 (the inner marks with --leaves games; the children and
 * the lookups when the children were looked up in the key index). */
enum {
	BOOKMM_PH_INDEX,    /* the snapshot index: keys, key directory, filter */
	BOOKMM_PH_INNER,    /* which records are inner nodes of the leaf policy */
	BOOKMM_PH_CHILDREN, /* sorted lookups: the children's requests */
	BOOKMM_PH_LOOKUPS,  /* sorted lookups: the requests met with the keys */
	BOOKMM_PH_MOVES,    /* the graph's moves and edges */
	BOOKMM_PH_ANALYSIS, /* the valued nodes, the analysis form, the back-up */
	BOOKMM_PH_WRITE,    /* the records written back (or the book rebuilt) */
	BOOKMM_PH_GRAPH,    /* the graph file (beside the write: what was left after it) */
	BOOKMM_PHASES
};
extern const char *const bookmm_phase_name[BOOKMM_PHASES];

typedef struct {
	size_t positions; /* records in the book */
	size_t valued;    /* records that got a value */
	size_t moves, edges;
	size_t settled; /* valued records settled by the acyclic peel */
	size_t cyclic;  /* valued records settled by relaxation (on or above cycles) */
	int sweeps;     /* peel sweeps + relax sweeps */
	/* Cycles still changing at the relaxation's last sweep, and their
	 * positions (MmStats: values as that sweep left them) */
	size_t unsettled_cycles, unsettled;
	size_t rewritten; /* records written back */
	/* A whole-book run: the bytes of every record as written back (what the
	 * book's records take, their keys and LMDB's own bytes aside) */
	uint64_t record_bytes;
	bool rebuilt;      /* a whole-book run rebuilt the book into a new file (not in place) */
	bool rebuild_busy; /* --full: not rebuilt, as another writer had the book open */
	/* --full: not rebuilt, as the disk had no room for a copy of the book
	 * (room_free bytes free, about room_needed needed) */
	bool rebuild_no_room;
	uint64_t room_free, room_needed;
	uint64_t bytes_before, bytes_after; /* rebuilt: the book's file before and after */
	bool has_root;                      /* the start position is a valued record */
	int root_value;                     /* its value for the side to move */
	bool incremental;                   /* only what changed since the last run was analysed */
	size_t changed;  /* records changed since the last run (all, for a whole-book run) */
	size_t affected; /* nodes analysed again: the changed ones and everything above them */
	char full_reason[160]; /* why the whole book was analysed ("" when incremental) */
	/* A whole-book run whose key index was past half the arrays' budget
	 * looked the children up in sorted runs (docs/minimax.md), which wrote
	 * sorted_bytes to disk (0: they fitted in memory). */
	bool lookups_sorted;
	uint64_t sorted_bytes;
	/* A whole-book run: the positions analysed shallower than the leaf
	 * policy's least depth (BookmmPolicy.min_depth), leaves for that alone:
	 * their analyses are their values, nothing is backed up through them. */
	size_t shallow;
	bool view_kept; /* an incremental run took the graph its keep held (BookmmOptions.keep) */
	/* An incremental run folded the kept graph's journal, this long, into a
	 * new graph file first (0: it did not), in fold_ms. */
	uint64_t folded_bytes;
	double fold_ms;
	/* An incremental run's parts: the change log read and the changed
	 * nodes' moves generated again; the subgraph taken and analysed; the
	 * records and the journal written (with bookmm_prepare, whose records
	 * another writer writes: the records read and their rewrites made). */
	double read_ms, analysis_ms, write_ms;
	double phase_ms[BOOKMM_PHASES]; /* a whole-book run's phases (above) */
} BookmmStats;

/*
 * Runs minimax over db (opened read-write). stats may be NULL. Unless
 * opt->full, only what changed since the last run (the book's change log) is
 * analysed again, with the graph the last run kept (minimax/mmfile.h); when
 * that cannot answer (no earlier run, other draw values, the log overflowed,
 * the kept graph is missing or damaged) the whole book is, and
 * stats->full_reason says why. On failure returns a negative BOOKMM_E* code
 * with the message in err (BOOKMM_ERRLEN bytes).
 */
#define BOOKMM_ERRLEN 256
JOSEKI_MUST_USE int bookmm_run(BookmmStats *stats, BookDB *db, const BookmmOptions *opt, char *err);

/*
 * bookmm_run in two halves (BookMinimaxHook's prepare and apply): the
 * analysis, the kept graph's journal batch and, when it must, a whole-book
 * run (which writes itself) here; the incremental run's record writes, and
 * its state with the last of them, in the caller's write transactions
 * (bookmm_plan_apply: up to max records each, 1 when done). *plan is NULL
 * when there is nothing left to write. opt may be NULL (the defaults); the
 * plan keeps a copy (its stop pointer, which apply does not read, aside). A plan applied in several
 * transactions marks the book as a stopped run (mmrun) until its last; one dropped half applied
 * (bookmm_plan_free) is mended by the next run, as a killed run is. err:
 * BOOKMM_ERRLEN bytes, as bookmm_run's.
 */
JOSEKI_MUST_USE int bookmm_prepare(BookMinimaxPlan **plan, BookmmStats *stats, BookDB *db,
                                   const BookmmOptions *opt, char *err);
JOSEKI_MUST_USE int bookmm_plan_apply(BookMinimaxPlan *plan, BookTxn *txn, size_t max, char *err);
/* The run's figures so far (rewritten grows as the plan is applied). */
const BookmmStats *bookmm_plan_stats(const BookMinimaxPlan *plan);
void bookmm_plan_free(BookMinimaxPlan *plan);

/*
 * Minimax as the hook the cycle and the coordinator call (bookdb/minimax_hook.h):
 * bookmm_run with *opt (a copy is not taken: opt must outlive the hook), or the
 * default options (incremental) when opt is NULL.
 */
BookMinimaxHook bookmm_hook(const BookmmOptions *opt);

/*
 * How many writes of positions the book's change log numbered since the last
 * minimax run took its values (records whose values that run did not back
 * up; a record written twice counts twice): 1 with *n set, 0 when it cannot
 * say (no run kept its state, or the log is off), or a bookdb error.
 */
JOSEKI_MUST_USE int bookmm_writes_since(uint64_t *n, BookTxn *txn);
/*
 * Whether db's values are behind its records: a run stopped before its end
 * (killed, or a plan dropped half applied), or writes the change log
 * numbered since the last run (bookmm_writes_since). False for a book no run
 * kept its state in (never analysed, or the log off): nothing says so there.
 */
bool bookmm_pending(BookDB *db);
/*
 * Whether no minimax run has ever backed up the analyses of the book txn
 * sees: it holds thought positions and no run's mark (meta "minimax"). Where
 * bookmm_pending says nothing (no run kept its state).
 */
bool bookmm_never_ran(BookTxn *txn);
/* (Its prepare fails with the BOOKMM_E* code of the run, BOOK_MINIMAX_STOPPED
 * for a stop.) */

#endif
