/*
 * bookgen/reanalyse.h — which positions `think --reanalyse` thinks again
 * (docs/bookgen.md, "Re-analysis"): the thought positions under the roots
 * whose analysis is shallower, or searched fewer nodes, than asked, or comes
 * from another source (an imported book, or this book's own engines).
 *
 * A campaign is one set of criteria: its id is kept in the book (meta
 * "reanalyse": the criteria and the id), and every position thought again is
 * marked done for it in the work database (key "again" and the position's key,
 * value the campaign's id, 8 bytes little-endian), in the same transaction as
 * its new analysis (think_run with ThinkOptions.again). So a run interrupted
 * (Ctrl-C, a budget, kill -9 between two commits) and run again with the same
 * criteria thinks each position once: the list is made again without the
 * positions done. Other criteria start a new campaign and drop the old marks.
 */
#ifndef BOOKGEN_REANALYSE_H
#define BOOKGEN_REANALYSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"

/* What makes a thought position one to think again: every criterion given. */
typedef struct {
	int below_depth;      /* its analysis's depth (think_depth, else its deepest
	                         analysed move's) under this; 0: any */
	uint64_t below_nodes; /* the most nodes any of its analysed moves searched under
	                         this; 0: any */
	int source;           /* -1: any; BOOKDB_SOURCE_ENGINE (this book's engines) or
	                         BOOKDB_SOURCE_IMPORT (an imported book): its analysis's */
} ThinkAgainCriteria;

/* The criteria as text ("depth<20 nodes<100000 source=imported"), the
 * campaign's name in the book: every criterion, those not given too ("depth<0
 * nodes<0 source=any"), and never to change (a campaign under way would
 * start again). Users see the criteria as given (tools/cli_again.c). out
 * holds THINK_AGAIN_TEXT bytes. */
#define THINK_AGAIN_TEXT 96
void think_again_text(const ThinkAgainCriteria *c, char out[THINK_AGAIN_TEXT]);

/* Whether rec (a thought record) meets c. */
bool think_again_wanted(const BookRecord *rec, const ThinkAgainCriteria *c);

/*
 * The campaign of c in db (opened read-write): the one the book holds when
 * its criteria are c's, else a new one (its id written, the old campaign's
 * marks deleted, in one transaction). *id gets its id. 0, or a negative
 * BOOKDB_ code with err (THINK_AGAIN_ERRLEN bytes) saying why.
 */
#define THINK_AGAIN_ERRLEN 256
JOSEKI_MUST_USE int think_again_campaign(uint64_t *id, BookDB *db, const ThinkAgainCriteria *c,
                                         char *err);

/*
 * The positions to think again, breadth first from the roots (position
 * specs; none: the start position) through the book's stored moves: every
 * thought one that meets c and is not done in campaign id, shallowest first.
 * *keys (malloc'd, the caller frees it) gets *n of them; *reached the
 * positions of the book the roots reach. 0, or a negative BOOKDB_ code
 * (BOOKDB_EINVAL for a root that does not parse) with err.
 */
JOSEKI_MUST_USE int think_again_list(Key **keys, size_t *n, size_t *reached, BookDB *db,
                                     const ThinkAgainCriteria *c, uint64_t id,
                                     const char *const *roots, int nroots, char *err);

/* The work database's key of position key's mark (5 + 16 bytes). */
#define THINK_AGAIN_KEY_LEN 21
void think_again_key(uint8_t out[THINK_AGAIN_KEY_LEN], Key key);

#endif
