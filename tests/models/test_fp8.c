/* test_fp8.c - Transformer Engine's FP8 and TP communication overlap: an FP8 GEMM's time from
 * the FP8 table, the cast kernels and FP8 all-gathers, the ring-exchange all-gather + GEMM and the
 * pipelined GEMM + reduce-scatter against hand-computed ones, memory with the FP8 copies. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>

#include "lowered.h"
#include "models/collective.h"
#include "models/compute.h"
#include "models/job.h"

#define FP8_TABLE TPSIM_REFDATA "/gemm/h100_sxm_azure_ndv5_cublaslt_fp8.csv"

/* The H100 and H200 presets' FP8 curves are the fits of their FP8 tables, and the H100's prices
 * its large shapes within 6% (8192^3: 1290 TFLOP/s measured). */
Test(fp8, the_h100_fp8_gemm_curve_is_the_fp8_tables_fit)
{
    struct mdl_device d, fit;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &d), 0));
    fit = d;
    struct tps_error err = {0};
    struct mdl_calib c;
    cr_assert(eq(int, mdl_compute_calibrate(&fit, MDL_FP8, FP8_TABLE, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, c.rows, 9));
    cr_assert(lt(dbl, fabs(fit.fp8_gemm_eff / d.fp8_gemm_eff - 1), 1e-3), "%g", fit.fp8_gemm_eff);
    cr_assert(lt(dbl, fabs(fit.fp8_gemm_overhead_s / d.fp8_gemm_overhead_s - 1), 1e-3));
    /* the BF16 curve is untouched by an FP8 fit */
    cr_assert(eq(dbl, fit.gemm_eff_max, d.gemm_eff_max));
    static const double shape[][4] = {{8192, 8192, 8192, 1290.1}, {6144, 12288, 12288, 1351.4}};
    for (int i = 0; i < 2; i++) {
        double t = mdl_gemm_time(&d, MDL_FP8, 1, shape[i][0], shape[i][1], shape[i][2]);
        double tf = mdl_gemm_flop(1, shape[i][0], shape[i][1], shape[i][2]) / t / 1e12;
        cr_assert(lt(dbl, fabs(tf / shape[i][3] - 1), 0.06), "%g TFLOP/s", tf);
    }
    struct mdl_device h200, fit200;
    cr_assert(eq(int, mdl_device_preset("H200", &h200), 0));
    fit200 = h200;
    cr_assert(eq(int,
                 mdl_compute_calibrate(&fit200, MDL_FP8,
                                       TPSIM_REFDATA "/gemm/h200_sxm_azure_ndv5_cublaslt_fp8.csv",
                                       &c, &err),
                 0),
              "%s", err.msg);
    cr_assert(lt(dbl, fabs(fit200.fp8_gemm_eff / h200.fp8_gemm_eff - 1), 1e-3));
    cr_assert(lt(dbl, fabs(fit200.fp8_gemm_overhead_s / h200.fp8_gemm_overhead_s - 1), 1e-3));
    /* FP8 needs FP8 tensor cores: none on the A100 */
    struct mdl_device a;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &a), 0));
    cr_assert(eq(dbl, a.peak_flops[MDL_FP8], 0));
}

static struct mdl_model gpt(bool fp8)
{
    struct mdl_model m = {0};
    cr_assert(eq(int, mdl_model_preset("gpt3-175b", &m), 0));
    m.vocab = 0;
    m.fp8 = fp8;
    return m;
}

static struct mdl_strategy sp4(bool overlap)
{
    return (struct mdl_strategy){.kind = MDL_STRAT_1D,
                                 .tp = 4,
                                 .sequence_parallel = true,
                                 .async_grad_allreduce = true,
                                 .chunks = 1,
                                 .tp_comm_overlap = overlap};
}

/* FP8: the linear GEMMs at the FP8 rate with the same FLOPs, one cast-transpose per linear each
 * way, the inputs' all-gathers at half the bytes; the attention core stays 16-bit. */
Test(fp8, fp8_linears_cast_their_inputs_and_gather_them_in_one_byte)
{
    struct mdl_model mb = gpt(false), m8 = gpt(true);
    struct mdl_strategy st = sp4(false);
    struct mdl_program pb = {0}, p8 = {0};
    lower(&st, &mb, &pb);
    lower(&st, &m8, &p8);
    double bb, fb, b8, f8;
    cr_assert(eq(int, sum_ops(&pb, 0, "qkv", &bb, &fb), sum_ops(&p8, 0, "qkv", &b8, &f8) - 2));
    /* qkv's forward cast and its gradient's: the two more ops */
    cr_assert(eq(dbl, sum_ops(&p8, 0, "qkv_fp8_cast", &b8, &f8), 1));
    double s = 2048, h = 12288, t = 4;
    cr_assert(eq(dbl, b8, s / t * h * 4)); /* the rank's share: read 2 bytes, write 1 + 1 */
    cr_assert(eq(int, sum_ops(&p8, 0, "fc2_fp8_cast", &b8, &f8), 1));
    cr_assert(eq(dbl, b8, s * 4 * h / t * 4));
    /* every linear's forward input and output gradient: 8 casts */
    int casts = 0;
    for (int i = 0; i < p8.ranks[0].nops; i++)
        casts += strstr(p8.names[p8.ranks[0].ops[i].name], "fp8_cast") != NULL;
    cr_assert(eq(int, casts, 8));
    cr_assert(eq(int, sum_ops(&pb, 0, "ag_attn", &bb, &fb), sum_ops(&p8, 0, "ag_attn", &b8, &f8)));
    /* ag_attn (forward, FP8) and ag_attn_input_bwd (FP8) halve; ag_attn_bwd (the gradient) not */
    cr_assert(eq(dbl, b8, bb - (s * h * 2) / 2 * 2), "%g %g", b8, bb);
    /* same FLOPs, less time in the GEMMs */
    double tb = 0, t8 = 0, flb = 0, fl8 = 0;
    for (int i = 0; i < pb.ranks[0].nops; i++) {
        const struct mdl_op *o = &pb.ranks[0].ops[i];
        if (o->kind == MDL_OP_GEMM) tb += o->dur_s, flb += o->flop;
    }
    for (int i = 0; i < p8.ranks[0].nops; i++) {
        const struct mdl_op *o = &p8.ranks[0].ops[i];
        if (o->kind == MDL_OP_GEMM) t8 += o->dur_s, fl8 += o->flop;
    }
    cr_assert(eq(dbl, flb, fl8));
    cr_assert(lt(dbl, t8, 0.7 * tb), "%g vs %g", t8, tb);
    mdl_program_release(&pb);
    mdl_program_release(&p8);
}

/* The index of rank 0's op named `name` at occurrence k, or -1. */
static int op_at(const struct mdl_program *p, const char *name, int k)
{
    for (int i = 0; i < p->ranks[0].nops; i++)
        if (!strcmp(p->names[p->ranks[0].ops[i].name], name) && k-- == 0) return i;
    return -1;
}

/* Whether op o waits for op dep. */
static bool waits_on(const struct mdl_op *o, int dep)
{
    for (int k = 0; k < o->ndeps; k++)
        if (o->deps[k] == dep) return true;
    return false;
}

/* GPT-3 175B's TP 4 layer with sequence parallelism and st's overlap, lowered on H100s (*dev). */
static void lower_overlap(struct mdl_strategy st, struct mdl_program *p, struct mdl_device *dev)
{
    struct mdl_model m = gpt(false);
    lower(&st, &m, p);
    cr_assert(eq(int, mdl_device_preset("H100-SXM", dev), 0));
}

/* TP overlap: QKV's all-gather + GEMM by ring exchange (tp GEMMs of s/tp tokens, each after the
 * chunk it computes on arrives, tp - 1 sends of a rank's share), and the projection's GEMM +
 * reduce-scatter in 4 pieces whose GEMMs run on 116 of the 132 SMs. */
Test(fp8, tp_overlap_ring_exchange_and_pipeline_match_hand_computed_schedules)
{
    struct mdl_program p = {0};
    struct mdl_device dev;
    lower_overlap(sp4(true), &p, &dev);
    double s = 2048, h = 12288, t = 4, q = 3 * h, bytes, flop;
    cr_assert(eq(int, sum_ops(&p, 0, "ring_ag_attn_send", &bytes, &flop), 3));
    cr_assert(eq(dbl, bytes, 3 * s / t * h * 2));
    /* no NCCL all-gather before QKV: only the backward's bulk one of its input */
    cr_assert(eq(int, sum_ops(&p, 0, "ag_attn", &bytes, &flop), 1));
    cr_assert(eq(int, sum_ops(&p, 0, "ag_attn_input_bwd", &bytes, &flop), 1));
    double ring_gemm = mdl_gemm_time(&dev, MDL_BF16, 1, s / t, q / t, h) * 132 / 131;
    for (int i = 0; i < 4; i++) {
        int g = op_at(&p, "qkv", i);
        cr_assert(ge(int, g, 0));
        const struct mdl_op *o = &p.ranks[0].ops[g];
        cr_assert(ieee_ulp_eq(dbl, o->dur_s, ring_gemm, 4), "%g %g", o->dur_s, ring_gemm);
        if (i == 0) continue;
        /* GEMM i waits for the chunk received in step i - 1 */
        cr_assert(waits_on(o, op_at(&p, "ring_ag_attn_recv", i - 1)), "qkv piece %d", i);
    }
    double pipe_gemm = mdl_gemm_time(&dev, MDL_BF16, 1, s / 4, h, h / t) * 132 / 116;
    /* the four pieces make the whole reduce-scatter; then the backward's ar_attn_bwd */
    cr_assert(eq(int, sum_ops(&p, 0, "ar_attn", &bytes, &flop), 4 + 1));
    cr_assert(eq(dbl, bytes, s * h * 2 + s * h * 2));
    for (int i = 0; i < 4; i++) {
        const struct mdl_op *o = &p.ranks[0].ops[op_at(&p, "proj", i)];
        cr_assert(ieee_ulp_eq(dbl, o->dur_s, pipe_gemm, 4), "%g %g", o->dur_s, pipe_gemm);
    }
    /* bulk: QKV's data and weight gradients beside the all-gather and reduce-scatter */
    const struct mdl_op *dg = &p.ranks[0].ops[op_at(&p, "qkv_dgrad", 0)];
    cr_assert(
        ieee_ulp_eq(dbl, dg->dur_s, mdl_gemm_time(&dev, MDL_BF16, 1, s, h, q / t) * 132 / 116, 4));
    mdl_program_release(&p);
}

/* PyTorch's async TP: QKV's all-gather + GEMM as the ring exchange but on every SM (the copy
 * engines move the shards); the projection's GEMM + reduce-scatter as tp GEMMs of s/tp tokens,
 * each other rank's pushed to it (tp - 1 sends of a shard), then the rank's tp partial shards
 * summed by one memory-bound kernel; QKV's data gradient the same way in the backward, no NCCL
 * reduce-scatter left but none at all. */
Test(fp8, async_tp_pushes_each_shard_and_sums_them_as_hand_computed)
{
    struct mdl_strategy st = sp4(false);
    st.async_tp = true;
    struct mdl_program p = {0};
    struct mdl_device dev;
    lower_overlap(st, &p, &dev);
    double s = 2048, h = 12288, t = 4, q = 3 * h, bytes, flop;
    cr_assert(eq(int, sum_ops(&p, 0, "ring_ag_attn_send", &bytes, &flop), 3));
    cr_assert(eq(dbl, bytes, 3 * s / t * h * 2));
    double ag_gemm = mdl_gemm_time(&dev, MDL_BF16, 1, s / t, q / t, h); /* no SM held */
    for (int i = 0; i < 4; i++)
        cr_assert(ieee_ulp_eq(dbl, p.ranks[0].ops[op_at(&p, "qkv", i)].dur_s, ag_gemm, 4));
    /* the projection: 4 GEMMs of s/4 tokens, 3 pushes of a shard, one sum of 4 shards */
    double rs_gemm = mdl_gemm_time(&dev, MDL_BF16, 1, s / t, h, h / t);
    for (int i = 0; i < 4; i++) {
        const struct mdl_op *o = &p.ranks[0].ops[op_at(&p, "proj", i)];
        cr_assert(ieee_ulp_eq(dbl, o->dur_s, rs_gemm, 4), "%g %g", o->dur_s, rs_gemm);
    }
    cr_assert(eq(int, sum_ops(&p, 0, "push_ar_attn_send", &bytes, &flop), 3));
    cr_assert(eq(dbl, bytes, 3 * s / t * h * 2));
    /* its sum and the backward's (QKV's data gradient, h wide too): 4 shards read, one written */
    cr_assert(eq(int, sum_ops(&p, 0, "sum_ar_attn", &bytes, &flop), 2));
    cr_assert(eq(dbl, bytes, 2 * (t + 1) * s / t * h * 2));
    /* the sum waits for the last shard pushed to this rank */
    const struct mdl_op *sum = &p.ranks[0].ops[op_at(&p, "sum_ar_attn", 0)];
    cr_assert(waits_on(sum, op_at(&p, "push_ar_attn_recv", 2)));
    /* QKV's data gradient pushed the same way; no NCCL reduce-scatter of the TP layer left */
    cr_assert(eq(int, sum_ops(&p, 0, "push_ar_attn_bwd_send", &bytes, &flop), 3));
    cr_assert(eq(int, sum_ops(&p, 0, "ar_attn", &bytes, &flop), 0)); /* and ar_attn_bwd */
    /* the input's all-gather for the weight gradient stays NCCL's, beside the data gradient */
    cr_assert(eq(int, sum_ops(&p, 0, "ag_attn_input_bwd", &bytes, &flop), 1));
    mdl_program_release(&p);
}

/* Memory: the FP8 copies add 2 bytes per weight; the linears' saved inputs shrink to one byte
 * (QKV's and FC1's 2sbh/t, the projection's 2sbh/t, FC2's 2sbf/t each halve). */
Test(fp8, memory_holds_the_fp8_copies_and_fp8_saved_inputs)
{
    struct mdl_model mb = gpt(false), m8 = gpt(true);
    struct mdl_strategy st = sp4(false);
    struct mdl_memory b, f;
    mdl_strategy_memory(&st, &mb, NULL, 96, &b);
    mdl_strategy_memory(&st, &m8, NULL, 96, &f);
    double params = 96 * mdl_strategy_layer_params(&st, &mb);
    cr_assert(ieee_ulp_eq(dbl, f.weights - b.weights, 2 * params, 8));
    cr_assert(eq(dbl, f.gradients, b.gradients));
    cr_assert(eq(dbl, f.optimizer, b.optimizer));
    double s = 2048, h = 12288, t = 4, ff = 4 * h;
    double saved = 96 * (s * h * 2 / t + s * h / t + s * ff / t);
    cr_assert(ieee_ulp_eq(dbl, b.activations - f.activations, saved, 64), "%g %g",
              b.activations - f.activations, saved);
}

/* fp8_param_gather (Megatron-LM's --fp8-param-gather): the distributed optimizer's all-gather
 * moves the layers' weights in one byte, the weight cast after the step only transposes the
 * gathered FP8 weight (2 B per parameter instead of 4), and the 16-bit copy of the layers'
 * weights is gone (2 B per parameter less memory). It needs FP8 and the distributed optimizer. */
/* A 4-layer FP8 GPT-3 175B job of 2 stages and 2 replicas at TP 4 with sequence parallelism on
 * H100s, 1F1B over `micro_batches`. */
static struct mdl_job two_stage_fp8(struct mdl_model *m, struct mdl_strategy *st,
                                    struct mdl_device *dev, int micro_batches)
{
    *m = gpt(true);
    m->layers = 4;
    *st = sp4(false);
    cr_assert(eq(int, mdl_device_preset("H100-SXM", dev), 0));
    return (struct mdl_job){.pp = 2,
                            .dp = 2,
                            .schedule = MDL_SCHED_1F1B,
                            .virtual_stages = 1,
                            .micro_batches = micro_batches};
}

/* j lowered (replicas as `how`) into *p, which must succeed. */
static void lower_job(const struct mdl_job *j, const struct mdl_strategy *st,
                      const struct mdl_model *m, const struct mdl_device *dev,
                      enum mdl_replicas how, struct mdl_program *p)
{
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_lower(j, st, m, dev, NULL, NULL, how, p, &err), 0), "%s", err.msg);
}

Test(fp8, fp8_param_gather_moves_one_byte_per_weight)
{
    struct mdl_model m;
    struct mdl_strategy st;
    struct mdl_device dev;
    struct mdl_job j = two_stage_fp8(&m, &st, &dev, 2);
    j.zero = 1;
    double params = 2 * mdl_strategy_layer_params(&st, &m), ag[2], cast[2], flop;
    struct mdl_memory mem[2];
    for (int k = 0; k < 2; k++) {
        j.fp8_param_gather = k;
        struct tps_error err = {0};
        struct mdl_program p;
        cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), 0), "%s", err.msg);
        lower_job(&j, &st, &m, &dev, MDL_REPLICAS_FULL, &p);
        cr_assert(eq(int, sum_ops(&p, 0, "ag_params_dp", &ag[k], &flop), 1));
        cr_assert(eq(int, sum_ops(&p, 0, "fp8_weight_cast", &cast[k], &flop), 1));
        mdl_program_release(&p);
        mdl_job_memory(&j, &st, &m, NULL, &mem[k]);
    }
    cr_assert(ieee_ulp_eq(dbl, ag[0], 2 * params, 8), "%g %g", ag[0], 2 * params);
    cr_assert(ieee_ulp_eq(dbl, ag[1], params, 8), "%g %g", ag[1], params);
    cr_assert(ieee_ulp_eq(dbl, cast[0], 4 * params, 8));
    cr_assert(ieee_ulp_eq(dbl, cast[1], 2 * params, 8));
    cr_assert(ieee_ulp_eq(dbl, mem[0].weights - mem[1].weights, 2 * params, 8));
    cr_assert(eq(dbl, mem[0].gradients, mem[1].gradients));
    struct tps_error err = {0};
    j.zero = 0;
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "fp8_param_gather"));
    j.zero = 1;
    m.fp8 = false;
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "fp8_param_gather"));
}

/* Delayed scaling (TE's DelayedScaling, reduce_amax): after each chunk's forward (the exit of the
 * fp8_autocast region around its transformer block) and its backward (in the backward of its
 * first FP8 module), the amaxes of its GEMMs are all-reduced over Megatron-LM's amax-reduction
 * group, a stage's tp x cp x dp GPUs (the TP group with tp_only_amax_red), and what follows waits
 * for it. 4 bytes an amax: 3 per GEMM forward, 2 backward, 4 GEMMs a layer. 16-bit training has
 * none, and refuses tp_only_amax_red. */
Test(fp8, delayed_scaling_reduces_the_amaxes_after_every_chunk)
{
    struct mdl_model m;
    struct mdl_strategy st;
    struct mdl_device dev;
    struct mdl_job j = two_stage_fp8(&m, &st, &dev, 3);
    for (int tp_only = 0; tp_only < 2; tp_only++) {
        j.tp_only_amax_red = tp_only;
        struct mdl_program p;
        lower_job(&j, &st, &m, &dev, MDL_REPLICAS_FULL, &p);
        double bytes, flop;
        /* a chunk of 2 layers: 8 GEMMs, 24 amaxes forward and 16 backward, per micro-batch */
        cr_assert(eq(int, sum_ops(&p, 0, "ar_fp8_amax_fwd", &bytes, &flop), 3));
        cr_assert(eq(dbl, bytes, 3 * 4.0 * 24));
        cr_assert(eq(int, sum_ops(&p, 0, "ar_fp8_amax_bwd", &bytes, &flop), 3));
        cr_assert(eq(dbl, bytes, 3 * 4.0 * 16));
        const struct mdl_rank *r = &p.ranks[0];
        for (int i = 0; i < r->nops; i++) {
            const struct mdl_op *o = &r->ops[i];
            if (strncmp(p.names[o->name], "ar_fp8_amax", 11)) continue;
            /* over the stage's 8 GPUs (the TP group's 4), after the micro-batch's chunk */
            const struct mdl_group *g = &p.groups[o->group];
            cr_assert(eq(int, g->n, tp_only ? 4 : 8));
            for (int k = 0; k < g->n; k++) {
                int s, d, t;
                mdl_job_coords(&j, &st, g->ranks[k], &s, &d, &t);
                cr_assert(eq(int, s, 0));
                if (tp_only) cr_assert(eq(int, d, 0));
            }
            cr_assert(eq(int, o->kind, MDL_OP_ALL_REDUCE));
            cr_assert(eq(int, o->gran, MDL_GRAN_LATENCY)); /* a few bytes: its latency */
            cr_assert(eq(int, o->ndeps, 1));
            cr_assert(eq(int, r->ops[o->deps[0]].mb, o->mb));
            int waited = 0; /* what comes next waits for it */
            for (int k = i + 1; k < r->nops; k++)
                for (int q = 0; q < r->ops[k].ndeps; q++)
                    waited += r->ops[k].deps[q] == i;
            cr_assert(gt(int, waited, 0), "%s", p.names[o->name]);
        }
        mdl_program_release(&p);
    }
    /* a folded replica's shadows leave it to the GPUs simulated in full */
    j.tp_only_amax_red = false;
    struct tps_error err = {0};
    struct mdl_program sh;
    lower_job(&j, &st, &m, &dev, MDL_REPLICAS_SHARED, &sh);
    int shadows = 0;
    for (int r = 0; r < sh.nranks; r++) {
        double bytes, flop;
        int n = sum_ops(&sh, r, "ar_fp8_amax", &bytes, &flop);
        cr_assert(eq(int, n, sh.shadow &&sh.shadow[r] ? 0 : 6), "rank %d", r);
        shadows += sh.shadow && sh.shadow[r];
    }
    cr_assert(gt(int, shadows, 0));
    mdl_program_release(&sh);
    j.tp_only_amax_red = true;
    m.fp8 = false;
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "tp_only_amax_red"));
    j.tp_only_amax_red = false;
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), 0));
    struct mdl_program p;
    lower_job(&j, &st, &m, &dev, MDL_REPLICAS_FULL, &p);
    double bytes, flop;
    cr_assert(eq(int, sum_ops(&p, 0, "ar_fp8_amax", &bytes, &flop), 0));
    mdl_program_release(&p);
}
