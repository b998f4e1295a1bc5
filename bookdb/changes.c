/* bookdb/changes.c — the change log (docs/bookdb.md, "Change log"). */
#include "bookdb/bookdb.h"
#include "bookdb/bookdb_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- change log: the writing side ---- */

/*
 * Reads the change log's state into the cache, once per transaction, and,
 * when it is not off or counts says so, the last sequence number given out
 * (the larger of meta's and the last entry's, so a missing meta value cannot
 * reuse one) and the number of entries. An untracked book costs one lookup.
 */
int bdb_changes_load(BookTxn *t, bool counts)
{
	BookDB *db = t->db;
	MDB_val k = {strlen(META_CHANGES), META_CHANGES}, v;
	int rc;
	if (!t->chg_loaded) {
		t->chg_state = BOOKDB_CHANGES_OFF;
		rc = db->has_changes ? mdb_get(t->txn, db->dbi[BOOKDB_META], &k, &v) : MDB_NOTFOUND;
		if (!rc) {
			uint8_t b = v.mv_size == 1 ? *(const uint8_t *)v.mv_data : 0xff;
			if (b > BOOKDB_CHANGES_OVERFLOW) return BOOKDB_ECORRUPT;
			t->chg_state = b;
		} else if (rc != MDB_NOTFOUND) {
			return bdb_xlate(rc);
		}
		t->chg_loaded = true;
	}
	if (t->chg_counted || (!counts && t->chg_state == BOOKDB_CHANGES_OFF)) return 0;
	t->chg_seq = t->chg_entries = 0;
	if (db->has_changes) {
		MDB_val ks = {strlen(META_CHANGES_SEQ), META_CHANGES_SEQ};
		rc = mdb_get(t->txn, db->dbi[BOOKDB_META], &ks, &v);
		if (!rc) {
			if (v.mv_size != 8) return BOOKDB_ECORRUPT;
			t->chg_seq = le64_get(v.mv_data);
		} else if (rc != MDB_NOTFOUND) {
			return bdb_xlate(rc);
		}
		MDB_stat st;
		MDB_cursor *c;
		if ((rc = mdb_stat(t->txn, db->dbi[BOOKDB_CHANGES], &st))) return bdb_xlate(rc);
		t->chg_entries = st.ms_entries;
		if ((rc = mdb_cursor_open(t->txn, db->dbi[BOOKDB_CHANGES], &c)))
			return bdb_xlate(rc);
		rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
		if (!rc && k.mv_size == 8 && be64_get(k.mv_data) > t->chg_seq)
			t->chg_seq = be64_get(k.mv_data);
		mdb_cursor_close(c);
		if (rc && rc != MDB_NOTFOUND) return bdb_xlate(rc);
	}
	t->chg_counted = true;
	return 0;
}

int bdb_changes_set_state(BookTxn *t, uint8_t state)
{
	int rc =
	    bdb_txn_write(t, BOOKDB_META, OP_PUT, META_CHANGES, strlen(META_CHANGES), &state, 1);
	if (!rc) t->chg_state = state;
	return rc;
}

/* Numbers and, while ON, logs a write of the pos record kb. */
int bdb_changes_note(BookTxn *t, const uint8_t kb[16])
{
	int rc = bdb_changes_load(t, false);
	if (rc || t->chg_state == BOOKDB_CHANGES_OFF) return rc;
	t->chg_seq++;
	t->chg_dirty = true;
	if (t->chg_state == BOOKDB_CHANGES_ON && t->chg_entries >= t->db->changes_max &&
	    (rc = bdb_changes_set_state(t, BOOKDB_CHANGES_OVERFLOW)))
		return rc;
	if (t->chg_state != BOOKDB_CHANGES_ON) return 0;
	uint8_t sk[8];
	be64_put(sk, t->chg_seq);
	/* The largest key so far: appended, no search. */
	if ((rc = bdb_txn_write(t, BOOKDB_CHANGES, OP_APPEND, sk, 8, kb, 16))) return rc;
	t->chg_entries++;
	return 0;
}

/* Every write to pos goes through here: the kept counts (counts.c), the
 * write, then its change-log entry. */
int bdb_pos_write(BookTxn *t, int op, const uint8_t kb[16], const void *val, size_t len)
{
	BookCountsDelta d;
	int rc;
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	if ((rc = bdb_counts_before(t, op, kb, &d)) ||
	    (rc = bdb_txn_write(t, BOOKDB_POS, op, kb, 16, val, len)))
		return rc;
	bdb_counts_after(t, &d, op, val, len);
	return t->track ? bdb_changes_note(t, kb) : 0;
}

/* ---- change log: state and consumers ---- */

void bookdb_txn_set_tracking(BookTxn *t, bool on)
{
	t->track = on;
}

bool bookdb_txn_tracking(const BookTxn *t)
{
	return t->track;
}

int bookdb_changes_enable(BookTxn *t)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	int rc = bdb_changes_load(t, true);
	return rc ? rc : bdb_changes_set_state(t, BOOKDB_CHANGES_ON);
}

static int hold_get(BookTxn *t, bool *set, uint64_t *hold);

int bookdb_changes_info(BookChangesInfo *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	/* The cache is what the transaction sees, its own numbering included. */
	int rc = bdb_changes_load(t, true);
	if (rc) return rc;
	out->state = (BookChangesState)t->chg_state;
	out->entries = t->chg_entries;
	out->seq = t->chg_seq;
	if ((rc = hold_get(t, &out->held, &out->hold))) return rc;
	if (!t->db->has_changes || !t->chg_entries) return 0;
	MDB_cursor *c;
	MDB_val k, v;
	if ((rc = mdb_cursor_open(t->txn, t->db->dbi[BOOKDB_CHANGES], &c))) return bdb_xlate(rc);
	if (!(rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) && k.mv_size == 8) {
		out->first = be64_get(k.mv_data);
		if (!(rc = mdb_cursor_get(c, &k, &v, MDB_LAST)) && k.mv_size == 8)
			out->last = be64_get(k.mv_data);
	}
	mdb_cursor_close(c);
	if (rc) return bdb_xlate(rc);
	return k.mv_size == 8 ? 0 : BOOKDB_ECORRUPT;
}

int bookdb_changes_iter_open(BookChangesIter **out, BookTxn *t, uint64_t from)
{
	*out = NULL;
	if (!t->txn) return BOOKDB_ELMDB;
	BookChangesIter *it = calloc(1, sizeof *it);
	if (!it) return BOOKDB_ENOMEM;
	be64_put(it->from, from);
	if (t->db->has_changes) {
		int rc = mdb_cursor_open(t->txn, t->db->dbi[BOOKDB_CHANGES], &it->cur);
		if (rc) {
			free(it);
			return bdb_xlate(rc);
		}
	}
	*out = it;
	return 0;
}

int bookdb_changes_iter_next(BookChangesIter *it, uint64_t *seq, Key *key)
{
	if (!it->cur) return 0;
	MDB_val k = {8, it->from}, v;
	int rc = mdb_cursor_get(it->cur, &k, &v, it->started ? MDB_NEXT : MDB_SET_RANGE);
	it->started = true;
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return bdb_xlate(rc);
	if (k.mv_size != 8 || v.mv_size != 16) return BOOKDB_ECORRUPT;
	*seq = be64_get(k.mv_data);
	*key = key_from_bytes(v.mv_data);
	return 1;
}

void bookdb_changes_iter_free(BookChangesIter *it)
{
	if (!it) return;
	if (it->cur) mdb_cursor_close(it->cur);
	free(it);
}

/* Whether a hold is set, and its sequence number. */
static int hold_get(BookTxn *t, bool *set, uint64_t *hold)
{
	*set = false;
	*hold = 0;
	if (!t->db->has_changes) return 0;
	MDB_val k = {strlen(META_CHANGES_HOLD), META_CHANGES_HOLD}, v;
	int rc = mdb_get(t->txn, t->db->dbi[BOOKDB_META], &k, &v);
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return bdb_xlate(rc);
	if (v.mv_size != 8) return BOOKDB_ECORRUPT;
	*set = true;
	*hold = be64_get(v.mv_data);
	return 0;
}

/* Drops the hold (which must be set). */
static int hold_drop(BookTxn *t)
{
	return bdb_txn_write(t, BOOKDB_META, OP_DEL, META_CHANGES_HOLD, strlen(META_CHANGES_HOLD),
	                     NULL, 0);
}

int bookdb_changes_hold(BookTxn *t, bool on)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	int rc = bdb_changes_load(t, true);
	if (rc || !on || t->chg_state != BOOKDB_CHANGES_ON) {
		bool set;
		uint64_t hold;
		if (rc || (rc = hold_get(t, &set, &hold)) || !set) return rc;
		return hold_drop(t);
	}
	uint8_t hb[8];
	be64_put(hb, t->chg_seq);
	return bdb_txn_write(t, BOOKDB_META, OP_PUT, META_CHANGES_HOLD, strlen(META_CHANGES_HOLD),
	                     hb, 8);
}

/* Deletes the entries numbered up to upto. */
static int delete_upto(BookTxn *t, uint64_t upto)
{
	uint8_t ub[8];
	MDB_stat st;
	be64_put(ub, upto);
	/* One log entry, replayed as one walk, however many entries go. */
	int rc = bdb_txn_write(t, BOOKDB_CHANGES, OP_DEL_UPTO, ub, 8, NULL, 0);
	if (rc) return rc;
	if ((rc = mdb_stat(t->txn, t->db->dbi[BOOKDB_CHANGES], &st))) return bdb_xlate(rc);
	t->chg_entries = st.ms_entries;
	return 0;
}

int bookdb_changes_consume(BookTxn *t, uint64_t upto)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	bool set;
	uint64_t hold;
	int rc = bdb_changes_load(t, true);
	if (rc || (rc = hold_get(t, &set, &hold))) return rc;
	/* A hold keeps what was written after it; an overflow has lost some of
	 * that already, and past half the log's room the hold gives way. */
	bool held = set && hold < upto && t->chg_state == BOOKDB_CHANGES_ON;
	if (upto && t->chg_entries && (rc = delete_upto(t, held ? hold : upto))) return rc;
	if (set && (!held ? t->chg_state == BOOKDB_CHANGES_OVERFLOW
	                  : t->chg_entries > t->db->changes_max / 2)) {
		if ((rc = hold_drop(t))) return rc;
		if (held && (rc = delete_upto(t, upto))) return rc;
	}
	/* Writes numbered after upto were not seen by the consumer: keep the overflow. */
	if (t->chg_state == BOOKDB_CHANGES_OVERFLOW && upto >= t->chg_seq)
		return bdb_changes_set_state(t, BOOKDB_CHANGES_ON);
	return 0;
}
