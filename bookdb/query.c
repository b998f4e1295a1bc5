/* bookdb/query.c — the book's answer for one position (see query.h). */
#include "bookdb/query.h"
#include "bookdb/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/japanese.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

bool bookdb_move_valued(const BookRecord *rec, const BookMove *m)
{
	if (rec->flags & BOOKDB_REC_MINIMAX) return m->value != BOOKDB_NOVALUE;
	/* A games-only book's position without a move chosen from its games. */
	if (rec->flags & BOOKDB_REC_GAMES) return false;
	return bookdb_move_analysed(m);
}

int bookdb_move_value(const BookRecord *rec, const BookMove *m)
{
	return (rec->flags & BOOKDB_REC_MINIMAX) ? m->value : m->eval;
}

bool bookdb_move_declined(const BookRecord *rec, const BookMove *m)
{
	/* Preferred by hand (joseki prefer): the user's choice, a move as any. */
	return !(m->flags & BOOKDB_MOVE_PREFERRED) && bookdb_declines(rec, m->move);
}

bool bookdb_declines(const BookRecord *rec, Move m)
{
	Move twin = move_declined_promotion(rec->board, m);
	if (twin == MOVE_NONE) return false;
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == twin)
			return !(rec->moves[i].flags & BOOKDB_MOVE_AVOIDED) &&
			       bookdb_move_valued(rec, &rec->moves[i]);
	return false;
}

bool bookdb_position_value(int *value, const BookRecord *rec)
{
	bool known = false;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		if ((m->flags & BOOKDB_MOVE_AVOIDED) || !bookdb_move_valued(rec, m) ||
		    bookdb_move_declined(rec, m))
			continue;
		int v = bookdb_move_value(rec, m);
		if (!known || v > *value) *value = v;
		known = true;
	}
	return known;
}

const char *bookdb_value_source(const BookRecord *rec, const BookMove *m)
{
	if (!bookdb_move_valued(rec, m)) return NULL;
	if (!(rec->flags & BOOKDB_REC_MINIMAX))
		return m->source == BOOKDB_SOURCE_IMPORT ? "imported" : "thought";
	if (rec->flags & BOOKDB_REC_GAMES) return "games";
	if (m->dist > 0 || !(m->flags & BOOKDB_MOVE_EVAL)) return "minimax";
	int e = value_clamp(m->eval);
	if (m->value != e) return "blend";
	return m->source == BOOKDB_SOURCE_GAME     ? "game"
	       : m->source == BOOKDB_SOURCE_IMPORT ? "imported"
	                                           : "thought";
}

int bookdb_move_mate(const BookRecord *rec, const BookMove *m)
{
	if (!bookdb_move_valued(rec, m)) return 0;
	int v = bookdb_move_value(rec, m), a = v < 0 ? -v : v;
	if (a < VALUE_MATE_IN_MAX) return 0;
	int n = VALUE_MATE - a + ((rec->flags & BOOKDB_REC_MINIMAX) ? m->dist : 0);
	if (n > VALUE_MATE - VALUE_MATE_IN_MAX || n < 1) return 0;
	return v > 0 ? n : -n;
}

const char *bookdb_unvalued_reason(const BookRecord *rec, const BookMove *m)
{
	if (bookdb_move_valued(rec, m)) return NULL;
	if (rec->flags & BOOKDB_REC_GAMES) return "not chosen from the games";
	/* Its value was its child's, backed up: an avoided move is no edge. */
	if ((m->flags & BOOKDB_MOVE_AVOIDED) && (rec->flags & BOOKDB_REC_MINIMAX))
		return "avoided: no analysis of its own, and minimax backs none up through it";
	if (bookdb_move_commented(m)) return "game comment only";
	return "not analysed";
}

/* The declined promotions of a record (bookdb_move_declined), found before a
 * sort moves its moves about: few, nearly always none. */
typedef struct {
	int n;
	Move move[BOOKDB_MAX_MOVES];
} Declined;

static void declined_find(Declined *d, const BookRecord *rec)
{
	d->n = 0;
	if (!bookdb_record_has_promotion_pair(rec)) return;
	for (int i = 0; i < rec->nmoves; i++)
		if (bookdb_move_declined(rec, &rec->moves[i])) d->move[d->n++] = rec->moves[i].move;
}

static bool declined_has(const Declined *d, Move m)
{
	for (int i = 0; i < d->n; i++)
		if (d->move[i] == m) return true;
	return false;
}

/* da, db: whether a, b are declined promotions (bookdb_move_declined). */
static bool move_better(const BookRecord *rec, const BookMove *a, const BookMove *b,
                        bool with_avoided, bool da, bool db)
{
	bool aa = a->flags & BOOKDB_MOVE_AVOIDED, ab = b->flags & BOOKDB_MOVE_AVOIDED;
	if (!with_avoided && aa != ab) return ab;
	/* A declined promotion after the moves with a value (the book plays
	 * them), before those without. */
	bool va = bookdb_move_valued(rec, a), vb = bookdb_move_valued(rec, b);
	int ra = da ? 1 : va ? 0 : 2, rb = db ? 1 : vb ? 0 : 2;
	if (ra != rb) return ra < rb;
	/* A move with a value before one without, whatever the other knows. */
	if (va != vb) return va;
	if (va) {
		int x = bookdb_move_value(rec, a), y = bookdb_move_value(rec, b);
		if (x != y) return x > y;
	}
	if (a->count != b->count) return a->count > b->count;
	return a->move < b->move;
}

bool bookdb_move_better(const BookRecord *rec, const BookMove *a, const BookMove *b)
{
	return move_better(rec, a, b, false, bookdb_move_declined(rec, a),
	                   bookdb_move_declined(rec, b));
}

typedef struct {
	const BookRecord *rec;
	bool with_avoided;
	Declined declined;
} SortCtx;

static int cmp_moves(const void *pa, const void *pb, void *ctx)
{
	const SortCtx *c = ctx;
	const BookMove *a = pa, *b = pb;
	if (a->move == b->move) return 0;
	const Declined *d = &c->declined;
	bool da = d->n && declined_has(d, a->move), db = d->n && declined_has(d, b->move);
	return move_better(c->rec, a, b, c->with_avoided, da, db) ? -1 : 1;
}

/* The preferred move the book plays, moved first: the best-ranked preferred
 * move with a value within its window of the first move's (the best). */
static void apply_preference(BookRecord *rec, bool with_avoided)
{
	if (!(rec->flags & BOOKDB_REC_PREFER) || rec->nmoves < 2) return;
	const BookMove *best = &rec->moves[0];
	if (!bookdb_move_valued(rec, best) ||
	    (!with_avoided && (best->flags & BOOKDB_MOVE_AVOIDED)))
		return;
	int bv = bookdb_move_value(rec, best);
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		if (!(m->flags & BOOKDB_MOVE_PREFERRED) || !bookdb_move_valued(rec, m)) continue;
		if (!bookdb_prefer_fits(bookdb_move_value(rec, m), bv, m->prefer_window)) continue;
		BookMove p = *m;
		memmove(&rec->moves[1], &rec->moves[0], (size_t)i * sizeof rec->moves[0]);
		rec->moves[0] = p;
		return;
	}
}

static void moves_sort(BookRecord *rec, bool with_avoided)
{
	SortCtx c;
	c.rec = rec;
	c.with_avoided = with_avoided;
	/* The declined moves are found before the sort: it moves the moves. */
	declined_find(&c.declined, rec);
	qsort_r(rec->moves, rec->nmoves, sizeof rec->moves[0], cmp_moves, &c);
	apply_preference(rec, with_avoided);
}

int bookdb_query_position(Position *pos, const char *spec, char *err)
{
	int rc = position_parse(pos, spec, err);
	if (rc < 0) return rc;
	/* The set-up position too, when moves follow: they keep the kings and
	 * the pieces, but not a check on the side not to move. */
	int n = pos_history_len(pos);
	if (n > 0) {
		Move moves[POS_MAX_STATES];
		for (int i = 0; i < n; i++) moves[i] = pos->states[i + 1].move;
		for (int i = 0; i < n; i++) pos_undo_move(pos);
		char why[SHOGI_ERRLEN];
		if ((rc = pos_check_game(pos, why)) < 0)
			return errmsg_set(err, SHOGI_ERRLEN, rc,
			                  "the position before the moves: %s", why);
		/* A fourfold repetition ends the game (docs/shogi.md): no move
		 * follows it. */
		for (int i = 0; i < n; i++) {
			pos_do_move(pos, moves[i]);
			RepResult r = i + 1 < n ? pos_repetition(pos) : REP_NONE;
			if (r != REP_NONE)
				return errmsg_set(err, SHOGI_ERRLEN, SHOGI_EILLEGAL,
				                  "move %d: the game ended at move %d, the "
				                  "position's fourth occurrence "
				                  "(sennichite: %s)",
				                  i + 2, i + 1,
				                  r == REP_DRAW ? "a draw"
				                  : r == REP_BLACK_LOSES
				                      ? "Black's perpetual check, a loss"
				                      : "White's perpetual check, a loss");
		}
	}
	return pos_check_game(pos, err);
}

void bookdb_moves_sort(BookRecord *rec)
{
	moves_sort(rec, false);
}

int bookdb_query(BookRecord *rec, BookTxn *txn, const Position *pos)
{
	return bookdb_query_ex(rec, txn, pos, false);
}

int bookdb_query_ex(BookRecord *rec, BookTxn *txn, const Position *pos, bool with_avoided)
{
	int rc = bookdb_get(rec, txn, pos_key(pos));
	if (rc == BOOKDB_ENOTFOUND) {
		rec->nmoves = 0;
		rec->flags = 0;
		return 0;
	}
	if (rc < 0) return rc;
	/* Read as joseki check reads it: the record holds pos, and its moves
	 * are legal there (a damaged record is no book move). */
	Move legal[MOVEGEN_MAX];
	if (memcmp(rec->board, pos->board, sizeof rec->board) ||
	    rec->hand[BLACK] != pos->hand[BLACK] || rec->hand[WHITE] != pos->hand[WHITE] ||
	    rec->side != pos->side ||
	    bookdb_record_sound(rec, pos_key(pos), pos, legal, movegen_legal(pos, legal), NULL) < 0)
		return BOOKDB_ECORRUPT;
	moves_sort(rec, with_avoided);
	return 1;
}

Move bookdb_best_move(const BookRecord *rec, const Position *pos)
{
	for (int i = 0; i < rec->nmoves; i++)
		if (!(rec->moves[i].flags & BOOKDB_MOVE_AVOIDED) &&
		    bookdb_move_valued(rec, &rec->moves[i]) &&
		    pos_is_legal(pos, rec->moves[i].move))
			return rec->moves[i].move;
	return MOVE_NONE;
}

int bookdb_line(Move *moves, int max, int *value, BookRecord *rec, BookTxn *txn, Position *pos)
{
	Key seen[BOOKDB_LINE_MAX + 1];
	if (max > BOOKDB_LINE_MAX) max = BOOKDB_LINE_MAX;
	int n = 0;
	while (n < max) {
		seen[n] = pos_key(pos);
		int rc = bookdb_query(rec, txn, pos);
		if (rc < 0) return rc;
		Move m = rc ? bookdb_best_move(rec, pos) : MOVE_NONE;
		if (m == MOVE_NONE) break;
		if (n == 0)
			for (int i = 0; i < rec->nmoves; i++)
				if (rec->moves[i].move == m)
					*value = bookdb_move_value(rec, &rec->moves[i]);
		moves[n++] = m;
		pos_do_move(pos, m);
		bool again = false;
		for (int k = 0; k < n && !again; k++) again = key_equal(seen[k], pos_key(pos));
		if (again) break;
	}
	return n;
}

int bookdb_line_leaf(BookRecord *rec, BookTxn *txn, int plies, Position *pos)
{
	for (int ply = 0; ply < plies; ply++) {
		int rc = bookdb_query(rec, txn, pos);
		if (rc < 0) return rc;
		if (rc == 0 || !(rec->flags & BOOKDB_REC_THOUGHT)) return 1;
		Move m = bookdb_best_move(rec, pos);
		if (m == MOVE_NONE || pos_history_len(pos) >= POS_MAX_STATES - 1) return 0;
		pos_do_move(pos, m);
	}
	return 0;
}

/* A growing text buffer; oom is set (and nothing more written) when an
 * allocation fails. */
typedef struct {
	char *p;
	size_t n, cap;
	bool oom;
} Text;

static bool text_reserve(Text *t, size_t more)
{
	if (!t->oom && array_grow((void **)&t->p, &t->cap, t->n + more + 1, 1, 1024)) t->oom = true;
	return !t->oom;
}

static inline void text_raw(Text *t, const char *s, size_t len)
{
	if (t->n + len + 1 > t->cap && !text_reserve(t, len)) return;
	memcpy(t->p + t->n, s, len);
	t->n += len;
	t->p[t->n] = 0;
}

#define TEXT_LIT(t, s) text_raw((t), (s), sizeof(s) - 1)

/* A JSON string, escaped the way jansson's compact dump escapes ASCII; runs
 * of characters that need no escape are copied whole. */
static void text_string(Text *t, const char *s)
{
	TEXT_LIT(t, "\"");
	for (;;) {
		size_t run = 0;
		while (s[run] && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] >= 0x20)
			run++;
		text_raw(t, s, run);
		s += run;
		if (!*s) break;
		char esc[8];
		if (*s == '"' || *s == '\\') {
			esc[0] = '\\';
			esc[1] = *s;
			text_raw(t, esc, 2);
		} else {
			snprintf(esc, sizeof esc, "\\u%04X", (unsigned char)*s);
			text_raw(t, esc, 6);
		}
		s++;
	}
	TEXT_LIT(t, "\"");
}

static void text_int(Text *t, long long v)
{
	char buf[24], *e = buf + sizeof buf, *q = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do *--q = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0) *--q = '-';
	text_raw(t, q, (size_t)(e - q));
}

/* ,"key": then the value (the first member of an object passes first). */
static void text_key(Text *t, const char *key, bool first)
{
	if (!first) TEXT_LIT(t, ",");
	text_string(t, key);
	TEXT_LIT(t, ":");
}

char *bookdb_query_json(const BookRecord *rec, bool in_book, const Position *pos, size_t *len)
{
	return bookdb_query_json_ex(rec, in_book, pos, len, false, NULL, 0);
}

/* The mark of move m among marks, or NULL. */
static const BookMark *mark_of(const BookMark *marks, int n, Move m)
{
	for (int i = 0; i < n; i++)
		if (marks[i].move == m) return &marks[i];
	return NULL;
}

char *bookdb_query_json_ex(const BookRecord *rec, bool in_book, const Position *pos, size_t *len,
                           bool with_avoided, const BookMark *marks, int nmarks)
{
	char hex[KEY_HEX_LEN], sfen[SFEN_MAX], usi[USI_MOVE_MAX];
	key_to_hex(pos_key(pos), hex);
	sfen_write(pos, sfen, sizeof sfen);
	bool minimax = in_book && (rec->flags & BOOKDB_REC_MINIMAX);
	int nmoves = in_book ? rec->nmoves : 0;
	Text t = {0};
	text_reserve(&t, 512 + (size_t)nmoves * 160);
	TEXT_LIT(&t, "{");
	text_key(&t, "sfen", true);
	text_string(&t, sfen);
	text_key(&t, "key", false);
	text_string(&t, hex);
	text_key(&t, "in_book", false);
	if (in_book)
		TEXT_LIT(&t, "true");
	else
		TEXT_LIT(&t, "false");
	/* The first move the book side plays: avoided moves are sorted last,
	 * moves without a value after those with one. */
	if (nmoves > 0 && (with_avoided || !(rec->moves[0].flags & BOOKDB_MOVE_AVOIDED)) &&
	    bookdb_move_valued(rec, &rec->moves[0])) {
		usi_move_write(rec->moves[0].move, usi);
		text_key(&t, "bestmove", false);
		text_string(&t, usi);
		text_key(&t, "value", false);
		text_int(&t, bookdb_move_value(rec, &rec->moves[0]));
	}
	if (in_book && (rec->flags & BOOKDB_REC_THOUGHT)) {
		text_key(&t, "thought_depth", false);
		text_int(&t, rec->think_depth);
	}
	if (in_book) {
		text_key(&t, "ply", false);
		text_int(&t, rec->min_ply);
	}
	/* So that a client tells "not in book" from "no moves at all". */
	Move legal[MOVEGEN_MAX];
	int nlegal = movegen_legal(pos, legal);
	text_key(&t, "legal_moves", false);
	text_int(&t, nlegal);
	Square prev_to = pos_history_len(pos) ? move_to(pos_st(pos)->move) : SQ_NONE;
	text_key(&t, "moves", false);
	TEXT_LIT(&t, "[");
	for (int i = 0; i < nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		if (i) TEXT_LIT(&t, ",");
		usi_move_write(m->move, usi);
		TEXT_LIT(&t, "{");
		text_key(&t, "move", true);
		text_string(&t, usi);
		/* What the book plays on, and where it comes from; or null and
		 * why there is none. */
		text_key(&t, "value", false);
		const char *src = bookdb_value_source(rec, m);
		if (src) {
			text_int(&t, bookdb_move_value(rec, m));
			/* A mate score as a player reads it. */
			int mate = bookdb_move_mate(rec, m);
			if (mate) {
				text_key(&t, "mate", false);
				text_int(&t, mate);
			}
			if (minimax) {
				text_key(&t, "dist", false);
				text_int(&t, m->dist);
			}
			text_key(&t, "value_source", false);
			text_string(&t, src);
		} else {
			TEXT_LIT(&t, "null");
			text_key(&t, "unvalued", false);
			text_string(&t, bookdb_unvalued_reason(rec, m));
		}
		if (bookdb_move_analysed(m)) {
			text_key(&t, "eval", false);
			text_int(&t, m->eval);
			text_key(&t, "depth", false);
			text_int(&t, m->depth);
			text_key(&t, "nodes", false);
			text_int(&t, (long long)m->nodes);
			text_key(&t, "source", false);
			text_int(&t, m->source);
		} else if (bookdb_move_commented(m)) {
			/* Another program's opinion, shown as such. */
			text_key(&t, "game_eval", false);
			text_int(&t, m->eval);
		}
		text_key(&t, "count", false);
		text_int(&t, m->count);
		text_key(&t, "wins", false);
		text_int(&t, m->wins);
		text_key(&t, "draws", false);
		text_int(&t, m->draws);
		text_key(&t, "losses", false);
		text_int(&t, m->losses);
		if (m->flags & BOOKDB_MOVE_AVOIDED) {
			text_key(&t, "avoided", false);
			TEXT_LIT(&t, "true");
		}
		if (m->flags & BOOKDB_MOVE_PREFERRED) {
			text_key(&t, "preferred", false);
			TEXT_LIT(&t, "true");
		}
		if (bookdb_move_declined(rec, m)) {
			text_key(&t, "declined", false);
			TEXT_LIT(&t, "true");
		}
		const BookMark *mk = mark_of(marks, nmarks, m->move);
		if (mk) {
			text_key(&t, "mark", false);
			TEXT_LIT(&t, "{");
			text_key(&t, "kind", true);
			text_string(&t, bookdb_mark_kind_name(mk->kind));
			text_key(&t, "source", false);
			text_string(&t, bookdb_mark_source_name(mk->source));
			if (mk->kind == BOOKDB_MARK_PREFER) {
				text_key(&t, "window", false);
				text_int(&t, mk->window);
			}
			if (mk->known) {
				text_key(&t, "time", false);
				text_int(&t, mk->time);
				text_key(&t, "note", false);
				text_string(&t, mk->note);
			}
			TEXT_LIT(&t, "}");
		}
		/* As a player writes it (▲５八金右, △同　歩), for the explorer; last,
		 * so that the members before keep their places. */
		char name[JA_MOVE_MAX];
		if (ja_move_write(pos, m->move, prev_to, true, legal, nlegal, name)) {
			text_key(&t, "name", false);
			text_string(&t, name);
		}
		TEXT_LIT(&t, "}");
	}
	TEXT_LIT(&t, "]}\n");
	if (t.oom) {
		free(t.p);
		return NULL;
	}
	if (len) *len = t.n;
	return t.p;
}
