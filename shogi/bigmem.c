/*
 * shogi/bigmem.c — large arrays within a budget (shogi/bigmem.h).
 *
 * Every array of BIGMEM_SMALL bytes or more is a mapping of its own, kept in
 * a small table (a pass has a few dozen): anonymous, or shared from an
 * unlinked file whose descriptor the table keeps, so that the array can grow
 * (fallocate, then mremap). Smaller ones are malloc's: a mapping each would
 * cost a system call where a structure makes and drops small arrays often.
 */
#include "shogi/bigmem.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	void *base;
	size_t len;   /* mapped, whole pages */
	size_t bytes; /* asked for */
	int fd;       /* -1: anonymous */
} Block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Block *blocks;
static size_t nblocks, capblocks;
static uint64_t budget; /* 0: no limit */
static char *spill_dir;
static BigmemStats stats;
static char failure[320]; /* the last file that could not be made, and why */

void bigmem_configure(uint64_t bytes, const char *dir)
{
	pthread_mutex_lock(&lock);
	budget = bytes;
	free(spill_dir);
	spill_dir = dir ? strdup(dir) : NULL;
	pthread_mutex_unlock(&lock);
}

uint64_t bigmem_budget(void)
{
	pthread_mutex_lock(&lock);
	uint64_t b = budget;
	pthread_mutex_unlock(&lock);
	return b;
}

const char *bigmem_temp_dir(const char *dir)
{
	if (!dir) dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

void bigmem_dir_of(char *out, size_t cap, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, cap, ".");
	else if (slash == path)
		snprintf(out, cap, "/");
	else
		snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

int bigmem_dir_blocked(const char *dir)
{
	struct stat st;
	return stat(dir, &st) != 0             ? errno
	       : !S_ISDIR(st.st_mode)          ? ENOTDIR
	       : access(dir, W_OK | X_OK) != 0 ? errno
	                                       : 0;
}

int bigmem_output_blocked(const char *path)
{
	char dir[4096];
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return EISDIR;
	bigmem_dir_of(dir, sizeof dir, path);
	return bigmem_dir_blocked(dir);
}

ssize_t bigmem_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR) continue;
		if (k < 0) return -1;
		if (k == 0) break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

int bigmem_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t k = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) {
			if (k == 0) errno = EIO;
			return -1;
		}
		done += (size_t)k;
	}
	return 0;
}

int bigmem_temp_fd(const char *dir)
{
	dir = bigmem_temp_dir(dir);
#ifdef O_TMPFILE
	int tfd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tfd >= 0) return tfd;
#endif
	size_t plen = strlen(dir) + 32;
	char *path = malloc(plen);
	if (!path) {
		errno = ENOMEM;
		return -1;
	}
	snprintf(path, plen, "%s/joseki-tmp-XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd >= 0) {
		unlink(path);
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	free(path);
	return fd;
}

/* The file grown to len bytes, its blocks taken now (a full disk is an error
 * here, not a SIGBUS when a page is first written). 0, or -1 with errno. */
static int file_grow(int fd, size_t from, size_t len)
{
	int e = posix_fallocate(fd, (off_t)from, (off_t)(len - from));
	if (e == EINVAL || e == EOPNOTSUPP) e = ftruncate(fd, (off_t)len) ? errno : 0;
	errno = e;
	return e ? -1 : 0;
}

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (bytes == 0) bytes = 1;
	return (bytes + page - 1) / page * page;
}

/* Whether len more anonymous bytes would pass the budget (lock held). */
static bool past_budget(size_t len)
{
	return budget && stats.anon_bytes + len > budget - budget / 4;
}

static void note_file(size_t len)
{
	stats.file_bytes += len;
	if (stats.file_bytes > stats.file_peak) stats.file_peak = stats.file_bytes;
}

/* Why a file could not be made or grown (lock held). */
static void note_failure(int e)
{
	snprintf(failure, sizeof failure, "%.240s: %s", bigmem_temp_dir(spill_dir), strerror(e));
}

/* A new mapping of len bytes, in a new file when file asks; the lock is
 * held. A file that cannot be made (a full disk, no such directory) is noted
 * (bigmem_failure) and the array made in memory instead: never worse than
 * before there was a budget. */
static int map_new(Block *b, size_t len, bool file)
{
	b->len = len;
	b->fd = -1;
	if (file) {
		int fd = bigmem_temp_fd(spill_dir);
		if (fd >= 0 && file_grow(fd, 0, len) == 0) {
			b->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (b->base != MAP_FAILED) {
				b->fd = fd;
				stats.files++;
				note_file(len);
				return 0;
			}
		}
		note_failure(errno);
		if (fd >= 0) close(fd);
	}
	b->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->base == MAP_FAILED) return -1;
	/* Huge pages where the kernel gives them on request (Debian's default
	 * "madvise"): a pass reads its arrays at random, and with 4 KiB pages
	 * nearly every such read also misses the TLB. Kept by mremap. */
	(void)madvise(b->base, len, MADV_HUGEPAGE);
	stats.anon_bytes += len;
	return 0;
}

static void unmap(const Block *b)
{
	munmap(b->base, b->len);
	if (b->fd >= 0) {
		close(b->fd);
		stats.file_bytes -= b->len;
	} else {
		stats.anon_bytes -= b->len;
	}
}

static Block *find(const void *p)
{
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].base == p) return &blocks[i];
	return NULL;
}

void *bigmem_alloc(size_t bytes)
{
	if (bytes < BIGMEM_SMALL) return calloc(1, bytes ? bytes : 1);
	size_t len = page_round(bytes);
	void *p = NULL;
	pthread_mutex_lock(&lock);
	if (nblocks == capblocks) {
		size_t nc = capblocks ? capblocks * 2 : 32;
		Block *nb = realloc(blocks, nc * sizeof *nb);
		if (!nb) {
			errno = ENOMEM;
			goto out;
		}
		blocks = nb;
		capblocks = nc;
	}
	Block b = {.bytes = bytes};
	if (map_new(&b, len, past_budget(len)) == 0) {
		blocks[nblocks++] = b;
		p = b.base;
	}
out:
	pthread_mutex_unlock(&lock);
	return p;
}

void bigmem_free(void *p)
{
	if (!p) return;
	pthread_mutex_lock(&lock);
	Block *b = find(p);
	if (b) {
		unmap(b);
		*b = blocks[--nblocks];
	}
	pthread_mutex_unlock(&lock);
	if (!b) free(p);
}

/* Moves block b into a new mapping of len bytes (map_new's file), its first
 * keep bytes copied. */
static int move_block(Block *b, size_t len, size_t keep, bool file)
{
	Block nb = {.bytes = b->bytes};
	if (map_new(&nb, len, file) < 0) return -1;
	memcpy(nb.base, b->base, keep);
	unmap(b);
	*b = nb;
	return 0;
}

void *bigmem_realloc(void *p, size_t bytes)
{
	if (!p) return bigmem_alloc(bytes);
	pthread_mutex_lock(&lock);
	Block *b = find(p);
	if (!b) {
		pthread_mutex_unlock(&lock);
		if (bytes < BIGMEM_SMALL) return realloc(p, bytes);
		/* malloc's grown large: made a mapping. */
		void *q = bigmem_alloc(bytes);
		if (!q) return NULL;
		size_t have = malloc_usable_size(p);
		memcpy(q, p, have < bytes ? have : bytes);
		free(p);
		return q;
	}
	size_t len = page_round(bytes), old = b->bytes;
	void *out = NULL;
	if (len == b->len) {
		out = b->base;
	} else if (b->fd < 0 && len > b->len && past_budget(len - b->len)) {
		if (move_block(b, len, old < bytes ? old : bytes, true) == 0) out = b->base;
	} else if (b->fd >= 0 && len > b->len && file_grow(b->fd, b->len, len) != 0) {
		/* Its file cannot grow: the array goes on in memory. */
		note_failure(errno);
		if (move_block(b, len, old < bytes ? old : bytes, false) == 0) out = b->base;
	} else {
		/* Grown or shrunk where it is (its file already grown). */
		void *np = mremap(b->base, b->len, len, MREMAP_MAYMOVE);
		if (np == MAP_FAILED) goto out;
		if (b->fd < 0) {
			stats.anon_bytes = stats.anon_bytes - b->len + len;
		} else {
			if (len < b->len) (void)ftruncate(b->fd, (off_t)len);
			stats.file_bytes -= b->len;
			note_file(len);
		}
		b->base = out = np;
		b->len = len;
	}
	if (out) b->bytes = bytes;
out:
	pthread_mutex_unlock(&lock);
	return out;
}

int bigmem_failure(char *buf, size_t len)
{
	pthread_mutex_lock(&lock);
	int any = failure[0] != 0;
	if (any) snprintf(buf, len, "%s", failure);
	pthread_mutex_unlock(&lock);
	return any;
}

void bigmem_stats(BigmemStats *out)
{
	pthread_mutex_lock(&lock);
	*out = stats;
	pthread_mutex_unlock(&lock);
}
