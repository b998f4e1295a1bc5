/* shogi/memuse.c — peak anonymous memory and the pass budget (memuse.h). */
#include "shogi/memuse.h"

#include <ctype.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t peak;
static atomic_bool started;

uint64_t memuse_anon_now(void)
{
	/* statm: size resident shared text lib data dt, in pages; shared is the
	 * resident file-backed and shared-memory pages (RssFile + RssShmem). */
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f) return 0;
	unsigned long long size, res, shared;
	int n = fscanf(f, "%llu %llu %llu", &size, &res, &shared);
	fclose(f);
	if (n != 3 || shared > res) return 0;
	return (uint64_t)(res - shared) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void sample(void)
{
	uint64_t now = memuse_anon_now(), p = atomic_load(&peak);
	while (now > p && !atomic_compare_exchange_weak(&peak, &p, now)) {
	}
}

static void *sampler(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (;;) {
		sample();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int memuse_start(void)
{
	if (atomic_exchange(&started, true)) return 0;
	sample();
	pthread_t t;
	pthread_attr_t a;
	if (pthread_attr_init(&a)) return -1;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* The default stack size: a thread's stack also holds the program's static
	 * thread-local storage (joseki's is large), so a small stack makes
	 * pthread_create fail (EINVAL), and the peak would be the one sample above
	 * and the one at the end. Only the pages touched are resident. */
	/* Started at a command's start, before the command sets how it takes
	 * signals (serve blocks SIGTERM in every thread but the one that waits
	 * for it): the sampler blocks them all, so that the kernel never hands
	 * it one, whose default action would end the process. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t, &a, sampler, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return rc ? -1 : 0;
}

uint64_t memuse_anon_peak(void)
{
	sample();
	return atomic_load(&peak);
}

/* The number in file (a control group's limit), or UINT64_MAX when there is
 * none ("max", a file that is not there). */
static uint64_t read_limit(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) return UINT64_MAX;
	unsigned long long v;
	int n = fscanf(f, "%llu", &v);
	fclose(f);
	return n == 1 ? (uint64_t)v : UINT64_MAX;
}

/* The least of name's limits in the group at root/path and its ancestors. */
static uint64_t least_limit(const char *root, const char *path, const char *name)
{
	char dir[4096], file[4200];
	size_t top = strlen(root);
	size_t plen = strlen(path);
	if (top + plen >= sizeof dir) return UINT64_MAX;
	memcpy(dir, root, top);
	memcpy(dir + top, path, plen + 1);
	uint64_t least = UINT64_MAX;
	for (;;) {
		if (snprintf(file, sizeof file, "%s/%s", dir, name) >= (int)sizeof file) break;
		uint64_t l = read_limit(file);
		if (l < least) least = l;
		char *slash = strrchr(dir + top, '/');
		if (!slash) break;
		*slash = 0;
	}
	return least;
}

uint64_t memuse_group_limit(const char *groups, const char *root)
{
	/* Lines "ID:CONTROLLERS:PATH": version 1's memory controller has a line
	 * of its own; version 2's one hierarchy is "0::PATH". */
	char v1[4096] = "", v2[4096] = "";
	const char *line = groups;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 && c2[1] == '/') {
			size_t plen = len - (size_t)(c2 + 1 - line);
			char ctl[256];
			size_t clen = (size_t)(c2 - c1 - 1);
			if (plen < sizeof v1 && clen < sizeof ctl) {
				memcpy(ctl, c1 + 1, clen);
				ctl[clen] = 0;
				bool memory = false;
				char *save;
				for (char *t = strtok_r(ctl, ",", &save); t;
				     t = strtok_r(NULL, ",", &save))
					memory |= !strcmp(t, "memory");
				char *to = memory                             ? v1
				           : !clen && !strncmp(line, "0:", 2) ? v2
				                                              : NULL;
				if (to) {
					memcpy(to, c2 + 1, plen);
					to[plen] = 0;
				}
			}
		}
		line = end ? end + 1 : NULL;
	}
	char dir[4200];
	if (*v1) {
		snprintf(dir, sizeof dir, "%s/memory", root);
		return least_limit(dir, v1, "memory.limit_in_bytes");
	}
	if (*v2) return least_limit(root, v2, "memory.max");
	return UINT64_MAX;
}

/* The kB of the line "name: N kB" in meminfo, 0 when there is none. */
static uint64_t meminfo_kb(const char *meminfo, const char *name)
{
	size_t len = strlen(name);
	for (const char *l = meminfo; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long kb;
		if (!strncmp(l, name, len) && l[len] == ':' &&
		    sscanf(l + len + 1, "%llu", &kb) == 1)
			return (uint64_t)kb;
	}
	return 0;
}

uint64_t memuse_unusable(const char *meminfo)
{
	return (meminfo_kb(meminfo, "Unevictable") + meminfo_kb(meminfo, "Hugetlb")) * 1024;
}

/* The first size - 1 bytes of file into buf, terminated; "" when it cannot
 * be read. */
static void read_text(const char *file, char *buf, size_t size)
{
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;
	if (f) fclose(f);
	buf[n] = 0;
}

uint64_t memuse_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
	char text[8192];
	read_text("/proc/meminfo", text, sizeof text);
	uint64_t locked = memuse_unusable(text);
	if (locked < ram) ram -= locked;
	char *groups = text;
	read_text("/proc/self/cgroup", groups, sizeof text);
	uint64_t limit = memuse_group_limit(groups, "/sys/fs/cgroup");
	uint64_t least = ram && ram < limit ? ram : limit;
	return least == UINT64_MAX ? 0 : least;
}

bool memuse_too_large_to_cache(uint64_t bytes)
{
	uint64_t ram = memuse_ram();
	return ram && bytes > ram / 2;
}

uint64_t memuse_default_budget(void)
{
	uint64_t b = memuse_ram() / 4;
	return b < (64ull << 20) ? 64ull << 20 : b;
}

int memuse_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s)) return -1;
	/* Digits, and a decimal part: no sign, exponent or hex, which strtod
	 * would take ("1e3M", "0x10M"). */
	size_t n = strspn(s, "0123456789");
	if (s[n] == '.') {
		size_t f = strspn(s + n + 1, "0123456789");
		if (!f) return -1;
		n += 1 + f;
	}
	char *end;
	double v = strtod(s, &end);
	if (end != s + n) return -1;
	double mult = 1;
	if (*end) {
		switch (toupper((unsigned char)*end)) {
		case 'K':
			mult = 1024.0;
			break;
		case 'M':
			mult = 1024.0 * 1024;
			break;
		case 'G':
			mult = 1024.0 * 1024 * 1024;
			break;
		case 'T':
			mult = 1024.0 * 1024 * 1024 * 1024;
			break;
		default:
			return -1;
		}
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "ib") || !strcmp(end, "B") ||
		    !strcmp(end, "b"))
			end += strlen(end);
		if (*end) return -1;
	}
	double bytes = v * mult;
	if (bytes > 1e19) return -1;
	if (!(bytes >= 1024.0 * 1024)) return -2;
	*out = (uint64_t)bytes;
	return 0;
}

const char *memuse_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v >= 100 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}
