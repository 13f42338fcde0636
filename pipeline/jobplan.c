/* jobplan.c - enumerating, ranking and simulating whole-job configurations (see jobplan.h). */
#include "pipeline/jobplan.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "core/tune.h"
#include "models/compute.h"
#include "pipeline/pipeline.h"
#include "pipeline/planner.h"
#include "pipeline/plansim.h"

const char *const jobplan_knobs[JOBPLAN_NKNOBS] = {"zero", "overlap_grad_reduce",
                                                   "overlap_param_gather", "overlap_p2p_comm"};

int jobplan_knob(const struct mdl_job *j, int k)
{
    return k == 0   ? j->zero
           : k == 1 ? j->overlap_grad_reduce
           : k == 2 ? j->overlap_param_gather
                    : j->overlap_p2p_comm;
}

enum { RC_NONE, RC_SELECTIVE, RC_FULL };
static const char *const rc_names[] = {"none", "selective", "full"};

/* A layer's forward and backward for one (tp, sp, recompute, micro-batch), predicted once. */
static int recompute_of(const struct mdl_strategy *st)
{
    return st->recompute ? RC_FULL : st->selective ? RC_SELECTIVE : RC_NONE;
}

struct layer_time {
    struct mdl_strategy st;
    int b;
    double fwd_s, bwd_s;
    double compute_s; /* its kernels on the compute stream, forward and backward, on the GPU with
                         the most */
};

/* Whether two candidates run the same layer: TP kind, mesh, placement, overlap, recomputation. */
static bool same_layer(const struct mdl_strategy *x, const struct mdl_strategy *y)
{
    return x->kind == y->kind && x->tp == y->tp && x->cp == y->cp && x->cp_comm == y->cp_comm &&
           x->ep == y->ep && x->expert_tp == y->expert_tp && x->atp.d1 == y->atp.d1 &&
           x->atp.d2 == y->atp.d2 && x->atp.placement == y->atp.placement &&
           x->sequence_parallel == y->sequence_parallel && x->chunks == y->chunks &&
           x->oases == y->oases && x->tp_comm_overlap == y->tp_comm_overlap &&
           x->async_tp == y->async_tp && x->recompute == y->recompute &&
           x->selective == y->selective;
}

/* A collective's closed-form time on one shape's groups, remembered while the candidates of
 * that shape (its knob variants, enumerated together) are predicted. */
#define COLL_MEMO 16
struct coll_memo {
    int axis, st;
    enum mdl_op_kind k;
    double bytes, t;
};

struct plan {
    const struct scn_scenario *s;
    struct jobplan_row shape; /* the shape whose collectives memo[] holds */
    int nmemo;
    struct coll_memo memo[COLL_MEMO];
    int n, cap;
    struct jobplan_row *v;
    int ncache, cache_cap;
    struct layer_time *cache;
    struct tune_env_memo envs; /* the collectives' environments, by their groups */
    bool async_tp;             /* PyTorch's async TP searched (jobplan_opts, or the scenario's) */
};

static void strategy_of(const struct scn_scenario *s, int tp, int cp, int comm, int sp, int rc,
                        const int ep[2], struct mdl_strategy *st)
{
    *st = s->strategy;
    st->ep = ep[0];
    st->expert_tp = ep[1];
    st->kind = MDL_STRAT_1D;
    st->tp = st->atp.d1 = tp;
    st->cp = cp;
    st->cp_comm = (enum mdl_cp_comm)comm;
    st->atp.d2 = 1;
    st->sequence_parallel = sp;
    st->recompute = rc == RC_FULL;
    st->selective = rc == RC_SELECTIVE;
    st->chunks = 0;
    st->oases = false;
    st->tp_comm_overlap = false;
    st->async_tp = false;
    st->atp.extra_allgathers = false;
}

static struct mdl_model model_of(const struct scn_scenario *s, int b)
{
    struct mdl_model m = s->model;
    m.micro_batch = b;
    return m;
}

static int layer_time(struct plan *P, const struct mdl_strategy *st, int b, double *f, double *bw,
                      double *compute, struct tps_error *err)
{
    for (int i = 0; i < P->ncache; i++) {
        const struct layer_time *c = &P->cache[i];
        if (c->b == b && same_layer(&c->st, st)) {
            *f = c->fwd_s;
            *bw = c->bwd_s;
            *compute = c->compute_s;
            return TPS_OK;
        }
    }
    struct mdl_model m = model_of(P->s, b);
    struct mdl_program p;
    struct mdl_framework fw = mdl_strategy_framework(st, &P->s->framework);
    int rc2 = mdl_strategy_lower(st, &m, &P->s->device, &fw, 1, 1, &p, err);
    double c = rc2 ? 0 : planner_compute_bound(&p);
    double fwd = 0, total = rc2 ? -1 : planner_predict_phases(&p, &P->s->topo, &fwd, err);
    mdl_program_release(&p);
    if (rc2) return rc2;
    if (total < 0) return err->code ? err->code : TPS_EINVAL;
    if (tps_grow(&P->cache, &P->cache_cap, P->ncache + 1, sizeof *P->cache, 16))
        return tps_error_oom(err);
    P->cache[P->ncache++] = (struct layer_time){*st, b, fwd, total - fwd, c};
    *f = fwd;
    *bw = total - fwd;
    *compute = c;
    return TPS_OK;
}

/* Closed-form time of collective k of `bytes` on group g while groups others[] run the same. */
static double coll_time(struct plan *P, enum mdl_op_kind k, double bytes,
                        const struct mdl_group *const *set, int n, struct tps_error *err)
{
    const struct plat_topo *t = &P->s->topo;
    const struct tune_group_env *env;
    if (tune_group_env_memo(&P->envs, t, set, n, k, &env, err)) return -1;
    enum mdl_coll_algo algo = MDL_ALGO_AUTO;
    enum mdl_coll_proto proto = MDL_PROTO_AUTO;
    return tune_choose(env, &t->nccl, k, bytes, &algo, &proto, err);
}

/* Closed-form time of collective k of `bytes` on the groups of stage `st` that run it at once:
 * axis 0 the TP groups (one per replica), 1 the data-parallel groups (one per TP rank, over the
 * replicas and the CP ranks), 2 the point-to-point pairs to the next stage (one per GPU of the
 * stage), 3 the pairs of first and last stage that hold the tied embedding (one per GPU of
 * stage 0), 4 the columns (D1 axis) of the TP mesh (d2 per replica; 1D: the TP groups), 5 the
 * expert-data-parallel groups of a mixture of experts (expert_tp x ep of them, each over the
 * stage's GPUs holding the same experts), 6 the stage's GPUs as one group (FP8's amax
 * reduction). The TP groups and columns are those of CP rank 0. */
static double job_coll(struct plan *P, const struct jobplan_row *w, int axis, int st,
                       enum mdl_op_kind k, double bytes, struct tps_error *err)
{
    for (int i = 0; i < P->nmemo; i++) {
        const struct coll_memo *c = &P->memo[i];
        if (c->axis == axis && c->st == st && c->k == k && c->bytes == bytes) return c->t;
    }
    int tp = w->st.tp, dp = w->job.dp, d1, d2, G = mdl_strategy_gpus(&w->st);
    int R = mdl_job_grad_replicas(&w->job, &w->st), cp = mdl_strategy_cp(&w->st);
    mdl_strategy_mesh(&w->st, &d1, &d2);
    /* axis 5: the expert-data-parallel groups (models/job.c's expert layout) */
    int el = mdl_strategy_ep(&w->st) * mdl_strategy_etp(&w->st);
    int ng = axis == 0   ? dp
             : axis == 1 ? tp
             : axis == 4 ? dp * d2
             : axis == 5 ? el
             : axis == 6 ? 1
                         : G * dp;
    int per = axis == 0   ? tp
              : axis == 1 ? R
              : axis == 4 ? d1
              : axis == 5 ? G * dp / el
              : axis == 6 ? G * dp
                          : 2;
    int hop = axis == 3 ? w->job.pp - 1 : 1;
    int *ranks = malloc((size_t)ng * (size_t)per * sizeof *ranks);
    struct mdl_group *g = malloc((size_t)ng * sizeof *g);
    const struct mdl_group **set = malloc((size_t)ng * sizeof *set);
    double x = -1;
    if (!ranks || !g || !set) {
        tps_error_oom(err);
        goto done;
    }
    struct mdl_mesh mesh;
    mdl_job_mesh(&w->job, &w->st, &mesh);
    const struct mdl_strategy *S = &w->st;
    for (int i = 0; i < ng; i++) {
        int *r = ranks + (size_t)i * (size_t)per;
        for (int j = 0; j < per; j++)
            r[j] = axis == 5   ? mdl_job_mesh_rank(&mesh, S, st, (i + el * j) / G, (i + el * j) % G)
                   : axis == 6 ? mdl_job_mesh_rank(&mesh, S, st, j / G, j % G)
                   : axis == 0 ? mdl_job_mesh_rank(&mesh, S, st, i, j)
                   : axis == 4
                       ? mdl_job_mesh_rank(&mesh, S, st, i / d2, mdl_strategy_device(S, j, i % d2))
                   : axis == 1
                       ? mdl_job_mesh_rank(&mesh, S, st, j / cp, i + tp * (j % cp))
                       : mdl_job_mesh_rank(&mesh, S, (st + j * hop) % w->job.pp, i / G, i % G);
        g[i] = (struct mdl_group){.n = per, .ranks = r};
        set[i] = &g[i];
    }
    x = coll_time(P, k, bytes, set, ng, err);
    if (x >= 0 && P->nmemo < COLL_MEMO)
        P->memo[P->nmemo++] = (struct coll_memo){axis, st, k, bytes, x};
done:
    free(ranks);
    free(g);
    free(set);
    return x;
}

/* Whether two candidates (strategy, job, micro-batch) have the same groups: all but the
 * training knobs alike. */
static bool same_groups(const struct mdl_strategy *xs, const struct mdl_job *a, int xb,
                        const struct mdl_strategy *ys, const struct mdl_job *b, int yb)
{
    return same_layer(xs, ys) && xb == yb && a->pp == b->pp && a->dp == b->dp &&
           a->order == b->order && a->virtual_stages == b->virtual_stages &&
           a->micro_batches == b->micro_batches && a->schedule == b->schedule &&
           a->account_embedding == b->account_embedding &&
           a->first_stage_layers == b->first_stage_layers &&
           a->last_stage_layers == b->last_stage_layers;
}

static bool same_row_groups(const struct jobplan_row *x, const struct jobplan_row *y)
{
    return same_groups(&x->st, &x->job, x->micro_batch, &y->st, &y->job, y->micro_batch);
}

/* The closed form of jobplan.h for row w. */
static int predict(struct plan *P, struct jobplan_row *w, struct tps_error *err)
{
    const struct scn_scenario *s = P->s;
    if (!P->nmemo || !same_row_groups(&P->shape, w)) {
        P->shape = *w;
        P->nmemo = 0;
    }
    const struct mdl_device *dev = &s->device;
    double f = 0, b = 0, c = 0;
    int e = layer_time(P, &w->st, w->micro_batch, &f, &b, &c, err);
    if (e) return e;
    struct mdl_model m = model_of(s, w->micro_batch);
    int p = w->job.pp, v = w->job.virtual_stages, M = w->job.micro_batches, tp = w->st.tp;
    /* the bound: a stage's share of the layers' kernels, which the busiest stage has at least
     * (none where kernels may run faster than the model says: noise, or a mixture of experts'
     * routing) */
    bool bounded = !mdl_hetero_active(&s->hetero) && s->model.moe.experts <= 0;
    w->bound_s = bounded ? (double)M * (double)m.layers / p * c : 0;
    double n = (double)mdl_job_chunk_layers(&w->job, &m);
    double T = ((double)M * v + p - 1) * n * (f + b);
    /* a GPU's tokens: its CP rank's s/cp of each sequence */
    double tokens = (double)m.micro_batch * (double)m.seq / mdl_strategy_cp(&w->st);
    double wb = mdl_dtype_bytes(m.dtype);
    if (m.vocab > 0) {
        double lf = mdl_gemm_time(dev, m.dtype, 1, tokens, (double)m.vocab / tp, (double)m.hidden);
        double ce = mdl_mem_time(dev, 3 * 4.0 * tokens * (double)m.vocab / tp);
        T += M * (3 * lf + ce);
    }
    double act = tokens * (double)m.hidden * wb / tp;
    if (mdl_job_amax_ranks(&w->job, &w->st, &m) > 1) {
        /* FP8's amax all-reduces after every chunk's forward and backward, which the compute
         * waits for: on every step of the schedule's path */
        int axis = w->job.tp_only_amax_red ? 0 : 6;
        double af = job_coll(P, w, axis, 0, MDL_OP_ALL_REDUCE,
                             mdl_job_amax_bytes(&w->st, &m, 0, (int)n, true), err);
        double ab = job_coll(P, w, axis, 0, MDL_OP_ALL_REDUCE,
                             mdl_job_amax_bytes(&w->st, &m, 0, (int)n, false), err);
        if (af < 0 || ab < 0) return err->code ? err->code : TPS_EINVAL;
        T += ((double)M * v + p - 1) * (af + ab);
    }
    if (p > 1) {
        double x = 0; /* the slowest pair of neighbouring stages sets the pace */
        for (int st = 0; st < (v > 1 ? p : p - 1); st++) {
            double y = job_coll(P, w, 2, st, MDL_OP_SEND_RECV, act, err);
            if (y < 0) return err->code ? err->code : TPS_EINVAL;
            if (y > x) x = y;
        }
        /* each step's input comes from a neighbour that produced it one step earlier: the
         * schedule's loop through the stages slips by one message each way per step; with
         * overlap_p2p_comm only the fill and drain do, and the warm-up's and cool-down's turns
         * from one chunk to the next (stage 0 waits for the p hops of a loop through the stages,
         * with no step of the other direction to run meanwhile: p messages a turn); in the
         * steady state a step's messages show only where they outlast the other direction's
         * step they run under */
        if (w->job.overlap_p2p_comm && v > 1) {
            double uf = x - n * b, ub = x - n * f;
            double steady = (double)M * v - mdl_job_warmup_steps(&w->job, 0);
            T += (p - 1) * 2.0 * x + 2.0 * (v - 1) * p * x +
                 steady * ((uf > 0 ? uf : 0) + (ub > 0 ? ub : 0));
        } else {
            T += ((double)M * v + p - 1) * 2.0 * x;
        }
        int d1, d2;
        mdl_strategy_mesh(&w->st, &d1, &d2);
        if (!mdl_strategy_shards_activations(&w->st) && d1 > 1) { /* over the mesh's columns */
            double g = job_coll(P, w, 4, 0, MDL_OP_ALL_GATHER, act * d1, err);
            if (g < 0) return err->code ? err->code : TPS_EINVAL;
            T += (double)M * v * g;
        }
    }
    double gb = mdl_job_grad_bytes(&w->job, &m),
           params = mdl_job_stage_params(&w->job, &w->st, &m, 0);
    int R = mdl_job_grad_replicas(&w->job, &w->st), z = R > 1 ? w->job.zero : 0;
    if (R > 1) {
        double lp = mdl_strategy_layer_params(&w->st, &m), layers = v * n * lp;
        double buckets = v * ceil(n / mdl_job_bucket_layers(&w->job, &w->st, &m));
        /* what the tail reduces and gathers: all the parameters, or without the layers that
         * ZeRO-2 reduces and ZeRO-3 gathers during the steps */
        double red = z >= 2 ? params - layers : params, gat = z == 3 ? params - layers : params;
        /* the experts' share goes over their own replicas, after the dense part */
        double ex = mdl_job_stage_expert_params(&w->job, &w->st, &m, 0);
        double x = z ? job_coll(P, w, 1, 0, MDL_OP_REDUCE_SCATTER, (red - ex) * gb, err)
                     : job_coll(P, w, 1, 0, MDL_OP_ALL_REDUCE, (red - ex) * gb, err);
        /* the gathers in the layers' bytes (FP8's with fp8_param_gather; the embedding's share
         * too, a bound) */
        double pb = mdl_job_gather_bytes(&w->job, &m);
        double y = z ? job_coll(P, w, 1, 0, MDL_OP_ALL_GATHER, (gat - ex) * pb, err) : 0;
        if (x < 0 || y < 0) return err->code ? err->code : TPS_EINVAL;
        if (ex > 0 && mdl_job_expert_replicas(&w->job, &w->st) > 1) {
            double xe =
                job_coll(P, w, 5, 0, z ? MDL_OP_REDUCE_SCATTER : MDL_OP_ALL_REDUCE, ex * gb, err);
            double ye = z ? job_coll(P, w, 5, 0, MDL_OP_ALL_GATHER, ex * pb, err) : 0;
            if (xe < 0 || ye < 0) return err->code ? err->code : TPS_EINVAL;
            x += xe;
            y += ye;
        }
        /* overlapped: the buckets run under the last backward (forward) of every chunk, so what
         * stays exposed is the last bucket, or what the compute cannot cover */
        if (w->job.overlap_grad_reduce && z < 2) {
            double cover = x - v * n * b;
            x = cover > x / buckets ? cover : x / buckets;
        }
        if (w->job.overlap_param_gather) {
            double cover = y - v * n * f;
            y = cover > y / buckets ? cover : y / buckets;
        }
        T += x + y;
        if (z >= 2) { /* every step's buckets, under its compute where they fit */
            double rs = job_coll(P, w, 1, 0, MDL_OP_REDUCE_SCATTER, n * lp * gb, err);
            double ag = z == 3 ? job_coll(P, w, 1, 0, MDL_OP_ALL_GATHER, n * lp * wb, err) : 0;
            if (rs < 0 || ag < 0) return err->code ? err->code : TPS_EINVAL;
            double fe = ag - n * f, be = ag + rs - n * b;
            T += (double)M * v * ((fe > 0 ? fe : 0) + (be > 0 ? be : 0)) + rs / (buckets / v);
        }
    }
    if (m.vocab > 0 && p > 1 && !w->job.untied_embeddings) { /* after it, on the same stream */
        double x = job_coll(P, w, 3, 0, MDL_OP_ALL_REDUCE,
                            (double)m.vocab * (double)m.hidden / tp * gb, err);
        if (x < 0) return err->code ? err->code : TPS_EINVAL;
        T += x;
    }
    w->predicted_s = T + mdl_job_update_time(&w->job, &w->st, &m, dev, params);
    return TPS_OK;
}

/* w's configuration in words; the training knobs where the planner searched them (pinned: the
 * scenario's SCN_PIN_* it keeps). */
static void describe(struct jobplan_row *w, unsigned pinned)
{
    char sched[32] = "1f1b";
    if (w->job.schedule == MDL_SCHED_INTERLEAVED)
        snprintf(sched, sizeof sched, "interleaved x%d", w->job.virtual_stages);
    int rc = recompute_of(&w->st);
    char kind[48] = "";
    if (w->st.kind == MDL_STRAT_2D)
        snprintf(kind, sizeof kind, " 2d %dx%d %s", w->st.atp.d1, w->st.atp.d2,
                 w->st.atp.placement == MDL_COLUMN_FIRST ? "column-first" : "row-first");
    else if (w->st.chunks > 1)
        snprintf(kind, sizeof kind, " %d chunks", w->st.chunks);
    else if (w->st.oases)
        snprintf(kind, sizeof kind, " oases");
    else if (w->st.tp_comm_overlap)
        snprintf(kind, sizeof kind, " +tp-overlap");
    else if (w->st.async_tp)
        snprintf(kind, sizeof kind, " +async-tp");
    char cp[64] = "";
    int n = 0;
    if (w->st.cp > 1)
        n = snprintf(cp, sizeof cp, ", cp %d%s%s", w->st.cp, w->st.cp_comm ? " " : "",
                     w->st.cp_comm ? mdl_cp_comm_names[w->st.cp_comm] : "");
    if ((w->st.ep > 1 || w->st.expert_tp > 0) && n >= 0 && (size_t)n < sizeof cp)
        snprintf(cp + n, sizeof cp - (size_t)n, ", ep %d etp %d", mdl_strategy_ep(&w->st),
                 mdl_strategy_etp(&w->st));
    snprintf(w->desc, sizeof w->desc, "tp %d%s%s%s, pp %d%s%s%s, dp %d, mb %d, recompute %s",
             w->st.tp, kind, w->st.sequence_parallel ? " +sp" : "", cp, w->job.pp,
             w->job.pp > 1 ? " " : "", w->job.pp > 1 ? sched : "",
             w->job.account_embedding ? " +emb/loss layers" : "", w->job.dp, w->micro_batch,
             rc_names[rc]);
    char knobs[64] = "";
    bool r = !(pinned & SCN_PIN_OVERLAP_GRAD_REDUCE) && w->job.overlap_grad_reduce,
         g = !(pinned & SCN_PIN_OVERLAP_PARAM_GATHER) && w->job.overlap_param_gather;
    int k = pinned & SCN_PIN_ZERO ? 0 : snprintf(knobs, sizeof knobs, ", zero %d", w->job.zero);
    if (r || g)
        k += snprintf(knobs + k, sizeof knobs - (size_t)k, ", overlap %s%s%s", r ? "grad" : "",
                      r && g ? "+" : "", g ? "param" : "");
    if (!(pinned & SCN_PIN_OVERLAP_P2P_COMM) && w->job.overlap_p2p_comm && k >= 0 &&
        (size_t)k < sizeof knobs)
        snprintf(knobs + k, sizeof knobs - (size_t)k, ", p2p overlap");
    size_t n0 = strlen(w->desc);
    if (n0 < sizeof w->desc) snprintf(w->desc + n0, sizeof w->desc - n0, "%s", knobs);
}

/* Adds the candidate if it fits the model; memory is computed here. */
static int consider(struct plan *P, const struct mdl_strategy *st, const struct mdl_job *job, int b)
{
    struct mdl_model m = model_of(P->s, b);
    struct tps_error e = {0};
    if (mdl_strategy_check(st, &m, &e) || mdl_job_check(job, st, &m, &e)) return 0;
    if (tps_grow(&P->v, &P->cap, P->n + 1, sizeof *P->v, 64)) return -1;
    struct jobplan_row *w = &P->v[P->n++];
    memset(w, 0, sizeof *w);
    w->st = *st;
    w->job = *job;
    w->micro_batch = b;
    struct mdl_framework fw = mdl_strategy_framework(st, &P->s->framework);
    mdl_job_memory(job, st, &m, &fw, &w->mem);
    w->fits = w->mem.total <= mdl_device_usable(&P->s->device);
    describe(w, P->s->pinned);
    return 0;
}

/* The fewest tokens of each sequence a CP rank holds in a candidate: below them a ring step's
 * attention is too small to hide its transfer and its launches (NVIDIA's long-context recipes
 * keep 16K or more a rank; Llama 3 405B ran 8K). */
#define CP_MIN_TOKENS 1024

/* The context-parallel degrees a job of N GPUs at TP degree tp may take: powers of two whose
 * 2 x cp chunks divide the sequence, CP ranks holding CP_MIN_TOKENS or more. */
static bool cp_fits(const struct scn_scenario *s, int N, int tp, int cp)
{
    return (N / tp) % cp == 0 &&
           (cp == 1 || (s->model.seq % (2L * cp) == 0 && s->model.seq / cp >= CP_MIN_TOKENS));
}

/* The expert layouts a job of N GPUs at tp x cp = G with dp replicas may take: (ep, expert_tp)
 * pairs, ep dividing the experts and expert_tp 1 or tp, their product dividing the stage's
 * G x dp GPUs; the scenario's own for a dense model. Returns how many. */
#define MAX_EXPERT_LAYOUTS 32
static int expert_layouts(const struct scn_scenario *s, int tp, int Gdp,
                          int out[MAX_EXPERT_LAYOUTS][2])
{
    int E = s->model.moe.experts, n = 0;
    if (E <= 0) {
        out[0][0] = s->strategy.ep;
        out[0][1] = s->strategy.expert_tp;
        return 1;
    }
    for (int ep = 1; ep <= E && n < MAX_EXPERT_LAYOUTS; ep *= 2)
        for (int t = 0; t < (tp > 1 ? 2 : 1) && n < MAX_EXPERT_LAYOUTS; t++) {
            int etp = t ? 1 : tp;
            if (E % ep || Gdp % (ep * etp) || s->model.moe.expert_ffn % etp) continue;
            out[n][0] = ep;
            out[n][1] = t ? 1 : 0; /* 0: expert_tp = tp, Megatron-LM's default */
            n++;
        }
    return n;
}

/* The training knobs a job of pp stages may take: the ZeRO stage (0, the distributed optimizer
 * 1, and where pp = 1 also 2 and 3: DeepSpeed's pipeline engine refuses stages 2 and 3, which
 * reduce or gather every micro-batch's buckets), overlap_grad_reduce where the stage leaves the
 * reduction to the tail (0 and 1), overlap_param_gather with a sharded optimizer that gathers
 * after the step (1 and 2). A knob the scenario gives is kept (scn_scenario.pinned). The job's
 * other settings are the scenario's. Returns how many (MAX_KNOBS or fewer). */
#define MAX_KNOBS 9
static int knob_list(const struct scn_scenario *s, int pp, struct mdl_job out[MAX_KNOBS])
{
    const struct mdl_job *j = &s->job;
    int n = 0, z0 = 0, z1 = pp > 1 ? 1 : 3;
    if (s->pinned & SCN_PIN_ZERO) z0 = z1 = j->zero;
    for (int z = z0; z <= z1; z++) {
        bool free_r = !(s->pinned & SCN_PIN_OVERLAP_GRAD_REDUCE) && z < 2;
        bool free_g = !(s->pinned & SCN_PIN_OVERLAP_PARAM_GATHER) && (z == 1 || z == 2);
        for (int r = 0; r <= (int)free_r; r++)
            for (int g = 0; g <= (int)free_g && n < MAX_KNOBS; g++) {
                out[n] = *j;
                out[n].zero = z;
                out[n].overlap_grad_reduce = free_r ? r : j->overlap_grad_reduce && z < 2;
                out[n].overlap_param_gather =
                    free_g ? g : j->overlap_param_gather && (z == 1 || z == 2);
                n++;
            }
    }
    return n;
}

static int enumerate(struct plan *P, int N, long gb)
{
    const struct scn_scenario *s = P->s;
    int per_machine = s->topo.machines > 0 ? s->topo.ngpus / s->topo.machines : s->topo.ngpus;
    long L = s->model.layers;
    static const int mbs[] = {1, 2, 4, 8};
    for (int tp = 1; tp <= N && tp <= per_machine; tp++) {
        if (N % tp) continue;
        /* tp inside a machine; cp of each way of passing the keys and values */
        for (int cp = 1; cp <= N / tp; cp *= 2) {
            if (!cp_fits(s, N, tp, cp)) continue;
            for (int comm = 0; comm < (cp > 1 ? 3 : 1); comm++) {
                int G = tp * cp;
                for (int pp = 1; pp <= L && pp <= N / G; pp++) {
                    /* an even split, or else the embedding and the loss counted as layers
                     * (Llama 3 405B's 126 layers over 16 stages) */
                    bool acc = L % pp && pp > 1 && (L + 2) % pp == 0;
                    long Lx = L + (acc ? 2 : 0);
                    if ((L % pp && !acc) || (N / G) % pp) continue;
                    int dp = N / G / pp;
                    struct mdl_job knobs[MAX_KNOBS];
                    int nk = knob_list(s, pp, knobs);
                    for (int bi = 0; bi < 4; bi++) {
                        int b = mbs[bi];
                        if (gb % ((long)dp * b)) continue;
                        long M = gb / ((long)dp * b);
                        if (M > 100000) continue;
                        for (int v = 1; v <= 8; v++) {
                            if (v > 1 && (pp < 2 || Lx % ((long)pp * v) || M % pp)) continue;
                            int lay[MAX_EXPERT_LAYOUTS][2];
                            int nl = expert_layouts(s, tp, G * dp, lay);
                            /* overlap_p2p_comm on interleaved candidates alone (Megatron-LM
                             * turns it off for the others): both, or the scenario's */
                            bool free_o = v > 1 && !(s->pinned & SCN_PIN_OVERLAP_P2P_COMM);
                            for (int e = 0; e < nl; e++)
                                for (int rc = RC_NONE; rc <= RC_FULL; rc++)
                                    for (int sp = 0; sp <= (tp > 1); sp++)
                                        for (int k = 0; k < nk * (free_o ? 2 : 1); k++) {
                                            struct mdl_job job = knobs[k % nk];
                                            job.first_stage_layers = job.last_stage_layers = 0;
                                            job.account_embedding = job.account_loss = acc;
                                            job.pp = pp;
                                            job.dp = dp;
                                            job.micro_batches = (int)M;
                                            job.virtual_stages = v;
                                            job.schedule =
                                                v > 1 ? MDL_SCHED_INTERLEAVED : MDL_SCHED_1F1B;
                                            job.overlap_p2p_comm =
                                                free_o ? k >= nk : job.overlap_p2p_comm && v > 1;
                                            struct mdl_strategy st;
                                            strategy_of(s, tp, cp, comm, sp, rc, lay[e], &st);
                                            if (consider(P, &st, &job, b)) return -1;
                                        }
                        }
                    }
                }
            }
        }
    }
    return 0;
}

/* Whether the plan already holds this candidate: its groups and its training knobs. */
static bool planned(const struct plan *P, const struct mdl_strategy *st, const struct mdl_job *job,
                    int b)
{
    for (int i = 0; i < P->n; i++) {
        const struct jobplan_row *w = &P->v[i];
        bool same = same_groups(&w->st, &w->job, w->micro_batch, st, job, b);
        for (int k = 0; same && k < JOBPLAN_NKNOBS; k++)
            same = jobplan_knob(&w->job, k) == jobplan_knob(job, k);
        if (same) return true;
    }
    return false;
}

/* The other TP kinds on the job shape of 1D candidate w (its tp, pp, dp, micro-batch, schedule
 * and recomputation): ATP's 2D meshes d1 x d2 = tp in both placements (no sequence parallelism,
 * which is 1D's), ATP's chunk overlap (2 and 4 chunks), the Oases schedule and, with sequence
 * parallelism, Transformer Engine's TP overlap and (P->async_tp) PyTorch's async TP. Those the
 * model does not allow are not added. Returns how many were added, or -1 (out of memory). */
static int add_kinds(struct plan *P, const struct jobplan_row *w)
{
    struct mdl_strategy v[16];
    int nv = 0, tp = w->st.tp;
    for (int d1 = 2; d1 < tp; d1++) {
        if (tp % d1) continue;
        for (int pl = MDL_ROW_FIRST; pl <= MDL_COLUMN_FIRST; pl++) {
            struct mdl_strategy st = w->st;
            st.kind = MDL_STRAT_2D;
            st.atp.d1 = d1;
            st.atp.d2 = tp / d1;
            st.atp.placement = (enum mdl_placement)pl;
            st.sequence_parallel = false;
            if (nv < 16) v[nv++] = st;
        }
    }
    for (int k = 2; k <= 4 && tp > 1; k *= 2) {
        struct mdl_strategy st = w->st;
        st.chunks = k;
        if (nv < 16) v[nv++] = st;
    }
    if (tp > 1 && nv < 16) {
        v[nv] = w->st;
        v[nv++].oases = true;
    }
    /* Transformer Engine's TP overlap and, where asked, PyTorch's async TP: where sequence
     * parallelism gives them their collectives */
    if (tp > 1 && w->st.sequence_parallel && nv < 16) {
        v[nv] = w->st;
        v[nv++].tp_comm_overlap = true;
    }
    if (tp > 1 && w->st.sequence_parallel && P->async_tp && nv < 16) {
        v[nv] = w->st;
        v[nv++].async_tp = true;
    }
    int added = 0;
    for (int i = 0; i < nv; i++) {
        if (planned(P, &v[i], &w->job, w->micro_batch)) continue;
        int n0 = P->n;
        if (consider(P, &v[i], &w->job, w->micro_batch)) return -1;
        added += P->n - n0;
    }
    return added;
}

static int by_prediction(const void *a, const void *b)
{
    const struct jobplan_row *x = a, *y = b;
    return (x->predicted_s > y->predicted_s) - (x->predicted_s < y->predicted_s);
}

static int by_result(const void *a, const void *b)
{
    const struct jobplan_row *x = a, *y = b;
    return planner_result_cmp(x->predicted_s, x->simulated_s, y->predicted_s, y->simulated_s);
}

int jobplan_simulate(const struct scn_scenario *s, struct jobplan_row *w, struct tps_error *err)
{
    struct report r;
    int rc = pipeline_simulate_variant(s, &w->st, &w->job, w->micro_batch, &r, err);
    if (!rc) {
        w->simulated_s = r.iteration_s;
        w->bubble_s = r.pipeline_bubble_s;
        w->compute_s = r.breakdown.compute_s;
        memcpy(w->exposed_dim_s, r.exposed_dim_s, sizeof w->exposed_dim_s);
        memcpy(w->dim_used, r.dim_used, sizeof w->dim_used);
    }
    report_release(&r);
    return rc;
}

/* The best simulated row again with Transformer Engine's switches toggled, one at a time: FP8
 * where the device has FP8 tensor cores, the TP overlap where it has sequence parallelism on 1D
 * without ATP's chunks or Oases (the variant checked as any candidate); the variants simulate
 * `jobs` at a time (plansim.h), beside the best itself where only one candidate simulates (it is
 * then the best whatever its time). */
struct buy_row {
    struct jobplan_row x; /* the variant */
    int k;                /* JOBPLAN_BUY_* */
    int async_tp;         /* the TP overlap toggled is async TP's (jobplan_buy) */
};

static int simulate_buy(void *ctx, int i, void *row, struct tps_error *err)
{
    (void)i;
    const struct scn_scenario *s = ctx;
    struct buy_row *r = row;
    struct scn_scenario *v = malloc(sizeof *v);
    if (!v) return tps_error_oom(err);
    *v = *s; /* borrowed: nothing of it is released */
    if (r->k == JOBPLAN_BUY_FP8) v->model.fp8 = !s->model.fp8;
    bool on = r->k == JOBPLAN_BUY_FP8 ? v->model.fp8 : r->x.st.tp_comm_overlap || r->x.st.async_tp;
    if (r->k < 0)
        fprintf(stderr, "tpsim plan: simulating 1/1: %s\n", r->x.desc);
    else
        fprintf(stderr, "tpsim plan: simulating the best with %s %s\n",
                r->k == JOBPLAN_BUY_FP8 ? "FP8"
                : r->async_tp           ? "async TP"
                                        : "the TP overlap",
                on ? "on" : "off");
    int rc = jobplan_simulate(v, &r->x, err);
    free(v);
    return rc;
}

/* The variants of w to simulate for info->buys into v (JOBPLAN_NBUYS entries); their count. */
static int buy_rows(const struct scn_scenario *s, const struct jobplan_row *w,
                    struct jobplan_info *info, struct buy_row *v)
{
    int n = 0;
    for (int k = 0; k < JOBPLAN_NBUYS; k++) {
        struct jobplan_buy *b = &info->buys[k];
        struct jobplan_row x = *w;
        struct mdl_model m = s->model;
        if (k == JOBPLAN_BUY_FP8) {
            if (!(s->device.peak_flops[MDL_FP8] > 0)) continue;
            m.fp8 = !s->model.fp8;
            b->on = m.fp8;
            if (!b->on) x.job.fp8_param_gather = false; /* FP8 weights go with FP8 */
        } else if (w->st.async_tp) {
            x.st.async_tp = false;
            b->on = false;
            b->async_tp = 1;
        } else {
            x.st.tp_comm_overlap = !w->st.tp_comm_overlap;
            b->on = x.st.tp_comm_overlap;
        }
        m.micro_batch = w->micro_batch;
        struct tps_error e = {0};
        if (mdl_strategy_check(&x.st, &m, &e) || mdl_job_check(&x.job, &x.st, &m, &e)) continue;
        v[n++] = (struct buy_row){x, k, b->async_tp};
    }
    return n;
}

/* Simulates rows v[0..n) `jobs` at a time; a row of k < 0 is a candidate itself (w, whose
 * simulated fields it fills), the others fill info->buys. */
static int buys_run(const struct scn_scenario *s, struct buy_row *v, int n, int jobs,
                    struct jobplan_row *w, struct jobplan_info *info, struct tps_error *err)
{
    struct plansim sim = {.rows = v,
                          .n = n,
                          .size = sizeof *v,
                          .desc_off = offsetof(struct buy_row, x.desc),
                          .jobs = jobs,
                          .simulate = simulate_buy,
                          .ctx = (void *)s};
    int rc = plansim_run(&sim, NULL, err);
    for (int i = 0; !rc && i < n; i++) {
        if (v[i].k < 0) {
            *w = v[i].x;
            continue;
        }
        info->buys[v[i].k].tried = 1;
        info->buys[v[i].k].simulated_s = v[i].x.simulated_s;
    }
    return rc;
}

/* Keeps candidates [from, n) that fit (all with ignore_memory) after the first `from`; the
 * least memory any of them needs goes to *least. Returns the new count. */
static int keep(struct plan *P, const struct jobplan_opts *o, int from, double *least)
{
    int kept = from;
    for (int i = from; i < P->n; i++) {
        if (*least < 0 || P->v[i].mem.total < *least) *least = P->v[i].mem.total;
        if (P->v[i].fits || o->ignore_memory) P->v[kept++] = P->v[i];
    }
    return kept;
}

/* The scenario and rows of a plan whose chosen candidates simulate (plansim.h). */
struct sims_ctx {
    const struct scn_scenario *s;
    int n;
};

static int simulate_row(void *ctx, int k, void *row, struct tps_error *err)
{
    const struct sims_ctx *C = ctx;
    struct jobplan_row *w = row;
    fprintf(stderr, "tpsim plan: simulating %d/%d: %s\n", k + 1, C->n, w->desc);
    return jobplan_simulate(C->s, w, err);
}

int jobplan_run(const struct scn_scenario *s, const struct jobplan_opts *o,
                struct jobplan_row **rows, int *nrows, struct jobplan_info *info,
                struct tps_error *err)
{
    struct plan P = {.s = s, .async_tp = o->async_tp || s->strategy.async_tp};
    *rows = NULL;
    *nrows = 0;
    memset(info, 0, sizeof *info);
    info->gpus = (int)mdl_job_gpus(&s->job, &s->strategy);
    info->global_batch = s->global_batch;
    info->model_flop = mdl_job_model_flop(&s->job, &s->model);
    int rc = enumerate(&P, info->gpus, s->global_batch) ? tps_error_oom(err) : TPS_OK;
    info->candidates = P.n;
    if (!rc && P.n == 0)
        rc = tps_error_set(err, TPS_EINVAL, s->path, 0, 0, "training.global_batch",
                           "no (tp, pp, dp, micro-batch) of %d GPUs fits the model and a global "
                           "batch of %ld",
                           info->gpus, s->global_batch);
    double least = -1;
    int kept = rc ? 0 : keep(&P, o, 0, &least);
    info->dropped = P.n - kept;
    P.n = kept;
    if (!rc && P.n == 0)
        rc = tps_error_set(
            err, TPS_EINVAL, s->path, 0, 0, "strategy",
            "none of the %d candidates on %d GPUs fits in the %.1f GB usable of %s: the "
            "smallest needs %.1f GB per GPU (use --ignore-memory to rank them "
            "anyway)",
            info->candidates, info->gpus, mdl_device_usable(&s->device) / 1e9, s->device.name,
            least / 1e9);
    for (int i = 0; !rc && i < P.n; i++)
        rc = predict(&P, &P.v[i], err);
    if (!rc) qsort(P.v, (size_t)P.n, sizeof *P.v, by_prediction);
    /* the other TP kinds on the job shapes of the best 1D candidates */
    int n1 = P.n, added = 0;
    struct jobplan_row base[JOBPLAN_KIND_BASES];
    int nb = 0;
    for (int i = 0; !rc && i < n1 && nb < JOBPLAN_KIND_BASES; i++) {
        bool seen = false; /* the shape with other training knobs: its best knobs are a base */
        for (int j = 0; j < nb && !seen; j++)
            seen = same_row_groups(&base[j], &P.v[i]);
        if (P.v[i].st.tp > 1 && !seen) base[nb++] = P.v[i];
    }
    for (int i = 0; !rc && i < nb; i++) {
        int a = add_kinds(&P, &base[i]);
        if (a < 0) rc = tps_error_oom(err);
        added += a > 0 ? a : 0;
    }
    if (!rc && added) {
        info->candidates += added;
        int k = keep(&P, o, n1, &least);
        info->dropped += P.n - k;
        P.n = k;
        for (int i = n1; !rc && i < P.n; i++)
            rc = predict(&P, &P.v[i], err);
        if (!rc) qsort(P.v, (size_t)P.n, sizeof *P.v, by_prediction);
    }
    const struct plan_hook *h = o->hook;
    int nsim = rc ? 0 : o->simulate < P.n ? o->simulate : P.n;
    struct sims_ctx C = {.s = s, .n = nsim};
    struct plansim sim = {.rows = P.v,
                          .n = nsim,
                          .size = sizeof *P.v,
                          .desc_off = offsetof(struct jobplan_row, desc),
                          .jobs = o->jobs,
                          .hook = h,
                          .simulate = simulate_row,
                          .ctx = &C,
                          .prune = 1,
                          .bound_off = offsetof(struct jobplan_row, bound_s),
                          .sim_off = offsetof(struct jobplan_row, simulated_s),
                          .pruned_off = offsetof(struct jobplan_row, pruned)};
    /* one candidate to simulate: it is the best, simulated beside its variants */
    bool together = !rc && nsim == 1 && !h;
    struct buy_row bv[JOBPLAN_NBUYS + 1];
    if (together) {
        bv[0] = (struct buy_row){P.v[0], -1, 0};
        int nv = 1 + buy_rows(s, &P.v[0], info, bv + 1);
        rc = buys_run(s, bv, nv, o->jobs, &P.v[0], info, err);
    } else if (!rc) { /* shards (a hook) simulate their share unpruned */
        rc = plansim_run(&sim, NULL, err);
        for (int i = 0; i < nsim; i++)
            info->pruned += P.v[i].pruned;
    }
    free(P.cache);
    tune_env_memo_release(&P.envs);
    if (!rc && !together) {
        qsort(P.v, (size_t)P.n, sizeof *P.v, by_result);
        if (P.n > 0 && P.v[0].simulated_s > 0 && !(h && h->no_variants))
            rc = buys_run(s, bv, buy_rows(s, &P.v[0], info, bv), o->jobs, NULL, info, err);
    }
    if (rc) {
        free(P.v);
        return rc;
    }
    *rows = P.v;
    *nrows = P.n;
    return TPS_OK;
}
