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
 *
 * Every input is read as a stream under bounds far above any real game
 * record (docs/ingest.md, "Limits"), so that memory stays flat whatever its
 * size: a CSA or USI input is handed on in parts of about WALK_PART_BYTES,
 * cut between records; a KIF, KI2 or JKF input (one game) whole, up to
 * WALK_RECORD_MAX bytes. An input with a NUL byte, a line longer than
 * WALK_LINE_MAX or a record longer than WALK_RECORD_MAX is no game record:
 * its reading stops there (the parts before it were handed on), with an error
 * naming the line.
 */
#ifndef INGEST_WALK_H
#define INGEST_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "shogi/errors.h"

#include "ingest/kifu.h"

/* Bytes in a line (not JKF's, whose JSON may be one line). */
#define WALK_LINE_MAX (1 << 20)
/* Bytes in a record: a CSA record, a KIF, KI2 or JKF file (one game). */
#define WALK_RECORD_MAX (16 << 20)
/* A CSA or USI input goes on in parts of at least this many bytes (all but
 * its last), each cut just after a record. */
#define WALK_PART_BYTES (256 << 10)
/* The kinds of what a walk leaves out, in WalkStats' order. */
enum { WALK_NOT_GAME, WALK_SPECIAL, WALK_LOOP, WALK_BROKEN, WALK_HIDDEN, WALK_KINDS };
#define WALK_NAMES_KEPT 3 /* names kept of each kind left out */
#define WALK_NAME_MAX 256 /* bytes of a kept name, NUL included (longer: cut, "...") */

typedef struct {
	uint64_t files;   /* regular files looked at: in the directories walked, and those named */
	uint64_t entries; /* archive entries read */
	uint64_t not_games; /* files and archive entries not named as game files */
	uint64_t special;   /* devices, sockets, FIFOs, kernel file systems in directories */
	uint64_t loops;     /* links to a directory already entered */
	uint64_t broken;    /* links that lead nowhere (or an entry that cannot be looked at) */
	uint64_t hidden;    /* dot files and directories */
	uint64_t refused;   /* inputs whose reading stopped at a limit (a NUL byte, a line or
	                       record too long): not game records */
	/* The first names left out of each kind (WALK_NOT_GAME...), in walk
	 * order, so that a command can say which ("" past the count). */
	char left_out[WALK_KINDS][WALK_NAMES_KEPT][WALK_NAME_MAX];
} WalkStats;

/* All that was left out. */
uint64_t walk_skipped(const WalkStats *st);

/*
 * "3 files not named as game files (d/README, d/notes.txt, d/x.pdf), 1
 * special file (d/fifo), 5 hidden files (d/.a, d/.b, d/.c, ...)" (only the
 * non-zero kinds, each with its first names) into out (cap bytes); "" when
 * nothing was left out. Returns the length.
 */
size_t walk_skipped_text(const WalkStats *st, char *out, size_t cap);

/*
 * One game file, or one part of it, or why it could not be read (all of it
 * or from some line on), as handed to WalkOptions.file. name, buf and error
 * are malloc'd and become the callee's.
 */
typedef struct {
	char *name;        /* "dir/x.kif", "a.7z:2026/x.csa", "-" */
	char *buf;         /* its bytes (NULL with error) */
	size_t len;        /* bytes in buf */
	int line;          /* buf's first line in the input; with error the line it names, or 0 */
	KifuFormat format; /* the input's format, sniffed from its start (with buf) */
	char *error;       /* a message (buf NULL): the input, or the rest of it, not read */
	int errnum;        /* with error: the errno, ENOMEM when memory ran out */
} WalkFile;

/*
 * Called with each game file, in order (a CSA or USI input as its parts, in
 * order, then perhaps an error about the rest). A non-zero return stops the
 * walk and is returned by walk_inputs.
 */
typedef int (*walk_file_fn)(void *ctx, WalkFile *f);

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
JOSEKI_MUST_USE int walk_inputs(const char *const *inputs, size_t n, const WalkOptions *opt,
                                WalkStats *st);

/* True when name ends as a game file's does (.csa .kif .kifu .ki2 .ki2u .jkf .usi .sfen). */
bool walk_game_name(const char *name);

/*
 * The cutter of one input into parts (walk_cut.c): the bounds above, checked
 * as the bytes arrive. The caller keeps the input's unread part in a buffer
 * that starts where the last part ended, and asks walk_cut_next after each
 * read; exposed for the tests and the fuzz target.
 */
typedef struct {
	const char *name;   /* the input's (the format sniff's tie-break) */
	int format;         /* KifuFormat once sniffed; -1 before */
	size_t scanned;     /* bytes of the buffer looked at */
	size_t line_len;    /* bytes of the line under way, its end not counted */
	size_t cut;         /* end of the buffer's last whole record (0: none yet) */
	uint64_t lines;     /* line ends before scanned */
	uint64_t cut_lines; /* line ends before cut */
	uint64_t first;     /* the buffer's first line in the input (1-based) */
	int sep;            /* CSA: the line under way is "/" so far (1), more (2), empty (0) */
	bool cr;            /* the last byte looked at was a CR */
	bool failed;        /* err holds why the input stops at line err_line */
	uint64_t err_line;
	char err[160];
	int part_line; /* the first line of the part walk_cut_next returned last */
} WalkCut;

enum { WALK_CUT_MORE = 0, WALK_CUT_PART = 1, WALK_CUT_END = 2, WALK_CUT_ERROR = -1 };

void walk_cut_init(WalkCut *c, const char *name);
/*
 * Looks at buf[0..len) (the input from where the last part ended; eof: the
 * input ends there). WALK_CUT_PART: buf[0..*part) is the next part (its first
 * line in c->part_line, the input's format in c->format), and the caller
 * drops those bytes from buf before the next call; WALK_CUT_MORE: read more;
 * WALK_CUT_END: all was handed on; WALK_CUT_ERROR: the input is no game
 * record from line c->err_line on (c->err says why; the parts before it were
 * returned first) and is not read further.
 */
int walk_cut_next(WalkCut *c, const char *buf, size_t len, bool eof, size_t *part);

/* libarchive's reason for a's last error, never NULL (libarchive gives
 * none for some truncated archives: "(null)" was said). */
struct archive;
const char *walk_archive_why(struct archive *a);

#endif
