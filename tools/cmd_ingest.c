/* joseki ingest BOOK INPUT... [filters] [--jobs N] [--json] [--quiet] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "ingest/ingest.h"
#include "tools/cli_ingest.h"
#include "tools/commands.h"

#define USAGE                                                                                      \
	"usage: joseki ingest BOOK INPUT... [--min-rating R] [--max-ply N] [--since DATE]\n"       \
	"       [--until DATE] [--event GLOB] [--time-control GLOB] [--mate-clamp CP]\n"           \
	"       [--mate-plies N] [--jobs N] [--json] [--quiet]"

int cmd_ingest(int argc, char **argv)
{
	IngestOptions opt;
	ingest_options_init(&opt);
	bool json = false, quiet = false;
	const char *book = NULL;
	const char **inputs = calloc((size_t)argc, sizeof *inputs);
	size_t ninputs = 0;
	if (!inputs) return 1;
	for (int i = 1; i < argc; i++) {
		int r = cli_ingest_option(&opt, argc, argv, &i, "ingest");
		if (r == 2) {
			free(inputs);
			return 2;
		}
		if (r == 1) continue;
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = true;
		else if (argv[i][0] == '-' && argv[i][1]) {
			joseki_error("ingest: unknown option '%s'\n" USAGE, argv[i]);
			free(inputs);
			return 2;
		} else if (!book)
			book = argv[i];
		else
			inputs[ninputs++] = argv[i];
	}
	if (!book || !ninputs) {
		joseki_error("ingest: %s\n" USAGE, book ? "no INPUT given" : "no BOOK given");
		free(inputs);
		return 2;
	}
	opt.progress = cli_progress_wanted(quiet);
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	int rc = bookdb_open(&db, book, NULL, err);
	if (rc < 0) {
		joseki_error("ingest: %s", err);
		free(inputs);
		return 1;
	}
	IngestStats st;
	rc = ingest_run(&st, db, inputs, ninputs, &opt);
	cli_ingest_report(&st, json, "ingest");
	/* The store's own words when the book refused a write ("no space left ..."). */
	const char *why = ingest_strerror(rc);
	for (size_t i = 0; i < st.nerrors; i++)
		if (!strcmp(st.errors[i].input, "book")) why = st.errors[i].message;
	if (rc < 0)
		joseki_error("ingest: %s: %s (batches committed before the failure are kept)", book,
		             why);
	ingest_stats_free(&st);
	bookdb_free(db);
	free(inputs);
	if (rc < 0) return 1;
	return 0;
}
