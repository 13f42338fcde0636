/* pruned.h - what both planners' pruning tests check (test_planner.c, test_jobplan.c): a device
 * slowed until its kernels dominate, and two plans of it (one core, two) agreeing row by row on
 * what was pruned and simulated, no simulation below its bound. Header-only; for tests. */
#ifndef TPSIM_TEST_PRUNED_H
#define TPSIM_TEST_PRUNED_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "models/device.h"

/* Device d 20 times slower, at its rates rather than a measured GEMM table. */
static inline void pruned_slow_device(struct mdl_device *d)
{
    for (int k = 0; k < MDL_NDTYPES; k++)
        d->peak_flops[k] *= 0.05;
    d->hbm_Bps *= 0.05;
    d->gemm_table = NULL;
}

/* A plan row as the check reads it (planner_row and jobplan_row alike). */
struct pruned_row {
    const char *desc;
    int pruned;
    double simulated_s, bound_s;
};

/* Rows a and b (n each, sorted as the planners return them) agree; every row has a bound, every
 * simulated one at least its bound, every pruned one's at least the best simulated time (a[0]).
 * Returns how many were simulated. */
static inline int pruned_check(const struct pruned_row *a, const struct pruned_row *b, int n)
{
    int simulated = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(eq(int, strcmp(a[i].desc, b[i].desc), 0), "%d: %s | %s", i, a[i].desc, b[i].desc);
        cr_assert(eq(int, a[i].pruned, b[i].pruned), "%s", a[i].desc);
        cr_assert(eq(dbl, a[i].simulated_s, b[i].simulated_s), "%s", a[i].desc);
        cr_assert(gt(dbl, a[i].bound_s, 0), "%s", a[i].desc);
        if (a[i].simulated_s > 0) {
            simulated++;
            cr_assert(le(dbl, a[i].bound_s, a[i].simulated_s), "%s: bound %g, simulated %g",
                      a[i].desc, a[i].bound_s, a[i].simulated_s);
        }
        if (a[i].pruned) cr_assert(ge(dbl, a[i].bound_s, a[0].simulated_s), "%s", a[i].desc);
    }
    return simulated;
}

/* Two plans' views (one core, two; n rows each) and their pruned counts agree, some pruned:
 * returns how many were simulated (pruned_check). */
static inline int pruned_agree(struct pruned_row *const view[2], const int n[2],
                               const int pruned[2])
{
    cr_assert(gt(int, pruned[0], 0));
    cr_assert(eq(int, pruned[1], pruned[0]));
    cr_assert(eq(int, n[0], n[1]));
    return pruned_check(view[0], view[1], n[0]);
}

#endif
