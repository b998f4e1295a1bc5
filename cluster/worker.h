/*
 * cluster/worker.h — the cluster worker (`joseki worker`): a
 * stateless client of a coordinator (`joseki serve BOOK --work`) that leases
 * positions over HTTP/JSON, thinks them with N search cores (one thread each)
 * and submits the engines' lines. The wire protocol is docs/worker.md.
 *
 * The calling thread speaks HTTP (one libcurl handle, kept alive); the engine
 * threads take positions from the leases in hand, in order. The worker keeps
 * up to two batches in hand: it acquires the next batch when no more than one
 * batch is left unfinished, so the engines never wait for a round trip. A
 * batch is N positions, or more when positions are quick (about half a second
 * of the engines' work, at most max(N, 64)), so round trips stay a small share.
 *
 * What happens when things go wrong:
 *  - connection errors, 5xx and 204 (no work): randomised exponential
 *    back-off (1 s doubling up to max_backoff_s, each wait drawn from
 *    [half, all] of the step), a Retry-After header taken as the wait
 *    instead; the step is reset when work arrives; a 204's wait also ends
 *    when the worker's own results are accepted (they make new leaves);
 *  - 401/403: WORKER_EAUTH at once, naming the server and the token file;
 *  - finished results that cannot be submitted are kept (in memory, and in
 *    the spool file when given, which survives the worker's own death) and
 *    submitted when the coordinator answers again, also a restarted one;
 *  - a submission answered 400 (or 413, too large) is retried one result at
 *    a time, so one result the coordinator refuses does not take the others;
 *    refused results are counted (WorkerStats.rejected) and dropped;
 *  - an engine that fails on a position (the USI driver has already restarted
 *    it and tried once more) makes that position {"failed": message}; so does
 *    an answer without a line (bestmove resign/win), since a result needs one;
 *  - the stop flag (SIGTERM/SIGINT): the engines are cancelled (they poll the
 *    same flag), a request in flight is cut short (an acquire only after half
 *    of stop_grace_s: its lease may be granted, and must then be aborted),
 *    what is finished is submitted if the coordinator answers within
 *    stop_grace_s, the rest of every lease is aborted, the coordinator is
 *    told the worker leaves (a heartbeat with leaving), return 0;
 *  - a worker that has made no request for heartbeat_s (long searches)
 *    sends a heartbeat, so that the coordinator shows it live.
 */
#ifndef BOOKGEN_WORKER_H
#define BOOKGEN_WORKER_H

#include "shogi/errors.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "search/search.h"

enum {
	WORKER_OK = 0,
	WORKER_EINVAL = ERR_WORKER - 0,   /* bad option (message in err) */
	WORKER_ENOMEM = ERR_WORKER - 1,   /* out of memory */
	WORKER_EAUTH = ERR_WORKER - 2,    /* the coordinator refused the token (401/403) */
	WORKER_EREFUSED = ERR_WORKER - 3, /* the coordinator refused a request for good (4xx) */
	WORKER_EHTTP = ERR_WORKER - 4,    /* libcurl could not be set up */
	WORKER_EENGINE =
	    ERR_WORKER - 5, /* the engine cannot do the leases' search (message in err) */
};
const char *worker_strerror(int code);

#define WORKER_ERRLEN 512
/* Longest worker name (bytes). */
#define WORKER_NAME_MAX 64
/* A heartbeat after this many seconds without a request by default: a third
 * of the minute after which a coordinator shows a silent worker gone. */
#define WORKER_HEARTBEAT_S 20
#define WORKER_HEARTBEAT_MAX_S 59
/* Longest token accepted (bytes). */
#define WORKER_TOKEN_MAX 256

/*
 * Progress of worker_run, for WorkerOptions.progress: phase "status" about
 * once a second (WorkerOptions.progress_ms), and one "done" as the run ends.
 */
typedef struct {
	uint64_t positions, failed; /* results sent, positions that failed */
	uint64_t waiting;           /* results done and waiting to be sent */
	double nps;                 /* the engines' recent nodes per second */
	const char *state;          /* "starting", "working", "no work", "server unavailable"... */
	double seconds;             /* since worker_run began */
} WorkerProgress;
typedef void (*WorkerProgressFn)(void *ctx, const char *phase, const WorkerProgress *p);

typedef struct {
	const char *server;     /* base URL, e.g. "http://10.0.0.1:8080" */
	const char *token;      /* bearer token */
	const char *token_file; /* where the token came from (named in messages); may be NULL */
	const char *name;       /* worker name sent with every request, 1..WORKER_NAME_MAX bytes */
	SearchEngine **engines; /* one thread each; cancelled by *stop */
	int nengines;
	double max_backoff_s; /* cap of the back-off; 0: 30 */
	double stop_grace_s;  /* after stop: time to submit and abort; 0: 3 */
	/* A heartbeat after this long without a request (long searches), so that
	 * the coordinator does not show the worker gone; 0: WORKER_HEARTBEAT_S. */
	double heartbeat_s;
	uint64_t max_positions;            /* stop after this many results are sent; 0: none */
	const volatile sig_atomic_t *stop; /* raised by a signal handler; may be NULL */
	uint64_t seed;                     /* back-off randomness; 0: from the clock */
	WorkerProgressFn progress;         /* NULL: quiet */
	void *progress_ctx;
	double progress_ms; /* between "status" calls; 0: 1000 */
	FILE *log;          /* one line per retry/refusal; NULL: none */
	/* One line per lease received, result accepted and lease aborted, each
	 * flushed (docs/worker.md, "The journal"); NULL: none. Times are unix ms
	 * when the request was sent and when its answer was in:
	 *   lease SENT RECV ID EXPIRES_IN KEY...
	 *   result SENT RECV ID KEY        (an analysis the coordinator accepted)
	 *   failed SENT RECV ID KEY        (a failed try it accepted)
	 *   abort SENT RECV ID             (the lease's unfinished rest returned) */
	FILE *journal;
	/* Finished results not yet answered by the coordinator, kept in this
	 * file and sent at the next start (docs/worker.md, "The spool"); NULL:
	 * kept in memory only, lost with the process. */
	const char *spool;
} WorkerOptions;

typedef struct {
	uint64_t positions;  /* analyses the coordinator accepted */
	uint64_t failed;     /* "failed" entries the coordinator accepted */
	uint64_t rejected;   /* results the coordinator refused (400/404/413), dropped */
	uint64_t unsent;     /* finished results still unsent at the end (kept in the spool) */
	uint64_t carried;    /* results an earlier run left in the spool, read back at start */
	uint64_t submits;    /* submit requests answered 204 */
	uint64_t leases;     /* leases received */
	uint64_t retries;    /* requests that failed (connection, 5xx) and were retried */
	uint64_t no_work;    /* acquires answered 204 */
	double seconds;      /* wall time */
	double engine_s;     /* summed time inside the engines' analyse calls */
	double cpu_s;        /* CPU time of the whole process during the run */
	double engine_cpu_s; /* CPU time of the engine threads inside analyse (the
	                      * built-in engine's search; for a USI engine only the
	                      * driver's share, the engine being another process) */
	char over[256];      /* the coordinator's run is over (an acquire answered 410): its
	                      * words; the worker stopped once it had sent its results. "": not */
} WorkerStats;

/*
 * Runs the worker until the stop flag is raised (then 0), max_positions
 * results are sent (0), or a fatal error: WORKER_EAUTH, WORKER_EREFUSED
 * (acquire answered 400/404/...), WORKER_EINVAL, WORKER_ENOMEM, WORKER_EHTTP,
 * with a message in err (WORKER_ERRLEN bytes, may be NULL). *out is filled
 * in every case.
 */
JOSEKI_MUST_USE int worker_run(WorkerStats *out, const WorkerOptions *opt, char *err);

/*
 * Reads a token file: the first line, blanks around it removed. 0 with the
 * token in out (WORKER_TOKEN_MAX bytes), or WORKER_EINVAL with a message
 * naming the file (missing, unreadable, empty, too long, not printable).
 */
JOSEKI_MUST_USE int worker_read_token(char *out, const char *path, char *err);

#endif
