/*
 * joseki backup BOOK DIR [--compact] [--json] [--quiet] — a consistent copy of the book
 * into the new directory DIR while writers go on (bookdb/backup.h): one read
 * snapshot, written as DIR.partial, fsync'ed, checked as joseki check does,
 * then renamed to DIR. --compact leaves out the free pages. Progress on a
 * terminal; one summary line (or --json). Exit 1 when the copy cannot be made
 * or fails its check (no DIR then).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/backup.h"
#include "shogi/clock.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

typedef struct {
	const char *phase; /* of the line last shown */
	int64_t ms;
} Shown;

static void on_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	/* A line a phase's first call and its last, and at most one in 150 ms
	 * between (the check's calls come every 16,384 records). */
	Shown *sh = ctx;
	int64_t now = clock_ms();
	if (sh->phase && !strcmp(sh->phase, phase) && now - sh->ms < 150 && done < total) return;
	sh->phase = phase;
	sh->ms = now;
	if (strcmp(phase, "copy")) {
		joseki_progress_records(strcmp(phase, "check") ? "backup: copied "
		                                               : "backup: checking the copy: ",
		                        done, total);
		return;
	}
	fprintf(stderr, "\rbackup: copied %.1f of about %.1f MB\033[K", (double)done / 1e6,
	        (double)total / 1e6);
	fflush(stderr);
}

int cmd_backup(int argc, char **argv)
{
	const char *book = NULL, *dir = NULL;
	bool compact = false, json = false, quiet = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (it may be in use)"),
	    CLI_ARG("DIR", &dir, "the copy: a new directory"),
	    CLI_FLAG("--compact", &compact, "leave the free pages out"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"backup", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	/* A reader: it never blocks the book's writer, nor is blocked by it. A
	 * compacting copy walks the records in key order: read at random, the
	 * walk reads ahead on threads (bookdb.h); a plain copy reads the file
	 * in file order, as the kernel's read-ahead serves best. */
	BookDBOptions ro = {.read_only = true, .random = compact};
	if (bookdb_open(&db, book, &ro, err)) {
		joseki_error("backup: %s", err);
		return 1;
	}
	int64_t t0 = clock_ms();
	BookBackupStats st;
	bool tty = !quiet && !json && isatty(2);
	Shown shown = {NULL, 0};
	int rc = bookdb_backup(&st, db, dir, compact, tty ? on_progress : NULL, &shown, err);
	bookdb_free(db);
	if (tty) fprintf(stderr, "\r\033[K");
	if (rc < 0) {
		joseki_error("backup: %s", err[0] ? err : bookdb_strerror(rc));
		return 1;
	}
	long long ms = (long long)(clock_ms() - t0);
	if (json)
		return joseki_print_json(
		           joseki_with_peak(json_pack("{s:s,s:I,s:I,s:I,s:b,s:I}", "dir", dir,
		                                      "records", (json_int_t)st.check.records,
		                                      "bytes", (json_int_t)st.bytes, "source_bytes",
		                                      (json_int_t)st.source_bytes, "compact",
		                                      compact, "time_ms", (json_int_t)ms)),
		           0) < 0;
	char peak[JOSEKI_PEAK_LEN];
	printf("backup: %s -> %s: %llu records, %llu bytes (source %llu)%s, checked, %lld ms, peak "
	       "memory %s\n",
	       book, dir, (unsigned long long)st.check.records, (unsigned long long)st.bytes,
	       (unsigned long long)st.source_bytes, compact ? ", compacted" : "", ms,
	       joseki_peak_memory(peak, sizeof peak));
	return 0;
}
