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

#endif
