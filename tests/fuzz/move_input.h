/*
 * tests/fuzz/move_input.h — what the move-parser targets (fuzz_csa_move,
 * fuzz_usi_move) share: the first input byte picks the position (the start
 * position, or a busy middlegame with pieces in both hands); the rest is the
 * move text, as an exact-size heap copy without a terminator, so a read past
 * its length is caught by AddressSanitizer.
 */
#ifndef TESTS_FUZZ_MOVE_INPUT_H
#define TESTS_FUZZ_MOVE_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/notation.h"
#include "shogi/position.h"

#define MIDDLEGAME "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"

/* The text to parse (the caller frees it) and *pos; NULL for an empty input. */
static inline char *move_input(const uint8_t *data, size_t size, Position **pos, size_t *len)
{
	static int ready;
	static Position start, middle;
	if (!ready) {
		shogi_init();
		pos_set_startpos(&start);
		if (sfen_parse(&middle, MIDDLEGAME, NULL, NULL) != 0) abort();
		ready = 1;
	}
	if (size < 1) return NULL;
	*pos = (data[0] & 1) ? &middle : &start;
	*len = size - 1;
	char *s = malloc(*len ? *len : 1);
	if (s) memcpy(s, data + 1, *len);
	return s;
}

#endif
