/*
 * tests/search/test_usi_server.c — the USI server in-process (search/usi_server.h):
 * the time management of `go` as numbers, a session over memory streams, the
 * book callback (its legal move played at once, an illegal one ignored, not
 * asked for infinite searches), a held bestmove released by the end of input,
 * every clock form of `go` answered, and on a fake clock (each reading 0.1 to
 * 6.4 ms later) a search that never uses more than its byoyomi or clock.
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
	/* A short movetime keeps nine tenths of it, never below 10 ms. */
	g = (UsiGo){.movetime = 50};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 45);
	assert_int_equal(l.soft_ms, 45);
	g = (UsiGo){.movetime = 5};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 10);

	/* 60 s on the clock and 10 s byoyomi: a 40th plus the byoyomi as the
	 * target (half of it as the soft limit), at most a quarter plus the
	 * byoyomi. */
	g = (UsiGo){.time = {60000, 0}, .byoyomi = 10000, .timed = true};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 60000 / 4 + 10000);
	assert_int_equal(l.soft_ms, (60000 / USI_MOVES_TO_GO + 10000) / 2);
	/* White has no time left: byoyomi only, less the margin. */
	usi_go_limits(&l, &g, WHITE, 1);
	assert_int_equal(l.hard_ms, 10000 - USI_TIME_MARGIN_MS);
	assert_int_equal(l.soft_ms, (10000 - USI_TIME_MARGIN_MS) / 2);
	/* Fischer: 10 s and 1 s increment. */
	g = (UsiGo){.time = {10000, 10000}, .inc = {1000, 1000}, .timed = true};
	usi_go_limits(&l, &g, WHITE, 1);
	assert_int_equal(l.hard_ms, 10000 / 4 + 1000);
	assert_int_equal(l.soft_ms, (10000 / USI_MOVES_TO_GO + 1000 * 3 / 4) / 2);
	/* Fischer with almost nothing left: never more than the clock less the
	 * margin (the increment only comes after the move). */
	g = (UsiGo){.time = {100, 100}, .inc = {1000, 1000}, .timed = true};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 100 - USI_TIME_MARGIN_MS);
	assert_true(l.soft_ms <= l.hard_ms);
	/* Sudden death: a 40th, at most a quarter. */
	g = (UsiGo){.time = {40000, 40000}, .timed = true};
	usi_go_limits(&l, &g, BLACK, 1);
	assert_int_equal(l.hard_ms, 10000);
	assert_int_equal(l.soft_ms, 500);
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

/*
 * A fake clock: every reading advances it by step_ns, so a search's time is
 * a function of how often it looks at the clock, not of the machine's speed
 * or load. max_ns is the latest reading.
 */
typedef struct {
	int64_t now_ns, step_ns;
} FakeClock;

static int64_t fake_now(void *ctx)
{
	FakeClock *c = ctx;
	c->now_ns += c->step_ns;
	return c->now_ns;
}

static char *session_clock(const char *input, FakeBook *book, FakeClock *clock);

/* Runs a session over memory streams; returns what the server wrote. */
static char *session(const char *input, FakeBook *book)
{
	return session_clock(input, book, NULL);
}

static char *session_clock(const char *input, FakeBook *book, FakeClock *clock)
{
	FILE *in = fmemopen((void *)input, strlen(input), "r");
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(in);
	assert_non_null(out);
	UsiServerConfig cfg = {.in = in, .out = out};
	if (clock) {
		cfg.now_ns = fake_now;
		cfg.now_ctx = clock;
	}
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

static void assert_legal_bestmove(const char *out, const char *spec);

static void test_usi_server__a_session_over_streams(void **state)
{
	(void)state;
	char *out = session("usi\nisready\nsetoption name MultiPV value 2\n"
	                    "position startpos moves 7g7f\ngo depth 2\n",
	                    NULL);
	assert_non_null(strstr(out, "id name joseki\n"));
	assert_non_null(strstr(out, "option name USI_Ponder type check default false\n"));
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

	/* A position it cannot read after a good one: go resigns, not a move of
	 * the position before (it answered for that one); a good position again
	 * is searched. */
	static const char *const BAD[] = {"startpos moves 7g7f 7g7f", "sfen garbage",
	                                  "startpos moves 1a1b"};
	for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
		char input[256];
		snprintf(input, sizeof input,
		         "position startpos\nposition %s\ngo depth 1\nposition startpos moves "
		         "7g7f\ngo depth 1\n",
		         BAD[i]);
		out = session(input, NULL);
		const char *b = strstr(out, "bestmove ");
		if (!strstr(out, "info string bad position") || !b ||
		    strncmp(b, "bestmove resign\n", 16))
			fail_msg("position %s:\n%s", BAD[i], out);
		assert_legal_bestmove(b + 9, "startpos moves 7g7f");
		free(out);
	}
	/* MultiPV out of range: taken to the nearest end, and said. */
	out = session("setoption name MultiPV value 40\nsetoption name MultiPV value 0\n", NULL);
	assert_non_null(strstr(out, "info string MultiPV must be 1..32; 32 taken\n"));
	assert_non_null(strstr(out, "info string MultiPV must be 1..32; 1 taken\n"));
	free(out);
	/* Not a number: refused, what is kept said (it was "1 taken", as if out
	 * of range); a hash out of range is refused (taken to 65536 MB a typo
	 * would allocate 64 GB), the hash kept said. */
	out = session("setoption name MultiPV value 3\nsetoption name MultiPV value abc\n"
	              "setoption name USI_Hash value 0\nsetoption name USI_Hash value 99999999\n"
	              "setoption name USI_Hash value 32 \nsetoption name Hash value x\n",
	              NULL);
	assert_non_null(
	    strstr(out, "info string MultiPV wants a number 1..32, not 'abc'; 3 kept\n"));
	assert_int_equal(count(out, "info string USI_Hash must be 1..65536; 16 kept\n"), 2);
	assert_non_null(
	    strstr(out, "info string USI_Hash wants a number 1..65536, not 'x'; 32 kept\n"));
	free(out);
	/* Threads 1 is taken without a word, another said (the change above had
	 * Threads 1 said refused too). */
	out = session("setoption name Threads value 1\n", NULL);
	assert_null(strstr(out, "Threads"));
	free(out);
	out = session("setoption name Threads value 2\n", NULL);
	assert_non_null(strstr(out, "info string only Threads 1 is supported\n"));
	free(out);
	/* go mate: no mate search, said at once as USI has it. */
	out = session("position startpos\ngo mate 5\n", NULL);
	assert_non_null(strstr(out, "checkmate notimplemented\n"));
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

	/* go ponder in a position the book answers: nothing searched, the book's
	 * move at ponderhit (it searched and played that search's move), and at
	 * stop. */
	static const char *const END[] = {"ponderhit", "stop"};
	for (int i = 0; i < 2; i++) {
		b = (FakeBook){.move = "2g2f"};
		char input[256];
		snprintf(input, sizeof input,
		         "position startpos\ngo ponder btime 1000 wtime 1000 byoyomi 100\n%s\n",
		         END[i]);
		out = session(input, &b);
		assert_int_equal(b.asked, 1);
		if (strcmp(out, "info string book move 2g2f\nbestmove 2g2f\n"))
			fail_msg("%s: %s", END[i], out);
		free(out);
	}
}

/* The first bestmove of out, legal in the position spec. */
static void assert_legal_bestmove(const char *out, const char *spec)
{
	const char *b = strstr(out, "bestmove ");
	if (!b) fail_msg("no bestmove for %s in:\n%s", spec, out);
	Position pos;
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	char mv[16];
	assert_int_equal(sscanf(b + 9, "%15s", mv), 1);
	Move m;
	if (usi_move_parse_legal(&m, &pos, mv, strlen(mv), NULL) < 0)
		fail_msg("bestmove %s is not legal in %s", mv, spec);
}

static const char *const SPECS[] = {
    "startpos",
    "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c",
    "sfen l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
};

/* Every clock form of `go` gets one legal bestmove. */
static void test_usi_server__every_go_form_is_answered(void **state)
{
	(void)state;
	static const char *const GOS[] = {
	    "go btime 2000 wtime 2000 byoyomi 100",
	    "go btime 0 wtime 0 byoyomi 100",
	    "go btime 3000 wtime 3000 binc 100 winc 100",
	    "go btime 500 wtime 500",
	    "go movetime 150",
	    "go nodes 3000",
	    "go depth 3",
	    "go infinite", /* stopped by the end of input */
	};
	for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++)
		for (size_t k = 0; k < sizeof GOS / sizeof GOS[0]; k++) {
			char input[512];
			snprintf(input, sizeof input, "position %s\n%s\n", SPECS[i], GOS[k]);
			FakeClock clock = {0, 1000000};
			char *out = session_clock(input, NULL, &clock);
			assert_int_equal(count(out, "bestmove "), 1);
			assert_legal_bestmove(out, SPECS[i]);
			free(out);
		}
}

/*
 * With 100 ms of byoyomi (and no time, or a little, on the clock) the search
 * never reads its clock past what it has: the fake clock advances 1 ms at each
 * reading, so the test measures the search's own decisions, not the machine.
 */
static void test_usi_server__byoyomi_is_never_exceeded_on_a_fake_clock(void **state)
{
	(void)state;
	static const struct {
		const char *go;
		int64_t allowed_ms;
	} CASES[] = {
	    {"go btime 0 wtime 0 byoyomi 100", 100},
	    {"go btime 200 wtime 200 byoyomi 100", 200 + 100},
	    {"go btime 100 wtime 100 binc 50 winc 50", 100},
	};
	for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++)
		for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
			for (int64_t step = 100000; step <= 4000000; step *= 4) {
				char input[512];
				snprintf(input, sizeof input, "position %s\n%s\n", SPECS[i],
				         CASES[k].go);
				FakeClock clock = {0, step};
				char *out = session_clock(input, NULL, &clock);
				assert_int_equal(count(out, "bestmove "), 1);
				assert_legal_bestmove(out, SPECS[i]);
				/* The first reading starts the search (engine_new reads the
				 * system clock, not this one). */
				int64_t used_ms = (clock.now_ns - step) / 1000000;
				if (used_ms > CASES[k].allowed_ms)
					fail_msg("%s, %s, %lld ns a reading: used %lld ms of %lld",
					         SPECS[i], CASES[k].go, (long long)step,
					         (long long)used_ms,
					         (long long)CASES[k].allowed_ms);
				free(out);
			}
		}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usi_server__go_limits_follow_the_clock),
	    cmocka_unit_test(test_usi_server__a_session_over_streams),
	    cmocka_unit_test(test_usi_server__the_book_callback),
	    cmocka_unit_test(test_usi_server__every_go_form_is_answered),
	    cmocka_unit_test(test_usi_server__byoyomi_is_never_exceeded_on_a_fake_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
