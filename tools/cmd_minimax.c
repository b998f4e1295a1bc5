/*
 * joseki minimax BOOK [--full] [--draw-black CP] [--draw-white CP] [--leaves thought|games]
 *                [--min-depth D] [--min-games N] [--blend W] [--blend-games N] [--batch N]
 *                [--json] [--quiet]
 *
 * Backs the values up over the book graph and stores them in the records
 * (docs/minimax.md). Without --full, only what changed since the last run is
 * analysed again (and only records whose values changed are rewritten);
 * --full analyses the whole book and rewrites every record.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "shogi/clock.h"
#include "minimax/bookmm.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define USAGE                                                                                      \
	"usage: joseki minimax BOOK [--full] [--draw-black CP] [--draw-white CP]\n"                \
	"                      [--leaves thought|games] [--min-depth D] [--min-games N]\n"         \
	"                      [--blend W] [--blend-games N] [--batch N] [--json] [--quiet]"

/* One overwritten stderr line, only on a terminal. */
static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)ctx;
	if (total)
		fprintf(stderr, "\rminimax: %-8s %zu of %zu positions (%zu%%)   ", phase, done,
		        total, done * 100 / total);
	else
		fprintf(stderr, "\rminimax: %-8s                                        ", phase);
	fflush(stderr);
}

static int parse_cp(int *out, const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < -VALUE_MATE || v > VALUE_MATE) return -1;
	*out = (int)v;
	return 0;
}

int cmd_minimax(int argc, char **argv)
{
	const char *book = NULL;
	bool json = false, quiet = false;
	BookmmOptions opt;
	memset(&opt, 0, sizeof opt);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--full"))
			opt.full = true;
		else if (!strcmp(a, "--json"))
			json = true;
		else if (!strcmp(a, "--quiet"))
			quiet = true;
		else if (!strcmp(a, "--draw-black") || !strcmp(a, "--draw-white")) {
			int *dst = a[7] == 'b' ? &opt.draw_black : &opt.draw_white;
			if (i + 1 >= argc || parse_cp(dst, argv[i + 1]) < 0) {
				joseki_error("minimax: %s needs a value in centipawns "
				             "(-32000..32000)\n" USAGE,
				             a);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--leaves") && i + 1 < argc &&
		           (!strcmp(argv[i + 1], "thought") || !strcmp(argv[i + 1], "games"))) {
			opt.policy.leaves =
			    argv[++i][0] == 'g' ? BOOKMM_LEAVES_GAMES : BOOKMM_LEAVES_THOUGHT;
		} else if (!strcmp(a, "--min-depth") || !strcmp(a, "--min-games") ||
		           !strcmp(a, "--blend-games")) {
			char *end;
			errno = 0;
			bool depth = !strcmp(a, "--min-depth");
			long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
			if (i + 1 >= argc || errno || end == argv[i + 1] || *end || v < 0 ||
			    v > (depth ? 255 : 1000000000)) {
				joseki_error("minimax: %s needs a whole number (%s)\n" USAGE, a,
				             depth ? "0..255" : "0..1000000000");
				return 2;
			}
			i++;
			if (depth)
				opt.policy.min_depth = v ? (int)v : BOOKMM_ANY_DEPTH;
			else if (!strcmp(a, "--min-games"))
				opt.policy.min_games = (uint32_t)v;
			else
				opt.policy.blend_games = (uint32_t)v;
		} else if (!strcmp(a, "--batch")) {
			/* Records per write transaction: a writer running beside (think,
			 * the coordinator) waits for LMDB's lock at most one batch. */
			char *end;
			errno = 0;
			long b = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
			if (i + 1 >= argc || errno || end == argv[i + 1] || *end || b < 1 ||
			    b > 100000000) {
				joseki_error("minimax: --batch needs a number of records\n" USAGE);
				return 2;
			}
			opt.batch = (size_t)b;
			i++;
		} else if (!strcmp(a, "--blend")) {
			char *end;
			errno = 0;
			double w = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
			if (i + 1 >= argc || errno || end == argv[i + 1] || *end ||
			    !(w >= 0 && w <= 1)) {
				joseki_error("minimax: --blend needs a weight from 0 to 1\n" USAGE);
				return 2;
			}
			opt.policy.blend = w;
			i++;
		} else if (a[0] == '-' && a[1]) {
			joseki_error("minimax: unknown option '%s'\n" USAGE, a);
			return 2;
		} else if (!book)
			book = a;
		else {
			joseki_error("minimax: one BOOK at a time\n" USAGE);
			return 2;
		}
	}
	if (!book) {
		joseki_error("minimax: no BOOK given\n" USAGE);
		return 2;
	}
	shogi_init();
	double t0 = clock_ms_f();
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	/* A missing book is an error, not a new empty book. */
	BookDBOptions existing = {.must_exist = true};
	if (bookdb_open(&db, book, &existing, err) < 0) {
		joseki_error("minimax: %s", err);
		return 1;
	}
	BookmmStats st;
	char msg[BOOKMM_ERRLEN];
	/* Progress on a terminal: only a whole-book run takes long enough to show. */
	bool progress = !quiet && isatty(2);
	if (progress) opt.progress = on_progress;
	int rc = bookmm_run(&st, db, &opt, msg);
	if (progress && !st.incremental) fputs("\r\033[K", stderr);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("minimax: %s: %s", book, msg);
		return 1;
	}
	double ms = clock_ms_f() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char root[16] = "null";
	if (st.has_root) snprintf(root, sizeof root, "%d", st.root_value);
	if (json) {
		json_t *reason = json_string(st.full_reason); /* NULL if not UTF-8 (a path) */
		json_t *o = json_pack(
		    "{s:I,s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:b,s:I,s:I,s:o,s:o,s:I,s:I}", "positions",
		    (json_int_t)st.positions, "valued", (json_int_t)st.valued, "moves",
		    (json_int_t)st.moves, "edges", (json_int_t)st.edges, "settled",
		    (json_int_t)st.settled, "cyclic", (json_int_t)st.cyclic, "sweeps", st.sweeps,
		    "rewritten", (json_int_t)st.rewritten, "incremental", st.incremental, "changed",
		    (json_int_t)st.changed, "affected", (json_int_t)st.affected, "full_reason",
		    reason ? reason : json_string("(not UTF-8)"), "root_value",
		    st.has_root ? json_integer(st.root_value) : json_null(), "time_ms",
		    (json_int_t)(ms + 0.5), "peak_rss_bytes", (json_int_t)ru.ru_maxrss * 1024);
		if (joseki_print_json(o, 0) < 0) return 1;
	} else if (st.incremental) {
		printf("minimax: %zu positions (%zu valued: %zu settled, %zu on or above cycles); "
		       "incremental: %zu changed, %zu analysed again, %zu records rewritten, "
		       "root value %s, %.0f ms\n",
		       st.positions, st.valued, st.settled, st.cyclic, st.changed, st.affected,
		       st.rewritten, root, ms);
	} else {
		printf("minimax: %zu positions (%zu valued: %zu settled, %zu on or above cycles), "
		       "%zu moves (%zu edges), %d sweeps, %zu records rewritten, root value %s, "
		       "%.0f ms (whole book: %s)\n",
		       st.positions, st.valued, st.settled, st.cyclic, st.moves, st.edges,
		       st.sweeps, st.rewritten, root, ms, st.full_reason);
	}
	return 0;
}
