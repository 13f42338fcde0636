/* lowered.h - helpers the model tests share: one layer of one micro-batch lowered on an H100
 * (no framework: fused kernels, no host), and sums over a rank's ops by name. Each test file
 * includes it once; the functions are static. */
#ifndef TESTS_MODELS_LOWERED_H
#define TESTS_MODELS_LOWERED_H

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "models/strategy.h"

/* One layer of one micro-batch of m under st into *p (asserts it lowers). */
static void lower(const struct mdl_strategy *st, const struct mdl_model *m, struct mdl_program *p)
{
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &dev), 0));
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(st, m, &dev, NULL, 1, 1, p, &err), 0), "%s", err.msg);
}

/* Sums over rank r's ops whose name starts with `prefix`: their count, bytes and FLOPs. */
static int sum_ops(const struct mdl_program *p, int r, const char *prefix, double *bytes,
                   double *flop)
{
    int n = 0;
    *bytes = *flop = 0;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *o = &p->ranks[r].ops[i];
        if (strncmp(p->names[o->name], prefix, strlen(prefix))) continue;
        n++;
        *bytes += o->bytes;
        *flop += o->flop;
    }
    return n;
}

#endif
