/*
 * shogi/apery.h — Apery's binary book: the key of a position, the move and
 * the 16-byte entry (docs/ingest.md, "Apery books"; Apery's book.hpp and
 * book.cpp are the published definition).
 *
 * An entry is 16 bytes, little-endian: u64 key, u16 move, u16 count, s32
 * score (the mover's, centipawns). A file is its entries sorted by key (Apery
 * binary-searches the first entry of a key and reads on while the key
 * matches; YaneuraOu loads them all). The key is Apery's own 64-bit Zobrist
 * hash, not joseki's: the XOR, over the occupied squares, of a random number
 * for (piece, square), of one for each hand piece kind and its count in the
 * hand of the side to move only (Apery's order: pawn, lance, knight, silver,
 * gold, bishop, rook; counts 0..18), and of one more when White is to move.
 * The numbers are the first outputs of std::mt19937_64 with its default seed
 * (5489): 31 x 81 for (piece, square) with Apery's piece codes 0..30 (which
 * are joseki's Piece values) and squares 0..80 (joseki's too: 1a, 1b, ...),
 * then 7 x 19 for the hands, then one for the side.
 *
 * A move is to | from << 7 | promote << 14, and a drop has from = 80 + the
 * dropped piece type (pawn 81 ... gold 87, joseki's PieceType numbering).
 */
#ifndef SHOGI_APERY_H
#define SHOGI_APERY_H

#include <stddef.h>
#include <stdint.h>

#include "shogi/position.h"

#define APERY_ENTRY_SIZE 16

typedef struct {
	uint64_t key;
	uint16_t move;
	uint16_t count;
	int32_t score;
} AperyEntry;

/* Apery's key of pos (a hand count above 18 counts as 18). Thread-safe. */
uint64_t apery_key(const Position *pos);

/* The key the position would have after the legal move m, without making it,
 * from key = apery_key(pos) (a walk trying every move of a position: a few
 * XORs, not 81). */
uint64_t apery_key_after(const Position *pos, uint64_t key, Move m);

/* Apery's 16-bit form of joseki's move m. */
uint16_t apery_move_encode(Move m);
/* joseki's move for Apery's v (syntax only: legality is the caller's);
 * MOVE_NONE when v names no move (a square past 80, a drop of no piece). */
Move apery_move_decode(uint16_t v);

/* The entry's 16 bytes, little-endian, and back. */
void apery_entry_write(uint8_t out[APERY_ENTRY_SIZE], const AperyEntry *e);
void apery_entry_read(AperyEntry *e, const uint8_t in[APERY_ENTRY_SIZE]);

/* One book move of a position the walk found. */
typedef struct {
	Move move;
	int32_t score;
	uint16_t count;
} AperyMove;

typedef struct {
	size_t positions; /* positions found with legal book moves */
	size_t unreached; /* entries no walk reached */
	size_t illegal;   /* entries whose move is not legal where their key was reached */
} AperyWalkStats;

/*
 * Finds the positions of a book (entries[0..n), in any order): Apery's keys
 * name no position, the moves that reach them do. The walk starts at the
 * start position and goes breadth first (each position's ply is its shortest
 * line's); from a position the book holds, every legal move is tried (a book
 * made from games with variations may lack the move into a branch it holds),
 * and the book's own moves are followed one ply past positions it does not
 * hold (Apery keeps the winner's moves of a game only, so every other
 * position of a line may be missing). fn gets each position found with its
 * legal book moves (in file order); bad (may be NULL) each entry whose move
 * is not legal there, with its index. Returns 0, SHOGI_ENOMEM, or fn's
 * non-zero value; st (may be NULL) counts.
 */
typedef int (*apery_pos_fn)(void *ctx, const Position *pos, const AperyMove *moves, size_t n);
typedef void (*apery_bad_fn)(void *ctx, const Position *pos, const AperyEntry *e, size_t at);
int apery_walk(const AperyEntry *entries, size_t n, apery_pos_fn fn, apery_bad_fn bad, void *ctx,
               AperyWalkStats *st);

/* The n-th output (n >= 1) of std::mt19937_64 seeded with 5489, the
 * generator of the key's numbers (for tests: the 10000th is
 * 9981545732273789042, what the C++ standard requires). */
uint64_t apery_mt64_nth(unsigned n);

#endif
