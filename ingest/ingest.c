/* ingest/ingest.c — the ingest pipeline: the writer (games applied in batches) and
 * the run; the feeder is feed.c, the parsers parse.c (ingest_priv.h). */
#include "ingest/ingest.h"
#include "ingest/ingest_priv.h"
#include "shogi/errmsg.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "bookdb/game.h"
#include "ingest/replay.h"
#include "shogi/clock.h"
#include "shogi/grow.h"
#include "shogi/notation.h"

const char *ingest_strerror(int code)
{
	switch (code) {
	case INGEST_OK:
		return "success";
	case INGEST_EIO:
		return "input could not be read";
	case INGEST_ENOMEM:
		return "out of memory";
	case INGEST_EBOOK:
		return "the book could not be written";
	case INGEST_EINVAL:
		return "invalid option";
	default:
		return "unknown error";
	}
}

void ingest_options_init(IngestOptions *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->max_ply = 128;
	opt->mate_clamp = 2000;
	opt->mate_plies = 16;
}

void ingest_stats_free(IngestStats *st)
{
	if (!st) return;
	for (size_t i = 0; i < st->nerrors; i++) {
		free(st->errors[i].input);
		free(st->errors[i].message);
	}
	st->nerrors = 0;
}

/*
 * Memory running out anywhere in the pipeline sets this flag (the helpers
 * return NULL and their callers drop what they could not keep); the writer
 * sees it, drops its uncommitted batch and ingest_run returns INGEST_ENOMEM.
 * One ingest at a time per process (the commands run one).
 */
static atomic_bool ingest_oom;

void ing_out_of_memory(void)
{
	atomic_store(&ingest_oom, true);
}

char *ing_strdup(const char *s)
{
	char *r = strdup(s ? s : "");
	if (!r) ing_out_of_memory();
	return r;
}

char *ing_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0) {
		s = NULL;
		ing_out_of_memory();
	}
	va_end(ap);
	return s;
}

/* ---- writer ------------------------------------------------------------ */

/* A malloc'ed copy of s shown as text (errmsg_escape), or NULL. */
static char *shown(const char *s)
{
	size_t n = strlen(s), cap = 4 * n + 1;
	char *t = malloc(cap);
	if (t) errmsg_escape(t, cap, s, n);
	return t;
}

/* The one way into IngestStats.errors: the input's name (an archive entry's,
 * a directory's) and the message are kept as text a terminal shows as it is. */
static void stats_error(IngestStats *st, const char *input, int line, const char *msg)
{
	st->errors_total++;
	if (st->nerrors >= INGEST_MAX_ERRORS) return;
	char *in = shown(input), *m = shown(msg);
	if (!in || !m) {
		free(in);
		free(m);
		return;
	}
	st->errors[st->nerrors].input = in;
	st->errors[st->nerrors].line = line;
	st->errors[st->nerrors].message = m;
	st->nerrors++;
}

typedef struct {
	BookWriter *w;
	BookRecord *rec;
	IngestStats *st;
	/* The games of the uncommitted batch, owned here until applied. */
	Game *games;
	size_t ngames, cap;
	/* Scratch for a game's mark. */
	uint8_t *mark;
	size_t mark_cap;
	Move *moves;
	size_t moves_cap;
	/* The ids of the games this run ingested without an end (games_unended):
	 * one the run then completes is no longer counted. Few, so a list. */
	char **unended;
	size_t nunended;
} Writer;

/* Whether id is one of this run's unended games; taken off the list if so. */
static bool unended_take(Writer *wr, const char *id)
{
	for (size_t i = 0; i < wr->nunended; i++)
		if (!strcmp(wr->unended[i], id)) {
			free(wr->unended[i]);
			wr->unended[i] = wr->unended[--wr->nunended];
			return true;
		}
	return false;
}

/* One stored ply of the batch: sorted by key so that the book is updated in
 * key order, one read and one write per position per batch. */
typedef struct {
	Key key;
	uint32_t game, ply;
} Entry;

static int cmp_entry(const void *pa, const void *pb)
{
	const Entry *a = pa, *b = pb;
	int c = key_cmp(a->key, b->key);
	if (c) return c;
	if (a->game != b->game) return a->game < b->game ? -1 : 1; /* input order decides ties */
	return a->ply < b->ply ? -1 : a->ply > b->ply;
}

/* Counts one ply of a game. again: an unfinished record of the game counted
 * the ply before; only the result is added now. */
static void add_ply(Writer *wr, BookRecord *rec, const Ply *p, GameWinner winner, bool again)
{
	if (p->ply < rec->min_ply) rec->min_ply = p->ply;
	BookMove *bm = NULL;
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == p->move) {
			bm = &rec->moves[i];
			break;
		}
	if (!bm) {
		if (!(bm = bookdb_record_add_move(rec, p->move))) return; /* unvalued */
		wr->st->moves_added++;
		again = false; /* not there after all: counted now */
	}
	Color mover = (Color)p->mover;
	bm->flags |= BOOKDB_MOVE_STATS;
	if (!again) bm->count++;
	if (winner == GAME_WINNER_DRAW)
		bm->draws++;
	else if ((winner == GAME_WINNER_BLACK && mover == BLACK) ||
	         (winner == GAME_WINNER_WHITE && mover == WHITE))
		bm->wins++;
	else if (winner == GAME_WINNER_BLACK || winner == GAME_WINNER_WHITE)
		bm->losses++;
	/* A game comment never replaces an evaluation already stored (from a
	 * search, an import, or an earlier game). */
	if (p->has_eval && !(bm->flags & BOOKDB_MOVE_EVAL)) {
		bm->flags |= BOOKDB_MOVE_EVAL;
		bm->eval = p->eval;
		bm->depth = 0;
		bm->nodes = 0;
		bm->source = INGEST_SOURCE_CSA;
		wr->st->evals_added++;
	}
}

/* Encodes the game's "seen" mark into wr->mark: how it ended and the plies
 * counted (bookdb/game.h), so that a merge can tell this game's share of the
 * statistics. Returns its length or an error. */
static int encode_mark(Writer *wr, const Game *g)
{
	uint32_t n = (uint32_t)g->nplies;
	if (array_grow((void **)&wr->mark, &wr->mark_cap, BOOKDB_GAME_LEN(n), 1, 256) ||
	    array_grow((void **)&wr->moves, &wr->moves_cap, n + 1, sizeof *wr->moves, 256))
		return BOOKDB_ENOMEM;
	for (uint32_t i = 0; i < n; i++) wr->moves[i] = g->plies[i].move;
	return bookdb_game_encode(wr->mark, wr->mark_cap, (uint8_t)g->winner,
	                          n ? g->plies[0].packed : NULL, n ? g->plies[0].packed_len : 0,
	                          n ? g->plies[0].ply : 0, wr->moves, n);
}

/* Whether the game g, its mark encoded (len bytes), completes the one the
 * book holds under its id with the mark v (bookdb_game_completes: the book
 * counted it without a result, a truncated record). Then g->counted says
 * how many plies the book counted. */
static bool completes(Writer *wr, Game *g, int len, const void *v, size_t vl)
{
	BookGame old, now;
	if (bookdb_game_decode(&old, v, vl) < 0 ||
	    bookdb_game_decode(&now, wr->mark, (size_t)len) < 0 ||
	    !bookdb_game_completes(&old, &now))
		return false;
	g->counted = old.nplies;
	return true;
}

/*
 * Applies the batch: first the "seen" marks (a game already in the book, or
 * earlier in this batch, is a duplicate), then every stored ply in key order.
 * Everything lands in the writer's one transaction; the caller commits.
 */
static int apply_batch(Writer *wr)
{
	BookTxn *txn;
	int rc = bookdb_writer_txn(&txn, wr->w);
	if (rc < 0) return rc;
	size_t nentries = 0;
	for (size_t i = 0; i < wr->ngames; i++) {
		Game *g = &wr->games[i];
		const void *v;
		size_t vl;
		rc = bookdb_kv_get(&v, &vl, txn, BOOKDB_GAMES, g->id, strlen(g->id));
		if (rc < 0 && rc != BOOKDB_ENOTFOUND) return rc;
		bool known = rc == 0;
		int len = encode_mark(wr, g);
		if (len < 0) return len;
		if (known && !completes(wr, g, len, v, vl)) {
			wr->st->duplicates++;
			g->status = GAME_SKIP;
			continue;
		}
		rc = bookdb_kv_put(txn, BOOKDB_GAMES, g->id, strlen(g->id), wr->mark, (size_t)len);
		if (rc < 0) return rc;
		if (known)
			wr->st->games_completed++;
		else
			wr->st->games_ingested++;
		if (known && unended_take(wr, g->id)) wr->st->games_unended--;
		if (!known && g->unended) {
			char **u = realloc(wr->unended, (wr->nunended + 1) * sizeof *u);
			char *id = strdup(g->id);
			if (!u || !id) {
				if (u) wr->unended = u;
				free(id);
				return BOOKDB_ENOMEM;
			}
			wr->unended = u;
			wr->unended[wr->nunended++] = id;
			wr->st->games_unended++;
		}
		wr->st->plies_stored += g->nplies - g->counted;
		nentries += g->nplies;
	}
	Entry *e = malloc((nentries ? nentries : 1) * sizeof *e);
	if (!e) return BOOKDB_ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < wr->ngames; i++) {
		const Game *g = &wr->games[i];
		if (g->status != GAME_INGEST) continue;
		for (size_t j = 0; j < g->nplies; j++)
			e[k++] = (Entry){g->plies[j].key, (uint32_t)i, (uint32_t)j};
	}
	qsort(e, nentries, sizeof *e, cmp_entry);
	BookRecord *rec = wr->rec;
	rc = 0;
	for (size_t i = 0; i < nentries && rc >= 0;) {
		const Ply *first = &wr->games[e[i].game].plies[e[i].ply];
		rc = bookdb_writer_get(rec, wr->w, e[i].key);
		if (rc == BOOKDB_ENOTFOUND) {
			memset(rec, 0, offsetof(BookRecord, moves));
			rc = bookdb_unpack_position(rec->board, rec->hand, &rec->side,
			                            first->packed, first->packed_len);
			if (rc < 0) break;
			rec->min_ply = first->ply;
			wr->st->positions_added++;
		} else if (rc < 0) {
			break;
		}
		size_t j = i;
		for (; j < nentries && key_equal(e[j].key, e[i].key); j++) {
			const Game *g = &wr->games[e[j].game];
			add_ply(wr, rec, &g->plies[e[j].ply], g->winner, e[j].ply < g->counted);
		}
		rc = bookdb_writer_put(wr->w, e[i].key, rec);
		i = j;
	}
	free(e);
	return rc < 0 ? rc : 0;
}

static void writer_clear(Writer *wr)
{
	for (size_t i = 0; i < wr->ngames; i++) {
		free(wr->games[i].id);
		free(wr->games[i].plies);
	}
	wr->ngames = 0;
}

/* Takes the game (its id and plies) into the batch. */
static void writer_take(Writer *wr, Game *g)
{
	if (array_grow((void **)&wr->games, &wr->cap, wr->ngames + 1, sizeof *wr->games, 256)) {
		ing_out_of_memory(); /* the game stays with its result, freed there */
		return;
	}
	wr->games[wr->ngames++] = *g;
	g->id = NULL;
	g->plies = NULL;
}

/* Applies and commits the batch. When that fails, nothing of the batch is in
 * the book, and the counters say so (they are put back as they were). */
static int writer_commit(Writer *wr)
{
	IngestStats *st = wr->st;
	uint64_t keep[] = {st->games_ingested, st->duplicates,  st->positions_added,
	                   st->moves_added,    st->evals_added, st->plies_stored,
	                   st->games_completed};
	int rc = apply_batch(wr);
	writer_clear(wr);
	if (rc >= 0) rc = bookdb_writer_flush(wr->w);
	if (rc < 0) {
		st->games_ingested = keep[0];
		st->duplicates = keep[1];
		st->positions_added = keep[2];
		st->moves_added = keep[3];
		st->evals_added = keep[4];
		st->plies_stored = keep[5];
		st->games_completed = keep[6];
	}
	return rc;
}

static void free_result(Result *r)
{
	for (size_t i = 0; i < r->ngames; i++) {
		free(r->games[i].id);
		free(r->games[i].plies);
	}
	free(r->games);
	for (size_t i = 0; i < r->nerrors; i++) {
		free(r->errors[i].input);
		free(r->errors[i].message);
	}
	free(r->errors);
	memset(r, 0, sizeof *r);
}

/* result, or INGEST_ENOMEM (with its error listed) when memory ran out
 * somewhere in the pipeline: the run fails and what is uncommitted is dropped,
 * so the counters say what is in the book. */
static int oom_result(IngestStats *st, int result)
{
	if (result != INGEST_OK || !atomic_load(&ingest_oom)) return result;
	stats_error(st, "ingest", 0, "out of memory (batches committed before are kept)");
	return INGEST_ENOMEM;
}

int ingest_run(IngestStats *st, BookDB *db, const char *const *inputs, size_t ninputs,
               const IngestOptions *opt_in)
{
	memset(st, 0, sizeof *st);
	IngestOptions opt = *opt_in;
	if (opt.max_ply <= 0) opt.max_ply = 128;
	if (opt.jobs <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		opt.jobs = n > 0 ? (int)n : 1;
	}
	if (opt.jobs > 64) opt.jobs = 64;
	if (!opt.batch_games) opt.batch_games = 2000;
	double t0 = clock_s();
	atomic_store(&ingest_oom, false);

	Pipe p;
	memset(&p, 0, sizeof p);
	p.opt = &opt;
	p.inputs = inputs;
	p.ninputs = ninputs;
	p.window = WINDOW;
	p.inflight_max =
	    (size_t)(INFLIGHT_PARTS_PER_JOB * opt.jobs + INFLIGHT_PARTS_MIN) * WALK_PART_BYTES;
	p.t0 = t0;
	p.units = calloc(p.window, sizeof *p.units);
	p.results = calloc(p.window, sizeof *p.results);
	Writer wr = {NULL, malloc(sizeof(BookRecord)), st, NULL, 0, 0, NULL, 0, NULL, 0, NULL, 0};
	if (!p.units || !p.results || !wr.rec) {
		free(p.units);
		free(p.results);
		free(wr.rec);
		return INGEST_ENOMEM;
	}
	int rc = bookdb_writer_new(&wr.w, db, 1u << 30); /* committed per batch of games below */
	if (rc < 0) {
		free(p.units);
		free(p.results);
		free(wr.rec);
		stats_error(st, "book", 0, bookdb_strerror(rc));
		return INGEST_EBOOK;
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_mutex_init(&p.progress_mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	pthread_t feeder, parsers[64];
	/* Threads that cannot start (no memory for a stack): fewer parsers only
	 * slow the run; without the feeder or any parser it cannot run. */
	bool feeder_started = pthread_create(&feeder, NULL, ing_feeder_main, &p) == 0;
	int nparsers = 0;
	while (feeder_started && nparsers < opt.jobs &&
	       pthread_create(&parsers[nparsers], NULL, ing_parser_main, &p) == 0)
		nparsers++;
	int result = INGEST_OK;
	if (!feeder_started || nparsers == 0) {
		stats_error(st, "ingest", 0, "out of memory: cannot start the reading threads");
		result = INGEST_ENOMEM;
	}
	while (result == INGEST_OK) {
		pthread_mutex_lock(&p.mu);
		size_t seq = p.consumed;
		while (!(seq < p.produced && p.results[seq % p.window].done) &&
		       !(p.feed_done && seq == p.produced) && !p.abort)
			pthread_cond_wait(&p.cv, &p.mu);
		bool end = p.feed_done && seq == p.produced;
		bool ready = seq < p.produced && p.results[seq % p.window].done;
		pthread_mutex_unlock(&p.mu);
		if (!ready && !end) { /* a parser gave up (out of memory) */
			result = INGEST_ENOMEM;
			break;
		}
		if (end) break;
		Result *r = &p.results[seq % p.window];
		for (size_t i = 0; i < r->nerrors; i++)
			stats_error(st, r->errors[i].input, r->errors[i].line,
			            r->errors[i].message);
		for (size_t i = 0; i < r->ngames && result == INGEST_OK; i++) {
			Game *g = &r->games[i];
			st->games_read++;
			st->variations += (uint64_t)g->variations;
			if (g->status == GAME_SKIP) {
				st->games_skipped++;
				continue;
			}
			if (g->status == GAME_REJECT) {
				st->games_rejected++;
				continue;
			}
			writer_take(&wr, g);
			if (atomic_load(&ingest_oom)) break;
			if (wr.ngames >= opt.batch_games) {
				rc = writer_commit(&wr);
				if (rc < 0) {
					stats_error(st, "book", 0, bookdb_strerror(rc));
					result = INGEST_EBOOK;
				}
			}
		}
		/* The rest of the input is not read once memory ran out. */
		result = oom_result(st, result);
		free_result(r);
		Unit *u = &p.units[seq % p.window];
		if (u->error) st->unreadable++;
		free(u->name);
		free(u->error);
		u->name = u->error = NULL;
		pthread_mutex_lock(&p.mu);
		p.consumed++;
		p.inflight -= u->len;
		if (result != INGEST_OK) p.abort = true;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
		if (result != INGEST_OK) break;
		ing_progress(&p, "games",
		             &(IngestProgress){.games_read = st->games_read,
		                               .games_ingested = st->games_ingested},
		             false);
	}
	/* Memory that ran out after the last result (listing a directory, say)
	 * may have cost input too. */
	result = oom_result(st, result);
	if (result == INGEST_OK) {
		rc = writer_commit(&wr);
		if (rc < 0) {
			stats_error(st, "book", 0, bookdb_strerror(rc));
			result = INGEST_EBOOK;
		}
	}
	pthread_mutex_lock(&p.mu);
	p.abort = p.abort || result != INGEST_OK;
	pthread_cond_broadcast(&p.cv);
	pthread_mutex_unlock(&p.mu);
	if (feeder_started) pthread_join(feeder, NULL);
	for (int i = 0; i < nparsers; i++) pthread_join(parsers[i], NULL);
	/* After an abort, results and units still in the window are freed here. */
	for (size_t s = p.consumed; s < p.produced; s++) {
		free_result(&p.results[s % p.window]);
		free(p.units[s % p.window].buf);
		free(p.units[s % p.window].name);
		free(p.units[s % p.window].error);
	}
	ing_progress(&p, "done",
	             &(IngestProgress){.files = p.walk.files,
	                               .games_read = st->games_read,
	                               .games_ingested = st->games_ingested},
	             true);
	writer_clear(&wr);
	for (size_t i = 0; i < wr.nunended; i++) free(wr.unended[i]);
	free(wr.unended);
	free(wr.games);
	free(wr.mark);
	free(wr.moves);
	bookdb_writer_free(wr.w);
	pthread_mutex_destroy(&p.mu);
	pthread_mutex_destroy(&p.progress_mu);
	pthread_cond_destroy(&p.cv);
	free(p.units);
	free(p.results);
	free(wr.rec);
	st->seconds = clock_s() - t0;
	st->walk = p.walk;
	st->files = p.walk.files;
	return result;
}
