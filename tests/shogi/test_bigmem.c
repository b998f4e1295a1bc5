/*
 * tests/shogi/test_bigmem.c — large arrays within a budget: zeroed when made,
 * their contents kept through growth (in memory, in a file, and when an
 * array moves from memory to a file), arrays past the budget in files whose
 * pages are not the process's anonymous memory, no file left in the
 * directory at any time, and pointers of malloc's taken as well (grown into
 * a mapping past BIGMEM_SMALL).
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

#include "shogi/bigmem.h"
#include "shogi/memuse.h"
#include "tests/support/support.h"

#define MIB (1024u * 1024u)

static char dir[] = "/tmp/joseki-bigmem-XXXXXX";

static void fill(uint32_t *a, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) a[i] = (uint32_t)i * 2654435761u ^ seed;
}

static void check(const uint32_t *a, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != ((uint32_t)i * 2654435761u ^ seed))
			fail_msg("element %zu: %u, not %u", i, a[i],
			         (uint32_t)i * 2654435761u ^ seed);
}

static void check_zero(const uint32_t *a, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (a[i]) fail_msg("element %zu not zeroed: %u", i, a[i]);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	bigmem_configure(0, NULL);
	return rmdir(dir);
}

static void
test_bigmem__without_a_budget_arrays_are_memory_zeroed_and_kept_through_growth(void **state)
{
	(void)state;
	bigmem_configure(0, dir);
	BigmemStats s0, s;
	bigmem_stats(&s0);
	size_t n = 3 * MIB / 4 + 17;
	uint32_t *a = bigmem_alloc(n * sizeof *a);
	assert_non_null(a);
	check_zero(a, 0, n);
	fill(a, n, 1);
	bigmem_stats(&s);
	assert_true(s.anon_bytes >= s0.anon_bytes + n * sizeof *a);
	assert_int_equal(s.file_bytes, s0.file_bytes);
	/* Grown, shrunk to a part of a page, grown again: kept. */
	a = bigmem_realloc(a, 4 * n * sizeof *a);
	assert_non_null(a);
	check(a, n, 1);
	a = bigmem_realloc(a, 1001 * sizeof *a);
	assert_non_null(a);
	check(a, 1001, 1);
	a = bigmem_realloc(a, 5000 * sizeof *a);
	assert_non_null(a);
	check(a, 1001, 1);
	bigmem_free(a);
	bigmem_stats(&s);
	assert_int_equal(s.anon_bytes, s0.anon_bytes);
	assert_int_equal(ts_files_in(dir), 0);
}

static void test_bigmem__past_the_budget_arrays_are_files_not_anonymous_memory(void **state)
{
	(void)state;
	bigmem_configure(4 * MIB, dir);
	BigmemStats s0, s;
	bigmem_stats(&s0);
	/* Within the budget (three quarters of it): memory. */
	size_t small = MIB / 4;
	uint32_t *a = bigmem_alloc(small * sizeof *a);
	assert_non_null(a);
	fill(a, small, 2);
	bigmem_stats(&s);
	assert_int_equal(s.files, s0.files);
	/* Past it: a file, zeroed; its pages are not anonymous memory. */
	size_t n = 64 * MIB / sizeof(uint32_t);
	uint64_t before = memuse_anon_now();
	uint32_t *b = bigmem_alloc(n * sizeof *b);
	assert_non_null(b);
	bigmem_stats(&s);
	assert_int_equal(s.files, s0.files + 1);
	assert_true(s.file_bytes >= s0.file_bytes + n * sizeof *b);
	check_zero(b, 0, n);
	fill(b, n, 3);
	uint64_t after = memuse_anon_now();
	print_message("anonymous before %llu KiB, after writing a 64 MiB file array %llu KiB\n",
	              (unsigned long long)(before >> 10), (unsigned long long)(after >> 10));
	if (before && after) assert_true(after < before + 16 * MIB);
	assert_int_equal(ts_files_in(dir), 0);
	/* Grown in its file: kept. */
	b = bigmem_realloc(b, (n + n / 2) * sizeof *b);
	assert_non_null(b);
	check(b, n, 3);
	/* The array in memory grown past the budget moves to a file, kept. */
	a = bigmem_realloc(a, 2 * MIB * sizeof *a);
	assert_non_null(a);
	bigmem_stats(&s);
	assert_int_equal(s.files, s0.files + 2);
	assert_int_equal(s.anon_bytes, s0.anon_bytes);
	check(a, small, 2);
	assert_true(s.file_peak >= (n + n / 2 + 2 * MIB) * sizeof *a);
	assert_int_equal(ts_files_in(dir), 0);
	bigmem_free(a);
	bigmem_free(b);
	bigmem_stats(&s);
	assert_int_equal(s.file_bytes, s0.file_bytes);
	assert_int_equal(s.anon_bytes, s0.anon_bytes);
}

static void test_bigmem__pointers_of_malloc_are_freed_and_grown_as_malloc_s(void **state)
{
	(void)state;
	bigmem_configure(0, dir);
	char *p = malloc(10);
	assert_non_null(p);
	memcpy(p, "joseki", 7);
	p = bigmem_realloc(p, 100000);
	assert_non_null(p);
	assert_string_equal(p, "joseki");
	BigmemStats s0, s;
	bigmem_stats(&s0);
	/* Past BIGMEM_SMALL: a mapping, counted, kept. */
	p = bigmem_realloc(p, 3 * BIGMEM_SMALL);
	assert_non_null(p);
	assert_string_equal(p, "joseki");
	bigmem_stats(&s);
	assert_true(s.anon_bytes >= s0.anon_bytes + 3 * BIGMEM_SMALL);
	bigmem_free(p);
	bigmem_free(NULL);
	/* Small arrays are malloc's: zeroed, counted nowhere. */
	uint32_t *z = bigmem_alloc(1000 * sizeof *z);
	assert_non_null(z);
	check_zero(z, 0, 1000);
	bigmem_stats(&s);
	assert_int_equal(s.anon_bytes, s0.anon_bytes);
	bigmem_free(z);
	assert_int_equal(s.file_bytes, 0);
}

/* Where no file can be made, the array is made in memory (as it was before
 * there was a budget) and why is kept for the command to say. */
static void test_bigmem__where_no_file_can_be_made_the_array_stays_in_memory(void **state)
{
	(void)state;
	char why[400];
	bigmem_configure(1 * MIB, "/nonexistent/joseki-bigmem");
	BigmemStats s0, s;
	bigmem_stats(&s0);
	uint32_t *p = bigmem_alloc(8 * MIB);
	assert_non_null(p);
	fill(p, 2 * MIB, 5);
	bigmem_stats(&s);
	assert_int_equal(s.files, s0.files);
	assert_true(s.anon_bytes >= s0.anon_bytes + 8 * MIB);
	assert_int_equal(bigmem_failure(why, sizeof why), 1);
	assert_string_equal(why, "/nonexistent/joseki-bigmem: No such file or directory");
	p = bigmem_realloc(p, 12 * MIB);
	assert_non_null(p);
	check(p, 2 * MIB, 5);
	bigmem_free(p);
	bigmem_configure(0, NULL);
}

static void test_bigmem__the_directory_of_a_path(void **state)
{
	(void)state;
	char d[64];
	bigmem_dir_of(d, sizeof d, "out.db");
	assert_string_equal(d, ".");
	bigmem_dir_of(d, sizeof d, "/out.db");
	assert_string_equal(d, "/");
	bigmem_dir_of(d, sizeof d, "/var/tmp/books/out.db");
	assert_string_equal(d, "/var/tmp/books");
	bigmem_dir_of(d, sizeof d, "books/out.db");
	assert_string_equal(d, "books");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_bigmem__without_a_budget_arrays_are_memory_zeroed_and_kept_through_growth),
	    cmocka_unit_test(test_bigmem__past_the_budget_arrays_are_files_not_anonymous_memory),
	    cmocka_unit_test(test_bigmem__pointers_of_malloc_are_freed_and_grown_as_malloc_s),
	    cmocka_unit_test(test_bigmem__where_no_file_can_be_made_the_array_stays_in_memory),
	    cmocka_unit_test(test_bigmem__the_directory_of_a_path),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
