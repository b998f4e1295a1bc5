/*
 * ingest/walk.h — the inputs a command names, walked into game files: the
 * one walker behind ingest (and fetch), replay, think --from-kifu, extend,
 * prune and match --openings (docs/ingest.md, "Inputs").
 *
 * An input is a file (read whatever its name; a FIFO from <(...) too), a
 * directory (walked recursively, entries in byte order of their names, dot
 * files left out), an archive (.7z .zip .tar .tar.gz .tgz .tar.xz .txz
 * .tar.bz2 .tbz2, streamed through libarchive, never extracted), or "-" for
 * standard input. In directories and archives, files named as game files
 * (.csa .kif .kifu .ki2 .ki2u .jkf .usi .sfen) and archives are read;
 * symbolic links are followed, to files and to directories, except a link to
 * a directory the walk has already entered (a loop, or the same directory
 * twice); devices, sockets and FIFOs are not read (a read could block
 * forever), nor kernel file systems (/proc, /sys, cgroup ...). Everything
 * left out is counted (WalkStats), so that a command can say so.
 */
#ifndef INGEST_WALK_H
#define INGEST_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint64_t files;   /* regular files looked at: in the directories walked, and those named */
	uint64_t entries; /* archive entries read */
	uint64_t not_games; /* files and archive entries not named as game files */
	uint64_t special;   /* devices, sockets, FIFOs, kernel file systems in directories */
	uint64_t loops;     /* links to a directory already entered */
	uint64_t broken;    /* links that lead nowhere (or an entry that cannot be looked at) */
	uint64_t hidden;    /* dot files and directories */
} WalkStats;

/* All that was left out. */
uint64_t walk_skipped(const WalkStats *st);

/*
 * "3 not game files, 1 special file, 2 links to directories already walked,
 * 1 broken link, 4 hidden" (only the non-zero ones) into out (cap bytes);
 * "" when nothing was left out. Returns the length.
 */
size_t walk_skipped_text(const WalkStats *st, char *out, size_t cap);

/*
 * Called with each game file, in order: its name ("dir/x.kif",
 * "a.7z:2026/x.csa", "-"), and its bytes (buf, len) or, when it could not be
 * read, error (a message; buf NULL; errnum the errno, ENOMEM when memory ran
 * out). name, buf and error are malloc'd and become the callee's. A non-zero
 * return stops the walk and is returned by walk_inputs.
 */
typedef int (*walk_file_fn)(void *ctx, char *name, char *buf, size_t len, char *error, int errnum);

typedef struct {
	walk_file_fn file;
	/* Called before a directory is read (progress), may be NULL; non-zero stops. */
	int (*dir)(void *ctx, const char *path, const WalkStats *st);
	void *ctx;
} WalkOptions;

/*
 * Walks inputs[0..n) in order. Returns 0 when every input was walked (files
 * that could not be read were handed to opt->file with their error), or the
 * first non-zero value a callback returned. st (may be NULL) counts.
 */
int walk_inputs(const char *const *inputs, size_t n, const WalkOptions *opt, WalkStats *st);

/* True when name ends as a game file's does (.csa .kif .kifu .ki2 .ki2u .jkf .usi .sfen). */
bool walk_game_name(const char *name);

#endif
