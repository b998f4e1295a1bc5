/*
 * tests/play/test_match_real.c — `joseki match` between the two real USI
 * engines Debian ships, fairy-stockfish (A) and gpsusi (B) (a missing one
 * fails the test with a message naming tools/install-deps.sh): four short
 * games (16 plies at most) from two openings, each played with either colour. Every game is played
 * to an end by the rules or the move limit — no fault (illegal move, timeout, crash) on either
 * side, though gpsusi takes only time controls (the driver sends byoyomi) — and every CSA record
 * replays with `joseki replay` to the end the match reported, with both engines' moves in it. About
 * 8 s of CPU. Then tools/opponent_spread.py with fairy-stockfish.
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

#include "tests/support/support.h"

#define GAMES 4

static void test_play__match_fairy_stockfish_against_gpsusi(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	ts_gpsshogi_home(dir);
	const char *fsf = ts_real_engine("fairy-stockfish"), *gps = ts_real_engine("gpsusi");
	char openings[600];
	snprintf(openings, sizeof openings, "%s/openings.txt", dir);
	const char *text = "startpos moves 7g7f 3c3d\nstartpos moves 2g2f 8c8d 2f2e 8d8e\n";
	assert_int_equal(ts_write_file(openings, text, strlen(text)), 0);
	json_t *j = ts_run_json(
	    0,
	    "%s match --engine-a %s --option-a Threads=1 --option-a Hash=16 --engine-b %s "
	    "--option-b BookDepth=0 --option-b Thread=1 --option-b LimitDepth=4 --games %d "
	    "--movetime 50 --max-moves 16 --openings %s --concurrency 1 --out %s/out --json "
	    "--quiet",
	    ts_joseki(), fsf, gps, GAMES, openings, dir);
	assert_int_equal(ts_jint(j, "played"), GAMES);
	assert_int_equal(ts_jint(j, "wins") + ts_jint(j, "draws") + ts_jint(j, "losses"), GAMES);
	const char *na = json_string_value(json_object_get(j, "engine_a"));
	const char *nb = json_string_value(json_object_get(j, "engine_b"));
	if (!na || !nb || !strstr(na, "Fairy-Stockfish") || !strstr(nb, "gpsshogi"))
		fail_msg("engines named '%s' and '%s'", na ? na : "?", nb ? nb : "?");
	json_t *results = json_object_get(j, "results");
	assert_int_equal(json_array_size(results), GAMES);
	static const char *const FAULTS[] = {"illegal_move", "timeout", "crash"};
	for (size_t i = 0; i < GAMES; i++) {
		json_t *r = json_array_get(results, i);
		const char *end = json_string_value(json_object_get(r, "end"));
		const char *csa = json_string_value(json_object_get(r, "csa"));
		json_t *error = json_object_get(r, "error");
		assert_non_null(end);
		for (size_t k = 0; k < sizeof FAULTS / sizeof *FAULTS; k++)
			if (!strcmp(end, FAULTS[k]) || !json_is_null(error))
				fail_msg("game %zu ended by a fault: %s (%s)", i + 1, end,
				         json_string_value(error) ? json_string_value(error) : "");
		long long plies = ts_jint(r, "plies"), engine_moves = ts_jint(r, "engine_moves");
		print_message("game %zu: %s, %s after %lld plies\n", i + 1,
		              json_string_value(json_object_get(r, "result")), end, plies);
		assert_true(engine_moves >= 4); /* both engines moved, twice at least */
		/* The record replays to the same end. */
		json_t *rp = ts_run_json(0, "%s replay %s --json", ts_joseki(), csa);
		json_t *g = json_array_get(json_object_get(rp, "games"), 0);
		const char *rend = json_string_value(json_object_get(g, "end"));
		if (!rend || strcmp(rend, end))
			fail_msg("%s replays to %s, not %s", csa, rend, end);
		assert_int_equal(ts_jint(g, "plies"), plies);
		json_decref(rp);
		/* Both engines' names head the record. */
		char *text = ts_read_file(csa, NULL);
		assert_non_null(text);
		assert_non_null(strstr(text, "Fairy-Stockfish"));
		assert_non_null(strstr(text, "gpsshogi"));
		free(text);
	}
	json_decref(j);
	ts_rmtree(dir);
	free(dir);
}

/* The share of the k most played replies never falls as k grows, and the
 * first is the most played reply's share. */
static void check_spread_line(const char *out, const char *head)
{
	const char *l = strstr(out, head);
	if (!l) fail_msg("no '%s' in:\n%s", head, out);
	double top1, distinct, k[5];
	int groups;
	if (sscanf(l + strlen(head),
	           " groups %d top1 %lf distinct %lf mass k1 %lf k2 %lf k3 %lf k4 %lf k5 %lf",
	           &groups, &top1, &distinct, &k[0], &k[1], &k[2], &k[3], &k[4]) != 8)
		fail_msg("'%s' reads otherwise:\n%s", head, out);
	assert_int_equal(groups, 2);
	assert_true(top1 > 0 && top1 <= 1 && distinct >= 1);
	assert_true(k[0] == top1 && k[4] <= 1);
	for (int i = 1; i < 5; i++) assert_true(k[i] >= k[i - 1]);
}

/* tools/opponent_spread.py (docs/notes/match.md) with fairy-stockfish: two
 * openings, six games of two opponent moves each; a line that is no
 * position is named with its file and line. */
static void test_play__opponent_spread_measures_fairy_stockfish(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const char *fsf = ts_real_engine("fairy-stockfish");
	char openings[600];
	snprintf(openings, sizeof openings, "%s/openings.txt", dir);
	const char *text = "# two openings\nstartpos moves 7g7f 3c3d\nstartpos moves 2g2f 8c8d\n";
	assert_int_equal(ts_write_file(openings, text, strlen(text)), 0);
	char *out = NULL, *err = NULL;
	int rc =
	    ts_runf(&out, &err,
	            "FAIRY_STOCKFISH=%s python3 tools/opponent_spread.py -n 2 -d 6 --nodes 3000 "
	            "--book-nodes 3000 --steps 2 %s",
	            fsf, openings);
	if (rc != 0) fail_msg("opponent_spread.py: exit %d: %s", rc, err);
	assert_non_null(strstr(out, "opponent_spread positions 2 draws 6 nodes 3000 jitter 5% "
	                            "book_nodes 3000\n"));
	check_spread_line(out, "  move 1");
	double top1, distinct;
	const char *c = strstr(out, "  move 2 from a new process: top1 ");
	assert_non_null(c);
	assert_int_equal(
	    sscanf(c, "  move 2 from a new process: top1 %lf distinct %lf", &top1, &distinct), 2);
	assert_true(top1 > 0 && top1 <= 1 && distinct >= 1 && distinct <= 6);
	free(out);
	free(err);
	text = "startpos moves 7g7f\nfoo bar\n";
	assert_int_equal(ts_write_file(openings, text, strlen(text)), 0);
	out = err = NULL;
	rc = ts_runf(&out, &err, "python3 tools/opponent_spread.py -n 2 %s", openings);
	assert_int_equal(rc, 1);
	char want[700];
	snprintf(want, sizeof want, "%s:2: not a position", openings);
	if (!strstr(err, want)) fail_msg("no '%s' in: %s", want, err);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_play__match_fairy_stockfish_against_gpsusi),
	    cmocka_unit_test(test_play__opponent_spread_measures_fairy_stockfish),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
