/* tools/cli_engines.c — see cli_engines.h. */
#include "tools/cli_engines.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/builtin.h"
#include "tools/commands.h"

/* The options' names, copied (held here for the process's life). */
static char *option_names[256];
static int noption_names;

int cli_usi_option(void *dst, char *value, char *msg)
{
	(void)msg; /* the parser's words: "--usi-option wants NAME=VALUE, not ..." */
	UsiOption *o = dst;
	char *eq = strchr(value, '=');
	if (!eq || eq == value) return -1;
	/* A copy of the name, argv left as given (ps shows the command as typed). */
	if (noption_names == (int)(sizeof option_names / sizeof *option_names)) return -1;
	char *name = strndup(value, (size_t)(eq - value));
	if (!name) return -1;
	option_names[noption_names++] = name;
	o->name = name;
	o->value = eq + 1;
	return 0;
}

/* The notices said so far: N engines opened side by side say the same one N
 * times, and it is printed once. */
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static char notices[16][SEARCH_ERRLEN];
static int nnotices;

/* A UsiEngineConfig notice: "joseki: CMD: MESSAGE" on stderr, once. */
static void say_notice(void *ctx, const char *msg)
{
	const char *cmd = ctx;
	pthread_mutex_lock(&notice_lock);
	bool said = false;
	for (int i = 0; i < nnotices && !said; i++) said = !strcmp(notices[i], msg);
	if (!said) {
		joseki_error("%s: %s", cmd, msg);
		if (nnotices < (int)(sizeof notices / sizeof *notices))
			snprintf(notices[nnotices++], sizeof *notices, "%s", msg);
	}
	pthread_mutex_unlock(&notice_lock);
}

void cli_usi_notices(UsiEngineConfig *cfg, const char *cmd)
{
	cfg->notice = say_notice;
	cfg->notice_ctx = (void *)(uintptr_t)cmd; /* read only, as a const char * */
}

void cli_engines_init(CliEngines *e, int max_engines, const char *old_flag)
{
	memset(e, 0, sizeof *e);
	e->path = "builtin";
	e->n = 1;
	const CliOpt t[] = {
	    CLI_STR("--engine", &e->path, "builtin|PATH",
	            "the built-in engine (default) or a USI engine's program"),
	    CLI_NUM("--engines", &e->n, 1, (unsigned long long)max_engines, "N",
	            "engines thinking side by side (default 1)"),
	    CLI_FN("--usi-option", e->opts, cli_usi_option, "NAME=VALUE", "NAME=VALUE",
	           "a USI option for the engine (setoption), repeatable (default: none)",
	           CLI_MANY(&e->nopts, CLI_MAX_USI_OPTIONS), .alias = old_flag),
	    CLI_TABLE_END,
	};
	_Static_assert(sizeof t == sizeof e->table, "the table's size");
	memcpy(e->table, t, sizeof t);
}

void cli_budget_init(CliBudget *b, int multipv)
{
	memset(b, 0, sizeof *b);
	b->budget = (SearchBudget){.kind = SEARCH_BUDGET_NODES, .amount = 100000};
	b->multipv = multipv;
	snprintf(b->multipv_help, sizeof b->multipv_help,
	         "best moves asked of the engine a position (default %d)", multipv);
	SearchBudget *s = &b->budget;
	const CliOpt t[] = {
	    CLI_NUM("--nodes", &s->amount, 1, CLI_NOMAX, "N",
	            "nodes searched a position (default 100000)",
	            CLI_TAG(&s->kind, SEARCH_BUDGET_NODES), .excl = "budget"),
	    CLI_NUM("--movetime", &s->amount, 1, CLI_NOMAX, "MS",
	            "milliseconds a position (instead of the default --nodes)",
	            CLI_TAG(&s->kind, SEARCH_BUDGET_MOVETIME), .excl = "budget"),
	    CLI_NUM("--depth", &s->amount, 1, CLI_NOMAX, "D",
	            "plies searched a position (instead of the default --nodes)",
	            CLI_TAG(&s->kind, SEARCH_BUDGET_DEPTH), .excl = "budget"),
	    CLI_NUM("--multipv", &b->multipv, 1, SEARCH_MULTIPV_MAX, "K", b->multipv_help),
	    CLI_TABLE_END,
	};
	_Static_assert(sizeof t == sizeof b->table, "the table's size");
	memcpy(b->table, t, sizeof t);
}

int cli_open_engines(SearchEngine **engines, int n, const char *engine, const UsiOption *opts,
                     int nopts, bool restart, const volatile sig_atomic_t *cancel, const char *cmd)
{
	return cli_open_engines_cfg(engines, n, engine, opts, nopts, restart, cancel, cmd, NULL);
}

int cli_open_engines_cfg(SearchEngine **engines, int n, const char *engine, const UsiOption *opts,
                         int nopts, bool restart, const volatile sig_atomic_t *cancel,
                         const char *cmd, const UsiEngineConfig *base)
{
	if (!strcmp(engine, "builtin")) {
		size_t mb = 16;
		char berr[SEARCH_ERRLEN];
		if (builtin_engine_options(&mb, opts, nopts, berr) < 0) {
			joseki_error("%s: %s", cmd, berr);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			int rc = builtin_engine_new(&engines[i], mb, cancel);
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
	if (base)
		cfg = *base;
	else
		usi_engine_config_init(&cfg);
	cfg.path = engine;
	cfg.options = opts;
	cfg.noptions = nopts;
	cfg.restart_each_game = restart;
	cfg.cancel = cancel;
	if (!cfg.notice) cli_usi_notices(&cfg, cmd);
	UsiEngine **ue = calloc((size_t)n, sizeof *ue);
	if (!ue) {
		joseki_error("out of memory");
		return -1;
	}
	if (usi_engine_open_many(ue, &cfg, n, uerr) < 0) {
		/* The driver's messages mostly name the program: said once. */
		if (strstr(uerr, engine))
			joseki_error("%s: %s", cmd, uerr);
		else
			joseki_error("%s: engine '%s': %s", cmd, engine, uerr);
		free(ue);
		return -1;
	}
	for (int i = 0; i < n; i++) engines[i] = usi_engine_search(ue[i]);
	free(ue);
	return 0;
}
