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
#include "tools/cli_opt.h"
#include "tools/commands.h"

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
	static const int MOVES[] = {EXPORT_MOVES_BEST, EXPORT_MOVES_WINDOW, EXPORT_MOVES_ALL};
	const char *book = NULL, *out = NULL;
	bool json = false, quiet = false;
	int apery = -1; /* -1: as OUT's name says */
	ExportOptions opt = {.moves = EXPORT_MOVES_WINDOW, .window = 30};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_ARG("OUT", &out, "the file written"),
	    CLI_ENUM("--format", &apery, "yaneuraou|apery", NULL,
	             "YaneuraOu DB2016, or Apery's binary book (default: apery for OUT.bin)"),
	    CLI_ENUM("--moves", &opt.moves, "best|window|all", MOVES,
	             "the best move, those within --window of it (default), all"),
	    CLI_NUM("--window", &opt.window, 0, 64000, "CP",
	            "the window below the best (default 30)"),
	    CLI_NUM("--min-depth", &opt.min_depth, 0, 255, "D",
	            "moves with an evaluation at least this deep"),
	    CLI_NUM("--max-ply", &opt.max_ply, 1, 65535, "N", "positions up to ply N"),
	    CLI_FLAG("--with-avoided", &opt.with_avoided, "also the moves prune marked avoided"),
	    CLI_JSON(&json),
	    CLI_QUIET(&quiet),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"export", opts};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
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
