/*
 * shogi/errmsg.h — the one message helper of the tree: functions that fail
 * fill the caller's `char *err` buffer (its size in their header) and return a
 * negative code of their module (docs/STYLE.md, "Errors").
 */
#ifndef SHOGI_ERRMSG_H
#define SHOGI_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Formats a message into err (len bytes, always NUL-terminated, cut to fit;
 * nothing when err is NULL or len is 0) and returns code, so that a failure
 * reads `return errmsg_set(err, FOO_ERRLEN, FOO_EINVAL, "%s: bad", path);`.
 */
int errmsg_set(char *err, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with a va_list, for a module's own failure helper (kifu_fail, usi_fail). */
int errmsg_vset(char *err, size_t len, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/*
 * The one way foreign bytes (a file's, a client's, a server's, an engine's)
 * are shown on a terminal or in a log: the n bytes of s (any bytes, NULs
 * too) written to out (cap bytes, always NUL-terminated) so that they show
 * as text and do nothing else. Printable ASCII and well-formed UTF-8 stay as
 * they are (Japanese move names read as written); every other byte is
 * written \xNN (upper-case hex): control characters (escape sequences,
 * newlines that would forge a line, a bell), DEL, C1 controls (U+0080..U+009F,
 * which some terminals obey), the line and paragraph separators and the
 * bidirectional overrides (U+2028, U+2029, U+202A..U+202E, U+2066..U+2069,
 * which reorder what a line seems to say), and bytes that are not UTF-8. A
 * backslash stays a backslash, so that the function leaves its own output as
 * it is (a message escaped twice reads as escaped once). What does not fit
 * is cut at a whole character and ends in "..." (cap >= 4). Returns out.
 */
const char *errmsg_escape(char *out, size_t cap, const void *s, size_t n);

#endif
