/*
 * joseki gen-games DIR --games N [--seed S] [--plies P]
 *
 * Writes N floodgate-style CSA records (legal random games from the start
 * position with "'**" evaluation comments, ratings and a summary) into DIR,
 * 1000 games per file separated by "/" lines. The benchmark corpus for
 * ingest: generated, never downloaded. Deterministic for a given seed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shogi/csa_write.h"
#include "shogi/position.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

int cmd_gen_games(int argc, char **argv)
{
	const char *dir = NULL;
	uint64_t games = 0, plies = 150, seed = 1;
	const CliOpt opts[] = {
	    CLI_ARG("DIR", &dir, "where the files go (made if missing)"),
	    CLI_NUM("--games", &games, 0, LONG_MAX, "N", "games to write", .required = true),
	    CLI_NUM("--seed", &seed, 0, CLI_NOMAX, "S", "the random games' seed (default 1)"),
	    CLI_NUM("--plies", &plies, 60, 1000, "P", "plies a game at most (default 150)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"gen-games", opts, "docs/ingest.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		joseki_error("gen-games: cannot create %s: %s", dir, strerror(errno));
		return 1;
	}
	Position *pos = malloc(sizeof *pos);
	if (!pos) return 1;
	uint64_t rng = seed;
	FILE *f = NULL;
	for (long g = 0; g < (long)games; g++) {
		if (g % 1000 == 0) {
			if (f && fclose(f) != 0) goto io;
			char path[4096];
			snprintf(path, sizeof path, "%s/games-%06ld.csa", dir, g / 1000);
			f = fopen(path, "w");
			if (!f) goto io;
		} else {
			fputs("/\n", f);
		}
		csa_random_game_write(f, &rng, seed, g, (int)plies, pos);
	}
	if (f && fclose(f) != 0) goto io;
	free(pos);
	printf("gen-games: %llu games in %s\n", (unsigned long long)games, dir);
	return 0;
io:
	joseki_error("gen-games: writing %s: %s", dir, strerror(errno));
	free(pos);
	return 1;
}
