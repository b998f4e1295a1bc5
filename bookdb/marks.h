/*
 * bookdb/marks.h — marks on book moves: a move the book side avoids or
 * prefers, with where the mark comes from (a hand mark, `joseki avoid` and
 * `joseki prefer`, or `joseki prune`), when it was made and a note.
 *
 * What the book plays on is in the record (bookdb/record.h): the move flags
 * BOOKDB_MOVE_AVOIDED and BOOKDB_MOVE_PREFERRED with the preference's window,
 * which every reader of records honours (query's order and best move, minimax,
 * export, the selector). The `marks` database keeps the rest, one entry a
 * marked move, written in the same transaction as the record:
 *
 *   key    the position's 16-byte key (key_to_bytes) and the move, u16
 *          big-endian (so a position's marks are one key range)
 *   value  u8 kind (1 avoid, 2 prefer; bit 2: the mark added the move to the
 *          record; bit 3: an earlier mark follows), u8 source (0 hand, 1
 *          prune), i64 unix time little-endian, then the note (UTF-8, no NUL,
 *          at most BOOKDB_NOTE_MAX bytes) to the end; with bit 3 the note's
 *          length (u16 little-endian) comes before it, and after it the mark
 *          this one replaced: u8 its kind (bit 7: its entry follows), u16 its
 *          window, then its entry's value (the same layout) to the end
 *
 * So --undo restores what the mark found: the mark it replaced (with its
 * entry), or none and, when the mark added the move, no move. A record flag
 * without an entry is a mark made before the entries existed (prune's):
 * source prune, time and note unknown. Layout: docs/bookdb.md.
 */
#ifndef BOOKDB_MARKS_H
#define BOOKDB_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookdb/bookdb.h"
#include "shogi/errors.h"
#include "shogi/position.h"

typedef enum { BOOKDB_MARK_NONE = 0, BOOKDB_MARK_AVOID = 1, BOOKDB_MARK_PREFER = 2 } BookMarkKind;
typedef enum { BOOKDB_MARK_HAND = 0, BOOKDB_MARK_PRUNE = 1 } BookMarkSource;

#define BOOKDB_NOTE_MAX 1000
#define BOOKDB_MARK_KEY_LEN 18
/* Most marks one entry holds: the move's mark and those it replaced (an older
 * one is forgotten: its undo leaves the move unmarked). */
#define BOOKDB_MARK_LEVELS 8
/* A mark's message buffer (NUL included). */
#define BOOKDB_MARK_ERRLEN 512

typedef struct {
	Key key;
	Move move;
	uint8_t kind;    /* BookMarkKind */
	uint8_t source;  /* BookMarkSource */
	bool known;      /* an entry holds the time and the note (else a record flag alone) */
	int64_t time;    /* unix seconds */
	uint16_t window; /* a preference's window (from the record) */
	char note[BOOKDB_NOTE_MAX + 1];
	bool added; /* the mark added the move to the record (its undo takes it out) */
	/* The mark this one replaced, which its undo restores: its kind (0: none),
	 * its window and its entry's value (prior_len bytes; NULL: a record flag
	 * alone), pointing into the value decoded. */
	uint8_t prior_kind;
	uint16_t prior_window;
	const uint8_t *prior;
	size_t prior_len;
} BookMark;

/* "avoid", "prefer"; "hand", "prune". */
const char *bookdb_mark_kind_name(int kind);
const char *bookdb_mark_source_name(int source);

/* The entry's key for (key, move) into out. */
void bookdb_mark_key(uint8_t out[BOOKDB_MARK_KEY_LEN], Key key, Move move);

/*
 * Decodes one entry of the marks database (any bytes: 0, or BOOKDB_ECORRUPT
 * for a key that is not 18 bytes, an unknown kind, bit or source, a value
 * shorter than 10 bytes, a note longer than BOOKDB_NOTE_MAX or holding a NUL,
 * a replaced mark that does not decode, whose entry is not of its kind, or
 * more than BOOKDB_MARK_LEVELS marks). out's window is left 0 (the record
 * holds it); out->prior points into val.
 */
JOSEKI_MUST_USE int bookdb_mark_decode(BookMark *out, const void *key, size_t klen, const void *val,
                                       size_t vlen);

/* The value of m's entry into val (at least BOOKDB_MARK_VALUE_MAX bytes; the
 * note cut at BOOKDB_NOTE_MAX bytes; m->prior as it is, as decoded or cut by
 * bookdb_mark_set); returns its length. */
#define BOOKDB_MARK_VALUE_MAX (BOOKDB_MARK_LEVELS * (15 + BOOKDB_NOTE_MAX))
size_t bookdb_mark_encode(uint8_t *val, const BookMark *m);

/* The entry of (key, move): 1 with *out, 0 when there is none, or a negative
 * BOOKDB_ code. */
JOSEKI_MUST_USE int bookdb_mark_get(BookMark *out, BookTxn *txn, Key key, Move move);

/*
 * The marks of rec's moves (rec read for key, as the book holds it): every
 * move with BOOKDB_MOVE_AVOIDED or BOOKDB_MOVE_PREFERRED, with its entry when
 * there is one (else source prune, unknown), in rec's order; at most max.
 * Returns how many, or a negative BOOKDB_ code.
 */
JOSEKI_MUST_USE int bookdb_marks_of(BookMark *out, int max, BookTxn *txn, Key key,
                                    const BookRecord *rec);

/* As bookdb_marks_of into a malloc'd array (*out, NULL when there are none;
 * the caller frees it). Returns how many, or a negative BOOKDB_ code. */
JOSEKI_MUST_USE int bookdb_marks_load(BookMark **out, BookTxn *txn, Key key, const BookRecord *rec);

/*
 * Calls fn for every record of txn's book that carries a mark, in the order
 * of the keys, with the record (decoded whole: bookdb_record_position gives
 * its position) and its marks as bookdb_marks_of gives them. Stops at fn's
 * first nonzero return, which it returns; else 0, or a negative BOOKDB_ code.
 * A record that does not decode is passed over (check names it).
 */
typedef int (*BookMarksFn)(void *ctx, const BookRecord *rec, const BookMark *marks, int n);
JOSEKI_MUST_USE int bookdb_marks_each(BookTxn *txn, BookMarksFn fn, void *ctx);

/* When a mark was made, as query and `joseki marks` write it ("2026-11-29
 * 01:10 UTC") into out (at least BOOKDB_MARK_WHEN_MAX bytes). */
#define BOOKDB_MARK_WHEN_MAX 32
const char *bookdb_mark_when(int64_t time, char out[BOOKDB_MARK_WHEN_MAX]);

/*
 * Marks move of key's record (write transaction txn; rec is scratch space):
 * mark->kind avoid or prefer (the other kind's flag is cleared), its window
 * (prefer), source, time and note kept in the entry. A move the record lacks
 * is added to it (unvalued: bookdb_record_add_move) when it is legal in pos
 * (NULL: no move is added). The entry keeps what the mark found for
 * bookdb_mark_clear: the mark it replaces (another kind, or another source's),
 * or that it added the move; marking again with the same kind and source
 * changes the note and window only. *changed tells whether the record or the
 * entry changed.
 * Returns 0; BOOKDB_ENOTFOUND when key is not in the book, BOOKDB_EINVAL when
 * the move cannot be added (err, BOOKDB_MARK_ERRLEN, may be NULL, says which),
 * or another negative BOOKDB_ code (the transaction must then be aborted).
 */
JOSEKI_MUST_USE int bookdb_mark_set(BookTxn *txn, BookRecord *rec, Key key, const Position *pos,
                                    Move move, const BookMark *mark, bool *changed, char *err);

/*
 * Takes the mark of kind off move of key's record and restores what the mark
 * found: the mark it replaced with that one's entry, or no mark, no entry and,
 * when the mark added the move and nothing since gave it an analysis or
 * games, no move (the record's bytes as before the mark).
 * BOOKDB_ENOTFOUND (err says so) when the move carries no such mark; else as
 * bookdb_mark_set.
 */
JOSEKI_MUST_USE int bookdb_mark_clear(BookTxn *txn, BookRecord *rec, Key key, Move move,
                                      BookMarkKind kind, char *err);

/*
 * Clears, in one write transaction, every mark whose source is source (a
 * record flag without an entry counts as prune's), and entries of that source
 * whose record no longer carries the flag; hand marks stay when source is
 * prune and the other way round, forgetting the marks of source they
 * replaced (their undo no longer restores them). *cleared counts the moves unmarked. 0 or a
 * negative BOOKDB_ code with the message in err.
 */
JOSEKI_MUST_USE int bookdb_marks_clear_source(size_t *cleared, BookDB *db, BookMarkSource source,
                                              char *err);

#endif
