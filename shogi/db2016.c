/* shogi/db2016.c — streaming reader and line formatters for YaneuraOu DB2016 books. */
#include "shogi/db2016.h"
#include "shogi/errmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shogi/movegen.h"
#include "shogi/notation.h"

struct Db2016Reader {
	FILE *f;
	bool own_file;
	char *name;
	unsigned flags;
	Db2016WarnFn warn;
	void *warn_ctx;

	char *buf; /* file bytes [buf_pos, buf_len) not yet split into lines */
	size_t buf_cap, buf_len, buf_pos;
	bool buf_eof;
	char *line; /* the current line, inside buf */
	long lineno;
	uint64_t offset;     /* byte offset of the next line */
	uint64_t line_start; /* byte offset of the line in `line` */
	uint64_t end;        /* records start before this (db2016_set_range) */

	/* A "sfen" line read while finishing the previous record. */
	char *pending;
	size_t pending_cap;
	long pending_line;
	bool have_pending;

	char *sfen; /* the current record's SFEN text */
	size_t sfen_cap;
	Position *pos;
	Db2016Move *moves;
	size_t nmoves, moves_cap;
	Move legal[MOVEGEN_MAX]; /* the record's legal moves, once a move line asks */
	int nlegal;              /* -1: not generated yet */

	size_t records, warnings, sfen_lines, first_ordinal;
	bool eof;
	bool header; /* line 1 was the header */
};

const char *db2016_strerror(int code)
{
	switch (code) {
	case DB2016_OK:
		return "success";
	case DB2016_EIO:
		return "I/O error";
	case DB2016_ENOMEM:
		return "out of memory";
	default:
		return "unknown error";
	}
}

static void warnf(Db2016Reader *r, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warnf(Db2016Reader *r, long line, const char *fmt, ...)
{
	r->warnings++;
	if (!r->warn) return;
	char raw[512], msg[512];
	int n = snprintf(raw, sizeof raw, "%s:%ld: ", r->name, line);
	if (n < 0 || (size_t)n >= sizeof raw) n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw + n, sizeof raw - (size_t)n, fmt, ap);
	va_end(ap);
	/* The book's bytes are shown as text, whatever they are. */
	r->warn(r->warn_ctx, errmsg_escape(msg, sizeof msg, raw, strlen(raw)));
}

int db2016_open_file(Db2016Reader **out, FILE *f, const char *name, unsigned flags,
                     Db2016WarnFn warn, void *warn_ctx)
{
	*out = NULL;
	Db2016Reader *r = calloc(1, sizeof *r);
	if (!r) return DB2016_ENOMEM;
	r->f = f;
	r->flags = flags;
	r->warn = warn;
	r->warn_ctx = warn_ctx;
	r->end = UINT64_MAX;
	r->name = strdup(name ? name : "(stream)");
	r->pos = malloc(sizeof *r->pos);
	if (!r->name || !r->pos) goto err;
	*out = r;
	return 0;
err:
	db2016_close(r);
	return DB2016_ENOMEM;
}

int db2016_open(Db2016Reader **out, const char *path, unsigned flags, Db2016WarnFn warn,
                void *warn_ctx)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) return DB2016_EIO;
	int rc = db2016_open_file(out, f, path, flags, warn, warn_ctx);
	if (rc < 0) {
		fclose(f);
		return rc;
	}
	(*out)->own_file = true;
	return 0;
}

void db2016_close(Db2016Reader *r)
{
	if (!r) return;
	if (r->own_file && r->f) fclose(r->f);
	free(r->name);
	free(r->buf);
	free(r->pending);
	free(r->sfen);
	free(r->pos);
	free(r->moves);
	free(r);
}

size_t db2016_records(const Db2016Reader *r)
{
	return r->records;
}

bool db2016_has_header(const Db2016Reader *r)
{
	return r->header;
}
size_t db2016_warnings(const Db2016Reader *r)
{
	return r->warnings;
}
long db2016_lines(const Db2016Reader *r)
{
	return r->lineno;
}
size_t db2016_sfen_lines(const Db2016Reader *r)
{
	return r->sfen_lines - r->first_ordinal;
}

int db2016_set_range(Db2016Reader *r, uint64_t start, uint64_t end, long first_line,
                     size_t first_ordinal)
{
	if (fseeko(r->f, (off_t)start, SEEK_SET) != 0) return DB2016_EIO;
	r->buf_len = r->buf_pos = 0;
	r->buf_eof = false;
	r->offset = r->line_start = start;
	r->end = end;
	r->lineno = first_line - 1;
	r->sfen_lines = r->first_ordinal = first_ordinal;
	return 0;
}

/* Is the text at p (n bytes, a line start) a "sfen" line as the reader sees it? */
static bool starts_sfen(const char *p, size_t n)
{
	return n >= 5 && !memcmp(p, "sfen ", 5);
}

int db2016_split(const char *path, int parts, uint64_t *offsets, long *first_lines)
{
	FILE *f = fopen(path, "rb");
	if (!f) return DB2016_EIO;
	int rc = 0;
	char *buf = malloc(1 << 16);
	struct stat sb;
	if (!buf || fstat(fileno(f), &sb) != 0) {
		rc = buf ? DB2016_EIO : DB2016_ENOMEM;
		goto done;
	}
	uint64_t size = (uint64_t)sb.st_size;
	offsets[0] = 0;
	first_lines[0] = 1;
	/* Each boundary is the first "sfen" line starting at or after its share
	 * of the bytes; lines are counted on the way there. */
	uint64_t pos = 0; /* buf holds file bytes [pos, pos + len) */
	size_t len = 0, at = 0;
	long line = 1;
	bool line_start = true;
	for (int k = 1; k < parts; k++) {
		uint64_t target = size / (uint64_t)parts * (uint64_t)k;
		uint64_t found = size;
		for (;;) {
			if (at + 5 > len) { /* refill, keeping the unread tail */
				if (fseeko(f, (off_t)(pos + at), SEEK_SET) != 0) {
					rc = DB2016_EIO;
					goto done;
				}
				pos += at;
				len = fread(buf, 1, 1 << 16, f);
				at = 0;
				if (ferror(f)) {
					rc = DB2016_EIO;
					goto done;
				}
				if (len < 5) break; /* no room for another "sfen" line */
			}
			if (line_start && pos + at >= target && starts_sfen(buf + at, len - at)) {
				found = pos + at;
				break;
			}
			char *nl = memchr(buf + at, '\n', len - at);
			if (!nl) {
				line_start = false;
				at = len;
				continue;
			}
			line++;
			line_start = true;
			at = (size_t)(nl - buf) + 1;
		}
		offsets[k] = found > offsets[k - 1] ? found : offsets[k - 1];
		first_lines[k] = line;
	}
	offsets[parts] = size;
done:
	free(buf);
	fclose(f);
	return rc;
}

/*
 * The next line, '\n' included, at r->line: its length, 0 at the end of the
 * file, or DB2016_EIO. Reads in large blocks rather than line by line (as
 * getline would); the line stays valid until the next call, with a spare
 * byte after it for a terminating NUL.
 */
static ssize_t next_raw_line(Db2016Reader *r)
{
	for (;;) {
		char *at = r->buf ? r->buf + r->buf_pos : NULL; /* none read yet */
		size_t have = r->buf_len - r->buf_pos;
		char *nl = have ? memchr(at, '\n', have) : NULL;
		if (nl || (r->buf_eof && have)) {
			size_t n = nl ? (size_t)(nl - at) + 1 : have;
			r->line = at;
			r->buf_pos += n;
			return (ssize_t)n;
		}
		if (r->buf_eof) return 0;
		if (have) memmove(r->buf, at, have);
		r->buf_len = have;
		r->buf_pos = 0;
		if (r->buf_cap - r->buf_len < (1u << 16) + 1) {
			size_t nc = r->buf_cap ? r->buf_cap * 2 : 1u << 20;
			char *nb = realloc(r->buf, nc);
			if (!nb) return DB2016_ENOMEM;
			r->buf = nb;
			r->buf_cap = nc;
		}
		size_t got = fread(r->buf + r->buf_len, 1, r->buf_cap - r->buf_len - 1, r->f);
		if (got == 0) {
			if (ferror(r->f)) return DB2016_EIO;
			r->buf_eof = true;
		}
		r->buf_len += got;
	}
}

/* Reads the next line, trimmed of CR/LF and trailing blanks. 1, 0 at EOF, or EIO. */
static int read_line_opt(Db2016Reader *r, size_t *len, bool sfen_only);
static int read_line(Db2016Reader *r, size_t *len)
{
	return read_line_opt(r, len, false);
}

/* As read_line; with sfen_only, a line that cannot be a "sfen" line is not
 * trimmed and comes back empty (for callers that skip all such lines). */
static int read_line_opt(Db2016Reader *r, size_t *len, bool sfen_only)
{
	ssize_t n = next_raw_line(r);
	if (n <= 0) return (int)n;
	r->line_start = r->offset;
	r->offset += (uint64_t)n;
	r->lineno++;
	size_t l = (size_t)n;
	if (sfen_only && r->lineno > 1 && (l < 5 || memcmp(r->line, "sfen ", 5) != 0)) {
		*len = 0;
		return 1;
	}
	while (l > 0 && (r->line[l - 1] == '\n' || r->line[l - 1] == '\r' ||
	                 r->line[l - 1] == ' ' || r->line[l - 1] == '\t'))
		l--;
	r->line[l] = '\0';
	/* A UTF-8 byte-order mark (Windows editors write one) is not part of the header. */
	if (r->lineno == 1 && r->line_start == 0 && l >= 3 && (unsigned char)r->line[0] == 0xEF &&
	    (unsigned char)r->line[1] == 0xBB && (unsigned char)r->line[2] == 0xBF)
		memmove(r->line, r->line + 3, l - 2);
	/* An embedded NUL ends the line as far as the parser is concerned. */
	*len = strlen(r->line);
	/* (line 1 belongs to the range starting at byte 0 that is not empty) */
	if (r->lineno == 1 && r->line_start < r->end && strcmp(r->line, DB2016_HEADER) != 0)
		warnf(r, 1, "missing '%s' header, reading on", DB2016_HEADER);
	else if (r->lineno == 1 && r->line_start < r->end)
		r->header = true;
	return 1;
}

static bool is_comment(const char *s)
{
	return s[0] == '#' || (s[0] == '/' && s[1] == '/');
}

static bool is_sfen_line(const char *s)
{
	return strncmp(s, "sfen ", 5) == 0;
}

static int copy_str(char **buf, size_t *cap, const char *s, size_t len)
{
	if (len + 1 > *cap) {
		size_t nc = (len + 1) * 2;
		char *nb = realloc(*buf, nc);
		if (!nb) return DB2016_ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf, s, len);
	(*buf)[len] = '\0';
	return 0;
}

/* Splits s in place into at most max blank-separated tokens. */
static int tokenize(char *s, char **tok, int max)
{
	int n = 0;
	while (*s) {
		while (*s == ' ' || *s == '\t') s++;
		if (!*s) break;
		if (n == max) break;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t') s++;
		if (*s) *s++ = '\0';
	}
	return n;
}

static bool parse_i64_slow(const char *s, long long *out);

static bool parse_i64(const char *s, long long *out)
{
	/* Fast path: a sign and up to 18 digits (no overflow possible). */
	const char *d = s + (*s == '-' || *s == '+');
	long long v = 0;
	int n = 0;
	while (n < 19 && d[n] >= '0' && d[n] <= '9') v = v * 10 + (d[n++] - '0');
	if (n > 0 && n < 19 && !d[n]) {
		*out = *s == '-' ? -v : v;
		return true;
	}
	return parse_i64_slow(s, out);
}

static bool parse_i64_slow(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno == ERANGE) return false;
	*out = v;
	return true;
}

static bool is_no_move(const char *s)
{
	if (s[0] != 'n' && s[0] != 'N' && s[0] != 'r') return false;
	return !strcmp(s, "none") || !strcmp(s, "None") || !strcmp(s, "resign");
}

/* Is s a legal move of the current record? (*out is then the move.) */
static bool is_legal_move(Db2016Reader *r, const char *s, Move *out)
{
	Move m;
	if (usi_move_parse(&m, s, strlen(s), NULL) < 0 || m == MOVE_NONE) return false;
	if (r->nlegal < 0) r->nlegal = movegen_legal(r->pos, r->legal);
	for (int i = 0; i < r->nlegal; i++)
		if (r->legal[i] == m) {
			*out = m;
			return true;
		}
	return false;
}

/* Parses a move line of the current record; skips it (with a warning) if bad. */
static int parse_move_line(Db2016Reader *r, char *s)
{
	char *tok[5];
	int n = tokenize(s, tok, 5);
	if (n == 0) return 0;
	Db2016Move m = {MOVE_NONE, MOVE_NONE, 0, 0, 1, r->lineno};
	char err[SHOGI_ERRLEN];
	/* The record's legal moves are generated once, not once per line; an
	 * unlisted move takes the checking parser's path for its message. */
	if (!is_no_move(tok[0]) && !is_legal_move(r, tok[0], &m.move) &&
	    usi_move_parse_legal(&m.move, r->pos, tok[0], strlen(tok[0]), err) < 0) {
		warnf(r, r->lineno, "illegal book move '%s' (%s), move skipped", tok[0], err);
		return 0;
	}
	if (n > 1 && !is_no_move(tok[1]) &&
	    usi_move_parse(&m.ponder, tok[1], strlen(tok[1]), NULL) < 0)
		m.ponder = MOVE_NONE;
	long long v;
	if (n > 2) {
		if (!parse_i64(tok[2], &v)) {
			warnf(r, r->lineno, "bad value '%s', move skipped", tok[2]);
			return 0;
		}
		m.value = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
	}
	if (n > 3) {
		if (!parse_i64(tok[3], &v)) {
			warnf(r, r->lineno, "bad depth '%s', move skipped", tok[3]);
			return 0;
		}
		m.depth = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
	}
	if (n > 4) {
		if (!parse_i64(tok[4], &v) || v < 0) {
			warnf(r, r->lineno, "bad count '%s', move skipped", tok[4]);
			return 0;
		}
		m.count = (uint64_t)v;
	}
	if (r->nmoves == r->moves_cap) {
		size_t nc = r->moves_cap ? r->moves_cap * 2 : 16;
		Db2016Move *nm = realloc(r->moves, nc * sizeof *nm);
		if (!nm) return DB2016_ENOMEM;
		r->moves = nm;
		r->moves_cap = nc;
	}
	r->moves[r->nmoves++] = m;
	return 0;
}

int db2016_next(Db2016Reader *r, Db2016Record *rec)
{
	size_t len;
	int rc;
	for (;;) {
		/* Find the next "sfen" line: the pending one, or the next in the file. */
		if (!r->have_pending) {
			if (r->eof) return 0;
			rc = read_line(r, &len);
			if (rc < 0) return rc;
			if (rc == 0 || r->line_start >= r->end) {
				r->eof = true;
				return 0;
			}
			if (len == 0 || is_comment(r->line)) continue;
			if (!is_sfen_line(r->line)) {
				warnf(r, r->lineno, "move line outside any 'sfen' record, skipped");
				continue;
			}
			if ((rc = copy_str(&r->pending, &r->pending_cap, r->line, len)) < 0)
				return rc;
			r->pending_line = r->lineno;
		}
		r->have_pending = false;
		long rec_line = r->pending_line;
		size_t ordinal = r->sfen_lines++;
		const char *text = r->pending + 5;
		char err[SHOGI_ERRLEN];
		bool parse = !(r->flags & DB2016_NO_POSITION);
		bool ok = !parse || sfen_parse(r->pos, text, NULL, err) == 0;
		if (!ok)
			warnf(r, rec_line, "bad SFEN (%s), record skipped", err);
		else if ((rc = copy_str(&r->sfen, &r->sfen_cap, text, strlen(text))) < 0)
			return rc;
		r->nmoves = 0;
		r->nlegal = -1;
		/* The record's move lines run up to the next "sfen" line or EOF;
		 * when they are skipped, only a "sfen" line needs looking at. */
		bool sfen_only = !ok || (r->flags & (DB2016_SKIP_MOVES | DB2016_NO_POSITION));
		for (;;) {
			rc = read_line_opt(r, &len, sfen_only);
			if (rc < 0) return rc;
			if (rc == 0) {
				r->eof = true;
				break;
			}
			if (len == 0 || is_comment(r->line)) continue;
			if (is_sfen_line(r->line)) {
				if (r->line_start >= r->end) {
					r->eof = true; /* the next range's record */
					break;
				}
				if ((rc = copy_str(&r->pending, &r->pending_cap, r->line, len)) < 0)
					return rc;
				r->pending_line = r->lineno;
				r->have_pending = true;
				break;
			}
			if (!ok || (r->flags & (DB2016_SKIP_MOVES | DB2016_NO_POSITION))) continue;
			if ((rc = parse_move_line(r, r->line)) < 0) return rc;
		}
		if (!ok) continue;
		rec->sfen = r->sfen;
		rec->sfen_len = strlen(r->sfen);
		rec->line = rec_line;
		rec->ordinal = ordinal;
		rec->pos = parse ? r->pos : NULL;
		rec->moves = r->moves;
		rec->nmoves = r->nmoves;
		r->records++;
		return 1;
	}
}

static char *put_int(char *p, long long v)
{
	char tmp[24];
	int n = 0;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0) *p++ = '-';
	while (n) *p++ = tmp[--n];
	return p;
}

static char *put_move(char *p, Move m)
{
	if (m == MOVE_NONE) {
		memcpy(p, "none", 4);
		return p + 4;
	}
	char us[USI_MOVE_MAX];
	size_t n = usi_move_write(m, us);
	memcpy(p, us, n);
	return p + n;
}

size_t db2016_format_header(char *buf, size_t positions)
{
	static const char h[] = DB2016_HEADER "\n# NOE:";
	memcpy(buf, h, sizeof h - 1);
	char *p = put_int(buf + sizeof h - 1, (long long)positions);
	*p++ = '\n';
	return (size_t)(p - buf);
}

size_t db2016_format_sfen(char *buf, const Position *pos, int ply)
{
	memcpy(buf, "sfen ", 5);
	size_t n = 5 + sfen_write_ply(pos, ply, buf + 5, SFEN_MAX);
	buf[n++] = '\n';
	return n;
}

size_t db2016_format_move(char *buf, Move move, Move ponder, int value, int depth)
{
	char *p = put_move(buf, move);
	*p++ = ' ';
	p = put_move(p, ponder);
	*p++ = ' ';
	p = put_int(p, value);
	*p++ = ' ';
	p = put_int(p, depth);
	*p++ = '\n';
	return (size_t)(p - buf);
}

size_t db2016_format_move_count(char *buf, Move move, Move ponder, int value, int depth,
                                uint64_t count)
{
	size_t n = db2016_format_move(buf, move, ponder, value, depth);
	char *p = buf + n - 1;
	*p++ = ' ';
	p = put_int(p, (long long)(count > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : count));
	*p++ = '\n';
	return (size_t)(p - buf);
}
