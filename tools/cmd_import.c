/* joseki import BOOK FILE... [--prefer deeper|first|last] [--json] [--quiet]
 * (YaneuraOu DB2016 books and Apery binary books, ingest/import.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/import.h"
#include "tools/cli_ingest.h"
#include "tools/commands.h"

#define USAGE "usage: joseki import BOOK FILE.db|FILE.bin... [--prefer deeper|first|last] [--json]"

int cmd_import(int argc, char **argv)
{
	const char *book = NULL;
	const char **files = calloc((size_t)argc, sizeof *files);
	size_t nfiles = 0;
	bool json = false, quiet = false;
	BookPrefer prefer = BOOKDB_PREFER_DEEPER;
	if (!files) {
		joseki_error("import: out of memory");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = true;
		else if (!strcmp(argv[i], "--prefer") && i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(v, "deeper"))
				prefer = BOOKDB_PREFER_DEEPER;
			else if (!strcmp(v, "first"))
				prefer = BOOKDB_PREFER_FIRST;
			else if (!strcmp(v, "last"))
				prefer = BOOKDB_PREFER_LAST;
			else {
				joseki_error("import: --prefer takes deeper, first or last, not "
				             "'%s'\n" USAGE,
				             v);
				free(files);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			joseki_error("import: unknown option '%s'\n" USAGE, argv[i]);
			free(files);
			return 2;
		} else if (!book)
			book = argv[i];
		else
			files[nfiles++] = argv[i];
	}
	if (!book || !nfiles) {
		joseki_error("import: " USAGE);
		free(files);
		return 2;
	}
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, book, NULL, err) < 0) {
		joseki_error("import: %s", err);
		free(files);
		return 1;
	}
	/* The files in the order given: "first" and "last" refer to it. */
	IngestStats total;
	memset(&total, 0, sizeof total);
	int status = 0;
	for (size_t k = 0; k < nfiles; k++) {
		IngestStats st;
		int rc = import_book(&st, db, files[k], prefer, cli_progress_wanted(quiet));
		total.positions_added += st.positions_added;
		total.moves_added += st.moves_added;
		total.evals_added += st.evals_added;
		total.unreached += st.unreached;
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
			joseki_error("import: %s: %s", files[k], ingest_strerror(rc));
			status = 1;
			break;
		}
	}
	cli_ingest_report(&total, json, "import");
	ingest_stats_free(&total);
	bookdb_free(db);
	free(files);
	return status;
}
