/* tools/cli_games.h — CSA game files as the cycle's games (play/cycle.h):
 * the glue between ingest's reader and replay (ingest/) and bookgen, which
 * does not read game records itself. Shared by extend and prune. */
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
 * Reads the CSA games of path (a file, several games a file allowed, or a
 * directory: its *.csa files in name order). The book side: book_side
 * (BLACK/WHITE) when >= 0, else the side whose player name (N+/N-) contains
 * book_player ("+book" by default: how match names a side playing from a
 * book); a game where neither or both do, or without a winner or a draw by
 * the rules (joseki replay), is skipped and counted. Returns 0, or -1 after
 * printing "joseki: CMD: path:line: what" for a file that cannot be read or a
 * malformed record.
 */
int cli_games_read(CliGames *g, const char *path, int book_side, const char *book_player,
                   const char *cmd);
void cli_games_free(CliGames *g);

#endif
