/*
 * joseki select BOOK [--count N] [--json] [--roots FILE] [--window CP]
 *                    [--kif-bonus CP] [--sqrt] [--book-side black|white] [--preload]
 *                    [--bench]
 *
 * Shows the leaves the selector would send next, without thinking: one
 * selection after another, each leaf leased (in memory only) before the next,
 * or with --window one ranged search per root giving every leaf within the
 * window (--sqrt: the book side only its best moves). Positions are read from
 * the book as the selector meets them, or all at start with --preload.
 * --bench prints one line
 * "select positions N load_ms L first_ms F leaves_per_s X rss_kb R" instead.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shogi/clock.h"
#include "bookdb/bookdb.h"
#include "bookgen/roots.h"
#include "bookgen/selector.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/commands.h"

#define SELECT_MAX_ROOTS 4096
#define LINE_CAP (SEL_MAX_PLY * 7 + 2 * SFEN_MAX)

typedef struct {
	char sfen[SFEN_MAX]; /* the root, set up afresh for each leaf (short history) */
	bool startpos;
} RootSpec;

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

static int add_root(Selector *s, RootSpec *roots, int *nroots, Position *pos, const char *spec,
                    const char *where)
{
	char err[SHOGI_ERRLEN];
	if (*nroots >= SELECT_MAX_ROOTS) {
		joseki_error("select: %s: more than %d roots", where, SELECT_MAX_ROOTS);
		return -1;
	}
	if (position_parse(pos, spec, err) < 0) {
		joseki_error("select: %s: bad position '%s': %s", where, spec, err);
		return -1;
	}
	RootSpec *r = &roots[*nroots];
	sfen_write(pos, r->sfen, sizeof r->sfen);
	Position *start = malloc(sizeof *start);
	if (!start) return -1;
	pos_set_startpos(start);
	r->startpos = key_equal(pos_key(pos), pos_key(start)) && pos->game_ply == 1;
	free(start);
	int rc = sel_add_root(s, pos_key(pos), pos->side);
	if (rc < 0) {
		joseki_error("select: %s: %s", where, sel_strerror(rc));
		return -1;
	}
	(*nroots)++;
	return 0;
}

static int read_roots(Selector *s, RootSpec *roots, int *nroots, Position *pos, const char *path)
{
	RootList rl = {0};
	char err[ROOTS_ERRLEN];
	int ret = 0;
	if (roots_from_lines(&rl, path, err) < 0) {
		joseki_error("select: %s", err);
		ret = -1;
	} else if (rl.n == 0) {
		joseki_error("select: roots file '%s' holds no position", path);
		ret = -1;
	}
	for (size_t i = 0; !ret && i < rl.n; i++)
		if (add_root(s, roots, nroots, pos, rl.specs[i], path) < 0) ret = -1;
	roots_free(&rl);
	return ret;
}

/* The leaf's SFEN and its line "startpos moves ..." / "sfen ... moves ...". */
static int describe(char *sfen, char *line, size_t linecap, Position *pos, const RootSpec *root,
                    const SelLeaf *l)
{
	if (sel_leaf_position(pos, root->sfen, l) < 0) return -1;
	size_t n =
	    (size_t)snprintf(line, linecap, root->startpos ? "startpos" : "sfen %s", root->sfen);
	if (l->nmoves > 0 && n < linecap) n += (size_t)snprintf(line + n, linecap - n, " moves");
	for (int j = 0; j < l->nmoves; j++) {
		char mv[USI_MOVE_MAX];
		usi_move_write(l->moves[j], mv);
		if (n < linecap) n += (size_t)snprintf(line + n, linecap - n, " %s", mv);
	}
	sfen_write(pos, sfen, SFEN_MAX);
	return 0;
}

int cmd_select(int argc, char **argv)
{
	const char *book = NULL, *roots_file = NULL;
	long count = -1, window = -1;
	int json = 0, sqrt_mode = 0, bench = 0, book_side = -1, preload = 0;
	SelOptions opt = {.kif_bonus = SEL_KIF_BONUS_DEFAULT, .draw_value = 0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		char *end;
		if (!strcmp(a, "--json"))
			json = 1;
		else if (!strcmp(a, "--sqrt"))
			sqrt_mode = 1;
		else if (!strcmp(a, "--bench"))
			bench = 1;
		else if (!strcmp(a, "--preload"))
			preload = 1;
		else if (!strcmp(a, "--count") && has) {
			count = strtol(argv[++i], &end, 10);
			if (*end || count < 1) {
				joseki_error("select: --count wants a positive number, not '%s'",
				             argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--window") && has) {
			window = strtol(argv[++i], &end, 10);
			if (*end || window < 0 || window > 64000) {
				joseki_error("select: --window wants centipawns >= 0, not '%s'",
				             argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--kif-bonus") && has) {
			long b = strtol(argv[++i], &end, 10);
			if (*end || b < -VALUE_MATE || b > VALUE_MATE) {
				joseki_error("select: --kif-bonus wants centipawns, not '%s'",
				             argv[i]);
				return 2;
			}
			opt.kif_bonus = (int)b;
		} else if (!strcmp(a, "--roots") && has) {
			roots_file = argv[++i];
		} else if (!strcmp(a, "--book-side") && has) {
			i++;
			if (!strcmp(argv[i], "black"))
				book_side = BLACK;
			else if (!strcmp(argv[i], "white"))
				book_side = WHITE;
			else {
				joseki_error("select: --book-side wants black or white, not '%s'",
				             argv[i]);
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			joseki_error("select: unknown or incomplete option '%s'", a);
			return 2;
		} else if (!book) {
			book = a;
		} else {
			joseki_error("select: unexpected argument '%s'", a);
			return 2;
		}
	}
	if (!book) {
		joseki_error("usage: joseki select BOOK [--count N] [--json] [--roots FILE] "
		             "[--window CP] [--kif-bonus CP] [--sqrt] [--book-side black|white]");
		return 2;
	}
	if (sqrt_mode && window < 0) window = 0;
	if (count < 0) count = window >= 0 ? 100000 : 10;
	if (bench && count < 1000) count = 1000;

	int ret = 1;
	BookDB *db = NULL;
	Selector *s = NULL;
	SelLeaf *leaves = NULL;
	RootSpec *roots = calloc(SELECT_MAX_ROOTS, sizeof *roots);
	Position *pos = malloc(sizeof *pos);
	json_t *arr = NULL;
	char *line = NULL;
	int nroots = 0, rc;
	char err[BOOKDB_ERRLEN];
	if (!roots || !pos) {
		joseki_error("out of memory");
		goto done;
	}
	BookDBOptions bo = {.read_only = true};
	if ((rc = bookdb_open(&db, book, &bo, err)) < 0) {
		joseki_error("select: %s", err);
		goto done;
	}
	if ((rc = sel_new(&s, &opt)) < 0) {
		joseki_error("select: %s", sel_strerror(rc));
		goto done;
	}
	double t0 = clock_ms_f();
	if ((rc = preload ? sel_load(s, db) : sel_attach(s, db)) < 0) {
		joseki_error("select: loading '%s': %s", book, sel_strerror(rc));
		goto done;
	}
	double t_load = clock_ms_f() - t0;
	if (roots_file) {
		if (read_roots(s, roots, &nroots, pos, roots_file) < 0) goto done;
	} else if (add_root(s, roots, &nroots, pos, "startpos", "default root") < 0) {
		goto done;
	}
	size_t cap = window >= 0 ? (size_t)count : 1;
	leaves = malloc(cap * sizeof *leaves);
	if (!leaves) {
		joseki_error("out of memory");
		goto done;
	}
	if (bench) {
		double t1 = clock_ms_f();
		rc = sel_select(&leaves[0], s);
		double t_first = clock_ms_f() - t1;
		long got = 0;
		double t2 = clock_ms_f();
		while (rc > 0 && got < count) {
			got++;
			if ((rc = sel_lease(s, leaves[0].key)) < 0) break;
			rc = sel_select(&leaves[0], s);
		}
		double dt = clock_ms_f() - t2;
		if (rc < 0) {
			joseki_error("select: %s", sel_strerror(rc));
			goto done;
		}
		BookTxn *txn = NULL;
		uint64_t npos = 0;
		if (bookdb_txn_begin(&txn, db, false) == 0) bookdb_count(&npos, txn, BOOKDB_POS);
		bookdb_txn_abort(txn);
		printf("select positions %llu load_ms %.0f first_ms %.0f leaves_per_s %.0f rss_kb "
		       "%ld\n",
		       (unsigned long long)npos, t_load, t_first, dt > 0 ? got * 1000.0 / dt : 0.0,
		       peak_rss_kb());
		ret = 0;
		goto done;
	}
	long n = 0;
	if (window >= 0) {
		rc = sel_select_batch(leaves, cap, s, (int)window,
		                      sqrt_mode ? SEL_BATCH_SQRT : SEL_BATCH_WINDOW, book_side);
		if (rc < 0) {
			joseki_error("select: %s", sel_strerror(rc));
			goto done;
		}
		n = rc;
	} else {
		leaves = realloc(leaves, (size_t)count * sizeof *leaves);
		if (!leaves) {
			joseki_error("out of memory");
			goto done;
		}
		while (n < count) {
			rc = sel_select(&leaves[n], s);
			if (rc == 0) break;
			if (rc > 0) rc = sel_lease(s, leaves[n].key);
			if (rc < 0) {
				joseki_error("select: %s", sel_strerror(rc));
				goto done;
			}
			n++;
		}
	}
	line = malloc(LINE_CAP);
	arr = json_array();
	if (!line || !arr) {
		joseki_error("out of memory");
		goto done;
	}
	for (long i = 0; i < n; i++) {
		char sfen[SFEN_MAX], key[KEY_HEX_LEN];
		if (describe(sfen, line, LINE_CAP, pos, &roots[leaves[i].root], &leaves[i]) < 0) {
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
	sel_free(s);
	bookdb_free(db);
	free(roots);
	free(pos);
	return ret;
}
