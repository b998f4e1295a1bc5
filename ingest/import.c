/* ingest/import.c — YaneuraOu DB2016 books and Apery books into the store. */
#include "ingest/import.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bookdb/merge.h"
#include "ingest/kifu.h"
#include "shogi/apery.h"
#include "shogi/clock.h"
#include "shogi/db2016.h"
#include "shogi/grow.h"
#include "shogi/keymap.h"
#include "shogi/movegen.h"
#include "shogi/notation.h"

typedef struct {
	IngestStats *st;
	const char *path;
} WarnCtx;

/* Warnings come as "<file>:<line>: <message>"; kept as (input, line, message). */
static void on_warn(void *ctx, const char *msg)
{
	WarnCtx *w = ctx;
	IngestStats *st = w->st;
	st->errors_total++;
	if (st->nerrors >= INGEST_MAX_ERRORS) return;
	IngestError *e = &st->errors[st->nerrors++];
	size_t pl = strlen(w->path);
	int line = 0;
	const char *rest = msg;
	if (!strncmp(msg, w->path, pl) && msg[pl] == ':') {
		char *end;
		long l = strtol(msg + pl + 1, &end, 10);
		if (end != msg + pl + 1 && *end == ':') {
			line = (int)l;
			rest = end + 1;
			while (*rest == ' ') rest++;
		}
	}
	e->input = strdup(w->path);
	e->line = line;
	e->message = strdup(rest);
	if (!e->input || !e->message) { /* out of memory: the warning is counted, not kept */
		free(e->input);
		free(e->message);
		st->nerrors--;
	}
}

/* One move of a book file: its value (the mover's) and depth. */
typedef struct {
	Move move;
	int value, depth;
} ImportMove;

/*
 * The file's moves of pos as an analysis of its own (engine evaluations,
 * source import, thought at the deepest move's depth), merged into the book's
 * record by joseki merge's rule. rec and in are the caller's scratch records.
 * Returns INGEST_OK or INGEST_EBOOK.
 */
static int import_position(IngestStats *st, BookWriter *w, BookRecord *rec, BookRecord *in,
                           const Position *pos, const ImportMove *mv, size_t n, BookPrefer prefer)
{
	Key key = pos_key(pos);
	bookdb_record_init(in, pos);
	int max_depth = 0;
	for (size_t i = 0; i < n; i++) {
		const ImportMove *m = &mv[i];
		if (m->move == MOVE_NONE || in->nmoves >= BOOKDB_MAX_MOVES) continue;
		BookMove *bm = NULL;
		for (int k = 0; k < in->nmoves; k++)
			if (in->moves[k].move == m->move) bm = &in->moves[k];
		if (bm) continue; /* a move listed twice: the first one stands */
		bm = &in->moves[in->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = m->move;
		bm->flags = BOOKDB_MOVE_EVAL;
		bm->eval = (int16_t)value_clamp(m->value);
		bm->depth = (uint8_t)(m->depth < 0 ? 0 : m->depth > 255 ? 255 : m->depth);
		bm->source = INGEST_SOURCE_IMPORT;
		if (bm->depth > max_depth) max_depth = bm->depth;
	}
	if (in->nmoves) {
		in->flags = BOOKDB_REC_THOUGHT;
		in->think_depth = (uint8_t)max_depth;
	}
	int rc = bookdb_writer_get(rec, w, key);
	bool changed = false;
	if (rc == BOOKDB_ENOTFOUND) {
		memcpy(rec, in, offsetof(BookRecord, moves));
		memcpy(rec->moves, in->moves, in->nmoves * sizeof *in->moves);
		st->positions_added++;
		st->moves_added += in->nmoves;
		st->evals_added += in->nmoves;
		changed = true;
	} else if (rc < 0) {
		return INGEST_EBOOK;
	} else {
		int had = rec->nmoves;
		BookMergeDiff d;
		/* The file coming in is the newer analysis on a tie. */
		bookdb_record_merge(rec, rec, in, prefer, -1, false, &d);
		changed = d.changed;
		st->moves_added += (uint64_t)(rec->nmoves - had);
		if (d.replaced) st->evals_added += in->nmoves;
	}
	if (changed && bookdb_writer_put(w, key, rec) < 0) return INGEST_EBOOK;
	return INGEST_OK;
}

int import_db2016(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer, bool progress)
{
	memset(st, 0, sizeof *st);
	double t0 = clock_s();
	WarnCtx wc = {st, path};
	Db2016Reader *r;
	int rc = db2016_open(&r, path, 0, on_warn, &wc);
	if (rc < 0) {
		on_warn(&wc, db2016_strerror(rc));
		return INGEST_EIO;
	}
	BookWriter *w;
	rc = bookdb_writer_new(&w, db, 20000);
	if (rc < 0) {
		db2016_close(r);
		return INGEST_EBOOK;
	}
	BookRecord *rec = malloc(sizeof *rec), *in = malloc(sizeof *in);
	if (!rec || !in) {
		free(rec);
		free(in);
		bookdb_writer_free(w);
		db2016_close(r);
		return INGEST_ENOMEM;
	}
	int result = INGEST_OK;
	Db2016Record dr;
	uint64_t n = 0;
	ImportMove *mv = NULL;
	size_t mvcap = 0;
	while (result == INGEST_OK && (rc = db2016_next(r, &dr)) == 1) {
		if (array_grow((void **)&mv, &mvcap, dr.nmoves + 1, sizeof *mv, 64) < 0) {
			result = INGEST_ENOMEM;
			break;
		}
		for (size_t i = 0; i < dr.nmoves; i++)
			mv[i] =
			    (ImportMove){dr.moves[i].move, dr.moves[i].value, dr.moves[i].depth};
		result = import_position(st, w, rec, in, dr.pos, mv, dr.nmoves, prefer);
		if (progress && ++n % 65536 == 0)
			fprintf(stderr, "\r  import: %llu positions ", (unsigned long long)n);
	}
	free(mv);
	if (rc < 0 && result == INGEST_OK) {
		on_warn(&wc, db2016_strerror(rc));
		result = INGEST_EIO;
	}
	if (result == INGEST_OK && bookdb_writer_flush(w) < 0) result = INGEST_EBOOK;
	if (progress) fprintf(stderr, "\r%*s\r", 40, "");
	bookdb_writer_free(w);
	db2016_close(r);
	free(rec);
	free(in);
	st->seconds = clock_s() - t0;
	return result;
}

/* ---- Apery books ------------------------------------------------------------ */

typedef struct {
	AperyEntry e;
	uint32_t at; /* its index in the file */
} Entry;

static int cmp_entry(const void *a, const void *b)
{
	const Entry *x = a, *y = b;
	if (x->e.key != y->e.key) return x->e.key < y->e.key ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/*
 * The book's keys, hashed: the index of each key's first sorted entry (open
 * addressing, at most half full; a slot holds index + 1, 0 when empty).
 */
typedef struct {
	uint64_t *key;
	uint32_t *at;
	size_t mask;
} KeyIndex;

static int key_index_build(KeyIndex *x, const Entry *ent, size_t n)
{
	size_t keys = 0, cap = 16;
	for (size_t i = 0; i < n; i++) keys += !i || ent[i].e.key != ent[i - 1].e.key;
	while (cap < 2 * keys) cap *= 2;
	x->key = malloc(cap * sizeof *x->key);
	x->at = calloc(cap, sizeof *x->at);
	x->mask = cap - 1;
	if (!x->key || !x->at) return -1;
	for (size_t i = 0; i < n; i++) {
		if (i && ent[i].e.key == ent[i - 1].e.key) continue;
		size_t h = (ent[i].e.key * 0x9E3779B97F4A7C15ULL) >> 20 & x->mask;
		while (x->at[h]) h = (h + 1) & x->mask;
		x->key[h] = ent[i].e.key;
		x->at[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* The first sorted entry with key k, or n when there is none. */
static size_t entries_of(const KeyIndex *x, size_t n, uint64_t k)
{
	for (size_t h = (k * 0x9E3779B97F4A7C15ULL) >> 20 & x->mask; x->at[h];
	     h = (h + 1) & x->mask)
		if (x->key[h] == k) return x->at[h] - 1;
	return n;
}

/* A position waiting in the walk: what pos_set needs. */
typedef struct {
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	uint8_t side;
	uint16_t ply;
} Pending;

static void import_error(IngestStats *st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void import_error(IngestStats *st, const char *path, const char *fmt, ...)
{
	st->errors_total++;
	if (st->nerrors >= INGEST_MAX_ERRORS) return;
	IngestError *e = &st->errors[st->nerrors];
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0) m = NULL;
	va_end(ap);
	e->input = strdup(path);
	e->line = 0;
	e->message = m;
	if (!e->input || !e->message) {
		free(e->input);
		free(e->message);
		return;
	}
	st->nerrors++;
}

int import_apery(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer, bool progress)
{
	memset(st, 0, sizeof *st);
	double t0 = clock_s();
	FILE *f = fopen(path, "rb");
	void *data = NULL;
	size_t len = 0;
	if (!f || kifu_read_all(&data, &len, f) != 0) {
		import_error(st, path, "cannot read: %s", strerror(errno));
		if (f) fclose(f);
		return INGEST_EIO;
	}
	fclose(f);
	if (len % APERY_ENTRY_SIZE || len / APERY_ENTRY_SIZE > UINT32_MAX) {
		import_error(
		    st, path,
		    "not an Apery book: %zu bytes is not a whole number of %d-byte entries", len,
		    APERY_ENTRY_SIZE);
		free(data);
		return INGEST_EIO;
	}
	size_t n = len / APERY_ENTRY_SIZE;
	Entry *ent = malloc((n ? n : 1) * sizeof *ent);
	uint8_t *used = calloc(n ? n : 1, 1);
	BookRecord *rec = malloc(sizeof *rec), *in = malloc(sizeof *in);
	Position *pos = malloc(sizeof *pos);
	ImportMove *mv = malloc(BOOKDB_MAX_MOVES * sizeof *mv);
	Move *legal = malloc(MOVEGEN_MAX * sizeof *legal);
	Pending *queue = NULL;
	size_t qcap = 0, qhead = 0, qtail = 0;
	KeyMap seen;
	keymap_init_set(&seen, false);
	KeyIndex kx = {0};
	BookWriter *w = NULL;
	int result = INGEST_OK;
	if (!ent || !used || !rec || !in || !pos || !mv || !legal) {
		result = INGEST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		apery_entry_read(&ent[i].e, (const uint8_t *)data + i * APERY_ENTRY_SIZE);
		ent[i].at = (uint32_t)i;
	}
	/* Apery writes them sorted by key; any order is read. */
	qsort(ent, n, sizeof *ent, cmp_entry);
	if (key_index_build(&kx, ent, n) < 0) {
		result = INGEST_ENOMEM;
		goto out;
	}
	if (bookdb_writer_new(&w, db, 20000) < 0) {
		result = INGEST_EBOOK;
		goto out;
	}
	/* A walk from the start position: Apery's keys name no position, the
	 * moves that reach them do. From a position the book holds, every legal
	 * move is tried (a book made from games with variations may lack the move
	 * into a branch it holds), and its own moves are followed one ply past
	 * positions it does not hold (Apery keeps the winner's moves of a game
	 * only, so every other position of a line may be missing). */
	pos_set_startpos(pos);
	if (keymap_add(&seen, pos_key(pos), NULL) < 0) result = INGEST_ENOMEM;
	for (bool first = true; result == INGEST_OK; first = false) {
		if (!first) {
			if (qhead == qtail) break;
			Pending *p = &queue[qhead++];
			if (pos_set(pos, p->board, p->hand, (Color)p->side, p->ply, NULL) != 0)
				continue;
		}
		uint64_t akey = apery_key(pos);
		size_t lo = entries_of(&kx, n, akey), nm = 0;
		for (size_t i = lo; i < n && ent[i].e.key == ent[lo].e.key; i++) {
			used[i] = 1;
			Move m = apery_move_decode(ent[i].e.move);
			if (m == MOVE_NONE || !pos_is_legal(pos, m)) {
				char sfen[SFEN_MAX];
				sfen_write(pos, sfen, sizeof sfen);
				import_error(st, path,
				             "entry %u: move 0x%04x is not legal in %s (skipped)",
				             ent[i].at, ent[i].e.move, sfen);
				continue;
			}
			if (nm < BOOKDB_MAX_MOVES) mv[nm++] = (ImportMove){m, ent[i].e.score, 0};
		}
		if (nm &&
		    (result = import_position(st, w, rec, in, pos, mv, nm, prefer)) != INGEST_OK)
			break;
		if (progress && nm && st->positions_added % 65536 == 0)
			fprintf(stderr, "\r  import: %llu positions ",
			        (unsigned long long)st->positions_added);
		/* A position the book does not hold leads on only into ones it holds. */
		bool held = lo < n;
		if (pos->game_ply >= 65535) continue;
		int nl = movegen_legal(pos, legal);
		for (int j = 0; j < nl && result == INGEST_OK; j++) {
			bool book_move = false;
			for (size_t k = 0; k < nm; k++) book_move |= mv[k].move == legal[j];
			bool child_held =
			    entries_of(&kx, n, apery_key_after(pos, akey, legal[j])) < n;
			if (!child_held && !(held && book_move)) continue;
			int added = keymap_add(&seen, pos_key_after(pos, legal[j]), NULL);
			if (added < 0 ||
			    array_grow((void **)&queue, &qcap, qtail + 1, sizeof *queue, 1024)) {
				result = INGEST_ENOMEM;
				break;
			}
			if (!added) continue;
			pos_do_move(pos, legal[j]);
			Pending *p = &queue[qtail++];
			memcpy(p->board, pos->board, sizeof p->board);
			p->hand[BLACK] = pos->hand[BLACK];
			p->hand[WHITE] = pos->hand[WHITE];
			p->side = (uint8_t)pos->side;
			p->ply = (uint16_t)pos->game_ply;
			pos_undo_move(pos);
		}
	}
	for (size_t i = 0; i < n; i++) st->unreached += !used[i];
	if (st->unreached)
		import_error(
		    st, path,
		    "%llu of %zu entries are not on a line of the book's moves from the start "
		    "position (left out)",
		    (unsigned long long)st->unreached, n);
	if (result == INGEST_OK && bookdb_writer_flush(w) < 0) result = INGEST_EBOOK;
	if (progress) fprintf(stderr, "\r%*s\r", 40, "");
out:
	bookdb_writer_free(w);
	keymap_free(&seen);
	free(kx.key);
	free(kx.at);
	free(queue);
	free(legal);
	free(mv);
	free(pos);
	free(rec);
	free(in);
	free(used);
	free(ent);
	free(data);
	st->seconds = clock_s() - t0;
	return result;
}

int import_book(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer, bool progress)
{
	return import_is_apery(path) ? import_apery(st, db, path, prefer, progress)
	                             : import_db2016(st, db, path, prefer, progress);
}

bool import_is_apery(const char *path)
{
	size_t n = strlen(path);
	if (n > 4 && !strcasecmp(path + n - 4, ".bin")) return true;
	/* Else by content: a DB2016 book is text starting with '#' or "sfen";
	 * an Apery book is binary, a whole number of 16-byte entries. */
	FILE *f = fopen(path, "rb");
	if (!f) return false;
	unsigned char head[64];
	size_t got = fread(head, 1, sizeof head, f);
	bool binary = false;
	for (size_t i = 0; i < got; i++) binary |= head[i] == 0 || head[i] > 0x7e;
	if (got >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) binary = false;
	long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	fclose(f);
	return binary && size > 0 && size % APERY_ENTRY_SIZE == 0;
}
