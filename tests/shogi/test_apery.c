/*
 * tests/shogi/test_apery.c — Apery's book keys, moves and entries
 * (shogi/apery.h) against a real Apery book: the generator is std::mt19937_64
 * (its 10000th output is what the C++ standard requires), the key of every
 * position of the same book written as DB2016 is a key of the Apery file and
 * every move is its entry's move; keys made incrementally equal keys made
 * from scratch; moves and entries survive encoding; the walk finds the
 * book's positions from the start position, whatever the file order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/apery.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

#define BOOK_BIN "tests/data/apery/apery.bin"
#define BOOK_DB "tests/data/apery/yaneuraou.db"

static AperyEntry *read_book(size_t *n)
{
	size_t len;
	char *raw = ts_read_file(BOOK_BIN, &len);
	assert_non_null(raw);
	assert_int_equal(len % APERY_ENTRY_SIZE, 0);
	*n = len / APERY_ENTRY_SIZE;
	AperyEntry *e = calloc(*n, sizeof *e);
	for (size_t i = 0; i < *n; i++) {
		apery_entry_read(&e[i], (const uint8_t *)raw + i * APERY_ENTRY_SIZE);
		/* and back to the same bytes */
		uint8_t back[APERY_ENTRY_SIZE];
		apery_entry_write(back, &e[i]);
		assert_memory_equal(back, raw + i * APERY_ENTRY_SIZE, APERY_ENTRY_SIZE);
	}
	free(raw);
	return e;
}

static void test_apery__generator_is_mt19937_64(void **state)
{
	(void)state;
	assert_true(apery_mt64_nth(10000) == 9981545732273789042ULL);
	assert_true(apery_mt64_nth(1) == 14514284786278117030ULL);
}

static void test_apery__keys_and_moves_of_a_real_book(void **state)
{
	(void)state;
	size_t n;
	AperyEntry *e = read_book(&n);
	assert_int_equal(n, 73);
	/* Apery writes its entries sorted by key. */
	for (size_t i = 1; i < n; i++) assert_true(e[i - 1].key <= e[i].key);
	char *text = ts_read_file(BOOK_DB, NULL);
	assert_non_null(text);
	static Position pos;
	int positions = 0, moves = 0;
	uint64_t key = 0;
	for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
		if (!strncmp(line, "sfen ", 5)) {
			assert_int_equal(sfen_parse(&pos, line + 5, NULL, NULL), 0);
			key = apery_key(&pos);
			positions++;
			continue;
		}
		char usi[8];
		Move m;
		if (sscanf(line, "%7s", usi) != 1 ||
		    usi_move_parse(&m, usi, strlen(usi), NULL) != 0)
			continue;
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |=
			    e[i].key == key && e[i].move == apery_move_encode(m) && e[i].count == 1;
		if (!found) fail_msg("no entry for %s in the position before it", usi);
		moves++;
	}
	assert_int_equal(positions, 73);
	assert_int_equal(moves, 73);
	free(text);
	free(e);
}

static void test_apery__incremental_keys_and_moves_round_trip(void **state)
{
	(void)state;
	unsigned long long seed = ts_seed("test_apery__incremental_keys_and_moves_round_trip");
	static Position pos;
	static Move legal[MOVEGEN_MAX];
	size_t checked = 0;
	for (int game = 0; game < 30; game++) {
		pos_set_startpos(&pos);
		for (int ply = 0; ply < 200; ply++) {
			int nl = movegen_legal(&pos, legal);
			if (!nl) break;
			uint64_t key = apery_key(&pos);
			for (int i = 0; i < nl; i++) {
				assert_int_equal(apery_move_decode(apery_move_encode(legal[i])),
				                 legal[i]);
				uint64_t after = apery_key_after(&pos, key, legal[i]);
				pos_do_move(&pos, legal[i]);
				if (after != apery_key(&pos))
					fail_msg("incremental key differs, ply %d", ply);
				pos_undo_move(&pos);
				checked++;
			}
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			pos_do_move(&pos, legal[(seed >> 33) % (unsigned)nl]);
		}
	}
	assert_true(checked > 50000);
	/* What names no move. */
	assert_int_equal(apery_move_decode(0), MOVE_NONE);
	assert_int_equal(apery_move_decode((uint16_t)(81 | 3 << 7)), MOVE_NONE); /* to 81 */
	assert_int_equal(apery_move_decode((uint16_t)(3 | 88 << 7)),
	                 MOVE_NONE); /* drop of a king */
	assert_int_equal(apery_move_decode((uint16_t)(3 | 81 << 7 | 1 << 14)), MOVE_NONE);
	assert_int_equal(apery_move_decode((uint16_t)(3 | 81 << 7)), move_make_drop(PAWN, 3));
}

typedef struct {
	int positions, moves;
	uint64_t keys[128];
} Found;

static int on_pos(void *ctx, const Position *pos, const AperyMove *moves, size_t n)
{
	Found *f = ctx;
	if (f->positions < 128) f->keys[f->positions] = apery_key(pos);
	f->positions++;
	f->moves += (int)n;
	for (size_t i = 0; i < n; i++) assert_true(pos_is_legal(pos, moves[i].move));
	return 0;
}

static void test_apery__walk_finds_the_positions_in_any_order(void **state)
{
	(void)state;
	size_t n;
	AperyEntry *e = read_book(&n);
	AperyWalkStats st;
	Found a = {0}, b = {0};
	assert_int_equal(apery_walk(e, n, on_pos, NULL, &a, &st), 0);
	assert_int_equal(a.positions, 73);
	assert_int_equal(a.moves, 73);
	assert_int_equal(st.unreached, 0);
	assert_int_equal(st.illegal, 0);
	/* Reversed, the same positions in the same order (breadth first). */
	for (size_t i = 0; i < n / 2; i++) {
		AperyEntry t = e[i];
		e[i] = e[n - 1 - i];
		e[n - 1 - i] = t;
	}
	assert_int_equal(apery_walk(e, n, on_pos, NULL, &b, &st), 0);
	assert_int_equal(b.positions, 73);
	assert_memory_equal(a.keys, b.keys, sizeof a.keys);
	/* An entry whose move is not legal where it leads, and one no line reaches. */
	e[0].move = apery_move_encode(move_make(sq_make(4, 4), sq_make(4, 3), false)); /* 5e5d */
	AperyEntry more[80];
	memcpy(more, e, n * sizeof *e);
	more[n] = (AperyEntry){0x123456789abcdefULL, 0x1234, 1, 0};
	assert_int_equal(apery_walk(more, n + 1, on_pos, NULL, &b, &st), 0);
	assert_true(st.illegal >= 1);
	assert_true(st.unreached >= 1);
	free(e);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_apery__generator_is_mt19937_64),
	    cmocka_unit_test(test_apery__keys_and_moves_of_a_real_book),
	    cmocka_unit_test(test_apery__incremental_keys_and_moves_round_trip),
	    cmocka_unit_test(test_apery__walk_finds_the_positions_in_any_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
