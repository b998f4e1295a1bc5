/* bookdb/game.c — the games database's values (game.h). */
#include "bookdb/game.h"

#include <string.h>

#include "bookdb/bookdb.h"

static void put16(uint8_t *p, uint16_t x)
{
	p[0] = (uint8_t)x;
	p[1] = (uint8_t)(x >> 8);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

int bookdb_game_encode(uint8_t *out, size_t cap, uint8_t winner, const uint8_t *packed,
                       size_t packed_len, uint16_t first_ply, const Move *moves, uint32_t n)
{
	if (winner > BOOKDB_GAME_DRAW || cap < BOOKDB_GAME_LEGACY_LEN) return BOOKDB_EINVAL;
	memset(out, 0, BOOKDB_GAME_LEGACY_LEN);
	out[0] = winner;
	for (int i = 0; i < 4; i++) out[4 + i] = (uint8_t)(n >> (8 * i));
	if (n == 0) return BOOKDB_GAME_LEGACY_LEN;
	if (packed_len < 1 || packed_len > BOOKDB_PACKED_MAX) return BOOKDB_EINVAL;
	size_t len = 12 + packed_len + 2 * (size_t)n;
	if (cap < len) return BOOKDB_EINVAL;
	out[8] = 1;
	out[9] = (uint8_t)packed_len;
	memcpy(out + 10, packed, packed_len);
	put16(out + 10 + packed_len, first_ply);
	for (uint32_t i = 0; i < n; i++) put16(out + 12 + packed_len + 2 * i, moves[i]);
	return (int)len;
}

int bookdb_game_decode(BookGame *g, const uint8_t *in, size_t len)
{
	memset(g, 0, sizeof *g);
	if (len < BOOKDB_GAME_LEGACY_LEN || in[0] > BOOKDB_GAME_DRAW || in[1] || in[2] || in[3])
		return BOOKDB_ECORRUPT;
	g->winner = in[0];
	for (int i = 0; i < 4; i++) g->nplies |= (uint32_t)in[4 + i] << (8 * i);
	if (len == BOOKDB_GAME_LEGACY_LEN) return 0;
	if (len < 12 || in[8] != 1 || in[9] < 1 || in[9] > BOOKDB_PACKED_MAX || g->nplies == 0)
		return BOOKDB_ECORRUPT;
	size_t p = in[9];
	if (len != 12 + p + 2 * (uint64_t)g->nplies) return BOOKDB_ECORRUPT;
	g->has_plies = true;
	g->packed_len = (uint8_t)p;
	memcpy(g->packed, in + 10, p);
	g->first_ply = get16(in + 10 + p);
	g->moves = in + 12 + p;
	return 0;
}

bool bookdb_game_completes(const BookGame *old, const BookGame *g)
{
	if (old->winner != BOOKDB_GAME_NONE || g->winner == BOOKDB_GAME_NONE) return false;
	if (old->nplies == 0) return true;
	return old->has_plies && g->has_plies && g->nplies >= old->nplies &&
	       g->packed_len == old->packed_len &&
	       !memcmp(g->packed, old->packed, old->packed_len) && g->first_ply == old->first_ply &&
	       !memcmp(g->moves, old->moves, 2 * (size_t)old->nplies);
}

int bookdb_game_replay(const BookGame *g, Position *pos, BookGamePlyFn fn, void *ctx)
{
	if (!g->has_plies) return 0;
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	int n = bookdb_unpack_position(board, hand, &side, g->packed, g->packed_len);
	if (n != g->packed_len) return BOOKDB_ECORRUPT;
	if (pos_set(pos, board, hand, side, g->first_ply ? g->first_ply : 1, NULL) < 0)
		return BOOKDB_ECORRUPT;
	for (uint32_t i = 0; i < g->nplies; i++) {
		Move m = get16(g->moves + 2 * i);
		if (pos_history_len(pos) >= POS_MAX_STATES - 1 || !pos_is_legal(pos, m))
			return BOOKDB_ECORRUPT;
		int result = 2;
		if (g->winner == BOOKDB_GAME_DRAW)
			result = 0;
		else if (g->winner != BOOKDB_GAME_NONE)
			result = (g->winner == BOOKDB_GAME_BLACK) == (pos->side == BLACK) ? 1 : -1;
		fn(ctx, pos_key(pos), m, result);
		pos_do_move(pos, m);
	}
	return 0;
}
