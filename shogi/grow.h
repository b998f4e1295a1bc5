/*
 * shogi/grow.h — the one growable-array helper of the tree.
 */
#ifndef SHOGI_GROW_H
#define SHOGI_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include "shogi/errors.h"

/* realloc, or another allocator's (shogi/bigmem.h). */
typedef void *(*ArrayRealloc)(void *p, size_t bytes);

/*
 * Makes *arr (elem bytes an element, *cap elements now) hold at least need
 * elements, grown with re: the capacity doubles from at least min_cap.
 * Returns 0, or -1 when memory runs out or the size overflows (*arr and *cap
 * are then unchanged).
 */
JOSEKI_MUST_USE static inline int array_grow_by(ArrayRealloc re, void **arr, size_t *cap,
                                                size_t need, size_t elem, size_t min_cap)
{
	if (need <= *cap) return 0;
	size_t nc = *cap ? *cap : (min_cap ? min_cap : 16);
	while (nc < need) {
		if (nc > SIZE_MAX / 2) return -1;
		nc *= 2;
	}
	if (elem && nc > SIZE_MAX / elem) return -1;
	void *p = re(*arr, nc * elem);
	if (!p) return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

/* array_grow_by with realloc. */
JOSEKI_MUST_USE static inline int array_grow(void **arr, size_t *cap, size_t need, size_t elem,
                                             size_t min_cap)
{
	return array_grow_by(realloc, arr, cap, need, elem, min_cap);
}

#endif
