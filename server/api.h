/*
 * server/api.h — the read-only endpoints' answers, as JSON text (each ends in a
 * newline, as `joseki query --json` prints it): the HTTP layer (server.c) only
 * routes. Each function returns a malloc'd body, or NULL when out of memory,
 * and sets *status to the HTTP status.
 */
#ifndef SERVER_API_H
#define SERVER_API_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "bookdb/bookdb.h"
#include "bookdb/stats.h"

/* {"error": msg} */
char *api_error_body(const char *msg);

/* Whether s is a number in plain digits (no sign, space or leading zero) of
 * at most max; *out its value then. */
bool api_plain_number(const char *s, long max, long *out);
/* The compact JSON text of o and a newline (o released); NULL when out of
 * memory or when o is NULL. */
struct json_t;
char *api_json_body(struct json_t *o);

/*
 * The whole-book scan of /v1/stats (thought, moves, leaves, corrupt): made in
 * the background, at most once every API_STATS_SCAN_SECONDS, and kept; and
 * what the server knows of damage to the book, from that scan (a record that
 * is not sound, or the database damaged past a record) or from a request
 * that met it (docs/server.md, "A damaged book").
 */
#define API_STATS_SCAN_SECONDS 600
typedef struct {
	pthread_mutex_t mu;
	BookDB *db;
	atomic_bool stop; /* the server stops: a scan under way ends */
	bool running, done, have;
	pthread_t thread;
	BookStats scan;
	bool scan_cut; /* the last scan stopped at damage: its counts are partial */
	time_t computed_at;
	bool damaged;     /* the book is damaged: /healthz says "degraded" */
	char damage[256]; /* the first damage found */
} ApiStatsCache;
void api_stats_cache_init(ApiStatsCache *c);
/* Waits for a scan in progress. */
void api_stats_cache_free(ApiStatsCache *c);
/* Starts the scan now (in the background) unless one is under way. */
void api_stats_scan(BookDB *db, ApiStatsCache *c);
/* Notes damage to db (what: where it was met, and what it is): the first one
 * is kept and said on stderr, once. */
void api_book_damaged(ApiStatsCache *c, BookDB *db, const char *what);

/* GET /v1/query?sfen=...|position=...: the `joseki query --json` object
 * (bookdb_query_json). 400 for a missing or bad position (the rules core's
 * message), 500 when the book cannot be read (damage is noted in c).
 * plus: when the parameter's URL text had a '+' (HTTP's form encoding reads
 * it as a space, which sfen and position hold), its value with only its %XX
 * decoded; NULL otherwise. A '+' that can be read either way, giving two
 * positions, is refused (400), saying to write a promotion's as %2B. */
char *api_query(BookDB *db, ApiStatsCache *c, const char *sfen, const char *position,
                const char *plus, int *status);

/* GET /v1/line?position=...&plies=N (default 20, at most 512): the book's best
 * move each ply from the position, with its value, until the book has no move,
 * a position repeats, or N plies (damage is noted in c). */
char *api_line(BookDB *db, ApiStatsCache *c, const char *sfen, const char *position,
               const char *plus, const char *plies, int *status);

/* GET /v1/stats: the `joseki stats --json` object from the cheap fields and
 * the last scan (its fields null until the first ends; thought, moves and
 * leaves null, corrupt at least 1, when it stopped at damage), plus
 * "scan_computed_at" (unix time, or null). */
char *api_stats(BookDB *db, ApiStatsCache *c, int *status);

/* GET /healthz: 200 {"status": "ok", "positions": N} while the book reads;
 * 200 {"status": "degraded", "positions": N, "corrupt": K, "error": "..."}
 * once damage was found (c); 503 when the book does not read. */
char *api_health(BookDB *db, ApiStatsCache *c, int *status);

#endif
