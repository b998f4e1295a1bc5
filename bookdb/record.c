/* bookdb/record.c — position packing and the record codec (layout: docs/bookdb.md). */
#include "bookdb/record.h"

#include <string.h>

#include "bookdb/bookdb.h"

/* ---- bit stream (bits are written from the most significant bit of each byte) ---- */

typedef struct {
	uint8_t *buf;
	size_t nbits; /* bits written (flushed and pending) */
	uint64_t acc; /* pending bits, the last written least significant */
	int have;     /* number of pending bits (< 8 between calls) */
} BitWriter;

/* Appends the n (0..24) low bits of value, most significant first. */
static inline void bw_put(BitWriter *w, unsigned value, int n)
{
	w->acc = (w->acc << n) | (value & ((1u << n) - 1));
	w->have += n;
	w->nbits += (size_t)n;
	while (w->have >= 8) {
		w->have -= 8;
		w->buf[(w->nbits - (size_t)w->have) / 8 - 1] = (uint8_t)(w->acc >> w->have);
	}
}

/* Writes the last partial byte, zero-padded. */
static inline void bw_flush(BitWriter *w)
{
	if (w->have) w->buf[w->nbits / 8] = (uint8_t)(w->acc << (8 - w->have));
	w->have = 0;
}

/* The n (1..8) bits at bit offset pos of b, most significant first. b must
 * hold 8 readable bytes from pos / 8 on (callers pad a copy with zeros). */
static inline unsigned bits_at(const uint8_t *b, size_t pos, int n)
{
	uint64_t w;
	memcpy(&w, b + (pos >> 3), 8);
	w = __builtin_bswap64(w);
	return (unsigned)((w << (pos & 7)) >> (64 - n));
}

/*
 * Huffman-style codes. On the board (after a leading 1 that says "not empty";
 * an empty square is a single 0):
 *   pawn 0 P C | lance 100 P C | knight 101 P C | silver 110 P C
 *   gold 1110 C | bishop 11110 P C | rook 11111 P C
 * (P = promoted, C = colour, 1 for White). In hand the same type prefixes are
 * used without P: a piece moved from the board to a hand never costs more bits
 * than it saved on the board, so a full set always fits 262 bits (33 bytes).
 */
static const struct {
	uint8_t code, len;
} TYPE_CODE[HAND_PT_NB] = {
    {0, 0},
    {0x0, 1} /* pawn */,
    {0x4, 3} /* lance */,
    {0x5, 3} /* knight */,
    {0x6, 3} /* silver */,
    {0x1e, 5} /* bishop */,
    {0x1f, 5} /* rook */,
    {0xe, 4} /* gold */,
};

/* Pieces of each unpromoted type in a set: SET_COUNT (shogi/position.h; the
 * kings, one a side, are checked on their own). */

/*
 * Decoding tables, generated from the codes above (index: the next 8 bits for
 * the board, the next 7 bits for a hand piece; entry: piece | code length << 8).
 */
static const uint16_t BOARD_DECODE[256] = {
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100,
    0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0100, 0x0401, 0x0401, 0x0401, 0x0401,
    0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401, 0x0401,
    0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411, 0x0411,
    0x0411, 0x0411, 0x0411, 0x0411, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409,
    0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0409, 0x0419, 0x0419, 0x0419, 0x0419,
    0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419, 0x0419,
    0x0602, 0x0602, 0x0602, 0x0602, 0x0612, 0x0612, 0x0612, 0x0612, 0x060a, 0x060a, 0x060a, 0x060a,
    0x061a, 0x061a, 0x061a, 0x061a, 0x0603, 0x0603, 0x0603, 0x0603, 0x0613, 0x0613, 0x0613, 0x0613,
    0x060b, 0x060b, 0x060b, 0x060b, 0x061b, 0x061b, 0x061b, 0x061b, 0x0604, 0x0604, 0x0604, 0x0604,
    0x0614, 0x0614, 0x0614, 0x0614, 0x060c, 0x060c, 0x060c, 0x060c, 0x061c, 0x061c, 0x061c, 0x061c,
    0x0607, 0x0607, 0x0607, 0x0607, 0x0617, 0x0617, 0x0617, 0x0617, 0x0805, 0x0815, 0x080d, 0x081d,
    0x0806, 0x0816, 0x080e, 0x081e};
static const uint16_t HAND_DECODE[128] = {
    0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201,
    0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201,
    0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0201, 0x0211, 0x0211, 0x0211, 0x0211,
    0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211,
    0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211, 0x0211,
    0x0211, 0x0211, 0x0211, 0x0211, 0x0402, 0x0402, 0x0402, 0x0402, 0x0402, 0x0402, 0x0402, 0x0402,
    0x0412, 0x0412, 0x0412, 0x0412, 0x0412, 0x0412, 0x0412, 0x0412, 0x0403, 0x0403, 0x0403, 0x0403,
    0x0403, 0x0403, 0x0403, 0x0403, 0x0413, 0x0413, 0x0413, 0x0413, 0x0413, 0x0413, 0x0413, 0x0413,
    0x0404, 0x0404, 0x0404, 0x0404, 0x0404, 0x0404, 0x0404, 0x0404, 0x0414, 0x0414, 0x0414, 0x0414,
    0x0414, 0x0414, 0x0414, 0x0414, 0x0507, 0x0507, 0x0507, 0x0507, 0x0517, 0x0517, 0x0517, 0x0517,
    0x0605, 0x0605, 0x0615, 0x0615, 0x0606, 0x0606, 0x0616, 0x0616};

int bookdb_pack_position(uint8_t *out, const Piece board[SQ_NB], const Hand hand[COLOR_NB],
                         Color side)
{
	int used[KING + 1] = {0};
	Square king[COLOR_NB] = {SQ_NONE, SQ_NONE};
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = board[sq];
		if (p == PIECE_NONE) continue;
		PieceType pt = piece_type(p);
		if (pt == PT_NONE || pt >= PT_NB || (p & ~0x1f) || pt_unpromote(pt) > KING ||
		    (pt == KING && king[piece_color(p)] != SQ_NONE))
			return BOOKDB_ECORRUPT;
		if (pt == KING) {
			king[piece_color(p)] = sq;
			continue;
		}
		if (++used[pt_unpromote(pt)] > SET_COUNT[pt_unpromote(pt)]) return BOOKDB_ECORRUPT;
	}
	int inhand = 0;
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++) {
			int n = hand_count(hand[c], (PieceType)pt);
			used[pt] += n;
			inhand += n;
			if (used[pt] > SET_COUNT[pt]) return BOOKDB_ECORRUPT;
		}
	BitWriter w = {out, 0, 0, 0};
	bw_put(&w, side == WHITE, 1);
	bw_put(&w, (unsigned)king[BLACK], 7);
	bw_put(&w, (unsigned)king[WHITE], 7);
	for (Square sq = 0; sq < SQ_NB; sq++) {
		Piece p = board[sq];
		if (sq == king[BLACK] || sq == king[WHITE]) continue;
		if (p == PIECE_NONE) {
			bw_put(&w, 0, 1);
			continue;
		}
		PieceType pt = piece_type(p), base = pt_unpromote(pt);
		/* "1", the type code, the promoted bit (not for gold), the colour: one put */
		unsigned code = 1u << TYPE_CODE[base].len | TYPE_CODE[base].code;
		int len = 1 + TYPE_CODE[base].len;
		if (base != GOLD) {
			code = code << 1 | (pt != base);
			len++;
		}
		bw_put(&w, code << 1 | piece_color(p), len + 1);
	}
	bw_put(&w, (unsigned)inhand, 6);
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++)
			for (int n = hand_count(hand[c], (PieceType)pt); n > 0; n--) {
				bw_put(&w, TYPE_CODE[pt].code, TYPE_CODE[pt].len);
				bw_put(&w, (unsigned)c, 1);
			}
	bw_flush(&w);
	return (int)((w.nbits + 7) / 8);
}

int bookdb_pack_checked(uint8_t *out, const Piece board[SQ_NB], const Hand hand[COLOR_NB],
                        Color side)
{
	int n = bookdb_pack_position(out, board, hand, side);
	Piece b[SQ_NB];
	Hand h[COLOR_NB];
	Color c;
	if (n > 0 && bookdb_unpack_position(b, h, &c, out, (size_t)n) != n) n = BOOKDB_ECORRUPT;
	return n > 0 ? n : BOOKDB_ECORRUPT;
}

int bookdb_unpack_position(Piece board[SQ_NB], Hand hand[COLOR_NB], Color *side, const uint8_t *in,
                           size_t len)
{
	if (len > BOOKDB_PACKED_MAX) len = BOOKDB_PACKED_MAX;
	/* A zero-padded copy: every read is one unaligned load, none branches on
	 * the end; reading past the packing shows as pos > nbits. */
	uint8_t b[BOOKDB_PACKED_MAX + 8] = {0};
	memcpy(b, in, len);
	size_t pos = 15, nbits = len * 8;
	*side = bits_at(b, 0, 1) ? WHITE : BLACK;
	Square king[COLOR_NB] = {(Square)bits_at(b, 1, 7), (Square)bits_at(b, 8, 7)};
	if (pos > nbits || king[BLACK] > SQ_NONE || king[WHITE] > SQ_NONE ||
	    (king[BLACK] == king[WHITE] && king[BLACK] != SQ_NONE))
		return BOOKDB_ECORRUPT;
	hand[BLACK] = hand[WHITE] = 0;
	/* The codes are read one after the other (each one's length says where
	 * the next starts), so the chain of reads is the cost. Each step takes a
	 * run of empty squares (one 0 bit each: the window's leading zeros) and
	 * the piece after it, and nothing branches on what a square holds. Step
	 * i counts the squares that are not a king's; sq skips the kings'. */
	memset(board, 0, SQ_NB * sizeof board[0]);
	Square k1 = king[BLACK] < king[WHITE] ? king[BLACK] : king[WHITE];
	Square k2 = king[BLACK] < king[WHITE] ? king[WHITE] : king[BLACK];
	int nsq = SQ_NB - (king[BLACK] != SQ_NONE) - (king[WHITE] != SQ_NONE);
	uint64_t counts = 0;
	for (int i = 0; i < nsq;) {
		if (pos > nbits) return BOOKDB_ECORRUPT;
		uint64_t w;
		memcpy(&w, b + (pos >> 3), 8);
		w = __builtin_bswap64(w) << (pos & 7); /* at least 57 bits of the packing */
		int z = w ? __builtin_clzll(w) : 64;
		/* Only the window's first 64 - (pos & 7) bits are the packing's
		 * (at least 57): the zeros shifted in below them say nothing. A
		 * run that reaches past them is not known to end the board (a
		 * piece 60 squares on was once taken for empty squares, in ply 290
		 * of a real 301-ply game: tests/bookdb/test_record.c). */
		if (z >= nsq - i && nsq - i <= 64 - (int)(pos & 7)) { /* empty to the last square */
			pos += (size_t)(nsq - i);
			break;
		}
		if (z > 49) {      /* a long run: the code after it is beyond the window */
			pos += 49; /* (only the window's first 57 bits are the packing's) */
			i += 49;
			continue;
		}
		i += z;
		unsigned e = BOARD_DECODE[(w << z) >> 56];
		pos += (size_t)z + (e >> 8);
		Square sq = (Square)(i + (i >= k1));
		sq = (Square)(sq + (sq >= k2));
		Piece p = (Piece)(e & 0xff);
		board[sq] = p;
		/* One byte a base type (PAWN..GOLD), off the chain of reads. */
		counts += 1ULL << (8 * pt_unpromote(piece_type(p)));
		i++;
	}
	if (pos > nbits) return BOOKDB_ECORRUPT;
	for (int c = 0; c < COLOR_NB; c++)
		if (king[c] != SQ_NONE) board[king[c]] = piece_make((Color)c, KING);
	int inhand = (int)bits_at(b, pos, 6), last = 0;
	pos += 6;
	for (int i = 0; i < inhand && pos <= nbits; i++) {
		unsigned e = HAND_DECODE[bits_at(b, pos, 7)];
		pos += e >> 8;
		PieceType pt = piece_type((Piece)e);
		Color c = piece_color((Piece)e);
		/* Hand pieces come in the encoder's order (Black first, PAWN..GOLD):
		 * any other order would be a second packing of the same position. */
		int order = c * 8 + pt;
		if (order < last) return BOOKDB_ECORRUPT;
		last = order;
		counts += 1ULL << (8 * pt);
		hand[c] = hand_add(hand[c], pt);
	}
	if (pos > nbits) return BOOKDB_ECORRUPT;
	/* No more of a kind than a set has (a byte cannot overflow: at most 79
	 * squares and 63 hand pieces are read). */
	for (PieceType pt = PAWN; pt < KING; pt++)
		if (((counts >> (8 * pt)) & 0xff) > SET_COUNT[pt]) return BOOKDB_ECORRUPT;
	/* Padding bits must be zero so that one position has exactly one packing. */
	if ((pos & 7) && bits_at(b, pos, 8 - (int)(pos & 7))) return BOOKDB_ECORRUPT;
	return (int)((pos + 7) / 8);
}

/* ---- varints ---- */

static int put_varint(uint8_t *out, size_t cap, size_t *pos, uint64_t v)
{
	do {
		if (*pos >= cap) return BOOKDB_EINVAL;
		uint8_t b = v & 0x7f;
		v >>= 7;
		out[(*pos)++] = (uint8_t)(b | (v ? 0x80 : 0));
	} while (v);
	return 0;
}

static int get_varint_long(uint64_t *v, const uint8_t *in, size_t len, size_t *pos, uint64_t max)
{
	uint64_t r = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*pos >= len) return BOOKDB_ECORRUPT;
		uint8_t b = in[(*pos)++];
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			/* Reject over-long forms (a trailing zero group) and out-of-range values.
			 */
			if (shift && b == 0) return BOOKDB_ECORRUPT;
			if (r > max) return BOOKDB_ECORRUPT;
			*v = r;
			return 0;
		}
	}
	return BOOKDB_ECORRUPT;
}

/* A varint at in[*pos] of at most max. Most are one byte (counts, small
 * deltas): those inline, the rest by get_varint_long. */
static inline int get_varint(uint64_t *v, const uint8_t *in, size_t len, size_t *pos, uint64_t max)
{
	if (*pos < len && in[*pos] < 0x80) {
		if (in[*pos] > max) return BOOKDB_ECORRUPT;
		*v = in[(*pos)++];
		return 0;
	}
	return get_varint_long(v, in, len, pos, max);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static int get_delta16(int16_t *out, int prev, const uint8_t *in, size_t len, size_t *pos)
{
	uint64_t z;
	int rc = get_varint(&z, in, len, pos, 0x3ffff);
	if (rc) return rc;
	int64_t v = prev + unzigzag(z);
	if (v < INT16_MIN || v > INT16_MAX) return BOOKDB_ECORRUPT;
	*out = (int16_t)v;
	return 0;
}

/* ---- nodes: 0, or 1 + 8 * e + m meaning (8 + m) * 2^e / 8, e <= 30 ---- */

uint8_t bookdb_nodes_code(uint64_t nodes)
{
	if (nodes == 0) return 0;
	int e = 63 - __builtin_clzll(nodes);
	if (e > 30) return 1 + 30 * 8 + 7;
	unsigned m = (unsigned)(((nodes << 3) >> e) & 7);
	return (uint8_t)(1 + e * 8 + m);
}

uint64_t bookdb_nodes_decode(uint8_t code)
{
	if (code == 0) return 0;
	unsigned e = (code - 1u) / 8, m = (code - 1u) % 8;
	return ((uint64_t)(8 + m) << e) >> 3;
}

/* Per-move flag byte bits beyond BOOKDB_MOVE_EVAL/STATS (encoding only). */
#define MF_DEPTH 0x04 /* a depth byte follows (else depth = think_depth) */
#define MF_NODES 0x08 /* a nodes byte follows (else the previous move's nodes code) */

/* Record flag bit of the encoding only (never in BookRecord.flags): with
 * MINIMAX, every move's value is coded against its own eval (against the
 * previous move's value when it has none) with its dist folded in, so that a
 * move valued by its own analysis (a leaf of the book: value = eval, dist 0)
 * takes one byte. Every record with MINIMAX is written so; a record without
 * it (written before it existed) is read in the older form. */
#define RF_VREL 0x20

/*
 * Record encoding (value of the `pos` database; docs/bookdb.md):
 *
 *   byte 0         record flags: bit 0 THOUGHT, bit 1 MINIMAX, bit 2 AVOID, bit 3 GAMES,
 *                  bit 4 PREFER, bit 5 VREL (set exactly when MINIMAX is), others 0
 *   varint         min_ply (1..65535)
 *   [1 byte]       think_depth, only when THOUGHT
 *   varint         nmoves (0..BOOKDB_MAX_MOVES)
 *   per move:
 *     2 bytes      move, little-endian (shogi/types.h Move)
 *     1 byte       bit 0 EVAL, bit 1 STATS, bit 2 DEPTH, bit 3 NODES,
 *                  bits 4-7 source id (0 unless EVAL; DEPTH/NODES only with EVAL)
 *     if EVAL:     zigzag varint (eval - previous eval in this record, starting at 0)
 *       if DEPTH:  1 byte depth; without DEPTH the depth is think_depth
 *       if NODES:  1 byte nodes code (bookdb_nodes_code); without NODES the code of
 *                  the previous move with EVAL (0 for the first)
 *     if STATS:    varints count, wins, draws, losses
 *     if MINIMAX:  varint (zigzag(value - ref) * 2 + (dist != 0)), then varint (dist - 1)
 *                  when dist != 0; ref is the move's eval when it has EVAL, else the
 *                  previous move's value (0 for the first). A record with MINIMAX
 *                  but not VREL (older builds) has instead zigzag varint (value -
 *                  previous value, starting at 0), varint dist: read, never written.
 *   if AVOID:      varint k (1..nmoves), then k varints: the indices of the avoided
 *                  moves, each minus the previous index plus one (the first as it is),
 *                  so strictly increasing and below nmoves
 *   if PREFER:     varint k (1..nmoves), then k pairs of varints: the index of a
 *                  preferred move coded as the avoided ones, and its window
 *                  (0..65535); no move both avoided and preferred
 *   33 bytes       packed position (bookdb_pack_position; fewer without a full set),
 *                  up to the end of the value
 *
 * The position comes last so that a lookup that already knows the position
 * (query, selection) can stop before it: bookdb_record_decode_moves. Varints are LEB128 (7 bits a
 * byte, low group first), minimal length. Evals are delta-coded and depth/nodes omitted when
 * repeated because a multi-PV search stores its moves best first with one depth and one node count:
 * 4 bytes a move. The decoder rejects unknown flag bits, over-long varints, out-of-range fields,
 * redundant depth/nodes bytes and trailing bytes, so a record has exactly one
 * encoding and a misread is impossible.
 */
/* Everything before the packed position; the length, or an error. */
static int encode_head(uint8_t *out, size_t cap, const BookRecord *rec)
{
	size_t pos = 0;
	int rc;
	if (rec->nmoves > BOOKDB_MAX_MOVES || rec->min_ply == 0 ||
	    (rec->flags & ~BOOKDB_REC_FLAGS_KNOWN) || cap < 2 + BOOKDB_PACKED_MAX + 4)
		return BOOKDB_EINVAL;
	uint8_t think = (rec->flags & BOOKDB_REC_THOUGHT) ? rec->think_depth : 0;
	int navoid = 0, nprefer = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		uint8_t f = rec->moves[i].flags;
		if ((f & BOOKDB_MOVE_AVOIDED) && (f & BOOKDB_MOVE_PREFERRED)) return BOOKDB_EINVAL;
		navoid += (f & BOOKDB_MOVE_AVOIDED) != 0;
		nprefer += (f & BOOKDB_MOVE_PREFERRED) != 0;
	}
	bool minimax = rec->flags & BOOKDB_REC_MINIMAX;
	out[pos++] = (uint8_t)((rec->flags & ~(BOOKDB_REC_AVOID | BOOKDB_REC_PREFER)) |
	                       (navoid ? BOOKDB_REC_AVOID : 0) | (nprefer ? BOOKDB_REC_PREFER : 0) |
	                       (minimax ? RF_VREL : 0));
	if ((rc = put_varint(out, cap, &pos, rec->min_ply))) return rc;
	if (rec->flags & BOOKDB_REC_THOUGHT) out[pos++] = think;
	if ((rc = put_varint(out, cap, &pos, rec->nmoves))) return rc;
	int prev_eval = 0, prev_value = 0;
	uint8_t prev_nodes = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		uint8_t mf = m->flags & (BOOKDB_MOVE_EVAL | BOOKDB_MOVE_STATS);
		uint8_t ncode = bookdb_nodes_code(m->nodes);
		if (mf & BOOKDB_MOVE_EVAL) {
			if (m->source > BOOKDB_SOURCE_MAX) return BOOKDB_EINVAL;
			mf |= (uint8_t)(m->source << 4);
			if (m->depth != think) mf |= MF_DEPTH;
			if (ncode != prev_nodes) mf |= MF_NODES;
		}
		if (cap - pos < 6) return BOOKDB_EINVAL;
		out[pos++] = (uint8_t)(m->move & 0xff);
		out[pos++] = (uint8_t)(m->move >> 8);
		out[pos++] = mf;
		if (mf & BOOKDB_MOVE_EVAL) {
			if ((rc = put_varint(out, cap, &pos, zigzag(m->eval - prev_eval))))
				return rc;
			prev_eval = m->eval;
			if (cap - pos < 2) return BOOKDB_EINVAL;
			if (mf & MF_DEPTH) out[pos++] = m->depth;
			if (mf & MF_NODES) out[pos++] = ncode;
			prev_nodes = ncode;
		}
		if (mf & BOOKDB_MOVE_STATS) {
			if ((rc = put_varint(out, cap, &pos, m->count)) ||
			    (rc = put_varint(out, cap, &pos, m->wins)) ||
			    (rc = put_varint(out, cap, &pos, m->draws)) ||
			    (rc = put_varint(out, cap, &pos, m->losses)))
				return rc;
		}
		if (minimax) {
			int ref = (mf & BOOKDB_MOVE_EVAL) ? m->eval : prev_value;
			if ((rc = put_varint(out, cap, &pos,
			                     zigzag(m->value - ref) << 1 | (m->dist != 0))) ||
			    (m->dist && (rc = put_varint(out, cap, &pos, m->dist - 1u))))
				return rc;
			prev_value = m->value;
		}
	}
	if (navoid) {
		if ((rc = put_varint(out, cap, &pos, (uint64_t)navoid))) return rc;
		for (int i = 0, prev = -1; i < rec->nmoves; i++) {
			if (!(rec->moves[i].flags & BOOKDB_MOVE_AVOIDED)) continue;
			if ((rc = put_varint(out, cap, &pos, (uint64_t)(i - prev - 1)))) return rc;
			prev = i;
		}
	}
	if (nprefer) {
		if ((rc = put_varint(out, cap, &pos, (uint64_t)nprefer))) return rc;
		for (int i = 0, prev = -1; i < rec->nmoves; i++) {
			if (!(rec->moves[i].flags & BOOKDB_MOVE_PREFERRED)) continue;
			if ((rc = put_varint(out, cap, &pos, (uint64_t)(i - prev - 1))) ||
			    (rc = put_varint(out, cap, &pos, rec->moves[i].prefer_window)))
				return rc;
			prev = i;
		}
	}
	if (cap - pos < BOOKDB_PACKED_MAX) return BOOKDB_EINVAL;
	return (int)pos;
}

int bookdb_record_encode(uint8_t *out, size_t cap, const BookRecord *rec)
{
	int pos = encode_head(out, cap, rec);
	if (pos < 0) return pos;
	int n = bookdb_pack_position(out + pos, rec->board, rec->hand, rec->side);
	if (n < 0) return n;
	return pos + n;
}

/* Decodes everything but the position; *end receives where the packing starts. */
/* The head of a record, up to its first move: flags, min_ply, think_depth
 * and nmoves; *pos is where the moves begin. */
static int decode_head(BookRecordHead *h, bool *vrel, const uint8_t *in, size_t len, size_t *pos)
{
	uint64_t v;
	int rc;
	*pos = 0;
	if (len < 1) return BOOKDB_ECORRUPT;
	h->flags = in[(*pos)++];
	if (h->flags & ~(BOOKDB_REC_FLAGS_KNOWN | RF_VREL)) return BOOKDB_ECORRUPT;
	if ((h->flags & RF_VREL) && !(h->flags & BOOKDB_REC_MINIMAX)) return BOOKDB_ECORRUPT;
	*vrel = h->flags & RF_VREL;
	h->flags &= (uint8_t)~RF_VREL;
	if ((rc = get_varint(&v, in, len, pos, UINT16_MAX))) return rc;
	if (v == 0) return BOOKDB_ECORRUPT;
	h->min_ply = (uint16_t)v;
	h->think_depth = 0;
	if (h->flags & BOOKDB_REC_THOUGHT) {
		if (*pos >= len) return BOOKDB_ECORRUPT;
		h->think_depth = in[(*pos)++];
	}
	if ((rc = get_varint(&v, in, len, pos, BOOKDB_MAX_MOVES))) return rc;
	h->nmoves = (uint16_t)v;
	return 0;
}

int bookdb_record_peek(BookRecordHead *h, const uint8_t *in, size_t len)
{
	size_t pos;
	bool vrel;
	return decode_head(h, &vrel, in, len, &pos);
}

static int decode_moves(BookRecord *rec, const uint8_t *in, size_t len, size_t *end)
{
	size_t pos;
	uint64_t v;
	BookRecordHead h;
	bool vrel;
	int rc = decode_head(&h, &vrel, in, len, &pos);
	if (rc) return rc;
	rec->flags = h.flags;
	rec->min_ply = h.min_ply;
	rec->think_depth = h.think_depth;
	rec->nmoves = h.nmoves;
	int prev_eval = 0, prev_value = 0;
	uint8_t prev_nodes = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		BookMove *m = &rec->moves[i];
		memset(m, 0, sizeof *m);
		if (len - pos < 3) return BOOKDB_ECORRUPT;
		m->move = (Move)(in[pos] | in[pos + 1] << 8);
		uint8_t mf = in[pos + 2];
		pos += 3;
		m->flags = mf & (BOOKDB_MOVE_EVAL | BOOKDB_MOVE_STATS);
		if (!(mf & BOOKDB_MOVE_EVAL) && (mf & 0xfc)) return BOOKDB_ECORRUPT;
		if (mf & BOOKDB_MOVE_EVAL) {
			m->source = mf >> 4;
			if ((rc = get_delta16(&m->eval, prev_eval, in, len, &pos))) return rc;
			prev_eval = m->eval;
			m->depth = rec->think_depth;
			if (mf & MF_DEPTH) {
				if (pos >= len || in[pos] == rec->think_depth)
					return BOOKDB_ECORRUPT;
				m->depth = in[pos++];
			}
			if (mf & MF_NODES) {
				/* Small counts have several codes; only the canonical one is valid.
				 */
				if (pos >= len || in[pos] == prev_nodes ||
				    in[pos] > 1 + 30 * 8 + 7 ||
				    bookdb_nodes_code(bookdb_nodes_decode(in[pos])) != in[pos])
					return BOOKDB_ECORRUPT;
				prev_nodes = in[pos++];
			}
			m->nodes = bookdb_nodes_decode(prev_nodes);
		}
		if (mf & BOOKDB_MOVE_STATS) {
			uint64_t s[4];
			for (int k = 0; k < 4; k++)
				if ((rc = get_varint(&s[k], in, len, &pos, UINT32_MAX))) return rc;
			m->count = (uint32_t)s[0];
			m->wins = (uint32_t)s[1];
			m->draws = (uint32_t)s[2];
			m->losses = (uint32_t)s[3];
		}
		if (vrel) {
			int ref = (mf & BOOKDB_MOVE_EVAL) ? m->eval : prev_value;
			if ((rc = get_varint(&v, in, len, &pos, 0x7ffff))) return rc;
			int64_t value = ref + unzigzag(v >> 1);
			if (value < INT16_MIN || value > INT16_MAX) return BOOKDB_ECORRUPT;
			m->value = (int16_t)value;
			m->dist = 0;
			if (v & 1) {
				if ((rc = get_varint(&v, in, len, &pos, UINT16_MAX - 1))) return rc;
				m->dist = (uint16_t)(v + 1);
			}
			prev_value = m->value;
		} else if (rec->flags & BOOKDB_REC_MINIMAX) {
			if ((rc = get_delta16(&m->value, prev_value, in, len, &pos))) return rc;
			prev_value = m->value;
			if ((rc = get_varint(&v, in, len, &pos, UINT16_MAX))) return rc;
			m->dist = (uint16_t)v;
		}
	}
	if (rec->flags & BOOKDB_REC_AVOID) {
		uint64_t k, gap;
		if ((rc = get_varint(&k, in, len, &pos, rec->nmoves))) return rc;
		if (k == 0) return BOOKDB_ECORRUPT;
		for (uint64_t j = 0, next = 0; j < k; j++) {
			if ((rc = get_varint(&gap, in, len, &pos, BOOKDB_MAX_MOVES))) return rc;
			next += gap;
			if (next >= rec->nmoves) return BOOKDB_ECORRUPT;
			rec->moves[next++].flags |= BOOKDB_MOVE_AVOIDED;
		}
	}
	if (rec->flags & BOOKDB_REC_PREFER) {
		uint64_t k, gap, win;
		if ((rc = get_varint(&k, in, len, &pos, rec->nmoves))) return rc;
		if (k == 0) return BOOKDB_ECORRUPT;
		for (uint64_t j = 0, next = 0; j < k; j++) {
			if ((rc = get_varint(&gap, in, len, &pos, BOOKDB_MAX_MOVES)) ||
			    (rc = get_varint(&win, in, len, &pos, UINT16_MAX)))
				return rc;
			next += gap;
			if (next >= rec->nmoves || (rec->moves[next].flags & BOOKDB_MOVE_AVOIDED))
				return BOOKDB_ECORRUPT;
			rec->moves[next].prefer_window = (uint16_t)win;
			rec->moves[next++].flags |= BOOKDB_MOVE_PREFERRED;
		}
	}
	*end = pos;
	return 0;
}

int bookdb_record_decode_moves(BookRecord *rec, const uint8_t *in, size_t len)
{
	size_t end;
	int rc = decode_moves(rec, in, len, &end);
	if (rc || !bookdb_record_has_promotion_pair(rec)) return rc;
	/* A declined promotion is told by the board (bookdb_move_declined). */
	int n = bookdb_unpack_position(rec->board, rec->hand, &rec->side, in + end, len - end);
	return n < 0 ? n : end + (size_t)n != len ? BOOKDB_ECORRUPT : 0;
}

int bookdb_record_decode(BookRecord *rec, const uint8_t *in, size_t len)
{
	size_t pos;
	int rc = decode_moves(rec, in, len, &pos);
	if (rc) return rc;
	int n = bookdb_unpack_position(rec->board, rec->hand, &rec->side, in + pos, len - pos);
	if (n < 0) return n;
	/* The packing runs to the end of the value: trailing bytes are corruption. */
	if (pos + (size_t)n != len) return BOOKDB_ECORRUPT;
	return 0;
}

void bookdb_record_init(BookRecord *rec, const Position *pos)
{
	memcpy(rec->board, pos->board, sizeof rec->board);
	rec->hand[BLACK] = pos->hand[BLACK];
	rec->hand[WHITE] = pos->hand[WHITE];
	rec->side = pos->side;
	rec->min_ply = (uint16_t)(pos->game_ply < 1       ? 1
	                          : pos->game_ply > 65535 ? 65535
	                                                  : pos->game_ply);
	rec->flags = 0;
	rec->think_depth = 0;
	rec->nmoves = 0;
}

int bookdb_record_position(Position *pos, const BookRecord *rec, char *err)
{
	return pos_set(pos, rec->board, rec->hand, rec->side, rec->min_ply, err);
}

int bookdb_record_decode_head(BookRecord *rec, const uint8_t *in, size_t len)
{
	size_t end;
	int rc = decode_moves(rec, in, len, &end);
	return rc ? rc : (int)end;
}

int bookdb_record_encode_packed(uint8_t *out, size_t cap, const BookRecord *rec,
                                const uint8_t *packed, size_t packed_len)
{
	if (packed_len > BOOKDB_PACKED_MAX) return BOOKDB_EINVAL;
	int pos = encode_head(out, cap, rec);
	if (pos < 0) return pos;
	memcpy(out + pos, packed, packed_len);
	return pos + (int)packed_len;
}

BookMove *bookdb_record_add_move(BookRecord *rec, Move move)
{
	if (rec->nmoves >= BOOKDB_MAX_MOVES) return NULL;
	BookMove *m = &rec->moves[rec->nmoves++];
	memset(m, 0, sizeof *m);
	m->move = move;
	if (rec->flags & BOOKDB_REC_MINIMAX) m->value = BOOKDB_NOVALUE;
	return m;
}
