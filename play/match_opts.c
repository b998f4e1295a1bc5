/*
 * play/match_opts.c — the option strings of a match (see match.h): a time
 * control "BASE[+INC]" and an SPRT "ELO0,ELO1[,ALPHA,BETA]".
 */
#include "play/match.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shogi/errmsg.h"

/*
 * One time "N[unit]" of text[0..len): a decimal number of seconds, or of
 * the unit ms, s, m, h. Rounds to the millisecond. 0 or MATCH_EINVAL.
 */
static int parse_time(int64_t *ms, const char *text, size_t len, const char *all, char *err)
{
	char buf[64];
	if (len == 0 || len >= sizeof buf)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "time control '%.80s': a time is empty or too long", all);
	memcpy(buf, text, len);
	buf[len] = '\0';
	/* Digits and one point, then the unit: strtod would also take "inf", "1e3", "0x1". */
	size_t i = 0, digits = 0, points = 0;
	for (; buf[i] && (isdigit((unsigned char)buf[i]) || buf[i] == '.'); i++) {
		if (buf[i] == '.')
			points++;
		else
			digits++;
	}
	char shown[64];
	memcpy(shown, buf, len + 1);
	const char *unit = buf + i;
	double scale = !strcmp(unit, "") || !strcmp(unit, "s") ? 1000.0
	               : !strcmp(unit, "ms")                   ? 1.0
	               : !strcmp(unit, "m")                    ? 60000.0
	               : !strcmp(unit, "h")                    ? 3600000.0
	                                                       : 0.0;
	if (digits == 0 || points > 1 || scale == 0)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "time control '%.80s': '%s' is not a time (seconds, or a number "
		                  "with ms, s, m or h)",
		                  all, shown);
	buf[i] = '\0';
	errno = 0;
	double v = strtod(buf, NULL) * scale;
	if (errno || !(v <= (double)MATCH_TIME_MAX_MS))
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "time control '%.80s': '%s' is more than 100 hours", all, shown);
	*ms = (int64_t)llround(v);
	return 0;
}

int match_tc_parse(TimeControl *tc, const char *text, char *err)
{
	const char *plus = strchr(text, '+');
	size_t len = strlen(text);
	int64_t base, inc = 0;
	int rc = parse_time(&base, text, plus ? (size_t)(plus - text) : len, text, err);
	if (rc < 0) return rc;
	if (plus && (rc = parse_time(&inc, plus + 1, strlen(plus + 1), text, err)) < 0) return rc;
	tc->main_ms = base;
	tc->inc_ms = inc;
	return 0;
}

/* One number of the SPRT's list; *end past it. */
static bool sprt_number(double *v, const char *s, const char **end)
{
	char *e;
	errno = 0;
	*v = strtod(s, &e);
	if (e == s || errno || !isfinite(*v)) return false;
	*end = e;
	return true;
}

int match_sprt_parse(MatchSprt *s, const char *text, char *err)
{
	double v[4] = {0, 0, 0.05, 0.05};
	int n = 0;
	const char *p = text;
	bool ok = true;
	for (;;) {
		/* strtod skips blanks and takes hex and "inf": only plain decimals here. */
		if (n == 4 || strspn(p, "+-.0123456789") == 0 || !sprt_number(&v[n], p, &p)) {
			ok = false;
			break;
		}
		n++;
		if (*p != ',') break;
		p++;
	}
	if (!ok || (n != 2 && n != 4) || *p)
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "--sprt '%.80s': wants ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA", text);
	if (fabs(v[0]) > 1000 || fabs(v[1]) > 1000 || v[0] >= v[1])
		return errmsg_set(err, MATCH_ERRLEN, MATCH_EINVAL,
		                  "--sprt '%.80s': wants ELO0 < ELO1, each within ±1000", text);
	if (!(v[2] > 0 && v[2] < 1 && v[3] > 0 && v[3] < 1 && v[2] + v[3] < 1))
		return errmsg_set(
		    err, MATCH_ERRLEN, MATCH_EINVAL,
		    "--sprt '%.80s': ALPHA and BETA must be in (0, 1), their sum below 1", text);
	*s = (MatchSprt){.elo0 = v[0], .elo1 = v[1], .alpha = v[2], .beta = v[3]};
	return 0;
}
