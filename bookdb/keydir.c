/* bookdb/keydir.c — sizing and filling a key directory (bookdb/keydir.h). */
#include "bookdb/keydir.h"

unsigned bookdb_keydir_dir_bits(size_t n)
{
	unsigned b = 4;
	while (b < 30 && ((size_t)1 << b) < n / 2) b++;
	return b;
}

unsigned bookdb_keydir_filter_log2(size_t n)
{
	unsigned b = 10;
	while (b < 40 && ((size_t)1 << b) < n * 8) b++;
	return b;
}

void bookdb_keydir_fill(BookKeyDir *out, const Key *keys, size_t n, uint32_t *dir,
			unsigned dir_bits, uint64_t *filter, unsigned filter_log2)
{
	uint64_t mask = ((uint64_t)1 << filter_log2) - 1;
	/* One pass: every bucket up to a key's own starts at or before it. */
	size_t b = 0;
	for (size_t i = 0; i < n; i++) {
		size_t kb = (size_t)(keys[i].hi >> (64 - dir_bits));
		while (b <= kb) dir[b++] = (uint32_t)i;
		uint64_t bit = bookdb_keydir_filter_bit(keys[i], mask);
		filter[bit >> 6] |= 1ULL << (bit & 63);
	}
	for (size_t end = bookdb_keydir_dir_len(dir_bits); b < end; b++) dir[b] = (uint32_t)n;
	*out = (BookKeyDir){keys, n, dir, dir_bits, filter, mask};
}
