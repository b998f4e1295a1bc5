/*
 * bookdb/bookdb_priv.h — what the store's own files share (bookdb.c: the
 * environment, transactions, reads and writes; changes.c: the change log;
 * writer.c: the batched writer; compact.c: space and compaction). Not for use
 * outside bookdb/.
 */
#ifndef BOOKDB_BOOKDB_PRIV_H
#define BOOKDB_BOOKDB_PRIV_H

#include <lmdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/be64.h"

#define DEFAULT_MAP_SIZE ((size_t)256 << 20)

extern const char *const DB_NAMES[BOOKDB_NDBS];

/* Meta keys of the change log (docs/bookdb.md): the state, one byte; the last
 * sequence number given out, 8 bytes little-endian. */
#define META_CHANGES "changes"
#define META_CHANGES_SEQ "changes_seq"
#define META_CHANGES_HOLD "changes_hold"
/* Meta keys of the kept counts and the last scan's (counts.c). */
#define META_COUNTS "counts"
#define META_SCAN "scan"
/* Meta key of the stamps of the files a book was written anew from (counts.c,
 * bookdb_stamp_carry). */
#define META_ORIGIN "origin"

struct BookDB {
	MDB_env *env;
	MDB_dbi dbi[BOOKDB_NDBS];
	bool read_only;
	bool random;      /* opened for random reads: no read-ahead (BookDBOptions.random) */
	bool unlocked;    /* read without LMDB's lock file (bookdb_unlocked) */
	bool has_changes; /* false only for a version-1 book opened read-only */
	bool has_marks;   /* false only for a book without marks opened read-only */
	uint64_t changes_max;
	char *dir;
	int writers_fd; /* BOOK/writers.lock, held shared by a read-write open (-1: none) */
};

/* bookdb/damage.c: registers db (its directory, its map, LMDB's assertion
 * callback) for naming it when LMDB stops on a bad page; again after
 * mdb_env_open (opened: the map is there) and whenever the map moved
 * (mdb_env_set_mapsize). */
void bdb_damage_watch(BookDB *db, bool opened);
void bdb_damage_unwatch(const BookDB *db);
/* db is check --repair's new book, written as partial (removed when LMDB
 * stops on the damaged one); (NULL, NULL) when done. */
void bdb_damage_output(const BookDB *db, const char *partial);

/* Operations of the replay log. OP_DEL_UPTO deletes the changes entries whose
 * 8-byte key is <= the logged key (bookdb_changes_consume). */
enum { OP_PUT = 1, OP_DEL = 2, OP_APPEND = 3, OP_DEL_UPTO = 4 };

/* Bytes of a replay-log entry before its key: u8 db, u8 op, u32 klen, u32 vlen. */
#define LOG_HEADER 10

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
	/* The kept counts (counts.c), read at the first pos write or at commit;
	 * cnt_valid: they describe the records, and this transaction's writes
	 * are added to them as it makes them (else its commit counts them all). */
	bool cnt_loaded, cnt_valid;
	uint64_t cnt_pos, cnt_thought, cnt_moves;
	uint8_t *log;
	size_t log_len, log_cap;
	/* bookdb_rewrite's cursor on pos (NULL until its first call, and after
	 * the transaction was begun again); rw_at: it stands on the record the
	 * last call read or wrote, and no other write came since. */
	MDB_cursor *rw_cur;
	bool rw_at;
};

/*
 * Passes read ahead (bookdb/scan.c), where the map has no kernel read-ahead
 * (MDB_NORDAHEAD: BookDBOptions.random in effect) and a page is read alone.
 * A pass over the pos database (hashed keys, spread evenly) gets helper
 * threads that walk the chunks of its key space just ahead of it, each in a
 * read transaction of its own, so that many of its pages are read at once;
 * a pass over another database, or one too small to cut, or one whose threads
 * do not start, asks the kernel for a window ahead where it meets page after
 * page in file order (a database written in key order), doubling (16 KiB to
 * 1 MiB) as long as that goes on, and for nothing where the pages jump about.
 * bdb_pass_ahead_init before the pass (pos: over the pos database), then
 * bdb_pass_ahead_step with each key the pass reads (the threads start at the
 * first), bdb_pass_ahead_end after it (joins the threads); _chunks counts the
 * chunks the threads walked.
 */
typedef struct BdbScanAhead BdbScanAhead;
typedef struct {
	uintptr_t last;     /* the page last met */
	uintptr_t asked_to; /* the end of the window last asked for */
	size_t win;         /* the last window's length (0: not in a run) */
} BdbAhead;
typedef struct {
	MDB_txn *txn;
	MDB_dbi dbi;
	bool on;      /* the map has no kernel read-ahead */
	bool pos;     /* over the pos database: threads */
	bool started; /* the first key was met */
	BdbScanAhead *sa;
	BdbAhead window;
} BdbPassAhead;
void bdb_pass_ahead_init(BdbPassAhead *p, MDB_txn *txn, MDB_dbi dbi, bool pos);
void bdb_pass_ahead_step(BdbPassAhead *p, const MDB_val *key);
uint64_t bdb_pass_ahead_chunks(const BdbPassAhead *p);
void bdb_pass_ahead_end(BdbPassAhead *p);

struct BookIter {
	MDB_cursor *cur;
	BdbPassAhead ahead; /* on a book read at random, the pass reads ahead itself */
	bool pos;           /* over the pos database: its steps count in bookdb_pos_reads */
	bool started;
	MDB_val from; /* bookdb_kv_iter_open_at: the first call seeks here (mv_data NULL: none) */
	uint8_t from_buf[64];
	/* A pass from the first entry in a read-only transaction tallies what it
	 * met against the database's own count (entries) at its end: a damaged
	 * leaf page hides entries without an error from LMDB (tally false:
	 * bookdb_iter_untallied, or a ranged pass, or a write transaction). */
	bool tally;
	uint64_t met, entries;
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

static inline void le64_put(uint8_t out[8], uint64_t x)
{
	for (int i = 0; i < 8; i++, x >>= 8) out[i] = (uint8_t)x;
}

static inline uint64_t le64_get(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
	return x;
}

/* Internal helpers of bookdb.c used by the other files. */
int bdb_xlate(int rc);                       /* an LMDB or errno code as BOOKDB_* */
int bdb_commit_err(const char *dir, int rc); /* a failed commit: ENOSPC told apart */
int bdb_txn_write(BookTxn *t, BookDbName db, int op, const void *k, size_t kl, const void *v,
                  size_t vl); /* a logged write (replayed on map growth) */
int bdb_writers_lock(BookDB *db, int how, char *err);
/*
 * BOOK/open.lock, taken with flock (how: LOCK_SH or LOCK_EX, waiting): every
 * open of the book's LMDB environment holds it shared; a data file is put in
 * place of another (compact, a whole-book minimax's rebuild) with it held
 * alone, and LMDB's lock file removed in the same step. LMDB keeps its last
 * transaction id in the lock file's shared memory, which only the first
 * process to open the lock file sets from the data file: a process that
 * opened the new data file beside a lock file still open elsewhere on the
 * old one (a serve reading it) would number its commits after the old file's
 * and lose them. Returns the descriptor (close it to let go), or -1 when the
 * file cannot be opened (a book on a read-only file system: nothing can
 * replace its files either).
 */
int bdb_open_lock(const char *dir, int how);
/* Writes into open.lock (lk, held alone) that LMDB's lock file belongs to
 * dir/data.mdb as it is now; 0 or -1. A switch writes the old data file's
 * before its rename and the new one's after removing the lock file: an open
 * that finds another data file than the one written (a switch killed in
 * between) removes the lock file first. */
int bdb_lock_owner_put(int lk, const char *dir);
/* changes.c */
int bdb_changes_load(BookTxn *t, bool counts);
int bdb_changes_set_state(BookTxn *t, uint8_t state);
int bdb_changes_note(BookTxn *t, const uint8_t kb[16]);
/* counts.c: what a pos write replaces, read before it (bdb_counts_before)
 * and taken off the kept counts with the new record added after it
 * (bdb_counts_after); the counts written at commit. */
typedef struct {
	bool had;
	uint64_t thought, moves;
} BookCountsDelta;
int bdb_counts_before(BookTxn *t, int op, const uint8_t kb[16], BookCountsDelta *d);
/* bdb_counts_before for a put over the record old, already read. */
int bdb_counts_replacing(BookTxn *t, const void *old, size_t len, BookCountsDelta *d);
void bdb_counts_after(BookTxn *t, const BookCountsDelta *d, int op, const void *val, size_t len);
int bdb_counts_commit(BookTxn *t);
/* A new book's counts (none of anything), in its first transaction; an LMDB
 * code. */
int bdb_counts_init(MDB_txn *txn, MDB_dbi meta);
/* The compacting copy at path (one file): the kept counts and the scan
 * stamped with its transaction when they were current in the source, else
 * dropped; src, the source's stamp, put first among the files the copy was
 * written from (NULL: the copy is not the book's next file, a backup: that
 * list dropped); an LMDB code. */
int bdb_counts_restamp_copy(const char *path, bool counts_ok, bool scan_ok, const BookStamp *src);
extern _Thread_local uint64_t bdb_pos_reads_tls;
/* Every write to pos: the kept counts, the write, then its change-log entry. */
int bdb_pos_write(BookTxn *t, int op, const uint8_t kb[16], const void *val, size_t len);

/* The new file a rebuild (compact, bookdb_rebuild_rewrite) writes in BOOK
 * before renaming it over data.mdb. */
#define BDB_REBUILD_COPY "data.mdb.compact"

/* What bdb_rebuild does to pos's records on the way (bookdb_rebuild_rewrite). */
typedef struct {
	BookRebuildFn fn;
	void *ctx;
	uint8_t *buf;     /* BOOKDB_RECORD_MAX bytes: fn's output */
	bool counts_same; /* set by the caller; cleared when a record's count changes */
	int fn_rc;        /* fn's negative code, when it stopped the copy */
	uint64_t rewritten;
} BdbTransform;

/*
 * The databases of the book open in src (a snapshot of it; src_bytes its
 * file's size) rebuilt into a new LMDB file at path (empty or missing), each
 * in key order with MDB_APPEND: every leaf page is filled before the next is
 * begun. LMDB's compacting copy only leaves the free pages out, and pages
 * split by records that grew in place (minimax's values) stay half full: a
 * book after a whole-book minimax run took twice the bytes of one before it.
 * pos's records through tf (NULL: copied as they are). Synced at the end.
 * copied (may be NULL) counts pos's records as they are put, for a watcher
 * on another thread.
 * 0, or an LMDB error or errno (MDB_PANIC with tf->fn_rc when tf's function
 * stopped it).
 */
/* bdb_rebuild's code when a database of the source counts more entries than
 * its copy met: a damaged leaf page hides them without an error from LMDB
 * (BOOKDB_ECORRUPT to bdb_xlate; bdb_rebuild_strerror says it). */
#define BDB_HIDDEN (MDB_LAST_ERRCODE + 64)
/* mdb_strerror, and BDB_HIDDEN's words. */
const char *bdb_rebuild_strerror(int rc);
int bdb_rebuild(MDB_env *src, uint64_t src_bytes, const char *path, BdbTransform *tf,
                atomic_uint_fast64_t *copied);

/* fn(arg) run on a thread of its own while this one calls progress(ctx,
 * done, total) about every 200 ms, and once more when fn has returned: done
 * is *count, or without count the size of the file at path (progress NULL,
 * or no thread to be had: fn runs on this thread, unwatched). */
void bdb_run_watched(void (*fn)(void *), void *arg, const atomic_uint_fast64_t *count,
                     const char *path, uint64_t total, BookProgressFn progress, void *ctx);

#endif
