/*
 * bookdb/game.h — the value kept for an ingested game in the games database.
 *
 * The key is the game's id (ingest's choice); the value says how the game
 * ended and which plies of it the book counted, so that a book merge can take
 * a game that both books hold out of one side's statistics (docs/bookdb.md,
 * "Merge"). Layout, all integers little-endian:
 *
 *   0       u8   winner: 0 none (unfinished), 1 Black, 2 White, 3 draw
 *   1..3         zero
 *   4..7    u32  plies counted (n)
 *   -- absent in books written before the plies were kept (8 bytes in all) --
 *   8       u8   1: the plies follow
 *   9       u8   p, length of the packed position before the first ply (1..34)
 *   10      p    that position, as bookdb_pack_position writes it
 *   10+p    u16  its move number
 *   12+p    2n   the n moves played from it (Move), in order
 *
 * Encoding and decoding are pure; bookdb_game_replay walks the plies.
 */
#ifndef BOOKDB_GAME_H
#define BOOKDB_GAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/record.h"
#include "shogi/position.h"
#include "shogi/errors.h"

enum {
	BOOKDB_GAME_NONE = 0,
	BOOKDB_GAME_BLACK = 1,
	BOOKDB_GAME_WHITE = 2,
	BOOKDB_GAME_DRAW = 3,
};

/* Bytes of a value with n plies at most (the legacy form is 8). */
#define BOOKDB_GAME_LEGACY_LEN 8
#define BOOKDB_GAME_LEN(n) (12 + BOOKDB_PACKED_MAX + 2 * (size_t)(n))

typedef struct {
	uint8_t winner;  /* BOOKDB_GAME_* */
	uint32_t nplies; /* plies the book counted */
	bool has_plies;  /* false: a legacy value (the moves are not known) */
	uint8_t packed_len;
	uint8_t packed[BOOKDB_PACKED_MAX];
	uint16_t first_ply;
	const uint8_t *moves; /* 2 * nplies bytes inside the decoded value */
} BookGame;

/*
 * Encodes a game into out (cap bytes; BOOKDB_GAME_LEN(n) is enough): winner,
 * the packed position before the first ply, its move number and the n moves.
 * Returns the length, or BOOKDB_EINVAL (winner out of range, packed_len not
 * 1..BOOKDB_PACKED_MAX, cap too small). n = 0 writes the legacy 8 bytes.
 */
JOSEKI_MUST_USE int bookdb_game_encode(uint8_t *out, size_t cap, uint8_t winner,
                                       const uint8_t *packed, size_t packed_len, uint16_t first_ply,
                                       const Move *moves, uint32_t n);

/*
 * Decodes len bytes (any bytes) into g; g->moves points into in. Returns 0 or
 * BOOKDB_ECORRUPT (a length that fits neither form, a bad winner or field).
 */
JOSEKI_MUST_USE int bookdb_game_decode(BookGame *g, const uint8_t *in, size_t len);

/*
 * Whether the game g completes old, the same game's mark (both decoded): old
 * has no result (a record cut short), g has one, and old's plies are the
 * first of g's from the same position and move number. A game with no plies
 * counted is a beginning of any; a legacy value with plies of none (its moves
 * are unknown).
 */
bool bookdb_game_completes(const BookGame *old, const BookGame *g);

/* Called per ply: the key of the position before the move, the move, and the
 * mover's result (1 win, 0 draw, -1 loss, 2 no result). */
typedef void (*BookGamePlyFn)(void *ctx, Key key, Move move, int result);

/*
 * Replays a decoded game with plies from its first position (pos is the
 * caller's scratch) and calls fn for each ply. Returns 0, or BOOKDB_ECORRUPT
 * when the position does not unpack or set up, or a move is illegal (plies
 * before it have been reported).
 */
JOSEKI_MUST_USE int bookdb_game_replay(const BookGame *g, Position *pos, BookGamePlyFn fn,
                                       void *ctx);

#endif
