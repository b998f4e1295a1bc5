/* joseki ingest BOOK INPUT... [filters] [--jobs N] [--json] [--quiet]
 *
 * Exit 0 when every input was read (a record that could not be read is listed
 * in the errors, not a failure), 1 when the book could not be written or an
 * input was refused as no game records (docs/ingest.md, "Limits"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "ingest/ingest.h"
#include "tools/cli_ingest.h"
#include "tools/commands.h"

int cmd_ingest(int argc, char **argv)
{
	CliIngest ci;
	cli_ingest_init(&ci);
	IngestOptions *opt = &ci.opt;
	bool json = false, quiet = false;
	const char *book = NULL;
	CliArgs inputs = {0};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (made if there is none)"),
	    CLI_REST("INPUT", &inputs, 1,
	             "game records (CSA, KIF, KI2, JKF, USI lines), directories, archives, -"),
	    CLI_GROUP(ci.table),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"ingest", opts, "docs/ingest.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (cli_progress_wanted(quiet)) opt->progress = cli_ingest_progress;
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	bool fresh = cli_book_fresh(book);
	int rc = bookdb_open(&db, book, NULL, err);
	if (rc < 0) {
		joseki_error("ingest: %s", err);
		return 1;
	}
	IngestStats st;
	rc = ingest_run(&st, db, inputs.v, inputs.n, opt);
	int printed = cli_ingest_report(&st, json, "ingest");
	/* A missing or unreadable input is a failure (a script must notice);
	 * malformed records in a readable one are reported and skipped. An
	 * input that is no game records (a NUL byte, an endless line: ingest
	 * /dev/zero) fails the run too, the games of the other inputs kept. */
	int failed = rc < 0 || printed < 0 || st.unreadable || st.walk.refused;
	/* A book this run made with nothing in it goes again when the run fails
	 * (a mistyped input left an empty book behind). */
	bool discard =
	    failed && fresh && !st.positions_added && !st.games_ingested && !st.games_completed;
	/* The store's own words when the book refused a write ("no space left ..."). */
	const char *why = ingest_strerror(rc);
	for (size_t i = 0; i < st.nerrors; i++)
		if (!strcmp(st.errors[i].input, "book")) why = st.errors[i].message;
	if (rc < 0)
		joseki_error("ingest: %s: %s (batches committed before the failure are kept)", book,
		             why);
	else if (st.unreadable)
		joseki_error(
		    "ingest: %llu input%s could not be read (said above); %s%s",
		    (unsigned long long)st.unreadable, st.unreadable == 1 ? "" : "s",
		    discard ? "nothing read, no book made at " : "what could be read is in ", book);
	/* Every game seen before: nothing added, whatever the options now (a
	 * larger --max-ply does not deepen them). */
	if (rc >= 0 && !json && !quiet && st.duplicates && !st.games_ingested &&
	    !st.games_completed)
		fprintf(stderr,
		        "ingest: the %llu game%s read %s in %s already (by %s id%s) and change%s "
		        "nothing, whatever --max-ply or the filters now (docs/ingest.md, "
		        "\"Identity and re-ingesting\")\n",
		        (unsigned long long)st.duplicates, st.duplicates == 1 ? "" : "s",
		        st.duplicates == 1 ? "is" : "are", book,
		        st.duplicates == 1 ? "its" : "their", st.duplicates == 1 ? "" : "s",
		        st.duplicates == 1 ? "s" : "");
	/* Games whose records stop: not a problem of the input (a live game, a
	 * download broken off), but their results are missing from the book. */
	if (rc >= 0 && !json && !quiet && st.games_unended)
		fprintf(stderr,
		        "ingest: %llu game%s ingested without a result: %s record%s without an "
		        "end (cut short, or a game still being played); ingesting the whole "
		        "record later adds the result (docs/ingest.md, \"Identity and "
		        "re-ingesting\")\n",
		        (unsigned long long)st.games_unended, st.games_unended == 1 ? "" : "s",
		        st.games_unended == 1 ? "its" : "their",
		        st.games_unended == 1 ? " stops" : "s stop");
	ingest_stats_free(&st);
	bookdb_free(db);
	if (discard) bookdb_remove_new(book);
	return failed ? 1 : 0;
}
