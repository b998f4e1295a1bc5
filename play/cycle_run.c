/*
 * play/cycle_run.c — the whole cycle (cycle_run in cycle.h): its steps, the
 * state and the table it keeps in the book so that a stopped run resumes.
 */
#include "play/cycle.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bookdb/query.h"
#include "shogi/errmsg.h"
#include "shogi/grow.h"
#include "shogi/position.h"

/*
 * meta "cycle": "G S Q T M J R" in ASCII: generations finished, the last step
 * finished of generation G + 1 (0 none, then STEP_*), that generation's
 * figures so far (queued, thought, marked), while S is 0 the opponents
 * whose match is over, and the rounds of --retries done (books written
 * before several opponents hold the first five, before --retries six).
 * meta "cycle_games": that generation's games (cycle_games_parse).
 * meta "cycle_table": the table, one row a generation and opponent
 * (cycle_table_parse).
 * meta "cycle_queued": the positions that generation's extend queued, 17
 * bytes each: the opponent whose game queued it (0-based), the key.
 * meta "cycle_opponents": who the opponents of the last run were
 * (opponents_ident), so that a generation begun against others is not
 * finished against these.
 */
enum { STEP_NONE, STEP_MATCH, STEP_PRUNE, STEP_EXTEND, STEP_THINK, STEP_MINIMAX };

/* Rounds of backtracking and keeping what won, at most (each ends with minimax). */
#define KEEP_ROUNDS 8

typedef struct {
	int gen, step;
	unsigned long long queued, thought, marked;
	int matched; /* step 0: opponents whose match is over */
	int retried; /* --retries: rounds done */
} CycleState;

static int book_fail(char *err, const char *what, int rc)
{
	return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", what, bookdb_strerror(rc));
}

static int state_get(CycleState *s, BookTxn *txn)
{
	memset(s, 0, sizeof *s);
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle", 5);
	if (rc == BOOKDB_ENOTFOUND) return 0;
	if (rc < 0) return rc;
	char buf[160];
	if (len >= sizeof buf) return BOOKDB_ECORRUPT;
	memcpy(buf, v, len);
	buf[len] = 0;
	int n = sscanf(buf, "%d %d %llu %llu %llu %d %d", &s->gen, &s->step, &s->queued,
	               &s->thought, &s->marked, &s->matched, &s->retried);
	if (n < 5 || s->gen < 0 || s->step < STEP_NONE || s->step > STEP_MINIMAX ||
	    s->matched < 0 || s->matched > CYCLE_OPPONENTS_MAX || s->retried < 0)
		return BOOKDB_ECORRUPT;
	return 0;
}

static int state_put(BookTxn *txn, const CycleState *s)
{
	char buf[160];
	int n = snprintf(buf, sizeof buf, "%d %d %llu %llu %llu %d %d", s->gen, s->step, s->queued,
	                 s->thought, s->marked, s->matched, s->retried);
	return bookdb_kv_put(txn, BOOKDB_META, "cycle", 5, buf, (size_t)n);
}

int cycle_generations_done(int *done, BookDB *db)
{
	BookTxn *txn;
	CycleState s;
	*done = 0;
	if (bookdb_txn_begin(&txn, db, false) < 0) return CYCLE_EBOOK;
	int rc = state_get(&s, txn);
	bookdb_txn_abort(txn);
	if (rc < 0) return CYCLE_EBOOK;
	*done = s.gen;
	return 0;
}

/* ---- the games ---- */

void cycle_games_free(CycleGameSet *gs)
{
	free(gs->text);
	free(gs->games);
	memset(gs, 0, sizeof *gs);
}

/* A decimal number lo..hi at *p, followed by `end`; advances *p past both. */
static bool parse_num(char **p, long lo, long hi, char end, long *out)
{
	char *e;
	if (**p != '-' && (**p < '0' || **p > '9')) return false;
	errno = 0;
	long v = strtol(*p, &e, 10);
	if (errno || e == *p || v < lo || v > hi || *e != end) return false;
	*out = v;
	*p = e + 1;
	return true;
}

int cycle_games_parse(CycleGameSet *gs, const void *bytes, size_t len)
{
	memset(gs, 0, sizeof *gs);
	size_t cap = 0;
	if (memchr(bytes, 0, len)) return BOOKDB_ECORRUPT;
	if (!(gs->text = malloc(len + 1))) return BOOKDB_ENOMEM;
	memcpy(gs->text, bytes, len);
	gs->text[len] = 0;
	char *p = gs->text;
	long w, d, l, r, opp = 1, opening = 0;
	if (!parse_num(&p, 0, INT32_MAX, ' ', &w) || !parse_num(&p, 0, INT32_MAX, ' ', &d) ||
	    !parse_num(&p, 0, INT32_MAX, '\n', &l))
		return BOOKDB_ECORRUPT;
	gs->wins = (int)w;
	gs->draws = (int)d;
	gs->losses = (int)l;
	while (*p) {
		char *nl = strchr(p, '\n');
		if (!nl) return BOOKDB_ECORRUPT; /* every line ends with a newline */
		*nl = 0;
		char c = *p++;
		if (c != 'b' && c != 'w') return BOOKDB_ECORRUPT;
		opp = 1;
		opening = 0;
		if (*p >= '0' && *p <= '9') {
			if (!parse_num(&p, 1, CYCLE_OPPONENTS_MAX, ':', &opp) ||
			    !parse_num(&p, 0, INT32_MAX, ' ', &opening))
				return BOOKDB_ECORRUPT;
		} else if (*p++ != ' ') {
			return BOOKDB_ECORRUPT;
		}
		if (!parse_num(&p, -1, 1, ' ', &r) || !*p) return BOOKDB_ECORRUPT;
		if (array_grow((void **)&gs->games, &cap, gs->n + 1, sizeof *gs->games, 64))
			return BOOKDB_ENOMEM;
		gs->games[gs->n++] = (CycleGame){.spec = p,
		                                 .book_color = c == 'b' ? BLACK : WHITE,
		                                 .result = (int)r,
		                                 .opponent = (int)opp - 1,
		                                 .opening = (int)opening};
		p = nl + 1;
	}
	return 0;
}

static int games_load(CycleGameSet *gs, BookTxn *txn)
{
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle_games", 11);
	return rc < 0 ? rc : cycle_games_parse(gs, v, len);
}

/* Stores meta "cycle_games": the games in gs (those of the opponents before;
 * NULL: none), then those of matches mr[0..nmr), mr[k] against opponent
 * opp + k; with tally, their results count in the first line (the
 * generation's W D L), else it stays gs's (games played again). */
static int games_put(BookTxn *txn, const CycleGameSet *gs, const MatchResult *mr, int nmr, int opp,
                     bool tally)
{
	size_t cap = 64, n;
	for (size_t i = 0; gs && i < gs->n; i++) cap += strlen(gs->games[i].spec) + 48;
	int w = 0, d = 0, l = 0;
	for (int k = 0; k < nmr; k++) {
		for (int i = 0; i < mr[k].ngames; i++)
			if (mr[k].games[i].played && mr[k].games[i].usi)
				cap += strlen(mr[k].games[i].usi) + 48;
		if (tally) w += mr[k].wins, d += mr[k].draws, l += mr[k].losses;
	}
	char *buf = malloc(cap);
	if (!buf) return BOOKDB_ENOMEM;
	if (gs) {
		w += gs->wins;
		d += gs->draws;
		l += gs->losses;
	}
	n = (size_t)snprintf(buf, cap, "%d %d %d\n", w, d, l);
	for (size_t i = 0; gs && i < gs->n; i++) {
		const CycleGame *g = &gs->games[i];
		n += (size_t)snprintf(buf + n, cap - n, "%c%d:%d %d %s\n",
		                      g->book_color == BLACK ? 'b' : 'w', g->opponent + 1,
		                      g->opening, g->result, g->spec);
	}
	for (int k = 0; k < nmr; k++)
		for (int i = 0; i < mr[k].ngames; i++) {
			const MatchGame *g = &mr[k].games[i];
			if (!g->played || !g->usi) continue;
			n += (size_t)snprintf(buf + n, cap - n, "%c%d:%d %d %s\n",
			                      g->a_color == BLACK ? 'b' : 'w', opp + k + 1,
			                      g->opening + 1, g->result, g->usi);
		}
	int rc = bookdb_kv_put(txn, BOOKDB_META, "cycle_games", 11, buf, n);
	free(buf);
	return rc;
}

/* ---- the table ---- */

void cycle_table_free(CycleTable *t)
{
	free(t->rows);
	memset(t, 0, sizeof *t);
}

int cycle_table_parse(CycleTable *t, const void *bytes, size_t len)
{
	memset(t, 0, sizeof *t);
	if (memchr(bytes, 0, len)) return BOOKDB_ECORRUPT;
	char *text = malloc(len + 1);
	if (!text) return BOOKDB_ENOMEM;
	memcpy(text, bytes, len);
	text[len] = 0;
	int ret = 0, nnum = 17;
	char *p = text;
	if (!strncmp(p, "v2\n", 3)) { /* rows with the retries' figures */
		nnum = 19;
		p += 3;
	}
	while (*p && ret == 0) {
		char *nl = strchr(p, '\n');
		if (!nl) {
			ret = BOOKDB_ECORRUPT;
			break;
		}
		*nl = 0;
		long v[19] = {0};
		for (int k = 0; k < nnum && ret == 0; k++)
			if (!parse_num(&p, k < 2 ? 1 : 0, k == 1 ? CYCLE_OPPONENTS_MAX : INT32_MAX,
			               ' ', &v[k]))
				ret = BOOKDB_ECORRUPT;
		if (ret) break;
		if (array_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows, 16)) {
			ret = BOOKDB_ENOMEM;
			break;
		}
		CycleRow *r = &t->rows[t->n++];
		*r = (CycleRow){.generation = (int)v[0],
		                .opponent = (int)v[1],
		                .games = (int)v[2],
		                .wins = (int)v[3],
		                .draws = (int)v[4],
		                .losses = (int)v[5],
		                .book_moves = (int)v[6],
		                .exits = (int)v[7],
		                .exit_q1 = (int)v[8],
		                .exit_median = (int)v[9],
		                .exit_q3 = (int)v[10],
		                .queued = (uint64_t)v[11],
		                .thought = (uint64_t)v[12],
		                .marked = (uint64_t)v[13],
		                .repeats = (uint64_t)v[14],
		                .won_lost = (uint64_t)v[15],
		                .engine_ms = (uint64_t)v[16],
		                .retried = (int)v[17],
		                .retry_wins = (int)v[18]};
		snprintf(r->name, sizeof r->name, "%s", p);
		p = nl + 1;
	}
	free(text);
	return ret;
}

static int table_load(CycleTable *t, BookTxn *txn)
{
	const void *v;
	size_t len;
	int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle_table", 11);
	if (rc == BOOKDB_ENOTFOUND) {
		memset(t, 0, sizeof *t);
		return 0;
	}
	return rc < 0 ? rc : cycle_table_parse(t, v, len);
}

int cycle_table_read(CycleTable *t, BookDB *db)
{
	BookTxn *txn;
	memset(t, 0, sizeof *t);
	if (bookdb_txn_begin(&txn, db, false) < 0) return CYCLE_EBOOK;
	int rc = table_load(t, txn);
	bookdb_txn_abort(txn);
	if (rc < 0) cycle_table_free(t);
	return rc < 0 ? CYCLE_EBOOK : 0;
}

static int table_put(BookTxn *txn, const CycleTable *t)
{
	size_t cap = 4 + t->n * (19 * 21 + 64 + 2), n = 0;
	char *buf = malloc(cap);
	if (!buf) return BOOKDB_ENOMEM;
	n += (size_t)snprintf(buf, cap, "v2\n");
	for (size_t i = 0; i < t->n; i++) {
		const CycleRow *r = &t->rows[i];
		char name[sizeof r->name];
		size_t k = 0;
		for (; r->name[k]; k++) /* one line a row */
			name[k] = (unsigned char)r->name[k] < ' ' ? '?' : r->name[k];
		name[k] = 0;
		n += (size_t)snprintf(
		    buf + n, cap - n,
		    "%d %d %d %d %d %d %d %d %d %d %d %llu %llu %llu %llu %llu %llu %d %d "
		    "%s\n",
		    r->generation, r->opponent, r->games, r->wins, r->draws, r->losses,
		    r->book_moves, r->exits, r->exit_q1, r->exit_median, r->exit_q3,
		    (unsigned long long)r->queued, (unsigned long long)r->thought,
		    (unsigned long long)r->marked, (unsigned long long)r->repeats,
		    (unsigned long long)r->won_lost, (unsigned long long)r->engine_ms, r->retried,
		    r->retry_wins, name);
	}
	int rc = bookdb_kv_put(txn, BOOKDB_META, "cycle_table", 11, buf, n);
	free(buf);
	return rc;
}

/* The row of generation gen and opponent opp (1-based) in t, made when
 * absent; NULL when out of memory. */
static CycleRow *table_row(CycleTable *t, int gen, int opp)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].generation == gen && t->rows[i].opponent == opp) return &t->rows[i];
	if (array_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows, 16)) return NULL;
	CycleRow *r = &t->rows[t->n++];
	*r = (CycleRow){.generation = gen, .opponent = opp};
	return r;
}

/* ---- a run ---- */

typedef struct {
	const CycleOptions *opt;
	int nopp; /* opponents */
	CycleState st;
	CycleGameSet games;
	CycleTable table; /* as last read or written */
	CycleKeys queued; /* extend's, kept in meta "cycle_queued" */
	MatchResult *mr;  /* the match just played, of opponent `opp` */
	int opp;
	int gen;
	CycleExtendStats extend;
	ThinkStats think;
	uint64_t opp_thought[CYCLE_OPPONENTS_MAX]; /* the probe's, per opponent */
	double opp_engine_s[CYCLE_OPPONENTS_MAX];
	size_t round_marked; /* the last backtracking or keeping transaction's marks */
	size_t avoided;
	bool *replay;          /* --retries: per game of `games`, to be played again ... */
	size_t nreplay;        /* ... how many */
	MatchResult *retry_mr; /* a round's matches, one an opponent */
	char note[640];        /* check_opponents' */
	bool opp_other;        /* the book keeps other opponents than these (kept_other) */
} Run;

/* Opens the book, runs fn (NULL: nothing) in a write transaction, writes the
 * state s (when s) in the same transaction, commits, closes: a step whose
 * effect is one transaction is so atomic with its state. fn returns 0 or
 * CYCLE_E* (nothing committed). */
typedef int (*TxnFn)(Run *r, BookDB *db, BookTxn *txn, char *err);

static int in_txn(Run *r, TxnFn fn, const CycleState *s, bool write, char *err)
{
	BookDB *db = NULL;
	BookTxn *txn = NULL;
	char berr[BOOKDB_ERRLEN];
	if (bookdb_open(&db, r->opt->book, NULL, berr) < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s", berr);
	int ret = 0, rc = bookdb_txn_begin(&txn, db, write);
	if (rc < 0) ret = book_fail(err, "cannot write the book", rc);
	if (ret == 0 && fn) ret = fn(r, db, txn, err);
	if (ret == 0 && s && (rc = state_put(txn, s)) < 0)
		ret = book_fail(err, "cannot save the cycle's state", rc);
	if (ret == 0 && write && (rc = bookdb_txn_commit(txn)) < 0)
		ret = book_fail(err, "cannot write the book", rc);
	else if (ret != 0 || !write)
		bookdb_txn_abort(txn);
	bookdb_free(db);
	return ret;
}

static int with_txn(Run *r, TxnFn fn, const CycleState *s, char *err)
{
	return in_txn(r, fn, s, true, err);
}

/* fn in a read transaction (opening the book makes it when missing). */
static int with_read(Run *r, TxnFn fn, char *err)
{
	return in_txn(r, fn, NULL, false, err);
}

/* Opens the book for a step that makes transactions of its own (think,
 * minimax), then writes the state s in its own transaction. */
typedef int (*BookFn)(Run *r, BookDB *db, char *err);

static int with_book(Run *r, BookFn fn, const CycleState *s, char *err)
{
	BookDB *db = NULL;
	char berr[BOOKDB_ERRLEN];
	if (bookdb_open(&db, r->opt->book, NULL, berr) < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s", berr);
	int ret = fn ? fn(r, db, err) : 0;
	bookdb_free(db);
	if (ret == 0 && s) ret = with_txn(r, NULL, s, err);
	return ret;
}

static int load_state(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	cycle_games_free(&r->games);
	cycle_table_free(&r->table);
	int rc = state_get(&r->st, txn);
	if (rc < 0) return book_fail(err, "cannot read the cycle's state", rc);
	if (r->st.step > STEP_NONE) r->st.matched = r->nopp;
	rc = games_load(&r->games, txn);
	if (rc == BOOKDB_ENOTFOUND) {
		cycle_games_free(&r->games);
		rc = 0;
	}
	if (rc < 0) return book_fail(err, "cannot read the generation's games", rc);
	if ((rc = table_load(&r->table, txn)) < 0)
		return book_fail(err, "cannot read the table", rc);
	return 0;
}

/* The games of the generation, with each one's opening plies. */
static void games_openings(Run *r)
{
	const MatchOptions *mo = &r->opt->match;
	Position *pos = malloc(sizeof *pos);
	for (size_t i = 0; pos && i < r->games.n; i++) {
		CycleGame *g = &r->games.games[i];
		g->start_ply = 0;
		if (g->opening >= 1 && g->opening <= mo->nopenings &&
		    position_parse(pos, mo->openings[g->opening - 1], NULL) == 0)
			g->start_ply = pos_history_len(pos);
	}
	free(pos);
}

/* The match of opponent r->opp is over: its games, its row, the state. */
static int save_match(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	const MatchResult *mr = r->mr;
	int rc = games_put(txn, r->opp ? &r->games : NULL, mr, 1, r->opp, true);
	CycleRow *row = rc < 0 ? NULL : table_row(&r->table, r->gen, r->opp + 1);
	if (!row) return book_fail(err, "cannot save the games", rc < 0 ? rc : BOOKDB_ENOMEM);
	*row = (CycleRow){.generation = r->gen,
	                  .opponent = r->opp + 1,
	                  .games = mr->played,
	                  .wins = mr->wins,
	                  .draws = mr->draws,
	                  .losses = mr->losses,
	                  .exits = mr->exit[0].games,
	                  .exit_q1 = mr->exit[0].q1,
	                  .exit_median = mr->exit[0].median,
	                  .exit_q3 = mr->exit[0].q3};
	for (int i = 0; i < mr->ngames; i++)
		if (mr->games[i].played) row->book_moves += mr->games[i].book_plies[0];
	/* The engine's name, and its options: two configurations of one engine
	 * are two rows the table tells apart ("Fairy-Stockfish 14 (Threads=1)"). */
	const MatchSide *s =
	    r->opt->opponents ? &r->opt->opponents[r->opp] : &r->opt->match.side[1];
	size_t at = (size_t)snprintf(row->name, sizeof row->name, "%s", mr->name[1]);
	for (int k = 0; k < s->noptions && at < sizeof row->name; k++)
		at += (size_t)snprintf(row->name + at, sizeof row->name - at, "%s%s=%s%s",
		                       k ? ", " : " (", s->options[k].name, s->options[k].value,
		                       k + 1 == s->noptions ? ")" : "");
	if ((rc = table_put(txn, &r->table)) < 0)
		return book_fail(err, "cannot save the table", rc);
	return 0;
}

static CycleRow *gen_row(Run *r, int opp)
{
	return table_row(&r->table, r->gen, opp + 1);
}

static int save_table(Run *r, BookTxn *txn, char *err)
{
	int rc = table_put(txn, &r->table);
	return rc < 0 ? book_fail(err, "cannot save the table", rc) : 0;
}

/* --delete all: every move that loses badly against one opponent. */
static int step_prune(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	if (r->opt->delete_rule != CYCLE_DELETE_ALL) return 0;
	CyclePruneStats ps;
	int rc = cycle_prune_txn(&ps, txn, r->games.games, r->games.n, &r->opt->prune, err);
	if (rc < 0) return rc;
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->marked += ps.opp_marked[j];
	}
	r->st.marked += ps.marked;
	return save_table(r, txn, err);
}

/* Whether the book follows game g further (--extend). */
static bool followed(const CycleOptions *o, const CycleGame *g)
{
	return o->extend_rule == CYCLE_EXTEND_ALL ||
	       (o->extend_rule == CYCLE_EXTEND_LOST && g->result < 0);
}

/* meta "cycle_queued": the keys extend queued, each after its owner's byte. */
static int queued_put(BookTxn *txn, const CycleKeys *k)
{
	uint8_t *buf = malloc(k->n * 17 + 1);
	if (!buf) return BOOKDB_ENOMEM;
	for (size_t i = 0; i < k->n; i++) {
		buf[17 * i] = k->owners[i];
		key_to_bytes(k->keys[i], buf + 17 * i + 1);
	}
	int rc = bookdb_kv_put(txn, BOOKDB_META, "cycle_queued", 12, buf, k->n * 17);
	free(buf);
	return rc;
}

static int step_extend(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	const CycleOptions *o = r->opt;
	cycle_keys_free(&r->queued);
	memset(&r->extend, 0, sizeof r->extend);
	/* With the probe the walks follow the games, not the queue. */
	if (!o->probe.opponents && o->extend_rule != CYCLE_EXTEND_NONE) {
		CycleGame *sel = malloc((r->games.n ? r->games.n : 1) * sizeof *sel);
		size_t n = 0;
		if (!sel) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		for (size_t i = 0; i < r->games.n; i++)
			if (followed(o, &r->games.games[i])) sel[n++] = r->games.games[i];
		int rc = cycle_extend_txn(&r->extend, txn, sel, n, o->plies, &r->queued, err);
		free(sel);
		if (rc < 0) return rc;
	}
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->queued = r->extend.opp_queued[j];
	}
	r->st.queued = r->extend.queued;
	int rc = queued_put(txn, &r->queued);
	if (rc < 0) return book_fail(err, "cannot save the queued positions", rc);
	return save_table(r, txn, err);
}

/* The lines the probe walks against opponent j: the openings of the games
 * it follows, each in the colour(s) the book played them; *lines counts
 * them. The specs point into the match's openings. */
typedef struct {
	const char **specs;
	PlanSide *sides;
	int n, lines;
} ProbeLines;

static int probe_lines(ProbeLines *pl, const Run *r, int j)
{
	const MatchOptions *mo = &r->opt->match;
	int nslots = mo->nopenings + 1; /* 0: the start position */
	uint8_t *mask = calloc((size_t)nslots, 1);
	memset(pl, 0, sizeof *pl);
	pl->specs = malloc((size_t)nslots * sizeof *pl->specs);
	pl->sides = malloc((size_t)nslots * sizeof *pl->sides);
	if (!mask || !pl->specs || !pl->sides) {
		free(mask);
		return -1;
	}
	for (size_t i = 0; i < r->games.n; i++) {
		const CycleGame *g = &r->games.games[i];
		if (g->opponent != j || !followed(r->opt, g) || g->opening < 0 ||
		    g->opening >= nslots)
			continue;
		mask[g->opening] |= g->book_color == BLACK ? 1 : 2;
	}
	for (int o = 0; o < nslots; o++) {
		if (!mask[o]) continue;
		pl->specs[pl->n] = o ? mo->openings[o - 1] : "startpos";
		pl->sides[pl->n++] = mask[o] == 3   ? PLAN_SIDE_BOTH
		                     : mask[o] == 1 ? PLAN_SIDE_BLACK
		                                    : PLAN_SIDE_WHITE;
		pl->lines += mask[o] == 3 ? 2 : 1;
	}
	free(mask);
	return 0;
}

static void probe_lines_free(ProbeLines *pl)
{
	free(pl->specs);
	free(pl->sides);
}

/* The probe: each opponent's lines walked against it, the budget shared by
 * lines. */
static int think_probe(Run *r, BookDB *db, uint64_t before, char *err)
{
	const CycleOptions *o = r->opt;
	const ThinkOptions *t = &o->think;
	char terr[THINK_ERRLEN];
	ProbeLines pl[CYCLE_OPPONENTS_MAX];
	int total = 0, ret = 0;
	for (int j = 0; j < r->nopp; j++) {
		if (o->extend_rule == CYCLE_EXTEND_ALL) {
			memset(&pl[j], 0, sizeof pl[j]);
			pl[j].lines = (t->nroots > 0 ? t->nroots : 1) *
			              (o->probe.book_side == PLAN_SIDE_BOTH ? 2 : 1);
		} else if (probe_lines(&pl[j], r, j) < 0) {
			for (int k = 0; k < j; k++) probe_lines_free(&pl[k]);
			return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		}
		total += pl[j].lines;
	}
	uint64_t thought = before;
	for (int j = 0; j < r->nopp && ret == 0; j++) {
		if (!pl[j].lines || (t->stop && *t->stop)) continue;
		double share = (double)pl[j].lines / total;
		ProbeOptions po = o->probe;
		po.opponents = o->probe.opponents + (size_t)j * (size_t)t->nengines;
		po.engines = t->engines;
		po.nworkers = t->nengines;
		po.budget = t->budget;
		po.multipv = t->multipv;
		if (o->extend_rule == CYCLE_EXTEND_ALL) {
			po.roots = t->roots;
			po.root_weights = t->root_weights;
			po.nroots = t->nroots;
		} else {
			po.roots = pl[j].specs;
			po.root_sides = pl[j].sides;
			po.root_weights = NULL;
			po.nroots = pl[j].n;
		}
		if (t->max_positions) {
			uint64_t left = t->max_positions > thought ? t->max_positions - thought : 0;
			po.max_positions = (uint64_t)((double)left * share + 0.5);
			if (po.max_positions < 1) po.max_positions = 1;
		}
		po.max_seconds = t->max_seconds * share;
		po.max_engine_seconds = t->max_engine_seconds * share;
		po.stop = t->stop;
		po.minimax = o->minimax;
		ProbeStats ps;
		if (probe_run(&ps, db, &po, terr) < 0)
			ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "think: %s", terr);
		r->opp_thought[j] += ps.thought;
		r->opp_engine_s[j] += ps.engine_seconds;
		thought += ps.thought;
	}
	for (int j = 0; j < r->nopp; j++) probe_lines_free(&pl[j]);
	r->think.thought = thought;
	return ret;
}

static int step_think(Run *r, BookDB *db, char *err)
{
	const CycleOptions *o = r->opt;
	char terr[THINK_ERRLEN];
	int rc;
	memset(r->opp_thought, 0, sizeof r->opp_thought);
	memset(r->opp_engine_s, 0, sizeof r->opp_engine_s);
	memset(&r->think, 0, sizeof r->think);
	if (o->probe.opponents) {
		/* The way to the roots first, then the lines the opponents play. */
		const ThinkOptions *t = &o->think;
		uint64_t before = 0;
		if (t->npaths) {
			if ((rc = think_paths(&r->think, db, t, terr)) < 0)
				return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "think: %s",
				                  terr);
			before = r->think.thought;
		}
		if (!(t->stop && *t->stop) && (rc = think_probe(r, db, before, err)) < 0) return rc;
		r->think.thought = r->think.thought > before ? r->think.thought : before;
	} else if ((rc = think_run(&r->think, db, &o->think, terr)) < 0) {
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "think: %s", terr);
	}
	r->st.thought = r->think.thought;
	if (o->stop && *o->stop) return 1; /* not finished: the state is not advanced */
	return 0;
}

/* Think's figures into the rows: the probe's per opponent, or the queued
 * positions now thought. */
static int think_rows(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	if (!r->opt->probe.opponents) {
		memset(r->opp_thought, 0, sizeof r->opp_thought);
		const void *v;
		size_t len;
		int rc = bookdb_kv_get(&v, &len, txn, BOOKDB_META, "cycle_queued", 12);
		if (rc < 0 && rc != BOOKDB_ENOTFOUND)
			return book_fail(err, "cannot read the queued positions", rc);
		const uint8_t *b = v;
		for (size_t i = 0; rc == 0 && i + 17 <= len; i += 17) {
			const uint8_t *rv;
			size_t rl;
			if (b[i] < CYCLE_OPPONENTS_MAX &&
			    bookdb_get_raw(&rv, &rl, txn, key_from_bytes(b + i + 1)) == 0 && rl &&
			    (rv[0] & BOOKDB_REC_THOUGHT))
				r->opp_thought[b[i]]++;
		}
		/* Think's engine time, shared by the positions thought for each. */
		uint64_t all = 0;
		for (int j = 0; j < r->nopp; j++) all += r->opp_thought[j];
		for (int j = 0; j < r->nopp; j++)
			r->opp_engine_s[j] =
			    all ? r->think.engine_seconds * (double)r->opp_thought[j] / (double)all
			        : r->think.engine_seconds / r->nopp;
	}
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->thought = r->opp_thought[j];
		row->engine_ms = (uint64_t)(r->opp_engine_s[j] * 1e3 + 0.5);
	}
	return save_table(r, txn, err);
}

static int step_minimax(Run *r, BookDB *db, char *err)
{
	char merr[CYCLE_ERRLEN - 16];
	if (!book_minimax_hook_set(&r->opt->minimax)) return 0;
	merr[0] = 0;
	if (book_minimax_hook_run(&r->opt->minimax, db, merr, sizeof merr))
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "minimax: %s", merr);
	return 0;
}

/* A round's marks counted, with the state and the table. */
static int round_save(Run *r, BookTxn *txn, size_t marked, char *err)
{
	r->round_marked = marked;
	r->st.marked += marked;
	int rc = state_put(txn, &r->st);
	return rc < 0 ? book_fail(err, "cannot save the cycle's state", rc)
	              : save_table(r, txn, err);
}

/* --delete last: one round of backtracking over the lost games. */
static int step_backtrack(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	CycleBacktrackStats bs;
	int rc = cycle_backtrack_txn(&bs, txn, r->games.games, r->games.n, &r->opt->prune, err);
	if (rc < 0) return rc;
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->marked += bs.opp_marked[j];
		row->repeats = bs.opp_stuck[j];
	}
	return round_save(r, txn, bs.marked, err);
}

/* ... and of keeping the won games. */
static int step_keep(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	CycleKeepStats ks;
	int rc = cycle_keep_won_txn(&ks, txn, r->games.games, r->games.n, err);
	if (rc < 0) return rc;
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->won_lost = ks.opp_lost[j];
	}
	return round_save(r, txn, ks.marked, err);
}

/* The opponents as a run plays them, one line each: the engine, its options
 * in the order given, and the match's budget ("builtin USI_Hash=32 nodes
 * 2000"). malloc'd, or NULL. */
static char *opponents_ident(const Run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f) return NULL;
	const MatchOptions *mo = &r->opt->match;
	static const char *const KIND[] = {"budget", "nodes", "movetime", "depth", "clock"};
	unsigned kind = (unsigned)mo->budget.kind < 5 ? (unsigned)mo->budget.kind : 0;
	for (int j = 0; j < r->nopp; j++) {
		const MatchSide *s = r->opt->opponents ? &r->opt->opponents[j] : &mo->side[1];
		fprintf(f, "%s", s->engine ? s->engine : "builtin");
		for (int k = 0; k < s->noptions; k++)
			fprintf(f, " %s=%s", s->options[k].name, s->options[k].value);
		fprintf(f, " %s %llu\n", KIND[kind], (unsigned long long)mo->budget.amount);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The first opponent that differs between two opponents_ident texts, said
 * into out: "opponent 2 was 'X', is 'Y'", or how many there were. */
static void opponents_diff(char *out, size_t cap, const char *was, size_t wlen, const char *now)
{
	const char *a = was, *aend = was + wlen, *b = now;
	for (int j = 1;; j++) {
		const char *ae = memchr(a, '\n', (size_t)(aend - a)), *be = strchr(b, '\n');
		if (!ae || !be) {
			int na = j - 1, nb = j - 1;
			for (const char *p = a;
			     p < aend && (p = memchr(p, '\n', (size_t)(aend - p))); p++)
				na++;
			for (const char *p = b; (p = strchr(p, '\n')); p++) nb++;
			snprintf(out, cap, "%d opponent%s then, %d now", na, na == 1 ? "" : "s",
			         nb);
			return;
		}
		if (ae - a != be - b || memcmp(a, b, (size_t)(ae - a))) {
			char x[200], y[200];
			errmsg_escape(x, sizeof x, a, (size_t)(ae - a));
			errmsg_escape(y, sizeof y, b, (size_t)(be - b));
			snprintf(out, cap, "opponent %d was '%s', is '%s'", j, x, y);
			return;
		}
		a = ae + 1;
		b = be + 1;
	}
}

/* These opponents (*now, malloc'd) and those the book keeps (meta
 * "cycle_opponents": *v, *len; none: *len 0), *differ when it keeps others.
 * 0, or a code with err (*now freed). */
static int kept_opponents(Run *r, BookTxn *txn, char **now, const void **v, size_t *len,
                          bool *differ, char *err)
{
	if (!(*now = opponents_ident(r)))
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	int rc = bookdb_kv_get(v, len, txn, BOOKDB_META, "cycle_opponents", 15);
	if (rc < 0 && rc != BOOKDB_ENOTFOUND) {
		free(*now);
		return book_fail(err, "cannot read the cycle's opponents", rc);
	}
	if (rc) *len = 0;
	*differ = rc == 0 && (*len != strlen(*now) || memcmp(*v, *now, *len));
	return 0;
}

/* Sets r->opp_other: the book keeps opponents and they are not these. */
static int kept_other(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	char *now;
	const void *v;
	size_t len;
	int rc = kept_opponents(r, txn, &now, &v, &len, &r->opp_other, err);
	if (rc == 0) free(now);
	return rc;
}

/* Compares the opponents with the last run's (meta "cycle_opponents"), and
 * keeps these (in a write transaction; with every generation done, in a
 * read one, it only says that nothing is played). A generation begun
 * against others starts over: its state, games, rows and queue dropped (the
 * marks and analyses it made stay, as any the book holds); r->note says so,
 * or that the next generation plays other opponents than the last. */
static int check_opponents(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	char *now;
	const void *v;
	size_t len;
	bool differ;
	int rc = kept_opponents(r, txn, &now, &v, &len, &differ, err);
	if (rc < 0) return rc;
	bool kept = len > 0;
	char what[440] = "";
	if (differ) opponents_diff(what, sizeof what, v, len, now);
	if (r->st.gen >= r->opt->generations) {
		/* Nothing to play (a read transaction): said, not kept. */
		snprintf(r->note, sizeof r->note,
		         "the book's cycle has done %d generation%s already: nothing is played (a "
		         "larger --generations adds generations%s%s)",
		         r->st.gen, r->st.gen == 1 ? "" : "s",
		         differ ? "; these opponents differ from the last run's: " : "", what);
		free(now);
		return 0;
	}
	if (kept && !differ) {
		free(now);
		return 0;
	}
	if (differ && (r->st.step > STEP_NONE || r->st.matched > 0)) {
		int gen = r->st.gen + 1;
		snprintf(r->note, sizeof r->note,
		         "generation %d was begun against other opponents (%s): it starts over "
		         "against these (its games and rows so far dropped)",
		         gen, what);
		size_t k = 0;
		for (size_t i = 0; i < r->table.n; i++)
			if (r->table.rows[i].generation != gen)
				r->table.rows[k++] = r->table.rows[i];
		r->table.n = k;
		cycle_games_free(&r->games);
		r->st = (CycleState){.gen = r->st.gen};
		if ((rc = table_put(txn, &r->table)) < 0 || (rc = state_put(txn, &r->st)) < 0 ||
		    ((rc = bookdb_kv_del(txn, BOOKDB_META, "cycle_games", 11)) < 0 &&
		     rc != BOOKDB_ENOTFOUND) ||
		    ((rc = bookdb_kv_del(txn, BOOKDB_META, "cycle_queued", 12)) < 0 &&
		     rc != BOOKDB_ENOTFOUND)) {
			free(now);
			return book_fail(err, "cannot write the book", rc);
		}
	} else if (differ && r->st.gen > 0) {
		snprintf(r->note, sizeof r->note,
		         "the opponents differ from the last run's (%s): generation %d plays these",
		         what, r->st.gen + 1);
	}
	rc = bookdb_kv_put(txn, BOOKDB_META, "cycle_opponents", 15, now, strlen(now));
	free(now);
	return rc < 0 ? book_fail(err, "cannot write the book", rc) : 0;
}

static int step_finish(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	return cycle_avoided_txn(&r->avoided, txn, err);
}

static void announce(const CycleOptions *opt, int gen, const char *step)
{
	if (opt->on_step) opt->on_step(opt->ctx, gen, step);
}

/* Runs one step (a transaction with its state) unless the state says it is done. */
#define STEP(num, name, fn)                                                                        \
	do {                                                                                       \
		if (r.st.step < (num)) {                                                           \
			if (opt->stop && *opt->stop) goto stopped;                                 \
			announce(opt, gen, name);                                                  \
			CycleState before = r.st;                                                  \
			r.st.step = (num);                                                         \
			if ((ret = with_txn(&r, fn, &r.st, err)) < 0) {                            \
				r.st = before;                                                     \
				goto out;                                                          \
			}                                                                          \
		}                                                                                  \
	} while (0)

/* Opponent j's match of generation r->gen as the cycle plays it: the book
 * side with the book against the opponent, the generation's shuffle of the
 * openings (a game played again is the same game only with the same one),
 * its records in dir, or dir/opponent-J (built in odir, len bytes) with
 * several opponents. */
static MatchOptions gen_match(const Run *r, int j, const char *dir, char *odir, size_t len)
{
	const CycleOptions *opt = r->opt;
	MatchOptions mo = opt->match;
	if (opt->opponents) mo.side[1] = opt->opponents[j];
	mo.side[0].book = opt->book;
	/* Another shuffle of the openings each generation. */
	mo.seed = opt->match.seed + (uint64_t)(r->gen - 1);
	mo.out_dir = dir;
	if (r->nopp > 1) {
		snprintf(odir, len, "%s/opponent-%d", dir, j + 1);
		mo.out_dir = odir;
	}
	mo.cancel = opt->stop;
	return mo;
}

/* The matches of the generation not played yet, one an opponent. */
static int play_matches(Run *r, const char *dir, char *err)
{
	const CycleOptions *opt = r->opt;
	char gdir[BOOKDB_PATH_LEN + 32], odir[BOOKDB_PATH_LEN + 64];
	snprintf(gdir, sizeof gdir, "%s/gen-%04d", dir, r->gen);
	while (r->st.step == STEP_NONE && r->st.matched < r->nopp) {
		if (opt->stop && *opt->stop) return 1;
		int j = r->st.matched;
		announce(opt, r->gen, "match");
		MatchResult mr;
		char merr[MATCH_ERRLEN];
		if (r->nopp > 1 && mkdir(gdir, 0777) < 0 && errno != EEXIST)
			return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", gdir,
			                  strerror(errno));
		MatchOptions mo = gen_match(r, j, gdir, odir, sizeof odir);
		if (match_run(&mr, &mo, merr) < 0)
			return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "match: %s", merr);
		if (opt->stop && *opt->stop) {
			match_result_free(&mr);
			return 1;
		}
		r->mr = &mr;
		r->opp = j;
		CycleState next = {.gen = r->gen - 1,
		                   .step = j + 1 == r->nopp ? STEP_MATCH : STEP_NONE,
		                   .matched = j + 1};
		int ret = with_txn(r, save_match, &next, err);
		r->mr = NULL;
		match_result_free(&mr);
		if (ret < 0) return ret;
		if ((ret = with_read(r, load_state, err)) < 0) return ret;
	}
	return 0;
}

/* Backtracking and keeping, until neither marks anything (each round's
 * marks and figures with the state: a rerun goes on). 0, 1 when stopped, or
 * CYCLE_E*. */
static int backtrack_rounds(Run *r, int gen, char *err)
{
	const CycleOptions *opt = r->opt;
	/* The values as the marks so far leave them: a run killed between a
	 * round's marks and the minimax after it resumes here. (Incremental:
	 * nothing to do when nothing changed.) */
	int ret = with_book(r, step_minimax, NULL, err);
	if (ret < 0) return ret;
	for (int round = 0; round < KEEP_ROUNDS; round++) {
		size_t any = 0;
		if (opt->stop && *opt->stop) return 1;
		announce(opt, gen, "backtrack");
		if ((ret = with_txn(r, step_backtrack, NULL, err)) < 0) return ret;
		any += r->round_marked;
		if (r->round_marked && (ret = with_book(r, step_minimax, NULL, err)) < 0)
			return ret;
		if ((ret = with_txn(r, step_keep, NULL, err)) < 0) return ret;
		any += r->round_marked;
		if (r->round_marked && (ret = with_book(r, step_minimax, NULL, err)) < 0)
			return ret;
		if (!any) break;
	}
	return 0;
}

/* --retries: the games to play again (cycle_replays_txn) into r->replay. */
static int find_replays(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	free(r->replay);
	r->nreplay = 0;
	r->replay = calloc(r->games.n ? r->games.n : 1, sizeof *r->replay);
	if (!r->replay) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	return cycle_replays_txn(&r->nreplay, r->replay, txn, r->games.games, r->games.n, err);
}

/* A round's games after the generation's (its W D L unchanged), its
 * figures in the rows. */
static int save_retries(Run *r, BookDB *db, BookTxn *txn, char *err)
{
	(void)db;
	int rc = games_put(txn, &r->games, r->retry_mr, r->nopp, 0, false);
	if (rc < 0) return book_fail(err, "cannot save the games", rc);
	for (int j = 0; j < r->nopp; j++) {
		CycleRow *row = gen_row(r, j);
		if (!row) return errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
		row->retried += r->retry_mr[j].played;
		row->retry_wins += r->retry_mr[j].wins;
	}
	return save_table(r, txn, err);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* One round of --retries: the lost games the book now plays differently,
 * played again against their opponents (each the same game of the
 * generation's match: opening, colours, seed), their games and figures
 * written with the round counted, in one transaction (a round stopped
 * before it is played again). 0 (r->nreplay: games to play; 0: none, the
 * rounds are over), 1 when stopped, or CYCLE_E*. */
static int retry_round(Run *r, const char *dir, char *err)
{
	const CycleOptions *opt = r->opt;
	int ret = with_read(r, find_replays, err);
	if (ret < 0 || r->nreplay == 0) return ret;
	MatchResult mr[CYCLE_OPPONENTS_MAX];
	memset(mr, 0, sizeof mr);
	int queued = 0;
	int *only = malloc(r->games.n * sizeof *only);
	char gdir[BOOKDB_PATH_LEN + 32], rdir[BOOKDB_PATH_LEN + 64], odir[BOOKDB_PATH_LEN + 96];
	snprintf(gdir, sizeof gdir, "%s/gen-%04d", dir, r->gen);
	snprintf(rdir, sizeof rdir, "%s/retry-%d", gdir, r->st.retried + 1);
	if (!only) ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ENOMEM, "out of memory");
	for (const char *d = gdir; ret == 0 && d; d = d == gdir ? rdir : NULL)
		if (mkdir(d, 0777) < 0 && errno != EEXIST)
			ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", d,
			                 strerror(errno));
	for (int j = 0; j < r->nopp && ret == 0; j++) {
		MatchOptions mo = gen_match(r, j, rdir, odir, sizeof odir);
		int k = 0;
		for (size_t g = 0; g < r->games.n; g++) {
			const CycleGame *gm = &r->games.games[g];
			if (!r->replay[g] || gm->opponent != j) continue;
			int idx = match_game_index(&mo, gm->opening - 1, (Color)gm->book_color);
			if (idx >= 0) only[k++] = idx;
		}
		if (!k) continue;
		queued += k;
		qsort(only, (size_t)k, sizeof *only, cmp_int);
		int u = 0;
		for (int i = 0; i < k; i++)
			if (!u || only[i] != only[u - 1]) only[u++] = only[i];
		mo.only = only;
		mo.nonly = u;
		char merr[MATCH_ERRLEN];
		if (match_run(&mr[j], &mo, merr) < 0)
			ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP, "match: %s", merr);
		else if (opt->stop && *opt->stop)
			ret = 1;
	}
	if (ret == 0 && !queued) r->nreplay = 0; /* none the match can play again */
	if (ret == 0 && queued) {
		CycleState next = r->st;
		next.retried++;
		r->retry_mr = mr;
		ret = with_txn(r, save_retries, &next, err);
		r->retry_mr = NULL;
		if (ret == 0 && (ret = with_read(r, load_state, err)) == 0) games_openings(r);
	}
	for (int j = 0; j < r->nopp; j++) match_result_free(&mr[j]);
	free(only);
	return ret;
}

int cycle_run(int *done, bool *stopped, const CycleOptions *opt, char *err)
{
	Run r = {.opt = opt, .nopp = opt->opponents ? opt->nopponents : 1};
	int ret = 0;
	*done = 0;
	*stopped = false;
	if (!opt->book || opt->generations < 1 || opt->plies < 0)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: a book, --generations >= 1 and --plies >= 0 are needed");
	if (opt->retries < 0 || (opt->retries > 0 && opt->delete_rule != CYCLE_DELETE_LAST))
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: --retries needs --delete last, and at least 0");
	if (r.nopp < 1 || r.nopp > CYCLE_OPPONENTS_MAX)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: 1 to %d opponents are needed", CYCLE_OPPONENTS_MAX);
	char dir[BOOKDB_PATH_LEN];
	if (strlen(opt->book) > BOOKDB_DIR_MAX)
		return errmsg_set(err, CYCLE_ERRLEN, CYCLE_EINVAL,
		                  "cycle: the book path is too long");
	snprintf(dir, sizeof dir, "%s/cycle", opt->book);
	/* Creates the book if needed, then reads where the last run stopped. */
	if ((ret = with_read(&r, load_state, err)) < 0) goto out;
	/* Each opponent is started once with its options and asked whether it
	 * takes the match's budget before check_opponents may drop a generation
	 * begun against others, or keep these, so that an option an engine
	 * refuses (a typo) or a budget it cannot search (gpsshogi given nodes)
	 * stops the run with the book as it was: no opponent recorded that never
	 * played. */
	if (r.st.gen < opt->generations && (ret = with_read(&r, kept_other, err)) < 0) goto out;
	for (int j = 0; j < r.nopp && r.st.gen < opt->generations; j++) {
		char merr[MATCH_ERRLEN];
		const MatchSide *s = opt->opponents ? &opt->opponents[j] : &opt->match.side[1];
		if (match_side_try(s, opt->match.usi, &opt->match.budget, merr) < 0) {
			ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_ESTEP,
			                 "opponent %d: %s (nothing played, the book as it was)",
			                 j + 1, merr);
			goto out;
		}
	}
	ret = r.st.gen < opt->generations ? with_txn(&r, check_opponents, NULL, err)
	                                  : with_read(&r, check_opponents, err);
	if (ret < 0) goto out;
	if (r.note[0] && opt->on_note) opt->on_note(opt->ctx, r.note);
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		ret = errmsg_set(err, CYCLE_ERRLEN, CYCLE_EBOOK, "%s: %s", dir, strerror(errno));
		goto out;
	}
	while (r.st.gen < opt->generations) {
		int gen = r.gen = r.st.gen + 1;
		bool resumed = r.st.step > STEP_NONE || r.st.matched > 0;
		memset(&r.extend, 0, sizeof r.extend);
		memset(&r.think, 0, sizeof r.think);
		if ((ret = play_matches(&r, dir, err)) > 0) goto stopped;
		if (ret < 0) goto out;
		games_openings(&r);
		STEP(STEP_PRUNE, "prune", step_prune);
		STEP(STEP_EXTEND, "extend", step_extend);
		if (r.st.step < STEP_THINK) {
			if (opt->stop && *opt->stop) goto stopped;
			announce(opt, gen, "think");
			if ((ret = with_book(&r, step_think, NULL, err)) > 0) goto stopped;
			if (ret < 0) goto out;
			CycleState next = r.st;
			next.step = STEP_THINK;
			if ((ret = with_txn(&r, think_rows, &next, err)) < 0) goto out;
			r.st = next;
		}
		if (r.st.step < STEP_MINIMAX) {
			if (opt->stop && *opt->stop) goto stopped;
			announce(opt, gen, "minimax");
			CycleState next = r.st;
			next.step = STEP_MINIMAX;
			if ((ret = with_book(&r, step_minimax, &next, err)) < 0) goto out;
			r.st = next;
		}
		if (opt->delete_rule == CYCLE_DELETE_LAST) {
			if ((ret = backtrack_rounds(&r, gen, err)) > 0) goto stopped;
			if (ret < 0) goto out;
			while (r.st.retried < opt->retries) {
				if (opt->stop && *opt->stop) goto stopped;
				announce(opt, gen, "retry");
				if ((ret = retry_round(&r, dir, err)) > 0) goto stopped;
				if (ret < 0) goto out;
				if (!r.nreplay) break;
				if ((ret = backtrack_rounds(&r, gen, err)) > 0) goto stopped;
				if (ret < 0) goto out;
			}
		}
		CycleState next = {.gen = gen};
		if ((ret = with_txn(&r, step_finish, &next, err)) < 0) goto out;
		CycleGenStats gs = {
		    .generation = gen,
		    .games = r.games.wins + r.games.draws + r.games.losses,
		    .wins = r.games.wins,
		    .draws = r.games.draws,
		    .losses = r.games.losses,
		    .queued = (size_t)r.st.queued,
		    .thought = r.st.thought,
		    .marked = (size_t)r.st.marked,
		    .avoided = r.avoided,
		    .resumed = resumed,
		};
		gs.score = gs.games ? (gs.wins + 0.5 * gs.draws) / gs.games : 0;
		for (size_t i = 0; i < r.table.n; i++)
			if (r.table.rows[i].generation == gen) {
				if (!gs.rows) gs.rows = &r.table.rows[i];
				gs.nrows++;
			}
		r.st = next;
		if (opt->on_generation) opt->on_generation(opt->ctx, &gs);
	}
	goto out;
stopped:
	*stopped = true;
	ret = 0;
out:
	*done = r.st.gen;
	cycle_games_free(&r.games);
	cycle_table_free(&r.table);
	cycle_keys_free(&r.queued);
	free(r.replay);
	return ret;
}
