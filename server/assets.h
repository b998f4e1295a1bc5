/*
 * server/assets.h — the explorer's files (server/www/), embedded in the binary
 * at build time by tools/embed.sh (the generated build/server/assets_data.c).
 */
#ifndef SERVER_ASSETS_H
#define SERVER_ASSETS_H

#include <stddef.h>

typedef struct {
	const char *path; /* "/", "/app.js", ... */
	const char *content_type;
	const unsigned char *data;
	size_t len;
} ServerAsset;

/* Terminated by an entry with path NULL. */
extern const ServerAsset SERVER_ASSETS[];

#endif
