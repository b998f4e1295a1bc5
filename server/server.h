/*
 * server/server.h — the book over HTTP/JSON (joseki serve, docs/server.md).
 *
 * A libmicrohttpd daemon (its own thread pool, epoll) answers read-only
 * requests: /v1/query (the `joseki query --json` object, built by the same
 * bookdb/query.h code), /v1/stats, /v1/line, /v1/work/history (the
 * coordinator's time series kept in the book), /healthz, /metrics, the book
 * explorer (server/www, embedded at build time) at / and the work page at
 * /work.html. Every request reads in
 * its own LMDB read transaction, so writers (think, ingest, minimax) go on while
 * it serves and no answer sees half a batch. Errors are JSON {"error": "..."}.
 */
#ifndef SERVER_SERVER_H
#define SERVER_SERVER_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"

enum {
	SERVER_OK = 0,
	SERVER_EINVAL = ERR_SERVER - 0,  /* bad option (the address) */
	SERVER_ELISTEN = ERR_SERVER - 1, /* the address cannot be listened on */
	SERVER_ENOMEM = ERR_SERVER - 2,
	SERVER_EMHD = ERR_SERVER - 3, /* libmicrohttpd refused to start */
};
const char *server_strerror(int code);

#define SERVER_PER_IP_OFF UINT32_MAX

typedef struct {
	const char *addr;         /* IPv4 address to listen on ("127.0.0.1" when NULL) */
	uint16_t port;            /* 0: any free port (server_port says which) */
	unsigned threads;         /* worker threads (0: the number of cores) */
	unsigned max_connections; /* open connections in all (0: 1024) */
	/* Connections per client address (server/gate.h; 0: GATE_PER_IP_DEFAULT,
	 * SERVER_PER_IP_OFF: no limit, e.g. behind a proxy that limits them). */
	unsigned per_ip;
	/* A request, head and body, must be whole within request_ms (0: 10 s); a
	 * kept-alive connection's next request line must come within
	 * keepalive_ms of the last answer (0: 30 s). server/gate.h. */
	unsigned request_ms, keepalive_ms;
	bool no_cors; /* no Access-Control-Allow-Origin: * on the API */
	bool log;     /* one line a request on stderr */
	/* The cluster work endpoints (under /v1/work/, server/work_api.h); NULL: none. */
	struct ApiWork *work;
} ServerOptions;

typedef struct Server Server;

/* Size of server_start's message buffer. */
#define SERVER_ERRLEN 256

/* Starts serving db (opened read-only or read-write; not closed by the server).
 * Returns 0 or a negative SERVER_* code with a message in err (SERVER_ERRLEN
 * bytes). */
JOSEKI_MUST_USE int server_start(Server **out, BookDB *db, const ServerOptions *opt, char *err);

/* The port it listens on. */
uint16_t server_port(const Server *s);

/* Stops accepting, answers 503 to requests that arrive meanwhile on open
 * connections (every answer from then on closes its connection), waits up
 * to 2 s for the requests in flight, frees s. Returns how many were still
 * unfinished then (their connections closed unanswered). Accepts NULL. */
int server_stop(Server *s);

#endif
