/*
 * tests/fuzz/fuzz_bookdb_record.c — libFuzzer target for the record decoder.
 *
 * Bytes reach bookdb_record_decode and bookdb_record_decode_moves two ways:
 * as they are, and (first byte odd) as a valid record built from the input —
 * a position reached by moves the input picks, with fields taken from the
 * input — then damaged at offsets the input gives, so the fuzzer gets deep
 * into the format without a seed corpus. Decoding must return 0 or
 * BOOKDB_ECORRUPT and never read out of bounds; a record that decodes must
 * re-encode to exactly the same bytes (one encoding per record; a record
 * of the older minimax form, flag MINIMAX without bit 5, to the new form,
 * which decodes to the same record), its
 * moves-only decoding must agree, and its position must set up or fail cleanly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "shogi/movegen.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static BookRecord rec, moves; /* large: not on the stack */
static Position pos;
static uint8_t buf[BOOKDB_RECORD_MAX];

static void check(const uint8_t *in, size_t size)
{
	/* An exact-size heap copy so that any over-read is caught by ASan. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy) return;
	memcpy(copy, in, size);
	int rc = bookdb_record_decode(&rec, copy, size);
	int rm = bookdb_record_decode_moves(&moves, copy, size);
	if (rc != 0 && rc != BOOKDB_ECORRUPT) abort();
	if (rm != 0 && rm != BOOKDB_ECORRUPT) abort();
	if (rc == 0) {
		if (rm != 0 || moves.nmoves != rec.nmoves) abort();
		int n = bookdb_record_encode(buf, sizeof buf, &rec);
		if ((copy[0] & BOOKDB_REC_MINIMAX) && !(copy[0] & 0x20)) {
			static BookRecord again;
			if (n <= 0 || bookdb_record_decode(&again, buf, (size_t)n) != 0 ||
			    again.flags != rec.flags || again.nmoves != rec.nmoves ||
			    again.min_ply != rec.min_ply || again.think_depth != rec.think_depth ||
			    again.side != rec.side ||
			    memcmp(again.board, rec.board, sizeof rec.board) ||
			    memcmp(again.hand, rec.hand, sizeof rec.hand) ||
			    memcmp(again.moves, rec.moves, rec.nmoves * sizeof *rec.moves) != 0)
				abort();
		} else if (n != (int)size || memcmp(buf, copy, size) != 0) {
			abort();
		}
		if (bookdb_record_position(&pos, &rec, NULL) == 0)
			for (int i = 0; i < rec.nmoves; i++)
				(void)pos_is_legal(&pos, rec.moves[i].move);
	}
	free(copy);
}

/* Builds a valid encoded record from the input; returns its length or -1. */
static int build(const uint8_t *d, size_t n, uint8_t *out, size_t cap)
{
	Move legal[MOVEGEN_MAX];
	size_t i = 1;
	pos_set_startpos(&pos);
	int plies = n > 1 ? d[1] % 64 : 0;
	for (int p = 0; p < plies && i < n; p++, i++) {
		int k = movegen_legal(&pos, legal);
		if (k == 0) break;
		pos_do_move(&pos, legal[d[i] % k]);
	}
	bookdb_record_init(&rec, &pos);
	uint8_t f = i < n ? d[i++] : 0;
	rec.flags = f & BOOKDB_REC_FLAGS_KNOWN;
	rec.think_depth = (rec.flags & BOOKDB_REC_THOUGHT) ? (uint8_t)(f >> 2) : 0;
	int k = movegen_legal(&pos, legal);
	rec.nmoves = (uint16_t)(k < 12 ? k : 12);
	for (int m = 0; m < rec.nmoves; m++) {
		BookMove *bm = &rec.moves[m];
		uint8_t b[6] = {0};
		for (int j = 0; j < 6 && i < n; j++) b[j] = d[i++];
		memset(bm, 0, sizeof *bm);
		bm->move = legal[m];
		bm->flags = (uint8_t)((b[0] & 3) | (b[0] & 0x80 ? BOOKDB_MOVE_AVOIDED : 0));
		if (bm->flags & BOOKDB_MOVE_EVAL) {
			bm->source = (b[0] >> 2) & BOOKDB_SOURCE_MAX;
			bm->eval = (int16_t)(b[1] | b[2] << 8);
			bm->depth = b[0] & 0x40 ? rec.think_depth : b[3];
			bm->nodes = bookdb_nodes_decode(b[4] % 248);
		}
		if (bm->flags & BOOKDB_MOVE_STATS) {
			bm->count = b[3] * 1000u + b[5];
			bm->wins = b[5];
		}
		if (rec.flags & BOOKDB_REC_MINIMAX) {
			bm->value = (int16_t)(b[2] | b[5] << 8);
			bm->dist = b[4];
		}
	}
	int len = bookdb_record_encode(out, cap, &rec);
	if (len < 0) abort(); /* every field above is in range: encoding must work */
	/* Damage: each remaining pair of bytes is (offset, xor mask). */
	for (; i + 1 < n; i += 2) out[d[i] % len] ^= d[i + 1];
	/* An odd last byte truncates. */
	if (i < n) len = d[i] % (len + 1);
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static uint8_t built[BOOKDB_RECORD_MAX];
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size > 4096) return 0;
	if (size > 0 && (data[0] & 1)) {
		int len = build(data, size, built, sizeof built);
		check(built, (size_t)len);
	} else {
		check(data, size);
	}
	return 0;
}
