/*
 * tests/search/test_usi_server.c — the USI server in-process (search/usi_server.h):
 * the time management of `go` as numbers, a session over memory streams, the
 * book callback (its legal move played at once, an illegal one ignored, not
 * asked for infinite searches), a held bestmove released by the end of input.
 * tests/search/test_usi_cmd.c runs the same server as `joseki usi` processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search/usi_server.h"
#include "shogi/notation.h"
#include "shogi/position.h"

static void test_usi_server__go_limits_follow_the_clock(void **state)
{
	(void)state;
	EngineLimits l;
	UsiGo g = {.movetime = 1000};
	usi_go_limits(&l, &g, BLACK, 3);
	assert_int_equal(l.hard_ms, 1000 - USI_TIME_MARGIN_MS);
	assert_int_equal(l.soft_ms, 1000 - USI_TIME_MARGIN_MS);
	assert_int_equal(l.multipv, 3);
	g = (UsiGo){.movetime = 30};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 10); /* never below 10 ms */

	/* 60 s on the clock and 10 s byoyomi: a 30th plus the byoyomi (6/10 of
	 * it as the soft limit), at most a fifth plus the byoyomi. */
	g = (UsiGo){.time = {60000, 0}, .byoyomi = 10000, .timed = true};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 60000 / 5 + 10000);
	assert_int_equal(l.soft_ms, (60000 / 30 + 10000) * 6 / 10);
	/* White has no time left: byoyomi only, less the margin. */
	usi_go_limits(&l, &g, WHITE, 1);
	assert_int_equal(l.hard_ms, 10000 - USI_TIME_MARGIN_MS);
	assert_int_equal(l.soft_ms, (10000 - USI_TIME_MARGIN_MS) * 6 / 10);
	/* Fischer: 10 s and 1 s increment. */
	g = (UsiGo){.time = {10000, 10000}, .inc = {1000, 1000}, .timed = true};
	usi_go_limits(&l, &g, WHITE, 1);
	assert_int_equal(l.hard_ms, 10000 / 5 + 1000);
	assert_int_equal(l.soft_ms, (10000 / 30 + 1000) * 6 / 10);
	/* Infinite ignores the clock; depth is bounded by the engine's. */
	g = (UsiGo){.time = {10000, 10000}, .timed = true, .infinite = true, .depth = 500};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 0);
	assert_int_equal(l.soft_ms, 0);
	assert_int_equal(l.depth, ENGINE_MAX_PLY - 1);
	g = (UsiGo){.nodes = 5000};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.nodes, 5000);
	assert_int_equal(l.depth, 0);
}

typedef struct {
	const char *move; /* the book's answer at the start position */
	int asked;
} FakeBook;

static Move fake_book(void *ctx, const Position *pos)
{
	FakeBook *b = ctx;
	b->asked++;
	Position start;
	pos_set_startpos(&start);
	if (pos_key(pos).lo != pos_key(&start).lo || pos_key(pos).hi != pos_key(&start).hi)
		return MOVE_NONE;
	/* Parsed without a legality check: an illegal answer must be refused by
	 * the server itself. */
	Move m = MOVE_NONE;
	if (usi_move_parse(&m, b->move, strlen(b->move), NULL) < 0) return MOVE_NONE;
	return m;
}

/* Runs a session over memory streams; returns what the server wrote. */
static char *session(const char *input, FakeBook *book)
{
	FILE *in = fmemopen((void *)input, strlen(input), "r");
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(in);
	assert_non_null(out);
	UsiServerConfig cfg = {.in = in, .out = out};
	if (book) {
		cfg.book_move = fake_book;
		cfg.book_ctx = book;
	}
	assert_int_equal(usi_server_run(&cfg), 0);
	fclose(in);
	fclose(out);
	return text;
}

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
	return n;
}

static void test_usi_server__a_session_over_streams(void **state)
{
	(void)state;
	char *out = session("usi\nisready\nsetoption name MultiPV value 2\n"
	                    "position startpos moves 7g7f\ngo depth 2\n",
	                    NULL);
	assert_non_null(strstr(out, "id name joseki\n"));
	assert_non_null(strstr(out, "usiok\n"));
	assert_non_null(strstr(out, "readyok\n"));
	assert_non_null(strstr(out, " multipv 2 "));
	/* The end of input lets the bounded search finish: one bestmove, legal. */
	assert_int_equal(count(out, "bestmove "), 1);
	Position pos;
	assert_int_equal(position_parse(&pos, "startpos moves 7g7f", NULL), 0);
	char mv[16];
	assert_int_equal(sscanf(strstr(out, "bestmove ") + 9, "%15s", mv), 1);
	Move m;
	assert_int_equal(usi_move_parse_legal(&m, &pos, mv, strlen(mv), NULL), 0);
	free(out);

	out = session("position sfen nonsense\nunknowncmd\n", NULL);
	assert_non_null(strstr(out, "info string bad position"));
	assert_non_null(strstr(out, "info string unknown command 'unknowncmd'"));
	assert_int_equal(count(out, "bestmove"), 0);
	free(out);
}

static void test_usi_server__the_book_callback(void **state)
{
	(void)state;
	FakeBook b = {.move = "2g2f"};
	char *out = session("position startpos\ngo btime 1000 wtime 1000\n", &b);
	assert_int_equal(b.asked, 1);
	assert_non_null(strstr(out, "info string book move 2g2f\nbestmove 2g2f\n"));
	free(out);

	/* An illegal book move is not played: the engine searches. */
	b = (FakeBook){.move = "5e5d"};
	out = session("position startpos\ngo depth 1\n", &b);
	assert_int_equal(b.asked, 1);
	assert_null(strstr(out, "book move"));
	assert_int_equal(count(out, "bestmove "), 1);
	assert_null(strstr(out, "bestmove 5e5d"));
	free(out);

	/* Out of book: searched. Infinite: the book is not asked, and the end
	 * of input stops the search and releases its single bestmove. */
	b = (FakeBook){.move = "2g2f"};
	out = session("position startpos moves 7g7f\ngo depth 1\nposition startpos\ngo infinite\n",
	              &b);
	assert_int_equal(b.asked, 1);
	assert_null(strstr(out, "book move"));
	assert_int_equal(count(out, "bestmove "), 2);
	free(out);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usi_server__go_limits_follow_the_clock),
	    cmocka_unit_test(test_usi_server__a_session_over_streams),
	    cmocka_unit_test(test_usi_server__the_book_callback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
