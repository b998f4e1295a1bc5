/*
 * tests/fuzz/fuzz_bookdb_mark.c — libFuzzer target for the marks database's
 * entries (bookdb/marks.h): the input's first 18 bytes (or fewer) are the
 * key, the rest the value; bookdb_mark_decode returns 0 or BOOKDB_ECORRUPT
 * and never reads outside them, and an entry that decodes has a known kind
 * and source, a note without NUL of at most BOOKDB_NOTE_MAX bytes, the mark
 * it replaced (if any) inside the value and at its end, and encodes back to
 * the same key and value. Seeds: an avoid, a prefer, a mark that replaced
 * one with an entry (replaced) and one that replaced a record flag alone
 * (replaced_flag).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/marks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096) return 0;
	size_t klen = size < BOOKDB_MARK_KEY_LEN ? size : BOOKDB_MARK_KEY_LEN;
	/* Exact-size copies: AddressSanitizer sees any read past either. */
	uint8_t *key = malloc(klen ? klen : 1), *val = malloc(size - klen ? size - klen : 1);
	if (!key || !val) {
		free(key);
		free(val);
		return 0;
	}
	memcpy(key, data, klen);
	memcpy(val, data + klen, size - klen);
	static BookMark m; /* large: not on the stack */
	int rc = bookdb_mark_decode(&m, key, klen, val, size - klen);
	if (rc != 0 && rc != BOOKDB_ECORRUPT) abort();
	if (rc == 0) {
		if (m.kind != BOOKDB_MARK_AVOID && m.kind != BOOKDB_MARK_PREFER) abort();
		if (m.source != BOOKDB_MARK_HAND && m.source != BOOKDB_MARK_PRUNE) abort();
		size_t n = strlen(m.note);
		if (n > BOOKDB_NOTE_MAX || (!m.prior_kind && n != size - klen - 10)) abort();
		if (m.prior && (m.prior < val || m.prior + m.prior_len != val + (size - klen)))
			abort();
		uint8_t kb[BOOKDB_MARK_KEY_LEN], vb[BOOKDB_MARK_VALUE_MAX];
		bookdb_mark_key(kb, m.key, m.move);
		size_t vl = bookdb_mark_encode(vb, &m);
		if (memcmp(kb, key, klen) || vl != size - klen || memcmp(vb, val, vl)) abort();
	}
	free(key);
	free(val);
	return 0;
}
