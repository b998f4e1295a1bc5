/* bookdb/counts.c — the counts the store keeps of its records, and what the
 * last whole-book scan counted (docs/bookdb.md, "Kept counts"). */
#include "bookdb/bookdb.h"
#include "bookdb/bookdb_priv.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * meta "counts", 32 bytes little-endian: the stamp (LMDB's id of the
 * transaction that wrote it), then positions, thought and moves as of that
 * transaction. Every write transaction of this store that commits anything
 * writes it again with its own id; so it describes the records exactly when
 * its stamp is the id of the last commit (a reader's snapshot id, a writer's
 * id less one) and its positions are the pos database's entries. A commit
 * it did not write — a build from before kept counts, a compacting copy,
 * which numbers its transaction 1 — breaks the first, and the counts are not
 * trusted until a write of this store counts them again, in its own commit.
 */
#define COUNTS_LEN 32

/* meta "scan", 40 bytes little-endian: the stamp (as above: the scan is
 * current while no commit followed it, else 0), the unix time of the scan,
 * the change log's last sequence number then, leaves, corrupt. */
#define SCAN_LEN 40

_Thread_local uint64_t bdb_pos_reads_tls;

uint64_t bookdb_pos_reads(void)
{
	return bdb_pos_reads_tls;
}

uint64_t bookdb_txn_id(const BookTxn *t)
{
	return t->txn ? (uint64_t)mdb_txn_id(t->txn) : 0;
}

/* The id of the last commit as t sees it: a write transaction has the next. */
static uint64_t last_commit(const BookTxn *t)
{
	uint64_t id = bookdb_txn_id(t);
	return t->write && id ? id - 1 : id;
}

/* What one record's bytes add to the counts: a record whose head does not
 * read adds nothing (it is still one of positions). */
static void record_counts(uint64_t *thought, uint64_t *moves, const void *val, size_t len)
{
	BookRecordHead h;
	*thought = *moves = 0;
	if (bookdb_record_peek(&h, val, len) < 0) return;
	*thought = (h.flags & BOOKDB_REC_THOUGHT) != 0;
	*moves = h.nmoves;
}

static int pos_entries(BookTxn *t, uint64_t *n)
{
	MDB_stat st;
	int rc = mdb_stat(t->txn, t->db->dbi[BOOKDB_POS], &st);
	if (rc) return bdb_xlate(rc);
	*n = st.ms_entries;
	return 0;
}

/* Reads meta "counts" and whether it describes t's records (before t's own
 * writes). */
static int counts_read(BookTxn *t, bool *valid, uint64_t *positions, uint64_t *thought,
                       uint64_t *moves)
{
	MDB_val k = {strlen(META_COUNTS), META_COUNTS}, v;
	uint64_t n = 0;
	*valid = false;
	*positions = *thought = *moves = 0;
	int rc = mdb_get(t->txn, t->db->dbi[BOOKDB_META], &k, &v);
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return bdb_xlate(rc);
	if (v.mv_size != COUNTS_LEN) return 0; /* not ours to read: counted again */
	const uint8_t *p = v.mv_data;
	*positions = le64_get(p + 8);
	*thought = le64_get(p + 16);
	*moves = le64_get(p + 24);
	if ((rc = pos_entries(t, &n))) return rc;
	*valid = le64_get(p) == last_commit(t) && *positions == n;
	return 0;
}

/* Once per write transaction, before its first pos write (or at its commit). */
static int counts_load(BookTxn *t)
{
	bool valid;
	int rc = counts_read(t, &valid, &t->cnt_pos, &t->cnt_thought, &t->cnt_moves);
	if (rc) return rc;
	t->cnt_loaded = true;
	t->cnt_valid = valid;
	return 0;
}

/* One pass over the records' heads in t's view (a BookIter: it reads ahead
 * on a book read at random). */
static int recount(BookTxn *t, uint64_t *positions, uint64_t *thought, uint64_t *moves)
{
	BookIter *it;
	Key k;
	const uint8_t *v;
	size_t len;
	*positions = *thought = *moves = 0;
	int rc = bookdb_iter_open(&it, t);
	if (rc) return rc;
	while ((rc = bookdb_iter_next(it, &k, &v, &len)) == 1) {
		uint64_t th, mv;
		record_counts(&th, &mv, v, len);
		++*positions;
		*thought += th;
		*moves += mv;
	}
	bookdb_iter_free(it);
	return rc;
}

int bdb_counts_before(BookTxn *t, int op, const uint8_t kb[16], BookCountsDelta *d)
{
	memset(d, 0, sizeof *d);
	if (!t->cnt_loaded) {
		int rc = counts_load(t);
		if (rc) return rc;
	}
	/* Not kept in this transaction: its commit counts them all. An append
	 * replaces nothing (its key is past every key). */
	if (!t->cnt_valid || op == OP_APPEND) return 0;
	MDB_val k = {16, (void *)kb}, v;
	int rc = mdb_get(t->txn, t->db->dbi[BOOKDB_POS], &k, &v);
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return bdb_xlate(rc);
	return bdb_counts_replacing(t, v.mv_data, v.mv_size, d);
}

int bdb_counts_replacing(BookTxn *t, const void *old, size_t len, BookCountsDelta *d)
{
	memset(d, 0, sizeof *d);
	if (!t->cnt_loaded) {
		int rc = counts_load(t);
		if (rc) return rc;
	}
	if (!t->cnt_valid) return 0;
	d->had = true;
	record_counts(&d->thought, &d->moves, old, len);
	return 0;
}

void bdb_counts_after(BookTxn *t, const BookCountsDelta *d, int op, const void *val, size_t len)
{
	if (!t->cnt_valid) return;
	t->cnt_pos -= d->had;
	t->cnt_thought -= d->thought;
	t->cnt_moves -= d->moves;
	if (op == OP_DEL) return;
	uint64_t th, mv;
	record_counts(&th, &mv, val, len);
	t->cnt_pos++;
	t->cnt_thought += th;
	t->cnt_moves += mv;
}

int bdb_counts_commit(BookTxn *t)
{
	int rc;
	uint64_t n = 0;
	if (!t->cnt_loaded && (rc = counts_load(t))) return rc;
	/* The deltas must have met every pos write: were one missed, the count
	 * of positions would say so (and the pass below mends it). */
	if (t->cnt_valid && ((rc = pos_entries(t, &n)) || n != t->cnt_pos)) {
		if (rc) return rc;
		t->cnt_valid = false;
	}
	if (!t->cnt_valid && (rc = recount(t, &t->cnt_pos, &t->cnt_thought, &t->cnt_moves)))
		return rc;
	t->cnt_valid = true;
	uint8_t b[COUNTS_LEN];
	le64_put(b, bookdb_txn_id(t));
	le64_put(b + 8, t->cnt_pos);
	le64_put(b + 16, t->cnt_thought);
	le64_put(b + 24, t->cnt_moves);
	return bdb_txn_write(t, BOOKDB_META, OP_PUT, META_COUNTS, strlen(META_COUNTS), b,
	                     COUNTS_LEN);
}

int bdb_counts_init(MDB_txn *txn, MDB_dbi meta)
{
	uint8_t b[COUNTS_LEN] = {0};
	le64_put(b, (uint64_t)mdb_txn_id(txn));
	MDB_val k = {strlen(META_COUNTS), META_COUNTS}, v = {COUNTS_LEN, b};
	return mdb_put(txn, meta, &k, &v, 0);
}

int bookdb_counts(BookCounts *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	uint64_t positions;
	if (t->write && t->cnt_loaded) {
		out->kept = t->cnt_valid;
		out->thought = t->cnt_valid ? t->cnt_thought : 0;
		out->moves = t->cnt_valid ? t->cnt_moves : 0;
		return 0;
	}
	int rc = counts_read(t, &out->kept, &positions, &out->thought, &out->moves);
	if (!out->kept) out->thought = out->moves = 0;
	return rc;
}

int bookdb_counts_recount(BookCounts *out, uint64_t *positions, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	int rc = recount(t, positions, &out->thought, &out->moves);
	out->kept = rc == 0;
	return rc;
}

int bookdb_scan_get(BookScanKept *out, BookTxn *t)
{
	memset(out, 0, sizeof *out);
	if (!t->txn) return BOOKDB_ELMDB;
	MDB_val k = {strlen(META_SCAN), META_SCAN}, v;
	int rc = mdb_get(t->txn, t->db->dbi[BOOKDB_META], &k, &v);
	if (rc == MDB_NOTFOUND) return 0;
	if (rc) return bdb_xlate(rc);
	if (v.mv_size != SCAN_LEN) return 0; /* not ours to read */
	const uint8_t *p = v.mv_data;
	out->known = true;
	out->current = le64_get(p) == last_commit(t);
	out->time = (int64_t)le64_get(p + 8);
	out->seq = le64_get(p + 16);
	out->leaves = le64_get(p + 24);
	out->corrupt = le64_get(p + 32);
	return 0;
}

int bookdb_scan_put(BookTxn *t, uint64_t at, const BookScanKept *s)
{
	if (!t->write) return BOOKDB_EREADONLY;
	if (!t->txn) return BOOKDB_ELMDB;
	uint8_t b[SCAN_LEN];
	/* Current after this commit only if none came between the scan's
	 * snapshot and it (this commit writes meta alone). */
	le64_put(b, at && at == last_commit(t) ? bookdb_txn_id(t) : 0);
	le64_put(b + 8, (uint64_t)s->time);
	le64_put(b + 16, s->seq);
	le64_put(b + 24, s->leaves);
	le64_put(b + 32, s->corrupt);
	return bdb_txn_write(t, BOOKDB_META, OP_PUT, META_SCAN, strlen(META_SCAN), b, SCAN_LEN);
}

/*
 * A compacting copy (LMDB numbers its one transaction 1) keeps what was
 * current in the book it copied: the copy at path, not yet the book, gets
 * one write transaction of its own that stamps the kept counts and the
 * scan with its id when they were current in the source (counts_ok,
 * scan_ok); else the counts are dropped (the next write counts them again)
 * and the scan keeps its figures, stamped 0 (not current). Returns an LMDB
 * code.
 */
/*
 * meta "origin": the files the book was written anew from. 8 bytes
 * little-endian, the id of the transaction that stamped the copy (the new
 * file's last one then), and up to BOOKDB_ORIGINS stamps of 40 bytes
 * (device, inode, transaction id, change log's state and last sequence
 * number, each 8 bytes little-endian), the newest first.
 */
#define ORIGIN_STAMP 40

static void stamp_put(uint8_t *b, const BookStamp *s)
{
	le64_put(b, s->dev);
	le64_put(b + 8, s->ino);
	le64_put(b + 16, s->txnid);
	le64_put(b + 24, s->chg_state);
	le64_put(b + 32, s->chg_seq);
}

static void stamp_get(BookStamp *s, const uint8_t *b)
{
	s->dev = le64_get(b);
	s->ino = le64_get(b + 8);
	s->txnid = le64_get(b + 16);
	s->chg_state = le64_get(b + 24);
	s->chg_seq = le64_get(b + 32);
}

/* The copy's origin (in txn, its restamp): src first, then the source's
 * own, which the copy holds as it was; src NULL drops it. */
static int origin_restamp(MDB_txn *txn, MDB_dbi meta, const BookStamp *src)
{
	MDB_val k = {strlen(META_ORIGIN), META_ORIGIN}, v;
	int rc = mdb_get(txn, meta, &k, &v);
	if (rc && rc != MDB_NOTFOUND) return rc;
	if (!src) return rc ? 0 : mdb_del(txn, meta, &k, NULL);
	uint8_t b[8 + BOOKDB_ORIGINS * ORIGIN_STAMP];
	le64_put(b, (uint64_t)mdb_txn_id(txn));
	stamp_put(b + 8, src);
	size_t n = 1;
	for (size_t at = 8; rc == 0 && n < BOOKDB_ORIGINS && at + ORIGIN_STAMP <= v.mv_size;
	     at += ORIGIN_STAMP)
		memcpy(b + 8 + ORIGIN_STAMP * n++, (const uint8_t *)v.mv_data + at, ORIGIN_STAMP);
	MDB_val nv = {8 + ORIGIN_STAMP * n, b};
	return mdb_put(txn, meta, &k, &nv, 0);
}

int bookdb_stamp_carry(BookStamp *old, BookDB *db)
{
	BookStamp now;
	int rc = bookdb_stamp(&now, db);
	if (rc < 0) return rc;
	if (old->dev == now.dev && old->ino == now.ino) return 0;
	BookTxn *t;
	if ((rc = bookdb_txn_begin(&t, db, false)) < 0) return rc;
	MDB_val k = {strlen(META_ORIGIN), META_ORIGIN}, v;
	rc = mdb_get(t->txn, db->dbi[BOOKDB_META], &k, &v);
	if (rc) {
		bookdb_txn_abort(t);
		return rc == MDB_NOTFOUND ? 0 : bdb_xlate(rc);
	}
	const uint8_t *b = v.mv_data;
	uint64_t made = v.mv_size >= 8 ? le64_get(b) : 0;
	int found = 0;
	for (size_t at = 8; !found && at + ORIGIN_STAMP <= v.mv_size; at += ORIGIN_STAMP) {
		BookStamp e;
		stamp_get(&e, b + at);
		if (e.dev != old->dev || e.ino != old->ino || old->txnid > e.txnid ||
		    old->chg_seq > e.chg_seq)
			continue;
		found = 1;
		bool same = at == 8 && memcmp(&e, old, sizeof e) == 0;
		old->dev = now.dev;
		old->ino = now.ino;
		old->txnid = same ? made : 0;
	}
	bookdb_txn_abort(t);
	return found;
}

int bdb_counts_restamp_copy(const char *path, bool counts_ok, bool scan_ok, const BookStamp *src)
{
	MDB_env *env;
	MDB_txn *txn = NULL;
	MDB_dbi meta;
	struct {
		const char *key;
		bool ok;
	} e[2] = {{META_COUNTS, counts_ok}, {META_SCAN, scan_ok}};
	int rc = mdb_env_create(&env);
	if (rc) return rc;
	/* The copy is as large as its pages: room for a few more. */
	if ((rc = mdb_env_set_maxdbs(env, 8)) || (rc = mdb_env_set_mapsize(env, 0)) ||
	    (rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_NOLOCK, 0664)))
		goto done;
	MDB_envinfo info;
	if ((rc = mdb_env_info(env, &info)) ||
	    (rc = mdb_env_set_mapsize(env, info.me_mapsize + ((size_t)16 << 20))) ||
	    (rc = mdb_txn_begin(env, NULL, 0, &txn)) ||
	    (rc = mdb_dbi_open(txn, DB_NAMES[BOOKDB_META], 0, &meta)))
		goto done;
	for (int i = 0; i < 2 && !rc; i++) {
		MDB_val k = {strlen(e[i].key), (void *)e[i].key}, v;
		if ((rc = mdb_get(txn, meta, &k, &v)) == MDB_NOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc) break;
		/* Counts not current are dropped (counted again); a scan not
		 * current keeps its figures, stamped 0 (known, not current), as
		 * any commit after it leaves it. */
		bool scan = i == 1;
		if (v.mv_size < 8 || (!e[i].ok && !scan)) {
			rc = mdb_del(txn, meta, &k, NULL);
			continue;
		}
		uint8_t b[64];
		size_t n = v.mv_size < sizeof b ? v.mv_size : sizeof b;
		memcpy(b, v.mv_data, n);
		le64_put(b, e[i].ok ? (uint64_t)mdb_txn_id(txn) : 0);
		MDB_val nv = {n, b};
		rc = mdb_put(txn, meta, &k, &nv, 0);
	}
	if (!rc) rc = origin_restamp(txn, meta, src);
	if (!rc) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	/* As every commit of the store (pad_file in bookdb.c): the file as long
	 * as the pages it counts, a page LMDB freed unwritten included. */
	struct stat st;
	if (!rc && !mdb_env_info(env, &info) && stat(path, &st) == 0) {
		MDB_stat ms;
		uint64_t need = 0;
		if (!mdb_env_stat(env, &ms)) need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
		if ((uint64_t)st.st_size < need && truncate(path, (off_t)need) < 0) rc = errno;
	}
done:
	if (txn) mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}
