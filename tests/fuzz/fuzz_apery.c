/*
 * tests/fuzz/fuzz_apery.c — libFuzzer target for Apery books: the input's
 * 16-byte entries (the last partial one dropped) walked from the start
 * position (shogi/apery.h). The invariants: every position handed over
 * holds legal moves only, none twice, and the counts add up.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/apery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	size_t positions;
} Seen;

static int on_pos(void *ctx, const Position *pos, const AperyMove *moves, size_t n)
{
	Seen *s = ctx;
	s->positions++;
	if (!n) abort();
	for (size_t i = 0; i < n; i++) {
		if (!pos_is_legal(pos, moves[i].move)) abort();
		for (size_t k = 0; k < i; k++)
			if (moves[k].move == moves[i].move) abort();
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	size_t n = size / APERY_ENTRY_SIZE;
	AperyEntry *e = malloc((n ? n : 1) * sizeof *e);
	if (!e) return 0;
	for (size_t i = 0; i < n; i++) apery_entry_read(&e[i], data + i * APERY_ENTRY_SIZE);
	Seen s = {0};
	AperyWalkStats st;
	if (apery_walk(e, n, on_pos, NULL, &s, &st) == 0) {
		if (st.positions != s.positions || st.unreached > n || st.illegal > n) abort();
	}
	free(e);
	return 0;
}
