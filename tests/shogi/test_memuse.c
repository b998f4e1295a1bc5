/*
 * tests/shogi/test_memuse.c — the memory meter and the pass budget: sizes as
 * `--memory` takes them (units, decimals, the least, what is refused), the
 * default budget a quarter of the memory the process may have, the memory
 * locked out of the page cache taken from it, and the anonymous peak seeing
 * memory that was touched and given back (while a mapped file's pages do not
 * count).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shogi/memuse.h"
#include "tests/support/support.h"

static void test_parse_size(void **state)
{
	(void)state;
	uint64_t v = 7;
	assert_int_equal(memuse_parse_size("256M", &v), 0);
	assert_int_equal(v, 256ull << 20);
	assert_int_equal(memuse_parse_size("8G", &v), 0);
	assert_int_equal(v, 8ull << 30);
	assert_int_equal(memuse_parse_size("8g", &v), 0);
	assert_int_equal(v, 8ull << 30);
	assert_int_equal(memuse_parse_size("1.5GiB", &v), 0);
	assert_int_equal(v, 3ull << 29);
	assert_int_equal(memuse_parse_size("2048KB", &v), 0);
	assert_int_equal(v, 2ull << 20);
	assert_int_equal(memuse_parse_size("1T", &v), 0);
	assert_int_equal(v, 1ull << 40);
	assert_int_equal(memuse_parse_size("1048576", &v), 0);
	assert_int_equal(v, 1ull << 20);
	v = 7;
	const char *bad[] = {"",    "M",    "-1G",   "1X",    "1GG", "1Gx",   " 1G",
	                     "1 G", "1e3M", "1e-3G", "0x10M", "1.G", "1..5G", NULL};
	for (int i = 0; bad[i]; i++) {
		if (memuse_parse_size(bad[i], &v) != -1) fail_msg("'%s' taken", bad[i]);
		assert_int_equal(v, 7);
	}
	/* Sizes, but under 1 MiB: said apart. */
	const char *small[] = {"1000", "0.5M", "1023K", "0", NULL};
	for (int i = 0; small[i]; i++) {
		if (memuse_parse_size(small[i], &v) != -2) fail_msg("'%s' not too small", small[i]);
		assert_int_equal(v, 7);
	}
	char buf[32];
	assert_string_equal(memuse_format(256ull << 20, buf, sizeof buf), "256 MiB");
	assert_string_equal(memuse_format(3ull << 29, buf, sizeof buf), "1.5 GiB");
	assert_string_equal(memuse_format(512, buf, sizeof buf), "512 B");
}

static void test_default_budget(void **state)
{
	(void)state;
	uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t ram = memuse_ram();
	assert_true(ram > 0 && ram <= phys);
	uint64_t b = memuse_default_budget();
	assert_true(b >= 64ull << 20);
	if (ram / 4 >= 64ull << 20) assert_true(b == ram / 4);
}

/* Memory locked out of the page cache (another process's mlock, a hold
 * that makes the machine look smaller, huge pages reserved) is not memory
 * the process may have: memuse_ram leaves it out. */
static void test_locked_memory(void **state)
{
	(void)state;
	const char *info = "MemTotal:       24683548 kB\n"
	                   "Unevictable:    21874820 kB\n"
	                   "Mlocked:        21864484 kB\n"
	                   "HugePages_Total:       4\n"
	                   "Hugetlb:           8192 kB\n";
	assert_true(memuse_unusable(info) == (21874820ull + 8192) * 1024);
	assert_true(memuse_unusable("MemTotal: 100 kB\nUnevictableX: 5 kB\n") == 0);
	assert_true(memuse_unusable("") == 0);

	/* A real lock, as large as the limit allows (up to 32 MiB). */
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_MEMLOCK, &rl);
		assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	}
	size_t len = 32u << 20;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < len) len = (size_t)rl.rlim_cur & ~4095ul;
	if (geteuid() == 0) len = 32u << 20;
	if (len < (4u << 20)) {
		print_message("test_locked_memory: RLIMIT_MEMLOCK %zu bytes: no real lock tried\n",
		              len);
		return;
	}
	char *text = ts_read_file("/proc/meminfo", NULL);
	assert_non_null(text);
	uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t ram0 = memuse_ram();
	/* Whether the machine's memory is what bounds it (no control group's
	 * limit below it): then the lock shows. */
	bool machine = ram0 == phys - memuse_unusable(text);
	free(text);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(mlock(p, len), 0);
	uint64_t ram1 = memuse_ram();
	munlock(p, len);
	munmap(p, len);
	assert_true(ram1 <= ram0 + (1u << 20));
	if (machine) assert_true(ram1 + len <= ram0 + (1u << 20));
}

/* Writes "text\n" into dir/rel, the directories on the way made. */
static void put_limit(const char *dir, const char *rel, const char *text)
{
	char path[4200], line[64];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	snprintf(line, sizeof line, "%s\n", text);
	assert_int_equal(ts_write_file(path, line, strlen(line)), 0);
}

/* A control group's limit is the least of its own and its ancestors', in
 * either version's hierarchy; no limit (v1's huge number, v2's "max", no
 * file) is none. */
static void test_group_limit(void **state)
{
	(void)state;
	char *root = ts_mkdtemp();
	/* Version 2: the group /a/b is limited by a (3 GiB), not by b ("max"). */
	put_limit(root, "memory.max", "max");
	put_limit(root, "a/memory.max", "3221225472");
	put_limit(root, "a/b/memory.max", "max");
	assert_true(memuse_group_limit("0::/a/b\n", root) == 3221225472ull);
	/* ... and by itself where it is the lower. */
	put_limit(root, "a/b/memory.max", "251658240");
	assert_true(memuse_group_limit("0::/a/b\n", root) == 251658240ull);
	/* A group with no limit anywhere, and a process in none. */
	assert_true(memuse_group_limit("0::/c\n", root) == UINT64_MAX);
	assert_true(memuse_group_limit("", root) == UINT64_MAX);
	/* Version 1: the memory controller's line, among others; its
	 * "unlimited" is a huge number, the lower limit counts. */
	put_limit(root, "memory/memory.limit_in_bytes", "9223372036854771712");
	put_limit(root, "memory/job/memory.limit_in_bytes", "9223372036854771712");
	put_limit(root, "memory/job/step/memory.limit_in_bytes", "1073741824");
	const char *v1 = "12:pids:/job\n9:cpuset,cpu:/x\n4:memory:/job/step\n1:name=systemd:/job\n";
	assert_true(memuse_group_limit(v1, root) == 1073741824ull);
	/* The memory line wins over a version-2 line beside it (a hybrid). */
	char hybrid[256];
	snprintf(hybrid, sizeof hybrid, "%s0::/a/b\n", v1);
	assert_true(memuse_group_limit(hybrid, root) == 1073741824ull);
	ts_rmtree(root);
	free(root);
}

static void test_peak(void **state)
{
	(void)state;
	assert_int_equal(memuse_start(), 0);
	assert_int_equal(memuse_start(), 0); /* once */
	uint64_t before = memuse_anon_peak();
	assert_true(memuse_anon_now() > 0);
	/* A file's pages, mapped and read, are not anonymous. */
	char path[] = "/tmp/joseki-memuse-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t flen = 64u << 20;
	assert_int_equal(ftruncate(fd, (off_t)flen), 0);
	volatile unsigned char *fm = mmap(NULL, flen, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(fm != MAP_FAILED);
	unsigned sum = 0;
	for (size_t i = 0; i < flen; i += 4096) sum += fm[i];
	assert_int_equal(sum, 0);
	assert_true(memuse_anon_peak() < before + (16u << 20));
	munmap((void *)fm, flen);
	close(fd);
	/* 96 MiB touched, then given back: the peak keeps it. (Sampled here while
	 * it is held, by the call: the sampler thread may not run in the window
	 * on a busy machine, and a test does not wait for time.) */
	size_t len = 96u << 20;
	unsigned char *p =
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 1, len);
	assert_true(memuse_anon_now() >= before + len - (8u << 20));
	assert_true(memuse_anon_peak() >= before + len - (8u << 20));
	munmap(p, len);
	assert_true(memuse_anon_now() < before + (16u << 20));
	assert_true(memuse_anon_peak() >= before + len - (8u << 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_size),    cmocka_unit_test(test_default_budget),
	    cmocka_unit_test(test_locked_memory), cmocka_unit_test(test_group_limit),
	    cmocka_unit_test(test_peak),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
