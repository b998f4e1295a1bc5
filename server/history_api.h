/*
 * server/history_api.h — GET /v1/work/history: the coordinator's time series
 * (cluster/coord_history.h) as JSON, read from the book in a read transaction
 * of its own, so it answers with or without --work and never waits for the
 * coordinator's service thread. It holds aggregate figures only (no worker
 * names, no positions but the root's line) and needs no token (docs/cluster.md,
 * "Watching a run").
 */
#ifndef SERVER_HISTORY_API_H
#define SERVER_HISTORY_API_H

#include "bookdb/bookdb.h"

#define API_HISTORY_HOURS_DEFAULT 24
#define API_HISTORY_HOURS_MAX 17520 /* two years: the coarsest tier's keep */

/* hours: the query's "hours" (NULL: the default; 0: everything kept). The
 * malloc'd body, *status 200, 400 for a bad hours, 500 when the book cannot
 * be read; NULL when out of memory. */
char *api_work_history(BookDB *db, const char *hours, int *status);

#endif
