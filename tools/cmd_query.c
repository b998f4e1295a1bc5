/*
 * joseki query BOOK POS [--json] — the book's answer for one position
 * (CONTRACT.md "query --json"): moves sorted best first, by minimax value when
 * minimax has run, else by engine evaluation, else by games played.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/bookdb.h"
#include "shogi/notation.h"
#include "shogi/position.h"
#include "tools/commands.h"

/* Best first: by minimax value when minimax has run, else moves with an eval
 * by eval, then games played; ties by move number for a stable order. */
static int cmp_moves(const void *pa, const void *pb, void *ctx)
{
	const BookRecord *rec = ctx;
	const BookMove *a = pa, *b = pb;
	if (rec->flags & BOOKDB_REC_MINIMAX) {
		if (a->value != b->value) return a->value > b->value ? -1 : 1;
	} else {
		int ea = (a->flags & BOOKDB_MOVE_EVAL) != 0, eb = (b->flags & BOOKDB_MOVE_EVAL) != 0;
		if (ea != eb) return ea ? -1 : 1;
		if (ea && a->eval != b->eval) return a->eval > b->eval ? -1 : 1;
	}
	if (a->count != b->count) return a->count > b->count ? -1 : 1;
	return (int)a->move - (int)b->move;
}

int cmd_query(int argc, char **argv)
{
	const char *book = NULL, *spec = NULL;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) json = 1;
		else if (!book) book = argv[i];
		else if (!spec) spec = argv[i];
		else {
			joseki_error("query: unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if (!book || !spec) {
		joseki_error("usage: joseki query BOOK POS [--json]");
		return 2;
	}
	Position *pos = malloc(sizeof *pos);
	BookRecord *rec = malloc(sizeof *rec);
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	json_t *out = NULL;
	int ret = 1;
	char perr[SHOGI_ERRLEN], err[BOOKDB_ERRLEN];
	if (!pos || !rec) {
		joseki_error("out of memory");
		goto done;
	}
	if (position_parse(pos, spec, perr) < 0) {
		joseki_error("query: bad position '%s': %s", spec, perr);
		ret = 2;
		goto done;
	}
	BookDBOptions opt = {.read_only = true};
	int rc = bookdb_open(&db, book, &opt, err);
	if (rc) {
		joseki_error("%s", err);
		goto done;
	}
	if ((rc = bookdb_txn_begin(&txn, db, false))) {
		joseki_error("%s: %s", book, bookdb_strerror(rc));
		goto done;
	}
	Key key = pos_key(pos);
	char hex[KEY_HEX_LEN], sfen[SFEN_MAX];
	key_to_hex(key, hex);
	sfen_write(pos, sfen, sizeof sfen);
	rc = bookdb_get(rec, txn, key);
	if (rc && rc != BOOKDB_ENOTFOUND) {
		joseki_error("%s: record %s: %s", book, hex, bookdb_strerror(rc));
		goto done;
	}
	int in_book = rc == 0;
	if (!in_book) rec->nmoves = 0, rec->flags = 0;
	qsort_r(rec->moves, rec->nmoves, sizeof rec->moves[0], cmp_moves, rec);
	int minimax = (rec->flags & BOOKDB_REC_MINIMAX) != 0;
	out = json_object();
	json_t *moves = json_array();
	json_object_set_new(out, "sfen", json_string(sfen));
	json_object_set_new(out, "key", json_string(hex));
	json_object_set_new(out, "in_book", json_boolean(in_book));
	if (rec->nmoves > 0) {
		char usi[USI_MOVE_MAX];
		usi_move_write(rec->moves[0].move, usi);
		json_object_set_new(out, "bestmove", json_string(usi));
		if (minimax) json_object_set_new(out, "value", json_integer(rec->moves[0].value));
	}
	if (in_book && (rec->flags & BOOKDB_REC_THOUGHT))
		json_object_set_new(out, "thought_depth", json_integer(rec->think_depth));
	if (in_book) json_object_set_new(out, "ply", json_integer(rec->min_ply));
	for (int i = 0; i < rec->nmoves; i++) {
		const BookMove *m = &rec->moves[i];
		char usi[USI_MOVE_MAX];
		usi_move_write(m->move, usi);
		json_t *jm = json_object();
		json_object_set_new(jm, "move", json_string(usi));
		if (minimax) {
			json_object_set_new(jm, "value", json_integer(m->value));
			json_object_set_new(jm, "dist", json_integer(m->dist));
		}
		if (m->flags & BOOKDB_MOVE_EVAL) {
			json_object_set_new(jm, "eval", json_integer(m->eval));
			json_object_set_new(jm, "depth", json_integer(m->depth));
			json_object_set_new(jm, "nodes", json_integer((json_int_t)m->nodes));
			json_object_set_new(jm, "source", json_integer(m->source));
		}
		json_object_set_new(jm, "count", json_integer(m->count));
		json_object_set_new(jm, "wins", json_integer(m->wins));
		json_object_set_new(jm, "draws", json_integer(m->draws));
		json_object_set_new(jm, "losses", json_integer(m->losses));
		json_array_append_new(moves, jm);
	}
	json_object_set_new(out, "moves", moves);
	if (json) {
		char *s = json_dumps(out, JSON_COMPACT);
		if (!s) {
			joseki_error("out of memory");
			goto done;
		}
		puts(s);
		free(s);
	} else {
		printf("sfen %s\nkey %s\n", sfen, hex);
		if (!in_book) {
			printf("not in book\n");
		} else {
			printf("ply %d%s\n", rec->min_ply, (rec->flags & BOOKDB_REC_THOUGHT) ? "" : " (not thought)");
			printf("%-6s %6s %6s %5s %8s %8s %6s %8s\n", "move", "value", "eval", "depth", "count",
			       "wins", "draws", "losses");
			for (int i = 0; i < rec->nmoves; i++) {
				const BookMove *m = &rec->moves[i];
				char usi[USI_MOVE_MAX], v[16] = "-", e[16] = "-", d[16] = "-";
				usi_move_write(m->move, usi);
				if (minimax) snprintf(v, sizeof v, "%d", m->value);
				if (m->flags & BOOKDB_MOVE_EVAL) {
					snprintf(e, sizeof e, "%d", m->eval);
					snprintf(d, sizeof d, "%d", m->depth);
				}
				printf("%-6s %6s %6s %5s %8u %8u %6u %8u\n", usi, v, e, d, m->count, m->wins,
				       m->draws, m->losses);
			}
		}
	}
	ret = 0;
done:
	json_decref(out);
	bookdb_txn_abort(txn);
	bookdb_free(db);
	free(rec);
	free(pos);
	return ret;
}
