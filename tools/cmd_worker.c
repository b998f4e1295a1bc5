/*
 * joseki worker --server URL --token-file F [--engine builtin|PATH] [--engines N]
 *               [--usi-option NAME=VALUE]... [--name NAME] [--max-backoff S]
 *               [--positions N] [--journal FILE] [--spool FILE] [--quiet]
 *
 * Thinks for a coordinator (`joseki serve BOOK --work`) until stopped
 * (cluster/worker.h; docs/worker.md). --name defaults to hostname-pid;
 * --positions stops after N results are sent; --journal appends one line per
 * lease, accepted result and abort to FILE (WorkerOptions.journal). SIGTERM/SIGINT: finished
 * results are submitted, the rest of the leases aborted, exit 0. A refused token (401/403) exits 1
 * at once. Ends with one stdout line: "worker positions N failed F rejected R unsent U submits S
 * leases L retries T seconds X cpu_s P engine_s E engine_cpu_s C carried K" (K: results
 * an earlier run left in --spool FILE, sent by this one).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/worker.h"
#include "tools/cli_engines.h"
#include "tools/commands.h"

#define WORKER_MAX_ENGINES 128

static volatile sig_atomic_t worker_stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	worker_stop_flag = 1;
}

/* A WorkerProgressFn: one overwritten status line on stderr, ended with a
 * newline at "done"; with ctx (--status-seconds), a whole line each time (a
 * log, not a terminal: under Slurm or systemd), the last one marked. */
static void on_progress(void *ctx, const char *phase, const WorkerProgress *p)
{
	bool lines = ctx != NULL, done = !strcmp(phase, "done");
	double el = p->seconds;
	fprintf(stderr,
	        "%sworker: %llu done, %llu failed, %.1f/s, %llu waiting to be sent, %.0f nodes/s, "
	        "%s, %.0fs%s",
	        lines ? "" : "\r", (unsigned long long)p->positions, (unsigned long long)p->failed,
	        el > 0 ? p->positions / el : 0.0, (unsigned long long)p->waiting, p->nps, p->state,
	        el, lines ? (done ? " (the end)\n" : "\n") : "   ");
	if (!lines && done) fputc('\n', stderr);
	fflush(stderr);
}

/* --name (a CliParseFn): the coordinator refuses control characters in names. */
static int parse_name(void *dst, char *v, char *msg)
{
	bool plain = true;
	for (const char *p = v; *p; p++) plain &= (unsigned char)*p >= 0x20 && *p != 0x7f;
	if (!v[0] || strlen(v) > WORKER_NAME_MAX || !plain) {
		snprintf(msg, CLI_MSGLEN,
		         "--name wants 1 to %d bytes without control characters, not '%.64s'",
		         WORKER_NAME_MAX, v);
		return -1;
	}
	*(const char **)dst = v;
	return 0;
}

int cmd_worker(int argc, char **argv)
{
	const char *server = NULL, *token_file = NULL, *name = NULL, *journal = NULL, *spool = NULL;
	bool quiet = false;
	uint64_t max_backoff = 30, positions = 0, heartbeat = WORKER_HEARTBEAT_S;
	double status_s = 0;
	CliEngines ce;
	cli_engines_init(&ce, WORKER_MAX_ENGINES, "--option");
	const CliOpt opts[] = {
	    CLI_STR("--server", &server, "URL", "the coordinator (serve --work)", .required = true),
	    CLI_STR("--token-file", &token_file, "F", "the file holding this worker's token",
	            .required = true),
	    CLI_GROUP(ce.table),
	    CLI_FN("--name", &name, parse_name, "NAME", NULL,
	           "the name the coordinator shows (default hostname-pid)"),
	    CLI_NUM("--max-backoff", &max_backoff, 1, CLI_NOMAX, "S",
	            "the longest wait between retries (default 30)"),
	    CLI_NUM("--positions", &positions, 1, CLI_NOMAX, "N",
	            "stop after N results sent (default: run until stopped)"),
	    CLI_NUM("--heartbeat-seconds", &heartbeat, 1, WORKER_HEARTBEAT_MAX_S, "S",
	            "tell the coordinator the worker is alive after S seconds without a request "
	            "(long searches; default 20)"),
	    CLI_STR("--journal", &journal, "FILE",
	            "append a line a lease, result and abort (default: none)"),
	    CLI_STR("--spool", &spool, "FILE",
	            "keep unsent results here for the next run (default: none)"),
	    CLI_REAL(
	        "--status-seconds", &status_s, 0.1, 86400, "S",
	        "a status line every S seconds on stderr, terminal or not, and one at the start "
	        "(default: an overwritten line once a second on a terminal)",
	        .excl = "quiet"),
	    CLI_FLAG("--quiet", &quiet, "no progress line", .excl = "quiet"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"worker", opts, "docs/worker.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	uint64_t nengines = ce.n;
	char token[WORKER_TOKEN_MAX], err[WORKER_ERRLEN], defname[300];
	if (worker_read_token(token, token_file, err) < 0) {
		joseki_error("worker: %s", err);
		return 1;
	}
	if (!name) {
		char host[256] = "worker";
		if (gethostname(host, sizeof host) < 0) snprintf(host, sizeof host, "worker");
		host[sizeof host - 1] = 0;
		snprintf(defname, sizeof defname, "%.48s-%ld", host, (long)getpid());
		name = defname;
	}
	FILE *jf = NULL;
	if (journal && !(jf = fopen(journal, "a"))) {
		joseki_error("worker: --journal %s: %s", journal, strerror(errno));
		return 1;
	}
	int ret = 1, n = (int)nengines;
	SearchEngine **engines = calloc((size_t)n, sizeof *engines);
	if (!engines) {
		joseki_error("out of memory");
		if (jf) fclose(jf);
		return 1;
	}
	worker_stop_flag = 0;
	joseki_catch_stop(on_signal);
	if (cli_open_engines(engines, n, ce.path, ce.opts, ce.nopts, false, &worker_stop_flag,
	                     "worker") == 0) {
		WorkerOptions opt = {
		    .server = server,
		    .token = token,
		    .token_file = token_file,
		    .name = name,
		    .engines = engines,
		    .nengines = n,
		    .max_backoff_s = (double)max_backoff,
		    .heartbeat_s = (double)heartbeat,
		    .max_positions = positions,
		    .stop = &worker_stop_flag,
		    .progress = status_s || (!quiet && isatty(2)) ? on_progress : NULL,
		    .progress_ctx = status_s ? (void *)"lines" : NULL,
		    .progress_ms = status_s * 1000,
		    .log = stderr,
		    .journal = jf,
		    .spool = spool,
		};
		if (status_s)
			fprintf(stderr, "worker: %s, %d engine%s (%s), for %s\n", name, n,
			        n == 1 ? "" : "s", ce.path ? ce.path : "builtin", server);
		WorkerStats st;
		int rc = worker_run(&st, &opt, err);
		printf("worker positions %llu failed %llu rejected %llu unsent %llu submits %llu "
		       "leases %llu retries %llu seconds %.3f cpu_s %.3f engine_s %.3f "
		       "engine_cpu_s %.3f carried %llu\n",
		       (unsigned long long)st.positions, (unsigned long long)st.failed,
		       (unsigned long long)st.rejected, (unsigned long long)st.unsent,
		       (unsigned long long)st.submits, (unsigned long long)st.leases,
		       (unsigned long long)st.retries, st.seconds, st.cpu_s, st.engine_s,
		       st.engine_cpu_s, (unsigned long long)st.carried);
		fflush(stdout);
		if (rc < 0)
			joseki_error("worker: %s", err[0] ? err : worker_strerror(rc));
		else
			ret = 0;
		if (rc >= 0 && st.over[0])
			fprintf(stderr, "worker: %s answered 410: %s; its results sent, stopped\n",
			        server, st.over);
	}
	for (int i = 0; i < n; i++) search_free(engines[i]);
	free(engines);
	if (jf) fclose(jf);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}
