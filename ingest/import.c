/* ingest/import.c — YaneuraOu DB2016 books and Apery books into the store. */
#include "ingest/import.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "bookdb/merge.h"
#include "ingest/kifu.h"
#include "shogi/apery.h"
#include "shogi/clock.h"
#include "shogi/db2016.h"
#include "shogi/grow.h"
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

static void import_error_at(IngestStats *st, const char *path, long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void import_error_at(IngestStats *st, const char *path, long line, const char *fmt, ...)
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
	e->line = (int)line;
	e->message = m;
	if (!e->input || !e->message) {
		free(e->input);
		free(e->message);
		return;
	}
	st->nerrors++;
}

#define import_error(st, path, ...) import_error_at(st, path, 0, __VA_ARGS__)

/* Forgets the errors said so far of one file (st holds that file's alone). */
static void drop_errors(IngestStats *st)
{
	for (size_t i = 0; i < st->nerrors; i++) {
		free(st->errors[i].input);
		free(st->errors[i].message);
	}
	st->nerrors = 0;
	st->errors_total = 0;
}

/* The reader's failure rc (errno as the read left it) said for path: the
 * code to return. */
static int read_failed(IngestStats *st, const char *path, int rc)
{
	if (rc == DB2016_EIO)
		import_error(st, path, "cannot read: %s", strerror(errno));
	else
		import_error(st, path, "%s", db2016_strerror(rc));
	return rc == DB2016_ENOMEM ? INGEST_ENOMEM : INGEST_EIO;
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
                           const Position *pos, const ImportMove *mv, size_t n, BookPrefer prefer,
                           const char *path, long line)
{
	Key key = pos_key(pos);
	/* Only a position the book can hold (as a game reaches it: kings,
	 * pieces of one set, the side not to move not in check), each alone: a
	 * bad one failed the whole file's write. */
	char why[SHOGI_ERRLEN];
	uint8_t packed[BOOKDB_PACKED_MAX];
	if (pos_check_game(pos, why) < 0 ||
	    (bookdb_pack_checked(packed, pos->board, pos->hand, pos->side) < 0 &&
	     snprintf(why, sizeof why, "it cannot be packed into a record") > 0)) {
		char sfen[SFEN_MAX];
		sfen_write(pos, sfen, sizeof sfen);
		import_error_at(st, path, line, "sfen %s: %s; position skipped", sfen, why);
		return INGEST_OK;
	}
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
		st->depth0 += max_depth == 0;
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

int import_db2016(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer,
                  ImportProgressFn progress, void *progress_ctx)
{
	memset(st, 0, sizeof *st);
	double t0 = clock_s();
	WarnCtx wc = {st, path};
	Db2016Reader *r;
	int rc = db2016_open(&r, path, 0, on_warn, &wc);
	if (rc < 0) return read_failed(st, path, rc);
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
		result =
		    import_position(st, w, rec, in, dr.pos, mv, dr.nmoves, prefer, path, dr.line);
		if (progress && ++n % 65536 == 0) progress(progress_ctx, "positions", n, 0);
	}
	free(mv);
	if (rc < 0 && result == INGEST_OK) result = read_failed(st, path, rc);
	/* Nothing in it was a book's: not a book, rather than a book of errors
	 * (its lines' warnings say nothing then). */
	if (result == INGEST_OK && !db2016_has_header(r) && db2016_records(r) == 0) {
		drop_errors(st);
		import_error(st, path, "not a YaneuraOu/Apery book: no header and no record");
		result = INGEST_EIO;
	}
	if (result == INGEST_OK && bookdb_writer_flush(w) < 0) result = INGEST_EBOOK;
	if (progress) progress(progress_ctx, "done", n, n);
	bookdb_writer_free(w);
	db2016_close(r);
	free(rec);
	free(in);
	st->seconds = clock_s() - t0;
	return result;
}

/* ---- Apery books ------------------------------------------------------------ */

typedef struct {
	IngestStats *st;
	const char *path;
	BookWriter *w;
	BookRecord *rec, *in;
	ImportMove *mv;
	BookPrefer prefer;
	ImportProgressFn progress;
	void *progress_ctx;
} AperyImport;

static int apery_position(void *ctx, const Position *pos, const AperyMove *moves, size_t n)
{
	AperyImport *a = ctx;
	for (size_t i = 0; i < n && i < BOOKDB_MAX_MOVES; i++)
		a->mv[i] = (ImportMove){moves[i].move, moves[i].score, 0};
	int rc =
	    import_position(a->st, a->w, a->rec, a->in, pos, a->mv,
	                    n < BOOKDB_MAX_MOVES ? n : BOOKDB_MAX_MOVES, a->prefer, a->path, 0);
	if (a->progress && a->st->positions_added % 65536 == 0)
		a->progress(a->progress_ctx, "positions", a->st->positions_added, 0);
	return rc;
}

static void apery_bad(void *ctx, const Position *pos, const AperyEntry *e, size_t at)
{
	AperyImport *a = ctx;
	char sfen[SFEN_MAX];
	sfen_write(pos, sfen, sizeof sfen);
	import_error(a->st, a->path, "entry %zu: move 0x%04x is not legal in %s (skipped)", at,
	             e->move, sfen);
}

int import_apery(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer,
                 ImportProgressFn progress, void *progress_ctx)
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
	if (len % APERY_ENTRY_SIZE) {
		import_error(
		    st, path,
		    "not an Apery book: %zu bytes is not a whole number of %d-byte entries", len,
		    APERY_ENTRY_SIZE);
		free(data);
		return INGEST_EIO;
	}
	size_t n = len / APERY_ENTRY_SIZE;
	AperyEntry *ent = malloc((n ? n : 1) * sizeof *ent);
	AperyImport a = {st,
	                 path,
	                 NULL,
	                 malloc(sizeof(BookRecord)),
	                 malloc(sizeof(BookRecord)),
	                 malloc(BOOKDB_MAX_MOVES * sizeof(ImportMove)),
	                 prefer,
	                 progress,
	                 progress_ctx};
	int result = INGEST_OK;
	if (!ent || !a.rec || !a.in || !a.mv) {
		result = INGEST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		apery_entry_read(&ent[i], (const uint8_t *)data + i * APERY_ENTRY_SIZE);
	if (bookdb_writer_new(&a.w, db, 20000) < 0) {
		result = INGEST_EBOOK;
		goto out;
	}
	AperyWalkStats ws;
	int rc = apery_walk(ent, n, apery_position, apery_bad, &a, &ws);
	if (rc == SHOGI_ENOMEM) result = INGEST_ENOMEM;
	if (rc < 0 && rc != SHOGI_ENOMEM) result = rc; /* import_position's */
	st->unreached = ws.unreached;
	if (st->unreached)
		import_error(
		    st, path,
		    "%llu of %zu entries are not on a line of the book's moves from the start "
		    "position (left out)",
		    (unsigned long long)st->unreached, n);
	if (result == INGEST_OK && bookdb_writer_flush(a.w) < 0) result = INGEST_EBOOK;
	if (progress) progress(progress_ctx, "done", st->positions_added, st->positions_added);
out:
	bookdb_writer_free(a.w);
	free(a.mv);
	free(a.rec);
	free(a.in);
	free(ent);
	free(data);
	st->seconds = clock_s() - t0;
	return result;
}

int import_book(IngestStats *st, BookDB *db, const char *path, BookPrefer prefer,
                ImportProgressFn progress, void *progress_ctx)
{
	/* Said as ingest says them, before a reader meets them as an I/O error. */
	struct stat sb;
	bool missing = stat(path, &sb) < 0;
	if (missing || S_ISDIR(sb.st_mode)) {
		int e = errno;
		memset(st, 0, sizeof *st);
		if (missing)
			import_error(st, path, "cannot read: %s", strerror(e));
		else
			import_error(st, path, "is a directory");
		return INGEST_EIO;
	}
	return import_is_apery(path) ? import_apery(st, db, path, prefer, progress, progress_ctx)
	                             : import_db2016(st, db, path, prefer, progress, progress_ctx);
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
