/*
 * bookdb/bookdb.h — the book store: one LMDB environment per BOOK directory.
 *
 * A book holds six named databases:
 *   meta     schema version, creation settings, change-log state (small pairs)
 *   pos      16-byte big-endian Zobrist key (key_to_bytes) -> position record
 *            (bookdb/record.h)
 *   games    ids of ingested games -> caller-defined bytes (re-ingesting is a no-op)
 *   work     work state (leases) for the cluster; free-form key/value
 *   changes  the change log of pos: 8-byte big-endian sequence number -> the
 *            16-byte key of the pos record written (see "Change log" below)
 *   marks    the hand marks and prune's marks on book moves (bookdb/marks.h):
 *            the position's 16-byte key and the move -> kind, source, time, note
 * Byte layouts: docs/bookdb.md.
 *
 * Concurrency rule: ONE writer process at a time, any number of reader processes
 * (LMDB MVCC: a read transaction sees the snapshot of the last commit when it
 * began and never blocks the writer). Within a process a BookDB may be shared by
 * threads, each with its own transactions; the map is grown only by a write
 * transaction, which must then be the only transaction open in its process.
 *
 * The map grows by itself: when a write hits the map size the transaction is
 * aborted, the map doubled and the transaction's writes replayed from an
 * in-memory log (so a write transaction's pointers from bookdb_get_raw are valid
 * only until its next write). A crash loses at most the uncommitted transaction.
 */
#ifndef BOOKDB_BOOKDB_H
#define BOOKDB_BOOKDB_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/record.h"
#include "shogi/zobrist.h"

/* Version of the on-disk layout. A book of version 1 (no changes database) or
 * 2 (no record with minimax values coded against the analyses: record.c's
 * RF_VREL) is upgraded in place when opened read-write and read as it is when
 * opened read-only; a book of any other version is refused. Version 3 is what
 * keeps a build that reads only version 2 from taking the newer records for
 * damage (and `check --repair` from dropping them). */
#define BOOKDB_SCHEMA_VERSION 3

/* Entries the change log holds at most (BookDBOptions.changes_max overrides it):
 * a write that would log one more sets the log's state to overflow instead. */
#define BOOKDB_CHANGES_MAX 1000000

/* Error codes (negative). */
enum {
	BOOKDB_OK = 0,
	BOOKDB_ENOTFOUND = ERR_BOOKDB - 0, /* no such key */
	BOOKDB_ECORRUPT = ERR_BOOKDB - 1,  /* stored bytes do not decode */
	BOOKDB_EVERSION = ERR_BOOKDB - 2,  /* the book has another schema version */
	BOOKDB_ENOBOOK = ERR_BOOKDB - 3,   /* read-only (or must_exist) open of a directory
	                                      holding no book */
	BOOKDB_EREADONLY = ERR_BOOKDB - 4, /* write on a read-only book */
	BOOKDB_EBUSY = ERR_BOOKDB - 5,     /* too many readers, or the lock is held */
	BOOKDB_EIO = ERR_BOOKDB - 6,       /* I/O or permission error (errno in the message) */
	BOOKDB_ENOMEM = ERR_BOOKDB - 7,
	BOOKDB_ELMDB = ERR_BOOKDB - 8,     /* other LMDB failure */
	BOOKDB_EINVAL = ERR_BOOKDB - 9,    /* bad argument or field value */
	BOOKDB_ENOSPC = ERR_BOOKDB - 10,   /* disk full */
	BOOKDB_ESTOPPED = ERR_BOOKDB - 11, /* the caller's stop flag ended a long read */
	BOOKDB_ESTALE = ERR_BOOKDB - 12,   /* the book's file was replaced under the handle */
};
const char *bookdb_strerror(int code);

/* Length of the message buffer bookdb_open fills (NUL included). */
#define BOOKDB_ERRLEN 256
/* The longest book directory path bookdb_open accepts (longer: BOOKDB_EINVAL),
 * and the size of a buffer that holds it with any of the book's file names
 * (data.mdb.compact, minimax.journal, ...): such paths are never cut short. */
#define BOOKDB_DIR_MAX 4000
#define BOOKDB_PATH_LEN 4200

/* The named databases. BOOKDB_CHANGES is written only by the store itself:
 * bookdb_kv_put and bookdb_kv_del refuse it (BOOKDB_EINVAL); it can be read,
 * counted and measured like the others (empty in a version-1 book opened
 * read-only). */
typedef enum {
	BOOKDB_META = 0,
	BOOKDB_POS,
	BOOKDB_GAMES,
	BOOKDB_WORK,
	BOOKDB_CHANGES,
	BOOKDB_MARKS, /* made by the first read-write open of a book without it; a
	                 read-only open of such a book reads it as empty */
	BOOKDB_NDBS
} BookDbName;

typedef struct {
	bool read_only;  /* open read-only (the book must exist) */
	bool must_exist; /* read-write, but create nothing: what a read-only open
	                    refuses is refused (a missing book: BOOKDB_ENOBOOK,
	                    "DIR: no book there", as for a mistyped path) */
	size_t map_size; /* initial map size in bytes for a new or small book; 0: 256 MiB */
	bool no_sync;    /* do not fsync on commit (safe against process crashes, not OS ones) */
	bool random;     /* the process reads the book at random (a search, a server), not in
	                    passes: when the book is larger than half the memory the process
	                    may have (memuse_too_large_to_cache), no read-ahead (LMDB's
	                    MDB_NORDAHEAD), so that a read costs the page it needs, not a
	                    window evicting the pages the next reads need; its passes
	                    over the pos database read ahead on threads (BookIter) */
	uint64_t random_above; /* with random: no read-ahead for a book larger than these
	                          bytes instead (1: any book) */
	const char *settings;  /* creation settings stored in meta "settings" (new books) */
	uint64_t changes_max;  /* entries the change log may hold; 0: BOOKDB_CHANGES_MAX */
} BookDBOptions;

typedef struct BookDB BookDB;
typedef struct BookTxn BookTxn;
typedef struct BookIter BookIter;
typedef struct BookWriter BookWriter;

/* Progress of a long pass: done of about total, in the pass's units (records,
 * bytes). Called from the calling thread, at most a few times a second. */
typedef void (*BookProgressFn)(void *ctx, uint64_t done, uint64_t total);

/*
 * Opens (read-write: creating the directory and the book if needed, unless
 * must_exist) the book in dir. opt may be NULL (read-write, defaults). On error returns a negative
 * code and writes a message naming dir into err (BOOKDB_ERRLEN bytes; may be NULL); *out is then
 * NULL. BOOKDB_EVERSION when the book has another schema version; BOOKDB_EINVAL when dir is longer
 * than BOOKDB_DIR_MAX.
 */
JOSEKI_MUST_USE int bookdb_open(BookDB **out, const char *dir, const BookDBOptions *opt, char *err);
/* Closes the book; every transaction must be finished. Accepts NULL. */
void bookdb_free(BookDB *db);
/*
 * The selection of the book in directory dir (an existing book), this
 * process's while *out (a descriptor) is open: who (e.g. "think", "serve
 * --work") takes DIR/selection.lock, without waiting, and writes its pid and
 * who there. Two selections over one book (think beside a coordinator, two
 * thinks, a cycle) would lease the same positions and each write over the
 * other's DIR/selector.snap. 0, or BOOKDB_EBUSY with a message naming the
 * holder (its pid and who) in err (BOOKDB_ERRLEN), or another error.
 */
JOSEKI_MUST_USE int bookdb_selection_lock(int *out, const char *dir, const char *who, char *err);
/* The current map size in bytes (grows by doubling). */
size_t bookdb_map_size(BookDB *db);
/* Bytes of the data file on disk. */
uint64_t bookdb_file_size(BookDB *db);
/* Bytes free to this user on the file system that holds the book
 * (UINT64_MAX when it cannot be told). */
uint64_t bookdb_free_bytes(BookDB *db);
/* Pages of the data file as t sees them: page_size bytes each; pages up to
 * the last one in use, pages_used by the databases (and the two meta pages),
 * pages_free the rest (free, or taken by commits newer than t). */
typedef struct {
	unsigned page_size;
	uint64_t pages, pages_used, pages_free;
} BookSpace;
JOSEKI_MUST_USE int bookdb_space(BookSpace *out, BookTxn *t);
/*
 * Rewrites the book in dir without its free pages (LMDB's compacting copy to
 * dir/data.mdb.compact, fsync, rename over data.mdb, fsync of dir): either the
 * old file or the whole new one is the book at any moment, so a kill -9 loses
 * nothing. Refused (BOOKDB_EBUSY) while a writer has the book open; while it
 * runs, writers are refused and readers go on. before and after get the file's
 * size. progress (may be NULL) gets the copy's bytes of about the bytes the
 * book's pages hold, about every 200 ms. Returns 0 or a negative BOOKDB_ code
 * with a message in err.
 */
JOSEKI_MUST_USE int bookdb_compact(const char *dir, uint64_t *before, uint64_t *after,
                                   BookProgressFn progress, void *ctx, char *err);
/*
 * A record's new bytes for bookdb_rebuild_rewrite, given its key and bytes:
 * written to out (BOOKDB_RECORD_MAX bytes), their length returned; 0 keeps
 * the record as it is; a negative code stops the rebuild (the book stays as
 * it was). It is called in key order, one call at a time, on a thread of
 * its own (while the records it rewrote are written on the calling one).
 */
typedef int (*BookRebuildFn)(void *ctx, Key key, const uint8_t *raw, size_t len, uint8_t *out);
/*
 * Every record of pos rewritten through fn, in key order, into a new file
 * built as bookdb_compact builds it (full pages, then fsync, rename over
 * data.mdb, fsync of the directory: a kill -9 at any moment leaves the old
 * book or the new one whole), and db then reading and writing the new file.
 * Records grown in place split their pages half full (a whole-book minimax
 * doubled a book's bytes); rebuilt, every page is full. The writes are not
 * tracked (the change log sees none) and the kept counts stay (dropped, to
 * be counted again, if fn changed a record's moves or thought flag). db must
 * be open read-write, with no transaction or writer of it open; it must be
 * the only writer: its writers lock is taken alone for the rebuild (other
 * writers are refused meanwhile; readers go on with the file they have
 * open) and shared again after. Returns 0 (*rewritten: the records fn
 * rewrote; *before, *after: the file's bytes), BOOKDB_EBUSY when another
 * writer has the book open (nothing done: the caller may rewrite in place,
 * bookdb_rewrite), BOOKDB_ESTALE when the book was written anew by another
 * process (a compaction) in the moment the lock changed hands (db reads the
 * old file and holds no lock: free it and open the book again), fn's code,
 * or another negative code with err (the book as it was).
 */
JOSEKI_MUST_USE int bookdb_rebuild_rewrite(BookDB *db, BookRebuildFn fn, void *ctx,
                                           uint64_t *rewritten, uint64_t *before, uint64_t *after,
                                           char *err);
/* Whether BOOK/data.mdb is still the file db has open: false once it was
 * replaced (joseki compact, or a whole-book minimax that rebuilt the book),
 * when db goes on reading the book as it was; false too when either cannot
 * be looked at. A stat of the file: cheap, not free. */
bool bookdb_file_current(BookDB *db);

/*
 * Whether db, opened read-only, is read without LMDB's lock file: a user
 * who may not write BOOK/lock.mdb (a book another user owns) cannot join its
 * reader table, and reads as LMDB itself does on a read-only file system.
 * What that table does: it keeps a writer from reusing the pages a read
 * transaction is on; so a writer at work on the book meanwhile can show such
 * a reader pages it is rewriting (wrong answers, records found damaged),
 * never change the book. A copy of the book, or write access to lock.mdb,
 * reads with it.
 */
bool bookdb_unlocked(const BookDB *db);

/* Removes a book made and not kept (closed): the files a new book holds
 * (data.mdb, lock.mdb, writers.lock, open.lock), then the directory when
 * nothing else is in it. For a half-written copy, and for a command that
 * made a book and put nothing in it. */
void bookdb_remove_new(const char *dir);
/* db opened again on BOOK/data.mdb as it is now (read-only or not, as
 * before; a writer keeps its writers lock). No transaction, writer or
 * iterator of db may be open, in any thread. 0, or a code with err: db then
 * reads nothing (every transaction fails) until a later call succeeds. */
JOSEKI_MUST_USE int bookdb_reopen(BookDB *db, char *err);
/* The BOOK directory the book was opened from (owned by db). Derived data
 * kept beside the store (minimax's graph) lives there too. */
const char *bookdb_dir(const BookDB *db);
/* Whether the directories a and b hold the very same book (its data file the
 * same by device and inode: another path to it, not a copy). False when
 * either holds none. */
bool bookdb_same_book(const char *a, const char *b);

/*
 * What identifies the book's state: its data file (device, inode) and the id
 * of LMDB's last committed transaction. Two equal stamps mean nothing was
 * committed to that file in between, so data derived from the book and kept
 * beside it (the selector's snapshot, bookgen/snapshot.h) is still current.
 * A compacted or restored book is another file: another stamp. The change
 * log's state and last sequence number, read in the same transaction, tell
 * such data where the writes since begin in the log (bookgen: a snapshot
 * brought up to date with them, when the log still holds every one).
 */
typedef struct {
	uint64_t dev, ino, txnid;
	uint64_t chg_state; /* BookChangesState as of txnid */
	uint64_t chg_seq;   /* the last sequence number given out as of txnid */
} BookStamp;
JOSEKI_MUST_USE int bookdb_stamp(BookStamp *out, BookDB *db);
/*
 * A stamp of a file this book's data file was written anew from. A book
 * rebuilt (bookdb_compact, bookdb_rebuild_rewrite: joseki compact, a
 * whole-book minimax) holds the same positions in another file, and keeps
 * the stamps of the files it came from (the last BOOKDB_ORIGINS, newest
 * first; a backup keeps none). When old names one of them and is no newer
 * than it was then, old is rewritten as this file reads it: the stamp the
 * new file had right after the rebuild when old was its source's stamp then
 * (nothing written in between), else with txnid 0 and old's change-log
 * sequence number, so that a comparison sees writes to catch up with from
 * there (the log is copied with the book). Returns 1 rewritten, 0 not one of
 * them (old left as it was), or a negative code.
 */
#define BOOKDB_ORIGINS 4
JOSEKI_MUST_USE int bookdb_stamp_carry(BookStamp *old, BookDB *db);

/* Begins a transaction (write: only one at a time, blocks while another process
 * writes). The caller ends it with bookdb_txn_commit or bookdb_txn_abort. */
JOSEKI_MUST_USE int bookdb_txn_begin(BookTxn **out, BookDB *db, bool write);
/* Commits and frees the transaction (also on error: then nothing was written). */
JOSEKI_MUST_USE int bookdb_txn_commit(BookTxn *txn);
/* Discards and frees the transaction. Accepts NULL. */
void bookdb_txn_abort(BookTxn *txn);

/* Decodes the record of key. BOOKDB_ENOTFOUND if absent, BOOKDB_ECORRUPT.
 * (Many lookups in one transaction, from some 700,000 on a 10M book, are
 * faster through a snapshot index: bookdb/index.h.) */
JOSEKI_MUST_USE int bookdb_get(BookRecord *out, BookTxn *txn, Key key);
/* As bookdb_get without the position fields (bookdb_record_decode_moves). */
JOSEKI_MUST_USE int bookdb_get_moves(BookRecord *out, BookTxn *txn, Key key);
/* The raw bytes of key's record (valid until the transaction ends or writes). */
JOSEKI_MUST_USE int bookdb_get_raw(const uint8_t **val, size_t *len, BookTxn *txn, Key key);
/*
 * Encodes and stores rec under key (replacing); logs the key when the book
 * tracks changes (see "Change log"). On an error other than BOOKDB_EINVAL the
 * transaction must be aborted: the record may be stored without its entry.
 */
JOSEKI_MUST_USE int bookdb_put(BookTxn *txn, Key key, const BookRecord *rec);
/* Stores raw bytes under key in the pos database (no check); as bookdb_put. */
JOSEKI_MUST_USE int bookdb_put_raw(BookTxn *txn, Key key, const uint8_t *val, size_t len);
/*
 * Rewrites the record of key in txn (a write transaction): fn gets its bytes
 * and writes the new ones to out (BOOKDB_RECORD_MAX bytes), returning their
 * length, 0 to leave the record as it is, or a negative code; it must not
 * write to pos in txn (BOOKDB_EINVAL). Returns what fn returned, or
 * BOOKDB_ENOTFOUND (fn not called) when the book has no record of key. The write is a
 * bookdb_put_raw's (change log, kept counts), but calls in key order walk one cursor: no B-tree
 * search for the record, none for what it replaces, none for the put (a whole-book minimax's
 * write-back).
 */
typedef int (*BookRewriteFn)(void *ctx, const uint8_t *raw, size_t len, uint8_t *out);
JOSEKI_MUST_USE int bookdb_rewrite(BookTxn *txn, Key key, BookRewriteFn fn, void *ctx,
                                   uint8_t *out);

/* Generic access to any named database (meta, games, work; pos too, with
 * 16-byte keys only (else BOOKDB_EINVAL), logged as bookdb_put; changes is
 * read-only here). */
JOSEKI_MUST_USE int bookdb_kv_get(const void **val, size_t *vlen, BookTxn *txn, BookDbName db,
                                  const void *key, size_t klen);
JOSEKI_MUST_USE int bookdb_kv_put(BookTxn *txn, BookDbName db, const void *key, size_t klen,
                                  const void *val, size_t vlen);
JOSEKI_MUST_USE int bookdb_kv_del(BookTxn *txn, BookDbName db, const void *key,
                                  size_t klen); /* ENOTFOUND ok */
/*
 * The meta keys by which minimax (docs/minimax.md) marks a run under way: a
 * whole-book run's from its start to its end, an incremental run's while its
 * record writes are. Either left behind means a run stopped before its end,
 * its values in part of the book only; bookdb_minimax_unfinished says whether
 * one is there (false on a read error too: nothing is then known).
 */
#define BOOKDB_META_MMFULL "mmfull"
#define BOOKDB_META_MMRUN "mmrun"
/* The meta key of the last minimax run's human-readable summary (absent: no
 * run has backed analyses up yet; joseki stats reads its cycle count). */
#define BOOKDB_META_MINIMAX "minimax"
bool bookdb_minimax_unfinished(BookTxn *txn);
/* Number of entries in a database, as of this transaction. */
JOSEKI_MUST_USE int bookdb_count(uint64_t *out, BookTxn *txn, BookDbName db);
/* Pages in use by a database (branch + leaf + overflow) and the page size. */
JOSEKI_MUST_USE int bookdb_pages(uint64_t *pages, unsigned *page_size, BookTxn *txn, BookDbName db);

/*
 * Iterates over the pos database in key order. bookdb_iter_next returns 1 and
 * fills key/val/len (val valid until the next call), 0 at the end, or an error.
 *
 * On a book opened for random reads (BookDBOptions.random, in effect), a pass
 * over the pos database reads ahead on 16 threads of its own from its first
 * step to bookdb_iter_free: they walk the parts of the key space just ahead of
 * it, each in a read transaction of its own, so that many pages are read at
 * once whatever order they lie in, in the file (a book grown by small writes:
 * docs/bookdb.md, "Whole-book passes on a grown book"). bookdb_iter_read_ahead counts the
 * parts they walked (0: none, as on any other book).
 */
JOSEKI_MUST_USE int bookdb_iter_open(BookIter **out, BookTxn *txn);
/*
 * A whole pass in a read-only transaction (bookdb_iter_open,
 * bookdb_kv_iter_open) ends with BOOKDB_ECORRUPT instead of 0 when it met
 * fewer entries than the database counts: a damaged leaf page hides them
 * without an error from LMDB, and a pass that ended as usual would count,
 * export or copy the book without them as if it were whole. Not in a write
 * transaction (its own writes move the count), nor from a key
 * (bookdb_kv_iter_open_at), nor after bookdb_iter_untallied (joseki check,
 * which counts them itself).
 */
void bookdb_iter_untallied(BookIter *it);
JOSEKI_MUST_USE int bookdb_iter_next(BookIter *it, Key *key, const uint8_t **val, size_t *len);
uint64_t bookdb_iter_read_ahead(const BookIter *it);
void bookdb_iter_free(BookIter *it);
/* The same over any named database (BOOKDB_EINVAL for another value);
 * bookdb_kv_iter_next returns 1 with the raw key and value (valid until the
 * transaction ends), 0 at the end, or a negative BOOKDB_* code. Freed with
 * bookdb_iter_free. */
JOSEKI_MUST_USE int bookdb_kv_iter_open(BookIter **out, BookTxn *txn, BookDbName db);
JOSEKI_MUST_USE int bookdb_kv_iter_next(BookIter *it, const void **key, size_t *klen,
                                        const void **val, size_t *vlen);
/* The same from the first key >= (key, klen) on (MDB_SET_RANGE). */
JOSEKI_MUST_USE int bookdb_kv_iter_open_at(BookIter **out, BookTxn *txn, BookDbName db,
                                           const void *key, size_t klen);

/*
 * Batched writer: puts go into one write transaction that is committed every
 * `batch` puts (and by bookdb_writer_flush). Reads through the writer see its
 * uncommitted puts. A crash loses at most the current batch.
 */
JOSEKI_MUST_USE int bookdb_writer_new(BookWriter **out, BookDB *db, size_t batch);
/* Whether the writer has a transaction open (something for the next flush to
 * commit). */
bool bookdb_writer_open(const BookWriter *w);
JOSEKI_MUST_USE int bookdb_writer_put(BookWriter *w, Key key, const BookRecord *rec);
JOSEKI_MUST_USE int bookdb_writer_put_raw(BookWriter *w, Key key, const uint8_t *val, size_t len);
/* bookdb_rewrite in the writer's transaction; a record rewritten counts in the
 * batch. */
JOSEKI_MUST_USE int bookdb_writer_rewrite(BookWriter *w, Key key, BookRewriteFn fn, void *ctx,
                                          uint8_t *out);
/*
 * Bulk loading: stores raw bytes under a key greater than every key in the
 * book (LMDB's append mode: pages are filled completely, no search). Returns
 * BOOKDB_EINVAL, storing nothing, when the key is not greater.
 */
JOSEKI_MUST_USE int bookdb_writer_append(BookWriter *w, Key key, const uint8_t *val, size_t len);
JOSEKI_MUST_USE int bookdb_writer_get(BookRecord *out, BookWriter *w, Key key);
/* The writer's open write transaction (begun if none), for other databases. */
JOSEKI_MUST_USE int bookdb_writer_txn(BookTxn **out, BookWriter *w);
/* Commits the pending batch (no-op when nothing is pending). */
JOSEKI_MUST_USE int bookdb_writer_flush(BookWriter *w);
/* Number of batches committed so far. */
uint64_t bookdb_writer_commits(const BookWriter *w);
/* Discards the uncommitted batch and frees the writer. Accepts NULL. */
void bookdb_writer_free(BookWriter *w);

/*
 * ---- Change log ----
 *
 * The store records which pos records were written, for consumers that redo
 * work only for those (joseki minimax), as a feed with no knowledge of them.
 * While the book's tracking state is BOOKDB_CHANGES_ON, every write to pos —
 * bookdb_put, bookdb_put_raw, bookdb_writer_put, bookdb_writer_put_raw, bookdb_rewrite,
 * bookdb_writer_append, and bookdb_kv_put / bookdb_kv_del on BOOKDB_POS (a
 * delete is logged even when the key was absent) — appends one entry (the
 * next sequence number -> the record's key) to the changes database in the
 * same write transaction: the entry is committed, or lost, with the write, and
 * a transaction replayed after map growth logs each write once. A write
 * transaction reads the state once, at its first pos write.
 *
 * Sequence numbers start at 1 and increase over the book's life; consumed
 * entries and writes during overflow use numbers up too, none is reused.
 *
 *   OFF       nothing is logged or numbered (every new book; costs one meta
 *             lookup per write transaction)
 *   ON        every pos write is logged
 *   OVERFLOW  the log reached BookDBOptions.changes_max entries: writes are
 *             numbered but no longer logged, so the consumer must look at the
 *             whole book. Consuming everything, or enabling, ends it.
 *
 * A transaction or writer with tracking switched off (bookdb_txn_set_tracking,
 * bookdb_writer_set_tracking) logs nothing whatever the state: the consumer's
 * own write-back is not a change it needs to see again.
 *
 * Consumer protocol (one writer process at a time, as for every writer):
 *   1. OFF: bookdb_changes_enable in a write transaction, commit; then go on
 *      as for OVERFLOW (the snapshot of step 2 already reads ON, but what was
 *      written before enabling is in no log).
 *   2. Begin a read transaction (the snapshot); bookdb_changes_info. ON: the
 *      keys to look at are those of bookdb_changes_iter_* (a key may come
 *      more than once, and may since have been deleted). OVERFLOW: look at all.
 *   3. Write results with tracking off and, in the last write transaction,
 *      bookdb_changes_consume(txn, info.seq) of that snapshot. Writes made by
 *      others after the snapshot keep their entries (or, if numbered during
 *      an overflow, keep the overflow) for the next run.
 */
typedef enum {
	BOOKDB_CHANGES_OFF = 0,
	BOOKDB_CHANGES_ON = 1,
	BOOKDB_CHANGES_OVERFLOW = 2,
} BookChangesState;

typedef struct {
	BookChangesState state;
	uint64_t entries; /* entries in the log */
	uint64_t first;   /* sequence number of the first entry; 0 when empty */
	uint64_t last;    /* sequence number of the last entry; 0 when empty */
	uint64_t seq;     /* the last sequence number given out (>= last); 0 if none yet */
	bool held;        /* a hold is set (bookdb_changes_hold): */
	uint64_t hold;    /* consume keeps the entries after this number */
} BookChangesInfo;

typedef struct BookChangesIter BookChangesIter;

/*
 * on = true (the default for every transaction): pos writes are logged as the
 * book's state says; false: this transaction's later pos writes are neither
 * logged nor numbered. May be switched at any time; applies to later writes.
 */
void bookdb_txn_set_tracking(BookTxn *txn, bool on);
/* Whether txn's pos writes are logged (as set; the default true). */
bool bookdb_txn_tracking(const BookTxn *txn);
/* As bookdb_txn_set_tracking for the writer's open transaction and every
 * transaction it begins afterwards. */
void bookdb_writer_set_tracking(BookWriter *w, bool on);

/*
 * Sets the state to ON (from OFF or OVERFLOW) in the write transaction txn;
 * later pos writes of txn are logged. Entries already in the log stay: if it
 * still holds changes_max of them, the next write overflows again.
 * BOOKDB_EREADONLY on a read transaction.
 */
JOSEKI_MUST_USE int bookdb_changes_enable(BookTxn *txn);
/*
 * Fills *out with the log as txn sees it (its own writes included). Works on a
 * read or write transaction; a version-1 book opened read-only reads as OFF
 * and empty. BOOKDB_ECORRUPT if the stored state does not decode.
 */
JOSEKI_MUST_USE int bookdb_changes_info(BookChangesInfo *out, BookTxn *txn);
/*
 * Iterates over the log entries with sequence number >= from, in sequence
 * order, as txn sees them. bookdb_changes_iter_next returns 1 and fills *seq
 * and *key, 0 at the end, or a negative code (BOOKDB_ECORRUPT: an entry of
 * the wrong size). The iterator must be freed before txn ends, and, on a write
 * transaction, is invalidated by bookdb_changes_consume. Free accepts NULL.
 */
JOSEKI_MUST_USE int bookdb_changes_iter_open(BookChangesIter **out, BookTxn *txn, uint64_t from);
JOSEKI_MUST_USE int bookdb_changes_iter_next(BookChangesIter *it, uint64_t *seq, Key *key);
void bookdb_changes_iter_free(BookChangesIter *it);
/*
 * Deletes every entry with sequence number <= upto in the write transaction
 * txn (all of them at once when upto >= the last one). If the state is
 * OVERFLOW and upto >= the last sequence number given out (nothing was written
 * after the consumer's snapshot), sets it back to ON. Later sequence numbers
 * still continue from the last one given out. BOOKDB_EREADONLY on a read
 * transaction; on another error the transaction must be aborted.
 */
JOSEKI_MUST_USE int bookdb_changes_consume(BookTxn *txn, uint64_t upto);

/*
 * A hold on the log, for data derived from the book and kept beside it that a
 * later reader brings up to date from the log (the selector's snapshot,
 * bookgen/snapshot.h): on, from the last sequence number given out as txn
 * sees it, bookdb_changes_consume deletes no entry numbered after that, so
 * the reader finds every write since in the log — unless the log overflows
 * or the entries it keeps pass half of changes_max, when the hold is dropped
 * (the reader then finds a gap and starts afresh). Off (or the log not ON),
 * it is dropped. One hold a book: the last one set. Held entries count in
 * BookChangesInfo as others do; a consumer that keeps its own position
 * (minimax reads from the sequence number after its last run's) reads past
 * them. BOOKDB_EREADONLY on a read transaction.
 */
JOSEKI_MUST_USE int bookdb_changes_hold(BookTxn *txn, bool on);

/*
 * ---- Kept counts ----
 *
 * The store keeps counts of its records in meta, written by every write
 * transaction that commits anything, in that transaction: a kill -9 loses
 * them with the records they describe, never one without the other. Each
 * pos write adds what its record holds and takes off what the record it
 * replaces held (one lookup of the old record before the write; none for an
 * append). A book without them (made before they were kept), or one written
 * since by a build that does not keep them, or compacted (LMDB numbers a
 * compacting copy's transaction 1), is counted again, one pass over the
 * records' heads, by its next write transaction's commit; until then readers
 * are told they are not kept. docs/bookdb.md, "Kept counts".
 */
typedef struct {
	bool kept;        /* the counts describe the records as txn sees them; else 0 */
	uint64_t thought; /* records with BOOKDB_REC_THOUGHT */
	uint64_t moves;   /* the records' nmoves, summed */
} BookCounts;
/* The kept counts as txn sees them (a write transaction: its own writes in).
 * A record whose head does not decode counts in neither (bookdb_record_peek).
 * Returns 0 (out->kept false when there are none to trust) or a negative
 * BOOKDB_* code. */
JOSEKI_MUST_USE int bookdb_counts(BookCounts *out, BookTxn *txn);
/* The same counted now, one pass over the records' heads (the pages of the
 * whole pos database), with the positions passed: for checks and tests. */
JOSEKI_MUST_USE int bookdb_counts_recount(BookCounts *out, uint64_t *positions, BookTxn *txn);

/* What the last whole-book scan (joseki stats --scan) counted, kept in meta:
 * what cannot be kept by a record's own change (a new position makes its
 * parents no leaves; soundness needs the rules). */
typedef struct {
	bool known;   /* a scan was stored */
	bool current; /* no commit since the one that stored it, as txn sees it */
	int64_t time; /* when it was counted (unix seconds) */
	uint64_t seq; /* the change log's last sequence number given out then */
	uint64_t leaves, corrupt;
} BookScanKept;
/* Reads it (known false when none). 0 or a negative BOOKDB_* code. */
JOSEKI_MUST_USE int bookdb_scan_get(BookScanKept *out, BookTxn *txn);
/* Stores s (known and current ignored), counted in the snapshot whose id is
 * at (bookdb_txn_id of the scan's read transaction), in the write
 * transaction txn, which must write nothing else: current after its commit
 * when no commit came between the snapshot and txn. BOOKDB_EREADONLY on a
 * read transaction. */
JOSEKI_MUST_USE int bookdb_scan_put(BookTxn *txn, uint64_t at, const BookScanKept *s);
/* LMDB's id of txn: a read transaction's is its snapshot's (the last commit
 * it sees), a write transaction's the one its commit will have. */
uint64_t bookdb_txn_id(const BookTxn *txn);
/* Records of pos this thread has read through the store (bookdb_get*,
 * bookdb_kv_get on pos, each step of an iterator over pos) since it began:
 * how a test tells a reader that reads no records. Not the snapshot index's
 * reads, nor the store's own (the kept counts). */
uint64_t bookdb_pos_reads(void);

/* Puts the 16-byte big-endian key form (key_to_bytes) into out. */
static inline void bookdb_key_bytes(Key k, uint8_t out[16])
{
	key_to_bytes(k, out);
}

#endif
