/* ingest/walk.c — the inputs walked into game files (see walk.h). */
#include "ingest/walk.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "shogi/grow.h"

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcasecmp(s + a - b, suf);
}

bool walk_game_name(const char *name)
{
	static const char *const EXT[] = {".csa",  ".kif", ".kifu", ".ki2",
	                                  ".ki2u", ".jkf", ".usi",  ".sfen"};
	for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
		if (has_suffix(name, EXT[i])) return true;
	return false;
}

static bool is_archive_name(const char *s)
{
	static const char *const EXT[] = {".7z",     ".zip", ".tar",     ".tar.gz", ".tgz",
	                                  ".tar.xz", ".txz", ".tar.bz2", ".tbz2"};
	for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
		if (has_suffix(s, EXT[i])) return true;
	return false;
}

uint64_t walk_skipped(const WalkStats *st)
{
	return st->not_games + st->special + st->loops + st->broken + st->hidden;
}

size_t walk_skipped_text(const WalkStats *st, char *out, size_t cap)
{
	const struct {
		uint64_t n;
		const char *one, *many;
	} parts[] = {
	    {st->not_games, "file not named as a game file", "files not named as game files"},
	    {st->special, "special file", "special files"},
	    {st->loops, "link to a directory already walked",
	     "links to directories already walked"},
	    {st->broken, "broken link", "broken links"},
	    {st->hidden, "hidden file", "hidden files"},
	};
	size_t o = 0;
	if (cap) out[0] = 0;
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		if (!parts[i].n || o >= cap) continue;
		int k = snprintf(out + o, cap - o, "%s%llu %s", o ? ", " : "",
		                 (unsigned long long)parts[i].n,
		                 parts[i].n == 1 ? parts[i].one : parts[i].many);
		if (k > 0) o += (size_t)k < cap - o ? (size_t)k : cap - o - 1;
	}
	return o;
}

typedef struct {
	const WalkOptions *opt;
	WalkStats *st;
	/* directories entered, to know a loop */
	struct {
		dev_t dev;
		ino_t ino;
	} * dirs;
	size_t ndirs, cap;
} Walk;

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0) s = NULL;
	va_end(ap);
	return s;
}

/* Hands a file that could not be read to the callback. */
static int give_error(Walk *w, const char *name, int errnum, const char *fmt, const char *what)
{
	char *n = strdup(name), *e = str_printf(fmt, what);
	return w->opt->file(w->opt->ctx, n, NULL, 0, e, errnum);
}

static int read_all_fd(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			errno = e;
			return -1;
		}
		if (r == 0) break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int walk_archive(Walk *w, const char *path)
{
	struct archive *a = archive_read_new();
	if (!a) return give_error(w, path, ENOMEM, "cannot open archive: %s", "out of memory");
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	int rc = archive_read_open_filename(a, path, 1 << 16), ret = 0;
	if (rc != ARCHIVE_OK) {
		ret = give_error(w, path, 0, "cannot open archive: %s", archive_error_string(a));
		archive_read_free(a);
		return ret;
	}
	struct archive_entry *e;
	for (;;) {
		rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF) break;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
			ret = give_error(w, path, 0,
			                 "archive damaged or truncated: %s (rest skipped)",
			                 archive_error_string(a));
			break;
		}
		const char *ename = archive_entry_pathname(e);
		if (archive_entry_filetype(e) != AE_IFREG) {
			archive_read_data_skip(a);
			continue;
		}
		if (!ename || !walk_game_name(ename)) {
			if (w->st) w->st->not_games++;
			archive_read_data_skip(a);
			continue;
		}
		size_t cap = archive_entry_size_is_set(e) && archive_entry_size(e) > 0
		                 ? (size_t)archive_entry_size(e) + 1
		                 : 1 << 14;
		char *buf = malloc(cap);
		size_t n = 0;
		bool bad = !buf, oom = !buf;
		for (; buf;) {
			if (n + 1 >= cap) {
				cap *= 2;
				char *nb = realloc(buf, cap);
				if (!nb) {
					bad = oom = true;
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
		char *name = str_printf("%s:%s", path, ename);
		if (bad) {
			free(buf);
			ret = w->opt->file(
			    w->opt->ctx, name, NULL, 0,
			    str_printf("archive entry unreadable: %s (rest skipped)",
			               oom ? "out of memory" : archive_error_string(a)),
			    oom ? ENOMEM : 0);
			break;
		}
		if (w->st) w->st->entries++;
		if ((ret = w->opt->file(w->opt->ctx, name, buf, n, NULL, 0))) break;
	}
	archive_read_free(a);
	return ret;
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_path(Walk *w, const char *path, bool named);

/* Enters the directory (dev, ino) unless the walk was there before. */
static bool enter_dir(Walk *w, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].dev == dev && w->dirs[i].ino == ino) return false;
	if (array_grow((void **)&w->dirs, &w->cap, w->ndirs + 1, sizeof *w->dirs, 16))
		return true; /* out of memory: walked, without the loop check */
	w->dirs[w->ndirs].dev = dev;
	w->dirs[w->ndirs++].ino = ino;
	return true;
}

static int walk_dir(Walk *w, const char *path)
{
	if (pseudo_fs(path)) {
		if (w->st) w->st->special++;
		return 0;
	}
	if (w->opt->dir) {
		int rc = w->opt->dir(w->opt->ctx, path, w->st);
		if (rc) return rc;
	}
	DIR *d = opendir(path);
	if (!d) return give_error(w, path, errno, "cannot open directory: %s", strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int ret = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
		if (de->d_name[0] == '.') {
			if (w->st) w->st->hidden++;
			continue;
		}
		char *name = NULL;
		if (array_grow((void **)&names, &cap, n + 1, sizeof *names, 64) ||
		    !(name = str_printf("%s/%s", path, de->d_name))) {
			free(name);
			ret = give_error(w, path, ENOMEM, "cannot read directory: %s",
			                 "out of memory");
			break;
		}
		names[n++] = name;
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str); /* input order is part of the result */
	size_t i = 0;
	for (; i < n && !ret; i++) {
		ret = walk_path(w, names[i], false);
		free(names[i]);
	}
	for (; i < n; i++) free(names[i]);
	free(names);
	return ret;
}

static int read_file(Walk *w, const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t len;
	if (!f || read_all_fd(fileno(f), &buf, &len) < 0) {
		int e = errno;
		if (f) fclose(f);
		return give_error(w, path, e, "cannot read: %s", strerror(e));
	}
	fclose(f);
	char *name = strdup(path);
	return w->opt->file(w->opt->ctx, name, buf, len, NULL, 0);
}

static int walk_path(Walk *w, const char *path, bool named)
{
	if (named && !strcmp(path, "-")) {
		char *buf;
		size_t len;
		if (read_all_fd(0, &buf, &len) < 0)
			return give_error(w, "-", errno, "cannot read standard input: %s",
			                  strerror(errno));
		return w->opt->file(w->opt->ctx, strdup("-"), buf, len, NULL, 0);
	}
	struct stat sb;
	if (stat(path, &sb) < 0) {
		if (named) return give_error(w, path, errno, "cannot read: %s", strerror(errno));
		/* a link to nothing, or an entry gone meanwhile */
		if (w->st) w->st->broken++;
		return 0;
	}
	if (S_ISDIR(sb.st_mode)) {
		if (!enter_dir(w, sb.st_dev, sb.st_ino)) {
			if (w->st) w->st->loops++;
			return 0;
		}
		return walk_dir(w, path);
	}
	if (!named && !S_ISREG(sb.st_mode)) {
		/* devices, sockets, FIFOs: a read could block forever */
		if (w->st) w->st->special++;
		return 0;
	}
	/* A file looked at: every regular file in a directory, and every file
	 * named but an archive (whose entries are what is read). */
	bool archive = is_archive_name(path);
	if (w->st && (named ? !archive : S_ISREG(sb.st_mode))) w->st->files++;
	if (archive) return walk_archive(w, path);
	if (!named && !walk_game_name(path)) {
		if (w->st) w->st->not_games++;
		return 0;
	}
	return read_file(w, path);
}

int walk_inputs(const char *const *inputs, size_t n, const WalkOptions *opt, WalkStats *st)
{
	Walk w = {.opt = opt, .st = st};
	int ret = 0;
	for (size_t i = 0; i < n && !ret; i++) {
		w.ndirs = 0; /* a directory named twice is walked twice, as asked */
		ret = walk_path(&w, inputs[i], true);
	}
	free(w.dirs);
	return ret;
}
