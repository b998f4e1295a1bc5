/*
 * joseki stats BOOK [--json] [--bench-lookups N]
 *
 * Sizes and counts (CONTRACT.md): positions, thought, moves, games, leaves
 * (positions none of whose stored moves leads to a position in the book),
 * cyclic (as of the last minimax run) and root_value (null until minimax has run), bytes (data file size),
 * plus bytes_used (pages in use), bytes_per_position and changes (entries in
 * the change log, docs/bookdb.md).
 *
 * --bench-lookups N (for tools/bench_bookdb.sh): instead, samples N keys of the
 * book, then times N random point lookups in one read transaction on the warm
 * book, and prints "lookups N time_ms T lookups_per_s R cpu_ms C
 * lookups_per_cpu_s RC" (get + decode of the
 * moves, what query and selection do) and "lookups_full ..." (get + decode of
 * the whole record, position unpacked too); then builds a snapshot index
 * (bookdb/index.h), prints "index_build COUNT time_ms T cpu_ms C bytes B", and
 * times the same lookups through it: "index_lookups ...", "index_lookups_full
 * ...", fields as above.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bookdb/bookdb.h"
#include "bookdb/index.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tools/commands.h"

typedef struct {
	uint64_t positions, thought, moves, games, leaves, corrupt, bytes, bytes_used;
	BookSpace space;
	BookChangesInfo changes;
	int minimax_seen, root_known;
	int root_value;
	int cyclic_known;   /* meta "minimax" (the last run's summary) says how many */
	long long cyclic;
} BookStats;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The book's keys in memory for the leaf count: a lookup per stored move in
 * LMDB would be a random page access each (minutes on a large book). Slots hold
 * key.hi (0 stands for empty, so hi 0 is stored as 1) at a position derived
 * from key.lo: a false "in book" needs a child and a book position with equal
 * 64-bit hi halves, about 2^-64 per pair. 8 bytes a position.
 *
 * Not the snapshot index (bookdb/index.h): nearly every record has a child in
 * the book, and the index finds a present key through a filter word, a
 * directory entry and the key, two or three dependent memory accesses, where
 * this set needs one; on a 10 M synth book the count took 25.5 s through the
 * index, 23.6 s here (medians of 3).
 */
typedef struct {
	uint64_t *slot;
	size_t mask;
} KeySet;

/* The slot where the search for k starts. */
static size_t keyset_home(const KeySet *ks, Key k)
{
	return (size_t)(k.lo * 0x9e3779b97f4a7c15ULL >> 20) & ks->mask;
}

static size_t keyset_pos(const KeySet *ks, Key k, uint64_t *tag)
{
	*tag = k.hi ? k.hi : 1;
	size_t i = keyset_home(ks, k);
	while (ks->slot[i] && ks->slot[i] != *tag) i = (i + 1) & ks->mask;
	return i;
}

static int keyset_has(const KeySet *ks, Key k)
{
	uint64_t tag;
	return ks->slot[keyset_pos(ks, k, &tag)] != 0;
}

/*
 * True when some stored move of rec leads to a position in the book. The legal
 * moves are generated once (pos_is_legal would generate them per stored move),
 * and the children's slots are asked for together, so that their memory
 * latencies overlap: joseki stats on a 10 M synth book, 33.0 s -> 23.6 s.
 */
static int has_child(const KeySet *ks, const BookRecord *rec, Position *pos)
{
	Move legal[MOVEGEN_MAX];
	Key child[BOOKDB_MAX_MOVES];
	int n = 0;
	if (bookdb_record_position(pos, rec, NULL) < 0) return 0;
	int nl = movegen_legal(pos, legal);
	for (int i = 0; i < rec->nmoves; i++)
		for (int j = 0; j < nl; j++)
			if (legal[j] == rec->moves[i].move) {
				child[n++] = pos_key_after(pos, legal[j]);
				break;
			}
	for (int i = 0; i < n; i++) __builtin_prefetch(&ks->slot[keyset_home(ks, child[i])]);
	for (int i = 0; i < n; i++)
		if (keyset_has(ks, child[i])) return 1;
	return 0;
}

static int collect(BookStats *st, BookDB *db, BookTxn *txn, BookRecord *rec, Position *pos)
{
	BookIter *it = NULL;
	uint64_t n = 0;
	KeySet ks = {0};
	Key key;
	const uint8_t *val;
	size_t len;
	int rc = bookdb_count(&n, txn, BOOKDB_POS);
	if (rc) return rc;
	size_t nslots = 1024;
	while (nslots < n * 2) nslots *= 2;
	if (!(ks.slot = calloc(nslots, sizeof *ks.slot))) return BOOKDB_ENOMEM;
	ks.mask = nslots - 1;
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		uint64_t tag;
		size_t at = keyset_pos(&ks, key, &tag); /* sets tag: call before reading it */
		ks.slot[at] = tag;
	}
	bookdb_iter_free(it);
	it = NULL;
	if (rc < 0 || (rc = bookdb_iter_open(&it, txn))) goto out;
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		st->positions++;
		if (bookdb_record_decode(rec, val, len)) {
			st->corrupt++;
			continue;
		}
		st->thought += (rec->flags & BOOKDB_REC_THOUGHT) != 0;
		st->minimax_seen |= (rec->flags & BOOKDB_REC_MINIMAX) != 0;
		st->moves += rec->nmoves;
		if (!has_child(&ks, rec, pos)) st->leaves++;
	}
out:
	bookdb_iter_free(it);
	free(ks.slot);
	if (rc < 0) return rc;
	if ((rc = bookdb_count(&st->games, txn, BOOKDB_GAMES))) return rc;
	if ((rc = bookdb_changes_info(&st->changes, txn))) return rc;
	/* How many valued positions the last minimax run found on or above cycles. */
	const void *mv;
	size_t ml;
	if (bookdb_kv_get(&mv, &ml, txn, BOOKDB_META, "minimax", 7) == 0) {
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
		if ((rc = bookdb_pages(&pages, &psize, txn, (BookDbName)d))) return rc;
		st->bytes_used += pages * psize;
	}
	st->bytes = bookdb_file_size(db);
	if ((rc = bookdb_space(&st->space, txn))) return rc;
	pos_set_startpos(pos);
	if (bookdb_get(rec, txn, pos_key(pos)) == 0 && (rec->flags & BOOKDB_REC_MINIMAX) &&
	    rec->nmoves > 0) {
		st->root_known = 1;
		st->root_value = rec->moves[0].value;
		for (int i = 1; i < rec->nmoves; i++)
			if (rec->moves[i].value > st->root_value) st->root_value = rec->moves[i].value;
	}
	return 0;
}

/* CPU time of this process: on a shared machine the fair "one core" figure. */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* What one timed run of lookups reads through. */
typedef enum { VIA_LMDB, VIA_LMDB_FULL, VIA_INDEX, VIA_INDEX_FULL } Via;

static const char *const VIA_NAME[] = {"lookups", "lookups_full", "index_lookups",
				       "index_lookups_full"};

/* Times n lookups of keys[0..want) over and over and prints one line. */
static int time_lookups(Via via, BookTxn *txn, const BookIndex *ix, BookRecord *rec,
			const Key *keys, uint64_t want, uint64_t n)
{
	double t0 = now_ms(), c0 = cpu_ms();
	uint64_t found = 0, done = 0;
	while (done < n) {
		for (uint64_t i = 0; i < want && done < n; i++, done++) {
			int rc;
			switch (via) {
			case VIA_LMDB: rc = bookdb_get_moves(rec, txn, keys[i]); break;
			case VIA_LMDB_FULL: rc = bookdb_get(rec, txn, keys[i]); break;
			case VIA_INDEX: rc = bookdb_index_get_moves(rec, ix, keys[i]); break;
			default: rc = bookdb_index_get(rec, ix, keys[i]); break;
			}
			found += rc == 0 && rec->nmoves < BOOKDB_MAX_MOVES;
		}
	}
	double ms = now_ms() - t0, cms = cpu_ms() - c0;
	if (found != n) {
		joseki_error("stats: %llu of %llu lookups failed", (unsigned long long)(n - found),
			     (unsigned long long)n);
		return BOOKDB_ECORRUPT;
	}
	printf("%s %llu time_ms %.0f lookups_per_s %.0f cpu_ms %.0f lookups_per_cpu_s %.0f\n",
	       VIA_NAME[via], (unsigned long long)n, ms, ms > 0 ? n / (ms / 1e3) : 0.0, cms,
	       cms > 0 ? n / (cms / 1e3) : 0.0);
	return 0;
}

static int bench_lookups(BookTxn *txn, BookRecord *rec, uint64_t n)
{
	uint64_t total = 0, seen = 0, rng = 12345;
	int rc = bookdb_count(&total, txn, BOOKDB_POS);
	if (rc) return rc;
	if (total == 0) {
		joseki_error("stats: the book is empty, nothing to look up");
		return BOOKDB_EINVAL;
	}
	uint64_t want = n < total ? n : total;
	Key *keys = malloc(want * sizeof *keys);
	BookIter *it = NULL;
	BookIndex *ix = NULL;
	if (!keys) return BOOKDB_ENOMEM;
	if ((rc = bookdb_iter_open(&it, txn))) goto out;
	Key key;
	const uint8_t *val;
	size_t len;
	/* Reservoir sample, which also warms the book's pages. */
	while ((rc = bookdb_iter_next(it, &key, &val, &len)) == 1) {
		if (seen < want) keys[seen] = key;
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
		if ((rc = time_lookups(via, txn, NULL, rec, keys, want, n))) goto out;
	double t0 = now_ms(), c0 = cpu_ms();
	if ((rc = bookdb_index_build(&ix, txn))) goto out;
	double ms = now_ms() - t0, cms = cpu_ms() - c0;
	printf("index_build %llu time_ms %.0f cpu_ms %.0f bytes %zu\n",
	       (unsigned long long)bookdb_index_count(ix), ms, cms, bookdb_index_bytes(ix));
	for (Via via = VIA_INDEX; via <= VIA_INDEX_FULL; via++)
		if ((rc = time_lookups(via, txn, ix, rec, keys, want, n))) goto out;
	rc = 0;
out:
	bookdb_index_free(ix);
	bookdb_iter_free(it);
	free(keys);
	return rc;
}

int cmd_stats(int argc, char **argv)
{
	const char *book = NULL;
	int json = 0;
	long long bench = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) json = 1;
		else if (!strcmp(argv[i], "--bench-lookups") && i + 1 < argc) bench = atoll(argv[++i]);
		else if (argv[i][0] != '-' && !book) book = argv[i];
		else {
			joseki_error("stats: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book || bench < 0) {
		joseki_error("usage: joseki stats BOOK [--json] [--bench-lookups N]");
		return 2;
	}
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	int ret = 1, rc;
	BookStats st = {0};
	BookDBOptions opt = {.read_only = true};
	if ((rc = bookdb_open(&db, book, &opt, err))) {
		joseki_error("%s", err);
		goto done;
	}
	if (!rec || !pos || (rc = bookdb_txn_begin(&txn, db, false))) {
		joseki_error("%s: %s", book, rc ? bookdb_strerror(rc) : "out of memory");
		goto done;
	}
	if (bench) {
		if ((rc = bench_lookups(txn, rec, (uint64_t)bench))) {
			if (rc != BOOKDB_EINVAL && rc != BOOKDB_ECORRUPT)
				joseki_error("%s: %s", book, bookdb_strerror(rc));
			goto done;
		}
		ret = 0;
		goto done;
	}
	if ((rc = collect(&st, db, txn, rec, pos))) {
		joseki_error("%s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	double bpp = st.positions ? (double)st.bytes_used / st.positions : 0;
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "positions", json_integer((json_int_t)st.positions));
		json_object_set_new(o, "thought", json_integer((json_int_t)st.thought));
		json_object_set_new(o, "moves", json_integer((json_int_t)st.moves));
		json_object_set_new(o, "games", json_integer((json_int_t)st.games));
		json_object_set_new(o, "leaves", json_integer((json_int_t)st.leaves));
		json_object_set_new(o, "cyclic", st.cyclic_known ? json_integer(st.cyclic) : json_null());
		json_object_set_new(o, "root_value",
				    st.root_known ? json_integer(st.root_value) : json_null());
		json_object_set_new(o, "bytes", json_integer((json_int_t)st.bytes));
		json_object_set_new(o, "bytes_used", json_integer((json_int_t)st.bytes_used));
		json_object_set_new(o, "bytes_per_position", json_real(bpp));
		json_object_set_new(o, "page_size", json_integer(st.space.page_size));
		json_object_set_new(o, "pages_used", json_integer((json_int_t)st.space.pages_used));
		json_object_set_new(o, "pages_free", json_integer((json_int_t)st.space.pages_free));
		json_object_set_new(o, "corrupt", json_integer((json_int_t)st.corrupt));
		json_object_set_new(o, "changes", json_integer((json_int_t)st.changes.entries));
		if (joseki_print_json(o, JSON_REAL_PRECISION(6)) < 0) goto done;
	} else {
		printf("positions          %llu\n", (unsigned long long)st.positions);
		printf("thought            %llu\n", (unsigned long long)st.thought);
		printf("moves              %llu\n", (unsigned long long)st.moves);
		printf("games              %llu\n", (unsigned long long)st.games);
		printf("leaves             %llu\n", (unsigned long long)st.leaves);
		if (st.cyclic_known) printf("cyclic             %lld (as of the last minimax run)\n", st.cyclic);
		if (st.root_known) printf("root_value         %d\n", st.root_value);
		else printf("root_value         - (minimax not run)\n");
		printf("bytes              %llu\n", (unsigned long long)st.bytes);
		printf("bytes_used         %llu\n", (unsigned long long)st.bytes_used);
		printf("bytes_per_position %.1f\n", bpp);
		printf("pages              %llu used, %llu free (%u bytes each; joseki compact returns "
		       "the free ones)\n",
		       (unsigned long long)st.space.pages_used, (unsigned long long)st.space.pages_free,
		       st.space.page_size);
		static const char *const tracking[] = {"tracking off", "tracking on", "overflowed"};
		printf("changes            %llu (%s)\n", (unsigned long long)st.changes.entries,
		       tracking[st.changes.state]);
		if (st.corrupt) printf("corrupt            %llu (run joseki check)\n", (unsigned long long)st.corrupt);
	}
	ret = 0;
done:
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}
