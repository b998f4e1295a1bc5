/*
 * tests/minimax/test_partial.c — partial books and the count field (joseki
 * export's filters, docs/minimax.md "Partial books" and "The count field"):
 * on a planted book whose every position, move, value, depth and game count
 * the test knows, each filter (ply range, one side, moves within CP of the
 * best, depth and games floors, roots, and these together) gives exactly the
 * positions and moves the test computes from its own table, in the
 * YaneuraOu and the Apery format; the count field keeps value deciding by
 * default (a move YaneuraOu ranks first, ordering by count before value, is
 * the best) and gives the game counts with --count games.
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

#include "shogi/apery.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/minimax/planted_tree.h"
#include "tests/support/support.h"

/* The test's own filter: what a partial book holds. */
typedef struct {
	int min_ply, max_ply; /* 0: none */
	int side;             /* -1 both, else BLACK/WHITE */
	int window;           /* below the best; -1: every move */
	int min_depth, min_games;
	const char *root; /* NULL: every position */
} Filter;

typedef struct {
	char usi[8];
	int value, games;
} Mv;

/* The moves of BOOK[i] the filter keeps, best first (all: no window). */
static int kept(const Filter *f, size_t i, bool all, Mv *out)
{
	char *copy = strdup(BOOK[i].moves), *save = NULL;
	int n = 0;
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		Mv m = {.games = 0};
		assert_true(sscanf(t, "%7[^:]:%d:%d", m.usi, &m.value, &m.games) >= 2);
		if (BOOK[i].depth < f->min_depth || m.games < f->min_games ||
		    plant_declined(BOOK[i].moves, m.usi))
			continue;
		int p = n++;
		while (p > 0 && out[p - 1].value < m.value) {
			out[p] = out[p - 1];
			p--;
		}
		out[p] = m;
	}
	free(copy);
	if (!all && f->window >= 0)
		for (int k = 1; k < n; k++)
			if (out[k].value < out[0].value - f->window) n = k;
	return n;
}

static int ply_of(const char *spec)
{
	Position pos;
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	return pos.game_ply;
}

static int side_of(const char *spec)
{
	Position pos;
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	return pos.side;
}

/* lines[0..n) sorted and joined, each ending "\n" (frees them). */
static char *join_sorted(char **lines, size_t n)
{
	char *all = calloc(1, 8192);
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			if (strcmp(lines[b], lines[a]) < 0) {
				char *t = lines[a];
				lines[a] = lines[b];
				lines[b] = t;
			}
	for (size_t a = 0; a < n; a++) {
		strcat(all, lines[a]);
		strcat(all, "\n");
		free(lines[a]);
	}
	return all;
}

/* The expected book as sorted "SFEN(without ply)|move,move,..." lines. */
static char *expected(const Filter *f)
{
	bool reach[NBOOK] = {false};
	if (f->root) {
		/* Breadth first from the root through the moves written (the other
		 * side's: every kept reply), to the max ply. */
		size_t queue[NBOOK], head = 0, tail = 0;
		for (size_t i = 0; i < NBOOK; i++)
			if (!strcmp(BOOK[i].spec, f->root)) reach[i] = true, queue[tail++] = i;
		while (head < tail) {
			size_t i = queue[head++];
			if (f->max_ply && ply_of(BOOK[i].spec) >= f->max_ply) continue;
			Mv mv[8];
			bool ours = f->side < 0 || side_of(BOOK[i].spec) == f->side;
			int n = kept(f, i, !ours, mv);
			for (int k = 0; k < n; k++) {
				char child[200];
				snprintf(child, sizeof child, "%s%s %s", BOOK[i].spec,
				         strstr(BOOK[i].spec, "moves") ? "" : " moves", mv[k].usi);
				for (size_t j = 0; j < NBOOK; j++)
					if (!strcmp(BOOK[j].spec, child) && !reach[j])
						reach[j] = true, queue[tail++] = j;
			}
		}
	}
	char *lines[NBOOK];
	size_t nl = 0;
	for (size_t i = 0; i < NBOOK; i++) {
		int ply = ply_of(BOOK[i].spec);
		if ((f->root && !reach[i]) || (f->min_ply && ply < f->min_ply) ||
		    (f->max_ply && ply > f->max_ply) ||
		    (f->side >= 0 && side_of(BOOK[i].spec) != f->side))
			continue;
		Mv mv[8];
		int n = kept(f, i, false, mv);
		if (!n) continue;
		Position pos;
		assert_int_equal(position_parse(&pos, BOOK[i].spec, NULL), 0);
		char sfen[SFEN_MAX];
		sfen_write(&pos, sfen, sizeof sfen);
		*strrchr(sfen, ' ') = 0;
		char *l = calloc(1, 512);
		snprintf(l, 512, "%s|", sfen);
		for (int k = 0; k < n; k++)
			snprintf(l + strlen(l), 512 - strlen(l), "%s%s", k ? "," : "", mv[k].usi);
		lines[nl++] = l;
	}
	return join_sorted(lines, nl);
}

/* A YaneuraOu export as the same kind of lines. */
static char *from_yaneuraou(const char *path)
{
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	char *lines[64];
	size_t nl = 0;
	char *save = NULL, *cur = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "sfen ", 5)) {
			cur = lines[nl++] = calloc(1, 512);
			snprintf(cur, 512, "%s", l + 5);
			*strrchr(cur, ' ') = '|';
			strrchr(cur, '|')[1] = 0;
		} else if (cur && l[0] != '#') {
			size_t n = strlen(cur);
			snprintf(cur + n, 512 - n, "%s%.*s", cur[n - 1] == '|' ? "" : ",",
			         (int)strcspn(l, " "), l);
		}
	}
	free(text);
	return join_sorted(lines, nl);
}

static char *plant_book(char *dir)
{
	char *book = malloc(700);
	snprintf(book, 700, "%s/book", dir);
	for (size_t i = 0; i < NBOOK; i++)
		ts_plant(book, BOOK[i].spec, BOOK[i].moves, BOOK[i].depth);
	return book;
}

static void check(const char *book, const char *dir, const char *args, const Filter *f)
{
	char out[800];
	snprintf(out, sizeof out, "%s/part.db", dir);
	char *o = NULL, *e = NULL;
	int rc = ts_runf(&o, &e, "%s export %s %s %s --quiet", ts_joseki(), book, out, args);
	if (rc) fail_msg("export %s: exit %d\n%s%s", args, rc, o, e);
	free(o);
	free(e);
	char *want = expected(f), *got = from_yaneuraou(out);
	if (strcmp(want, got)) fail_msg("export %s:\nwanted:\n%s\ngot:\n%s", args, want, got);
	free(want);
	free(got);
}

static void test_partial__each_filter_gives_the_positions_the_test_computes(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *book = plant_book(dir);
	/* The defaults: every position, the moves within 30 of the best. */
	check(book, dir, "", &(Filter){.side = -1, .window = 30});
	check(book, dir, "--moves all", &(Filter){.side = -1, .window = -1});
	/* Moves within CP of the best. */
	check(book, dir, "--window 10", &(Filter){.side = -1, .window = 10});
	check(book, dir, "--moves best", &(Filter){.side = -1, .window = 0});
	/* A ply range. */
	check(book, dir, "--min-ply 2 --max-ply 3 --moves all",
	      &(Filter){.min_ply = 2, .max_ply = 3, .side = -1, .window = -1});
	/* One side's positions. */
	check(book, dir, "--side white --moves all", &(Filter){.side = WHITE, .window = -1});
	check(book, dir, "--side black", &(Filter){.side = BLACK, .window = 30});
	/* Depth and games floors. */
	check(book, dir, "--min-depth 10 --moves all",
	      &(Filter){.side = -1, .window = -1, .min_depth = 10});
	check(book, dir, "--min-games 4 --moves all",
	      &(Filter){.side = -1, .window = -1, .min_games = 4});
	/* From a root: only what its lines reach through the moves written. */
	check(book, dir, "--root 'startpos moves 2g2f' --moves all",
	      &(Filter){.side = -1, .window = -1, .root = "startpos moves 2g2f"});
	check(book, dir, "--root startpos --moves best",
	      &(Filter){.side = -1, .window = 0, .root = "startpos"});
	/* For Black from the start: Black's best move, White's every reply. */
	check(book, dir, "--root startpos --side black --moves best",
	      &(Filter){.side = BLACK, .window = 0, .root = "startpos"});
	/* Together: roots from a file, a ply cap, a games floor. */
	char roots[800];
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	static const char R[] = "# the 7g7f lines\nstartpos moves 7g7f\n";
	assert_int_equal(ts_write_file(roots, R, sizeof R - 1), 0);
	char args[1000];
	snprintf(args, sizeof args, "--roots %s --max-ply 3 --min-games 2 --moves all", roots);
	check(book, dir, args,
	      &(Filter){.side = -1,
	                .window = -1,
	                .min_games = 2,
	                .max_ply = 3,
	                .root = "startpos moves 7g7f"});
	/* A root the book lacks is an error naming it; nothing is written. */
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s export %s %s/x.db --root 'startpos moves 1g1f'",
	                         ts_joseki(), book, dir),
	                 1);
	assert_non_null(strstr(err, "root 1 'startpos moves 1g1f' is not in the book"));
	free(err);

	/* The Apery format takes the same filters: the entries of the white
	 * positions only, against the YaneuraOu export's moves. */
	char apery[800], db[800];
	snprintf(apery, sizeof apery, "%s/part.bin", dir);
	snprintf(db, sizeof db, "%s/part.db", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --side white --moves all --quiet",
	                         ts_joseki(), book, apery),
	                 0);
	size_t len;
	char *bin = ts_read_file(apery, &len);
	char *want = expected(&(Filter){.side = WHITE, .window = -1});
	size_t moves = 0;
	for (const char *p = want; *p; p++) moves += *p == ',' || *p == '|';
	assert_int_equal(len, moves * APERY_ENTRY_SIZE);
	free(bin);
	free(want);
	ts_rmtree(dir);
	free(book);
	free(dir);
}

/* Filters that contradict each other, or one that the rest would make
 * ignored, are usage errors naming them (exit 2, nothing written); their
 * meaningful neighbours still write. */
static void test_partial__contradictory_or_ignored_filters_are_usage_errors(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *book = plant_book(dir), out[800];
	snprintf(out, sizeof out, "%s/e.db", dir);
	static const struct {
		const char *args, *says[2];
	} BAD[] = {
	    {"--min-ply 10 --max-ply 5", {"--min-ply 10", "--max-ply 5"}},
	    {"--moves all --window 5", {"--window", "--moves all"}},
	    {"--moves best --window 5", {"--window", "--moves best"}},
	};
	for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
		char *o = NULL, *e = NULL;
		int rc = ts_runf(&o, &e, "%s export %s %s %s", ts_joseki(), book, out, BAD[i].args);
		if (rc != 2 || !strstr(e, BAD[i].says[0]) || !strstr(e, BAD[i].says[1]))
			fail_msg("export %s: exit %d, said '%s'", BAD[i].args, rc, e);
		assert_string_equal(o, "");
		assert_null(ts_read_file(out, NULL));
		free(o);
		free(e);
	}
	/* A range of one ply, a window with the window's moves: written. */
	check(book, dir, "--min-ply 3 --max-ply 3 --moves all",
	      &(Filter){.min_ply = 3, .max_ply = 3, .side = -1, .window = -1});
	check(book, dir, "--moves window --window 10", &(Filter){.side = -1, .window = 10});
	ts_rmtree(dir);
	free(book);
	free(dir);
}

/* The YaneuraOu options printed after an export speak of the sides the
 * file has positions of: no BookEvalBlackLimit for a book of White's
 * positions (--side white, or a root whose reach holds only White's). */
static void test_partial__yaneuraou_advice_names_only_the_sides_the_file_has(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *book = plant_book(dir), out[800];
	snprintf(out, sizeof out, "%s/w.db", dir);
	static const char *const WHITE_ONLY[] = {"--side white",
	                                         "--root 'startpos moves 7g7f' --max-ply 2"};
	for (size_t i = 0; i < 2; i++) {
		char *o = NULL;
		assert_int_equal(ts_runf(&o, NULL, "%s export %s %s %s --moves all", ts_joseki(),
		                         book, out, WHITE_ONLY[i]),
		                 0);
		char *text = ts_read_file(out, NULL);
		assert_null(strstr(text, " b ")); /* no Black position in the file */
		assert_non_null(strstr(text, " w "));
		free(text);
		if (strstr(o, "BookEvalBlackLimit") || !strstr(o, "BookEvalWhiteLimit"))
			fail_msg("export %s said:\n%s", WHITE_ONLY[i], o);
		free(o);
		json_t *j = ts_run_json(0, "%s export %s %s %s --moves all --json", ts_joseki(),
		                        book, out, WHITE_ONLY[i]);
		json_t *yo = json_object_get(j, "yaneuraou_options");
		assert_null(json_object_get(yo, "BookEvalBlackLimit"));
		assert_non_null(json_object_get(yo, "BookEvalWhiteLimit"));
		/* Where the time went: the walk from the root a phase of its own
		 * (none without a root), the phases within the whole. */
		json_t *ph = json_object_get(j, "phases_ms");
		json_int_t sum = 0;
		static const char *const PHASES[] = {"reach", "read", "join", "blocks", "write"};
		for (size_t k = 0; k < 5; k++) {
			json_t *v = json_object_get(ph, PHASES[k]);
			if (!json_is_integer(v) || json_integer_value(v) < 0)
				fail_msg("phases_ms lacks %s", PHASES[k]);
			sum += json_integer_value(v);
		}
		assert_true(sum <= ts_jint(j, "time_ms") + 3);
		if (i == 0) assert_int_equal(ts_jint(ph, "reach"), 0);
		json_decref(j);
	}
	/* Both sides: both limits. */
	char *o = NULL;
	assert_int_equal(ts_runf(&o, NULL, "%s export %s %s", ts_joseki(), book, out), 0);
	assert_non_null(strstr(o, "BookEvalBlackLimit"));
	assert_non_null(strstr(o, "BookEvalWhiteLimit"));
	free(o);
	ts_rmtree(dir);
	free(book);
	free(dir);
}

/* The start position's move lines of a YaneuraOu export: "move count". */
static char *start_lines(const char *path)
{
	char *text = ts_read_file(path, NULL);
	const char *s =
	    strstr(text, "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b");
	assert_non_null(s);
	s = strchr(s, '\n') + 1;
	char *out = calloc(1, 512);
	while (*s && strncmp(s, "sfen", 4)) {
		char mv[8], ponder[8];
		int v, d, c;
		assert_int_equal(sscanf(s, "%7s %7s %d %d %d", mv, ponder, &v, &d, &c), 5);
		snprintf(out + strlen(out), 512 - strlen(out), "%s %d\n", mv, c);
		s = strchr(s, '\n') + 1;
	}
	free(text);
	return out;
}

/* What YaneuraOu plays first: its moves ordered by count, then value (the
 * order its reader sorts a position's moves in), the first. */
static void yaneuraou_first(const char *path, char *usi)
{
	char *text = ts_read_file(path, NULL);
	const char *s =
	    strstr(text, "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b");
	s = strchr(s, '\n') + 1;
	int bc = -1, bv = 0;
	while (*s && strncmp(s, "sfen", 4)) {
		char mv[8], ponder[8];
		int v, d, c;
		assert_int_equal(sscanf(s, "%7s %7s %d %d %d", mv, ponder, &v, &d, &c), 5);
		if (c > bc || (c == bc && v > bv)) {
			bc = c;
			bv = v;
			strcpy(usi, mv);
		}
		s = strchr(s, '\n') + 1;
	}
	free(text);
}

static void test_partial__the_count_field_keeps_value_deciding_unless_asked_for_games(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[700], out[800], usi[8];
	snprintf(book, sizeof book, "%s/book", dir);
	snprintf(out, sizeof out, "%s/c.db", dir);
	/* 7g7f is the best and played least; 2g2f played most. */
	ts_plant(book, "startpos", "7g7f:100:2 2g2f:80:10 5g5f:50:1 6g6f:40:0", 12);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s export %s %s --moves all --quiet", ts_joseki(), book, out), 0);
	char *l = start_lines(out);
	/* Games raised to the count of the move below: 10 10 1 1. */
	assert_string_equal(l, "7g7f 10\n2g2f 10\n5g5f 1\n6g6f 1\n");
	free(l);
	yaneuraou_first(out, usi);
	assert_string_equal(usi, "7g7f");
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --moves all --count games --quiet",
	                         ts_joseki(), book, out),
	                 0);
	l = start_lines(out);
	assert_string_equal(l, "7g7f 2\n2g2f 10\n5g5f 1\n6g6f 1\n");
	free(l);
	yaneuraou_first(out, usi);
	assert_string_equal(usi, "2g2f");
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --moves all --count one --quiet",
	                         ts_joseki(), book, out),
	                 0);
	l = start_lines(out);
	assert_string_equal(l, "7g7f 1\n2g2f 1\n5g5f 1\n6g6f 1\n");
	free(l);
	/* Apery: the same counts in its entries, best first. */
	snprintf(out, sizeof out, "%s/c.bin", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s export %s %s --moves all --quiet", ts_joseki(), book, out), 0);
	size_t len;
	uint8_t *bin = (uint8_t *)ts_read_file(out, &len);
	assert_int_equal(len, 4 * APERY_ENTRY_SIZE);
	static const int COUNTS[] = {10, 10, 1, 1};
	for (int i = 0; i < 4; i++) {
		AperyEntry e;
		apery_entry_read(&e, bin + i * APERY_ENTRY_SIZE);
		assert_int_equal(e.count, COUNTS[i]);
	}
	free(bin);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_partial__each_filter_gives_the_positions_the_test_computes),
	    cmocka_unit_test(
	        test_partial__the_count_field_keeps_value_deciding_unless_asked_for_games),
	    cmocka_unit_test(test_partial__contradictory_or_ignored_filters_are_usage_errors),
	    cmocka_unit_test(test_partial__yaneuraou_advice_names_only_the_sides_the_file_has),
	};
	shogi_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
