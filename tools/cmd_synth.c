/*
 * joseki synth BOOK --positions N [--seed S] [--batch B] [--quiet]
 *
 * A synthetic analysed book for benchmarks (bookdb/synth.h). --unsorted writes
 * the positions in generation order through ordinary puts. Ends with one stdout
 * line:
 *   synth positions N time_ms T positions_per_s R insert_ms I inserts_per_s W
 *   insert_cpu_ms C inserts_per_cpu_s WC
 * (T and R for the whole run, I and W for the writing alone, C and WC the same
 * in CPU time of this process, which a busy machine does not distort).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/synth.h"
#include "tools/commands.h"

static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rsynth: %zu of %zu positions %s   ", done, total, phase);
}

int cmd_synth(int argc, char **argv)
{
	const char *book = NULL;
	long long npos = -1;
	unsigned long long seed = 1;
	long long batch = BOOKDB_SYNTH_BATCH;
	int quiet = 0, unsorted = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--positions") && i + 1 < argc)
			npos = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strcmp(argv[i], "--unsorted"))
			unsorted = 1;
		else if (argv[i][0] != '-' && !book)
			book = argv[i];
		else {
			joseki_error("synth: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book || npos < 0 || npos >= UINT32_MAX || batch <= 0) {
		joseki_error("usage: joseki synth BOOK --positions N [--seed S] [--batch B] "
		             "[--unsorted] [--quiet]");
		return 2;
	}
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookDBOptions dopt = {.settings = "synth"};
	if (bookdb_open(&db, book, &dopt, err)) {
		joseki_error("%s", err);
		return 1;
	}
	BookSynthOptions opt = {.positions = (uint64_t)npos,
	                        .seed = seed,
	                        .batch = (size_t)batch,
	                        .unsorted = unsorted,
	                        .progress = !quiet && isatty(2) ? on_progress : NULL};
	BookSynthStats st;
	int rc = bookdb_synth(&st, db, &opt, err);
	if (opt.progress) fputc('\n', stderr);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("%s: %s", book, err);
		return 1;
	}
	double t = st.total_ms, ti = st.insert_ms, c = st.insert_cpu_ms;
	printf("synth positions %zu time_ms %.0f positions_per_s %.0f insert_ms %.0f inserts_per_s "
	       "%.0f insert_cpu_ms %.0f inserts_per_cpu_s %.0f\n",
	       st.positions, t, t > 0 ? st.positions / (t / 1e3) : 0.0, ti,
	       ti > 0 ? st.positions / (ti / 1e3) : 0.0, c, c > 0 ? st.positions / (c / 1e3) : 0.0);
	return 0;
}
