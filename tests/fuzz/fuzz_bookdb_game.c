/*
 * tests/fuzz/fuzz_bookdb_game.c — libFuzzer target for the games database's
 * values (bookdb/game.h): bookdb_game_decode on any bytes returns 0 or
 * BOOKDB_ECORRUPT and never reads outside them; a value that decodes re-encodes
 * to the same bytes, and replaying it reports at most its plies and either
 * ends cleanly or says BOOKDB_ECORRUPT (an illegal move or position), never
 * making an illegal move; unfinished, it is completed (bookdb_game_completes)
 * by a longer game with a result, never completing a shorter one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "bookdb/game.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Position pos; /* large: not on the stack */
static Move moves[(1 << 15) + 1];
static uint8_t buf[BOOKDB_GAME_LEN((1 << 15) + 1)];

static void on_ply(void *ctx, Key key, Move move, int result)
{
	(void)key;
	(void)move;
	if (result < -1 || result > 2) abort();
	(*(uint32_t *)ctx)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size > 65536) return 0;
	uint8_t *copy = malloc(size ? size : 1); /* exact size: ASan sees over-reads */
	if (!copy) return 0;
	memcpy(copy, data, size);
	BookGame g;
	int rc = bookdb_game_decode(&g, copy, size);
	if (rc != 0 && rc != BOOKDB_ECORRUPT) abort();
	if (rc == 0) {
		uint32_t n = g.has_plies ? g.nplies : 0;
		if (n > sizeof moves / sizeof *moves) abort();
		for (uint32_t i = 0; i < n; i++)
			moves[i] = (Move)(g.moves[2 * i] | g.moves[2 * i + 1] << 8);
		int len;
		if (g.has_plies)
			len = bookdb_game_encode(buf, sizeof buf, g.winner, g.packed, g.packed_len,
			                         g.first_ply, moves, n);
		else
			len = bookdb_game_encode(buf, sizeof buf, g.winner, NULL, 0, 0, NULL, 0);
		/* A legacy value keeps its ply count; re-encoding writes 0 plies there. */
		if (g.has_plies && (len != (int)size || memcmp(buf, copy, size))) abort();
		/* Unfinished, it is completed by itself with a result and one move
		 * longer; never by a game one move shorter, or without a result. */
		if (g.has_plies) {
			BookGame old = g, longer;
			old.winner = BOOKDB_GAME_NONE;
			moves[n] = 0x1234;
			len = bookdb_game_encode(buf, sizeof buf, BOOKDB_GAME_DRAW, g.packed,
			                         g.packed_len, g.first_ply, moves, n + 1);
			if (len < 0 || bookdb_game_decode(&longer, buf, (size_t)len) < 0 ||
			    !bookdb_game_completes(&old, &longer) ||
			    bookdb_game_completes(&longer, &old))
				abort();
			longer.winner = BOOKDB_GAME_NONE;
			if (bookdb_game_completes(&old, &longer)) abort();
		}
		uint32_t seen = 0;
		int r = bookdb_game_replay(&g, &pos, on_ply, &seen);
		if (r != 0 && r != BOOKDB_ECORRUPT) abort();
		if (seen > n || (r == 0 && seen != n)) abort();
	}
	free(copy);
	return 0;
}
