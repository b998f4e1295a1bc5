/* bookdb/compact.c — space in use and the compacting copy (bookdb.h). */
#include "bookdb/bookdb.h"
#include "bookdb/bookdb_priv.h"
#include "shogi/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- space and compaction ---- */

int bookdb_space(BookSpace *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	MDB_envinfo info;
	MDB_stat ms;
	int rc = mdb_env_info(t->db->env, &info);
	if (!rc) rc = mdb_env_stat(t->db->env, &ms); /* the main database: the named ones' roots */
	if (rc) return bdb_xlate(rc);
	out->page_size = ms.ms_psize;
	out->pages = (uint64_t)info.me_last_pgno + 1;
	out->pages_used = 2 + ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
	for (int d = 0; d < BOOKDB_NDBS; d++) {
		uint64_t p;
		unsigned ps;
		if ((rc = bookdb_pages(&p, &ps, t, (BookDbName)d))) return rc;
		out->pages_used += p;
	}
	/* The rest: free pages, and those a newer commit than t's snapshot took. */
	out->pages_free = out->pages > out->pages_used ? out->pages - out->pages_used : 0;
	return 0;
}

int bookdb_compact(const char *dir, uint64_t *before, uint64_t *after, char *err)
{
	*before = *after = 0;
	if (err) err[0] = 0;
	BookDB *db = NULL;
	BookDBOptions ro = {.read_only = true};
	int rc = bookdb_open(&db, dir, &ro, err); /* refuses a path over BOOKDB_DIR_MAX */
	if (rc) return rc;
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	snprintf(tmp, sizeof tmp, "%s/data.mdb.compact", dir);
	int fd = -1;
	/* No writer may have the data file open while it is replaced. */
	if ((rc = bdb_writers_lock(db, LOCK_EX, err))) goto done;
	*before = bookdb_file_size(db);
	/* A copy left by a compaction killed before its rename is not the book. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	if (fd < 0) {
		int e = errno;
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", tmp, strerror(e));
		goto done;
	}
	/* What is current in the book now stays so in the copy, which LMDB
	 * numbers afresh (bookdb.h, "Kept counts"): no writer can commit in
	 * between (the lock above). */
	BookTxn *t;
	BookCounts counts;
	BookScanKept scan = {0};
	if ((rc = bookdb_txn_begin(&t, db, false)) == 0) {
		if ((rc = bookdb_counts(&counts, t)) == 0) rc = bookdb_scan_get(&scan, t);
		bookdb_txn_abort(t);
	}
	if (rc) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, rc, "%.200s: %s", dir, bookdb_strerror(rc));
		goto done;
	}
	if ((rc = mdb_env_copyfd2(db->env, fd, MDB_CP_COMPACT)) ||
	    (rc = bdb_counts_restamp_copy(tmp, counts.kept, scan.current)) || fsync(fd) < 0) {
		int e = rc ? rc : errno;
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", tmp,
		                rc ? mdb_strerror(rc) : strerror(e));
		goto done;
	}
	close(fd);
	fd = -1;
	/* The copy is whole and on disk: the rename is the one step that
	 * switches the book, and either name is a complete book. */
	if (rename(tmp, path) < 0) {
		int e = errno;
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", path, strerror(e));
		goto done;
	}
	*after = bookdb_file_size(db);
	/* The rename is durable once the directory is on disk: until then a
	 * crash of the machine may bring the old file back (whole, so nothing
	 * is lost, but the caller must not report the compaction as done). */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* (EINVAL: a file system that cannot sync a directory; nothing to wait for) */
	if (dfd < 0 || (fsync(dfd) < 0 && errno != EINVAL)) {
		int e = errno;
		if (dfd >= 0) close(dfd);
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e),
		                "%.200s: the compacted book is in place, but syncing the directory "
		                "failed (%s): a crash now may bring back the uncompacted one",
		                dir, strerror(e));
		goto done;
	}
	close(dfd);
	rc = 0;
done:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	bookdb_free(db);
	return rc;
}
