/*
 * tests/search/test_eval.c — the built-in engine's static evaluation
 * (search/eval.h) by its properties, over the start position, every position
 * of the fixture games and random playouts: the start position is nearly
 * level; the value is the same for the mirrored position (board turned 180°,
 * colours, hands and side to move swapped, built as SFEN text here); material
 * is the sum of the value tables and flips sign with the colours; removing a
 * piece that shields nothing, of the side to move lowers its value (and of the
 * other side raises it); a piece in hand counts, a little more than the same piece on the board;
 * a capture moves value to the capturer; evaluating changes nothing.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/eval.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* ---- the positions: fixture games and random playouts, as SFEN ---------------- */

typedef struct {
	char (*sfen)[SFEN_MAX];
	size_t n, cap;
} SfenList;

static void list_add(SfenList *l, const Position *pos)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->sfen = realloc(l->sfen, l->cap * sizeof *l->sfen);
		assert_non_null(l->sfen);
	}
	sfen_write(pos, l->sfen[l->n++], SFEN_MAX);
}

static Position *pos_alloc(void)
{
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	pos_set_startpos(pos);
	return pos;
}

static void parse_or_fail(Position *pos, const char *sfen)
{
	char err[SHOGI_ERRLEN] = "";
	if (sfen_parse(pos, sfen, NULL, err) != 0) fail_msg("sfen_parse(%s): %s", sfen, err);
}

/* Every position of the four fixture games, then random playouts from the start. */
static SfenList *positions(void)
{
	static SfenList list;
	if (list.n) return &list;
	Position *pos = pos_alloc();
	char *buf = ts_read_file("tests/data/positions/games-v1.usi", NULL);
	assert_non_null(buf);
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *p = strchr(line, '\t');
		assert_non_null(p);
		pos_set_startpos(pos);
		list_add(&list, pos);
		for (p++;;) {
			while (*p == ' ' || *p == '\r') p++;
			if (!*p) break;
			size_t len = strcspn(p, " \r");
			Move m;
			char err[SHOGI_ERRLEN] = "";
			if (usi_move_parse_legal(&m, pos, p, len, err) != 0)
				fail_msg("%.*s: %s", (int)len, p, err);
			pos_do_move(pos, m);
			list_add(&list, pos);
			p += len;
		}
	}
	free(buf);
	uint64_t rng = ts_seed("test_eval positions (random playouts)");
	for (int game = 0; game < 40; game++) {
		pos_set_startpos(pos);
		for (int ply = 0; ply < 250; ply++) {
			Move moves[MOVEGEN_MAX];
			int n = movegen_legal(pos, moves);
			if (n == 0) break;
			pos_do_move(pos, moves[ts_rand(&rng) % (uint64_t)n]);
			list_add(&list, pos);
		}
	}
	free(pos);
	printf("positions: %zu\n", list.n);
	assert_true(list.n > 5000);
	return &list;
}

/*
 * The mirror image as SFEN text: the board turned 180° (reading order
 * reversed), every piece's case swapped, the hands' letters swapped, the side
 * to move swapped. Written independently of the library's SFEN writer.
 */
static void mirror_sfen(const char *in, char *out, size_t outlen)
{
	char board[128], side[4], hand[64];
	int ply = 1;
	int k = sscanf(in, "%127s %3s %63s %d", board, side, hand, &ply);
	assert_true(k >= 3);
	char cell[81][3];
	int n = 0;
	for (const char *p = board; *p; p++) {
		if (*p == '/') continue;
		if (isdigit((unsigned char)*p)) {
			for (int e = 0; e < *p - '0'; e++) cell[n++][0] = '\0';
			continue;
		}
		assert_true(n < 81);
		int j = 0;
		if (*p == '+') cell[n][j++] = *p++;
		cell[n][j++] = *p;
		cell[n][j] = '\0';
		n++;
	}
	assert_int_equal(n, 81);
	char mb[128];
	size_t o = 0;
	for (int r = 0; r < 9; r++) {
		int empty = 0;
		for (int f = 0; f < 9; f++) {
			const char *c = cell[80 - (r * 9 + f)];
			if (!c[0]) {
				empty++;
				continue;
			}
			if (empty) mb[o++] = (char)('0' + empty), empty = 0;
			for (; *c; c++)
				mb[o++] =
				    isupper((unsigned char)*c)   ? (char)tolower((unsigned char)*c)
				    : islower((unsigned char)*c) ? (char)toupper((unsigned char)*c)
				                                 : *c;
		}
		if (empty) mb[o++] = (char)('0' + empty);
		if (r < 8) mb[o++] = '/';
	}
	mb[o] = '\0';
	for (char *h = hand; *h; h++)
		if (isupper((unsigned char)*h))
			*h = (char)tolower((unsigned char)*h);
		else if (islower((unsigned char)*h))
			*h = (char)toupper((unsigned char)*h);
	char whole[256];
	int len =
	    snprintf(whole, sizeof whole, "%s %s %s %d", mb, side[0] == 'b' ? "w" : "b", hand, ply);
	assert_true(len > 0 && (size_t)len < outlen);
	memcpy(out, whole, (size_t)len + 1);
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_eval__start_position_is_nearly_level(void **state)
{
	(void)state;
	Position *pos = pos_alloc();
	assert_int_equal(eval_material(pos), 0);
	int vb = eval_position(pos);
	assert_in_range(vb + 100, 0, 200); /* |value| <= 100 centipawns */
	/* the start position is its own mirror image: White to move in it is the
	 * same position seen from the other side */
	parse_or_fail(pos, "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1");
	assert_int_equal(eval_material(pos), 0);
	assert_int_equal(eval_position(pos), vb);
	free(pos);
}

/*
 * The test's own mirror, checked square by square through the library's
 * parser: the piece on sq turns up on 80 - sq (file 10-f, rank 10-r) in the
 * other colour, the hands and the side to move swap.
 */
static void check_mirror(const Position *pos, const Position *mir)
{
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = pos->board[sq], q = mir->board[80 - sq];
		if (p == PIECE_NONE) {
			assert_int_equal(q, PIECE_NONE);
			continue;
		}
		assert_int_equal(piece_type(q), piece_type(p));
		assert_int_equal(piece_color(q), color_flip(piece_color(p)));
	}
	assert_int_equal(mir->hand[BLACK], pos->hand[WHITE]);
	assert_int_equal(mir->hand[WHITE], pos->hand[BLACK]);
	assert_int_equal(mir->side, color_flip(pos->side));
}

static void test_eval__mirror_sfen_turns_the_board_and_swaps_colours(void **state)
{
	(void)state;
	char m[SFEN_MAX], mm[SFEN_MAX];
	/* the start position is its own mirror image, White to move */
	mirror_sfen(SFEN_STARTPOS, m, sizeof m);
	assert_string_equal(m, "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1");
	/* by hand: Black's king on 9i and pawn on 9h, White's king on 1a */
	mirror_sfen("8k/9/9/9/9/9/9/P8/K8 b Gs 1", m, sizeof m);
	assert_string_equal(m, "8k/8p/9/9/9/9/9/9/K8 w gS 1");
	const char *matsuri =
	    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";
	mirror_sfen(matsuri, m, sizeof m);
	mirror_sfen(m, mm, sizeof mm);
	assert_string_equal(mm, matsuri);
	Position *pos = pos_alloc(), *mir = pos_alloc();
	parse_or_fail(pos, matsuri);
	parse_or_fail(mir, m);
	check_mirror(pos, mir);
	free(pos);
	free(mir);
}

static void test_eval__same_value_for_the_colour_flipped_position(void **state)
{
	(void)state;
	SfenList *l = positions();
	Position *pos = pos_alloc(), *mir = pos_alloc();
	int in_check = 0;
	for (size_t i = 0; i < l->n; i++) {
		char m[SFEN_MAX];
		parse_or_fail(pos, l->sfen[i]);
		mirror_sfen(l->sfen[i], m, sizeof m);
		parse_or_fail(mir, m);
		check_mirror(pos, mir);
		assert_int_equal(pos_in_check(pos), pos_in_check(mir));
		in_check += pos_in_check(pos);
		int v = eval_position(pos), vm = eval_position(mir);
		if (v != vm)
			fail_msg("%s: %d from the side to move, mirrored %s: %d", l->sfen[i], v, m,
			         vm);
		if (eval_material(pos) != -eval_material(mir))
			fail_msg("%s: material %d (Black), mirrored %s: %d", l->sfen[i],
			         eval_material(pos), m, eval_material(mir));
	}
	printf("%zu positions, %d in check\n", l->n, in_check);
	assert_true(in_check > 0);
	free(pos);
	free(mir);
}

/* eval_material by its definition: the tables, board pieces and hands, Black minus White. */
static int material_by_definition(const Position *pos)
{
	int v = 0;
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = pos->board[sq];
		if (p == PIECE_NONE || piece_type(p) == KING) continue;
		int x = EVAL_PIECE_VALUE[piece_type(p)];
		v += piece_color(p) == BLACK ? x : -x;
	}
	for (int pt = PAWN; pt <= GOLD; pt++)
		v += EVAL_HAND_VALUE[pt] * (hand_count(pos->hand[BLACK], (PieceType)pt) -
		                            hand_count(pos->hand[WHITE], (PieceType)pt));
	return v;
}

static void test_eval__material_is_the_sum_of_the_value_tables(void **state)
{
	(void)state;
	/* every piece on the board and in hand is worth something */
	for (int pt = PAWN; pt < PT_NB; pt++)
		if (pt != KING) assert_true(EVAL_PIECE_VALUE[pt] > 0);
	for (int pt = PAWN; pt <= GOLD; pt++) {
		/* "a little more" in hand than on the board */
		assert_true(EVAL_HAND_VALUE[pt] > EVAL_PIECE_VALUE[pt]);
		assert_true(EVAL_HAND_VALUE[pt] < 2 * EVAL_PIECE_VALUE[pt]);
	}
	SfenList *l = positions();
	Position *pos = pos_alloc();
	int nonzero = 0;
	for (size_t i = 0; i < l->n; i++) {
		parse_or_fail(pos, l->sfen[i]);
		int want = material_by_definition(pos);
		if (eval_material(pos) != want)
			fail_msg("%s: eval_material %d, by the tables %d", l->sfen[i],
			         eval_material(pos), want);
		nonzero += want != 0;
	}
	assert_true(nonzero > 0);
	free(pos);
}

/* pos with the board piece on sq removed; false when pos_set refuses it. */
static bool without_piece(Position *out, const Position *pos, Square sq)
{
	Piece board[SQ_NB];
	memcpy(board, pos->board, sizeof board);
	board[sq] = PIECE_NONE;
	return pos_set(out, board, pos->hand, pos->side, pos->game_ply, NULL) == 0;
}

/*
 * A piece whose removal changes more than its own worth: it stands next to a
 * king (an empty square there is an escape square, which the king safety
 * features may prefer), it attacks an enemy piece (a threat can be worth more
 * than the piece: a pawn attacking a rook), or it blocks a line, so that
 * taking it away changes what another piece attacks (it shielded a piece or
 * a king, or held back a slider's reach).
 */
static bool shields(const Position *pos, const Position *less, Square sq)
{
	for (int c = 0; c < COLOR_NB; c++)
		if (pos->king_sq[c] != SQ_NONE && bb_test(KING_ATK[pos->king_sq[c]], sq))
			return true;
	Piece p = pos->board[sq];
	if (bb_any(bb_and(bb_piece_attacks(p, sq, pos->occupied),
	                  pos->by_color[color_flip(piece_color(p))])))
		return true;
	/* every other piece attacks the same squares without it */
	for (Square s = 0; s < SQ_NB; s++) {
		Piece q = pos->board[s];
		if (q == PIECE_NONE || s == sq) continue;
		if (!bb_equal(bb_piece_attacks(q, s, pos->occupied),
		              bb_piece_attacks(q, s, less->occupied)))
			return true;
	}
	return false;
}

/*
 * Removing a piece costs its side and helps the other, whenever the piece
 * shields and threatens nothing (see shields()): its material outweighs its
 * place, and every king-safety and threat feature it feeds is monotone
 * (tools/tune keeps them so). Its material part is checked for every piece.
 */
static void test_eval__removing_a_piece_costs_its_side(void **state)
{
	(void)state;
	SfenList *l = positions();
	Position *pos = pos_alloc(), *less = pos_alloc();
	long own = 0, theirs = 0, shielding = 0;
	for (size_t i = 0; i < l->n; i += 7) {
		parse_or_fail(pos, l->sfen[i]);
		int v = eval_position(pos);
		int mat = eval_material(pos);
		for (Square sq = 0; sq < SQ_NB; sq++) {
			Piece p = pos->board[sq];
			if (p == PIECE_NONE || piece_type(p) == KING) continue;
			assert_true(without_piece(less, pos, sq));
			/* material (Black's view) moves by exactly the piece's value */
			int x = EVAL_PIECE_VALUE[piece_type(p)];
			assert_int_equal(eval_material(less),
			                 mat - (piece_color(p) == BLACK ? x : -x));
			if (shields(pos, less, sq)) {
				shielding++;
				continue;
			}
			int lv = eval_position(less);
			bool mine = piece_color(p) == pos->side;
			if (mine && lv >= v)
				fail_msg("%s: removing the side to move's piece on %d%c raises its "
				         "value from %d to %d",
				         l->sfen[i], sq / 9 + 1, 'a' + sq % 9, v, lv);
			if (!mine && lv <= v)
				fail_msg("%s: removing the opponent's piece on %d%c lowers the "
				         "value from %d to %d",
				         l->sfen[i], sq / 9 + 1, 'a' + sq % 9, v, lv);
			own += mine;
			theirs += !mine;
		}
	}
	printf("pieces removed: %ld of the side to move, %ld of the other side (and %ld that "
	       "shield something, material only)\n",
	       own, theirs, shielding);
	assert_true(own > 1000 && theirs > 1000);
	free(pos);
	free(less);
}

static void test_eval__a_hand_piece_counts(void **state)
{
	(void)state;
	SfenList *l = positions();
	Position *pos = pos_alloc(), *more = pos_alloc();
	long added = 0;
	for (size_t i = 0; i < l->n; i += 5) {
		parse_or_fail(pos, l->sfen[i]);
		int v = eval_position(pos);
		int mat = eval_material(pos);
		for (int c = 0; c < COLOR_NB; c++)
			for (int pt = PAWN; pt <= GOLD; pt++) {
				Hand hand[COLOR_NB] = {pos->hand[0], pos->hand[1]};
				hand[c] = hand_add(hand[c], (PieceType)pt);
				/* (pos_set refuses more pieces of a type than a hand can count) */
				if (pos_set(more, pos->board, hand, pos->side, pos->game_ply, NULL))
					continue;
				int mv = eval_position(more);
				if (c == (int)pos->side ? mv <= v : mv >= v)
					fail_msg("%s: one more piece %d in hand %d: value %d -> %d",
					         l->sfen[i], pt, c, v, mv);
				int x = EVAL_HAND_VALUE[pt];
				assert_int_equal(eval_material(more), mat + (c == BLACK ? x : -x));
				added++;
			}
	}
	assert_true(added > 1000);
	/* by hand: the same bishop is worth more in hand than on its start square */
	Position *a = pos_alloc(), *b = pos_alloc();
	parse_or_fail(a, "lnsgkgsnl/1r7/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1");
	parse_or_fail(b, "lnsgkgsnl/1r7/ppppppppp/9/9/9/PPPPPPPPP/7R1/LNSGKGSNL b B 1");
	assert_int_equal(eval_material(b) - eval_material(a),
	                 EVAL_HAND_VALUE[BISHOP] - EVAL_PIECE_VALUE[BISHOP]);
	assert_true(eval_material(b) > eval_material(a));
	free(a);
	free(b);
	free(pos);
	free(more);
}

/*
 * After every capture in the positions' games, the capturer's material gained
 * the captured piece's board value and its hand value (a trade's first half).
 */
static void test_eval__a_capture_moves_material_to_the_capturer(void **state)
{
	(void)state;
	SfenList *l = positions();
	Position *pos = pos_alloc();
	long captures = 0;
	for (size_t i = 0; i < l->n; i += 3) {
		parse_or_fail(pos, l->sfen[i]);
		Move moves[MOVEGEN_MAX];
		int n = movegen(pos, GEN_CAPTURES, moves);
		int mat = eval_material(pos);
		Color us = pos->side;
		for (int k = 0; k < n; k++) {
			Piece victim = pos->board[move_to(moves[k])];
			if (move_is_drop(moves[k]) || victim == PIECE_NONE) continue;
			Piece mover = pos->board[move_from(moves[k])];
			pos_do_move(pos, moves[k]);
			int gain = EVAL_PIECE_VALUE[piece_type(victim)] +
			           EVAL_HAND_VALUE[pt_unpromote(piece_type(victim))];
			if (move_is_promote(moves[k]))
				gain += EVAL_PIECE_VALUE[piece_type(mover) + PROMOTE] -
				        EVAL_PIECE_VALUE[piece_type(mover)];
			assert_int_equal(eval_material(pos), mat + (us == BLACK ? gain : -gain));
			pos_undo_move(pos);
			captures++;
		}
	}
	printf("captures: %ld\n", captures);
	assert_true(captures > 1000);
	free(pos);
}

/* Evaluating is a pure function: same value twice, the position untouched. */
static void test_eval__evaluation_changes_nothing(void **state)
{
	(void)state;
	SfenList *l = positions();
	Position *pos = pos_alloc(), *copy = pos_alloc();
	for (size_t i = 0; i < l->n; i += 11) {
		parse_or_fail(pos, l->sfen[i]);
		memcpy(copy, pos, sizeof *pos);
		int v = eval_position(pos), m = eval_material(pos);
		assert_memory_equal(copy, pos, sizeof *pos);
		assert_int_equal(eval_position(pos), v);
		assert_int_equal(eval_material(pos), m);
	}
	free(pos);
	free(copy);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_eval__start_position_is_nearly_level),
	    cmocka_unit_test(test_eval__mirror_sfen_turns_the_board_and_swaps_colours),
	    cmocka_unit_test(test_eval__same_value_for_the_colour_flipped_position),
	    cmocka_unit_test(test_eval__material_is_the_sum_of_the_value_tables),
	    cmocka_unit_test(test_eval__removing_a_piece_costs_its_side),
	    cmocka_unit_test(test_eval__a_hand_piece_counts),
	    cmocka_unit_test(test_eval__a_capture_moves_material_to_the_capturer),
	    cmocka_unit_test(test_eval__evaluation_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
