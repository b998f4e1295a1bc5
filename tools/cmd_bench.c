/* joseki bench [--depth D] [--list]: fixed-depth search of the built-in bench
 * positions with the built-in engine; last stdout line
 * "bench nodes N time_ms T nps X" (N is deterministic for a given build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/engine.h"
#include "tools/commands.h"

int cmd_bench(int argc, char **argv)
{
	int depth = ENGINE_BENCH_DEPTH;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--depth") && i + 1 < argc) {
			char *end;
			long d = strtol(argv[++i], &end, 10);
			if (*end || d < 1 || d >= ENGINE_MAX_PLY) {
				joseki_error("bench: bad depth '%s' (1..%d)", argv[i],
				             ENGINE_MAX_PLY - 1);
				return 2;
			}
			depth = (int)d;
		} else if (!strcmp(argv[i], "--list")) {
			for (int j = 0; ENGINE_BENCH_POSITIONS[j]; j++)
				puts(ENGINE_BENCH_POSITIONS[j]);
			return 0;
		} else {
			joseki_error("bench: unexpected argument '%s'\nusage: joseki bench "
			             "[--depth D] [--list]",
			             argv[i]);
			return 2;
		}
	}
	int rc = engine_bench(stdout, stderr, depth);
	if (rc < 0) {
		joseki_error("bench: %s", engine_strerror(rc));
		return 1;
	}
	return 0;
}
