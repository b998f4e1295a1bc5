/*
 * bookdb/stats.c — sizes and counts of a book (see stats.h).
 */
#include "bookdb/stats.h"
#include "bookdb/check.h"
#include "shogi/rng.h"
#include "shogi/errmsg.h"
#include "shogi/clock.h"
#include "bookdb/index.h"
#include "bookdb/query.h"
#include "shogi/keymap.h"
#include "shogi/extsort.h"
#include "shogi/memuse.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/movegen.h"

/*
 * The book's keys in memory for the leaf count: a lookup per stored move in
 * LMDB would be a random page access each (minutes on a large book). A key
 * set (shogi/keymap.h) holds each key's hi half, 8 bytes a position: a false
 * "in book" needs a child and a book position with equal 64-bit hi halves,
 * about 2^-64 per pair.
 *
 * Not the snapshot index (bookdb/index.h): nearly every record has a child in
 * the book, and the index finds a present key through a filter word, a
 * directory entry and the key, two or three dependent memory accesses, where
 * the set needs one; on a 10 M synth book the count took 25.5 s through the
 * index, 23.6 s with a set (medians of 3).
 */

/*
 * True when some stored move of rec (at pos, whose legal moves are legal[0..nl))
 * leads to a position in the book. The legal moves are generated once
 * (pos_is_legal would generate them per stored move), and the children's slots
 * are asked for together, so that their memory latencies overlap: joseki stats
 * on a 10 M synth book, 33.0 s -> 23.6 s.
 */
static int children(Key *child, const BookRecord *rec, const Position *pos, const Move *legal,
                    int nl);

static int has_child(const KeyMap *ks, const BookRecord *rec, const Position *pos,
                     const Move *legal, int nl)
{
	Key child[BOOKDB_MAX_MOVES];
	int n = children(child, rec, pos, legal, nl);
	for (int i = 0; i < n; i++) keymap_prefetch(ks, child[i]);
	for (int i = 0; i < n; i++)
		if (keymap_has(ks, child[i])) return 1;
	return 0;
}

/* The whole-book scan: thought, moves, leaves, corrupt (and positions). */

/* Its progress: records read in both passes, of total (twice the records). */
typedef struct {
	BookProgressFn fn;
	void *ctx;
	uint64_t total;
} ScanProgress;

/* Record i of the pass whose records start at base (0, or the records). */
static void scan_tick(const ScanProgress *pg, uint64_t base, uint64_t i)
{
	if (pg->fn && (i & 0xffff) == 0) pg->fn(pg->ctx, base + i, pg->total);
}

/* A join request: the child's key as the pos database orders it (16 bytes,
 * memcmp order), then the number of the record it comes from (u64). */
#define REQ_LEN (16 + 8)

/* The stored moves of rec (at pos, legal moves legal[0..nl)) that are legal,
 * as children's keys into child; returns how many. */
static int children(Key *child, const BookRecord *rec, const Position *pos, const Move *legal,
                    int nl)
{
	int n = 0;
	for (int i = 0; i < rec->nmoves; i++)
		for (int j = 0; j < nl; j++)
			if (legal[j] == rec->moves[i].move) {
				child[n++] = pos_key_after(pos, legal[j]);
				break;
			}
	return n;
}

/* The figures of one record of the scan; 0 when it is sound (rec and pos
 * then hold it, legal its legal moves), -1 when not (counted corrupt). */
static int scan_record(BookStats *st, BookRecord *rec, Position *pos, Move *legal, int *nl, Key key,
                       const uint8_t *val, size_t len)
{
	st->positions++;
	/* thought and moves as the store keeps them: from the head, a record
	 * that is not sound too when its head decodes. */
	BookRecordHead h;
	if (bookdb_record_peek(&h, val, len) == 0) {
		st->thought += (h.flags & BOOKDB_REC_THOUGHT) != 0;
		st->moves += h.nmoves;
	}
	/* Counted corrupt as joseki check would find it (bookdb/check.h). */
	if (bookdb_record_read(rec, pos, legal, nl, key, val, len, NULL) < 0) {
		st->corrupt++;
		return -1;
	}
	st->minimax_seen |= (rec->flags & BOOKDB_REC_MINIMAX) != 0;
	return 0;
}

/*
 * The scan beyond the memory budget: a pass over the records that sends every
 * sound record's children's keys through the external sort, then a pass over
 * the book's keys in order that meets them: a record one of whose children
 * is a book key gets its bit. leaves = sound records without one.
 */
static int scan_join(BookStats *st, BookTxn *txn, BookRecord *rec, Position *pos, uint64_t n,
                     uint64_t memory, const atomic_bool *stop, const ScanProgress *pg)
{
	BookIter *it = NULL;
	ExtSort *xs = NULL;
	Key key;
	const uint8_t *val;
	size_t len;
	uint64_t sound = 0;
	uint8_t *bit = calloc(n / 8 + 1, 1);
	uint64_t share = memory > n / 8 ? memory - n / 8 : 0;
	int rc = BOOKDB_ENOMEM;
	if (!bit || extsort_open(&xs, NULL, share, extsort_cmp_bytes, (void *)(uintptr_t)16))
		goto out;
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (stop && (st->positions & 0xffff) == 0 && atomic_load(stop)) {
			rc = BOOKDB_ESTOPPED;
			break;
		}
		uint64_t seq = st->positions;
		scan_tick(pg, 0, seq);
		Move legal[MOVEGEN_MAX];
		int nl;
		if (seq >= n) { /* more records than the snapshot's count */
			rc = BOOKDB_ECORRUPT;
			break;
		}
		if (scan_record(st, rec, pos, legal, &nl, key, val, len) < 0) continue;
		sound++;
		Key child[BOOKDB_MAX_MOVES];
		int k = children(child, rec, pos, legal, nl);
		for (int i = 0; i < k && rc == 1; i++) {
			uint8_t r[REQ_LEN];
			bookdb_key_bytes(child[i], r);
			memcpy(r + 16, &seq, 8);
			if (extsort_add(xs, r, sizeof r)) rc = BOOKDB_EIO;
		}
		if (rc != 1) break;
	}
	bookdb_iter_free(it);
	it = NULL;
	if (rc < 0) goto out;
	if (extsort_finish(xs)) {
		rc = BOOKDB_EIO;
		goto out;
	}
	/* The book's keys in their order against the requests in theirs. */
	const void *req;
	size_t rl;
	int more = extsort_next(xs, &req, &rl);
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	uint64_t seen = 0;
	while (more == 1 && (rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (stop && (++seen & 0xffff) == 0 && atomic_load(stop)) {
			rc = BOOKDB_ESTOPPED;
			break;
		}
		scan_tick(pg, n, seen);
		uint8_t kb[16];
		bookdb_key_bytes(key, kb);
		while (more == 1 && memcmp(req, kb, 16) < 0) more = extsort_next(xs, &req, &rl);
		while (more == 1 && memcmp(req, kb, 16) == 0) {
			uint64_t seq;
			memcpy(&seq, (const uint8_t *)req + 16, 8);
			if (seq < n) bit[seq / 8] |= (uint8_t)(1u << (seq % 8));
			more = extsort_next(xs, &req, &rl);
		}
	}
	if (more < 0) rc = BOOKDB_EIO;
	if (rc < 0) goto out;
	uint64_t with_child = 0;
	for (uint64_t i = 0; i < n / 8 + 1; i++) with_child += (uint64_t)__builtin_popcount(bit[i]);
	st->leaves = sound - with_child;
	rc = 0;
out:
	if (xs) {
		ExtSortStats xst;
		extsort_stats(xs, &xst);
		st->sorted_bytes = xst.disk_bytes;
	}
	bookdb_iter_free(it);
	extsort_free(xs);
	free(bit);
	return rc < 0 ? rc : 0;
}

static int scan(BookStats *st, BookTxn *txn, BookRecord *rec, Position *pos,
                const atomic_bool *stop, uint64_t memory, ScanProgress *pg)
{
	BookIter *it = NULL;
	uint64_t n = 0;
	KeyMap ks;
	Key key;
	const uint8_t *val;
	size_t len;
	keymap_init_set(&ks, false);
	int rc = bookdb_count(&n, txn, BOOKDB_POS);
	if (rc) return rc;
	pg->total = 2 * n;
	/* The key set: 8 bytes a key at a load of at most a half, and its filter. */
	if (n > SIZE_MAX / 32 || n * 24 > memory)
		return scan_join(st, txn, rec, pos, n, memory, stop, pg);
	if (keymap_reserve(&ks, NULL, (size_t)n)) return BOOKDB_ENOMEM;
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	/* (A damaged database stops this first pass: positions says how far.) */
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (keymap_add(&ks, key, NULL) < 0) {
			rc = BOOKDB_ENOMEM;
			break;
		}
		scan_tick(pg, 0, st->positions++);
	}
	bookdb_iter_free(it);
	it = NULL;
	if (rc < 0) goto out;
	st->positions = 0;
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (stop && (st->positions & 0xffff) == 0 && atomic_load(stop)) {
			rc = BOOKDB_ESTOPPED;
			break;
		}
		scan_tick(pg, n, st->positions);
		Move legal[MOVEGEN_MAX];
		int nl;
		if (scan_record(st, rec, pos, legal, &nl, key, val, len) < 0) continue;
		if (!has_child(&ks, rec, pos, legal, nl)) st->leaves++;
	}
out:
	bookdb_iter_free(it);
	keymap_free(&ks);
	return rc < 0 ? rc : 0;
}

static int stats_run(BookStats *st, BookDB *db, BookTxn *txn, bool full, const atomic_bool *stop,
                     uint64_t memory, BookProgressFn progress, void *ctx);

int bookdb_stats(BookStats *st, BookDB *db, BookTxn *txn, bool full)
{
	return bookdb_stats_until(st, db, txn, full, NULL);
}

int bookdb_stats_until(BookStats *st, BookDB *db, BookTxn *txn, bool full, const atomic_bool *stop)
{
	return bookdb_stats_budget(st, db, txn, full, stop, 0);
}

int bookdb_stats_budget(BookStats *st, BookDB *db, BookTxn *txn, bool full, const atomic_bool *stop,
                        uint64_t memory)
{
	return stats_run(st, db, txn, full, stop, memory, NULL, NULL);
}

int bookdb_stats_scan(BookStats *st, BookDB *db, BookTxn *txn, const atomic_bool *stop,
                      uint64_t memory, BookProgressFn progress, void *ctx)
{
	return stats_run(st, db, txn, true, stop, memory, progress, ctx);
}

static int stats_run(BookStats *st, BookDB *db, BookTxn *txn, bool full, const atomic_bool *stop,
                     uint64_t memory, BookProgressFn progress, void *ctx)
{
	memset(st, 0, sizeof *st);
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	int rc = BOOKDB_ENOMEM;
	if (!rec || !pos) goto done;
	st->scanned = full;
	st->txnid = bookdb_txn_id(txn);
	if ((rc = bookdb_counts(&st->counts, txn))) goto done;
	if (full) {
		st->leaves_time = (int64_t)time(NULL);
		ScanProgress pg = {progress, ctx, 0};
		rc = scan(st, txn, rec, pos, stop, memory ? memory : memuse_default_budget(), &pg);
		st->counts_known = st->leaves_known = st->leaves_current = true;
	} else {
		/* Read, not counted: the kept counts and the last scan's. */
		BookScanKept last;
		if ((rc = bookdb_count(&st->positions, txn, BOOKDB_POS)) ||
		    (rc = bookdb_scan_get(&last, txn)))
			goto done;
		st->counts_known = st->counts.kept;
		st->thought = st->counts.thought;
		st->moves = st->counts.moves;
		st->leaves_known = last.known;
		st->leaves_current = last.current;
		st->leaves_time = last.time;
		st->leaves = last.leaves;
		st->corrupt = last.corrupt;
	}
	if (rc < 0) goto done;
	if ((rc = bookdb_count(&st->games, txn, BOOKDB_GAMES))) goto done;
	if ((rc = bookdb_changes_info(&st->changes, txn))) goto done;
	/* How many valued positions the last minimax run found on or above cycles. */
	const void *mv;
	size_t ml;
	if (bookdb_kv_get(&mv, &ml, txn, BOOKDB_META, BOOKDB_META_MINIMAX,
	                  strlen(BOOKDB_META_MINIMAX)) == 0) {
		json_t *j = json_loadb(mv, ml, 0, NULL);
		json_t *c = j ? json_object_get(j, "cyclic") : NULL;
		if (json_is_integer(c)) {
			st->cyclic = (long long)json_integer_value(c);
			st->cyclic_known = 1;
		}
		json_decref(j);
	}
	for (int d = 0; d < BOOKDB_NDBS; d++) {
		uint64_t pages;
		unsigned psize;
		if ((rc = bookdb_pages(&pages, &psize, txn, (BookDbName)d))) goto done;
		st->bytes_used += pages * psize;
	}
	st->bytes = bookdb_file_size(db);
	if ((rc = bookdb_space(&st->space, txn))) goto done;
	pos_set_startpos(pos);
	if (bookdb_get(rec, txn, pos_key(pos)) == 0 && (rec->flags & BOOKDB_REC_MINIMAX))
		st->root_known = bookdb_position_value(&st->root_value, rec);
	rc = 0;
done:
	free(rec);
	free(pos);
	return rc;
}

int bookdb_stats_keep(BookDB *db, const BookStats *st, bool *differed)
{
	BookTxn *w;
	BookScanKept s = {.time = st->leaves_time,
	                  .seq = st->changes.seq,
	                  .leaves = st->leaves,
	                  .corrupt = st->corrupt};
	*differed = st->scanned && st->counts.kept &&
	            (st->counts.thought != st->thought || st->counts.moves != st->moves);
	int rc = bookdb_txn_begin(&w, db, true);
	if (rc) return rc;
	/* Counts that disagree with the records are dropped: the commit counts
	 * them again (bookdb.h, "Kept counts"). */
	if ((rc = bookdb_scan_put(w, st->txnid, &s)) ||
	    (*differed && (rc = bookdb_kv_del(w, BOOKDB_META, "counts", 6)) < 0 &&
	     rc != BOOKDB_ENOTFOUND)) {
		bookdb_txn_abort(w);
		return rc;
	}
	return bookdb_txn_commit(w);
}

json_t *bookdb_stats_json(const BookStats *st)
{
	double bpp = st->positions ? (double)st->bytes_used / st->positions : 0;
	json_t *o = json_object();
	if (!o) return NULL;
		/* What is not known is null: thought and moves of a book whose counts
		 * are not kept, leaves and corrupt before the first scan. */
#define KNOWN(k, v) ((k) ? json_integer((json_int_t)(v)) : json_null())
	json_object_set_new(o, "positions", json_integer((json_int_t)st->positions));
	json_object_set_new(o, "thought", KNOWN(st->counts_known, st->thought));
	json_object_set_new(o, "moves", KNOWN(st->counts_known, st->moves));
	json_object_set_new(o, "games", json_integer((json_int_t)st->games));
	json_object_set_new(o, "leaves", KNOWN(st->leaves_known, st->leaves));
	json_object_set_new(o, "cyclic", st->cyclic_known ? json_integer(st->cyclic) : json_null());
	json_object_set_new(o, "root_value",
	                    st->root_known ? json_integer(st->root_value) : json_null());
	json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
	json_object_set_new(o, "bytes_used", json_integer((json_int_t)st->bytes_used));
	json_object_set_new(o, "bytes_per_position", json_real(bpp));
	json_object_set_new(o, "page_size", json_integer(st->space.page_size));
	json_object_set_new(o, "pages_used", json_integer((json_int_t)st->space.pages_used));
	json_object_set_new(o, "pages_free", json_integer((json_int_t)st->space.pages_free));
	json_object_set_new(o, "corrupt", KNOWN(st->leaves_known, st->corrupt));
	json_object_set_new(o, "changes", json_integer((json_int_t)st->changes.entries));
	json_object_set_new(o, "changes_hold",
	                    st->changes.held ? json_integer((json_int_t)st->changes.hold)
	                                     : json_null());
	json_object_set_new(o, "counts_kept", json_boolean(st->counts.kept));
	json_object_set_new(o, "leaves_at", KNOWN(st->leaves_known, st->leaves_time));
	json_object_set_new(o, "leaves_current",
	                    st->leaves_known ? json_boolean(st->leaves_current) : json_null());
#undef KNOWN
	return o;
}

/* ---- the lookup benchmark (stats --bench-lookups) ---- */

/* What one timed run of lookups reads through. */
typedef enum { VIA_LMDB, VIA_LMDB_FULL, VIA_INDEX, VIA_INDEX_FULL } Via;

static const char *const VIA_NAME[] = {"lookups", "lookups_full", "index_lookups",
                                       "index_lookups_full"};

/* Times n lookups of keys[0..want) over and over into *t. */
static int time_lookups(BookLookupTime *t, Via via, BookTxn *txn, const BookIndex *ix,
                        BookRecord *rec, const Key *keys, uint64_t want, uint64_t n, char *err)
{
	double t0 = clock_ms_f(), c0 = clock_cpu_ms();
	uint64_t found = 0, done = 0;
	while (done < n) {
		for (uint64_t i = 0; i < want && done < n; i++, done++) {
			int rc;
			switch (via) {
			case VIA_LMDB:
				rc = bookdb_get_moves(rec, txn, keys[i]);
				break;
			case VIA_LMDB_FULL:
				rc = bookdb_get(rec, txn, keys[i]);
				break;
			case VIA_INDEX:
				rc = bookdb_index_get_moves(rec, ix, keys[i]);
				break;
			default:
				rc = bookdb_index_get(rec, ix, keys[i]);
				break;
			}
			found += rc == 0 && rec->nmoves < BOOKDB_MAX_MOVES;
		}
	}
	t->name = VIA_NAME[via];
	t->n = n;
	t->ms = clock_ms_f() - t0;
	t->cpu_ms = clock_cpu_ms() - c0;
	if (found != n)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ECORRUPT,
		                  "%llu of %llu lookups failed", (unsigned long long)(n - found),
		                  (unsigned long long)n);
	return 0;
}

int bookdb_bench_lookups(BookLookupBench *out, BookTxn *txn, BookRecord *rec, uint64_t n, char *err)
{
	memset(out, 0, sizeof *out);
	if (err) err[0] = 0;
	uint64_t total = 0, seen = 0, rng = 12345;
	int rc = bookdb_count(&total, txn, BOOKDB_POS);
	if (rc) return errmsg_set(err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
	if (total == 0 || n == 0)
		return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_EINVAL,
		                  "the book is empty, nothing to look up");
	uint64_t want = n < total ? n : total;
	Key *keys = malloc(want * sizeof *keys);
	BookIter *it = NULL;
	BookIndex *ix = NULL;
	if (!keys) return errmsg_set(err, BOOKDB_ERRLEN, BOOKDB_ENOMEM, "out of memory");
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	Key key;
	const uint8_t *val;
	size_t len;
	/* Reservoir sample, which also warms the book's pages. */
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (seen < want)
			keys[seen] = key;
		else {
			uint64_t j = rng_next(&rng) % (seen + 1);
			if (j < want) keys[j] = key;
		}
		seen++;
	}
	if (rc < 0) goto out;
	for (uint64_t i = want; i > 1; i--) {
		uint64_t j = rng_next(&rng) % i;
		Key t = keys[i - 1];
		keys[i - 1] = keys[j];
		keys[j] = t;
	}
	/* Moves only (what query and selection need: they know the position),
	 * then the whole record with the position unpacked; through LMDB, then
	 * through a snapshot index, whose build is part of its price. */
	for (Via via = VIA_LMDB; via <= VIA_LMDB_FULL; via++)
		if ((rc = time_lookups(&out->via[via], via, txn, NULL, rec, keys, want, n, err)))
			goto out;
	double t0 = clock_ms_f(), c0 = clock_cpu_ms();
	if ((rc = bookdb_index_build(&ix, txn))) {
		errmsg_set(err, BOOKDB_ERRLEN, rc, "index: %s", bookdb_strerror(rc));
		goto out;
	}
	out->index_ms = clock_ms_f() - t0;
	out->index_cpu_ms = clock_cpu_ms() - c0;
	out->index_positions = bookdb_index_count(ix);
	out->index_bytes = bookdb_index_bytes(ix);
	for (Via via = VIA_INDEX; via <= VIA_INDEX_FULL; via++)
		if ((rc = time_lookups(&out->via[via], via, txn, ix, rec, keys, want, n, err)))
			goto out;
	rc = 0;
out:
	if (rc < 0 && err && !err[0]) errmsg_set(err, BOOKDB_ERRLEN, rc, "%s", bookdb_strerror(rc));
	bookdb_index_free(ix);
	bookdb_iter_free(it);
	free(keys);
	return rc;
}
