/*
 * bookgen/selection.c — a run's selector and plan, new or from the
 * snapshot, and saved (bookgen/selection.h).
 */
#include "bookgen/selection.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shogi/errmsg.h"
#include "shogi/grow.h"

int selection_open(Selector **sel, Plan **plan, BookDB *db, const SelectionSpec *spec,
                   SnapReader *snap, char *err)
{
	*sel = NULL;
	*plan = NULL;
	err[0] = 0;
	Selector *s = NULL;
	Plan *p = NULL;
	int rc = sel_new(&s, &spec->sel);
	if (rc < 0) return rc;
	sel_set_memory(s, spec->memory);
	sel_defer_filter(s, spec->defer_filter);
	rc = snap            ? sel_restore(s, db, snap, err)
	     : spec->preload ? sel_load(s, db)
	                     : sel_attach(s, db, spec->keys);
	if (rc < 0) {
		if (!err[0])
			errmsg_set(err, SNAP_ERRLEN, rc, "loading the book: %s", sel_strerror(rc));
		goto fail;
	}
	char perr[SHOGI_ERRLEN] = "";
	rc = plan_new(&p, s, spec->plan, spec->roots, spec->root_weights,
	              spec->roots ? spec->nroots : 0, perr);
	if (rc < 0) {
		errmsg_set(err, SNAP_ERRLEN, rc, "%s", perr[0] ? perr : sel_strerror(rc));
		goto fail;
	}
	if (snap && (rc = plan_restore(p, snap, err)) < 0) {
		if (!err[0]) errmsg_set(err, SNAP_ERRLEN, rc, "%s", sel_strerror(rc));
		goto fail;
	}
	if ((spec->npaths || spec->paths_only) &&
	    (rc = plan_set_paths(p, spec->paths, spec->npaths, spec->paths_only, perr)) < 0) {
		errmsg_set(err, SNAP_ERRLEN, rc, "on the way to the roots: %s",
		           perr[0] ? perr : sel_strerror(rc));
		goto fail;
	}
	*sel = s;
	*plan = p;
	return 0;
fail:
	plan_free(p);
	sel_free(s);
	return rc;
}

int selection_save(const char *path, const BookStamp *st, Selector *sel, const Plan *plan,
                   unsigned flags, char *err)
{
	SnapWriter *w = NULL;
	err[0] = 0;
	int rc;
	if ((rc = snap_create(&w, path, st, flags, err)) == 0 &&
	    (rc = sel_snapshot_write(sel, w)) == 0 && (rc = plan_snapshot_write(plan, w)) == 0) {
		rc = snap_commit(w, err);
		w = NULL;
	}
	snap_abort(w);
	if (rc < 0 && !err[0])
		errmsg_set(err, SNAP_ERRLEN, rc, "%s",
		           rc == SEL_EINVAL ? "the selector is in no state to be saved"
		                            : sel_strerror(rc));
	return rc;
}

typedef struct {
	Key *keys;
	size_t n, cap;
} KeyList;

static int keep_key(void *ctx, Key k)
{
	KeyList *l = ctx;
	if (array_grow((void **)&l->keys, &l->cap, l->n + 1, sizeof *l->keys, 64))
		return SEL_ENOMEM;
	l->keys[l->n++] = k;
	return 0;
}

int selection_hold(BookDB *db, bool on)
{
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, true);
	if (rc < 0) return rc;
	if ((rc = bookdb_changes_hold(txn, on)) < 0) {
		bookdb_txn_abort(txn);
		return rc;
	}
	return bookdb_txn_commit(txn);
}

int selection_release_all(Selector *sel)
{
	KeyList l = {0};
	int rc = sel_each_leased(sel, keep_key, &l);
	for (size_t i = 0; i < l.n && rc == 0; i++) rc = sel_release(sel, l.keys[i]);
	free(l.keys);
	return rc;
}

int selection_resume(Selector **sel, Plan **plan, BookDB *db, const SelectionSpec *spec,
                     const char *path, bool *restored, char *note, char *err)
{
	*restored = false;
	note[0] = 0;
	if (path && !spec->preload) {
		BookStamp st;
		SnapReader *snap = NULL;
		int rc = bookdb_stamp(&st, db);
		if (rc < 0)
			errmsg_set(note, SNAP_ERRLEN, rc, "the book's stamp: %s",
			           bookdb_strerror(rc));
		else
			rc = snap_open_any(&snap, path, note);
		/* Written since: by a writer the change log can tell of; of the
		 * file the book was written anew from, as this one reads it. */
		BookStamp fst = {0};
		const BookStamp *from = rc == 0 ? &fst : NULL;
		bool carried = rc == 0 && snap_stamp_in(&fst, snap, db);
		bool behind = from && memcmp(from, &st, sizeof st) != 0;
		if (behind && (from->dev != st.dev || from->ino != st.ino))
			rc = errmsg_set(note, SNAP_ERRLEN, SEL_ESTALE, "selector snapshot %s: %s",
			                path, SNAP_OTHER_FILE);
		if (rc == 0) {
			SelCatchUp cu;
			rc = selection_open(sel, plan, db, spec, snap, note);
			if (rc == 0 && behind && (rc = sel_catch_up(*sel, from, &cu, note)) == 0)
				sel_catch_up_note(note, SNAP_ERRLEN, &cu);
			if (rc == 0 && carried) {
				size_t n = strlen(note);
				snprintf(note + n, SNAP_ERRLEN - n, "%s%s", n ? "; " : "",
				         SNAP_CARRIED);
			}
			if (rc == 0 && (rc = selection_release_all(*sel)) < 0)
				errmsg_set(note, SNAP_ERRLEN, rc, "%s", sel_strerror(rc));
			if (rc < 0 && *sel) {
				plan_free(*plan);
				sel_free(*sel);
				*plan = NULL;
				*sel = NULL;
			}
		}
		snap_close(snap);
		if (rc != SEL_ENOSNAP) {
			(void)unlink(path); /* best effort: a stale one is refused */
			(void)selection_hold(db, false);
		}
		if (rc == SEL_ENOSNAP) note[0] = 0;
		if (rc == 0) {
			*restored = true;
			return 0;
		}
	}
	return selection_open(sel, plan, db, spec, NULL, err);
}

uint64_t selection_book_thought(BookDB *db, const Selector *sel, uint64_t uncommitted)
{
	BookTxn *txn = NULL;
	BookCounts c = {0};
	if (bookdb_txn_begin(&txn, db, false) == 0) {
		if (bookdb_counts(&c, txn) < 0) c.kept = false;
		bookdb_txn_abort(txn);
	}
	if (c.kept) return c.thought + uncommitted;
	SelStats ss;
	sel_get_stats(&ss, sel);
	return ss.thought;
}
