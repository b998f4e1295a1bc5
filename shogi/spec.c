/* shogi/spec.c — writing a USI position spec (spec.h). */
#include "shogi/spec.h"

#include <string.h>

/* Appends text to out (cap bytes) at *len, cutting it to fit; *len grows by
 * the whole text's length. */
static void put(char *out, size_t cap, size_t *len, const char *text, size_t n)
{
	if (*len < cap) {
		size_t room = cap - *len - 1;
		memcpy(out + *len, text, n < room ? n : room);
		out[*len + (n < room ? n : room)] = 0;
	}
	*len += n;
}

size_t position_spec_format(char *out, size_t cap, const char *root_sfen, const Move *moves, int n)
{
	size_t len = 0;
	if (cap) out[0] = 0;
	if (!strcmp(root_sfen, SFEN_STARTPOS)) {
		put(out, cap, &len, "startpos", 8);
	} else {
		put(out, cap, &len, "sfen ", 5);
		put(out, cap, &len, root_sfen, strlen(root_sfen));
	}
	if (n > 0) put(out, cap, &len, " moves", 6);
	for (int i = 0; i < n; i++) {
		char mv[USI_MOVE_MAX + 1];
		mv[0] = ' ';
		put(out, cap, &len, mv, 1 + usi_move_write(moves[i], mv + 1));
	}
	return len;
}

size_t position_spec_of_game(char *out, size_t cap, Position *pos)
{
	int n = pos_history_len(pos);
	Move moves[POS_MAX_STATES];
	for (int i = 0; i < n; i++) moves[i] = pos->states[i + 1].move;
	for (int i = 0; i < n; i++) pos_undo_move(pos);
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	for (int i = 0; i < n; i++) pos_do_move(pos, moves[i]);
	return position_spec_format(out, cap, sfen, moves, n);
}
