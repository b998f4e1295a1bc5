/*
 * tests/fuzz/fuzz_csa_move.c — libFuzzer target for csa_move_parse. The
 * first byte picks the position (start position or a busy middlegame with
 * pieces in both hands); the rest is the move text, an exact-size heap copy
 * without a terminator. Invariants: an accepted move is legal and writes
 * back (csa_move_write) to text that parses to the same move; errors are
 * SHOGI_E* with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/fuzz/move_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Position *pos;
	size_t len;
	char *s = move_input(data, size, &pos, &len);
	if (!s) return 0;

	char err[SHOGI_ERRLEN];
	memset(err, 'x', sizeof err);
	Move m = MOVE_NONE;
	int rc = csa_move_parse(&m, pos, s, len, err);
	if (rc != 0) {
		if (rc != SHOGI_EPARSE && rc != SHOGI_EILLEGAL) abort();
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0') abort();
	} else {
		if (!pos_is_legal(pos, m)) abort();
		char w[CSA_MOVE_MAX];
		size_t wl = csa_move_write(pos, m, w);
		if (wl != 7 || strlen(w) != 7) abort();
		Move m2 = MOVE_NONE;
		if (csa_move_parse(&m2, pos, w, wl, NULL) != 0 || m2 != m) abort();
		char u[USI_MOVE_MAX];
		size_t ul = usi_move_write(m, u);
		if (usi_move_parse_legal(&m2, pos, u, ul, NULL) != 0 || m2 != m) abort();
	}
	free(s);
	return 0;
}
