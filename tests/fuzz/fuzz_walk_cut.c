/*
 * tests/fuzz/fuzz_walk_cut.c — libFuzzer target for the cutter of inputs
 * into parts (ingest/walk_cut.c, walk.h), which every byte of every input
 * meets before a reader does. The first byte seeds the sizes of the reads
 * (1..256 bytes each) the rest is fed in, as a stream would; a NUL byte is
 * the only way for these short inputs to meet a limit. The invariants: the
 * parts, in order, are the input (up to the line of the error, when there is
 * one, and only when the input holds a NUL byte or starts as a YaneuraOu
 * book does); each part's first line is
 * the line the readers count there (LF, CR LF, CR); the format is the sniff's
 * of the whole input (shorter than a part); the error names a line at or
 * after the last part's.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Line ends in s[0..n) of s[0..len) as the readers count them. */
static uint64_t line_ends(const uint8_t *s, size_t n, size_t len)
{
	uint64_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == len || s[i + 1] != '\n'))) k++;
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) return 0;
	uint64_t seed = data[0] * 0x9e3779b97f4a7c15ULL + 1;
	const uint8_t *in = data + 1;
	size_t len = size - 1;
	uint8_t *buf = malloc(len + 1);
	if (!buf) return 0;
	WalkCut c;
	walk_cut_init(&c, "fuzz");
	size_t have = 0, at = 0, done = 0; /* bytes fed; bytes handed on as parts */
	int last_line = 1;
	bool failed = false;
	for (;;) {
		size_t n;
		int r = walk_cut_next(&c, (const char *)buf, have, at == len, &n);
		if (r == WALK_CUT_END) break;
		if (r == WALK_CUT_ERROR) {
			failed = true;
			break;
		}
		if (r == WALK_CUT_PART) {
			if (n == 0 || n > have || memcmp(buf, in + done, n)) abort();
			if ((uint64_t)c.part_line != 1 + line_ends(in, done, len)) abort();
			if (c.format != (int)kifu_sniff(in, len, "fuzz")) abort();
			last_line = c.part_line;
			memmove(buf, buf + n, have - n);
			have -= n;
			done += n;
			continue;
		}
		if (r != WALK_CUT_MORE || at == len) abort();
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t step = 1 + (seed >> 33) % 256;
		if (step > len - at) step = len - at;
		memcpy(buf + have, in + at, step);
		have += step;
		at += step;
	}
	bool nul = memchr(in, 0, len) != NULL;
	/* A YaneuraOu book's header (after a BOM) refuses the input at once. */
	size_t bom = len >= 3 && !memcmp(in, "\xEF\xBB\xBF", 3) ? 3 : 0;
	bool yo = len - bom >= 13 && !memcmp(in + bom, "#YANEURAOU-DB", 13);
	if (failed != (nul || yo)) abort();
	if (!failed && done != len) abort();
	if (failed && (c.err_line < (uint64_t)last_line || !c.err[0] || memchr(in, 0, done)))
		abort();
	free(buf);
	return 0;
}
