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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>
#include <lmdb.h>

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

static void test_compact__frees_the_pages_and_keeps_every_record(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char *err = NULL;
	/* Two whole-book minimax runs rewrite every record twice: free pages. */
	int rc = ts_runf(NULL, &err,
	                 "%s synth %s/b --positions 20000 --seed 3 --quiet && %s minimax %s/b "
	                 "--full --quiet",
	                 ts_joseki(), dir, ts_joseki(), dir);
	if (rc != 0) fail_msg("setup: %s", err);
	free(err);
	/* The second run says what the book takes and what it would in full
	 * pages: far apart (its text says to compact). */
	json_t *m0 = ts_run_json(0, "%s minimax %s/b --full --json", ts_joseki(), dir);
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
	int rc = ts_runf(
	    NULL, &err,
	    "%s synth %s/b --positions 80000 --seed 5 --quiet && %s minimax %s/b --full --quiet && "
	    "%s minimax %s/b --full --quiet",
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
	char path[512];
	snprintf(path, sizeof path, "%s/b/data.mdb.compact", dir);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compact__frees_the_pages_and_keeps_every_record),
	    cmocka_unit_test(test_compact__keeps_a_database_this_build_does_not_know),
	    cmocka_unit_test(test_compact__refused_while_a_writer_has_the_book),
	    cmocka_unit_test(test_compact__survives_kill_9_at_any_moment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
