/*
 * tests/bookgen/test_selector.c — the selector on small hand-built books with
 * known values: the expected leaf, successive leaves under leases, a PV ending
 * in a repetition banned, bounds reused and invalidated by new results (the
 * incremental answer equals a fresh selector's), the kif bonus, window and
 * sqrt batches, and `joseki select --json`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "bookgen/plan.h"
#include "bookgen/selector.h"
#include "bookgen/snapshot.h"
#include "minimax/bookmm.h"
#include "shogi/bigmem.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* A book position: the line reaching it and its stored moves. */
typedef struct {
	const char *mv;
	int eval;
	int count; /* games played (kif statistics) */
} TMove;

typedef struct {
	const char *line; /* "startpos" or "startpos moves ..." */
	bool thought;
	TMove moves[8];
} TPos;

static Key line_key(const char *line)
{
	return ts_line_key(line);
}

static void fill_record(BookRecord *rec, const TPos *tp)
{
	Position *pos = malloc(sizeof *pos);
	char err[SHOGI_ERRLEN];
	assert_non_null(pos);
	assert_int_equal(position_parse(pos, tp->line, err), 0);
	bookdb_record_init(rec, pos);
	if (tp->thought) {
		rec->flags |= BOOKDB_REC_THOUGHT;
		rec->think_depth = 10;
	}
	for (int j = 0; j < 8 && tp->moves[j].mv; j++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		memset(m, 0, sizeof *m);
		assert_int_equal(usi_move_parse_legal(&m->move, pos, tp->moves[j].mv,
		                                      strlen(tp->moves[j].mv), err),
		                 0);
		m->flags = BOOKDB_MOVE_EVAL;
		m->eval = (int16_t)tp->moves[j].eval;
		m->depth = 10;
		if (tp->moves[j].count) {
			m->flags |= BOOKDB_MOVE_STATS;
			m->count = (uint32_t)tp->moves[j].count;
		}
	}
	free(pos);
}

/* Writes the positions into a fresh book under dir. */
static void write_book(const char *dir, const TPos *tps, size_t n)
{
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	char err[BOOKDB_ERRLEN];
	assert_non_null(rec);
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (size_t i = 0; i < n; i++) {
		fill_record(rec, &tps[i]);
		assert_int_equal(bookdb_put(txn, line_key(tps[i].line), rec), 0);
	}
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	free(rec);
}

/* The books open_selector opened, by selector (a selector reads its book
 * until it is freed: close_selector frees both). */
static struct {
	Selector *s;
	BookDB *db;
} opened[8];

/* A selector over the book with the start position as root. */
static Selector *open_selector(const char *dir, int kif_bonus)
{
	BookDB *db = NULL;
	Selector *s = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions bo = {.read_only = true};
	SelOptions opt = {.kif_bonus = kif_bonus, .draw_value = 0};
	assert_int_equal(bookdb_open(&db, dir, &bo, err), 0);
	assert_int_equal(sel_new(&s, &opt), 0);
	assert_int_equal(sel_load(s, db), 0);
	assert_int_equal(sel_add_root(s, line_key("startpos"), BLACK), 0);
	size_t i = 0;
	while (i < 8 && opened[i].s) i++;
	assert_true(i < 8);
	opened[i].s = s;
	opened[i].db = db;
	return s;
}

static void close_selector(Selector *s)
{
	for (size_t i = 0; i < 8; i++)
		if (opened[i].s == s) {
			sel_free(s);
			bookdb_free(opened[i].db);
			opened[i].s = NULL;
			opened[i].db = NULL;
			return;
		}
	fail_msg("selector not opened by open_selector");
}

/* The USI line "startpos moves ..." of a leaf. */
static void leaf_line(char *out, size_t cap, const SelLeaf *l)
{
	size_t n = (size_t)snprintf(out, cap, "startpos");
	if (l->nmoves) n += (size_t)snprintf(out + n, cap - n, " moves");
	for (int j = 0; j < l->nmoves; j++) {
		char mv[USI_MOVE_MAX];
		usi_move_write(l->moves[j], mv);
		n += (size_t)snprintf(out + n, cap - n, " %s", mv);
	}
}

static void assert_leaf(const SelLeaf *l, const char *line, int value)
{
	char got[4096];
	leaf_line(got, sizeof got, l);
	assert_string_equal(got, line);
	assert_int_equal(l->value, value);
	assert_true(key_equal(l->key, line_key(line)));
}

/*
 * Root value 40 along 7g7f 8c8d. Values from Black's view:
 *   7g7f 8c8d 40, 7g7f 3c3d 50, 2g2f 3c3d 25, 2g2f 8c8d 30, 5g5f -20.
 */
static const TPos SMALL[] = {
    {"startpos", true, {{"7g7f", 50, 0}, {"2g2f", 30, 0}, {"5g5f", -20, 0}}},
    {"startpos moves 7g7f", true, {{"3c3d", -50, 0}, {"8c8d", -40, 0}}},
    {"startpos moves 2g2f", true, {{"8c8d", -30, 0}, {"3c3d", -25, 0}}},
};

static void test_bookgen__selector_returns_the_pv_leaf_then_the_next_best(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, SMALL, sizeof SMALL / sizeof SMALL[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	static const struct {
		const char *line;
		int value;
	} want[] = {
	    {"startpos moves 7g7f 8c8d", 40}, {"startpos moves 7g7f 3c3d", 50},
	    {"startpos moves 2g2f 3c3d", 25}, {"startpos moves 2g2f 8c8d", 30},
	    {"startpos moves 5g5f", -20},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		assert_int_equal(sel_select(l, s), 1);
		assert_leaf(l, want[i].line, want[i].value);
		/* The leaf's position from its root's SFEN and its moves. */
		Position *lp = malloc(sizeof *lp);
		assert_int_equal(
		    sel_leaf_position(
		        lp, "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1", l),
		    0);
		assert_true(key_equal(pos_key(lp), l->key));
		/* From another root the moves are not legal. */
		assert_int_equal(
		    sel_leaf_position(
		        lp, "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1", l),
		    SEL_EINVAL);
		assert_int_equal(sel_leaf_position(lp, "not an sfen", l), SEL_EINVAL);
		free(lp);
		assert_false(sel_is_thought(s, l->key));
		assert_false(sel_is_leased(s, l->key));
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_true(sel_is_leased(s, l->key));
	}
	assert_int_equal(sel_select(l, s), 0);
	/* A released leaf is selectable again. */
	assert_int_equal(sel_release(s, line_key("startpos moves 5g5f")), 0);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 5g5f", -20);
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/* After 7g7f 3c3d, 8h2b (the bishop left unpromoted) valued above 8h2b+: the
 * book plays the promotion, so the selector never searches the unpromoted
 * capture's position (docs/minimax.md, "Where values come from"). */
static const TPos DECLINED[] = {
    {"startpos", true, {{"7g7f", 50, 0}}},
    {"startpos moves 7g7f", true, {{"3c3d", -50, 0}}},
    {"startpos moves 7g7f 3c3d", true, {{"8h2b", 60, 0}, {"8h2b+", 50, 0}, {"2g2f", 0, 0}}},
};

/* The same where 8h2b is not stored but its position is in the book, thought
 * (a transposition edge, which minimax drops too). */
static const TPos DECLINED_BY_TRANSPOSITION[] = {
    {"startpos", true, {{"7g7f", 50, 0}}},
    {"startpos moves 7g7f", true, {{"3c3d", -50, 0}}},
    {"startpos moves 7g7f 3c3d", true, {{"8h2b+", 50, 0}, {"2g2f", 0, 0}}},
    {"startpos moves 7g7f 3c3d 8h2b", true, {{"3a2b", -100, 0}, {"8b2b", -300, 0}}},
};

static void test_bookgen__selector_skips_a_declined_promotion(void **state)
{
	(void)state;
	for (int t = 0; t < 2; t++) {
		char *dir = ts_mkdtemp();
		if (t == 0)
			write_book(dir, DECLINED, sizeof DECLINED / sizeof DECLINED[0]);
		else
			write_book(dir, DECLINED_BY_TRANSPOSITION,
			           sizeof DECLINED_BY_TRANSPOSITION /
			               sizeof DECLINED_BY_TRANSPOSITION[0]);
		Selector *s = open_selector(dir, 100);
		SelLeaf *l = malloc(sizeof *l);
		assert_non_null(l);
		assert_int_equal(sel_select(l, s), 1);
		assert_leaf(l, "startpos moves 7g7f 3c3d 8h2b+", 50);
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_int_equal(sel_select(l, s), 1);
		assert_leaf(l, "startpos moves 7g7f 3c3d 2g2f", 0);
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_int_equal(sel_select(l, s), 0);
		free(l);
		close_selector(s);
		ts_rmtree(dir);
		free(dir);
	}
}

/*
 * A move into a position with no legal move mates: a gold dropped on 5b. The
 * mated position is in the book, thought (an engine answers it bestmove
 * resign: no move stored). Its value is that of a mate, whatever the
 * parent's own analysis said of the move: here -50, as if it did not see it.
 */
#define MATE_ROOT "sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1"
static const TPos MATE_IN_ONE[] = {
    {MATE_ROOT, true, {{"G*4c", 900, 0}, {"G*6c", 800, 0}, {"G*5b", -50, 0}}},
    {MATE_ROOT " moves G*5b", true, {{NULL, 0, 0}}},
};

/* The selector sees the mate: the root is won, its PV ends in the mate and
 * there is nothing left to think about from it (it was worth 900 with the
 * mating move treated as absent, and G*4c's position was the next leaf). */
static void test_bookgen__selector_values_a_mated_position_as_mated(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, MATE_IN_ONE, sizeof MATE_IN_ONE / sizeof MATE_IN_ONE[0]);
	BookDB *db = NULL;
	Selector *s = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions bo = {.read_only = true};
	SelOptions opt = {.draw_value = 0};
	assert_int_equal(bookdb_open(&db, dir, &bo, err), 0);
	assert_int_equal(sel_new(&s, &opt), 0);
	assert_int_equal(sel_load(s, db), 0);
	assert_int_equal(sel_add_root(s, line_key(MATE_ROOT), BLACK), 0);
	int v;
	bool has;
	assert_int_equal(sel_root_value(&v, &has, s, 0), 0);
	assert_int_equal(v, VALUE_MATE);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	assert_int_equal(sel_select(l, s), 0);
	free(l);
	/* The batches find no leaf either: none is within 100 of a mate. */
	SelLeaf out[4];
	assert_int_equal(sel_select_batch(out, 4, s, 100, SEL_BATCH_WINDOW, -1), 0);
	assert_int_equal(sel_select_batch(out, 4, s, 100, SEL_BATCH_SQRT, -1), 0);
	assert_int_equal(sel_select_cover(out, 4, 2, s, 0, 100, -1), 0);
	sel_free(s);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A cycle: 2h3h 8b7b 3h2h 7b8b comes back to the start position. Every way out
 * of it is bad for the side that leaves, so the first PV ends in the
 * repetition (value 0); that move is banned and the next leaf is 2h3h 3c3d.
 */
static const TPos CYCLE[] = {
    {"startpos", true, {{"2h3h", 0, 0}, {"7g7f", -100, 0}}},
    {"startpos moves 2h3h", true, {{"8b7b", 0, 0}, {"3c3d", -200, 0}}},
    {"startpos moves 2h3h 8b7b", true, {{"3h2h", 0, 0}, {"7g7f", -200, 0}}},
    {"startpos moves 2h3h 8b7b 3h2h", true, {{"7b8b", 0, 0}, {"3c3d", -300, 0}}},
};

/* The root of CYCLE has a leaf, and the repetition is its best line. */
static void assert_root_draws(Selector *s)
{
	int v;
	bool has;
	assert_int_equal(sel_root_value(&v, &has, s, 0), 0);
	assert_true(has);
	assert_int_equal(v, 0);
}

static void test_bookgen__selector_bans_a_pv_ending_in_a_cycle(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, CYCLE, sizeof CYCLE / sizeof CYCLE[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l);
	SelStats st;
	assert_non_null(l);
	assert_root_draws(s);
	assert_int_equal(sel_select(l, s), 1);
	sel_get_stats(&st, s);
	assert_int_equal(st.bans, 1);
	/* Banned 7b8b: White at the end of the cycle must play 3c3d (-300), so
	 * Black goes round, White leaves at once: 2h3h 3c3d, 200 for Black. */
	assert_leaf(l, "startpos moves 2h3h 3c3d", 200);
	assert_int_equal(sel_lease(s, l->key), 0);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 2h3h 8b7b 3h2h 3c3d", 300);
	/* Selections go on without stalling until every leaf is leased. */
	int n = 1;
	while (sel_select(l, s) == 1) {
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_true(++n < 10);
	}
	assert_int_equal(n, 4); /* 3c3d x2 (distinct plies), 7g7f x2 */
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The cover walk over the same cycle. Its root value is the repetition's 0,
 * and the walk skips a move back into its path (it is no leaf), so nothing
 * passed the bars: a coordinator under the cover policy answered 204 for
 * good while the book had these leaves (met after restarts from the
 * selector's snapshot, whose graph kept such a cycle). The cycle's move is
 * banned, as a PV selection does, and the walk finds the leaves.
 */
static void test_bookgen__selector_cover_past_a_cycle(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, CYCLE, sizeof CYCLE / sizeof CYCLE[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *out = calloc(16, sizeof *out);
	SelStats st;
	assert_non_null(out);
	assert_root_draws(s);
	int n = sel_select_cover(out, 16, 16, s, 0, 30, BLACK);
	assert_true(n >= 1);
	sel_get_stats(&st, s);
	assert_true(st.bans >= 1);
	assert_leaf(&out[0], "startpos moves 2h3h 3c3d", 200);
	/* Leased one after another, every leaf of the book comes out, for
	 * either book side, and then nothing. */
	for (int side = 0; side < 2; side++) {
		Selector *z = open_selector(dir, 100);
		int got = 0;
		while ((n = sel_select_cover(out, 16, 1, z, 0, 30, side)) > 0) {
			assert_int_equal(sel_lease(z, out[0].key), 0);
			assert_true(++got < 10);
		}
		assert_int_equal(n, 0);
		assert_true(got >= 1);
		close_selector(z);
	}
	free(out);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/* Five thought replies to the start position, each with two leaf answers. */
static const TPos WIDE[] = {
    {"startpos",
     true,
     {{"7g7f", 0, 0}, {"2g2f", 0, 0}, {"5g5f", 0, 0}, {"6g6f", 0, 0}, {"1g1f", 0, 0}}},
    {"startpos moves 7g7f", true, {{"3c3d", -50, 0}, {"8c8d", -40, 0}}},
    {"startpos moves 2g2f", true, {{"8c8d", -30, 0}, {"3c3d", -25, 0}}},
    {"startpos moves 5g5f", true, {{"8c8d", -10, 0}, {"3c3d", 5, 0}}},
    {"startpos moves 6g6f", true, {{"8c8d", -20, 0}, {"3c3d", -15, 0}}},
    {"startpos moves 1g1f", true, {{"8c8d", 20, 0}, {"3c3d", 30, 0}}},
};

static void test_bookgen__selector_reuses_bounds_and_invalidates_them_on_results(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, WIDE, sizeof WIDE / sizeof WIDE[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l);
	SelStats a, b;
	assert_non_null(l);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 40);
	sel_get_stats(&a, s);
	assert_int_equal(a.visits, 6); /* root and the five replies */
	/* Nothing changed: only the PV nodes are searched again, the rest of the
	 * root's moves are answered by stored bounds. */
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 40);
	sel_get_stats(&b, s);
	assert_int_equal(b.visits - a.visits, 2);
	assert_true(b.tt_hits - a.tt_hits >= 4);
	/* A lease below 7g7f clears the root and 7g7f only. */
	assert_int_equal(sel_lease(s, l->key), 0);
	a = b;
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 3c3d", 50);
	sel_get_stats(&b, s);
	assert_true(b.visits - a.visits < 6);

	/* A result: 7g7f 3c3d is thought, and its best answer is bad for White
	 * (2g2f from Black: 100), so 7g7f 3c3d now scores -100 for White: Black's
	 * value through 7g7f is 100, the new leaf is below it. */
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	TPos res = {"startpos moves 7g7f 3c3d", true, {{"2g2f", 100, 0}, {"6g6f", 90, 0}}};
	fill_record(rec, &res);
	assert_int_equal(sel_is_leased(s, line_key(res.line)), false);
	assert_int_equal(sel_lease(s, line_key(res.line)), 0);
	assert_int_equal(sel_add_result(s, line_key(res.line), rec), 0);
	assert_false(sel_is_leased(s, line_key(res.line)));
	assert_true(sel_is_thought(s, line_key(res.line)));
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 3c3d 2g2f", 100);

	/* The incremental answer equals a fresh selector's on the same book. */
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, line_key(res.line), rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	Selector *fresh = open_selector(dir, 100);
	assert_int_equal(sel_lease(fresh, line_key("startpos moves 7g7f 8c8d")), 0);
	SelLeaf *l2 = malloc(sizeof *l2);
	assert_non_null(l2);
	for (int i = 0; i < 8; i++) {
		int r1 = sel_select(l, s), r2 = sel_select(l2, fresh);
		assert_int_equal(r1, r2);
		if (!r1) break;
		assert_true(key_equal(l->key, l2->key));
		assert_int_equal(l->value, l2->value);
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_int_equal(sel_lease(fresh, l2->key), 0);
	}
	free(l2);
	close_selector(fresh);
	free(rec);
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Changes held (sel_hold, as the coordinator holds them while a checkpoint's
 * child lives): a lease and a result are kept, the queries answer with them,
 * a search meanwhile sees the graph without them (and its end does not apply
 * them), and the hold's end applies them: the search then selects as one
 * given them at once.
 */
static void test_bookgen__changes_held_are_kept_until_the_hold_ends(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, WIDE, sizeof WIDE / sizeof WIDE[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(l);
	assert_non_null(rec);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 40);
	assert_int_equal(sel_hold(s, true), 0);
	assert_int_equal(sel_lease(s, l->key), 0);
	assert_true(sel_is_leased(s, l->key));
	TPos res = {"startpos moves 7g7f 3c3d", true, {{"2g2f", 100, 0}, {"6g6f", 90, 0}}};
	fill_record(rec, &res);
	assert_int_equal(sel_add_result(s, line_key(res.line), rec), 0);
	assert_true(sel_is_thought(s, line_key(res.line)));
	/* The graph as it was: the same leaf, and the changes still kept. */
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 40);
	assert_true(sel_is_leased(s, l->key));
	assert_true(sel_is_thought(s, line_key(res.line)));
	/* Applied: 8c8d leased, 3c3d thought with 2g2f best for Black. */
	assert_int_equal(sel_hold(s, false), 0);
	assert_true(sel_is_leased(s, line_key("startpos moves 7g7f 8c8d")));
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 3c3d 2g2f", 100);
	free(rec);
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/* A record no longer thought (its analysis taken out of the book: the
 * coordinator's spot checks, docs/cluster.md) makes its node a leaf again:
 * the leaves are then those a fresh selector finds over the book as it is;
 * thought again, the node is searched through as before. */
static void test_bookgen__a_record_no_longer_thought_is_a_leaf_again(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, WIDE, sizeof WIDE / sizeof WIDE[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l), *l2 = malloc(sizeof *l2);
	BookRecord *rec = malloc(sizeof *rec);
	assert_true(l && l2 && rec);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 40);
	/* 7g7f's analysis taken out: in the book, then in the selector. */
	const TPos gone = {"startpos moves 7g7f", false, {{NULL, 0, 0}}};
	Key k = line_key(gone.line);
	fill_record(rec, &gone);
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, k, rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	assert_true(sel_is_thought(s, k));
	assert_int_equal(sel_add_result(s, k, rec), 0);
	assert_false(sel_is_thought(s, k));
	/* A fresh selector's leaves, in the same order; among them the root's
	 * 7g7f itself, a leaf again. */
	Selector *fresh = open_selector(dir, 100);
	bool again = false;
	for (int i = 0; i < 8; i++) {
		int r1 = sel_select(l, s), r2 = sel_select(l2, fresh);
		assert_int_equal(r1, r2);
		if (!r1) break;
		assert_true(key_equal(l->key, l2->key));
		assert_int_equal(l->value, l2->value);
		again |= key_equal(l->key, k);
		assert_int_equal(sel_lease(s, l->key), 0);
		assert_int_equal(sel_lease(fresh, l2->key), 0);
	}
	assert_true(again);
	/* Thought again: searched through as before. */
	fill_record(rec, &WIDE[1]);
	assert_int_equal(sel_add_result(s, k, rec), 0);
	assert_true(sel_is_thought(s, k));
	close_selector(fresh);
	free(rec);
	free(l);
	free(l2);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

static const TPos KIF[] = {
    {"startpos", true, {{"7g7f", 30, 0}, {"2g2f", 0, 5}}},
};

static void test_bookgen__kif_bonus_changes_the_choice(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, KIF, 1);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	Selector *s = open_selector(dir, 100);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 2g2f", 100);
	close_selector(s);
	s = open_selector(dir, 0);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos moves 7g7f", 30);
	close_selector(s);
	free(l);
	ts_rmtree(dir);
	free(dir);
}

static void assert_batch(SelLeaf *out, int n, const char *const *want, int nwant)
{
	assert_int_equal(n, nwant);
	for (int i = 0; i < n; i++) {
		char got[4096];
		leaf_line(got, sizeof got, &out[i]);
		assert_string_equal(got, want[i]);
	}
}

static void test_bookgen__window_batch_returns_every_leaf_within_the_window(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, SMALL, sizeof SMALL / sizeof SMALL[0]);
	Selector *s = open_selector(dir, 100);
	SelLeaf *out = malloc(16 * sizeof *out);
	assert_non_null(out);
	static const char *const w0[] = {"startpos moves 7g7f 8c8d"};
	assert_batch(out, sel_select_batch(out, 16, s, 0, SEL_BATCH_WINDOW, -1), w0, 1);
	static const char *const w10[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d"};
	assert_batch(out, sel_select_batch(out, 16, s, 10, SEL_BATCH_WINDOW, -1), w10, 2);
	static const char *const w15[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d",
	                                  "startpos moves 2g2f 8c8d", "startpos moves 2g2f 3c3d"};
	int n = sel_select_batch(out, 16, s, 15, SEL_BATCH_WINDOW, -1);
	assert_batch(out, n, w15, 4);
	assert_int_equal(out[0].value, 40);
	assert_int_equal(out[3].value, 25);
	static const char *const w60[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d",
	                                  "startpos moves 2g2f 8c8d", "startpos moves 2g2f 3c3d",
	                                  "startpos moves 5g5f"};
	assert_batch(out, sel_select_batch(out, 16, s, 60, SEL_BATCH_WINDOW, -1), w60, 5);
	/* max caps the batch. */
	assert_int_equal(sel_select_batch(out, 2, s, 60, SEL_BATCH_WINDOW, -1), 2);
	/* sqrt: Black (book side) only its best move, White every reply in the window. */
	static const char *const sb[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d"};
	assert_batch(out, sel_select_batch(out, 16, s, 15, SEL_BATCH_SQRT, BLACK), sb, 2);
	static const char *const sw[] = {"startpos moves 7g7f 8c8d", "startpos moves 2g2f 3c3d"};
	assert_batch(out, sel_select_batch(out, 16, s, 15, SEL_BATCH_SQRT, WHITE), sw, 2);
	/* Leased leaves are left out. */
	assert_int_equal(sel_lease(s, line_key("startpos moves 7g7f 8c8d")), 0);
	static const char *const wl[] = {"startpos moves 7g7f 3c3d"};
	assert_batch(out, sel_select_batch(out, 16, s, 0, SEL_BATCH_WINDOW, -1), wl, 1);
	free(out);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Coverage (SEL_BATCH_COVER). Values from Black's view, root value 52 along
 * 7g7f 8c8d 2g2f:
 *   7g7f (White): 8c8d -> 52, 3c3d -> 75 (23 worse for White), 4a3b leaf 120
 *   7g7f 8c8d (Black): 2g2f leaf 52, 7f7e leaf 10
 *   7g7f 3c3d (Black): 2g2f -> 75, 6g6f leaf 20, 4i5h leaf 40
 *   7g7f 3c3d 2g2f (White): 8c8d leaf 75, 4a3b leaf 100, 9c9d leaf 130
 * and the root's other moves 2g2f leaf 45, 5g5f leaf -20.
 */
static const TPos COVER[] = {
    {"startpos", true, {{"7g7f", 50, 0}, {"2g2f", 45, 0}, {"5g5f", -20, 0}}},
    {"startpos moves 7g7f", true, {{"8c8d", -52, 0}, {"3c3d", -60, 0}, {"4a3b", -120, 0}}},
    {"startpos moves 7g7f 8c8d", true, {{"2g2f", 52, 0}, {"7f7e", 10, 0}}},
    {"startpos moves 7g7f 3c3d", true, {{"2g2f", 70, 0}, {"6g6f", 20, 0}, {"4i5h", 40, 0}}},
    {"startpos moves 7g7f 3c3d 2g2f",
     true,
     {{"8c8d", -75, 0}, {"4a3b", -100, 0}, {"9c9d", -130, 0}}},
};

static void
test_bookgen__cover_batch_follows_the_book_side_best_and_the_replies_in_window(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, COVER, sizeof COVER / sizeof COVER[0]);
	Selector *s = open_selector(dir, 0);
	SelLeaf *out = malloc(16 * sizeof *out);
	assert_non_null(out);
	/* Black's book: Black's inferior moves (2g2f and 5g5f at the root, 7f7e,
	 * 6g6f, 4i5h) are not followed; White's replies within 30 of its best at
	 * each node are, the window measured at that node: 4a3b after 7g7f 3c3d
	 * 2g2f is 25 below White's best there although 48 below the root value.
	 * Shallowest first, then closest to the root value. */
	static const char *const black[] = {"startpos moves 7g7f 8c8d 2g2f",
	                                    "startpos moves 7g7f 3c3d 2g2f 8c8d",
	                                    "startpos moves 7g7f 3c3d 2g2f 4a3b"};
	int n = sel_select_batch(out, 16, s, 30, SEL_BATCH_COVER, BLACK);
	assert_batch(out, n, black, 3);
	assert_int_equal(out[0].value, 52);
	assert_int_equal(out[1].value, 75);
	assert_int_equal(out[2].value, 100);
	/* The sqrt batch measures from the root: 4a3b falls out. */
	static const char *const sq[] = {"startpos moves 7g7f 8c8d 2g2f",
	                                 "startpos moves 7g7f 3c3d 2g2f 8c8d"};
	assert_batch(out, sel_select_batch(out, 16, s, 30, SEL_BATCH_SQRT, BLACK), sq, 2);
	/* Window 0: only the opponent's best reply. */
	static const char *const w0[] = {"startpos moves 7g7f 8c8d 2g2f"};
	assert_batch(out, sel_select_batch(out, 16, s, 0, SEL_BATCH_COVER, BLACK), w0, 1);
	/* White's book: Black's moves within 30 at the root (7g7f, and the leaf
	 * 2g2f), White only its best reply 8c8d. */
	static const char *const white[] = {"startpos moves 2g2f", "startpos moves 7g7f 8c8d 2g2f"};
	assert_batch(out, sel_select_batch(out, 16, s, 30, SEL_BATCH_COVER, WHITE), white, 2);
	/* max: the walk stops at the depth where max leaves are found, the
	 * shallowest kept. */
	assert_batch(out, sel_select_batch(out, 2, s, 30, SEL_BATCH_COVER, BLACK), black, 2);
	/* A leased leaf counts as absent: without 8c8d, White's best after 7g7f
	 * 3c3d 2g2f is 4a3b (100 for Black), so 3c3d is now 48 worse for White
	 * than 8c8d, outside the window. */
	assert_int_equal(sel_lease(s, line_key("startpos moves 7g7f 3c3d 2g2f 8c8d")), 0);
	assert_batch(out, sel_select_batch(out, 16, s, 30, SEL_BATCH_COVER, BLACK), black, 1);
	free(out);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

/* Roots with weights: every leaf lies below its root, and the leaves handed
 * out follow the weights. Two roots, each a thought position with eight
 * unthought replies. */
static void test_bookgen__plan_shares_the_leaves_by_root_weight(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	static const TPos two[] = {
	    {"startpos moves 7g7f",
	     true,
	     {{"3c3d", -10, 0},
	      {"8c8d", -12, 0},
	      {"4a3b", -14, 0},
	      {"5c5d", -16, 0},
	      {"1c1d", -18, 0},
	      {"9c9d", -20, 0},
	      {"6a5b", -22, 0},
	      {"7a6b", -24, 0}}},
	    {"startpos moves 2g2f",
	     true,
	     {{"3c3d", -10, 0},
	      {"8c8d", -12, 0},
	      {"4a3b", -14, 0},
	      {"5c5d", -16, 0},
	      {"1c1d", -18, 0},
	      {"9c9d", -20, 0},
	      {"6a5b", -22, 0},
	      {"7a6b", -24, 0}}},
	};
	write_book(dir, two, 2);
	static const char *const specs[] = {"startpos moves 7g7f", "startpos moves 2g2f"};
	static const double weights[] = {3, 1};
	for (int mode = 0; mode < 2; mode++) {
		BookDB *db = NULL;
		Selector *s = NULL;
		Plan *plan = NULL;
		char err[BOOKDB_ERRLEN];
		BookDBOptions bo = {.read_only = true};
		SelOptions so = {.kif_bonus = 0, .draw_value = 0};
		assert_int_equal(bookdb_open(&db, dir, &bo, err), 0);
		assert_int_equal(sel_new(&s, &so), 0);
		assert_int_equal(sel_load(s, db), 0);
		/* PV, and cover for White's book (White to move at both roots: its
		 * best reply only, then nothing): one batch a root at most. */
		PlanOptions po;
		plan_options_init(&po);
		po.mode = mode == 0 ? PLAN_PV : PLAN_COVER;
		po.book_side = PLAN_SIDE_BLACK;
		po.window = 100;
		po.batch = 1;
		assert_int_equal(plan_new(&plan, s, &po, specs, weights, 2, err), 0);
		SelLeaf *l = malloc(sizeof *l);
		Position *pos = malloc(sizeof *pos);
		assert_non_null(l);
		assert_non_null(pos);
		int got = 0;
		for (int i = 0; i < 8; i++) {
			assert_int_equal(plan_next(plan, l, pos), 1);
			assert_int_equal(sel_lease(s, l->key), 0);
			/* Below its root: one move after the root's position. */
			assert_int_equal(l->nmoves, 1);
			Position *root = malloc(sizeof *root);
			assert_non_null(root);
			assert_int_equal(position_parse(root, specs[l->root], err), 0);
			pos_do_move(root, l->moves[0]);
			assert_true(key_equal(pos_key(root), pos_key(pos)));
			assert_true(key_equal(pos_key(pos), l->key));
			free(root);
			got++;
		}
		/* 8 leaves at weights 3:1: 6 and 2. */
		assert_int_equal(plan_served(plan, 0), 6);
		assert_int_equal(plan_served(plan, 1), 2);
		/* Then the rest, the first root running dry first. */
		while (plan_next(plan, l, pos) == 1) {
			assert_int_equal(sel_lease(s, l->key), 0);
			got++;
		}
		assert_int_equal(got, 16);
		assert_int_equal(plan_served(plan, 0), 8);
		/* A root that does not parse is named. */
		static const char *const bad[] = {"startpos moves 7g7f 7g7f"};
		Plan *p2 = NULL;
		assert_int_equal(plan_new(&p2, s, &po, bad, NULL, 1, err), SEL_EINVAL);
		assert_non_null(strstr(err, "7g7f 7g7f"));
		free(l);
		free(pos);
		plan_free(plan);
		sel_free(s);
		bookdb_free(db);
	}
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__unthought_root_is_the_first_leaf(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	static const TPos none[] = {{"startpos moves 7g7f", false, {{"3c3d", 0, 3}}}};
	write_book(dir, none, 1);
	Selector *s = open_selector(dir, 100);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	assert_int_equal(sel_select(l, s), 1);
	assert_leaf(l, "startpos", 0);
	assert_int_equal(sel_lease(s, l->key), 0);
	assert_int_equal(sel_select(l, s), 0);
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__select_command_prints_json_leaves(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	write_book(dir, SMALL, sizeof SMALL / sizeof SMALL[0]);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s select %s --count 3 --select pv --json", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	json_error_t je;
	json_t *o = json_loads(out, 0, &je);
	assert_non_null(o);
	json_t *leaves = json_object_get(o, "leaves");
	assert_int_equal(json_array_size(leaves), 3);
	static const char *const lines[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d",
	                                    "startpos moves 2g2f 3c3d"};
	static const int values[] = {40, 50, 25};
	for (size_t i = 0; i < 3; i++) {
		json_t *l = json_array_get(leaves, i);
		assert_string_equal(json_string_value(json_object_get(l, "line")), lines[i]);
		assert_int_equal(json_integer_value(json_object_get(l, "value")), values[i]);
		char hex[KEY_HEX_LEN];
		key_to_hex(line_key(lines[i]), hex);
		assert_string_equal(json_string_value(json_object_get(l, "key")), hex);
		Position *pos = malloc(sizeof *pos);
		assert_non_null(pos);
		assert_int_equal(
		    sfen_parse(pos, json_string_value(json_object_get(l, "sfen")), NULL, NULL), 0);
		assert_true(key_equal(pos_key(pos), line_key(lines[i])));
		free(pos);
	}
	json_decref(o);
	free(out);
	free(err);
	/* The default policy (cover, both colours), and errors name the input:
	 * Black's book (7g7f, White's replies within 15 of its best: 8c8d and
	 * 3c3d), then White's: Black's moves within 15 of the best (7g7f, whose
	 * replies are leased now, so 2g2f) and White's best reply to each, one
	 * at a time as the leases take them away, down to 5g5f. */
	rc = ts_runf(&out, &err, "%s select %s --window 15 --json", ts_joseki(), dir);
	assert_int_equal(rc, 0);
	o = json_loads(out, 0, &je);
	assert_non_null(o);
	leaves = json_object_get(o, "leaves");
	static const char *const cover[] = {"startpos moves 7g7f 8c8d", "startpos moves 7g7f 3c3d",
	                                    "startpos moves 2g2f 3c3d", "startpos moves 2g2f 8c8d",
	                                    "startpos moves 5g5f"};
	assert_int_equal(json_array_size(leaves), 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(leaves, i), "line")),
		    cover[i]);
	json_decref(o);
	free(out);
	free(err);
	/* Two roots, taken in turn; a root that is not the start position is
	 * written as an SFEN line. */
	char roots[4096];
	snprintf(roots, sizeof roots, "%s/roots.txt", dir);
	static const char rtext[] = "# roots\nstartpos\n\nstartpos moves 2g2f\n";
	assert_int_equal(ts_write_file(roots, rtext, sizeof rtext - 1), 0);
	rc = ts_runf(&out, &err, "%s select %s --roots %s --count 2 --select pv --json",
	             ts_joseki(), dir, roots);
	assert_int_equal(rc, 0);
	o = json_loads(out, 0, &je);
	assert_non_null(o);
	leaves = json_object_get(o, "leaves");
	assert_int_equal(json_array_size(leaves), 2);
	json_t *l0 = json_array_get(leaves, 0), *l1 = json_array_get(leaves, 1);
	assert_string_equal(json_string_value(json_object_get(l0, "line")),
	                    "startpos moves 7g7f 8c8d");
	assert_int_equal(json_integer_value(json_object_get(l1, "value")), -25); /* White's view */
	const char *line1 = json_string_value(json_object_get(l1, "line"));
	assert_true(!strncmp(line1, "sfen ", 5));
	assert_non_null(strstr(line1, " moves 3c3d"));
	assert_true(key_equal(line_key(line1), line_key("startpos moves 2g2f 3c3d")));
	json_decref(o);
	free(out);
	free(err);
	rc = ts_runf(&out, &err, "%s select %s --roots %s/nonexistent", ts_joseki(), dir, dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "nonexistent"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* A synthetic book of n positions (seed 9) at dir/b, its path in book. */
static void synth_n(char *book, size_t cap, const char *dir, int n)
{
	snprintf(book, cap, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions %d --seed 9 --quiet",
	                         ts_joseki(), book, n),
	                 0);
}

/* A 3,000-position synthetic book dir/b (its path in book); the test's seed. */
static unsigned long long synth_book(char *book, size_t cap, const char *dir, const char *test)
{
	unsigned long long seed = ts_seed(test);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s synth %s/b --positions 3000 --seed %llu --quiet",
	                 ts_joseki(), dir, seed % 1000000);
	assert_int_equal(rc, 0);
	free(out);
	free(err);
	snprintf(book, cap, "%s/b", dir);
	return seed;
}

/* pos thought: up to four legal moves with pseudo-random evals from salt. */
static void think_position(BookRecord *rec, const Position *pos, unsigned long long salt)
{
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal);
	bookdb_record_init(rec, pos);
	rec->flags = BOOKDB_REC_THOUGHT;
	rec->think_depth = 5;
	for (int j = 0; j < n && j < 4; j++) {
		BookMove *m = &rec->moves[rec->nmoves++];
		memset(m, 0, sizeof *m);
		m->move = legal[j];
		m->flags = BOOKDB_MOVE_EVAL;
		m->eval = (int16_t)((int)((salt + (unsigned)j * 17) % 400) - 200);
		m->depth = 5;
	}
}

/* The leaf thought (think_position). */
static void think_leaf(BookRecord *rec, Position *pos, const SelLeaf *a, unsigned long long salt)
{
	pos_set_startpos(pos);
	for (int j = 0; j < a->nmoves; j++) pos_do_move(pos, a->moves[j]);
	assert_true(key_equal(pos_key(pos), a->key));
	think_position(rec, pos, salt);
}

/*
 * On a synthetic book (transpositions and repetition cycles included), a
 * selector that keeps its bounds across leases and results finds the same
 * value at every step as one that searches from scratch each time, and the
 * same leaf as two that read the book lazily (the key filter from a pass over
 * the book, and from minimax's kept graph).
 */
/* A lazy selector over book (opened read-only in *db), its key filter from
 * minimax's kept graph when kept, else a pass over the book (its first
 * search waits for the filter: the run goes through it). */
static Selector *lazy_selector(BookDB **db, const char *book, bool kept)
{
	Selector *z = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions o = {.read_only = true};
	static BookMinimaxHook hook;
	hook = bookmm_hook(NULL);
	assert_int_equal(bookdb_open(db, book, &o, err), 0);
	assert_int_equal(sel_new(&z, NULL), 0);
	assert_int_equal(sel_attach(z, *db, kept ? &hook : NULL), 0);
	assert_int_equal(sel_add_root(z, line_key("startpos"), BLACK), 0);
	return z;
}

/* After a search of z: its filter built, from the kept graph or not. */
static void assert_filter(const Selector *z, bool kept)
{
	SelStats st;
	sel_get_stats(&st, z);
	assert_true(st.filter_ready);
	assert_int_equal(st.filter_kept, kept);
}

/*
 * A deferred key filter (sel_defer_filter): not built at sel_attach; the
 * first search starts it and waits for it, and selects what a selector whose
 * filter was built at once selects; sel_start_filter starts it at once.
 */
static void test_bookgen__a_deferred_filter_starts_with_the_first_search(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	(void)synth_book(book, sizeof book, dir, "deferred_filter");
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions o = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &o, err), 0);
	Selector *d, *e, *f;
	SelLeaf *ld = malloc(sizeof *ld), *le = malloc(sizeof *le);
	assert_true(ld && le);
	assert_int_equal(sel_new(&d, NULL), 0);
	assert_int_equal(sel_new(&e, NULL), 0);
	assert_int_equal(sel_new(&f, NULL), 0);
	sel_defer_filter(d, true);
	sel_defer_filter(f, true);
	assert_int_equal(sel_attach(d, db, NULL), 0);
	assert_int_equal(sel_attach(e, db, NULL), 0);
	assert_int_equal(sel_attach(f, db, NULL), 0);
	SelStats st;
	/* Time enough for a filter started at attach to be built (it is not:
	 * nothing to wait for; a broken deferral may go unseen on a slow
	 * machine, never the other way). */
	usleep(200000);
	sel_get_stats(&st, d);
	assert_false(st.filter_ready);
	for (Selector **s = (Selector *[]){d, e, f, NULL}; *s; s++)
		assert_int_equal(sel_add_root(*s, line_key("startpos"), BLACK), 0);
	assert_int_equal(sel_select(ld, d), 1);
	assert_int_equal(sel_select(le, e), 1);
	assert_true(key_equal(ld->key, le->key));
	sel_get_stats(&st, d);
	assert_true(st.filter_ready);
	/* Started by hand, it is built without a search (waited for as it
	 * comes; the harness's time limit stops a filter that never does). */
	sel_start_filter(f);
	for (sel_get_stats(&st, f); !st.filter_ready; sel_get_stats(&st, f)) usleep(10000);
	free(ld);
	free(le);
	sel_free(d);
	sel_free(e);
	sel_free(f);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A snapshot's key filter is read by the filter's thread, not by sel_restore
 * (at 10^9 positions it is 2 GB of the snapshot, which the coordinator read
 * before it listened): deferred, it is not read until the first search,
 * which goes on meanwhile (LMDB answers its lookups) and selects what the
 * selector that wrote the snapshot goes on selecting. A damaged filter
 * section (its hash wrong) is built from the book instead, with the same
 * leaves.
 */
static void test_bookgen__a_restored_filter_is_read_beside_the_selector(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], good[4200], bad[4200], serr[SNAP_ERRLEN];
	(void)synth_book(book, sizeof book, dir, "restored_filter");
	BookDB *db = NULL;
	Selector *a = lazy_selector(&db, book, false), *r[2];
	SelLeaf *l = malloc(sizeof *l), *m = malloc(sizeof *m);
	assert_true(l && m);
	for (int i = 0; i < 30 && sel_select(l, a) == 1; i++)
		assert_int_equal(sel_lease(a, l->key), 0);
	BookStamp stamp;
	assert_int_equal(bookdb_stamp(&stamp, db), 0);
	snprintf(good, sizeof good, "%s/good.snap", dir);
	snprintf(bad, sizeof bad, "%s/bad.snap", dir);
	for (const char *path = good;; path = bad) {
		SnapWriter *w = NULL;
		assert_int_equal(snap_create(&w, path, &stamp, 0, serr), 0);
		assert_int_equal(sel_snapshot_write(a, w), 0);
		assert_int_equal(snap_commit(w, serr), 0);
		if (path == bad) break;
	}
	/* The filter is the last of seven sections, before the table (32 bytes
	 * an entry, and its hash). */
	ts_flip_byte(bad, (long)ts_file_size(bad) - 7 * 32 - 8 - 16, 0x10);
	for (int k = 0; k < 2; k++) {
		SnapReader *rd = NULL;
		assert_int_equal(snap_open(&rd, k ? bad : good, &stamp, serr), 0);
		assert_int_equal(sel_new(&r[k], NULL), 0);
		sel_defer_filter(r[k], true);
		assert_int_equal(sel_restore(r[k], db, rd, serr), 0);
		snap_close(rd);
		SelStats st;
		sel_get_stats(&st, r[k]);
		assert_false(st.filter_ready);   /* not read by the restore */
		assert_true(st.fixed_bytes > 0); /* counted at its size all the same */
		assert_int_equal(sel_add_root(r[k], line_key("startpos"), BLACK), 0);
	}
	int n = 0;
	for (; n < 20; n++) {
		int g = sel_select(l, a);
		for (int k = 0; k < 2; k++) {
			assert_int_equal(sel_select(m, r[k]), g);
			if (!g) continue;
			assert_true(key_equal(m->key, l->key));
			assert_int_equal(m->value, l->value);
			assert_int_equal(sel_lease(r[k], l->key), 0);
		}
		if (!g) break;
		assert_int_equal(sel_lease(a, l->key), 0);
	}
	assert_true(n > 10);
	for (int k = 0; k < 2; k++) {
		sel_snapshot_wait(r[k]);
		assert_filter(r[k], false);
		sel_free(r[k]);
	}
	free(l);
	free(m);
	sel_free(a);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* a's snapshot written to dir/s.snap and restored into a new selector over
 * db (its filter deferred to the first search if asked), rooted at the start. */
static Selector *snapshot_restored(Selector *a, BookDB *db, const char *dir, bool defer)
{
	char path[4200], serr[SNAP_ERRLEN];
	BookStamp stamp;
	assert_int_equal(bookdb_stamp(&stamp, db), 0);
	snprintf(path, sizeof path, "%s/s.snap", dir);
	SnapWriter *w = NULL;
	assert_int_equal(snap_create(&w, path, &stamp, 0, serr), 0);
	assert_int_equal(sel_snapshot_write(a, w), 0);
	assert_int_equal(snap_commit(w, serr), 0);
	SnapReader *rd = NULL;
	Selector *b = NULL;
	assert_int_equal(snap_open(&rd, path, &stamp, serr), 0);
	assert_int_equal(sel_new(&b, NULL), 0);
	if (defer) sel_defer_filter(b, true);
	if (sel_restore(b, db, rd, serr) != 0) fail_msg("restore: %s", serr);
	snap_close(rd);
	assert_int_equal(sel_add_root(b, line_key("startpos"), BLACK), 0);
	return b;
}

/* A restored selector's yield: waits for the filter's thread to have read
 * the filter, then notes whether the search has joined it. */
typedef struct {
	Selector *s;
	int calls;
	bool joined;
} JoinWatch;

static bool watch_join(void *ctx)
{
	JoinWatch *w = ctx;
	SelStats st;
	/* Started here if the search has not yet (a yield in the walk over the
	 * pending changes comes before): made while the search goes on. */
	sel_start_filter(w->s);
	for (sel_get_stats(&st, w->s); !st.filter_ready; sel_get_stats(&st, w->s)) usleep(1000);
	SelKeyFilter f;
	w->joined |= sel_key_filter(w->s, &f);
	w->calls++;
	return false;
}

/*
 * A restored selector's filter, read by its thread while a search goes on,
 * is joined by that search at its next yield once read, not only by the
 * next call: the first search after a coordinator's restart may go on
 * across many slices (its whole run, on a book larger than memory), and
 * until the filter is joined each child it meets is looked up in the book
 * and the provisional walk has no filter (2026-12-04: a restart of the grown
 * 10^8 book, 576 results/s, no read spared).
 */
static void test_bookgen__a_search_joins_a_restored_filter_once_read(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	(void)synth_book(book, sizeof book, dir, "join_filter");
	BookDB *db = NULL;
	Selector *a = lazy_selector(&db, book, false);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	for (int i = 0; i < 1500 && sel_select(l, a) == 1; i++)
		assert_int_equal(sel_lease(a, l->key), 0);
	Selector *r = snapshot_restored(a, db, dir, true);
	/* A search over the whole restored graph: many yields. */
	sel_clear_bounds(r);
	JoinWatch jw = {.s = r};
	sel_set_yield(r, watch_join, &jw);
	assert_int_equal(sel_select(l, r), 1);
	print_message("%d yields\n", jw.calls);
	assert_true(jw.calls >= 2);
	assert_true(jw.joined);
	sel_free(r);
	free(l);
	sel_free(a);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The pending list (nodes whose ancestors' bounds are still to be cleared)
 * holds a node once per change: a snapshot of a small graph changed often
 * (a coordinator stopped seconds into its first search: 4 entries for 3
 * nodes) is written with each node once and restores, where the restore
 * refused it as damaged ("the counts").
 */
static void test_bookgen__a_snapshot_of_nodes_changed_twice_restores(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	(void)synth_book(book, sizeof book, dir, "pending_twice");
	BookDB *db = NULL;
	Selector *a = lazy_selector(&db, book, false), *b = NULL;
	Key k = line_key("startpos moves 7g7f");
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sel_lease(a, k), 0);
		assert_int_equal(sel_release(a, k), 0);
	}
	SelStats st;
	sel_get_stats(&st, a);
	assert_true(st.nodes < 6); /* fewer nodes than changes */
	b = snapshot_restored(a, db, dir, false);
	SelLeaf *l = malloc(sizeof *l), *m = malloc(sizeof *m);
	assert_true(l && m);
	assert_int_equal(sel_select(l, a), 1);
	assert_int_equal(sel_select(m, b), 1);
	assert_true(key_equal(l->key, m->key));
	free(l);
	free(m);
	sel_free(a);
	sel_free(b);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__incremental_bounds_agree_with_full_searches(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	unsigned long long seed = synth_book(book, sizeof book, dir, "incremental_bounds");
	/* A minimax run keeps the graph the lazy selector y fills its key filter
	 * from (and adds the transpositions it found to the records as moves). */
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s minimax %s --quiet", ts_joseki(), book), 0);
	free(out);
	free(err);
	SelStats st;
	Selector *s = open_selector(book, 100), *r = open_selector(book, 100);
	SelLeaf *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c),
	        *d = malloc(sizeof *d);
	/* z and y read positions lazily, as they meet them. */
	BookDB *zdb = NULL, *ydb = NULL;
	Selector *z = lazy_selector(&zdb, book, false), *y = lazy_selector(&ydb, book, true);
	assert_non_null(c);
	assert_non_null(d);
	assert_non_null(a);
	assert_non_null(b);
	uint64_t full_visits = 0;
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(pos);
	assert_non_null(rec);
	for (int step = 0; step < 200; step++) {
		sel_clear_bounds(r);
		SelStats r0, r1;
		sel_get_stats(&r0, r);
		int g1 = sel_select(a, s), g2 = sel_select(b, r), g3 = sel_select(c, z),
		    g4 = sel_select(d, y);
		sel_get_stats(&r1, r);
		full_visits += r1.visits - r0.visits;
		if (step == 0) {
			assert_filter(z, false);
			assert_filter(y, true);
		}
		assert_int_equal(g1, g2);
		assert_int_equal(g1, g3);
		assert_int_equal(g1, g4);
		if (!g1) break;
		assert_int_equal(a->value, b->value);
		assert_int_equal(a->value, c->value);
		assert_true(key_equal(a->key, c->key));
		assert_true(key_equal(a->key, d->key));
		assert_false(sel_is_thought(s, a->key));
		assert_false(sel_is_leased(s, a->key));
		assert_int_equal(sel_lease(s, a->key), 0);
		assert_int_equal(sel_lease(r, a->key), 0);
		assert_int_equal(sel_lease(z, a->key), 0);
		assert_int_equal(sel_lease(y, a->key), 0);
		if (step % 3 == 0) {
			think_leaf(rec, pos, a, seed + (unsigned)step * 31);
			assert_int_equal(sel_add_result(s, a->key, rec), 0);
			assert_int_equal(sel_add_result(r, a->key, rec), 0);
			assert_int_equal(sel_add_result(z, a->key, rec), 0);
			assert_int_equal(sel_add_result(y, a->key, rec), 0);
			assert_true(sel_is_thought(s, a->key));
		}
	}
	sel_get_stats(&st, s);
	/* The point of the bounds: far fewer nodes than full searches. */
	assert_true(st.visits < full_visits / 2);
	sel_get_stats(&st, z);
	assert_true(st.filtered > 0); /* absent keys were answered by the filter */
	assert_true(st.fetches > 0);
	/* Children's records were read ahead, and the selections stayed the same. */
	assert_true(st.read_ahead > 0);
	free(pos);
	free(rec);
	free(c);
	free(d);
	sel_free(z);
	bookdb_free(zdb);
	sel_free(y);
	bookdb_free(ydb);
	free(a);
	free(b);
	close_selector(s);
	close_selector(r);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The coordinator's pattern: many leaves leased at once, their results (or
 * releases) coming in later in another order, so invalidation walks meet
 * nodes that earlier walks cleared and no search has visited since (where a
 * walk stops). Every selection's value and the root value must still equal
 * those of a selector that forgets all its bounds before each search.
 */
static void test_bookgen__bounds_stay_exact_with_many_leases_outstanding(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	unsigned long long seed = synth_book(book, sizeof book, dir, "many_leases");
	Selector *s = open_selector(book, 100), *r = open_selector(book, 100);
	enum { BATCH = 8, HELD = 4 };
	SelLeaf *held = calloc(BATCH * (HELD + 1), sizeof *held), *b = malloc(sizeof *b);
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(held);
	assert_non_null(b);
	assert_non_null(pos);
	assert_non_null(rec);
	int nheld = 0, checked = 0, thought = 0;
	for (int round = 0; round < 60; round++) {
		/* A lease: up to BATCH leaves, each compared with a full search. */
		for (int i = 0; i < BATCH; i++) {
			sel_clear_bounds(r);
			int g1 = sel_select(&held[nheld], s), g2 = sel_select(b, r);
			assert_int_equal(g1, g2);
			if (!g1) break;
			assert_int_equal(held[nheld].value, b->value);
			assert_int_equal(sel_lease(s, held[nheld].key), 0);
			assert_int_equal(sel_lease(r, held[nheld].key), 0);
			nheld++;
			checked++;
		}
		/* The oldest lease comes back: most leaves thought, newest first,
		 * every fifth released unthought. */
		if (nheld >= BATCH * HELD || round % 7 == 6) {
			int k = nheld < BATCH ? nheld : BATCH;
			for (int i = k - 1; i >= 0; i--) {
				SelLeaf *a = &held[i];
				if ((round + i) % 5 == 0) {
					assert_int_equal(sel_release(s, a->key), 0);
					assert_int_equal(sel_release(r, a->key), 0);
					continue;
				}
				think_leaf(rec, pos, a, seed + (unsigned)(round * 131 + i * 7));
				assert_int_equal(sel_add_result(s, a->key, rec), 0);
				assert_int_equal(sel_add_result(r, a->key, rec), 0);
				thought++;
			}
			memmove(held, held + k, (size_t)(nheld - k) * sizeof *held);
			nheld -= k;
			int v1, v2;
			bool h1, h2;
			sel_clear_bounds(r);
			assert_int_equal(sel_root_value(&v1, &h1, s, 0), 0);
			assert_int_equal(sel_root_value(&v2, &h2, r, 0), 0);
			assert_int_equal(h1, h2);
			assert_int_equal(v1, v2);
		}
	}
	assert_true(checked > 300);
	assert_true(thought > 150);
	free(pos);
	free(rec);
	free(held);
	free(b);
	close_selector(s);
	close_selector(r);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The graph within a budget (sel_trim), on a synthetic book, in the
 * coordinator's pattern: leases outstanding, results and releases coming back
 * in another order. Three lazy selectors: t1 trimmed to almost nothing after
 * every call, t2 trimmed in part whenever its graph passes a small budget, u
 * never; r (u's twin) forgets its bounds before each search.
 *
 * While the book does not change (leases and releases only) all four find
 * the same value at almost every step (the whole graph at every one), and
 * the same leaf but where two tie (a trim forgets which move the last search
 * tried first below what it dropped). Every other step each trimmed one's
 * value with its bounds is compared with its value with none.
 * Once results come (written to the book and committed, as sel_trim
 * requires), a node built again after a trim sees the positions thought
 * since as transpositions, where the whole graph's node built before does
 * not, so values may part: then each trimmed selector's value with its
 * bounds is compared with its value with them all cleared, which the links
 * a trim adds keep equal (and, for a late result to a leaf a trim may have
 * dropped, the clearing of every bound) but in one rare case. A trimmed selector's
 * snapshot restores to the same leaves as it selects.
 */
static void put_committed(BookDB *db, Key key, const BookRecord *rec)
{
	BookTxn *txn = NULL;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_put(txn, key, rec), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
}

/* Whether s's root value with its bounds equals its value with none (the
 * bounds cleared after). */
static bool bounds_exact(Selector *s)
{
	int v1, v2;
	bool h1, h2;
	assert_int_equal(sel_root_value(&v1, &h1, s, 0), 0);
	sel_clear_bounds(s);
	assert_int_equal(sel_root_value(&v2, &h2, s, 0), 0);
	return h1 == h2 && v1 == v2;
}

/* s's root value with its bounds equals r's with none (r may be s). */
static void assert_root_values_agree(Selector *s, Selector *r)
{
	int v1, v2;
	bool h1, h2;
	assert_int_equal(sel_root_value(&v1, &h1, s, 0), 0);
	sel_clear_bounds(r);
	assert_int_equal(sel_root_value(&v2, &h2, r, 0), 0);
	assert_int_equal(h1, h2);
	assert_int_equal(v1, v2);
}

/* One run from seed; strict: a seed known to part nowhere (below). Returns
 * the bounds that depend on the path the trims kept (SelStats.path_kept). */
static uint64_t trimmed_run(unsigned long long seed, bool strict)
{
	char *dir = ts_mkdtemp(), book[4096], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 3000 --seed %llu --quiet",
	                         ts_joseki(), book, seed % 1000000),
	                 0);
	BookDB *db = NULL;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	enum { NSEL = 4, BATCH = 8, HELD = 4, STILL = 20, ROUNDS = 60 };
	Selector *sel[NSEL]; /* t1, t2, u, r */
	const uint64_t budget[2] = {1, 100u << 10};
	for (int k = 0; k < NSEL; k++) {
		assert_int_equal(sel_new(&sel[k], NULL), 0);
		assert_int_equal(sel_attach(sel[k], db, NULL), 0);
		assert_int_equal(sel_add_root(sel[k], line_key("startpos"), BLACK), 0);
	}
	SelLeaf *held = calloc(BATCH * (HELD + 1), sizeof *held), *b = malloc(sizeof *b);
	SelLeaf late[BATCH];
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(held);
	assert_non_null(b);
	assert_non_null(pos);
	assert_non_null(rec);
	int nheld = 0, same = 0, ties = 0, parted = 0, exact = 0, stale = 0, thought = 0, nlate = 0,
	    latecount = 0;
	uint64_t least_after_trim = UINT64_MAX;
	for (int round = 0; round < ROUNDS; round++) {
		bool still = round < STILL; /* the book unchanged */
		for (int i = 0; i < BATCH; i++) {
			/* r's leaf in held; the others' compared with it while the
			 * book is still, else each trimmed one's bounds checked. */
			sel_clear_bounds(sel[3]);
			int g = sel_select(&held[nheld], sel[3]);
			for (int k = 0; k < 3; k++) {
				int gk = sel_select(b, sel[k]);
				assert_true(gk >= 0);
				/* Each trimmed one's own bounds, every other step once
				 * results come (a check clears them: while the book is
				 * still, they are left to pile up over many trims). */
				if (!still && k < 2 && i % 2 == 1) {
					if (!bounds_exact(sel[k])) stale++;
					exact++;
				}
				if (!still && k < 2) continue;
				/* While the book is still: the whole graph always
				 * agrees with r; a trimmed one mostly (it may part
				 * where lines tie: below). */
				if (k < 2 &&
				    (gk != g || (g == 1 && b->value != held[nheld].value))) {
					parted++;
					continue;
				}
				assert_int_equal(gk, g);
				if (g != 1) continue;
				assert_int_equal(b->value, held[nheld].value);
				same++;
				if (key_equal(b->key, held[nheld].key)) continue;
				assert_false(sel_is_thought(sel[3], b->key));
				assert_false(sel_is_leased(sel[3], b->key));
				ties++;
			}
			if (!g) break;
			for (int k = 0; k < NSEL; k++)
				assert_int_equal(sel_lease(sel[k], held[nheld].key), 0);
			nheld++;
			for (int k = 0; k < 2; k++) assert_true(sel_trim(sel[k], budget[k]) >= 0);
			SelStats st;
			sel_get_stats(&st, sel[0]);
			if (st.trims && st.nodes < least_after_trim) least_after_trim = st.nodes;
		}
		if (nheld < BATCH * HELD && round % 7 != 6) continue;
		/* The oldest lease comes back, newest first: thought once the
		 * book may change, every fifth released. */
		/* A late result: a leaf released in an earlier round, which t1's
		 * trims have dropped since (unless it was selected and leased
		 * again). */
		if (!still && nlate) {
			SelLeaf *a = &late[--nlate];
			bool leased = false;
			for (int h = 0; h < nheld; h++)
				if (key_equal(held[h].key, a->key)) leased = true;
			if (!leased && !sel_is_thought(sel[2], a->key)) {
				think_leaf(rec, pos, a, seed + (unsigned)round * 977);
				put_committed(db, a->key, rec);
				for (int j = 0; j < NSEL; j++)
					assert_int_equal(sel_add_result(sel[j], a->key, rec), 0);
				thought++;
				latecount++;
			}
		}
		int k = nheld < BATCH ? nheld : BATCH;
		for (int i = k - 1; i >= 0; i--) {
			SelLeaf *a = &held[i];
			if (still || (round + i) % 5 == 0) {
				for (int j = 0; j < NSEL; j++)
					assert_int_equal(sel_release(sel[j], a->key), 0);
				if (!still && nlate < BATCH) late[nlate++] = *a;
				continue;
			}
			think_leaf(rec, pos, a, seed + (unsigned)(round * 131 + i * 7));
			put_committed(db, a->key, rec);
			for (int j = 0; j < NSEL; j++)
				assert_int_equal(sel_add_result(sel[j], a->key, rec), 0);
			thought++;
		}
		memmove(held, held + k, (size_t)(nheld - k) * sizeof *held);
		nheld -= k;
		for (int j = 0; j < 2; j++) {
			assert_true(sel_trim(sel[j], budget[j]) >= 0);
			if (!still && !bounds_exact(sel[j])) stale++;
		}
	}
	assert_true(ties < same / 10);
	assert_true(exact > 250);
	/* The one way a bound goes stale (docs/bookgen.md, "Known limits"): a
	 * change at a position a trim dropped from below an edgeless node, met
	 * again since by another path. Rare: 0 in 197 of 201 seeds tried, at
	 * most 2 in the others; at most one check in twenty here. */
	assert_true(stale * 20 <= exact);
	/* Most steps agree with the whole graph. (On one seed of 201 tried a
	 * trimmed one parted from it for good, 49 of 160 steps, its own bounds
	 * exact throughout: a graph that differs, not a stale bound; most
	 * likely a ban made along another of two tied lines.) */
	assert_true(same >= 480);  /* the whole graph's 160 and 320, and the trimmed ones' */
	assert_true(parted <= 80); /* 320 steps while the book is still but a quarter */
	if (strict) {
		assert_int_equal(parted, 0);
		assert_true(stale <= 2);
	}
	assert_true(thought > 80);
	assert_true(latecount > 3);
	SelStats s1, s2, su;
	sel_get_stats(&s1, sel[0]);
	sel_get_stats(&s2, sel[1]);
	sel_get_stats(&su, sel[2]);
	/* t1 was trimmed after every call, to little more than the roots and
	 * the leases; t2 now and then; u never. A late result cleared t1's
	 * bounds. The trims cost expansions again, not other values. */
	fprintf(stderr,
	        "trimmed: %d leaves the same (%d by a tie, %d parted), %d bound checks (%d stale), "
	        "%d results (%d late); "
	        "t1 %llu trims, t2 %llu (%llu nodes dropped); u %llu nodes; bounds that depend on "
	        "the path kept by the trims: t1 %llu, t2 %llu\n",
	        same, ties, parted, exact, stale, thought, latecount, (unsigned long long)s1.trims,
	        (unsigned long long)s2.trims, (unsigned long long)s2.trimmed,
	        (unsigned long long)su.nodes, (unsigned long long)s1.path_kept,
	        (unsigned long long)s2.path_kept);
	assert_true(s1.trims >= (uint64_t)ROUNDS * 4);
	assert_true(least_after_trim < su.nodes / 4);
	assert_true(s1.walk_ups > 0);
	assert_true(s2.trims > 0 && s2.trims < s1.trims);
	assert_true(s2.trimmed > 0);
	assert_int_equal(su.trims, 0);
	assert_int_equal(su.trim_clears, 0);
	assert_true(s1.expansions > su.expansions);
	/* What they cost again is counted: moves built again for nodes a trim
	 * took the edges of, nodes made again for keys it dropped. */
	assert_true(s1.reexpansions > 0 && s1.reexpansions < s1.expansions);
	assert_true(s2.remade > 0);
	assert_int_equal(su.reexpansions, 0);
	assert_int_equal(su.remade, 0);
	/* t2's snapshot, restored: the same leaves as t2 goes on selecting, but
	 * for ties. The restored one holds less beside its graph (8 KB less on
	 * seed 1029), so its trims keep other nodes, and its searches may meet
	 * equal lines in another order: seed 1029 parts at the 14th leaf, down
	 * two lines whose leaves are worth the same, one each (3 of 61 other
	 * seeds tried have 1-2 such leaves). Both leaves are then leased in both. */
	Selector *t3 = snapshot_restored(sel[1], db, dir, false);
	int restored_ties = 0;
	for (int i = 0; i < 20; i++) {
		int g1 = sel_select(b, t3), g2 = sel_select(&held[0], sel[1]);
		assert_int_equal(g1, g2);
		if (!g1) break;
		assert_int_equal(b->value, held[0].value);
		if (!key_equal(b->key, held[0].key)) {
			restored_ties++;
			for (Selector **o = (Selector *[]){t3, sel[1], NULL}; *o; o++) {
				assert_false(sel_is_thought(*o, b->key) ||
				             sel_is_thought(*o, held[0].key));
				assert_int_equal(sel_lease(*o, held[0].key), 0);
			}
		}
		assert_int_equal(sel_lease(t3, b->key), 0);
		assert_int_equal(sel_lease(sel[1], b->key), 0);
		assert_true(sel_trim(t3, budget[1]) >= 0);
		assert_true(sel_trim(sel[1], budget[1]) >= 0);
	}
	fprintf(stderr, "restored: %d leaves of 20 tied\n", restored_ties);
	assert_true(restored_ties <= 10);
	sel_free(t3);
	for (int k = 0; k < NSEL; k++) sel_free(sel[k]);
	bookdb_free(db);
	free(pos);
	free(rec);
	free(held);
	free(b);
	ts_rmtree(dir);
	free(dir);
	return s1.path_kept + s2.path_kept;
}

/* A seed given (TEST_SEED) runs alone, within the tolerances; else three
 * seeds on which nothing parts (nor on seeds 1 to 10), so that a trim that
 * loses a link shows: with the shortcut links left out, 35, 9 and 27 steps
 * part on them; with the edgeless nodes' links dropped, 5, 8 and 7. */
static void test_bookgen__a_trimmed_graph_selects_what_the_whole_one_does(void **state)
{
	(void)state;
	const char *given = getenv("TEST_SEED");
	if (given && *given) {
		(void)trimmed_run(ts_seed("trimmed_graph"), false);
		return;
	}
	static const unsigned long long SEEDS[] = {2, 4, 7};
	uint64_t kept = 0;
	for (size_t i = 0; i < sizeof SEEDS / sizeof *SEEDS; i++)
		kept += trimmed_run(SEEDS[i], true);
	/* The bounds a trim keeps (their nodes and the nodes they depend on
	 * kept, renumbered) stay exact with the rest: 39 of them on these
	 * seeds, 0 when every trim forgot them all. */
	assert_true(kept > 0);
}

/*
 * Searching in slices (sel_set_yield), as the coordinator does: a selector
 * whose searches yield, and whose yield function makes the changes the
 * coordinator's other requests make meanwhile (results, releases), selects at
 * every step what a selector that searches at once and gets the same changes
 * after each search selects; during the yield the queries already answer with
 * the changes. A yield that stops the search makes the call return
 * SEL_ESTOPPED, and the next search is as if it had not been stopped (and a
 * lazy selector stopped so can be written to a snapshot). A lazy selector
 * yields while it waits for its key filter.
 */
typedef struct {
	Selector *s;
	int calls, stop_at;
	const SelLeaf *give; /* the changes for the next yield: thought, every fifth released */
	int ngive, given_in_call;
	unsigned long long salt;
	BookRecord *rec;
	Position *pos;
} Slicer;

static void give_changes(Selector *s, const SelLeaf *a, int n, unsigned long long salt,
                         BookRecord *rec, Position *pos)
{
	for (int i = 0; i < n; i++) {
		if (i % 5 == 4) {
			assert_int_equal(sel_release(s, a[i].key), 0);
			continue;
		}
		think_leaf(rec, pos, &a[i], salt + (unsigned)i * 7);
		assert_int_equal(sel_add_result(s, a[i].key, rec), 0);
	}
}

static bool slicer_yield(void *arg)
{
	Slicer *y = arg;
	y->calls++;
	if (y->ngive) {
		give_changes(y->s, y->give, y->ngive, y->salt, y->rec, y->pos);
		for (int i = 0; i < y->ngive; i++) { /* the queries see the kept changes */
			assert_int_equal(sel_is_thought(y->s, y->give[i].key), i % 5 != 4);
			assert_false(sel_is_leased(y->s, y->give[i].key));
		}
		y->given_in_call += y->ngive;
		y->ngive = 0;
	}
	return y->stop_at && y->calls >= y->stop_at;
}

static void test_bookgen__searches_in_slices_select_what_whole_searches_do(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	unsigned long long seed = synth_book(book, sizeof book, dir, "slices");
	Selector *s = open_selector(book, 100), *r = open_selector(book, 100);
	BookDB *zdb = NULL;
	Selector *z = lazy_selector(&zdb, book, false);
	enum { BATCH = 8 };
	SelLeaf *held = calloc(2 * BATCH, sizeof *held), *b = malloc(sizeof *b),
	        *c = malloc(sizeof *c);
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(held);
	assert_non_null(b);
	assert_non_null(c);
	assert_non_null(pos);
	assert_non_null(rec);
	Slicer ys = {.s = s, .rec = rec, .pos = pos}, yz = {.s = z, .rec = rec, .pos = pos};
	sel_set_yield(s, slicer_yield, &ys);
	sel_set_yield(z, slicer_yield, &yz);
	int steps = 0, stops = 0, zstops = 0;
	for (int round = 0; round < 40; round++) {
		/* The last round's leases come back during the first search. */
		int nback = round ? BATCH : 0;
		unsigned long long salt = seed + (unsigned)round * 131;
		ys.give = yz.give = held;
		ys.ngive = yz.ngive = nback;
		ys.salt = yz.salt = salt;
		SelLeaf fresh[BATCH];
		int n = 0;
		for (int i = 0; i < BATCH; i++) {
			/* In every third round, searches without changes to make
			 * are stopped at their second yield (if they yield twice). */
			if (!ys.ngive && round % 3 == 0) ys.stop_at = ys.calls + 2;
			int g1 = sel_select(&fresh[n], s);
			if (g1 == SEL_ESTOPPED) {
				stops++;
				ys.stop_at = 0;
				g1 = sel_select(&fresh[n], s);
			}
			ys.stop_at = 0;
			if (!yz.ngive && round % 3 == 0) yz.stop_at = yz.calls + 2;
			int g3 = sel_select(c, z);
			if (g3 == SEL_ESTOPPED) {
				/* A stopped search leaves a state that can be saved, once
				 * the key filter is in (a loaded machine may still be
				 * building it when the search stops waiting for it). */
				zstops++;
				sel_snapshot_wait(z);
				assert_true(sel_snapshot_ready(z));
				yz.stop_at = 0;
				g3 = sel_select(c, z);
			}
			yz.stop_at = 0;
			int g2 = sel_select(b, r);
			/* Whatever a yield did not take (a search too short to
			 * yield) is given now, to all three alike. */
			if (ys.ngive) give_changes(s, ys.give, ys.ngive, salt, rec, pos);
			if (yz.ngive) give_changes(z, yz.give, yz.ngive, salt, rec, pos);
			ys.ngive = yz.ngive = 0;
			if (i == 0) give_changes(r, held, nback, salt, rec, pos);
			assert_int_equal(g1, g2);
			assert_int_equal(g3, g2);
			if (!g1) break;
			assert_int_equal(fresh[n].value, b->value);
			assert_true(key_equal(fresh[n].key, b->key));
			assert_int_equal(c->value, b->value);
			assert_true(key_equal(c->key, b->key));
			assert_int_equal(sel_lease(s, b->key), 0);
			assert_int_equal(sel_lease(r, b->key), 0);
			assert_int_equal(sel_lease(z, b->key), 0);
			n++;
			steps++;
		}
		memcpy(held, fresh, (size_t)n * sizeof *held);
		if (n < BATCH) break;
	}
	assert_root_values_agree(s, r);
	print_message("slices: %d steps, %d and %d stops, %d and %d yields, %d and %d changes in "
	              "them\n",
	              steps, stops, zstops, ys.calls, yz.calls, ys.given_in_call, yz.given_in_call);
	assert_true(steps > 200);
	assert_true(stops > 5 && zstops > 5);
	/* Changes came while a search was suspended (most of the others when
	 * the search found its bounds and yielded not at all). */
	assert_true(ys.given_in_call > 30);
	assert_true(yz.given_in_call > 30);
	assert_true(yz.calls > 0);
	free(pos);
	free(rec);
	free(held);
	free(b);
	free(c);
	close_selector(s);
	close_selector(r);
	sel_free(z);
	bookdb_free(zdb);
	ts_rmtree(dir);
	free(dir);
}

/* Every record of book without minimax's values (as before its first run). */
static void strip_minimax(const char *book)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db;
	BookTxn *txn;
	BookIter *it;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	uint64_t n = 0;
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_POS), 0);
	Key *keys = malloc(n * sizeof *keys);
	assert_non_null(keys);
	size_t nk = 0;
	Key k;
	const uint8_t *val;
	size_t len;
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	while (bookdb_iter_next(it, &k, &val, &len) == 1) keys[nk++] = k;
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	size_t stripped = 0;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	for (size_t i = 0; i < nk; i++) {
		assert_int_equal(bookdb_get(rec, txn, keys[i]), 0);
		if (!(rec->flags & BOOKDB_REC_MINIMAX)) continue;
		rec->flags &= (uint8_t)~BOOKDB_REC_MINIMAX;
		for (int j = 0; j < rec->nmoves; j++)
			rec->moves[j].value = 0, rec->moves[j].dist = 0;
		assert_int_equal(bookdb_put(txn, keys[i], rec), 0);
		stripped++;
	}
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_true(stripped > nk / 2);
	free(rec);
	free(keys);
	bookdb_free(db);
}

/* The keys of n leaves of book under mode (each leased before the next); the
 * expansions of the first search. */
static int leaves_of(const char *book, PlanMode mode, Key *keys, int n, uint64_t *first,
                     SelStats *end)
{
	BookDB *db = NULL;
	Selector *z = NULL;
	BookDBOptions o = {.read_only = true};
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, book, &o, err), 0);
	assert_int_equal(sel_new(&z, NULL), 0);
	assert_int_equal(sel_attach(z, db, NULL), 0);
	PlanOptions po;
	plan_options_init(&po);
	po.mode = mode;
	Plan *plan;
	assert_int_equal(plan_new(&plan, z, &po, NULL, NULL, 0, err), 0); /* the root */
	SelLeaf *l = malloc(sizeof *l);
	Position *pos = malloc(sizeof *pos);
	assert_non_null(l);
	assert_non_null(pos);
	int got = 0;
	while (got < n && plan_next(plan, l, pos) == 1) {
		if (got == 0) {
			SelStats st;
			sel_get_stats(&st, z);
			*first = st.expansions;
		}
		keys[got++] = l->key;
		assert_int_equal(sel_lease(z, l->key), 0);
	}
	sel_get_stats(end, z);
	free(l);
	free(pos);
	plan_free(plan);
	sel_free(z);
	bookdb_free(db);
	return got;
}

/*
 * A position's moves are searched in the order of minimax's values, when
 * its last run left them in the record (the selector's values are much the
 * same, so the other moves are mostly refuted at once): on a synthetic
 * book (a fixed seed: the comparison needs a book without ties between
 * lines) the selection is the same, leaf for leaf, as over the same book
 * with those values taken out, under both policies, and the first search
 * expands fewer positions.
 */
/* Past its --memory the selector's arrays are files ($TMPDIR): the same
 * leaves, lazily and preloaded. */
static void test_bookgen__select_past_its_memory_budget_selects_the_same_leaves(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s synth %s/b --positions 300000 --seed 4 --quiet && "
	                         "%s minimax %s/b --full --quiet",
	                         ts_joseki(), dir, ts_joseki(), dir),
	                 0);
	for (int preload = 0; preload < 2; preload++) {
		const char *p = preload ? " --preload" : "";
		char *a = NULL, *b = NULL, *line = NULL;
		assert_int_equal(
		    ts_runf(&a, NULL, "%s select %s/b --count 40 --json%s", ts_joseki(), dir, p),
		    0);
		assert_int_equal(ts_runf(&b, NULL, "%s select %s/b --count 40 --json --memory 1M%s",
		                         ts_joseki(), dir, p),
		                 0);
		assert_true(strlen(a) > 1000);
		assert_string_equal(a, b);
		assert_int_equal(ts_runf(&line, NULL, "%s select %s/b --bench --memory 1M%s",
		                         ts_joseki(), dir, p),
		                 0);
		const char *f = strstr(line, " files_kb ");
		assert_non_null(f);
		print_message("%s", line);
		assert_true(atoll(f + 10) > 1024);
		free(a);
		free(b);
		free(line);
	}
	/* Where the files cannot be made, the arrays stay in memory: the same
	 * leaves, and the command says why. */
	char *a = NULL, *b = NULL, *err = NULL;
	assert_int_equal(
	    ts_runf(&a, NULL, "%s select %s/b --count 20 --json --preload", ts_joseki(), dir), 0);
	assert_int_equal(ts_runf(&b, &err,
	                         "TMPDIR=%s/none %s select %s/b --count 20 --json --preload "
	                         "--memory 1M",
	                         dir, ts_joseki(), dir),
	                 0);
	print_message("%s", err);
	assert_string_equal(a, b);
	assert_non_null(strstr(err, "select: arrays past --memory were kept in memory: "));
	assert_non_null(strstr(err, "/none: No such file or directory"));
	free(a);
	free(b);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* The graph's bytes of a lazy selector just attached to book. */
static uint64_t attached_graph_bytes(const char *book, uint64_t memory)
{
	BookDB *db = NULL;
	Selector *z = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions o = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &o, err), 0);
	assert_int_equal(sel_new(&z, NULL), 0);
	sel_set_memory(z, memory);
	assert_int_equal(sel_attach(z, db, NULL), 0);
	SelStats st;
	sel_get_stats(&st, z);
	sel_free(z);
	bookdb_free(db);
	return st.graph_bytes;
}

/* The key map made at attach is for as many nodes as the book has
 * positions, but for at most an eighth of the budget (16 bytes a node): on
 * 20,000 positions with a budget of 1 MiB, 8,192 nodes' worth; a search grows
 * it as it needs, and selects the same leaves. The selector's own budget
 * (sel_set_memory, the coordinator's) caps it the same way. */
static void test_bookgen__the_key_map_made_at_attach_keeps_to_an_eighth_of_the_budget(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_n(book, sizeof book, dir, 20000);
	uint64_t whole = attached_graph_bytes(book, 0);
	Key a[30], b[30];
	uint64_t fa, fb;
	SelStats st;
	int na = leaves_of(book, PLAN_COVER, a, 30, &fa, &st);
	bigmem_configure(1 << 20, NULL);
	uint64_t capped = attached_graph_bytes(book, 0);
	int nb = leaves_of(book, PLAN_COVER, b, 30, &fb, &st);
	bigmem_configure(0, NULL);
	print_message("    graph at attach: %llu bytes, %llu with 1 MiB\n",
	              (unsigned long long)whole, (unsigned long long)capped);
	assert_true(whole >= 40000 * 8);                  /* 2 slots of 8 bytes a position */
	assert_true(capped <= (1 << 20) / 8 + 64 * 1024); /* the map, and the first nodes */
	assert_true(attached_graph_bytes(book, 1 << 20) <= (1 << 20) / 8 + 64 * 1024);
	assert_int_equal(na, 30);
	assert_int_equal(nb, na);
	assert_memory_equal(a, b, sizeof a);
	assert_true(fa == fb);
	ts_rmtree(dir);
	free(dir);
}

/*
 * The node map grows past what was made for the book when the graph holds
 * more nodes than that (an eighth of the budget); a trim that keeps fewer
 * takes it back to its size, so that the selector is within its budget
 * after the trim. Before, the grown map stayed: a coordinator's status
 * showed its bytes above its budget for good (a new user's run: 7.2 MB of
 * 4 MB with 7,925 nodes).
 */
static void test_bookgen__a_trim_takes_a_grown_map_back(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_n(book, sizeof book, dir, 60000);
	BookDB *db = NULL;
	char err[BOOKDB_ERRLEN];
	BookDBOptions o = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &o, err), 0);
	Selector *s = NULL;
	uint64_t budget = 1024 * 1024;
	assert_int_equal(sel_new(&s, NULL), 0);
	sel_set_memory(s, budget);
	assert_int_equal(sel_attach(s, db, NULL), 0);
	assert_int_equal(sel_add_root(s, line_key("startpos"), BLACK), 0);
	SelStats st0, st;
	sel_get_stats(&st0, s);
	SelLeaf *l = malloc(sizeof *l);
	assert_non_null(l);
	/* Leaves leased until the graph holds three times the nodes the map
	 * was made for (budget / 128), never trimmed. */
	for (sel_get_stats(&st, s); st.nodes < 3 * budget / 128; sel_get_stats(&st, s)) {
		if (sel_select(l, s) != 1) break;
		assert_int_equal(sel_lease(s, l->key), 0);
	}
	print_message("    %llu nodes, %llu bytes (of them fixed %llu) for a budget of %llu\n",
	              (unsigned long long)st.nodes, (unsigned long long)st.used_bytes,
	              (unsigned long long)st.fixed_bytes, (unsigned long long)budget);
	assert_true(st.nodes >= 3 * budget / 128);
	assert_true(st.used_bytes > budget);
	/* Trimmed after every few leaves, as a coordinator does after its
	 * commits, until the graph is as small as the map was made for. */
	int rounds = 0;
	for (; rounds < 200; rounds++) {
		assert_true(sel_trim(s, budget) >= 0);
		sel_get_stats(&st, s);
		if (st.nodes < budget / 128) break;
		for (int k = 0; k < 3 && sel_select(l, s) == 1; k++)
			assert_int_equal(sel_lease(s, l->key), 0);
	}
	print_message("    after %d trims: %llu nodes, %llu bytes\n", rounds + 1,
	              (unsigned long long)st.nodes, (unsigned long long)st.used_bytes);
	assert_true(st.nodes < budget / 128);
	assert_true(st.used_bytes <= budget);
	assert_int_equal(st.fixed_bytes, st0.fixed_bytes);
	/* And it still selects. */
	assert_int_equal(sel_select(l, s), 1);
	free(l);
	sel_free(s);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* The book at path opened (read-write), and n selectors attached to it from
 * the start position: the book. */
static BookDB *twins_open(Selector **s, int n, const char *path)
{
	BookDB *db = NULL;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	for (int k = 0; k < n; k++) {
		assert_int_equal(sel_new(&s[k], NULL), 0);
		assert_int_equal(sel_attach(s[k], db, NULL), 0);
		assert_int_equal(sel_add_root(s[k], line_key("startpos"), BLACK), 0);
	}
	return db;
}

/* Up to max leaves selected in s[0], each the same in the other n - 1 (b
 * their scratch), leased in all: how many. */
static int twins_lease(Selector **s, int n, SelLeaf *l, int max, SelLeaf *b)
{
	int got = 0;
	for (; got < max; got++) {
		int g = sel_select(&l[got], s[0]);
		assert_true(g >= 0);
		if (!g) break;
		for (int k = 0; k < n; k++) {
			if (k) {
				assert_int_equal(sel_select(b, s[k]), 1);
				assert_true(key_equal(b->key, l[got].key));
			}
			assert_int_equal(sel_lease(s[k], l[got].key), 0);
		}
	}
	return got;
}

/* Leases k in s: whether that made its node (the graph did not hold it). */
static bool lease_makes_node(Selector *s, Key k)
{
	SelStats st;
	sel_get_stats(&st, s);
	uint64_t had = st.nodes;
	assert_int_equal(sel_lease(s, k), 0);
	sel_get_stats(&st, s);
	return st.nodes > had;
}

/* n thought positions new to the book, from random walks of 8-40 plies from
 * the start (rng), written to db and given to s as results, as a
 * coordinator's workers' would be; those the book held already (a
 * transposition) are not written again. How many were written. */
static int grow_book(BookDB *db, Selector *s, int n, uint64_t *rng)
{
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_true(rec && pos);
	Move legal[MOVEGEN_MAX];
	int wrote = 0;
	for (int i = 0; i < n; i++) {
		pos_set_startpos(pos);
		int plies = 8 + (int)(ts_rand(rng) % 33), nl = 0;
		for (int p = 0; p < plies && (nl = movegen_legal(pos, legal)) > 0; p++)
			pos_do_move(pos, legal[ts_rand(rng) % (uint64_t)nl]);
		if ((nl = movegen_legal(pos, legal)) == 0) continue;
		BookTxn *txn = NULL;
		BookRecord *had = malloc(sizeof *had);
		assert_non_null(had);
		assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
		int g = bookdb_get(had, txn, pos_key(pos));
		bookdb_txn_abort(txn);
		free(had);
		if (g == 0) continue;
		think_position(rec, pos, ts_rand(rng));
		put_committed(db, pos_key(pos), rec);
		assert_int_equal(sel_add_result(s, pos_key(pos), rec), 0);
		wrote++;
	}
	free(rec);
	free(pos);
	return wrote;
}

/* The share of random keys (rng) that pass s's key filter, in per mille;
 * every key of the book must pass it. */
static int filter_passes(Selector *s, BookDB *db, uint64_t *rng)
{
	SelKeyFilter f;
	assert_true(sel_key_filter(s, &f));
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, txn), 0);
	Key k;
	const uint8_t *val;
	size_t len;
	int rc, book = 0;
	while ((rc = bookdb_iter_next(it, &k, &val, &len)) == 1) {
		assert_true(sel_key_filter_maybe(&f, k));
		book++;
	}
	assert_int_equal(rc, 0);
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	int pass = 0;
	for (int i = 0; i < 20000; i++) {
		uint64_t hi = ts_rand(rng), lo = ts_rand(rng);
		pass += sel_key_filter_maybe(&f, (Key){.hi = hi, .lo = lo});
	}
	print_message("%d book keys; %d of 20000 random keys pass\n", book, pass);
	return pass / 20;
}

/*
 * A key filter the book outgrew is made again for the book as it is: by a
 * restore from a snapshot written when the book was 20 times smaller (the
 * filter in it made for that book: a restart after a long run, where the
 * snapshot's filter let 96-98 % of absent keys through, 2026-12-06), and
 * by the selector that wrote it, beside the filter in use, at its next
 * search. Every book key passes either, and the leaves are those of a new
 * selector's. The graph's keys are not in the filter (a lookup asks the
 * node map first): what fills it is the book.
 */
static void test_bookgen__a_filter_the_book_outgrew_is_made_again(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_n(book, sizeof book, dir, 300);
	uint64_t rng = ts_seed("filter_outgrown");
	Selector *a = NULL, *c = NULL;
	BookDB *db = twins_open(&a, 1, book);
	SelLeaf *l = malloc(sizeof *l), *m = malloc(sizeof *m);
	Key leased[50];
	int nleased = 0;
	assert_true(l && m);
	for (; nleased < 50 && sel_select(l, a) == 1; nleased++) {
		assert_int_equal(sel_lease(a, l->key), 0);
		leased[nleased] = l->key;
	}
	SelStats st;
	sel_get_stats(&st, a);
	uint64_t small = st.filter_bytes;
	assert_true(st.filter_ready);
	assert_true(small <= sel_filter_bytes(300));
	int grew = grow_book(db, a, 6000, &rng);
	print_message("%d positions written\n", grew);
	assert_true(grew > 5000);
	/* No search since: a's filter is the small one, in its snapshot too. */
	sel_get_stats(&st, a);
	assert_int_equal(st.filter_bytes, small);
	assert_int_equal(st.filter_regrows, 0);
	Selector *b = snapshot_restored(a, db, dir, false);
	uint64_t count = 0;
	BookTxn *txn = NULL;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_count(&count, txn, BOOKDB_POS), 0);
	bookdb_txn_abort(txn);
	assert_true(count >= (uint64_t)grew + 300);
	assert_int_equal(sel_select(m, b), 1);
	sel_snapshot_wait(b); /* the filter taken in, whichever it is */
	sel_get_stats(&st, b);
	assert_true(st.filter_ready);
	assert_int_equal(st.filter_bytes, sel_filter_bytes(count));
	assert_int_equal(st.filter_keys, count);
	assert_int_equal(st.filter_regrows, 1); /* the restore's */
	/* 16-32 bits a key: about 0.2 % pass; the snapshot's, some 80 %. */
	assert_true(filter_passes(b, db, &rng) < 20);
	/* a's next search starts a new filter; a later one takes it in. */
	assert_int_equal(sel_select(l, a), 1);
	for (sel_get_stats(&st, a); !st.filter_regrows; sel_get_stats(&st, a)) {
		usleep(1000);
		assert_int_equal(sel_select(l, a), 1);
	}
	assert_true(st.filter_bytes >= sel_filter_bytes(count) + small); /* the old one kept */
	assert_int_equal(st.filter_keys, count);
	assert_true(filter_passes(a, db, &rng) < 20);
	/* Freed once no reader of sel_key_filter's needs it (the coordinator's
	 * walk): the one in use stays. */
	sel_free_retired(a);
	sel_get_stats(&st, a);
	assert_int_equal(st.filter_bytes, sel_filter_bytes(count));
	assert_true(filter_passes(a, db, &rng) < 20);
	/* The same leaves as a new selector's (with a's leases), leased in
	 * turn. */
	assert_int_equal(sel_new(&c, NULL), 0);
	assert_int_equal(sel_attach(c, db, NULL), 0);
	assert_int_equal(sel_add_root(c, line_key("startpos"), BLACK), 0);
	for (int i = 0; i < nleased; i++)
		if (sel_is_leased(a, leased[i])) assert_int_equal(sel_lease(c, leased[i]), 0);
	int same = 0;
	for (; same < 40; same++) {
		int g = sel_select(l, a);
		assert_true(g >= 0);
		if (!g) break;
		for (Selector **o = (Selector *[]){b, c, NULL}; *o; o++) {
			assert_int_equal(sel_select(m, *o), 1);
			assert_true(key_equal(m->key, l->key));
			assert_int_equal(m->value, l->value);
			assert_int_equal(sel_lease(*o, l->key), 0);
		}
		assert_int_equal(sel_lease(a, l->key), 0);
	}
	assert_true(same > 20);
	free(l);
	free(m);
	sel_free(a);
	sel_free(b);
	sel_free(c);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A result for a position new to the book: the expanded nodes it is a child
 * of by a move their records do not store (a transposition, the child in
 * neither graph nor book when they were built) gain that edge, as a selector
 * attached now builds them; a move marked avoided (prune, avoid) stays out.
 * Values from Black's view: 2g2f 8c8d 40 until 2g2f 3c3d gets -300 through
 * its own stored move; 7g7f 8c8d 20, and 7g7f 3c3d (avoided) -500.
 */
static void test_bookgen__a_result_new_to_the_book_gets_the_transpositions_into_it(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const TPos tps[] = {
	    {"startpos", true, {{"2g2f", 40, 0}, {"7g7f", 20, 0}}},
	    {"startpos moves 2g2f", true, {{"8c8d", -40, 0}}},
	    {"startpos moves 7g7f", true, {{"3c3d", -20, 0}, {"8c8d", -20, 0}}},
	};
	write_book(dir, tps, 3);
	BookRecord *rec = malloc(sizeof *rec);
	SelLeaf *l = malloc(sizeof *l), *m = malloc(sizeof *m);
	assert_true(rec && l && m);
	Selector *a = NULL, *c = NULL;
	BookDB *db = twins_open(&a, 1, dir);
	/* 7g7f's 3c3d avoided: no edge, a child the search never meets. */
	fill_record(rec, &tps[2]);
	rec->moves[0].flags |= BOOKDB_MOVE_AVOIDED;
	put_committed(db, line_key(tps[2].line), rec);
	assert_int_equal(sel_add_result(a, line_key(tps[2].line), rec), 0);
	assert_int_equal(sel_select(l, a), 1);
	assert_leaf(l, "startpos moves 2g2f 8c8d", 40);
	SelStats st;
	sel_get_stats(&st, a);
	assert_int_equal(st.new_edges, 0);
	/* Both children new to the book, written first (as a coordinator's
	 * writer may): the graph held neither, and each parent is built. */
	const TPos news[] = {
	    {"startpos moves 2g2f 3c3d", true, {{"7g7f", -300, 0}}},
	    {"startpos moves 7g7f 3c3d", true, {{"2g2f", -500, 0}}},
	};
	for (int k = 0; k < 2; k++) {
		fill_record(rec, &news[k]);
		assert_false(sel_is_thought(a, line_key(news[k].line)));
		put_committed(db, line_key(news[k].line), rec);
		assert_int_equal(sel_add_result(a, line_key(news[k].line), rec), 0);
	}
	sel_get_stats(&st, a);
	assert_int_equal(st.new_edges, 1);
	/* 2g2f now worth -300: 7g7f, 8c8d the leaf (not 3c3d's -500). */
	assert_int_equal(sel_select(l, a), 1);
	assert_leaf(l, "startpos moves 7g7f 8c8d", 20);
	assert_int_equal(sel_new(&c, NULL), 0);
	assert_int_equal(sel_attach(c, db, NULL), 0);
	assert_int_equal(sel_add_root(c, line_key("startpos"), BLACK), 0);
	assert_int_equal(sel_select(m, c), 1);
	assert_leaf(m, "startpos moves 7g7f 8c8d", 20);
	/* Leased, the next leaf of each is 2g2f 3c3d's stored move. */
	assert_int_equal(sel_lease(a, l->key), 0);
	assert_int_equal(sel_lease(c, l->key), 0);
	assert_int_equal(sel_select(l, a), 1);
	assert_leaf(l, "startpos moves 2g2f 3c3d 7g7f", -300);
	assert_int_equal(sel_select(m, c), 1);
	assert_leaf(m, "startpos moves 2g2f 3c3d 7g7f", -300);
	/* A result for a position the book held already adds no edge. */
	fill_record(rec, &news[0]);
	put_committed(db, line_key(news[0].line), rec);
	assert_int_equal(sel_add_result(a, line_key(news[0].line), rec), 0);
	sel_get_stats(&st, a);
	assert_int_equal(st.new_edges, 1);
	free(rec);
	free(l);
	free(m);
	sel_free(a);
	sel_free(c);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A mate by a pawn pushed is a move; by a pawn dropped it is none: of two
 * expanded roots one move above a mated position new to the book, the one
 * that pushes gains the edge, the one that would drop does not. White's
 * king on 1a, its knight on 2a and pawn on 2b; Black's gold on 2c guards 1b.
 */
static void test_bookgen__a_pawn_drop_mate_is_no_edge_into_a_new_position(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	const TPos tps[] = {
	    {"sfen 7nk/7p1/7G1/9/9/9/9/9/4K4 b P 1", true, {{"5i4h", 10, 0}}},
	    {"sfen 7nk/7p1/7GP/9/9/9/9/9/4K4 b - 1", true, {{"5i4h", 10, 0}}},
	};
	write_book(dir, tps, 2);
	BookRecord *rec = malloc(sizeof *rec);
	SelLeaf *l = malloc(sizeof *l);
	assert_true(rec && l);
	Selector *a = NULL;
	BookDB *db = NULL;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, dir, NULL, err), 0);
	assert_int_equal(sel_new(&a, NULL), 0);
	assert_int_equal(sel_attach(a, db, NULL), 0);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(sel_add_root(a, line_key(tps[r].line), BLACK), r);
		assert_int_equal(sel_select_root(l, a, r), 1); /* the root expanded */
	}
	const TPos mated = {"sfen 7nk/7pP/7G1/9/9/9/9/9/4K4 w - 2", true, {{NULL, 0, 0}}};
	fill_record(rec, &mated);
	assert_int_equal(rec->nmoves, 0);
	put_committed(db, line_key(mated.line), rec);
	assert_int_equal(sel_add_result(a, line_key(mated.line), rec), 0);
	SelStats st;
	sel_get_stats(&st, a);
	assert_int_equal(st.new_edges, 1);
	free(rec);
	free(l);
	sel_free(a);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/*
 * After a trim, a change to a position the graph does not hold: a key no
 * search met leaves the bounds (no bound can depend on it); a result for a
 * leaf a trim dropped invalidates the nodes above it, found through the
 * positions dropped (a walk up, no bound cleared); one dropped before every
 * bound was cleared needs nothing. A selector restored from a trimmed one's
 * snapshot does not know what was dropped: such a result there clears every
 * bound. The bounds are exact throughout.
 */
static void test_bookgen__a_result_below_a_trimmed_part_reaches_the_bounds_above(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_book(book, sizeof book, dir, "trim_dropped");
	enum { NEVER, DROPPED, CLEARED, PROBE, N, LEAVES = 24 };
	Selector *s[N];
	BookDB *db = twins_open(s, N, book);
	/* The same leaves leased in each, then released and trimmed away:
	 * nothing kept but the root, its children, and what is leased. */
	SelLeaf *l = calloc(LEAVES, sizeof *l), *b = malloc(sizeof *b);
	assert_true(l && b);
	int n = twins_lease(s, N, l, LEAVES, b);
	SelStats st;
	for (int k = 0; k < N; k++) {
		for (int i = 0; i < n; i++) assert_int_equal(sel_release(s[k], l[i].key), 0);
		/* The bounds the releases cleared stored again, then the trim. */
		int v;
		bool has;
		assert_int_equal(sel_root_value(&v, &has, s[k], 0), 0);
		assert_true(sel_trim(s[k], 1) > 0);
		sel_get_stats(&st, s[k]);
		assert_int_equal(st.trim_clears, 0);
	}
	/* The deepest leaf the trim dropped. */
	int deep = -1;
	for (int i = 0; i < n; i++)
		if (lease_makes_node(s[PROBE], l[i].key) &&
		    (deep < 0 || l[i].nmoves > l[deep].nmoves))
			deep = i;
	assert_true(deep >= 0);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_true(rec && pos);
	/* A key no search met, leased: nothing to clear, nothing to walk. */
	const Key never = {0x5eed0123456789abULL, 0x0fedcba987654321ULL};
	assert_int_equal(sel_lease(s[NEVER], never), 0);
	assert_int_equal(sel_select(b, s[NEVER]), 1);
	sel_get_stats(&st, s[NEVER]);
	assert_int_equal(st.trim_clears, 0);
	assert_int_equal(st.walk_ups, 0);
	assert_true(bounds_exact(s[NEVER]));
	/* A late result for a leaf the trim dropped: the nodes above it found
	 * through the positions dropped, no bound cleared. */
	think_leaf(rec, pos, &l[deep], 77);
	put_committed(db, l[deep].key, rec);
	sel_get_stats(&st, s[DROPPED]);
	uint64_t before = st.invalidated;
	assert_int_equal(sel_add_result(s[DROPPED], l[deep].key, rec), 0);
	assert_int_equal(sel_select(b, s[DROPPED]), 1);
	sel_get_stats(&st, s[DROPPED]);
	/* The root's bound at least, which the root's child above the leaf
	 * holds too (kept by the trim without its edges); the result's own
	 * node, new, has none to clear. */
	assert_true(st.invalidated >= before + 2);
	assert_int_equal(st.walk_ups, 1);
	assert_int_equal(st.walk_gave_up, 0);
	assert_int_equal(st.trim_clears, 0);
	/* Dropped before every bound was cleared: nothing depends on it. */
	sel_clear_bounds(s[CLEARED]);
	assert_int_equal(sel_add_result(s[CLEARED], l[deep].key, rec), 0);
	assert_int_equal(sel_select(b, s[CLEARED]), 1);
	sel_get_stats(&st, s[CLEARED]);
	assert_int_equal(st.walk_ups, 0);
	assert_int_equal(st.trim_clears, 0);
	for (int k = DROPPED; k < PROBE; k++) assert_true(bounds_exact(s[k]));
	/* Restored from a trimmed selector's snapshot, which does not say what
	 * was dropped: a result below a part it may have dropped clears every
	 * bound (the walk meets too many positions that may have been), once. */
	assert_true(sel_trim(s[NEVER], 1) > 0);
	Selector *r = snapshot_restored(s[NEVER], db, dir, false);
	int other = -1;
	for (int i = 0; i < n && other < 0; i++)
		if (lease_makes_node(r, l[i].key)) other = i;
	assert_true(other >= 0);
	think_leaf(rec, pos, &l[other], 78);
	put_committed(db, l[other].key, rec);
	assert_int_equal(sel_add_result(r, l[other].key, rec), 0);
	assert_int_equal(sel_select(b, r), 1);
	assert_int_equal(sel_select(b, r), 1);
	sel_get_stats(&st, r);
	assert_int_equal(st.walk_gave_up, 1);
	assert_int_equal(st.trim_clears, 1);
	assert_true(bounds_exact(r));
	free(rec);
	free(pos);
	sel_free(r);
	for (int k = 0; k < N; k++) sel_free(s[k]);
	bookdb_free(db);
	free(l);
	free(b);
	ts_rmtree(dir);
	free(dir);
}

/* The bytes of the trims' filter of dropped keys for a graph of n nodes
 * (sel_g_gone_begin: 16 bits a key, four times the nodes, at least 1,024,
 * in a power of two of 64-byte blocks). */
static uint64_t gone_filter_bytes(uint64_t n)
{
	uint64_t cap = 4 * (n > 1024 ? n : 1024), blocks = 1;
	while (blocks * 512 < cap * 16) blocks *= 2;
	return blocks * 64;
}

/*
 * A trim that takes the edges of nodes searched long ago keeps the nodes
 * below them that hold a bound (the value of the book below them), as
 * nodes: a change below such a node then costs a search along the changed
 * line again, not of every part of the book the trim dropped. Before, they
 * were dropped with the edges above them: after each trim of a coordinator
 * on a 10⁸ book the selection gave about half the leaves it gave before,
 * for minutes (docs/notes/cluster.md, "The bounds a trim keeps").
 */
static void test_bookgen__a_change_below_a_trimmed_node_searches_its_line_again(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_n(book, sizeof book, dir, 20000);
	enum { TRIMMED, WHOLE, N, LEAVES = 400, OLD = 200 };
	Selector *s[N];
	BookDB *db = twins_open(s, N, book);
	/* Leaves leased one by one: the lines of the first were searched
	 * longest ago when the trim comes. */
	SelLeaf *l = calloc(LEAVES, sizeof *l), *b = malloc(sizeof *b);
	assert_true(l && b);
	int n = twins_lease(s, N, l, LEAVES, b);
	assert_true(n > OLD);
	/* A trim that keeps the edges of about a quarter of the graph (the
	 * whole twin never has one). */
	SelStats st, sw;
	sel_get_stats(&st, s[TRIMMED]);
	uint64_t graph = st.used_bytes - st.fixed_bytes, gone = gone_filter_bytes(st.nodes);
	assert_true(gone < graph / 2);
	assert_true(sel_trim(s[TRIMMED], st.fixed_bytes + gone + graph / 2) > 0);
	/* Results for the oldest leaves, in both twins; then the root's value
	 * and twenty leaves more. */
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_true(rec && pos);
	sel_get_stats(&st, s[TRIMMED]);
	sel_get_stats(&sw, s[WHOLE]);
	uint64_t e0 = st.expansions, r0 = st.reexpansions, w0 = sw.expansions;
	for (int i = 0; i < OLD; i++) {
		think_leaf(rec, pos, &l[i], 91 + (unsigned long long)i);
		put_committed(db, l[i].key, rec);
		for (int k = 0; k < N; k++)
			assert_int_equal(sel_add_result(s[k], l[i].key, rec), 0);
	}
	for (int k = 0; k < N; k++) {
		int v;
		bool has;
		assert_int_equal(sel_root_value(&v, &has, s[k], 0), 0);
		for (int j = 0; j < 20 && sel_select(b, s[k]) == 1; j++)
			assert_int_equal(sel_lease(s[k], b->key), 0);
	}
	sel_get_stats(&st, s[TRIMMED]);
	sel_get_stats(&sw, s[WHOLE]);
	uint64_t et = st.expansions - e0, rt = st.reexpansions - r0, ew = sw.expansions - w0;
	print_message("    %d results below the part trimmed: %llu expansions (%llu of nodes a "
	              "trim took the edges of), the whole twin %llu\n",
	              OLD, (unsigned long long)et, (unsigned long long)rt, (unsigned long long)ew);
	assert_int_equal(st.trim_clears, 0);
	/* Beyond the twin's, the trimmed one builds again the nodes on the
	 * changed lines that lost their edges, and little else: the nodes below
	 * them with a bound were kept, and answer from it. */
	assert_true(rt > 0);
	assert_true(et - rt <= ew + ew / 4 + 8);
	assert_true(bounds_exact(s[TRIMMED]));
	free(rec);
	free(pos);
	for (int k = 0; k < N; k++) sel_free(s[k]);
	bookdb_free(db);
	free(l);
	free(b);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A trim in slices (sel_trim_slice, as the coordinator's service runs it
 * between rounds) leaves the graph a trim at once leaves. Twins on the same
 * synthetic book, their graphs grown past the budget by the same leases:
 * a trimmed at once, b a slice at a time (no time: a pass over a chunk of
 * nodes each). Between b's slices it is given releases and a result
 * (committed to the book first), which it keeps (its queries answer with
 * them) and makes at the trim's end; a is given them after its trim. Then
 * both hold the same nodes, edges and links and select the same leaves. A
 * third twin's search, begun while its trim is under way, finishes the trim
 * first, and selects as the others do.
 */
static void test_bookgen__a_trim_in_slices_leaves_what_one_at_once_does(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096];
	synth_n(book, sizeof book, dir, 20000);
	enum { A, B, C, N };
	Selector *s[N];
	BookDB *db = twins_open(s, N, book);
	enum { LEASED = 200, OLD = 40 };
	SelLeaf *l = malloc(sizeof *l), *lk = malloc(sizeof *lk), *old = malloc(OLD * sizeof *old);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	assert_true(l && lk && old && rec && pos);
	/* 200 leaves leased, the same in each; the first 40 kept. */
	for (int i = 0; i < LEASED; i++) {
		assert_int_equal(sel_select(l, s[A]), 1);
		if (i < OLD) old[i] = *l;
		for (int k = 0; k < N; k++) {
			if (k != A) {
				assert_int_equal(sel_select(lk, s[k]), 1);
				assert_true(key_equal(lk->key, l->key));
			}
			assert_int_equal(sel_lease(s[k], l->key), 0);
		}
	}
	SelStats st[N];
	sel_get_stats(&st[A], s[A]);
	uint64_t budget = st[A].used_bytes - (st[A].used_bytes - st[A].fixed_bytes) / 2;
	print_message("    %llu nodes, %llu bytes used, a budget of %llu\n",
	              (unsigned long long)st[A].nodes, (unsigned long long)st[A].used_bytes,
	              (unsigned long long)budget);
	int64_t dropped = sel_trim(s[A], budget);
	assert_true(dropped > 0);
	/* b in slices, the changes given between them. */
	int slices = 0;
	int64_t r = 0;
	/* After each slice but the first: the oldest leases released, one a
	 * slice (made during the trim, a node it would have kept for its lease
	 * would go), and at the second a result for the first leaf leased (its
	 * node's invalidation would name it by its index before the trim). */
	int released = 0;
	do {
		r = sel_trim_slice(s[B], budget, 0);
		slices++;
		if (!sel_trimming(s[B])) break;
		if (slices == 2) {
			think_leaf(rec, pos, &old[0], 77);
			put_committed(db, old[0].key, rec);
			assert_int_equal(sel_add_result(s[B], old[0].key, rec), 0);
			assert_true(sel_is_thought(s[B], old[0].key));
		}
		if (slices >= 2 && released + 1 < OLD) {
			Key k = old[++released].key;
			assert_int_equal(sel_release(s[B], k), 0);
			assert_false(sel_is_leased(s[B], k));
		}
	} while (slices < 100000);
	sel_get_stats(&st[B], s[B]);
	print_message("    %lld nodes dropped at once, %lld in %d slices (%d releases given "
	              "meanwhile)\n",
	              (long long)dropped, (long long)r, slices, released);
	assert_int_equal(r, dropped);
	assert_true(slices >= 7); /* each pass a slice at least */
	assert_int_equal(st[B].trim_slices, (uint64_t)slices);
	assert_int_equal(st[B].trims, 1);
	/* a gets the same changes after its trim; c its first slice, then the
	 * same changes (kept), then a search. */
	assert_true(released >= 20);
	assert_int_equal(sel_trim_slice(s[C], budget, 0), 0);
	assert_true(sel_trimming(s[C]));
	for (int k = A; k < N; k += 2) {
		assert_int_equal(sel_add_result(s[k], old[0].key, rec), 0);
		for (int j = 1; j <= released; j++)
			assert_int_equal(sel_release(s[k], old[j].key), 0);
	}
	for (int k = 0; k < N; k++) assert_true(sel_is_thought(s[k], old[0].key));
	/* Before any search: a and b hold the same graph. */
	for (int k = A; k <= B; k++) sel_get_stats(&st[k], s[k]);
	assert_int_equal(st[B].nodes, st[A].nodes);
	assert_int_equal(st[B].edges, st[A].edges);
	assert_int_equal(st[B].trimmed, st[A].trimmed);
	assert_int_equal(st[B].used_bytes, st[A].used_bytes);
	for (int i = 0; i < 30; i++) {
		assert_int_equal(sel_select(l, s[A]), 1);
		for (int k = B; k < N; k++) {
			assert_int_equal(sel_select(lk, s[k]), 1);
			assert_true(key_equal(lk->key, l->key));
			assert_int_equal(lk->value, l->value);
		}
		if (i == 0) {
			/* c's search ended its trim first: its graph is theirs. */
			assert_false(sel_trimming(s[C]));
			for (int k = 0; k < N; k++) sel_get_stats(&st[k], s[k]);
			assert_int_equal(st[C].trims, 1);
			for (int k = B; k < N; k++) {
				assert_int_equal(st[k].nodes, st[A].nodes);
				assert_int_equal(st[k].edges, st[A].edges);
				assert_int_equal(st[k].trimmed, st[A].trimmed);
			}
		}
		for (int k = 0; k < N; k++) assert_int_equal(sel_lease(s[k], l->key), 0);
	}
	for (int k = 0; k < N; k++) sel_free(s[k]);
	free(old);
	free(lk);
	free(l);
	free(rec);
	free(pos);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

static void test_bookgen__minimax_values_order_the_search_and_change_no_leaf(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[4096], bare[4096];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(bare, sizeof bare, "%s/c", dir);
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err,
	                         "%s synth %s --positions 20000 --seed 7 --quiet && %s minimax %s "
	                         "--quiet && cp -r %s %s",
	                         ts_joseki(), book, ts_joseki(), book, book, bare),
	                 0);
	free(out);
	free(err);
	strip_minimax(bare);
	enum { N = 150 };
	Key *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	for (int m = 0; m < 2; m++) {
		PlanMode mode = m ? PLAN_COVER : PLAN_PV;
		uint64_t ea = 0, eb = 0;
		SelStats sa, sb;
		int na = leaves_of(book, mode, a, N, &ea, &sa),
		    nb = leaves_of(bare, mode, b, N, &eb, &sb);
		print_message("%s: %d leaves; first search %llu expansions (%llu without the "
		              "values); %llu records read ahead, %llu of them used (%llu, %llu)\n",
		              m ? "cover" : "pv", na, (unsigned long long)ea,
		              (unsigned long long)eb, (unsigned long long)sa.read_ahead,
		              (unsigned long long)sa.ahead_used, (unsigned long long)sb.read_ahead,
		              (unsigned long long)sb.ahead_used);
		/* What is read ahead is what the searches then read: a cut-node's
		 * siblings only once its first child failed to refute it (reading
		 * them with the first, a third of what was read ahead here was never
		 * used: 49 of 142). */
		assert_true(sa.read_ahead > 20);
		assert_true((sa.read_ahead - sa.ahead_used) * 10 <= sa.read_ahead);
		assert_int_equal(na, nb);
		assert_true(na >= 30); /* the covered tree has fewer leaves than N */
		for (int i = 0; i < na; i++) assert_true(key_equal(a[i], b[i]));
		if (mode == PLAN_PV) assert_true(ea * 10 < eb * 8);
	}
	free(a);
	free(b);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A book of pieces moved back and forth: from the start position each side
 * moves its rook, king or either gold one square and back, in any order, so
 * its 256 positions lie on cycles through one another and through the root,
 * and every node's value depends on the path above it (a repetition below
 * meets a node on it). Each position also has a move out (7g7f or 3c3d) with
 * its own evaluation. When a bound was stored only if nothing on the path
 * had been met, none was stored below the root, and the search went through
 * every order of the moves (stopped by the yield below after 10^7 visits;
 * 2,128 visits with 3 pieces a side, 64 positions). Kept with the nodes they
 * met, the bounds were still too many to reuse (stopped too): past 8 such
 * nodes a bound is stored as if it did not depend on them.
 */
static const char *const SHUFFLE[2][4][2] = {
    {{"2h3h", "3h2h"}, {"5i5h", "5h5i"}, {"6i6h", "6h6i"}, {"4i4h", "4h4i"}},
    {{"8b7b", "7b8b"}, {"5a5b", "5b5a"}, {"4a4b", "4b4a"}, {"6a6b", "6b6a"}},
};

static bool visit_cap_yield(void *arg)
{
	return ++*(unsigned *)arg > 10000000 / SEL_YIELD_VISITS;
}

static void test_bookgen__a_book_of_moves_back_and_forth_is_searched_in_few_visits(void **state)
{
	(void)state;
	/* States: black's pieces moved (4 bits), white's (4 bits), side to
	 * move; lines found breadth first from the start position. */
	enum { STATES = 512 };
	char(*line)[512] = calloc(STATES, sizeof *line);
	TPos *tps = calloc(STATES, sizeof *tps);
	int queue[STATES], head = 0, tail = 0, n = 0;
	assert_non_null(line);
	assert_non_null(tps);
	strcpy(line[0], "startpos moves");
	queue[tail++] = 0;
	while (head < tail) {
		int st = queue[head++], side = st >> 8;
		TPos *tp = &tps[n++];
		tp->line = strcmp(line[st], "startpos moves") ? line[st] : "startpos";
		tp->thought = true;
		for (int p = 0; p < 4; p++) {
			int bit = 1 << (p + 4 * side), back = (st & bit) != 0;
			tp->moves[p] = (TMove){SHUFFLE[side][p][back], 0, 0};
			int next = (st ^ bit) ^ 256;
			if (line[next][0]) continue;
			char buf[sizeof line[next]];
			snprintf(buf, sizeof buf, "%s %s", line[st], SHUFFLE[side][p][back]);
			memcpy(line[next], buf, sizeof buf);
			queue[tail++] = next;
		}
		tp->moves[4] = (TMove){side ? "3c3d" : "7g7f", (st * 37) % 81 - 40, 0};
	}
	assert_int_equal(n, 256);
	char *dir = ts_mkdtemp();
	write_book(dir, tps, (size_t)n);
	Selector *s = open_selector(dir, 100);
	unsigned yields = 0;
	sel_set_yield(s, visit_cap_yield, &yields);
	int v;
	bool has;
	SelStats st;
	int rv = sel_root_value(&v, &has, s, 0);
	sel_get_stats(&st, s);
	print_message("first search: %llu visits, %llu bounds answered (%llu of them depending "
	              "on the path, %llu stored, %llu stored ignoring it), value %d\n",
	              (unsigned long long)st.visits, (unsigned long long)st.tt_hits,
	              (unsigned long long)st.path_hits, (unsigned long long)st.path_bounds,
	              (unsigned long long)st.path_ignored, v);
	assert_int_equal(rv, 0);
	assert_true(has);
	assert_true(st.path_hits > 0);
	assert_true(st.visits < 100000);
	/* Every leaf is selected in turn, none twice, the search never stopped. */
	SelLeaf *l = malloc(sizeof *l);
	Key seen[256];
	int got = 0;
	assert_non_null(l);
	while (got < 256) {
		int r = sel_select(l, s);
		assert_true(r >= 0);
		if (!r) break;
		for (int j = 0; j < got; j++) assert_false(key_equal(seen[j], l->key));
		seen[got++] = l->key;
		assert_int_equal(sel_lease(s, l->key), 0);
	}
	sel_get_stats(&st, s);
	print_message("%d leaves, %llu visits in all\n", got, (unsigned long long)st.visits);
	assert_int_equal(got, 256); /* each position's move out, once */
	free(l);
	close_selector(s);
	ts_rmtree(dir);
	free(dir);
	free(tps);
	free(line);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bookgen__selector_returns_the_pv_leaf_then_the_next_best),
	    cmocka_unit_test(test_bookgen__selector_skips_a_declined_promotion),
	    cmocka_unit_test(test_bookgen__selector_values_a_mated_position_as_mated),
	    cmocka_unit_test(test_bookgen__selector_bans_a_pv_ending_in_a_cycle),
	    cmocka_unit_test(test_bookgen__selector_cover_past_a_cycle),
	    cmocka_unit_test(test_bookgen__selector_reuses_bounds_and_invalidates_them_on_results),
	    cmocka_unit_test(test_bookgen__changes_held_are_kept_until_the_hold_ends),
	    cmocka_unit_test(test_bookgen__a_trim_in_slices_leaves_what_one_at_once_does),
	    cmocka_unit_test(test_bookgen__a_result_below_a_trimmed_part_reaches_the_bounds_above),
	    cmocka_unit_test(test_bookgen__a_change_below_a_trimmed_node_searches_its_line_again),
	    cmocka_unit_test(test_bookgen__a_record_no_longer_thought_is_a_leaf_again),
	    cmocka_unit_test(test_bookgen__kif_bonus_changes_the_choice),
	    cmocka_unit_test(test_bookgen__window_batch_returns_every_leaf_within_the_window),
	    cmocka_unit_test(test_bookgen__a_restored_filter_is_read_beside_the_selector),
	    cmocka_unit_test(test_bookgen__a_search_joins_a_restored_filter_once_read),
	    cmocka_unit_test(test_bookgen__a_filter_the_book_outgrew_is_made_again),
	    cmocka_unit_test(
	        test_bookgen__a_result_new_to_the_book_gets_the_transpositions_into_it),
	    cmocka_unit_test(test_bookgen__a_pawn_drop_mate_is_no_edge_into_a_new_position),
	    cmocka_unit_test(test_bookgen__a_snapshot_of_nodes_changed_twice_restores),
	    cmocka_unit_test(test_bookgen__incremental_bounds_agree_with_full_searches),
	    cmocka_unit_test(test_bookgen__a_deferred_filter_starts_with_the_first_search),
	    cmocka_unit_test(test_bookgen__bounds_stay_exact_with_many_leases_outstanding),
	    cmocka_unit_test(test_bookgen__searches_in_slices_select_what_whole_searches_do),
	    cmocka_unit_test(test_bookgen__a_trimmed_graph_selects_what_the_whole_one_does),
	    cmocka_unit_test(
	        test_bookgen__cover_batch_follows_the_book_side_best_and_the_replies_in_window),
	    cmocka_unit_test(test_bookgen__plan_shares_the_leaves_by_root_weight),
	    cmocka_unit_test(test_bookgen__unthought_root_is_the_first_leaf),
	    cmocka_unit_test(test_bookgen__select_command_prints_json_leaves),
	    cmocka_unit_test(test_bookgen__select_past_its_memory_budget_selects_the_same_leaves),
	    cmocka_unit_test(
	        test_bookgen__the_key_map_made_at_attach_keeps_to_an_eighth_of_the_budget),
	    cmocka_unit_test(test_bookgen__a_trim_takes_a_grown_map_back),
	    cmocka_unit_test(test_bookgen__minimax_values_order_the_search_and_change_no_leaf),
	    cmocka_unit_test(
	        test_bookgen__a_book_of_moves_back_and_forth_is_searched_in_few_visits),
	};
	if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
