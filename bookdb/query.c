/* bookdb/query.c — the book's answer for one position (see query.h). */
#include "bookdb/query.h"

#include <jansson.h>
#include <stdlib.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"

/* Minimax's value of a move without a value (minimax/bookmm.h BOOKMM_NOVALUE). */
#define NOVALUE INT16_MIN

const char *bookdb_value_source(const BookRecord *rec, const BookMove *m)
{
	if (!(rec->flags & BOOKDB_REC_MINIMAX) || m->value == NOVALUE) return NULL;
	if (m->dist > 0 || !(m->flags & BOOKDB_MOVE_EVAL)) return "minimax";
	int e = m->eval > VALUE_MATE ? VALUE_MATE : m->eval < -VALUE_MATE ? -VALUE_MATE : m->eval;
	if (m->value != e) return "blend";
	return m->source == BOOKDB_SOURCE_GAME ? "game" : "thought";
}

bool bookdb_move_better(const BookRecord *rec, const BookMove *a, const BookMove *b)
{
	if (rec->flags & BOOKDB_REC_MINIMAX) {
		if (a->value != b->value) return a->value > b->value;
	} else {
		bool ea = a->flags & BOOKDB_MOVE_EVAL, eb = b->flags & BOOKDB_MOVE_EVAL;
		if (ea != eb) return ea;
		if (ea && a->eval != b->eval) return a->eval > b->eval;
	}
	if (a->count != b->count) return a->count > b->count;
	return a->move < b->move;
}

static int cmp_moves(const void *pa, const void *pb, void *ctx)
{
	const BookRecord *rec = ctx;
	const BookMove *a = pa, *b = pb;
	if (a->move == b->move) return 0;
	return bookdb_move_better(rec, a, b) ? -1 : 1;
}

void bookdb_moves_sort(BookRecord *rec)
{
	qsort_r(rec->moves, rec->nmoves, sizeof rec->moves[0], cmp_moves, rec);
}

int bookdb_query(BookRecord *rec, BookTxn *txn, const Position *pos)
{
	int rc = bookdb_get(rec, txn, pos_key(pos));
	if (rc == BOOKDB_ENOTFOUND) {
		rec->nmoves = 0;
		rec->flags = 0;
		return 0;
	}
	if (rc < 0) return rc;
	bookdb_moves_sort(rec);
	return 1;
}

/* json_object_set_new that remembers a failed allocation in *ok. */
static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(o, k, v) < 0) *ok = false;
}

json_t *bookdb_query_json(const BookRecord *rec, bool in_book, const Position *pos)
{
	char hex[KEY_HEX_LEN], sfen[SFEN_MAX], usi[USI_MOVE_MAX];
	key_to_hex(pos_key(pos), hex);
	sfen_write(pos, sfen, sizeof sfen);
	bool ok = true, minimax = in_book && (rec->flags & BOOKDB_REC_MINIMAX);
	int nmoves = in_book ? rec->nmoves : 0;
	json_t *out = json_object(), *moves = json_array();
	if (!out || !moves) {
		json_decref(out);
		json_decref(moves);
		return NULL;
	}
	put(out, "sfen", json_string(sfen), &ok);
	put(out, "key", json_string(hex), &ok);
	put(out, "in_book", json_boolean(in_book), &ok);
	if (nmoves > 0) {
		usi_move_write(rec->moves[0].move, usi);
		put(out, "bestmove", json_string(usi), &ok);
		if (minimax) put(out, "value", json_integer(rec->moves[0].value), &ok);
	}
	if (in_book && (rec->flags & BOOKDB_REC_THOUGHT))
		put(out, "thought_depth", json_integer(rec->think_depth), &ok);
	if (in_book) put(out, "ply", json_integer(rec->min_ply), &ok);
	/* So that a client tells "not in book" from "no moves at all". */
	Move legal[MOVEGEN_MAX];
	put(out, "legal_moves", json_integer(movegen_legal(pos, legal)), &ok);
	for (int i = 0; i < nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		json_t *jm = json_object();
		if (!jm || json_array_append_new(moves, jm) < 0) {
			ok = false;
			break;
		}
		usi_move_write(m->move, usi);
		put(jm, "move", json_string(usi), &ok);
		if (minimax) {
			put(jm, "value", json_integer(m->value), &ok);
			put(jm, "dist", json_integer(m->dist), &ok);
			const char *src = bookdb_value_source(rec, m);
			if (src) put(jm, "value_source", json_string(src), &ok);
		}
		if (m->flags & BOOKDB_MOVE_EVAL) {
			put(jm, "eval", json_integer(m->eval), &ok);
			put(jm, "depth", json_integer(m->depth), &ok);
			put(jm, "nodes", json_integer((json_int_t)m->nodes), &ok);
			put(jm, "source", json_integer(m->source), &ok);
		}
		put(jm, "count", json_integer(m->count), &ok);
		put(jm, "wins", json_integer(m->wins), &ok);
		put(jm, "draws", json_integer(m->draws), &ok);
		put(jm, "losses", json_integer(m->losses), &ok);
	}
	put(out, "moves", moves, &ok);
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}
