/* play/games.c — game files as the cycle's games and match's openings
 * (see games.h). */
#include "play/games.h"

#include <stdlib.h>
#include <string.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

/* replay_file_games writes its message into the caller's buffer. */
_Static_assert(CYCLE_ERRLEN >= REPLAY_ERRLEN, "cycle_game_list_read passes err to replay");
_Static_assert(MATCH_ERRLEN >= REPLAY_ERRLEN, "match_openings_read passes err to replay");

void cycle_game_list_free(CycleGameList *g)
{
	for (size_t i = 0; i < g->n; i++) free((char *)g->games[i].spec);
	free(g->games);
	memset(g, 0, sizeof *g);
}

typedef struct {
	CycleGameList *g;
	int book_side;
	const char *player;
} GamesCtx;

static int take_game(void *ctx, const char *input, const KifuRecord *rec, int rc,
                     const ReplayResult *res, Position *pos, char *err)
{
	GamesCtx *c = ctx;
	/* A record damaged or cut short (rec->cut) is no game to learn from: named. */
	if (rc < 0 || rec->cut)
		return errmsg_set(err, REPLAY_ERRLEN, rc < 0 ? rc : KIFU_EPARSE,
		                  "%.300s:%d: %.180s", input,
		                  res->error_line ? res->error_line : rec->first_line, res->error);
	int side = c->book_side;
	if (side < 0) {
		bool b = rec->name[BLACK] && strstr(rec->name[BLACK], c->player),
		     w = rec->name[WHITE] && strstr(rec->name[WHITE], c->player);
		side = b == w ? -1 : b ? BLACK : WHITE;
	}
	if (side < 0 || res->winner == GAME_WINNER_NONE) {
		c->g->skipped++;
		c->g->no_side += side < 0;
		return 0;
	}
	int result = res->winner == GAME_WINNER_DRAW                         ? 0
	             : (res->winner == GAME_WINNER_BLACK) == (side == BLACK) ? 1
	                                                                     : -1;
	char *spec = position_spec_write(pos);
	CycleGameList *g = c->g;
	if (!spec || array_grow((void **)&g->games, &g->cap, g->n + 1, sizeof *g->games, 64)) {
		free(spec);
		return errmsg_set(err, REPLAY_ERRLEN, KIFU_ENOMEM, "out of memory");
	}
	g->games[g->n++] = (CycleGame){.spec = spec, .book_color = side, .result = result};
	return 0;
}

int cycle_game_list_read(CycleGameList *g, const char *path, int book_side, const char *book_player,
                         char *err)
{
	GamesCtx c = {g, book_side, book_player ? book_player : "+book"};
	int rc = replay_file_games(path, take_game, &c, NULL, err);
	if (rc == 0) return 0;
	return rc == KIFU_ENOMEM ? CYCLE_ENOMEM : CYCLE_EINVAL;
}

typedef struct {
	Key key;
	int index;
} OpeningKey;

static int opening_key_cmp(const void *a, const void *b)
{
	const OpeningKey *x = a, *y = b;
	int c = key_cmp(x->key, y->key);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

int match_openings_repeated(const char *const *openings, int n, int *first, int *second)
{
	*first = *second = -1;
	OpeningKey *k = n > 0 ? malloc((size_t)n * sizeof *k) : NULL;
	Position *pos = malloc(sizeof *pos);
	if ((n > 0 && !k) || !pos) {
		free(k), free(pos);
		return -1;
	}
	int m = 0;
	for (int i = 0; i < n; i++)
		if (position_parse(pos, openings[i], NULL) == 0)
			k[m++] = (OpeningKey){pos_key(pos), i};
	free(pos);
	qsort(k, (size_t)m, sizeof *k, opening_key_cmp);
	int repeated = 0;
	for (int i = 1, run = 0; i < m; i++) {
		/* run: where the keys equal to k[i]'s begin, its earliest opening. */
		if (!key_equal(k[i].key, k[i - 1].key)) {
			run = i;
			continue;
		}
		repeated++;
		/* The pair said is the one whose later opening comes first in the
		 * file. */
		if (*second < 0 || k[i].index < *second) {
			*first = k[run].index;
			*second = k[i].index;
		}
	}
	free(k);
	return repeated;
}

void match_openings_free(char **openings, int n)
{
	if (!openings) return;
	for (int i = 0; i < n; i++) free(openings[i]);
	free(openings);
}

typedef struct {
	char **list;
	size_t n, cap;
} Openings;

static int take_opening(void *ctx, const char *input, const KifuRecord *rec, int rc,
                        const ReplayResult *res, Position *pos, char *err)
{
	Openings *o = ctx;
	if (rc < 0 || res->error[0])
		return errmsg_set(err, REPLAY_ERRLEN, KIFU_EPARSE, "%.300s:%d: %.180s", input,
		                  res->error_line ? res->error_line : rec->first_line, res->error);
	char *spec = position_spec_write(pos);
	if (!spec || array_grow((void **)&o->list, &o->cap, o->n + 1, sizeof *o->list, 16)) {
		free(spec);
		return errmsg_set(err, REPLAY_ERRLEN, KIFU_ENOMEM, "out of memory");
	}
	o->list[o->n++] = spec;
	return 0;
}

int match_openings_read(char ***out, const char *path, char *err)
{
	*out = NULL;
	Openings o = {0};
	int rc = replay_file_games(path, take_opening, &o, NULL, err);
	if (rc != 0)
		rc = rc == KIFU_ENOMEM ? MATCH_ENOMEM : MATCH_EINVAL;
	else if (o.n == 0)
		rc = errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "%s: no position in the file",
		                path);
	else if (o.n > 1000000)
		rc = errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL, "%s: more than a million openings",
		                path);
	if (rc != 0) {
		match_openings_free(o.list, (int)o.n);
		return rc;
	}
	*out = o.list;
	return (int)o.n;
}
