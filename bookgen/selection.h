/*
 * bookgen/selection.h — a run's selection (the selector over the book and
 * its plan), made new or restored from the selector's snapshot, and saved
 * for the next run: what think and the coordinator share.
 *
 * A run that restores its selection from the snapshot goes on where the last
 * run stopped (the same leaves, docs/bookgen.md "Restarting"); the snapshot
 * must be of the book as it is (its stamp), of the same policy and roots.
 */
#ifndef BOOKGEN_SELECTION_H
#define BOOKGEN_SELECTION_H

#include <stdbool.h>

#include "bookdb/bookdb.h"
#include "bookdb/minimax_hook.h"
#include "bookgen/plan.h"
#include "bookgen/selector.h"
#include "bookgen/snapshot.h"

typedef struct {
	SelOptions sel;
	const BookMinimaxHook *keys; /* the key filter's source (NULL: a pass over the book) */
	bool preload;                /* sel_load instead of lazy mode (then nothing to save) */
	const PlanOptions *plan;
	const char *const *roots; /* position specs; NULL/0: the start position */
	const double *root_weights;
	int nroots;
	/* The way to the roots, thought first (plan_set_paths); only: nothing
	 * after them. */
	const char *const *paths;
	size_t npaths;
	bool paths_only;
	/* The selector's budget (sel_set_memory; 0: none given), which the
	 * caller then keeps with sel_trim. */
	uint64_t memory;
	/* The key filter's thread started by the caller (sel_defer_filter). */
	bool defer_filter;
} SelectionSpec;

/*
 * A new selector over db and its plan: from snap when given (the graph and
 * the plan as they were written: the caller has checked the stamp), else
 * attached lazily (or loaded, spec->preload). 0, or a negative SEL_* code
 * with err (SNAP_ERRLEN bytes): SEL_EINVAL for roots or plan options that do
 * not parse, SEL_ESNAP for a snapshot of another run. On failure nothing is
 * left allocated.
 */
JOSEKI_MUST_USE int selection_open(Selector **sel, Plan **plan, BookDB *db,
                                   const SelectionSpec *spec, SnapReader *snap, char *err);

/*
 * Writes sel and plan (between calls) to the snapshot at path, stamped st
 * (the book as committed); flags as snap_create's (bookgen/snapshot.h). 0, or
 * a negative SEL_* code with err.
 */
JOSEKI_MUST_USE int selection_save(const char *path, const BookStamp *st, Selector *sel,
                                   const Plan *plan, unsigned flags, char *err);

/*
 * selection_open from the snapshot at path when it is of the book as it is
 * now, or of an earlier state the change log brings it up to (sel_catch_up;
 * path NULL: none), else new. *restored says which; when a snapshot was
 * there but not used, note (SNAP_ERRLEN bytes) says why; when it was brought
 * up to date, what that took; else it is empty. The file is removed either way: the run about to
 * write would make it stale. Nothing is left leased (a coordinator's snapshot holds its workers'
 * leases). Errors as selection_open's, from the new selection.
 */
JOSEKI_MUST_USE int selection_resume(Selector **sel, Plan **plan, BookDB *db,
                                     const SelectionSpec *spec, const char *path, bool *restored,
                                     char *note, char *err);

/*
 * Sets (on) or drops the book's hold on its change log for the snapshot
 * (bookdb_changes_hold): set just before a snapshot's stamp is taken, so
 * that a minimax run before the next start does not delete the writes the
 * start must catch up with (sel_catch_up); dropped when the snapshot is read
 * (or refused), since the run that starts then goes on from the book as it
 * is. Its own write transaction: none may be open in this thread. 0 or a
 * negative BOOKDB_* code.
 */
JOSEKI_MUST_USE int selection_hold(BookDB *db, bool on);

/* The positions the book holds thought: its kept counts (bookdb_counts) as
 * a new read transaction sees them, plus the caller's results stored but not
 * yet committed (uncommitted); for a book without kept counts, the thought
 * nodes sel holds (fewer once it is trimmed: sel_trim). */
uint64_t selection_book_thought(BookDB *db, const Selector *sel, uint64_t uncommitted);

/* Releases every leased position of sel (0 or SEL_ENOMEM). */
JOSEKI_MUST_USE int selection_release_all(Selector *sel);

#endif
