/*
 * tests/fuzz/fuzz_cli_opts.c — libFuzzer target for the commands' option
 * parser (tools/cli_opt.c): the input, split at NUL bytes, is an argv parsed
 * against a table with every kind of entry (flag, signed and unsigned
 * numbers, real, text, names, a parser of its own, repeatable, positionals,
 * the rest, a group that needs an option, options that exclude each other,
 * a --memory size).
 * The parse ends in go, help or a usage error; when it goes on, every value
 * is in its range and the rest are the arguments given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli_opt.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Usage lines and help go nowhere; the streams only, so that libFuzzer's
	 * and the sanitizers' reports (written to fd 2 directly) still show. */
	FILE *null = fopen("/dev/null", "w");
	if (!null) abort();
	stdout = null;
	stderr = null;
	return 0;
}

static int parse_even(void *dst, char *v, char *msg)
{
	size_t n = strlen(v);
	if (n % 2) {
		snprintf(msg, CLI_MSGLEN, "odd: %s", v);
		return -1;
	}
	*(size_t *)dst = n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096) return 0;
	char *text = malloc(size + 1);
	char *argv[64];
	if (!text) return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	int argc = 0;
	argv[argc++] = "fuzz";
	for (char *p = text; argc < 63 && p <= text + size; p += strlen(p) + 1) argv[argc++] = p;
	argv[argc] = NULL;

	static const int SIDES[] = {7, 8, 9};
	bool flag = false, on = false;
	uint64_t count = 5, rep[3] = {0, 0, 0}, mem = 7;
	int sign = -7, nrep = 0, side = 0, depth = -1;
	unsigned char small = 3;
	double rate = 0.5;
	const char *str = NULL, *book = NULL;
	size_t even = 0;
	CliArgs rest = {0};
	const CliOpt group[] = {
	    CLI_NUM("--count", &count, 1, 1000, "N", "count"),
	    CLI_NUM("--small", &small, 0, 200, "N", "small", .excl = "x"),
	    CLI_NUM("--sign", &sign, -32000, 32000, "CP", "sign", .excl = "x"),
	    CLI_TABLE_END,
	};
	const CliOpt opts[] = {
	    CLI_ARG("BOOK", &book, "book"),
	    CLI_NUM("DEPTH", &depth, 0, 20, NULL, "depth"), /* a positional, optional */
	    CLI_REST("REST", &rest, 0, "rest"),
	    CLI_FLAG("--flag", &flag, "flag", .alias = "flag"),
	    CLI_FLAG("--on", &on, "on"),
	    CLI_REAL("--rate", &rate, 0, 1, "R", "rate"),
	    CLI_STR("--str", &str, "S", "str", .lo = 1),
	    CLI_ENUM("--side", &side, "a|b|c", SIDES, "side"),
	    CLI_FN("--even", &even, parse_even, "E", NULL, "even"),
	    CLI_NUM("--rep", rep, 0, CLI_NOMAX, "N", "rep", CLI_MANY(&nrep, 3)),
	    CLI_GROUP(group, .needs = "--on"),
	    CLI_MEMORY(&mem),
	    CLI_TABLE_END,
	};
	const CliCmd cmd = {"fuzz", opts, NULL};
	int rc = cli_parse(&cmd, argc, argv);
	if (rc == CLI_GO) {
		if (!book || depth > 20 || count < 1 || count > 1000 || small > 200 ||
		    sign < -32000 || sign > 32000 || !(rate >= 0 && rate <= 1) || (str && !*str) ||
		    (side != 0 && (side < 7 || side > 9)) || even % 2 || nrep > 3 ||
		    (rest.n && !rest.v) || (mem != 7 && mem < (1u << 20)))
			abort();
		for (size_t i = 0; i < rest.n; i++)
			if (!rest.v[i] || (rest.v[i][0] == '-' && rest.v[i][1])) abort();
	} else if (rc != 0 && rc != 2) {
		abort();
	}
	free(text);
	return 0;
}
