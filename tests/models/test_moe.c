/* test_moe.c - a mixture of experts with expert parallelism against its closed forms: the
 * dispatch and combine all-to-alls' bytes per routed token, the GEMM FLOPs of a layer (the
 * activated experts only, the same at every ep and expert_tp), the padded work of a capacity
 * factor, the parameters and memory of the experts, the expert groups, the shares of a skewed
 * routing, the model FLOPs of a job at any ep, and the checks. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <string.h>

#include "models/job.h"
#include "models/strategy.h"
#include "lowered.h"

TestSuite(moe);

/* Mixtral 8x7B (8 experts of width 14,336, top 2, SwiGLU), 4,096 tokens, 2 layers. */
static struct mdl_model model(void)
{
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("mixtral-8x7b", &m), 0));
    m.layers = 2;
    return m;
}

static struct mdl_strategy strategy(int tp, int ep, int etp)
{
    return (struct mdl_strategy){.kind = MDL_STRAT_1D,
                                 .tp = tp,
                                 .atp = {.d1 = tp, .d2 = 1},
                                 .async_grad_allreduce = true,
                                 .sequence_parallel = tp > 1,
                                 .ep = ep,
                                 .expert_tp = etp};
}

static bool close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

Test(moe, dispatch_and_combine_send_h_elements_per_routed_token)
{
    /* each GPU routes its sequence-parallel share of the tokens, T = s b / tp, and sends each
     * token's top_k copies of h elements, keeping the 1/ep for its own experts */
    struct mdl_model m = model();
    double B = 2, h = 4096, k = 2;
    static const int eps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        struct mdl_strategy st = strategy(2, eps[i], 1);
        double T = 4096.0 / 2, ep = eps[i];
        cr_assert(close_to(mdl_moe_tokens(&st, &m), T));
        cr_assert(close_to(mdl_moe_dispatch_bytes(&st, &m), T * k * h * B * (ep - 1) / ep));
        cr_assert(close_to(mdl_moe_dispatch_bytes(&st, &m) / (T * k) * ep / (ep - 1), h * B));
        /* the lowered all-to-alls carry each GPU's buffer: T k h B, forward and backward */
        struct mdl_program p;
        lower(&st, &m, &p);
        double bytes, flop;
        cr_assert(eq(int, sum_ops(&p, 0, "a2a_dispatch", &bytes, &flop), 2), "ep=%d", eps[i]);
        cr_assert(close_to(bytes, 2 * T * k * h * B));
        cr_assert(eq(int, sum_ops(&p, 0, "a2a_combine", &bytes, &flop), 2));
        cr_assert(close_to(bytes, 2 * T * k * h * B));
        mdl_program_release(&p);
    }
    /* no expert parallelism: nothing to send */
    struct mdl_strategy one = strategy(1, 1, 0);
    cr_assert(eq(dbl, mdl_moe_dispatch_bytes(&one, &m), 0));
}

Test(moe, expert_tp_gathers_the_received_tokens_over_its_group)
{
    /* ep 4 with expert_tp 2: every GPU receives T k tokens, all-gathers them over its 2 expert-TP
     * peers and reduce-scatters the outputs back, forward and backward */
    struct mdl_model m = model();
    struct mdl_strategy st = strategy(2, 4, 2);
    struct mdl_program p;
    lower(&st, &m, &p);
    cr_assert(eq(int, p.nranks, 8)); /* lcm(tp 2, expert_tp x ep 8) */
    double T = 4096.0 / 2, B = 2, h = 4096, bytes, flop;
    cr_assert(eq(int, sum_ops(&p, 0, "ag_expert_tp", &bytes, &flop), 2));
    cr_assert(close_to(bytes, 2 * T * 2 * 2 * h * B));
    cr_assert(eq(int, sum_ops(&p, 0, "rs_expert_tp", &bytes, &flop), 2));
    /* the groups: EP members 2 apart, expert-TP pairs side by side */
    for (int i = 0; i < p.ranks[3].nops; i++) {
        const struct mdl_op *o = &p.ranks[3].ops[i];
        const char *nm = p.names[o->name];
        if (!strcmp(nm, "a2a_dispatch")) {
            const struct mdl_group *g = &p.groups[o->group];
            cr_assert(eq(int, g->n, 4));
            cr_assert(eq(int, g->ranks[0], 1));
            cr_assert(eq(int, g->ranks[3], 7));
        }
        if (!strcmp(nm, "ag_expert_tp")) {
            const struct mdl_group *g = &p.groups[o->group];
            cr_assert(eq(int, g->n, 2));
            cr_assert(eq(int, g->ranks[0], 2));
            cr_assert(eq(int, g->ranks[1], 3));
        }
    }
    mdl_program_release(&p);
}

/* Forward GEMM FLOPs of a lowered one-layer program, every GPU. */
static double fwd_gemm_flop(const struct mdl_program *p)
{
    double f = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *o = &p->ranks[r].ops[i];
            if (o->kind == MDL_OP_GEMM && o->phase == MDL_PHASE_FWD) f += o->flop;
        }
    return f;
}

Test(moe, a_layers_gemms_count_the_activated_experts_at_any_layout)
{
    /* the forward GEMMs of every GPU are the layer's model FLOPs less the attention core's,
     * times the layer groups side by side: 2bs(hq + h^2) + 2bsh E + top_k 2bs(h u + f h) */
    struct mdl_model m = model();
    double bs = 4096, h = 4096, q = 4096 + 2 * 8 * 128, f = 14336;
    double layer = 2 * bs * (h * q + h * h) + 2 * bs * h * 8 + 2 * 2 * bs * (h * 2 * f + f * h);
    cr_assert(close_to(mdl_model_mlp_fwd_flop(&m, 0), 2 * bs * h * 8 + 2 * 2 * bs * 3 * h * f));
    static const int lay[][3] = {{1, 1, 0}, {1, 2, 0}, {1, 8, 0}, {2, 4, 1},
                                 {2, 2, 2}, {4, 8, 1}, {2, 8, 2}, {8, 8, 1}};
    for (size_t i = 0; i < sizeof lay / sizeof lay[0]; i++) {
        struct mdl_strategy st = strategy(lay[i][0], lay[i][1], lay[i][2]);
        struct mdl_program p;
        lower(&st, &m, &p);
        double groups = (double)p.nranks / st.tp;
        cr_assert(ieee_ulp_eq(dbl, fwd_gemm_flop(&p), layer * groups, 64), "tp %d ep %d etp %d",
                  lay[i][0], lay[i][1], lay[i][2]);
        cr_assert(close_to(p.model_flop, groups * mdl_model_flop(&m, 1, 1)));
        mdl_program_release(&p);
    }
}

Test(moe, a_capacity_factor_pads_every_expert_to_its_capacity)
{
    /* capacity 1.5: every expert computes 1.5 x its balanced tokens, skewed or not */
    struct mdl_model m = model();
    struct mdl_strategy st = strategy(1, 4, 0);
    struct mdl_program p;
    lower(&st, &m, &p);
    double bytes, plain, padded;
    sum_ops(&p, 0, "expert_fc", &bytes, &plain);
    mdl_program_release(&p);
    m.moe.capacity_factor = 1.5;
    mdl_moe_zipf(&m.moe, 2, 7);
    lower(&st, &m, &p);
    sum_ops(&p, 0, "expert_fc", &bytes, &padded);
    cr_assert(close_to(padded, 1.5 * plain));
    cr_assert(close_to(mdl_moe_received(&st, &m, 3), 1.5 * 4096 * 2));
    mdl_program_release(&p);
}

Test(moe, skewed_routing_gives_the_hot_experts_gpu_its_tokens)
{
    /* explicit shares: expert 5 takes half the copies, the others 1/14 each; with ep 4 (experts
     * 4-5 on EP rank 2) rank 2 receives ep x (1/2 + 1/14) of the balanced T k */
    struct mdl_model m = model();
    for (int e = 0; e < 8; e++)
        m.moe.share[e] = e == 5 ? 0.5f : 0.5f / 7;
    m.moe.skewed = true;
    struct mdl_strategy st = strategy(1, 4, 0);
    double share;
    cr_assert(eq(int, mdl_moe_hot_rank(&st, &m, &share), 2));
    cr_assert(fabs(share - (0.5 + 0.5 / 7)) < 1e-6); /* float shares */
    double T = 4096, k = 2;
    cr_assert(fabs(mdl_moe_received(&st, &m, 2) - T * k * 4 * (0.5 + 0.5 / 7)) < 1);
    cr_assert(fabs(mdl_moe_received(&st, &m, 0) - T * k * 4 * (1.0 / 7)) < 1);
    /* every GPU is lowered with its own tokens: the hot one's expert GEMMs are the longest */
    struct mdl_program p;
    lower(&st, &m, &p);
    double bytes, f0, f2;
    sum_ops(&p, 0, "expert_fc", &bytes, &f0);
    sum_ops(&p, 2, "expert_fc", &bytes, &f2);
    cr_assert(fabs(f2 / f0 - (0.5 + 0.5 / 7) / (1.0 / 7)) < 1e-5); /* float shares */
    mdl_program_release(&p);
}

Test(moe, a_zipf_routing_is_seeded_and_sums_to_one)
{
    struct mdl_model m = model(), n = model();
    mdl_moe_zipf(&m.moe, 1.2, 3);
    mdl_moe_zipf(&n.moe, 1.2, 3);
    double sum = 0, top = 0;
    for (int e = 0; e < 8; e++) {
        cr_assert(eq(flt, m.moe.share[e], n.moe.share[e]));
        sum += m.moe.share[e];
        if (m.moe.share[e] > top) top = m.moe.share[e];
    }
    cr_assert(fabs(sum - 1) < 1e-6);
    /* the hottest expert's share: 1 / sum over r of (r/1)^-1.2 */
    double h = 0;
    for (int r = 1; r <= 8; r++)
        h += pow(r, -1.2);
    cr_assert(fabs(top - 1 / h) < 1e-6);
    cr_assert(m.moe.skewed);
    mdl_moe_zipf(&n.moe, 0, 3);
    cr_assert(not(n.moe.skewed));
}

Test(moe, the_experts_parameters_split_over_ep_and_expert_tp)
{
    /* one expert: FC1 h x 2f (+2f), FC2 f x h (+h); the router h x E replicated; a GPU holds
     * E/ep experts' 1/expert_tp */
    struct mdl_model m = model();
    double h = 4096, f = 14336, one = h * 2 * f + 2 * f + f * h + h;
    cr_assert(close_to(mdl_model_expert_params(&m), one));
    cr_assert(close_to(mdl_model_router_params(&m), h * 8));
    struct mdl_strategy st = strategy(2, 4, 1);
    double ex, all = mdl_moe_layer_params(&st, &m, &ex);
    cr_assert(close_to(ex, 2 * one));
    double attn = mdl_model_sublayer_params(&m, 0) / 2 + 2 * h / 2;
    cr_assert(close_to(all, attn + h * 8 + 2 * one));
    st = strategy(2, 4, 2);
    mdl_moe_layer_params(&st, &m, &ex);
    cr_assert(close_to(ex, one));
    cr_assert(close_to(mdl_strategy_layer_params(&st, &m), attn + h * 8 + one));
}

Test(moe, a_jobs_experts_state_shards_over_the_expert_replicas)
{
    /* 64 GPUs: tp 2, pp 2, dp 16, ep 8 (expert_tp 1): 32 GPUs a stage, 4 expert replicas. With
     * the distributed optimizer the dense state splits over dp = 16, the experts' over 4 */
    struct mdl_model m = model();
    m.layers = 4;
    struct mdl_strategy st = strategy(2, 8, 1);
    struct mdl_job job = {.pp = 2, .dp = 16, .virtual_stages = 1, .micro_batches = 4, .zero = 1};
    cr_assert(eq(int, mdl_job_expert_replicas(&job, &st), 4));
    struct mdl_memory mem;
    mdl_job_memory(&job, &st, &m, NULL, &mem);
    double ex, lp = mdl_moe_layer_params(&st, &m, &ex);
    double emb = 32000.0 * 4096 / 2; /* stage 0: the embedding; the last: the logits' */
    double want = ((2 * lp + emb) - 2 * ex) * 12 / 16 + 2 * ex * 12 / 4;
    cr_assert(close_to(mem.optimizer, want), "%g vs %g", mem.optimizer, want);
    cr_assert(close_to(mem.weights, (2 * lp + emb) * 2));
}

Test(moe, a_jobs_model_flops_do_not_move_with_ep)
{
    /* Mixtral 8x7B, 32 layers: 3 x (the layers' forward) + the logits', per micro-batch, at
     * every layout; and the leading dense layers of a DeepSeek-V3-like model count dense */
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("mixtral-8x7b", &m), 0));
    struct mdl_job job = {.pp = 4, .dp = 8, .virtual_stages = 1, .micro_batches = 8, .zero = 1};
    double want =
        (3 * 32 * mdl_model_layer_fwd_flop_at(&m, 5) + 3 * mdl_model_logits_fwd_flop(&m)) * 8 * 8;
    cr_assert(close_to(mdl_job_model_flop(&job, &m), want));
    struct mdl_model d;
    cr_assert(eq(int, mdl_model_preset("deepseek-v3", &d), 0));
    cr_assert(not(mdl_model_is_moe_layer(&d, 2)));
    cr_assert(mdl_model_is_moe_layer(&d, 3));
    double bs = 4096, h = 7168;
    cr_assert(close_to(mdl_model_mlp_fwd_flop(&d, 0), 2 * bs * 3 * h * 18432));
    cr_assert(close_to(mdl_model_mlp_fwd_flop(&d, 3),
                       2 * bs * (h * 256 + 9 * 3 * h * 2048))); /* top 8 + 1 shared */
    cr_assert(close_to(mdl_model_flop(&d, 61, 1), 3 * (3 * mdl_model_layer_fwd_flop_at(&d, 0) +
                                                       58 * mdl_model_layer_fwd_flop_at(&d, 3))));
}

Test(moe, the_checks_name_the_field)
{
    struct mdl_model m = model();
    struct tps_error err = {0};
    struct mdl_strategy st = strategy(2, 3, 1);
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "ep"));
    err = (struct tps_error){0};
    st = strategy(2, 4, 3);
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "expert_tp"));
    err = (struct tps_error){0};
    st = strategy(2, 4, 1);
    st.sequence_parallel = false;
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "sequence_parallel"));
    err = (struct tps_error){0};
    st = strategy(2, 4, 1);
    st.kind = MDL_STRAT_2D;
    st.atp.d1 = 2;
    st.atp.d2 = 1;
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "kind"));
    /* a job whose stage's GPUs do not hold whole expert groups */
    err = (struct tps_error){0};
    st = strategy(2, 8, 0);
    struct mdl_job job = {.pp = 1, .dp = 4, .virtual_stages = 1, .micro_batches = 1};
    cr_assert(eq(int, mdl_job_check(&job, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "ep"));
    job.dp = 8;
    err = (struct tps_error){0};
    cr_assert(eq(int, mdl_job_check(&job, &st, &m, &err), TPS_OK), "%s", err.msg);
}

/* The whole model's parameters (mdl_model_params) by hand: Mixtral 8x7B's 32 layers of
 * attention h*q + q + h^2 + h + 2h (q = h + 2 x 8 x 128), per MoE layer a layer norm 2h, the
 * router h x 8 and 8 experts of h*u + u + f*h + h (u = 2f), untied embedding and logits 2Vh and
 * the final norm 2h; active: 2 experts instead of 8. */
Test(moe, the_models_parameters_follow_the_layer_formulas)
{
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("mixtral-8x7b", &m), 0));
    double h = 4096, f = 14336, V = 32000, q = h + 2 * 8 * 128, u = 2 * f;
    double attn = h * q + q + h * h + h + 2 * h, expert = h * u + u + f * h + h;
    double layer0 = attn + 2 * h + h * 8, tail = 2 * V * h + 2 * h;
    double all = 32 * (layer0 + 8 * expert) + tail, act = 32 * (layer0 + 2 * expert) + tail;
    double active = 0;
    cr_assert(ieee_ulp_eq(dbl, mdl_model_params(&m, true, &active), all, 4));
    cr_assert(ieee_ulp_eq(dbl, active, act, 4));
    /* tied: one copy of the vocabulary matrix */
    cr_assert(ieee_ulp_eq(dbl, mdl_model_params(&m, false, NULL), all - V * h, 4));
}
