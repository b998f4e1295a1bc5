/*
 * tests/shogi/test_errmsg.c — errmsg_escape, the one way foreign bytes reach a
 * terminal or a log: escape sequences, newlines, C1 controls, bidirectional
 * overrides and bytes that are not UTF-8 become \xNN; printable ASCII and
 * Japanese stay as they are; a cut falls on a whole character and says
 * "..."; its own output goes through unchanged; on random bytes the output
 * never holds a control byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/errmsg.h"
#include "tests/support/support.h"

#define CASE(in, want)                                                                             \
	{                                                                                          \
		in, sizeof in - 1, want                                                            \
	}

static void test_errmsg__foreign_bytes_show_as_text(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t n;
		const char *want;
	} CASES[] = {
	    CASE("+7776FU", "+7776FU"),
	    CASE("a\\b", "a\\b"),
	    /* An xterm title sequence and a bell. */
	    CASE("\x1b]0;PWNED\x07", "\\x1B]0;PWNED\\x07"),
	    /* A forged log line. */
	    CASE("/a\nGET /fake 200 1us", "/a\\x0AGET /fake 200 1us"),
	    CASE("a\rb\tc\x7f", "a\\x0Db\\x09c\\x7F"),
	    CASE("a\0b", "a\\x00b"),
	    /* Japanese stays readable. */
	    CASE("▲７六歩 △同　歩", "▲７六歩 △同　歩"),
	    /* C1 CSI (U+009B) and a right-to-left override (U+202E), and the
	     * separators some viewers break lines at. */
	    CASE("a\xc2\x9b"
	         "2Jb",
	         "a\\xC2\\x9B2Jb"),
	    CASE("x\xe2\x80\xaey", "x\\xE2\\x80\\xAEy"),
	    CASE("\xe2\x80\xa8\xe2\x81\xa6", "\\xE2\\x80\\xA8\\xE2\\x81\\xA6"),
	    /* U+00A0 and U+00E9 are shown (past the C1 controls). */
	    CASE("\xc2\xa0\xc3\xa9", "\xc2\xa0\xc3\xa9"),
	    /* Not UTF-8: a lone byte, an overlong NUL, a surrogate, a cut
	     * sequence, Shift_JIS. */
	    CASE("\xff", "\\xFF"),
	    CASE("\xc0\x80", "\\xC0\\x80"),
	    CASE("\xed\xa0\x80", "\\xED\\xA0\\x80"),
	    CASE("\xe6\xad", "\\xE6\\xAD"),
	    CASE("\x82\xa0", "\\x82\\xA0"),
	};
	char out[512];
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
		assert_string_equal(errmsg_escape(out, sizeof out, CASES[i].in, CASES[i].n),
		                    CASES[i].want);
}

static void test_errmsg__a_cut_falls_on_a_whole_character(void **state)
{
	(void)state;
	char out[8];
	assert_string_equal(errmsg_escape(out, sizeof out, "abcdefg", 7), "abcdefg");
	assert_string_equal(errmsg_escape(out, sizeof out, "abcdefgh", 8), "abcd...");
	/* An escape is not cut in half. */
	assert_string_equal(errmsg_escape(out, sizeof out,
	                                  "ab\x1b"
	                                  "cdefgh",
	                                  9),
	                    "ab...");
	char nine[9];
	assert_string_equal(errmsg_escape(nine, sizeof nine,
	                                  "a\x1b"
	                                  "cdefgh",
	                                  8),
	                    "a\\x1B...");
	/* What fits whole is not cut, even close to the end. */
	assert_string_equal(errmsg_escape(nine, sizeof nine, "abcd\x1b", 5), "abcd\\x1B");
	/* Nor a UTF-8 character (three bytes each). */
	char j[12];
	assert_string_equal(errmsg_escape(j, sizeof j, "七八九十", 12), "七八...");
	assert_string_equal(errmsg_escape(j, 4, "abcdef", 6), "...");
	assert_string_equal(errmsg_escape(j, 1, "abcdef", 6), "");
}

static void test_errmsg__random_bytes_never_reach_the_terminal_raw(void **state)
{
	(void)state;
	uint64_t seed = ts_seed("test_errmsg random bytes");
	char in[64], out[300], again[300];
	for (int t = 0; t < 100000; t++) {
		size_t n = ts_rand(&seed) % sizeof in;
		for (size_t i = 0; i < n; i++) {
			uint64_t r = ts_rand(&seed);
			/* Bias towards UTF-8 lead and continuation bytes. */
			in[i] = (char)(r % 3 == 0   ? 0x80 | (r >> 8) % 0x40
			               : r % 3 == 1 ? 0xc2 + (r >> 8) % 0x33
			                            : r >> 8);
		}
		errmsg_escape(out, sizeof out, in, n);
		size_t len = strlen(out);
		assert_true(len < sizeof out);
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)out[i];
			if (c < 0x20 || c == 0x7f)
				fail_msg("a control byte 0x%02x in the output", c);
		}
		/* Whole: the output is its own escape. */
		assert_string_equal(errmsg_escape(again, sizeof again, out, len), out);
		/* 63 bytes, 4 each at most: nothing is cut or dropped. */
		assert_true(len >= n);
		assert_true(len < 3 || strcmp(out + len - 3, "...") ||
		            (n >= 3 && !memcmp(in + n - 3, "...", 3)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_errmsg__foreign_bytes_show_as_text),
	    cmocka_unit_test(test_errmsg__a_cut_falls_on_a_whole_character),
	    cmocka_unit_test(test_errmsg__random_bytes_never_reach_the_terminal_raw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
