/*
 * tests/bookdb/test_diskfull.c — a full disk under every writing command
 * (ingest, think, minimax, export, peta-shock, compact) on a small tmpfs
 * mounted for the test: a clear error naming the book (or file) and "no
 * space left", exit 1, the book still opens and passes check, and once space
 * is freed the same command succeeds with nothing lost or doubled.
 *
 * The tmpfs is mounted in a mount namespace of the test's own
 * (ts_private_mounts: as root, or as a plain user through a user namespace),
 * so the machine's mounts are never touched. Where neither is possible the
 * test says why and is reported as skipped (CI fails on that skip).
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

#include "tests/support/support.h"

typedef struct {
	char *dir; /* temp dir: games/, ref/ (the reference book), mnt/ (the tmpfs) */
	char mnt[512];
} Fixture;

static int setup(void **state)
{
	Fixture *f = calloc(1, sizeof *f);
	f->dir = ts_mkdtemp();
	snprintf(f->mnt, sizeof f->mnt, "%s/mnt", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fixture *f = *state;
	ts_runf(NULL, NULL, "umount %s 2>/dev/null", f->mnt);
	ts_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* A tmpfs of size at f->mnt, in a mount namespace of the test's own; the
 * test is skipped, saying why, where none can be mounted. */
static void mount_or_skip(const Fixture *f, const char *size)
{
	char *err = NULL;
	assert_int_equal(ts_runf(NULL, NULL, "mkdir -p %s", f->mnt), 0);
	char why[300];
	if (ts_private_mounts(why, sizeof why) != 0) {
		print_message("skipped: cannot mount a tmpfs to fill: %s\n", why);
		skip();
	}
	if (ts_runf(NULL, &err, "mount -t tmpfs -o size=%s tmpfs %s", size, f->mnt) != 0) {
		print_message("skipped: cannot mount a tmpfs here (%s)\n",
		              err && *err ? err : "no permission");
		free(err);
		skip();
	}
	free(err);
}

/* Fills the tmpfs to the last byte. */
static void fill(const Fixture *f)
{
	ts_runf(NULL, NULL, "dd if=/dev/zero of=%s/filler bs=64k 2>/dev/null; sync", f->mnt);
	char *out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "df -k --output=avail %s | tail -n 1", f->mnt), 0);
	assert_true(atol(out) < 64);
	free(out);
}

static void unfill(const Fixture *f)
{
	assert_int_equal(ts_runf(NULL, NULL, "rm -f %s/filler", f->mnt), 0);
}

/* cmd (a printf format over the book's path, twice at most) fails on the
 * full disk with "no space left" and what (the book or a file) in its message,
 * the book passes check, and after unfill the same command succeeds. */
static void full_then_free(const Fixture *f, const char *cmd, const char *what)
{
	char line[2048], book[600];
	snprintf(book, sizeof book, "%s/b", f->mnt);
	char args[1024];
	snprintf(args, sizeof args, cmd, book, book);
	snprintf(line, sizeof line, "timeout 120 %s %s", ts_joseki(), args);
	fill(f);
	char *out = NULL, *err = NULL;
	int rc = ts_run(line, &out, &err);
	if (rc != 1) fail_msg("%s on a full disk: status %d\n%s", args, rc, err);
	if (!strstr(err, "no space left") && !strstr(err, "No space left"))
		fail_msg("%s: the message does not say 'no space left':\n%s", args, err);
	if (!strstr(err, what)) fail_msg("%s: the message does not name %s:\n%s", args, what, err);
	free(out);
	free(err);
	err = NULL;
	rc = ts_runf(NULL, &err, "%s check %s", ts_joseki(), book);
	if (rc != 0) fail_msg("after %s on a full disk, check: %s", args, err);
	free(err);
	unfill(f);
	err = NULL;
	rc = ts_run(line, NULL, &err);
	if (rc != 0) fail_msg("%s with space again: status %d\n%s", args, rc, err);
	free(err);
}

static void test_diskfull__every_writer_stops_cleanly_and_resumes(void **state)
{
	Fixture *f = *state;
	mount_or_skip(f, "96m");
	/* The fixtures, then 1,000 generated games; the reference book takes both. */
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s gen-games %s/g2 --games 1000 --seed 2 >/dev/null && "
	                         "%s ingest %s/ref tests/data/floodgate %s/g2 --quiet",
	                         ts_joseki(), f->dir, ts_joseki(), f->dir, f->dir),
	                 0);
	char book[600];
	snprintf(book, sizeof book, "%s/b", f->mnt);
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s ingest %s tests/data/floodgate --quiet", ts_joseki(), book), 0);

	char cmd[1024];
	snprintf(cmd, sizeof cmd, "ingest %%s %s/g2 --quiet", f->dir);
	full_then_free(f, cmd, book);
	/* Nothing lost, nothing doubled: the same book as the reference. */
	json_t *a = ts_run_json(0, "%s stats %s --json", ts_joseki(), book);
	json_t *r = ts_run_json(0, "%s stats %s/ref --json", ts_joseki(), f->dir);
	static const char *const FIELDS[] = {"positions", "moves", "games"};
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(ts_jint(a, FIELDS[i]), ts_jint(r, FIELDS[i]));
	json_decref(a);
	json_decref(r);

	full_then_free(f, "think %s --depth 1 --positions 3000 --quiet", book);
	full_then_free(f, "minimax %s --full --quiet", book);
	full_then_free(f, "export %s %s.db --quiet", "b.db");
	/* peta-shock on that export: its output; then, on a book of 100,000
	 * positions within 1M, the temporary files of its join on disk. */
	full_then_free(f, "peta-shock %s.db %s.ps --quiet", "b.ps");
	assert_int_equal(
	    ts_runf(NULL, NULL, "%s peta-shock --gen-bench 100000 %s.gen", ts_joseki(), book), 0);
	full_then_free(f, "peta-shock %s.gen %s.ps --memory 1M --quiet",
	               "cannot write a temporary file");
	/* The whole-book minimax and the export freed pages: compact has work. */
	full_then_free(f, "compact %s", "data.mdb.compact");
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s", ts_joseki(), book), 0);
}

/* minimax --full writes the book anew when its disk has room for a copy
 * beside it; without that room it rewrites the records in place and says so,
 * where it once failed at its very end: the same values as a run with room,
 * and the book passes check. */
static void test_diskfull__minimax_without_room_for_a_copy_writes_in_place(void **state)
{
	Fixture *f = *state;
	char *err = NULL, *out = NULL;
	/* A valued book of 100,000 positions (11 MB) and its graph file (5.5 MB)
	 * fit, with room for the pages a batch rewrites, but not a second book. */
	mount_or_skip(f, "24m");
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s synth %s/ref --positions 100000 --quiet >/dev/null && "
	                         "%s minimax %s/ref --full --quiet && rm %s/ref/minimax.graph && "
	                         "cp -r %s/ref %s/b",
	                         ts_joseki(), f->dir, ts_joseki(), f->dir, f->dir, f->dir, f->mnt),
	                 0);
	/* The reference: the same run where there is room (written anew). */
	out = NULL;
	assert_int_equal(ts_runf(&out, NULL, "%s minimax %s/ref --full", ts_joseki(), f->dir), 0);
	assert_non_null(strstr(out, "the book rebuilt with full pages"));
	free(out);
	out = NULL;
	err = NULL;
	int rc = ts_runf(&out, &err, "%s minimax %s/b --full", ts_joseki(), f->mnt);
	if (rc != 0) fail_msg("minimax without room for a copy: status %d\n%s", rc, err);
	if (!strstr(out, "no room on the disk for the book written anew"))
		fail_msg("the text does not say the book was not written anew:\n%s", out);
	assert_null(strstr(out, "the book rebuilt"));
	free(out);
	free(err);
	assert_int_equal(ts_runf(NULL, NULL, "%s check %s/b", ts_joseki(), f->mnt), 0);
	/* The values are the reference's: their exports are equal, byte for byte. */
	assert_int_equal(ts_runf(NULL, NULL,
	                         "%s export %s/b %s/b.db --quiet && %s export %s/ref %s/ref.db "
	                         "--quiet && cmp %s/b.db %s/ref.db",
	                         ts_joseki(), f->mnt, f->dir, ts_joseki(), f->dir, f->dir, f->dir,
	                         f->dir),
	                 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_diskfull__every_writer_stops_cleanly_and_resumes,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_diskfull__minimax_without_room_for_a_copy_writes_in_place, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
