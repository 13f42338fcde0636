/* planhook.h - who simulates the candidates a planner chose to simulate: the planner itself
 * (no hook), or a caller that simulates only its share of them and records what they gave, or
 * fills them from shards that ran elsewhere (`tpsim plan --shard` and `--merge`, cli/plan_shard.c).
 * Both planners (planner.h, jobplan.h) take one in their options.
 */
#ifndef PIPELINE_PLANHOOK_H
#define PIPELINE_PLANHOOK_H

#include "common/error.h"

/* What the planner does with a candidate to simulate. */
enum plan_sim {
    PLAN_SIMULATE, /* simulate it here */
    PLAN_SKIP,     /* leave it unsimulated (another shard's) */
    PLAN_FILLED    /* the hook filled its simulated fields */
};

struct plan_hook {
    /* Before candidate k (from 0, in predicted order) of those to simulate, described as desc;
     * row is its struct planner_row or struct jobplan_row. Returns a plan_sim, or -1 with err
     * set. */
    int (*before)(void *ctx, int k, const char *desc, void *row, struct tps_error *err);
    /* After the planner simulated candidate k (NULL: nothing); nonzero with err set fails. */
    int (*after)(void *ctx, int k, const char *desc, const void *row, struct tps_error *err);
    void *ctx;
    int no_variants; /* a job plan: the best is not simulated again with FP8 and the TP overlap
                        toggled (a shard does not know the best) */
};

#endif
