/*
 * joseki token add FILE NAME [--read]
 *
 * Makes a new worker token (server/tokens.h): its SHA-256 and NAME are
 * appended to FILE (created 0600), the token itself is printed once on stdout
 * and kept nowhere. With --read the token may only read the coordinator's
 * status (for the work page), not lease or submit. Revoke it by deleting its
 * line; a running coordinator notices at the next request.
 */
#include <stdio.h>
#include <string.h>

#include "server/tokens.h"
#include "tools/commands.h"

int cmd_token(int argc, char **argv)
{
	bool read_only = argc == 5 && !strcmp(argv[4], "--read");
	if ((argc != 4 && !read_only) || strcmp(argv[1], "add")) {
		joseki_error("usage: joseki token add FILE NAME [--read]   (prints a new token "
		             "once; --read: it may only read the work status)");
		return 2;
	}
	char token[TOKENS_TOKEN_LEN + 1], err[TOKENS_ERRLEN];
	if (server_tokens_add(argv[2], argv[3], read_only, token, err) < 0) {
		joseki_error("token: %s", err);
		return 1;
	}
	printf("%s\n", token);
	fprintf(stderr, "token: '%s'%s added to %s; the token is shown only now\n", argv[3],
	        read_only ? " (read only)" : "", argv[2]);
	return 0;
}
