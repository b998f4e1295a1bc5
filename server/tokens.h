/*
 * server/tokens.h — the work API's bearer tokens (docs/cluster.md, "Security").
 *
 * The tokens file holds one token a line as "<sha256 hex of the token> <name>",
 * or "<sha256 hex> <name> read" for a token that may only read the
 * coordinator's status (a dashboard's; docs/cluster.md, "Watching a run")
 * (blank lines and lines starting with '#' are ignored): the coordinator never
 * stores a token itself, so a leaked file gives no access. A token is 64
 * lowercase hex digits from getrandom(), printed once by server_tokens_add.
 * Checking hashes the presented token and compares it with every line in
 * constant time.
 *
 * The file must be a regular file of this process's user, owner-only (no
 * permission for group or others: anyone who may write it may add a token),
 * of at most TOKENS_FILE_MAX bytes; anything else is refused with the command
 * that fixes it (chmod, chown). It is opened without blocking (O_NONBLOCK,
 * then fstat before any read), so a FIFO, a device or a directory in its
 * place is refused at once instead of hanging the reader. It is re-read
 * whenever it changes (inode, size, mode or times), so deleting a line
 * revokes that token without a restart; a version that cannot be read or
 * does not parse keeps the tokens last read in force (revoke them all by
 * emptying the file), said once per version through the log callback.
 */
#ifndef SERVER_TOKENS_H
#define SERVER_TOKENS_H

#include "shogi/errors.h"

#include <stdbool.h>
#include <stddef.h>

enum {
	TOKENS_OK = 0,
	TOKENS_EIO = ERR_TOKENS - 0,    /* the file cannot be read or written */
	TOKENS_EPARSE = ERR_TOKENS - 1, /* a line is not "<64 hex> <name>" */
	TOKENS_EINVAL = ERR_TOKENS - 2, /* a bad name */
	TOKENS_EEXIST = ERR_TOKENS - 3, /* the name is taken */
	TOKENS_EFILE = ERR_TOKENS - 4,  /* not a regular file, or too large */
	TOKENS_EPERM = ERR_TOKENS - 5,  /* others may read or write it, or it is another user's */
};
const char *server_tokens_strerror(int code);

#define TOKENS_ERRLEN 512
#define TOKENS_NAME_MAX 64 /* bytes: letters, digits, '.', '_', '-' */
#define TOKENS_TOKEN_LEN 64
/* The largest tokens file read: some 7,000 tokens with names of 64 bytes. */
#define TOKENS_FILE_MAX (1 << 20)

typedef struct ServerTokens ServerTokens;

/* Reads path (it must be a tokens file as above, and parse). 0 or a code
 * with a message in err naming the file (and the line, or the command that
 * makes it acceptable). */
JOSEKI_MUST_USE int server_tokens_open(ServerTokens **out, const char *path, char *err);
void server_tokens_free(ServerTokens *t);

/* What a re-read says, once per version of the file: that it failed (msg
 * names the file and why, and that the tokens read before stay in force) or
 * that it reads again. Called from the thread that checks a token, under the
 * tokens' lock; NULL (the default) says nothing. */
typedef void (*ServerTokensLogFn)(void *ctx, const char *msg);
void server_tokens_set_log(ServerTokens *t, ServerTokensLogFn log, void *ctx);

/* True when token (as sent after "Bearer ") is in the file as it is now (or
 * as last read, when its new version does not read); name (TOKENS_NAME_MAX
 * + 1 bytes) gets its name. Thread-safe; never blocks on the file. */
bool server_tokens_check(ServerTokens *t, const char *token, char *name);
/* As server_tokens_check; *read_only (may be NULL) gets whether the token
 * may only read. */
bool server_tokens_check_ro(ServerTokens *t, const char *token, char *name, bool *read_only);

/* Makes a new token, appends its hash and name (and " read" for a read-only
 * one) to path (created 0600 when absent; an existing file readable by others
 * is made owner-only first) and puts the token in token (TOKENS_TOKEN_LEN + 1
 * bytes). TOKENS_EEXIST when a token of that name is in the file,
 * TOKENS_EPARSE when the file does not parse, TOKENS_EFILE when it is not a
 * regular file (or is too large), TOKENS_EPERM when it is another user's,
 * TOKENS_EIO: nothing is appended (and no mode changed) then. */
JOSEKI_MUST_USE int server_tokens_add(const char *path, const char *name, bool read_only,
                                      char *token, char *err);

#endif
