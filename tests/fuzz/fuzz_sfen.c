/*
 * tests/fuzz/fuzz_sfen.c — libFuzzer target for sfen_parse / sfen_write.
 *
 * The input (NUL-terminated copy) is parsed as an SFEN. A failure must be a
 * SHOGI_E* code with a non-empty, terminated message. A success must give a
 * consistent position whose written SFEN parses back to the same key and is
 * written identically; its legal moves must be legal, keep key_after equal
 * to the key after the move, and undo cleanly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(int rc, const char *err)
{
	if (rc != SHOGI_EPARSE && rc != SHOGI_EILLEGAL) abort();
	if (!memchr(err, '\0', SHOGI_ERRLEN) || err[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static Position pos, back; /* large: not on the stack */
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	if (size > 4096) return 0;
	char *copy = malloc(size + 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';

	char err[SHOGI_ERRLEN];
	memset(err, 'x', sizeof err);
	const char *rest = NULL;
	int rc_rest = sfen_parse(&pos, copy, &rest, err);
	if (rc_rest != 0) {
		check_error(rc_rest, err);
	} else if (!rest || rest < copy || rest > copy + size) {
		abort();
	}

	memset(err, 'x', sizeof err);
	int rc = sfen_parse(&pos, copy, NULL, err);
	if (rc != 0) {
		check_error(rc, err);
		free(copy);
		return 0;
	}
	if (rc_rest != 0) abort(); /* accepted whole but not with a rest pointer */
	if (!pos_is_ok(&pos)) abort();

	char a[SFEN_MAX], b[SFEN_MAX];
	size_t la = sfen_write(&pos, a, sizeof a);
	if (la != strlen(a) || la >= SFEN_MAX) abort();
	if (sfen_parse(&back, a, NULL, err) != 0) abort();
	sfen_write(&back, b, sizeof b);
	if (strcmp(a, b) != 0) abort();
	if (!key_equal(pos_key(&pos), pos_key(&back))) abort();

	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(&pos, moves);
	if (n < 0 || n > MOVEGEN_MAX || n != movegen_count(&pos)) abort();
	Key k0 = pos_key(&pos);
	/* SFENs where the side not to move is already in check are accepted (rules
	 * fixtures use them); there "gives check" and "in check after" differ. */
	Color them = color_flip(pos.side);
	bool them_in_check =
	    pos.king_sq[them] != SQ_NONE && pos_attacked(&pos, pos.side, pos.king_sq[them]);
	for (int i = 0; i < n; i++) {
		Move m = moves[i];
		if (!pos_is_legal(&pos, m)) abort();
		char usi[USI_MOVE_MAX], csa[CSA_MOVE_MAX];
		Move m2 = MOVE_NONE;
		size_t ul = usi_move_write(m, usi);
		if (usi_move_parse(&m2, usi, ul, NULL) != 0 || m2 != m) abort();
		size_t cl = csa_move_write(&pos, m, csa);
		if (csa_move_parse(&m2, &pos, csa, cl, NULL) != 0 || m2 != m) abort();
		Key after = pos_key_after(&pos, m);
		bool check = pos_gives_check(&pos, m);
		pos_do_move(&pos, m);
		if (!key_equal(after, pos_key(&pos))) abort();
		if (!them_in_check && check != pos_in_check(&pos)) abort();
		pos_undo_move(&pos);
		if (!key_equal(k0, pos_key(&pos))) abort();
	}
	(void)pos_repetition(&pos);
	(void)pos_declaration_ok(&pos);
	free(copy);
	return 0;
}
