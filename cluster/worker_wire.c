/*
 * cluster/worker_wire.c — the worker's JSON (cluster/worker_wire.h).
 *
 * A lease as the coordinator sends it:
 *   {"lease": "<16 hex>", "expires_in": S,
 *    "positions": [{"sfen": "...", "key": "<32 hex>"}, ...],
 *    "limits": {"nodes": N, "movetime": MS, "depth": D, "multipv": K}}
 * and one result as the worker sends it:
 *   {"key": "...", "moves": [{"move": "7g7f", "score": {"cp": 35}, "depth": 22,
 *                             "nodes": 1000000, "pv": "7g7f 3c3d"}, ...]}
 *   {"key": "...", "failed": "engine exited unexpectedly"}
 */
#include "cluster/worker_wire.h"
#include "shogi/errmsg.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= WORKER_LEASE_ID_MAX) return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '-' || c == '_'))
			return false;
	}
	return true;
}

static bool key_ok(const char *s)
{
	if (strlen(s) != KEY_HEX_LEN - 1) return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
	return true;
}

/* limits.<name> when it is a positive integer; 0 when absent; -1 when wrong. */
static long long limit_of(json_t *limits, const char *name)
{
	json_t *v = json_object_get(limits, name);
	if (!v || json_is_null(v)) return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
	return json_integer_value(v);
}

void worker_lease_free(WorkerLease *l)
{
	if (!l || !l->pos) return;
	for (int i = 0; i < l->n; i++) free(l->pos[i].sfen);
	free(l->pos);
	l->pos = NULL;
	l->n = 0;
}

int worker_lease_parse(WorkerLease *out, const char *body, size_t len, int max, char *err)
{
	memset(out, 0, sizeof *out);
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) return errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease: bad JSON: %s", je.text);
	int rc = -1;
	json_t *id = json_object_get(root, "lease"), *ps = json_object_get(root, "positions");
	json_t *limits = json_object_get(root, "limits"),
	       *exp = json_object_get(root, "expires_in");
	if (!json_is_object(root)) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease: not a JSON object");
		goto done;
	}
	if (!json_is_string(id) || !id_ok(json_string_value(id))) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
		           "lease: \"lease\" is not an id of 1..%d letters, digits, - or _",
		           WORKER_LEASE_ID_MAX - 1);
		goto done;
	}
	snprintf(out->id, sizeof out->id, "%s", json_string_value(id));
	if (exp && json_is_number(exp)) out->expires_in = json_number_value(exp);
	if (!json_is_object(limits)) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease %s: \"limits\" is not an object",
		           out->id);
		goto done;
	}
	static const struct {
		const char *name;
		SearchBudgetKind kind;
	} KINDS[] = {{"nodes", SEARCH_BUDGET_NODES},
	             {"movetime", SEARCH_BUDGET_MOVETIME},
	             {"depth", SEARCH_BUDGET_DEPTH}};
	for (int k = 0; k < 3; k++) {
		long long v = limit_of(limits, KINDS[k].name);
		if (v < 0) {
			errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
			           "lease %s: limits.%s is not a number >= 0", out->id,
			           KINDS[k].name);
			goto done;
		}
		if (v > 0 && !out->budget.kind) {
			out->budget.kind = KINDS[k].kind;
			out->budget.amount = (uint64_t)v;
		}
	}
	if (!out->budget.kind) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
		           "lease %s: limits hold none of nodes, movetime, depth", out->id);
		goto done;
	}
	long long mpv = limit_of(limits, "multipv");
	if (mpv < 0) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease %s: limits.multipv is not a number",
		           out->id);
		goto done;
	}
	out->multipv = mpv < 1 ? 1 : mpv > SEARCH_MULTIPV_MAX ? SEARCH_MULTIPV_MAX : (int)mpv;
	if (max > WORKER_LEASE_MAX) max = WORKER_LEASE_MAX;
	if (!json_is_array(ps) || json_array_size(ps) < 1 || json_array_size(ps) > (size_t)max) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
		           "lease %s: \"positions\" is not an array of 1..%d entries", out->id,
		           max);
		goto done;
	}
	size_t n = json_array_size(ps);
	if (!(out->pos = calloc(n, sizeof *out->pos))) {
		errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease %s: out of memory", out->id);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(ps, i);
		json_t *sfen = json_object_get(p, "sfen"), *key = json_object_get(p, "key");
		if (!json_is_string(sfen) || !json_string_length(sfen) ||
		    json_string_length(sfen) > 1000 ||
		    strlen(json_string_value(sfen)) != json_string_length(sfen)) {
			errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
			           "lease %s: positions[%zu].sfen is not a position", out->id, i);
			goto done;
		}
		if (!json_is_string(key) || !key_ok(json_string_value(key))) {
			errmsg_set(err, WORKER_LEASE_ERRLEN, -1,
			           "lease %s: positions[%zu].key is not 32 lowercase hex digits",
			           out->id, i);
			goto done;
		}
		memcpy(out->pos[i].key, json_string_value(key), KEY_HEX_LEN);
		if (!(out->pos[i].sfen = strdup(json_string_value(sfen)))) {
			errmsg_set(err, WORKER_LEASE_ERRLEN, -1, "lease %s: out of memory",
			           out->id);
			goto done;
		}
		out->n = (int)i + 1;
	}
	rc = 0;
done:
	json_decref(root);
	if (rc < 0) worker_lease_free(out);
	return rc;
}

/* The line's PV as USI moves separated by spaces (the first is the move). */
static void pv_text(char *out, size_t cap, const SearchLine *l)
{
	size_t n = 0;
	out[0] = 0;
	for (int i = 0; i < l->pv_len; i++) {
		char mv[USI_MOVE_MAX];
		size_t k = usi_move_write(l->pv[i], mv);
		if (n + k + 2 > cap) break;
		if (n) out[n++] = ' ';
		memcpy(out + n, mv, k);
		n += k;
		out[n] = 0;
	}
}

static json_t *line_json(const SearchLine *l)
{
	json_t *score;
	if (l->mate) {
		int plies = l->mate_plies;
		if (plies == 0) plies = l->value < 0 ? -1 : 1;
		if (plies > 1000) plies = 1000;
		if (plies < -1000) plies = -1000;
		score = json_pack("{s:i}", "mate", plies);
	} else {
		int cp = l->value > 32000 ? 32000 : l->value < -32000 ? -32000 : l->value;
		score = json_pack("{s:i}", "cp", cp);
	}
	char pv[SEARCH_PV_MAX * (USI_MOVE_MAX + 1) + 1];
	pv_text(pv, sizeof pv, l);
	int depth = l->depth < 0 ? 0 : l->depth > 1000 ? 1000 : l->depth;
	return json_pack("{s:s, s:o, s:i, s:I, s:s}", "move", l->usi, "score", score, "depth",
	                 depth, "nodes", (json_int_t)(l->nodes > INT64_MAX ? INT64_MAX : l->nodes),
	                 "pv", pv);
}

json_t *worker_result_json(const char *key, const SearchResult *res, const char *failed)
{
	if (!res) return json_pack("{s:s, s:s}", "key", key, "failed", failed ? failed : "failed");
	json_t *moves = json_array();
	if (!moves) return NULL;
	for (int i = 0; i < res->nlines; i++) {
		json_t *m = line_json(&res->lines[i]);
		if (!m || json_array_append_new(moves, m) < 0) {
			json_decref(moves);
			return NULL;
		}
	}
	return json_pack("{s:s, s:o}", "key", key, "moves", moves);
}
