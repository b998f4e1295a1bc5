/*
 * server/gate.h — the server's accept policy, in front of libmicrohttpd
 * (docs/server.md, "Limits"). libmicrohttpd alone has one global connection
 * cap and a time-out that counts only silence, so a few thousand idle or
 * trickling connections (one header byte a second) held every slot; and the
 * errors it answers itself (a request line or head too large, a malformed
 * request) are HTML. So the listening socket is the gate's:
 *
 *   - per client address at most per_ip connections (open in libmicrohttpd
 *     or waiting here); more are answered 503 and closed at once;
 *   - a new connection waits here until its first request's head is whole
 *     (read with MSG_PEEK: nothing is consumed), at most head_ms; then it is
 *     handed to libmicrohttpd (MHD_add_connection), which reads it again. A
 *     head not whole by then is answered 408 and closed;
 *   - a first head too long (414, 431) or malformed (400: a bad request line,
 *     a header line without a colon, a Content-Length that is not a plain
 *     number — libmicrohttpd 0.9.75 sent its status line twice for -1) is
 *     answered with JSON here;
 *   - when max connections are open, the oldest connection still waiting
 *     here is shed to make room; with none waiting the new one gets 503.
 *
 * Later requests on a kept-alive connection go straight to libmicrohttpd
 * (its idle time-out applies, and the per-address cap bounds how many such
 * connections one address holds). Every answer of the gate is JSON
 * {"error": "..."} with Connection: close, counted through the status
 * callback.
 */
#ifndef SERVER_GATE_H
#define SERVER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "shogi/errors.h"

struct MHD_Daemon;
struct MHD_Connection;

#define GATE_URL_MAX 8192      /* a request line longer: 414 */
#define GATE_HEAD_MAX 24576    /* a first request head longer: 431 */
#define GATE_HEAD_MS 10000     /* a first request head must be whole within this */
#define GATE_PER_IP_DEFAULT 64 /* connections per client address */

typedef struct {
	unsigned max_connections; /* open connections in all (gate and libmicrohttpd) */
	unsigned per_ip;          /* per client address (0: no limit) */
	unsigned head_ms;         /* deadline of a first request's head (0: GATE_HEAD_MS) */
	/* Called (from the gate's thread) with the status of every answer the
	 * gate gives itself, for the metrics; may be NULL. */
	void (*on_status)(void *ctx, int status);
	void *ctx;
} GateOptions;

typedef struct Gate Gate;

/*
 * Looks at the n bytes peeked of a connection's first request (any bytes, not
 * NUL-terminated): 0 while its head is not whole, 1 when it is and
 * libmicrohttpd may have it, or an HTTP status (400, 414, 431) with *msg (a
 * static string) for one the gate refuses. Pure; fuzzed
 * (tests/fuzz/fuzz_gate_head.c).
 */
JOSEKI_MUST_USE int gate_check_head(const char *b, size_t n, const char **msg);

/* Takes over the listening socket fd (closed by gate_stop) and starts the
 * gate's thread, which hands connections to d. 0, or -1 (errno set). */
JOSEKI_MUST_USE int gate_start(Gate **out, int fd, struct MHD_Daemon *d, const GateOptions *opt);

/* libmicrohttpd's connection notifications (MHD_OPTION_NOTIFY_CONNECTION),
 * so that connections open there count against their address and the cap.
 * started: true when it starts, false when it closes. */
void gate_notify(Gate *g, struct MHD_Connection *c, bool started);

/* Connections open in all (waiting in the gate and in libmicrohttpd). */
unsigned gate_open_connections(Gate *g);

/* Stops accepting: closes the listening socket and the connections still
 * waiting (503), joins the thread. The counts stay until gate_free, for the
 * connections libmicrohttpd still closes. Accepts NULL. */
void gate_stop(Gate *g);
/* gate_stop, then frees g (after libmicrohttpd stopped). Accepts NULL. */
void gate_free(Gate *g);

#endif
