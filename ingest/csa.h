/*
 * ingest/csa.h — a reader for CSA game records (V1/V2/V2.1/V2.2/V3.0 and the
 * floodgate dialect; see docs/csa.md).
 *
 * The reader works on bytes, never on text: names and comments may be
 * Shift_JIS, EUC-JP or UTF-8 and are copied through unchanged; CR LF, LF and
 * a lone CR all end a line. It returns the records of an input one by one
 * (records are separated by a line holding only "/"), each as a CsaRecord:
 * the game information, the start position as a board, hands and side, the
 * moves as CSA tokens with their line, time and engine evaluation, and the
 * special ending. The reader checks the syntax of every statement; whether
 * the moves are legal is the caller's business (see ingest/replay.h).
 *
 * A record that cannot be read is reported (csa_reader_error names the input
 * and its line) and skipped: the next call goes on with the following record.
 */
#ifndef INGEST_CSA_H
#define INGEST_CSA_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shogi/position.h"

/* Error codes (negative). */
enum {
	CSA_OK = 0,
	CSA_EPARSE = ERR_CSA - 0,  /* a malformed record; csa_reader_error says where */
	CSA_ENOMEM = ERR_CSA - 1,  /* out of memory */
	CSA_EIO = ERR_CSA - 2,     /* the input file could not be read */
	CSA_EILLEGAL = ERR_CSA - 3 /* the start position is impossible (pos_set refused it) */
};
const char *csa_strerror(int code);

/* Length of the reader's error message (NUL included). */
#define CSA_ERRLEN 256

/* The special move that ends a record ("%TORYO" ...). */
typedef enum {
	CSA_END_NONE = 0, /* no % line: the record just stops */
	CSA_END_TORYO,
	CSA_END_CHUDAN,
	CSA_END_SENNICHITE,
	CSA_END_TIME_UP,
	CSA_END_ILLEGAL_MOVE,
	CSA_END_BLACK_ILLEGAL_ACTION, /* %+ILLEGAL_ACTION: White wins */
	CSA_END_WHITE_ILLEGAL_ACTION, /* %-ILLEGAL_ACTION: Black wins */
	CSA_END_JISHOGI,
	CSA_END_KACHI,
	CSA_END_HIKIWAKE,
	CSA_END_MATTA,
	CSA_END_TSUMI,
	CSA_END_FUZUMI,
	CSA_END_ERROR,
	CSA_END_OTHER /* a % word this reader does not know; see CsaRecord.special */
} CsaEnd;

/* "TORYO", "CHUDAN", ... (without the %); "" for CSA_END_NONE. */
const char *csa_end_name(CsaEnd end);

/* One move of a record. */
typedef struct {
	char token[8];   /* "+7776FU": always 7 characters and a NUL */
	int line;        /* 1-based line of the input it was read from */
	int time_ms;     /* from the T statement that follows it; -1 if none */
	bool has_eval;   /* a "'** <score> ..." comment follows the move */
	bool book;       /* "'** 0" with no PV: a book move, not an evaluation */
	int32_t eval;    /* raw score, from Black's point of view (clamped to int32) */
	uint32_t pv_off; /* the PV text after the score: CsaRecord.text + pv_off */
	uint32_t pv_len; /* its length (0 when there is none) */
} CsaMove;

/*
 * One game record. All strings are NUL-terminated bytes exactly as in the
 * input (NULL when the record does not have them). Owned by the caller, freed
 * with csa_record_free().
 */
typedef struct {
	int first_line;          /* line of the record's first statement */
	char *version;           /* "V2.2" ... */
	char *name[COLOR_NB];    /* N+ / N- (a leading ':' is dropped: "N+:name") */
	char *event;             /* $EVENT: */
	char *start_time;        /* $START_TIME: */
	char *time_limit;        /* $TIME_LIMIT: or V3.0's $TIME: */
	char *summary;           /* floodgate's "'summary:..." without the "'summary:" */
	bool has_rate[COLOR_NB]; /* 'black_rate: / 'white_rate: present */
	double rate[COLOR_NB];   /* the number after the line's last ':' */
	int max_moves;           /* "'Max_Moves:N" or V3.0's "$MAX_MOVES:N"; 0 when absent */

	/* Start position: a board, hands and the side to move. */
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	bool has_position; /* PI, P1..P9 or P+/P- lines were given */

	CsaMove *moves;
	size_t nmoves;

	CsaEnd end;       /* the first % statement; CSA_END_NONE if none */
	char special[24]; /* that statement's word, e.g. "TORYO" ("" if none) */
	int end_line;     /* its line (0 if none) */
	int end_time_ms;  /* the T that follows it; -1 if none */

	char *text; /* storage for the PVs (see CsaMove.pv_off) */
	size_t text_len;
} CsaRecord;

void csa_record_free(CsaRecord *rec);

/* The PV text of move i (pointer into rec->text; not NUL-terminated), length in *len. */
const char *csa_move_pv(const CsaRecord *rec, size_t i, size_t *len);

/*
 * Sets pos to the record's start position (move number 1). Returns 0, or
 * CSA_EILLEGAL with a message in err (SHOGI_ERRLEN bytes, may be NULL) when
 * the position cannot occur.
 */
int csa_record_position(Position *pos, const CsaRecord *rec, char *err);

/*
 * The move limit that applies to the record: its 'Max_Moves comment, else
 * 256 for a floodgate record ($EVENT starting "wdoor+floodgate"), else 0 (none).
 */
int csa_record_max_moves(const CsaRecord *rec);

typedef struct CsaReader CsaReader;

/*
 * Opens a reader over buf[0..len). The bytes are not copied: buf must stay
 * valid and unchanged until csa_reader_free(). name is the input's name used
 * in error messages (copied). Returns 0 or CSA_ENOMEM.
 */
int csa_reader_open_mem(CsaReader **out, const void *buf, size_t len, const char *name);

/*
 * Reads the whole stream f into a malloc'd buffer (*out, the caller's to
 * free; *len bytes). Returns 0, CSA_EIO (errno tells why) or CSA_ENOMEM.
 */
int csa_read_all(void **out, size_t *len, FILE *f);

/* Reads a whole file and opens a reader over it (the reader owns the bytes).
 * Returns 0, CSA_EIO (errno tells why) or CSA_ENOMEM. */
int csa_reader_open_file(CsaReader **out, const char *path);

/*
 * Reads the next record into *out (the caller's, free with csa_record_free).
 * Returns 1 with a record (as every iterator of the tree: bookdb_iter_next,
 * db2016_next), 0 when the input has no more records, CSA_EPARSE when the
 * record is malformed (*out is NULL, csa_reader_error() says
 * "input:line: what"; the next call continues after that record), or
 * CSA_ENOMEM.
 */
int csa_reader_next(CsaReader *r, CsaRecord **out);

/* The message of the last error ("" if none), valid until the next call. */
const char *csa_reader_error(const CsaReader *r);
/* The line of the last error (0 if none). */
int csa_reader_error_line(const CsaReader *r);
/* The input's name as given at open. */
const char *csa_reader_name(const CsaReader *r);

void csa_reader_free(CsaReader *r);

#endif
