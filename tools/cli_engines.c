/* tools/cli_engines.c — see cli_engines.h. */
#include "tools/cli_engines.h"

#include <stdlib.h>
#include <string.h>

#include "search/builtin.h"
#include "tools/commands.h"

int cli_positive(uint64_t *out, const char *s, const char *cmd, const char *opt)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || *s == '-' || v == 0) {
		joseki_error("%s: %s wants a positive number, not '%s'", cmd, opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_usi_option(UsiOption *opts, int *n, int max, char *arg, const char *cmd, const char *flag)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg || *n >= max) {
		joseki_error("%s: %s wants NAME=VALUE (at most %d), not '%s'", cmd, flag, max, arg);
		return -1;
	}
	*eq = 0;
	opts[*n].name = arg;
	opts[(*n)++].value = eq + 1;
	return 0;
}

int cli_open_engines(SearchEngine **engines, int n, const char *engine, const UsiOption *opts,
                     int nopts, const volatile sig_atomic_t *cancel, const char *cmd)
{
	if (!strcmp(engine, "builtin")) {
		for (int i = 0; i < n; i++) {
			int rc = builtin_engine_new(&engines[i], 16, cancel);
			if (rc < 0) {
				joseki_error("%s: built-in engine: %s", cmd, search_strerror(rc));
				return -1;
			}
		}
		return 0;
	}
	/* Started side by side: N engines loading big evaluation files take as
	 * long as one. */
	UsiEngineConfig cfg;
	char uerr[SEARCH_ERRLEN];
	usi_engine_config_init(&cfg);
	cfg.path = engine;
	cfg.options = opts;
	cfg.noptions = nopts;
	cfg.cancel = cancel;
	UsiEngine **ue = calloc((size_t)n, sizeof *ue);
	if (!ue) {
		joseki_error("out of memory");
		return -1;
	}
	if (usi_engine_open_many(ue, &cfg, n, uerr) < 0) {
		joseki_error("%s: engine '%s': %s", cmd, engine, uerr);
		free(ue);
		return -1;
	}
	for (int i = 0; i < n; i++) engines[i] = usi_engine_search(ue[i]);
	free(ue);
	return 0;
}
