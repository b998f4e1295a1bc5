/* ingest/ingest.c — the ingest pipeline: feeder, parser threads, one writer. */
#include "ingest/ingest.h"

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

#include "ingest/csa.h"
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

/* ---- pipeline data ---------------------------------------------------- */

/* One input file's bytes (a file, an archive entry, or stdin). */
typedef struct {
	char *name;
	char *buf;
	size_t len;
	char *error; /* the input could not be read: reported, nothing parsed */
} Unit;

/* One move played, as the writer needs it. */
typedef struct {
	Key key; /* the position before the move */
	Move move;
	uint16_t ply; /* move number of that position */
	int16_t eval; /* mover's view */
	bool has_eval;
	uint8_t mover; /* Color of the side making the move */
	uint8_t packed_len;
	uint8_t packed[BOOKDB_PACKED_MAX];
} Ply;

enum { GAME_INGEST, GAME_SKIP, GAME_REJECT };

typedef struct {
	char *id; /* dedupe id ("id:<floodgate id>" or "h:<hash>") */
	int status;
	ReplayWinner winner;
	Ply *plies;
	size_t nplies;
} Game;

typedef struct {
	char *input;
	int line;
	char *message;
} PendingError;

typedef struct {
	Game *games;
	size_t ngames, cap;
	PendingError *errors;
	size_t nerrors, ecap;
	bool done;
} Result;

typedef struct {
	const IngestOptions *opt;
	const char *const *inputs;
	size_t ninputs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Units and their results by sequence number; a ring of WINDOW slots. */
	Unit *units;
	Result *results;
	size_t window;
	size_t produced; /* units made by the feeder */
	size_t taken;    /* units taken by parsers */
	size_t consumed; /* results the writer has applied */
	bool feed_done;
	bool abort;
	/* Progress on a terminal (opt->progress): both the feeder walking the
	 * inputs and the writer print, at most four lines a second between them. */
	double t0, last_progress;
	uint64_t files_seen;
} Pipe;

#define WINDOW 256

/*
 * Memory running out anywhere in the pipeline sets this flag (the helpers
 * return NULL and their callers drop what they could not keep); the writer
 * sees it, drops its uncommitted batch and ingest_run returns INGEST_ENOMEM.
 * One ingest at a time per process (the commands run one).
 */
static atomic_bool ingest_oom;

static void out_of_memory(void)
{
	atomic_store(&ingest_oom, true);
}

static char *xstrdup(const char *s)
{
	char *r = strdup(s ? s : "");
	if (!r) out_of_memory();
	return r;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0) {
		s = NULL;
		out_of_memory();
	}
	va_end(ap);
	return s;
}

/* ---- feeder ------------------------------------------------------------ */

static void feed_unit(Pipe *p, char *name, char *buf, size_t len, char *error)
{
	pthread_mutex_lock(&p->mu);
	while (!p->abort && p->produced - p->consumed >= p->window)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->abort) {
		pthread_mutex_unlock(&p->mu);
		free(name);
		free(buf);
		free(error);
		return;
	}
	Unit *u = &p->units[p->produced % p->window];
	u->name = name;
	u->buf = buf;
	u->len = len;
	u->error = error;
	Result *r = &p->results[p->produced % p->window];
	memset(r, 0, sizeof *r);
	p->produced++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcasecmp(s + a - b, suf);
}

static bool is_archive_name(const char *s)
{
	static const char *const EXT[] = {".7z",     ".zip", ".tar",     ".tar.gz", ".tgz",
	                                  ".tar.xz", ".txz", ".tar.bz2", ".tbz2"};
	for (size_t i = 0; i < sizeof EXT / sizeof EXT[0]; i++)
		if (has_suffix(s, EXT[i])) return true;
	return false;
}

static int read_all_fd(int fd, char **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		out_of_memory();
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		if (n == cap) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				out_of_memory();
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) {
			free(buf);
			return -1;
		}
		if (r == 0) break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static void feed_archive(Pipe *p, const char *path, int fd)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	int rc = fd >= 0 ? archive_read_open_fd(a, fd, 1 << 16)
	                 : archive_read_open_filename(a, path, 1 << 16);
	if (rc != ARCHIVE_OK) {
		feed_unit(p, xstrdup(path), NULL, 0,
		          xprintf("cannot open archive: %s", archive_error_string(a)));
		archive_read_free(a);
		return;
	}
	struct archive_entry *e;
	for (;;) {
		rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF) break;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
			feed_unit(p, xstrdup(path), NULL, 0,
			          xprintf("archive damaged or truncated: %s (rest skipped)",
			                  archive_error_string(a)));
			break;
		}
		const char *ename = archive_entry_pathname(e);
		if (archive_entry_filetype(e) != AE_IFREG || !ename || !has_suffix(ename, ".csa")) {
			archive_read_data_skip(a);
			continue;
		}
		size_t cap = archive_entry_size_is_set(e) && archive_entry_size(e) > 0
		                 ? (size_t)archive_entry_size(e) + 1
		                 : 1 << 14;
		char *buf = malloc(cap);
		size_t n = 0;
		bool bad = !buf;
		if (!buf) out_of_memory();
		for (; buf;) {
			if (n + 1 >= cap) {
				cap *= 2;
				char *nb = realloc(buf, cap);
				if (!nb) {
					out_of_memory();
					bad = true;
					break;
				}
				buf = nb;
			}
			la_ssize_t r = archive_read_data(a, buf + n, cap - n - 1);
			if (r < 0) {
				bad = true;
				break;
			}
			if (r == 0) break;
			n += (size_t)r;
		}
		char *name = xprintf("%s:%s", path, ename);
		if (bad) {
			free(buf);
			feed_unit(p, name, NULL, 0,
			          xprintf("archive entry unreadable: %s (rest skipped)",
			                  archive_error_string(a)));
			break;
		}
		feed_unit(p, name, buf, n, NULL);
	}
	archive_read_free(a);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void feed_path(Pipe *p, const char *path, bool explicit_arg);
/* True when it is time for another progress line (and takes the turn). */
static bool progress_due(Pipe *p)
{
	if (!p->opt->progress) return false;
	double t = clock_s();
	pthread_mutex_lock(&p->mu);
	bool due = t - p->last_progress > 0.25;
	if (due) p->last_progress = t;
	pthread_mutex_unlock(&p->mu);
	return due;
}

/* Kernel file systems that hold no game records, only endless or special
 * files: a walk of / skips them. (/dev is tmpfs, like /tmp: walked, and its
 * devices skipped as every special file is.) */
static bool pseudo_fs(const char *path)
{
	struct statfs fs;
	if (statfs(path, &fs) < 0) return false;
	switch ((unsigned long)fs.f_type) {
	case 0x9fa0:     /* proc */
	case 0x62656572: /* sysfs */
	case 0x1cd1:     /* devpts */
	case 0x27e0eb:   /* cgroup */
	case 0x63677270: /* cgroup2 */
	case 0x64626720: /* debugfs */
	case 0x73636673: /* securityfs */
	case 0x74726163: /* tracefs */
	case 0x6165676c: /* pstore */
	case 0xcafe4a11: /* bpf */
	case 0x62656570: /* configfs */
	case 0x19800202: /* mqueue */
	case 0x958458f6: /* hugetlbfs */
	case 0x65735546: /* fusectl */
	case 0x6e736673: /* nsfs */
		return true;
	default:
		return false;
	}
}

static void feed_dir(Pipe *p, const char *path)
{
	if (pseudo_fs(path)) return;
	if (progress_due(p)) {
		double el = clock_s() - p->t0;
		fprintf(stderr, "\r  ingest: %llu files looked at (%.0f/s), in %.60s\033[K",
		        (unsigned long long)p->files_seen, p->files_seen / (el > 1e-9 ? el : 1e-9),
		        path);
	}
	DIR *d = opendir(path);
	if (!d) {
		feed_unit(p, xstrdup(path), NULL, 0,
		          xprintf("cannot open directory: %s", strerror(errno)));
		return;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') continue;
		if (array_grow((void **)&names, &cap, n + 1, sizeof *names, 64)) {
			out_of_memory();
			break;
		}
		char *name = xprintf("%s/%s", path, de->d_name);
		if (!name) break;
		names[n++] = name;
	}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str); /* input order is part of the result */
	size_t i = 0;
	for (; i < n && !p->abort; i++) {
		/* Inside a directory only directories and regular files are read:
		 * no symbolic links (a link to a parent would walk forever), no
		 * devices, sockets or FIFOs (a read could block forever). */
		struct stat sb;
		if (lstat(names[i], &sb) == 0 && (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))) {
			if (S_ISREG(sb.st_mode)) p->files_seen++;
			feed_path(p, names[i], false);
		}
		free(names[i]);
	}
	for (; i < n; i++) free(names[i]);
	free(names);
}

static void feed_path(Pipe *p, const char *path, bool explicit_arg)
{
	if (!strcmp(path, "-")) {
		char *buf;
		size_t len;
		if (read_all_fd(0, &buf, &len) < 0)
			feed_unit(p, xstrdup("-"), NULL, 0,
			          xprintf("cannot read standard input: %s", strerror(errno)));
		else
			feed_unit(p, xstrdup("-"), buf, len, NULL);
		return;
	}
	struct stat sb;
	if (stat(path, &sb) < 0) {
		feed_unit(p, xstrdup(path), NULL, 0, xprintf("cannot read: %s", strerror(errno)));
		return;
	}
	if (S_ISDIR(sb.st_mode)) {
		feed_dir(p, path);
		return;
	}
	if (is_archive_name(path)) {
		feed_archive(p, path, -1);
		return;
	}
	if (explicit_arg) p->files_seen++;
	if (!explicit_arg && !has_suffix(path, ".csa")) return;
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t len;
	if (!f || read_all_fd(fileno(f), &buf, &len) < 0) {
		if (errno == ENOMEM) out_of_memory();
		feed_unit(p, xstrdup(path), NULL, 0, xprintf("cannot read: %s", strerror(errno)));
		if (f) fclose(f);
		return;
	}
	fclose(f);
	feed_unit(p, xstrdup(path), buf, len, NULL);
}

static void *feeder_main(void *arg)
{
	Pipe *p = arg;
	for (size_t i = 0; i < p->ninputs && !p->abort; i++) feed_path(p, p->inputs[i], true);
	pthread_mutex_lock(&p->mu);
	p->feed_done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- parsers ----------------------------------------------------------- */

static void result_error(Result *r, const char *input, int line, char *message)
{
	char *in = xstrdup(input);
	if (!in || !message ||
	    array_grow((void **)&r->errors, &r->ecap, r->nerrors + 1, sizeof *r->errors, 8)) {
		out_of_memory();
		free(in);
		free(message);
		return;
	}
	r->errors[r->nerrors].input = in;
	r->errors[r->nerrors].line = line;
	r->errors[r->nerrors].message = message;
	r->nerrors++;
}

static Game *result_game(Result *r)
{
	if (array_grow((void **)&r->games, &r->cap, r->ngames + 1, sizeof *r->games, 8)) {
		out_of_memory();
		return NULL;
	}
	Game *g = &r->games[r->ngames++];
	memset(g, 0, sizeof *g);
	return g;
}

/* "2026/06/01 13:00:01" (or a floodgate id's trailing timestamp) → "20260601". */
static bool game_date(const CsaRecord *rec, char out[9])
{
	const char *s = rec->start_time;
	if (s && strlen(s) >= 10 && s[4] == '/' && s[7] == '/') {
		memcpy(out, s, 4);
		memcpy(out + 4, s + 5, 2);
		memcpy(out + 6, s + 8, 2);
		out[8] = 0;
		return true;
	}
	const char *e = rec->event;
	if (e) {
		const char *plus = strrchr(e, '+');
		if (plus && strlen(plus + 1) >= 8) {
			for (int i = 1; i <= 8; i++)
				if (plus[i] < '0' || plus[i] > '9') return false;
			memcpy(out, plus + 1, 8);
			out[8] = 0;
			return true;
		}
	}
	return false;
}

/* The floodgate game name: the second '+' field of the id ("floodgate-300-10F"). */
static bool game_tc(const CsaRecord *rec, char *out, size_t len)
{
	const char *e = rec->event;
	if (!e) return false;
	const char *a = strchr(e, '+');
	if (!a) return false;
	const char *b = strchr(a + 1, '+');
	size_t n = b ? (size_t)(b - a - 1) : strlen(a + 1);
	if (n >= len) n = len - 1;
	memcpy(out, a + 1, n);
	out[n] = 0;
	return true;
}

static bool keep_game(const CsaRecord *rec, const IngestOptions *opt)
{
	if (opt->has_min_rating)
		for (int c = 0; c < COLOR_NB; c++)
			if (!rec->has_rate[c] || rec->rate[c] < opt->min_rating) return false;
	if (opt->since[0] || opt->until[0]) {
		char d[9];
		if (!game_date(rec, d)) return false;
		if (opt->since[0] && strcmp(d, opt->since) < 0) return false;
		if (opt->until[0] && strcmp(d, opt->until) > 0) return false;
	}
	if (opt->event_glob && (!rec->event || fnmatch(opt->event_glob, rec->event, 0) != 0))
		return false;
	if (opt->tc_glob) {
		char tc[128];
		if (!game_tc(rec, tc, sizeof tc) || fnmatch(opt->tc_glob, tc, 0) != 0) return false;
	}
	return true;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static char *game_id(const CsaRecord *rec, const Position *start)
{
	if (rec->event && !strncmp(rec->event, "wdoor+", 6)) return xprintf("id:%s", rec->event);
	/* No server id: the start position and the moves identify the game. */
	Key k = pos_key(start);
	uint64_t h1 = fnv1a(0xcbf29ce484222325ULL ^ k.lo, &k.hi, sizeof k.hi);
	uint64_t h2 = fnv1a(0x84222325cbf29ce4ULL ^ k.hi, &k.lo, sizeof k.lo);
	for (size_t i = 0; i < rec->nmoves; i++) {
		h1 = fnv1a(h1, rec->moves[i].token, 7);
		h2 = fnv1a(h2 ^ i, rec->moves[i].token, 7);
	}
	return xprintf("h:%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/*
 * The mover's evaluation from a Black-relative score. |score| >= 30000, or
 * exactly 9999 when the game has no ordinary score at or beyond 9999, is a
 * mate at an unknown distance: ±VALUE_MATE_IN_MAX.
 */
static int16_t mover_eval(int32_t score, Color mover, bool cap9999_is_mate)
{
	int32_t a = score < 0 ? -score : score;
	int32_t v;
	if (a >= 30000 || (cap9999_is_mate && a == 9999))
		v = score < 0 ? -VALUE_MATE_IN_MAX : VALUE_MATE_IN_MAX;
	else if (a >= VALUE_MATE_IN_MAX)
		v = score < 0 ? -(VALUE_MATE_IN_MAX - 1) : VALUE_MATE_IN_MAX - 1;
	else
		v = score;
	return (int16_t)(mover == BLACK ? v : -v);
}

typedef struct {
	Game *game;
	const CsaRecord *rec;
	int max_ply;
	bool cap9999_is_mate;
	size_t cap;
	int unstorable; /* 1-based index of the first move whose position cannot be packed */
} PlyCollect;

static int collect_ply(void *ctx, const Position *before, Move m, size_t index)
{
	PlyCollect *c = ctx;
	if (before->game_ply > c->max_ply) return 0;
	Game *g = c->game;
	if (array_grow((void **)&g->plies, &c->cap, g->nplies + 1, sizeof *g->plies, 64)) {
		out_of_memory();
		return -1;
	}
	Ply *p = &g->plies[g->nplies++];
	memset(p, 0, sizeof *p);
	p->key = pos_key(before);
	p->move = m;
	p->ply = (uint16_t)(before->game_ply > 65535 ? 65535 : before->game_ply);
	p->mover = (uint8_t)before->side;
	if (c->rec && index < c->rec->nmoves) {
		const CsaMove *cm = &c->rec->moves[index];
		if (cm->has_eval && !cm->book) {
			p->has_eval = true;
			p->eval = mover_eval(cm->eval, before->side, c->cap9999_is_mate);
		}
	}
	int n = bookdb_pack_position(p->packed, before->board, before->hand, before->side);
	p->packed_len = n > 0 ? (uint8_t)n : 0;
	/* The writer unpacks it again: a packing that does not read back (as a
	 * real position once did not, issue 16) rejects this game alone. */
	Piece board[SQ_NB];
	Hand hand[COLOR_NB];
	Color side;
	if (n > 0 && bookdb_unpack_position(board, hand, &side, p->packed, (size_t)n) != n) n = -1;
	if (n <= 0 && !c->unstorable) c->unstorable = (int)index + 1;
	return 0;
}

/*
 * A comment's mate score is one engine's claim at one moment. It stands only
 * where the replay shows the game ended in mate on the board, within
 * opt->mate_plies plies of the comment, won by the side the score favours;
 * any other is bounded by ±opt->mate_clamp (docs/ingest.md).
 */
static void clamp_mates(Game *g, const ReplayResult *res, const IngestOptions *opt)
{
	for (size_t k = 0; k < g->nplies; k++) {
		Ply *p = &g->plies[k];
		if (!p->has_eval || (p->eval < VALUE_MATE_IN_MAX && p->eval > -VALUE_MATE_IN_MAX))
			continue;
		Color winner = p->eval > 0 ? (Color)p->mover : (Color)!p->mover;
		bool mated =
		    res->end == REPLAY_END_MATE &&
		    res->winner == (winner == BLACK ? REPLAY_WINNER_BLACK : REPLAY_WINNER_WHITE) &&
		    (long)res->plies - (long)(k + 1) <= opt->mate_plies;
		if (!mated && p->eval > opt->mate_clamp) p->eval = (int16_t)opt->mate_clamp;
		if (!mated && p->eval < -opt->mate_clamp) p->eval = (int16_t)-opt->mate_clamp;
	}
}

static void parse_record(Result *r, const char *input, CsaRecord *rec, const IngestOptions *opt,
                         Position *pos)
{
	Game *g = result_game(r);
	char err[SHOGI_ERRLEN];
	if (!g) return; /* out of memory: the run ends with INGEST_ENOMEM */
	if (csa_record_position(pos, rec, err) < 0) {
		g->status = GAME_REJECT;
		result_error(r, input, rec->first_line,
		             xprintf("impossible start position: %s", err));
		return;
	}
	g->id = game_id(rec, pos);
	if (!keep_game(rec, opt)) {
		g->status = GAME_SKIP;
		return;
	}
	bool cap9999 = true;
	for (size_t i = 0; i < rec->nmoves; i++) {
		int32_t e = rec->moves[i].eval, a = e < 0 ? -e : e;
		if (rec->moves[i].has_eval && a > 9999 && a < 30000) cap9999 = false;
	}
	PlyCollect c = {g, rec, opt->max_ply, cap9999, 0, 0};
	ReplayResult res;
	int rc = replay_csa(&res, pos, rec, collect_ply, &c);
	if (rc != 0) {
		g->status = GAME_REJECT;
		result_error(r, input, res.error_line ? res.error_line : rec->first_line,
		             xprintf("%s", res.error[0] ? res.error : "cannot replay the game"));
		return;
	}
	/* Checked here, before any of it reaches the book: a game the store
	 * cannot hold is rejected alone, and the rest of the input goes on. */
	if (c.unstorable) {
		g->status = GAME_REJECT;
		size_t mi = (size_t)c.unstorable - 1;
		int line = mi < rec->nmoves ? rec->moves[mi].line : rec->first_line;
		result_error(
		    r, input, line,
		    xprintf(
		        "the position before move %d cannot be stored in the book; game skipped",
		        c.unstorable));
		return;
	}
	g->winner = res.winner;
	clamp_mates(g, &res, opt);
	if (res.end == REPLAY_END_ILLEGAL_MOVE && res.error[0]) {
		result_error(r, input, res.error_line, xprintf("%s", res.error));
		if (res.plies == 0) {
			g->status = GAME_REJECT;
			return;
		}
	}
	g->status = GAME_INGEST;
}

static void parse_unit(Result *r, const Unit *u, const IngestOptions *opt, Position *pos)
{
	if (u->error) {
		result_error(r, u->name, 0, xstrdup(u->error));
		return;
	}
	CsaReader *rd;
	if (csa_reader_open_mem(&rd, u->buf, u->len, u->name) < 0) {
		out_of_memory();
		return;
	}
	for (;;) {
		CsaRecord *rec = NULL;
		int rc = csa_reader_next(rd, &rec);
		if (rc == 0) break;
		if (rc == CSA_EPARSE) {
			Game *g = result_game(r);
			if (!g) break;
			g->status = GAME_REJECT;
			result_error(r, u->name, csa_reader_error_line(rd),
			             xprintf("%s (record skipped)", csa_reader_error(rd)));
			continue;
		}
		if (rc < 0) {
			if (rc == CSA_ENOMEM) out_of_memory();
			result_error(r, u->name, 0, xprintf("%s", csa_strerror(rc)));
			break;
		}
		parse_record(r, u->name, rec, opt, pos);
		csa_record_free(rec);
	}
	csa_reader_free(rd);
}

static void *parser_main(void *arg)
{
	Pipe *p = arg;
	Position *pos = malloc(sizeof *pos);
	if (!pos) {
		/* Without a position this parser cannot work: stop the pipeline. */
		out_of_memory();
		pthread_mutex_lock(&p->mu);
		p->abort = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->abort && p->taken == p->produced && !p->feed_done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->abort || (p->taken == p->produced && p->feed_done)) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		size_t seq = p->taken++;
		pthread_mutex_unlock(&p->mu);
		Unit *u = &p->units[seq % p->window];
		Result *r = &p->results[seq % p->window];
		parse_unit(r, u, p->opt, pos);
		free(u->buf);
		u->buf = NULL;
		pthread_mutex_lock(&p->mu);
		r->done = true;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	free(pos);
	return NULL;
}

/* ---- writer ------------------------------------------------------------ */

static void stats_error(IngestStats *st, const char *input, int line, const char *msg)
{
	st->errors_total++;
	if (st->nerrors >= INGEST_MAX_ERRORS) return;
	char *in = xstrdup(input), *m = xstrdup(msg);
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
} Writer;

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

static void add_ply(Writer *wr, BookRecord *rec, const Ply *p, ReplayWinner winner)
{
	if (p->ply < rec->min_ply) rec->min_ply = p->ply;
	BookMove *bm = NULL;
	for (int i = 0; i < rec->nmoves; i++)
		if (rec->moves[i].move == p->move) {
			bm = &rec->moves[i];
			break;
		}
	if (!bm) {
		if (rec->nmoves >= BOOKDB_MAX_MOVES) return;
		bm = &rec->moves[rec->nmoves++];
		memset(bm, 0, sizeof *bm);
		bm->move = p->move;
		wr->st->moves_added++;
	}
	Color mover = (Color)p->mover;
	bm->flags |= BOOKDB_MOVE_STATS;
	bm->count++;
	if (winner == REPLAY_WINNER_DRAW)
		bm->draws++;
	else if ((winner == REPLAY_WINNER_BLACK && mover == BLACK) ||
	         (winner == REPLAY_WINNER_WHITE && mover == WHITE))
		bm->wins++;
	else if (winner == REPLAY_WINNER_BLACK || winner == REPLAY_WINNER_WHITE)
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
		if (rc == 0) {
			wr->st->duplicates++;
			g->status = GAME_SKIP;
			continue;
		}
		if (rc != BOOKDB_ENOTFOUND) return rc;
		uint8_t val[8] = {0};
		uint32_t n = (uint32_t)g->nplies;
		val[0] = (uint8_t)g->winner;
		memcpy(val + 4, &n, 4);
		rc = bookdb_kv_put(txn, BOOKDB_GAMES, g->id, strlen(g->id), val, sizeof val);
		if (rc < 0) return rc;
		wr->st->games_ingested++;
		wr->st->plies_stored += g->nplies;
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
			add_ply(wr, rec, &g->plies[e[j].ply], g->winner);
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
		out_of_memory(); /* the game stays with its result, freed there */
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
	                   st->moves_added,    st->evals_added, st->plies_stored};
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
	p.t0 = t0;
	p.units = calloc(p.window, sizeof *p.units);
	p.results = calloc(p.window, sizeof *p.results);
	Writer wr = {NULL, malloc(sizeof(BookRecord)), st, NULL, 0, 0};
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
	pthread_cond_init(&p.cv, NULL);
	pthread_t feeder, parsers[64];
	/* Threads that cannot start (no memory for a stack): fewer parsers only
	 * slow the run; without the feeder or any parser it cannot run. */
	bool feeder_started = pthread_create(&feeder, NULL, feeder_main, &p) == 0;
	int nparsers = 0;
	while (feeder_started && nparsers < opt.jobs &&
	       pthread_create(&parsers[nparsers], NULL, parser_main, &p) == 0)
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
		/* Memory ran out somewhere: what is uncommitted is dropped (the
		 * counters say what is in the book), the rest of the input is not read. */
		if (result == INGEST_OK && atomic_load(&ingest_oom)) {
			stats_error(st, "ingest", 0,
			            "out of memory (batches committed before are kept)");
			result = INGEST_ENOMEM;
		}
		free_result(r);
		Unit *u = &p.units[seq % p.window];
		free(u->name);
		free(u->error);
		u->name = u->error = NULL;
		pthread_mutex_lock(&p.mu);
		p.consumed++;
		if (result != INGEST_OK) p.abort = true;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
		if (result != INGEST_OK) break;
		if (progress_due(&p)) {
			double t = clock_s();
			fprintf(stderr,
			        "\r  ingest: %llu games read, %llu ingested, %.0f games/s\033[K",
			        (unsigned long long)st->games_read,
			        (unsigned long long)st->games_ingested,
			        st->games_read / (t - t0 > 1e-9 ? t - t0 : 1e-9));
		}
	}
	/* Memory that ran out after the last result (listing a directory, say)
	 * may have cost input: the run fails, the uncommitted batch is dropped. */
	if (result == INGEST_OK && atomic_load(&ingest_oom)) {
		stats_error(st, "ingest", 0, "out of memory (batches committed before are kept)");
		result = INGEST_ENOMEM;
	}
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
	if (opt.progress) fprintf(stderr, "\r%*s\r", 70, "");
	writer_clear(&wr);
	free(wr.games);
	bookdb_writer_free(wr.w);
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.cv);
	free(p.units);
	free(p.results);
	free(wr.rec);
	st->seconds = clock_s() - t0;
	st->files = p.files_seen;
	return result;
}
