/*
 * tests/bookgen/test_think_real.c — `joseki think` with the real USI engines
 * Debian ships (fairy-stockfish, gpsusi; a missing one fails the test with a
 * message naming tools/install-deps.sh): on a book of the floodgate fixtures,
 * a few dozen positions at small budgets, then `joseki check` passes and
 * every thought record holds the engine's lines, legal in its position, with
 * the engine's depth and score (tests/support: ts_book_check_thought). A
 * second run on the same book goes on where the first stopped (no position
 * thought twice). (gpsusi's refusal of a nodes budget is tested on the
 * driver: tests/search/test_usi_real.c.) Seconds each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "shogi/position.h"
#include "tests/support/support.h"

typedef struct {
	char *dir;
	char book[512];
} Fx;

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->book, sizeof f->book, "%s/book", f->dir);
	ts_gpsshogi_home(f->dir);
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(),
	            f->book) != 0)
		fail_msg("ingest: %s", err);
	free(err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static long long thought(const Fx *f)
{
	json_t *o = ts_run_json(0, "%s stats %s --json", ts_joseki(), f->book);
	long long n = ts_jint(o, "thought");
	json_decref(o);
	return n;
}

/* Runs think with engine and args for n positions; checks its summary. */
static void think(const Fx *f, const char *engine, const char *args, int n)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s think %s --engine %s %s --positions %d --quiet",
	                 ts_joseki(), f->book, engine, args, n);
	if (rc != 0) fail_msg("think with %s: exit %d: %s%s", engine, rc, out, err);
	char want[64];
	snprintf(want, sizeof want, "think thought %d failed 0 ", n);
	if (!strstr(out, want)) fail_msg("think with %s: '%s' lacks '%s'", engine, out, want);
	free(out);
	free(err);
}

static void check_book(const Fx *f, long want_thought, int max_depth)
{
	char *out = NULL;
	int rc = ts_runf(&out, NULL, "%s check %s", ts_joseki(), f->book);
	if (rc != 0) fail_msg("check: exit %d: %s", rc, out);
	free(out);
	long nonzero = 0;
	long n = ts_book_check_thought(f->book, max_depth, &nonzero);
	assert_int_equal(n, want_thought);
	assert_int_equal(thought(f), want_thought);
	assert_true(2 * nonzero > n); /* real scores, mostly not 0 */
}

static void test_bookgen__think_with_fairy_stockfish(void **state)
{
	Fx *f = *state;
	const char *fsf = ts_real_engine("fairy-stockfish");
	const char *args = "--usi-option Threads=1 --usi-option Hash=16 --nodes 3000 --multipv 2";
	think(f, fsf, args, 24);
	check_book(f, 24, 0);
	think(f, fsf, args, 8); /* resumed: 8 new positions */
	check_book(f, 32, 0);
}

static void test_bookgen__think_with_gpsusi(void **state)
{
	Fx *f = *state;
	const char *gps = ts_real_engine("gpsusi");
	/* gpsusi takes only time controls; LimitDepth 4 ends each search at depth 4
	 * in about 0.1 s, inside the one-second byoyomi the driver sends. */
	const char *args = "--usi-option BookDepth=0 --usi-option Thread=1 "
	                   "--usi-option LimitDepth=4 --movetime 1000";
	think(f, gps, args, 12);
	check_book(f, 12, 4);
}

/*
 * gpsusi with its own opening book on (BookDepth 30, its default) answers the
 * book's first positions with a bare bestmove, no info line with a score.
 * think stored each as a thought position with no value, for good: the start
 * position "thought" and never valued, the run "30 thought, 0 failed". Each
 * is now a failed analysis that says why, nothing stored; the run ends with
 * exit 1 (its failed positions stay leased: nothing is left to select).
 */
static void test_bookgen__think_refuses_an_engines_own_book_moves(void **state)
{
	Fx *f = *state;
	const char *gps = ts_real_engine("gpsusi");
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s think %s --engine %s --usi-option BookDepth=30 --usi-option Thread=1 "
	                 "--usi-option LimitDepth=4 --movetime 1000 --positions 5 --quiet",
	                 ts_joseki(), f->book, gps);
	if (rc != 1) fail_msg("think: exit %d, not 1: %s%s", rc, out, err);
	if ((!strstr(err, "engines keep failing: gpsshogi") &&
	     !strstr(err, "every analysis failed: gpsshogi")) ||
	    !strstr(err, " with no analysis (no info line with a score): its own opening book? "
	                 "Turn it off (USI_OwnBook=false; gpsshogi: BookDepth=0;"))
		fail_msg("the failure does not say why: %s", err);
	free(out);
	free(err);
	assert_int_equal(thought(f), 0);
	/* With the book off, the same positions are analysed. */
	think(f, gps,
	      "--usi-option BookDepth=0 --usi-option Thread=1 --usi-option LimitDepth=4 "
	      "--movetime 1000",
	      3);
	check_book(f, 3, 4);
}

/*
 * think --opponent fairy-stockfish with --opponent-restart, stopped part-way
 * by a position budget: a match from the same roots against the same engine
 * (--restart-engines, the same nodes) leaves the book no earlier than the
 * walks said: the book side's mean book plies a game at least the run's reach.
 */
static void test_bookgen__probe_reach_holds_against_fairy_stockfish(void **state)
{
	Fx *f = *state;
	const char *fsf = ts_real_engine("fairy-stockfish");
	char roots[600];
	snprintf(roots, sizeof roots, "%s/roots.txt", f->dir);
	static const char R[] = "startpos moves 7g7f 3c3d 2g2f 8c8d\n"
	                        "startpos moves 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b\n";
	assert_int_equal(ts_write_file(roots, R, sizeof R - 1), 0);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "%s think %s --engine %s --engines 2 --nodes 3000 --multipv 1 --roots %s "
	                 "--opponent %s --opponent-restart --opponent-nodes 2000 --positions 40 "
	                 "--quiet",
	                 ts_joseki(), f->book, fsf, roots, fsf);
	if (rc != 0) fail_msg("think: exit %d: %s%s", rc, out, err);
	const char *p = strstr(out, " reach ");
	if (!p) fail_msg("no reach in '%s'", out);
	double reach = strtod(p + 7, NULL);
	free(out);
	free(err);
	json_t *m = ts_run_json(0,
	                        "%s match --engine-a %s --engine-b %s --book-a %s --openings %s "
	                        "--games 4 --nodes 2000 --restart-engines --concurrency 2 --json",
	                        ts_joseki(), fsf, fsf, f->book, roots);
	json_t *res = json_object_get(m, "results");
	assert_int_equal(json_array_size(res), 4);
	int sum = 0;
	for (size_t g = 0; g < 4; g++)
		sum += (int)json_integer_value(
		    json_array_get(json_object_get(json_array_get(res, g), "book_plies"), 0));
	json_decref(m);
	/* No game leaves the book before the walks said. One may stay longer:
	 * where its line's walks never asked the opponent, the reply played may
	 * lead to a position the book holds from the other line (the two roots
	 * transpose: 2g2f 8c8d 2f2e 8d8e), which the reach does not count. */
	if (sum < 4 || sum / 4.0 < reach)
		fail_msg("the match's book plies a game %.2f, the walks' reach %.2f", sum / 4.0,
		         reach);
	print_message("probe reach %.2f, the match's book plies a game %.2f\n", reach, sum / 4.0);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bookgen__think_with_fairy_stockfish, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_bookgen__think_with_gpsusi, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bookgen__think_refuses_an_engines_own_book_moves,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bookgen__probe_reach_holds_against_fairy_stockfish,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
