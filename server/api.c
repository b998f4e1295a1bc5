/* server/api.c — the read-only endpoints' answers (see api.h). */
#include "server/api.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bookdb/query.h"
#include "shogi/errmsg.h"
#include "shogi/japanese.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"
#include "shogi/position.h"

/* Large (a record holds 600 moves, a position its history): one per thread. */
static _Thread_local BookRecord t_rec;
static _Thread_local Position t_pos;

char *api_json_body(json_t *o)
{
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(o);
	if (!text) return NULL;
	size_t n = strlen(text);
	char *body = realloc(text, n + 2);
	if (!body) {
		free(text);
		return NULL;
	}
	body[n] = '\n';
	body[n + 1] = 0;
	return body;
}

char *api_error_body(const char *msg)
{
	/* A message may quote the request: shown as text (errmsg_escape), so
	 * that the answer is never refused by the encoder (a 500 for a client's
	 * mistake: it takes only UTF-8) and never carries the client's control
	 * bytes raw. */
	char safe[1024];
	return api_json_body(
	    json_pack("{s:s}", "error", errmsg_escape(safe, sizeof safe, msg, strlen(msg))));
}

bool api_plain_number(const char *s, long max, long *out)
{
	if (!*s || (s[0] == '0' && s[1])) return false;
	long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > max / 10) return false;
		v = v * 10 + (*p - '0');
	}
	if (v > max) return false;
	*out = v;
	return true;
}

/* Sets pos from spec, a position= value (sfen_only: an sfen= value, which
 * may be a bare SFEN); 0, -1 with the rules core's message in err, or -2
 * (out of memory). */
static int parse_spec(Position *pos, const char *spec, bool sfen_only, char *err)
{
	/* A bare SFEN (what sfen= holds) gets its keyword. */
	char *buf = NULL;
	if (sfen_only && strncmp(spec, "sfen ", 5) && strncmp(spec, "startpos", 8)) {
		size_t n = strlen(spec);
		if (!(buf = malloc(n + 6))) return -2;
		memcpy(buf, "sfen ", 5);
		memcpy(buf + 5, spec, n + 1);
		spec = buf;
	}
	/* What `joseki query` takes, and refuses (a board without kings). */
	int rc = bookdb_query_position(pos, spec, err);
	free(buf);
	return rc < 0 ? -1 : 0;
}

/*
 * The readings of a value whose URL had a '+' (plus: the value with only
 * its %XX decoded): as a space everywhere (spec, HTTP's form encoding), as
 * itself everywhere (plus), and as itself only where it may end a move
 * token, a space after it: the first '+' of a run of them after a token that
 * is two or more long or ends the value ("8h2b++3c3d", "8h2b++", "8h2b+"),
 * the others spaces. Sets pos to the position they give; 0, or 1 when they
 * give two different ones, -1 when none reads (err: the first's message; *hint
 * whether a '+' could have meant itself there: the third reading is not the
 * first, or a '+' comes before a piece's letter, "+B"), -2 out of memory.
 */
static int parse_plus(Position *pos, const char *spec, const char *plus, bool sfen_only, char *err,
                      bool *hint)
{
	size_t n = strlen(plus);
	char *mixed = malloc(n + 1);
	Position *alt = malloc(sizeof *alt);
	if (!mixed || !alt) {
		free(mixed);
		free(alt);
		return -2;
	}
	*hint = false;
	for (size_t i = 0; i <= n; i++) {
		mixed[i] = plus[i] == '+' ? ' ' : plus[i];
		if (plus[i] != '+') continue;
		bool first = i > 0 && plus[i - 1] != '+', more = plus[i + 1] == '+' || !plus[i + 1];
		if (first && more) mixed[i] = '+', *hint = true;
		if (plus[i + 1] && strchr("PLNSBRplnsbr", plus[i + 1])) *hint = true;
	}
	const char *reading[3] = {spec, plus, mixed};
	char other[SHOGI_ERRLEN];
	int found = 0, rc = 0;
	for (int k = 0; k < 3 && rc == 0; k++) {
		int r = parse_spec(found ? alt : pos, reading[k], sfen_only, k ? other : err);
		if (r == -2) rc = -2;
		if (r < 0) continue;
		if (found && !key_equal(pos_key(alt), pos_key(pos))) rc = 1;
		found = 1;
	}
	free(mixed);
	free(alt);
	return rc ? rc : found ? 0 : -1;
}

/* Sets pos from the request's sfen= or position= (plus: api_query's); 0, or
 * -1 with *body. */
static int parse(Position *pos, const char *sfen, const char *position, const char *plus,
                 int *status, char **body)
{
	char err[SHOGI_ERRLEN], msg[SHOGI_ERRLEN + 200];
	const char *spec = position ? position : sfen;
	if (position && sfen) {
		*status = 400;
		*body = api_error_body("give one of sfen= and position=, not both");
		return -1;
	}
	if (!spec || !*spec) {
		*status = 400;
		*body =
		    api_error_body("give the position: sfen=<SFEN> or position=startpos moves ...");
		return -1;
	}
	bool hint = false;
	int rc = plus ? parse_plus(pos, spec, plus, !position, err, &hint)
	              : parse_spec(pos, spec, !position, err);
	if (rc == -2) {
		*status = 500;
		*body = NULL;
		return -1;
	}
	if (rc == 0) return 0;
	static const char HOW[] = "write a promotion's or a promoted piece's '+' as %2B (8h2b%2B, "
	                          "%2BB), a space as %20 or +";
	if (rc == 1)
		snprintf(msg, sizeof msg,
		         "bad position: a '+' in a URL is a space, and here it can also be a "
		         "promotion, which gives another position: %s",
		         HOW);
	else if (hint)
		snprintf(msg, sizeof msg, "bad position: %s (a '+' in a URL is a space: %s)", err,
		         HOW);
	else
		snprintf(msg, sizeof msg, "bad position: %s", err);
	*status = 400;
	*body = api_error_body(msg);
	return -1;
}

/* 500, the book cannot be read; damage (a record that is not sound, a page
 * LMDB cannot follow) is noted in c, at pos. */
static char *book_error(ApiStatsCache *c, BookDB *db, const Position *pos, int rc, int *status)
{
	char msg[128];
	snprintf(msg, sizeof msg, "the book cannot be read: %s", bookdb_strerror(rc));
	if (rc == BOOKDB_ECORRUPT && c) {
		char sfen[SFEN_MAX], what[SFEN_MAX + 80];
		sfen_write(pos, sfen, sizeof sfen);
		snprintf(what, sizeof what, "a request met it at sfen %s: %s", sfen,
		         bookdb_strerror(rc));
		api_book_damaged(c, db, what);
	}
	*status = 500;
	return api_error_body(msg);
}

char *api_query(BookDB *db, ApiStatsCache *c, const char *sfen, const char *position,
                const char *plus, int *status)
{
	char *body;
	if (parse(&t_pos, sfen, position, plus, status, &body) < 0) return body;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc < 0) return book_error(c, db, &t_pos, rc, status);
	rc = bookdb_query(&t_rec, txn, &t_pos);
	/* The marks' entries (source, time, note) only where the record has a
	 * mark: most positions cost nothing more. */
	BookMark *marks = NULL;
	int nmarks = rc == 1 ? bookdb_marks_load(&marks, txn, pos_key(&t_pos), &t_rec) : 0;
	bookdb_txn_abort(txn);
	if (rc < 0 || nmarks < 0) return book_error(c, db, &t_pos, rc < 0 ? rc : nmarks, status);
	*status = 200;
	char *out = bookdb_query_json_ex(&t_rec, rc == 1, &t_pos, NULL, false, marks, nmarks);
	free(marks);
	return out;
}

char *api_line(BookDB *db, ApiStatsCache *c, const char *sfen, const char *position,
               const char *plus, const char *plies, int *status)
{
	char *body;
	if (parse(&t_pos, sfen, position, plus, status, &body) < 0) return body;
	long max = 20;
	if (plies) {
		/* Digits only: strtol would also take "+10" and " 10". */
		if (!api_plain_number(plies, 512, &max) || max < 1) {
			*status = 400;
			return api_error_body("plies must be a whole number from 1 to 512");
		}
	}
	char sfen_text[SFEN_MAX], usi[USI_MOVE_MAX];
	sfen_write(&t_pos, sfen_text, sizeof sfen_text);
	json_t *o = json_object(), *line = json_array();
	if (!o || !line) {
		json_decref(o);
		json_decref(line);
		return NULL;
	}
	json_object_set_new(o, "sfen", json_string(sfen_text));
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc < 0) {
		json_decref(o);
		json_decref(line);
		return book_error(c, db, &t_pos, rc, status);
	}
	/* One snapshot for the whole line: a writer's batch is in all of it or none. */
	Key seen[513];
	int n = 0;
	Square prev_to = pos_history_len(&t_pos) ? move_to(pos_st(&t_pos)->move) : SQ_NONE;
	const char *end = "plies";
	for (; n < max; n++) {
		seen[n] = pos_key(&t_pos);
		rc = bookdb_query(&t_rec, txn, &t_pos);
		if (rc < 0) break;
		/* A line that mates ends there, in the book or not. */
		Move legal[MOVEGEN_MAX];
		if (movegen_legal(&t_pos, legal) == 0) {
			end = "mated";
			break;
		}
		if (rc == 0) {
			end = "not_in_book";
			break;
		}
		/* The book's move: valued, not avoided (as usi --book plays). */
		Move best = bookdb_best_move(&t_rec, &t_pos);
		if (best == MOVE_NONE) {
			end = "no_book_move";
			break;
		}
		const BookMove *m = &t_rec.moves[0];
		while (m->move != best) m++;
		usi_move_write(m->move, usi);
		json_t *step = json_object();
		json_object_set_new(step, "ply", json_integer(t_pos.game_ply));
		json_object_set_new(step, "move", json_string(usi));
		json_object_set_new(step, "value", json_integer(bookdb_move_value(&t_rec, m)));
		int mate = bookdb_move_mate(&t_rec, m);
		if (mate) json_object_set_new(step, "mate", json_integer(mate));
		if (t_rec.flags & BOOKDB_REC_MINIMAX)
			json_object_set_new(step, "dist", json_integer(m->dist));
		json_object_set_new(step, "value_source",
		                    json_string(bookdb_value_source(&t_rec, m)));
		if (bookdb_move_analysed(m)) {
			json_object_set_new(step, "eval", json_integer(m->eval));
			json_object_set_new(step, "depth", json_integer(m->depth));
		} else if (bookdb_move_commented(m)) {
			json_object_set_new(step, "game_eval", json_integer(m->eval));
		}
		json_object_set_new(step, "count", json_integer(m->count));
		char name[JA_MOVE_MAX];
		if (ja_move_write(&t_pos, m->move, prev_to, true, NULL, 0, name))
			json_object_set_new(step, "name", json_string(name));
		prev_to = move_to(m->move);
		json_array_append_new(line, step);
		pos_do_move(&t_pos, m->move);
		bool again = false;
		for (int k = 0; k <= n && !again; k++) again = key_equal(seen[k], pos_key(&t_pos));
		if (again) {
			n++;
			end = "repetition";
			break;
		}
	}
	bookdb_txn_abort(txn);
	if (rc < 0) {
		json_decref(o);
		json_decref(line);
		return book_error(c, db, &t_pos, rc, status);
	}
	json_object_set_new(o, "line", line);
	json_object_set_new(o, "end", json_string(end));
	*status = 200;
	return api_json_body(o);
}

void api_stats_cache_init(ApiStatsCache *c)
{
	memset(c, 0, sizeof *c);
	atomic_init(&c->stop, false);
	pthread_mutex_init(&c->mu, NULL);
}

void api_stats_cache_free(ApiStatsCache *c)
{
	atomic_store(&c->stop, true);
	pthread_mutex_lock(&c->mu);
	bool running = c->running;
	pthread_mutex_unlock(&c->mu);
	if (running) pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->mu);
}

/* Under c->mu. */
static void damaged_locked(ApiStatsCache *c, BookDB *db, const char *what)
{
	if (c->damaged) return;
	c->damaged = true;
	snprintf(c->damage, sizeof c->damage, "%s", what);
	/* server/ is a front end: its failures are said where its log goes. */
	fprintf(stderr,
	        "serve: %s: the book is damaged (%s); /healthz says degraded; joseki check %s "
	        "lists the damage, joseki check %s --repair NEW copies what is sound\n",
	        bookdb_dir(db), what, bookdb_dir(db), bookdb_dir(db));
}

void api_book_damaged(ApiStatsCache *c, BookDB *db, const char *what)
{
	pthread_mutex_lock(&c->mu);
	damaged_locked(c, db, what);
	pthread_mutex_unlock(&c->mu);
}

static void *scan_main(void *arg)
{
	ApiStatsCache *c = arg;
	BookStats st;
	BookTxn *txn;
	memset(&st, 0, sizeof st);
	int rc = bookdb_txn_begin(&txn, c->db, false);
	if (rc == 0) {
		rc = bookdb_stats_until(&st, c->db, txn, true, &c->stop);
		bookdb_txn_abort(txn);
	}
	pthread_mutex_lock(&c->mu);
	char what[200];
	if (rc == 0) {
		c->scan = st;
		c->have = true;
		c->scan_cut = false;
		if (st.corrupt) {
			snprintf(what, sizeof what,
			         "the scan of every record found %llu that are not sound",
			         (unsigned long long)st.corrupt);
			damaged_locked(c, c->db, what);
		}
	} else if (rc == BOOKDB_ECORRUPT) {
		/* The database itself is damaged past a record: what was read, and
		 * one more corrupt (as joseki check counts it). */
		c->scan = st;
		c->scan.corrupt++;
		c->have = true;
		c->scan_cut = true;
		snprintf(what, sizeof what, "the scan of every record stopped after %llu: %s",
		         (unsigned long long)st.positions, bookdb_strerror(rc));
		damaged_locked(c, c->db, what);
	}
	c->computed_at = time(NULL);
	c->done = true;
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Under c->mu: collects a scan that has ended; starts one when none runs and
 * the last is stale (or force). */
static void scan_locked(BookDB *db, ApiStatsCache *c, bool force)
{
	time_t now = time(NULL);
	bool stale = !c->computed_at || now - c->computed_at >= API_STATS_SCAN_SECONDS;
	if (c->running && c->done) {
		/* The last scan has ended: collect its thread. */
		pthread_join(c->thread, NULL);
		c->running = false;
	}
	if ((stale || force) && !c->running) {
		c->db = db;
		c->done = false;
		c->running = pthread_create(&c->thread, NULL, scan_main, c) == 0;
	}
}

void api_stats_scan(BookDB *db, ApiStatsCache *c)
{
	pthread_mutex_lock(&c->mu);
	scan_locked(db, c, true);
	pthread_mutex_unlock(&c->mu);
}

char *api_stats(BookDB *db, ApiStatsCache *c, int *status)
{
	BookStats st;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) {
		rc = bookdb_stats(&st, db, txn, false);
		bookdb_txn_abort(txn);
	}
	if (rc < 0) {
		if (rc == BOOKDB_ECORRUPT)
			api_book_damaged(c, db, "/v1/stats: corrupt record or database");
		*status = 500;
		char msg[128];
		snprintf(msg, sizeof msg, "the book cannot be read: %s", bookdb_strerror(rc));
		return api_error_body(msg);
	}
	pthread_mutex_lock(&c->mu);
	scan_locked(db, c, false);
	time_t at = c->have ? c->computed_at : 0;
	bool cut = c->have && c->scan_cut, counts_cut = cut && !st.counts_known;
	/* thought and moves are kept by the store; the background scan adds
	 * leaves and corrupt, fresher than a stored scan's, and the counts of a
	 * book that keeps none. */
	if (c->have) {
		st.leaves_known = true;
		st.leaves_current = c->scan.txnid == st.txnid;
		st.leaves_time = c->scan.leaves_time;
		st.leaves = c->scan.leaves;
		st.corrupt = c->scan.corrupt;
		if (!st.counts_known) {
			st.counts_known = true;
			st.thought = c->scan.thought;
			st.moves = c->scan.moves;
		}
	}
	pthread_mutex_unlock(&c->mu);
	json_t *o = bookdb_stats_json(&st);
	if (o) {
		json_object_set_new(o, "scan_computed_at",
		                    at ? json_integer((json_int_t)at) : json_null());
		/* A scan stopped by damage counted part of the book only. */
		if (cut) json_object_set_new(o, "leaves", json_null());
		if (counts_cut) {
			json_object_set_new(o, "thought", json_null());
			json_object_set_new(o, "moves", json_null());
		}
	}
	*status = 200;
	return api_json_body(o);
}

char *api_health(BookDB *db, ApiStatsCache *c, int *status)
{
	uint64_t n = 0;
	BookTxn *txn;
	int rc = bookdb_txn_begin(&txn, db, false);
	if (rc == 0) {
		rc = bookdb_count(&n, txn, BOOKDB_POS);
		bookdb_txn_abort(txn);
	}
	if (rc < 0) {
		*status = 503;
		return api_error_body(bookdb_strerror(rc));
	}
	*status = 200;
	pthread_mutex_lock(&c->mu);
	bool damaged = c->damaged;
	uint64_t corrupt = c->have ? c->scan.corrupt : 0;
	char what[sizeof c->damage];
	memcpy(what, c->damage, sizeof what);
	pthread_mutex_unlock(&c->mu);
	if (damaged)
		return api_json_body(json_pack("{s:s,s:I,s:I,s:s}", "status", "degraded",
		                               "positions", (json_int_t)n, "corrupt",
		                               (json_int_t)(corrupt ? corrupt : 1), "error", what));
	return api_json_body(json_pack("{s:s,s:I}", "status", "ok", "positions", (json_int_t)n));
}
