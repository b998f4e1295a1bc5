/*
 * tests/bookdb/test_counts.c — the counts the store keeps (bookdb.h, "Kept
 * counts"; docs/bookdb.md): equal to a recount of the records after every
 * kind of write the commands make (ingest, import, think, minimax's
 * write-back, marks and their undo, merge, synth sorted and not, check
 * --repair's copy) and the store's own (puts replacing records, deletes, raw
 * bytes whose head does not decode, a transaction replayed after the map
 * grew); after a writer killed at random moments; a book without them (made
 * before they were kept, written since by a build that keeps none,
 * compacted) said to have none and counted by its next write or by stats
 * --scan, or kept through compact; and stats reading no record but the start
 * position's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/stats.h"
#include "bookdb/synth.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tests/support/support.h"

#define J ts_joseki()

/* The kept counts of the book in path equal a recount of its records. */
static void assert_counts_exact(const char *path, const char *after)
{
	BookDB *db;
	BookTxn *txn;
	BookCounts kept, real;
	uint64_t positions, n;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, path, &ro, err)) fail_msg("%s: %s", after, err);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_counts(&kept, txn), 0);
	assert_int_equal(bookdb_counts_recount(&real, &positions, txn), 0);
	assert_int_equal(bookdb_count(&n, txn, BOOKDB_POS), 0);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	if (!kept.kept) fail_msg("%s: no counts kept", after);
	if (kept.thought != real.thought || kept.moves != real.moves || positions != n)
		fail_msg("%s: kept thought %llu moves %llu, the records %llu and %llu", after,
		         (unsigned long long)kept.thought, (unsigned long long)kept.moves,
		         (unsigned long long)real.thought, (unsigned long long)real.moves);
}

/* stats --json (read: before the scan when the counts are kept, else after
 * it, which counts them) against stats --scan --json (counted). */
static void assert_stats_agree(const char *path, bool kept)
{
	json_t *a = kept ? ts_run_json(0, "%s stats %s --json", J, path) : NULL;
	json_t *b = ts_run_json(0, "%s stats %s --scan --json", J, path);
	if (!a) a = ts_run_json(0, "%s stats %s --json", J, path);
	assert_true(json_is_true(json_object_get(a, "counts_kept")));
	assert_int_equal(ts_jint(a, "thought"), ts_jint(b, "thought"));
	assert_int_equal(ts_jint(a, "moves"), ts_jint(b, "moves"));
	assert_int_equal(ts_jint(a, "positions"), ts_jint(b, "positions"));
	assert_true(ts_jint(b, "peak_anon_bytes") > 0);
	json_decref(a);
	json_decref(b);
	/* The scan kept leaves and corrupt: read back, current. */
	a = ts_run_json(0, "%s stats %s --json", J, path);
	assert_true(json_is_true(json_object_get(a, "leaves_current")));
	assert_int_equal(ts_jint(a, "corrupt"), 0);
	assert_null(json_object_get(a, "peak_anon_bytes")); /* the scan's only */
	json_decref(a);
}

/* Runs a printf-built command line that must succeed (ts_runf's arguments). */
#define sh(...)                                                                                    \
	do {                                                                                       \
		char *o_ = NULL, *e_ = NULL;                                                       \
		int rc_ = ts_runf(&o_, &e_, __VA_ARGS__);                                          \
		if (rc_) fail_msg("exit %d:\n%s%s", rc_, o_ ? o_ : "", e_ ? e_ : "");              \
		free(o_);                                                                          \
		free(e_);                                                                          \
	} while (0)

static void test_counts__kept_equal_a_recount_after_every_command(void **state)
{
	(void)state;
	char *d = ts_mkdtemp(), b[600], n[600], r[600];
	snprintf(b, sizeof b, "%s/b", d);
	snprintf(n, sizeof n, "%s/n", d);
	snprintf(r, sizeof r, "%s/r", d);
	sh("%s ingest %s tests/data/floodgate --quiet", J, b);
	assert_counts_exact(b, "ingest");
	sh("%s import %s tests/data/yaneuraou-db/rshogi_book_backprop_yo_in.db --quiet", J, b);
	assert_counts_exact(b, "import");
	sh("%s think %s --depth 1 --positions 40 --quiet", J, b);
	assert_counts_exact(b, "think");
	sh("%s minimax %s --full --quiet", J, b);
	assert_counts_exact(b, "minimax --full");
	/* A move the record lacks, added by the mark, taken out by its undo. */
	sh("%s avoid %s startpos 1g1f --note x", J, b);
	assert_counts_exact(b, "avoid");
	sh("%s avoid %s startpos 1g1f --undo", J, b);
	assert_counts_exact(b, "avoid --undo");
	sh("%s prefer %s startpos 9g9f --no-minimax", J, b);
	assert_counts_exact(b, "prefer");
	sh("%s think %s --depth 1 --positions 20 --quiet && %s minimax %s --quiet", J, b, J, b);
	assert_counts_exact(b, "think and an incremental minimax");
	sh("%s synth %s --positions 3000 --seed 5 --quiet", J, n);
	assert_counts_exact(n, "synth");
	sh("%s merge %s %s --quiet", J, b, n);
	assert_counts_exact(b, "merge");
	sh("%s check %s --repair %s", J, b, r);
	assert_counts_exact(r, "check --repair");
	assert_stats_agree(b, true);
	assert_stats_agree(r, true);
	sh("rm -rf %s && %s synth %s --positions 3000 --seed 6 --unsorted --batch 700 --quiet", n,
	   J, n);
	assert_counts_exact(n, "synth --unsorted");
	ts_rmtree(d);
	free(d);
}

/* A record of pos with k of its legal moves (thought or not). */
static void make_record(BookRecord *rec, const Position *pos, int k, bool thought)
{
	Move moves[MOVEGEN_MAX];
	int nl = movegen_legal(pos, moves);
	bookdb_record_init(rec, pos);
	rec->flags = thought ? BOOKDB_REC_THOUGHT : 0;
	rec->think_depth = thought ? 9 : 0;
	for (int i = 0; i < k && i < nl; i++) {
		BookMove *m = bookdb_record_add_move(rec, moves[i]);
		if (thought) {
			m->flags = BOOKDB_MOVE_EVAL;
			m->eval = (int16_t)(-10 * i);
		}
	}
}

/*
 * One write transaction of the store's own: puts of new records, puts over
 * old ones (thought or not, more moves or fewer), deletes of present and
 * absent keys, raw bytes whose head does not decode, all at random.
 */
static int mixed_batch(BookWriter *w, uint64_t *rng, int nputs)
{
	static Position pos;
	static BookRecord rec;
	for (int i = 0; i < nputs; i++) {
		uint64_t r = ts_rand(rng);
		/* Keys of a few short lines, so that writes often meet old records. */
		pos_set_startpos(&pos);
		uint64_t lrng = 0xc0ffee + (r % 40);
		int plies = 1 + (int)((r >> 8) % 12);
		for (int p = 0; p < plies; p++) {
			Move moves[MOVEGEN_MAX];
			int nl = movegen_legal(&pos, moves);
			pos_do_move(&pos, moves[ts_rand(&lrng) % (uint64_t)nl]);
		}
		Key key = pos_key(&pos);
		int what = (int)((r >> 16) % 10);
		int rc;
		if (what == 0) {
			BookTxn *t;
			uint8_t kb[16];
			bookdb_key_bytes(key, kb);
			if ((rc = bookdb_writer_txn(&t, w))) return rc;
			rc = bookdb_kv_del(t, BOOKDB_POS, kb, 16);
			if (rc == BOOKDB_ENOTFOUND) rc = 0;
		} else if (what == 1) {
			const uint8_t junk[3] = {0xff, (uint8_t)r, 0}; /* unknown flags */
			rc = bookdb_writer_put_raw(w, key, junk, sizeof junk);
		} else {
			make_record(&rec, &pos, (int)((r >> 24) % 9), (r >> 32) & 1);
			rc = bookdb_writer_put(w, key, &rec);
		}
		if (rc) return rc;
	}
	return 0;
}

static void test_counts__the_stores_own_writes_and_a_map_that_grows(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("the_stores_own_writes_and_a_map_that_grows");
	char *d = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/b", d);
	BookDB *db;
	BookWriter *w;
	/* A small map: batches are replayed after it grows. */
	BookDBOptions o = {.no_sync = true, .map_size = 1 << 16};
	if (bookdb_open(&db, path, &o, err)) fail_msg("%s", err);
	assert_int_equal(bookdb_writer_new(&w, db, 97), 0);
	for (int round = 0; round < 12; round++) {
		assert_int_equal(mixed_batch(w, &rng, 500), 0);
		/* Read through the writer's own transaction: its writes in. */
		BookTxn *t;
		BookCounts in, real;
		uint64_t np;
		assert_int_equal(bookdb_writer_txn(&t, w), 0);
		assert_int_equal(bookdb_counts(&in, t), 0);
		assert_int_equal(bookdb_counts_recount(&real, &np, t), 0);
		assert_true(in.kept);
		assert_int_equal(in.thought, real.thought);
		assert_int_equal(in.moves, real.moves);
		assert_int_equal(bookdb_writer_flush(w), 0);
		assert_counts_exact(path, "the store's writes");
	}
	assert_true(bookdb_map_size(db) > (1 << 16));
	bookdb_writer_free(w);
	bookdb_free(db);
	ts_rmtree(d);
	free(d);
}

/* The writer child: mixed batches, committed one after the other, until killed. */
static void crash_child(const char *path, uint64_t seed)
{
	BookDB *db;
	BookWriter *w;
	char err[BOOKDB_ERRLEN];
	uint64_t rng = seed;
	BookDBOptions opt = {.map_size = 1 << 16};
	if (bookdb_open(&db, path, &opt, err) || bookdb_writer_new(&w, db, 150)) _exit(3);
	for (;;)
		if (mixed_batch(w, &rng, 150)) _exit(4);
}

static void test_counts__a_writer_killed_at_random_leaves_them_exact(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("a_writer_killed_at_random_leaves_them_exact");
	char *d = ts_mkdtemp(), path[600];
	snprintf(path, sizeof path, "%s/b", d);
	int landed = 0;
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) crash_child(path, rng + (uint64_t)round);
		/* Kill at a random moment: before, during or between commits. */
		struct timespec ts = {0, (long)(ts_rand(&rng) % 80) * 1000000L};
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
		}
		assert_true(WIFSIGNALED(status)); /* the child never stops by itself */
		/* Killed before the book's first commit: no book yet (only before
		 * any round made one). */
		BookDB *db;
		char err[BOOKDB_ERRLEN];
		BookDBOptions ro = {.read_only = true};
		if (bookdb_open(&db, path, &ro, err) != 0) {
			if (landed) fail_msg("after a kill: %s", err);
			continue;
		}
		bookdb_free(db);
		landed++;
		assert_counts_exact(path, "a killed writer");
	}
	print_message("%d of 20 kills after the book was made\n", landed);
	assert_true(landed > 0);
	ts_rmtree(d);
	free(d);
}

/* Writes behind the store's back, as a build that keeps no counts would:
 * one record put by LMDB itself and, with drop, meta "counts" deleted (a book
 * made before they were kept). */
static void foreign_write(const char *path, bool drop)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi meta, pos;
	static Position p;
	static BookRecord rec;
	uint8_t kb[16], buf[BOOKDB_RECORD_MAX];
	pos_set_startpos(&p);
	make_record(&rec, &p, 5, true);
	int len = bookdb_record_encode(buf, sizeof buf, &rec);
	assert_true(len > 0);
	bookdb_key_bytes(pos_key(&p), kb);
	MDB_val k = {16, kb}, v = {(size_t)len, buf}, mk = {6, "counts"};
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
	assert_int_equal(mdb_env_set_mapsize(env, 0), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0664), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "pos", 0, &pos), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", 0, &meta), 0);
	assert_int_equal(mdb_put(txn, pos, &k, &v, 0), 0);
	if (drop) assert_int_equal(mdb_del(txn, meta, &mk, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void assert_not_kept(const char *path)
{
	json_t *s = ts_run_json(0, "%s stats %s --json", J, path);
	assert_true(json_is_false(json_object_get(s, "counts_kept")));
	assert_true(json_is_null(json_object_get(s, "thought")));
	assert_true(json_is_null(json_object_get(s, "moves")));
	json_decref(s);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s stats %s", J, path), 0);
	assert_non_null(strstr(out, "thought            - (not kept"));
	free(out);
}

static void test_counts__a_book_without_them_is_said_and_counted_once(void **state)
{
	(void)state;
	char *d = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/b", d);
	sh("%s synth %s --positions 2000 --seed 2 --quiet", J, path);
	assert_counts_exact(path, "synth");
	/* Made before counts were kept: said, then counted by the next write,
	 * whatever it writes (here work state, no record). */
	foreign_write(path, true);
	assert_not_kept(path);
	BookDB *db;
	BookTxn *txn;
	BookCounts c;
	if (bookdb_open(&db, path, NULL, err)) fail_msg("%s", err);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_counts(&c, txn), 0);
	assert_false(c.kept);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "x1", 2, "", 0), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	/* A write transaction that writes nothing commits nothing: still kept. */
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	assert_counts_exact(path, "the next write");
	/* Written by a build that keeps none (the counts are there, stale):
	 * not trusted; stats --scan counts them and keeps them. */
	foreign_write(path, false);
	assert_not_kept(path);
	assert_stats_agree(path, false);
	assert_counts_exact(path, "stats --scan");
	/* Compacted: LMDB's copy numbers its transaction 1, and compact stamps
	 * what was current with the copy's own; a backup's compacting copy is
	 * a snapshot of a live book, and keeps none. */
	sh("%s compact %s", J, path);
	assert_counts_exact(path, "compact");
	json_t *s = ts_run_json(0, "%s stats %s --json", J, path);
	assert_true(json_is_true(json_object_get(s, "leaves_current")));
	json_decref(s);
	char copy[700];
	snprintf(copy, sizeof copy, "%s/plain", d);
	sh("%s backup %s %s", J, path, copy); /* LMDB's plain copy keeps the ids */
	assert_counts_exact(copy, "backup");
	snprintf(copy, sizeof copy, "%s/copy", d);
	sh("%s backup %s %s --compact", J, path, copy);
	assert_not_kept(copy);
	sh("%s avoid %s startpos 1g1f --no-minimax", J, copy);
	assert_counts_exact(copy, "a write after backup --compact");
	ts_rmtree(d);
	free(d);
}

static void test_counts__stats_reads_no_record(void **state)
{
	(void)state;
	char *d = ts_mkdtemp(), path[600], err[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/b", d);
	BookDB *db;
	BookDBOptions o = {.no_sync = true};
	if (bookdb_open(&db, path, &o, err)) fail_msg("%s", err);
	BookSynthOptions so = {.positions = 3000, .seed = 3};
	BookSynthStats ss;
	assert_int_equal(bookdb_synth(&ss, db, &so, err), 0);
	BookTxn *txn;
	BookStats st, full;
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	uint64_t r0 = bookdb_pos_reads();
	assert_int_equal(bookdb_stats(&st, db, txn, false), 0);
	uint64_t r1 = bookdb_pos_reads();
	assert_int_equal(bookdb_stats(&full, db, txn, true), 0);
	uint64_t r2 = bookdb_pos_reads();
	bookdb_txn_abort(txn);
	/* The start position's record (root_value) at most, against every
	 * record, twice, for the scan. */
	assert_true(r1 - r0 <= 1);
	assert_true(r2 - r1 >= 2 * 3000);
	assert_true(st.counts_known);
	assert_false(st.scanned);
	assert_int_equal(st.positions, 3000);
	assert_int_equal(st.thought, full.thought);
	assert_int_equal(st.moves, full.moves);
	assert_false(st.leaves_known);
	/* Kept, the scan's leaves are read back, current until the next write. */
	bool differed = true;
	assert_int_equal(bookdb_stats_keep(db, &full, &differed), 0);
	assert_false(differed);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	r0 = bookdb_pos_reads();
	assert_int_equal(bookdb_stats(&st, db, txn, false), 0);
	assert_true(bookdb_pos_reads() - r0 <= 1);
	bookdb_txn_abort(txn);
	assert_true(st.leaves_known && st.leaves_current);
	assert_int_equal(st.leaves, full.leaves);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_WORK, "x", 1, "", 0), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	assert_int_equal(bookdb_txn_begin(&txn, db, false), 0);
	assert_int_equal(bookdb_stats(&st, db, txn, false), 0);
	bookdb_txn_abort(txn);
	assert_true(st.leaves_known && !st.leaves_current);
	assert_int_equal(st.leaves, full.leaves);
	bookdb_free(db);
	ts_rmtree(d);
	free(d);
}

int main(void)
{
	shogi_init();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts__kept_equal_a_recount_after_every_command),
	    cmocka_unit_test(test_counts__the_stores_own_writes_and_a_map_that_grows),
	    cmocka_unit_test(test_counts__a_writer_killed_at_random_leaves_them_exact),
	    cmocka_unit_test(test_counts__a_book_without_them_is_said_and_counted_once),
	    cmocka_unit_test(test_counts__stats_reads_no_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
