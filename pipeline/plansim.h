/* plansim.h - the candidates a planner chose to simulate, simulated: the hook (planhook.h) asked
 * of each in order, then those it leaves to this process simulated `jobs` at a time, each in a
 * forked worker (core/pool.h) that hands its row back through shared memory, and the hook told
 * of each result in order. The rows come back as simulating them in turn leaves them: a
 * simulation depends on its candidate alone. Without a hook, a row whose lower bound is at least
 * a better row's simulated time can be left out (pruned), as simulating in turn would.
 */
#ifndef PIPELINE_PLANSIM_H
#define PIPELINE_PLANSIM_H

#include <stddef.h>

#include "common/error.h"
#include "pipeline/planhook.h"

struct plansim {
    void *rows;      /* n rows of `size` bytes each, plain data (pointers are the caller's) */
    int n;           /* the first n rows are the chosen candidates */
    size_t size;     /* of a row */
    size_t desc_off; /* offset of the row's description (char[]) */
    int jobs;        /* simulations at a time (<= 1: in turn, in this process) */
    const struct plan_hook *hook;
    /* simulates row k (a copy of rows[k] in a worker) in place; 0, or an error code with err
     * set */
    int (*simulate)(void *ctx, int k, void *row, struct tps_error *err);
    void *ctx;
    /* Pruning (without a hook): the rows as if simulated in turn, a row left out when its lower
     * bound (a double at bound_off, 0: none) is at least the best simulated time (a double at
     * sim_off) of the rows before it; its int at pruned_off set. `jobs` rows simulate at a time,
     * those an earlier row of theirs prunes losing their simulation: the rows simulated are the
     * same for any jobs. */
    int prune;
    size_t bound_off, sim_off, pruned_off;
};

/* Runs the simulations; how[k] (n entries; NULL: not wanted) gets each row's plan_sim (a pruned
 * row PLAN_SKIP). Returns 0, or the first error in the rows' order (the hook's, a simulation's)
 * with err set. */
int plansim_run(const struct plansim *ps, int *how, struct tps_error *err);

#endif
