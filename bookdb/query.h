/*
 * bookdb/query.h — the book's answer for one position, as every front end shows
 * it: `joseki query` (text and --json), `joseki usi --book` and the HTTP server
 * all order moves and build the JSON object here, so they cannot disagree.
 *
 * Order, best first: moves the book side avoids (BOOKDB_MOVE_AVOIDED, joseki
 * prune) after all others (unless asked: the _ex forms), then moves with a
 * value (bookdb_move_valued: the minimax value when minimax has run on the
 * record, else the move's own analysis) before those without, by value; then
 * by games played; ties by move number so the order is stable. A game
 * comment is never a value here. A pawn, bishop or rook left unpromoted
 * where its promotion has a value too (bookdb_move_declined) goes after the
 * moves the book plays, before avoided ones: the book plays the promotion,
 * whatever noise ranked above it. Then a preferred move (BOOKDB_MOVE_PREFERRED,
 * joseki prefer) goes first when it has a value at most its window below the
 * first move's (of several, the best): the book plays it.
 */
#ifndef BOOKDB_QUERY_H
#define BOOKDB_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#include "bookdb/bookdb.h"
#include "bookdb/marks.h"
#include "shogi/position.h"
#include "shogi/errors.h"

/* True if move a ranks before move b in rec's order. */
bool bookdb_move_better(const BookRecord *rec, const BookMove *a, const BookMove *b);

/*
 * Whether move m of rec has a value the book plays on: its minimax value once
 * minimax has run on the record (BOOKDB_REC_MINIMAX; BOOKMM_NOVALUE is none),
 * else its own analysis (bookdb_move_analysed: never a game comment).
 */
bool bookdb_move_valued(const BookRecord *rec, const BookMove *m);
/* That value (the minimax value, else the analysis's eval); meaningful only
 * when bookdb_move_valued. */
int bookdb_move_value(const BookRecord *rec, const BookMove *m);

/* Whether move m of rec leaves a pawn, bishop or rook unpromoted where the
 * record's promoting move has a value (bookdb_move_valued) and is not
 * avoided, and m is not preferred by hand (joseki prefer): the book does
 * not play it, nor count it in the position's value (move_declined_promotion). */
bool bookdb_move_declined(const BookRecord *rec, const BookMove *m);
/* Whether move m (stored in rec or not: a transposition) leaves a pawn,
 * bishop or rook unpromoted where rec's promoting move has a value and is
 * not avoided; a preference on m is the caller's to honour
 * (bookdb_move_declined does). */
bool bookdb_declines(const BookRecord *rec, Move m);

/* The position's value for its side to move: the best value of rec's valued
 * moves not avoided nor declined (minimax's value once it has run on the record, else the
 * analysis's best); a preference does not change it (what the book gives up
 * by its choice is at most the window). False, *value untouched, when no
 * such move has a value. */
bool bookdb_position_value(int *value, const BookRecord *rec);

/*
 * Where the value of move m of rec comes from, or NULL when it has none:
 * "thought" (the move's own engine analysis: think, a worker), "imported" (an
 * imported engine book's), "game" (a game record's comment, only when a
 * minimax run asked for them: --game-evals), "blend" (an evaluation blended
 * with the move's win rate), "minimax" (backed up from the position the move
 * leads to; m->dist plies to the leaf), "games" (the move's game results, by
 * a games-only minimax run: --games-book).
 */
const char *bookdb_value_source(const BookRecord *rec, const BookMove *m);

/*
 * The plies to mate m's value says, from the position before m: positive
 * when the side to move mates, negative when it is mated; 0 when m has no
 * value or it is no mate score. An engine's mate in n is ±(VALUE_MATE - n)
 * from the position it analysed; a minimax value carries it up dist plies
 * (the move into a mated position: VALUE_MATE, dist 1, mate in 1). A
 * perpetual check's ±VALUE_MATE, a line that repeats, is none.
 */
int bookdb_move_mate(const BookRecord *rec, const BookMove *m);
/* Why move m of rec has no value ("game comment only", "not analysed", "not
 * chosen from the games"), or NULL when it has one. */
const char *bookdb_unvalued_reason(const BookRecord *rec, const BookMove *m);

/*
 * The position a query names, as every front end reads it (`joseki query`, the
 * server's /v1/query and /v1/line): spec is what a USI `position` command takes
 * (startpos, sfen ..., a bare SFEN; moves ...). What no game reaches is
 * refused (pos_check_game: a board without both kings, more pieces of a kind
 * than a set has, the side not to move in check; the position given and the
 * one its moves lead to): the rules core takes such boards (problems,
 * perft), but a book holds game positions only, so a query for one is a
 * mistake, not "not in book".
 * Returns 0, or SHOGI_EPARSE / SHOGI_EILLEGAL / SHOGI_ETOOLONG with the message
 * in err (SHOGI_ERRLEN bytes); pos is then undefined.
 */
JOSEKI_MUST_USE int bookdb_query_position(Position *pos, const char *spec, char *err);

/* Sorts rec's moves best first. */
void bookdb_moves_sort(BookRecord *rec);

/* Whether a preferred move valued pref is played over the best, valued best:
 * at most window below it. */
static inline bool bookdb_prefer_fits(int pref, int best, unsigned window)
{
	return pref >= best - (int)window;
}

/*
 * Reads pos's record from txn into rec with its moves sorted best first.
 * Returns 1 when the position is in the book, 0 when it is not (rec then holds
 * no moves and no flags), or a negative BOOKDB_* error: ECORRUPT also for a
 * record that is not sound as joseki check has it (another position's, or a
 * move not legal in pos: bookdb/check.h).
 */
JOSEKI_MUST_USE int bookdb_query(BookRecord *rec, BookTxn *txn, const Position *pos);
/* As bookdb_query; with_avoided ranks avoided moves as any other
 * (`query --with-avoided`). */
JOSEKI_MUST_USE int bookdb_query_ex(BookRecord *rec, BookTxn *txn, const Position *pos,
                                    bool with_avoided);

/* The first legal move for pos of rec as bookdb_query left it (the book's
 * best), never an avoided one nor one without a value, or MOVE_NONE (the
 * engine then thinks): what `joseki usi --book` and `match` play. */
Move bookdb_best_move(const BookRecord *rec, const Position *pos);

/*
 * The book's line from pos: its move (bookdb_best_move) position after
 * position, up to max (at most BOOKDB_LINE_MAX) moves, until a position is
 * not in the book, has no such move, or repeats one of the line's. Fills
 * moves[0..n) and, when n > 0, *value: the first move's value from pos's side
 * to move. pos is left at the line's end; rec is scratch. Returns n, or a
 * negative BOOKDB_* code (reading the book failed).
 */
#define BOOKDB_LINE_MAX 64
JOSEKI_MUST_USE int bookdb_line(Move *moves, int max, int *value, BookRecord *rec, BookTxn *txn,
                                Position *pos);

/*
 * The first position of the book's line from pos (bookdb_best_move at each
 * ply: after minimax, its values) that is not thought, within plies: 1 with
 * it in *pos, 0 when the line is analysed that deep (or ends in a thought
 * position without a book move), or a negative BOOKDB_* code. rec is
 * scratch. What `think` and the coordinator keep analysed from the positions
 * on the way to the roots (docs/bookgen.md, "The way to the roots").
 */
JOSEKI_MUST_USE int bookdb_line_leaf(BookRecord *rec, BookTxn *txn, int plies, Position *pos);

/*
 * The `query --json` text for pos and its record as bookdb_query left it
 * (in_book its result): one compact JSON object and a newline, with sfen, key,
 * in_book, bestmove/value when the first move has a value, thought_depth, ply,
 * legal_moves (how many legal moves the position has), moves [...] (each with
 * value and value_source, or value null and why: unvalued; eval for an
 * analysis, game_eval for a game comment); layout in docs/bookdb.md ("query"). Written directly (no
 * JSON library objects: the HTTP server answers with it at tens of thousands a second). Returns a
 * malloc'd NUL-terminated string (its length without the NUL in *len when len is not NULL), or NULL
 * when out of memory.
 */
char *bookdb_query_json(const BookRecord *rec, bool in_book, const Position *pos, size_t *len);
/* As bookdb_query_json; bestmove is left out when the first move is avoided,
 * unless with_avoided (the record then sorted by bookdb_query_ex alike).
 * Avoided moves carry "avoided": true, preferred ones "preferred": true, and
 * a marked move its mark from marks[0..nmarks) (bookdb_marks_load; may be
 * NULL): "mark": {"kind", "source", "window" (prefer), "time", "note" (when
 * known)}. */
char *bookdb_query_json_ex(const BookRecord *rec, bool in_book, const Position *pos, size_t *len,
                           bool with_avoided, const BookMark *marks, int nmarks);

#endif
