/*
 * bookdb/record.h — the position record of the book and its byte encoding.
 *
 * A record is everything the book knows about one position: the position itself
 * (packed, so an SFEN can be rebuilt from the record alone), the smallest ply it
 * was seen at, flags, and per stored move the engine evaluation, the game
 * statistics and, once minimax has run, the backed-up value and distance to the
 * leaf. The layout is documented byte by byte above bookdb_record_encode() and in
 * docs/bookdb.md. Encoding and decoding are pure functions: no allocation, no I/O.
 */
#ifndef BOOKDB_RECORD_H
#define BOOKDB_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shogi/position.h"
#include "shogi/types.h"
#include "shogi/errors.h"

/* Most moves a record can hold (every legal move of any position fits). */
#define BOOKDB_MAX_MOVES 600

/* Record flags (byte 0 of the encoding). */
#define BOOKDB_REC_THOUGHT 0x01 /* an engine analysed the position (think_depth valid) */
#define BOOKDB_REC_MINIMAX 0x02 /* every move carries value and dist */
/* Some moves are avoided (joseki prune): their indices follow the moves. The
 * encoder sets and clears this bit from the moves' BOOKDB_MOVE_AVOIDED flags;
 * the decoder sets it when the record has it. */
#define BOOKDB_REC_AVOID 0x04
/* The record's values come from the moves' game results (`minimax
 * --games-book`: a book from games alone, by choice), not from an analysis:
 * its minimax values (BOOKDB_REC_MINIMAX) when it has a move chosen from its
 * games, else none (its analyses are no values in such a book). */
#define BOOKDB_REC_GAMES 0x08
/* Some moves are preferred (joseki prefer): their indices and windows follow
 * the avoided ones. Set and cleared by the encoder from the moves'
 * BOOKDB_MOVE_PREFERRED flags, as BOOKDB_REC_AVOID. */
#define BOOKDB_REC_PREFER 0x10
#define BOOKDB_REC_FLAGS_KNOWN 0x1f

/* Per-move flags. */
#define BOOKDB_MOVE_EVAL 0x01  /* eval, depth, nodes and source are valid */
#define BOOKDB_MOVE_STATS 0x02 /* count, wins, draws, losses are valid */
/* The book side does not play this move (joseki prune: it lost too often in
 * games); kept with its statistics, left out of export, query's best move and
 * minimax unless asked. */
#define BOOKDB_MOVE_AVOIDED 0x04
/* The book side plays this move where it is valued within prefer_window
 * centipawns of the best (joseki prefer: a hand mark); never with
 * BOOKDB_MOVE_AVOIDED. */
#define BOOKDB_MOVE_PREFERRED 0x08
/* A move's value in a record minimax has run on (BOOKDB_REC_MINIMAX) when it
 * has none: not analysed, and no line of the book below it is valued
 * (minimax/bookmm.h's BOOKMM_NOVALUE is this value). */
#define BOOKDB_NOVALUE INT16_MIN
/* The window of a preference when none is given (centipawns). */
#define BOOKDB_PREFER_WINDOW 50

/* Source ids (engine that produced an evaluation); 0..15 fit the encoding. */
#define BOOKDB_SOURCE_ENGINE 0 /* an engine's analysis of the position (think) */
#define BOOKDB_SOURCE_GAME 1   /* a game record's comment ("'**" in CSA) */
#define BOOKDB_SOURCE_IMPORT 2 /* an imported book (YaneuraOu DB2016) */
#define BOOKDB_SOURCE_MAX 15

typedef struct {
	Move move;
	uint8_t flags;  /* BOOKDB_MOVE_* */
	uint8_t source; /* which engine/source produced eval (0..BOOKDB_SOURCE_MAX) */
	int16_t eval;   /* engine value of the move, centipawns for the mover */
	uint8_t depth;  /* search depth of eval */
	uint64_t nodes; /* nodes searched; stored approximately (3-bit mantissa) */
	uint32_t count, wins, draws, losses; /* game statistics, mover's view */
	int16_t value;                       /* minimax value (record flag BOOKDB_REC_MINIMAX) */
	uint16_t dist;          /* plies from this move to the leaf the value comes from */
	uint16_t prefer_window; /* BOOKDB_MOVE_PREFERRED: how far below the best it is played */
} BookMove;

/* Whether m's evaluation is an analysis (an engine's, by think or a worker,
 * or an imported engine book's): a value the book may play on. A game
 * record's comment is another program's opinion, kept and shown, but not an
 * analysis (docs/minimax.md, "Where values come from"). */
static inline bool bookdb_move_analysed(const BookMove *m)
{
	return (m->flags & BOOKDB_MOVE_EVAL) && m->source != BOOKDB_SOURCE_GAME;
}
/* Whether m's evaluation is a game record's comment. */
static inline bool bookdb_move_commented(const BookMove *m)
{
	return (m->flags & BOOKDB_MOVE_EVAL) && m->source == BOOKDB_SOURCE_GAME;
}

typedef struct {
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	uint16_t min_ply;    /* smallest move number the position was seen at (>= 1) */
	uint8_t flags;       /* BOOKDB_REC_* */
	uint8_t think_depth; /* depth of the engine analysis (BOOKDB_REC_THOUGHT) */
	uint16_t nmoves;
	BookMove moves[BOOKDB_MAX_MOVES];
} BookRecord;

/* Most bytes an encoded record can take. */
#define BOOKDB_PACKED_MAX 34
#define BOOKDB_RECORD_MAX (8 + BOOKDB_PACKED_MAX + 3 + BOOKDB_MAX_MOVES * 40)

/* Clears rec and copies the position (board, hands, side, game_ply as min_ply). */
void bookdb_record_init(BookRecord *rec, const Position *pos);

/* Appends move to rec as a move the book knows nothing of yet: no analysis, no
 * games and, in a record minimax has run on, no value (BOOKDB_NOVALUE) until an
 * analysis or the next minimax run values it. NULL when rec holds
 * BOOKDB_MAX_MOVES moves already. */
BookMove *bookdb_record_add_move(BookRecord *rec, Move move);

/*
 * Sets pos to the record's position with move number min_ply (validated by
 * pos_set). Returns 0 or SHOGI_EILLEGAL with a message in err (may be NULL).
 */
JOSEKI_MUST_USE int bookdb_record_position(Position *pos, const BookRecord *rec, char *err);

/*
 * Packs a board, hands and side into out (at least BOOKDB_PACKED_MAX bytes).
 * Returns the length (at most 33 for a full piece set), or BOOKDB_ECORRUPT (see bookdb.h)
 * for a board that cannot be packed (more than one king per side, or more pieces
 * of a kind than the set has).
 */
JOSEKI_MUST_USE int bookdb_pack_position(uint8_t *out, const Piece board[SQ_NB],
                                         const Hand hand[COLOR_NB], Color side);
/*
 * bookdb_pack_position, and the packing read back as the store will: its
 * length, or BOOKDB_ECORRUPT when it cannot be packed or does not read back
 * (as the position of a real 301-ply entering-king game once did not).
 */
JOSEKI_MUST_USE int bookdb_pack_checked(uint8_t *out, const Piece board[SQ_NB],
                                        const Hand hand[COLOR_NB], Color side);
/*
 * Unpacks what bookdb_pack_position wrote. Never reads past in[len]. Returns the
 * number of bytes used, or BOOKDB_ECORRUPT for bytes that are not a packing of a
 * board with at most the pieces of one set.
 */
JOSEKI_MUST_USE int bookdb_unpack_position(Piece board[SQ_NB], Hand hand[COLOR_NB], Color *side,
                                           const uint8_t *in, size_t len);

/*
 * Encodes rec into out (cap bytes; BOOKDB_RECORD_MAX is always enough).
 * Returns the length, or BOOKDB_EINVAL (bad field: nmoves, source, min_ply) or
 * BOOKDB_ECORRUPT (board cannot be packed). Leaves rec untouched.
 */
JOSEKI_MUST_USE int bookdb_record_encode(uint8_t *out, size_t cap, const BookRecord *rec);

/*
 * For rewriting a record's moves without unpacking and repacking its position:
 * bookdb_record_decode_head decodes as bookdb_record_decode_moves and returns
 * where the packed position starts (in[ret..len) are its bytes) or an error;
 * bookdb_record_encode_packed encodes rec as bookdb_record_encode but copies
 * those bytes instead of packing rec's position fields (which it does not read).
 */
JOSEKI_MUST_USE int bookdb_record_decode_head(BookRecord *rec, const uint8_t *in, size_t len);
JOSEKI_MUST_USE int bookdb_record_encode_packed(uint8_t *out, size_t cap, const BookRecord *rec,
                                                const uint8_t *packed, size_t packed_len);

/*
 * Decodes len bytes into rec. Any byte string may be passed: the result is 0, or
 * BOOKDB_ECORRUPT (truncated, trailing bytes, unknown flags, out-of-range field).
 * Does not check that the position or the moves are legal (bookdb check does).
 */
JOSEKI_MUST_USE int bookdb_record_decode(BookRecord *rec, const uint8_t *in, size_t len);

/* A record's head, what bookdb_record_peek reads. */
typedef struct {
	uint8_t flags; /* BOOKDB_REC_* */
	uint8_t think_depth;
	uint16_t min_ply, nmoves;
} BookRecordHead;

/*
 * Reads only the head of the encoded record (its first 3 to 7 bytes: flags,
 * min_ply, think_depth, nmoves), as bookdb_record_decode checks them, for the
 * counts the store keeps on every write (docs/bookdb.md, "Kept counts").
 * Returns 0, or BOOKDB_ECORRUPT (h then undefined); says nothing of the rest.
 */
JOSEKI_MUST_USE int bookdb_record_peek(BookRecordHead *h, const uint8_t *in, size_t len);

/*
 * As bookdb_record_decode but leaves the position fields (board, hand, side)
 * untouched and does not check the packing: for lookups by a caller that
 * already has the position. Still safe on any bytes. Where a move and the
 * same move promoting are both listed (bookdb_record_has_promotion_pair:
 * rare), the position is read and checked too, as bookdb_record_decode does:
 * a declined promotion is told by the board (bookdb_move_declined).
 */
JOSEKI_MUST_USE int bookdb_record_decode_moves(BookRecord *rec, const uint8_t *in, size_t len);

/* Whether rec lists a move and the same move promoting: where a declined
 * promotion may be (move_declined_promotion tells it by the board). Linear
 * when no move promotes, as nearly everywhere. */
static inline bool bookdb_record_has_promotion_pair(const BookRecord *rec)
{
	for (int i = 0; i < rec->nmoves; i++) {
		Move m = rec->moves[i].move;
		if (!move_is_promote(m) || move_is_drop(m)) continue;
		for (int j = 0; j < rec->nmoves; j++)
			if (rec->moves[j].move == (Move)(m & ~MOVE_PROMOTE)) return true;
	}
	return false;
}

/* Nodes as stored: the 8-bit code and its decoded value (rounded down). */
uint8_t bookdb_nodes_code(uint64_t nodes);
uint64_t bookdb_nodes_decode(uint8_t code);

#endif
