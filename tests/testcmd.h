/* testcmd.h - running a shell command from a test and capturing what it prints. Header-only;
 * for tests. */
#ifndef TPSIM_TESTCMD_H
#define TPSIM_TESTCMD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/wait.h>

/* Runs `cmd` with sh; its output (what cmd does not redirect) goes into out. Returns the exit
 * status, or -1 when it died of a signal. */
static inline int testcmd_run(char *out, size_t len, const char *cmd)
{
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f, "%s", cmd);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
