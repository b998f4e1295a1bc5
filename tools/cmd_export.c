/*
 * joseki export BOOK OUT [--format yaneuraou|apery] [--moves best|window|all]
 *              [--window CP] [--min-depth D] [--max-ply N] [--with-avoided]
 *              [--json] [--quiet]
 *
 * Writes the book as a YaneuraOu DB2016 book sorted for BookOnTheFly, or as
 * an Apery binary book (--format apery, or an OUT named *.bin)
 * (docs/minimax.md). Defaults: --moves window --window 30. Moves joseki prune
 * marked avoided are left out unless --with-avoided.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "shogi/clock.h"
#include "minimax/export.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define USAGE                                                                                      \
	"usage: joseki export BOOK OUT [--format yaneuraou|apery] [--moves best|window|all] "      \
	"[--window CP] [--min-depth D] [--max-ply N] [--with-avoided] [--json] [--quiet]"

static int parse_int(int *out, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) return -1;
	*out = (int)v;
	return 0;
}

/* One overwritten stderr line, only on a terminal. */
static void on_progress(void *ctx, const char *phase, size_t done, size_t total)
{
	(void)ctx;
	fprintf(stderr, "\rexport: %-8s %zu of %zu (%zu%%)   ", phase, done, total,
	        total ? done * 100 / total : 0);
	fflush(stderr);
}

int cmd_export(int argc, char **argv)
{
	const char *book = NULL, *out = NULL;
	bool json = false, quiet = false;
	int apery = -1; /* -1: as OUT's name says */
	ExportOptions opt = {.moves = EXPORT_MOVES_WINDOW, .window = 30};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--with-avoided")) {
			opt.with_avoided = true;
			continue;
		}
		if (!strcmp(a, "--json") || !strcmp(a, "--quiet")) {
			if (a[2] == 'j')
				json = true;
			else
				quiet = true;
			continue;
		}
		if (!strcmp(a, "--format") || !strcmp(a, "--moves") || !strcmp(a, "--window") ||
		    !strcmp(a, "--min-depth") || !strcmp(a, "--max-ply")) {
			bool ok = v != NULL;
			if (ok && !strcmp(a, "--format")) {
				ok = !strcmp(v, "yaneuraou") || !strcmp(v, "apery");
				apery = !strcmp(v, "apery");
			} else if (ok && !strcmp(a, "--moves")) {
				if (!strcmp(v, "best"))
					opt.moves = EXPORT_MOVES_BEST;
				else if (!strcmp(v, "window"))
					opt.moves = EXPORT_MOVES_WINDOW;
				else if (!strcmp(v, "all"))
					opt.moves = EXPORT_MOVES_ALL;
				else
					ok = false;
			} else if (ok && !strcmp(a, "--window"))
				ok = parse_int(&opt.window, v, 0, 64000) == 0;
			else if (ok && !strcmp(a, "--min-depth"))
				ok = parse_int(&opt.min_depth, v, 0, 255) == 0;
			else if (ok)
				ok = parse_int(&opt.max_ply, v, 1, 65535) == 0;
			if (!ok) {
				joseki_error("export: bad or missing value for %s%s%s\n" USAGE, a,
				             v ? ": " : "", v ? v : "");
				return 2;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			joseki_error("export: unknown option '%s'\n" USAGE, a);
			return 2;
		} else if (!book)
			book = a;
		else if (!out)
			out = a;
		else {
			joseki_error("export: too many arguments\n" USAGE);
			return 2;
		}
	}
	if (!book || !out) {
		joseki_error("export: BOOK and OUT are needed\n" USAGE);
		return 2;
	}
	shogi_init();
	double t0 = clock_ms_f();
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, book, &ro, err) < 0) {
		joseki_error("export: %s", err);
		return 1;
	}
	ExportStats st;
	char msg[EXPORT_ERRLEN];
	bool progress = !quiet && isatty(2);
	if (progress) opt.progress = on_progress;
	size_t olen = strlen(out);
	if (apery < 0) apery = olen > 4 && !strcasecmp(out + olen - 4, ".bin");
	int rc = apery ? export_apery(&st, db, out, &opt, msg)
	               : export_yaneuraou(&st, db, out, &opt, msg);
	if (progress) fputs("\r\033[K", stderr);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("export: %s (nothing written)", msg);
		return 1;
	}
	double ms = clock_ms_f() - t0;
	if (json) {
		json_t *o = json_pack(
		    "{s:I,s:I,s:I,s:I,s:s,s:I}", "records", (json_int_t)st.records, "positions",
		    (json_int_t)st.positions, "moves", (json_int_t)st.moves, "minimaxed",
		    (json_int_t)st.minimaxed, "out", out, "time_ms", (json_int_t)(ms + 0.5));
		if (o && apery) {
			json_object_set_new(o, "format", json_string("apery"));
			json_object_set_new(o, "entries", json_integer((json_int_t)st.entries));
			json_object_set_new(o, "collisions",
			                    json_integer((json_int_t)st.collisions));
		}
		if (joseki_print_json(o, 0) < 0) return 1;
	} else {
		printf("export: %zu of %zu positions (%zu with minimax values), %zu moves, wrote "
		       "%s, %.0f ms\n",
		       st.positions, st.records, st.minimaxed, st.moves, out, ms);
		if (apery && st.collisions)
			fprintf(
			    stderr,
			    "export: %zu entries left out: their Apery key names another position "
			    "too\n",
			    st.collisions);
	}
	return 0;
}
