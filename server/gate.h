/*
 * server/gate.h — the server's accept policy, in front of libmicrohttpd
 * (docs/server.md, "Limits"). libmicrohttpd alone has one global connection
 * cap and a time-out that counts only silence, so a few thousand idle or
 * trickling connections (one byte a second, in a head or in a body) held
 * every slot; and the errors it answers itself (a request line or head too
 * large, a malformed request) are HTML. So the listening socket is the
 * gate's, and it keeps an eye on every connection until it closes:
 *
 *   - per client address at most per_ip connections (open in libmicrohttpd
 *     or waiting here); more are answered 503 and closed at once;
 *   - a new connection waits here until its first request's head is whole
 *     (read with MSG_PEEK: nothing is consumed), then it is handed to
 *     libmicrohttpd (MHD_add_connection), which reads it again;
 *   - deadlines for whole requests, head and body: the first request within
 *     request_ms of the connection's accept, a later one on a kept-alive
 *     connection whole within request_ms of its request line, which must come
 *     within keepalive_ms of the last answer. A request not whole by its
 *     deadline is answered 408 (when a head or a body was under way) and the
 *     connection closed; a kept-alive one silent too long is closed;
 *   - a first head too long (414, 431) or malformed (400), or whose fields
 *     libmicrohttpd would fail on (too many header fields, cookies, URL
 *     parameters; a transfer coding) is answered with JSON here; the server
 *     checks a later request's fields the same way (gate_fields_*);
 *   - when max connections are open, room is made: a connection from an
 *     address holding two or more fewer than the busiest address is given
 *     one of the busiest address's slots (its connection waiting longest, else
 *     one idle between requests, else one still sending a request: shed 503
 *     or closed), so that a flood from any number of addresses leaves a slot
 *     for everyone else; else the connection waiting here longest is shed;
 *     with none, the new one gets 503.
 *
 * Every answer of the gate is JSON {"error": "..."} with Connection: close,
 * counted through the status callback.
 */
#ifndef SERVER_GATE_H
#define SERVER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "shogi/errors.h"

struct MHD_Daemon;
struct MHD_Connection;

#define GATE_URL_MAX 8192       /* a request line longer: 414 */
#define GATE_HEAD_MAX 24576     /* a first request head longer: 431 */
#define GATE_REQUEST_MS 10000   /* a request, head and body, must be whole within this */
#define GATE_KEEPALIVE_MS 30000 /* a kept-alive connection's next request line within this */
#define GATE_PER_IP_DEFAULT 64  /* connections per client address */
#define GATE_FIELDS_MAX 100     /* header fields in a request: more, 431 */
#define GATE_COOKIES_MAX 100    /* cookies in its Cookie headers: more, 431 */
#define GATE_PARAMS_MAX 100     /* URL parameters: more, 414 */

typedef struct {
	unsigned max_connections; /* open connections in all (gate and libmicrohttpd) */
	unsigned per_ip;          /* per client address (0: no limit) */
	unsigned request_ms;      /* deadline of a whole request (0: GATE_REQUEST_MS) */
	unsigned
	    keepalive_ms; /* of a kept-alive connection's next request (0: GATE_KEEPALIVE_MS) */
	/* Called (from the gate's thread) with the status of every answer the
	 * gate gives itself, for the metrics; may be NULL. */
	void (*on_status)(void *ctx, int status);
	void *ctx;
	/* The gate's own answers carry Access-Control-Allow-Origin: * (as the
	 * server's do unless --no-cors). */
	bool cors;
} GateOptions;

/*
 * The header fields of a request, checked whoever parsed them: the gate on a
 * first request's raw head, the server on what libmicrohttpd parsed of a later
 * one. gate_field is called once a field (any bytes, not NUL-terminated);
 * gate_fields_verdict then says 0, or the status with *msg (a static string):
 * 400 Content-Length not a plain number, given twice, or with
 * Transfer-Encoding, or Authorization given twice; 411 chunked (a body needs
 * a Content-Length); 501 another transfer coding; 431 more than
 * GATE_FIELDS_MAX fields or GATE_COOKIES_MAX cookies.
 */
typedef struct {
	unsigned fields, cookies, lengths, auths, codings;
	bool bad_length, chunked;
} GateFields;
void gate_field(GateFields *f, const char *name, size_t nlen, const char *value, size_t vlen);
JOSEKI_MUST_USE int gate_fields_verdict(const GateFields *f, const char **msg);

typedef struct Gate Gate;

/*
 * Looks at the n bytes peeked of a connection's first request (any bytes, not
 * NUL-terminated): 0 while its head is not whole, 1 when it is and
 * libmicrohttpd may have it, or an HTTP status with *msg (a static string)
 * for one the gate refuses: 400 a malformed request line or header line, 414
 * a URL over 8 KB or with more than GATE_PARAMS_MAX parameters, 431 a head
 * over 24 KB, and gate_fields_verdict's. Pure; fuzzed
 * (tests/fuzz/fuzz_gate_head.c).
 */
JOSEKI_MUST_USE int gate_check_head(const char *b, size_t n, const char **msg);

/* Takes over the listening socket fd (closed by gate_stop) and starts the
 * gate's thread, which hands connections to d. 0, or -1 (errno set). */
JOSEKI_MUST_USE int gate_start(Gate **out, int fd, struct MHD_Daemon *d, const GateOptions *opt);

/* libmicrohttpd's connection notifications (MHD_OPTION_NOTIFY_CONNECTION):
 * started true when it takes a connection the gate handed it (*socket_ctx is
 * then the gate's record of it), false when it closes one. */
void gate_notify(Gate *g, struct MHD_Connection *c, void **socket_ctx, bool started);

/* What the server tells the gate of a connection's requests, for their
 * deadlines: a request line read (libmicrohttpd's URI log callback), an
 * answer queued for a whole request, the request done (its answer sent, or
 * the connection failed). */
typedef enum { GATE_REQ_BEGIN, GATE_REQ_ANSWER, GATE_REQ_DONE } GateReqEvent;
void gate_request(Gate *g, struct MHD_Connection *c, GateReqEvent ev);

/* Connections open in all (waiting in the gate and in libmicrohttpd). */
unsigned gate_open_connections(Gate *g);

/* Stops accepting: closes the listening socket and the connections still
 * waiting (503), joins the thread. The counts stay until gate_free, for the
 * connections libmicrohttpd still closes. Accepts NULL. */
void gate_stop(Gate *g);
/* gate_stop, then frees g (after libmicrohttpd stopped). Accepts NULL. */
void gate_free(Gate *g);

#endif
