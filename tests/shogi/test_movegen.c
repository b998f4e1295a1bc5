/*
 * tests/shogi/test_movegen.c — legal move generation against reference perft
 * counts (tests/data/perft.tsv), divide sums, and the agreement between
 * movegen, pos_is_legal, pos_gives_check and the capture/quiet split.
 *
 * Rows with more than PERFT_TEST_MAX_NODES leaves belong to `make bench`; they
 * are counted and reported, never run here, so `make test` stays fast.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "shogi/clock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/rng.h"
#include "tests/support/support.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
/*
 * Under the sanitizers (make asan) every pos_is_legal costs a full generation
 * about 25 times slower, so the generation walks stop one ply earlier there;
 * the plain `make test` build runs them in full.
 */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define WALK_DEPTH 1
#else
#define WALK_DEPTH 2
#endif

#define PERFT_PATH "tests/data/perft.tsv"
/* Above this many leaves a row is a benchmark, not a unit test. */
#define PERFT_TEST_MAX_NODES 100000000ULL
/* Divide checks re-run perft once per root move; keep them to small trees. */
#define DIVIDE_MAX_NODES 5000000ULL

typedef struct {
	char name[64];
	char sfen[SFEN_MAX];
	int depth;
	uint64_t nodes;
} PerftRow;

#define MAX_ROWS 64

/* Reads perft.tsv ("name<TAB>sfen<TAB>depth<TAB>nodes", '#' comments). */
static int load_perft(PerftRow *rows, int max)
{
	char *buf = ts_read_file(PERFT_PATH, NULL);
	assert_non_null(buf);
	int n = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *f[4];
		int nf = 0;
		char *p = line;
		while (nf < 4) {
			f[nf++] = p;
			char *tab = strchr(p, '\t');
			if (!tab) break;
			*tab = '\0';
			p = tab + 1;
		}
		if (nf != 4) fail_msg("%s: malformed row: %s", PERFT_PATH, line);
		assert_true(n < max);
		snprintf(rows[n].name, sizeof rows[n].name, "%s", f[0]);
		snprintf(rows[n].sfen, sizeof rows[n].sfen, "%s", f[1]);
		rows[n].depth = atoi(f[2]);
		rows[n].nodes = strtoull(f[3], NULL, 10);
		n++;
	}
	free(buf);
	assert_true(n > 0);
	return n;
}

static void parse_sfen_or_die(Position *pos, const char *sfen)
{
	char err[SHOGI_ERRLEN] = "";
	int rc = sfen_parse(pos, sfen, NULL, err);
	if (rc != 0) fail_msg("sfen_parse(%s) = %d: %s", sfen, rc, err);
	assert_true(pos_is_ok(pos));
}

static void test_movegen__perft_matches_fixture(void **state)
{
	(void)state;
	static PerftRow rows[MAX_ROWS];
	int n = load_perft(rows, MAX_ROWS);
	int run = 0, skipped = 0;
	static Position pos;
	for (int i = 0; i < n; i++) {
		if (rows[i].nodes > PERFT_TEST_MAX_NODES) {
			skipped++;
			continue;
		}
		parse_sfen_or_die(&pos, rows[i].sfen);
		double t0 = clock_s();
		uint64_t got = perft(&pos, rows[i].depth);
		double dt = clock_s() - t0;
		printf("perft %-20s depth %d nodes %llu (%.2fs)\n", rows[i].name, rows[i].depth,
		       (unsigned long long)got, dt);
		if (got != rows[i].nodes)
			fail_msg("perft %s depth %d: got %llu, expected %llu", rows[i].name,
			         rows[i].depth, (unsigned long long)got,
			         (unsigned long long)rows[i].nodes);
		/* perft must leave the position as it found it */
		assert_int_equal(pos_history_len(&pos), 0);
		assert_true(pos_is_ok(&pos));
		run++;
	}
	printf("perft: %d rows run, %d rows over %llu nodes left to make bench\n", run, skipped,
	       (unsigned long long)PERFT_TEST_MAX_NODES);
	assert_true(run > 0);
}

/* The sum of per-move perft(depth-1) equals perft(depth): what --divide prints. */
static void test_movegen__divide_sums_to_perft(void **state)
{
	(void)state;
	static PerftRow rows[MAX_ROWS];
	int n = load_perft(rows, MAX_ROWS);
	static Position pos;
	int checked = 0;
	for (int i = 0; i < n; i++) {
		if (rows[i].nodes > DIVIDE_MAX_NODES) continue;
		parse_sfen_or_die(&pos, rows[i].sfen);
		Move moves[MOVEGEN_MAX];
		int nm = movegen_legal(&pos, moves);
		assert_int_equal(nm, movegen_count(&pos));
		if (rows[i].depth == 1) {
			assert_int_equal((uint64_t)nm, rows[i].nodes);
			assert_int_equal(perft(&pos, 1), rows[i].nodes);
			checked++;
			continue;
		}
		uint64_t sum = 0;
		for (int k = 0; k < nm; k++) {
			pos_do_move(&pos, moves[k]);
			sum += perft(&pos, rows[i].depth - 1);
			pos_undo_move(&pos);
		}
		if (sum != rows[i].nodes)
			fail_msg("divide %s depth %d: sum %llu, expected %llu", rows[i].name,
			         rows[i].depth, (unsigned long long)sum,
			         (unsigned long long)rows[i].nodes);
		checked++;
	}
	assert_true(checked >= 10);
}

/*
 * For one position: the generated moves are distinct and pos_is_legal accepts
 * exactly them among all 65536 16-bit values (legal_checks 2), or among the
 * generated moves, their promotion-flag twins and `extra` (legal_checks 1;
 * pos_is_legal may cost a generation, so deep nodes skip it); GEN_CAPTURES
 * and GEN_QUIETS partition GEN_ALL; movegen_is_legal agrees (see below); pos_gives_check agrees
 * with the checkers after the move; pos_moved_piece is the mover's piece.
 */
static void check_generation(Position *pos, int legal_checks, const Move *extra, int nextra)
{
	Move all[MOVEGEN_MAX], caps[MOVEGEN_MAX], quiets[MOVEGEN_MAX];
	int n = movegen(pos, GEN_ALL, all);
	int nc = movegen(pos, GEN_CAPTURES, caps);
	int nq = movegen(pos, GEN_QUIETS, quiets);
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	assert_true(n >= 0 && n <= MOVEGEN_MAX);
	if (nc + nq != n) fail_msg("%s: captures %d + quiets %d != all %d", sfen, nc, nq, n);
	/* membership by table, so that the 65536-value sweep stays linear:
	 * bit 0 = in GEN_ALL, bit 1 = in GEN_CAPTURES or GEN_QUIETS */
	static uint8_t member[65536];
	for (int i = 0; i < n; i++) {
		if (member[all[i]] & 1) fail_msg("%s: move %04x generated twice", sfen, all[i]);
		member[all[i]] |= 1;
	}
	for (int i = 0; i < nc + nq; i++) {
		Move m = i < nc ? caps[i] : quiets[i - nc];
		if (!(member[m] & 1))
			fail_msg("%s: %04x from GEN_CAPTURES/QUIETS not in GEN_ALL", sfen, m);
		if (member[m] & 2) fail_msg("%s: %04x twice in captures + quiets", sfen, m);
		member[m] |= 2;
		if (i < nc) {
			/* a capture-list move captures, or is a pawn promotion */
			bool capture = !move_is_drop(m) && pos_piece(pos, move_to(m)) != PIECE_NONE;
			bool pawn_promo = !move_is_drop(m) && move_is_promote(m) &&
			                  piece_type(pos_piece(pos, move_from(m))) == PAWN;
			if (!capture && !pawn_promo)
				fail_msg("%s: %04x in GEN_CAPTURES is neither", sfen, m);
		}
	}
	for (int i = 0; i < n; i++) {
		Move m = all[i];
		if (legal_checks >= 1) {
			if (!pos_is_legal(pos, m))
				fail_msg("%s: generated move %04x not pos_is_legal", sfen, m);
			Move twin = (Move)(m ^ MOVE_PROMOTE);
			if (pos_is_legal(pos, twin) != (bool)(member[twin] & 1))
				fail_msg("%s: pos_is_legal(%04x) disagrees with movegen", sfen,
				         twin);
		}
		Piece pc = pos_moved_piece(pos, m);
		assert_int_equal(piece_color(pc), pos->side);
		if (move_is_drop(m)) {
			assert_int_equal(piece_type(pc), move_drop_type(m));
			assert_int_equal(pos_piece(pos, move_to(m)), PIECE_NONE);
		} else {
			assert_int_equal(pc, pos_piece(pos, move_from(m)));
		}
		bool gives = pos_gives_check(pos, m);
		pos_do_move(pos, m);
		bool in_check = pos_in_check(pos);
		/* the mover's own king is never left attacked */
		Color us = color_flip(pos->side);
		if (pos->king_sq[us] != SQ_NONE && pos_attacked(pos, pos->side, pos->king_sq[us]))
			fail_msg("%s: move %04x leaves the king attacked", sfen, m);
		pos_undo_move(pos);
		if (gives != in_check)
			fail_msg("%s: move %04x gives_check %d but checkers after %d", sfen, m,
			         gives, in_check);
	}
	for (int i = 0; legal_checks >= 1 && i < nextra; i++)
		if (pos_is_legal(pos, extra[i]) != (bool)(member[extra[i]] & 1))
			fail_msg("%s: pos_is_legal(%04x) disagrees with movegen", sfen, extra[i]);
	/* movegen_is_legal costs no generation: every node gets the generated
	 * moves, their twins, the parent's moves and 64 more values of a stream
	 * seeded by the position, and the root all 65536 values. */
	for (int i = 0; i < n + nextra; i++) {
		Move m = i < n ? all[i] : extra[i - n];
		for (int twin = 0; twin < 2; twin++, m ^= MOVE_PROMOTE)
			if (movegen_is_legal(pos, m) != (bool)(member[m] & 1))
				fail_msg("%s: movegen_is_legal(%04x) disagrees with movegen", sfen,
				         m);
	}
	uint64_t seed = pos_key(pos).lo;
	for (int i = 0; i < 64; i++) {
		Move m = (Move)rng_next(&seed);
		if (movegen_is_legal(pos, m) != (bool)(member[m] & 1))
			fail_msg("%s: movegen_is_legal(%04x) disagrees with movegen", sfen, m);
	}
	if (legal_checks >= 2) {
		for (uint32_t v = 0; v < 65536; v++) {
			Move m = (Move)v;
			bool legal = pos_is_legal(pos, m);
			if (legal != (bool)(member[m] & 1))
				fail_msg("%s: pos_is_legal(%04x) = %d disagrees with movegen", sfen,
				         m, legal);
			if (movegen_is_legal(pos, m) != legal)
				fail_msg("%s: movegen_is_legal(%04x) disagrees with movegen", sfen,
				         m);
		}
	}
	for (int i = 0; i < n; i++) member[all[i]] = 0;
}

/* Checks generation at every node to `depth`; pos_is_legal gets a full sweep
 * at the root and the parent's moves as extra candidates one level down. */
static void walk_tree(Position *pos, int depth, int level, const Move *parent, int nparent,
                      int *visited)
{
	check_generation(pos, level == 0 ? 2 : level == 1 ? 1 : 0, parent, nparent);
	(*visited)++;
	if (depth == 0) return;
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	for (int i = 0; i < n; i++) {
		pos_do_move(pos, moves[i]);
		walk_tree(pos, depth - 1, level + 1, moves, n, visited);
		pos_undo_move(pos);
	}
}

static void test_movegen__generated_moves_agree_with_is_legal(void **state)
{
	(void)state;
	static PerftRow rows[MAX_ROWS];
	int n = load_perft(rows, MAX_ROWS);
	static Position pos;
	const char *prev = "";
	int visited = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(prev, rows[i].sfen) == 0) continue; /* one walk per position */
		prev = rows[i].sfen;
		parse_sfen_or_die(&pos, rows[i].sfen);
		walk_tree(&pos, WALK_DEPTH, 0, NULL, 0, &visited);
	}
	printf("checked generation in %d positions\n", visited);
	assert_true(visited > (WALK_DEPTH == 2 ? 100000 : 1000));
}

static void test_movegen__sampled_positions_agree_with_is_legal(void **state)
{
	(void)state;
	char *buf = ts_read_file("tests/data/positions/sampled-v1.sfen", NULL);
	assert_non_null(buf);
	static Position pos;
	int count = 0, in_check = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *tab = strchr(line, '\t');
		if (tab) *tab = '\0';
		parse_sfen_or_die(&pos, line);
		in_check += pos_in_check(&pos);
		int visited = 0;
		walk_tree(&pos, WALK_DEPTH - 1, 0, NULL, 0, &visited);
		count++;
	}
	free(buf);
	printf("checked %d sampled positions (%d in check)\n", count, in_check);
	assert_true(count >= 40);
	assert_true(in_check >= 8); /* the fixture promises at least 8 in check */
}

static void test_movegen__no_legal_moves_is_zero(void **state)
{
	(void)state;
	static Position pos;
	/* pyshogi_no_moves: Black has nothing legal (pawns in hand only nifu/dead squares) */
	parse_sfen_or_die(
	    &pos, "+R+N+SGKG+S+N+R/+B+N+SG+LG+S+N+B/P+LPP+LPP+LP/1P2P2P1/9/9/9/9/4k4 b 9P 200");
	Move moves[MOVEGEN_MAX];
	assert_int_equal(movegen_legal(&pos, moves), 0);
	assert_int_equal(movegen_count(&pos), 0);
	assert_int_equal(perft(&pos, 1), 0);
	assert_int_equal(perft(&pos, 3), 0);

	/* a plain mate: gold on 5b protected by the pawn on 5c, White king on 5a */
	parse_sfen_or_die(&pos, "4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1");
	assert_true(pos_in_check(&pos));
	assert_int_equal(movegen_count(&pos), 0);

	/* the same without the protecting pawn: the king takes the gold */
	parse_sfen_or_die(&pos, "4k4/4G4/9/9/9/9/9/9/4K4 w - 1");
	assert_true(pos_in_check(&pos));
	/* 4a 6a 4b 6b are all covered by the gold: only 5a5b remains */
	Move moves1[MOVEGEN_MAX];
	assert_int_equal(movegen_legal(&pos, moves1), 1);
	assert_int_equal(moves1[0], move_make(sq_make(4, 0), sq_make(4, 1), false));
}

/*
 * Positions where the side not to move is in check are accepted (rules.tsv
 * has one); the king that could be taken must still never be taken: no
 * generated move and no pos_is_legal move lands on a king.
 */
static void test_movegen__never_captures_a_king(void **state)
{
	(void)state;
	static const struct {
		const char *sfen, *capture;
	} cases[] = {
	    {"8k/6G2/9/9/8L/9/9/9/9 b P 1", "1e1a"},
	    {"+R4sgnl/1+BK4k1/SG11+PLsp1/8p/P1+r+b1p1P1/1g3P2P/6P2/5+p3/L7L w GS3P3n5p 200",
	     "7e7b"},
	    {"n+Rs4lg/1+BK4k1/S1G1+PLsp1/8p/P1+r+b1p1P1/1g3P2P/6P2/5+p3/L7L w GS3P3n5p 200",
	     "7a7b"},
	};
	static Position pos;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		parse_sfen_or_die(&pos, cases[i].sfen);
		Move moves[MOVEGEN_MAX];
		int n = movegen_legal(&pos, moves);
		for (int k = 0; k < n; k++) {
			Piece target = move_is_drop(moves[k]) ? PIECE_NONE
			                                      : pos_piece(&pos, move_to(moves[k]));
			if (target != PIECE_NONE && piece_type(target) == KING)
				fail_msg("%s: generated move %04x captures the king", cases[i].sfen,
				         moves[k]);
		}
		Move m = MOVE_NONE;
		assert_int_equal(
		    usi_move_parse(&m, cases[i].capture, strlen(cases[i].capture), NULL), 0);
		if (pos_is_legal(&pos, m))
			fail_msg("%s: pos_is_legal(%s) is true", cases[i].sfen, cases[i].capture);
	}
}

/*
 * movegen_why_illegal names the rule a move breaks, one case a rule; and for
 * every 16-bit value of each position it says "legal" exactly when
 * movegen_is_legal does, with a reason otherwise.
 */
static void test_movegen__an_illegal_move_says_which_rule_it_breaks(void **state)
{
	(void)state;
	static const struct {
		const char *pos, *move, *why;
	} cases[] = {
	    {"startpos", "3c3d", "the pawn on 3c is White's, and Black is to move"},
	    {"startpos", "7g7e", "the pawn on 7g cannot move to 7e"},
	    {"startpos", "5e5d", "there is no piece on 5e"},
	    {"startpos", "2h2a", "the rook on 2h cannot move to 2a: the way is blocked"},
	    {"startpos", "5i4i", "the king on 5i cannot take Black's own gold on 4i"},
	    {"startpos", "6i6h+", "a gold cannot promote"},
	    {"startpos", "7g7f+",
	     "the pawn on 7g cannot promote: neither 7g nor 7f is in Black's promotion zone"},
	    {"startpos", "P*5e", "Black has no pawn in hand"},
	    {"startpos moves 7g7f 3c3d 8h2b", "2g2f",
	     "the pawn on 2g is Black's, and White is to move"},
	    {"sfen 4k4/P8/9/9/9/9/9/9/4K4 b - 1", "9b9a",
	     "the pawn must promote on 9a (it could never move again)"},
	    {"sfen 4k4/9/9/9/9/9/4P4/9/4K4 b P 1", "P*5e",
	     "Black has an unpromoted pawn on file 5 already (two pawns, nifu)"},
	    {"sfen 4k4/9/9/9/9/9/4P4/9/4K4 b G 1", "G*5g",
	     "5g is not empty: Black's pawn is there"},
	    {"sfen 4k4/9/9/9/9/9/9/9/4K4 b N 1", "N*5b", "a knight dropped on 5b could never move"},
	    {"sfen 8k/6S2/8G/9/9/9/9/9/4K4 b P 1", "P*1b",
	     "a pawn dropped to give mate (uchifuzume)"},
	    {"sfen 4k4/9/9/9/4r4/9/9/9/4K4 b G 1", "G*4h",
	     "Black's king is in check, and the drop does not stop it"},
	    {"sfen 4k4/9/9/9/4r4/9/4G4/9/4K4 b - 1", "5g4g", "it leaves Black's king in check"},
	    {"sfen 4k4/9/4G4/9/9/9/9/9/4K4 w - 1", "5a5b", "the king would be in check on 5b"},
	    {"sfen k8/9/9/9/4r3b/9/9/9/3GK4 b - 1", "6i6h",
	     "Black's king is in double check: only the king can move"},
	    {"sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1", "5a4a",
	     "the game is over: White, to move, is checkmated"},
	};
	static Position pos;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[SHOGI_ERRLEN] = "";
		if (position_parse(&pos, cases[i].pos, err) < 0)
			fail_msg("%s: %s", cases[i].pos, err);
		Move m = MOVE_NONE;
		assert_int_equal(usi_move_parse(&m, cases[i].move, strlen(cases[i].move), NULL), 0);
		assert_false(movegen_is_legal(&pos, m));
		assert_int_equal(movegen_why_illegal(&pos, m, err), SHOGI_EILLEGAL);
		if (strcmp(err, cases[i].why))
			fail_msg("%s %s: '%s', not '%s'", cases[i].pos, cases[i].move, err,
			         cases[i].why);
		/* usi_move_parse_legal names the move and the rule. */
		char want[2 * SHOGI_ERRLEN];
		snprintf(want, sizeof want, "'%s' is not legal in this position: %s", cases[i].move,
		         cases[i].why);
		assert_int_equal(
		    usi_move_parse_legal(&m, &pos, cases[i].move, strlen(cases[i].move), err),
		    SHOGI_EILLEGAL);
		assert_string_equal(err, want);
		for (uint32_t v = 0; v < 65536; v++) {
			err[0] = 0;
			bool legal = movegen_is_legal(&pos, (Move)v);
			int rc = movegen_why_illegal(&pos, (Move)v, err);
			if (rc != (legal ? SHOGI_OK : SHOGI_EILLEGAL) || (!legal && !err[0]))
				fail_msg("%s: %04x: legal %d, why_illegal %d '%s'", cases[i].pos, v,
				         legal, rc, err);
		}
	}
}

/* movegen_listed finds a move at every place of lists of every length
 * (around the eight-move steps) and never one that is not there. */
static void test_movegen__listed_finds_every_place_of_every_length(void **state)
{
	(void)state;
	static Position pos;
	Move legal[MOVEGEN_MAX];
	assert_int_equal(
	    sfen_parse(&pos, "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1", NULL, NULL),
	    0);
	int n = movegen_legal(&pos, legal);
	assert_int_equal(n, 593);
	for (int len = 0; len <= 40; len++) {
		for (int i = 0; i < len; i++) assert_true(movegen_listed(legal, len, legal[i]));
		for (int i = len; i < n; i++) assert_false(movegen_listed(legal, len, legal[i]));
		assert_false(movegen_listed(legal, len, MOVE_NONE));
	}
	for (int i = 0; i < n; i++) assert_true(movegen_listed(legal, n, legal[i]));
	assert_false(movegen_listed(legal, n, (Move)0xffff));
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_movegen__perft_matches_fixture),
	    cmocka_unit_test(test_movegen__divide_sums_to_perft),
	    cmocka_unit_test(test_movegen__generated_moves_agree_with_is_legal),
	    cmocka_unit_test(test_movegen__sampled_positions_agree_with_is_legal),
	    cmocka_unit_test(test_movegen__no_legal_moves_is_zero),
	    cmocka_unit_test(test_movegen__listed_finds_every_place_of_every_length),
	    cmocka_unit_test(test_movegen__never_captures_a_king),
	    cmocka_unit_test(test_movegen__an_illegal_move_says_which_rule_it_breaks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
