/* test_strategy.c - 1D TP lowering: communication volume and GEMM FLOPs in closed form. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "models/strategy.h"

TestSuite(strategy);

static struct mdl_model model(void)
{
    struct mdl_model m;
    mdl_model_preset("gpt3-13b", &m);
    m.micro_batch = 2;
    return m;
}

/* Per-device ring volume (elements) of rank r, by phase. */
static double volume(const struct mdl_program *p, int r, int dtype_bytes)
{
    double v = 0;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *op = &p->ranks[r].ops[i];
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind))
            v += mdl_coll_ring_bytes((enum mdl_op_kind)op->kind, p->groups[op->group].n, op->bytes);
    }
    return v / dtype_bytes;
}

static void check_volume(int d, bool sp)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {MDL_STRAT_1D, d, sp, true};
    struct mdl_program p;
    struct tps_error err = {0};
    int layers = 3;
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, layers, 1, &p, &err), 0), "%s", err.msg);
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden;
    double expect = layers * 8.0 * b * s * h * (d - 1) / d;
    for (int r = 0; r < d; r++)
        cr_assert(ieee_ulp_eq(dbl, volume(&p, r, 2), expect, 8), "d=%d sp=%d rank %d", d, sp, r);
    mdl_program_release(&p);
}

Test(strategy, comm_volume_per_layer_is_8bsh_d_minus_1_over_d)
{
    for (int d = 1; d <= 8; d *= 2)
        check_volume(d, false);
}

Test(strategy, sequence_parallel_keeps_the_volume)
{
    for (int d = 2; d <= 8; d *= 2)
        check_volume(d, true);
}

Test(strategy, gemm_flops_per_layer_are_exact)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {MDL_STRAT_1D, 8, false, true};
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, 1, 1, &p, &err), 0));
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    double gemm_fwd = 0, gemm_bwd = 0, attn_fwd = 0, attn_bwd = 0;
    for (int r = 0; r < p.nranks; r++) {
        for (int i = 0; i < p.ranks[r].nops; i++) {
            const struct mdl_op *op = &p.ranks[r].ops[i];
            bool fwd = op->phase == MDL_PHASE_FWD;
            if (op->kind == MDL_OP_GEMM) *(fwd ? &gemm_fwd : &gemm_bwd) += op->flop;
            if (op->kind == MDL_OP_ATTN) *(fwd ? &attn_fwd : &attn_bwd) += op->flop;
        }
    }
    /* QKV 2bs*h*3h + proj 2bs*h*h + FC1 2bs*h*f + FC2 2bs*f*h, over all 8 ranks */
    double linear = 2 * b * s * (3 * h * h + h * h + 2 * h * f);
    cr_assert(eq(dbl, gemm_fwd, linear));
    cr_assert(eq(dbl, gemm_bwd, 2 * linear));
    cr_assert(eq(dbl, attn_fwd, 4 * b * s * s * h));
    cr_assert(eq(dbl, attn_bwd, 8 * b * s * s * h));
    cr_assert(eq(dbl, gemm_fwd + attn_fwd, mdl_model_layer_fwd_flop(&m)));
    mdl_program_release(&p);
}

Test(strategy, refuses_tp_not_dividing_heads)
{
    struct mdl_model m = model(); /* 40 heads */
    struct mdl_strategy st = {MDL_STRAT_1D, 16, false, true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "tp"));
}

Test(strategy, backward_grad_allreduce_overlaps_wgrad_only_when_async)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    for (int async = 0; async <= 1; async++) {
        struct mdl_strategy st = {MDL_STRAT_1D, 4, false, async};
        struct mdl_program p;
        struct tps_error err = {0};
        mdl_strategy_lower(&st, &m, &dev, 1, 1, &p, &err);
        int ar = -1, found = 0;
        for (int i = 0; i < p.ranks[0].nops; i++) {
            const struct mdl_op *op = &p.ranks[0].ops[i];
            if (!strcmp(p.names[op->name], "ar_mlp_bwd")) ar = i;
            if (!strcmp(p.names[op->name], "fc1_wgrad")) {
                found = 1;
                bool waits = op->ndeps == 1 && op->deps[0] == ar;
                cr_assert(eq(int, waits, !async));
            }
        }
        cr_assert(found);
        mdl_program_release(&p);
    }
}
