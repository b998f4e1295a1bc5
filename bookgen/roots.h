/*
 * bookgen/roots.h — the positions `think` takes first, before its selector:
 * positions along game records (--from-kifu: ingest/replay.h walks the games,
 * roots_add_position collects), the positions just past the end of the book in
 * ingested games (--extend, Shiba's extension), and position lists (one spec a
 * line, as `select --roots` reads). Each list is a list of
 * position specs (SFEN strings, docs/shogi.md), in the order they are to be
 * thought.
 */
#ifndef BOOKGEN_ROOTS_H
#define BOOKGEN_ROOTS_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>

#include "bookdb/bookdb.h"
#include "shogi/position.h"

enum {
	ROOTS_OK = 0,
	ROOTS_ENOMEM = ERR_ROOTS - 0,
	ROOTS_EINPUT = ERR_ROOTS - 1, /* a file that cannot be read, or a bad position in it */
	ROOTS_EBOOK = ERR_ROOTS - 2,  /* the book could not be read */
};
const char *roots_strerror(int code);

#define ROOTS_ERRLEN 512

typedef struct {
	char **specs;    /* owned, each malloc'd */
	double *weights; /* each spec's share of the effort (bookgen/plan.h); 1 unless set */
	size_t n, cap, wcap;
} RootList;

/* Frees the specs and empties the list (which may be reused). */
void roots_free(RootList *r);

/* Appends a copy of spec. 0 or ROOTS_ENOMEM. */
JOSEKI_MUST_USE int roots_add(RootList *r, const char *spec);

/* Appends a copy of spec with its weight (> 0). 0 or ROOTS_ENOMEM. */
JOSEKI_MUST_USE int roots_add_weighted(RootList *r, const char *spec, double weight);

/* Appends pos as an SFEN (e.g. from ingest's replay_file_positions, which
 * walks game records for --from-kifu). 0 or ROOTS_ENOMEM. */
JOSEKI_MUST_USE int roots_add_position(RootList *r, const Position *pos);

/*
 * Appends one position spec a line of path (blank lines and # comments
 * skipped), each checked to parse. Returns 0, or ROOTS_EINPUT with err naming
 * the file and line, or ROOTS_ENOMEM.
 */
JOSEKI_MUST_USE int roots_from_lines(RootList *r, const char *path, char *err);

/*
 * Roots from the ingested games (the book's games database, whose entries
 * keep each game's moves): the positions games reached after `ply` plies from
 * their first position, the n reached by the most games (ties by SFEN), each
 * weighted by that number of games. Games shorter than that, and games kept
 * without their moves (books ingested before the moves were kept), are
 * counted in *short_games and *legacy_games (may be NULL). With paths (may be
 * NULL), also the way there: every position before `ply` of every game that
 * reaches one of the roots (its first position, usually the start position,
 * included), distinct, shallowest first, then by the games through it, each
 * weighted by them. Returns 0, or ROOTS_EBOOK (err says why) or ROOTS_ENOMEM;
 * an entry that does not decode is counted as legacy (check reports it).
 */
JOSEKI_MUST_USE int roots_from_games(RootList *r, BookDB *db, size_t n, int ply,
                                     size_t *short_games, size_t *legacy_games, RootList *paths,
                                     char *err);

/*
 * The way to roots given as move lists ("startpos moves 7g7f 3c3d", an SFEN
 * with moves): each root's positions before its last move, from its first
 * position on, appended to paths unless there already (by key), the
 * shallowest of all roots first. A root without moves adds nothing. Returns
 * 0, or ROOTS_EINPUT (a root that does not parse) or ROOTS_ENOMEM with err.
 */
JOSEKI_MUST_USE int roots_paths_of_specs(RootList *paths, const RootList *roots, char *err);

/*
 * Shiba's extension: appends the children, by a move played in ingested games,
 * of thought positions that are not thought themselves, most played first (ties
 * by SFEN, so the order is stable). Returns 0, or ROOTS_EBOOK (err says why) or
 * ROOTS_ENOMEM; a record that does not decode is skipped (check reports it).
 */
JOSEKI_MUST_USE int roots_from_extension(RootList *r, BookDB *db, char *err);

/*
 * The root queue kept in the book (joseki extend; think_run takes it first).
 * One entry a position in the `work` database: key "root" + the position's
 * 16-byte key (bookdb_key_bytes), value the 8-byte big-endian queue number
 * then the position's SFEN; the next number is meta "roots_seq" (8 bytes,
 * little-endian). Queuing a position twice keeps one entry (the first number).
 */
#define ROOTS_QUEUE_PREFIX "root"

/* Queues pos in the write transaction txn; *added (may be NULL) tells whether
 * it was new. 0 or a negative BOOKDB_* code (txn must then be aborted). */
JOSEKI_MUST_USE int roots_queue_add(BookTxn *txn, const Position *pos, bool *added);

/* Appends the queued positions that are not thought yet, in queue order.
 * Returns 0, or ROOTS_EBOOK / ROOTS_ENOMEM with err (ROOTS_ERRLEN) saying why. */
JOSEKI_MUST_USE int roots_queue_load(RootList *r, BookTxn *txn, char *err);

/* roots_queue_load in a read transaction of its own; on failure the list is
 * freed (emptied). 0, or ROOTS_EBOOK / ROOTS_ENOMEM with err saying why. */
JOSEKI_MUST_USE int roots_queue_read(RootList *r, BookDB *db, char *err);

/* Removes the queued positions that are thought (write transaction txn);
 * *left (may be NULL) gets how many stay queued. 0 or a negative BOOKDB_* code. */
JOSEKI_MUST_USE int roots_queue_drop_thought(BookTxn *txn, size_t *left);

#endif
