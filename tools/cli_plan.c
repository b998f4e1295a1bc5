/* tools/cli_plan.c — the growth options of think, serve --work and cycle. */
#include "tools/cli_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"

void cli_plan_init(CliPlan *c)
{
	static const int MODES[] = {PLAN_COVER, PLAN_PV};
	static const int SIDES[] = {PLAN_SIDE_BLACK, PLAN_SIDE_WHITE, PLAN_SIDE_BOTH};
	memset(c, 0, sizeof *c);
	plan_options_init(&c->plan);
	c->ply = 8;
	const CliOpt t[] = {
	    CLI_STR("--roots", &c->roots_file, "FILE",
	            "start from these positions, one a line (default: the start position)",
	            .excl = "roots"),
	    CLI_NUM("--roots-from-games", &c->from_games, 1, CLI_NOMAX, "N",
	            "start from the N positions most reached in the ingested games (default: "
	            "--roots' default)",
	            .excl = "roots"),
	    CLI_NUM("--roots-ply", &c->ply, 0, 1000, "K", "... K plies into them (default 8)",
	            .needs = "--roots-from-games"),
	    CLI_FLAG("--roots-only", &c->roots_only,
	             "from the roots alone: not the positions on the way to them first (for "
	             "games that start at the roots)"),
	    CLI_ENUM("--select", &c->plan.mode, "cover|pv", MODES,
	             "cover the lines worth playing (default) or follow the best line"),
	    CLI_NUM("--window", &c->plan.window, 0, 10000, "CP",
	            "cover: the opponent's replies within CP of its best (default 30)"),
	    CLI_ENUM("--book-side", &c->plan.book_side, "black|white|both", SIDES,
	             "cover: the colour(s) the book is grown for (default both)"),
	    CLI_TABLE_END,
	};
	_Static_assert(sizeof t == sizeof c->table, "the table's size");
	memcpy(c->table, t, sizeof t);
}

int cli_plan_roots(const CliPlan *c, RootList *r, BookDB *db, bool quiet, const char *cmd,
                   RootList *paths)
{
	char err[ROOTS_ERRLEN];
	if (c->roots_only) paths = NULL;
	if (c->roots_file) {
		if (roots_from_lines(r, c->roots_file, err) < 0) {
			joseki_error("%s: --roots: %s", cmd, err);
			return -1;
		}
		if (r->n == 0) {
			joseki_error("%s: --roots: %s holds no position", cmd, c->roots_file);
			return -1;
		}
		if (paths && roots_paths_of_specs(paths, r, err) < 0) {
			joseki_error("%s: --roots: %s", cmd, err);
			return -1;
		}
		if (paths && paths->n && !quiet)
			fprintf(stderr, "%s: %zu roots; %zu positions on the way to them first\n",
			        cmd, r->n, paths->n);
		return 0;
	}
	if (!c->from_games) return 0;
	size_t before = r->n, nshort, nlegacy;
	if (roots_from_games(r, db, c->from_games, (int)c->ply, &nshort, &nlegacy, paths, err) <
	    0) {
		joseki_error("%s: --roots-from-games: %s", cmd, err);
		return -1;
	}
	double games = 0;
	for (size_t k = before; k < r->n; k++) games += r->weights[k];
	if (r->n == before) {
		joseki_error(
		    "%s: --roots-from-games: no ingested game reaches ply %llu (%zu shorter, "
		    "%zu kept without their moves)",
		    cmd, (unsigned long long)c->ply, nshort, nlegacy);
		return -1;
	}
	if (!quiet) {
		fprintf(
		    stderr,
		    "%s: %zu roots at ply %llu, reached by %.0f games (%zu games shorter, %zu kept "
		    "without their moves)",
		    cmd, r->n - before, (unsigned long long)c->ply, games, nshort, nlegacy);
		if (paths) fprintf(stderr, "; %zu positions on the way to them first", paths->n);
		fputc('\n', stderr);
	}
	return 0;
}

void cli_snapshot_restored(const char *cmd, const char *path, double ms, const char *note)
{
	char text[1024];
	snprintf(text, sizeof text, "%s: the selector restored from %s in %.2f s%s%s%s", cmd, path,
	         ms / 1000, note[0] ? " (" : "", note, note[0] ? ")" : "");
	cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
}

void cli_snapshot_unused(const char *cmd, const char *path, const char *note)
{
	/* "selector snapshot PATH: why" or "selector snapshot: why": the why. */
	const char *why = note;
	if (!strncmp(why, "selector snapshot", 17)) {
		const char *colon = strstr(why, ": ");
		if (colon) why = colon + 2;
	}
	/* Options that differ: the only case where the user can have it used. */
	bool options = strstr(why, "of a run with") || strstr(why, "kif bonus");
	char text[1024];
	snprintf(text, sizeof text,
	         "%s: %s not used: %s; the first search starts from scratch (%s)", cmd, path, why,
	         options ? "to use it, give the options of the run that wrote it: --roots or "
	                   "--roots-from-games, --select, --window, --book-side, --kif-bonus"
	                 : "no action needed: a start from scratch costs time once, and a snapshot "
	                   "is saved again at the stop");
	cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
}
