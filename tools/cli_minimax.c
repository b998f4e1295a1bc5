/* tools/cli_minimax.c — minimax after a command's writes (cli_minimax.h). */
#include "tools/cli_minimax.h"

#include <stdio.h>

#include "tools/cli_opt.h"

static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	fprintf(stderr, "\r%s: minimax: %s %zu of %zu\033[K", (const char *)ctx, phase, done,
	        total);
	fflush(stderr);
}

int cli_minimax_after(BookmmStats *st, bool *busy, BookDB *db, const char *prefix, bool progress,
                      char *err)
{
	BookmmOptions mo = {0};
	if (progress) {
		mo.progress = on_progress;
		mo.progress_ctx = (void *)prefix;
	}
	int rc = bookmm_run(st, db, &mo, err);
	if (progress) fputs("\r\033[K", stderr);
	*busy = rc == BOOKMM_EBUSY;
	return *busy ? 0 : rc;
}

void cli_minimax_backlog(const char *cmd, BookDB *db, const char *book)
{
	BookTxn *txn;
	uint64_t since = 0;
	if (!db || bookdb_txn_begin(&txn, db, false) < 0) return;
	if (bookmm_writes_since(&since, txn) != 1) since = 0;
	bookdb_txn_abort(txn);
	if (!since) return;
	char text[2 * BOOKDB_PATH_LEN + 256];
	snprintf(text, sizeof text,
	         "joseki: %s: %s: %llu write%s of positions since its last minimax run, whose "
	         "values are not backed up yet; to back them up (before an export):",
	         cmd, book, (unsigned long long)since, since == 1 ? "" : "s");
	cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
	/* The command on a line of its own, whole, to copy. */
	fprintf(stderr, "  joseki minimax %s\n", book);
}
