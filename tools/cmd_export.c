/*
 * joseki export BOOK OUT [--format yaneuraou|apery|kif|ki2] [--moves best|window|all]
 *              [--window CP] [--min-depth D] [--min-games N] [--min-ply N] [--max-ply N]
 *              [--side black|white] [--root POS]... [--roots FILE] [--with-avoided]
 *              [--count value|games|one] [--depth-field search|distance]
 *              [--plies N] [--encoding utf-8|sjis] [--json] [--quiet]
 *
 * Writes the book as a YaneuraOu DB2016 book sorted for BookOnTheFly, as an
 * Apery binary book (--format apery, or an OUT named *.bin), or its tree
 * from a position as a KIF or KI2 record with variations (--format kif|ki2,
 * or an OUT named *.kif *.kifu *.ki2 *.ki2u; Shift_JIS for .kif and .ki2)
 * (docs/minimax.md). Defaults: --moves window --window 30. Moves marked
 * avoided are left out unless --with-avoided; a preferred move within its
 * window of the best is the one written first. Only moves with a value
 * are written (the minimax value, or before minimax the move's own analysis:
 * never a game comment); a position without one is left out. The filters
 * make partial books (a ply range, one side's positions, moves within CP of
 * the best, a depth or games floor, the positions reached from roots); a
 * KIF or KI2 tree takes them all but --min-ply (it starts at its root) and
 * has no count field (--count). Filters that contradict each other or would
 * be ignored (--min-ply past --max-ply, --window without --moves window) are
 * usage errors. A YaneuraOu export lists the engine options that make it
 * play the book as it is (those of a side it has positions of).
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

#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "shogi/memuse.h"
#include "minimax/export.h"
#include "shogi/position.h"
#include "tools/cli_minimax.h"
#include "tools/cli_opt.h"
#include "bookgen/roots.h"
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
	printf("  setoption name %s value %s\n      ", name, value);
	cli_wrap(stdout, why, 6, 6, CLI_CONSOLE_WIDTH);
}

/* The YaneuraOu options that make an engine play the exported book as it is
 * (docs/minimax.md, "Playing the book in YaneuraOu"). */
static void yo_options(json_t *o, const char *out, const ExportStats *st, const ExportOptions *opt)
{
	char v[PATH_MAX + 64], why[256];
	if (!o) printf("export: for YaneuraOu (whose defaults leave parts of a book out), set:\n");
	bigmem_dir_of(v, sizeof v, out);
	char dir[PATH_MAX];
	yo_option(o, "BookDir", realpath(v, dir) ? dir : v, "the directory of the book file");
	/* YaneuraOu's BookFile is a choice among its own names. */
	static const char *const NAMES[] = {
	    "standard_book.db", "yaneura_book1.db", "yaneura_book2.db", "yaneura_book3.db",
	    "yaneura_book4.db", "user_book1.db",    "user_book2.db",    "user_book3.db"};
	const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
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
		/* Nothing to say of a side the file has no position of. */
		if (st->value_lo[c] == INT_MAX) continue;
		char name[32];
		snprintf(name, sizeof name, "BookEval%sLimit", SIDE[c]);
		int lo = st->value_lo[c];
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
		             : "every valued move the book plays is in the file: 0 plays the best "
		               "alone");
	}
	yo_option(o, "BookEvalDiff", v, why);
	if (st->from_games && !o)
		printf("  note: the values of %zu positions come from games alone (minimax "
		       "--games-book), not analyses: a move won in its only game is +2757, lost "
		       "-2757; minimax --games-min N trusts only moves of N games or more\n",
		       st->from_games);
}

enum { FORMAT_YANEURAOU, FORMAT_APERY, FORMAT_KIF, FORMAT_KI2 };

/* The format OUT's name says (.bin Apery, .kif/.kifu KIF, .ki2/.ki2u KI2),
 * and whether its encoding is Shift_JIS (.kif, .ki2). */
static int format_of(const char *out, bool *sjis)
{
	static const struct {
		const char *ext;
		int format;
		bool sjis;
	} EXT[] = {{".bin", FORMAT_APERY, false},
	           {".kif", FORMAT_KIF, true},
	           {".kifu", FORMAT_KIF, false},
	           {".ki2", FORMAT_KI2, true},
	           {".ki2u", FORMAT_KI2, false}};
	size_t n = strlen(out);
	for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++) {
		size_t e = strlen(EXT[i].ext);
		if (n > e && !strcasecmp(out + n - e, EXT[i].ext)) {
			*sjis = EXT[i].sjis;
			return EXT[i].format;
		}
	}
	*sjis = false;
	return FORMAT_YANEURAOU;
}

int cmd_export(int argc, char **argv)
{
	static const int MOVES[] = {EXPORT_MOVES_BEST, EXPORT_MOVES_WINDOW, EXPORT_MOVES_ALL};
	static const int SIDES[] = {EXPORT_SIDE_BLACK, EXPORT_SIDE_WHITE};
	enum { MAX_ROOTS = 1024 };
	const char *book = NULL, *out = NULL, *roots_file = NULL, *root_args[MAX_ROOTS];
	int nroot_args = 0;
	bool json = false, quiet = false;
	int format = -1;   /* -1: as OUT's name says */
	int encoding = -1; /* -1: as OUT's name says; 0 UTF-8, 1 Shift_JIS */
	uint64_t min_games = 0;
	bool window_given = false, count_given = false;
	ExportOptions opt = {.moves = EXPORT_MOVES_WINDOW, .window = 30};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_ARG("OUT", &out, "the file written"),
	    CLI_ENUM("--format", &format, "yaneuraou|apery|kif|ki2", NULL,
	             "YaneuraOu DB2016, Apery's binary book, or the tree as a KIF or KI2 record "
	             "(default: by OUT's name: .bin, .kif .kifu, .ki2 .ki2u; else yaneuraou)"),
	    CLI_ENUM("--moves", &opt.moves, "best|window|all", MOVES,
	             "the best move, those within --window of it (default), all"),
	    CLI_NUM("--window", &opt.window, 0, 64000, "CP",
	            "with --moves window: the window below the best (default 30)",
	            CLI_TAG(&window_given, true)),
	    CLI_NUM("--min-depth", &opt.min_depth, 0, 255, "D",
	            "moves with an evaluation at least this deep (default 0: any)"),
	    CLI_NUM("--min-games", &min_games, 0, UINT32_MAX, "N",
	            "moves played in at least N games (default 0: any)"),
	    CLI_NUM("--min-ply", &opt.min_ply, 1, 65535, "N",
	            "YaneuraOu, Apery: positions from ply N (default 1)"),
	    CLI_NUM("--max-ply", &opt.max_ply, 1, 65535, "N",
	            "positions up to ply N (default: every ply)"),
	    CLI_ENUM("--side", &opt.side, "black|white", SIDES,
	             "the book for one side: its positions only (KIF: the other side's every "
	             "reply; default: both sides)"),
	    CLI_STR("--root", root_args, "POS",
	            "only the positions reached from POS by the moves written (the other side "
	            "with --side: every reply); KIF: the tree's root (default startpos)",
	            CLI_MANY(&nroot_args, MAX_ROOTS)),
	    CLI_STR("--roots", &roots_file, "FILE",
	            "roots as --root, one a line (# comments; default: none)"),
	    CLI_FLAG("--with-avoided", &opt.with_avoided, "also the moves marked avoided"),
	    CLI_ENUM("--count", &opt.count, "value|games|one", NULL,
	             "YaneuraOu, Apery: the count field: games, raised so that the count order "
	             "is the value order (default); games as they are (most played first); 1",
	             CLI_TAG(&count_given, true)),
	    CLI_ENUM("--depth-field", &opt.depth_field, "search|distance", NULL,
	             "YaneuraOu's depth field: the analysis's search depth (default), or the "
	             "plies to the leaf as makebook peta_shock writes it"),
	    CLI_NUM("--plies", &opt.plies, 1, EXPORT_KIF_MAX_PLIES, "N",
	            "KIF, KI2: the tree's depth from its root (default 8)"),
	    CLI_ENUM("--encoding", &encoding, "utf-8|sjis", NULL,
	             "KIF, KI2: the text's encoding (default: Shift_JIS for .kif and .ki2, "
	             "else UTF-8)"),
	    CLI_MEMORY(&opt.memory),
	    CLI_JSON(&json),
	    CLI_FLAG("--quiet", &quiet,
	             "no progress line, and no setoption lines after a YaneuraOu book"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"export", opts, "docs/minimax.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (cli_output_file(&cmd, out)) return 1;
	bool sjis;
	int by_name = format_of(out, &sjis);
	if (format < 0) format = by_name;
	if (encoding >= 0) sjis = encoding == 1;
	bool tree = format == FORMAT_KIF || format == FORMAT_KI2;
	if (!tree && (opt.plies || encoding >= 0))
		return cli_usage_error(&cmd, "--plies and --encoding are for --format kif or ki2");
	/* A tree starts at its root and has no count field. */
	if (tree && (opt.min_ply || count_given))
		return cli_usage_error(
		    &cmd,
		    "%s is for the yaneuraou and apery formats: a KIF or KI2 tree "
		    "%s",
		    opt.min_ply ? "--min-ply" : "--count",
		    opt.min_ply ? "starts at its root (give --root the position "
		                  "to start from; --max-ply and --plies cut it)"
		                : "has no count field");
	if (opt.min_ply && opt.max_ply && opt.min_ply > opt.max_ply)
		return cli_usage_error(&cmd,
		                       "--min-ply %d is past --max-ply %d: no position is left",
		                       opt.min_ply, opt.max_ply);
	if (window_given && opt.moves != EXPORT_MOVES_WINDOW)
		return cli_usage_error(&cmd,
		                       "--window is for --moves window (the default); --moves %s "
		                       "writes %s",
		                       opt.moves == EXPORT_MOVES_ALL ? "all" : "best",
		                       opt.moves == EXPORT_MOVES_ALL ? "every valued move"
		                                                     : "the best move alone");
	if (tree && nroot_args > 1)
		return cli_usage_error(&cmd, "a %s record has one root, not %d (--root once)",
		                       format == FORMAT_KI2 ? "KI2" : "KIF", nroot_args);
	if (!tree) sjis = false;
	opt.min_games = (uint32_t)min_games;
	opt.ki2 = format == FORMAT_KI2;
	opt.sjis = sjis;
	opt.book_name = book;
	/* The roots given, then --roots FILE's (one position a line, # comments;
	 * a bad one named by its file and line). */
	RootList roots = {0};
	int ret = 1;
	BookDB *db = NULL;
	char rerr[ROOTS_ERRLEN];
	for (int i = 0; i < nroot_args; i++)
		if (roots_add(&roots, root_args[i]) < 0) {
			joseki_error("out of memory");
			goto done;
		}
	if (roots_file && roots_from_lines(&roots, roots_file, rerr) < 0) {
		joseki_error("export: --roots: %s", rerr);
		goto done;
	}
	int nroots = (int)roots.n;
	opt.roots = (const char *const *)roots.specs;
	opt.nroots = nroots;
	shogi_init();
	double t0 = clock_ms_f();
	char err[BOOKDB_ERRLEN];
	BookDBOptions ro = {.read_only = true, .random = true}; /* passes read ahead: bookdb.h */
	if (bookdb_open(&db, book, &ro, err) < 0) {
		db = NULL;
		joseki_error("export: %s", err);
		goto done;
	}
	/* Writes since the last minimax run: their values are not backed up (an
	 * export right after a coordinator stops, before its next run). */
	cli_minimax_backlog("export", db, book);
	/* A book of games alone (ingested, never analysed): nothing of it is a
	 * value, so nothing is exported, which is said below. */
	BookCounts counts = {0};
	BookTxn *ct;
	if (bookdb_txn_begin(&ct, db, false) == 0) {
		if (bookdb_counts(&counts, ct) < 0) counts.kept = false;
		bookdb_txn_abort(ct);
	}
	ExportStats st;
	char msg[EXPORT_ERRLEN];
	bool progress = !quiet && isatty(2);
	if (progress) opt.progress = on_progress;
	bool apery = format == FORMAT_APERY, kif = tree;
	int rc = kif     ? export_kif(&st, db, out, &opt, msg)
	         : apery ? export_apery(&st, db, out, &opt, msg)
	                 : export_yaneuraou(&st, db, out, &opt, msg);
	if (progress) fputs("\r\033[K", stderr);
	bookdb_free(db);
	db = NULL;
	if (rc < 0) {
		joseki_error("export: %s (nothing written)", msg);
		goto done;
	}
	double ms = clock_ms_f() - t0;
	uint64_t peak = memuse_anon_peak();
	char peak_text[32], spill_text[32];
	memuse_format(peak, peak_text, sizeof peak_text);
	memuse_format(st.spill_bytes, spill_text, sizeof spill_text);
	if (json) {
		json_t *o = json_pack(
		    "{s:I,s:I,s:I,s:I,s:s,s:I}", "records", (json_int_t)st.records, "positions",
		    (json_int_t)st.positions, "moves", (json_int_t)st.moves, "minimaxed",
		    (json_int_t)st.minimaxed, "out", out, "time_ms", (json_int_t)(ms + 0.5));
		if (o) json_object_set_new(o, "peak_anon_bytes", json_integer((json_int_t)peak));
		if (o && !kif) {
			json_object_set_new(o, "spill_bytes",
			                    json_integer((json_int_t)st.spill_bytes));
			json_object_set_new(o, "phases_ms",
			                    json_pack("{s:I,s:I,s:I,s:I,s:I}", "reach",
			                              (json_int_t)(st.reach_ms + 0.5), "read",
			                              (json_int_t)(st.read_ms + 0.5), "join",
			                              (json_int_t)(st.join_ms + 0.5), "blocks",
			                              (json_int_t)(st.blocks_ms + 0.5), "write",
			                              (json_int_t)(st.write_ms + 0.5)));
		}
		if (o && nroots)
			json_object_set_new(o, "reached", json_integer((json_int_t)st.reached));
		if (o && kif) {
			json_object_set_new(o, "format", json_string(opt.ki2 ? "ki2" : "kif"));
			json_object_set_new(o, "plies", json_integer(st.tree_plies));
			json_object_set_new(o, "encoding", json_string(sjis ? "sjis" : "utf-8"));
		} else if (o && apery) {
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
		if (joseki_print_json(o, 0) < 0) goto done;
	} else if (kif) {
		char line[PATH_MAX + 512];
		snprintf(line, sizeof line,
		         "export: a %s tree of %zu positions and %zu moves, %d pl%s deep, from %s "
		         "(%s), wrote %s, %.0f ms, peak memory %s",
		         opt.ki2 ? "KI2" : "KIF", st.positions, st.moves, st.tree_plies,
		         st.tree_plies == 1 ? "y" : "ies", nroots ? opt.roots[0] : "startpos",
		         sjis ? "Shift_JIS" : "UTF-8", out, ms, peak_text);
		cli_wrap(stdout, line, 0, 2, CLI_CONSOLE_WIDTH);
	} else {
		if (!apery && !quiet && st.positions) yo_options(NULL, out, &st, &opt);
		if (nroots)
			printf("export: %zu positions reached from %d root%s\n", st.reached, nroots,
			       nroots == 1 ? "" : "s");
		char line[PATH_MAX + 512];
		snprintf(
		    line, sizeof line,
		    "export: %zu of %zu positions (%zu with minimax values%s), %zu moves, wrote "
		    "%s, %.0f ms, peak memory %s, %s sorted on disk",
		    st.positions, st.records, st.minimaxed - st.from_games,
		    st.from_games ? ", the others from games alone" : "", st.moves, out, ms,
		    peak_text, st.spill_bytes ? spill_text : "none");
		cli_wrap(stdout, line, 0, 2, CLI_CONSOLE_WIDTH);
		if (!st.positions && st.records && counts.kept && !counts.thought) {
			char note[PATH_MAX + 512];
			snprintf(
			    note, sizeof note,
			    "joseki: export: %s: none of its %zu positions has an analysis, and a "
			    "game comment is no value (docs/minimax.md, \"Where values come "
			    "from\"): analyse some first (joseki think %s), or make a book of its "
			    "games' results (joseki minimax %s --games-book most-played)",
			    book, st.records, book, book);
			cli_wrap(stderr, note, 0, 2, CLI_CONSOLE_WIDTH);
		}
		if (apery && st.collisions)
			fprintf(
			    stderr,
			    "export: %zu entries left out: their Apery key names another position "
			    "too\n",
			    st.collisions);
	}
	ret = 0;
done:
	bookdb_free(db);
	roots_free(&roots);
	return ret;
}
