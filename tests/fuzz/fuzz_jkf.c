/*
 * tests/fuzz/fuzz_jkf.c — libFuzzer target for JKF records (ingest/jkf.c), read by the one reader
 * and replayed under the rules; the invariants are kifu_input.h's.
 */
#include "tests/fuzz/kifu_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_kifu(data, size, KIFU_JKF);
}
