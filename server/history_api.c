/* server/history_api.c — GET /v1/work/history (history_api.h). */
#include "server/history_api.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/coord_history.h"
#include "server/api.h"

static json_t *point_json(const CoordHistPoint *p)
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
	return o;
}

char *api_work_history(BookDB *db, const char *hours, int *status)
{
	long h = API_HISTORY_HOURS_DEFAULT;
	if (hours) {
		char *end;
		h = strtol(hours, &end, 10);
		if (end == hours || *end || h < 0 || h > API_HISTORY_HOURS_MAX) {
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
	for (int i = 0; i < n; i++) json_array_append_new(arr, point_json(&pts[i]));
	free(pts);
	char *body =
	    api_json_body(json_pack("{s:I, s:I, s:I, s:o}", "now", (json_int_t)now, "since",
	                            (json_int_t)since, "bad", (json_int_t)bad, "points", arr));
	*status = 200;
	return body;
}
