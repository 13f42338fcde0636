/* strategy.c - the table of strategy kinds (kind.h) and what strategy.h asks of a strategy
 * through it: names, mesh, description, memory and checks. The kinds' own files (kind_*.c) hold
 * what differs; the common checks and the memory terms every kind shares are here. Lowering is
 * lower.c's.
 */
#include "strategy.h"

#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"

/* The kinds, built in (in enum mdl_strategy_kind's order) then registered. */
static const struct mdl_kind *kinds[MDL_MAX_KINDS] = {
    &mdl_kind_1d,      &mdl_kind_2d,        &mdl_kind_primepar,
    &mdl_kind_summa2d, &mdl_kind_tesseract, &mdl_kind_tp3d,
};
static int nkinds = 6;

const char *const mdl_cp_comm_names[] = {"p2p", "all_gather", "a2a", NULL};

int mdl_strategy_cp(const struct mdl_strategy *st)
{
    return st->cp > 1 ? st->cp : 1;
}

int mdl_strategy_gpus(const struct mdl_strategy *st)
{
    return st->tp * mdl_strategy_cp(st);
}

int mdl_strategy_ep(const struct mdl_strategy *st)
{
    return st->ep > 1 ? st->ep : 1;
}

int mdl_strategy_etp(const struct mdl_strategy *st)
{
    return st->expert_tp > 0 ? st->expert_tp : st->tp;
}

static int gcd(int a, int b)
{
    return b ? gcd(b, a % b) : a;
}

int mdl_strategy_lower_gpus(const struct mdl_strategy *st, const struct mdl_model *m)
{
    int g = mdl_strategy_gpus(st);
    if (m->moe.experts <= 0) return g;
    long long e = (long long)mdl_strategy_ep(st) * mdl_strategy_etp(st);
    if (e > INT_MAX) return INT_MAX; /* far beyond any platform: refused there */
    long long l = g / gcd(g, (int)e) * e;
    return l > INT_MAX ? INT_MAX : (int)l;
}

const struct mdl_kind *mdl_kind_of(const struct mdl_strategy *st)
{
    TPS_ASSERT((unsigned)st->kind < (unsigned)nkinds);
    return kinds[st->kind];
}

const struct mdl_kind *mdl_kind_at(int i)
{
    return i >= 0 && i < nkinds ? kinds[i] : NULL;
}

struct mdl_strategy mdl_strategy_candidate(const struct mdl_strategy *base,
                                           enum mdl_strategy_kind k)
{
    struct mdl_strategy st = *base;
    st.kind = k;
    st.atp.d1 = base->tp;
    st.atp.d2 = 1;
    st.atp.placement = MDL_ROW_FIRST;
    st.sublayer.attention_tp = st.sublayer.mlp_tp = st.primepar.ring = st.tesseract.depth = 0;
    st.chunks = 1;
    st.oases = st.sequence_parallel = st.atp.extra_allgathers = false;
    /* the planners add the TP overlaps to the candidates that take them */
    st.tp_comm_overlap = st.async_tp = false;
    return st;
}

int mdl_strategy_candidates(const struct mdl_strategy *base, bool sp, mdl_strategy_add add,
                            void *ctx)
{
    for (int i = 0; i < nkinds; i++) {
        int rc = kinds[i]->candidates
                     ? kinds[i]->candidates((enum mdl_strategy_kind)i, base, sp, add, ctx)
                     : 0;
        if (rc) return rc;
    }
    return 0;
}

int mdl_kind_register(const struct mdl_kind *k)
{
    enum mdl_strategy_kind dummy;
    if (nkinds == MDL_MAX_KINDS || !mdl_strategy_kind_parse(k->name, &dummy)) return -1;
    kinds[nkinds] = k;
    return nkinds++;
}

const char *mdl_strategy_kind_name(enum mdl_strategy_kind k)
{
    return (unsigned)k < (unsigned)nkinds ? kinds[k]->name : "?";
}

int mdl_strategy_kind_parse(const char *name, enum mdl_strategy_kind *out)
{
    for (int i = 0; i < nkinds; i++)
        if (!strcmp(name, kinds[i]->name)) {
            *out = (enum mdl_strategy_kind)i;
            return 0;
        }
    return -1;
}

bool mdl_strategy_shards_activations(const struct mdl_strategy *st)
{
    return st->sequence_parallel || mdl_kind_of(st)->sharded;
}

void mdl_strategy_mesh(const struct mdl_strategy *st, int *d1, int *d2)
{
    mdl_kind_of(st)->mesh(st, d1, d2);
}

int mdl_strategy_depth(const struct mdl_strategy *st)
{
    const struct mdl_kind *K = mdl_kind_of(st);
    return K->depth ? K->depth(st) : 1;
}

int mdl_strategy_sub_tp(const struct mdl_strategy *st, int mlp)
{
    int t = mlp ? st->sublayer.mlp_tp : st->sublayer.attention_tp;
    return t > 0 ? t : st->tp;
}

bool mdl_strategy_is_mixed(const struct mdl_strategy *st)
{
    return mdl_strategy_sub_tp(st, 0) != st->tp || mdl_strategy_sub_tp(st, 1) != st->tp;
}

int mdl_strategy_device(const struct mdl_strategy *st, int i, int j)
{
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    return st->atp.placement == MDL_COLUMN_FIRST ? j * d1 + i : i * d2 + j;
}

void mdl_strategy_describe(const struct mdl_strategy *st, char *buf, size_t len)
{
    char opts[128] = "";
    size_t n = 0;
    if (st->cp > 1)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " cp=%d (%s)", st->cp,
                              mdl_cp_comm_names[st->cp_comm]);
    if (st->ep > 1 || st->expert_tp > 0)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " ep=%d expert_tp=%d", mdl_strategy_ep(st),
                              mdl_strategy_etp(st));
    if (st->chunks > 1)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +%d-chunk overlap", st->chunks);
    if (st->oases && n < sizeof opts) n += (size_t)snprintf(opts + n, sizeof opts - n, " +oases");
    if (st->tp_comm_overlap && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +tp-comm-overlap");
    if (st->async_tp && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +async-tp");
    if (st->recompute && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +recompute%s",
                              st->oases ? " (no forward collectives)" : "");
    else if (st->selective && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +selective recompute");
    if (!st->async_grad_allreduce && n < sizeof opts)
        snprintf(opts + n, sizeof opts - n, " (no grad all-reduce overlap)");
    mdl_kind_of(st)->describe(st, opts, buf, len);
}

struct mdl_framework mdl_strategy_framework(const struct mdl_strategy *st,
                                            const struct mdl_framework *fw)
{
    struct mdl_framework f = *fw;
    if (mdl_strategy_cp(st) > 1) f.attention = MDL_ATTENTION_FLASH;
    return f;
}

void mdl_strategy_layer_activations(const struct mdl_strategy *st, const struct mdl_model *m,
                                    const struct mdl_framework *fw, double *full, double *input)
{
    /* Activations per layer and micro-batch (Korthikanti et al. 2022, bytes for 2-byte
     * activations; scaled for other dtypes): s*b*h*(10 + 24/t) + 5*a*s^2*b/t for 1D,
     * s*b*h*34/t + 5*a*s^2*b/t with sequence parallelism. 2D: the replicated part is sharded
     * over d2 only and the attention scores over d1 only (the d2 devices of a row hold the same
     * heads). Full recomputation keeps only each layer's input (2*s*b*h, sharded over d2, or
     * over t with sequence parallelism). Oases' two half sub-batches and ATP's chunks hold the
     * same bytes. Flash attention keeps no s x s tensor, and selective recomputation recomputes
     * it: the 5as^2b term goes. The 24sbh/t part is q, k, v and the projection's input (8sbh)
     * and the MLP's 16sbh (FC1 output, activation output: 4sbf); grouped-query attention
     * shrinks k and v to kv_heads/heads of it (4 + 4g/a) and a gated MLP keeps gate, up and
     * their product (6sbf). PrimePar shards every activation over the group, as sequence
     * parallelism does (hidden dim instead of tokens: the same bytes), and so do Colossal-AI's
     * block meshes, whose every activation is a block of the mesh; 3D keeps, besides, each
     * linear's input and weight as all-gathered for its backward (strategies.md section 7: the
     * backward gathers neither again): the inputs of QKV, projection and FC1 (2sbh each) and of
     * FC2 (2sbf) at 1/q^2 rather than 1/q^3, and the layer's weight matrices at 1/q^2. */
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    /* context parallelism: every term on the rank's s/cp tokens (its attention is fused) */
    double h = (double)m->hidden, s = (double)m->seq / mdl_strategy_cp(st);
    double b = (double)m->micro_batch, a = (double)m->heads, t = st->tp, f = (double)m->ffn;
    double g = (double)mdl_model_kv_heads(m);
    double shard = 4 + 4 * g / a + (m->glu ? 6 : 4) * f / h;
    /* the attention core's s x s tensors: the softmax output (2as^2b bytes in 16-bit), and with
     * attention dropout its mask (as^2b) and output (2as^2b): Korthikanti et al.'s 5as^2b */
    double sq = (fw && fw->attention == MDL_ATTENTION_FLASH) || st->selective ? 0
                : m->attn_dropout                                             ? 5 * a * s * s * b
                                                                              : 2 * a * s * s * b;
    bool sharded = mdl_strategy_shards_activations(st);
    double act = sharded ? s * b * h * (10 + shard) / t + sq / t
                         : s * b * h * (10.0 / d2 + shard / t) + sq / d1;
    if (mdl_strategy_is_mixed(st)) {
        /* per-sublayer plan: each sublayer's half of the replicated 10sbh (its norm's input,
         * its first linear's input, its dropout mask: 5sbh) and its own sharded part on the
         * 1/r of the micro-batch its replica runs (r = tp/t), sharded over its degree t */
        double ta = mdl_strategy_sub_tp(st, 0), tm = mdl_strategy_sub_tp(st, 1);
        double ba = b * ta / t, bm = b * tm / t;
        act = s * ba * h * (5 + (4 + 4 * g / a) / ta) + sq / t +
              s * bm * h * (5 + (m->glu ? 6 : 4) * f / h / tm);
        *full = act * mdl_dtype_bytes(m->dtype) / 2.0;
        *input = 2 * s * ba * h * mdl_dtype_bytes(m->dtype) / 2.0;
        return;
    }
    const struct mdl_kind *K = mdl_kind_of(st);
    if (K->extra_activations) act += K->extra_activations(st, m);
    /* a mixture of experts keeps its own MLP's tensors instead of the dense one's (the expert
     * layers', which most layers are) */
    if (m->moe.experts > 0) act += lw_moe_activations(st, m) - s * b * (m->glu ? 6 : 4) * f / t;
    /* FP8: Transformer Engine saves each linear's input for its weight gradient as the FP8 copy,
     * half the 16-bit one: QKV's and FC1's (2sbh each, replicated without sequence
     * parallelism), the projection's (2sbh/t) and FC2's (2sbf/t; dense MLP) */
    if (m->fp8)
        act -= s * b * h * (sharded ? 2.0 / t : 2.0) + s * b * h / t +
               (m->moe.experts > 0 ? 0 : s * b * f / t);
    double scale = mdl_dtype_bytes(m->dtype) / 2.0;
    *full = act * scale;
    *input = 2 * s * b * h / (sharded ? t : d2) * scale;
}

double mdl_strategy_fp8_weight_bytes(const struct mdl_strategy *st, const struct mdl_model *m)
{
    /* Transformer Engine keeps each linear weight's FP8 copy and its transpose (the data
     * gradient's operand) beside the 16-bit weight: 2 bytes per parameter (the norms' few are
     * counted too) */
    return m->fp8 ? 2 * mdl_strategy_layer_params(st, m) : 0;
}

double mdl_strategy_layer_params(const struct mdl_strategy *st, const struct mdl_model *m)
{
    double expert;
    if (m->moe.experts > 0) return mdl_moe_layer_params(st, m, &expert);
    /* QKV h*q+q (q = 3h for multi-head attention), projection h^2+h, FC1 h*u+u (u = f, or 2f
     * gated), FC2 f*h+h, two layer norms 4h: 4h^2+2hf+9h+f for a GPT layer; split over all tp
     * devices (Narayanan et al. 2021 neglect the small replicated biases and norms the same
     * way). Tesseract's slices each hold all of them: a split over q^2 devices. */
    const struct mdl_kind *K = mdl_kind_of(st);
    double shards = K->param_shards ? K->param_shards(st) : (double)st->tp;
    if (mdl_strategy_is_mixed(st))
        return mdl_model_sublayer_params(m, 0) / mdl_strategy_sub_tp(st, 0) +
               mdl_model_sublayer_params(m, 1) / mdl_strategy_sub_tp(st, 1);
    return (mdl_model_sublayer_params(m, 0) + mdl_model_sublayer_params(m, 1)) / shards;
}

void mdl_memory_params(double params, enum mdl_dtype dt, double optimizer_shards,
                       struct mdl_memory *out)
{
    /* mixed-precision Adam: 2 + 2 + 12 = 16 bytes per parameter (Rajbhandari et al. 2020) */
    double wb = mdl_dtype_bytes(dt);
    out->weights = params * wb;
    out->gradients = params * wb;
    out->optimizer = params * (wb >= 4 ? 8 : 12) / optimizer_shards;
}

double mdl_strategy_memory(const struct mdl_strategy *st, const struct mdl_model *m,
                           const struct mdl_framework *fw, int layers, struct mdl_memory *out)
{
    /* Full recomputation keeps each layer's input plus one layer's full activations for the
     * backward in progress. */
    double act, input;
    mdl_strategy_layer_activations(st, m, fw, &act, &input);
    mdl_memory_params(layers * mdl_strategy_layer_params(st, m), m->dtype, 1, out);
    out->weights += layers * mdl_strategy_fp8_weight_bytes(st, m);
    out->activations = st->recompute ? layers * input + act : layers * act;
    out->total = out->weights + out->gradients + out->optimizer + out->activations;
    return out->total;
}

/* Context parallelism: a kind whose layer runs the shared attention core, every CP rank's two
 * chunks of whole tokens (its s/cp split on its TP group with sequence parallelism), and for
 * the all-to-all, heads that split over tp x cp. */
static int check_cp(const struct mdl_strategy *st, const struct mdl_model *m, long d,
                    struct tps_error *err)
{
    long cp = st->cp;
    if (cp < 0 || cp > MDL_MAX_TP)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp", "must be 1 to %d, got %ld",
                             MDL_MAX_TP, cp);
    if (cp <= 1) return TPS_OK;
    const struct mdl_kind *K = mdl_kind_of(st);
    if (!K->context)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp",
                             "context parallelism applies to kinds 1d and 2d, not %s", K->name);
    if (mdl_strategy_is_mixed(st))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp",
                             "does not combine with per-sublayer TP degrees");
    if (m->seq % (2 * cp))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp",
                             "the sequence is split into 2 x cp = %ld chunks, which must divide "
                             "model.seq (%ld)",
                             2 * cp, m->seq);
    if (st->sequence_parallel && (m->seq / cp) % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp",
                             "with sequence parallelism tp (%ld) must divide a CP rank's "
                             "model.seq / cp = %ld tokens",
                             d, m->seq / cp);
    if (st->cp_comm == MDL_CP_A2A && m->heads % (d * cp))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "cp_comm_type",
                             "a2a splits the heads over tp x cp = %ld GPUs, which must divide "
                             "model.heads (%ld)",
                             d * cp, m->heads);
    return TPS_OK;
}

/* Expert parallelism: a mixture of experts to split, on kind 1d (Megatron's layer), ep dividing
 * the experts and expert_tp the expert's width; sequence parallelism with tp > 1 (Megatron-LM
 * requires it: the router runs on each rank's share of the tokens). */
static int check_moe(const struct mdl_strategy *st, const struct mdl_model *m,
                     struct tps_error *err)
{
    const struct mdl_moe *x = &m->moe;
    int ep = st->ep, etp = st->expert_tp;
    if (ep < 0 || ep > MDL_MAX_TP)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ep", "must be 1 to %d, got %d",
                             MDL_MAX_TP, ep);
    if (etp < 0 || etp > MDL_MAX_TP)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "expert_tp", "must be 1 to %d, got %d",
                             MDL_MAX_TP, etp);
    if (x->experts <= 0) {
        if (ep > 1 || etp > 0)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, ep > 1 ? "ep" : "expert_tp",
                                 "applies to a mixture of experts (model.moe)");
        return TPS_OK;
    }
    if (st->kind != MDL_STRAT_1D)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "kind",
                             "a mixture of experts runs on kind 1d (Megatron-LM's layer), not "
                             "yet on %s",
                             mdl_kind_of(st)->name);
    if (mdl_strategy_is_mixed(st) || st->oases)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, st->oases ? "oases" : "attention_tp",
                             "does not combine with a mixture of experts yet");
    if (x->experts % mdl_strategy_ep(st))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ep",
                             "must divide model.moe.experts (%d), got %d", x->experts, ep);
    if (x->expert_ffn % mdl_strategy_etp(st))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, etp ? "expert_tp" : "tp",
                             "the experts' tensor-parallel degree (%d) must divide "
                             "model.moe.expert_ffn (%ld)",
                             mdl_strategy_etp(st), x->expert_ffn);
    long shared = (long)x->shared_experts * x->expert_ffn;
    if (shared % st->tp)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide the shared experts' width (%ld)", shared);
    if (st->tp > 1 && !st->sequence_parallel)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sequence_parallel",
                             "a mixture of experts with tp > 1 needs sequence parallelism (as "
                             "Megatron-LM does): set strategy.sequence_parallel: true");
    return TPS_OK;
}

/* A TP overlap (`key`, by `who`) runs Megatron-LM's 1D layer (plain: one degree for both
 * sublayers), needs sequence parallelism (it `verb` its all-gathers and reduce-scatters), and
 * replaces `other` (another overlap given, NULL: none), ATP's chunks and Oases' sub-batches,
 * which overlap the same collectives otherwise. */
static int check_overlap(const struct mdl_strategy *st, bool plain, const char *key,
                         const char *who, const char *verb, const char *other,
                         struct tps_error *err)
{
    if (!plain)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, key,
                             "%s runs Megatron-LM's 1d layer with one TP degree only", who);
    if (!st->sequence_parallel || st->tp < 2)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, key,
                             "needs sequence_parallel: true and tp of 2 or more (it %s their "
                             "all-gathers and reduce-scatters)",
                             verb);
    if (other || st->chunks > 1 || st->oases)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, key, "replaces %s: give one of them",
                             other       ? other
                             : st->oases ? "oases"
                                         : "chunks");
    return TPS_OK;
}

/* Transformer Engine's FP8 runs Megatron-LM's 1D layer; so do its TP overlap and PyTorch's async
 * TP (check_overlap), one of them at a time. */
static int check_te(const struct mdl_strategy *st, const struct mdl_model *m, struct tps_error *err)
{
    bool plain = st->kind == MDL_STRAT_1D && !mdl_strategy_is_mixed(st);
    if (m->fp8 && !plain)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "kind",
                             "model.dtype fp8 (Transformer Engine) runs Megatron-LM's 1d layer "
                             "with one TP degree, not this one");
    int rc = TPS_OK;
    if (st->async_tp)
        rc = check_overlap(st, plain, "async_tensor_parallel", "PyTorch's async TP", "splits",
                           st->tp_comm_overlap ? "tp_comm_overlap" : NULL, err);
    if (!rc && st->tp_comm_overlap)
        rc = check_overlap(st, plain, "tp_comm_overlap", "Transformer Engine's TP overlap",
                           "overlaps", NULL, err);
    return rc;
}

int mdl_strategy_check(const struct mdl_strategy *st, const struct mdl_model *m,
                       struct tps_error *err)
{
    long d = st->tp;
    if (d < 1) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "must be at least 1");
    if (d > MDL_MAX_TP)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "at most %d, got %ld", MDL_MAX_TP,
                             d);
    const struct mdl_kind *K = mdl_kind_of(st);
    for (int mlp = 0; mlp < 2 && !K->sublayers; mlp++)
        if (mlp ? st->sublayer.mlp_tp : st->sublayer.attention_tp)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, mlp ? "mlp_tp" : "attention_tp",
                                 "per-sublayer TP degrees apply to kind 1d only");
    int rc = K->check(st, m, &d, err);
    if (rc) return rc;
    if (st->primepar.ring && !K->ring)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring", "applies to kind primepar only");
    if (m->heads % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.heads (%ld), got %ld", m->heads, d);
    if (m->hidden % m->heads)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "model.heads (%ld) must divide model.hidden (%ld)", m->heads,
                             m->hidden);
    if (mdl_model_kv_heads(m) % d) /* each rank holds whole key/value heads (Megatron's rule) */
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.kv_heads (%ld), got %ld", mdl_model_kv_heads(m), d);
    if (m->ffn % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.ffn (%ld), got %ld", m->ffn, d);
    if (st->sequence_parallel && m->seq % d)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "with sequence parallelism must divide model.seq (%ld), got %ld",
                             m->seq, d);
    if ((rc = check_cp(st, m, d, err))) return rc;
    if ((rc = check_te(st, m, err))) return rc;
    return check_moe(st, m, err);
}

int mdl_ops_check(double nops, const char *field, const char *hint, struct tps_error *err)
{
    if (nops <= mdl_max_ops()) return TPS_OK;
    char n[48];
    return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, field,
                         "the program would hold %s ops, above the limit of %.3g "
                         "(TPSIM_MAX_OPS): %s",
                         mdl_ops_text(nops, n, sizeof n), mdl_max_ops(), hint);
}

const char *mdl_ops_text(double nops, char *buf, size_t len)
{
    snprintf(buf, len, "%s%.3g", isinf(nops) ? "more than " : "",
             isinf(nops) ? mdl_max_ops() : nops);
    return buf;
}

double mdl_max_ops(void)
{
    const char *v = getenv("TPSIM_MAX_OPS");
    char *end;
    double x = v ? strtod(v, &end) : 0;
    return v && *v && !*end && x > 0 ? x : MDL_MAX_OPS_DEFAULT;
}
