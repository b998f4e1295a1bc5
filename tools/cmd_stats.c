/*
 * joseki stats BOOK [--json] [--bench-lookups N]
 *
 * Sizes and counts (docs/bookdb.md): positions, thought, moves, games, leaves
 * (positions none of whose stored moves leads to a position in the book),
 * cyclic (as of the last minimax run) and root_value (null until minimax has run), bytes (data file
 * size), plus bytes_used (pages in use), bytes_per_position and changes (entries in the change log,
 * docs/bookdb.md).
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

#include "shogi/clock.h"
#include "bookdb/bookdb.h"
#include "bookdb/index.h"
#include "bookdb/stats.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tools/commands.h"

/* CPU time of this process: on a shared machine the fair "one core" figure. */
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
	double ms = clock_ms_f() - t0, cms = clock_cpu_ms() - c0;
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
		if ((rc = time_lookups(via, txn, NULL, rec, keys, want, n))) goto out;
	double t0 = clock_ms_f(), c0 = clock_cpu_ms();
	if ((rc = bookdb_index_build(&ix, txn))) goto out;
	double ms = clock_ms_f() - t0, cms = clock_cpu_ms() - c0;
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
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--bench-lookups") && i + 1 < argc)
			bench = atoll(argv[++i]);
		else if (argv[i][0] != '-' && !book)
			book = argv[i];
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
	if ((rc = bookdb_stats(&st, db, txn, true))) {
		joseki_error("%s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	double bpp = st.positions ? (double)st.bytes_used / st.positions : 0;
	if (json) {
		if (joseki_print_json(bookdb_stats_json(&st), JSON_REAL_PRECISION(6)) < 0)
			goto done;
	} else {
		printf("positions          %llu\n", (unsigned long long)st.positions);
		printf("thought            %llu\n", (unsigned long long)st.thought);
		printf("moves              %llu\n", (unsigned long long)st.moves);
		printf("games              %llu\n", (unsigned long long)st.games);
		printf("leaves             %llu\n", (unsigned long long)st.leaves);
		if (st.cyclic_known)
			printf("cyclic             %lld (as of the last minimax run)\n", st.cyclic);
		if (st.root_known)
			printf("root_value         %d\n", st.root_value);
		else
			printf("root_value         - (minimax not run)\n");
		printf("bytes              %llu\n", (unsigned long long)st.bytes);
		printf("bytes_used         %llu\n", (unsigned long long)st.bytes_used);
		printf("bytes_per_position %.1f\n", bpp);
		printf("pages              %llu used, %llu free (%u bytes each; joseki compact "
		       "returns "
		       "the free ones)\n",
		       (unsigned long long)st.space.pages_used,
		       (unsigned long long)st.space.pages_free, st.space.page_size);
		static const char *const tracking[] = {"tracking off", "tracking on", "overflowed"};
		printf("changes            %llu (%s)\n", (unsigned long long)st.changes.entries,
		       tracking[st.changes.state]);
		if (st.corrupt)
			printf("corrupt            %llu (run joseki check)\n",
			       (unsigned long long)st.corrupt);
	}
	ret = 0;
done:
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}
