/*
 * tests/minimax/test_minimax.c — joseki minimax: agreement with peta-shock on
 * the YaneuraOu fixtures and constructed DB2016 inputs (import, minimax,
 * export --moves all, compared move by move with joseki peta-shock); hand-built
 * books with known values (a chain, transpositions not listed in any record,
 * a repetition cycle under per-side draw values, perpetual check); incremental runs equal to
 * --full after random batches of new results (walks from the start position, from a rook
 * checking a lone king, from bare kings, with moves marked avoided and unmarked), after
 * `joseki think`, after killed runs; when an
 * incremental run must do the whole book; the command's errors.
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
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "minimax/bookmm.h"
#include "minimax/bookmm_priv.h"
#include "minimax/mmfile.h"
#include "shogi/bigmem.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define FIX "tests/data/yaneuraou-db/rshogi_book_backprop_"
#define HDR "#YANEURAOU-DB2016 1.00\n"
#define STARTPOS "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"

/* ---- DB2016 text → sorted "board side hand move value depth" lines ---------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every move line of a book as "<sfen without ply> <move> <value> <depth>", sorted. */
static char **book_lines(const char *text, size_t *n_out)
{
	size_t cap = 64, n = 0;
	char **v = malloc(cap * sizeof *v);
	char cur[256] = "";
	char *copy = strdup(text);
	for (char *save = NULL, *line = strtok_r(copy, "\r\n", &save); line;
	     line = strtok_r(NULL, "\r\n", &save)) {
		if (line[0] == '#') continue;
		if (!strncmp(line, "sfen ", 5)) {
			snprintf(cur, sizeof cur, "%s", line + 5);
			char *sp = strrchr(cur, ' ');
			assert_non_null(sp);
			*sp = '\0';
			continue;
		}
		char mv[16], ponder[16];
		int value, depth;
		assert_true(sscanf(line, "%15s %15s %d %d", mv, ponder, &value, &depth) == 4);
		if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
		char buf[512];
		snprintf(buf, sizeof buf, "%s %s %d %d", cur, mv, value, depth);
		v[n++] = strdup(buf);
	}
	free(copy);
	qsort(v, n, sizeof *v, cmp_str);
	*n_out = n;
	return v;
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) free(v[i]);
	free(v);
}

/* import → minimax → export --moves all must give peta-shock's values and depths. */
static void check_agreement(const char *in_path)
{
	char *dir = ts_mkdtemp();
	char *err = NULL;
	int rc = ts_runf(NULL, &err, "%s import %s/book %s --quiet", ts_joseki(), dir, in_path);
	if (rc != 0) fail_msg("import: %s", err);
	free(err);
	/* The graph's arithmetic against peta-shock's: every position an inner node. */
	rc = ts_runf(NULL, &err, "%s minimax %s/book --leaves games", ts_joseki(), dir);
	if (rc != 0) fail_msg("minimax: %s", err);
	free(err);
	rc = ts_runf(NULL, &err, "%s export %s/book %s/exp.db --moves all --depth-field distance",
	             ts_joseki(), dir, dir);
	if (rc != 0) fail_msg("export: %s", err);
	free(err);
	rc = ts_runf(NULL, &err, "%s peta-shock %s %s/ps.db --quiet", ts_joseki(), in_path, dir);
	if (rc != 0) fail_msg("peta-shock: %s", err);
	free(err);
	char path[512];
	snprintf(path, sizeof path, "%s/exp.db", dir);
	char *exp = ts_read_file(path, NULL);
	snprintf(path, sizeof path, "%s/ps.db", dir);
	char *ps = ts_read_file(path, NULL);
	assert_non_null(exp);
	assert_non_null(ps);
	size_t ne, np;
	char **le = book_lines(exp, &ne), **lp = book_lines(ps, &np);
	assert_true(np > 0);
	for (size_t i = 0; i < ne && i < np; i++)
		if (strcmp(le[i], lp[i]))
			fail_msg("export has '%s', peta-shock '%s'", le[i], lp[i]);
	assert_int_equal(ne, np);
	free_lines(le, ne);
	free_lines(lp, np);
	free(exp);
	free(ps);
	ts_rmtree(dir);
	free(dir);
}

static void check_agreement_text(const char *text)
{
	char *dir = ts_mkdtemp();
	char path[512];
	snprintf(path, sizeof path, "%s/in.db", dir);
	assert_int_equal(ts_write_file(path, text, strlen(text)), 0);
	check_agreement(path);
	ts_rmtree(dir);
	free(dir);
}

static void test_minimax__agrees_with_peta_shock_on_the_transposition_fixture(void **state)
{
	(void)state;
	check_agreement(FIX "yo_in.db");
}

static void test_minimax__agrees_with_peta_shock_on_the_perpetual_check_fixture(void **state)
{
	(void)state;
	check_agreement(FIX "check_in.db");
}

static const char *cycle_book(int e1, int e2, int e3, int e4)
{
	static char buf[1024];
	snprintf(buf, sizeof buf,
	         HDR "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1\n5i4i none 0 0\n5i6i none %d 0\n"
	             "sfen 4k4/9/9/9/9/9/9/9/5K3 w - 2\n5a4a none 0 0\n5a6a none %d 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/5K3 b - 3\n4i5i none 0 0\n4i3i none %d 0\n"
	             "sfen 5k3/9/9/9/9/9/9/9/4K4 w - 4\n4a5a none 0 0\n4a3a none %d 0\n",
	         e1, e2, e3, e4);
	return buf;
}

static void test_minimax__agrees_with_peta_shock_on_cycles_and_perpetual_check(void **state)
{
	(void)state;
	check_agreement_text(cycle_book(-100, -100, -100, -100));
	check_agreement_text(cycle_book(-100, 50, -100, 50));
	check_agreement_text(cycle_book(30, -100, -20, 70));
	check_agreement_text(
	    HDR "sfen 4k4/9/4R4/9/9/9/9/9/K8 w - 1\n5a4a none 0 17 3\n5a6a none -200 11 1\n"
	        "sfen 5k3/9/4R4/9/9/9/9/9/K8 b - 2\n5c4c none 0 19 3\n"
	        "sfen 5k3/9/5R3/9/9/9/9/9/K8 w - 3\n4a5a none 0 21 3\n4a3a none -200 15 1\n"
	        "sfen 4k4/9/5R3/9/9/9/9/9/K8 b - 4\n4c5c none 0 23 3\n");
	/* A chain and an unlisted transposition from the start position. */
	check_agreement_text(
	    HDR STARTPOS
	    "\n7g7f none 0 0\n"
	    "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
	    "3c3d none 0 0\n"
	    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3\n"
	    "2g2f none 0 0\n"
	    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P4P1/PP1PPPP1P/1B5R1/LNSGKGSNL w - 4\n"
	    "8c8d none 40 0\n4a3b none -30 0\n"
	    "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL b - 3\n"
	    "6i7h none -70 0\n");
}

/* ---- hand-built books through the library -------------------------------------- */

typedef struct {
	const char *usi;
	int eval;
} EvalMove;

/* A record of the moves given; thought at think_depth when that is not 0. */
static void put_record_at(BookDB *db, const char *sfen, const EvalMove *moves, int n,
                          int think_depth)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	bookdb_record_init(rec, pos);
	if (think_depth) {
		rec->flags |= BOOKDB_REC_THOUGHT;
		rec->think_depth = (uint8_t)think_depth;
	}
	for (int k = 0; k < n; k++) {
		Move m;
		assert_int_equal(
		    usi_move_parse_legal(&m, pos, moves[k].usi, strlen(moves[k].usi), NULL), 0);
		BookMove *bm = &rec->moves[rec->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = m;
		bm->flags = BOOKDB_MOVE_EVAL;
		bm->eval = (int16_t)moves[k].eval;
		bm->depth = 12;
	}
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	free(pos);
	free(rec);
}

static void put_record(BookDB *db, const char *sfen, const EvalMove *moves, int n)
{
	put_record_at(db, sfen, moves, n, 0);
}

/* The stored value and dist of one move of a position (fails if absent). */
static void stored(BookDB *db, const char *sfen, const char *usi, int *value, int *dist)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	Move m;
	assert_int_equal(usi_move_parse_legal(&m, pos, usi, strlen(usi), NULL), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_get(rec, txn, pos_key(pos)), 0);
	bookdb_txn_abort(txn);
	assert_true(rec->flags & BOOKDB_REC_MINIMAX);
	int k = 0;
	while (k < rec->nmoves && rec->moves[k].move != m) k++;
	if (k == rec->nmoves) fail_msg("%s: move %s not stored", sfen, usi);
	*value = rec->moves[k].value;
	*dist = rec->moves[k].dist;
	free(pos);
	free(rec);
}

static void expect(BookDB *db, const char *sfen, const char *usi, int value, int dist)
{
	int v, d;
	stored(db, sfen, usi, &v, &d);
	if (v != value || d != dist)
		fail_msg("%s %s: value %d dist %d, expected %d %d", sfen, usi, v, d, value, dist);
}

static BookDB *new_book(char **dir)
{
	*dir = ts_mkdtemp();
	char path[512];
	snprintf(path, sizeof path, "%s/book", *dir);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	assert_int_equal(bookdb_open(&db, path, &o, NULL), 0);
	return db;
}

#define S0 "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"
#define SA "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2"
#define SB "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3"
#define SX "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P4P1/PP1PPPP1P/1B5R1/LNSGKGSNL w - 4"
#define SC "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL w - 2"
#define SD "sfen lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/7P1/PPPPPPP1P/1B5R1/LNSGKGSNL b - 3"

static void test_minimax__chains_and_unlisted_transpositions_get_their_values(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = new_book(&dir);
	/* S0 -7g7f- A -3c3d- B -2g2f- X (leaf 8c8d +40 for White); C = S0+2g2f and
	 * D = C+3c3d list nothing that reaches the book: S0→C, C→D, D→X are
	 * transpositions. D also has a poor leaf of its own. */
	put_record(db, S0, (EvalMove[]){{"7g7f", 10}}, 1);
	put_record(db, SA, (EvalMove[]){{"3c3d", 5}}, 1);
	put_record(db, SB, (EvalMove[]){{"2g2f", 0}}, 1);
	put_record(db, SX, (EvalMove[]){{"8c8d", 40}, {"4a3b", -30}}, 2);
	put_record(db, SC, NULL, 0);
	put_record(db, SD, (EvalMove[]){{"6i7h", -70}}, 1);
	BookmmOptions opt = {.policy.leaves = BOOKMM_LEAVES_GAMES};
	BookmmStats st;
	char err[BOOKMM_ERRLEN] = "";
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.positions, 6);
	assert_int_equal(st.valued, 6);
	assert_int_equal(st.settled, 6);
	assert_int_equal(st.cyclic, 0);
	assert_true(st.has_root);
	assert_int_equal(st.root_value, -40);
	expect(db, SX, "8c8d", 40, 0);
	expect(db, SX, "4a3b", -30, 0);
	expect(db, SB, "2g2f", -40, 1);
	expect(db, SD, "7g7f", -40, 1);
	expect(db, SD, "6i7h", -70, 0);
	expect(db, SA, "3c3d", 40, 2);
	expect(db, SC, "3c3d", 40, 2);
	expect(db, S0, "7g7f", -40, 3);
	expect(db, S0, "2g2f", -40, 3); /* added to the record as a transposition */
	/* Nothing changed: a second run rewrites nothing; --full rewrites all. */
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.rewritten, 0);
	opt.full = true;
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.rewritten, 6);
	/* A new, better leaf for Black deep down changes the values above it. */
	put_record(db, SX, (EvalMove[]){{"8c8d", -20}, {"4a3b", -30}}, 2);
	opt.full = false;
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.root_value, 20);
	expect(db, S0, "7g7f", 20, 3);
	expect(db, SD, "7g7f", 20, 1);
	assert_true(st.rewritten >= 5);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

#define P0 "sfen 4k4/9/9/9/9/9/9/9/4K4 b - 1"
#define P1 "sfen 4k4/9/9/9/9/9/9/9/5K3 w - 2"
#define P2 "sfen 5k3/9/9/9/9/9/9/9/5K3 b - 3"
#define P3 "sfen 5k3/9/9/9/9/9/9/9/4K4 w - 4"

static BookDB *cycle_db(char **dir)
{
	BookDB *db = new_book(dir);
	/* Every exit costs its side 100; the cycle moves have no eval. */
	put_record(db, P0, (EvalMove[]){{"5i6i", -100}}, 1);
	put_record(db, P1, (EvalMove[]){{"5a6a", -100}}, 1);
	put_record(db, P2, (EvalMove[]){{"4i3i", -100}}, 1);
	put_record(db, P3, (EvalMove[]){{"4a3a", -100}}, 1);
	return db;
}

static void test_minimax__per_side_draw_values_decide_who_repeats(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = cycle_db(&dir);
	BookmmOptions opt = {.policy.leaves = BOOKMM_LEAVES_GAMES};
	BookmmStats st;
	char err[BOOKMM_ERRLEN] = "";
	/* Both sides prefer a draw (0) to an exit (-100): repetition forever. */
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.cyclic, 4);
	assert_false(st.has_root);
	expect(db, P0, "5i4i", 0, 9999);
	expect(db, P0, "5i6i", -100, 0);
	expect(db, P1, "5a4a", 0, 9999);
	/* Black values a draw at -150: Black would rather exit (-100), so White,
	 * who still likes the draw, gets +100 by steering into Black's exits. */
	opt.draw_black = -150;
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	expect(db, P0, "5i6i", -100, 0);
	expect(db, P1, "5a6a", -100, 0);
	/* The losing side prefers the longer of equal lines (§7.7), so Black
	 * delays its exit round the cycle for ever: the values are exact, the
	 * distances "repeats forever". */
	expect(db, P0, "5i4i", -100, 9999);
	expect(db, P1, "5a4a", 100, 9999);
	expect(db, P2, "4i5i", -100, 9999);
	expect(db, P3, "4a5a", 100, 9999);
	/* White values a draw at +30 and Black at -30 (White is the stronger
	 * side): both still repeat, each seeing its own draw value. */
	opt.draw_black = -30;
	opt.draw_white = 30;
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	expect(db, P0, "5i4i", -30, 9999);
	expect(db, P1, "5a4a", 30, 9999);
	expect(db, P2, "4i5i", -30, 9999);
	expect(db, P3, "4a5a", 30, 9999);
	bookdb_free(db);
	/* joseki stats shows what the last run found on cycles. */
	json_t *js = ts_run_json(0, "%s stats %s/book --json", ts_joseki(), dir);
	assert_int_equal(ts_jint(js, "cyclic"), 4);
	json_decref(js);
	/* Minimax has run; the book has no start position: its value is
	 * missing for that reason, not for want of a run. */
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s stats %s/book", ts_joseki(), dir), 0);
	if (!strstr(out, "root_value         - (the start position has no value"))
		fail_msg("stats said: %s", out);
	free(out);
	ts_rmtree(dir);
	free(dir);
}

#define Q1 "sfen 4k4/9/4R4/9/9/9/9/9/K8 w - 1"
#define Q2 "sfen 5k3/9/4R4/9/9/9/9/9/K8 b - 2"
#define Q3 "sfen 5k3/9/5R3/9/9/9/9/9/K8 w - 3"
#define Q4 "sfen 4k4/9/5R3/9/9/9/9/9/K8 b - 4"

static void test_minimax__perpetual_check_loses_for_the_checker(void **state)
{
	(void)state;
	char *dir;
	BookDB *db = new_book(&dir);
	/* Black's rook checks for ever (Q2, Q4 have no other move in the book);
	 * White's only exits lose 200. */
	put_record(db, Q1, (EvalMove[]){{"5a4a", 0}, {"5a6a", -200}}, 2);
	put_record(db, Q2, (EvalMove[]){{"5c4c", 0}}, 1);
	put_record(db, Q3, (EvalMove[]){{"4a5a", 0}, {"4a3a", -200}}, 2);
	put_record(db, Q4, (EvalMove[]){{"4c5c", 0}}, 1);
	BookmmOptions opt = {.policy.leaves = BOOKMM_LEAVES_GAMES};
	BookmmStats st;
	char err[BOOKMM_ERRLEN] = "";
	if (bookmm_run(&st, db, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
	assert_int_equal(st.cyclic, 4);
	expect(db, Q1, "5a4a", 32000, 9999);
	expect(db, Q1, "5a6a", -200, 0);
	expect(db, Q2, "5c4c", -32000, 9997);
	expect(db, Q3, "4a5a", 32000, 9999);
	expect(db, Q4, "4c5c", -32000, 9997);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* ---- incremental equals --full ------------------------------------------------- */

/* A move for random walks: mostly king and gold shuffles, so lines meet
 * again (transpositions) and come back (repetition cycles). */
static Move pick_move(const Position *pos, uint64_t *rng, bool checks)
{
	Move legal[MOVEGEN_MAX], quiet[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal), nq = 0;
	if (n == 0) return MOVE_NONE;
	if (checks && ts_rand(rng) % 4 != 0) {
		for (int k = 0; k < n; k++)
			if (pos_gives_check(pos, legal[k])) quiet[nq++] = legal[k];
		if (nq) return quiet[ts_rand(rng) % (uint64_t)nq];
	}
	for (int k = 0; k < n; k++) {
		Move m = legal[k];
		if (move_is_drop(m)) continue;
		PieceType pt = piece_type(pos->board[move_from(m)]);
		if (pt == KING || pt == GOLD || pt == ROOK) quiet[nq++] = m;
	}
	if (nq && ts_rand(rng) % 4 != 0) return quiet[ts_rand(rng) % (uint64_t)nq];
	return legal[ts_rand(rng) % (uint64_t)n];
}

/* Under the thought leaf policy, add_result marks the record thought at a
 * random depth 0..2 (0 and 1 below and at the default --min-depth), so that
 * positions become inner nodes, or stay leaves, batch by batch. */
static bool g_mark_thought;
/* Non-zero: the think depth add_result marks (else a random 0..2), so that a
 * cycle planted on purpose is made of inner nodes under the thought policy. */
static uint8_t g_force_depth;

/* Stores an eval of move m at pos in both books (merged into the record). */
static void add_result(BookDB *a, BookDB *b, const Position *pos, Move m, int eval)
{
	static uint64_t depth_rng = 12345;
	uint8_t depth = (uint8_t)(ts_rand(&depth_rng) % 3);
	if (g_force_depth) depth = g_force_depth;
	BookRecord *rec = malloc(sizeof *rec);
	BookDB *dbs[2] = {a, b};
	for (int d = 0; d < 2; d++) {
		BookTxn *txn;
		assert_int_equal(bookdb_txn_begin(&txn, dbs[d], true), 0);
		BookMove *bm = ts_record_move(rec, txn, pos, m);
		bm->flags |= BOOKDB_MOVE_EVAL;
		bm->eval = (int16_t)eval;
		bm->depth = 10;
		if (g_mark_thought &&
		    (!(rec->flags & BOOKDB_REC_THOUGHT) || rec->think_depth < depth)) {
			rec->flags |= BOOKDB_REC_THOUGHT;
			rec->think_depth = depth;
		}
		assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
		assert_int_equal(bookdb_txn_commit(txn), 0);
	}
	free(rec);
}

/* Where the random walks start: the start position, a rook checking a lone
 * king (perpetual-check loops), kings alone (repetition cycles). */
static const char *const ROOTS[] = {NULL, "4k4/9/4R4/9/9/9/9/9/K8 w - 1",
                                    "4k4/9/9/9/9/9/9/9/4K4 b - 1"};

/* A random one of ROOTS set up in pos; its SFEN (NULL: the start position). */
static const char *random_root(Position *pos, uint64_t *rng)
{
	const char *root = ROOTS[ts_rand(rng) % (sizeof ROOTS / sizeof *ROOTS)];
	if (root)
		assert_int_equal(sfen_parse(pos, root, NULL, NULL), 0);
	else
		pos_set_startpos(pos);
	return root;
}

/* An eval of a random move at the end of a random walk from a random root, in
 * both books. */
/* Whether it wrote one (a line may end where no move is legal). */
static bool random_result(BookDB *a, BookDB *b, uint64_t *rng)
{
	Position *pos = malloc(sizeof *pos);
	const char *root = random_root(pos, rng);
	int len = (int)(ts_rand(rng) % (root ? 12 : 8));
	/* From the rook's root, checks are preferred: in-check positions that
	 * meet again make perpetual-check loops. */
	bool checks = root == ROOTS[1];
	for (int k = 0; k < len; k++) {
		Move m = pick_move(pos, rng, checks);
		if (m == MOVE_NONE) break;
		pos_do_move(pos, m);
	}
	Move m = pick_move(pos, rng, checks);
	if (m != MOVE_NONE) add_result(a, b, pos, m, (int)(ts_rand(rng) % 9) * 40 - 160);
	free(pos);
	return m != MOVE_NONE;
}

/* A walk of checks and evasions from the rook's root with a result at every
 * position it passes: the lone king's few squares make it meet itself, so the
 * book gets perpetual-check loops, grown a little with every batch. */
static void check_walk(BookDB *a, BookDB *b, uint64_t *rng)
{
	Position *pos = malloc(sizeof *pos);
	assert_int_equal(sfen_parse(pos, ROOTS[1], NULL, NULL), 0);
	int len = 2 + (int)(ts_rand(rng) % 14);
	for (int k = 0; k < len; k++) {
		Move m = pick_move(pos, rng, true);
		if (m == MOVE_NONE) break;
		if (ts_rand(rng) % 3 == 0)
			add_result(a, b, pos, m, (int)(ts_rand(rng) % 9) * 40 - 160);
		pos_do_move(pos, m);
	}
	free(pos);
}

/* Toggles the avoided mark (joseki prune) of a random move in about one
 * record in 12, the same in both books (their records are equal after each
 * run); returns how many were toggled. */
static size_t random_avoid(BookDB *a, BookDB *b, uint64_t *rng)
{
	BookTxn *t;
	BookIter *it;
	Key *keys = NULL, k;
	size_t n = 0, cap = 0, done = 0;
	const uint8_t *v;
	size_t len;
	assert_int_equal(bookdb_txn_begin(&t, a, false), 0);
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	while (bookdb_iter_next(it, &k, &v, &len) == 1) {
		if (ts_rand(rng) % 12) continue;
		if (n == cap) keys = realloc(keys, (cap = cap * 2 + 16) * sizeof *keys);
		keys[n++] = k;
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	BookRecord *rec = malloc(sizeof *rec);
	for (size_t i = 0; i < n; i++) {
		uint64_t pick = ts_rand(rng);
		BookDB *books[2] = {a, b};
		for (int j = 0; j < 2; j++) {
			assert_int_equal(bookdb_txn_begin(&t, books[j], true), 0);
			assert_int_equal(bookdb_get(rec, t, keys[i]), 0);
			if (rec->nmoves) {
				rec->moves[pick % rec->nmoves].flags ^= BOOKDB_MOVE_AVOIDED;
				assert_int_equal(bookdb_put(t, keys[i], rec), 0);
				done += j == 0;
			}
			assert_int_equal(bookdb_txn_commit(t), 0);
		}
	}
	free(rec);
	free(keys);
	return done;
}

/* The king shuffle 5i4h 5a4b 4h5i 4b5a from the start position: a cycle. */
static void king_cycle(BookDB *a, BookDB *b, uint64_t *rng)
{
	static const char *line[] = {"5i4h", "5a4b", "4h5i", "4b5a"};
	Position *pos = malloc(sizeof *pos);
	pos_set_startpos(pos);
	/* Thought deep enough to be inner nodes under any policy: the cycle is
	 * there whatever the seed (a depth-0 mark would cut it). */
	g_force_depth = 2;
	for (int k = 0; k < 4; k++) {
		Move m;
		assert_int_equal(usi_move_parse_legal(&m, pos, line[k], 4, NULL), 0);
		add_result(a, b, pos, m, (int)(ts_rand(rng) % 9) * 40 - 160);
		pos_do_move(pos, m);
	}
	g_force_depth = 0;
	free(pos);
}

static int cmp_move(const void *x, const void *y)
{
	const BookMove *a = x, *b = y;
	return (a->move > b->move) - (a->move < b->move);
}

/* The bytes of a record with its moves in move order (order is history: a
 * move appended by one run and one appended by a result can come either way). */
static size_t canonical(uint8_t *out, const uint8_t *v, size_t len)
{
	BookRecord *r = malloc(sizeof *r);
	assert_int_equal(bookdb_record_decode(r, v, len), 0);
	qsort(r->moves, r->nmoves, sizeof *r->moves, cmp_move);
	int n = bookdb_record_encode(out, BOOKDB_RECORD_MAX, r);
	assert_true(n > 0);
	free(r);
	return (size_t)n;
}

/* A game's line in both books, as ingest stores one: a walk of 4 to 13 plies
 * from a random root, every position with the move played, counted, and no
 * value. */
static void game_line(BookDB *a, BookDB *b, uint64_t *rng)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	random_root(pos, rng);
	int len = 4 + (int)(ts_rand(rng) % 10);
	for (int ply = 0; ply < len; ply++) {
		Move m = pick_move(pos, rng, false);
		if (m == MOVE_NONE) break;
		BookDB *dbs[2] = {a, b};
		for (int d = 0; d < 2; d++) {
			BookTxn *txn;
			assert_int_equal(bookdb_txn_begin(&txn, dbs[d], true), 0);
			BookMove *bm = ts_record_move(rec, txn, pos, m);
			bm->flags |= BOOKDB_MOVE_STATS;
			bm->count++;
			assert_int_equal(bookdb_put(txn, pos_key(pos), rec), 0);
			assert_int_equal(bookdb_txn_commit(txn), 0);
		}
		pos_do_move(pos, m);
	}
	free(rec);
	free(pos);
}

/* Both books hold the same bytes for every position (exact), or the same
 * record up to the order of its moves. */
static void same_books_as(BookDB *a, BookDB *b, bool exact)
{
	BookTxn *ta, *tb;
	BookIter *ia, *ib;
	uint8_t *ca = malloc(BOOKDB_RECORD_MAX), *cb = malloc(BOOKDB_RECORD_MAX);
	assert_int_equal(bookdb_txn_begin(&ta, a, false), 0);
	assert_int_equal(bookdb_txn_begin(&tb, b, false), 0);
	assert_int_equal(bookdb_iter_open(&ia, ta), 0);
	assert_int_equal(bookdb_iter_open(&ib, tb), 0);
	for (;;) {
		Key ka, kb;
		const uint8_t *va, *vb;
		size_t la, lb;
		int ra = bookdb_iter_next(ia, &ka, &va, &la),
		    rb = bookdb_iter_next(ib, &kb, &vb, &lb);
		assert_int_equal(ra, rb);
		if (ra == 0) break;
		assert_true(key_equal(ka, kb));
		if (!exact) {
			la = canonical(ca, va, la);
			lb = canonical(cb, vb, lb);
			va = ca;
			vb = cb;
		}
		if (la != lb || memcmp(va, vb, la)) {
			char hex[KEY_HEX_LEN];
			key_to_hex(ka, hex);
			BookRecord *x = malloc(sizeof *x), *y = malloc(sizeof *y);
			int dx = bookdb_record_decode(x, va, la),
			    dy = bookdb_record_decode(y, vb, lb);
			for (int k = 0; dx == 0 && dy == 0 && k < x->nmoves && k < y->nmoves; k++)
				print_message("  move %d: %04x/%04x value %d/%d dist %d/%d\n", k,
				              x->moves[k].move, y->moves[k].move, x->moves[k].value,
				              y->moves[k].value, x->moves[k].dist,
				              y->moves[k].dist);
			if (getenv("MM_DEBUG") && dx == 0) {
				Position *pp = malloc(sizeof *pp);
				assert_int_equal(bookdb_record_position(pp, x, NULL), 0);
				char sf[200];
				sfen_write(pp, sf, sizeof sf);
				print_message("  P flags %d depth %d sfen %s\n", x->flags,
				              x->think_depth, sf);
				for (int k = 0; k < x->nmoves; k++) {
					Key ck = pos_key_after(pp, x->moves[k].move);
					BookRecord *ca2 = malloc(sizeof *ca2),
					           *cb2 = malloc(sizeof *cb2);
					BookTxn *t1, *t2;
					assert_int_equal(bookdb_txn_begin(&t1, a, false), 0);
					assert_int_equal(bookdb_txn_begin(&t2, b, false), 0);
					int g1 = bookdb_get(ca2, t1, ck),
					    g2 = bookdb_get(cb2, t2, ck);
					print_message(
					    "  move %d %04x eval %d flags %d: child %d/%d", k,
					    x->moves[k].move, x->moves[k].eval, x->moves[k].flags,
					    g1, g2);
					if (!g1 && !g2) {
						print_message(
						    " cflags %d/%d depth %d/%d:", ca2->flags,
						    cb2->flags, ca2->think_depth, cb2->think_depth);
						for (int q = 0; q < ca2->nmoves; q++)
							print_message(" [%04x e%d f%d v%d/%d d%d]",
							              ca2->moves[q].move,
							              ca2->moves[q].eval,
							              ca2->moves[q].flags,
							              ca2->moves[q].value,
							              cb2->moves[q].value,
							              ca2->moves[q].dist);
					}
					print_message("\n");
					bookdb_txn_abort(t1);
					bookdb_txn_abort(t2);
					free(ca2);
					free(cb2);
				}
			}
			fail_msg("record %s differs: %zu bytes, %zu expected", hex, la, lb);
		}
	}
	bookdb_iter_free(ia);
	bookdb_iter_free(ib);
	bookdb_txn_abort(ta);
	bookdb_txn_abort(tb);
	free(ca);
	free(cb);
}

static void same_books(BookDB *a, BookDB *b)
{
	same_books_as(a, b, true);
}

/* Two books in their own test directories (dir/book), fed the same results:
 * one gets incremental runs, the other whole-book runs. */
typedef struct {
	char *da, *db;
	BookDB *a, *b;
} Twins;

static void twins_open(Twins *t, uint64_t changes_max)
{
	if (!t->da) t->da = ts_mkdtemp();
	if (!t->db) t->db = ts_mkdtemp();
	char pa[600], pb[600];
	snprintf(pa, sizeof pa, "%s/book", t->da);
	snprintf(pb, sizeof pb, "%s/book", t->db);
	BookDBOptions o = {.no_sync = true, .changes_max = changes_max};
	assert_int_equal(bookdb_open(&t->a, pa, &o, NULL), 0);
	o.changes_max = 0;
	assert_int_equal(bookdb_open(&t->b, pb, &o, NULL), 0);
}

static void twins_close(Twins *t)
{
	bookdb_free(t->a);
	bookdb_free(t->b);
	t->a = t->b = NULL;
}

static void twins_free(Twins *t)
{
	twins_close(t);
	ts_rmtree(t->da);
	ts_rmtree(t->db);
	free(t->da);
	free(t->db);
}

/* Opens the graph db (in dir/book) keeps for its state, which st gets (if
 * not NULL). */
static void kept_view(MmView *v, BookmmState *st, BookDB *db, const char *dir)
{
	BookTxn *txn;
	BookmmState own;
	char path[600], err[MMFILE_ERRLEN];
	if (!st) st = &own;
	snprintf(path, sizeof path, "%s/book", dir);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookmm_state_get(st, txn), 0);
	bookdb_txn_abort(txn);
	if (mmfile_open(v, path, st->stamp, st->journal_len, err) != 0) fail_msg("%s", err);
}

/* The flags of a position (an SFEN) in the graph db's last run kept. */
static uint8_t kept_flags(BookDB *db, const char *dir, const char *sfen)
{
	MmView v;
	Position *pos = malloc(sizeof *pos);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	kept_view(&v, NULL, db, dir);
	uint32_t i = mmfile_find(&v, pos_key(pos));
	assert_int_not_equal(i, MM_NONE);
	uint8_t f = mmfile_flags(&v, i);
	mmfile_close(&v);
	free(pos);
	return f;
}

/* The twins' kept graphs have the same nodes with the same flags (on a
 * perpetual-check loop, surviving it, ...): what the records do not show. */
static void same_graph_flags(Twins *t)
{
	MmView va, vb;
	kept_view(&va, NULL, t->a, t->da);
	kept_view(&vb, NULL, t->b, t->db);
	assert_int_equal(mmfile_count(&va), mmfile_count(&vb));
	for (uint32_t i = 0; i < mmfile_count(&va); i++) {
		uint32_t j = mmfile_find(&vb, mmfile_key(&va, i));
		assert_int_not_equal(j, MM_NONE);
		if (mmfile_flags(&va, i) != mmfile_flags(&vb, j)) {
			char hex[KEY_HEX_LEN];
			key_to_hex(mmfile_key(&va, i), hex);
			fail_msg("%s: flags %#x incremental, %#x whole-book", hex,
			         mmfile_flags(&va, i), mmfile_flags(&vb, j));
		}
	}
	mmfile_close(&va);
	mmfile_close(&vb);
}

static void run_ok(BookmmStats *st, BookDB *db, const BookmmOptions *opt)
{
	char err[BOOKMM_ERRLEN] = "";
	if (bookmm_run(st, db, opt, err) != 0) fail_msg("minimax: %s", err);
}

/* The incremental run on t's first book, the whole-book one on its second:
 * the books come out the same. */
static void run_twins(Twins *t, const BookmmOptions *inc, const BookmmOptions *full)
{
	BookmmStats sa, sb;
	run_ok(&sa, t->a, inc);
	run_ok(&sb, t->b, full);
	same_books(t->a, t->b);
}

/* Gives one move of a position in both books the mark flag
 * (BOOKDB_MOVE_AVOIDED, _PREFERRED, or 0: none). */
static void mark_move(BookDB *a, BookDB *b, const char *sfen, const char *usi, uint8_t flag)
{
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_int_equal(sfen_parse(pos, sfen, NULL, NULL), 0);
	Move m;
	assert_int_equal(usi_move_parse_legal(&m, pos, usi, strlen(usi), NULL), 0);
	BookDB *books[2] = {a, b};
	for (int j = 0; j < 2; j++) {
		BookTxn *t;
		assert_int_equal(bookdb_txn_begin(&t, books[j], true), 0);
		assert_int_equal(bookdb_get(rec, t, pos_key(pos)), 0);
		int k = 0;
		while (k < rec->nmoves && rec->moves[k].move != m) k++;
		assert_true(k < rec->nmoves);
		rec->moves[k].flags = (uint8_t)((rec->moves[k].flags &
		                                 ~(BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED)) |
		                                flag);
		if (flag & BOOKDB_MOVE_PREFERRED)
			rec->moves[k].prefer_window = BOOKDB_PREFER_WINDOW;
		assert_int_equal(bookdb_put(t, pos_key(pos), rec), 0);
		assert_int_equal(bookdb_txn_commit(t), 0);
	}
	free(pos);
	free(rec);
}

/* Marks one move of a position avoided (joseki prune) in both books. */
static void avoid_move(BookDB *a, BookDB *b, const char *sfen, const char *usi)
{
	mark_move(a, b, sfen, usi, BOOKDB_MOVE_AVOIDED);
}

/* After 7g7f 3c3d, 8h2b (the bishop left unpromoted) and 8h2b+. */
#define SBU "sfen lnsgkgsnl/1r5B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4"
#define SBP "sfen lnsgkgsnl/1r5+B1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/7R1/LNSGKGSNL w B 4"

/* A bishop's capture left unpromoted is no part of a position's value where
 * its promotion has one, as a leaf or through the position it leads to: an
 * engine that lists every move ranks it above by noise, and the book plays
 * the promotion. When the promotion is avoided, it counts again. The
 * incremental run and the whole-book one agree. */
static void test_minimax__a_declined_promotion_is_not_the_value(void **state)
{
	(void)state;
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *books[2] = {t.a, t.b};
	for (int j = 0; j < 2; j++) {
		put_record(books[j], SA, (EvalMove[]){{"3c3d", 5}}, 1);
		put_record(books[j], SB,
		           (EvalMove[]){{"8h2b", 60}, {"8h2b+", 50}, {"2g2f", 0}, {"7i7h", -20}},
		           4);
	}
	BookmmOptions inc = {.policy.leaves = BOOKMM_LEAVES_GAMES}, full = inc;
	full.full = true;
	run_twins(&t, &inc, &full);
	expect(t.b, SA, "3c3d", -50, 1);
	expect(t.b, SB, "8h2b", 60, 0); /* its own analysis, shown */
	/* Through the positions they lead to: 8h2b +100, 8h2b+ +80. */
	for (int j = 0; j < 2; j++) {
		put_record(books[j], SBU, (EvalMove[]){{"3a2b", -100}}, 1);
		put_record(books[j], SBP, (EvalMove[]){{"3a2b", -80}}, 1);
	}
	run_twins(&t, &inc, &full);
	expect(t.b, SB, "8h2b+", 80, 1);
	expect(t.b, SA, "3c3d", -80, 2);
	/* The unpromoted capture preferred by hand (joseki prefer): the user's
	 * choice, a move as any. */
	mark_move(t.a, t.b, SB, "8h2b", BOOKDB_MOVE_PREFERRED);
	run_twins(&t, &inc, &full);
	expect(t.b, SB, "8h2b", 100, 1);
	expect(t.b, SA, "3c3d", -100, 2);
	mark_move(t.a, t.b, SB, "8h2b", 0);
	/* The promotion avoided: the unpromoted capture is played. */
	avoid_move(t.a, t.b, SB, "8h2b+");
	run_twins(&t, &inc, &full);
	expect(t.b, SB, "8h2b", 100, 1);
	expect(t.b, SA, "3c3d", -100, 2);
	twins_free(&t);
}

/* The check loop Q1..Q4 with a way into it from outside: T0 (White in check)
 * 6a5a to T1, whose 6c5c checks into Q1; P (not in check) also leads to T1.
 * T0 survives the loop extraction (a survivor two plies below it), so T1,
 * between two survivors, is on the loop. */
#define T0 "sfen 3k5/9/3R5/9/9/9/9/9/K8 w - 1"
#define T1 "sfen 4k4/9/3R5/9/9/9/9/9/K8 b - 2"
#define TP "sfen 9/4k4/3R5/9/9/9/9/9/K8 w - 1"

/* When T0 no longer leads to T1 (its move avoided), T1 leaves the loop
 * although nothing below it changed and it has no parent the run analyses
 * (P is not above T0): the incremental run must analyse it again all the
 * same. */
static void test_minimax__a_position_that_leaves_a_check_loop_from_above_is_analysed(void **state)
{
	(void)state;
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *books[2] = {t.a, t.b};
	for (int j = 0; j < 2; j++) {
		BookDB *db = books[j];
		put_record(db, Q1, (EvalMove[]){{"5a4a", 0}, {"5a6a", -200}}, 2);
		put_record(db, Q2, (EvalMove[]){{"5c4c", 0}}, 1);
		put_record(db, Q3, (EvalMove[]){{"4a5a", 0}, {"4a3a", -200}}, 2);
		put_record(db, Q4, (EvalMove[]){{"4c5c", 0}}, 1);
		put_record(db, T0, (EvalMove[]){{"6a5a", 0}, {"6a7a", -300}}, 2);
		put_record(db, T1, (EvalMove[]){{"6c5c", 0}}, 1);
		put_record(db, TP, (EvalMove[]){{"5b5a", 0}, {"5b4b", -400}}, 2);
	}
	BookmmOptions inc = {.policy.leaves = BOOKMM_LEAVES_GAMES}, full = inc;
	full.full = true;
	BookmmStats sa, sb;
	run_twins(&t, &inc, &full);
	same_graph_flags(&t);
	assert_true(kept_flags(t.b, t.db, T1) & MMF_LOOP);
	avoid_move(t.a, t.b, T0, "6a5a");
	run_ok(&sa, t.a, &inc);
	run_ok(&sb, t.b, &full);
	assert_true(sa.incremental);
	assert_true(sa.affected < sa.positions);
	same_books(t.a, t.b);
	/* T1 leaving the loop changes no value (its one move still checks into
	 * it) but its flags, which the next runs' loop extraction reads. */
	same_graph_flags(&t);
	assert_false(kept_flags(t.b, t.db, T1) & MMF_LOOP);
	twins_free(&t);
}

/* keep: the incremental runs take the graph from a keep (BookmmOptions.keep),
 * as the coordinator's do; fold_at (0: the default): the journal length past
 * which they fold it into a new graph file first. The runs keep their marks
 * as bytes and in a set by turns (BookmmOptions.marks). */
static void random_batches(const char *name, BookmmLeaves leaves, bool keep, uint64_t fold_at)
{
	uint64_t rng = ts_seed(name);
	g_mark_thought = leaves == BOOKMM_LEAVES_THOUGHT;
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *a = t.a, *b = t.b;
	BookmmOptions inc = {.draw_black = -(int)(rng % 50), .policy.leaves = leaves}, full = inc;
	full.full = true;
	inc.batch = 5; /* the incremental rewrite in many transactions */
	inc.fold_at = fold_at;
	if (keep) assert_non_null(inc.keep = bookmm_keep_new());
	BookmmStats sa, sb;
	size_t cyclic = 0, partial = 0, avoided = 0, folds = 0;
	for (int batch = 0; batch < 14; batch++) {
		int n = batch == 0 ? 150 : 1 + (int)(ts_rand(&rng) % 30);
		if (batch == 0) king_cycle(a, b, &rng);
		for (int k = 0; k < n; k++) random_result(a, b, &rng);
		for (int k = 0; k < n / 4 + 1; k++) check_walk(a, b, &rng);
		/* Moves marked avoided are unavailable to both runs alike. */
		if (batch > 0 && batch % 3 == 0) avoided += random_avoid(a, b, &rng);
		/* The marks as bytes and in a set, by turns. */
		inc.marks = batch % 2 ? BOOKMM_MARKS_SET : BOOKMM_MARKS_BYTES;
		run_ok(&sa, a, &inc);
		run_ok(&sb, b, &full);
		/* The first run has no earlier one to start from; the second
		 * reads the graph the first wrote, the others take it kept. */
		assert_int_equal(sa.incremental, batch > 0);
		/* A fold reads the new file it wrote. */
		assert_int_equal(sa.view_kept, keep && batch > 1 && !sa.folded_bytes);
		if (sa.folded_bytes) {
			assert_true(sa.incremental);
			assert_true(sa.folded_bytes > fold_at);
			folds++;
		}
		if (sa.incremental && sa.affected < sa.positions) partial++;
		assert_int_equal(sb.rewritten, sb.positions);
		assert_true(sa.rewritten <= sb.rewritten);
		assert_int_equal(sa.positions, sb.positions);
		assert_int_equal(sa.valued, sb.valued);
		assert_int_equal(sa.settled, sb.settled);
		assert_int_equal(sa.moves, sb.moves);
		assert_int_equal(sa.edges, sb.edges);
		assert_int_equal(sa.has_root, sb.has_root);
		assert_int_equal(sa.root_value, sb.root_value);
		same_books(a, b);
		same_graph_flags(&t);
		cyclic += sa.cyclic;
	}
	/* The walks must have exercised the cyclic part, and the incremental
	 * runs must have left most of the book alone. */
	assert_true(cyclic > 0);
	assert_true(partial > 0);
	assert_true(avoided > 0);
	/* Small journals are not folded: some runs folded, not all. */
	if (fold_at) assert_true(folds > 0 && folds < 13);
	if (!fold_at) assert_int_equal(folds, 0);
	run_ok(&sa, a, &inc);
	assert_true(sa.incremental);
	assert_int_equal(sa.changed, 0);
	assert_int_equal(sa.rewritten, 0);
	assert_int_equal(sa.view_kept, keep && !sa.folded_bytes);
	bookmm_keep_free(inc.keep);
	twins_free(&t);
	g_mark_thought = false;
}

/* The graph book's last whole-book run kept (in dir/book): every node's
 * edges lead where their moves lead, and the analysis's edges (into positions
 * with a value) are among them. Returns how many of its edges lead into
 * positions without a value (the analysis left them out). */
static size_t kept_graph_is_the_book(BookDB *db, const char *dir)
{
	BookmmState st;
	MmView v;
	kept_view(&v, &st, db, dir);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookIter *it;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	Key k;
	const uint8_t *val;
	size_t len, nodes = 0, edges = 0;
	while (bookdb_iter_next(it, &k, &val, &len) == 1) {
		uint32_t i = mmfile_find(&v, k);
		assert_int_not_equal(i, MM_NONE);
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		assert_int_equal(bookdb_record_position(pos, rec, NULL), 0);
		uint32_t n;
		const MmMove *m = mmfile_moves(&v, i, &n);
		for (uint32_t q = 0; q < n; q++) {
			if (m[q].next == MM_NONE) continue;
			assert_true(
			    key_equal(mmfile_key(&v, m[q].next), pos_key_after(pos, m[q].move)));
			edges++;
		}
		nodes++;
	}
	assert_int_equal(nodes, st.positions);
	assert_true(edges >= st.edges);
	bookdb_iter_free(it);
	mmfile_close(&v);
	bookdb_txn_abort(txn);
	free(rec);
	free(pos);
	return edges - st.edges;
}

/* Games' lines among the results: positions without a value, whose moves
 * the analysis leaves out and the kept graph holds. Incremental runs on the
 * kept graph equal whole-book runs, and the graph is the book's. */
static void test_minimax__positions_without_a_value_stay_in_the_kept_graph(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__positions_without_a_value_stay_in_the_kept_graph");
	Twins t = {0};
	twins_open(&t, 0);
	/* Every record an inner node: the lines are chains of edges. */
	BookmmOptions inc = {.policy.leaves = BOOKMM_LEAVES_GAMES}, full = inc;
	full.full = true;
	BookmmStats sa, sb;
	size_t left_out = 0;
	for (int batch = 0; batch < 6; batch++) {
		for (int k = 0; k < 40; k++) game_line(t.a, t.b, &rng);
		for (int k = 0; k < 30; k++) random_result(t.a, t.b, &rng);
		run_ok(&sa, t.a, &inc);
		run_ok(&sb, t.b, &full);
		assert_int_equal(sa.incremental, batch > 0);
		assert_true(sb.valued < sb.positions);
		assert_int_equal(sa.valued, sb.valued);
		assert_int_equal(sa.edges, sb.edges);
		same_books(t.a, t.b);
		left_out += kept_graph_is_the_book(t.b, t.db);
	}
	assert_true(left_out > 0);
	twins_free(&t);
}

static void test_minimax__incremental_equals_full_after_random_batches(void **state)
{
	(void)state;
	random_batches("test_minimax__incremental_equals_full_after_random_batches",
	               BOOKMM_LEAVES_GAMES, true, 0);
}

/* The same, the journal folded into a new graph file whenever it passes 4 KB
 * (with the graph kept in memory between the runs, as the coordinator's). */
static void test_minimax__incremental_equals_full_with_the_journal_folded(void **state)
{
	(void)state;
	random_batches("test_minimax__incremental_equals_full_with_the_journal_folded",
	               BOOKMM_LEAVES_GAMES, true, 4096);
}

/* The same under the thought leaf policy, with positions turning from leaves
 * into inner nodes between runs (their parents' moves into them change). */
static void test_minimax__incremental_equals_full_under_the_thought_policy(void **state)
{
	(void)state;
	random_batches("test_minimax__incremental_equals_full_under_the_thought_policy",
	               BOOKMM_LEAVES_THOUGHT, false, 0);
}

/* A batch of more changes than the incremental run reads ahead at a time
 * (256 records, from 512 on): its reads and rewrites go through the
 * read-ahead threads, once in a run that writes its own records (as joseki
 * minimax), once in a plan prepared and then applied in chunks of 100 (as
 * the coordinator's runs are), within a memory budget of 1 MiB: the changed
 * records are then taken 256 at a time for the lookups of their new
 * positions' parents, which the last chunk's lookups may find already
 * looked at. */
/* The positions the change log of db names (no run has consumed them yet). */
static size_t pending_changes(BookDB *db)
{
	BookTxn *t;
	BookChangesIter *it;
	KeyMap set;
	keymap_init_set(&set, false);
	uint64_t seq;
	Key k;
	int rc;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_changes_iter_open(&it, t, 0), 0);
	while ((rc = bookdb_changes_iter_next(it, &seq, &k)) == 1)
		assert_true(keymap_add(&set, k, NULL) >= 0);
	assert_int_equal(rc, 0);
	bookdb_changes_iter_free(it);
	bookdb_txn_abort(t);
	size_t n = set.n;
	keymap_free(&set);
	return n;
}

static void test_minimax__a_large_batch_read_ahead_equals_full(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__a_large_batch_read_ahead_equals_full");
	Twins t = {0};
	twins_open(&t, 0);
	BookmmOptions inc = {.policy.leaves = BOOKMM_LEAVES_GAMES}, full = inc;
	full.full = true;
	BookmmStats sa, sb;
	for (int k = 0; k < 20; k++) random_result(t.a, t.b, &rng);
	run_ok(&sa, t.a, &inc);
	run_ok(&sb, t.b, &full);
	for (int round = 0; round < 2; round++) {
		/* Results until 600 positions are changed (random lines meet
		 * again: 700 results had changed fewer than 512 with some seeds). */
		do {
			for (int k = 0; k < 100; k++) random_result(t.a, t.b, &rng);
		} while (pending_changes(t.a) < 600);
		if (round == 0) {
			run_ok(&sa, t.a, &inc);
		} else {
			BookMinimaxPlan *p = NULL;
			char why[BOOKMM_ERRLEN] = "";
			inc.memory = 1 << 20;
			assert_int_equal(bookmm_prepare(&p, &sa, t.a, &inc, why), 0);
			assert_non_null(p);
			BookTxn *txn;
			int done = 0;
			while (!done) {
				assert_int_equal(bookdb_txn_begin(&txn, t.a, true), 0);
				done = bookmm_plan_apply(p, txn, 100, why);
				assert_true(done >= 0);
				assert_int_equal(bookdb_txn_commit(txn), 0);
			}
			sa = *bookmm_plan_stats(p);
			bookmm_plan_free(p);
		}
		run_ok(&sb, t.b, &full);
		assert_true(sa.incremental);
		assert_true(sa.changed >= 512);
		assert_true(sa.rewritten >= 512);
		assert_int_equal(sa.valued, sb.valued);
		assert_int_equal(sa.root_value, sb.root_value);
		same_books(t.a, t.b);
		same_graph_flags(&t);
	}
	twins_free(&t);
}

static void append_file(const char *path, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "ab");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

static void test_minimax__incremental_runs_fall_back_to_the_whole_book_when_they_must(void **state)
{
	(void)state;
	uint64_t rng =
	    ts_seed("test_minimax__incremental_runs_fall_back_to_the_whole_book_when_they_must");
	char path[600];
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *a = t.a, *b = t.b;
	const char *da = t.da;
	BookmmOptions inc = {0}, full = {.full = true};
	BookmmStats sa, sb;
	for (int k = 0; k < 60; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	assert_false(sa.incremental);
	assert_non_null(strstr(sa.full_reason, "no earlier"));
	/* A tail past what the book recorded (a run killed before its commit)
	 * is ignored and overwritten. */
	snprintf(path, sizeof path, "%s/book/minimax.journal", da);
	append_file(path, "garbage", 7);
	/* Steps: incremental, incremental (the journal grows), journal cut
	 * short, graph file gone, other draw values, incremental, a fold killed
	 * before the book recorded its stamp, incremental again. */
	const char *why[] = {NULL,
	                     NULL,
	                     "minimax.journal",
	                     "minimax.graph",
	                     "draw values",
	                     NULL,
	                     "a fold killed before the book recorded it",
	                     NULL};
	for (int step = 0; step < 8; step++) {
		for (int k = 0; k < 10; k++) random_result(a, b, &rng);
		if (step == 6) {
			BookmmState s;
			MmView v;
			char err[MMFILE_ERRLEN], dir[600];
			kept_view(&v, &s, a, da);
			snprintf(dir, sizeof dir, "%s/book", da);
			assert_int_equal(mmfile_fold(&v, dir, s.stamp + 1, NULL, err), 0);
			mmfile_close(&v);
		} else if (step == 1) {
			/* A new graph file a killed fold left: the next run removes it. */
			snprintf(path, sizeof path, "%s/book/minimax.graph.tmp", da);
			append_file(path, "half a graph", 12);
		} else if (step == 2) {
			snprintf(path, sizeof path, "%s/book/minimax.journal", da);
			assert_int_equal(truncate(path, 40), 0);
		} else if (step == 3) {
			snprintf(path, sizeof path, "%s/book/minimax.graph", da);
			assert_int_equal(unlink(path), 0);
		} else if (step == 4) {
			inc.draw_white = 25;
			full.draw_white = 25;
		}
		run_ok(&sa, a, &inc);
		run_ok(&sb, b, &full);
		if (!why[step] && !sa.incremental)
			fail_msg("step %d: whole book: %s", step, sa.full_reason);
		if (why[step] && (sa.incremental || !strstr(sa.full_reason, why[step])))
			fail_msg("step %d: incremental %d, reason '%s'", step, sa.incremental,
			         sa.full_reason);
		same_books_as(a, b, false);
		if (step == 1) {
			snprintf(path, sizeof path, "%s/book/minimax.graph.tmp", da);
			assert_int_equal(access(path, F_OK), -1);
		}
	}
	twins_free(&t);
}

/* A BookmmProgressFn that stores one result in both twins (random_result)
 * once the run has taken its snapshot of the book. */
typedef struct {
	BookDB *a, *b;
	uint64_t *rng;
	int writes;
} MidRunWrite;

static void write_mid_run(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)done;
	(void)total;
	MidRunWrite *m = ctx;
	if (m->writes || strcmp(phase, "analysis")) return;
	random_result(m->a, m->b, m->rng);
	m->writes++;
}

static void test_minimax__an_overflowed_change_log_means_the_whole_book(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__an_overflowed_change_log_means_the_whole_book");
	Twins t = {0};
	twins_open(&t, 5);
	BookDB *a = t.a, *b = t.b;
	BookmmOptions inc = {0}, full = {.full = true};
	BookmmStats sa, sb;
	for (int k = 0; k < 30; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	for (int k = 0; k < 3; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	assert_true(sa.incremental);
	for (int k = 0; k < 20; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	run_ok(&sb, b, &full);
	assert_false(sa.incremental);
	assert_non_null(strstr(sa.full_reason, "overflow"));
	same_books_as(a, b, false);
	/* The whole-book run starts the log afresh. */
	for (int k = 0; k < 3; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	run_ok(&sb, b, &full);
	assert_true(sa.incremental);
	same_books_as(a, b, false);
	/* Overflowed again, and a whole-book run during which another writer
	 * stores a result (a coordinator's workers go on): the log is on again
	 * after it, with that result, and the next run is incremental (before,
	 * the overflow stayed: every run of a live coordinator was a whole-book
	 * one, minutes on a big book). */
	for (int k = 0; k < 20; k++) random_result(a, b, &rng);
	MidRunWrite mw = {a, b, &rng, 0};
	BookmmOptions inc_w = {.progress = write_mid_run, .progress_ctx = &mw};
	run_ok(&sa, a, &inc_w);
	assert_false(sa.incremental);
	assert_int_equal(mw.writes, 1);
	BookTxn *txn = NULL;
	BookChangesInfo ci;
	assert_int_equal(bookdb_txn_begin(&txn, a, false), 0);
	assert_int_equal(bookdb_changes_info(&ci, txn), 0);
	bookdb_txn_abort(txn);
	assert_int_equal(ci.state, BOOKDB_CHANGES_ON);
	assert_true(ci.entries >= 1);
	run_ok(&sa, a, &inc);
	run_ok(&sb, b, &full);
	assert_true(sa.incremental);
	same_books_as(a, b, false);
	twins_free(&t);
}

/* ---- stopping a run (BookmmOptions.stop, the hook's prepare) -------------------- */

typedef struct {
	const char *phase; /* the progress phase at which the flag is set */
	atomic_bool *flag;
	int seen;
} StopAt;

static void stop_at(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)done;
	(void)total;
	StopAt *s = ctx;
	if (strcmp(phase, s->phase)) return;
	s->seen++;
	atomic_store(s->flag, true);
}

static long hook_keys_extra(BookDB *db);

static bool fullrun_marked(BookDB *db)
{
	BookTxn *txn = NULL;
	const void *v;
	size_t len;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "mmfull", 6);
	bookdb_txn_abort(txn);
	assert_true(rc == 0 || rc == BOOKDB_ENOTFOUND);
	return rc == 0;
}

/*
 * A run told to stop (the coordinator at its close, `joseki minimax` on
 * SIGINT) ends early and leaves a book the next run gets right. The hard
 * case: a whole-book run over an overflowed log empties the log before it
 * reads the book, so stopped after that (at any phase) the kept state counts
 * on entries that are gone; the run's mark makes the next run a whole-book
 * one (an incremental one would find nothing changed and keep the old values:
 * the books below would differ), and the kept graph vouches for no key
 * meanwhile. An incremental run, or a plan, stopped leaves the log as it was.
 */
static void test_minimax__a_stopped_run_leaves_a_book_the_next_run_gets_right(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__a_stopped_run_leaves_a_book_the_next_run_gets_right");
	Twins t = {0};
	twins_open(&t, 5);
	BookDB *a = t.a, *b = t.b;
	BookmmOptions inc = {0}, full = {.full = true};
	BookmmStats sa, sb;
	char err[BOOKMM_ERRLEN] = "";
	for (int k = 0; k < 30; k++) random_result(a, b, &rng);
	run_ok(&sa, a, &inc);
	run_ok(&sb, b, &full);
	atomic_bool flag;
	static const char *const phases[] = {"index", "analysis", "writing"};
	for (size_t p = 0; p < sizeof phases / sizeof *phases; p++) {
		for (int k = 0; k < 20; k++) random_result(a, b, &rng); /* the log overflows */
		atomic_init(&flag, false);
		StopAt sa_ = {phases[p], &flag, 0};
		BookmmOptions stopping = {.progress = stop_at, .progress_ctx = &sa_, .stop = &flag};
		int rc = bookmm_run(&sa, a, &stopping, err);
		assert_int_equal(rc, BOOKMM_ESTOPPED);
		assert_int_equal(sa_.seen, 1);
		assert_non_null(strstr(err, "stopped"));
		/* Told at "index", the pass over the keys hears it (at 10⁸ positions
		 * in 2.4 GB it reads for minutes). */
		if (p == 0) assert_non_null(strstr(err, "stopped while reading the keys"));
		assert_true(fullrun_marked(a));
		assert_int_equal(hook_keys_extra(a), -1);
		/* Stopped again, with the log on by then: the hole stays said. */
		atomic_init(&flag, false);
		sa_.seen = 0;
		assert_int_equal(bookmm_run(&sa, a, &stopping, err), BOOKMM_ESTOPPED);
		assert_int_equal(hook_keys_extra(a), -1);
		run_ok(&sa, a, &inc);
		run_ok(&sb, b, &full);
		assert_false(sa.incremental);
		assert_non_null(strstr(sa.full_reason, "stopped before its end"));
		assert_false(fullrun_marked(a));
		same_books_as(a, b, false);
		assert_true(hook_keys_extra(a) >= 0);
	}
	/* A whole-book run with the log on (--full) empties nothing: stopped,
	 * the next run is whole-book still, but the kept graph and the log
	 * vouch for every key meanwhile. */
	for (int k = 0; k < 3; k++) random_result(a, b, &rng);
	atomic_init(&flag, false);
	StopAt sf = {"analysis", &flag, 0};
	BookmmOptions full_stopping = {
	    .full = true, .progress = stop_at, .progress_ctx = &sf, .stop = &flag};
	assert_int_equal(bookmm_run(&sa, a, &full_stopping, err), BOOKMM_ESTOPPED);
	assert_true(fullrun_marked(a));
	assert_true(hook_keys_extra(a) >= 0);
	run_ok(&sa, a, &inc);
	run_ok(&sb, b, &full);
	assert_false(sa.incremental);
	same_books_as(a, b, false);
	/* An incremental run and a plan, stopped before they start: the run
	 * hears it while it reads the changes (a long log on a book larger
	 * than memory took minutes), not only once it analyses them. */
	for (int k = 0; k < 3; k++) random_result(a, b, &rng);
	atomic_init(&flag, true);
	BookmmOptions stopped = {.stop = &flag};
	assert_int_equal(bookmm_run(&sa, a, &stopped, err), BOOKMM_ESTOPPED);
	assert_non_null(strstr(err, "stopped while reading the changes"));
	BookMinimaxPlan *plan = (BookMinimaxPlan *)&flag; /* set to NULL by prepare */
	assert_int_equal(bookmm_prepare(&plan, &sa, a, &stopped, err), BOOKMM_ESTOPPED);
	assert_null(plan);
	BookMinimaxHook h = bookmm_hook(NULL);
	plan = (BookMinimaxPlan *)&flag;
	assert_int_equal(h.prepare(h.ctx, a, &flag, &plan, err, sizeof err), BOOK_MINIMAX_STOPPED);
	assert_null(plan);
	assert_false(fullrun_marked(a));
	/* Without the flag the hook's prepare runs: the plan applied equals. */
	assert_int_equal(h.prepare(h.ctx, a, NULL, &plan, err, sizeof err), 0);
	assert_non_null(plan);
	BookTxn *txn = NULL;
	assert_int_equal(bookdb_txn_begin(&txn, a, true), 0);
	assert_int_equal(h.apply(plan, txn, 1000000, err, sizeof err), 1);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	h.plan_free(plan);
	run_ok(&sb, b, &full);
	same_books_as(a, b, false);
	run_ok(&sa, a, &inc);
	assert_true(sa.incremental);
	assert_int_equal(sa.changed, 0);
	twins_free(&t);
}

/* One run at a time on a book: while another holds BOOK/minimax.lock (another
 * process, or a plan not applied yet) a run refuses at once, saying why. */
static void test_minimax__one_run_at_a_time_on_a_book(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__one_run_at_a_time_on_a_book");
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *a = t.a, *b = t.b;
	BookmmStats st;
	char err[BOOKMM_ERRLEN] = "", path[700];
	for (int k = 0; k < 20; k++) random_result(a, b, &rng);
	snprintf(path, sizeof path, "%s/book/minimax.lock", t.da);
	int fd = open(path, O_RDWR | O_CREAT, 0664);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(pwrite(fd, "4242\n", 5, 0), 5); /* the holder's process id */
	assert_int_equal(bookmm_run(&st, a, NULL, err), BOOKMM_EBUSY);
	assert_non_null(strstr(err, "another minimax run is under way on this book"));
	if (!strstr(err, "held by process 4242): try again when it ends")) fail_msg("%s", err);
	close(fd);
	run_ok(&st, a, NULL);
	/* A run writes its own id there. */
	char *said = ts_read_file(path, NULL);
	assert_int_equal(strtol(said, NULL, 10), (long)getpid());
	free(said);
	/* A plan holds the book until it is freed, applied or not. */
	for (int k = 0; k < 5; k++) random_result(a, b, &rng);
	BookMinimaxPlan *plan = NULL;
	assert_int_equal(bookmm_prepare(&plan, &st, a, NULL, err), 0);
	assert_non_null(plan);
	assert_int_equal(bookmm_run(&st, a, NULL, err), BOOKMM_EBUSY);
	bookmm_plan_free(plan);
	run_ok(&st, a, NULL);
	assert_true(st.incremental);
	twins_free(&t);
}

/* ---- a run whose writes another writer makes (bookmm_prepare, _plan_apply) ----- */

/* The change log's entries now. */
static uint64_t log_entries(BookDB *db)
{
	BookTxn *txn = NULL;
	BookChangesInfo ci;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_changes_info(&ci, txn), 0);
	bookdb_txn_abort(txn);
	return ci.entries;
}

/*
 * The coordinator's way: the analysis apart, the records written in chunks
 * in another writer's transactions, between which that writer stores new
 * results (logged, unlike the chunks' rewrites) — equal to whole-book runs
 * over the same results; and a plan dropped half applied (the coordinator
 * stopped) is mended by the next run.
 */
static void test_minimax__a_run_applied_by_another_writer_equals_the_whole_book(void **state)
{
	(void)state;
	uint64_t rng =
	    ts_seed("test_minimax__a_run_applied_by_another_writer_equals_the_whole_book");
	Twins t = {0};
	twins_open(&t, 0);
	BookDB *a = t.a, *b = t.b;
	BookmmOptions inc = {0}, full = {.full = true};
	BookmmStats sa, sb;
	char err[BOOKMM_ERRLEN] = "";
	for (int k = 0; k < 80; k++) random_result(a, b, &rng);
	for (int k = 0; k < 10; k++) check_walk(a, b, &rng);
	run_ok(&sa, a, &inc);
	int chunks = 0, dropped = 0;
	for (int round = 0; round < 6; round++) {
		for (int k = 0; k < 12; k++) random_result(a, b, &rng);
		check_walk(a, b, &rng);
		/* A result at the start position: its record is one the plan
		 * rewrites (every changed record is), prepared as read now... */
		Position *start = malloc(sizeof *start);
		assert_int_equal(sfen_parse(start, SFEN_STARTPOS, NULL, NULL), 0);
		add_result(a, b, start, pick_move(start, &rng, false), 40 * round - 100);
		BookMinimaxPlan *plan = NULL;
		/* Every other run folds its journal first, for its length or for
		 * the memory its changes take, one of them dropped. */
		inc.fold_at = round % 4 == 1 ? 1 : round % 4 == 3 ? (uint64_t)1 << 30 : 0;
		inc.memory = round % 4 == 3 ? 1024 : 0;
		assert_int_equal(bookmm_prepare(&plan, &sa, a, &inc, err), 0);
		assert_true(sa.incremental);
		assert_int_equal(sa.folded_bytes > 0, round % 2);
		assert_non_null(plan);
		/* ...and changed again by the writer before the plan is applied:
		 * written from its new bytes, not from what was prepared. */
		add_result(a, b, start, pick_move(start, &rng, false), 30 - 20 * round);
		free(start);
		bool drop = round == 3;
		for (int done = 0; !done;) {
			BookTxn *txn = NULL;
			assert_int_equal(bookdb_txn_begin(&txn, a, true), 0);
			uint64_t before = log_entries(a);
			done = bookmm_plan_apply(plan, txn, 3, err);
			assert_true(done >= 0);
			assert_int_equal(bookdb_txn_commit(txn), 0);
			/* The rewrites are not logged (the run's own writes)... */
			if (!done) assert_int_equal(log_entries(a), before);
			chunks++;
			/* ...the writer's own writes between the chunks are. */
			before = log_entries(a);
			while (!random_result(a, b, &rng)) {
			}
			assert_true(log_entries(a) > before || done);
			if (drop && !done) {
				dropped++;
				break;
			}
		}
		bookmm_plan_free(plan);
		/* What the chunks left (and the results written between them) is
		 * what a whole-book run gives once one more run has seen them. */
		inc.fold_at = (uint64_t)1 << 30;
		inc.memory = 0;
		run_ok(&sa, a, &inc);
		assert_int_equal(sa.folded_bytes, 0);
		assert_true(sa.incremental);
		run_ok(&sb, b, &full);
		assert_int_equal(sa.root_value, sb.root_value);
		same_books(a, b);
	}
	assert_true(chunks > 12);
	assert_int_equal(dropped, 1);
	twins_free(&t);
}

/* A plan of a with keep, applied 3 records a transaction; after `stop`
 * transactions (0: none) it is dropped, and with abort_last the transaction
 * of its last writes is not committed (as when the caller's commit fails). */
static void plan_with_keep(BookDB *a, const BookmmOptions *opt, int stop, bool abort_last)
{
	char err[BOOKMM_ERRLEN] = "";
	BookmmStats st;
	BookMinimaxPlan *plan = NULL;
	assert_int_equal(bookmm_prepare(&plan, &st, a, opt, err), 0);
	assert_true(st.view_kept);
	assert_non_null(plan);
	for (int done = 0, n = 0; !done && !(stop && n == stop); n++) {
		BookTxn *txn = NULL;
		assert_int_equal(bookdb_txn_begin(&txn, a, true), 0);
		done = bookmm_plan_apply(plan, txn, 3, err);
		assert_true(done >= 0);
		if (done && abort_last)
			bookdb_txn_abort(txn);
		else
			assert_int_equal(bookdb_txn_commit(txn), 0);
	}
	bookmm_plan_free(plan);
}

/* The coordinator keeps the graph in memory between its runs: a run takes
 * it only when the book is in the state the last run left it in (not after
 * another process's run, a whole-book run, a plan dropped or not committed),
 * and every run, kept or not, equals the whole book. */
static void test_minimax__a_kept_graph_is_taken_only_for_the_state_it_was_left_for(void **state)
{
	(void)state;
	uint64_t rng =
	    ts_seed("test_minimax__a_kept_graph_is_taken_only_for_the_state_it_was_left_for");
	Twins t = {0};
	twins_open(&t, 0);
	BookmmOptions inc = {0}, other = {0}, full = {.full = true};
	assert_non_null(inc.keep = bookmm_keep_new());
	BookmmStats sa, sb;
	/* The first run is a whole-book one, which keeps nothing in memory; the
	 * second reads the graph file and leaves the graph in the keep. */
	for (int run = 0; run < 2; run++) {
		for (int k = 0; k < 25; k++) random_result(t.a, t.b, &rng);
		run_ok(&sa, t.a, &inc);
		assert_false(sa.view_kept);
	}
	/* Each step follows a run with the keep, which left the graph there:
	 * 0 a run with the keep, 1 another run without it (another process),
	 * 2 a whole-book run, 3 a plan applied, 4 a plan dropped half way,
	 * 5 a plan whose last transaction is not committed. The next run takes
	 * the graph kept after 0 and 3 only. */
	static const int steps[] = {0, 1, 0, 2, 0, 3, 3, 4, 0, 5, 0, 1, 3, 0};
	for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
		for (int k = 0; k < 25; k++) random_result(t.a, t.b, &rng);
		check_walk(t.a, t.b, &rng);
		switch (steps[s]) {
		case 0:
			run_ok(&sa, t.a, &inc);
			assert_true(sa.view_kept);
			break;
		case 1:
			run_ok(&sa, t.a, &other);
			break;
		case 2:
			run_ok(&sa, t.a, &full);
			break;
		default:
			plan_with_keep(t.a, &inc, steps[s] == 4 ? 1 : 0, steps[s] == 5);
			break;
		}
		/* The next run says whether it took the graph kept. */
		for (int k = 0; k < 5; k++) random_result(t.a, t.b, &rng);
		run_ok(&sa, t.a, &inc);
		assert_true(sa.incremental);
		if (sa.view_kept != (steps[s] == 0 || steps[s] == 3))
			fail_msg("step %zu (%d): view_kept %d", s, steps[s], sa.view_kept);
		run_ok(&sb, t.b, &full);
		assert_int_equal(sa.root_value, sb.root_value);
		assert_int_equal(sa.valued, sb.valued);
		same_books(t.a, t.b);
	}
	bookmm_keep_free(inc.keep);
	twins_free(&t);
}

/* ---- the keys minimax vouches for (BookMinimaxHook.keys) ----------------------- */

static void add_keys(void *ctx, const Key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) assert_true(keymap_add(ctx, keys[i], NULL) >= 0);
}

/* The hook's keys of db: -1 when it does not vouch for them, else how many of
 * them are not the book's; every key of the book must be among them. */
static long hook_keys_extra(BookDB *db)
{
	BookMinimaxHook h = bookmm_hook(NULL);
	BookTxn *txn = NULL;
	KeyMap set;
	keymap_init_set(&set, false);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	long r = -1;
	if (book_minimax_hook_keys(&h, db, txn, add_keys, &set) == 0) {
		BookIter *it = NULL;
		Key k;
		const uint8_t *v;
		size_t len, n = 0;
		assert_int_equal(bookdb_iter_open(&it, txn), 0);
		while (bookdb_iter_next(it, &k, &v, &len) == 1) {
			if (!keymap_has(&set, k)) fail_msg("a book key the hook did not give");
			n++;
		}
		bookdb_iter_free(it);
		r = (long)(set.n - n);
	}
	bookdb_txn_abort(txn);
	keymap_free(&set);
	return r;
}

/*
 * The keys the hook gives (lazy selectors fill their key filter from them
 * instead of a pass over the book) cover every position: from the graph file
 * alone, with the positions written since (the change log), with those a
 * journal added; and it refuses when it cannot vouch for them (no run yet, a
 * damaged journal, an overflowed log).
 */
static void test_minimax__kept_graph_vouches_for_every_key_or_refuses(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__kept_graph_vouches_for_every_key_or_refuses");
	Twins t = {0};
	twins_open(&t, 40);
	BookDB *a = t.a, *b = t.b;
	BookmmOptions inc = {0};
	BookmmStats sa;
	for (int k = 0; k < 60; k++) random_result(a, b, &rng);
	assert_int_equal(hook_keys_extra(a), -1); /* no run yet */
	run_ok(&sa, a, &inc);
	assert_int_equal(hook_keys_extra(a), 0); /* the graph file is the book */
	size_t in_graph = sa.positions;
	for (int round = 0; round < 4; round++) {
		/* New positions since the run: in the change log. */
		for (int k = 0; k < 8; k++) random_result(a, b, &rng);
		assert_true(hook_keys_extra(a) >= 0);
		run_ok(&sa, a, &inc); /* the journal adds them */
		assert_true(sa.incremental);
		assert_true(hook_keys_extra(a) >= 0);
	}
	/* Positions the graph file does not hold came through: the journal's. */
	assert_true(sa.positions > in_graph);
	/* A journal cut short: nothing vouched for. */
	char path[700];
	snprintf(path, sizeof path, "%s/book/minimax.journal", t.da);
	assert_int_equal(truncate(path, 40), 0);
	assert_int_equal(hook_keys_extra(a), -1);
	run_ok(&sa, a, &inc); /* a whole-book run mends it */
	assert_int_equal(hook_keys_extra(a), 0);
	/* More writes than the log holds: it overflows, nothing vouched for. */
	for (int k = 0; k < 60; k++) random_result(a, b, &rng);
	assert_int_equal(hook_keys_extra(a), -1);
	twins_free(&t);
}

/* Copies BOOK's data.mdb from one test directory to another (the book closed). */
static void copy_book(const char *from, const char *to)
{
	assert_int_equal(ts_runf(NULL, NULL,
	                         "mkdir -p %s/book && cp %s/book/data.mdb %s/book/data.mdb", to,
	                         from, to),
	                 0);
}

/* Whether the last minimax run on book stopped before its last commit: the
 * change log not consumed (or never switched on), which a finished run leaves
 * empty when nothing else writes. *between: it stopped between two of its
 * write transactions (the book marked "mmrun"). */
/* Twin books of the same synth book (positions, a seed drawn from rng), the
 * first's path in book. */
static void synth_twins(Twins *t, char *book, size_t cap, int positions, uint64_t rng)
{
	*t = (Twins){.da = ts_mkdtemp(), .db = ts_mkdtemp()};
	snprintf(book, cap, "%s/book", t->da);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions %d --seed %llu --quiet",
	                         ts_joseki(), book, positions, (unsigned long long)(rng % 1000)),
	                 0);
	copy_book(t->da, t->db);
}

static bool run_unfinished(const char *book, bool *between)
{
	BookDB *db;
	BookTxn *txn;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &ro, NULL), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	BookChangesInfo info;
	assert_int_equal(bookdb_changes_info(&info, txn), 0);
	const void *v;
	size_t vl;
	int rc = bookdb_kv_get(&v, &vl, txn, BOOKDB_META, "mmrun", 5);
	assert_true(rc == 0 || rc == BOOKDB_ENOTFOUND);
	*between = rc == 0;
	bookdb_txn_abort(txn);
	bookdb_free(db);
	return info.state != BOOKDB_CHANGES_ON || info.entries > 0;
}

static void test_minimax__killed_runs_leave_a_book_the_next_run_gets_right(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__killed_runs_leave_a_book_the_next_run_gets_right");
	Twins t;
	char book[600];
	synth_twins(&t, book, sizeof book, 20000, rng);
	char lock[700];
	snprintf(lock, sizeof lock, "%s/writers.lock", book);
	int killed = 0, mid = 0, between = 0;
	for (int round = 0; round < 10; round++) {
		twins_open(&t, 0);
		for (int k = 0; k < 25; k++) random_result(t.a, t.b, &rng);
		twins_close(&t);
		/* A run killed at a random moment after it has opened the book (or,
		 * one in four, not at all). */
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (!freopen("/dev/null", "w", stdout)) _exit(126);
			/* Small batches: a run commits its records in many transactions,
			 * so kills land between them too. */
			/* Half of them with their arrays in files (--memory 1M). */
			/* One in three folds its journal first (killed during the fold
			 * too). */
			execl(ts_joseki(), ts_joseki(), "minimax", book, "--batch", "7", "--memory",
			      round % 2 ? "1M" : "1G", "--fold-at", round % 3 == 1 ? "1" : "1G",
			      "--quiet", (char *)NULL);
			_exit(127);
		}
		if (round % 4 != 3 && ts_wait_flocked(lock, pid, 60000)) {
			struct timespec d = {0, (long)(ts_rand(&rng) % 10) * 1000000L};
			nanosleep(&d, NULL);
			kill(pid, SIGKILL);
		}
		int status;
		waitpid(pid, &status, 0);
		bool b = false, unfinished = run_unfinished(book, &b);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			killed++;
			mid += unfinished;
			between += b;
		} else {
			/* A run left alone finishes: the test can tell the two apart. */
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			assert_false(unfinished);
			assert_false(b);
		}
	}
	print_message("%d of 10 minimax runs killed, %d before their last commit (%d between two "
	              "of their commits)\n",
	              killed, mid, between);
	/* The kills landed mid-run, not on a run that had done its work. */
	assert_true(mid > 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --quiet", ts_joseki(), book), 0);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s minimax %s/book --full --quiet", ts_joseki(), t.db), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	twins_open(&t, 0);
	same_books_as(t.a, t.b, false);
	twins_free(&t);
}

/* The graph file of a book, without its stamp (bytes 16..23 of the header,
 * a run's own random number). */
static char *graph_unstamped(const char *dir, size_t *len)
{
	char path[700];
	snprintf(path, sizeof path, "%s/book/minimax.graph", dir);
	char *s = ts_read_file(path, len);
	assert_non_null(s);
	assert_true(*len > 24);
	memset(s + 16, 0, 8);
	return s;
}

/* The twins keep the same graph file, but for its stamp. */
static void same_graphs(const Twins *t)
{
	size_t la, lb;
	char *ga = graph_unstamped(t->da, &la), *gb = graph_unstamped(t->db, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(ga, gb, la);
	free(ga);
	free(gb);
}

/* A whole-book run on a book read at random (BookDBOptions.random, in effect
 * whatever its size: the run reads ahead of its passes, on threads for the
 * keys, by asking for the records' pages for the moves, and the rewrite reads
 * ahead on threads) stores the same values and keeps the same graph as one
 * on the book read with the kernel's read-ahead. */
static void test_minimax__a_run_reading_ahead_equals_one_that_does_not(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__a_run_reading_ahead_equals_one_that_does_not");
	Twins t;
	char book[600];
	synth_twins(&t, book, sizeof book, 30000, rng);
	char pb[600];
	snprintf(pb, sizeof pb, "%s/book", t.db);
	for (int round = 0; round < 2; round++) {
		twins_open(&t, 0);
		/* b again, read at random. */
		bookdb_free(t.b);
		BookDBOptions o = {.no_sync = true, .random = true, .random_above = 1};
		assert_int_equal(bookdb_open(&t.b, pb, &o, NULL), 0);
		BookmmOptions opt = {.full = round == 0};
		BookmmStats sa, sb;
		char err[BOOKMM_ERRLEN] = "";
		if (bookmm_run(&sa, t.a, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
		if (bookmm_run(&sb, t.b, &opt, err) != 0) fail_msg("bookmm_run: %s", err);
		assert_true(sa.positions >= 30000);
		assert_int_equal(sb.positions, sa.positions);
		assert_int_equal(sb.root_value, sa.root_value);
		assert_int_equal(sb.settled, sa.settled);
		same_books_as(t.a, t.b, true);
		if (round == 0)
			for (int k = 0; k < 40; k++) random_result(t.a, t.b, &rng);
		twins_close(&t);
		same_graphs(&t);
	}
	twins_free(&t);
}

/* A run whose graph arrays went to files (--memory 1M) and whose children
 * were looked up in sorted runs on disk stores the same values and keeps the
 * same graph as one in memory: whole-book, then incremental.
 * 80,000 positions: arrays under 1 MiB are malloc's and go to no file. */
static void test_minimax__a_run_past_its_memory_budget_equals_one_within_it(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__a_run_past_its_memory_budget_equals_one_within_it");
	Twins t;
	char book[600];
	synth_twins(&t, book, sizeof book, 80000, rng);
	/* A mate in the book: the mated position a node (no legal move: its
	 * value from no child), the drop into it an edge. The sorted lookups
	 * read a record twice; the second reading knows it mated from the
	 * first. */
	static const char BEFORE[] = "8k/9/8P/9/9/9/9/9/K8 b G2r2b3g4s4n4l17p 1",
	                  MATED[] = "8k/8G/8P/9/9/9/9/9/K8 w 2r2b3g4s4n4l17p 2";
	static const EvalMove DROP[] = {{"G*1b", -50}, {"9i8h", 20}};
	/* A move into a record that is no inner node (not thought: games
	 * only): its own evaluation values it, not the record's leaves. The
	 * sorted lookups take the inner marks from their first reading. */
	static const char SEEN[] = "k8/9/9/9/9/9/9/9/8K b G2r2b3g4s4n4l18p 1",
	                  GAMES_ONLY[] = "k8/9/9/9/9/9/9/8K/9 w G2r2b3g4s4n4l18p 2";
	static const EvalMove UP[] = {{"1i1h", 30}}, ITS[] = {{"9a9b", 400}};
	twins_open(&t, 0);
	for (int d = 0; d < 2; d++) {
		put_record_at(d ? t.b : t.a, BEFORE, DROP, 2, 20);
		put_record_at(d ? t.b : t.a, MATED, NULL, 0, 20);
		put_record_at(d ? t.b : t.a, SEEN, UP, 1, 20);
		put_record_at(d ? t.b : t.a, GAMES_ONLY, ITS, 1, 0);
	}
	twins_close(&t);
	for (int round = 0; round < 2; round++) {
		const char *full = round == 0 ? " --full" : "";
		char *out = NULL;
		assert_int_equal(
		    ts_runf(&out, NULL, "%s minimax %s%s --json", ts_joseki(), book, full), 0);
		json_t *a = json_loads(out, 0, NULL);
		assert_non_null(a);
		free(out);
		assert_int_equal(ts_runf(&out, NULL, "%s minimax %s/book%s --memory 1M --json",
		                         ts_joseki(), t.db, full),
		                 0);
		json_t *b = json_loads(out, 0, NULL);
		assert_non_null(b);
		free(out);
		/* Within the default budget nothing went to a file; within 1M the
		 * whole-book run's arrays did. */
		assert_int_equal(json_integer_value(json_object_get(a, "arrays_in_files_bytes")),
		                 0);
		json_int_t filed = json_integer_value(json_object_get(b, "arrays_in_files_bytes"));
		print_message("%s run: %lld bytes of arrays in files\n",
		              round ? "incremental" : "whole-book", (long long)filed);
		if (round == 0) assert_true(filed > 1000000);
		/* Past half of the 1M budget the whole-book run looked the children
		 * up in sorted runs, on disk; within the default one in the index. */
		assert_false(json_is_true(json_object_get(a, "lookups_sorted")));
		assert_int_equal(json_integer_value(json_object_get(a, "sorted_bytes")), 0);
		if (round == 0) {
			assert_true(json_is_true(json_object_get(b, "lookups_sorted")));
			assert_true(json_integer_value(json_object_get(b, "sorted_bytes")) >
			            1000000);
		}
		/* The whole-book runs' phases: the sorted lookups' two, and no
		 * reading for the inner marks alone (the first reading's serve),
		 * where the lookups in the index read them first. */
		json_t *pa = json_object_get(a, "phases_ms"), *pb = json_object_get(b, "phases_ms");
		if (round == 0) {
			assert_int_equal(json_object_size(pa), 8);
			assert_int_equal(json_object_size(pb), 8);
			assert_int_equal(json_integer_value(json_object_get(pa, "children")), 0);
			assert_int_equal(json_integer_value(json_object_get(pa, "lookups")), 0);
			assert_int_equal(json_integer_value(json_object_get(pb, "inner")), 0);
			json_int_t sum = 0;
			const char *k;
			json_t *v;
			json_object_foreach(pb, k, v) sum += json_integer_value(v);
			assert_true(sum <= json_integer_value(json_object_get(b, "time_ms")) + 8);
		} else {
			assert_true(json_is_null(pa) && json_is_null(pb));
		}
		assert_true(
		    json_equal(json_object_get(a, "root_value"), json_object_get(b, "root_value")));
		json_decref(a);
		json_decref(b);
		twins_open(&t, 0);
		same_books_as(t.a, t.b, true);
		int v, dist;
		stored(t.b, BEFORE, "G*1b", &v, &dist);
		assert_true(v > MM_VALUE_MAX - 100); /* mates, in either run */
		stored(t.b, SEEN, "1i1h", &v, &dist);
		assert_int_equal(v, 30); /* not the games-only record's -400 */
		if (round == 0)
			for (int k = 0; k < 40; k++) random_result(t.a, t.b, &rng);
		twins_close(&t);
		same_graphs(&t);
	}
	/* The positions analysed too shallow to be inner, counted in either
	 * reading (a synth book's analyses are 10 to 30 deep). */
	json_int_t shallow[2];
	for (int d = 0; d < 2; d++) {
		json_t *j =
		    ts_run_json(0, "%s minimax %s%s --full --min-depth 25%s --json", ts_joseki(),
		                d ? t.db : book, d ? "/book" : "", d ? " --memory 1M" : "");
		assert_true(json_is_true(json_object_get(j, "lookups_sorted")) == (d == 1));
		shallow[d] = json_integer_value(json_object_get(j, "shallow_leaves"));
		json_decref(j);
	}
	print_message("%lld positions analysed shallower than 25\n", (long long)shallow[0]);
	assert_true(shallow[0] > 1000);
	assert_int_equal(shallow[0], shallow[1]);
	twins_free(&t);
}

/* The phases a run went through, in order; a stop asked at one of them. */
typedef struct {
	char seen[16][16];
	int n;
	const char *stop_at;
	atomic_bool *stop;
} PhaseLog;

static void log_phase(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)done;
	(void)total;
	PhaseLog *l = ctx;
	if (l->n < 16 && (l->n == 0 || strcmp(l->seen[l->n - 1], phase)))
		snprintf(l->seen[l->n++], sizeof l->seen[0], "%s", phase);
	if (l->stop_at && !strcmp(phase, l->stop_at)) atomic_store(l->stop, true);
}

/* Where phase first came in the log: its index, or -1. */
static int phase_at(const PhaseLog *l, const char *phase)
{
	for (int k = 0; k < l->n; k++)
		if (!strcmp(l->seen[k], phase)) return k;
	return -1;
}

/*
 * A whole-book run with arrays in files writes the graph file before the
 * records (beside them they would take the page cache from each other), one
 * within its budget beside them; the same book and graph either way. Stopped
 * while it writes the graph first, it leaves neither the book's records nor
 * a graph file touched (none kept, no temporary one).
 */
static void test_minimax__with_arrays_in_files_the_graph_is_written_first(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__with_arrays_in_files_the_graph_is_written_first");
	Twins t;
	char book[600], path[700];
	synth_twins(&t, book, sizeof book, 80000, rng);
	twins_open(&t, 0);
	atomic_bool stop;
	atomic_init(&stop, false);
	PhaseLog stopped = {.stop_at = "graph", .stop = &stop}, first = {0}, beside = {0};
	BookmmOptions o = {
	    .full = true, .progress = log_phase, .progress_ctx = &stopped, .stop = &stop};
	BookmmStats st;
	char err[BOOKMM_ERRLEN] = "";
	bigmem_configure(1u << 20, book);
	assert_int_equal(bookmm_run(&st, t.a, &o, err), BOOKMM_ESTOPPED);
	assert_non_null(strstr(err, "writing the graph"));
	assert_true(phase_at(&stopped, "graph") > phase_at(&stopped, "analysis"));
	assert_int_equal(phase_at(&stopped, "writing"), -1);
	same_books_as(t.a, t.b, false);
	snprintf(path, sizeof path, "%s/minimax.graph", book);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/minimax.graph.tmp", book);
	assert_int_equal(access(path, F_OK), -1);
	BigmemStats bs;
	bigmem_stats(&bs);
	assert_true(bs.file_peak > 1000000);
	o = (BookmmOptions){.full = true, .progress = log_phase, .progress_ctx = &first};
	run_ok(&st, t.a, &o);
	assert_true(phase_at(&first, "graph") >= 0);
	assert_true(phase_at(&first, "graph") < phase_at(&first, "writing"));
	assert_true(!strcmp(first.seen[first.n - 1], "writing"));
	bigmem_configure(0, NULL);
	o.progress_ctx = &beside;
	run_ok(&st, t.b, &o);
	assert_true(phase_at(&beside, "writing") >= 0);
	assert_true(phase_at(&beside, "writing") < phase_at(&beside, "graph"));
	same_books_as(t.a, t.b, true);
	twins_close(&t);
	same_graphs(&t);
	twins_free(&t);
}

/* A whole-book run's progress: at the start of its write-back, results are
 * stored into the book it runs on (and its twin), as a writer beside would. */
typedef struct {
	Twins *t;
	uint64_t *rng;
	int stored;
} Beside;

static void store_beside(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)total;
	Beside *b = ctx;
	if (strcmp(phase, "writing") != 0 || done != 0 || b->stored) return;
	for (int k = 0; k < 30; k++) random_result(b->t->a, b->t->b, b->rng);
	b->stored = 30;
}

/* The write-back rewrites each record from its newest bytes: results stored
 * between the run's snapshot and its writes stay, and the next (incremental)
 * run values them as a whole-book run of a book that had them all along. */
static void test_minimax__results_stored_during_the_write_back_stay(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_minimax__results_stored_during_the_write_back_stay");
	Twins t = {0};
	twins_open(&t, 0);
	for (int k = 0; k < 120; k++) random_result(t.a, t.b, &rng);
	for (int k = 0; k < 10; k++) check_walk(t.a, t.b, &rng);
	Beside beside = {&t, &rng, 0};
	BookmmOptions during = {.full = true, .progress = store_beside, .progress_ctx = &beside},
	              inc = {0}, full = {.full = true};
	BookmmStats st;
	run_ok(&st, t.a, &during);
	assert_int_equal(beside.stored, 30);
	run_ok(&st, t.a, &inc);
	assert_true(st.incremental);
	run_ok(&st, t.b, &full);
	same_books_as(t.a, t.b, false);
	twins_free(&t);
}

static void test_minimax__incremental_after_think_equals_full(void **state)
{
	(void)state;
	char *da = ts_mkdtemp(), *dbdir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s/book --positions 5000 --seed 3 --quiet",
	                         ts_joseki(), da),
	                 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --quiet", ts_joseki(), da), 0);
	assert_int_equal(
	    ts_runf(
	        NULL, NULL,
	        "%s think %s/book --engine builtin --depth 1 --multipv 4 --positions 40 --quiet",
	        ts_joseki(), da),
	    0);
	copy_book(da, dbdir);
	json_t *ja = ts_run_json(0, "%s minimax %s/book --json", ts_joseki(), da);
	json_t *jb = ts_run_json(0, "%s minimax %s/book --full --json", ts_joseki(), dbdir);
	assert_true(json_is_true(json_object_get(ja, "incremental")));
	assert_true(ts_jint(ja, "changed") >= 40);
	assert_true(ts_jint(ja, "affected") < ts_jint(ja, "positions"));
	/* Its parts' times (a whole-book run's: none). */
	const char *part[] = {"read_ms", "analysis_ms", "write_ms"};
	for (size_t k = 0; k < 3; k++) {
		assert_true(ts_jint(ja, part[k]) >= 0);
		assert_true(json_is_null(json_object_get(jb, part[k])));
	}
	assert_true(ts_jint(ja, "read_ms") + ts_jint(ja, "analysis_ms") + ts_jint(ja, "write_ms") <=
	            ts_jint(ja, "time_ms") + 3);
	const char *same[] = {"positions", "valued", "settled",   "cyclic",
	                      "moves",     "edges",  "root_value"};
	for (size_t k = 0; k < sizeof same / sizeof *same; k++)
		if (ts_jint(ja, same[k]) != ts_jint(jb, same[k]))
			fail_msg("%s: incremental %lld, full %lld", same[k], ts_jint(ja, same[k]),
			         ts_jint(jb, same[k]));
	json_decref(ja);
	json_decref(jb);
	Twins t = {.da = da, .db = dbdir};
	twins_open(&t, 0);
	same_books(t.a, t.b);
	twins_free(&t);
}

/*
 * A cycle whose values still change at the relaxation's last sweep (356) is
 * said, in the text and in --json (the run said 357 sweeps and nothing else):
 * the one of a 300,000-position synth book, --seed 2, of 7 positions. Another
 * seed's book has none, and no line.
 */
static void test_minimax__cycles_still_changing_at_the_last_sweep_are_said(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	for (int seed = 1; seed <= 2; seed++) {
		assert_int_equal(ts_runf(NULL, NULL,
		                         "%s synth %s/b%d --positions 300000 --seed %d --quiet",
		                         ts_joseki(), dir, seed, seed),
		                 0);
		json_t *js = ts_run_json(0, "%s minimax %s/b%d --json", ts_joseki(), dir, seed);
		assert_int_equal(ts_jint(js, "unsettled"), seed == 2 ? 7 : 0);
		assert_int_equal(ts_jint(js, "unsettled_cycles"), seed == 2 ? 1 : 0);
		assert_int_equal(ts_jint(js, "sweeps") > MM_RELAX_SWEEPS, seed == 2);
		json_decref(js);
		char *out = NULL;
		assert_int_equal(
		    ts_runf(&out, NULL, "%s minimax %s/b%d --full", ts_joseki(), dir, seed), 0);
		bool said = strstr(out, "7 positions on 1 cycle still changing at the last of 356 "
		                        "sweeps") != NULL;
		if (said != (seed == 2)) fail_msg("seed %d:\n%s", seed, out);
		free(out);
	}
	ts_rmtree(dir);
	free(dir);
}

/* ---- the command ---------------------------------------------------------------- */

static void test_minimax__command_prints_json_and_rejects_bad_arguments(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *out = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s import %s/book %syo_in.db --quiet", ts_joseki(), dir, FIX), 0);
	assert_int_equal(ts_runf(&out, &err, "%s minimax %s/book --json", ts_joseki(), dir), 0);
	const char *keys[] = {
	    "\"positions\":3",   "\"settled\":", "\"cyclic\":",        "\"sweeps\":",
	    "\"root_value\":50", "\"time_ms\":", "\"peak_rss_bytes\":"};
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
		if (!strstr(out, keys[k])) fail_msg("no %s in %s", keys[k], out);
	free(out);
	free(err);
	/* A journal shorter than --fold-at is not folded. */
	assert_int_equal(
	    ts_runf(&out, NULL, "%s minimax %s/book --fold-at 1M --json", ts_joseki(), dir), 0);
	assert_non_null(strstr(out, "\"folded_bytes\":0"));
	free(out);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --fold-at 10X", ts_joseki(), dir),
	                 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --fold-at -5", ts_joseki(), dir),
	                 2);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s minimax %s/book --fold-at 512K --quiet", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --fold-at 0", ts_joseki(), dir),
	                 2);
	/* Any journal past 1 byte is: the next run reads the new file. */
	assert_int_equal(
	    ts_runf(&out, NULL, "%s minimax %s/book --fold-at 1 --json", ts_joseki(), dir), 0);
	assert_non_null(strstr(out, "\"folded_bytes\":32"));
	free(out);
	/* joseki query shows the backed-up value. */
	assert_int_equal(ts_runf(&out, NULL, "%s query %s/book startpos --json", ts_joseki(), dir),
	                 0);
	assert_non_null(strstr(out, "\"value\": 50") ? out : strstr(out, "\"value\":50"));
	free(out);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax", ts_joseki()), 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --bogus", ts_joseki(), dir), 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --draw-black", ts_joseki(), dir),
	                 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book --draw-white x", ts_joseki(), dir),
	                 2);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s/book %s/other", ts_joseki(), dir, dir),
	                 2);
	assert_int_equal(ts_runf(NULL, &err, "%s minimax %s/missing", ts_joseki(), dir), 1);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_minimax__agrees_with_peta_shock_on_the_transposition_fixture),
	    cmocka_unit_test(test_minimax__agrees_with_peta_shock_on_the_perpetual_check_fixture),
	    cmocka_unit_test(test_minimax__agrees_with_peta_shock_on_cycles_and_perpetual_check),
	    cmocka_unit_test(test_minimax__chains_and_unlisted_transpositions_get_their_values),
	    cmocka_unit_test(test_minimax__a_declined_promotion_is_not_the_value),
	    cmocka_unit_test(test_minimax__per_side_draw_values_decide_who_repeats),
	    cmocka_unit_test(test_minimax__perpetual_check_loses_for_the_checker),
	    cmocka_unit_test(
	        test_minimax__a_position_that_leaves_a_check_loop_from_above_is_analysed),
	    cmocka_unit_test(test_minimax__incremental_equals_full_after_random_batches),
	    cmocka_unit_test(test_minimax__incremental_equals_full_with_the_journal_folded),
	    cmocka_unit_test(test_minimax__positions_without_a_value_stay_in_the_kept_graph),
	    cmocka_unit_test(test_minimax__incremental_equals_full_under_the_thought_policy),
	    cmocka_unit_test(test_minimax__a_large_batch_read_ahead_equals_full),
	    cmocka_unit_test(
	        test_minimax__a_kept_graph_is_taken_only_for_the_state_it_was_left_for),
	    cmocka_unit_test(
	        test_minimax__incremental_runs_fall_back_to_the_whole_book_when_they_must),
	    cmocka_unit_test(test_minimax__an_overflowed_change_log_means_the_whole_book),
	    cmocka_unit_test(test_minimax__a_stopped_run_leaves_a_book_the_next_run_gets_right),
	    cmocka_unit_test(test_minimax__one_run_at_a_time_on_a_book),
	    cmocka_unit_test(test_minimax__kept_graph_vouches_for_every_key_or_refuses),
	    cmocka_unit_test(test_minimax__a_run_applied_by_another_writer_equals_the_whole_book),
	    cmocka_unit_test(test_minimax__killed_runs_leave_a_book_the_next_run_gets_right),
	    cmocka_unit_test(test_minimax__a_run_past_its_memory_budget_equals_one_within_it),
	    cmocka_unit_test(test_minimax__a_run_reading_ahead_equals_one_that_does_not),
	    cmocka_unit_test(test_minimax__with_arrays_in_files_the_graph_is_written_first),
	    cmocka_unit_test(test_minimax__results_stored_during_the_write_back_stay),
	    cmocka_unit_test(test_minimax__incremental_after_think_equals_full),
	    cmocka_unit_test(test_minimax__command_prints_json_and_rejects_bad_arguments),
	    cmocka_unit_test(test_minimax__cycles_still_changing_at_the_last_sweep_are_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
