/*
 * tests/bookdb/test_record.c — the position record's encoding (bookdb/record.c)
 * over the extremes of legal play: long empty runs in every place, every piece
 * in hand, bare kings, every piece promoted, move numbers past one byte and past
 * 16 bits, a full move list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "bookdb/record.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

/* Packs and unpacks board/hand/side; the result must be the same. */
static void round_trip(const Piece board[SQ_NB], const Hand hand[COLOR_NB], Color side)
{
	uint8_t buf[BOOKDB_PACKED_MAX + 8];
	int n = bookdb_pack_position(buf, board, hand, side);
	assert_true(n > 0 && n <= BOOKDB_PACKED_MAX);
	Piece b2[SQ_NB];
	Hand h2[COLOR_NB];
	Color s2;
	int m = bookdb_unpack_position(b2, h2, &s2, buf, (size_t)n);
	if (m != n) {
		char hex[3 * BOOKDB_PACKED_MAX + 1] = "";
		for (int i = 0; i < n; i++) sprintf(hex + 3 * i, "%02x ", buf[i]);
		fail_msg("unpack gave %d for a %d-byte packing: %s", m, n, hex);
	}
	assert_memory_equal(board, b2, SQ_NB * sizeof board[0]);
	assert_int_equal(hand[BLACK], h2[BLACK]);
	assert_int_equal(hand[WHITE], h2[WHITE]);
	assert_int_equal(side, s2);
}

/* A position that once did not decode: ply 290 of a 301-ply entering-king game, all 18
 * pawns in one hand, a bishop then 60 empty squares (the kings' between
 * them) before the next piece. It did not decode: the run was read past the
 * bits the decoder's window holds. Now a record of it round-trips. */
static void test_record__the_entering_king_position_of_a_real_301_ply_game(void **state)
{
	(void)state;
	static Position pos, back;
	static BookRecord rec, dec;
	char err[SHOGI_ERRLEN];
	assert_int_equal(
	    sfen_parse(&pos, "8+r/9/9/9/4K4/k8/+n6B1/+l8/9 w BG2S18Pr3g2s3n3l 290", NULL, err), 0);
	round_trip(pos.board, pos.hand, pos.side);
	bookdb_record_init(&rec, &pos);
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(&pos, legal);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		rec.moves[i].move = legal[i];
		rec.moves[i].flags = BOOKDB_MOVE_STATS;
		rec.moves[i].count = 1;
	}
	rec.nmoves = (uint16_t)n;
	uint8_t buf[BOOKDB_RECORD_MAX];
	int len = bookdb_record_encode(buf, sizeof buf, &rec);
	assert_true(len > 0);
	assert_int_equal(bookdb_record_decode(&dec, buf, (size_t)len), 0);
	assert_int_equal(bookdb_record_position(&back, &dec, err), 0);
	assert_true(key_equal(pos_key(&pos), pos_key(&back)));
	assert_int_equal(dec.min_ply, 290);
	assert_int_equal(dec.nmoves, n);
}

/*
 * Two pieces with every possible run of empty squares before, between and
 * after them, each kind of piece first (so the runs start at every bit
 * alignment), with no kings, kings at the ends, and kings inside the runs.
 */
static void test_record__empty_runs_of_every_length_at_every_place(void **state)
{
	(void)state;
	static const Square KINGS[][2] = {{SQ_NONE, SQ_NONE}, {0, 80}, {40, 77}, {80, 0}, {3, 4}};
	static const PieceType FIRST[] = {PAWN, GOLD, BISHOP, DRAGON, PRO_KNIGHT, LANCE};
	Hand hand[COLOR_NB] = {0, 0};
	size_t done = 0;
	for (size_t k = 0; k < sizeof KINGS / sizeof KINGS[0]; k++)
		for (size_t f = 0; f < sizeof FIRST / sizeof FIRST[0]; f++)
			for (Square a = 0; a < SQ_NB; a++)
				for (Square b = a + 1; b < SQ_NB; b++) {
					if (a == KINGS[k][0] || a == KINGS[k][1] ||
					    b == KINGS[k][0] || b == KINGS[k][1])
						continue;
					Piece board[SQ_NB] = {0};
					if (KINGS[k][0] != SQ_NONE)
						board[KINGS[k][0]] = piece_make(BLACK, KING);
					if (KINGS[k][1] != SQ_NONE)
						board[KINGS[k][1]] = piece_make(WHITE, KING);
					board[a] = piece_make((Color)(b & 1), FIRST[f]);
					board[b] = piece_make((Color)(a & 1), PRO_KNIGHT);
					round_trip(board, hand, (Color)((a + b) & 1));
					done++;
				}
	assert_true(done > 90000);
}

/* Every non-king piece in hand (both ways of splitting it), bare kings, no
 * kings at all, and every piece on the board promoted. */
static void test_record__full_hands_bare_kings_and_everything_promoted(void **state)
{
	(void)state;
	static const struct {
		const char *sfen;
	} CASES[] = {
	    {"4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 w 2r2b4g4s4n4l18p 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b RB2G2S2N2L9Prb2g2s2n2l9p 1"},
	    {"k8/9/9/9/9/9/9/9/8K b - 1"},
	    {"8k/9/9/9/9/9/9/9/K8 w - 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b - 1"},
	    /* Every piece promoted (golds cannot be): 38 pieces and the kings. */
	    {"+p+p+p+p+p+p+p+p+p/+p+p+p+p+p+p+p+p+p/+l+l+l+l+n+n+n+n1/+s+s+s+s+b+b+r+r1/"
	     "gggg5/9/9/9/K7k b - 1"},
	    {"+P+P+P+P+P+P+P+P+P/+p+p+p+p+p+p+p+p+p/+L+l+L+l+N+n+N+n1/+S+s+S+s+B+b+R+r1/"
	     "GgGg5/9/9/9/K7k w - 1"},
	};
	static Position pos;
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		char err[SHOGI_ERRLEN];
		if (sfen_parse(&pos, CASES[i].sfen, NULL, err) != 0)
			fail_msg("%s: %s", CASES[i].sfen, err);
		round_trip(pos.board, pos.hand, pos.side);
		uint8_t buf[BOOKDB_PACKED_MAX + 8];
		assert_true(bookdb_pack_position(buf, pos.board, pos.hand, pos.side) <=
		            BOOKDB_PACKED_MAX);
	}
	/* One piece more than a set has is refused, on the board or in hand. */
	Piece board[SQ_NB] = {0};
	Hand hand[COLOR_NB] = {0, 0};
	board[0] = piece_make(BLACK, PAWN);
	for (int n = 0; n < 18; n++) hand[WHITE] = hand_add(hand[WHITE], PAWN);
	uint8_t buf[BOOKDB_PACKED_MAX + 8];
	assert_int_equal(bookdb_pack_position(buf, board, hand, BLACK), BOOKDB_ECORRUPT);
}

/* min_ply is a varint of 1..65535: one byte to 127, two past it, three past
 * 16383; a position seen at a move number beyond 65535 is kept at 65535
 * (clamped, not widened: no legal game under a move limit gets near). */
static void test_record__move_numbers_past_one_byte_and_past_16_bits(void **state)
{
	(void)state;
	static Position pos;
	static BookRecord rec, dec;
	static const int PLIES[] = {1,     127,   128,   255,   256,   300,
	                            16383, 16384, 65535, 65536, 70000, 1000000};
	for (size_t i = 0; i < sizeof PLIES / sizeof PLIES[0]; i++) {
		char sfen[128];
		snprintf(sfen, sizeof sfen, "4k4/9/9/9/9/9/9/9/4K4 b - %d", PLIES[i]);
		assert_int_equal(sfen_parse(&pos, sfen, NULL, NULL), 0);
		bookdb_record_init(&rec, &pos);
		int want = PLIES[i] > 65535 ? 65535 : PLIES[i];
		assert_int_equal(rec.min_ply, want);
		uint8_t buf[BOOKDB_RECORD_MAX];
		int len = bookdb_record_encode(buf, sizeof buf, &rec);
		assert_true(len > 0);
		assert_int_equal(bookdb_record_decode(&dec, buf, (size_t)len), 0);
		assert_int_equal(dec.min_ply, want);
	}
}

/* A record holds 600 moves (more than any position's 593 legal ones) with
 * every field at its widest; 601 is refused, not truncated. */
static void test_record__six_hundred_moves_with_every_field(void **state)
{
	(void)state;
	static Position pos;
	static BookRecord rec, dec;
	/* The position with 593 legal moves (tests/data/perft.tsv). */
	assert_int_equal(
	    sfen_parse(&pos, "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1", NULL, NULL),
	    0);
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(&pos, legal);
	assert_int_equal(n, 593);
	bookdb_record_init(&rec, &pos);
	rec.flags = BOOKDB_REC_THOUGHT | BOOKDB_REC_MINIMAX;
	rec.think_depth = 255;
	for (int i = 0; i < BOOKDB_MAX_MOVES; i++) {
		BookMove *m = &rec.moves[i];
		m->move = i < n ? legal[i] : (Move)(0x1000 + i);
		m->flags = BOOKDB_MOVE_EVAL | BOOKDB_MOVE_STATS |
		           (i % 7 == 3 || i == BOOKDB_MAX_MOVES - 1 ? BOOKDB_MOVE_AVOIDED : 0);
		m->source = BOOKDB_SOURCE_MAX;
		m->eval = (int16_t)(i & 1 ? INT16_MAX : INT16_MIN);
		m->depth = (uint8_t)(i % 256);
		m->nodes = bookdb_nodes_decode(bookdb_nodes_code((uint64_t)1 << (i % 60)));
		m->count = UINT32_MAX;
		m->wins = UINT32_MAX - 1;
		m->draws = UINT32_MAX - 2;
		m->losses = UINT32_MAX - 3;
		m->value = (int16_t)(i & 1 ? INT16_MIN : INT16_MAX);
		m->dist = UINT16_MAX;
	}
	rec.nmoves = BOOKDB_MAX_MOVES;
	uint8_t *buf = malloc(BOOKDB_RECORD_MAX);
	int len = bookdb_record_encode(buf, BOOKDB_RECORD_MAX, &rec);
	assert_true(len > 0 && len <= BOOKDB_RECORD_MAX);
	assert_int_equal(bookdb_record_decode(&dec, buf, (size_t)len), 0);
	assert_int_equal(dec.nmoves, BOOKDB_MAX_MOVES);
	assert_memory_equal(dec.moves, rec.moves, sizeof rec.moves);
	rec.nmoves = BOOKDB_MAX_MOVES + 1;
	assert_int_equal(bookdb_record_encode(buf, BOOKDB_RECORD_MAX, &rec), BOOKDB_EINVAL);
	free(buf);
}

/* The avoided marks of joseki prune: a list of move indices after the moves,
 * present only when a move is marked, in exactly one encoding. */
static void test_record__avoided_marks_round_trip_and_have_one_encoding(void **state)
{
	(void)state;
	static Position pos;
	static BookRecord rec, dec;
	pos_set_startpos(&pos);
	bookdb_record_init(&rec, &pos);
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(&pos, legal);
	for (int i = 0; i < 5; i++) {
		rec.moves[i].move = legal[i];
		rec.moves[i].flags = i == 1 ? BOOKDB_MOVE_STATS : BOOKDB_MOVE_EVAL;
		rec.moves[i].count = 3;
		rec.moves[i].losses = 3;
	}
	rec.nmoves = 5;
	assert_true(n > 5);
	uint8_t plain[256], marked[256], again[256];
	int lp = bookdb_record_encode(plain, sizeof plain, &rec);
	assert_true(lp > 0);
	/* A move without an evaluation (game statistics only) can be marked too. */
	rec.moves[1].flags |= BOOKDB_MOVE_AVOIDED;
	rec.moves[4].flags |= BOOKDB_MOVE_AVOIDED;
	int lm = bookdb_record_encode(marked, sizeof marked, &rec);
	/* Flag bit, count 2, gaps 1 and 2. */
	assert_int_equal(lm, lp + 3);
	assert_int_equal(marked[0], BOOKDB_REC_AVOID);
	assert_int_equal(bookdb_record_decode(&dec, marked, (size_t)lm), 0);
	assert_int_equal(dec.flags, BOOKDB_REC_AVOID);
	for (int i = 0; i < 5; i++)
		assert_int_equal((dec.moves[i].flags & BOOKDB_MOVE_AVOIDED) != 0, i == 1 || i == 4);
	assert_int_equal(dec.moves[1].count, 3);
	assert_int_equal(bookdb_record_encode(again, sizeof again, &dec), lm);
	assert_memory_equal(again, marked, (size_t)lm);
	/* Clearing the marks gives the plain bytes back, whatever rec.flags says. */
	dec.moves[1].flags &= (uint8_t)~BOOKDB_MOVE_AVOIDED;
	dec.moves[4].flags &= (uint8_t)~BOOKDB_MOVE_AVOIDED;
	assert_int_equal(bookdb_record_encode(again, sizeof again, &dec), lp);
	assert_memory_equal(again, plain, (size_t)lp);
	/* Non-canonical or out-of-range lists are corruption. */
	int head = bookdb_record_decode_head(&dec, plain, (size_t)lp);
	assert_true(head > 0);
	size_t at = (size_t)head; /* the list comes where the plain record's position starts */
	assert_memory_equal(marked + at, "\x02\x01\x02", 3);
	uint8_t bad[256];
	static const uint8_t LISTS[][3] = {{0, 1, 2}, {2, 1, 3}, {3, 1, 2}, {2, 5, 0}};
	for (size_t b = 0; b < sizeof LISTS / sizeof *LISTS; b++) {
		memcpy(bad, marked, (size_t)lm);
		memcpy(bad + at, LISTS[b], 3);
		assert_int_equal(bookdb_record_decode(&dec, bad, (size_t)lm), BOOKDB_ECORRUPT);
	}
	/* The flag without a list. */
	memcpy(bad, plain, (size_t)lp);
	bad[0] |= BOOKDB_REC_AVOID;
	assert_int_equal(bookdb_record_decode(&dec, bad, (size_t)lp), BOOKDB_ECORRUPT);
}

/* Minimax values: a move valued by its own analysis (a leaf of the book: value
 * = eval, dist 0) takes one byte; each value is coded against its move's eval
 * (the previous value without one), its dist folded in. A record written in
 * the older form (values against the previous value, dist apart, no flag bit
 * 5) is read as before and written back in the new one. */
static void
test_record__minimax_values_a_leaf_takes_one_byte_and_the_older_form_is_read(void **state)
{
	(void)state;
	static Position pos;
	static BookRecord rec, dec;
	pos_set_startpos(&pos);
	Move legal[MOVEGEN_MAX];
	assert_true(movegen_legal(&pos, legal) > 2);
	bookdb_record_init(&rec, &pos);
	rec.nmoves = 1;
	rec.moves[0] = (BookMove){.move = legal[0], .flags = BOOKDB_MOVE_EVAL, .eval = 1234};
	uint8_t plain[256], valued[256], old[256], again[256];
	int lp = bookdb_record_encode(plain, sizeof plain, &rec);
	rec.flags = BOOKDB_REC_MINIMAX;
	rec.moves[0].value = 1234;
	int lv = bookdb_record_encode(valued, sizeof valued, &rec);
	assert_true(lp > 0);
	assert_int_equal(lv, lp + 1);
	assert_int_equal(valued[0], BOOKDB_REC_MINIMAX | 0x20);
	assert_int_equal(bookdb_record_decode(&dec, valued, (size_t)lv), 0);
	assert_int_equal(dec.flags, BOOKDB_REC_MINIMAX); /* bit 5 is the encoding's */
	assert_int_equal(dec.moves[0].value, 1234);

	/* The older form, byte by byte: flags MINIMAX, min_ply 1, 2 moves; an
	 * analysed one (eval 10: zigzag 20) valued 10 (zigzag 20) at dist 0, then
	 * a bare one valued -5 (-15 from 10: zigzag 29) at dist 3. */
	uint8_t packed[BOOKDB_PACKED_MAX];
	int np = bookdb_pack_position(packed, pos.board, pos.hand, pos.side);
	assert_true(np > 0);
	const uint8_t head[] = {0x02, 0x01, 0x02}, a[] = {0x01, 0x14, 0x14, 0x00},
	              b[] = {0x00, 0x1d, 0x03};
	size_t lo = 0;
	memcpy(old + lo, head, sizeof head), lo += sizeof head;
	old[lo++] = (uint8_t)(legal[1] & 0xff), old[lo++] = (uint8_t)(legal[1] >> 8);
	memcpy(old + lo, a, sizeof a), lo += sizeof a;
	old[lo++] = (uint8_t)(legal[2] & 0xff), old[lo++] = (uint8_t)(legal[2] >> 8);
	memcpy(old + lo, b, sizeof b), lo += sizeof b;
	memcpy(old + lo, packed, (size_t)np), lo += (size_t)np;
	assert_int_equal(bookdb_record_decode(&dec, old, lo), 0);
	assert_int_equal(dec.flags, BOOKDB_REC_MINIMAX);
	assert_int_equal(dec.nmoves, 2);
	assert_int_equal(dec.moves[0].eval, 10);
	assert_int_equal(dec.moves[0].value, 10);
	assert_int_equal(dec.moves[0].dist, 0);
	assert_int_equal(dec.moves[1].flags, 0);
	assert_int_equal(dec.moves[1].value, -5);
	assert_int_equal(dec.moves[1].dist, 3);
	/* Written back in the new form: the leaf's value one byte (0), the bare
	 * move's -15 from the value before (zigzag 29, times 2, plus 1: a dist
	 * follows) and its dist less one. */
	int la = bookdb_record_encode(again, sizeof again, &dec);
	assert_int_equal(la, (int)lo - 1);
	const uint8_t na[] = {0x01, 0x14, 0x00}, nb[] = {0x00, 0x3b, 0x02};
	assert_int_equal(again[0], BOOKDB_REC_MINIMAX | 0x20);
	assert_memory_equal(again + 5, na, sizeof na);
	assert_memory_equal(again + 10, nb, sizeof nb);
	assert_int_equal(bookdb_record_decode(&rec, again, (size_t)la), 0);
	assert_memory_equal(rec.moves, dec.moves, 2 * sizeof *rec.moves);

	/* Bit 5 without MINIMAX, and a dist past 65535, are corruption. */
	memcpy(old, plain, (size_t)lp);
	old[0] |= 0x20;
	assert_int_equal(bookdb_record_decode(&dec, old, (size_t)lp), BOOKDB_ECORRUPT);
	memcpy(old, again, 10);
	const uint8_t far[] = {0x00, 0x3b, 0xff, 0xff, 0x03};
	memcpy(old + 10, far, sizeof far);
	memcpy(old + 15, again + 13, (size_t)la - 13);
	assert_int_equal(bookdb_record_decode(&dec, old, (size_t)la + 2), BOOKDB_ECORRUPT);
	old[12] = 0xfe; /* 65534 + 1: the largest dist */
	assert_int_equal(bookdb_record_decode(&dec, old, (size_t)la + 2), 0);
	assert_int_equal(dec.moves[1].dist, 65535);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record__the_entering_king_position_of_a_real_301_ply_game),
	    cmocka_unit_test(test_record__empty_runs_of_every_length_at_every_place),
	    cmocka_unit_test(test_record__full_hands_bare_kings_and_everything_promoted),
	    cmocka_unit_test(test_record__move_numbers_past_one_byte_and_past_16_bits),
	    cmocka_unit_test(test_record__six_hundred_moves_with_every_field),
	    cmocka_unit_test(test_record__avoided_marks_round_trip_and_have_one_encoding),
	    cmocka_unit_test(
	        test_record__minimax_values_a_leaf_takes_one_byte_and_the_older_form_is_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
