/* shogi/errmsg.c — see errmsg.h. */
#include "shogi/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

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
