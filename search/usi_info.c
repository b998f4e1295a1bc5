/*
 * search/usi_info.c — the USI `info` line parser (see usi_info.h).
 *
 * The line is walked as a sequence of tokens separated by spaces or tabs,
 * always bounded by len: the input may come straight from a pipe buffer or a
 * fuzzer and need not be NUL-terminated.
 */
#include "search/usi_info.h"
#include "shogi/errmsg.h"

#include <stdio.h>
#include <string.h>

#include "search/search.h"
#include "shogi/notation.h"

typedef struct {
	const char *line;
	size_t len;
	size_t pos; /* next unread byte */
	const char *tok;
	size_t tok_len;
	size_t tok_off;
	char *err;
} Lexer;

static bool lex_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Advances to the next token; false at the end of the line. */
static bool lex_next(Lexer *lx)
{
	while (lx->pos < lx->len && lex_space(lx->line[lx->pos])) lx->pos++;
	if (lx->pos >= lx->len) {
		lx->tok = NULL;
		lx->tok_len = 0;
		lx->tok_off = lx->len;
		return false;
	}
	lx->tok_off = lx->pos;
	lx->tok = lx->line + lx->pos;
	while (lx->pos < lx->len && !lex_space(lx->line[lx->pos])) lx->pos++;
	lx->tok_len = lx->pos - lx->tok_off;
	return true;
}

static bool tok_is(const Lexer *lx, const char *word)
{
	size_t n = strlen(word);
	return lx->tok && lx->tok_len == n && memcmp(lx->tok, word, n) == 0;
}

static int lex_fail(Lexer *lx, const char *what)
{
	if (lx->err) {
		int n = lx->tok_len > 40 ? 40 : (int)lx->tok_len;
		if (lx->tok)
			errmsg_set(lx->err, USI_INFO_ERRLEN, 0,
			           "info line, byte %zu: %s at \"%.*s\"", lx->tok_off, what, n,
			           lx->tok);
		else
			errmsg_set(lx->err, USI_INFO_ERRLEN, 0,
			           "info line, byte %zu: %s at end of line", lx->tok_off, what);
	}
	return SEARCH_EPROTOCOL;
}

/*
 * Parses the current token as a decimal integer with an optional sign when
 * allow_sign. Fails on empty digits, other characters or overflow of int64.
 * *neg reports a leading '-' even for "-0".
 */
static bool tok_int(const Lexer *lx, bool allow_sign, int64_t *out, bool *neg)
{
	size_t i = 0;
	bool minus = false;
	uint64_t v = 0;

	if (!lx->tok) return false;
	if (allow_sign && i < lx->tok_len && (lx->tok[i] == '-' || lx->tok[i] == '+')) {
		minus = lx->tok[i] == '-';
		i++;
	}
	if (i == lx->tok_len) return false;
	for (; i < lx->tok_len; i++) {
		char c = lx->tok[i];
		if (c < '0' || c > '9') return false;
		if (v > (UINT64_C(1) << 62) / 10) return false; /* keeps v well inside int64 */
		v = v * 10 + (uint64_t)(c - '0');
	}
	*out = minus ? -(int64_t)v : (int64_t)v;
	if (neg) *neg = minus;
	return true;
}

/* Reads the token after a keyword as a non-negative number up to max. */
static int next_count(Lexer *lx, const char *key, int64_t max, int64_t *out)
{
	char what[48];

	if (!lex_next(lx) || !tok_int(lx, false, out, NULL) || *out > max) {
		snprintf(what, sizeof what, "bad number after \"%s\"", key);
		return lex_fail(lx, what);
	}
	return 0;
}

static bool is_pv_terminator(const Lexer *lx)
{
	/* Words some engines (YaneuraOu) put in a PV where a move cannot go. */
	static const char *const words[] = {"resign",  "win",     "draw",     "rep_draw", "rep_sup",
	                                    "rep_inf", "rep_win", "rep_lose", "none"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (tok_is(lx, words[i])) return true;
	return false;
}

static int parse_score(Lexer *lx, UsiInfo *out)
{
	int64_t v;
	bool neg = false;

	if (!lex_next(lx)) return lex_fail(lx, "missing score kind");
	if (tok_is(lx, "cp")) {
		if (!lex_next(lx) || !tok_int(lx, true, &v, NULL))
			return lex_fail(lx, "bad number after \"score cp\"");
		if (v > 1000000000) v = 1000000000;
		if (v < -1000000000) v = -1000000000;
		out->mate = false;
		out->cp = (int)v;
		if (v > VALUE_MATE_IN_MAX - 1) v = VALUE_MATE_IN_MAX - 1;
		if (v < -(VALUE_MATE_IN_MAX - 1)) v = -(VALUE_MATE_IN_MAX - 1);
		out->value = (int)v;
	} else if (tok_is(lx, "mate")) {
		out->mate = true;
		if (!lex_next(lx)) return lex_fail(lx, "missing number after \"score mate\"");
		if (tok_is(lx, "+") || tok_is(lx, "-")) {
			out->mate_unknown = true;
			out->mated = lx->tok[0] == '-';
			out->mate_plies = 0;
			/* Distance unknown: the longest mate the value range holds. */
			out->value = search_mate_value(999, out->mated);
		} else {
			if (!tok_int(lx, true, &v, &neg) || v > 100000 || v < -100000)
				return lex_fail(lx, "bad number after \"score mate\"");
			out->mated = neg;
			out->mate_plies = (int)v;
			out->value = search_mate_value(v < 0 ? (int)-v : (int)v, neg);
		}
	} else {
		return lex_fail(lx, "score is neither cp nor mate");
	}
	out->fields |= USI_INFO_SCORE;
	out->bound = USI_BOUND_EXACT;
	return 0;
}

static int parse_pv(Lexer *lx, UsiInfo *out)
{
	out->fields |= USI_INFO_PV;
	while (lex_next(lx)) {
		Move m;
		if (usi_move_parse(&m, lx->tok, lx->tok_len, NULL) < 0) {
			if (out->pv_len == 0 && !is_pv_terminator(lx))
				return lex_fail(lx, "pv does not start with a move");
			break; /* the PV ends at the first word that is not a move */
		}
		if (out->pv_len == USI_INFO_PV_MAX) {
			out->pv_truncated = true;
			break;
		}
		out->pv[out->pv_len++] = m;
	}
	if (out->pv_len == 0 && !lx->tok) return lex_fail(lx, "empty pv");
	/* pv is always last: whatever follows is not for us. */
	lx->pos = lx->len;
	return 0;
}

/* Keywords followed by one non-negative number. */
typedef struct {
	const char *name;
	unsigned field; /* USI_INFO_* bit, 0 for values we skip */
	int64_t max;
} NumericKey;

static const NumericKey numeric_keys[] = {
    {"depth", USI_INFO_DEPTH, 100000},
    {"seldepth", USI_INFO_SELDEPTH, 100000},
    {"multipv", USI_INFO_MULTIPV, 100000},
    {"time", USI_INFO_TIME, INT64_MAX},
    {"nodes", USI_INFO_NODES, INT64_MAX},
    {"nps", USI_INFO_NPS, INT64_MAX},
    {"hashfull", USI_INFO_HASHFULL, 1000000},
    {"currmovenumber", 0, INT64_MAX},
    {"cpuload", 0, INT64_MAX},
};

static const NumericKey *numeric_key(const Lexer *lx)
{
	for (size_t i = 0; i < sizeof numeric_keys / sizeof numeric_keys[0]; i++)
		if (tok_is(lx, numeric_keys[i].name)) return &numeric_keys[i];
	return NULL;
}

static int store_numeric(Lexer *lx, UsiInfo *out, unsigned field, int64_t v)
{
	switch (field) {
	case USI_INFO_DEPTH:
		out->depth = (int)v;
		break;
	case USI_INFO_SELDEPTH:
		out->seldepth = (int)v;
		break;
	case USI_INFO_MULTIPV:
		if (v < 1) return lex_fail(lx, "multipv must be at least 1");
		out->multipv = (int)v;
		break;
	case USI_INFO_TIME:
		out->time_ms = (uint64_t)v;
		break;
	case USI_INFO_NODES:
		out->nodes = (uint64_t)v;
		break;
	case USI_INFO_NPS:
		out->nps = (uint64_t)v;
		break;
	case USI_INFO_HASHFULL:
		out->hashfull = (int)v;
		break;
	default:
		break;
	}
	out->fields |= field;
	return 0;
}

int usi_info_parse(UsiInfo *out, const char *line, size_t len, char *err)
{
	Lexer lx = {.line = line, .len = len, .err = err};
	int64_t v;
	int rc;

	memset(out, 0, offsetof(UsiInfo, pv));
	out->multipv = 1;
	out->string = NULL;
	out->string_len = 0;
	if (err) err[0] = '\0';
	if (!line || !lex_next(&lx) || !tok_is(&lx, "info"))
		return lex_fail(&lx, "not an info line");

	while (lex_next(&lx)) {
		const NumericKey *nk = numeric_key(&lx);
		if (nk) {
			if ((rc = next_count(&lx, nk->name, nk->max, &v)) < 0) return rc;
			if ((rc = store_numeric(&lx, out, nk->field, v)) < 0) return rc;
		} else if (tok_is(&lx, "currmove")) {
			if (!lex_next(&lx) ||
			    usi_move_parse(&out->currmove, lx.tok, lx.tok_len, NULL) < 0)
				return lex_fail(&lx, "bad move after \"currmove\"");
			out->fields |= USI_INFO_CURRMOVE;
		} else if (tok_is(&lx, "score")) {
			if ((rc = parse_score(&lx, out)) < 0) return rc;
		} else if (tok_is(&lx, "lowerbound") || tok_is(&lx, "upperbound")) {
			if (!(out->fields & USI_INFO_SCORE))
				return lex_fail(&lx, "bound without a score");
			out->bound = lx.tok[0] == 'l' ? USI_BOUND_LOWER : USI_BOUND_UPPER;
		} else if (tok_is(&lx, "string")) {
			/* The rest of the line, trailing line breaks and spaces dropped. */
			size_t start = lx.pos, end = lx.len;
			while (start < end && (line[start] == ' ' || line[start] == '\t')) start++;
			while (end > start && lex_space(line[end - 1])) end--;
			out->string = line + start;
			out->string_len = end - start;
			out->fields |= USI_INFO_STRING;
			lx.pos = lx.len;
		} else if (tok_is(&lx, "pv")) {
			if ((rc = parse_pv(&lx, out)) < 0) return rc;
		}
		/* Anything else is an extension we do not know: skip the token. */
	}
	return 0;
}

bool usi_info_is_final(const UsiInfo *info)
{
	return (info->fields & USI_INFO_SCORE) && info->bound == USI_BOUND_EXACT &&
	       (info->fields & USI_INFO_PV) && info->pv_len > 0;
}
