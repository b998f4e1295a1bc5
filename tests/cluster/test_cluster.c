/*
 * tests/cluster/test_cluster.c — the cluster's end-to-end test: a real
 * coordinator (`joseki serve BOOK --work`, short leases, periodic incremental
 * minimax) and three real workers (`joseki worker --engine builtin`), all
 * child processes on 127.0.0.1, on a book of the floodgate fixtures. During
 * the run one worker is killed with SIGKILL mid-lease, one is stopped
 * (SIGSTOP) past its lease's expiry and then continued (it submits late), and
 * the coordinator is killed with SIGKILL and started again on the same port.
 * Each worker writes a journal (--journal: leases received, results accepted,
 * aborts, with the times of each exchange); the checks read the journals and
 * the book:
 *  - every result a worker was told was accepted is thought in the book, and
 *    the book gained exactly those positions (plus, possibly, positions whose
 *    submission the SIGKILLed worker sent but never saw answered);
 *  - the restarted coordinator's result count equals the thought positions
 *    the book gained while it ran;
 *  - no position was leased while another lease of it lived: a later lease
 *    of a key was received after the earlier lease's expiry (or the earlier
 *    worker's abort or failed try was sent), never after an accepted
 *    analysis of it, and an expired position went to a different worker;
 *  - each live worker's journal agrees with its summary line (nothing
 *    rejected, nothing unsent), and no lease is left live at the end;
 *  - `joseki check` passes, and the incremental `joseki minimax` over the
 *    book gives the same export (--moves all) as `minimax --full` on a copy.
 * TEST_CLUSTER_KEEP=1 keeps the run's directory (journals, logs, book).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/record.h"
#include "shogi/clock.h"
#include "shogi/zobrist.h"
#include "tests/support/support.h"

#define NW 3
#define LEASE_S 3
#define MAX_EV 20000

/* One journal line of one worker. */
typedef struct {
	int worker;
	char what[8]; /* lease, result, failed, abort */
	double sent, recv;
	char id[64];
	double expires_in;
	int nkeys;
	char (*keys)[KEY_HEX_LEN];
} Ev;

typedef struct {
	char *dir;
	char book[512], copy[512], log[512], out[512];
	char tok[NW][512], journal[NW][512], wout[NW][512], werr[NW][512];
	pid_t coord, w[NW];
	int port;
	Ev *ev;
	int nev;
} Fx;

static int setup(void **state)
{
	Fx *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->book, sizeof f->book, "%s/book", f->dir);
	snprintf(f->copy, sizeof f->copy, "%s/copy", f->dir);
	snprintf(f->log, sizeof f->log, "%s/serve.log", f->dir);
	snprintf(f->out, sizeof f->out, "%s/serve.out", f->dir);
	for (int i = 0; i < NW; i++) {
		snprintf(f->tok[i], sizeof f->tok[i], "%s/token%d", f->dir, i);
		snprintf(f->journal[i], sizeof f->journal[i], "%s/journal%d", f->dir, i);
		snprintf(f->wout[i], sizeof f->wout[i], "%s/worker%d.out", f->dir, i);
		snprintf(f->werr[i], sizeof f->werr[i], "%s/worker%d.err", f->dir, i);
	}
	f->ev = calloc(MAX_EV, sizeof *f->ev);
	*state = f;
	return 0;
}

static void kill_wait(pid_t *pid, int sig)
{
	if (*pid > 0) {
		kill(*pid, SIGCONT);
		kill(*pid, sig);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

static int teardown(void **state)
{
	Fx *f = *state;
	for (int i = 0; i < NW; i++) kill_wait(&f->w[i], SIGKILL);
	kill_wait(&f->coord, SIGKILL);
	for (int i = 0; i < f->nev; i++) free(f->ev[i].keys);
	free(f->ev);
	if (getenv("TEST_CLUSTER_KEEP")) /* journals, logs and book, to look at */
		fprintf(stderr, "kept %s\n", f->dir);
	else
		ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Starts the coordinator on port (0: any); returns its port. The log is
 * appended to, so a restart's start line is the second one. */
static int start_coordinator(Fx *f, int port)
{
	char listen[64];
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	char *s0 = ts_read_file(f->log, NULL);
	size_t from = s0 ? strlen(s0) : 0;
	free(s0);
	char lease[16];
	snprintf(lease, sizeof lease, "%d", LEASE_S);
	/* Without spot checks: an accepted result is in the book at once, and a
	 * position once analysed is never leased again, which the checks below
	 * rely on (spot checks: tests/cluster/test_spot.c). --memory 2M: the
	 * selector keeps to 1 MB, its graph trimmed after a commit past it
	 * (docs/bookgen.md, "The graph within a budget"; the trims themselves:
	 * tests/cluster/test_coord.c). */
	char *argv[] = {
	    (char *)ts_joseki(), "serve", f->book,       "--work", "--listen",        listen,
	    "--movetime",        "30",    "--multipv",   "2",      "--lease-seconds", lease,
	    "--minimax-every",   "15",    "--spot-rate", "0",      "--spot-new-rate", "0",
	    "--memory",          "2M",    "--quiet",     NULL};
	f->coord = ts_spawn(argv, f->out, f->log, true);
	for (int i = 0; i < 600; i++) {
		char *s = ts_read_file(f->log, NULL);
		const char *p =
		    s && strlen(s) > from ? strstr(s + from, "http://127.0.0.1:") : NULL;
		int got = p && strchr(p, '/') ? atoi(p + 17) : 0;
		free(s);
		if (got > 0) return got;
		usleep(25000);
	}
	fail_msg("the coordinator did not start");
	return 0;
}

static void start_worker(Fx *f, int i)
{
	char url[64], name[16];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
	snprintf(name, sizeof name, "w%d", i);
	char *argv[] = {(char *)ts_joseki(), "worker",   "--server", url,         "--token-file",
	                f->tok[i],           "--engine", "builtin",  "--engines", "1",
	                "--max-backoff",     "1",        "--name",   name,        "--journal",
	                f->journal[i],       "--quiet",  NULL};
	f->w[i] = ts_spawn(argv, f->wout[i], f->werr[i], true);
}

/* Lines starting with what in a worker's journal. */
static int count_lines(Fx *f, int i, const char *what)
{
	char *s = ts_read_file(f->journal[i], NULL);
	int n = 0;
	size_t k = strlen(what);
	for (char *p = s; p && *p;) {
		if (!strncmp(p, what, k) && p[k] == ' ') n++;
		char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	free(s);
	return n;
}

/* Waits until worker i has at least n lines of what. */
static void wait_lines(Fx *f, int i, const char *what, int n, double secs)
{
	int64_t end = clock_ms() + (int64_t)(secs * 1000);
	while (count_lines(f, i, what) < n) {
		if (clock_ms() > end) fail_msg("worker %d: fewer than %d '%s' lines", i, n, what);
		usleep(50000);
	}
}

static double unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long long thought(Fx *f)
{
	json_t *o = ts_run_json(0, "%s stats %s --json", ts_joseki(), f->book);
	long long n = ts_jint(o, "thought");
	json_decref(o);
	return n;
}

/* Reads the journals (whole lines only) into f->ev. */
static void read_journals(Fx *f)
{
	for (int i = 0; i < f->nev; i++) free(f->ev[i].keys);
	memset(f->ev, 0, MAX_EV * sizeof *f->ev);
	f->nev = 0;
	for (int i = 0; i < NW; i++) {
		char *s = ts_read_file(f->journal[i], NULL);
		assert_non_null(s);
		for (char *line = s; *line;) {
			char *nl = strchr(line, '\n');
			if (!nl) break; /* a line cut by SIGKILL (the worker flushes whole ones) */
			*nl = 0;
			assert_true(f->nev < MAX_EV);
			Ev *e = &f->ev[f->nev];
			e->worker = i;
			int used = 0;
			if (sscanf(line, "%7s %lf %lf %63s%n", e->what, &e->sent, &e->recv, e->id,
			           &used) != 4)
				fail_msg("journal %d: bad line '%s'", i, line);
			char *p = line + used;
			if (!strcmp(e->what, "lease")) {
				int u = 0;
				if (sscanf(p, " %lf%n", &e->expires_in, &u) != 1)
					fail_msg("journal %d: no expires_in: '%s'", i, line);
				p += u;
			}
			e->keys = calloc(256, KEY_HEX_LEN);
			char k[64];
			int u = 0;
			while (e->nkeys < 256 && sscanf(p, " %63s%n", k, &u) == 1) {
				Key kk;
				if (key_from_hex(&kk, k) < 0)
					fail_msg("journal %d: bad key in '%s'", i, line);
				key_to_hex(kk, e->keys[e->nkeys++]);
				p += u;
			}
			if (strcmp(e->what, "abort") && e->nkeys < 1)
				fail_msg("journal %d: no key in '%s'", i, line);
			if (e->recv < e->sent) fail_msg("journal %d: answer before request", i);
			f->nev++;
			line = nl + 1;
		}
		free(s);
	}
}

static bool ev_has(const Ev *e, const char *key)
{
	for (int j = 0; j < e->nkeys; j++)
		if (!strcmp(e->keys[j], key)) return true;
	return false;
}

/* Is key thought in the book (opened read-only by the caller)? */
static bool is_thought(BookTxn *t, const char *hex)
{
	Key k;
	assert_int_equal(key_from_hex(&k, hex), 0);
	BookRecord rec;
	if (bookdb_get(&rec, t, k) != 0) return false;
	return (rec.flags & BOOKDB_REC_THOUGHT) != 0;
}

/* A worker's lease e's key: when the coordinator could have let it go at the
 * earliest (by the worker's clock, which sent the request): the lease's
 * expiry counted from the acquire's sending, an accepted failed try's or the
 * lease's abort's sending. *expired: that time is the expiry. */
static double released_at(Fx *f, const Ev *e, const char *key, bool *expired)
{
	double t = e->sent + e->expires_in * 1000;
	*expired = true;
	for (int i = 0; i < f->nev; i++) {
		const Ev *x = &f->ev[i];
		if (x->worker != e->worker || strcmp(x->id, e->id)) continue;
		bool rel =
		    !strcmp(x->what, "abort") || (!strcmp(x->what, "failed") && ev_has(x, key));
		if (rel && x->sent < t) {
			t = x->sent;
			*expired = false;
		}
	}
	return t;
}

/* No key leased twice while a lease of it lived; none leased after an
 * accepted analysis; an expired one went to another worker. Leases are
 * ordered by id (the coordinator's sequence, kept across restarts): a lease
 * with a larger id was granted later, so its answer must not come before the
 * earlier lease of the same key could have ended. (The answer time, not the
 * send time: the grant lies between them, and a worker stopped inside a
 * request reads its answer late, never early.) Returns the number of keys
 * leased again after an expiry. */
static int check_leases(Fx *f)
{
	int relet = 0;
	for (int i = 0; i < f->nev; i++) {
		const Ev *a = &f->ev[i];
		if (strcmp(a->what, "lease")) continue;
		unsigned long long ida = strtoull(a->id, NULL, 16);
		for (int ka = 0; ka < a->nkeys; ka++) {
			const char *key = a->keys[ka];
			/* The lease of this key granted last before a. */
			const Ev *prev = NULL;
			unsigned long long idp = 0;
			for (int j = 0; j < f->nev; j++) {
				const Ev *b = &f->ev[j];
				if (j == i || strcmp(b->what, "lease") || !ev_has(b, key)) continue;
				unsigned long long idb = strtoull(b->id, NULL, 16);
				if (idb == ida)
					fail_msg("lease %s given to w%d and w%d", a->id, a->worker,
					         b->worker);
				if (idb < ida && (!prev || idb > idp)) {
					prev = b;
					idp = idb;
				}
			}
			for (int j = 0; j < f->nev; j++) {
				const Ev *r = &f->ev[j];
				if (!strcmp(r->what, "result") && ev_has(r, key) &&
				    r->recv < a->sent)
					fail_msg("%s leased to w%d (lease %s) after an analysis of "
					         "it was "
					         "accepted from w%d",
					         key, a->worker, a->id, r->worker);
			}
			if (!prev) continue;
			/* Ids follow grants: the earlier lease was asked for before the
			 * later one was answered. */
			if (prev->sent > a->recv)
				fail_msg(
				    "lease %s (w%d) answered before lease %s (w%d) was asked for",
				    a->id, a->worker, prev->id, prev->worker);
			bool expired;
			double rel = released_at(f, prev, key, &expired);
			if (a->recv < rel)
				fail_msg("%s leased to w%d (lease %s) %.0f ms before w%d's lease "
				         "%s of it "
				         "could have ended",
				         key, a->worker, a->id, rel - a->recv, prev->worker,
				         prev->id);
			if (expired && prev->worker == a->worker)
				fail_msg(
				    "%s: lease %s expired and the position went to the same worker "
				    "w%d again",
				    key, prev->id, a->worker);
			relet += expired;
		}
	}
	return relet;
}

/* Keys of worker i's leases that worker i never had an answer for in that
 * lease (no accepted result or failed try, no abort of the lease). */
static int unanswered(Fx *f, int i, BookTxn *t, int *thought_by_none)
{
	int n = 0;
	for (int e = 0; e < f->nev; e++) {
		const Ev *l = &f->ev[e];
		if (l->worker != i || strcmp(l->what, "lease")) continue;
		for (int k = 0; k < l->nkeys; k++) {
			bool answered = false, accepted = false;
			for (int j = 0; j < f->nev; j++) {
				const Ev *x = &f->ev[j];
				bool same = x->worker == i && !strcmp(x->id, l->id);
				if (same && !strcmp(x->what, "abort")) answered = true;
				if (strcmp(x->what, "result") && strcmp(x->what, "failed"))
					continue;
				if (!ev_has(x, l->keys[k])) continue;
				answered |= same;
				accepted |= !strcmp(x->what, "result");
			}
			if (answered) continue;
			n++;
			if (t && thought_by_none)
				*thought_by_none += !accepted && is_thought(t, l->keys[k]);
		}
	}
	return n;
}

/* Waits until worker i holds leased positions it has no answer for yet. */
static void wait_mid_lease(Fx *f, int i, double secs)
{
	int64_t end = clock_ms() + (int64_t)(secs * 1000);
	for (;;) {
		read_journals(f);
		if (unanswered(f, i, NULL, NULL) > 0) return;
		if (clock_ms() > end) fail_msg("worker %d never held a lease", i);
		usleep(20000);
	}
}

static void test_cluster__workers_killed_stopped_and_a_coordinator_restart(void **state)
{
	Fx *f = *state;
	unsigned long long seed = ts_seed("test_cluster");
	uint64_t rng = seed;
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate", ts_joseki(), f->book), 0);
	for (int i = 0; i < NW; i++)
		assert_int_equal(ts_runf(NULL, NULL, "%s token add %s/tokens w%d > %s", ts_joseki(),
		                         f->book, i, f->tok[i]),
		                 0);
	long long before = thought(f);
	f->port = start_coordinator(f, 0);
	for (int i = 0; i < NW; i++) start_worker(f, i);
	int64_t t0 = clock_ms();

	/* Worker 0: SIGKILL once it has results in, holding a lease (it
	 * prefetches, so it always holds one while working). */
	wait_lines(f, 0, "result", 2 + (int)(ts_rand(&rng) % 8), 30);
	wait_mid_lease(f, 0, 30);
	kill_wait(&f->w[0], SIGKILL);
	/* Worker 1: stopped past its leases' expiry. */
	wait_lines(f, 1, "result", 2 + (int)(ts_rand(&rng) % 4), 30);
	wait_mid_lease(f, 1, 30);
	kill(f->w[1], SIGSTOP);
	double stopped_at = unix_ms();
	/* The coordinator: SIGKILL while worker 1 is stopped, after worker 2
	 * had 1 to 3 more results in (a random moment); started again on the
	 * same port once worker 2 has met its absence. */
	wait_lines(f, 2, "result", count_lines(f, 2, "result") + 1 + (int)(ts_rand(&rng) % 3), 30);
	size_t from = ts_file_size(f->werr[2]);
	kill_wait(&f->coord, SIGKILL);
	long long at_restart = thought(f);
	assert_true(ts_wait_file(f->werr[2], from, "retrying", 30000));
	assert_int_equal(start_coordinator(f, f->port), f->port);
	/* Worker 1 goes on after its leases expired: it submits late. */
	while (unix_ms() < stopped_at + LEASE_S * 1000 + 1500) usleep(50000);
	kill(f->w[1], SIGCONT);
	/* Both live workers get more work in after all that. */
	for (int i = 1; i < NW; i++)
		wait_lines(f, i, "result", count_lines(f, i, "result") + 3, 30);
	/* The end: workers first (they submit and abort), then the coordinator. */
	for (int i = 1; i < NW; i++) kill(f->w[i], SIGTERM);
	for (int i = 1; i < NW; i++) {
		int st = 0;
		waitpid(f->w[i], &st, 0);
		f->w[i] = 0;
		char *o = ts_read_file(f->wout[i], NULL), *e = ts_read_file(f->werr[i], NULL);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("worker %d ended with %d: %s", i, st, e ? e : "");
		/* Nothing refused (a late result is taken), nothing lost. */
		const char *sum = o ? strstr(o, "worker positions ") : NULL;
		if (!sum || !strstr(sum, " rejected 0 unsent 0 "))
			fail_msg("worker %d: %s %s", i, o ? o : "", e ? e : "");
		print_message("w%d: %s", i, sum);
		/* Its journal holds every result and failed try it counted. */
		unsigned long long np = 0, nf = 0;
		assert_int_equal(sscanf(sum, "worker positions %llu failed %llu", &np, &nf), 2);
		assert_int_equal(count_lines(f, i, "result"), np);
		assert_int_equal(count_lines(f, i, "failed"), nf);
		free(o);
		free(e);
	}
	kill(f->coord, SIGTERM);
	int cst = 0;
	waitpid(f->coord, &cst, 0);
	f->coord = 0;
	assert_true(WIFEXITED(cst) && WEXITSTATUS(cst) == 0);
	print_message("cluster run: %.1f s\n", (double)(clock_ms() - t0) / 1000);

	/* The restarted coordinator's count of results stored against the book. */
	long long after = thought(f);
	char *out = ts_read_file(f->out, NULL);
	const char *wl = out ? strstr(out, "work: ") : NULL;
	assert_non_null(wl);
	long long coord_results = atoll(wl + 6);
	assert_true(coord_results > 0); /* the workers carried on after the restart */
	/* The stopped workers aborted every lease they held, none is left live. */
	if (!strstr(wl, " leases 0 live "))
		fail_msg("leases left live after every worker stopped: %s", wl);
	if (coord_results != after - at_restart)
		fail_msg("the restarted coordinator stored %lld results, the book gained %lld "
		         "thought positions meanwhile (%s)",
		         coord_results, after - at_restart, out);
	free(out);

	read_journals(f);
	/* Every accepted analysis is in the book; the book gained exactly those,
	 * plus those the killed worker 0 may have had stored without seeing the
	 * answer (keys of its leases with no accepted result or failed try). */
	BookDB *db = NULL;
	BookDBOptions o = {.read_only = true};
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, f->book, &o, err), 0);
	BookTxn *t = NULL;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	int naccepted = 0, nunsure = 0, nlate = 0, nkilled_held = 0;
	for (int i = 0; i < f->nev; i++) {
		const Ev *e = &f->ev[i];
		bool result = !strcmp(e->what, "result");
		bool dup = false;
		for (int j = 0; result && j < i; j++)
			dup |= !strcmp(f->ev[j].what, "result") &&
			       !strcmp(f->ev[j].keys[0], e->keys[0]);
		if (result && !dup) {
			naccepted++;
			if (!is_thought(t, e->keys[0]))
				fail_msg(
				    "w%d's accepted result for %s (lease %s) is not in the book",
				    e->worker, e->keys[0], e->id);
		}
		/* A late result of the stopped worker: sent after its lease's expiry. */
		for (int j = 0; result && e->worker == 1 && j < f->nev; j++) {
			const Ev *l = &f->ev[j];
			if (l->worker == e->worker && !strcmp(l->what, "lease") &&
			    !strcmp(l->id, e->id) && e->sent > l->recv + l->expires_in * 1000)
				nlate++;
		}
	}
	nkilled_held = unanswered(f, 0, t, &nunsure);
	bookdb_txn_abort(t);
	bookdb_free(db);
	print_message("cluster: %d results accepted, book +%lld thought (%lld before the "
	              "restart), %d keys the killed worker held unanswered (%d thought and "
	              "accepted from no one), %d late results\n",
	              naccepted, after - before, at_restart - before, nkilled_held, nunsure, nlate);
	assert_true(naccepted > 0);
	assert_int_equal(after - before, naccepted + nunsure);
	/* Worker 0 died holding positions; worker 1 sent results after its lease
	 * expired. */
	assert_true(nkilled_held > 0);
	assert_true(nlate > 0);
	/* Leases: no overlap; some positions went out again after an expiry. */
	int relet = check_leases(f);
	print_message("cluster: %d positions leased again after an expiry\n", relet);
	assert_true(relet > 0);

	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), f->book), 0);
	/* Incremental minimax over the book = a fresh full one on a copy. */
	assert_int_equal(ts_runf(NULL, NULL, "cp -r %s %s", f->book, f->copy), 0);
	char *e1 = NULL, *e2 = NULL;
	if (ts_runf(NULL, &e1, "%s minimax %s --quiet", ts_joseki(), f->book) != 0)
		fail_msg("minimax: %s", e1);
	if (ts_runf(NULL, &e2, "%s minimax %s --full --quiet", ts_joseki(), f->copy) != 0)
		fail_msg("minimax --full: %s", e2);
	free(e1);
	free(e2);
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s/inc.db --moves all --quiet",
	                         ts_joseki(), f->book, f->dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s/full.db --moves all --quiet",
	                         ts_joseki(), f->copy, f->dir),
	                 0);
	char p1[600], p2[600];
	snprintf(p1, sizeof p1, "%s/inc.db", f->dir);
	snprintf(p2, sizeof p2, "%s/full.db", f->dir);
	size_t l1 = 0, l2 = 0;
	char *x1 = ts_read_file(p1, &l1), *x2 = ts_read_file(p2, &l2);
	assert_non_null(x1);
	assert_non_null(x2);
	assert_true(l1 > 100);
	if (l1 != l2 || memcmp(x1, x2, l1)) {
		ts_runf(NULL, NULL, "diff %s %s | head -20 >&2", p1, p2);
		fail_msg("the incremental minimax's export differs from the full one's");
	}
	free(x1);
	free(x2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_cluster__workers_killed_stopped_and_a_coordinator_restart, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
