/* tests/ingest/test_import.c — joseki import of YaneuraOu DB2016 books. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/position.h"
#include "tests/support/support.h"

/* Every variant docs/ingest.md lists: comments (# and //), missing fields,
 * none/resign, no ply, CRLF, blank lines, an illegal move (line 12). */
static const char *BOOK =
    "#YANEURAOU-DB2016 1.00\r\n"
    "# NOE:4\r\n"
    "// a comment\n"
    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n"
    "7g7f 3c3d 50 20 7\n"
    "2g2f none 45\n"
    "\n"
    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w -\r\n"
    "3c3d\r\n"
    "resign none -999 5\n"
    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
    "5e5d none 10 10\n"
    "8h2b+ None 40000 12 1\n"
    "\n";

static void test_import__every_variant_of_the_format(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4200];
	snprintf(path, sizeof path, "%s/b.db", dir);
	assert_int_equal(ts_write_file(path, BOOK, strlen(BOOK)), 0);
	json_t *j = ts_run_json(0, "%s import %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 3);
	assert_int_equal(ts_jint(j, "moves_added"), 4); /* 7g7f 2g2f 3c3d 8h2b+ */
	assert_int_equal(ts_jint(j, "evals_added"), 4);
	json_t *errs = json_object_get(j, "errors");
	assert_int_equal(json_array_size(errs), 1);
	assert_int_equal(ts_jint(json_array_get(errs, 0), "line"), 12);
	json_decref(j);

	json_t *q = ts_run_json(0, "%s query %s/book startpos --json", ts_joseki(), dir);
	json_t *m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "7g7f");
	assert_int_equal(ts_jint(m0, "eval"), 50);
	assert_int_equal(ts_jint(m0, "depth"), 20);
	json_t *m1 = json_array_get(json_object_get(q, "moves"), 1);
	assert_string_equal(json_string_value(json_object_get(m1, "move")), "2g2f");
	assert_int_equal(ts_jint(m1, "eval"), 45);
	assert_int_equal(ts_jint(m1, "depth"), 0);
	json_decref(q);
	q = ts_run_json(0, "%s query %s/book 'startpos moves 7g7f' --json", ts_joseki(), dir);
	m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "3c3d");
	assert_int_equal(ts_jint(m0, "eval"), 0); /* missing value is 0 */
	json_decref(q);
	q = ts_run_json(0, "%s query %s/book 'startpos moves 7g7f 3c3d' --json", ts_joseki(), dir);
	m0 = json_array_get(json_object_get(q, "moves"), 0);
	assert_string_equal(json_string_value(json_object_get(m0, "move")), "8h2b+");
	assert_int_equal(ts_jint(m0, "eval"), 32000); /* clamped */
	json_decref(q);

	/* a second import changes nothing */
	j = ts_run_json(0, "%s import %s/book %s --json --quiet", ts_joseki(), dir, path);
	assert_int_equal(ts_jint(j, "positions_added"), 0);
	assert_int_equal(ts_jint(j, "moves_added"), 0);
	assert_int_equal(ts_jint(j, "evals_added"), 0);
	json_decref(j);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/book", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

static void test_import__fixture_books_import_cleanly(void **state)
{
	(void)state;
	const char *files[] = {"rshogi_book_backprop_yo_in.db", "rshogi_book_backprop_check_in.db"};
	for (size_t i = 0; i < 2; i++) {
		char *dir = ts_mkdtemp();
		char *out = NULL;
		char cmd[4400];
		snprintf(cmd, sizeof cmd, "grep -c '^sfen ' tests/data/yaneuraou-db/%s", files[i]);
		assert_int_equal(ts_run(cmd, &out, NULL), 0);
		long records = strtol(out, NULL, 10);
		free(out);
		json_t *j =
		    ts_run_json(0, "%s import %s/book tests/data/yaneuraou-db/%s --json --quiet",
		                ts_joseki(), dir, files[i]);
		assert_int_equal(json_array_size(json_object_get(j, "errors")), 0);
		assert_int_equal(ts_jint(j, "positions_added"), records);
		json_decref(j);
		json_t *s = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
		assert_int_equal(ts_jint(s, "positions"), records);
		assert_int_equal(ts_jint(s, "thought"), records);
		json_decref(s);
		ts_rmtree(dir);
		free(dir);
	}
}

static void test_import__missing_file_is_a_clear_error(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s import %s/book %s/nope.db", ts_joseki(), dir, dir),
	                 1);
	assert_non_null(strstr(err, "nope.db"));
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s import %s/book", ts_joseki(), dir), 2);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_import__every_variant_of_the_format),
	    cmocka_unit_test(test_import__fixture_books_import_cleanly),
	    cmocka_unit_test(test_import__missing_file_is_a_clear_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
