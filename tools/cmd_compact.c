/*
 * joseki compact BOOK [--json] [--quiet] — rewrites the book without its free
 * pages (bookdb_compact: a compacting copy beside the book, fsync, rename).
 * Refused while a writer has the book open. Progress on a terminal; prints the
 * file's size before and after.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shogi/clock.h"
#include "bookdb/bookdb.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	joseki_progress_records("compact: copied ", done, total);
}

int cmd_compact(int argc, char **argv)
{
	const char *book = NULL;
	bool json = false, quiet = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (no writer may have it open)"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"compact", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	int64_t t0 = clock_ms();
	uint64_t before, after;
	char err[BOOKDB_ERRLEN];
	bool tty = !quiet && !json && isatty(2);
	int rc = bookdb_compact(book, &before, &after, tty ? on_progress : NULL, NULL, err);
	if (tty) fprintf(stderr, "\r\033[K");
	if (rc < 0) {
		joseki_error("compact: %s", err[0] ? err : bookdb_strerror(rc));
		return 1;
	}
	long long ms = (long long)(clock_ms() - t0);
	if (json)
		return joseki_print_json(
		           joseki_with_peak(json_pack(
		               "{s:I,s:I,s:I}", "bytes_before", (json_int_t)before, "bytes_after",
		               (json_int_t)after, "time_ms", (json_int_t)ms)),
		           0) < 0;
	char peak[JOSEKI_PEAK_LEN];
	printf("compact: %s: %llu bytes before, %llu after (%.0f%%), %lld ms, peak memory %s\n",
	       book, (unsigned long long)before, (unsigned long long)after,
	       before ? 100.0 * (double)after / (double)before : 100.0, ms,
	       joseki_peak_memory(peak, sizeof peak));
	return 0;
}
