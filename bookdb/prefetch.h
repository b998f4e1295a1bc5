/*
 * bookdb/prefetch.h — records read ahead, by threads of their own.
 *
 * A book larger than memory is read from disk a page at a time: each lookup of
 * a cold record waits for one read, and a caller that looks up many records
 * one after another waits for them one after another (the coordinator at 10⁸
 * positions in 2.4 GB: 5-6 reads from disk a result, each alone). A caller
 * that knows which records it will read next hands their keys here; a few
 * threads look each one up in a read transaction of their own, so that
 * several reads are in flight at once, and the caller's own lookup later
 * finds the page in memory. Nothing is returned. A key the book does not hold
 * brings in the leaf page where it would go, the page a put of it reads.
 *
 * The keys wait on a stack: the last batch handed in is read first (a
 * depth-first search wants its newest node's children soonest). When the
 * stack is full the oldest keys are dropped: reading ahead is a hint, never
 * needed for a right answer. A book in memory gains nothing and loses a
 * little (a thread's wake-up a batch).
 */
#ifndef BOOKDB_PREFETCH_H
#define BOOKDB_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"

typedef struct BookPrefetch BookPrefetch;

typedef struct {
	uint64_t asked;   /* keys handed in */
	uint64_t read;    /* keys looked up (and their then function done) */
	uint64_t dropped; /* keys dropped from a full stack */
} BookPrefetchStats;

/* Starts threads (1..64) reading ahead in db, which must stay open until
 * bookdb_prefetch_close. 0, or BOOKDB_ENOMEM / BOOKDB_EIO (no thread). */
JOSEKI_MUST_USE int bookdb_prefetch_open(BookPrefetch **out, BookDB *db, int threads);
/* Hands in n keys, keys[0] to be read first. Never waits for a read. */
void bookdb_prefetch_keys(BookPrefetch *pf, const Key *keys, size_t n);
void bookdb_prefetch_stats(BookPrefetchStats *out, BookPrefetch *pf);
/*
 * Reading ahead deeper: fn, set before any key with a depth is handed in, is called by the
 * thread that read a record handed in by bookdb_prefetch_keys_deep with a
 * depth above 0 (val, len: the record, valid during the call, in the
 * thread's read transaction); it may hand in the keys it will want after
 * that record (its children) with depth - 1, so that a depth-first walk
 * finds the records below its next nodes read too, several lines at once,
 * not only the children of the node it has entered. Keys handed in by
 * bookdb_prefetch_keys have depth 0.
 */
typedef void (*BookPrefetchThen)(void *ctx, BookPrefetch *pf, Key key, const uint8_t *val,
                                 size_t len, int depth);
void bookdb_prefetch_then(BookPrefetch *pf, BookPrefetchThen fn, void *ctx);
void bookdb_prefetch_keys_deep(BookPrefetch *pf, const Key *keys, size_t n, int depth);
/* The same reads in the calling thread, in one read transaction of its own,
 * returning when they are done: for a thread that has to wait anyway (a
 * request for the coordinator's service thread) and wants the lookups
 * another thread makes of these records next to find them in memory. Never
 * fails (a read that does is a hint lost). */
void bookdb_prefetch_now(BookDB *db, const Key *keys, size_t n);
/* Names the threads (at most 15 bytes: top -H, perf), "book-ahead" until then. */
void bookdb_prefetch_name(BookPrefetch *pf, const char *name);
/* Stops the threads (the keys not yet read are dropped) and frees pf.
 * Accepts NULL. */
void bookdb_prefetch_close(BookPrefetch *pf);

#endif
