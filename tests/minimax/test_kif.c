/*
 * tests/minimax/test_kif.c — the book as a KIF tree (joseki export --format
 * kif|ki2, docs/minimax.md "The book as a KIF tree") and the KIF reader's
 * tree (ingest/kifu.h, kifu_reader_want_tree): a planted book exported as
 * KIF (UTF-8 and Shift_JIS) and KI2 reads back, through joseki's reader,
 * as the tree the test computes from its table — every move, in the order
 * best first, with its comment — and tsshogi (the record library of the
 * ShogiHome GUI, tests/minimax/read_kif.mjs), a second reader written
 * independently, reads the same tree; both readers agree on a KIF a GUI
 * wrote (ShogiGUI's export of a book, tests/data/apery/shogigui.kif), whose
 * every move of the same book's DB2016 file is on its tree, and on the
 * first 8 plies of a book of the bundled floodgate games exported by joseki.
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

#include "ingest/kifu.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/minimax/planted_tree.h"
#include "tests/support/support.h"

static bool have_tsshogi(void)
{
	return ts_runf(NULL, NULL,
	               "test -d tests/minimax/node_modules/tsshogi && node --version") == 0;
}

static void skip_without_tsshogi(void)
{
	if (!have_tsshogi()) {
		print_message("skipped: node or tests/minimax/node_modules/tsshogi is missing "
		              "(tools/install-deps.sh installs them)\n");
		skip();
	}
}

/* One line of a tree: "DEPTH USI COMMENT" (the comment JSON-quoted), as
 * read_kif.mjs prints. */
static void tree_line(char **out, size_t *len, int depth, const char *usi, const char *comment,
                      size_t clen)
{
	json_t *s = json_stringn(comment, clen);
	char *q = json_dumps(s, JSON_ENCODE_ANY);
	json_decref(s);
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "%d %s %s\n", depth, usi, q);
	free(q);
	*out = realloc(*out, *len + (size_t)n + 1);
	memcpy(*out + *len, buf, (size_t)n + 1);
	*len += (size_t)n;
}

static void walk(const KifuRecord *rec, uint32_t parent, int depth, char **out, size_t *len)
{
	for (size_t i = 0; i < rec->ntree; i++) {
		if (rec->tree[i].parent != parent) continue;
		char usi[USI_MOVE_MAX];
		usi_move_write(rec->tree[i].move, usi);
		tree_line(out, len, depth, usi,
		          rec->tree_text ? rec->tree_text + rec->tree[i].comment_off : "",
		          rec->tree[i].comment_len);
		walk(rec, (uint32_t)i, depth + 1, out, len);
	}
}

/* joseki's reader's tree of path, as read_kif.mjs prints one. */
static char *joseki_tree(const char *path)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_file(&r, path), 0);
	kifu_reader_want_tree(r, true);
	KifuRecord *rec = NULL;
	int rc = kifu_reader_next(r, &rec);
	if (rc != 1) fail_msg("%s: %d %s", path, rc, kifu_reader_error(r));
	if (rec->illegal) fail_msg("%s: %s", path, rec->illegal);
	char *out = NULL;
	size_t len = 0;
	tree_line(&out, &len, 0, "-", rec->tree_text ? rec->tree_text + rec->start_comment_off : "",
	          rec->start_comment_len);
	walk(rec, KIFU_TREE_ROOT, 1, &out, &len);
	kifu_record_free(rec);
	kifu_reader_free(r);
	return out;
}

/* tsshogi's tree of path. */
static char *tsshogi_tree(const char *path)
{
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "timeout 120 node tests/minimax/read_kif.mjs %s", path);
	if (rc) fail_msg("read_kif.mjs %s: exit %d: %s", path, rc, err);
	free(err);
	return out;
}

typedef struct {
	char usi[8];
	int value, games;
} Mv;

/* The tree the test expects: from spec, depth first, each position's moves
 * best first (all of them: --moves all), to plies; comments as the export
 * writes them. */
static void expect(const char *spec, int depth, int plies, char **out, size_t *len)
{
	if (depth > plies) return;
	size_t i = 0;
	while (i < NBOOK && strcmp(BOOK[i].spec, spec)) i++;
	if (i == NBOOK) return;
	Mv mv[8];
	int n = 0;
	char *copy = strdup(BOOK[i].moves), *save = NULL;
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		Mv m = {.games = 0};
		sscanf(t, "%7[^:]:%d:%d", m.usi, &m.value, &m.games);
		if (plant_declined(BOOK[i].moves, m.usi)) continue;
		int p = n++;
		while (p > 0 && mv[p - 1].value < m.value) {
			mv[p] = mv[p - 1];
			p--;
		}
		mv[p] = m;
	}
	free(copy);
	Position pos;
	assert_int_equal(position_parse(&pos, spec, NULL), 0);
	for (int k = 0; k < n; k++) {
		char comment[300];
		int black = pos.side == BLACK ? mv[k].value : -mv[k].value;
		int c = snprintf(comment, sizeof comment,
		                 "#評価値=%+d\njoseki: value %+d thought, depth %d", black,
		                 mv[k].value, BOOK[i].depth);
		if (mv[k].games)
			snprintf(comment + c, sizeof comment - (size_t)c, ", games %d (+%d =0 -0)",
			         mv[k].games, mv[k].games);
		tree_line(out, len, depth, mv[k].usi, comment, strlen(comment));
		char child[300];
		snprintf(child, sizeof child, "%s%s %s", spec,
		         strstr(spec, "moves") ? "" : " moves", mv[k].usi);
		expect(child, depth + 1, plies, out, len);
	}
}

/* The tree an export of spec to plies must read back as: the start's
 * comment, then expect's moves. */
static char *want_tree(const char *comment, const char *spec, int plies)
{
	char *out = NULL;
	size_t len = 0;
	tree_line(&out, &len, 0, "-", comment, strlen(comment));
	expect(spec, 1, plies, &out, &len);
	return out;
}

static void test_kif__the_export_reads_back_as_the_tree_of_the_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[700], path[800];
	snprintf(book, sizeof book, "%s/book", dir);
	for (size_t i = 0; i < NBOOK; i++)
		ts_plant(book, BOOK[i].spec, BOOK[i].moves, BOOK[i].depth);
	/* The start's comment says how deep the tree is (its longest line: the
	 * book ends 4 plies in) and what may cut it. */
	char *want = want_tree("joseki: the book from startpos, 4 plies deep (--plies 6), every "
	                       "valued move for both sides",
	                       "startpos", 6);
	static const char *const NAMES[] = {"book.kifu", "book.kif", "book.ki2u", "book.ki2"};
	for (size_t f = 0; f < 4; f++) {
		snprintf(path, sizeof path, "%s/%s", dir, NAMES[f]);
		assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --plies 6 --moves all",
		                         ts_joseki(), book, path),
		                 0);
		char *got = joseki_tree(path);
		if (strcmp(got, want)) fail_msg("%s:\nwanted:\n%s\ngot:\n%s", NAMES[f], want, got);
		free(got);
		/* The Shift_JIS files are not UTF-8 (the second byte of ▲ etc.). */
		char *bytes = ts_read_file(path, NULL);
		assert_true((strstr(bytes, "#KI") != NULL) ==
		            (NAMES[f][strlen(NAMES[f]) - 1] == 'u'));
		free(bytes);
	}
	/* From another root: a board diagram, moves numbered from 1 after it. */
	char *rwant = want_tree("joseki: the book from startpos moves 7g7f, 3 plies deep (--plies "
	                        "3), every valued move for both sides",
	                        "startpos moves 7g7f", 3);
	snprintf(path, sizeof path, "%s/root.kifu", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL,
	            "%s export %s %s --root 'startpos moves 7g7f' --plies 3 --moves all",
	            ts_joseki(), book, path),
	    0);
	char *bytes = ts_read_file(path, NULL);
	assert_non_null(strstr(bytes, "後手番\n"));
	assert_non_null(strstr(bytes, "\n   1 ３四歩(33)"));
	free(bytes);
	char *rgot = joseki_tree(path);
	assert_string_equal(rgot, rwant);
	free(rgot);
	if (have_tsshogi()) {
		rgot = tsshogi_tree(path);
		assert_string_equal(rgot, rwant);
		free(rgot);
	}
	free(rwant);
	/* Cut by the filters as the YaneuraOu export is: the best move alone,
	 * 2 plies. */
	snprintf(path, sizeof path, "%s/best.kifu", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s export %s %s --plies 2 --moves best", ts_joseki(), book, path),
	    0);
	char *got = joseki_tree(path);
	assert_non_null(strstr(got, "\n1 7g7f "));
	assert_non_null(strstr(got, "\n2 3c3d "));
	assert_null(strstr(got, "\n1 2g2f "));
	assert_null(strstr(got, "\n3 "));
	free(got);
	if (have_tsshogi()) {
		for (size_t f = 0; f < 4; f++) {
			snprintf(path, sizeof path, "%s/%s", dir, NAMES[f]);
			char *ts = tsshogi_tree(path);
			if (strcmp(ts, want))
				fail_msg("tsshogi, %s:\nwanted:\n%s\ngot:\n%s", NAMES[f], want, ts);
			free(ts);
		}
	} else {
		print_message("tsshogi missing: the second reader's check was not run\n");
	}
	free(want);
	ts_rmtree(dir);
	free(dir);
}

/* Every line of a tree (joseki_tree's) at depth d starting with move usi. */
static bool has_line(const char *tree, int d, const char *usi)
{
	char needle[32];
	snprintf(needle, sizeof needle, "\n%d %s ", d, usi);
	return strstr(tree, needle) != NULL;
}

/* The filters cut the tree as the docs say (--max-ply, --min-games,
 * --min-depth), the start's comment states the depth the tree really has
 * and the options that cut it, and --min-ply and --count, which a tree
 * cannot take, are usage errors. */
static void test_kif__the_filters_cut_the_tree_and_its_comment_says_how_deep(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[700], path[800];
	snprintf(book, sizeof book, "%s/book", dir);
	plant_tree(book);
	snprintf(path, sizeof path, "%s/cut.kifu", dir);
	/* --max-ply 2: the positions up to ply 2 have their moves written, the
	 * tree is 2 plies deep although --plies allows 6. */
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s export %s %s --plies 6 --max-ply 2 --moves all",
	                         ts_joseki(), book, path),
	                 0);
	assert_non_null(strstr(out, "2 plies deep"));
	free(out);
	char *want = want_tree("joseki: the book from startpos, 2 plies deep (--plies 6, --max-ply "
	                       "2), every valued move for both sides",
	                       "startpos", 2);
	char *got = joseki_tree(path);
	if (strcmp(got, want)) fail_msg("--max-ply 2:\nwanted:\n%s\ngot:\n%s", want, got);
	free(got);
	free(want);
	/* --min-games 4: only moves of 4 games or more (7g7f 10, 3c3d 6, 8c8d
	 * 4, then 2g2f 5 and 4, then 8c8d 5). */
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --plies 6 --moves all --min-games 4",
	                         ts_joseki(), book, path),
	                 0);
	got = joseki_tree(path);
	assert_true(has_line(got, 1, "7g7f") && has_line(got, 2, "3c3d") &&
	            has_line(got, 2, "8c8d") && has_line(got, 3, "2g2f") &&
	            has_line(got, 4, "8c8d"));
	assert_false(has_line(got, 1, "2g2f") || has_line(got, 1, "5g5f") ||
	             has_line(got, 2, "4c4d") || has_line(got, 3, "6i7h") ||
	             has_line(got, 4, "4c4d"));
	assert_non_null(strstr(got, "4 plies deep (--plies 6, --min-games 4)"));
	free(got);
	/* --min-depth 10: the moves of positions analysed shallower (depths 9,
	 * 8 and 6) go, those of 10 and deeper stay. */
	assert_int_equal(ts_runf(NULL, NULL, "%s export %s %s --plies 6 --moves all --min-depth 10",
	                         ts_joseki(), book, path),
	                 0);
	got = joseki_tree(path);
	assert_non_null(strstr(got, "depth 20"));
	assert_non_null(strstr(got, "depth 10"));
	assert_null(strstr(got, "depth 9"));
	assert_null(strstr(got, "depth 8"));
	assert_null(strstr(got, "depth 6"));
	assert_true(has_line(got, 4, "4c4d"));
	free(got);
	/* What a tree cannot take: a usage error naming it, nothing written. */
	static const char *const BAD[] = {"--min-ply 5 --plies 4", "--count games"};
	snprintf(path, sizeof path, "%s/bad.kifu", dir);
	for (size_t i = 0; i < 2; i++) {
		char *err = NULL, opt[16];
		snprintf(opt, sizeof opt, "%.*s", (int)strcspn(BAD[i], " "), BAD[i]);
		int rc = ts_runf(NULL, &err, "%s export %s %s %s", ts_joseki(), book, path, BAD[i]);
		if (rc != 2 || !strstr(err, opt) || !strstr(err, "KIF"))
			fail_msg("export %s: exit %d, said '%s'", BAD[i], rc, err);
		assert_null(ts_read_file(path, NULL));
		free(err);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_kif__both_readers_agree_on_a_gui_export_and_the_bundled_book(void **state)
{
	(void)state;
	skip_without_tsshogi();
	/* ShogiGUI's KIF of a book: 25 variations; the same tree both ways. */
	const char *gui = "tests/data/apery/shogigui.kif";
	char *ours = joseki_tree(gui), *theirs = tsshogi_tree(gui);
	assert_string_equal(ours, theirs);
	size_t moves = 0;
	for (const char *p = ours; *p; p++) moves += *p == '\n';
	assert_true(moves > 60);
	/* The tree holds the same book's DB2016 file: its moves from the
	 * positions that file holds include the file's move there, and every
	 * record of the file is on the tree (the tree's other moves are lines
	 * of the games Apery's book, which keeps the winners' moves, lacks). */
	char *dir = ts_mkdtemp(), book[700], path[800];
	snprintf(book, sizeof book, "%s/book", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s import %s tests/data/apery/yaneuraou.db", ts_joseki(), book),
	    0);
	KifuReader *r;
	assert_int_equal(kifu_reader_open_file(&r, gui), 0);
	kifu_reader_want_tree(r, true);
	KifuRecord *rec = NULL;
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	size_t book_moves = 0;
	for (size_t i = 0; i < rec->ntree; i++) {
		char spec[2000] = "";
		size_t d = 0;
		uint32_t chain[200];
		for (uint32_t p = (uint32_t)i; p != KIFU_TREE_ROOT; p = rec->tree[p].parent)
			chain[d++] = p;
		strcpy(spec, "startpos moves");
		for (size_t k = d; k-- > 1;) {
			char u[USI_MOVE_MAX];
			usi_move_write(rec->tree[chain[k]].move, u);
			strcat(spec, " ");
			strcat(spec, u);
		}
		if (d == 1) strcpy(spec, "startpos");
		char u[USI_MOVE_MAX];
		usi_move_write(rec->tree[i].move, u);
		json_t *q = ts_run_json(0, "%s query %s '%s' --json", ts_joseki(), book, spec);
		bool found = false;
		json_t *m;
		size_t j;
		json_array_foreach(json_object_get(q, "moves"), j, m)
		{
			found |= !strcmp(json_string_value(json_object_get(m, "move")), u);
		}
		book_moves += found;
		json_decref(q);
	}
	assert_int_equal(book_moves, 73);
	kifu_record_free(rec);
	kifu_reader_free(r);
	/* The first 8 plies of a book of the bundled games (the floodgate
	 * fixtures, thought by the built-in engine), exported by joseki: every
	 * variation read by tsshogi as by joseki's reader, as many moves as the
	 * export wrote. */
	snprintf(book, sizeof book, "%s/bundled", dir);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%1$s ingest %2$s tests/data/floodgate --quiet && %1$s think %2$s "
	                         "--nodes 500 --positions 40 --quiet && %1$s minimax %2$s --quiet",
	                         ts_joseki(), book),
	                 0);
	snprintf(path, sizeof path, "%s/bundled.kif", dir);
	json_t *o =
	    ts_run_json(0, "%s export %s %s --plies 8 --moves all --json", ts_joseki(), book, path);
	long long written = ts_jint(o, "moves");
	/* Every position of a tree exported after minimax has minimax values
	 * (the count said 0). */
	assert_true(ts_jint(o, "positions") > 0);
	assert_int_equal(ts_jint(o, "minimaxed"), ts_jint(o, "positions"));
	json_decref(o);
	char *a = joseki_tree(path), *b = tsshogi_tree(path);
	assert_string_equal(a, b);
	size_t lines = 0;
	for (const char *p = a; *p; p++) lines += *p == '\n';
	assert_int_equal(lines, (size_t)written + 1);
	assert_true(written > 60);
	free(a);
	free(b);
	free(ours);
	free(theirs);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kif__the_export_reads_back_as_the_tree_of_the_book),
	    cmocka_unit_test(test_kif__the_filters_cut_the_tree_and_its_comment_says_how_deep),
	    cmocka_unit_test(test_kif__both_readers_agree_on_a_gui_export_and_the_bundled_book),
	};
	shogi_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
