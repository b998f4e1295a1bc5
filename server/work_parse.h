/*
 * server/work_parse.h — the work API's request bodies (docs/cluster.md),
 * JSON to cluster/coord.h structures. Shape and types only: whether a key is
 * in the lease and a move legal in its position is the coordinator's check.
 * Every function returns 0, or -1 with a message naming the field in err
 * (API_PARSE_ERRLEN bytes); a body that fails leaves nothing to free.
 */
#ifndef SERVER_WORK_PARSE_H
#define SERVER_WORK_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/coord.h"
#include "shogi/errors.h"

#define API_PARSE_ERRLEN 256

typedef struct {
	char worker[COORD_NAME_MAX + 1];
	char instance[COORD_INSTANCE_MAX + 1];
	char engine[COORD_ENGINE_MAX + 1];
	uint64_t nps;
	int max;              /* acquire only */
	bool leaving;         /* heartbeat only: the worker stops now */
	CoordResult *results; /* submit only: malloc'd */
	size_t nresults;
} ApiWorkBody;

/* Every body may name the worker process ("instance": 1..32 letters or
 * digits); "worker" and "engine" are printable text (no control characters).
 * {"worker": "name", "max": N, "engine": "...", "nps": N} */
JOSEKI_MUST_USE int api_parse_acquire(ApiWorkBody *out, const char *body, size_t len, char *err);
/* {"worker": ..., "engine": ..., "nps": ..., "results": [...]} */
JOSEKI_MUST_USE int api_parse_submit(ApiWorkBody *out, const char *body, size_t len, char *err);
/* Abort's optional body: empty, or {"worker": "name"}. */
JOSEKI_MUST_USE int api_parse_abort(ApiWorkBody *out, const char *body, size_t len, char *err);
/* {"worker": ..., "engine": ..., "nps": ..., "leaving": true|false} */
JOSEKI_MUST_USE int api_parse_heartbeat(ApiWorkBody *out, const char *body, size_t len, char *err);
void api_work_body_free(ApiWorkBody *b);

#endif
