/* tests/shogi/test_position.c — set-up edge cases of shogi/position.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"

/* rules.tsv needs positions whose side not to move stands in check; no move
 * may capture that king, and every move keeps the position consistent. */
static void test_position__king_in_check_of_the_side_not_to_move_is_never_captured(void **state)
{
	(void)state;
	static const char *SFENS[] = {
	    "8k/6G2/9/9/8L/9/9/9/9 b P 1",   /* White's king attacked by the lance */
	    "4k4/9/9/9/4R4/9/9/9/4K4 b G 1", /* and by a rook, Black to move */
	    "4k4/4G4/9/9/9/9/9/9/4K4 b - 1", /* by an adjacent gold */
	};
	/* The capture each attacker would make: its piece is there, the king is
	 * its target, and still the move is not legal. */
	static const char *CAPTURES[] = {"1e1a", "5e5a", "5b5a"};
	static Position pos;
	Move moves[MOVEGEN_MAX];
	for (size_t i = 0; i < sizeof SFENS / sizeof SFENS[0]; i++) {
		char err[SHOGI_ERRLEN];
		assert_int_equal(sfen_parse(&pos, SFENS[i], NULL, err), 0);
		Square wk = pos.king_sq[WHITE];
		int n = movegen_legal(&pos, moves);
		assert_true(n > 0);
		assert_int_equal(movegen_count(&pos), n);
		for (int k = 0; k < n; k++) {
			assert_int_not_equal(move_to(moves[k]), wk);
			pos_do_move(&pos, moves[k]);
			assert_true(pos_is_ok(&pos));
			pos_undo_move(&pos);
		}
		Move cap;
		assert_int_equal(usi_move_parse(&cap, CAPTURES[i], 4, NULL), 0);
		assert_int_equal(move_to(cap), wk);
		Piece attacker = pos.board[move_from(cap)];
		assert_true(attacker != PIECE_NONE && piece_color(attacker) == BLACK);
		assert_false(pos_is_legal(&pos, cap));
		assert_true(perft(&pos, 3) > 0); /* walks on without tripping */
	}
}

static void test_position__material_beyond_what_a_hand_can_count_is_refused(void **state)
{
	(void)state;
	static Position pos;
	char err[SHOGI_ERRLEN];
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/9/9/9/9/4K4 b 32P 1", NULL, err),
	                 SHOGI_EPARSE);
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/9/9/9/9/4K4 b 4R 1", NULL, err), SHOGI_EPARSE);
	/* board plus both hands count together */
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/4R4/9/9/9/4K4 b Rr 1", NULL, err), 0);
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/4R4/9/9/9/4K4 b 2Rr 1", NULL, err),
	                 SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "rooks"));
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1", NULL, err),
	                 0);
	/* more material on the board than one set: accepted (perft.tsv uses it) */
	assert_int_equal(
	    sfen_parse(&pos, "k+n7/sg7/9/9/9/9/+r5K1g/7L1/2LN1R1+Bb b RBGSNLP 1", NULL, err), 0);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_position__king_in_check_of_the_side_not_to_move_is_never_captured),
	    cmocka_unit_test(test_position__material_beyond_what_a_hand_can_count_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
