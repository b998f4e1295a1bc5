/*
 * tests/guide/test_guide.c — docs/guide.md's commands, run in order as a new
 * user would run them (one shell, in a directory of its own), with Debian's
 * fairy-stockfish as the engine and the budgets cut down; then what the guide
 * says they make is there: a book with analysed values, a YaneuraOu file and
 * the setoption lines, a match's records and summary, a coordinator that
 * stored a worker's results, a checked backup.
 *
 * The guide is read, not copied: a command changed there is a command changed
 * here. Each cut-down budget must be found in the guide (a budget renamed there
 * fails here instead of running an hour).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/support.h"

/* The ```sh blocks of text, joined, each line as it is. */
static char *sh_blocks(const char *text)
{
	size_t cap = strlen(text) + 1, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	const char *p = text;
	bool in = false;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!in && len == 5 && !strncmp(p, "```sh", 5)) {
			in = true;
		} else if (in && len == 3 && !strncmp(p, "```", 3)) {
			in = false;
		} else if (in) {
			memcpy(out + n, p, len);
			n += len;
			out[n++] = '\n';
		}
		p += len + (e != NULL);
	}
	out[n] = 0;
	assert_false(in);
	return out;
}

/* s with the first occurrence of from replaced by to (which must be there). */
static char *replace(char *s, const char *from, const char *to)
{
	char *at = strstr(s, from);
	if (!at) fail_msg("docs/guide.md no longer has '%s': update tests/guide", from);
	size_t a = (size_t)(at - s), fl = strlen(from), tl = strlen(to), sl = strlen(s);
	char *r = malloc(sl - fl + tl + 1);
	assert_non_null(r);
	memcpy(r, s, a);
	memcpy(r + a, to, tl);
	memcpy(r + a + tl, at + fl, sl - a - fl + 1);
	free(s);
	return r;
}

/* Every occurrence. */
static char *replace_all(char *s, const char *from, const char *to)
{
	s = replace(s, from, to);
	while (strstr(s, from)) s = replace(s, from, to);
	return s;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_guide__the_guide_s_commands_make_what_it_says(void **state)
{
	(void)state;
	const char *engine = ts_real_engine("fairy-stockfish");
	char *guide = ts_read_file("docs/guide.md", NULL);
	assert_non_null(guide);
	char *sh = sh_blocks(guide);
	free(guide);
	char *dir = ts_mkdtemp(), bin[4200], addr[64], path[4300];
	/* The binary under test, not a build of this tree. */
	snprintf(bin, sizeof bin, "%s", ts_joseki());
	char *slash = strrchr(bin, '/');
	assert_non_null(slash);
	*slash = 0;
	snprintf(addr, sizeof addr, "127.0.0.1:%d", free_port());
	char line[4400];
	sh = replace(sh, "make\n", "");
	snprintf(line, sizeof line, "export PATH=%s:$PATH", bin);
	sh = replace(sh, "export PATH=$PWD:$PATH", line);
	snprintf(line, sizeof line, "ENGINE=%s ", engine);
	sh = replace(sh, "ENGINE=/usr/games/fairy-stockfish ", line);
	/* The budgets, cut down. */
	sh = replace(sh, "--engine-seconds 3600", "--engine-seconds 12");
	sh = replace(sh, "--nodes 200000 --engine-seconds", "--nodes 20000 --engine-seconds");
	sh = replace(sh, "--games 100 --nodes 20000", "--games 4 --nodes 5000");
	sh = replace(sh, "--roots-from-games 20 --nodes 200000",
	             "--roots-from-games 5 --nodes 20000");
	sh = replace(sh, "--positions 20", "--positions 6");
	sh = replace_all(sh, "127.0.0.1:8080", addr);
	snprintf(path, sizeof path, "%s/guide.sh", dir);
	char *script = NULL, cwd[4096];
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_true(asprintf(&script, "set -eu\nln -s %s/tests tests\n%s", cwd, sh) > 0);
	assert_int_equal(ts_write_file(path, script, strlen(script)), 0);
	free(script);
	free(sh);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "cd %s && timeout 900 bash guide.sh", dir);
	if (rc != 0) fail_msg("the guide's commands failed (%d):\n%s\n%s", rc, out, err);

	/* 1-3: a book whose start position has a move valued by analysis. */
	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	assert_non_null(json_object_get(q, "bestmove"));
	const char *src = NULL;
	json_t *moves = json_object_get(q, "moves"), *m;
	size_t i;
	json_array_foreach(moves, i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "move")),
		            json_string_value(json_object_get(q, "bestmove"))))
			src = json_string_value(json_object_get(m, "value_source"));
	}
	assert_true(src && (!strcmp(src, "thought") || !strcmp(src, "minimax")));
	json_decref(q);
	assert_non_null(strstr(out, "unvalued: game comment only"));
	/* 4: a YaneuraOu file and the options to play it. */
	snprintf(path, sizeof path, "%s/book.db", dir);
	char *db = ts_read_file(path, NULL);
	assert_non_null(db);
	assert_int_equal(strncmp(db, "#YANEURAOU-DB2016 1.00\n", 23), 0);
	free(db);
	assert_non_null(strstr(out, "setoption name BookDepthLimit value "));
	/* 5: the match's summary and records. */
	assert_non_null(strstr(out, "match A "));
	assert_non_null(strstr(out, "exit eval A "));
	/* ... and A played from its book. */
	const char *bp = strstr(out, "book plies A ");
	assert_non_null(bp);
	assert_true(strtod(bp + strlen("book plies A "), NULL) > 0);
	assert_null(strstr(err, "gave no move in any game"));
	snprintf(path, sizeof path, "%s/match/game-0004.csa", dir);
	assert_int_equal(access(path, R_OK), 0);
	/* The cluster: the worker's results are in the book, the backup checks. */
	assert_non_null(strstr(out, "worker positions "));
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/book-backup", ts_joseki(), dir), 0);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_guide__the_guide_s_commands_make_what_it_says),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
