/* bookdb/backup.c — a consistent, checked copy of a live book (backup.h). */
#include "bookdb/backup.h"
#include "bookdb/bookdb_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shogi/errmsg.h"

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

static int fsync_parent(const char *path)
{
	char *copy = strdup(path);
	if (!copy) return -1;
	int rc = fsync_dir(dirname(copy));
	free(copy);
	return rc;
}

typedef struct {
	MDB_env *env;
	int fd, rc;
	bool compact;     /* rebuilt into full pages (bdb_rebuild) at path */
	const char *path; /* the copy's data file (fd) */
	uint64_t src_bytes;
	atomic_uint_fast64_t copied; /* compact: the records put */
} Copy;

static void copy_main(void *arg)
{
	Copy *c = arg;
	/* A rebuilt copy's transactions are numbered afresh: the kept counts it
	 * copied (stamped with the source's) are dropped rather than left to a
	 * stamp that might match by chance; its next write counts them. */
	if (!c->compact)
		c->rc = mdb_env_copyfd2(c->env, c->fd, 0);
	else if ((c->rc = bdb_rebuild(c->env, c->src_bytes, c->path, NULL, &c->copied)) == 0)
		c->rc = bdb_counts_restamp_copy(c->path, false, false, NULL);
}

/* The caller's progress, told which phase it is in. */
typedef struct {
	BookBackupProgressFn fn;
	void *ctx;
	const char *name; /* "copy", "records", "check" */
} Phase;

static void phase_progress(void *ctx, uint64_t done, uint64_t total)
{
	Phase *p = ctx;
	p->fn(p->ctx, p->name, done, total);
}

int bookdb_backup(BookBackupStats *st, BookDB *db, const char *dir, bool compact,
                  BookBackupProgressFn progress, void *ctx, char *err)
{
	memset(st, 0, sizeof *st);
	if (err) err[0] = 0;
	struct stat sb;
	if (strlen(dir) > BOOKDB_DIR_MAX - 16)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL, "%.100s...: path too long",
		                  dir);
	if (stat(dir, &sb) == 0 || errno != ENOENT)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
		                  "%s: exists already (a backup goes to a new directory)", dir);
	char tmp[BOOKDB_PATH_LEN], data[BOOKDB_PATH_LEN + 16];
	snprintf(tmp, sizeof tmp, "%s.partial", dir);
	snprintf(data, sizeof data, "%s/data.mdb", tmp);
	/* What a killed backup left is not a backup. */
	bookdb_remove_new(tmp);
	/* (Named as the user gave it: DIR.partial fails as DIR would.) */
	if (mkdir(tmp, 0777) < 0)
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%s: cannot create: %s",
		                  dir, strerror(errno));
	st->source_bytes = bookdb_file_size(db);
	int rc = 0;
	Copy c = {.env = db->env, .compact = compact, .path = data, .src_bytes = st->source_bytes};
	atomic_init(&c.copied, 0);
	/* How far it is: a compacting copy's records of the book's, a copy's
	 * bytes of the file up to its last page. */
	uint64_t copy_total = st->source_bytes;
	BookTxn *t;
	BookSpace space;
	if (bookdb_txn_begin(&t, db, false) == 0) {
		if (compact) {
			if (bookdb_count(&copy_total, t, BOOKDB_POS) < 0) copy_total = 0;
		} else if (bookdb_space(&space, t) == 0) {
			copy_total = space.pages * space.page_size;
		}
		bookdb_txn_abort(t);
	}
	c.fd = open(data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	if (c.fd < 0) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%s: %s", data,
		                strerror(errno));
		goto fail;
	}
	/* The copy runs on a thread of its own, so that this one can report. */
	Phase ph = {progress, ctx, compact ? "records" : "copy"};
	bdb_run_watched(copy_main, &c, compact ? &c.copied : NULL, data, copy_total,
	                progress ? phase_progress : NULL, &ph);
	if (c.rc) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(c.rc), "%s: %s",
		                c.rc == BDB_HIDDEN ? bookdb_dir(db) : data,
		                bdb_rebuild_strerror(c.rc));
		goto fail;
	}
	if (fsync(c.fd) < 0 || fstat(c.fd, &sb) < 0) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%s: %s", data,
		                strerror(errno));
		goto fail;
	}
	st->bytes = (uint64_t)sb.st_size;
	close(c.fd);
	c.fd = -1;
	if (fsync_dir(tmp) < 0) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%s: %s", tmp,
		                strerror(errno));
		goto fail;
	}
	/* The copy is whole on disk: check it as joseki check would. */
	BookDB *copy = NULL;
	BookDBOptions ro = {.read_only = true, .random = true}; /* passes read ahead: bookdb.h */
	if ((rc = bookdb_open(&copy, tmp, &ro, err)) < 0) goto fail;
	ph.name = "check";
	rc = bookdb_check(&st->check, copy, NULL, NULL, NULL, progress ? phase_progress : NULL, &ph,
	                  err);
	bookdb_free(copy);
	if (rc < 0) goto fail;
	if (st->check.bad || st->check.bad_games || st->check.stopped || st->check.unread) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                "%s: the copy failed its check (%llu bad records%s, %llu of %llu "
		                "unreadable); no backup made",
		                tmp, (unsigned long long)st->check.bad,
		                st->check.stopped ? ", stopped past a record" : "",
		                (unsigned long long)st->check.unread,
		                (unsigned long long)st->check.expected);
		goto fail;
	}
	/* The one step that makes DIR: before it there is none, after it a whole one. */
	if (rename(tmp, dir) < 0) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%s: %s", dir,
		                strerror(errno));
		goto fail;
	}
	if (fsync_parent(dir) < 0)
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno),
		                  "%s: made, but its directory entry may not be on disk: %s", dir,
		                  strerror(errno));
	return 0;
fail:
	if (c.fd >= 0) close(c.fd);
	bookdb_remove_new(tmp);
	return rc;
}
