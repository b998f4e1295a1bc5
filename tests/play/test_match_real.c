/*
 * tests/play/test_match_real.c — `joseki match` between the two real USI
 * engines Debian ships, fairy-stockfish (A) and gpsusi (B) (a missing one
 * fails the test with a message naming tools/install-deps.sh): four short
 * games (16 plies at most) from two openings, each played with either colour. Every game is played
 * to an end by the rules or the move limit — no fault (illegal move, timeout, crash) on either
 * side, though gpsusi takes only time controls (the driver sends byoyomi) — and every CSA record
 * replays with `joseki replay` to the end the match reported, with both engines' moves in it. About
 * 8 s of CPU.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_play__match_fairy_stockfish_against_gpsusi),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
