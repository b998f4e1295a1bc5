/*
 * joseki export BOOK OUT [--format yaneuraou] [--moves best|window|all]
 *              [--window CP] [--min-depth D] [--max-ply N] [--json]
 *
 * Writes the book as a YaneuraOu DB2016 book sorted for BookOnTheFly
 * (docs/minimax.md). Defaults: --moves window --window 30.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "minimax/export.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define USAGE                                                                             \
	"usage: joseki export BOOK OUT [--format yaneuraou] [--moves best|window|all] "  \
	"[--window CP] [--min-depth D] [--max-ply N] [--json]"

static int parse_int(int *out, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) return -1;
	*out = (int)v;
	return 0;
}

int cmd_export(int argc, char **argv)
{
	const char *book = NULL, *out = NULL;
	bool json = false;
	ExportOptions opt = {EXPORT_MOVES_WINDOW, 30, 0, 0, 0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			json = true;
			continue;
		}
		if (!strcmp(a, "--format") || !strcmp(a, "--moves") || !strcmp(a, "--window") ||
		    !strcmp(a, "--min-depth") || !strcmp(a, "--max-ply")) {
			bool ok = v != NULL;
			if (ok && !strcmp(a, "--format")) ok = !strcmp(v, "yaneuraou");
			else if (ok && !strcmp(a, "--moves")) {
				if (!strcmp(v, "best")) opt.moves = EXPORT_MOVES_BEST;
				else if (!strcmp(v, "window")) opt.moves = EXPORT_MOVES_WINDOW;
				else if (!strcmp(v, "all")) opt.moves = EXPORT_MOVES_ALL;
				else ok = false;
			} else if (ok && !strcmp(a, "--window")) ok = parse_int(&opt.window, v, 0, 64000) == 0;
			else if (ok && !strcmp(a, "--min-depth")) ok = parse_int(&opt.min_depth, v, 0, 255) == 0;
			else if (ok) ok = parse_int(&opt.max_ply, v, 1, 65535) == 0;
			if (!ok) {
				joseki_error("export: bad or missing value for %s%s%s\n" USAGE, a,
					     v ? ": " : "", v ? v : "");
				return 2;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			joseki_error("export: unknown option '%s'\n" USAGE, a);
			return 2;
		} else if (!book) book = a;
		else if (!out) out = a;
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
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	BookDB *db;
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true};
	if (bookdb_open(&db, book, &ro, err) < 0) {
		joseki_error("export: %s", err);
		return 1;
	}
	ExportStats st;
	char msg[512];
	int rc = export_yaneuraou(&st, db, out, &opt, msg, sizeof msg);
	bookdb_free(db);
	if (rc < 0) {
		joseki_error("export: %s (nothing written)", msg);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (json)
		printf("{\"records\":%zu,\"positions\":%zu,\"moves\":%zu,\"minimaxed\":%zu,"
		       "\"out\":\"%s\",\"time_ms\":%.0f}\n",
		       st.records, st.positions, st.moves, st.minimaxed, out, ms);
	else
		printf("export: %zu of %zu positions (%zu with minimax values), %zu moves, wrote %s\n",
		       st.positions, st.records, st.minimaxed, st.moves, out);
	return 0;
}
