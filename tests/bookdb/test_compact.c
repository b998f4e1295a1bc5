/*
 * tests/bookdb/test_compact.c — joseki compact: the book without its free
 * pages and in full ones, the same records, a database this build does not
 * know kept, refused while a writer has the book open, and safe against kill
 * -9 at any moment; stats shows the pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

#include "bookdb/bookdb.h"
#include "shogi/clock.h"
#include "tests/support/support.h"

/* The YaneuraOu export of book dir/b (every move), as one string. */
static char *export_all(const char *dir)
{
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s export %s/b %s/all.db --moves all --quiet", ts_joseki(), dir,
	            dir) != 0)
		fail_msg("export: %s", err);
	free(err);
	char path[512];
	snprintf(path, sizeof path, "%s/all.db", dir);
	char *text = ts_read_file(path, NULL);
	assert_non_null(text);
	return text;
}

/* DIR/b and DIR/p export the same (export_all reads DIR/b: p is put in its
 * place for the second export, and each put back after). */
static void assert_exports_equal(const char *dir)
{
	char *a = export_all(dir), b[600], p[600], aside[600];
	snprintf(b, sizeof b, "%s/b", dir);
	snprintf(p, sizeof p, "%s/p", dir);
	snprintf(aside, sizeof aside, "%s/b.aside", dir);
	assert_int_equal(rename(b, aside), 0);
	assert_int_equal(rename(p, b), 0);
	char *other = export_all(dir);
	assert_string_equal(a, other);
	free(a);
	free(other);
	assert_int_equal(rename(b, p), 0);
	assert_int_equal(rename(aside, b), 0);
}

static void test_compact__frees_the_pages_and_keeps_every_record(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *err = NULL;
	/* Two whole-book minimax runs rewrite every record twice: free pages. */
	int rc = ts_runf(NULL, &err,
	                 "%s synth %s/b --positions 20000 --seed 3 --quiet && %s minimax %s/b "
	                 "--full --in-place --quiet",
	                 ts_joseki(), dir, ts_joseki(), dir);
	if (rc != 0) fail_msg("setup: %s", err);
	free(err);
	/* The second run says what the book takes and what it would in full
	 * pages: far apart (its text says to compact). */
	json_t *m0 = ts_run_json(0, "%s minimax %s/b --full --in-place --json", ts_joseki(), dir);
	assert_false(json_is_true(json_object_get(m0, "rebuilt")));
	double took = json_real_value(json_object_get(m0, "bytes_per_position")),
	       packed = json_real_value(json_object_get(m0, "packed_bytes_per_position"));
	print_message("after minimax: %.1f bytes a position, %.1f packed\n", took, packed);
	assert_true(packed > 50 && took > 1.3 * packed);
	json_decref(m0);
	json_t *s0 = ts_run_json(0, "%s stats %s/b --json", ts_joseki(), dir);
	assert_true(ts_jint(s0, "pages_free") > 0);
	char *before = export_all(dir);
	/* A compacting backup packs its copy as compact does. */
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s backup %s/b %s/bk --compact --json", ts_joseki(), dir, dir), 0);
	json_t *sb = ts_run_json(0, "%s stats %s/bk --json", ts_joseki(), dir);
	assert_true(ts_jint(sb, "pages_used") * 10 < ts_jint(s0, "pages_used") * 7);
	assert_int_equal(ts_jint(sb, "positions"), ts_jint(s0, "positions"));
	json_decref(sb);
	json_t *c = ts_run_json(0, "%s compact %s/b --json", ts_joseki(), dir);
	assert_true(ts_jint(c, "bytes_after") < ts_jint(c, "bytes_before"));
	assert_int_equal(ts_jint(c, "bytes_before"), ts_jint(s0, "bytes"));
	json_t *s1 = ts_run_json(0, "%s stats %s/b --json", ts_joseki(), dir);
	/* But the pages its commits free (the main root and the last leaf of
	 * each database, once a batch; the counts' stamp). */
	assert_true(ts_jint(s1, "pages_free") <= 16);
	/* The records were rebuilt into full pages: the pages the minimax runs
	 * split half full (200 bytes a position) are packed (118 here). */
	print_message("pages used: %lld before, %lld after; bytes a position %.1f after\n",
	              (long long)ts_jint(s0, "pages_used"), (long long)ts_jint(s1, "pages_used"),
	              json_real_value(json_object_get(s1, "bytes_per_position")));
	assert_true(ts_jint(s1, "pages_used") * 10 < ts_jint(s0, "pages_used") * 7);
	/* As packed as minimax reckoned (within 5 %). */
	double now = json_real_value(json_object_get(s1, "bytes_per_position"));
	assert_true(now < packed * 1.05 && now > packed * 0.95);
	assert_int_equal(ts_jint(s1, "positions"), ts_jint(s0, "positions"));
	assert_int_equal(ts_jint(s1, "bytes"), ts_jint(c, "bytes_after"));
	char *after = export_all(dir);
	assert_string_equal(before, after);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), dir), 0);
	/* Minimax goes on incrementally from its kept state. */
	json_t *m = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
	assert_true(json_is_true(json_object_get(m, "incremental")));
	/* Its own memory at the peak (shogi/memuse.h), not the book's mapped pages:
	 * more than nothing, less than what it reported resident. */
	assert_true(ts_jint(m, "peak_anon_bytes") > 0);
	assert_true(ts_jint(m, "peak_anon_bytes") <= ts_jint(m, "peak_rss_bytes"));
	assert_true(ts_jint(c, "peak_anon_bytes") > 0);
	json_decref(m);
	json_decref(s0);
	json_decref(s1);
	json_decref(c);
	free(before);
	free(after);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A first `joseki minimax` without --full (no earlier run: the whole book)
 * writes the book anew too: full pages, the values of the run in place
 * (--in-place), where the records grown in place take half-full pages; the
 * next run is incremental and writes in place.
 */
static void test_compact__a_first_minimax_without_full_writes_full_pages(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *err = NULL;
	int rc = ts_runf(NULL, &err,
	                 "%s synth %s/b --positions 20000 --seed 4 --quiet && cp -r %s/b %s/p",
	                 ts_joseki(), dir, dir, dir);
	if (rc != 0) fail_msg("setup: %s", err);
	free(err);
	json_t *m = ts_run_json(0, "%s minimax %s/b --json", ts_joseki(), dir);
	json_t *ip = ts_run_json(0, "%s minimax %s/p --in-place --json", ts_joseki(), dir);
	assert_false(json_is_true(json_object_get(m, "incremental")));
	assert_string_equal(json_string_value(json_object_get(m, "full_reason")),
	                    json_string_value(json_object_get(ip, "full_reason")));
	assert_true(json_is_true(json_object_get(m, "rebuilt")));
	assert_false(json_is_true(json_object_get(ip, "rebuilt")));
	assert_int_equal(ts_jint(m, "rewritten"), ts_jint(ip, "rewritten"));
	double took = json_real_value(json_object_get(m, "bytes_per_position")),
	       packed = json_real_value(json_object_get(m, "packed_bytes_per_position"));
	/* The run in place says what the book takes, and what it would in full
	 * pages (its text: compact packs them), as stats counts it. */
	double took_ip = json_real_value(json_object_get(ip, "bytes_per_position"));
	json_t *sp = ts_run_json(0, "%s stats %s/p --json", ts_joseki(), dir);
	assert_true(fabs(took_ip - (double)ts_jint(sp, "bytes_used") / 20000) < 2);
	assert_true(json_real_value(json_object_get(ip, "packed_bytes_per_position")) == packed);
	json_decref(sp);
	print_message("first minimax: %.1f bytes a position written anew, %.1f in place, %.1f "
	              "packed\n",
	              took, took_ip, packed);
	assert_true(took < packed * 1.05 && took > packed * 0.95);
	assert_true(took_ip > 1.3 * packed);
	assert_exports_equal(dir);
	char from[600];
	snprintf(from, sizeof from, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), from), 0);
	json_t *inc = ts_run_json(0, "%s minimax %s --json", ts_joseki(), from);
	assert_true(json_is_true(json_object_get(inc, "incremental")));
	assert_false(json_is_true(json_object_get(inc, "rebuilt")));
	json_decref(inc);
	json_decref(m);
	json_decref(ip);
	ts_rmtree(dir);
	free(dir);
}

/* A writer (think) has the book open: compact refuses and says why; the
 * think goes on undisturbed. A missing book is an error too. */
static void test_compact__refused_while_a_writer_has_the_book(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s/b tests/data/floodgate --quiet", ts_joseki(), dir),
	    0);
	char book[600], lock[700];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(lock, sizeof lock, "%s/writers.lock", book);
	char *think[] = {(char *)ts_joseki(), "think", book, "--depth", "2", "--time", "5",
	                 "--quiet",           NULL};
	pid_t p = ts_spawn(think, NULL, NULL, false);
	/* Compact once think holds the writers' lock. */
	assert_true(ts_wait_flocked(lock, p, 60000));
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s compact %s", ts_joseki(), book), 1);
	assert_non_null(strstr(err, "a writer has the book open"));
	/* Naming the writer, as a user finds it. */
	char who[64];
	snprintf(who, sizeof who, ", pid %d: ", (int)p);
	if (!strstr(err, who) || !strstr(err, " think ")) fail_msg("%s", err);
	free(err);
	int st = 0;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* think went on undisturbed */
	err = NULL;
	assert_int_equal(ts_runf(NULL, &err, "%s compact %s/none", ts_joseki(), dir), 1);
	assert_non_null(strstr(err, "no book"));
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s compact %s/b", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

/* kill -9 at random moments of a compaction: every time the book opens,
 * passes check and holds the same records; a later compact completes. */
static void test_compact__survives_kill_9_at_any_moment(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_compact__survives_kill_9_at_any_moment");
	char *dir = ts_mkdtemp();
	char *err = NULL;
	int rc = ts_runf(NULL, &err,
	                 "%s synth %s/b --positions 80000 --seed 5 --quiet && %s minimax %s/b "
	                 "--full --in-place --quiet && %s minimax %s/b --full --in-place --quiet",
	                 ts_joseki(), dir, ts_joseki(), dir, ts_joseki(), dir);
	if (rc != 0) fail_msg("setup: %s", err);
	free(err);
	char *want = export_all(dir);
	int killed = 0;
	for (int round = 0; round < 10; round++) {
		unsigned us = (unsigned)(ts_rand(&rng) % 40000);
		char *out = NULL;
		rc = ts_runf(
		    &out, NULL,
		    "%s compact %s/b >/dev/null 2>&1 & p=$!; sleep 0.%06u; kill -9 $p 2>/dev/null; "
		    "wait $p; echo rc=$?",
		    ts_joseki(), dir, us);
		assert_int_equal(rc, 0);
		if (strstr(out, "rc=137")) killed++;
		free(out);
		err = NULL;
		rc = ts_runf(NULL, &err, "%s check %s/b", ts_joseki(), dir);
		if (rc != 0) fail_msg("round %d (killed after %u us): check: %s", round, us, err);
		free(err);
		char *got = export_all(dir);
		if (strcmp(got, want)) fail_msg("round %d: the records changed", round);
		free(got);
	}
	print_message("%d of 10 compactions killed mid-way\n", killed);
	assert_true(killed > 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s compact %s/b", ts_joseki(), dir), 0);
	char path[512], book[512], e[BOOKDB_ERRLEN];
	snprintf(path, sizeof path, "%s/b/data.mdb.compact", dir);
	assert_null(ts_read_file(path, NULL));
	/* A copy a killed rebuild left (a whole-book minimax without --full
	 * writes in place and makes none): a reader leaves it (a rebuild may
	 * be under way), the next writer removes it (none can be). */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs("left by a killed rebuild", f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), dir), 0);
	char *left = ts_read_file(path, NULL);
	assert_non_null(left);
	free(left);
	snprintf(book, sizeof book, "%s/b", dir);
	BookDB *db;
	assert_int_equal(bookdb_open(&db, book, NULL, e), 0);
	bookdb_free(db);
	assert_null(ts_read_file(path, NULL));
	free(want);
	ts_rmtree(dir);
	free(dir);
}

/* A named database of the file, put there by a newer build, kept by compact
 * and by backup --compact (the rebuild copies every database the file lists,
 * not only those this build knows). */
/* The book's LMDB file opened directly, its database "future" (made when
 * write) in a transaction. */
static MDB_env *open_future(const char *book, bool write, MDB_txn **txn, MDB_dbi *dbi)
{
	MDB_env *env;
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
	assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
	assert_int_equal(mdb_env_open(env, book, write ? 0 : MDB_RDONLY, 0664), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, write ? 0 : MDB_RDONLY, txn), 0);
	assert_int_equal(mdb_dbi_open(*txn, "future", write ? MDB_CREATE : 0, dbi), 0);
	return env;
}

static void put_future(const char *book, const char *key, const char *val)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_env *env = open_future(book, true, &txn, &dbi);
	MDB_val k = {strlen(key), (void *)key}, v = {strlen(val), (void *)val};
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void assert_future(const char *book, const char *key, const char *val)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_env *env = open_future(book, false, &txn, &dbi);
	MDB_val k = {strlen(key), (void *)key}, v;
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	assert_int_equal(v.mv_size, strlen(val));
	assert_memory_equal(v.mv_data, val, v.mv_size);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_compact__keeps_a_database_this_build_does_not_know(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char book[600], copy[600];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(copy, sizeof copy, "%s/bk", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s --positions 3000 --seed 5 --quiet", ts_joseki(), book),
	    0);
	put_future(book, "seen", "by a newer build");
	assert_int_equal(ts_runf(NULL, NULL, "%s compact %s", ts_joseki(), book), 0);
	assert_future(book, "seen", "by a newer build");
	assert_int_equal(ts_runf(NULL, NULL, "%s backup %s %s --compact", ts_joseki(), book, copy),
	                 0);
	assert_future(copy, "seen", "by a newer build");
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A whole-book minimax rebuilds the book into full pages (bookdb_rebuild_rewrite):
 * as packed as compact packs, the same values as the run in place, every
 * database kept, incremental afterwards; with another writer open it writes
 * in place and the writer goes on; kill -9 at any moment of it leaves a
 * whole book with the same records.
 */
static void test_compact__a_whole_book_minimax_writes_full_pages(void **state)
{
	(void)state;
	uint64_t rng = ts_seed("test_compact__a_whole_book_minimax_writes_full_pages");
	char *dir = ts_mkdtemp(), *err = NULL;
	int rc = ts_runf(NULL, &err,
	                 "%s synth %s/b --positions 20000 --seed 3 --quiet && cp -r %s/b %s/p",
	                 ts_joseki(), dir, dir, dir);
	if (rc != 0) fail_msg("setup: %s", err);
	free(err);
	char book[600];
	snprintf(book, sizeof book, "%s/b", dir);
	put_future(book, "seen", "by a newer build");
	/* A scan's figures, kept (not current) through the rebuild as through any write. */
	json_t *sc = ts_run_json(0, "%s stats %s/b --scan --json", ts_joseki(), dir);
	json_t *m = ts_run_json(0, "%s minimax %s/b --full --json", ts_joseki(), dir);
	json_t *sa = ts_run_json(0, "%s stats %s/b --json", ts_joseki(), dir);
	assert_int_equal(ts_jint(sa, "leaves"), ts_jint(sc, "leaves"));
	assert_false(json_is_true(json_object_get(sa, "leaves_current")));
	json_decref(sc);
	json_decref(sa);
	json_t *ip = ts_run_json(0, "%s minimax %s/p --full --in-place --json", ts_joseki(), dir);
	assert_true(json_is_true(json_object_get(m, "rebuilt")));
	assert_false(json_is_true(json_object_get(ip, "rebuilt")));
	double took = json_real_value(json_object_get(m, "bytes_per_position")),
	       packed = json_real_value(json_object_get(m, "packed_bytes_per_position")),
	       took_ip = json_real_value(json_object_get(ip, "bytes_per_position"));
	print_message("minimax --full: %.1f bytes a position rebuilt, %.1f in place, %.1f packed\n",
	              took, took_ip, packed);
	assert_true(took < packed * 1.05 && took > packed * 0.95);
	assert_true(took_ip > 1.3 * packed);
	assert_int_equal(ts_jint(m, "rewritten"), 20000);
	json_t *s = ts_run_json(0, "%s stats %s/b --json", ts_joseki(), dir);
	/* (then the run's last transaction, which keeps its state, adds a page or two) */
	assert_in_range(ts_jint(s, "bytes"), ts_jint(m, "file_bytes_after"),
	                ts_jint(m, "file_bytes_after") + 65536);
	assert_int_equal(ts_jint(s, "positions"), 20000);
	assert_true(ts_jint(s, "pages_free") <= 16);
	json_decref(s);
	/* The same values as in place. */
	char *a = export_all(dir);
	assert_exports_equal(dir);
	char cmd[1400];
	assert_future(book, "seen", "by a newer build");
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	json_t *inc = ts_run_json(0, "%s minimax %s --json", ts_joseki(), book);
	assert_true(json_is_true(json_object_get(inc, "incremental")));
	json_decref(inc);
	json_decref(m);
	json_decref(ip);
	/* kill -9 at random moments of the rebuild: a whole book every time,
	 * with the same values (each run computes the same ones); no copy and
	 * no half-written graph file left once a run ends. */
	int killed = 0;
	/* The kills fall within the time a whole rebuild takes here (a fixed
	 * 150 ms let a quick machine finish all six first). */
	double t0 = clock_ms_f();
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --full --quiet", ts_joseki(), book), 0);
	unsigned span = ts_kill_span_us(clock_ms_f() - t0);
	for (int round = 0; round < 6; round++) {
		unsigned us = (unsigned)(ts_rand(&rng) % span);
		char *out = NULL;
		rc =
		    ts_runf(&out, NULL,
		            "%s minimax %s --full >/dev/null 2>&1 & p=$!; sleep 0.%06u; kill -9 $p "
		            "2>/dev/null; wait $p; echo rc=$?",
		            ts_joseki(), book, us);
		assert_int_equal(rc, 0);
		if (strstr(out, "rc=137")) killed++;
		free(out);
		err = NULL;
		if (ts_runf(NULL, &err, "%s check %s", ts_joseki(), book) != 0)
			fail_msg("round %d (killed after %u us): check: %s", round, us, err);
		free(err);
		char *got = export_all(dir);
		if (strcmp(got, a)) fail_msg("round %d: the values changed", round);
		free(got);
	}
	print_message("%d of 6 runs killed mid-way\n", killed);
	assert_true(killed > 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --full --quiet", ts_joseki(), book), 0);
	snprintf(cmd, sizeof cmd, "%s/data.mdb.compact", book);
	assert_null(ts_read_file(cmd, NULL));
	/* Nor the graph file a killed run was writing beside the records. */
	snprintf(cmd, sizeof cmd, "%s/minimax.graph.tmp", book);
	assert_null(ts_read_file(cmd, NULL));
	free(a);
	/* Another writer (think) has the book open: in place, and think goes on. */
	char fg[600], lock[700];
	snprintf(fg, sizeof fg, "%s/fg", dir);
	snprintf(lock, sizeof lock, "%s/writers.lock", fg);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), fg), 0);
	char *think[] = {(char *)ts_joseki(), "think", fg, "--depth", "2", "--time", "5",
	                 "--quiet",           NULL};
	pid_t p = ts_spawn(think, NULL, NULL, false);
	assert_true(ts_wait_flocked(lock, p, 60000));
	json_t *w = ts_run_json(0, "%s minimax %s --full --json", ts_joseki(), fg);
	assert_false(json_is_true(json_object_get(w, "rebuilt")));
	assert_true(json_is_null(json_object_get(w, "file_bytes_after")));
	json_decref(w);
	int st = 0;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), fg), 0);
	ts_rmtree(dir);
	free(dir);
}

/* bookdb_rebuild_rewrite's function for the test below: each record's first
 * move's eval one higher (drop: the last move left out instead); stop: a
 * code at that many calls. */
typedef struct {
	int calls, stop_at;
	bool drop;
} Bump;

static int bump(void *ctx, Key key, const uint8_t *raw, size_t len, uint8_t *out)
{
	(void)key;
	Bump *b = ctx;
	if (++b->calls == b->stop_at) return BOOKDB_ESTOPPED;
	BookRecord rec;
	if (bookdb_record_decode(&rec, raw, len) < 0 || rec.nmoves < 2) return 0;
	if (b->drop)
		rec.nmoves--;
	else
		rec.moves[0].eval++;
	return bookdb_record_encode(out, BOOKDB_RECORD_MAX, &rec);
}

/* The first move's eval of every record with two moves or more, summed, and
 * how many moves in all (db's view now). */
static void sum_book(BookDB *db, long long *evals, long long *moves)
{
	BookTxn *t;
	BookIter *it;
	Key k;
	const uint8_t *v;
	size_t len;
	BookRecord rec;
	*evals = *moves = 0;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	while (bookdb_iter_next(it, &k, &v, &len) == 1) {
		assert_int_equal(bookdb_record_decode(&rec, v, len), 0);
		if (rec.nmoves >= 2) *evals += rec.moves[0].eval;
		*moves += rec.nmoves;
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(t);
}

/*
 * bookdb_rebuild_rewrite: every record through the function, the book
 * then read and written through the same handle; a reader opened before
 * reads the old file until bookdb_reopen; refused (BOOKDB_EBUSY, nothing
 * done) while another writer has the book; the function's code stops it
 * with the book as it was; the kept counts stay when the function keeps
 * them, and are counted again by the next write when it does not. 10,000
 * records: the function sees them in batches of 4,096 on a thread of its own
 * (compact.c), and is stopped in the third.
 */
static void test_compact__rebuild_rewrite_through_a_function(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 10000 --seed 9 --quiet",
	                         ts_joseki(), book),
	                 0);
	BookDB *db, *rd, *other;
	BookDBOptions ro = {.read_only = true};
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	assert_int_equal(bookdb_open(&rd, book, &ro, err), 0);
	long long e0, m0, e, m;
	sum_book(db, &e0, &m0);
	/* Another writer: refused, nothing done, the lock shared again. */
	assert_int_equal(bookdb_open(&other, book, NULL, err), 0);
	Bump b = {0};
	uint64_t n, before, after;
	assert_int_equal(bookdb_rebuild_rewrite(db, bump, &b, &n, &before, &after, err),
	                 BOOKDB_EBUSY);
	assert_string_equal(err, "");
	assert_int_equal(b.calls, 0);
	bookdb_free(other);
	char *out = NULL;
	assert_int_equal(ts_runf(NULL, &out, "%s compact %s", ts_joseki(), book), 1);
	assert_non_null(strstr(out, "a writer has the book open")); /* db's lock is held */
	free(out);
	/* Stopped by the function: the book as it was, no copy left. */
	b = (Bump){.stop_at = 9000};
	assert_int_equal(bookdb_rebuild_rewrite(db, bump, &b, &n, &before, &after, err),
	                 BOOKDB_ESTOPPED);
	assert_int_equal(b.calls, 9000); /* not called again once it stopped */
	assert_true(bookdb_file_current(db));
	sum_book(db, &e, &m);
	assert_true(e == e0 && m == m0);
	char tmp[700];
	snprintf(tmp, sizeof tmp, "%s/data.mdb.compact", book);
	assert_null(ts_read_file(tmp, NULL));
	/* Done: every record rewritten, read and written through db. */
	b = (Bump){0};
	assert_int_equal(bookdb_rebuild_rewrite(db, bump, &b, &n, &before, &after, err), 0);
	assert_int_equal(b.calls, 10000);
	assert_true(n > 0 && n <= 10000);
	assert_true(before > 0 && after > 0);
	assert_true(bookdb_file_current(db));
	sum_book(db, &e, &m);
	assert_int_equal(e, e0 + (long long)n);
	assert_int_equal(m, m0);
	BookTxn *t;
	BookCounts c;
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_counts(&c, t), 0);
	assert_true(c.kept);
	assert_int_equal(c.moves, (uint64_t)m0);
	bookdb_txn_abort(t);
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_kv_put(t, BOOKDB_META, "after", 5, "x", 1), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	/* The reader opened before reads the old file, until it opens again. */
	assert_false(bookdb_file_current(rd));
	sum_book(rd, &e, &m);
	assert_int_equal(e, e0);
	assert_int_equal(bookdb_reopen(rd, err), 0);
	assert_true(bookdb_file_current(rd));
	sum_book(rd, &e, &m);
	assert_int_equal(e, e0 + (long long)n);
	const void *v;
	size_t vl;
	assert_int_equal(bookdb_txn_begin(&t, rd, false), 0);
	assert_int_equal(bookdb_kv_get(&v, &vl, t, BOOKDB_META, "after", 5), 0);
	bookdb_txn_abort(t);
	/* Moves left out: the counts are not kept, and the next write counts them. */
	b = (Bump){.drop = true};
	assert_int_equal(bookdb_rebuild_rewrite(db, bump, &b, &n, &before, &after, err), 0);
	sum_book(db, &e, &m);
	assert_int_equal(m, m0 - (long long)n);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_counts(&c, t), 0);
	assert_false(c.kept);
	bookdb_txn_abort(t);
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_kv_put(t, BOOKDB_META, "after", 5, "y", 1), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	assert_int_equal(bookdb_counts(&c, t), 0);
	assert_true(c.kept);
	assert_int_equal(c.moves, (uint64_t)m);
	bookdb_txn_abort(t);
	/* A read-only handle cannot. */
	assert_int_equal(bookdb_rebuild_rewrite(rd, bump, &b, &n, &before, &after, err),
	                 BOOKDB_EREADONLY);
	bookdb_free(rd);
	bookdb_free(db);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

static BookStamp stamp_of(const char *book)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookStamp st;
	if (bookdb_open(&db, book, NULL, err) != 0) fail_msg("open: %s", err);
	assert_int_equal(bookdb_stamp(&st, db), 0);
	bookdb_free(db);
	return st;
}

/* bookdb_stamp_carry on the book in book for old: its return, *out the stamp. */
static int carry_in(const char *book, BookStamp old, BookStamp *out)
{
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, book, NULL, err) != 0) fail_msg("open: %s", err);
	int rc = bookdb_stamp_carry(&old, db);
	bookdb_free(db);
	*out = old;
	return rc;
}

/* Readers of the files replaced, held open to the end of the test: a file
 * system gives a freed inode to the next file made, and a stamp names a
 * file by its inode. */
static BookDB *g_held[8];
static int g_nheld;

static void hold_file(const char *book)
{
	BookDBOptions ro = {.read_only = true};
	char err[BOOKDB_ERRLEN];
	assert_true(g_nheld < 8);
	if (bookdb_open(&g_held[g_nheld++], book, &ro, err) != 0) fail_msg("open: %s", err);
}

static void compact_book(const char *book)
{
	uint64_t before, after;
	char err[BOOKDB_ERRLEN];
	hold_file(book);
	if (bookdb_compact(book, &before, &after, NULL, NULL, err) != 0)
		fail_msg("compact: %s", err);
}

/*
 * A book written anew keeps the stamps of the files it came from, so that
 * data stamped with the old file (the selector's snapshot) carries over:
 * exactly (the new file's stamp right after the rebuild) when nothing was
 * written between, else as behind from its change-log sequence number, whose
 * entries the new file still holds. Four files back; not a backup's copy,
 * another book, the file itself, or a stamp newer than the one kept. (The
 * old files are held open by readers, as a coordinator's process may hold
 * one: else the file system may give a new file the inode of an old one.)
 */
static void test_compact__a_stamp_carries_to_the_file_written_anew(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], other[600], bk[600], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(other, sizeof other, "%s/o", dir);
	snprintf(bk, sizeof bk, "%s/bk", dir);
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s synth %s --positions 2000 --seed 5 --quiet && cp -r %s %s",
	                         ts_joseki(), book, book, other),
	                 0);
	BookDB *db;
	BookTxn *t;
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	assert_int_equal(bookdb_changes_enable(t), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	BookStamp s0 = stamp_of(book), got;
	assert_int_equal(s0.chg_state, BOOKDB_CHANGES_ON);
	/* Not written anew yet: nothing to carry; the file itself is left. */
	assert_int_equal(carry_in(book, s0, &got), 0);
	assert_memory_equal(&got, &s0, sizeof got);
	compact_book(book);
	BookStamp s1 = stamp_of(book);
	assert_false(s1.dev == s0.dev && s1.ino == s0.ino);
	assert_int_equal(s1.chg_seq, s0.chg_seq);
	assert_int_equal(carry_in(book, s0, &got), 1);
	assert_memory_equal(&got, &s1, sizeof got); /* exactly: nothing written between */
	assert_int_equal(carry_in(book, s1, &got), 0);
	/* Another book (a copy of the same) carries nothing, and is not carried. */
	assert_int_equal(carry_in(other, s0, &got), 0);
	assert_int_equal(carry_in(book, stamp_of(other), &got), 0);
	/* A position written, then written anew: s1 carries exactly, s0 as
	 * behind from its sequence number, whose entries are still there. */
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, true), 0);
	BookIter *it;
	const uint8_t *val;
	size_t len;
	Key k;
	assert_int_equal(bookdb_iter_open(&it, t), 0);
	assert_int_equal(bookdb_iter_next(it, &k, &val, &len), 1);
	uint8_t copy[BOOKDB_RECORD_MAX];
	memcpy(copy, val, len);
	bookdb_iter_free(it);
	assert_int_equal(bookdb_put_raw(t, k, copy, len), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(db);
	BookStamp s2 = stamp_of(book);
	assert_int_equal(s2.chg_seq, s1.chg_seq + 1);
	compact_book(book);
	BookStamp s3 = stamp_of(book);
	assert_int_equal(carry_in(book, s2, &got), 1);
	assert_memory_equal(&got, &s3, sizeof got);
	assert_int_equal(carry_in(book, s1, &got), 1);
	assert_true(got.dev == s3.dev && got.ino == s3.ino);
	assert_int_equal(got.txnid, 0); /* behind: written since */
	assert_int_equal(got.chg_seq, s1.chg_seq);
	assert_int_equal(carry_in(book, s0, &got), 1);
	assert_int_equal(got.txnid, 0);
	assert_int_equal(bookdb_open(&db, book, NULL, err), 0);
	assert_int_equal(bookdb_txn_begin(&t, db, false), 0);
	BookChangesIter *ci;
	uint64_t seq;
	Key ck;
	assert_int_equal(bookdb_changes_iter_open(&ci, t, s1.chg_seq + 1), 0);
	assert_int_equal(bookdb_changes_iter_next(ci, &seq, &ck), 1);
	assert_int_equal(seq, s1.chg_seq + 1);
	assert_true(key_equal(ck, k));
	bookdb_changes_iter_free(ci);
	bookdb_txn_abort(t);
	bookdb_free(db);
	/* Newer than the stamp kept: a file the book was never written from. */
	BookStamp late = s2;
	late.txnid++;
	assert_int_equal(carry_in(book, late, &got), 0);
	/* A whole-book minimax that rebuilds the book carries too. */
	hold_file(book);
	assert_int_equal(ts_runf(NULL, NULL, "%s minimax %s --full --quiet", ts_joseki(), book), 0);
	BookStamp s4 = stamp_of(book);
	assert_false(s4.dev == s3.dev && s4.ino == s3.ino);
	assert_int_equal(carry_in(book, s3, &got), 1);
	assert_true(got.dev == s4.dev && got.ino == s4.ino);
	/* A backup's copy keeps none (it is not the book's next file). */
	assert_int_equal(ts_runf(NULL, NULL, "%s backup %s %s --compact", ts_joseki(), book, bk),
	                 0);
	assert_int_equal(carry_in(bk, s3, &got), 0);
	assert_int_equal(carry_in(bk, s0, &got), 0);
	/* The last BOOKDB_ORIGINS files: two more, and s0 is forgotten. */
	compact_book(book);
	assert_int_equal(carry_in(book, s0, &got), 1);
	compact_book(book);
	assert_int_equal(carry_in(book, s0, &got), 0);
	assert_int_equal(carry_in(book, s2, &got), 1);
	while (g_nheld > 0) bookdb_free(g_held[--g_nheld]);
	ts_rmtree(dir);
	free(dir);
}

/*
 * A switch killed between its rename and the removal of LMDB's lock file
 * (simulated: open.lock names the old data file, as the switch writes it
 * before its rename; the new data file renamed in; the old lock file left,
 * held by a reader of the old file): the next open removes the lock file,
 * so a writer's commit on the new file stands once everyone has let go.
 */
static void test_compact__an_open_mends_a_switch_killed_half_way(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), book[600], copy[600], path[700], from[700], err[BOOKDB_ERRLEN];
	snprintf(book, sizeof book, "%s/b", dir);
	snprintf(copy, sizeof copy, "%s/c", dir);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s synth %s --positions 3000 --seed 4 --quiet", ts_joseki(), book),
	    0);
	/* As the switch writes it: the data file the lock file belongs to. */
	struct stat st;
	snprintf(path, sizeof path, "%s/data.mdb", book);
	assert_int_equal(stat(path, &st), 0);
	char owner[64];
	int n = snprintf(owner, sizeof owner, "%llu %llu\n", (unsigned long long)st.st_dev,
	                 (unsigned long long)st.st_ino);
	snprintf(from, sizeof from, "%s/open.lock", book);
	assert_int_equal(ts_write_file(from, owner, (size_t)n), 0);
	BookDB *rd, *w;
	BookDBOptions ro = {.read_only = true};
	/* The reader of the old file: another process (LMDB's lock file is
	 * shared between processes; two handles of one process are not). */
	int go[2], ready[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c = 0;
		BookTxn *ct;
		if (bookdb_open(&rd, book, &ro, err) < 0 || bookdb_txn_begin(&ct, rd, false) < 0)
			_exit(1);
		bookdb_txn_abort(ct);
		(void)!write(ready[1], "r", 1);
		(void)!read(go[0], &c, 1);
		bookdb_free(rd);
		_exit(0);
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s backup %s %s --compact >/dev/null", ts_joseki(), book, copy),
	    0);
	snprintf(from, sizeof from, "%s/data.mdb", copy);
	assert_int_equal(rename(from, path), 0);
	assert_int_equal(bookdb_open(&w, book, NULL, err), 0);
	BookTxn *t;
	assert_int_equal(bookdb_txn_begin(&t, w, true), 0);
	assert_int_equal(bookdb_kv_put(t, BOOKDB_META, "mended", 6, "yes", 3), 0);
	assert_int_equal(bookdb_txn_commit(t), 0);
	bookdb_free(w);
	assert_int_equal(write(go[1], "g", 1), 1);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(go[0]), close(go[1]), close(ready[0]), close(ready[1]);
	assert_int_equal(bookdb_open(&rd, book, &ro, err), 0);
	const void *v;
	size_t vl;
	assert_int_equal(bookdb_txn_begin(&t, rd, false), 0);
	assert_int_equal(bookdb_kv_get(&v, &vl, t, BOOKDB_META, "mended", 6), 0);
	assert_int_equal(vl, 3);
	bookdb_txn_abort(t);
	bookdb_free(rd);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
	ts_rmtree(dir);
	free(dir);
}

/* check, compact and backup show their progress on a terminal (stderr a
 * pseudo-terminal), the line taken off at the end, and none with --quiet or
 * when stderr is a file. */
static void test_compact__progress_on_a_terminal_and_none_with_quiet(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char book[512], copy[512];
	snprintf(book, sizeof book, "%s/b", dir);
	assert_int_equal(ts_runf(NULL, NULL, "%s synth %s --positions 40000 --seed 6 --quiet",
	                         ts_joseki(), book),
	                 0);
	static const struct {
		const char *cmd, *said, *summary; /* said: a progress line begins so */
	} RUNS[] = {
	    {"check %s", "check: 16384 of 40000 records (", "check: 40000 records, 0 bad"},
	    {"compact %s", "compact: copied 40000 of 40000 records (100%)", "bytes before"},
	    {"backup %s %s", "backup: copied ", "40000 records"},
	    {"backup %s %s --compact", "backup: copied 40000 of 40000 records (100%)",
	     "compacted, checked"},
	    {"backup %s %s", "backup: checking the copy: 16384 of 40000 records (40%)",
	     "40000 records"},
	    {"stats %s --scan", "stats: pass 1 of 2: 0 of 40000 records (0%)", "leaves"},
	};
	for (size_t i = 0; i < sizeof RUNS / sizeof *RUNS; i++) {
		for (int quiet = 0; quiet < 3; quiet++) { /* a terminal, --quiet, a file */
			char cmd[1536], args[1200];
			snprintf(copy, sizeof copy, "%s/c%zu%d", dir, i, quiet);
			snprintf(args, sizeof args, RUNS[i].cmd, book, copy);
			snprintf(cmd, sizeof cmd, "%s %s%s", ts_joseki(), args,
			         quiet == 1 ? " --quiet" : "");
			char *out = NULL, *tty = NULL;
			int rc = quiet == 2 ? ts_run(cmd, &out, &tty) : ts_run_tty(cmd, &out, &tty);
			if (rc != 0) fail_msg("%s: exit %d: %s", cmd, rc, tty);
			if (!strstr(out, RUNS[i].summary)) fail_msg("%s: no summary: %s", cmd, out);
			const char *p = strstr(tty, RUNS[i].said);
			if (quiet) {
				if (p || strstr(tty, "\r"))
					fail_msg("%s: progress shown: %s", cmd, tty);
			} else {
				if (!p)
					fail_msg("%s: no progress line '%s': %s", cmd, RUNS[i].said,
					         tty);
				/* Taken off the terminal before the summary: the last
				 * thing written to it erases the line. */
				size_t n = strlen(tty);
				if (n < 4 || strcmp(tty + n - 4, "\r\033[K"))
					fail_msg(
					    "%s: the progress line is left on the terminal: %s",
					    cmd, tty);
			}
			free(out);
			free(tty);
		}
	}
	/* Each copy is a whole book. */
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/c20 --quiet && %s check %s/c31 --quiet",
	                         ts_joseki(), dir, ts_joseki(), dir),
	                 0);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compact__frees_the_pages_and_keeps_every_record),
	    cmocka_unit_test(test_compact__keeps_a_database_this_build_does_not_know),
	    cmocka_unit_test(test_compact__refused_while_a_writer_has_the_book),
	    cmocka_unit_test(test_compact__survives_kill_9_at_any_moment),
	    cmocka_unit_test(test_compact__a_whole_book_minimax_writes_full_pages),
	    cmocka_unit_test(test_compact__a_first_minimax_without_full_writes_full_pages),
	    cmocka_unit_test(test_compact__rebuild_rewrite_through_a_function),
	    cmocka_unit_test(test_compact__a_stamp_carries_to_the_file_written_anew),
	    cmocka_unit_test(test_compact__an_open_mends_a_switch_killed_half_way),
	    cmocka_unit_test(test_compact__progress_on_a_terminal_and_none_with_quiet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
