/* context.c - context parallelism's attention (strategy.h's cp and cp_comm_type): a rank's s/cp
 * queries of each sequence against every key of it, as Transformer Engine runs it, and the
 * closed forms of its communication (docs/context-parallelism.md).
 *
 * The sequence is cut into 2 x cp chunks and CP rank i holds chunks i and 2cp - 1 - i: under the
 * causal mask every rank then has the same work (Megatron-Core's load balance). With p2p, the
 * keys and values of each rank's tokens travel round the CP ring: at step i a rank attends to
 * the block it received at step i - 1 while sending it on to the next rank. Step 0 is the rank's
 * own block under the causal mask; every other step is half a block (the first half of the
 * block's keys, or the second half of the rank's queries), dense. A fused attention kernel's
 * time follows the tiles it computes, which the causal kernel halves: every step computes as
 * many tiles, and the layer's whole attention the same tiles as the rank's share of a causal
 * s x s attention. tpsim prices a causal s x s attention as 4 b a s^2 hd FLOPs at the device's
 * flash efficiency (compute.h), so each step is priced as one s/cp x s/cp block of those: the
 * rank's cp steps add up to 1/cp of the attention without context parallelism. The backward
 * passes the blocks round the ring the other way with the gradients of the keys and values
 * accumulated so far (Transformer Engine: keys and values alone on the first step, their
 * gradients alone on the last, both between). all_gather gathers every rank's keys and values
 * before the attention (again in the backward, whose key and value gradients are then
 * reduce-scattered); a2a (DeepSpeed-Ulysses) trades the sequence split for a head split with an
 * all-to-all before the attention and one after it.
 */
#include "kind.h"

/* Keys and values of the rank's s/cp tokens of its micro-batch and its heads (elements). */
static double kv_elems(const struct mdl_dims *D)
{
    return 2 * D->bs * D->h * D->kv / D->d1;
}

/* A collective over the rank's CP group of `bytes`, after op `after`; -1 in a recomputation
 * without collectives. */
static int cp_coll(struct mdl_lower *L, enum mdl_op_kind kind, const char *name, double bytes,
                   int after)
{
    if (L->no_comm) return -1;
    struct mdl_op op = {.kind = (uint8_t)kind,
                        .stream = MDL_STREAM_CP_SEND,
                        .dim = MDL_OP_DIM(MDL_DIM_CP),
                        .group = MDL_GROUP_CP,
                        .bytes = bytes};
    if (after >= 0) op.deps[op.ndeps++] = after;
    return lw_emit(L, &op, name);
}

/* A block of `bytes` round the ring, forward (to the next CP rank) or backward (to the previous
 * one), after `after` and `after2`; -1 without collectives. */
static int ring_hop(struct mdl_lower *L, const char *name, double bytes, int back, int after,
                    int after2)
{
    if (L->no_comm) return -1;
    return lw_shift(L, name, bytes, back ? MDL_GROUP_CP_BACK_TO : MDL_GROUP_CP_TO,
                    back ? MDL_GROUP_CP_BACK_FROM : MDL_GROUP_CP_FROM, MDL_STREAM_CP_SEND,
                    MDL_STREAM_CP_RECV, MDL_OP_DIM(MDL_DIM_CP), after, after2);
}

/* Ring attention, forward: cp steps of one block each, block i + 1 in flight under step i, then
 * each step's output merged into the result by its softmax statistics. */
static int ring_fwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    int cp = (int)D->cp, got = -1, x = -1;
    double bh = D->b * D->a / D->d1, s = D->s, hd = D->h / D->a;
    double block = kv_elems(D) * mdl_dtype_bytes(L->m->dtype);
    int ready = lw_ready(L);
    for (int i = 0; i < cp && !L->oom; i++) {
        int next = i < cp - 1 ? ring_hop(L, "cp_kv", block, 0, i ? got : ready, -1) : -1;
        if (i > 0) L->pending = got;
        x = lw_flash(L, "cp_attn", bh, s, s, hd, 0, i > 0);
        got = next;
    }
    for (int i = 0; i < cp && !L->oom; i++)
        x = lw_mem(L, "cp_out_correction", 3 * D->bs * D->h / D->d1);
    return x;
}

/* Ring attention, backward: the blocks go round the other way, each step's message carrying the
 * next block's keys and values (but the last) and the gradients of the block before (but the
 * first's, which start on the rank); every step's query gradient is added to the rank's, every
 * block's key and value gradients to those the block brought, and the last gradients that come
 * back are added to the rank's own. */
static int ring_bwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    int cp = (int)D->cp, got = -1, made = -1, x = -1;
    double bh = D->b * D->a / D->d1, s = D->s, hd = D->h / D->a;
    double block = kv_elems(D) * mdl_dtype_bytes(L->m->dtype);
    int ready = lw_ready(L);
    for (int i = 0; i < cp && !L->oom; i++) {
        double bytes = (i < cp - 1 ? block : 0) + (i > 0 ? block : 0);
        int next = ring_hop(L, "cp_kv_dkv", bytes, 1, i ? got : ready, made);
        if (i > 0) L->pending = got;
        made = x = lw_flash(L, "cp_attn_bwd", bh, s, s, hd, 1, i > 0);
        if (i > 0) {
            lw_mem(L, "cp_dq_add", 3 * D->bs * D->h / D->d1);
            made = lw_mem(L, "cp_dkv_add", 3 * kv_elems(D));
        }
        got = next;
    }
    L->pending = got;
    x = lw_mem(L, "cp_dkv_add", 3 * kv_elems(D));
    return x;
}

/* all_gather: every rank's keys and values gathered before the attention (forward and
 * backward), their gradients reduce-scattered after the backward. */
static int gathered(struct mdl_lower *L, const struct mdl_dims *D, int bwd)
{
    double all = kv_elems(D) * mdl_dtype_bytes(L->m->dtype) * D->cp;
    int g = cp_coll(L, MDL_OP_ALL_GATHER, bwd ? "ag_cp_kv_bwd" : "ag_cp_kv", all,
                    bwd ? L->last_comp : lw_ready(L));
    if (g >= 0 && bwd) L->pending2 = g;
    if (g >= 0 && !bwd) L->pending = g;
    int x = lw_flash(L, bwd ? "cp_attn_bwd" : "cp_attn", D->b * D->a / D->d1, D->s, D->s * D->cp,
                     D->h / D->a, bwd, 0);
    int r = bwd ? cp_coll(L, MDL_OP_REDUCE_SCATTER, "rs_cp_dkv", all, x) : -1;
    if (r >= 0) L->pending = r;
    return x;
}

/* a2a (DeepSpeed-Ulysses): an all-to-all to a head split before the attention (q, k and v
 * forward, the output's gradient backward), the whole sequence's attention on 1/cp of the
 * heads, and one back to the sequence split after it (the output, or q, k and v's gradients). */
static int ulysses(struct mdl_lower *L, const struct mdl_dims *D, int bwd)
{
    double B = mdl_dtype_bytes(L->m->dtype), cp = D->cp;
    double qkv = D->bs * D->q / D->d1 * B, out = D->bs * D->h / D->d1 * B;
    int a = cp_coll(L, MDL_OP_ALL_TO_ALL, bwd ? "a2a_cp_dout" : "a2a_cp_qkv", bwd ? out : qkv,
                    lw_ready(L));
    if (a >= 0) L->pending = a;
    int x = lw_flash(L, bwd ? "cp_attn_bwd" : "cp_attn", D->b * D->a / D->d1 / cp, D->s * cp,
                     D->s * cp, D->h / D->a, bwd, 0);
    a = cp_coll(L, MDL_OP_ALL_TO_ALL, bwd ? "a2a_cp_dqkv" : "a2a_cp_out", bwd ? qkv : out, x);
    if (a >= 0) L->pending = a;
    return x;
}

int lw_cp_attn_fwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    return L->st->cp_comm == MDL_CP_ALL_GATHER ? gathered(L, D, 0)
           : L->st->cp_comm == MDL_CP_A2A      ? ulysses(L, D, 0)
                                               : ring_fwd(L, D);
}

int lw_cp_attn_bwd(struct mdl_lower *L, const struct mdl_dims *D)
{
    return L->st->cp_comm == MDL_CP_ALL_GATHER ? gathered(L, D, 1)
           : L->st->cp_comm == MDL_CP_A2A      ? ulysses(L, D, 1)
                                               : ring_bwd(L, D);
}

/* The rank's key and value block for one micro-batch: 2 b (s/cp) kv_heads hd / tp elements. */
static double block_bytes(const struct mdl_strategy *st, const struct mdl_model *m)
{
    double s = (double)m->seq / mdl_strategy_cp(st), hd = (double)m->hidden / (double)m->heads;
    return 2 * (double)m->micro_batch * s * (double)mdl_model_kv_heads(m) * hd / st->tp *
           mdl_dtype_bytes(m->dtype);
}

double mdl_cp_step_bytes(const struct mdl_strategy *st, const struct mdl_model *m)
{
    return mdl_strategy_cp(st) > 1 ? block_bytes(st, m) : 0;
}

double mdl_cp_layer_bytes(const struct mdl_strategy *st, const struct mdl_model *m)
{
    double cp = mdl_strategy_cp(st), B = mdl_dtype_bytes(m->dtype);
    if (cp <= 1) return 0;
    if (st->cp_comm == MDL_CP_A2A) {
        /* q, k, v and the output there and back, each rank keeping 1/cp of what it holds */
        double tok = (double)m->micro_batch * (double)m->seq / cp;
        double held = tok * (mdl_model_qkv_width(m) + (double)m->hidden) / st->tp * B;
        return 2 * held * (cp - 1) / cp;
    }
    /* p2p: cp - 1 blocks forward, cp - 1 blocks and cp - 1 of their gradients backward;
     * all_gather: a ring all-gather forward and backward and a reduce-scatter, each sending
     * cp - 1 blocks */
    return 3 * (cp - 1) * block_bytes(st, m);
}
