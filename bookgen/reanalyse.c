/* bookgen/reanalyse.c — the positions think --reanalyse thinks again (reanalyse.h). */
#include "bookgen/reanalyse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/index.h"
#include "shogi/errmsg.h"
#include "shogi/notation.h"

#define META_AGAIN "reanalyse"
#define MARK_PREFIX "again"

void think_again_key(uint8_t out[THINK_AGAIN_KEY_LEN], Key key)
{
	memcpy(out, MARK_PREFIX, 5);
	key_to_bytes(key, out + 5);
}

void think_again_text(const ThinkAgainCriteria *c, char out[THINK_AGAIN_TEXT])
{
	snprintf(out, THINK_AGAIN_TEXT, "depth<%d nodes<%llu source=%s", c->below_depth,
	         (unsigned long long)c->below_nodes,
	         c->source == BOOKDB_SOURCE_IMPORT   ? "imported"
	         : c->source == BOOKDB_SOURCE_ENGINE ? "thought"
	                                             : "any");
}

bool think_again_wanted(const BookRecord *rec, const ThinkAgainCriteria *c)
{
	if (!(rec->flags & BOOKDB_REC_THOUGHT)) return false;
	int depth = rec->think_depth, source = -1;
	uint64_t nodes = 0;
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		if (!bookdb_move_analysed(m)) continue;
		if (!rec->think_depth && m->depth > depth) depth = m->depth;
		if (m->nodes > nodes) nodes = m->nodes;
		source = m->source;
	}
	if (c->below_depth > 0 && depth >= c->below_depth) return false;
	if (c->below_nodes > 0 && nodes >= c->below_nodes) return false;
	if (c->source >= 0 && source != c->source) return false;
	return true;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
	return v;
}

int think_again_campaign(uint64_t *id, BookDB *db, const ThinkAgainCriteria *c, char *err)
{
	char text[THINK_AGAIN_TEXT];
	think_again_text(c, text);
	BookTxn *t;
	int rc = bookdb_txn_begin(&t, db, true);
	if (rc < 0)
		return errmsg_set(err, THINK_AGAIN_ERRLEN, rc, "cannot write the book: %s",
		                  bookdb_strerror(rc));
	const void *v;
	size_t vl;
	rc = bookdb_kv_get(&v, &vl, t, BOOKDB_META, META_AGAIN, strlen(META_AGAIN));
	size_t tl = strlen(text);
	if (rc == 0 && vl == 8 + tl && !memcmp((const uint8_t *)v + 8, text, tl)) {
		*id = get_le64(v);
		bookdb_txn_abort(t);
		return 0;
	}
	uint64_t prev = rc == 0 && vl >= 8 ? get_le64(v) : 0;
	rc = rc == BOOKDB_ENOTFOUND ? 0 : rc;
	/* A new campaign: the old one's marks go (walked first, deleted after). */
	Key *old = NULL;
	size_t nold = 0, cap = 0;
	BookIter *it = NULL;
	if (rc == 0 && (rc = bookdb_kv_iter_open_at(&it, t, BOOKDB_WORK, MARK_PREFIX, 5)) == 0) {
		const void *k;
		size_t kl;
		while ((rc = bookdb_kv_iter_next(it, &k, &kl, &v, &vl)) == 1) {
			if (kl != THINK_AGAIN_KEY_LEN || memcmp(k, MARK_PREFIX, 5)) break;
			if (nold == cap) {
				cap = cap ? 2 * cap : 1024;
				Key *g = realloc(old, cap * sizeof *g);
				if (!g) {
					rc = BOOKDB_ENOMEM;
					break;
				}
				old = g;
			}
			old[nold++] = key_from_bytes((const uint8_t *)k + 5);
		}
		if (rc == 1) rc = 0;
	}
	bookdb_iter_free(it);
	for (size_t i = 0; i < nold && rc >= 0; i++) {
		uint8_t kb[THINK_AGAIN_KEY_LEN];
		think_again_key(kb, old[i]);
		rc = bookdb_kv_del(t, BOOKDB_WORK, kb, sizeof kb);
		if (rc == BOOKDB_ENOTFOUND) rc = 0;
	}
	free(old);
	/* Its id: the time, made larger than the last one's (two campaigns in
	 * one second have two ids). */
	uint64_t now = (uint64_t)time(NULL);
	*id = now > prev ? now : prev + 1;
	uint8_t val[8 + THINK_AGAIN_TEXT];
	for (int i = 0; i < 8; i++) val[i] = (uint8_t)(*id >> (8 * i));
	memcpy(val + 8, text, tl);
	if (rc >= 0)
		rc = bookdb_kv_put(t, BOOKDB_META, META_AGAIN, strlen(META_AGAIN), val, 8 + tl);
	if (rc >= 0) {
		rc = bookdb_txn_commit(t);
		t = NULL;
	}
	bookdb_txn_abort(t);
	if (rc < 0)
		return errmsg_set(err, THINK_AGAIN_ERRLEN, rc, "cannot start the campaign: %s",
		                  bookdb_strerror(rc));
	return 0;
}

int think_again_list(Key **keys, size_t *n, size_t *reached, BookDB *db,
                     const ThinkAgainCriteria *c, uint64_t id, const char *const *roots, int nroots,
                     char *err)
{
	*keys = NULL;
	*n = *reached = 0;
	BookTxn *t = NULL;
	BookIndex *ix = NULL;
	BookWalk w = {0};
	Key *out = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	size_t nout = 0;
	int rc = rec && pos ? 0 : BOOKDB_ENOMEM;
	if (!rc) rc = bookdb_txn_begin(&t, db, false);
	if (!rc) rc = bookdb_index_build(&ix, t);
	if (!rc) rc = bookdb_walk_init(&w, ix);
	if (!rc && !(out = malloc((bookdb_index_count(ix) + 1) * sizeof *out))) rc = BOOKDB_ENOMEM;
	if (rc < 0) {
		errmsg_set(err, THINK_AGAIN_ERRLEN, rc, "cannot read the book: %s",
		           bookdb_strerror(rc));
		goto done;
	}
	static const char *const START[] = {"startpos"};
	if (nroots <= 0) {
		roots = START;
		nroots = 1;
	}
	for (int r = 0; r < nroots; r++) {
		char perr[SHOGI_ERRLEN];
		if (position_parse(pos, roots[r], perr) < 0) {
			rc = errmsg_set(err, THINK_AGAIN_ERRLEN, BOOKDB_EINVAL, "root %d '%s': %s",
			                r + 1, roots[r], perr);
			goto done;
		}
		bookdb_walk_meet(&w, bookdb_index_find(ix, pos_key(pos)));
	}
	size_t i;
	while (bookdb_walk_next(&w, &i)) {
		const uint8_t *val;
		size_t len;
		bookdb_index_raw(&val, &len, ix, i);
		if (bookdb_record_decode(rec, val, len) < 0) continue; /* check reports it */
		if (think_again_wanted(rec, c)) {
			Key k = bookdb_index_key(ix, i);
			uint8_t kb[THINK_AGAIN_KEY_LEN];
			think_again_key(kb, k);
			const void *mv;
			size_t ml;
			bool done = bookdb_kv_get(&mv, &ml, t, BOOKDB_WORK, kb, sizeof kb) == 0 &&
			            ml == 8 && get_le64(mv) == id;
			if (!done) out[nout++] = k;
		}
		if (bookdb_record_position(pos, rec, NULL) < 0) continue;
		for (int m = 0; m < rec->nmoves; m++)
			if (pos_is_legal(pos, rec->moves[m].move))
				bookdb_walk_meet(
				    &w,
				    bookdb_index_find(ix, pos_key_after(pos, rec->moves[m].move)));
	}
	*keys = out;
	out = NULL;
	*n = nout;
	*reached = w.tail;
done:
	free(out);
	bookdb_walk_free(&w);
	bookdb_index_free(ix);
	bookdb_txn_abort(t);
	free(rec);
	free(pos);
	return rc < 0 ? rc : 0;
}
