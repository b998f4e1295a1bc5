/*
 * cluster/worker_wire.h — the worker's side of the work protocol's JSON
 * (docs/worker.md): reading an acquire answer (a lease) and writing one
 * position's result. Kept apart from the HTTP loop so the parser can be
 * fuzzed (tests/fuzz/fuzz_worker_lease.c) and the encoding tested alone.
 */
#ifndef BOOKGEN_WORKER_WIRE_H
#define BOOKGEN_WORKER_WIRE_H

#include <stddef.h>

#include "search/search.h"
#include "shogi/zobrist.h"
#include "shogi/errors.h"

/* Longest lease id kept (the protocol's are 16 hex digits). */
#define WORKER_LEASE_ID_MAX 64
/* Most positions a lease may hold (the protocol's max is 256). */
#define WORKER_LEASE_MAX 256

typedef struct {
	char *sfen;            /* as sent; the engine gets "position sfen <sfen>" */
	char key[KEY_HEX_LEN]; /* 32 lowercase hex digits */
} WorkerLeasePos;

typedef struct {
	char id[WORKER_LEASE_ID_MAX];
	double expires_in;   /* seconds, as the coordinator said (0 if absent) */
	SearchBudget budget; /* the first of nodes, movetime, depth the limits hold */
	int multipv;         /* 1..SEARCH_MULTIPV_MAX (larger values are lowered) */
	int n;
	WorkerLeasePos *pos; /* n of them */
} WorkerLease;

/* Size of worker_lease_parse's message buffer. */
#define WORKER_LEASE_ERRLEN 256

/*
 * Parses a 200 answer of POST /v1/work/acquire. The lease id must be 1..63
 * characters of [0-9A-Za-z_-] (it goes into a URL), positions 1..max entries
 * with a string sfen and a 32-hex-digit key, limits at least one positive
 * nodes/movetime/depth. 0 with *out filled (worker_lease_free it), or -1 with
 * a message in err (WORKER_LEASE_ERRLEN bytes, may be NULL) saying which
 * field is wrong; *out needs no freeing then.
 */
JOSEKI_MUST_USE int worker_lease_parse(WorkerLease *out, const char *body, size_t len, int max,
                                       char *err);
void worker_lease_free(WorkerLease *l);

/*
 * One entry of a submit body: {"key": key, "moves": [...]} from an analysis
 * (score {"cp": N} clamped to ±32000, or {"mate": plies}, depth clamped to
 * 0..1000, nodes, pv), or {"key": key, "failed": message} when res is NULL.
 * NULL when out of memory. The caller owns the reference.
 */
struct json_t;
struct json_t *worker_result_json(const char *key, const SearchResult *res, const char *failed);

#endif
