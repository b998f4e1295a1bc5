/*
 * bookdb/bookdb.h — the book store: one LMDB environment per BOOK directory.
 *
 * A book holds four named databases:
 *   meta   schema version and creation settings (small key/value pairs)
 *   pos    16-byte big-endian Zobrist key (key_to_bytes) -> position record
 *          (bookdb/record.h)
 *   games  ids of ingested games -> caller-defined bytes (re-ingesting is a no-op)
 *   work   work state (leases) for the cluster; free-form key/value
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/record.h"
#include "shogi/zobrist.h"

/* Version of the on-disk layout; a book of another version is refused. */
#define BOOKDB_SCHEMA_VERSION 1

/* Error codes (negative). */
enum {
	BOOKDB_OK = 0,
	BOOKDB_ENOTFOUND = -20, /* no such key */
	BOOKDB_ECORRUPT = -21,  /* stored bytes do not decode */
	BOOKDB_EVERSION = -22,  /* the book has another schema version */
	BOOKDB_ENOBOOK = -23,   /* read-only open of a directory holding no book */
	BOOKDB_EREADONLY = -24, /* write on a read-only book */
	BOOKDB_EBUSY = -25,     /* too many readers, or the lock is held */
	BOOKDB_EIO = -26,       /* I/O or permission error (errno in the message) */
	BOOKDB_ENOMEM = -27,
	BOOKDB_ELMDB = -28,     /* other LMDB failure */
	BOOKDB_EINVAL = -29,    /* bad argument or field value */
	BOOKDB_ENOSPC = -30,    /* disk full */
};
const char *bookdb_strerror(int code);

/* Length of the message buffer bookdb_open fills (NUL included). */
#define BOOKDB_ERRLEN 256

/* The named databases. */
typedef enum { BOOKDB_META = 0, BOOKDB_POS, BOOKDB_GAMES, BOOKDB_WORK, BOOKDB_NDBS } BookDbName;

typedef struct {
	bool read_only;  /* open read-only (the book must exist) */
	size_t map_size; /* initial map size in bytes for a new or small book; 0: 256 MiB */
	bool no_sync;    /* do not fsync on commit (safe against process crashes, not OS ones) */
	const char *settings; /* creation settings stored in meta "settings" (new books) */
} BookDBOptions;

typedef struct BookDB BookDB;
typedef struct BookTxn BookTxn;
typedef struct BookIter BookIter;
typedef struct BookWriter BookWriter;

/*
 * Opens (read-write: creating the directory and the book if needed) the book in
 * dir. opt may be NULL (read-write, defaults). On error returns a negative code
 * and writes a message naming dir into err (BOOKDB_ERRLEN bytes; may be NULL);
 * *out is then NULL. BOOKDB_EVERSION when the book has another schema version.
 */
int bookdb_open(BookDB **out, const char *dir, const BookDBOptions *opt, char *err);
/* Closes the book; every transaction must be finished. Accepts NULL. */
void bookdb_free(BookDB *db);
/* The current map size in bytes (grows by doubling). */
size_t bookdb_map_size(BookDB *db);
/* Bytes of the data file on disk. */
uint64_t bookdb_file_size(BookDB *db);

/* Begins a transaction (write: only one at a time, blocks while another process
 * writes). The caller ends it with bookdb_txn_commit or bookdb_txn_abort. */
int bookdb_txn_begin(BookTxn **out, BookDB *db, bool write);
/* Commits and frees the transaction (also on error: then nothing was written). */
int bookdb_txn_commit(BookTxn *txn);
/* Discards and frees the transaction. Accepts NULL. */
void bookdb_txn_abort(BookTxn *txn);

/* Decodes the record of key. BOOKDB_ENOTFOUND if absent, BOOKDB_ECORRUPT. */
int bookdb_get(BookRecord *out, BookTxn *txn, Key key);
/* As bookdb_get without the position fields (bookdb_record_decode_moves). */
int bookdb_get_moves(BookRecord *out, BookTxn *txn, Key key);
/* The raw bytes of key's record (valid until the transaction ends or writes). */
int bookdb_get_raw(const uint8_t **val, size_t *len, BookTxn *txn, Key key);
/* Encodes and stores rec under key (replacing). */
int bookdb_put(BookTxn *txn, Key key, const BookRecord *rec);
/* Stores raw bytes under key in the pos database (no check). */
int bookdb_put_raw(BookTxn *txn, Key key, const uint8_t *val, size_t len);

/* Generic access to any named database (meta, games, work; pos too). */
int bookdb_kv_get(const void **val, size_t *vlen, BookTxn *txn, BookDbName db, const void *key,
		  size_t klen);
int bookdb_kv_put(BookTxn *txn, BookDbName db, const void *key, size_t klen, const void *val,
		  size_t vlen);
int bookdb_kv_del(BookTxn *txn, BookDbName db, const void *key, size_t klen); /* ENOTFOUND ok */
/* Number of entries in a database, as of this transaction. */
int bookdb_count(uint64_t *out, BookTxn *txn, BookDbName db);
/* Pages in use by a database (branch + leaf + overflow) and the page size. */
int bookdb_pages(uint64_t *pages, unsigned *page_size, BookTxn *txn, BookDbName db);

/*
 * Iterates over the pos database in key order. bookdb_iter_next returns 1 and
 * fills key/val/len (val valid until the next call), 0 at the end, or an error.
 */
int bookdb_iter_open(BookIter **out, BookTxn *txn);
int bookdb_iter_next(BookIter *it, Key *key, const uint8_t **val, size_t *len);
void bookdb_iter_free(BookIter *it);

/*
 * Batched writer: puts go into one write transaction that is committed every
 * `batch` puts (and by bookdb_writer_flush). Reads through the writer see its
 * uncommitted puts. A crash loses at most the current batch.
 */
int bookdb_writer_new(BookWriter **out, BookDB *db, size_t batch);
int bookdb_writer_put(BookWriter *w, Key key, const BookRecord *rec);
int bookdb_writer_put_raw(BookWriter *w, Key key, const uint8_t *val, size_t len);
/*
 * Bulk loading: stores raw bytes under a key greater than every key in the
 * book (LMDB's append mode: pages are filled completely, no search). Returns
 * BOOKDB_EINVAL, storing nothing, when the key is not greater.
 */
int bookdb_writer_append(BookWriter *w, Key key, const uint8_t *val, size_t len);
int bookdb_writer_get(BookRecord *out, BookWriter *w, Key key);
/* The writer's open write transaction (begun if none), for other databases. */
int bookdb_writer_txn(BookTxn **out, BookWriter *w);
/* Commits the pending batch (no-op when nothing is pending). */
int bookdb_writer_flush(BookWriter *w);
/* Number of batches committed so far. */
uint64_t bookdb_writer_commits(const BookWriter *w);
/* Discards the uncommitted batch and frees the writer. Accepts NULL. */
void bookdb_writer_free(BookWriter *w);

/* Puts the 16-byte big-endian key form (key_to_bytes) into out. */
static inline void bookdb_key_bytes(Key k, uint8_t out[16])
{
	key_to_bytes(k, out);
}

#endif
