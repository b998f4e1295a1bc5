/*
 * shogi/keymap.c — the key map's growth, inserts, deletion and filter (keymap.h).
 */
#include "shogi/keymap.h"

#include "shogi/bigmem.h"

#include <stdlib.h>
#include <string.h>

unsigned keyfilter_log2(size_t n)
{
	unsigned f = 10;
	while (f < 40 && ((uint64_t)1 << f) < (uint64_t)n * 8) f++;
	return f;
}

unsigned keyfilter3_log2(size_t n)
{
	unsigned w = 4;
	while (w < 40 && ((uint64_t)64 << w) < (uint64_t)n * 16) w++;
	return w;
}

void keymap_init(KeyMap *m, size_t stride)
{
	memset(m, 0, sizeof *m);
	m->stride = stride;
}

void keymap_init_set(KeyMap *m, bool values)
{
	memset(m, 0, sizeof *m);
	m->values = values;
}

void keymap_free(KeyMap *m)
{
	bigmem_free(m->slot);
	bigmem_free(m->val);
	bigmem_free(m->filter);
	size_t stride = m->stride;
	bool values = m->values, heap = m->heap;
	memset(m, 0, sizeof *m);
	m->stride = stride;
	m->values = values;
	m->heap = heap;
}

void keymap_clear(KeyMap *m)
{
	if (m->cap) memset(m->slot, 0, m->cap * sizeof *m->slot);
	bigmem_free(m->filter);
	m->filter = NULL;
	m->n = 0;
}

/* The first empty slot from i on (mask = slots - 1). */
static size_t empty_slot(const uint64_t *slot, size_t mask, size_t i)
{
	while (slot[i]) i = (i + 1) & mask;
	return i;
}

int keymap_reserve(KeyMap *m, const void *keys, size_t n)
{
	if (n > KEYMAP_MAX) return -1;
	if (n <= m->cap / 2) return 0;
	size_t cap = m->cap ? m->cap : 16;
	unsigned log2 = 0;
	while (cap / 2 < n) {
		if (cap > SIZE_MAX / 2 / sizeof(uint64_t)) return -1;
		cap *= 2;
	}
	while (((size_t)1 << log2) < cap) log2++;
	uint64_t *slot = m->heap ? calloc(cap, sizeof *slot) : bigmem_alloc(cap * sizeof *slot);
	uint32_t *val = !m->values ? NULL
	                : m->heap  ? calloc(cap, sizeof *val)
	                           : bigmem_alloc(cap * sizeof *val);
	if (!slot || (m->values && !val)) {
		bigmem_free(slot);
		bigmem_free(val);
		return -1;
	}
	KeyMap nm = *m;
	nm.slot = slot;
	nm.val = val;
	nm.cap = cap;
	nm.shift = 64 - log2;
	for (size_t i = 0; i < m->cap; i++) {
		uint64_t s = m->slot[i];
		if (!s) continue;
		uint64_t hi = m->stride ? keymap_key_at(m, keys, (uint32_t)s - 1)->hi : s;
		size_t j = empty_slot(slot, cap - 1, keymap_home(&nm, hi));
		slot[j] = s;
		if (val) val[j] = m->val[i];
	}
	bigmem_free(m->slot);
	bigmem_free(m->val);
	*m = nm;
	return 0;
}

int keymap_put(KeyMap *m, const void *keys, uint32_t idx)
{
	int64_t at = keymap_find_or_insert(m, keys, idx);
	if (at < 0) return -1;
	if ((uint32_t)at != idx) { /* the key was there: its slot takes idx */
		size_t i = keymap_probe(m, keys, *keymap_key_at(m, keys, idx));
		m->slot[i] = (m->slot[i] >> 32 << 32) | ((uint64_t)idx + 1);
	}
	return 0;
}

/* Where the probe of the entry in slot s starts. */
static size_t home_of(const KeyMap *m, const void *keys, uint64_t s)
{
	return keymap_home(m, m->stride ? keymap_key_at(m, keys, (uint32_t)s - 1)->hi : s);
}

int keymap_del(KeyMap *m, const void *keys, Key k, uint32_t *out)
{
	if (!m->cap) return 0;
	size_t mask = m->cap - 1, i = m->stride ? keymap_probe(m, keys, k) : keymap_probe_set(m, k);
	if (!m->slot[i]) return 0;
	if (out) *out = m->stride ? (uint32_t)m->slot[i] - 1 : m->values ? m->val[i] : KEYMAP_NONE;
	/* Backward shift: the hole at i takes the first later entry of the run
	 * whose probe starts outside (i, j] (it passes i on its way to j), and
	 * the hole moves there; the run's end (an empty slot) ends it. */
	for (size_t j = (i + 1) & mask; m->slot[j]; j = (j + 1) & mask) {
		size_t h = home_of(m, keys, m->slot[j]);
		bool stays = i < j ? (i < h && h <= j) : (i < h || h <= j);
		if (stays) continue;
		m->slot[i] = m->slot[j];
		if (m->values) m->val[i] = m->val[j];
		i = j;
	}
	m->slot[i] = 0;
	m->n--;
	return 1;
}

int keymap_filter_build(KeyMap *m, const void *keys)
{
	assert(m->stride);
	bigmem_free(m->filter);
	m->filter = NULL;
	unsigned log2 = keyfilter_log2(m->n);
	uint64_t *f = bigmem_alloc(keyfilter_words(log2) * sizeof *f);
	if (!f) return -1;
	uint64_t mask = ((uint64_t)1 << log2) - 1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i])
			keyfilter_add(f, mask, *keymap_key_at(m, keys, (uint32_t)m->slot[i] - 1));
	m->filter = f;
	m->filter_mask = mask;
	return 0;
}

int keymap_next(const KeyMap *m, size_t *pos, uint64_t *word, uint32_t *val)
{
	for (size_t i = *pos; i < m->cap; i++) {
		uint64_t s = m->slot[i];
		if (!s) continue;
		*word = m->stride ? (uint32_t)s - 1 : s;
		*val = m->values ? m->val[i] : KEYMAP_NONE;
		*pos = i + 1;
		return 1;
	}
	*pos = m->cap;
	return 0;
}
