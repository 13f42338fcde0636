/* plansim.h - the candidates a planner chose to simulate, simulated: the hook (planhook.h) asked
 * of each in order, then those it leaves to this process simulated `jobs` at a time, each in a
 * forked worker (core/pool.h) that hands its row back through shared memory, and the hook told
 * of each result in order. The rows come back as simulating them in turn leaves them: a
 * simulation depends on its candidate alone.
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
};

/* Runs the simulations; how[k] (n entries; NULL: not wanted) gets each row's plan_sim. Returns 0, or the first
 * error in the rows' order (the hook's, a simulation's) with err set. */
int plansim_run(const struct plansim *ps, int *how, struct tps_error *err);

#endif
