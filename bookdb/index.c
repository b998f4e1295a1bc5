/*
 * bookdb/index.c — the snapshot index (bookdb/index.h).
 *
 * The arrays live in two allocations sized before the cursor pass, so nothing
 * grows or moves while it runs: the record addresses in one (so that
 * bookdb_index_drop_records can give them back), the keys, directory and
 * filter in the other.
 * (Transparent huge pages were tried: at 10 M records they made the build
 * 2.5 times slower, the kernel zeroing and compacting on the first touch, for
 * lookups hardly faster, the record's own page missing the TLB anyway.)
 */
#include "bookdb/index.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "bookdb/bookdb_priv.h"
#include "shogi/bigmem.h"

#define ALIGN 16 /* of every array: a Key's */

typedef struct {
	const uint8_t *val;
	size_t len;
} IndexRec;

struct BookIndex {
	BookKeyDir kd;
	Key *keys;
	IndexRec *recs; /* NULL once dropped */
	void *mem;      /* keys, directory, filter */
	size_t mem_len;
	bool read_ahead; /* the book is read at random: passes ask for pages ahead */
};

/* bookdb_index_read_ahead: how many records ahead of the pass, asked for
 * this many at a time; a request's largest length. */
#define AHEAD_RECORDS 4096
#define AHEAD_STEP 256
#define AHEAD_RUN_MAX (1u << 20)

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int bookdb_index_build(BookIndex **out, BookTxn *txn)
{
	return bookdb_index_build_until(out, txn, NULL);
}

int bookdb_index_build_until(BookIndex **out, BookTxn *txn, const atomic_bool *stop)
{
	*out = NULL;
	uint64_t count;
	int rc = bookdb_count(&count, txn, BOOKDB_POS);
	if (rc) return rc;
	if (count >= UINT32_MAX) return BOOKDB_ENOMEM; /* directory entries are u32 */
	size_t n = (size_t)count;
	unsigned dbits = bookdb_keydir_dir_bits(n), flog = keyfilter_log2(n);
	size_t off_dir = align_up(n * sizeof(Key), ALIGN);
	size_t off_filter =
	    off_dir + align_up(bookdb_keydir_dir_len(dbits) * sizeof(uint32_t), ALIGN);
	size_t len = off_filter + keyfilter_words(flog) * sizeof(uint64_t);
	BookIndex *ix = calloc(1, sizeof *ix);
	BookIter *it = NULL;
	/* Zeroed for the filter; fresh pages of a large block are zero anyway. */
	if (!ix || !(ix->mem = bigmem_alloc(len)) ||
	    !(ix->recs = bigmem_alloc((n + 1) * sizeof *ix->recs))) {
		bookdb_index_free(ix);
		return BOOKDB_ENOMEM;
	}
	ix->mem_len = len;
	ix->read_ahead = txn->db->random;
	uint8_t *base = ix->mem;
	ix->keys = (Key *)base;
	if ((rc = bookdb_iter_open(&it, txn))) goto bad;
	size_t i = 0;
	Key k;
	const uint8_t *val;
	size_t vlen;
	while ((rc = bookdb_iter_next(it, &k, &val, &vlen)) == 1) {
		if (stop && (i & 0xffff) == 0 && atomic_load(stop)) {
			rc = BOOKDB_ESTOPPED;
			goto bad;
		}
		/* More records than counted, or out of order: not the database
		 * bookdb_count described. */
		if (i == n || (i && key_cmp(ix->keys[i - 1], k) >= 0)) {
			rc = BOOKDB_ECORRUPT;
			goto bad;
		}
		ix->keys[i] = k;
		ix->recs[i] = (IndexRec){val, vlen};
		i++;
	}
	if (rc < 0) goto bad;
	bookdb_iter_free(it);
	bookdb_keydir_fill(&ix->kd, ix->keys, i, (uint32_t *)(base + off_dir), dbits,
	                   (uint64_t *)(base + off_filter), flog);
	*out = ix;
	return 0;
bad:
	bookdb_iter_free(it);
	bookdb_index_free(ix);
	return rc;
}

void bookdb_index_free(BookIndex *ix)
{
	if (!ix) return;
	bigmem_free(ix->mem);
	bigmem_free(ix->recs);
	free(ix);
}

static void will_need(uintptr_t from, uintptr_t to)
{
	if (to > from) (void)madvise((void *)from, to - from, MADV_WILLNEED);
}

void bookdb_index_read_ahead(const BookIndex *ix, BookIndexAhead *a, size_t i, size_t end)
{
	if (!ix->read_ahead || !ix->recs || a->upto >= i + AHEAD_RECORDS - AHEAD_STEP) return;
	size_t j = a->upto > i ? a->upto : i;
	size_t to = i + AHEAD_RECORDS < end ? i + AHEAD_RECORDS : end;
	/* The run of pages to ask for: [from, upto). */
	uintptr_t from = 0, upto = 0, mask = ~(uintptr_t)4095;
	for (; j < to; j++) {
		uintptr_t p0 = (uintptr_t)ix->recs[j].val & mask;
		uintptr_t p1 = ((uintptr_t)ix->recs[j].val + ix->recs[j].len + 4095) & mask;
		if (from && p0 >= from && p0 <= upto && p1 - from <= AHEAD_RUN_MAX) {
			if (p1 > upto) upto = p1;
			continue;
		}
		will_need(from, upto);
		from = p0;
		upto = p1;
	}
	will_need(from, upto);
	if (to > a->upto) a->upto = to;
}

size_t bookdb_index_count(const BookIndex *ix)
{
	return ix->kd.n;
}

void bookdb_index_drop_records(BookIndex *ix)
{
	bigmem_free(ix->recs);
	ix->recs = NULL;
}

size_t bookdb_index_bytes(const BookIndex *ix)
{
	return ix->mem_len + (ix->recs ? (ix->kd.n + 1) * sizeof *ix->recs : 0) + sizeof *ix;
}

size_t bookdb_index_find(const BookIndex *ix, Key key)
{
	return bookdb_keydir_find(&ix->kd, key);
}

Key bookdb_index_key(const BookIndex *ix, size_t i)
{
	return ix->keys[i];
}

const Key *bookdb_index_keys(const BookIndex *ix)
{
	return ix->keys;
}

const BookKeyDir *bookdb_index_dir(const BookIndex *ix)
{
	return &ix->kd;
}

void bookdb_index_raw(const uint8_t **val, size_t *len, const BookIndex *ix, size_t i)
{
	*val = ix->recs[i].val;
	*len = ix->recs[i].len;
}

int bookdb_index_get_raw(const uint8_t **val, size_t *len, const BookIndex *ix, Key key)
{
	size_t i = bookdb_keydir_find(&ix->kd, key);
	if (i == BOOKDB_INDEX_NONE) return BOOKDB_ENOTFOUND;
	bookdb_index_raw(val, len, ix, i);
	return 0;
}

int bookdb_index_get_moves(BookRecord *out, const BookIndex *ix, Key key)
{
	const uint8_t *v;
	size_t len;
	int rc = bookdb_index_get_raw(&v, &len, ix, key);
	return rc ? rc : bookdb_record_decode_moves(out, v, len);
}

int bookdb_index_get(BookRecord *out, const BookIndex *ix, Key key)
{
	const uint8_t *v;
	size_t len;
	int rc = bookdb_index_get_raw(&v, &len, ix, key);
	return rc ? rc : bookdb_record_decode(out, v, len);
}

int bookdb_walk_init(BookWalk *w, const BookIndex *ix)
{
	size_t n = bookdb_index_count(ix);
	*w = (BookWalk){.seen = calloc(n / 64 + 1, sizeof *w->seen),
	                .queue = malloc((n + 1) * sizeof *w->queue)};
	if (w->seen && w->queue) return 0;
	bookdb_walk_free(w);
	return BOOKDB_ENOMEM;
}

void bookdb_walk_free(BookWalk *w)
{
	free(w->seen);
	free(w->queue);
	w->seen = NULL;
	w->queue = NULL;
}
