/* pipeline.c - scenario or trace -> program -> check and tune -> simulation -> report (see
 * pipeline.h). */
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trace.h"
#include "core/tune.h"
#include "models/strategy.h"
#include "platforms/spec.h"
#include "sim/engine.h"

/* A job's op-by-op program above this many ops is folded when run.fold is auto. */
#define FOLD_AUTO_OPS 1e6

int pipeline_fold(const struct scn_scenario *s, const struct mdl_strategy *st,
                  struct mdl_job_fold *fold, struct tps_error *err)
{
    /* one chunk of layers of one micro-batch, forward then backward, on the first TP group */
    struct mdl_program p;
    int n = mdl_job_chunk_layers(&s->job, &s->model);
    int rc = mdl_strategy_lower(st, &s->model, &s->device, &s->framework, n, 1, &p, err);
    struct timing tm = {0};
    if (!rc) rc = pipeline_run_program(&p, &s->topo, &tm, err);
    memset(fold, 0, sizeof *fold);
    for (int i = 0; !rc && i < p.ranks[0].nops; i++) { /* every TP rank runs the same */
        const struct mdl_op *op = &p.ranks[0].ops[i];
        const struct timing_span *ts = timing_op(&tm, 0, i);
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
        report_release(&rep);
    }
    timing_release(&tm);
    mdl_program_release(&p);
    return rc;
}

/* pipeline_lower; a job's fold (zeroed when its layers are op by op) goes to *fold_out. */
static int lower_scenario(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                          int micro_batches, struct mdl_program *p, struct mdl_job_fold *fold_out,
                          struct tps_error *err)
{
    if (s->is_job && (!st || st == &s->strategy)) {
        const struct mdl_strategy *js = &s->strategy;
        int fold = s->fold;
        if (fold < 0)
            fold = mdl_job_ops(&s->job, js, &s->model, &s->device, &s->framework, NULL) >
                   FOLD_AUTO_OPS;
        struct mdl_job_fold own, *fp = fold_out ? fold_out : &own;
        memset(fp, 0, sizeof *fp);
        int rc = fold ? pipeline_fold(s, js, fp, err) : 0;
        if (rc) {
            memset(p, 0, sizeof *p);
            return rc;
        }
        return mdl_job_lower(&s->job, js, &s->model, &s->device, &s->framework, fold ? fp : NULL, p,
                             err);
    }
    if (!st) {
        st = &s->strategy;
        layers = s->layers;
        micro_batches = s->micro_batches;
    }
    return mdl_strategy_lower(st, &s->model, &s->device, &s->framework, layers, micro_batches, p,
                              err);
}

int pipeline_lower(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                   int micro_batches, struct mdl_program *p, struct tps_error *err)
{
    return lower_scenario(s, st, layers, micro_batches, p, NULL, err);
}

int pipeline_load_scenario(const char *path, const char *like, struct pipeline_job *j,
                           struct tps_error *err)
{
    memset(j, 0, sizeof *j);
    snprintf(j->input, sizeof j->input, "%s", path);
    int rc = scn_load_in(path, like, &j->scn, err);
    if (rc) return rc;
    j->topo = &j->scn.topo;
    return pipeline_lower_job(j, err);
}

int pipeline_lower_job(struct pipeline_job *j, struct tps_error *err)
{
    int rc = lower_scenario(&j->scn, NULL, 0, 0, &j->prog, &j->fold, err);
    if (rc) return rc;
    const struct scn_scenario *s = &j->scn;
    scn_describe_model(s, j->model, sizeof j->model);
    scn_describe_strategy(s, j->strategy, sizeof j->strategy);
    snprintf(j->device, sizeof j->device, "%s", s->device.name);
    snprintf(j->platform, sizeof j->platform, "%s (%s)", s->platform_spec, s->topo.desc);
    j->meta = (struct report_meta){s->path, j->model, j->device, j->platform, j->strategy};
    if (s->is_job)
        mdl_job_memory(&s->job, &s->strategy, &s->model, &s->framework, &j->mem);
    else
        mdl_strategy_memory(&s->strategy, &s->model, &s->framework, (int)s->model.layers, &j->mem);
    j->capacity = s->device.mem_bytes;
    j->has_memory = 1;
    return TPS_OK;
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
    j->meta = (struct report_meta){j->input, j->model, j->device, j->platform, j->strategy};
    return TPS_OK;
}

void pipeline_release(struct pipeline_job *j)
{
    mdl_program_release(&j->prog);
    scn_release(&j->scn);
    plat_topo_release(&j->trace_topo);
    memset(j, 0, sizeof *j);
}

int pipeline_run_program(struct mdl_program *p, const struct plat_topo *t, struct timing *tm,
                         struct tps_error *err)
{
    memset(tm, 0, sizeof *tm);
    if (p->nranks > t->ngpus)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL,
                             "the program has %d ranks but the platform only %d GPUs", p->nranks,
                             t->ngpus);
    int rc = mdl_program_check(p, NULL, err);
    if (!rc) rc = tune_program(p, t, err);
    if (!rc) rc = sim_engine_run(p, t, tm, err);
    return rc;
}

int pipeline_simulate(struct pipeline_job *j, struct timing *tm, struct report *r,
                      struct tps_error *err)
{
    struct timing own;
    struct timing *t = tm ? tm : &own;
    memset(r, 0, sizeof *r);
    int rc = pipeline_run_program(&j->prog, j->topo, t, err);
    if (!rc && report_build(&j->prog, t, r) != TPS_OK) rc = tps_error_oom(err);
    if (!rc && j->has_memory) report_set_memory(r, &j->mem, j->capacity);
    if (!rc && !j->from_trace && j->scn.is_job) {
        /* a folded chunk's TP collectives ran inside its compute op: count them as such */
        double chunks = (double)j->scn.job.micro_batches * j->scn.job.virtual_stages;
        r->job = 1;
        r->compute_s -= chunks * j->fold.tp_exposed_s;
        r->comm_s += chunks * j->fold.tp_comm_s;
        r->exposed_comm_s += chunks * j->fold.tp_exposed_s;
        r->tp_exposed_comm_s += chunks * j->fold.tp_exposed_s;
        r->pipeline_bubble_s =
            r->iteration_s - r->compute_s - r->tp_exposed_comm_s - r->dp_exposed_comm_s;
        /* a folded chunk has no per-layer ops: each layer gets its share of the chunk */
        int n = mdl_job_chunk_layers(&j->scn.job, &j->scn.model);
        for (int l = 0; j->fold.fwd_s > 0 && n > 0 && l < r->nlayers; l++) {
            r->layers[l].fwd_s = j->fold.fwd_s / n;
            r->layers[l].bwd_s = j->fold.bwd_s / n;
        }
    }
    if (!tm) timing_release(&own);
    return rc;
}

int pipeline_collective(const struct plat_topo *t, enum mdl_op_kind k, int ranks, double bytes,
                        struct pipeline_coll_how *how, double *time_s, struct tps_error *err)
{
    struct mdl_program p;
    int *members = malloc((size_t)ranks * sizeof *members);
    if (!members || mdl_program_init(&p, ranks) != 0) {
        free(members);
        return tps_error_oom(err);
    }
    for (int r = 0; r < ranks; r++)
        members[r] = r;
    int g = mdl_program_group(&p, ranks, members), nm = mdl_program_name(&p, mdl_op_kind_name(k));
    free(members);
    int rc = g < 0 || nm < 0;
    for (int r = 0; !rc && r < ranks; r++) {
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
        rc = mdl_program_add(&p, r, &o) < 0;
    }
    struct timing tm = {0};
    if (rc)
        rc = tps_error_oom(err);
    else if ((rc = pipeline_run_program(&p, t, &tm, err)) == 0) {
        *time_s = tm.end_s;
        how->algo = p.ranks[0].ops[0].algo;
        how->proto = p.ranks[0].ops[0].proto;
        how->gran = p.ranks[0].ops[0].gran;
    }
    timing_release(&tm);
    mdl_program_release(&p);
    return rc;
}
