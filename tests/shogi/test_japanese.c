/*
 * tests/shogi/test_japanese.c — moves as a player writes them
 * (shogi/japanese.h): reading the KI2 fixtures and writing their moves back
 * gives the same text, token for token; the disambiguation rules (上/引/寄
 * first, then 右/左/直, then both; a dragon or horse right or left of the
 * other; 打 only where a board piece could also go; 成/不成) on positions
 * built for each rule; every legal move of many positions is read back as
 * itself; and text that names no move, or two, is refused with a reason.
 */
#include <iconv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest/kifu.h"
#include "shogi/japanese.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tests/support/support.h"

static Position g_pos;

static void set(const char *spec)
{
	char err[SHOGI_ERRLEN];
	if (position_parse(&g_pos, spec, err) != 0) fail_msg("%s: %s", spec, err);
}

/* The written form of the USI move usi in g_pos (prev_to from the last move). */
static const char *written(const char *usi)
{
	static char out[JA_MOVE_MAX];
	Move m;
	char err[SHOGI_ERRLEN];
	if (usi_move_parse_legal(&m, &g_pos, usi, strlen(usi), err) != 0)
		fail_msg("%s: %s", usi, err);
	Square prev = pos_history_len(&g_pos) ? move_to(pos_st(&g_pos)->move) : SQ_NONE;
	ja_move_write(&g_pos, m, prev, true, NULL, 0, out);
	/* ... and reading it back gives the move. */
	Move back;
	if (ja_move_parse(&back, &g_pos, prev, out, strlen(out), err) != 0)
		fail_msg("%s written %s does not read back: %s", usi, out, err);
	if (back != m) fail_msg("%s written %s reads back as another move", usi, out);
	return out;
}

static void check(const char *usi, const char *want)
{
	const char *got = written(usi);
	if (strcmp(got, want)) fail_msg("%s: wrote %s, want %s", usi, got, want);
}

static void test_japanese__motion_then_position_then_both(void **state)
{
	(void)state;
	/* The start position: two golds reach 5h, both moving up. */
	set("startpos");
	check("7g7f", "▲７六歩");
	check("4i5h", "▲５八金右");
	check("6i5h", "▲５八金左");
	check("6i7h", "▲７八金"); /* only one gold reaches 7h */
	/* Three golds in a row: left, straight, right (上 would not tell). */
	set("sfen k8/9/3GGG3/9/9/9/9/9/4K4 b - 1");
	check("6c5b", "▲５二金左");
	check("5c5b", "▲５二金直");
	check("4c5b", "▲５二金右");
	/* Motion alone tells: one goes up, one sideways, one back. */
	set("sfen k8/9/9/9/9/9/3G5/4G4/3GK4 b - 1");
	check("6g6h", "▲６八金引");
	check("5h6h", "▲６八金寄");
	check("6i6h", "▲６八金上");
	/* Two silvers go back, one up: the position tells for the left one, both
	 * words are needed for the right one going back (5i is right too). */
	set("sfen k8/9/9/9/9/9/2S1S4/9/4S3K b - 1");
	check("5g6h", "▲６八銀右引");
	check("7g6h", "▲６八銀左");
	check("5i6h", "▲６八銀上");
	/* Knights: right and left. */
	set("sfen k8/9/9/9/9/9/9/9/N1N1K4 b - 1");
	check("9i8g", "▲８七桂左");
	check("7i8g", "▲８七桂右");
	/* White's right is towards file 9: silvers on 5c and 4c to 4d. */
	set("sfen 4k4/9/4ss3/9/9/9/9/9/4K4 w - 1");
	check("5c4d", "△４四銀右");
	check("4c4d", "△４四銀直");
}

static void test_japanese__dragons_and_horses_right_or_left_of_the_other(void **state)
{
	(void)state;
	/* Both dragons move back to 2d: the one on 2b (same file as 2d) is left
	 * of the other, not "straight". */
	set("sfen k8/7+R1/8+R/9/9/9/9/9/4K4 b - 1");
	check("1c2d", "▲２四龍右");
	check("2b2d", "▲２四龍左");
	/* Horses: one goes up, one back: the motion tells. */
	set("sfen k8/9/9/9/4+B4/9/6+B2/9/4K4 b - 1");
	check("5e4f", "▲４六馬引");
	check("3g4f", "▲４六馬上");
	/* Three horses (a problem position): the rules' words run out, the
	 * origin says it as KIF does. */
	set("sfen +B7+B/9/9/9/9/9/9/9/+B3K3k b - 1");
	check("1a5e", "▲５五馬右");
	check("9i5e", "▲５五馬上");
	check("9a5e", "▲５五馬引(91)");
}

static void test_japanese__drops_promotions_and_same_square(void **state)
{
	(void)state;
	/* A silver on 5d could also go to 6c: the drop says 打. */
	set("sfen k8/9/9/4S4/9/9/9/9/4K4 b S 1");
	check("S*6c", "▲６三銀打");
	check("5d6c+", "▲６三銀成");
	check("5d6c", "▲６三銀不成");
	check("S*1a", "▲１一銀"); /* no board silver reaches 1a: no 打 */
	/* A pawn into the zone; a pawn capture with 同; a rook's. */
	set("startpos moves 7g7f 3c3d 2g2f 3d3e 2f2e 3e3f 2e2d 2c2d");
	check("2h2d", "▲同　飛");
	set("startpos moves 7g7f 3c3d 2g2f 3d3e 2f2e 3e3f 2e2d");
	check("2c2d", "△同　歩");
	set("startpos moves 7g7f 3c3d 2g2f 3d3e 2f2e 3e3f 2e2d 3f3g 2d2c");
	check("3g3h+", "△３八歩成");
	set("startpos moves 7g7f 3c3d 2g2f 3d3e 2f2e 3e3f 2e2d 3f3g 2d2c+ 3g3h+");
	check("2h3h", "▲同　飛");
	set("startpos moves 7g7f 3c3d 8h2b+");
	check("3a2b", "△同　銀");
	set("startpos moves 7g7f 3c3d 8h2b");
	check("3a2b", "△同　銀");
	set("startpos moves 7g7f 3c3d 8h3c");
	check("2b3c", "△同　角");
	set("sfen 4k4/3g5/9/2P6/9/9/9/9/4K4 w - 1 moves 6b7c");
	check("7d7c+", "▲同歩成");
	check("7d7c", "▲同歩不成");
}

static void test_japanese__every_legal_move_reads_back_as_itself(void **state)
{
	(void)state;
	unsigned long long seed = ts_seed("test_japanese__every_legal_move_reads_back_as_itself");
	static Move legal[MOVEGEN_MAX];
	int checked = 0;
	for (int game = 0; game < 40; game++) {
		pos_set_startpos(&g_pos);
		Square prev = SQ_NONE;
		for (int ply = 0; ply < 150; ply++) {
			int n = movegen_legal(&g_pos, legal);
			if (n == 0) break;
			for (int i = 0; i < n; i++) {
				char text[JA_MOVE_MAX], err[SHOGI_ERRLEN];
				ja_move_write(&g_pos, legal[i], prev, ply & 1, legal, n, text);
				Move back;
				if (ja_move_parse(&back, &g_pos, prev, text, strlen(text), err) !=
				    0)
					fail_msg("%s: %s", text, err);
				if (back != legal[i])
					fail_msg("%s reads back as another move", text);
				checked++;
			}
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			Move m = legal[(seed >> 33) % (unsigned)n];
			prev = move_to(m);
			pos_do_move(&g_pos, m);
		}
	}
	assert_true(checked > 100000);
}

#define JA(text) ja_move_parse(&m, &g_pos, SQ_NONE, text, strlen(text), err)

static void test_japanese__what_is_read_and_what_is_refused(void **state)
{
	(void)state;
	Move m;
	char err[SHOGI_ERRLEN];
	set("startpos");
	Move m76 = move_make(sq_make(6, 6), sq_make(6, 5), false);
	static const char *const SAME[] = {"▲７六歩", "７六歩(77)",  "▲76歩", "☗７六歩",
	                                   "７六歩",  "　▲７六歩　", "▲7六歩"};
	for (size_t i = 0; i < sizeof SAME / sizeof SAME[0]; i++) {
		if (ja_move_parse(&m, &g_pos, SQ_NONE, SAME[i], strlen(SAME[i]), err) != 0)
			fail_msg("%s: %s", SAME[i], err);
		assert_int_equal(m, m76);
	}
	/* Two golds reach 5h: the plain name is ambiguous, and says which. */
	assert_int_equal(JA("▲５八金"), SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "ambiguous"));
	assert_non_null(strstr(err, "6i"));
	assert_non_null(strstr(err, "4i"));
	/* The wrong side's mark, 同 without a previous move, a wrong origin. */
	assert_int_equal(JA("△３四歩"), SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "Black's turn"));
	assert_int_equal(JA("同　歩"), SHOGI_EILLEGAL);
	assert_int_equal(JA("７六歩(78)"), SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "7h"));
	assert_int_equal(JA("▲５五金"), SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "5e"));
	/* Text that is no move at all. */
	static const char *const BAD[] = {"",        "▲",        "▲７",     "▲７六",
	                                  "▲７六象", "▲７六歩x", "７六歩(7"};
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++)
		if (ja_move_parse(&m, &g_pos, SQ_NONE, BAD[i], strlen(BAD[i]), err) != SHOGI_EPARSE)
			fail_msg("'%s' was not refused as malformed", BAD[i]);
	/* Other names of the same pieces: 王, 竜, 全; 生 for 不成. */
	set("sfen 4k4/9/9/3S5/9/9/9/9/4K4 b - 1");
	assert_int_equal(JA("▲５八王"), 0);
	assert_int_equal(JA("▲６三銀生"), 0);
	assert_false(move_is_promote(m));
	set("sfen 4k4/9/9/9/9/9/9/1+R7/4K4 b - 1");
	assert_int_equal(JA("▲８一竜"), 0);
	assert_int_equal(JA("▲８一龍"), 0);
	set("sfen 4k4/9/9/9/9/9/9/1+S7/4K4 b - 1");
	assert_int_equal(JA("▲８七全"), 0);
	assert_int_equal(JA("▲８七成銀"), 0);
}

/* ---- the KI2 fixtures: read, then written back token for token ---------- */

/* The file as UTF-8 (Shift_JIS converted), malloc'd. */
static char *utf8_file(const char *path)
{
	size_t len;
	char *raw = ts_read_file(path, &len);
	assert_non_null(raw);
	iconv_t cd = iconv_open("UTF-8", "CP932");
	assert_true(cd != (iconv_t)-1);
	size_t cap = len * 3 + 16, left = len, room = cap - 1;
	char *out = malloc(cap), *ip = raw, *op = out;
	/* A file already UTF-8 is kept: CP932 would refuse its bytes. */
	if (iconv(cd, &ip, &left, &op, &room) == (size_t)-1) {
		memcpy(out, raw, len);
		op = out + len;
	}
	*op = 0;
	iconv_close(cd);
	free(raw);
	return out;
}

static bool is_mark(const char *s)
{
	return !strncmp(s, "▲", 3) || !strncmp(s, "△", 3);
}

static void test_japanese__ki2_fixtures_written_back_as_read(void **state)
{
	(void)state;
	static const char *const FILES[] = {"20091203.ki2", "7mai.ki2u",
	                                    "8mai.ki2",     "8mai.ki2u",
	                                    "chudan.ki2",   "denou3-1.ki2",
	                                    "fork.ki2",     "fuujite.ki2u",
	                                    "illegal.ki2",  "kobayashi_kinsho196702.ki2",
	                                    "noeol.ki2"};
	int total = 0;
	for (size_t f = 0; f < sizeof FILES / sizeof FILES[0]; f++) {
		char path[256];
		snprintf(path, sizeof path, "tests/data/kifu-formats/ki2/%s", FILES[f]);
		KifuReader *r;
		assert_int_equal(kifu_reader_open_file(&r, path), 0);
		assert_int_equal(kifu_reader_format(r), KIFU_KI2);
		KifuRecord *rec;
		if (kifu_reader_next(r, &rec) != 1) fail_msg("%s: %s", path, kifu_reader_error(r));
		assert_null(rec->illegal);
		/* The main line's tokens, as the file writes them. */
		char *text = utf8_file(path);
		char *tokens[512];
		int nt = 0;
		for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
			if (!strncmp(line, "変化", 6)) break;
			if (!is_mark(line)) continue;
			for (char *p = line; *p;) {
				char *q = p + 3;
				while (*q && !is_mark(q)) q++;
				char *e = q;
				while (e > p &&
				       (e[-1] == ' ' || (e - p >= 3 && !strncmp(e - 3, "　", 3))))
					e -= e[-1] == ' ' ? 1 : 3;
				assert_true(nt < 512);
				tokens[nt] = strndup(p, (size_t)(e - p));
				nt++;
				p = q;
			}
		}
		if ((size_t)nt != rec->nmoves)
			fail_msg("%s: %d moves written, %zu read", path, nt, rec->nmoves);
		char err[SHOGI_ERRLEN];
		assert_int_equal(kifu_record_position(&g_pos, rec, err), 0);
		Square prev = SQ_NONE;
		for (int i = 0; i < nt; i++) {
			char out[JA_MOVE_MAX];
			ja_move_write(&g_pos, rec->moves[i].move, prev, true, NULL, 0, out);
			if (strcmp(out, tokens[i]))
				fail_msg("%s move %d: wrote %s, the file has %s", path, i + 1, out,
				         tokens[i]);
			prev = move_to(rec->moves[i].move);
			pos_do_move(&g_pos, rec->moves[i].move);
			free(tokens[i]);
		}
		total += nt;
		free(text);
		kifu_record_free(rec);
		kifu_reader_free(r);
	}
	assert_int_equal(total, 172 + 2 + 25 + 25 + 3 + 98 + 3 + 2 + 2 + 49 + 3);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_japanese__motion_then_position_then_both),
	    cmocka_unit_test(test_japanese__dragons_and_horses_right_or_left_of_the_other),
	    cmocka_unit_test(test_japanese__drops_promotions_and_same_square),
	    cmocka_unit_test(test_japanese__every_legal_move_reads_back_as_itself),
	    cmocka_unit_test(test_japanese__what_is_read_and_what_is_refused),
	    cmocka_unit_test(test_japanese__ki2_fixtures_written_back_as_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
