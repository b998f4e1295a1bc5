/*
 * server/api.h — the read-only endpoints' answers, as JSON text (each ends in a
 * newline, as `joseki query --json` prints it): the HTTP layer (server.c) only
 * routes. Each function returns a malloc'd body, or NULL when out of memory,
 * and sets *status to the HTTP status.
 */
#ifndef SERVER_API_H
#define SERVER_API_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "bookdb/bookdb.h"
#include "bookdb/stats.h"

/* {"error": msg} */
char *api_error_body(const char *msg);
/* The compact JSON text of o and a newline (o released); NULL when out of
 * memory or when o is NULL. */
struct json_t;
char *api_json_body(struct json_t *o);

/* GET /v1/query?sfen=...|position=...: the `joseki query --json` object
 * (bookdb_query_json). 400 for a missing or bad position (the rules core's
 * message), 500 when the book cannot be read. */
char *api_query(BookDB *db, const char *sfen, const char *position, int *status);

/* GET /v1/line?position=...&plies=N (default 20, at most 512): the book's best
 * move each ply from the position, with its value, until the book has no move,
 * a position repeats, or N plies. */
char *api_line(BookDB *db, const char *sfen, const char *position, const char *plies, int *status);

/* The whole-book scan of /v1/stats (thought, moves, leaves, corrupt): made in
 * the background, at most once every API_STATS_SCAN_SECONDS, and kept. */
#define API_STATS_SCAN_SECONDS 600
typedef struct {
	pthread_mutex_t mu;
	BookDB *db;
	bool running, done, have;
	pthread_t thread;
	BookStats scan;
	time_t computed_at;
} ApiStatsCache;
void api_stats_cache_init(ApiStatsCache *c);
/* Waits for a scan in progress. */
void api_stats_cache_free(ApiStatsCache *c);

/* GET /v1/stats: the `joseki stats --json` object from the cheap fields and
 * the last scan (its fields null until the first ends), plus
 * "scan_computed_at" (unix time, or null). */
char *api_stats(BookDB *db, ApiStatsCache *c, int *status);

/* GET /healthz: 200 {"status": "ok", "positions": N} while the book reads. */
char *api_health(BookDB *db, int *status);

#endif
