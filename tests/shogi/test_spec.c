/*
 * tests/shogi/test_spec.c — the position spec writer (shogi/spec.h):
 * "startpos" only for the start position at move 1, "sfen ..." otherwise,
 * " moves ..." only when there are moves, cut specs NUL-terminated with the
 * whole length returned, and every spec of a game read back by position_parse
 * to the same position, the game left as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/spec.h"
#include "shogi/zobrist.h"
#include "tests/support/support.h"

static Move usi(const char *s)
{
	Move m;
	assert_int_equal(usi_move_parse(&m, s, strlen(s), NULL), 0);
	return m;
}

static void test_spec__startpos_sfen_and_moves(void **state)
{
	(void)state;
	char buf[POSITION_SPEC_MAX(3)];
	assert_int_equal(position_spec_format(buf, sizeof buf, SFEN_STARTPOS, NULL, 0), 8);
	assert_string_equal(buf, "startpos");
	const Move mv[] = {usi("7g7f"), usi("3c3d"), usi("8h2b+")};
	size_t n = position_spec_format(buf, sizeof buf, SFEN_STARTPOS, mv, 3);
	assert_string_equal(buf, "startpos moves 7g7f 3c3d 8h2b+");
	assert_int_equal(n, strlen(buf));
	/* The start board at another move number is not "startpos". */
	const char *later = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 3";
	position_spec_format(buf, sizeof buf, later, mv, 1);
	assert_string_equal(
	    buf, "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 3 moves 7g7f");
	position_spec_format(buf, sizeof buf, "4k4/9/4G4/9/9/9/9/9/4K4 b G 1", NULL, 0);
	assert_string_equal(buf, "sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1");
}

static void test_spec__a_cut_spec_is_terminated_and_says_its_length(void **state)
{
	(void)state;
	const Move mv[] = {usi("7g7f"), usi("3c3d")};
	const char *whole = "startpos moves 7g7f 3c3d";
	for (size_t cap = 0; cap <= strlen(whole) + 1; cap++) {
		char buf[64];
		memset(buf, 'x', sizeof buf);
		assert_int_equal(position_spec_format(buf, cap, SFEN_STARTPOS, mv, 2),
		                 strlen(whole));
		if (cap) {
			assert_int_equal(strlen(buf),
			                 cap - 1 < strlen(whole) ? cap - 1 : strlen(whole));
			assert_memory_equal(buf, whole, strlen(buf));
		}
		assert_int_equal(buf[cap], 'x'); /* nothing past cap */
	}
}

/* Random games from the start position and from a set-up one: the spec
 * parses back to the same position and history; the game is left as it was. */
static void test_spec__a_game_reads_back_the_same(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_spec__a_game_reads_back_the_same");
	Position *pos = malloc(sizeof *pos), *back = malloc(sizeof *back);
	char *buf = malloc(POSITION_SPEC_MAX(POS_MAX_STATES));
	assert_non_null(pos);
	assert_non_null(back);
	assert_non_null(buf);
	char err[SHOGI_ERRLEN];
	for (int g = 0; g < 40; g++) {
		const char *start =
		    g % 2 ? "startpos"
		          : "sfen ln1gkg1nl/6+R2/2sppps2/pN4p1p/9/P5P1P/2PPPP3/1S2K2s1/L2G1G1NL w "
		            "BSPbp 40";
		assert_int_equal(position_parse(pos, start, err), 0);
		int plies = (int)(ts_rand(&rng) % 120);
		for (int k = 0; k < plies; k++) {
			Move legal[MOVEGEN_MAX];
			int n = movegen_legal(pos, legal);
			if (!n) break;
			pos_do_move(pos, legal[ts_rand(&rng) % (uint64_t)n]);
		}
		Key key = pos_key(pos);
		int hist = pos_history_len(pos);
		size_t len = position_spec_of_game(buf, POSITION_SPEC_MAX(hist), pos);
		assert_int_equal(len, strlen(buf));
		assert_true(key_equal(pos_key(pos), key));
		assert_int_equal(pos_history_len(pos), hist);
		assert_int_equal(strncmp(buf, g % 2 ? "startpos" : "sfen ", g % 2 ? 8 : 5), 0);
		if (position_parse(back, buf, err) < 0) fail_msg("%s: %s", buf, err);
		assert_true(key_equal(pos_key(back), key));
		assert_int_equal(pos_history_len(back), hist);
		for (int i = 1; i <= hist; i++)
			assert_int_equal(back->states[i].move, pos->states[i].move);
	}
	free(pos);
	free(back);
	free(buf);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spec__startpos_sfen_and_moves),
	    cmocka_unit_test(test_spec__a_cut_spec_is_terminated_and_says_its_length),
	    cmocka_unit_test(test_spec__a_game_reads_back_the_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
