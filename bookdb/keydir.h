/*
 * bookdb/keydir.h — finding a 128-bit key among n keys held in key order
 * (key_cmp), in two or three memory accesses instead of a binary search's
 * twenty-odd: a directory of the top d bits of key.hi, and in front of it a
 * filter that turns most absent keys away with one access.
 *
 *   directory  2^d + 1 u32: dir[b] is the first index whose key's top d bits
 *              of hi are >= b, so bucket b is keys[dir[b] .. dir[b+1]) and
 *              dir[2^d] = n. d is the smallest of 4..30 with 2^d >= n / 2, so
 *              a bucket holds about two keys (Zobrist keys are uniform).
 *   filter     the key filter of shogi/keymap.h (keyfilter_*), shared with
 *              the in-memory key map: 2^f bits, f the smallest of 10..40 with
 *              2^f >= 8n (8 to 16 bits a key, about one byte); every key sets
 *              three bits of one u64 word (keyfilter_word, keyfilter_bits),
 *              so an absent key passes with probability 0.7 % (16 bits a
 *              key) to 3.5 % (8 bits a key): about 1.8 % at 10^8 keys.
 *
 * Both are part of the minimax graph file's layout (docs/minimax.md, "The
 * graph file"): the sizes and the filter's bits must never change. The book's
 * snapshot index (bookdb/index.h) and the graph file (minimax/mmfile.h) both
 * find keys through this code.
 *
 * A BookKeyDir only points at memory owned by someone else (an index's
 * arrays, a mapped file); it is read-only, so any number of threads may use
 * one at once.
 */
#ifndef BOOKDB_KEYDIR_H
#define BOOKDB_KEYDIR_H

#include <stddef.h>
#include <stdint.h>

#include "shogi/keymap.h"
#include "shogi/zobrist.h"

/* bookdb_keydir_find's "not there". */
#define BOOKDB_KEYDIR_NONE SIZE_MAX

typedef struct {
	const Key *keys; /* n keys, ascending, no two equal */
	size_t n;
	const uint32_t *dir;    /* bookdb_keydir_dir_len(dir_bits) entries */
	unsigned dir_bits;      /* d: 1..30 */
	const uint64_t *filter; /* keyfilter_words(filter_log2) words */
	uint64_t filter_mask;   /* 2^f - 1 */
} BookKeyDir;

/* The directory bits d for n keys (see above); the filter's are
 * keyfilter_log2(n). */
unsigned bookdb_keydir_dir_bits(size_t n);

/* Entries of the directory (u32). */
static inline size_t bookdb_keydir_dir_len(unsigned dir_bits)
{
	return ((size_t)1 << dir_bits) + 1;
}

/*
 * Fills dir (bookdb_keydir_dir_len(dir_bits) entries) and filter
 * (keyfilter_words(filter_log2) words, zeroed by the caller) for
 * keys[0..n), which must be ascending; fills *out to find them through those
 * arrays (they, and keys, must then outlive it). No allocation.
 */
void bookdb_keydir_fill(BookKeyDir *out, const Key *keys, size_t n, uint32_t *dir,
                        unsigned dir_bits, uint64_t *filter, unsigned filter_log2);

/*
 * Writing a directory as the keys come, in order, without holding it: the
 * entries go out in chunks through put (bookdb_keydir_fill's into its array,
 * the graph file's fold into the file). For each key, bookdb_keydir_write_key
 * with its index; then bookdb_keydir_write_end with n.
 */
#define BOOKDB_KEYDIR_CHUNK 4096
typedef struct {
	unsigned dir_bits;
	size_t next; /* entries settled: put, or in buf */
	size_t len;  /* of them in buf */
	void (*put)(void *ctx, const uint32_t *entries, size_t m);
	void *ctx;
	/* Four more than a chunk: a key writes four entries whatever it needs
	 * (the next key's overwrite the rest), a branch taken only past four. */
	uint32_t buf[BOOKDB_KEYDIR_CHUNK + 4];
} BookKeyDirWriter;

void bookdb_keydir_write_init(BookKeyDirWriter *w, unsigned dir_bits,
                              void (*put)(void *ctx, const uint32_t *entries, size_t m), void *ctx);
/* The entries after the last key's bucket up to k's (k is at index t). */
void bookdb_keydir_write_gap(BookKeyDirWriter *w, size_t upto, uint32_t t);
static inline void bookdb_keydir_write_key(BookKeyDirWriter *w, Key k, uint32_t t)
{
	size_t upto = (size_t)(k.hi >> (64 - w->dir_bits)) + 1;
	uint32_t *p = w->buf + w->len;
	p[0] = p[1] = p[2] = p[3] = t;
	if (upto > w->next + 4 || w->len + 4 > BOOKDB_KEYDIR_CHUNK) {
		bookdb_keydir_write_gap(w, upto, t);
		return;
	}
	size_t m = upto > w->next ? upto - w->next : 0;
	w->next += m;
	w->len += m;
}
/* The entries after the last key's bucket, n each, and the last chunk put. */
void bookdb_keydir_write_end(BookKeyDirWriter *w, uint32_t n);

/*
 * Starts fetching k's filter word, for a caller about to look up many keys:
 * asked for together, their memory latencies overlap. Changes nothing.
 */
static inline void bookdb_keydir_prefetch(const BookKeyDir *d, Key k)
{
	__builtin_prefetch(&d->filter[keyfilter_word(k, d->filter_mask)]);
}

/*
 * The index of k in d->keys, or BOOKDB_KEYDIR_NONE. Reads one filter word,
 * and for keys that pass it two directory entries and the bucket's keys. A
 * directory entry beyond n (a damaged file) is read as n: never out of range.
 */
static inline size_t bookdb_keydir_find(const BookKeyDir *d, Key k)
{
	if (!keyfilter_maybe(d->filter, d->filter_mask, k)) return BOOKDB_KEYDIR_NONE;
	size_t b = (size_t)(k.hi >> (64 - d->dir_bits));
	size_t i = d->dir[b], end = d->dir[b + 1];
	end = end < d->n ? end : d->n;
	for (; i < end; i++)
		if (key_equal(d->keys[i], k)) return i;
	return BOOKDB_KEYDIR_NONE;
}

/*
 * How many of d->keys are before k in key order (k's index when it is
 * there, where it would go when not): two directory entries and the
 * bucket's keys, no filter.
 */
static inline size_t bookdb_keydir_rank(const BookKeyDir *d, Key k)
{
	size_t b = (size_t)(k.hi >> (64 - d->dir_bits));
	size_t i = d->dir[b], end = d->dir[b + 1];
	end = end < d->n ? end : d->n;
	i = i < end ? i : end;
	while (i < end && key_cmp(d->keys[i], k) < 0) i++;
	return i;
}

/*
 * bookdb_keydir_find for each of k[0..n): out[i] is k[i]'s index or
 * BOOKDB_KEYDIR_NONE. The keys go through each step together (filter words,
 * then the directory entries of those that pass, then their buckets), each
 * step's memory fetched for all before the first is read: the misses of a
 * step overlap instead of following one another.
 */
void bookdb_keydir_find_many(const BookKeyDir *d, const Key *k, size_t n, size_t *out);

#endif
