/*
 * bookgen/think.h — the think loop: the selector picks leaves, N
 * search cores analyse them in parallel (one thread each), every answer is
 * stored with the engine's evaluation of every returned move, committed in
 * batches. Selection runs on the calling thread while the cores think.
 *
 * Positions already thought are never sent again (the selector only returns
 * unthought positions), so a restart resumes where the last committed batch
 * ended. The loop stops on a position count, a time limit, when nothing is
 * left to select, or when the stop flag is raised (signal handler): in-flight
 * answers are then collected (a core that honours the same flag returns at
 * once and its position is simply not stored), the last batch is committed.
 */
#ifndef BOOKGEN_THINK_H
#define BOOKGEN_THINK_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bookdb/bookdb.h"
#include "bookgen/plan.h"
#include "bookdb/minimax_hook.h"
#include "bookgen/selector.h"
#include "bookgen/snapshot.h"
#include "search/search.h"

enum {
	THINK_OK = 0,
	THINK_EINVAL = ERR_THINK - 0, /* bad option or root */
	THINK_ENOMEM = ERR_THINK - 1,
	THINK_EBOOK = ERR_THINK - 2,   /* book read/write error (message in err) */
	THINK_EENGINE = ERR_THINK - 3, /* engines kept failing (message in err) */
};
const char *think_strerror(int code);

#define THINK_ERRLEN 512

/*
 * Progress of think_run, for ThinkOptions.progress: phase "status" about once
 * a second, and one "done" as the loop ends; while a selection has searched
 * for more than a second (the first search over a big book without a
 * snapshot: tens of seconds), "search" about once a second instead, with
 * expanded set.
 */
#define THINK_PROGRESS_PV 8
typedef struct {
	uint64_t thought;      /* positions analysed and stored by this run */
	uint64_t book_thought; /* positions the book holds analysed, this run's among them
	                          (its kept counts: selection_book_thought) */
	double busy;           /* share of the engines' time spent analysing, 0..1 */
	double seconds;        /* since the loop began */
	bool has_root;         /* the first root has a value: root_value, pv */
	int root_value;
	int npv; /* the line to the next leaf, at most THINK_PROGRESS_PV moves */
	Move pv[THINK_PROGRESS_PV];
	double eta;        /* seconds left by the time or position limit (a re-analysis: also
	                      its list's end); < 0: no limit */
	int finishing;     /* "status": the time limit passed, the searches still under way
	                      (they are finished and stored before the run ends); 0 otherwise */
	uint64_t expanded; /* "search": positions the selector has expanded so far */
	bool filter_ready; /* "search": the key filter is built (the search waits for it) */
	/* A re-analysis (ThinkOptions.again; again_listed 0 otherwise): the
	 * positions of its list, those left (not thought yet: in flight, failed
	 * or not handed out; ThinkStats.again_left at the end), and those whose
	 * new analysis replaced the old. */
	uint64_t again_listed, again_left, again_replaced;
} ThinkProgress;
typedef void (*ThinkProgressFn)(void *ctx, const char *phase, const ThinkProgress *p);

typedef struct {
	SearchEngine **engines; /* one thread each */
	int nengines;
	SearchBudget budget;
	int multipv;
	uint64_t max_positions;            /* 0: no limit */
	double max_seconds;                /* 0: no limit */
	double max_engine_seconds;         /* the engines' time in all (SearchMeter); 0: no limit */
	const volatile sig_atomic_t *stop; /* may be NULL */
	size_t commit_every;               /* results per committed batch; 0: 64 */
	int kif_bonus;                     /* selector's bonus for moves played in games */
	const char *const *roots;          /* position specs; NULL/0: the start position */
	const double *root_weights;        /* their shares of the effort (NULL: even) */
	int nroots;
	PlanOptions plan;         /* the selection policy (plan_options_init: the defaults;
	                             zero-initialised: PLAN_COVER with window 0) */
	ThinkProgressFn progress; /* NULL: quiet */
	void *progress_ctx;
	/* Called once the selection is read, with what became of the snapshot
	 * (as ThinkStats says it at the end: restored in ms, else why not, ""
	 * for no snapshot there); may be NULL. */
	void (*on_snapshot)(void *ctx, bool restored, double ms, const char *note);
	void *snapshot_ctx;
	/* How long a selection searches before it reports "search", and between
	 * two reports, in ms (0: 1000; < 0: at every yield of the selector). */
	double search_report_ms;
	/* Between two "status" reports, in ms (0: 1000). */
	double status_report_ms;
	/* Position specs to think first, in order (--from-kifu: the positions
	 * along game records), each skipped when already thought or in flight;
	 * then the selector takes over. */
	const char *const *first;
	size_t nfirst;
	/* The way to the roots (cli_plan_roots' paths): thought after the
	 * positions above, before the roots' leaves, each skipped when thought
	 * (plan_set_paths). paths_only: the run ends when they are thought. */
	const char *const *paths;
	size_t npaths;
	bool paths_only;
	/* With paths: minimax (may be NULL: not followed), run before the book's
	 * line from where the paths start is looked at: each position on it
	 * shallower than the roots (the best move at each ply) is thought before
	 * the roots' leaves, and looked at again as results come. */
	const BookMinimaxHook *minimax;
	/* The key filter's source for the selector (bookmm_hook: minimax's kept
	 * keys; NULL: a pass over the book). */
	const BookMinimaxHook *keys;
	/* The selector's memory (sel_trim: key filter, node map, graph), kept
	 * within it after each commit; 0: no limit. */
	uint64_t select_memory;
	/* The selector's snapshot (BOOK/selector.snap; NULL: none): read at the
	 * start when it is of the book as it is (the run goes on where the last
	 * stopped, without the first search over the book), removed, and written
	 * again at the end. */
	const char *snapshot;
	/* Re-analysis (think --reanalyse, bookgen/reanalyse.h): the positions to
	 * think again, in this order, thought or not (think_again_list); the run
	 * thinks nothing else (not the queue, first, paths or the selector's
	 * leaves). Each answer is stored by the record merge rule (bookdb/merge.h:
	 * the deeper analysis wins whole, ties to the new one; statistics, marks
	 * and the other moves stay), and marked done for campaign in the same
	 * commit. */
	const Key *again;
	size_t nagain;
	uint64_t campaign;
} ThinkOptions;

typedef struct {
	uint64_t thought;      /* positions analysed and stored by this run */
	uint64_t failed;       /* analyses that failed (not stored) */
	uint64_t commits;      /* batches committed */
	double seconds;        /* wall time */
	double engine_seconds; /* the engines' time (SearchMeter) */
	double busy_pct;       /* share of the cores' time spent analysing */
	bool exhausted;        /* stopped because nothing was left to select */
	bool search_stopped;   /* the stop flag ended a selection part-way */
	int root_value;        /* value of the first root at the end (its side's view) */
	bool root_known;
	/* The selector's snapshot (ThinkOptions.snapshot): restored at the start
	 * (in snap_ms), else why not (snap_note, empty when there was none);
	 * saved at the end (in save_ms), else why not (save_note). */
	bool snap_restored, snap_saved;
	double snap_ms, save_ms;
	char snap_note[SNAP_ERRLEN], save_note[SNAP_ERRLEN];
	/* Re-analysis: positions thought again whose old analysis the new one
	 * replaced (the others kept the deeper one they had), and positions of
	 * the list left (not handed out, stopped, or failed). */
	uint64_t again_replaced, again_left;
} ThinkStats;

/*
 * Stores one analysis (the think loop's and the cluster coordinator's storage):
 * the book's record of key read through w (a new one for pos when absent)
 * with the engine's value, depth and nodes set on every line of res, the
 * record flagged thought, written through w, and sel (may be NULL) told
 * (sel_add_result, which also ends the key's lease). rec is scratch space. 0, or THINK_EBOOK
 * with a message in err (THINK_ERRLEN bytes, may be NULL); the writer's
 * transaction must then be discarded.
 */
JOSEKI_MUST_USE int think_store(BookWriter *w, Selector *sel, BookRecord *rec, Key key,
                                const Position *pos, const SearchResult *res,
                                const SearchBudget *budget, char *err);

/*
 * Stores one re-analysis (think --reanalyse, and the coordinator's): the
 * answer res for pos merged into the book's record of key by the record merge
 * rule (bookdb/merge.h: the deeper analysis wins whole, a tie to the new one;
 * statistics, marks and the other moves stay), written when it changed, and
 * the position marked done for campaign (bookgen/reanalyse.h), through w, sel
 * (may be NULL) told. A new analysis that loses leaves the record as it was.
 * rec and scratch are scratch space; *replaced says whether the new analysis
 * won. 0, or THINK_EBOOK with err (THINK_ERRLEN,
 * may be NULL); the writer's transaction must then be discarded.
 */
JOSEKI_MUST_USE int think_store_again(BookWriter *w, Selector *sel, BookRecord *rec,
                                      BookRecord *scratch, Key key, const Position *pos,
                                      const SearchResult *res, const SearchBudget *budget,
                                      uint64_t campaign, bool *replaced, char *err);

/* Runs the loop on db (opened read-write). The positions queued in the book
 * (joseki extend, roots_queue_load) not thought yet come first, in queue
 * order, then opt->first, then the selector. err: THINK_ERRLEN bytes, may be
 * NULL. */
JOSEKI_MUST_USE int think_run(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err);

/* think_run over opt's paths alone (paths_only; no snapshot, neither the
 * book's queue nor opt->first), as `think --opponent` and `cycle --probe` do
 * before their walks: the way to the roots analysed. */
JOSEKI_MUST_USE int think_paths(ThinkStats *out, BookDB *db, const ThinkOptions *opt, char *err);

#endif
