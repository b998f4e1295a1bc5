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
 * a status line for the operator goes to stderr every 10 s when it is a
 * terminal (--status-seconds S: every S s, terminal or not), at most 120
 * columns: the book's positions and thought ones, the results and their
 * rate, the workers live and gone, the ETA of a budget (--positions,
 * --time), and the first root's value and line; --verbose adds the service
 * thread's timings. At the stop, the run's figures on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/query.h"
#include "bookgen/snapshot.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "cluster/coord.h"
#include "cluster/coord_spot.h"
#include "bookgen/selector.h"
#include "minimax/bookmm.h"
#include "server/server.h"
#include "server/work_api.h"
#include "shogi/memuse.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/cli_again.h"
#include "shogi/spec.h"
#include "tools/cli_engines.h"
#include "tools/cli_minimax.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"

/* --listen ADDR:PORT (a CliParseFn). */
typedef struct {
	char addr[64];
	uint16_t port;
} Listen;

static int parse_listen(void *dst, char *v, char *msg)
{
	Listen *l = dst;
	const char *colon = strrchr(v, ':');
	char *end;
	if (!colon || colon == v || (size_t)(colon - v) >= sizeof l->addr || colon[1] < '0' ||
	    colon[1] > '9')
		return -1;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!errno && !*end && port > 65535) {
		snprintf(msg, CLI_MSGLEN, "--listen %.80s: port %.20s is not 0..65535", v,
		         colon + 1);
		return -1;
	}
	if (errno || *end) return -1;
	memcpy(l->addr, v, (size_t)(colon - v));
	l->addr[colon - v] = 0;
	l->port = (uint16_t)port;
	return 0;
}

extern char **environ;

/* A whole-book minimax of book in a `joseki minimax` child process (this
 * executable) within memory bytes (its --memory, in whole MiB), niced, its
 * summary on stderr, sent SIGTERM once *stop is set (it then stops within a
 * second). 0, BOOK_MINIMAX_STOPPED or -1 with a message. */
static int whole_book_child(const char *book, const char *why, uint64_t memory,
                            const atomic_bool *stop, char *err, size_t errlen)
{
	/* This very executable, even when its file was replaced or removed
	 * since (a coordinator runs for months; an upgrade restarts it). */
	const char *exe = "/proc/self/exe";
	char mem[24];
	snprintf(mem, sizeof mem, "%lluM", (unsigned long long)(memory >> 20));
	/* In place: the coordinator has the book open, so it could not be
	 * written anew (docs/minimax.md, "Where --full writes"). */
	char *argv[] = {"joseki",   "minimax", (char *)book, "--in-place",
	                "--memory", mem,       "--quiet",    NULL};
	/* The child gets the signals serve blocks in every thread back, and
	 * SIGPIPE's default action; its stdout (the summary) goes to stderr. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, deflt;
	sigemptyset(&none);
	sigemptyset(&deflt);
	sigaddset(&deflt, SIGPIPE);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &deflt);
	/* Its parent named, so that it stops when the coordinator dies
	 * (tools/cmd_minimax.c). */
	size_t nenv = 0;
	while (environ[nenv]) nenv++;
	char **envp = malloc((nenv + 2) * sizeof *envp), parent[48];
	snprintf(parent, sizeof parent, "%s=%d", JOSEKI_PARENT_ENV, (int)getpid());
	size_t k = 0;
	for (size_t i = 0; envp && i < nenv; i++)
		if (strncmp(environ[i], JOSEKI_PARENT_ENV "=", strlen(JOSEKI_PARENT_ENV) + 1))
			envp[k++] = environ[i];
	if (envp) {
		envp[k++] = parent;
		envp[k] = NULL;
	}
	pid_t pid;
	int rc = posix_spawn(&pid, exe, &fa, &at, argv, envp ? envp : environ);
	free(envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0)
		return errmsg_set(err, errlen, -1, "whole-book minimax: cannot start %s: %s", exe,
		                  strerror(rc));
	errno = 0;
	int prio = getpriority(PRIO_PROCESS, 0);
	if (errno == 0) (void)setpriority(PRIO_PROCESS, (id_t)pid, prio + 10 > 19 ? 19 : prio + 10);
	/* Its disk reads and writes after the service's (the idle class). */
	(void)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, (int)pid, 3 << 13 /* IDLE */);
	fprintf(stderr, "serve: minimax: the whole book (%s), in child process %d (--memory %s)\n",
	        why, (int)pid, mem);
	bool killed = false;
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid) break;
		if (r < 0 && errno != EINTR)
			return errmsg_set(err, errlen, -1, "whole-book minimax: waiting for %d: %s",
			                  (int)pid, strerror(errno));
		if (!killed && stop && atomic_load(stop)) killed = kill(pid, SIGTERM) == 0;
		usleep(20000);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
	if (killed) {
		fprintf(stderr,
		        "serve: minimax: the whole-book run (child process %d) stopped; the next "
		        "run does it again\n",
		        (int)pid);
		return errmsg_set(err, errlen, BOOK_MINIMAX_STOPPED, "whole-book minimax: stopped");
	}
	return errmsg_set(err, errlen, -1, "whole-book minimax (child process %d) failed: %s %d",
	                  (int)pid, WIFEXITED(status) ? "exit" : "signal",
	                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/*
 * The coordinator's minimax (its hook's prepare, on its minimax thread): the
 * incremental runs in this process; a whole-book one (no earlier run, an
 * overflowed change log, a run stopped part way, a long journal, ...) in a
 * child process, so that its graph (gigabytes on a large book) never adds to
 * the coordinator's memory and its failure (out of memory) costs the service
 * nothing. Either way the service's requests wait for LMDB's write lock at
 * most one of the run's short write transactions (docs/minimax.md).
 */
static BookmmOptions serve_minimax = {.no_whole = true};
/* The whole-book child's --memory: the half of serve's that its selector does
 * not take, in whole MiB (at least the 1 MiB a budget may be), set once at the
 * start. */
static uint64_t whole_book_memory = 1u << 20;
/* --verbose: a line for each incremental run, what took its time. */
static bool serve_minimax_verbose;
static int serve_minimax_prepare(void *ctx, BookDB *db, const atomic_bool *stop,
                                 BookMinimaxPlan **plan, char *err, size_t errlen)
{
	int rc = bookmm_hook(ctx).prepare(ctx, db, stop, plan, err, errlen);
	const BookmmStats *st = rc == 0 && *plan ? bookmm_plan_stats(*plan) : NULL;
	if (st && st->folded_bytes)
		fprintf(
		    stderr,
		    "serve: minimax: the kept graph's journal (%.1f MB) folded into a new graph "
		    "file in %.1f s\n",
		    st->folded_bytes / 1e6, st->fold_ms / 1e3);
	if (st && serve_minimax_verbose)
		fprintf(
		    stderr,
		    "serve: minimax: %zu changed, %zu analysed again: read %.1f s, analysed %.1f "
		    "s, prepared %.1f s\n",
		    st->changed, st->affected, st->read_ms / 1e3, st->analysis_ms / 1e3,
		    st->write_ms / 1e3);
	if (rc != BOOKMM_EWHOLE) return rc;
	char why[BOOKMM_ERRLEN];
	snprintf(why, sizeof why, "%s", err);
	return whole_book_child(bookdb_dir(db), why, whole_book_memory, stop, err, errlen);
}

/* A re-read of the tokens file that failed (the tokens read before stay in
 * force) or that reads again: one line per version of the file. */
static void tokens_log(void *ctx, const char *msg)
{
	(void)ctx;
	char shown[TOKENS_ERRLEN * 4];
	fprintf(stderr, "serve: tokens: %s\n",
	        errmsg_escape(shown, sizeof shown, msg, strlen(msg)));
}

/* The operator's console (serve --work): what its line says besides the
 * coordinator's status, and how often it is said. */
typedef struct {
	BookDB *db;
	const char *root; /* the first root's spec ("startpos" without roots) */
	size_t nroots;
	double every_s;       /* a line every this many seconds; 0: none */
	bool verbose;         /* and the internals line after it */
	uint64_t max_results; /* --positions: stop after this many results (0: none) */
	double max_s;         /* --time: stop after this many seconds (0: none) */
	const char *spent;    /* which of them stopped the run */
	double start_ms;
	Position *pos;
	BookRecord *rec;
} Console;

/* 12345, 201.3k, 15.02M, 1.20G */
static void count_text(char *out, size_t n, double v)
{
	if (v < 1e4)
		snprintf(out, n, "%.0f", v);
	else if (v < 1e6)
		snprintf(out, n, "%.1fk", v / 1e3);
	else if (v < 1e9)
		snprintf(out, n, "%.*fM", v < 1e7 ? 2 : 1, v / 1e6);
	else
		snprintf(out, n, "%.2fG", v / 1e9);
}

/* 45s, 12m30s, 3h05m, 2d04h */
static void duration_text(char *out, size_t n, double s)
{
	long t = s > 0 ? (long)(s + 0.5) : 0;
	if (t < 60)
		snprintf(out, n, "%lds", t);
	else if (t < 3600)
		snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
	else if (t < 86400)
		snprintf(out, n, "%ldh%02ldm", t / 3600, t % 3600 / 60);
	else
		snprintf(out, n, "%ldd%02ldh", t / 86400, t % 86400 / 3600);
}

/* Appends to buf (cap bytes, *len used) when it fits within CLI_CONSOLE_WIDTH. */
static bool put(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool put(char *buf, size_t *len, const char *fmt, ...)
{
	char part[CLI_CONSOLE_WIDTH + 1];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(part, sizeof part, fmt, ap);
	va_end(ap);
	if (n < 0 || *len + (size_t)n > CLI_CONSOLE_WIDTH) return false;
	memcpy(buf + *len, part, (size_t)n + 1);
	*len += (size_t)n;
	return true;
}

/*
 * The operator's line (at most CLI_CONSOLE_WIDTH columns, ASCII):
 *   work 12m30s: book 1.52M pos, 128.3k thought (+2013, 3.4/s); workers 2
 *   live, 1 gone; eta 1h05m; start +20 2g2f 8c8d 2f2e 4a3b ...
 * (+2013: the results stored by this run.) The root is the first one the
 * coordinator grows from ("start" for the start position, "root 1/3" with
 * several: listed at the start); its line as much as fits. With the largest
 * figures (15.02M pos, 123 workers, eta 12h10m) the root's name and value
 * still fit.
 */
static void console_line(char *buf, Console *k, const CoordStatus *st)
{
	double el = (clock_ms_f() - k->start_ms) / 1000;
	char a[32], b[32], c[32];
	uint64_t positions = 0;
	Move line[BOOKDB_LINE_MAX];
	int value = 0, n = 0;
	BookTxn *txn;
	if (bookdb_txn_begin(&txn, k->db, false) == 0) {
		if (bookdb_count(&positions, txn, BOOKDB_POS) < 0) positions = 0;
		if (position_parse(k->pos, k->root, NULL) == 0)
			n = bookdb_line(line, BOOKDB_LINE_MAX, &value, k->rec, txn, k->pos);
		bookdb_txn_abort(txn);
	}
	size_t len = 0;
	buf[0] = 0;
	duration_text(a, sizeof a, el);
	(void)put(buf, &len, "work %s: ", a);
	count_text(a, sizeof a, (double)positions);
	count_text(b, sizeof b, (double)st->book_thought);
	count_text(c, sizeof c, (double)st->results);
	/* The coordinator's rate, as its status says it (results_per_s: over
	 * the last minute, or since the first result in the first). */
	double rate = st->results_per_s;
	(void)put(buf, &len, "book %s pos, %s thought (+%s, %.*f/s); ", a, b, c, rate < 100 ? 1 : 0,
	          rate);
	(void)put(buf, &len, "workers %zu live, %zu gone", st->nworkers, st->ngone);
	/* Failed tries (an engine failing every position shows here, not only in
	 * the worker's log). */
	if (st->failed) (void)put(buf, &len, ", %llu failed", (unsigned long long)st->failed);
	if (st->spot_quarantines)
		(void)put(buf, &len, ", %llu quarantined",
		          (unsigned long long)st->spot_quarantines);
	/* The budget's end: the nearer of --positions at the last minute's rate
	 * and --time. */
	double eta = -1;
	if (k->max_results && rate > 0)
		eta = (double)(k->max_results > st->results ? k->max_results - st->results : 0) /
		      rate;
	if (k->max_s > 0 && (eta < 0 || k->max_s - el < eta)) eta = k->max_s - el;
	if (eta >= 0) {
		duration_text(a, sizeof a, eta);
		(void)put(buf, &len, "; eta %s", a);
	} else if (k->max_results) {
		(void)put(buf, &len, "; eta ?"); /* no results yet */
	}
	if (k->nroots > 1)
		snprintf(a, sizeof a, "root 1/%zu", k->nroots);
	else
		snprintf(a, sizeof a, "%s", strcmp(k->root, "startpos") ? "root" : "start");
	if (n <= 0) {
		(void)put(buf, &len, "; %s: no book move yet", a);
		return;
	}
	if (!put(buf, &len, "; %s %+d", a, value)) return;
	/* The line, as much of it as fits, "..." when cut. */
	for (int i = 0; i < n; i++) {
		char mv[USI_MOVE_MAX];
		usi_move_write(line[i], mv);
		bool last = i + 1 == n;
		if (len + 1 + strlen(mv) + (last ? 0 : 4) > CLI_CONSOLE_WIDTH) {
			(void)put(buf, &len, " ...");
			break;
		}
		(void)put(buf, &len, " %s", mv);
	}
}

/* How wait_stop ended besides a signal. */
enum { STOP_FAILED = 0, STOP_BUDGET = -1 };

/* Waits for SIGTERM/SIGINT, the budget (--positions, --time) or the
 * coordinator's failure; with work, the console's line every k->every_s.
 * Returns the signal, STOP_BUDGET or STOP_FAILED. */
static int wait_stop(sigset_t *sigs, ApiWork *work, Console *k)
{
	double last = clock_ms_f();
	for (;;) {
		/* A second at most (the budget and a failure are looked at), less
		 * when the next line is due sooner (--status-seconds 0.5). */
		int64_t wait_ms = work ? 1000 : 3600000;
		if (work && k->every_s > 0) {
			double due = last + k->every_s * 1000 - clock_ms_f();
			if (due < wait_ms) wait_ms = due > 1 ? (int64_t)due : 1;
		}
		struct timespec ts = {.tv_sec = wait_ms / 1000,
		                      .tv_nsec = (wait_ms % 1000) * 1000000L};
		int sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0) return sig;
		if (!work) continue;
		if (api_work_failed(work)) return STOP_FAILED;
		double now = clock_ms_f();
		bool say = k->every_s > 0 && now - last >= k->every_s * 1000;
		if (!say && !k->max_results && !(k->max_s > 0)) continue;
		CoordStatus st;
		/* The line and --verbose's block after it in one write: the
		 * minimax thread's lines (serve: minimax: ...) come between
		 * two lines, never between these. */
		char said[CLI_CONSOLE_WIDTH + 2 + 2048] = "";
		if (api_work_status(work, &st) == 0) {
			if (say) {
				char line[CLI_CONSOLE_WIDTH + 1];
				console_line(line, k, &st);
				snprintf(said, sizeof said, "%s\n", line);
				last = now;
			}
		}
		k->spent = k->max_results && st.results >= k->max_results         ? "--positions"
		           : k->max_s > 0 && now - k->start_ms >= k->max_s * 1000 ? "--time"
		                                                                  : NULL;
		bool done = k->spent != NULL;
		coord_status_free(&st);
		if (say && k->verbose) {
			char line[2048];
			api_work_status_line(work, line, sizeof line, true);
			size_t n = strlen(said);
			snprintf(said + n, sizeof said - n, "%s\n", line);
		}
		if (said[0]) fputs(said, stderr);
		if (done) return STOP_BUDGET;
	}
}

/* How long a run whose budget is spent waits for its workers at most: past
 * the longest wait between a worker's retries (its --max-backoff, 30 s). */
#define OVER_LINGER_S 40

/*
 * The budget (spent: its option) is spent: acquires are answered 410 (the
 * run is over) while the workers send what they hold, until no lease is out
 * and every worker live was told (a worker stops at its first 410 once it
 * has sent its results), OVER_LINGER_S at most, or a signal. Returns
 * STOP_BUDGET, or the signal.
 */
static int linger(sigset_t *sigs, ApiWork *work, const char *spent)
{
	char why[160];
	snprintf(why, sizeof why, "the run is over: its budget (%s) is spent", spent);
	api_work_over(work, why);
	double t0 = clock_ms_f();
	bool said = false;
	for (;;) {
		CoordStatus st;
		uint64_t out = 0;
		size_t live = 0;
		if (api_work_status(work, &st) == 0) {
			out = st.leases_live;
			live = st.nworkers;
		}
		coord_status_free(&st);
		size_t told = api_work_over_told(work);
		if (!out && told >= live) break;
		char text[400];
		if (clock_ms_f() - t0 >= OVER_LINGER_S * 1000.0) {
			snprintf(text, sizeof text,
			         "serve: stopping after %d s with %llu lease%s out and %zu of %zu "
			         "workers told",
			         OVER_LINGER_S, (unsigned long long)out, out == 1 ? "" : "s", told,
			         live);
			cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
			break;
		}
		if (!said) {
			snprintf(
			    text, sizeof text,
			    "serve: the budget (%s) is spent: acquires answered 410 (the run is "
			    "over), waiting up to %d s for the workers' last results (%llu lease%s "
			    "out, %zu worker%s live)",
			    spent, OVER_LINGER_S, (unsigned long long)out, out == 1 ? "" : "s",
			    live, live == 1 ? "" : "s");
			cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
			said = true;
		}
		struct timespec ts = {0, 100 * 1000000L};
		int sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0) {
			fprintf(stderr, "serve: %s: not waiting for the workers\n",
			        sig == SIGTERM ? "SIGTERM" : "SIGINT");
			return sig;
		}
	}
	fprintf(stderr, "serve: the budget (%s) is spent: finishing the requests in flight\n",
	        spent);
	return STOP_BUDGET;
}

/* A selector's budget whose key filter and node map leave its graph less
 * room than GRAPH_ROOM, or than 16 bytes a position of a smaller book: said
 * once at the start, with a --memory that leaves it GRAPH_WANT (32 bytes a
 * position of a smaller book). Short of that the graph is trimmed at nearly
 * every commit and built again from the book, and the selection falls behind
 * the workers (at 10^8 positions 80 MiB of room gave 420-800 results/s, 290
 * MB 1,908, 470 MB 1,994; docs/cluster.md, --memory). --preload trims
 * nothing. */
#define GRAPH_ROOM ((uint64_t)256 << 20)
#define GRAPH_WANT ((uint64_t)512 << 20)
static void warn_graph_room(Coord *coord, uint64_t budget, uint64_t positions)
{
	CoordStatus st;
	if (!budget || coord_status(coord, &st, 0) < 0) return;
	uint64_t fixed = st.select_fixed;
	coord_status_free(&st);
	uint64_t room = budget > fixed ? budget - fixed : 0;
	uint64_t least = positions * 16 < GRAPH_ROOM ? positions * 16 : GRAPH_ROOM;
	if (room >= least) return;
	/* The key filter and the room, the node map at most an eighth of the
	 * budget: one size for the book, whatever was given. */
	uint64_t want_room = positions * 32 < GRAPH_WANT ? positions * 32 : GRAPH_WANT;
	double want = 2.0 * 8 / 7 * (double)(sel_filter_bytes(positions) + want_room);
	char wtext[32];
	if (want >= (double)(1 << 30))
		snprintf(wtext, sizeof wtext, "%.1fG", ceil(want / (1 << 30) * 10) / 10);
	else
		snprintf(wtext, sizeof wtext, "%.0fM", ceil(want / (1 << 20)));
	char text[512], b[24], r[24], f[24], left[80];
	if (room)
		snprintf(left, sizeof left, "%s beside its key filter and node map (%s)",
		         memuse_format(room, r, sizeof r), memuse_format(fixed, f, sizeof f));
	else
		snprintf(left, sizeof left,
		         "no room: its key filter and node map alone take %s, more than that",
		         memuse_format(fixed, f, sizeof f));
	snprintf(text, sizeof text,
	         "serve: the selector's budget (%s, half of --memory) leaves its graph %s: "
	         "trimmed at nearly every commit (a trim keeps what the searches need, so the "
	         "selector stays above its budget), the graph is read from the book again and "
	         "again and the selection falls behind; --memory %s or more leaves the graph room",
	         memuse_format(budget, b, sizeof b), left, wtext);
	cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
}

int cmd_serve(int argc, char **argv)
{
	const char *book = NULL;
	Listen listen = {"127.0.0.1", 8080};
	ServerOptions opt = {.log = true};
	/* (Its run is not called: the coordinator calls prepare when there is one.) */
	CoordOptions co = {.kif_bonus = SEL_KIF_BONUS_DEFAULT,
	                   .minimax = bookmm_hook(&serve_minimax),
	                   .spot_rate = 0.01,
	                   .spot_new_rate = 0.5,
	                   .spot_new_results = 500,
	                   .spot_tolerance = COORD_SPOT_TOLERANCE,
	                   .spot_keep = 1000};
	co.minimax.prepare = serve_minimax_prepare;
	uint64_t memory = memuse_default_budget();
	const char *tokens_path = NULL;
	bool quiet = false, work_on = false, lazy_load = false, per_ip_given = false,
	     history_given = false, no_snapshot = false, ckpt_given = false;
	uint64_t ckpt_s = 0;
	uint64_t request_s = 0, keepalive_s = 0, per_ip = 0, history_s = 0, lease_s = 0,
	         minimax_s = 0;
	int64_t slice_ms = 0;
	bool slice_given = false;
	int64_t ahead = 0;
	bool ahead_given = false;
	double provisional_s = 2;
	Console con = {.every_s = isatty(2) ? 10 : 0};
	uint64_t max_time = 0;
	double status_s = 0;
	bool status_given = false;
	CliBudget cb;
	cli_budget_init(&cb, 1);
	CliPlan cp;
	cli_plan_init(&cp);
	CliAgain again;
	cli_again_init(&again);
	const CliOpt work_opts[] = {
	    CLI_STR("--tokens", &tokens_path, "FILE", "the workers' tokens (default BOOK/tokens)"),
	    CLI_NUM("--lease-seconds", &lease_s, 1, 4000000000, "S",
	            "a lease not answered in S seconds is handed out again (default 600)"),
	    CLI_NUM("--minimax-every", &co.minimax_every, 0, 4000000000, "N",
	            "minimax after N results (default: by time only)..."),
	    CLI_NUM("--minimax-seconds", &minimax_s, 0, 4000000000, "S",
	            "... or S seconds (default 60)"),
	    CLI_NUM("--positions", &con.max_results, 1, CLI_NOMAX, "N",
	            "stop after N results (default: run until stopped)"),
	    CLI_NUM("--time", &max_time, 1, CLI_NOMAX, "S",
	            "stop after S seconds (default: run until stopped)"),
	    CLI_REAL("--status-seconds", &status_s, 0, 86400, "S",
	             "a status line on stderr every S seconds (default 10 on a terminal, else "
	             "none; 0: none)",
	             CLI_TAG(&status_given, true)),
	    CLI_FLAG("--verbose", &con.verbose,
	             "the service thread's timings after each status line and in the summary"),
	    CLI_NUM("--history-seconds", &history_s, 0, 86400, "S",
	            "a point of the work history every S seconds (default 60; 0: none)",
	            CLI_TAG(&history_given, true)),
	    CLI_GROUP(cb.table),
	    CLI_NUM("--kif-bonus", &co.kif_bonus, -VALUE_MATE, VALUE_MATE, "CP",
	            "the selector's bonus for moves played in games (default 100)"),
	    CLI_FLAG("--preload", &co.preload,
	             "the selector reads every key at start (default: each on first use)",
	             .excl = "load"),
	    CLI_FLAG("--lazy-load", &lazy_load,
	             "the selector reads each key on first use (the default, said explicitly)",
	             .excl = "load"),
	    CLI_FN("--memory", &memory, cli_parse_memory, "SIZE",
	           "a size such as 256M or 8G, at least 1M",
	           "the selector keeps to half of SIZE: its key filter and node map, and its graph "
	           "trimmed of what it visited least lately; a whole-book minimax child to the "
	           "other half (SIZE by default a quarter of " CLI_MEMORY_MAY_HAVE
	           "; so an eighth each)"),
	    CLI_FLAG("--no-snapshot", &no_snapshot,
	             "neither read nor write the selector's snapshot (BOOK/" SNAP_FILE ")"),
	    CLI_NUM("--checkpoint-seconds", &ckpt_s, 0, 4000000000, "S",
	            "a checkpoint of the selector every S seconds, read back after a crash "
	            "(default 300; 0: none)",
	            CLI_TAG(&ckpt_given, true)),
	    CLI_NUM("--select-slice-ms", &slice_ms, -1, 10000, "MS",
	            "an acquire selects for at most MS, a longer search goes on between requests "
	            "(default 20; 0: the shortest slices; -1: whole searches in the acquire)",
	            CLI_TAG(&slice_given, true)),
	    CLI_NUM("--select-ahead", &ahead, 0, COORD_MAX_BATCH, "N",
	            "leaves kept selected ahead of the acquires (default: the most asked in one "
	            "of the last rounds; 0: none)",
	            CLI_TAG(&ahead_given, true)),
	    CLI_REAL(
	        "--provisional-after", &provisional_s, 0, 86400, "S",
	        "while the selector's first search has gone on S seconds, or more than an eighth "
	        "of what acquires asked over S seconds was missing, acquires get the leaves the "
	        "book's minimax values lead to (default 2; 0: wait for the search)"),
	    CLI_REAL("--spot-rate", &co.spot_rate, 0, 1, "R",
	             "the share of each token's results another token's worker thinks again "
	             "(default 0.01; 0 with --spot-new-rate 0: no spot checks)"),
	    CLI_REAL("--spot-new-rate", &co.spot_new_rate, 0, 1, "R",
	             "... of a token's first --spot-new-results results (default 0.5)"),
	    CLI_NUM("--spot-new-results", &co.spot_new_results, 0, CLI_NOMAX, "N",
	            "a token's results checked at the new rate (default 500)"),
	    CLI_REAL("--spot-tolerance", &co.spot_tolerance, 0.01, 1, "W",
	             "how far two results may differ, in winning chances (default 0.45)"),
	    CLI_NUM("--spot-take-out", &co.spot_keep, 0, CLI_NOMAX, "N",
	            "a token put in quarantine loses its results since its last good check and "
	            "at least its last N (default 1000)"),
	    CLI_GROUP(cp.table),
	    CLI_GROUP(again.table),
	    CLI_TABLE_END,
	};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_FN("--listen", &listen, parse_listen, "ADDR:PORT",
	           "ADDR:PORT (an IPv4 address, no host name), e.g. 127.0.0.1:8080",
	           "where to listen (default 127.0.0.1:8080)"),
	    CLI_NUM("--threads", &opt.threads, 1, 100000, "N",
	            "request threads (default: the cores; 16 with --work)"),
	    CLI_NUM("--max-connections", &opt.max_connections, 1, 100000, "N",
	            "open connections in all (default 1024)"),
	    CLI_NUM("--per-ip-connections", &per_ip, 0, 100000, "N",
	            "open connections from one address (default 64; 0: no limit, behind a proxy)",
	            CLI_TAG(&per_ip_given, true)),
	    CLI_NUM("--request-seconds", &request_s, 1, 3600, "S",
	            "a request, head and body, must arrive whole within S seconds (default 10)",
	            .alias = "--header-seconds"),
	    CLI_NUM("--keepalive-seconds", &keepalive_s, 1, 3600, "S",
	            "a kept-alive connection's next request must start within S seconds of "
	            "the last answer (default 30)"),
	    CLI_FLAG("--no-cors", &opt.no_cors, "no Access-Control-Allow-Origin: * on the API"),
	    CLI_FLAG("--quiet", &quiet, "no line a request on stderr"),
	    CLI_FLAG("--work", &work_on, "be the cluster coordinator (the options below)"),
	    CLI_GROUP(work_opts, .needs = "--work"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"serve", opts, "docs/server.md, docs/cluster.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	/* No array of the service goes to a file (shogi/bigmem.h): a file's
	 * pages are shared with the checkpoint's forked child, which must see
	 * the memory as it was at the fork (copy-on-write), not as the service
	 * goes on changing it. */
	bigmem_configure(0, NULL);
	char *addr = listen.addr;
	opt.port = listen.port;
	opt.log = !quiet;
	if (request_s) opt.request_ms = (unsigned)request_s * 1000;
	if (keepalive_s) opt.keepalive_ms = (unsigned)keepalive_s * 1000;
	if (per_ip_given) opt.per_ip = per_ip ? (unsigned)per_ip : SERVER_PER_IP_OFF;
	if (history_given) co.history_seconds = history_s ? (double)history_s : -1; /* 0: none */
	if (lease_s) co.lease_seconds = (double)lease_s;
	if (slice_given)
		co.select_slice_ms = slice_ms < 0 ? -1 : slice_ms ? (double)slice_ms : 1e-3;
	if (ahead_given) co.select_ahead = ahead ? ahead : -1; /* 0: none */
	co.provisional_after_ms = provisional_s * 1000;        /* 0: never */
	if (status_given) con.every_s = status_s;
	con.max_s = (double)max_time;
	co.minimax_seconds = (double)minimax_s;
	co.budget = cb.budget;
	co.multipv = cb.multipv;
	/* A worker holds two batches, each a position an engine: a lease shorter
	 * than two searches expires under it, every position a failed try
	 * (docs/cluster.md, "Workers and deployment"). Said, not refused: a
	 * nodes budget's time is not known here. */
	if (work_on && cb.budget.kind == SEARCH_BUDGET_MOVETIME) {
		double lease = lease_s ? (double)lease_s : 600; /* coord.h: 0 is 600 */
		if (lease * 1000 < 2.0 * (double)cb.budget.amount)
			fprintf(
			    stderr,
			    "serve: --lease-seconds %.0f is less than two searches of --movetime "
			    "%llu: a worker holds two batches, so its leases would expire under "
			    "it, "
			    "every position a failed try; give --lease-seconds %.0f or more\n",
			    lease, (unsigned long long)cb.budget.amount,
			    2.0 * (double)cb.budget.amount / 1000 + 5);
	}
	co.select_memory = memory / 2;
	if (memory - co.select_memory > whole_book_memory)
		whole_book_memory = memory - co.select_memory;
	/* The incremental runs' kept graph within the same half: folded into a
	 * new graph file when its changes pass a quarter of it. */
	serve_minimax.memory = whole_book_memory;
	serve_minimax_verbose = con.verbose;
	if (work_on && !co.minimax_every && !co.minimax_seconds) co.minimax_seconds = 60;
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
	char spath[BOOKDB_PATH_LEN]; /* the snapshot's path: co.snapshot points here */
	static char root1[POSITION_SPEC_MAX(POS_MAX_STATES)]; /* con.root */
	BookDB *db = NULL;
	ServerTokens *tokens = NULL;
	Coord *coord = NULL;
	ApiWork *work = NULL;
	Server *s = NULL;
	/* The coordinator writes: read-write, with a map large enough that it
	 * never grows under the server's readers; either way, a book that is not
	 * there is an error, not a new one. */
	BookDBOptions bo =
	    work_on
	        ? (BookDBOptions){.must_exist = true, .map_size = (size_t)1 << 38, .random = true}
	        : (BookDBOptions){.read_only = true, .random = true};
	if (bookdb_open(&db, book, &bo, err) < 0) {
		joseki_error("serve: %s", err);
		return 1;
	}
	/* Served for days without the lock file: said once (bookdb_unlocked). */
	if (bookdb_unlocked(db))
		fprintf(stderr,
		        "serve: %s is read without LMDB's lock file (this user may not write "
		        "%s/lock.mdb): a writer at work on the book meanwhile can show the server "
		        "pages it is rewriting; serve a copy, or give write access to lock.mdb\n",
		        book, book);
	/* The coordinator's selection is the book's only one (a think beside it
	 * would lease the same positions); held until the process ends. */
	int sel_fd = -1;
	if (work_on && bookdb_selection_lock(&sel_fd, book, "serve --work", err) < 0) {
		joseki_error("serve: %s", err);
		bookdb_free(db);
		return 1;
	}
	uint64_t positions = 0;
	BookTxn *txn;
	int crc = bookdb_txn_begin(&txn, db, false);
	if (crc == 0) {
		crc = bookdb_count(&positions, txn, BOOKDB_POS);
		bookdb_txn_abort(txn);
	}
	if (crc < 0) {
		joseki_error("serve: %s: counting the positions: %s", book, bookdb_strerror(crc));
		goto fail;
	}
	if (work_on) {
		char tpath[BOOKDB_PATH_LEN];
		snprintf(tpath, sizeof tpath, "%s/tokens", book);
		if (!tokens_path) tokens_path = tpath;
		if (server_tokens_open(&tokens, tokens_path, err) < 0) {
			if (access(tokens_path, F_OK) < 0)
				joseki_error("serve: %s (make one with: joseki token add %s NAME)",
				             err, tokens_path);
			else
				joseki_error("serve: %s", err);
			goto fail;
		}
		server_tokens_set_log(tokens, tokens_log, NULL);
		RootList roots = {0}, paths = {0};
		/* Said whatever --quiet (which is about requests), as each root is below. */
		if (cli_plan_roots(&cp, &roots, db, false, "serve", &paths) < 0) {
			roots_free(&roots);
			roots_free(&paths);
			goto fail;
		}
		co.plan = cp.plan;
		co.roots = (const char *const *)roots.specs;
		co.root_weights = roots.weights;
		co.nroots = (int)roots.n;
		co.paths = (const char *const *)paths.specs;
		co.npaths = paths.n;
		/* A re-analysis leases its list (kept until the end) and keeps no
		 * snapshot of the selector. */
		if (again.on && cli_again_prepare(&again, db, &roots, false, "serve") < 0) {
			roots_free(&roots);
			roots_free(&paths);
			goto fail;
		}
		co.again = again.keys;
		co.nagain = again.n;
		co.campaign = again.campaign;
		/* The roots, said once: the console's line names the first. */
		for (size_t r = 0; r < roots.n; r++)
			fprintf(stderr, "serve: root %zu: %s\n", r + 1, roots.specs[r]);
		/* The console's line: from the start position when the roots come
		 * with the way to them (its lines are kept analysed), else the first
		 * root's. */
		bool from_start = paths.n > 0 || !roots.n;
		snprintf(root1, sizeof root1, "%s", from_start ? "startpos" : roots.specs[0]);
		con.nroots = from_start ? 1 : roots.n;
		snprintf(spath, sizeof spath, "%s/%s", book, SNAP_FILE);
		/* (--preload: none; a whole load is not written.) */
		if (!no_snapshot && !again.on && !co.preload) co.snapshot = spath;
		co.checkpoint_seconds = ckpt_given ? (double)ckpt_s : 300;
		fprintf(stderr, "serve: loading the selector over %s\n", book);
		/* The kept graph stays in memory from one incremental run to the
		 * next (none when out of memory: each run then reads it). */
		serve_minimax.keep = bookmm_keep_new();
		int orc = coord_open(&coord, db, &co, err);
		roots_free(&roots); /* the coordinator keeps its own copies */
		roots_free(&paths);
		if (orc < 0) {
			joseki_error("serve: %s", err);
			goto fail;
		}
		const char *note;
		double sms;
		if (coord_snapshot_restored(coord, &note, &sms))
			cli_snapshot_restored("serve", spath, sms, note);
		else if (note[0])
			cli_snapshot_unused("serve", spath, note);
		/* None there: a first start, or a kill before any checkpoint. */
		else if (co.snapshot)
			fprintf(stderr,
			        "serve: no selector snapshot at %s: the first search starts from "
			        "scratch\n",
			        spath);
		else if (no_snapshot)
			fprintf(stderr,
			        "serve: --no-snapshot: the first search starts from scratch, "
			        "and the selector is not saved at the stop\n");
		/* Before the service thread: the Coord is then its alone. */
		if (!co.preload) warn_graph_room(coord, co.select_memory, positions);
		if (api_work_start(&work, coord, tokens) < 0) {
			joseki_error("serve: cannot start the work thread");
			goto fail;
		}
		opt.work = work;
		if (!opt.threads) opt.threads = 16; /* requests wait for the group commit */
	}
	if (server_start(&s, db, &opt, err) < 0) {
		joseki_error("serve: %s", err);
		goto fail;
	}
	fprintf(stderr, "serve: %s: %llu positions; listening on http://%s:%u/%s\n", book,
	        (unsigned long long)positions, addr, server_port(s), work ? " (work)" : "");
	con.db = db;
	con.root = root1[0] ? root1 : "startpos";
	con.start_ms = clock_ms_f();
	con.pos = malloc(sizeof *con.pos);
	con.rec = malloc(sizeof *con.rec);
	if (work && (!con.pos || !con.rec)) con.every_s = 0; /* no room: no line */
	int sig = wait_stop(&sigs, work, &con);
	free(con.pos);
	free(con.rec);
	if (sig > 0)
		fprintf(stderr, "serve: %s: finishing the requests in flight\n",
		        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	else if (sig == STOP_BUDGET)
		sig = linger(&sigs, work, con.spent);
	else
		fprintf(stderr, "serve: the coordinator failed; stopping (restart to resume)\n");
	int cut = server_stop(s);
	if (cut > 0)
		fprintf(stderr,
		        "serve: %d request%s not finished 2 s after the stop: %s connection%s "
		        "closed unanswered\n",
		        cut, cut == 1 ? "" : "s", cut == 1 ? "its" : "their", cut == 1 ? "" : "s");
	char line[2048] = "";
	if (work) api_work_status_line(work, line, sizeof line, con.verbose);
	api_work_stop(work);
	int status = sig != STOP_FAILED ? 0 : 1;
	char cerr[COORD_ERRLEN] = "";
	/* The service committed its last round; whatever is left is committed
	 * here, where a failure can still be said (coord_free's cannot), and the
	 * selector's snapshot written for the next start. */
	if (sig != STOP_FAILED && coord) {
		double save_ms;
		crc = coord_close(coord, &save_ms, cerr);
		if (crc < 0) {
			joseki_error("serve: %s", cerr[0] ? cerr : coord_strerror(crc));
			status = 1;
		} else if (co.snapshot) {
			fprintf(stderr, "serve: the selector saved to %s in %.2f s\n", co.snapshot,
			        save_ms / 1000);
		}
	} else {
		coord_free(coord);
	}
	/* Results the periodic minimax has not backed up yet: said, with what to
	 * run before an export (which says it too). */
	if (work_on) cli_minimax_backlog("serve", db, book);
	bookmm_keep_free(serve_minimax.keep);
	server_tokens_free(tokens);
	bookdb_free(db);
	cli_again_free(&again);
	fprintf(stderr, "serve: stopped\n");
	if (line[0]) printf("%s\n", line);
	return status;
fail:
	api_work_stop(work);
	coord_free(coord);
	bookmm_keep_free(serve_minimax.keep);
	server_tokens_free(tokens);
	bookdb_free(db);
	cli_again_free(&again);
	return 1;
}
