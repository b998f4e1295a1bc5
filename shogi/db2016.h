/*
 * shogi/db2016.h — reading and writing YaneuraOu's text book format
 * ("#YANEURAOU-DB2016 1.00", docs/minimax.md "joseki export").
 *
 * The reader streams a file record by record, so a book of millions of
 * positions never has to be held as text. What it accepts:
 *   - line 1 should be the header; a missing header is reported, not fatal;
 *   - lines starting "#" or "//" are comments; blank lines are ignored
 *     (YaneuraOu's makebook reader ignores them too), CRLF is accepted and
 *     trailing spaces and tabs are trimmed;
 *   - "sfen <board> <side> <hand> [<ply>]" starts a record;
 *   - every other line is a move of the current record:
 *     "<move> [<ponder|none> [value [depth [count]]]]", missing fields giving
 *     ponder none, value 0, depth 0, count 1. "none", "None" and "resign" as
 *     the move mean "no move" (returned as MOVE_NONE).
 * Bad input never stops the reader: a malformed SFEN skips that record (and
 * its move lines), an unparseable or illegal move line is skipped, a move
 * line before any record is skipped; each is reported through the warning
 * callback as "<file>:<line>: <what>, <what was done>". Only I/O and memory
 * failures are errors.
 *
 * A reader is not thread-safe; give each thread its own.
 */
#ifndef SHOGI_DB2016_H
#define SHOGI_DB2016_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shogi/position.h"

#define DB2016_HEADER "#YANEURAOU-DB2016 1.00"

/* Error codes (all negative). */
enum {
	DB2016_OK = 0,
	DB2016_EIO = ERR_DB2016 - 0,    /* the file could not be opened, read or written */
	DB2016_ENOMEM = ERR_DB2016 - 1, /* out of memory */
};
const char *db2016_strerror(int code);

/* Reader flags. */
enum {
	/* Skip move lines without parsing them (records then have no moves).
	 * For a second pass that only needs the positions and SFEN lines. */
	DB2016_SKIP_MOVES = 1u << 0,
	/* Do not parse the SFEN either: every "sfen" line is returned as a record
	 * (pos is NULL, no moves), bad ones included; ordinal tells them apart.
	 * For passes that only copy SFEN lines or parse them their own way. */
	DB2016_NO_POSITION = 1u << 1,
};

/* Receives one warning, already formatted as "<file>:<line>: <message>". */
typedef void (*Db2016WarnFn)(void *ctx, const char *msg);

typedef struct {
	Move move;      /* legal in the record's position; MOVE_NONE for none/resign */
	Move ponder;    /* syntax-checked only; MOVE_NONE for none or anything unreadable */
	int32_t value;  /* as written (mover's point of view), not clamped */
	int32_t depth;  /* as written */
	uint64_t count; /* as written; 1 when absent */
	long line;      /* line number in the file (1-based) */
} Db2016Move;

typedef struct {
	const char *sfen; /* the text after "sfen ", trimmed, NUL-terminated */
	size_t sfen_len;
	long line;               /* line number of the "sfen" line */
	size_t ordinal;          /* 0-based index among all "sfen" lines, bad ones included */
	const Position *pos;     /* the parsed position (side to move as written);
	                            NULL with DB2016_NO_POSITION */
	const Db2016Move *moves; /* the record's moves, in file order */
	size_t nmoves;
} Db2016Record;

typedef struct Db2016Reader Db2016Reader;

/*
 * Opens path for reading. name is used in messages (NULL: path). warn may be
 * NULL (warnings are then dropped). Returns 0 or DB2016_EIO/DB2016_ENOMEM;
 * *out is the caller's to free with db2016_close().
 */
JOSEKI_MUST_USE int db2016_open(Db2016Reader **out, const char *path, unsigned flags,
                                Db2016WarnFn warn, void *warn_ctx);
/* As db2016_open over an open stream (not closed by db2016_close). */
JOSEKI_MUST_USE int db2016_open_file(Db2016Reader **out, FILE *f, const char *name, unsigned flags,
                                     Db2016WarnFn warn, void *warn_ctx);

/*
 * Reads the next record into *rec; its pointers stay valid until the next
 * call or db2016_close(). Returns 1 (a record), 0 (end of file) or a
 * negative DB2016_E* code.
 */
JOSEKI_MUST_USE int db2016_next(Db2016Reader *r, Db2016Record *rec);

/* Counters since open: records returned, warnings issued, lines read. */
size_t db2016_records(const Db2016Reader *r);
/* True once line 1 was read and is the header (a range not starting at byte 0: false). */
bool db2016_has_header(const Db2016Reader *r);
size_t db2016_warnings(const Db2016Reader *r);
long db2016_lines(const Db2016Reader *r);

/* "sfen" lines read since open (or since the range start), bad ones included. */
size_t db2016_sfen_lines(const Db2016Reader *r);

/*
 * Splitting a file for readers working in parallel. db2016_split cuts path
 * into `parts` byte ranges of about equal size, each starting at a "sfen"
 * line (or at the end of the file): offsets[0..parts], offsets[0] = 0 and
 * offsets[parts] = the file size; first_lines[k] is the line number of the
 * line at offsets[k]. Returns 0, DB2016_EIO or DB2016_ENOMEM.
 *
 * db2016_set_range limits a reader just opened (on a seekable file) to the
 * records whose "sfen" line starts in [start, end) (UINT64_MAX: to the end), start
 * being a line start from db2016_split: reading starts there, with line
 * numbers from first_line and ordinals from first_ordinal. Concatenating the
 * records of consecutive ranges gives exactly the records of the whole file,
 * the warnings too (a range reports the lines after its last record up to
 * the next range's first "sfen" line). Returns 0 or DB2016_EIO.
 */
JOSEKI_MUST_USE int db2016_split(const char *path, int parts, uint64_t *offsets, long *first_lines);
JOSEKI_MUST_USE int db2016_set_range(Db2016Reader *r, uint64_t start, uint64_t end, long first_line,
                                     size_t first_ordinal);

/* Closes the reader (and its file if db2016_open opened it). Accepts NULL. */
void db2016_close(Db2016Reader *r);

/*
 * Writer helpers: each appends one line, '\n'-terminated, to buf (which must
 * have room for DB2016_LINE_MAX bytes) and returns the number of bytes
 * written. The value is from the mover's side.
 */
#define DB2016_LINE_MAX 256
/* The two lines a file starts with: the header and "# NOE:<positions>" (the
 * number of records, as YaneuraOu's makebook writes it). */
size_t db2016_format_header(char *buf, size_t positions);
/* A record's first line: "sfen <pos as SFEN, move number ply>". */
size_t db2016_format_sfen(char *buf, const Position *pos, int ply);
/* A move line: "<move> <ponder> <value> <depth>" (none for MOVE_NONE), and
 * the same with the count YaneuraOu's books carry after them. */
size_t db2016_format_move(char *buf, Move move, Move ponder, int value, int depth);
size_t db2016_format_move_count(char *buf, Move move, Move ponder, int value, int depth,
                                uint64_t count);

#endif
