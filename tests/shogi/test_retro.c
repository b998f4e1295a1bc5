/*
 * tests/shogi/test_retro.c — retro_parents: complete (for every legal move m of
 * every position Q tried, Q's key with m is among the candidates of Q after m)
 * and sound as far as keys go (every candidate key is the key of a board that
 * un-making its move gives), with the figures that say how tight the superset is.
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
#include "shogi/position.h"
#include "shogi/retro.h"
#include "tests/support/support.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
/* The sanitizer build (make asan) runs everything many times slower: fewer games. */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define RANDOM_GAMES 24
#else
#define RANDOM_GAMES 240
#endif
#define RANDOM_PLIES 200

static RetroMove cands[RETRO_MAX];

/* Positions with what the fixtures have little of: big hands, promoted pieces
 * of both sides next to each other, pieces in and around both zones. */
static const char *const extra_positions[] = {
    "4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1",
    "4k4/9/9/9/9/9/9/9/4K4 w 2r2b4g4s4n4l18p 1",
    "+R+B+S+N+L+P3/k8/+r+b+s+n+l+p3/9/9/9/9/9/8K b GSNLPgsnlp 1",
    "+R+B+S+N+L+P3/k8/+r+b+s+n+l+p3/9/9/9/9/9/8K w GSNLPgsnlp 1",
    "1+r2k2+b1/2P1G1P2/3+p1+s3/9/4+R4/9/3+P1+S3/2p1g1p2/1+B2K2+r1 b GSNL3Pgsnl3p 1",
    "1+r2k2+b1/2P1G1P2/3+p1+s3/9/4+R4/9/3+P1+S3/2p1g1p2/1+B2K2+r1 w GSNL3Pgsnl3p 1",
    "l1n1k1n1l/1pS1P1Sp1/p1P1+B1P1p/9/9/9/P1p1+b1p1P/1Ps1p1sP1/L1N1K1N1L b RGrg 1",
    "l1n1k1n1l/1pS1P1Sp1/p1P1+B1P1p/9/9/9/P1p1+b1p1P/1Ps1p1sP1/L1N1K1N1L w RGrg 1",
};

/* Set-up positions may leave the side not to move in check; no legal play can. */
static bool not_to_move_in_check(const Position *pos)
{
	Square k = pos->king_sq[color_flip(pos->side)];
	return k != SQ_NONE && pos_attacked(pos, pos->side, k);
}

typedef struct {
	long positions, pairs, skipped, cands;
	int max;
} Tally;

/* Every legal move m of q: q's key with m is a candidate parent of q after m.
 * ctx is a Tally. */
static void check_moves(Position *q, void *ctx, const char *where)
{
	Tally *tally = ctx;
	if (not_to_move_in_check(q)) {
		tally->skipped++;
		return;
	}
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(q, moves);
	Key qkey = pos_key(q);
	for (int i = 0; i < n; i++) {
		pos_do_move(q, moves[i]);
		int nc = retro_parents(q, cands);
		pos_undo_move(q);
		assert_true(nc >= 0 && nc < RETRO_MAX);
		int found = 0;
		for (int k = 0; k < nc; k++)
			found += cands[k].move == moves[i] && key_equal(cands[k].key, qkey);
		if (found != 1) {
			char sfen[SFEN_MAX], usi[USI_MOVE_MAX];
			sfen_write(q, sfen, sizeof sfen);
			usi_move_write(moves[i], usi);
			fail_msg("%s: %s, move %s: parent listed %d times among %d", where, sfen,
			         usi, found, nc);
		}
		tally->pairs++;
		tally->cands += nc;
		if (nc > tally->max) tally->max = nc;
	}
	tally->positions++;
}

typedef void (*PosFn)(Position *pos, void *ctx, const char *where);

/* Calls fn on the position spec describes and on each one along its history. */
static void walk_spec(const char *spec, PosFn fn, void *ctx, const char *where)
{
	static Position pos;
	char err[SHOGI_ERRLEN] = "";
	if (position_parse(&pos, spec, err) != 0) fail_msg("%s: %s: %s", where, spec, err);
	assert_true(pos_is_ok(&pos));
	for (;;) {
		fn(&pos, ctx, where);
		if (pos_history_len(&pos) == 0) break;
		pos_undo_move(&pos);
	}
}

/* As walk_spec, and one ply down: each position a legal move reaches from it. */
static void walk_spec_and_children(const char *spec, PosFn fn, void *ctx, const char *where)
{
	static Position pos;
	char err[SHOGI_ERRLEN] = "";
	if (position_parse(&pos, spec, err) != 0) fail_msg("%s: %s: %s", where, spec, err);
	fn(&pos, ctx, where);
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(&pos, moves);
	for (int i = 0; i < n; i++) {
		pos_do_move(&pos, moves[i]);
		fn(&pos, ctx, where);
		pos_undo_move(&pos);
	}
}

/*
 * Walks (walk_spec or walk_spec_and_children) column col (0-based,
 * tab-separated) of each line of path as a position spec, with prefix put
 * before it ("startpos moves " for bare move lists).
 */
typedef void (*Walker)(const char *spec, PosFn fn, void *ctx, const char *where);
static int walk_file(const char *path, int col, const char *prefix, Walker walk, PosFn fn,
                     void *ctx)
{
	char *buf = ts_read_file(path, NULL);
	if (!buf) fail_msg("cannot read %s", path);
	static char spec[16384];
	int n = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *field = line;
		for (int i = 0; i < col && field; i++) {
			field = strchr(field, '\t');
			if (field) field++;
		}
		if (!field) fail_msg("%s: no column %d in: %s", path, col + 1, line);
		field[strcspn(field, "\t\r")] = '\0';
		snprintf(spec, sizeof spec, "%s%s", prefix, field);
		walk(spec, fn, ctx, path);
		n++;
	}
	free(buf);
	return n;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Plays random legal games from the start position, calling fn at each position. */
static void random_games(const char *test, int games, PosFn fn, void *ctx)
{
	uint64_t rng = ts_seed(test) | 1;
	static Position pos;
	for (int g = 0; g < games; g++) {
		pos_set_startpos(&pos);
		for (int ply = 0; ply < RANDOM_PLIES; ply++) {
			fn(&pos, ctx, "random game");
			Move moves[MOVEGEN_MAX];
			int n = movegen_legal(&pos, moves);
			if (n == 0) break;
			pos_do_move(&pos, moves[rng_next(&rng) % (uint64_t)n]);
		}
	}
}

static void print_tally(const char *what, const Tally *t)
{
	printf("%-14s %6ld positions %8ld (Q, m) pairs, candidates avg %.1f max %d", what,
	       t->positions, t->pairs, t->pairs ? (double)t->cands / (double)t->pairs : 0.0,
	       t->max);
	if (t->skipped)
		printf(" (%ld set-ups with the side not to move in check skipped)", t->skipped);
	printf("\n");
}

static void test_retro__every_parent_is_listed(void **state)
{
	(void)state;
	long pairs = 0;
	Tally t = {0};
	assert_true(walk_file("tests/data/perft.tsv", 1, "", walk_spec_and_children, check_moves,
	                      &t) >= 20);
	print_tally("perft.tsv", &t);
	pairs += t.pairs;

	t = (Tally){0};
	assert_true(walk_file("tests/data/rules.tsv", 2, "", walk_spec, check_moves, &t) >= 40);
	print_tally("rules.tsv", &t);
	pairs += t.pairs;

	t = (Tally){0};
	walk_file("tests/data/positions/sampled-v1.sfen", 0, "", walk_spec, check_moves, &t);
	walk_file("tests/data/positions/games-v1.usi", 1, "startpos moves ", walk_spec, check_moves,
	          &t);
	print_tally("floodgate", &t);
	pairs += t.pairs;

	t = (Tally){0};
	for (size_t i = 0; i < sizeof extra_positions / sizeof *extra_positions; i++)
		walk_spec_and_children(extra_positions[i], check_moves, &t, "extra_positions");
	print_tally("extra", &t);
	pairs += t.pairs;

	t = (Tally){0};
	random_games("test_retro__every_parent_is_listed", RANDOM_GAMES, check_moves, &t);
	print_tally("random games", &t);
	pairs += t.pairs;

	printf("(Q, m) pairs checked: %ld\n", pairs);
	assert_true(pairs > 500000);
}

typedef struct {
	long positions, cands, legal;
	int max;
} Soundness;

/*
 * Un-makes c.move on p every way the rules allow (no capture, or each type in
 * the mover's hand captured as itself or promoted) and returns how many of
 * those boards pos_set accepts with c.key as key; *legal is set when c.move is
 * legal in the one that matches, whose key after c.move is then checked.
 */
static int unmake_matches(const Position *p, RetroMove c, bool *legal)
{
	Color them = p->side, us = color_flip(them);
	Square t = move_to(c.move);
	Piece board[SQ_NB];
	Hand hand[COLOR_NB] = {p->hand[BLACK], p->hand[WHITE]};
	memcpy(board, p->board, sizeof board);
	Piece captured[2 * HAND_PT_NB] = {PIECE_NONE};
	int ncap = 1;
	if (move_is_drop(c.move)) {
		assert_int_equal(board[t], piece_make(us, move_drop_type(c.move)));
		hand[us] = hand_add(hand[us], move_drop_type(c.move));
	} else {
		Square f = move_from(c.move);
		assert_int_equal(board[f], PIECE_NONE);
		assert_int_equal(piece_color(board[t]), us);
		board[f] = move_is_promote(c.move) ? (Piece)(board[t] - PROMOTE) : board[t];
		for (int pt = PAWN; pt <= GOLD; pt++) {
			if (!hand_has(hand[us], (PieceType)pt)) continue;
			captured[ncap++] = piece_make(them, (PieceType)pt);
			if (pt_can_promote((PieceType)pt))
				captured[ncap++] = piece_make(them, (PieceType)(pt + PROMOTE));
		}
	}
	static Position q;
	int matches = 0;
	for (int i = 0; i < ncap; i++) {
		Hand h[COLOR_NB] = {hand[BLACK], hand[WHITE]};
		board[t] = captured[i];
		if (captured[i]) h[us] = hand_sub(h[us], pt_unpromote(piece_type(captured[i])));
		if (pos_set(&q, board, h, us, 1, NULL) != 0 || !key_equal(pos_key(&q), c.key))
			continue;
		matches++;
		*legal = !not_to_move_in_check(&q) && pos_is_legal(&q, c.move);
		if (*legal) {
			pos_do_move(&q, c.move);
			assert_true(key_equal(pos_key(&q), pos_key(p)));
		}
	}
	return matches;
}

static int cmp_retro(const void *a, const void *b)
{
	const RetroMove *x = a, *y = b;
	int k = key_cmp(x->key, y->key);
	return k ? k : (int)x->move - (int)y->move;
}

/* Every candidate of p is exactly one un-made board that pos_set accepts, and
 * no candidate comes twice. ctx is a Soundness. */
static void check_candidates(Position *p, void *ctx, const char *where)
{
	Soundness *s = ctx;
	int n = retro_parents(p, cands);
	assert_true(n >= 0 && n < RETRO_MAX);
	for (int i = 0; i < n; i++) {
		bool legal = false;
		int m = unmake_matches(p, cands[i], &legal);
		if (m != 1) {
			char sfen[SFEN_MAX], usi[USI_MOVE_MAX];
			sfen_write(p, sfen, sizeof sfen);
			usi_move_write(cands[i].move, usi);
			fail_msg("%s: %s: candidate %s matches %d un-made boards", where, sfen, usi,
			         m);
		}
		s->legal += legal;
	}
	qsort(cands, (size_t)n, sizeof *cands, cmp_retro);
	for (int i = 1; i < n; i++)
		if (cmp_retro(&cands[i - 1], &cands[i]) == 0)
			fail_msg("%s: a candidate twice", where);
	s->positions++;
	s->cands += n;
	if (n > s->max) s->max = n;
}

static void print_soundness(const char *what, const Soundness *s)
{
	printf("%-14s %6ld positions, candidates avg %.1f max %d; legal (Q, m): %ld of %ld\n", what,
	       s->positions, (double)s->cands / (double)s->positions, s->max, s->legal, s->cands);
}

/*
 * Soundness as far as it can be checked: each candidate's key and move are
 * those of exactly one board that un-making its move gives, and the figures
 * count the legal set-ups with m legal among them. In positions from real
 * games the count stays in the hundreds.
 */
static void test_retro__candidates_are_unmade_positions(void **state)
{
	(void)state;
	Soundness s = {0};
	walk_file("tests/data/positions/sampled-v1.sfen", 0, "", walk_spec, check_candidates, &s);
	walk_file("tests/data/positions/games-v1.usi", 1, "startpos moves ", walk_spec,
	          check_candidates, &s);
	print_soundness("floodgate", &s);
	assert_true(s.positions > 500);
	assert_true(s.max < 1000);
	/* the filters leave only legal set-ups in which m is legal (without the
	 * check test 12% are not); only a pawn-drop mate could be an exception,
	 * and these games have none */
	assert_int_equal(s.legal, s.cands);

	s = (Soundness){0};
	walk_file("tests/data/perft.tsv", 1, "", walk_spec, check_candidates, &s);
	walk_file("tests/data/rules.tsv", 2, "", walk_spec, check_candidates, &s);
	for (size_t i = 0; i < sizeof extra_positions / sizeof *extra_positions; i++)
		walk_spec(extra_positions[i], check_candidates, &s, "extra_positions");
	print_soundness("fixtures", &s);

	s = (Soundness){0};
	random_games("test_retro__candidates_are_unmade_positions", RANDOM_GAMES / 6,
	             check_candidates, &s);
	print_soundness("random games", &s);
}

/*
 * Each of the 30 first moves: the start position with that move is among the
 * candidates once, and the start position's key with no other move. The start
 * position itself has candidates too: legal set-ups (a pawn in White's hand,
 * say), though no game reaches them.
 */
static void test_retro__first_moves_lead_back_to_the_start(void **state)
{
	(void)state;
	static Position pos;
	pos_set_startpos(&pos);
	Key start = pos_key(&pos);
	Soundness s = {0};
	check_candidates(&pos, &s, "startpos");
	assert_true(s.cands > 0);
	print_soundness("startpos", &s);
	s = (Soundness){0};

	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(&pos, moves);
	assert_int_equal(n, 30);
	for (int i = 0; i < n; i++) {
		pos_do_move(&pos, moves[i]);
		int nc = retro_parents(&pos, cands);
		int with_move = 0, with_key = 0;
		for (int k = 0; k < nc; k++) {
			with_key += key_equal(cands[k].key, start);
			with_move += key_equal(cands[k].key, start) && cands[k].move == moves[i];
		}
		assert_int_equal(with_move, 1);
		assert_int_equal(with_key, 1);
		check_candidates(&pos, &s, "startpos + 1");
		pos_undo_move(&pos);
	}
	print_soundness("startpos (+1)", &s);
}

/*
 * RETRO_MAX rests on each piece type's most origins (retro.h): a lone piece of
 * each type on each square, holding one of each hand type, stays within 14
 * parents per origin plus its drop; crowded positions stay far below the bound.
 */
static void test_retro__counts_stay_within_the_bound(void **state)
{
	(void)state;
	static const int most_origins[PT_NB] = {
	    [PAWN] = 1,       [LANCE] = 7,       [KNIGHT] = 2, [SILVER] = 5,   [BISHOP] = 16,
	    [ROOK] = 16,      [GOLD] = 6,        [KING] = 8,   [PRO_PAWN] = 7, [PRO_LANCE] = 13,
	    [PRO_KNIGHT] = 8, [PRO_SILVER] = 11, [HORSE] = 36, [DRAGON] = 36,
	};
	static Position pos;
	Hand all = 0;
	for (int pt = PAWN; pt <= GOLD; pt++) all = hand_add(all, (PieceType)pt);
	for (int pt = PAWN; pt < PT_NB; pt++) {
		int most = 0;
		for (Square sq = 0; sq < SQ_NB; sq++) {
			Piece board[SQ_NB] = {0};
			board[sq] = piece_make(BLACK, (PieceType)pt);
			Hand hand[COLOR_NB] = {all, 0};
			if (pos_set(&pos, board, hand, WHITE, 1, NULL) != 0) continue; /* dead */
			int n = retro_parents(&pos, cands);
			if (n > most) most = n;
		}
		if (most > most_origins[pt] * 14 + 1)
			fail_msg("piece type %d: %d parents, over %d origins x 14 + 1", pt, most,
			         most_origins[pt]);
	}
	static const char *const crowded[] = {
	    "9/9/1+R2+B2+R1/9/9/9/1+B5+B1/9/9 w GSNLP 1",
	    "9/9/+R+R+B+B+L+L+L+L1/9/9/9/+S+S+S+S+N+N+N+N1/9/9 w GSNLP 1",
	    "8k/9/+R+R+B+B+L+L+L+L1/9/9/9/+S+S+S+S+N+N+N+N1/9/4K4 w GSNLP 1",
	};
	for (size_t i = 0; i < sizeof crowded / sizeof *crowded; i++) {
		char err[SHOGI_ERRLEN] = "";
		if (position_parse(&pos, crowded[i], err) != 0) fail_msg("%s: %s", crowded[i], err);
		int n = retro_parents(&pos, cands);
		printf("%5d candidates: %s\n", n, crowded[i]);
		assert_true(n < RETRO_MAX / 4);
	}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_retro__every_parent_is_listed),
	    cmocka_unit_test(test_retro__candidates_are_unmade_positions),
	    cmocka_unit_test(test_retro__first_moves_lead_back_to_the_start),
	    cmocka_unit_test(test_retro__counts_stay_within_the_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
