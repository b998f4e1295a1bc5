/*
 * server/work_api.h — the cluster work endpoints (docs/cluster.md) over a
 * cluster/coord.h Coordinator: POST /v1/work/acquire, /v1/work/submit/{lease},
 * /v1/work/abort/{lease}, /v1/work/heartbeat, GET /v1/work/status, each behind
 * a bearer token
 * (server/tokens.h).
 *
 * One service thread owns the Coord (and so the book's only write
 * transaction): HTTP threads authenticate and parse the body, then hand the
 * request to it (api_work_call_start: without waiting). The thread applies
 * every request that arrived meanwhile, commits once, and only then answers
 * them (group commit): a 200 lease or a 204 submission is on disk when the
 * worker hears of it. Between requests it expires leases and runs the
 * periodic minimax (coord_tick).
 */
#ifndef SERVER_WORK_API_H
#define SERVER_WORK_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cluster/coord.h"
#include "server/tokens.h"
#include "shogi/errors.h"

#define API_WORK_BODY_MAX (1024 * 1024) /* larger request bodies: 413 */
#define API_WORK_RETRY_S 5              /* Retry-After of a 204 (no work) or 503 */
#define API_WORK_BUSY_RETRY_S 1         /* of a 204 while a selection is under way */

typedef struct ApiWork ApiWork;

/* Starts the service thread over c and tokens (both kept by the caller and
 * freed after api_work_stop). 0, or -1 when the thread cannot start. */
JOSEKI_MUST_USE int api_work_start(ApiWork **out, Coord *c, ServerTokens *tokens);
/* Answers later requests 503, finishes the thread's round, joins it. Accepts NULL. */
void api_work_stop(ApiWork *w);

typedef struct ApiWorkCall ApiWorkCall;
typedef void (*ApiWorkWake)(void *ctx);

/* One request under /v1/work/. auth: the Authorization header (may be NULL);
 * too_large: the body was cut at API_WORK_BODY_MAX. Returns the malloc'd JSON
 * body (NULL for an empty one) and sets *status and *retry_after (seconds, 0:
 * no header).
 *
 * A request the service thread must answer (every one but an acquire a lease
 * made ahead answers, and those refused at once) waits for its round and
 * commit, but not here (call may not be NULL): NULL is returned, *status is
 * 0 and *call set; the caller makes ready to be woken (libmicrohttpd:
 * suspends the connection), then api_work_call_start hands it over, and wake(ctx) is called once it
 * is answered, from the service thread (or at once, from the caller's, when the service is
 * stopping); api_work_call_finish then gives the answer and frees the call, never before it was
 * woken (a connection closed meanwhile: its answer is thrown away); a call never started is
 * finished at once (503). So the requests' threads stay free for the acquires leases made ahead
 * answer, while the service thread commits, trims or checkpoints. */
char *api_work_handle(ApiWork *w, const char *method, const char *url, const char *auth,
                      const char *body, size_t len, bool too_large, int *status, int *retry_after,
                      ApiWorkCall **call);
void api_work_call_start(ApiWork *w, ApiWorkCall *call, ApiWorkWake wake, void *ctx);
char *api_work_call_finish(ApiWork *w, ApiWorkCall *call, int *status, int *retry_after);

/* The coordinator's lines of /metrics (Prometheus text: the spot checks)
 * onto f; nothing when the status cannot be had. */
void api_work_metrics(ApiWork *w, FILE *f);

/* The coordinator's status now, taken by the service thread between rounds
 * (free it with coord_status_free, also after a failure). 0, or -1 when the
 * service has stopped or the status could not be taken. */
JOSEKI_MUST_USE int api_work_status(ApiWork *w, CoordStatus *st);

/* The run's figures into buf as lines of at most 120 columns, each starting
 * "work: " (separated by newlines, none after the last): results, queue,
 * leases; workers live and gone, minimax runs; with internals, where the
 * service thread's time went (selection, store, commit, minimax; the longest
 * parts of its rounds); the spot checks when they run. Cut short when buf is
 * full. */
void api_work_status_line(ApiWork *w, char *buf, size_t len, bool internals);

/* True once the coordinator failed (book error): the process should exit and
 * be restarted; requests meanwhile get 500. */
bool api_work_failed(ApiWork *w);

/* The run is over (its budget spent): from now on every acquire is answered
 * 410 with why ("the run is over: ..."), so that workers stop once they have
 * sent what they hold; submissions are taken as before. */
void api_work_over(ApiWork *w, const char *why);
/* The workers (instances, or tokens without one) answered 410 so far. */
size_t api_work_over_told(ApiWork *w);

#endif
