/*
 * joseki stats BOOK [--json] [--scan [--memory SIZE] [--quiet]] [--bench-lookups N]
 *
 * Sizes and counts (docs/bookdb.md): positions, thought, moves, games, leaves
 * (positions none of whose stored moves leads to a position in the book),
 * cyclic (as of the last minimax run) and root_value (null until minimax has
 * run), bytes (data file size), plus bytes_used (pages in use),
 * bytes_per_position and changes (entries in the change log, docs/bookdb.md).
 * By default read, not counted, whatever the book's size: thought and moves
 * are the counts the store keeps, leaves and corrupt the last scan's. --scan
 * counts them over every record, and keeps leaves and corrupt in the book
 * (when it can be written), with a progress line on a terminal (not with
 * --quiet): "stats: pass P of 2: N of M records (X%)".
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
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/bookdb.h"
#include "bookdb/stats.h"
#include "shogi/bigmem.h"
#include "shogi/movegen.h"
#include "shogi/position.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

static void print_lookups(const BookLookupTime *t)
{
	printf("%s %llu time_ms %.0f lookups_per_s %.0f cpu_ms %.0f lookups_per_cpu_s %.0f\n",
	       t->name, (unsigned long long)t->n, t->ms, t->ms > 0 ? t->n / (t->ms / 1e3) : 0.0,
	       t->cpu_ms, t->cpu_ms > 0 ? t->n / (t->cpu_ms / 1e3) : 0.0);
}

/* The leaves line: counted now, or when the last scan counted them. */
static void print_leaves(const BookStats *st, bool full, bool kept, const char *keep_err)
{
	if (!st->leaves_known) {
		printf("leaves             - (not counted yet: joseki stats --scan)\n");
		return;
	}
	if (full) {
		printf("leaves             %llu (counted now; %s)\n",
		       (unsigned long long)st->leaves, kept ? "kept in the book" : "not kept");
		if (!kept && keep_err[0]) printf("                   (%s)\n", keep_err);
		return;
	}
	char when[64] = "?";
	time_t t = (time_t)st->leaves_time;
	struct tm tm;
	if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
	printf("leaves             %llu (as of the scan of %s; %s)\n",
	       (unsigned long long)st->leaves, when,
	       st->leaves_current ? "nothing written since" : "written since: joseki stats --scan");
}

/* The scan's progress line over its two passes (total: twice the records). */
static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	uint64_t n = total / 2;
	joseki_progress_every(ctx, done < n ? "stats: pass 1 of 2: " : "stats: pass 2 of 2: ",
	                      done < n ? done : done - n, n);
}

int cmd_stats(int argc, char **argv)
{
	const char *book = NULL;
	bool json = false, full = false, quiet = false;
	uint64_t bench = 0, memory = 0;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_FLAG("--json", &json, "one JSON object"),
	    CLI_FLAG("--scan", &full,
	             "count thought, moves, leaves and corrupt over every record, and keep leaves "
	             "and corrupt in the book (by default they are read: the kept counts, the last "
	             "scan's)"),
	    CLI_FN("--memory", &memory, cli_parse_memory, "SIZE",
	           "a size such as 256M or 8G, at least 1M",
	           "memory the scan may use (default a quarter of " CLI_MEMORY_MAY_HAVE
	           "): past it, leaves are counted by sorted runs on disk",
	           .needs = "--scan"),
	    CLI_FLAG("--quiet", &quiet, "no progress line (the scan's, on a terminal)",
	             .needs = "--scan"),
	    CLI_NUM("--bench-lookups", &bench, 0, LLONG_MAX, "N",
	            "time N random lookups instead of the figures (tools/bench_bookdb.sh; default: "
	            "none)"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"stats", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	BookRecord *rec = malloc(sizeof *rec);
	Position *pos = malloc(sizeof *pos);
	int ret = 1, rc;
	BookStats st = {0};
	/* Read at random: passes read ahead themselves (bookdb.h). */
	BookDBOptions opt = {.read_only = true, .random = true},
	              rw = {.must_exist = true, .random = true};
	char keep_err[BOOKDB_ERRLEN] = "";
	bool kept = false;
	if ((rc = bookdb_open(&db, book, &opt, err))) {
		joseki_error("stats: %s", err);
		goto done;
	}
	if (!rec || !pos || (rc = bookdb_txn_begin(&txn, db, false))) {
		joseki_error("stats: %s: %s", book, rc ? bookdb_strerror(rc) : "out of memory");
		goto done;
	}
	if (bench) {
		BookLookupBench lb;
		char berr[BOOKDB_ERRLEN];
		if ((rc = bookdb_bench_lookups(&lb, txn, rec, (uint64_t)bench, berr))) {
			joseki_error("stats: %s: %s", book, berr);
			goto done;
		}
		print_lookups(&lb.via[0]);
		print_lookups(&lb.via[1]);
		printf("index_build %llu time_ms %.0f cpu_ms %.0f bytes %zu\n",
		       (unsigned long long)lb.index_positions, lb.index_ms, lb.index_cpu_ms,
		       lb.index_bytes);
		print_lookups(&lb.via[2]);
		print_lookups(&lb.via[3]);
		ret = 0;
		goto done;
	}
	JosekiProgress line = {0};
	rc = full ? bookdb_stats_scan(&st, db, txn, NULL, memory,
	                              !quiet && isatty(2) ? on_progress : NULL, &line)
	          : bookdb_stats_budget(&st, db, txn, false, NULL, memory);
	joseki_progress_off(&line); /* before the figures or an error */
	if (rc) {
		int e = errno;
		/* A scan past its budget writes sorted runs in $TMPDIR: a
		 * directory that cannot take them is named as the cause, what
		 * else failed as either. */
		const char *tmp = bigmem_temp_dir(NULL);
		int te = rc == BOOKDB_EIO && full ? bigmem_dir_blocked(tmp) : 0;
		if (te)
			joseki_error(
			    "stats: %s: the scan's sorted runs (past --memory) go to $TMPDIR, "
			    "%s, which cannot take them: %s; set TMPDIR to a directory "
			    "with room, or give --memory more",
			    book, tmp, strerror(te));
		else if (rc == BOOKDB_EIO && full)
			joseki_error("stats: %s: %s (reading the book, or writing its sorted runs "
			             "in %s: %s)",
			             book, bookdb_strerror(rc), tmp, strerror(e));
		else
			joseki_error("stats: %s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	bookdb_txn_abort(txn);
	txn = NULL;
	/* The scan keeps what it counted, the book opened again to write (the
	 * scan itself reads as any reader, beside writers and compact), unless
	 * it cannot be (a read-only file system, a compaction under way) or
	 * must not: a book found damaged is not written to (a commit walks
	 * LMDB's pages, which may be damaged too; check --repair copies it). */
	bookdb_free(db);
	db = NULL;
	if (full && st.corrupt)
		snprintf(keep_err, sizeof keep_err, "the book is damaged: nothing written to it");
	else if (full && bookdb_open(&db, book, &rw, keep_err) == 0) {
		kept = true;
		bool differed = false;
		if ((rc = bookdb_stats_keep(db, &st, &differed))) {
			joseki_error("stats: %s: keeping the scan's counts: %s", book,
			             bookdb_strerror(rc));
			goto done;
		}
		if (differed)
			joseki_error("stats: %s: the kept counts (thought %llu, moves %llu) "
			             "differed from the "
			             "records'; counted again",
			             book, (unsigned long long)st.counts.thought,
			             (unsigned long long)st.counts.moves);
	}
	double bpp = st.positions ? (double)st.bytes_used / st.positions : 0;
	if (json) {
		/* The scan's memory is the command's (the server's scan is not). */
		json_t *o = bookdb_stats_json(&st);
		if (o && full)
			json_object_set_new(o, "sorted_bytes",
			                    json_integer((json_int_t)st.sorted_bytes));
		if (joseki_print_json(full ? joseki_with_peak(o) : o, JSON_REAL_PRECISION(6)) < 0)
			goto done;
	} else {
		printf("positions          %llu\n", (unsigned long long)st.positions);
		if (st.counts_known) {
			printf("thought            %llu\n", (unsigned long long)st.thought);
			printf("moves              %llu\n", (unsigned long long)st.moves);
		} else {
			printf(
			    "thought            - (not kept: the book was last written by a joseki "
			    "that keeps none, or compacted;\n"
			    "                   its next write counts them, or joseki stats "
			    "--scan)\n");
			printf("moves              - (not kept)\n");
		}
		printf("games              %llu\n", (unsigned long long)st.games);
		print_leaves(&st, full, kept, keep_err);
		if (st.cyclic_known)
			printf("cyclic             %lld (as of the last minimax run)\n", st.cyclic);
		else
			printf("cyclic             - (minimax not run)\n");
		if (st.root_known)
			printf("root_value         %d\n", st.root_value);
		else if (st.cyclic_known)
			printf("root_value         - (the start position has no value: no thought "
			       "position below it)\n");
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
		printf("changes            %llu (%s", (unsigned long long)st.changes.entries,
		       tracking[st.changes.state]);
		if (st.changes.held)
			printf("; held after %llu for a selector snapshot",
			       (unsigned long long)st.changes.hold);
		printf(")\n");
		/* Beside leaves, as --json has them both. */
		if (!st.leaves_known)
			printf("corrupt            - (not counted yet: joseki stats --scan)\n");
		else if (st.corrupt)
			printf("corrupt            %llu (%s; run joseki check)\n",
			       (unsigned long long)st.corrupt,
			       full ? "counted now" : "the last scan's");
		else
			printf("corrupt            0%s\n", full ? "" : " (the last scan's)");
		if (full) {
			char peak[JOSEKI_PEAK_LEN];
			if (st.sorted_bytes)
				printf("peak memory        %s (leaves by sorted runs: %.1f MB on "
				       "disk)\n",
				       joseki_peak_memory(peak, sizeof peak),
				       st.sorted_bytes / 1e6);
			else
				printf("peak memory        %s (the scan's key set)\n",
				       joseki_peak_memory(peak, sizeof peak));
		}
	}
	ret = 0;
	/* A damaged book fails, as every other reader of it does: found now, or
	 * by the last scan with nothing written since. */
	if (st.corrupt && (full || st.leaves_current)) {
		joseki_error(
		    "stats: %s: %llu records are not sound (damaged: joseki check lists them, "
		    "--repair copies what is sound)",
		    book, (unsigned long long)st.corrupt);
		ret = 1;
	}
done:
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}
