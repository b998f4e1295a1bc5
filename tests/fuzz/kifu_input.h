/*
 * tests/fuzz/kifu_input.h — what the game-record fuzz targets share: the
 * input read as one format by the one reader (ingest/kifu.h) and every
 * record replayed. The input is an exact-size heap copy, so any read past
 * its end is caught by AddressSanitizer. The invariants checked: errors name
 * the input; moves are well-formed CSA tokens; a move the reader resolved is
 * legal where the replay meets it, and its written Japanese form reads back
 * as itself (shogi/japanese.h); a replay never makes more plies than the
 * record has moves.
 */
#ifndef TESTS_FUZZ_KIFU_INPUT_H
#define TESTS_FUZZ_KIFU_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/japanese.h"
#include "shogi/notation.h"

static int fuzz_check_move(void *ctx, const Position *before, Move m, size_t index)
{
	const KifuRecord *rec = ctx;
	if (!pos_is_legal(before, m)) abort();
	if (rec->moves[index].move != MOVE_NONE && rec->moves[index].move != m) abort();
	char text[JA_MOVE_MAX], err[SHOGI_ERRLEN];
	Square prev = pos_history_len(before) ? move_to(pos_st(before)->move) : SQ_NONE;
	ja_move_write(before, m, prev, true, NULL, 0, text);
	Move back;
	if (ja_move_parse(&back, before, prev, text, strlen(text), err) != 0 || back != m) abort();
	return 0;
}

static int fuzz_kifu(const uint8_t *data, size_t size, KifuFormat format)
{
	static int ready;
	static Position pos; /* large: not on the stack */
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	unsigned char *copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	KifuReader *r;
	if (kifu_reader_open_mem_as(&r, copy, size, "fuzz", format) != 0) {
		free(copy);
		return 0;
	}
	for (;;) {
		KifuRecord *rec;
		int rc = kifu_reader_next(r, &rec);
		if (rc == 0) break;
		if (rc == KIFU_EPARSE) {
			if (strncmp(kifu_reader_error(r), "fuzz:", 5) != 0) abort();
			continue;
		}
		if (rc < 0) break;
		for (size_t i = 0; i < rec->nmoves; i++)
			if (strlen(rec->moves[i].token) != 7) abort();
		ReplayResult res;
		if (replay_kifu(&res, &pos, rec, fuzz_check_move, rec) == 0) {
			if (res.plies < 0 || (size_t)res.plies > rec->nmoves) abort();
			char sfen[SFEN_MAX];
			sfen_write(&pos, sfen, sizeof sfen);
		}
		kifu_record_free(rec);
	}
	kifu_reader_free(r);
	free(copy);
	return 0;
}

#endif
