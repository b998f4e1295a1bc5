/* bookdb/compact.c — space in use and the compacting copy (bookdb.h). */
#include "bookdb/bookdb.h"
#include "bookdb/bookdb_priv.h"
#include "shogi/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* tf's function over one record of pos (v: its new bytes, in tf->buf, when
 * it gives some); whether the counts stay as they were is noted. 0, an
 * LMDB code, or tf's code (kept in tf->fn_rc, returned as MDB_PANIC). */
static int transform(BdbTransform *tf, const MDB_val *k, MDB_val *v)
{
	if (k->mv_size != 16) return 0; /* not a record (check reports it): as it is */
	int n = tf->fn(tf->ctx, key_from_bytes(k->mv_data), v->mv_data, v->mv_size, tf->buf);
	if (n < 0) {
		tf->fn_rc = n;
		return MDB_PANIC;
	}
	if (n == 0) return 0;
	BookRecordHead a, b;
	if (bookdb_record_peek(&a, v->mv_data, v->mv_size) < 0 ||
	    bookdb_record_peek(&b, tf->buf, (size_t)n) < 0 || a.nmoves != b.nmoves ||
	    (a.flags & BOOKDB_REC_THOUGHT) != (b.flags & BOOKDB_REC_THOUGHT))
		tf->counts_same = false;
	tf->rewritten++;
	v->mv_data = tf->buf;
	v->mv_size = (size_t)n;
	return 0;
}

/* (bookdb_priv.h) Commits every COPY_BATCH bytes, unsynced; synced once at
 * the end. */
#define COPY_BATCH ((size_t)32 << 20)

/* One record into the copy, *wr committed and begun anew every COPY_BATCH
 * bytes (*batch: the bytes since). 0 or an LMDB code. */
static int put_copy(MDB_env *env, MDB_txn **wr, MDB_dbi to, MDB_val *k, MDB_val *v, unsigned put,
                    size_t *batch)
{
	int rc = mdb_put(*wr, to, k, v, put);
	if (!rc && (*batch += k->mv_size + v->mv_size + 16) >= COPY_BATCH) {
		rc = mdb_txn_commit(*wr);
		*wr = NULL;
		if (!rc) rc = mdb_txn_begin(env, NULL, 0, wr);
		*batch = 0;
	}
	return rc;
}

/*
 * pos's records through tf with tf's function on a thread of its own: the
 * cursor's records go to it in batches, and while it rewrites one batch the
 * one before is put (two batches, in turn). The function is called in key
 * order, one call at a time, as on the copying thread; the record bytes
 * handed to it are the read transaction's, which outlives the thread.
 */
#define PIPE_RECORDS 4096

typedef struct {
	MDB_val k[PIPE_RECORDS], v[PIPE_RECORDS];
	size_t off[PIPE_RECORDS]; /* a rewritten record's bytes in out; SIZE_MAX: as it was */
	size_t n;
	uint8_t *out;
	size_t out_len, out_cap;
	int rc;    /* transform's code for record n (the batch ends before it) */
	bool last; /* the cursor's last records */
	int state; /* PIPE_EMPTY, PIPE_FILLED (the thread's), PIPE_DONE (to put) */
} PipeBatch;

enum { PIPE_EMPTY, PIPE_FILLED, PIPE_DONE };

typedef struct {
	BdbTransform *tf;
	PipeBatch b[2];
	pthread_mutex_t m;
	pthread_cond_t c;
	bool quit; /* the copy failed: no more batches */
} Pipe;

/* The thread: batch 0, 1, 0, ... rewritten as they are filled. */
static void *pipe_main(void *arg)
{
	Pipe *p = arg;
	for (int i = 0;; i ^= 1) {
		PipeBatch *b = &p->b[i];
		pthread_mutex_lock(&p->m);
		while (b->state != PIPE_FILLED && !p->quit) pthread_cond_wait(&p->c, &p->m);
		bool go = b->state == PIPE_FILLED;
		pthread_mutex_unlock(&p->m);
		if (!go) return NULL;
		b->out_len = 0;
		for (size_t j = 0; j < b->n; j++) {
			b->off[j] = SIZE_MAX;
			int rc = transform(p->tf, &b->k[j], &b->v[j]);
			if (rc == 0 && b->v[j].mv_data == p->tf->buf) {
				size_t len = b->v[j].mv_size;
				if (b->out_len + len > b->out_cap) {
					size_t cap = (b->out_len + len) * 2;
					uint8_t *o = realloc(b->out, cap);
					if (o) {
						b->out = o;
						b->out_cap = cap;
					} else {
						rc = ENOMEM;
					}
				}
				if (rc == 0) {
					memcpy(b->out + b->out_len, p->tf->buf, len);
					b->off[j] = b->out_len;
					b->out_len += len;
				}
			}
			if (rc) {
				b->rc = rc;
				b->n = j;
				break;
			}
		}
		bool last = b->last || b->rc;
		pthread_mutex_lock(&p->m);
		b->state = PIPE_DONE;
		pthread_cond_broadcast(&p->c);
		pthread_mutex_unlock(&p->m);
		if (last) return NULL;
	}
}

/* Up to PIPE_RECORDS of the cursor's records into b (op: where the cursor
 * goes first); 0 or an LMDB code. */
static int pipe_fill(PipeBatch *b, MDB_cursor *cur, int *op, BdbPassAhead *ahead)
{
	b->n = 0;
	b->rc = 0;
	while (b->n < PIPE_RECORDS) {
		int rc = mdb_cursor_get(cur, &b->k[b->n], &b->v[b->n], (MDB_cursor_op)*op);
		*op = MDB_NEXT;
		if (rc == MDB_NOTFOUND) {
			b->last = true;
			return 0;
		}
		if (rc) return rc;
		bdb_pass_ahead_step(ahead, &b->k[b->n]);
		b->n++;
	}
	return 0;
}

/* copy_db's loop for pos through tf (wr, to: the copy's; *wr the transaction
 * open at the end). 0, an LMDB code, or -1 when no thread could be made
 * (nothing done). */
static int copy_piped(MDB_env *env, MDB_txn **wr, MDB_dbi to, MDB_cursor *cur, unsigned put,
                      BdbTransform *tf, BdbPassAhead *ahead, atomic_uint_fast64_t *copied,
                      uint64_t *met)
{
	Pipe *p = calloc(1, sizeof *p);
	if (!p) return -1;
	p->tf = tf;
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->c, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, pipe_main, p) != 0) {
		pthread_mutex_destroy(&p->m);
		pthread_cond_destroy(&p->c);
		free(p);
		return -1;
	}
	int rc = 0, op = MDB_FIRST;
	size_t batch = 0;
	/* Batch i is filled while the thread rewrites the other, then put. */
	for (int i = 0, filled = 0; !rc; i ^= 1) {
		PipeBatch *b = &p->b[i], *next = &p->b[i ^ 1];
		if (!filled) { /* the first */
			if ((rc = pipe_fill(b, cur, &op, ahead))) break;
			pthread_mutex_lock(&p->m);
			b->state = PIPE_FILLED;
			pthread_cond_broadcast(&p->c);
			pthread_mutex_unlock(&p->m);
			filled = 1;
		}
		if (!b->last) {
			if ((rc = pipe_fill(next, cur, &op, ahead))) break;
			pthread_mutex_lock(&p->m);
			next->state = PIPE_FILLED;
			pthread_cond_broadcast(&p->c);
			pthread_mutex_unlock(&p->m);
		}
		pthread_mutex_lock(&p->m);
		while (b->state != PIPE_DONE) pthread_cond_wait(&p->c, &p->m);
		pthread_mutex_unlock(&p->m);
		for (size_t j = 0; j < b->n && !rc; j++) {
			MDB_val v = b->v[j];
			if (b->off[j] != SIZE_MAX) v.mv_data = b->out + b->off[j];
			rc = put_copy(env, wr, to, &b->k[j], &v, put, &batch);
		}
		if (!rc) rc = b->rc;
		if (!rc) *met += b->n;
		if (!rc && copied) atomic_fetch_add_explicit(copied, b->n, memory_order_relaxed);
		bool last = b->last;
		pthread_mutex_lock(&p->m);
		b->state = PIPE_EMPTY;
		pthread_mutex_unlock(&p->m);
		if (last) break;
	}
	pthread_mutex_lock(&p->m);
	p->quit = true;
	pthread_cond_broadcast(&p->c);
	pthread_mutex_unlock(&p->m);
	pthread_join(t, NULL);
	pthread_mutex_destroy(&p->m);
	pthread_cond_destroy(&p->c);
	free(p->b[0].out);
	free(p->b[1].out);
	free(p);
	return rc;
}

/* One database of rd copied into env under the same name and flags, in key
 * order with MDB_APPEND (MDB_APPENDDUP for sorted duplicates); pos's records
 * through tf when given. */
static int copy_db(MDB_env *env, MDB_txn *rd, const char *name, BdbTransform *tf,
                   atomic_uint_fast64_t *copied)
{
	if (strcmp(name, DB_NAMES[BOOKDB_POS])) {
		tf = NULL;
		copied = NULL;
	}
	MDB_dbi from = 0, to;
	unsigned flags = 0;
	MDB_txn *wr = NULL;
	MDB_cursor *cur = NULL;
	int rc = mdb_dbi_open(rd, name, 0, &from);
	if (!rc) rc = mdb_dbi_flags(rd, from, &flags);
	if (!rc) rc = mdb_txn_begin(env, NULL, 0, &wr);
	if (!rc) rc = mdb_dbi_open(wr, name, (flags & ~(unsigned)MDB_CREATE) | MDB_CREATE, &to);
	if (!rc) rc = mdb_cursor_open(rd, from, &cur);
	unsigned put = flags & MDB_DUPSORT ? MDB_APPENDDUP : MDB_APPEND;
	MDB_val k, v;
	size_t batch = 0;
	bool piped = false;
	uint64_t met = 0;
	/* The source read ahead where it has no kernel read-ahead (a book
	 * larger than memory, opened for random reads: bookdb/scan.c). */
	BdbPassAhead ahead;
	bdb_pass_ahead_init(&ahead, rd, from, !strcmp(name, DB_NAMES[BOOKDB_POS]));
	if (!rc && tf) {
		int pr = copy_piped(env, &wr, to, cur, put, tf, &ahead, copied, &met);
		piped = pr != -1; /* -1: no thread, the records are rewritten here */
		if (piped) rc = pr;
	}
	for (int op = MDB_FIRST; !rc && !piped; op = MDB_NEXT) {
		if ((rc = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op))) {
			if (rc == MDB_NOTFOUND) rc = 0; /* the end */
			break;
		}
		bdb_pass_ahead_step(&ahead, &k);
		if (tf && (rc = transform(tf, &k, &v))) break;
		if ((rc = put_copy(env, &wr, to, &k, &v, put, &batch))) break;
		met++;
		if (copied) atomic_fetch_add_explicit(copied, 1, memory_order_relaxed);
	}
	bdb_pass_ahead_end(&ahead);
	if (cur) mdb_cursor_close(cur);
	/* Entries the database counts that the copy did not meet: a damaged
	 * leaf page hides them without an error from LMDB, and the new file
	 * would hold the book without them, whole to every later check. */
	MDB_stat ms;
	if (!rc && mdb_stat(rd, from, &ms) == 0 && met < ms.ms_entries) rc = BDB_HIDDEN;
	if (!rc) {
		rc = mdb_txn_commit(wr);
		wr = NULL;
	}
	if (wr) mdb_txn_abort(wr);
	return rc;
}

const char *bdb_rebuild_strerror(int rc)
{
	return rc == BDB_HIDDEN ? "the book's database counts records the copy could not read "
	                          "(a damaged page hides them; joseki check counts them): "
	                          "nothing written"
	                        : mdb_strerror(rc);
}

int bdb_rebuild(MDB_env *src, uint64_t src_bytes, const char *path, BdbTransform *tf,
                atomic_uint_fast64_t *copied)
{
	MDB_env *env;
	MDB_txn *rd = NULL;
	MDB_cursor *cur = NULL;
	char **names = NULL;
	size_t nnames = 0;
	int rc = mdb_env_create(&env);
	if (rc) return rc;
	/* Never larger than the pages the book uses now (the same records, in
	 * fuller pages): its file's size, and room for the restamp; records a
	 * transform rewrites may each grow, to at most twice the size. */
	size_t map = (size_t)src_bytes * (tf ? 2 : 1) + ((size_t)64 << 20);
	MDB_dbi main_db;
	if ((rc = mdb_env_set_maxdbs(env, 32)) || (rc = mdb_env_set_mapsize(env, map)) ||
	    (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC, 0664)) ||
	    (rc = mdb_txn_begin(src, NULL, MDB_RDONLY, &rd)) ||
	    (rc = mdb_dbi_open(rd, NULL, 0, &main_db)) || (rc = mdb_cursor_open(rd, main_db, &cur)))
		goto done;
	/* Every named database the file holds (its main database lists them),
	 * not only those this build knows: a newer build's stays. */
	MDB_val k, v;
	for (int op = MDB_FIRST; !rc; op = MDB_NEXT) {
		if ((rc = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op))) {
			if (rc == MDB_NOTFOUND) rc = 0; /* the end */
			break;
		}
		char **nn = realloc(names, (nnames + 1) * sizeof *nn);
		char *name = malloc(k.mv_size + 1);
		if (!nn || !name) {
			if (nn) names = nn;
			free(name);
			rc = ENOMEM;
			break;
		}
		names = nn;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = 0;
		names[nnames++] = name;
	}
	mdb_cursor_close(cur);
	/* A key of the main database that is no database (MDB_INCOMPATIBLE) is
	 * not what a book holds: refused rather than left out. */
	for (size_t i = 0; i < nnames && !rc; i++) rc = copy_db(env, rd, names[i], tf, copied);
	if (!rc) rc = mdb_env_sync(env, 1);
done:
	for (size_t i = 0; i < nnames; i++) free(names[i]);
	free(names);
	if (rd) mdb_txn_abort(rd);
	mdb_env_close(env);
	return rc;
}

typedef struct {
	void (*fn)(void *);
	void *arg;
	atomic_bool done;
} Watched;

static void *watched_main(void *arg)
{
	Watched *w = arg;
	w->fn(w->arg);
	atomic_store(&w->done, true);
	return NULL;
}

/* What the watcher reports: the count, or the file's size (0 while there
 * is no file yet). */
static uint64_t watched_done(const atomic_uint_fast64_t *count, const char *path)
{
	struct stat sb;
	if (count) return atomic_load_explicit(count, memory_order_relaxed);
	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

void bdb_run_watched(void (*fn)(void *), void *arg, const atomic_uint_fast64_t *count,
                     const char *path, uint64_t total, BookProgressFn progress, void *ctx)
{
	Watched w = {.fn = fn, .arg = arg};
	atomic_init(&w.done, false);
	pthread_t th;
	if (!progress || pthread_create(&th, NULL, watched_main, &w) != 0) {
		fn(arg);
		return;
	}
	while (!atomic_load(&w.done)) {
		progress(ctx, watched_done(count, path), total);
		/* 200 ms, in slices: a short run is not kept waiting for it. */
		for (int k = 0; k < 20 && !atomic_load(&w.done); k++) usleep(10000);
	}
	pthread_join(th, NULL);
	progress(ctx, watched_done(count, path), total); /* where it ended */
}

typedef struct {
	MDB_env *src;
	uint64_t src_bytes;
	const char *path;
	BdbTransform *tf;
	int rc;
	atomic_uint_fast64_t copied;
} Rebuild;

static void rebuild_main(void *arg)
{
	Rebuild *r = arg;
	r->rc = bdb_rebuild(r->src, r->src_bytes, r->path, r->tf, &r->copied);
}

/*
 * The book open in db rebuilt (pos's records through tf, when given) into
 * dir/data.mdb.compact and renamed over data.mdb, its kept counts and scan
 * stamped into the copy when they were current (and tf kept the counts).
 * The caller holds the writers lock alone. 0 or a code with err.
 */
static int replace_rebuilt(BookDB *db, BdbTransform *tf, uint64_t *before, uint64_t *after,
                           BookProgressFn progress, void *ctx, char *err)
{
	const char *dir = bookdb_dir(db);
	char path[BOOKDB_PATH_LEN], tmp[BOOKDB_PATH_LEN];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	snprintf(tmp, sizeof tmp, "%s/" BDB_REBUILD_COPY, dir);
	int fd = -1;
	*before = bookdb_file_size(db);
	/* A copy left by a compaction killed before its rename is not the book. */
	unlink(tmp);
	/* What is current in the book now stays so in the copy, which LMDB
	 * numbers afresh (bookdb.h, "Kept counts"): no writer can commit in
	 * between (the lock). */
	BookTxn *t;
	BookCounts counts;
	BookScanKept scan = {0};
	uint64_t records = 0;
	int rc;
	if ((rc = bookdb_txn_begin(&t, db, false)) == 0) {
		if ((rc = bookdb_counts(&counts, t)) == 0) rc = bookdb_scan_get(&scan, t);
		if (!rc) rc = bookdb_count(&records, t, BOOKDB_POS);
		bookdb_txn_abort(t);
	}
	/* The stamp data kept beside the book carries (bookdb_stamp_carry). */
	BookStamp src;
	if (rc == 0) rc = bookdb_stamp(&src, db);
	if (rc) return errmsg_set(err, BOOKDB_ERRLEN, rc, "%.200s: %s", dir, bookdb_strerror(rc));
	if (tf) tf->counts_same = true;
	Rebuild r = {db->env, *before, tmp, tf, 0, 0};
	bdb_run_watched(rebuild_main, &r, &r.copied, tmp, records, progress, ctx);
	if ((rc = r.rc) == MDB_PANIC && tf && tf->fn_rc) {
		unlink(tmp);
		return tf->fn_rc;
	}
	/* A record rewritten writes the book: the last scan is not current. */
	bool counts_ok = counts.kept && (!tf || tf->counts_same);
	bool scan_ok = scan.current && (!tf || !tf->rewritten);
	if (rc || (rc = bdb_counts_restamp_copy(tmp, counts_ok, scan_ok, &src)) ||
	    (fd = open(tmp, O_RDONLY | O_CLOEXEC)) < 0 || fsync(fd) < 0) {
		int e = rc ? rc : errno;
		/* LMDB gives a short write, what a disk filled by the copy
		 * gives, as EIO: told apart by the room left, before the copy
		 * is removed. */
		int code = bdb_commit_err(dir, e);
		rc =
		    errmsg_set(err, BOOKDB_ERRLEN, code, "%.200s: %s", rc == BDB_HIDDEN ? dir : tmp,
		               code == BOOKDB_ENOSPC
		                   ? "No space left on device (writing the book anew needs room "
		                     "for a copy beside it)"
		               : rc ? bdb_rebuild_strerror(rc)
		                    : strerror(e));
		if (fd >= 0) close(fd);
		unlink(tmp);
		return rc;
	}
	close(fd);
	/* The copy is whole and on disk: the rename is the one step that
	 * switches the book, and either name is a complete book. LMDB's lock
	 * file goes with the old one (bdb_open_lock): the processes that have
	 * it open keep it, with the old file; the first to open the new file
	 * makes a new one. */
	char lockf[BOOKDB_PATH_LEN];
	snprintf(lockf, sizeof lockf, "%s/lock.mdb", dir);
	int lk = bdb_open_lock(dir, LOCK_EX);
	/* Killed between the rename and the removal, the next open removes it. */
	if (lk >= 0) (void)bdb_lock_owner_put(lk, dir);
	int rrc = rename(tmp, path), e = errno;
	if (rrc == 0) {
		unlink(lockf);
		if (lk >= 0) (void)bdb_lock_owner_put(lk, dir);
	}
	if (lk >= 0) close(lk);
	if (rrc < 0) {
		unlink(tmp);
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s: %s", path,
		                  strerror(e));
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
		return errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e),
		                  "%.200s: the new book is in place, but syncing the directory "
		                  "failed (%s): a crash now may bring back the old one",
		                  dir, strerror(e));
	}
	close(dfd);
	return 0;
}

int bookdb_compact(const char *dir, uint64_t *before, uint64_t *after, BookProgressFn progress,
                   void *ctx, char *err)
{
	*before = *after = 0;
	if (err) err[0] = 0;
	BookDB *db = NULL;
	BookDBOptions ro = {.read_only = true, .random = true}; /* passes read ahead: bookdb.h */
	int rc = bookdb_open(&db, dir, &ro, err); /* refuses a path over BOOKDB_DIR_MAX */
	if (rc) return rc;
	/* No writer may have the data file open while it is replaced. */
	if ((rc = bdb_writers_lock(db, LOCK_EX, err)) == 0)
		rc = replace_rebuilt(db, NULL, before, after, progress, ctx, err);
	bookdb_free(db);
	return rc;
}

int bookdb_rebuild_rewrite(BookDB *db, BookRebuildFn fn, void *ctx, uint64_t *rewritten,
                           uint64_t *before, uint64_t *after, char *err)
{
	*rewritten = *before = *after = 0;
	if (err) err[0] = 0;
	if (db->read_only || db->writers_fd < 0) return BOOKDB_EREADONLY;
	/* The shared lock becomes the sole one: refused at once while another
	 * writer holds it. Linux drops the shared lock when the change is
	 * refused: it is taken again, and a book replaced in that moment (a
	 * compaction) is not the one db reads. */
	if (flock(db->writers_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (flock(db->writers_fd, LOCK_SH | LOCK_NB) < 0 || !bookdb_file_current(db))
			return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ESTALE,
			                  "%.200s: the book was written anew meanwhile (joseki "
			                  "compact): run again",
			                  bookdb_dir(db));
		return e == EWOULDBLOCK
		           ? BOOKDB_EBUSY
		           : errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(e), "%.200s/writers.lock: %s",
		                        bookdb_dir(db), strerror(e));
	}
	BdbTransform tf = {.fn = fn, .ctx = ctx, .buf = malloc(BOOKDB_RECORD_MAX)};
	int rc = tf.buf ? replace_rebuilt(db, &tf, before, after, NULL, NULL, err)
	                : errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM, "out of memory");
	free(tf.buf);
	*rewritten = tf.rewritten;
	/* The new file, once in place, is the one db works on. */
	if (!bookdb_file_current(db)) {
		char rerr[BOOKDB_ERRLEN];
		int r2 = bookdb_reopen(db, rerr);
		if (r2 && !rc) rc = errmsg_set(err, BOOKDB_ERRLEN, r2, "%s", rerr);
	}
	if (flock(db->writers_fd, LOCK_SH | LOCK_NB) < 0 && !rc)
		rc = errmsg_set(err, BOOKDB_ERRLEN, bdb_xlate(errno), "%.200s/writers.lock: %s",
		                bookdb_dir(db), strerror(errno));
	return rc;
}
