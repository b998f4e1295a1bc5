/*
 * tests/fuzz/fuzz_work_submit.c — libFuzzer target for the work API's body
 * parsers (server/work_parse.c): submit, acquire and abort bodies. The input
 * is an exact-size heap copy without a NUL; on success the parsed fields must
 * be within the limits the parser promises, on failure the message must end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/work_parse.h"
#include "shogi/position.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_submit(const ApiWorkBody *b)
{
	if (b->nresults > COORD_MAX_BATCH || (b->nresults && !b->results)) abort();
	for (size_t i = 0; i < b->nresults; i++) {
		const CoordResult *r = &b->results[i];
		if (r->failed ? r->nlines != 0 : (r->nlines < 1 || r->nlines > COORD_MAX_LINES))
			abort();
		for (int m = 0; m < r->nlines; m++) {
			const CoordLine *l = &r->lines[m];
			if (!memchr(l->move, 0, sizeof l->move) || !l->move[0]) abort();
			if (l->mate ? (l->score == 0 || l->score > 1000 || l->score < -1000)
			            : (l->score > 32000 || l->score < -32000))
				abort();
			if (l->depth < 0 || l->depth > 1000) abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		shogi_init();
		ready = 1;
	}
	char *copy = malloc(size ? size : 1), err[API_PARSE_ERRLEN];
	if (!copy) return 0;
	memcpy(copy, data, size);
	ApiWorkBody b;
	if (api_parse_submit(&b, copy, size, err) == 0) {
		check_submit(&b);
		if (!memchr(b.worker, 0, sizeof b.worker) || !b.worker[0]) abort();
		api_work_body_free(&b);
	} else if (!memchr(err, 0, sizeof err) || b.results) {
		abort();
	}
	if (api_parse_acquire(&b, copy, size, err) == 0 && (b.max < 1 || b.max > COORD_MAX_BATCH))
		abort();
	if (api_parse_abort(&b, copy, size, err) == 0 && b.results) abort();
	free(copy);
	return 0;
}
