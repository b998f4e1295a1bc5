/*
 * ingest/import.h — a YaneuraOu DB2016 book into the book store.
 *
 * Every record's position gets the record's moves with their values as
 * engine evaluations (source INGEST_SOURCE_IMPORT, the book's depth), and is
 * marked thought, its think depth the deepest of its moves'. A position the
 * book already holds is merged by joseki merge's rule (bookdb/merge.h): with
 * BOOKDB_PREFER_DEEPER the deeper analysis wins whole (a tie goes to the file,
 * the newer), FIRST keeps an analysis already there, LAST takes the file's;
 * game statistics and game-comment evaluations stay. Values are clamped to ±VALUE_MATE. An illegal
 * or malformed line is reported with its line and skipped. Importing the same file twice changes
 * nothing the second time.
 */
#ifndef INGEST_IMPORT_H
#define INGEST_IMPORT_H

#include "bookdb/bookdb.h"
#include "bookdb/merge.h"
#include "ingest/ingest.h"

/*
 * Imports path into db (opened read-write). Counts go into stats
 * (positions_added, moves_added, evals_added, errors; games_* stay 0).
 * Returns 0, INGEST_EIO when the file cannot be read, or INGEST_EBOOK.
 */
int import_db2016(IngestStats *stats, BookDB *db, const char *path, BookPrefer prefer,
                  bool progress);

#endif
