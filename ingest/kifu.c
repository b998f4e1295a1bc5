/*
 * ingest/kifu.c — the one reader of game records: the format sniffed, the
 * input opened (KIF and KI2 decoded to UTF-8), each record read by its
 * format's reader (kifu_priv.h). See kifu.h and docs/ingest.md.
 */
#include "ingest/kifu.h"
#include "shogi/errmsg.h"
#include "ingest/kifu_priv.h"

#include <errno.h>
#include <iconv.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shogi/notation.h"

const char *kifu_strerror(int code)
{
	switch (code) {
	case KIFU_OK:
		return "success";
	case KIFU_EPARSE:
		return "malformed game record";
	case KIFU_ENOMEM:
		return "out of memory";
	case KIFU_EIO:
		return "cannot read input";
	case KIFU_EILLEGAL:
		return "impossible start position";
	default:
		return "unknown error";
	}
}

const char *kifu_format_name(KifuFormat f)
{
	static const char *const NAMES[] = {"csa", "kif", "ki2", "jkf", "usi"};
	return (unsigned)f <= KIFU_USI ? NAMES[f] : "?";
}

void kifu_record_free(KifuRecord *rec)
{
	if (!rec) return;
	free(rec->version);
	free(rec->name[0]);
	free(rec->name[1]);
	free(rec->event);
	free(rec->start_time);
	free(rec->time_limit);
	free(rec->summary);
	free(rec->moves);
	free(rec->illegal);
	free(rec->text);
	free(rec->tree);
	free(rec->tree_text);
	free(rec);
}

const char *kifu_move_pv(const KifuRecord *rec, size_t i, size_t *len)
{
	if (i >= rec->nmoves || !rec->moves[i].pv_len) {
		*len = 0;
		return "";
	}
	*len = rec->moves[i].pv_len;
	return rec->text + rec->moves[i].pv_off;
}

int kifu_record_position(Position *pos, const KifuRecord *rec, char *err)
{
	int ply = rec->start_ply > 0 ? rec->start_ply : 1;
	if (pos_set(pos, rec->board, rec->hand, rec->side, ply, err) != 0) return KIFU_EILLEGAL;
	return 0;
}

int kifu_record_max_moves(const KifuRecord *rec)
{
	if (rec->max_moves > 0) return rec->max_moves;
	if (rec->format == KIFU_CSA && rec->event && !strncmp(rec->event, "wdoor+floodgate", 15))
		return 256;
	return 0;
}

/* ---- sniffing ------------------------------------------------------------ */

/* True when s[0..n) is UTF-8; with partial, a last character cut short by
 * the end of s is allowed (a prefix of a longer text). */
static bool utf8_valid(const unsigned char *s, size_t n, bool partial)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k = c >= 0xC2 && c <= 0xDF   ? 1
		           : c >= 0xE0 && c <= 0xEF ? 2
		           : c >= 0xF0 && c <= 0xF4 ? 3
		                                    : 0;
		if (!k) return false;
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n) return partial;
			if ((s[i + j] & 0xC0) != 0x80) return false;
		}
		/* overlong forms and surrogates */
		if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0) ||
		    (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))
			return false;
		i += k + 1;
	}
	return true;
}

/* Whether s[0..n) is UTF-8 text, damaged or not: a byte-order mark said so
 * (bom), it is UTF-8 (partial: as utf8_valid), or its characters past ASCII
 * are nearly all UTF-8 — at least 8, and a byte that starts none for every
 * 16 of them at most: a few bad bytes in a UTF-8 record (a damaged copy)
 * are that record's fault, where decoding it all as Shift_JIS made every
 * line of it garbage. Shift_JIS Japanese seldom forms a UTF-8 character. */
static bool utf8_text(const unsigned char *s, size_t n, bool bom, bool partial)
{
	if (bom || utf8_valid(s, n, partial)) return true;
	size_t good = 0, bad = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = 1;
		while (k < 4 && i + k < n && (s[i + k] & 0xC0) == 0x80) k++;
		if (k > 1 && utf8_valid(s + i, k, false)) {
			good++;
			i += k;
		} else {
			bad++;
			i++;
		}
	}
	return good >= 8 && bad * 16 <= good;
}

/* True when s[0..n) is EUC-JP with at least one character past ASCII before
 * a last one cut short by the end of s (a prefix, or a file cut). Shift_JIS
 * Japanese never is: its kana, its punctuation (：▲) and most of its kanji
 * lead with bytes below 0xA1, which EUC-JP has only as 0x8E (half-width
 * kana) and 0x8F (JIS X 0212). */
static bool eucjp_valid(const unsigned char *s, size_t n)
{
	bool wide = false;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t k = c == 0x8F ? 2 : 1;
		if (c != 0x8E && c != 0x8F && (c < 0xA1 || c == 0xFF)) return false;
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n) return wide;
			unsigned char t = s[i + j];
			if (c == 0x8E ? t < 0xA1 || t > 0xDF : t < 0xA1 || t == 0xFF) return false;
		}
		wide = true;
		i += k + 1;
	}
	return wide;
}

/*
 * Decodes Japanese text that is not UTF-8 to UTF-8: EUC-JP when it is that
 * (eucjp_valid), else Shift_JIS (CP932); a byte that starts no character
 * becomes U+FFFD. *out is malloc'd (NUL-terminated). 0 or KIFU_ENOMEM.
 */
static int japanese_to_utf8(const unsigned char *in, size_t n, char **out, size_t *outlen)
{
	iconv_t cd = (iconv_t)-1;
	if (eucjp_valid(in, n)) {
		cd = iconv_open("UTF-8", "EUC-JP-MS");
		if (cd == (iconv_t)-1) cd = iconv_open("UTF-8", "EUC-JP");
	} else {
		cd = iconv_open("UTF-8", "CP932");
		if (cd == (iconv_t)-1) cd = iconv_open("UTF-8", "SHIFT_JIS");
	}
	size_t cap = n * 3 / 2 + 16, used = 0;
	char *buf = malloc(cap);
	if (!buf) {
		if (cd != (iconv_t)-1) iconv_close(cd);
		return KIFU_ENOMEM;
	}
	char *ip = (char *)in;
	size_t left = n;
	while (left > 0) {
		if (cap - used < 16) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				if (cd != (iconv_t)-1) iconv_close(cd);
				return KIFU_ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		char *op = buf + used;
		size_t room = cap - used - 4;
		size_t rc = cd == (iconv_t)-1 ? (size_t)-1 : iconv(cd, &ip, &left, &op, &room);
		used = (size_t)(op - buf);
		if (rc != (size_t)-1) break;
		if (cd != (iconv_t)-1 && errno == E2BIG) continue;
		/* not a character here: U+FFFD, and on with the next byte */
		memcpy(buf + used, "\xEF\xBF\xBD", 3);
		used += 3;
		ip++;
		left--;
		if (cd != (iconv_t)-1) iconv(cd, NULL, NULL, NULL, NULL);
	}
	if (cd != (iconv_t)-1) iconv_close(cd);
	buf[used] = 0;
	*out = buf;
	*outlen = used;
	return 0;
}

static bool has_ext(const char *name, const char *ext)
{
	if (!name) return false;
	size_t a = strlen(name), b = strlen(ext);
	return a > b && !strcasecmp(name + a - b, ext);
}

static bool line_starts(const unsigned char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	return n >= k && !memcmp(s, w, k);
}

/* What a line of Japanese text says about the format: 'K' KIF, '2' KI2,
 * 'J' a KIF or KI2 header, 0 nothing. */
static char japanese_line(const unsigned char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) s++, n--;
	if (line_starts(s, n, "手数----") || line_starts(s, n, "手数＝")) return 'K';
	if (line_starts(s, n, "▲") || line_starts(s, n, "△") || line_starts(s, n, "☗") ||
	    line_starts(s, n, "☖"))
		return '2';
	static const char *const HEADERS[] = {
	    "開始日時", "終了日時",   "手合割",     "先手：",     "後手：",     "下手：", "上手：",
	    "棋戦：",   "先手の持駒", "後手の持駒", "上手の持駒", "下手の持駒", "変化："};
	for (size_t i = 0; i < sizeof HEADERS / sizeof HEADERS[0]; i++)
		if (line_starts(s, n, HEADERS[i])) return 'J';
	if (line_starts(s, n, "+---------------------------+")) return 'J';
	/* "   1 ７六歩(77)": a number, then a full-width digit or 同 */
	size_t i = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9') i++;
	if (i > 0 && i < n && s[i] == ' ') {
		while (i < n && s[i] == ' ') i++;
		if (line_starts(s + i, n - i, "同") ||
		    (n - i >= 3 && s[i] == 0xEF && s[i + 1] == 0xBC && s[i + 2] >= 0x91 &&
		     s[i + 2] <= 0x99))
			return 'K';
	}
	return 0;
}

static bool usi_word_move(const unsigned char *s, size_t n)
{
	if (n == 4 || n == 5) {
		if (s[1] == '*')
			return s[0] >= 'A' && s[0] <= 'Z' && s[2] >= '1' && s[2] <= '9' &&
			       s[3] >= 'a' && s[3] <= 'i' && n == 4;
		return s[0] >= '1' && s[0] <= '9' && s[1] >= 'a' && s[1] <= 'i' && s[2] >= '1' &&
		       s[2] <= '9' && s[3] >= 'a' && s[3] <= 'i' && (n == 4 || s[4] == '+');
	}
	return false;
}

KifuFormat kifu_sniff(const void *buf, size_t len, const char *name)
{
	const unsigned char *b = buf;
	size_t off = 0;
	if (len >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) off = 3;
	size_t i = off;
	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) i++;
	if (i < len && b[i] == '{') return KIFU_JKF;

	/* Japanese lines: look at the start as UTF-8 (decoded if need be). */
	size_t plen = len - off < 16384 ? len - off : 16384;
	const unsigned char *p = b + off;
	char *dec = NULL;
	size_t dlen = plen;
	if (!utf8_text(p, plen, off == 3, plen < len - off)) {
		if (japanese_to_utf8(p, plen, &dec, &dlen) == 0) p = (const unsigned char *)dec;
	}
	bool kif = false, ki2 = false, header = false;
	for (size_t k = 0; k < dlen;) {
		size_t e = k;
		while (e < dlen && p[e] != '\n' && p[e] != '\r') e++;
		char c = japanese_line(p + k, e - k);
		kif |= c == 'K';
		ki2 |= c == '2';
		header |= c == 'J';
		k = e + 1;
	}
	free(dec);
	if (kif) return KIFU_KIF;
	if (ki2) return KIFU_KI2;
	if (header) return has_ext(name, ".ki2") || has_ext(name, ".ki2u") ? KIFU_KI2 : KIFU_KIF;

	/* The first line that is a statement: CSA or USI? */
	bool hash_comment = false;
	for (size_t k = off; k < len;) {
		size_t e = k;
		while (e < len && b[e] != '\n' && b[e] != '\r') e++;
		const unsigned char *s = b + k;
		size_t n = e - k;
		k = e + 1;
		while (n && (*s == ' ' || *s == '\t')) s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
		hash_comment |= n && s[0] == '#';
		if (!n || s[0] == '#' || s[0] == '\'') continue;
		if (line_starts(s, n, "startpos") || line_starts(s, n, "sfen ") ||
		    line_starts(s, n, "position ") || memchr(s, '\t', n))
			return KIFU_USI;
		switch (s[0]) {
		case 'V':
		case '$':
		case '%':
		case '/':
			return KIFU_CSA;
		case 'N':
		case 'P':
			if (n >= 2 && strchr("+-I123456789", s[1])) return KIFU_CSA;
			break;
		case '+':
		case '-':
			return KIFU_CSA;
		default:
			break;
		}
		/* a bare SFEN or a bare move list */
		size_t w = 0;
		while (w < n && s[w] != ' ') w++;
		size_t slashes = 0;
		for (size_t j = 0; j < w; j++) slashes += s[j] == '/';
		if (slashes == 8 || usi_word_move(s, w)) return KIFU_USI;
		break;
	}
	/* No statement, and '#' comments: a USI list's (no game), whatever the
	 * name (a KIF reader made a game without moves of it, which a match
	 * played from the start position). */
	if (hash_comment) return KIFU_USI;
	if (has_ext(name, ".kif") || has_ext(name, ".kifu")) return KIFU_KIF;
	if (has_ext(name, ".ki2") || has_ext(name, ".ki2u")) return KIFU_KI2;
	if (has_ext(name, ".jkf") || has_ext(name, ".json")) return KIFU_JKF;
	if (has_ext(name, ".usi") || has_ext(name, ".sfen")) return KIFU_USI;
	return KIFU_CSA;
}

/* ---- the reader ---------------------------------------------------------- */

int kifu_reader_open_mem_as(KifuReader **out, const void *buf, size_t len, const char *name,
                            KifuFormat format)
{
	*out = NULL;
	KifuReader *r = calloc(1, sizeof *r);
	if (!r) return KIFU_ENOMEM;
	r->format = format;
	r->name = strdup(name ? name : "-");
	if (!r->name) {
		free(r);
		return KIFU_ENOMEM;
	}
	r->buf = buf;
	r->len = buf ? len : 0;
	/* A UTF-8 byte-order mark is not part of the first statement. */
	if (r->len >= 3 && r->buf[0] == 0xEF && r->buf[1] == 0xBB && r->buf[2] == 0xBF) r->off = 3;
	if ((format == KIFU_KIF || format == KIFU_KI2) &&
	    !utf8_text(r->buf + r->off, r->len - r->off, r->off == 3, false)) {
		size_t n;
		if (japanese_to_utf8(r->buf + r->off, r->len - r->off, &r->text, &n) != 0) {
			free(r->name);
			free(r);
			return KIFU_ENOMEM;
		}
		r->buf = (const unsigned char *)r->text;
		r->len = n;
		r->off = 0;
	}
	*out = r;
	return 0;
}

int kifu_reader_open_mem(KifuReader **out, const void *buf, size_t len, const char *name)
{
	return kifu_reader_open_mem_as(out, buf, len, name, kifu_sniff(buf, len, name));
}

int kifu_read_all(void **out, size_t *len, FILE *f)
{
	*out = NULL;
	*len = 0;
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	if (!buf) return KIFU_ENOMEM;
	for (;;) {
		if (n == cap) {
			unsigned char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return KIFU_ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0) break;
	}
	if (ferror(f)) {
		free(buf);
		return KIFU_EIO;
	}
	*out = buf;
	*len = n;
	return 0;
}

int kifu_reader_open_file(KifuReader **out, const char *path)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) return KIFU_EIO;
	void *buf;
	size_t len;
	int rc = kifu_read_all(&buf, &len, f);
	fclose(f);
	if (rc) return rc;
	rc = kifu_reader_open_mem(out, buf, len, path);
	if (rc) {
		free(buf);
		return rc;
	}
	(*out)->owned = buf;
	return 0;
}

void kifu_reader_free(KifuReader *r)
{
	if (!r) return;
	free(r->owned);
	free(r->text);
	free(r->name);
	free(r->pos);
	free(r);
}

void kifu_reader_first_line(KifuReader *r, int line)
{
	r->line = line > 0 ? line - 1 : 0;
}

const char *kifu_reader_error(const KifuReader *r)
{
	return r->err;
}
const char *kifu_reader_error_what(const KifuReader *r)
{
	return r->err + r->err_what;
}
int kifu_reader_error_line(const KifuReader *r)
{
	return r->err_line;
}
const char *kifu_reader_name(const KifuReader *r)
{
	return r->name;
}
KifuFormat kifu_reader_format(const KifuReader *r)
{
	return r->format;
}

int kifu_reader_next(KifuReader *r, KifuRecord **out)
{
	*out = NULL;
	r->err[0] = 0;
	r->err_what = 0;
	r->err_line = 0;
	switch (r->format) {
	case KIFU_KIF:
	case KIFU_KI2:
		return kif_next(r, out);
	case KIFU_JKF:
		return jkf_next(r, out);
	case KIFU_USI:
		return usi_next(r, out);
	default:
		return csa_next(r, out);
	}
}

void kifu_reader_want_tree(KifuReader *r, bool on)
{
	r->want_tree = on;
}

Position *kifu_reader_pos(KifuReader *r)
{
	if (!r->pos) r->pos = malloc(sizeof *r->pos);
	return r->pos;
}

/* ---- lines and messages ---------------------------------------------- */

bool kifu_next_line(KifuReader *r, const unsigned char **s, size_t *n)
{
	if (r->off >= r->len) return false;
	const unsigned char *p = r->buf + r->off, *end = r->buf + r->len, *q = p;
	while (q < end && *q != '\n' && *q != '\r') q++;
	*s = p;
	*n = (size_t)(q - p);
	if (q < end && *q == '\r') q++;
	if (q < end && *q == '\n') q++;
	r->off = (size_t)(q - r->buf);
	if (r->line < INT_MAX) r->line++;
	return true;
}

int kifu_fail(KifuReader *r, int line, const char *fmt, ...)
{
	char raw[KIFU_ERRLEN];
	errmsg_set(raw, sizeof raw, 0, "%s:%d: ", r->name, line);
	size_t n = strlen(raw);
	va_list ap;
	va_start(ap, fmt);
	errmsg_vset(raw + n, sizeof raw - n, 0, fmt, ap);
	va_end(ap);
	errmsg_escape(r->err, sizeof r->err, raw, strlen(raw));
	/* Where the message starts: after the escaped "input:line: ". */
	char pre[KIFU_ERRLEN];
	errmsg_escape(pre, sizeof pre, raw, n);
	r->err_what = strlen(pre) < strlen(r->err) ? strlen(pre) : strlen(r->err);
	r->err_line = line;
	return KIFU_EPARSE;
}

/* ---- building records ---------------------------------------------------- */

KifuRecord *kifu_record_new(KifuFormat f)
{
	KifuRecord *rec = calloc(1, sizeof *rec);
	if (!rec) return NULL;
	rec->format = f;
	rec->end_time_ms = -1;
	return rec;
}

int kifu_set_str(char **dst, const void *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d) return KIFU_ENOMEM;
	memcpy(d, s, n);
	d[n] = 0;
	free(*dst);
	*dst = d;
	return 0;
}

KifuMove *kifu_add_move(KifuRecord *rec, size_t *cap)
{
	if (rec->nmoves == *cap) {
		size_t c = *cap ? *cap * 2 : 128;
		KifuMove *m = realloc(rec->moves, c * sizeof *m);
		if (!m) return NULL;
		rec->moves = m;
		*cap = c;
	}
	KifuMove *m = &rec->moves[rec->nmoves++];
	memset(m, 0, sizeof *m);
	m->time_ms = -1;
	return m;
}

/* rec->illegal = fmt's message, then tail, escaped whole; 0 or KIFU_ENOMEM. */
static int set_illegal_v(KifuRecord *rec, int line, const char *tail, const char *fmt, va_list ap)
{
	char *what = NULL, *raw = NULL;
	if (vasprintf(&what, fmt, ap) < 0) return KIFU_ENOMEM;
	int n = asprintf(&raw, "%s%s", what, tail);
	free(what);
	if (n < 0) return KIFU_ENOMEM;
	/* Shown as text whatever the record holds (errmsg_escape). */
	char *s = malloc(KIFU_ERRLEN);
	if (!s) {
		free(raw);
		return KIFU_ENOMEM;
	}
	errmsg_escape(s, KIFU_ERRLEN, raw, (size_t)n);
	free(raw);
	free(rec->illegal);
	rec->illegal = s;
	rec->illegal_line = line;
	return 0;
}

int kifu_set_cut(KifuRecord *rec, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = set_illegal_v(
	    rec, line, ": a record damaged or cut short, its game without a result", fmt, ap);
	va_end(ap);
	rec->cut = rc == 0;
	return rc;
}

int kifu_set_illegal(KifuRecord *rec, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = set_illegal_v(rec, line, "", fmt, ap);
	va_end(ap);
	return rc;
}

int kifu_play(KifuRecord *rec, size_t *cap, Position *pos, Move m, int line, int time_ms)
{
	if (pos_history_len(pos) >= POS_MAX_STATES - 1) {
		if (kifu_set_illegal(rec, line, "game longer than %d plies", POS_MAX_STATES - 1))
			return KIFU_ENOMEM;
		rec->too_long = true;
		return 1;
	}
	KifuMove *km = kifu_add_move(rec, cap);
	if (!km) return KIFU_ENOMEM;
	csa_move_write(pos, m, km->token);
	km->move = m;
	km->line = line;
	km->time_ms = time_ms;
	pos_do_move(pos, m);
	return 0;
}

const char *kifu_handicap_sfen(const char *name)
{
	static const struct {
		const char *kif, *jkf, *sfen;
	} H[] = {
	    {"平手", "HIRATE", SFEN_STARTPOS},
	    {"香落ち", "KY", "lnsgkgsn1/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"左香落ち", NULL, "lnsgkgsn1/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"右香落ち", "KY_R", "1nsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"角落ち", "KA", "lnsgkgsnl/1r7/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"飛車落ち", "HI", "lnsgkgsnl/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"飛落ち", NULL, "lnsgkgsnl/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"飛香落ち", "HIKY", "lnsgkgsn1/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"飛車香落ち", NULL, "lnsgkgsn1/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"二枚落ち", "2", "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"三枚落ち", "3", "lnsgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"四枚落ち", "4", "1nsgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"五枚落ち", "5", "2sgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"左五枚落ち", "5_L", "1nsgkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"六枚落ち", "6", "2sgkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"左七枚落ち", "7_L", "2sgkg3/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"右七枚落ち", "7_R", "3gkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"七枚落ち", NULL, "3gkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"八枚落ち", "8", "3gkg3/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	    {"十枚落ち", "10", "4k4/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"},
	};
	for (size_t i = 0; i < sizeof H / sizeof H[0]; i++)
		if (!strcmp(name, H[i].kif) || (H[i].jkf && !strcmp(name, H[i].jkf)))
			return H[i].sfen;
	return NULL;
}

void kifu_set_start(KifuRecord *rec, const Position *pos)
{
	memcpy(rec->board, pos->board, sizeof rec->board);
	rec->hand[BLACK] = pos->hand[BLACK];
	rec->hand[WHITE] = pos->hand[WHITE];
	rec->side = pos->side;
	rec->has_position = true;
	rec->start_ply = pos->game_ply;
}
