/*
 * joseki token add FILE NAME [--read]
 *
 * Makes a new worker token (server/tokens.h): its SHA-256 and NAME are
 * appended to FILE (created 0600; an existing one of this user's made
 * owner-only; anything but a regular file, or another user's, refused), the
 * token itself is printed once on stdout and kept nowhere. With --read the token may only read the
 * coordinator's status (for the work page), not lease or submit. Revoke it by deleting its line; a
 * running coordinator notices at the next request.
 */
#include <stdio.h>
#include <string.h>

#include "server/tokens.h"
#include "shogi/errmsg.h"
#include "tools/cli_opt.h"
#include "tools/commands.h"

int cmd_token(int argc, char **argv)
{
	int action = 0;
	const char *file = NULL, *name = NULL;
	bool read_only = false;
	const CliOpt opts[] = {
	    CLI_ENUM("ACTION", &action, "add", NULL, "add: make a token (printed once)",
	             .required = true),
	    CLI_ARG("FILE", &file, "the tokens file (serve --work's --tokens)"),
	    CLI_ARG("NAME", &name, "the worker's name"),
	    CLI_FLAG("--read", &read_only, "the token may only read the work status"),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"token", opts, "docs/cluster.md"};
	int parsed = cli_parse(&cmd, argc, argv);
	if (parsed != CLI_GO) return parsed;
	char token[TOKENS_TOKEN_LEN + 1], err[TOKENS_ERRLEN];
	if (server_tokens_add(file, name, read_only, token, err) < 0) {
		joseki_error("token: %s", err);
		return 1;
	}
	printf("%s\n", token);
	char shown[4 * 1024];
	fprintf(stderr, "token: '%s'%s added to %s; the token is shown only now\n", name,
	        read_only ? " (read only)" : "",
	        errmsg_escape(shown, sizeof shown, file, strlen(file)));
	return 0;
}
