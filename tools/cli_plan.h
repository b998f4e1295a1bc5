/*
 * tools/cli_plan.h — the options that say what a book is grown from and how,
 * shared by think, serve --work and cycle (bookgen/plan.h, docs/bookgen.md
 * "Growth policy"):
 *
 *   --roots FILE                 one position a line (# comments), weight 1 each
 *   --roots-from-games N         the N positions most reached in the ingested games
 *   --roots-ply K                ... after K plies (default 8)
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

#define CLI_PLAN_USAGE                                                                             \
	"[--roots FILE | --roots-from-games N [--roots-ply K]] [--select cover|pv] "               \
	"[--window CP] [--book-side black|white|both]"

typedef struct {
	PlanOptions plan;
	const char *roots_file;
	uint64_t from_games; /* 0: off */
	uint64_t ply;
	bool ply_set;
} CliPlan;

/* The defaults (plan_options_init, no roots: the start position). */
void cli_plan_init(CliPlan *c);

/*
 * Takes argv[*i] (and its value, *i advanced) when it is one of the options
 * above. Returns 1 when taken, 0 when it is not one of them, -1 after a
 * "joseki: CMD: ..." message on stderr (bad usage).
 */
int cli_plan_arg(CliPlan *c, int argc, char **argv, int *i, const char *cmd);

/* After parsing: -1 after a message when the options contradict each other. */
int cli_plan_check(const CliPlan *c, const char *cmd);

/*
 * The roots the options give, appended to r (nothing when none were asked
 * for: the start position). db is read for --roots-from-games, and unless
 * quiet a line on stderr says how many games reached the ply. 0, or -1 after
 * a message.
 */
int cli_plan_roots(const CliPlan *c, RootList *r, BookDB *db, bool quiet, const char *cmd);

#endif
