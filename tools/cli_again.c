/* tools/cli_again.c — re-analysis options (cli_again.h). */
#include "tools/cli_again.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"

void cli_again_init(CliAgain *a)
{
	static const int SOURCES[] = {BOOKDB_SOURCE_IMPORT, BOOKDB_SOURCE_ENGINE};
	*a = (CliAgain){.criteria = {.source = -1}};
	const CliOpt t[] = {
	    CLI_FLAG("--reanalyse", &a->on,
	             "think again the thought positions under the roots that the criteria "
	             "below name (every one without them); the deeper analysis stays"),
	    CLI_NUM("--below-depth", &a->criteria.below_depth, 1, 255, "D",
	            "... whose analysis is shallower than D (default: any depth)",
	            .needs = "--reanalyse"),
	    CLI_NUM("--below-nodes", &a->criteria.below_nodes, 1, CLI_NOMAX, "N",
	            "... whose analysis searched fewer than N nodes (default: any)",
	            .needs = "--reanalyse"),
	    CLI_ENUM("--source", &a->criteria.source, "imported|thought", SOURCES,
	             "... whose analysis came from an imported book, or this book's engines "
	             "(default: either)",
	             .needs = "--reanalyse"),
	    CLI_TABLE_END,
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) a->table[i] = t[i];
}

/* The criteria as the user gave them ("--below-depth 10 --source imported";
 * none: "every thought position"). (The campaign's name in the book,
 * think_again_text, names every criterion and must not change.) */
static void given_text(const ThinkAgainCriteria *c, char *out, size_t n)
{
	int len = 0;
	out[0] = 0;
	if (c->below_depth > 0)
		len += snprintf(out + len, n - (size_t)len, " --below-depth %d", c->below_depth);
	if (c->below_nodes > 0 && (size_t)len < n)
		len += snprintf(out + len, n - (size_t)len, " --below-nodes %llu",
		                (unsigned long long)c->below_nodes);
	if (c->source >= 0 && (size_t)len < n)
		snprintf(out + len, n - (size_t)len, " --source %s",
		         c->source == BOOKDB_SOURCE_IMPORT ? "imported" : "thought");
	if (!out[0]) snprintf(out, n, " every thought position");
	memmove(out, out + 1, strlen(out)); /* the leading space */
}

int cli_again_prepare(CliAgain *a, BookDB *db, const RootList *roots, bool quiet, const char *cmd)
{
	char err[THINK_AGAIN_ERRLEN], text[THINK_AGAIN_TEXT];
	size_t reached;
	given_text(&a->criteria, text, sizeof text);
	if (think_again_campaign(&a->campaign, db, &a->criteria, err) < 0 ||
	    think_again_list(&a->keys, &a->n, &reached, db, &a->criteria, a->campaign,
	                     (const char *const *)roots->specs, (int)roots->n, err) < 0) {
		joseki_error("%s: --reanalyse: %s", cmd, err);
		return -1;
	}
	if (!quiet)
		fprintf(
		    stderr,
		    "%s: re-analysis (%s): %zu positions to think again of %zu the roots reach\n",
		    cmd, text, a->n, reached);
	return 0;
}

void cli_again_free(CliAgain *a)
{
	free(a->keys);
	a->keys = NULL;
	a->n = 0;
}
