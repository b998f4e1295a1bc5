/*
 * ingest/import.h — a YaneuraOu DB2016 book into the book store.
 *
 * Every record's position gets the record's moves with their values as
 * engine evaluations (source INGEST_SOURCE_IMPORT, the book's depth), and is
 * marked thought. Values are clamped to ±VALUE_MATE. An illegal or malformed
 * line is reported with its line and skipped. Importing the same file twice
 * changes nothing the second time.
 */
#ifndef INGEST_IMPORT_H
#define INGEST_IMPORT_H

#include "bookdb/bookdb.h"
#include "ingest/ingest.h"

/*
 * Imports path into db (opened read-write). Counts go into stats
 * (positions_added, moves_added, evals_added, errors; games_* stay 0).
 * Returns 0, INGEST_EIO when the file cannot be read, or INGEST_EBOOK.
 */
int import_db2016(IngestStats *stats, BookDB *db, const char *path, bool progress);

#endif
