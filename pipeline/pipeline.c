/* pipeline.c - scenario or trace -> program -> check and tune -> simulation -> report (see
 * pipeline.h). */
#include "pipeline/pipeline_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "core/trace.h"
#include "core/tune.h"
#include "models/kind.h"
#include "models/strategy.h"
#include "platforms/spec.h"
#include "sim/engine.h"

/* With TPSIM_TIMING set, prints how long `what` took since `since` (tps_clock_now). */
static void timing_note(const char *what, double since)
{
    if (getenv("TPSIM_TIMING"))
        fprintf(stderr, "tpsim timing: %s %.3f s\n", what, tps_clock_now() - since);
}

/* A job whose op-by-op simulation would cost more than this many op-members (mdl_job_cost: each
 * op weighed by the GPUs it takes part with) is folded when run.fold is auto. By ops alone, a job
 * of a few ops per GPU whose data-parallel collectives span 128 replicas ran op by op for 15 s
 * where folded it took 0.25 s. */
#define FOLD_AUTO_COST 1e6

/* A plain run's layers are folded from this many up. */
#define FOLD_MIN_LAYERS 6

/* The unit whose own traffic share_links looks at: a replica, one TP group, or a stage. */
enum unit { UNIT_REPLICA, UNIT_TP_GROUP, UNIT_STAGE };

static int unit_of(const struct scn_scenario *s, enum unit u, int rank)
{
    int st, d, t;
    mdl_job_coords(&s->job, &s->strategy, rank, &st, &d, &t);
    /* a replica's CP ranks are units of their own: they run its program side by side */
    int c = t / s->strategy.tp;
    return u == UNIT_REPLICA ? d * mdl_strategy_cp(&s->strategy) + c
           : u == UNIT_STAGE ? st
                             : st * s->job.dp + d;
}

/* Whether the units' own traffic (every group inside one unit: for a replica its TP groups,
 * pipeline neighbours and tied embedding) can slow another unit: some link, direction or
 * forwarding node that carries flows of two units or more, whose standalone bandwidths together
 * exceed its capacity. All of a unit's ring and point-to-point flows are counted as concurrent,
 * so the answer errs towards "yes". p: a program with every unit. Returns 1, 0, or -1. */
static int share_links(const struct mdl_program *p, const struct scn_scenario *s,
                       const struct plat_topo *t, enum unit u)
{
    if (t->xml_path[0]) return 1; /* a user's SimGrid file: routes unknown here */
    size_t nslots = 2 * (size_t)t->nlinks + (size_t)t->nnodes;
    double *load = calloc(nslots + 1, sizeof *load);
    int *owner = malloc((nslots + 1) * sizeof *owner);
    if (!load || !owner) {
        free(load);
        free(owner);
        return -1;
    }
    for (size_t i = 0; i < nslots; i++)
        owner[i] = -1;
    struct plat_route rt;
    for (int g = 0; g < p->ngroups; g++) {
        const struct mdl_group *G = &p->groups[g];
        int d = unit_of(s, u, G->ranks[0]), one = 1;
        for (int m = 1; m < G->n && one; m++)
            one = unit_of(s, u, G->ranks[m]) == d;
        for (int m = 0; one && G->n > 1 && m < G->n; m++) {
            if (plat_topo_route(t, G->ranks[m], G->ranks[(m + 1) % G->n], &rt) != 0) continue;
            for (int h = 0; h < rt.nhops; h++) {
                const struct plat_hop *hp = &rt.hops[h];
                size_t k = hp->link < 0 ? 2 * (size_t)t->nlinks + (size_t)hp->node
                                        : 2 * (size_t)hp->link +
                                              (t->links[hp->link].shared || hp->up ? 0 : 1);
                load[k] += rt.bw_Bps;
                owner[k] = owner[k] == -1 || owner[k] == d ? d : -2;
            }
        }
    }
    int shared = 0;
    for (size_t k = 0; k < nslots && !shared; k++) {
        if (owner[k] != -2) continue;
        double cap = k >= 2 * (size_t)t->nlinks ? t->nodes[k - 2 * (size_t)t->nlinks].fwd_Bps
                                                : t->links[k / 2].bw_Bps;
        shared = cap > 0 && load[k] > cap * (1 + 1e-9);
    }
    free(load);
    free(owner);
    return shared;
}

/* Lowers a chunk of n layers of one micro-batch onto the GPUs of the job's first `groups` TP
 * groups (stage-major: stage g / dp, replica g % dp). */
static int fold_place(const struct scn_scenario *s, const struct mdl_strategy *st, int n,
                      int groups, const int *at, struct mdl_program *p, struct tps_error *err)
{
    int rc = mdl_strategy_lower(st, &s->model, &s->device, &s->framework, n, 1, p, err);
    if (!rc && mdl_program_place(p, (int)mdl_job_gpus(&s->job, st), groups, at))
        rc = tps_error_oom(err);
    return rc;
}

/* The program a job's layers fold on: a chunk of n layers of one micro-batch on the first TP
 * group's GPUs, or, where the replicas' TP groups' own traffic meets on a link (share_links),
 * on every replica's TP group of the first stage at once, as the replicas run in step. Where TP
 * groups of different stages meet on a link, *inexact is set: their collectives meet at times
 * the fold does not see. */
static int fold_program(const struct scn_scenario *s, const struct mdl_strategy *st, int n,
                        struct mdl_program *p, int *inexact, struct tps_error *err)
{
    int pp = s->job.pp, dp = s->job.dp, tp = mdl_strategy_gpus(st), all = pp * dp;
    int *at = malloc((size_t)all * (size_t)tp * sizeof *at);
    if (!at) return tps_error_oom(err);
    for (int g = 0; g < all; g++)
        for (int t = 0; t < tp; t++)
            at[g * tp + t] = mdl_job_rank(&s->job, st, g / dp, g % dp, t);
    int rc = TPS_OK, stages = 0, replicas = 0;
    /* a mixture of experts lowers the first stage's first layer groups that hold whole expert
     * groups (at's first GPUs), their all-to-alls on the fabric; the other such units run
     * alongside on links of their own, which the fold does not check */
    bool moe = mdl_strategy_lower_gpus(st, &s->model) > tp;
    /* the check needs only the groups: one layer of every group */
    if (all > 1 && !moe && !(rc = fold_place(s, st, 1, all, at, p, err))) {
        if ((replicas = share_links(p, s, &s->topo, UNIT_TP_GROUP)) > 0 && pp > 1)
            stages = share_links(p, s, &s->topo, UNIT_STAGE);
        if (replicas < 0 || stages < 0) rc = tps_error_oom(err);
        mdl_program_release(p);
    }
    if (!rc) rc = fold_place(s, st, n, replicas ? dp : 1, at, p, err);
    *inexact = stages;
    free(at);
    return rc;
}

int pipeline_fold(const struct scn_scenario *s, const struct mdl_strategy *st,
                  struct mdl_job_fold *fold, struct tps_error *err)
{
    /* one chunk of layers of one micro-batch, forward then backward, on the first TP group */
    struct mdl_program p;
    int n = mdl_job_chunk_layers(&s->job, &s->model);
    int inexact = 0, rc = fold_program(s, st, n, &p, &inexact, err);
    struct timing tm = {0};
    if (!rc) rc = pipeline_run_program(&p, &s->topo, &tm, err);
    memset(fold, 0, sizeof *fold);
    fold->inexact = inexact;
    fold->layers = n;
    int r0 = rc ? 0 : mdl_job_rank(&s->job, st, 0, 0, 0);
    for (int i = 0; !rc && i < p.ranks[r0].nops; i++) { /* every TP rank runs the same */
        const struct mdl_op *op = &p.ranks[r0].ops[i];
        const struct timing_span *ts = timing_op(&tm, r0, i);
        if (op->phase == MDL_PHASE_FWD) {
            if (ts->end > fold->fwd_s) fold->fwd_s = ts->end;
            fold->fwd_flop += op->flop;
        } else {
            fold->bwd_flop += op->flop;
        }
    }
    struct report rep;
    if (!rc && report_build(&p, &tm, &rep) != TPS_OK) rc = tps_error_oom(err);
    if (!rc) {
        fold->bwd_s = tm.end_s - fold->fwd_s;
        fold->tp_comm_s = rep.comm_s;
        fold->tp_exposed_s = rep.exposed_comm_s;
        fold->tp_bytes = rep.bytes_sent;
        fold->cp_exposed_s = rep.exposed_dim_s[MDL_DIM_CP];
        fold->cp_bytes = rep.bytes_dim[MDL_DIM_CP];
        fold->ep_exposed_s = rep.exposed_dim_s[MDL_DIM_EP];
        fold->ep_bytes = rep.bytes_dim[MDL_DIM_EP];
        fold->ep_wait_s = rep.ep_wait_s;
        memcpy(fold->split_s, rep.breakdown.comm_s, sizeof fold->split_s);
        fold->host_wait_s = rep.breakdown.host_wait_s;
        /* the folded program's GPU k is GPU k of the first stage's layer groups */
        int g = mdl_strategy_gpus(st);
        fold->ep_straggler =
            mdl_job_rank(&s->job, st, 0, rep.ep_straggler / g, rep.ep_straggler % g);
        fold->ep_waiter = mdl_job_rank(&s->job, st, 0, rep.ep_waiter / g, rep.ep_waiter % g);
        report_release(&rep);
    }
    timing_release(&tm);
    mdl_program_release(&p);
    return rc;
}

/* How a folded job lowers its replicas: replica 0 in full, the others mirroring only the
 * collectives over several replicas, or all their communication where their own traffic may
 * meet on a link (share_links on one micro-batch of the job). */
static int replicas_mode(const struct scn_scenario *s, enum mdl_replicas *rep,
                         struct tps_error *err)
{
    *rep = MDL_REPLICAS_FULL;
    if (mdl_job_grad_replicas(&s->job, &s->strategy) < 2) return TPS_OK;
    struct mdl_job one = s->job;
    one.micro_batches = one.schedule == MDL_SCHED_INTERLEAVED ? one.pp : 1;
    struct mdl_job_fold flat = {0};
    struct mdl_program p;
    /* share_links reads the groups alone */
    int rc = mdl_job_lower(&one, &s->strategy, &s->model, &s->device, &s->framework, &flat,
                           MDL_REPLICAS_GROUPS, &p, err);
    int shared = rc ? -1 : share_links(&p, s, &s->topo, UNIT_REPLICA);
    mdl_program_release(&p);
    if (rc) return rc;
    if (shared < 0) return tps_error_oom(err);
    *rep = shared ? MDL_REPLICAS_MIRROR : MDL_REPLICAS_SHARED;
    return TPS_OK;
}

/* What a job's lowering folded, in words. */
static void describe_folding(const struct scn_scenario *s, const struct mdl_job_fold *fold,
                             enum mdl_replicas rep, char *buf, size_t len)
{
    buf[0] = 0;
    if (!fold) return;
    int n = mdl_job_chunk_layers(&s->job, &s->model), used;
    bool uneven = s->job.first_stage_layers || s->job.last_stage_layers ||
                  s->job.account_embedding || s->job.account_loss;
    used = snprintf(buf, len, "layers: %s of %d layer(s) simulated once%s%s, then one op per step",
                    uneven ? "the largest chunk" : "each chunk", n,
                    uneven ? " (the others its share by their layers)" : "",
                    fold->inexact ? " (inexact: TP groups of different stages share links, "
                                    "run.fold: false replays them op by op)"
                                  : "");
    int cp = mdl_strategy_cp(&s->strategy);
    char who[64] = "";
    if (cp > 1 && s->job.dp > 1)
        snprintf(who, sizeof who, "replicas 1..%d and CP ranks 1..%d of each", s->job.dp - 1,
                 cp - 1);
    else if (cp > 1)
        snprintf(who, sizeof who, "CP ranks 1..%d", cp - 1);
    if (rep != MDL_REPLICAS_FULL && used > 0 && (size_t)used < len && cp == 1)
        snprintf(buf + used, len - (size_t)used, "; replicas: 1..%d mirror replica 0's %s",
                 s->job.dp - 1,
                 rep == MDL_REPLICAS_MIRROR ? "communication (their traffic shares links)"
                                            : "collectives over replicas (no link is shared "
                                              "beyond its capacity)");
    else if (rep != MDL_REPLICAS_FULL && used > 0 && (size_t)used < len)
        snprintf(buf + used, len - (size_t)used, "; %s mirror replica 0's CP rank 0's %s", who,
                 rep == MDL_REPLICAS_MIRROR ? "communication (their traffic shares links)"
                                            : "collectives over replicas (no link is shared "
                                              "beyond its capacity)");
}

/* The fold stage of a whole job: whether its layers fold (scn_scenario.fold, or by its op count
 * when unset), their chunk simulated once on its first TP group (pipeline_fold), and how its
 * replicas are lowered (all of them in full when full_replicas). The only stage before the
 * engine's own run that simulates; lowering takes what it decided. */
static int fold_stage(const struct scn_scenario *s, int full_replicas, struct mdl_job_fold *fold,
                      int *folded, enum mdl_replicas *rep, struct tps_error *err)
{
    const struct mdl_strategy *js = &s->strategy;
    int f = s->fold;
    if (f < 0)
        f = mdl_job_cost(&s->job, js, &s->model, &s->device, &s->framework, NULL) > FOLD_AUTO_COST;
    memset(fold, 0, sizeof *fold);
    *folded = f;
    *rep = MDL_REPLICAS_FULL;
    int rc = f ? pipeline_fold(s, js, fold, err) : 0;
    if (!rc && f && !full_replicas) rc = replicas_mode(s, rep, err);
    return rc;
}

/* The lowering stage: a whole job with what its fold stage decided (fold NULL: op by op), or
 * `layers` x `micro_batches` of a TP group with strategy st (NULL: the scenario's own, its layers
 * and micro-batches) and the scenario's heterogeneity. Never simulates. What was folded, in
 * words, goes to folding and the heterogeneity's description to hetero (either may be NULL). */
static int lower_stage(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                       int micro_batches, const struct mdl_job_fold *fold, enum mdl_replicas rep,
                       struct mdl_program *p, char *folding, size_t folding_len, char *hetero,
                       size_t hetero_len, struct tps_error *err)
{
    if (s->is_job && (!st || st == &s->strategy)) {
        if (folding) describe_folding(s, fold, rep, folding, folding_len);
        double w0 = tps_clock_now();
        int rc = mdl_job_lower(&s->job, &s->strategy, &s->model, &s->device, &s->framework, fold,
                               rep, p, err);
        timing_note("job lowering", w0);
        return rc;
    }
    if (!st) {
        st = &s->strategy;
        layers = s->layers;
        micro_batches = s->micro_batches;
    }
    int rc =
        mdl_strategy_lower(st, &s->model, &s->device, &s->framework, layers, micro_batches, p, err);
    if (rc || !mdl_hetero_active(&s->hetero)) return rc;
    /* balancing moves 1D columns; another candidate strategy (the planner's) runs unbalanced */
    struct mdl_hetero h = s->hetero; /* borrows its arrays */
    if (!mdl_kind_of(st)->balances || mdl_strategy_is_mixed(st)) h.balance = MDL_BALANCE_NONE;
    struct mdl_hetero_result res;
    rc = mdl_hetero_apply(&h, st, &s->model, &s->device, &s->framework, layers, micro_batches,
                          h.seed, p, &res, err);
    if (!rc && hetero) snprintf(hetero, hetero_len, "%s", res.desc);
    return rc;
}

/* The two stages in turn: a whole job's fold into *fold (zeroed when op by op), then the
 * lowering. */
static int fold_and_lower(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                          int micro_batches, struct mdl_job_fold *fold, int full_replicas,
                          struct mdl_program *p, char *folding, size_t folding_len, char *hetero,
                          size_t hetero_len, struct tps_error *err)
{
    int folded = 0;
    enum mdl_replicas rep = MDL_REPLICAS_FULL;
    memset(fold, 0, sizeof *fold);
    if (s->is_job && (!st || st == &s->strategy)) {
        int rc = fold_stage(s, full_replicas, fold, &folded, &rep, err);
        if (rc) {
            memset(p, 0, sizeof *p);
            return rc;
        }
    }
    return lower_stage(s, st, layers, micro_batches, folded ? fold : NULL, rep, p, folding,
                       folding_len, hetero, hetero_len, err);
}

int pipeline_lower(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                   int micro_batches, struct mdl_program *p, struct tps_error *err)
{
    struct mdl_job_fold fold;
    return fold_and_lower(s, st, layers, micro_batches, &fold, 0, p, NULL, 0, NULL, 0, err);
}

static int load_scenario(const char *path, const char *like, int defer, struct pipeline_job *j,
                         struct tps_error *err)
{
    memset(j, 0, sizeof *j);
    j->defer = defer;
    snprintf(j->input, sizeof j->input, "%s", path);
    int rc = scn_load_in(path, like, &j->scn, err);
    if (rc) return rc;
    j->topo = &j->scn.topo;
    return pipeline_lower_job(j, err);
}

int pipeline_load_scenario(const char *path, const char *like, struct pipeline_job *j,
                           struct tps_error *err)
{
    return load_scenario(path, like, 0, j, err);
}

int pipeline_open_scenario(const char *path, const char *like, struct pipeline_job *j,
                           struct tps_error *err)
{
    return load_scenario(path, like, 1, j, err);
}

/* Whether a plain run's layers may be folded (the rest is up to what the fold finds). */
static int may_fold(const struct scn_scenario *s)
{
    return !s->is_job && s->fold != 0 && s->layers >= FOLD_MIN_LAYERS;
}

/* A plain run's micro-batches as its scenario gives them (none given: one). */
static int plain_micro_batches(const struct scn_scenario *s)
{
    return s->micro_batches > 0 ? s->micro_batches : 1;
}

void pipeline_job_shape(const struct pipeline_job *j, int *layers, int *micro_batches, int *gpus)
{
    *layers = j->deferred ? j->scn.layers : j->prog.layers;
    *micro_batches = j->deferred ? plain_micro_batches(&j->scn) : j->prog.micro_batches;
    *gpus = j->deferred ? mdl_strategy_lower_gpus(&j->scn.strategy, &j->scn.model) : j->prog.nranks;
}

double pipeline_scenario_ops(const struct scn_scenario *s)
{
    if (s->is_job) {
        double n = mdl_job_ops(&s->job, &s->strategy, &s->model, &s->device, &s->framework, NULL);
        return n > 0 ? n : 0;
    }
    struct mdl_program p;
    struct tps_error err = {0};
    double n = 0;
    if (pipeline_lower(s, &s->strategy, 1, 1, &p, &err) == 0)
        for (int r = 0; r < p.nranks; r++)
            n += p.ranks[r].nops;
    mdl_program_release(&p);
    return n * (s->layers > 0 ? s->layers : 1) * plain_micro_batches(s);
}

/* Lowers the job's program in full: its layers, micro-batches and replicas. */
static int lower_all(struct pipeline_job *j, struct tps_error *err)
{
    j->deferred = 0;
    return fold_and_lower(&j->scn, NULL, 0, 0, &j->fold, j->full_replicas, &j->prog, j->folding,
                          sizeof j->folding, j->hetero, sizeof j->hetero, err);
}

int pipeline_lower_job(struct pipeline_job *j, struct tps_error *err)
{
    int rc = TPS_OK;
    if (j->defer && may_fold(&j->scn) && !mdl_hetero_active(&j->scn.hetero)) {
        memset(&j->prog, 0, sizeof j->prog);
        j->deferred = 1;
    } else {
        rc = lower_all(j, err);
    }
    if (rc) return rc;
    const struct scn_scenario *s = &j->scn;
    scn_describe_model(s, j->model, sizeof j->model);
    scn_describe_strategy(s, j->strategy, sizeof j->strategy);
    snprintf(j->device, sizeof j->device, "%s", s->device.name);
    snprintf(j->platform, sizeof j->platform, "%s (%s)", s->platform_spec, s->topo.desc);
    j->meta = (struct report_meta){
        s->path,     j->model,   j->device, j->platform,
        j->strategy, j->folding, j->hetero, s->device.assumed_gemm ? MDL_DEVICE_ASSUMED_GEMM : NULL,
        0,           0};
    j->meta.params = mdl_model_params(
        &s->model, s->is_job ? s->job.untied_embeddings : s->hf_untied, &j->meta.active_params);
    if (s->is_job)
        mdl_job_memory(&s->job, &s->strategy, &s->model, &s->framework, &j->mem);
    else
        mdl_strategy_memory(&s->strategy, &s->model, &s->framework, (int)s->model.layers, &j->mem);
    j->capacity = s->device.mem_bytes;
    j->reserved = mdl_device_reserved(&s->device);
    j->has_memory = 1;
    return TPS_OK;
}

int pipeline_reseed(struct pipeline_job *j, unsigned long seed, struct tps_error *err)
{
    j->scn.hetero.seed = seed;
    mdl_program_release(&j->prog);
    return pipeline_lower_job(j, err);
}

int pipeline_unfold_replicas(struct pipeline_job *j, struct tps_error *err)
{
    if (!j->prog.shadow) return TPS_OK;
    mdl_program_release(&j->prog);
    j->full_replicas = 1;
    return pipeline_lower_job(j, err);
}

void pipeline_take_program(struct pipeline_job *j, struct mdl_program *out)
{
    *out = j->prog;
    memset(&j->prog, 0, sizeof j->prog);
}

int pipeline_simulate_variant(const struct scn_scenario *s, const struct mdl_strategy *st,
                              const struct mdl_job *job, long micro_batch, struct report *r,
                              struct tps_error *err)
{
    struct pipeline_job j;
    memset(&j, 0, sizeof j);
    memset(r, 0, sizeof *r);
    j.scn = *s; /* borrowed: only the program made here is released */
    j.scn.model.micro_batch = micro_batch;
    j.scn.strategy = *st;
    j.scn.framework = mdl_strategy_framework(st, &s->framework);
    j.scn.job = *job;
    j.scn.micro_batches = job->micro_batches;
    j.scn.fold = 1;
    j.topo = &s->topo;
    int rc = pipeline_lower_job(&j, err);
    if (!rc) rc = pipeline_simulate(&j, NULL, r, err);
    mdl_program_release(&j.prog);
    return rc;
}

int pipeline_load_trace(const char *input, const char *platform, const struct plat_topo *on,
                        struct pipeline_job *j, struct tps_error *err)
{
    memset(j, 0, sizeof *j);
    j->from_trace = 1;
    j->topo = &j->trace_topo;
    snprintf(j->input, sizeof j->input, "%s", input);
    char recorded[512], buf[1024];
    const char *dir = trace_dir_resolve(input, buf, sizeof buf);
    snprintf(j->trace_dir, sizeof j->trace_dir, "%s", dir);
    int rc = trace_read(dir, &j->prog, recorded, sizeof recorded, err);
    if (rc) return rc;
    const char *spec = platform ? platform : recorded;
    if (!platform && on) {
        j->topo = on;
        spec = on->desc[0] ? on->desc : on->name;
    } else if (!spec[0]) {
        return tps_error_set(err, TPS_EINVAL, input, 0, 0, "platform",
                             "the trace records no platform: give --platform");
    } else if ((rc = plat_spec_from_line(spec, &j->trace_topo, err))) {
        return rc;
    }
    if (j->prog.nranks > j->topo->ngpus) {
        char meta[1100];
        snprintf(meta, sizeof meta, "%s/meta.tps", dir);
        return tps_error_set(err, TPS_EINVAL, meta, trace_meta_line(dir, "ranks"), 1, "ranks",
                             "the trace has %d ranks, but platform '%s' has only %d GPUs",
                             j->prog.nranks, spec, j->topo->ngpus);
    }
    snprintf(j->model, sizeof j->model, "trace (%d ranks)", j->prog.nranks);
    snprintf(j->device, sizeof j->device, "as recorded");
    snprintf(j->strategy, sizeof j->strategy, "as recorded");
    snprintf(j->platform, sizeof j->platform, "%s", spec);
    j->meta = (struct report_meta){j->input, j->model, j->device, j->platform, j->strategy,
                                   NULL,     NULL,     NULL,      0,           0};
    return TPS_OK;
}

void pipeline_release(struct pipeline_job *j)
{
    mdl_program_release(&j->prog);
    scn_release(&j->scn);
    plat_topo_release(&j->trace_topo);
    memset(j, 0, sizeof *j);
}

struct pipeline_job *pipeline_job_new(void)
{
    return calloc(1, sizeof(struct pipeline_job));
}

void pipeline_free(struct pipeline_job *j)
{
    if (!j) return;
    pipeline_release(j);
    free(j);
}

const struct report_meta *pipeline_job_meta(const struct pipeline_job *j)
{
    return &j->meta;
}

const struct scn_scenario *pipeline_job_scenario(const struct pipeline_job *j)
{
    return &j->scn;
}

struct mdl_program *pipeline_job_program(struct pipeline_job *j)
{
    return &j->prog;
}

const struct plat_topo *pipeline_job_topo(const struct pipeline_job *j)
{
    return j->topo;
}

const struct mdl_memory *pipeline_job_memory(const struct pipeline_job *j)
{
    return &j->mem;
}

const char *pipeline_job_trace_dir(const struct pipeline_job *j)
{
    return j->trace_dir;
}

int pipeline_job_deferred(const struct pipeline_job *j)
{
    return j->deferred;
}

void pipeline_progress(int on)
{
    sim_engine_progress(on);
}

int pipeline_run_program(struct mdl_program *p, const struct plat_topo *t, struct timing *tm,
                         struct tps_error *err)
{
    memset(tm, 0, sizeof *tm);
    if (p->nranks > t->ngpus)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                             "the program has %d ranks but the platform only %d GPUs", p->nranks,
                             t->ngpus);
    double w0 = tps_clock_now();
    int rc = mdl_program_check(p, NULL, err);
    timing_note("program check", w0);
    w0 = tps_clock_now();
    struct cpl_plan plan = {0};
    if (!rc) rc = tune_program(p, t, &plan, err);
    timing_note("collective tuning", w0);
    w0 = tps_clock_now();
    if (!rc) rc = sim_engine_run(p, t, &plan, tm, err);
    timing_note("engine (all)", w0);
    cpl_plan_release(&plan);
    return rc;
}

/* SimGrid's timing precision (its precision/timing setting, 1 ns by default): two layers that
 * run the same events can end a few of these apart. */
#define ENGINE_TIMING_PRECISION_S 1e-9

/* Whether x and y agree within 1e-9 of scale plus a few of the engine's timing precision. */
static int same(double x, double y, double scale)
{
    return fabs(x - y) <= 1e-9 * scale + 4 * ENGINE_TIMING_PRECISION_S;
}

/* A plain run of identical layers, folded: 3 and 4 layers simulated. *spread is how far apart
 * the 4-layer run's two middle layers ended, forward and backward, relative to their time.
 * When they took the same time (each added layer adds the same), or whatever they took when
 * `always`, the report of all L layers is the 3-layer one plus the 4-layer one's increment per
 * added layer (report_extrapolate) and *done is set; if not, the caller replays all L layers. */
static int simulate_folded_layers(const struct scn_scenario *s, const struct mdl_strategy *st,
                                  const struct plat_topo *topo, int L, int M, int always,
                                  struct report *r, int *done, double *spread,
                                  struct tps_error *err)
{
    int rc = 0;
    struct report rep[2];
    memset(rep, 0, sizeof rep);
    *done = 0;
    *spread = 0;
    for (int n = 0; !rc && n < 2; n++) {
        struct mdl_program p;
        struct timing t = {0};
        rc = pipeline_lower(s, st, 3 + n, M, &p, err);
        if (!rc) rc = pipeline_run_program(&p, topo, &t, err);
        if (!rc && report_build(&p, &t, &rep[n]) != TPS_OK) rc = tps_error_oom(err);
        timing_release(&t);
        mdl_program_release(&p);
    }
    if (!rc) {
        const struct report_layer *a = &rep[1].layers[1], *b = &rep[1].layers[2];
        double T = rep[1].iteration_s, layer = b->fwd_s + b->bwd_s;
        double d = fabs(a->fwd_s - b->fwd_s) + fabs(a->bwd_s - b->bwd_s);
        *spread = layer > 0 ? d / layer : 0;
        *done = rep[1].iteration_s > rep[0].iteration_s &&
                (always || (same(a->fwd_s, b->fwd_s, T) && same(a->bwd_s, b->bwd_s, T)));
    }
    if (*done && report_extrapolate(&rep[0], &rep[1], L, r) != TPS_OK) rc = tps_error_oom(err);
    for (int n = 0; n < 2; n++)
        report_release(&rep[n]);
    return rc;
}

int pipeline_simulate_layers(const struct scn_scenario *s, const struct mdl_strategy *st,
                             const struct plat_topo *topo, int always, struct report *r,
                             double *spread, struct tps_error *err)
{
    int L = s->layers, M = plain_micro_batches(s), rc = 0, done = 0;
    memset(r, 0, sizeof *r);
    *spread = -1;
    if (s->is_job)
        return tps_error_set(err, TPS_EINVAL, s->path, 0, 0, NULL,
                             "a whole job's layers are simulated by pipeline_simulate");
    if (s->fold != 0 && L >= FOLD_MIN_LAYERS) {
        rc = simulate_folded_layers(s, st, topo, L, M, always, r, &done, spread, err);
        if (rc || done) return rc;
    }
    *spread = -1;
    struct mdl_program p;
    struct timing t = {0};
    rc = pipeline_lower(s, st, L, M, &p, err);
    if (!rc) rc = pipeline_run_program(&p, topo, &t, err);
    if (!rc && report_build(&p, &t, r) != TPS_OK) rc = tps_error_oom(err);
    timing_release(&t);
    mdl_program_release(&p);
    return rc;
}

int pipeline_simulate(struct pipeline_job *j, struct timing *tm, struct report *r,
                      struct tps_error *err)
{
    struct timing own;
    struct timing *t = tm ? tm : &own;
    memset(r, 0, sizeof *r);
    if (!tm && !j->from_trace && may_fold(&j->scn)) {
        int L = j->scn.layers, done = 0;
        int M = plain_micro_batches(&j->scn);
        double spread;
        int rc = simulate_folded_layers(&j->scn, &j->scn.strategy, j->topo, L, M, 0, r, &done,
                                        &spread, err);
        if (done && !rc)
            snprintf(j->folding, sizeof j->folding,
                     "layers: 3 and 4 layers simulated, the middle ones took the same, the other "
                     "%d added as the fourth",
                     L - 4);
        if (rc || done) {
            if (!rc && j->has_memory) report_set_memory(r, &j->mem, j->capacity, j->reserved);
            return rc;
        }
    }
    int rc = j->deferred ? lower_all(j, err) : TPS_OK;
    if (!rc) rc = pipeline_run_program(&j->prog, j->topo, t, err);
    double w0 = tps_clock_now();
    if (!rc) rc = pipeline_report(j, t, r, err);
    timing_note("report", w0);
    if (!tm) timing_release(&own);
    return rc;
}

/* What a whole job's report says beyond report_build: a folded chunk's collectives (which ran
 * inside its compute op) counted as theirs, the training figures, each layer's share of the
 * chunk. */
static void report_job(struct report *r, const struct scn_scenario *sc,
                       const struct mdl_job_fold *fold)
{
    /* a folded chunk's TP collectives ran inside its compute op: count them as such */
    double chunks = (double)sc->job.micro_batches * sc->job.virtual_stages;
    r->job = 1;
    r->compute_s -= chunks * fold->tp_exposed_s;
    r->comm_s += chunks * fold->tp_comm_s;
    r->exposed_comm_s += chunks * fold->tp_exposed_s;
    r->exposed_non_pp_s += chunks * fold->tp_exposed_s; /* the chunk's TP, CP and EP */
    r->exposed_dim_s[MDL_DIM_TP] += chunks * (fold->tp_exposed_s - fold->cp_exposed_s);
    r->bytes_dim[MDL_DIM_TP] += chunks * (fold->tp_bytes - fold->cp_bytes);
    r->exposed_dim_s[MDL_DIM_CP] += chunks * fold->cp_exposed_s;
    r->bytes_dim[MDL_DIM_CP] += chunks * fold->cp_bytes;
    r->exposed_dim_s[MDL_DIM_TP] -= chunks * fold->ep_exposed_s;
    r->bytes_dim[MDL_DIM_TP] -= chunks * fold->ep_bytes;
    r->exposed_dim_s[MDL_DIM_EP] += chunks * fold->ep_exposed_s;
    r->bytes_dim[MDL_DIM_EP] += chunks * fold->ep_bytes;
    if (fold->ep_bytes > 0) r->dim_used[MDL_DIM_EP] = 1;
    if (fold->ep_wait_s > 0) {
        r->ep_wait_s = chunks * fold->ep_wait_s;
        r->ep_straggler = fold->ep_straggler;
        r->ep_waiter = fold->ep_waiter;
    }
    r->bytes_sent += chunks * fold->tp_bytes;
    if (fold->tp_bytes > fold->cp_bytes) r->dim_used[MDL_DIM_TP] = 1;
    if (fold->cp_bytes > 0) r->dim_used[MDL_DIM_CP] = 1;
    /* in the breakdown, the chunk's exposed collectives and host waits leave its compute */
    struct report_breakdown *bd = &r->breakdown;
    bd->compute_s -= chunks * (fold->tp_exposed_s + fold->host_wait_s);
    bd->host_wait_s += chunks * fold->host_wait_s;
    for (int d = 0; d < MDL_NDIMS; d++)
        bd->comm_s[d] += chunks * fold->split_s[d];
    report_breakdown_close(r);
    report_set_training(r, (double)sc->global_batch * (double)sc->model.seq, sc->train_tokens,
                        sc->device.tdp_w, sc->device.idle_w, sc->gpu_hour_price);
    /* a folded chunk has no per-layer ops: each layer gets its share of the chunk */
    int n = fold->layers;
    for (int l = 0; fold->fwd_s > 0 && n > 0 && l < r->nlayers; l++) {
        r->layers[l].fwd_s = fold->fwd_s / n;
        r->layers[l].bwd_s = fold->bwd_s / n;
    }
}

int pipeline_report(const struct pipeline_job *j, const struct timing *tm, struct report *r,
                    struct tps_error *err)
{
    if (report_build(&j->prog, tm, r) != TPS_OK) return tps_error_oom(err);
    if (j->has_memory) report_set_memory(r, &j->mem, j->capacity, j->reserved);
    if (!j->from_trace && j->scn.is_job) report_job(r, &j->scn, &j->fold);
    return TPS_OK;
}

int pipeline_simulate_scenario(const struct scn_scenario *s, struct report *r,
                               struct tps_error *err)
{
    struct mdl_job_fold fold;
    struct mdl_program p = {0};
    struct timing tm = {0};
    memset(r, 0, sizeof *r);
    int rc = fold_and_lower(s, NULL, 0, 0, &fold, 0, &p, NULL, 0, NULL, 0, err);
    if (!rc) rc = pipeline_run_program(&p, &s->topo, &tm, err);
    if (!rc && report_build(&p, &tm, r) != TPS_OK) rc = tps_error_oom(err);
    if (!rc && s->is_job) report_job(r, s, &fold);
    timing_release(&tm);
    mdl_program_release(&p);
    return rc;
}

int pipeline_collective(const struct plat_topo *t, enum mdl_op_kind k, int ranks, double bytes,
                        struct pipeline_coll_how *how, double *time_s, struct tps_error *err)
{
    int *members = malloc((size_t)ranks * sizeof *members);
    if (!members) return tps_error_oom(err);
    for (int r = 0; r < ranks; r++)
        members[r] = r;
    int rc = pipeline_collective_on(t, k, members, ranks, bytes, how, time_s, err);
    free(members);
    return rc;
}

int pipeline_collective_on(const struct plat_topo *t, enum mdl_op_kind k, const int *members, int m,
                           double bytes, struct pipeline_coll_how *how, double *time_s,
                           struct tps_error *err)
{
    struct mdl_program p;
    int ranks = 0; /* the program's: up to the highest member */
    for (int i = 0; i < m; i++)
        if (members[i] + 1 > ranks) ranks = members[i] + 1;
    if (mdl_program_init(&p, ranks) != 0) return tps_error_oom(err);
    int g = mdl_program_group(&p, m, members), nm = mdl_program_name(&p, mdl_op_kind_name(k));
    int rc = g < 0 || nm < 0;
    for (int i = 0; !rc && i < m; i++) {
        struct mdl_op o = {.kind = (uint8_t)k,
                           .stream = MDL_STREAM_COMM,
                           .phase = MDL_PHASE_OTHER,
                           .name = nm,
                           .layer = -1,
                           .mb = -1,
                           .group = g,
                           .bytes = bytes,
                           .algo = (uint8_t)how->algo,
                           .proto = (uint8_t)how->proto,
                           .gran = (uint8_t)how->gran};
        rc = mdl_program_add(&p, members[i], &o) < 0;
    }
    struct timing tm = {0};
    if (rc)
        rc = tps_error_oom(err);
    else if ((rc = pipeline_run_program(&p, t, &tm, err)) == 0) {
        const struct mdl_op *o = &p.ranks[members[0]].ops[0];
        *time_s = tm.end_s;
        how->algo = o->algo;
        how->proto = o->proto;
        how->gran = o->gran;
    }
    timing_release(&tm);
    mdl_program_release(&p);
    return rc;
}
