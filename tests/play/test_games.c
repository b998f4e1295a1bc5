/* tests/play/test_games.c — game files as the cycle's games and as openings
 * (play/games.h), read from real files in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "play/games.h"
#include "shogi/position.h"
#include "tests/support/support.h"

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
}

/* The game of list g whose spec is spec, or NULL. */
static const CycleGame *find(const CycleGameList *g, const char *spec)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->games[i].spec, spec)) return &g->games[i];
	return NULL;
}

static void test_games__book_side_by_name_and_result_for_it_unknown_ones_skipped(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	/* Black (the book) resigns: a loss for the book. */
	put_file(dir, "a.csa", "V2.2\nN+joseki+book\nN-other\nPI\n+\n+7776FU\n-3334FU\n%TORYO\n");
	/* White (the book) wins. */
	put_file(dir, "b.csa", "V2.2\nN+other\nN-joseki+book\nPI\n+\n+2726FU\n-8384FU\n%TORYO\n");
	/* Neither side, both sides: the book side cannot be told. */
	put_file(dir, "c.csa", "V2.2\nN+one\nN-two\nPI\n+\n+7776FU\n%TORYO\n");
	put_file(dir, "d.csa", "V2.2\nN+a+book\nN-b+book\nPI\n+\n+2726FU\n%TORYO\n");
	/* No result. */
	put_file(dir, "e.csa", "V2.2\nN+joseki+book\nN-other\nPI\n+\n+5756FU\n");
	CycleGameList g = {0};
	char err[CYCLE_ERRLEN];
	assert_int_equal(cycle_game_list_read(&g, dir, -1, NULL, err), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.skipped, 3);
	const CycleGame *a = find(&g, "startpos moves 7g7f 3c3d");
	assert_non_null(a);
	assert_int_equal(a->book_color, BLACK);
	assert_int_equal(a->result, -1);
	const CycleGame *b = find(&g, "startpos moves 2g2f 8c8d");
	assert_non_null(b);
	assert_int_equal(b->book_color, WHITE);
	assert_int_equal(b->result, 1);
	/* A given side counts the games whose names do not say; a second read
	 * appends. */
	assert_int_equal(cycle_game_list_read(&g, dir, WHITE, NULL, err), 0);
	assert_int_equal(g.n, 2 + 4);
	const CycleGame *c = NULL;
	for (size_t i = 2; i < g.n; i++)
		if (!strcmp(g.games[i].spec, "startpos moves 7g7f")) c = &g.games[i];
	assert_non_null(c);
	assert_int_equal(c->book_color, WHITE);
	assert_int_equal(c->result, -1); /* white, to move, resigned */
	cycle_game_list_free(&g);
	assert_int_equal(g.n, 0);
	/* Another player's name picks the other side. */
	assert_int_equal(cycle_game_list_read(&g, dir, -1, "other", err), 0);
	assert_int_equal(g.n, 2); /* a, b and e have "other"; e has no result */
	assert_int_equal(g.skipped, 3);
	assert_int_equal(find(&g, "startpos moves 7g7f 3c3d")->book_color, WHITE);
	assert_int_equal(find(&g, "startpos moves 2g2f 8c8d")->book_color, BLACK);
	cycle_game_list_free(&g);
	ts_rmtree(dir);
	free(dir);
}

static void test_games__a_bad_game_file_is_named_with_its_line(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600];
	put_file(dir, "bad.csa", "V2.2\nPI\n+\n+7776FU\n-3334FU\n+8822ZZ\n");
	snprintf(path, sizeof path, "%s/bad.csa", dir);
	CycleGameList g = {0};
	char err[CYCLE_ERRLEN];
	assert_int_equal(cycle_game_list_read(&g, path, -1, NULL, err), CYCLE_EINVAL);
	assert_non_null(strstr(err, path));
	snprintf(path, sizeof path, "%s/none.csa", dir);
	assert_int_equal(cycle_game_list_read(&g, path, -1, NULL, err), CYCLE_EINVAL);
	assert_non_null(strstr(err, "none.csa"));
	cycle_game_list_free(&g);
	ts_rmtree(dir);
	free(dir);
}

static void test_games__openings_are_each_games_spec_and_bad_files_are_refused(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), path[600];
	put_file(dir, "o.txt",
	         "startpos moves 7g7f 3c3d\n\nlnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/"
	         "LNSGKGSNL w - 1\n");
	snprintf(path, sizeof path, "%s/o.txt", dir);
	char **o = NULL, err[MATCH_ERRLEN];
	int n = match_openings_read(&o, path, err);
	assert_int_equal(n, 2);
	assert_string_equal(o[0], "startpos moves 7g7f 3c3d");
	assert_string_equal(o[1], "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL "
	                          "w - 1");
	match_openings_free(o, n);
	/* A game from a record file is its start and moves. */
	put_file(dir, "g.csa", "V2.2\nPI\n+\n+7776FU\n-3334FU\n%TORYO\n");
	snprintf(path, sizeof path, "%s/g.csa", dir);
	assert_int_equal(match_openings_read(&o, path, err), 1);
	assert_string_equal(o[0], "startpos moves 7g7f 3c3d");
	match_openings_free(o, 1);
	/* An illegal move: the file and its line. */
	put_file(dir, "bad.txt", "startpos moves 7g7f\nstartpos moves 7g7f 7g7f\n");
	snprintf(path, sizeof path, "%s/bad.txt", dir);
	assert_int_equal(match_openings_read(&o, path, err), MATCH_EINVAL);
	assert_null(o);
	char want[700];
	snprintf(want, sizeof want, "%s:2:", path);
	if (!strstr(err, want)) fail_msg("want %s in: %s", want, err);
	/* No game at all. */
	put_file(dir, "empty.txt", "\n");
	snprintf(path, sizeof path, "%s/empty.txt", dir);
	assert_int_equal(match_openings_read(&o, path, err), MATCH_EINVAL);
	assert_non_null(strstr(err, "no position in the file"));
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_games__book_side_by_name_and_result_for_it_unknown_ones_skipped),
	    cmocka_unit_test(test_games__a_bad_game_file_is_named_with_its_line),
	    cmocka_unit_test(test_games__openings_are_each_games_spec_and_bad_files_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
