/* bookdb/marks.c — marks on book moves (marks.h; layout: docs/bookdb.md). */
#include "bookdb/marks.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The kind byte: the kind, and bits. */
#define KB_KIND 0x03
#define KB_ADDED 0x04 /* the mark added the move to the record */
#define KB_PRIOR 0x08 /* the mark it replaced follows the note */
/* The replaced mark's byte: its kind, and whether its entry follows. */
#define PB_ENTRY 0x80

static bool kind_ok(int kind)
{
	return kind == BOOKDB_MARK_AVOID || kind == BOOKDB_MARK_PREFER;
}

/* One mark of an entry's value into out (key and move left as they are; the
 * mark it replaced left as bytes): 0 or BOOKDB_ECORRUPT. */
static int level_decode(BookMark *out, const uint8_t *v, size_t vlen)
{
	if (vlen < 10) return BOOKDB_ECORRUPT;
	uint8_t kb = v[0];
	if ((kb & ~(KB_KIND | KB_ADDED | KB_PRIOR)) || !kind_ok(kb & KB_KIND) ||
	    (v[1] != BOOKDB_MARK_HAND && v[1] != BOOKDB_MARK_PRUNE))
		return BOOKDB_ECORRUPT;
	const uint8_t *note = v + 10;
	size_t n = vlen - 10;
	out->prior_kind = 0;
	out->prior_window = 0;
	out->prior = NULL;
	out->prior_len = 0;
	if (kb & KB_PRIOR) {
		if (vlen < 12) return BOOKDB_ECORRUPT;
		n = (size_t)(v[10] | v[11] << 8);
		if (n > BOOKDB_NOTE_MAX || vlen - 12 < n + 3) return BOOKDB_ECORRUPT;
		note = v + 12;
		const uint8_t *p = note + n;
		size_t rest = vlen - 12 - n - 3;
		if ((p[0] & ~(KB_KIND | PB_ENTRY)) || !kind_ok(p[0] & KB_KIND) ||
		    ((p[0] & PB_ENTRY) != 0) != (rest > 0))
			return BOOKDB_ECORRUPT;
		out->prior_kind = p[0] & KB_KIND;
		out->prior_window = (uint16_t)(p[1] | p[2] << 8);
		if (rest) {
			out->prior = p + 3;
			out->prior_len = rest;
		}
	}
	if (n > BOOKDB_NOTE_MAX || memchr(note, 0, n)) return BOOKDB_ECORRUPT;
	out->kind = kb & KB_KIND;
	out->source = v[1];
	out->added = kb & KB_ADDED;
	out->known = true;
	uint64_t t = 0;
	for (int i = 7; i >= 0; i--) t = t << 8 | v[2 + i];
	out->time = (int64_t)t;
	out->window = 0;
	memcpy(out->note, note, n);
	out->note[n] = 0;
	return 0;
}

int bookdb_mark_decode(BookMark *out, const void *key, size_t klen, const void *val, size_t vlen)
{
	if (klen != BOOKDB_MARK_KEY_LEN || level_decode(out, val, vlen) < 0) return BOOKDB_ECORRUPT;
	const uint8_t *k = key;
	out->key = key_from_bytes(k);
	out->move = (Move)(k[16] << 8 | k[17]);
	/* The marks it replaced: each decodes and is of the kind its
	 * replacement says, at most BOOKDB_MARK_LEVELS in all. */
	BookMark lv;
	int kind = out->prior_kind, levels = 1;
	const uint8_t *end = out->prior ? out->prior + out->prior_len : NULL; /* none: no loop */
	for (const uint8_t *p = out->prior; p; p = lv.prior) {
		if (++levels > BOOKDB_MARK_LEVELS || level_decode(&lv, p, (size_t)(end - p)) < 0 ||
		    lv.kind != kind)
			return BOOKDB_ECORRUPT;
		kind = lv.prior_kind;
	}
	return 0;
}

/* (key, move)'s entry: 1 with *out and its value (*raw, *rawlen, as
 * bookdb_kv_get gives it), 0 when there is none, or a negative code
 * (BOOKDB_ECORRUPT: it does not decode). */
static int entry_get(BookMark *out, const uint8_t **raw, size_t *rawlen, BookTxn *txn, Key key,
                     Move move)
{
	uint8_t kb[BOOKDB_MARK_KEY_LEN];
	bookdb_mark_key(kb, key, move);
	const void *v;
	int rc = bookdb_kv_get(&v, rawlen, txn, BOOKDB_MARKS, kb, sizeof kb);
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0) return rc;
	*raw = v;
	rc = bookdb_mark_decode(out, kb, sizeof kb, v, *rawlen);
	return rc < 0 ? rc : 1;
}

int bookdb_mark_get(BookMark *out, BookTxn *txn, Key key, Move move)
{
	const uint8_t *raw;
	size_t len;
	return entry_get(out, &raw, &len, txn, key, move);
}

size_t bookdb_mark_encode(uint8_t *v, const BookMark *m)
{
	size_t n = strnlen(m->note, BOOKDB_NOTE_MAX), o = 10;
	bool prior = kind_ok(m->prior_kind);
	v[0] = (uint8_t)(m->kind | (m->added ? KB_ADDED : 0) | (prior ? KB_PRIOR : 0));
	v[1] = m->source;
	uint64_t t = (uint64_t)m->time;
	for (int i = 0; i < 8; i++) v[2 + i] = (uint8_t)(t >> (8 * i));
	if (prior) {
		v[o++] = (uint8_t)n;
		v[o++] = (uint8_t)(n >> 8);
	}
	memcpy(v + o, m->note, n);
	o += n;
	if (prior) {
		bool entry = m->prior && m->prior_len;
		v[o++] = (uint8_t)(m->prior_kind | (entry ? PB_ENTRY : 0));
		v[o++] = (uint8_t)m->prior_window;
		v[o++] = (uint8_t)(m->prior_window >> 8);
		if (entry) memcpy(v + o, m->prior, m->prior_len);
		o += entry ? m->prior_len : 0;
	}
	return o;
}

/*
 * The value v (len bytes, an entry that decodes) with its first levels marks
 * only into out (levels >= 1; the last kept one without the mark it replaced:
 * its undo then leaves the move unmarked); returns the length. The marks kept
 * are v's bytes as they are: each one's replaced mark runs to the end.
 */
static size_t chain_cut(uint8_t *out, const uint8_t *v, size_t len, int levels)
{
	size_t o = 0;
	for (int i = 1;; i++) {
		const uint8_t *l = v + o;
		if (!(l[0] & KB_PRIOR)) break;
		size_t n = (size_t)(l[10] | l[11] << 8);
		if (i == levels) {
			memcpy(out, v, o);
			out[o] = (uint8_t)(l[0] & ~KB_PRIOR);
			memcpy(out + o + 1, l + 1, 9);
			memcpy(out + o + 10, l + 12, n);
			return o + 10 + n;
		}
		if (!(l[12 + n] & PB_ENTRY)) break;
		o += 15 + n;
	}
	memcpy(out, v, len);
	return len;
}

/* How many of v's marks come before the first one of source (a record flag
 * alone counting as prune's) below the first: 0 when there is none. */
static int levels_before(const uint8_t *v, int source)
{
	size_t o = 0;
	for (int i = 1;; i++) {
		const uint8_t *l = v + o;
		if (i > 1 && l[1] == source) return i - 1;
		if (!(l[0] & KB_PRIOR)) return 0;
		size_t n = (size_t)(l[10] | l[11] << 8);
		if (!(l[12 + n] & PB_ENTRY)) return source == BOOKDB_MARK_PRUNE ? i : 0;
		o += 15 + n;
	}
}

static int mark_put(BookTxn *txn, Key key, Move move, const uint8_t *v, size_t len)
{
	uint8_t kb[BOOKDB_MARK_KEY_LEN];
	bookdb_mark_key(kb, key, move);
	return bookdb_kv_put(txn, BOOKDB_MARKS, kb, sizeof kb, v, len);
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

int bookdb_marks_each(BookTxn *txn, BookMarksFn fn, void *ctx)
{
	BookRecord *rec = malloc(sizeof *rec);
	BookIter *it = NULL;
	int rc = rec ? bookdb_iter_open(&it, txn) : BOOKDB_ENOMEM;
	Key k;
	const uint8_t *v;
	size_t len;
	while (!rc && (rc = bookdb_iter_next(it, &k, &v, &len)) == 1) {
		rc = 0;
		if (!len || !(v[0] & (BOOKDB_REC_AVOID | BOOKDB_REC_PREFER))) continue;
		if (bookdb_record_decode(rec, v, len) < 0) continue; /* check names it */
		BookMark *marks;
		int n = bookdb_marks_load(&marks, txn, k, rec);
		if (n < 0) rc = n;
		if (n > 0) rc = fn(ctx, rec, marks, n);
		free(marks);
	}
	bookdb_iter_free(it);
	free(rec);
	return rc;
}

const char *bookdb_mark_when(int64_t time, char out[BOOKDB_MARK_WHEN_MAX])
{
	time_t t = (time_t)time;
	struct tm tm;
	out[0] = 0;
	if (gmtime_r(&t, &tm)) strftime(out, BOOKDB_MARK_WHEN_MAX, "%Y-%m-%d %H:%M UTC", &tm);
	return out;
}

static BookMove *find_move(BookRecord *rec, Move move)
{
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == move) return &rec->moves[i];
	return NULL;
}

static int fail(char *err, int rc)
{
	return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "%s", bookdb_strerror(rc));
}

/* key's record into rec; 0, or a code with err saying why. */
static int load(BookRecord *rec, BookTxn *txn, Key key, char *err)
{
	int rc = bookdb_get(rec, txn, key);
	if (rc == BOOKDB_ENOTFOUND)
		return errmsg_set(err, BOOKDB_MARK_ERRLEN, rc, "the position is not in the book");
	return rc < 0 ? fail(err, rc) : 0;
}

/* The scratch space of a mark's writes: the entry found and the one to put
 * (encoded before any write: the found one's bytes are the store's). */
typedef struct {
	BookMark old, put;
	uint8_t val[BOOKDB_MARK_VALUE_MAX], cut[BOOKDB_MARK_VALUE_MAX];
} Scratch;

static int mark_set(Scratch *sc, BookTxn *txn, BookRecord *rec, Key key, const Position *pos,
                    Move move, const BookMark *mark, bool *changed, char *err)
{
	char usi[USI_MOVE_MAX];
	usi_move_write(move, usi);
	int rc = load(rec, txn, key, err);
	if (rc < 0) return rc;
	BookMove *m = find_move(rec, move);
	/* What the mark finds: the move's mark, with its entry when of its kind. */
	int cur = !m                                   ? 0
	          : (m->flags & BOOKDB_MOVE_AVOIDED)   ? BOOKDB_MARK_AVOID
	          : (m->flags & BOOKDB_MOVE_PREFERRED) ? BOOKDB_MARK_PREFER
	                                               : 0;
	const uint8_t *raw = NULL;
	size_t rawlen = 0;
	int got = cur ? entry_get(&sc->old, &raw, &rawlen, txn, key, move) : 0;
	if (got < 0 && got != BOOKDB_ECORRUPT) return fail(err, got);
	bool have = got == 1 && sc->old.kind == cur;
	/* The same kind from the same source: the note and window change, what
	 * the first such mark found stays. */
	bool same = have && cur == mark->kind && sc->old.source == mark->source;
	BookMark *put = &sc->put;
	*put = *mark;
	put->key = key;
	put->move = move;
	put->added = false;
	put->prior_kind = 0;
	put->prior_window = 0;
	put->prior = NULL;
	put->prior_len = 0;
	if (!m) {
		if (!pos || !pos_is_legal(pos, move))
			return errmsg_set(err, BOOKDB_MARK_ERRLEN, BOOKDB_EINVAL,
			                  "%s is not a %s move there", usi, pos ? "legal" : "book");
		/* Unvalued (not played) until an analysis or minimax values it. */
		if (!(m = bookdb_record_add_move(rec, move)))
			return errmsg_set(err, BOOKDB_MARK_ERRLEN, BOOKDB_EINVAL,
			                  "the record holds no more moves");
		put->added = true;
		*changed = true;
	} else if (same) {
		put->added = sc->old.added;
		put->prior_kind = sc->old.prior_kind;
		put->prior_window = sc->old.prior_window;
		put->prior = sc->old.prior;
		put->prior_len = sc->old.prior_len;
	} else if (cur) {
		/* Replaced: kept in the entry, for --undo (the oldest marks go). */
		put->added = have && sc->old.added;
		put->prior_kind = (uint8_t)cur;
		put->prior_window = cur == BOOKDB_MARK_PREFER ? m->prefer_window : 0;
		if (have) {
			put->prior_len = chain_cut(sc->cut, raw, rawlen, BOOKDB_MARK_LEVELS - 1);
			put->prior = sc->cut;
		}
	}
	bool entry_changed = !same || strcmp(sc->old.note, mark->note) != 0;
	size_t vlen = entry_changed ? bookdb_mark_encode(sc->val, put) : 0;
	uint8_t want = kind_flag(mark->kind), other = kind_flag(3 - mark->kind);
	uint16_t window = mark->kind == BOOKDB_MARK_PREFER ? mark->window : 0;
	bool rec_changed = *changed || (m->flags & (want | other)) != want ||
	                   (mark->kind == BOOKDB_MARK_PREFER && m->prefer_window != window);
	m->flags = (uint8_t)((m->flags & ~other) | want);
	m->prefer_window = window;
	*changed = rec_changed || entry_changed;
	/* The record only when its moves change: a note alone is no change to
	 * what minimax reads (the change log sees record writes). */
	if (rec_changed && (rc = bookdb_put(txn, key, rec)) < 0) return fail(err, rc);
	if (entry_changed && (rc = mark_put(txn, key, move, sc->val, vlen)) < 0)
		return fail(err, rc);
	return 0;
}

int bookdb_mark_set(BookTxn *txn, BookRecord *rec, Key key, const Position *pos, Move move,
                    const BookMark *mark, bool *changed, char *err)
{
	*changed = false;
	Scratch *sc = malloc(sizeof *sc);
	if (!sc) return fail(err, BOOKDB_ENOMEM);
	int rc = mark_set(sc, txn, rec, key, pos, move, mark, changed, err);
	free(sc);
	return rc;
}

static int mark_clear(Scratch *sc, BookTxn *txn, BookRecord *rec, Key key, Move move,
                      BookMarkKind kind, char *err)
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
	const uint8_t *raw;
	size_t rawlen, vlen = 0;
	int got = entry_get(&sc->old, &raw, &rawlen, txn, key, move);
	if (got < 0 && got != BOOKDB_ECORRUPT) return fail(err, got);
	const BookMark *old = got == 1 && sc->old.kind == kind ? &sc->old : NULL;
	if (old && old->prior_kind) {
		/* The mark it replaced comes back, with its entry. */
		m->flags = (uint8_t)((m->flags & ~(BOOKDB_MOVE_AVOIDED | BOOKDB_MOVE_PREFERRED)) |
		                     kind_flag(old->prior_kind));
		m->prefer_window = old->prior_kind == BOOKDB_MARK_PREFER ? old->prior_window : 0;
		if (old->prior) memcpy(sc->val, old->prior, vlen = old->prior_len);
	} else {
		m->flags &= (uint8_t)~flag;
		m->prefer_window = 0;
		/* A move the mark added goes again, unless it has since been
		 * analysed or played. */
		if (old && old->added && !(m->flags & (BOOKDB_MOVE_EVAL | BOOKDB_MOVE_STATS))) {
			memmove(m, m + 1, (size_t)(rec->moves + rec->nmoves - (m + 1)) * sizeof *m);
			rec->nmoves--;
		}
	}
	if ((rc = bookdb_put(txn, key, rec)) < 0 ||
	    (rc = vlen ? mark_put(txn, key, move, sc->val, vlen) : mark_del(txn, key, move)) < 0)
		return fail(err, rc);
	return 0;
}

int bookdb_mark_clear(BookTxn *txn, BookRecord *rec, Key key, Move move, BookMarkKind kind,
                      char *err)
{
	Scratch *sc = malloc(sizeof *sc);
	if (!sc) return fail(err, BOOKDB_ENOMEM);
	int rc = mark_clear(sc, txn, rec, key, move, kind, err);
	free(sc);
	return rc;
}

/* One marked move to clear: its record and move. */
typedef struct {
	Key key;
	Move move;
	bool flag; /* the record carries the flag (else only a stale entry) */
	int keep;  /* > 0: another source's mark stays, with its first keep marks */
} Clear;

static int add_clear(Clear **v, size_t *n, size_t *cap, Key key, Move move, bool flag, int keep)
{
	if (array_grow((void **)v, cap, *n + 1, sizeof **v, 256)) return BOOKDB_ENOMEM;
	(*v)[(*n)++] = (Clear){key, move, flag, keep};
	return 0;
}

/* (key, move)'s entry with its first keep marks only. */
static int forget_marks(BookTxn *txn, Key key, Move move, int keep)
{
	Scratch *sc = malloc(sizeof *sc);
	if (!sc) return BOOKDB_ENOMEM;
	const uint8_t *raw;
	size_t len;
	int rc = entry_get(&sc->old, &raw, &len, txn, key, move);
	if (rc == 1) {
		size_t n = chain_cut(sc->val, raw, len, keep);
		rc = mark_put(txn, key, move, sc->val, n);
	}
	free(sc);
	return rc < 0 ? rc : 0;
}

/* bookdb_marks_clear_source's list of the marks of one source. */
typedef struct {
	Clear **cl;
	size_t *n, *cap;
	int source;
} Collect;

static int collect(void *ctx, const BookRecord *rec, const BookMark *marks, int n)
{
	(void)rec;
	const Collect *c = ctx;
	int rc = 0;
	for (int i = 0; i < n && !rc; i++)
		if (marks[i].source == c->source)
			rc = add_clear(c->cl, c->n, c->cap, marks[i].key, marks[i].move, true, 0);
	return rc;
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
	/* The records first: every marked move whose mark is source's. */
	Collect c = {&cl, &ncl, &cap, (int)source};
	if (!rc) rc = bookdb_marks_each(txn, collect, &c);
	/* Then the entries of source's whose record lost its flag, and the other
	 * source's marks that replaced one of source's. */
	if (!rc) rc = bookdb_kv_iter_open(&it, txn, BOOKDB_MARKS);
	const void *kp, *vp;
	size_t kl, len;
	while (!rc && (rc = bookdb_kv_iter_next(it, &kp, &kl, &vp, &len)) == 1) {
		rc = 0;
		if (bookdb_mark_decode(&mk, kp, kl, vp, len) < 0) continue;
		if (mk.source != (int)source) {
			int keep = levels_before(vp, (int)source);
			if (keep) rc = add_clear(&cl, &ncl, &cap, mk.key, mk.move, false, keep);
			continue;
		}
		int got = bookdb_get_moves(rec, txn, mk.key);
		if (got < 0 && got != BOOKDB_ENOTFOUND && got != BOOKDB_ECORRUPT) {
			rc = got;
			break;
		}
		const BookMove *m = got == 0 ? find_move(rec, mk.move) : NULL;
		if (!m || !(m->flags & kind_flag(mk.kind)))
			rc = add_clear(&cl, &ncl, &cap, mk.key, mk.move, false, 0);
	}
	bookdb_iter_free(it);
	it = NULL;
	/* Written after the walks, so that no cursor meets its own writes. */
	for (size_t i = 0; i < ncl && !rc; i++) {
		if (cl[i].keep) {
			if ((rc = forget_marks(txn, cl[i].key, cl[i].move, cl[i].keep)) < 0) break;
			continue;
		}
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
