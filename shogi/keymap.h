/*
 * shogi/keymap.h — the one hash map of 128-bit keys (Key, zobrist.h), and the
 * one key filter. Open addressing, linear probing, at most half full; one
 * u64 a slot, 0 = empty. Two kinds, chosen when the map is made:
 *
 *   index map  (keymap_init(m, stride)) maps a key to a u32 index into the
 *              caller's array of keys, which the map does not copy: the key
 *              of index i is at keys + i * stride bytes, where keys is passed
 *              to every call (the array may move as it grows). A slot holds
 *              the top 32 bits of key.hi (so a probe past another key seldom
 *              reads that key: a cache miss) and the index + 1. Up to
 *              KEYMAP_MAX entries. Optional filter (keymap_filter_build).
 *   set        (keymap_init_set(m, values)) holds the keys themselves, 8 bytes
 *              each: a slot holds key.hi (hi 0 as 1), so a key the set does
 *              not hold is taken for one it holds only when their 64-bit hi
 *              halves are equal, about 2^-64 a pair for Zobrist keys; keys
 *              that are not random (a node number) must differ in hi. With
 *              values, a u32 beside each slot (KEYMAP_NONE when added).
 *
 * The slot where a key's probe starts comes from key.hi alone (Fibonacci
 * hashing: the top bits of hi * 2^64/phi), so a set can grow from its slots.
 *
 * The key filter is 2^f bits with f the smallest of 10..40 such that
 * 2^f >= 8n (8 to 16 bits a key), in u64 words; a key sets three bits of one
 * word (a blocked Bloom filter): word ((hi ^ (lo >> 7)) mod 2^f) / 64, bits
 * (hi ^ (lo >> 7)) mod 64, lo mod 64 and hi >> 58. An absent key passes with
 * probability about 3.5 % at 8 bits a key and 0.7 % at 16 (the one bit a key
 * of the graph file's version 1 let 12 % and 6 % through). The minimax graph
 * file stores such a filter (bookdb/keydir.h), so the word, the bits and the
 * size are part of its format: changing them is a new version of the file.
 *
 * Lookups only read, so any number of threads may look up at once; an insert
 * needs the map to itself. Calling an index map's function on a set, or the
 * other way round, is a programmer's mistake (assert). Nothing here allocates except
 * keymap_reserve, the inserts (when the map must grow) and keymap_filter_build.
 * keymap_del removes an entry of either kind (out of line: no hot path deletes).
 */
#ifndef SHOGI_KEYMAP_H
#define SHOGI_KEYMAP_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shogi/zobrist.h"
#include "shogi/errors.h"

/* Not found (index maps), and a set's value when just added. */
#define KEYMAP_NONE UINT32_MAX
/* The most entries a map holds (indexes 0 .. KEYMAP_MAX - 1). */
#define KEYMAP_MAX ((size_t)UINT32_MAX - 1)

/* ---- the key filter -------------------------------------------------------- */

/* The filter bits log2 f for n keys (see above). */
unsigned keyfilter_log2(size_t n);

/* Words (u64) of a filter of 2^f bits. */
static inline size_t keyfilter_words(unsigned log2)
{
	return ((size_t)1 << log2) / 64;
}

/* The word of k (mask = 2^f - 1). Part of the graph file's format. */
static inline size_t keyfilter_word(Key k, uint64_t mask)
{
	return (size_t)(((k.hi ^ (k.lo >> 7)) & mask) >> 6);
}

/* The bits k sets in its word. Part of the graph file's format. */
static inline uint64_t keyfilter_bits(Key k)
{
	return 1ULL << ((k.hi ^ (k.lo >> 7)) & 63) | 1ULL << (k.lo & 63) | 1ULL << (k.hi >> 58);
}

static inline void keyfilter_add(uint64_t *words, uint64_t mask, Key k)
{
	words[keyfilter_word(k, mask)] |= keyfilter_bits(k);
}

/* False when k was never added; true for every added key, and for some others. */
static inline bool keyfilter_maybe(const uint64_t *words, uint64_t mask, Key k)
{
	uint64_t b = keyfilter_bits(k);
	return (words[keyfilter_word(k, mask)] & b) == b;
}

/* ---- the sharp filter ------------------------------------------------------- */
/*
 * For a pass that pays for every absent key a filter lets through (each one
 * is written to disk and sorted): three bits a key, all in one word, over 2^w
 * words with w the smallest of 4..40 such that 2^w * 64 >= 16n (16 to 32 bits
 * a key): word lo mod 2^w, bits hi, hi >> 6 and hi >> 12 mod 64. An absent
 * key passes with probability about 1 % at 16 bits a key, 0.1 % at 32. Not
 * part of any file: free to change.
 */
unsigned keyfilter3_log2(size_t n);

static inline uint64_t keyfilter3_bits(Key k)
{
	return 1ULL << (k.hi & 63) | 1ULL << (k.hi >> 6 & 63) | 1ULL << (k.hi >> 12 & 63);
}

/* mask = 2^w - 1 */
static inline void keyfilter3_add(uint64_t *words, uint64_t mask, Key k)
{
	words[k.lo & mask] |= keyfilter3_bits(k);
}

static inline bool keyfilter3_maybe(const uint64_t *words, uint64_t mask, Key k)
{
	uint64_t b = keyfilter3_bits(k);
	return (words[k.lo & mask] & b) == b;
}

/* Starts fetching k's word, for a caller about to ask of many keys: their
 * misses then overlap. */
static inline void keyfilter3_prefetch(const uint64_t *words, uint64_t mask, Key k)
{
	__builtin_prefetch(&words[k.lo & mask]);
}

/* ---- the map ----------------------------------------------------------------- */

typedef struct {
	uint64_t *slot;       /* cap slots; 0 empty */
	uint32_t *val;        /* sets with values: cap values, else NULL */
	size_t cap;           /* 0 (nothing allocated yet) or a power of two >= 16 */
	size_t n;             /* entries */
	unsigned shift;       /* 64 - log2(cap) */
	size_t stride;        /* index maps: bytes from one key to the next; sets: 0 */
	bool values;          /* sets: keep a u32 value a key */
	uint64_t *filter;     /* index maps after keymap_filter_build, else NULL */
	uint64_t filter_mask; /* 2^f - 1 */
	/* Slots from calloc, never an array in a file (shogi/bigmem.h): for a
	 * map its pass sized to fit its own share of the budget, probed at
	 * random. Set after keymap_init; kept by keymap_free. */
	bool heap;
} KeyMap;

/* The bytes m holds (its slots, values and filter). */
static inline size_t keymap_bytes(const KeyMap *m)
{
	return m->cap * (sizeof *m->slot + (m->val ? sizeof *m->val : 0)) +
	       (m->filter ? (m->filter_mask + 1) / 8 : 0);
}

/* An empty index map over keys stride bytes apart (stride >= sizeof(Key)). */
void keymap_init(KeyMap *m, size_t stride);
/* An empty set, with a u32 value a key when values. */
void keymap_init_set(KeyMap *m, bool values);
/* Frees the map's memory and leaves it empty (of the same kind). */
void keymap_free(KeyMap *m);
/* Empties the map and keeps its room (a filter goes). */
void keymap_clear(KeyMap *m);

/*
 * Makes room for n entries in all, so that inserting up to n never allocates.
 * keys: an index map's keys (the entries' keys are read to place them anew),
 * NULL for a set. 0, or -1 when memory runs out or n > KEYMAP_MAX (the map is
 * then unchanged).
 */
JOSEKI_MUST_USE int keymap_reserve(KeyMap *m, const void *keys, size_t n);

static inline size_t keymap_home(const KeyMap *m, uint64_t hi)
{
	return (size_t)((hi * 0x9e3779b97f4a7c15ULL) >> m->shift);
}

static inline const Key *keymap_key_at(const KeyMap *m, const void *keys, uint32_t idx)
{
	return (const Key *)((const char *)keys + (size_t)idx * m->stride);
}

/* Index maps: the slot holding k, or the empty slot where it would go. */
static inline size_t keymap_probe(const KeyMap *m, const void *keys, Key k)
{
	size_t mask = m->cap - 1, i = keymap_home(m, k.hi);
	uint64_t tag = k.hi >> 32;
	for (;; i = (i + 1) & mask) {
		uint64_t s = m->slot[i];
		if (!s) return i;
		if (s >> 32 == tag && key_equal(*keymap_key_at(m, keys, (uint32_t)s - 1), k))
			return i;
	}
}

/* Sets: the word a slot holds for k. */
static inline uint64_t keymap_word(Key k)
{
	return k.hi ? k.hi : 1;
}

/* Sets: the slot holding k, or the empty slot where it would go. */
static inline size_t keymap_probe_set(const KeyMap *m, Key k)
{
	uint64_t w = keymap_word(k);
	size_t mask = m->cap - 1, i = keymap_home(m, w);
	while (m->slot[i] && m->slot[i] != w) i = (i + 1) & mask;
	return i;
}

/* Index maps: the index of k, or KEYMAP_NONE. Asks the filter first if built. */
static inline uint32_t keymap_find(const KeyMap *m, const void *keys, Key k)
{
	if (m->filter && !keyfilter_maybe(m->filter, m->filter_mask, k)) return KEYMAP_NONE;
	if (!m->cap) return KEYMAP_NONE;
	size_t mask = m->cap - 1, i = keymap_home(m, k.hi);
	uint64_t tag = k.hi >> 32;
	for (;; i = (i + 1) & mask) {
		uint64_t s = m->slot[i];
		if (!s) return KEYMAP_NONE;
		if (s >> 32 == tag && key_equal(*keymap_key_at(m, keys, (uint32_t)s - 1), k))
			return (uint32_t)s - 1;
	}
}

/* Sets: whether k is in the set (see above for keys taken for others). */
static inline bool keymap_has(const KeyMap *m, Key k)
{
	if (!m->cap) return false;
	uint64_t w = keymap_word(k);
	size_t mask = m->cap - 1, i = keymap_home(m, w);
	for (;; i = (i + 1) & mask) {
		uint64_t s = m->slot[i];
		if (s == w) return true;
		if (!s) return false;
	}
}

/* Sets with values: k's value, or NULL when k is not in the set. */
static inline uint32_t *keymap_value(const KeyMap *m, Key k)
{
	if (!m->cap) return NULL;
	size_t i = keymap_probe_set(m, k);
	return m->slot[i] ? &m->val[i] : NULL;
}

/* Starts fetching the memory a lookup of k reads first (the filter word when
 * there is a filter, else k's first slot), for a caller about to look up many
 * keys: their memory latencies overlap. Changes nothing. */
static inline void keymap_prefetch(const KeyMap *m, Key k)
{
	if (!m->cap) return;
	if (m->filter)
		__builtin_prefetch(&m->filter[keyfilter_word(k, m->filter_mask)]);
	else
		__builtin_prefetch(&m->slot[keymap_home(m, m->stride ? k.hi : keymap_word(k))]);
}

/* Room for one more entry: the table doubles when it would pass half full.
 * 0, or -1 when memory runs out (the map is then unchanged). */
JOSEKI_MUST_USE static inline int keymap_room(KeyMap *m, const void *keys)
{
	return m->n + 1 <= m->cap / 2 ? 0 : keymap_reserve(m, keys, m->n + 1);
}

/*
 * Index maps: maps the key of idx (at keys + idx * stride) to idx unless the
 * map holds that key already. Returns the index the key maps to now (idx, or
 * the index it had), or -1 when memory runs out or idx >= KEYMAP_MAX (the map
 * is then unchanged). keys must hold every entry's key (growing reads them).
 * Inline, as the lookups: the selector and synth insert on their hot paths.
 */
static inline int64_t keymap_find_or_insert(KeyMap *m, const void *keys, uint32_t idx)
{
	assert(m->stride);
	if (idx >= KEYMAP_MAX || keymap_room(m, keys)) return -1;
	const Key *k = keymap_key_at(m, keys, idx);
	size_t i = keymap_probe(m, keys, *k);
	uint64_t s = m->slot[i];
	if (s) return (uint32_t)s - 1;
	m->slot[i] = (k->hi >> 32 << 32) | ((uint64_t)idx + 1);
	m->n++;
	if (m->filter) keyfilter_add(m->filter, m->filter_mask, *k);
	return idx;
}

/* Index maps: maps the key of idx to idx, replacing its index if the key is
 * there. 0, or -1 when memory runs out (the map is then unchanged). */
JOSEKI_MUST_USE int keymap_put(KeyMap *m, const void *keys, uint32_t idx);

/*
 * Sets: adds k unless the set holds it. Returns 1 when added, 0 when it was
 * there, -1 when memory runs out (the set is then unchanged). With values,
 * *val (if val is not NULL) points to k's value (KEYMAP_NONE when just added)
 * until the next insert.
 */
JOSEKI_MUST_USE static inline int keymap_add(KeyMap *m, Key k, uint32_t **val)
{
	assert(!m->stride);
	if (keymap_room(m, NULL)) return -1;
	size_t i = keymap_probe_set(m, k);
	int added = !m->slot[i];
	if (added) {
		m->slot[i] = keymap_word(k);
		if (m->values) m->val[i] = KEYMAP_NONE;
		m->n++;
	}
	if (val) *val = m->values ? &m->val[i] : NULL;
	return added;
}

/*
 * Removes k: 1 when it was there, 0 when not (keys: an index map's keys, as
 * for the lookups; NULL for a set). *out (if not NULL) gets what k held, an
 * index map's index or a set's value (KEYMAP_NONE for a set without values).
 * The entries after k in its probe run shift back into the hole (no
 * tombstones: lookups stay as they were), reading their keys to find where
 * their probes start. Never allocates, never shrinks the table. An index
 * map's filter keeps k's bits: k then passes the filter as some absent keys
 * do, and is still not found. An index map does not care what is in keys at
 * the removed index afterwards; to keep a caller's array dense, move its last
 * element into the hole and keymap_put it there (it cannot fail then).
 */
JOSEKI_MUST_USE int keymap_del(KeyMap *m, const void *keys, Key k, uint32_t *out);

/*
 * Index maps: builds the filter for the keys the map holds (its size from
 * their count); keys inserted later are added to it, so it never turns a key
 * of the map away (it only lets more absent keys through once the map has
 * grown past the count it was built for). 0, or -1 when memory runs out
 * (there is then no filter).
 */
JOSEKI_MUST_USE int keymap_filter_build(KeyMap *m, const void *keys);

/*
 * Iteration over the entries in slot order: start with *pos = 0; each call
 * returns 1 and fills *word (an index map's index, a set's key.hi word) and
 * *val (a set's value when it has values, else KEYMAP_NONE), or 0 at the end.
 * The map must not change in between.
 */
JOSEKI_MUST_USE int keymap_next(const KeyMap *m, size_t *pos, uint64_t *word, uint32_t *val);

#endif
