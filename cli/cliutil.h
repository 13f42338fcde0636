/* cliutil.h - helpers shared by the tpsim commands (cli/main.c, cli_validate.c): error reporting,
 * usage errors, --help detection, and the --platform argument. */
#ifndef CLI_CLIUTIL_H
#define CLI_CLIUTIL_H

#include <getopt.h>
#include <jansson.h>

#include "common/error.h"
#include "platforms/topo.h"

enum { CLI_EXIT_SIM = 1, CLI_EXIT_INPUT = 2 };

/* Prints "tpsim: <error>" and returns the exit status for it. */
int cli_report_error(const struct tps_error *err);
/* The same for an error of a command that read scenario file `scenario`: an error a later stage
 * raised without a file is placed in it first (core/locate.h). */
int cli_report_error_in(const char *scenario, struct tps_error *err);
/* Prints "tpsim CMD: <message>" and a pointer to --help; returns CLI_EXIT_INPUT. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);
int cli_is_help(const char *a);

/* What a command's option handler is told: the option (getopt_long's val) and its value. It
 * returns 0, or an exit status after printing a usage error (cli_usage_error). */
typedef int (*cli_option_fn)(int opt, const char *arg, void *ctx);

/* Parses argv[first..] with getopt_long: `shorts` and `longs` as getopt_long takes them (-h and
 * --help are added and print `help`), options anywhere among the operands. Calls on() for each
 * option and stores at most maxpos operands in pos (*npos). Unknown options, missing values and
 * surplus operands get one usage error naming cmd. Returns 0 to go on, CLI_EXIT_INPUT after an
 * error, or CLI_HELP_SHOWN when the help was printed (the command then exits 0). */
enum { CLI_HELP_SHOWN = -1 };
/* --set KEY=VALUE: a command that takes it lists CLI_SET_OPTION among its long options;
 * cli_parse keeps the assignments and cli_sets_apply(SCENARIO) registers them for that file
 * (common/ydoc.h), returning 0 or the exit status after a located error. */
enum { CLI_OPT_SET = 0x5e7 };
#define CLI_SET_OPTION                                                                             \
    {                                                                                              \
        "set", required_argument, NULL, CLI_OPT_SET                                                \
    }
#define CLI_SET_HELP                                                                               \
    "  --set KEY=VALUE    set a scenario key, dotted (strategy.tp=8, model.hidden=8192,\n"         \
    "                     platform.nodes=4, model.moe={experts: 8, top_k: 2}); repeatable\n"
int cli_sets_apply(const char *path);
/* How many --set options the command line gave. */
int cli_sets_given(void);
/* The i-th of them ("KEY=VALUE"), NULL past the last. */
const char *cli_set_at(int i);
int cli_parse(int argc, char **argv, int first, const char *cmd, const char *help,
              const char *shorts, const struct option *longs, cli_option_fn on, void *ctx,
              const char **pos, int maxpos, int *npos);
/* A count option's value: an integer in [lo, hi]; otherwise a usage error "bad OPTION 'V'". */
int cli_parse_count(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out);
/* Writes JSON value j (released here; NULL means it could not be built) to path with 17-digit
 * reals; returns 0 or CLI_EXIT_INPUT after a message naming cmd and path. */
int cli_write_json(json_t *j, const char *path, const char *cmd);
/* 0 when an output at path writes over none of the command's inputs (common/inputs.h); else the
 * located error is printed and its exit status returned. NULL is no output. */
int cli_output_ok(const char *path);

/* The project's file or directory `rel` ("scenarios/validation/nccl.yaml", "../shared/refdata"),
 * wherever the command runs from: beside the checkout the tpsim binary was built in (the binary
 * is build/tpsim), else under the source directory it was configured from. Writes the path into
 * out and returns it; `rel` itself when neither exists. */
const char *cli_project_path(const char *rel, char *out, size_t len);

/* The plan and sweep commands (cli_plan.c, cli_sweep.c). */
int cli_plan(int argc, char **argv);
/* tpsim import kineto (cli_import.c). */
int cli_import(int argc, char **argv);
int cli_sweep(int argc, char **argv);

/* The calibrate and validate commands (cli_validate.c). */
int cli_calibrate(int argc, char **argv);
int cli_validate(int argc, char **argv);

#endif
