/* test_strategy.c - 1D and 2D TP lowering: communication volume per mesh axis, GEMM FLOPs,
 * mesh (d, 1) against 1D, placement. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

#include "models/compute.h"
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

/* The test model's `layers` layers in 1D over tp ranks, one micro-batch, on an A100. */
static void lower_1d(int tp, bool sp, bool async, int layers, struct mdl_program *p)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = tp, .sequence_parallel = sp, .async_grad_allreduce = async};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, layers, 1, p, &err), 0), "%s",
              err.msg);
}

static void check_volume(int d, bool sp)
{
    struct mdl_model m = model();
    struct mdl_program p;
    int layers = 3;
    lower_1d(d, sp, true, layers, &p);
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden;
    /* sequence parallelism all-gathers fc1's and qkv's input again in backward */
    double expect = layers * (sp ? 10.0 : 8.0) * b * s * h * (d - 1) / d;
    for (int r = 0; r < d; r++)
        cr_assert(ieee_ulp_eq(dbl, volume(&p, r, 2), expect, 8), "d=%d sp=%d rank %d", d, sp, r);
    mdl_program_release(&p);
}

Test(strategy, comm_volume_per_layer_is_8bsh_d_minus_1_over_d)
{
    for (int d = 1; d <= 8; d *= 2)
        check_volume(d, false);
}

/* Korthikanti et al.: with sequence parallelism the forward's all-gathers and reduce-scatters
 * move what the all-reduces did, and the backward gathers each column layer's input again (only
 * this rank's share is kept): 10 b s h (d-1)/d per layer. */
Test(strategy, sequence_parallel_adds_the_backward_regathers)
{
    for (int d = 2; d <= 8; d *= 2)
        check_volume(d, true);
}

Test(strategy, gemm_flops_per_layer_are_exact)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = 8, .sequence_parallel = false, .async_grad_allreduce = true};
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 1, 1, &p, &err), 0));
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
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = 16, .sequence_parallel = false, .async_grad_allreduce = true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "tp"));
}

Test(strategy, backward_grad_allreduce_overlaps_wgrad_only_when_async)
{
    for (int async = 0; async <= 1; async++) {
        struct mdl_program p;
        lower_1d(4, false, async, 1, &p);
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

/* The backward's re-gather of fc1's input (sequence parallelism) runs beside fc1's data-gradient
 * GEMM, which does not wait for it, ahead of the input gradient's reduce-scatter on the same
 * stream; the weight-gradient GEMM waits for it. */
Test(strategy, the_backward_regather_runs_beside_the_data_gradient)
{
    struct mdl_model m = model();
    struct mdl_program p;
    lower_1d(4, true, true, 1, &p);
    int ag = -1, dgrad = -1, rs = -1, wgrad = -1;
    for (int i = 0; i < p.ranks[0].nops; i++) {
        const char *nm = p.names[p.ranks[0].ops[i].name];
        if (!strcmp(nm, "ag_mlp_input_bwd")) ag = i;
        if (!strcmp(nm, "fc1_dgrad")) dgrad = i;
        if (!strcmp(nm, "ar_mlp_bwd")) rs = i;
        if (!strcmp(nm, "fc1_wgrad")) wgrad = i;
    }
    cr_assert(ag >= 0 && dgrad > ag && rs > dgrad && wgrad > rs, "%d %d %d %d", ag, dgrad, rs,
              wgrad);
    const struct mdl_op *o = p.ranks[0].ops;
    cr_assert(eq(int, o[ag].kind, MDL_OP_ALL_GATHER));
    cr_assert(eq(int, o[rs].kind, MDL_OP_REDUCE_SCATTER));
    cr_assert(eq(int, o[ag].stream, o[rs].stream));
    cr_assert(eq(dbl, o[ag].bytes, 2.0 * m.micro_batch * m.seq * m.hidden));
    for (int k = 0; k < o[dgrad].ndeps; k++)
        cr_assert(ne(int, o[dgrad].deps[k], ag));
    bool waits = false;
    for (int k = 0; k < o[wgrad].ndeps; k++)
        waits |= o[wgrad].deps[k] == ag;
    cr_assert(waits);
    mdl_program_release(&p);
}

/* ------------------------------------------------------------------ 2D (ATP) meshes */

static void lower_2d(int d1, int d2, enum mdl_placement pl, bool extra, int layers,
                     struct mdl_program *p)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {.kind = MDL_STRAT_2D,
                              .tp = d1 * d2,
                              .async_grad_allreduce = true,
                              .atp.d1 = d1,
                              .atp.d2 = d2,
                              .atp.placement = pl,
                              .atp.extra_allgathers = extra};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, layers, 1, p, &err), 0), "%dx%d: %s",
              d1, d2, err.msg);
}

/* Full sizes (elements) of rank r's collectives of kind k, summed per group size. */
static double axis_elems(const struct mdl_program *p, int r, enum mdl_op_kind k, int n)
{
    double v = 0;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *op = &p->ranks[r].ops[i];
        if (op->kind == k && p->groups[op->group].n == n) v += op->bytes / 2;
    }
    return v;
}

Test(strategy, every_2d_mesh_moves_the_section_2_volumes)
{
    /* per layer: all-reduces over the d2 axis totalling 12bsh/d1, over the d1 axis 4bsh/d2 */
    struct mdl_model m = model();
    double bsh = (double)m.micro_batch * m.seq * m.hidden;
    int layers = 2;
    for (int d = 2; d <= 16; d *= 2)
        for (int d1 = 1; d1 <= d; d1 *= 2)
            for (int pl = 0; pl < 2; pl++) {
                int d2 = d / d1;
                if (d1 == d2) continue;     /* both axes have the same size: checked below */
                if (m.heads % d1) continue; /* gpt3-13b has 40 heads */
                struct mdl_program p;
                lower_2d(d1, d2, (enum mdl_placement)pl, false, layers, &p);
                for (int r = 0; r < d; r++) {
                    if (d2 > 1)
                        cr_assert(ieee_ulp_eq(dbl, axis_elems(&p, r, MDL_OP_ALL_REDUCE, d2),
                                              layers * 12 * bsh / d1, 8),
                                  "%dx%d rank %d, d2 axis", d1, d2, r);
                    if (d1 > 1)
                        cr_assert(ieee_ulp_eq(dbl, axis_elems(&p, r, MDL_OP_ALL_REDUCE, d1),
                                              layers * 4 * bsh / d2, 8),
                                  "%dx%d rank %d, d1 axis", d1, d2, r);
                }
                mdl_program_release(&p);
            }
    /* square mesh: both axes together, and ring volume 2(n-1)/n of each */
    struct mdl_program p;
    lower_2d(4, 4, MDL_ROW_FIRST, false, layers, &p);
    double v = 0, vol = 0;
    for (int i = 0; i < p.ranks[5].nops; i++) {
        const struct mdl_op *op = &p.ranks[5].ops[i];
        if (!mdl_op_is_coll((enum mdl_op_kind)op->kind)) continue;
        v += op->bytes / 2;
        vol += mdl_coll_ring_bytes((enum mdl_op_kind)op->kind, 4, op->bytes) / 2;
    }
    cr_assert(ieee_ulp_eq(dbl, v, layers * (12 * bsh / 4 + 4 * bsh / 4), 8));
    cr_assert(ieee_ulp_eq(dbl, vol, layers * 1.5 * (12 * bsh / 4 + 4 * bsh / 4), 8));
    mdl_program_release(&p);
}

Test(strategy, mesh_d_by_1_is_exactly_1d)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    for (int d = 2; d <= 8; d *= 2) {
        struct mdl_strategy one = {.kind = MDL_STRAT_1D, .tp = d, .async_grad_allreduce = true};
        struct mdl_program a, b;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&one, &m, &dev, NULL, 2, 1, &a, &err), 0));
        lower_2d(d, 1, MDL_COLUMN_FIRST, false, 2, &b);
        cr_assert(eq(int, a.nranks, b.nranks));
        for (int r = 0; r < d; r++) {
            cr_assert(eq(int, a.ranks[r].nops, b.ranks[r].nops));
            for (int i = 0; i < a.ranks[r].nops; i++) {
                const struct mdl_op *x = &a.ranks[r].ops[i], *y = &b.ranks[r].ops[i];
                cr_assert(eq(int, x->kind, y->kind), "d=%d op %d", d, i);
                cr_assert(eq(dbl, x->dur_s, y->dur_s), "d=%d op %d", d, i);
                cr_assert(eq(dbl, x->bytes, y->bytes), "d=%d op %d", d, i);
                cr_assert(eq(dbl, x->flop, y->flop), "d=%d op %d", d, i);
                cr_assert(eq(int, x->ndeps, y->ndeps), "d=%d op %d", d, i);
                cr_assert(eq(str, a.names[x->name], b.names[y->name]));
                if (x->group >= 0) cr_assert(eq(int, a.groups[x->group].n, b.groups[y->group].n));
            }
        }
        mdl_program_release(&a);
        mdl_program_release(&b);
    }
}

Test(strategy, placement_lays_the_mesh_onto_device_ids)
{
    /* row-first: rows (the d2 axis) are runs of consecutive ids; column-first: columns are */
    struct mdl_program p;
    lower_2d(2, 4, MDL_ROW_FIRST, false, 1, &p);
    int rows = 0, cols = 0;
    for (int g = 0; g < p.ngroups; g++) {
        const struct mdl_group *gr = &p.groups[g];
        int step = gr->ranks[1] - gr->ranks[0];
        if (gr->n == 4) {
            rows++;
            cr_assert(eq(int, step, 1));
        } else {
            cols++;
            cr_assert(eq(int, step, 4));
        }
    }
    cr_assert(eq(int, rows, 2));
    cr_assert(eq(int, cols, 4));
    mdl_program_release(&p);
    lower_2d(2, 4, MDL_COLUMN_FIRST, false, 1, &p);
    for (int g = 0; g < p.ngroups; g++) {
        const struct mdl_group *gr = &p.groups[g];
        int step = gr->ranks[1] - gr->ranks[0];
        cr_assert(eq(int, step, gr->n == 4 ? 2 : 1), "group of %d", gr->n);
    }
    mdl_program_release(&p);
}

Test(strategy, extra_allgathers_add_about_4bsh_plus_4bsh_over_d1)
{
    struct mdl_model m = model();
    double bsh = (double)m.micro_batch * m.seq * m.hidden;
    struct mdl_program p;
    lower_2d(2, 4, MDL_ROW_FIRST, true, 1, &p);
    cr_assert(ieee_ulp_eq(dbl, axis_elems(&p, 0, MDL_OP_ALL_GATHER, 4), 4 * bsh + 4 * bsh / 2, 8));
    mdl_program_release(&p);
}

static double coll_elems(const struct mdl_program *p)
{
    double v = 0;
    for (int i = 0; i < p->ranks[0].nops; i++)
        if (mdl_op_is_coll((enum mdl_op_kind)p->ranks[0].ops[i].kind))
            v += p->ranks[0].ops[i].bytes;
    return v;
}

Test(strategy, oases_and_recomputation_keep_flops_and_price_collectives_as_described)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_program base, oases, full, oases_rc;
    struct tps_error err = {0};
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 4, .async_grad_allreduce = true};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &base, &err), 0));
    st.oases = true;
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &oases, &err), 0));
    st.recompute = true;
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &oases_rc, &err), 0));
    st.oases = false;
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 1, &full, &err), 0));
    /* two sub-batches of half the tokens: same FLOPs and bytes, twice the collectives */
    cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&oases), mdl_program_flop(&base), 8));
    cr_assert(ieee_ulp_eq(dbl, coll_elems(&oases), coll_elems(&base), 8));
    /* recomputation adds one forward of compute; Megatron's repeats the 2 forward ARs of 4 */
    double fwd_flop = mdl_program_flop(&base) / 3;
    cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&full), mdl_program_flop(&base) + fwd_flop, 64));
    cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&oases_rc), mdl_program_flop(&full), 64));
    cr_assert(ieee_ulp_eq(dbl, coll_elems(&full), 1.5 * coll_elems(&base), 8));
    cr_assert(ieee_ulp_eq(dbl, coll_elems(&oases_rc), coll_elems(&base), 8));
    mdl_program_release(&base);
    mdl_program_release(&oases);
    mdl_program_release(&full);
    mdl_program_release(&oases_rc);
}

/* Every strategy the planner can produce for one model, lowered: the model FLOPs are one number
 * (the closed form 3 * layers * mbs * [2bs(4h^2 + 2h*ffn) + 4bs^2h]), while the executed FLOPs
 * grow with a 2D mesh's replicated attention and with recomputation. */
Test(strategy, model_flop_is_the_same_under_every_strategy)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    int layers = 2, mbs = 2, d = 8, n = 0;
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    double expect = 3.0 * layers * mbs * (2 * b * s * (4 * h * h + 2 * h * f) + 4 * b * s * s * h);
    double exec_1d = 0, exec_max = 0;
    for (int d1 = d; d1 >= 1; d1 /= 2)
        for (int pl = 0; pl < 2; pl++)
            for (int k = 1; k <= 4; k *= 2)
                for (int oa = 0; oa < 2; oa++)
                    for (int rc = 0; rc < 2; rc++)
                        for (int sp = 0; sp < 2; sp++) {
                            int d2 = d / d1;
                            if (sp && d2 > 1) continue;
                            struct mdl_strategy st = {.kind = d2 > 1 ? MDL_STRAT_2D : MDL_STRAT_1D,
                                                      .tp = d,
                                                      .atp.d1 = d1,
                                                      .atp.d2 = d2,
                                                      .atp.placement = (enum mdl_placement)pl,
                                                      .chunks = k,
                                                      .oases = oa,
                                                      .recompute = rc,
                                                      .sequence_parallel = sp,
                                                      .async_grad_allreduce = true};
                            struct mdl_program p;
                            struct tps_error err = {0};
                            cr_assert(
                                eq(int,
                                   mdl_strategy_lower(&st, &m, &dev, NULL, layers, mbs, &p, &err),
                                   0),
                                "%s", err.msg);
                            cr_assert(ieee_ulp_eq(dbl, p.model_flop, expect, 4),
                                      "mesh %dx%d pl %d k %d oases %d recompute %d sp %d: %g", d1,
                                      d2, pl, k, oa, rc, sp, p.model_flop);
                            cr_assert(eq(dbl, p.peak_flops, dev.peak_flops[m.dtype]));
                            double exec = mdl_program_flop(&p);
                            if (d2 == 1 && !rc && !oa && k == 1 && !sp && !pl) exec_1d = exec;
                            if (exec > exec_max) exec_max = exec;
                            mdl_program_release(&p);
                            n++;
                        }
    cr_assert(gt(int, n, 60));
    /* 1D without recomputation executes exactly the model FLOPs; others execute more */
    cr_assert(ieee_ulp_eq(dbl, exec_1d, expect, 16), "%g vs %g", exec_1d, expect);
    cr_assert(gt(dbl, exec_max, 1.5 * expect));
}

/* Memory parts add up, and the states follow 16 bytes per parameter over the TP degree. */
Test(strategy, memory_parts_follow_the_documented_formulas)
{
    struct mdl_model m = model();
    double h = (double)m.hidden, f = (double)m.ffn, L = (double)m.layers;
    double params = L * (4 * h * h + 2 * h * f + 9 * h + f);
    for (int d = 1; d <= 8; d *= 2) {
        struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = d};
        struct mdl_memory mem;
        double total = mdl_strategy_memory(&st, &m, NULL, (int)m.layers, &mem);
        cr_assert(eq(dbl, total, mem.total));
        cr_assert(
            ieee_ulp_eq(dbl, mem.weights + mem.gradients + mem.optimizer, 16 * params / d, 8));
        double s = (double)m.seq, b = (double)m.micro_batch, a = (double)m.heads;
        /* without attention dropout the softmax output is the one s x s tensor kept */
        double act = L * (s * b * h * (10 + 24.0 / d) + 2 * a * s * s * b / d);
        cr_assert(ieee_ulp_eq(dbl, mem.activations, act, 8), "d=%d", d);
        /* with it, its mask and output as well: Korthikanti et al.'s sbh(34 + 5as/h) at d = 1 */
        struct mdl_model md = m;
        md.attn_dropout = true;
        struct mdl_memory memd;
        mdl_strategy_memory(&st, &md, NULL, (int)m.layers, &memd);
        cr_assert(
            ieee_ulp_eq(dbl, memd.activations - mem.activations, L * 3 * a * s * s * b / d, 8),
            "d=%d", d);
        st.recompute = true; /* inputs of every layer plus one layer's activations */
        mdl_strategy_memory(&st, &m, NULL, (int)m.layers, &mem);
        cr_assert(ieee_ulp_eq(dbl, mem.activations, L * 2 * s * b * h + act / L, 8), "d=%d", d);
    }
}

/* ------------------------------------------------------------------ framework */

static void lower_fw(const struct mdl_framework *fw, int tp, struct mdl_program *p)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = tp, .async_grad_allreduce = true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, fw, 2, 1, p, &err), 0), "%s", err.msg);
}

static int count(const struct mdl_program *p, enum mdl_op_kind k)
{
    int n = 0;
    for (int i = 0; i < p->ranks[0].nops; i++)
        n += p->ranks[0].ops[i].kind == k;
    return n;
}

Test(strategy, eager_kernels_add_the_unfused_ops_and_keep_the_flops)
{
    struct mdl_framework fused = {0}, eager = {.kernels = MDL_KERNELS_EAGER};
    struct mdl_program a, b;
    lower_fw(&fused, 2, &a);
    lower_fw(&eager, 2, &b);
    /* per layer, as PyTorch's profiler shows eager kernels (refdata/traces): forward the score
     * scale, the attention-output copy, dropout apart from its add (twice); backward the two
     * residual-gradient adds, two layer-norm weight gradients, the softmax-gradient product, the
     * scale and the q/k/v gradient concatenation */
    cr_assert(eq(int, count(&b, MDL_OP_MEM) - count(&a, MDL_OP_MEM), 2 * (4 + 7)));
    cr_assert(eq(int, count(&b, MDL_OP_GEMM), count(&a, MDL_OP_GEMM)));
    cr_assert(eq(dbl, mdl_program_flop(&b), mdl_program_flop(&a)));
    mdl_program_release(&a);
    mdl_program_release(&b);
}

Test(strategy, flash_attention_is_one_kernel_with_flashattentions_flops)
{
    struct mdl_framework core = {0}, flash = {.attention = MDL_ATTENTION_FLASH};
    struct mdl_program a, f;
    lower_fw(&core, 4, &a);
    lower_fw(&flash, 4, &f);
    struct mdl_model m = model();
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden;
    double fwd = 4 * b * s * s * h / 4; /* per rank, per layer */
    int nfl = 0;
    for (int i = 0; i < f.ranks[0].nops; i++) {
        const struct mdl_op *op = &f.ranks[0].ops[i];
        const char *name = f.names[op->name];
        if (!strcmp(name, "flash_attn")) {
            cr_assert(ieee_ulp_eq(dbl, op->flop, fwd, 4));
            nfl++;
        }
        if (!strcmp(name, "flash_attn_bwd")) cr_assert(ieee_ulp_eq(dbl, op->flop, 2.5 * fwd, 4));
        cr_assert(strcmp(name, "softmax") && strcmp(name, "attn_score"), "%s under flash", name);
    }
    cr_assert(eq(int, nfl, 2));
    /* the core path's four attention GEMMs forward and backward became two kernels per layer */
    cr_assert(eq(int, count(&a, MDL_OP_ATTN) - count(&f, MDL_OP_ATTN), 2 * (6 - 2)));
    /* and no s x s tensor is kept: the softmax output's 2 a s^2 b leaves the activations */
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 4};
    struct mdl_memory mc, mf;
    mdl_strategy_memory(&st, &m, &core, 1, &mc);
    mdl_strategy_memory(&st, &m, &flash, 1, &mf);
    double sq = 2.0 * (double)m.heads * s * s * b / 4 * mdl_dtype_bytes(m.dtype) / 2.0;
    cr_assert(ieee_ulp_eq(dbl, mc.activations - mf.activations, sq, 8));
    mdl_program_release(&a);
    mdl_program_release(&f);
}

Test(strategy, launch_costs_follow_the_framework)
{
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    struct mdl_framework eager = {.launch = MDL_LAUNCH_EAGER},
                         graphs = {.launch = MDL_LAUNCH_GRAPHS}, none = {0};
    struct mdl_program e, g, n;
    lower_fw(&eager, 2, &e);
    lower_fw(&graphs, 2, &g);
    lower_fw(&none, 2, &n);
    int launched = 0;
    for (int i = 0; i < e.ranks[0].nops; i++) {
        const struct mdl_op *op = &e.ranks[0].ops[i];
        /* every kernel, collectives too: the forward's from Python, the backward's from autograd */
        cr_assert(
            eq(dbl, op->launch_s, op->phase == MDL_PHASE_BWD ? dev.bwd_launch_s : dev.launch_s));
        cr_assert(eq(dbl, n.ranks[0].ops[i].launch_s, 0));
        launched += g.ranks[0].ops[i].launch_s > 0;
        if (g.ranks[0].ops[i].launch_s > 0)
            cr_assert(eq(dbl, g.ranks[0].ops[i].launch_s, dev.graph_launch_s));
    }
    /* graphs: one launch per layer forward and per layer backward (2 layers) */
    cr_assert(eq(int, launched, 4));
    mdl_program_release(&e);
    mdl_program_release(&g);
    mdl_program_release(&n);
}

Test(strategy, the_fused_attention_call_costs_the_host_its_own_time)
{
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    struct mdl_framework fw = {.launch = MDL_LAUNCH_EAGER, .attention = MDL_ATTENTION_FLASH};
    struct mdl_program p;
    lower_fw(&fw, 2, &p);
    int calls[2] = {0, 0};
    for (int i = 0; i < p.ranks[0].nops; i++) {
        const struct mdl_op *op = &p.ranks[0].ops[i];
        int bwd = op->phase == MDL_PHASE_BWD;
        if (op->kind == MDL_OP_ATTN) {
            /* scaled_dot_product_attention's host path, heavier than one kernel's launch */
            cr_assert(eq(dbl, op->launch_s, bwd ? dev.flash_bwd_launch_s : dev.flash_launch_s));
            calls[bwd]++;
        } else {
            cr_assert(eq(dbl, op->launch_s, bwd ? dev.bwd_launch_s : dev.launch_s));
        }
    }
    /* one call each way per layer (2 layers) */
    cr_assert(eq(int, calls[0], 2));
    cr_assert(eq(int, calls[1], 2));
    cr_assert(gt(dbl, dev.flash_launch_s, dev.launch_s));
    mdl_program_release(&p);
}

/* ------------------------------------------------------------------ Llama: SwiGLU, GQA */

/* The parameter counts Meta publishes: Llama 2 7B 6.74e9 and 70B 68.98e9, Llama 3 8B 8.03e9,
 * 70B 70.55e9 and 405B 405.85e9 (the Hugging Face checkpoints' counts: layers plus the untied
 * embedding and output matrices), from the layer formula with a gated MLP and 8 key/value heads
 * where the model has them. */
Test(strategy, llama_parameter_counts_match_the_published_ones)
{
    static const struct {
        const char *name;
        double params;
    } cases[] = {{"llama2-7b", 6.74e9},
                 {"llama2-70b", 68.98e9},
                 {"llama3-8b", 8.030e9},
                 {"llama3-70b", 70.55e9},
                 {"llama3-405b", 405.85e9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mdl_model m;
        cr_assert(eq(int, mdl_model_preset(cases[i].name, &m), 0));
        struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 1};
        double total = (double)m.layers * mdl_strategy_layer_params(&st, &m) +
                       2.0 * (double)m.vocab * (double)m.hidden;
        cr_assert(total > cases[i].params * 0.999 && total < cases[i].params * 1.001,
                  "%s: %.4g parameters", cases[i].name, total);
    }
}

/* Every GEMM of a SwiGLU/GQA layer: QKV 2bs*h*(h + 2gh/a), proj 2bs*h^2, FC1 2bs*h*2f, FC2
 * 2bs*f*h, over all ranks; the attention core keeps every query head; backward twice that. */
Test(strategy, gated_mlp_and_grouped_queries_lower_their_exact_flops)
{
    struct mdl_model m;
    mdl_model_preset("llama2-70b", &m);
    m.seq = 1024;
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    for (int tp = 1; tp <= 8; tp *= 2) {
        struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = tp, .async_grad_allreduce = true};
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 1, 1, &p, &err), 0), "%s",
                  err.msg);
        double b = 1, s = 1024, h = 8192, f = 28672, g = 8, a = 64;
        double linear = 2 * b * s * (h * (h + 2 * g * h / a) + h * h + h * 2 * f + f * h);
        double fwd = 0, bwd = 0;
        int swiglu = 0, gelu = 0;
        for (int r = 0; r < p.nranks; r++) {
            for (int i = 0; i < p.ranks[r].nops; i++) {
                const struct mdl_op *op = &p.ranks[r].ops[i];
                *(op->phase == MDL_PHASE_FWD ? &fwd : &bwd) += op->flop;
                const char *nm = p.names[op->name];
                swiglu += strcmp(nm, "swiglu") == 0;
                gelu += strcmp(nm, "gelu") == 0;
            }
        }
        cr_assert(ieee_ulp_eq(dbl, fwd, linear + 4 * b * s * s * h, 8), "tp=%d", tp);
        cr_assert(ieee_ulp_eq(dbl, bwd, 2 * fwd, 8), "tp=%d", tp);
        cr_assert(ieee_ulp_eq(dbl, fwd, mdl_model_layer_fwd_flop(&m), 8), "tp=%d", tp);
        cr_assert(eq(int, swiglu, tp), "one SwiGLU kernel per rank");
        cr_assert(eq(int, gelu, 0));
        mdl_program_release(&p);
    }
}

/* Attention dropout: one memory-bound kernel forward and one backward per layer over the rank's
 * b a/t s^2 probabilities (read 2 bytes, write 2 and a one-byte mask; backward the same bytes),
 * again in selective recomputation, none inside FlashAttention; the FLOPs do not move. */
Test(strategy, attention_dropout_is_a_kernel_each_way_on_the_probabilities)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    struct mdl_framework core = {0}, flash = {.attention = MDL_ATTENTION_FLASH};
    struct tps_error err = {0};
    int tp = 4;
    double n = (double)m.micro_batch * m.heads / tp * (double)m.seq * m.seq;
    for (int sel = 0; sel <= 1; sel++)
        for (int drop = 0; drop <= 1; drop++)
            for (int fl = 0; fl <= 1; fl++) {
                struct mdl_model md = m;
                md.attn_dropout = drop;
                struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = tp, .selective = sel};
                struct mdl_program p, base;
                const struct mdl_framework *fw = fl ? &flash : &core;
                cr_assert(eq(int, mdl_strategy_lower(&st, &md, &dev, fw, 3, 1, &p, &err), 0));
                cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, fw, 3, 1, &base, &err), 0));
                int fwd = 0, bwd = 0, rec = 0;
                for (int i = 0; i < p.ranks[0].nops; i++) {
                    const struct mdl_op *op = &p.ranks[0].ops[i];
                    const char *name = p.names[op->name];
                    if (strncmp(name, "attn_dropout", 12)) continue;
                    cr_assert(eq(int, op->kind, MDL_OP_MEM));
                    cr_assert(ieee_ulp_eq(dbl, op->bytes, 5 * n, 4), "%s", name);
                    cr_assert(ieee_ulp_eq(dbl, op->dur_s, mdl_mem_time(&dev, 5 * n), 4));
                    fwd += !strcmp(name, "attn_dropout");
                    bwd += !strcmp(name, "attn_dropout_bwd");
                    rec += !strcmp(name, "attn_dropout_recompute");
                }
                int k = drop && !fl;
                cr_assert(eq(int, fwd, 3 * k), "sel %d drop %d flash %d", sel, drop, fl);
                cr_assert(eq(int, bwd, 3 * k));
                cr_assert(eq(int, rec, 3 * k * sel));
                cr_assert(eq(int, p.ranks[0].nops - base.ranks[0].nops, 3 * k * (2 + sel)));
                cr_assert(eq(dbl, mdl_program_flop(&p), mdl_program_flop(&base)));
                mdl_program_release(&p);
                mdl_program_release(&base);
            }
}

/* Grouped-query activations: k and v shrink to g/a of q, the gated MLP keeps 6sbf. */
Test(strategy, gated_grouped_activations_follow_the_generalised_formula)
{
    struct mdl_model m;
    mdl_model_preset("llama2-70b", &m);
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 8};
    double full, input;
    mdl_strategy_layer_activations(&st, &m, NULL, &full, &input);
    double s = 4096, b = 1, h = 8192, f = 28672, a = 64, g = 8, t = 8;
    double expect = s * b * (10 * h + (4 * h + 4 * h * g / a + 6 * f) / t) + 2 * a * s * s * b / t;
    cr_assert(ieee_ulp_eq(dbl, full, expect, 8));
    cr_assert(ieee_ulp_eq(dbl, input, 2 * s * b * h, 8));
}

Test(strategy, refuses_tp_not_dividing_kv_heads)
{
    struct mdl_model m;
    mdl_model_preset("llama2-70b", &m); /* 64 heads, 8 key/value heads */
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 16, .async_grad_allreduce = true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "tp"));
    cr_assert(strstr(err.msg, "kv_heads") != NULL, "%s", err.msg);
}

/* ------------------------------------------------------------------ PrimePar */

static void lower_primepar(int d, const struct mdl_model *m, const struct mdl_framework *fw,
                           struct mdl_program *p)
{
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {.kind = MDL_STRAT_PRIMEPAR, .tp = d, .async_grad_allreduce = true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, m, &dev, fw, 3, 2, p, &err), 0), "%s", err.msg);
}

/* Each of a layer's four linears shifts its input's k dim three times (forward, the input
 * gradient's running sums, the input again for the weight gradient), each d - 1 times a block
 * of bs x k/d: 3 (d-1)/d bs (3h + f) elements per layer and micro-batch, whatever the QKV and
 * FC1 widths; the layer norms' statistics (two fp32 per token, four norms) are its only
 * collectives. No rank ever sends more than one block at a time, and rank r sends to r + 1. */
Test(strategy, primepar_shifts_3_d_minus_1_over_d_bs_3h_plus_f_and_reduces_no_activation)
{
    struct mdl_model m = model();
    m.kv_heads = 8; /* grouped queries and a gated MLP change the widths, not the shifts */
    m.glu = true;
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    for (int d = 1; d <= 8; d *= 2) {
        struct mdl_program p;
        lower_primepar(d, &m, NULL, &p);
        for (int r = 0; r < d; r++) {
            double sent = 0, got = 0, ar = 0;
            int nsend = 0;
            for (int i = 0; i < p.ranks[r].nops; i++) {
                const struct mdl_op *op = &p.ranks[r].ops[i];
                const struct mdl_group *g = op->group >= 0 ? &p.groups[op->group] : NULL;
                if (op->kind == MDL_OP_SEND_RECV && op->stream == MDL_STREAM_SHIFT_SEND) {
                    cr_assert(eq(int, g->ranks[0], r));
                    cr_assert(eq(int, g->ranks[1], (r + 1) % d));
                    sent += op->bytes;
                    nsend++;
                } else if (op->kind == MDL_OP_SEND_RECV) {
                    cr_assert(eq(int, op->stream, MDL_STREAM_SHIFT_RECV));
                    cr_assert(eq(int, g->ranks[1], r));
                    got += op->bytes;
                } else if (op->kind == MDL_OP_ALL_REDUCE) {
                    ar += op->bytes;
                } else {
                    cr_assert(not(mdl_op_is_coll((enum mdl_op_kind)op->kind)));
                }
            }
            /* 3 layers x 2 micro-batches, bf16 */
            double expect = 3 * 2 * 3 * (d - 1.0) / d * b * s * (3 * h + f) * 2;
            cr_assert(ieee_ulp_eq(dbl, sent, expect, 64), "d=%d: %g vs %g", d, sent, expect);
            cr_assert(eq(dbl, got, sent));
            cr_assert(eq(int, nsend, 3 * 2 * 12 * (d - 1)), "d=%d", d); /* 12 rings a layer */
            cr_assert(eq(dbl, ar, d > 1 ? 3 * 2 * 4 * b * s * 8.0 : 0), "d=%d", d);
        }
        cr_assert(eq(int, mdl_program_check(&p, NULL, &(struct tps_error){0}), 0));
        mdl_program_release(&p);
    }
}

/* The same model FLOPs, and the same executed FLOPs as 1D (no operand is replicated, so no work
 * is either); the GEMMs are d partial ones of 1/d the contraction. Memory: every activation is
 * sharded over the ring, as with sequence parallelism. */
Test(strategy, primepar_executes_1d_flops_in_d_partial_gemms_and_shards_every_activation)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    for (int d = 2; d <= 8; d *= 2) {
        struct mdl_program pp, one;
        lower_primepar(d, &m, NULL, &pp);
        struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = d, .async_grad_allreduce = true};
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 3, 2, &one, &err), 0));
        cr_assert(eq(dbl, pp.model_flop, one.model_flop));
        cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&pp), mdl_program_flop(&one), 64));
        int qkv = 0;
        double h = (double)m.hidden, bs = (double)m.micro_batch * (double)m.seq;
        for (int i = 0; i < pp.ranks[0].nops; i++) {
            const struct mdl_op *op = &pp.ranks[0].ops[i];
            if (strcmp(pp.names[op->name], "qkv") || op->layer != 0 || op->mb != 0) continue;
            cr_assert(ieee_ulp_eq(dbl, op->flop, 2 * bs * (3 * h / d) * (h / d), 4));
            qkv++;
        }
        cr_assert(eq(int, qkv, d));
        struct mdl_memory a, b;
        st.sequence_parallel = true;
        mdl_strategy_memory(&st, &m, NULL, (int)m.layers, &a);
        st = (struct mdl_strategy){.kind = MDL_STRAT_PRIMEPAR, .tp = d};
        mdl_strategy_memory(&st, &m, NULL, (int)m.layers, &b);
        cr_assert(eq(dbl, a.total, b.total));
        mdl_program_release(&pp);
        mdl_program_release(&one);
    }
}

Test(strategy, block_meshes_execute_1d_flops_in_block_gemms_and_hold_their_share_of_memory)
{
    struct mdl_model m;
    mdl_model_preset("gpt3-1.3b", &m);
    m.micro_batch = 8;
    m.glu = true; /* a gated MLP and grouped queries: the widths the blocks carry */
    m.ffn = 5504;
    m.kv_heads = 8;
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    const struct {
        enum mdl_strategy_kind kind;
        int tp, depth, q, qkv_gemms;
    } cases[] = {{MDL_STRAT_SUMMA2D, 4, 0, 2, 2},
                 {MDL_STRAT_SUMMA2D, 16, 0, 4, 4},
                 {MDL_STRAT_TESSERACT, 8, 2, 2, 2},
                 {MDL_STRAT_TP3D, 8, 0, 2, 1}};
    double h = (double)m.hidden, bs = (double)m.micro_batch * (double)m.seq;
    double qw = mdl_model_qkv_width(&m);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct mdl_strategy st = {
            .kind = cases[c].kind, .tp = cases[c].tp, .tesseract.depth = cases[c].depth};
        struct mdl_strategy one = {.kind = MDL_STRAT_1D, .tp = 2, .async_grad_allreduce = true};
        struct mdl_program p, p1;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 2, &p, &err), 0), "%s",
                  err.msg);
        cr_assert(eq(int, mdl_strategy_lower(&one, &m, &dev, NULL, 2, 2, &p1, &err), 0));
        /* model FLOPs never depend on the strategy; nothing is computed twice */
        cr_assert(eq(dbl, p.model_flop, p1.model_flop));
        cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&p), mdl_program_flop(&p1), 64));
        /* QKV: q SUMMA steps of (T/q x K/q) by (K/q x N/q) on the slice's T tokens; 3D one
         * GEMM of the gathered blocks */
        double q = cases[c].q, T = bs / (st.tesseract.depth > 0 ? st.tesseract.depth : 1);
        int n = 0;
        for (int i = 0; i < p.ranks[0].nops; i++) {
            const struct mdl_op *op = &p.ranks[0].ops[i];
            if (strcmp(p.names[op->name], "qkv") || op->layer != 0 || op->mb != 0) continue;
            cr_assert(ieee_ulp_eq(dbl, op->flop, 2 * (T / q) * (qw / q) * (h / q), 4));
            n++;
        }
        cr_assert(eq(int, n, cases[c].qkv_gemms));
        /* weights: 1/q^2 of a layer's (tesseract's slices each hold them all), 1/q^3 in 3D */
        double shards = st.kind == MDL_STRAT_TP3D ? q * q * q : q * q;
        cr_assert(ieee_ulp_eq(dbl, mdl_strategy_layer_params(&st, &m) * shards,
                              mdl_strategy_layer_params(&one, &m) * 2, 8));
        /* activations: a block each, as sequence parallelism over tp; 3D keeps its gathered
         * linear inputs and weights besides */
        struct mdl_strategy sp = {.kind = MDL_STRAT_1D, .tp = st.tp, .sequence_parallel = true};
        double a, a_in, s, s_in;
        mdl_strategy_layer_activations(&st, &m, NULL, &a, &a_in);
        mdl_strategy_layer_activations(&sp, &m, NULL, &s, &s_in);
        double extra = 0;
        if (st.kind == MDL_STRAT_TP3D)
            extra = 2 * bs * (3 * h + m.ffn) * (1 / (q * q) - 1 / (q * q * q)) +
                    2 * (h * qw + h * h + h * mdl_model_fc1_width(&m) + m.ffn * h) / (q * q);
        cr_assert(ieee_ulp_eq(dbl, a, s + extra, 8), "%d: %g vs %g", st.kind, a, s + extra);
        cr_assert(eq(dbl, a_in, s_in));
        mdl_program_release(&p);
        mdl_program_release(&p1);
    }
}

/* Sum of the bytes of rank r's ops named `name`, their count in *n, and the members of the
 * group of the last of them in g (NULL: none). */
static double named(const struct mdl_program *p, int r, const char *name, int *n,
                    const struct mdl_group **g)
{
    double b = 0;
    *n = 0;
    *g = NULL;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *op = &p->ranks[r].ops[i];
        if (strcmp(p->names[op->name], name)) continue;
        b += op->bytes;
        (*n)++;
        *g = &p->groups[op->group];
    }
    return b;
}

Test(strategy, per_sublayer_degrees_gather_on_the_way_up_and_reduce_their_replicas_gradients)
{
    /* attention at tp 8, MLP at tp 4 on two replicas of half the micro-batch */
    struct mdl_model m = model();
    m.micro_batch = 4;
    struct mdl_device dev;
    mdl_device_preset("H100-SXM", &dev);
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = 8, .sublayer.mlp_tp = 4, .async_grad_allreduce = true};
    struct mdl_strategy one = {.kind = MDL_STRAT_1D, .tp = 8, .async_grad_allreduce = true};
    struct mdl_program p, p1;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 2, 2, &p, &err), 0), "%s", err.msg);
    cr_assert(eq(int, mdl_strategy_lower(&one, &m, &dev, NULL, 2, 2, &p1, &err), 0));
    cr_assert(eq(int, mdl_program_check(&p, NULL, &err), 0), "%s", err.msg);
    /* the same model FLOPs, and no work twice: the MLP's GEMMs are half as wide, on half the
     * tokens of twice as many ranks */
    cr_assert(eq(dbl, p.model_flop, p1.model_flop));
    cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&p), mdl_program_flop(&p1), 64));
    double h = (double)m.hidden, s = (double)m.seq, b = (double)m.micro_batch, B = 2;
    double ffn = (double)m.ffn;
    for (int r = 0; r < 8; r++) {
        int n;
        const struct mdl_group *g;
        /* attention: its all-reduces on the whole micro-batch over all 8 */
        cr_assert(eq(dbl, named(&p, r, "ar_attn", &n, &g), 2 * 2 * b * s * h * B));
        cr_assert(eq(int, g->n, 8));
        /* MLP: on half the micro-batch over the 4 ranks of the rank's half */
        cr_assert(eq(dbl, named(&p, r, "ar_mlp", &n, &g), 2 * 2 * b / 2 * s * h * B));
        cr_assert(eq(int, g->n, 4));
        cr_assert(eq(int, g->ranks[0], r / 4 * 4));
        /* into the attention's layout: forward from layer 0's MLP to layer 1's attention,
         * backward from each layer's MLP to its attention, the whole micro-batch gathered
         * from the rank and the rank 4 away */
        cr_assert(eq(dbl, named(&p, r, "relayout_attn", &n, &g), 2 * b * s * h * 1 * B));
        cr_assert(eq(int, n, 2));
        cr_assert(eq(int, g->n, 2));
        cr_assert(eq(int, g->ranks[0], r % 4));
        cr_assert(eq(int, g->ranks[1], r % 4 + 4));
        cr_assert(eq(dbl, named(&p, r, "relayout_attn_bwd", &n, &g), 2 * b * s * h * 2 * B));
        cr_assert(eq(int, n, 4));
        /* into the MLP's: a slice, nothing moves */
        named(&p, r, "relayout_mlp", &n, &g);
        cr_assert(eq(int, n, 0));
        named(&p, r, "relayout_mlp_bwd", &n, &g);
        cr_assert(eq(int, n, 0));
        /* the MLP's weight gradients, once per layer after the last micro-batch, over its two
         * replicas; the attention has none */
        double mlp = h * ffn + ffn + ffn * h + h + 2 * h;
        cr_assert(eq(dbl, named(&p, r, "ar_mlp_wgrad_replicas", &n, &g), 2 * 2 * mlp / 4));
        cr_assert(eq(int, n, 2));
        cr_assert(eq(int, g->n, 2));
        cr_assert(eq(int, p.ranks[r].ops[0].stream, MDL_STREAM_COMPUTE));
        named(&p, r, "ar_attn_wgrad_replicas", &n, &g);
        cr_assert(eq(int, n, 0));
    }
    /* memory: the MLP's weights at 1/4, the attention's at 1/8 */
    struct mdl_memory mm, m1;
    mdl_strategy_memory(&st, &m, NULL, 1, &mm);
    mdl_strategy_memory(&one, &m, NULL, 1, &m1);
    double attn = mdl_model_sublayer_params(&m, 0), mlpp = mdl_model_sublayer_params(&m, 1);
    cr_assert(ieee_ulp_eq(dbl, mm.weights, 2 * (attn / 8 + mlpp / 4), 4));
    cr_assert(ieee_ulp_eq(dbl, m1.weights, 2 * (attn + mlpp) / 8, 4));
    /* the MLP's replicated activations (5sbh) on half the micro-batch; the sharded ones the
     * same 1/8 */
    cr_assert(ieee_ulp_eq(dbl, m1.activations - mm.activations, 5 * s * (b / 2) * h, 8));
    mdl_program_release(&p);
    mdl_program_release(&p1);
}

Test(strategy, per_sublayer_degrees_must_divide_tp_and_split_the_micro_batch)
{
    struct mdl_model m = model();
    struct tps_error err = {0};
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 8, .sublayer.mlp_tp = 3};
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    cr_assert(eq(str, err.field, "mlp_tp"));
    st.sublayer.mlp_tp = 2; /* 4 replicas of a micro-batch of 2 */
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    cr_assert(eq(str, err.field, "mlp_tp"));
    st.sublayer.mlp_tp = 4;
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), 0), "%s", err.msg);
    st.oases = true; /* and Oases' two sub-batches of 1 */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    st.oases = false;
    st.sequence_parallel = true;
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), 0));
    struct mdl_strategy two = {
        .kind = MDL_STRAT_2D, .tp = 8, .atp.d1 = 4, .atp.d2 = 2, .sublayer.attention_tp = 4};
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_strategy_check(&two, &m, &err), 0));
    cr_assert(eq(str, err.field, "attention_tp"));
}

/* PrimePar's mixed partition: tp/ring rings side by side, each on its share of the micro-batch.
 * Each ring shifts 3 (ring-1)/ring (b/r) s (3h + f) elements a layer and micro-batch among its
 * own members, its norms all-reduce within it, and after the last micro-batch each sublayer's
 * weight gradients (1/ring of them) are all-reduced across the r rings, on a stream of their
 * own. FLOPs are 1D's; weights are held at 1/ring. */
Test(strategy, primepar_rings_side_by_side_split_the_batch_and_reduce_their_gradients)
{
    struct mdl_model m = model();
    m.micro_batch = 4;
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    double b = (double)m.micro_batch, s = (double)m.seq, h = (double)m.hidden, f = (double)m.ffn;
    double params = mdl_model_sublayer_params(&m, 0) + mdl_model_sublayer_params(&m, 1);
    for (int ring = 2; ring <= 8; ring *= 2) {
        int r = 8 / ring;
        struct mdl_strategy st = {.kind = MDL_STRAT_PRIMEPAR,
                                  .tp = 8,
                                  .primepar.ring = ring,
                                  .async_grad_allreduce = true};
        struct mdl_strategy one = {.kind = MDL_STRAT_1D, .tp = 8, .async_grad_allreduce = true};
        struct mdl_program p, p1;
        struct tps_error err = {0};
        cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, 3, 2, &p, &err), 0), "%s",
                  err.msg);
        cr_assert(eq(int, mdl_strategy_lower(&one, &m, &dev, NULL, 3, 2, &p1, &err), 0));
        cr_assert(eq(int, mdl_program_check(&p, NULL, &err), 0), "%s", err.msg);
        cr_assert(ieee_ulp_eq(dbl, mdl_program_flop(&p), mdl_program_flop(&p1), 64));
        for (int k = 0; k < 8; k++) {
            double sent = 0, ln = 0, wg = 0;
            int nwg = 0;
            for (int i = 0; i < p.ranks[k].nops; i++) {
                const struct mdl_op *op = &p.ranks[k].ops[i];
                const struct mdl_group *g = op->group >= 0 ? &p.groups[op->group] : NULL;
                if (op->kind == MDL_OP_SEND_RECV && op->stream == MDL_STREAM_SHIFT_SEND) {
                    cr_assert(eq(int, g->ranks[1], k / ring * ring + (k + 1) % ring));
                    sent += op->bytes;
                } else if (op->kind == MDL_OP_ALL_REDUCE && op->stream == MDL_STREAM_COMM3) {
                    cr_assert(eq(int, g->n, r));
                    cr_assert(eq(int, g->ranks[0], k % ring));
                    wg += op->bytes;
                    nwg++;
                } else if (op->kind == MDL_OP_ALL_REDUCE) {
                    cr_assert(eq(int, g->n, ring));
                    ln += op->bytes;
                }
            }
            double expect = 3 * 2 * 3 * (ring - 1.0) / ring * (b / r) * s * (3 * h + f) * 2;
            cr_assert(ieee_ulp_eq(dbl, sent, expect, 64), "ring %d: %g vs %g", ring, sent, expect);
            cr_assert(eq(dbl, ln, 3 * 2 * 4 * (b / r) * s * 8.0), "ring %d", ring);
            cr_assert(eq(int, nwg, r > 1 ? 3 * 2 : 0), "ring %d: two sublayers a layer", ring);
            cr_assert(ieee_ulp_eq(dbl, wg, r > 1 ? 3 * params / ring * 2 : 0, 8), "ring %d", ring);
        }
        struct mdl_memory mm;
        mdl_strategy_memory(&st, &m, NULL, 1, &mm);
        cr_assert(ieee_ulp_eq(dbl, mm.weights, 2 * params / ring, 8));
        mdl_program_release(&p);
        mdl_program_release(&p1);
    }
    struct mdl_strategy bad = {.kind = MDL_STRAT_PRIMEPAR, .tp = 8, .primepar.ring = 3};
    struct tps_error err = {0};
    cr_assert(ne(int, mdl_strategy_check(&bad, &m, &err), 0));
    cr_assert(eq(str, err.field, "ring"));
}
