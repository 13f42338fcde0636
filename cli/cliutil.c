/* cliutil.c - helpers shared by the tpsim commands (see cliutil.h). */
#include "cli/cliutil.h"

#include <jansson.h>
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

int cli_write_json(json_t *j, const char *path, const char *cmd)
{
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
