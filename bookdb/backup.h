/*
 * bookdb/backup.h — a consistent copy of a live book (joseki backup,
 * docs/bookdb.md "Backup").
 *
 * LMDB copies an environment from one read snapshot (mdb_env_copyfd2), so
 * writers (think, serve --work, minimax) go on while the copy is made and the
 * copy is the book as of one commit, never half a batch. The copy is written
 * under a temporary name beside the target (DIR.partial), its data file and
 * the directory fsync'ed, then checked with joseki check's checks
 * (bookdb/check.h), and only then renamed to DIR (the parent directory
 * fsync'ed). So a backup killed at any moment leaves the source as it was and
 * no DIR; a DIR that exists is whole, on disk and checked. A stale
 * DIR.partial of a killed run is removed by the next backup to the same DIR.
 *
 * What is copied: the LMDB data file (records, games, the change log, the
 * work and minimax state). Not copied: the minimax's kept graph (the next
 * incremental minimax over the copy runs over the whole book), the tokens
 * file, the lock files.
 */
#ifndef BOOKDB_BACKUP_H
#define BOOKDB_BACKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "bookdb/check.h"
#include "shogi/errors.h"

typedef struct {
	uint64_t bytes;        /* the copy's data file */
	uint64_t source_bytes; /* the source's data file when the copy started */
	BookCheckStats check;  /* the copy's check */
} BookBackupStats;

/* Progress: phase "copy" (done bytes written of about total), "records"
 * (a compacting copy: done records of total), then "check" (done records
 * checked of total); called from the calling thread, a few times a second
 * (the check every 16,384 records). */
typedef void (*BookBackupProgressFn)(void *ctx, const char *phase, uint64_t done, uint64_t total);

/*
 * Copies db (opened read-only or read-write) to the new directory dir
 * (BOOKDB_EINVAL when it exists), compacted (no free pages) when compact.
 * Returns 0, or a negative BOOKDB_* code with a message in err
 * (BOOKDB_ERRLEN bytes); BOOKDB_ECORRUPT when the copy failed its check (st
 * says what was found; no DIR is made). The source is only read.
 */
JOSEKI_MUST_USE int bookdb_backup(BookBackupStats *st, BookDB *db, const char *dir, bool compact,
                                  BookBackupProgressFn progress, void *ctx, char *err);

#endif
