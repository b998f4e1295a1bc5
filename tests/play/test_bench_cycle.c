/*
 * tests/play/test_bench_cycle.c — `make bench-cycle` in its smoke form
 * (BENCH_CYCLE_SMOKE=1 tools/bench-cycle.sh): the whole script, against
 * Debian's fairy-stockfish (a missing engine fails the test, naming
 * tools/install-deps.sh), with two openings, one generation and small budgets,
 * so that the benchmark cannot rot: it prints the cycle's table with the
 * generation's row, the engine-minutes of thinking, a line for each match
 * against the opponent the book never met, with and without the book, the
 * book's score over none game by game, and the clocked match of the book
 * against none with the clocks at the book's exit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/support.h"

static void test_bench_cycle__the_smoke_form_prints_every_table(void **state)
{
	(void)state;
	const char *fs = ts_real_engine("fairy-stockfish");
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "BENCH_CYCLE_SMOKE=1 JOSEKI=%s FAIRY_STOCKFISH=%s CYCLE_DIR=%s/work "
	                 "tools/bench-cycle.sh",
	                 ts_joseki(), fs, dir);
	if (rc != 0) fail_msg("bench-cycle: exit %d\n%s%s", rc, out, err);
	assert_non_null(strstr(err, "bench-cycle: generation 1 score "));
	assert_non_null(strstr(out, "cycle table (the book side against fairy-stockfish)\n"));
	/* The generation's row: 2 openings, both colours. */
	const char *row = strstr(out, "\n    1      4  ");
	if (!row) fail_msg("no row for generation 1:\n%s", out);
	assert_non_null(strstr(out, "\nthinking: "));
	assert_non_null(strstr(out, " engine-minutes in 1 generations; "));
	assert_non_null(strstr(out, " games played (matches and retries)\n"));
	assert_non_null(strstr(out, "\nunmet book games 4 book_plies "));
	assert_non_null(strstr(out, "\nunmet no-book games 4 book_plies 0.0 score "));
	assert_non_null(strstr(out, "\nunmet book over no-book games 4 score "));
	assert_non_null(strstr(out, "\nclock 1+0.05 book over no-book games 2 book_plies "));
	assert_non_null(strstr(out, " at the book's exit (median ply "));
	assert_non_null(strstr(out, "(goals: "));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bench_cycle__the_smoke_form_prints_every_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
