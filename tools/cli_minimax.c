/* tools/cli_minimax.c — minimax after a command's writes (cli_minimax.h). */
#include "tools/cli_minimax.h"

#include <stdio.h>
#include <string.h>

#include "minimax/graph.h"
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
	/* No minimax run ever (its meta "minimax" absent) over analyses. */
	bool never = !since && bookmm_never_ran(txn);
	bookdb_txn_abort(txn);
	if (!since && !never) return;
	char text[2 * BOOKDB_PATH_LEN + 256];
	if (never)
		snprintf(text, sizeof text,
		         "joseki: %s: %s: no minimax run has backed its analyses up yet; to back "
		         "them up (before an export):",
		         cmd, book);
	else
		snprintf(text, sizeof text,
		         "joseki: %s: %s: %llu write%s of positions since its last minimax run, "
		         "whose values are not backed up yet; to back them up (before an export):",
		         cmd, book, (unsigned long long)since, since == 1 ? "" : "s");
	cli_wrap(stderr, text, 0, 2, CLI_CONSOLE_WIDTH);
	/* The command on a line of its own, whole, to copy. */
	fprintf(stderr, "  joseki minimax %s\n", book);
}

void cli_minimax_space(double *per_pos, double *packed, BookDB *db, const BookmmStats *st)
{
	/* Records grown in place split their pages half full, which compact
	 * packs. */
	*per_pos = *packed = 0;
	BookTxn *t;
	BookSpace sp;
	if (!st->incremental && st->record_bytes && st->positions &&
	    bookdb_txn_begin(&t, db, false) == 0) {
		if (bookdb_space(&sp, t) == 0) {
			*per_pos = (double)sp.pages_used * sp.page_size / (double)st->positions;
			*packed =
			    ((double)st->record_bytes / (double)st->positions + 16 + 8 + 2) * 1.03;
		}
		bookdb_txn_abort(t);
	}
}

int cli_minimax_notes(char line[][CLI_MINIMAX_LINE], int nl, const BookmmStats *st, double per_pos,
                      double packed)
{
	if (st->rebuilt)
		snprintf(line[nl++], CLI_MINIMAX_LINE,
		         "  the book rebuilt with full pages: %.1f MB -> %.1f MB, %.0f bytes a "
		         "position",
		         st->bytes_before / 1e6, st->bytes_after / 1e6, per_pos);
	if (st->lookups_sorted)
		snprintf(line[nl++], CLI_MINIMAX_LINE,
		         "  the key index past half the budget: children looked up in sorted runs "
		         "(%.1f MB on disk)",
		         st->sorted_bytes / 1e6);
	if (st->folded_bytes)
		snprintf(line[nl++], CLI_MINIMAX_LINE,
		         "  the kept graph's journal (%.1f MB) folded into a new graph file first, "
		         "%.0f ms",
		         st->folded_bytes / 1e6, st->fold_ms);
	if (st->rebuild_busy)
		snprintf(line[nl++], CLI_MINIMAX_LINE,
		         "  another writer had the book open: the records were rewritten in place");
	if (st->rebuild_no_room)
		snprintf(
		    line[nl++], CLI_MINIMAX_LINE,
		    "  no room on the disk for the book written anew (%.1f MB free, about %.1f MB "
		    "needed beside it): the records were rewritten in place",
		    st->room_free / 1e6, st->room_needed / 1e6);
	if (!st->rebuilt && packed > 0 && per_pos > 1.3 * packed)
		snprintf(
		    line[nl++], CLI_MINIMAX_LINE,
		    "  the book takes %.0f bytes a position, where its records would take %.0f in "
		    "full pages: joseki compact (no writer running) packs them",
		    per_pos, packed);
	if (st->unsettled)
		snprintf(line[nl++], CLI_MINIMAX_LINE,
		         "  %zu positions on %zu cycle%s still changing at the last of %d sweeps: "
		         "their values as that sweep left them",
		         st->unsettled, st->unsettled_cycles, st->unsettled_cycles == 1 ? "" : "s",
		         MM_RELAX_SWEEPS);
	return nl;
}
