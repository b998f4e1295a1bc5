/*
 * ingest/usilist.c — USI game lines (kifu_priv.h): one game a line, as
 * YaneuraOu's tools and self-play generators write them:
 *   startpos moves 7g7f 3c3d ...
 *   sfen <sfen> moves ...          (or a bare SFEN, or "position ..." first)
 *   <id>\t<any of the above>       (the id becomes the record's event)
 *   7g7f 3c3d ...                  (a bare move list from the start position)
 * Blank lines and lines starting with # are skipped.
 */
#include "ingest/kifu_priv.h"

#include <stdlib.h>
#include <string.h>

#include "shogi/notation.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool word_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && !memcmp(s, w, n);
}

int usi_line_record(KifuRecord **out, Position *pos, const char *text, size_t len, int line,
                    char *err)
{
	*out = NULL;
	KifuRecord *rec = kifu_record_new(KIFU_USI);
	if (!rec) return KIFU_ENOMEM;
	rec->first_line = line;
	size_t i = 0;
	while (i < len && is_space(text[i])) i++;
	size_t j = i;
	while (j < len && !is_space(text[j])) j++;
	size_t moves_at = i; /* offset of the first move */
	if (word_is(text + i, j - i, "startpos") || word_is(text + i, j - i, "sfen") ||
	    word_is(text + i, j - i, "position") || memchr(text + i, '/', j - i)) {
		/* The position part runs up to the word "moves". */
		size_t k = i, mstart = len, mend = len;
		while (k < len) {
			while (k < len && is_space(text[k])) k++;
			size_t e = k;
			while (e < len && !is_space(text[e])) e++;
			if (e > k && word_is(text + k, e - k, "moves")) {
				mstart = k;
				mend = e;
				break;
			}
			k = e;
		}
		char *spec = malloc(mstart - i + 1);
		if (!spec) {
			kifu_record_free(rec);
			return KIFU_ENOMEM;
		}
		memcpy(spec, text + i, mstart - i);
		spec[mstart - i] = 0;
		int rc = position_parse(pos, spec, err);
		free(spec);
		if (rc != 0) {
			kifu_record_free(rec);
			return SHOGI_EPARSE;
		}
		moves_at = mend;
	} else {
		pos_set_startpos(pos);
	}
	kifu_set_start(rec, pos);
	size_t cap = 0;
	char merr[SHOGI_ERRLEN];
	for (size_t k = moves_at;;) {
		while (k < len && is_space(text[k])) k++;
		if (k >= len) break;
		size_t e = k;
		while (e < len && !is_space(text[e])) e++;
		Move m;
		int mrc = usi_move_parse_legal(&m, pos, text + k, e - k, merr);
		if (mrc != 0) {
			char q[40];
			errmsg_escape(q, sizeof q, text + k, e - k);
			/* A line's first word that is no move and no position's start:
			 * not a game at all, rather than a game's bad move. */
			bool none = k == i && moves_at == i && mrc == SHOGI_EPARSE;
			/* A move that does not read as one: a line damaged or cut, no
			 * move its player lost by (the game has no result), as in a
			 * CSA or KIF record. */
			int sr;
			if (none) {
				sr = kifu_set_illegal(
				    rec, line,
				    "'%s' starts no position (startpos, sfen ..., an "
				    "SFEN board) and is no USI move",
				    q);
				rec->cut = true;
			} else if (mrc == SHOGI_EPARSE) {
				sr = kifu_set_cut(rec, line, "malformed move %s (%s)", q, merr);
			} else {
				sr = kifu_set_illegal(rec, line, "illegal move %s (%s)", q, merr);
			}
			if (sr) {
				kifu_record_free(rec);
				return KIFU_ENOMEM;
			}
			break;
		}
		int rc = kifu_play(rec, &cap, pos, m, line, -1);
		if (rc < 0) {
			kifu_record_free(rec);
			return rc;
		}
		if (rc) break;
		k = e;
	}
	*out = rec;
	return 0;
}

int usi_next(KifuReader *r, KifuRecord **out)
{
	Position *pos = kifu_reader_pos(r);
	if (!pos) return KIFU_ENOMEM;
	const unsigned char *s;
	size_t n;
	while (kifu_next_line(r, &s, &n)) {
		size_t i = 0;
		while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
		/* A comment after the game ("<sfen>\t# game=...") is not read. */
		n = position_line_len((const char *)s, n);
		if (i >= n) continue;
		/* "<id>\t<game>": the id is what precedes the first tab. */
		const unsigned char *tab = memchr(s, '\t', n);
		const unsigned char *game = s;
		size_t glen = n;
		if (tab && tab > s + i) {
			game = tab + 1;
			glen = n - (size_t)(tab - s) - 1;
		}
		char err[SHOGI_ERRLEN];
		KifuRecord *rec;
		int rc = usi_line_record(&rec, pos, (const char *)game, glen, r->line, err);
		if (rc == SHOGI_EPARSE) return kifu_fail(r, r->line, "bad position (%s)", err);
		if (rc) return rc;
		if (game != s && kifu_set_str(&rec->event, s, (size_t)(tab - s))) {
			kifu_record_free(rec);
			return KIFU_ENOMEM;
		}
		*out = rec;
		return 1;
	}
	return 0;
}
