/*
 * shogi/parfor.h — a loop over [0, n) cut into ranges, one a thread.
 *
 * For the whole-book passes' loops over arrays read or written at random
 * (a graph's reverse edges, its renumbering): each range's misses wait on
 * memory beside the others'. The ranges are equal and in order (range t is
 * [n*t/nt, n*(t+1)/nt)); the first runs on the calling thread, and a range
 * whose thread cannot be started runs there too, after it: the result never
 * depends on the threads. fn must write only what its range owns (or
 * per-range sums the caller adds up after).
 */
#ifndef SHOGI_PARFOR_H
#define SHOGI_PARFOR_H

#include <stddef.h>

#define PARFOR_MAX 16 /* ranges at most */
/* The items under which the whole-book passes keep a loop on one thread. */
#define PARFOR_MIN_ITEMS 4096

/* One range: [lo, hi) of the loop, t its number (0..nt-1). */
typedef void (*ParforFn)(void *ctx, size_t lo, size_t hi, int t);

/* The threads a loop over n items is cut into: the cores online (at most
 * PARFOR_MAX), 1 under min_n items. */
int parfor_threads(size_t n, size_t min_n);

/* Runs fn over [0, n) in nt ranges (1..PARFOR_MAX; others are clamped). */
void parfor(size_t n, int nt, ParforFn fn, void *ctx);

#endif
