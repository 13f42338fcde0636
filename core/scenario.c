/* scenario.c - YAML scenario loader (see scenario.h, docs/scenarios.md). Uses common/ydoc for
 * positioned errors, models/ presets and platforms/spec for the platform section. */
#include "core/scenario.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/ydoc.h"
#include "core/hfconfig.h"
#include "models/compute.h"
#include "models/kind.h"
#include "platforms/preset.h"
#include "platforms/spec.h"

static const char *const top_keys[] = {
    "name",    "description", "model",     "device", "platform", "strategy",
    "run",     "collectives", "framework", "sweep",  "pipeline", "training",
    "devices", "stragglers",  "compare",   "cost",   NULL};
static int read_dtype(const struct tps_ydoc *d, int v, const char *f, void *dst,
                      struct tps_error *err)
{
    const char *t;
    int rc = tps_ydoc_str(d, v, f, &t, err);
    if (!rc && mdl_dtype_parse(t, (enum mdl_dtype *)dst) != 0)
        rc = tps_ydoc_fail(d, v, f, err, "expected fp32, fp16, bf16 or fp8, got '%s'", t);
    return rc;
}

static int read_peak(const struct tps_ydoc *d, int v, const char *f, void *dst,
                     struct tps_error *err)
{
    double x;
    int rc = tps_ydoc_positive(d, v, f, &x, err);
    if (!rc && (x < 1e-3 || x > 1e6))
        rc = tps_ydoc_fail(d, v, f, err, "must be between 0.001 and 1e6 TFLOP/s, got %g", x);
    if (!rc) *(double *)dst = x * 1e12;
    return rc;
}

/* A device's memory: a size (80GB, 80GiB), at most 100 TB. */
static int read_memory(const struct tps_ydoc *d, int v, const char *f, void *dst,
                       struct tps_error *err)
{
    double x;
    int rc = tps_ydoc_size(d, v, f, &x, err);
    if (!rc && x > 1e14)
        rc = tps_ydoc_fail(d, v, f, err, "must be at most 100 TB, got %g bytes", x);
    if (!rc) *(double *)dst = x;
    return rc;
}

/* memory_reserved: a size, 0 allowed (nothing held back). */
static int read_reserved(const struct tps_ydoc *d, int v, const char *f, void *dst,
                         struct tps_error *err)
{
    const char *t = tps_ydoc_text(d, v);
    if (t && !strcmp(t, "0")) {
        *(double *)dst = 0;
        return TPS_OK;
    }
    return read_memory(d, v, f, dst, err);
}

#define MAX_COUNT 1e8 /* any count of a scenario: layers, hidden, sequence, micro-batches */

/* Each section's keys, read by tps_ydoc_read_map; SKIP rows are read by the loaders below. */
#define M(field) offsetof(struct mdl_model, field)
static const struct tps_ykey model_keys[] = {
    {"preset", TPS_YK_SKIP, 0, 0, {NULL}},
    {"hf_config", TPS_YK_SKIP, 0, 0, {NULL}},
    {"layers", TPS_YK_LONG, M(layers), MDL_MAX_LAYERS, {NULL}},
    {"hidden", TPS_YK_LONG, M(hidden), MAX_COUNT, {NULL}},
    {"heads", TPS_YK_LONG, M(heads), MAX_COUNT, {NULL}},
    {"ffn", TPS_YK_LONG, M(ffn), MAX_COUNT, {NULL}},
    {"seq", TPS_YK_LONG, M(seq), MAX_COUNT, {NULL}},
    {"micro_batch", TPS_YK_LONG, M(micro_batch), MAX_COUNT, {NULL}},
    {"vocab", TPS_YK_LONG, M(vocab), MAX_COUNT, {NULL}},
    {"kv_heads", TPS_YK_LONG, M(kv_heads), MAX_COUNT, {NULL}},
    {"glu", TPS_YK_BOOL, M(glu), 0, {NULL}},
    {"attention_dropout", TPS_YK_BOOL, M(attn_dropout), 0, {NULL}},
    {"dtype", TPS_YK_FN, M(dtype), 0, {.fn = read_dtype}},
    {"fp8_attention", TPS_YK_BOOL, M(fp8_attention), 0, {NULL}},
    {"moe", TPS_YK_SKIP, 0, 0, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef M

/* A count that may be 0 (an int). */
static int read_count0(const struct tps_ydoc *d, int v, const char *f, void *dst,
                       struct tps_error *err)
{
    long x;
    int rc = tps_ydoc_long(d, v, f, &x, err);
    if (!rc && (x < 0 || x > 100000))
        rc = tps_ydoc_fail(d, v, f, err, "must be between 0 and 100000, got %ld", x);
    if (!rc) *(int *)dst = (int)x;
    return rc;
}

/* A number >= 0 (a double). */
static int read_nonneg(const struct tps_ydoc *d, int v, const char *f, void *dst,
                       struct tps_error *err)
{
    double x;
    int rc = tps_ydoc_double(d, v, f, &x, err);
    if (!rc && !(x >= 0 && x <= 1e3))
        rc = tps_ydoc_fail(d, v, f, err, "must be between 0 and 1000, got %g", x);
    if (!rc) *(double *)dst = x;
    return rc;
}

/* model.moe: the mixture of experts (Megatron-LM's --num-experts, --moe-router-topk,
 * --moe-ffn-hidden-size, shared experts, leading dense layers, --moe-expert-capacity-factor),
 * and the routing's skew: a Zipf exponent with its seed, or each expert's share. */
struct moe_in {
    struct mdl_moe moe;
    double skew;
    long seed;
};
#define E(field) offsetof(struct moe_in, field)
static const struct tps_ykey moe_keys[] = {
    {"experts", TPS_YK_INT, E(moe.experts), MDL_MOE_MAX_EXPERTS, {NULL}},
    {"top_k", TPS_YK_INT, E(moe.top_k), MDL_MOE_MAX_EXPERTS, {NULL}},
    {"expert_ffn", TPS_YK_LONG, E(moe.expert_ffn), MAX_COUNT, {NULL}},
    {"shared_experts", TPS_YK_FN, E(moe.shared_experts), 0, {.fn = read_count0}},
    {"first_dense_layers", TPS_YK_FN, E(moe.first_dense_layers), 0, {.fn = read_count0}},
    {"capacity_factor", TPS_YK_FN, E(moe.capacity_factor), 0, {.fn = read_nonneg}},
    {"routing_skew", TPS_YK_FN, E(skew), 0, {.fn = read_nonneg}},
    {"routing_seed", TPS_YK_LONG, E(seed), MAX_COUNT, {NULL}},
    {"expert_shares", TPS_YK_SKIP, 0, 0, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef E

/* cost: what the GPUs cost (a job's answers, core/report.h) */
static const struct tps_ykey cost_keys[] = {
    {"gpu_hour", TPS_YK_POSITIVE, offsetof(struct scn_scenario, gpu_hour_price), 1e6, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};

/* The device section reads into a preset device plus the peak, which the model's dtype places. */
struct device_in {
    struct mdl_device dev;
    double peak_flops; /* 0: the preset's */
};
#define D(field) offsetof(struct device_in, field)
static const struct tps_ykey device_keys[] = {
    {"preset", TPS_YK_SKIP, 0, 0, {NULL}},
    {"peak_tflops", TPS_YK_FN, D(peak_flops), 0, {.fn = read_peak}},
    {"hbm_bandwidth", TPS_YK_RATE, D(dev.hbm_Bps), 0, {NULL}},
    {"memory", TPS_YK_FN, D(dev.mem_bytes), 0, {.fn = read_memory}},
    {"memory_reserved", TPS_YK_FN, D(dev.mem_reserved_bytes), 0, {.fn = read_reserved}},
    {"tdp", TPS_YK_POSITIVE, D(dev.tdp_w), 1e5, {NULL}},         /* watts */
    {"idle_power", TPS_YK_POSITIVE, D(dev.idle_w), 1e5, {NULL}}, /* watts */
    {"gemm_efficiency", TPS_YK_FRACTION, D(dev.gemm_eff_max), 0, {NULL}},
    {"gemm_overhead", TPS_YK_TIME, D(dev.gemm_overhead_s), 0, {NULL}},
    {"gemm_table", TPS_YK_SKIP, 0, 0, {NULL}},
    {"mem_efficiency", TPS_YK_FRACTION, D(dev.mem_eff), 0, {NULL}},
    {"kernel_overhead", TPS_YK_TIME, D(dev.kernel_overhead_s), 0, {NULL}},
    {"norm_efficiency", TPS_YK_FRACTION, D(dev.norm_eff), 0, {NULL}},
    {"softmax_efficiency", TPS_YK_FRACTION, D(dev.softmax_eff), 0, {NULL}},
    {"flash_efficiency", TPS_YK_FRACTION, D(dev.flash_eff), 0, {NULL}},
    {"launch_overhead", TPS_YK_TIME, D(dev.launch_s), 0, {NULL}},
    {"backward_launch_overhead", TPS_YK_TIME, D(dev.bwd_launch_s), 0, {NULL}},
    {"graph_launch_overhead", TPS_YK_TIME, D(dev.graph_launch_s), 0, {NULL}},
    {"flash_launch_overhead", TPS_YK_TIME, D(dev.flash_launch_s), 0, {NULL}},
    {"flash_backward_launch_overhead", TPS_YK_TIME, D(dev.flash_bwd_launch_s), 0, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef D

#define S(field) offsetof(struct mdl_strategy, field)
static const struct tps_ykey strategy_keys[] = {
    {"kind", TPS_YK_SKIP, 0, 0, {NULL}},
    {"tp", TPS_YK_SKIP, 0, 0, {NULL}},
    {"sequence_parallel", TPS_YK_BOOL, S(sequence_parallel), 0, {NULL}},
    {"async_grad_allreduce", TPS_YK_BOOL, S(async_grad_allreduce), 0, {NULL}},
    {"mesh", TPS_YK_SKIP, 0, 0, {NULL}},
    {"placement", TPS_YK_SKIP, 0, 0, {NULL}},
    {"extra_allgathers", TPS_YK_BOOL, S(atp.extra_allgathers), 0, {NULL}},
    {"chunks", TPS_YK_INT, S(chunks), 64, {NULL}},
    {"tp_comm_overlap", TPS_YK_BOOL, S(tp_comm_overlap), 0, {NULL}},
    {"async_tensor_parallel", TPS_YK_BOOL, S(async_tp), 0, {NULL}},
    {"oases", TPS_YK_BOOL, S(oases), 0, {NULL}},
    {"recompute", TPS_YK_BOOL, S(recompute), 0, {NULL}},
    {"pp", TPS_YK_SKIP, 0, 0, {NULL}},
    {"dp", TPS_YK_SKIP, 0, 0, {NULL}},
    {"order", TPS_YK_SKIP, 0, 0, {NULL}},
    {"depth", TPS_YK_SKIP, 0, 0, {NULL}},
    {"ring", TPS_YK_INT, S(primepar.ring), MDL_MAX_TP, {NULL}},
    {"attention_tp", TPS_YK_INT, S(sublayer.attention_tp), MDL_MAX_TP, {NULL}},
    {"mlp_tp", TPS_YK_INT, S(sublayer.mlp_tp), MDL_MAX_TP, {NULL}},
    {"balance", TPS_YK_SKIP, 0, 0, {NULL}},
    {"max_drop", TPS_YK_SKIP, 0, 0, {NULL}},
    {"cp", TPS_YK_INT, S(cp), MDL_MAX_TP, {NULL}},
    {"cp_comm_type", TPS_YK_ENUM, S(cp_comm), 0, {.names = mdl_cp_comm_names}},
    {"ep", TPS_YK_INT, S(ep), MDL_MAX_TP, {NULL}},
    {"expert_tp", TPS_YK_INT, S(expert_tp), MDL_MAX_TP, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef S

/* pipeline.batch_p2p_sync: a bool, stored negated (mdl_job.batch_p2p_nosync: true by default) */
static int read_p2p_sync(const struct tps_ydoc *d, int id, const char *field, void *dst,
                         struct tps_error *err)
{
    bool on;
    int rc = tps_ydoc_bool(d, id, field, &on, err);
    if (!rc) *(bool *)dst = !on;
    return rc;
}

#define J(field) offsetof(struct mdl_job, field)
static const struct tps_ykey pipeline_keys[] = {
    {"schedule", TPS_YK_ENUM, J(schedule), 0, {.names = mdl_schedule_names}},
    {"virtual_stages", TPS_YK_INT, J(virtual_stages), 1024, {NULL}},
    {"first_stage_layers", TPS_YK_INT, J(first_stage_layers), 100000, {NULL}},
    {"last_stage_layers", TPS_YK_INT, J(last_stage_layers), 100000, {NULL}},
    {"account_for_embedding_in_pipeline_split", TPS_YK_BOOL, J(account_embedding), 0, {NULL}},
    {"account_for_loss_in_pipeline_split", TPS_YK_BOOL, J(account_loss), 0, {NULL}},
    {"overlap_p2p_comm", TPS_YK_BOOL, J(overlap_p2p_comm), 0, {NULL}},
    {"batch_p2p_sync", TPS_YK_FN, J(batch_p2p_nosync), 0, {.fn = read_p2p_sync}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};

/* A count of tokens: a number, or one with a decimal suffix K, M, B (or G) or T ("15T", "1.4T",
 * "300B"), as papers and launch scripts write them. At most 1e18. */
static int read_tokens(const struct tps_ydoc *d, int v, const char *f, void *dst,
                       struct tps_error *err)
{
    static const struct {
        char c;
        double x;
    } sfx[] = {{'K', 1e3}, {'k', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}};
    const char *t = tps_ydoc_text(d, v);
    char *end = NULL;
    double n = t ? strtod(t, &end) : 0;
    for (size_t i = 0; end && end != t && *end && i < sizeof sfx / sizeof sfx[0]; i++)
        if (end[0] == sfx[i].c && end[1] == '\0') {
            n *= sfx[i].x;
            end++;
        }
    if (!t || end == t || *end || !(n >= 1) || n > 1e18)
        return tps_ydoc_fail(d, v, f, err,
                             "expected a count of tokens such as 300B, 1.4T or 2e12 (1 to 1e18), "
                             "got '%s'",
                             t ? t : "a non-scalar");
    *(double *)dst = n;
    return TPS_OK;
}

/* training: what one iteration is and how it trains */
enum recompute_mode { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const zero_names[] = {"0", "1", "2", "3", NULL};
struct training_in {
    struct mdl_job job;
    double tokens; /* training.tokens: the tokens to train on, 0 not given */
    long global_batch;
    int recompute; /* enum recompute_mode, -1 not given */
    bool dist_opt; /* distributed_optimizer: ZeRO-1 */
};
#define T(field) offsetof(struct training_in, field)
static const struct tps_ykey training_keys[] = {
    {"global_batch", TPS_YK_LONG, T(global_batch), MAX_COUNT, {NULL}},
    {"recompute", TPS_YK_ENUM, T(recompute), 0, {.names = recompute_names}},
    {"distributed_optimizer", TPS_YK_BOOL, T(dist_opt), 0, {NULL}},
    {"zero", TPS_YK_ENUM, T(job.zero), 0, {.names = zero_names}},
    {"untied_embeddings", TPS_YK_BOOL, T(job.untied_embeddings), 0, {NULL}},
    {"overlap_grad_reduce", TPS_YK_BOOL, T(job.overlap_grad_reduce), 0, {NULL}},
    {"overlap_param_gather", TPS_YK_BOOL, T(job.overlap_param_gather), 0, {NULL}},
    {"grad_reduce_in_bf16", TPS_YK_BOOL, T(job.grad_reduce_in_bf16), 0, {NULL}},
    {"fp8_param_gather", TPS_YK_BOOL, T(job.fp8_param_gather), 0, {NULL}},
    {"tp_only_amax_red", TPS_YK_BOOL, T(job.tp_only_amax_red), 0, {NULL}},
    {"tokens", TPS_YK_FN, T(tokens), 0, {.fn = read_tokens}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef T
#undef J

#define F(field) offsetof(struct mdl_framework, field)
static const struct tps_ykey framework_keys[] = {
    {"launch", TPS_YK_ENUM, F(launch), 0, {.names = mdl_launch_names}},
    {"kernels", TPS_YK_ENUM, F(kernels), 0, {.names = mdl_kernels_names}},
    {"attention", TPS_YK_ENUM, F(attention), 0, {.names = mdl_attention_names}},
    {"cuda_device_max_connections", TPS_YK_INT, F(connections), 32, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef F

/* run: counts read into longs. */
struct run_in {
    long layers, micro_batches;
    int fold; /* 0 auto, 1 yes, 2 no */
};
static const char *const fold_names[] = {"auto", "true", "false", NULL};
static const struct tps_ykey run_keys[] = {
    {"layers", TPS_YK_LONG, offsetof(struct run_in, layers), MAX_COUNT, {NULL}},
    {"micro_batches", TPS_YK_LONG, offsetof(struct run_in, micro_batches), 100000, {NULL}},
    {"fold", TPS_YK_ENUM, offsetof(struct run_in, fold), 0, {.names = fold_names}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};

/* model.moe's explicit shares (node v, a list of one number >= 0 per expert), normalised. */
static int read_shares(const struct tps_ydoc *d, int v, struct mdl_moe *moe, struct tps_error *err)
{
    const char *f = "model.moe.expert_shares";
    int n = tps_ydoc_is_seq(d, v) ? tps_ydoc_len(d, v) : -1;
    if (n != moe->experts)
        return tps_ydoc_fail(d, v, f, err, "expected a list of %d numbers, one per expert",
                             moe->experts);
    double sum = 0, x[MDL_MOE_MAX_EXPERTS];
    for (int i = 0; i < n; i++) {
        int rc = tps_ydoc_double(d, tps_ydoc_seq_at(d, v, i), f, &x[i], err);
        if (rc) return rc;
        if (!(x[i] >= 0 && x[i] < 1e12))
            return tps_ydoc_fail(d, tps_ydoc_seq_at(d, v, i), f, err,
                                 "a share must be 0 or more, got %g", x[i]);
        sum += x[i];
    }
    if (!(sum > 0)) return tps_ydoc_fail(d, v, f, err, "the shares must not all be 0");
    for (int i = 0; i < n; i++)
        moe->share[i] = (float)(x[i] / sum);
    moe->skewed = true;
    return TPS_OK;
}

/* model.moe (node id) over the preset's mixture, if any; checked against the model. */
static int load_moe(const struct tps_ydoc *d, int id, struct mdl_model *m, struct tps_error *err)
{
    struct moe_in in = {.moe = m->moe, .seed = 1};
    if (!tps_ydoc_is_map(d, id))
        return tps_ydoc_fail(d, id, "model.moe", err, "expected a mapping of keys to values");
    int rc = tps_ydoc_read_map(d, id, "model.moe", moe_keys, &in, err);
    if (rc) return rc;
    struct mdl_moe *x = &in.moe;
    int at;
    if (x->experts < 1)
        return tps_ydoc_fail(d, id, "model.moe.experts", err,
                             "missing: the number of routed experts");
    if (x->top_k < 1)
        return tps_ydoc_fail(d, id, "model.moe.top_k", err,
                             "missing: the experts each token is routed to");
    if (x->top_k > x->experts)
        return tps_ydoc_fail(d, (at = tps_ydoc_get(d, id, "top_k")) ? at : id, "model.moe.top_k",
                             err, "must be at most model.moe.experts (%d), got %d", x->experts,
                             x->top_k);
    if (!x->expert_ffn) x->expert_ffn = m->ffn;
    if (x->first_dense_layers >= m->layers)
        return tps_ydoc_fail(d, (at = tps_ydoc_get(d, id, "first_dense_layers")) ? at : id,
                             "model.moe.first_dense_layers", err,
                             "must be below model.layers (%ld), got %d", m->layers,
                             x->first_dense_layers);
    int sh = tps_ydoc_get(d, id, "expert_shares"), sk = tps_ydoc_get(d, id, "routing_skew");
    if (sh && sk)
        return tps_ydoc_fail(d, sk, "model.moe.routing_skew", err,
                             "give either routing_skew or expert_shares, not both");
    if (tps_ydoc_get(d, id, "routing_seed") && !sk)
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "routing_seed"), "model.moe.routing_seed", err,
                             "applies with model.moe.routing_skew");
    if (sk || tps_ydoc_get(d, id, "experts")) x->skewed = false;
    if (sh && (rc = read_shares(d, sh, x, err))) return rc;
    if (sk) mdl_moe_zipf(x, in.skew, (unsigned long)in.seed);
    m->moe = *x;
    return TPS_OK;
}

/* Fills *m from preset `name` (node id of d), or fails listing the presets. */
static int model_preset(const struct tps_ydoc *d, int id, const char *field, const char *name,
                        struct mdl_model *m, struct tps_error *err)
{
    if (mdl_model_preset(name, m) == 0) return TPS_OK;
    char list[256];
    tps_names_join(mdl_model_names(), list, sizeof list);
    return tps_ydoc_fail(d, id, field, err, "unknown model preset '%s' (expected one of: %s)", name,
                         list);
}

static int load_model(const struct tps_ydoc *d, int id, const char *base, struct scn_scenario *s,
                      struct tps_error *err)
{
    struct mdl_model *m = &s->model;
    int rc;
    if (!id) return tps_ydoc_fail(d, tps_ydoc_root(d), "model", err, "missing section");
    if (tps_ydoc_is_scalar(d, id))
        return model_preset(d, id, "model", tps_ydoc_text(d, id), m, err);
    if (!tps_ydoc_is_map(d, id))
        return tps_ydoc_fail(d, id, "model", err, "expected a mapping of keys to values");
    int pid = tps_ydoc_get(d, id, "preset"), hid = tps_ydoc_get(d, id, "hf_config");
    memset(m, 0, sizeof *m);
    m->micro_batch = 1;
    m->dtype = MDL_BF16;
    snprintf(m->name, sizeof m->name, "custom");
    if (pid && hid)
        return tps_ydoc_fail(d, hid, "model.hf_config", err, "give model.preset or a config");
    if (pid) {
        const char *name;
        if ((rc = tps_ydoc_str(d, pid, "model.preset", &name, err))) return rc;
        if ((rc = model_preset(d, pid, "model.preset", name, m, err))) return rc;
    }
    if (hid) { /* a HuggingFace config.json stands for a preset, its path from the scenario's */
        const char *file;
        char path[1024];
        if ((rc = tps_ydoc_str(d, hid, "model.hf_config", &file, err))) return rc;
        plat_path_resolve(base, file, path, sizeof path);
        bool untied = false;
        struct tps_error he = {0};
        if (hf_config_load(path, m, &untied, &he) && he.code == TPS_EIO)
            return tps_ydoc_fail(d, hid, "model.hf_config", err, "%s", he.msg);
        if (he.code) /* the config's own error: its file, and its field or position */
            return tps_error_set(err, he.code, he.path, he.line, he.col, he.field, "%s", he.msg);
        s->hf_untied = untied;
        if (!tps_ydoc_get(d, id, "seq"))
            return tps_ydoc_fail(d, id, "model.seq", err,
                                 "missing: a HuggingFace config gives no training sequence length; "
                                 "give model.seq");
        pid = hid; /* the required keys are there */
    }
    static const char *const req[] = {"layers", "hidden", "heads", "seq"};
    for (int i = 0; !pid && i < 4; i++) {
        if (tps_ydoc_get(d, id, req[i])) continue;
        char f[64];
        snprintf(f, sizeof f, "model.%s", req[i]);
        return tps_ydoc_fail(d, id, f, err, "missing: give model.preset or model.%s", req[i]);
    }
    long preset_ffn = m->ffn;
    bool preset_glu = m->glu;
    if ((rc = tps_ydoc_read_map(d, id, "model", model_keys, m, err))) return rc;
    /* ffn: 4h, or with a gated MLP Megatron's default of 2/3 of it rounded down to a multiple of
     * 64 (the same parameters in three matrices as a plain MLP in two) */
    if (!tps_ydoc_get(d, id, "ffn"))
        m->ffn = pid && !tps_ydoc_get(d, id, "hidden") && m->glu == preset_glu ? preset_ffn
                 : m->glu ? (8 * m->hidden / 3) / 64 * 64
                          : 4 * m->hidden;
    if (m->ffn < 1)
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "hidden"), "model.hidden", err,
                             "too small for a gated MLP's default ffn: give model.ffn");
    if (m->hidden % m->heads)
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "heads") ? tps_ydoc_get(d, id, "heads") : id,
                             "model.heads", err, "must divide model.hidden (%ld), got %ld",
                             m->hidden, m->heads);
    int kv = tps_ydoc_get(d, id, "kv_heads");
    if (kv && m->heads % m->kv_heads)
        return tps_ydoc_fail(d, kv, "model.kv_heads", err, "must divide model.heads (%ld), got %ld",
                             m->heads, m->kv_heads);
    if (!kv && m->kv_heads && m->heads % m->kv_heads)
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "heads"), "model.heads", err,
                             "the preset's kv_heads (%ld) must divide it, got %ld: give "
                             "model.kv_heads",
                             m->kv_heads, m->heads);
    /* fp8: Transformer Engine's hybrid recipe, the linear layers' GEMMs in FP8 and the rest
     * (activations, weights, collectives) in bf16 */
    if (m->dtype == MDL_FP8) {
        m->dtype = MDL_BF16;
        m->fp8 = true;
    }
    int fa = tps_ydoc_get(d, id, "fp8_attention");
    if (fa && m->fp8_attention && !m->fp8)
        return tps_ydoc_fail(d, fa, "model.fp8_attention", err, "needs model.dtype: fp8");
    int moe = tps_ydoc_get(d, id, "moe");
    return moe ? load_moe(d, moe, m, err) : TPS_OK;
}

/* The preset `name` (node id, field) into *out, or an error listing the presets. */
static int device_preset(const struct tps_ydoc *d, int id, const char *field, const char *name,
                         struct mdl_device *out, struct tps_error *err)
{
    if (mdl_device_preset(name, out) == 0) return TPS_OK;
    char list[256];
    tps_names_join(mdl_device_names(), list, sizeof list);
    return tps_ydoc_fail(d, id, field, err, "unknown device '%s' (expected one of: %s)", name,
                         list);
}

static int load_device(const struct tps_ydoc *d, int id, const char *base, struct scn_scenario *s,
                       struct tps_error *err)
{
    struct mdl_device *dev = &s->device;
    int rc;
    if (!id) return tps_ydoc_fail(d, tps_ydoc_root(d), "device", err, "missing section");
    int pid = id;
    if (!tps_ydoc_is_scalar(d, id)) {
        if (!tps_ydoc_is_map(d, id))
            return tps_ydoc_fail(d, id, "device", err, "expected a mapping of keys to values");
        pid = tps_ydoc_get(d, id, "preset");
        if (!pid) return tps_ydoc_fail(d, id, "device.preset", err, "missing");
    }
    const char *name;
    const char *field = pid == id ? "device" : "device.preset";
    if ((rc = tps_ydoc_str(d, pid, field, &name, err))) return rc;
    if ((rc = device_preset(d, pid, field, name, dev, err))) return rc;
    if (pid == id) return TPS_OK;
    struct device_in in = {.dev = *dev};
    if ((rc = tps_ydoc_read_map(d, id, "device", device_keys, &in, err))) return rc;
    if (tps_ydoc_get(d, id, "flash_efficiency")) in.dev.flash = NULL; /* one rate, as given */
    if (in.peak_flops > 0) in.dev.peak_flops[mdl_model_gemm_dtype(&s->model)] = in.peak_flops;
    int v;
    if ((v = tps_ydoc_get(d, id, "memory_reserved")) &&
        !(in.dev.mem_reserved_bytes < in.dev.mem_bytes))
        return tps_ydoc_fail(d, v, "device.memory_reserved", err,
                             "must be less than the device's memory (%.1f GB), got %.1f GB",
                             in.dev.mem_bytes / 1e9, in.dev.mem_reserved_bytes / 1e9);
    *dev = in.dev;
    if ((v = tps_ydoc_get(d, id, "gemm_table"))) {
        const char *t;
        if ((rc = tps_ydoc_str(d, v, "device.gemm_table", &t, err))) return rc;
        plat_path_resolve(base, t, s->gemm_table, sizeof s->gemm_table);
        struct tps_error e2 = {0};
        if (mdl_compute_calibrate(dev, mdl_model_gemm_dtype(&s->model), s->gemm_table, NULL, &e2) !=
            0) {
            /* the table's own position is the better one when it has one */
            if (e2.path[0] && e2.line > 0) {
                if (!err->code) *err = e2;
                return e2.code;
            }
            return tps_ydoc_fail(d, v, "device.gemm_table", err, "%s", e2.msg);
        }
        /* the fit prices shapes beyond the table; the table itself prices those it covers */
        if (mdl_gemm_table_load(s->gemm_table, mdl_model_gemm_dtype(&s->model), &s->gemm, &e2) != 0)
            return tps_ydoc_fail(d, v, "device.gemm_table", err, "%s", e2.msg);
        dev->gemm_table = &s->gemm;
    }
    return TPS_OK;
}

/* Records the platform section as a command-line spec for trace metadata. */
static void spec_string(const struct tps_ydoc *d, int id, const char *base, char *out, size_t len)
{
    out[0] = '\0';
    if (tps_ydoc_is_scalar(d, id)) {
        const char *t = tps_ydoc_text(d, id);
        if (strchr(t, '.') || strchr(t, '/'))
            plat_path_resolve(base, t, out, len);
        else
            snprintf(out, len, "%s", t);
        return;
    }
    int f = tps_ydoc_get(d, id, "file") ? tps_ydoc_get(d, id, "file")
                                        : tps_ydoc_get(d, id, "simgrid_xml");
    if (f && tps_ydoc_text(d, f)) {
        plat_path_resolve(base, tps_ydoc_text(d, f), out, len);
        return;
    }
    int p = tps_ydoc_get(d, id, "preset");
    size_t n =
        (size_t)snprintf(out, len, "%s", p && tps_ydoc_text(d, p) ? tps_ydoc_text(d, p) : "");
    for (int i = 0; i < tps_ydoc_len(d, id) && n < len; i++) {
        const char *k = tps_ydoc_text(d, tps_ydoc_map_key(d, id, i));
        const char *v = tps_ydoc_text(d, tps_ydoc_map_val(d, id, i));
        if (k && v && strcmp(k, "preset")) n += (size_t)snprintf(out + n, len - n, " %s=%s", k, v);
    }
}

/* The first of three nodes that is present (0 for none). */
static int first_node(int a, int b, int c)
{
    return a ? a : b ? b : c;
}

static int load_strategy(const struct tps_ydoc *d, int id, struct scn_scenario *s,
                         struct tps_error *err)
{
    struct mdl_strategy *st = &s->strategy;
    int rc;
    st->kind = MDL_STRAT_1D;
    st->tp = 1;
    st->sequence_parallel = false;
    st->async_grad_allreduce = true;
    if (!id) return tps_ydoc_fail(d, tps_ydoc_root(d), "strategy", err, "missing section");
    st->chunks = 1;
    if ((rc = tps_ydoc_read_map(d, id, "strategy", strategy_keys, st, err))) return rc;
    int v;
    if ((v = tps_ydoc_get(d, id, "kind"))) {
        const char *k;
        if ((rc = tps_ydoc_str(d, v, "strategy.kind", &k, err))) return rc;
        if (mdl_strategy_kind_parse(k, &st->kind)) {
            char names[256] = "";
            size_t n = 0;
            for (int i = 0; mdl_kind_at(i) && n < sizeof names; i++)
                n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                                      !i                   ? ""
                                      : mdl_kind_at(i + 1) ? ", "
                                                           : " or ",
                                      mdl_kind_at(i)->name);
            return tps_ydoc_fail(d, v, "strategy.kind", err, "unknown strategy '%s' (expected %s)",
                                 k, names);
        }
    }
    /* each kind's own keys: refused on the others, read by the kind */
    const struct mdl_kind *K = mdl_kind_of(st);
    int nk = 0;
    while (mdl_kind_at(nk))
        nk++;
    for (int i = nk - 1; i >= 0; i--) {
        const struct mdl_kind *o = mdl_kind_at(i);
        for (int k = 0; o != K && o->keys && o->keys[k]; k++)
            if ((v = tps_ydoc_get(d, id, o->keys[k]))) {
                char f[64];
                snprintf(f, sizeof f, "strategy.%s", o->keys[k]);
                return tps_ydoc_fail(d, v, f, err, "applies to kind: %s only", o->name);
            }
    }
    int tp_node = 0;
    if (K->read && (rc = K->read(d, id, st, &tp_node, err))) return rc;
    int tpid = tps_ydoc_get(d, id, "tp");
    if (!tpid && !tp_node) return tps_ydoc_fail(d, id, "strategy.tp", err, "missing");
    long tp = tp_node ? st->tp : 0; /* the kind's keys give the degree (2d: the mesh) */
    if (tpid && (rc = tps_ydoc_count(d, tpid, "strategy.tp", &tp, err))) return rc;
    if (!tpid) tpid = tp_node;
    if (tp > s->topo.ngpus)
        return tps_ydoc_fail(d, tpid, "strategy.tp", err,
                             "TP degree %ld is larger than the platform's %d GPUs", tp,
                             s->topo.ngpus);
    st->tp = (int)tp;
    int cpid = tps_ydoc_get(d, id, "cp");
    if (cpid && st->cp < 1) return tps_ydoc_fail(d, cpid, "strategy.cp", err, "must be at least 1");
    if (cpid && tp * st->cp > s->topo.ngpus)
        return tps_ydoc_fail(d, cpid, "strategy.cp", err,
                             "tp x cp = %ld GPUs, but the platform has %d", tp * st->cp,
                             s->topo.ngpus);
    int ctid = tps_ydoc_get(d, id, "cp_comm_type");
    if (ctid && st->cp < 2)
        return tps_ydoc_fail(d, ctid, "strategy.cp_comm_type", err,
                             "applies with context parallelism (strategy.cp of 2 or more)");
    struct tps_error e2 = {0};
    if (mdl_strategy_check(st, &s->model, &e2) != 0) {
        /* the key the check names, where the scenario gives it */
        int at = e2.field[0] ? tps_ydoc_get(d, id, e2.field) : 0;
        if (!at) at = tpid;
        char f[sizeof e2.field + 16];
        snprintf(f, sizeof f, "strategy.%s", e2.field[0] ? e2.field : "tp");
        return tps_ydoc_fail(d, at ? at : tpid, f, err, "%s", e2.msg);
    }
    int epid = first_node(tps_ydoc_get(d, id, "ep"), tps_ydoc_get(d, id, "expert_tp"), tpid);
    long lg = mdl_strategy_lower_gpus(st, &s->model);
    if (s->model.moe.experts > 0 && lg > s->topo.ngpus)
        return tps_ydoc_fail(d, epid,
                             tps_ydoc_get(d, id, "ep") ? "strategy.ep" : "strategy.expert_tp", err,
                             "the layer groups that hold whole expert groups take lcm(tp x cp, "
                             "expert_tp x ep) = %ld GPUs, but the platform has %d",
                             lg, s->topo.ngpus);
    return TPS_OK;
}

/* Context parallelism runs its attention as fused kernels (Transformer Engine's): the framework's
 * attention is flash (mdl_strategy_framework) unless the scenario says otherwise, which it
 * cannot. */
static int cp_attention(const struct tps_ydoc *d, int root, struct scn_scenario *s,
                        struct tps_error *err)
{
    if (s->strategy.cp < 2) return TPS_OK;
    int fid = tps_ydoc_get(d, root, "framework"), aid = tps_ydoc_get(d, fid, "attention");
    if (aid && s->framework.attention != MDL_ATTENTION_FLASH)
        return tps_ydoc_fail(d, aid, "framework.attention", err,
                             "context parallelism (strategy.cp) runs the attention as fused "
                             "kernels: flash, not core");
    s->framework = mdl_strategy_framework(&s->strategy, &s->framework);
    return TPS_OK;
}

/* A job: strategy.pp and .dp, the pipeline: and training: sections (docs/jobs.md). */
static int load_job(const struct tps_ydoc *d, int root, struct scn_scenario *s,
                    struct tps_error *err)
{
    int sid = tps_ydoc_get(d, root, "strategy"), pid = tps_ydoc_get(d, root, "pipeline");
    int tid = tps_ydoc_get(d, root, "training");
    int ppid = tps_ydoc_get(d, sid, "pp"), dpid = tps_ydoc_get(d, sid, "dp");
    s->is_job = ppid || dpid || pid || tid || tps_ydoc_get(d, sid, "order");
    if (!s->is_job) return TPS_OK;
    struct training_in in = {.job = {.pp = 1, .dp = 1, .virtual_stages = 1}, .recompute = -1};
    in.job.untied_embeddings = s->hf_untied; /* a HuggingFace config's, unless training says */
    long pp = 1, dp = 1;
    int rc;
    const struct mdl_kind *K = mdl_kind_of(&s->strategy);
    struct tps_error je = {0};
    if (K->job_check && K->job_check(&s->strategy, &je)) {
        char f[sizeof je.field + 16];
        snprintf(f, sizeof f, "strategy.%s", je.field);
        return tps_ydoc_fail(d, tps_ydoc_get(d, sid, je.field), f, err, "%s", je.msg);
    }
    if (mdl_strategy_is_mixed(&s->strategy)) {
        bool attn = mdl_strategy_sub_tp(&s->strategy, 0) != s->strategy.tp;
        return tps_ydoc_fail(d, tps_ydoc_get(d, sid, attn ? "attention_tp" : "mlp_tp"),
                             attn ? "strategy.attention_tp" : "strategy.mlp_tp", err,
                             "per-sublayer TP degrees apply to a TP group alone, not yet to a "
                             "whole job (pp, dp, pipeline or training)");
    }
    if (ppid && (rc = tps_ydoc_count(d, ppid, "strategy.pp", &pp, err))) return rc;
    if (dpid && (rc = tps_ydoc_count(d, dpid, "strategy.dp", &dp, err))) return rc;
    if (pid && (rc = tps_ydoc_read_map(d, pid, "pipeline", pipeline_keys, &in.job, err))) return rc;
    if (tid && (rc = tps_ydoc_read_map(d, tid, "training", training_keys, &in, err))) return rc;
    long gpus = (long)mdl_strategy_gpus(&s->strategy) * pp * dp;
    if (pp > 100000 || dp > 100000 || gpus > s->topo.ngpus) {
        int at = dpid ? dpid : ppid ? ppid : sid;
        return tps_ydoc_fail(d, at, dpid ? "strategy.dp" : "strategy.pp", err,
                             "tp x %spp x dp = %ld GPUs, but the platform has %d",
                             s->strategy.cp > 1 ? "cp x " : "", gpus, s->topo.ngpus);
    }
    in.job.pp = (int)pp;
    in.job.dp = (int)dp;
    int orid = tps_ydoc_get(d, sid, "order"), order = 0;
    if (orid && (rc = tps_ydoc_enum(d, orid, "strategy.order", mdl_rank_order_names, &order, err)))
        return rc;
    in.job.order = (enum mdl_rank_order)order;
    /* distributed_optimizer is ZeRO-1; false with a ZeRO stage that shards the optimizer state
     * contradicts it */
    int doid = tid ? tps_ydoc_get(d, tid, "distributed_optimizer") : 0;
    if (in.dist_opt && in.job.zero < 1) in.job.zero = 1;
    if (doid && !in.dist_opt && in.job.zero >= 1)
        return tps_ydoc_fail(d, doid, "training.distributed_optimizer", err,
                             "false contradicts training.zero: %d (stages 1 to 3 shard the "
                             "optimizer state)",
                             in.job.zero);
    int vsid = pid ? tps_ydoc_get(d, pid, "virtual_stages") : 0;
    if (!vsid && in.job.schedule == MDL_SCHED_INTERLEAVED) in.job.virtual_stages = 2;
    /* one micro-batch per stage and replica unless told: the pipeline fills once */
    long b = s->model.micro_batch, per = b * dp;
    long gb = in.global_batch ? in.global_batch : per * pp;
    int gbid = tid ? tps_ydoc_get(d, tid, "global_batch") : 0;
    if (gb % per)
        return tps_ydoc_fail(d, gbid, "training.global_batch", err,
                             "must be a multiple of dp x model.micro_batch (%ld), got %ld", per,
                             gb);
    if (gb / per > 1000000)
        return tps_ydoc_fail(d, gbid ? gbid : sid, "training.global_batch", err,
                             "too many micro-batches");
    in.job.micro_batches = (int)(gb / per);
    s->global_batch = gb;
    s->train_tokens = in.tokens;
    if (in.recompute >= 0) {
        s->strategy.recompute = in.recompute == RECOMPUTE_FULL;
        s->strategy.selective = in.recompute == RECOMPUTE_SELECTIVE;
    }
    struct tps_error e2 = {0};
    if (mdl_job_check(&in.job, &s->strategy, &s->model, &e2) != 0) {
        if (!strcmp(e2.field, "virtual_stages"))
            return tps_ydoc_fail(d, first_node(vsid, pid, sid), "pipeline.virtual_stages", err,
                                 "%s", e2.msg);
        if (!strcmp(e2.field, "micro_batches"))
            return tps_ydoc_fail(d, first_node(gbid, tid, sid), "training.global_batch", err, "%s",
                                 e2.msg);
        if (!strncmp(e2.field, "first_stage", 11) || !strncmp(e2.field, "last_stage", 10) ||
            !strcmp(e2.field, "overlap_p2p_comm")) {
            char f[sizeof e2.field + 16];
            snprintf(f, sizeof f, "pipeline.%s", e2.field);
            int id = tps_ydoc_get(d, pid, e2.field);
            return tps_ydoc_fail(d, first_node(id, pid, sid), f, err, "%s", e2.msg);
        }
        if (!strcmp(e2.field, "ep")) {
            int eid = tps_ydoc_get(d, sid, "ep");
            return tps_ydoc_fail(d, first_node(eid, sid, 0), "strategy.ep", err, "%s", e2.msg);
        }
        /* a training key the check names */
        static const char *const tkeys[] = {"zero", "overlap_param_gather", "grad_reduce_in_bf16",
                                            "fp8_param_gather", "tp_only_amax_red"};
        for (size_t k = 0; k < sizeof tkeys / sizeof tkeys[0]; k++) {
            if (strcmp(e2.field, tkeys[k])) continue;
            char f[64];
            snprintf(f, sizeof f, "training.%s", tkeys[k]);
            int id = tps_ydoc_get(d, tid, tkeys[k]);
            return tps_ydoc_fail(d, first_node(id, tid, sid), f, err, "%s", e2.msg);
        }
        return tps_ydoc_fail(d, first_node(ppid, sid, 0), "strategy.pp", err, "%s", e2.msg);
    }
    s->job = in.job;
    /* the knobs it gives are pinned: the job planner keeps them */
    if (tid && (tps_ydoc_get(d, tid, "zero") || doid)) s->pinned |= SCN_PIN_ZERO;
    if (tid && tps_ydoc_get(d, tid, "overlap_grad_reduce"))
        s->pinned |= SCN_PIN_OVERLAP_GRAD_REDUCE;
    if (tid && tps_ydoc_get(d, tid, "overlap_param_gather"))
        s->pinned |= SCN_PIN_OVERLAP_PARAM_GATHER;
    if (pid && tps_ydoc_get(d, pid, "overlap_p2p_comm")) s->pinned |= SCN_PIN_OVERLAP_P2P_COMM;
    return TPS_OK;
}

/* A number in [lo, hi] at node id. */
static int read_between(const struct tps_ydoc *d, int id, const char *field, double lo, double hi,
                        double *out, struct tps_error *err)
{
    int rc = tps_ydoc_double(d, id, field, out, err);
    if (rc) return rc;
    if (!(*out >= lo && *out <= hi))
        return tps_ydoc_fail(d, id, field, err, "must be between %g and %g, got %g", lo, hi, *out);
    return TPS_OK;
}

/* devices: a preset per GPU or per machine of the platform (docs/heterogeneity.md). */
static int load_devices(const struct tps_ydoc *d, int id, struct scn_scenario *s,
                        struct tps_error *err)
{
    struct mdl_hetero *h = &s->hetero;
    const struct plat_topo *t = &s->topo;
    int n = tps_ydoc_is_seq(d, id) ? tps_ydoc_len(d, id) : -1, rc = TPS_OK;
    if (n != t->ngpus && n != t->machines)
        return tps_ydoc_fail(d, id, "devices", err,
                             "expected a list of device presets, one per GPU (%d) or one per "
                             "machine (%d) of the platform",
                             t->ngpus, t->machines);
    h->ngpus = t->ngpus;
    h->gpu_device = malloc((size_t)t->ngpus * sizeof *h->gpu_device);
    int *kinds = malloc((size_t)n * sizeof *kinds); /* per entry: index in h->devices, -1 */
    if (!h->gpu_device || !kinds) rc = tps_error_oom(err);
    for (int i = 0; i < n && rc == TPS_OK; i++) {
        int v = tps_ydoc_seq_at(d, id, i);
        const char *name;
        if ((rc = tps_ydoc_str(d, v, "devices", &name, err))) break;
        kinds[i] = -1;
        if (!strcmp(name, s->device.name)) continue;
        for (int j = 0; j < h->ndevices && kinds[i] < 0; j++)
            if (!strcmp(h->devices[j].name, name)) kinds[i] = j;
        if (kinds[i] >= 0) continue;
        if (h->ndevices == MDL_HETERO_MAX_DEVICES)
            rc = tps_ydoc_fail(d, v, "devices", err, "at most %d presets besides device",
                               MDL_HETERO_MAX_DEVICES);
        else if (!(rc = device_preset(d, v, "devices", name, &h->devices[h->ndevices], err)))
            kinds[i] = h->ndevices++;
    }
    for (int g = 0; g < t->ngpus && rc == TPS_OK; g++) {
        int at = n == t->ngpus ? g : t->nodes[t->gpu_node[g]].machine;
        h->gpu_device[g] = at >= 0 && at < n ? kinds[at] : -1;
    }
    free(kinds);
    return rc;
}

#define H(field) offsetof(struct mdl_hetero, field)
static const struct tps_ykey straggler_keys[] = {
    {"slowdown", TPS_YK_SKIP, 0, 0, {NULL}},
    {"noise", TPS_YK_ENUM, H(noise), 0, {.names = mdl_noise_names}},
    {"sigma", TPS_YK_SKIP, 0, 0, {NULL}},
    {"per", TPS_YK_ENUM, H(per), 0, {.names = mdl_noise_per_names}},
    {"stall_probability", TPS_YK_SKIP, 0, 0, {NULL}},
    {"stall_factor", TPS_YK_SKIP, 0, 0, {NULL}},
    {"seed", TPS_YK_SKIP, 0, 0, {NULL}},
    {NULL, 0, 0, 0, {NULL}}};
#undef H

/* stragglers: fixed slowdowns per rank and seeded noise (models/hetero.h). */
static int load_stragglers(const struct tps_ydoc *d, int id, struct scn_scenario *s,
                           struct tps_error *err)
{
    struct mdl_hetero *h = &s->hetero;
    int rc = tps_ydoc_read_map(d, id, "stragglers", straggler_keys, h, err), v;
    if (rc) return rc;
    if ((v = tps_ydoc_get(d, id, "slowdown"))) {
        int n = tps_ydoc_is_seq(d, v) ? tps_ydoc_len(d, v) : -1;
        if (n != s->strategy.tp)
            return tps_ydoc_fail(d, v, "stragglers.slowdown", err,
                                 "expected a list of %d speed factors, one per GPU of the TP "
                                 "group (1: full speed, 2: twice as slow)",
                                 s->strategy.tp);
        h->slowdown = malloc((size_t)n * sizeof *h->slowdown);
        if (!h->slowdown) return tps_error_oom(err);
        h->nslow = n;
        for (int i = 0; i < n; i++)
            if ((rc = read_between(d, tps_ydoc_seq_at(d, v, i), "stragglers.slowdown", 0.01, 1000,
                                   &h->slowdown[i], err)))
                return rc;
    }
    if ((v = tps_ydoc_get(d, id, "sigma")) &&
        (rc = read_between(d, v, "stragglers.sigma", 0, 3, &h->sigma, err)))
        return rc;
    if ((v = tps_ydoc_get(d, id, "stall_probability")) &&
        (rc = read_between(d, v, "stragglers.stall_probability", 0, 1, &h->stall_prob, err)))
        return rc;
    if ((v = tps_ydoc_get(d, id, "stall_factor")) &&
        (rc = read_between(d, v, "stragglers.stall_factor", 0.01, 1000, &h->stall_factor, err)))
        return rc;
    if ((v = tps_ydoc_get(d, id, "seed"))) {
        long seed;
        if ((rc = tps_ydoc_long(d, v, "stragglers.seed", &seed, err))) return rc;
        if (seed < 0 || seed > 4294967295L)
            return tps_ydoc_fail(d, v, "stragglers.seed", err,
                                 "must be between 0 and 4294967295, got %ld", seed);
        h->seed = (unsigned long)seed;
    }
    static const char *const noise_only[] = {"sigma", "per", "seed", NULL};
    for (int i = 0; h->noise == MDL_NOISE_NONE && noise_only[i]; i++)
        if ((v = tps_ydoc_get(d, id, noise_only[i]))) {
            char f[48];
            snprintf(f, sizeof f, "stragglers.%s", noise_only[i]);
            return tps_ydoc_fail(d, v, f, err,
                                 "applies with stragglers.noise (lognormal or stall)");
        }
    static const char *const stall_only[] = {"stall_probability", "stall_factor", NULL};
    for (int i = 0; h->noise != MDL_NOISE_STALL && stall_only[i]; i++)
        if ((v = tps_ydoc_get(d, id, stall_only[i]))) {
            char f[48];
            snprintf(f, sizeof f, "stragglers.%s", stall_only[i]);
            return tps_ydoc_fail(d, v, f, err, "applies with stragglers.noise: stall");
        }
    if (h->noise == MDL_NOISE_STALL && !tps_ydoc_get(d, id, "stall_probability"))
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "noise"), "stragglers.stall_probability", err,
                             "missing: how often a kernel (or an iteration) stalls");
    if (h->noise == MDL_NOISE_LOGNORMAL && !tps_ydoc_get(d, id, "sigma"))
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "noise"), "stragglers.sigma", err,
                             "missing: the spread of log(factor)");
    return TPS_OK;
}

/* devices, stragglers, strategy.balance and .max_drop: heterogeneity of a TP group. */
static int load_hetero(const struct tps_ydoc *d, int root, struct scn_scenario *s,
                       struct tps_error *err)
{
    struct mdl_hetero *h = &s->hetero;
    int sid = tps_ydoc_get(d, root, "strategy"), rc, v;
    int ids[4] = {tps_ydoc_get(d, root, "devices"), tps_ydoc_get(d, root, "stragglers"),
                  tps_ydoc_get(d, sid, "balance"), tps_ydoc_get(d, sid, "max_drop")};
    static const char *const fields[] = {"devices", "stragglers", "strategy.balance",
                                         "strategy.max_drop"};
    bool moe = s->model.moe.experts > 0;
    for (int i = 0; i < 4 && (s->is_job || s->strategy.cp > 1 || moe); i++)
        if (ids[i])
            return tps_ydoc_fail(d, ids[i], fields[i], err,
                                 s->is_job ? "applies to a TP group alone, not yet to a whole job "
                                             "(pp, dp, pipeline or training)"
                                 : moe     ? "applies to a TP group alone, not yet with a mixture "
                                             "of experts (model.moe)"
                                           : "applies to a TP group alone, not yet with context "
                                             "parallelism (strategy.cp)");
    if (ids[0] && (rc = load_devices(d, ids[0], s, err))) return rc;
    if (ids[1] && (rc = load_stragglers(d, ids[1], s, err))) return rc;
    if ((v = ids[2])) {
        if ((rc = tps_ydoc_enum(d, v, "strategy.balance", mdl_balance_names, &h->balance, err)))
            return rc;
        if (h->balance != MDL_BALANCE_NONE &&
            (!mdl_kind_of(&s->strategy)->balances || mdl_strategy_is_mixed(&s->strategy)))
            return tps_ydoc_fail(d, v, "strategy.balance", err,
                                 "balancing applies to kind: 1d with one TP degree for both "
                                 "sublayers (its columns and heads are what moves)");
    }
    if ((v = ids[3])) {
        if (h->balance != MDL_BALANCE_SEMI)
            return tps_ydoc_fail(d, v, "strategy.max_drop", err, "applies with balance: semi");
        if ((rc = read_between(d, v, "strategy.max_drop", 0, 1, &h->max_drop, err))) return rc;
    }
    return TPS_OK;
}

static int load_run(const struct tps_ydoc *d, int id, struct scn_scenario *s, struct tps_error *err)
{
    struct run_in in = {.layers = s->model.layers, .micro_batches = 1};
    int rc;
    if (id && (rc = tps_ydoc_read_map(d, id, "run", run_keys, &in, err))) return rc;
    s->fold = in.fold == 1 ? 1 : in.fold == 2 ? 0 : -1;
    if (s->is_job) {
        static const char *const group_only[] = {"layers", "micro_batches", NULL};
        for (int i = 0; id && group_only[i]; i++) {
            int v = tps_ydoc_get(d, id, group_only[i]);
            char f[32];
            snprintf(f, sizeof f, "run.%s", group_only[i]);
            if (v)
                return tps_ydoc_fail(d, v, f, err,
                                     "a job runs the whole model over training.global_batch; "
                                     "run.%s applies to a TP group alone (no pp, dp, pipeline "
                                     "or training)",
                                     group_only[i]);
        }
        s->layers = (int)s->model.layers;
        s->micro_batches = s->job.micro_batches;
        double nops = mdl_job_ops(&s->job, &s->strategy, &s->model, &s->device, &s->framework,
                                  s->fold == 1 ? &(struct mdl_job_fold){0} : NULL);
        char n[48];
        if (s->fold == 0 && nops > mdl_max_ops())
            return tps_ydoc_fail(d, tps_ydoc_get(d, id, "fold"), "run.fold", err,
                                 "the job op by op would make %s ops, above the limit of %.3g "
                                 "(fold the layers: run.fold: auto)",
                                 mdl_ops_text(nops, n, sizeof n), mdl_max_ops());
        return TPS_OK;
    }
    long layers = in.layers, mbs = in.micro_batches;
    if (layers > s->model.layers)
        return tps_ydoc_fail(d, tps_ydoc_get(d, id, "layers"), "run.layers", err,
                             "the model has only %ld layers, got %ld", s->model.layers, layers);
    /* refuse, before anything is allocated, a program larger than the documented bound */
    double nops = mdl_strategy_ops(&s->strategy, &s->model, &s->device, &s->framework, layers, mbs);
    if (nops > mdl_max_ops()) {
        int lid = id ? tps_ydoc_get(d, id, "layers") : 0;
        int mid = id ? tps_ydoc_get(d, id, "micro_batches") : 0;
        int at = lid ? lid : mid ? mid : id ? id : tps_ydoc_root(d);
        return tps_ydoc_fail(d, at, lid ? "run.layers" : "run", err,
                             "%ld layers x %ld micro-batches would make %.3g ops, above the limit "
                             "of %.3g (set TPSIM_MAX_OPS to raise it; run.layers simulates fewer)",
                             layers, mbs, nops, mdl_max_ops());
    }
    s->layers = (int)layers;
    s->micro_batches = (int)mbs;
    return TPS_OK;
}

int scn_load(const char *path, struct scn_scenario *s, struct tps_error *err)
{
    return scn_load_in(path, NULL, s, err);
}

/* Warns of a device on a platform preset built for another GPU (an A100 on dgx-h100). */
static void device_check(struct scn_scenario *s)
{
    char preset[64]; /* the spec's first word: a preset name, or a file */
    snprintf(preset, sizeof preset, "%.*s", (int)strcspn(s->platform_spec, " "), s->platform_spec);
    const char *gpu = plat_preset_gpu(preset);
    if (gpu && strncmp(s->device.name, gpu, strlen(gpu)))
        snprintf(s->warning, sizeof s->warning,
                 "device %s on %s, a platform of %s machines: its NVLink and network are those "
                 "machines'",
                 s->device.name, preset, gpu);
}

/* Fills *s (zeroed, path and name set) from the scenario at node root of d, whose platform and
 * collectives sections are those of node at. */
static int load_doc(const struct tps_ydoc *d, int root, int at, int dev_at, const char *base,
                    struct scn_scenario *s, struct tps_error *err)
{
    int n = tps_ydoc_get(d, root, "name");
    const char *name = NULL;
    if (n && tps_ydoc_name(d, n, "name", &name, err)) return TPS_EINVAL;
    if (name) snprintf(s->name, sizeof s->name, "%s", name);
    int rc = load_model(d, tps_ydoc_get(d, root, "model"), base, s, err);
    if (rc == TPS_OK) rc = load_device(d, tps_ydoc_get(d, dev_at, "device"), base, s, err);
    if (rc == TPS_OK && s->model.fp8 && !(s->device.peak_flops[MDL_FP8] > 0)) {
        int mid = tps_ydoc_get(d, root, "model"), dt = mid ? tps_ydoc_get(d, mid, "dtype") : 0;
        rc = tps_ydoc_fail(d, dt ? dt : mid, "model.dtype", err,
                           "fp8 needs FP8 tensor cores, which %s has not (Hopper and later have "
                           "them; or give device.peak_tflops)",
                           s->device.name);
    }
    if (rc == TPS_OK) {
        int pid = tps_ydoc_get(d, at, "platform");
        if (!pid)
            rc = tps_ydoc_fail(d, at, "platform", err, "missing section");
        else
            rc = plat_spec_parse(d, pid, "platform", base, &s->topo, err);
        if (rc == TPS_OK) spec_string(d, pid, base, s->platform_spec, sizeof s->platform_spec);
    }
    if (rc == TPS_OK && tps_ydoc_get(d, at, "collectives")) /* overrides the platform's */
        rc = plat_nccl_parse(d, tps_ydoc_get(d, at, "collectives"), "collectives", &s->topo.nccl,
                             err);
    mdl_framework_default(&s->framework);
    int fid = rc == TPS_OK ? tps_ydoc_get(d, root, "framework") : 0;
    if (fid) rc = tps_ydoc_read_map(d, fid, "framework", framework_keys, &s->framework, err);
    if (rc == TPS_OK) rc = load_strategy(d, tps_ydoc_get(d, root, "strategy"), s, err);
    if (rc == TPS_OK) rc = cp_attention(d, root, s, err);
    if (rc == TPS_OK) rc = load_job(d, root, s, err);
    if (rc == TPS_OK) rc = load_hetero(d, root, s, err);
    if (rc == TPS_OK) rc = load_run(d, tps_ydoc_get(d, root, "run"), s, err);
    if (rc == TPS_OK) device_check(s);
    if (rc == TPS_OK && tps_ydoc_get(d, root, "cost"))
        rc = tps_ydoc_read_map(d, tps_ydoc_get(d, root, "cost"), "cost", cost_keys, s, err);
    return rc;
}

static void scenario_start(const char *path, struct scn_scenario *s)
{
    memset(s, 0, sizeof *s);
    mdl_hetero_init(&s->hetero);
    snprintf(s->path, sizeof s->path, "%s", path);
    const char *slash = strrchr(path, '/');
    snprintf(s->name, sizeof s->name, "%s", slash ? slash + 1 : path);
}

/* What a setting of `compare:` may replace. */
static const char *const compare_keys[] = {"name",        "device", "platform",
                                           "collectives", "cost",   NULL};

int scn_load_in(const char *path, const char *like, struct scn_scenario *s, struct tps_error *err)
{
    scenario_start(path, s);
    char base[512];
    plat_path_dir(like ? like : path, base, sizeof base);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    int root = rc ? 0 : tps_ydoc_root(&d);
    if (rc == TPS_OK && tps_ydoc_is_map(&d, root) && tps_ydoc_get(&d, root, "jobs"))
        rc = tps_ydoc_fail(&d, tps_ydoc_get(&d, root, "jobs"), "jobs", err,
                           "a scenario of several jobs sharing a platform runs with 'tpsim run' "
                           "alone (docs/heterogeneity.md)");
    if (rc == TPS_OK) rc = tps_ydoc_check_map(&d, root, "", top_keys, err);
    if (rc == TPS_OK) rc = load_doc(&d, root, root, root, base, s, err);
    if (rc == TPS_OK && tps_ydoc_get(&d, root, "compare")) {
        int c = tps_ydoc_get(&d, root, "compare");
        if (!tps_ydoc_is_seq(&d, c) || tps_ydoc_len(&d, c) < 1)
            rc = tps_ydoc_fail(&d, c, "compare", err,
                               "expected a list of settings such as {device: B200, platform: "
                               "{preset: dgx-b200, nodes: 64}}");
        else
            s->ncompare = tps_ydoc_len(&d, c);
        for (int k = 0; rc == TPS_OK && k < s->ncompare; k++) {
            char f[64];
            snprintf(f, sizeof f, "compare[%d]", k);
            rc = tps_ydoc_check_map(&d, tps_ydoc_seq_at(&d, c, k), f, compare_keys, err);
        }
    }
    tps_ydoc_release(&d);
    return rc;
}

int scn_load_node(const struct tps_ydoc *d, int root, int at, const char *path, const char *base,
                  struct scn_scenario *s, struct tps_error *err)
{
    scenario_start(path, s);
    return load_doc(d, root, at, root, base, s, err);
}

int scn_load_compare(const char *path, int k, struct scn_scenario *s, struct tps_error *err)
{
    scenario_start(path, s);
    char base[512], f[64];
    plat_path_dir(path, base, sizeof base);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    int root = rc ? 0 : tps_ydoc_root(&d), c = rc ? 0 : tps_ydoc_get(&d, root, "compare");
    int e = c && tps_ydoc_is_seq(&d, c) && k < tps_ydoc_len(&d, c) ? tps_ydoc_seq_at(&d, c, k) : 0;
    snprintf(f, sizeof f, "compare[%d]", k);
    if (rc == TPS_OK && !e)
        rc = tps_error_set(err, TPS_EINVAL, path, 0, 0, "compare", "no setting %d", k);
    if (rc == TPS_OK) rc = tps_ydoc_check_map(&d, e, f, compare_keys, err);
    /* the setting's device, platform and collectives replace the scenario's */
    if (rc == TPS_OK)
        rc = load_doc(&d, root, tps_ydoc_get(&d, e, "platform") ? e : root,
                      tps_ydoc_get(&d, e, "device") ? e : root, base, s, err);
    if (rc == TPS_OK &&
        tps_ydoc_get(&d, e, "cost")) /* the setting's price replaces the scenario's */
        rc = tps_ydoc_read_map(&d, tps_ydoc_get(&d, e, "cost"), "cost", cost_keys, s, err);
    int n = rc == TPS_OK ? tps_ydoc_get(&d, e, "name") : 0;
    const char *name = NULL;
    if (n && tps_ydoc_name(&d, n, "name", &name, err)) rc = TPS_EINVAL;
    if (name)
        snprintf(s->name, sizeof s->name, "%s", name);
    else if (rc == TPS_OK)
        snprintf(s->name, sizeof s->name, "%.20s on %.38s", s->device.name, s->platform_spec);
    tps_ydoc_release(&d);
    return rc;
}

int scn_device_set(struct mdl_device *dev, enum mdl_dtype dtype, const char *kv,
                   struct tps_error *err)
{
    const char *eq = strchr(kv, '=');
    char text[512];
    if (!eq || eq == kv || strcspn(kv, ":{}[],#\n") < strlen(kv))
        return tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "device",
                             "expected KEY=VALUE, got '%s'", kv);
    snprintf(text, sizeof text, "{%.*s: %s}", (int)(eq - kv), kv, eq + 1);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_string(&d, text, "command line", err);
    struct device_in in = {.dev = *dev};
    if (!rc) rc = tps_ydoc_read_map(&d, tps_ydoc_root(&d), "device", device_keys, &in, err);
    if (!rc && tps_ydoc_get(&d, tps_ydoc_root(&d), "preset"))
        rc = tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "device.preset",
                           "give the preset with --device");
    if (!rc && tps_ydoc_get(&d, tps_ydoc_root(&d), "gemm_table"))
        rc = tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "device.gemm_table",
                           "not settable here");
    if (!rc && tps_ydoc_get(&d, tps_ydoc_root(&d), "flash_efficiency"))
        in.dev.flash = NULL; /* one rate, as given */
    tps_ydoc_release(&d);
    if (rc) return rc;
    if (in.peak_flops > 0) in.dev.peak_flops[dtype] = in.peak_flops;
    if (!(mdl_device_reserved(&in.dev) < in.dev.mem_bytes))
        return tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "device.memory_reserved",
                             "must be less than the device's memory (%.1f GB), got %.1f GB",
                             in.dev.mem_bytes / 1e9, mdl_device_reserved(&in.dev) / 1e9);
    *dev = in.dev;
    return TPS_OK;
}

void scn_move(struct scn_scenario *dst, struct scn_scenario *src)
{
    *dst = *src;
    if (src->device.gemm_table == &src->gemm) dst->device.gemm_table = &dst->gemm;
    memset(src, 0, sizeof *src);
}

void scn_release(struct scn_scenario *s)
{
    plat_topo_release(&s->topo);
    mdl_gemm_table_release(&s->gemm);
    mdl_hetero_release(&s->hetero);
}

void scn_describe_model(const struct scn_scenario *s, char *buf, size_t len)
{
    const struct mdl_model *m = &s->model;
    char kv[32] = "";
    if (mdl_model_kv_heads(m) != m->heads)
        snprintf(kv, sizeof kv, ", kv_heads %ld", mdl_model_kv_heads(m));
    snprintf(buf, len,
             "%s (layers %ld, hidden %ld, heads %ld%s, ffn %ld%s, seq %ld, micro-batch %ld, %s%s)",
             m->name, m->layers, m->hidden, m->heads, kv, m->ffn, m->glu ? " SwiGLU" : "", m->seq,
             m->micro_batch, m->fp8 ? "fp8" : mdl_dtype_name(m->dtype),
             m->attn_dropout ? ", attention dropout" : "");
    const struct mdl_moe *x = &m->moe;
    size_t n = strlen(buf);
    if (x->experts > 0 && n + 1 < len) {
        /* inside the parenthesis: drop it, add the experts, close it again */
        buf[n - 1] = 0;
        snprintf(buf + n - 1, len - n + 1, "; %d experts of ffn %ld, top %d%s%s%s)", x->experts,
                 x->expert_ffn, x->top_k, x->shared_experts ? " + shared" : "",
                 x->first_dense_layers ? ", leading dense layers" : "",
                 x->skewed ? ", skewed routing" : "");
    }
}

void scn_describe_strategy(const struct scn_scenario *s, char *buf, size_t len)
{
    mdl_strategy_describe(&s->strategy, buf, len);
    if (!s->is_job) return;
    size_t n = strlen(buf);
    const struct mdl_job *j = &s->job;
    char sched[48];
    if (j->schedule == MDL_SCHED_INTERLEAVED)
        snprintf(sched, sizeof sched, "interleaved x%d%s", j->virtual_stages,
                 j->overlap_p2p_comm ? " +p2p overlap" : "");
    else
        snprintf(sched, sizeof sched, "%s", mdl_schedule_names[j->schedule]);
    static const char *const zero_desc[] = {"", " +distributed optimizer", " +ZeRO-2", " +ZeRO-3"};
    const char *zero = zero_desc[j->zero >= 0 && j->zero <= 3 ? j->zero : 0];
    if (n < len)
        snprintf(buf + n, len - n,
                 ", pp=%d (%s), dp=%d%s, %d micro-batches per replica (global batch %ld)%s%s",
                 j->pp, sched, j->dp, zero, j->micro_batches, s->global_batch,
                 j->order ? ", rank order " : "", j->order ? mdl_rank_order_names[j->order] : "");
}
