/*
 * joseki export BOOK OUT [--format yaneuraou|apery] [--moves best|window|all]
 *              [--window CP] [--min-depth D] [--max-ply N] [--with-avoided]
 *              [--depth-field search|distance] [--json] [--quiet]
 *
 * Writes the book as a YaneuraOu DB2016 book sorted for BookOnTheFly, or as
 * an Apery binary book (--format apery, or an OUT named *.bin)
 * (docs/minimax.md). Defaults: --moves window --window 30. Moves joseki prune
 * marked avoided are left out unless --with-avoided. Only moves with a value
 * are written (the minimax value, or before minimax the move's own analysis:
 * never a game comment); a position without one is left out. A YaneuraOu
 * export lists the engine options that make it play the book as it is.
 */
#include <errno.h>
#include <limits.h>
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

/* One YaneuraOu option the book needs, with why (o: JSON object to add it to,
 * or NULL for text on stdout). */
static void yo_option(json_t *o, const char *name, const char *value, const char *why)
{
	if (o) {
		json_t *e = json_pack("{s:s,s:s}", "value", value, "why", why);
		if (e) json_object_set_new(o, name, e);
		return;
	}
	printf("  setoption name %s value %s\n      %s\n", name, value, why);
}

/* The YaneuraOu options that make an engine play the exported book as it is
 * (docs/minimax.md, "Playing the book in YaneuraOu"). */
static void yo_options(json_t *o, const char *out, const ExportStats *st, const ExportOptions *opt)
{
	char v[PATH_MAX + 64], why[256];
	const char *slash = strrchr(out, '/');
	if (!o) printf("export: for YaneuraOu (whose defaults leave parts of a book out), set:\n");
	if (slash)
		snprintf(v, sizeof v, "%.*s", (int)(slash - out), out);
	else
		snprintf(v, sizeof v, ".");
	char dir[PATH_MAX];
	yo_option(o, "BookDir",
	          slash == out       ? "/"
	          : realpath(v, dir) ? dir
	                             : v,
	          "the directory of the book file");
	/* YaneuraOu's BookFile is a choice among its own names. */
	static const char *const NAMES[] = {
	    "standard_book.db", "yaneura_book1.db", "yaneura_book2.db", "yaneura_book3.db",
	    "yaneura_book4.db", "user_book1.db",    "user_book2.db",    "user_book3.db"};
	const char *base = slash ? slash + 1 : out;
	bool named = false;
	for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) named |= !strcmp(base, NAMES[i]);
	if (named) {
		yo_option(o, "BookFile", base, "the book file");
	} else {
		snprintf(why, sizeof why,
		         "YaneuraOu's BookFile is one of its own names (user_book1.db ... "
		         "user_book3.db, standard_book.db, ...): name the file so in BookDir, e.g. "
		         "ln -s %s user_book1.db there",
		         base);
		yo_option(o, "BookFile", "user_book1.db", why);
	}
	yo_option(o, "USI_OwnBook", "true", "the engine's own book is used (the default)");
	yo_option(o, "BookOnTheFly", "true",
	          "the file is sorted for it: looked up on disk, not read into memory");
	yo_option(o, "IgnoreBookPly", "true",
	          "a position is found whatever the ply it is reached at (the file has the "
	          "smallest)");
	int moves = st->ply_hi > EXPORT_YO_BOOK_MOVES ? st->ply_hi : EXPORT_YO_BOOK_MOVES;
	snprintf(v, sizeof v, "%d", moves);
	snprintf(why, sizeof why,
	         "the book reaches ply %d; the default %d uses it up to ply %d (%zu positions "
	         "beyond)",
	         st->ply_hi, EXPORT_YO_BOOK_MOVES, EXPORT_YO_BOOK_MOVES, st->yo_late);
	yo_option(o, "BookMoves", v, why);
	snprintf(v, sizeof v, "%d", st->depth_lo < EXPORT_YO_DEPTH_LIMIT ? st->depth_lo : 16);
	snprintf(why, sizeof why,
	         "the shallowest best move has depth %d (%s); the default %d leaves out %zu "
	         "of %zu positions",
	         st->depth_lo,
	         opt->depth_field == EXPORT_DEPTH_DISTANCE ? "plies to its leaf"
	         : st->from_games                          ? "values from games have none"
	                                                   : "of its analysis",
	         EXPORT_YO_DEPTH_LIMIT, st->yo_shallow, st->positions);
	yo_option(o, "BookDepthLimit", v, why);
	static const char *const SIDE[2] = {"Black", "White"};
	static const int LIMIT[2] = {EXPORT_YO_BLACK_LIMIT, EXPORT_YO_WHITE_LIMIT};
	for (int c = 0; c < 2; c++) {
		char name[32];
		snprintf(name, sizeof name, "BookEval%sLimit", SIDE[c]);
		int lo = st->value_lo[c] == INT_MAX ? LIMIT[c] : st->value_lo[c];
		snprintf(v, sizeof v, "%d", lo < LIMIT[c] ? lo : LIMIT[c]);
		snprintf(why, sizeof why,
		         "%s's lowest best move is valued %d; the default %d leaves out %zu "
		         "positions (the engine then searches, as it may prefer)",
		         SIDE[c], lo, LIMIT[c], st->yo_below[c]);
		yo_option(o, name, v, why);
	}
	if (opt->moves == EXPORT_MOVES_WINDOW) {
		snprintf(v, sizeof v, "%d", opt->window);
		snprintf(why, sizeof why,
		         "this file holds the moves within %d of the best: the engine picks "
		         "among them at random (0 plays the best alone)",
		         opt->window);
	} else {
		snprintf(v, sizeof v, "%d", opt->moves == EXPORT_MOVES_BEST ? 30 : 0);
		snprintf(why, sizeof why, "%s",
		         opt->moves == EXPORT_MOVES_BEST
		             ? "one move a position here: any value plays it"
		             : "every valued move is in the file: 0 plays the best alone");
	}
	yo_option(o, "BookEvalDiff", v, why);
	if (st->from_games && !o)
		printf("  note: the values of %zu positions come from games alone (minimax "
		       "--games-book), not analyses: a move won in its only game is +2757, lost "
		       "-2757; minimax --games-min N trusts only moves of N games or more\n",
		       st->from_games);
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
	    CLI_ENUM("--depth-field", &opt.depth_field, "search|distance", NULL,
	             "YaneuraOu's depth field: the analysis's search depth (default), or the "
	             "plies to the leaf as makebook peta_shock writes it"),
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
		} else if (o) {
			json_object_set_new(o, "depth_field",
			                    json_string(opt.depth_field == EXPORT_DEPTH_DISTANCE
			                                    ? "distance"
			                                    : "search"));
			json_t *yo = json_object();
			if (st.positions) yo_options(yo, out, &st, &opt);
			json_object_set_new(o, "yaneuraou_options", yo);
		}
		if (joseki_print_json(o, 0) < 0) return 1;
	} else {
		if (!apery && !quiet && st.positions) yo_options(NULL, out, &st, &opt);
		printf("export: %zu of %zu positions (%zu with minimax values%s), %zu moves, wrote "
		       "%s, %.0f ms\n",
		       st.positions, st.records, st.minimaxed - st.from_games,
		       st.from_games ? ", the others from games alone" : "", st.moves, out, ms);
		if (apery && st.collisions)
			fprintf(
			    stderr,
			    "export: %zu entries left out: their Apery key names another position "
			    "too\n",
			    st.collisions);
	}
	return 0;
}
