/*
 * tests/fuzz/fuzz_usi_move.c — libFuzzer target for usi_move_parse and
 * usi_move_parse_legal. The first byte picks the position (start position or
 * a busy middlegame with pieces in both hands); the rest is the move text,
 * an exact-size heap copy without a terminator, so a read past `len` is
 * caught by AddressSanitizer. Invariants: a parsed move writes back to text
 * that parses to the same move; the legal parser accepts exactly the parsed
 * moves that pos_is_legal accepts; errors are SHOGI_E* with a message.
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
	int rc = usi_move_parse(&m, s, len, err);
	if (rc != 0) {
		if (rc != SHOGI_EPARSE && rc != SHOGI_EILLEGAL) abort();
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0') abort();
	} else {
		char w[USI_MOVE_MAX];
		size_t wl = usi_move_write(m, w);
		if (wl != strlen(w) || wl >= USI_MOVE_MAX) abort();
		Move m2 = MOVE_NONE;
		if (usi_move_parse(&m2, w, wl, NULL) != 0 || m2 != m) abort();
	}

	memset(err, 'x', sizeof err);
	Move ml = MOVE_NONE;
	int rcl = usi_move_parse_legal(&ml, pos, s, len, err);
	if (rcl == 0) {
		if (rc != 0 || ml != m || !pos_is_legal(pos, ml)) abort();
		Key k0 = pos_key(pos), after = pos_key_after(pos, ml);
		pos_do_move(pos, ml);
		if (!key_equal(after, pos_key(pos))) abort();
		pos_undo_move(pos);
		if (!key_equal(k0, pos_key(pos))) abort();
	} else {
		if (rcl != SHOGI_EPARSE && rcl != SHOGI_EILLEGAL) abort();
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0') abort();
		if (rc == 0 && pos_is_legal(pos, m)) abort(); /* a legal move was refused */
	}
	free(s);
	return 0;
}
