/* tools/cli_games.c — CSA game files as the cycle's games (see cli_games.h). */
#include "tools/cli_games.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/grow.h"
#include "shogi/notation.h"
#include "tools/commands.h"

void cli_games_free(CliGames *g)
{
	for (size_t i = 0; i < g->n; i++) free((char *)g->games[i].spec);
	free(g->games);
	memset(g, 0, sizeof *g);
}

/* The game pos holds in its history as "sfen <start> moves ...", malloc'd;
 * pos is left at the start. */
static char *game_spec(Position *pos)
{
	int n = pos_history_len(pos);
	Move moves[POS_MAX_STATES];
	for (int i = 0; i < n; i++) moves[i] = pos->states[i + 1].move;
	for (int i = 0; i < n; i++) pos_undo_move(pos);
	size_t cap = SFEN_MAX + 16 + (size_t)n * USI_MOVE_MAX, len;
	char *s = malloc(cap);
	if (!s) return NULL;
	len = (size_t)snprintf(s, cap, "sfen ");
	len += sfen_write(pos, s + len, cap - len);
	if (n) len += (size_t)snprintf(s + len, cap - len, " moves");
	for (int i = 0; i < n; i++) {
		s[len++] = ' ';
		len += usi_move_write(moves[i], s + len);
	}
	s[len] = 0;
	return s;
}

static int read_file(CliGames *g, const char *path, int book_side, const char *player,
                     const char *cmd, Position *pos)
{
	KifuReader *rd = NULL;
	KifuRecord *rec = NULL;
	ReplayResult res;
	if (kifu_reader_open_file(&rd, path) < 0) {
		joseki_error("%s: cannot read '%s'", cmd, path);
		return -1;
	}
	int rc, ret = 0;
	while ((rc = kifu_reader_next(rd, &rec)) != 0) {
		if (rc < 0) {
			joseki_error("%s: %s", cmd, kifu_reader_error(rd));
			ret = -1;
			break;
		}
		int side = book_side;
		if (side < 0) {
			bool b = rec->name[BLACK] && strstr(rec->name[BLACK], player),
			     w = rec->name[WHITE] && strstr(rec->name[WHITE], player);
			side = b == w ? -1 : b ? BLACK : WHITE;
		}
		rc = replay_kifu(&res, pos, rec, NULL, NULL);
		int line = rec->first_line;
		kifu_record_free(rec);
		if (rc < 0) {
			joseki_error("%s: %s:%d: %s", cmd, path, line, res.error);
			ret = -1;
			break;
		}
		if (side < 0 || res.winner == GAME_WINNER_NONE) {
			g->skipped++;
			continue;
		}
		int result = res.winner == GAME_WINNER_DRAW                         ? 0
		             : (res.winner == GAME_WINNER_BLACK) == (side == BLACK) ? 1
		                                                                    : -1;
		char *spec = game_spec(pos);
		if (!spec ||
		    array_grow((void **)&g->games, &g->cap, g->n + 1, sizeof *g->games, 64)) {
			free(spec);
			joseki_error("out of memory");
			ret = -1;
			break;
		}
		g->games[g->n++] = (CycleGame){spec, side, result};
	}
	kifu_reader_free(rd);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_games_read(CliGames *g, const char *path, int book_side, const char *book_player,
                   const char *cmd)
{
	struct stat sb;
	Position *pos = malloc(sizeof *pos);
	int ret = 0;
	if (!pos) {
		joseki_error("out of memory");
		return -1;
	}
	if (!book_player) book_player = "+book";
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path);
		char **names = NULL;
		size_t n = 0, cap = 0;
		struct dirent *e;
		if (!d) {
			joseki_error("%s: cannot read '%s'", cmd, path);
			free(pos);
			return -1;
		}
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l <= 4 || strcmp(e->d_name + l - 4, ".csa")) continue;
			if (array_grow((void **)&names, &cap, n + 1, sizeof *names, 64) ||
			    !(names[n] = malloc(strlen(path) + l + 2))) {
				joseki_error("out of memory");
				ret = -1;
				break;
			}
			sprintf(names[n++], "%s/%s", path, e->d_name);
		}
		closedir(d);
		qsort(names, n, sizeof *names, cmp_names);
		for (size_t i = 0; i < n && !ret; i++)
			ret = read_file(g, names[i], book_side, book_player, cmd, pos);
		for (size_t i = 0; i < n; i++) free(names[i]);
		free(names);
	} else {
		ret = read_file(g, path, book_side, book_player, cmd, pos);
	}
	free(pos);
	return ret;
}
