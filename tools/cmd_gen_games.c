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

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tools/commands.h"

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void write_game(FILE *f, uint64_t *rng, long id, int max_plies, Position *pos)
{
	pos_set_startpos(pos);
	fprintf(f, "V2\nN+gen_black_%ld\nN-gen_white_%ld\n'Max_Moves:256\n", id % 97, id % 89);
	fprintf(f, "$EVENT:wdoor+floodgate-300-10F+gen_black+gen_white+2026%02ld%02ld%06ld\n",
	        1 + id % 12, 1 + id % 28, id % 1000000);
	fprintf(f, "$START_TIME:2026/%02ld/%02ld 12:00:00\nPI\n+\n", 1 + id % 12, 1 + id % 28);
	fprintf(f, "'black_rate:gen_black+x:%ld\n'white_rate:gen_white+y:%ld.0\n",
	        2500 + (long)(rng_next(rng) % 1500), 2500 + (long)(rng_next(rng) % 1500));
	/* Opening variety with some shared lines: the first moves come from a
	 * small choice, later ones from all legal moves. */
	int plies = 60 + (int)(rng_next(rng) % (unsigned)(max_plies - 59));
	int eval = 0;
	Move moves[MOVEGEN_MAX];
	int played = 0;
	for (; played < plies; played++) {
		int n = movegen_legal(pos, moves);
		if (n == 0) break;
		int k = played < 8 ? (int)(rng_next(rng) % (unsigned)(n < 3 ? n : 3))
		                   : (int)(rng_next(rng) % (unsigned)n);
		char csa[CSA_MOVE_MAX];
		csa_move_write(pos, moves[k], csa);
		pos_do_move(pos, moves[k]);
		eval += (int)(rng_next(rng) % 61) - 30;
		fprintf(f, "%s\nT%d\n'** %d", csa, (int)(rng_next(rng) % 20), eval);
		/* a short PV in CSA notation */
		int m2 = movegen_legal(pos, moves);
		if (m2 > 0) {
			csa_move_write(pos, moves[rng_next(rng) % (unsigned)m2], csa);
			fprintf(f, " %s", csa);
		}
		fputc('\n', f);
		if (pos_repetition(pos) != REP_NONE) {
			played++;
			break;
		}
	}
	fprintf(f, "%%TORYO\n'summary:toryo:gen_black %s:gen_white %s\n",
	        played % 2 ? "win" : "lose", played % 2 ? "lose" : "win");
}

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
		write_game(f, &rng, g, (int)plies, pos);
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
