/*
 * tests/ingest/test_csa.c — the CSA record reader: every fixture game and
 * dialect file, every statement kind (handicaps, board lines, single pieces,
 * 00AL, comma-joined statements, several records, CR LF, Shift_JIS bytes,
 * floodgate comments), and bad input (truncated, garbage, impossible
 * positions), which must give an error naming input:line and never crash.
 *
 * The expected move counts were written down from an independent count:
 * `grep -c '^[+-][0-9]{4}[A-Z]{2}'` over each file (comma-joined lines
 * counted with grep -o).
 */
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

typedef struct {
	const char *path;
	size_t moves;
	GameClaim end;
} Fixture;

static const Fixture FIXTURES[] = {
    {"floodgate/wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa", 125,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Allihn_Condenser+20260601130001.csa", 100,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Allihn_Condenser+20260602050002.csa", 82,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Pyfamate_v2_peta1115+20260601133002.csa",
     105, GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+YukiSHogiEngineV7.7+20260601090001.csa",
     102, GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+ZARD+20260602160006.csa", 81,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+clomeprop+20260601143005.csa", 114,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+jhbr2+20260601113000.csa", 71,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+62KIN_Suisho11_4c+kahm768+20260601080001.csa", 169,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+910+Gokaku-v2.3-b12c512-v500+20260601070006.csa", 86,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-300-10F+Allihn_Condenser+62KIN_Suisho11_4c+20260601050005.csa", 106,
     GAME_CLAIM_SENNICHITE},
    {"floodgate/wdoor+floodgate-300-10F+C2AC562E-YO-NNUE-NOBOOK-20260510+jhbr2+20260601023003.csa",
     29, GAME_CLAIM_TORYO},
    {"floodgate/"
     "wdoor+floodgate-300-10F+Titanda_L+SILENT_MAJORITY_sf170225_6950XEE+20170302210003.csa",
     256, GAME_CLAIM_NONE},
    {"floodgate/wdoor+floodgate-300-10F+test768_16_64_N150+clomeprop+20260605230006.csa", 129,
     GAME_CLAIM_TORYO},
    {"floodgate/wdoor+floodgate-600-10+01WishBlue_07+Apery_i5-4670+20150415003002.csa", 134,
     GAME_CLAIM_TORYO},
    {"csa-dialects/WCSC32_F7_NBS_DLS.csa", 176, GAME_CLAIM_TORYO},
    {"csa-dialects/dr1test1test0+tu-1_aobazero_viper-300-5F+aobazero+viper+20200719201040.csa", 400,
     GAME_CLAIM_KACHI},
    {"csa-dialects/v2.csa", 196, GAME_CLAIM_TORYO},
    {"csa-dialects/v2_2.csa", 2, GAME_CLAIM_CHUDAN},
    {"csa-dialects/wcsc25_Himawari_TeamGPS.csa", 110, GAME_CLAIM_TORYO},
    {"csa-dialects/x1_20111121-02-45-38-2934-gps-Bonanza_ACG13.csa", 150, GAME_CLAIM_TORYO},
    {"csa-dialects/yaneuraou_selfplay_jishogi.csa", 258, GAME_CLAIM_JISHOGI},
};
#define NFIXTURES (sizeof FIXTURES / sizeof FIXTURES[0])

/* Reads the single record of path (asserting there is exactly one). */
static KifuRecord *read_one_file(const char *path)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_file(&r, path), 0);
	KifuRecord *rec = NULL, *extra = NULL;
	int rc = kifu_reader_next(r, &rec);
	if (rc != 1) fail_msg("%s: %s", path, kifu_reader_error(r));
	assert_int_equal(kifu_reader_next(r, &extra), 0);
	assert_null(extra);
	kifu_reader_free(r);
	return rec;
}

/* Reads every record of an in-memory text; returns how many, errors in *nerr. */
static int read_all_text(const char *text, KifuRecord **recs, int max, int *nerr, char *lasterr)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_mem_as(&r, text, strlen(text), "mem.csa", KIFU_CSA), 0);
	int n = 0;
	*nerr = 0;
	for (;;) {
		KifuRecord *rec;
		int rc = kifu_reader_next(r, &rec);
		if (rc == 0) break;
		if (rc == KIFU_EPARSE) {
			(*nerr)++;
			if (lasterr) snprintf(lasterr, KIFU_ERRLEN, "%s", kifu_reader_error(r));
			assert_null(rec);
			continue;
		}
		assert_int_equal(rc, 1);
		if (n < max)
			recs[n] = rec;
		else
			kifu_record_free(rec);
		n++;
	}
	kifu_reader_free(r);
	return n;
}

static KifuRecord *read_one_text(const char *text)
{
	KifuRecord *rec[1];
	int nerr;
	char err[KIFU_ERRLEN] = "";
	int n = read_all_text(text, rec, 1, &nerr, err);
	if (nerr) fail_msg("unexpected error: %s", err);
	assert_int_equal(n, 1);
	return rec[0];
}

static void expect_error(const char *text, const char *needle)
{
	KifuRecord *recs[4];
	int nerr;
	char err[KIFU_ERRLEN] = "";
	int n = read_all_text(text, recs, 4, &nerr, err);
	for (int i = 0; i < n && i < 4; i++) kifu_record_free(recs[i]);
	if (nerr != 1 || !strstr(err, needle))
		fail_msg("expected one error with '%s', got %d: '%s'", needle, nerr, err);
	assert_true(!strncmp(err, "mem.csa:", 8));
}

static void test_csa__every_fixture_reads_with_its_move_count(void **state)
{
	(void)state;
	static Position pos;
	for (size_t i = 0; i < NFIXTURES; i++) {
		char path[512];
		snprintf(path, sizeof path, "tests/data/%s", FIXTURES[i].path);
		KifuRecord *rec = read_one_file(path);
		if (rec->nmoves != FIXTURES[i].moves)
			fail_msg("%s: %zu moves, expected %zu", path, rec->nmoves,
			         FIXTURES[i].moves);
		assert_int_equal(rec->end, FIXTURES[i].end);
		assert_true(rec->has_position);
		char err[SHOGI_ERRLEN];
		assert_int_equal(kifu_record_position(&pos, rec, err), 0);
		char sfen[SFEN_MAX];
		sfen_write(&pos, sfen, sizeof sfen);
		assert_string_equal(sfen, SFEN_STARTPOS);
		for (size_t k = 0; k < rec->nmoves; k++) {
			assert_int_equal(strlen(rec->moves[k].token), 7);
			assert_int_equal(rec->moves[k].token[0], k % 2 ? '-' : '+');
			assert_true(rec->moves[k].line > 0);
			if (k) assert_true(rec->moves[k].line > rec->moves[k - 1].line);
		}
		kifu_record_free(rec);
	}
}

static void test_csa__floodgate_header_comments_and_evals(void **state)
{
	(void)state;
	KifuRecord *rec = read_one_file("tests/data/csa-dialects/v2.csa");
	assert_string_equal(rec->version, "V2");
	assert_string_equal(rec->name[BLACK], "Titanda_L");
	assert_string_equal(rec->name[WHITE], "HarrySan");
	assert_string_equal(rec->event,
	                    "wdoor+floodgate-600-10F+Titanda_L+HarrySan+20160614033003");
	assert_string_equal(rec->start_time, "2016/06/14 03:30:03");
	assert_true(rec->has_rate[BLACK] && rec->has_rate[WHITE]);
	assert_true(rec->rate[BLACK] == 3345.0);
	assert_true(rec->rate[WHITE] == 3453.0);
	assert_int_equal(rec->max_moves, 256);
	assert_int_equal(kifu_record_max_moves(rec), 256);
	assert_string_equal(rec->summary, "toryo:Titanda_L lose:HarrySan win");
	/* +7776FU T0 '** 104 : an evaluation without PV; -8384FU '** 0: a book move. */
	assert_string_equal(rec->moves[0].token, "+7776FU");
	assert_int_equal(rec->moves[0].line, 22);
	assert_int_equal(rec->moves[0].time_ms, 0);
	assert_true(rec->moves[0].has_eval);
	assert_int_equal(rec->moves[0].eval, 104);
	assert_false(rec->moves[0].book);
	assert_true(rec->moves[1].has_eval);
	assert_true(rec->moves[1].book);
	/* the last move: -0068KI T0 '** -100000 then %TORYO */
	const KifuMove *last = &rec->moves[rec->nmoves - 1];
	assert_string_equal(last->token, "-0068KI");
	assert_int_equal(last->eval, -100000);
	assert_int_equal(rec->end, GAME_CLAIM_TORYO);
	assert_string_equal(rec->special, "TORYO");
	kifu_record_free(rec);

	/* A newer floodgate record: integer rates, a 512-ply limit, PVs. */
	rec = read_one_file(
	    "tests/data/floodgate/"
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Allihn_Condenser+20260601130001.csa");
	assert_true(rec->has_rate[BLACK] && rec->has_rate[WHITE]);
	assert_true(rec->rate[BLACK] == 3789.0);
	assert_true(rec->rate[WHITE] == 4168.0);
	assert_int_equal(rec->max_moves, 512);
	assert_int_equal(kifu_record_max_moves(rec), 512);
	assert_string_equal(rec->moves[0].token, "+4958KI");
	assert_int_equal(rec->moves[0].eval, 620);
	assert_true(rec->moves[1].book);
	assert_false(rec->moves[2].book); /* "'** 0 -8485FU": a zero score with a PV */
	size_t with_pv = 0;
	for (size_t i = 0; i < rec->nmoves; i++) {
		size_t len;
		const char *pv = kifu_move_pv(rec, i, &len);
		if (len) {
			with_pv++;
			assert_true(pv[0] == '+' || pv[0] == '-' ||
			            (pv[0] >= '0' && pv[0] <= '9') ||
			            (pv[0] >= 'A' && pv[0] <= 'Z'));
			assert_int_not_equal(pv[len - 1], ' ');
		}
	}
	assert_true(with_pv > 0);
	kifu_record_free(rec);
}

static void test_csa__wcsc_dialect_names_and_comma_joined_times(void **state)
{
	(void)state;
	KifuRecord *rec = read_one_file("tests/data/csa-dialects/wcsc25_Himawari_TeamGPS.csa");
	assert_string_equal(rec->name[BLACK], "Himawari");
	assert_string_equal(rec->name[WHITE], "TeamGPS");
	assert_string_equal(rec->time_limit, "00:10+10");
	assert_string_equal(rec->moves[0].token, "+2726FU");
	assert_int_equal(rec->moves[0].time_ms, 0);
	assert_int_equal(rec->moves[1].time_ms, 1000);
	assert_string_equal(rec->moves[14].token, "+3938GI");
	assert_int_equal(rec->moves[14].time_ms, 24000);
	assert_int_equal(rec->end, GAME_CLAIM_TORYO);
	assert_int_equal(rec->end_time_ms, 0);
	assert_int_equal(kifu_record_max_moves(rec), 0);
	kifu_record_free(rec);

	rec = read_one_file("tests/data/csa-dialects/WCSC32_F7_NBS_DLS.csa");
	assert_int_equal(rec->moves[0].time_ms, 41000);
	assert_int_equal(rec->moves[0].eval, 41);
	size_t len;
	const char *pv = kifu_move_pv(rec, 0, &len);
	assert_int_equal(len, 7);
	assert_memory_equal(pv, "-4132KI", 7);
	kifu_record_free(rec);
}

static void test_csa__shift_jis_crlf_and_several_records(void **state)
{
	(void)state;
	/* Shift_JIS names and comments (0x82 0xA0 ...), an invalid UTF-8 byte 0xFF,
	 * CR LF line ends, two records separated by "/". */
	const char *text = "V2.2\r\n"
	                   "N+\x8a\xf6\x96\xd8\r\n"
	                   "N-\xff\xfe\r\n"
	                   "'\x82\xa0\x82\xa2,\x82\xa4\r\n"
	                   "$EVENT:\x8f\xab\x8a\xfb\r\n"
	                   "PI\r\n"
	                   "+\r\n"
	                   "+7776FU,T12\r\n"
	                   "'** 30 -3334FU\r\n"
	                   "-3334FU,T3.5\r\n"
	                   "%TORYO,T1\r\n"
	                   "/\r\n"
	                   "\r\n"
	                   "V2\r\n"
	                   "P1-KY-KE-GI-KI-OU-KI-GI-KE-KY\r\n"
	                   "P2 * -HI *  *  *  *  * -KA * \r\n"
	                   "P3-FU-FU-FU-FU-FU-FU-FU-FU-FU\r\n"
	                   "P4 *  *  *  *  *  *  *  *  * \r\n"
	                   "P5 *  *  *  *  *  *  *  *  * \r\n"
	                   "P6 *  *  *  *  *  *  *  *  * \r\n"
	                   "P7+FU+FU+FU+FU+FU+FU+FU+FU+FU\r\n"
	                   "P8 * +KA *  *  *  *  * +HI * \r\n"
	                   "P9+KY+KE+GI+KI+OU+KI+GI+KE+KY\r\n"
	                   "+\r\n"
	                   "+2726FU\r\n"
	                   "T5\r\n"
	                   "%CHUDAN\r\n";
	KifuRecord *recs[4];
	int nerr;
	char err[KIFU_ERRLEN] = "";
	int n = read_all_text(text, recs, 4, &nerr, err);
	if (nerr) fail_msg("%s", err);
	assert_int_equal(n, 2);
	assert_string_equal(recs[0]->name[BLACK], "\x8a\xf6\x96\xd8");
	assert_string_equal(recs[0]->name[WHITE], "\xff\xfe");
	assert_string_equal(recs[0]->event, "\x8f\xab\x8a\xfb");
	assert_int_equal(recs[0]->nmoves, 2);
	assert_int_equal(recs[0]->moves[0].time_ms, 12000);
	assert_int_equal(recs[0]->moves[0].eval, 30);
	assert_int_equal(recs[0]->moves[1].time_ms, 3500);
	assert_int_equal(recs[0]->moves[1].line, 10);
	assert_int_equal(recs[0]->end, GAME_CLAIM_TORYO);
	assert_int_equal(recs[0]->end_time_ms, 1000);
	assert_int_equal(recs[1]->first_line, 14);
	assert_int_equal(recs[1]->nmoves, 1);
	assert_int_equal(recs[1]->moves[0].line, 25);
	assert_int_equal(recs[1]->moves[0].time_ms, 5000);
	assert_int_equal(recs[1]->end, GAME_CLAIM_CHUDAN);
	assert_memory_equal(recs[0]->board, recs[1]->board, sizeof recs[0]->board);
	kifu_record_free(recs[0]);
	kifu_record_free(recs[1]);

	/* A lone CR also ends a line (old Mac files). */
	KifuRecord *rec = read_one_text("PI\r+\r+7776FU\r-3334FU\r%TORYO\r");
	assert_int_equal(rec->nmoves, 2);
	assert_int_equal(rec->moves[1].line, 4);
	kifu_record_free(rec);
}

static void test_csa__handicap_pieces_and_all_remaining(void **state)
{
	(void)state;
	static Position pos;
	char sfen[SFEN_MAX], err[SHOGI_ERRLEN];

	/* Two-piece handicap: White (uwate) moves first. */
	KifuRecord *rec = read_one_text("V2.2\nPI82HI22KA\n-\n-5142OU\n");
	assert_int_equal(kifu_record_position(&pos, rec, err), 0);
	sfen_write(&pos, sfen, sizeof sfen);
	assert_string_equal(sfen, "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1");
	assert_int_equal(rec->side, WHITE);
	kifu_record_free(rec);

	/* Single pieces, hands, 00AL (the rest to White's hand but kings), empty P+. */
	rec = read_one_text("P-51OU\nP+59OU58KI\nP+00HI00FU00FU\nP+\nP-00AL\n+\n");
	assert_int_equal(kifu_record_position(&pos, rec, err), 0);
	sfen_write(&pos, sfen, sizeof sfen);
	assert_string_equal(sfen, "4k4/9/9/9/9/9/9/4G4/4K4 b R2Pr2b3g4s4n4l16p 1");
	kifu_record_free(rec);

	/* Promoted pieces on the board use up their unpromoted kind. */
	rec = read_one_text("P1 *  *  *  *  *  *  *  * -OU\nP9+OU+RY\nP-00AL\n+\n");
	assert_int_equal(kifu_record_position(&pos, rec, err), 0);
	sfen_write(&pos, sfen, sizeof sfen);
	assert_string_equal(sfen, "8k/9/9/9/9/9/9/9/K+R7 b r2b4g4s4n4l18p 1");
	kifu_record_free(rec);

	/* No side-to-move line: the first move's sign tells. */
	rec = read_one_text("PI\n-3334FU\n");
	assert_int_equal(rec->side, WHITE);
	kifu_record_free(rec);

	/* No position at all: the even game. */
	rec = read_one_text("N+a\nN-b\n+7776FU\n");
	assert_true(rec->has_position);
	assert_int_equal(kifu_record_position(&pos, rec, err), 0);
	sfen_write(&pos, sfen, sizeof sfen);
	assert_string_equal(sfen, SFEN_STARTPOS);
	kifu_record_free(rec);
}

static void test_csa__special_endings(void **state)
{
	(void)state;
	static const struct {
		const char *word;
		GameClaim end;
	} ENDS[] = {
	    {"%TORYO", GAME_CLAIM_TORYO},
	    {"%CHUDAN", GAME_CLAIM_CHUDAN},
	    {"%SENNICHITE", GAME_CLAIM_SENNICHITE},
	    {"%TIME_UP", GAME_CLAIM_TIME_UP},
	    {"%ILLEGAL_MOVE", GAME_CLAIM_ILLEGAL_MOVE},
	    {"%+ILLEGAL_ACTION", GAME_CLAIM_BLACK_ILLEGAL_ACTION},
	    {"%-ILLEGAL_ACTION", GAME_CLAIM_WHITE_ILLEGAL_ACTION},
	    {"%JISHOGI", GAME_CLAIM_JISHOGI},
	    {"%KACHI", GAME_CLAIM_KACHI},
	    {"%HIKIWAKE", GAME_CLAIM_HIKIWAKE},
	    {"%MATTA", GAME_CLAIM_MATTA},
	    {"%TSUMI", GAME_CLAIM_TSUMI},
	    {"%FUZUMI", GAME_CLAIM_FUZUMI},
	    {"%ERROR", GAME_CLAIM_ERROR},
	    {"%PASS", GAME_CLAIM_OTHER},
	};
	for (size_t i = 0; i < sizeof ENDS / sizeof ENDS[0]; i++) {
		char text[128];
		snprintf(text, sizeof text, "V3.0\nPI\n+\n+7776FU\n%s\nT7\n'summary:x\n",
		         ENDS[i].word);
		KifuRecord *rec = read_one_text(text);
		assert_int_equal(rec->end, ENDS[i].end);
		assert_string_equal(rec->special, ENDS[i].word + 1);
		assert_int_equal(rec->end_line, 5);
		assert_int_equal(rec->end_time_ms, 7000);
		assert_int_equal(rec->moves[0].time_ms, -1);
		assert_string_equal(rec->summary, "x");
		if (ENDS[i].end != GAME_CLAIM_OTHER)
			assert_string_equal(game_claim_word(ENDS[i].end), ENDS[i].word + 1);
		kifu_record_free(rec);
	}
	/* V3.0 game information */
	KifuRecord *v3 =
	    read_one_text("'CSA encoding=UTF-8\nV3.0\nN+a\nN-b\n$TIME:300+0+10\n$MAX_MOVES:320\n"
	                  "$JISHOGI:27\nPI\n+\n+7776FU\nT1.25\n%TORYO\n");
	assert_string_equal(v3->version, "V3.0");
	assert_string_equal(v3->time_limit, "300+0+10");
	assert_int_equal(kifu_record_max_moves(v3), 320);
	assert_int_equal(v3->moves[0].time_ms, 1250);
	kifu_record_free(v3);
	/* A repeated ending (aobazero's "%KACHI,'* ..." then "%KACHI"): the first counts. */
	KifuRecord *rec =
	    read_one_text("PI\n+\n+7776FU\n%KACHI,'* -5000 win, really\nT10\n%TORYO\n");
	assert_int_equal(rec->end, GAME_CLAIM_KACHI);
	assert_int_equal(rec->end_time_ms, 10000);
	kifu_record_free(rec);
}

static void test_csa__eval_comments_attach_to_the_move_they_follow(void **state)
{
	(void)state;
	KifuRecord *rec =
	    read_one_text("PI\n+\n'** 99 before any move\n+7776FU\nT1\n'** -45 -3334FU +2726FU \n"
	                  "'** 77 second comment ignored\n-3334FU\n'** 0\n+2726FU\n'** joseki\n"
	                  "-8384FU\n'** 100000 #1\n");
	assert_int_equal(rec->nmoves, 4);
	assert_true(rec->moves[0].has_eval);
	assert_int_equal(rec->moves[0].eval, -45);
	size_t len;
	const char *pv = kifu_move_pv(rec, 0, &len);
	assert_int_equal(len, strlen("-3334FU +2726FU"));
	assert_memory_equal(pv, "-3334FU +2726FU", len);
	assert_true(rec->moves[1].has_eval && rec->moves[1].book);
	assert_false(rec->moves[2].has_eval); /* "'** joseki" has no score */
	assert_int_equal(rec->moves[3].eval, 100000);
	assert_false(rec->moves[3].book);
	kifu_record_free(rec);
}

static void test_csa__malformed_records_name_input_and_line(void **state)
{
	(void)state;
	expect_error("PI\n+\n+7776F", "mem.csa:3: malformed move '+7776F'");
	expect_error("PI\n+\n+7776XX\n", "mem.csa:3: malformed move");
	expect_error("PI\n+\n+7706FU\n", "malformed move");
	expect_error("PI\n+\n+7776FU\nT1x\n", "mem.csa:4: malformed time 'T1x'");
	expect_error("PI\n+\nQQQ\n", "mem.csa:3: unknown statement 'QQQ'");
	expect_error("PI\n+\n\x01\x02\xff\n", "mem.csa:3: unknown statement '\\x01\\x02\\xFF'");
	expect_error("P1-KY-KE-GI-KI-OU-KI-GI-KE-K", "mem.csa:1: truncated square");
	expect_error("P1-XX\n", "unknown piece '-XX'");
	expect_error(
	    "P+00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU00FU\n+\n",
	    "mem.csa:1: too many FU pieces in hand at '00FU'");
	expect_error("P+55OU\nP-55OU\n", "already occupied");
	expect_error("P-00AL\nP+59OU\n", "after 00AL");
	expect_error("P+00OU\n", "cannot be in hand");
	expect_error("PI\n+\n+7776FU\nP+00FU\n", "position line");
	expect_error("PI\n+\n+7776FU\n%TORYO\n-3334FU\n", "after the end of the game");
	expect_error("PI82KI\n", "names no piece");
	expect_error("PI\nP1 *\n", "board line after PI");
	expect_error("PI\n+\n-\n", "second side-to-move");
	expect_error("PI\n+\n%TO RYO\n", "malformed special move");
	expect_error("PI\n+\n+7776FU\nV2.2\n", "missing '/'");
}

/* A move line that cannot be read after moves (a record damaged, or a
 * download broken off in a line): the moves before it are the game, without
 * a result, as a KIF's before an illegal move; the rest of the record is
 * not read, the next record is. Before any move, the record is skipped. */
static void test_csa__a_record_cut_in_a_move_keeps_the_moves_before(void **state)
{
	(void)state;
	KifuRecord *recs[4];
	int nerr;
	char err[KIFU_ERRLEN] = "";
	int n = read_all_text("PI\n+\n+7776FU\n-3334FU\n+77x6FU\n-8384FU\n%TORYO\n/\n"
	                      "PI\n+\n+2726FU\n%TORYO\n",
	                      recs, 4, &nerr, err);
	assert_int_equal(n, 2);
	assert_int_equal(nerr, 0);
	assert_int_equal(recs[0]->nmoves, 2);
	assert_true(recs[0]->cut);
	assert_int_equal(recs[0]->illegal_line, 5);
	assert_non_null(strstr(recs[0]->illegal, "malformed move '+77x6FU'"));
	assert_int_equal(recs[0]->end, GAME_CLAIM_NONE); /* its %TORYO not read */
	static Position pos;
	ReplayResult res;
	assert_int_equal(replay_kifu(&res, &pos, recs[0], NULL, NULL), 0);
	assert_int_equal(res.plies, 2);
	assert_int_equal(res.end, GAME_END_NONE);
	assert_int_equal(res.winner, GAME_WINNER_NONE);
	assert_int_equal(res.error_line, 5);
	assert_int_equal(recs[1]->nmoves, 1);
	assert_false(recs[1]->cut);
	for (int i = 0; i < n; i++) kifu_record_free(recs[i]);
	/* Cut in the file's last line: the same. */
	KifuRecord *rec = read_one_text("PI\n+\n+7776FU\n-3334FU\n+77");
	assert_int_equal(rec->nmoves, 2);
	assert_true(rec->cut);
	kifu_record_free(rec);
}

static void test_csa__a_bad_record_is_skipped_and_the_next_read(void **state)
{
	(void)state;
	KifuRecord *recs[4];
	int nerr;
	char err[KIFU_ERRLEN] = "";
	int n = read_all_text("PI\n+\n+7776FU\n/\nPI\n+\n+77!!FU\n+2726FU\n/\nPI\n-\n-3334FU\n",
	                      recs, 4, &nerr, err);
	assert_int_equal(n, 2);
	assert_int_equal(nerr, 1);
	assert_non_null(strstr(err, "mem.csa:7:"));
	assert_string_equal(recs[0]->moves[0].token, "+7776FU");
	assert_string_equal(recs[1]->moves[0].token, "-3334FU");
	assert_int_equal(recs[1]->moves[0].line, 12);
	kifu_record_free(recs[0]);
	kifu_record_free(recs[1]);

	/* Only comments and separators: no record at all. */
	n = read_all_text("'just a comment\n/\n\n/\n", recs, 4, &nerr, err);
	assert_int_equal(n, 0);
	assert_int_equal(nerr, 0);
	n = read_all_text("", recs, 4, &nerr, err);
	assert_int_equal(n, 0);
}

static void test_csa__impossible_start_position_is_refused_by_position(void **state)
{
	(void)state;
	static Position pos;
	char err[SHOGI_ERRLEN];
	/* two unpromoted black pawns on file 5 */
	KifuRecord *rec = read_one_text("P+59OU55FU56FU\nP-51OU\n+\n");
	assert_int_equal(kifu_record_position(&pos, rec, err), KIFU_EILLEGAL);
	kifu_record_free(rec);
}

/* Every prefix of a real record, and random bytes: errors or records, never a crash. */
static void test_csa__truncations_and_random_bytes_never_crash(void **state)
{
	(void)state;
	static Position pos;
	size_t len;
	char *data = ts_read_file("tests/data/csa-dialects/v2.csa", &len);
	assert_non_null(data);
	int ok = 0;
	for (size_t cut = 0; cut <= len; cut += 7) {
		KifuReader *r;
		assert_int_equal(kifu_reader_open_mem_as(&r, data, cut, "cut.csa", KIFU_CSA), 0);
		KifuRecord *rec;
		int rc;
		while ((rc = kifu_reader_next(r, &rec)) != 0) {
			if (rc == KIFU_EPARSE) {
				assert_true(!strncmp(kifu_reader_error(r), "cut.csa:", 8));
				continue;
			}
			assert_int_equal(rc, 1);
			ReplayResult res;
			if (replay_kifu(&res, &pos, rec, NULL, NULL) == 0) ok++;
			assert_true(res.plies <= (int)rec->nmoves);
			kifu_record_free(rec);
		}
		kifu_reader_free(r);
	}
	assert_true(ok > 0);
	free(data);

	unsigned long long seed = ts_seed("test_csa__truncations_and_random_bytes_never_crash");
	static const char ALPHABET[] =
	    "PI+-0123456789FUKYKEGIKIKAHIOUTONYNKNGUMRY%T,'/\n\r $N:AL*V\x82\xff";
	char buf[256];
	for (int iter = 0; iter < 3000; iter++) {
		size_t n = (size_t)(seed >> 33) % sizeof buf;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[i] = ALPHABET[(seed >> 33) % (sizeof ALPHABET - 1)];
		}
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		KifuReader *r;
		assert_int_equal(kifu_reader_open_mem_as(&r, buf, n, "rnd", KIFU_CSA), 0);
		KifuRecord *rec;
		int rc;
		while ((rc = kifu_reader_next(r, &rec)) != 0) {
			if (rc != 1) {
				assert_int_equal(rc, KIFU_EPARSE);
				continue;
			}
			ReplayResult res; /* any outcome: reading and replaying must not crash */
			(void)replay_kifu(&res, &pos, rec, NULL, NULL);
			kifu_record_free(rec);
		}
		kifu_reader_free(r);
	}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csa__every_fixture_reads_with_its_move_count),
	    cmocka_unit_test(test_csa__floodgate_header_comments_and_evals),
	    cmocka_unit_test(test_csa__wcsc_dialect_names_and_comma_joined_times),
	    cmocka_unit_test(test_csa__shift_jis_crlf_and_several_records),
	    cmocka_unit_test(test_csa__handicap_pieces_and_all_remaining),
	    cmocka_unit_test(test_csa__special_endings),
	    cmocka_unit_test(test_csa__eval_comments_attach_to_the_move_they_follow),
	    cmocka_unit_test(test_csa__malformed_records_name_input_and_line),
	    cmocka_unit_test(test_csa__a_record_cut_in_a_move_keeps_the_moves_before),
	    cmocka_unit_test(test_csa__a_bad_record_is_skipped_and_the_next_read),
	    cmocka_unit_test(test_csa__impossible_start_position_is_refused_by_position),
	    cmocka_unit_test(test_csa__truncations_and_random_bytes_never_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
