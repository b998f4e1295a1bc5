/*
 * tests/search/test_mate.c — short mates (search/mate.h) and the engine on
 * them: mates in 1 by a drop, a promotion, a discovered check and past a
 * pinned defender; a pawn-drop mate (uchifuzume, illegal) that must never be
 * played or counted; mates in 3 found by mate_in_3 and by the engine within a
 * small node budget; and positions where the natural move (winning a rook)
 * walks into a mate in 1, which the engine must not play. Every mate is
 * checked by brute force with the rules core, not taken from the code under
 * test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/engine.h"
#include "search/mate.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

static Position *parse(const char *spec)
{
	static Position pos;
	char err[SHOGI_ERRLEN];
	if (position_parse(&pos, spec, err) < 0) fail_msg("%s: %s", spec, err);
	return &pos;
}

static Move move_of(const Position *pos, const char *usi)
{
	Move m = MOVE_NONE;
	if (usi_move_parse(&m, usi, strlen(usi), NULL) < 0) fail_msg("bad move %s", usi);
	(void)pos;
	return m;
}

/* By the rules alone: after m the side to move has no legal move. */
static bool mates(Position *pos, Move m)
{
	if (!pos_is_legal(pos, m)) return false;
	pos_do_move(pos, m);
	bool r = movegen_count(pos) == 0;
	pos_undo_move(pos);
	return r;
}

/* By the rules alone: some legal move mates at once. */
static bool has_mate1(Position *pos)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	for (int i = 0; i < n; i++)
		if (mates(pos, moves[i])) return true;
	return false;
}

/* By the rules alone: m checks, and every reply allows a mate at once. */
static bool forces_mate3(Position *pos, Move m)
{
	if (!pos_is_legal(pos, m) || !pos_gives_check(pos, m)) return false;
	pos_do_move(pos, m);
	Move replies[MOVEGEN_MAX];
	int n = movegen_legal(pos, replies);
	bool ok = n > 0;
	for (int i = 0; i < n && ok; i++) {
		pos_do_move(pos, replies[i]);
		ok = has_mate1(pos);
		pos_undo_move(pos);
	}
	pos_undo_move(pos);
	return ok;
}

static EngineResult search_nodes(const Position *pos, uint64_t nodes)
{
	Engine *e;
	assert_int_equal(engine_new(&e, 4), 0);
	EngineLimits lim = {.nodes = nodes, .clear_hash = true};
	EngineResult r;
	assert_int_equal(engine_search(e, &r, pos, &lim, NULL, NULL), 0);
	engine_free(e);
	assert_true(r.nlines > 0);
	return r;
}

static const struct {
	const char *spec, *kind, *move; /* move: the one mate, or NULL when several */
} MATE1[] = {
    /* gold drop on the king's head, held by a pawn */
    {"sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1", "drop", "G*5b"},
    /* only the promoted pawn covers 4b and 6b; the lance holds it */
    {"sfen 4k4/9/4P4/9/4L4/9/9/9/4K4 b - 1", "promotion", "5c5b+"},
    /* the silver steps off the file: the rook mates along it */
    {"sfen 7lk/7p1/9/9/8S/9/9/9/4K3R b - 1", "discovered check", NULL},
    /* the silver on 4a could take the gold, but the rook pins it */
    {"sfen 4ks2R/9/4P4/9/9/9/9/9/4K4 b G 1", "pinned defender", "G*5b"},
    /* the same, White to move (the board turned) */
    {"sfen 4k4/9/9/9/9/9/4p4/9/r2SK4 w g 1", "pinned defender, White", "G*5h"},
};

static void test_mate__mate_in_1_by_drop_promotion_discovery_and_past_a_pin(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof MATE1 / sizeof MATE1[0]; i++) {
		Position *pos = parse(MATE1[i].spec);
		Move m = mate_in_1(pos);
		char mv[USI_MOVE_MAX] = "none";
		if (m) usi_move_write(m, mv);
		if (m == MOVE_NONE || !mates(pos, m))
			fail_msg("%s (%s): mate_in_1 gave %s", MATE1[i].spec, MATE1[i].kind, mv);
		if (MATE1[i].move) {
			Move want = move_of(pos, MATE1[i].move);
			assert_true(mates(pos, want));
			if (m != want)
				fail_msg("%s: %s, expected %s", MATE1[i].spec, mv, MATE1[i].move);
		}
		if (!strcmp(MATE1[i].kind, "discovered check")) {
			/* the moved piece itself does not attack the king */
			Square k = pos->king_sq[color_flip(pos->side)];
			Piece p = pos->board[move_from(m)];
			pos_do_move(pos, m);
			assert_false(bb_test(
			    bb_piece_attacks(pos->board[move_to(m)], move_to(m), pos->occupied),
			    k));
			pos_undo_move(pos);
			assert_int_equal(piece_type(p), SILVER);
		}
		EngineResult r = search_nodes(pos, 2000);
		assert_int_equal(r.lines[0].value, VALUE_MATE - 1);
		assert_true(mates(pos, r.bestmove));
	}
	/* the promotion case: the same move unpromoted does not mate */
	Position *pos = parse(MATE1[1].spec);
	assert_true(pos_is_legal(pos, move_of(pos, "5c5b")));
	assert_false(mates(pos, move_of(pos, "5c5b")));
}

/*
 * Only a pawn drop would mate: illegal (uchifuzume). It is not generated, not
 * found as a mate, and the engine plays something else, without a mate score.
 */
static void test_mate__a_pawn_drop_mate_is_never_played(void **state)
{
	(void)state;
	static const char *const SPECS[] = {
	    "sfen 3lkl3/9/9/2B1N4/9/9/9/9/4K4 b P 1",
	    "sfen 4k4/9/9/9/9/4n1b2/9/9/3LKL3 w p 1",
	};
	static const char *const DROPS[] = {"P*5b", "P*5h"};
	for (int i = 0; i < 2; i++) {
		Position *pos = parse(SPECS[i]);
		Move drop = move_of(pos, DROPS[i]);
		/* the drop would leave no reply: a mate, had it been legal */
		Position *mod = malloc(sizeof *mod);
		assert_non_null(mod);
		Piece board[SQ_NB];
		memcpy(board, pos->board, sizeof board);
		board[move_to(drop)] = piece_make(pos->side, PAWN);
		Hand hand[COLOR_NB] = {pos->hand[BLACK], pos->hand[WHITE]};
		hand[pos->side] = hand_sub(hand[pos->side], PAWN);
		assert_int_equal(pos_set(mod, board, hand, color_flip(pos->side), 2, NULL), 0);
		assert_true(pos_in_check(mod));
		assert_int_equal(movegen_count(mod), 0);
		free(mod);
		assert_false(pos_is_legal(pos, drop));
		assert_false(movegen_is_legal(pos, drop));
		assert_false(has_mate1(pos));
		assert_int_equal(mate_in_1(pos), MOVE_NONE);
		uint64_t n = 0;
		Move m3 = mate_in_3(pos, &n, 0);
		if (m3 != MOVE_NONE) assert_true(forces_mate3(pos, m3));
		EngineResult r = search_nodes(pos, 20000);
		assert_int_not_equal(r.bestmove, drop);
		assert_true(pos_is_legal(pos, r.bestmove));
		assert_true(r.lines[0].value < VALUE_MATE - 1);
	}
}

static const struct {
	const char *spec, *kind;
} MATE3[] = {
    {"sfen 2B2k3/4s2+P1/7S1/9/9/9/9/9/8K b GS 1", "drops"},
    {"sfen g8/nk7/2L6/B8/1G7/9/9/9/3K5 b G 1", "drop among defenders"},
    {"sfen 2sb5/2bk5/9/9/3N5/9/9/9/6K2 b 2G 1", "drops past two bishops"},
    {"sfen 5n3/6k2/5p3/4B2L1/5L3/9/9/9/K8 b BN 1", "promotion"},
    {"sfen 3l5/4k4/3s2+P2/1+B7/4N4/9/9/9/7K1 b B 1", "knight promotion"},
    {"sfen 1nk6/2b6/5+B3/2+BN5/9/9/9/9/K8 b R 1", "horse move"},
};

static void test_mate__mate_in_3_found_by_mate_in_3_and_the_engine(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof MATE3 / sizeof MATE3[0]; i++) {
		Position *pos = parse(MATE3[i].spec);
		assert_false(has_mate1(pos));
		uint64_t n = 0;
		Move m = mate_in_3(pos, &n, 0);
		char mv[USI_MOVE_MAX] = "none";
		if (m) usi_move_write(m, mv);
		if (m == MOVE_NONE || !forces_mate3(pos, m))
			fail_msg("%s (%s): mate_in_3 gave %s", MATE3[i].spec, MATE3[i].kind, mv);
		EngineResult r = search_nodes(pos, 50000);
		if (r.lines[0].value != VALUE_MATE - 3 || !forces_mate3(pos, r.bestmove))
			fail_msg("%s (%s): the engine gave value %d", MATE3[i].spec, MATE3[i].kind,
			         r.lines[0].value);
	}
}

/*
 * Taking the free rook with the gold leaves the king's head to a gold drop
 * (held by the pawn): mate in 1. Checked by the rules; the engine, at small
 * budgets and from a cleared table, never plays it, and never any move that
 * allows a mate in 1 when a safe one exists.
 */
static void test_mate__a_natural_move_into_mate_in_1_is_not_played(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *trap;
	} CASES[] = {
	    {"sfen 4k4/9/9/9/9/9/4pr3/5G3/4K4 b g 1", "4h4g"},
	    {"sfen 4k4/3g5/3RP4/9/9/9/9/9/4K4 w G 1", "6b6c"},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		Position *pos = parse(CASES[i].spec);
		Move trap = move_of(pos, CASES[i].trap);
		assert_true(pos_is_legal(pos, trap));
		/* the trap is real: after it the opponent mates at once */
		pos_do_move(pos, trap);
		assert_true(has_mate1(pos));
		pos_undo_move(pos);
		for (uint64_t nodes = 500; nodes <= 64000; nodes *= 2) {
			EngineResult r = search_nodes(pos, nodes);
			char mv[USI_MOVE_MAX];
			usi_move_write(r.bestmove, mv);
			if (r.bestmove == trap)
				fail_msg("%s: the engine took the rook at %llu nodes",
				         CASES[i].spec, (unsigned long long)nodes);
			pos_do_move(pos, r.bestmove);
			bool mated_next = has_mate1(pos);
			pos_undo_move(pos);
			if (mated_next)
				fail_msg("%s: %s at %llu nodes allows a mate in 1", CASES[i].spec,
				         mv, (unsigned long long)nodes);
		}
	}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mate__mate_in_1_by_drop_promotion_discovery_and_past_a_pin),
	    cmocka_unit_test(test_mate__a_pawn_drop_mate_is_never_played),
	    cmocka_unit_test(test_mate__mate_in_3_found_by_mate_in_3_and_the_engine),
	    cmocka_unit_test(test_mate__a_natural_move_into_mate_in_1_is_not_played),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
