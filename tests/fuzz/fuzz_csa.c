/*
 * tests/fuzz/fuzz_csa.c — libFuzzer target for the CSA record reader
 * (ingest/csa.c) and the replay under the rules (ingest/replay.c). The input
 * is an exact-size heap copy, so any read past its end is caught by
 * AddressSanitizer. Every record read is replayed; the invariants checked:
 * errors name the input, moves are well-formed tokens, a replay never makes
 * more plies than the record has moves.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/notation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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
	if (kifu_reader_open_mem_as(&r, copy, size, "fuzz", KIFU_CSA) != 0) {
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
		if (replay_kifu(&res, &pos, rec, NULL, NULL) == 0) {
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
