/* cliutil.c - helpers shared by the tpsim commands (see cliutil.h). */
#include "cli/cliutil.h"

#include "common/ydoc.h"
#include "common/inputs.h"
#include "core/locate.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

int cli_report_error(const struct tps_error *err)
{
    char buf[1400];
    tps_error_format(err, buf, sizeof buf);
    fprintf(stderr, "tpsim: %s\n", buf);
    return err->code == TPS_ESIM ? CLI_EXIT_SIM : CLI_EXIT_INPUT;
}

int cli_report_error_in(const char *scenario, struct tps_error *err)
{
    scn_error_locate(scenario, err);
    return cli_report_error(err);
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "tpsim %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'tpsim %s --help'.\n", cmd);
    return CLI_EXIT_INPUT;
}

int cli_is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* The --set assignments of the command line (argv's strings), registered by cli_sets_apply. */
static const char *sets[TPS_YDOC_MAX_SETS];
static int nsets;

int cli_sets_given(void)
{
    return nsets;
}

const char *cli_set_at(int i)
{
    return i >= 0 && i < nsets ? sets[i] : NULL;
}

int cli_sets_apply(const char *path)
{
    struct tps_error err = {0};
    for (int i = 0; i < nsets; i++)
        if (tps_ydoc_override(path, sets[i], &err)) return cli_report_error(&err);
    return 0;
}

int cli_parse(int argc, char **argv, int first, const char *cmd, const char *help,
              const char *shorts, const struct option *longs, cli_option_fn on, void *ctx,
              const char **pos, int maxpos, int *npos)
{
    char sopt[64];
    snprintf(sopt, sizeof sopt, ":h%s", shorts);
    struct option lopt[32];
    int nl = 0;
    for (; longs && longs[nl].name && nl < 30; nl++)
        lopt[nl] = longs[nl];
    lopt[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    lopt[nl] = (struct option){0};
    *npos = 0;
    /* getopt_long reads from argv[optind]; the command's own words come before `first` */
    int gargc = argc - first + 1;
    char **gargv = argv + first - 1;
    opterr = 0;
    optind = 0; /* 0: full reinitialisation (GNU), since commands parse more than once */
    for (;;) {
        int li = -1, c = getopt_long(gargc, gargv, sopt, lopt, &li);
        if (c == -1) break;
        const char *as = gargv[optind - 1 < gargc ? optind - 1 : gargc - 1];
        if (c == 'h') {
            fputs(help, stdout);
            return CLI_HELP_SHOWN;
        }
        if (c == ':') return cli_usage_error(cmd, "option '%s' needs a value", as);
        if (c == '?') {
            char name[64];
            if (optopt && strncmp(as, "--", 2) != 0)
                snprintf(name, sizeof name, "-%c", optopt);
            else
                snprintf(name, sizeof name, "%.*s", (int)strcspn(as, "="), as);
            return cli_usage_error(cmd, "unknown option '%s'", name);
        }
        if (c == CLI_OPT_SET) {
            if (nsets == TPS_YDOC_MAX_SETS)
                return cli_usage_error(cmd, "more than %s --set options", "32");
            sets[nsets++] = optarg;
            continue;
        }
        int rc = on ? on(c, optarg, ctx) : 0;
        if (rc) return rc;
    }
    for (int i = optind; i < gargc; i++) {
        if (*npos == maxpos) return cli_usage_error(cmd, "unexpected argument '%s'", gargv[i]);
        pos[(*npos)++] = gargv[i];
    }
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < lo || n > hi) {
        char fmt[96];
        snprintf(fmt, sizeof fmt, "bad %s '%%s' (%ld to %ld)", opt, lo, hi);
        return cli_usage_error(cmd, fmt, v);
    }
    *out = n;
    return 0;
}

int cli_output_ok(const char *path)
{
    struct tps_error err = {0};
    return path && tps_output_check(path, &err) ? cli_report_error(&err) : 0;
}

int cli_write_json(json_t *j, const char *path, const char *cmd)
{
    int rc = cli_output_ok(path);
    if (rc) {
        json_decref(j);
        return rc;
    }
    int ok = j && json_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) == 0;
    json_decref(j);
    if (ok) return 0;
    fprintf(stderr, "tpsim %s: %s: cannot write JSON\n", cmd, path);
    return CLI_EXIT_INPUT;
}

#ifndef TPSIM_SOURCE_DIR
#define TPSIM_SOURCE_DIR "."
#endif

const char *cli_project_path(const char *rel, char *out, size_t len)
{
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 2; up++) { /* .../build/tpsim -> ... */
            char *slash = strrchr(exe, '/');
            if (slash) *slash = '\0';
        }
        snprintf(out, len, "%s/%s", exe, rel);
        if (access(out, R_OK) == 0) return out;
    }
    snprintf(out, len, "%s/%s", TPSIM_SOURCE_DIR, rel);
    if (access(out, R_OK) == 0) return out;
    snprintf(out, len, "%s", rel);
    return out;
}
