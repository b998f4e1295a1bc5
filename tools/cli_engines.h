/*
 * tools/cli_engines.h — the engines a command thinks with and its search
 * budget: the option fragments shared by think, cycle, worker and serve
 * --work (tools/cli_opt.h), and starting the engines.
 */
#ifndef TOOLS_CLI_ENGINES_H
#define TOOLS_CLI_ENGINES_H

#include <signal.h>
#include <stdint.h>

#include "search/search.h"
#include "search/usi_engine.h"
#include "tools/cli_opt.h"
#include "shogi/errors.h"

#define CLI_MAX_USI_OPTIONS 64 /* --usi-option NAME=VALUE given at most this often */

/*
 * --engine builtin|PATH, --engines N (1..max_engines), and the USI options
 * passed to a PATH engine, --usi-option NAME=VALUE each, in every command
 * that runs engines (old_flag: an older spelling still taken, said in
 * --help, e.g. worker's "--option"; NULL: none). Defaults: one built-in
 * engine. The table is a fragment for a command's (CLI_GROUP(e.table)); e
 * must stay where it is.
 */
typedef struct {
	const char *path;
	uint64_t n;
	UsiOption opts[CLI_MAX_USI_OPTIONS];
	int nopts;
	CliOpt table[4];
} CliEngines;

void cli_engines_init(CliEngines *e, int max_engines, const char *old_flag);

/*
 * --nodes N | --movetime MS | --depth D (one of them; default 100000 nodes)
 * and --multipv K (1..SEARCH_MULTIPV_MAX, default multipv): the search of
 * each position think or a worker analyses. A fragment like CliEngines.
 */
typedef struct {
	SearchBudget budget;
	int multipv;
	char multipv_help[80]; /* --multipv's help line, with its default */
	CliOpt table[5];
} CliBudget;

void cli_budget_init(CliBudget *b, int multipv);

/* A CliParseFn: "NAME=VALUE" (split in place) into a UsiOption. */
JOSEKI_MUST_USE int cli_usi_option(void *dst, char *value, char *msg);

/*
 * Makes cfg's engines say their notices (an option sent in the engine's
 * spelling of its name) on stderr as "joseki: CMD: ...", each message once
 * however many engines say it. cmd must outlive the engines.
 */
void cli_usi_notices(UsiEngineConfig *cfg, const char *cmd);

/*
 * Starts n engines: "builtin" (in-process, 16 MB hash each, or the USI_Hash
 * given; any option but USI_Hash, Hash and Threads=1 is refused) or the USI
 * program at path engine with the options (handshakes side by side; its
 * notices said as cli_usi_notices says them); cancel
 * is polled by every engine (the command's stop flag); with restart, a USI
 * engine starts a new process for every new game (UsiEngineConfig's
 * restart_each_game). 0, or -1 after a message on stderr; engines[] may then
 * hold some engines: search_free each.
 */
JOSEKI_MUST_USE int cli_open_engines(SearchEngine **engines, int n, const char *engine,
                                     const UsiOption *opts, int nopts, bool restart,
                                     const volatile sig_atomic_t *cancel, const char *cmd);
/* The same with the driver's settings of base (timeouts; NULL: the defaults). */
JOSEKI_MUST_USE int cli_open_engines_cfg(SearchEngine **engines, int n, const char *engine,
                                         const UsiOption *opts, int nopts, bool restart,
                                         const volatile sig_atomic_t *cancel, const char *cmd,
                                         const UsiEngineConfig *base);

#endif
