/* compare.c - recorded against simulated op times of a trace (see compare.h). */
#include "validate/compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/gnuplot.h"
#include "common/stats.h"
#include "models/compute.h"
#include "pipeline/pipeline.h"
#include "validate/recording.h"
#include "common/inputs.h"

static int by_error(const void *a, const void *b)
{
    const struct cmp_op *x = a, *y = b;
    double ex = fabs(x->simulated_s - x->recorded_s), ey = fabs(y->simulated_s - y->recorded_s);
    return (ey > ex) - (ey < ex);
}

/* Fills r from the trace's program, its simulated times and (may be NULL) a scenario. */
static int compare(struct cmp_result *r, const struct timing *tm, const struct scn_scenario *s)
{
    const struct mdl_program *p = &r->prog;
    r->simulated_end_s = tm->end_s;
    r->has_model = s != NULL;
    r->ops = calloc((size_t)r->recorded + 1, sizeof *r->ops);
    r->worst = calloc((size_t)r->recorded + 1, sizeof *r->worst);
    r->layers = calloc((size_t)p->layers + 2, sizeof *r->layers);
    r->iters = calloc((size_t)r->niters + 1, sizeof *r->iters);
    /* per layer (slot 0: ops outside layers), then per iteration: first and last recorded and
     * simulated times */
    double(*span)[4] = malloc(((size_t)p->layers + 2) * sizeof *span);
    double(*ispan)[4] = malloc(((size_t)r->niters + 1) * sizeof *ispan);
    /* the scored iterations' recorded spans, then their simulated ones, for the medians */
    double *med = malloc(2 * ((size_t)r->niters + 1) * sizeof *med);
    if (!r->ops || !r->worst || !r->layers || !r->iters || !span || !ispan || !med) {
        free(span);
        free(ispan);
        free(med);
        return TPS_ENOMEM;
    }
    for (int l = 0; l <= p->layers; l++) {
        span[l][0] = span[l][2] = 1e300;
        span[l][1] = span[l][3] = -1;
    }
    for (int i = 0; i < r->niters; i++) {
        ispan[i][0] = ispan[i][2] = 1e300;
        ispan[i][1] = ispan[i][3] = -1;
        r->iters[i].iter = i;
    }
    /* each iteration's spans, and whether it holds warm-up */
    for (int k = 0; k < p->nranks; k++)
        for (int i = 0; i < p->ranks[k].nops; i++) {
            const struct mdl_op *o = &p->ranks[k].ops[i];
            if (!o->recorded || o->iter < 0 || o->iter >= r->niters) continue;
            const struct timing_span *ts = timing_op(tm, k, i);
            double *is = ispan[o->iter];
            is[0] = fmin(is[0], o->rec_start), is[1] = fmax(is[1], o->rec_end);
            is[2] = fmin(is[2], ts->start), is[3] = fmax(is[3], ts->end);
            r->iters[o->iter].warmup |= o->warmup;
        }
    /* layers are timed in one iteration: the first without warm-up (else the whole trace) */
    r->layer_iter = -1;
    for (int i = 0; i < r->niters && r->layer_iter < 0; i++)
        if (ispan[i][1] >= 0 && !r->iters[i].warmup) r->layer_iter = i;
    for (int k = 0; k < p->nranks; k++)
        for (int i = 0; i < p->ranks[k].nops; i++) {
            const struct mdl_op *o = &p->ranks[k].ops[i];
            if (!o->recorded) continue;
            const struct timing_span *ts = timing_op(tm, k, i);
            double rd = o->rec_end - o->rec_start, sd = ts->end - ts->start, md = -1;
            if (o->rec_end > r->recorded_end_s) r->recorded_end_s = o->rec_end;
            if (s && (o->kind == MDL_OP_GEMM || o->kind == MDL_OP_ATTN || o->kind == MDL_OP_MEM))
                md = o->kind == MDL_OP_MEM
                         ? mdl_mem_time(&s->device, o->bytes)
                         : mdl_gemm_time_wb(&s->device, s->model.dtype, o->flop, o->bytes);
            /* an iteration that loads kernels is warm-up as a whole: a kernel's first call may
             * not be the first of its size (another layout) */
            int warm =
                o->warmup || (o->iter >= 0 && o->iter < r->niters && r->iters[o->iter].warmup);
            r->ops[r->nops++] = (struct cmp_op){k, i, o->kind, p->names[o->name], rd, sd, md, warm};
            if (warm) {
                r->warmup_ops++;
                continue;
            }
            struct cmp_kind *ck = &r->kind[o->kind];
            ck->n++;
            ck->recorded_s += rd;
            ck->simulated_s += sd;
            if (md >= 0) ck->model_s += md;
            r->worst[r->nworst++] = r->ops[r->nops - 1];
            double *sp = span[o->layer + 1]; /* the trace reader bounds layer to -1..layers-1 */
            if (r->layer_iter < 0 || o->iter == r->layer_iter) {
                sp[0] = fmin(sp[0], o->rec_start), sp[1] = fmax(sp[1], o->rec_end);
                sp[2] = fmin(sp[2], ts->start), sp[3] = fmax(sp[3], ts->end);
            }
        }
    for (int l = -1; l < p->layers; l++) {
        const double *sp = span[l + 1];
        if (sp[1] < 0) continue;
        r->layers[r->nlayers++] = (struct cmp_layer){l, sp[1] - sp[0], sp[3] - sp[2]};
    }
    free(span);
    int n = 0;
    double *med_sim = med + r->niters + 1;
    for (int i = 0; i < r->niters; i++) {
        struct cmp_iter *it = &r->iters[i];
        if (ispan[i][1] < 0) continue;
        it->recorded_s = ispan[i][1] - ispan[i][0];
        it->simulated_s = ispan[i][3] - ispan[i][2];
        if (it->warmup || it->recorded_s <= 0) continue;
        double e = fabs(it->simulated_s - it->recorded_s) / it->recorded_s * 100;
        if (e > r->iter_max_abs_err_pct) r->iter_max_abs_err_pct = e;
        med[n] = it->recorded_s;
        med_sim[n++] = it->simulated_s;
    }
    r->scored_iters = n;
    tps_median_max(med, n, &r->iter_recorded_s, NULL);
    tps_median_max(med_sim, n, &r->iter_simulated_s, NULL);
    free(ispan);
    free(med);
    qsort(r->worst, (size_t)r->nworst, sizeof *r->worst, by_error);
    return TPS_OK;
}

int cmp_trace(const char *dir, const char *platform, const char *scenario, struct cmp_result *r,
              struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    struct scn_scenario s;
    memset(&s, 0, sizeof s);
    struct pipeline_job *j = pipeline_job_new();
    int rc = !j ? tps_error_oom(err) : scenario ? scn_load(scenario, &s, err) : TPS_OK;
    if (!rc) rc = pipeline_load_trace(dir, platform, scenario ? &s.topo : NULL, j, err);
    struct mdl_program *prog = j ? pipeline_job_program(j) : NULL;
    if (!rc) {
        const struct plat_topo *t = pipeline_job_topo(j);
        snprintf(r->trace, sizeof r->trace, "%s", pipeline_job_trace_dir(j));
        snprintf(r->platform, sizeof r->platform, "%s",
                 t->desc[0] ? t->desc : pipeline_job_meta(j)->platform);
        r->nranks = prog->nranks;
        for (int k = 0; k < prog->nranks; k++)
            for (int i = 0; i < prog->ranks[k].nops; i++)
                r->recorded += prog->ranks[k].ops[i].recorded;
        if (!r->recorded)
            rc = tps_error_set(err, TPS_EINVAL, pipeline_job_trace_dir(j), 0, 0, "rec_start",
                               "the trace has no recorded times (it was not written by the "
                               "tracer)");
    }
    if (!rc) {
        r->niters = rec_mark_iterations(prog);
        if (r->niters < 0) rc = tps_error_oom(err);
    }
    if (!rc) r->host_from_gaps = rec_host_launches(prog);
    struct timing tm = {0};
    if (!rc) rc = pipeline_run_program(prog, pipeline_job_topo(j), &tm, err);
    if (!rc) {
        pipeline_take_program(j, &r->prog); /* the result keeps the program (op names) */
        if (compare(r, &tm, scenario ? &s : NULL) != TPS_OK) rc = tps_error_oom(err);
    }
    timing_release(&tm);
    pipeline_free(j);
    scn_release(&s);
    return rc;
}

void cmp_release(struct cmp_result *r)
{
    free(r->ops);
    free(r->worst);
    free(r->layers);
    free(r->iters);
    mdl_program_release(&r->prog);
    memset(r, 0, sizeof *r);
}

struct ops_plot {
    const struct cmp_result *r;
    const char *out;
};

static void ops_body(FILE *g, void *ctx)
{
    const struct ops_plot *op = ctx;
    fprintf(g,
            "set logscale xy\nset xlabel 'recorded duration (s)'\n"
            "set ylabel 'simulated duration (s)'\nset key top left\nset grid\n"
            "set title 'tpsim validate trace: %s' noenhanced\n"
            "plot '%s/ops.dat' using 4:($4 > 0 && $5 > 0 ? $5 : 1/0) with points pt 7 "
            "title 'ops', x with lines title 'equal'\n",
            op->r->trace, op->out);
}

int cmp_write(const struct cmp_result *r, const char *out, int *plotted, struct tps_error *err)
{
    if (plotted) *plotted = 0;
    char path[1200];
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return tps_error_set(err, TPS_EIO, out, 0, 0, NULL, "cannot create: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/ops.dat", out);
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *dat = fopen(path, "w");
    if (!dat)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(dat, "# rank op kind recorded_s simulated_s model_s warmup\n");
    for (int x = 0; x < r->nops; x++) {
        const struct cmp_op *o = &r->ops[x];
        fprintf(dat, "%d %d %s %.9g %.9g %.9g %d\n", o->rank, o->op,
                mdl_op_kind_name((enum mdl_op_kind)o->kind), o->recorded_s, o->simulated_s,
                o->model_s, o->warmup);
    }
    if (fclose(dat) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    snprintf(path, sizeof path, "%s/ops.gp", out);
    char stem[1200];
    snprintf(stem, sizeof stem, "%s/ops", out);
    struct ops_plot op = {r, out};
    int drawn = tps_gnuplot_plot(path, stem, 640, 560, ops_body, &op);
    if (plotted) *plotted = drawn == 1;
    return TPS_OK;
}
