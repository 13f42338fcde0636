/* pool.h - a pool of forked workers, one process per item: how a sweep runs its points.
 *
 * Each item runs in its own child process, so a crash, a SimGrid abort or a leak in one point
 * touches no other; a worker dies with the pool's process (PR_SET_PDEATHSIG), so a killed sweep
 * leaves no orphan writing rows. A worker that exits with POOL_ITEM_ERROR finished its item, which
 * failed (a sweep point whose scenario is invalid: its row says why); any other status but 0, or a
 * signal, counts as a failed worker.
 */
#ifndef CORE_POOL_H
#define CORE_POOL_H

#define POOL_ITEM_ERROR 5

struct pool_ops {
    int (*want)(long i, void *ctx); /* whether item i runs (NULL: all) */
    /* asked in this process when item i's turn comes (NULL: never): whether it is no longer
     * needed; a skipped item counts as finished, its worker is not started */
    int (*skip)(long i, void *ctx);
    void (*work)(long i, void *ctx); /* in the worker; returning means success (exit 0) */
    /* after each item: finished and to-do counts, failed workers and failed items so far (may be
     * NULL) */
    void (*progress)(long finished, long todo, long failed, long errors, void *ctx);
};

/* Runs items 0..n-1 on at most `jobs` workers at a time; returns the number of failed workers
 * (workers that could not be started count as failed too). */
long pool_run(long n, int jobs, const struct pool_ops *ops, void *ctx);

#endif
