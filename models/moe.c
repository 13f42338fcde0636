/* moe.c - a mixture of experts as a layer's MLP, as Megatron-LM's MoE layer runs it with its
 * all-to-all token dispatcher, and its closed forms (strategy.h's mdl_moe_*; docs/moe.md).
 *
 * Each GPU holds its sequence-parallel share of the micro-batch's tokens (T = b s / (cp tp)).
 * The router (a replicated h x E linear, then softmax and top-k in fp32) picks top_k experts per
 * token; the tokens' copies are permuted by expert and sent to the GPUs holding their experts by
 * an all-to-all over the EP group (the dispatch). With expert tensor parallelism (expert_tp > 1)
 * the received tokens are then all-gathered over the expert-TP group, whose members each hold a
 * 1/expert_tp column (FC1) and row (FC2) slice of every local expert. The local experts run as
 * grouped GEMMs sized by the tokens each receives; the outputs are reduce-scattered over the
 * expert-TP group, sent back by a second all-to-all (the combine), un-permuted and summed with
 * their router weights. Shared experts run as a dense MLP on the TP group beside them. The
 * backward runs the same steps the other way: the combine's gradient is a dispatch-shaped
 * all-to-all and the dispatch's a combine-shaped one.
 *
 * Routing: balanced by default, every expert getting 1/E of the copies, so every EP rank
 * receives T top_k tokens per GPU. Skewed (model.moe.routing_skew or expert_shares), EP rank e
 * receives T top_k ep x (its experts' shares): a hot expert's GPU computes longer and every
 * all-to-all waits for it. In the dispatch, every GPU sends each peer that peer's share of its
 * tokens; tpsim's all-to-all sends each member's buffer evenly to its peers, so the dispatch is
 * lowered as its transpose, each GPU sending what it receives: on full-duplex links a GPU's
 * port then carries the same bytes each way (the combine is exactly that). With a capacity
 * factor, every expert takes capacity_factor x its balanced share from each GPU, padded to it
 * and the excess dropped (Megatron-LM's --moe-pad-expert-input-to-capacity): the work and the
 * bytes are then the capacity's whatever the routing.
 */
#include "kind.h"

/* Tokens of the micro-batch one GPU routes: its s/cp tokens, shared over tp with sequence
 * parallelism. */
static double tokens_of(const struct mdl_strategy *st, const struct mdl_model *m)
{
    double t = (double)m->micro_batch * (double)m->seq / mdl_strategy_cp(st);
    return mdl_strategy_shards_activations(st) ? t / st->tp : t;
}

double mdl_moe_tokens(const struct mdl_strategy *st, const struct mdl_model *m)
{
    return m->moe.experts > 0 ? tokens_of(st, m) : 0;
}

/* EP rank e's experts' share of the routed tokens. */
static double rank_share(const struct mdl_model *m, int ep, int e)
{
    int per = m->moe.experts / ep;
    double sh = 0;
    for (int j = e * per; j < (e + 1) * per; j++)
        sh += mdl_model_expert_share(m, j);
    return sh;
}

double mdl_moe_received(const struct mdl_strategy *st, const struct mdl_model *m, int e)
{
    double T = tokens_of(st, m), k = m->moe.top_k, ep = mdl_strategy_ep(st);
    if (m->moe.capacity_factor > 0) return m->moe.capacity_factor * T * k;
    return T * k * ep * rank_share(m, (int)ep, e);
}

int mdl_moe_hot_rank(const struct mdl_strategy *st, const struct mdl_model *m, double *share)
{
    int ep = mdl_strategy_ep(st), hot = 0;
    double best = -1;
    for (int e = 0; e < ep && m->moe.experts > 0; e++) {
        double sh = rank_share(m, ep, e);
        if (sh > best + 1e-12) {
            best = sh;
            hot = e;
        }
    }
    if (share) *share = best > 0 ? best : 0;
    return hot;
}

double mdl_moe_dispatch_bytes(const struct mdl_strategy *st, const struct mdl_model *m)
{
    if (m->moe.experts <= 0) return 0;
    double ep = mdl_strategy_ep(st);
    double bytes = tokens_of(st, m) * m->moe.top_k * (double)m->hidden * mdl_dtype_bytes(m->dtype);
    return bytes * (ep - 1) / ep;
}

double mdl_moe_layer_params(const struct mdl_strategy *st, const struct mdl_model *m,
                            double *expert)
{
    double h = (double)m->hidden, tp = st->tp;
    double local = (double)m->moe.experts / mdl_strategy_ep(st);
    *expert = local * mdl_model_expert_params(m) / mdl_strategy_etp(st);
    /* the attention and the MLP's norm split over tp as the dense layer's; the router
     * replicated; the shared experts column- and row-parallel over tp */
    return mdl_model_sublayer_params(m, 0) / tp + 2 * h / tp + mdl_model_router_params(m) +
           mdl_model_shared_params(m) / tp + *expert;
}

double lw_moe_activations(const struct mdl_strategy *st, const struct mdl_model *m)
{
    /* 16-bit units per GPU: the router's fp32 logits and probabilities (8 T E), the permuted
     * tokens (2 T k h), each expert's input, FC1 output and activation output on the tokens the
     * GPU's expert slices take (R etp (2h + 2u/etp + 2f/etp) for u = 2f gated, R the received
     * tokens), and the shared experts' MLP as the dense one's (6 T tp f_s / tp, gated) */
    double T = tokens_of(st, m), k = m->moe.top_k, h = (double)m->hidden;
    double etp = mdl_strategy_etp(st), f = (double)m->moe.expert_ffn, g = m->glu ? 2.0 : 1.0;
    double R = mdl_moe_received(st, m, mdl_moe_hot_rank(st, m, NULL)) * etp;
    double fs = (double)m->moe.shared_experts * f;
    double shared = mdl_strategy_shards_activations(st) ? T * st->tp : T;
    return 8 * T * m->moe.experts + 2 * T * k * h + R * (2 * h + 2 * (g + 1) * f / etp) +
           shared * 2 * (g + 1) * fs / st->tp;
}

/* A collective over the rank's EP or expert-TP group (marker g) of `bytes`, after op `after`;
 * none (-1) on a group of one or in a recomputation without collectives. */
static int ep_coll(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double bytes,
                   int after, int g)
{
    int n = g == MDL_GROUP_EP ? mdl_strategy_ep(L->st) : mdl_strategy_etp(L->st);
    if (n <= 1 || L->no_comm) return -1;
    struct mdl_op op = {.kind = (uint8_t)kind,
                        .stream = MDL_STREAM_COMM,
                        .dim = MDL_OP_DIM(g == MDL_GROUP_EP ? MDL_DIM_EP : MDL_DIM_TP),
                        .group = g,
                        .bytes = bytes};
    if (after >= 0) op.deps[op.ndeps++] = after;
    int x = lw_emit(L, &op, name);
    L->pending = x;
    return x;
}

/* What the rank's expert layer works on (one micro-batch). */
struct moe_dims {
    double T;   /* tokens the GPU routes */
    double R;   /* tokens it receives in the dispatch */
    double Rg;  /* and holds after the expert-TP all-gather */
    double El;  /* local experts */
    double tok; /* tokens per local expert */
    double fe;  /* the expert's FC1 and FC2 widths on the GPU: f / expert_tp, */
    double ue;  /* u / expert_tp */
    double bytes, etp, ep;
};

static struct moe_dims moe_dims(const struct mdl_lower *L)
{
    const struct mdl_model *m = L->m;
    struct moe_dims M = {
        .T = tokens_of(L->st, m), .etp = mdl_strategy_etp(L->st), .ep = mdl_strategy_ep(L->st)};
    M.R = mdl_moe_received(L->st, m, L->ep_rank);
    M.Rg = M.R * M.etp;
    M.El = (double)m->moe.experts / M.ep;
    M.tok = M.Rg / M.El;
    M.fe = (double)m->moe.expert_ffn / M.etp;
    M.ue = (m->glu ? 2.0 : 1.0) * M.fe;
    M.bytes = (double)m->hidden * mdl_dtype_bytes(m->dtype);
    return M;
}

/* The shared experts' MLP on the TP group (Megatron's dense MLP at their width): forward, or
 * backward. */
static void shared_fwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    double fs = (double)L->m->moe.shared_experts * (double)L->m->moe.expert_ffn;
    if (fs <= 0) return;
    double us = (D->glu ? 2.0 : 1.0) * fs, d1 = D->d1, bs = D->bs, h = D->h;
    if (D->sp) lw_coll(L, MDL_OP_ALL_GATHER, "ag_shared_expert", bs * h, L->last_comp, LW_AXIS_D1);
    lw_fp8_cast(L, "shared_fc1_fp8_cast", bs * h, -1);
    lw_gemm(L, MDL_OP_GEMM, "shared_fc1", 1, bs, us / d1, h);
    lw_mem(L, D->glu ? "shared_swiglu" : "shared_gelu", (D->glu ? 3 : 2) * bs * fs / d1);
    lw_fp8_cast(L, "shared_fc2_fp8_cast", bs * fs / d1, -1);
    lw_linear_reduce(L, "shared_fc2", "rs_shared_expert", bs, h, fs / d1, LW_AXIS_D1);
}

static void shared_bwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    double fs = (double)L->m->moe.shared_experts * (double)L->m->moe.expert_ffn;
    if (fs <= 0) return;
    double us = (D->glu ? 2.0 : 1.0) * fs, d1 = D->d1, bs = D->bs, h = D->h;
    if (D->sp)
        lw_coll(L, MDL_OP_ALL_GATHER, "ag_shared_expert_bwd", bs * h, L->last_comp, LW_AXIS_D1);
    lw_fp8_cast(L, "shared_fc2_grad_fp8_cast", bs * h, -1);
    lw_gemm(L, MDL_OP_GEMM, "shared_fc2_dgrad", 1, bs, fs / d1, h);
    lw_gemm(L, MDL_OP_GEMM, "shared_fc2_wgrad", 1, h, fs / d1, bs);
    lw_mem(L, D->glu ? "shared_swiglu_bwd" : "shared_gelu_bwd", (D->glu ? 5 : 3) * bs * fs / d1);
    lw_fp8_cast(L, "shared_fc1_grad_fp8_cast", bs * us / d1, -1);
    /* the input, kept as the rank's share, gathered again for the weight gradient */
    int ag = D->sp ? lw_coll_on(L, MDL_OP_ALL_GATHER, "ag_shared_input_bwd", bs * h, L->last_comp,
                                LW_AXIS_D1, 0)
                   : -1;
    lw_linear_reduce(L, "shared_fc1_dgrad", "rs_shared_expert_bwd", bs, h, us / d1, LW_AXIS_D1);
    int saved = L->pending;
    L->pending = -1;
    L->pending2 = ag;
    lw_gemm(L, MDL_OP_GEMM, "shared_fc1_wgrad", 1, us / d1, h, bs);
    L->pending = saved;
}

void lw_moe_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    struct moe_dims M = moe_dims(L);
    const struct mdl_moe *x = &L->m->moe;
    double h = D.h, T = M.T, k = x->top_k, E = x->experts, f32 = 4.0 / mdl_dtype_bytes(L->m->dtype);
    lw_mem_k(L, MDL_MEM_NORM, "ln2", 2 * T * h);
    /* the router: logits (a plain linear, never FP8), then softmax and top-k over them in fp32 */
    L->no_fp8++;
    lw_gemm(L, MDL_OP_GEMM, "router", 1, T, E, h);
    L->no_fp8--;
    lw_mem_k(L, MDL_MEM_SOFTMAX, "router_topk", 2 * T * E * f32);
    lw_mem(L, "moe_permute", T * h + T * k * h);
    ep_coll(L, MDL_OP_ALL_TO_ALL, "a2a_dispatch", M.R * M.bytes, L->last_comp, MDL_GROUP_EP);
    ep_coll(L, MDL_OP_ALL_GATHER, "ag_expert_tp", M.Rg * M.bytes, lw_ready(L), MDL_GROUP_ETP);
    if (M.El > 1 && M.ep > 1) lw_mem(L, "moe_sort_chunks", 2 * M.Rg * h);
    lw_fp8_cast(L, "expert_fc1_fp8_cast", M.Rg * h, -1);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc1", M.El, M.tok, M.ue, h);
    lw_mem(L, D.glu ? "expert_swiglu" : "expert_gelu", (D.glu ? 3 : 2) * M.Rg * M.fe);
    lw_fp8_cast(L, "expert_fc2_fp8_cast", M.Rg * M.fe, -1);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc2", M.El, M.tok, h, M.fe);
    if (M.El > 1 && M.ep > 1) lw_mem(L, "moe_unsort_chunks", 2 * M.Rg * h);
    ep_coll(L, MDL_OP_REDUCE_SCATTER, "rs_expert_tp", M.Rg * M.bytes, L->last_comp, MDL_GROUP_ETP);
    ep_coll(L, MDL_OP_ALL_TO_ALL, "a2a_combine", M.R * M.bytes, lw_ready(L), MDL_GROUP_EP);
    /* the k outputs of each token weighted by its router probabilities and summed */
    lw_mem(L, "moe_unpermute", T * k * h + T * h);
    shared_fwd(L, &D);
    lw_dropout_add(L, "dropout_add2", T * h);
}

void lw_moe_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    struct moe_dims M = moe_dims(L);
    const struct mdl_moe *x = &L->m->moe;
    double h = D.h, T = M.T, k = x->top_k, E = x->experts, f32 = 4.0 / mdl_dtype_bytes(L->m->dtype);
    lw_mem(L, "dropout_add2_bwd", 2 * T * h);
    shared_bwd(L, &D);
    /* the output gradient spread to the k copies, and the router probabilities' gradient */
    lw_mem(L, "moe_unpermute_bwd", T * h + 2 * T * k * h);
    ep_coll(L, MDL_OP_ALL_TO_ALL, "a2a_combine_bwd", M.R * M.bytes, L->last_comp, MDL_GROUP_EP);
    ep_coll(L, MDL_OP_ALL_GATHER, "ag_expert_tp_bwd", M.Rg * M.bytes, lw_ready(L), MDL_GROUP_ETP);
    if (M.El > 1 && M.ep > 1) lw_mem(L, "moe_sort_chunks_bwd", 2 * M.Rg * h);
    lw_fp8_cast(L, "expert_fc2_grad_fp8_cast", M.Rg * h, -1);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc2_dgrad", M.El, M.tok, M.fe, h);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc2_wgrad", M.El, M.fe, h, M.tok);
    lw_mem(L, D.glu ? "expert_swiglu_bwd" : "expert_gelu_bwd", (D.glu ? 5 : 3) * M.Rg * M.fe);
    lw_fp8_cast(L, "expert_fc1_grad_fp8_cast", M.Rg * M.ue, -1);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc1_dgrad", M.El, M.tok, h, M.ue);
    lw_gemm(L, MDL_OP_GEMM, "expert_fc1_wgrad", M.El, h, M.ue, M.tok);
    if (M.El > 1 && M.ep > 1) lw_mem(L, "moe_unsort_chunks_bwd", 2 * M.Rg * h);
    ep_coll(L, MDL_OP_REDUCE_SCATTER, "rs_expert_tp_bwd", M.Rg * M.bytes, L->last_comp,
            MDL_GROUP_ETP);
    ep_coll(L, MDL_OP_ALL_TO_ALL, "a2a_dispatch_bwd", M.R * M.bytes, lw_ready(L), MDL_GROUP_EP);
    lw_mem(L, "moe_permute_bwd", T * k * h + T * h);
    lw_mem_k(L, MDL_MEM_SOFTMAX, "router_topk_bwd", 3 * T * E * f32);
    L->no_fp8++;
    lw_gemm(L, MDL_OP_GEMM, "router_dgrad", 1, T, h, E);
    lw_gemm(L, MDL_OP_GEMM, "router_wgrad", 1, h, E, T);
    L->no_fp8--;
    lw_ln_bwd(L, "ln2_bwd", T * h);
}
