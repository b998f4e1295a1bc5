/* bookdb/writer.c — the batched writer (bookdb.h). */
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

/* ---- batched writer ---- */

int bookdb_writer_new(BookWriter **out, BookDB *db, size_t batch)
{
	*out = NULL;
	if (db->read_only) return BOOKDB_EREADONLY;
	BookWriter *w = calloc(1, sizeof *w);
	if (!w) return BOOKDB_ENOMEM;
	w->db = db;
	w->batch = batch ? batch : 1;
	*out = w;
	return 0;
}

bool bookdb_writer_open(const BookWriter *w)
{
	return w->txn != NULL;
}

int bookdb_writer_txn(BookTxn **out, BookWriter *w)
{
	if (!w->txn) {
		int rc = bookdb_txn_begin(&w->txn, w->db, true);
		if (rc) return rc;
		w->txn->track = !w->no_track;
	}
	*out = w->txn;
	return 0;
}

int bookdb_writer_flush(BookWriter *w)
{
	if (!w->txn) return 0;
	BookTxn *t = w->txn;
	w->txn = NULL;
	w->pending = 0;
	int rc = bookdb_txn_commit(t);
	if (!rc) w->commits++;
	return rc;
}

int bookdb_writer_put_raw(BookWriter *w, Key key, const uint8_t *val, size_t len)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	if ((rc = bookdb_put_raw(t, key, val, len))) return rc;
	if (++w->pending >= w->batch) return bookdb_writer_flush(w);
	return 0;
}

int bookdb_writer_rewrite(BookWriter *w, Key key, BookRewriteFn fn, void *ctx, uint8_t *out)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	int n = bookdb_rewrite(t, key, fn, ctx, out);
	if (n <= 0) return n;
	if (++w->pending >= w->batch && (rc = bookdb_writer_flush(w))) return rc;
	return n;
}

int bookdb_writer_append(BookWriter *w, Key key, const uint8_t *val, size_t len)
{
	BookTxn *t;
	uint8_t kb[16];
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	key_to_bytes(key, kb);
	if ((rc = bdb_pos_write(t, OP_APPEND, kb, val, len))) return rc;
	if (++w->pending >= w->batch) return bookdb_writer_flush(w);
	return 0;
}

int bookdb_writer_put(BookWriter *w, Key key, const BookRecord *rec)
{
	uint8_t buf[BOOKDB_RECORD_MAX];
	int n = bookdb_record_encode(buf, sizeof buf, rec);
	if (n < 0) return n;
	return bookdb_writer_put_raw(w, key, buf, (size_t)n);
}

int bookdb_writer_get(BookRecord *out, BookWriter *w, Key key)
{
	BookTxn *t;
	int rc = bookdb_writer_txn(&t, w);
	if (rc) return rc;
	return bookdb_get(out, t, key);
}

uint64_t bookdb_writer_commits(const BookWriter *w)
{
	return w->commits;
}

void bookdb_writer_set_tracking(BookWriter *w, bool on)
{
	w->no_track = !on;
	if (w->txn) w->txn->track = on;
}

void bookdb_writer_free(BookWriter *w)
{
	if (!w) return;
	bookdb_txn_abort(w->txn);
	free(w);
}
