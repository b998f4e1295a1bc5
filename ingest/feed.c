/* ingest/feed.c — the feeder: inputs to units (ingest_priv.h). */
#include "ingest/ingest_priv.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "ingest/csa.h"
#include "ingest/replay.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

/* ---- feeder ------------------------------------------------------------ */

static void feed_unit(Pipe *p, char *name, char *buf, size_t len, char *error)
{
	pthread_mutex_lock(&p->mu);
	while (!p->abort && p->produced - p->consumed >= p->window)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->abort) {
		pthread_mutex_unlock(&p->mu);
		free(name);
		free(buf);
		free(error);
		return;
	}
	Unit *u = &p->units[p->produced % p->window];
	u->name = name;
	u->buf = buf;
	u->len = len;
	u->error = error;
	Result *r = &p->results[p->produced % p->window];
	memset(r, 0, sizeof *r);
	p->produced++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcasecmp(s + a - b, suf);
}

static bool is_archive_name(const char *s)
{
	static const char *const EXT[] = {".7z",     ".zip", ".tar",     ".tar.gz", ".tgz",
	                                  ".tar.xz", ".txz", ".tar.bz2", ".tbz2"};
	for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
		if (has_suffix(s, EXT[i])) return true;
	return false;
}

static int read_all_fd(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		ing_out_of_memory();
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				ing_out_of_memory();
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			free(buf);
			return -1;
		}
		if (r == 0) break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static void feed_archive(Pipe *p, const char *path, int fd)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	int rc = fd >= 0 ? archive_read_open_fd(a, fd, 1 << 16)
	                 : archive_read_open_filename(a, path, 1 << 16);
	if (rc != ARCHIVE_OK) {
		feed_unit(p, ing_strdup(path), NULL, 0,
		          ing_printf("cannot open archive: %s", archive_error_string(a)));
		archive_read_free(a);
		return;
	}
	struct archive_entry *e;
	for (;;) {
		rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF) break;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
			feed_unit(p, ing_strdup(path), NULL, 0,
			          ing_printf("archive damaged or truncated: %s (rest skipped)",
			                     archive_error_string(a)));
			break;
		}
		const char *ename = archive_entry_pathname(e);
		if (archive_entry_filetype(e) != AE_IFREG || !ename || !has_suffix(ename, ".csa")) {
			archive_read_data_skip(a);
			continue;
		}
		size_t cap = archive_entry_size_is_set(e) && archive_entry_size(e) > 0
		                 ? (size_t)archive_entry_size(e) + 1
		                 : 1 << 14;
		char *buf = malloc(cap);
		size_t n = 0;
		bool bad = !buf;
		if (!buf) ing_out_of_memory();
		for (; buf;) {
			if (n + 1 >= cap) {
				cap *= 2;
				char *nb = realloc(buf, cap);
				if (!nb) {
					ing_out_of_memory();
					bad = true;
					break;
				}
				buf = nb;
			}
			la_ssize_t r = archive_read_data(a, buf + n, cap - n - 1);
			if (r < 0) {
				bad = true;
				break;
			}
			if (r == 0) break;
			n += (size_t)r;
		}
		char *name = ing_printf("%s:%s", path, ename);
		if (bad) {
			free(buf);
			feed_unit(p, name, NULL, 0,
			          ing_printf("archive entry unreadable: %s (rest skipped)",
			                     archive_error_string(a)));
			break;
		}
		feed_unit(p, name, buf, n, NULL);
	}
	archive_read_free(a);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void feed_path(Pipe *p, const char *path, bool explicit_arg);
/* True when it is time for another progress line (and takes the turn). */
bool ing_progress_due(Pipe *p)
{
	if (!p->opt->progress) return false;
	double t = clock_s();
	pthread_mutex_lock(&p->mu);
	bool due = t - p->last_progress > 0.25;
	if (due) p->last_progress = t;
	pthread_mutex_unlock(&p->mu);
	return due;
}

/* Kernel file systems that hold no game records, only endless or special
 * files: a walk of / skips them. (/dev is tmpfs, like /tmp: walked, and its
 * devices skipped as every special file is.) */
static bool pseudo_fs(const char *path)
{
	struct statfs fs;
	if (statfs(path, &fs) < 0) return false;
	switch ((unsigned long)fs.f_type) {
	case 0x9fa0:     /* proc */
	case 0x62656572: /* sysfs */
	case 0x1cd1:     /* devpts */
	case 0x27e0eb:   /* cgroup */
	case 0x63677270: /* cgroup2 */
	case 0x64626720: /* debugfs */
	case 0x73636673: /* securityfs */
	case 0x74726163: /* tracefs */
	case 0x6165676c: /* pstore */
	case 0xcafe4a11: /* bpf */
	case 0x62656570: /* configfs */
	case 0x19800202: /* mqueue */
	case 0x958458f6: /* hugetlbfs */
	case 0x65735546: /* fusectl */
	case 0x6e736673: /* nsfs */
		return true;
	default:
		return false;
	}
}

static void feed_dir(Pipe *p, const char *path)
{
	if (pseudo_fs(path)) return;
	if (ing_progress_due(p)) {
		double el = clock_s() - p->t0;
		fprintf(stderr, "\r  ingest: %llu files looked at (%.0f/s), in %.60s\033[K",
		        (unsigned long long)p->files_seen, p->files_seen / (el > 1e-9 ? el : 1e-9),
		        path);
	}
	DIR *d = opendir(path);
	if (!d) {
		feed_unit(p, ing_strdup(path), NULL, 0,
		          ing_printf("cannot open directory: %s", strerror(errno)));
		return;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') continue;
		if (array_grow((void **)&names, &cap, n + 1, sizeof *names, 64)) {
			ing_out_of_memory();
			break;
		}
		char *name = ing_printf("%s/%s", path, de->d_name);
		if (!name) break;
		names[n++] = name;
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str); /* input order is part of the result */
	size_t i = 0;
	for (; i < n && !p->abort; i++) {
		/* Inside a directory only directories and regular files are read:
		 * no symbolic links (a link to a parent would walk forever), no
		 * devices, sockets or FIFOs (a read could block forever). */
		struct stat sb;
		if (lstat(names[i], &sb) == 0 && (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))) {
			if (S_ISREG(sb.st_mode)) p->files_seen++;
			feed_path(p, names[i], false);
		}
		free(names[i]);
	}
	for (; i < n; i++) free(names[i]);
	free(names);
}

static void feed_path(Pipe *p, const char *path, bool explicit_arg)
{
	if (!strcmp(path, "-")) {
		char *buf;
		size_t len;
		if (read_all_fd(0, &buf, &len) < 0)
			feed_unit(p, ing_strdup("-"), NULL, 0,
			          ing_printf("cannot read standard input: %s", strerror(errno)));
		else
			feed_unit(p, ing_strdup("-"), buf, len, NULL);
		return;
	}
	struct stat sb;
	if (stat(path, &sb) < 0) {
		feed_unit(p, ing_strdup(path), NULL, 0,
		          ing_printf("cannot read: %s", strerror(errno)));
		return;
	}
	if (S_ISDIR(sb.st_mode)) {
		feed_dir(p, path);
		return;
	}
	if (is_archive_name(path)) {
		feed_archive(p, path, -1);
		return;
	}
	if (explicit_arg) p->files_seen++;
	if (!explicit_arg && !has_suffix(path, ".csa")) return;
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t len;
	if (!f || read_all_fd(fileno(f), &buf, &len) < 0) {
		if (errno == ENOMEM) ing_out_of_memory();
		feed_unit(p, ing_strdup(path), NULL, 0,
		          ing_printf("cannot read: %s", strerror(errno)));
		if (f) fclose(f);
		return;
	}
	fclose(f);
	feed_unit(p, ing_strdup(path), buf, len, NULL);
}

void *ing_feeder_main(void *arg)
{
	Pipe *p = arg;
	for (size_t i = 0; i < p->ninputs && !p->abort; i++) feed_path(p, p->inputs[i], true);
	pthread_mutex_lock(&p->mu);
	p->feed_done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}
