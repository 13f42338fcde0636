/* cliutil.c - helpers shared by the tpsim commands (see cliutil.h). */
#include "cli/cliutil.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#include "platforms/spec.h"

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

int cli_split_words(const char *spec, char *buf, size_t len, char **words, int max)
{
    snprintf(buf, len, "%s", spec);
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    return n;
}

int cli_platform(const char *spec, struct plat_topo *t, struct tps_error *err)
{
    char buf[1024];
    char *words[64];
    int n = cli_split_words(spec, buf, sizeof buf, words, 64);
    if (n == 0) {
        plat_topo_init(t, "");
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "platform", "empty platform");
    }
    return plat_spec_from_args(words[0], n - 1, words + 1, t, err);
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

const char *cli_trace_dir(const char *input, char *buf, size_t len)
{
    struct stat sb;
    snprintf(buf, len, "%s/meta.tps", input);
    if (access(buf, F_OK) == 0) return input;
    snprintf(buf, len, "%s/merged", input);
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode) ? buf : input;
}
