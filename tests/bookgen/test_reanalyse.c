/*
 * tests/bookgen/test_reanalyse.c — `joseki think --reanalyse` and `joseki
 * serve --work --reanalyse` (bookgen/reanalyse.h, docs/bookgen.md
 * "Re-analysis") with the built-in engine on a book of the floodgate
 * fixtures thought shallow: re-analysis raises the depth of exactly the
 * positions its criteria name and changes nothing else (every other record
 * as it was but for minimax's values; game statistics, marks and ply kept);
 * stopped by budgets and by SIGTERM part-way and run again, it thinks as
 * many positions in all as its first list held, then nothing; a coordinator
 * with a worker deepens the same list.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "bookgen/reanalyse.h"
#include "shogi/clock.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

/* A book of the bundled games, 30 positions thought at depth 2, minimax
 * run, a hand mark on a thought move. */
static void shallow_book(const char *book)
{
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "%1$s ingest %2$s tests/data/floodgate --quiet && %1$s think %2$s "
	            "--depth 2 --positions 30 --multipv 4 --quiet && %1$s minimax %2$s "
	            "--quiet",
	            ts_joseki(), book),
	    0);
	json_t *q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), book);
	const char *mv = json_string_value(
	    json_object_get(json_array_get(json_object_get(q, "moves"), 1), "move"));
	assert_int_equal(ts_runf(NULL, NULL, "%s prefer %s startpos %s --note kept --no-minimax",
	                         ts_joseki(), book, mv),
	                 0);
	json_decref(q);
}

/* Every record of book, decoded, with its key (n of them). */
typedef struct {
	Key key;
	BookRecord *rec;
} Rec;

static Rec *all_records(const char *book, size_t *n)
{
	BookDB *db;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &ro, NULL), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	uint64_t count;
	assert_int_equal(bookdb_count(&count, t, BOOKDB_POS), 0);
	Rec *v = calloc(count, sizeof *v);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	Key k;
	const uint8_t *val;
	size_t len, i = 0;
	while (bookdb_iter_next(it, &k, &val, &len) == 1) {
		v[i].key = k;
		v[i].rec = malloc(sizeof *v[i].rec);
		assert_int_equal(bookdb_record_decode(v[i].rec, val, len), 0);
		i++;
	}
	assert_int_equal(i, count);
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	bookdb_free(db);
	*n = i;
	return v;
}

static void free_records(Rec *v, size_t n)
{
	for (size_t i = 0; i < n; i++) free(v[i].rec);
	free(v);
}

static const BookMove *find(const BookRecord *r, Move m)
{
	for (int i = 0; i < r->nmoves; i++)
		if (r->moves[i].move == m) return &r->moves[i];
	return NULL;
}

/* The record's analysis depth (as the criteria read it). */
static int depth_of(const BookRecord *r)
{
	return r->think_depth;
}

/* after against before: the listed positions (thought, depth under 4)
 * deeper, the rest as they were; in both, every move before still there with
 * its statistics and marks, and the ply the same. Returns how many records
 * were deepened. */
static size_t compare(const Rec *before, size_t nb, const Rec *after, size_t na)
{
	assert_int_equal(na, nb);
	size_t deepened = 0;
	for (size_t i = 0; i < nb; i++) {
		const BookRecord *a = before[i].rec, *b = after[i].rec;
		assert_true(key_equal(before[i].key, after[i].key));
		assert_int_equal(a->min_ply, b->min_ply);
		assert_int_equal(a->flags & BOOKDB_REC_THOUGHT, b->flags & BOOKDB_REC_THOUGHT);
		bool listed = (a->flags & BOOKDB_REC_THOUGHT) && depth_of(a) < 4;
		for (int m = 0; m < a->nmoves; m++) {
			const BookMove *x = &a->moves[m], *y = find(b, x->move);
			assert_non_null(y);
			assert_int_equal(x->flags & (BOOKDB_MOVE_STATS | BOOKDB_MOVE_AVOIDED |
			                             BOOKDB_MOVE_PREFERRED),
			                 y->flags & (BOOKDB_MOVE_STATS | BOOKDB_MOVE_AVOIDED |
			                             BOOKDB_MOVE_PREFERRED));
			assert_true(x->count == y->count && x->wins == y->wins &&
			            x->draws == y->draws && x->losses == y->losses);
			assert_int_equal(x->prefer_window, y->prefer_window);
			if (!listed) {
				/* The analysis as it was (minimax's values aside). */
				assert_int_equal(x->flags & BOOKDB_MOVE_EVAL,
				                 y->flags & BOOKDB_MOVE_EVAL);
				assert_true(x->eval == y->eval && x->depth == y->depth &&
				            x->source == y->source);
			}
		}
		if (listed) {
			assert_true(depth_of(b) >= 4);
			deepened++;
		} else {
			assert_int_equal(a->think_depth, b->think_depth);
			assert_int_equal(a->nmoves, b->nmoves);
		}
	}
	return deepened;
}

/* The "reanalyse thought N" of a run's summary. */
static long long thought_of(const char *out)
{
	const char *p = strstr(out, "reanalyse thought ");
	assert_non_null(p);
	return atoll(p + strlen("reanalyse thought "));
}

/* The summary is out's one line: "reanalyse thought ..." and nothing else
 * (no "think thought" line), whose root_value is the start position's value
 * in the book after the run's minimax: the best value query shows among its
 * moves not avoided (the hand mark prefers another, which does not change
 * it). */
static void one_line_with_the_root_value(const char *out, const char *book)
{
	assert_int_equal(strncmp(out, "reanalyse thought ", 18), 0);
	const char *nl = strchr(out, '\n');
	assert_non_null(nl);
	assert_string_equal(nl + 1, "");
	json_t *q = ts_run_json(0, "%s query %s startpos --json", ts_joseki(), book), *m;
	long long best = 0;
	bool any = false;
	size_t i;
	json_array_foreach(json_object_get(q, "moves"), i, m)
	{
		json_t *v = json_object_get(m, "value");
		if (!json_is_integer(v) || json_is_true(json_object_get(m, "avoided"))) continue;
		if (!any || json_integer_value(v) > best) best = json_integer_value(v);
		any = true;
	}
	assert_true(any);
	char want[64];
	snprintf(want, sizeof want, " root_value %lld ", best);
	json_decref(q);
	if (!strstr(out, want)) fail_msg("wanted '%s' in: %s", want, out);
	assert_non_null(strstr(out, " root startpos\n"));
}

/* Runs argv (stdout to outpath, stderr to errpath), stops it with SIGTERM
 * once its stderr says needle, and returns its stdout (free it) once it has
 * exited 0. */
static char *run_until(char *const argv[], const char *outpath, const char *errpath,
                       const char *needle)
{
	pid_t pid = ts_spawn(argv, outpath, errpath, false);
	assert_true(ts_wait_file(errpath, 0, needle, 120000));
	kill(pid, SIGTERM);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return ts_read_file(outpath, NULL);
}

static void test_reanalyse__raises_depths_and_changes_nothing_else(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600];
	snprintf(book, sizeof book, "%s/book", dir);
	shallow_book(book);
	size_t nb, na;
	Rec *before = all_records(book, &nb);
	size_t want = 0;
	for (size_t i = 0; i < nb; i++)
		want += (before[i].rec->flags & BOOKDB_REC_THOUGHT) && depth_of(before[i].rec) < 4;
	assert_int_equal(want, 30);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s think %s --reanalyse --below-depth 4 --depth 4",
	                         ts_joseki(), book),
	                 0);
	assert_non_null(strstr(err, "re-analysis (--below-depth 4): 30 positions"));
	assert_int_equal(thought_of(out), 30);
	assert_non_null(strstr(out, " replaced 30 left 0 "));
	assert_non_null(strstr(out, " minimax incremental "));
	one_line_with_the_root_value(out, book);
	free(out);
	free(err);
	Rec *after = all_records(book, &na);
	assert_int_equal(compare(before, nb, after, na), 30);
	free_records(after, na);
	/* Done: run again, it finds nothing to think. */
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s think %s --reanalyse --below-depth 4 --depth 4",
	                         ts_joseki(), book),
	                 0);
	assert_int_equal(thought_of(out), 0);
	free(out);
	/* Criteria that name nothing change nothing (every analysis is from
	 * this book's engines, none imported), nor does a shallower new
	 * analysis (depth 1 against 4: the record stays as it was, minimax
	 * values and all). */
	after = all_records(book, &na);
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s think %s --reanalyse --source imported --depth 6",
	                         ts_joseki(), book),
	                 0);
	assert_int_equal(thought_of(out), 0);
	free(out);
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s think %s --reanalyse --below-depth 10 --depth 1",
	                         ts_joseki(), book),
	                 0);
	assert_int_equal(thought_of(out), 30);
	assert_non_null(strstr(out, " replaced 0 left 0 "));
	assert_non_null(strstr(out, " minimax none "));
	one_line_with_the_root_value(out, book);
	free(out);
	Rec *again = all_records(book, &nb);
	for (size_t i = 0; i < nb; i++) {
		const BookRecord *x = after[i].rec, *y = again[i].rec;
		assert_true(x->flags == y->flags && x->think_depth == y->think_depth &&
		            x->nmoves == y->nmoves);
		for (int m = 0; m < x->nmoves; m++)
			assert_true(x->moves[m].move == y->moves[m].move &&
			            x->moves[m].eval == y->moves[m].eval &&
			            x->moves[m].value == y->moves[m].value);
	}
	free_records(again, nb);
	free_records(after, na);
	free_records(before, nb);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

static void test_reanalyse__stopped_and_resumed_it_thinks_each_position_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], errpath[700];
	snprintf(book, sizeof book, "%s/book", dir);
	snprintf(errpath, sizeof errpath, "%s/think.err", dir);
	shallow_book(book);
	long long sum = 0;
	/* Two runs cut by a budget. */
	for (int k = 0; k < 2; k++) {
		char *out = NULL;
		assert_int_equal(ts_runf(&out, NULL,
		                         "%s think %s --reanalyse --below-depth 4 --depth 4 "
		                         "--positions 6 --quiet",
		                         ts_joseki(), book),
		                 0);
		assert_int_equal(thought_of(out), 6);
		sum += 6;
		free(out);
	}
	/* One stopped by SIGTERM once its list is made (deeper analyses, so
	 * that it is mid-run). */
	char outpath[700];
	snprintf(outpath, sizeof outpath, "%s/think.out", dir);
	char *const argv[] = {(char *)ts_joseki(), "think", book,      "--reanalyse",
	                      "--below-depth",     "4",     "--depth", "7",
	                      "--multipv",         "8",     NULL};
	char *out = run_until(argv, outpath, errpath, "positions to think again");
	long long mid = thought_of(out);
	assert_true(mid < 18); /* stopped part-way: some of the 18 left */
	sum += mid;
	free(out);
	/* Then to the end: in all, the first list's 30, each once. */
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL,
	                         "%s think %s --reanalyse --below-depth 4 --depth 4 --quiet",
	                         ts_joseki(), book),
	                 0);
	sum += thought_of(out);
	assert_non_null(strstr(out, " left 0 "));
	free(out);
	assert_int_equal(sum, 30);
	ts_rmtree(dir);
	free(dir);
}

/* The progress line of a re-analysis says how many of its list are left
 * (with how many were thought and replaced), not the book's count of
 * thought positions; the header names the criteria given and no others. A
 * run at a depth that keeps the engine busy, stopped by SIGTERM once a
 * progress line is out: each line's thought and left make the list's 30,
 * and so do the summary's. */
static void test_reanalyse__the_progress_line_says_how_many_of_the_list_are_left(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], outpath[700], errpath[700];
	snprintf(book, sizeof book, "%s/book", dir);
	snprintf(outpath, sizeof outpath, "%s/think.out", dir);
	snprintf(errpath, sizeof errpath, "%s/think.err", dir);
	shallow_book(book);
	/* stderr is a file: the line a second asked for (a minute otherwise). */
	char *const argv[] = {(char *)ts_joseki(), "think", book,      "--reanalyse",
	                      "--below-depth",     "4",     "--depth", "12",
	                      "--status-seconds",  "1",     NULL};
	char *out = run_until(argv, outpath, errpath, " of 30, ");
	char *err = ts_read_file(errpath, NULL);
	assert_non_null(strstr(err, "think: re-analysis (--below-depth 4): 30 positions"));
	int lines = 0;
	for (char *l = strstr(err, "think: "); l; l = strstr(l + 1, "\nthink: ")) {
		if (*l == '\n') l++;
		unsigned long long thought, replaced, left, listed;
		if (sscanf(l, "think: %llu thought again (%llu replaced), left %llu of %llu,",
		           &thought, &replaced, &left, &listed) != 4)
			continue;
		assert_int_equal(listed, 30);
		assert_int_equal(thought + left, 30);
		assert_true(replaced <= thought);
		assert_true(strncmp(l, "think: ", 7) == 0 && !strstr(l, " in the book"));
		lines++;
	}
	assert_true(lines >= 1);
	assert_null(strstr(err, "nodes<"));
	assert_null(strstr(err, "book "));
	free(err);
	long long thought = thought_of(out);
	const char *left = strstr(out, " left ");
	assert_non_null(left);
	assert_int_equal(thought + atoll(left + 6), 30);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

/* GET url with the bearer token; the body (free it). */
static char *http_get(const char *url, const char *token)
{
	CURL *h = curl_easy_init();
	TsBuf b = {0};
	char auth[256];
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	struct curl_slist *hd = curl_slist_append(NULL, auth);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	CURLcode rc = curl_easy_perform(h);
	curl_slist_free_all(hd);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK) {
		free(b.data);
		return NULL;
	}
	return b.data;
}

static void test_reanalyse__a_coordinator_and_its_worker_deepen_the_list(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], tok[700], rtok[700], log[700], out[700];
	snprintf(book, sizeof book, "%s/book", dir);
	snprintf(tok, sizeof tok, "%s/w.tok", dir);
	snprintf(rtok, sizeof rtok, "%s/r.tok", dir);
	snprintf(log, sizeof log, "%s/serve.log", dir);
	snprintf(out, sizeof out, "%s/serve.out", dir);
	shallow_book(book);
	size_t nb, na;
	Rec *before = all_records(book, &nb);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%1$s token add %2$s/tokens w | head -1 > %3$s && %1$s token add "
	                         "%2$s/tokens r --read | head -1 > %4$s",
	                         ts_joseki(), book, tok, rtok),
	                 0);
	char *const sargv[] = {(char *)ts_joseki(),
	                       "serve",
	                       book,
	                       "--work",
	                       "--listen",
	                       "127.0.0.1:0",
	                       "--reanalyse",
	                       "--below-depth",
	                       "4",
	                       "--depth",
	                       "4",
	                       "--minimax-every",
	                       "10",
	                       "--quiet",
	                       NULL};
	pid_t coord = ts_spawn(sargv, out, log, false);
	assert_true(ts_wait_file(log, 0, "listening on http://127.0.0.1:", 60000));
	char *l = ts_read_file(log, NULL);
	assert_non_null(strstr(l, "re-analysis (--below-depth 4): 30 positions"));
	int port = atoi(strstr(l, "http://127.0.0.1:") + 17);
	free(l);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	char *const wargv[] = {(char *)ts_joseki(), "worker", "--server", url,
	                       "--token-file",      tok,      "--engine", "builtin",
	                       "--max-backoff",     "1",      "--quiet",  NULL};
	char wout[700], werr[700];
	snprintf(wout, sizeof wout, "%s/w.out", dir);
	snprintf(werr, sizeof werr, "%s/w.err", dir);
	pid_t worker = ts_spawn(wargv, wout, werr, false);
	/* Until the coordinator has stored all 30 (a generous deadline). */
	char *token = ts_read_file(rtok, NULL);
	token[strcspn(token, "\n")] = 0;
	char surl[160];
	snprintf(surl, sizeof surl, "%s/v1/work/status", url);
	long long results = 0;
	int64_t end = clock_ms() + 120000;
	while (results < 30 && clock_ms() < end) {
		char *body = http_get(surl, token);
		json_t *o = body ? json_loads(body, 0, NULL) : NULL;
		results = o ? json_integer_value(json_object_get(o, "results")) : 0;
		if (o && results >= 30) {
			json_t *r = json_object_get(o, "reanalyse");
			assert_int_equal(json_integer_value(json_object_get(r, "left")), 0);
			assert_int_equal(json_integer_value(json_object_get(r, "replaced")), 30);
		}
		json_decref(o);
		free(body);
		if (results < 30) usleep(100000);
	}
	assert_int_equal(results, 30);
	free(token);
	kill(worker, SIGTERM);
	waitpid(worker, NULL, 0);
	kill(coord, SIGTERM);
	int status;
	assert_int_equal(waitpid(coord, &status, 0), coord);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --quiet", ts_joseki(), book), 0);
	Rec *after = all_records(book, &na);
	assert_int_equal(compare(before, nb, after, na), 30);
	free_records(after, na);
	free_records(before, nb);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reanalyse__raises_depths_and_changes_nothing_else),
	    cmocka_unit_test(test_reanalyse__stopped_and_resumed_it_thinks_each_position_once),
	    cmocka_unit_test(test_reanalyse__the_progress_line_says_how_many_of_the_list_are_left),
	    cmocka_unit_test(test_reanalyse__a_coordinator_and_its_worker_deepen_the_list),
	};
	shogi_init();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
