/* pool.h - a pool of forked workers, one process per item: how a sweep runs its points.
 *
 * Each item runs in its own child process, so a crash, a SimGrid abort or a leak in one point
 * touches no other; a worker dies with the pool's process (PR_SET_PDEATHSIG), so a killed sweep
 * leaves no orphan writing rows. A worker that exits with a status other than 0 counts as failed.
 */
#ifndef CORE_POOL_H
#define CORE_POOL_H

struct pool_ops {
    int (*want)(long i, void *ctx);  /* whether item i runs (NULL: all) */
    void (*work)(long i, void *ctx); /* in the worker; returning means success (exit 0) */
    /* after each item: finished and to-do counts, failures so far (may be NULL) */
    void (*progress)(long finished, long todo, long failed, void *ctx);
};

/* Runs items 0..n-1 on at most `jobs` workers at a time; returns the number of failed workers
 * (workers that could not be started count as failed too). */
long pool_run(long n, int jobs, const struct pool_ops *ops, void *ctx);

#endif
