/*
 * bookdb/index.h — a snapshot index of the pos database, for code that looks
 * up many positions in one transaction (minimax's whole-book run, stats,
 * benchmarks).
 *
 * A point lookup in LMDB walks its B-tree (four levels at 10 M positions),
 * binary-searching each page: about 25 dependent cache misses, some 1.3 us on
 * a warm 10 M book, and nothing in LMDB's API changes that. The index copies
 * the keys out in one cursor pass, in key order, with each record's address
 * in the transaction's snapshot, and finds a key through the key directory
 * and filter of bookdb/keydir.h: a filter word and a directory entry (read
 * side by side), the bucket's key and its record's address, then the record
 * itself — three dependent misses. Most absent keys cost one filter word.
 *
 * Memory: 32 bytes a record (the key, the record's address and length) plus
 * 2 to 4 of directory and 1 to 2 of filter: about 37 bytes, 370 MB at 10 M;
 * 21 once the addresses are dropped (bookdb_index_drop_records).
 * Build time and lookup rates measured: docs/bookdb.md, "Snapshot index".
 *
 * Lifetime: an index belongs to the transaction it was built from. It holds
 * that transaction's view as it was at the build (later writes through a
 * write transaction are not in it). The record bytes it hands out
 * (bookdb_index_raw, bookdb_index_get_raw) point into the snapshot and are
 * valid while the transaction lives — for a write transaction, only until its
 * next write; bookdb_index_get and bookdb_index_get_moves read them, so they
 * need it too. The keys, bookdb_index_find and the key directory use the
 * index's own memory only and stay usable after the transaction has ended,
 * until bookdb_index_free.
 *
 * An index is never changed after it is built: any number of threads may use
 * one at once.
 */
#ifndef BOOKDB_INDEX_H
#define BOOKDB_INDEX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/keydir.h"
#include "bookdb/record.h"
#include "shogi/errors.h"

typedef struct BookIndex BookIndex;

/* bookdb_index_find's "not in the index". */
#define BOOKDB_INDEX_NONE BOOKDB_KEYDIR_NONE

/*
 * Builds the index of every pos record txn sees (read or write transaction),
 * in one cursor pass; the memory is sized up front from bookdb_count. Returns
 * 0, BOOKDB_ENOMEM (also for 2^32 - 1 records or more: the directory holds
 * 32-bit positions), BOOKDB_ECORRUPT (a key that is not 16 bytes, or keys out of
 * order) or another error of the cursor; *out is then NULL and txn unchanged.
 * The caller frees the index with bookdb_index_free (see the lifetime above).
 */
JOSEKI_MUST_USE int bookdb_index_build(BookIndex **out, BookTxn *txn);
/* As bookdb_index_build; the pass ends with BOOKDB_ESTOPPED soon after *stop is
 * set (stop may be NULL): on a book larger than memory it reads for minutes. */
JOSEKI_MUST_USE int bookdb_index_build_until(BookIndex **out, BookTxn *txn,
                                             const atomic_bool *stop);
/* Frees the index. Accepts NULL. */
void bookdb_index_free(BookIndex *ix);

/*
 * A pass over the records in index order (key order), on a book read at
 * random (BookDBOptions.random in effect: the kernel reads no page the pass
 * did not ask for), asks for the pages of the records ahead of it, so that
 * many are read at once wherever they lie in the file: before record i, call
 * bookdb_index_read_ahead(ix, &a, i, end), end being where the pass stops, a
 * zeroed BookIndexAhead a for each pass. Pages in file order go as one
 * request. On any other book, or once the records are dropped, nothing.
 */
typedef struct {
	size_t upto; /* the records asked for end here */
} BookIndexAhead;
void bookdb_index_read_ahead(const BookIndex *ix, BookIndexAhead *a, size_t i, size_t end);

/* Gives back the memory of the records' addresses (16 bytes a record) of a
 * pass that has read every record it needs: after it, only the keys,
 * bookdb_index_find and the key directory may be used. */
void bookdb_index_drop_records(BookIndex *ix);

/* Records in the index. */
size_t bookdb_index_count(const BookIndex *ix);
/* Bytes of memory the index holds. */
size_t bookdb_index_bytes(const BookIndex *ix);

/* The position of key in key order (0 .. count-1), or BOOKDB_INDEX_NONE. */
size_t bookdb_index_find(const BookIndex *ix, Key key);
/* The key at position i (< count), and all of them, ascending. */
Key bookdb_index_key(const BookIndex *ix, size_t i);
const Key *bookdb_index_keys(const BookIndex *ix);
/* The key directory over bookdb_index_keys, for callers that inline
 * bookdb_keydir_find in a hot loop (positions are the same as find's). */
const BookKeyDir *bookdb_index_dir(const BookIndex *ix);

/* The raw bytes of the record at position i (< count), as bookdb_get_raw
 * gives them; valid while the transaction lives. */
void bookdb_index_raw(const uint8_t **val, size_t *len, const BookIndex *ix, size_t i);
/* As bookdb_get_raw, bookdb_get_moves and bookdb_get, through the index:
 * BOOKDB_ENOTFOUND when key is not in it, BOOKDB_ECORRUPT from decoding. The
 * transaction must still be alive. */
JOSEKI_MUST_USE int bookdb_index_get_raw(const uint8_t **val, size_t *len, const BookIndex *ix,
                                         Key key);
JOSEKI_MUST_USE int bookdb_index_get_moves(BookRecord *out, const BookIndex *ix, Key key);
JOSEKI_MUST_USE int bookdb_index_get(BookRecord *out, const BookIndex *ix, Key key);

/*
 * A breadth-first walk over an index's records (export's roots, think
 * --reanalyse): one bit a record for "met", and a queue of the records met, in
 * the order met (4 bytes each). bookdb_walk_init: 0 or BOOKDB_ENOMEM.
 */
typedef struct {
	uint64_t *seen;
	uint32_t *queue;
	size_t head, tail; /* queue[head..tail): met, not yet taken */
} BookWalk;
JOSEKI_MUST_USE int bookdb_walk_init(BookWalk *w, const BookIndex *ix);
/* Meets record i: queued unless met before (BOOKDB_INDEX_NONE: nothing). */
static inline void bookdb_walk_meet(BookWalk *w, size_t i)
{
	if (i == BOOKDB_INDEX_NONE || (w->seen[i / 64] >> (i % 64) & 1)) return;
	w->seen[i / 64] |= 1ULL << (i % 64);
	w->queue[w->tail++] = (uint32_t)i;
}
/* The next record to visit into *i: true, or false when the walk is over. */
static inline bool bookdb_walk_next(BookWalk *w, size_t *i)
{
	if (w->head >= w->tail) return false;
	*i = w->queue[w->head++];
	return true;
}
/* Whether record i was met. */
static inline bool bookdb_walk_met(const BookWalk *w, size_t i)
{
	return w->seen[i / 64] >> (i % 64) & 1;
}
void bookdb_walk_free(BookWalk *w);

#endif
