/*
 * search/engine_bench.c — the bench positions, compiled in so `joseki bench`
 * works from any directory. A copy of the non-comment lines of
 * tests/data/positions/bench-v1.sfen, in order (frozen: the node count of the
 * bench is quoted when search changes). tests/search/test_usi_cmd.c checks
 * this list still equals the file (`joseki bench --list`).
 */
#include "shogi/clock.h"
#include "search/engine.h"

#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "shogi/notation.h"

const char *const ENGINE_BENCH_POSITIONS[] = {
    "startpos",
    "startpos moves 7g7f 3c3d",
    "startpos moves 2g2f 8c8d 2f2e 8d8e",
    "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c",
    "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
    "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1",
    "sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1",
    NULL,
};

int engine_bench(FILE *out, FILE *log, int depth)
{
	Engine *e;
	int rc = engine_new(&e, ENGINE_HASH_DEFAULT_MB);
	if (rc < 0) return rc;
	Position *pos = malloc(sizeof *pos);
	if (!pos) {
		engine_free(e);
		return ENGINE_ENOMEM;
	}
	uint64_t total = 0;
	int64_t t0 = clock_ms();
	int status = 0;
	for (int i = 0; ENGINE_BENCH_POSITIONS[i]; i++) {
		char err[SHOGI_ERRLEN];
		if (position_parse(pos, ENGINE_BENCH_POSITIONS[i], err) < 0) {
			fprintf(log, "bench: position %d: %s\n", i + 1, err);
			status = ENGINE_EINVAL;
			break;
		}
		EngineLimits lim = {.depth = depth, .multipv = 1, .clear_hash = true};
		EngineResult r;
		if ((rc = engine_search(e, &r, pos, &lim, NULL, NULL)) < 0) {
			fprintf(log, "bench: position %d: %s\n", i + 1, engine_strerror(rc));
			status = rc;
			break;
		}
		char mv[USI_MOVE_MAX] = "none";
		if (r.nlines) usi_move_write(r.bestmove, mv);
		fprintf(
		    log, "bench %d/%d: %s nodes %" PRIu64 " best %s value %d time_ms %" PRId64 "\n",
		    i + 1,
		    (int)(sizeof(ENGINE_BENCH_POSITIONS) / sizeof(ENGINE_BENCH_POSITIONS[0])) - 1,
		    ENGINE_BENCH_POSITIONS[i], r.nodes, mv, r.nlines ? r.lines[0].value : 0,
		    r.time_ms);
		total += r.nodes;
	}
	int64_t ms = clock_ms() - t0;
	engine_free(e);
	free(pos);
	if (status) return status;
	fprintf(out, "bench nodes %" PRIu64 " time_ms %" PRId64 " nps %" PRIu64 "\n", total, ms,
	        ms > 0 ? total * 1000 / (uint64_t)ms : total * 1000);
	fflush(out);
	return 0;
}
