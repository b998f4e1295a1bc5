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
/* A check's verdict rc (message err) on sfen: taken when why is NULL, else
 * refused as illegal with why in its message. */
static void expect_verdict(const char *sfen, const char *why, int rc, const char *err)
{
	if (!why && rc != 0) fail_msg("%s: refused: %s", sfen, err);
	if (why && (rc != SHOGI_EILLEGAL || !strstr(err, why)))
		fail_msg("%s: %d '%s', not '%s'", sfen, rc, err, why);
}

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
		expect_verdict(CASES[i].sfen, CASES[i].why, pos_check_game(&pos, err), err);
	}
	/* Every position of a game from the start is taken (a game's check on the
	 * side to move included). */
	assert_int_equal(position_parse(&pos, "startpos moves 7g7f 3c3d 8h3c+", NULL), 0);
	assert_true(pos_in_check(&pos));
	assert_int_equal(pos_check_game(&pos, NULL), 0);
}

/* pos_set finds pieces that can never move on its bitboards, of both
 * colours, and names the first square (in square order) that has one; the
 * same kinds one rank short of that, or promoted, are taken. */
static void test_position__pieces_that_can_never_move_are_refused_by_square(void **state)
{
	(void)state;
	static Position pos;
	static const struct {
		const char *sfen, *why; /* why NULL: taken */
	} CASES[] = {
	    {"P3k4/9/9/9/9/9/9/9/4K4 b - 1", "pawn on 9a can never move"},
	    {"4k3L/9/9/9/9/9/9/9/4K4 b - 1", "lance on 1a can never move"},
	    {"4k4/4N4/9/9/9/9/9/9/4K4 b - 1", "knight on 5b can never move"},
	    {"4k4/9/9/9/9/9/9/9/p3K4 b - 1", "pawn on 9i can never move"},
	    {"4k4/9/9/9/9/9/9/9/4K3l b - 1", "lance on 1i can never move"},
	    {"4k4/9/9/9/9/9/9/n8/4K4 b - 1", "knight on 9h can never move"},
	    /* Two at once: the first square (file 1 comes before file 9). */
	    {"P3k3N/9/9/9/9/9/9/9/4K4 b - 1", "knight on 1a can never move"},
	    {"+P3k3+L/1+N7/9/9/9/9/9/+n8/+p3K3+l b - 1", NULL},
	    {"4k4/9/N8/9/9/9/9/9/4K4 b - 1", NULL},  /* a knight on rank c moves */
	    {"p3k4/9/9/9/9/9/9/9/4K3P b - 1", NULL}, /* each at the other's far rank */
	    {"4k4/9/9/9/9/9/9/n8/4K4 w - 1", "knight on 9h"},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		char err[SHOGI_ERRLEN] = "";
		expect_verdict(CASES[i].sfen, CASES[i].why,
		               sfen_parse(&pos, CASES[i].sfen, NULL, err), err);
	}
}

/* Every position of long random games, set up afresh by pos_set from its
 * board, hands and side, has the bitboards, keys and checkers that the moves
 * made gave it: pos_set finds its occupied squares and colours eight
 * squares at a time, and these games put pieces on all 81 (squares 62-64 at
 * the words' seams and 80, the last, among them). */
static void test_position__pos_set_agrees_with_the_moves_made(void **state)
{
	(void)state;
	static Position pos, fresh;
	static Move moves[MOVEGEN_MAX];
	uint64_t seed = 0x9e3779b97f4a7c15u;
	int positions = 0;
	bool seen[SQ_NB][2] = {{false}};
	for (int game = 0; game < 40; game++) {
		pos_set_startpos(&pos);
		for (int ply = 0; ply < 300; ply++) {
			char err[SHOGI_ERRLEN] = "";
			assert_int_equal(
			    pos_set(&fresh, pos.board, pos.hand, pos.side, pos.game_ply, err), 0);
			for (int c = 0; c < COLOR_NB; c++)
				assert_memory_equal(&fresh.by_color[c], &pos.by_color[c],
				                    sizeof(Bitboard));
			for (int pt = 0; pt < PT_NB; pt++)
				assert_memory_equal(&fresh.by_type[pt], &pos.by_type[pt],
				                    sizeof(Bitboard));
			assert_memory_equal(&fresh.occupied, &pos.occupied, sizeof(Bitboard));
			assert_memory_equal(&pos_st(&fresh)->checkers, &pos_st(&pos)->checkers,
			                    sizeof(Bitboard));
			assert_true(key_equal(pos_key(&fresh), pos_key(&pos)));
			assert_int_equal(fresh.king_sq[BLACK], pos.king_sq[BLACK]);
			assert_int_equal(fresh.king_sq[WHITE], pos.king_sq[WHITE]);
			for (int sq = 0; sq < SQ_NB; sq++)
				if (pos.board[sq]) seen[sq][piece_color(pos.board[sq])] = true;
			positions++;
			int n = movegen_legal(&pos, moves);
			if (n == 0 || pos.nstates >= POS_MAX_STATES) break;
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			pos_do_move(&pos, moves[seed % (uint64_t)n]);
		}
	}
	/* The games reached every square with pieces of both colours. */
	for (int sq = 0; sq < SQ_NB; sq++)
		if (!seen[sq][BLACK] || !seen[sq][WHITE])
			fail_msg("square %d never held a piece of each colour", sq);
	assert_true(positions > 5000);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_position__king_in_check_of_the_side_not_to_move_is_never_captured),
	    cmocka_unit_test(test_position__material_beyond_what_a_hand_can_count_is_refused),
	    cmocka_unit_test(test_position__what_no_game_reaches_is_refused_by_pos_check_game),
	    cmocka_unit_test(test_position__pieces_that_can_never_move_are_refused_by_square),
	    cmocka_unit_test(test_position__pos_set_agrees_with_the_moves_made),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
