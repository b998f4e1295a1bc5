/* bookdb/marks.c — marks on book moves (marks.h; layout: docs/bookdb.md). */
#include "bookdb/marks.h"

#include <stdlib.h>
#include <string.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

const char *bookdb_mark_kind_name(int kind)
{
	return kind == BOOKDB_MARK_AVOID ? "avoid" : kind == BOOKDB_MARK_PREFER ? "prefer" : "none";
}

const char *bookdb_mark_source_name(int source)
{
	return source == BOOKDB_MARK_PRUNE ? "prune" : "hand";
}

void bookdb_mark_key(uint8_t out[BOOKDB_MARK_KEY_LEN], Key key, Move move)
{
	key_to_bytes(key, out);
	out[16] = (uint8_t)(move >> 8);
	out[17] = (uint8_t)move;
}

int bookdb_mark_decode(BookMark *out, const void *key, size_t klen, const void *val, size_t vlen)
{
	const uint8_t *k = key, *v = val;
	if (klen != BOOKDB_MARK_KEY_LEN || vlen < 10 || vlen - 10 > BOOKDB_NOTE_MAX)
		return BOOKDB_ECORRUPT;
	if ((v[0] != BOOKDB_MARK_AVOID && v[0] != BOOKDB_MARK_PREFER) ||
	    (v[1] != BOOKDB_MARK_HAND && v[1] != BOOKDB_MARK_PRUNE) || memchr(v + 10, 0, vlen - 10))
		return BOOKDB_ECORRUPT;
	out->key = key_from_bytes(k);
	out->move = (Move)(k[16] << 8 | k[17]);
	out->kind = v[0];
	out->source = v[1];
	out->known = true;
	uint64_t t = 0;
	for (int i = 7; i >= 0; i--) t = t << 8 | v[2 + i];
	out->time = (int64_t)t;
	out->window = 0;
	memcpy(out->note, v + 10, vlen - 10);
	out->note[vlen - 10] = 0;
	return 0;
}

int bookdb_mark_get(BookMark *out, BookTxn *txn, Key key, Move move)
{
	uint8_t kb[BOOKDB_MARK_KEY_LEN];
	bookdb_mark_key(kb, key, move);
	const void *v;
	size_t vlen;
	int rc = bookdb_kv_get(&v, &vlen, txn, BOOKDB_MARKS, kb, sizeof kb);
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0) return rc;
	rc = bookdb_mark_decode(out, kb, sizeof kb, v, vlen);
	return rc < 0 ? rc : 1;
}

size_t bookdb_mark_encode(uint8_t *v, const BookMark *m)
{
	size_t n = strnlen(m->note, BOOKDB_NOTE_MAX);
	v[0] = m->kind;
	v[1] = m->source;
	uint64_t t = (uint64_t)m->time;
	for (int i = 0; i < 8; i++) v[2 + i] = (uint8_t)(t >> (8 * i));
	memcpy(v + 10, m->note, n);
	return 10 + n;
}

static int mark_put(BookTxn *txn, const BookMark *m)
{
	uint8_t kb[BOOKDB_MARK_KEY_LEN], v[BOOKDB_MARK_VALUE_MAX];
	bookdb_mark_key(kb, m->key, m->move);
	size_t n = bookdb_mark_encode(v, m);
	return bookdb_kv_put(txn, BOOKDB_MARKS, kb, sizeof kb, v, n);
}

static int mark_del(BookTxn *txn, Key key, Move move)
{
	uint8_t kb[BOOKDB_MARK_KEY_LEN];
	bookdb_mark_key(kb, key, move);
	int rc = bookdb_kv_del(txn, BOOKDB_MARKS, kb, sizeof kb);
	return rc == BOOKDB_ENOTFOUND ? 0 : rc;
}

static uint8_t kind_flag(int kind)
{
	return kind == BOOKDB_MARK_AVOID ? BOOKDB_MOVE_AVOIDED : BOOKDB_MOVE_PREFERRED;
}

int bookdb_marks_of(BookMark *out, int max, BookTxn *txn, Key key, const BookRecord *rec)
{
	int n = 0;
	for (int i = 0; i < rec->nmoves && n < max; i++) {
		const BookMove *m = &rec->moves[i];
		int kind = (m->flags & BOOKDB_MOVE_AVOIDED)     ? BOOKDB_MARK_AVOID
		           : (m->flags & BOOKDB_MOVE_PREFERRED) ? BOOKDB_MARK_PREFER
		                                                : 0;
		if (!kind) continue;
		BookMark *o = &out[n];
		int rc = bookdb_mark_get(o, txn, key, m->move);
		if (rc < 0 && rc != BOOKDB_ECORRUPT) return rc;
		if (rc != 1 || o->kind != kind) {
			/* A flag alone (or an entry of the other kind, which a build
			 * that knew no entries cannot leave): prune's, before entries. */
			memset(o, 0, sizeof *o);
			o->key = key;
			o->move = m->move;
			o->kind = (uint8_t)kind;
			o->source = BOOKDB_MARK_PRUNE;
		}
		o->window = kind == BOOKDB_MARK_PREFER ? m->prefer_window : 0;
		n++;
	}
	return n;
}

int bookdb_marks_load(BookMark **out, BookTxn *txn, Key key, const BookRecord *rec)
{
	*out = NULL;
	int n = 0;
	for (int i = 0; i < rec->nmoves; i++)
		n += (rec->moves[i].flags & (BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED)) != 0;
	if (!n) return 0;
	BookMark *v = malloc((size_t)n * sizeof *v);
	if (!v) return BOOKDB_ENOMEM;
	int rc = bookdb_marks_of(v, n, txn, key, rec);
	if (rc <= 0) {
		free(v);
		return rc;
	}
	*out = v;
	return rc;
}

static BookMove *find_move(BookRecord *rec, Move move)
{
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == move) return &rec->moves[i];
	return NULL;
}

/* key's record into rec; 0, or a code with err saying why. */
static int load(BookRecord *rec, BookTxn *txn, Key key, char *err)
{
	int rc = bookdb_get(rec, txn, key);
	if (rc == BOOKDB_ENOTFOUND)
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "the position is not in the book");
	return rc < 0 ? errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc)) : 0;
}

int bookdb_mark_set(BookTxn *txn, BookRecord *rec, Key key, const Position *pos, Move move,
                    const BookMark *mark, bool *changed, char *err)
{
	*changed = false;
	char usi[USI_MOVE_MAX];
	usi_move_write(move, usi);
	int rc = load(rec, txn, key, err);
	if (rc < 0) return rc;
	BookMove *m = find_move(rec, move);
	if (!m) {
		if (!pos || !pos_is_legal(pos, move))
			return errmsg_set(err, BOOKDB_MARK_ERRLEN, BOOKDB_EINVAL,
			                  "%s is not a %s move there", usi, pos ? "legal" : "book");
		/* Unvalued (not played) until an analysis or minimax values it. */
		if (!(m = bookdb_record_add_move(rec, move)))
			return errmsg_set(err, BOOKDB_MARK_ERRLEN, BOOKDB_EINVAL,
			                  "the record holds no more moves");
		*changed = true;
	}
	uint8_t want = kind_flag(mark->kind), other = kind_flag(3 - mark->kind);
	uint16_t window = mark->kind == BOOKDB_MARK_PREFER ? mark->window : 0;
	bool rec_changed = *changed || (m->flags & (want | other)) != want ||
	                   (mark->kind == BOOKDB_MARK_PREFER && m->prefer_window != window);
	m->flags = (uint8_t)((m->flags & ~other) | want);
	m->prefer_window = window;
	BookMark old;
	rc = bookdb_mark_get(&old, txn, key, move);
	if (rc < 0 && rc != BOOKDB_ECORRUPT)
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc));
	bool entry_changed = rc != 1 || old.kind != mark->kind || old.source != mark->source ||
	                     strcmp(old.note, mark->note) != 0;
	*changed = rec_changed || entry_changed;
	/* The record only when its moves change: a note alone is no change to
	 * what minimax reads (the change log sees record writes). */
	if (rec_changed && (rc = bookdb_put(txn, key, rec)) < 0)
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc));
	if (entry_changed) {
		BookMark put = *mark;
		put.key = key;
		put.move = move;
		if ((rc = mark_put(txn, &put)) < 0)
			return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc));
	}
	return 0;
}

int bookdb_mark_clear(BookTxn *txn, BookRecord *rec, Key key, Move move, BookMarkKind kind,
                      char *err)
{
	char usi[USI_MOVE_MAX];
	usi_move_write(move, usi);
	int rc = load(rec, txn, key, err);
	if (rc < 0) return rc;
	BookMove *m = find_move(rec, move);
	uint8_t flag = kind_flag(kind);
	if (!m || !(m->flags & flag))
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, BOOKDB_ENOTFOUND,
		                  "%s carries no %s mark", usi, bookdb_mark_kind_name(kind));
	m->flags &= (uint8_t)~flag;
	m->prefer_window = 0;
	if ((rc = bookdb_put(txn, key, rec)) < 0 || (rc = mark_del(txn, key, move)) < 0)
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc));
	return 0;
}

/* One marked move to clear: its record and move. */
typedef struct {
	Key key;
	Move move;
	bool flag; /* the record carries the flag (else only a stale entry) */
} Clear;

static int add_clear(Clear **v, size_t *n, size_t *cap, Key key, Move move, bool flag)
{
	if (array_grow((void **)v, cap, *n + 1, sizeof **v, 256)) return BOOKDB_ENOMEM;
	(*v)[(*n)++] = (Clear){key, move, flag};
	return 0;
}

int bookdb_marks_clear_source(size_t *cleared, BookDB *db, BookMarkSource source, char *err)
{
	*cleared = 0;
	BookRecord *rec = malloc(sizeof *rec);
	Clear *cl = NULL;
	size_t ncl = 0, cap = 0;
	BookTxn *txn = NULL;
	BookIter *it = NULL;
	BookMark mk;
	int rc = rec ? 0 : BOOKDB_ENOMEM;
	if (!rc) rc = bookdb_txn_begin(&txn, db, true);
	if (!rc) rc = bookdb_iter_open(&it, txn);
	/* The records first: every marked move whose mark is source's. */
	Key k;
	const uint8_t *v;
	size_t len;
	while (!rc && (rc = bookdb_iter_next(it, &k, &v, &len)) == 1) {
		rc = 0;
		if (!len || !(v[0] & (BOOKDB_REC_AVOID | BOOKDB_REC_PREFER))) continue;
		if (bookdb_record_decode_moves(rec, v, len) < 0) continue; /* check reports it */
		for (int i = 0; i < rec->nmoves && !rc; i++) {
			const BookMove *m = &rec->moves[i];
			if (!(m->flags & (BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED))) continue;
			int got = bookdb_mark_get(&mk, txn, k, m->move);
			if (got < 0 && got != BOOKDB_ECORRUPT) rc = got;
			int src = got == 1 ? mk.source : BOOKDB_MARK_PRUNE;
			if (!rc && src == (int)source)
				rc = add_clear(&cl, &ncl, &cap, k, m->move, true);
		}
	}
	bookdb_iter_free(it);
	it = NULL;
	/* Then the entries of source's whose record lost its flag. */
	if (!rc) rc = bookdb_kv_iter_open(&it, txn, BOOKDB_MARKS);
	const void *kp, *vp;
	size_t kl;
	while (!rc && (rc = bookdb_kv_iter_next(it, &kp, &kl, &vp, &len)) == 1) {
		rc = 0;
		if (bookdb_mark_decode(&mk, kp, kl, vp, len) < 0 || mk.source != (int)source)
			continue;
		int got = bookdb_get_moves(rec, txn, mk.key);
		if (got < 0 && got != BOOKDB_ENOTFOUND && got != BOOKDB_ECORRUPT) {
			rc = got;
			break;
		}
		const BookMove *m = got == 0 ? find_move(rec, mk.move) : NULL;
		if (!m || !(m->flags & kind_flag(mk.kind)))
			rc = add_clear(&cl, &ncl, &cap, mk.key, mk.move, false);
	}
	bookdb_iter_free(it);
	it = NULL;
	/* Written after the walks, so that no cursor meets its own writes. */
	for (size_t i = 0; i < ncl && !rc; i++) {
		if (cl[i].flag) {
			if ((rc = bookdb_get(rec, txn, cl[i].key)) < 0) break;
			BookMove *m = find_move(rec, cl[i].move);
			if (m) {
				m->flags &=
				    (uint8_t) ~(BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED);
				m->prefer_window = 0;
				(*cleared)++;
				if ((rc = bookdb_put(txn, cl[i].key, rec)) < 0) break;
			}
		}
		rc = mark_del(txn, cl[i].key, cl[i].move);
	}
	if (!rc) {
		rc = bookdb_txn_commit(txn);
		txn = NULL;
	}
	if (rc < 0) {
		*cleared = 0;
		errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "cannot clear the marks: %s",
		           bookdb_strerror(rc));
	}
	bookdb_iter_free(it);
	bookdb_txn_abort(txn);
	free(cl);
	free(rec);
	return rc < 0 ? rc : 0;
}
