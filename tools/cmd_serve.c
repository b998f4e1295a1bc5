/*
 * joseki serve BOOK [--listen ADDR:PORT] [--threads N] [--max-connections N]
 *                   [--no-cors] [--quiet]
 *
 * Serves the book over HTTP (server/server.h, docs/server.md) until SIGTERM or
 * SIGINT: then it stops accepting, finishes the requests in flight, closes the
 * book and exits 0. One line on stderr at start (where it listens, how many
 * positions), one a request unless --quiet.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "server/server.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define USAGE                                                                                      \
	"usage: joseki serve BOOK [--listen ADDR:PORT] [--threads N] [--max-connections N]\n"      \
	"                         [--no-cors] [--quiet]   (default listen 127.0.0.1:8080)"

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-') return -1;
	*out = v;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	const char *book = NULL;
	char addr[64] = "127.0.0.1";
	ServerOptions opt = {.port = 8080, .log = true};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned long v;
		if (!strcmp(a, "--no-cors"))
			opt.no_cors = true;
		else if (!strcmp(a, "--quiet"))
			opt.log = false;
		else if (!strcmp(a, "--listen") && i + 1 < argc) {
			const char *l = argv[++i], *colon = strrchr(l, ':');
			if (!colon || colon == l || (size_t)(colon - l) >= sizeof addr ||
			    parse_uint(colon + 1, 65535, &v) < 0) {
				joseki_error("serve: --listen wants ADDR:PORT, e.g. "
				             "127.0.0.1:8080, not '%s'\n" USAGE,
				             l);
				return 2;
			}
			memcpy(addr, l, (size_t)(colon - l));
			addr[colon - l] = 0;
			opt.port = (uint16_t)v;
		} else if ((!strcmp(a, "--threads") || !strcmp(a, "--max-connections")) &&
		           i + 1 < argc) {
			if (parse_uint(argv[i + 1], 100000, &v) < 0 || v == 0) {
				joseki_error("serve: %s wants a positive number, not '%s'\n" USAGE,
				             a, argv[i + 1]);
				return 2;
			}
			if (a[2] == 't')
				opt.threads = (unsigned)v;
			else
				opt.max_connections = (unsigned)v;
			i++;
		} else if (a[0] != '-' && !book) {
			book = a;
		} else {
			joseki_error("serve: unexpected argument '%s'\n" USAGE, a);
			return 2;
		}
	}
	if (!book) {
		joseki_error("serve: no BOOK given\n" USAGE);
		return 2;
	}
	opt.addr = addr;
	shogi_init();
	/* Signals are taken by sigwait below, never by a server thread. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	char err[256];
	BookDB *db;
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, book, &ro, err) < 0) {
		joseki_error("serve: %s", err);
		return 1;
	}
	uint64_t positions = 0;
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, db, false) == 0) {
		bookdb_count(&positions, txn, BOOKDB_POS);
		bookdb_txn_abort(txn);
	}
	Server *s;
	int rc = server_start(&s, db, &opt, err, sizeof err);
	if (rc < 0) {
		joseki_error("serve: %s", err);
		bookdb_free(db);
		return 1;
	}
	fprintf(stderr, "serve: %s: %llu positions; listening on http://%s:%u/\n", book,
	        (unsigned long long)positions, addr, server_port(s));
	int sig = 0;
	sigwait(&sigs, &sig);
	fprintf(stderr, "serve: %s: finishing the requests in flight\n",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	server_stop(s);
	bookdb_free(db);
	fprintf(stderr, "serve: stopped\n");
	return 0;
}
