/*
 * shogi/bigmem.h — the large arrays of a whole-book pass (a graph, a key
 * index, their work arrays) within the pass's budget (`--memory SIZE`).
 *
 * While the arrays of the process fit in the budget they are anonymous
 * memory, as malloc's would be. An array that would take the process's
 * arrays past it is made in a file instead: an unlinked file in the directory
 * configured (the book's), mapped shared, so that its pages are the kernel's
 * page cache, written out and read back as memory requires, as LMDB's map
 * holds the book. Nothing else changes for the code that uses them (the same
 * pointers, the same values), and a process killed at any moment leaves no
 * file behind (O_TMPFILE; where the file system cannot, named and unlinked at
 * once).
 *
 * Arrays under BIGMEM_SMALL bytes are malloc's, and count in no budget. The
 * arrays are zeroed when made. Any pointer may be given to bigmem_free and
 * bigmem_realloc: one of malloc's is freed and grown as malloc's (moved to a
 * mapping when it grows past BIGMEM_SMALL), so that a structure can be freed
 * the same way whichever way its arrays were made. Thread-safe.
 */
#ifndef SHOGI_BIGMEM_H
#define SHOGI_BIGMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shogi/errors.h"
#include "shogi/grow.h"

#define BIGMEM_SMALL (1u << 20) /* bytes: smaller arrays are malloc's */

/*
 * Sets the process's budget for its large arrays (bytes; 0: no limit, every
 * array anonymous) and where arrays past it go (NULL: $TMPDIR or /tmp).
 * Arrays already made stay where they are. A quarter of the budget is left
 * for everything else a pass holds (its buffers, LMDB's own).
 */
void bigmem_configure(uint64_t budget, const char *dir);

/* The budget bigmem_configure set (0: none). */
uint64_t bigmem_budget(void);

/* A zeroed array of bytes bytes; NULL with errno on failure. */
JOSEKI_MUST_USE void *bigmem_alloc(size_t bytes);

/* Grows or shrinks p (NULL: bigmem_alloc) to bytes, its contents kept (the
 * new tail's are unspecified, as realloc's); NULL with errno (p untouched) on
 * failure. An anonymous array that would pass the budget moves to a file. */
JOSEKI_MUST_USE void *bigmem_realloc(void *p, size_t bytes);

/* array_grow (shogi/grow.h) with bigmem_realloc. */
JOSEKI_MUST_USE static inline int bigmem_grow(void **arr, size_t *cap, size_t need, size_t elem,
                                              size_t min_cap)
{
	return array_grow_by(bigmem_realloc, arr, cap, need, elem, min_cap);
}

/* Frees p (bigmem's, or malloc's: then free(p)); NULL does nothing. */
void bigmem_free(void *p);

typedef struct {
	uint64_t anon_bytes, file_bytes; /* held now */
	uint64_t file_peak;              /* the most held in files at once */
	uint64_t files;                  /* arrays ever made in a file */
} BigmemStats;

void bigmem_stats(BigmemStats *out);

/* Why the last array that was to be a file could not be made or grown
 * ("DIR: No space left on device"), in buf: 1, or 0 when none failed. Such an
 * array is made (or goes on) in memory instead, past the budget: a command
 * says so (the disk ran out, not the memory). */
int bigmem_failure(char *buf, size_t len);

/* dir, or where temporary files go without one: $TMPDIR, else /tmp. */
const char *bigmem_temp_dir(const char *dir);

/* A new unlinked temporary file in dir (NULL: $TMPDIR or /tmp), open for
 * reading and writing: a descriptor, or -1 with errno. */
int bigmem_temp_fd(const char *dir);

/* A pass's temporary files read and written whole at an offset (EINTR
 * retried): bigmem_pread_full reads up to len bytes, the count (short only
 * at the file's end) or -1 with errno; bigmem_pwrite_full writes len bytes,
 * 0 or -1 with errno (EIO when the file takes none). */
ssize_t bigmem_pread_full(int fd, void *buf, size_t len, uint64_t off);
int bigmem_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* The directory a file at path is in ("." for a bare name, "/" for one at
 * the root), in out (cap bytes): where a pass puts its temporary files
 * beside its output. */
void bigmem_dir_of(char *out, size_t cap, const char *path);

/* What would stop a pass writing a new file at path at its end (beside it,
 * then renamed into place), found before the pass: 0, EISDIR (path is a
 * directory), or why its directory cannot take a new file (ENOENT, ENOTDIR,
 * EACCES...). Anything else at path (a file, a device) is the caller's to
 * judge. */
int bigmem_output_blocked(const char *path);
/* Why directory dir cannot take a new file (ENOENT, ENOTDIR, EACCES...), or
 * 0 when it can: where a pass is to write its temporary files. */
int bigmem_dir_blocked(const char *dir);

#endif
