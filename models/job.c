/* job.c - whole training jobs: schedules, lowering over every GPU, memory (see job.h). Each
 * stage's ops are lowered once, for its first GPU, naming communicators by their markers
 * (models/comm.h); every GPU of the stage then gets a copy with its own TP, pipeline,
 * data-parallel and embedding groups, made once from the mesh by the registry. */
#include "job.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "comm.h"
#include "compute.h"

const char *const mdl_schedule_names[] = {"1f1b", "gpipe", "interleaved", NULL};

/* The communicators of a whole job (models/comm.h), one row each: the kind's own sub-axes of
 * the TP group (their groups set per TP group from the kind's, strategy.h's MDL_GROUP_*
 * markers), then those made from the mesh. */
enum {
    C_D1,           /* the TP group's d1 axis (the whole group in 1D) */
    C_D2,           /* its d2 axis */
    C_D3,           /* a block mesh's third axis */
    C_SHIFT_TO,     /* PrimePar's ring: to the next member */
    C_SHIFT_FROM,   /* and from the previous */
    C_RECV_FWD,     /* activations from the previous stage */
    C_SEND_FWD,     /* to the next */
    C_RECV_BWD,     /* gradients from the next stage */
    C_SEND_BWD,     /* to the previous */
    C_DP,           /* the data-parallel group (the same TP rank and stage in every replica) */
    C_GATHER,       /* ZeRO-3: its parameter gathers, a communicator of their own */
    C_EMB,          /* the first and the last stage: the tied embedding's gradient */
    C_MP,           /* the gradient norm: the replica's GPUs, or every GPU with the distributed
                       optimizer (each holds a shard of the gradients) */
    C_CP_TO,        /* context parallelism's ring, forward: to the next CP rank */
    C_CP_FROM,      /* from the previous */
    C_CP_BACK_TO,   /* backward: to the previous CP rank */
    C_CP_BACK_FROM, /* from the next */
    C_CP,           /* the CP group: all-gather, all-to-all */
    C_EP,           /* expert parallelism: the EP group (the dispatch and combine all-to-alls) */
    C_ETP,          /* the experts' tensor-parallel group */
    C_EDP,          /* the expert-data-parallel group: GPUs holding the same experts, over which
                       their gradients are reduced (Megatron-LM's expert data parallelism) */
    C_AMAX,         /* FP8: Megatron-LM's amax-reduction group, a stage's tp x cp x dp GPUs (its
                       TP group with tp_only_amax_red); none in 16-bit training */
    NCOMMS
};

/* A job's registry and the marker of each row. */
struct job_comms {
    struct mdl_comms reg;
    int mk[NCOMMS];
};

static bool dist_opt(const struct mdl_job *job, const struct mdl_strategy *st);
static bool zero_at(const struct mdl_job *job, const struct mdl_strategy *st, int stage);

/* The job's communicators: who talks, the dimension served, the stream. Gradients are reduced
 * over the GPUs holding the same weights: the data-parallel replicas and, within each, the CP
 * ranks (Megatron-LM's data-parallel group with context parallelism). */
static int job_comms_init(const struct mdl_job *job, const struct mdl_strategy *st,
                          const struct mdl_model *m, struct job_comms *J)
{
    enum { T = MDL_DIM_BIT(MDL_DIM_TP), D = MDL_DIM_BIT(MDL_DIM_DP), P = MDL_DIM_BIT(MDL_DIM_PP) };
    enum { C = MDL_DIM_BIT(MDL_DIM_CP) };
    const uint8_t tp = MDL_OP_DIM(MDL_DIM_TP), dp = MDL_OP_DIM(MDL_DIM_DP);
    const uint8_t pp = MDL_OP_DIM(MDL_DIM_PP), cp = MDL_OP_DIM(MDL_DIM_CP);
    bool wrap = job->virtual_stages > 1;
    unsigned all = (1u << MDL_NDIMS) - 1;
    const struct mdl_comm_spec spec[NCOMMS] = {
        [C_D1] = {"tp d1", MDL_COMM_GIVEN, .stream = MDL_STREAM_COMM, .dim = tp},
        [C_D2] = {"tp d2", MDL_COMM_GIVEN, .stream = MDL_STREAM_COMM, .dim = tp},
        [C_D3] = {"tp d3", MDL_COMM_GIVEN, .stream = MDL_STREAM_COMM3, .dim = tp},
        [C_SHIFT_TO] = {"tp ring to", MDL_COMM_GIVEN, .stream = MDL_STREAM_SHIFT_SEND, .dim = tp},
        [C_SHIFT_FROM] = {"tp ring from", MDL_COMM_GIVEN, .stream = MDL_STREAM_SHIFT_RECV,
                          .dim = tp},
        [C_RECV_FWD] = {"pp recv fwd", MDL_COMM_PAIR, P, -1, 0, wrap, .share = 1,
                        .stream = MDL_STREAM_RECV_FWD, .dim = pp},
        [C_SEND_FWD] = {"pp send fwd", MDL_COMM_PAIR, P, 0, 1, wrap, .share = 1,
                        .stream = MDL_STREAM_SEND_FWD, .dim = pp},
        [C_RECV_BWD] = {"pp recv bwd", MDL_COMM_PAIR, P, 1, 0, wrap, .share = 2,
                        .stream = MDL_STREAM_RECV_BWD, .dim = pp},
        [C_SEND_BWD] = {"pp send bwd", MDL_COMM_PAIR, P, 0, -1, wrap, .share = 2,
                        .stream = MDL_STREAM_SEND_BWD, .dim = pp},
        [C_DP] = {"dp", MDL_COMM_SPAN, D | C, .stream = MDL_STREAM_DP, .dim = dp},
        [C_GATHER] = {"dp gather", MDL_COMM_SPAN, zero_at(job, st, 3) ? D | C : 0u, .own = true,
                      .stream = MDL_STREAM_GATHER, .dim = dp},
        [C_EMB] = {"tied embedding", MDL_COMM_ENDS, P, .stream = MDL_STREAM_DP, .dim = pp},
        [C_MP] = {"gradient norm", MDL_COMM_SPAN, dist_opt(job, st) ? all : T | P, .own = true,
                  .stream = MDL_STREAM_NORM},
        [C_CP_TO] = {"cp ring to", MDL_COMM_PAIR, C, 0, 1, true, .share = 3,
                     .stream = MDL_STREAM_CP_SEND, .dim = cp},
        [C_CP_FROM] = {"cp ring from", MDL_COMM_PAIR, C, -1, 0, true, .share = 3,
                       .stream = MDL_STREAM_CP_RECV, .dim = cp},
        [C_CP_BACK_TO] = {"cp ring back to", MDL_COMM_PAIR, C, 0, -1, true, .share = 4,
                          .stream = MDL_STREAM_CP_SEND, .dim = cp},
        [C_CP_BACK_FROM] = {"cp ring back from", MDL_COMM_PAIR, C, 1, 0, true, .share = 4,
                            .stream = MDL_STREAM_CP_RECV, .dim = cp},
        [C_CP] = {"cp", MDL_COMM_SPAN, C, .own = true, .stream = MDL_STREAM_CP_SEND, .dim = cp},
        [C_EP] = {"ep", MDL_COMM_GIVEN, .stream = MDL_STREAM_COMM, .dim = MDL_OP_DIM(MDL_DIM_EP)},
        [C_ETP] = {"expert tp", MDL_COMM_GIVEN, .stream = MDL_STREAM_COMM, .dim = tp},
        [C_EDP] = {"expert dp", MDL_COMM_GIVEN, .stream = MDL_STREAM_DP, .dim = dp},
        /* reported with the data-parallel collectives (the TP group's with tp_only_amax_red):
         * the group's width is what it costs */
        [C_AMAX] = {"fp8 amax", MDL_COMM_SPAN,
                    !m->fp8                 ? 0u
                    : job->tp_only_amax_red ? (unsigned)T
                                            : T | D | C,
                    .own = true, .stream = MDL_STREAM_NORM, .dim = job->tp_only_amax_red ? tp : dp},
    };
    static const int given[NCOMMS] = {[C_D1] = MDL_GROUP_D1,
                                      [C_D2] = MDL_GROUP_D2,
                                      [C_D3] = MDL_GROUP_D3,
                                      [C_SHIFT_TO] = MDL_GROUP_SHIFT_TO,
                                      [C_SHIFT_FROM] = MDL_GROUP_SHIFT_FROM,
                                      [C_CP_TO] = MDL_GROUP_CP_TO,
                                      [C_CP_FROM] = MDL_GROUP_CP_FROM,
                                      [C_CP_BACK_TO] = MDL_GROUP_CP_BACK_TO,
                                      [C_CP_BACK_FROM] = MDL_GROUP_CP_BACK_FROM,
                                      [C_CP] = MDL_GROUP_CP,
                                      [C_EP] = MDL_GROUP_EP,
                                      [C_ETP] = MDL_GROUP_ETP};
    mdl_comms_init(&J->reg);
    for (int k = 0; k < NCOMMS; k++)
        if (!(J->mk[k] = mdl_comms_add(&J->reg, &spec[k], given[k]))) return -1;
    return 0;
}

/* Before and after the optimizer (Megatron-LM's mixed-precision optimizer, per parameter): the
 * fp32 gradient buffer is zeroed at the start of the iteration (4 B written); fp16 training
 * unscales the gradients by the loss scale and checks them for inf/NaN (4 B read, 4 written);
 * the gradient norm for clipping reads them once more (4 B) and sums the squares over the
 * replica's GPUs with one all-reduce. */
#define ZERO_BYTES    4.0
#define UNSCALE_BYTES 8.0
#define NORM_BYTES    4.0

/* Bytes per parameter: the optimizer step reads the fp32 master weight, both Adam moments and
 * the fp32 gradient (16) and writes the three fp32 tensors and the training-dtype weights
 * (12 + 2); in fp32 training, no master copy: 12 read, 12 written. */
#define OPT_BYTES_MIXED 30.0
#define OPT_BYTES_FP32  24.0
/* FP8: the updated 16-bit weight read (2 B), its FP8 copy and transposed copy written (1 + 1);
 * with fp8_param_gather the optimizer writes the FP8 weight itself (its 1 B instead of the 16-bit
 * copy's 2 in the step) and the gathered weight's transpose is made: read 1 B, write 1 B */
#define FP8_CAST_BYTES          4.0
#define FP8_GATHERED_CAST_BYTES 2.0

int mdl_job_grad_replicas(const struct mdl_job *job, const struct mdl_strategy *st)
{
    return job->dp * mdl_strategy_cp(st);
}

int mdl_job_expert_replicas(const struct mdl_job *job, const struct mdl_strategy *st)
{
    int e = mdl_strategy_ep(st) * mdl_strategy_etp(st);
    return mdl_strategy_gpus(st) * job->dp / e;
}

/* Parameters one GPU holds of layers [first, first + n), and of them its experts' (*expert). */
static double range_params(const struct mdl_strategy *st, const struct mdl_model *m, int first,
                           int n, double *expert)
{
    *expert = 0;
    if (m->moe.experts <= 0) return n * mdl_strategy_layer_params(st, m);
    double e, moe = mdl_moe_layer_params(st, m, &e);
    double dense = (mdl_model_sublayer_params(m, 0) + mdl_model_sublayer_params(m, 1)) / st->tp;
    long nm = mdl_model_moe_layers(m, first + n) - mdl_model_moe_layers(m, first);
    *expert = (double)nm * e;
    return (double)nm * moe + (double)(n - nm) * dense;
}

/* ZeRO shards anything only over two replicas or more: stage `z` or above in effect. */
static bool zero_at(const struct mdl_job *job, const struct mdl_strategy *st, int z)
{
    return job->zero >= z && mdl_job_grad_replicas(job, st) > 1;
}

/* The GPUs the distributed optimizer shards the experts' state over: the expert-data-parallel
 * replicas. */
static double expert_shards(const struct mdl_job *job, const struct mdl_strategy *st)
{
    int r = mdl_job_expert_replicas(job, st);
    return r > 1 ? r : 1;
}

/* The distributed optimizer (ZeRO-1 and above). */
static bool dist_opt(const struct mdl_job *job, const struct mdl_strategy *st)
{
    return zero_at(job, st, 1);
}

long mdl_job_gpus(const struct mdl_job *job, const struct mdl_strategy *st)
{
    return (long)mdl_strategy_gpus(st) * job->pp * job->dp;
}

const char *const mdl_rank_order_names[] = {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp",
                                            "pp-tp-dp", "pp-dp-tp", NULL};

void mdl_job_mesh(const struct mdl_job *job, const struct mdl_strategy *st, struct mdl_mesh *out)
{
    /* each enum mdl_rank_order as a full order of the mesh's dimensions, fastest first (those
     * of size 1 last: where they sit changes no rank) */
    enum { T = MDL_DIM_TP, D = MDL_DIM_DP, P = MDL_DIM_PP, C = MDL_DIM_CP, E = MDL_DIM_EP };
    /* CP right after TP, as Megatron-LM's tp-cp-ep-dp-pp lays it */
    static const int8_t orders[][MDL_NDIMS] = {{T, C, D, P, E}, {T, C, P, D, E}, {D, T, C, P, E},
                                               {D, P, T, C, E}, {P, T, C, D, E}, {P, D, T, C, E}};
    int o = job->order >= 0 && job->order <= MDL_ORDER_PP_DP_TP ? (int)job->order : 0;
    int size[MDL_NDIMS] = {[MDL_DIM_TP] = st->tp,
                           [MDL_DIM_CP] = mdl_strategy_cp(st),
                           [MDL_DIM_DP] = job->dp,
                           [MDL_DIM_PP] = job->pp};
    mdl_mesh_init(out, size, orders[o]);
}

int mdl_job_mesh_rank(const struct mdl_mesh *mesh, const struct mdl_strategy *st, int s, int d,
                      int t)
{
    int coord[MDL_NDIMS] = {
        [MDL_DIM_TP] = t % st->tp, [MDL_DIM_CP] = t / st->tp, [MDL_DIM_DP] = d, [MDL_DIM_PP] = s};
    return mdl_mesh_rank(mesh, coord);
}

int mdl_job_rank(const struct mdl_job *job, const struct mdl_strategy *st, int s, int d, int t)
{
    struct mdl_mesh mesh;
    mdl_job_mesh(job, st, &mesh);
    return mdl_job_mesh_rank(&mesh, st, s, d, t);
}

void mdl_job_coords(const struct mdl_job *job, const struct mdl_strategy *st, int rank, int *s,
                    int *d, int *t)
{
    struct mdl_mesh mesh;
    mdl_job_mesh(job, st, &mesh);
    int coord[MDL_NDIMS];
    mdl_mesh_coords(&mesh, rank, coord);
    *t = coord[MDL_DIM_TP] + st->tp * coord[MDL_DIM_CP];
    *d = coord[MDL_DIM_DP];
    *s = coord[MDL_DIM_PP];
}

double mdl_job_bucket_params(const struct mdl_job *job, const struct mdl_strategy *st)
{
    double b = 1e6 * mdl_job_grad_replicas(job, st);
    return b > 4e7 ? b : 4e7;
}

int mdl_job_bucket_layers(const struct mdl_job *job, const struct mdl_strategy *st,
                          const struct mdl_model *m)
{
    double lp = mdl_strategy_layer_params(st, m);
    int k = lp > 0 ? (int)(mdl_job_bucket_params(job, st) / lp) : 1;
    int n = mdl_job_chunk_layers(job, m);
    return k < 1 ? 1 : k > n ? n : k;
}

/* Layers of virtual stage vs and of a middle one (*mid), by the split job gives. */
static int vs_layers(const struct mdl_job *job, const struct mdl_model *m, int vs, int *mid)
{
    int p = job->pp, n = p * job->virtual_stages, last = n - 1;
    long L = m->layers;
    int f = job->first_stage_layers, l = job->last_stage_layers;
    if (f > 0 || l > 0) {
        int fixed = (f > 0) + (l > 0);
        *mid = n > fixed ? (int)((L - f - l) / (n - fixed)) : 0;
        return vs == 0 && f > 0 ? f : vs == last && l > 0 ? l : *mid;
    }
    *mid = (int)((L + job->account_embedding + job->account_loss) / n);
    return *mid - (vs == 0 && job->account_embedding) - (vs == last && job->account_loss);
}

int mdl_job_chunk_range(const struct mdl_job *job, const struct mdl_model *m, int s, int c,
                        int *first)
{
    int vs = c * job->pp + s, mid, first0 = vs_layers(job, m, 0, &mid);
    int n = vs_layers(job, m, vs, &mid);
    if (first) *first = vs == 0 ? 0 : first0 + (vs - 1) * mid;
    return n;
}

int mdl_job_chunk_layers(const struct mdl_job *job, const struct mdl_model *m)
{
    /* the ends are the only virtual stages that differ from the middle ones */
    int mid, first = vs_layers(job, m, 0, &mid);
    int last = vs_layers(job, m, job->pp * job->virtual_stages - 1, &mid), most = mid;
    if (first > most) most = first;
    return last > most ? last : most;
}

/* Layers stage s holds over all its chunks. */
static int stage_layers(const struct mdl_job *job, const struct mdl_model *m, int s)
{
    int n = 0;
    for (int c = 0; c < job->virtual_stages; c++)
        n += mdl_job_chunk_range(job, m, s, c, NULL);
    return n;
}

/* The uneven split: first and last stage layers for a plain schedule, within the model, the
 * rest even over the middle stages; the embedding and the loss counted as layers, one more
 * layer each than those the stages would hold otherwise. */
static int check_split(const struct mdl_job *job, const struct mdl_model *m, struct tps_error *err)
{
    int f = job->first_stage_layers, l = job->last_stage_layers, p = job->pp;
    long n = (long)p * job->virtual_stages, L = m->layers;
    if (f < 0 || l < 0)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0,
                             f < 0 ? "first_stage_layers" : "last_stage_layers",
                             "must be at least 1");
    if (f > 0 || l > 0) {
        const char *fld = f > 0 ? "first_stage_layers" : "last_stage_layers";
        if (job->account_embedding || job->account_loss)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, fld,
                                 "gives the stages' layers itself: it does not combine with "
                                 "account_for_embedding/loss_in_pipeline_split");
        if (job->virtual_stages > 1)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, fld,
                                 "uneven first and last stages take the 1f1b or gpipe schedule, "
                                 "not yet the interleaved one");
        if (p < 2) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, fld, "needs pp of 2 or more");
        int fixed = (f > 0) + (l > 0);
        long rest = L - f - l, mid = p - fixed;
        if (rest < mid || (mid > 0 && rest % mid) || (mid == 0 && rest))
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, fld,
                                 "leaves %ld layers of model.layers (%ld) for %ld other stage(s): "
                                 "they must split them evenly, at least one each",
                                 rest, L, mid);
        return TPS_OK;
    }
    long total = L + job->account_embedding + job->account_loss;
    if (total % n)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pp",
                             "pp x virtual_stages (%ld) must divide model.layers (%ld)%s, or give "
                             "pipeline.first_stage_layers / last_stage_layers",
                             n, L,
                             job->account_embedding && job->account_loss
                                 ? " with the embedding and the loss counted as layers (+2)"
                             : job->account_embedding
                                 ? " with the embedding counted as a layer (+1)"
                             : job->account_loss ? " with the loss counted as a layer (+1)"
                                                 : "");
    int mid;
    if (vs_layers(job, m, 0, &mid) < 1 || vs_layers(job, m, (int)n - 1, &mid) < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pp",
                             "counting the embedding and the loss as layers leaves a stage "
                             "without layers");
    return TPS_OK;
}

int mdl_job_check(const struct mdl_job *job, const struct mdl_strategy *st,
                  const struct mdl_model *m, struct tps_error *err)
{
    if (job->pp < 1) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pp", "must be at least 1");
    if (job->dp < 1) return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "dp", "must be at least 1");
    int v = job->virtual_stages;
    if (v < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "virtual_stages", "must be at least 1");
    if (v > 1 && job->schedule != MDL_SCHED_INTERLEAVED)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "virtual_stages",
                             "applies to schedule: interleaved only");
    if (job->schedule == MDL_SCHED_INTERLEAVED && (v < 2 || job->pp < 2))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "virtual_stages",
                             "the interleaved schedule needs pp >= 2 and virtual_stages >= 2");
    if (job->overlap_p2p_comm && job->schedule != MDL_SCHED_INTERLEAVED)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "overlap_p2p_comm",
                             "applies to schedule: interleaved only (Megatron-LM turns it off "
                             "for the others)");
    int rc = check_split(job, m, err);
    if (rc) return rc;
    if (job->micro_batches < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "micro_batches", "must be at least 1");
    if (job->zero < 0 || job->zero > 3)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "zero", "must be 0, 1, 2 or 3, got %d",
                             job->zero);
    if (job->overlap_param_gather && job->zero < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "overlap_param_gather",
                             "needs the distributed optimizer (distributed_optimizer: true)");
    if (job->overlap_param_gather && job->zero == 3)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "overlap_param_gather",
                             "ZeRO-3 gathers every bucket's parameters before each use already");
    if (job->fp8_param_gather && !m->fp8)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "fp8_param_gather",
                             "keeps the weights in FP8: needs model.dtype fp8");
    if (job->tp_only_amax_red && !m->fp8)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp_only_amax_red",
                             "reduces FP8's amaxes: needs model.dtype fp8");
    if (job->fp8_param_gather && job->zero < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "fp8_param_gather",
                             "gathers the distributed optimizer's parameters: needs "
                             "distributed_optimizer: true (or zero >= 1)");
    if (job->grad_reduce_in_bf16 && m->dtype != MDL_BF16)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "grad_reduce_in_bf16",
                             "applies to bf16 training (model.dtype bf16 or fp8) only: %s "
                             "training reduces its gradients in its own dtype",
                             mdl_dtype_name(m->dtype));
    if (m->moe.experts > 0) {
        int e = mdl_strategy_ep(st) * mdl_strategy_etp(st), g = mdl_strategy_gpus(st) * job->dp;
        if (g % e)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "ep",
                                 "the expert layers lay a stage's tp x cp x dp = %d GPUs out as "
                                 "expert_tp x ep x expert replicas: expert_tp x ep (%d) must "
                                 "divide them",
                                 g, e);
        if (job->zero >= 2)
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "zero",
                                 "ZeRO-2 and 3 do not combine with a mixture of experts yet (the "
                                 "distributed optimizer, ZeRO-1, does)");
    }
    if (job->schedule == MDL_SCHED_INTERLEAVED && job->micro_batches % job->pp)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "micro_batches",
                             "the interleaved schedule needs micro-batches per replica (%d) to be "
                             "a multiple of pp (%d)",
                             job->micro_batches, job->pp);
    return TPS_OK;
}

int mdl_job_warmup_steps(const struct mdl_job *job, int s)
{
    int p = job->pp, v = job->virtual_stages, total = job->micro_batches * v;
    int warm = job->schedule == MDL_SCHED_INTERLEAVED ? 2 * (p - s - 1) + (v - 1) * p : p - s - 1;
    return warm > total ? total : warm;
}

void mdl_job_schedule(const struct mdl_job *job, int s, struct mdl_job_step *steps)
{
    int p = job->pp, v = job->virtual_stages, M = job->micro_batches, total = M * v, n = 0;
    if (job->schedule == MDL_SCHED_GPIPE) {
        for (int k = 0; k < M; k++)
            steps[n++] = (struct mdl_job_step){MDL_PHASE_FWD, 0, k};
        for (int k = 0; k < M; k++)
            steps[n++] = (struct mdl_job_step){MDL_PHASE_BWD, 0, k};
        return;
    }
    /* 1F1B (Narayanan et al. 2021): p - s - 1 warm-up forwards, then one forward and one
     * backward in turn, then the remaining backwards. Interleaved: the k-th forward runs chunk
     * (k / p) mod v of micro-batch (k / pv) p + k mod p, the k-th backward the chunks in reverse,
     * with 2(p - s - 1) + (v - 1) p warm-up forwards (Megatron-LM's schedule). */
    int warm = mdl_job_warmup_steps(job, s), nf = 0, nb = 0;
    for (int k = 0; k < 2 * total; k++) {
        bool fwd = nf < total && (nf < warm || nb >= nf - warm);
        int i = fwd ? nf++ : nb++;
        int chunk = v > 1 ? (i / p) % v : 0, mb = v > 1 ? (i / (p * v)) * p + i % p : i;
        if (!fwd && v > 1) chunk = v - 1 - chunk;
        steps[n++] = (struct mdl_job_step){fwd ? MDL_PHASE_FWD : MDL_PHASE_BWD, chunk, mb};
    }
}

int mdl_job_in_flight(const struct mdl_job *job, int s)
{
    /* GPipe: every forward before the first backward. 1F1B and interleaved: the warm-up's
     * forwards, then one more before each backward, so the warm-up plus one (all of them when
     * the warm-up is the whole schedule) */
    int total = job->virtual_stages * job->micro_batches, warm = mdl_job_warmup_steps(job, s);
    if (job->schedule == MDL_SCHED_GPIPE) return job->micro_batches;
    return warm < total ? warm + 1 : total;
}

double mdl_job_model_flop(const struct mdl_job *job, const struct mdl_model *m)
{
    double per_mb = mdl_model_flop(m, m->layers, 1) + 3 * mdl_model_logits_fwd_flop(m);
    return per_mb * job->micro_batches * job->dp;
}

double mdl_job_grad_bytes(const struct mdl_job *job, const struct mdl_model *m)
{
    if (m->dtype == MDL_BF16) return job->grad_reduce_in_bf16 ? 2 : 4;
    return mdl_dtype_bytes(m->dtype);
}

double mdl_job_gather_bytes(const struct mdl_job *job, const struct mdl_model *m)
{
    return job->fp8_param_gather ? 1 : mdl_dtype_bytes(m->dtype);
}

/* FP8 weight casts per layer parameter (fp8_weight_cast): from the 16-bit copy, or with
 * fp8_param_gather the transpose of the gathered FP8 weight (read 1, write 1) */
static double fp8_cast_bytes(const struct mdl_job *job)
{
    return job->fp8_param_gather ? FP8_GATHERED_CAST_BYTES : FP8_CAST_BYTES;
}

double mdl_job_update_time(const struct mdl_job *job, const struct mdl_strategy *st,
                           const struct mdl_model *m, const struct mdl_device *dev, double params)
{
    double shard = params / (dist_opt(job, st) ? mdl_job_grad_replicas(job, st) : 1);
    double unscale = m->dtype == MDL_FP16 ? mdl_mem_time(dev, shard * UNSCALE_BYTES) : 0;
    double per = mdl_dtype_bytes(m->dtype) >= 4 ? OPT_BYTES_FP32 : OPT_BYTES_MIXED;
    /* FP8's weight cast: every parameter counted, the embedding's too (a bound) */
    double cast = m->fp8 ? mdl_mem_time(dev, params * fp8_cast_bytes(job)) : 0;
    return mdl_mem_time(dev, params * ZERO_BYTES) + unscale +
           mdl_mem_time(dev, shard * NORM_BYTES) + mdl_mem_time(dev, shard * per) + cast;
}

/* Parameters of stage s's layers one GPU holds, and of them its experts' (*expert). */
static double layers_params_split(const struct mdl_job *job, const struct mdl_strategy *st,
                                  const struct mdl_model *m, int s, double *expert)
{
    *expert = 0;
    if (m->moe.experts <= 0)
        return (double)stage_layers(job, m, s) * mdl_strategy_layer_params(st, m);
    double all = 0;
    for (int c = 0; c < job->virtual_stages; c++) {
        int first, n = mdl_job_chunk_range(job, m, s, c, &first);
        double e;
        all += range_params(st, m, first, n, &e);
        *expert += e;
    }
    return all;
}

double mdl_job_stage_expert_params(const struct mdl_job *job, const struct mdl_strategy *st,
                                   const struct mdl_model *m, int s)
{
    double e;
    layers_params_split(job, st, m, s, &e);
    return e;
}

static double layers_params(const struct mdl_job *job, const struct mdl_strategy *st,
                            const struct mdl_model *m, int s)
{
    double e;
    return layers_params_split(job, st, m, s, &e);
}

/* Embedding parameters one GPU of stage s holds: the first stage's, and the last stage's copy
 * for the logits. */
static double embedding_params(const struct mdl_job *job, const struct mdl_strategy *st,
                               const struct mdl_model *m, int s)
{
    double emb = (double)m->vocab * (double)m->hidden / st->tp, params = 0;
    if (s == 0) params += emb;
    if (s == job->pp - 1 && (job->pp > 1 || job->untied_embeddings)) params += emb;
    return params;
}

double mdl_job_stage_params(const struct mdl_job *job, const struct mdl_strategy *st,
                            const struct mdl_model *m, int s)
{
    return layers_params(job, st, m, s) + embedding_params(job, st, m, s);
}

double mdl_job_memory(const struct mdl_job *job, const struct mdl_strategy *st,
                      const struct mdl_model *m, const struct mdl_framework *fw,
                      struct mdl_memory *out)
{
    double wb = mdl_dtype_bytes(m->dtype), gb = mdl_job_grad_bytes(job, m), act, input;
    mdl_strategy_layer_activations(st, m, fw, &act, &input);
    double sp = mdl_strategy_shards_activations(st) ? st->tp : 1;
    double cp = mdl_strategy_cp(st), R = mdl_job_grad_replicas(job, st);
    double bsh = (double)m->micro_batch * (double)m->seq / cp * (double)m->hidden;
    /* ZeRO-2 keeps 1/dp of the layers' gradients plus the bucket being reduced, ZeRO-3 also
     * 1/dp of their weights plus the two buckets gathered (the one in use and the next); the
     * embedding's stay whole (reduced and gathered once per iteration) */
    double bucket = mdl_job_bucket_layers(job, st, m) * mdl_strategy_layer_params(st, m);
    memset(out, 0, sizeof *out);
    for (int s = 0; s < job->pp; s++) {
        struct mdl_memory x;
        double ex, layers = layers_params_split(job, st, m, s, &ex);
        double n = (double)stage_layers(job, m, s) / job->virtual_stages; /* per chunk */
        double emb = embedding_params(job, st, m, s);
        mdl_memory_params(layers + emb, m->dtype, dist_opt(job, st) ? R : 1, &x);
        /* the gradient buffer holds what is accumulated and reduced: Megatron-LM's fp32 main
         * gradients in bf16 training (its distributed optimizer's 6 + 12/dp bytes per
         * parameter) */
        x.gradients = (layers + emb) * gb;
        /* FP8's weight copy and transpose beside the 16-bit weights; with fp8_param_gather they
         * replace the layers' 16-bit weights (2 B per parameter either way) */
        if (!job->fp8_param_gather)
            x.weights += (double)stage_layers(job, m, s) * mdl_strategy_fp8_weight_bytes(st, m);
        if (ex > 0 && dist_opt(job, st)) /* the experts' state sharded over their replicas */
            x.optimizer += ex * (x.optimizer / (layers + emb)) * (R / expert_shards(job, st) - 1);
        if (zero_at(job, st, 2)) x.gradients = (emb + layers / R + bucket) * gb;
        if (zero_at(job, st, 3)) x.weights = (emb + layers / R + 2 * bucket) * wb;
        double per_chunk = st->recompute ? n * input : n * act;
        x.activations = mdl_job_in_flight(job, s) * per_chunk + (st->recompute ? act : 0);
        /* the embedding's output (first stage) and the fp32 logits of the micro-batch in its
         * loss (last stage) */
        if (m->vocab > 0 && s == 0) x.activations += bsh / sp * wb;
        if (m->vocab > 0 && s == job->pp - 1)
            x.activations +=
                4.0 * (double)m->micro_batch * (double)m->seq / cp * (double)m->vocab / st->tp;
        x.total = x.weights + x.gradients + x.optimizer + x.activations;
        if (x.total > out->total) *out = x;
    }
    return out->total;
}

/* Lowering of one stage's template into rank `base` of the program. */
struct stage {
    const struct mdl_job *job;
    const struct mdl_strategy *st;
    const struct mdl_model *m;
    const struct mdl_device *dev;
    const struct mdl_job_fold *fold;
    struct mdl_program *p;
    const struct job_comms *J;
    struct mdl_emitter *E;
    int s, rank;
    double act_bytes; /* one TP rank's share of a micro-batch's activations between stages */
    int *first_fwd;   /* per chunk: the step of its first forward, -1 if none yet */
    int *last_bwd;    /* per chunk: the step of its last backward */
    int *gathered;    /* overlap_param_gather: per chunk and bucket, its all-gather op */
    int *gorder;      /* overlap_param_gather: the buckets (chunk x nb + bucket) in the order the
                         forwards need them; the first gnext of them are all-gathered */
    int ng, gnext;
    int last_dp;  /* the last gradient reduction emitted on the DP stream, -1 none */
    int ahead[2]; /* ZeRO-3: the last two layer parts run; a bucket's gather waits for the
                     older, so at most one bucket is gathered ahead of the compute */
    int cend;     /* the last compute op of the last step, -1 before the first */
    int nb;       /* the buckets of the stage's largest chunk (gathered's stride) */
    int call[2];  /* the sends of the next point-to-point call (stage_step) */
    int ncall;
    /* overlap_p2p_comm (stage_step_overlap), per direction (0 forward, 1 backward): the messages
     * the next step of that direction waits for, and whether its first receive is posted */
    int hand[2][2], nhand[2];
    bool posted[2];
};

/* An op on communicator row c (its marker, stream and dimension). */
static int op_add(struct stage *S, enum mdl_op_kind k, int c, double bytes, const char *name,
                  int mb, enum mdl_phase ph, int after)
{
    const struct mdl_comm_spec *cs = &S->J->reg.spec[c];
    struct mdl_op op = {
        .kind = (uint8_t)k, .stream = cs->stream, .dim = cs->dim, .group = S->J->mk[c]};
    op.bytes = bytes;
    if (after >= 0) op.deps[op.ndeps++] = after;
    return mdl_emitter_op(S->E, &op, name, mb, ph);
}

/* An empty compute op that waits for the n ops of deps (n <= MDL_MAX_DEPS); the host launches it
 * at no cost. Returns its index, or -1. */
static int join_ops(struct stage *S, const int *deps, int n, const char *name, int mb,
                    enum mdl_phase ph)
{
    struct mdl_op op = {.kind = MDL_OP_COMPUTE, .stream = MDL_STREAM_COMPUTE, .group = -1};
    for (int k = 0; k < n; k++)
        op.deps[op.ndeps++] = deps[k];
    int x = mdl_emitter_op(S->E, &op, name, mb, ph);
    if (x >= 0) S->p->ranks[S->rank].ops[x].launch_s = 0;
    return x;
}

/* A point-to-point message with a stage neighbour, posted after op `after`; without sequence
 * parallelism the received share is all-gathered over the TP group (its D1 axis). Returns the op
 * the next compute waits for. */
static int p2p_recv(struct stage *S, const struct mdl_job_step *st, int after)
{
    bool fwd = st->phase == MDL_PHASE_FWD;
    int x = op_add(S, MDL_OP_SEND_RECV, fwd ? C_RECV_FWD : C_RECV_BWD, S->act_bytes,
                   fwd ? "recv_activations" : "recv_gradients", st->mb, st->phase, after);
    int d1, d2;
    mdl_strategy_mesh(S->st, &d1, &d2);
    if (x >= 0 && !mdl_strategy_shards_activations(S->st) && d1 > 1)
        x = op_add(S, MDL_OP_ALL_GATHER, C_D1, S->act_bytes * d1,
                   fwd ? "ag_recv_activations" : "ag_recv_gradients", st->mb, st->phase, x);
    return x;
}

/* Layers [first + lo, first + lo + cnt) of a chunk of n: op by op, or their share of the folded
 * chunk as one op. */
static int chunk_part(struct stage *S, enum mdl_phase ph, int first, int lo, int cnt, int n, int mb,
                      int after)
{
    if (!S->fold) return mdl_emitter_layers(S->E, ph, first + lo, cnt, mb, after);
    struct mdl_op op = {.kind = MDL_OP_COMPUTE, .stream = MDL_STREAM_COMPUTE, .group = -1};
    bool fwd = ph == MDL_PHASE_FWD;
    double share = (double)cnt / (S->fold->layers > 0 ? S->fold->layers : n);
    op.dur_s = (fwd ? S->fold->fwd_s : S->fold->bwd_s) * share;
    op.flop = (fwd ? S->fold->fwd_flop : S->fold->bwd_flop) * share;
    if (after >= 0) op.deps[op.ndeps++] = after;
    int x = mdl_emitter_op(S->E, &op, fwd ? "layers_fwd" : "layers_bwd", mb, ph);
    if (x >= 0) {
        struct mdl_op *o = &S->p->ranks[S->rank].ops[x];
        o->layer = first + lo;
        o->launch_s = 0; /* the folded simulation launched its kernels */
    }
    return x;
}

/* The gradients of `params` parameters reduced over the replicas after op `after`: an all-reduce,
 * or a reduce-scatter with the distributed optimizer; of them, the experts' (`expert`) over the
 * expert-data-parallel replicas. */
static int reduce_grads(struct stage *S, double params, double expert, int after)
{
    bool dist = dist_opt(S->job, S->st);
    enum mdl_op_kind k = dist ? MDL_OP_REDUCE_SCATTER : MDL_OP_ALL_REDUCE;
    double gb = mdl_job_grad_bytes(S->job, S->m);
    int y = after;
    if (params - expert > 0.5 && mdl_job_grad_replicas(S->job, S->st) > 1)
        y = op_add(S, k, C_DP, (params - expert) * gb, dist ? "rs_grads_dp" : "ar_grads_dp", -1,
                   MDL_PHASE_OTHER, after);
    if (y >= 0 && expert > 0.5 && mdl_job_expert_replicas(S->job, S->st) > 1)
        y = op_add(S, k, C_EDP, expert * gb, dist ? "rs_expert_grads_dp" : "ar_expert_grads_dp", -1,
                   MDL_PHASE_OTHER, after);
    if (y >= 0) S->last_dp = y;
    return y;
}

static int gather_next(struct stage *S);

/* A chunk's layers: op by op, or one folded op. The chunk's first forward waits for its
 * buckets' parameters (overlap_param_gather), and after its last backward each bucket's
 * gradients are reduced as soon as its layers are done (overlap_grad_reduce). ZeRO-2 reduces
 * them after every backward of the chunk; ZeRO-3 gathers each bucket's parameters before every
 * forward and backward of it. */
static int chunk_layers(struct stage *S, enum mdl_phase ph, int chunk, int mb, int after, int step)
{
    const struct mdl_job *job = S->job;
    int first, n = mdl_job_chunk_range(job, S->m, S->s, chunk, &first);
    int k = mdl_job_bucket_layers(job, S->st, S->m), nb = (n + k - 1) / k;
    bool fwd = ph == MDL_PHASE_FWD, z3 = zero_at(job, S->st, 3);
    bool gather = z3 || (fwd && job->overlap_param_gather && dist_opt(job, S->st) &&
                         S->first_fwd[chunk] == step);
    bool reduce = !fwd && (zero_at(job, S->st, 2) ||
                           (job->overlap_grad_reduce && mdl_job_grad_replicas(job, S->st) > 1 &&
                            S->last_bwd[chunk] == step));
    if (!gather && !reduce) return chunk_part(S, ph, first, 0, n, n, mb, after);
    double wb = mdl_job_gather_bytes(job, S->m);
    int x = after;
    for (int b = 0; b < nb; b++) {
        /* forward: buckets from the chunk's first layer up; backward: from its last layer down */
        int lo = fwd ? b * k : n - (b + 1) * k, hi = lo + k;
        if (lo < 0) lo = 0;
        if (hi > n) hi = n;
        double ex, part = range_params(S->st, S->m, first + lo, hi - lo, &ex);
        int g = gather && !z3 ? S->gathered[chunk * S->nb + b] : -1;
        if (z3 && (g = op_add(S, MDL_OP_ALL_GATHER, C_GATHER, part * wb,
                              fwd ? "ag_params_fwd" : "ag_params_bwd", mb, ph, S->ahead[0])) < 0)
            return -1;
        int wait[2] = {g, x}; /* the bucket's gather and what the part waited for */
        if (gather && (x = join_ops(S, wait, x >= 0 ? 2 : 1, "wait_params", mb, ph)) < 0) return -1;
        if (gather && !z3 && gather_next(S) < 0) return -1; /* the next bucket's, launched now */
        if ((x = chunk_part(S, ph, first, lo, hi - lo, n, mb, x)) < 0) return -1;
        S->ahead[0] = S->ahead[1];
        S->ahead[1] = x;
        if (reduce && reduce_grads(S, part, ex, x) < 0) return -1;
    }
    return x;
}

/* The virtual stage step st runs on stage S (chunk c of stage s is c pp + s), and the last one. */
static int step_vs(const struct stage *S, const struct mdl_job_step *st)
{
    return st->chunk * S->job->pp + S->s;
}

static int last_vs(const struct stage *S)
{
    return S->job->pp * S->job->virtual_stages - 1;
}

/* Whether step st sends its output (send) or receives its input (!send) over a neighbour: a
 * forward sends to the next virtual stage and receives from the previous, a backward the other
 * way round. */
static bool step_talks(const struct stage *S, const struct mdl_job_step *st, bool send)
{
    bool to_next = (st->phase == MDL_PHASE_FWD) == send;
    return to_next ? step_vs(S, st) < last_vs(S) : step_vs(S, st) > 0;
}

/* Posts step st's send to its stage neighbour after op `after`. Returns the op, or -1. */
static int p2p_send(struct stage *S, const struct mdl_job_step *st, int after)
{
    bool fwd = st->phase == MDL_PHASE_FWD;
    return op_add(S, MDL_OP_SEND_RECV, fwd ? C_SEND_FWD : C_SEND_BWD, S->act_bytes,
                  fwd ? "send_activations" : "send_gradients", st->mb, st->phase, after);
}

/* Posts step st's send after op `after` and adds it to the next call. */
static int step_send(struct stage *S, const struct mdl_job_step *st, int after)
{
    int x = p2p_send(S, st, after);
    if (x >= 0) S->call[S->ncall++] = x;
    return x;
}

/* The first step after step i of phase ph, or total when none is left. */
static int next_of_phase(const struct mdl_job_step *steps, int total, int i, enum mdl_phase ph)
{
    int j = i + 1;
    while (j < total && steps[j].phase != ph)
        j++;
    return j;
}

/* Whether steps[i] is the forward of the interleaved schedule's steady-state pair: a forward
 * followed by a backward after the warm-up, both run before one call exchanges their results
 * (when the warm-up runs every forward, its last one sends on its own). */
static bool pair_fwd(const struct stage *S, const struct mdl_job_step *steps, int total, int i)
{
    return S->job->schedule == MDL_SCHED_INTERLEAVED && i >= mdl_job_warmup_steps(S->job, S->s) &&
           steps[i].phase == MDL_PHASE_FWD && i + 1 < total && steps[i + 1].phase == MDL_PHASE_BWD;
}

int mdl_job_amax_ranks(const struct mdl_job *job, const struct mdl_strategy *st,
                       const struct mdl_model *m)
{
    if (!m->fp8) return 0;
    return job->tp_only_amax_red ? st->tp : mdl_strategy_gpus(st) * job->dp;
}

/* TE keeps an amax per FP8 tensor of each module: a linear's GEMM has 3 forward and 2 backward;
 * a layer has QKV, the projection, FC1 and FC2, or with a mixture of experts the attention's two,
 * FC1 and FC2 of each of the GPU's experts and of the shared experts; TE's FP8 dot-product
 * attention (fp8_attention) counts as one more. */
double mdl_job_amax_bytes(const struct mdl_strategy *st, const struct mdl_model *m, int first,
                          int layers, bool fwd)
{
    double gemms = 0;
    for (int l = first; l < first + layers; l++) {
        double g = 4;
        if (m->moe.experts > 0 && mdl_model_is_moe_layer(m, l))
            g = 2 + 2.0 * m->moe.experts / mdl_strategy_ep(st) +
                (m->moe.shared_experts > 0 ? 2 : 0);
        gemms += g + (m->fp8_attention ? 1 : 0);
    }
    return 4.0 * (fwd ? 3 : 2) * gemms;
}

/* After a chunk's layers (forward or backward, phase ph), FP8's amax all-reduce: Transformer
 * Engine reduces the amaxes at the end of the outermost fp8_autocast region (Megatron-LM wraps a
 * chunk's transformer block in one) and in the backward of its first FP8 module, a blocking
 * torch.distributed.all_reduce (MAX) that the compute stream waits for. Returns the op the next
 * compute waits for. */
static int amax_reduce(struct stage *S, enum mdl_phase ph, int chunk, int mb, int after)
{
    if (after < 0 || mdl_job_amax_ranks(S->job, S->st, S->m) < 2) return after;
    bool fwd = ph == MDL_PHASE_FWD;
    int first, n = mdl_job_chunk_range(S->job, S->m, S->s, chunk, &first);
    int x = op_add(S, MDL_OP_ALL_REDUCE, C_AMAX, mdl_job_amax_bytes(S->st, S->m, first, n, fwd),
                   fwd ? "ar_fp8_amax_fwd" : "ar_fp8_amax_bwd", mb, ph, after);
    /* a few hundred bytes: its latency alone, its flows not simulated (collective.h) */
    if (x >= 0) S->p->ranks[S->rank].ops[x].gran = MDL_GRAN_LATENCY;
    return x;
}

/* Step i's compute after op `after`: the chunk's layers, with the embedding before the first
 * virtual stage's forward (after its backward) and the logits after the last one's forward
 * (before its backward). Returns the last op, or -1. */
static int step_compute(struct stage *S, const struct mdl_job_step *st, int i, int after)
{
    int vs = step_vs(S, st), last = last_vs(S), mb = st->mb, x = after;
    if (st->phase == MDL_PHASE_FWD) {
        if (vs == 0) x = mdl_emitter_embedding(S->E, MDL_PHASE_FWD, mb, x);
        x = chunk_layers(S, MDL_PHASE_FWD, st->chunk, mb, x, i);
        x = amax_reduce(S, MDL_PHASE_FWD, st->chunk, mb, x);
        if (vs == last) x = mdl_emitter_logits(S->E, MDL_PHASE_FWD, mb, x);
    } else {
        if (vs == last) x = mdl_emitter_logits(S->E, MDL_PHASE_BWD, mb, x);
        x = chunk_layers(S, MDL_PHASE_BWD, st->chunk, mb, x, i);
        x = amax_reduce(S, MDL_PHASE_BWD, st->chunk, mb, x);
        if (vs == 0) x = mdl_emitter_embedding(S->E, MDL_PHASE_BWD, mb, x);
    }
    return x;
}

/* Step i of the stage's schedule, with Megatron-LM's point-to-point calls around it
 * (p2p_communication.py): a call posts its sends and receives together (batch_isend_irecv),
 * waits for all of them and synchronizes the device, so the next step's compute starts once
 * every message of the call has arrived and every send of it has been taken. Between two steps
 * of the same direction, 1F1B (and GPipe, a 1F1B whose warm-up holds every forward) sends and
 * then receives in two calls; between a forward and a backward it makes one call. The interleaved
 * schedule makes one call between steps, except in its steady state: there it runs a forward and a
 * backward, then one call sends both results and receives both inputs of the next pair. */
static int stage_step(struct stage *S, const struct mdl_job_step *steps, int total, int i)
{
    const struct mdl_job_step *st = &steps[i];
    bool il = S->job->schedule == MDL_SCHED_INTERLEAVED;
    int mb = st->mb, x = -1;
    if (!(i > 0 && pair_fwd(S, steps, total, i - 1))) { /* the call before the step */
        int join[MDL_MAX_DEPS], n = 0, after = S->cend;
        for (int k = 0; k < S->ncall; k++)
            join[n++] = S->call[k];
        if (!il && i > 0 && steps[i - 1].phase == st->phase && S->ncall > 0)
            after = S->call[S->ncall - 1]; /* sent first, then received */
        S->ncall = 0;
        if (step_talks(S, st, false) && (join[n++] = p2p_recv(S, st, after)) < 0) return -1;
        if (pair_fwd(S, steps, total, i) && step_talks(S, &steps[i + 1], false) &&
            (join[n++] = p2p_recv(S, &steps[i + 1], after)) < 0)
            return -1;
        if (n > 0) { /* the call's messages joined; the host waits for them (batch_p2p_sync) */
            if ((x = join_ops(S, join, n, "wait_p2p", mb, st->phase)) < 0) return -1;
            S->p->ranks[S->rank].ops[x].host_sync = !S->job->batch_p2p_nosync;
        }
    }
    if ((x = step_compute(S, st, i, x)) < 0) return -1;
    S->cend = x;
    if (pair_fwd(S, steps, total, i)) return x; /* its send goes with the backward's */
    if (i > 0 && pair_fwd(S, steps, total, i - 1) && step_talks(S, &steps[i - 1], true) &&
        step_send(S, &steps[i - 1], x) < 0)
        return -1;
    if (step_talks(S, st, true) && step_send(S, st, x) < 0) return -1;
    return x;
}

/* Step i with Megatron-LM's overlapped point-to-point communication (--overlap-p2p-communication,
 * the interleaved schedule of schedules.py): after a step computes, its send and the receive of
 * the next step of the same direction are posted at once, unbatched, and only that next step
 * waits for them (the compute stream waits on the NCCL operations; the host does not synchronize
 * the device). In the steady state a forward's messages therefore fly under the backward that
 * follows it, and the backward's under the next forward. The first backward's receive is posted
 * after the last warm-up forward, as Megatron-LM posts it. */
static int stage_step_overlap(struct stage *S, const struct mdl_job_step *steps, int total, int i)
{
    const struct mdl_job_step *st = &steps[i];
    bool fwd = st->phase == MDL_PHASE_FWD;
    int d = fwd ? 0 : 1, mb = st->mb, x = -1;
    if (!S->posted[d]) { /* the direction's first step receives its input now */
        S->posted[d] = true;
        if (step_talks(S, st, false) && (S->hand[d][S->nhand[d]++] = p2p_recv(S, st, S->cend)) < 0)
            return -1;
    }
    if (S->nhand[d] > 0 &&
        (x = join_ops(S, S->hand[d], S->nhand[d], "wait_p2p", mb, st->phase)) < 0)
        return -1;
    S->nhand[d] = 0;
    if ((x = step_compute(S, st, i, x)) < 0) return -1;
    S->cend = x;
    if (step_talks(S, st, true) && (S->hand[d][S->nhand[d]++] = p2p_send(S, st, x)) < 0) return -1;
    int j = next_of_phase(steps, total, i, st->phase);
    if (j < total && step_talks(S, &steps[j], false) &&
        (S->hand[d][S->nhand[d]++] = p2p_recv(S, &steps[j], x)) < 0)
        return -1;
    if (fwd && i == mdl_job_warmup_steps(S->job, S->s) - 1 && !S->posted[1]) {
        S->posted[1] = true;
        j = next_of_phase(steps, total, i, MDL_PHASE_BWD);
        if (j < total && step_talks(S, &steps[j], false) &&
            (S->hand[1][S->nhand[1]++] = p2p_recv(S, &steps[j], x)) < 0)
            return -1;
    }
    return x;
}

/* After the last backward: gradient reduction over the replicas, the tied embedding's gradient
 * between the first and last stage, and the optimizer step. */
static int stage_tail(struct stage *S)
{
    const struct mdl_job *job = S->job;
    const struct mdl_model *m = S->m;
    int last = S->p->ranks[S->rank].nops - 1;
    double params = mdl_job_stage_params(job, S->st, m, S->s), gb = mdl_job_grad_bytes(job, m);
    bool dist = dist_opt(job, S->st);
    int deps[2] = {S->last_dp, -1}, R = mdl_job_grad_replicas(job, S->st);
    /* what the buckets have not reduced yet: everything, or the embedding's share */
    double emb = embedding_params(job, S->st, m, S->s), ex;
    layers_params_split(job, S->st, m, S->s, &ex);
    bool buckets = job->overlap_grad_reduce || zero_at(job, S->st, 2);
    double rest = buckets ? emb : params, rest_ex = buckets ? 0 : ex;
    if ((R > 1 && rest - rest_ex > 0.5) ||
        (rest_ex > 0.5 && mdl_job_expert_replicas(job, S->st) > 1))
        deps[0] = reduce_grads(S, rest, rest_ex, last);
    bool tied = m->vocab > 0 && job->pp > 1 && !job->untied_embeddings;
    if (tied && (S->s == 0 || S->s == job->pp - 1))
        deps[1] = op_add(S, MDL_OP_ALL_REDUCE, C_EMB,
                         (double)m->vocab * (double)m->hidden / S->st->tp * gb,
                         "ar_embedding_grads", -1, MDL_PHASE_OTHER, last);
    /* the parameters this GPU updates: its shard of the dense ones and of the experts' */
    double shard = params / (dist ? R : 1);
    if (ex > 0 && dist) shard = (params - ex) / R + ex / expert_shards(job, S->st);
    struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
    op.deps[op.ndeps++] = last;
    for (int i = 0; i < 2; i++)
        if (deps[i] >= 0) op.deps[op.ndeps++] = deps[i];
    int x = 0;
    if (m->dtype == MDL_FP16) {
        op.bytes = shard * UNSCALE_BYTES;
        op.dur_s = mdl_mem_time(S->dev, op.bytes);
        x = mdl_emitter_op(S->E, &op, "unscale_grads", -1, MDL_PHASE_OTHER);
        op.ndeps = 0;
    }
    op.bytes = shard * NORM_BYTES;
    op.dur_s = mdl_mem_time(S->dev, op.bytes);
    if (x >= 0) x = mdl_emitter_op(S->E, &op, "grad_norm", -1, MDL_PHASE_OTHER);
    op.ndeps = 0;
    if (x >= 0 && (long)S->st->tp * job->pp * (dist ? R : 1) > 1) {
        x = op_add(S, MDL_OP_ALL_REDUCE, C_MP, 4, "ar_grad_norm", -1, MDL_PHASE_OTHER, x);
        op.deps[op.ndeps++] = x;
    }
    double per = mdl_dtype_bytes(m->dtype) >= 4 ? OPT_BYTES_FP32 : OPT_BYTES_MIXED;
    op.bytes = shard * per;
    op.dur_s = mdl_mem_time(S->dev, op.bytes);
    if (x >= 0) x = mdl_emitter_op(S->E, &op, "optimizer_step", -1, MDL_PHASE_OTHER);
    /* FP8: Transformer Engine casts each linear weight to FP8 (and its transpose) once per
     * iteration, on the first micro-batch (is_first_microbatch); here, after the step that
     * updates them: read 2 bytes, write 1 + 1, for every weight of the GPU's layers */
    if (x >= 0 && m->fp8) {
        op.ndeps = 0;
        op.deps[op.ndeps++] = x;
        op.bytes = (params - emb) * fp8_cast_bytes(job);
        op.dur_s = mdl_mem_time(S->dev, op.bytes);
        x = mdl_emitter_op(S->E, &op, "fp8_weight_cast", -1, MDL_PHASE_OTHER);
    }
    /* the updated parameters gathered back: all of them, or under ZeRO-3 the embedding's (the
     * layers' are gathered before each use) */
    double gathered = zero_at(job, S->st, 3) ? emb : params;
    double wb = mdl_dtype_bytes(m->dtype), pb = mdl_job_gather_bytes(job, m);
    /* the embedding's share in 16 bits, the layers' in the gather's bytes */
    double bytes = emb * wb + (gathered - emb - ex) * pb;
    if (x >= 0 && dist && !job->overlap_param_gather && gathered - ex > 0.5)
        x = op_add(S, MDL_OP_ALL_GATHER, C_DP, bytes, "ag_params_dp", -1, MDL_PHASE_OTHER, x);
    if (x >= 0 && dist && !job->overlap_param_gather && ex > 0.5 &&
        mdl_job_expert_replicas(job, S->st) > 1)
        x = op_add(S, MDL_OP_ALL_GATHER, C_EDP, ex * pb, "ag_expert_params_dp", -1, MDL_PHASE_OTHER,
                   x);
    return x;
}

/* overlap_param_gather: the all-gather of bucket gorder[gnext] over the replicas (its experts'
 * share over theirs), launched now; gathered[] holds it. 0, or -1 (out of memory). */
static int gather_next(struct stage *S)
{
    if (S->gnext >= S->ng) return 0;
    const struct mdl_job *job = S->job;
    const struct mdl_model *m = S->m;
    int i = S->gorder[S->gnext++], c = i / S->nb, b = i % S->nb;
    int k = mdl_job_bucket_layers(job, S->st, m), first,
        n = mdl_job_chunk_range(job, m, S->s, c, &first);
    int cnt = b * k + k > n ? n - b * k : k;
    double ex, part = range_params(S->st, m, first + b * k, cnt, &ex),
               pb = mdl_job_gather_bytes(job, m);
    int g = op_add(S, MDL_OP_ALL_GATHER, C_DP, (part - ex) * pb, "ag_params_dp", -1,
                   MDL_PHASE_OTHER, -1);
    if (g >= 0 && ex > 0.5 && mdl_job_expert_replicas(job, S->st) > 1)
        g = op_add(S, MDL_OP_ALL_GATHER, C_EDP, ex * pb, "ag_expert_params_dp", -1, MDL_PHASE_OTHER,
                   -1);
    if (g < 0) return -1;
    S->gathered[i] = g;
    return 0;
}

/* overlap_param_gather, as Megatron-Core's distributed optimizer dispatches it
 * (distrib_optimizer.py, _finish_param_sync_helper): not every bucket's all-gather at once, which
 * would hold the compute kernels back behind them in the GPU's one hardware queue
 * (CUDA_DEVICE_MAX_CONNECTIONS=1), but, after the last optimizer step, the embedding's parameters
 * and the first bucket's; then each further bucket's when the forward of the bucket before waits
 * for its own (chunk_layers). The buckets in the order the forwards need them: the chunks in the
 * order of their first forward, each chunk's from its first layer up. */
static int stage_gathers(struct stage *S, int nb, int k)
{
    const struct mdl_job *job = S->job;
    const struct mdl_model *m = S->m;
    int v = job->virtual_stages;
    double wb = mdl_dtype_bytes(m->dtype);
    double rest = embedding_params(job, S->st, m, S->s);
    if (rest > 0.5 &&
        op_add(S, MDL_OP_ALL_GATHER, C_DP, rest * wb, "ag_params_dp", -1, MDL_PHASE_OTHER, -1) < 0)
        return -1;
    S->gorder = malloc((size_t)v * (size_t)nb * sizeof *S->gorder);
    if (!S->gorder) return -1;
    S->ng = S->gnext = 0;
    for (int done = 0; done < v; done++) {
        int c = -1;
        for (int i = 0; i < v; i++)
            if (S->gathered[i * nb] == -2 && (c < 0 || S->first_fwd[i] < S->first_fwd[c])) c = i;
        int first, n = mdl_job_chunk_range(job, m, S->s, c, &first);
        S->gathered[c * nb] = -3; /* ordered */
        for (int b = 0; b * k < n; b++)
            S->gorder[S->ng++] = c * nb + b;
    }
    return gather_next(S);
}

/* Lowers stage s's template into rank `rank` of p. */
static int stage_lower(const struct mdl_job *job, const struct mdl_strategy *st,
                       const struct mdl_model *m, const struct mdl_device *dev,
                       const struct mdl_framework *fw, const struct mdl_job_fold *fold,
                       const struct job_comms *J, struct mdl_program *p, int s, int rank)
{
    int total = 2 * job->virtual_stages * job->micro_batches, rc = 0;
    struct mdl_job_step *steps = malloc((size_t)total * sizeof *steps);
    struct stage S = {.job = job,
                      .st = st,
                      .m = m,
                      .dev = dev,
                      .fold = fold,
                      .p = p,
                      .J = J,
                      .E = mdl_emitter_new(st, m, dev, fw, p, rank),
                      .s = s,
                      .rank = rank};
    S.act_bytes = (double)m->micro_batch * (double)m->seq / mdl_strategy_cp(st) *
                  (double)m->hidden * mdl_dtype_bytes(m->dtype) / st->tp;
    S.last_dp = -1;
    S.ahead[0] = S.ahead[1] = -1;
    S.cend = -1;
    int v = job->virtual_stages, n = mdl_job_chunk_layers(job, m);
    int k = mdl_job_bucket_layers(job, st, m), nb = (n + k - 1) / k;
    S.nb = nb;
    S.first_fwd = malloc((size_t)v * sizeof *S.first_fwd);
    S.last_bwd = malloc((size_t)v * sizeof *S.last_bwd);
    S.gathered = malloc((size_t)v * (size_t)nb * sizeof *S.gathered);
    if (!steps || !S.E || !S.first_fwd || !S.last_bwd || !S.gathered) rc = -1;
    if (!rc) {
        mdl_job_schedule(job, s, steps);
        for (int c = 0; c < v; c++)
            S.first_fwd[c] = S.last_bwd[c] = -1;
        for (int i = 0; i < v * nb; i++)
            S.gathered[i] = -2; /* not gathered yet */
        for (int i = 0; i < total; i++) {
            int c = steps[i].chunk;
            if (steps[i].phase == MDL_PHASE_FWD && S.first_fwd[c] < 0) S.first_fwd[c] = i;
            if (steps[i].phase == MDL_PHASE_BWD) S.last_bwd[c] = i;
        }
        struct mdl_op op = {.kind = MDL_OP_MEM, .stream = MDL_STREAM_COMPUTE, .group = -1};
        op.bytes = mdl_job_stage_params(job, st, m, s) * ZERO_BYTES;
        op.dur_s = mdl_mem_time(dev, op.bytes);
        if (mdl_emitter_op(S.E, &op, "zero_grads", -1, MDL_PHASE_OTHER) < 0) rc = -1;
    }
    if (!rc && job->overlap_param_gather && dist_opt(job, st)) rc = stage_gathers(&S, nb, k);
    bool overlap = job->overlap_p2p_comm && job->schedule == MDL_SCHED_INTERLEAVED;
    for (int i = 0; !rc && i < total; i++)
        if ((overlap ? stage_step_overlap : stage_step)(&S, steps, total, i) < 0) rc = -1;
    if (!rc && stage_tail(&S) < 0) rc = -1;
    mdl_emitter_free(S.E);
    free(steps);
    free(S.first_fwd);
    free(S.last_bwd);
    free(S.gathered);
    free(S.gorder);
    return rc;
}

/* Expert parallelism's groups of every stage: its GPUs in the order of their layer group and
 * replica (t + tp cp d), laid out again expert_tp fastest, then ep, then the expert-data-parallel
 * replicas (Megatron-LM's expert rank generator); each GPU's EP, expert-TP and expert-DP group. */
static int expert_groups(const struct mdl_job *job, const struct mdl_strategy *st,
                         struct mdl_program *p, struct job_comms *J)
{
    int g = mdl_strategy_gpus(st), n = g * job->dp;
    size_t sz = (size_t)n * sizeof(int);
    int *base = malloc(sz), *epg = malloc(sz), *etpg = malloc(sz), *edpg = malloc(sz);
    int rc = base && epg && etpg && edpg ? 0 : -1;
    for (int s = 0; !rc && s < job->pp; s++) {
        for (int i = 0; i < n; i++)
            base[i] = mdl_job_rank(job, st, s, i / g, i % g);
        rc = mdl_strategy_expert_groups(st, p, base, n, epg, etpg, edpg);
        for (int i = 0; !rc && i < n; i++) {
            mdl_comms_set(&J->reg, J->mk[C_EP], base[i], epg[i]);
            mdl_comms_set(&J->reg, J->mk[C_ETP], base[i], etpg[i]);
            mdl_comms_set(&J->reg, J->mk[C_EDP], base[i], edpg[i]);
        }
    }
    free(base);
    free(epg);
    free(etpg);
    free(edpg);
    return rc;
}

/* The job's groups: the kind's own axes and ring per TP group (they are the kind's to lay out),
 * then every communicator made from the mesh. */
static int groups_make(const struct mdl_job *job, const struct mdl_strategy *st,
                       const struct mdl_model *m, struct mdl_program *p, struct job_comms *J)
{
    int n = p->nranks, tp = st->tp;
    if (mdl_comms_alloc(&J->reg, n)) return -1;
    int *base = malloc((size_t)tp * sizeof *base), *row = malloc((size_t)tp * sizeof *row);
    int *col = malloc((size_t)tp * sizeof *col), *to = malloc((size_t)tp * sizeof *to);
    int *from = malloc((size_t)tp * sizeof *from), *pil = malloc((size_t)tp * sizeof *pil);
    int rc = base && row && col && to && from && pil ? 0 : -1;
    for (int s = 0; !rc && s < job->pp; s++) {
        for (int dc = 0; !rc && dc < job->dp * mdl_strategy_cp(st); dc++) {
            /* the TP group of replica d's CP rank c */
            int d = dc / mdl_strategy_cp(st), c = dc % mdl_strategy_cp(st);
            for (int t = 0; t < tp; t++)
                base[t] = mdl_job_rank(job, st, s, d, t + tp * c);
            rc = mdl_strategy_axis_groups(st, p, base, row, col, pil) != 0 ||
                 mdl_strategy_ring_groups(st, p, base, to, from) != 0;
            for (int t = 0; !rc && t < tp; t++) {
                mdl_comms_set(&J->reg, J->mk[C_D2], base[t], row[t]);
                mdl_comms_set(&J->reg, J->mk[C_D1], base[t], col[t]);
                mdl_comms_set(&J->reg, J->mk[C_D3], base[t], pil[t]);
                mdl_comms_set(&J->reg, J->mk[C_SHIFT_TO], base[t], to[t]);
                mdl_comms_set(&J->reg, J->mk[C_SHIFT_FROM], base[t], from[t]);
            }
        }
    }
    struct mdl_mesh mesh;
    mdl_job_mesh(job, st, &mesh);
    if (!rc) rc = mdl_comms_make(&J->reg, p, &mesh);
    /* after the mesh's: a span must not find an expert group with its members (each is a
     * communicator of its own) */
    if (!rc && m->moe.experts > 0) rc = expert_groups(job, st, p, J);
    free(base);
    free(row);
    free(col);
    free(to);
    free(from);
    free(pil);
    return rc;
}

/* Whether marker g names a group over several replicas (the expert groups may: shadows keep
 * them). */
static bool crosses_replicas(const struct job_comms *J, int g)
{
    return mdl_comms_spans(&J->reg, g, MDL_DIM_DP) || g == J->mk[C_EP] || g == J->mk[C_ETP] ||
           g == J->mk[C_EDP];
}

/* Rank r as a shadow of replica 0's rank `first` (template src): the communication ops rep
 * keeps, mirroring theirs, with no compute, dependencies or launch cost. */
static int shadow_copy(enum mdl_replicas rep, const struct job_comms *G, const struct mdl_rank *src,
                       int first, struct mdl_rank *dst, int r)
{
    dst->ops = malloc(((size_t)src->nops + 1) * sizeof *dst->ops);
    if (!dst->ops) return -1;
    int n = 0;
    for (int k = 0; k < src->nops; k++) {
        const struct mdl_op *o = &src->ops[k];
        if (!mdl_op_is_coll((enum mdl_op_kind)o->kind)) continue;
        if (rep == MDL_REPLICAS_SHARED && !crosses_replicas(G, o->group)) continue;
        if (o->gran == MDL_GRAN_LATENCY) continue; /* its simulated members stand for the rest */
        struct mdl_op *c = &dst->ops[n++];
        *c = *o;
        c->group = mdl_comms_group(&G->reg, r, o->group);
        c->ndeps = 0;
        c->launch_s = 0;
        c->mirrored = 1;
        c->mirror_rank = first;
        c->mirror_op = k;
    }
    dst->nops = dst->cap = n;
    return 0;
}

/* Copies stage s's template (in its first rank) to every rank of the stage, each with its own
 * groups; unless rep is MDL_REPLICAS_FULL, replicas 1.. and the CP ranks 1.. of replica 0 as
 * shadows of replica 0's CP rank 0 (a folded job's context parallelism runs inside its folded
 * chunks: its CP ranks, as its replicas, run the same program at the same times). */
static int stage_copy(const struct mdl_job *job, const struct mdl_strategy *st,
                      enum mdl_replicas rep, const struct job_comms *G, struct mdl_program *p,
                      int s)
{
    const struct mdl_rank *src = &p->ranks[mdl_job_rank(job, st, s, 0, 0)];
    for (int d = 0; d < job->dp; d++) {
        for (int t = 0; t < mdl_strategy_gpus(st); t++) {
            int r = mdl_job_rank(job, st, s, d, t);
            if (d == 0 && t == 0) continue;
            struct mdl_rank *dst = &p->ranks[r];
            if ((d > 0 || t >= st->tp) && rep != MDL_REPLICAS_FULL) {
                p->shadow[r] = 1;
                if (shadow_copy(rep, G, src, mdl_job_rank(job, st, s, 0, t % st->tp), dst, r))
                    return -1;
                continue;
            }
            if (mdl_rank_copy(dst, src)) return -1;
            for (int k = 0; k < dst->nops; k++)
                dst->ops[k].group = mdl_comms_group(&G->reg, r, src->ops[k].group);
        }
    }
    return 0;
}

/* The template's markers replaced by the groups of its own rank, after every copy. */
static void stage_own(const struct mdl_job *job, const struct mdl_strategy *st,
                      const struct job_comms *G, struct mdl_program *p, int s)
{
    int first = mdl_job_rank(job, st, s, 0, 0);
    struct mdl_rank *own = &p->ranks[first];
    for (int k = 0; k < own->nops; k++)
        own->ops[k].group = mdl_comms_group(&G->reg, first, own->ops[k].group);
}

/* The GPUs an op of a stage template (p) takes part with: its group's members for a
 * communicator (a marker's from its spec and the mesh; a kind's own sub-axes at most the TP
 * group), 1 for an op on none. */
static int op_members(const struct job_comms *J, const struct mdl_mesh *mesh,
                      const struct mdl_program *p, const struct mdl_strategy *st, int g)
{
    if (g >= 0) return g < p->ngroups ? p->groups[g].n : 1;
    const struct mdl_comm_spec *c = mdl_comms_spec(&J->reg, g);
    if (!c) return 1;
    if (c->shape == MDL_COMM_PAIR || c->shape == MDL_COMM_ENDS) return 2;
    if (c->shape == MDL_COMM_GIVEN) return st->tp;
    int n = 1;
    for (int d = 0; d < MDL_NDIMS; d++)
        if (c->dims & MDL_DIM_BIT(d)) n *= mesh->size[d];
    return n;
}

/* mdl_job_ops, or with `members` mdl_job_cost: each op weighs 1, or its group's GPUs. */
static double job_count(const struct mdl_job *job, const struct mdl_strategy *st,
                        const struct mdl_model *m, const struct mdl_device *dev,
                        const struct mdl_framework *fw, const struct mdl_job_fold *fold,
                        bool members)
{
    struct tps_error e = {0};
    if (mdl_job_check(job, st, m, &e) != 0 || mdl_strategy_check(st, m, &e) != 0) return -1;
    /* every micro-batch makes the same ops: lower the fewest micro-batches the schedule allows
     * and scale (the iteration's few ops before and after scale with them: an upper bound) */
    struct mdl_job one = *job;
    one.micro_batches = job->schedule == MDL_SCHED_INTERLEAVED ? job->pp : 1;
    struct mdl_program p;
    if (mdl_program_init(&p, job->pp) != 0) return -1;
    /* the count stops past the bound it is checked against (times the replicas a lowering
     * with shadows divides it by): never more work than that */
    double scale = (double)job->micro_batches / one.micro_batches * mdl_strategy_gpus(st) * job->dp;
    p.max_ops = floor(mdl_max_ops() * mdl_job_grad_replicas(job, st) / scale) + 1;
    struct job_comms J;
    struct mdl_mesh mesh;
    mdl_job_mesh(job, st, &mesh);
    double n = job_comms_init(&one, st, m, &J) ? -1 : 0;
    for (int s = 0; s < job->pp && n >= 0; s++) {
        if (stage_lower(&one, st, m, dev, fw, fold, &J, &p, s, s) != 0) {
            n = -1;
            break;
        }
        const struct mdl_rank *r = &p.ranks[s];
        if (!members) n += r->nops;
        for (int k = 0; members && k < r->nops; k++)
            n += op_members(&J, &mesh, &p, st, r->ops[k].group);
    }
    int over = p.over;
    mdl_comms_release(&J.reg);
    mdl_program_release(&p);
    return over ? INFINITY : n < 0 ? -1 : n * scale;
}

double mdl_job_ops(const struct mdl_job *job, const struct mdl_strategy *st,
                   const struct mdl_model *m, const struct mdl_device *dev,
                   const struct mdl_framework *fw, const struct mdl_job_fold *fold)
{
    return job_count(job, st, m, dev, fw, fold, false);
}

double mdl_job_cost(const struct mdl_job *job, const struct mdl_strategy *st,
                    const struct mdl_model *m, const struct mdl_device *dev,
                    const struct mdl_framework *fw, const struct mdl_job_fold *fold)
{
    return job_count(job, st, m, dev, fw, fold, true);
}

int mdl_job_lower(const struct mdl_job *job, const struct mdl_strategy *st,
                  const struct mdl_model *m, const struct mdl_device *dev,
                  const struct mdl_framework *fw, const struct mdl_job_fold *fold,
                  enum mdl_replicas rep, struct mdl_program *out, struct tps_error *err)
{
    long gpus = mdl_job_gpus(job, st);
    if (gpus > 1000000)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "dp", "too many GPUs (%ld)", gpus);
    if (mdl_program_init(out, (int)gpus) != 0) return tps_error_oom(err);
    int rc = mdl_strategy_check(st, m, err);
    if (!rc) rc = mdl_job_check(job, st, m, err);
    if (rc) return rc;
    if (m->moe.skewed && mdl_strategy_ep(st) > 1 && !fold)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "fold",
                             "skewed routing runs in a job's folded layers only (run.fold: true): "
                             "op by op every GPU would copy the first one's experts");
    double nops = mdl_job_ops(job, st, m, dev, fw, fold);
    bool groups_only = rep == MDL_REPLICAS_GROUPS;
    if (groups_only) rep = MDL_REPLICAS_FULL;
    if (rep != MDL_REPLICAS_FULL && nops > 0) /* within the few ops of a shadow */
        nops /= mdl_job_grad_replicas(job, st);
    if (groups_only && nops > 0) /* the stages' templates alone hold ops */
        nops /= (double)mdl_strategy_gpus(st) * job->dp;
    if ((rc = mdl_ops_check(nops, "micro_batches", "fold the layers (run.fold: true)", err)))
        return rc;
    if (rep != MDL_REPLICAS_FULL && mdl_job_grad_replicas(job, st) > 1 &&
        !(out->shadow = calloc((size_t)gpus, sizeof *out->shadow)))
        return tps_error_oom(err);
    if (!out->shadow) rep = MDL_REPLICAS_FULL;
    out->layers = (int)m->layers;
    out->micro_batches = job->micro_batches;
    out->model_flop = mdl_job_model_flop(job, m);
    out->peak_flops = dev->peak_flops[mdl_model_gemm_dtype(m)];
    out->hw_queues = fw ? fw->connections : 0;
    struct job_comms G;
    rc = job_comms_init(job, st, m, &G);
    if (!rc) rc = groups_make(job, st, m, out, &G);
    for (int s = 0; !rc && s < job->pp; s++)
        rc = stage_lower(job, st, m, dev, fw, fold, &G, out, s, mdl_job_rank(job, st, s, 0, 0));
    for (int s = 0; !rc && !groups_only && s < job->pp; s++)
        rc = stage_copy(job, st, rep, &G, out, s);
    for (int s = 0; !rc && !groups_only && s < job->pp; s++)
        stage_own(job, st, &G, out, s);
    mdl_comms_release(&G.reg);
    return rc ? tps_error_oom(err) : TPS_OK;
}
