/* pool.c - forked workers, one per item (see pool.h). */
#include "core/pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

long pool_run(long n, int jobs, const struct pool_ops *ops, void *ctx)
{
    long todo = 0, finished = 0, failed = 0, errors = 0, next = 0;
    for (long i = 0; i < n; i++)
        todo += !ops->want || ops->want(i, ctx);
    fflush(NULL);
    pid_t parent = getpid();
    int running = 0;
    while (finished < todo) {
        while (running < jobs && next < n) {
            if (ops->want && !ops->want(next, ctx)) {
                next++;
                continue;
            }
            if (ops->skip && ops->skip(next, ctx)) {
                next++;
                finished++;
                if (ops->progress) ops->progress(finished, todo, failed, errors, ctx);
                continue;
            }
            pid_t pid = fork();
            if (pid == 0) {
                /* a worker dies with the pool: no orphan goes on after a kill */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent) _exit(4);
                ops->work(next, ctx);
                _exit(0);
            }
            if (pid < 0) break;
            running++;
            next++;
        }
        if (running == 0) { /* nothing could be started */
            failed += todo - finished;
            break;
        }
        int status;
        pid_t pid = wait(&status);
        if (pid < 0) {
            if (errno == EINTR) continue;
            failed += todo - finished;
            break;
        }
        running--;
        finished++;
        if (WIFEXITED(status) && WEXITSTATUS(status) == POOL_ITEM_ERROR)
            errors++;
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
        if (ops->progress) ops->progress(finished, todo, failed, errors, ctx);
    }
    return failed;
}
