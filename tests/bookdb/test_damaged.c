/*
 * tests/bookdb/test_damaged.c — damaged books through the real commands: a
 * data file cut short (as a copy that stopped early), flipped bytes, another
 * schema version, a missing lock file, a read-only file system. Every command refuses with a
 * message (no signal, no hang); check names the bad records; check --repair copies the sound ones
 * into a new book that passes check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "bookdb/bookdb.h"
#include "tests/support/support.h"

/* A small real book: the floodgate fixtures, thought about a little. */
static char *make_book(void)
{
	char *dir = ts_mkdtemp();
	char *err = NULL;
	if (ts_runf(NULL, &err, "%s ingest %s/b tests/data/floodgate --quiet", ts_joseki(), dir) !=
	    0)
		fail_msg("ingest: %s", err);
	free(err);
	if (ts_runf(NULL, &err, "%s think %s/b --depth 1 --positions 200 --quiet", ts_joseki(),
	            dir) != 0)
		fail_msg("think: %s", err);
	free(err);
	return dir;
}

/* Every command over the book: each must end by itself (timeout 60 s), with
 * the status expect_ok ? 0 : 1, never by a signal, and a message on failure. */
static void every_command(const char *dir, bool expect_ok, const char *must_say)
{
	static const char *const CMDS[] = {
	    "check %s/b",
	    "stats %s/b",
	    "query %s/b startpos",
	    "minimax %s/b --quiet",
	    "export %s/b %s/out.db --quiet",
	    "ingest %s/b tests/data/floodgate --quiet",
	    "think %s/b --depth 1 --positions 1 --quiet",
	    "select %s/b",
	};
	for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
		char cmd[1024], line[2048];
		snprintf(cmd, sizeof cmd, CMDS[i], dir, dir);
		snprintf(line, sizeof line, "timeout 60 %s %s", ts_joseki(), cmd);
		char *out = NULL, *err = NULL;
		int rc = ts_run(line, &out, &err);
		if (rc >= 124)
			fail_msg("%s: ended with status %d (signal or timeout)\n%s", cmd, rc, err);
		if (expect_ok && rc != 0) fail_msg("%s: status %d\n%s", cmd, rc, err);
		if (!expect_ok) {
			if (rc != 1) fail_msg("%s: status %d, 1 expected\n%s", cmd, rc, err);
			if (must_say && !strstr(err, must_say))
				fail_msg("%s: the message does not say '%s':\n%s", cmd, must_say,
				         err);
		}
		free(out);
		free(err);
	}
}

/* A data file cut short at any length: every command refuses, naming the
 * file (it was a SIGBUS in check and silence in stats). */
static void test_damaged__a_truncated_data_file_is_refused_by_every_command(void **state)
{
	(void)state;
	static const long SIZES[] = {100000, 12288, 8192, 5000, 4096, 100, 0};
	char *dir = make_book();
	char path[512], copy[600];
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	snprintf(copy, sizeof copy, "%s/data.mdb.orig", dir);
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", path, copy), 0);
	for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
		assert_int_equal(ts_runf(NULL, NULL, "cp %s %s && truncate -s %ld %s", copy, path,
		                         SIZES[i], path),
		                 0);
		char *err = NULL;
		int rc = ts_runf(NULL, &err, "%s check %s/b", ts_joseki(), dir);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(err, "data.mdb") ? err : strstr(err, "/b"));
		free(err);
		/* Readers refuse. (Writers may take an empty file for a new book:
		 * LMDB's own rule; a non-empty one they refuse too.) */
		err = NULL;
		rc = ts_runf(NULL, &err, "%s stats %s/b", ts_joseki(), dir);
		assert_int_equal(rc, 1);
		free(err);
		if (SIZES[i] >= 8192) every_command(dir, false, "shorter than the book");
	}
	/* The whole file back: the book is as it was. */
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", copy, path), 0);
	every_command(dir, true, NULL);
	ts_rmtree(dir);
	free(dir);
}

/*
 * Flipped bits past the meta pages, several seeds: no command is killed by a
 * signal or hangs; check names bad records (key and reason) whenever a
 * record was hit; --repair copies the sound records and the game ids into a
 * new book that passes check and takes the same games again as duplicates.
 */
static void test_damaged__flipped_bytes_are_found_and_repaired(void **state)
{
	(void)state;
	char *dir = make_book();
	char path[512], copy[600];
	snprintf(path, sizeof path, "%s/b/data.mdb", dir);
	snprintf(copy, sizeof copy, "%s/data.mdb.orig", dir);
	assert_int_equal(ts_runf(NULL, NULL, "cp %s %s", path, copy), 0);
	char *data = NULL;
	size_t len;
	data = ts_read_file(copy, &len);
	assert_non_null(data);
	assert_true(len > 65536);
	int found = 0;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		uint64_t r = seed * 0x9e3779b97f4a7c15ULL;
		char *bad = malloc(len);
		memcpy(bad, data, len);
		for (int k = 0; k < 24; k++) {
			size_t at = 8192 + (size_t)(ts_rand(&r) % (len - 8192));
			bad[at] ^= (char)(1u << (ts_rand(&r) % 8));
		}
		assert_int_equal(ts_write_file(path, bad, len), 0);
		free(bad);
		/* No signal, no hang, whatever the commands make of it. */
		static const char *const READERS[] = {"check %s/b", "stats %s/b",
		                                      "query %s/b startpos",
		                                      "export %s/b %s/out.db --quiet"};
		for (size_t i = 0; i < sizeof READERS / sizeof READERS[0]; i++) {
			char cmd[1024], line[2048];
			snprintf(cmd, sizeof cmd, READERS[i], dir, dir);
			snprintf(line, sizeof line, "timeout 60 %s %s", ts_joseki(), cmd);
			int rc = ts_run(line, NULL, NULL);
			if (rc >= 124)
				fail_msg("seed %llu: %s ended with %d", (unsigned long long)seed,
				         cmd, rc);
		}
		char *out = NULL, *err = NULL;
		ts_runf(NULL, NULL, "rm -rf %s/rep", dir);
		int rc =
		    ts_runf(&out, &err, "%s check %s/b --repair %s/rep", ts_joseki(), dir, dir);
		if (rc == 1 && strstr(out, ": record ")) {
			found++;
			/* A line per problem: the record's key (32 hex digits) and why. */
			const char *p = strstr(out, ": record ");
			assert_true(strlen(p) > 9 + 32);
		}
		assert_true(rc == 0 || rc == 1);
		assert_non_null(strstr(out, "repair: "));
		free(out);
		free(err);
		out = err = NULL;
		rc = ts_runf(&out, &err, "%s check %s/rep", ts_joseki(), dir);
		if (rc != 0)
			fail_msg("seed %llu: the repaired book fails check:\n%s%s",
			         (unsigned long long)seed, out, err);
		free(out);
		free(err);
		json_t *j = ts_run_json(0, "%s ingest %s/rep tests/data/floodgate --json --quiet",
		                        ts_joseki(), dir);
		assert_int_equal(ts_jint(j, "games_ingested"), 0);
		assert_true(ts_jint(j, "duplicates") > 0);
		json_decref(j);
	}
	assert_true(found > 0);
	free(data);
	/* --repair into an existing directory is refused (it writes a new book). */
	char *err = NULL;
	assert_int_equal(
	    ts_runf(NULL, &err, "%s check %s/b --repair %s/rep", ts_joseki(), dir, dir), 1);
	assert_non_null(strstr(err, "exists already"));
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* A book of another schema version is refused by every command, which says
 * so; a missing lock file is made again (LMDB's lock file is not data). */
static void test_damaged__another_schema_version_and_a_missing_lock_file(void **state)
{
	(void)state;
	char *dir = make_book();
	char path[512];
	snprintf(path, sizeof path, "%s/b/lock.mdb", dir);
	assert_int_equal(unlink(path), 0);
	every_command(dir, true, NULL);

	snprintf(path, sizeof path, "%s/b", dir);
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	assert_int_equal(bookdb_open(&db, path, NULL, err), 0);
	BookTxn *txn;
	assert_int_equal(bookdb_txn_begin(&txn, db, true), 0);
	static const uint8_t V99[4] = {99, 0, 0, 0};
	assert_int_equal(bookdb_kv_put(txn, BOOKDB_META, "schema", 6, V99, 4), 0);
	assert_int_equal(bookdb_txn_commit(txn), 0);
	bookdb_free(db);
	every_command(dir, false, "schema version 99");
	ts_rmtree(dir);
	free(dir);
}

/* Runs `joseki` with fmt (two %s: dir) and checks its status; returns its
 * stderr. */
static char *run_expecting(const char *fmt, const char *dir, int status)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, fmt, dir, dir);
	char *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err, "timeout 60 %s %s", ts_joseki(), cmd);
	if (rc != status) fail_msg("%s: status %d, %d expected\n%s", cmd, rc, status, err);
	free(out);
	return err;
}

/* A book on a read-only file system (a read-only bind mount of the book's
 * directory, in a mount namespace of the test's own: ts_private_mounts, as
 * root or as a plain user): the reading commands work as on any book; every
 * writing command refuses, naming the book and saying it cannot be written.
 * Where no mount is possible the test says why and is reported as skipped (CI
 * fails on that skip). */
static void test_damaged__a_read_only_book(void **state)
{
	(void)state;
	char *dir = make_book();
	char ro[512], *err = NULL;
	snprintf(ro, sizeof ro, "%s/ro", dir);
	assert_int_equal(mkdir(ro, 0755), 0);
	char why[300];
	if (ts_private_mounts(why, sizeof why) != 0) {
		print_message("skipped: cannot mount: %s\n", why);
		ts_rmtree(dir);
		free(dir);
		skip();
	}
	if (ts_runf(NULL, &err, "mount --bind %s/b %s && mount -o remount,ro,bind %s", dir, ro,
	            ro) != 0) {
		print_message("skipped: cannot make a read-only bind mount here (%s)\n", err);
		free(err);
		ts_runf(NULL, NULL, "umount %s 2>/dev/null", ro);
		ts_rmtree(dir);
		free(dir);
		skip();
	}
	free(err);
	static const char *const READERS[] = {
	    "check %s/ro",
	    "stats %s/ro --json",
	    "query %s/ro startpos --json",
	    "export %s/ro %s/out.db --quiet",
	    "select %s/ro",
	};
	static const char *const WRITERS[] = {
	    "ingest %s/ro tests/data/floodgate --quiet",
	    "think %s/ro --depth 1 --positions 1 --quiet",
	    "minimax %s/ro --quiet",
	    "compact %s/ro",
	    "import %s/ro %s/out.db",
	};
	for (size_t i = 0; i < sizeof READERS / sizeof READERS[0]; i++)
		free(run_expecting(READERS[i], dir, 0));
	for (size_t i = 0; i < sizeof WRITERS / sizeof WRITERS[0]; i++) {
		err = run_expecting(WRITERS[i], dir, 1);
		if (!strstr(err, ro) || !strstr(err, "cannot be written") ||
		    !strstr(err, "Read-only file system"))
			fail_msg("%s: the message does not name the book and say why:\n%s",
			         WRITERS[i], err);
		free(err);
	}
	assert_int_equal(ts_runf(NULL, NULL, "umount %s", ro), 0);
	/* Nothing was changed: the book still passes check where it is. */
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), dir), 0);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_damaged__a_truncated_data_file_is_refused_by_every_command),
	    cmocka_unit_test(test_damaged__flipped_bytes_are_found_and_repaired),
	    cmocka_unit_test(test_damaged__another_schema_version_and_a_missing_lock_file),
	    cmocka_unit_test(test_damaged__a_read_only_book),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
