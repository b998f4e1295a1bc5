/*
 * tests/shogi/test_zobrist.c — the 128-bit position key: incremental keys
 * equal keys computed from scratch along real games, pos_key_after agrees
 * with pos_do_move over whole perft trees, undo restores everything, hex and
 * byte forms round-trip, and hands and side to move are part of the key.
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
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "shogi/rng.h"
#include "shogi/zobrist.h"
#include "tests/support/support.h"

#define MATSURI_SFEN "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"

/* The key by its definition (zobrist.h), from the board, hands and side alone. */
static Key key_by_definition(const Position *pos)
{
	Key board = {0, 0}, hand = {0, 0};
	for (Square sq = 0; sq < SQ_NB; sq++)
		if (pos->board[sq] != PIECE_NONE)
			board = key_xor(board, ZOB_PSQ[pos->board[sq]][sq]);
	if (pos->side == WHITE) board = key_xor(board, ZOB_SIDE);
	for (int c = 0; c < COLOR_NB; c++)
		for (int pt = PAWN; pt <= GOLD; pt++)
			for (int k = 0; k < hand_count(pos->hand[c], (PieceType)pt); k++)
				hand = key_add(hand, ZOB_HAND[c][pt]);
	return key_combine(board, hand);
}

static void hex_of(const Position *pos, char out[KEY_HEX_LEN])
{
	key_to_hex(pos_key(pos), out);
}

/*
 * Checks the current key three ways: the definition, a fresh sfen_parse of
 * the written SFEN, and the per-state board/hand split.
 */
static void check_key_from_scratch(const Position *pos, const char *where, int ply)
{
	static Position fresh;
	char sfen[SFEN_MAX], err[SHOGI_ERRLEN] = "";
	sfen_write(pos, sfen, sizeof sfen);
	Key k = pos_key(pos);
	if (!key_equal(k, key_by_definition(pos))) {
		char a[KEY_HEX_LEN], b[KEY_HEX_LEN];
		key_to_hex(k, a);
		key_to_hex(key_by_definition(pos), b);
		fail_msg("%s ply %d (%s): incremental key %s, by definition %s", where, ply, sfen,
		         a, b);
	}
	int rc = sfen_parse(&fresh, sfen, NULL, err);
	if (rc != 0) fail_msg("%s ply %d: sfen_parse(%s): %s", where, ply, sfen, err);
	if (!key_equal(k, pos_key(&fresh))) {
		char a[KEY_HEX_LEN], b[KEY_HEX_LEN];
		hex_of(pos, a);
		hex_of(&fresh, b);
		fail_msg("%s ply %d (%s): incremental key %s, from scratch %s", where, ply, sfen, a,
		         b);
	}
	assert_true(pos_is_ok(pos));
}

/*
 * Plays the move (already legal), checking key_after beforehand, the key
 * from scratch afterwards, and that undo restores key and SFEN exactly.
 */
static void play_checked(Position *pos, Move m, const char *where, int ply)
{
	char before[SFEN_MAX], after_undo[SFEN_MAX], after[SFEN_MAX], again[SFEN_MAX];
	sfen_write(pos, before, sizeof before);
	Key k0 = pos_key(pos);
	Key predicted = pos_key_after(pos, m);
	pos_do_move(pos, m);
	sfen_write(pos, after, sizeof after);
	if (!key_equal(predicted, pos_key(pos)))
		fail_msg("%s ply %d: key_after(%04x) differs from the key after do_move", where,
		         ply, m);
	pos_undo_move(pos);
	sfen_write(pos, after_undo, sizeof after_undo);
	if (strcmp(before, after_undo) != 0)
		fail_msg("%s ply %d: undo gives %s, expected %s", where, ply, after_undo, before);
	assert_true(key_equal(k0, pos_key(pos)));
	pos_do_move(pos, m);
	sfen_write(pos, again, sizeof again);
	assert_string_equal(after, again);
	check_key_from_scratch(pos, where, ply);
}

/* Replays "m1 m2 ..." (USI) from the start position with every check. */
static int replay_usi_line(const char *where, const char *moves_text)
{
	static Position pos;
	pos_set_startpos(&pos);
	check_key_from_scratch(&pos, where, 0);
	int ply = 0;
	const char *p = moves_text;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r') p++;
		if (!*p) break;
		size_t len = strcspn(p, " \t\r");
		Move m = MOVE_NONE;
		char err[SHOGI_ERRLEN] = "";
		int rc = usi_move_parse_legal(&m, &pos, p, len, err);
		if (rc != 0) fail_msg("%s ply %d: %.*s: %s", where, ply + 1, (int)len, p, err);
		ply++;
		play_checked(&pos, m, where, ply);
		p += len;
	}
	return ply;
}

static void test_zobrist__incremental_key_equals_scratch_along_games(void **state)
{
	(void)state;
	char *buf = ts_read_file("tests/data/positions/games-v1.usi", NULL);
	assert_non_null(buf);
	int games = 0, plies = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *tab = strchr(line, '\t');
		assert_non_null(tab);
		*tab = '\0';
		int n = replay_usi_line(line, tab + 1);
		assert_true(n >= 120); /* the fixture holds games of 120 plies or more */
		plies += n;
		games++;
	}
	free(buf);
	printf("games-v1: %d games, %d plies\n", games, plies);
	assert_int_equal(games, 4);
}

static void test_zobrist__incremental_key_equals_scratch_along_openings(void **state)
{
	(void)state;
	char *buf = ts_read_file("tests/data/positions/openings-v1.sfen", NULL);
	assert_non_null(buf);
	int lines = 0, plies = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		const char *prefix = "startpos moves ";
		if (strncmp(line, prefix, strlen(prefix)) != 0)
			fail_msg("unexpected opening line: %s", line);
		char where[32];
		snprintf(where, sizeof where, "opening %d", lines + 1);
		plies += replay_usi_line(where, line + strlen(prefix));
		lines++;
	}
	free(buf);
	printf("openings-v1: %d lines, %d plies\n", lines, plies);
	assert_int_equal(lines, 256);
}

/* Moves of a CSA record: lines "+7776FU" / "-3334FU" (",T..." suffix allowed). */
static int replay_csa_file(const char *path)
{
	char *buf = ts_read_file(path, NULL);
	if (!buf) fail_msg("cannot read %s", path);
	static Position pos;
	pos_set_startpos(&pos);
	int ply = 0, lineno = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if ((line[0] != '+' && line[0] != '-') || strlen(line) < 7 || line[1] < '0' ||
		    line[1] > '9')
			continue;
		Move m = MOVE_NONE;
		char err[SHOGI_ERRLEN] = "";
		int rc = csa_move_parse(&m, &pos, line, 7, err);
		if (rc != 0) fail_msg("%s:%d: %.7s: %s", path, lineno, line, err);
		char back[CSA_MOVE_MAX];
		size_t len = csa_move_write(&pos, m, back);
		assert_int_equal(len, 7);
		if (strncmp(back, line, 7) != 0)
			fail_msg("%s:%d: %.7s written back as %s", path, lineno, line, back);
		ply++;
		play_checked(&pos, m, path, ply);
	}
	free(buf);
	return ply;
}

static void test_zobrist__incremental_key_equals_scratch_along_floodgate_games(void **state)
{
	(void)state;
	char *out = NULL;
	int rc = ts_run("ls tests/data/floodgate/*.csa", &out, NULL);
	assert_int_equal(rc, 0);
	int files = 0, plies = 0;
	char *save = NULL;
	for (char *path = strtok_r(out, "\n", &save); path; path = strtok_r(NULL, "\n", &save)) {
		int n = replay_csa_file(path);
		assert_true(n > 0);
		plies += n;
		files++;
		/* the 256-ply game is replayed to its end */
		if (strstr(path, "Titanda_L")) assert_int_equal(n, 256);
	}
	free(out);
	printf("floodgate: %d games, %d plies\n", files, plies);
	assert_int_equal(files, 15);
}

/*
 * The CSA records of other producers (tests/data/csa-dialects), read with the
 * project's CSA reader: other start positions, V2.2/V3.0 syntax. Every move
 * is checked as in the floodgate games.
 */
static void test_zobrist__incremental_key_equals_scratch_along_csa_dialects(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(ts_run("ls tests/data/csa-dialects/*.csa", &out, NULL), 0);
	int records = 0, plies = 0;
	static Position pos;
	char *save = NULL;
	for (char *path = strtok_r(out, "\n", &save); path; path = strtok_r(NULL, "\n", &save)) {
		KifuReader *r = NULL;
		assert_int_equal(kifu_reader_open_file(&r, path), 0);
		for (;;) {
			KifuRecord *rec = NULL;
			int rc = kifu_reader_next(r, &rec);
			if (rc == 0) break;
			if (rc != 1) fail_msg("%s: %s", path, kifu_reader_error(r));
			char err[SHOGI_ERRLEN] = "";
			if (kifu_record_position(&pos, rec, err) != 0)
				fail_msg("%s: %s", path, err);
			check_key_from_scratch(&pos, path, 0);
			for (size_t i = 0; i < rec->nmoves; i++) {
				Move m = MOVE_NONE;
				const char *tok = rec->moves[i].token;
				if (csa_move_parse(&m, &pos, tok, strlen(tok), err) != 0)
					fail_msg("%s:%d: %s: %s", path, rec->moves[i].line, tok,
					         err);
				play_checked(&pos, m, path, (int)i + 1);
				plies++;
			}
			records++;
			kifu_record_free(rec);
		}
		kifu_reader_free(r);
	}
	free(out);
	printf("csa-dialects: %d records, %d plies\n", records, plies);
	assert_true(records >= 7);
}

/* key_after(m) == key after do_move(m) for every move of every inner node. */
static void key_after_tree(Position *pos, int depth, long *checked)
{
	if (depth == 0) return;
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	Key k0 = pos_key(pos);
	for (int i = 0; i < n; i++) {
		Key predicted = pos_key_after(pos, moves[i]);
		pos_do_move(pos, moves[i]);
		if (!key_equal(predicted, pos_key(pos))) {
			char sfen[SFEN_MAX];
			pos_undo_move(pos);
			sfen_write(pos, sfen, sizeof sfen);
			fail_msg("%s: key_after(%04x) differs from the key after do_move", sfen,
			         moves[i]);
		}
		if (!key_equal(pos_key(pos), key_by_definition(pos))) {
			char sfen[SFEN_MAX];
			sfen_write(pos, sfen, sizeof sfen);
			fail_msg("%s: incremental key differs from the definition", sfen);
		}
		(*checked)++;
		key_after_tree(pos, depth - 1, checked);
		pos_undo_move(pos);
		assert_true(key_equal(k0, pos_key(pos)));
	}
}

static void test_zobrist__key_after_equals_do_move_in_perft3_trees(void **state)
{
	(void)state;
	static Position pos;
	long checked = 0;
	pos_set_startpos(&pos);
	key_after_tree(&pos, 3, &checked);
	assert_int_equal(checked, 30 + 900 + 25470);
	checked = 0;
	char err[SHOGI_ERRLEN] = "";
	assert_int_equal(sfen_parse(&pos, MATSURI_SFEN, NULL, err), 0);
	key_after_tree(&pos, 3, &checked);
	assert_int_equal(checked, 207 + 28684 + 4809015);
}

static void test_zobrist__hex_and_bytes_round_trip(void **state)
{
	(void)state;
	unsigned long long seed = ts_seed("test_zobrist__hex_and_bytes_round_trip");
	uint64_t x = seed;
	Key prev = {0, 0};
	for (int i = 0; i < 10000; i++) {
		uint64_t z = rng_next(&x);
		Key k = {z, z * 0x2545f4914f6cdd1dULL + (uint64_t)i};
		if (i == 0) k = (Key){0, 0};
		if (i == 1) k = (Key){UINT64_MAX, UINT64_MAX};
		char hex[KEY_HEX_LEN];
		key_to_hex(k, hex);
		assert_int_equal(strlen(hex), 32);
		for (int j = 0; j < 32; j++) assert_non_null(strchr("0123456789abcdef", hex[j]));
		Key back;
		assert_int_equal(key_from_hex(&back, hex), 0);
		assert_true(key_equal(k, back));
		uint8_t bytes[16], pbytes[16];
		key_to_bytes(k, bytes);
		assert_true(key_equal(k, key_from_bytes(bytes)));
		/* byte order is key_cmp order */
		key_to_bytes(prev, pbytes);
		int bc = memcmp(pbytes, bytes, 16);
		int kc = key_cmp(prev, k);
		assert_int_equal(bc < 0 ? -1 : bc > 0, kc);
		/* hex is hi then lo */
		char hi[17];
		snprintf(hi, sizeof hi, "%016llx", (unsigned long long)k.hi);
		assert_memory_equal(hi, hex, 16);
		prev = k;
	}
	Key k;
	assert_int_equal(key_from_hex(&k, "0123456789abcdef0123456789abcdef"), 0);
	assert_true(k.hi == 0x0123456789abcdefULL && k.lo == 0x0123456789abcdefULL);
	assert_int_not_equal(key_from_hex(&k, "0123456789abcdef0123456789abcde"), 0);   /* 31 */
	assert_int_not_equal(key_from_hex(&k, "0123456789abcdef0123456789abcdef0"), 0); /* 33 */
	assert_int_not_equal(key_from_hex(&k, "0123456789abcdef0123456789abcdeg"), 0);
	assert_int_not_equal(key_from_hex(&k, ""), 0);
	assert_int_not_equal(key_from_hex(&k, " 123456789abcdef0123456789abcdef"), 0);
}

static Key key_of(const char *sfen)
{
	static Position pos;
	char err[SHOGI_ERRLEN] = "";
	int rc = sfen_parse(&pos, sfen, NULL, err);
	if (rc != 0) fail_msg("sfen_parse(%s): %s", sfen, err);
	assert_true(key_equal(pos_key(&pos), key_by_definition(&pos)));
	return pos_key(&pos);
}

static void test_zobrist__hand_and_side_are_in_the_key(void **state)
{
	(void)state;
	const char *sfens[] = {
	    "4k4/9/9/9/9/9/9/9/4K4 b - 1",   "4k4/9/9/9/9/9/9/9/4K4 w - 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b P 1",   "4k4/9/9/9/9/9/9/9/4K4 b p 1",
	    "4k4/9/9/9/9/9/9/9/4K4 w P 1",   "4k4/9/9/9/9/9/9/9/4K4 b 2P 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b Pp 1",  "4k4/9/9/9/9/9/9/9/4K4 b L 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b G 1",   "4k4/9/9/9/9/9/9/9/4K4 b g 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b R 1",   "4k4/9/9/9/9/9/9/9/4K4 b r 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b RB 1",  "4k4/9/9/9/9/9/9/9/4K4 b Rb 1",
	    "4k4/9/9/9/9/9/9/9/4K4 b 18P 1", "4k4/9/9/9/9/9/9/9/4K4 b 17P 1",
	    "4k4/9/9/9/4P4/9/9/9/4K4 b - 1", "4k4/9/9/9/4P4/9/9/9/4K4 b P 1",
	};
	size_t n = sizeof sfens / sizeof sfens[0];
	Key keys[sizeof sfens / sizeof sfens[0]];
	for (size_t i = 0; i < n; i++) keys[i] = key_of(sfens[i]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (key_equal(keys[i], keys[j]))
				fail_msg("same key for %s and %s", sfens[i], sfens[j]);
	/* the move number is not part of the key */
	assert_true(key_equal(key_of("4k4/9/9/9/9/9/9/9/4K4 b P 1"),
	                      key_of("4k4/9/9/9/9/9/9/9/4K4 b P 77")));
	/* the hand order in the input does not matter */
	assert_true(key_equal(key_of("4k4/9/9/9/9/9/9/9/4K4 b RPp 1"),
	                      key_of("4k4/9/9/9/9/9/9/9/4K4 b pPR 1")));
	/* same pieces, side swapped: the difference is exactly ZOB_SIDE */
	Key b = key_of("4k4/9/9/9/9/9/9/9/4K4 b - 1"), w = key_of("4k4/9/9/9/9/9/9/9/4K4 w - 1");
	assert_true(key_equal(key_xor(b, w), ZOB_SIDE));
	/* hands add: two pawns minus one pawn is one pawn's value */
	Key p1 = key_of("4k4/9/9/9/9/9/9/9/4K4 b P 1"), p2 = key_of("4k4/9/9/9/9/9/9/9/4K4 b 2P 1");
	assert_true(key_equal(key_sub(p2, p1), ZOB_HAND[BLACK][PAWN]));
}

/* A null move flips only the side; undo restores the key. */
static void test_zobrist__null_move_flips_only_the_side(void **state)
{
	(void)state;
	static Position pos;
	pos_set_startpos(&pos);
	Key k0 = pos_key(&pos);
	pos_do_null_move(&pos);
	assert_true(key_equal(key_xor(k0, pos_key(&pos)), ZOB_SIDE));
	assert_int_equal(pos.side, WHITE);
	pos_undo_move(&pos);
	assert_true(key_equal(k0, pos_key(&pos)));
	assert_int_equal(pos.side, BLACK);
	assert_true(pos_is_ok(&pos));
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zobrist__incremental_key_equals_scratch_along_games),
	    cmocka_unit_test(test_zobrist__incremental_key_equals_scratch_along_openings),
	    cmocka_unit_test(test_zobrist__incremental_key_equals_scratch_along_floodgate_games),
	    cmocka_unit_test(test_zobrist__incremental_key_equals_scratch_along_csa_dialects),
	    cmocka_unit_test(test_zobrist__key_after_equals_do_move_in_perft3_trees),
	    cmocka_unit_test(test_zobrist__hex_and_bytes_round_trip),
	    cmocka_unit_test(test_zobrist__hand_and_side_are_in_the_key),
	    cmocka_unit_test(test_zobrist__null_move_flips_only_the_side),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
