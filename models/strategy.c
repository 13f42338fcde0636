/* strategy.c - lowering of 1D (Megatron-LM, optional sequence parallelism), 2D (ATP mesh) and
 * PrimePar's spatial-temporal tensor parallelism into per-rank ops: four GEMMs, attention core,
 * memory-bound kernels and collectives per mesh axis, forward and backward. On a d1 x d2 mesh,
 * activations are sharded on the hidden dim over d2: QKV and FC1 (weights h/d2 x out/d1) reduce
 * partial sums over d2, proj and FC2 (weights in/d1 x h/d2) over d1, and backward mirrors it; heads
 * are split over d1. PrimePar replaces each linear's collective by d - 1 ring shifts (see
 * strategy.h). Calls compute.c for durations. Units: elements are converted to bytes with the model
 * dtype; times in s; FLOP counts exact (2mnk per GEMM).
 */
#include "strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"

static const char *const kind_names[] = {"1d", "2d", "primepar", "summa2d", "tesseract", "tp3d"};

const char *mdl_strategy_kind_name(enum mdl_strategy_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof *kind_names ? kind_names[k] : "?";
}

int mdl_strategy_kind_parse(const char *name, enum mdl_strategy_kind *out)
{
    for (size_t i = 0; i < sizeof kind_names / sizeof *kind_names; i++)
        if (!strcmp(name, kind_names[i])) {
            *out = (enum mdl_strategy_kind)i;
            return 0;
        }
    return -1;
}

bool mdl_strategy_is_block(const struct mdl_strategy *st)
{
    return st->kind == MDL_STRAT_SUMMA2D || st->kind == MDL_STRAT_TESSERACT ||
           st->kind == MDL_STRAT_TP3D;
}

bool mdl_strategy_shards_activations(const struct mdl_strategy *st)
{
    return st->sequence_parallel || st->kind == MDL_STRAT_PRIMEPAR || mdl_strategy_is_block(st);
}

/* q with q^k == n, 0 when there is none. */
static int exact_root(long n, int k)
{
    for (long q = 1; n >= 1; q++) {
        long v = q;
        for (int i = 1; i < k; i++)
            v *= q;
        if (v == n) return (int)q;
        if (v > n) break;
    }
    return 0;
}

void mdl_strategy_mesh(const struct mdl_strategy *st, int *d1, int *d2)
{
    int q = 0;
    switch (st->kind) {
    case MDL_STRAT_2D:
        *d1 = st->d1;
        *d2 = st->d2;
        return;
    case MDL_STRAT_SUMMA2D:
        q = exact_root(st->tp, 2);
        break;
    case MDL_STRAT_TESSERACT:
        q = st->depth >= 1 && st->tp % st->depth == 0 ? exact_root(st->tp / st->depth, 2) : 0;
        break;
    case MDL_STRAT_TP3D:
        q = exact_root(st->tp, 3);
        break;
    case MDL_STRAT_PRIMEPAR:
        *d1 = st->ring > 0 ? st->ring : st->tp;
        *d2 = 1;
        return;
    default:
        *d1 = st->tp;
        *d2 = 1;
        return;
    }
    *d1 = *d2 = q;
}

/* GPUs a block mesh of side q splits the micro-batch over: its rows (summa2d), its rows and
 * slices (tesseract), its rows and third axis (tp3d). */
static long block_batch_split(const struct mdl_strategy *st, int q)
{
    return st->kind == MDL_STRAT_SUMMA2D     ? q
           : st->kind == MDL_STRAT_TESSERACT ? (long)q * st->depth
                                             : (long)q * q;
}

int mdl_strategy_depth(const struct mdl_strategy *st)
{
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    if (st->kind == MDL_STRAT_PRIMEPAR) return d1 > 0 && st->tp % d1 == 0 ? st->tp / d1 : 1;
    return st->kind == MDL_STRAT_TESSERACT ? st->depth : st->kind == MDL_STRAT_TP3D ? d1 : 1;
}

int mdl_strategy_sub_tp(const struct mdl_strategy *st, int mlp)
{
    int t = mlp ? st->mlp_tp : st->attention_tp;
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
    return st->placement == MDL_COLUMN_FIRST ? j * d1 + i : i * d2 + j;
}

void mdl_strategy_describe(const struct mdl_strategy *st, char *buf, size_t len)
{
    char opts[96] = "";
    size_t n = 0;
    if (st->chunks > 1)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +%d-chunk overlap", st->chunks);
    if (st->oases && n < sizeof opts) n += (size_t)snprintf(opts + n, sizeof opts - n, " +oases");
    if (st->recompute && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +recompute%s",
                              st->oases ? " (no forward collectives)" : "");
    else if (st->selective && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, " +selective recompute");
    if (!st->async_grad_allreduce && n < sizeof opts)
        snprintf(opts + n, sizeof opts - n, " (no grad all-reduce overlap)");
    int q, q2;
    mdl_strategy_mesh(st, &q, &q2);
    if (st->kind == MDL_STRAT_PRIMEPAR)
        if (mdl_strategy_depth(st) > 1)
            snprintf(buf, len, "primepar tp=%d (%d rings of %d, spatial-temporal)%s", st->tp,
                     mdl_strategy_depth(st), st->tp / mdl_strategy_depth(st), opts);
        else
            snprintf(buf, len, "primepar tp=%d (spatial-temporal ring)%s", st->tp, opts);
    else if (st->kind == MDL_STRAT_SUMMA2D)
        snprintf(buf, len, "summa2d tp=%d (%dx%d SUMMA)%s", st->tp, q, q, opts);
    else if (st->kind == MDL_STRAT_TESSERACT)
        snprintf(buf, len, "tesseract tp=%d (%dx%d x depth %d)%s", st->tp, q, q, st->depth, opts);
    else if (st->kind == MDL_STRAT_TP3D)
        snprintf(buf, len, "tp3d tp=%d (%dx%dx%d cube)%s", st->tp, q, q, q, opts);
    else if (st->kind == MDL_STRAT_2D)
        snprintf(buf, len, "2d tp=%d mesh %dx%d %s%s%s", st->tp, st->d1, st->d2,
                 st->placement == MDL_COLUMN_FIRST ? "column-first" : "row-first",
                 st->extra_allgathers ? " +extra all-gathers" : "", opts);
    else if (mdl_strategy_is_mixed(st))
        snprintf(buf, len, "1d tp=%d attention tp=%d x%d, mlp tp=%d x%d%s", st->tp,
                 mdl_strategy_sub_tp(st, 0), st->tp / mdl_strategy_sub_tp(st, 0),
                 mdl_strategy_sub_tp(st, 1), st->tp / mdl_strategy_sub_tp(st, 1), opts);
    else
        snprintf(buf, len, "1d tp=%d%s%s", st->tp,
                 st->sequence_parallel ? " +sequence-parallel" : "", opts);
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
    double h = (double)m->hidden, s = (double)m->seq, b = (double)m->micro_batch;
    double a = (double)m->heads, t = st->tp, f = (double)m->ffn;
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
    if (st->kind == MDL_STRAT_TP3D && d1 > 0) {
        double q2 = (double)d1 * d1, q3 = q2 * d1;
        double qw = mdl_model_qkv_width(m), u = mdl_model_fc1_width(m);
        act +=
            2 * s * b * (3 * h + f) * (1 / q2 - 1 / q3) + 2 * (h * qw + h * h + h * u + f * h) / q2;
    }
    double scale = mdl_dtype_bytes(m->dtype) / 2.0;
    *full = act * scale;
    *input = 2 * s * b * h / (sharded ? t : d2) * scale;
}

double mdl_strategy_layer_params(const struct mdl_strategy *st, const struct mdl_model *m)
{
    /* QKV h*q+q (q = 3h for multi-head attention), projection h^2+h, FC1 h*u+u (u = f, or 2f
     * gated), FC2 f*h+h, two layer norms 4h: 4h^2+2hf+9h+f for a GPT layer; split over all tp
     * devices (Narayanan et al. 2021 neglect the small replicated biases and norms the same
     * way). Tesseract's slices each hold all of them: a split over q^2 devices. */
    double shards =
        (st->kind == MDL_STRAT_TESSERACT && st->depth >= 1) || st->kind == MDL_STRAT_PRIMEPAR
            ? (double)st->tp / mdl_strategy_depth(st)
            : (double)st->tp;
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
    out->activations = st->recompute ? layers * input + act : layers * act;
    out->total = out->weights + out->gradients + out->optimizer + out->activations;
    return out->total;
}

int mdl_strategy_check(const struct mdl_strategy *st, const struct mdl_model *m,
                       struct tps_error *err)
{
    long d = st->tp;
    if (d < 1) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "must be at least 1");
    if (d > MDL_MAX_TP)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp", "at most %d, got %ld", MDL_MAX_TP,
                             d);
    for (int mlp = 0; mlp < 2; mlp++) {
        int t = mlp ? st->mlp_tp : st->attention_tp;
        const char *f = mlp ? "mlp_tp" : "attention_tp";
        if (t == 0) continue;
        if (st->kind != MDL_STRAT_1D)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                                 "per-sublayer TP degrees apply to kind 1d only");
        if (t < 1 || d % t)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f, "must divide tp (%ld), got %d", d,
                                 t);
        if (t != d && st->sequence_parallel)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                                 "a sublayer of degree below tp does not combine with "
                                 "sequence parallelism");
        long split = d / t * (st->oases ? 2 : 1);
        if (m->micro_batch % split)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, f,
                                 "degree %d splits the micro-batch over %ld replicas%s: "
                                 "model.micro_batch (%ld) must be a multiple of %ld",
                                 t, d / t, st->oases ? " and Oases' two sub-batches" : "",
                                 m->micro_batch, split);
    }
    if (st->kind == MDL_STRAT_2D) {
        long d1 = st->d1, d2 = st->d2;
        if (d1 < 1 || d2 < 1 || d1 * d2 != d)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                                 "the mesh d1 x d2 must multiply to tp (%ld), got %ld x %ld", d, d1,
                                 d2);
        if (m->heads % d1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                                 "d1 must divide model.heads (%ld), got %ld", m->heads, d1);
        if (m->hidden % d2 || m->hidden % d1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                                 "d1 and d2 must divide model.hidden (%ld), got %ld x %ld",
                                 m->hidden, d1, d2);
        if (m->ffn % d1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "mesh",
                                 "d1 must divide model.ffn (%ld), got %ld", m->ffn, d1);
        if (st->sequence_parallel && d2 > 1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sequence_parallel",
                                 "sequence parallelism is defined for 1D (mesh d x 1) only");
        d = d1;
    }
    if (mdl_strategy_is_block(st)) {
        int q, q2;
        mdl_strategy_mesh(st, &q, &q2);
        const char *k = mdl_strategy_kind_name(st->kind);
        if (st->kind == MDL_STRAT_TESSERACT && st->depth < 1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "depth", "must be at least 1");
        if (q < 1)
            return tps_error_set(
                err, TPS_EINVAL, NULL, 0, 0, "tp",
                st->kind == MDL_STRAT_SUMMA2D ? "must be a square q x q for kind summa2d, got %ld"
                : st->kind == MDL_STRAT_TP3D  ? "must be a cube q x q x q for kind tp3d, got %ld"
                                              : "must be q x q x depth for kind tesseract, got %ld",
                d);
        if (st->sequence_parallel || st->chunks > 1 || st->oases || st->extra_allgathers) {
            const char *f = st->sequence_parallel ? "sequence_parallel"
                            : st->chunks > 1      ? "chunks"
                            : st->oases           ? "oases"
                                                  : "extra_allgathers";
            return tps_error_set(
                err, TPS_EINVAL, NULL, 0, 0, f,
                "does not apply to kind %s (its activations are blocks of the mesh)", k);
        }
        /* the rows (and slices, and 3D's third axis) split the micro-batch: attention needs
         * whole sequences */
        long rows = block_batch_split(st, q);
        if (m->micro_batch % rows)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                                 "kind %s splits the micro-batch over %ld GPUs: model.micro_batch "
                                 "(%ld) must be a multiple of it",
                                 k, rows, m->micro_batch);
        if (m->hidden % q)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                                 "the mesh side q = %d must divide model.hidden (%ld)", q,
                                 m->hidden);
        d = q; /* heads, key/value heads and the MLP are split over q */
    }
    if (st->ring && st->kind != MDL_STRAT_PRIMEPAR)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring", "applies to kind primepar only");
    if (st->kind == MDL_STRAT_PRIMEPAR && st->ring) {
        if (st->ring < 1 || d % st->ring)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring",
                                 "must divide tp (%ld), got %d", d, st->ring);
        if (m->micro_batch % (d / st->ring))
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ring",
                                 "%ld rings split the micro-batch: model.micro_batch (%ld) must be "
                                 "a multiple of %ld",
                                 d / st->ring, m->micro_batch, d / st->ring);
        d = st->ring; /* heads, key/value heads and widths are split over the ring */
    }
    if (st->kind == MDL_STRAT_PRIMEPAR) {
        if (st->sequence_parallel)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sequence_parallel",
                                 "applies to kind 1d only (primepar shards every activation)");
        if (st->chunks > 1 || st->oases)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, st->oases ? "oases" : "chunks",
                                 "applies to kinds 1d and 2d only (primepar overlaps each "
                                 "linear's shifts itself)");
    }
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
    return TPS_OK;
}

/* Lowering context for rank 0; the other ranks get identical copies. */
struct lower {
    struct mdl_program *p;
    const struct mdl_model *m;
    const struct mdl_device *dev;
    const struct mdl_strategy *st;
    const struct mdl_framework *fw;
    double d1, d2; /* mesh */
    double d3;     /* block meshes' third axis (tesseract's depth, tp3d's q), else 1 */
    double frac;   /* share of the micro-batch being lowered: 1, or 1/2 for Oases sub-batches */
    int sub;       /* Oases: current sub-batch */
    int pend[2];   /* Oases: pending collective of each sub-batch */
    int no_comm;   /* lowering a recomputation whose collectives are not repeated */
    int rank;      /* the rank whose ops are emitted */
    int layer, mb; /* current layer and micro-batch */
    uint8_t phase; /* current phase */
    int pending;   /* last collective whose result the next compute op consumes, -1 none */
    int pending2;  /* a second one (SUMMA: the weight block beside the input block) */
    int after;     /* an op of another stream the next compute op waits for (a pipeline
                      receive), -1 none */
    int oom;       /* allocation failure seen */
    int last_comp; /* the last compute op emitted, -1 none */
    int graph[3];  /* CUDA graphs: (layer, micro-batch, phase) of the graph being captured */
    /* per-sublayer plans (1D): the current sublayer runs at degree d1 on 1/rep of the (sub-)
     * batch, its d1-axis collectives on group marker axis1 (0: the whole group) */
    double rep;
    int axis1;
    int layout[2];  /* degree whose layout the activations are in, per Oases sub-batch */
    int glayout[2]; /* and the gradients */
    int nmb;        /* micro-batches lowered (weight gradients are reduced after the last) */
    double share;   /* 1D: the rank's share of its d1 shard (heterogeneity.h's balancing): its
                       columns and heads times share; collectives keep their size */
};

/* Host time to launch op: every kernel in eager mode (with flash attention, the attention kernel
 * is a scaled_dot_product_attention call, whose host path is heavier); with CUDA graphs, the
 * first op of each layer's forward or backward launches the graph that holds the rest. */
static double launch_cost(struct lower *L, const struct mdl_op *op)
{
    int bwd = L->phase == MDL_PHASE_BWD;
    switch (L->fw->launch) {
    case MDL_LAUNCH_EAGER:
        if (op->kind == MDL_OP_ATTN && L->fw->attention == MDL_ATTENTION_FLASH)
            return bwd ? L->dev->flash_bwd_launch_s : L->dev->flash_launch_s;
        return bwd ? L->dev->bwd_launch_s : L->dev->launch_s;
    case MDL_LAUNCH_GRAPHS:
        if (L->graph[0] == L->layer && L->graph[1] == L->mb && L->graph[2] == L->phase) return 0;
        L->graph[0] = L->layer;
        L->graph[1] = L->mb;
        L->graph[2] = L->phase;
        return L->dev->graph_launch_s;
    default:
        return 0;
    }
}

static int emit(struct lower *L, struct mdl_op *op, const char *name)
{
    op->name = mdl_program_name(L->p, name);
    op->layer = L->layer;
    op->mb = L->mb;
    op->phase = L->phase;
    op->launch_s = launch_cost(L, op);
    int idx = op->name < 0 ? -1 : mdl_program_add(L->p, L->rank, op);
    if (idx < 0) L->oom = 1;
    if (op->stream == MDL_STREAM_COMPUTE) L->last_comp = idx;
    return idx;
}

static void take_pending(struct lower *L, struct mdl_op *op)
{
    if (L->pending >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->pending;
        L->pending = -1;
    }
    if (L->pending2 >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->pending2;
        L->pending2 = -1;
    }
    if (L->after >= 0) {
        TPS_ASSERT(op->ndeps < MDL_MAX_DEPS);
        op->deps[op->ndeps++] = L->after;
        L->after = -1;
    }
}

/* GEMM batch x (m x k)(k x n); kind GEMM or ATTN. */
static int gemm(struct lower *L, enum mdl_op_kind kind, const char *name, double batch, double m,
                double n, double k)
{
    struct mdl_op op = {.kind = (uint8_t)kind, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.flop = mdl_gemm_flop(batch, m, n, k);
    op.bytes = mdl_gemm_bytes(L->m->dtype, batch, m, n, k); /* memory traffic, for re-pricing */
    op.dur_s = mdl_gemm_time(L->dev, L->m->dtype, batch, m, n, k);
    return emit(L, &op, name);
}

/* Memory-bound kernel of kind k touching `elems` elements in total. */
static int mem_k(struct lower *L, enum mdl_mem_kind k, const char *name, double elems)
{
    struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    op.dur_s = mdl_mem_time_kind(L->dev, k, op.bytes);
    return emit(L, &op, name);
}

/* An element-wise memory-bound kernel. */
static int mem(struct lower *L, const char *name, double elems)
{
    return mem_k(L, MDL_MEM_ELEMENTWISE, name, elems);
}

/* A memory-bound kernel PyTorch's unfused ops add (kernels: eager); none when fused. */
static void eager_mem(struct lower *L, const char *name, double elems)
{
    if (L->fw->kernels == MDL_KERNELS_EAGER) mem(L, name, elems);
}

/* Fused attention (FlashAttention) of a batch x heads of s x s scores over head dim hd, forward
 * (4 b a s^2 hd FLOPs: two GEMMs, scores never leave the chip; q, k, v read and o written) or
 * backward (2.5 times the forward's FLOPs: the scores recomputed, five GEMMs; q, k, v, o, do read
 * and dq, dk, dv written), at the device's flash efficiency. Grouped-query attention reads each
 * key/value head once for its group of query heads. */
static int flash(struct lower *L, const char *name, double bh, double s, double hd, int bwd)
{
    struct mdl_op op = {.kind = MDL_OP_ATTN, .stream = MDL_STREAM_COMPUTE, .group = -1};
    take_pending(L, &op);
    double fwd_flop = 4 * bh * s * s * hd;
    /* k and v (and their gradients) are kv_heads/heads the size of q with grouped queries */
    double kv = (double)mdl_model_kv_heads(L->m) / (double)L->m->heads;
    op.flop = bwd ? 2.5 * fwd_flop : fwd_flop;
    op.bytes = (bwd ? 4 + 4 * kv : 2 + 2 * kv) * bh * s * hd * mdl_dtype_bytes(L->m->dtype);
    double peak = L->dev->peak_flops[L->m->dtype] * L->dev->flash_eff;
    double tc = L->dev->gemm_overhead_s + op.flop / peak, tm = op.bytes / L->dev->hbm_Bps;
    op.dur_s = tc > tm ? tc : tm;
    return emit(L, &op, name);
}

/* Group markers of rank 0's ops until each rank gets its own row, column or pillar group. */
enum { AXIS_D1 = MDL_GROUP_D1, AXIS_D2 = MDL_GROUP_D2, AXIS_D3 = MDL_GROUP_D3 };

static double axis_size(const struct lower *L, int axis)
{
    return axis == AXIS_D1 ? L->d1 : axis == AXIS_D2 ? L->d2 : L->d3;
}

/* Collective over one mesh axis on `elems` elements (full size) rooted at member `root` (a
 * broadcast or a reduce), once op `after` (-1: none) has completed. The block meshes give each
 * axis a stream of its own (rows: the TP stream, columns, pillars: the next two), as their
 * communicators are. None (-1) on an axis of size 1. */
static int coll_on(struct lower *L, enum mdl_op_kind kind, const char *name, double elems,
                   int after, int axis, int root)
{
    if (axis_size(L, axis) <= 1 || L->no_comm) return -1;
    int stream = axis == AXIS_D3                                    ? MDL_STREAM_COMM3
                 : !mdl_strategy_is_block(L->st) || axis == AXIS_D2 ? MDL_STREAM_COMM
                                                                    : MDL_STREAM_COMM2;
    int group = axis == AXIS_D1 && L->axis1 ? L->axis1 : axis;
    struct mdl_op op = {
        .kind = (uint8_t)kind, .stream = (uint8_t)stream, .group = group, .root = (uint16_t)root};
    if (after >= 0) op.deps[op.ndeps++] = after;
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    return emit(L, &op, name);
}

/* Collective over one mesh axis (AXIS_D1: the column, AXIS_D2: the row) on `elems` elements
 * (full size), after op `after`; the next compute op waits for it. None on an axis of size 1. */
static int coll(struct lower *L, enum mdl_op_kind kind, const char *name, double elems, int after,
                int axis)
{
    if (axis_size(L, axis) <= 1 || L->no_comm) return -1;
    TPS_ASSERT(after >= 0 || L->oom);
    int idx = coll_on(L, kind, name, elems, after, axis, 0);
    L->pending = idx;
    return idx;
}

/* The "g" operator of Megatron: AR after a row-parallel linear (RS with SP), over an axis. On
 * the d2 axis (2D only) it is always an all-reduce. */
static int reduce_out(struct lower *L, const char *name, double elems, int after, int axis)
{
    bool rs = mdl_strategy_shards_activations(L->st) && axis == AXIS_D1;
    return coll(L, rs ? MDL_OP_REDUCE_SCATTER : MDL_OP_ALL_REDUCE, name, elems, after, axis);
}

/* A linear (tokens x k) @ (k x n) whose output is reduced over `axis` (all-reduce, or
 * reduce-scatter with sequence parallelism), in `chunks` token chunks: the GEMM of chunk i+1
 * runs while the collective of chunk i is in flight (ATP's chunk-based overlap). Smaller GEMMs
 * are priced as such and every chunk's collective pays its own latency. Returns the last
 * collective (or the last GEMM when the axis has none); the next compute op waits for it. */
static int linear_reduce(struct lower *L, const char *gname, const char *cname, double tokens,
                         double n, double k, int axis)
{
    int kc = L->st->chunks > 1 && !L->no_comm && (axis == AXIS_D1 ? L->d1 : L->d2) > 1
                 ? L->st->chunks
                 : 1;
    int g = -1, last = -1;
    for (int c = 0; c < kc; c++) {
        g = gemm(L, MDL_OP_GEMM, gname, 1, tokens / kc, n, k);
        last = reduce_out(L, cname, tokens / kc * n, g, axis);
        L->pending = -1; /* GEMM c+1 does not wait for chunk c's collective */
    }
    L->pending = last; /* the next compute op waits for the last (streams are in order) */
    return last >= 0 ? last : g;
}

/* ATP's optional all-gather on the hidden dim over the d2 axis. */
static void extra_ag(struct lower *L, const char *name, double elems, int after)
{
    if (L->st->extra_allgathers) coll(L, MDL_OP_ALL_GATHER, name, elems, after, AXIS_D2);
}

/* Shapes of the current (sub-)batch: Oases splits the micro-batch in two sub-batches. */
struct dims {
    double d1, d2, b, s, h, f, a, bs, tok;
    double q, u, kv; /* QKV and FC1 output widths, key/value heads per head */
    bool sp, glu;
};

static struct dims dims_of(const struct lower *L)
{
    const struct mdl_model *m = L->m;
    struct dims D = {.d1 = L->d1,
                     .d2 = L->d2,
                     .b = (double)m->micro_batch * L->frac / L->rep,
                     .s = (double)m->seq,
                     .h = (double)m->hidden,
                     .f = (double)m->ffn,
                     .a = (double)m->heads,
                     .q = mdl_model_qkv_width(m),
                     .u = mdl_model_fc1_width(m),
                     .kv = (double)mdl_model_kv_heads(m) / (double)m->heads,
                     .sp = mdl_strategy_shards_activations(L->st),
                     .glu = m->glu};
    if (mdl_strategy_is_block(L->st)) {
        /* a rank's whole sequences (rows of the mesh, tesseract's slices, 3D's second axis)
         * and its q-th of the heads and of the hidden dim: d1 = q */
        double q = L->d1;
        D.b /= (double)block_batch_split(L->st, (int)q);
        D.bs = D.b * D.s;
        D.tok = D.bs;
        return D;
    }
    D.bs = D.b * D.s;
    D.tok = D.sp ? D.bs / D.d1 : D.bs; /* tokens held by a rank between the TP regions */
    D.d1 = L->d1 / L->share;           /* the sharded columns and heads: share x d1's shard */
    return D;
}

/* x + dropout(y) on n elements: one fused kernel (read x and y, write the sum), or PyTorch's
 * dropout kernel (read y, write it and a one-byte mask) then the add. */
static void dropout_add(struct lower *L, const char *name, double n)
{
    if (L->fw->kernels != MDL_KERNELS_EAGER) {
        mem(L, name, 3 * n);
        return;
    }
    char nm[64];
    snprintf(nm, sizeof nm, "%s_dropout", name);
    mem(L, nm, 2 * n + n / mdl_dtype_bytes(L->m->dtype));
    snprintf(nm, sizeof nm, "%s_add", name);
    mem(L, nm, 3 * n);
}

/* Layer norm backward over n elements: one fused kernel (read dy and x, write dx), or PyTorch's
 * two (dx, then the weight and bias gradients reading dy and x again). */
static int ln_bwd(struct lower *L, const char *name, double n)
{
    int x = mem_k(L, MDL_MEM_NORM, name, 3 * n);
    if (L->fw->kernels == MDL_KERNELS_EAGER) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s_wgrad", name);
        x = mem_k(L, MDL_MEM_NORM, nm, 2 * n);
    }
    return x;
}

/* Unfused attention with grouped queries: forward, each key/value head repeated for its group of
 * query heads (read 2bs h/d1 * g/a, write 2bs h/d1); backward, the repeated heads' gradients
 * summed back (the same bytes the other way). Nothing with one key/value head per head. */
static void kv_repeat(struct lower *L, const struct dims *D, const char *name)
{
    if (D->kv < 1) mem(L, name, 2 * D->bs * D->h / D->d1 * (1 + D->kv));
}

/* Dropout on the attention probabilities (n elements), forward (read them, write the output and
 * a one-byte mask) or backward (read the gradient and the mask, write the gradient): one kernel
 * each way, fused or not (Megatron-LM calls PyTorch's dropout there). */
static void attn_dropout(struct lower *L, const char *name, double n)
{
    if (L->m->attn_dropout) mem(L, name, 2 * n + n / mdl_dtype_bytes(L->m->dtype));
}

/* The attention core over the rank's a/d1 heads, forward: FlashAttention (dropout, if any, in
 * its kernel), or batched GEMMs with the softmax and the dropout between. Returns the last op. */
static int attn_core_fwd(struct lower *L, const struct dims *D)
{
    double d1 = D->d1, b = D->b, s = D->s, h = D->h, a = D->a;
    if (L->fw->attention == MDL_ATTENTION_FLASH)
        return flash(L, "flash_attn", b * a / d1, s, h / a, 0);
    kv_repeat(L, D, "kv_expand");
    gemm(L, MDL_OP_ATTN, "attn_score", b * a / d1, s, s, h / a);
    eager_mem(L, "attn_scale", 2 * b * (a / d1) * s * s);
    mem_k(L, MDL_MEM_SOFTMAX, "softmax",
          (L->fw->kernels == MDL_KERNELS_EAGER ? 2 : 3) * b * (a / d1) * s * s);
    attn_dropout(L, "attn_dropout", b * (a / d1) * s * s);
    return gemm(L, MDL_OP_ATTN, "attn_ctx", b * a / d1, s, h / a, s);
}

static void attn_fwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    int x = mem_k(L, MDL_MEM_NORM, "ln1", 2 * tok * h / d2);
    extra_ag(L, "ag_ln1", bs * h, x);
    if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_attn", bs * h, x, AXIS_D1);
    x = linear_reduce(L, "qkv", "ar_qkv", bs, D.q / d1, h / d2, AXIS_D2);
    extra_ag(L, "ag_attn_in", bs * h / d1, x);
    x = attn_core_fwd(L, &D);
    eager_mem(L, "attn_out_copy", 2 * bs * h / d1);
    extra_ag(L, "ag_attn_out", bs * h / d1, x);
    linear_reduce(L, "proj", "ar_attn", bs, h / d2, h / d1, AXIS_D1);
    dropout_add(L, "dropout_add", tok * h / d2);
}

/* The MLP's activation on the rank's bs x f/d1 block: GeLU (read, write) or SwiGLU, silu(gate) *
 * up reading both halves of FC1's output; backward reads what the forward read and the output
 * gradient, and writes the input gradients. */
static void mlp_act(struct lower *L, const struct dims *D, int bwd)
{
    double n = D->bs * D->f / D->d1;
    if (D->glu)
        mem(L, bwd ? "swiglu_bwd" : "swiglu", (bwd ? 5 : 3) * n);
    else
        mem(L, bwd ? "gelu_bwd" : "gelu", (bwd ? 3 : 2) * n);
}

static void mlp_fwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, f = D.f, bs = D.bs, tok = D.tok;
    int x = mem_k(L, MDL_MEM_NORM, "ln2", 2 * tok * h / d2);
    extra_ag(L, "ag_ln2", bs * h, x);
    if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_mlp", bs * h, x, AXIS_D1);
    linear_reduce(L, "fc1", "ar_fc1", bs, D.u / d1, h / d2, AXIS_D2);
    mlp_act(L, &D, 0);
    linear_reduce(L, "fc2", "ar_mlp", bs, h / d2, f / d1, AXIS_D1);
    dropout_add(L, "dropout_add2", tok * h / d2);
}

/* Backward of a linear whose input-grad collective runs over `axis`: dgrad, the collective,
 * then wgrad (overlapping the collective unless async_grad_allreduce is off). With sequence
 * parallelism Megatron keeps only this rank's share of the layer's input, so first the
 * all-gather `agname` collects it again for wgrad, beside dgrad (the input-grad collective
 * queues behind it on the stream). */
static void column_bwd(struct lower *L, const char *dgrad, const char *wgrad, const char *cname,
                       const char *agname, double bs, double n_local, double k, int axis)
{
    int ag = -1;
    if (mdl_strategy_shards_activations(L->st) && axis == AXIS_D1)
        ag = coll_on(L, MDL_OP_ALL_GATHER, agname, bs * k * L->d2, L->last_comp, axis, 0);
    int c = linear_reduce(L, dgrad, cname, bs, k, n_local, axis);
    int saved = L->pending;
    L->pending = L->st->async_grad_allreduce ? -1 : c;
    L->pending2 = ag;
    gemm(L, MDL_OP_GEMM, wgrad, 1, n_local, k, bs);
    if (L->st->async_grad_allreduce) L->pending = saved;
}

static void mlp_bwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, f = D.f, bs = D.bs, tok = D.tok;
    int x = mem(L, "dropout_add2_bwd", 2 * tok * h / d2);
    if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_mlp_bwd", bs * h, x, AXIS_D1);
    /* FC2 (in f/d1, out h/d2): input-grad partial sums over d2 */
    linear_reduce(L, "fc2_dgrad", "ar_fc2_bwd", bs, f / d1, h / d2, AXIS_D2);
    gemm(L, MDL_OP_GEMM, "fc2_wgrad", 1, h / d2, f / d1, bs);
    mlp_act(L, &D, 1);
    column_bwd(L, "fc1_dgrad", "fc1_wgrad", "ar_mlp_bwd", "ag_mlp_input_bwd", bs, D.u / d1, h / d2,
               AXIS_D1);
    x = ln_bwd(L, "ln2_bwd", tok * h / d2);
    extra_ag(L, "ag_ln2_bwd", bs * h, x);
}

/* Selective recomputation: the attention core's forward again (scores, softmax, context), from
 * the saved q, k and v; FlashAttention's backward recomputes its scores itself. */
static void attn_core_recompute(struct lower *L)
{
    struct dims D = dims_of(L);
    double d1 = D.d1, b = D.b, s = D.s, h = D.h, a = D.a;
    kv_repeat(L, &D, "kv_expand_recompute");
    gemm(L, MDL_OP_ATTN, "attn_score_recompute", b * a / d1, s, s, h / a);
    eager_mem(L, "attn_scale_recompute", 2 * b * (a / d1) * s * s);
    mem_k(L, MDL_MEM_SOFTMAX, "softmax_recompute",
          (L->fw->kernels == MDL_KERNELS_EAGER ? 2 : 3) * b * (a / d1) * s * s);
    attn_dropout(L, "attn_dropout_recompute", b * (a / d1) * s * s);
    gemm(L, MDL_OP_ATTN, "attn_ctx_recompute", b * a / d1, s, h / a, s);
}

/* The attention core's backward over the rank's heads; returns the op the next waits for. */
static int attn_core_bwd(struct lower *L, const struct dims *D)
{
    double d1 = D->d1, b = D->b, s = D->s, h = D->h, a = D->a, bs = D->bs;
    int x;
    if (L->fw->attention == MDL_ATTENTION_FLASH) {
        /* FlashAttention-2's backward as PyTorch runs it: a zeroed fp32 dq accumulator, the row
         * sums of dO * O, the kernel, and dq converted back from fp32 */
        eager_mem(L, "flash_dq_zero", 2 * bs * h / d1);
        eager_mem(L, "flash_dot_do_o", 2 * bs * h / d1);
        x = flash(L, "flash_attn_bwd", b * a / d1, s, h / a, 1);
        eager_mem(L, "flash_dq_convert", 3 * bs * h / d1);
        return x;
    }
    gemm(L, MDL_OP_ATTN, "attn_ctx_dgrad", b * a / d1, s, s, h / a);
    gemm(L, MDL_OP_ATTN, "attn_ctx_vgrad", b * a / d1, s, h / a, s);
    attn_dropout(L, "attn_dropout_bwd", b * (a / d1) * s * s);
    eager_mem(L, "softmax_grad_mul", 3 * b * (a / d1) * s * s);
    mem_k(L, MDL_MEM_SOFTMAX, "softmax_bwd", 3 * b * (a / d1) * s * s);
    eager_mem(L, "attn_scale_bwd", 2 * b * (a / d1) * s * s);
    gemm(L, MDL_OP_ATTN, "attn_score_qgrad", b * a / d1, s, h / a, s);
    x = gemm(L, MDL_OP_ATTN, "attn_score_kgrad", b * a / d1, s, h / a, s);
    kv_repeat(L, D, "kv_grad_reduce");
    return x;
}

static void attn_bwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    if (L->st->selective && !L->st->recompute && L->fw->attention != MDL_ATTENTION_FLASH)
        attn_core_recompute(L);
    int x = mem(L, "dropout_add_bwd", 2 * tok * h / d2);
    eager_mem(L, "residual_add_bwd", 3 * tok * h / d2);
    if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_attn_bwd", bs * h, x, AXIS_D1);
    linear_reduce(L, "proj_dgrad", "ar_proj_bwd", bs, h / d1, h / d2, AXIS_D2);
    x = gemm(L, MDL_OP_GEMM, "proj_wgrad", 1, h / d1, h / d2, bs);
    extra_ag(L, "ag_attn_out_bwd", bs * h / d1, x);
    x = attn_core_bwd(L, &D);
    eager_mem(L, "qkv_grad_cat", 2 * bs * D.q / d1);
    extra_ag(L, "ag_attn_in_bwd", bs * h / d1, x);
    column_bwd(L, "qkv_dgrad", "qkv_wgrad", "ar_attn_bwd", "ag_attn_input_bwd", bs, D.q / d1,
               h / d2, AXIS_D1);
    x = ln_bwd(L, "ln1_bwd", tok * h / d2);
    eager_mem(L, "residual_add1_bwd", 3 * tok * h / d2);
    extra_ag(L, "ag_ln1_bwd", bs * h, x);
}

/* PrimePar (strategies.md section 4): every activation sharded on the hidden dim over the ring
 * of d ranks, each linear run as d partial GEMMs over d time steps. */

/* One ring shift of `elems` elements: the block sent to the next member and the one received
 * from the previous, posted together once op `after` has completed (NCCL's grouped send and
 * receive: one launch). Returns the receive, which the op using the new block waits for. */
static int shift(struct lower *L, const char *name, double elems, int after)
{
    struct mdl_op op = {
        .kind = MDL_OP_SEND_RECV, .stream = MDL_STREAM_SHIFT_SEND, .group = MDL_GROUP_SHIFT_TO};
    if (after >= 0) op.deps[op.ndeps++] = after;
    op.bytes = elems * mdl_dtype_bytes(L->m->dtype);
    char nm[64];
    snprintf(nm, sizeof nm, "%s_send", name);
    if (emit(L, &op, nm) < 0) return -1;
    op.stream = MDL_STREAM_SHIFT_RECV;
    op.group = MDL_GROUP_SHIFT_FROM;
    snprintf(nm, sizeof nm, "%s_recv", name);
    int r = emit(L, &op, nm);
    if (r >= 0) L->p->ranks[L->rank].ops[r].launch_s = 0; /* launched with the send */
    return r;
}

/* d partial GEMMs named gname, batch 1 x (m x n) @ (n x k) each, while the blocks of `elems`
 * elements they read rotate round the ring: block t + 1 is shifted in (d - 1 shifts, the first
 * once op `have` has completed) while the GEMM of block t runs, and each GEMM waits for its
 * block. Returns the last GEMM. */
static int rotate(struct lower *L, const char *gname, int have, double elems, double m, double n,
                  double k)
{
    int d = (int)L->d1, g = -1;
    char sname[96];
    snprintf(sname, sizeof sname, "%s_shift", gname);
    for (int t = 0; t < d && !L->oom; t++) {
        int next = t + 1 < d ? shift(L, sname, elems, have) : -1;
        if (t > 0) L->pending = have;
        g = gemm(L, MDL_OP_GEMM, gname, 1, m, n, k);
        have = next;
    }
    return g;
}

/* Forward of a linear (tokens x k) @ (k x n_local) whose input is sharded on k: d partial GEMMs
 * (tokens x k/d) @ (k/d x n_local) accumulated in place in the rank's output block, while the
 * input's blocks (tokens x k/d) rotate round the ring. Returns the last GEMM. */
static int st_forward(struct lower *L, const char *gname, double tokens, double n_local, double k)
{
    double d = L->d1;
    return rotate(L, gname, L->last_comp, tokens * k / d, tokens, n_local, k / d);
}

/* Backward of that linear. The input gradient (tokens x n_local) @ (n_local x k), sharded on k:
 * the rank computes its partial sums of each block in turn; a block's running sum travels round
 * the ring, gaining each rank's partial on the way (an add once it has arrived), and is complete
 * at its owner after d - 1 shifts, so every shift is in flight during the next partial GEMM.
 * Then the weight gradient (k x tokens) @ (tokens x n_local) as the forward: the input's blocks
 * rotate again (nothing replicated was kept) and each partial GEMM writes one block. */
static void st_backward(struct lower *L, const char *name, double tokens, double n_local, double k)
{
    int d = (int)L->d1, x = -1, recv = -1, first = -1;
    double block = tokens * k / d;
    char dg[64], wg[64], add[80], sname[80];
    snprintf(dg, sizeof dg, "%s_dgrad", name);
    snprintf(wg, sizeof wg, "%s_wgrad", name);
    snprintf(add, sizeof add, "%s_add", dg);
    snprintf(sname, sizeof sname, "%s_shift", dg);
    for (int t = 0; t < d && !L->oom; t++) {
        x = gemm(L, MDL_OP_GEMM, dg, 1, tokens, k / d, n_local);
        if (t == 0) first = x;
        if (t > 0) {
            L->pending = recv;
            x = mem(L, add, 3 * block);
        }
        if (t + 1 < d) recv = shift(L, sname, block, x);
    }
    rotate(L, wg, first, block, k / d, n_local, tokens);
}

/* Layer norm over a hidden dim sharded over the ring: the per-token partial sums of the shard
 * (x and x^2; backward dy and dy*x), their all-reduce (two fp32 per token), then the
 * normalisation of the shard (backward: dx, and in eager mode the weight and bias gradients). */
static int ln_sharded(struct lower *L, const char *name, double tokens, double h_local, int bwd)
{
    char nm[64];
    double f32 = 4.0 / mdl_dtype_bytes(L->m->dtype);
    snprintf(nm, sizeof nm, "%s_stats", name);
    int x = mem_k(L, MDL_MEM_NORM, nm, (bwd ? 2 : 1) * tokens * h_local);
    snprintf(nm, sizeof nm, "ar_%s_stats", name);
    /* the axis the hidden dim is split over: PrimePar's ring, a block mesh's row (3D: the
     * third axis, see tp3d_linear) */
    int axis = L->st->kind == MDL_STRAT_TP3D  ? AXIS_D3
               : mdl_strategy_is_block(L->st) ? AXIS_D2
                                              : AXIS_D1;
    coll(L, MDL_OP_ALL_REDUCE, nm, 2 * f32 * tokens, x, axis);
    x = mem_k(L, MDL_MEM_NORM, name, (bwd ? 3 : 2) * tokens * h_local);
    if (bwd && L->fw->kernels == MDL_KERNELS_EAGER) {
        snprintf(nm, sizeof nm, "%s_wgrad", name);
        x = mem_k(L, MDL_MEM_NORM, nm, 2 * tokens * h_local);
    }
    return x;
}

/* Colossal-AI's block meshes (strategies.md section 7). Every activation (tokens x width) and
 * weight (in x out) is a block of the q x q mesh: tokens over the rows (the d1 axis), widths over
 * the columns (the d2 axis). Each linear below keeps Colossal-AI's schedule. */

/* SUMMA Y = X W (T x K by K x N) in q steps: step k broadcasts X's block column k along the rows
 * (root: column k) and W's block row k along the columns (root: row k), then Y_ij += X_ik W_kj,
 * a (T/q x K/q) by (K/q x N/q) GEMM. Step k + 1's blocks are prefetched while step k's GEMM runs,
 * into two buffers: their broadcasts wait for GEMM k - 1 (the input's first for its producer).
 * Returns the last GEMM. */
static int summa_ab(struct lower *L, const char *name, double T, double K, double N)
{
    double q = L->d1;
    int steps = (int)q, have = L->last_comp, g = -1, prev = -1;
    char bx[80], bw[80];
    snprintf(bx, sizeof bx, "%s_bcast_x", name);
    snprintf(bw, sizeof bw, "%s_bcast_w", name);
    int cx = coll_on(L, MDL_OP_BROADCAST, bx, T * K / (q * q), have, AXIS_D2, 0);
    int cw = coll_on(L, MDL_OP_BROADCAST, bw, K * N / (q * q), -1, AXIS_D1, 0);
    for (int k = 0; k < steps && !L->oom; k++) {
        int nx = -1, nw = -1;
        if (k + 1 < steps) {
            int buf = k >= 1 ? prev : have;
            nx = coll_on(L, MDL_OP_BROADCAST, bx, T * K / (q * q), buf, AXIS_D2, k + 1);
            nw = coll_on(L, MDL_OP_BROADCAST, bw, K * N / (q * q), k >= 1 ? prev : -1, AXIS_D1,
                         k + 1);
        }
        L->pending = cx;
        L->pending2 = cw;
        prev = g = gemm(L, MDL_OP_GEMM, name, 1, T / q, N / q, K / q);
        cx = nx;
        cw = nw;
    }
    return g;
}

/* SUMMA's two backward products, each in q steps with one operand broadcast and the partial
 * product reduced to the step's root, prefetching the next broadcast (it waits for GEMM k - 1)
 * and keeping two partial buffers (GEMM k waits for reduce k - 2). dX = dY W^T: W's block row k
 * broadcast along the columns, (T/q x N/q) by (N/q x K/q), reduced along the row into column k;
 * dW = X^T dY: X's block column k broadcast along the rows, (K/q x T/q) by (T/q x N/q), reduced
 * along the column into row k. Colossal-AI waits for every reduce before returning: the result
 * is the last reduce (the last GEMM without one). */
static int summa_bwd_pass(struct lower *L, const char *name, const char *grad, char operand,
                          double bcast_elems, double m, double n, double k, int bcast_axis,
                          int reduce_axis)
{
    char gname[80], bname[96], rname[96];
    snprintf(gname, sizeof gname, "%s_%s", name, grad);
    snprintf(bname, sizeof bname, "%s_bcast_%c", gname, operand);
    snprintf(rname, sizeof rname, "%s_reduce", gname);
    double q = L->d1;
    int steps = (int)q, prev = -1, red[2] = {-1, -1}, last = -1;
    int cb = coll_on(L, MDL_OP_BROADCAST, bname, bcast_elems, -1, bcast_axis, 0);
    for (int t = 0; t < steps && !L->oom; t++) {
        int nb = t + 1 < steps ? coll_on(L, MDL_OP_BROADCAST, bname, bcast_elems,
                                         t >= 1 ? prev : -1, bcast_axis, t + 1)
                               : -1;
        L->pending = cb;
        L->pending2 = red[t % 2];
        prev = last = gemm(L, MDL_OP_GEMM, gname, 1, m, n, k);
        int r = coll_on(L, MDL_OP_REDUCE, rname, m * n, prev, reduce_axis, t);
        red[t % 2] = r;
        if (r >= 0) last = r;
        cb = nb;
    }
    return last;
}

/* 3D's linear (Bian et al.; Colossal-AI's Linear3D) on the q x q x q cube: X (T x K) is
 * all-gathered over the `in` axis to a (T/q x K/q) block, W over the d2 axis to (K/q x N/q), and
 * the (T/q x N/q) partial product is reduce-scattered over the `out` axis; consecutive linears
 * swap `in` and `out` (odd: in = d3, out = d1), so that each output lies as the next input
 * expects. Backward: dY all-gathered over `out`, dX = dY W^T reduce-scattered over `in` while
 * dW = X^T dY runs, then dW reduce-scattered over d2; the forward's gathered X and W are saved. */
static int tp3d_linear(struct lower *L, const char *name, double T, double K, double N, int odd,
                       int bwd)
{
    double q = L->d1, q2 = q * q;
    int in = odd ? AXIS_D3 : AXIS_D1, out = odd ? AXIS_D1 : AXIS_D3;
    char nm[96];
    if (!bwd) {
        snprintf(nm, sizeof nm, "%s_ag_x", name);
        int ax = coll_on(L, MDL_OP_ALL_GATHER, nm, T * K / q2, L->last_comp, in, 0);
        snprintf(nm, sizeof nm, "%s_ag_w", name);
        int aw = coll_on(L, MDL_OP_ALL_GATHER, nm, K * N / q2, -1, AXIS_D2, 0);
        L->pending = ax;
        L->pending2 = aw;
        int g = gemm(L, MDL_OP_GEMM, name, 1, T / q, N / q, K / q);
        snprintf(nm, sizeof nm, "%s_rs_y", name);
        int rs = coll_on(L, MDL_OP_REDUCE_SCATTER, nm, T * N / q2, g, out, 0);
        L->pending = rs;
        return rs >= 0 ? rs : g;
    }
    snprintf(nm, sizeof nm, "%s_ag_dy", name);
    L->pending = coll_on(L, MDL_OP_ALL_GATHER, nm, T * N / q2, L->last_comp, out, 0);
    snprintf(nm, sizeof nm, "%s_dgrad", name);
    int dx = gemm(L, MDL_OP_GEMM, nm, 1, T / q, K / q, N / q);
    snprintf(nm, sizeof nm, "%s_rs_dx", name);
    int rx = coll_on(L, MDL_OP_REDUCE_SCATTER, nm, T * K / q2, dx, in, 0);
    snprintf(nm, sizeof nm, "%s_wgrad", name);
    int dw = gemm(L, MDL_OP_GEMM, nm, 1, K / q, N / q, T / q);
    snprintf(nm, sizeof nm, "%s_rs_dw", name);
    coll_on(L, MDL_OP_REDUCE_SCATTER, nm, K * N / q2, dw, AXIS_D2, 0);
    L->pending = rx;
    return rx >= 0 ? rx : dw;
}

/* Tokens of the micro-batch (or Oases' share) one SUMMA runs on: tesseract's slice has 1/depth
 * of them. */
static double block_tokens(const struct lower *L)
{
    double bs = (double)L->m->micro_batch * L->frac * (double)L->m->seq;
    return L->st->kind == MDL_STRAT_TESSERACT ? bs / L->d3 : bs;
}

/* A linear of a block mesh, forward or backward; `odd` counts the linears of a layer (3D's
 * axis swap). Tesseract all-reduces each weight gradient block over the depth, overlapped with
 * what follows. Returns the op the next compute op waits for (also left in L->pending). */
static int block_linear(struct lower *L, const char *name, double K, double N, int odd, int bwd)
{
    double T = block_tokens(L), q = L->d1;
    if (L->st->kind == MDL_STRAT_TP3D) return tp3d_linear(L, name, T, K, N, odd, bwd);
    if (!bwd) return summa_ab(L, name, T, K, N);
    L->pending = summa_bwd_pass(L, name, "dgrad", 'w', K * N / (q * q), T / q, K / q, N / q,
                                AXIS_D1, AXIS_D2);
    int w = summa_bwd_pass(L, name, "wgrad", 'x', T * K / (q * q), K / q, N / q, T / q, AXIS_D2,
                           AXIS_D1);
    if (L->st->kind == MDL_STRAT_TESSERACT) {
        char r[96];
        snprintf(r, sizeof r, "%s_ar_wgrad_depth", name);
        coll_on(L, MDL_OP_ALL_REDUCE, r, K * N / (q * q), w, AXIS_D3, 0);
    }
    L->pending = w;
    return w;
}

/* The layers of the strategies that shard every activation (PrimePar's ring, the block
 * meshes): only the linears differ. A rank normalises, adds and drops out `tok` tokens x h/d of
 * the hidden dim: PrimePar all the micro-batch's tokens on its 1/d, the block meshes their rows'
 * tokens on 1/q. `odd` counts the layer's linears (3D swaps its axes linear to linear). */
static void sh_linear(struct lower *L, const char *name, double K, double N, int odd, int bwd)
{
    if (L->st->kind != MDL_STRAT_PRIMEPAR) {
        block_linear(L, name, K, N, odd, bwd);
        return;
    }
    double bs = (double)L->m->micro_batch * L->frac / L->rep * (double)L->m->seq;
    if (bwd)
        st_backward(L, name, bs, N / L->d1, K);
    else
        st_forward(L, name, bs, N / L->d1, K);
}

/* A sublayer's weight gradients (1/shards of its parameters) all-reduced over the GPUs that
 * hold copies of them (group marker `group`, its own communicator on `stream`), once: after the
 * backward of the last micro-batch (and Oases sub-batch), overlapping what follows. */
static void wgrad_replicas(struct lower *L, int mlp, double shards, int group, int stream,
                           const char *name)
{
    if (L->mb != L->nmb - 1 || (L->st->oases && L->sub != 1) || L->last_comp < 0) return;
    struct mdl_op op = {.kind = MDL_OP_ALL_REDUCE,
                        .stream = (uint8_t)stream,
                        .group = group,
                        .bytes = mdl_model_sublayer_params(L->m, mlp) / shards *
                                 mdl_dtype_bytes(L->m->dtype)};
    op.deps[op.ndeps++] = L->last_comp;
    emit(L, &op, name);
}

/* PrimePar's rings side by side: each sublayer's gradients all-reduced across the rings. */
static void rings_wgrad(struct lower *L, int mlp)
{
    if (L->st->kind == MDL_STRAT_PRIMEPAR && L->d3 > 1 && !L->no_comm)
        wgrad_replicas(L, mlp, L->d1, AXIS_D3, MDL_STREAM_COMM3,
                       mlp ? "ar_mlp_wgrad_rings" : "ar_attn_wgrad_rings");
}

/* Tokens a rank normalises and adds (see sh_linear). */
static double sh_tokens(const struct lower *L, const struct dims *D)
{
    return L->st->kind == MDL_STRAT_PRIMEPAR ? D->bs : D->tok;
}

static void sh_attn_fwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d = D.d1, h = D.h, tok = sh_tokens(L, &D);
    ln_sharded(L, "ln1", tok, h / d, 0);
    sh_linear(L, "qkv", h, D.q, 0, 0);
    attn_core_fwd(L, &D);
    eager_mem(L, "attn_out_copy", 2 * tok * h / d);
    sh_linear(L, "proj", h, h, 1, 0);
    dropout_add(L, "dropout_add", tok * h / d);
}

static void sh_mlp_fwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d = D.d1, h = D.h, tok = sh_tokens(L, &D);
    ln_sharded(L, "ln2", tok, h / d, 0);
    sh_linear(L, "fc1", h, D.u, 0, 0);
    mlp_act(L, &D, 0);
    sh_linear(L, "fc2", D.f, h, 1, 0);
    dropout_add(L, "dropout_add2", tok * h / d);
}

static void sh_mlp_bwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d = D.d1, h = D.h, tok = sh_tokens(L, &D);
    mem(L, "dropout_add2_bwd", 2 * tok * h / d);
    sh_linear(L, "fc2", D.f, h, 1, 1);
    mlp_act(L, &D, 1);
    sh_linear(L, "fc1", h, D.u, 0, 1);
    ln_sharded(L, "ln2_bwd", tok, h / d, 1);
    rings_wgrad(L, 1);
}

static void sh_attn_bwd(struct lower *L)
{
    struct dims D = dims_of(L);
    double d = D.d1, h = D.h, tok = sh_tokens(L, &D);
    if (L->st->selective && !L->st->recompute && L->fw->attention != MDL_ATTENTION_FLASH)
        attn_core_recompute(L);
    mem(L, "dropout_add_bwd", 2 * tok * h / d);
    eager_mem(L, "residual_add_bwd", 3 * tok * h / d);
    sh_linear(L, "proj", h, h, 1, 1);
    attn_core_bwd(L, &D);
    eager_mem(L, "qkv_grad_cat", 2 * tok * D.q / d);
    sh_linear(L, "qkv", h, D.q, 0, 1);
    ln_sharded(L, "ln1_bwd", tok, h / d, 1);
    eager_mem(L, "residual_add1_bwd", 3 * tok * h / d);
    rings_wgrad(L, 0);
}

/* Makes sub-batch i current: each sub-batch waits only for its own collectives. */
static void sub_use(struct lower *L, int i)
{
    L->pend[L->sub] = L->pending;
    L->sub = i;
    L->pending = L->pend[i];
}

/* Runs two blocks in order, for the whole micro-batch, or (Oases) for sub-batch 0 then 1 of the
 * first block and then of the second, so one sub-batch's collective is in flight while the other
 * computes. */
static void blocks(struct lower *L, void (*first)(struct lower *), void (*second)(struct lower *))
{
    if (!L->st->oases) {
        first(L);
        second(L);
        return;
    }
    for (int i = 0; i < 2; i++) {
        sub_use(L, i);
        first(L);
    }
    for (int i = 0; i < 2; i++) {
        sub_use(L, i);
        second(L);
    }
}

/* Per-sublayer plans (1D): a sublayer of degree t runs on groups of t consecutive ranks, each
 * group on 1/(tp/t) of the (sub-)batch. Tensors between sublayers are in the layout of the
 * degree that made them: a rank of a degree-t sublayer holds its group's share of the batch.
 * Moving to a lower degree keeps a slice (nothing moves); moving to a higher degree T
 * all-gathers the T/t shares that make up the new group's over the re-layout group, the
 * T-layout tensor's size (tokens x hidden). */
static void relayout(struct lower *L, int *from, int to, const char *name)
{
    if (to > *from && !L->no_comm) {
        double tokens = (double)L->m->micro_batch * L->frac * to / L->st->tp * (double)L->m->seq;
        int after = L->pending >= 0 ? L->pending : L->last_comp;
        struct mdl_op op = {.kind = MDL_OP_ALL_GATHER,
                            .stream = MDL_STREAM_COMM,
                            .group = MDL_GROUP_RELAYOUT,
                            .bytes = tokens * (double)L->m->hidden * mdl_dtype_bytes(L->m->dtype)};
        if (after >= 0) op.deps[op.ndeps++] = after;
        L->pending = emit(L, &op, name);
    }
    *from = to;
}

/* Enters sublayer `mlp` (0: attention, 1: MLP) forward or backward: its degree, its batch
 * share, its group, and the tensor it reads moved into its layout. */
static void sub_enter(struct lower *L, int mlp, int bwd)
{
    if (!mdl_strategy_is_mixed(L->st)) return;
    int t = mdl_strategy_sub_tp(L->st, mlp);
    L->d1 = t;
    L->rep = (double)L->st->tp / t;
    L->axis1 = t == L->st->tp ? 0 : mlp ? MDL_GROUP_SUB_MLP : MDL_GROUP_SUB_ATTN;
    if (bwd)
        relayout(L, &L->glayout[L->sub], t, mlp ? "relayout_mlp_bwd" : "relayout_attn_bwd");
    else
        relayout(L, &L->layout[L->sub], t, mlp ? "relayout_mlp" : "relayout_attn");
}

/* Leaves it; a sublayer of degree below tp all-reduces its weight gradients over its replicas
 * (wgrad_replicas). */
static void sub_leave(struct lower *L, int mlp, int bwd)
{
    if (!mdl_strategy_is_mixed(L->st)) return;
    int t = mdl_strategy_sub_tp(L->st, mlp);
    L->d1 = L->st->tp;
    L->rep = 1;
    L->axis1 = 0;
    if (bwd && t < L->st->tp)
        wgrad_replicas(L, mlp, t, mlp ? MDL_GROUP_REP_MLP : MDL_GROUP_REP_ATTN, MDL_STREAM_COMM2,
                       mlp ? "ar_mlp_wgrad_replicas" : "ar_attn_wgrad_replicas");
}

/* Sublayer `mlp` forward or backward (f) at its own degree, for per-sublayer plans. */
static void sub_run(struct lower *L, int mlp, int bwd, void (*f)(struct lower *))
{
    sub_enter(L, mlp, bwd);
    f(L);
    sub_leave(L, mlp, bwd);
}

static void attn_fwd_1d(struct lower *L)
{
    sub_run(L, 0, 0, attn_fwd);
}
static void mlp_fwd_1d(struct lower *L)
{
    sub_run(L, 1, 0, mlp_fwd);
}
static void mlp_bwd_1d(struct lower *L)
{
    sub_run(L, 1, 1, mlp_bwd);
}
static void attn_bwd_1d(struct lower *L)
{
    sub_run(L, 0, 1, attn_bwd);
}

static void layer_fwd(struct lower *L)
{
    if (L->st->kind == MDL_STRAT_PRIMEPAR || mdl_strategy_is_block(L->st))
        blocks(L, sh_attn_fwd, sh_mlp_fwd);
    else
        blocks(L, attn_fwd_1d, mlp_fwd_1d);
}

/* Backward of a layer, after recomputing its forward when asked: Megatron's full recomputation
 * repeats the forward collectives too; Oases' saves the post-collective outputs, so its
 * recomputation is compute only. */
static void layer_bwd(struct lower *L)
{
    if (L->st->recompute) {
        /* from the layer's saved input, in the attention's layout */
        L->layout[0] = L->layout[1] = mdl_strategy_sub_tp(L->st, 0);
        L->no_comm = L->st->oases;
        layer_fwd(L);
        L->no_comm = 0;
    }
    if (L->st->kind == MDL_STRAT_PRIMEPAR || mdl_strategy_is_block(L->st))
        blocks(L, sh_mlp_bwd, sh_attn_bwd);
    else
        blocks(L, mlp_bwd_1d, attn_bwd_1d);
}

/* The group of the n mesh devices dev[0..n-1] (in that order), given to each of them in out;
 * ranks is scratch. Returns 1 on allocation failure. */
static int line_group(struct mdl_program *p, const int *base, const int *dev, int n, int *ranks,
                      int *out)
{
    for (int k = 0; k < n; k++)
        ranks[k] = base[dev[k]];
    int g = n > 1 ? mdl_program_group(p, n, ranks) : -1;
    for (int k = 0; k < n; k++)
        out[dev[k]] = g;
    return n > 1 && g < 0;
}

int mdl_strategy_axis_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *row, int *col, int *pil)
{
    int d1, d2, d3 = mdl_strategy_depth(st);
    mdl_strategy_mesh(st, &d1, &d2);
    int n = d1 > d2 ? d1 : d2, plane = d1 * d2;
    if (d3 > n) n = d3;
    int *ranks = malloc((size_t)n * sizeof *ranks), *dev = malloc((size_t)n * sizeof *dev);
    int rc = ranks && dev ? 0 : -1;
    for (int l = 0; !rc && l < d3; l++) {
        for (int i = 0; !rc && i < d1; i++) { /* row i: the d2 axis */
            for (int j = 0; j < d2; j++)
                dev[j] = l * plane + mdl_strategy_device(st, i, j);
            rc = line_group(p, base, dev, d2, ranks, row);
        }
        for (int j = 0; !rc && j < d2; j++) { /* column j: the d1 axis */
            for (int i = 0; i < d1; i++)
                dev[i] = l * plane + mdl_strategy_device(st, i, j);
            rc = line_group(p, base, dev, d1, ranks, col);
        }
    }
    for (int x = 0; !rc && pil && x < plane; x++) { /* pillar x: the third axis */
        for (int l = 0; l < d3; l++)
            dev[l] = l * plane + x;
        rc = line_group(p, base, dev, d3, ranks, pil);
    }
    free(ranks);
    free(dev);
    return rc;
}

int mdl_strategy_ring_groups(const struct mdl_strategy *st, struct mdl_program *p, const int *base,
                             int *to, int *from)
{
    int d1, d2, d = st->tp;
    mdl_strategy_mesh(st, &d1, &d2);
    bool ring = st->kind == MDL_STRAT_PRIMEPAR && d1 > 1;
    for (int i = 0; i < d; i++)
        to[i] = from[i] = -1;
    for (int i = 0; ring && i < d; i++) {
        int next = i / d1 * d1 + (i + 1) % d1; /* rings of d1 consecutive members */
        int pair[2] = {base[i], base[next]};
        /* a communicator of its own: with a ring of 2 both directions join the same two ranks */
        int g = mdl_program_group_add(p, 2, pair);
        if (g < 0) return -1;
        to[i] = g;
        from[next] = g;
    }
    return 0;
}

/* Member r's group among ranks 0..tp-1: those of its block of `block` consecutive ranks that
 * are congruent to r modulo `stride`; -1 when alone, -2 on allocation failure. */
static int stride_group(struct mdl_program *p, int r, int block, int stride)
{
    int ranks[MDL_MAX_TP], n = 0;
    for (int j = r / block * block; j < (r / block + 1) * block; j++)
        if (j % stride == r % stride) ranks[n++] = j;
    if (n < 2) return -1;
    int g = mdl_program_group(p, n, ranks);
    return g < 0 ? -2 : g;
}

/* The replica groups of a sublayer of degree t: rep[r] for each rank, the ranks congruent to r
 * modulo t. Each is a communicator of its own (the weight gradients' stream), apart from the
 * re-layout group, which may hold the same ranks. Returns 0 or -1 on allocation failure. */
static int replica_groups(const struct mdl_strategy *st, struct mdl_program *p, int t, int *rep)
{
    int ranks[MDL_MAX_TP], n = st->tp / t;
    for (int c = 0; c < t; c++) {
        for (int k = 0; k < n; k++)
            ranks[k] = c + k * t;
        int g = n > 1 ? mdl_program_group_add(p, n, ranks) : -1;
        if (n > 1 && g < 0) return -1;
        for (int k = 0; k < n; k++)
            rep[c + k * t] = g;
    }
    return 0;
}

/* The groups of a per-sublayer plan, each indexed by rank, in the order of the markers
 * MDL_GROUP_SUB_ATTN (-15) to MDL_GROUP_RELAYOUT (-19): the sublayers' groups and the re-layout
 * group first, then the replica groups, which must not be found as any of those. Returns 0 or
 * -1 on allocation failure. */
static int sub_groups(const struct mdl_strategy *st, struct mdl_program *p, int *g[5])
{
    int ta = mdl_strategy_sub_tp(st, 0), tm = mdl_strategy_sub_tp(st, 1);
    int big = ta > tm ? ta : tm, small = ta > tm ? tm : ta;
    for (int r = 0; r < st->tp; r++) {
        g[0][r] = stride_group(p, r, ta, 1);
        g[1][r] = stride_group(p, r, tm, 1);
        g[4][r] = stride_group(p, r, big, small);
        if (g[0][r] == -2 || g[1][r] == -2 || g[4][r] == -2) return -1;
    }
    return replica_groups(st, p, ta, g[2]) || replica_groups(st, p, tm, g[3]) ? -1 : 0;
}

/* Gives each rank a copy of rank 0's ops with its own row and column groups. */
static int assign_groups(const struct mdl_strategy *st, struct mdl_program *out)
{
    int *base = malloc((size_t)st->tp * sizeof *base);
    int *row = malloc((size_t)st->tp * sizeof *row), *col = malloc((size_t)st->tp * sizeof *col);
    int *to = malloc((size_t)st->tp * sizeof *to), *from = malloc((size_t)st->tp * sizeof *from);
    int *pil = malloc((size_t)st->tp * sizeof *pil);
    int rc = base && row && col && to && from && pil ? 0 : -1;
    for (int r = 0; !rc && r < st->tp; r++)
        base[r] = r;
    if (!rc) rc = mdl_strategy_axis_groups(st, out, base, row, col, pil);
    if (!rc) rc = mdl_strategy_ring_groups(st, out, base, to, from);
    int *sub[5];
    for (int i = 0; i < 5; i++)
        if (!(sub[i] = malloc((size_t)st->tp * sizeof *sub[i]))) rc = -1;
    if (!rc && mdl_strategy_is_mixed(st)) rc = sub_groups(st, out, sub);
    /* rank 0 last: the others copy its ops while they still name the axes */
    for (int r = st->tp - 1; !rc && r >= 0; r--) {
        struct mdl_rank *dst = &out->ranks[r];
        if (r > 0 && mdl_rank_copy(dst, &out->ranks[0])) rc = -1;
        for (int k = 0; !rc && k < dst->nops; k++) {
            if (dst->ops[k].group == AXIS_D1)
                dst->ops[k].group = col[r];
            else if (dst->ops[k].group == AXIS_D2)
                dst->ops[k].group = row[r];
            else if (dst->ops[k].group == AXIS_D3)
                dst->ops[k].group = pil[r];
            else if (dst->ops[k].group == MDL_GROUP_SHIFT_TO)
                dst->ops[k].group = to[r];
            else if (dst->ops[k].group == MDL_GROUP_SHIFT_FROM)
                dst->ops[k].group = from[r];
            else if (dst->ops[k].group <= MDL_GROUP_SUB_ATTN &&
                     dst->ops[k].group >= MDL_GROUP_RELAYOUT)
                dst->ops[k].group = sub[MDL_GROUP_SUB_ATTN - dst->ops[k].group][r];
        }
    }
    for (int i = 0; i < 5; i++)
        free(sub[i]);
    free(to);
    free(from);
    free(pil);
    free(base);
    free(row);
    free(col);
    return rc;
}

int mdl_ops_check(double nops, const char *field, const char *hint, struct tps_error *err)
{
    if (nops <= mdl_max_ops()) return TPS_OK;
    return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, field,
                         "the program would hold %.3g ops, above the limit of %.3g "
                         "(TPSIM_MAX_OPS): %s",
                         nops, mdl_max_ops(), hint);
}

double mdl_max_ops(void)
{
    const char *v = getenv("TPSIM_MAX_OPS");
    char *end;
    double x = v ? strtod(v, &end) : 0;
    return v && *v && !*end && x > 0 ? x : MDL_MAX_OPS_DEFAULT;
}

static void lower_init(struct lower *L, const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, const struct mdl_framework *fw,
                       struct mdl_program *out, int rank)
{
    static const struct mdl_framework host_free = {0};
    *L = (struct lower){.p = out,
                        .m = m,
                        .dev = dev,
                        .st = st,
                        .fw = fw ? fw : &host_free,
                        .rank = rank,
                        .pending = -1,
                        .pending2 = -1,
                        .after = -1,
                        .last_comp = -1,
                        .graph = {-2, -2, -2}};
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    L->d1 = d1;
    L->d2 = d2;
    L->d3 = mdl_strategy_depth(st);
    L->frac = st->oases ? 0.5 : 1;
    L->pend[0] = L->pend[1] = -1;
    L->rep = st->kind == MDL_STRAT_PRIMEPAR ? L->d3 : 1;
    L->nmb = 1;
    L->share = 1;
    L->layout[0] = L->layout[1] = L->glayout[0] = L->glayout[1] = st->tp;
}

/* Lowers rank 0's ops only (no groups per rank); see mdl_strategy_lower. */
static int lower_rank0(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, const struct mdl_framework *fw, int layers,
                       int micro_batches, double share, struct mdl_program *out)
{
    struct lower L;
    lower_init(&L, st, m, dev, fw, out, 0);
    L.nmb = micro_batches;
    L.share = share;
    for (int mb = 0; mb < micro_batches && !L.oom; mb++) {
        L.mb = mb;
        /* the layers' input and the loss's gradient: whole on every rank */
        L.layout[0] = L.layout[1] = L.glayout[0] = L.glayout[1] = st->tp;
        L.phase = MDL_PHASE_FWD;
        for (int l = 0; l < layers && !L.oom; l++) {
            L.layer = l;
            layer_fwd(&L);
        }
        L.phase = MDL_PHASE_BWD;
        for (int l = layers - 1; l >= 0 && !L.oom; l--) {
            L.layer = l;
            layer_bwd(&L);
        }
    }
    return L.oom ? -1 : 0;
}

double mdl_strategy_ops(const struct mdl_strategy *st, const struct mdl_model *m,
                        const struct mdl_device *dev, const struct mdl_framework *fw, long layers,
                        long micro_batches)
{
    struct tps_error e = {0};
    if (mdl_strategy_check(st, m, &e) != 0) return -1;
    struct mdl_program p;
    if (mdl_program_init(&p, st->tp) != 0) return -1;
    int rc = lower_rank0(st, m, dev, fw, 1, 1, 1, &p);
    double n =
        rc ? -1 : (double)p.ranks[0].nops * (double)st->tp * (double)layers * (double)micro_batches;
    mdl_program_release(&p);
    return n;
}

int mdl_strategy_lower(const struct mdl_strategy *st, const struct mdl_model *m,
                       const struct mdl_device *dev, const struct mdl_framework *fw, int layers,
                       int micro_batches, struct mdl_program *out, struct tps_error *err)
{
    if (mdl_program_init(out, st->tp) != 0) return tps_error_oom(err);
    int rc = mdl_strategy_check(st, m, err);
    if (rc) return rc;
    out->layers = layers;
    out->micro_batches = micro_batches;
    out->model_flop = mdl_model_flop(m, layers, micro_batches);
    out->peak_flops = dev->peak_flops[m->dtype];
    if ((rc = mdl_ops_check(mdl_strategy_ops(st, m, dev, fw, layers, micro_batches), "layers",
                            "simulate fewer layers or micro-batches", err)))
        return rc;
    if (lower_rank0(st, m, dev, fw, layers, micro_batches, 1, out) != 0 ||
        assign_groups(st, out) != 0)
        return tps_error_oom(err);
    return TPS_OK;
}

int mdl_strategy_lower_share(const struct mdl_strategy *st, const struct mdl_model *m,
                             const struct mdl_device *dev, const struct mdl_framework *fw,
                             int layers, int micro_batches, double share, struct mdl_program *out)
{
    if (mdl_program_init(out, 1) != 0) return -1;
    return lower_rank0(st, m, dev, fw, layers, micro_batches, share, out);
}

struct mdl_emitter {
    struct lower L;
};

struct mdl_emitter *mdl_emitter_new(const struct mdl_strategy *st, const struct mdl_model *m,
                                    const struct mdl_device *dev, const struct mdl_framework *fw,
                                    struct mdl_program *p, int rank)
{
    struct mdl_emitter *E = malloc(sizeof *E);
    if (E) lower_init(&E->L, st, m, dev, fw, p, rank);
    return E;
}

void mdl_emitter_free(struct mdl_emitter *E)
{
    free(E);
}

/* Starts a piece: its first compute op waits for `after`; returns the rank's op count. */
static int piece_begin(struct lower *L, enum mdl_phase ph, int mb, int layer, int after)
{
    L->phase = (uint8_t)ph;
    L->mb = mb;
    L->layer = layer;
    L->after = after;
    return L->p->ranks[L->rank].nops;
}

/* The last op of a piece that started at op count n0, or `after` when it emitted nothing. */
static int piece_end(struct lower *L, int n0, int after)
{
    if (L->oom) return -1;
    int n = L->p->ranks[L->rank].nops;
    return n > n0 ? n - 1 : after;
}

int mdl_emitter_layers(struct mdl_emitter *E, enum mdl_phase ph, int first, int n, int mb,
                       int after)
{
    struct lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, first, after);
    for (int i = 0; i < n && !L->oom; i++) {
        L->layer = ph == MDL_PHASE_BWD ? first + n - 1 - i : first + i;
        if (ph == MDL_PHASE_BWD)
            layer_bwd(L);
        else
            layer_fwd(L);
    }
    return piece_end(L, n0, after);
}

/* Shapes of the whole micro-batch: Oases splits the layers, not the embedding or the logits. */
static struct dims whole_dims(struct lower *L)
{
    double frac = L->frac;
    L->frac = 1;
    struct dims D = dims_of(L);
    L->frac = frac;
    return D;
}

int mdl_emitter_embedding(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after)
{
    struct lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, -1, after);
    if (L->m->vocab <= 0) return after;
    struct dims D = whole_dims(L);
    double d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok;
    if (mdl_strategy_is_block(L->st)) {
        /* tpsim's layout for the block meshes: the table split by the hidden dim as the layers'
         * input is (q ways) and replicated over the other axes, so the lookup of the rank's
         * tokens is local and the table's gradient is all-reduced over the replicas */
        double q = D.d1;
        if (ph == MDL_PHASE_FWD) {
            mem(L, "embedding", 2 * tok * h / q);
            dropout_add(L, "embedding_position_dropout", tok * h / q);
        } else {
            mem(L, "embedding_dropout_bwd", 2 * tok * h / q);
            int x = mem(L, "embedding_wgrad", 3 * tok * h / q);
            double v = (double)L->m->vocab;
            bool cube = L->st->kind == MDL_STRAT_TP3D;
            x = coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad", v * h / q, x, AXIS_D1, 0);
            if (cube)
                coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad2", v * h / q, x, AXIS_D2, 0);
            if (L->st->kind == MDL_STRAT_TESSERACT)
                coll_on(L, MDL_OP_ALL_REDUCE, "ar_embedding_wgrad_depth", v * h / q, x, AXIS_D3, 0);
        }
        return piece_end(L, n0, after);
    }
    if (ph == MDL_PHASE_FWD) {
        /* each rank looks up the tokens of its vocabulary rows (zeros elsewhere); the partial
         * embeddings are summed over the group (reduce-scattered with sequence parallelism) */
        int x = mem(L, "embedding", 2 * bs * h / d2);
        reduce_out(L, "ar_embedding", bs * h / d2, x, AXIS_D1);
        dropout_add(L, "embedding_position_dropout", tok * h / d2);
    } else {
        int x = mem(L, "embedding_dropout_bwd", 2 * tok * h / d2);
        if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_embedding_bwd", bs * h, x, AXIS_D1);
        mem(L, "embedding_wgrad", 3 * bs * h / d2); /* scatter-add into the weight gradient */
    }
    return piece_end(L, n0, after);
}

int mdl_emitter_logits(struct mdl_emitter *E, enum mdl_phase ph, int mb, int after)
{
    struct lower *L = &E->L;
    int n0 = piece_begin(L, ph, mb, -1, after);
    if (L->m->vocab <= 0) return after;
    struct dims D = whole_dims(L);
    double d1 = D.d1, d2 = D.d2, h = D.h, bs = D.bs, tok = D.tok, v = (double)L->m->vocab;
    double f32 = 4.0 / mdl_dtype_bytes(L->m->dtype); /* elements of the dtype per fp32 value */
    bool pp = L->st->kind == MDL_STRAT_PRIMEPAR, bk = mdl_strategy_is_block(L->st);
    int ce_axis = AXIS_D1; /* the axis the vocabulary is split over */
    if (bk) { /* the logits are one more linear of the mesh, its width the vocabulary */
        ce_axis = L->st->kind == MDL_STRAT_TP3D ? AXIS_D1 : AXIS_D2;
        bs = tok;
    }
    if (ph == MDL_PHASE_FWD) {
        int x;
        if (bk) {
            ln_sharded(L, "final_ln", tok, h / d1, 0);
            x = block_linear(L, "logits", h, v, 0, 0);
        } else if (pp) { /* the logits are a spatial-temporal linear too, vocabulary-parallel out */
            ln_sharded(L, "final_ln", bs, h / d1, 0);
            x = st_forward(L, "logits", bs, v / d1, h);
        } else {
            x = mem_k(L, MDL_MEM_NORM, "final_ln", 2 * tok * h / d2);
            if (D.sp) coll(L, MDL_OP_ALL_GATHER, "ag_logits", bs * h, x, AXIS_D1);
            x = linear_reduce(L, "logits", "ar_logits", bs, v / d1, h / d2, AXIS_D2);
        }
        /* vocabulary-parallel cross entropy: the row maximum, the sum of exponentials and the
         * target's logit are all-reduced over the group as fp32, one value per token */
        x = mem_k(L, MDL_MEM_SOFTMAX, "cross_entropy_max", bs * v / d1);
        coll(L, MDL_OP_ALL_REDUCE, "ar_ce_max", bs * f32, x, ce_axis);
        x = mem_k(L, MDL_MEM_SOFTMAX, "cross_entropy_exp", (1 + 2 * f32) * bs * v / d1);
        coll(L, MDL_OP_ALL_REDUCE, "ar_ce_sum", 2 * bs * f32, x, ce_axis);
        mem(L, "cross_entropy_loss", 2 * bs * f32);
    } else {
        mem(L, "cross_entropy_bwd", (f32 + 1) * bs * v / d1);
        if (bk) {
            block_linear(L, "logits", h, v, 0, 1);
            ln_sharded(L, "final_ln_bwd", tok, h / d1, 1);
        } else if (pp) {
            st_backward(L, "logits", bs, v / d1, h);
            ln_sharded(L, "final_ln_bwd", bs, h / d1, 1);
        } else {
            column_bwd(L, "logits_dgrad", "logits_wgrad", "ar_logits_bwd", "ag_logits_input_bwd",
                       bs, v / d1, h / d2, AXIS_D1);
            ln_bwd(L, "final_ln_bwd", tok * h / d2);
        }
    }
    return piece_end(L, n0, after);
}

int mdl_emitter_op(struct mdl_emitter *E, struct mdl_op *op, const char *name, int mb,
                   enum mdl_phase ph)
{
    struct lower *L = &E->L;
    L->phase = (uint8_t)ph;
    L->mb = mb;
    L->layer = -1;
    return emit(L, op, name);
}
