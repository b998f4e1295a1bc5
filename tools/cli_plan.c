/* tools/cli_plan.c — the growth options of think, serve --work and cycle. */
#include "tools/cli_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli_engines.h"
#include "tools/commands.h"

void cli_plan_init(CliPlan *c)
{
	memset(c, 0, sizeof *c);
	plan_options_init(&c->plan);
	c->ply = 8;
}

int cli_plan_arg(CliPlan *c, int argc, char **argv, int *i, const char *cmd)
{
	const char *a = argv[*i];
	if (strcmp(a, "--roots") && strcmp(a, "--roots-from-games") && strcmp(a, "--roots-ply") &&
	    strcmp(a, "--select") && strcmp(a, "--window") && strcmp(a, "--book-side"))
		return 0;
	if (*i + 1 >= argc) {
		joseki_error("%s: %s wants a value", cmd, a);
		return -1;
	}
	const char *v = argv[++*i];
	if (!strcmp(a, "--roots")) {
		c->roots_file = v;
	} else if (!strcmp(a, "--roots-from-games")) {
		if (cli_positive(&c->from_games, v, cmd, a) < 0) return -1;
	} else if (!strcmp(a, "--roots-ply")) {
		char *end;
		unsigned long k = strtoul(v, &end, 10);
		if (!*v || *end || v[0] == '-' || k > 1000) {
			joseki_error("%s: --roots-ply wants plies 0..1000, not '%s'", cmd, v);
			return -1;
		}
		c->ply = k;
		c->ply_set = true;
	} else if (!strcmp(a, "--select")) {
		if (!strcmp(v, "cover"))
			c->plan.mode = PLAN_COVER;
		else if (!strcmp(v, "pv"))
			c->plan.mode = PLAN_PV;
		else {
			joseki_error("%s: --select wants cover or pv, not '%s'", cmd, v);
			return -1;
		}
	} else if (!strcmp(a, "--window")) {
		char *end;
		long w = strtol(v, &end, 10);
		if (!*v || *end || w < 0 || w > 10000) {
			joseki_error("%s: --window wants centipawns 0..10000, not '%s'", cmd, v);
			return -1;
		}
		c->plan.window = (int)w;
	} else {
		if (!strcmp(v, "both"))
			c->plan.book_side = PLAN_SIDE_BOTH;
		else if (!strcmp(v, "black"))
			c->plan.book_side = PLAN_SIDE_BLACK;
		else if (!strcmp(v, "white"))
			c->plan.book_side = PLAN_SIDE_WHITE;
		else {
			joseki_error("%s: --book-side wants black, white or both, not '%s'", cmd,
			             v);
			return -1;
		}
	}
	return 1;
}

int cli_plan_check(const CliPlan *c, const char *cmd)
{
	if (c->roots_file && c->from_games) {
		joseki_error("%s: give --roots or --roots-from-games, not both", cmd);
		return -1;
	}
	if (c->ply_set && !c->from_games) {
		joseki_error("%s: --roots-ply goes with --roots-from-games", cmd);
		return -1;
	}
	return 0;
}

int cli_plan_roots(const CliPlan *c, RootList *r, BookDB *db, bool quiet, const char *cmd)
{
	char err[ROOTS_ERRLEN];
	if (c->roots_file) {
		if (roots_from_lines(r, c->roots_file, err) < 0) {
			joseki_error("%s: --roots: %s", cmd, err);
			return -1;
		}
		if (r->n == 0) {
			joseki_error("%s: --roots: %s holds no position", cmd, c->roots_file);
			return -1;
		}
		return 0;
	}
	if (!c->from_games) return 0;
	size_t before = r->n, nshort, nlegacy;
	if (roots_from_games(r, db, c->from_games, (int)c->ply, &nshort, &nlegacy, err) < 0) {
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
	if (!quiet)
		fprintf(
		    stderr,
		    "%s: %zu roots at ply %llu, reached by %.0f games (%zu games shorter, %zu kept "
		    "without their moves)\n",
		    cmd, r->n - before, (unsigned long long)c->ply, games, nshort, nlegacy);
	return 0;
}
