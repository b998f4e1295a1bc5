/* joseki import BOOK FILE.db [--json] [--quiet] */
#include <stdio.h>
#include <string.h>

#include "ingest/import.h"
#include "tools/cli_ingest.h"
#include "tools/commands.h"

int cmd_import(int argc, char **argv)
{
	const char *book = NULL, *file = NULL;
	bool json = false, quiet = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = true;
		else if (argv[i][0] == '-' && argv[i][1]) {
			joseki_error("import: unknown option '%s'\nusage: joseki import BOOK "
			             "FILE.db [--json]",
			             argv[i]);
			return 2;
		} else if (!book)
			book = argv[i];
		else if (!file)
			file = argv[i];
		else {
			joseki_error("import: one FILE.db at a time\nusage: joseki import BOOK "
			             "FILE.db [--json]");
			return 2;
		}
	}
	if (!book || !file) {
		joseki_error("import: usage: joseki import BOOK FILE.db [--json]");
		return 2;
	}
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	if (bookdb_open(&db, book, NULL, err) < 0) {
		joseki_error("import: %s", err);
		return 1;
	}
	IngestStats st;
	int rc = import_db2016(&st, db, file, cli_progress_wanted(quiet));
	cli_ingest_report(&st, json, "import");
	ingest_stats_free(&st);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("import: %s: %s", file, ingest_strerror(rc));
		return 1;
	}
	return 0;
}
