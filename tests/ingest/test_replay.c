/*
 * tests/ingest/test_replay.c — replaying games under the rules: the rows of
 * tests/data/rules.tsv about game endings (perpetual_check, sennichite,
 * uchifuzume, kachi, repetition, realgame), the fixture games (repetition at
 * ply 106, the 256-ply limit, declaration wins, results agreeing with
 * floodgate's summary), illegal moves with their line, and the real
 * `joseki replay` command (JSON and human output, bad input, USI game lists).
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

#define RULES_PATH "tests/data/rules.tsv"
#define ALLIHN                                                                                     \
	"tests/data/floodgate/"                                                                    \
	"wdoor+floodgate-300-10F+Allihn_Condenser+62KIN_Suisho11_4c+20260601050005.csa"
#define TITANDA                                                                                    \
	"tests/data/floodgate/"                                                                    \
	"wdoor+floodgate-300-10F+Titanda_L+SILENT_MAJORITY_sf170225_6950XEE+20170302210003.csa"

static Position g_pos;

/* ---- helpers --------------------------------------------------------- */

static KifuRecord *parse_one(const char *text)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_mem_as(&r, text, strlen(text), "t.csa", KIFU_CSA), 0);
	KifuRecord *rec = NULL;
	int rc = kifu_reader_next(r, &rec);
	if (rc != 1) fail_msg("%s", kifu_reader_error(r));
	kifu_reader_free(r);
	return rec;
}

static ReplayResult replay_text(const char *text)
{
	KifuRecord *rec = parse_one(text);
	ReplayResult res;
	assert_int_equal(replay_kifu(&res, &g_pos, rec, NULL, NULL), 0);
	kifu_record_free(rec);
	return res;
}

static ReplayResult replay_file(const char *path, KifuRecord **keep)
{
	KifuReader *r;
	assert_int_equal(kifu_reader_open_file(&r, path), 0);
	KifuRecord *rec;
	if (kifu_reader_next(r, &rec) != 1) fail_msg("%s", kifu_reader_error(r));
	kifu_reader_free(r);
	ReplayResult res;
	assert_int_equal(replay_kifu(&res, &g_pos, rec, NULL, NULL), 0);
	if (keep)
		*keep = rec;
	else
		kifu_record_free(rec);
	return res;
}

/* Number of USI moves after the word "moves" in a position spec. */
static int count_moves(const char *spec)
{
	const char *m = strstr(spec, " moves");
	if (!m) return 0;
	int n = 0;
	for (const char *p = m + 6; *p;) {
		while (*p == ' ') p++;
		if (!*p) break;
		n++;
		while (*p && *p != ' ') p++;
	}
	return n;
}

/* A CSA record (P1..P9 board, P+/P- hands, side) for an SFEN, then `tail`. */
static char *csa_from_sfen(const char *sfen, const char *tail)
{
	static Position pos;
	char err[SHOGI_ERRLEN];
	if (sfen_parse(&pos, sfen, NULL, err) != 0) fail_msg("bad sfen %s: %s", sfen, err);
	size_t cap = 4096, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	n += (size_t)snprintf(out + n, cap - n, "V2.2\n");
	for (int rank = 0; rank < 9; rank++) {
		n += (size_t)snprintf(out + n, cap - n, "P%d", rank + 1);
		for (int file = 8; file >= 0; file--) {
			Piece p = pos_piece(&pos, sq_make(file, rank));
			if (p == PIECE_NONE)
				n += (size_t)snprintf(out + n, cap - n, " * ");
			else
				n += (size_t)snprintf(out + n, cap - n, "%c%s",
				                      piece_color(p) == BLACK ? '+' : '-',
				                      CSA_PIECE_NAMES[piece_type(p)]);
		}
		n += (size_t)snprintf(out + n, cap - n, "\n");
	}
	for (int c = 0; c < 2; c++) {
		n += (size_t)snprintf(out + n, cap - n, "P%c", c == BLACK ? '+' : '-');
		for (int pt = PAWN; pt <= GOLD; pt++)
			for (int k = 0; k < hand_count(pos.hand[c], (PieceType)pt); k++)
				n +=
				    (size_t)snprintf(out + n, cap - n, "00%s", CSA_PIECE_NAMES[pt]);
		n += (size_t)snprintf(out + n, cap - n, "\n");
	}
	n += (size_t)snprintf(out + n, cap - n, "%c\n%s", pos.side == BLACK ? '+' : '-', tail);
	assert_true(n < cap);
	return out;
}

/* ---- rules.tsv ------------------------------------------------------- */

typedef struct {
	char *kind, *id, *spec, *move, *expected;
} Row;

static int load_rows(char **buf, Row *rows, int max)
{
	*buf = ts_read_file(RULES_PATH, NULL);
	assert_non_null(*buf);
	int n = 0;
	for (char *line = strtok(*buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#') continue;
		char *f[6] = {0};
		int k = 0;
		for (char *p = line; k < 6; k++) {
			f[k] = p;
			char *t = strchr(p, '\t');
			if (!t) break;
			*t = 0;
			p = t + 1;
		}
		if (k < 4 || n >= max) continue;
		rows[n++] = (Row){f[0], f[1], f[2], f[3], f[4]};
	}
	return n;
}

static void test_replay__rules_tsv_game_endings(void **state)
{
	(void)state;
	char *buf;
	Row rows[256];
	int n = load_rows(&buf, rows, 256);
	int done[6] = {0};
	for (int i = 0; i < n; i++) {
		Row *r = &rows[i];
		ReplayResult res;
		char spec[4096];
		if (!strcmp(r->kind, "perpetual_check")) {
			assert_int_equal(
			    replay_usi(&res, &g_pos, r->spec, strlen(r->spec), 1, NULL, NULL), 0);
			if (res.end != GAME_END_PERPETUAL_CHECK)
				fail_msg("%s: %s", r->id, game_end_name(res.end));
			/* "black (checker) loses by perpetual check" */
			assert_true(!strncmp(r->expected, "black", 5) &&
			            strstr(r->expected, "loses"));
			assert_int_equal(res.winner, GAME_WINNER_WHITE);
			assert_true(res.plies <= count_moves(r->spec));
			done[0]++;
		} else if (!strcmp(r->kind, "sennichite")) {
			assert_int_equal(
			    replay_usi(&res, &g_pos, r->spec, strlen(r->spec), 1, NULL, NULL), 0);
			if (res.end != GAME_END_REPETITION)
				fail_msg("%s: %s", r->id, game_end_name(res.end));
			assert_int_equal(res.winner, GAME_WINNER_DRAW);
			assert_non_null(strstr(r->expected, "on the last move"));
			assert_int_equal(res.plies, count_moves(r->spec));
			done[1]++;
		} else if (!strcmp(r->kind, "uchifuzume")) {
			snprintf(spec, sizeof spec, "%s %s", r->spec, r->move);
			assert_int_equal(
			    replay_usi(&res, &g_pos, spec, strlen(spec), 7, NULL, NULL), 0);
			int before = count_moves(r->spec);
			if (strstr(r->expected, "NOT mate")) {
				assert_int_equal(res.end, GAME_END_NONE);
				assert_int_equal(res.plies, before + 1);
				assert_string_equal(res.error, "");
			} else {
				if (res.end != GAME_END_ILLEGAL_MOVE)
					fail_msg("%s: %s", r->id, game_end_name(res.end));
				assert_int_equal(res.plies, before);
				assert_int_equal(res.error_line, 7);
				char want[64];
				snprintf(want, sizeof want, "illegal move %s (", r->move);
				assert_non_null(strstr(res.error, want));
			}
			done[2]++;
		} else if (!strcmp(r->kind, "kachi")) {
			char *text = csa_from_sfen(r->spec, "%KACHI\n");
			res = replay_text(text);
			free(text);
			assert_int_equal(res.end, GAME_END_DECLARATION);
			assert_int_equal(res.plies, 0);
			bool valid = !strncmp(r->expected, "valid", 5);
			assert_true(valid || !strncmp(r->expected, "invalid", 7));
			if (res.winner != (valid ? GAME_WINNER_BLACK : GAME_WINNER_WHITE))
				fail_msg("%s: winner %s", r->id, game_winner_name(res.winner));
			done[3]++;
		} else if (!strcmp(r->kind, "repetition") || !strcmp(r->kind, "realgame")) {
			int ply = atoi(r->move + 4); /* "ply 49" */
			assert_true(ply > 0);
			assert_int_equal(
			    replay_usi(&res, &g_pos, r->spec, strlen(r->spec), 1, NULL, NULL), 0);
			assert_int_equal(res.end, GAME_END_REPETITION);
			assert_int_equal(res.winner, GAME_WINNER_DRAW);
			assert_int_equal(res.plies, ply);
			if (!strcmp(r->kind, "realgame")) {
				/* The same game from its CSA record gives the same verdict and
				 * position. */
				char usi_sfen[SFEN_MAX], csa_sfen[SFEN_MAX], path[512];
				sfen_write(&g_pos, usi_sfen, sizeof usi_sfen);
				snprintf(path, sizeof path, "tests/data/%s", r->id);
				ReplayResult res2 = replay_file(path, NULL);
				sfen_write(&g_pos, csa_sfen, sizeof csa_sfen);
				assert_int_equal(res2.end, GAME_END_REPETITION);
				assert_int_equal(res2.plies, ply);
				assert_string_equal(usi_sfen, csa_sfen);
				done[5]++;
			} else {
				done[4]++;
			}
		}
	}
	/* rules.tsv has these rows; none may be skipped silently. */
	assert_int_equal(done[0], 1);
	assert_int_equal(done[1], 2);
	assert_int_equal(done[2], 3);
	assert_int_equal(done[3], 4);
	assert_int_equal(done[4], 1);
	assert_int_equal(done[5], 1);
	free(buf);
}

/* ---- fixture games --------------------------------------------------- */

static void test_replay__fourfold_repetition_at_ply_106(void **state)
{
	(void)state;
	KifuRecord *rec;
	ReplayResult res = replay_file(ALLIHN, &rec);
	assert_int_equal(res.end, GAME_END_REPETITION);
	assert_int_equal(res.winner, GAME_WINNER_DRAW);
	assert_int_equal(res.plies, 106);
	assert_int_equal(rec->end, GAME_CLAIM_SENNICHITE);
	assert_int_equal(pos_repetition_count(&g_pos, NULL), 3);
	kifu_record_free(rec);
}

static void test_replay__move_limit_of_256_plies(void **state)
{
	(void)state;
	KifuRecord *rec;
	ReplayResult res = replay_file(TITANDA, &rec);
	assert_int_equal(res.end, GAME_END_MAX_MOVES);
	assert_int_equal(res.winner, GAME_WINNER_DRAW);
	assert_int_equal(res.plies, 256);
	assert_int_equal(kifu_record_max_moves(rec), 256);
	kifu_record_free(rec);

	/* The limit comes from the record: a 4-ply limit stops a longer game. */
	res = replay_text(
	    "'Max_Moves:4\nPI\n+\n+7776FU\n-3334FU\n+2726FU\n-8384FU\n+2625FU\n%TORYO\n");
	assert_int_equal(res.end, GAME_END_MAX_MOVES);
	assert_int_equal(res.plies, 4);
	/* Without a limit (not floodgate, no comment) the same game is a resignation. */
	res = replay_text("PI\n+\n+7776FU\n-3334FU\n+2726FU\n-8384FU\n+2625FU\n%TORYO\n");
	assert_int_equal(res.end, GAME_END_RESIGN);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	assert_int_equal(res.plies, 5);
}

/* Every floodgate fixture: all moves legal, and the winner agrees with the summary. */
static void test_replay__floodgate_results_agree_with_summaries(void **state)
{
	(void)state;
	static const char *const FILES[] = {
	    "wdoor+floodgate-300-10F+10b_n003_1060+40b_n007_1050Ti+20210405160009.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Allihn_Condenser+20260601130001.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Allihn_Condenser+20260602050002.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+Pyfamate_v2_peta1115+20260601133002.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+YukiSHogiEngineV7.7+20260601090001.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+ZARD+20260602160006.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+clomeprop+20260601143005.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+jhbr2+20260601113000.csa",
	    "wdoor+floodgate-300-10F+62KIN_Suisho11_4c+kahm768+20260601080001.csa",
	    "wdoor+floodgate-300-10F+910+Gokaku-v2.3-b12c512-v500+20260601070006.csa",
	    "wdoor+floodgate-300-10F+Allihn_Condenser+62KIN_Suisho11_4c+20260601050005.csa",
	    "wdoor+floodgate-300-10F+C2AC562E-YO-NNUE-NOBOOK-20260510+jhbr2+20260601023003.csa",
	    "wdoor+floodgate-300-10F+Titanda_L+SILENT_MAJORITY_sf170225_6950XEE+20170302210003.csa",
	    "wdoor+floodgate-300-10F+test768_16_64_N150+clomeprop+20260605230006.csa",
	    "wdoor+floodgate-600-10+01WishBlue_07+Apery_i5-4670+20150415003002.csa",
	};
	for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
		char path[512];
		snprintf(path, sizeof path, "tests/data/floodgate/%s", FILES[i]);
		KifuRecord *rec;
		ReplayResult res = replay_file(path, &rec);
		assert_string_equal(res.error, "");
		assert_int_equal(res.plies, (int)rec->nmoves);
		assert_non_null(rec->summary);
		/* "<type>:<black> win|lose|draw:<white> ..." */
		const char *c = strchr(rec->summary, ':');
		assert_non_null(c);
		const char *sp = strchr(c + 1 + strlen(rec->name[BLACK]), ' ');
		GameWinner want = GAME_WINNER_DRAW;
		if (!strncmp(c + 1 + strlen(rec->name[BLACK]), " win", 4)) want = GAME_WINNER_BLACK;
		if (!strncmp(c + 1 + strlen(rec->name[BLACK]), " lose", 5))
			want = GAME_WINNER_WHITE;
		(void)sp;
		if (res.winner != want)
			fail_msg("%s: winner %s, summary %s", FILES[i],
			         game_winner_name(res.winner), rec->summary);
		kifu_record_free(rec);
	}
}

static void test_replay__declarations_in_dialect_files(void **state)
{
	(void)state;
	/* aobazero declares with %KACHI (summary "kachi:aobazero win"). */
	KifuRecord *rec;
	ReplayResult res = replay_file(
	    "tests/data/csa-dialects/"
	    "dr1test1test0+tu-1_aobazero_viper-300-5F+aobazero+viper+20200719201040.csa",
	    &rec);
	assert_int_equal(res.end, GAME_END_DECLARATION);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	assert_int_equal(res.plies, 400);
	assert_int_equal(kifu_record_max_moves(rec), 512);
	kifu_record_free(rec);
	/* YaneuraOu self-play ends "%JISHOGI" + "'Win by entering king declaration." */
	res = replay_file("tests/data/csa-dialects/yaneuraou_selfplay_jishogi.csa", NULL);
	assert_int_equal(res.end, GAME_END_DECLARATION);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	assert_int_equal(res.plies, 258);
	/* An invalid declaration at the start position loses. */
	res = replay_text("PI\n+\n%KACHI\n");
	assert_int_equal(res.end, GAME_END_DECLARATION);
	assert_int_equal(res.winner, GAME_WINNER_WHITE);
}

static void test_replay__other_endings(void **state)
{
	(void)state;
	ReplayResult res = replay_text("PI\n+\n+7776FU\n%TIME_UP\n");
	assert_int_equal(res.end, GAME_END_TIME_UP);
	assert_int_equal(res.winner, GAME_WINNER_BLACK); /* White to move ran out of time */
	res = replay_text("PI\n+\n+7776FU\n%CHUDAN\n");
	assert_int_equal(res.end, GAME_END_INTERRUPTED);
	assert_int_equal(res.winner, GAME_WINNER_NONE);
	res = replay_text("PI\n+\n+7776FU\n");
	assert_int_equal(res.end, GAME_END_NONE);
	assert_int_equal(res.plies, 1);
	/* A sennichite claim the moves do not support is no repetition. */
	res = replay_text("PI\n+\n+7776FU\n-3334FU\n%SENNICHITE\n");
	assert_int_equal(res.end, GAME_END_NONE);
	/* floodgate writes no % line for some results: the summary is the hint. */
	res = replay_text("PI\n+\n+7776FU\n'summary:time up:a win:b lose\n");
	assert_int_equal(res.end, GAME_END_TIME_UP);
	res = replay_text("PI\n+\n+7776FU\n'summary:uchifuzume:a win:b lose\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	res = replay_text("PI\n+\n+7776FU\n%-ILLEGAL_ACTION\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	/* Mate is decided by the rules, whatever the record says next. */
	res = replay_text("P-11OU\nP+13KI00KI\n+\n+0012KI\n%TORYO\n");
	assert_int_equal(res.end, GAME_END_MATE);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	assert_int_equal(res.plies, 1);
	/* a move recorded after the mate is not played: the game was over */
	res = replay_text("P-11OU\nP+13KI00KI\n+\n+0012KI\n-1121OU\n");
	assert_int_equal(res.end, GAME_END_MATE);
	assert_int_equal(res.plies, 1);
	assert_string_equal(res.error, "");
	/* the same with USI moves; and mate at the move limit is still mate */
	const char *usi = "sfen 8k/9/8G/9/9/9/9/9/9 b G 1 moves G*1b";
	assert_int_equal(replay_usi(&res, &g_pos, usi, strlen(usi), 1, NULL, NULL), 0);
	assert_int_equal(res.end, GAME_END_MATE);
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	res = replay_text("'Max_Moves:1\nP-11OU\nP+13KI00KI\n+\n+0012KI\n");
	assert_int_equal(res.end, GAME_END_MATE);
}

static void test_replay__illegal_moves_stop_with_line_and_reason(void **state)
{
	(void)state;
	ReplayResult res = replay_text("V2\nPI\n+\n+7776FU\nT1\n-3335FU\nT2\n+2726FU\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.plies, 1);
	assert_int_equal(res.error_line, 6);
	assert_non_null(strstr(res.error, "illegal move -3335FU ("));
	assert_int_equal(res.winner, GAME_WINNER_BLACK);
	/* a move by the wrong side */
	res = replay_text("PI\n+\n+7776FU\n+2726FU\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.plies, 1);
	assert_int_equal(res.error_line, 4);
	assert_non_null(strstr(res.error, "illegal move +2726FU (it is White's turn)"));
	/* a promotion outside the zone, a drop of a piece not in hand */
	res = replay_text("PI\n+\n+7776TO\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.plies, 0);
	res = replay_text("PI\n+\n+0055KA\n");
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	/* USI lines: a bad token, a bad position */
	const char *line = "startpos moves 7g7f 3c3d 8h2c 2b3c";
	assert_int_equal(replay_usi(&res, &g_pos, line, strlen(line), 3, NULL, NULL), 0);
	assert_int_equal(res.end, GAME_END_ILLEGAL_MOVE);
	assert_int_equal(res.plies, 2);
	assert_non_null(strstr(res.error, "illegal move 8h2c ("));
	line = "sfen garbage b - 1 moves 7g7f";
	assert_int_equal(replay_usi(&res, &g_pos, line, strlen(line), 9, NULL, NULL), SHOGI_EPARSE);
	assert_int_equal(res.error_line, 9);
	/* an impossible start position */
	KifuRecord *rec = parse_one("P+59OU55FU56FU\nP-51OU\n+\n");
	assert_int_equal(replay_kifu(&res, &g_pos, rec, NULL, NULL), KIFU_EILLEGAL);
	assert_non_null(strstr(res.error, "impossible start position"));
	kifu_record_free(rec);
}

static int count_cb(void *ctx, const Position *before, Move m, size_t index)
{
	int *n = ctx;
	assert_true(pos_is_legal(before, m));
	assert_int_equal(index, (size_t)*n);
	(*n)++;
	return 0;
}

static int stop_cb(void *ctx, const Position *before, Move m, size_t index)
{
	(void)ctx, (void)before, (void)m;
	return index == 10 ? 42 : 0;
}

static void test_replay__callback_sees_each_legal_move(void **state)
{
	(void)state;
	KifuRecord *rec;
	replay_file(ALLIHN, &rec);
	int n = 0;
	ReplayResult res;
	assert_int_equal(replay_kifu(&res, &g_pos, rec, count_cb, &n), 0);
	assert_int_equal(n, 106);
	assert_int_equal(replay_kifu(&res, &g_pos, rec, stop_cb, NULL), 42);
	assert_int_equal(res.plies, 10);
	kifu_record_free(rec);
}

/* ---- the command ----------------------------------------------------- */

static json_t *run_json(const char *args, int want_status)
{
	char *out = NULL, *err = NULL;
	int st = ts_runf(&out, &err, "%s replay --json %s", ts_joseki(), args);
	if (st != want_status) fail_msg("exit %d (want %d): %s", st, want_status, err ? err : "");
	json_error_t jerr;
	json_t *root = json_loads(out, 0, &jerr);
	if (!root) fail_msg("bad JSON (%s): %s", jerr.text, out);
	free(out);
	free(err);
	return root;
}

static void test_replay__command_json_for_fixture_games(void **state)
{
	(void)state;
	json_t *root = run_json("'" ALLIHN "' '" TITANDA "'", 0);
	json_t *games = json_object_get(root, "games");
	assert_int_equal(json_array_size(games), 2);
	json_t *g = json_array_get(games, 0);
	assert_string_equal(json_string_value(json_object_get(g, "input")), ALLIHN);
	assert_string_equal(
	    json_string_value(json_object_get(g, "id")),
	    "wdoor+floodgate-300-10F+Allihn_Condenser+62KIN_Suisho11_4c+20260601050005");
	assert_int_equal(json_integer_value(json_object_get(g, "plies")), 106);
	assert_string_equal(json_string_value(json_object_get(g, "end")), "repetition");
	assert_string_equal(json_string_value(json_object_get(g, "winner")), "draw");
	assert_string_equal(json_string_value(json_object_get(g, "recorded")), "sennichite");
	assert_true(json_is_null(json_object_get(g, "error")));
	/* the final SFEN is a position that parses back */
	static Position pos;
	assert_int_equal(
	    sfen_parse(&pos, json_string_value(json_object_get(g, "final_sfen")), NULL, NULL), 0);
	g = json_array_get(games, 1);
	assert_int_equal(json_integer_value(json_object_get(g, "plies")), 256);
	assert_string_equal(json_string_value(json_object_get(g, "end")), "max_moves");
	assert_string_equal(json_string_value(json_object_get(g, "winner")), "draw");
	assert_string_equal(json_string_value(json_object_get(g, "recorded")), "max_moves");
	json_decref(root);
}

static void test_replay__command_usi_game_list(void **state)
{
	(void)state;
	json_t *root = run_json("tests/data/positions/games-v1.usi", 0);
	json_t *games = json_object_get(root, "games");
	assert_int_equal(json_array_size(games), 4);
	/* plies must equal the number of moves on each line (counted here) */
	char *text = ts_read_file("tests/data/positions/games-v1.usi", NULL);
	assert_non_null(text);
	size_t gi = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#') continue;
		char *tab = strchr(line, '\t');
		assert_non_null(tab);
		*tab = 0;
		int moves = 0;
		for (char *p = tab + 1; *p;) {
			while (*p == ' ') p++;
			if (!*p) break;
			moves++;
			while (*p && *p != ' ') p++;
		}
		json_t *g = json_array_get(games, gi++);
		assert_string_equal(json_string_value(json_object_get(g, "id")), line);
		assert_int_equal(json_integer_value(json_object_get(g, "plies")), moves);
		assert_true(json_is_null(json_object_get(g, "error")));
	}
	assert_int_equal(gi, 4);
	free(text);
	json_decref(root);
}

static void test_replay__command_reads_directories_recursively(void **state)
{
	(void)state;
	json_t *root = run_json("tests/data/csa-dialects tests/data/floodgate", 0);
	json_t *games = json_object_get(root, "games");
	assert_int_equal(json_array_size(games), 7 + 15);
	/* in name order, each game replayed without error */
	const char *prev = "";
	for (size_t i = 0; i < json_array_size(games); i++) {
		json_t *g = json_array_get(games, i);
		const char *in = json_string_value(json_object_get(g, "input"));
		if (i != 7) assert_true(strcmp(prev, in) < 0);
		prev = in;
		assert_true(json_is_null(json_object_get(g, "error")));
	}
	json_decref(root);
}

static void test_replay__command_bad_input(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[512], out_path[600];
	char *out = NULL, *err = NULL;

	/* no INPUT, unknown option: usage errors */
	assert_int_equal(ts_runf(NULL, NULL, "%s replay", ts_joseki()), 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s replay --bogus x.csa", ts_joseki()), 2);
	/* a missing file */
	assert_int_equal(ts_runf(NULL, &err, "%s replay %s/missing.csa", ts_joseki(), dir), 1);
	assert_non_null(strstr(err, "joseki: "));
	assert_non_null(strstr(err, "missing.csa"));
	free(err);

	/* an illegal move: a result with its line, not a failure */
	snprintf(path, sizeof path, "%s/illegal.csa", dir);
	const char *illegal = "V2\nPI\n+\n+7776FU\nT1\n-3335FU\n%TORYO\n";
	assert_int_equal(ts_write_file(path, illegal, strlen(illegal)), 0);
	assert_int_equal(ts_runf(&out, &err, "%s replay %s", ts_joseki(), path), 0);
	snprintf(out_path, sizeof out_path, "%s:6: illegal move -3335FU (", path);
	assert_non_null(strstr(err, out_path));
	assert_non_null(strstr(out, "1 plies, illegal_move, winner black"));
	free(out);
	free(err);
	json_t *root = run_json(path, 0);
	json_t *g = json_array_get(json_object_get(root, "games"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "end")), "illegal_move");
	assert_int_equal(json_integer_value(json_object_get(g, "plies")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(g, "error"), "line")),
	                 6);
	assert_non_null(
	    strstr(json_string_value(json_object_get(json_object_get(g, "error"), "message")),
	           "illegal move -3335FU"));
	json_decref(root);

	/* truncated and garbage records: reported with input:line, the good one still replayed */
	snprintf(path, sizeof path, "%s/bad.csa", dir);
	const char *bad = "PI\n+\n+7776FU\n-33\n/\n\x01\xfe\xff garbage\n/\nPI\n+\n+2726FU\n";
	assert_int_equal(ts_write_file(path, bad, strlen(bad)), 0);
	assert_int_equal(ts_runf(&out, &err, "%s replay --json %s", ts_joseki(), path), 1);
	snprintf(out_path, sizeof out_path, "%s:4: malformed move '-33'", path);
	assert_non_null(strstr(err, out_path));
	snprintf(out_path, sizeof out_path, "%s:6: unknown statement", path);
	assert_non_null(strstr(err, out_path));
	json_error_t jerr;
	root = json_loads(out, 0, &jerr);
	assert_non_null(root);
	json_t *games = json_object_get(root, "games");
	assert_int_equal(json_array_size(games), 3);
	assert_int_equal(json_integer_value(json_object_get(
	                     json_object_get(json_array_get(games, 0), "error"), "line")),
	                 4);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(games, 2), "plies")), 1);
	assert_true(json_is_null(json_object_get(json_array_get(games, 2), "error")));
	json_decref(root);
	free(out);
	free(err);

	/* a record cut short in a move line after moves (a download broken
	 * off): its moves replayed and shown, and the run fails as for a record
	 * the reader rejected (it exited 0) */
	snprintf(path, sizeof path, "%s/cut.csa", dir);
	const char *cut = "V2\nPI\n+\n+7776FU\nT1\n-3334FU\nT1\n+26";
	assert_int_equal(ts_write_file(path, cut, strlen(cut)), 0);
	assert_int_equal(ts_runf(&out, &err, "%s replay %s", ts_joseki(), path), 1);
	snprintf(out_path, sizeof out_path,
	         "%s:8: malformed move '+26': a record damaged or cut short", path);
	if (!strstr(err, out_path) || !strstr(out, "2 plies, none, winner none") ||
	    !strstr(out, "replayed 1 games, 0 unreadable records, 1 cut short"))
		fail_msg("%s%s", out, err);
	free(out);
	free(err);

	/* pure binary noise */
	snprintf(path, sizeof path, "%s/noise.bin", dir);
	unsigned char noise[512];
	unsigned long long seed = ts_seed("test_replay__command_bad_input");
	for (size_t i = 0; i < sizeof noise; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		noise[i] = (unsigned char)(seed >> 56);
	}
	assert_int_equal(ts_write_file(path, (const char *)noise, sizeof noise), 0);
	int st = ts_runf(&out, &err, "%s replay --json %s", ts_joseki(), path);
	assert_true(st == 0 || st == 1);
	root = json_loads(out, 0, &jerr);
	assert_non_null(root);
	json_decref(root);
	free(out);
	free(err);

	ts_rmtree(dir);
	free(dir);
}

static void test_replay__command_reads_kif_ki2_and_jkf(void **state)
{
	(void)state;
	json_t *root = run_json("tests/data/kifu-formats/kif/fork.kif "
	                        "tests/data/kifu-formats/jkf/ryuou201409020101.jkf",
	                        0);
	json_t *games = json_object_get(root, "games");
	assert_int_equal(json_array_size(games), 2);
	json_t *g = json_array_get(games, 0);
	assert_int_equal(json_integer_value(json_object_get(g, "plies")), 3);
	assert_string_equal(json_string_value(json_object_get(g, "end")), "resign");
	assert_string_equal(json_string_value(json_object_get(g, "winner")), "black");
	assert_string_equal(json_string_value(json_object_get(g, "recorded")), "toryo");
	assert_int_equal(json_integer_value(json_object_get(g, "variations_skipped")), 7);
	g = json_array_get(games, 1);
	assert_int_equal(json_integer_value(json_object_get(g, "plies")), 117);
	assert_null(json_object_get(g, "variations_skipped"));
	json_decref(root);
	/* An illegal KI2 move: a result with its line; the message names the move. */
	char *dir = ts_mkdtemp(), path[512], *out = NULL, *err = NULL;
	snprintf(path, sizeof path, "%s/bad.ki2", dir);
	const char *text = "先手：a\n後手：b\n\n▲７六歩 △３四歩\n▲５五金\n";
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	assert_int_equal(ts_runf(&out, &err, "%s replay %s", ts_joseki(), path), 0);
	assert_non_null(strstr(out, "2 plies, illegal_move, winner white"));
	char want[600];
	snprintf(want, sizeof want, "%s:5: illegal move ▲５五金 (Black has no gold", path);
	assert_non_null(strstr(err, want));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* ---- positions along game files (think --from-kifu) ------------------- */

typedef struct {
	char sfen[64][SFEN_MAX];
	int n;
	int stop_at; /* return -7 at this count (0: never) */
} Walk;

static int walk_pos(void *ctx, const Position *pos)
{
	Walk *w = ctx;
	if (w->stop_at && w->n == w->stop_at) return -7;
	if (w->n < 64) sfen_write(pos, w->sfen[w->n], SFEN_MAX);
	w->n++;
	return 0;
}

static void test_replay__positions_along_game_files(void **state)
{
	(void)state;
	char err[REPLAY_ERRLEN];
	Walk *w = calloc(1, sizeof *w);
	/* A CSA game: the first 10 positions, the start position first. */
	assert_int_equal(replay_file_positions(ALLIHN, 10, walk_pos, w, err), 0);
	assert_int_equal(w->n, 10);
	Position start;
	pos_set_startpos(&start);
	char sfen[SFEN_MAX];
	sfen_write(&start, sfen, sizeof sfen);
	assert_string_equal(w->sfen[0], sfen);

	/* USI lines: a short game gives each position and the one after its last
	 * move; comments and blank lines are skipped; a bad line is named. */
	char *dir = ts_mkdtemp(), path[512];
	snprintf(path, sizeof path, "%s/games.txt", dir);
	static const char TEXT[] = "# two games\n\nstartpos moves 7g7f 3c3d\n"
	                           "position startpos moves 2g2f 8c8d 2f2e 8d8e\n"
	                           "startpos moves 7g7f 7g7f\n";
	assert_int_equal(ts_write_file(path, TEXT, sizeof TEXT - 1), 0);
	memset(w, 0, sizeof *w);
	assert_int_equal(replay_file_positions(path, 3, walk_pos, w, err), KIFU_EPARSE);
	/* 3 of the first game (after 0, 1, 2 plies), 3 of the second (max_ply),
	 * and the start of the third, given before its illegal second move. */
	assert_int_equal(w->n, 3 + 3 + 1);
	assert_string_equal(w->sfen[0], sfen);
	Position p;
	assert_int_equal(position_parse(&p, "startpos moves 7g7f 3c3d", NULL), 0);
	sfen_write(&p, sfen, sizeof sfen);
	assert_string_equal(w->sfen[2], sfen);
	assert_non_null(strstr(err, ":5: illegal move"));
	assert_non_null(strstr(err, path));

	/* The callback's failure stops the walk and is returned. */
	memset(w, 0, sizeof *w);
	w->stop_at = 4;
	assert_int_equal(replay_file_positions(ALLIHN, 100, walk_pos, w, err), -7);
	assert_int_equal(w->n, 4);
	assert_int_equal(replay_file_positions("/no/such/kifu.csa", 10, walk_pos, w, err),
	                 KIFU_EIO);
	assert_non_null(strstr(err, "/no/such/kifu.csa"));
	ts_rmtree(dir);
	free(dir);
	free(w);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay__rules_tsv_game_endings),
	    cmocka_unit_test(test_replay__fourfold_repetition_at_ply_106),
	    cmocka_unit_test(test_replay__move_limit_of_256_plies),
	    cmocka_unit_test(test_replay__floodgate_results_agree_with_summaries),
	    cmocka_unit_test(test_replay__declarations_in_dialect_files),
	    cmocka_unit_test(test_replay__other_endings),
	    cmocka_unit_test(test_replay__illegal_moves_stop_with_line_and_reason),
	    cmocka_unit_test(test_replay__callback_sees_each_legal_move),
	    cmocka_unit_test(test_replay__positions_along_game_files),
	    cmocka_unit_test(test_replay__command_json_for_fixture_games),
	    cmocka_unit_test(test_replay__command_usi_game_list),
	    cmocka_unit_test(test_replay__command_reads_directories_recursively),
	    cmocka_unit_test(test_replay__command_bad_input),
	    cmocka_unit_test(test_replay__command_reads_kif_ki2_and_jkf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
