/*
 * tests/minimax/planted_tree.h — a small book whose every position, move,
 * value, depth and game count the export tests know (test_partial.c,
 * test_kif.c): they plant it and compute what an export must hold from this
 * table, on their own.
 */
#ifndef TESTS_MINIMAX_PLANTED_TREE_H
#define TESTS_MINIMAX_PLANTED_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "tests/support/support.h"

/* A position, its moves "usi:eval:games" (games optional; White's moves
 * valued for White), its depth. */
typedef struct {
	const char *spec;
	const char *moves;
	int depth;
} Plant;

static const Plant BOOK[] = {
    {"startpos", "7g7f:50:10 2g2f:40:3 5g5f:-100:1", 20},
    {"startpos moves 7g7f", "3c3d:-50:6 8c8d:-60:4 4c4d:-200", 12},
    {"startpos moves 2g2f", "8c8d:-40:3", 8},
    {"startpos moves 7g7f 3c3d", "2g2f:60:5 6i7h:30:1", 12},
    {"startpos moves 7g7f 8c8d", "2g2f:70:4", 6},
    {"startpos moves 2g2f 8c8d", "2f2e:40:3", 8},
    {"startpos moves 7g7f 3c3d 2g2f", "8c8d:-60:5 4c4d:-61:1", 10},
    /* A promotion, and the same move declined: a bishop left unpromoted,
     * which the exports leave out (plant_declined). */
    {"startpos moves 7g7f 3c3d 6i7h", "2b8h+:-300 2b8h:-320", 9},
};
#define NBOOK (sizeof BOOK / sizeof BOOK[0])

/* Whether move usi of moves (a BOOK entry's) is a declined promotion the
 * exports leave out (docs/minimax.md, "Where values come from"): the same
 * move promoting is listed too (BOOK's only such pair is a bishop's). */
static inline bool plant_declined(const char *moves, const char *usi)
{
	size_t n = strlen(usi);
	if (n == 0 || usi[n - 1] == '+') return false;
	for (const char *p = strstr(moves, usi); p; p = strstr(p + 1, usi))
		if ((p == moves || p[-1] == ' ') && p[n] == '+' && p[n + 1] == ':') return true;
	return false;
}

/* Plants BOOK into the book at path. */
static inline void plant_tree(const char *path)
{
	for (size_t i = 0; i < NBOOK; i++)
		ts_plant(path, BOOK[i].spec, BOOK[i].moves, BOOK[i].depth);
}

#endif
