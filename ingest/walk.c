/* ingest/walk.c — the inputs walked into game files (see walk.h). */
#include "ingest/walk.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* Appends to out (cap bytes, o used) as snprintf would; returns the new o. */
static size_t append(char *out, size_t cap, size_t o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t append(char *out, size_t cap, size_t o, const char *fmt, ...)
{
	if (o + 1 >= cap) return o;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(out + o, cap - o, fmt, ap);
	va_end(ap);
	return k < 0 ? o : (size_t)k < cap - o ? o + (size_t)k : cap - 1;
}

size_t walk_skipped_text(const WalkStats *st, char *out, size_t cap)
{
	const struct {
		uint64_t n;
		const char *one, *many;
	} parts[WALK_KINDS] = {
	    {st->not_games, "file not named as a game file", "files not named as game files"},
	    {st->special, "special file", "special files"},
	    {st->loops, "link to a directory already walked",
	     "links to directories already walked"},
	    {st->broken, "broken link", "broken links"},
	    {st->hidden, "hidden file", "hidden files"},
	};
	size_t o = 0;
	if (cap) out[0] = 0;
	for (int i = 0; i < WALK_KINDS; i++) {
		if (!parts[i].n) continue;
		o = append(out, cap, o, "%s%llu %s (", o ? ", " : "",
		           (unsigned long long)parts[i].n,
		           parts[i].n == 1 ? parts[i].one : parts[i].many);
		for (uint64_t k = 0; k < parts[i].n && k < WALK_NAMES_KEPT; k++)
			o = append(out, cap, o, "%s%s", k ? ", " : "", st->left_out[i][k]);
		o = append(out, cap, o, "%s)", parts[i].n > WALK_NAMES_KEPT ? ", ..." : "");
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

/* Counts what is left out, of kind (WALK_NOT_GAME...), and keeps its name
 * when it is among the first few. */
static void left_out(Walk *w, int kind, const char *name)
{
	if (!w->st) return;
	uint64_t *n[WALK_KINDS] = {&w->st->not_games, &w->st->special, &w->st->loops,
	                           &w->st->broken, &w->st->hidden};
	if (*n[kind] < WALK_NAMES_KEPT) {
		char *to = w->st->left_out[kind][*n[kind]];
		size_t len = strlen(name);
		if (len < WALK_NAME_MAX)
			memcpy(to, name, len + 1);
		else
			snprintf(to, WALK_NAME_MAX, "%.*s...", WALK_NAME_MAX - 4, name);
	}
	(*n[kind])++;
}

/* Hands a file that could not be read (from line on, 0: at all) to the
 * callback. */
static int give_error(Walk *w, const char *name, int line, int errnum, const char *fmt,
                      const char *what)
{
	WalkFile f = {.name = strdup(name),
	              .line = line,
	              .error = str_printf(fmt, what),
	              .errnum = errnum,
	              .format = KIFU_CSA};
	return w->opt->file(w->opt->ctx, &f);
}

/* A source of an input's bytes: a file descriptor or an archive's entry. */
typedef struct {
	int fd;            /* >= 0: read(2) from it */
	struct archive *a; /* else the entry under way */
	const char *why;   /* after a failed read: what went wrong (archive) */
} Source;

static ssize_t source_read(Source *src, char *buf, size_t n)
{
	if (src->fd >= 0) {
		for (;;) {
			ssize_t r = read(src->fd, buf, n);
			if (r >= 0 || errno != EINTR) return r;
		}
	}
	la_ssize_t r = archive_read_data(src->a, buf, n);
	if (r < 0) src->why = walk_archive_why(src->a);
	return r < 0 ? -1 : (ssize_t)r;
}

const char *walk_archive_why(struct archive *a)
{
	const char *s = archive_error_string(a);
	return s ? s : "libarchive gives no reason";
}

#define READ_CHUNK (64 << 10)

/*
 * Reads one input (name) from src, handing it on in the parts WalkCut cuts
 * (walk.h): memory holds at most a part and a record, whatever the input's
 * size. what says how to name a failed read ("cannot read: %s"). Returns
 * what the callback returned, or 0.
 */
static int read_input(Walk *w, const char *name, Source *src, const char *what, bool *read_failed)
{
	*read_failed = false;
	WalkCut c;
	walk_cut_init(&c, name);
	size_t cap = READ_CHUNK * 2, len = 0;
	char *buf = malloc(cap);
	bool eof = false;
	int ret = 0;
	if (!buf) return give_error(w, name, 0, ENOMEM, what, "out of memory");
	for (;;) {
		size_t n;
		int r = walk_cut_next(&c, buf, len, eof, &n);
		if (r == WALK_CUT_PART) {
			/* The part in a buffer of its own; the rest stays. */
			char *part = n == len ? buf : malloc(n ? n : 1);
			char *pname = strdup(name);
			if (!part || !pname) {
				free(part != buf ? part : NULL);
				free(pname);
				ret =
				    give_error(w, name, c.part_line, ENOMEM, what, "out of memory");
				break;
			}
			if (part != buf) {
				memcpy(part, buf, n);
				memmove(buf, buf + n, len - n);
			} else {
				buf = NULL;
				cap = 0;
			}
			len -= n;
			WalkFile f = {.name = pname,
			              .buf = part,
			              .len = n,
			              .line = c.part_line,
			              .format = (KifuFormat)c.format};
			if ((ret = w->opt->file(w->opt->ctx, &f))) break;
			continue;
		}
		if (r == WALK_CUT_END) break;
		if (r == WALK_CUT_ERROR) {
			if (w->st) w->st->refused++;
			int line = c.err_line > (uint64_t)INT32_MAX ? INT32_MAX : (int)c.err_line;
			ret = give_error(w, name, line, 0, "%s", c.err);
			break;
		}
		if (len + READ_CHUNK > cap) {
			size_t nc = cap ? cap * 2 : READ_CHUNK * 2;
			while (nc < len + READ_CHUNK) nc *= 2;
			char *nb = realloc(buf, nc);
			if (!nb) {
				*read_failed = true;
				ret = give_error(w, name, 0, ENOMEM, what, "out of memory");
				break;
			}
			buf = nb;
			cap = nc;
		}
		ssize_t got = source_read(src, buf + len, READ_CHUNK);
		if (got < 0) {
			int e = errno;
			*read_failed = true;
			ret = give_error(w, name, 0, src->fd >= 0 ? e : 0, what,
			                 src->fd >= 0 ? strerror(e) : src->why);
			break;
		}
		if (got == 0) eof = true;
		len += (size_t)got;
	}
	free(buf);
	return ret;
}

static int walk_archive(Walk *w, const char *path)
{
	struct archive *a = archive_read_new();
	if (!a) return give_error(w, path, 0, ENOMEM, "cannot open archive: %s", "out of memory");
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	int rc = archive_read_open_filename(a, path, 1 << 16), ret = 0;
	if (rc != ARCHIVE_OK) {
		ret = give_error(w, path, 0, 0, "cannot open archive: %s", walk_archive_why(a));
		archive_read_free(a);
		return ret;
	}
	struct archive_entry *e;
	for (;;) {
		rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF) break;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
			ret = give_error(w, path, 0, 0,
			                 "archive damaged or truncated: %s (rest skipped)",
			                 walk_archive_why(a));
			break;
		}
		const char *ename = archive_entry_pathname(e);
		if (archive_entry_filetype(e) != AE_IFREG) {
			archive_read_data_skip(a);
			continue;
		}
		if (!ename || !walk_game_name(ename)) {
			char *name = str_printf("%s:%s", path, ename ? ename : "?");
			left_out(w, WALK_NOT_GAME, name ? name : path);
			free(name);
			archive_read_data_skip(a);
			continue;
		}
		char *name = str_printf("%s:%s", path, ename);
		if (!name) {
			ret = give_error(w, path, 0, ENOMEM, "archive entry unreadable: %s",
			                 "out of memory");
			break;
		}
		if (w->st) w->st->entries++;
		Source src = {.fd = -1, .a = a};
		bool failed;
		/* An entry that is no game record is refused alone; one that cannot
		 * be read ends the archive (its data stream is lost). */
		ret = read_input(w, name, &src, "archive entry unreadable: %s (rest skipped)",
		                 &failed);
		free(name);
		if (ret || failed) break;
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

/* The first failure to list the directory at path (opendir, or readdir on
 * its entries: /proc/1/map_files opens and then refuses them), 0 if none. */
static int list_error(const char *path)
{
	DIR *d = opendir(path);
	if (!d) return errno;
	int e;
	do {
		errno = 0;
	} while (readdir(d));
	e = errno;
	closedir(d);
	return e;
}

/* Walks the directory at path; named: given on the command line. A kernel
 * file system's is left out, but a named one that cannot be listed is an
 * error, as any directory that cannot be listed is. */
static int walk_dir(Walk *w, const char *path, bool named)
{
	if (pseudo_fs(path)) {
		int e = named ? list_error(path) : 0;
		if (e) return give_error(w, path, 0, e, "cannot read directory: %s", strerror(e));
		left_out(w, WALK_SPECIAL, path);
		return 0;
	}
	if (w->opt->dir) {
		int rc = w->opt->dir(w->opt->ctx, path, w->st);
		if (rc) return rc;
	}
	DIR *d = opendir(path);
	if (!d) return give_error(w, path, 0, errno, "cannot open directory: %s", strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int ret = 0;
	/* A directory opened may still fail to give its entries (an I/O error; a
	 * kernel file system's, as /proc/1/map_files, is met above). */
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			int e = errno;
			if (e)
				ret = give_error(w, path, 0, e, "cannot read directory: %s",
				                 strerror(e));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
		if (de->d_name[0] == '.') {
			char *name = str_printf("%s/%s", path, de->d_name);
			left_out(w, WALK_HIDDEN, name ? name : path);
			free(name);
			continue;
		}
		char *name = NULL;
		if (array_grow((void **)&names, &cap, n + 1, sizeof *names, 64) ||
		    !(name = str_printf("%s/%s", path, de->d_name))) {
			free(name);
			ret = give_error(w, path, 0, ENOMEM, "cannot read directory: %s",
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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return give_error(w, path, 0, errno, "cannot read: %s", strerror(errno));
	Source src = {.fd = fd};
	bool failed;
	int ret = read_input(w, path, &src, "cannot read: %s", &failed);
	close(fd);
	return ret;
}

static int walk_path(Walk *w, const char *path, bool named)
{
	if (named && !strcmp(path, "-")) {
		Source src = {.fd = 0};
		bool failed;
		return read_input(w, "-", &src, "cannot read standard input: %s", &failed);
	}
	struct stat sb;
	if (stat(path, &sb) < 0) {
		if (named) return give_error(w, path, 0, errno, "cannot read: %s", strerror(errno));
		/* a link to nothing, or an entry gone meanwhile */
		left_out(w, WALK_BROKEN, path);
		return 0;
	}
	if (S_ISDIR(sb.st_mode)) {
		if (!enter_dir(w, sb.st_dev, sb.st_ino)) {
			left_out(w, WALK_LOOP, path);
			return 0;
		}
		return walk_dir(w, path, named);
	}
	if (!named && !S_ISREG(sb.st_mode)) {
		/* devices, sockets, FIFOs: a read could block forever */
		left_out(w, WALK_SPECIAL, path);
		return 0;
	}
	/* A file looked at: every regular file in a directory, and every file
	 * named but an archive (whose entries are what is read). */
	bool archive = is_archive_name(path);
	if (w->st && (named ? !archive : S_ISREG(sb.st_mode))) w->st->files++;
	if (archive) return walk_archive(w, path);
	if (!named && !walk_game_name(path)) {
		left_out(w, WALK_NOT_GAME, path);
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
