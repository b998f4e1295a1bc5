/*
 * tools/cli_again.h — re-analysis, shared by think and serve --work
 * (bookgen/reanalyse.h, docs/bookgen.md "Re-analysis"):
 *
 *   --reanalyse          think again the thought positions under the roots ...
 *   --below-depth D      ... whose analysis is shallower than D
 *   --below-nodes N      ... whose analysis searched fewer than N nodes
 *   --source imported|thought   ... whose analysis came from an imported book or
 *                        this book's engines
 */
#ifndef TOOLS_CLI_AGAIN_H
#define TOOLS_CLI_AGAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookgen/reanalyse.h"
#include "bookgen/roots.h"
#include "tools/cli_opt.h"

typedef struct {
	bool on;
	ThinkAgainCriteria criteria;
	CliOpt table[5]; /* the options above: a fragment for a command's table */
	/* After cli_again_prepare: the campaign and its list. */
	uint64_t campaign;
	Key *keys;
	size_t n;
} CliAgain;

/* No re-analysis, and the table (CLI_GROUP(a->table)); a must stay where it is. */
void cli_again_init(CliAgain *a);

/* The campaign and the positions to think again under roots (none: the start
 * position), a line on stderr unless quiet. 0, or -1 after a message naming
 * cmd. */
JOSEKI_MUST_USE int cli_again_prepare(CliAgain *a, BookDB *db, const RootList *roots, bool quiet,
                                      const char *cmd);

void cli_again_free(CliAgain *a);

#endif
