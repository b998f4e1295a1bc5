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

/*
 * pos_check_game refuses what pos_set takes on purpose and no game reaches:
 * more of a kind than a set (board and both hands, promoted counted as their
 * kind), a missing king, the side not to move in check; and takes a full
 * set, a handicap set-up and a check on the side to move.
 */
static void test_position__what_no_game_reaches_is_refused_by_pos_check_game(void **state)
{
	(void)state;
	static Position pos;
	static const struct {
		const char *sfen, *why; /* why NULL: taken */
	} CASES[] = {
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1", NULL},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1", NULL},                   /* a whole set */
	    {"lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1", NULL}, /* handicap */
	    {"4k4/9/9/9/9/9/9/4r4/4K4 b - 1", NULL}, /* the side to move in check */
	    {"4k4/9/9/9/9/9/9/9/4K4 b 3R 1",
	     "3 rooks (board and hands, promoted counted): a set has 2"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 19P 1",
	     "19 pawns (board and hands, promoted counted): a set has 18"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1", "19 pawns"},
	    {"4k4/9/9/9/4+R4/9/9/9/4K4 b Rr 1", "3 rooks"},    /* a dragon is a rook */
	    {"4k4/9/9/9/4+P4/9/9/9/4K4 b 9p9P 1", "19 pawns"}, /* a tokin is a pawn */
	    {"4k4/9/9/9/9/9/9/9/4K4 w 5G 1", "5 golds"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 3B 1", "3 bishops"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 5S 1", "5 silvers"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 5N 1", "5 knights"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 5L 1", "5 lances"},
	    {"4k4/4R4/9/9/9/9/9/9/4K4 b - 1",
	     "the white king is in check with black to move (it could be captured)"},
	    {"4k4/9/9/9/9/9/9/4r4/4K4 w - 1", "the black king is in check with white to move"},
	    {"4k4/9/9/9/9/9/9/9/9 b - 1", "no black king: both kings must be on the board"},
	    {"9/9/9/9/9/9/9/9/4K4 b - 1", "no white king"},
	    {"9/9/9/9/9/9/9/9/9 b - 1", "no kings"},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		char err[SHOGI_ERRLEN] = "";
		assert_int_equal(sfen_parse(&pos, CASES[i].sfen, NULL, err), 0);
		int rc = pos_check_game(&pos, err);
		if (!CASES[i].why && rc != 0) fail_msg("%s: refused: %s", CASES[i].sfen, err);
		if (CASES[i].why && (rc != SHOGI_EILLEGAL || !strstr(err, CASES[i].why)))
			fail_msg("%s: %d '%s', not '%s'", CASES[i].sfen, rc, err, CASES[i].why);
	}
	/* Every position of a game from the start is taken (a game's check on the
	 * side to move included). */
	assert_int_equal(position_parse(&pos, "startpos moves 7g7f 3c3d 8h3c+", NULL), 0);
	assert_true(pos_in_check(&pos));
	assert_int_equal(pos_check_game(&pos, NULL), 0);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_position__king_in_check_of_the_side_not_to_move_is_never_captured),
	    cmocka_unit_test(test_position__material_beyond_what_a_hand_can_count_is_refused),
	    cmocka_unit_test(test_position__what_no_game_reaches_is_refused_by_pos_check_game),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
