/* tools/cli_minimax.c — minimax after a command's writes (cli_minimax.h). */
#include "tools/cli_minimax.h"

#include <stdio.h>

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
