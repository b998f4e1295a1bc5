/*
 * tests/server/test_server.c — joseki serve, the real binary on a free
 * loopback port over a real book: every endpoint and error status, /v1/query
 * byte for byte equal to `joseki query --json` on 200 positions (and both
 * refusing the same impossible positions with the same words), answers while
 * a writer commits, 1,000 malformed requests, SIGTERM, and the explorer in a
 * real browser (headless Chromium driven by playwright-core).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "shogi/position.h"
#include "tests/support/support.h"

typedef struct {
	char *dir;
	pid_t pid;
	int port;
	FILE *log; /* the server's stderr */
} Srv;

/* Servers started and not yet stopped: killed at exit, so that a failed
 * test leaves none behind. */
static pid_t g_live[8];

static void kill_live(void)
{
	for (int i = 0; i < 8; i++)
		if (g_live[i] > 0) kill(g_live[i], SIGKILL);
}

static void live(pid_t pid, bool on)
{
	for (int i = 0; i < 8; i++)
		if (on ? g_live[i] == 0 : g_live[i] == pid) {
			g_live[i] = on ? pid : 0;
			return;
		}
}

/* A book from the fixtures, thought about a little, with minimax values. */
static char *make_book(void)
{
	char *dir = ts_mkdtemp();
	char *err = NULL;
	int rc = ts_runf(
	    NULL, &err,
	    "%s ingest %s/b tests/data/floodgate --quiet && %s think %s/b --depth 2 --multipv 4 "
	    "--positions 300 --quiet >/dev/null && %s minimax %s/b --quiet >/dev/null",
	    ts_joseki(), dir, ts_joseki(), dir, ts_joseki(), dir);
	if (rc != 0) fail_msg("book: %s", err);
	free(err);
	return dir;
}

/* Starts `joseki serve dir/b --listen 127.0.0.1:0 extra`; reads the port from
 * its start line. */
static void start(Srv *s, const char *dir, const char *extra)
{
	char book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	s->port = ts_serve_start(&s->pid, &s->log, book, extra);
	live(s->pid, true);
	if (!s->port) fail_msg("serve did not say where it listens");
}

/* SIGTERM; the server must exit 0 on its own. */
static void stop(Srv *s)
{
	kill(s->pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 500; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) break;
		usleep(10000);
		if (i == 499) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
			fail_msg("serve did not stop within 5 s of SIGTERM");
		}
	}
	live(s->pid, false);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	fclose(s->log);
}

/* One request; returns the status, *body the answer (free it). */
static long http(CURL *c, int port, const char *method, const char *path, const char *body,
                 char **out, char **headers)
{
	char url[20000];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	TsBuf b = {NULL, 0}, h = {NULL, 0};
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ts_collect);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK) fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (out)
		*out = b.data ? b.data : strdup("");
	else
		free(b.data);
	if (headers)
		*headers = h.data ? h.data : strdup("");
	else
		free(h.data);
	return status;
}

/* status and a JSON error body naming what is wrong. */
static void expect_error(CURL *c, int port, const char *method, const char *path, const char *body,
                         long want, const char *says)
{
	char *out;
	long st = http(c, port, method, path, body, &out, NULL);
	if (st != want)
		fail_msg("%s %.80s: status %ld, %ld expected (%s)", method, path, st, want, out);
	json_t *j = json_loads(out, 0, NULL);
	if (!j || !json_is_string(json_object_get(j, "error")))
		fail_msg("%s %.80s: not a JSON error: %s", method, path, out);
	if (says && !strstr(json_string_value(json_object_get(j, "error")), says))
		fail_msg("%s %.80s: '%s' does not say '%s'", method, path, out, says);
	json_decref(j);
	free(out);
}

static void test_server__every_endpoint_and_every_error(void **state)
{
	(void)state;
	char *dir = make_book();
	/* A mate in one, and the mated position thought (no move). */
	char book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	ts_plant(book, "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1", "G*4c:900 G*5b:31999", 12);
	ts_plant(book, "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1 moves G*5b", "", 255);
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s minimax %s --quiet", ts_joseki(), book) != 0)
		fail_msg("minimax: %s", err);
	free(err);
	Srv s;
	start(&s, dir, "--quiet");
	CURL *c = curl_easy_init();
	char *out, *hdr;
	/* A line that mates ends so, its mating step said as a player reads it. */
	assert_int_equal(http(c, s.port, "GET", "/v1/line?sfen=4k4/9/4P4/9/9/9/9/9/4K4%20b%20G%201",
	                      NULL, &out, NULL),
	                 200);
	if (!strstr(out, "\"move\":\"G*5b\",\"value\":32000,\"mate\":1,") ||
	    !strstr(out, "\"end\":\"mated\""))
		fail_msg("%s", out);
	free(out);
	/* The query, with CORS, and legal_moves. */
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=startpos", NULL, &out, &hdr),
	                 200);
	assert_non_null(strstr(hdr, "Access-Control-Allow-Origin: *"));
	assert_non_null(strstr(hdr, "application/json"));
	json_t *j = json_loads(out, 0, NULL);
	assert_true(json_is_true(json_object_get(j, "in_book")));
	assert_int_equal(json_integer_value(json_object_get(j, "legal_moves")), 30);
	/* Each move as a player writes it: two golds reach 5h, so 4i5h is 右. */
	bool named = false;
	json_t *mv;
	size_t mi;
	json_array_foreach(json_object_get(j, "moves"), mi, mv)
	{
		const char *usi = json_string_value(json_object_get(mv, "move"));
		if (!strcmp(usi, "4i5h"))
			named =
			    !strcmp(json_string_value(json_object_get(mv, "name")), "▲５八金右");
	}
	assert_true(named);
	json_decref(j);
	free(out);
	free(hdr);
	/* position= with a bare move list: the start position and those moves,
	 * as joseki query takes it. */
	char *full;
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=7g7f%203c3d", NULL, &out, NULL),
	                 200);
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=startpos%20moves%207g7f%203c3d",
	                      NULL, &full, NULL),
	                 200);
	assert_string_equal(out, full);
	free(out);
	/* A '+' in a URL is a space (HTTP's form encoding): as such where it can
	 * be nothing else; refused where it can also be a promotion giving
	 * another position (it was read as a space: 8h2b, not 8h2b+, answered
	 * 200); %2B is a promotion. */
	assert_int_equal(
	    http(c, s.port, "GET", "/v1/query?position=startpos+moves+7g7f+3c3d", NULL, &out, NULL),
	    200);
	assert_string_equal(out, full);
	free(out);
	expect_error(c, s.port, "GET", "/v1/query?position=startpos%20moves%207g7f%203c3d%208h2b+",
	             NULL, 400, "a '+' in a URL is a space, and here it can also be a promotion");
	expect_error(c, s.port, "GET", "/v1/line?position=startpos+moves+7g7f+3c3d+8h2b+", NULL,
	             400, "write a promotion's or a promoted piece's '+' as %2B");
	/* A promotion's '+' before the '+' of a space: ambiguous too (it was
	 * answered as 8h2b, the pair read as two spaces). */
	expect_error(c, s.port, "GET", "/v1/query?position=7g7f+3c3d+8h2b++", NULL, 400,
	             "here it can also be a promotion");
	expect_error(c, s.port, "GET", "/v1/query?position=7g7f+3c3d+8h2b++3a4b", NULL, 400,
	             "here it can also be a promotion");
	/* A mistake where a '+' can only be a space gets no word about '+'. */
	char *noise = NULL;
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=startpos+moves+7g7f+7g7f", NULL,
	                      &noise, NULL),
	                 400);
	if (!strstr(noise, "illegal move 2 '7g7f'") || strstr(noise, "a '+' in a URL"))
		fail_msg("%s", noise);
	free(noise);
	static const char HORSE[] = "\"sfen\":\"lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/"
	                            "7R1/LNSGKGSNL w B 4\"";
	const char *promoted[] = {"/v1/query?position=startpos%20moves%207g7f%203c3d%208h2b%2B",
	                          "/v1/query?position=startpos+moves+7g7f+3c3d+8h2b%2B",
	                          /* Only the '+' as itself reads: taken so. */
	                          "/v1/query?sfen=lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/"
	                          "7R1/LNSGKGSNL%20w%20B%204",
	                          "/v1/query?sfen=lnsgkgsnl/1r5%2BB1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/"
	                          "7R1/LNSGKGSNL+w+B+4"};
	for (size_t k = 0; k < sizeof promoted / sizeof *promoted; k++) {
		assert_int_equal(http(c, s.port, "GET", promoted[k], NULL, &out, NULL), 200);
		if (!strstr(out, HORSE)) fail_msg("%s: %s", promoted[k], out);
		free(out);
	}
	/* A promoted piece's '+' unescaped breaks the SFEN: the error says why. */
	expect_error(c, s.port, "GET",
	             "/v1/query?sfen=lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/"
	             "LNSGKGSNL+w+B+4",
	             NULL, 400, "(a '+' in a URL is a space: write a promotion's");
	free(full);
	/* sfen= with a bare SFEN; a position not in the book. */
	assert_int_equal(http(c, s.port, "GET", "/v1/query?sfen=4k4/9/9/9/9/9/9/9/4K4%20b%20-%201",
	                      NULL, &out, NULL),
	                 200);
	assert_non_null(strstr(out, "\"in_book\":false"));
	assert_non_null(strstr(out, "\"legal_moves\":5"));
	free(out);
	/* The line: best moves from the start position, each with its value. */
	assert_int_equal(
	    http(c, s.port, "GET", "/v1/line?position=startpos&plies=6", NULL, &out, NULL), 200);
	j = json_loads(out, 0, NULL);
	json_t *line = json_object_get(j, "line");
	assert_true(json_array_size(line) >= 1 && json_array_size(line) <= 6);
	assert_non_null(json_object_get(json_array_get(line, 0), "value"));
	for (size_t k = 0; k < json_array_size(line); k++)
		assert_true(json_string_length(json_object_get(json_array_get(line, k), "name")) >=
		            9);
	json_decref(j);
	free(out);
	/* Stats: the cheap fields at once, the scan's after it ran. */
	assert_int_equal(http(c, s.port, "GET", "/v1/stats", NULL, &out, NULL), 200);
	assert_non_null(strstr(out, "\"positions\":"));
	assert_non_null(strstr(out, "\"scan_computed_at\":"));
	free(out);
	for (int i = 0; i < 100; i++) {
		http(c, s.port, "GET", "/v1/stats", NULL, &out, NULL);
		bool done = !strstr(out, "\"scan_computed_at\":null");
		if (done) {
			assert_null(strstr(out, "\"thought\":null"));
			free(out);
			break;
		}
		free(out);
		usleep(50000);
		if (i == 99) fail_msg("the stats scan never finished");
	}
	assert_int_equal(http(c, s.port, "GET", "/healthz", NULL, &out, NULL), 200);
	assert_non_null(strstr(out, "\"status\":\"ok\""));
	free(out);
	assert_int_equal(http(c, s.port, "GET", "/metrics", NULL, &out, NULL), 200);
	assert_non_null(strstr(out, "joseki_requests_total{status=\"200\"}"));
	assert_non_null(strstr(out, "joseki_request_duration_seconds_bucket{le=\"+Inf\"}"));
	assert_non_null(strstr(out, "joseki_book_positions "));
	assert_non_null(strstr(out, "joseki_uptime_seconds "));
	assert_non_null(strstr(out, "\njoseki_requests_in_flight 1\n")); /* itself */
	free(out);
	/* The explorer's files. */
	assert_int_equal(http(c, s.port, "GET", "/", NULL, &out, &hdr), 200);
	assert_non_null(strstr(out, "<svg id=\"board\""));
	assert_non_null(strstr(hdr, "text/html"));
	free(out);
	free(hdr);
	assert_int_equal(http(c, s.port, "GET", "/app.js", NULL, &out, NULL), 200);
	assert_non_null(strstr(out, "/v1/query"));
	free(out);
	/* Errors. */
	expect_error(c, s.port, "GET", "/v1/query", NULL, 400, "give the position");
	expect_error(c, s.port, "GET", "/v1/query?sfen=xyz", NULL, 400, "bad position");
	expect_error(c, s.port, "GET", "/v1/query?position=startpos%20moves%207g7f%207g7f", NULL,
	             400, "7g7f");
	expect_error(c, s.port, "GET", "/v1/line?position=startpos&plies=0", NULL, 400, "plies");
	expect_error(c, s.port, "GET", "/nothing-here", NULL, 404, "no such path");
	expect_error(c, s.port, "POST", "/v1/query", "x=1", 405, "read-only");
	expect_error(c, s.port, "DELETE", "/v1/stats", NULL, 405, NULL);
	char *big = malloc(20001);
	memset(big, 'x', 20000);
	big[20000] = 0;
	expect_error(c, s.port, "POST", "/v1/query", big, 413, "too large");
	char *path = malloc(12000);
	snprintf(path, 12000, "/v1/query?position=startpos&pad=%.*s", 9000, big);
	expect_error(c, s.port, "GET", path, NULL, 414, "too long");
	free(path);
	/* Headers beyond the limit: 431. */
	{
		char url[100];
		snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", s.port);
		curl_easy_reset(c);
		struct curl_slist *h = NULL;
		char *hv = malloc(9100);
		for (int k = 0; k < 3; k++) {
			snprintf(hv, 9100, "X-Pad-%d: %.*s", k, 9000, big);
			h = curl_slist_append(h, hv);
		}
		free(hv);
		TsBuf b = {NULL, 0};
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		assert_int_equal(curl_easy_perform(c), CURLE_OK);
		long st;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		assert_int_equal(st, 431);
		assert_non_null(strstr(b.data, "\"error\""));
		free(b.data);
		curl_slist_free_all(h);
	}
	free(big);
	/* OPTIONS: the CORS preflight. */
	assert_int_equal(http(c, s.port, "OPTIONS", "/v1/query", NULL, NULL, &hdr), 204);
	assert_non_null(strstr(hdr, "Access-Control-Allow-Methods"));
	free(hdr);
	curl_easy_cleanup(c);
	/* The log: one line a request is off with --quiet; on without it. */
	stop(&s);
	start(&s, dir, "");
	c = curl_easy_init();
	assert_int_equal(http(c, s.port, "GET", "/healthz", NULL, NULL, NULL), 200);
	curl_easy_cleanup(c);
	char logline[512];
	assert_non_null(fgets(logline, sizeof logline, s.log));
	assert_non_null(strstr(logline, "GET /healthz 200 "));
	assert_non_null(strstr(logline, "us"));
	/* A path's bytes are shown as text: a newline forges no line, an
	 * escape sequence (a terminal title, a bell) is not sent raw. */
	c = curl_easy_init();
	assert_int_equal(http(c, s.port, "GET", "/a%0aGET%20/fake%20200%201us", NULL, NULL, NULL),
	                 404);
	assert_int_equal(http(c, s.port, "GET", "/x%1b]0;PWNED%07", NULL, NULL, NULL), 404);
	curl_easy_cleanup(c);
	static const char *const SHOWN[] = {"GET /a\\x0AGET /fake 200 1us 404 ",
	                                    "GET /x\\x1B]0;PWNED\\x07 404 "};
	for (int i = 0; i < 2; i++) {
		assert_non_null(fgets(logline, sizeof logline, s.log));
		for (const char *p = logline; *p; p++)
			if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
				fail_msg("the log shows byte 0x%02x raw: %s", *p, logline);
		if (strncmp(logline, SHOWN[i], strlen(SHOWN[i])))
			fail_msg("log line '%s', '%s...' expected", logline, SHOWN[i]);
	}
	/* --no-cors. */
	stop(&s);
	start(&s, dir, "--quiet --no-cors");
	c = curl_easy_init();
	assert_int_equal(http(c, s.port, "GET", "/healthz", NULL, NULL, &hdr), 200);
	assert_null(strstr(hdr, "Access-Control-Allow-Origin"));
	free(hdr);
	curl_easy_cleanup(c);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* /v1/query and `joseki query --json` give the same bytes on 200 positions:
 * the first plies of the fixture games, as USI move lists. */
static void test_server__query_equals_the_command_byte_for_byte(void **state)
{
	(void)state;
	char *dir = make_book();
	Srv s;
	start(&s, dir, "--quiet");
	CURL *c = curl_easy_init();
	char *games = ts_read_file("tests/data/positions/games-v1.usi", NULL);
	assert_non_null(games);
	int n = 0;
	for (char *l = strtok(games, "\n"); l && n < 200; l = strtok(NULL, "\n")) {
		if (l[0] == '#') continue;
		char *moves = strchr(l, '\t');
		if (!moves) continue;
		moves++;
		/* Prefixes of 0, 1, 2 ... moves. */
		char spec[8192] = "startpos moves";
		char *m = moves;
		for (int k = 0; k < 50 && n < 200; k++) {
			char *esc = curl_easy_escape(c, spec, 0);
			char path[10000];
			snprintf(path, sizeof path, "/v1/query?position=%s", esc);
			curl_free(esc);
			char *got, *want = NULL;
			assert_int_equal(http(c, s.port, "GET", path, NULL, &got, NULL), 200);
			/* Every other one its words unquoted, as a user may type it
			 * (no file name globbing: drops have a '*'). */
			assert_int_equal(ts_runf(&want, NULL,
			                         n % 2 ? "set -f; %s query %s/b %s --json"
			                               : "%s query %s/b '%s' --json",
			                         ts_joseki(), dir, spec),
			                 0);
			if (strcmp(got, want))
				fail_msg("%s:\nserver  %s\ncommand %s", spec, got, want);
			free(got);
			free(want);
			n++;
			char *sp = strchr(m, ' ');
			size_t len = sp ? (size_t)(sp - m) : strlen(m);
			if (!len) break;
			size_t at = strlen(spec);
			snprintf(spec + at, sizeof spec - at, " %.*s", (int)len, m);
			if (!sp) break;
			m = sp + 1;
		}
	}
	assert_int_equal(n, 200);
	free(games);
	/* And they refuse the same positions with the same words: a board
	 * without kings (the rules core takes it; a book never holds one), with
	 * one king, a malformed SFEN, an illegal move; more of a kind than a
	 * set has (three rooks, 19 pawns, the start position with a pawn in
	 * hand), the side not to move in check (given, or before the moves), a
	 * move after a fourfold repetition ended the game (as a draw, as a
	 * perpetual check). */
	static const char *const BAD[] = {
	    "sfen 9/9/9/9/9/9/9/9/9 b - 1",
	    "sfen 4k4/9/9/9/9/9/9/9/9 b - 1",
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNX b - 1",
	    "startpos moves 7g7f 7g7f",
	    "sfen 4k4/9/9/9/9/9/9/9/4K4 b 3R 1",
	    "sfen 4k4/9/9/9/9/9/9/9/4K4 b 19P 1",
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b P 1",
	    "sfen 4k4/4R4/9/9/9/9/9/9/4K4 b - 1",
	    "sfen 4k4/4R4/9/9/9/9/9/9/4K4 b - 1 moves 5i4i",
	    "startpos moves 5i5h 5a5b 5h5i 5b5a 5i5h 5a5b 5h5i 5b5a 5i5h 5a5b 5h5i 5b5a 7g7f",
	    ("sfen 4k4/9/9/9/9/9/9/9/R3K4 b - 1 moves 9i9a 5a5b 9a9b 5b5a 9b9a 5a5b 9a9b 5b5a "
	     "9b9a 5a5b 9a9b 5b5a 9b9a 5a5b"),
	};
	/* The reason each of those says (the server's words after "bad
	 * position: "), the new ones checked word for word. */
	static const char *const WHY[] = {
	    "no kings: both kings must be on the board",
	    "no black king: both kings must be on the board",
	    NULL,
	    NULL,
	    "3 rooks (board and hands, promoted counted): a set has 2",
	    "19 pawns (board and hands, promoted counted): a set has 18",
	    "19 pawns (board and hands, promoted counted): a set has 18",
	    "the white king is in check with black to move (it could be captured)",
	    "the position before the moves: the white king is in check with black to move",
	    ("move 13: the game ended at move 12, the position's fourth occurrence (sennichite: a "
	     "draw)"),
	    ("move 14: the game ended at move 13, the position's fourth occurrence (sennichite: "
	     "Black's perpetual check, a loss)"),
	};
	for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
		char *esc = curl_easy_escape(c, BAD[i], 0), path[600], *got, *out = NULL,
		     *err = NULL;
		snprintf(path, sizeof path, "/v1/query?position=%s", esc);
		curl_free(esc);
		assert_int_equal(http(c, s.port, "GET", path, NULL, &got, NULL), 400);
		json_t *j = json_loads(got, 0, NULL);
		const char *said = json_string_value(json_object_get(j, "error"));
		assert_non_null(said);
		assert_true(!strncmp(said, "bad position: ", 14));
		if (WHY[i] && !strstr(said, WHY[i]))
			fail_msg("%s: the server says '%s', not '%s'", BAD[i], said, WHY[i]);
		int rc = ts_runf(&out, &err, "%s query %s/b '%s'", ts_joseki(), dir, BAD[i]);
		if (rc != 2 || !strstr(err, said + 14))
			fail_msg("%s: the server says '%s'; the command exits %d: %s%s", BAD[i],
			         said, rc, out, err);
		json_decref(j);
		free(got);
		free(out);
		free(err);
	}
	curl_easy_cleanup(c);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

typedef struct {
	int port;
	volatile int *stop;
	long requests, bad;
	char first_bad[512];
} Client;

static void *client_main(void *arg)
{
	Client *k = arg;
	CURL *c = curl_easy_init();
	static const char *const PATHS[] = {"/v1/query?position=startpos",
	                                    "/v1/query?position=startpos%20moves%207g7f",
	                                    "/v1/query?position=startpos%20moves%202g2f%208c8d",
	                                    "/v1/stats", "/v1/line?position=startpos"};
	for (int i = 0; !*k->stop; i++) {
		char *out;
		const char *p = PATHS[i % 5];
		char url[200];
		snprintf(url, sizeof url, "http://127.0.0.1:%d%s", k->port, p);
		TsBuf b = {NULL, 0};
		curl_easy_reset(c);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, ts_collect);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		long st = 0;
		bool ok = curl_easy_perform(c) == CURLE_OK;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
		out = b.data;
		json_t *j = out ? json_loads(out, 0, NULL) : NULL;
		/* Every answer whole: 200 and JSON; a query's moves in the book's
		 * order, its counts never negative. */
		bool good = ok && st == 200 && j;
		if (good && strstr(p, "query")) good = json_is_array(json_object_get(j, "moves"));
		if (!good) {
			if (!k->bad)
				snprintf(k->first_bad, sizeof k->first_bad, "%s: %ld %.300s", p, st,
				         out ? out : "");
			k->bad++;
		}
		k->requests++;
		json_decref(j);
		free(out);
	}
	curl_easy_cleanup(c);
	return NULL;
}

/* n clients (client_main) querying the server at port until *stop is set. */
static void clients_start(Client *cl, pthread_t *th, int n, int port, volatile int *stop)
{
	for (int i = 0; i < n; i++) {
		cl[i] = (Client){port, stop, 0, 0, ""};
		pthread_create(&th[i], NULL, client_main, &cl[i]);
	}
}

/* Stops and joins them; a bad answer fails the test. The answers in all. */
static long clients_stop(Client *cl, pthread_t *th, int n, volatile int *stop)
{
	*stop = 1;
	long total = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += cl[i].requests;
		if (cl[i].bad)
			fail_msg("client %d: %ld bad answers, first: %s", i, cl[i].bad,
			         cl[i].first_bad);
	}
	return total;
}

/* 4 clients query for 10 s while `joseki ingest` and `joseki think` write the
 * same book: no error, every answer whole. */
static void test_server__answers_while_a_writer_commits(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s ingest %s/b tests/data/floodgate/*2026060113*.csa --quiet",
	                         ts_joseki(), dir),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s gen-games %s/g --games 3000 --seed 7 >/dev/null",
	                         ts_joseki(), dir),
	                 0);
	Srv s;
	start(&s, dir, "--quiet");
	volatile int stop_flag = 0;
	Client cl[4];
	pthread_t th[4];
	clients_start(cl, th, 4, s.port, &stop_flag);
	time_t t0 = time(NULL);
	char *err = NULL;
	int rc = ts_runf(NULL, &err,
	                 "%s ingest %s/b tests/data/floodgate %s/g --quiet && "
	                 "%s think %s/b --depth 1 --positions 2000 --quiet >/dev/null",
	                 ts_joseki(), dir, dir, ts_joseki(), dir);
	if (rc != 0) fail_msg("writer: %s", err);
	free(err);
	while (time(NULL) - t0 < 10) usleep(100000);
	long total = clients_stop(cl, th, 4, &stop_flag);
	print_message("%ld answers while the book was written\n", total);
	assert_true(total > 100);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The book's file replaced under a plain serve (a whole-book minimax rebuilt
 * it into a new file, then a hand mark went to the new file): the server
 * answers every request meanwhile and, from a request a second later on,
 * serves the new file, equal to the command's answer byte for byte; the
 * same after joseki compact.
 */
static void test_server__follows_a_book_file_replaced_under_it(void **state)
{
	(void)state;
	char *dir = make_book();
	Srv s;
	start(&s, dir, "--quiet");
	volatile int stop_flag = 0;
	Client cl[2];
	pthread_t th[2];
	clients_start(cl, th, 2, s.port, &stop_flag);
	CURL *c = curl_easy_init();
	char *before;
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=startpos", NULL, &before, NULL),
	                 200);
	for (int round = 0; round < 2; round++) {
		char *err = NULL;
		int rc =
		    round == 0
		        ? ts_runf(NULL, &err, "%s minimax %s/b --full --quiet", ts_joseki(), dir)
		        : ts_runf(NULL, &err, "%s compact %s/b >/dev/null", ts_joseki(), dir);
		if (rc != 0) fail_msg("round %d: %s", round, err);
		free(err);
		/* Whatever wrote the new file last, its commits stand, the server
		 * holding the old file open beside it: the next run goes on from
		 * the state the last one kept. */
		json_t *mm = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
		if (!json_is_true(json_object_get(mm, "incremental")))
			fail_msg("round %d: minimax after the file was replaced: %s", round,
			         json_string_value(json_object_get(mm, "full_reason")));
		json_decref(mm);
		/* The book's best move at the start avoided: written to the new file. */
		char *want = NULL, *best = NULL;
		assert_int_equal(
		    ts_runf(&best, NULL,
		            "%s query %s/b startpos --json | python3 -c 'import json,sys; "
		            "print(json.load(sys.stdin)[\"bestmove\"], end=\"\")'",
		            ts_joseki(), dir),
		    0);
		assert_int_equal(ts_runf(NULL, NULL,
		                         "%s avoid %s/b startpos %s --note round%d >/dev/null",
		                         ts_joseki(), dir, best, round),
		                 0);
		assert_int_equal(
		    ts_runf(&want, NULL, "%s query %s/b startpos --json", ts_joseki(), dir), 0);
		assert_string_not_equal(want, before);
		char *got = NULL;
		int tries = 0;
		for (; tries < 600; tries++) { /* until it follows (a look a second) */
			free(got);
			assert_int_equal(
			    http(c, s.port, "GET", "/v1/query?position=startpos", NULL, &got, NULL),
			    200);
			if (!strcmp(got, want)) break;
			usleep(50000);
		}
		if (strcmp(got, want))
			fail_msg("round %d: the server still answers\n%s\nnot\n%s", round, got,
			         want);
		free(before);
		before = got;
		free(want);
		free(best);
	}
	clients_stop(cl, th, 2, &stop_flag);
	free(before);
	curl_easy_cleanup(c);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* Requests until the server says (on its stderr, s->log, with --quiet its
 * only lines) that it serves the book's new file. */
static void wait_followed(Srv *s, CURL *c)
{
	char line[1024];
	for (int i = 0; i < 600; i++) {
		char *got;
		assert_int_equal(
		    http(c, s->port, "GET", "/v1/query?position=startpos", NULL, &got, NULL), 200);
		free(got);
		struct pollfd p = {.fd = fileno(s->log), .events = POLLIN};
		if (poll(&p, 1, 100) == 1 && fgets(line, sizeof line, s->log)) {
			if (strstr(line, "serving the new one")) return;
			fail_msg("serve said: %s", line);
		}
	}
	fail_msg("serve did not follow the book's new file");
}

/*
 * LMDB keeps its last transaction id in its lock file's shared memory: a
 * serve holding the old file's lock file open beside a writer of the new
 * file gave the writer the old file's ids, and a book with fewer commits
 * before than its rebuild made (a synthetic one) lost every commit after
 * it. The lock file now goes with the old file: minimax --full under a
 * serve keeps its state, and the next run is incremental; so after compact.
 */
static void test_server__commits_after_a_rebuild_under_a_server_stand(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/b --positions 20000 --quiet", ts_joseki(), dir), 0);
	Srv s;
	start(&s, dir, "--quiet");
	CURL *c = curl_easy_init();
	char *got;
	assert_int_equal(http(c, s.port, "GET", "/v1/query?position=startpos", NULL, &got, NULL),
	                 200);
	free(got);
	static const char *const steps[] = {"minimax %s/b --full --quiet", "compact %s/b"},
	                         *names[] = {"minimax --full", "compact"};
	for (int k = 0; k < 2; k++) {
		char fmt[128];
		snprintf(fmt, sizeof fmt, "%%s %s >/dev/null", steps[k]);
		assert_int_equal(ts_runf(NULL, NULL, fmt, ts_joseki(), dir), 0);
		/* The server lets go of the old file (and its lock file): the
		 * commits made since are those the next process finds. */
		wait_followed(&s, c);
		json_t *m0 = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
		if (!json_is_true(json_object_get(m0, "incremental")))
			fail_msg("after %s: minimax: %s", names[k],
			         json_string_value(json_object_get(m0, "full_reason")));
		json_decref(m0);
		assert_int_equal(ts_runf(NULL, NULL, "%s avoid %s/b startpos 7g7f%s >/dev/null",
		                         ts_joseki(), dir, k ? " --undo" : ""),
		                 0);
		json_t *mm = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
		if (!json_is_true(json_object_get(mm, "incremental")))
			fail_msg("after %s: minimax: %s", names[k],
			         json_string_value(json_object_get(mm, "full_reason")));
		json_decref(mm);
		assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), dir), 0);
	}
	curl_easy_cleanup(c);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* A connection to the server on 127.0.0.1:port (the test fails without). */
static int connect_local(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		fail_msg("connect: the server is gone");
	return fd;
}

/* Sends raw bytes on a fresh connection; returns what came back (NUL-terminated). */
static char *raw(int port, const char *req, size_t len)
{
	int fd = connect_local(port);
	struct timeval tv = {2, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)!write(fd, req, len);
	shutdown(fd, SHUT_WR);
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 1024 > cap) buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r <= 0) break;
		n += (size_t)r;
	}
	buf[n] = 0;
	close(fd);
	return buf;
}

/* 1,000 malformed requests: bad percent-encoding, huge query strings, NUL
 * bytes, bad UTF-8, wrong methods, odd paths. Every answer with a status line
 * is a JSON error (or the page or a 200 where the input was acceptable after
 * all); the server survives them all. */
static void test_server__a_thousand_malformed_requests(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_server__a_thousand_malformed_requests");
	char *dir = make_book();
	Srv s;
	start(&s, dir, "--quiet");
	static const char *const METHODS[] = {"GET",  "POST", "PUT",     "DELETE", "PATCH",
	                                      "BREW", "get",  "OPTIONS", "HEAD"};
	static const char *const PATHS[] = {
	    "/v1/query?sfen=%",
	    "/v1/query?sfen=%zz%g",
	    "/v1/query?position=%ff%fe%fd",
	    "/v1/query?position=startpos%00moves",
	    "/v1/line?plies=%2",
	    "/v1/query?sfen=",
	    "/v1/query?position=startpos moves 9a9a",
	    "/v1/../etc/passwd",
	    "//v1//query",
	    "/v1/query?sfen=lnsgkgsnl/9/9/9/9/9/9/9/9%20b%20-%201",
	    "/v1/stats?x=%c3%28",
	    "/v1/line?position=sfen%204k4/9/9/9/9/9/9/9/4K4%20b%20-%201&plies=999999999999",
	    "/v1/query?position=+%+%2+%2B++&sfen=+",
	    "/v1/line?position&position=%2+&x=+",
	    "/v1/query?sfen=+%2B%2b%f+%"};
	int answered = 0;
	for (int i = 0; i < 1000; i++) {
		char req[40000];
		const char *m = METHODS[ts_rand(&rng) % 9];
		const char *p = PATHS[ts_rand(&rng) % (sizeof PATHS / sizeof *PATHS)];
		size_t len;
		int kind = (int)(ts_rand(&rng) % 4);
		if (kind == 0) {
			len = (size_t)snprintf(
			    req, sizeof req,
			    "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", m, p);
		} else if (kind == 1) { /* a huge query string */
			size_t pad = 1000 + ts_rand(&rng) % 20000;
			len =
			    (size_t)snprintf(req, sizeof req, "GET /v1/query?position=startpos&p=");
			for (size_t k = 0; k < pad; k++) req[len++] = "%a-Z09"[ts_rand(&rng) % 6];
			len +=
			    (size_t)snprintf(req + len, sizeof req - len,
			                     " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
		} else if (kind == 2) { /* random bytes in the path, NULs included */
			len = (size_t)snprintf(req, sizeof req, "GET /v1/query?sfen=");
			for (int k = 0; k < 40; k++) {
				char ch = (char)(ts_rand(&rng) & 0xff);
				req[len++] = ch == '\r' || ch == '\n' || ch == ' ' ? 'x' : ch;
			}
			len +=
			    (size_t)snprintf(req + len, sizeof req - len,
			                     " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
		} else { /* a body with a wrong length, or a garbage request line */
			if (ts_rand(&rng) & 1)
				len = (size_t)snprintf(
				    req, sizeof req,
				    "POST /v1/query HTTP/1.1\r\nHost: x\r\nConnection: "
				    "close\r\nContent-Length: 5\r\n\r\nabcdefghij");
			else
				len = (size_t)snprintf(req, sizeof req, "%c%c%c %s\r\n\r\n",
				                       (char)(ts_rand(&rng) % 256),
				                       (char)(ts_rand(&rng) % 256), 'X', p);
		}
		char *ans = raw(s.port, req, len);
		if (!strncmp(ans, "HTTP/1.1 ", 9)) {
			answered++;
			int st = atoi(ans + 9);
			char *body = strstr(ans, "\r\n\r\n");
			bool page =
			    body && (strstr(body, "<!doctype html>") || strstr(body, "# HELP"));
			bool head = !strcmp(m, "HEAD") && kind == 0;
			if (st >= 400 && st < 500 && body && !head && !page &&
			    !strstr(body, "\"error\"") && strstr(ans, "application/json"))
				fail_msg("request %d: an error without a JSON body: %.300s", i,
				         ans);
			if (st >= 500 && st != 503) fail_msg("request %d: %.300s", i, ans);
		}
		free(ans);
	}
	print_message("%d of 1000 answered with a status line\n", answered);
	assert_true(answered > 500);
	/* The gate's own answer (a malformed request line) is headed as the
	 * server's are: not to be cached, CORS. */
	static const char GARBAGE[] = "GARBAGE\r\n\r\n";
	char *g = raw(s.port, GARBAGE, sizeof GARBAGE - 1);
	if (strncmp(g, "HTTP/1.1 400 ", 13) || !strstr(g, "\r\nCache-Control: no-store\r\n") ||
	    !strstr(g, "\r\nAccess-Control-Allow-Origin: *\r\n"))
		fail_msg("%s", g);
	free(g);
	/* Still serving. */
	CURL *c = curl_easy_init();
	assert_int_equal(http(c, s.port, "GET", "/healthz", NULL, NULL, NULL), 200);
	curl_easy_cleanup(c);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* SIGTERM with a kept-alive connection open and a request in flight whose
 * body is still coming: the kept-alive connection's next request gets 503,
 * and the connection is closed after it (a client that keeps asking holds
 * nothing up); the request in flight is cut 2 s after, its connection closed
 * unanswered, and stderr says so; the server exits 0. */
static void test_server__sigterm_answers_503_cuts_what_is_unfinished_exits_0(void **state)
{
	(void)state;
	char *dir = make_book();
	Srv s;
	start(&s, dir, "--quiet");
	int fd = connect_local(s.port);
	const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	char buf[4096];
	ssize_t r = read(fd, buf, sizeof buf - 1);
	assert_true(r > 0);
	buf[r] = 0;
	assert_non_null(strstr(buf, "200 OK"));
	int slow = connect_local(s.port);
	const char *post = "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc";
	assert_int_equal(write(slow, post, strlen(post)), (ssize_t)strlen(post));
	/* In flight once libmicrohttpd has read its request line, which the gate
	 * hands it when the head is whole, to one of its threads: /metrics counts
	 * it (and itself). A stop before then would find nothing in flight and
	 * close every connection at once, fd's unanswered. */
	CURL *c = curl_easy_init();
	for (int i = 0;; i++) {
		char *m = NULL;
		assert_int_equal(http(c, s.port, "GET", "/metrics", NULL, &m, NULL), 200);
		bool both = strstr(m, "\njoseki_requests_in_flight 2\n") != NULL;
		free(m);
		if (both) break;
		if (i == 3000) fail_msg("the slow request never counted in flight");
		usleep(10000);
	}
	curl_easy_cleanup(c);
	kill(s.pid, SIGTERM);
	assert_true(ts_wait_output(s.log, "finishing the requests in flight", 30000));
	/* The line comes just before the server stops taking requests: an answer
	 * in between is a 200; the connection then gets a 503 that closes it. (A
	 * 200 that closes it can come too, the stop falling between the request's
	 * check and its answer: nothing then to ask again on.) */
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
		r = read(fd, buf, sizeof buf - 1);
		assert_true(r > 0);
		buf[r] = 0;
		if (!strstr(buf, " 200 ") || strcasestr(buf, "\r\nConnection: close\r\n")) break;
	}
	if (strstr(buf, " 200 ")) {
		print_message("a 200 that closed its connection came first\n");
	} else {
		assert_non_null(strstr(buf, " 503 "));
		assert_non_null(strstr(buf, "shutting down"));
	}
	if (!strcasestr(buf, "\r\nConnection: close\r\n")) fail_msg("the answer: %s", buf);
	assert_int_equal(read(fd, buf, sizeof buf), 0);
	if (!ts_wait_output(s.log,
	                    "serve: 1 request not finished 2 s after the stop: its "
	                    "connection closed unanswered",
	                    30000))
		fail_msg("no line about the request cut");
	assert_int_equal(read(slow, buf, sizeof buf), 0);
	close(slow);
	close(fd);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* The explorer in headless Chromium (tests/server/browser.mjs); screenshots in
 * build/test-logs/. Needs Debian's chromium and playwright-core (installed by
 * tools/install-deps.sh); JOSEKI_NO_BROWSER=1 skips it, saying so. */
static void test_server__the_explorer_in_a_real_browser(void **state)
{
	(void)state;
	if (getenv("JOSEKI_NO_BROWSER")) {
		print_message("skipped: JOSEKI_NO_BROWSER is set\n");
		skip();
	}
	char *dir = make_book();
	/* A hand mark on the start position's last move, which the table shows. */
	json_t *q = ts_run_json(0, "%s query %s/b startpos --json", ts_joseki(), dir);
	json_t *mv = json_object_get(q, "moves");
	assert_true(json_array_size(mv) >= 2);
	const char *last =
	    json_string_value(json_object_get(json_array_get(mv, json_array_size(mv) - 1), "move"));
	assert_int_equal(ts_runf(NULL, NULL, "%s avoid %s/b startpos %s --note 'browser test'",
	                         ts_joseki(), dir, last),
	                 0);
	json_decref(q);
	/* A declined promotion after 7g7f 3c3d (8h2b valued above 8h2b+). */
	char db[700];
	snprintf(db, sizeof db, "%s/declined.db", dir);
	const char *text =
	    "#YANEURAOU-DB2016 1.00\n"
	    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	    "8h2b none 60 20 1\n8h2b+ none 50 20 1\n";
	assert_int_equal(ts_write_file(db, text, strlen(text)), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s import %s/b %s --quiet", ts_joseki(), dir, db), 0);
	Srv s;
	start(&s, dir, "--quiet");
	char *out = NULL, *err = NULL;
	const char *logs = getenv("BUILD") ? getenv("BUILD") : "build";
	int rc = ts_runf(&out, &err,
	                 "mkdir -p %s/test-logs && timeout 120 node tests/server/browser.mjs "
	                 "http://127.0.0.1:%d %s/test-logs",
	                 logs, s.port, logs);
	if (rc != 0) fail_msg("browser test (status %d):\n%s%s", rc, out, err);
	print_message("%s", out);
	assert_non_null(strstr(out, "ok followed the best move"));
	assert_non_null(strstr(out, "ok the hand mark shown"));
	assert_non_null(strstr(out, "ok a declined promotion shown"));
	free(out);
	free(err);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

/* The work page (work.html) in headless Chromium against a coordinator that
 * recorded a point a second while a built-in worker thought: the charts
 * have points, no worker name without a token, a wrong token is refused, a
 * read-only token shows the worker (tests/server/browser.mjs --work);
 * screenshots build/test-logs/work.png and work-token.png. JOSEKI_NO_BROWSER=1
 * skips it, saying so. */
static void test_server__the_work_page_in_a_real_browser(void **state)
{
	(void)state;
	if (getenv("JOSEKI_NO_BROWSER")) {
		print_message("skipped: JOSEKI_NO_BROWSER is set\n");
		skip();
	}
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL, wtok[600], ltok[600], rtok[80];
	snprintf(wtok, sizeof wtok, "%s/worker.token", dir);
	snprintf(ltok, sizeof ltok, "%s/liar.token", dir);
	if (ts_runf(&out, &err,
	            "%s ingest %s/b tests/data/floodgate --quiet >/dev/null && "
	            "%s token add %s/b/tokens w1 >%s && %s token add %s/b/tokens liar >%s && "
	            "%s token add %s/b/tokens dash --read",
	            ts_joseki(), dir, ts_joseki(), dir, wtok, ts_joseki(), dir, ltok, ts_joseki(),
	            dir) != 0)
		fail_msg("book and tokens: %s", err);
	snprintf(rtok, sizeof rtok, "%.64s", out);
	free(out);
	free(err);
	Srv s;
	start(&s, dir,
	      "--work --quiet --history-seconds 1 --movetime 20 --minimax-seconds 2 "
	      "--lease-seconds 30");
	out = err = NULL;
	if (ts_runf(&out, &err,
	            "timeout 60 %s worker --server http://127.0.0.1:%d --token-file %s --name "
	            "browserworker --positions 150 --quiet",
	            ts_joseki(), s.port, wtok) != 0)
		fail_msg("worker: %s%s", out, err);
	free(out);
	free(err);
	/* A worker whose every result claims a mate in 1 that is none: its token
	 * is put in quarantine at its first submission (exit 1), for the page's
	 * tokens table (tests/cluster/fakes/noisy_engine.py forges them). */
	out = err = NULL;
	int rc =
	    ts_runf(&out, &err,
	            "JOSEKI_BIN=%s FORGE_RATE=1 timeout 60 %s worker --server http://127.0.0.1:%d "
	            "--token-file %s --name liar --engine tests/cluster/fakes/noisy_engine.py "
	            "--positions 5 --quiet",
	            ts_joseki(), ts_joseki(), s.port, ltok);
	if (rc != 1 || !strstr(err, "in quarantine")) fail_msg("liar: %d: %s%s", rc, out, err);
	free(out);
	free(err);
	/* The history has a point after the worker's last results: its steps
	 * (tier 0; the coarser tiers sum the same results again) hold all 150. */
	CURL *c = curl_easy_init();
	long long recorded = 0;
	for (int64_t end = clock_ms() + 20000; recorded < 150;) {
		char *body = NULL;
		assert_int_equal(
		    http(c, s.port, "GET", "/v1/work/history?hours=0", NULL, &body, NULL), 200);
		json_t *h = json_loads(body, 0, NULL), *pt;
		size_t i;
		recorded = 0;
		json_array_foreach(json_object_get(h, "points"), i, pt)
		{
			if (json_integer_value(json_object_get(pt, "tier")) == 0)
				recorded += json_integer_value(json_object_get(pt, "results"));
		}
		json_decref(h);
		free(body);
		if (recorded < 150 && clock_ms() > end)
			fail_msg("the history holds %lld of the worker's 150 results", recorded);
		if (recorded < 150) usleep(100000);
	}
	curl_easy_cleanup(c);
	out = err = NULL;
	const char *logs = getenv("BUILD") ? getenv("BUILD") : "build";
	rc = ts_runf(&out, &err,
	             "mkdir -p %s/test-logs && timeout 120 node tests/server/browser.mjs "
	             "--work http://127.0.0.1:%d %s/test-logs %s browserworker liar",
	             logs, s.port, logs, rtok);
	if (rc != 0) fail_msg("browser test (status %d):\n%s%s", rc, out, err);
	print_message("%s", out);
	assert_non_null(strstr(out, "ok charts drawn"));
	/* The live worker named (the liar's, stopped by its quarantine, is listed
	 * among those gone). */
	const char *w = strstr(out, "ok with the token: workers ");
	assert_non_null(w);
	const char *eol = strchr(w, '\n');
	char *seen = strndup(w, eol ? (size_t)(eol - w) : strlen(w));
	assert_non_null(strstr(seen, "browserworker"));
	free(seen);
	assert_non_null(strstr(out, "ok the token liar shown in quarantine"));
	free(out);
	free(err);
	stop(&s);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init(); /* the keys of the positions ts_plant writes */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	atexit(kill_live);
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_server__every_endpoint_and_every_error),
	    cmocka_unit_test(test_server__query_equals_the_command_byte_for_byte),
	    cmocka_unit_test(test_server__answers_while_a_writer_commits),
	    cmocka_unit_test(test_server__follows_a_book_file_replaced_under_it),
	    cmocka_unit_test(test_server__commits_after_a_rebuild_under_a_server_stand),
	    cmocka_unit_test(test_server__a_thousand_malformed_requests),
	    cmocka_unit_test(test_server__sigterm_answers_503_cuts_what_is_unfinished_exits_0),
	    cmocka_unit_test(test_server__the_explorer_in_a_real_browser),
	    cmocka_unit_test(test_server__the_work_page_in_a_real_browser),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
