/*
 * tools/cli_plan.h — the options that say what a book is grown from and how,
 * shared by think, serve --work and cycle (bookgen/plan.h, docs/bookgen.md
 * "Growth policy"):
 *
 *   --roots FILE                 one position a line (# comments), weight 1 each
 *   --roots-from-games N         the N positions most reached in the ingested games
 *   --roots-ply K                ... after K plies (default 8)
 *   --roots-only                 not the positions on the way to the roots
 *   --select cover|pv            the policy (default cover)
 *   --window CP                  cover: the opponent's replies within CP of its best
 *   --book-side black|white|both cover: the colour(s) the book is grown for
 */
#ifndef TOOLS_CLI_PLAN_H
#define TOOLS_CLI_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookgen/plan.h"
#include "bookgen/roots.h"

#include "tools/cli_opt.h"
#include "shogi/errors.h"

typedef struct {
	PlanOptions plan;
	const char *roots_file;
	uint64_t from_games; /* 0: off */
	uint64_t ply;
	bool roots_only; /* --roots-only: not the positions on the way to the roots */
	CliOpt table[8]; /* the options above: a fragment for a command's table */
} CliPlan;

/* The defaults (plan_options_init, no roots: the start position) and the
 * table (CLI_GROUP(c->table)); c must stay where it is. */
void cli_plan_init(CliPlan *c);

/*
 * The roots the options give, appended to r (nothing when none were asked
 * for: the start position). db is read for --roots-from-games, and unless
 * quiet a line on stderr says how many games reached the ply. With paths
 * (may be NULL), the way to the roots, to be thought first (docs/bookgen.md,
 * "The way to the roots"): the positions the games pass through on their way
 * to roots from the games, those of roots given as move lists. 0, or -1 after
 * a message.
 */
JOSEKI_MUST_USE int cli_plan_roots(const CliPlan *c, RootList *r, BookDB *db, bool quiet,
                                   const char *cmd, RootList *paths);

/* "CMD: the selector restored from PATH in S s (NOTE)" on stderr, wrapped at
 * the console's width (ms: the restore's; note: the selector's, "" for none). */
void cli_snapshot_restored(const char *cmd, const char *path, double ms, const char *note);

/*
 * "CMD: PATH not used: WHY; the first search starts from scratch (WHAT TO DO)"
 * on stderr, for a selector snapshot that was not read back (note: why, as
 * the selector said it; its "selector snapshot ...: " is dropped, the path
 * being said first), as the run begins.
 */
void cli_snapshot_unused(const char *cmd, const char *path, const char *note);

#endif
