/*
 * joseki gen-games DIR --games N [--seed S] [--plies P]
 *
 * Writes N floodgate-style CSA records (legal random games from the start
 * position with "'**" evaluation comments, ratings and a summary) into DIR,
 * 1000 games per file separated by "/" lines. The benchmark corpus for
 * ingest: generated, never downloaded. Deterministic for a given seed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shogi/csa_write.h"
#include "shogi/position.h"
#include "tools/commands.h"

int cmd_gen_games(int argc, char **argv)
{
	const char *dir = NULL;
	long games = -1, plies = 150;
	uint64_t seed = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--games") && i + 1 < argc)
			games = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--plies") && i + 1 < argc)
			plies = strtol(argv[++i], NULL, 10);
		else if (!dir && argv[i][0] != '-')
			dir = argv[i];
		else {
			joseki_error("gen-games: unexpected '%s'\nusage: joseki gen-games DIR "
			             "--games N [--seed S] [--plies P]",
			             argv[i]);
			return 2;
		}
	}
	if (!dir || games < 0 || plies < 60 || plies > 1000) {
		joseki_error("usage: joseki gen-games DIR --games N [--seed S] [--plies P>=60]");
		return 2;
	}
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		joseki_error("gen-games: cannot create %s: %s", dir, strerror(errno));
		return 1;
	}
	Position *pos = malloc(sizeof *pos);
	if (!pos) return 1;
	uint64_t rng = seed;
	FILE *f = NULL;
	for (long g = 0; g < games; g++) {
		if (g % 1000 == 0) {
			if (f && fclose(f) != 0) goto io;
			char path[4096];
			snprintf(path, sizeof path, "%s/games-%06ld.csa", dir, g / 1000);
			f = fopen(path, "w");
			if (!f) goto io;
		} else {
			fputs("/\n", f);
		}
		csa_random_game_write(f, &rng, g, (int)plies, pos);
	}
	if (f && fclose(f) != 0) goto io;
	free(pos);
	printf("gen-games: %ld games in %s\n", games, dir);
	return 0;
io:
	joseki_error("gen-games: writing %s: %s", dir, strerror(errno));
	free(pos);
	return 1;
}
