/*
 * tests/fuzz/fuzz_position.c — libFuzzer target for position_parse on
 * arbitrary specs ("startpos moves …", "position sfen … moves …"). The input
 * is a NUL-terminated copy. Invariants: errors are SHOGI_E* with a message;
 * an accepted spec gives a consistent position whose SFEN re-parses to the
 * same key, and undoing every move returns a consistent root.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static Position pos, back;
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size > 65536) return 0;
	char *spec = malloc(size + 1);
	if (!spec) return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';

	char err[SHOGI_ERRLEN];
	memset(err, 'x', sizeof err);
	int rc = position_parse(&pos, spec, err);
	if (rc != 0) {
		if (rc != SHOGI_EPARSE && rc != SHOGI_EILLEGAL && rc != SHOGI_ETOOLONG) abort();
		if (!memchr(err, '\0', sizeof err) || err[0] == '\0') abort();
		free(spec);
		return 0;
	}
	if (!pos_is_ok(&pos)) abort();
	char a[SFEN_MAX];
	sfen_write(&pos, a, sizeof a);
	if (sfen_parse(&back, a, NULL, NULL) != 0) abort();
	if (!key_equal(pos_key(&pos), pos_key(&back))) abort();
	(void)pos_repetition(&pos);
	(void)pos_declaration_ok(&pos);
	(void)movegen_count(&pos);
	while (pos_history_len(&pos) > 0) pos_undo_move(&pos);
	if (!pos_is_ok(&pos)) abort();
	free(spec);
	return 0;
}
