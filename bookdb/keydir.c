/* bookdb/keydir.c — sizing, writing and filling a key directory (bookdb/keydir.h). */
#include "bookdb/keydir.h"

#include <string.h>

unsigned bookdb_keydir_dir_bits(size_t n)
{
	unsigned b = 4;
	while (b < 30 && ((size_t)1 << b) < n / 2) b++;
	return b;
}

/* Keys ahead of the one being set whose filter word is fetched meanwhile: the
 * words are random, and waiting for each in turn costs a third more. */
#define FILTER_AHEAD 16

void bookdb_keydir_write_init(BookKeyDirWriter *w, unsigned dir_bits,
                              void (*put)(void *ctx, const uint32_t *entries, size_t m), void *ctx)
{
	w->dir_bits = dir_bits;
	w->next = w->len = 0;
	w->put = put;
	w->ctx = ctx;
}

static void write_flush(BookKeyDirWriter *w)
{
	if (w->len) w->put(w->ctx, w->buf, w->len);
	w->len = 0;
}

void bookdb_keydir_write_gap(BookKeyDirWriter *w, size_t upto, uint32_t t)
{
	for (; w->next < upto; w->next++) {
		if (w->len == BOOKDB_KEYDIR_CHUNK) write_flush(w);
		w->buf[w->len++] = t;
	}
}

void bookdb_keydir_write_end(BookKeyDirWriter *w, uint32_t n)
{
	bookdb_keydir_write_gap(w, bookdb_keydir_dir_len(w->dir_bits), n);
	write_flush(w);
}

static void put_array(void *ctx, const uint32_t *entries, size_t m)
{
	uint32_t **at = ctx;
	memcpy(*at, entries, m * sizeof *entries);
	*at += m;
}

void bookdb_keydir_fill(BookKeyDir *out, const Key *keys, size_t n, uint32_t *dir,
                        unsigned dir_bits, uint64_t *filter, unsigned filter_log2)
{
	uint64_t mask = ((uint64_t)1 << filter_log2) - 1;
	uint32_t *at = dir;
	BookKeyDirWriter w; /* 16 KB of stack */
	bookdb_keydir_write_init(&w, dir_bits, put_array, &at);
	for (size_t i = 0; i < n; i++) bookdb_keydir_write_key(&w, keys[i], (uint32_t)i);
	bookdb_keydir_write_end(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		if (i + FILTER_AHEAD < n) {
			__builtin_prefetch(&filter[keyfilter_word(keys[i + FILTER_AHEAD], mask)],
			                   1);
		}
		keyfilter_add(filter, mask, keys[i]);
	}
	*out = (BookKeyDir){keys, n, dir, dir_bits, filter, mask};
}

void bookdb_keydir_find_many(const BookKeyDir *d, const Key *k, size_t n, size_t *out)
{
	enum { STEP = 64 };
	for (size_t at = 0; at < n; at += STEP) {
		size_t m = n - at < STEP ? n - at : STEP, nh = 0;
		const Key *kk = k + at;
		size_t *oo = out + at;
		uint8_t hit[STEP];
		size_t lo[STEP], end[STEP];
		for (size_t i = 0; i < m; i++) bookdb_keydir_prefetch(d, kk[i]);
		for (size_t i = 0; i < m; i++) {
			oo[i] = BOOKDB_KEYDIR_NONE;
			if (!keyfilter_maybe(d->filter, d->filter_mask, kk[i])) continue;
			size_t b = (size_t)(kk[i].hi >> (64 - d->dir_bits));
			__builtin_prefetch(&d->dir[b]);
			lo[nh] = b; /* the bucket, until the next step reads where it starts */
			hit[nh++] = (uint8_t)i;
		}
		for (size_t h = 0; h < nh; h++) {
			size_t b = lo[h];
			lo[h] = d->dir[b];
			end[h] = d->dir[b + 1] < d->n ? d->dir[b + 1] : d->n;
			if (lo[h] < end[h]) __builtin_prefetch(&d->keys[lo[h]]);
		}
		for (size_t h = 0; h < nh; h++)
			for (size_t i = lo[h]; i < end[h]; i++)
				if (key_equal(d->keys[i], kk[hit[h]])) {
					oo[hit[h]] = i;
					break;
				}
	}
}
