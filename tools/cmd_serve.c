/*
 * joseki serve BOOK [--listen ADDR:PORT] [--threads N] [--max-connections N]
 *                   [--no-cors] [--quiet]
 *
 * Serves the book over HTTP (server/server.h, docs/server.md) until SIGTERM or
 * SIGINT: then it stops accepting, finishes the requests in flight, closes the
 * book and exits 0. One line on stderr at start (where it listens, how many
 * positions), one a request unless --quiet.
 *
 * --work makes it the cluster coordinator (docs/cluster.md): the book is
 * opened read-write, the /v1/work/ endpoints hand out leases of selected
 * leaves to workers holding a token from --tokens (default BOOK/tokens), and
 * a status line goes to stderr every 10 s when it is a terminal.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "cluster/coord.h"
#include "bookgen/selector.h"
#include "minimax/bookmm.h"
#include "server/server.h"
#include "server/work_api.h"
#include "shogi/position.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

#define USAGE                                                                                      \
	"usage: joseki serve BOOK [--listen ADDR:PORT] [--threads N] [--max-connections N]\n"      \
	"                         [--per-ip-connections N] [--header-seconds S] [--no-cors]\n"     \
	"                         [--quiet]   (default listen 127.0.0.1:8080)\n"                   \
	"       joseki serve BOOK --work [--tokens FILE] [--lease-seconds S]\n"                    \
	"                         [--minimax-every N] [--minimax-seconds S] [--history-seconds "   \
	"S]\n"                                                                                     \
	"                         [--nodes N|--movetime MS|--depth D] [--multipv K] [--kif-bonus " \
	"CP]\n"                                                                                    \
	"                         [--preload]\n"                                                   \
	"                         " CLI_PLAN_USAGE

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-') return -1;
	*out = v;
	return 0;
}

typedef struct {
	bool on;
	const char *tokens;
	CoordOptions co;
	CliPlan plan;
	int nbudgets, nplan;
} WorkArgs;

/* The --work options; 1 when a was one (i advanced), 0 when not, -1 on a bad value. */
static int work_arg(WorkArgs *w, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	unsigned long v;
	bool has = *i + 1 < argc;
	if (!strcmp(a, "--work")) {
		w->on = true;
		return 1;
	}
	if (!strcmp(a, "--tokens") && has) {
		w->tokens = argv[++*i];
		return 1;
	}
	if (!strcmp(a, "--preload")) { /* the selector reads every key at start */
		w->co.preload = true;
		return 1;
	}
	if (!strcmp(a, "--lazy-load")) { /* the default (kept for older scripts) */
		w->co.preload = false;
		return 1;
	}
	int taken = cli_plan_arg(&w->plan, argc, argv, i, "serve");
	if (taken) {
		w->nplan++;
		return taken;
	}
	if (!has) return 0;
	const char *val = argv[*i + 1];
	if (!strcmp(a, "--kif-bonus")) {
		char *end;
		long b = strtol(val, &end, 10);
		if (*end || end == val || b < -32000 || b > 32000) goto bad;
		w->co.kif_bonus = (int)b;
	} else if (!strcmp(a, "--history-seconds")) {
		if (parse_uint(val, 86400, &v) < 0) goto bad;
		w->co.history_seconds = v ? (double)v : -1; /* 0: no history */
	} else if (!strcmp(a, "--lease-seconds") || !strcmp(a, "--minimax-seconds") ||
	           !strcmp(a, "--minimax-every") || !strcmp(a, "--multipv") ||
	           !strcmp(a, "--nodes") || !strcmp(a, "--movetime") || !strcmp(a, "--depth")) {
		if (parse_uint(val, 4000000000UL, &v) < 0) goto bad;
		if (!strcmp(a, "--lease-seconds")) {
			if (!v) goto bad;
			w->co.lease_seconds = (double)v;
		} else if (!strcmp(a, "--minimax-seconds"))
			w->co.minimax_seconds = (double)v;
		else if (!strcmp(a, "--minimax-every"))
			w->co.minimax_every = v;
		else if (!strcmp(a, "--multipv")) {
			if (!v || v > SEARCH_MULTIPV_MAX) goto bad;
			w->co.multipv = (int)v;
		} else {
			if (!v) goto bad;
			w->co.budget.kind = a[2] == 'n'   ? SEARCH_BUDGET_NODES
			                    : a[2] == 'm' ? SEARCH_BUDGET_MOVETIME
			                                  : SEARCH_BUDGET_DEPTH;
			w->co.budget.amount = v;
			w->nbudgets++;
		}
	} else {
		return 0;
	}
	++*i;
	return 1;
bad:
	joseki_error("serve: %s: bad value '%s'\n" USAGE, a, val);
	return -1;
}

/* Waits for SIGTERM/SIGINT; with work on a terminal, a status line every 10 s.
 * Returns the signal, or 0 when the coordinator failed. */
static int wait_stop(sigset_t *sigs, ApiWork *work)
{
	bool tty = work && isatty(2);
	for (;;) {
		struct timespec ts = {.tv_sec = work ? 1 : 3600};
		int sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0) return sig;
		if (work && api_work_failed(work)) return 0;
		static time_t last;
		time_t now = time(NULL);
		if (tty && now - last >= 10) {
			char line[512];
			api_work_status_line(work, line, sizeof line);
			fprintf(stderr, "%s\n", line);
			last = now;
		}
	}
}

int cmd_serve(int argc, char **argv)
{
	const char *book = NULL;
	char addr[64] = "127.0.0.1";
	ServerOptions opt = {.port = 8080, .log = true};
	WorkArgs wa = {.co = {.budget = {.kind = SEARCH_BUDGET_NODES, .amount = 100000},
	                      .multipv = 1,
	                      .kif_bonus = SEL_KIF_BONUS_DEFAULT,
	                      .minimax = bookmm_hook(NULL)}};
	cli_plan_init(&wa.plan);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned long v;
		int wr = work_arg(&wa, argc, argv, &i);
		if (wr < 0) return 2;
		if (wr > 0) continue;
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
		} else if (!strcmp(a, "--header-seconds") && i + 1 < argc) {
			if (parse_uint(argv[i + 1], 3600, &v) < 0 || !v) {
				joseki_error(
				    "serve: --header-seconds wants 1..3600, not '%s'\n" USAGE,
				    argv[i + 1]);
				return 2;
			}
			opt.head_ms = (unsigned)v * 1000;
			i++;
		} else if (!strcmp(a, "--per-ip-connections") && i + 1 < argc) {
			/* 0: no limit (behind a proxy, every client has its address). */
			if (parse_uint(argv[i + 1], 100000, &v) < 0) {
				joseki_error(
				    "serve: --per-ip-connections wants a number, not '%s'\n" USAGE,
				    argv[i + 1]);
				return 2;
			}
			opt.per_ip = v ? (unsigned)v : SERVER_PER_IP_OFF;
			i++;
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
	if (wa.nbudgets > 1) {
		joseki_error("serve: give one of --nodes, --movetime, --depth\n" USAGE);
		return 2;
	}
	if (cli_plan_check(&wa.plan, "serve") < 0) return 2;
	if (!wa.on && (wa.tokens || wa.nbudgets || wa.nplan)) {
		joseki_error("serve: the work options need --work\n" USAGE);
		return 2;
	}
	if (wa.on && !wa.co.minimax_every && !wa.co.minimax_seconds) wa.co.minimax_seconds = 60;
	opt.addr = addr;
	shogi_init();
	/* Signals are taken by sigwait below, never by a server thread. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	char err[COORD_ERRLEN];
	BookDB *db;
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, book, &ro, err) < 0) {
		joseki_error("serve: %s", err);
		return 1;
	}
	ServerTokens *tokens = NULL;
	Coord *coord = NULL;
	ApiWork *work = NULL;
	if (wa.on) {
		/* The coordinator writes: read-write, with a map large enough that it
		 * never grows under the server's readers. */
		bookdb_free(db);
		BookDBOptions rw = {.map_size = (size_t)1 << 38};
		char tpath[BOOKDB_PATH_LEN];
		snprintf(tpath, sizeof tpath, "%s/tokens", book);
		if (!wa.tokens) wa.tokens = tpath;
		if (server_tokens_open(&tokens, wa.tokens, err) < 0) {
			joseki_error("serve: %s (make one with: joseki token add %s NAME)", err,
			             wa.tokens);
			return 1;
		}
		if (bookdb_open(&db, book, &rw, err) < 0) {
			joseki_error("serve: %s", err);
			server_tokens_free(tokens);
			return 1;
		}
		RootList roots = {0};
		if (cli_plan_roots(&wa.plan, &roots, db, !opt.log, "serve") < 0) {
			bookdb_free(db);
			server_tokens_free(tokens);
			return 1;
		}
		wa.co.plan = wa.plan.plan;
		wa.co.roots = (const char *const *)roots.specs;
		wa.co.root_weights = roots.weights;
		wa.co.nroots = (int)roots.n;
		fprintf(stderr, "serve: loading the selector over %s\n", book);
		int orc = coord_open(&coord, db, &wa.co, err);
		roots_free(&roots); /* the coordinator keeps its own copies */
		if (orc < 0 || (api_work_start(&work, coord, tokens) < 0 &&
		                snprintf(err, sizeof err, "cannot start the work thread") > 0)) {
			joseki_error("serve: %s", err);
			coord_free(coord);
			bookdb_free(db);
			server_tokens_free(tokens);
			return 1;
		}
		opt.work = work;
		if (!opt.threads) opt.threads = 16; /* requests wait for the group commit */
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
		api_work_stop(work);
		coord_free(coord);
		server_tokens_free(tokens);
		bookdb_free(db);
		return 1;
	}
	fprintf(stderr, "serve: %s: %llu positions; listening on http://%s:%u/%s\n", book,
	        (unsigned long long)positions, addr, server_port(s), work ? " (work)" : "");
	int sig = wait_stop(&sigs, work);
	if (sig)
		fprintf(stderr, "serve: %s: finishing the requests in flight\n",
		        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	else
		fprintf(stderr, "serve: the coordinator failed; stopping (restart to resume)\n");
	server_stop(s);
	char line[512] = "";
	if (work) api_work_status_line(work, line, sizeof line);
	api_work_stop(work);
	coord_free(coord);
	server_tokens_free(tokens);
	bookdb_free(db);
	fprintf(stderr, "serve: stopped\n");
	if (line[0]) printf("%s\n", line);
	return sig ? 0 : 1;
}
