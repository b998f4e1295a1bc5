/*
 * joseki peta-shock IN.db OUT.db [--shrink] [--book BOOK] [--quiet]
 *
 * A drop-in for YaneuraOu's "makebook peta_shock IN OUT [shrink]": reads a
 * DB2016 book and writes the minimaxed book (docs/peta-shock.md). Bad input
 * lines are reported on stderr ("joseki: IN:LINE: ...") and skipped. The last
 * stdout line is "peta-shock positions N time_ms T peak_rss_kb R".
 *
 * joseki peta-shock --gen-bench N OUT.db [--seed S]   (for tools/bench_petashock.sh)
 * writes a synthetic DB2016 book of N positions: random legal lines from the
 * start position where every position offers three candidate moves chosen by
 * its key (so move orders meet again: transpositions, and the odd repetition),
 * each listed with a pseudo-random value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/marks.h"
#include "shogi/bigmem.h"
#include "shogi/rng.h"
#include "shogi/clock.h"
#include "shogi/db2016.h"
#include "shogi/keymap.h"
#include "minimax/petashock.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"
#include "shogi/memuse.h"

#define MAX_REPORTED 100 /* warnings printed before the rest are only counted */

typedef struct {
	size_t seen;
	bool quiet;
} WarnState;

static void on_warn(void *ctx, const char *msg)
{
	WarnState *w = ctx;
	w->seen++;
	if (w->quiet || w->seen > MAX_REPORTED) return;
	joseki_error("%s", msg);
}

/* One overwritten stderr line per phase step, only on a terminal. */
static void on_progress(void *ctx, const char *phase, size_t done)
{
	(void)ctx;
	if (done)
		fprintf(stderr, "\rpeta-shock: %-8s %zu positions ", phase, done);
	else
		fprintf(stderr, "\rpeta-shock: %-8s                    ", phase);
	fflush(stderr);
}

/* The three candidate moves of a position (fewer if it has fewer legal moves). */
static int candidates(const Position *pos, uint64_t seed, Move out[3])
{
	Move legal[MOVEGEN_MAX];
	int n = movegen_legal(pos, legal), k = 0;
	uint64_t h = rng_hash(pos_key(pos).lo ^ seed);
	for (int t = 0; t < 8 && k < 3 && k < n; t++, h = rng_hash(h)) {
		Move m = legal[h % (uint64_t)n];
		bool dup = false;
		for (int j = 0; j < k; j++)
			if (out[j] == m) dup = true;
		if (!dup) out[k++] = m;
	}
	return k;
}

static int gen_bench(size_t target, const char *path, uint64_t seed)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		joseki_error("peta-shock: %s: cannot create", path);
		return 1;
	}
	KeyMap seen; /* a set of key.lo | 1, as the hi half of a key */
	keymap_init_set(&seen, false);
	Position *pos = malloc(sizeof *pos);
	if (keymap_reserve(&seen, NULL, target) || !pos) {
		joseki_error("peta-shock: out of memory");
		fclose(f);
		keymap_free(&seen);
		free(pos);
		return 1;
	}
	char line[DB2016_LINE_MAX];
	fwrite(line, 1, db2016_format_header(line, target), f);
	size_t written = 0;
	uint64_t rng = seed;
	for (uint64_t game = 0; written < target && game < target * 50; game++) {
		pos_set_startpos(pos);
		int plies = 8 + (int)((rng = rng_hash(rng)) % 40);
		for (int ply = 0; ply < plies && written < target; ply++) {
			Move cand[3];
			int nc = candidates(pos, seed, cand);
			if (nc == 0) break;
			uint64_t key = pos_key(pos).lo | 1;
			if (keymap_add(&seen, (Key){0, key}, NULL) == 1) { /* reserved: never -1 */
				fwrite(line, 1, db2016_format_sfen(line, pos, pos->game_ply), f);
				for (int k = 0; k < nc; k++) {
					int value = (int)(rng_hash(key ^ (uint64_t)k) % 801) - 400;
					fwrite(line, 1,
					       db2016_format_move_count(line, cand[k], MOVE_NONE,
					                                value, 16 + k, 1),
					       f);
				}
				written++;
			}
			pos_do_move(pos, cand[(rng = rng_hash(rng)) % (uint64_t)nc]);
		}
	}
	keymap_free(&seen);
	free(pos);
	if (fclose(f) != 0) {
		joseki_error("peta-shock: %s: write error", path);
		return 1;
	}
	printf("peta-shock gen-bench positions %zu file %s\n", written, path);
	return 0;
}

typedef struct {
	PetashockMark *v;
	size_t n, cap;
} Marks;

static int collect_marks(void *ctx, const BookRecord *rec, const BookMark *marks, int n)
{
	(void)rec;
	Marks *m = ctx;
	for (int k = 0; k < n; k++) {
		if (m->n == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 256;
			PetashockMark *v = realloc(m->v, cap * sizeof *v);
			if (!v) return BOOKDB_ENOMEM;
			m->v = v;
			m->cap = cap;
		}
		m->v[m->n++] =
		    (PetashockMark){marks[k].key, (uint16_t)marks[k].move, marks[k].kind};
	}
	return 0;
}

/* BOOK's marks into m, sorted (PetashockOptions.marks). 0, or 1 said. */
static int read_marks(Marks *m, const char *book)
{
	char err[BOOKDB_ERRLEN];
	BookDB *db = NULL;
	BookDBOptions ro = {.read_only = true};
	BookTxn *txn = NULL;
	int rc = bookdb_open(&db, book, &ro, err);
	if (rc < 0) {
		joseki_error("peta-shock: --book: %s", err);
		return 1;
	}
	if ((rc = bookdb_txn_begin(&txn, db, false)) == 0)
		rc = bookdb_marks_each(txn, collect_marks, m);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("peta-shock: --book: %s: %s", book, bookdb_strerror(rc));
		return 1;
	}
	if (m->n) qsort(m->v, m->n, sizeof *m->v, petashock_mark_cmp);
	return 0;
}

int cmd_peta_shock(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--gen-bench")) {
		uint64_t n = 0, seed = 1;
		const char *out = NULL;
		const CliOpt opts[] = {
		    CLI_ARG_NUM("N", &n, 1, 100000000, "positions"),
		    CLI_ARG("OUT.db", &out, "the book written"),
		    CLI_NUM("--seed", &seed, 0, CLI_NOMAX, "S",
		            "the random lines' seed (default 1)"),
		    CLI_TABLE_END,
		};
		const CliCmd cmd = {"peta-shock --gen-bench", opts, "docs/peta-shock.md"};
		int parsed = cli_parse(&cmd, argc - 1, argv + 1);
		if (parsed != CLI_GO) return parsed;
		return gen_bench((size_t)n, out, seed);
	}

	const char *in = NULL, *out = NULL, *book = NULL;
	PetashockOptions opt = {0};
	WarnState ws = {0, false};
	uint64_t memory = memuse_default_budget();
	const CliOpt opts[] = {
	    CLI_ARG("IN.db", &in, "a YaneuraOu DB2016 book"),
	    CLI_ARG("OUT.db", &out, "the minimaxed book written"),
	    CLI_FLAG("--shrink", &opt.shrink, "write only the moves with the best value",
	             .alias = "shrink"),
	    CLI_NUM("--threads", &opt.threads, 1, 8, "N",
	            "threads (default: one per core, at most one per 4 MiB of input; 1 to 8)"),
	    CLI_STR("--book", &book, "BOOK",
	            "the joseki book IN.db was exported from: no transposition move its export "
	            "left out on purpose (avoided, a declined promotion) is added back (default: "
	            "none, YaneuraOu's output)"),
	    CLI_MEMORY(&memory),
	    CLI_FLAG("--quiet", &ws.quiet, "no progress, no warnings"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"peta-shock", opts, "docs/peta-shock.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (book && !*book) return cli_usage_error(&cmd, "--book needs the book's directory");
	if (cli_output_file(&cmd, out)) return 1;
	Marks marks = {0};
	if (book) {
		if (read_marks(&marks, book)) return 1;
		opt.book_rules = true;
		opt.marks = marks.v;
		opt.nmarks = marks.n;
	}
	opt.warn = on_warn;
	opt.warn_ctx = &ws;
	/* Arrays past the budget go beside the output. */
	char outdir[4096];
	bigmem_dir_of(outdir, sizeof outdir, out);
	bigmem_configure(memory, outdir);
	bool progress = !ws.quiet && isatty(2);
	if (progress) opt.progress = on_progress;
	double t0 = clock_ms_f();
	PetashockStats st;
	char err[PETASHOCK_ERRLEN];
	int rc = petashock_run(&st, in, out, &opt, err);
	free(marks.v);
	if (progress) fprintf(stderr, "\r\033[K");
	if (rc < 0) {
		joseki_error("peta-shock: %s (nothing written)", err);
		return 1;
	}
	double ms = clock_ms_f() - t0;
	if (ws.seen > MAX_REPORTED && !ws.quiet)
		joseki_error("peta-shock: %zu more input problems not shown",
		             ws.seen - MAX_REPORTED);
	/* As YaneuraOu, an empty book in, an empty book out; but say so, since
	 * it is more often the wrong file than an empty book. */
	if (st.nodes == 0 && !ws.quiet)
		joseki_error("peta-shock: %s: no positions in it (a YaneuraOu book's positions are "
		             "'sfen' lines); wrote an empty book",
		             in);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peta-shock: %zu positions, %zu moves (%zu edges, %zu transpositions), "
	       "%zu settled, %zu on cycles, %zu/%zu on check loops, %zu line%s skipped, "
	       "wrote %s\n",
	       st.nodes, st.moves, st.edges, st.converged_moves, st.const_nodes,
	       st.nodes - st.const_nodes, st.check_loop1, st.check_loop2, st.warnings,
	       st.warnings == 1 ? "" : "s", out);
	if (book)
		printf(
		    "peta-shock: --book %s: %zu marked move%s read, %zu transposition move%s left "
		    "out (avoided, or declined promotions)\n",
		    book, marks.n, marks.n == 1 ? "" : "s", st.left_out,
		    st.left_out == 1 ? "" : "s");
	BigmemStats bs;
	bigmem_stats(&bs);
	if (st.buckets)
		printf(
		    "peta-shock: the edges were found on disk, in %u buckets of keys (%.0f MiB of "
		    "temporary files)\n",
		    st.buckets, (double)st.disk_bytes / (1 << 20));
	printf("peta-shock positions %zu time_ms %.0f peak_rss_kb %ld read_ms %.0f edges_ms %.0f "
	       "analyse_ms %.0f write_ms %.0f peak_anon_kb %llu files_kb %llu buckets %u "
	       "disk_kb %llu\n",
	       st.nodes, ms, (long)ru.ru_maxrss, st.read_ms, st.edges_ms, st.analyse_ms,
	       st.write_ms, (unsigned long long)(memuse_anon_peak() / 1024),
	       (unsigned long long)(bs.file_peak / 1024), st.buckets,
	       (unsigned long long)(st.disk_bytes / 1024));
	return 0;
}
