/*
 * tests/shogi/test_bitboard.c — the 81-square bitboards and attack tables
 * against slow references written here from the rules alone: the square
 * layout of the two words, set/clear/test/count/pop/lsb/BB_FOREACH and the
 * set operations against a bool[81] model, the file/rank/zone masks, the
 * step attacks of every piece from every square for both colours, the
 * sliders (lance, bishop, rook, file-only rook, horse, dragon) on an empty
 * board, on every occupancy of the squares that can block them and on random
 * occupancies, bb_piece_attacks for all 28 pieces, and BETWEEN_BB/LINE_BB for
 * every pair of squares.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/bitboard.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* ---- the reference model: a square set is bool[81] ------------------------ */

typedef struct {
	bool on[SQ_NB];
} RefSet;

/* file and rank 0-based as in types.h: square = file * 9 + rank */
static bool ref_on_board(int f, int r)
{
	return f >= 0 && f < 9 && r >= 0 && r < 9;
}

/* The layout bitboard.h documents: squares 0..62 in p[0], 63..80 in p[1]'s bits 0..17. */
static Bitboard ref_to_bb(const RefSet *s)
{
	Bitboard b = {{0, 0}};
	for (int sq = 0; sq < SQ_NB; sq++) {
		if (!s->on[sq]) continue;
		if (sq < 63)
			b.p[0] |= 1ULL << sq;
		else
			b.p[1] |= 1ULL << (sq - 63);
	}
	return b;
}

static void ref_from_bb(RefSet *s, Bitboard b)
{
	/* No bit outside the 81 squares may ever be set. */
	assert_true((b.p[0] >> 63) == 0);
	assert_true((b.p[1] >> 18) == 0);
	for (int sq = 0; sq < SQ_NB; sq++)
		s->on[sq] = sq < 63 ? (b.p[0] >> sq) & 1 : (b.p[1] >> (sq - 63)) & 1;
}

static void ref_clear(RefSet *s)
{
	memset(s, 0, sizeof *s);
}

static void ref_random(RefSet *s, uint64_t *rng, int density8)
{
	for (int sq = 0; sq < SQ_NB; sq++) s->on[sq] = (int)(ts_rand(rng) & 7) < density8;
}

/* About half the squares, cheaply (two random words for 81 squares). */
static void ref_noise(RefSet *s, uint64_t *rng)
{
	uint64_t w[2] = {ts_rand(rng), ts_rand(rng)};
	for (int sq = 0; sq < SQ_NB; sq++) s->on[sq] = (w[sq / 64] >> (sq % 64)) & 1;
}

static char sq_name_buf[8][4];
static int sq_name_slot;
/* "7g" style (USI) for messages. */
static const char *sq_name(int sq)
{
	char *b = sq_name_buf[sq_name_slot++ & 7];
	snprintf(b, 4, "%d%c", sq / 9 + 1, 'a' + sq % 9);
	return b;
}

static void fail_sets(const char *what, int sq, Bitboard got, Bitboard want)
{
	RefSet g, w;
	ref_from_bb(&g, got);
	ref_from_bb(&w, want);
	char extra[256] = "", missing[256] = "";
	for (int s = 0; s < SQ_NB; s++) {
		if (g.on[s] && !w.on[s]) strcat(extra, sq_name(s)), strcat(extra, " ");
		if (!g.on[s] && w.on[s]) strcat(missing, sq_name(s)), strcat(missing, " ");
	}
	fail_msg("%s from %s: extra squares [%s], missing squares [%s]", what, sq_name(sq), extra,
	         missing);
}

static void check_bb(const char *what, int sq, Bitboard got, Bitboard want)
{
	if (!bb_equal(got, want)) fail_sets(what, sq, got, want);
}

/* ---- reference attacks, from the rules ---------------------------------- */

/* Black moves toward rank a (rank index 0): "forward" is rank - 1 for Black. */
static int forward(Color c)
{
	return c == BLACK ? -1 : 1;
}

typedef struct {
	int df, dr; /* dr in "forward" units: +1 is one step forward */
} Step;

static const Step STEPS_PAWN[] = {{0, 1}};
static const Step STEPS_KNIGHT[] = {{-1, 2}, {1, 2}};
static const Step STEPS_SILVER[] = {{-1, 1}, {0, 1}, {1, 1}, {-1, -1}, {1, -1}};
static const Step STEPS_GOLD[] = {{-1, 1}, {0, 1}, {1, 1}, {-1, 0}, {1, 0}, {0, -1}};
static const Step STEPS_KING[] = {{-1, 1}, {0, 1},   {1, 1},  {-1, 0},
                                  {1, 0},  {-1, -1}, {0, -1}, {1, -1}};

static Bitboard ref_steps(Color c, int sq, const Step *st, int n)
{
	RefSet s;
	ref_clear(&s);
	int f = sq / 9, r = sq % 9;
	for (int i = 0; i < n; i++) {
		int nf = f + st[i].df, nr = r + forward(c) * st[i].dr;
		if (ref_on_board(nf, nr)) s.on[nf * 9 + nr] = true;
	}
	return ref_to_bb(&s);
}

/* Ray walk: every square up to and including the first occupied one. */
static void ref_ray(RefSet *out, int sq, int df, int dr, const RefSet *occ)
{
	int f = sq / 9 + df, r = sq % 9 + dr;
	while (ref_on_board(f, r)) {
		out->on[f * 9 + r] = true;
		if (occ->on[f * 9 + r]) break;
		f += df;
		r += dr;
	}
}

static Bitboard ref_lance(Color c, int sq, const RefSet *occ)
{
	RefSet s;
	ref_clear(&s);
	ref_ray(&s, sq, 0, forward(c), occ);
	return ref_to_bb(&s);
}

static Bitboard ref_bishop(int sq, const RefSet *occ)
{
	RefSet s;
	ref_clear(&s);
	ref_ray(&s, sq, 1, 1, occ);
	ref_ray(&s, sq, 1, -1, occ);
	ref_ray(&s, sq, -1, 1, occ);
	ref_ray(&s, sq, -1, -1, occ);
	return ref_to_bb(&s);
}

static Bitboard ref_rook_file(int sq, const RefSet *occ)
{
	RefSet s;
	ref_clear(&s);
	ref_ray(&s, sq, 0, 1, occ);
	ref_ray(&s, sq, 0, -1, occ);
	return ref_to_bb(&s);
}

static Bitboard ref_rook(int sq, const RefSet *occ)
{
	RefSet s;
	ref_clear(&s);
	ref_ray(&s, sq, 0, 1, occ);
	ref_ray(&s, sq, 0, -1, occ);
	ref_ray(&s, sq, 1, 0, occ);
	ref_ray(&s, sq, -1, 0, occ);
	return ref_to_bb(&s);
}

static Bitboard ref_or(Bitboard a, Bitboard b)
{
	Bitboard r = {{a.p[0] | b.p[0], a.p[1] | b.p[1]}};
	return r;
}

/* What a piece of type pt and colour c attacks from sq, by the rules. */
static Bitboard ref_piece(Color c, PieceType pt, int sq, const RefSet *occ)
{
	switch (pt) {
	case PAWN:
		return ref_steps(c, sq, STEPS_PAWN, 1);
	case LANCE:
		return ref_lance(c, sq, occ);
	case KNIGHT:
		return ref_steps(c, sq, STEPS_KNIGHT, 2);
	case SILVER:
		return ref_steps(c, sq, STEPS_SILVER, 5);
	case GOLD:
	case PRO_PAWN:
	case PRO_LANCE:
	case PRO_KNIGHT:
	case PRO_SILVER:
		return ref_steps(c, sq, STEPS_GOLD, 6);
	case BISHOP:
		return ref_bishop(sq, occ);
	case ROOK:
		return ref_rook(sq, occ);
	case KING:
		return ref_steps(c, sq, STEPS_KING, 8);
	case HORSE:
		return ref_or(ref_bishop(sq, occ), ref_steps(c, sq, STEPS_KING, 8));
	case DRAGON:
		return ref_or(ref_rook(sq, occ), ref_steps(c, sq, STEPS_KING, 8));
	default:
		fail_msg("no reference for piece type %d", pt);
	}
	return bb_make(0, 0);
}

/* ---- the square set primitives ------------------------------------------- */

static void test_bitboard__square_layout_and_masks(void **state)
{
	(void)state;
	RefSet all, s;
	for (int sq = 0; sq < SQ_NB; sq++) all.on[sq] = true;
	check_bb("BB_ALL", 0, BB_ALL, ref_to_bb(&all));
	assert_int_equal(bb_count(BB_ALL), 81);
	for (int sq = 0; sq < SQ_NB; sq++) {
		ref_clear(&s);
		s.on[sq] = true;
		check_bb("SQ_BB", sq, SQ_BB[sq], ref_to_bb(&s));
		assert_int_equal(bb_count(SQ_BB[sq]), 1);
		assert_int_equal(bb_lsb(SQ_BB[sq]), sq);
	}
	for (int f = 0; f < FILE_NB; f++) {
		ref_clear(&s);
		for (int r = 0; r < 9; r++) s.on[f * 9 + r] = true;
		check_bb("FILE_BB", f * 9, FILE_BB[f], ref_to_bb(&s));
		/* a file never straddles the two words */
		assert_true(FILE_BB[f].p[0] == 0 || FILE_BB[f].p[1] == 0);
	}
	for (int r = 0; r < RANK_NB; r++) {
		ref_clear(&s);
		for (int f = 0; f < 9; f++) s.on[f * 9 + r] = true;
		check_bb("RANK_BB", r, RANK_BB[r], ref_to_bb(&s));
	}
	/* Black promotes on ranks a-c, White on ranks g-i. */
	for (int c = 0; c < COLOR_NB; c++) {
		ref_clear(&s);
		for (int sq = 0; sq < SQ_NB; sq++)
			s.on[sq] = c == BLACK ? sq % 9 <= 2 : sq % 9 >= 6;
		check_bb("ZONE_BB", c, ZONE_BB[c], ref_to_bb(&s));
		assert_int_equal(bb_count(ZONE_BB[c]), 27);
	}
}

static void test_bitboard__set_clear_test_against_a_bool_model(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_bitboard__set_clear_test_against_a_bool_model");
	for (int round = 0; round < 200; round++) {
		RefSet model;
		ref_clear(&model);
		Bitboard b = bb_make(0, 0);
		for (int op = 0; op < 300; op++) {
			int sq = (int)(ts_rand(&rng) % SQ_NB);
			if (ts_rand(&rng) & 1) {
				bb_set(&b, sq);
				model.on[sq] = true;
			} else {
				bb_clear(&b, sq);
				model.on[sq] = false;
			}
			/* every square agrees after every operation */
			int n = 0;
			for (int s = 0; s < SQ_NB; s++) {
				if (bb_test(b, s) != model.on[s])
					fail_msg("round %d op %d: bb_test(%s) = %d, model %d",
					         round, op, sq_name(s), bb_test(b, s), model.on[s]);
				n += model.on[s];
			}
			assert_int_equal(bb_count(b), n);
			assert_int_equal(bb_empty(b), n == 0);
			assert_int_equal(bb_any(b), n != 0);
			assert_int_equal(bb_more_than_one(b), n > 1);
		}
		check_bb("bb_set/bb_clear", 0, b, ref_to_bb(&model));
	}
}

static void test_bitboard__pop_and_foreach_visit_every_square_once(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_bitboard__pop_and_foreach_visit_every_square_once");
	for (int round = 0; round < 3000; round++) {
		RefSet model;
		/* from empty through sparse to full, with single squares in each word */
		if (round < 81) {
			ref_clear(&model);
			model.on[round] = true;
		} else if (round == 81) {
			for (int s = 0; s < SQ_NB; s++) model.on[s] = true;
		} else {
			ref_random(&model, &rng, (round % 9));
		}
		Bitboard b = ref_to_bb(&model);
		int n = 0, first = -1;
		for (int s = SQ_NB - 1; s >= 0; s--)
			if (model.on[s]) n++, first = s;
		assert_int_equal(bb_count(b), n);
		if (n) assert_int_equal(bb_lsb(b), first);

		/* bb_pop: ascending, each set square once, then empty */
		int seen[SQ_NB] = {0}, prev = -1, popped = 0;
		Bitboard it = b;
		while (bb_any(it)) {
			int lsb = bb_lsb(it);
			Square sq = bb_pop(&it);
			assert_int_equal(sq, lsb);
			assert_in_range(sq, 0, SQ_NB - 1);
			assert_true(sq > prev);
			assert_true(model.on[sq]);
			assert_false(bb_test(it, sq));
			seen[sq]++;
			prev = sq;
			popped++;
			assert_int_equal(bb_count(it), n - popped);
		}
		assert_int_equal(popped, n);
		for (int s = 0; s < SQ_NB; s++) assert_int_equal(seen[s], model.on[s] ? 1 : 0);

		/* BB_FOREACH: the same squares in the same order, b itself unchanged */
		int seen2[SQ_NB] = {0}, k = 0;
		Square sq;
		prev = -1;
		BB_FOREACH(sq, b)
		{
			assert_true(sq > prev);
			seen2[sq]++;
			prev = sq;
			k++;
		}
		assert_int_equal(k, n);
		assert_memory_equal(seen, seen2, sizeof seen);
		assert_int_equal(bb_count(b), n);
	}
}

static void test_bitboard__set_operations_against_a_bool_model(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_bitboard__set_operations_against_a_bool_model");
	for (int round = 0; round < 5000; round++) {
		RefSet a, b, r;
		ref_random(&a, &rng, (int)(ts_rand(&rng) % 9));
		ref_random(&b, &rng, (int)(ts_rand(&rng) % 9));
		Bitboard A = ref_to_bb(&a), B = ref_to_bb(&b);
		bool eq = true;
		for (int s = 0; s < SQ_NB; s++) r.on[s] = a.on[s] && b.on[s];
		check_bb("bb_and", 0, bb_and(A, B), ref_to_bb(&r));
		for (int s = 0; s < SQ_NB; s++) r.on[s] = a.on[s] || b.on[s];
		check_bb("bb_or", 0, bb_or(A, B), ref_to_bb(&r));
		for (int s = 0; s < SQ_NB; s++) r.on[s] = a.on[s] != b.on[s];
		check_bb("bb_xor", 0, bb_xor(A, B), ref_to_bb(&r));
		for (int s = 0; s < SQ_NB; s++) r.on[s] = a.on[s] && !b.on[s];
		check_bb("bb_andnot", 0, bb_andnot(A, B), ref_to_bb(&r));
		for (int s = 0; s < SQ_NB; s++) r.on[s] = !a.on[s];
		check_bb("bb_not", 0, bb_not(A), ref_to_bb(&r));
		for (int s = 0; s < SQ_NB; s++) eq = eq && a.on[s] == b.on[s];
		assert_int_equal(bb_equal(A, B), eq);
		assert_true(bb_equal(A, A));
		assert_true(bb_equal(bb_not(bb_not(A)), A));
		assert_int_equal(bb_count(bb_not(A)), 81 - bb_count(A));
	}
}

/* ---- attack tables --------------------------------------------------------- */

static void test_bitboard__step_attacks_from_every_square(void **state)
{
	(void)state;
	RefSet empty;
	ref_clear(&empty);
	for (int c = 0; c < COLOR_NB; c++) {
		int total[5] = {0};
		for (int sq = 0; sq < SQ_NB; sq++) {
			check_bb(c ? "PAWN_ATK[W]" : "PAWN_ATK[B]", sq, PAWN_ATK[c][sq],
			         ref_steps((Color)c, sq, STEPS_PAWN, 1));
			check_bb(c ? "KNIGHT_ATK[W]" : "KNIGHT_ATK[B]", sq, KNIGHT_ATK[c][sq],
			         ref_steps((Color)c, sq, STEPS_KNIGHT, 2));
			check_bb(c ? "SILVER_ATK[W]" : "SILVER_ATK[B]", sq, SILVER_ATK[c][sq],
			         ref_steps((Color)c, sq, STEPS_SILVER, 5));
			check_bb(c ? "GOLD_ATK[W]" : "GOLD_ATK[B]", sq, GOLD_ATK[c][sq],
			         ref_steps((Color)c, sq, STEPS_GOLD, 6));
			check_bb(c ? "LANCE_STEP_RAY[W]" : "LANCE_STEP_RAY[B]", sq,
			         LANCE_STEP_RAY[c][sq], ref_lance((Color)c, sq, &empty));
			total[0] += bb_count(PAWN_ATK[c][sq]);
			total[1] += bb_count(KNIGHT_ATK[c][sq]);
			total[4] += bb_count(LANCE_STEP_RAY[c][sq]);
		}
		/* Counted by hand: a pawn attacks from 72 squares; a knight's two
		 * targets exist from 7x7 squares, one from 2x7 edge-file squares;
		 * a lance sees 0+1+...+8 squares up each file. */
		assert_int_equal(total[0], 72);
		assert_int_equal(total[1], 7 * 7 * 2 + 2 * 7);
		assert_int_equal(total[4], 9 * 36);
	}
	for (int sq = 0; sq < SQ_NB; sq++)
		check_bb("KING_ATK", sq, KING_ATK[sq], ref_steps(BLACK, sq, STEPS_KING, 8));
	/* Two concrete squares by hand: 5e (centre) and 1a (corner). */
	Square e5 = sq_make(4, 4), a1 = sq_make(0, 0);
	assert_true(bb_equal(PAWN_ATK[BLACK][e5], SQ_BB[sq_make(4, 3)]));
	assert_true(bb_equal(PAWN_ATK[WHITE][e5], SQ_BB[sq_make(4, 5)]));
	assert_true(
	    bb_equal(KNIGHT_ATK[BLACK][e5], bb_or(SQ_BB[sq_make(3, 2)], SQ_BB[sq_make(5, 2)])));
	assert_int_equal(bb_count(KING_ATK[e5]), 8);
	assert_int_equal(bb_count(KING_ATK[a1]), 3);
	assert_true(bb_empty(PAWN_ATK[BLACK][a1]));
	assert_int_equal(bb_count(PAWN_ATK[WHITE][a1]), 1);
}

static void test_bitboard__sliders_on_an_empty_board(void **state)
{
	(void)state;
	RefSet empty;
	ref_clear(&empty);
	Bitboard none = bb_make(0, 0);
	for (int sq = 0; sq < SQ_NB; sq++) {
		check_bb("BISHOP_PSEUDO", sq, BISHOP_PSEUDO[sq], ref_bishop(sq, &empty));
		check_bb("ROOK_PSEUDO", sq, ROOK_PSEUDO[sq], ref_rook(sq, &empty));
		check_bb("bb_bishop_attacks(empty)", sq, bb_bishop_attacks(sq, none),
		         ref_bishop(sq, &empty));
		check_bb("bb_rook_attacks(empty)", sq, bb_rook_attacks(sq, none),
		         ref_rook(sq, &empty));
		check_bb("bb_rook_file_attacks(empty)", sq, bb_rook_file_attacks(sq, none),
		         ref_rook_file(sq, &empty));
		for (int c = 0; c < COLOR_NB; c++)
			check_bb("bb_lance_attacks(empty)", sq,
			         bb_lance_attacks((Color)c, sq, none),
			         ref_lance((Color)c, sq, &empty));
		/* a rook on an empty board always sees 16 squares */
		assert_int_equal(bb_count(ROOK_PSEUDO[sq]), 16);
	}
	assert_int_equal(bb_count(BISHOP_PSEUDO[sq_make(4, 4)]), 16);
	assert_int_equal(bb_count(BISHOP_PSEUDO[sq_make(0, 0)]), 8);
}

/*
 * The squares of the given rays from sq whose occupancy can change the
 * attacks: every ray square but the last (a piece on the last one blocks
 * nothing beyond it). Returns how many, in order in out[].
 */
static int blocker_squares(int sq, const int (*dirs)[2], int ndirs, int *out)
{
	int n = 0;
	for (int d = 0; d < ndirs; d++) {
		int f = sq / 9 + dirs[d][0], r = sq % 9 + dirs[d][1];
		while (ref_on_board(f + dirs[d][0], r + dirs[d][1])) {
			out[n++] = f * 9 + r;
			f += dirs[d][0];
			r += dirs[d][1];
		}
	}
	return n;
}

/*
 * Every occupancy of the blocking squares, with random noise on all other
 * squares (and the slider's own square sometimes occupied): the library's
 * sliding attacks equal the ray walk.
 */
static void test_bitboard__sliders_on_every_blocker_occupancy(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_bitboard__sliders_on_every_blocker_occupancy");
	static const int DIAG[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
	static const int ORTHO[4][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}};
	static const int UP[1][2] = {{0, -1}}, DOWN[1][2] = {{0, 1}};
	long checked = 0;
	for (int sq = 0; sq < SQ_NB; sq++) {
		for (int kind = 0; kind < 5; kind++) {
			int sqs[32];
			int n = kind == 0   ? blocker_squares(sq, DIAG, 4, sqs)
			        : kind == 1 ? blocker_squares(sq, ORTHO, 4, sqs)
			        : kind == 2 ? blocker_squares(sq, ORTHO, 2, sqs)
			        : kind == 3 ? blocker_squares(sq, UP, 1, sqs)
			                    : blocker_squares(sq, DOWN, 1, sqs);
			assert_true(n <= 14);
			for (uint32_t subset = 0; subset < (1u << n); subset++) {
				RefSet occ;
				/* noise off the rays: must not matter */
				ref_noise(&occ, &rng);
				for (int i = 0; i < n; i++) occ.on[sqs[i]] = (subset >> i) & 1;
				Bitboard o = ref_to_bb(&occ);
				switch (kind) {
				case 0:
					check_bb("bb_bishop_attacks", sq, bb_bishop_attacks(sq, o),
					         ref_bishop(sq, &occ));
					check_bb("bb_horse_attacks", sq, bb_horse_attacks(sq, o),
					         ref_piece(BLACK, HORSE, sq, &occ));
					break;
				case 1:
					check_bb("bb_rook_attacks", sq, bb_rook_attacks(sq, o),
					         ref_rook(sq, &occ));
					check_bb("bb_dragon_attacks", sq, bb_dragon_attacks(sq, o),
					         ref_piece(BLACK, DRAGON, sq, &occ));
					break;
				case 2:
					check_bb("bb_rook_file_attacks", sq,
					         bb_rook_file_attacks(sq, o),
					         ref_rook_file(sq, &occ));
					break;
				case 3:
					check_bb("bb_lance_attacks(BLACK)", sq,
					         bb_lance_attacks(BLACK, sq, o),
					         ref_lance(BLACK, sq, &occ));
					break;
				default:
					check_bb("bb_lance_attacks(WHITE)", sq,
					         bb_lance_attacks(WHITE, sq, o),
					         ref_lance(WHITE, sq, &occ));
					break;
				}
				checked++;
			}
		}
	}
	printf("slider occupancies checked: %ld\n", checked);
	/* 81 squares x (bishop + rook + file + 2 lance) cases, at least one each */
	assert_true(checked > 81 * 5);
}

static const PieceType ALL_TYPES[] = {PAWN,       LANCE,      KNIGHT, SILVER,   BISHOP,
                                      ROOK,       GOLD,       KING,   PRO_PAWN, PRO_LANCE,
                                      PRO_KNIGHT, PRO_SILVER, HORSE,  DRAGON};

static void test_bitboard__piece_attacks_of_every_piece_on_random_boards(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_bitboard__piece_attacks_of_every_piece_on_random_boards");
	long checked = 0;
	for (int round = 0; round < 400; round++) {
		RefSet occ;
		if (round == 0)
			ref_clear(&occ);
		else if (round == 1)
			for (int s = 0; s < SQ_NB; s++) occ.on[s] = true;
		else
			ref_random(&occ, &rng, 1 + round % 7);
		Bitboard o = ref_to_bb(&occ);
		for (int c = 0; c < COLOR_NB; c++)
			for (size_t t = 0; t < sizeof ALL_TYPES / sizeof ALL_TYPES[0]; t++)
				for (int sq = 0; sq < SQ_NB; sq++) {
					Piece p = piece_make((Color)c, ALL_TYPES[t]);
					Bitboard got = bb_piece_attacks(p, sq, o);
					Bitboard want = ref_piece((Color)c, ALL_TYPES[t], sq, &occ);
					if (!bb_equal(got, want)) {
						char what[64];
						snprintf(what, sizeof what,
						         "bb_piece_attacks(colour %d, type %d)", c,
						         ALL_TYPES[t]);
						fail_sets(what, sq, got, want);
					}
					/* a piece never attacks its own square */
					assert_false(bb_test(got, sq));
					checked++;
				}
	}
	assert_int_equal(checked, 400L * 2 * 14 * 81);
	/* no piece, no attacks */
	assert_true(bb_empty(bb_piece_attacks(PIECE_NONE, sq_make(4, 4), bb_make(0, 0))));
}

/* True when b lies on the line from a in direction (df, dr) at step k >= 1. */
static bool ref_aligned(int a, int b, int *df, int *dr, int *dist)
{
	int fa = a / 9, ra = a % 9, fb = b / 9, rb = b % 9;
	int ddf = fb - fa, ddr = rb - ra;
	if (a == b) return false;
	if (ddf != 0 && ddr != 0 && abs(ddf) != abs(ddr)) return false;
	*df = (ddf > 0) - (ddf < 0);
	*dr = (ddr > 0) - (ddr < 0);
	*dist = abs(ddf) > abs(ddr) ? abs(ddf) : abs(ddr);
	return true;
}

static void test_bitboard__between_and_line_for_every_pair(void **state)
{
	(void)state;
	int aligned_pairs = 0;
	for (int a = 0; a < SQ_NB; a++) {
		assert_true(bb_empty(BETWEEN_BB[a][a]));
		for (int b = 0; b < SQ_NB; b++) {
			if (a == b) continue;
			int df, dr, dist;
			RefSet between, line;
			ref_clear(&between);
			ref_clear(&line);
			if (ref_aligned(a, b, &df, &dr, &dist)) {
				aligned_pairs++;
				for (int k = 1; k < dist; k++)
					between.on[(a / 9 + k * df) * 9 + a % 9 + k * dr] = true;
				/* the whole line: both ways from a to the edges */
				line.on[a] = true;
				for (int sign = -1; sign <= 1; sign += 2) {
					int f = a / 9 + sign * df, r = a % 9 + sign * dr;
					while (ref_on_board(f, r)) {
						line.on[f * 9 + r] = true;
						f += sign * df;
						r += sign * dr;
					}
				}
				assert_true(line.on[b]);
			}
			char what[48];
			snprintf(what, sizeof what, "BETWEEN_BB[..][%s]", sq_name(b));
			check_bb(what, a, BETWEEN_BB[a][b], ref_to_bb(&between));
			snprintf(what, sizeof what, "LINE_BB[..][%s]", sq_name(b));
			check_bb(what, a, LINE_BB[a][b], ref_to_bb(&line));
			/* symmetric */
			assert_true(bb_equal(BETWEEN_BB[a][b], BETWEEN_BB[b][a]));
			assert_true(bb_equal(LINE_BB[a][b], LINE_BB[b][a]));
		}
	}
	/* Every square sees 16 on its rank and file; a diagonal of k squares holds
	 * k(k-1) ordered pairs, and each direction has diagonals of 1..9..1 squares:
	 * 2 * (240 + 168) diagonal pairs. */
	assert_int_equal(aligned_pairs, 81 * 16 + 2 * (240 + 168));
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bitboard__square_layout_and_masks),
	    cmocka_unit_test(test_bitboard__set_clear_test_against_a_bool_model),
	    cmocka_unit_test(test_bitboard__pop_and_foreach_visit_every_square_once),
	    cmocka_unit_test(test_bitboard__set_operations_against_a_bool_model),
	    cmocka_unit_test(test_bitboard__step_attacks_from_every_square),
	    cmocka_unit_test(test_bitboard__sliders_on_an_empty_board),
	    cmocka_unit_test(test_bitboard__sliders_on_every_blocker_occupancy),
	    cmocka_unit_test(test_bitboard__piece_attacks_of_every_piece_on_random_boards),
	    cmocka_unit_test(test_bitboard__between_and_line_for_every_pair),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
