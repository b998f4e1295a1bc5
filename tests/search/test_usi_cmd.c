/*
 * tests/search/test_usi_cmd.c — `joseki usi` driven as a child process with a
 * scripted session on its stdin, and `joseki bench`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "search/engine.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define BENCH_PATH "tests/data/positions/bench-v1.sfen"

/* Runs `joseki usi` with the shell snippet script feeding its stdin. */
static int run_usi(const char *script, char **out)
{
	return ts_runf(out, NULL, "{ %s; } | %s usi", script, ts_joseki());
}

static int count_lines_starting(const char *out, const char *prefix)
{
	int n = 0;
	size_t len = strlen(prefix);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, len)) n++;
	return n;
}

/* The move of the (single) bestmove line, checked legal in spec. */
static void assert_bestmove_legal(const char *out, const char *spec)
{
	assert_int_equal(count_lines_starting(out, "bestmove "), 1);
	const char *b = strstr(out, "bestmove ");
	assert_non_null(b);
	b += strlen("bestmove ");
	size_t len = strcspn(b, " \n");
	static Position pos;
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(&pos, spec, err), 0);
	Move m;
	if (usi_move_parse_legal(&m, &pos, b, len, err) < 0)
		fail_msg("bestmove %.*s: %s", (int)len, b, err);
}

static void test_usi_cmd__session_handshake_search_and_legal_bestmove(void **state)
{
	(void)state;
	char *out;
	/* End of input lets the bounded search finish before the engine exits. */
	int rc = run_usi(
	    "printf 'usi\\nisready\\nusinewgame\\nposition startpos moves 7g7f\\ngo depth 4\\n'",
	    &out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "id name joseki\n"));
	assert_non_null(strstr(out, "option name MultiPV type spin"));
	assert_non_null(strstr(out, "option name USI_Hash type spin"));
	assert_non_null(strstr(out, "\nusiok\n"));
	assert_non_null(strstr(out, "\nreadyok\n"));
	assert_true(strstr(out, "usiok") < strstr(out, "readyok"));
	for (int d = 1; d <= 4; d++) {
		char want[64];
		snprintf(want, sizeof want, "info depth %d seldepth ", d);
		assert_non_null(strstr(out, want));
	}
	const char *info = strstr(out, "info depth 4 ");
	assert_non_null(strstr(info, " multipv 1 score cp "));
	assert_non_null(strstr(info, " nps "));
	assert_non_null(strstr(info, " pv "));
	assert_bestmove_legal(out, "startpos moves 7g7f");
	free(out);
}

/* A session where each command waits for the answer it depends on (a line
 * of the engine's output) instead of for a while. */
#define USI_WAIT_MS 30000

static void usi_start(TsChild *c)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "exec %s usi", ts_joseki());
	assert_int_equal(ts_child_start(c, cmd), 0);
}

static void usi_wait(TsChild *c, const char *line)
{
	if (!ts_child_wait(c, line, USI_WAIT_MS)) fail_msg("joseki usi never said \"%s\"", line);
}

/* Sends quit, expects exit 0; returns the whole session's output (free it). */
static char *usi_quit(TsChild *c)
{
	ts_child_send(c, "quit\n");
	assert_int_equal(ts_child_end(c, true, USI_WAIT_MS), 0);
	char *out = c->text;
	c->text = NULL;
	ts_child_free(c);
	return out;
}

static void test_usi_cmd__go_infinite_holds_bestmove_until_stop(void **state)
{
	(void)state;
	TsChild c;
	usi_start(&c);
	/* Mate in 1 is found at once, but an infinite search must not answer
	 * until told to stop: two isready are answered, and no bestmove yet. */
	ts_child_send(&c, "position sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1\ngo infinite\n");
	usi_wait(&c, "score mate 1 ");
	ts_child_send(&c, "isready\n");
	usi_wait(&c, "readyok\n");
	ts_child_send(&c, "isready\n");
	usi_wait(&c, "readyok\n");
	assert_null(strstr(c.text, "bestmove"));
	ts_child_send(&c, "stop\n");
	usi_wait(&c, "bestmove");
	char *out = usi_quit(&c);
	assert_true(strstr(out, "readyok") < strstr(out, "bestmove"));
	assert_bestmove_legal(out, "sfen 4k4/9/4G4/9/9/9/9/9/4K4 b G 1");
	assert_non_null(strstr(out, "bestmove G*5b"));
	free(out);

	usi_start(&c);
	ts_child_send(&c, "position startpos\ngo infinite\n");
	usi_wait(&c, "info depth 1 ");
	ts_child_send(&c, "stop\n");
	usi_wait(&c, "bestmove");
	out = usi_quit(&c);
	assert_bestmove_legal(out, "startpos");
	free(out);
}

static void test_usi_cmd__quit_during_a_search_exits_0(void **state)
{
	(void)state;
	TsChild c;
	usi_start(&c);
	ts_child_send(&c, "usi\nposition startpos\ngo infinite\n");
	usi_wait(&c, "usiok\n");
	usi_wait(&c, "info depth 1 ");
	/* quit while searching ends it, stdin still open */
	ts_child_send(&c, "quit\n");
	assert_int_equal(ts_child_end(&c, false, USI_WAIT_MS), 0);
	ts_child_free(&c);
}

static void test_usi_cmd__time_controls_end_the_search(void **state)
{
	(void)state;
	char *out;
	int rc = run_usi(
	    "printf 'position startpos moves 2g2f\\ngo btime 2000 wtime 2000 byoyomi 300\\n'",
	    &out);
	assert_int_equal(rc, 0);
	assert_bestmove_legal(out, "startpos moves 2g2f");
	free(out);
	rc = run_usi("printf 'position startpos\\ngo movetime 200\\n'", &out);
	assert_int_equal(rc, 0);
	assert_bestmove_legal(out, "startpos");
	free(out);
	/* Pondering, then ponderhit: the clock applies from then on and ends the
	 * search by itself (no stop). */
	TsChild c;
	usi_start(&c);
	ts_child_send(&c, "position startpos\ngo ponder btime 1000 wtime 1000 byoyomi 100\n");
	usi_wait(&c, "info depth 1 ");
	ts_child_send(&c, "ponderhit\n");
	usi_wait(&c, "bestmove");
	out = usi_quit(&c);
	assert_bestmove_legal(out, "startpos");
	free(out);
}

static void test_usi_cmd__ponder_answers_only_after_ponderhit(void **state)
{
	(void)state;
	TsChild c;
	usi_start(&c);
	/* The depth-3 search ends at once, but a pondering engine waits. */
	ts_child_send(&c, "position startpos\ngo ponder depth 3\n");
	usi_wait(&c, "info depth 3 ");
	ts_child_send(&c, "isready\n");
	usi_wait(&c, "readyok\n");
	assert_null(strstr(c.text, "bestmove"));
	ts_child_send(&c, "ponderhit\n");
	usi_wait(&c, "bestmove");
	ts_child_send(&c, "isready\n");
	usi_wait(&c, "readyok\n");
	char *out = usi_quit(&c);
	const char *first = strstr(out, "readyok");
	const char *best = strstr(out, "bestmove");
	assert_non_null(best);
	assert_true(first < best);
	assert_non_null(strstr(best, "readyok"));
	assert_bestmove_legal(out, "startpos");
	free(out);
}

static void test_usi_cmd__multipv_option_gives_k_lines(void **state)
{
	(void)state;
	char *out;
	int rc = run_usi(
	    "printf 'setoption name MultiPV value 3\\nposition startpos\\ngo depth 3\\n'", &out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "info depth 3 seldepth"));
	const char *d3 = strstr(out, "info depth 3 ");
	assert_non_null(strstr(d3, " multipv 1 "));
	assert_non_null(strstr(d3, " multipv 2 "));
	assert_non_null(strstr(d3, " multipv 3 "));
	assert_null(strstr(out, " multipv 4 "));
	assert_bestmove_legal(out, "startpos");
	free(out);
}

static void test_usi_cmd__mated_resigns_and_declaration_wins(void **state)
{
	(void)state;
	char *out;
	int rc =
	    run_usi("printf 'position sfen 4k4/4G4/4G4/9/9/9/9/9/4K4 w - 1\\ngo depth 3\\n'", &out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "bestmove resign\n"));
	free(out);

	const char *decl = "sfen RBGGGGSS1/SS2K4/9/9/9/9/9/9/4k4 b 10P 1";
	static Position pos;
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(&pos, decl, err), 0);
	assert_true(pos_declaration_ok(&pos));
	rc =
	    ts_runf(&out, NULL, "printf 'position %s\\ngo depth 3\\n' | %s usi", decl, ts_joseki());
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "bestmove win\n"));
	free(out);
}

/* A position it cannot read is said, and go then resigns: the position
 * before it (which it answered for, once) is not the game's, and its move
 * could be illegal there. */
static void test_usi_cmd__bad_position_is_reported_and_go_resigns(void **state)
{
	(void)state;
	char *out;
	int rc = run_usi("printf 'position startpos moves 7g7f\\nposition startpos moves 7g7f "
	                 "7g7f\\ngo depth 2\\n'",
	                 &out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "info string bad position"));
	assert_non_null(strstr(out, "bestmove resign\n"));
	free(out);
}

static void test_usi_cmd__book_answers_known_positions_and_searches_the_rest(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_non_null(dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/book --positions 200 --quiet", ts_joseki(), dir), 0);
	char *out;
	/* The start position is in every synthetic book; the lone kings are not. */
	int rc =
	    ts_runf(&out, NULL,
	            "printf 'position startpos\\ngo depth 3\\nposition sfen 4k4/9/9/9/9/9/9/9/4K4 "
	            "b - 1\\ngo depth 2\\n' | %s usi --book %s/book",
	            ts_joseki(), dir);
	assert_int_equal(rc, 0);
	const char *book = strstr(out, "info string book move ");
	assert_non_null(book);
	char mv[USI_MOVE_MAX + 1] = "";
	assert_int_equal(sscanf(book, "info string book move %6s", mv), 1);
	char want[32];
	snprintf(want, sizeof want, "\nbestmove %s\n", mv);
	const char *first = strstr(out, want);
	assert_non_null(first);
	/* No search before the book answer; a search for the second position. */
	assert_null(strstr(out, "info depth 3 "));
	assert_non_null(strstr(first, "info depth 2 "));
	assert_int_equal(count_lines_starting(out, "bestmove "), 2);
	static Position pos;
	char err[SHOGI_ERRLEN];
	Move m;
	assert_int_equal(position_parse(&pos, "startpos", err), 0);
	assert_int_equal(usi_move_parse_legal(&m, &pos, mv, strlen(mv), err), 0);
	free(out);
	/* A book that does not exist is an error. */
	char *errs;
	assert_int_equal(
	    ts_runf(NULL, &errs, "printf 'quit\\n' | %s usi --book %s/none", ts_joseki(), dir), 1);
	assert_non_null(strstr(errs, "joseki: usi: "));
	free(errs);
	ts_rmtree(dir);
	free(dir);
}

/* The compiled-in bench list is the fixture file, line for line. */
static void test_usi_cmd__bench_list_matches_the_fixture(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(ts_runf(&out, NULL, "%s bench --list", ts_joseki()), 0);
	char *file = ts_read_file(BENCH_PATH, NULL);
	assert_non_null(file);
	char want[8192] = "";
	for (char *save, *l = strtok_r(file, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#' || l[strspn(l, " \t")] == '\0') continue;
		strncat(want, l, sizeof want - strlen(want) - 2);
		strcat(want, "\n");
	}
	assert_string_equal(out, want);
	free(file);
	free(out);
}

static uint64_t bench_nodes(const char *out)
{
	const char *b = strstr(out, "bench nodes ");
	assert_non_null(b);
	unsigned long long nodes, ms, nps;
	assert_int_equal(sscanf(b, "bench nodes %llu time_ms %llu nps %llu", &nodes, &ms, &nps), 3);
	assert_true(nodes > 0);
	return nodes;
}

static void test_usi_cmd__bench_node_count_is_deterministic(void **state)
{
	(void)state;
	char *a, *b, *c, *err;
	assert_int_equal(ts_runf(&a, &err, "%s bench --depth 3", ts_joseki()), 0);
	/* One progress line per position on stderr. */
	assert_int_equal(count_lines_starting(err, "bench "), 7);
	free(err);
	assert_int_equal(ts_runf(&b, NULL, "%s bench --depth 3", ts_joseki()), 0);
	/* The same through the USI command. */
	assert_int_equal(run_usi("printf 'bench 3\\nquit\\n'", &c), 0);
	assert_int_equal(bench_nodes(a), bench_nodes(b));
	assert_int_equal(bench_nodes(a), bench_nodes(c));
	/* The last stdout line is the figure. */
	assert_int_equal(count_lines_starting(a, "bench nodes "), 1);
	assert_int_equal(a[strlen(a) - 1], '\n');
	free(a);
	free(b);
	free(c);
	assert_int_equal(ts_runf(NULL, NULL, "%s bench --depth 0", ts_joseki()), 2);
}

/* usi --book follows its book: once BOOK/data.mdb is another file (as a
 * compaction or a whole-book minimax leaves it: renamed over, LMDB's lock
 * file removed), the next book move is the new file's. The book is empty
 * first (the start position searched), then a synthetic book's (which holds
 * the start position). */
static void test_usi_cmd__book_follows_a_rebuilt_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/book", dir);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	bookdb_free(db);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s/full --positions 200 --quiet", ts_joseki(), dir), 0);
	char *out = NULL;
	/* The file is replaced once the first answer is out (an event, not a
	 * time: the loop waits for the line). */
	int rc = ts_runf(&out, NULL,
	                 "cd %s && mkfifo in && { %s usi --book book <in >out & p=$!; exec 3>in; "
	                 "printf 'position startpos\ngo depth 2\n' >&3; "
	                 "until grep -q '^bestmove' out; do sleep 0.05; done; "
	                 "mv full/data.mdb book/data.mdb && rm -f book/lock.mdb; "
	                 "printf 'position startpos\ngo depth 2\nquit\n' >&3; exec 3>&-; "
	                 "wait $p; cat out; }",
	                 dir, ts_joseki());
	assert_int_equal(rc, 0);
	assert_int_equal(count_lines_starting(out, "bestmove "), 2);
	/* The empty book: a search. The new file: its book move, after the
	 * first answer. */
	const char *first = strstr(out, "\nbestmove ");
	const char *bm = strstr(out, "info string book move ");
	assert_non_null(first);
	assert_non_null(strstr(out, "info depth 2 "));
	assert_non_null(bm);
	assert_true(bm > first);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usi_cmd__session_handshake_search_and_legal_bestmove),
	    cmocka_unit_test(test_usi_cmd__go_infinite_holds_bestmove_until_stop),
	    cmocka_unit_test(test_usi_cmd__quit_during_a_search_exits_0),
	    cmocka_unit_test(test_usi_cmd__time_controls_end_the_search),
	    cmocka_unit_test(test_usi_cmd__ponder_answers_only_after_ponderhit),
	    cmocka_unit_test(test_usi_cmd__multipv_option_gives_k_lines),
	    cmocka_unit_test(test_usi_cmd__mated_resigns_and_declaration_wins),
	    cmocka_unit_test(test_usi_cmd__bad_position_is_reported_and_go_resigns),
	    cmocka_unit_test(test_usi_cmd__book_answers_known_positions_and_searches_the_rest),
	    cmocka_unit_test(test_usi_cmd__book_follows_a_rebuilt_book),
	    cmocka_unit_test(test_usi_cmd__bench_list_matches_the_fixture),
	    cmocka_unit_test(test_usi_cmd__bench_node_count_is_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
