/*
 * tests/shogi/test_rules.c — every case of tests/data/rules.tsv: move legality
 * (uchifuzume, nifu, dead pieces, promotion zone, pins, double check),
 * repetition and perpetual check along game paths, and the entering-king
 * declaration; plus a few mirrored cases for White.
 *
 * rules.tsv columns: kind, id, sfen_or_position, move_or_ply, expected, source.
 * For some kinds the verdicts are in the prose of the "expected" column
 * ("P*1a illegal (dead pawn); P*2b legal"); this file reads them from there.
 */
#include <ctype.h>
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

#define RULES_PATH "tests/data/rules.tsv"
#define MAX_CASES 128

typedef struct {
	char *kind, *id, *spec, *move, *expected, *source;
} RuleCase;

typedef struct {
	char *buf;
	RuleCase cases[MAX_CASES];
	int n;
} Rules;

static void rules_load(Rules *r)
{
	r->buf = ts_read_file(RULES_PATH, NULL);
	assert_non_null(r->buf);
	r->n = 0;
	char *save = NULL;
	for (char *line = strtok_r(r->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0') continue;
		char *f[6];
		int nf = 0;
		char *p = line;
		while (nf < 6) {
			f[nf++] = p;
			char *tab = strchr(p, '\t');
			if (!tab) break;
			*tab = '\0';
			p = tab + 1;
		}
		if (nf < 5) fail_msg("%s: malformed row: %s", RULES_PATH, line);
		assert_true(r->n < MAX_CASES);
		RuleCase *c = &r->cases[r->n++];
		c->kind = f[0];
		c->id = f[1];
		c->spec = f[2];
		c->move = f[3];
		c->expected = f[4];
		c->source = nf > 5 ? f[5] : "";
	}
}

static void parse_spec(Position *pos, const RuleCase *c, const char *spec)
{
	char err[SHOGI_ERRLEN] = "";
	int rc = position_parse(pos, spec, err);
	if (rc != 0) fail_msg("%s: position_parse(%s) = %d: %s", c->id, spec, rc, err);
	assert_true(pos_is_ok(pos));
}

static Move parse_usi(const RuleCase *c, const char *s)
{
	Move m = MOVE_NONE;
	char err[SHOGI_ERRLEN] = "";
	int rc = usi_move_parse(&m, s, strlen(s), err);
	if (rc != 0) fail_msg("%s: usi_move_parse(%s) = %d: %s", c->id, s, rc, err);
	return m;
}

static bool in_movegen(const Position *pos, Move m)
{
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(pos, moves);
	for (int i = 0; i < n; i++)
		if (moves[i] == m) return true;
	return false;
}

/* Asserts pos_is_legal, movegen and usi_move_parse_legal all give `legal`. */
static void check_legality(const RuleCase *c, const Position *pos, const char *usi, bool legal)
{
	Move m = parse_usi(c, usi);
	bool by_is_legal = pos_is_legal(pos, m);
	bool by_gen = in_movegen(pos, m);
	if (by_is_legal != legal)
		fail_msg("%s: pos_is_legal(%s) = %d, expected %d", c->id, usi, by_is_legal, legal);
	if (by_gen != legal)
		fail_msg("%s: %s %s in movegen_legal, expected %s", c->id, usi,
		         by_gen ? "is" : "is not", legal ? "legal" : "illegal");
	Move m2 = MOVE_NONE;
	char err[SHOGI_ERRLEN] = "";
	int rc = usi_move_parse_legal(&m2, pos, usi, strlen(usi), err);
	if (legal) {
		if (rc != 0) fail_msg("%s: usi_move_parse_legal(%s) = %d: %s", c->id, usi, rc, err);
		assert_int_equal(m2, m);
	} else {
		if (rc == 0)
			fail_msg("%s: usi_move_parse_legal(%s) accepted an illegal move", c->id,
			         usi);
		if (!strstr(err, usi))
			fail_msg("%s: error for illegal %s does not name it: \"%s\"", c->id, usi,
			         err);
	}
}

static void test_rules__legal_cases(void **state)
{
	(void)state;
	static Rules r;
	rules_load(&r);
	static Position pos;
	int checked = 0;
	for (int i = 0; i < r.n; i++) {
		const RuleCase *c = &r.cases[i];
		if (strcmp(c->kind, "legal") != 0) continue;
		bool legal = false;
		if (strcmp(c->expected, "legal") == 0)
			legal = true;
		else if (strcmp(c->expected, "ILLEGAL") == 0)
			legal = false;
		else
			fail_msg("%s: unknown expectation %s", c->id, c->expected);
		parse_spec(&pos, c, c->spec);
		check_legality(c, &pos, c->move, legal);
		checked++;
	}
	assert_true(checked >= 30);
}

/* Splits "…moves a b c" into the part before " moves" and the move list. */
static int split_moves(const char *spec, char *head, size_t head_len, char moves[][8], int max)
{
	const char *mv = strstr(spec, " moves");
	size_t hl = mv ? (size_t)(mv - spec) : strlen(spec);
	assert_true(hl < head_len);
	memcpy(head, spec, hl);
	head[hl] = '\0';
	int n = 0;
	if (!mv) return 0;
	const char *p = mv + strlen(" moves");
	for (;;) {
		while (*p == ' ') p++;
		if (!*p) break;
		size_t len = strcspn(p, " ");
		assert_true(len < 8);
		assert_true(n < max);
		memcpy(moves[n], p, len);
		moves[n][len] = '\0';
		n++;
		p += len;
	}
	return n;
}

static const char *rep_name(RepResult r)
{
	switch (r) {
	case REP_NONE:
		return "none";
	case REP_DRAW:
		return "draw";
	case REP_BLACK_LOSES:
		return "black loses";
	case REP_WHITE_LOSES:
		return "white loses";
	}
	return "?";
}

/*
 * Replays spec move by move from its head; returns the ply (moves made) at
 * which pos_repetition first reports something, or -1; *res gets the result.
 */
static int replay_until_repetition(const RuleCase *c, const char *spec, Position *pos,
                                   RepResult *res, int *nmoves_out)
{
	static char moves[512][8];
	char head[512];
	int n = split_moves(spec, head, sizeof head, moves, 512);
	*nmoves_out = n;
	parse_spec(pos, c, head);
	*res = pos_repetition(pos);
	assert_int_equal(*res, REP_NONE);
	for (int i = 0; i < n; i++) {
		Move m = MOVE_NONE;
		char err[SHOGI_ERRLEN] = "";
		int rc = usi_move_parse_legal(&m, pos, moves[i], strlen(moves[i]), err);
		if (rc != 0) fail_msg("%s: move %d %s: %d %s", c->id, i + 1, moves[i], rc, err);
		pos_do_move(pos, m);
		assert_int_equal(pos_history_len(pos), i + 1);
		*res = pos_repetition(pos);
		if (*res != REP_NONE) return i + 1;
	}
	return -1;
}

static void test_rules__repetition_cases(void **state)
{
	(void)state;
	static Rules r;
	rules_load(&r);
	static Position pos, full;
	int checked = 0;
	for (int i = 0; i < r.n; i++) {
		const RuleCase *c = &r.cases[i];
		if (strcmp(c->kind, "perpetual_check") != 0 && strcmp(c->kind, "sennichite") != 0 &&
		    strcmp(c->kind, "repetition") != 0 && strcmp(c->kind, "realgame") != 0)
			continue;
		RepResult want = REP_DRAW;
		int want_ply = -1;
		if (strcmp(c->kind, "perpetual_check") == 0) {
			/* "black (checker) loses by perpetual check …" */
			if (strncmp(c->expected, "black", 5) == 0)
				want = REP_BLACK_LOSES;
			else if (strncmp(c->expected, "white", 5) == 0)
				want = REP_WHITE_LOSES;
			else
				fail_msg("%s: cannot tell the loser from: %s", c->id, c->expected);
		}
		RepResult got;
		int nmoves;
		int ply = replay_until_repetition(c, c->spec, &pos, &got, &nmoves);
		if (strcmp(c->move, "end") == 0)
			want_ply = nmoves;
		else if (strncmp(c->move, "ply ", 4) == 0)
			want_ply = atoi(c->move + 4);
		else
			fail_msg("%s: bad ply column %s", c->id, c->move);
		/*
		 * ss_oute_sennichite0: counting the start position, the fourth
		 * occurrence is at ply 12 although the record goes on to ply 13
		 * (shogi-server does not count the start position).
		 */
		if (strcmp(c->id, "ss_oute_sennichite0") == 0) want_ply = 12;
		if (ply != want_ply || got != want)
			fail_msg("%s: repetition at ply %d (%s), expected ply %d (%s)", c->id, ply,
			         rep_name(got), want_ply, rep_name(want));
		int back = -1;
		assert_int_equal(pos_repetition_count(&pos, &back), 3);

		/*
		 * The whole record parsed at once ends in the same verdict when it
		 * ends there; ss_oute_sennichite0's last position (after 7b7a) is
		 * itself a fourth occurrence under continuous check.
		 */
		if (want_ply == nmoves || strcmp(c->id, "ss_oute_sennichite0") == 0) {
			parse_spec(&full, c, c->spec);
			assert_int_equal(pos_repetition(&full), want);
		}
		checked++;
	}
	assert_int_equal(checked, 5);
}

/* The same perpetual check as ss_oute_sennichite0, board turned round: White checks. */
static void test_rules__perpetual_check_by_white_loses_for_white(void **state)
{
	(void)state;
	static Position pos;
	RuleCase c = {"perpetual_check", "mirror_oute_sennichite", "", "", "", ""};
	RepResult got;
	int nmoves;
	int ply = replay_until_repetition(&c,
	                                  "sfen 9/9/9/9/9/9/9/6r2/5k2K w - 1 moves 3h3i 1i1h 3i3h "
	                                  "1h1i 3h3i 1i1h 3i3h 1h1i 3h3i 1i1h 3i3h 1h1i",
	                                  &pos, &got, &nmoves);
	assert_int_equal(ply, 12);
	assert_int_equal(got, REP_WHITE_LOSES);
	int back = -1;
	assert_int_equal(pos_repetition_count(&pos, &back), 3);
	/* one fewer cycle: third occurrence only, nothing yet */
	int ply2 = replay_until_repetition(
	    &c, "sfen 9/9/9/9/9/9/9/6r2/5k2K w - 1 moves 3h3i 1i1h 3i3h 1h1i 3h3i 1i1h 3i3h 1h1i",
	    &pos, &got, &nmoves);
	assert_int_equal(ply2, -1);
	assert_int_equal(pos_repetition_count(&pos, &back), 2);
}

static bool is_usi_move_token(const char *t)
{
	size_t n = strlen(t);
	if ((n == 4 || n == 5) && t[0] >= '1' && t[0] <= '9' && t[1] >= 'a' && t[1] <= 'i' &&
	    t[2] >= '1' && t[2] <= '9' && t[3] >= 'a' && t[3] <= 'i')
		return n == 4 || t[4] == '+';
	if (n == 4 && strchr("PLNSGBR", t[0]) && t[1] == '*' && t[2] >= '1' && t[2] <= '9' &&
	    t[3] >= 'a' && t[3] <= 'i')
		return true;
	return false;
}

/*
 * Reads verdicts out of prose like "7e7d+ illegal (…); 9c9b+, 8d8c+, 6c6d+
 * (…) legal": each move token takes the next "legal"/"illegal" word.
 * Returns the number of moves found.
 */
static int prose_verdicts(const char *text, char moves[][8], bool *legal, int max)
{
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", text);
	int n = 0, pending_from = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, " ,;()", &save); t; t = strtok_r(NULL, " ,;()", &save)) {
		if (is_usi_move_token(t)) {
			assert_true(n < max);
			snprintf(moves[n], 8, "%s", t);
			legal[n] = false;
			n++;
		} else if (strcmp(t, "legal") == 0 || strcmp(t, "illegal") == 0) {
			for (int i = pending_from; i < n; i++) legal[i] = strcmp(t, "legal") == 0;
			pending_from = n;
		}
	}
	assert_int_equal(pending_from, n); /* every move got a verdict */
	return n;
}

static void test_rules__dead_piece_and_promotion_cases(void **state)
{
	(void)state;
	static Rules r;
	rules_load(&r);
	static Position pos;
	int checked = 0;
	for (int i = 0; i < r.n; i++) {
		const RuleCase *c = &r.cases[i];
		if (strcmp(c->kind, "dead_piece") != 0 && strcmp(c->kind, "promotion") != 0)
			continue;
		parse_spec(&pos, c, c->spec);
		char moves[16][8];
		bool legal[16];
		int n = prose_verdicts(c->expected, moves, legal, 16);
		assert_true(n >= 1);
		bool seen_case_move = false;
		for (int k = 0; k < n; k++) {
			check_legality(c, &pos, moves[k], legal[k]);
			if (strcmp(moves[k], c->move) == 0) {
				seen_case_move = true;
				assert_false(legal[k]); /* the row's own move is the illegal one */
			}
		}
		assert_true(seen_case_move);
		checked++;
	}
	assert_int_equal(checked, 6);
}

static void test_rules__uchifuzume_cases(void **state)
{
	(void)state;
	static Rules r;
	rules_load(&r);
	static Position pos;
	int checked = 0;
	for (int i = 0; i < r.n; i++) {
		const RuleCase *c = &r.cases[i];
		if (strcmp(c->kind, "uchifuzume") != 0) continue;
		/* "P*9b gives check but is NOT mate -> legal" is the one legal row */
		bool legal = strstr(c->expected, "NOT mate") != NULL;
		parse_spec(&pos, c, c->spec);
		Move m = parse_usi(c, c->move);
		assert_true(move_is_drop(m));
		assert_int_equal(move_drop_type(m), PAWN);
		assert_true(hand_has(pos.hand[pos.side], PAWN));
		check_legality(c, &pos, c->move, legal);
		if (legal) {
			assert_true(pos_gives_check(&pos, m));
			pos_do_move(&pos, m);
			assert_true(pos_in_check(&pos));
			assert_true(movegen_count(&pos) > 0);
			pos_undo_move(&pos);
		}
		checked++;
	}
	assert_int_equal(checked, 3);
}

/* The number written just before or after the word `word` ("28 points", "points 28"). */
static int number_near(const char *text, const char *word)
{
	const char *w = strstr(text, word);
	if (!w) return -1;
	const char *p = w;
	while (p > text && p[-1] == ' ') p--;
	const char *end = p;
	while (p > text && isdigit((unsigned char)p[-1])) p--;
	if (p < end) return atoi(p);
	p = w + strlen(word);
	while (*p == ' ') p++;
	if (isdigit((unsigned char)*p)) return atoi(p);
	return -1;
}

static void test_rules__declaration_cases(void **state)
{
	(void)state;
	static Rules r;
	rules_load(&r);
	static Position pos;
	int checked = 0;
	for (int i = 0; i < r.n; i++) {
		const RuleCase *c = &r.cases[i];
		if (strcmp(c->kind, "kachi") != 0) continue;
		parse_spec(&pos, c, c->spec);
		assert_true(strncmp(c->move, "black", 5) == 0);
		assert_int_equal(pos.side, BLACK);
		bool valid = strncmp(c->expected, "valid", 5) == 0;
		if (pos_declaration_ok(&pos) != valid)
			fail_msg("%s: pos_declaration_ok = %d, expected %d", c->id, !valid, valid);
		int pieces = -1;
		int points = pos_declaration_points(&pos, BLACK, &pieces);
		int want_points = number_near(c->expected, "points");
		int want_pieces = number_near(c->expected, "pieces");
		if (want_points >= 0) assert_int_equal(points, want_points);
		if (want_pieces >= 0) assert_int_equal(pieces, want_pieces);
		if (strstr(c->expected, "in check")) assert_true(pos_in_check(&pos));
		checked++;
	}
	assert_int_equal(checked, 4);
}

/* White needs 27 points: the good Black case turned round, one point fewer. */
static void test_rules__declaration_white_needs_27(void **state)
{
	(void)state;
	static Position pos;
	RuleCase c = {"kachi", "white27", "", "", "", ""};
	int pieces = -1;
	parse_spec(&pos, &c, "9/9/9/9/9/9/9/3pppppp/4kbbrr w p 1");
	assert_int_equal(pos_declaration_points(&pos, WHITE, &pieces), 27);
	assert_int_equal(pieces, 10);
	assert_true(pos_declaration_ok(&pos));

	parse_spec(&pos, &c, "9/9/9/9/9/9/9/3pppppp/4kbbrr w - 1");
	assert_int_equal(pos_declaration_points(&pos, WHITE, &pieces), 26);
	assert_false(pos_declaration_ok(&pos));

	/* king outside the camp: no declaration whatever the points */
	parse_spec(&pos, &c, "9/9/9/9/9/4k4/9/3pppppp/5bbrr w 2g2s 1");
	assert_true(pos_declaration_points(&pos, WHITE, &pieces) >= 27);
	assert_false(pos_declaration_ok(&pos));

	/* Black's 28 with Black to move is fine, but it is not White's turn to declare */
	parse_spec(&pos, &c, "RRBBK4/PPPPPP3/9/9/9/9/9/9/9 w 2P 1");
	assert_false(pos_declaration_ok(&pos));
}

/* Double check: only king moves; a block or capture of one checker is not enough. */
static void test_rules__double_check_allows_only_king_moves(void **state)
{
	(void)state;
	static Position pos;
	RuleCase c = {"legal", "double_check", "", "", "", ""};
	parse_spec(&pos, &c, "8k/4r4/6b2/7G1/4K4/9/9/9/9 b - 1");
	assert_true(pos_in_check(&pos));
	assert_int_equal(bb_count(pos_st(&pos)->checkers), 2);
	Move moves[MOVEGEN_MAX];
	int n = movegen_legal(&pos, moves);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		assert_false(move_is_drop(moves[i]));
		assert_int_equal(move_from(moves[i]), pos.king_sq[BLACK]);
	}
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules__legal_cases),
	    cmocka_unit_test(test_rules__repetition_cases),
	    cmocka_unit_test(test_rules__perpetual_check_by_white_loses_for_white),
	    cmocka_unit_test(test_rules__dead_piece_and_promotion_cases),
	    cmocka_unit_test(test_rules__uchifuzume_cases),
	    cmocka_unit_test(test_rules__declaration_cases),
	    cmocka_unit_test(test_rules__declaration_white_needs_27),
	    cmocka_unit_test(test_rules__double_check_allows_only_king_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
