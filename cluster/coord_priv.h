/*
 * cluster/coord_priv.h — what the coordinator's two files share: the lease
 * logic (coord.c) and the work database it is kept in (coord_store.c).
 * Not for use outside cluster/coord*.c.
 */
#ifndef BOOKGEN_COORD_PRIV_H
#define BOOKGEN_COORD_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster/coord.h"
#include "bookgen/selector.h"
#include "shogi/keymap.h"
#include "shogi/notation.h"

enum { POS_PENDING = 'P', POS_DONE = 'D', POS_RETURNED = 'R' };
enum { WHERE_QUEUED = 1, WHERE_LEASED, WHERE_ASIDE };

typedef struct {
	Key key;
	uint8_t state;
	char sfen[SFEN_MAX];
} LPos;

typedef struct {
	Key key; /* the lease map's key: hi the lease id, lo 0 */
	int64_t expires_ms;
	char token[COORD_NAME_MAX + 1];
	char worker[COORD_NAME_MAX + 1];
	int n, pending;
	LPos *pos;
} Lease;

typedef struct {
	Key key; /* the key map's key */
	uint8_t where, tries;
	uint64_t lease;                /* WHERE_LEASED: the lease holding it */
	char last[COORD_NAME_MAX + 1]; /* the worker whose try failed last ("" none) */
	char sfen[SFEN_MAX];
} KeyState;

struct Coord {
	BookDB *db;
	CoordOptions opt;
	Selector *sel;
	BookWriter *w;
	BookRecord *rec;
	Position *pos;
	SearchResult *res;
	SelLeaf *leaf;
	Plan *plan;
	Lease *leases; /* nleases of them, indexed by lease_map */
	size_t nleases, capleases;
	KeyState *keys; /* nkeys of them, indexed by key_map */
	size_t nkeys, capkeys;
	KeyMap lease_map, key_map;
	Key *queue; /* returned positions, oldest first (stale entries skipped) */
	size_t nqueue, capqueue;
	uint64_t queued; /* KeyStates WHERE_QUEUED */
	uint64_t next_id;
	bool broken;
	uint8_t *buf; /* serialisation scratch */
	size_t capbuf;
	CoordWorkerSeen *seen;
	size_t nseen, capseen;
	uint64_t results, failed, mated, minimax_runs, since_minimax;
	int64_t last_minimax_ms;
	double select_ms, store_ms, commit_ms, minimax_ms, minimax_last_ms;
	int64_t sec_stamp[60];
	uint32_t sec_count[60];
	/* The periodic minimax, on a thread of its own (coord_tick starts it,
	 * collects it when done): it reads its own snapshot and writes in its
	 * own transactions, which LMDB puts between the service's commits. */
	pthread_t mm_thread;
	bool mm_running;
	atomic_bool mm_done;
	int mm_rc;
	double mm_t0;
	char mm_err[256];
	/* With a hook that offers prepare and apply, the thread only analyses:
	 * its records are written by the service, a share at each tick, in its
	 * own transactions (so the service never waits for LMDB's write lock
	 * behind minimax). mm_out: the thread's plan; mm_plan: being applied. */
	BookMinimaxPlan *mm_out, *mm_plan;
	double apply_ms; /* the service's time applying plans */
	/* The history (coord_history.c): the step being counted (0: none yet),
	 * since when, and the counters at its start. */
	int64_t hist_bucket, hist_since_ms;
	uint64_t hist_results, hist_failed;
};

/* Marks c broken (no later commit) and says what failed in err; returns
 * COORD_EBOOK. */
int co_broken(Coord *c, char *err, const char *what, int rc);

/* coord_store.c: the work database, written through c->w (committed with the
 * results by coord_commit). Each returns 0 or co_broken's code. */
int co_lease_put(Coord *c, const Lease *l, char *err);
int co_lease_del_rec(Coord *c, uint64_t id, char *err);
int co_next_id_put(Coord *c, char *err);
/* The tries record of ks (deleted when it has no tries). */
int co_keyrec_put(Coord *c, const KeyState *ks, char *err);
/* At open: the leases, the counter and the tries records read back. */
int co_restore(Coord *c, char *err);
/* At open: the roots queued in the book (joseki extend) go to the front of
 * the queue, in queue order, so they are handed out before anything the
 * selector picks; those already thought, leased or known are skipped. The
 * selector holds them as leased while they wait. */
int co_queue_extended(Coord *c, char *err);

/* coord_history.c: at the end of each history step, a point of the state
 * into the book's work database (through c->w: committed with the next
 * commit). 0 or co_broken's code. */
int co_history_tick(Coord *c, int64_t now_ms, char *err);

/* coord.c: the in-memory state. */
KeyState *co_key_get(Coord *c, Key k);
/* A new KeyState for k (not held), or NULL when memory runs out. KeyState
 * pointers last until the next co_key_new or key_forget. */
KeyState *co_key_new(Coord *c, Key k);
int co_queue_push(Coord *c, KeyState *ks);
/* Keeps the lease l, built outside the array (its id not held): the kept
 * copy, or NULL when memory runs out (l is then still the caller's). */
Lease *co_lease_keep(Coord *c, const Lease *l);

#endif
