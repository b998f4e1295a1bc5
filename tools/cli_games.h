/* tools/cli_games.h — game files as the cycle's games (play/cycle.h) and as
 * match's openings: the glue between ingest's reader and replay (ingest/) and
 * play/, which does not read game records itself. Shared by extend, prune,
 * match --openings and cycle --openings. */
#ifndef TOOLS_CLI_GAMES_H
#define TOOLS_CLI_GAMES_H

#include <stddef.h>

#include "play/cycle.h"

typedef struct {
	CycleGame *games;
	size_t n, cap;
	size_t skipped; /* games whose book side could not be told, or without a result */
} CliGames;

/*
 * Reads the games of path: a game file in any format ingest/kifu.h reads
 * (several games a file where the format allows), or a directory or archive
 * as ingest/walk.h walks them. The book side: book_side (BLACK/WHITE) when
 * >= 0, else the side whose player name (CSA N+/N-, KIF 先手/後手) contains
 * book_player ("+book" by default: how match names a side playing from a
 * book); a game where neither or both do, or without a winner or a draw by
 * the rules (joseki replay), is skipped and counted. Returns 0, or -1 after
 * printing "joseki: CMD: path:line: what" for a file that cannot be read, a
 * malformed record or an impossible start position.
 */
int cli_games_read(CliGames *g, const char *path, int book_side, const char *book_player,
                   const char *cmd);
void cli_games_free(CliGames *g);

/*
 * The openings of path (match and cycle --openings): each game of the file,
 * directory or archive becomes one position spec, its start and its moves
 * ("startpos moves 7g7f", "sfen ... moves ..."): a line of a USI list, a
 * bare SFEN, or a whole KIF/CSA/JKF game. Returns the number of openings
 * (*out: malloc'd specs, free with cli_openings_free), or -1 after printing
 * "joseki: CMD: path:line: what" for a file that cannot be read, a malformed
 * or illegal game, or a file without any game.
 */
int cli_openings_read(char ***out, const char *path, const char *cmd);
void cli_openings_free(char **openings, int n);

#endif
