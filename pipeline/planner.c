/* planner.c - analytic schedule prediction and the strategy planner (see planner.h). */
#include "pipeline/planner.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/tune.h"
#include "pipeline/pipeline.h"
#include "pipeline/plansim.h"
#include "common/grow.h"

double planner_predict(struct mdl_program *p, const struct plat_topo *t, struct tps_error *err)
{
    return planner_predict_phases(p, t, NULL, err);
}

double planner_predict_phases(struct mdl_program *p, const struct plat_topo *t, double *fwd_s,
                              struct tps_error *err)
{
    if (fwd_s) *fwd_s = 0;
    if (tune_program(p, t, NULL, err)) return -1;
    const struct mdl_rank *rk = &p->ranks[0];
    double *end = calloc((size_t)rk->nops + 1, sizeof *end), free_at[MDL_MAX_STREAMS] = {0};
    struct tune_group_env *env = calloc((size_t)p->ngroups + 1, sizeof *env);
    char *ready = calloc((size_t)p->ngroups + 1, 1);
    double last = -1;
    if (!end || !env || !ready) {
        tps_error_oom(err);
        goto done;
    }
    last = 0;
    double launched = 0; /* when the host has launched op i (it launches in program order) */
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *op = &rk->ops[i];
        launched += op->launch_s;
        double start = free_at[op->stream] > launched ? free_at[op->stream] : launched;
        double dur = op->dur_s;
        for (int d = 0; d < op->ndeps; d++)
            if (end[op->deps[d]] > start) start = end[op->deps[d]];
        if (mdl_op_is_coll((enum mdl_op_kind)op->kind)) {
            int g = op->group;
            if (!ready[g]) {
                /* the groups the other ranks use for the same op run concurrently */
                const struct mdl_group **set = malloc(((size_t)p->nranks + 1) * sizeof *set);
                int ns = 0;
                if (set) set[ns++] = &p->groups[g];
                for (int r = 1; set && r < p->nranks; r++) {
                    if (i >= p->ranks[r].nops) continue;
                    int h = p->ranks[r].ops[i].group, seen = 0;
                    for (int k = 0; k < ns && !seen; k++)
                        seen = set[k] == &p->groups[h];
                    if (h >= 0 && !seen) set[ns++] = &p->groups[h];
                }
                int bad = !set ||
                          tune_group_env_set(t, set, ns, (enum mdl_op_kind)op->kind, &env[g], err);
                free(set);
                if (bad) {
                    if (!set) tps_error_oom(err);
                    last = -1;
                    break;
                }
                ready[g] = 1;
            }
            struct mdl_coll_env e;
            tune_coll_env(&env[g], &t->nccl, (enum mdl_coll_proto)op->proto, &e);
            dur = mdl_coll_time((enum mdl_op_kind)op->kind, (enum mdl_coll_algo)op->algo, op->bytes,
                                &e);
            if (dur < 0) dur = 0; /* a group of one */
        }
        end[i] = start + dur;
        if (fwd_s && op->phase == MDL_PHASE_FWD && end[i] > *fwd_s) *fwd_s = end[i];
        free_at[op->stream] = end[i];
        if (end[i] > last) last = end[i];
    }
done:
    for (int g = 0; env && ready && g < p->ngroups; g++)
        if (ready[g]) tune_group_env_release(&env[g]);
    free(end);
    free(env);
    free(ready);
    return last;
}

struct list {
    int n, cap;
    struct planner_row *v;
};

static int add(struct list *l, const struct mdl_strategy *st)
{
    if (tps_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 32)) return -1;
    memset(&l->v[l->n], 0, sizeof l->v[l->n]);
    l->v[l->n].st = *st;
    mdl_strategy_describe(st, l->v[l->n].desc, sizeof l->v[l->n].desc);
    l->n++;
    return 0;
}

/* Where the kinds' candidates go: kept when the model admits them. A 1D candidate with
 * sequence parallelism, on the whole group without ATP's chunks or Oases, is followed by its
 * variant with Transformer Engine's TP overlap and, where asked (async_tp), with PyTorch's async
 * TP: sequence parallelism gives them their collectives. */
struct sink {
    struct list *l;
    const struct scn_scenario *s;
    bool async_tp;
};

static int sink_one(struct sink *k, const struct mdl_strategy *st)
{
    struct tps_error e = {0};
    return mdl_strategy_check(st, &k->s->model, &e) == 0 ? add(k->l, st) : 0;
}

static int sink_add(void *ctx, const struct mdl_strategy *st)
{
    struct sink *k = ctx;
    int rc = sink_one(k, st);
    if (rc || st->kind != MDL_STRAT_1D || !st->sequence_parallel || st->chunks > 1 || st->oases ||
        mdl_strategy_is_mixed(st))
        return rc;
    struct mdl_strategy v = *st;
    v.tp_comm_overlap = true;
    rc = sink_one(k, &v);
    if (rc || !k->async_tp) return rc;
    v = *st;
    v.async_tp = true;
    return sink_one(k, &v);
}

/* Every candidate strategy the model admits: each kind's (models/kind.h), in table order. */
static int enumerate(const struct scn_scenario *s, const struct planner_opts *o, struct list *l)
{
    const struct mdl_strategy *b = &s->strategy;
    struct sink k = {l, s, o->async_tp || b->async_tp};
    /* sequence parallelism tried whatever --sp says: a mixture of experts on tp > 1 needs it,
     * and so does a TP overlap the scenario runs or async TP asked for */
    bool sp = o->sequence_parallel || (s->model.moe.experts > 0 && b->tp > 1) ||
              b->tp_comm_overlap || k.async_tp;
    return mdl_strategy_candidates(b, sp, sink_add, &k);
}

double planner_compute_bound(const struct mdl_program *p)
{
    double most = 0;
    for (int r = 0; r < p->nranks; r++) {
        double x = 0;
        for (int k = 0; k < p->ranks[r].nops; k++) {
            const struct mdl_op *op = &p->ranks[r].ops[k];
            if (op->stream == MDL_STREAM_COMPUTE && !mdl_op_is_coll((enum mdl_op_kind)op->kind))
                x += op->dur_s;
        }
        if (x > most) most = x;
    }
    return most;
}

static int by_prediction(const void *a, const void *b)
{
    const struct planner_row *x = a, *y = b;
    return (x->predicted_s > y->predicted_s) - (x->predicted_s < y->predicted_s);
}

int planner_result_cmp(double xp, double xs, double yp, double ys)
{
    int sx = xs > 0, sy = ys > 0;
    if (sx != sy) return sy - sx;
    double u = sx ? xs : xp, v = sx ? ys : yp;
    return (u > v) - (u < v);
}

static int by_result(const void *a, const void *b)
{
    const struct planner_row *x = a, *y = b;
    return planner_result_cmp(x->predicted_s, x->simulated_s, y->predicted_s, y->simulated_s);
}

/* Simulates one candidate of the scenario (ctx) in place, its layers folded. */
static int simulate_row(void *ctx, int k, void *row, struct tps_error *err)
{
    (void)k;
    const struct scn_scenario *s = ctx;
    struct planner_row *w = row;
    struct report r;
    int rc = pipeline_simulate_layers(s, &w->st, &s->topo, 1, &r, &w->fold_spread, err);
    if (!rc) w->simulated_s = r.iteration_s;
    report_release(&r);
    return rc;
}

int planner_run(const struct scn_scenario *s, const struct planner_opts *o,
                struct planner_row **rows, int *nrows, struct planner_info *info,
                struct tps_error *err)
{
    struct list l = {0};
    *rows = NULL;
    *nrows = 0;
    memset(info, 0, sizeof *info);
    info->model_flop = mdl_model_flop(&s->model, s->layers, s->micro_batches);
    if (enumerate(s, o, &l)) {
        free(l.v);
        return tps_error_oom(err);
    }
    if (l.n == 0) {
        free(l.v);
        return tps_error_set(err, TPS_EINVAL, s->path, 0, 0, "strategy.tp",
                             "no strategy of TP degree %d fits the model", s->strategy.tp);
    }
    info->candidates = l.n;
    /* memory first: candidates that do not fit are neither ranked nor simulated */
    int kept = 0;
    double least = -1;
    for (int i = 0; i < l.n; i++) {
        struct planner_row *row = &l.v[i];
        mdl_strategy_memory(&row->st, &s->model, &s->framework, (int)s->model.layers, &row->mem);
        row->fits = row->mem.total <= mdl_device_usable(&s->device);
        if (least < 0 || row->mem.total < least) least = row->mem.total;
        if (row->fits || o->ignore_memory) l.v[kept++] = *row;
    }
    info->dropped = l.n - kept;
    l.n = kept;
    if (l.n == 0) {
        free(l.v);
        return tps_error_set(
            err, TPS_EINVAL, s->path, 0, 0, "strategy.tp",
            "none of the %d candidates of TP degree %d fits in the %.1f GB usable of "
            "%s: the smallest needs %.1f GB per GPU (use --ignore-memory to "
            "rank them anyway)",
            info->candidates, s->strategy.tp, mdl_device_usable(&s->device) / 1e9, s->device.name,
            least / 1e9);
    }
    double scale = (double)s->layers * s->micro_batches;
    /* the bound: every layer and micro-batch's kernels of the busiest GPU (none where kernels
     * may run faster than the model says: noise, or a mixture of experts' routing) */
    bool bounded = !mdl_hetero_active(&s->hetero) && s->model.moe.experts <= 0;
    int rc = TPS_OK;
    for (int i = 0; i < l.n && !rc; i++) {
        struct mdl_program p;
        rc = pipeline_lower(s, &l.v[i].st, 1, 1, &p, err);
        double c = rc || !bounded ? 0 : planner_compute_bound(&p);
        double t = rc ? -1 : planner_predict(&p, &s->topo, err);
        if (!rc && t < 0) rc = err->code ? err->code : TPS_EINVAL;
        l.v[i].predicted_s = t * scale;
        l.v[i].bound_s = c * scale;
        mdl_program_release(&p);
    }
    if (!rc) qsort(l.v, (size_t)l.n, sizeof *l.v, by_prediction);
    int nsim = rc ? 0 : l.n < o->simulate ? l.n : o->simulate;
    int *how = malloc(((size_t)nsim + 1) * sizeof *how);
    struct plansim sim = {.rows = l.v,
                          .n = nsim,
                          .size = sizeof *l.v,
                          .desc_off = offsetof(struct planner_row, desc),
                          .jobs = o->jobs,
                          .hook = o->hook,
                          .simulate = simulate_row,
                          .ctx = (void *)s,
                          .prune = 1,
                          .bound_off = offsetof(struct planner_row, bound_s),
                          .sim_off = offsetof(struct planner_row, simulated_s),
                          .pruned_off = offsetof(struct planner_row, pruned)};
    if (!rc) rc = how ? plansim_run(&sim, how, err) : tps_error_oom(err);
    for (int i = 0; i < nsim && !rc; i++) {
        info->pruned += l.v[i].pruned;
        if (how[i] == PLAN_SKIP) continue;
        if (l.v[i].fold_spread >= 0) info->folded++;
        if (l.v[i].fold_spread > PLANNER_FOLD_EXACT) info->inexact++;
        if (l.v[i].fold_spread > info->worst_spread) info->worst_spread = l.v[i].fold_spread;
    }
    free(how);
    if (rc) {
        free(l.v);
        return rc;
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, by_result);
    *rows = l.v;
    *nrows = l.n;
    return TPS_OK;
}
