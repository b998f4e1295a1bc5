/*
 * joseki token add FILE NAME
 *
 * Makes a new worker token (server/tokens.h): its SHA-256 and NAME are
 * appended to FILE (created 0600), the token itself is printed once on stdout
 * and kept nowhere. Revoke it by deleting its line; a running coordinator
 * notices at the next request.
 */
#include <stdio.h>
#include <string.h>

#include "server/tokens.h"
#include "tools/commands.h"

int cmd_token(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "add")) {
		joseki_error(
		    "usage: joseki token add FILE NAME   (prints a new worker token once)");
		return 2;
	}
	char token[TOKENS_TOKEN_LEN + 1], err[TOKENS_ERRLEN];
	if (server_tokens_add(argv[2], argv[3], token, err) < 0) {
		joseki_error("token: %s", err);
		return 1;
	}
	printf("%s\n", token);
	fprintf(stderr, "token: '%s' added to %s; the token is shown only now\n", argv[3], argv[2]);
	return 0;
}
