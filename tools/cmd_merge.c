/*
 * joseki merge DST SRC... [--dry-run] [--no-minimax] [--batch N] [--json] [--quiet]
 *
 * Merges joseki books into DST (bookdb_merge_books in bookdb/merge.h,
 * docs/bookdb.md "Merge"), one source after the other, then (unless
 * --no-minimax) passes minimax as the hook the merge runs over what changed
 * (incremental when DST's last run allows it). Prints progress, the records
 * that do not decode, and the summary.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bookdb/merge.h"
#include "minimax/bookmm.h"
#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/errmsg.h"
#include "shogi/memuse.h"
#include "shogi/position.h"
#include "shogi/zobrist.h"
#include "tools/cli_minimax.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

static void on_progress(void *ctx, const char *src, uint64_t done, uint64_t total)
{
	(void)ctx;
	fprintf(stderr, "\rmerge: %s: %llu of %llu positions (%llu%%)\033[K", src,
	        (unsigned long long)done, (unsigned long long)total,
	        (unsigned long long)(total ? done * 100 / total : 100));
	fflush(stderr);
}

typedef struct {
	const char *dst;
	bool progress;
	bool reported; /* the failure was printed as its source ended */
	BookmmStats mm;
	bool mm_busy;           /* another minimax run held the book (a coordinator's) */
	uint64_t memory;        /* --memory: minimax's budget */
	double per_pos, packed; /* after a whole-book run: cli_minimax_space */
} MergeRun;

/* After each source: its failure, and the records that do not decode. */
static void on_source_done(void *ctx, const char *src, const BookMergeStats *st, int rc,
                           const char *err)
{
	MergeRun *r = ctx;
	if (r->progress) fputs("\r\033[K", stderr);
	if (rc < 0) {
		joseki_error("merge: %s", err);
		r->reported = true;
	}
	if (st->bad_src || st->bad_dst) {
		char hex[KEY_HEX_LEN];
		key_to_hex(st->first_bad, hex);
		fprintf(stderr,
		        "joseki: merge: %llu records of %s and %llu of %s do not decode: "
		        "skipped "
		        "(the first: %s in %s); joseki check names them all\n",
		        (unsigned long long)st->bad_src, src, (unsigned long long)st->bad_dst,
		        r->dst, hex, st->first_bad_in_dst ? r->dst : src);
	}
}

/* minimax's own run, keeping its figures for the summary. */
static int run_minimax(void *ctx, BookDB *db, char *err, size_t errlen)
{
	MergeRun *r = ctx;
	char msg[BOOKMM_ERRLEN];
	bigmem_configure(r->memory, bookdb_dir(db));
	/* The run under way (a coordinator's, say) or the next one reads the
	 * merge's writes from the change log: the merge is done. */
	int rc = cli_minimax_after(&r->mm, &r->mm_busy, db, "merge", r->progress, msg);
	if (rc == 0 && !r->mm_busy) cli_minimax_space(&r->per_pos, &r->packed, db, &r->mm);
	return rc < 0 ? errmsg_set(err, errlen, -1, "%s", msg) : 0;
}

static bool minimax_pending(void *ctx, BookDB *db)
{
	(void)ctx;
	return bookmm_pending(db);
}

int cmd_merge(int argc, char **argv)
{
	const char *dst = NULL;
	CliArgs srcs = {0};
	bool json = false, quiet = false, no_minimax = false;
	BookMergeOptions opt = {0};
	uint64_t memory = memuse_default_budget();
	const CliOpt opts[] = {
	    CLI_ARG("DST", &dst, "the book merged into (made if there is none)"),
	    CLI_REST("SRC", &srcs, 1, "the joseki books merged, one after the other"),
	    CLI_FLAG("--dry-run", &opt.dry_run, "count what would change, write nothing"),
	    CLI_FLAG("--no-minimax", &no_minimax, "no minimax after the merge"),
	    CLI_NUM("--batch", &opt.batch, 1, CLI_NOMAX, "N",
	            "positions a write transaction (default 10000)"),
	    CLI_MEMORY(&memory),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"merge", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	shogi_init();
	double t0 = clock_ms_f();
	char err[BOOKDB_MERGE_ERRLEN];
	BookDBOptions dopt = {.read_only = opt.dry_run};
	MergeRun run = {.dst = dst, .progress = !quiet && isatty(2), .memory = memory};
	BookMergeBooksOptions mo = {.each = opt,
	                            .progress = run.progress ? on_progress : NULL,
	                            .source_done = on_source_done,
	                            .ctx = &run};
	if (!no_minimax)
		mo.minimax =
		    (BookMinimaxHook){.run = run_minimax, .ctx = &run, .pending = minimax_pending};
	BookMergeStats total;
	bool ran_mm;
	int status = 0;
	if (bookdb_merge_books(&total, &ran_mm, dst, &dopt, srcs.v, srcs.n, &mo, err) < 0) {
		if (!run.reported) joseki_error("merge: %s", err);
		status = 1;
	}
	size_t nsources = srcs.n;
	const BookmmStats mm = run.mm;
	if (status) return status;
	double ms = clock_ms_f() - t0;
	if (json) {
		json_t *m = json_null();
		if (ran_mm && run.mm_busy)
			m = json_pack("{s:b}", "busy", true);
		else if (ran_mm)
			m = json_pack("{s:b,s:I,s:I,s:I,s:s}", "incremental", mm.incremental,
			              "changed", (json_int_t)mm.changed, "affected",
			              (json_int_t)mm.affected, "rewritten",
			              (json_int_t)mm.rewritten, "full_reason", mm.full_reason);
		/* After a whole-book run, as joseki minimax --json says them. */
		if (ran_mm && !run.mm_busy && !mm.incremental) {
			json_object_set_new(m, "rebuilt", json_boolean(mm.rebuilt));
			json_object_set_new(m, "bytes_per_position",
			                    run.per_pos > 0 ? json_real(run.per_pos) : json_null());
			json_object_set_new(m, "packed_bytes_per_position",
			                    run.packed > 0 ? json_real(run.packed) : json_null());
		}
		json_t *o = json_pack(
		    "{s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:o,"
		    "s:I,s:I,s:I}",
		    "sources", (json_int_t)nsources, "dry_run", opt.dry_run, "positions",
		    (json_int_t)total.positions, "added", (json_int_t)total.added, "replaced",
		    (json_int_t)total.replaced, "stats_merged", (json_int_t)total.stats_merged,
		    "changed", (json_int_t)total.changed, "unchanged", (json_int_t)total.unchanged,
		    "games_added", (json_int_t)total.games_added, "games_duplicate",
		    (json_int_t)total.games_duplicate, "games_completed",
		    (json_int_t)total.games_completed, "games_unlocated",
		    (json_int_t)total.games_unlocated, "stats_clamped",
		    (json_int_t)total.stats_clamped, "batches", (json_int_t)total.batches,
		    "resumed", total.resumed, "minimax", m ? m : json_null(), "time_ms",
		    (json_int_t)(ms + 0.5), "bad_src", (json_int_t)total.bad_src, "bad_dst",
		    (json_int_t)total.bad_dst);
		return joseki_print_json(joseki_with_peak(o), 0) < 0 ? 1 : 0;
	}
	const char *would = opt.dry_run ? "would be " : "";
	printf("merge%s: %llu positions read: %llu %sadded, %llu %sreplaced, %llu %sstats merged "
	       "(%llu changed, %llu unchanged); games %llu %sadded, %llu duplicates skipped",
	       opt.dry_run ? " (dry run, nothing written)" : "",
	       (unsigned long long)total.positions, (unsigned long long)total.added, would,
	       (unsigned long long)total.replaced, would, (unsigned long long)total.stats_merged,
	       would, (unsigned long long)total.changed, (unsigned long long)total.unchanged,
	       (unsigned long long)total.games_added, would,
	       (unsigned long long)total.games_duplicate);
	if (total.games_unlocated)
		printf(" (%llu without kept plies: statistics taken as the larger, not added)",
		       (unsigned long long)total.games_unlocated);
	if (total.games_completed)
		printf(", %llu %scompleted", (unsigned long long)total.games_completed, would);
	if (total.resumed) printf("; an interrupted merge %scompleted", would);
	if (ran_mm && run.mm_busy)
		printf("; minimax left to the run under way on the book (and the next)");
	else if (ran_mm && mm.incremental)
		printf("; minimax incremental (%zu changed, %zu analysed again)", mm.changed,
		       mm.affected);
	else if (ran_mm) /* and why, as joseki minimax says it */
		printf("; minimax whole book (%zu changed, %zu analysed again: %s)", mm.changed,
		       mm.affected, mm.full_reason);
	char peak[JOSEKI_PEAK_LEN];
	printf("; %.0f ms, peak memory %s\n", ms, joseki_peak_memory(peak, sizeof peak));
	/* The minimax's notes, as joseki minimax gives them (the book rebuilt,
	 * or rewritten in place and compact's due). */
	char line[10][CLI_MINIMAX_LINE];
	int nl =
	    ran_mm && !run.mm_busy ? cli_minimax_notes(line, 0, &mm, run.per_pos, run.packed) : 0;
	for (int i = 0; i < nl; i++) cli_wrap(stdout, line[i], 0, 2, CLI_CONSOLE_WIDTH);
	return 0;
}
