/* bookdb/bookdb.c — the LMDB environment, transactions with automatic map growth,
 * reads, writes and iteration. See bookdb.h for the rules; the change log is in
 * changes.c, the batched writer in writer.c, compaction in compact.c. */
#include "bookdb/bookdb.h"
#include "bookdb/bookdb_priv.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/memuse.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

const char *const DB_NAMES[BOOKDB_NDBS] = {"meta", "pos", "games", "work", "changes", "marks"};

const char *bookdb_strerror(int code)
{
	switch (code) {
	case BOOKDB_OK:
		return "success";
	case BOOKDB_ENOTFOUND:
		return "not found";
	case BOOKDB_ECORRUPT:
		return "corrupt record or database";
	case BOOKDB_EVERSION:
		return "book has another schema version";
	case BOOKDB_ENOBOOK:
		return "no book there";
	case BOOKDB_EREADONLY:
		return "book opened read-only";
	case BOOKDB_EBUSY:
		return "book busy (too many readers or locked)";
	case BOOKDB_EIO:
		return "I/O or permission error";
	case BOOKDB_ENOMEM:
		return "out of memory";
	case BOOKDB_ELMDB:
		return "LMDB error";
	case BOOKDB_EINVAL:
		return "invalid argument";
	case BOOKDB_ENOSPC:
		return "no space left on device (disk full)";
	case BOOKDB_ESTOPPED:
		return "stopped";
	case BOOKDB_ESTALE:
		return "the book's file was replaced";
	default:
		return "unknown bookdb error";
	}
}

/* LMDB and errno codes to ours: the only place they are interpreted. */

/*
 * A failed commit: LMDB reports a short write — what a full file system gives
 * — as EIO. Told apart by the space left where the book is (under 16 MiB: the
 * disk is full, which the user can fix; else an I/O error).
 */
/* Bytes free to this user on the file system that holds dir (UINT64_MAX
 * when it cannot be told). */
static uint64_t dir_free_bytes(const char *dir)
{
	struct statvfs vs;
	if (statvfs(dir, &vs) != 0) return UINT64_MAX;
	return (uint64_t)vs.f_bavail * vs.f_frsize;
}

int bdb_commit_err(const char *dir, int rc)
{
	int r = bdb_xlate(rc);
	if (r != BOOKDB_EIO) return r;
	return dir_free_bytes(dir) < (16u << 20) ? BOOKDB_ENOSPC : r;
}

int bdb_xlate(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return BOOKDB_ENOTFOUND;
	case MDB_CORRUPTED:
	case BDB_HIDDEN:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
		return BOOKDB_ECORRUPT;
	case MDB_READERS_FULL:
	case EAGAIN:
	case EBUSY:
		return BOOKDB_EBUSY;
	case ENOENT:
		return BOOKDB_ENOBOOK;
	case EACCES:
	case EPERM:
	case EROFS:
	case EIO:
		return BOOKDB_EIO;
	case ENOSPC:
		return BOOKDB_ENOSPC;
	case ENOMEM:
		return BOOKDB_ENOMEM;
	case EINVAL:
		return BOOKDB_EINVAL;
	default:
		return BOOKDB_ELMDB;
	}
}

size_t bookdb_map_size(BookDB *db)
{
	MDB_envinfo info;
	mdb_env_info(db->env, &info);
	return info.me_mapsize;
}

const char *bookdb_dir(const BookDB *db)
{
	return db->dir;
}

bool bookdb_same_book(const char *a, const char *b)
{
	char pa[BOOKDB_PATH_LEN], pb[BOOKDB_PATH_LEN];
	struct stat sa, sb;
	snprintf(pa, sizeof pa, "%s/data.mdb", a);
	snprintf(pb, sizeof pb, "%s/data.mdb", b);
	return stat(pa, &sa) == 0 && stat(pb, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int bookdb_stamp(BookStamp *out, BookDB *db)
{
	char path[BOOKDB_PATH_LEN];
	struct stat st;
	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "%s/data.mdb", db->dir);
	if (stat(path, &st) != 0) return BOOKDB_EIO;
	BookTxn *t;
	BookChangesInfo ci;
	int rc = bookdb_txn_begin(&t, db, false);
	if (rc < 0) return rc;
	if ((rc = bookdb_changes_info(&ci, t)) == 0) {
		out->dev = (uint64_t)st.st_dev;
		out->ino = (uint64_t)st.st_ino;
		out->txnid = (uint64_t)mdb_txn_id(t->txn);
		out->chg_state = (uint64_t)ci.state;
		out->chg_seq = ci.seq;
	}
	bookdb_txn_abort(t);
	return rc;
}

uint64_t bookdb_file_size(BookDB *db)
{
	char path[BOOKDB_PATH_LEN];
	struct stat st;
	snprintf(path, sizeof path, "%s/data.mdb", db->dir);
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

uint64_t bookdb_free_bytes(BookDB *db)
{
	return dir_free_bytes(db->dir);
}

/* Doubles the map. No transaction of this process may be open. */
static int grow_map(BookDB *db)
{
	size_t cur = bookdb_map_size(db);
	int rc = mdb_env_set_mapsize(db->env, cur * 2);
	bdb_damage_watch(db, true);
	return rc ? bdb_xlate(rc) : 0;
}

static int begin_raw(MDB_txn **out, BookDB *db, bool write)
{
	if (!db->env) return BOOKDB_ELMDB; /* lost in bookdb_rebuild_rewrite */
	for (int tries = 0;; tries++) {
		int rc = mdb_txn_begin(db->env, NULL, write ? 0 : MDB_RDONLY, out);
		/* Another process grew the map: adopt its size and retry. */
		if (rc == MDB_MAP_RESIZED && tries < 3) {
			if ((rc = mdb_env_set_mapsize(db->env, 0))) return bdb_xlate(rc);
			bdb_damage_watch(db, true);
			continue;
		}
		return bdb_xlate(rc);
	}
}

static int put_schema(BookDB *db, MDB_txn *txn)
{
	uint8_t ver[4] = {BOOKDB_SCHEMA_VERSION & 0xff, (BOOKDB_SCHEMA_VERSION >> 8) & 0xff, 0, 0};
	MDB_val k = {6, "schema"}, v = {4, ver};
	return mdb_put(txn, db->dbi[BOOKDB_META], &k, &v, 0);
}

/* Writes the schema and creation settings into a fresh book's meta. */
static int init_meta(BookDB *db, MDB_txn *txn, const BookDBOptions *opt)
{
	int rc = put_schema(db, txn);
	if (rc) return rc;
	char settings[1024];
	snprintf(settings, sizeof settings,
	         "{\"schema\": %d, \"created\": %lld, \"settings\": \"%s\"}", BOOKDB_SCHEMA_VERSION,
	         (long long)time(NULL), opt && opt->settings ? opt->settings : "");
	MDB_val k2 = {7, "created"}, v2 = {strlen(settings), settings};
	rc = mdb_put(txn, db->dbi[BOOKDB_META], &k2, &v2, 0);
	return rc ? rc : bdb_counts_init(txn, db->dbi[BOOKDB_META]);
}

/*
 * Opens the named databases and checks (or, writable, creates) the schema.
 * Version 1 differs from 2 only by the missing changes database: read-write,
 * it is created and the schema rewritten (the records are the same bytes);
 * read-only, the book is read without it (the change log reads as off).
 */
static int open_dbs(BookDB *db, const BookDBOptions *opt, char *err)
{
	for (;;) {
		MDB_txn *txn;
		int rc = mdb_txn_begin(db->env, NULL, db->read_only ? MDB_RDONLY : 0, &txn);
		if (rc)
			return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(rc), "%s: %s", db->dir,
			                  mdb_strerror(rc));
		/* The databases of version 1 first; changes once the version is known.
		 * Only a writer that may make a book (not must_exist) creates them. */
		bool create = !db->read_only && !opt->must_exist;
		for (int i = 0; i < BOOKDB_CHANGES && !rc; i++)
			rc = mdb_dbi_open(txn, DB_NAMES[i], create ? MDB_CREATE : 0, &db->dbi[i]);
		if (rc == MDB_NOTFOUND) {
			mdb_txn_abort(txn);
			return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOBOOK,
			                  "%s: not a joseki book", db->dir);
		}
		MDB_val k = {6, "schema"}, v;
		unsigned ver = BOOKDB_SCHEMA_VERSION;
		if (!rc) {
			rc = mdb_get(txn, db->dbi[BOOKDB_META], &k, &v);
			if (rc == MDB_NOTFOUND && create) {
				rc = init_meta(db, txn, opt);
			} else if (rc == MDB_NOTFOUND) {
				mdb_txn_abort(txn);
				return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOBOOK,
				                  "%s: not a joseki book (no schema)", db->dir);
			} else if (!rc) {
				const uint8_t *p = v.mv_data;
				ver = v.mv_size == 4 ? (unsigned)(p[0] | p[1] << 8 | p[2] << 16 |
				                                  (unsigned)p[3] << 24)
				                     : 0;
				if (ver < 1 || ver > BOOKDB_SCHEMA_VERSION) {
					mdb_txn_abort(txn);
					return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EVERSION,
					                  "%s: book has schema version %u, this "
					                  "joseki reads "
					                  "versions 1 to %d (%s)",
					                  db->dir, ver, BOOKDB_SCHEMA_VERSION,
					                  ver > BOOKDB_SCHEMA_VERSION
					                      ? "a newer joseki wrote it"
					                      : "rebuild or convert the book");
				}
			}
		}
		db->has_changes = !db->read_only || ver != 1;
		if (!rc && db->has_changes) {
			rc = mdb_dbi_open(txn, DB_NAMES[BOOKDB_CHANGES],
			                  db->read_only ? 0 : MDB_CREATE, &db->dbi[BOOKDB_CHANGES]);
			if (rc == MDB_NOTFOUND) {
				mdb_txn_abort(txn);
				return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
				                  "%s: schema version %u book without its changes "
				                  "database",
				                  db->dir, ver);
			}
		}
		/* The marks (bookdb/marks.h) came after version 2 without a new
		 * version: an older build ignores the database. */
		if (!rc) {
			rc = mdb_dbi_open(txn, DB_NAMES[BOOKDB_MARKS],
			                  db->read_only ? 0 : MDB_CREATE, &db->dbi[BOOKDB_MARKS]);
			db->has_marks = rc == 0;
			if (rc == MDB_NOTFOUND && db->read_only) rc = 0;
		}
		if (!rc && ver != BOOKDB_SCHEMA_VERSION && !db->read_only) rc = put_schema(db, txn);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		if (rc == MDB_MAP_FULL) {
			if ((rc = grow_map(db))) return rc;
			continue;
		}
		if (!rc) return 0;
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(rc), "%s: %s", db->dir,
		                  mdb_strerror(rc));
	}
}

/* Who holds a flock on fd's file, other than this process, as "pid N: its
 * command line" (cut to len, shortened to its first words), from
 * /proc/locks; "" when it cannot say (another host's process, no /proc). */
static void flock_holder(int fd, char *who, size_t len)
{
	who[0] = 0;
	struct stat st;
	FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
	char line[256];
	long pid = -1;
	while (f && pid < 0 && fgets(line, sizeof line, f)) {
		long p;
		unsigned maj, min;
		unsigned long long ino;
		/* "1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF"; a waiter's "-> FLOCK". */
		if (strstr(line, "->") ||
		    sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%llu", &p, &maj, &min, &ino) != 4)
			continue;
		if (ino == (unsigned long long)st.st_ino && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && p != (long)getpid())
			pid = p;
	}
	if (f) fclose(f);
	if (pid < 0) return;
	char path[64], cmd[160] = "";
	snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
	FILE *c = fopen(path, "r");
	size_t n = c ? fread(cmd, 1, sizeof cmd - 1, c) : 0;
	if (c) fclose(c);
	cmd[n] = 0;
	for (size_t i = 0; i + 1 < n; i++)
		if (!cmd[i]) cmd[i] = ' ';
	/* Its first words (the rest, cut, said to be). */
	bool cut = strlen(cmd) > 80;
	if (cut) cmd[76] = 0;
	snprintf(who, len, "pid %ld%s%s%s", pid, cmd[0] ? ": " : "", cmd, cut ? " ..." : "");
}

/* Takes BOOK/writers.lock (LOCK_SH for a writer, LOCK_EX for compact)
 * without waiting. */
int bdb_writers_lock(BookDB *db, int how, char *err)
{
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/writers.lock", db->dir);
	db->writers_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
	if (db->writers_fd < 0) {
		int e = errno;
		if (e == EROFS || e == EACCES || e == EPERM)
			return errmsg_set(
			    err, BOOKDB_ERRLEN, bdb_xlate(e),
			    "%.100s: the book cannot be written (%.40s); reading "
			    "commands (query, stats, export, check, serve) still work",
			    db->dir, strerror(e));
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", path,
		                  strerror(e));
	}
	if (flock(db->writers_fd, how | LOCK_NB) == 0) return 0;
	int e = errno;
	char who[128] = "", said[160] = "";
	if (e == EWOULDBLOCK) flock_holder(db->writers_fd, who, sizeof who);
	if (who[0]) snprintf(said, sizeof said, ", %s", who);
	if (e != EWOULDBLOCK)
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.100s: %s", db->dir,
		                  strerror(e));
	return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EBUSY,
	                  "%.100s: %s%s): try again when it is done", db->dir,
	                  how == LOCK_EX ? "a writer has the book open (think, ingest, minimax, "
	                                   "serve --work ..."
	                                 : "the book is being written anew (joseki compact, or a "
	                                   "minimax --full that rebuilds it",
	                  said);
}

int bookdb_selection_lock(int *out, const char *dir, const char *who, char *err)
{
	*out = -1;
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/selection.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
	if (fd < 0) {
		int e = errno;
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", path,
		                  strerror(e));
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		char holder[96] = "";
		ssize_t n = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0) : -1;
		close(fd);
		if (e != EWOULDBLOCK)
			return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", path,
			                  strerror(e));
		holder[n > 0 ? n : 0] = 0;
		holder[strcspn(holder, "\n")] = 0;
		long pid = 0;
		char what[64] = "another process";
		if (sscanf(holder, "%ld %63[^\n]", &pid, what) < 1) pid = 0;
		char by[128];
		if (pid > 0)
			snprintf(by, sizeof by, "%s, pid %ld", what, pid);
		else
			snprintf(by, sizeof by, "another process");
		return errmsg_set(
		    err, BOOKDB_ERRLEN, BOOKDB_EBUSY,
		    "%.200s: another process selects what to think in this book (%s): "
		    "two selections would lease the same positions and write over each "
		    "other's selector.snap; stop that one first (a coordinator takes more "
		    "engines as workers: joseki worker)",
		    dir, by);
	}
	char line[96];
	int n = snprintf(line, sizeof line, "%ld %s\n", (long)getpid(), who);
	/* (Held whatever these do: only the holder's name would be missing.) */
	if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, line, (size_t)n, 0);
	*out = fd;
	return 0;
}

/*
 * LMDB maps the file and trusts it: a page past the end of a file cut short
 * (a copy that stopped early) is a SIGBUS at the first touch. So before any
 * page is read, the file must reach the last page the newest meta page
 * records.
 */
/* The bytes data.mdb must have for the pages the newest meta page counts;
 * false when LMDB cannot say. */
static bool file_need(BookDB *db, uint64_t *need)
{
	MDB_envinfo info;
	MDB_stat ms;
	if (mdb_env_info(db->env, &info) || mdb_env_stat(db->env, &ms)) return false;
	*need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	return true;
}

static int check_file_size(BookDB *db, const char *path, char *err)
{
	uint64_t need;
	struct stat st;
	if (!file_need(db, &need) || stat(path, &st) < 0)
		return 0; /* nothing to compare: the operations below report it */
	if ((uint64_t)st.st_size >= need) return 0;
	return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
	                  "%.80s/data.mdb: the file is shorter than the book it holds (%llu bytes, "
	                  "%llu needed): a truncated copy? nothing was read",
	                  db->dir, (unsigned long long)st.st_size, (unsigned long long)need);
}

static int env_open_locked(BookDB *db, const BookDBOptions *opt, bool exists, char *err);

int bdb_open_lock(const char *dir, int how)
{
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/open.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
	if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC); /* a reader without write access */
	if (fd < 0) return -1;
	while (flock(fd, how) < 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

/* Whether open.lock (lk) names a data file LMDB's lock file belongs to
 * (bdb_lock_owner_put), and dir/data.mdb is another one; false when none is
 * named (a book never switched) or data.mdb cannot be looked at. */
static bool lock_owner_differs(int lk, const char *dir)
{
	char b[64], path[BOOKDB_PATH_LEN];
	ssize_t n = pread(lk, b, sizeof b - 1, 0);
	if (n <= 0) return false;
	b[n] = 0;
	unsigned long long dev, ino;
	struct stat st;
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	if (sscanf(b, "%llu %llu", &dev, &ino) != 2 || stat(path, &st) < 0) return false;
	return (unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino;
}

int bdb_lock_owner_put(int lk, const char *dir)
{
	char path[BOOKDB_PATH_LEN], b[64];
	struct stat st;
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	if (stat(path, &st) < 0) return -1;
	int n = snprintf(b, sizeof b, "%llu %llu\n", (unsigned long long)st.st_dev,
	                 (unsigned long long)st.st_ino);
	if (pwrite(lk, b, (size_t)n, 0) != n || ftruncate(lk, n) < 0 || fdatasync(lk) < 0)
		return -1;
	return 0;
}

/*
 * Under open.lock shared (lk): when the data file is not the one LMDB's lock
 * file belongs to (a switch killed between its rename and the lock file's
 * removal, or a data file put there by hand), the lock file is removed,
 * with open.lock held alone, so that the first to open the data file makes
 * a new one. Nothing when the owner cannot be written (a reader without
 * write access): removing the lock file again at every open would split the
 * book's users between two lock files.
 */
static void lock_file_mend(int lk, const char *dir)
{
	char lockf[BOOKDB_PATH_LEN];
	snprintf(lockf, sizeof lockf, "%s/lock.mdb", dir);
	for (int tries = 0; tries < 4 && lock_owner_differs(lk, dir); tries++) {
		/* (A change of lock lets go first: the owner is read again.) */
		if (flock(lk, LOCK_EX) < 0) return;
		if (lock_owner_differs(lk, dir) && bdb_lock_owner_put(lk, dir) == 0) unlink(lockf);
		if (flock(lk, LOCK_SH) < 0) return;
	}
}

/* db's environment opened on dir/data.mdb (exists: the file was there) and
 * its databases; 0 or a code with err. */
static int env_open(BookDB *db, const BookDBOptions *opt, bool exists, char *err)
{
	/* LMDB's lock file must belong to the data file it is opened with: a
	 * data file replaced (bdb_open_lock) is not opened half way. */
	int lk = bdb_open_lock(db->dir, LOCK_SH);
	if (lk >= 0) lock_file_mend(lk, db->dir);
	int rc = env_open_locked(db, opt, exists, err);
	if (lk >= 0) close(lk);
	return rc;
}

/* db->env made and opened with flags (an MDB_* code; db->env may be left
 * to close). */
static int env_made(BookDB *db, const BookDBOptions *opt, unsigned flags)
{
	int rc;
	if ((rc = mdb_env_create(&db->env))) return rc;
	/* LMDB's assertions name the book from here on (damage.h). */
	bdb_damage_watch(db, false);
	if ((rc = mdb_env_set_maxdbs(db->env, 8)) || (rc = mdb_env_set_maxreaders(db->env, 256)) ||
	    (rc = mdb_env_set_mapsize(db->env, opt->map_size ? opt->map_size : DEFAULT_MAP_SIZE)))
		return rc;
	return mdb_env_open(db->env, db->dir, flags, 0664);
}

bool bookdb_unlocked(const BookDB *db)
{
	return db && db->unlocked;
}

void bookdb_remove_new(const char *dir)
{
	static const char *const FILES[] = {"data.mdb", "lock.mdb", "writers.lock", "open.lock"};
	char p[BOOKDB_PATH_LEN + 32];
	for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, FILES[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int env_open_locked(BookDB *db, const BookDBOptions *opt, bool exists, char *err)
{
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/data.mdb", db->dir);
	unsigned flags = MDB_NOTLS | (opt->read_only ? MDB_RDONLY : 0) |
	                 (opt->no_sync ? MDB_NOSYNC : 0) | (db->random ? MDB_NORDAHEAD : 0);
	db->unlocked = false;
	int rc = env_made(db, opt, flags);
	/* A reader who may not write the lock file reads without it
	 * (bookdb_unlocked); LMDB does so by itself on a read-only file system. */
	if ((rc == EACCES || rc == EPERM) && opt->read_only) {
		bdb_damage_unwatch(db);
		mdb_env_close(db->env);
		db->env = NULL;
		rc = env_made(db, opt, flags | MDB_NOLOCK);
		db->unlocked = rc == 0;
	}
	if (rc) goto fail_lmdb;
	bdb_damage_watch(db, true);
	if (exists && (rc = check_file_size(db, path, err))) return rc;
	if (exists) {
		/* Adopt the size the last writer left, then honour a larger request. */
		size_t want = opt->map_size ? opt->map_size : DEFAULT_MAP_SIZE;
		if ((rc = mdb_env_set_mapsize(db->env, 0))) goto fail_lmdb;
		if (!opt->read_only && bookdb_map_size(db) < want &&
		    (rc = mdb_env_set_mapsize(db->env, want)))
			goto fail_lmdb;
		bdb_damage_watch(db, true);
	}
	if ((rc = open_dbs(db, opt, err))) return rc;
	return 0;
fail_lmdb:
	return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(rc), "%s: %s", db->dir, mdb_strerror(rc));
}

bool bookdb_file_current(BookDB *db)
{
	char path[BOOKDB_PATH_LEN];
	struct stat a, b;
	int fd = -1;
	snprintf(path, sizeof path, "%s/data.mdb", db->dir);
	return db->env && mdb_env_get_fd(db->env, &fd) == 0 && fstat(fd, &a) == 0 &&
	       stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int bookdb_reopen(BookDB *db, char *err)
{
	unsigned flags = 0;
	if (db->env) mdb_env_get_flags(db->env, &flags);
	BookDBOptions o = {.read_only = db->read_only,
	                   .must_exist = true,
	                   .no_sync = (flags & MDB_NOSYNC) != 0,
	                   .random = db->random,
	                   .random_above = 1};
	bdb_damage_unwatch(db);
	if (db->env) mdb_env_close(db->env);
	db->env = NULL;
	int rc = env_open(db, &o, true, err);
	if (rc && db->env) {
		mdb_env_close(db->env);
		db->env = NULL;
	}
	return rc;
}

int bookdb_open(BookDB **out, const char *dir, const BookDBOptions *opt, char *err)
{
	BookDBOptions defaults = {0};
	if (!opt) opt = &defaults;
	*out = NULL;
	if (err) err[0] = 0;
	if (strlen(dir) > BOOKDB_DIR_MAX)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
		                  "%.100s...: the book's path is longer than %d bytes", dir,
		                  BOOKDB_DIR_MAX);
	BookDB *db = calloc(1, sizeof *db);
	int rc = BOOKDB_ENOMEM;
	if (db) db->writers_fd = -1;
	if (!db || !(db->dir = strdup(dir))) goto fail_msg;
	db->read_only = opt->read_only;
	db->changes_max = opt->changes_max ? opt->changes_max : BOOKDB_CHANGES_MAX;
	struct stat st;
	char path[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	bool exists = stat(path, &st) == 0;
	uint64_t size = exists ? (uint64_t)st.st_size : 0;
	db->random = opt->random && (opt->random_above ? size > opt->random_above
	                                               : memuse_too_large_to_cache(size));
	if (!exists && (opt->read_only || opt->must_exist)) {
		/* A file given for the book (a YaneuraOu book, say) is said so: a
		 * book is a directory. */
		struct stat ds;
		bool file = stat(dir, &ds) == 0 && !S_ISDIR(ds.st_mode);
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOBOOK, "%s: no book there%s", dir,
		                file ? " (a file: a book is a directory, as joseki ingest makes it)"
		                     : "");
		goto fail;
	}
	/* LMDB makes an empty file a new book for a writer; a reader gets no
	 * book from it (its own message would be "Bad file descriptor"), nor
	 * does a writer that must not create one. */
	if (exists && (opt->read_only || opt->must_exist) && st.st_size < 2 * 4096) {
		rc = errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                "%.80s/data.mdb: %lld bytes, too short to be a book", dir,
		                (long long)st.st_size);
		goto fail;
	}
	if (!opt->read_only && mkdir(dir, 0777) < 0 && errno != EEXIST) {
		int e = errno;
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%s: cannot create: %s", dir,
		                strerror(e));
		goto fail;
	}
	/* A writer given a file (a YaneuraOu book, say): said so, as to a
	 * reader, not as its lock file's "Not a directory". */
	struct stat ds;
	if (!opt->read_only && stat(dir, &ds) == 0 && !S_ISDIR(ds.st_mode)) {
		rc =
		    errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOBOOK,
		               "%s: no book there (a file: a book is a directory, as joseki ingest "
		               "makes it)",
		               dir);
		goto fail;
	}
	/* Writers share this lock; joseki compact takes it alone (it replaces
	 * the data file, which a writer must not have open). */
	if (!opt->read_only && (rc = bdb_writers_lock(db, LOCK_SH, err))) goto fail;
	if (!opt->read_only) {
		/* A copy a rebuild killed before its rename left (as large as the
		 * book): no rebuild runs while a writer holds the lock shared. */
		char copy[BOOKDB_PATH_LEN + 32];
		snprintf(copy, sizeof copy, "%s/" BDB_REBUILD_COPY, dir);
		(void)unlink(copy);
	}
	if ((rc = env_open(db, opt, exists, err))) goto fail;
	*out = db;
	return 0;
fail_msg:
	errmsg_set(err, BOOKDB_ERRLEN, rc, "%.200s: %s", dir, bookdb_strerror(rc));
fail:
	bookdb_free(db);
	return rc;
}

void bookdb_free(BookDB *db)
{
	if (!db) return;
	bdb_damage_unwatch(db);
	if (db->env) mdb_env_close(db->env);
	if (db->writers_fd >= 0) close(db->writers_fd);
	free(db->dir);
	free(db);
}

int bookdb_txn_begin(BookTxn **out, BookDB *db, bool write)
{
	*out = NULL;
	if (write && db->read_only) return BOOKDB_EREADONLY;
	BookTxn *t = calloc(1, sizeof *t);
	if (!t) return BOOKDB_ENOMEM;
	t->db = db;
	t->write = write;
	t->track = true;
	int rc = begin_raw(&t->txn, db, write);
	if (rc) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

static void txn_free(BookTxn *t)
{
	free(t->log);
	free(t);
}

void bookdb_txn_abort(BookTxn *t)
{
	if (!t) return;
	if (t->txn) mdb_txn_abort(t->txn);
	txn_free(t);
}

static int log_append(BookTxn *t, BookDbName db, int op, const void *k, size_t kl, const void *v,
                      size_t vl)
{
	size_t need = LOG_HEADER + kl + vl;
	if (array_grow((void **)&t->log, &t->log_cap, t->log_len + need, 1, 1 << 16))
		return BOOKDB_ENOMEM;
	uint8_t *p = t->log + t->log_len;
	uint32_t k32 = (uint32_t)kl, v32 = (uint32_t)vl;
	p[0] = (uint8_t)db;
	p[1] = (uint8_t)op;
	memcpy(p + 2, &k32, 4);
	memcpy(p + 6, &v32, 4);
	memcpy(p + LOG_HEADER, k, kl);
	if (vl) memcpy(p + LOG_HEADER + kl, v, vl);
	t->log_len += need;
	return 0;
}

/* Deletes the entries of dbi whose 8-byte keys are <= ub: when that is all of
 * them, by emptying the database (pages freed without reading the leaves),
 * else by one cursor walk from the first. Returns an LMDB code. */
static int del_upto(MDB_txn *txn, MDB_dbi dbi, const uint8_t *ub)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &c);
	if (rc) return rc;
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (!rc && k.mv_size == 8 && memcmp(k.mv_data, ub, 8) <= 0) {
		mdb_cursor_close(c);
		return mdb_drop(txn, dbi, 0);
	}
	if (!rc) rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	/* After mdb_cursor_del the cursor is on the next entry, which MDB_NEXT returns. */
	while (!rc && k.mv_size == 8 && memcmp(k.mv_data, ub, 8) <= 0)
		if (!(rc = mdb_cursor_del(c, 0))) rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	mdb_cursor_close(c);
	return rc;
}

/* Applies one logged operation to the LMDB transaction. */
static int apply(BookTxn *t, const uint8_t *p)
{
	uint32_t kl, vl;
	memcpy(&kl, p + 2, 4);
	memcpy(&vl, p + 6, 4);
	MDB_val k = {kl, (void *)(p + LOG_HEADER)}, v = {vl, (void *)(p + LOG_HEADER + kl)};
	MDB_dbi dbi = t->db->dbi[p[0]];
	int rc;
	switch (p[1]) {
	case OP_PUT:
		rc = mdb_put(t->txn, dbi, &k, &v, 0);
		break;
	case OP_APPEND:
		rc = mdb_put(t->txn, dbi, &k, &v, MDB_APPEND);
		break;
	case OP_DEL_UPTO:
		rc = del_upto(t->txn, dbi, p + LOG_HEADER);
		break;
	default:
		rc = mdb_del(t->txn, dbi, &k, NULL);
		break;
	}
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Applies the whole log to the (fresh) LMDB transaction; returns an LMDB code. */
static int replay_log(BookTxn *t)
{
	size_t off = 0;
	int rc = 0;
	while (off < t->log_len && !rc) {
		uint32_t kl, vl;
		memcpy(&kl, t->log + off + 2, 4);
		memcpy(&vl, t->log + off + 6, 4);
		rc = apply(t, t->log + off);
		off += LOG_HEADER + kl + vl;
	}
	return rc;
}

/* The map is full: abort, grow, begin again and replay the whole log. On failure
 * the transaction is left without an LMDB transaction (every call then fails). */
static int grow_and_replay(BookTxn *t)
{
	for (;;) {
		mdb_txn_abort(t->txn); /* (and rw_cur with it) */
		t->txn = NULL;
		t->rw_cur = NULL;
		t->rw_at = false;
		int rc = grow_map(t->db);
		if (rc) return rc;
		if ((rc = begin_raw(&t->txn, t->db, true))) return rc;
		rc = replay_log(t);
		if (rc == MDB_MAP_FULL) continue;
		return bdb_xlate(rc);
	}
}

int bdb_txn_write(BookTxn *t, BookDbName db, int op, const void *k, size_t kl, const void *v,
                  size_t vl)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS || kl == 0 || kl > 511) return BOOKDB_EINVAL;
	/* A pos write may move what bookdb_rewrite's cursor stands on; others
	 * (the change log's notes among them) do not. */
	if (db == BOOKDB_POS) t->rw_at = false;
	int rc = log_append(t, db, op, k, kl, v, vl);
	if (rc) return rc;
	rc = apply(t, t->log + t->log_len - (LOG_HEADER + kl + vl));
	if (rc == MDB_MAP_FULL) return grow_and_replay(t);
	if (rc == MDB_KEYEXIST) { /* an append out of order; LMDB left the txn usable */
		t->log_len -= LOG_HEADER + kl + vl;
		return BOOKDB_EINVAL;
	}
	return bdb_xlate(rc);
}

/*
 * After a write commit: the file made as long as the pages the book says it
 * has. LMDB does not write a page a transaction allocated and freed again
 * (it goes to the free list unwritten), so a commit can leave data.mdb a few
 * pages shorter than its last page number — seen after `serve --work` runs on
 * a 15 M-position book (15-17 pages, every one on the free list). Such a book is
 * sound, but bookdb_open's check (a truncated copy would fault on reading)
 * could not tell it from a truncated one: the missing tail is added here as
 * zeros (a hole), and synced, so that the file every commit leaves passes it.
 * A failure here leaves the commit as it is (it is on disk); the next commit
 * tries again.
 */
static void pad_file(BookDB *db)
{
	uint64_t need;
	mdb_filehandle_t fd;
	struct stat st;
	if (!file_need(db, &need) || mdb_env_get_fd(db->env, &fd) || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size >= need)
		return;
	if (ftruncate(fd, (off_t)need) == 0) (void)fdatasync(fd);
}

int bookdb_txn_commit(BookTxn *t)
{
	int rc = 0;
	if (!t->txn) {
		txn_free(t);
		return BOOKDB_ELMDB;
	}
	/* The kept counts, stamped with this commit (counts.c), when it commits
	 * anything: a write transaction that wrote nothing commits nothing, and
	 * LMDB gives it no id. */
	if (t->write && t->log_len && (rc = bdb_counts_commit(t))) {
		bookdb_txn_abort(t);
		return rc;
	}
	/* The last sequence number given out survives consumed entries and overflow
	 * in meta; written once per transaction, and logged for a replay. */
	if (t->chg_dirty) {
		uint8_t seq[8];
		le64_put(seq, t->chg_seq);
		t->chg_dirty = false;
		rc = bdb_txn_write(t, BOOKDB_META, OP_PUT, META_CHANGES_SEQ,
		                   strlen(META_CHANGES_SEQ), seq, 8);
		if (rc) {
			bookdb_txn_abort(t);
			return rc;
		}
	}
	for (;;) {
		rc = mdb_txn_commit(t->txn);
		t->txn = NULL;
		if (rc != MDB_MAP_FULL || !t->write) break;
		/* The commit itself needed pages (free list): grow and redo. */
		if ((rc = grow_map(t->db)) || (rc = begin_raw(&t->txn, t->db, true))) {
			if (t->txn) mdb_txn_abort(t->txn);
			t->txn = NULL;
			txn_free(t);
			return rc;
		}
		rc = replay_log(t);
		if (rc == MDB_MAP_FULL) {
			rc = grow_and_replay(t);
			if (rc) break;
		} else if (rc) {
			mdb_txn_abort(t->txn);
			t->txn = NULL;
			break;
		}
	}
	const char *dir = t->db->dir;
	if (!rc && t->write) pad_file(t->db);
	txn_free(t);
	return bdb_commit_err(dir, rc);
}

/* Whether db is a database this open of the book does not have (an older
 * book read read-only): it reads as empty. */
static bool db_absent(const BookDB *b, BookDbName db)
{
	return (db == BOOKDB_CHANGES && !b->has_changes) || (db == BOOKDB_MARKS && !b->has_marks);
}

int bookdb_kv_get(const void **val, size_t *vlen, BookTxn *t, BookDbName db, const void *key,
                  size_t klen)
{
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	if (db_absent(t->db, db)) return BOOKDB_ENOTFOUND;
	MDB_val k = {klen, (void *)key}, v;
	int rc = mdb_get(t->txn, t->db->dbi[db], &k, &v);
	bdb_pos_reads_tls += db == BOOKDB_POS;
	if (rc) return bdb_xlate(rc);
	*val = v.mv_data;
	*vlen = v.mv_size;
	return 0;
}

int bookdb_kv_put(BookTxn *t, BookDbName db, const void *key, size_t klen, const void *val,
                  size_t vlen)
{
	if (db == BOOKDB_CHANGES || (db == BOOKDB_POS && klen != 16)) return BOOKDB_EINVAL;
	if (db == BOOKDB_POS) return bdb_pos_write(t, OP_PUT, key, val, vlen);
	return bdb_txn_write(t, db, OP_PUT, key, klen, val, vlen);
}

int bookdb_kv_del(BookTxn *t, BookDbName db, const void *key, size_t klen)
{
	if (db == BOOKDB_CHANGES || (db == BOOKDB_POS && klen != 16)) return BOOKDB_EINVAL;
	if (db == BOOKDB_POS) return bdb_pos_write(t, OP_DEL, key, NULL, 0);
	return bdb_txn_write(t, db, OP_DEL, key, klen, NULL, 0);
}

bool bookdb_minimax_unfinished(BookTxn *txn)
{
	const void *v;
	size_t len;
	return bookdb_kv_get(&v, &len, txn, BOOKDB_META, BOOKDB_META_MMFULL,
	                     strlen(BOOKDB_META_MMFULL)) == 0 ||
	       bookdb_kv_get(&v, &len, txn, BOOKDB_META, BOOKDB_META_MMRUN,
	                     strlen(BOOKDB_META_MMRUN)) == 0;
}

int bookdb_count(uint64_t *out, BookTxn *t, BookDbName db)
{
	MDB_stat st;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	if (db_absent(t->db, db)) {
		*out = 0;
		return 0;
	}
	int rc = mdb_stat(t->txn, t->db->dbi[db], &st);
	if (rc) return bdb_xlate(rc);
	*out = st.ms_entries;
	return 0;
}

int bookdb_pages(uint64_t *pages, unsigned *page_size, BookTxn *t, BookDbName db)
{
	MDB_stat st;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	bool absent = db_absent(t->db, db);
	int rc = mdb_stat(t->txn, t->db->dbi[absent ? BOOKDB_META : db], &st);
	if (rc) return bdb_xlate(rc);
	if (absent) st.ms_branch_pages = st.ms_leaf_pages = st.ms_overflow_pages = 0;
	*pages = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	*page_size = st.ms_psize;
	return 0;
}

int bookdb_get_raw(const uint8_t **val, size_t *len, BookTxn *t, Key key)
{
	uint8_t kb[16];
	key_to_bytes(key, kb);
	const void *v = NULL;
	int rc = bookdb_kv_get(&v, len, t, BOOKDB_POS, kb, 16);
	if (!rc) *val = v;
	return rc;
}

int bookdb_get(BookRecord *out, BookTxn *t, Key key)
{
	const uint8_t *v = NULL;
	size_t len = 0;
	int rc = bookdb_get_raw(&v, &len, t, key);
	if (rc) return rc;
	return bookdb_record_decode(out, v, len);
}

int bookdb_get_moves(BookRecord *out, BookTxn *t, Key key)
{
	const uint8_t *v = NULL;
	size_t len = 0;
	int rc = bookdb_get_raw(&v, &len, t, key);
	if (rc) return rc;
	return bookdb_record_decode_moves(out, v, len);
}

int bookdb_put_raw(BookTxn *t, Key key, const uint8_t *val, size_t len)
{
	uint8_t kb[16];
	key_to_bytes(key, kb);
	return bdb_pos_write(t, OP_PUT, kb, val, len);
}

/* Stands t's rewrite cursor on the record of kb: the next one after where it
 * stands when that is it (calls in key order), else by a search. */
static int rewrite_seek(BookTxn *t, const uint8_t kb[16], MDB_val *v)
{
	MDB_val k = {16, (void *)kb};
	int rc;
	if (!t->rw_cur && (rc = mdb_cursor_open(t->txn, t->db->dbi[BOOKDB_POS], &t->rw_cur)))
		return rc;
	if (t->rw_at) {
		MDB_val nk;
		t->rw_at = false;
		rc = mdb_cursor_get(t->rw_cur, &nk, v, MDB_NEXT);
		if (rc == 0 && nk.mv_size == 16 && memcmp(nk.mv_data, kb, 16) == 0) return 0;
		if (rc && rc != MDB_NOTFOUND) return rc;
	}
	return mdb_cursor_get(t->rw_cur, &k, v, MDB_SET_KEY);
}

int bookdb_rewrite(BookTxn *t, Key key, BookRewriteFn fn, void *ctx, uint8_t *out)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	if (db_absent(t->db, BOOKDB_POS)) return BOOKDB_ENOTFOUND;
	uint8_t kb[16];
	key_to_bytes(key, kb);
	MDB_val v;
	int rc = rewrite_seek(t, kb, &v);
	if (rc) return rc == MDB_NOTFOUND ? BOOKDB_ENOTFOUND : bdb_xlate(rc);
	bdb_pos_reads_tls++;
	t->rw_at = true;
	int n = fn(ctx, v.mv_data, v.mv_size, out);
	/* fn may not write to pos (bookdb.h): the cursor and v would be stale. */
	if (!t->rw_at || !t->rw_cur) return BOOKDB_EINVAL;
	if (n <= 0) return n;
	/* As bdb_pos_write, but over the record the cursor stands on: what it
	 * replaces is read already, and LMDB writes where the cursor is. */
	BookCountsDelta d;
	if ((rc = bdb_counts_replacing(t, v.mv_data, v.mv_size, &d)) ||
	    (rc = log_append(t, BOOKDB_POS, OP_PUT, kb, 16, out, (size_t)n)))
		return rc;
	MDB_val k = {16, kb}, nv = {(size_t)n, out};
	rc = mdb_cursor_put(t->rw_cur, &k, &nv, MDB_CURRENT);
	if (rc == MDB_MAP_FULL) {
		rc = grow_and_replay(t);
	} else if (rc) { /* not done: not in the log a replay would apply */
		t->log_len -= LOG_HEADER + 16 + (size_t)n;
		t->rw_at = false;
		rc = bdb_xlate(rc);
	}
	if (rc) return rc;
	bdb_counts_after(t, &d, OP_PUT, out, (size_t)n);
	if (t->track && (rc = bdb_changes_note(t, kb))) return rc;
	return n;
}

int bookdb_put(BookTxn *t, Key key, const BookRecord *rec)
{
	uint8_t buf[BOOKDB_RECORD_MAX];
	int n = bookdb_record_encode(buf, sizeof buf, rec);
	if (n < 0) return n;
	return bookdb_put_raw(t, key, buf, (size_t)n);
}

int bookdb_kv_iter_open(BookIter **out, BookTxn *t, BookDbName db)
{
	*out = NULL;
	if (!t->txn || db < 0 || db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	BookIter *it = calloc(1, sizeof *it);
	if (!it) return BOOKDB_ENOMEM;
	if (db_absent(t->db, db)) { /* nothing to read: cur stays NULL */
		*out = it;
		return 0;
	}
	int rc = mdb_cursor_open(t->txn, t->db->dbi[db], &it->cur);
	if (rc) {
		free(it);
		return bdb_xlate(rc);
	}
	it->pos = db == BOOKDB_POS;
	MDB_stat ms;
	if (!t->write && mdb_stat(t->txn, t->db->dbi[db], &ms) == 0) {
		it->tally = true;
		it->entries = ms.ms_entries;
	}
	bdb_pass_ahead_init(&it->ahead, t->txn, t->db->dbi[db], it->pos);
	*out = it;
	return 0;
}

void bookdb_iter_untallied(BookIter *it)
{
	if (it) it->tally = false;
}

int bookdb_kv_iter_open_at(BookIter **out, BookTxn *t, BookDbName db, const void *key, size_t klen)
{
	if (klen == 0 || klen > sizeof((BookIter *)0)->from_buf) return BOOKDB_EINVAL;
	int rc = bookdb_kv_iter_open(out, t, db);
	if (rc) return rc;
	memcpy((*out)->from_buf, key, klen);
	(*out)->from = (MDB_val){.mv_size = klen, .mv_data = (*out)->from_buf};
	(*out)->tally = false; /* a part of the database */
	return 0;
}

int bookdb_iter_open(BookIter **out, BookTxn *t)
{
	return bookdb_kv_iter_open(out, t, BOOKDB_POS);
}

int bookdb_kv_iter_next(BookIter *it, const void **key, size_t *klen, const void **val,
                        size_t *vlen)
{
	MDB_val k, v;
	int rc;
	if (!it->cur) return 0;
	if (!it->started && it->from.mv_data) {
		k = it->from;
		rc = mdb_cursor_get(it->cur, &k, &v, MDB_SET_RANGE);
	} else {
		rc = mdb_cursor_get(it->cur, &k, &v, it->started ? MDB_NEXT : MDB_FIRST);
	}
	it->started = true;
	bdb_pos_reads_tls += it->pos;
	if (rc == MDB_NOTFOUND) {
		/* Entries the database counts that no step met: a damaged page
		 * hides them (joseki check names how many). A pass that went on
		 * would copy or count the book without them, as if whole. */
		if (it->tally && it->met < it->entries) return BOOKDB_ECORRUPT;
		return 0;
	}
	if (rc) return bdb_xlate(rc);
	it->met++;
	/* A book read at random: the pass reads ahead itself (bookdb/scan.c;
	 * without, a cold pass waits for each 4 KiB page in turn, in whatever
	 * order the pages lie in the file). */
	bdb_pass_ahead_step(&it->ahead, &k);
	*key = k.mv_data;
	*klen = k.mv_size;
	*val = v.mv_data;
	*vlen = v.mv_size;
	return 1;
}

int bookdb_iter_next(BookIter *it, Key *key, const uint8_t **val, size_t *len)
{
	const void *kp = NULL, *vp = NULL;
	size_t kl = 0;
	int rc = bookdb_kv_iter_next(it, &kp, &kl, &vp, len);
	if (rc <= 0) return rc;
	if (kl != 16) return BOOKDB_ECORRUPT;
	*key = key_from_bytes(kp);
	*val = vp;
	return 1;
}

uint64_t bookdb_iter_read_ahead(const BookIter *it)
{
	return it ? bdb_pass_ahead_chunks(&it->ahead) : 0;
}

void bookdb_iter_free(BookIter *it)
{
	if (!it) return;
	bdb_pass_ahead_end(&it->ahead);
	if (it->cur) mdb_cursor_close(it->cur);
	free(it);
}
