/* server/history_api.c — GET /v1/work/history (history_api.h). */
#include "server/history_api.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/coord_history.h"
#include "server/api.h"
#include "shogi/japanese.h"
#include "shogi/notation.h"
#include "shogi/position.h"

/* The point's line as a player writes it (▲２六歩 △８四歩 ...), from its root:
 * a new reference; the last point's when the root and line are the same (a
 * run's points mostly are), NULL without a root. pos: scratch. */
typedef struct {
	Position *pos;
	const CoordHistPoint *last;
	json_t *names;
} Names;

static json_t *pv_names(Names *nm, const CoordHistPoint *p)
{
	if (!p->root[0] || !nm->pos) return NULL;
	if (nm->last && nm->names && !strcmp(nm->last->root, p->root) &&
	    !strcmp(nm->last->pv, p->pv))
		return json_incref(nm->names);
	json_decref(nm->names);
	nm->names = json_array();
	nm->last = p;
	if (sfen_parse(nm->pos, p->root, NULL, NULL) < 0) return json_incref(nm->names);
	Square prev_to = SQ_NONE;
	for (const char *s = p->pv; *s;) {
		size_t n = strcspn(s, " ");
		Move m;
		char name[JA_MOVE_MAX];
		if (usi_move_parse_legal(&m, nm->pos, s, n, NULL) < 0 ||
		    !ja_move_write(nm->pos, m, prev_to, true, NULL, 0, name))
			break; /* a line the rules refuse is named as far as it goes */
		json_array_append_new(nm->names, json_string(name));
		prev_to = move_to(m);
		pos_do_move(nm->pos, m);
		s += n;
		while (*s == ' ') s++;
	}
	return json_incref(nm->names);
}

static json_t *point_json(const CoordHistPoint *p, Names *nm)
{
	json_t *o = json_pack(
	    "{s:I, s:i, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "t",
	    (json_int_t)p->t, "tier", p->tier, "span_s", (json_int_t)p->span_s, "results",
	    (json_int_t)p->results, "failed", (json_int_t)p->failed, "positions",
	    (json_int_t)p->positions, "thought", (json_int_t)p->thought, "pv", p->pv, "workers",
	    (json_int_t)p->workers, "nps", (json_int_t)p->nps, "queue", (json_int_t)p->queue,
	    "leases", (json_int_t)p->leases, "set_aside", (json_int_t)p->aside);
	if (!o) return NULL;
	json_object_set_new(o, "results_per_s",
	                    p->span_s ? json_real((double)p->results / p->span_s) : json_null());
	json_object_set_new(o, "root_value",
	                    p->root_value == COORD_HIST_NO_ROOT ? json_null()
	                                                        : json_integer(p->root_value));
	json_object_set_new(o, "root", p->root[0] ? json_string(p->root) : json_null());
	json_object_set_new(o, "roots", json_integer(p->nroots));
	json_t *names = pv_names(nm, p);
	json_object_set_new(o, "pv_names", names ? names : json_null());
	return o;
}

char *api_work_history(BookDB *db, const char *hours, int *status)
{
	long h = API_HISTORY_HOURS_DEFAULT;
	if (hours) {
		if (!api_plain_number(hours, API_HISTORY_HOURS_MAX, &h)) {
			*status = 400;
			char msg[128];
			snprintf(msg, sizeof msg,
			         "hours wants 0 (everything) or 1..%d, not '%.20s'",
			         API_HISTORY_HOURS_MAX, hours);
			return api_error_body(msg);
		}
	}
	int64_t now = (int64_t)time(NULL), since = h ? now - h * 3600 : 0;
	BookTxn *t;
	CoordHistPoint *pts = NULL;
	size_t bad = 0;
	int n = bookdb_txn_begin(&t, db, false);
	if (n == 0) {
		n = coord_history_read(&pts, t, since, &bad);
		bookdb_txn_abort(t);
	}
	if (n < 0) {
		*status = 500;
		return api_error_body(bookdb_strerror(n));
	}
	json_t *arr = json_array();
	Names nm = {.pos = malloc(sizeof(Position))};
	for (int i = 0; i < n; i++) json_array_append_new(arr, point_json(&pts[i], &nm));
	json_decref(nm.names);
	free(nm.pos);
	free(pts);
	char *body =
	    api_json_body(json_pack("{s:I, s:I, s:I, s:o}", "now", (json_int_t)now, "since",
	                            (json_int_t)since, "bad", (json_int_t)bad, "points", arr));
	*status = 200;
	return body;
}
