/*
 * tests/fuzz/fuzz_csa.c — libFuzzer target for the CSA record reader
 * (ingest/csa.c) and the replay under the rules (ingest/replay.c); the
 * invariants are kifu_input.h's (errors name the input, moves are
 * well-formed tokens, a replay never makes more plies than the record has
 * moves, each move's written form reads back).
 */
#include "tests/fuzz/kifu_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_kifu(data, size, KIFU_CSA);
}
