/*
 * tests/shogi/test_notation.c — SFEN, USI and CSA notation: canonical SFENs
 * survive parse + write unchanged, lenient SFENs come out canonical, USI and
 * CSA moves round-trip for every legal move of many positions, and malformed
 * input returns an error whose message names the offending token.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

static void parse_sfen_or_die(Position *pos, const char *sfen)
{
	char err[SHOGI_ERRLEN] = "";
	int rc = sfen_parse(pos, sfen, NULL, err);
	if (rc != 0) fail_msg("sfen_parse(%s) = %d: %s", sfen, rc, err);
	assert_true(pos_is_ok(pos));
}

static void parse_position_or_die(Position *pos, const char *spec)
{
	char err[SHOGI_ERRLEN] = "";
	int rc = position_parse(pos, spec, err);
	if (rc != 0) fail_msg("position_parse(%s) = %d: %s", spec, rc, err);
	assert_true(pos_is_ok(pos));
}

/* The written SFEN parses back to the same position and is written identically. */
static void check_sfen_fixpoint(const Position *pos, const char *where)
{
	static Position back;
	char a[SFEN_MAX], b[SFEN_MAX];
	size_t la = sfen_write(pos, a, sizeof a);
	assert_int_equal(la, strlen(a));
	parse_sfen_or_die(&back, a);
	sfen_write(&back, b, sizeof b);
	if (strcmp(a, b) != 0) fail_msg("%s: %s re-written as %s", where, a, b);
	assert_true(key_equal(pos_key(pos), pos_key(&back)));
	assert_memory_equal(pos->board, back.board, sizeof pos->board);
	assert_memory_equal(pos->hand, back.hand, sizeof pos->hand);
	assert_int_equal(pos->side, back.side);
	assert_int_equal(pos->game_ply, back.game_ply);
}

/* A canonical SFEN is written back byte for byte. */
static void check_canonical(const char *sfen, const char *where)
{
	static Position pos;
	char out[SFEN_MAX];
	parse_sfen_or_die(&pos, sfen);
	sfen_write(&pos, out, sizeof out);
	if (strcmp(out, sfen) != 0) fail_msg("%s: canonical %s written as %s", where, sfen, out);
	check_sfen_fixpoint(&pos, where);
}

/* Calls fn on each non-comment, non-blank line of a fixture file. */
static int for_each_line(const char *path, void (*fn)(char *line, void *ctx), void *ctx)
{
	char *buf = ts_read_file(path, NULL);
	if (!buf) fail_msg("cannot read %s", path);
	int n = 0;
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r') line[len - 1] = '\0';
		if (line[0] == '#' || line[0] == '\0') continue;
		fn(line, ctx);
		n++;
	}
	free(buf);
	return n;
}

static void canonical_sampled(char *line, void *ctx)
{
	(void)ctx;
	char *tab = strchr(line, '\t');
	if (tab) *tab = '\0';
	check_canonical(line, "sampled-v1.sfen");
}

static void canonical_perft(char *line, void *ctx)
{
	(void)ctx;
	char *sfen = strchr(line, '\t');
	assert_non_null(sfen);
	sfen++;
	char *tab = strchr(sfen, '\t');
	assert_non_null(tab);
	*tab = '\0';
	check_canonical(sfen, "perft.tsv");
}

/* Every position along a "startpos moves …"/"sfen … moves …" spec. */
static void fixpoint_along_spec(char *line, void *ctx)
{
	int *positions = ctx;
	static Position pos;
	parse_position_or_die(&pos, line);
	/* re-play from the root so that every intermediate position is checked */
	int plies = pos_history_len(&pos);
	Move moves[POS_MAX_STATES];
	for (int i = plies; i > 0; i--) {
		moves[i - 1] = pos_st(&pos)->move;
		pos_undo_move(&pos);
	}
	check_sfen_fixpoint(&pos, line);
	(*positions)++;
	for (int i = 0; i < plies; i++) {
		pos_do_move(&pos, moves[i]);
		check_sfen_fixpoint(&pos, line);
		(*positions)++;
	}
}

static void fixpoint_along_game(char *line, void *ctx)
{
	char *tab = strchr(line, '\t');
	assert_non_null(tab);
	char spec[8192];
	snprintf(spec, sizeof spec, "startpos moves %s", tab + 1);
	fixpoint_along_spec(spec, ctx);
}

static void test_notation__sfen_round_trip_is_identity_on_canonical_sfens(void **state)
{
	(void)state;
	assert_true(
	    for_each_line("tests/data/positions/sampled-v1.sfen", canonical_sampled, NULL) >= 40);
	assert_true(for_each_line("tests/data/perft.tsv", canonical_perft, NULL) >= 20);
	check_canonical(SFEN_STARTPOS, "startpos");
	check_canonical("4k4/9/9/9/9/9/9/9/4K4 b 2R2B4G4S4N4L18P 1", "all in Black's hand");
	check_canonical("4k4/9/9/9/9/9/9/9/4K4 w 2r2b4g4s4n4l18p 123", "all in White's hand");
	check_canonical("4k4/9/9/9/9/9/9/9/4K4 b RBGSNLPrbgsnlp 2", "one of each");
	static Position start;
	pos_set_startpos(&start);
	char out[SFEN_MAX];
	sfen_write(&start, out, sizeof out);
	assert_string_equal(out, SFEN_STARTPOS);
	sfen_write_ply(&start, 42, out, sizeof out);
	assert_string_equal(out,
	                    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 42");
	/* A short buffer: cut and ended, as snprintf; the length is the whole. */
	char cut[10];
	assert_int_equal(sfen_write_ply(&start, 1000000, cut, sizeof cut),
	                 strlen(SFEN_STARTPOS) + 6);
	assert_string_equal(cut, "lnsgkgsnl");
	assert_int_equal(sfen_write_ply(&start, 7, NULL, 0), strlen(SFEN_STARTPOS));
}

static void test_notation__sfen_round_trip_along_games_and_specs(void **state)
{
	(void)state;
	int positions = 0;
	for_each_line("tests/data/positions/games-v1.usi", fixpoint_along_game, &positions);
	for_each_line("tests/data/positions/bench-v1.sfen", fixpoint_along_spec, &positions);
	for_each_line("tests/data/positions/openings-v1.sfen", fixpoint_along_spec, &positions);
	printf("SFEN fixpoint checked on %d positions\n", positions);
	assert_true(positions > 5000);
}

static void test_notation__lenient_sfen_parses_to_canonical(void **state)
{
	(void)state;
	static const struct {
		const char *in, *canonical;
	} cases[] = {
	    {"sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1", SFEN_STARTPOS},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b -", SFEN_STARTPOS},
	    {"sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b -", SFEN_STARTPOS},
	    {"4k4/9/9/9/9/9/9/9/4K4 b SPbslpppp 1", "4k4/9/9/9/9/9/9/9/4K4 b SPbsl4p 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b pPpSsP 1", "4k4/9/9/9/9/9/9/9/4K4 b S2Ps2p 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 b 2PP3p 1", "4k4/9/9/9/9/9/9/9/4K4 b 3P3p 1"},
	    {"4k4/9/9/9/9/9/9/9/4K4 w PLNSGBR 7", "4k4/9/9/9/9/9/9/9/4K4 w RBGSNLP 7"},
	    {"4k4/9/9/9/9/9/9/9/4K4 w rR 7", "4k4/9/9/9/9/9/9/9/4K4 w Rr 7"},
	    {"l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w 5pnsgGR 1",
	     "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"},
	    {"l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w ppppnGpRsg",
	     "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"},
	};
	static Position pos;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[SFEN_MAX];
		parse_sfen_or_die(&pos, cases[i].in);
		sfen_write(&pos, out, sizeof out);
		if (strcmp(out, cases[i].canonical) != 0)
			fail_msg("%s written as %s, expected %s", cases[i].in, out,
			         cases[i].canonical);
		/* position_parse takes the same SFENs */
		static Position pos2;
		parse_position_or_die(&pos2, cases[i].in);
		assert_true(key_equal(pos_key(&pos), pos_key(&pos2)));
	}

	/* *rest receives what follows the move number */
	const char *rest = NULL;
	char err[SHOGI_ERRLEN] = "";
	assert_int_equal(sfen_parse(&pos, "4k4/9/9/9/9/9/9/9/4K4 b - 1 moves 5i5h", &rest, err), 0);
	assert_non_null(rest);
	assert_non_null(strstr(rest, "moves 5i5h"));
	assert_int_equal(pos.game_ply, 1);
}

/* Move round trips over every legal move of one position. */
static void check_moves_round_trip(Position *pos, int *checked)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	for (int i = 0; i < n; i++) {
		Move m = moves[i], back = MOVE_NONE;
		char usi[USI_MOVE_MAX], csa[CSA_MOVE_MAX], err[SHOGI_ERRLEN] = "";
		size_t ul = usi_move_write(m, usi);
		assert_int_equal(ul, strlen(usi));
		assert_true(ul == 4 || ul == 5);
		assert_int_equal(usi[ul - 1] == '+', move_is_promote(m));
		assert_int_equal(usi[1] == '*', move_is_drop(m));
		if (usi_move_parse(&back, usi, ul, err) != 0)
			fail_msg("%s: usi %s: %s", sfen, usi, err);
		if (back != m) fail_msg("%s: usi %s parsed as %04x, not %04x", sfen, usi, back, m);
		back = MOVE_NONE;
		if (usi_move_parse_legal(&back, pos, usi, ul, err) != 0)
			fail_msg("%s: usi legal %s: %s", sfen, usi, err);
		assert_int_equal(back, m);

		size_t cl = csa_move_write(pos, m, csa);
		assert_int_equal(cl, 7);
		assert_int_equal(strlen(csa), 7);
		assert_int_equal(csa[0], pos->side == BLACK ? '+' : '-');
		back = MOVE_NONE;
		if (csa_move_parse(&back, pos, csa, cl, err) != 0)
			fail_msg("%s: csa %s: %s", sfen, csa, err);
		if (back != m) fail_msg("%s: csa %s parsed as %04x, not %04x", sfen, csa, back, m);
		/* the sign may be left out when the side is known */
		back = MOVE_NONE;
		if (csa_move_parse(&back, pos, csa + 1, cl - 1, err) != 0)
			fail_msg("%s: csa without sign %s: %s", sfen, csa + 1, err);
		assert_int_equal(back, m);
		/* CSA names the piece as it stands after the move; "00" origin for drops */
		pos_do_move(pos, m);
		Piece after = pos_piece(pos, move_to(m));
		pos_undo_move(pos);
		assert_non_null(CSA_PIECE_NAMES[piece_type(after)]);
		assert_memory_equal(csa + 5, CSA_PIECE_NAMES[piece_type(after)], 2);
		assert_int_equal(csa_piece_parse(csa + 5), piece_type(after));
		if (move_is_drop(m)) assert_memory_equal(csa + 1, "00", 2);
		/* the destination is written the same way in both notations */
		assert_int_equal(csa[3], usi[2]);
		assert_int_equal(csa[4] - '1', usi[3] - 'a');
		(*checked)++;
	}
}

static void round_trip_tree(Position *pos, int depth, int *checked)
{
	check_moves_round_trip(pos, checked);
	if (depth == 0) return;
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	for (int i = 0; i < n; i++) {
		pos_do_move(pos, moves[i]);
		round_trip_tree(pos, depth - 1, checked);
		pos_undo_move(pos);
	}
}

static void round_trip_sampled(char *line, void *ctx)
{
	char *tab = strchr(line, '\t');
	if (tab) *tab = '\0';
	static Position pos;
	parse_sfen_or_die(&pos, line);
	round_trip_tree(&pos, 1, ctx);
}

static void test_notation__usi_and_csa_moves_round_trip(void **state)
{
	(void)state;
	static const char *roots[] = {
	    SFEN_STARTPOS,
	    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
	    "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
	    "k+n7/sg7/9/9/9/9/+r5K1g/7L1/2LN1R1+Bb b RBGSNLP 1",
	    "7k1/9/9/9/l2s5/6snb/9/9/8K b 2G 1",
	};
	static Position pos;
	int checked = 0;
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		parse_sfen_or_die(&pos, roots[i]);
		round_trip_tree(&pos, 1, &checked);
	}
	for_each_line("tests/data/positions/sampled-v1.sfen", round_trip_sampled, &checked);
	printf("round-tripped %d moves\n", checked);
	assert_true(checked > 100000);
}

/* Table of bad inputs: the call fails, and the message names one of `tokens` ('|'-separated). */
typedef enum { BAD_SFEN, BAD_USI, BAD_USI_LEGAL, BAD_CSA, BAD_POSITION } BadKind;

typedef struct {
	BadKind kind;
	const char *pos; /* position for BAD_USI_LEGAL / BAD_CSA (SFEN; NULL = startpos) */
	const char *input;
	const char *tokens;
} BadCase;

static bool names_a_token(const char *err, const char *tokens)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", tokens);
	char *save = NULL;
	for (char *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save))
		if (strstr(err, t)) return true;
	return false;
}

#define K "4k4/9/9/9/9/9/9/9/4K4"

static const BadCase BAD[] = {
    /* SFEN: board shape */
    {BAD_SFEN, NULL, "9/9/9/9/9/9/9/9/9/9 b - 1", "9/9/9/9/9/9/9/9/9/9"},
    {BAD_SFEN, NULL, "4k4/9/9/9/9/9/9/4K4 b - 1", "4k4/9/9/9/9/9/9/4K4"},
    {BAD_SFEN, NULL, "4k4/9/9/9/91/9/9/9/4K4 b - 1", "91"},
    {BAD_SFEN, NULL, "4k4/9/9/9/5P4/9/9/9/4K4 b - 1", "5P4"},
    {BAD_SFEN, NULL, "4k4/9/9/9/8/9/9/9/4K4 b - 1", "4k4/9/9/9/8/9/9/9/4K4"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4X4/9/9/9/4K4 b - 1", "X"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4+G4/9/9/9/4K4 b - 1", "+G"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4+K4/9/9/9/4K4 b - 1", "+K"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4+4/9/9/9/4K4 b - 1", "+"},
    {BAD_SFEN, NULL, "4k4/9/9/9/0/9/9/9/4K4 b - 1", "0"},
    /* SFEN: side, hand, move number, trailing text */
    {BAD_SFEN, NULL, K " x - 1", "x"},
    {BAD_SFEN, NULL, K " black - 1", "black"},
    {BAD_SFEN, NULL, K, "side|" K},
    {BAD_SFEN, NULL, K " b 2Q 1", "Q"},
    {BAD_SFEN, NULL, K " b 2K 1", "K"},
    {BAD_SFEN, NULL, K " b 32P 1", "32P|32"},
    {BAD_SFEN, NULL, K " b 4R 1", "4R|R"},
    {BAD_SFEN, NULL, K " b 8G 1", "8G|G"},
    {BAD_SFEN, NULL, K " b 2 1", "2"},
    {BAD_SFEN, NULL, K " b P2 1", "P2|2"},
    {BAD_SFEN, NULL, K " b - abc", "abc"},
    {BAD_SFEN, NULL, K " b - 1 junk", "junk"},
    /* SFEN: positions that cannot occur */
    {BAD_SFEN, NULL, "4k4/9/9/9/9/9/9/9/3KK4 b - 1", "king|K"},
    {BAD_SFEN, NULL, "4P4/4k4/9/9/9/9/9/9/4K4 b - 1", "pawn|P"},
    {BAD_SFEN, NULL, "4k3L/9/9/9/9/9/9/9/4K4 b - 1", "lance|L"},
    {BAD_SFEN, NULL, "4k4/1N7/9/9/9/9/9/9/4K4 b - 1", "knight|N"},
    {BAD_SFEN, NULL, "4k4/9/9/9/9/9/9/9/p3K4 b - 1", "pawn|p"},
    {BAD_SFEN, NULL, "4k4/9/9/4P4/9/9/4P4/9/4K4 b - 1", "nifu|pawn|P"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4P4/9/9/9/4K4 b 31P 1", "pawns"},
    {BAD_SFEN, NULL, "3kk4/9/9/9/9/9/9/9/4K4 b - 1", "king|k"},
    {BAD_SFEN, NULL, "RRRRK4/9/9/9/9/9/9/9/4k4 b - 1", "rooks"},
    {BAD_SFEN, NULL, "4k4/9/9/9/4B4/9/9/9/4K4 b 3B 1", "bishops"},
    /* USI move syntax */
    {BAD_USI, NULL, "7g7", "7g7"},
    {BAD_USI, NULL, "P*5", "P*5"},
    {BAD_USI, NULL, "K*5e", "K*5e"},
    {BAD_USI, NULL, "0a1b", "0a1b"},
    {BAD_USI, NULL, "7j7f", "7j7f"},
    {BAD_USI, NULL, "7g7f++", "7g7f++"},
    {BAD_USI, NULL, "7g7fx", "7g7fx"},
    {BAD_USI, NULL, "P*5e+", "P*5e+"},
    {BAD_USI, NULL, "p*5e", "p*5e"},
    {BAD_USI, NULL, "7g", "7g"},
    {BAD_USI, NULL, "7777", "7777"},
    /* USI moves that are well-formed but illegal */
    {BAD_USI_LEGAL, NULL, "7g7e", "7g7e"},
    {BAD_USI_LEGAL, NULL, "P*5e", "P*5e"},
    {BAD_USI_LEGAL, NULL, "3c3d", "3c3d"},
    {BAD_USI_LEGAL, NULL, "8h2b+", "8h2b+"},
    /* CSA moves */
    {BAD_CSA, NULL, "+7776", "+7776"},
    {BAD_CSA, NULL, "+7776XX", "XX"},
    {BAD_CSA, NULL, "+0055FU", "+0055FU"},
    {BAD_CSA, NULL, "-3334FU", "-3334FU"},
    {BAD_CSA, NULL, "+7775FU", "+7775FU"},
    {BAD_CSA, NULL, "+7776KI", "+7776KI|KI"},
    {BAD_CSA, NULL, "+7776TO", "+7776TO|TO"},
    {BAD_CSA, NULL, "*7776FU", "*7776FU|*"},
    {BAD_CSA, NULL, "+A776FU", "+A776FU|A"},
    {BAD_CSA, NULL, "+0055OU", "+0055OU|OU"},
    {BAD_CSA, K " b P 1", "+0041FU", "+0041FU"},
    {BAD_CSA, K " b P 1", "+0055KY", "+0055KY|KY"},
    /* position specs */
    {BAD_POSITION, NULL, "startpos moves 7g7f 7g7f", "7g7f"},
    {BAD_POSITION, NULL, "startpos moves 7g7f 3c3d 7x7y", "7x7y"},
    {BAD_POSITION, NULL, "startpos foo", "foo"},
    {BAD_POSITION, NULL, "sfen 4k4/9/9/9/X/9/9/9/4K4 b - 1", "X"},
    {BAD_POSITION, NULL, "position startpos moves 7g7f 3c3d 8h2b+ 3a2b B*5e 4a3b B*4e", "B*4e"},
};

/* Runs one bad case; returns NULL if it fails as it should, else what went wrong. */
static const char *run_bad_case(const BadCase *c, char *err)
{
	static Position pos, at;
	Move m = MOVE_NONE;
	int rc = 0;
	if (c->pos)
		parse_sfen_or_die(&at, c->pos);
	else
		pos_set_startpos(&at);
	size_t len = strlen(c->input);
	for (int pass = 0; pass < 2; pass++) {
		/* the second pass checks that a NULL err is allowed */
		char *e = pass == 0 ? err : NULL;
		switch (c->kind) {
		case BAD_SFEN:
			rc = sfen_parse(&pos, c->input, NULL, e);
			break;
		case BAD_USI:
			rc = usi_move_parse(&m, c->input, len, e);
			break;
		case BAD_USI_LEGAL:
			rc = usi_move_parse_legal(&m, &at, c->input, len, e);
			break;
		case BAD_CSA:
			rc = csa_move_parse(&m, &at, c->input, len, e);
			break;
		case BAD_POSITION:
			rc = position_parse(&pos, c->input, e);
			break;
		}
		if (rc >= 0) return "accepted";
		if (rc != SHOGI_EPARSE && rc != SHOGI_EILLEGAL) return "unexpected error code";
		if (!shogi_strerror(rc)) return "no shogi_strerror";
		/* A CSA move that parses but is not legal: the message says why,
		 * and the caller names the move ("illegal move +7776KI (the piece
		 * on 77 is FU, ...)"), so the reason need not repeat it. */
		bool reason = rc == SHOGI_EILLEGAL && c->kind == BAD_CSA;
		if (pass == 0) {
			if (err[0] == '\0') return "empty error message";
			if (strlen(err) >= SHOGI_ERRLEN) return "message too long";
			if (!reason && !names_a_token(err, c->tokens))
				return "message does not name the token";
			if (reason && strstr(err, "illegal move"))
				return "the reason says 'illegal move' again";
		}
	}
	return NULL;
}

static void test_notation__bad_input_errors_name_the_token(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
		char err[SHOGI_ERRLEN];
		memset(err, 0, sizeof err);
		const char *why = run_bad_case(&BAD[i], err);
		if (why) {
			printf("bad input #%zu \"%s\": %s (message \"%s\", wanted one of %s)\n", i,
			       BAD[i].input, why, err, BAD[i].tokens);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
	assert_true(sizeof BAD / sizeof BAD[0] >= 40);
	/* The reasons an illegal CSA move is given. */
	static const char *const WHY[][2] = {
	    {"+7776KI", "the piece on 77 is FU, which cannot become KI"},
	    {"+0055OU", "a king (OU) cannot be dropped"},
	    {"+0055TO", "a promoted piece (TO) cannot be dropped"},
	    {"+5576FU", "no Black piece on 55"},
	    {"+7775FU", "not legal in this position"},
	};
	static Position pos, a, b;
	pos_set_startpos(&pos);
	for (size_t i = 0; i < sizeof WHY / sizeof WHY[0]; i++) {
		char err[SHOGI_ERRLEN];
		Move m;
		assert_int_equal(csa_move_parse(&m, &pos, WHY[i][0], 7, err), SHOGI_EILLEGAL);
		assert_string_equal(err, WHY[i][1]);
	}
	/* A bare move list is the start position and those moves. */
	assert_int_equal(position_parse(&a, "7g7f 3c3d 8h2b+", NULL), 0);
	assert_int_equal(position_parse(&b, "startpos moves 7g7f 3c3d 8h2b+", NULL), 0);
	assert_true(key_equal(pos_key(&a), pos_key(&b)));
	assert_int_equal(position_parse(&a, "moves 7g7f", NULL), 0);
	assert_int_equal(pos_history_len(&a), 1);
	char err[SHOGI_ERRLEN];
	assert_int_equal(position_parse(&a, "7g7f 7g7f", err), SHOGI_EILLEGAL);
	assert_non_null(strstr(err, "move 2 '7g7f'"));
}

/* A Position holds POS_MAX_STATES - 1 plies; a longer spec is refused, not truncated. */
static void test_notation__position_spec_longer_than_history_is_refused(void **state)
{
	(void)state;
	static const char *cycle[] = {"5i5h", "5a5b", "5h5i", "5b5a"};
	size_t cap = 16 + (POS_MAX_STATES + 4) * 5;
	char *spec = malloc(cap);
	assert_non_null(spec);
	static Position pos;
	for (int plies = POS_MAX_STATES - 1; plies <= POS_MAX_STATES; plies++) {
		size_t len = (size_t)snprintf(spec, cap, "startpos moves");
		for (int i = 0; i < plies; i++)
			len += (size_t)snprintf(spec + len, cap - len, " %s", cycle[i % 4]);
		char err[SHOGI_ERRLEN] = "";
		int rc = position_parse(&pos, spec, err);
		if (plies < POS_MAX_STATES) {
			if (rc != 0) fail_msg("%d plies: %d %s", plies, rc, err);
			assert_int_equal(pos_history_len(&pos), plies);
			assert_true(pos_is_ok(&pos));
		} else {
			assert_int_equal(rc, SHOGI_ETOOLONG);
			assert_true(err[0] != '\0');
		}
	}
	free(spec);
}

/* A position list's line without its trailing comment: a '#' at the start
 * or after a blank ends the line; the blanks before it go too. */
static void test_notation__a_trailing_comment_is_cut_from_a_position_line(void **state)
{
	(void)state;
	static const struct {
		const char *line, *kept;
	} CASES[] = {
	    {"startpos moves 7g7f\t# game=x ply=1", "startpos moves 7g7f"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 # x",
	     "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"},
	    {"# a comment line", ""},
	    {"startpos \r\n", "startpos"},
	    {"startpos#notacomment", "startpos#notacomment"},
	    {"", ""},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
		size_t n = position_line_len(CASES[i].line, strlen(CASES[i].line));
		if (n != strlen(CASES[i].kept) || strncmp(CASES[i].line, CASES[i].kept, n))
			fail_msg("'%s': kept %zu bytes, not '%s'", CASES[i].line, n, CASES[i].kept);
	}
}

/* Every prefix of valid inputs is either accepted or rejected cleanly. */
static void test_notation__prefixes_never_crash(void **state)
{
	(void)state;
	static Position pos, at;
	const char *sfen = "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1";
	char buf[SFEN_MAX], err[SHOGI_ERRLEN];
	int accepted = 0;
	for (size_t n = 0; n <= strlen(sfen); n++) {
		memcpy(buf, sfen, n);
		buf[n] = '\0';
		err[0] = '\0';
		int rc = sfen_parse(&pos, buf, NULL, err);
		if (rc == 0) {
			accepted++;
			assert_true(pos_is_ok(&pos));
		} else {
			assert_true(err[0] != '\0');
		}
	}
	assert_true(accepted >= 2); /* without and with the move number */
	pos_set_startpos(&at);
	const char *moves[] = {"+7776FU", "7g7f", "P*5e", "8h2b+"};
	for (size_t k = 0; k < 4; k++)
		for (size_t n = 0; n < strlen(moves[k]); n++) {
			Move m;
			err[0] = '\0';
			if (n < 4) { /* "8h2b" is a whole move */
				assert_true(usi_move_parse(&m, moves[k], n, err) < 0);
				assert_true(err[0] != '\0');
			}
			err[0] = '\0';
			assert_true(csa_move_parse(&m, &at, moves[k], n, err) < 0);
			assert_true(err[0] != '\0');
		}
}

/* What a user mistyped, said where: the rank of a board that is not 9
 * squares (it said "a rank does not have 9 squares"), and the rule an
 * illegal move of a position spec breaks (it said only "illegal move"). */
static void test_notation__errors_name_the_rank_and_the_rule(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *said;
	} CASES[] = {
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R/LNSGKGSNL b - 1",
	     "rank 8 (h, from the top) has 8 squares, not 9"},
	    {"lnsgkgsnl/1r5b2/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
	     "rank 2 (b, from the top) has more than 9 squares"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNLP b - 1",
	     "rank 9 (i, from the top) has more than 9 squares"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSN b - 1",
	     "rank 9 (i, from the top) has 8 squares, not 9"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1", "8 ranks, not 9"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL/9 b - 1",
	     "more than 9 ranks"},
	    {"lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSN+ b - 1",
	     "'+' at its end (a piece after it)"},
	    {"startpos moves 3c3e",
	     "illegal move 1 '3c3e' in position spec (the pawn on 3c is White's, and Black is to "
	     "move)"},
	    {"startpos moves 7g7f 7g7f",
	     "illegal move 2 '7g7f' in position spec (there is no piece on 7g)"},
	};
	Position pos;
	for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
		char err[SHOGI_ERRLEN] = "";
		assert_true(position_parse(&pos, CASES[i].spec, err) < 0);
		if (!strstr(err, CASES[i].said))
			fail_msg("%s: '%s' not in '%s'", CASES[i].spec, CASES[i].said, err);
	}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_notation__sfen_round_trip_is_identity_on_canonical_sfens),
	    cmocka_unit_test(test_notation__sfen_round_trip_along_games_and_specs),
	    cmocka_unit_test(test_notation__lenient_sfen_parses_to_canonical),
	    cmocka_unit_test(test_notation__usi_and_csa_moves_round_trip),
	    cmocka_unit_test(test_notation__bad_input_errors_name_the_token),
	    cmocka_unit_test(test_notation__position_spec_longer_than_history_is_refused),
	    cmocka_unit_test(test_notation__prefixes_never_crash),
	    cmocka_unit_test(test_notation__a_trailing_comment_is_cut_from_a_position_line),
	    cmocka_unit_test(test_notation__errors_name_the_rank_and_the_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
