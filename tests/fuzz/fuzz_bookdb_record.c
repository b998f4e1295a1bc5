/*
 * tests/fuzz/fuzz_bookdb_record.c — libFuzzer target for the record decoder.
 *
 * Arbitrary bytes go to bookdb_record_decode and bookdb_record_decode_moves.
 * Either must return 0 or BOOKDB_ECORRUPT and never read out of bounds. A
 * record that decodes must re-encode to exactly the same bytes (one encoding
 * per record), its moves-only decoding must agree, and setting up its position
 * must either succeed or fail cleanly (any legality check may then run on it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static BookRecord rec, moves; /* large: not on the stack */
	static Position pos;
	static uint8_t buf[BOOKDB_RECORD_MAX];
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	/* An exact-size heap copy so that any over-read is caught by ASan. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	int rc = bookdb_record_decode(&rec, copy, size);
	int rm = bookdb_record_decode_moves(&moves, copy, size);
	if (rc != 0 && rc != BOOKDB_ECORRUPT) abort();
	if (rm != 0 && rm != BOOKDB_ECORRUPT) abort();
	if (rc == 0) {
		if (rm != 0 || moves.nmoves != rec.nmoves) abort();
		int n = bookdb_record_encode(buf, sizeof buf, &rec);
		if (n != (int)size || memcmp(buf, copy, size) != 0) abort();
		if (bookdb_record_position(&pos, &rec, NULL) == 0) {
			for (int i = 0; i < rec.nmoves; i++) (void)pos_is_legal(&pos, rec.moves[i].move);
		}
	}
	free(copy);
	return 0;
}
