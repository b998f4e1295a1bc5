/*
 * tests/cluster/test_coord_history.c — the coordinator's time series
 * (cluster/coord_history.h) on a real LMDB book: the point layout round-trips
 * and refuses damaged bytes; three days of minute points (with the
 * coordinator down for two hours in the middle) keep the last 2,880 minutes,
 * 15-minute and 6-hour points whose results add up to the minutes they were
 * made from, none made twice or for a span not yet over; reading gives the
 * finest points available, oldest first, without overlap; a point stored
 * twice for the same minute (a restart within it) is merged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "cluster/coord_history.h"
#include "tests/support/support.h"

#define DAY0 1795586400LL /* unix seconds, a multiple of 6 hours */

static CoordHistPoint point(int64_t t, uint64_t results)
{
	CoordHistPoint p = {.t = t,
	                    .span_s = 60,
	                    .results = results,
	                    .failed = results % 3,
	                    .positions = 1000 + (uint64_t)t % 977,
	                    .thought = 10,
	                    .root_value = -35,
	                    .workers = 1 + (uint32_t)(t / 60) % 5,
	                    .queue = 2,
	                    .leases = 3,
	                    .aside = 1,
	                    .nps = 123456};
	snprintf(p.pv, sizeof p.pv, "7g7f 3c3d P*5e 8h2b+");
	return p;
}

/* A fresh book in a new directory (*dir: free with close_book). */
static BookDB *open_book(char **dir)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	*dir = ts_mkdtemp();
	assert_int_equal(bookdb_open(&db, *dir, NULL, err), 0);
	return db;
}

static void close_book(BookDB *db, char *dir)
{
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* coord_history_read in a read transaction of its own. */
static int read_points(BookDB *db, CoordHistPoint **pts, int64_t since, size_t *bad)
{
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	int n = coord_history_read(pts, t, since, bad);
	bookdb_txn_abort(t);
	return n;
}

static void test_coord_history__layout_round_trips_and_refuses_damage(void **state)
{
	(void)state;
	CoordHistPoint p = point(DAY0 + 60, 42), q;
	p.tier = 2;
	uint8_t k[COORD_HIST_KEY_LEN], v[COORD_HIST_VAL_MAX + 8];
	coord_hist_key(k, 2, p.t);
	size_t n = coord_hist_encode(v, &p);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), 1);
	assert_memory_equal(&p, &q, sizeof p);
	p.root_value = COORD_HIST_NO_ROOT;
	p.pv[0] = 0;
	n = coord_hist_encode(v, &p);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), 1);
	assert_int_equal(q.root_value, COORD_HIST_NO_ROOT);
	assert_string_equal(q.pv, "");
	/* Not a history key: not this decoder's. */
	const uint8_t lease[9] = {'L'};
	assert_int_equal(coord_hist_decode(&q, lease, sizeof lease, v, n), 0);
	/* Damaged: a short key, an unknown tier, a wrong version, a value cut
	 * short or too long, a line with a byte no USI move has. */
	assert_int_equal(coord_hist_decode(&q, k, sizeof k - 1, v, n), -1);
	k[1] = COORD_HIST_TIERS;
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), -1);
	k[1] = 0;
	v[0] = 2;
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), -1);
	v[0] = 1;
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n - 1), -1);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n + 1), -1);
	snprintf(p.pv, sizeof p.pv, "7g7f\n");
	n = coord_hist_encode(v, &p);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), -1);
	/* With its root (version 2): the root's SFEN and the number of roots. */
	p = point(DAY0 + 60, 42);
	snprintf(p.root, sizeof p.root,
	         "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2");
	p.nroots = 3;
	n = coord_hist_encode(v, &p);
	assert_int_equal(v[0], 2);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), 1);
	assert_memory_equal(&p, &q, sizeof p);
	/* ... without: version 1, as an older build wrote it. */
	p.root[0] = 0;
	p.nroots = 0;
	size_t n1 = coord_hist_encode(v, &p);
	assert_int_equal(v[0], 1);
	assert_int_equal(n1 + 2 + 65, n);
	/* Damaged: a root with a byte no SFEN has, or of length 0, or cut. */
	snprintf(p.root, sizeof p.root, "4k4/9/9/9/9/9/9/9/4K4 b -\n1");
	p.nroots = 1;
	n = coord_hist_encode(v, &p);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), -1);
	snprintf(p.root, sizeof p.root, "4k4/9/9/9/9/9/9/9/4K4 b - 1");
	n = coord_hist_encode(v, &p);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), 1);
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n - 1), -1);
	v[n - 28] = 0; /* the root's length, before its 27 bytes */
	assert_int_equal(coord_hist_decode(&q, k, sizeof k, v, n), -1);
}

/* Puts points every minute from `from` for n minutes (a commit every 200). */
static void put_minutes(BookDB *db, int64_t from, int n, uint64_t *total)
{
	BookTxn *t = NULL;
	for (int i = 0; i < n; i++) {
		if (!t) assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
		CoordHistPoint p = point(from + 60LL * i, (uint64_t)(i % 7));
		*total += p.results;
		assert_int_equal(coord_history_put(t, &p, 60), 0);
		if (i % 200 == 199 || i == n - 1) {
			assert_int_equal(bookdb_txn_commit(t), 0);
			t = NULL;
		}
	}
}

/* Every stored point, by tier (as the book holds them). */
static size_t load_tier(BookDB *db, int tier, CoordHistPoint *out, size_t max)
{
	BookTxn *t;
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_kv_iter_open(&it, t, BOOKDB_WORK), 0);
	const void *k, *v;
	size_t kl, vl, n = 0;
	CoordHistPoint p;
	while (bookdb_kv_iter_next(it, &k, &kl, &v, &vl) == 1) {
		int d = coord_hist_decode(&p, k, kl, v, vl);
		assert_true(d >= 0);
		if (d == 1 && p.tier == tier && n < max) out[n++] = p;
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	return n;
}

static void test_coord_history__tiers_keep_the_past_coarser_and_bounded(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = open_book(&dir);
	uint64_t total = 0;
	/* 30 hours of minutes, 2 hours down, 25 more hours: 3,300 minutes. */
	put_minutes(db, DAY0 + 60, 30 * 60, &total);
	put_minutes(db, DAY0 + 32 * 3600 + 60, 25 * 60, &total);
	int64_t last = DAY0 + 57 * 3600;
	size_t cap = 4000;
	CoordHistPoint *t0 = calloc(cap, sizeof *t0), *t1 = calloc(cap, sizeof *t1),
	               *t2 = calloc(cap, sizeof *t2);
	size_t n0 = load_tier(db, 0, t0, cap), n1 = load_tier(db, 1, t1, cap),
	       n2 = load_tier(db, 2, t2, cap);
	/* Tier 0: the last 2,880 minutes. */
	assert_int_equal(n0, COORD_HIST_KEEP0);
	assert_int_equal(t0[n0 - 1].t, last);
	/* Tier 1: every quarter hour that had minutes (none in the gap), each the
	 * sum of its minutes; tier 2: every 6 hours that had quarters. */
	assert_int_equal(n1, (30 + 25) * 4);
	for (size_t i = 0; i < n1; i++) {
		assert_int_equal(t1[i].t % 900, 0);
		assert_true(t1[i].t <= last);
		assert_false(t1[i].t > DAY0 + 30 * 3600 && t1[i].t <= DAY0 + 32 * 3600);
		uint64_t sum = 0, span = 0;
		for (size_t j = 0; j < n0; j++)
			if (t0[j].t > t1[i].t - 900 && t0[j].t <= t1[i].t) {
				sum += t0[j].results;
				span += t0[j].span_s;
			}
		if (t1[i].t - 900 >= t0[0].t) { /* its minutes are all still kept */
			assert_int_equal(t1[i].results, sum);
			assert_int_equal(t1[i].span_s, span);
		}
		assert_int_equal(t1[i].positions, point(t1[i].t, 0).positions); /* as at its end */
	}
	/* 6-hour spans over by the last minute: 0-6 .. 24-30 (5), 30-36 (minutes
	 * until 30 h), 36-42, 42-48, 48-54 (54-60 not over). */
	assert_int_equal(n2, 9);
	uint64_t sum2 = 0;
	for (size_t i = 0; i < n2; i++) {
		assert_int_equal(t2[i].t % 21600, 0);
		sum2 += t2[i].results;
	}
	uint64_t sum1_done = 0;
	for (size_t i = 0; i < n1; i++)
		if (t1[i].t <= t2[n2 - 1].t) sum1_done += t1[i].results;
	assert_int_equal(sum2, sum1_done);

	/* Reading: finest first, oldest first, no overlap, every result once but
	 * for at most one quarter hour cut where the kept minutes start. */
	CoordHistPoint *pts;
	size_t bad = 99;
	int n = read_points(db, &pts, 0, &bad);
	assert_int_equal(bad, 0);
	assert_true(n > (int)n0);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++) {
		sum += pts[i].results;
		if (i) assert_true(pts[i].t > pts[i - 1].t);
		if (i && pts[i].tier < pts[i - 1].tier)
			assert_true(pts[i].t - coord_hist_span(pts[i].tier, 60) >=
			            pts[i - 1].t - 900);
	}
	assert_int_equal(pts[n - 1].tier, 0);
	assert_int_equal(pts[0].tier, 1); /* the quarters still cover the start */
	assert_true(sum <= total && sum + 15 * 6 >= total);
	free(pts);
	/* Since a time: only the points at or after it. */
	assert_int_equal(read_points(db, &pts, last - 600, NULL), 11);
	free(pts);

	free(t0);
	free(t1);
	free(t2);
	close_book(db, dir);
}

static void test_coord_history__a_minute_stored_twice_is_merged(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = open_book(&dir);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	CoordHistPoint a = point(DAY0 + 120, 5), b = point(DAY0 + 120, 7);
	a.span_s = 20;
	a.workers = 9;
	b.span_s = 30;
	b.workers = 2;
	b.thought = 99;
	assert_int_equal(coord_history_put(t, &a, 60), 0);
	assert_int_equal(coord_history_put(t, &b, 60), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	CoordHistPoint *pts;
	assert_int_equal(read_points(db, &pts, 0, NULL), 1);
	assert_int_equal(pts[0].results, 12);
	assert_int_equal(pts[0].span_s, 50);
	assert_int_equal(pts[0].thought, 99); /* the later one's */
	assert_int_equal(pts[0].workers, 9);  /* the most */
	free(pts);
	close_book(db, dir);
}

/* Reading where the coarser tiers are all that is left of the past (stored
 * directly): 6-hour points, then quarters, then minutes, each tier from where
 * the finer one ends. */
static void test_coord_history__reading_takes_each_tier_where_finer_ones_end(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = open_book(&dir);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	const struct {
		int tier;
		int64_t t;
	} at[] = {{2, 6 * 3600},  {2, 12 * 3600},     {2, 18 * 3600}, {1, 12 * 3600 + 900},
	          {1, 13 * 3600}, {1, 18 * 3600},     {0, 13 * 3600}, {0, 13 * 3600 + 60},
	          {0, 18 * 3600}, {0, 18 * 3600 + 60}};
	for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
		CoordHistPoint p = point(DAY0 + at[i].t, i);
		uint8_t k[COORD_HIST_KEY_LEN], v[COORD_HIST_VAL_MAX];
		coord_hist_key(k, at[i].tier, p.t);
		assert_int_equal(
		    bookdb_kv_put(t, BOOKDB_WORK, k, sizeof k, v, coord_hist_encode(v, &p)), 0);
	}
	assert_int_equal(bookdb_txn_commit(t), 0);
	CoordHistPoint *pts;
	int n = read_points(db, &pts, 0, NULL);
	/* 6 h and 12 h (before the first quarter), the quarter at 12:15 (before
	 * the first minute), then the four minutes. */
	const int want_tier[] = {2, 2, 1, 0, 0, 0, 0};
	assert_int_equal(n, 7);
	for (int i = 0; i < n; i++) {
		assert_int_equal(pts[i].tier, want_tier[i]);
		if (i) assert_true(pts[i].t > pts[i - 1].t);
	}
	free(pts);
	close_book(db, dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_coord_history__layout_round_trips_and_refuses_damage),
	    cmocka_unit_test(test_coord_history__tiers_keep_the_past_coarser_and_bounded),
	    cmocka_unit_test(test_coord_history__a_minute_stored_twice_is_merged),
	    cmocka_unit_test(test_coord_history__reading_takes_each_tier_where_finer_ones_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
