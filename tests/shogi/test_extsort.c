/*
 * tests/shogi/test_extsort.c — the external merge sort: the same order as an
 * in-memory stable sort whatever the budget (all in memory, a few runs, more
 * runs than one merge takes: several levels), records of varied lengths and
 * empty ones, equal records in the order they were added, no file left in the
 * run directory at any time after a run is made, and the errors it owes.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shogi/extsort.h"
#include "shogi/memuse.h"
#include "shogi/rng.h"
#include "tests/support/support.h"

/* Records: a 4-byte key (compared) then a 4-byte serial and padding. */
static int cmp_key(const void *a, size_t al, const void *b, size_t bl, void *ctx)
{
	atomic_int *calls = ctx; /* the sort may compare on two threads at once */
	atomic_fetch_add(calls, 1);
	assert_true(al >= 8 && bl >= 8);
	uint32_t x, y;
	memcpy(&x, a, 4);
	memcpy(&y, b, 4);
	return x < y ? -1 : x > y;
}

typedef struct {
	uint32_t key, serial;
} Ref;

static int ref_cmp(const void *a, const void *b)
{
	const Ref *x = a, *y = b;
	if (x->key != y->key) return x->key < y->key ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* n records with keys below keys (many equal), padded to 8..8+pad bytes. */
static void sort_and_check(uint64_t budget, uint32_t n, uint32_t keys, uint32_t pad,
                           uint64_t want_runs_min, uint64_t want_passes_min)
{
	char dir[] = "/tmp/joseki-extsort-XXXXXX";
	assert_non_null(mkdtemp(dir));
	atomic_int calls = 0;
	ExtSort *s;
	assert_int_equal(extsort_open(&s, dir, budget, cmp_key, &calls), 0);
	Ref *ref = malloc(n * sizeof *ref);
	uint8_t buf[8 + 4096];
	uint64_t rng = 7;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t key = (uint32_t)(rng_next(&rng) % keys), len = 8 + (pad ? i % pad : 0);
		memcpy(buf, &key, 4);
		memcpy(buf + 4, &i, 4);
		memset(buf + 8, (int)(i & 0xff), len - 8);
		assert_int_equal(extsort_add(s, buf, len), 0);
		ref[i] = (Ref){key, i};
		if (i % 50000 == 0) assert_int_equal(ts_files_in(dir), 0);
	}
	assert_int_equal(extsort_finish(s), 0);
	assert_int_equal(ts_files_in(dir), 0);
	uint8_t one = 0;
	assert_int_equal(extsort_add(s, &one, 1), -1);
	assert_int_equal(errno, EINVAL);
	qsort(ref, n, sizeof *ref, ref_cmp);
	const void *rec;
	size_t len;
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(extsort_next(s, &rec, &len), 1);
		uint32_t key, serial;
		memcpy(&key, rec, 4);
		memcpy(&serial, (const uint8_t *)rec + 4, 4);
		assert_int_equal(key, ref[i].key);
		assert_int_equal(serial, ref[i].serial);
		assert_int_equal(len, 8 + (pad ? serial % pad : 0));
		for (size_t j = 8; j < len; j++)
			assert_int_equal(((const uint8_t *)rec)[j], serial & 0xff);
	}
	assert_int_equal(extsort_next(s, &rec, &len), 0);
	assert_int_equal(extsort_next(s, &rec, &len), 0);
	ExtSortStats st;
	extsort_stats(s, &st);
	assert_int_equal(st.records, n);
	assert_true(st.runs >= want_runs_min);
	assert_true(st.merge_passes >= want_passes_min);
	if (want_runs_min == 0) assert_int_equal(st.runs, 0);
	if (want_runs_min == 0) assert_int_equal(st.disk_bytes, 0);
	extsort_free(s);
	free(ref);
	assert_int_equal(ts_files_in(dir), 0);
	rmdir(dir);
}

static void test_in_memory(void **state)
{
	(void)state;
	sort_and_check(64u << 20, 100000, 1000, 40, 0, 0);
}

static void test_runs(void **state)
{
	(void)state;
	/* 1 MiB against ~6 MB of records: a handful of runs, one merge. */
	sort_and_check(1u << 20, 200000, 5000, 40, 4, 0);
}

static void test_levels(void **state)
{
	(void)state;
	/* 1 MiB merges 8 runs at once: 30 MB of records make ~45 runs, so that
	 * runs are merged in levels before the last. */
	sort_and_check(1u << 20, 250000, 1u << 30, 200, 20, 1);
}

static void test_edges(void **state)
{
	(void)state;
	atomic_int calls = 0;
	ExtSort *s;
	assert_int_equal(extsort_open(&s, NULL, 0, cmp_key, &calls), 0);
	const void *rec;
	size_t len;
	assert_int_equal(extsort_next(s, &rec, &len), -1); /* before finish */
	assert_int_equal(extsort_add(s, "", (size_t)EXTSORT_MAX_RECORD + 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(extsort_finish(s), 0);
	assert_int_equal(extsort_next(s, &rec, &len), 0); /* nothing added */
	extsort_free(s);
	/* A directory that is not there: the first run cannot be made. */
	assert_int_equal(extsort_open(&s, "/nonexistent/joseki", 1u << 20, cmp_key, &calls), 0);
	uint8_t big[8 + 4096] = {0};
	int rc = 0;
	for (int i = 0; i < 1000 && rc == 0; i++) rc = extsort_add(s, big, sizeof big);
	assert_int_equal(rc, -1);
	assert_int_equal(errno, ENOENT);
	extsort_free(s);
}

/* Records longer than a merge's read buffer (64 KiB and more, up to 300 KB)
 * among short ones, in runs: each comes back whole, in order. */
static void test_long_records(void **state)
{
	(void)state;
	atomic_int calls = 0;
	ExtSort *s;
	assert_int_equal(extsort_open(&s, NULL, 1u << 20, cmp_key, &calls), 0);
	enum { N = 400, LONG = 300000 };
	uint8_t *buf = malloc(LONG);
	Ref ref[N];
	uint64_t rng = 17;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t key = (uint32_t)(rng_next(&rng) % 1000);
		size_t len = i % 3 ? 8 + i : LONG - i;
		memcpy(buf, &key, 4);
		memcpy(buf + 4, &i, 4);
		for (size_t j = 8; j < len; j++) buf[j] = (uint8_t)(i + j);
		assert_int_equal(extsort_add(s, buf, len), 0);
		ref[i] = (Ref){key, i};
	}
	assert_int_equal(extsort_finish(s), 0);
	qsort(ref, N, sizeof *ref, ref_cmp);
	for (uint32_t i = 0; i < N; i++) {
		const uint8_t *rec;
		size_t len;
		assert_int_equal(extsort_next(s, (const void **)&rec, &len), 1);
		uint32_t serial = ref[i].serial;
		assert_int_equal(len, serial % 3 ? 8 + serial : LONG - serial);
		assert_memory_equal(rec + 4, &serial, 4);
		for (size_t j = 8; j < len; j++)
			if (rec[j] != (uint8_t)(serial + j))
				fail_msg("record %u byte %zu", serial, j);
	}
	ExtSortStats st;
	extsort_stats(s, &st);
	assert_true(st.runs >= 10);
	const void *rec;
	size_t len;
	assert_int_equal(extsort_next(s, &rec, &len), 0);
	extsort_free(s);
	free(buf);
}

/* The end of a sorter's records: nothing more, runs on disk or none as
 * wanted; frees it. */
static void end_check(ExtSort *s, bool want_runs)
{
	const void *rec;
	size_t len;
	assert_int_equal(extsort_next(s, &rec, &len), 0);
	ExtSortStats st;
	extsort_stats(s, &st);
	if (want_runs)
		assert_true(st.runs >= 3);
	else
		assert_int_equal(st.runs, 0);
	extsort_free(s);
}

typedef struct {
	uint8_t key[12];
	uint32_t serial;
} RefBytes;

static int ref_bytes_cmp(const void *a, const void *b)
{
	const RefBytes *x = a, *y = b;
	int c = memcmp(x->key, y->key, sizeof x->key);
	if (c) return c;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* extsort_cmp_bytes over 12 bytes (the first 8 kept as a number beside each
 * record, the other 4 read): memcmp's order, ties in the order of adding,
 * in memory (two halves side by side) and in runs written by the thread. */
static void bytes_check(uint64_t budget, uint32_t n, bool want_runs)
{
	ExtSort *s;
	assert_int_equal(extsort_open(&s, NULL, budget, extsort_cmp_bytes, (void *)(uintptr_t)12),
	                 0);
	RefBytes *ref = malloc(n * sizeof *ref);
	uint64_t rng = 11;
	uint8_t buf[64];
	for (uint32_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&rng);
		/* Few distinct first 8 bytes, many equal 12-byte keys. */
		memset(buf, 0, 12);
		buf[(r >> 8) % 8] = (uint8_t)(r % 3 + 0x7f);
		buf[8 + (r >> 16) % 4] = (uint8_t)((r >> 24) % 4);
		memcpy(buf + 12, &i, 4);
		size_t len = 16 + i % 40;
		memset(buf + 16, (int)(i & 0xff), len - 16);
		assert_int_equal(extsort_add(s, buf, len), 0);
		memcpy(ref[i].key, buf, 12);
		ref[i].serial = i;
	}
	assert_int_equal(extsort_finish(s), 0);
	qsort(ref, n, sizeof *ref, ref_bytes_cmp);
	const void *rec;
	size_t len;
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(extsort_next(s, &rec, &len), 1);
		uint32_t serial;
		memcpy(&serial, (const uint8_t *)rec + 12, 4);
		assert_memory_equal(rec, ref[i].key, 12);
		assert_int_equal(serial, ref[i].serial);
		assert_int_equal(len, 16 + serial % 40);
	}
	end_check(s, want_runs);
	free(ref);
}

static void test_bytes(void **state)
{
	(void)state;
	bytes_check(64u << 20, 300000, false);
	bytes_check(1u << 20, 300000, true);
}

typedef struct {
	uint8_t key[80];
	uint32_t len, serial;
} RefTail;

static int ref_tail_cmp(const void *a, const void *b)
{
	const RefTail *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
	if (c) return c;
	if (x->len != y->len) return x->len < y->len ? -1 : 1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* extsort_cmp_tail from byte 4 (a serial before it): keys of 0..79 bytes
 * sharing long prefixes (as SFEN lines do, 15 bytes alike and more), with
 * zero bytes in them and at their ends (which must not pass for the end of
 * a shorter key), many equal: memcmp's order, a prefix first, ties in the
 * order of adding, in memory and in runs. */
static void tail_check(uint64_t budget, uint32_t n, bool want_runs)
{
	ExtSort *s;
	assert_int_equal(extsort_open(&s, NULL, budget, extsort_cmp_tail, (void *)(uintptr_t)4), 0);
	RefTail *ref = malloc(n * sizeof *ref);
	uint64_t rng = 13;
	static const uint8_t ALPHA[] = {0, 'a', 'b', 0xff};
	static const char COMMON[] = "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/";
	uint8_t buf[4 + 80];
	for (uint32_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&rng);
		uint32_t len = (uint32_t)(r % 80);
		/* Most keys start with the same 15..40 bytes. */
		uint32_t common = r >> 8 & 3 ? 15 + (uint32_t)(r >> 16) % 20 : 0;
		for (uint32_t j = 0; j < len; j++)
			buf[4 + j] = j < common ? (uint8_t)COMMON[j]
			                        : ALPHA[rng_next(&rng) % (j < common + 6 ? 2 : 4)];
		memcpy(buf, &i, 4);
		assert_int_equal(extsort_add(s, buf, 4 + len), 0);
		memcpy(ref[i].key, buf + 4, len);
		ref[i].len = len;
		ref[i].serial = i;
	}
	assert_int_equal(extsort_finish(s), 0);
	qsort(ref, n, sizeof *ref, ref_tail_cmp);
	const void *rec;
	size_t len;
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(extsort_next(s, &rec, &len), 1);
		uint32_t serial;
		memcpy(&serial, rec, 4);
		assert_int_equal(serial, ref[i].serial);
		assert_int_equal(len, 4 + ref[i].len);
		assert_memory_equal((const uint8_t *)rec + 4, ref[i].key, ref[i].len);
	}
	end_check(s, want_runs);
	free(ref);
}

static void test_tail(void **state)
{
	(void)state;
	/* The comparison itself: a prefix first, a zero byte is not an end, the
	 * bytes before n not compared. */
	void *c4 = (void *)(uintptr_t)4;
	assert_true(extsort_cmp_tail("....ab", 6, "....ab\0", 7, c4) < 0);
	assert_true(extsort_cmp_tail("....ab\0", 7, "....ab", 6, c4) > 0);
	assert_true(extsort_cmp_tail("....b", 5, "....ab", 6, c4) > 0);
	assert_true(extsort_cmp_tail("xxxxab", 6, "yyyyab", 6, c4) == 0);
	assert_true(extsort_cmp_tail("...", 3, "....", 4, c4) == 0);
	tail_check(64u << 20, 300000, false);
	tail_check(1u << 20, 300000, true);
}

/* Records for the two-ended checks: record i of a kind into buf (room for
 * 300 KB), its length. */
typedef size_t (*MakeRecord)(uint8_t *buf, uint32_t i, uint64_t *rng);

/* cmp_key's records, many keys equal, 8..208 bytes. */
static size_t rec_keyed(uint8_t *buf, uint32_t i, uint64_t *rng)
{
	uint32_t key = (uint32_t)(rng_next(rng) % 3000);
	size_t len = 8 + i % 200;
	memcpy(buf, &key, 4);
	memcpy(buf + 4, &i, 4);
	memset(buf + 8, (int)(i & 0xff), len - 8);
	return len;
}

/* cmp_key's records, one in five longer than a merge's read buffer. */
static size_t rec_long(uint8_t *buf, uint32_t i, uint64_t *rng)
{
	uint32_t key = (uint32_t)(rng_next(rng) % 50);
	size_t len = i % 5 ? 8 + i % 100 : 40000 + (size_t)(rng_next(rng) % 260000);
	memcpy(buf, &key, 4);
	memcpy(buf + 4, &i, 4);
	for (size_t j = 8; j < len; j++) buf[j] = (uint8_t)(i + j);
	return len;
}

/* extsort_cmp_tail's records from byte 4: SFEN-like keys, many equal, most
 * alike in their first 8 bytes (then told apart further on), a quarter not. */
static size_t rec_tail(uint8_t *buf, uint32_t i, uint64_t *rng)
{
	static const char COMMON[] = "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/";
	uint64_t r = rng_next(rng);
	size_t len = 20 + r % 12, common = (r >> 8) % 4 ? 16 : 2 + (r >> 12) % 6;
	memcpy(buf, &i, 4);
	for (size_t j = 0; j < len; j++)
		buf[4 + j] = j < common ? (uint8_t)COMMON[j] : (uint8_t)('a' + rng_next(rng) % 2);
	return 4 + len;
}

typedef struct {
	ExtSort *s;
	uint8_t **rec;
	size_t *len, n, cap;
	int rc;
} EndRead;

/* One end of a sorter read whole: copies of its records, in the order given. */
static void *read_end(void *arg)
{
	EndRead *e = arg;
	const void *r;
	size_t len;
	bool back = e->rc == 1;
	while ((e->rc = back ? extsort_next_back(e->s, &r, &len) : extsort_next(e->s, &r, &len)) ==
	       1) {
		if (e->n == e->cap) {
			e->cap = e->cap ? 2 * e->cap : 1024;
			e->rec = realloc(e->rec, e->cap * sizeof *e->rec);
			e->len = realloc(e->len, e->cap * sizeof *e->len);
		}
		e->rec[e->n] = malloc(len ? len : 1);
		memcpy(e->rec[e->n], r, len);
		e->len[e->n++] = len;
	}
	return NULL;
}

static void end_free(EndRead *e)
{
	for (size_t i = 0; i < e->n; i++) free(e->rec[i]);
	free(e->rec);
	free(e->len);
}

/* n records of a kind into a sorter read from both ends, on two threads at
 * once, and into a sorter read from the front alone: the front half then the
 * back half reversed are the one sorter's records, byte for byte; each end
 * stops at its share; a plain sorter has no back. */
static void ends_check(uint64_t budget, ExtSortCmp cmp, void *ctx, MakeRecord make, uint32_t n,
                       uint64_t want_runs_min, uint64_t want_passes_min)
{
	ExtSort *two, *one;
	assert_int_equal(extsort_open(&two, NULL, budget, cmp, ctx), 0);
	assert_int_equal(extsort_open(&one, NULL, budget, cmp, ctx), 0);
	extsort_both_ends(two);
	uint8_t *buf = malloc(300000);
	uint64_t rng = 23;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = make(buf, i, &rng);
		assert_int_equal(extsort_add(two, buf, len), 0);
		assert_int_equal(extsort_add(one, buf, len), 0);
	}
	free(buf);
	assert_int_equal(extsort_finish(two), 0);
	assert_int_equal(extsort_finish(one), 0);
	const void *r;
	size_t len;
	assert_int_equal(extsort_next_back(one, &r, &len), -1);
	assert_int_equal(errno, EINVAL);
	EndRead front = {.s = two}, back = {.s = two, .rc = 1}, all = {.s = one};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_end, &back), 0);
	read_end(&front);
	pthread_join(t, NULL);
	read_end(&all);
	assert_int_equal(front.rc, 0);
	assert_int_equal(back.rc, 0);
	assert_int_equal(all.rc, 0);
	assert_int_equal(front.n, n - n / 2);
	assert_int_equal(back.n, n / 2);
	assert_int_equal(all.n, n);
	for (size_t i = 0; i < n; i++) {
		bool f = i < front.n;
		size_t j = f ? i : n - 1 - i;
		const EndRead *e = f ? &front : &back;
		if (e->len[j] != all.len[i] || memcmp(e->rec[j], all.rec[i], all.len[i]))
			fail_msg("record %zu of %u differs (%s end)", i, n, f ? "front" : "back");
	}
	/* Each end stays at its end. */
	assert_int_equal(extsort_next(two, &r, &len), 0);
	assert_int_equal(extsort_next_back(two, &r, &len), 0);
	ExtSortStats a, b;
	extsort_stats(two, &a);
	extsort_stats(one, &b);
	assert_int_equal(a.runs, b.runs);
	assert_true(a.runs >= want_runs_min);
	assert_true(a.merge_passes >= want_passes_min);
	/* The lengths after the records: 4 bytes more each, in every run. */
	if (a.runs) assert_true(a.disk_bytes >= b.disk_bytes + 4 * (uint64_t)n);
	end_free(&front);
	end_free(&back);
	end_free(&all);
	extsort_free(two);
	extsort_free(one);
}

static void test_both_ends(void **state)
{
	(void)state;
	atomic_int calls = 0;
	void *c4 = (void *)(uintptr_t)4;
	/* Nothing, one record, two, in memory. */
	ends_check(64u << 20, cmp_key, &calls, rec_keyed, 0, 0, 0);
	ends_check(64u << 20, cmp_key, &calls, rec_keyed, 1, 0, 0);
	ends_check(64u << 20, cmp_key, &calls, rec_keyed, 2, 0, 0);
	/* Many equal keys: in memory, in runs (one merge), in levels. */
	ends_check(64u << 20, cmp_key, &calls, rec_keyed, 100001, 0, 0);
	ends_check(1u << 20, cmp_key, &calls, rec_keyed, 100001, 8, 0);
	ends_check(1u << 20, cmp_key, &calls, rec_keyed, 250000, 20, 1);
	/* Records longer than a read buffer, read from the back. */
	ends_check(1u << 20, cmp_key, &calls, rec_long, 301, 10, 0);
	/* The byte-string order: first digits compared as numbers. */
	ends_check(1u << 20, extsort_cmp_tail, c4, rec_tail, 200000, 3, 0);
}

/* A run that the thread cannot write (its directory gone after the first
 * run): the failure comes back from a later add or from finish, with the
 * reason, and freeing is clean. */
static void test_thread_failure(void **state)
{
	(void)state;
	char dir[] = "/tmp/joseki-extsort-XXXXXX";
	assert_non_null(mkdtemp(dir));
	atomic_int calls = 0;
	ExtSort *s;
	assert_int_equal(extsort_open(&s, dir, 1u << 20, cmp_key, &calls), 0);
	uint8_t big[8 + 1024] = {0};
	ExtSortStats st = {0};
	while (st.runs == 0) {
		assert_int_equal(extsort_add(s, big, sizeof big), 0);
		extsort_stats(s, &st);
	}
	assert_int_equal(rmdir(dir), 0);
	int rc = 0;
	for (int i = 0; i < 5000 && rc == 0; i++) rc = extsort_add(s, big, sizeof big);
	if (rc == 0) rc = extsort_finish(s);
	assert_int_equal(rc, -1);
	assert_int_equal(errno, ENOENT);
	extsort_free(s);
}

/* The sorter's own memory within its budget, while records are added (two
 * buffers, one being written by the thread) and while the runs are merged
 * (the read buffers): the process's anonymous peak (shogi/memuse.h, sampled)
 * above what it held before. First of the tests, so that the peak is this
 * one's. */
static void test_within_budget(void **state)
{
	(void)state;
	assert_int_equal(memuse_start(), 0);
	uint64_t base = memuse_anon_now(), budget = 24u << 20;
	ExtSort *s;
	assert_int_equal(extsort_open(&s, NULL, budget, extsort_cmp_bytes, (void *)(uintptr_t)16),
	                 0);
	uint8_t rec[40] = {0};
	uint64_t rng = 5;
	for (uint32_t i = 0; i < 3000000; i++) { /* 120 MB of records, 48 MB of items */
		uint64_t r = rng_next(&rng);
		memcpy(rec, &r, 8);
		memcpy(rec + 8, &i, 4);
		assert_int_equal(extsort_add(s, rec, sizeof rec), 0);
	}
	assert_int_equal(extsort_finish(s), 0);
	const void *out;
	size_t len;
	uint64_t n = 0;
	while (extsort_next(s, &out, &len) == 1) n++;
	assert_int_equal(n, 3000000);
	ExtSortStats st;
	extsort_stats(s, &st);
	assert_true(st.runs >= 5);
	extsort_free(s);
	uint64_t peak = memuse_anon_peak();
	if (peak > base + budget)
		fail_msg("peak %llu MiB above the %llu MiB before: over the budget of %llu MiB",
		         (unsigned long long)((peak - base) >> 20),
		         (unsigned long long)(base >> 20), (unsigned long long)(budget >> 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_within_budget),  cmocka_unit_test(test_in_memory),
	    cmocka_unit_test(test_runs),           cmocka_unit_test(test_levels),
	    cmocka_unit_test(test_edges),          cmocka_unit_test(test_bytes),
	    cmocka_unit_test(test_tail),           cmocka_unit_test(test_long_records),
	    cmocka_unit_test(test_thread_failure), cmocka_unit_test(test_both_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
