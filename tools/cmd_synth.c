/*
 * joseki synth BOOK --positions N [--seed S] [--batch B] [--memory SIZE] [--quiet]
 *
 * A synthetic analysed book for benchmarks (bookdb/synth.h). --unsorted writes
 * the positions in generation order through ordinary puts. Ends with one stdout
 * line:
 *   synth positions N time_ms T positions_per_s R insert_ms I inserts_per_s W
 *   insert_cpu_ms C inserts_per_cpu_s WC visits V rounds K sort_runs S
 *   sort_disk_mb D peak_anon_mb M
 * (T and R for the whole run, I and W for the writing alone, C and WC the same
 * in CPU time of this process, which a busy machine does not distort; V the
 * walk's visits, K its rounds, S and D the external sort's runs on disk, M the
 * peak anonymous memory). The sort's runs go into the book's directory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bookdb/synth.h"
#include "shogi/memuse.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rsynth: %zu of %zu positions %s   ", done, total, phase);
}

int cmd_synth(int argc, char **argv)
{
	const char *book = NULL;
	uint64_t npos = 0, seed = 1, batch = 0, memory = 0;
	bool quiet = false, unsorted = false;
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book (made if there is none)"),
	    CLI_NUM("--positions", &npos, 0, UINT32_MAX - 1, "N", "positions to write",
	            .required = true),
	    CLI_NUM("--seed", &seed, 0, CLI_NOMAX, "S", "the generator's seed (default 1)"),
	    CLI_NUM("--batch", &batch, 1, LLONG_MAX, "B",
	            "positions a write transaction (default 1000000, fewer when --memory is "
	            "under 512M: SIZE / 512 bytes)"),
	    CLI_MEMORY(&memory),
	    CLI_FLAG("--unsorted", &unsorted, "write in generation order, through ordinary puts"),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"synth", opts, "docs/bookdb.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	memuse_start();
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookDBOptions dopt = {.settings = "synth"};
	if (bookdb_open(&db, book, &dopt, err)) {
		joseki_error("synth: %s", err);
		return 1;
	}
	BookSynthOptions opt = {.positions = (uint64_t)npos,
	                        .seed = seed,
	                        .batch = (size_t)batch,
	                        .unsorted = unsorted,
	                        .memory = memory,
	                        .tmpdir = book,
	                        .progress = !quiet && isatty(2) ? on_progress : NULL};
	BookSynthStats st;
	int rc = bookdb_synth(&st, db, &opt, err);
	if (opt.progress) fputc('\n', stderr);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("synth: %s: %s", book, err);
		return 1;
	}
	double t = st.total_ms, ti = st.insert_ms, c = st.insert_cpu_ms;
	printf(
	    "synth positions %zu time_ms %.0f positions_per_s %.0f insert_ms %.0f inserts_per_s "
	    "%.0f insert_cpu_ms %.0f inserts_per_cpu_s %.0f visits %llu rounds %llu sort_runs %llu "
	    "sort_disk_mb %.0f peak_anon_mb %.0f\n",
	    st.positions, t, t > 0 ? st.positions / (t / 1e3) : 0.0, ti,
	    ti > 0 ? st.positions / (ti / 1e3) : 0.0, c, c > 0 ? st.positions / (c / 1e3) : 0.0,
	    (unsigned long long)st.visits, (unsigned long long)st.rounds,
	    (unsigned long long)st.sort_runs, st.sort_disk_bytes / 1048576.0,
	    memuse_anon_peak() / 1048576.0);
	return 0;
}
