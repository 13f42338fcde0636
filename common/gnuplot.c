/* gnuplot.c - one way to run gnuplot (see gnuplot.h): fork and exec, no shell, so a path with
 * quotes or spaces is passed as it is. */
#include "common/gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int tps_gnuplot_run(const char *script)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int tps_gnuplot_plot(const char *script, const char *stem, int w, int h,
                     void (*body)(FILE *f, void *ctx), void *ctx)
{
    FILE *f = fopen(script, "w");
    if (!f) return -1;
    static const char *const term[2][2] = {{"pngcairo", "png"}, {"svg", "svg"}};
    for (int t = 0; t < 2; t++) {
        fprintf(f, "set terminal %s size %d,%d\nset output '%s.%s'\n", term[t][0], w, h, stem,
                term[t][1]);
        body(f, ctx);
    }
    if (fclose(f) != 0) return -1;
    return tps_gnuplot_run(script) == 0;
}
