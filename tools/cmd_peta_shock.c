/*
 * joseki peta-shock IN.db OUT.db [--shrink] [--quiet]
 *
 * A drop-in for YaneuraOu's "makebook peta_shock IN OUT [shrink]": reads a
 * DB2016 book and writes the minimaxed book (docs/peta-shock.md). Bad input
 * lines are reported on stderr ("joseki: IN:LINE: ...") and skipped. The last
 * stdout line is "peta-shock positions N time_ms T peak_rss_kb R".
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "minimax/petashock.h"
#include "tools/commands.h"

#define USAGE "usage: joseki peta-shock IN.db OUT.db [--shrink] [--quiet]"
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

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int cmd_peta_shock(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	PetashockOptions opt = {0};
	WarnState ws = {0, false};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--shrink") || !strcmp(argv[i], "shrink")) {
			opt.shrink = true;
		} else if (!strcmp(argv[i], "--quiet")) {
			ws.quiet = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			puts(USAGE);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			joseki_error("peta-shock: unknown option '%s'\n" USAGE, argv[i]);
			return 2;
		} else if (!in) {
			in = argv[i];
		} else if (!out) {
			out = argv[i];
		} else {
			joseki_error("peta-shock: unexpected argument '%s'\n" USAGE, argv[i]);
			return 2;
		}
	}
	if (!in || !out) {
		joseki_error("peta-shock: missing %s\n" USAGE, in ? "OUT.db" : "IN.db");
		return 2;
	}
	opt.warn = on_warn;
	opt.warn_ctx = &ws;
	double t0 = now_ms();
	PetashockStats st;
	char err[512];
	int rc = petashock_run(&st, in, out, &opt, err, sizeof err);
	if (rc < 0) {
		joseki_error("peta-shock: %s (nothing written)", err);
		return 1;
	}
	double ms = now_ms() - t0;
	if (ws.seen > MAX_REPORTED && !ws.quiet)
		joseki_error("peta-shock: %zu more input problems not shown", ws.seen - MAX_REPORTED);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peta-shock: %zu positions, %zu moves (%zu edges, %zu transpositions), "
	       "%zu settled, %zu on cycles, %zu/%zu on check loops, %zu lines skipped, "
	       "wrote %s\n",
	       st.nodes, st.moves, st.edges, st.converged_moves, st.const_nodes,
	       st.nodes - st.const_nodes, st.check_loop1, st.check_loop2, st.warnings, out);
	printf("peta-shock positions %zu time_ms %.0f peak_rss_kb %ld\n", st.nodes, ms,
	       (long)ru.ru_maxrss);
	return 0;
}
