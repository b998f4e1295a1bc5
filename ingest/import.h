/*
 * ingest/import.h — a YaneuraOu DB2016 book or an Apery binary book into the
 * book store.
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
#include "shogi/errors.h"

/*
 * Progress of an import: phase "positions" with the positions done so far
 * (every 65536th; total 0, not known ahead), then one "done" with the count
 * at the end. NULL: quiet.
 */
typedef void (*ImportProgressFn)(void *ctx, const char *phase, uint64_t done, uint64_t total);

/*
 * Imports path into db (opened read-write). Counts go into stats
 * (positions_added, moves_added, evals_added, errors; games_* stay 0).
 * Returns 0, INGEST_EIO when the file cannot be read ("cannot read: <why>"
 * in the errors) or nothing in it is a book's (no header and no record: "not
 * a YaneuraOu/Apery book: ...", its lines' warnings dropped), INGEST_ENOMEM
 * or INGEST_EBOOK.
 */
JOSEKI_MUST_USE int import_db2016(IngestStats *stats, BookDB *db, const char *path,
                                  BookPrefer prefer, ImportProgressFn progress, void *progress_ctx);

/*
 * Imports an Apery binary book (shogi/apery.h) into db the same way: each
 * position gets the file's moves with their scores as engine evaluations
 * (depth 0; Apery's counts are its games without their results, so they are
 * not kept). Apery's keys name no position: the positions are found by
 * walking from the start position along the book's own moves (breadth
 * first, so each position's ply is the shortest line's); entries no such
 * line reaches are counted in stats->unreached and said once in the errors,
 * an entry whose move is not legal where its key leads is listed and left
 * out. Returns 0, INGEST_EIO when the file cannot be read or is not a whole
 * number of 16-byte entries, INGEST_ENOMEM or INGEST_EBOOK.
 */
JOSEKI_MUST_USE int import_apery(IngestStats *stats, BookDB *db, const char *path,
                                 BookPrefer prefer, ImportProgressFn progress, void *progress_ctx);

/* True when path is an Apery book: named *.bin, or binary and a whole number
 * of 16-byte entries (a DB2016 book is text). */
bool import_is_apery(const char *path);

/* import_apery or import_db2016, as import_is_apery says; a path that is not
 * there or is a directory is INGEST_EIO first, said in stats' errors as
 * ingest says it ("cannot read: No such file or directory", "is a
 * directory"). */
JOSEKI_MUST_USE int import_book(IngestStats *stats, BookDB *db, const char *path, BookPrefer prefer,
                                ImportProgressFn progress, void *progress_ctx);

#endif
