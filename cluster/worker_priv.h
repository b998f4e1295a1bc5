/*
 * cluster/worker_priv.h — what the worker's two files share: the leases in
 * hand, the engine slots and the worker's state (worker.c: the engine threads
 * and the loop; worker_http.c: the HTTP client side, i.e. the curl callbacks,
 * requests, back-off, the journal, acquire, submit and abort). Not for use
 * outside bookgen/.
 */
#ifndef BOOKGEN_WORKER_PRIV_H
#define BOOKGEN_WORKER_PRIV_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/worker.h"
#include "cluster/worker_wire.h"

enum { POS_QUEUED = 0, POS_RUNNING, POS_DONE, POS_SENT };

typedef struct Lease {
	struct Lease *next;
	WorkerLease l;
	int *state;     /* per position */
	json_t **res;   /* per position: the result while DONE */
	double *doneat; /* per position: when it became DONE (ms) */
	int unsent;     /* positions not SENT */
} Lease;

typedef struct Worker Worker;

typedef struct {
	Worker *w;
	SearchEngine *engine;
	pthread_t thread;
	bool started;
	Position *pos;
	SearchResult *res;
	double nps;     /* recent nodes/s of this engine */
	double busy_ms; /* summed analyse time */
	double cpu_ms;  /* this thread's CPU time inside analyse */
	uint64_t count; /* analyse calls */
} Slot;

/* One HTTP exchange's answer. */
typedef struct {
	long status; /* 0: no answer (connection error) */
	char *body;
	size_t len, cap;
	double retry_after; /* seconds, -1 if absent */
	char cerr[CURL_ERROR_SIZE];
	double sent_ms, recv_ms; /* unix ms: the request started, the answer was in */
} Reply;

struct Worker {
	const WorkerOptions *opt;
	WorkerStats *out;
	char *err;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	Slot *slots;
	int n;
	bool quit;
	Lease *leases; /* oldest first */
	int in_hand;   /* positions QUEUED or RUNNING */
	int batch;     /* the last batch size (the engines wake the loop when in_hand reaches it) */
	uint64_t acquired;
	CURL *h;
	struct curl_slist *hdrs;
	char engine_id[128];
	char base[1024];
	Reply r;
	uint64_t rng;
	double step_s;     /* back-off step (doubles up to the cap) */
	double acquire_at; /* ms: no acquire before */
	bool no_work_wait; /* acquire_at is a 204's wait (not a server error's) */
	double submit_at;  /* ms: no submit before */
	double start, last_progress;
	const char *state;  /* for the progress line: "working", "no work", ... */
	bool shutting_down; /* after the stop flag: requests are no longer cut short */
	bool acquiring;     /* an acquire is in flight (not cut short at once on stop) */
	double stop_seen;   /* ms: when a request in flight first saw the stop flag */
	double last_post;   /* ms: the last request began (a heartbeat after a silence) */
	char instance[17];  /* this process's random id, sent with every request */
	/* The spool (worker_spool.c): -1 when none. */
	int spool_fd, spool_lock;
	size_t spool_size;
	bool spool_dirty, spool_failed, spool_said;
	double spool_synced;
	/* Failed positions said on the log: the last line's time, those since. */
	double fail_said;
	uint64_t fails_unsaid;
	uint64_t troubles; /* failed requests (server_trouble) since the last answer */
	/* An engine refused a lease's search as asked (its budget, its MultiPV):
	 * every position would fail so; the worker stops, saying why. */
	bool unfit;
	char unfit_why[SEARCH_ERRLEN + 160];
};
/* One line on the log ("worker: ..."), escaped: what a server or an engine
 * said is shown as text, whatever it sent. Nothing without a log. */
void wk_say(Worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* libcurl's callbacks (set up by worker.c): the body and the Retry-After
 * header into w->r; cutting a request short on the stop flag (u is the Worker). */
size_t wk_on_body(char *p, size_t size, size_t n, void *u);
size_t wk_on_header(char *p, size_t size, size_t n, void *u);
int wk_on_xfer(void *u, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un);
/* The engines' recent speeds, summed (takes the lock). */
double wk_recent_nps(Worker *w);
/* One acquire of up to max positions. 0 (whatever the answer), or a fatal code. */
int wk_acquire(Worker *w, int max);
/* Submits lease l's DONE results. 0, or a fatal code. */
int wk_submit(Worker *w, Lease *l, double timeout_s);
/* Frees leases with every position SENT (lock held). */
void wk_drop_finished(Worker *w);
/* The lease to submit now, if any (lock held). */
Lease *wk_due(Worker *w, double now);
/* After the stop flag: finished results submitted, the rest aborted, and the
 * coordinator told the worker leaves. */
void wk_shut_down(Worker *w);
/* The worker has made no request for heartbeat_s (long searches):
 * tells the coordinator it is alive, so that it is not shown gone. 0, or
 * WORKER_EAUTH when the token is refused (final, as for any request). */
int wk_heartbeat(Worker *w);
/* Tells the coordinator the worker leaves (it shows it gone at once); best
 * effort, within timeout_s. */
void wk_leave(Worker *w, double timeout_s);

/* worker_spool.c. Opens the spool (WorkerOptions.spool; nothing when NULL):
 * locks it, reads back the results an earlier run left unsent into leases in
 * hand (DONE, submitted at once) and rewrites it with only those. Before the
 * engine threads start. 0 or a WORKER_E* code with a message. */
int wk_spool_open(Worker *w);
/* One line of a spool (n bytes with its newline; changed in place): 'R'
 * (*res: the result, the caller's reference) or 'S' with *id and *key
 * pointing into line, 0 for a line to skip, -1 for a torn one (no newline).
 * Fuzzed (tests/fuzz/fuzz_worker_spool.c). */
int wk_spool_parse(char *line, size_t n, char **id, char **key, json_t **res);
/* Position i of lease l became DONE / was answered (lock held). */
void wk_spool_done(Worker *w, Lease *l, int i);
void wk_spool_sent(Worker *w, Lease *l, int i);
/* From the loop: fdatasync at most once a second, compaction (takes the lock). */
void wk_spool_tend(Worker *w, double now);
void wk_spool_close(Worker *w);

#endif
