/* joseki bench [--depth D] [--list]: fixed-depth search of the built-in bench
 * positions with the built-in engine; last stdout line
 * "bench nodes N time_ms T nps X" (N is deterministic for a given build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/engine.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

int cmd_bench(int argc, char **argv)
{
	int depth = ENGINE_BENCH_DEPTH;
	bool list = false;
	const CliOpt opts[] = {
	    CLI_NUM("--depth", &depth, 1, ENGINE_MAX_PLY - 1, "D", "the search depth (default 12)"),
	    CLI_FLAG("--list", &list, "print the positions instead"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"bench", opts, "docs/search.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (list) {
		for (int j = 0; ENGINE_BENCH_POSITIONS[j]; j++) puts(ENGINE_BENCH_POSITIONS[j]);
		return 0;
	}
	int rc = engine_bench(stdout, stderr, depth);
	if (rc < 0) {
		joseki_error("bench: %s", engine_strerror(rc));
		return 1;
	}
	return 0;
}
