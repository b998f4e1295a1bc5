/*
 * joseki select BOOK [--count N] [--json] [--kif-bonus CP] [--preload] [--bench]
 *                    [--roots FILE | --roots-from-games N [--roots-ply K]]
 *                    [--select cover|pv] [--window CP] [--book-side black|white|both]
 *
 * Shows the leaves think would send next, without thinking: the growth plan's
 * leaves (bookgen/plan.h, the options of tools/cli_plan.h) one after another,
 * each leased (in memory only) before the next. Positions are read from the
 * book as the selector meets them, or all at start with --preload. --bench
 * prints one line "select positions N load_ms L first_ms F leaves_per_s X
 * rss_kb R" instead.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/bigmem.h"
#include "shogi/clock.h"
#include "bookdb/bookdb.h"
#include "bookgen/roots.h"
#include "bookgen/plan.h"
#include "bookgen/selector.h"
#include "minimax/bookmm.h"
#include "shogi/notation.h"
#include "shogi/spec.h"
#include "shogi/position.h"
#include "tools/cli_plan.h"
#include "tools/commands.h"
#include "shogi/memuse.h"

#define LINE_CAP (SEL_MAX_PLY * 7 + 2 * SFEN_MAX)

static long peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	if (!f) return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* The leaf's SFEN and its line "startpos moves ..." / "sfen ... moves ...". */
static int describe(char *sfen, char *line, size_t linecap, Position *pos, const char *root,
                    const SelLeaf *l)
{
	if (sel_leaf_position(pos, root, l) < 0) return -1;
	position_spec_format(line, linecap, root, l->moves, l->nmoves);
	sfen_write(pos, sfen, SFEN_MAX);
	return 0;
}

int cmd_select(int argc, char **argv)
{
	const char *book = NULL;
	long count = 10;
	bool json = false, bench = false, preload = false;
	uint64_t memory = memuse_default_budget();
	SelOptions opt = {.kif_bonus = SEL_KIF_BONUS_DEFAULT, .draw_value = 0};
	CliPlan cp;
	cli_plan_init(&cp);
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "the book"),
	    CLI_NUM("--count", &count, 1, 100000000, "N", "leaves to show (default 10)"),
	    CLI_FLAG("--json", &json, "one JSON object: the leaves"),
	    CLI_NUM("--kif-bonus", &opt.kif_bonus, -VALUE_MATE, VALUE_MATE, "CP",
	            "the bonus for moves played in games (default 100)"),
	    CLI_FLAG("--preload", &preload, "read every position at start"),
	    CLI_FLAG("--bench", &bench, "one line of timings instead"),
	    CLI_MEMORY_HOW(&memory, "arrays in files in $TMPDIR past three quarters of it"),
	    CLI_GROUP(cp.table),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"select", opts, "docs/bookgen.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	if (bench && count < 1000) count = 1000;
	/* The selector's arrays past the budget go to files in $TMPDIR (a
	 * reader: the book's directory may not be writable). */
	bigmem_configure(memory, NULL);

	int ret = 1;
	BookDB *db = NULL;
	Selector *s = NULL;
	Plan *plan = NULL;
	SelLeaf *leaves = NULL;
	RootList roots = {0};
	Position *pos = malloc(sizeof *pos);
	json_t *arr = NULL;
	char *line = NULL;
	int rc;
	char err[BOOKDB_ERRLEN];
	if (!pos) {
		joseki_error("out of memory");
		goto done;
	}
	BookDBOptions bo = {.read_only = true, .random = true};
	if ((rc = bookdb_open(&db, book, &bo, err)) < 0) {
		joseki_error("select: %s", err);
		goto done;
	}
	if (cli_plan_roots(&cp, &roots, db, json || bench, "select", NULL) < 0) goto done;
	if ((rc = sel_new(&s, &opt)) < 0) {
		joseki_error("select: %s", sel_strerror(rc));
		goto done;
	}
	double t0 = clock_ms_f(), c0 = clock_cpu_ms();
	/* Lazy mode's key filter from minimax's kept graph when it vouches for
	 * the book's keys (a pass over the book otherwise). */
	BookMinimaxHook keys = bookmm_hook(NULL);
	if ((rc = preload ? sel_load(s, db) : sel_attach(s, db, &keys)) < 0) {
		joseki_error("select: loading '%s': %s", book, sel_strerror(rc));
		goto done;
	}
	double t_load = clock_ms_f() - t0;
	char perr[SHOGI_ERRLEN];
	if ((rc = plan_new(&plan, s, &cp.plan, (const char *const *)roots.specs, roots.weights,
	                   (int)roots.n, perr)) < 0) {
		joseki_error("select: %s", rc == SEL_EINVAL ? perr : sel_strerror(rc));
		goto done;
	}
	leaves = malloc((size_t)(bench ? 1 : count) * sizeof *leaves);
	if (!leaves) {
		joseki_error("out of memory");
		goto done;
	}
	/* Each leaf leased before the next, as think hands them out. */
	long n = 0;
	double t1 = clock_ms_f(), t_first = 0, cpu_first = 0;
	while (n < count) {
		SelLeaf *l = &leaves[bench ? 0 : n];
		rc = plan_next(plan, l, pos);
		if (n == 0) {
			t_first = clock_ms_f() - t1;
			cpu_first = clock_cpu_ms() - c0;
		}
		if (rc == 0) break;
		if (rc > 0) rc = sel_lease(s, l->key);
		if (rc < 0) {
			joseki_error("select: %s", sel_strerror(rc));
			goto done;
		}
		n++;
	}
	if (bench) {
		double dt = clock_ms_f() - t1 - t_first;
		BookTxn *txn = NULL;
		uint64_t npos = 0;
		int crc = bookdb_txn_begin(&txn, db, false);
		if (crc == 0) crc = bookdb_count(&npos, txn, BOOKDB_POS);
		bookdb_txn_abort(txn);
		if (crc < 0) {
			joseki_error("select: %s: counting the positions: %s", book,
			             bookdb_strerror(crc));
			goto done;
		}
		SelStats ss;
		sel_get_stats(&ss, s);
		BigmemStats bs;
		bigmem_stats(&bs);
		printf("select positions %llu load_ms %.0f first_ms %.0f first_cpu_ms %.0f "
		       "leaves_per_s %.0f rss_kb %ld expansions %llu visits %llu tt_hits %llu "
		       "bans %llu fetches %llu filter_kept %d filter_ms %.0f peak_anon_kb %llu "
		       "files_kb %llu read_ahead %llu ahead_used %llu path_bounds %llu path_hits "
		       "%llu path_ignored %llu\n",
		       (unsigned long long)npos, t_load, t_first, cpu_first,
		       dt > 0 && n > 1 ? (n - 1) * 1000.0 / dt : 0.0, peak_rss_kb(),
		       (unsigned long long)ss.expansions, (unsigned long long)ss.visits,
		       (unsigned long long)ss.tt_hits, (unsigned long long)ss.bans,
		       (unsigned long long)ss.fetches, ss.filter_kept, ss.filter_ms,
		       (unsigned long long)(memuse_anon_peak() / 1024),
		       (unsigned long long)(bs.file_peak / 1024), (unsigned long long)ss.read_ahead,
		       (unsigned long long)ss.ahead_used, (unsigned long long)ss.path_bounds,
		       (unsigned long long)ss.path_hits, (unsigned long long)ss.path_ignored);
		ret = 0;
		goto done;
	}
	line = malloc(LINE_CAP);
	arr = json_array();
	if (!line || !arr) {
		joseki_error("out of memory");
		goto done;
	}
	for (long i = 0; i < n; i++) {
		char sfen[SFEN_MAX], key[KEY_HEX_LEN];
		if (describe(sfen, line, LINE_CAP, pos, plan_root_sfen(plan, leaves[i].root),
		             &leaves[i]) < 0) {
			joseki_error("select: book line %ld does not replay", i);
			goto done;
		}
		key_to_hex(leaves[i].key, key);
		if (json)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:s}", "sfen", sfen,
			                                     "key", key, "value", leaves[i].value,
			                                     "line", line));
		else
			printf("%+6d  %s\n", leaves[i].value, line);
	}
	if (json) {
		if (joseki_print_json(json_pack("{s:O}", "leaves", arr), 0) < 0) goto done;
	}
	ret = 0;
done:
	json_decref(arr);
	free(line);
	free(leaves);
	plan_free(plan);
	sel_free(s);
	bookdb_free(db);
	roots_free(&roots);
	free(pos);
	return ret;
}
