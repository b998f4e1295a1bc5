/* server/work_parse.c — the work API's request bodies (work_parse.h). */
#include "server/work_parse.h"
#include "shogi/errmsg.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PV_MAX 4096     /* bytes of a pv string */
#define FAILED_MAX 1024 /* bytes of a failure message */

static int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	errmsg_vset(err, API_PARSE_ERRLEN, -1, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string field into out (cap bytes with NUL); required or not. */
static int get_str(char *out, size_t cap, json_t *o, const char *k, bool required, char *err)
{
	json_t *v = json_object_get(o, k);
	if (!v) return required ? fail(err, "\"%s\" is missing", k) : 0;
	if (!json_is_string(v)) return fail(err, "\"%s\" must be a string", k);
	size_t n = json_string_length(v);
	if (n >= cap) return fail(err, "\"%s\" is longer than %zu bytes", k, cap - 1);
	const char *t = json_string_value(v);
	/* Names and engines are shown in logs and the status: nothing there
	 * may need escaping (errmsg_escape: control characters, a NUL, C1
	 * controls, bidirectional overrides), which could forge lines. */
	char shown[4 * COORD_ENGINE_MAX + 4]; /* the longest field, every byte escaped */
	errmsg_escape(shown, sizeof shown, t, n);
	size_t i = 0;
	while (i < n && shown[i] == t[i]) i++;
	if (i < n || shown[i])
		return fail(err, "\"%s\" holds a control character (byte %zu)", k, i);
	memcpy(out, t, n + 1);
	return 0;
}

static int get_int(json_int_t *out, json_t *o, const char *k, bool required, json_int_t lo,
                   json_int_t hi, const char *where, char *err)
{
	json_t *v = json_object_get(o, k);
	if (!v) return required ? fail(err, "%s\"%s\" is missing", where, k) : 0;
	if (!json_is_integer(v)) return fail(err, "%s\"%s\" must be an integer", where, k);
	json_int_t x = json_integer_value(v);
	if (x < lo || x > hi)
		return fail(err, "%s\"%s\" %lld out of range %lld..%lld", where, k, (long long)x,
		            (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

static int load(json_t **root, const char *body, size_t len, bool empty_ok, char *err)
{
	*root = NULL;
	if (empty_ok && len == 0) return 0;
	json_error_t je;
	*root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!*root)
		return fail(err, "bad JSON at line %d column %d: %s", je.line, je.column, je.text);
	if (!json_is_object(*root)) {
		json_decref(*root);
		*root = NULL;
		return fail(err, "the body must be a JSON object");
	}
	return 0;
}

/* worker (required unless worker_optional), engine, nps. */
static int common(ApiWorkBody *out, json_t *o, bool worker_optional, char *err)
{
	json_int_t nps = 0;
	if (get_str(out->worker, sizeof out->worker, o, "worker", !worker_optional, err) < 0 ||
	    get_str(out->instance, sizeof out->instance, o, "instance", false, err) < 0 ||
	    get_str(out->engine, sizeof out->engine, o, "engine", false, err) < 0 ||
	    get_int(&nps, o, "nps", false, 0, INT64_MAX, "", err) < 0)
		return -1;
	for (const char *p = out->instance; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return fail(err, "\"instance\" wants letters and digits only");
	if (!worker_optional && !out->worker[0]) return fail(err, "\"worker\" is empty");
	out->nps = (uint64_t)nps;
	return 0;
}

int api_parse_acquire(ApiWorkBody *out, const char *body, size_t len, char *err)
{
	memset(out, 0, sizeof *out);
	json_t *o;
	if (load(&o, body, len, false, err) < 0) return -1;
	json_int_t max = 0;
	int rc = common(out, o, false, err) < 0 ||
	                 get_int(&max, o, "max", true, 1, COORD_MAX_BATCH, "", err) < 0
	             ? -1
	             : 0;
	out->max = (int)max;
	json_decref(o);
	return rc;
}

int api_parse_abort(ApiWorkBody *out, const char *body, size_t len, char *err)
{
	memset(out, 0, sizeof *out);
	json_t *o;
	if (load(&o, body, len, true, err) < 0) return -1;
	int rc = o ? common(out, o, true, err) : 0;
	json_decref(o);
	return rc;
}

int api_parse_heartbeat(ApiWorkBody *out, const char *body, size_t len, char *err)
{
	memset(out, 0, sizeof *out);
	json_t *o;
	if (load(&o, body, len, false, err) < 0) return -1;
	int rc = common(out, o, false, err);
	json_t *l = json_object_get(o, "leaving");
	if (rc == 0 && l && !json_is_boolean(l))
		rc = fail(err, "\"leaving\" must be true or false");
	out->leaving = json_is_true(l);
	json_decref(o);
	return rc;
}

static int parse_line(CoordLine *l, json_t *m, const char *where, char *err)
{
	if (!json_is_object(m)) return fail(err, "%smust be an object", where);
	json_t *mv = json_object_get(m, "move");
	if (!json_is_string(mv) || json_string_length(mv) == 0 ||
	    json_string_length(mv) >= sizeof l->move)
		return fail(err, "%s\"move\" must be a USI move string", where);
	memcpy(l->move, json_string_value(mv), json_string_length(mv) + 1);
	json_t *sc = json_object_get(m, "score");
	if (!json_is_object(sc) || json_object_size(sc) != 1)
		return fail(err, "%s\"score\" must be {\"cp\": N} or {\"mate\": N}", where);
	json_int_t v;
	if (json_object_get(sc, "cp")) {
		if (get_int(&v, sc, "cp", true, -32000, 32000, where, err) < 0) return -1;
	} else if (json_object_get(sc, "mate")) {
		if (get_int(&v, sc, "mate", true, -1000, 1000, where, err) < 0) return -1;
		if (v == 0) return fail(err, "%s\"mate\" must not be 0", where);
		l->mate = true;
	} else {
		return fail(err, "%s\"score\" must be {\"cp\": N} or {\"mate\": N}", where);
	}
	l->score = (int)v;
	json_int_t d = 0, n = 0;
	if (get_int(&d, m, "depth", false, 0, 1000, where, err) < 0 ||
	    get_int(&n, m, "nodes", false, 0, INT64_MAX, where, err) < 0)
		return -1;
	l->depth = (int)d;
	l->nodes = (uint64_t)n;
	json_t *pv = json_object_get(m, "pv");
	if (pv) {
		if (!json_is_string(pv) || json_string_length(pv) > PV_MAX)
			return fail(err, "%s\"pv\" must be a string of at most %d bytes", where,
			            PV_MAX);
		const char *s = json_string_value(pv);
		size_t ml = strlen(l->move);
		if (strncmp(s, l->move, ml) || (s[ml] && s[ml] != ' '))
			return fail(err, "%s\"pv\" must begin with the move", where);
	}
	return 0;
}

static int parse_result(CoordResult *r, json_t *e, size_t i, char *err)
{
	if (!json_is_object(e)) return fail(err, "results[%zu] must be an object", i);
	json_t *k = json_object_get(e, "key");
	if (!json_is_string(k) || json_string_length(k) != 32 ||
	    key_from_hex(&r->key, json_string_value(k)) < 0)
		return fail(err, "results[%zu].key must be 32 hex digits", i);
	json_t *f = json_object_get(e, "failed"), *mv = json_object_get(e, "moves");
	if (f) {
		if (!json_is_string(f) || json_string_length(f) > FAILED_MAX)
			return fail(err, "results[%zu].failed must be a string of at most %d bytes",
			            i, FAILED_MAX);
		if (mv) return fail(err, "results[%zu] has both \"failed\" and \"moves\"", i);
		r->failed = true;
		return 0;
	}
	if (!json_is_array(mv) || json_array_size(mv) == 0)
		return fail(err, "results[%zu].moves must be a non-empty array", i);
	if (json_array_size(mv) > COORD_MAX_LINES)
		return fail(err, "results[%zu].moves: at most %d, not %zu", i, COORD_MAX_LINES,
		            json_array_size(mv));
	r->nlines = (int)json_array_size(mv);
	for (int m = 0; m < r->nlines; m++) {
		char where[64];
		snprintf(where, sizeof where, "results[%zu].moves[%d]: ", i, m);
		if (parse_line(&r->lines[m], json_array_get(mv, (size_t)m), where, err) < 0)
			return -1;
	}
	return 0;
}

int api_parse_submit(ApiWorkBody *out, const char *body, size_t len, char *err)
{
	memset(out, 0, sizeof *out);
	json_t *o;
	if (load(&o, body, len, false, err) < 0) return -1;
	int rc = -1;
	if (common(out, o, false, err) < 0) goto done;
	json_t *rs = json_object_get(o, "results");
	if (!json_is_array(rs)) {
		fail(err, "\"results\" must be an array");
		goto done;
	}
	size_t n = json_array_size(rs);
	if (n > COORD_MAX_BATCH) {
		fail(err, "\"results\": at most %d, not %zu", COORD_MAX_BATCH, n);
		goto done;
	}
	if (n && !(out->results = calloc(n, sizeof *out->results))) {
		fail(err, "out of memory");
		goto done;
	}
	out->nresults = n;
	for (size_t i = 0; i < n; i++)
		if (parse_result(&out->results[i], json_array_get(rs, i), i, err) < 0) goto done;
	rc = 0;
done:
	json_decref(o);
	if (rc < 0) api_work_body_free(out);
	return rc;
}

void api_work_body_free(ApiWorkBody *b)
{
	free(b->results);
	b->results = NULL;
	b->nresults = 0;
}
