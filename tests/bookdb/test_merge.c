/*
 * tests/bookdb/test_merge.c — joseki merge: A into B equals B into A (every
 * record), a book into itself (or a copy of it) changes nothing, the deeper
 * analysis wins (ties: nodes, then the newer book), a game both books counted
 * counts once, --dry-run writes nothing, and kill -9 at a random moment of a
 * merge leaves the destination as before or after whole batches, a rerun
 * completing it to the same records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "bookdb/game.h"
#include "bookdb/merge.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tests/support/support.h"

/* ---- books read in-process ---- */

typedef struct {
	Key key;
	uint8_t *b;
	size_t n;
	BookRecord *rec; /* decoded (canonical books only) */
} Rec;

typedef struct {
	Rec *v;
	size_t n;
} Book;

static BookRecord scratch;

static int cmp_move(const void *pa, const void *pb)
{
	const BookMove *a = pa, *b = pb;
	return (a->move > b->move) - (a->move < b->move);
}

/* Every record of BOOK dir, in key order. canon: moves sorted by move (the
 * order of a record's moves is not part of what a merge promises) and kept
 * decoded; CANON_NO_COMMENTS: and the game comments' evaluations left out
 * (which of two a merge keeps goes by the books' creation times: the newer
 * book's, or within one second the larger). */
enum { CANON_NO_COMMENTS = 2 };
static Book load(const char *dir, int canon)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, dir, &ro, err) < 0) fail_msg("open %s: %s", dir, err);
	BookTxn *t;
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	Book bk = {NULL, 0};
	size_t cap = 0;
	Key k;
	const uint8_t *v;
	size_t len;
	static uint8_t buf[BOOKDB_RECORD_MAX];
	while (bookdb_iter_next(it, &k, &v, &len) == 1) {
		if (bk.n == cap) {
			cap = cap ? 2 * cap : 1024;
			bk.v = realloc(bk.v, cap * sizeof *bk.v);
			assert_non_null(bk.v);
		}
		Rec *r = &bk.v[bk.n++];
		memset(r, 0, sizeof *r);
		r->key = k;
		if (canon) {
			memset(&scratch, 0, sizeof scratch);
			assert_int_equal(bookdb_record_decode(&scratch, v, len), 0);
			qsort(scratch.moves, scratch.nmoves, sizeof *scratch.moves, cmp_move);
			for (int j = 0; canon == CANON_NO_COMMENTS && j < scratch.nmoves; j++)
				if (bookdb_move_commented(&scratch.moves[j])) {
					scratch.moves[j].flags &= (uint8_t)~BOOKDB_MOVE_EVAL;
					scratch.moves[j].eval = 0;
					scratch.moves[j].source = 0;
				}
			int n = bookdb_record_encode(buf, sizeof buf, &scratch);
			assert_true(n > 0);
			v = buf;
			len = (size_t)n;
			r->rec = malloc(sizeof *r->rec);
			assert_non_null(r->rec);
			*r->rec = scratch;
		}
		r->b = malloc(len);
		assert_non_null(r->b);
		memcpy(r->b, v, len);
		r->n = len;
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
	bookdb_free(db);
	return bk;
}

static void book_free(Book *bk)
{
	for (size_t i = 0; i < bk->n; i++) {
		free(bk->v[i].b);
		free(bk->v[i].rec);
	}
	free(bk->v);
}

static const Rec *find(const Book *bk, Key k)
{
	size_t lo = 0, hi = bk->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = key_cmp(bk->v[mid].key, k);
		if (!c) return &bk->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Positions src thought that dst holds without having thought them: merging
 * src into dst gives each src's analysis, which the merge counts as
 * replaced (bookdb_record_merge). */
static long thought_only_in(const char *src, const char *dst)
{
	Book s = load(src, true), d = load(dst, true);
	long n = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (!(s.v[i].rec->flags & BOOKDB_REC_THOUGHT)) continue;
		const Rec *r = find(&d, s.v[i].key);
		if (r && !(r->rec->flags & BOOKDB_REC_THOUGHT)) n++;
	}
	book_free(&s);
	book_free(&d);
	return n;
}

static bool rec_equal(const Rec *a, const Rec *b)
{
	return a && b && a->n == b->n && !memcmp(a->b, b->b, a->n);
}

/* Asserts both books hold the same records, byte for byte. */
static void assert_books_equal(const char *da, const char *db, int canon)
{
	Book a = load(da, canon), b = load(db, canon);
	if (a.n != b.n) fail_msg("%s has %zu records, %s %zu", da, a.n, db, b.n);
	for (size_t i = 0; i < a.n; i++)
		if (!key_equal(a.v[i].key, b.v[i].key) || !rec_equal(&a.v[i], &b.v[i]))
			fail_msg("%s and %s differ at record %zu", da, db, i);
	book_free(&a);
	book_free(&b);
}

/* The value of meta key k in BOOK dir (malloc'd), or NULL. */
static char *meta_get(const char *dir, const char *k)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, dir, &ro, err) < 0) fail_msg("open %s: %s", dir, err);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	const void *v;
	size_t vl;
	char *r = NULL;
	if (bookdb_kv_get(&v, &vl, t, BOOKDB_META, k, strlen(k)) == 0) {
		r = calloc(1, vl + 1);
		memcpy(r, v, vl);
	}
	bookdb_txn_abort(t);
	bookdb_free(db);
	return r;
}

/* The floodgate fixtures [lo, hi) in name order, as one shell word list. */
static char *games(size_t lo, size_t hi)
{
	struct dirent **names;
	int n = scandir("tests/data/floodgate", &names, NULL, alphasort);
	assert_true(n > 0);
	size_t cap = 1 << 16, len = 0, k = 0;
	char *s = calloc(1, cap);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t l = strlen(nm);
		if (l > 4 && !strcmp(nm + l - 4, ".csa")) {
			if (k >= lo && k < hi)
				len += (size_t)snprintf(s + len, cap - len,
				                        "'tests/data/floodgate/%s' ", nm);
			k++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(k >= hi);
	return s;
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[1 << 17];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char *err = NULL;
	if (ts_run(cmd, NULL, &err) != 0) fail_msg("%s: %s", cmd, err);
	free(err);
}

/* The two books most tests merge, in d: A ingests games 0..8, B games 5..14
 * (games 5..8 in both), each then thought with think_a / think_b (NULL: not);
 * with ref, R ingests the 15 games once (the statistics a merge must give). */
static void ingest_ab(const char *d, const char *think_a, const char *think_b, bool ref)
{
	const char *J = ts_joseki();
	char *ga = games(0, 9), *gb = games(5, 15), *gall = games(0, 15);
	sh("%s ingest %s/A %s --quiet && %s ingest %s/B %s --quiet", J, d, ga, J, d, gb);
	if (ref) sh("%s ingest %s/R %s --quiet", J, d, gall);
	if (think_a) sh("%s think %s/A %s --quiet", J, d, think_a);
	if (think_b) sh("%s think %s/B %s --quiet", J, d, think_b);
	free(ga);
	free(gb);
	free(gall);
}

/* ---- A into B, B into A ---- */

/* A: games 0..8 thought at depth 2; B: games 5..14 thought at depth 3 (games
 * 5..8 in both). A into B and B into A give the same records; every move's
 * game statistics equal those of one book that ingested the 15 games once;
 * where both thought, the deeper (B's) analysis is there. */
static void test_merge__a_into_b_equals_b_into_a_and_each_game_counts_once(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, "--depth 2 --positions 40", "--depth 3 --positions 40", true);
	/* Where B holds a position A thought and B did not, A's analysis goes in
	 * (replaced); where both thought, B's deeper analysis stays. */
	char pa[512], pb[512];
	snprintf(pa, sizeof pa, "%s/A", d);
	snprintf(pb, sizeof pb, "%s/B", d);
	long a_only = thought_only_in(pa, pb);
	sh("cp -r %s/A %s/A1 && cp -r %s/B %s/B1", d, d, d, d);
	json_t *ab = ts_run_json(0, "%s merge %s/B1 %s/A --json --quiet", J, d, d);
	json_t *ba = ts_run_json(0, "%s merge %s/A1 %s/B --json --quiet", J, d, d);
	assert_int_equal(ts_jint(ab, "games_duplicate"), 4);
	assert_int_equal(ts_jint(ba, "games_duplicate"), 4);
	assert_int_equal(ts_jint(ab, "games_added"), 5);
	assert_int_equal(ts_jint(ba, "games_added"), 6);
	assert_int_equal(ts_jint(ab, "stats_clamped"), 0);
	assert_true(ts_jint(ba, "replaced") > 0); /* B's deeper analysis over A's */
	assert_int_equal(ts_jint(ab, "replaced"), a_only);
	char p1[512], p2[512];
	snprintf(p1, sizeof p1, "%s/A1", d);
	snprintf(p2, sizeof p2, "%s/B1", d);
	assert_books_equal(p1, p2, true);
	sh("%s check %s/A1 && %s check %s/B1", J, d, J, d);
	/* The same merge again changes nothing: its games are all in DST now. */
	json_t *again = ts_run_json(0, "%s merge %s/B1 %s/A --json --quiet", J, d, d);
	assert_int_equal(ts_jint(again, "added") + ts_jint(again, "changed"), 0);
	assert_int_equal(ts_jint(again, "games_duplicate"), 9);
	json_decref(again);

	/* Game statistics: as if the 15 games had been ingested once. */
	snprintf(p1, sizeof p1, "%s/R", d);
	Book r = load(p1, true), m = load(p2, true);
	snprintf(p1, sizeof p1, "%s/A", d);
	Book a = load(p1, true);
	snprintf(p1, sizeof p1, "%s/B", d);
	Book b = load(p1, true);
	size_t both_thought = 0;
	for (size_t i = 0; i < r.n; i++) {
		const Rec *x = &r.v[i], *y = find(&m, x->key);
		if (!y) fail_msg("record %zu of the reference is not in the merge", i);
		for (int j = 0; j < x->rec->nmoves; j++) {
			const BookMove *u = &x->rec->moves[j], *v = NULL;
			for (int k = 0; k < y->rec->nmoves; k++)
				if (y->rec->moves[k].move == u->move) v = &y->rec->moves[k];
			assert_non_null(v);
			if (u->count != v->count || u->wins != v->wins || u->draws != v->draws ||
			    u->losses != v->losses)
				fail_msg(
				    "record %zu move %d: %u/%u/%u/%u games, merged %u/%u/%u/%u", i,
				    j, u->count, u->wins, u->draws, u->losses, v->count, v->wins,
				    v->draws, v->losses);
		}
	}
	for (size_t i = 0; i < a.n; i++) {
		const Rec *x = &a.v[i], *y = find(&b, x->key), *z = find(&m, x->key);
		if (!y || !(x->rec->flags & BOOKDB_REC_THOUGHT) ||
		    !(y->rec->flags & BOOKDB_REC_THOUGHT))
			continue;
		both_thought++;
		assert_true(z->rec->flags & BOOKDB_REC_THOUGHT);
		assert_int_equal(z->rec->think_depth, y->rec->think_depth > x->rec->think_depth
		                                          ? y->rec->think_depth
		                                          : x->rec->think_depth);
	}
	print_message("%zu positions thought in both books\n", both_thought);
	assert_true(both_thought > 0);
	book_free(&r);
	book_free(&m);
	book_free(&a);
	book_free(&b);
	json_decref(ab);
	json_decref(ba);
	ts_rmtree(d);
	free(d);
}

/* A: game 0 cut short (its first 200 lines: no result) and games 1..3; B:
 * game 0 whole and games 2..4. Where DST holds game 0 cut short, SRC's whole
 * one completes it (ingest's rule): B into A gives what B into a book of the
 * whole game 0 and games 1..3 gives, and A into B the same (where DST holds
 * it whole, SRC's cut one is a duplicate). */
static void test_merge__a_whole_game_completes_the_one_cut_short(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	char *g0 = games(0, 1), *ga = games(1, 4), *gb = games(2, 5);
	sh("head -n 200 %s > %s/cut.csa", g0, d);
	sh("%s ingest %s/A %s/cut.csa %s --quiet && %s ingest %s/B %s %s --quiet", J, d, d, ga, J,
	   d, g0, gb);
	sh("%s ingest %s/R %s %s --quiet", J, d, g0, ga);
	sh("cp -r %s/A %s/A1 && cp -r %s/B %s/B1", d, d, d, d);
	json_t *ab = ts_run_json(0, "%s merge %s/A1 %s/B --json --quiet --no-minimax", J, d, d);
	json_t *ba = ts_run_json(0, "%s merge %s/B1 %s/A --json --quiet --no-minimax", J, d, d);
	assert_int_equal(ts_jint(ab, "games_completed"), 1);
	assert_int_equal(ts_jint(ab, "games_duplicate"), 2);
	assert_int_equal(ts_jint(ab, "games_added"), 1);
	assert_int_equal(ts_jint(ba, "games_completed"), 0);
	assert_int_equal(ts_jint(ba, "games_duplicate"), 3);
	assert_int_equal(ts_jint(ba, "games_added"), 1);
	assert_int_equal(ts_jint(ab, "stats_clamped"), 0);
	assert_int_equal(ts_jint(ba, "stats_clamped"), 0);
	char p1[512], p2[512], pr[512];
	snprintf(p1, sizeof p1, "%s/A1", d);
	snprintf(p2, sizeof p2, "%s/B1", d);
	snprintf(pr, sizeof pr, "%s/R", d);
	/* The same games and results; the comments kept depend on the books'
	 * ages, to the second. */
	assert_books_equal(p1, p2, CANON_NO_COMMENTS);
	json_decref(ts_run_json(0, "%s merge %s/R %s/B --json --quiet --no-minimax", J, d, d));
	assert_books_equal(pr, p1, CANON_NO_COMMENTS);
	/* A1 holds game 0 whole now: R's games are all duplicates, nothing is
	 * added, and A1 is as it was but for the comments, which go by the
	 * books' ages to the second (R's may be newer: a few records "changed"
	 * on a loaded machine when the ingests straddled a second). */
	sh("cp -r %s/A1 %s/A2", d, d);
	json_t *again = ts_run_json(0, "%s merge %s/A1 %s/R --json --quiet --no-minimax", J, d, d);
	assert_int_equal(ts_jint(again, "games_duplicate"), 5);
	assert_int_equal(ts_jint(again, "games_completed"), 0);
	assert_int_equal(ts_jint(again, "added"), 0);
	json_decref(again);
	char p3[512];
	snprintf(p3, sizeof p3, "%s/A2", d);
	assert_books_equal(p1, p3, CANON_NO_COMMENTS);
	json_decref(ab);
	json_decref(ba);
	free(g0);
	free(ga);
	free(gb);
	ts_rmtree(d);
	free(d);
}

/* A game of no plies (resigned before its first move) in both books has
 * no share to take out: it is a duplicate like any, not one "without kept
 * plies" that turned the whole merge's statistics to the larger of the two. */
static void test_merge__a_game_of_no_plies_in_both_books_is_a_plain_duplicate(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	char *g0 = games(0, 1), *g1 = games(1, 2);
	char path[700];
	snprintf(path, sizeof path, "%s/zero.csa", d);
	const char *zero =
	    "V2.2\n$EVENT:wdoor+floodgate-300-10F+a+b+20260101000000\nPI\n+\n%TORYO\n";
	assert_int_equal(ts_write_file(path, zero, strlen(zero)), 0);
	sh("%s ingest %s/A %s %s --quiet && %s ingest %s/B %s %s --quiet", J, d, path, g0, J, d,
	   path, g1);
	json_t *j = ts_run_json(0, "%s merge %s/A %s/B --json --quiet --no-minimax", J, d, d);
	assert_int_equal(ts_jint(j, "games_duplicate"), 1);
	assert_int_equal(ts_jint(j, "games_unlocated"), 0);
	json_decref(j);
	free(g0);
	free(g1);
	ts_rmtree(d);
	free(d);
}

/* ---- a book into itself ---- */

static void test_merge__a_book_into_itself_or_its_copy_changes_nothing(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	sh("%s ingest %s/A tests/data/floodgate --quiet && %s think %s/A --depth 2 --positions 30 "
	   "--quiet && %s minimax %s/A --quiet && cp -r %s/A %s/A0 && cp -r %s/A %s/C",
	   J, d, J, d, J, d, d, d, d, d);
	json_t *s0 = ts_run_json(0, "%s stats %s/A --json", J, d);
	for (int k = 0; k < 2; k++) {
		/* k = 0: the same directory; 1: a copy of the book. */
		json_t *j =
		    ts_run_json(0, "%s merge %s/A %s/%s --json --quiet", J, d, d, k ? "C" : "A");
		assert_int_equal(ts_jint(j, "added"), 0);
		assert_int_equal(ts_jint(j, "changed"), 0);
		assert_int_equal(ts_jint(j, "games_added"), 0);
		assert_int_equal(ts_jint(j, "games_duplicate"), 15);
		assert_int_equal(ts_jint(j, "games_unlocated"), 0);
		assert_int_equal(ts_jint(j, "batches"), 0);
		assert_true(json_is_null(json_object_get(j, "minimax")));
		json_decref(j);
		char p1[512], p2[512];
		snprintf(p1, sizeof p1, "%s/A", d);
		snprintf(p2, sizeof p2, "%s/A0", d);
		assert_books_equal(p1, p2, false);
		json_t *s1 = ts_run_json(0, "%s stats %s/A --json", J, d);
		assert_int_equal(ts_jint(s1, "changes"), ts_jint(s0, "changes"));
		assert_int_equal(ts_jint(s1, "games"), 15);
		json_decref(s1);
	}
	json_decref(s0);
	ts_rmtree(d);
	free(d);
}

/* ---- the record rule ---- */

static void set_eval(BookMove *m, int eval, int depth, uint64_t nodes, int source)
{
	m->flags |= BOOKDB_MOVE_EVAL;
	m->eval = (int16_t)eval;
	m->depth = (uint8_t)depth;
	m->nodes = nodes;
	m->source = (uint8_t)source;
}

static Move usi_to_move(const Position *pos, const char *usi)
{
	Move m = MOVE_NONE;
	if (usi_move_parse_legal(&m, pos, usi, strlen(usi), NULL) < 0) return MOVE_NONE;
	return m;
}

static BookMove *add_move(BookRecord *r, const Position *pos, const char *usi)
{
	BookMove *m = &r->moves[r->nmoves++];
	memset(m, 0, sizeof *m);
	m->move = usi_to_move(pos, usi);
	assert_int_not_equal(m->move, MOVE_NONE);
	return m;
}

static const BookMove *get_move(const BookRecord *r, const Position *pos, const char *usi)
{
	Move mv = usi_to_move(pos, usi);
	for (int i = 0; i < r->nmoves; i++)
		if (r->moves[i].move == mv) return &r->moves[i];
	return NULL;
}

static BookRecord ra, rb, out, out2;

/* a: thought at depth 10 (7g7f 50, 1000 nodes), 2g2f with a game comment and
 * 3 games; b: depth 12 (7g7f 80, 2g2f 60) and 2 games of 7g7f. */
static void planted(Position *pos)
{
	pos_set_startpos(pos);
	bookdb_record_init(&ra, pos);
	bookdb_record_init(&rb, pos);
	ra.flags = rb.flags = BOOKDB_REC_THOUGHT;
	ra.think_depth = 10;
	rb.think_depth = 12;
	set_eval(add_move(&ra, pos, "7g7f"), 50, 10, 1000, BOOKDB_SOURCE_ENGINE);
	BookMove *m = add_move(&ra, pos, "2g2f");
	set_eval(m, 33, 0, 0, BOOKDB_SOURCE_GAME);
	m->flags |= BOOKDB_MOVE_STATS;
	m->count = 3;
	m->wins = 2;
	m->losses = 1;
	m = add_move(&rb, pos, "7g7f");
	set_eval(m, 80, 12, 500, BOOKDB_SOURCE_ENGINE);
	m->flags |= BOOKDB_MOVE_STATS;
	m->count = 2;
	m->draws = 2;
	set_eval(add_move(&rb, pos, "5g5f"), 60, 12, 500, BOOKDB_SOURCE_ENGINE);
}

static void test_merge__deeper_wins_then_nodes_then_the_newer(void **state)
{
	(void)state;
	shogi_init();
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	BookMergeDiff d;
	planted(pos);
	/* Deeper: b's analysis whole; a's game comment stays on 2g2f; stats add. */
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, 1, false, &d);
	assert_true(d.changed && d.replaced && d.stats && d.moves_added);
	assert_int_equal(out.think_depth, 12);
	assert_int_equal(out.nmoves, 3);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 80);
	assert_int_equal(get_move(&out, pos, "7g7f")->count, 2);
	assert_int_equal(get_move(&out, pos, "5g5f")->eval, 60);
	assert_int_equal(get_move(&out, pos, "2g2f")->eval, 33);
	assert_int_equal(get_move(&out, pos, "2g2f")->source, BOOKDB_SOURCE_GAME);
	assert_int_equal(get_move(&out, pos, "2g2f")->count, 3);
	/* The same the other way round (tie given from b's side). */
	bookdb_record_merge(&out2, &rb, &ra, BOOKDB_PREFER_DEEPER, -1, false, &d);
	assert_int_equal(out2.think_depth, 12);
	assert_int_equal(get_move(&out2, pos, "7g7f")->eval, 80);
	assert_int_equal(get_move(&out2, pos, "2g2f")->eval, 33);
	assert_false(d.replaced);

	/* Equal depth: more nodes wins (a's 1000 over b's 500). */
	rb.think_depth = 10;
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, -1, false, &d);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 50);
	assert_false(get_move(&out, pos, "5g5f")->flags & BOOKDB_MOVE_EVAL); /* b lost: gone */
	assert_false(d.replaced);
	/* Equal depth and nodes: the newer book (tie) decides either way. */
	rb.moves[0].nodes = 1000;
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, 1, false, &d);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 50);
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, -1, false, &d);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 80);
	assert_true(d.replaced);
	/* No tie either: a fixed order, the same from both sides. */
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, 0, false, &d);
	bookdb_record_merge(&out2, &rb, &ra, BOOKDB_PREFER_DEEPER, 0, false, &d);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, get_move(&out2, pos, "7g7f")->eval);
	assert_int_equal(get_move(&out, pos, "5g5f")->flags, get_move(&out2, pos, "5g5f")->flags);

	/* first / last, whatever the depth. */
	planted(pos);
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_FIRST, 0, false, &d);
	assert_int_equal(out.think_depth, 10);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 50);
	bookdb_record_merge(&out, &rb, &ra, BOOKDB_PREFER_LAST, 0, false, &d);
	assert_int_equal(out.think_depth, 10);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 50);

	/* A thought record beats one that was not; merging a record with itself
	 * changes nothing, minimax values included. */
	planted(pos);
	rb.flags = 0;
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, -1, false, &d);
	assert_int_equal(out.think_depth, 10);
	assert_int_equal(get_move(&out, pos, "7g7f")->eval, 50);
	ra.flags |= BOOKDB_REC_MINIMAX;
	ra.moves[0].value = 77;
	BookRecord *empty = &rb;
	bookdb_record_init(empty, pos);
	bookdb_record_merge(&out, &ra, empty, BOOKDB_PREFER_DEEPER, 0, false, &d);
	assert_false(d.changed);
	assert_int_equal(out.moves[0].value, 77);
	bookdb_record_merge(&out, &ra, &ra, BOOKDB_PREFER_DEEPER, 0, true, &d);
	assert_false(d.changed);
	/* The larger statistics, not the sum, when games cannot be told apart. */
	bookdb_record_merge(&out, &ra, &ra, BOOKDB_PREFER_DEEPER, 0, false, &d);
	assert_true(d.stats);
	assert_int_equal(get_move(&out, pos, "2g2f")->count, 6);
	assert_false(out.flags & BOOKDB_REC_MINIMAX); /* changed: values go */
	free(pos);
}

/* ---- the games' marks ---- */

/* ctx: int[3]: plies seen, sum of the movers' results. */
static void on_ply(void *ctx, Key key, Move move, int result)
{
	(void)key;
	(void)move;
	int *c = ctx;
	c[0]++;
	c[1] += result;
}

/* A move avoided (joseki prune) in either book stays avoided, whichever way
 * round the merge goes; marking a move a had unmarked is a change. */
static void test_merge__a_move_avoided_in_either_book_stays_avoided(void **state)
{
	(void)state;
	shogi_init();
	Position *pos = malloc(sizeof *pos);
	assert_non_null(pos);
	BookMergeDiff d;
	planted(pos);
	ra.moves[1].flags |= BOOKDB_MOVE_AVOIDED; /* a: 2g2f (b has no 2g2f) */
	rb.moves[0].flags |= BOOKDB_MOVE_AVOIDED; /* b: 7g7f (a has it unmarked) */
	rb.moves[1].flags |= BOOKDB_MOVE_AVOIDED; /* b: 5g5f (new to a) */
	for (int dir = 0; dir < 2; dir++) {
		BookRecord *o = dir ? &out2 : &out;
		bookdb_record_merge(o, dir ? &rb : &ra, dir ? &ra : &rb, BOOKDB_PREFER_DEEPER,
		                    dir ? -1 : 1, false, &d);
		assert_true(d.changed);
		assert_int_equal(o->nmoves, 3);
		for (int i = 0; i < o->nmoves; i++)
			assert_true(o->moves[i].flags & BOOKDB_MOVE_AVOIDED);
	}
	/* b's 7g7f mark is new to a: a change, and a's own mark stays. */
	rb = ra;
	rb.moves[0].flags |= BOOKDB_MOVE_AVOIDED;
	bookdb_record_merge(&out, &ra, &rb, BOOKDB_PREFER_DEEPER, 1, false, &d);
	assert_true(d.changed);
	assert_true(out.moves[0].flags & BOOKDB_MOVE_AVOIDED);
	assert_true(out.moves[1].flags & BOOKDB_MOVE_AVOIDED);
	free(pos);
}

static void test_merge__a_game_mark_keeps_its_plies(void **state)
{
	(void)state;
	shogi_init();
	Position *pos = malloc(sizeof *pos);
	pos_set_startpos(pos);
	uint8_t packed[BOOKDB_PACKED_MAX];
	int pl = bookdb_pack_position(packed, pos->board, pos->hand, pos->side);
	Move mv[3] = {usi_to_move(pos, "7g7f"), 0, 0};
	pos_do_move(pos, mv[0]);
	mv[1] = usi_to_move(pos, "3c3d");
	pos_do_move(pos, mv[1]);
	mv[2] = usi_to_move(pos, "8h2b+");
	uint8_t buf[BOOKDB_GAME_LEN(3)];
	int n =
	    bookdb_game_encode(buf, sizeof buf, BOOKDB_GAME_WHITE, packed, (size_t)pl, 1, mv, 3);
	assert_int_equal(n, (int)(12 + pl + 6));
	BookGame g;
	assert_int_equal(bookdb_game_decode(&g, buf, (size_t)n), 0);
	assert_true(g.has_plies);
	assert_int_equal(g.nplies, 3);
	assert_int_equal(g.winner, BOOKDB_GAME_WHITE);
	/* Every shorter or damaged length is refused, not misread. */
	for (int len = 0; len < n; len++)
		if (len != BOOKDB_GAME_LEGACY_LEN)
			assert_int_equal(bookdb_game_decode(&g, buf, (size_t)len), BOOKDB_ECORRUPT);
	assert_int_equal(bookdb_game_decode(&g, buf, BOOKDB_GAME_LEGACY_LEN), 0);
	assert_false(g.has_plies);
	int plies[3] = {0, 0, 0};
	assert_int_equal(bookdb_game_decode(&g, buf, (size_t)n), 0);
	assert_int_equal(bookdb_game_replay(&g, pos, on_ply, plies), 0);
	assert_int_equal(plies[0], 3);
	assert_int_equal(plies[1], -1 + 1 - 1); /* Black lost twice, White won once */
	/* An illegal move in a mark is corrupt: the plies before it are reported. */
	buf[n - 2] = buf[n - 1] = 0;
	memset(plies, 0, sizeof plies);
	assert_int_equal(bookdb_game_decode(&g, buf, (size_t)n), 0);
	assert_int_equal(bookdb_game_replay(&g, pos, on_ply, plies), BOOKDB_ECORRUPT);
	assert_int_equal(plies[0], 2);
	free(pos);
}

/* ---- another minimax run under way ---- */

/*
 * A merge into a book whose minimax another process is running (a
 * coordinator's, holding BOOK/minimax.lock) is done: its own minimax is left
 * to that run and the next, which read the merge's writes from the change
 * log; the command says so and succeeds (it failed before, the merge made).
 * The next minimax run takes them in.
 */
static void test_merge__a_minimax_run_under_way_takes_the_merge_in(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, NULL, NULL, false);
	sh("%s minimax %s/B --quiet && cp -r %s/B %s/C", J, d, d, d);
	char path[512];
	int fd[2];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%c/minimax.lock", d, "BC"[i]);
		fd[i] = open(path, O_RDWR | O_CREAT, 0664);
		assert_true(fd[i] >= 0);
		assert_int_equal(flock(fd[i], LOCK_EX | LOCK_NB), 0);
	}
	json_t *m = ts_run_json(0, "%s merge %s/B %s/A --json --quiet", J, d, d);
	assert_true(ts_jint(m, "changed") > 0);
	assert_true(json_is_true(json_object_get(json_object_get(m, "minimax"), "busy")));
	char *out = NULL, *err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s merge %s/C %s/A", J, d, d), 0);
	assert_non_null(strstr(out, "minimax left to the run under way"));
	free(out);
	free(err);
	close(fd[0]);
	close(fd[1]);
	out = err = NULL;
	assert_int_equal(ts_runf(&out, &err, "%s minimax %s/B", J, d), 0);
	if (!strstr(out, "incremental:")) fail_msg("not an incremental run: %s", out);
	assert_null(strstr(out, "incremental: 0 changed"));
	free(out);
	free(err);
	json_decref(m);
	ts_rmtree(d);
	free(d);
}

/* The summary says which minimax the merge ran and, for a whole-book one,
 * why (it said "whole book" alone). */
static void test_merge__its_minimax_whole_or_incremental_and_why(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	for (int s = 4; s <= 6; s++)
		sh("%s synth %s/s%d --positions 3000 --seed %d --quiet", J, d, s, s);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s merge %s/s4 %s/s5", J, d, d), 0);
	if (!strstr(out, "; minimax whole book (") ||
	    !strstr(out, " analysed again: no earlier minimax run)"))
		fail_msg("%s", out);
	free(out);
	assert_int_equal(ts_runf(&out, NULL, "%s merge %s/s4 %s/s6", J, d, d), 0);
	if (!strstr(out, "; minimax incremental (")) fail_msg("%s", out);
	free(out);
	ts_rmtree(d);
	free(d);
}

/* ---- --dry-run ---- */

static void test_merge__dry_run_writes_nothing_and_counts_the_same(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, NULL, NULL, false);
	char path[512];
	snprintf(path, sizeof path, "%s/B/data.mdb", d);
	size_t l0, l1;
	char *before = ts_read_file(path, &l0);
	json_t *dry = ts_run_json(0, "%s merge %s/B %s/A --dry-run --json", J, d, d);
	char *after = ts_read_file(path, &l1);
	assert_true(l0 == l1 && !memcmp(before, after, l0));
	assert_true(json_is_true(json_object_get(dry, "dry_run")));
	json_t *real = ts_run_json(0, "%s merge %s/B %s/A --json --no-minimax", J, d, d);
	const char *keys[] = {"positions", "added",     "replaced",    "stats_merged",
	                      "changed",   "unchanged", "games_added", "games_duplicate"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		assert_int_equal(ts_jint(dry, keys[i]), ts_jint(real, keys[i]));
	assert_true(ts_jint(real, "added") > 0);
	/* A dry run into no book is an error and creates none. */
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s merge %s/none %s/A --dry-run", J, d, d), 1);
	assert_non_null(strstr(err, "none: no book there (a dry run creates no book)"));
	free(err);
	snprintf(path, sizeof path, "%s/none/data.mdb", d);
	assert_null(ts_read_file(path, NULL));
	/* Nor does a merge with a missing source: the sources are opened first. */
	assert_int_equal(ts_runf(NULL, &err, "%s merge %s/new %s/A %s/gone", J, d, d, d), 1);
	assert_non_null(strstr(err, "/gone: no book there"));
	free(err);
	snprintf(path, sizeof path, "%s/new", d);
	assert_null(opendir(path));
	json_decref(dry);
	json_decref(real);
	free(before);
	free(after);
	ts_rmtree(d);
	free(d);
}

/* ---- kill -9 ---- */

static void test_merge__kill_9_leaves_whole_batches_and_a_rerun_completes(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_merge__kill_9_leaves_whole_batches_and_a_rerun_completes");
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	/* Two synth books (their records overlap near the start position) and games
	 * both books and only one of them counted. */
	char *ga = games(0, 9), *gb = games(5, 15);
	sh("%s synth %s/S --positions 150000 --seed 11 --quiet && %s ingest %s/S %s --quiet", J, d,
	   J, d, ga);
	sh("%s synth %s/D0 --positions 50000 --seed 12 --quiet && %s ingest %s/D0 %s --quiet", J, d,
	   J, d, gb);
	sh("cp -r %s/D0 %s/R && %s merge %s/R %s/S --no-minimax --quiet", d, d, J, d, d);
	char p0[512], pr[512], pk[512];
	snprintf(p0, sizeof p0, "%s/D0", d);
	snprintf(pr, sizeof pr, "%s/R", d);
	snprintf(pk, sizeof pk, "%s/K", d);
	Book b0 = load(p0, false), br = load(pr, false);
	int midway = 0;
	for (int round = 0; round < 6; round++) {
		unsigned us = (unsigned)(ts_rand(&rng) % 400000);
		sh("rm -rf %s/K && cp -r %s/D0 %s/K", d, d, d);
		char *out = NULL;
		assert_int_equal(
		    ts_runf(&out, NULL,
		            "%s merge %s/K %s/S --no-minimax --batch 2000 >/dev/null "
		            "2>&1 & p=$!; sleep 0.%06u; kill -9 $p 2>/dev/null; wait $p; "
		            "echo rc=$?",
		            J, d, d, us),
		    0);
		bool killed = strstr(out, "rc=137") != NULL;
		free(out);
		sh("%s check %s/K", J, d);
		/* Every record is as before or as after the whole merge, never between. */
		Book bk = load(pk, false);
		size_t merged = 0;
		for (size_t i = 0; i < bk.n; i++) {
			const Rec *x = &bk.v[i], *was = find(&b0, x->key),
			          *will = find(&br, x->key);
			if (rec_equal(x, will) && !rec_equal(x, was))
				merged++;
			else if (!rec_equal(x, was))
				fail_msg(
				    "round %d (kill after %u us): record %zu is neither before nor "
				    "after",
				    round, us, i);
		}
		char *mark = meta_get(pk, "merge");
		if (killed && mark && merged) midway++;
		print_message("round %d: kill after %u us, %s, %zu records merged, mark %s\n",
		              round, us, killed ? "killed" : "finished", merged,
		              mark ? "set" : "none");
		free(mark);
		book_free(&bk);
		/* The merge run again completes it: the same records as without a kill. */
		sh("%s merge %s/K %s/S --no-minimax --quiet", J, d, d);
		assert_books_equal(pk, pr, false);
		assert_null(meta_get(pk, "merge"));
		json_t *s = ts_run_json(0, "%s stats %s/K --json", J, d);
		assert_int_equal(ts_jint(s, "games"), 15);
		json_decref(s);
	}
	print_message("%d of 6 merges killed between batches\n", midway);
	/* Another source while a merge is unfinished: refused, saying which. */
	char *mark = NULL;
	for (int tries = 0; tries < 20 && !mark; tries++) {
		sh("rm -rf %s/K && cp -r %s/D0 %s/K", d, d, d);
		sh("%s merge %s/K %s/S --no-minimax --batch 1000 >/dev/null 2>&1 & p=$!; sleep "
		   "0.%06u; "
		   "kill -9 $p 2>/dev/null; wait $p; true",
		   J, d, d, 50000 + 10000 * tries);
		mark = meta_get(pk, "merge");
	}
	assert_non_null(mark);
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s merge %s/K %s/R --no-minimax", J, d, d), 1);
	assert_non_null(strstr(err, "/S"));
	assert_non_null(strstr(err, "interrupted"));
	free(err);
	/* A dry run of the interrupted one says it would complete it, writing
	 * nothing (the mark stays). */
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s merge %s/K %s/S --no-minimax --dry-run", J, d, d),
	                 0);
	if (!strstr(out, "; an interrupted merge would be completed")) fail_msg("%s", out);
	free(out);
	char *still = meta_get(pk, "merge");
	assert_non_null(still);
	free(still);
	free(mark);
	book_free(&b0);
	book_free(&br);
	free(ga);
	free(gb);
	ts_rmtree(d);
	free(d);
}

/* d/A holds the records a whole-book minimax run gives it (run on a copy). */
static void assert_a_whole_book_runs(const char *d)
{
	sh("cp -r %s/A %s/F && %s minimax %s/F --full --quiet", d, d, ts_joseki(), d);
	char p1[512], p2[512];
	snprintf(p1, sizeof p1, "%s/A", d);
	snprintf(p2, sizeof p2, "%s/F", d);
	assert_books_equal(p1, p2, false);
	sh("rm -rf %s/F", d);
}

/* Into a book minimax has run on, the merge's minimax is incremental (the change
 * log says what the merge wrote) and gives the records a whole-book run gives. */
static void test_merge__then_an_incremental_minimax_equal_to_a_whole_book_run(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, "--depth 2 --positions 30", "--depth 3 --positions 30", false);
	sh("%s minimax %s/A --quiet", J, d);
	json_t *j = ts_run_json(0, "%s merge %s/A %s/B --json --quiet", J, d, d);
	json_t *mm = json_object_get(j, "minimax");
	assert_true(json_is_object(mm));
	assert_true(json_is_true(json_object_get(mm, "incremental")));
	assert_true(ts_jint(mm, "changed") >= ts_jint(j, "added") + ts_jint(j, "changed"));
	json_decref(j);
	assert_a_whole_book_runs(d);
	ts_rmtree(d);
	free(d);
}

/* A merge into a new book ends with a whole-book minimax run, whose space
 * figures it gives as joseki minimax --json does: what the book takes a
 * position, and its records in full pages. */
static void test_merge__a_whole_book_minimax_says_what_the_book_takes(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	sh("%s synth %s/S --positions 3000 --seed 4 --quiet", J, d);
	json_t *j = ts_run_json(0, "%s merge %s/N %s/S --json --quiet", J, d, d);
	json_t *mm = json_object_get(j, "minimax");
	assert_true(json_is_false(json_object_get(mm, "incremental")));
	assert_true(json_is_boolean(json_object_get(mm, "rebuilt")));
	double per = json_real_value(json_object_get(mm, "bytes_per_position")),
	       packed = json_real_value(json_object_get(mm, "packed_bytes_per_position"));
	if (!(per > 50 && per < 400 && packed > 50 && packed < 400))
		fail_msg("bytes a position %.1f, packed %.1f", per, packed);
	json_decref(j);
	ts_rmtree(d);
	free(d);
}

/* A merge whose minimax did not run (killed, or --no-minimax) left the book's
 * values behind its records: the same merge run again, though it has nothing
 * left to merge, runs the minimax, and the book gets a whole-book run's
 * values; run once more, nothing is pending and no minimax runs. */
static void test_merge__run_again_it_backs_up_what_its_minimax_left(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, "--depth 2 --positions 30", "--depth 3 --positions 30", false);
	sh("%s minimax %s/A --quiet", J, d);
	json_t *j = ts_run_json(0, "%s merge %s/A %s/B --no-minimax --json --quiet", J, d, d);
	assert_true(ts_jint(j, "added") > 0);
	assert_true(json_is_null(json_object_get(j, "minimax")));
	json_decref(j);
	j = ts_run_json(0, "%s merge %s/A %s/B --json --quiet", J, d, d);
	assert_int_equal(ts_jint(j, "added") + ts_jint(j, "changed"), 0);
	json_t *mm = json_object_get(j, "minimax");
	if (!json_is_object(mm)) fail_msg("no minimax after a merge that left one undone");
	assert_true(json_is_true(json_object_get(mm, "incremental")));
	assert_true(ts_jint(mm, "changed") > 0);
	json_decref(j);
	assert_a_whole_book_runs(d);
	j = ts_run_json(0, "%s merge %s/A %s/B --json --quiet", J, d, d);
	assert_true(json_is_null(json_object_get(j, "minimax")));
	json_decref(j);
	ts_rmtree(d);
	free(d);
}

/* Cuts every game mark of BOOK dir to its first 8 bytes: a book ingested before
 * the marks kept their plies. */
static void make_marks_legacy(const char *dir)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, dir, NULL, err) < 0) fail_msg("open %s: %s", dir, err);
	BookTxn *r, *w;
	BookIter *it;
	assert_int_equal(bookdb_txn_begin(&r, db, false), 0);
	assert_int_equal(bookdb_kv_iter_open(&it, r, BOOKDB_GAMES), 0);
	char keys[64][256];
	uint8_t vals[64][8];
	size_t n = 0, kls[64];
	const void *k, *v;
	size_t kl, vl;
	while (bookdb_kv_iter_next(it, &k, &kl, &v, &vl) == 1 && n < 64) {
		assert_true(kl < 256 && vl > 8);
		memcpy(keys[n], k, kl);
		kls[n] = kl;
		memcpy(vals[n], v, 8);
		n++;
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(r);
	assert_int_equal(bookdb_txn_begin(&w, db, true), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(bookdb_kv_put(w, BOOKDB_GAMES, keys[i], kls[i], vals[i], 8), 0);
	assert_int_equal(bookdb_txn_commit(w), 0);
	bookdb_free(db);
}

/* Shared games whose marks have no plies cannot be taken out: each move's
 * statistics become the larger of the two books' (the summary says so), which
 * never counts a game twice. */
static void test_merge__games_without_kept_plies_never_count_twice(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, NULL, NULL, true);
	char pa[512], pb[512], pr[512];
	snprintf(pa, sizeof pa, "%s/A", d);
	snprintf(pb, sizeof pb, "%s/B", d);
	snprintf(pr, sizeof pr, "%s/R", d);
	make_marks_legacy(pa);
	make_marks_legacy(pb);
	json_t *j = ts_run_json(0, "%s merge %s/B %s/A --json --quiet --no-minimax", J, d, d);
	assert_int_equal(ts_jint(j, "games_duplicate"), 4);
	assert_int_equal(ts_jint(j, "games_unlocated"), 4);
	json_decref(j);
	sh("%s check %s/B", J, d);
	Book r = load(pr, true), m = load(pb, true);
	assert_int_equal(r.n, m.n);
	size_t under = 0;
	for (size_t i = 0; i < m.n; i++) {
		const Rec *x = &m.v[i], *y = find(&r, x->key);
		assert_non_null(y);
		for (int k = 0; k < x->rec->nmoves; k++) {
			const BookMove *u = &x->rec->moves[k], *v = NULL;
			for (int l = 0; l < y->rec->nmoves; l++)
				if (y->rec->moves[l].move == u->move) v = &y->rec->moves[l];
			assert_non_null(v);
			if (u->count > v->count) fail_msg("record %zu: a game counted twice", i);
			under += u->count < v->count;
		}
	}
	print_message("%zu moves count fewer games than the reference\n", under);
	book_free(&r);
	book_free(&m);
	ts_rmtree(d);
	free(d);
}

/* Puts bytes that do not decode under key k of BOOK dir. */
static void damage(const char *dir, Key k)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, dir, NULL, err) < 0) fail_msg("open %s: %s", dir, err);
	BookTxn *w;
	assert_int_equal(bookdb_txn_begin(&w, db, true), 0);
	uint8_t kb[16], junk[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
	key_to_bytes(k, kb);
	assert_int_equal(bookdb_kv_put(w, BOOKDB_POS, kb, 16, junk, sizeof junk), 0);
	assert_int_equal(bookdb_txn_commit(w), 0);
	bookdb_free(db);
}

/* A source record that does not decode is not copied, a destination one is
 * left as it is; both are counted and named, and the rest is merged. */
static void test_merge__records_that_do_not_decode_are_skipped_and_named(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	const char *J = ts_joseki();
	ingest_ab(d, NULL, NULL, false);
	char pa[512], pb[512];
	snprintf(pa, sizeof pa, "%s/A", d);
	snprintf(pb, sizeof pb, "%s/B", d);
	Book a = load(pa, false), b = load(pb, false);
	Key only_a = {0}, both = {0};
	bool have_a = false, have_both = false;
	for (size_t i = 0; i < a.n; i++) {
		bool in_b = find(&b, a.v[i].key) != NULL;
		if (!in_b && !have_a) only_a = a.v[i].key, have_a = true;
		if (in_b && !have_both && i > 0) both = a.v[i].key, have_both = true;
	}
	assert_true(have_a && have_both);
	size_t na = a.n;
	book_free(&a);
	book_free(&b);
	damage(pa, only_a);
	damage(pb, both);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "%s merge %s/B %s/A --json --no-minimax", J, d, d);
	assert_int_equal(rc, 0);
	json_t *j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_int_equal(ts_jint(j, "bad_src"), 1);
	assert_int_equal(ts_jint(j, "bad_dst"), 1);
	assert_int_equal(ts_jint(j, "added") + ts_jint(j, "changed") + ts_jint(j, "unchanged"),
	                 (long long)na - 2);
	assert_non_null(strstr(err, "do not decode"));
	char hex[KEY_HEX_LEN];
	key_to_hex(only_a, hex);
	assert_non_null(strstr(err, hex));
	json_decref(j);
	free(out);
	free(err);
	/* Only the planted record is bad: check names it and nothing else. */
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s check %s/B", J, d), 1);
	assert_non_null(strstr(out, "1 bad"));
	free(out);
	ts_rmtree(d);
	free(d);
}

/* A source whose last record ends a batch (no games, nothing pending after
 * it): the merge still clears its mark, so the next merge of another source
 * is not refused as "interrupted". */
static void test_merge__a_merge_ending_on_a_batch_leaves_no_mark(void **state)
{
	(void)state;
	const char *J = ts_joseki();
	char *d = ts_mkdtemp();
	sh("%s synth %s/S --positions 1000 --seed 3 --quiet && %s synth %s/T --positions 300 "
	   "--seed 4 --quiet",
	   J, d, J, d);
	json_t *s = ts_run_json(0, "%s stats %s/S --json", J, d);
	long long n = ts_jint(s, "positions");
	json_decref(s);
	assert_true(n > 1);
	char dst[600];
	snprintf(dst, sizeof dst, "%s/D", d);
	/* Into a new book every record is written: a batch of n ends on the last. */
	json_t *m =
	    ts_run_json(0, "%s merge %s %s/S --no-minimax --batch %lld --json", J, dst, d, n);
	assert_int_equal(ts_jint(m, "added"), n);
	assert_false(json_is_true(json_object_get(m, "resumed")));
	json_decref(m);
	char *mark = meta_get(dst, "merge");
	if (mark) fail_msg("the merge mark is still there after a complete merge");
	m = ts_run_json(0, "%s merge %s %s/T --no-minimax --json", J, dst, d);
	assert_false(json_is_true(json_object_get(m, "resumed")));
	json_decref(m);
	ts_rmtree(d);
	free(d);
}

/* ---- several sources, then the minimax hook (bookdb_merge_books) ---- */

typedef struct {
	int calls;       /* hook runs */
	const char *say; /* the hook fails with this message (NULL: succeeds) */
	char seen[4][600];
	int rcs[4];
	int nseen;
} Recorder;

static int recording_hook(void *ctx, BookDB *db, char *err, size_t errlen)
{
	(void)db;
	Recorder *r = ctx;
	r->calls++;
	if (!r->say) return 0;
	snprintf(err, errlen, "%s", r->say);
	return -1;
}

static void record_source(void *ctx, const char *src, const BookMergeStats *st, int rc,
                          const char *err)
{
	(void)st;
	(void)err;
	Recorder *r = ctx;
	assert_true(r->nseen < 4);
	snprintf(r->seen[r->nseen], sizeof r->seen[0], "%s", src);
	r->rcs[r->nseen++] = rc;
}

/* The sources in order, another path to the destination merged into itself,
 * the hook run once and only when the merge wrote something (not on a dry
 * run, not when nothing changed), a missing source named, a failing hook's
 * message "minimax: DST: ..." after a complete merge. */
static void test_merge__several_sources_then_the_minimax_hook(void **state)
{
	(void)state;
	char *d = ts_mkdtemp();
	ingest_ab(d, NULL, NULL, false);
	sh("cp -r %s/A %s/D && ln -s %s/D %s/Dlink", d, d, d, d);
	char dst[600], b[600], link[600], none[600], err[BOOKDB_MERGE_ERRLEN];
	snprintf(dst, sizeof dst, "%s/D", d);
	snprintf(b, sizeof b, "%s/B", d);
	snprintf(link, sizeof link, "%s/Dlink", d);
	snprintf(none, sizeof none, "%s/none", d);
	Recorder rec = {0};
	BookMergeBooksOptions mo = {.source_done = record_source,
	                            .ctx = &rec,
	                            .minimax = {.run = recording_hook, .ctx = &rec}};
	BookMergeStats tot;
	bool ran;
	const char *two[] = {b, link};
	assert_int_equal(bookdb_merge_books(&tot, &ran, dst, NULL, two, 2, &mo, err), 0);
	assert_int_equal(rec.nseen, 2);
	assert_string_equal(rec.seen[0], b);
	assert_string_equal(rec.seen[1], link);
	assert_int_equal(rec.rcs[0] | rec.rcs[1], 0);
	assert_true(tot.added > 0);
	assert_true(tot.positions > tot.added); /* B's positions and D's own */
	assert_true(ran);
	assert_int_equal(rec.calls, 1);
	/* Nothing new: no minimax. A dry run: none either. */
	const char *one[] = {b};
	assert_int_equal(bookdb_merge_books(&tot, &ran, dst, NULL, one, 1, &mo, err), 0);
	assert_int_equal(tot.added + tot.changed, 0);
	assert_false(ran);
	mo.each.dry_run = true;
	assert_int_equal(bookdb_merge_books(&tot, &ran, dst, NULL, one, 1, &mo, err), 0);
	assert_false(ran);
	assert_int_equal(rec.calls, 1);
	mo.each.dry_run = false;
	/* A missing source is named and never reaches source_done; the sources
	 * before it are not merged either, and no destination is made. */
	rec.nseen = 0;
	const char *missing[] = {b, none};
	char fresh[700];
	snprintf(fresh, sizeof fresh, "%s/fresh", d);
	assert_int_equal(bookdb_merge_books(&tot, &ran, fresh, NULL, missing, 2, &mo, err),
	                 BOOKDB_ENOBOOK);
	assert_non_null(strstr(err, none));
	assert_int_equal(rec.nseen, 0);
	assert_null(opendir(fresh));
	/* A failing hook: the merge is whole, the message says where it failed. */
	sh("cp -r %s/A %s/E", d, d);
	snprintf(dst, sizeof dst, "%s/E", d);
	rec.say = "no luck";
	assert_true(bookdb_merge_books(&tot, &ran, dst, NULL, one, 1, &mo, err) < 0);
	assert_false(ran);
	char want[700];
	snprintf(want, sizeof want, "minimax: %s: no luck", dst);
	assert_string_equal(err, want);
	assert_null(meta_get(dst, "merge"));
	ts_rmtree(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge__deeper_wins_then_nodes_then_the_newer),
	    cmocka_unit_test(test_merge__its_minimax_whole_or_incremental_and_why),
	    cmocka_unit_test(test_merge__a_move_avoided_in_either_book_stays_avoided),
	    cmocka_unit_test(test_merge__a_game_mark_keeps_its_plies),
	    cmocka_unit_test(test_merge__a_into_b_equals_b_into_a_and_each_game_counts_once),
	    cmocka_unit_test(test_merge__a_whole_game_completes_the_one_cut_short),
	    cmocka_unit_test(test_merge__a_game_of_no_plies_in_both_books_is_a_plain_duplicate),
	    cmocka_unit_test(test_merge__a_book_into_itself_or_its_copy_changes_nothing),
	    cmocka_unit_test(test_merge__then_an_incremental_minimax_equal_to_a_whole_book_run),
	    cmocka_unit_test(test_merge__run_again_it_backs_up_what_its_minimax_left),
	    cmocka_unit_test(test_merge__a_whole_book_minimax_says_what_the_book_takes),
	    cmocka_unit_test(test_merge__games_without_kept_plies_never_count_twice),
	    cmocka_unit_test(test_merge__dry_run_writes_nothing_and_counts_the_same),
	    cmocka_unit_test(test_merge__a_minimax_run_under_way_takes_the_merge_in),
	    cmocka_unit_test(test_merge__records_that_do_not_decode_are_skipped_and_named),
	    cmocka_unit_test(test_merge__kill_9_leaves_whole_batches_and_a_rerun_completes),
	    cmocka_unit_test(test_merge__several_sources_then_the_minimax_hook),
	    cmocka_unit_test(test_merge__a_merge_ending_on_a_batch_leaves_no_mark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
