/*
 * tests/bookgen/test_snapshot.c — the snapshot file (bookgen/snapshot.h):
 * sections written in pieces read back whole and equal; the hash of pieces
 * is the hash of the whole; a file written behind (SNAP_WRITE_BEHIND) the
 * same, and never in the page cache but for its last, partial chunk; a missing file,
 * another stamp, a truncated file, any one byte changed (header, section,
 * table) are each refused with their reason; a failed write leaves the last
 * good file in place. The selector's and the plan's sections are tested
 * through the coordinator (tests/cluster/test_coord.c) and the fuzz target
 * fuzz_selector_snap.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "bookgen/snapshot.h"
#include "tests/support/support.h"

#define TA SNAP_TAG('T', 'E', 'S', 'A')
#define TB SNAP_TAG('T', 'E', 'S', 'B')
#define TC SNAP_TAG('T', 'E', 'S', 'C')

static const BookStamp STAMP = {7, 1234, 99, BOOKDB_CHANGES_ON, 5};

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *b = malloc(n ? n : 1);
	assert_non_null(b);
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		b[i] = (uint8_t)(x >> 56);
	}
	return b;
}

/* Sections A (a, na bytes, written in pieces of 1, 3, 31, 32, 33, ...;
 * written behind, pieces of every size up to one larger than a chunk),
 * B (empty) and C (c, nc bytes, in one piece). */
static void write_file_with(const char *path, unsigned flags, const uint8_t *a, size_t na,
                            const uint8_t *c, size_t nc)
{
	SnapWriter *w;
	char err[SNAP_ERRLEN];
	assert_int_equal(snap_create(&w, path, &STAMP, flags, err), 0);
	assert_int_equal(snap_section(w, TA), 0);
	size_t off = 0, piece = 1;
	while (off < na) {
		size_t k = piece < na - off ? piece : na - off;
		assert_int_equal(snap_write(w, a + off, k), 0);
		off += k;
		if (flags & SNAP_WRITE_BEHIND)
			piece = piece < SNAP_BEHIND_CHUNK ? piece * 7 + 3 : 1;
		else
			piece = piece * 3 % 97 + 1;
	}
	assert_int_equal(snap_section(w, TB), 0);
	assert_int_equal(snap_section(w, TC), 0);
	assert_int_equal(snap_write(w, c, nc), 0);
	assert_int_equal(snap_commit(w, err), 0);
}

static void write_file(const char *path, const uint8_t *a, size_t na, const uint8_t *c, size_t nc)
{
	write_file_with(path, 0, a, na, c, nc);
}

/* Opens path and reads every section: 0, or the first refusal's code. */
static int read_all(const char *path, const uint8_t *a, size_t na, const uint8_t *c, size_t nc,
                    char *err)
{
	SnapReader *r;
	int rc = snap_open(&r, path, &STAMP, err);
	if (rc) return rc;
	uint64_t len;
	assert_true(snap_has(r, TA, &len));
	assert_int_equal(len, na);
	assert_true(snap_has(r, TB, &len));
	assert_int_equal(len, 0);
	assert_false(snap_has(r, SNAP_TAG('N', 'O', 'N', 'E'), &len));
	uint8_t *ba = malloc(na + 1), *bc = malloc(nc + 1);
	assert_non_null(ba);
	assert_non_null(bc);
	rc = snap_read(r, TA, ba, na, err);
	if (!rc) rc = snap_read(r, TB, NULL, 0, err);
	if (!rc) rc = snap_read(r, TC, bc, nc, err);
	if (!rc) {
		assert_memory_equal(ba, a, na);
		assert_memory_equal(bc, c, nc);
		/* Asked for another length: refused. */
		assert_int_equal(snap_read(r, TC, bc, nc - 1, err), SEL_ESNAP);
	}
	free(ba);
	free(bc);
	snap_close(r);
	return rc;
}

static void test_snapshot__sections_round_trip_and_the_hash_streams(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4096], err[SNAP_ERRLEN];
	snprintf(path, sizeof path, "%s/s.snap", dir);
	size_t na = 100003, nc = 4096;
	uint8_t *a = pattern(na, 1), *c = pattern(nc, 2);
	write_file(path, a, na, c, nc);
	assert_int_equal(read_all(path, a, na, c, nc, err), 0);
	assert_false(access(path, F_OK) != 0);
	/* No temporary file is left. */
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_true(access(tmp, F_OK) != 0);
	/* The hash: every length's tail counts, one bit changes it. */
	for (size_t n = 0; n < 70; n++) {
		uint64_t h = snap_hash(a, n);
		assert_true(h != snap_hash(a, n + 1));
		if (n) {
			a[n - 1] ^= 1;
			assert_true(h != snap_hash(a, n));
			a[n - 1] ^= 1;
		}
	}
	free(a);
	free(c);
	ts_rmtree(dir);
	free(dir);
}

static void test_snapshot__written_behind_it_reads_back_and_leaves_the_cache(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4096], err[SNAP_ERRLEN];
	snprintf(path, sizeof path, "%s/s.snap", dir);
	/* Four chunks and a half, then a second section of a chunk and a byte. */
	size_t na = 4 * SNAP_BEHIND_CHUNK + SNAP_BEHIND_CHUNK / 2 + 7, nc = SNAP_BEHIND_CHUNK + 1;
	uint8_t *a = pattern(na, 5), *c = pattern(nc, 6);
	write_file_with(path, SNAP_WRITE_BEHIND, a, na, c, nc);
	/* What was written behind never went through the page cache (O_DIRECT)
	 * but for its last, partial chunk, dropped before the header is written
	 * at the end; where the file system refuses O_DIRECT, it left the cache
	 * as it went. So the header's page is left (and, without O_DIRECT, a
	 * chunk at most: the last, if dropping it failed). tmpfs keeps its pages
	 * whatever is advised: there is nothing to see. */
	struct statfs fs;
	assert_int_equal(statfs(dir, &fs), 0);
	if (fs.f_type != 0x01021994 /* TMPFS_MAGIC */) {
		char probe[4200];
		snprintf(probe, sizeof probe, "%s/direct", dir);
		int fd = open(probe, O_WRONLY | O_CREAT | O_DIRECT, 0644);
		bool direct = fd >= 0;
		if (fd >= 0) close(fd);
		size_t in = ts_resident_pages(path) * (size_t)sysconf(_SC_PAGESIZE),
		       most = (direct ? 0 : 1) * SNAP_BEHIND_CHUNK + 2 * 4096;
		print_message("%zu bytes in the page cache (O_DIRECT %s)\n", in,
		              direct ? "taken" : "refused");
		if (in > most) fail_msg("%zu of %zu bytes still in the page cache", in, na + nc);
	} else {
		print_message("TMPDIR %s is tmpfs: the page cache left behind is not checked\n",
		              dir);
	}
	/* Read back whole and equal, hashes and all. */
	assert_int_equal(read_all(path, a, na, c, nc, err), 0);
	free(a);
	free(c);
	ts_rmtree(dir);
	free(dir);
}

static void test_snapshot__every_damage_is_refused_with_its_reason(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp();
	char path[4096], err[SNAP_ERRLEN];
	snprintf(path, sizeof path, "%s/s.snap", dir);
	size_t na = 5000, nc = 300;
	uint8_t *a = pattern(na, 3), *c = pattern(nc, 4);
	/* None. */
	assert_int_equal(read_all(path, a, na, c, nc, err), SEL_ENOSNAP);
	/* Another stamp: the book written since, or another file. */
	write_file(path, a, na, c, nc);
	SnapReader *r;
	BookStamp later = STAMP;
	later.txnid++;
	assert_int_equal(snap_open(&r, path, &later, err), SEL_ESTALE);
	assert_non_null(strstr(err, "written since"));
	BookStamp other = STAMP;
	other.ino++;
	assert_int_equal(snap_open(&r, path, &other, err), SEL_ESTALE);
	assert_non_null(strstr(err, "another book"));
	/* Any one byte changed: refused, wherever it is. */
	long size = (long)ts_file_size(path);
	int refused = 0;
	for (long off = 0; off < size; off += 97) {
		write_file(path, a, na, c, nc);
		ts_flip_byte(path, off, 0x10);
		int rc = read_all(path, a, na, c, nc, err);
		if (rc != SEL_ESNAP)
			fail_msg("byte %ld of %ld changed: %d (%s)", off, size, rc, err);
		assert_non_null(strstr(err, path));
		refused++;
	}
	assert_true(refused > 50);
	/* Truncated anywhere. */
	for (long keep = 0; keep < size; keep += size / 13 + 1) {
		write_file(path, a, na, c, nc);
		assert_int_equal(truncate(path, keep), 0);
		assert_int_equal(read_all(path, a, na, c, nc, err), SEL_ESNAP);
	}
	/* A write that cannot be made leaves the last good file. */
	write_file(path, a, na, c, nc);
	char bad[4200];
	snprintf(bad, sizeof bad, "%s/no-such-dir/s.snap", dir);
	SnapWriter *w;
	assert_int_equal(snap_create(&w, bad, &STAMP, 0, err), SEL_EIO);
	assert_non_null(strstr(err, "no-such-dir"));
	assert_int_equal(snap_create(&w, path, &STAMP, 0, err), 0);
	assert_int_equal(snap_section(w, TA), 0);
	assert_int_equal(snap_write(w, "x", 1), 0);
	snap_abort(w);
	assert_int_equal(read_all(path, a, na, c, nc, err), 0);
	free(a);
	free(c);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot__sections_round_trip_and_the_hash_streams),
	    cmocka_unit_test(test_snapshot__every_damage_is_refused_with_its_reason),
	    cmocka_unit_test(test_snapshot__written_behind_it_reads_back_and_leaves_the_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
