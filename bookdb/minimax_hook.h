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

#include <stdbool.h>
#include <stddef.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

typedef struct {
	/* Backs the values up over db (opened read-write, no transaction of the
	 * caller's open). Returns 0, or < 0 with a message in err (errlen bytes). */
	int (*run)(void *ctx, BookDB *db, char *err, size_t errlen);
	void *ctx;
} BookMinimaxHook;

/* Whether the hook is set (a NULL run means "no minimax"). */
static inline bool book_minimax_hook_set(const BookMinimaxHook *h)
{
	return h && h->run;
}

/* Runs the hook: 0 when it is not set. */
JOSEKI_MUST_USE static inline int book_minimax_hook_run(const BookMinimaxHook *h, BookDB *db,
                                                        char *err, size_t errlen)
{
	return book_minimax_hook_set(h) ? h->run(h->ctx, db, err, errlen) : 0;
}

#endif
