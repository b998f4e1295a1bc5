/* joseki import BOOK FILE... [--prefer deeper|first|last] [--json] [--quiet]
 * (YaneuraOu DB2016 books and Apery binary books, ingest/import.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/import.h"
#include "tools/cli_ingest.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

/* An ImportProgressFn: the positions so far on one overwritten line of
 * stderr, wiped at "done". */
static void on_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	(void)ctx;
	(void)total;
	if (!strcmp(phase, "done"))
		fprintf(stderr, "\r%*s\r", 40, "");
	else
		fprintf(stderr, "\r  import: %llu positions ", (unsigned long long)done);
}

int cmd_import(int argc, char **argv)
{
	static const int PREFER[] = {BOOKDB_PREFER_DEEPER, BOOKDB_PREFER_FIRST, BOOKDB_PREFER_LAST};
	const char *book = NULL;
	CliArgs files = {0};
	bool json = false, quiet = false;
	BookPrefer prefer = BOOKDB_PREFER_DEEPER;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (made if there is none)"),
	    CLI_REST("FILE", &files, 1, "YaneuraOu DB2016 books (.db), Apery binary books (.bin)"),
	    CLI_ENUM("--prefer", &prefer, "deeper|first|last", PREFER,
	             "where books disagree: the deeper evaluation (default), the first, the last"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"import", opts, "docs/ingest.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	bool fresh = cli_book_fresh(book);
	if (bookdb_open(&db, book, NULL, err) < 0) {
		joseki_error("import: %s", err);
		return 1;
	}
	/* The files in the order given: "first" and "last" refer to it. */
	IngestStats total;
	memset(&total, 0, sizeof total);
	int status = 0;
	size_t unread = files.n; /* the file that could not be read as a book, if any */
	for (size_t k = 0; k < files.n; k++) {
		IngestStats st;
		int rc = import_book(&st, db, files.v[k], prefer,
		                     cli_progress_wanted(quiet) ? on_progress : NULL, NULL);
		total.files += rc >= 0; /* the books imported */
		total.positions_added += st.positions_added;
		total.moves_added += st.moves_added;
		total.evals_added += st.evals_added;
		total.unreached += st.unreached;
		total.depth0 += st.depth0;
		total.errors_total += st.errors_total;
		total.seconds += st.seconds;
		for (size_t e = 0; e < st.nerrors; e++) {
			if (total.nerrors < INGEST_MAX_ERRORS)
				total.errors[total.nerrors++] = st.errors[e];
			else {
				free(st.errors[e].input);
				free(st.errors[e].message);
			}
		}
		if (rc < 0) {
			/* An unreadable file's cause is in its errors, said below. */
			if (rc == INGEST_EIO)
				unread = k;
			else
				joseki_error("import: %s: %s", files.v[k], ingest_strerror(rc));
			status = 1;
			break;
		}
	}
	if (cli_ingest_report(&total, json, "import") < 0) status = 1;
	/* A book this run made with nothing in it goes again (a mistyped name
	 * left an empty book behind). */
	bool discard = status && fresh && !total.positions_added && !total.moves_added;
	if (unread < files.n)
		joseki_error("import: stopped at %s (said above): %s%s%s", files.v[unread],
		             unread ? "the files before it are in " : "nothing imported",
		             unread ? book : "", discard ? "; no book made" : "");
	ingest_stats_free(&total);
	bookdb_free(db);
	if (discard) bookdb_remove_new(book);
	return status;
}
