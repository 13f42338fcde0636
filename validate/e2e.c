/* e2e.c - end-to-end iterations measured against simulated (see e2e.h). */
#include "validate/e2e.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "common/csv.h"
#include "common/readall.h"
#include "common/stats.h"
#include "core/report.h"
#include "pipeline/pipeline.h"
#include "platforms/spec.h"

#define MAX_FIELDS 32
#define MAX_CSV    (4 << 20)

enum {
    C_MODEL,
    C_HEADS,
    C_HIDDEN,
    C_LAYERS,
    C_SEQ,
    C_GPUS,
    C_TP,
    C_PP,
    C_DP,
    C_GB,
    C_MB,
    C_INTERLEAVE,
    C_MODE,
    C_TIME,
    C_N
};
static const char *const cols[C_N] = {"model",          "attn_heads",      "hidden",
                                      "num_layers",     "seq_len",         "num_gpus",
                                      "tensor_par",     "pipeline_par",    "data_par",
                                      "global_batch",   "micro_batch",     "pipeline_interleaving",
                                      "recompute_mode", "iteration_time_s"};

/* The second format: ../shared/refdata/e2e/megatron_readme_2021_a100_weak_scaling.csv (the
 * Megatron-LM README's weak-scaling table, the runs of Narayanan et al. 2021, Table 1): model
 * shape, tensor x pipeline degree together, GPUs, global batch and the achieved TFLOP/s per GPU. */
enum { W_NAME, W_HIDDEN, W_LAYERS, W_MP, W_GPUS, W_GB, W_TFLOPS, W_N };
static const char *const wcols[W_N] = {"model_size",
                                       "hidden_size",
                                       "num_layers",
                                       "model_parallel_size",
                                       "num_gpus",
                                       "batch_size",
                                       "achieved_tflops_per_gpu"};
#define WEAK_SEQ   2048 /* the README: "a sequence length of 2048" */
#define WEAK_VOCAB 51200
#define WEAK_HD    128 /* head dimension: not in the table; GPT-3's from 6.7B up */

/* A weak-scaling row as a row of the first format (read_weak checked that it divides): tensor
 * parallel inside a machine (at most its `per_machine` GPUs) and pipeline parallel beyond,
 * Megatron-LM's placement rule (Narayanan et al. 2021, section 3.3); micro-batch 1, no
 * interleaving, full recomputation (the paper's FLOP count, 96 B s l h^2 (1 + s/6h + V/16lh),
 * includes the recomputed forward); the measured iteration time is that count over the achieved
 * FLOP/s of all GPUs. */
static void weak_row(const double *x, long per_machine, long *v, double *measured_s)
{
    long mp = (long)x[W_MP], gpus = (long)x[W_GPUS], h = (long)x[W_HIDDEN];
    long tp = mp < per_machine ? mp : per_machine;
    memset(v, 0, C_N * sizeof *v);
    v[C_HEADS] = h / WEAK_HD;
    v[C_HIDDEN] = h;
    v[C_LAYERS] = (long)x[W_LAYERS];
    v[C_SEQ] = WEAK_SEQ;
    v[C_GPUS] = gpus;
    v[C_TP] = tp;
    v[C_PP] = mp / tp;
    v[C_DP] = gpus / mp;
    v[C_GB] = (long)x[W_GB];
    v[C_MB] = 1;
    v[C_INTERLEAVE] = 1;
    double B = x[W_GB], s = WEAK_SEQ, l = x[W_LAYERS], hh = (double)h, V = WEAK_VOCAB;
    double flop = 96 * B * s * l * hh * hh * (1 + s / (6 * hh) + V / (16 * l * hh));
    *measured_s = flop / (x[W_TFLOPS] * 1e12 * (double)gpus);
}

/* The scenario of one row: the whole job, Megatron-LM's defaults otherwise. */
static int row_scenario(const struct e2e_row *w, const long *v, const struct mdl_device *dev,
                        const char *platform, long per_machine, enum mdl_dtype dtype,
                        struct scn_scenario *s, struct tps_error *err)
{
    memset(s, 0, sizeof *s);
    s->model = (struct mdl_model){.layers = v[C_LAYERS],
                                  .hidden = v[C_HIDDEN],
                                  .heads = v[C_HEADS],
                                  .ffn = 4 * v[C_HIDDEN],
                                  .seq = v[C_SEQ],
                                  .micro_batch = v[C_MB],
                                  .dtype = dtype,
                                  .vocab = 51200,
                                  /* Megatron-LM's GPT runs dropout on the attention probabilities
                                   * (attention_dropout 0.1 by default); Korthikanti et al.'s
                                   * 5as^2b activations count its mask and output */
                                  .attn_dropout = true};
    snprintf(s->model.name, sizeof s->model.name, "%.*s", (int)sizeof s->model.name - 1, w->name);
    s->device = *dev;
    mdl_framework_default(&s->framework);
    bool full = strstr(w->mode, "full") != NULL, sel = strstr(w->mode, "selective") != NULL;
    s->strategy = (struct mdl_strategy){.kind = MDL_STRAT_1D,
                                        .tp = (int)v[C_TP],
                                        .sequence_parallel = strstr(w->mode, "seq_par") != NULL,
                                        .async_grad_allreduce = true,
                                        .chunks = 1,
                                        .recompute = full,
                                        .selective = sel && !full};
    s->is_job = 1;
    s->fold = -1;
    s->global_batch = v[C_GB];
    long per = v[C_DP] * v[C_MB];
    s->job =
        (struct mdl_job){.pp = (int)v[C_PP],
                         .dp = (int)v[C_DP],
                         .schedule = v[C_INTERLEAVE] > 1 ? MDL_SCHED_INTERLEAVED : MDL_SCHED_1F1B,
                         .virtual_stages = (int)v[C_INTERLEAVE],
                         .micro_batches = (int)(per > 0 ? v[C_GB] / per : 0)};
    s->layers = (int)s->model.layers;
    s->micro_batches = s->job.micro_batches;
    if (v[C_GB] % per)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "global_batch",
                             "must be a multiple of data_par x micro_batch (%ld)", per);
    if (v[C_TP] * v[C_PP] * v[C_DP] != v[C_GPUS])
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "num_gpus",
                             "tensor_par x pipeline_par x data_par is %ld, not %ld",
                             v[C_TP] * v[C_PP] * v[C_DP], v[C_GPUS]);
    int rc;
    char line[480];
    long nodes = (v[C_GPUS] + per_machine - 1) / per_machine;
    snprintf(line, sizeof line, "%.400s nodes=%ld", platform, nodes);
    if ((rc = plat_spec_from_line(line, &s->topo, err))) return rc;
    snprintf(s->platform_spec, sizeof s->platform_spec, "%s", line);
    if ((rc = mdl_strategy_check(&s->strategy, &s->model, err))) return rc;
    return mdl_job_check(&s->job, &s->strategy, &s->model, err);
}

static int simulate_row(struct e2e_row *w, const long *v, const struct mdl_device *dev,
                        const char *platform, long per_machine, enum mdl_dtype dtype,
                        struct tps_error *err)
{
    struct scn_scenario s;
    struct mdl_program p = {0};
    struct timing tm = {0};
    struct report r = {0};
    int rc = row_scenario(w, v, dev, platform, per_machine, dtype, &s, err);
    if (!rc) rc = pipeline_lower(&s, NULL, 0, 0, &p, err);
    if (!rc) rc = pipeline_run_program(&p, &s.topo, &tm, err);
    if (!rc && report_build(&p, &tm, &r) != TPS_OK) rc = tps_error_oom(err);
    if (!rc) {
        struct mdl_memory mem;
        w->simulated_s = r.iteration_s;
        w->simulated_tflops = r.model_tflops_per_gpu;
        w->measured_tflops = p.model_flop / w->measured_s / p.nranks / 1e12;
        w->err_pct = (w->simulated_s - w->measured_s) / w->measured_s * 100;
        w->memory_gb = mdl_job_memory(&s.job, &s.strategy, &s.model, &s.framework, &mem) / 1e9;
        w->memory_fits = mem.total <= s.device.mem_bytes;
    }
    report_release(&r);
    timing_release(&tm);
    mdl_program_release(&p);
    scn_release(&s);
    return rc;
}

/* Field `text` of column `col` (0-based, named `name`) of row `line` as a positive number, a
 * whole one when `count`; an error at that cell otherwise. */
static int row_number(const char *text, int col, const char *name, bool count, const char *csv,
                      int line, double *x, struct tps_error *err)
{
    char *e;
    errno = 0;
    *x = strtod(text, &e);
    if (e == text || *e || errno || !isfinite(*x) || *x <= 0 || *x > 1e9 ||
        (count && *x != floor(*x)))
        return tps_error_set(err, TPS_EINVAL, csv, line, col + 1, name,
                             "expected a positive %s, got '%s'", count ? "whole number" : "number",
                             text);
    return 0;
}

/* Reads row `line` of a weak-scaling table (fields f, columns at) into w and v. */
static int read_weak(char **f, const int *at, const char *csv, int line, long per_machine,
                     struct e2e_row *w, long *v, struct tps_error *err)
{
    double x[W_N] = {0};
    for (int c = W_HIDDEN; c < W_N; c++) {
        int rc = row_number(f[at[c]], at[c], wcols[c], c != W_TFLOPS, csv, line, &x[c], err);
        if (rc) return rc;
    }
    long mp = (long)x[W_MP], tp = mp < per_machine ? mp : per_machine;
    if (mp % tp)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[W_MP] + 1, wcols[W_MP],
                             "%ld is not a multiple of the tensor parallel degree %ld (the GPUs "
                             "of one machine, or fewer)",
                             mp, per_machine);
    if ((long)x[W_GPUS] % mp)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[W_GPUS] + 1, wcols[W_GPUS],
                             "%ld GPUs are not a multiple of model_parallel_size %ld",
                             (long)x[W_GPUS], mp);
    if ((long)x[W_HIDDEN] % WEAK_HD)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[W_HIDDEN] + 1, wcols[W_HIDDEN],
                             "%ld is not a multiple of the head dimension %d", (long)x[W_HIDDEN],
                             WEAK_HD);
    weak_row(x, per_machine, v, &w->measured_s);
    snprintf(w->mode, sizeof w->mode, "full_recompute");
    snprintf(w->name, sizeof w->name, "%.30s weak scaling", f[at[W_NAME]]);
    return 0;
}

/* Reads row `line` of a table in the first format (fields f, columns at) into w and v. */
static int read_table5(char **f, const int *at, const char *csv, int line, struct e2e_row *w,
                       long *v, struct tps_error *err)
{
    snprintf(w->mode, sizeof w->mode, "%s", f[at[C_MODE]]);
    snprintf(w->name, sizeof w->name, "%.30s %.30s", f[at[C_MODEL]], w->mode);
    for (int c = C_HEADS; c < C_N; c++) {
        if (c == C_MODE) continue;
        double x;
        int rc = row_number(f[at[c]], at[c], cols[c], c != C_TIME, csv, line, &x, err);
        if (rc) return rc;
        if (c == C_TIME)
            w->measured_s = x;
        else
            v[c] = (long)x;
    }
    if (!strstr(w->mode, "full") && !strstr(w->mode, "selective") && strcmp(w->mode, "none"))
        return tps_error_set(err, TPS_EINVAL, csv, line, at[C_MODE] + 1, "recompute_mode",
                             "expected full_recompute, ...selective_recompute or none, got '%s'",
                             w->mode);
    return 0;
}

int e2e_run(const char *csv, const struct mdl_device *dev, const char *platform,
            enum mdl_dtype dtype, long max_gpus,
            void (*progress)(int i, const char *name, void *ctx), void *ctx, struct e2e_result *res,
            struct tps_error *err)
{
    memset(res, 0, sizeof *res);
    size_t len = 0;
    char *text = tps_read_file(csv, MAX_CSV, "an end-to-end table", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    char store[4096], *f[MAX_FIELDS];
    const char *next, *end = text + len;
    int at[C_N], nf = tps_csv_record(text, end, store, sizeof store, f, MAX_FIELDS, &next);
    int rc = nf <= 0 ? tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "no header line") : 0;
    int last = 0;
    /* the weak-scaling table's format, told by its model_parallel_size column */
    bool weak = !rc && tps_csv_column(f, nf, wcols[W_MP]) >= 0;
    int ncols = weak ? W_N : C_N;
    const char *const *names = weak ? wcols : cols;
    for (int c = 0; !rc && c < ncols; c++) {
        if ((at[c] = tps_csv_column(f, nf, names[c])) < 0)
            rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "missing column '%s'",
                               names[c]);
        else if (at[c] > last)
            last = at[c];
    }
    long per_machine = 1; /* GPUs per machine of the platform */
    if (!rc) {
        struct plat_topo one = {0};
        rc = plat_spec_from_line(platform, &one, err);
        per_machine = one.ngpus > 0 ? one.ngpus : 1;
        plat_topo_release(&one);
    }
    double *abs_err = NULL;
    int cap = 0, line = 1;
    for (const char *p = next; !rc;) {
        nf = tps_csv_row(&p, end, store, sizeof store, f, MAX_FIELDS, last, csv, &line, err);
        if (nf <= 0) {
            rc = nf < 0 ? err->code : 0;
            break;
        }
        if (res->n == cap) {
            cap = cap ? 2 * cap : 16;
            struct e2e_row *nr = realloc(res->rows, (size_t)cap * sizeof *nr);
            double *ne = realloc(abs_err, (size_t)cap * sizeof *ne);
            if (nr) res->rows = nr;
            if (ne) abs_err = ne;
            if (!nr || !ne) {
                rc = tps_error_oom(err);
                break;
            }
        }
        struct e2e_row *w = &res->rows[res->n];
        memset(w, 0, sizeof *w);
        long v[C_N] = {0};
        rc = weak ? read_weak(f, at, csv, line, per_machine, w, v, err)
                  : read_table5(f, at, csv, line, w, v, err);
        if (rc) break;
        w->gpus = v[C_GPUS];
        w->tp = v[C_TP];
        w->pp = v[C_PP];
        w->dp = v[C_DP];
        w->global_batch = v[C_GB];
        w->micro_batch = v[C_MB];
        w->interleave = v[C_INTERLEAVE];
        if (max_gpus > 0 && w->gpus > max_gpus) {
            res->skipped++;
            continue;
        }
        if (progress) progress(res->n, w->name, ctx);
        if ((rc = simulate_row(w, v, dev, platform, per_machine, dtype, err))) {
            if (!err->path[0]) {
                /* a row the job model refuses: say which */
                snprintf(err->path, sizeof err->path, "%s", csv);
                err->line = line;
            }
            break;
        }
        abs_err[res->n] = fabs(w->err_pct);
        res->n++;
    }
    if (!rc && res->n == 0 && res->skipped == 0)
        rc = tps_error_set(err, TPS_EINVAL, csv, line, 1, NULL, "no rows");
    if (!rc) tps_median_max(abs_err, res->n, &res->median_abs_err_pct, &res->max_abs_err_pct);
    free(abs_err);
    free(text);
    return rc;
}

void e2e_release(struct e2e_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}
