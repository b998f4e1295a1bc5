/*
 * tests/minimax/test_db2016.c — the DB2016 book reader and line formatters:
 * records and moves of the reference fixtures, defaults for missing fields,
 * "no move" spellings, CRLF, comments and blank lines, and bad input reported
 * with its line and skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/db2016.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define START "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"

/* Collected warnings, one per line. */
typedef struct {
	char text[4096];
	int n;
} Warns;

static void collect(void *ctx, const char *msg)
{
	Warns *w = ctx;
	w->n++;
	size_t len = strlen(w->text);
	snprintf(w->text + len, sizeof w->text - len, "%s\n", msg);
}

static Db2016Reader *open_text(const char *text, FILE **fp, unsigned flags, Warns *w)
{
	*fp = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(*fp);
	Db2016Reader *r = NULL;
	assert_int_equal(db2016_open_file(&r, *fp, "book.db", flags, w ? collect : NULL, w), 0);
	return r;
}

static Move usi(const char *s)
{
	Move m;
	assert_int_equal(usi_move_parse(&m, s, strlen(s), NULL), 0);
	return m;
}

static void test_db2016__reads_the_reference_fixture(void **state)
{
	(void)state;
	Db2016Reader *r = NULL;
	Warns w = {"", 0};
	assert_int_equal(db2016_open(&r, "tests/data/yaneuraou-db/rshogi_book_backprop_yo_in.db", 0,
	                             collect, &w),
	                 0);
	Db2016Record rec;
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_string_equal(rec.sfen,
	                    "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2");
	assert_int_equal(rec.line, 2);
	assert_int_equal(rec.pos->side, WHITE);
	assert_int_equal(rec.nmoves, 1);
	assert_int_equal(rec.moves[0].move, usi("3c3d"));
	assert_int_equal(rec.moves[0].ponder, MOVE_NONE);
	assert_int_equal(rec.moves[0].value, -50);
	assert_int_equal(rec.moves[0].depth, 17);
	assert_int_equal(rec.moves[0].count, 1);
	assert_int_equal(rec.moves[0].line, 3);
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_string_equal(rec.sfen, START);
	assert_int_equal(rec.nmoves, 2);
	assert_int_equal(rec.moves[0].move, usi("7g7f"));
	assert_int_equal(rec.moves[0].count, 9);
	assert_int_equal(rec.moves[1].move, usi("5i5h"));
	assert_int_equal(rec.moves[1].depth, 99);
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(db2016_records(r), 3);
	assert_int_equal(w.n, 0);
	db2016_close(r);
}

static void test_db2016__missing_fields_take_defaults_and_none_means_no_move(void **state)
{
	(void)state;
	const char *text = "#YANEURAOU-DB2016 1.00\r\n"
	                   "# NOE:1\r\n"
	                   "// a comment\r\n"
	                   "sfen " START "\r\n"
	                   "7g7f\r\n"
	                   "2g2f 8c8d\r\n"
	                   "\r\n"
	                   "5g5f none 12   \r\n"
	                   "6g6f None -7 3\r\n"
	                   "none none 0 0 1\r\n"
	                   "resign\r\n"
	                   "1g1f 3c3d 5 6 42\r\n";
	FILE *f;
	Warns w = {"", 0};
	Db2016Reader *r = open_text(text, &f, 0, &w);
	Db2016Record rec;
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_string_equal(rec.sfen, START);
	assert_int_equal(rec.nmoves, 7);
	assert_int_equal(rec.moves[0].move, usi("7g7f"));
	assert_int_equal(rec.moves[0].ponder, MOVE_NONE);
	assert_int_equal(rec.moves[0].value, 0);
	assert_int_equal(rec.moves[0].depth, 0);
	assert_int_equal(rec.moves[0].count, 1);
	assert_int_equal(rec.moves[1].ponder, usi("8c8d"));
	assert_int_equal(rec.moves[2].value, 12);
	assert_int_equal(rec.moves[2].line, 8);
	assert_int_equal(rec.moves[3].value, -7);
	assert_int_equal(rec.moves[3].depth, 3);
	assert_int_equal(rec.moves[4].move, MOVE_NONE);
	assert_int_equal(rec.moves[5].move, MOVE_NONE);
	assert_int_equal(rec.moves[6].count, 42);
	assert_int_equal(rec.moves[6].ponder, usi("3c3d"));
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(w.n, 0);
	db2016_close(r);
	fclose(f);
}

static void test_db2016__bad_lines_are_reported_with_their_line_and_skipped(void **state)
{
	(void)state;
	const char *text = "#YANEURAOU-DB2016 1.00\n"
	                   "7g7f none 1 1\n"               /* 2: before any record */
	                   "sfen " START "\n"              /* 3 */
	                   "7g7e none 1 1\n"               /* 4: illegal */
	                   "zz none 1 1\n"                 /* 5: unparseable */
	                   "2g2f none abc\n"               /* 6: bad value */
	                   "7g7f none 10 2\n"              /* 7: fine */
	                   "sfen lnsgkgsnl/9/junk b - 1\n" /* 8: bad SFEN */
	                   "7g7f none 1 1\n"               /* 9: belongs to the bad record */
	                   "sfen " START "\n"              /* 10 */
	                   "2g2f none 3 4 x\n";            /* 11: bad count */
	FILE *f;
	Warns w = {"", 0};
	Db2016Reader *r = open_text(text, &f, 0, &w);
	Db2016Record rec;
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(rec.line, 3);
	assert_int_equal(rec.nmoves, 1);
	assert_int_equal(rec.moves[0].move, usi("7g7f"));
	assert_int_equal(rec.moves[0].value, 10);
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(rec.line, 10);
	assert_int_equal(rec.nmoves, 0);
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(w.n, 6);
	assert_int_equal(db2016_warnings(r), 6);
	assert_non_null(strstr(w.text, "book.db:2: move line outside any 'sfen' record"));
	assert_non_null(strstr(w.text, "book.db:4: illegal book move '7g7e'"));
	assert_non_null(strstr(w.text, "book.db:5: illegal book move 'zz'"));
	assert_non_null(strstr(w.text, "book.db:6: bad value 'abc'"));
	assert_non_null(strstr(w.text, "book.db:8: bad SFEN"));
	assert_non_null(strstr(w.text, "book.db:11: bad count 'x'"));
	assert_null(strstr(w.text, "book.db:9:"));
	db2016_close(r);
	fclose(f);
}

static void test_db2016__missing_header_is_reported_but_read(void **state)
{
	(void)state;
	const char *text = "sfen " START "\n7g7f none 5 1\n";
	FILE *f;
	Warns w = {"", 0};
	Db2016Reader *r = open_text(text, &f, 0, &w);
	Db2016Record rec;
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(rec.nmoves, 1);
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.text, "book.db:1: missing '#YANEURAOU-DB2016 1.00' header"));
	db2016_close(r);
	fclose(f);
}

static void test_db2016__skip_moves_returns_records_only(void **state)
{
	(void)state;
	const char *text =
	    "#YANEURAOU-DB2016 1.00\nsfen " START "\n7g7e none 5 1\n7g7f\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	    "3c3d none -5 1\n";
	FILE *f;
	Warns w = {"", 0};
	Db2016Reader *r = open_text(text, &f, DB2016_SKIP_MOVES, &w);
	Db2016Record rec;
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(rec.nmoves, 0);
	assert_int_equal(db2016_next(r, &rec), 1);
	assert_int_equal(rec.nmoves, 0);
	assert_int_equal(rec.pos->side, WHITE);
	assert_int_equal(db2016_next(r, &rec), 0);
	assert_int_equal(w.n, 0); /* the illegal 7g7e was never looked at */
	db2016_close(r);
	fclose(f);
}

/* Appends every record and move a reader returns to out, one per line. */
static void dump_records(Db2016Reader *r, char *out, size_t cap)
{
	Db2016Record rec;
	int rc;
	size_t len = strlen(out);
	while ((rc = db2016_next(r, &rec)) == 1) {
		len += (size_t)snprintf(out + len, cap - len, "%ld %zu %s\n", rec.line, rec.ordinal,
		                        rec.sfen);
		for (size_t k = 0; k < rec.nmoves; k++)
			len += (size_t)snprintf(out + len, cap - len, " %ld %d %d\n",
			                        rec.moves[k].line, rec.moves[k].move,
			                        rec.moves[k].value);
	}
	assert_int_equal(rc, 0);
}

static void test_db2016__ranges_of_a_split_file_read_as_the_whole(void **state)
{
	(void)state;
	/* Comments, blank lines, CRLF, a bad SFEN and bad moves among the
	 * records, so that cuts fall next to each kind of line. */
	static char text[16384] = "#YANEURAOU-DB2016 1.00\n";
	const char *extra[] = {"// comment\n",      "\n",
	                       "7g7f none 5 1\r\n", "9z9z none 0 0\n",
	                       "2g2f none x\n",     "# another comment\n"};
	for (int i = 0; i < 40; i++) {
		size_t len = strlen(text);
		snprintf(text + len, sizeof text - len,
		         "sfen %s\n7g7f none %d 3\n2g2f none -%d\n%s",
		         i == 17 ? "lnsgkgsnl/9/9 b - 1" : START, i, i, extra[i % 6]);
	}
	char *dir = ts_mkdtemp(), path[512];
	snprintf(path, sizeof path, "%s/book.db", dir);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	static char whole[65536], parts[65536];
	static Warns w, pw;
	memset(&w, 0, sizeof w);
	Db2016Reader *r = NULL;
	assert_int_equal(db2016_open(&r, path, 0, collect, &w), 0);
	whole[0] = '\0';
	dump_records(r, whole, sizeof whole);
	db2016_close(r);
	assert_true(w.n >= 14);
	for (int n = 1; n <= 7; n++) {
		uint64_t off[8];
		long lines[8];
		assert_int_equal(db2016_split(path, n, off, lines), 0);
		assert_int_equal(off[0], 0);
		assert_int_equal(off[n], strlen(text));
		parts[0] = '\0';
		memset(&pw, 0, sizeof pw);
		size_t ordinal = 0;
		for (int k = 0; k < n; k++) {
			assert_true(off[k] <= off[k + 1]);
			if (k > 0 && off[k] < off[n]) {
				assert_memory_equal(text + off[k], "sfen ", 5);
				assert_true(off[k] >
				            off[k - 1]); /* short parts are not empty here */
			}
			assert_int_equal(db2016_open(&r, path, 0, collect, &pw), 0);
			assert_int_equal(db2016_set_range(r, off[k],
			                                  k + 1 < n ? off[k + 1] : UINT64_MAX,
			                                  lines[k], ordinal),
			                 0);
			dump_records(r, parts, sizeof parts);
			ordinal += db2016_sfen_lines(r);
			db2016_close(r);
		}
		/* The same records (line numbers, ordinals, moves) and the same
		 * warnings in the same order. */
		assert_string_equal(parts, whole);
		assert_string_equal(pw.text, w.text);
		assert_int_equal(pw.n, w.n);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_db2016__formats_move_lines(void **state)
{
	(void)state;
	char buf[DB2016_LINE_MAX];
	size_t n = db2016_format_move(buf, usi("7g7f"), MOVE_NONE, -32000, 9997);
	buf[n] = '\0';
	assert_string_equal(buf, "7g7f none -32000 9997\n");
	n = db2016_format_move_count(buf, usi("P*5e"), usi("8h2b+"), 45, 0, 812);
	buf[n] = '\0';
	assert_string_equal(buf, "P*5e 8h2b+ 45 0 812\n");
	n = db2016_format_move(buf, MOVE_NONE, MOVE_NONE, 0, 0);
	buf[n] = '\0';
	assert_string_equal(buf, "none none 0 0\n");
	/* The file's first lines, and a record's. */
	n = db2016_format_header(buf, 1234567);
	buf[n] = '\0';
	assert_string_equal(buf, DB2016_HEADER "\n# NOE:1234567\n");
	Position *pos = malloc(sizeof *pos);
	char err[SHOGI_ERRLEN];
	assert_non_null(pos);
	assert_int_equal(position_parse(pos, "startpos moves 7g7f 3c3d 8h2b+", err), 0);
	n = db2016_format_sfen(buf, pos, 4);
	buf[n] = '\0';
	assert_string_equal(
	    buf, "sfen lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4\n");
	free(pos);
}

static void test_db2016__missing_file_is_an_io_error(void **state)
{
	(void)state;
	Db2016Reader *r = (Db2016Reader *)1;
	assert_int_equal(db2016_open(&r, "tests/data/no-such-book.db", 0, NULL, NULL), DB2016_EIO);
	assert_null(r);
	assert_string_equal(db2016_strerror(DB2016_EIO), "I/O error");
	db2016_close(NULL);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_db2016__reads_the_reference_fixture),
	    cmocka_unit_test(test_db2016__missing_fields_take_defaults_and_none_means_no_move),
	    cmocka_unit_test(test_db2016__bad_lines_are_reported_with_their_line_and_skipped),
	    cmocka_unit_test(test_db2016__missing_header_is_reported_but_read),
	    cmocka_unit_test(test_db2016__skip_moves_returns_records_only),
	    cmocka_unit_test(test_db2016__ranges_of_a_split_file_read_as_the_whole),
	    cmocka_unit_test(test_db2016__formats_move_lines),
	    cmocka_unit_test(test_db2016__missing_file_is_an_io_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
