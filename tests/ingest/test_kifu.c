/*
 * tests/ingest/test_kifu.c — the one reader of game records (ingest/kifu.h)
 * on real exports: every KIF, KI2 and JKF fixture is sniffed as what it is
 * and replayed to the ending its last line states (by the rules); the same
 * game read from KIF, KI2 (Shift_JIS and UTF-8) and JKF gives the same start
 * and the same moves, one reader checked against another, and against the
 * DB2016 book made from the same ShogiGUI export; handicaps start where they
 * should; an illegal move in each format stops the moves and is reported with
 * its line; the content, not the name, says the format; the same game in
 * three formats is ingested once.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest/kifu.h"
#include "ingest/replay.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

#define FIX "tests/data/kifu-formats/"

static Position g_pos;

/* The one record of text (len bytes; the test fails if there is none). */
static KifuRecord *read_mem(const char *text, size_t len, const char *name, KifuFormat *fmt)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_mem(&r, text, len, name), 0);
	if (fmt) *fmt = kifu_reader_format(r);
	KifuRecord *rec = NULL;
	int rc = kifu_reader_next(r, &rec);
	if (rc != 1) fail_msg("%s: %d %s", name, rc, kifu_reader_error(r));
	kifu_reader_free(r);
	return rec;
}

static KifuRecord *read_text(const char *text, const char *name, KifuFormat *fmt)
{
	return read_mem(text, strlen(text), name, fmt);
}

static KifuRecord *read_one(const char *path, KifuFormat *fmt)
{
	size_t len;
	char *data = ts_read_file(path, &len);
	if (!data) fail_msg("%s: cannot read", path);
	KifuRecord *rec = read_mem(data, len, path, fmt);
	free(data);
	return rec;
}

static void test_kifu__fixtures_end_as_their_last_lines_say(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		KifuFormat fmt;
		int plies; /* -1: the start position is impossible */
		const char *end, *winner, *claim;
		int variations;
	} F[] = {
	    {"kif/20081220kyoochi.kif", KIFU_KIF, 142, "resign", "black", "TORYO", 0},
	    {"kif/32ryu-cumbersome.kif", KIFU_KIF, 9, "mate", "black", "TSUMI", 0},
	    {"kif/8mai.kif", KIFU_KIF, 25, "interrupted", "none", "CHUDAN", 0},
	    {"kif/9fu.kif", KIFU_KIF, -1, "", "", "TSUMI", 0},
	    {"kif/chudan.kif", KIFU_KIF, 3, "interrupted", "none", "CHUDAN", 0},
	    {"kif/doh_branch.kifu", KIFU_KIF, 3, "interrupted", "none", "CHUDAN", 2},
	    {"kif/fork-notime.kif", KIFU_KIF, 3, "none", "none", "", 7},
	    {"kif/fork-test.kif", KIFU_KIF, 3, "none", "none", "", 2},
	    {"kif/fork.kif", KIFU_KIF, 3, "resign", "black", "TORYO", 7},
	    {"kif/henka.kif", KIFU_KIF, 12, "interrupted", "none", "CHUDAN", 5},
	    {"kif/illegal.kif", KIFU_KIF, 2, "illegal_move", "white", "ILLEGAL_MOVE", 1},
	    {"kif/jt201409130101.kif", KIFU_KIF, 107, "resign", "black", "TORYO", 0},
	    {"kif/kifu_for_iphone.kif", KIFU_KIF, 3, "mate", "black", "TSUMI", 0},
	    {"kif/kiou201403160101.kif", KIFU_KIF, 85, "resign", "black", "TORYO", 0},
	    {"kif/last-fork.kifu", KIFU_KIF, 10, "interrupted", "none", "CHUDAN", 1},
	    {"kif/last_comment.kif", KIFU_KIF, 3, "none", "none", "", 0},
	    {"kif/meijinsen_20180508_M7_10034.kif", KIFU_KIF, 52, "interrupted", "none", "CHUDAN",
	     0},
	    {"kif/no_henka.kif", KIFU_KIF, 11, "none", "none", "", 0},
	    {"kif/no_henka.kifu", KIFU_KIF, 11, "none", "none", "", 0},
	    {"kif/noeol.kif", KIFU_KIF, 3, "interrupted", "none", "CHUDAN", 0},
	    {"kif/oui201407080101.kif", KIFU_KIF, 116, "resign", "white", "TORYO", 0},
	    {"kif/ouza201410070101.kif", KIFU_KIF, 103, "none", "none", "", 0},
	    {"kif/ryuou201409020101.kif", KIFU_KIF, 117, "resign", "black", "TORYO", 0},
	    {"kif/ryuou4.kif", KIFU_KIF, 101, "resign", "black", "TORYO", 0},
	    {"kif/shogidb2.kifu", KIFU_KIF, 110, "resign", "white", "TORYO", 0},
	    {"kif/shogidokoro.kifu", KIFU_KIF, 19, "mate", "black", "", 0},
	    {"kif/taichitsume.kif", KIFU_KIF, 7, "mate", "black", "TSUMI", 0},
	    {"ki2/20091203.ki2", KIFU_KI2, 172, "resign", "white", "TORYO", 0},
	    {"ki2/7mai.ki2u", KIFU_KI2, 2, "interrupted", "none", "CHUDAN", 0},
	    {"ki2/8mai.ki2", KIFU_KI2, 25, "interrupted", "none", "CHUDAN", 0},
	    {"ki2/8mai.ki2u", KIFU_KI2, 25, "interrupted", "none", "CHUDAN", 0},
	    {"ki2/8mai-eucjp.ki2", KIFU_KI2, 25, "interrupted", "none", "CHUDAN", 0},
	    {"kif/8mai-eucjp.kif", KIFU_KIF, 25, "interrupted", "none", "CHUDAN", 0},
	    {"ki2/9fu.ki2", KIFU_KI2, -1, "", "", "TSUMI", 0},
	    {"ki2/chudan.ki2", KIFU_KI2, 3, "interrupted", "none", "CHUDAN", 0},
	    {"ki2/denou3-1.ki2", KIFU_KI2, 98, "resign", "white", "TORYO", 0},
	    {"ki2/fork.ki2", KIFU_KI2, 3, "resign", "black", "TORYO", 7},
	    {"ki2/fuujite.ki2u", KIFU_KI2, 2, "interrupted", "none", "CHUDAN", 0},
	    /* "まで2手で先手の反則負け": Black's illegal action, White wins */
	    {"ki2/illegal.ki2", KIFU_KI2, 2, "illegal_move", "white", "+ILLEGAL_ACTION", 1},
	    /* a problem: 詰 with a futile interposition left, which the rules count */
	    {"ki2/kobayashi_kinsho196702.ki2", KIFU_KI2, 49, "resign", "black", "TSUMI", 0},
	    {"ki2/noeol.ki2", KIFU_KI2, 3, "interrupted", "none", "CHUDAN", 0},
	    {"jkf/ryuou201409020101.jkf", KIFU_JKF, 117, "resign", "black", "TORYO", 0},
	    {"jkf/same_move_minimal.jkf", KIFU_JKF, 5, "none", "none", "", 0},
	};
	for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
		char path[256];
		snprintf(path, sizeof path, FIX "%s", F[i].file);
		KifuFormat fmt;
		KifuRecord *rec = read_one(path, &fmt);
		if (fmt != F[i].fmt) fail_msg("%s: read as %s", path, kifu_format_name(fmt));
		ReplayResult res;
		int rc = replay_kifu(&res, &g_pos, rec, NULL, NULL);
		if (F[i].plies < 0) {
			assert_int_equal(rc, KIFU_EILLEGAL);
			assert_non_null(strstr(res.error, "impossible start position"));
		} else {
			if (rc != 0) fail_msg("%s: %s", path, res.error);
			if (res.plies != F[i].plies || strcmp(game_end_name(res.end), F[i].end) ||
			    strcmp(game_winner_name(res.winner), F[i].winner))
				fail_msg("%s: %d plies, %s, %s", path, res.plies,
				         game_end_name(res.end), game_winner_name(res.winner));
			assert_int_equal(res.error[0], 0);
		}
		if (strcmp(rec->special, F[i].claim))
			fail_msg("%s: claims '%s'", path, rec->special);
		assert_int_equal(rec->variations, F[i].variations);
		assert_null(rec->illegal);
		kifu_record_free(rec);
	}
}

/* Same start and same moves, as CSA tokens. */
static void assert_same_game(const char *a, const char *b)
{
	KifuRecord *x = read_one(a, NULL), *y = read_one(b, NULL);
	assert_memory_equal(x->board, y->board, sizeof x->board);
	assert_memory_equal(x->hand, y->hand, sizeof x->hand);
	assert_int_equal(x->side, y->side);
	if (x->nmoves != y->nmoves) fail_msg("%s: %zu moves, %s: %zu", a, x->nmoves, b, y->nmoves);
	for (size_t i = 0; i < x->nmoves; i++)
		if (strcmp(x->moves[i].token, y->moves[i].token) ||
		    x->moves[i].move != y->moves[i].move)
			fail_msg("%s and %s differ at move %zu: %s, %s", a, b, i + 1,
			         x->moves[i].token, y->moves[i].token);
	/* The claims may be worded differently (KIF's 反則負け, KI2's 先手の反則負け):
	 * the rules' verdict is the same. */
	ReplayResult rx, ry;
	int cx = replay_kifu(&rx, &g_pos, x, NULL, NULL),
	    cy = replay_kifu(&ry, &g_pos, y, NULL, NULL);
	assert_int_equal(cx, cy);
	assert_int_equal(rx.end, ry.end);
	assert_int_equal(rx.winner, ry.winner);
	assert_int_equal(x->variations, y->variations);
	if ((x->name[BLACK] || y->name[BLACK]) && x->name[BLACK] && y->name[BLACK])
		assert_string_equal(x->name[BLACK], y->name[BLACK]);
	kifu_record_free(x);
	kifu_record_free(y);
}

static void test_kifu__same_game_in_every_format(void **state)
{
	(void)state;
	assert_same_game(FIX "kif/8mai.kif", FIX "ki2/8mai.ki2");
	assert_same_game(FIX "ki2/8mai.ki2", FIX "ki2/8mai.ki2u");      /* Shift_JIS and UTF-8 */
	assert_same_game(FIX "kif/8mai.kif", FIX "kif/8mai-eucjp.kif"); /* and EUC-JP */
	assert_same_game(FIX "ki2/8mai.ki2", FIX "ki2/8mai-eucjp.ki2");
	assert_same_game(FIX "kif/9fu.kif", FIX "ki2/9fu.ki2"); /* a board diagram */
	assert_same_game(FIX "kif/chudan.kif", FIX "ki2/chudan.ki2");
	assert_same_game(FIX "kif/noeol.kif", FIX "ki2/noeol.ki2");
	assert_same_game(FIX "kif/fork.kif", FIX "ki2/fork.ki2");
	assert_same_game(FIX "kif/illegal.kif", FIX "ki2/illegal.ki2");
	assert_same_game(FIX "kif/ryuou201409020101.kif", FIX "jkf/ryuou201409020101.jkf");
	assert_same_game(FIX "kif/no_henka.kif", FIX "kif/no_henka.kifu");
	/* Names and dates come through as UTF-8 whatever the file's encoding. */
	KifuRecord *r = read_one(FIX "ki2/8mai.ki2", NULL);
	assert_string_equal(r->name[BLACK], "shitate");
	assert_string_equal(r->name[WHITE], "uwate");
	assert_string_equal(r->start_time, "2014/10/13 18:51:20");
	kifu_record_free(r);
	r = read_one(FIX "kif/8mai-eucjp.kif", NULL);
	assert_string_equal(r->name[BLACK], "shitate");
	kifu_record_free(r);
	r = read_one(FIX "kif/no_henka.kif", NULL); /* says UTF-8, is Shift_JIS */
	assert_string_equal(r->name[BLACK], "先手56789012全3456789");
	kifu_record_free(r);
	r = read_one(FIX "jkf/ryuou201409020101.jkf", NULL);
	assert_string_equal(r->name[BLACK], "羽生善治");
	kifu_record_free(r);
}

/* The ShogiGUI export's main line is the line the DB2016 book of the same
 * book holds, one move a position. */
static void test_kifu__shogigui_export_agrees_with_the_book(void **state)
{
	(void)state;
	KifuRecord *rec = read_one("tests/data/apery/shogigui.kif", NULL);
	assert_int_equal(rec->nmoves, 9);
	assert_int_equal(rec->variations, 25);
	char *db = ts_read_file("tests/data/apery/yaneuraou.db", NULL);
	assert_non_null(db);
	assert_int_equal(kifu_record_position(&g_pos, rec, NULL), 0);
	for (size_t i = 0; i < rec->nmoves; i++) {
		char sfen[SFEN_MAX], usi[USI_MOVE_MAX], want[SFEN_MAX + 32];
		sfen_write(&g_pos, sfen, sizeof sfen);
		usi_move_write(rec->moves[i].move, usi);
		snprintf(want, sizeof want, "sfen %s\n%s ", sfen, usi);
		if (!strstr(db, want))
			fail_msg("move %zu %s not in the book at %s", i + 1, usi, sfen);
		pos_do_move(&g_pos, rec->moves[i].move);
	}
	free(db);
	kifu_record_free(rec);
}

static void test_kifu__handicaps_start_where_they_should(void **state)
{
	(void)state;
	/* The squares of White's camp each handicap empties. */
	static const struct {
		const char *name, *empty;
	} H[] = {
	    {"香落ち", "1a"},
	    {"右香落ち", "9a"},
	    {"角落ち", "2b"},
	    {"飛車落ち", "8b"},
	    {"飛香落ち", "8b 1a"},
	    {"二枚落ち", "8b 2b"},
	    {"三枚落ち", "8b 2b 1a"},
	    {"四枚落ち", "8b 2b 1a 9a"},
	    {"五枚落ち", "8b 2b 1a 9a 8a"},
	    {"左五枚落ち", "8b 2b 1a 9a 2a"},
	    {"六枚落ち", "8b 2b 1a 9a 8a 2a"},
	    {"左七枚落ち", "8b 2b 1a 9a 8a 2a 3a"},
	    {"右七枚落ち", "8b 2b 1a 9a 8a 2a 7a"},
	    {"八枚落ち", "8b 2b 1a 9a 8a 2a 7a 3a"},
	    {"十枚落ち", "8b 2b 1a 9a 8a 2a 7a 3a 6a 4a"},
	};
	Position start;
	pos_set_startpos(&start);
	for (size_t i = 0; i < sizeof H / sizeof H[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, "手合割：%s\n手数----指手---------消費時間--\n",
		         H[i].name);
		KifuRecord *rec = read_text(text, "h.kif", NULL);
		assert_int_equal(rec->side, WHITE); /* the giver moves first */
		int removed = 0;
		for (Square sq = 0; sq < SQ_NB; sq++) {
			char at[3] = {(char)('1' + sq_file(sq)), (char)('a' + sq_rank(sq)), 0};
			bool gone = strstr(H[i].empty, at) != NULL;
			if (gone) {
				assert_int_not_equal(start.board[sq], PIECE_NONE);
				assert_int_equal(rec->board[sq], PIECE_NONE);
				removed++;
			} else if (rec->board[sq] != start.board[sq]) {
				fail_msg("%s: %s differs from the start", H[i].name, at);
			}
		}
		assert_int_equal(removed, (int)(strlen(H[i].empty) + 1) / 3);
		kifu_record_free(rec);
	}
}

static void test_kifu__unknown_handicap_is_refused(void **state)
{
	(void)state;
	KifuReader *r;
	const char *text = "手合割：六枚半落ち\n   1 ７二金(61)\n";
	assert_int_equal(kifu_reader_open_mem(&r, text, strlen(text), "h.kif"), 0);
	KifuRecord *rec;
	assert_int_equal(kifu_reader_next(r, &rec), KIFU_EPARSE);
	assert_non_null(strstr(kifu_reader_error(r), "h.kif:1: unknown handicap"));
	kifu_reader_free(r);
}

/* An illegal move: the record's moves stop before it, the replay reports it
 * with the line and the move as written. */
static void check_illegal(const char *text, const char *name, int plies, int line, const char *what)
{
	KifuRecord *rec = read_text(text, name, NULL);
	ReplayResult res;
	assert_int_equal(replay_kifu(&res, &g_pos, rec, NULL, NULL), 0);
	if (res.plies != plies || res.end != GAME_END_ILLEGAL_MOVE || res.error_line != line ||
	    !strstr(res.error, what))
		fail_msg("%s: %d plies, %s, line %d: %s", name, res.plies, game_end_name(res.end),
		         res.error_line, res.error);
	kifu_record_free(rec);
}

static void test_kifu__illegal_moves_reported_with_their_line(void **state)
{
	(void)state;
	check_illegal("手合割：平手\n手数----指手---------消費時間--\n"
	              "   1 ７六歩(77)   ( 0:01/00:00:01)\n   2 ３四歩(33)   ( 0:01/00:00:01)\n"
	              "   3 ５五歩(56)   ( 0:01/00:00:02)\n   4 投了\n",
	              "bad.kif", 2, 5, "illegal move ５五歩(56) (Black has no pawn on 5f)");
	check_illegal("先手：a\n後手：b\n\n▲７六歩 △３四歩\n▲５五金 △８四歩\nまで4手で中断\n",
	              "bad.ki2", 2, 5,
	              "illegal move ▲５五金 (Black has no gold that can move to 5e)");
	check_illegal("先手：a\n\n▲７六歩 △３四歩 ▲５八金\n", "amb.ki2", 2, 3, "ambiguous: 2 of");
	check_illegal("先手：a\n\n▲７六歩 ▲２六歩\n", "turn.ki2", 1, 3, "it is White's turn");
	check_illegal(
	    "{\"moves\": [{},\n"
	    " {\"move\": {\"color\": 0, \"from\": {\"x\": 7, \"y\": 7}, \"to\": {\"x\": 7, "
	    "\"y\": 6}, \"piece\": \"FU\"}},\n"
	    " {\"move\": {\"color\": 1, \"from\": {\"x\": 5, \"y\": 5}, \"to\": {\"x\": 5, "
	    "\"y\": 6}, \"piece\": \"FU\"}}]}\n",
	    "bad.jkf", 1, 3, "illegal move -5556FU (no such piece on 5e)");
	check_illegal("startpos moves 7g7f 3c3d 5f5e\n", "bad.usi", 2, 1, "illegal move 5f5e");
}

/* Fails if s holds a byte a terminal would obey (a control, DEL, a C1 CSI). */
static void shown_as_text(const char *what, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (p[0] == 0xc2 && p[1] == 0x9b))
			fail_msg("%s: byte 0x%02x reaches the terminal raw: %s", what, *p, s);
}

/* A move holding an xterm title sequence and a bell, in every format: the
 * reader's and the replay's messages show it escaped, and so do `joseki
 * replay` and `joseki ingest` on a terminal (stdout, stderr). */
static void test_kifu__foreign_bytes_in_errors_are_shown_escaped(void **state)
{
	(void)state;
#define PWN "\x1b]0;PWNED\x07\xc2\x9b"
#define SHOWN "\\x1B]0;PWNED\\x07\\xC2\\x9B"
	static const struct {
		const char *name, *text;
		bool unreadable; /* the reader refuses the record (else the replay stops) */
	} CASES[] = {
	    {"pwn.kif",
	     "手合割：平手\n手数----指手---------消費時間--\n   1 ７六歩(77)\n   2 ３" PWN "(33)\n",
	     false},
	    {"pwn.ki2", "先手：a\n\n▲７六歩 △" PWN "\n", false},
	    {"pwn.usi", "startpos moves 7g7f " PWN "\n", false},
	    {"pwn.csa", "V2.2\nPI\n+\n+7776FU\n" PWN "\n", true},
	    {"pwn.jkf",
	     "{\"initial\": {\"preset\": \"\\u001b]0;PWNED\\u0007\\u009b\"}, \"moves\": [{}]}",
	     true},
	};
	char *dir = ts_mkdtemp();
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
		KifuReader *r;
		const char *text = CASES[i].text;
		assert_int_equal(kifu_reader_open_mem(&r, text, strlen(text), CASES[i].name), 0);
		KifuRecord *rec = NULL;
		int rc = kifu_reader_next(r, &rec);
		const char *msg;
		ReplayResult res;
		if (CASES[i].unreadable) {
			assert_int_equal(rc, KIFU_EPARSE);
			msg = kifu_reader_error(r);
		} else {
			assert_int_equal(rc, 1);
			assert_int_equal(replay_kifu(&res, &g_pos, rec, NULL, NULL), 0);
			/* No move at all there: a damaged record, no result (a move
			 * its player lost by made it a win for the other side). */
			assert_true(rec->cut);
			assert_int_equal(res.end, GAME_END_NONE);
			assert_int_equal(res.winner, GAME_WINNER_NONE);
			msg = res.error;
		}
		shown_as_text(CASES[i].name, msg);
		if (!strstr(msg, SHOWN))
			fail_msg("%s: '%s' does not show '%s'", CASES[i].name, msg, SHOWN);
		kifu_record_free(rec);
		kifu_reader_free(r);
		/* The commands, as a user sees them. */
		char path[700], *out = NULL, *err = NULL;
		snprintf(path, sizeof path, "%s/%s", dir, CASES[i].name);
		assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
		(void)ts_runf(&out, &err, "%s replay %s", ts_joseki(), path);
		shown_as_text("replay's stdout", out);
		shown_as_text("replay's stderr", err);
		if (!strstr(out, SHOWN) && !strstr(err, SHOWN))
			fail_msg("replay %s: '%s' '%s' do not show it", CASES[i].name, out, err);
		free(out);
		free(err);
		(void)ts_runf(&out, &err, "%s ingest %s/b %s", ts_joseki(), dir, path);
		shown_as_text("ingest's stdout", out);
		shown_as_text("ingest's stderr", err);
		if (!strstr(err, SHOWN))
			fail_msg("ingest %s: '%s' does not show it", CASES[i].name, err);
		free(out);
		free(err);
	}
	ts_rmtree(dir);
	free(dir);
#undef PWN
#undef SHOWN
}

static void test_kifu__content_says_the_format(void **state)
{
	(void)state;
	static const struct {
		const char *text, *name;
		KifuFormat fmt;
	} S[] = {
	    {"   1 ７六歩(77)\n", "x.txt", KIFU_KIF},
	    {"開始日時：2020/01/01\n\n▲７六歩\n", "x.kif", KIFU_KI2},
	    {"V2.2\nPI\n+\n+7776FU\n", "x.kif", KIFU_CSA},
	    {"{\"moves\":[{}]}", "x.csa", KIFU_JKF},
	    {"# games\nstartpos moves 7g7f\n", "x.kif", KIFU_USI},
	    {"g1\tstartpos moves 7g7f\n", "x", KIFU_USI},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1\n", "x", KIFU_USI},
	    {"7g7f 3c3d\n", "x", KIFU_USI},
	    {"'a comment only\n", "x.ki2", KIFU_KI2}, /* nothing tells: the name does */
	    {"'a comment only\n", "x", KIFU_CSA},
	    /* '#' comments alone: a USI list's, no game (they were read as CSA,
	     * whose reader took "# a, b" for an unknown statement) */
	    {"# rinsai opening set, v1\n#\n", "x.txt", KIFU_USI},
	    {"# openings\n\r\n#\n", "x.kif", KIFU_USI}, /* whatever the name */
	    {"# openings\n", "x.ki2", KIFU_USI},
	    {"garbage\n", "x", KIFU_CSA}, /* the CSA reader says what is wrong */
	};
	for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
		KifuFormat f = kifu_sniff(S[i].text, strlen(S[i].text), S[i].name);
		if (f != S[i].fmt) fail_msg("'%s' sniffed as %s", S[i].text, kifu_format_name(f));
	}
	/* A Shift_JIS KIF named .txt. */
	size_t len;
	char *sjis = ts_read_file(FIX "kif/8mai.kif", &len);
	assert_int_equal(kifu_sniff(sjis, len, "game.txt"), KIFU_KIF);
	free(sjis);
	/* An EUC-JP one, and one cut in the middle of a character. */
	char *euc = ts_read_file(FIX "ki2/8mai-eucjp.ki2", &len);
	assert_int_equal(kifu_sniff(euc, len, "game.txt"), KIFU_KI2);
	const char *moves = strstr(euc, "\n\n"), *next = moves ? strchr(moves + 2, '\n') : NULL;
	assert_non_null(next); /* the first line of moves, then the first byte of the next */
	assert_true((unsigned char)next[1] >= 0xA1);
	assert_int_equal(kifu_sniff(euc, (size_t)(next + 2 - euc), "game.txt"), KIFU_KI2);
	free(euc);
}

/* A UTF-8 KIF with three bad bytes in its move 5 (a damaged copy), with its
 * byte-order mark and without: still UTF-8 and KIF, its first 4 moves read
 * and the bad line named. It was decoded whole as Shift_JIS, every line
 * garbage, and read as 35 USI "games" of errors. */
static void test_kifu__a_damaged_utf8_record_stays_utf8(void **state)
{
	(void)state;
	size_t len;
	char *text = ts_read_file(FIX "kif/no_henka.kifu", &len);
	assert_non_null(text);
	assert_true(len > 3 && !memcmp(text, "\xEF\xBB\xBF", 3));
	const char *five = strstr(text, "   5 \xEF\xBC\x97");
	assert_non_null(five);
	size_t at = (size_t)(five - text) + 8, n = len + 3;
	char *bad = malloc(n);
	memcpy(bad, text, at);
	memcpy(bad + at, "\xFF\xFE\x80", 3);
	memcpy(bad + at + 3, text + at, len - at);
	for (int bom = 1; bom >= 0; bom--) {
		const char *b = bad + 3 * !bom;
		size_t bn = n - 3 * !bom;
		assert_int_equal(kifu_sniff(b, bn, "game.kifu"), KIFU_KIF);
		KifuReader *r;
		assert_int_equal(kifu_reader_open_mem(&r, b, bn, "game.kifu"), 0);
		KifuRecord *rec = NULL;
		assert_int_equal(kifu_reader_next(r, &rec), 1);
		assert_int_equal(rec->format, KIFU_KIF);
		assert_int_equal(rec->nmoves, 4);
		if (!rec->illegal || !strstr(rec->illegal, "\\xFF\\xFE\\x80"))
			fail_msg("bom %d: %s", bom,
			         rec->illegal ? rec->illegal : "(no illegal move)");
		assert_int_equal(rec->illegal_line, 32);
		kifu_record_free(rec);
		kifu_reader_free(r);
	}
	free(bad);
	free(text);
}

static void test_kifu__usi_lists(void **state)
{
	(void)state;
	const char *text = "# a comment\n\ng1\tstartpos moves 7g7f 3c3d\n"
	                   "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 "
	                   "moves 3c3d\n"
	                   "sfen bogus\n"
	                   "position startpos\n"
	                   "hello world\n"
	                   "7g7f 7g7f\n";
	KifuReader *r;
	assert_int_equal(kifu_reader_open_mem(&r, text, strlen(text), "l.usi"), 0);
	KifuRecord *rec;
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	assert_string_equal(rec->event, "g1");
	assert_int_equal(rec->nmoves, 2);
	assert_int_equal(rec->first_line, 3);
	kifu_record_free(rec);
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	assert_null(rec->event);
	assert_int_equal(rec->nmoves, 1);
	assert_int_equal(rec->start_ply, 2); /* the SFEN's move number is kept */
	kifu_record_free(rec);
	assert_int_equal(kifu_reader_next(r, &rec), KIFU_EPARSE);
	assert_non_null(strstr(kifu_reader_error(r), "l.usi:5: bad position"));
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	assert_int_equal(rec->nmoves, 0);
	kifu_record_free(rec);
	/* A line that is no game says so (it said "illegal move hello"); a bare
	 * move list's bad move is an illegal move as before. */
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	assert_string_equal(rec->illegal, "'hello' starts no position (startpos, sfen ..., an SFEN "
	                                  "board) and is no USI move");
	kifu_record_free(rec);
	assert_int_equal(kifu_reader_next(r, &rec), 1);
	assert_int_equal(rec->nmoves, 1);
	assert_non_null(strstr(rec->illegal, "illegal move 7g7f ("));
	kifu_record_free(rec);
	assert_int_equal(kifu_reader_next(r, &rec), 0);
	kifu_reader_free(r);
}

static void test_kifu__the_same_game_in_three_formats_is_ingested_once(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	json_t *o = ts_run_json(0,
	                        "%s ingest %s/book " FIX "kif/8mai.kif " FIX "ki2/8mai.ki2 " FIX
	                        "ki2/8mai.ki2u " FIX "kif/ryuou201409020101.kif " FIX
	                        "jkf/ryuou201409020101.jkf --json",
	                        ts_joseki(), dir);
	assert_int_equal(ts_jint(o, "games_read"), 5);
	assert_int_equal(ts_jint(o, "games_ingested"), 2);
	assert_int_equal(ts_jint(o, "duplicates"), 3);
	assert_int_equal(ts_jint(o, "errors_total"), 0);
	json_decref(o);
	/* A directory of every fixture: the impossible positions are the errors;
	 * the branches left unread are counted. */
	o = ts_run_json(0, "%s ingest %s/all tests/data/kifu-formats --json", ts_joseki(), dir);
	assert_int_equal(ts_jint(o, "files"), 44); /* 43 records and the LICENSE */
	assert_int_equal(ts_jint(o, "games_read"), 43);
	assert_int_equal(ts_jint(o, "games_rejected"), 2);
	assert_int_equal(ts_jint(o, "variations_skipped"), 7 + 2 + 2 + 7 + 5 + 1 + 1 + 7 + 1);
	json_t *skipped = json_object_get(o, "files_skipped");
	assert_int_equal(ts_jint(skipped, "not_game_files"), 1);
	/* Worded as replay words it. */
	json_t *e0 = json_array_get(json_object_get(o, "errors"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(e0, "message")),
	                       "impossible start position ("));
	json_decref(o);
	ts_rmtree(dir);
	free(dir);
}

/* Two games joined in one KIF or KI2 file: the first is read whole, as it
 * ends; nothing of the second (KI2's unnumbered moves had gone on from the
 * first game's last, its result an illegal move); ingest says where. */
static void test_kifu__a_second_game_in_one_file_is_not_read(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	static const char *const FILES[][3] = {{"two.ki2u", "ki2/8mai.ki2u", "ki2/8mai.ki2u"},
	                                       {"two.kif", "kif/8mai.kif", "kif/9fu.kif"}};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(ts_runf(NULL, NULL, "cat " FIX "%s " FIX "%s > %s/%s", FILES[i][1],
		                         FILES[i][2], dir, FILES[i][0]),
		                 0);
		json_t *o = ts_run_json(0, "%s replay %s/%s --json", ts_joseki(), dir, FILES[i][0]);
		json_t *g = json_array_get(json_object_get(o, "games"), 0);
		assert_int_equal(json_array_size(json_object_get(o, "games")), 1);
		assert_int_equal(ts_jint(g, "plies"), 25);
		assert_string_equal(json_string_value(json_object_get(g, "end")), "interrupted");
		json_decref(o);
		o = ts_run_json(0, "%s ingest %s/b%zu %s/%s --json --quiet", ts_joseki(), dir, i,
		                dir, FILES[i][0]);
		assert_int_equal(ts_jint(o, "games_ingested"), 1);
		assert_int_equal(ts_jint(o, "positions_added"), 25);
		json_t *e = json_array_get(json_object_get(o, "errors"), 0);
		assert_non_null(e);
		assert_true(ts_jint(e, "line") > 10);
		assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
		                       "a second game in one file: not read"));
		json_decref(o);
	}
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kifu__fixtures_end_as_their_last_lines_say),
	    cmocka_unit_test(test_kifu__same_game_in_every_format),
	    cmocka_unit_test(test_kifu__shogigui_export_agrees_with_the_book),
	    cmocka_unit_test(test_kifu__handicaps_start_where_they_should),
	    cmocka_unit_test(test_kifu__unknown_handicap_is_refused),
	    cmocka_unit_test(test_kifu__illegal_moves_reported_with_their_line),
	    cmocka_unit_test(test_kifu__foreign_bytes_in_errors_are_shown_escaped),
	    cmocka_unit_test(test_kifu__content_says_the_format),
	    cmocka_unit_test(test_kifu__a_damaged_utf8_record_stays_utf8),
	    cmocka_unit_test(test_kifu__usi_lists),
	    cmocka_unit_test(test_kifu__the_same_game_in_three_formats_is_ingested_once),
	    cmocka_unit_test(test_kifu__a_second_game_in_one_file_is_not_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
