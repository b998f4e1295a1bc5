/*
 * shogi/u32sort.h — sorting an array of uint32_t ascending (node numbers,
 * indexes), the one comparator the tree's layers share.
 */
#ifndef SHOGI_U32SORT_H
#define SHOGI_U32SORT_H

#include <stdint.h>
#include <stdlib.h>

static inline int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* a[0..n) ascending. */
static inline void u32_sort(uint32_t *a, size_t n)
{
	qsort(a, n, sizeof *a, u32_cmp);
}

#endif
