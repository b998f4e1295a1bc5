/*
 * tests/fuzz/fuzz_usi_games.c — libFuzzer target for USI game lists (ingest/usilist.c), read by the
 * one reader and replayed under the rules; the invariants are kifu_input.h's.
 */
#include "tests/fuzz/kifu_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_kifu(data, size, KIFU_USI);
}
