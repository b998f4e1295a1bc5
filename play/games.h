/*
 * play/games.h — game files as the games the cycle learns from and as the
 * openings match and the cycle play from. Games in any format ingest reads
 * (ingest/replay.h: a file, a directory or an archive) become position specs
 * ("startpos moves ...", "sfen ... moves ...", shogi/spec.h); a cycle game
 * also carries the book side's colour and result (play/cycle.h's CycleGame),
 * the model match's own games are given in. Read by extend, prune, and
 * match and cycle --openings.
 */
#ifndef PLAY_GAMES_H
#define PLAY_GAMES_H

#include <stddef.h>

#include "play/cycle.h"
#include "play/match.h"
#include "shogi/errors.h"

typedef struct {
	CycleGame *games; /* the specs are malloc'd, freed by cycle_game_list_free */
	size_t n, cap;
	size_t skipped; /* games whose book side could not be told, or without a result */
	size_t no_side; /* of them, those whose book side could not be told */
} CycleGameList;

/*
 * Appends the games of path to g: a game file in any format ingest/kifu.h
 * reads (several games a file where the format allows), or a directory or
 * archive as ingest/walk.h walks them. The book side: book_side (BLACK/WHITE)
 * when >= 0, else the side whose player name (CSA N+/N-, KIF 先手/後手)
 * contains book_player (NULL: "+book", how match names a side playing from a
 * book); a game where neither or both do, or without a winner or a draw by
 * the rules (joseki replay), is skipped and counted. Returns 0; CYCLE_EINVAL
 * for a file that cannot be read, a malformed record or an impossible start
 * position, or CYCLE_ENOMEM, with "path:line: what" in err (CYCLE_ERRLEN
 * bytes). The games appended before a failure stay in g.
 */
JOSEKI_MUST_USE int cycle_game_list_read(CycleGameList *g, const char *path, int book_side,
                                         const char *book_player, char *err);
/* Frees the games and empties g. */
void cycle_game_list_free(CycleGameList *g);

/*
 * The openings of path (match and cycle --openings): each game of the file,
 * directory or archive becomes one position spec, its start and its moves: a
 * line of a USI list, a bare SFEN, or a whole KIF/CSA/JKF game. Returns the
 * number of openings (*out: malloc'd specs, free with match_openings_free),
 * or MATCH_EINVAL for a file that cannot be read, a malformed or illegal
 * game, a file without any game or with more than a million, or
 * MATCH_ENOMEM, with "path:line: what" in err (MATCH_ERRLEN bytes) and *out
 * NULL.
 */
JOSEKI_MUST_USE int match_openings_read(char ***out, const char *path, char *err);
void match_openings_free(char **openings, int n);

/*
 * How many of the n openings reach the position (board, hands, side to move)
 * an earlier one reaches: each plays the same games as that one (two move
 * orders of one opening, a line listed twice). *first and *second: the first
 * such pair (0-based, *first the earlier), -1 when there is none. -1 when
 * out of memory (nothing said); a spec that does not parse counts as none.
 */
int match_openings_repeated(const char *const *openings, int n, int *first, int *second);

#endif
