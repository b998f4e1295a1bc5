/*
 * tests/bookgen/test_coord.c — the cluster coordinator's lease logic
 * (cluster/coord.h) in-process on a real LMDB book: leases, submissions
 * (idempotent, late, partial, refused), expiry to a different worker, abort,
 * three failed tries setting a position aside, a restart keeping leases, and
 * many leases coming and going in a random order.
 * The clock is passed in, so expiry needs no waiting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "cluster/coord.h"
#include "cluster/coord_history.h"
#include "bookgen/selector_priv.h"
#include "cluster/coord_priv.h" /* co_queue_lines with a budget of its own */
#include "bookgen/roots.h"
#include "bookgen/snapshot.h"
#include "minimax/bookmm.h"
#include "shogi/clock.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define T0 1700000000000LL /* unix ms: the tests' clock starts here */

static const CoordWorker A = {.token = "ta", .name = "alpha", .engine = "fake", .nps = 10};
static const CoordWorker B = {.token = "tb", .name = "beta", .engine = "fake", .nps = 20};
static const CoordWorker C = {.token = "tc", .name = "gamma", .engine = "fake", .nps = 30};

/* A coordinator over the book in dir with options o (NULL: the tests' usual). */
static Coord *open_coord_with(BookDB **db, const char *dir, const CoordOptions *o)
{
	char err[COORD_ERRLEN];
	assert_int_equal(bookdb_open(db, dir, NULL, err), 0);
	/* Every search whole, in the acquire: a 20 ms slice ran out before the
	 * first leaf when the machine was loaded, and an acquire on the empty book
	 * came back empty (the tests of slices set their own). */
	CoordOptions usual = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                      .multipv = 3,
	                      .lease_seconds = 60,
	                      .plan = {.mode = PLAN_PV},
	                      .select_slice_ms = -1};
	Coord *c;
	int rc = coord_open(&c, *db, o ? o : &usual, err);
	if (rc < 0) fail_msg("coord_open: %s", err);
	return c;
}

static Coord *open_coord(BookDB **db, const char *dir)
{
	return open_coord_with(db, dir, NULL);
}

static void close_coord(Coord *c, BookDB *db)
{
	coord_free(c);
	bookdb_free(db);
}

/* A result for p: its first k legal moves, scores 10, 0, -10, ... */
static void answer(CoordResult *r, const CoordPos *p, int k)
{
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	assert_non_null(pos);
	assert_int_equal(sfen_parse(pos, p->sfen, NULL, NULL), 0);
	int n = movegen_legal(pos, mv);
	memset(r, 0, sizeof *r);
	r->key = p->key;
	r->nlines = n < k ? n : k;
	for (int i = 0; i < r->nlines; i++) {
		char usi[USI_MOVE_MAX];
		usi_move_write(mv[i], usi);
		snprintf(r->lines[i].move, sizeof r->lines[i].move, "%s", usi);
		r->lines[i].score = 10 - 10 * i;
		r->lines[i].depth = 5;
		r->lines[i].nodes = 1000;
	}
	free(pos);
}

static bool thought(BookDB *db, Key k)
{
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	int rc = bookdb_get(rec, t, k);
	bool th = rc == 0 && (rec->flags & BOOKDB_REC_THOUGHT);
	bookdb_txn_abort(t);
	free(rec);
	return th;
}

static int acquire(Coord *c, CoordLease *l, const CoordWorker *w, int max, int64_t now)
{
	char err[COORD_ERRLEN];
	int n = coord_acquire(c, l, w, max, now, err);
	if (n < 0) fail_msg("acquire: %s", err);
	char cerr[COORD_ERRLEN];
	assert_int_equal(coord_commit(c, cerr), 0);
	return n;
}

static bool in_lease(const CoordLease *l, Key k)
{
	for (int i = 0; i < l->n; i++)
		if (key_equal(l->pos[i].key, k)) return true;
	return false;
}

/* Grows the book a little so that several leaves are selectable. */
static void seed_book(Coord *c, int rounds)
{
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	char err[COORD_ERRLEN];
	for (int i = 0; i < rounds; i++) {
		int n = acquire(c, l, &A, 1, T0);
		assert_int_equal(n, 1);
		answer(r, &l->pos[0], 4);
		assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	}
	assert_int_equal(coord_commit(c, err), 0);
	free(l);
	free(r);
}

static void test_coord__lease_submit_idempotent_and_stored(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	/* An empty book: the first lease is the start position. */
	assert_int_equal(acquire(c, l, &A, 8, T0), 1);
	Position *pos = malloc(sizeof *pos);
	pos_set_startpos(pos);
	assert_true(key_equal(l->pos[0].key, pos_key(pos)));
	assert_int_equal(l->expires_ms, T0 + 60000);
	/* While it is leased nothing else is selectable: no work. */
	CoordLease *l2 = malloc(sizeof *l2);
	assert_int_equal(acquire(c, l2, &B, 8, T0), 0);
	answer(r, &l->pos[0], 4);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, l->pos[0].key));
	/* The same submission again changes nothing. */
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.results, 1);
	assert_int_equal(st.leases_live, 0);
	/* The rate: over the last 60 whole seconds, or over those since the
	 * first result when fewer (in its own second, its count), the second
	 * under way left out. */
	assert_true(st.results_per_s == 1.0);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, T0 + 3000), 0);
	assert_true(st.results_per_s == 1.0 / 3);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, T0 + 60500), 0);
	assert_true(st.results_per_s == 1.0 / 60);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, T0 + 61000), 0);
	assert_true(st.results_per_s == 0.0);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, T0 + 100000), 0);
	assert_true(st.results_per_s == 0.0);
	coord_status_free(&st);
	/* Four children now: two leases never share a position. */
	assert_int_equal(acquire(c, l, &A, 2, T0), 2);
	assert_int_equal(acquire(c, l2, &B, 8, T0), 2);
	for (int i = 0; i < l2->n; i++) assert_false(in_lease(l, l2->pos[i].key));
	/* Part of a lease now, the rest later. */
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.leases_live, 2);
	coord_status_free(&st);
	answer(r, &l->pos[1], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, l->pos[0].key));
	assert_true(thought(db, l->pos[1].key));
	/* A finished lease: resubmitting its results is still accepted and ignored. */
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 0);
	free(pos);
	free(l);
	free(l2);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static void test_coord__refused_submissions_write_nothing(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *l = malloc(sizeof *l), *other = malloc(sizeof *other);
	CoordResult *r = calloc(2, sizeof *r);
	assert_int_equal(acquire(c, l, &A, 2, T0), 2);
	assert_int_equal(acquire(c, other, &B, 1, T0), 1);
	/* A key of another lease: 400, and the good result beside it is not stored. */
	answer(&r[0], &l->pos[0], 2);
	answer(&r[1], &other->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	assert_non_null(strstr(err, "not in lease"));
	/* An illegal move. */
	answer(&r[1], &l->pos[1], 2);
	snprintf(r[1].lines[1].move, sizeof r[1].lines[1].move, "5e5d");
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	assert_non_null(strstr(err, "not a legal move"));
	/* Scores and depths out of range. */
	answer(&r[1], &l->pos[1], 2);
	r[1].lines[0].score = 40000;
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	r[1].lines[0].score = 0;
	r[1].lines[0].mate = true;
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	r[1].lines[0].mate = false;
	r[1].lines[0].depth = 1001;
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	r[1].lines[0].depth = 3;
	/* The same key twice in one body. */
	r[1] = r[0];
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), COORD_EINVAL);
	/* Another token's lease, a lease never issued. */
	answer(&r[1], &l->pos[1], 2);
	assert_int_equal(coord_submit(c, l->id, &B, r, 2, T0, err), COORD_ENOLEASE);
	assert_int_equal(coord_submit(c, 999999, &A, r, 2, T0, err), COORD_ENOLEASE);
	assert_int_equal(coord_abort(c, 999999, &A, T0, err), COORD_ENOLEASE);
	assert_int_equal(coord_acquire(c, other, &A, 0, T0, err), COORD_EINVAL);
	assert_int_equal(coord_acquire(c, other, &A, COORD_MAX_BATCH + 1, T0, err), COORD_EINVAL);
	assert_int_equal(coord_commit(c, err), 0);
	assert_false(thought(db, l->pos[0].key));
	assert_false(thought(db, l->pos[1].key));
	/* The corrected body goes through whole. */
	assert_int_equal(coord_submit(c, l->id, &A, r, 2, T0, err), 2);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, l->pos[0].key));
	assert_true(thought(db, l->pos[1].key));
	free(l);
	free(other);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static void
test_coord__expiry_returns_positions_to_another_worker_and_late_results_count(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1); /* the start position and 4 children */
	CoordLease *la = malloc(sizeof *la), *lb = malloc(sizeof *lb);
	CoordResult *r = malloc(sizeof *r);
	assert_int_equal(acquire(c, la, &A, 4, T0), 4);
	/* Not yet: nothing expires. */
	assert_int_equal(coord_tick(c, T0 + 59000, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 59000), 0);
	assert_int_equal(st.queue, 0);
	assert_int_equal(st.leases_live, 1);
	coord_status_free(&st);
	assert_int_equal(coord_tick(c, T0 + 60000, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 60000), 0);
	assert_int_equal(st.queue, 4);
	assert_int_equal(st.failed, 4);
	assert_int_equal(st.leases_live, 0);
	assert_int_equal(st.leases_expired, 1);
	assert_int_equal(st.leases_returned, 0);
	coord_status_free(&st);
	/* While another worker is there (B heard from), the worker whose lease
	 * expired does not get them back... */
	coord_heartbeat(c, &B, false, T0 + 60500);
	int n = acquire(c, lb, &A, 8, T0 + 61000);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < la->n; k++)
			assert_false(key_equal(lb->pos[i].key, la->pos[k].key));
	/* ... another worker does. */
	assert_int_equal(acquire(c, lb, &B, 4, T0 + 61000), 4);
	for (int i = 0; i < 4; i++) assert_true(in_lease(la, lb->pos[i].key));
	/* A's late result for a position not yet analysed is taken. */
	answer(r, &la->pos[0], 2);
	assert_int_equal(coord_submit(c, la->id, &A, r, 1, T0 + 62000, err), 1);
	/* B's result for the same position is then ignored without error. */
	assert_int_equal(coord_submit(c, lb->id, &B, r, 1, T0 + 62000, err), 0);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, la->pos[0].key));
	assert_int_equal(coord_status(c, &st, T0 + 62000), 0);
	assert_int_equal(st.results, 2); /* seed + the late one */
	assert_int_equal(st.nworkers, 2);
	coord_status_free(&st);
	free(la);
	free(lb);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* Workers live and gone: a worker heard from in the last minute is live, one
 * silent for a minute is gone, and so at once is one that says it leaves (its
 * heartbeat with leaving, as joseki worker stops); a heartbeat keeps a worker
 * busy with long searches live; gone ones are listed for an hour. Before, a
 * stopped worker was counted for its minute, and its leases were live. */
static void test_coord__workers_live_and_gone(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *l = malloc(sizeof *l);
	assert_int_equal(acquire(c, l, &A, 1, T0), 1);
	assert_int_equal(acquire(c, l, &B, 1, T0), 1);
	assert_int_equal(acquire(c, l, &C, 1, T0), 1);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 1000), 0);
	assert_int_equal(st.nworkers, 3);
	assert_int_equal(st.ngone, 0);
	coord_status_free(&st);
	/* B stops: gone at once, said to have stopped. */
	coord_heartbeat(c, &B, true, T0 + 2000);
	/* A thinks long, and says it is alive; C says nothing. */
	coord_heartbeat(c, &A, false, T0 + 40000);
	assert_int_equal(coord_status(c, &st, T0 + 3000), 0);
	assert_int_equal(st.nworkers, 2);
	assert_int_equal(st.ngone, 1);
	assert_string_equal(st.gone[0].name, "beta");
	assert_true(st.gone[0].left);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, T0 + 61000), 0);
	assert_int_equal(st.nworkers, 1);
	assert_string_equal(st.workers[0].name, "alpha");
	assert_int_equal(st.ngone, 2); /* beta stopped, gamma silent */
	for (size_t i = 0; i < st.ngone; i++)
		assert_true(st.gone[i].left == !strcmp(st.gone[i].name, "beta"));
	coord_status_free(&st);
	/* An hour later they are forgotten. */
	coord_heartbeat(c, &A, false, T0 + 3700000);
	assert_int_equal(coord_status(c, &st, T0 + 3700000), 0);
	assert_int_equal(st.nworkers, 1);
	assert_int_equal(st.ngone, 0);
	coord_status_free(&st);
	free(l);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* A lease whose every position was analysed by someone else (a late result
 * of an expired lease) is finished by its worker's submission, even though
 * that submission changes nothing: it must not stay live (counted in the
 * status, kept in the book) until it expires. Found by tests/bookgen/
 * test_cluster.c ("leases 1 live" after every worker had stopped). */
static void test_coord__a_lease_answered_only_by_ignored_results_is_finished(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *la = malloc(sizeof *la), *lb = malloc(sizeof *lb);
	CoordResult *r = malloc(sizeof *r);
	assert_int_equal(acquire(c, la, &A, 1, T0), 1);
	assert_int_equal(coord_tick(c, T0 + 60000, err), 0); /* A's lease expires */
	assert_int_equal(acquire(c, lb, &B, 1, T0 + 61000), 1);
	assert_true(key_equal(lb->pos[0].key, la->pos[0].key));
	answer(r, &la->pos[0], 2);
	assert_int_equal(coord_submit(c, la->id, &A, r, 1, T0 + 62000, err), 1); /* late, taken */
	assert_int_equal(coord_submit(c, lb->id, &B, r, 1, T0 + 62000, err), 0); /* ignored */
	assert_int_equal(coord_commit(c, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 62000), 0);
	assert_int_equal(st.leases_live, 0);
	assert_int_equal(st.queue, 0);
	coord_status_free(&st);
	/* And so after a restart: B's lease is gone from the book too. */
	close_coord(c, db);
	c = open_coord(&db, dir);
	assert_int_equal(coord_status(c, &st, T0 + 62000), 0);
	assert_int_equal(st.leases_live, 0);
	coord_status_free(&st);
	assert_int_equal(coord_tick(c, T0 + 130000, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 130000), 0);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.queue, 0);
	coord_status_free(&st);
	free(la);
	free(lb);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static void test_coord__abort_returns_positions_at_once_without_a_try(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *l = malloc(sizeof *l), *l2 = malloc(sizeof *l2);
	assert_int_equal(acquire(c, l, &A, 3, T0), 3);
	/* An abort's body names the worker only: its engine and speed stay known. */
	const CoordWorker bare = {.token = "ta", .name = "alpha"};
	assert_int_equal(coord_abort(c, l->id, &A, T0, err), 0);
	assert_int_equal(coord_abort(c, l->id, &bare, T0, err), 0); /* again: nothing left */
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.queue, 3);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.nworkers, 1);
	assert_string_equal(st.workers[0].engine, "fake");
	assert_int_equal(st.workers[0].nps, 10);
	coord_status_free(&st);
	/* Not a failure: the same worker may take them again, first. */
	assert_int_equal(acquire(c, l2, &A, 3, T0), 3);
	for (int i = 0; i < 3; i++) assert_true(in_lease(l, l2->pos[i].key));
	free(l);
	free(l2);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* A lone worker, killed and started again under its name, gets back the
 * positions of its expired lease: with nobody else to take them they stayed
 * queued for ever (a new user's one-machine cluster, its queue stuck at 4).
 * Its tries still count: the third expiry sets them aside. */
static void test_coord__a_lone_worker_gets_its_expired_positions_back(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *la = malloc(sizeof *la), *lb = malloc(sizeof *lb);
	assert_int_equal(acquire(c, la, &A, 4, T0), 4);
	int64_t t = T0;
	for (int round = 1; round <= 2; round++) {
		t += 60000;
		assert_int_equal(coord_tick(c, t, err), 0); /* A's lease expires */
		assert_int_equal(acquire(c, lb, &A, 4, t + 1000), 4);
		for (int i = 0; i < 4; i++) assert_true(in_lease(la, lb->pos[i].key));
		t += 1000;
	}
	t += 60000;
	assert_int_equal(coord_tick(c, t, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, t), 0);
	assert_int_equal(st.naside, 4);
	assert_int_equal(st.queue, 0);
	coord_status_free(&st);
	free(la);
	free(lb);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static void test_coord__three_failed_tries_set_a_position_aside(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = calloc(1, sizeof *r);
	assert_int_equal(acquire(c, l, &A, 1, T0), 1);
	Key bad = l->pos[0].key;
	r->key = bad;
	r->failed = true;
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 0);
	/* The next worker to get it (first in the queue) fails too; then one expires. */
	assert_int_equal(acquire(c, l, &B, 1, T0), 1);
	assert_true(key_equal(l->pos[0].key, bad));
	assert_int_equal(coord_submit(c, l->id, &B, r, 1, T0, err), 0);
	assert_int_equal(acquire(c, l, &C, 1, T0), 1);
	assert_true(key_equal(l->pos[0].key, bad));
	assert_int_equal(coord_tick(c, T0 + 61000, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 61000), 0);
	assert_int_equal(st.naside, 1);
	assert_true(key_equal(st.aside[0].key, bad));
	assert_int_equal(st.aside[0].tries, 3);
	assert_int_equal(st.queue, 0);
	coord_status_free(&st);
	/* Nobody gets it again, and the rest of the book goes on. */
	int n = acquire(c, l, &A, 8, T0 + 62000);
	assert_int_equal(n, 3);
	assert_false(in_lease(l, bad));
	/* Set aside survives a restart. */
	close_coord(c, db);
	c = open_coord(&db, dir);
	assert_int_equal(coord_status(c, &st, T0 + 63000), 0);
	assert_int_equal(st.naside, 1);
	coord_status_free(&st);
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static void test_coord__a_restart_keeps_leases_tries_and_the_counter(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 1);
	CoordLease *la = malloc(sizeof *la), *lb = malloc(sizeof *lb), *l = malloc(sizeof *l);
	CoordResult *r = calloc(1, sizeof *r);
	assert_int_equal(acquire(c, la, &A, 2, T0), 2);
	assert_int_equal(acquire(c, lb, &B, 1, T0), 1);
	r->key = lb->pos[0].key;
	r->failed = true;
	assert_int_equal(coord_submit(c, lb->id, &B, r, 1, T0, err), 0);
	assert_int_equal(coord_commit(c, err), 0);
	close_coord(c, db);

	c = open_coord(&db, dir);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.leases_live, 1);
	assert_int_equal(st.queue, 1); /* the failed one, waiting */
	coord_status_free(&st);
	/* A's leased positions are not handed out; B's failed one is not given to B
	 * while another worker (A, heard from again) can take it. */
	coord_heartbeat(c, &A, false, T0);
	int n = acquire(c, l, &B, 8, T0);
	for (int i = 0; i < n; i++) {
		assert_false(in_lease(la, l->pos[i].key));
		assert_false(key_equal(l->pos[i].key, lb->pos[0].key));
	}
	assert_true(l->id > lb->id); /* ids are never reused */
	/* A's lease still takes its results. */
	answer(r, &la->pos[1], 2);
	assert_int_equal(coord_submit(c, la->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, la->pos[1].key));
	/* And still expires at its time: one position left pending. */
	assert_int_equal(coord_tick(c, T0 + 60000, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 60000), 0);
	assert_true(st.queue >= 2);
	coord_status_free(&st);
	free(la);
	free(lb);
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* Roots queued in the book (joseki extend) are handed out first, in queue
 * order, to one worker only; once thought they are not handed out again, and
 * one still leased stays with its lease across a restart. */
static void test_coord__extended_roots_come_first_and_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	static const char *SPECS[] = {"startpos moves 7g7f 3c3d", "startpos moves 2g2f"};
	Key want[2];
	BookDB *db;
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(position_parse(pos, SPECS[i], NULL), 0);
		want[i] = pos_key(pos);
		assert_int_equal(roots_queue_add(t, pos, NULL), 0);
	}
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	Coord *c = open_coord(&db, dir);
	CoordLease *l = malloc(sizeof *l), *l2 = malloc(sizeof *l2);
	CoordResult *r = malloc(sizeof *r);
	assert_int_equal(acquire(c, l, &A, 2, T0), 2);
	assert_true(key_equal(l->pos[0].key, want[0]));
	assert_true(key_equal(l->pos[1].key, want[1]));
	/* The next worker gets the selector's leaf (the start position), not them. */
	assert_int_equal(acquire(c, l2, &B, 8, T0), 1);
	assert_false(in_lease(l2, want[0]) || in_lease(l2, want[1]));
	answer(r, &l->pos[0], 3);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	close_coord(c, db);
	/* After a restart: the thought root is not handed out again, the leased one
	 * stays with A's lease until it expires, then goes to another worker. */
	c = open_coord(&db, dir);
	assert_true(thought(db, want[0]));
	assert_int_equal(acquire(c, l2, &C, 8, T0 + 1000), 0);
	assert_int_equal(coord_tick(c, T0 + 61000, err), 0);
	int n = acquire(c, l2, &C, 8, T0 + 61000);
	assert_true(n >= 1);
	assert_true(in_lease(l2, want[1]));
	assert_false(in_lease(l2, want[0]));
	free(pos);
	free(l);
	free(l2);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* Whether lease id is still kept: another token's submission is refused as
 * not this token's (a lease forgotten or finished would not be found). */
static bool kept(Coord *c, uint64_t id)
{
	char err[COORD_ERRLEN];
	CoordResult r = {0};
	int rc = coord_submit(c, id, &C, &r, 0, T0, err);
	return rc == COORD_ENOLEASE && strstr(err, "not this token's");
}

/*
 * Many leases and positions coming and going in a random order (the
 * coordinator's key maps delete from the middle and move entries): the
 * leases and positions not finished are all still found, through finished,
 * aborted and forgotten ones on every side of them.
 */
static void test_coord__many_leases_finish_abort_and_expire_in_any_order(void **state)
{
	(void)state;
	enum { L = 24, THIRD = L / 3 };
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	uint64_t st_rng = ts_seed(__func__);
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	seed_book(c, 20);
	CoordLease *l = malloc(L * sizeof *l), *got = malloc(sizeof *got);
	CoordResult *r = calloc(2, sizeof *r);
	assert_non_null(l);
	assert_non_null(got);
	assert_non_null(r);
	for (int i = 0; i < L; i++) assert_int_equal(acquire(c, &l[i], &A, 2, T0), 2);
	for (int i = 0; i < L; i++)
		for (int j = 0; j < i; j++)
			for (int p = 0; p < 2; p++) assert_false(in_lease(&l[j], l[i].pos[p].key));
	int order[L];
	for (int i = 0; i < L; i++) order[i] = i;
	for (int i = L - 1; i > 0; i--) {
		int j = (int)(ts_rand(&st_rng) % (uint64_t)(i + 1)), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	/* A third finished (forgotten at once), a third aborted (kept, pending
	 * none), a third left live; every lease checked after each change. */
	for (int k = 0; k < 2 * THIRD; k++) {
		CoordLease *x = &l[order[k]];
		if (k < THIRD) {
			answer(&r[0], &x->pos[0], 2);
			answer(&r[1], &x->pos[1], 2);
			assert_int_equal(coord_submit(c, x->id, &A, r, 2, T0, err), 2);
		} else {
			assert_int_equal(coord_abort(c, x->id, &A, T0, err), 0);
		}
		for (int m = 0; m < L; m++)
			assert_int_equal(kept(c, l[order[m]].id), m > k || m >= THIRD);
	}
	assert_int_equal(coord_commit(c, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.leases_live, L - 2 * THIRD);
	/* Aborted: given back, not expired (a new user read them as expiries). */
	assert_int_equal(st.leases_expired, 0);
	assert_int_equal(st.leases_returned, THIRD);
	assert_int_equal(st.queue, 2 * THIRD);
	coord_status_free(&st);
	/* The live leases expire (their positions queued after a failed try), the
	 * aborted ones are forgotten, in one pass over the leases. */
	int64_t later = T0 + COORD_FORGET_MS + 60000;
	assert_int_equal(coord_tick(c, later, err), 0);
	for (int m = 0; m < L; m++) assert_int_equal(kept(c, l[order[m]].id), m >= 2 * THIRD);
	assert_int_equal(coord_status(c, &st, later), 0);
	assert_int_equal(st.leases_live, 0);
	assert_int_equal(st.leases_expired, L - 2 * THIRD);
	assert_int_equal(st.leases_returned, 0);
	assert_int_equal(st.queue, 2 * (L - THIRD));
	coord_status_free(&st);
	/* Every position not analysed is handed out again, once, first. */
	assert_int_equal(acquire(c, got, &B, 2 * (L - THIRD), later), 2 * (L - THIRD));
	for (int m = THIRD; m < L; m++)
		for (int p = 0; p < 2; p++) assert_true(in_lease(got, l[order[m]].pos[p].key));
	assert_int_equal(coord_tick(c, later + COORD_FORGET_MS, err), 0);
	for (int m = 0; m < L; m++) assert_false(kept(c, l[order[m]].id));
	assert_true(kept(c, got->id)); /* expired now, forgotten a day later */
	free(l);
	free(got);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* The history (cluster/coord_history.h): a point at each minute's end with
 * the minute's results and the book's state, taken by coord_tick; the points
 * stay in the book across a restart, which starts counting afresh. */
static void test_coord__history_points_follow_the_clock_across_a_restart(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	const int64_t M = (T0 / 60000 + 1) * 60000; /* the first minute's end after T0 */
	assert_int_equal(coord_tick(c, T0, err), 0);
	seed_book(c, 3);
	assert_int_equal(coord_tick(c, M - 1, err), 0); /* not yet */
	assert_int_equal(coord_tick(c, M, err), 0);
	seed_book(c, 2);
	assert_int_equal(coord_tick(c, M + 60000, err), 0);
	close_coord(c, db);
	c = open_coord(&db, dir);
	assert_int_equal(coord_tick(c, M + 90000, err), 0);
	seed_book(c, 1);
	assert_int_equal(coord_tick(c, M + 120000, err), 0);
	close_coord(c, db);

	char berr[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, dir, &ro, berr), 0);
	BookTxn *t;
	CoordHistPoint *p;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(coord_history_read(&p, t, 0, NULL), 3);
	bookdb_txn_abort(t);
	const int64_t want_t[] = {M / 1000, M / 1000 + 60, M / 1000 + 120};
	const uint64_t want_results[] = {3, 2, 1}, want_span[] = {(M - T0) / 1000, 60, 30};
	Position *pos = malloc(sizeof *pos);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(p[i].t, want_t[i]);
		assert_int_equal(p[i].results, want_results[i]);
		assert_int_equal(p[i].span_s, want_span[i]);
		assert_int_equal(p[i].thought, i == 0 ? 3 : i == 1 ? 5 : 6);
		assert_true(p[i].positions >= p[i].thought);
		assert_int_equal(p[i].root_value, 10); /* the best engine line's score */
		/* The book's line from the start position, legal move by move. */
		char line[sizeof p[i].pv], *save = NULL, spec[200] = "startpos moves";
		snprintf(line, sizeof line, "%s", p[i].pv);
		int moves = 0;
		for (char *m = strtok_r(line, " ", &save); m; m = strtok_r(NULL, " ", &save)) {
			strncat(spec, " ", sizeof spec - strlen(spec) - 1);
			strncat(spec, m, sizeof spec - strlen(spec) - 1);
			moves++;
		}
		assert_true(moves >= 1);
		assert_int_equal(position_parse(pos, spec, NULL), 0);
	}
	free(pos);
	free(p);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A position with no legal move is never leased: the coordinator values it
 * itself (thought, no moves: minimax's mated leaf) and the selector goes on. */
static void test_coord__a_mated_position_is_valued_not_leased(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	BookDB *db;
	/* White's king on 5a, Black's gold on 5b guarded by the pawn on 5c: mate. */
	static const char *const roots[] = {"sfen 4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1", "startpos"};
	/* Whole searches in the acquire (no selection thread, no slice of
	 * wall-clock time): a slice cut short on a loaded machine could end
	 * before the search had met the mated root. */
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 1,
	                  .lease_seconds = 60,
	                  .plan = {.mode = PLAN_PV},
	                  .roots = roots,
	                  .nroots = 2,
	                  .select_slice_ms = -1};
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	Position *pos = malloc(sizeof *pos);
	assert_int_equal(position_parse(pos, roots[0], NULL), 0);
	Key mated = pos_key(pos);
	/* Only the start position is handed out. */
	assert_int_equal(acquire(c, l, &A, 8, T0), 1);
	assert_false(key_equal(l->pos[0].key, mated));
	assert_true(thought(db, mated));
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	assert_int_equal(st.mated, 1);
	coord_status_free(&st);
	/* Valued once: never selected again. */
	assert_int_equal(acquire(c, l, &B, 8, T0), 0);
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_get(rec, t, mated), 0);
	assert_int_equal(rec->nmoves, 0);
	bookdb_txn_abort(t);
	free(rec);
	free(pos);
	free(l);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* An illegal move is refused (400) also for a position analysed meanwhile and
 * for a finished lease, where the rest of such a result is ignored. */
static void test_coord__illegal_moves_are_refused_for_analysed_positions_too(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	Coord *c = open_coord(&db, dir);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_int_equal(acquire(c, l, &A, 1, T0), 1);
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	/* The lease is finished (deleted); the position analysed. */
	snprintf(r->lines[1].move, sizeof r->lines[1].move, "5e5d");
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), COORD_EINVAL);
	assert_non_null(strstr(err, "not a legal move"));
	/* Legal moves again: accepted and ignored. */
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 0);
	/* A lease still live whose position was analysed through another: the
	 * same check against the lease's own SFEN. */
	CoordLease *la = malloc(sizeof *la), *lb = malloc(sizeof *lb);
	assert_int_equal(acquire(c, la, &A, 2, T0), 2);
	assert_int_equal(coord_abort(c, la->id, &A, T0, err), 0);
	assert_int_equal(acquire(c, lb, &B, 2, T0), 2);
	answer(r, &lb->pos[0], 1);
	assert_int_equal(coord_submit(c, lb->id, &B, r, 1, T0, err), 1);
	int k = key_equal(la->pos[0].key, lb->pos[0].key) ? 0 : 1;
	answer(r, &la->pos[k], 1);
	snprintf(r->lines[0].move, sizeof r->lines[0].move, "5e5d");
	assert_int_equal(coord_submit(c, la->id, &A, r, 1, T0, err), COORD_EINVAL);
	free(la);
	free(lb);
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

static int g_mm_calls, g_mm_fail;
static int recording_minimax(void *ctx, BookDB *db, char *err, size_t errlen)
{
	(void)ctx;
	(void)db;
	g_mm_calls++;
	if (g_mm_fail) return snprintf(err, errlen, "the test's minimax failed"), -1;
	return 0;
}

/* The first tick of a fresh coordinator runs no minimax (the period counts
 * from it); a failing minimax is reported as COORD_EMINIMAX with its message
 * and the coordinator goes on. Two workers with one name stay two. */
static void test_coord__minimax_period_failure_and_worker_instances(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	BookDB *db;
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 1,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_PV},
	                  .minimax = {.run = recording_minimax},
	                  .minimax_seconds = 60,
	                  .select_slice_ms = -1};
	Coord *c = open_coord_with(&db, dir, &o);
	g_mm_calls = g_mm_fail = 0;
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	CoordWorker w1 = A, w2 = A;
	w1.instance = "one";
	w2.instance = "two";
	assert_int_equal(acquire(c, l, &w1, 1, T0), 1);
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &w1, r, 1, T0, err), 1);
	assert_int_equal(acquire(c, l, &w2, 1, T0), 1);
	assert_int_equal(coord_tick(c, T0, err), 0);
	assert_int_equal(coord_minimax_wait(c, err), 0);
	assert_int_equal(g_mm_calls, 0);
	assert_int_equal(coord_tick(c, T0 + 59000, err), 0);
	assert_int_equal(coord_minimax_wait(c, err), 0);
	assert_int_equal(g_mm_calls, 0);
	g_mm_fail = 1;
	err[0] = 0;
	/* Started by the tick, beside the coordinator; its failure is told once it ends. */
	assert_int_equal(coord_tick(c, T0 + 60000, err), 0);
	assert_int_equal(coord_minimax_wait(c, err), COORD_EMINIMAX);
	assert_int_equal(g_mm_calls, 1);
	assert_non_null(strstr(err, "the test's minimax failed"));
	/* It goes on: leases, results and commits as before. */
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &w2, r, 1, T0 + 60000, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 59000), 0);
	assert_int_equal(st.nworkers, 2);
	assert_string_equal(st.workers[0].name, st.workers[1].name);
	assert_string_not_equal(st.workers[0].instance, st.workers[1].instance);
	coord_status_free(&st);
	/* A request naming the worker without its instance (an abort's body of a
	 * name alone) is one of those two, not a third. */
	CoordWorker bare = A;
	bare.instance = NULL;
	coord_heartbeat(c, &bare, false, T0 + 59000);
	assert_int_equal(coord_status(c, &st, T0 + 59000), 0);
	assert_int_equal(st.nworkers, 2);
	coord_status_free(&st);
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* The key after the first legal move of spec's position (answer's best move:
 * score 10) into *key; the position's key is returned. */
static Key after_best(const char *spec, Key *key)
{
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	assert_non_null(pos);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	Key k = pos_key(pos);
	assert_true(movegen_legal(pos, mv) > 0);
	pos_do_move(pos, mv[0]);
	*key = pos_key(pos);
	free(pos);
	return k;
}

/* Whether the book's line from spec (its best move at each ply, after
 * minimax) is analysed plies deep: every position on it thought. */
static bool line_thought(BookDB *db, const char *spec, int plies)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_true(pos && rec);
	assert_int_equal(position_parse(pos, spec, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	bool ok = true;
	for (int ply = 0; ok && ply < plies; ply++) {
		ok = bookdb_query(rec, t, pos) == 1 && (rec->flags & BOOKDB_REC_THOUGHT);
		Move m = ok ? bookdb_best_move(rec, pos) : MOVE_NONE;
		if (m == MOVE_NONE) break;
		pos_do_move(pos, m);
	}
	bookdb_txn_abort(t);
	free(pos);
	free(rec);
	return ok;
}

/*
 * The book's lines from the way to the roots, as think follows them: the
 * root three plies in, the way there (the start position, after 7g7f, after
 * 7g7f 3c3d) thought first, then the root; a minimax run then makes the start position's
 * best move lead to a position nobody analysed — neither under the root nor
 * on the way, so the selector never picks it. The coordinator queues each
 * line's first such position after every minimax run and hands them out
 * before the root's leaves, until every line is analysed as deep as the
 * root lies (3 plies from the start, 2 from after 7g7f); nothing is queued
 * twice.
 */
static void test_coord__the_books_lines_from_the_way_are_followed(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	static const char *ROOTS[] = {"startpos moves 7g7f 3c3d 2g2f"};
	static const char *PATHS[] = {"startpos", "startpos moves 7g7f",
	                              "startpos moves 7g7f 3c3d"};
	BookDB *db;
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_PV},
	                  .roots = ROOTS,
	                  .nroots = 1,
	                  .paths = PATHS,
	                  .npaths = 3,
	                  .minimax = bookmm_hook(NULL),
	                  .minimax_every = 1};
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	Key way[3], line[3];
	for (int i = 0; i < 3; i++) way[i] = after_best(PATHS[i], &line[i]);
	/* The way first, then the root itself; no minimax has run, so no line
	 * yet. */
	Position *rp = malloc(sizeof *rp);
	assert_int_equal(position_parse(rp, ROOTS[0], NULL), 0);
	assert_int_equal(acquire(c, l, &A, 4, T0), 4);
	for (int i = 0; i < 4; i++) {
		assert_true(i < 3 ? in_lease(l, way[i]) : key_equal(l->pos[3].key, pos_key(rp)));
		answer(r, &l->pos[i], 3);
		assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	}
	free(rp);
	assert_int_equal(coord_commit(c, err), 0);
	assert_false(line_thought(db, PATHS[0], 3));
	Key handed[64];
	int nhanded = 0;
	uint64_t queued = 0;
	int64_t now = T0;
	for (int round = 0; round < 12; round++) {
		/* A minimax run (every result), applied; the next tick looks at the lines. */
		assert_int_equal(coord_tick(c, now += 100, err), 0);
		assert_int_equal(coord_minimax_wait(c, err), 0);
		assert_int_equal(coord_tick(c, now += 100, err), 0);
		CoordStatus st;
		assert_int_equal(coord_status(c, &st, now), 0);
		uint64_t more = st.lines_queued - queued;
		queued = st.lines_queued;
		coord_status_free(&st);
		if (round == 0) assert_true(more >= 1);
		if (!more) break;
		/* The queue comes first: the lines' positions are the lease's first. */
		int n = acquire(c, l, &B, 8, now);
		assert_true(n >= (int)more);
		for (int i = 0; i < n; i++) {
			if (i < (int)more) {
				for (int k = 0; k < nhanded; k++)
					assert_false(key_equal(handed[k], l->pos[i].key));
				assert_true(nhanded < 64);
				handed[nhanded++] = l->pos[i].key;
			}
			answer(r, &l->pos[i], 3);
			assert_int_equal(coord_submit(c, l->id, &B, r, 1, now, err), 1);
		}
		assert_int_equal(coord_commit(c, err), 0);
	}
	/* The first one: the start position's best move, which nothing else picks. */
	assert_true(nhanded >= 1 && key_equal(handed[0], line[0]));
	assert_true(line_thought(db, PATHS[0], 3));
	assert_true(line_thought(db, PATHS[1], 2));
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The walk of the book's lines spread over ticks (co_queue_lines within its
 * budget, at least LINES_AT_ONCE lines a call): on a way of 40 positions with
 * no time to spare, three calls walk 16, 16 and 8 lines, each where the last
 * stopped, and queue what one walk of every line finds, in its order, once.
 */
static void test_coord__the_lines_walk_goes_on_where_it_stopped(void **state)
{
	(void)state;
	enum { WAY = 40 };
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	static char specs[WAY + 1][1024];
	static const char *paths[WAY];
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	assert_non_null(pos);
	uint64_t rng = ts_seed("coord_lines_walk");
	pos_set_startpos(pos);
	size_t len = (size_t)snprintf(specs[0], sizeof specs[0], "startpos moves");
	for (int i = 1; i <= WAY; i++) {
		int n = movegen_legal(pos, mv);
		assert_true(n > 0);
		Move m = mv[ts_rand(&rng) % (uint64_t)n];
		pos_do_move(pos, m);
		char usi[USI_MOVE_MAX];
		usi_move_write(m, usi);
		memcpy(specs[i], specs[i - 1], len);
		len += (size_t)snprintf(specs[i] + len, sizeof specs[i] - len, " %s", usi);
	}
	snprintf(specs[0], sizeof specs[0], "startpos");
	for (int i = 0; i < WAY; i++) paths[i] = specs[i];
	const char *roots[] = {specs[WAY]};
	BookDB *db;
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_PV},
	                  .roots = roots,
	                  .nroots = 1,
	                  .paths = paths,
	                  .npaths = WAY,
	                  .select_slice_ms = -1};
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	/* The way, thought (the lines are walked once it is). */
	for (int round = 0; plan_paths_left(c->plan) && round < 20; round++) {
		int n = acquire(c, l, &A, 8, T0);
		for (int i = 0; i < n; i++) {
			answer(r, &l->pos[i], 3);
			assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
		}
		assert_int_equal(coord_commit(c, err), 0);
	}
	assert_int_equal(plan_paths_left(c->plan), 0);
	/* What one walk of every line finds, in order, once. */
	Key want[WAY];
	int nwant = 0;
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	for (int i = 0; i < WAY; i++) {
		const char *sfen;
		int plies;
		assert_true(plan_path_line(c->plan, (size_t)i, &sfen, &plies));
		assert_int_equal(position_parse(pos, sfen, NULL), 0);
		if (bookdb_line_leaf(rec, t, plies, pos) != 1) continue;
		bool seen = false;
		for (int k = 0; k < nwant; k++) seen |= key_equal(want[k], pos_key(pos));
		if (!seen) want[nwant++] = pos_key(pos);
	}
	bookdb_txn_abort(t);
	assert_true(nwant > 16);
	/* Three calls with no time to spare. */
	c->lines_due = true;
	c->lines_next = 0;
	size_t stops[] = {16, 32, 0};
	for (int call = 0; call < 3; call++) {
		assert_int_equal(co_queue_lines(c, 0, err), 0);
		assert_int_equal(c->lines_next, stops[call]);
		assert_int_equal(c->lines_due, call < 2);
	}
	assert_int_equal(c->lines_queued, (uint64_t)nwant);
	/* Handed out first, in the walk's order. */
	int got = 0;
	while (got < nwant) {
		int n = acquire(c, l, &B, 8, T0);
		assert_true(n > 0);
		for (int i = 0; i < n && got < nwant; i++, got++)
			assert_true(key_equal(l->pos[i].key, want[got]));
		for (int i = 0; i < n; i++) {
			answer(r, &l->pos[i], 3);
			assert_int_equal(coord_submit(c, l->id, &B, r, 1, T0, err), 1);
		}
		assert_int_equal(coord_commit(c, err), 0);
	}
	free(rec);
	free(pos);
	free(l);
	free(r);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

/* A minimax that runs until it is told to stop (a whole-book run on a large
 * book): prepare waits for its stop flag, at most a minute. */
static atomic_bool g_mm_started;
static atomic_int g_mm_heard; /* 1: it heard stop; -1: it gave up waiting */
static int endless_prepare(void *ctx, BookDB *db, const atomic_bool *stop, BookMinimaxPlan **plan,
                           char *err, size_t errlen)
{
	(void)ctx;
	(void)db;
	*plan = NULL;
	atomic_store(&g_mm_started, true);
	for (int i = 0; i < 60000 && !(stop && atomic_load(stop)); i++) usleep(1000);
	atomic_store(&g_mm_heard, stop && atomic_load(stop) ? 1 : -1);
	snprintf(err, errlen, "stopped");
	return BOOK_MINIMAX_STOPPED;
}
static int never_apply(BookMinimaxPlan *plan, BookTxn *txn, size_t max, char *err, size_t errlen)
{
	(void)plan;
	(void)txn;
	(void)max;
	snprintf(err, errlen, "nothing to apply");
	return -1;
}
static void never_free(BookMinimaxPlan *plan)
{
	(void)plan;
}

/* Closing a coordinator while its minimax runs tells the run to stop and
 * waits only for that (a whole-book run had it wait minutes), and the
 * selector's snapshot is still written. */
static void test_coord__close_stops_a_minimax_under_way(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN] = "";
	char snap[600];
	snprintf(snap, sizeof snap, "%s/selector.snap", dir);
	BookDB *db;
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 1,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_PV},
	                  .minimax = {.run = recording_minimax,
	                              .prepare = endless_prepare,
	                              .apply = never_apply,
	                              .plan_free = never_free},
	                  .minimax_seconds = 60,
	                  .snapshot = snap};
	Coord *c = open_coord_with(&db, dir, &o);
	atomic_store(&g_mm_started, false);
	atomic_store(&g_mm_heard, 0);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_int_equal(acquire(c, l, &A, 1, T0), 1);
	answer(r, &l->pos[0], 2);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_tick(c, T0, err), 0);
	assert_int_equal(coord_tick(c, T0 + 60000, err), 0); /* the run starts */
	for (int i = 0; i < 10000 && !atomic_load(&g_mm_started); i++) usleep(1000);
	assert_true(atomic_load(&g_mm_started));
	double t0 = clock_ms_f();
	double save_ms;
	assert_int_equal(coord_close(c, &save_ms, err), 0);
	double waited = clock_ms_f() - t0;
	assert_int_equal(atomic_load(&g_mm_heard), 1);
	assert_true(waited < 30000); /* the hook gives up after 60 s */
	assert_int_equal(access(snap, F_OK), 0);
	free(l);
	free(r);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* A 3,000-position synthetic book in dir (the same for the same seed). */
static void synth_into(const char *dir, unsigned long long seed)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s synth %s --positions 3000 --seed %llu --quiet",
	                 ts_joseki(), dir, seed);
	if (rc != 0) fail_msg("synth: %s", err ? err : "");
	free(out);
	free(err);
}

/* Whether reopen_sliced compacts the book between the close and the open
 * (joseki compact: the book written anew, another file); twins_open clears it. */
static bool g_compact_between;

/* Two coordinators over two copies of one synthetic book, under one
 * policy: [0] with every search whole in its acquire, [1] with slice_ms. */
typedef struct {
	char *dir[2];
	BookDB *db[2];
	Coord *c[2];
} Twins;

/* The first seed from seed on whose synthetic book has a leaf to select under
 * mode: a covered tree may have none at all (every covered line ends in a
 * repetition of thought positions), and then neither twin selects anything. */
static unsigned long long seed_with_leaves(int mode, unsigned long long seed)
{
	for (;; seed++) {
		char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
		synth_into(dir, seed);
		int rc = ts_runf(&out, &err, "%s select %s --select %s --window 30 --count 1",
		                 ts_joseki(), dir, mode == PLAN_PV ? "pv" : "cover");
		if (rc != 0) fail_msg("select: %s", err ? err : "");
		bool some = out && out[0];
		free(out);
		free(err);
		ts_rmtree(dir);
		free(dir);
		if (some) return seed;
	}
}

static void twins_open(Twins *t, int mode, unsigned long long seed, double slice_ms)
{
	g_compact_between = false;
	seed = seed_with_leaves(mode, seed);
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = mode, .window = 30},
	                  .select_slice_ms = -1};
	for (int i = 0; i < 2; i++) {
		t->dir[i] = ts_mkdtemp();
		synth_into(t->dir[i], seed);
		t->c[i] = open_coord_with(&t->db[i], t->dir[i], &o);
		o.select_slice_ms = slice_ms;
	}
}

/* run under both policies, from one seed (TEST_SEED repeats it). */
static void under_both_policies(const char *seed_name,
                                void (*run)(int mode, unsigned long long seed))
{
	unsigned long long seed = ts_seed(seed_name) % 1000000;
	run(PLAN_PV, seed);
	run(PLAN_COVER, seed);
}

static void twins_close(Twins *t)
{
	for (int i = 0; i < 2; i++) {
		close_coord(t->c[i], t->db[i]);
		ts_rmtree(t->dir[i]);
		free(t->dir[i]);
	}
}

/* A filter of 2^k 64-byte blocks, every key let through (the walk reads as
 * it would without one): 64-byte aligned, as the selector's are. */
static SelKeyFilter open_filter(int k)
{
	size_t bytes = (size_t)64 << k;
	uint64_t *w = aligned_alloc(64, bytes);
	assert_non_null(w);
	memset(w, 0xff, bytes);
	return (SelKeyFilter){w, ((uint64_t)1 << k) - 1};
}

/* Hands f to the walk until the walk reads it alone (its readers of the one
 * before done: each a batch of the walk or a record read ahead). */
static void hand_over(CoPwalk *p, const SelKeyFilter *f)
{
	int tries = 0;
	while (!co_pwalk_set_filter(p, f)) {
		assert_true(++tries < 600000); /* a minute: the readers are short */
		usleep(100);
	}
}

/* A walk over a 3,000-position synthetic book minimax has valued: the
 * coordinator whose plan it walks, its book and directory. */
typedef struct {
	char *dir;
	BookDB *db;
	Coord *c;
	CoPwalk *p;
} WalkBook;

static WalkBook walk_book(void)
{
	WalkBook w = {ts_mkdtemp(), NULL, NULL, NULL};
	char *out = NULL, *serr = NULL;
	if (ts_runf(&out, &serr,
	            "%s synth %s --positions 3000 --seed 7 --quiet && %s minimax %s --quiet",
	            ts_joseki(), w.dir, ts_joseki(), w.dir) != 0)
		fail_msg("setup: %s", serr ? serr : "");
	free(out);
	free(serr);
	w.c = open_coord(&w.db, w.dir);
	assert_int_equal(co_pwalk_start(&w.p, w.db, w.c->plan), 0);
	return w;
}

/* The coordinator and book of walk_book (the walk stopped by the test). */
static void walk_book_close(WalkBook *w)
{
	close_coord(w->c, w->db);
	ts_rmtree(w->dir);
	free(w->dir);
}

/* The walk gives leaves: got of them already, or more within a minute. */
static void walk_gives_leaves(CoPwalk *p, int got)
{
	PwLeaf leaf[16];
	for (int t = 0; t < 60000 && got == 0; t++) {
		int n = co_pwalk_take(p, leaf, 16, 1);
		assert_true(n >= 0);
		got += n;
	}
	assert_true(got > 0);
}

/* The provisional walk's key filter, handed over again and again while the
 * walk reads (a regrown filter each time): each handover says when the walk
 * reads the new filter alone, and the one before is freed then, as the
 * coordinator frees the selector's retired filters (sel_free_retired). The
 * walk goes on giving leaves. A bad filter (misaligned, its block count not
 * a power of two) or no walk is refused. */
static void test_coord__the_walks_filter_is_handed_over_and_the_one_before_freed(void **state)
{
	(void)state;
	WalkBook w = walk_book();
	CoPwalk *p = w.p;
	SelKeyFilter f = open_filter(4);
	assert_false(co_pwalk_set_filter(NULL, &f));
	SelKeyFilter bad = {(const uint64_t *)((const char *)f.words + 8), f.blocks};
	assert_false(co_pwalk_set_filter(p, &bad));
	bad = (SelKeyFilter){f.words, 5};
	assert_false(co_pwalk_set_filter(p, &bad));
	hand_over(p, &f);
	/* The same again: no handover, and none of its readers is left. */
	assert_true(co_pwalk_set_filter(p, &f));
	PwLeaf leaf[16];
	int got = 0;
	for (int round = 0; round < 200; round++) {
		SelKeyFilter g = open_filter(4 + round % 3);
		hand_over(p, &g);
		free((void *)f.words); /* the walk reads g alone */
		f = g;
		int n = co_pwalk_take(p, leaf, 16, 0);
		assert_true(n >= 0);
		got += n;
	}
	walk_gives_leaves(p, got);
	co_pwalk_stop(p);
	free((void *)f.words);
	walk_book_close(&w);
}

/* Readers caught in the middle of handovers (held as the walk's own batches
 * and records read ahead are, while the walk reads beside them): a handover
 * says the filter before it is still read until every reader that began
 * before it is done, and no later one is made meanwhile; a reader that began
 * after it reads the new filter and holds only the handover after it. */
static void test_coord__a_reader_in_the_middle_of_a_handover_keeps_its_filter(void **state)
{
	(void)state;
	WalkBook w = walk_book();
	CoPwalk *p = w.p;
	SelKeyFilter f = open_filter(4), g = open_filter(5), h = open_filter(6), r;
	unsigned t1, t2, t3;
	/* No filter yet: no reader. */
	assert_false(co_pwalk_read_begin(p, &r, &t1));
	hand_over(p, &f);
	assert_true(co_pwalk_read_begin(p, &r, &t1));
	assert_ptr_equal(r.words, f.words);
	/* g handed over while the reader reads f: not over, again and again. */
	assert_false(co_pwalk_set_filter(p, &g));
	assert_false(co_pwalk_set_filter(p, &g));
	assert_true(co_pwalk_read_begin(p, &r, &t2));
	assert_ptr_equal(r.words, g.words);
	/* h waits for g's handover: refused, g still the filter. */
	assert_false(co_pwalk_set_filter(p, &h));
	assert_true(co_pwalk_read_begin(p, &r, &t3));
	assert_ptr_equal(r.words, g.words);
	co_pwalk_read_end(p, t3);
	/* The reader of f done: g's handover is over (the walk's own readers of
	 * f are short), though the reader of g reads on. */
	co_pwalk_read_end(p, t1);
	hand_over(p, &g);
	free((void *)f.words);
	/* h now: handed over at once, and not over while g is read. */
	assert_false(co_pwalk_set_filter(p, &h));
	assert_true(co_pwalk_read_begin(p, &r, &t3));
	assert_ptr_equal(r.words, h.words);
	co_pwalk_read_end(p, t3);
	assert_false(co_pwalk_set_filter(p, &h));
	co_pwalk_read_end(p, t2);
	hand_over(p, &h);
	free((void *)g.words);
	/* The walk read on through all of it. */
	walk_gives_leaves(p, 0);
	co_pwalk_stop(p);
	free((void *)h.words);
	walk_book_close(&w);
}

/*
 * Provisional leaves (opt.provisional_after_ms): a coordinator whose first
 * search over a 20,000-position book minimax has valued is cut into slices
 * of a microsecond, and which answers with the book's own values at once,
 * hands out positions while that search is suspended (counted as
 * provisional); after it, acquires of 8 the selection leaves short are
 * filled with provisional leaves too, until the selection has answered
 * every acquire in full for the same time (acquires of 1, the search given
 * slices between them until it has its stock of one leaf, the clock a
 * millisecond further each time); from then on none is provisional, however
 * short an acquire is. Over the rounds no position is leased twice or once
 * thought, and every lease is answered and stored.
 */
typedef struct {
	Coord *c;
	BookDB *db;
	CoordLease *l;
	CoordResult *r;
	Key *seen;
	int nseen;
} ProvRun;

/* An acquire of max positions at now, each checked, answered and stored;
 * its count. */
static int prov_round(ProvRun *t, int max, int64_t now)
{
	char err[COORD_ERRLEN];
	int n = acquire(t->c, t->l, &A, max, now);
	for (int i = 0; i < n; i++) {
		assert_false(thought(t->db, t->l->pos[i].key));
		for (int j = 0; j < t->nseen; j++)
			assert_false(key_equal(t->seen[j], t->l->pos[i].key));
		assert_true(t->nseen < 4096);
		t->seen[t->nseen++] = t->l->pos[i].key;
		answer(t->r, &t->l->pos[i], 4);
		assert_int_equal(coord_submit(t->c, t->l->id, &A, t->r, 1, now, err), 1);
	}
	assert_int_equal(coord_commit(t->c, err), 0);
	return n;
}

static CoordStatus prov_status(Coord *c)
{
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0), 0);
	CoordStatus out = {.provisional = st.provisional,
	                   .select_answered = st.select_answered,
	                   .provisional_over = st.provisional_over,
	                   .provisional_ready = st.provisional_ready,
	                   .provisional_back = st.provisional_back,
	                   .select_short = st.select_short,
	                   .provisional_spared = st.provisional_spared,
	                   .provisional_dry = st.provisional_dry,
	                   .provisional_dry_ms = st.provisional_dry_ms,
	                   .selected = st.selected};
	coord_status_free(&st);
	return out;
}

static void test_coord__provisional_leaves_until_the_selection_keeps_up(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *serr = NULL, err[COORD_ERRLEN];
	unsigned long long seed = ts_seed("coord_provisional") % 1000000;
	if (ts_runf(&out, &serr,
	            "%s synth %s --positions 20000 --seed %llu --quiet && %s minimax %s --quiet",
	            ts_joseki(), dir, seed, ts_joseki(), dir) != 0)
		fail_msg("setup: %s", serr ? serr : "");
	free(out);
	free(serr);
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_PV},
	                  .select_slice_ms = 0.001,
	                  .select_ahead = 1,
	                  .provisional_after_ms = 0.001};
	ProvRun t = {.l = malloc(sizeof *t.l),
	             .r = malloc(sizeof *t.r),
	             .seen = malloc(4096 * sizeof *t.seen)};
	assert_true(t.l && t.r && t.seen);
	t.c = open_coord_with(&t.db, dir, &o);
	int before = 0, catching = 0, after = 0, rounds = 0;
	int64_t now = T0;
	/* The first search, and the acquires of 8 just after it. */
	uint64_t prov_at_answer = 0, short_at_walk = UINT64_MAX;
	CoordStatus st = {0};
	for (; rounds < 4000 && (!st.select_answered || catching < 40); rounds++) {
		int n = prov_round(&t, 8, now);
		st = prov_status(t.c);
		if (!st.select_answered) {
			before += n;
			prov_at_answer = st.provisional;
			/* Once the walk's leaves make up for the suspended search,
			 * an acquire gives it no slice of its own (none ends
			 * inside the search): it goes on between requests. */
			if (short_at_walk == UINT64_MAX && st.provisional > 0)
				short_at_walk = st.select_short;
			else if (short_at_walk != UINT64_MAX)
				assert_int_equal(st.select_short, short_at_walk);
		} else {
			catching += n;
		}
		assert_false(st.provisional_over);
		/* Until the first provisional leaves are handed out, before the
		 * first search is done and after, the search waits for the walk
		 * begun by the first short acquire (on its own thread: under load
		 * it may be slower than the whole search). */
		for (int w = 0; w < 60000 && st.provisional_ready == 0 &&
		                st.provisional == (st.select_answered ? prov_at_answer : 0);
		     w++) {
			usleep(1000);
			st = prov_status(t.c);
		}
		/* The search goes on between requests: a slice (each runs some
		 * visits, however short: it ends in a few hundred rounds). */
		assert_int_equal(coord_select_idle(t.c, 0.05, err), 0);
	}
	uint64_t prov_catching = st.provisional;
	/* Acquires of 1 with a leaf selected ahead: the selection keeps up. */
	for (int k = 0; k < 2000 && !st.provisional_over; k++, rounds++) {
		for (int j = 0; j < 1000 && st.selected < 1; j++) {
			assert_int_equal(coord_select_idle(t.c, 0.05, err), 0);
			st = prov_status(t.c);
		}
		now++;
		after += prov_round(&t, 1, now);
		st = prov_status(t.c);
	}
	assert_true(st.provisional_over);
	uint64_t prov_over = st.provisional;
	/* Over: acquires of 8 again, mostly short, the selection's own leaves
	 * only, while the clock stands still (never behind for as long as
	 * --provisional-after). */
	int over = 0;
	for (int k = 0; k < 4000 && over < 40; k++, rounds++) {
		over += prov_round(&t, 8, now);
		assert_int_equal(coord_select_idle(t.c, 0.05, err), 0);
	}
	after += over;
	st = prov_status(t.c);
	assert_int_equal(st.provisional, prov_over);
	assert_int_equal(st.provisional_back, 0);
	/* Behind for longer: acquires short for want of time as the clock goes
	 * on, and the provisional leaves are back (the walk resumed). */
	int back = 0;
	for (int k = 0; k < 4000 && !(st.provisional_back == 1 && st.provisional > prov_over);
	     k++, rounds++) {
		back += prov_round(&t, 8, ++now);
		st = prov_status(t.c);
		for (int w = 0; w < 60000 && st.provisional_back == 1 && st.provisional_ready == 0;
		     w++) {
			usleep(1000);
			st = prov_status(t.c);
		}
	}
	assert_int_equal(st.provisional_back, 1);
	assert_false(st.provisional_over);
	assert_true(st.provisional > prov_over);
	after += back;
	print_message("provisional: seed %llu, %d positions before the first search was done "
	              "(%llu provisional), %d after it until the selection kept up (%llu "
	              "provisional), %d after (%llu provisional once it fell behind), %d "
	              "rounds, %llu reads the key filter spared the walk\n",
	              seed, before, (unsigned long long)prov_at_answer, catching,
	              (unsigned long long)(prov_over - prov_at_answer), after,
	              (unsigned long long)(st.provisional - prov_over), rounds,
	              (unsigned long long)st.provisional_spared);
	/* The walk, resumed after the first search (which took the selector's
	 * key filter in), had the filter: children it ruled out were not read. */
	assert_true(st.provisional_spared > 0);
	/* Acquires that found the walk with nothing ready: at most one a round,
	 * each waiting up to a slice. */
	print_message("the walk dry for %llu acquires (%.1f ms)\n",
	              (unsigned long long)st.provisional_dry, st.provisional_dry_ms);
	assert_true(st.provisional_dry <= (uint64_t)rounds);
	assert_true(st.provisional_dry_ms >= 0 &&
	            st.provisional_dry_ms <= (st.provisional_dry + 1) * (COORD_SLICE_MS + 1000.0));
	assert_true(st.select_answered);
	assert_true(prov_at_answer > 0);
	assert_true(prov_catching > prov_at_answer);
	assert_true(over >= 40);
	for (int i = 0; i < t.nseen; i++) assert_true(thought(t.db, t.seen[i]));
	free(t.seen);
	free(t.l);
	free(t.r);
	close_coord(t.c, t.db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Selection in slices (opt.select_slice_ms): a coordinator whose searches
 * are cut into slices of microseconds, answering acquires with fewer positions
 * or none while a search is suspended (coord_select_busy) and going on
 * between requests (coord_select_idle), leases the same positions in the same
 * order as one whose searches run whole in each acquire, under both policies.
 * Results submitted while a search is suspended are stored at once and
 * counted by the selection when it is done.
 */
static void slices_run(int mode, unsigned long long seed)
{
	char err[COORD_ERRLEN];
	Twins t;
	twins_open(&t, mode, seed, 0.001);
	Coord *whole = t.c[0], *sliced = t.c[1];
	BookDB *db2 = t.db[1];
	CoordLease *lw = malloc(sizeof *lw), *ls = malloc(sizeof *ls);
	CoordResult *r = malloc(sizeof *r);
	enum { MAXL = 64 };
	CoordLease *got = malloc(MAXL * sizeof *got); /* the sliced one's leases of a round */
	assert_non_null(lw);
	assert_non_null(ls);
	assert_non_null(r);
	assert_non_null(got);
	uint64_t rng = seed;
	int leaves = 0, busy = 0, partial = 0, idles = 0;
	for (int round = 0; round < 40; round++) {
		int n = acquire(whole, lw, &A, 8, T0);
		int have = 0, ngot = 0;
		while (have < n) {
			/* Now and then slices between requests first. */
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			for (int k = (int)(rng >> 60) % 4; k > 0; k--, idles++)
				assert_int_equal(coord_select_idle(sliced, 0.001, err), 0);
			assert_true(ngot < MAXL);
			int m = acquire(sliced, &got[ngot], &A, n - have, T0);
			if (m == 0) {
				assert_true(coord_select_busy(sliced));
				busy++;
				continue;
			}
			if (m < n - have) partial++;
			for (int i = 0; i < m; i++) {
				assert_true(key_equal(got[ngot].pos[i].key, lw->pos[have + i].key));
				assert_string_equal(got[ngot].pos[i].sfen, lw->pos[have + i].sfen);
			}
			have += m;
			ngot++;
		}
		leaves += n;
		if (n == 0) break;
		/* Every position answered, in the same order. */
		for (int i = 0; i < n; i++) {
			answer(r, &lw->pos[i], 4);
			assert_int_equal(coord_submit(whole, lw->id, &A, r, 1, T0, err), 1);
		}
		for (int j = 0; j < ngot; j++)
			for (int i = 0; i < got[j].n; i++) {
				answer(r, &got[j].pos[i], 4);
				assert_int_equal(coord_submit(sliced, got[j].id, &A, r, 1, T0, err),
				                 1);
			}
		assert_int_equal(coord_commit(whole, err), 0);
		assert_int_equal(coord_commit(sliced, err), 0);
	}
	print_message("slices (%s): %d leaves, %d busy answers, %d partial, %d idle slices\n",
	              mode == PLAN_PV ? "pv" : "cover", leaves, busy, partial, idles);
	assert_true(leaves > 100);
	assert_true(busy > 10);
	/* Results while a search is suspended: stored now, selected around later. */
	int m;
	while ((m = acquire(sliced, ls, &A, 1, T0)) == 0 && coord_select_busy(sliced)) {
	}
	assert_int_equal(m, 1);
	CoordLease *l2 = malloc(sizeof *l2);
	assert_non_null(l2);
	int stored = 0;
	for (int tries = 0; tries < 100000 && !stored; tries++) {
		m = acquire(sliced, l2, &A, 1, T0);
		if (m == 0 && coord_select_busy(sliced) && !stored) {
			answer(r, &ls->pos[0], 4);
			assert_int_equal(coord_submit(sliced, ls->id, &A, r, 1, T0, err), 1);
			assert_int_equal(coord_commit(sliced, err), 0);
			assert_true(thought(db2, ls->pos[0].key));
			stored = 1;
		} else if (m == 1) {
			/* A search too short to be suspended: the next one. */
			answer(r, &ls->pos[0], 4);
			assert_int_equal(coord_submit(sliced, ls->id, &A, r, 1, T0, err), 1);
			*ls = *l2;
		}
	}
	assert_true(stored);
	while ((m = acquire(sliced, l2, &A, 4, T0)) == 0 && coord_select_busy(sliced)) {
	}
	for (int i = 0; i < m; i++) assert_false(key_equal(l2->pos[i].key, ls->pos[0].key));
	free(l2);
	free(got);
	free(lw);
	free(ls);
	free(r);
	twins_close(&t);
}

/*
 * The selector within the coordinator's memory (CoordOptions.select_memory,
 * serve --work --memory): a coordinator whose budget holds nothing but the
 * selector's fixed parts trims the graph after every tick's commit, and still
 * leases only positions the book does not hold thought, none twice, stores
 * every result, and finds as many leaves as its twin that is never trimmed;
 * their first leases, before any result, are the same. Its snapshot, written
 * at the end, restores.
 */
static bool key_in(Key k, const Key *keys, int n)
{
	for (int i = 0; i < n; i++)
		if (key_equal(k, keys[i])) return true;
	return false;
}

/* Depth 5, 3 PVs, 10-minute leases, PV selection in slices of slice_ms (-1:
 * whole searches in the acquire). */
static CoordOptions pv_options(double slice_ms)
{
	return (CoordOptions){.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                      .multipv = 3,
	                      .lease_seconds = 600,
	                      .plan = {.mode = PLAN_PV, .window = 30},
	                      .select_slice_ms = slice_ms};
}

static void test_coord__a_trimmed_selector_leases_right_within_a_tiny_memory(void **state)
{
	(void)state;
	unsigned long long seed = seed_with_leaves(PLAN_PV, ts_seed("coord_trim") % 1000000);
	char err[COORD_ERRLEN];
	CoordOptions o = pv_options(-1);
	char *dir[2], snap[4200];
	BookDB *db[2];
	Coord *c[2];
	for (int i = 0; i < 2; i++) {
		dir[i] = ts_mkdtemp();
		synth_into(dir[i], seed);
		o.select_memory = i ? 1 : 0;
		snprintf(snap, sizeof snap, "%s/selector.snap", dir[i]);
		o.snapshot = i ? snap : NULL;
		c[i] = open_coord_with(&db[i], dir[i], &o);
	}
	enum { ROUNDS = 30, PER = 8 };
	Key *seen[2];
	int nseen[2] = {0, 0};
	CoordLease *l = malloc(sizeof *l), *first = malloc(sizeof *first);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(l);
	assert_non_null(first);
	assert_non_null(r);
	for (int i = 0; i < 2; i++) {
		seen[i] = malloc(ROUNDS * PER * sizeof **seen);
		assert_non_null(seen[i]);
	}
	for (int round = 0; round < ROUNDS; round++) {
		int64_t now = T0 + round * 1000;
		int got[2];
		for (int i = 0; i < 2; i++) {
			got[i] = acquire(c[i], l, &A, PER, now);
			if (round == 0 && i == 0) *first = *l;
			for (int k = 0; k < l->n; k++) {
				Key key = l->pos[k].key;
				assert_false(thought(db[i], key));
				assert_false(key_in(key, seen[i], nseen[i]));
				seen[i][nseen[i]++] = key;
				if (round == 0 && i == 1)
					assert_true(key_equal(key, first->pos[k].key));
				answer(r, &l->pos[k], 4);
				assert_int_equal(coord_submit(c[i], l->id, &A, r, 1, now, err), 1);
			}
			assert_int_equal(coord_commit(c[i], err), 0);
			for (int k = 0; k < l->n; k++) assert_true(thought(db[i], l->pos[k].key));
			assert_int_equal(coord_tick(c[i], now + 500, err), 0);
		}
		assert_int_equal(got[0], PER);
		assert_int_equal(got[1], PER);
	}
	CoordStatus st[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(coord_status(c[i], &st[i], T0 + ROUNDS * 1000), 0);
	print_message(
	    "trimmed coordinator: %llu trims, %llu nodes dropped; %llu nodes held, the "
	    "untrimmed twin %llu\n",
	    (unsigned long long)st[1].select_trims, (unsigned long long)st[1].select_trimmed,
	    (unsigned long long)st[1].select_nodes, (unsigned long long)st[0].select_nodes);
	assert_int_equal(st[0].select_trims, 0);
	assert_true(st[1].select_trims >= ROUNDS / 2);
	assert_true(st[1].select_nodes < st[0].select_nodes);
	assert_int_equal(st[1].results, ROUNDS * PER);
	for (int i = 0; i < 2; i++) coord_status_free(&st[i]);
	/* Stopped and opened again: its snapshot restores, and it goes on. */
	assert_int_equal(coord_close(c[1], NULL, err), 0);
	assert_int_equal(coord_open(&c[1], db[1], &o, err), 0);
	const char *note = NULL;
	assert_true(coord_snapshot_restored(c[1], &note, NULL));
	assert_int_equal(acquire(c[1], l, &A, PER, T0 + ROUNDS * 1000), PER);
	for (int k = 0; k < l->n; k++) {
		assert_false(thought(db[1], l->pos[k].key));
		assert_false(key_in(l->pos[k].key, seen[1], nseen[1]));
	}
	for (int i = 0; i < 2; i++) {
		close_coord(c[i], db[i]);
		ts_rmtree(dir[i]);
		free(dir[i]);
		free(seen[i]);
	}
	free(l);
	free(first);
	free(r);
}

/*
 * While a checkpoint's child writes (co_checkpoint_running), the selection
 * beside the service and the trim wait: each page they wrote would be copied
 * for the parent while the child lives. A child stands in for the
 * checkpoint's here, alive until the test closes a pipe; the coordinator
 * reaps it as its own. Once it is gone, both go on.
 */
static void test_coord__a_checkpoint_s_child_holds_the_selection_and_the_trim(void **state)
{
	(void)state;
	unsigned long long seed = seed_with_leaves(PLAN_PV, ts_seed("coord_ckhold") % 1000000);
	char err[COORD_ERRLEN];
	CoordOptions o = pv_options(60000);
	o.select_memory = 1;
	o.select_ahead = 8;
	char *dir = ts_mkdtemp();
	synth_into(dir, seed);
	BookDB *db;
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(l);
	assert_non_null(r);
	assert_int_equal(acquire(c, l, &A, 4, T0), 4);
	/* Within a budget, a tick's trim drops nothing, and counts no time. */
	CoordStatus st;
	c->opt.select_memory = UINT64_MAX;
	assert_int_equal(coord_tick(c, T0 + 100, err), 0);
	c->opt.select_memory = 1;
	assert_int_equal(coord_status(c, &st, T0 + 100), 0);
	assert_int_equal(st.select_trims, 0);
	assert_true(st.trim_ms == 0);
	coord_status_free(&st);
	for (int k = 0; k < l->n; k++) {
		answer(r, &l->pos[k], 4);
		assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
	}
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char b;
		close(fd[1]);
		while (read(fd[0], &b, 1) < 0) {
		}
		_exit(0);
	}
	close(fd[0]);
	c->ckpt_pid = child;
	/* The tick commits the results: a trim would follow, and does not. */
	assert_int_equal(coord_tick(c, T0 + 500, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 500), 0);
	assert_int_equal(st.select_trims, 0);
	coord_status_free(&st);
	coord_select_ahead(c);
	assert_false(c->sr_bg);
	/* The child gone (waited for, as a checkpoint's end is): both go on. */
	close(fd[1]);
	assert_int_equal(coord_checkpoint_wait(c), 0);
	assert_int_equal(c->ckpt_pid, 0);
	assert_int_equal(coord_tick(c, T0 + 1000, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 1000), 0);
	assert_true(st.select_trims >= 1);
	assert_int_equal(st.checkpoints, 1);
	coord_status_free(&st);
	coord_select_ahead(c);
	assert_true(c->sr_bg);
	assert_true(coord_select_idle(c, 0, err) >= 0); /* the slice taken in */
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
	free(l);
	free(r);
}

/*
 * A trim of the selector's graph in slices (coord_tick begins it, the
 * service's rounds go on with coord_trim_on): until its last slice no search
 * runs (an acquire answers from what was selected before), no checkpoint
 * begins, and the results submitted meanwhile are stored in the book at once
 * and made in the selector at its end (its queries answer with them before).
 * After it the coordinator leases none of them, nor anything leased before.
 * Its slices here take no time (a pass over a chunk of nodes each), so
 * that the graph of a small book takes many.
 */
static void test_coord__a_trim_in_slices_holds_the_search_and_keeps_the_results(void **state)
{
	(void)state;
	unsigned long long seed = seed_with_leaves(PLAN_PV, ts_seed("coord_trimslices") % 1000000);
	char err[COORD_ERRLEN], snap[4200];
	CoordOptions o = pv_options(-1);
	char *dir = ts_mkdtemp();
	snprintf(snap, sizeof snap, "%s/selector.snap", dir);
	o.snapshot = snap;
	synth_into(dir, seed);
	BookDB *db;
	Coord *c = open_coord_with(&db, dir, &o);
	enum { PER = 8, ROUNDS = 6 };
	CoordLease *l = malloc(sizeof *l), *held = malloc(sizeof *held);
	CoordResult *r = malloc(sizeof *r);
	Key *seen = malloc((ROUNDS + 3) * PER * sizeof *seen);
	assert_true(l && held && r && seen);
	int nseen = 0;
	for (int round = 0; round < ROUNDS; round++) {
		int64_t now = T0 + round * 1000;
		assert_int_equal(acquire(c, l, &A, PER, now), PER);
		for (int k = 0; k < l->n; k++) {
			seen[nseen++] = l->pos[k].key;
			answer(r, &l->pos[k], 4);
			assert_int_equal(coord_submit(c, l->id, &A, r, 1, now, err), 1);
		}
		assert_int_equal(coord_tick(c, now + 500, err), 0);
	}
	/* A lease outstanding, answered during the trim. */
	int64_t now = T0 + ROUNDS * 1000;
	assert_int_equal(acquire(c, held, &A, PER, now), PER);
	for (int k = 0; k < held->n; k++) seen[nseen++] = held->pos[k].key;
	CoordStatus st0, st;
	assert_int_equal(coord_status(c, &st0, now), 0);
	c->opt.select_memory = 1;
	c->opt.trim_slice_ms = 1e-6;
	assert_int_equal(coord_tick(c, now, err), 0);
	assert_true(sel_trimming(c->sel));
	/* No search: an acquire gets what was selected before, if anything. */
	int got = acquire(c, l, &A, PER, now);
	for (int k = 0; k < got; k++) {
		seen[nseen++] = l->pos[k].key;
		assert_false(thought(db, l->pos[k].key));
	}
	/* No checkpoint. */
	assert_int_equal(coord_checkpoint(c, now, err), 0);
	assert_true(c->ckpt_pid <= 0);
	/* The results: in the book at the commit, kept in the selector. */
	for (int k = 0; k < held->n; k++) {
		answer(r, &held->pos[k], 4);
		assert_int_equal(coord_submit(c, held->id, &A, r, 1, now, err), 1);
	}
	assert_int_equal(coord_commit(c, err), 0);
	for (int k = 0; k < held->n; k++) {
		assert_true(thought(db, held->pos[k].key));
		assert_true(sel_is_thought(c->sel, held->pos[k].key));
	}
	assert_int_equal(coord_status(c, &st, now), 0);
	assert_int_equal(st.select_visits, st0.select_visits);
	assert_int_equal(st.select_trims, 0);
	coord_status_free(&st);
	SelStats ss;
	sel_get_stats(&ss, c->sel);
	int slices = (int)ss.trim_slices;
	while (sel_trimming(c->sel) && slices < 1000000) {
		coord_trim_on(c);
		slices++;
	}
	print_message("    the trim in %d slices; %d positions answered during it\n", slices, got);
	assert_false(sel_trimming(c->sel));
	assert_true(slices > 5);
	assert_int_equal(coord_status(c, &st, now), 0);
	assert_int_equal(st.select_trims, 1);
	assert_true(st.select_nodes < st0.select_nodes);
	assert_int_equal(st.results, (ROUNDS + 1) * PER);
	coord_status_free(&st);
	coord_status_free(&st0);
	/* Searches again: nothing thought, nothing leased before. */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(acquire(c, l, &A, PER, now + 1000), PER);
		for (int k = 0; k < l->n; k++) {
			assert_false(thought(db, l->pos[k].key));
			assert_false(key_in(l->pos[k].key, seen, nseen));
			seen[nseen++] = l->pos[k].key;
		}
	}
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
	free(l);
	free(held);
	free(r);
	free(seen);
}

static void test_coord__selection_in_slices_leases_what_whole_searches_do(void **state)
{
	(void)state;
	under_both_policies("coord_slices", slices_run);
}

/*
 * The selection beside the service (coord_select_ahead): between rounds the
 * selection thread keeps a stock of leaves for the next acquires, while the
 * caller commits. With no result in between, the stock holds the leaves a
 * coordinator selecting whole searches in each acquire picks next, in its
 * order. With results submitted between rounds (while a background slice
 * runs: the submit stops it first), no position is leased twice or leased
 * once thought, and the rounds are answered in full from stock and slices.
 */
static void ahead_run(int mode, unsigned long long seed)
{
	char err[COORD_ERRLEN];
	Twins t;
	twins_open(&t, mode, seed, 60000); /* an acquire short of stock selects whole */
	Coord *whole = t.c[0], *ahead = t.c[1];
	BookDB *db2 = t.db[1];
	enum { ROUNDS = 30, WANT = 6, FIRST = ROUNDS / 2 };
	CoordLease *lw = malloc(sizeof *lw), *la = malloc((FIRST + ROUNDS) * sizeof *la);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(lw);
	assert_non_null(la);
	assert_non_null(r);
	/* Part 1: no results. */
	int leaves = 0;
	for (int round = 0; round < FIRST; round++) {
		coord_round_begin(ahead);
		int n = acquire(whole, lw, &A, WANT, T0);
		int m = coord_acquire(ahead, &la[round], &A, WANT, T0, err);
		assert_int_equal(m, n);
		for (int i = 0; i < n; i++) {
			assert_true(key_equal(la[round].pos[i].key, lw->pos[i].key));
			assert_string_equal(la[round].pos[i].sfen, lw->pos[i].sfen);
		}
		leaves += n;
		/* The stock fills while the caller commits and waits. */
		coord_select_ahead(ahead);
		assert_int_equal(coord_commit(ahead, err), 0);
		usleep(20000);
	}
	/* (A covered tree with nothing answered may be a few leaves.) */
	assert_true(leaves > 0);
	CoordStatus st;
	assert_int_equal(coord_status(ahead, &st, T0), 0);
	uint64_t stocked = st.select_ahead_leaves;
	coord_status_free(&st);
	/* A covered tree with nothing answered can be a few leaves, all
	 * selected by the first two acquires; a PV leaf always has a next. */
	if (mode == PLAN_PV || leaves > 2 * WANT) assert_true(stocked > 0);
	/* Part 2: part 1's leases answered, then every position answered
	 * between rounds, with the stock being filled meanwhile. */
	size_t nkeys = 0, cap = (size_t)(FIRST + ROUNDS) * WANT;
	Key *keys = malloc(cap * sizeof *keys);
	assert_non_null(keys);
	for (int round = 0; round < FIRST; round++)
		for (int i = 0; i < la[round].n; i++) {
			keys[nkeys++] = la[round].pos[i].key;
			answer(r, &la[round].pos[i], 3);
			assert_int_equal(coord_submit(ahead, la[round].id, &A, r, 1, T0, err), 1);
		}
	int got = 0;
	for (int round = FIRST; round < FIRST + ROUNDS; round++) {
		coord_round_begin(ahead);
		int m = coord_acquire(ahead, &la[round], &A, WANT, T0, err);
		assert_true(m >= 0);
		got += m;
		coord_select_ahead(ahead);
		assert_int_equal(coord_commit(ahead, err), 0);
		for (int i = 0; i < m; i++) {
			Key k = la[round].pos[i].key;
			assert_false(thought(db2, k));
			for (size_t j = 0; j < nkeys; j++) assert_false(key_equal(keys[j], k));
			keys[nkeys++] = k;
			answer(r, &la[round].pos[i], 3);
			assert_int_equal(coord_submit(ahead, la[round].id, &A, r, 1, T0, err), 1);
			coord_select_ahead(ahead);
		}
		assert_int_equal(coord_commit(ahead, err), 0);
		for (int i = 0; i < m; i++) assert_true(thought(db2, la[round].pos[i].key));
	}
	assert_true(got > ROUNDS * WANT / 2);
	assert_int_equal(coord_status(ahead, &st, T0), 0);
	print_message("ahead (%s): %d leaves then %d answered; %llu found beside the caller\n",
	              mode == PLAN_PV ? "pv" : "cover", leaves, got,
	              (unsigned long long)st.select_ahead_leaves);
	assert_true(st.select_ahead_leaves > stocked);
	coord_status_free(&st);
	free(keys);
	free(lw);
	free(la);
	free(r);
	twins_close(&t);
}

/*
 * Leases made ahead (coord_make_ahead): made after a round's acquires from the
 * stock the selection found, handed over (coord_ahead_export) only once
 * committed, then bound to the worker they are handed out to (coord_bind); a
 * lease made ahead and handed to nobody is no token's, released unused after
 * COORD_AHEAD_KEEP_MS (its positions free again) and at coord_close. A
 * process killed after it handed one out and before the commit that binds it
 * leaves it unbound: restarted, the coordinator keeps its positions from
 * everyone else, takes its results from any token, and binds it to that
 * token.
 */
static CoordOptions sliced_options(void)
{
	return (CoordOptions){.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                      .multipv = 3,
	                      .lease_seconds = 600,
	                      .plan = {.mode = PLAN_PV, .window = 30},
	                      .select_slice_ms = 60000};
}

/* An acquire of WANT after the stock was filled for it. */
enum { AHEAD_WANT = 4 };
static int stocked_acquire(Coord *c, CoordLease *l, const CoordWorker *w, int64_t now, char *err)
{
	if (coord_select_idle(c, 60000, err) < 0) return -1;
	return coord_acquire(c, l, w, AHEAD_WANT, now, err);
}

/* Two acquires 10 ms apart from now, each after the stock was filled, then
 * leases made ahead from a stock filled again, committed. */
static void make_ahead_after_two(Coord *c, CoordLease *l, int64_t now)
{
	char err[COORD_ERRLEN];
	assert_true(stocked_acquire(c, l, &A, now, err) > 0);
	coord_round_begin(c);
	assert_true(stocked_acquire(c, l, &B, now + 10, err) > 0);
	coord_round_begin(c);
	assert_int_equal(coord_select_idle(c, 60000, err), 0);
	assert_int_equal(coord_make_ahead(c, now + 10, err), 0);
	assert_int_equal(coord_commit(c, err), 0);
}

/* One lease made ahead handed over into l (none excluded: no spot checks
 * here): coord_ahead_export's count. */
static int export1(Coord *c, CoordLease *l)
{
	CoordAhead *a = malloc(sizeof *a);
	int n = a ? coord_ahead_export(c, a, 1) : -1;
	if (n == 1 && a->nexclude == 0) *l = a->lease;
	if (n == 1 && a->nexclude) n = -1;
	free(a);
	return n;
}

/* The child's part: up to an acquire answered with a lease made ahead, whose
 * binding is never committed (the process ends without a commit). Writes the
 * lease to fd; exits 0, or the number of the step that went wrong. */
static void ahead_child(const char *dir, int fd)
{
	char err[COORD_ERRLEN];
	BookDB *db;
	CoordOptions o = sliced_options();
	if (bookdb_open(&db, dir, NULL, err) < 0) _exit(2);
	Coord *c;
	if (coord_open(&c, db, &o, err) < 0) _exit(3);
	CoordLease *l = malloc(sizeof *l);
	if (!l) _exit(4);
	/* A, then B soon after: leases are made ahead from then on. */
	if (stocked_acquire(c, l, &A, T0, err) != AHEAD_WANT) _exit(5);
	coord_round_begin(c); /* the stock the selection keeps: AHEAD_WANT */
	if (coord_make_ahead(c, T0, err) < 0 || coord_commit(c, err) < 0) _exit(6);
	if (c->nahead != 0) _exit(7); /* one acquire alone: none */
	if (stocked_acquire(c, l, &B, T0 + 100, err) != AHEAD_WANT) _exit(8);
	coord_round_begin(c);
	if (coord_select_idle(c, 60000, err) < 0 || coord_make_ahead(c, T0 + 100, err) < 0)
		_exit(9);
	if (c->nahead != 1 || !coord_ahead_ok(c)) _exit(10);
	/* Not committed yet: not handed over. */
	if (export1(c, l) != 0) _exit(11);
	CoordLease *m = malloc(sizeof *m);
	if (!m || stocked_acquire(c, m, &A, T0 + 150, err) <= 0) _exit(12);
	if (coord_commit(c, err) < 0 || export1(c, l) != 1 || l->n != AHEAD_WANT) _exit(13);
	if (export1(c, m) != 0) _exit(14); /* once */
	for (int i = 0; i < l->n; i++)
		if (in_lease(m, l->pos[i].key)) _exit(15);
	if (coord_bind(c, l->id, &C, 8, T0 + 600200, T0 + 200, err) < 0) _exit(16);
	if (write(fd, l, sizeof *l) != (ssize_t)sizeof *l) _exit(17);
	_exit(0); /* killed: nothing after the acquire is committed */
}

/* A book in dir whose coordinator (ahead_child, forked) handed out a lease
 * made ahead, *lc, and died before the commit that binds it. */
static void crashed_with_unclaimed(char *dir, CoordLease *lc)
{
	synth_into(dir, seed_with_leaves(PLAN_PV, ts_seed("coord_lease_ahead") % 1000000));
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		ahead_child(dir, fd[1]);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], lc, sizeof *lc), (ssize_t)sizeof *lc);
	close(fd[0]);
	int wst;
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	if (!WIFEXITED(wst) || WEXITSTATUS(wst))
		fail_msg("the child failed at step %d", WEXITSTATUS(wst));
}

static void test_coord__leases_made_ahead_answer_before_a_commit_and_outlive_a_crash(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	CoordLease *lc = malloc(sizeof *lc), *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(lc);
	assert_non_null(l);
	assert_non_null(r);
	crashed_with_unclaimed(dir, lc);

	/* Restarted: A's and B's are live, the unbound one unclaimed; none made ahead. */
	CoordOptions o = sliced_options();
	BookDB *db;
	Coord *c = open_coord_with(&db, dir, &o);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 300), 0);
	assert_int_equal(st.leases_live, 3); /* A twice, B */
	assert_int_equal(st.leases_unclaimed, 1);
	assert_int_equal(st.leases_ahead, 0);
	coord_status_free(&st);
	/* Its positions go to nobody else. */
	for (int round = 0; round < 3; round++) {
		int n = acquire(c, l, &A, 8, T0 + 300);
		for (int i = 0; i < n; i++) assert_false(in_lease(lc, l->pos[i].key));
	}
	/* A body it refuses (a key not in it) claims it for nobody. */
	answer(r, &lc->pos[0], 3);
	r->key.hi ^= 1;
	assert_int_equal(coord_submit(c, lc->id, &C, r, 1, T0 + 400, err), COORD_EINVAL);
	assert_non_null(strstr(err, "is not in lease"));
	assert_int_equal(coord_status(c, &st, T0 + 400), 0);
	assert_int_equal(st.leases_unclaimed, 1);
	coord_status_free(&st);
	/* Its results come from any token: B's here, which it then belongs to. */
	answer(r, &lc->pos[0], 3);
	assert_int_equal(coord_submit(c, lc->id, &B, r, 1, T0 + 400, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(thought(db, lc->pos[0].key));
	answer(r, &lc->pos[1], 3);
	assert_int_equal(coord_submit(c, lc->id, &C, r, 1, T0 + 400, err), COORD_ENOLEASE);
	assert_non_null(strstr(err, "not this token's"));
	assert_int_equal(coord_submit(c, lc->id, &B, r, 1, T0 + 400, err), 1);
	assert_int_equal(coord_commit(c, err), 0);
	assert_int_equal(coord_status(c, &st, T0 + 400), 0);
	assert_int_equal(st.leases_unclaimed, 0);
	assert_true(st.leases_live >= 4); /* B's now, and the acquires' since */
	coord_status_free(&st);

	/* Made ahead and handed to nobody: no token's; released after
	 * COORD_AHEAD_KEEP_MS, its positions free again. */
	int64_t now = T0 + 1000;
	make_ahead_after_two(c, l, now);
	size_t made = c->nahead; /* one for each size asked since the last, that the stock fills */
	assert_true(made >= 1);
	/* One handed over and not handed out, one not handed over: both no
	 * token's; the first is the caller's to give back (below). */
	assert_int_equal(export1(c, l), 1);
	uint64_t id = l->id, id2 = made > 1 ? c->ahead[1] : 0;
	Key held = l->pos[0].key;
	assert_non_null(co_key_get(c, held));
	assert_int_equal(coord_submit(c, id, &A, r, 0, now + 20, err), COORD_ENOLEASE);
	assert_int_equal(coord_bind(c, id + 100000, &A, 8, now + 600000, now + 20, err),
	                 COORD_EINVAL);
	assert_int_equal(coord_status(c, &st, now + 20), 0);
	assert_int_equal(st.leases_ahead, made);
	uint64_t live = st.leases_live;
	coord_status_free(&st);
	assert_int_equal(coord_tick(c, now + 10 + COORD_AHEAD_KEEP_MS - 1, err), 0);
	assert_int_equal(c->nahead, made);
	assert_int_equal(coord_tick(c, now + 10 + COORD_AHEAD_KEEP_MS, err), 0);
	assert_int_equal(c->nahead, 1); /* the one handed over */
	assert_non_null(co_key_get(c, held));
	if (id2) assert_null(co_lease_get(c, id2));
	assert_int_equal(coord_ahead_release(c, id, now + 10 + COORD_AHEAD_KEEP_MS, err), 0);
	assert_int_equal(c->nahead, 0);
	assert_null(co_key_get(c, held));
	assert_null(co_lease_get(c, id));
	assert_int_equal(coord_status(c, &st, now + 10 + COORD_AHEAD_KEEP_MS), 0);
	assert_int_equal(st.leases_ahead, 0);
	assert_int_equal(st.ahead_released, made);
	assert_int_equal(st.leases_live, live);
	coord_status_free(&st);

	/* One left at a clean close is released too: not restored. */
	now += 10000;
	make_ahead_after_two(c, l, now);
	assert_true(c->nahead >= 1);
	/* One handed out and bound stays, bound, a live lease. */
	assert_int_equal(export1(c, l), 1);
	assert_int_equal(coord_bind(c, l->id, &A, 8, now + 600000, now + 10, err), 0);
	assert_int_equal(coord_commit(c, err), 0);
	assert_int_equal(coord_status(c, &st, now + 10), 0);
	assert_int_equal(st.acquired_ahead, 1);
	coord_status_free(&st);
	assert_int_equal(coord_status(c, &st, now + 10), 0);
	live = st.leases_live;
	coord_status_free(&st);
	assert_int_equal(coord_close(c, NULL, err), 0);
	bookdb_free(db);
	c = open_coord_with(&db, dir, &o);
	assert_int_equal(coord_status(c, &st, now + 20), 0);
	assert_int_equal(st.leases_live, live);
	assert_int_equal(st.leases_ahead, 0);
	assert_int_equal(st.leases_unclaimed, 0);
	coord_status_free(&st);
	answer(r, &l->pos[0], 3);
	assert_int_equal(coord_submit(c, l->id, &B, r, 1, now + 30, err), COORD_ENOLEASE);
	assert_int_equal(coord_submit(c, l->id, &A, r, 1, now + 30, err), 1);
	close_coord(c, db);
	free(lc);
	free(l);
	free(r);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The reserve of leases made ahead: acquires coming at a steady rate (ten a
 * second, of one position, each answered with a lease made ahead when one is
 * ready, as server/work_api.c does) get none beyond one for each while no
 * whole second is counted; once two are, as many wait as the acquires of
 * COORD_AHEAD_COVER_MS at that rate, so that a service thread held that long
 * leaves every acquire answered (docs/cluster.md, "Leases made ahead").
 */
static void test_coord__leases_made_ahead_keep_a_reserve_of_the_acquires_rate(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	synth_into(dir, seed_with_leaves(PLAN_PV, ts_seed("coord_reserve") % 1000000));
	CoordOptions o = sliced_options();
	BookDB *db;
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	assert_non_null(l);
	int from_ahead = 0;
	for (int i = 0; i < 30; i++) {
		int64_t now = T0 + i * 100;
		coord_round_begin(c);
		if (export1(c, l) == 1) {
			assert_int_equal(coord_bind(c, l->id, &A, 1, now + 600000, now, err), 0);
			from_ahead++;
		} else {
			assert_int_equal(coord_acquire(c, l, &A, 1, now, err), 1);
		}
		assert_int_equal(coord_select_idle(c, 60000, err), 0);
		assert_int_equal(coord_make_ahead(c, now, err), 0);
		assert_int_equal(coord_commit(c, err), 0);
		/* No whole second counted: one made for each acquire, no more. */
		if (i < 10) assert_true(c->nahead <= 1);
	}
	/* 20 acquires in the two whole seconds before. */
	size_t want = (20 * COORD_AHEAD_COVER_MS + 1999) / 2000;
	print_message("%zu leases made ahead waiting, %d acquires answered by one\n", c->nahead,
	              from_ahead);
	assert_int_equal(c->nahead, want);
	assert_true(from_ahead >= 25);
	/* A service held for the cover: every acquire of it answered. */
	for (size_t k = 0; k < want; k++) {
		assert_int_equal(export1(c, l), 1);
		assert_int_equal(coord_bind(c, l->id, &A, 1, T0 + 600000, T0 + 3000, err), 0);
	}
	assert_int_equal(c->nahead, 0);
	close_coord(c, db);
	free(l);
	ts_rmtree(dir);
	free(dir);
}

/* An unclaimed lease that expires was perhaps never handed out: its
 * positions go back to the queue without a failed try (three would set them
 * aside), where a bound lease's count one. */
static void test_coord__an_unclaimed_lease_expires_without_a_failed_try(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN];
	CoordLease *lc = malloc(sizeof *lc);
	assert_non_null(lc);
	crashed_with_unclaimed(dir, lc);
	CoordOptions o = sliced_options();
	BookDB *db;
	Coord *c = open_coord_with(&db, dir, &o);
	CoordStatus st;
	assert_int_equal(coord_status(c, &st, T0 + 300), 0);
	assert_int_equal(st.leases_unclaimed, 1);
	uint64_t live = st.leases_live;
	coord_status_free(&st);
	assert_true(live >= 1);
	int64_t later = T0 + 24LL * 3600 * 1000; /* past every lease's time */
	assert_int_equal(coord_tick(c, later, err), 0);
	assert_int_equal(coord_status(c, &st, later), 0);
	assert_int_equal(st.leases_unclaimed, 0);
	assert_int_equal(st.leases_live, 0);
	assert_int_equal(st.leases_expired, live + 1);
	coord_status_free(&st);
	for (int i = 0; i < lc->n; i++) {
		KeyState *ks = co_key_get(c, lc->pos[i].key);
		assert_non_null(ks);
		assert_int_equal(ks->where, WHERE_QUEUED);
		assert_int_equal(ks->tries, 0);
	}
	/* The bound leases' positions each count a try. */
	assert_int_equal(coord_status(c, &st, later), 0);
	assert_true(st.failed >= live);
	coord_status_free(&st);
	close_coord(c, db);
	free(lc);
	ts_rmtree(dir);
	free(dir);
}

static void test_coord__the_stock_selected_beside_the_caller_is_what_acquires_select(void **state)
{
	(void)state;
	under_both_policies("coord_ahead", ahead_run);
}

/* A commit by another writer (an entry of its own in the work database). */
static void foreign_commit(BookDB *db)
{
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "test", 4, "x", 1), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

/* Reopens twin 1 as a restarted process would: the book closed and opened
 * again, the coordinator with the snapshot at path. */
static Coord *reopen_sliced(Twins *t, const char *path, int mode, bool close_first,
                            double slice_ms);

static Coord *reopen_with_snapshot(Twins *t, const char *path, int mode, bool close_first)
{
	return reopen_sliced(t, path, mode, close_first, -1);
}

/* The same with selection in slices of slice_ms (< 0: whole searches). */
static Coord *reopen_sliced(Twins *t, const char *path, int mode, bool close_first, double slice_ms)
{
	char err[COORD_ERRLEN];
	if (close_first) {
		int rc = coord_close(t->c[1], NULL, err);
		if (rc < 0) fail_msg("coord_close: %s", err);
		bookdb_free(t->db[1]);
		char *cerr = NULL;
		if (g_compact_between &&
		    ts_runf(NULL, &cerr, "%s compact %s", ts_joseki(), t->dir[1]) != 0)
			fail_msg("compact: %s", cerr ? cerr : "");
		free(cerr);
	}
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = mode, .window = 30},
	                  .select_slice_ms = slice_ms,
	                  .snapshot = path};
	t->c[1] = open_coord_with(&t->db[1], t->dir[1], &o);
	return t->c[1];
}

/* Twins over one book under mode, twin 1 opened again (as a new process)
 * with its snapshot at path, in its book's directory (none there yet), and
 * the selection in slices of slice_ms (< 0: whole searches). */
static Coord *twins_with_snapshot(Twins *t, char *path, size_t len, int mode,
                                  unsigned long long seed, double slice_ms)
{
	twins_open(t, mode, seed, -1);
	snprintf(path, len, "%s/selector.snap", t->dir[1]);
	return reopen_sliced(t, path, mode, true, slice_ms);
}

/*
 * The selector's snapshot (bookgen/snapshot.h): a coordinator closed and
 * opened again every few rounds over its book leases the same positions in
 * the same order as its twin that never stops, under both policies; some
 * restarts fall between an acquire and its results (the lease is restored
 * from the book, its positions leased in the restored selector). Every
 * restart is restored from the snapshot, which is then gone from the disk.
 * Every other restart comes after a compaction of the book (another file, the
 * same positions): the snapshot carries over (bookdb_stamp_carry) and says so.
 */
static void snapshot_run(int mode, unsigned long long seed)
{
	char err[COORD_ERRLEN];
	Twins t;
	char path[4096];
	twins_with_snapshot(&t, path, sizeof path, mode, seed, -1);
	const char *note;
	/* The first open finds none, and says nothing. */
	CoordLease *lw = malloc(sizeof *lw), *ls = malloc(sizeof *ls);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(lw);
	assert_non_null(ls);
	assert_non_null(r);
	int leaves = 0, restarts = 0, mid = 0, compacted = 0;
	for (int round = 0; round < 40; round++) {
		int n = acquire(t.c[0], lw, &A, 6, T0);
		int m = acquire(t.c[1], ls, &A, 6, T0);
		assert_int_equal(m, n);
		for (int i = 0; i < n; i++) {
			assert_true(key_equal(ls->pos[i].key, lw->pos[i].key));
			assert_string_equal(ls->pos[i].sfen, lw->pos[i].sfen);
		}
		if (n == 0) break;
		leaves += n;
		bool restart = round % 4 == 3, between = round % 8 == 3;
		g_compact_between = round % 16 >= 8;
		if (restart && between) {
			/* Closed with the lease out: the restarted one takes its results. */
			reopen_with_snapshot(&t, path, mode, true);
			assert_true(coord_snapshot_restored(t.c[1], &note, NULL));
			assert_false(access(path, F_OK) == 0);
			assert_int_equal(strstr(note, SNAP_CARRIED) != NULL, g_compact_between);
			restarts++;
			mid++;
			compacted += g_compact_between;
		}
		for (int i = 0; i < n; i++) {
			answer(r, &lw->pos[i], 4);
			assert_int_equal(coord_submit(t.c[0], lw->id, &A, r, 1, T0, err), 1);
			answer(r, &ls->pos[i], 4);
			assert_int_equal(coord_submit(t.c[1], ls->id, &A, r, 1, T0, err), 1);
		}
		assert_int_equal(coord_commit(t.c[0], err), 0);
		assert_int_equal(coord_commit(t.c[1], err), 0);
		if (restart && !between) {
			reopen_with_snapshot(&t, path, mode, true);
			if (!coord_snapshot_restored(t.c[1], &note, NULL))
				fail_msg("not restored: %s", note);
			assert_false(access(path, F_OK) == 0);
			assert_int_equal(strstr(note, SNAP_CARRIED) != NULL, g_compact_between);
			restarts++;
			compacted += g_compact_between;
		}
	}
	g_compact_between = false;
	print_message("snapshot (%s): %d leaves, %d restarts (%d with a lease out, %d after a "
	              "compaction)\n",
	              mode == PLAN_PV ? "pv" : "cover", leaves, restarts, mid, compacted);
	assert_true(leaves > 60);
	assert_true(restarts >= 5);
	assert_true(compacted >= 2);
	free(lw);
	free(ls);
	free(r);
	twins_close(&t);
}

static void test_coord__a_restart_from_the_snapshot_leases_what_an_unbroken_run_does(void **state)
{
	(void)state;
	under_both_policies("coord_snapshot", snapshot_run);
}

/*
 * The same with the selection as the service runs it: in slices, with a
 * stock of leaves selected beside the caller, a search often suspended when
 * the coordinator is closed. Every restart is restored, no position is
 * leased twice or once thought (the stock, never handed out, is selected
 * again after the restart), and every lease is answered. Three restarts
 * come while a search is suspended (an acquire answered "busy"): the search
 * is stopped and the state saved (before, the stop left SEL_ESTOPPED in the
 * selector's error and the close failed: "in no state to be saved").
 */
static void snapshot_sliced_run(int mode, unsigned long long seed)
{
	char err[COORD_ERRLEN];
	Twins t;
	char path[4096];
	Coord *c = twins_with_snapshot(&t, path, sizeof path, mode, seed, 0.05);
	const char *note;
	/* Rounds until LEAVES leases came (a loaded machine gives more busy
	 * answers: more rounds, at most MAXR). */
	enum { LEAVES = 90, MAXR = 600, WANT = 6 };
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	Key *keys = malloc((LEAVES + WANT) * sizeof *keys);
	assert_non_null(l);
	assert_non_null(r);
	assert_non_null(keys);
	size_t nkeys = 0;
	int restarts = 0, busy = 0, closed_busy = 0;
	for (int round = 0; round < MAXR && nkeys < LEAVES; round++) {
		coord_round_begin(c);
		int m = coord_acquire(c, l, &A, WANT, T0, err);
		if (m < 0) fail_msg("acquire: %s", err);
		if (m == 0) busy++;
		/* A few restarts while a search is suspended: it is stopped, and
		 * what it had found is saved. */
		if (m == 0 && closed_busy < 3 && coord_select_busy(c)) {
			closed_busy++;
			c = reopen_sliced(&t, path, mode, true, 0.05);
			if (!coord_snapshot_restored(c, &note, NULL))
				fail_msg("not restored after a stopped search: %s", note);
			restarts++;
			continue;
		}
		coord_select_ahead(c); /* the stock fills while the caller commits */
		assert_int_equal(coord_commit(c, err), 0);
		for (int i = 0; i < m; i++) {
			Key k = l->pos[i].key;
			assert_false(thought(t.db[1], k));
			for (size_t j = 0; j < nkeys; j++) assert_false(key_equal(keys[j], k));
			keys[nkeys++] = k;
			answer(r, &l->pos[i], 3);
			assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
		}
		coord_select_ahead(c);
		assert_int_equal(coord_commit(c, err), 0);
		usleep(2000);
		if (round % 3 == 2) {
			c = reopen_sliced(&t, path, mode, true, 0.05);
			if (!coord_snapshot_restored(c, &note, NULL))
				fail_msg("not restored: %s", note);
			restarts++;
		}
	}
	print_message("snapshot in slices (%s): %zu leaves, %d restarts (%d closed with a search "
	              "under way), %d busy answers\n",
	              mode == PLAN_PV ? "pv" : "cover", nkeys, restarts, closed_busy, busy);
	assert_true(nkeys >= LEAVES);
	assert_true(restarts >= 4);
	assert_true(closed_busy >= 1);
	free(keys);
	free(l);
	free(r);
	twins_close(&t);
}

static void test_coord__restarts_from_the_snapshot_in_slices_lease_nothing_twice(void **state)
{
	(void)state;
	under_both_policies("coord_snapshot_sliced", snapshot_sliced_run);
}

/* Twin 1 as a crashed process leaves it: everything committed, no snapshot
 * written at the stop (coord_free writes none), the book closed. */
static void crash(Twins *t)
{
	char err[COORD_ERRLEN];
	assert_int_equal(coord_commit(t->c[1], err), 0);
	coord_free(t->c[1]);
	bookdb_free(t->db[1]);
	t->c[1] = NULL;
	t->db[1] = NULL;
}

/* Rounds of one acquire each, every position answered; the keys handed
 * out appended to keys (none twice, none thought). Returns the results. */
static int answer_rounds(Coord *c, BookDB *db, int rounds, Key *keys, size_t *nkeys)
{
	char err[COORD_ERRLEN];
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(l);
	assert_non_null(r);
	int results = 0;
	for (int round = 0; round < rounds; round++) {
		int m = acquire(c, l, &A, 4, T0);
		for (int i = 0; i < m; i++) {
			Key k = l->pos[i].key;
			assert_false(thought(db, k));
			for (size_t j = 0; j < *nkeys; j++) assert_false(key_equal(keys[j], k));
			keys[(*nkeys)++] = k;
			answer(r, &l->pos[i], 3);
			assert_int_equal(coord_submit(c, l->id, &A, r, 1, T0, err), 1);
			results++;
		}
		assert_int_equal(coord_commit(c, err), 0);
	}
	free(l);
	free(r);
	return results;
}

/*
 * A crash after a checkpoint (coord_checkpoint: a child process writes the
 * snapshot while the coordinator goes on; each commit after it keeps its
 * results' keys in the book): the next start reads the checkpoint back and
 * gives the selector every result stored since, one for one; the lease that
 * was out lives and takes its results; nothing is leased twice or once
 * thought. A commit by another writer after the checkpoint makes it stale.
 */
static void checkpoint_run(int mode, unsigned long long seed)
{
	char err[COORD_ERRLEN];
	Twins t;
	char path[4096];
	Coord *c = twins_with_snapshot(&t, path, sizeof path, mode, seed, -1);
	const char *note;
	Key *keys = malloc(2000 * sizeof *keys);
	assert_non_null(keys);
	size_t nkeys = 0;
	answer_rounds(c, t.db[1], 8, keys, &nkeys);
	CoordLease *out = malloc(sizeof *out);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(out);
	assert_non_null(r);
	int nheld = acquire(c, out, &A, 3, T0);
	assert_true(nheld > 0);
	assert_int_equal(coord_checkpoint(c, T0, err), 1);
	/* While the child lives, the selector's changes are held (copies on
	 * write spared): the results kept, then made once it is gone. */
	assert_true(c->sel->held);
	for (int i = 0; i < nheld; i++) {
		keys[nkeys++] = out->pos[i].key;
		answer(r, &out->pos[i], 3);
		assert_int_equal(coord_submit(c, out->id, &A, r, 1, T0, err), 1);
	}
	assert_true(c->sel->ndefer >= (size_t)nheld);
	assert_int_equal(coord_commit(c, err), 0);
	assert_int_equal(coord_checkpoint_wait(c), 0);
	assert_false(c->sel->held);
	assert_int_equal(c->sel->ndefer, 0);
	for (int i = 0; i < nheld; i++) assert_true(sel_is_thought(c->sel, out->pos[i].key));
	assert_int_equal(access(path, F_OK), 0);
	int after = nheld + answer_rounds(c, t.db[1], 8, keys, &nkeys);
	int nout = acquire(c, out, &A, 3, T0);
	assert_true(nout > 0);
	for (int i = 0; i < nout; i++) keys[nkeys++] = out->pos[i].key;
	crash(&t);
	c = reopen_with_snapshot(&t, path, mode, false);
	if (!coord_snapshot_restored(c, &note, NULL)) fail_msg("not restored: %s", note);
	print_message("checkpoint (%s): %s (%d stored after it)\n",
	              mode == PLAN_PV ? "pv" : "cover", note, after);
	unsigned long long commits, given;
	assert_int_equal(sscanf(strstr(note, "checkpoint"),
	                        "checkpoint %llu commits before the last: %llu results", &commits,
	                        &given),
	                 2);
	assert_int_equal(given, (unsigned long long)after);
	assert_true(commits >= 8);
	assert_true(access(path, F_OK) != 0);
	/* The lease out takes its results; the selection goes on. */
	for (int i = 0; i < nout; i++) {
		answer(r, &out->pos[i], 3);
		assert_int_equal(coord_submit(c, out->id, &A, r, 1, T0, err), 1);
	}
	assert_int_equal(coord_commit(c, err), 0);
	assert_true(answer_rounds(c, t.db[1], 8, keys, &nkeys) > 0);
	/* Another checkpoint, a commit by another writer after it, a crash: stale. */
	assert_int_equal(coord_checkpoint(c, T0, err), 1);
	assert_int_equal(coord_checkpoint_wait(c), 0);
	/* Nothing committed since: the next one is not needed, and not begun. */
	CoordStatus cs;
	assert_int_equal(coord_checkpoint(c, T0, err), 0);
	assert_true(c->ckpt_pid <= 0);
	assert_int_equal(coord_status(c, &cs, T0), 0);
	assert_int_equal(cs.checkpoints_unchanged, 1);
	coord_status_free(&cs);
	answer_rounds(c, t.db[1], 2, keys, &nkeys);
	crash(&t);
	assert_int_equal(bookdb_open(&t.db[1], t.dir[1], NULL, err), 0);
	foreign_commit(t.db[1]);
	bookdb_free(t.db[1]);
	c = reopen_with_snapshot(&t, path, mode, false);
	assert_false(coord_snapshot_restored(c, &note, NULL));
	print_message("checkpoint, then another writer: %s\n", note);
	assert_non_null(strstr(note, "not by the coordinator alone"));
	assert_true(answer_rounds(c, t.db[1], 2, keys, &nkeys) > 0);
	free(out);
	free(r);
	free(keys);
	twins_close(&t);
}

static void test_coord__a_crash_after_a_checkpoint_restarts_from_it_with_its_journal(void **state)
{
	(void)state;
	under_both_policies("coord_checkpoint", checkpoint_run);
}

/*
 * A snapshot that does not fit the start is refused with the reason, the
 * coordinator starts from scratch and works: the book written since by
 * another writer; a byte of it changed; a run with another policy; another
 * book file. The refused file is removed.
 */
static void test_coord__a_snapshot_that_does_not_fit_is_refused_and_said(void **state)
{
	(void)state;
	char err[COORD_ERRLEN];
	Twins t;
	char path[4096];
	twins_with_snapshot(&t, path, sizeof path, PLAN_PV,
	                    ts_seed("coord_snapshot_refused") % 1000000, -1);
	const char *note;
	seed_book(t.c[1], 5);
	/* Written since: another writer's commit. */
	reopen_with_snapshot(&t, path, PLAN_PV, true);
	assert_true(coord_snapshot_restored(t.c[1], &note, NULL));
	assert_int_equal(coord_close(t.c[1], NULL, err), 0);
	assert_true(access(path, F_OK) == 0);
	foreign_commit(t.db[1]);
	bookdb_free(t.db[1]);
	reopen_with_snapshot(&t, path, PLAN_PV, false);
	assert_false(coord_snapshot_restored(t.c[1], &note, NULL));
	print_message("written since: %s\n", note);
	assert_non_null(strstr(note, "written since"));
	assert_false(access(path, F_OK) == 0);
	seed_book(t.c[1], 2); /* works from scratch */
	/* A byte changed in the middle, and in the header. */
	long offs[] = {-1, 20};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(coord_close(t.c[1], NULL, err), 0);
		bookdb_free(t.db[1]);
		long size = (long)ts_file_size(path);
		ts_flip_byte(path, offs[i] < 0 ? size / 2 : offs[i], 0x40);
		reopen_with_snapshot(&t, path, PLAN_PV, false);
		assert_false(coord_snapshot_restored(t.c[1], &note, NULL));
		print_message("damaged: %s\n", note);
		assert_non_null(strstr(note, "damaged"));
		assert_false(access(path, F_OK) == 0);
		seed_book(t.c[1], 1);
	}
	/* Another policy. */
	assert_int_equal(coord_close(t.c[1], NULL, err), 0);
	bookdb_free(t.db[1]);
	reopen_with_snapshot(&t, path, PLAN_COVER, false);
	assert_false(coord_snapshot_restored(t.c[1], &note, NULL));
	print_message("other run: %s\n", note);
	/* Which option differs, with the value the run that wrote it had. */
	assert_non_null(strstr(note, "of a run with --select pv (this one: cover)"));
	/* Another book: the snapshot copied beside a copy of the book. */
	assert_int_equal(coord_close(t.c[1], NULL, err), 0);
	bookdb_free(t.db[1]);
	t.c[1] = NULL;
	t.db[1] = NULL;
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "cp %s/data.mdb %s/data.mdb && cp %s %s/selector.snap", t.dir[1],
	         t.dir[0], path, t.dir[0]);
	close_coord(t.c[0], t.db[0]);
	assert_int_equal(system(cmd), 0);
	char path0[4096];
	snprintf(path0, sizeof path0, "%s/selector.snap", t.dir[0]);
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 600,
	                  .plan = {.mode = PLAN_COVER, .window = 30},
	                  .select_slice_ms = -1,
	                  .snapshot = path0};
	t.c[0] = open_coord_with(&t.db[0], t.dir[0], &o);
	assert_false(coord_snapshot_restored(t.c[0], &note, NULL));
	print_message("another book: %s\n", note);
	assert_non_null(strstr(note, "another book"));
	twins_close(&t);
}

/* The change log of the book in dir switched on (as a first minimax run
 * leaves it). The book must not be open in this process. */
static void changes_on(const char *dir)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	BookTxn *txn;
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_changes_enable(txn), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
}

/* Rounds of the twins in step: each acquire the same positions, each
 * answered, none thought before. Returns the positions leased. */
static int in_step(Twins *t, int rounds)
{
	char err[COORD_ERRLEN];
	CoordLease *l[2] = {malloc(sizeof **l), malloc(sizeof **l)};
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(l[0]);
	assert_non_null(l[1]);
	assert_non_null(r);
	int leaves = 0;
	for (int round = 0; round < rounds; round++) {
		int n = acquire(t->c[0], l[0], &A, 6, T0);
		assert_int_equal(acquire(t->c[1], l[1], &A, 6, T0), n);
		for (int i = 0; i < n; i++) {
			assert_true(key_equal(l[1]->pos[i].key, l[0]->pos[i].key));
			assert_false(thought(t->db[1], l[1]->pos[i].key));
		}
		for (int w = 0; w < 2; w++) {
			for (int i = 0; i < n; i++) {
				answer(r, &l[w]->pos[i], 4);
				assert_int_equal(coord_submit(t->c[w], l[w]->id, &A, r, 1, T0, err),
				                 1);
			}
			assert_int_equal(coord_commit(t->c[w], err), 0);
		}
		leaves += n;
	}
	free(l[0]);
	free(l[1]);
	free(r);
	return leaves;
}

/* Twin 1 closed (its snapshot written) and its book with it. */
static void close_twin(Twins *t)
{
	char err[COORD_ERRLEN];
	assert_int_equal(coord_close(t->c[1], NULL, err), 0);
	bookdb_free(t->db[1]);
	t->c[1] = NULL;
	t->db[1] = NULL;
}

/* Another writer between twin 1's runs: twin 1 closed, its book opened
 * (*db) with a write transaction begun (returned). */
static BookTxn *other_writer_begins(Twins *t, BookDB **db)
{
	char err[BOOKDB_ERRLEN];
	BookTxn *txn;
	close_twin(t);
	assert_int_equal(bookdb_open(db, t->dir[1], NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, *db, true), 0);
	return txn;
}

/* ... and ends (txn committed, the book closed); twin 1 opened again with
 * its snapshot at path, which must be restored. Returns its note. */
static const char *other_writer_ends(Twins *t, BookDB *db, BookTxn *txn, const char *path,
                                     const char *what)
{
	const char *note;
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	reopen_with_snapshot(t, path, PLAN_PV, false);
	if (!coord_snapshot_restored(t->c[1], &note, NULL)) fail_msg("not restored: %s", note);
	print_message("%s: %s\n", what, note);
	return note;
}

/* A lease of one position from twin 1, answered; its key. */
static Key lease_one(Twins *t)
{
	char err[COORD_ERRLEN];
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	assert_non_null(l);
	assert_non_null(r);
	assert_int_equal(acquire(t->c[1], l, &A, 1, T0), 1);
	Key k = l->pos[0].key;
	answer(r, &l->pos[0], 4);
	assert_int_equal(coord_submit(t->c[1], l->id, &A, r, 1, T0, err), 1);
	assert_int_equal(coord_commit(t->c[1], err), 0);
	free(l);
	free(r);
	return k;
}

/*
 * Whether the selection can reach k in twin 1's book from the start position
 * without passing through avoid: k is a thought position reached by legal
 * moves from thought positions, avoid never entered, or a legal move after
 * one. A position a few moves under avoid is often one of those by another
 * order of the same moves (a transposition): a lease of it says nothing of
 * whether the search went through avoid.
 */
static bool reached_without(Twins *t, Key avoid, Key k)
{
	BookTxn *txn;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	Move mv[MOVEGEN_MAX];
	KeyMap seen;
	size_t n = 0, cap = 1024;
	Key *todo = malloc(cap * sizeof *todo);
	assert_non_null(rec);
	assert_non_null(pos);
	assert_non_null(todo);
	keymap_init_set(&seen, false);
	assert_int_equal(bookdb_txn_begin(&txn, t->db[1], false), 0);
	pos_set_startpos(pos);
	todo[n++] = pos_key(pos);
	assert_int_equal(keymap_add(&seen, todo[0], NULL), 1);
	bool found = false;
	for (size_t i = 0; i < n && !found; i++) {
		found = key_equal(todo[i], k);
		if (found || key_equal(todo[i], avoid)) continue;
		int rc = bookdb_get(rec, txn, todo[i]);
		if (rc == BOOKDB_ENOTFOUND || (rc == 0 && !(rec->flags & BOOKDB_REC_THOUGHT)))
			continue; /* a leaf */
		assert_int_equal(rc, 0);
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		int nl = movegen_legal(pos, mv);
		for (int j = 0; j < nl; j++) {
			Key c = pos_key_after(pos, mv[j]);
			int added = keymap_add(&seen, c, NULL);
			assert_true(added >= 0);
			if (!added) continue;
			if (n == cap) {
				todo = realloc(todo, (cap *= 2) * sizeof *todo);
				assert_non_null(todo);
			}
			todo[n++] = c;
		}
	}
	bookdb_txn_abort(txn);
	keymap_free(&seen);
	free(todo);
	free(pos);
	free(rec);
	return found;
}

/* Whether k, one of the n positions under avoid in keys, can be reached in
 * twin 1's book only through avoid. */
static bool only_under(Twins *t, Key avoid, Key k, const Key *keys, int n)
{
	return key_in(k, keys, n) && !reached_without(t, avoid, k);
}

/*
 * Whether the book holds neither the position m leads to from pos, nor any
 * position a legal move after it, nor any a legal move after one of its
 * first nfirst children (in the order of its legal moves): given a record
 * of its first nfirst moves, it is then valued by that record and the
 * results under it alone (a position of the book a legal move after one of
 * them would be a move of its too, by transposition).
 */
static bool out_of_book(BookTxn *txn, const Position *pos, Move m, int nfirst)
{
	Position *p = malloc(2 * sizeof *p);
	Move mv[MOVEGEN_MAX], cm[MOVEGEN_MAX];
	const uint8_t *val;
	size_t len;
	assert_non_null(p);
	p[0] = *pos;
	pos_do_move(&p[0], m);
	bool out = bookdb_get_raw(&val, &len, txn, pos_key(&p[0])) == BOOKDB_ENOTFOUND;
	int n = out ? movegen_legal(&p[0], mv) : 0;
	for (int i = 0; i < n && out; i++) {
		p[1] = p[0];
		pos_do_move(&p[1], mv[i]);
		out = bookdb_get_raw(&val, &len, txn, pos_key(&p[1])) == BOOKDB_ENOTFOUND;
		int nc = out && i < nfirst ? movegen_legal(&p[1], cm) : 0;
		for (int j = 0; j < nc && out; j++)
			out = bookdb_get_raw(&val, &len, txn, pos_key_after(&p[1], cm[j])) ==
			      BOOKDB_ENOTFOUND;
	}
	free(p);
	return out;
}

/* Whether some record of the book stores a move to k: the graph then holds
 * k already (a leaf of that record's), new to the book or not. */
static bool stored_as_move(BookTxn *txn, Key k)
{
	BookIter *it;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_non_null(rec);
	assert_non_null(pos);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key key;
	const uint8_t *val;
	size_t len;
	bool found = false;
	int rc;
	while (!found && (rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		for (int i = 0; i < rec->nmoves && !found; i++)
			found = key_equal(pos_key_after(pos, rec->moves[i].move), k);
	}
	assert_true(found || rc == 0);
	bookdb_iter_free(it);
	free(pos);
	free(rec);
	return found;
}

/* Every move of key's record valued eval (the record must be there). */
static void revalue(BookTxn *txn, BookRecord *rec, Key key, int eval)
{
	assert_int_equal(bookdb_get(rec, txn, key), 0);
	for (int i = 0; i < rec->nmoves; i++) rec->moves[i].eval = (int16_t)eval;
	assert_int_equal(bookdb_put(txn, key, rec), 0);
}

/* Whether the book holds its change log for a snapshot (bookdb_changes_hold:
 * its meta entry). */
static bool held(BookTxn *txn)
{
	const void *v;
	size_t vl;
	return bookdb_kv_get(&v, &vl, txn, BOOKDB_META, "changes_hold", 12) == 0;
}

/* `joseki minimax DIR --quiet`, which must succeed. */
static void minimax_quiet(const char *dir)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s minimax %s --quiet", ts_joseki(), dir);
	if (rc != 0) fail_msg("minimax: %s", err ? err : "");
	free(out);
	free(err);
}

/* The evaluation of a move as think stores it. */
static BookMove engine_move(Move m, int eval)
{
	return (BookMove){.move = m,
	                  .flags = BOOKDB_MOVE_EVAL,
	                  .source = BOOKDB_SOURCE_ENGINE,
	                  .eval = (int16_t)eval,
	                  .depth = 10,
	                  .nodes = 1000};
}

/*
 * Another writer between two runs (sel_catch_up). Twin 1 stops; twin 0 goes
 * on for a round (the round twin 1 would have leased next: they went in
 * step), and another writer puts that round's records into twin 1's book;
 * twin 1 starts again from its snapshot, brought up to date from the book's
 * change log (before, the snapshot was refused), and never leases those
 * positions (without the catch-up it would lease them again). (It does not
 * lease exactly what twin 0 does from then on: its graph is built in
 * another order, and ties between equal values break otherwise.) A record
 * of the graph changed (the root given a move to a new position, valued
 * +3000): the next lease is that position. A thought position the graph
 * has never met, one move (not stored) from the root, with values that make
 * it the root's best move (and no position of the book a move after it or
 * after the children its record stores, which would be a move of theirs by
 * transposition): the next leases are under it (it was linked to its parent
 * in the graph). Its values turned (the root avoids it: no lease under it,
 * but for a position another line of the book reaches too) and turned back
 * (the root's best again, which the graph's bounds said otherwise: leases
 * under it; without the bounds cleared, none). A minimax run between (which
 * writes no change the selector reads) leaves the snapshot usable, and so
 * does one after another writer's write (the snapshot's hold on the log kept
 * its entry from the minimax run's consume); writes the log could not hold
 * (an overflow) make it refused, with the reason.
 */
static void test_coord__a_snapshot_catches_up_with_another_writer(void **state)
{
	(void)state;
	char err[COORD_ERRLEN], want[200], path[4096];
	Twins t;
	const char *note;
	twins_open(&t, PLAN_PV, ts_seed("coord_catch_up") % 1000000, -1);
	close_twin(&t);
	changes_on(t.dir[1]);
	snprintf(path, sizeof path, "%s/selector.snap", t.dir[1]);
	reopen_with_snapshot(&t, path, PLAN_PV, false);
	assert_true(in_step(&t, 6) > 6);
	/* Twin 0's round, written into twin 1's book by another writer. */
	CoordLease *l = malloc(sizeof *l);
	CoordResult *r = malloc(sizeof *r);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	Key *keys = malloc(200 * sizeof *keys);
	assert_non_null(l);
	assert_non_null(r);
	assert_non_null(rec);
	assert_non_null(pos);
	assert_non_null(keys);
	BookDB *db1;
	BookTxn *t1 = other_writer_begins(&t, &db1), *t0;
	int n = acquire(t.c[0], l, &A, 6, T0);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		answer(r, &l->pos[i], 4);
		assert_int_equal(coord_submit(t.c[0], l->id, &A, r, 1, T0, err), 1);
	}
	assert_int_equal(coord_commit(t.c[0], err), 0);
	assert_int_equal(bookdb_txn_begin(&t0, t.db[0], false), 0);
	for (int i = 0; i < n; i++) {
		const uint8_t *val;
		size_t len;
		assert_int_equal(bookdb_get_raw(&val, &len, t0, l->pos[i].key), 0);
		assert_int_equal(bookdb_put_raw(t1, l->pos[i].key, val, len), 0);
	}
	bookdb_txn_abort(t0);
	note = other_writer_ends(&t, db1, t1, path, "another writer's round");
	snprintf(want, sizeof want, "caught up with the book: %d positions written since, ", n);
	assert_non_null(strstr(note, want));
	/* Those positions are thought: never leased again. */
	size_t nkeys = 0;
	for (int i = 0; i < n; i++) keys[nkeys++] = l->pos[i].key;
	assert_true(answer_rounds(t.c[1], t.db[1], 8, keys, &nkeys) > 8);
	/* A record of the graph changed: the root given a move it did not
	 * store, to a position the book does not hold (nor any a move after
	 * it or after its first three children) and no record stores a move
	 * to (the graph has not met it), valued +3000. */
	Move mv[MOVEGEN_MAX], fresh[2];
	int nfresh = 0;
	t1 = other_writer_begins(&t, &db1);
	pos_set_startpos(pos);
	assert_int_equal(bookdb_get(rec, t1, pos_key(pos)), 0);
	int nl = movegen_legal(pos, mv);
	for (int i = 0; i < nl && nfresh < 2; i++) {
		bool stored = false;
		for (int k = 0; k < rec->nmoves; k++) stored |= rec->moves[k].move == mv[i];
		if (!stored && out_of_book(t1, pos, mv[i], 3) &&
		    !stored_as_move(t1, pos_key_after(pos, mv[i])))
			fresh[nfresh++] = mv[i];
	}
	assert_int_equal(nfresh, 2);
	rec->moves[rec->nmoves++] = engine_move(fresh[0], 3000);
	assert_int_equal(bookdb_put(t1, pos_key(pos), rec), 0);
	note = other_writer_ends(&t, db1, t1, path, "a record of the graph changed");
	assert_non_null(strstr(note, "1 positions written since, 1 of them in the graph, 0 new"));
	assert_true(key_equal(lease_one(&t), pos_key_after(pos, fresh[0])));
	/* A thought position new to the graph, one move from the root by a
	 * move the root's record does not store, whose moves all lose 5000
	 * for its mover: the root's best move. */
	t1 = other_writer_begins(&t, &db1);
	pos_do_move(pos, fresh[1]);
	bookdb_record_init(rec, pos);
	rec->flags = BOOKDB_REC_THOUGHT;
	rec->think_depth = 10;
	nl = movegen_legal(pos, mv);
	rec->nmoves = 3;
	/* Its children, and every position a legal move after them. */
	Key near[3 * (MOVEGEN_MAX + 1)];
	int nnear = 0;
	for (int i = 0; i < 3; i++) {
		rec->moves[i] = engine_move(mv[i], -5000);
		near[nnear++] = pos_key_after(pos, mv[i]);
	}
	for (int i = 0; i < 3; i++) {
		Position *c = malloc(sizeof *c);
		Move cm[MOVEGEN_MAX];
		assert_non_null(c);
		*c = *pos;
		pos_do_move(c, mv[i]);
		int ncm = movegen_legal(c, cm);
		for (int j = 0; j < ncm; j++) near[nnear++] = pos_key_after(c, cm[j]);
		free(c);
	}
	assert_int_equal(bookdb_put(t1, pos_key(pos), rec), 0);
	note = other_writer_ends(&t, db1, t1, path, "a position new to the graph");
	assert_non_null(strstr(note, "1 positions written since, 0 of them in the graph, 1 new"));
	assert_true(key_in(lease_one(&t), near, 3));
	assert_true(key_in(lease_one(&t), near, nnear)); /* under it still */
	/* Its moves now all win 5000 for its mover: the root avoids it (a
	 * lease of one of those positions by another order of moves is not
	 * under it). */
	t1 = other_writer_begins(&t, &db1);
	revalue(t1, rec, pos_key(pos), 5000);
	other_writer_ends(&t, db1, t1, path, "its values turned");
	for (int round = 0; round < 3; round++)
		assert_false(only_under(&t, pos_key(pos), lease_one(&t), near, nnear));
	/* It and its children thought since (a root's move off the PV now)
	 * turned back to lose 5000 for its mover whatever it plays: the root's
	 * best move again, which the graph's bounds (of it and of the root)
	 * said otherwise. */
	t1 = other_writer_begins(&t, &db1);
	int nthought = 0;
	for (int i = 0; i < 3; i++) {
		const uint8_t *val;
		size_t len;
		if (bookdb_get_raw(&val, &len, t1, near[i]) != 0) continue;
		revalue(t1, rec, near[i], 5000);
		nthought++;
	}
	assert_true(nthought >= 1); /* the leases above: one or two of its children */
	revalue(t1, rec, pos_key(pos), -5000);
	note = other_writer_ends(&t, db1, t1, path, "turned back");
	snprintf(want, sizeof want, "%d positions written since, %d of them in the graph",
	         nthought + 1, nthought + 1);
	assert_non_null(strstr(note, want));
	assert_true(key_in(lease_one(&t), near, nnear));
	/* A minimax run between: still good. */
	close_twin(&t);
	minimax_quiet(t.dir[1]);
	reopen_with_snapshot(&t, path, PLAN_PV, false);
	if (!coord_snapshot_restored(t.c[1], &note, NULL))
		fail_msg("not restored after a minimax run: %s", note);
	print_message("after a minimax run: %s\n", note);
	assert_non_null(strstr(note, "0 positions written since"));
	/* Another writer's record, then a minimax run that consumes the log:
	 * the snapshot's hold kept the entry. (The hold: set at the stop,
	 * dropped at the start.) */
	t1 = other_writer_begins(&t, &db1);
	assert_true(held(t1));
	revalue(t1, rec, pos_key(pos), -2900);
	assert_int_equal(bookdb_txn_commit(t1), 0);
	bookdb_free(db1);
	minimax_quiet(t.dir[1]);
	reopen_with_snapshot(&t, path, PLAN_PV, false);
	if (!coord_snapshot_restored(t.c[1], &note, NULL))
		fail_msg("not restored after a write and a minimax run: %s", note);
	print_message("written, then a minimax run: %s\n", note);
	assert_int_equal(bookdb_txn_begin(&t1, t.db[1], false), 0);
	assert_false(held(t1));
	bookdb_txn_abort(t1);
	assert_non_null(strstr(note, "1 positions written since, 1 of them in the graph"));
	/* Writes past the log's room (it overflows: writes go unlogged), then a
	 * minimax run: refused, with the reason. */
	close_twin(&t);
	BookDBOptions small = {.changes_max = 2};
	assert_int_equal(bookdb_open(&db1, t.dir[1], &small, err), 0);
	assert_int_equal(bookdb_txn_begin(&t1, db1, true), 0);
	for (int i = 0; i < 3; i++) revalue(t1, rec, pos_key(pos), -5000 + 100 * i);
	assert_int_equal(bookdb_txn_commit(t1), 0);
	bookdb_free(db1);
	minimax_quiet(t.dir[1]);
	reopen_with_snapshot(&t, path, PLAN_PV, false);
	assert_false(coord_snapshot_restored(t.c[1], &note, NULL));
	print_message("the log overflowed, then a minimax run: %s\n", note);
	assert_non_null(strstr(note, "no longer holds every write"));
	free(keys);
	free(l);
	free(r);
	free(rec);
	free(pos);
	twins_close(&t);
}

/*
 * A book whose best line is a repetition: 2h3h 8b7b 3h2h 7b8b comes back to
 * the start position, and every way out of it is bad for the side that
 * leaves (tests/bookgen/test_selector.c's CYCLE). Its leaves: 7g7f, 2h3h
 * 3c3d, 2h3h 8b7b 7g7f, 2h3h 8b7b 3h2h 3c3d. The cover walk skips a move
 * back into its path, and the root's value was the repetition's: it found
 * nothing, and the coordinator answered every acquire with no position (204)
 * while the book had these four, at every start from its snapshot too (met
 * in a cluster trial: a graph kept in the snapshot with such a cycle, 0
 * positions at every restart). Now each acquire gets positions until all
 * four are leased; a lease left to expire unsubmitted comes back after a
 * restart from the snapshot, to another worker, with the rest.
 */
static void test_coord__a_repetition_as_the_best_line_leaves_the_cover_policy_work(void **state)
{
	(void)state;
	static const struct {
		const char *line;
		const char *mv[2];
		int eval[2];
	} book[] = {
	    {"startpos", {"2h3h", "7g7f"}, {0, -100}},
	    {"startpos moves 2h3h", {"8b7b", "3c3d"}, {0, -200}},
	    {"startpos moves 2h3h 8b7b", {"3h2h", "7g7f"}, {0, -200}},
	    {"startpos moves 2h3h 8b7b 3h2h", {"7b8b", "3c3d"}, {0, -300}},
	};
	const char *leaves[] = {"startpos moves 7g7f", "startpos moves 2h3h 3c3d",
	                        "startpos moves 2h3h 8b7b 7g7f",
	                        "startpos moves 2h3h 8b7b 3h2h 3c3d"};
	char *dir = ts_mkdtemp(), err[COORD_ERRLEN], path[4096];
	BookDB *db;
	BookTxn *txn;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_non_null(rec);
	assert_non_null(pos);
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (size_t i = 0; i < sizeof book / sizeof *book; i++) {
		assert_int_equal(position_parse(pos, book[i].line, err), 0);
		bookdb_record_init(rec, pos);
		rec->flags |= BOOKDB_REC_THOUGHT;
		for (int k = 0; k < 2; k++) {
			Move m;
			assert_int_equal(usi_move_parse_legal(&m, pos, book[i].mv[k],
			                                      strlen(book[i].mv[k]), err),
			                 0);
			rec->moves[rec->nmoves++] = engine_move(m, book[i].eval[k]);
		}
		assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	}
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	free(rec);
	free(pos);
	snprintf(path, sizeof path, "%s/selector.snap", dir);
	CoordOptions o = {.budget = {.kind = SEARCH_BUDGET_DEPTH, .amount = 5},
	                  .multipv = 3,
	                  .lease_seconds = 60,
	                  .plan = {.mode = PLAN_COVER, .window = 30},
	                  .select_slice_ms = -1,
	                  .snapshot = path};
	Coord *c = open_coord_with(&db, dir, &o);
	CoordLease *l = malloc(sizeof *l);
	assert_non_null(l);
	/* One position, never submitted; the stop writes the snapshot. */
	assert_int_equal(acquire(c, l, &A, 1, T0), 1);
	Key first = l->pos[0].key;
	int seen[4] = {0};
	for (int k = 0; k < 4; k++) seen[k] += key_equal(first, ts_line_key(leaves[k]));
	assert_int_equal(coord_close(c, NULL, err), 0);
	bookdb_free(db);
	/* Restarted from it after the lease expired: the expired position and
	 * the three others, to another worker, and then nothing. */
	c = open_coord_with(&db, dir, &o);
	assert_true(coord_snapshot_restored(c, NULL, NULL));
	assert_int_equal(coord_tick(c, T0 + 61000, err), 0);
	int got = 0, n;
	while ((n = acquire(c, l, &B, 1, T0 + 62000)) > 0) {
		assert_true(++got <= 4);
		for (int k = 0; k < 4; k++)
			seen[k] += key_equal(l->pos[0].key, ts_line_key(leaves[k]));
	}
	assert_int_equal(got, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(seen[k], 1 + (key_equal(first, ts_line_key(leaves[k]))));
	free(l);
	close_coord(c, db);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_coord__lease_submit_idempotent_and_stored),
	    cmocka_unit_test(test_coord__extended_roots_come_first_and_once),
	    cmocka_unit_test(test_coord__many_leases_finish_abort_and_expire_in_any_order),
	    cmocka_unit_test(test_coord__refused_submissions_write_nothing),
	    cmocka_unit_test(
	        test_coord__expiry_returns_positions_to_another_worker_and_late_results_count),
	    cmocka_unit_test(test_coord__workers_live_and_gone),
	    cmocka_unit_test(test_coord__a_lease_answered_only_by_ignored_results_is_finished),
	    cmocka_unit_test(test_coord__abort_returns_positions_at_once_without_a_try),
	    cmocka_unit_test(test_coord__a_lone_worker_gets_its_expired_positions_back),
	    cmocka_unit_test(test_coord__three_failed_tries_set_a_position_aside),
	    cmocka_unit_test(test_coord__a_restart_keeps_leases_tries_and_the_counter),
	    cmocka_unit_test(test_coord__history_points_follow_the_clock_across_a_restart),
	    cmocka_unit_test(test_coord__a_mated_position_is_valued_not_leased),
	    cmocka_unit_test(test_coord__illegal_moves_are_refused_for_analysed_positions_too),
	    cmocka_unit_test(test_coord__minimax_period_failure_and_worker_instances),
	    cmocka_unit_test(test_coord__the_books_lines_from_the_way_are_followed),
	    cmocka_unit_test(test_coord__the_lines_walk_goes_on_where_it_stopped),
	    cmocka_unit_test(test_coord__close_stops_a_minimax_under_way),
	    cmocka_unit_test(test_coord__selection_in_slices_leases_what_whole_searches_do),
	    cmocka_unit_test(test_coord__the_walks_filter_is_handed_over_and_the_one_before_freed),
	    cmocka_unit_test(test_coord__a_reader_in_the_middle_of_a_handover_keeps_its_filter),
	    cmocka_unit_test(test_coord__provisional_leaves_until_the_selection_keeps_up),
	    cmocka_unit_test(test_coord__a_trimmed_selector_leases_right_within_a_tiny_memory),
	    cmocka_unit_test(test_coord__a_checkpoint_s_child_holds_the_selection_and_the_trim),
	    cmocka_unit_test(test_coord__a_trim_in_slices_holds_the_search_and_keeps_the_results),
	    cmocka_unit_test(
	        test_coord__the_stock_selected_beside_the_caller_is_what_acquires_select),
	    cmocka_unit_test(
	        test_coord__leases_made_ahead_answer_before_a_commit_and_outlive_a_crash),
	    cmocka_unit_test(test_coord__leases_made_ahead_keep_a_reserve_of_the_acquires_rate),
	    cmocka_unit_test(test_coord__an_unclaimed_lease_expires_without_a_failed_try),
	    cmocka_unit_test(
	        test_coord__a_restart_from_the_snapshot_leases_what_an_unbroken_run_does),
	    cmocka_unit_test(test_coord__a_snapshot_that_does_not_fit_is_refused_and_said),
	    cmocka_unit_test(test_coord__a_snapshot_catches_up_with_another_writer),
	    cmocka_unit_test(test_coord__restarts_from_the_snapshot_in_slices_lease_nothing_twice),
	    cmocka_unit_test(
	        test_coord__a_crash_after_a_checkpoint_restarts_from_it_with_its_journal),
	    cmocka_unit_test(
	        test_coord__a_repetition_as_the_best_line_leaves_the_cover_policy_work),
	};
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
