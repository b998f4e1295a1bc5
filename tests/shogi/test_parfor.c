/*
 * tests/shogi/test_parfor.c — the ranges of a loop on threads: every item in
 * exactly one range, the ranges in order and equal, each range's number its
 * own, and the same ranges whatever the thread count asked (clamped), for
 * loops shorter than the threads too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/parfor.h"

typedef struct {
	unsigned char *seen; /* an item's visits */
	size_t lo[PARFOR_MAX], hi[PARFOR_MAX];
	int calls[PARFOR_MAX];
} Ctx;

static void visit(void *arg, size_t lo, size_t hi, int t)
{
	Ctx *x = arg;
	x->lo[t] = lo;
	x->hi[t] = hi;
	x->calls[t]++;
	for (size_t i = lo; i < hi; i++) x->seen[i]++;
}

static void check(size_t n, int nt)
{
	Ctx x = {.seen = calloc(n + 1, 1)};
	assert_non_null(x.seen);
	parfor(n, nt, visit, &x);
	int used = nt < 1 ? 1 : nt > PARFOR_MAX ? PARFOR_MAX : nt;
	for (size_t i = 0; i < n; i++) assert_int_equal(x.seen[i], 1);
	for (int t = 0; t < PARFOR_MAX; t++) assert_int_equal(x.calls[t], t < used ? 1 : 0);
	/* In order, adjacent, of sizes differing by one at most. */
	assert_int_equal(x.lo[0], 0);
	assert_int_equal(x.hi[used - 1], n);
	for (int t = 1; t < used; t++) assert_int_equal(x.lo[t], x.hi[t - 1]);
	for (int t = 0; t < used; t++) {
		size_t len = x.hi[t] - x.lo[t];
		assert_true(len == n / (size_t)used || len == n / (size_t)used + 1);
	}
	free(x.seen);
}

static void test_every_item_once(void **state)
{
	(void)state;
	check(1000003, 2);
	check(1000003, 3);
	check(100, PARFOR_MAX);
	check(5, 8); /* fewer items than ranges: empty ranges still called */
	check(0, 4);
	check(77, 0);               /* clamped to 1 */
	check(77, PARFOR_MAX + 10); /* clamped to PARFOR_MAX */
}

static void test_threads_asked(void **state)
{
	(void)state;
	assert_int_equal(parfor_threads(10, 100), 1);
	int nt = parfor_threads(1000, 100);
	assert_true(nt >= 1 && nt <= PARFOR_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_item_once),
	    cmocka_unit_test(test_threads_asked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
