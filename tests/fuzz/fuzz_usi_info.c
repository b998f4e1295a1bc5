/*
 * tests/fuzz/fuzz_usi_info.c — libFuzzer target for the USI info-line parser
 * (search/usi_info.c). The input is handed over as is, without a NUL, so any
 * read past len is caught by AddressSanitizer; on success the parsed fields
 * must be self-consistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "search/usi_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char err[USI_INFO_ERRLEN];
	UsiInfo info;
	char *copy;

	if (!ready) {
		shogi_init();
		ready = 1;
	}
	/* An exact-size heap copy: the byte after the input is out of bounds. */
	copy = malloc(size ? size : 1);
	if (!copy) return 0;
	memcpy(copy, data, size);
	if (usi_info_parse(&info, copy, size, err) == 0) {
		if (info.pv_len < 0 || info.pv_len > USI_INFO_PV_MAX || info.multipv < 1) abort();
		if (info.string &&
		    (info.string < copy || info.string + info.string_len > copy + size))
			abort();
		if ((info.fields & USI_INFO_SCORE) &&
		    (info.value > VALUE_MATE || info.value < -VALUE_MATE))
			abort();
		if ((info.fields & USI_INFO_SCORE) && !info.mate &&
		    (info.value >= VALUE_MATE_IN_MAX || info.value <= -VALUE_MATE_IN_MAX))
			abort();
		(void)usi_info_is_final(&info);
	} else if (memchr(err, '\0', sizeof err) == NULL) {
		abort();
	}
	free(copy);
	return 0;
}
