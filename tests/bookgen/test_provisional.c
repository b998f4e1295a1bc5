/*
 * tests/bookgen/test_provisional.c — provisional leaves (bookgen/provisional.h)
 * on a synthetic book minimax has valued: the first is the end of the book's
 * principal variation, the one a selector without kif bonus finds; every one
 * is a legal line from the root to a position the book has not thought; what
 * is taken is skipped without changing the order of the rest; the reads are
 * bounded; a root the book has not thought gives none; reading ahead below
 * the walk follows a line of one move a record to its end, and a tree two
 * levels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bookdb/bookdb.h"
#include "bookgen/provisional.h"
#include "bookgen/selector.h"
#include "shogi/clock.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define N 60

/* Keys taken: a list. */
typedef struct {
	Key keys[N];
	int n;
} Taken;

/* Keys handed to the read-ahead. */
static size_t g_ahead;
static void ahead_fn(void *ctx, const Key *keys, size_t n)
{
	(void)ctx;
	(void)keys;
	g_ahead += n;
}

/* A selector's key filter (ctx) as the walk's held. */
static bool held_fn(void *ctx, Key key)
{
	return sel_key_filter_maybe(ctx, key);
}

/* Nothing taken. */
static bool none_taken(void *ctx, Key key)
{
	(void)ctx;
	(void)key;
	return false;
}

static bool taken_fn(void *ctx, Key key)
{
	const Taken *t = ctx;
	for (int i = 0; i < t->n; i++)
		if (key_equal(t->keys[i], key)) return true;
	return false;
}

/* Leaf l is a legal line from the start (p its scratch) to a position the
 * book (t; rec scratch) has not thought. */
static void assert_line_to_unthought(BookTxn *t, Position *p, BookRecord *rec, const SelLeaf *l)
{
	assert_int_equal(sfen_parse(p, SFEN_STARTPOS, NULL, NULL), 0);
	for (int j = 0; j < l->nmoves; j++) {
		assert_true(pos_is_legal(p, l->moves[j]));
		pos_do_move(p, l->moves[j]);
	}
	assert_true(key_equal(pos_key(p), l->key));
	int g = bookdb_get(rec, t, l->key);
	assert_true(g == BOOKDB_ENOTFOUND || (g == 0 && !(rec->flags & BOOKDB_REC_THOUGHT)));
}

/* Up to n leaves of a walk from root_sfen, opened for the call. */
static int walk_once(SelLeaf *leaves, Position *pos, int n, BookDB *db, const char *root_sfen,
                     const Taken *taken, int max_reads)
{
	ProvWalk *pw;
	int rc = prov_open(&pw, root_sfen, 0);
	if (rc < 0) return rc;
	ProvAsk ask = {.taken = taken_fn, .ctx = (void *)taken, .max_reads = max_reads};
	rc = prov_next(pw, leaves, pos, n, db, &ask);
	prov_free(pw);
	return rc;
}

static void test_provisional__leaves_follow_the_books_values(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	unsigned long long seed = ts_seed("provisional") % 1000000;
	char *out = NULL, *serr = NULL;
	if (ts_runf(&out, &serr,
	            "%s synth %s --positions 20000 --seed %llu --quiet && %s minimax %s --quiet",
	            ts_joseki(), book, seed, ts_joseki(), book) != 0)
		fail_msg("setup: %s", serr ? serr : "");
	free(out);
	free(serr);
	BookDB *db;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, &ro, err), 0);
	SelLeaf *lv = calloc(N, sizeof *lv), *again = calloc(N, sizeof *again);
	Position *pos = calloc(N, sizeof *pos), *p2 = calloc(N, sizeof *p2), *p = malloc(sizeof *p);
	assert_true(lv && again && pos && p2 && p);
	Taken none = {.n = 0};
	int n = walk_once(lv, pos, N, db, SFEN_STARTPOS, &none, 0);
	print_message("seed %llu: %d leaves, the first at %d plies, value %d\n", seed, n,
	              n ? lv[0].nmoves : 0, n ? lv[0].value : 0);
	assert_int_equal(n, N);
	/* Each a legal line to a position the book has not thought, none twice. */
	BookTxn *t;
	BookRecord *rec = malloc(sizeof *rec);
	assert_non_null(rec);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	for (int i = 0; i < n; i++) {
		assert_line_to_unthought(t, p, rec, &lv[i]);
		assert_true(key_equal(pos_key(&pos[i]), lv[i].key));
		assert_int_equal(lv[i].root, 0);
		for (int j = 0; j < i; j++) assert_false(key_equal(lv[i].key, lv[j].key));
	}
	/* The first follows the book's values: at each ply, a move valued
	 * better than the one taken (a repetition's value aside) leads back into
	 * the line; where none does and no repetition is valued, each value is
	 * the leaf's. */
	Key line[SEL_MAX_PLY + 1];
	assert_int_equal(sfen_parse(p, SFEN_STARTPOS, NULL, NULL), 0);
	bool cycles = false, leaf_valued = true, left = false;
	for (int j = 0; j < lv[0].nmoves; j++) {
		line[j] = pos_key(p);
		assert_int_equal(bookdb_get(rec, t, pos_key(p)), 0);
		assert_true(rec->flags & BOOKDB_REC_MINIMAX);
		int at = -1;
		for (int i = 0; i < rec->nmoves; i++)
			if (rec->moves[i].move == lv[0].moves[j]) at = i;
		assert_true(at >= 0);
		cycles |= rec->moves[at].dist >= 9997;
		int taken_value = rec->moves[at].value;
		for (int i = 0; i < rec->nmoves; i++) {
			const BookMove *m = &rec->moves[i];
			if (m->value == BOOKDB_NOVALUE) continue;
			if (m->dist >= 9997) {
				cycles = true;
				continue;
			}
			if (m->value <= taken_value) continue;
			pos_do_move(p, m->move);
			bool back = false;
			for (int k = 0; k <= j; k++) back |= key_equal(line[k], pos_key(p));
			BookRecord *cr = malloc(sizeof *cr);
			assert_non_null(cr);
			bool thought =
			    bookdb_get(cr, t, pos_key(p)) == 0 && (cr->flags & BOOKDB_REC_THOUGHT);
			free(cr);
			pos_undo_move(p);
			/* Better, and not back into the line: never, as a thought
			 * position none of whose lines ends in a leaf (every one
			 * repeats) has a repetition's value, tried last. */
			assert_true(back || thought);
			cycles |= back;
			left |= !back;
		}
		leaf_valued &= (j % 2 == 0 ? taken_value : -taken_value) == lv[0].value;
		pos_do_move(p, lv[0].moves[j]);
	}
	bookdb_txn_abort(t);
	assert_false(left);
	assert_true(leaf_valued || cycles);
	/* A selector over the same book without the kif bonus leads to it too
	 * (the synthetic book has no games: the bonus would change nothing)
	 * when no repetition meets the line: the selector bans a line that
	 * repeats and searches the others, where the book's values do not say
	 * which leaf is best. */
	Selector *s;
	SelOptions so = {.kif_bonus = 0};
	assert_int_equal(sel_new(&s, &so), 0);
	assert_int_equal(sel_attach(s, db, NULL), 0);
	assert_int_equal(sel_add_root(s, ts_line_key("startpos"), BLACK), 0);
	SelLeaf *sl = malloc(sizeof *sl);
	assert_non_null(sl);
	assert_int_equal(sel_select(sl, s), 1);
	print_message("selector: %d plies, value %d%s\n", sl->nmoves, sl->value,
	              cycles ? " (repetitions beside the line)" : "");
	if (!cycles) {
		assert_int_equal(sl->value, lv[0].value);
		/* Or a leaf of another line worth the same (a tie: seed 3031, two
		 * leaves at 4 plies worth -14), one the book has not thought. */
		if (!key_equal(sl->key, lv[0].key)) {
			assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
			assert_line_to_unthought(t, p, rec, sl);
			bookdb_txn_abort(t);
		}
	}
	free(sl);
	/* Its key filter, taken in by that search, asked before each read:
	 * the same leaves to the end of the walk, the keys it turns away
	 * neither read nor read ahead. */
	SelKeyFilter kf;
	assert_true(sel_key_filter(s, &kf));
	size_t spared = 0;
	size_t ahead_all = 0, ahead_held = 0;
	int all_n = 0, held_n = 0;
	{
		SelLeaf *la = calloc(N, sizeof *la), *lh = calloc(N, sizeof *lh);
		Position *pa = calloc(N, sizeof *pa), *ph = calloc(N, sizeof *ph);
		assert_true(la && lh && pa && ph);
		ProvWalk *wa, *wh;
		assert_int_equal(prov_open(&wa, SFEN_STARTPOS, 0), 0);
		assert_int_equal(prov_open(&wh, SFEN_STARTPOS, 0), 0);
		ProvAsk plain = {.taken = none_taken, .ahead = ahead_fn};
		ProvAsk filt = {
		    .taken = none_taken, .held = held_fn, .ahead = ahead_fn, .ctx = &kf};
		int a, h;
		do {
			g_ahead = 0;
			a = prov_next(wa, la, pa, N, db, &plain);
			ahead_all += g_ahead;
			g_ahead = 0;
			h = prov_next(wh, lh, ph, N, db, &filt);
			ahead_held += g_ahead;
			assert_int_equal(a, h);
			for (int i = 0; i < a; i++) {
				assert_true(key_equal(la[i].key, lh[i].key));
				assert_int_equal(la[i].nmoves, lh[i].nmoves);
			}
			all_n += a;
			held_n += h;
		} while (a > 0);
		assert_int_equal(prov_spared(wa), 0);
		spared = prov_spared(wh);
		prov_free(wa);
		prov_free(wh);
		free(la);
		free(lh);
		free(pa);
		free(ph);
	}
	print_message("with the key filter: %d leaves, %zu reads spared, %zu keys read ahead "
	              "against %zu\n",
	              held_n, spared, ahead_held, ahead_all);
	assert_int_equal(all_n, held_n);
	assert_true(spared > (size_t)held_n / 2);
	assert_true(ahead_held < ahead_all);
	/* The children read ahead below the walk (prov_record_children): from
	 * the root's record, every move the walk would go on to; with the
	 * filter, every one of them the book holds still there. */
	{
		Key all[BOOKDB_MAX_MOVES], kept[BOOKDB_MAX_MOVES];
		BookTxn *rt;
		const uint8_t *val;
		size_t len;
		assert_int_equal(bookdb_txn_begin(&rt, db, false), 0);
		assert_int_equal(bookdb_get_raw(&val, &len, rt, ts_line_key("startpos")), 0);
		size_t na = prov_record_children(all, val, len, NULL, NULL);
		size_t nk = prov_record_children(kept, val, len, held_fn, &kf);
		assert_int_equal(bookdb_record_decode(rec, val, len), 0);
		int walkable = 0;
		for (int i = 0; i < rec->nmoves; i++)
			walkable += rec->moves[i].value != BOOKDB_NOVALUE ||
			            bookdb_move_analysed(&rec->moves[i]);
		assert_int_equal(na, walkable);
		assert_true(nk <= na);
		size_t held_by_book = 0;
		for (size_t i = 0; i < na; i++) {
			const uint8_t *cv;
			size_t cl;
			if (bookdb_get_raw(&cv, &cl, rt, all[i]) != 0) continue;
			held_by_book++;
			bool in = false;
			for (size_t j = 0; j < nk && !in; j++) in = key_equal(all[i], kept[j]);
			assert_true(in);
		}
		print_message("the root's children to read ahead: %zu, %zu with the filter, %zu in "
		              "the book\n",
		              na, nk, held_by_book);
		assert_true(held_by_book > 0);
		bookdb_txn_abort(rt);
	}
	sel_free(s);
	/* The first ten taken: the others come in the same order. */
	Taken ten = {.n = 10};
	for (int i = 0; i < 10; i++) ten.keys[i] = lv[i].key;
	int m = walk_once(again, p2, N - 10, db, SFEN_STARTPOS, &ten, 0);
	assert_int_equal(m, N - 10);
	for (int i = 0; i < m; i++) assert_true(key_equal(again[i].key, lv[10 + i].key));
	/* A walk kept between calls goes on where it stopped: 10, then 7 at a
	 * time, the same leaves in the same order; then, done, none. */
	ProvWalk *pw;
	assert_int_equal(prov_open(&pw, SFEN_STARTPOS, 0), 0);
	ProvAsk ask = {.taken = taken_fn, .ahead = ahead_fn, .ctx = &none};
	int got = prov_next(pw, again, p2, 10, db, &ask);
	assert_int_equal(got, 10);
	while (got < N) {
		int k = prov_next(pw, again + got, p2 + got, N - got < 7 ? N - got : 7, db, &ask);
		assert_true(k > 0);
		got += k;
	}
	for (int i = 0; i < N; i++) {
		assert_true(key_equal(again[i].key, lv[i].key));
		assert_int_equal(again[i].nmoves, lv[i].nmoves);
		assert_memory_equal(again[i].moves, lv[i].moves,
		                    lv[i].nmoves * sizeof *lv[i].moves);
	}
	/* To its end: no leaf twice (each position is met once). */
	KeyMap all;
	keymap_init_set(&all, false);
	for (int i = 0; i < N; i++) assert_int_equal(keymap_add(&all, lv[i].key, NULL), 1);
	int total = N;
	while ((m = prov_next(pw, again, p2, N, db, &ask)) > 0) {
		total += m;
		for (int i = 0; i < m; i++)
			assert_int_equal(keymap_add(&all, again[i].key, NULL), 1);
	}
	keymap_free(&all);
	assert_int_equal(m, 0);
	assert_int_equal(prov_next(pw, again, p2, N, db, &ask), 0);
	/* Every position entered had its moves' keys read ahead first: among
	 * them every leaf. */
	assert_true(g_ahead > 0);
	print_message("the walk ended after %d leaves\n", total);
	prov_free(pw);
	/* A call past its time returns after a few reads with what it has; the
	 * walk goes on from there, the same leaves in the same order. */
	assert_int_equal(prov_open(&pw, SFEN_STARTPOS, 0), 0);
	ProvAsk late = {.taken = taken_fn, .ctx = &none, .until_ms = clock_ms_f() - 1};
	int first = prov_next(pw, again, p2, N, db, &late);
	assert_true(first >= 0 && first < 8);
	got = first;
	while (got < N) got += prov_next(pw, again + got, p2 + got, N - got, db, &ask);
	for (int i = 0; i < N; i++) assert_true(key_equal(again[i].key, lv[i].key));
	prov_free(pw);
	assert_int_equal(prov_open(&pw, "not a position", 0), SEL_EINVAL);
	/* Bounded reads: the root and a few plies. */
	m = walk_once(again, p2, N, db, SFEN_STARTPOS, &none, 3);
	assert_true(m < 3);
	/* A root the book has not thought: none; a root that does not parse. */
	assert_int_equal(walk_once(again, p2, N, db, "9/9/9/9/4k4/9/9/9/4K4 b RBGSNLP 1", &none, 0),
	                 0);
	assert_int_equal(walk_once(again, p2, N, db, "not a position", &none, 0), SEL_EINVAL);
	free(rec);
	free(lv);
	free(again);
	free(pos);
	free(p2);
	free(p);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

/* Whether the book (a read transaction, ctx) holds key: an exact filter. */
static bool in_book(void *ctx, Key key)
{
	const uint8_t *val;
	size_t len;
	return bookdb_get_raw(&val, &len, ctx, key) == 0;
}

/* Records read ahead from key at depth, as the coordinator's read-ahead
 * threads do (cluster/coord_pwalk.c): each record, then its children at
 * prov_ahead_depth, depth first. */
static int read_ahead_from(BookTxn *t, Key key, int depth)
{
	const uint8_t *val;
	size_t len;
	if (bookdb_get_raw(&val, &len, t, key) != 0) return 0;
	int reads = 1;
	Key keys[BOOKDB_MAX_MOVES];
	size_t n = prov_record_children(keys, val, len, in_book, t);
	int next = prov_ahead_depth(depth, n);
	if (next < 0 || depth == 0) return reads;
	for (size_t i = 0; i < n; i++) reads += read_ahead_from(t, keys[i], next);
	return reads;
}

#define LINE 48

static void test_provisional__reading_ahead_follows_lines_to_their_ends(void **state)
{
	(void)state;
	/* The counts: along a line of one child a record, PROV_AHEAD_CHAIN
	 * steps; at records with several, two levels, the line's count anew at
	 * each. */
	int d = PROV_AHEAD_DEPTH, steps = 0;
	while ((d = prov_ahead_depth(d, 1)) >= 0) steps++;
	assert_int_equal(steps, PROV_AHEAD_CHAIN);
	d = prov_ahead_depth(PROV_AHEAD_DEPTH, 3);
	assert_true(d >= 0);
	assert_int_equal(prov_ahead_depth(PROV_AHEAD_DEPTH, 0), -1);
	int d2 = prov_ahead_depth(d, 5);
	assert_true(d2 >= 0);
	assert_int_equal(prov_ahead_depth(d2, 2), -1);
	for (steps = 0; (d2 = prov_ahead_depth(d2, 1)) >= 0;) steps++;
	assert_int_equal(steps, PROV_AHEAD_CHAIN);
	/* A real book: a line of LINE thought positions of one move each (as
	 * results make), the last one's child not in the book; and a line of 10. */
	char *dir = ts_mkdtemp(), book[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	Position *p = malloc(sizeof *p);
	BookRecord *rec = malloc(sizeof *rec);
	Move *legal = malloc(MOVEGEN_MAX * sizeof *legal);
	assert_true(p && rec && legal);
	assert_int_equal(sfen_parse(p, SFEN_STARTPOS, NULL, NULL), 0);
	Key line[LINE];
	KeyMap seen;
	keymap_init_set(&seen, false);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	for (int i = 0; i < LINE; i++) {
		line[i] = pos_key(p);
		assert_int_equal(keymap_add(&seen, line[i], NULL), 1);
		int n = movegen_legal(p, legal), m = -1;
		for (int k = 0; k < n && m < 0; k++) {
			Move mv = legal[(k + 7 * i) % n];
			if (!keymap_has(&seen, pos_key_after(p, mv))) m = (k + 7 * i) % n;
		}
		assert_true(m >= 0);
		bookdb_record_init(rec, p);
		rec->flags = BOOKDB_REC_THOUGHT;
		rec->think_depth = 10;
		rec->nmoves = 1;
		memset(&rec->moves[0], 0, sizeof rec->moves[0]);
		rec->moves[0].move = legal[m];
		rec->moves[0].flags = BOOKDB_MOVE_EVAL;
		rec->moves[0].eval = 30;
		rec->moves[0].depth = 10;
		assert_int_equal(bookdb_put(t, line[i], rec), 0);
		pos_do_move(p, legal[m]);
	}
	assert_int_equal(bookdb_txn_commit(t), 0);
	keymap_free(&seen);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	/* From the line's first record: the record and PROV_AHEAD_CHAIN more. */
	assert_int_equal(read_ahead_from(t, line[0], PROV_AHEAD_DEPTH), PROV_AHEAD_CHAIN + 1);
	/* From the tenth before the end: to the end, the last record's child
	 * not being in the book. */
	assert_int_equal(read_ahead_from(t, line[LINE - 10], PROV_AHEAD_DEPTH), 10);
	bookdb_txn_abort(t);
	free(legal);
	free(rec);
	free(p);
	bookdb_free(db);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_provisional__leaves_follow_the_books_values),
	    cmocka_unit_test(test_provisional__reading_ahead_follows_lines_to_their_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
