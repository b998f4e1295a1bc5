/* shogi/errmsg.c — see errmsg.h. */
#include "shogi/errmsg.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int errmsg_vset(char *err, size_t len, int code, const char *fmt, va_list ap)
{
	if (err && len) vsnprintf(err, len, fmt, ap);
	return code;
}

int errmsg_set(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	errmsg_vset(err, len, code, fmt, ap);
	va_end(ap);
	return code;
}

/* The length of the well-formed UTF-8 character at s (n bytes left) that may
 * be shown as itself, or 0. */
static size_t shown_utf8(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp, min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1fu, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0fu, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07u, min = 0x10000;
	else
		return 0;
	if (len > n) return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
	if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069))
		return 0;
	return len;
}

/* The piece of output for the character at s[i] (n bytes in all): sets
 * *piece (into s, or esc) and *len; returns the input bytes it stands for. */
static size_t piece_at(const unsigned char *s, size_t i, size_t n, char esc[5], const char **piece,
                       size_t *len)
{
	size_t used = s[i] >= 0x20 && s[i] < 0x7f ? 1 : shown_utf8(s + i, n - i);
	if (used) {
		*piece = (const char *)s + i;
		*len = used;
		return used;
	}
	snprintf(esc, 5, "\\x%02X", s[i]);
	*piece = esc;
	*len = 4;
	return 1;
}

const char *errmsg_escape(char *out, size_t cap, const void *src, size_t n)
{
	if (!cap) return out;
	const unsigned char *s = src;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		char esc[5];
		const char *piece;
		size_t len, used = piece_at(s, i, n, esc, &piece, &len);
		/* Each piece leaves room for "..." after it, so that a cut falls
		 * after a whole character; where the room runs out, the rest is
		 * written if it fits whole, else the cut is made here. */
		if (o + len + 3 >= cap) {
			size_t rest = 0;
			for (size_t k = i; k < n && o + rest < cap;) {
				char e2[5];
				const char *p2;
				size_t l2;
				k += piece_at(s, k, n, e2, &p2, &l2);
				rest += l2;
			}
			if (o + rest >= cap) {
				if (o + 3 < cap) {
					memcpy(out + o, "...", 3);
					o += 3;
				}
				break;
			}
		}
		memcpy(out + o, piece, len);
		o += len;
		i += used;
	}
	out[o] = 0;
	return out;
}
