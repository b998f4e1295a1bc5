/*
 * tests/tools/test_bench_scale.c — `make bench-scale` in its smoke form
 * (SCALE_SMOKE=1 tools/bench-scale.sh: 20,000 and 100,000 positions), so that
 * the benchmark cannot rot: every command's line at both sizes with each
 * figure, none failed, a growth line for each; the refusal of a work
 * directory without the disk for the size asked; SCALE_ONLY, SCALE_RATIO,
 * SCALE_RAM in a memory group and held (SCALE_HOLD).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <limits.h>
#include <unistd.h>

#include <cmocka.h>

#include "shogi/memuse.h"
#include "tests/support/support.h"

static const char *const commands[] = {
    "synth",
    "minimax-full",
    "minimax-incremental",
    "export-yaneuraou",
    "peta-shock",
    "export-apery",
    "export-partial",
    "merge",
    "check",
    "backup",
    "compact",
    "stats",
    "stats-scan",
    "query",
    "select",
    "serve",
    "serve-work",
};

/* The bench with env in dir: it ends well, no command failed; *out and *err
 * its output (free them). */
static void bench_ok(const char *dir, const char *env, char **out, char **err)
{
	int rc = ts_runf(out, err, "%s JOSEKI=%s SCALE_DIR=%s/work tools/bench-scale.sh", env,
	                 ts_joseki(), dir);
	if (rc != 0) fail_msg("bench-scale %s: exit %d\n%s%s", env, rc, *out, *err);
	if (strstr(*out, " failed (")) fail_msg("%s: a command failed:\n%s", env, *out);
}

static void test_bench_scale__the_smoke_form_measures_every_command(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	bench_ok(dir, "SCALE_SMOKE=1 SCALE_MEMORY=64M", &out, &err);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		const int sizes[] = {20000, 100000};
		for (int k = 0; k < 2; k++) {
			char want[128];
			snprintf(want, sizeof want, "bench-scale: %s positions %d wall_s ",
			         commands[i], sizes[k]);
			const char *line = strstr(out, want);
			if (!line) fail_msg("no line '%s...':\n%s", want, out);
			const char *end = strchr(line, '\n');
			assert_non_null(end);
			char *l = strndup(line, (size_t)(end - line));
			assert_non_null(strstr(l, " cpu_s "));
			assert_non_null(strstr(l, " peak_anon_mb "));
			assert_non_null(strstr(l, " positions_per_s "));
			/* Every command wrote or read a book or a file: bytes on disk. */
			const char *d = strstr(l, " disk_bytes ");
			assert_non_null(d);
			assert_true(strtoull(d + 12, NULL, 10) > 0);
			if (!strcmp(commands[i], "serve"))
				assert_non_null(strstr(l, " first_query_s "));
			if (!strcmp(commands[i], "serve-work"))
				assert_non_null(strstr(l, " first_acquire_s "));
			free(l);
		}
		char growth[128];
		snprintf(growth, sizeof growth, "bench-scale: %s growth time_exponent ",
		         commands[i]);
		if (!strstr(out, growth)) fail_msg("no growth line for %s:\n%s", commands[i], out);
	}
	/* The synthetic book is the size asked, at both sizes. */
	assert_non_null(strstr(out, "bench-scale: synth positions 100000 "));
	/* The header says whether the work directory's or $TMPDIR's file system
	 * discards online, as findmnt says they are mounted. */
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	bool discard = false;
	for (int i = 0; i < 2; i++) {
		char *opts = NULL;
		assert_int_equal(ts_runf(&opts, NULL, "findmnt -no OPTIONS -T %s", i ? tmp : dir),
		                 0);
		for (char *o = strtok(opts, ",\n"); o; o = strtok(NULL, ",\n"))
			discard = discard || !strcmp(o, "discard");
		free(opts);
	}
	assert_int_equal(strstr(err, "mounted with online discard") != NULL, discard);
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

static void test_bench_scale__refuses_a_disk_without_room(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	/* 10^15 positions: no disk here has the room. */
	int rc =
	    ts_runf(&out, &err,
	            "SCALE_POSITIONS=1000000000000000 SCALE_SMALL=1000 JOSEKI=%s SCALE_DIR=%s/work "
	            "tools/bench-scale.sh",
	            ts_joseki(), dir);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "GiB free"));
	assert_non_null(strstr(err, "set SCALE_DIR to a disk with room"));
	assert_null(strstr(out, "bench-scale: synth"));
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

/* The smoke form with env is refused (exit 2) before anything runs, saying why. */
static void refused(const char *dir, const char *env, const char *why)
{
	char *out = NULL, *err = NULL;
	int rc =
	    ts_runf(&out, &err, "SCALE_SMOKE=1 %s JOSEKI=%s SCALE_DIR=%s/work tools/bench-scale.sh",
	            env, ts_joseki(), dir);
	assert_int_equal(rc, 2);
	if (!strstr(err, why)) fail_msg("%s: not '%s':\n%s", env, why, err);
	assert_null(strstr(out, "bench-scale: synth"));
	free(out);
	free(err);
}

/* SCALE_ONLY: those commands and synth, at both sizes, with their growth lines;
 * the disk asked for is theirs; a name that is no command is refused; SCALE_KEEP. */
static void test_bench_scale__measures_only_the_commands_asked_for(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	bench_ok(
	    dir,
	    "SCALE_SMOKE=1 SCALE_POSITIONS=10000 SCALE_SMALL=2000 SCALE_ONLY='minimax-full stats' "
	    "SCALE_KEEP=1",
	    &out, &err);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		bool asked = !strcmp(commands[i], "synth") ||
		             !strcmp(commands[i], "minimax-full") || !strcmp(commands[i], "stats");
		char want[128];
		snprintf(want, sizeof want, "bench-scale: %s positions ", commands[i]);
		const char *first = strstr(out, want);
		if (!asked) {
			if (first) fail_msg("a line for %s, not asked for:\n%s", commands[i], out);
			continue;
		}
		if (!first || !strstr(first + 1, want))
			fail_msg("not two lines for %s:\n%s", commands[i], out);
		snprintf(want, sizeof want, "bench-scale: %s growth ", commands[i]);
		if (!strstr(out, want)) fail_msg("no growth line for %s:\n%s", commands[i], out);
	}
	free(out);
	free(err);
	out = err = NULL;
	/* SCALE_KEEP=1: the book of SCALE_POSITIONS left in SCALE_DIR, the smaller one not. */
	char book[PATH_MAX];
	snprintf(book, sizeof book, "%s/work/book-10000/data.mdb", dir);
	assert_true(access(book, F_OK) == 0);
	snprintf(book, sizeof book, "%s/work/book-2000", dir);
	assert_true(access(book, F_OK) != 0);
	/* The disk asked for: minimax's 340 bytes a position, not the copies' 600; the
	 * book's 110 for commands that only read it. */
	static const struct {
		const char *only, *need;
	} disk[] = {
	    {"", "(600 bytes a position"},
	    {"SCALE_ONLY='minimax-full select'", "(340 bytes a position"},
	    {"SCALE_ONLY='select check serve-work'", "(110 bytes a position"},
	};
	for (size_t i = 0; i < sizeof disk / sizeof disk[0]; i++) {
		int rc = ts_runf(&out, &err,
		                 "SCALE_POSITIONS=1000000000000000 SCALE_SMALL=1000 %s JOSEKI=%s "
		                 "SCALE_DIR=%s/work tools/bench-scale.sh",
		                 disk[i].only, ts_joseki(), dir);
		assert_int_equal(rc, 1);
		if (!strstr(err, disk[i].need))
			fail_msg("%s: not the disk asked for (%s):\n%s", disk[i].only, disk[i].need,
			         err);
		free(out);
		free(err);
		out = err = NULL;
	}
	refused(dir, "SCALE_ONLY='minimax-full exprot'", "SCALE_ONLY: no command 'exprot'");
	refused(dir, "SCALE_KEEP=yes", "SCALE_KEEP 'yes' is not 0 or 1");
	/* A SCALE_RATIO that is neither 0 nor 1 is refused, not taken for 0. */
	refused(dir, "SCALE_RATIO=yes", "SCALE_RATIO 'yes' is not 0 or 1");
	ts_rmtree(dir);
	free(dir);
}

/* Whether this process could make a memory control group (SCALE_RAM): root,
 * with the memory controller of cgroup v2 or v1 mounted. */
static bool can_make_memory_group(void)
{
	if (geteuid() != 0) return false;
	char *text = ts_read_file("/sys/fs/cgroup/cgroup.controllers", NULL);
	if (text) {
		bool yes = strstr(text, "memory") != NULL;
		free(text);
		return yes;
	}
	struct stat st;
	return stat("/sys/fs/cgroup/memory/cgroup.procs", &st) == 0;
}

static void test_bench_scale__runs_within_a_memory_group(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	int rc = ts_runf(&out, &err,
	                 "SCALE_SMOKE=1 SCALE_POSITIONS=10000 SCALE_SMALL=2000 SCALE_RAM=1G "
	                 "JOSEKI=%s SCALE_DIR=%s/work tools/bench-scale.sh",
	                 ts_joseki(), dir);
	if (can_make_memory_group()) {
		if (rc != 0) fail_msg("bench-scale: exit %d\n%s%s", rc, out, err);
		/* The header names the group; it is gone once the bench ends. */
		const char *at = strstr(err, "within 1G of memory and page cache: ");
		if (!at) fail_msg("no memory group in the header:\n%s", err);
		at += strlen("within 1G of memory and page cache: ");
		char group[512];
		size_t len = strcspn(at, ")\n");
		assert_true(len > 0 && len < sizeof group);
		memcpy(group, at, len);
		group[len] = '\0';
		assert_non_null(strstr(group, "/joseki-scale."));
		struct stat st;
		assert_int_not_equal(stat(group, &st), 0);
		/* A v1 group's cost is said (run 19 of docs/notes/bookdb.md). */
		bool v1 = stat("/sys/fs/cgroup/cgroup.controllers", &st) != 0;
		assert_int_equal(strstr(err, "SCALE_RAM on cgroup v1") != NULL, v1);
		if (strstr(out, " failed (")) fail_msg("a command failed:\n%s", out);
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
			char want[128];
			snprintf(want, sizeof want, "bench-scale: %s positions 10000 wall_s ",
			         commands[i]);
			if (!strstr(out, want)) fail_msg("no line '%s...':\n%s", want, out);
		}
	} else {
		assert_int_equal(rc, 1);
		assert_non_null(strstr(err, "cannot make a memory control group"));
		assert_null(strstr(out, "bench-scale: synth"));
	}
	free(out);
	free(err);
	out = err = NULL;
	if (can_make_memory_group()) {
		/* SCALE_RATIO: the smaller size within the group and budget scaled down
		 * (1024 MiB and 64 MiB times 2000 / 10000, in whole MiB). */
		bench_ok(dir,
		         "SCALE_SMOKE=1 SCALE_POSITIONS=10000 SCALE_SMALL=2000 SCALE_RAM=1G "
		         "SCALE_MEMORY=64M SCALE_RATIO=1 SCALE_ONLY=minimax-full",
		         &out, &err);
		if (!strstr(err, "bench-scale: 2000 positions, --memory 12M, within 204M\n") ||
		    !strstr(err, "bench-scale: 10000 positions, --memory 64M, within 1024M\n"))
			fail_msg("not the budgets scaled:\n%s", err);
		assert_non_null(strstr(out, "bench-scale: minimax-full growth "));
		free(out);
		free(err);
		out = err = NULL;
	}
	/* A size that is not one is refused before anything runs. */
	refused(dir, "SCALE_RAM=lots", "SCALE_RAM 'lots' is not a size");
	ts_rmtree(dir);
	free(dir);
}

/* The machine's memory less what is locked already (the figure the bench
 * holds down from), in MiB. */
static uint64_t unlocked_mib(void)
{
	char *text = ts_read_file("/proc/meminfo", NULL);
	assert_non_null(text);
	uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t locked = memuse_unusable(text);
	free(text);
	assert_true(phys > locked);
	return (phys - locked) >> 20;
}

/* Whether process pid has at least mib MiB resident. */
static bool hog_resident(pid_t pid, unsigned mib)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	char *text = ts_read_file(path, NULL);
	const char *at = text ? strstr(text, "VmRSS:") : NULL;
	unsigned long kb = 0;
	bool yes = at && sscanf(at, "VmRSS: %lu", &kb) == 1 && kb >= (unsigned long)mib * 1024;
	free(text);
	return yes;
}

/* SCALE_HOLD: the machine held to SCALE_RAM by locking the rest of its memory
 * (tools/memhold), given back at the end, what other processes hold said;
 * refused without SCALE_RAM or root. */
static void test_bench_scale__holds_the_machine_to_its_memory(void **state)
{
	(void)state;
	char *dir = ts_mkdtemp(), *out = NULL, *err = NULL;
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	refused(dir, "SCALE_HOLD=2 SCALE_RAM=1G", "SCALE_HOLD '2' is not 0 or 1");
	refused(dir, "SCALE_HOLD=1", "SCALE_HOLD=1 holds what is above SCALE_RAM");
	/* 64 MiB held: SCALE_RAM the rest less that. */
	uint64_t ram = unlocked_mib() - 64;
	char env[256];
	snprintf(
	    env, sizeof env,
	    "SCALE_SMOKE=1 SCALE_POSITIONS=10000 SCALE_SMALL=2000 SCALE_RAM=%lluM SCALE_HOLD=1 "
	    "SCALE_ONLY=stats MEMHOLD=%s/memhold",
	    (unsigned long long)ram, build);
	if (geteuid() != 0) {
		char *o = NULL, *e = NULL;
		int rc = ts_runf(&o, &e, "%s JOSEKI=%s SCALE_DIR=%s/work tools/bench-scale.sh", env,
		                 ts_joseki(), dir);
		assert_int_equal(rc, 1);
		assert_non_null(strstr(e, "SCALE_HOLD=1: locking memory needs root"));
		free(o);
		free(e);
	} else {
		/* Another process holding 1.5 GiB meanwhile: the machine is not idle
		 * (more than 1024M held by others), and the hold says so. */
		int pfd[2];
		assert_int_equal(pipe(pfd), 0);
		pid_t hog = fork();
		assert_true(hog >= 0);
		if (hog == 0) {
			close(pfd[1]);
			size_t n = (size_t)1536 << 20;
			char *p = malloc(n), c;
			/* (Page by page through a volatile pointer: a memset of memory
			 * never read again may be left out by the compiler.) */
			volatile char *v = p;
			for (size_t k = 0; p && k < n; k += 4096) v[k] = 1;
			ssize_t r = read(pfd[0], &c, 1); /* until the test closes its end */
			_exit(p && r >= 0 ? 0 : 1);
		}
		close(pfd[0]);
		/* (Touched before the bench starts: its pages show in MemAvailable.) */
		for (int k = 0; k < 400 && !hog_resident(hog, 1500); k++) usleep(50000);
		assert_true(hog_resident(hog, 1500));
		bench_ok(dir, env, &out, &err);
		close(pfd[1]);
		int hst = 0;
		assert_int_equal(waitpid(hog, &hst, 0), hog);
		if (!strstr(err, "the machine is not idle"))
			fail_msg("1.5 GiB held by another process not said:\n%s", err);
		/* Held once for both sizes, their memory being the same (60-68 MiB: what
		 * others lock may move meanwhile). */
		int sizes = 0;
		for (const char *at = err; (at = strstr(at, "bench-scale: held ")); at++) {
			unsigned mib = 0;
			assert_int_equal(sscanf(at, "bench-scale: held %u MiB", &mib), 1);
			if (mib < 60 || mib > 68)
				fail_msg("held %u MiB, not about 64:\n%s", mib, err);
			sizes++;
		}
		if (sizes != 1) fail_msg("not held once:\n%s", err);
		char within[64];
		snprintf(within, sizeof within, ", within %lluM\n", (unsigned long long)ram);
		const char *first = strstr(err, within);
		if (!first || !strstr(first + 1, within))
			fail_msg("not each size within %lluM:\n%s", (unsigned long long)ram, err);
		assert_non_null(strstr(out, "bench-scale: stats growth "));
		/* Given back: nothing of the bench's is locked any more. */
		uint64_t after = unlocked_mib();
		if (after + 32 < ram + 64)
			fail_msg("still held: %llu MiB unlocked", (unsigned long long)after);
		/* A hold that ends while a command runs (as the kernel's OOM killer
		 * ends it): that command failed for it, and the hold made again. */
		free(out);
		free(err);
		out = err = NULL;
		ts_runf(&out, &err,
		        "%s JOSEKI=%s SCALE_DIR=%s/lost tools/bench-scale.sh 2>%s/lost.err & b=$!; "
		        "until grep -q 'bench-scale: held' %s/lost.err; do sleep 0.05; done; "
		        "pkill -x memhold; wait $b; cat %s/lost.err >&2",
		        env, ts_joseki(), dir, dir, dir, dir);
		if (!strstr(out, "failed (the memory hold ended meanwhile"))
			fail_msg("a hold killed meanwhile not said:\n%s%s", out, err);
		const char *held = strstr(err, "bench-scale: held ");
		if (!held || !strstr(held + 1, "bench-scale: held "))
			fail_msg("not held again:\n%s", err);
		after = unlocked_mib();
		if (after + 32 < ram + 64)
			fail_msg("still held: %llu MiB unlocked", (unsigned long long)after);
	}
	free(out);
	free(err);
	ts_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bench_scale__the_smoke_form_measures_every_command),
	    cmocka_unit_test(test_bench_scale__refuses_a_disk_without_room),
	    cmocka_unit_test(test_bench_scale__measures_only_the_commands_asked_for),
	    cmocka_unit_test(test_bench_scale__runs_within_a_memory_group),
	    cmocka_unit_test(test_bench_scale__holds_the_machine_to_its_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
