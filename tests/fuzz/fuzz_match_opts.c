/*
 * tests/fuzz/fuzz_match_opts.c — libFuzzer target for the option strings of
 * `joseki match` (play/match_opts.c): a time control "BASE[+INC]" and an SPRT
 * "ELO0,ELO1[,ALPHA,BETA]". The input, NUL-terminated, goes to both parsers;
 * a string they take gives values in range, one they refuse gets a message
 * and leaves the output as it was.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "play/match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096) return 0;
	char *text = malloc(size + 1); /* exact size: ASan sees over-reads */
	if (!text) return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char err[MATCH_ERRLEN];

	TimeControl tc = {-1, -2, -3};
	err[0] = '\0';
	int rc = match_tc_parse(&tc, text, err);
	if (rc == 0) {
		if (tc.main_ms < 0 || tc.main_ms > MATCH_TIME_MAX_MS || tc.inc_ms < 0 ||
		    tc.inc_ms > MATCH_TIME_MAX_MS || tc.byoyomi_ms != -2)
			abort();
	} else if (rc != MATCH_EINVAL || !err[0] || tc.main_ms != -1 || tc.inc_ms != -3) {
		abort();
	}

	MatchSprt s = {7, 7, 7, 7};
	err[0] = '\0';
	rc = match_sprt_parse(&s, text, err);
	if (rc == 0) {
		if (!(s.elo0 < s.elo1) || fabs(s.elo0) > 1000 || fabs(s.elo1) > 1000 ||
		    !(s.alpha > 0 && s.beta > 0 && s.alpha + s.beta < 1))
			abort();
		double lo, hi;
		match_sprt_bounds(&s, &lo, &hi);
		if (!(lo < 0 && hi > 0) || !isfinite(lo) || !isfinite(hi)) abort();
	} else if (rc != MATCH_EINVAL || !err[0] || s.elo0 != 7 || s.alpha != 7) {
		abort();
	}
	free(text);
	return 0;
}
