/*
 * ingest/kifu_priv.h — what the format readers behind ingest/kifu.h share:
 * the reader's state, its lines and messages, and the builders of a record.
 * csa.c, kif.c (KIF and KI2), jkf.c and usilist.c each read one format;
 * kifu.c sniffs the format and dispatches. Not for use outside ingest/.
 */
#ifndef INGEST_KIFU_PRIV_H
#define INGEST_KIFU_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "ingest/kifu.h"
#include "shogi/errmsg.h"

struct KifuReader {
	KifuFormat format;
	const unsigned char *buf; /* the input (for KIF/KI2: decoded to UTF-8) */
	size_t len;
	size_t off;  /* start of the next line */
	int line;    /* number of the line last returned */
	void *owned; /* the file's bytes when opened with kifu_reader_open_file */
	char *text;  /* KIF/KI2 decoded to UTF-8, when the input was not (owned) */
	char *name;
	char err[KIFU_ERRLEN];
	size_t err_what; /* where err's message starts, after "input:line: " */
	int err_line;
	bool done;      /* KIF, KI2, JKF: the file's one record was returned */
	Position *pos;  /* where the text formats resolve their moves (allocated on first use) */
	bool want_tree; /* KIF, KI2: read the variations and comments (kifu_reader_want_tree) */
};

/* Returns the next line (without its end: LF, CR LF or CR) or false at the end. */
bool kifu_next_line(KifuReader *r, const unsigned char **s, size_t *n);

/* Sets the reader's message "name:line: ..." and returns KIFU_EPARSE. The
 * message is escaped whole (errmsg_escape): whatever the input holds, it
 * shows as text. A token quoted in it is escaped by the caller too
 * (errmsg_escape into a char q[40]), which bounds it and shows a NUL. */
int kifu_fail(KifuReader *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The reader's position (allocated once); NULL when out of memory. */
Position *kifu_reader_pos(KifuReader *r);

/* The formats: each returns what kifu_reader_next returns. */
int csa_next(KifuReader *r, KifuRecord **out);
int kif_next(KifuReader *r, KifuRecord **out); /* KIF and KI2 */
int jkf_next(KifuReader *r, KifuRecord **out);
int usi_next(KifuReader *r, KifuRecord **out);

/*
 * One USI game (text[0..len), no "<id>\t"): the record, its moves resolved
 * in pos. Returns 0, SHOGI_EPARSE for a malformed position part (err,
 * SHOGI_ERRLEN, says why) or KIFU_ENOMEM. An illegal move ends the moves
 * (rec->illegal).
 */
int usi_line_record(KifuRecord **out, Position *pos, const char *text, size_t len, int line,
                    char *err);

/* ---- building records --------------------------------------------------- */

/* A new empty record of format f (end_time_ms -1); NULL when out of memory. */
KifuRecord *kifu_record_new(KifuFormat f);

/* *dst = a copy of s[0..n) (the old one freed). 0 or KIFU_ENOMEM. */
int kifu_set_str(char **dst, const void *s, size_t n);

/* Appends a new zeroed move (time -1) to rec; *cap is the moves' capacity.
 * NULL when out of memory. */
KifuMove *kifu_add_move(KifuRecord *rec, size_t *cap);

/*
 * Appends the legal move m of pos (its CSA token, line, time) to rec and
 * makes it in pos. Returns 0, KIFU_ENOMEM, or 1 when pos holds no more
 * moves (rec->illegal then says the game is too long).
 */
int kifu_play(KifuRecord *rec, size_t *cap, Position *pos, Move m, int line, int time_ms);

/* rec->illegal = the message (escaped whole, as kifu_fail's), rec->illegal_line =
 * line. 0 or KIFU_ENOMEM. */
int kifu_set_illegal(KifuRecord *rec, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A move line that does not read as a move after moves: the record damaged
 * or cut short there (bad bytes, a download broken off), its moves before it
 * the game, which has no result (rec->cut), not a move its player lost by.
 * rec->illegal = the message fmt makes (the move as written), then ": a
 * record damaged or cut short, its game without a result". 0 or KIFU_ENOMEM. */
int kifu_set_cut(KifuRecord *rec, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The SFEN of a handicap by its KIF name (平手, 香落ち, 右香落ち, 角落ち,
 * 飛車落ち, 飛香落ち, 二枚落ち ... 十枚落ち) or its JKF preset (HIRATE, KY,
 * KY_R, KA, HI, HIKY, 2, 3, 4, 5, 5_L, 6, 7_L, 7_R, 8, 10); NULL if unknown.
 * The giver (上手) is White and moves first.
 */
const char *kifu_handicap_sfen(const char *name);

/* The record's start position from pos (board, hands, side). */
void kifu_set_start(KifuRecord *rec, const Position *pos);

#endif
