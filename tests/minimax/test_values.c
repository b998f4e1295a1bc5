/*
 * tests/minimax/test_values.c — where the values a book plays on come from
 * (docs/minimax.md, "Where values come from"): analyses decide, a game's
 * comments are shown and never values unless a run asks (--game-evals); books
 * from games alone by choice (--games-book); a position without a valued move
 * has no book move (query, export, usi --book, match); the way to the roots
 * given as move lists is thought first.
 *
 * The planted bot: six games in which Black opens 5i4h (a king move nobody
 * plays), writes '** 900 on every move, and wins every game.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "shogi/csa_write.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define BOT_GAMES 6
#define IMPORTED "tests/data/yaneuraou-db/rshogi_book_backprop_yo_in.db"

/* The bot's games into dir/bot/: 5i4h, then plies drawn from the first
 * legal moves (a different game each), '** 900 for Black on every move, an
 * odd number of plies and White resigns. */
static void write_bot_games(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/bot", dir);
	assert_int_equal(ts_runf(NULL, NULL, "mkdir -p %s", path), 0);
	uint64_t rng = 0x5eed;
	for (int g = 0; g < BOT_GAMES; g++) {
		Position *pos = malloc(sizeof *pos);
		assert_non_null(pos);
		assert_int_equal(position_parse(pos, "startpos moves 5i4h", NULL), 0);
		for (int ply = 1; ply < 25; ply++) {
			Move legal[MOVEGEN_MAX];
			int n = movegen_legal(pos, legal);
			assert_true(n > 0);
			pos_do_move(
			    pos, legal[(ts_rand(&rng) + (uint64_t)g) % (uint64_t)(n < 8 ? n : 8)]);
		}
		CsaMoveInfo info[32];
		for (int i = 0; i < 25; i++)
			info[i] = (CsaMoveInfo){.time_ms = 1000, .has_eval = true, .eval = 900};
		CsaGame cg = {.name = {"bot", "opponent"}, .info = info, .end = "TORYO"};
		snprintf(path, sizeof path, "%s/bot/game%d.csa", dir, g);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(csa_game_write(f, pos, &cg, NULL), 0);
		assert_int_equal(fclose(f), 0);
		free(pos);
	}
}

/* The query --json answer for position spec in book. */
static json_t *query(const char *book, const char *spec)
{
	return ts_run_json(0, "%s query %s '%s' --json", ts_joseki(), book, spec);
}

/* The move object of usi in answer q (NULL when absent). */
static json_t *move_of(json_t *q, const char *usi)
{
	json_t *moves = json_object_get(q, "moves"), *m;
	size_t i;
	json_array_foreach(moves, i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "move")), usi)) return m;
	}
	return NULL;
}

/* Everything the book plays: its YaneuraOu export with every valued move. */
static char *played(const char *dir, const char *book)
{
	char out[4200];
	snprintf(out, sizeof out, "%s/%s.db", dir, strrchr(book, '/') + 1);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s export %s %s --moves all --quiet", ts_joseki(), book, out), 0);
	char *text = ts_read_file(out, NULL);
	assert_non_null(text);
	return text;
}

/* The move `joseki usi --book BOOK` plays at spec from its book ("" when its
 * engine searched instead). */
static char *usi_book_move(const char *book, const char *spec)
{
	char *out = NULL;
	int rc = ts_runf(&out, NULL,
	                 "printf 'usi\\nisready\\nposition %s\\ngo depth 1\\nquit\\n' | %s usi "
	                 "--book %s",
	                 spec, ts_joseki(), book);
	assert_int_equal(rc, 0);
	const char *b = strstr(out, "info string book move ");
	char *m = strdup("");
	if (b) {
		b += strlen("info string book move ");
		size_t n = strcspn(b, " \n");
		free(m);
		m = strndup(b, n);
	}
	free(out);
	return m;
}

/* Builds two books the same way but for the bot's games (in the second), with
 * before (a shell command run on each, "%1$s" the book) and after, then
 * minimax. */
static void two_books(const char *dir, char *a, char *b, size_t n, const char *before,
                      const char *after)
{
	snprintf(a, n, "%s/plain", dir);
	snprintf(b, n, "%s/planted", dir);
	for (int k = 0; k < 2; k++) {
		const char *book = k ? b : a;
		char cmd[8192];
		if (before) {
			snprintf(cmd, sizeof cmd, before, book);
			assert_int_equal(ts_runf(NULL, NULL, "%s", cmd), 0);
		}
		assert_int_equal(ts_runf(NULL, NULL,
		                         "%s ingest %s tests/data/floodgate %s%s --quiet",
		                         ts_joseki(), book, k ? dir : "", k ? "/bot" : ""),
		                 0);
		if (after) {
			snprintf(cmd, sizeof cmd, after, book);
			assert_int_equal(ts_runf(NULL, NULL, "%s", cmd), 0);
		}
		assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --quiet", ts_joseki(), book),
		                 0);
	}
}

/* The bot's games change nothing the book plays: over an imported engine
 * book (no thinking), and over positions the built-in engine thinks; with
 * --game-evals they do (the start position's best move becomes 5i4h). */
static void test_values__a_bots_comments_change_nothing_the_book_plays(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), a[4200], b[4200], before[8400], after[8400];
	write_bot_games(dir);
	/* The bot's games are in the book: its opening and its comments. */
	snprintf(a, sizeof a, "%s/games", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s %s/bot --quiet", ts_joseki(), a, dir),
	                 0);
	json_t *q = query(a, "startpos");
	assert_int_equal(ts_jint(move_of(q, "5i4h"), "count"), BOT_GAMES);
	assert_int_equal(ts_jint(move_of(q, "5i4h"), "wins"), BOT_GAMES);
	assert_int_equal(ts_jint(move_of(q, "5i4h"), "game_eval"), 900);
	json_decref(q);

	/* Without thinking: an imported engine book's analyses. */
	snprintf(before, sizeof before, "%s import %%1$s %s --quiet", ts_joseki(), IMPORTED);
	two_books(dir, a, b, sizeof a, before, NULL);
	char *pa = played(dir, a), *pb = played(dir, b);
	assert_true(strstr(pa, "# NOE:") && strlen(pa) > 60);
	assert_string_equal(pa, pb);
	json_t *qa = query(a, "startpos");
	q = query(b, "startpos");
	const char *best = json_string_value(json_object_get(q, "bestmove"));
	assert_non_null(best);
	assert_string_equal(best, json_string_value(json_object_get(qa, "bestmove")));
	assert_string_not_equal(best, "5i4h");
	assert_string_equal(json_string_value(json_object_get(move_of(q, "5i4h"), "unvalued")),
	                    "game comment only");
	char *ua = usi_book_move(a, "startpos"), *ub = usi_book_move(b, "startpos");
	assert_string_equal(ua, best);
	assert_string_equal(ua, ub);
	json_decref(q);
	json_decref(qa);
	free(ua);
	free(ub);
	/* Opting in: the bot's '** 900 decides. */
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --game-evals --quiet", ts_joseki(), b),
	                 0);
	q = query(b, "startpos");
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "5i4h");
	assert_string_equal(json_string_value(json_object_get(move_of(q, "5i4h"), "value_source")),
	                    "game");
	json_decref(q);
	free(pa);
	free(pb);
	ts_rmtree(a);
	ts_rmtree(b);

	/* With thinking: the same positions (the first game's first 10) thought
	 * by the built-in engine at a fixed depth, in both books. */
	snprintf(after, sizeof after,
	         "%s think %%1$s --engine builtin --engines 1 --depth 2 --multipv 4 --from-kifu "
	         "tests/data/floodgate/"
	         "wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa "
	         "--max-ply 10 --positions 10 --no-snapshot --quiet",
	         ts_joseki());
	two_books(dir, a, b, sizeof a, NULL, after);
	pa = played(dir, a);
	pb = played(dir, b);
	assert_true(strstr(pa, "# NOE:10\n"));
	assert_string_equal(pa, pb);
	ua = usi_book_move(a, "startpos");
	ub = usi_book_move(b, "startpos");
	assert_true(ua[0] && strcmp(ua, "5i4h"));
	assert_string_equal(ua, ub);
	free(ua);
	free(ub);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --game-evals --quiet", ts_joseki(), b),
	                 0);
	q = query(b, "startpos");
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "5i4h");
	json_decref(q);
	free(pa);
	free(pb);
	ts_rmtree(dir);
	free(dir);
}

/* Games alone give positions, no values: no book move anywhere (query,
 * export, usi --book, match) until a games-only method is chosen. */
static void test_values__games_alone_are_no_book_until_chosen(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4200];
	write_bot_games(dir);
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate %s/bot --quiet",
	                         ts_joseki(), book, dir),
	                 0);
	json_t *o = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_int_equal(ts_jint(o, "valued"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(o, "values")), "analyses"));
	json_decref(o);
	json_t *q = query(book, "startpos");
	assert_null(json_object_get(q, "bestmove"));
	assert_true(json_is_null(json_object_get(move_of(q, "4i5h"), "value")));
	json_decref(q);
	char *text = played(dir, book);
	assert_non_null(strstr(text, "# NOE:0\n"));
	free(text);
	char *m = usi_book_move(book, "startpos");
	assert_string_equal(m, "");
	free(m);
	o = ts_run_json(0,
	                "%s match --engine-a builtin --engine-b builtin --book-a %s --games 2 "
	                "--nodes 300 --max-moves 4 --json",
	                ts_joseki(), book);
	assert_true(json_real_value(json_object_get(json_object_get(o, "book_plies"), "a")) == 0);
	json_decref(o);

	/* Bonanza's narrow book: at the start the most played move (4i5h, 8
	 * games) alone; valued by its score rate (4 of 8: 0). */
	o = ts_run_json(0, "%s minimax %s --games-book most-played --json", ts_joseki(), book);
	assert_non_null(strstr(json_string_value(json_object_get(o, "values")), "most played"));
	json_decref(o);
	q = query(book, "startpos");
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "4i5h");
	assert_int_equal(ts_jint(q, "value"), 0);
	assert_string_equal(json_string_value(json_object_get(move_of(q, "4i5h"), "value_source")),
	                    "games");
	assert_string_equal(json_string_value(json_object_get(move_of(q, "5i4h"), "unvalued")),
	                    "not chosen from the games");
	json_decref(q);
	m = usi_book_move(book, "startpos");
	assert_string_equal(m, "4i5h");
	free(m);
	/* At least 9 games: nothing at the start is played that often. */
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s minimax %s --games-book most-played --games-min 9 "
	                         "--quiet",
	                         ts_joseki(), book),
	                 0);
	q = query(book, "startpos");
	assert_null(json_object_get(q, "bestmove"));
	/* Its moves say why they have no value, and no analysis would be one. */
	assert_string_equal(json_string_value(json_object_get(move_of(q, "4i5h"), "unvalued")),
	                    "not chosen from the games");
	json_decref(q);
	m = usi_book_move(book, "startpos");
	assert_string_equal(m, "");
	free(m);
	/* dlshogi's way: every move by its score rate; the bot's 6 wins of 6
	 * (p bounded to 0.99) beat the rest: 600 ln 99 = 2757. */
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s minimax %s --games-book winrate --quiet", ts_joseki(), book),
	    0);
	q = query(book, "startpos");
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "5i4h");
	assert_int_equal(ts_jint(q, "value"), 2757);
	assert_int_equal(ts_jint(move_of(q, "4i5h"), "value"), 0);
	json_decref(q);
	/* A game without a result (a USI line) is no loss: its move was valued
	 * -2757, as if lost for certain; now it is even. */
	char *one;
	assert_true(asprintf(&one, "%s/one.usi", dir) > 0);
	assert_int_equal(ts_write_file(one, "startpos moves 7g7f\n", 20), 0);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s ingest %s/one %s --quiet && %s minimax %s/one --games-book "
	                         "most-played --quiet",
	                         ts_joseki(), dir, one, ts_joseki(), dir),
	                 0);
	char *onebook;
	assert_true(asprintf(&onebook, "%s/one", dir) > 0);
	q = query(onebook, "startpos");
	assert_string_equal(json_string_value(json_object_get(q, "bestmove")), "7g7f");
	assert_int_equal(ts_jint(move_of(q, "7g7f"), "value"), 0);
	json_decref(q);
	free(one), free(onebook);
	/* The choice goes with no other policy option. */
	char *e = NULL;
	assert_int_equal(
	    ts_runf(NULL, &e, "%s minimax %s --games-book winrate --game-evals", ts_joseki(), book),
	    2);
	assert_non_null(strstr(e, "--games-book"));
	free(e);
	assert_int_equal(ts_runf(NULL, &e, "%s minimax %s --games-min 3", ts_joseki(), book), 2);
	free(e);
	ts_rmtree(dir);
	free(dir);
}

/* Roots given as move lists: the positions on the way to them are thought
 * first, then the book's line from the start is kept analysed as deep. */
static void test_values__the_way_to_roots_given_as_lines_is_thought(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4200], roots[4200];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	static const char R[] = "startpos moves 7g7f 3c3d 2g2f\nstartpos moves 2g2f 8c8d\n";
	assert_int_equal(ts_write_file(roots, R, sizeof R - 1), 0);
	char *out = NULL, *err = NULL;
	int rc =
	    ts_runf(&out, &err, "%s think %s --new --roots %s --depth 1 --multipv 2 --positions 12",
	            ts_joseki(), book, roots);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(err, "4 positions on the way to them first"));
	assert_non_null(strstr(out, " root startpos moves 7g7f 3c3d 2g2f\n"));
	free(out);
	free(err);
	static const char *const WAY[] = {"startpos", "startpos moves 7g7f",
	                                  "startpos moves 7g7f 3c3d", "startpos moves 2g2f"};
	for (size_t i = 0; i < sizeof WAY / sizeof *WAY; i++) {
		json_t *q = query(book, WAY[i]);
		if (!json_object_get(q, "thought_depth")) fail_msg("%s is not thought", WAY[i]);
		json_decref(q);
	}
	/* --roots-only: the roots alone (games that start there). */
	snprintf(book, sizeof book, "%s/only", dir);
	rc = ts_runf(&out, &err,
	             "%s think %s --new --roots %s --roots-only --depth 1 --multipv 2 "
	             "--positions 2 --book-side black",
	             ts_joseki(), book, roots);
	assert_int_equal(rc, 0);
	assert_null(strstr(err, "on the way"));
	free(out);
	free(err);
	for (size_t i = 0; i < sizeof WAY / sizeof *WAY; i++) {
		json_t *q = query(book, WAY[i]);
		if (json_object_get(q, "thought_depth")) fail_msg("%s is thought", WAY[i]);
		json_decref(q);
	}
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values__a_bots_comments_change_nothing_the_book_plays),
	    cmocka_unit_test(test_values__games_alone_are_no_book_until_chosen),
	    cmocka_unit_test(test_values__the_way_to_roots_given_as_lines_is_thought),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
