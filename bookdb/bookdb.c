/* bookdb/bookdb.c — the LMDB environment, transactions with automatic map growth,
 * iteration and the batched writer. See bookdb.h for the rules. */
#include "bookdb/bookdb.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAP_SIZE ((size_t)256 << 20)

static const char *const DB_NAMES[BOOKDB_NDBS] = {"meta", "pos", "games", "work", "changes"};

/* Meta keys of the change log (docs/bookdb.md): the state, one byte; the last
 * sequence number given out, 8 bytes little-endian. */
#define META_CHANGES "changes"
#define META_CHANGES_SEQ "changes_seq"

struct BookDB {
	MDB_env *env;
	MDB_dbi dbi[BOOKDB_NDBS];
	bool read_only;
	bool has_changes; /* false only for a version-1 book opened read-only */
	uint64_t changes_max;
	char *dir;
	int writers_fd; /* BOOK/writers.lock, held shared by a read-write open (-1: none) */
};

/* Operations of the replay log. OP_DEL_UPTO deletes the changes entries whose
 * 8-byte key is <= the logged key (bookdb_changes_consume). */
enum { OP_PUT = 1, OP_DEL = 2, OP_APPEND = 3, OP_DEL_UPTO = 4 };

/*
 * A write transaction keeps a log of its writes so that, when LMDB reports the
 * map full, it can abort, grow the map and replay them in a fresh transaction.
 * Entry: u8 db, u8 op, u32 klen, u32 vlen, key, value. Change-log entries go
 * through it like any write, so a replay reproduces them exactly once.
 *
 * chg_* cache the change log's state, read at the first pos write (or
 * change-log call), and, unless it is off, its counters; both are kept current
 * by this transaction's own writes. A replay rebuilds the same LMDB state, so
 * the cache stays valid across it.
 */
struct BookTxn {
	BookDB *db;
	MDB_txn *txn;
	bool write;
	bool track;       /* pos writes follow the book's state (bookdb_txn_set_tracking) */
	bool chg_loaded;  /* chg_state holds the book's state as of this transaction */
	bool chg_counted; /* chg_seq and chg_entries do too */
	bool chg_dirty;   /* chg_seq advanced: written to meta at commit */
	uint8_t chg_state;
	uint64_t chg_seq, chg_entries;
	uint8_t *log;
	size_t log_len, log_cap;
};

struct BookIter {
	MDB_cursor *cur;
	bool started;
};

struct BookChangesIter {
	MDB_cursor *cur; /* NULL: the book has no changes database (nothing to read) */
	bool started;
	uint8_t from[8];
};

struct BookWriter {
	BookDB *db;
	BookTxn *txn;
	size_t batch, pending;
	uint64_t commits;
	bool no_track; /* bookdb_writer_set_tracking(w, false) */
};

static void be64_put(uint8_t out[8], uint64_t x)
{
	for (int i = 7; i >= 0; i--, x >>= 8) out[i] = (uint8_t)x;
}

static uint64_t be64_get(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 0; i < 8; i++) x = x << 8 | p[i];
	return x;
}

static void le64_put(uint8_t out[8], uint64_t x)
{
	for (int i = 0; i < 8; i++, x >>= 8) out[i] = (uint8_t)x;
}

static uint64_t le64_get(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
	return x;
}

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
	default:
		return "unknown bookdb error";
	}
}

/* LMDB and errno codes to ours: the only place they are interpreted. */
static int xlate(int rc);

/*
 * A failed commit: LMDB reports a short write — what a full file system gives
 * — as EIO. Told apart by the space left where the book is (under 16 MiB: the
 * disk is full, which the user can fix; else an I/O error).
 */
static int commit_err(const char *dir, int rc)
{
	int r = xlate(rc);
	if (r != BOOKDB_EIO) return r;
	struct statvfs vs;
	if (statvfs(dir, &vs) == 0 && (uint64_t)vs.f_bavail * vs.f_frsize < (16u << 20))
		return BOOKDB_ENOSPC;
	return r;
}

static int xlate(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return BOOKDB_ENOTFOUND;
	case MDB_CORRUPTED:
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

uint64_t bookdb_file_size(BookDB *db)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/data.mdb", db->dir);
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Doubles the map. No transaction of this process may be open. */
static int grow_map(BookDB *db)
{
	size_t cur = bookdb_map_size(db);
	int rc = mdb_env_set_mapsize(db->env, cur * 2);
	return rc ? xlate(rc) : 0;
}

static int begin_raw(MDB_txn **out, BookDB *db, bool write)
{
	for (int tries = 0;; tries++) {
		int rc = mdb_txn_begin(db->env, NULL, write ? 0 : MDB_RDONLY, out);
		/* Another process grew the map: adopt its size and retry. */
		if (rc == MDB_MAP_RESIZED && tries < 3) {
			if ((rc = mdb_env_set_mapsize(db->env, 0))) return xlate(rc);
			continue;
		}
		return xlate(rc);
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
	return mdb_put(txn, db->dbi[BOOKDB_META], &k2, &v2, 0);
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
		if (rc) {
			if (err) snprintf(err, BOOKDB_ERRLEN, "%s: %s", db->dir, mdb_strerror(rc));
			return xlate(rc);
		}
		/* The databases of version 1 first; changes once the version is known. */
		for (int i = 0; i < BOOKDB_CHANGES && !rc; i++)
			rc = mdb_dbi_open(txn, DB_NAMES[i], db->read_only ? 0 : MDB_CREATE,
			                  &db->dbi[i]);
		if (rc == MDB_NOTFOUND) {
			mdb_txn_abort(txn);
			if (err) snprintf(err, BOOKDB_ERRLEN, "%s: not a joseki book", db->dir);
			return BOOKDB_ENOBOOK;
		}
		MDB_val k = {6, "schema"}, v;
		unsigned ver = BOOKDB_SCHEMA_VERSION;
		if (!rc) {
			rc = mdb_get(txn, db->dbi[BOOKDB_META], &k, &v);
			if (rc == MDB_NOTFOUND && !db->read_only) {
				rc = init_meta(db, txn, opt);
			} else if (rc == MDB_NOTFOUND) {
				mdb_txn_abort(txn);
				if (err)
					snprintf(err, BOOKDB_ERRLEN,
					         "%s: not a joseki book (no schema)", db->dir);
				return BOOKDB_ENOBOOK;
			} else if (!rc) {
				const uint8_t *p = v.mv_data;
				ver = v.mv_size == 4 ? (unsigned)(p[0] | p[1] << 8 | p[2] << 16 |
				                                  (unsigned)p[3] << 24)
				                     : 0;
				if (ver != 1 && ver != BOOKDB_SCHEMA_VERSION) {
					mdb_txn_abort(txn);
					if (err)
						snprintf(err, BOOKDB_ERRLEN,
						         "%s: book has schema version %u, this "
						         "joseki reads "
						         "versions 1 and %d (rebuild or convert "
						         "the book)",
						         db->dir, ver, BOOKDB_SCHEMA_VERSION);
					return BOOKDB_EVERSION;
				}
			}
		}
		db->has_changes = !db->read_only || ver != 1;
		if (!rc && db->has_changes) {
			rc = mdb_dbi_open(txn, DB_NAMES[BOOKDB_CHANGES],
			                  db->read_only ? 0 : MDB_CREATE, &db->dbi[BOOKDB_CHANGES]);
			if (rc == MDB_NOTFOUND) {
				mdb_txn_abort(txn);
				if (err)
					snprintf(err, BOOKDB_ERRLEN,
					         "%s: schema version %u book without its changes "
					         "database",
					         db->dir, ver);
				return BOOKDB_ECORRUPT;
			}
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
		if (rc && err) snprintf(err, BOOKDB_ERRLEN, "%s: %s", db->dir, mdb_strerror(rc));
		return xlate(rc);
	}
}

/* Takes BOOK/writers.lock (LOCK_SH for a writer, LOCK_EX for compact)
 * without waiting. */
static int writers_lock(BookDB *db, int how, char *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/writers.lock", db->dir);
	db->writers_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
	if (db->writers_fd < 0) {
		int e = errno;
		if (err && (e == EROFS || e == EACCES || e == EPERM))
			snprintf(err, BOOKDB_ERRLEN,
			         "%.100s: the book cannot be written (%.40s); reading commands "
			         "(query, stats, export, check, serve) still work",
			         db->dir, strerror(e));
		else if (err)
			snprintf(err, BOOKDB_ERRLEN, "%.200s: %s", path, strerror(e));
		return xlate(e);
	}
	if (flock(db->writers_fd, how | LOCK_NB) == 0) return 0;
	int e = errno;
	if (err)
		snprintf(
		    err, BOOKDB_ERRLEN, "%.100s: %s", db->dir,
		    e != EWOULDBLOCK ? strerror(e)
		    : how == LOCK_EX
		        ? "a writer has the book open (think, ingest, minimax ...): try again when "
		          "it is done"
		        : "the book is being compacted: try again when joseki compact is done");
	return e == EWOULDBLOCK ? BOOKDB_EBUSY : xlate(e);
}

/*
 * LMDB maps the file and trusts it: a page past the end of a file cut short
 * (a copy that stopped early) is a SIGBUS at the first touch. So before any
 * page is read, the file must reach the last page the newest meta page
 * records.
 */
static int check_file_size(BookDB *db, const char *path, char *err)
{
	MDB_envinfo info;
	MDB_stat ms;
	struct stat st;
	if (mdb_env_info(db->env, &info) || mdb_env_stat(db->env, &ms) || stat(path, &st) < 0)
		return 0; /* nothing to compare: the operations below report it */
	uint64_t need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if ((uint64_t)st.st_size >= need) return 0;
	if (err)
		snprintf(err, BOOKDB_ERRLEN,
		         "%.80s/data.mdb: the file is shorter than the book it holds (%llu bytes, "
		         "%llu needed): a truncated copy? nothing was read",
		         db->dir, (unsigned long long)st.st_size, (unsigned long long)need);
	return BOOKDB_ECORRUPT;
}

int bookdb_open(BookDB **out, const char *dir, const BookDBOptions *opt, char *err)
{
	BookDBOptions defaults = {0};
	if (!opt) opt = &defaults;
	*out = NULL;
	if (err) err[0] = 0;
	BookDB *db = calloc(1, sizeof *db);
	int rc = BOOKDB_ENOMEM;
	if (db) db->writers_fd = -1;
	if (!db || !(db->dir = strdup(dir))) goto fail_msg;
	db->read_only = opt->read_only;
	db->changes_max = opt->changes_max ? opt->changes_max : BOOKDB_CHANGES_MAX;
	struct stat st;
	char path[4200];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	bool exists = stat(path, &st) == 0;
	if (!exists && opt->read_only) {
		rc = BOOKDB_ENOBOOK;
		if (err) snprintf(err, BOOKDB_ERRLEN, "%s: no book there", dir);
		goto fail;
	}
	/* LMDB makes an empty file a new book for a writer; a reader gets no
	 * book from it (its own message would be "Bad file descriptor"). */
	if (exists && opt->read_only && st.st_size < 2 * 4096) {
		rc = BOOKDB_ECORRUPT;
		if (err)
			snprintf(err, BOOKDB_ERRLEN,
			         "%.80s/data.mdb: %lld bytes, too short to be a book", dir,
			         (long long)st.st_size);
		goto fail;
	}
	if (!opt->read_only && mkdir(dir, 0777) < 0 && errno != EEXIST) {
		rc = xlate(errno);
		if (err)
			snprintf(err, BOOKDB_ERRLEN, "%s: cannot create: %s", dir, strerror(errno));
		goto fail;
	}
	/* Writers share this lock; joseki compact takes it alone (it replaces
	 * the data file, which a writer must not have open). */
	if (!opt->read_only && (rc = writers_lock(db, LOCK_SH, err))) goto fail;
	if ((rc = mdb_env_create(&db->env)) || (rc = mdb_env_set_maxdbs(db->env, 8)) ||
	    (rc = mdb_env_set_maxreaders(db->env, 256)) ||
	    (rc = mdb_env_set_mapsize(db->env, opt->map_size ? opt->map_size : DEFAULT_MAP_SIZE)))
		goto fail_lmdb;
	unsigned flags =
	    MDB_NOTLS | (opt->read_only ? MDB_RDONLY : 0) | (opt->no_sync ? MDB_NOSYNC : 0);
	if ((rc = mdb_env_open(db->env, dir, flags, 0664))) goto fail_lmdb;
	if (exists && (rc = check_file_size(db, path, err))) goto fail;
	if (exists) {
		/* Adopt the size the last writer left, then honour a larger request. */
		size_t want = opt->map_size ? opt->map_size : DEFAULT_MAP_SIZE;
		if ((rc = mdb_env_set_mapsize(db->env, 0))) goto fail_lmdb;
		if (!opt->read_only && bookdb_map_size(db) < want &&
		    (rc = mdb_env_set_mapsize(db->env, want)))
			goto fail_lmdb;
	}
	if ((rc = open_dbs(db, opt, err))) goto fail;
	*out = db;
	return 0;
fail_lmdb:
	if (err) snprintf(err, BOOKDB_ERRLEN, "%s: %s", dir, mdb_strerror(rc));
	rc = xlate(rc);
	goto fail;
fail_msg:
	if (err) snprintf(err, BOOKDB_ERRLEN, "%s: %s", dir, bookdb_strerror(rc));
fail:
	bookdb_free(db);
	return rc;
}

void bookdb_free(BookDB *db)
{
	if (!db) return;
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
	size_t need = 10 + kl + vl;
	if (t->log_len + need > t->log_cap) {
		size_t cap = t->log_cap ? t->log_cap : 1 << 16;
		while (cap < t->log_len + need) cap *= 2;
		uint8_t *n = realloc(t->log, cap);
		if (!n) return BOOKDB_ENOMEM;
		t->log = n;
		t->log_cap = cap;
	}
	uint8_t *p = t->log + t->log_len;
	uint32_t k32 = (uint32_t)kl, v32 = (uint32_t)vl;
	p[0] = (uint8_t)db;
	p[1] = (uint8_t)op;
	memcpy(p + 2, &k32, 4);
	memcpy(p + 6, &v32, 4);
	memcpy(p + 10, k, kl);
	if (vl) memcpy(p + 10 + kl, v, vl);
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
	MDB_val k = {kl, (void *)(p + 10)}, v = {vl, (void *)(p + 10 + kl)};
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
		rc = del_upto(t->txn, dbi, p + 10);
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
		off += 10 + kl + vl;
	}
	return rc;
}

/* The map is full: abort, grow, begin again and replay the whole log. On failure
 * the transaction is left without an LMDB transaction (every call then fails). */
static int grow_and_replay(BookTxn *t)
{
	for (;;) {
		mdb_txn_abort(t->txn);
		t->txn = NULL;
		int rc = grow_map(t->db);
		if (rc) return rc;
		if ((rc = begin_raw(&t->txn, t->db, true))) return rc;
		rc = replay_log(t);
		if (rc == MDB_MAP_FULL) continue;
		return xlate(rc);
	}
}

static int txn_write(BookTxn *t, BookDbName db, int op, const void *k, size_t kl, const void *v,
                     size_t vl)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS || kl == 0 || kl > 511) return BOOKDB_EINVAL;
	int rc = log_append(t, db, op, k, kl, v, vl);
	if (rc) return rc;
	rc = apply(t, t->log + t->log_len - (10 + kl + vl));
	if (rc == MDB_MAP_FULL) return grow_and_replay(t);
	if (rc == MDB_KEYEXIST) { /* an append out of order; LMDB left the txn usable */
		t->log_len -= 10 + kl + vl;
		return BOOKDB_EINVAL;
	}
	return xlate(rc);
}

/* ---- change log: the writing side ---- */

/*
 * Reads the change log's state into the cache, once per transaction, and,
 * when it is not off or counts says so, the last sequence number given out
 * (the larger of meta's and the last entry's, so a missing meta value cannot
 * reuse one) and the number of entries. An untracked book costs one lookup.
 */
static int changes_load(BookTxn *t, bool counts)
{
	BookDB *db = t->db;
	MDB_val k = {strlen(META_CHANGES), META_CHANGES}, v;
	int rc;
	if (!t->chg_loaded) {
		t->chg_state = BOOKDB_CHANGES_OFF;
		rc = db->has_changes ? mdb_get(t->txn, db->dbi[BOOKDB_META], &k, &v) : MDB_NOTFOUND;
		if (!rc) {
			uint8_t b = v.mv_size == 1 ? *(const uint8_t *)v.mv_data : 0xff;
			if (b > BOOKDB_CHANGES_OVERFLOW) return BOOKDB_ECORRUPT;
			t->chg_state = b;
		} else if (rc != MDB_NOTFOUND) {
			return xlate(rc);
		}
		t->chg_loaded = true;
	}
	if (t->chg_counted || (!counts && t->chg_state == BOOKDB_CHANGES_OFF)) return 0;
	t->chg_seq = t->chg_entries = 0;
	if (db->has_changes) {
		MDB_val ks = {strlen(META_CHANGES_SEQ), META_CHANGES_SEQ};
		rc = mdb_get(t->txn, db->dbi[BOOKDB_META], &ks, &v);
		if (!rc) {
			if (v.mv_size != 8) return BOOKDB_ECORRUPT;
			t->chg_seq = le64_get(v.mv_data);
		} else if (rc != MDB_NOTFOUND) {
			return xlate(rc);
		}
		MDB_stat st;
		MDB_cursor *c;
		if ((rc = mdb_stat(t->txn, db->dbi[BOOKDB_CHANGES], &st))) return xlate(rc);
		t->chg_entries = st.ms_entries;
		if ((rc = mdb_cursor_open(t->txn, db->dbi[BOOKDB_CHANGES], &c))) return xlate(rc);
		rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
		if (!rc && k.mv_size == 8 && be64_get(k.mv_data) > t->chg_seq)
			t->chg_seq = be64_get(k.mv_data);
		mdb_cursor_close(c);
		if (rc && rc != MDB_NOTFOUND) return xlate(rc);
	}
	t->chg_counted = true;
	return 0;
}

static int changes_set_state(BookTxn *t, uint8_t state)
{
	int rc = txn_write(t, BOOKDB_META, OP_PUT, META_CHANGES, strlen(META_CHANGES), &state, 1);
	if (!rc) t->chg_state = state;
	return rc;
}

/* Numbers and, while ON, logs a write of the pos record kb. */
static int changes_note(BookTxn *t, const uint8_t kb[16])
{
	int rc = changes_load(t, false);
	if (rc || t->chg_state == BOOKDB_CHANGES_OFF) return rc;
	t->chg_seq++;
	t->chg_dirty = true;
	if (t->chg_state == BOOKDB_CHANGES_ON && t->chg_entries >= t->db->changes_max &&
	    (rc = changes_set_state(t, BOOKDB_CHANGES_OVERFLOW)))
		return rc;
	if (t->chg_state != BOOKDB_CHANGES_ON) return 0;
	uint8_t sk[8];
	be64_put(sk, t->chg_seq);
	/* The largest key so far: appended, no search. */
	if ((rc = txn_write(t, BOOKDB_CHANGES, OP_APPEND, sk, 8, kb, 16))) return rc;
	t->chg_entries++;
	return 0;
}

/* Every write to pos goes through here: the write, then its change-log entry. */
static int pos_write(BookTxn *t, int op, const uint8_t kb[16], const void *val, size_t len)
{
	int rc = txn_write(t, BOOKDB_POS, op, kb, 16, val, len);
	if (rc || !t->track) return rc;
	return changes_note(t, kb);
}

int bookdb_txn_commit(BookTxn *t)
{
	int rc = 0;
	if (!t->txn) {
		txn_free(t);
		return BOOKDB_ELMDB;
	}
	/* The last sequence number given out survives consumed entries and overflow
	 * in meta; written once per transaction, and logged for a replay. */
	if (t->chg_dirty) {
		uint8_t seq[8];
		le64_put(seq, t->chg_seq);
		t->chg_dirty = false;
		rc = txn_write(t, BOOKDB_META, OP_PUT, META_CHANGES_SEQ, strlen(META_CHANGES_SEQ),
		               seq, 8);
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
	txn_free(t);
	return commit_err(dir, rc);
}

int bookdb_kv_get(const void **val, size_t *vlen, BookTxn *t, BookDbName db, const void *key,
                  size_t klen)
{
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	if (db == BOOKDB_CHANGES && !t->db->has_changes) return BOOKDB_ENOTFOUND;
	MDB_val k = {klen, (void *)key}, v;
	int rc = mdb_get(t->txn, t->db->dbi[db], &k, &v);
	if (rc) return xlate(rc);
	*val = v.mv_data;
	*vlen = v.mv_size;
	return 0;
}

int bookdb_kv_put(BookTxn *t, BookDbName db, const void *key, size_t klen, const void *val,
                  size_t vlen)
{
	if (db == BOOKDB_CHANGES || (db == BOOKDB_POS && klen != 16)) return BOOKDB_EINVAL;
	if (db == BOOKDB_POS) return pos_write(t, OP_PUT, key, val, vlen);
	return txn_write(t, db, OP_PUT, key, klen, val, vlen);
}

int bookdb_kv_del(BookTxn *t, BookDbName db, const void *key, size_t klen)
{
	if (db == BOOKDB_CHANGES || (db == BOOKDB_POS && klen != 16)) return BOOKDB_EINVAL;
	if (db == BOOKDB_POS) return pos_write(t, OP_DEL, key, NULL, 0);
	return txn_write(t, db, OP_DEL, key, klen, NULL, 0);
}

int bookdb_count(uint64_t *out, BookTxn *t, BookDbName db)
{
	MDB_stat st;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	if (db == BOOKDB_CHANGES && !t->db->has_changes) {
		*out = 0;
		return 0;
	}
	int rc = mdb_stat(t->txn, t->db->dbi[db], &st);
	if (rc) return xlate(rc);
	*out = st.ms_entries;
	return 0;
}

int bookdb_pages(uint64_t *pages, unsigned *page_size, BookTxn *t, BookDbName db)
{
	MDB_stat st;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((unsigned)db >= BOOKDB_NDBS) return BOOKDB_EINVAL;
	bool absent = db == BOOKDB_CHANGES && !t->db->has_changes;
	int rc = mdb_stat(t->txn, t->db->dbi[absent ? BOOKDB_META : db], &st);
	if (rc) return xlate(rc);
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
	return pos_write(t, OP_PUT, kb, val, len);
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
	int rc = mdb_cursor_open(t->txn, t->db->dbi[db], &it->cur);
	if (rc) {
		free(it);
		return xlate(rc);
	}
	*out = it;
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
	int rc = mdb_cursor_get(it->cur, &k, &v, it->started ? MDB_NEXT : MDB_FIRST);
	it->started = true;
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return xlate(rc);
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

void bookdb_iter_free(BookIter *it)
{
	if (!it) return;
	mdb_cursor_close(it->cur);
	free(it);
}

/* ---- batched writer ---- */

int bookdb_writer_new(BookWriter **out, BookDB *db, size_t batch)
{
	*out = NULL;
	if (db->read_only) return BOOKDB_EREADONLY;
	BookWriter *w = calloc(1, sizeof *w);
	if (!w) return BOOKDB_ENOMEM;
	w->db = db;
	w->batch = batch ? batch : 1;
	*out = w;
	return 0;
}

int bookdb_writer_txn(BookTxn **out, BookWriter *w)
{
	if (!w->txn) {
		int rc = bookdb_txn_begin(&w->txn, w->db, true);
		if (rc) return rc;
		w->txn->track = !w->no_track;
	}
	*out = w->txn;
	return 0;
}

int bookdb_writer_flush(BookWriter *w)
{
	if (!w->txn) return 0;
	BookTxn *t = w->txn;
	w->txn = NULL;
	w->pending = 0;
	int rc = bookdb_txn_commit(t);
	if (!rc) w->commits++;
	return rc;
}

int bookdb_writer_put_raw(BookWriter *w, Key key, const uint8_t *val, size_t len)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	if ((rc = bookdb_put_raw(t, key, val, len))) return rc;
	if (++w->pending >= w->batch) return bookdb_writer_flush(w);
	return 0;
}

int bookdb_writer_append(BookWriter *w, Key key, const uint8_t *val, size_t len)
{
	BookTxn *t;
	uint8_t kb[16];
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	key_to_bytes(key, kb);
	if ((rc = pos_write(t, OP_APPEND, kb, val, len))) return rc;
	if (++w->pending >= w->batch) return bookdb_writer_flush(w);
	return 0;
}

int bookdb_writer_put(BookWriter *w, Key key, const BookRecord *rec)
{
	uint8_t buf[BOOKDB_RECORD_MAX];
	int n = bookdb_record_encode(buf, sizeof buf, rec);
	if (n < 0) return n;
	return bookdb_writer_put_raw(w, key, buf, (size_t)n);
}

int bookdb_writer_get(BookRecord *out, BookWriter *w, Key key)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	return bookdb_get(out, t, key);
}

uint64_t bookdb_writer_commits(const BookWriter *w)
{
	return w->commits;
}

void bookdb_writer_set_tracking(BookWriter *w, bool on)
{
	w->no_track = !on;
	if (w->txn) w->txn->track = on;
}

void bookdb_writer_free(BookWriter *w)
{
	if (!w) return;
	bookdb_txn_abort(w->txn);
	free(w);
}

/* ---- change log: state and consumers ---- */

void bookdb_txn_set_tracking(BookTxn *t, bool on)
{
	t->track = on;
}

int bookdb_changes_enable(BookTxn *t)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	int rc = changes_load(t, true);
	return rc ? rc : changes_set_state(t, BOOKDB_CHANGES_ON);
}

int bookdb_changes_info(BookChangesInfo *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	/* The cache is what the transaction sees, its own numbering included. */
	int rc = changes_load(t, true);
	if (rc) return rc;
	out->state = (BookChangesState)t->chg_state;
	out->entries = t->chg_entries;
	out->seq = t->chg_seq;
	if (!t->db->has_changes || !t->chg_entries) return 0;
	MDB_cursor *c;
	MDB_val k, v;
	if ((rc = mdb_cursor_open(t->txn, t->db->dbi[BOOKDB_CHANGES], &c))) return xlate(rc);
	if (!(rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) && k.mv_size == 8) {
		out->first = be64_get(k.mv_data);
		if (!(rc = mdb_cursor_get(c, &k, &v, MDB_LAST)) && k.mv_size == 8)
			out->last = be64_get(k.mv_data);
	}
	mdb_cursor_close(c);
	if (rc) return xlate(rc);
	return k.mv_size == 8 ? 0 : BOOKDB_ECORRUPT;
}

int bookdb_changes_iter_open(BookChangesIter **out, BookTxn *t, uint64_t from)
{
	*out = NULL;
	if (!t->txn) return BOOKDB_ELMDB;
	BookChangesIter *it = calloc(1, sizeof *it);
	if (!it) return BOOKDB_ENOMEM;
	be64_put(it->from, from);
	if (t->db->has_changes) {
		int rc = mdb_cursor_open(t->txn, t->db->dbi[BOOKDB_CHANGES], &it->cur);
		if (rc) {
			free(it);
			return xlate(rc);
		}
	}
	*out = it;
	return 0;
}

int bookdb_changes_iter_next(BookChangesIter *it, uint64_t *seq, Key *key)
{
	if (!it->cur) return 0;
	MDB_val k = {8, it->from}, v;
	int rc = mdb_cursor_get(it->cur, &k, &v, it->started ? MDB_NEXT : MDB_SET_RANGE);
	it->started = true;
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return xlate(rc);
	if (k.mv_size != 8 || v.mv_size != 16) return BOOKDB_ECORRUPT;
	*seq = be64_get(k.mv_data);
	*key = key_from_bytes(v.mv_data);
	return 1;
}

void bookdb_changes_iter_free(BookChangesIter *it)
{
	if (!it) return;
	if (it->cur) mdb_cursor_close(it->cur);
	free(it);
}

int bookdb_changes_consume(BookTxn *t, uint64_t upto)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	int rc = changes_load(t, true);
	if (rc) return rc;
	if (upto && t->chg_entries) {
		uint8_t ub[8];
		MDB_stat st;
		be64_put(ub, upto);
		/* One log entry, replayed as one walk, however many entries go. */
		if ((rc = txn_write(t, BOOKDB_CHANGES, OP_DEL_UPTO, ub, 8, NULL, 0))) return rc;
		if ((rc = mdb_stat(t->txn, t->db->dbi[BOOKDB_CHANGES], &st))) return xlate(rc);
		t->chg_entries = st.ms_entries;
	}
	/* Writes numbered after upto were not seen by the consumer: keep the overflow. */
	if (t->chg_state == BOOKDB_CHANGES_OVERFLOW && upto >= t->chg_seq)
		return changes_set_state(t, BOOKDB_CHANGES_ON);
	return 0;
}

/* ---- space and compaction ---- */

int bookdb_space(BookSpace *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	MDB_envinfo info;
	MDB_stat ms;
	int rc = mdb_env_info(t->db->env, &info);
	if (!rc) rc = mdb_env_stat(t->db->env, &ms); /* the main database: the named ones' roots */
	if (rc) return xlate(rc);
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
	char path[4200], tmp[4200];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	snprintf(tmp, sizeof tmp, "%s/data.mdb.compact", dir);
	BookDB *db = NULL;
	BookDBOptions ro = {.read_only = true};
	int rc = bookdb_open(&db, dir, &ro, err);
	if (rc) return rc;
	int fd = -1;
	/* No writer may have the data file open while it is replaced. */
	if ((rc = writers_lock(db, LOCK_EX, err))) goto done;
	*before = bookdb_file_size(db);
	/* A copy left by a compaction killed before its rename is not the book. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	if (fd < 0) {
		rc = xlate(errno);
		if (err) snprintf(err, BOOKDB_ERRLEN, "%.200s: %s", tmp, strerror(errno));
		goto done;
	}
	if ((rc = mdb_env_copyfd2(db->env, fd, MDB_CP_COMPACT)) || fsync(fd) < 0) {
		int e = rc ? rc : errno;
		if (err)
			snprintf(err, BOOKDB_ERRLEN, "%.200s: %s", tmp,
			         rc ? mdb_strerror(rc) : strerror(e));
		rc = xlate(e);
		goto done;
	}
	close(fd);
	fd = -1;
	/* The copy is whole and on disk: the rename is the one step that
	 * switches the book, and either name is a complete book. */
	if (rename(tmp, path) < 0) {
		rc = xlate(errno);
		if (err) snprintf(err, BOOKDB_ERRLEN, "%.200s: %s", path, strerror(errno));
		goto done;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	*after = bookdb_file_size(db);
	rc = 0;
done:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	bookdb_free(db);
	return rc;
}
