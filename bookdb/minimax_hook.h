/*
 * bookdb/minimax_hook.h — how the writers above the store ask for the book's
 * values to be backed up, without knowing who does it.
 *
 * The cycle (play/) and the cluster coordinator (cluster/) must run minimax
 * between their steps, and a merge (bookdb/merge.c) after it, but minimax/ is
 * their sibling's sibling, or above them: modules of one floor never include
 * each other, and nothing includes upward (docs/STYLE.md, "Layers"). So they
 * take a BookMinimaxHook, defined here on the floor they share, and the front
 * end that wires the modules together (tools/) passes minimax's own
 * (`bookmm_hook()` in minimax/bookmm.h, or its own call of bookmm_run when it
 * wants the run's figures, as joseki merge does). Tests may pass a recording
 * hook.
 */
#ifndef JOSEKI_BOOKDB_MINIMAX_HOOK_H
#define JOSEKI_BOOKDB_MINIMAX_HOOK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

/* A run whose record writes are still to be made (prepare, apply). */
typedef struct BookMinimaxPlan BookMinimaxPlan;

typedef struct {
	/* Backs the values up over db (opened read-write, no transaction of the
	 * caller's open). Returns 0, or < 0 with a message in err (errlen bytes). */
	int (*run)(void *ctx, BookDB *db, char *err, size_t errlen);
	void *ctx;
	/*
	 * Optional (NULL: never): whether db's values are behind its records
	 * although the caller wrote nothing (a run after its writes stopped
	 * before its end, or writes of another since the last run), so that a
	 * caller that runs the hook only after writing of its own (a merge run
	 * again to complete it) runs it then too.
	 */
	bool (*pending)(void *ctx, BookDB *db);
	/*
	 * Optional (NULL: not offered): the key of every position db holds as txn
	 * sees it (the keys of positions deleted since may come too), from what
	 * minimax keeps between runs, much quicker than a pass over the book:
	 * add(actx, keys, n) is called with them in batches. Returns 0, or < 0
	 * when it cannot vouch for every key (nothing kept, kept for another
	 * state of the book, writes since that the change log does not hold);
	 * some keys may have been passed before that.
	 */
	int (*keys)(void *ctx, BookDB *db, BookTxn *txn,
	            void (*add)(void *actx, const Key *keys, size_t n), void *actx);
	/*
	 * Optional (all three or none): run in two halves for a caller that makes
	 * the book's writes itself (the coordinator, whose service must not wait
	 * for LMDB's write lock behind minimax). prepare analyses with no write
	 * transaction of its own (minimax's own files only, and one small write
	 * of minimax's state when it folds the kept graph's journal; a run that
	 * must do the whole book is done whole, as run does) and leaves the records to
	 * write in *plan (NULL: nothing to write); 0 or < 0 with a message.
	 * stop (may be NULL): when it turns true, prepare ends early (a
	 * whole-book run too) and returns BOOK_MINIMAX_STOPPED, nothing to write;
	 * the next run mends what it left, as after a kill.
	 * apply writes up to max of them in the caller's write transaction txn,
	 * the state with the last: 1 when done (plan_free it then), 0 when more
	 * remain, < 0 with a message (txn is then not to be committed). A plan
	 * dropped half applied is mended by the next run.
	 */
	int (*prepare)(void *ctx, BookDB *db, const atomic_bool *stop, BookMinimaxPlan **plan,
	               char *err, size_t errlen);
	int (*apply)(BookMinimaxPlan *plan, BookTxn *txn, size_t max, char *err, size_t errlen);
	void (*plan_free)(BookMinimaxPlan *plan);
} BookMinimaxHook;

/* prepare's answer when its stop flag ended it. */
#define BOOK_MINIMAX_STOPPED (-2)

/* Whether the hook is set (a NULL run means "no minimax"). */
static inline bool book_minimax_hook_set(const BookMinimaxHook *h)
{
	return h && h->run;
}

/* The hook's pending (see above): false when it does not offer it. */
static inline bool book_minimax_hook_pending(const BookMinimaxHook *h, BookDB *db)
{
	return h && h->pending && h->pending(h->ctx, db);
}

/* The hook's keys (see above): < 0 when it does not offer them. */
JOSEKI_MUST_USE static inline int
book_minimax_hook_keys(const BookMinimaxHook *h, BookDB *db, BookTxn *txn,
                       void (*add)(void *actx, const Key *keys, size_t n), void *actx)
{
	return h && h->keys ? h->keys(h->ctx, db, txn, add, actx) : -1;
}

/* Runs the hook: 0 when it is not set. */
JOSEKI_MUST_USE static inline int book_minimax_hook_run(const BookMinimaxHook *h, BookDB *db,
                                                        char *err, size_t errlen)
{
	return book_minimax_hook_set(h) ? h->run(h->ctx, db, err, errlen) : 0;
}

#endif
