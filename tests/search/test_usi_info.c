/*
 * tests/search/test_usi_info.c — the USI info-line parser over many line
 * shapes: the docs/search.md example, scores (cp, mate in plies, mate +/-, -0),
 * bounds, string, pv last, unknown keywords, malformed lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "search/search.h"
#include "search/usi_info.h"
#include "shogi/notation.h"

static int parse(UsiInfo *info, const char *line)
{
	char err[USI_INFO_ERRLEN];
	return usi_info_parse(info, line, strlen(line), err);
}

static void assert_move(Move m, const char *usi)
{
	char buf[USI_MOVE_MAX];
	usi_move_write(m, buf);
	assert_string_equal(buf, usi);
}

static void test_search__info_parses_the_formats_example(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info depth 11 seldepth 13 multipv 1 score cp 2 nodes 100135 "
	                            "nps 1472573 hashfull 12 time 68 pv 1g1f 8c8d 8g8f"),
	                 0);
	assert_int_equal(in.depth, 11);
	assert_int_equal(in.seldepth, 13);
	assert_int_equal(in.multipv, 1);
	assert_false(in.mate);
	assert_int_equal(in.cp, 2);
	assert_int_equal(in.value, 2);
	assert_int_equal(in.nodes, 100135);
	assert_int_equal(in.nps, 1472573);
	assert_int_equal(in.hashfull, 12);
	assert_int_equal(in.time_ms, 68);
	assert_int_equal(in.pv_len, 3);
	assert_move(in.pv[0], "1g1f");
	assert_move(in.pv[1], "8c8d");
	assert_move(in.pv[2], "8g8f");
	assert_int_equal(in.bound, USI_BOUND_EXACT);
	assert_true(usi_info_is_final(&in));
	assert_true(in.fields & USI_INFO_SCORE);
	assert_false(in.fields & USI_INFO_STRING);
}

static void test_search__info_mate_counts_plies(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info depth 5 score mate 3 pv G*5b 5a4a G*4b"), 0);
	assert_true(in.mate);
	assert_false(in.mated);
	assert_int_equal(in.mate_plies, 3);
	assert_int_equal(in.value, VALUE_MATE - 3);

	assert_int_equal(parse(&in, "info depth 5 score mate -4 pv 5a4a"), 0);
	assert_true(in.mated);
	assert_int_equal(in.value, -(VALUE_MATE - 4));

	/* -0: mated right now; the sign alone carries the meaning */
	assert_int_equal(parse(&in, "info depth 0 score mate -0"), 0);
	assert_true(in.mated);
	assert_int_equal(in.value, -VALUE_MATE);
	assert_false(usi_info_is_final(&in)); /* no pv */

	assert_int_equal(parse(&in, "info score mate +7 pv 7g7f"), 0);
	assert_int_equal(in.value, VALUE_MATE - 7);
}

static void test_search__info_mate_without_distance(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info depth 9 score mate + pv 7g7f"), 0);
	assert_true(in.mate);
	assert_true(in.mate_unknown);
	assert_true(in.value > VALUE_MATE_IN_MAX);
	assert_int_equal(parse(&in, "info depth 9 score mate - pv 7g7f"), 0);
	assert_true(in.mate_unknown);
	assert_true(in.value < -VALUE_MATE_IN_MAX);
	/* very long mates are clamped, never below the mate threshold */
	assert_int_equal(parse(&in, "info score mate 5000 pv 7g7f"), 0);
	assert_true(in.value > VALUE_MATE_IN_MAX);
}

static void test_search__info_cp_is_clamped_below_mate_range(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info score cp 99999999 pv 7g7f"), 0);
	assert_int_equal(in.cp, 99999999);
	assert_int_equal(in.value, VALUE_MATE_IN_MAX - 1);
	assert_int_equal(parse(&in, "info score cp -99999999999999 pv 7g7f"), 0);
	assert_int_equal(in.value, -(VALUE_MATE_IN_MAX - 1));
	assert_int_equal(parse(&in, "info score cp +15 pv 7g7f"), 0);
	assert_int_equal(in.value, 15);
}

static void test_search__info_bound_lines_are_not_final(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(
	    parse(&in, "info depth 3 multipv 2 score cp 30 lowerbound nodes 4 pv 2g2f"), 0);
	assert_int_equal(in.bound, USI_BOUND_LOWER);
	assert_int_equal(in.multipv, 2);
	assert_int_equal(in.nodes, 4);
	assert_false(usi_info_is_final(&in));
	assert_int_equal(parse(&in, "info depth 3 score mate 5 upperbound pv 2g2f"), 0);
	assert_int_equal(in.bound, USI_BOUND_UPPER);
	assert_false(usi_info_is_final(&in));
}

static void test_search__info_string_swallows_the_rest(void **state)
{
	(void)state;
	UsiInfo in;
	const char *line = "info depth 2 string score cp 5 pv 7g7f  \r\n";
	assert_int_equal(usi_info_parse(&in, line, strlen(line), NULL), 0);
	assert_true(in.fields & USI_INFO_STRING);
	assert_int_equal(in.string_len, strlen("score cp 5 pv 7g7f"));
	assert_memory_equal(in.string, "score cp 5 pv 7g7f", in.string_len);
	assert_false(in.fields & USI_INFO_SCORE);
	assert_false(in.fields & USI_INFO_PV);
	assert_false(usi_info_is_final(&in));

	assert_int_equal(parse(&in, "info string"), 0);
	assert_int_equal(in.string_len, 0);
}

static void test_search__info_pv_is_last_and_stops_at_non_moves(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info score cp 1 pv 7g7f 3c3d rep_draw depth 99"), 0);
	assert_int_equal(in.pv_len, 2);
	assert_int_equal(in.depth, 0); /* after pv nothing is read */
	assert_false(in.fields & USI_INFO_DEPTH);

	assert_int_equal(parse(&in, "info depth 1 score mate -0 pv resign"), 0);
	assert_int_equal(in.pv_len, 0);
	assert_false(usi_info_is_final(&in));

	assert_int_equal(parse(&in, "info score cp 0 pv P*5e 8h2b+ 3a2b"), 0);
	assert_int_equal(in.pv_len, 3);
	assert_move(in.pv[0], "P*5e");
	assert_move(in.pv[1], "8h2b+");
}

static void test_search__info_long_pv_is_truncated(void **state)
{
	(void)state;
	UsiInfo in;
	char line[2048] = "info score cp 0 pv";
	for (int i = 0; i < USI_INFO_PV_MAX + 10; i++) strcat(line, i % 2 ? " 3c3d" : " 7g7f");
	assert_int_equal(parse(&in, line), 0);
	assert_int_equal(in.pv_len, USI_INFO_PV_MAX);
	assert_true(in.pv_truncated);
}

static void test_search__info_unknown_keywords_are_skipped(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info depth 4 currmove 7g7f currmovenumber 3 cpuload 500 "
	                            "frobnicate score cp 7 pv 7g7f"),
	                 0);
	assert_int_equal(in.depth, 4);
	assert_true(in.fields & USI_INFO_CURRMOVE);
	assert_move(in.currmove, "7g7f");
	assert_int_equal(in.value, 7);
	assert_true(usi_info_is_final(&in));
	/* spacing and tabs are free */
	assert_int_equal(parse(&in, "  info\tdepth  6\t score cp -3   pv 7g7f"), 0);
	assert_int_equal(in.depth, 6);
	assert_int_equal(in.value, -3);
}

static void test_search__info_multipv_defaults_to_one(void **state)
{
	(void)state;
	UsiInfo in;
	assert_int_equal(parse(&in, "info depth 1 score cp 0 pv 7g7f"), 0);
	assert_int_equal(in.multipv, 1);
	assert_false(in.fields & USI_INFO_MULTIPV);
	assert_int_equal(parse(&in, "info multipv 17 score cp 0 pv 7g7f"), 0);
	assert_int_equal(in.multipv, 17);
}

static void test_search__info_malformed_lines_are_rejected(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",
	    "bestmove 7g7f",
	    "infodepth 3",
	    "info depth",
	    "info depth x score cp 1 pv 7g7f",
	    "info depth -1",
	    "info depth 3x",
	    "info seldepth 99999999999999999999999",
	    "info multipv 0 score cp 1 pv 7g7f",
	    "info score",
	    "info score cp",
	    "info score cp pv 7g7f",
	    "info score cp 1x pv 7g7f",
	    "info score mate pv 7g7f",
	    "info score mate ++3 pv 7g7f",
	    "info score foo 3 pv 7g7f",
	    "info lowerbound score cp 3",
	    "info score cp 1 pv",
	    "info score cp 1 pv hello",
	    "info nodes -5",
	    "info time 1.5",
	    "info currmove zz",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		UsiInfo in;
		char err[USI_INFO_ERRLEN];
		int rc = usi_info_parse(&in, bad[i], strlen(bad[i]), err);
		if (rc != SEARCH_EPROTOCOL) fail_msg("accepted malformed line \"%s\"", bad[i]);
		assert_true(strstr(err, "info line, byte") != NULL);
	}
}

static void test_search__info_error_names_token_and_offset(void **state)
{
	(void)state;
	UsiInfo in;
	char err[USI_INFO_ERRLEN];
	const char *line = "info depth 3 score cp abc pv 7g7f";
	assert_int_equal(usi_info_parse(&in, line, strlen(line), err), SEARCH_EPROTOCOL);
	assert_non_null(strstr(err, "\"abc\""));
	assert_non_null(strstr(err, "byte 22"));
}

static void test_search__info_reads_only_len_bytes(void **state)
{
	(void)state;
	UsiInfo in;
	/* The bytes after len must not be seen: here they would add a pv move. */
	const char *line = "info score cp 1 pv 7g7f 3c3d";
	assert_int_equal(usi_info_parse(&in, line, strlen(line) - 5, NULL), 0);
	assert_int_equal(in.pv_len, 1);
	/* Embedded NUL bytes are ordinary (bad) characters. */
	const char nul[] = "info depth 3\0 score cp 1 pv 7g7f";
	assert_int_equal(usi_info_parse(&in, nul, sizeof nul - 1, NULL), SEARCH_EPROTOCOL);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_search__info_parses_the_formats_example),
	    cmocka_unit_test(test_search__info_mate_counts_plies),
	    cmocka_unit_test(test_search__info_mate_without_distance),
	    cmocka_unit_test(test_search__info_cp_is_clamped_below_mate_range),
	    cmocka_unit_test(test_search__info_bound_lines_are_not_final),
	    cmocka_unit_test(test_search__info_string_swallows_the_rest),
	    cmocka_unit_test(test_search__info_pv_is_last_and_stops_at_non_moves),
	    cmocka_unit_test(test_search__info_long_pv_is_truncated),
	    cmocka_unit_test(test_search__info_unknown_keywords_are_skipped),
	    cmocka_unit_test(test_search__info_multipv_defaults_to_one),
	    cmocka_unit_test(test_search__info_malformed_lines_are_rejected),
	    cmocka_unit_test(test_search__info_error_names_token_and_offset),
	    cmocka_unit_test(test_search__info_reads_only_len_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
