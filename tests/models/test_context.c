/* test_context.c - context parallelism against its closed forms: the bytes of a ring step and
 * of a layer for each cp_comm_type, every rank's attention FLOPs under the balanced causal split
 * (equal, and 1/cp of the attention without it), the activations divided by cp, the model FLOPs
 * of a job that do not move with cp, and the checks. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/job.h"
#include "models/strategy.h"
#include "lowered.h"

TestSuite(context);

/* Llama 3 8B (32 heads, 8 key/value heads, head dim 128) at 8,192 tokens, 2 layers. */
static struct mdl_model model(void)
{
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("llama3-8b", &m), 0));
    m.seq = 8192;
    m.layers = 2;
    return m;
}

static struct mdl_strategy strategy(int tp, int cp, enum mdl_cp_comm comm)
{
    return (struct mdl_strategy){.kind = MDL_STRAT_1D,
                                 .tp = tp,
                                 .atp = {.d1 = tp, .d2 = 1},
                                 .async_grad_allreduce = true,
                                 .cp = cp,
                                 .cp_comm = comm};
}

static bool close_to(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(b);
}

Test(context, a_ring_step_carries_the_keys_and_values_of_a_ranks_tokens)
{
    struct mdl_model m = model();
    for (int tp = 1; tp <= 4; tp *= 2)
        for (int cp = 2; cp <= 8; cp *= 2) {
            struct mdl_strategy st = strategy(tp, cp, MDL_CP_P2P);
            /* K and V: 2 x b x s/cp tokens x 8 heads / tp x 128, in bf16 */
            double want = 2.0 * 1 * (8192.0 / cp) * (8.0 / tp) * 128 * 2;
            cr_assert(close_to(mdl_cp_step_bytes(&st, &m), want), "tp %d cp %d", tp, cp);
            cr_assert(close_to(mdl_cp_layer_bytes(&st, &m), 3 * (cp - 1) * want));
        }
    struct mdl_strategy none = strategy(2, 1, MDL_CP_P2P);
    cr_assert(eq(dbl, mdl_cp_step_bytes(&none, &m), 0));
    cr_assert(eq(dbl, mdl_cp_layer_bytes(&none, &m), 0));
}

Test(context, ring_attention_sends_the_closed_form_blocks_forward_and_backward)
{
    struct mdl_model m = model();
    for (int cp = 2; cp <= 8; cp *= 2) {
        struct mdl_strategy st = strategy(2, cp, MDL_CP_P2P);
        struct mdl_program p;
        lower(&st, &m, &p);
        cr_assert(eq(int, p.nranks, 2 * cp), "a layer's group is tp x cp GPUs");
        double step = mdl_cp_step_bytes(&st, &m), b, f;
        /* forward: cp - 1 blocks; backward: cp messages of 2 (cp - 1) blocks in all */
        cr_assert(eq(int, sum_ops(&p, 0, "cp_kv_send", &b, &f), cp - 1));
        cr_assert(close_to(b, (cp - 1) * step));
        cr_assert(eq(int, sum_ops(&p, 0, "cp_kv_dkv_send", &b, &f), cp));
        cr_assert(close_to(b, 2 * (cp - 1) * step));
        double sent = 0;
        for (int i = 0; i < p.ranks[0].nops; i++) {
            const struct mdl_op *o = &p.ranks[0].ops[i];
            if (o->dim == MDL_OP_DIM(MDL_DIM_CP) && o->stream == MDL_STREAM_CP_SEND)
                sent += o->bytes;
        }
        cr_assert(close_to(sent, mdl_cp_layer_bytes(&st, &m)), "cp %d", cp);
        mdl_program_release(&p);
    }
}

Test(context, all_gather_and_a2a_move_the_closed_form_bytes)
{
    struct mdl_model m = model();
    int cp = 4;
    struct mdl_strategy ag = strategy(2, cp, MDL_CP_ALL_GATHER);
    struct mdl_program p;
    lower(&ag, &m, &p);
    double step = mdl_cp_step_bytes(&ag, &m), b, f, full = 0;
    cr_assert(eq(int, sum_ops(&p, 0, "ag_cp_kv", &b, &f), 2), "forward and backward");
    cr_assert(close_to(b, 2 * cp * step), "each the whole sequence's keys and values");
    full += b;
    cr_assert(eq(int, sum_ops(&p, 0, "rs_cp_dkv", &b, &f), 1));
    cr_assert(close_to(b, cp * step));
    full += b;
    /* a ring all-gather or reduce-scatter sends (cp - 1)/cp of the full size */
    cr_assert(close_to(full * (cp - 1) / cp, mdl_cp_layer_bytes(&ag, &m)));
    mdl_program_release(&p);

    struct mdl_strategy a2a = strategy(2, cp, MDL_CP_A2A);
    lower(&a2a, &m, &p);
    /* q (32 heads), k and v (8 each) of 128 and the output (32 heads), over tp, s/cp tokens */
    double tok = 8192.0 / cp, qkv = tok * (32 + 16) * 128 / 2 * 2, out = tok * 4096 / 2 * 2;
    cr_assert(eq(int, sum_ops(&p, 0, "a2a_cp_", &b, &f), 4));
    cr_assert(close_to(b, 2 * (qkv + out)));
    cr_assert(close_to(b * (cp - 1) / cp, mdl_cp_layer_bytes(&a2a, &m)));
    mdl_program_release(&p);
}

Test(context, every_rank_computes_an_equal_share_of_the_causal_attention)
{
    struct mdl_model m = model();
    struct mdl_strategy st = strategy(2, 1, MDL_CP_P2P);
    struct mdl_program p;
    struct mdl_framework fw = {.attention = MDL_ATTENTION_FLASH};
    struct mdl_device dev;
    struct tps_error err = {0};
    mdl_device_preset("H100-SXM", &dev);
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, &fw, 1, 1, &p, &err), 0));
    double b, whole_fwd, whole_bwd;
    sum_ops(&p, 0, "flash_attn", &b, &whole_fwd); /* forward and backward kernels */
    sum_ops(&p, 0, "flash_attn_bwd", &b, &whole_bwd);
    whole_fwd -= whole_bwd;
    mdl_program_release(&p);
    for (int k = 0; k < 3; k++) {
        int cp = 2 << k;
        enum mdl_cp_comm comm = k == 0 ? MDL_CP_P2P : k == 1 ? MDL_CP_ALL_GATHER : MDL_CP_A2A;
        struct mdl_strategy c = strategy(2, cp, comm);
        lower(&c, &m, &p);
        /* one ring step: 4 x b x 16 heads x (s/cp)^2 x 128 */
        double step = 4.0 * 16 * (8192.0 / cp) * (8192.0 / cp) * 128, f0 = -1;
        for (int r = 0; r < p.nranks; r++) {
            double fwd, bwd;
            int n = sum_ops(&p, r, "cp_attn", &b, &fwd);
            sum_ops(&p, r, "cp_attn_bwd", &b, &bwd);
            fwd -= bwd;
            cr_assert(eq(int, n, comm == MDL_CP_P2P ? 2 * cp : 2));
            cr_assert(close_to(fwd, whole_fwd / cp), "cp %d rank %d: 1/cp of the attention", cp, r);
            cr_assert(close_to(bwd, whole_bwd / cp));
            if (comm == MDL_CP_P2P) cr_assert(close_to(fwd, cp * step));
            if (f0 < 0) f0 = fwd;
            cr_assert(eq(dbl, fwd, f0), "equal on every rank");
        }
        mdl_program_release(&p);
    }
}

Test(context, activations_divide_by_cp_and_model_flops_do_not_move)
{
    struct mdl_model m = model();
    struct mdl_framework fw = {.attention = MDL_ATTENTION_FLASH};
    struct mdl_strategy one = strategy(2, 1, MDL_CP_P2P), two = strategy(2, 2, MDL_CP_P2P);
    double a1, a2, in1, in2;
    mdl_strategy_layer_activations(&one, &m, &fw, &a1, &in1);
    mdl_strategy_layer_activations(&two, &m, &fw, &a2, &in2);
    cr_assert(close_to(a2, a1 / 2));
    cr_assert(close_to(in2, in1 / 2));
    /* a job's model FLOPs and its executed FLOPs are the same at cp 1, 2 and 4 */
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    m.layers = 4;
    double model0 = -1, exec0 = -1;
    for (int cp = 1; cp <= 4; cp *= 2) {
        struct mdl_strategy st = strategy(2, cp, MDL_CP_P2P);
        struct mdl_job job = {.pp = 2, .dp = 2, .virtual_stages = 1, .micro_batches = 2};
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(
            eq(int, mdl_job_lower(&job, &st, &m, &dev, &fw, NULL, MDL_REPLICAS_FULL, &p, &err), 0),
            "%s", err.msg);
        cr_assert(eq(int, p.nranks, 8 * cp));
        double exec = mdl_program_flop(&p);
        if (model0 < 0) model0 = p.model_flop, exec0 = exec;
        cr_assert(eq(dbl, p.model_flop, model0), "cp %d", cp);
        cr_assert(lt(dbl, fabs(exec / exec0 - 1), 1e-12), "cp %d: %.6g vs %.6g", cp, exec, exec0);
        mdl_program_release(&p);
    }
}

Test(context, the_checks_name_the_key_at_fault)
{
    struct mdl_model m = model();
    struct tps_error err = {0};
    struct mdl_strategy st = strategy(2, 3, MDL_CP_P2P); /* 6 chunks do not divide 8192 */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    cr_assert(eq(str, err.field, "cp"));
    err = (struct tps_error){0};
    st = strategy(4, 16, MDL_CP_A2A); /* 64 GPUs for 32 heads */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    cr_assert(eq(str, err.field, "cp_comm_type"), "%s", err.msg);
    st = strategy(4, 8, MDL_CP_A2A);
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), 0), "%s", err.msg);
    err = (struct tps_error){0};
    st = strategy(4, 2, MDL_CP_P2P);
    st.kind = MDL_STRAT_PRIMEPAR;
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    cr_assert(eq(str, err.field, "cp"));
}

/* The H100 preset's fused-attention rates are the measured blocks of
 * validate/data/attention/h100_flash_blocks.csv (its square ones: 16 heads, head dim 128, the
 * FLOPs computed, halved when causal), and mdl_flash_time interpolates them log-log. */
Test(context, the_fused_attention_rates_are_the_measured_blocks)
{
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &dev), 0));
    const struct mdl_flash_curve *c = dev.flash;
    cr_assert(ne(ptr, (void *)c, NULL));
    FILE *f = fopen(TPSIM_SOURCE_DIR "/validate/data/attention/h100_flash_blocks.csv", "r");
    cr_assert(ne(ptr, f, NULL));
    char line[256];
    int seen[2] = {0, 0};
    while (fgets(line, sizeof line, f)) {
        double sq, sk, causal, tf, tb, rf, rb;
        if (sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &sq, &sk, &causal, &tf, &tb, &rf, &rb) !=
                7 ||
            sq != sk)
            continue;
        int dense = causal == 0, i = seen[dense]++;
        double flop = 4 * 16 * sq * sk * 128 * (dense ? 1 : 0.5);
        cr_assert(lt(dbl, fabs(c->flop[dense][i] / flop - 1), 1e-5), "%g: %g", sq, flop);
        cr_assert(lt(dbl, fabs(c->fwd[dense][i] / (rf * 1e12) - 1), 1e-9), "%g", sq);
        cr_assert(lt(dbl, fabs(c->bwd[dense][i] / (rb * 1e12) - 1), 1e-9), "%g", sq);
        /* at a point, its own rate; backward at 2.5 times the FLOPs */
        cr_assert(lt(dbl, fabs(mdl_flash_time(c, dense, 0, flop) * rf * 1e12 / flop - 1), 1e-4));
        cr_assert(lt(dbl,
                     fabs(mdl_flash_time(c, dense, 1, 2.5 * flop) * rb * 1e12 / (2.5 * flop) - 1),
                     1e-4));
    }
    fclose(f);
    cr_assert(eq(int, seen[0], c->n));
    cr_assert(eq(int, seen[1], c->n));
    /* halfway between two points in log FLOPs, the geometric mean of their rates; the smallest
     * call's time below the first point; the last rate above the last */
    double mid = sqrt(c->flop[0][2] * c->flop[0][3]), r = sqrt(c->fwd[0][2] * c->fwd[0][3]);
    cr_assert(lt(dbl, fabs(mdl_flash_time(c, 0, 0, mid) * r / mid - 1), 1e-9));
    double t0 = c->flop[1][0] / c->fwd[1][0];
    cr_assert(lt(dbl, fabs(mdl_flash_time(c, 1, 0, c->flop[1][0] / 8) / t0 - 1), 1e-12));
    double big = 4 * c->flop[0][c->n - 1];
    cr_assert(lt(dbl, fabs(mdl_flash_time(c, 0, 0, big) * c->fwd[0][c->n - 1] / big - 1), 1e-12));
}

/* A ring's later steps (dense half blocks) run at the measured rate where it is faster than
 * flash_efficiency's, its first step (a causal block of 4,096 tokens, where the measured rate is
 * lower) at flash_efficiency's; without measured rates (a device.flash_efficiency given) both at
 * flash_efficiency's. Llama 3 8B, 8,192 tokens, CP 2: 32 heads of 4,096 tokens a rank. */
Test(context, ring_steps_take_the_faster_of_the_measured_and_the_fitted_rate)
{
    struct mdl_model m = model();
    struct mdl_strategy st = strategy(1, 2, MDL_CP_P2P);
    for (int measured = 0; measured <= 1; measured++) {
        struct mdl_device dev;
        cr_assert(eq(int, mdl_device_preset("H100-SXM", &dev), 0));
        if (!measured) dev.flash = NULL;
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 1, 1, &p, &err), 0), "%s",
                  err.msg);
        double count = 4.0 * 32 * 4096 * 4096 * 128; /* each step's forward count */
        double fitted = dev.gemm_overhead_s + count / (0.55 * 989e12);
        /* the dense half block: 4,096 x 2,048 of 32 heads, a measured point's work (16 heads of
         * 4,096 x 4,096, dense) */
        double dense = count / 2 / 339.44e12;
        int step = 0;
        for (int i = 0; i < p.ranks[0].nops; i++) {
            const struct mdl_op *o = &p.ranks[0].ops[i];
            if (strcmp(p.names[o->name], "cp_attn")) continue;
            double want = step == 0 || !measured ? fitted : dense;
            cr_assert(lt(dbl, fabs(o->dur_s / want - 1), 1e-6), "step %d: %g s, want %g s", step,
                      o->dur_s, want);
            step++;
        }
        cr_assert(eq(int, step, 2));
        cr_assert(lt(dbl, dense, fitted));
        mdl_program_release(&p);
    }
}
