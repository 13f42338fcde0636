/* e2e.c - end-to-end iterations measured against simulated (see e2e.h). */
#include "validate/e2e.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "common/grow.h"
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

/* The third format: ../shared/refdata/e2e/dgxc_bench_eos_h100_gpt3_nemotron4.csv (NVIDIA's DGX
 * Cloud recipes): each row's model shape, degrees (cp 1 and vp empty: none), batch, precision
 * and step time; release optional. */
enum {
    P_MODEL,
    P_PREC,
    P_GPUS,
    P_SEQ,
    P_LAYERS,
    P_HIDDEN,
    P_FFN,
    P_HEADS,
    P_KV,
    P_VOCAB,
    P_TP,
    P_PP,
    P_CP,
    P_VP,
    P_DP,
    P_MB,
    P_GB,
    P_TIME,
    P_N
};
static const char *const pcols[P_N] = {
    "model", "precision", "num_gpus", "seq_len", "num_layers", "hidden",
    "ffn",   "heads",     "kv_heads", "vocab",   "tp",         "pp",
    "cp",    "vp",        "dp",       "mbs",     "gbs",        "step_time_s"};

/* The fourth format: ../shared/refdata/e2e/nemo_long_context_cp_llama2_7b_h100_fp8.csv (NeMo's
 * long-context runs): a model preset by name, degrees with CP, batch, precision and model TFLOP/s
 * per GPU. */
enum { T_MODEL, T_PREC, T_SEQ, T_GPUS, T_GB, T_TP, T_PP, T_DP, T_CP, T_TFLOPS, T_N };
static const char *const tcols[T_N] = {
    "model", "precision", "seq_len", "num_gpus", "gbs",
    "tp",    "pp",        "dp",      "cp",       "tflops_per_gpu_with_cp"};

/* NeMo's model FLOPs of one iteration of a Llama-family model (NeMo's flops_formulas.llama2;
 * NVIDIA's published TFLOP/s divide it by the step time and the GPUs): B s L h^2 (12 + 12 g/a +
 * 18 f/h + 12 s/h + 6 V/(L h)), with B sequences of s tokens, L layers, width h, a heads and g
 * key/value heads, FFN f, vocabulary V. */
static double nemo_llama_flop(const struct mdl_model *m, double B)
{
    double s = (double)m->seq, L = (double)m->layers, h = (double)m->hidden;
    double a = (double)m->heads, g = (double)mdl_model_kv_heads(m), f = (double)m->ffn;
    double V = (double)m->vocab;
    return B * s * L * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * V / (L * h));
}

/* The most named columns of any format: the columns' positions of a table fit in this many. */
#define E2E_MAX_COLS P_N
_Static_assert((int)P_N >= (int)C_N && (int)P_N >= (int)W_N && (int)P_N >= (int)T_N,
               "E2E_MAX_COLS holds every format's columns");

/* A recipe table's runs table (e2e.h): per release and model, how its rows ran. */
enum {
    Q_RECOMPUTE,
    Q_OVERLAP,
    Q_DISTOPT,
    Q_GRAD,
    Q_PARAM,
    Q_UNTIED,
    Q_BF16_GRADS,
    Q_FP8_PARAMS,
    Q_VP,
    Q_P2P,
    Q_SYNC,
    Q_N
};
static const char *const qcols[Q_N] = {
    "recompute",           "tp_comm_overlap",      "distributed_optimizer",
    "overlap_grad_reduce", "overlap_param_gather", "untied_embeddings",
    "grad_reduce_in_bf16", "fp8_param_gather",     "virtual_stages",
    "overlap_p2p_comm",    "batch_p2p_sync"};

/* The runs table's true/false columns and the row's switch each sets (an empty cell: false). */
static const struct {
    int col;
    size_t at;
} qflags[] = {{Q_OVERLAP, offsetof(struct e2e_row, tp_comm_overlap)},
              {Q_DISTOPT, offsetof(struct e2e_row, distributed_optimizer)},
              {Q_GRAD, offsetof(struct e2e_row, overlap_grad_reduce)},
              {Q_PARAM, offsetof(struct e2e_row, overlap_param_gather)},
              {Q_UNTIED, offsetof(struct e2e_row, untied_embeddings)},
              {Q_BF16_GRADS, offsetof(struct e2e_row, grad_reduce_in_bf16)},
              {Q_FP8_PARAMS, offsetof(struct e2e_row, fp8_param_gather)},
              {Q_P2P, offsetof(struct e2e_row, overlap_p2p_comm)}};

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

/* How a weak-scaling row was run, where its table does not say (weak_row's defaults otherwise):
 * optional columns of the table itself, or the row of a runs table (e2e_run's `runs`) whose
 * model_size names it, which overrides them. Empty cells keep the default. */
enum { R_HEADS, R_MB, R_INTERLEAVE, R_DDP, R_ASYNC, R_N };
static const char *const rcols[R_N] = {"attn_heads", "micro_batch", "pipeline_interleaving", "ddp",
                                       "async_grad_allreduce"};

struct run_cell {
    long value;       /* whole number; ddp: 1 torch, 0 local; async: 1 true, 0 false */
    int set;          /* the cell gave a value */
    const char *path; /* where: the table's own or the runs table's file, line and column */
    int line, col;
};

struct run_row {
    char name[64]; /* model_size */
    struct run_cell c[R_N];
    int line, used;
};

struct runs {
    const char *path;
    int n;
    struct run_row *rows;
};

/* Starts *cell from `text`, cell (line, col) of `path`: 0 for an empty cell (nothing set), else
 * 1 with the cell's position kept for its errors. */
static int cell_begin(const char *text, const char *path, int line, int col, struct run_cell *cell)
{
    memset(cell, 0, sizeof *cell);
    if (!text[0]) return 0;
    *cell = (struct run_cell){.set = 1, .path = path, .line = line, .col = col};
    return 1;
}

/* Reads `text`, cell (line, col) of `path`, into *cell as setting c; an empty cell sets nothing. */
static int run_cell_read(const char *text, int c, const char *path, int line, int col,
                         struct run_cell *cell, struct tps_error *err)
{
    if (!cell_begin(text, path, line, col, cell)) return 0;
    if (c == R_DDP || c == R_ASYNC) {
        const char *yes = c == R_DDP ? "torch" : "true", *no = c == R_DDP ? "local" : "false";
        if (!strcmp(text, yes) || (c == R_ASYNC && !strcmp(text, "1")))
            cell->value = 1;
        else if (!strcmp(text, no) || (c == R_ASYNC && !strcmp(text, "0")))
            cell->value = 0;
        else
            return tps_error_set(err, TPS_EINVAL, path, line, col, rcols[c],
                                 "expected %s or %s, got '%s'", yes, no, text);
        return 0;
    }
    double x;
    int rc = row_number(text, col - 1, rcols[c], true, path, line, &x, err);
    cell->value = (long)x;
    return rc;
}

/* The next row of a runs table at *p (fields into f, from store): comment lines (starting with
 * '#') and blank lines are skipped. Returns the field count, 0 at the end, -1 on error. */
static int runs_row(const char **p, const char *end, char *store, size_t size, char **f, int last,
                    const char *path, int *line, struct tps_error *err)
{
    while (*p < end && (**p == '#' || **p == '\n' || **p == '\r')) {
        const char *nl = memchr(*p, '\n', (size_t)(end - *p));
        *p = nl ? nl + 1 : end;
        (*line)++;
    }
    if (*p >= end) return 0;
    return tps_csv_row(p, end, store, size, f, MAX_FIELDS, last, path, line, err);
}

/* Reads the runs table at `path` into *r: a header with model_size and any of rcols, then one
 * row per model; lines starting with '#' are comments. */
static int runs_read(const char *path, struct runs *r, struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    size_t len = 0;
    char *text = tps_read_file(path, 1 << 20, "a runs table", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    const char *p = text, *end = text + len;
    char store[4096], *f[MAX_FIELDS];
    int line = 0, at[R_N], key = -1, last = 0, cap = 0, rc = 0, header = 0;
    while (!rc && p < end) {
        int nf = runs_row(&p, end, store, sizeof store, f, header ? last : -1, path, &line, err);
        if (nf <= 0) {
            rc = nf < 0 ? err->code : 0;
            break;
        }
        if (!header) {
            header = 1;
            if ((key = tps_csv_column(f, nf, "model_size")) < 0)
                rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "header",
                                   "missing column 'model_size'");
            last = key;
            for (int c = 0; c < R_N; c++)
                if ((at[c] = tps_csv_column(f, nf, rcols[c])) > last) last = at[c];
            continue;
        }
        for (int i = 0; !rc && i < r->n; i++)
            if (!strcmp(r->rows[i].name, f[key]))
                rc = tps_error_set(err, TPS_EINVAL, path, line, key + 1, "model_size",
                                   "'%s' is already given on line %d", f[key], r->rows[i].line);
        if (rc) break;
        if (tps_grow(&r->rows, &cap, r->n + 1, sizeof *r->rows, 16)) {
            rc = tps_error_oom(err);
            break;
        }
        struct run_row *w = &r->rows[r->n++];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "%s", f[key]);
        w->line = line;
        for (int c = 0; !rc && c < R_N; c++)
            if (at[c] >= 0) rc = run_cell_read(f[at[c]], c, path, line, at[c] + 1, &w->c[c], err);
    }
    if (!rc && !header) rc = tps_error_set(err, TPS_EINVAL, path, 1, 1, "header", "no header line");
    free(text);
    return rc;
}

static void runs_release(struct runs *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* A recipe table's runs table (e2e.h): rows keyed by release and model. */
struct recipe_run {
    char release[24], model[48];
    struct run_cell c[Q_N];
    int line, used;
};

struct recipe_runs {
    const char *path;
    int n;
    struct recipe_run *rows;
};

/* Reads `text`, cell (line, col) of `path`, into *cell as setting c of a recipe's runs table. */
static int recipe_cell_read(const char *text, int c, const char *path, int line, int col,
                            struct run_cell *cell, struct tps_error *err)
{
    if (!cell_begin(text, path, line, col, cell)) return 0;
    if (c == Q_VP) {
        double x;
        int rc = row_number(text, col - 1, qcols[c], true, path, line, &x, err);
        cell->value = (long)x;
        return rc;
    }
    static const char *const rec[] = {"none", "selective", "full"}, *const yn[] = {"false", "true"};
    const char *const *names = c == Q_RECOMPUTE ? rec : yn;
    int n = c == Q_RECOMPUTE ? 3 : 2;
    for (int i = 0; i < n; i++)
        if (!strcmp(text, names[i])) {
            cell->value = i;
            return 0;
        }
    return tps_error_set(err, TPS_EINVAL, path, line, col, qcols[c], "expected %s, got '%s'",
                         c == Q_RECOMPUTE ? "none, selective or full" : "true or false", text);
}

/* Reads the runs table of a recipe table at `path` into *r. */
static int recipe_runs_read(const char *path, struct recipe_runs *r, struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    size_t len = 0;
    char *text = tps_read_file(path, 1 << 20, "a runs table", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    const char *p = text, *end = text + len;
    char store[4096], *f[MAX_FIELDS];
    int line = 0, at[Q_N], rel = -1, mod = -1, last = 0, cap = 0, rc = 0, header = 0;
    while (!rc && p < end) {
        int nf = runs_row(&p, end, store, sizeof store, f, header ? last : -1, path, &line, err);
        if (nf <= 0) {
            rc = nf < 0 ? err->code : 0;
            break;
        }
        if (!header) {
            header = 1;
            rel = tps_csv_column(f, nf, "release");
            if ((mod = tps_csv_column(f, nf, "model")) < 0)
                rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "header",
                                   "missing column 'model'");
            last = mod > rel ? mod : rel;
            for (int c = 0; c < Q_N; c++)
                if ((at[c] = tps_csv_column(f, nf, qcols[c])) > last) last = at[c];
            continue;
        }
        const char *release = rel >= 0 ? f[rel] : "";
        for (int i = 0; !rc && i < r->n; i++)
            if (!strcmp(r->rows[i].model, f[mod]) && !strcmp(r->rows[i].release, release))
                rc = tps_error_set(err, TPS_EINVAL, path, line, mod + 1, "model",
                                   "'%s %s' is already given on line %d", release, f[mod],
                                   r->rows[i].line);
        if (rc) break;
        if (tps_grow(&r->rows, &cap, r->n + 1, sizeof *r->rows, 16)) {
            rc = tps_error_oom(err);
            break;
        }
        struct recipe_run *w = &r->rows[r->n++];
        memset(w, 0, sizeof *w);
        snprintf(w->release, sizeof w->release, "%s", release);
        snprintf(w->model, sizeof w->model, "%s", f[mod]);
        w->line = line;
        for (int c = 0; !rc && c < Q_N; c++)
            if (at[c] >= 0)
                rc = recipe_cell_read(f[at[c]], c, path, line, at[c] + 1, &w->c[c], err);
    }
    if (!rc && !header) rc = tps_error_set(err, TPS_EINVAL, path, 1, 1, "header", "no header line");
    free(text);
    return rc;
}

/* A weak-scaling row as a row of the first format (read_weak checked that it divides): tensor
 * parallel inside a machine (at most its `per_machine` GPUs) and pipeline parallel beyond,
 * Megatron-LM's placement rule (Narayanan et al. 2021, section 3.3); by default (weak_apply
 * replaces them with the row's settings) micro-batch 1, no interleaving; full recomputation (the
 * paper's FLOP count, 96 B s l h^2 (1 + s/6h + V/16lh), includes the recomputed forward); the
 * measured iteration time is that count over the achieved FLOP/s of all GPUs. */
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
                                  .ffn = w->ffn > 0 ? w->ffn : 4 * v[C_HIDDEN],
                                  .seq = v[C_SEQ],
                                  .micro_batch = v[C_MB],
                                  /* a recipe's precision is its row's: bf16, or FP8 over it */
                                  .dtype = w->recipe ? MDL_BF16 : dtype,
                                  .fp8 = w->fp8,
                                  .vocab = w->vocab > 0 ? w->vocab : 51200,
                                  .kv_heads = w->kv_heads,
                                  .glu = w->glu,
                                  /* Megatron-LM's GPT runs dropout on the attention probabilities
                                   * (attention_dropout 0.1 by default); Korthikanti et al.'s
                                   * 5as^2b activations count its mask and output. A recipe's
                                   * fused attention applies it inside its kernel. */
                                  .attn_dropout = !w->recipe};
    snprintf(s->model.name, sizeof s->model.name, "%.*s", (int)sizeof s->model.name - 1, w->name);
    s->device = *dev;
    mdl_framework_default(&s->framework);
    bool full = strstr(w->mode, "full") != NULL, sel = strstr(w->mode, "selective") != NULL;
    s->strategy = (struct mdl_strategy){.kind = MDL_STRAT_1D,
                                        .tp = (int)v[C_TP],
                                        .cp = w->cp > 1 ? (int)w->cp : 0,
                                        .sequence_parallel = strstr(w->mode, "seq_par") != NULL,
                                        .async_grad_allreduce = w->async_grad_allreduce,
                                        .tp_comm_overlap = w->tp_comm_overlap && v[C_TP] > 1,
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
    s->job.overlap_grad_reduce = w->overlap_grad_reduce;
    s->job.zero = w->distributed_optimizer ? 1 : 0;
    s->job.overlap_param_gather = w->overlap_param_gather;
    s->job.untied_embeddings = w->untied_embeddings;
    s->job.grad_reduce_in_bf16 = w->grad_reduce_in_bf16 && s->model.dtype == MDL_BF16;
    /* FP8 weights for the FP8 rows of a recipe that keeps them (a BF16 row has none) */
    s->job.fp8_param_gather = w->fp8_param_gather && s->model.fp8 && s->job.zero >= 1;
    /* Megatron-LM overlaps the point-to-point messages of the interleaved schedule alone */
    s->job.overlap_p2p_comm = w->overlap_p2p_comm && s->job.schedule == MDL_SCHED_INTERLEAVED;
    s->job.batch_p2p_nosync = w->batch_p2p_nosync;
    s->layers = (int)s->model.layers;
    s->micro_batches = s->job.micro_batches;
    if (v[C_GB] % per)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "global_batch",
                             "must be a multiple of data_par x micro_batch (%ld)", per);
    /* context parallelism runs the attention as fused kernels */
    if (w->cp > 1 || w->recipe) s->framework.attention = MDL_ATTENTION_FLASH;
    long cp = w->cp > 1 ? w->cp : 1;
    if (v[C_TP] * cp * v[C_PP] * v[C_DP] != v[C_GPUS])
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "num_gpus",
                             "tensor_par x %spipeline_par x data_par is %ld, not %ld",
                             cp > 1 ? "context_par x " : "", v[C_TP] * cp * v[C_PP] * v[C_DP],
                             v[C_GPUS]);
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
    struct report r = {0};
    int rc = row_scenario(w, v, dev, platform, per_machine, dtype, &s, err);
    if (!rc) rc = pipeline_simulate_scenario(&s, &r, err);
    if (!rc) {
        struct mdl_memory mem;
        w->simulated_s = r.iteration_s;
        w->simulated_tflops = r.model_tflops_per_gpu;
        w->measured_tflops = r.model_flop / w->measured_s / r.nranks / 1e12;
        w->err_pct = (w->simulated_s - w->measured_s) / w->measured_s * 100;
        w->memory_gb = mdl_job_memory(&s.job, &s.strategy, &s.model, &s.framework, &mem) / 1e9;
        w->memory_fits = mem.total <= mdl_device_usable(&s.device);
        w->breakdown = r.breakdown;
    }
    report_release(&r);
    scn_release(&s);
    return rc;
}

/* The settings of a weak-scaling row (fields f, named by column name_col): the table's own
 * optional columns (ropt, -1 where absent), then its runs table's row, if any. */
static int weak_settings(char **f, int name_col, const int *ropt, const char *csv, int line,
                         struct runs *runs, struct run_cell *cell, struct tps_error *err)
{
    for (int c = 0; c < R_N; c++) {
        memset(&cell[c], 0, sizeof cell[c]);
        int rc =
            ropt[c] < 0 ? 0 : run_cell_read(f[ropt[c]], c, csv, line, ropt[c] + 1, &cell[c], err);
        if (rc) return rc;
    }
    for (int i = 0; runs && i < runs->n; i++)
        if (!strcmp(runs->rows[i].name, f[name_col])) {
            runs->rows[i].used = 1;
            for (int c = 0; c < R_N; c++)
                if (runs->rows[i].c[c].set) cell[c] = runs->rows[i].c[c];
        }
    return 0;
}

/* An error at the cell that gave setting c. */
static int cell_error(const struct run_cell *cell, int c, const char *msg, struct tps_error *err)
{
    return tps_error_set(err, TPS_EINVAL, cell[c].path, cell[c].line, cell[c].col, rcols[c], "%s",
                         msg);
}

/* Applies the settings cell[] to row w and its values v (weak_row's defaults), checking each
 * against the row at the cell that gave it. */
static int weak_apply(const struct run_cell *cell, struct e2e_row *w, long *v,
                      struct tps_error *err)
{
    char msg[320];
    if (cell[R_HEADS].set) {
        long a = cell[R_HEADS].value;
        if (v[C_HIDDEN] % a || a % v[C_TP]) {
            snprintf(msg, sizeof msg,
                     "%ld heads must divide hidden_size %ld and be a multiple of the tensor "
                     "parallel degree %ld",
                     a, v[C_HIDDEN], v[C_TP]);
            return cell_error(cell, R_HEADS, msg, err);
        }
        v[C_HEADS] = a;
    }
    if (cell[R_MB].set) {
        long b = cell[R_MB].value;
        if (v[C_GB] % (v[C_DP] * b)) {
            snprintf(msg, sizeof msg,
                     "%ld does not divide the %ld sequences of each of the %ld replicas", b,
                     v[C_GB] / v[C_DP], v[C_DP]);
            return cell_error(cell, R_MB, msg, err);
        }
        v[C_MB] = b;
    }
    if (cell[R_INTERLEAVE].set && cell[R_INTERLEAVE].value > 1) {
        long iv = cell[R_INTERLEAVE].value, m = v[C_GB] / (v[C_DP] * v[C_MB]);
        if (v[C_PP] < 2 || v[C_LAYERS] % (v[C_PP] * iv) || m % v[C_PP]) {
            snprintf(msg, sizeof msg,
                     "%ld virtual stages need 2 or more pipeline stages (%ld), layers (%ld) that "
                     "divide into stages x virtual stages and micro-batches (%ld) a multiple of "
                     "the stages",
                     iv, v[C_PP], v[C_LAYERS], m);
            return cell_error(cell, R_INTERLEAVE, msg, err);
        }
        v[C_INTERLEAVE] = iv;
    }
    w->overlap_grad_reduce = cell[R_DDP].set && cell[R_DDP].value;
    w->async_grad_allreduce = !cell[R_ASYNC].set || cell[R_ASYNC].value;
    return 0;
}

/* Reads row `line` of a weak-scaling table (fields f, columns at, optional columns ropt) into w
 * and v, with the row's settings from runs (may be NULL). */
static int read_weak(char **f, const int *at, const int *ropt, const char *csv, int line,
                     long per_machine, struct runs *runs, struct e2e_row *w, long *v,
                     struct tps_error *err)
{
    double x[W_N] = {0};
    for (int c = W_HIDDEN; c < W_N; c++) {
        int rc = row_number(f[at[c]], at[c], wcols[c], c != W_TFLOPS, csv, line, &x[c], err);
        if (rc) return rc;
    }
    struct run_cell cell[R_N];
    int rc = weak_settings(f, at[W_NAME], ropt, csv, line, runs, cell, err);
    if (rc) return rc;
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
    if (!cell[R_HEADS].set && (long)x[W_HIDDEN] % WEAK_HD)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[W_HIDDEN] + 1, wcols[W_HIDDEN],
                             "%ld is not a multiple of the head dimension %d (give attn_heads)",
                             (long)x[W_HIDDEN], WEAK_HD);
    weak_row(x, per_machine, v, &w->measured_s);
    if ((rc = weak_apply(cell, w, v, err))) return rc;
    snprintf(w->mode, sizeof w->mode, "full_recompute");
    snprintf(w->name, sizeof w->name, "%.30s weak scaling", f[at[W_NAME]]);
    return 0;
}

/* The first format's optional column: the context-parallel degree (1 where it is absent). */
#define CP_COLUMN "context_par"

/* Reads row `line` of a table in the first format (fields f, columns at, the context_par column
 * cpcol or -1) into w and v. */
static int read_table5(char **f, const int *at, int cpcol, const char *csv, int line,
                       struct e2e_row *w, long *v, struct tps_error *err)
{
    w->cp = 1;
    if (cpcol >= 0) {
        double x;
        int rc = row_number(f[cpcol], cpcol, CP_COLUMN, true, csv, line, &x, err);
        if (rc) return rc;
        w->cp = (long)x;
    }
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

/* Applies the runs row of (w->release, model) to row w and its values v: recompute (w->mode,
 * with sequence parallelism when tp > 1), the switches, and virtual_stages where the table gives
 * none (vp_given). An error at the table's model cell (col) when runs has no such row. */
static int recipe_apply(struct recipe_runs *runs, const char *model, bool vp_given, const char *csv,
                        int line, int col, struct e2e_row *w, long *v, struct tps_error *err)
{
    int recompute = 0;
    struct recipe_run *r = NULL;
    for (int i = 0; runs && i < runs->n && !r; i++)
        if (!strcmp(runs->rows[i].model, model) && !strcmp(runs->rows[i].release, w->release))
            r = &runs->rows[i];
    if (runs && !r)
        return tps_error_set(err, TPS_EINVAL, csv, line, col + 1, "model",
                             "'%s%s%s' has no row in the runs table %s", w->release,
                             w->release[0] ? " " : "", model, runs->path);
    if (r) {
        const struct run_cell *c = r->c;
        r->used = 1;
        recompute = c[Q_RECOMPUTE].set ? (int)c[Q_RECOMPUTE].value : 0;
        for (size_t k = 0; k < sizeof qflags / sizeof qflags[0]; k++)
            *(bool *)((char *)w + qflags[k].at) = c[qflags[k].col].set && c[qflags[k].col].value;
        /* batch_p2p_sync: true unless the cell says false (Megatron-LM's default) */
        w->batch_p2p_nosync = c[Q_SYNC].set && !c[Q_SYNC].value;
        if (c[Q_VP].set && vp_given)
            return cell_error(c, Q_VP, "the table gives this row's vp: leave virtual_stages empty",
                              err);
        if (c[Q_VP].set) v[C_INTERLEAVE] = c[Q_VP].value;
    }
    snprintf(w->mode, sizeof w->mode, "%s%s", v[C_TP] > 1 ? "seq_par " : "",
             recompute == 2 ? "full_recompute"
             : recompute    ? "selective_recompute"
                            : "none");
    return 0;
}

/* The precision cell `prec` (column col) into w->fp8: BF16 or FP8. */
static int read_precision(const char *prec, const char *csv, int line, int col, struct e2e_row *w,
                          struct tps_error *err)
{
    if (strcasecmp(prec, "bf16") && strcasecmp(prec, "fp8"))
        return tps_error_set(err, TPS_EINVAL, csv, line, col + 1, "precision",
                             "expected BF16 or FP8, got '%s'", prec);
    w->fp8 = !strcasecmp(prec, "fp8");
    return 0;
}

/* Reads row `line` of a TFLOP/s table (fields f, columns at) into w and v: the model preset the
 * model column names (case aside), micro-batch 1, the measured step time from NeMo's model FLOPs
 * over the TFLOP/s of all GPUs (nemo_llama_flop), the settings from runs by model. */
static int read_tflops(char **f, const int *at, const char *csv, int line, struct recipe_runs *runs,
                       struct e2e_row *w, long *v, struct tps_error *err)
{
    double x[T_N] = {0};
    for (int c = T_SEQ; c < T_N; c++) {
        int rc = row_number(f[at[c]], at[c], tcols[c], c != T_TFLOPS, csv, line, &x[c], err);
        if (rc) return rc;
    }
    int rc = read_precision(f[at[T_PREC]], csv, line, at[T_PREC], w, err);
    if (rc) return rc;
    char name[32];
    size_t n = 0;
    for (const char *p = f[at[T_MODEL]]; *p && n + 1 < sizeof name; p++)
        name[n++] = (char)tolower((unsigned char)*p);
    name[n] = 0;
    struct mdl_model m;
    if (mdl_model_preset(name, &m) != 0)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[T_MODEL] + 1, "model",
                             "'%s' names no model preset", f[at[T_MODEL]]);
    if (m.moe.experts > 0 || !m.glu)
        return tps_error_set(err, TPS_EINVAL, csv, line, at[T_MODEL] + 1, "model",
                             "'%s': NeMo's FLOP formula here is the Llama family's (dense, "
                             "gated MLP)",
                             f[at[T_MODEL]]);
    m.seq = (long)x[T_SEQ];
    w->recipe = true;
    v[C_HEADS] = m.heads;
    v[C_HIDDEN] = m.hidden;
    v[C_LAYERS] = m.layers;
    v[C_SEQ] = m.seq;
    v[C_GPUS] = (long)x[T_GPUS];
    v[C_TP] = (long)x[T_TP];
    v[C_PP] = (long)x[T_PP];
    v[C_DP] = (long)x[T_DP];
    v[C_GB] = (long)x[T_GB];
    v[C_MB] = 1;
    v[C_INTERLEAVE] = 1;
    w->cp = (long)x[T_CP];
    w->ffn = m.ffn;
    w->kv_heads = m.kv_heads;
    w->vocab = m.vocab;
    w->glu = m.glu;
    w->measured_s = nemo_llama_flop(&m, x[T_GB]) / (x[T_TFLOPS] * 1e12 * x[T_GPUS]);
    if ((rc = recipe_apply(runs, f[at[T_MODEL]], false, csv, line, at[T_MODEL], w, v, err)))
        return rc;
    snprintf(w->name, sizeof w->name, "%.16s %s %ldK cp %ld", f[at[T_MODEL]],
             w->fp8 ? "FP8" : "BF16", m.seq / 1024, w->cp);
    return 0;
}

/* Reads row `line` of a recipe table (fields f, columns at, the release column relcol or -1)
 * into w and v, with its settings from runs (may be NULL): its precision, Megatron-LM's
 * sequence parallelism with tp > 1, FlashAttention, and the runs row's switches. */
static int read_recipe(char **f, const int *at, int relcol, const char *csv, int line,
                       struct recipe_runs *runs, struct e2e_row *w, long *v, struct tps_error *err)
{
    double x[P_N] = {0};
    for (int c = P_GPUS; c < P_N; c++) {
        if (c == P_VP && !f[at[c]][0]) { /* empty: no interleaving, or not printed */
            x[c] = 1;
            continue;
        }
        int rc = row_number(f[at[c]], at[c], pcols[c], c != P_TIME, csv, line, &x[c], err);
        if (rc) return rc;
    }
    int rc = read_precision(f[at[P_PREC]], csv, line, at[P_PREC], w, err);
    if (rc) return rc;
    w->recipe = true;
    snprintf(w->release, sizeof w->release, "%s", relcol >= 0 ? f[relcol] : "");
    v[C_HEADS] = (long)x[P_HEADS];
    v[C_HIDDEN] = (long)x[P_HIDDEN];
    v[C_LAYERS] = (long)x[P_LAYERS];
    v[C_SEQ] = (long)x[P_SEQ];
    v[C_GPUS] = (long)x[P_GPUS];
    v[C_TP] = (long)x[P_TP];
    v[C_PP] = (long)x[P_PP];
    v[C_DP] = (long)x[P_DP];
    v[C_GB] = (long)x[P_GB];
    v[C_MB] = (long)x[P_MB];
    v[C_INTERLEAVE] = (long)x[P_VP];
    w->cp = (long)x[P_CP];
    w->ffn = (long)x[P_FFN];
    w->kv_heads = (long)x[P_KV];
    w->vocab = (long)x[P_VOCAB];
    w->measured_s = x[P_TIME];
    rc = recipe_apply(runs, f[at[P_MODEL]], f[at[P_VP]][0] != 0, csv, line, at[P_MODEL], w, v, err);
    if (rc) return rc;
    snprintf(w->name, sizeof w->name, "%.10s %.20s %s%s", w->release, f[at[P_MODEL]],
             w->fp8 ? "FP8" : "BF16", w->tp_comm_overlap ? " tp-overlap" : "");
    return 0;
}

int e2e_format_of(const char *csv, enum e2e_format *out, struct tps_error *err)
{
    size_t len = 0;
    char *text = tps_read_file(csv, MAX_CSV, "an end-to-end table", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    char store[4096], *f[MAX_FIELDS];
    const char *next;
    int nf = tps_csv_record(text, text + len, store, sizeof store, f, MAX_FIELDS, &next);
    int rc = nf <= 0 ? tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "no header line") : 0;
    if (!rc)
        *out =
            tps_csv_column(f, nf, wcols[W_MP]) >= 0       ? E2E_WEAK
            : tps_csv_column(f, nf, tcols[T_TFLOPS]) >= 0 ? E2E_TFLOPS
            : tps_csv_column(f, nf, pcols[P_TIME]) >= 0 && tps_csv_column(f, nf, pcols[P_PREC]) >= 0
                ? E2E_RECIPE
                : E2E_TABLE5;
    free(text);
    return rc;
}

int e2e_run(const char *csv, const char *runs_csv, const struct mdl_device *dev,
            const char *platform, enum mdl_dtype dtype, long max_gpus,
            void (*progress)(int i, const char *name, void *ctx), void *ctx, struct e2e_result *res,
            struct tps_error *err)
{
    memset(res, 0, sizeof *res);
    struct runs runs = {0};
    struct recipe_runs rruns = {0};
    enum e2e_format fmt;
    size_t len = 0;
    if (e2e_format_of(csv, &fmt, err)) return err->code ? err->code : TPS_EIO;
    bool keyed = fmt == E2E_RECIPE || fmt == E2E_TFLOPS; /* runs keyed by release and model */
    if (runs_csv &&
        (keyed ? recipe_runs_read(runs_csv, &rruns, err) : runs_read(runs_csv, &runs, err))) {
        runs_release(&runs);
        free(rruns.rows);
        return err->code ? err->code : TPS_EINVAL;
    }
    char *text = tps_read_file(csv, MAX_CSV, "an end-to-end table", &len, err);
    if (!text) {
        runs_release(&runs);
        free(rruns.rows);
        return err->code ? err->code : TPS_EIO;
    }
    char store[4096], *f[MAX_FIELDS];
    const char *next, *end = text + len;
    int at[E2E_MAX_COLS], ropt[R_N],
        nf = tps_csv_record(text, end, store, sizeof store, f, MAX_FIELDS, &next);
    int rc = nf <= 0 ? tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "no header line") : 0;
    int last = 0;
    /* the weak-scaling table's format, told by its model_parallel_size column */
    bool weak = fmt == E2E_WEAK, recipe = fmt == E2E_RECIPE, tfl = fmt == E2E_TFLOPS;
    if (!rc && runs_csv && fmt == E2E_TABLE5)
        rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header",
                           "a runs table (%s) applies to a weak-scaling table (model_size, "
                           "model_parallel_size, ...) or a recipe table (precision, "
                           "step_time_s, ...), not to this one",
                           runs_csv);
    for (int c = 0; c < R_N; c++)
        ropt[c] = weak && !rc ? tps_csv_column(f, nf, rcols[c]) : -1;
    int ncols = weak ? W_N : recipe ? P_N : tfl ? T_N : C_N;
    const char *const *names = weak ? wcols : recipe ? pcols : tfl ? tcols : cols;
    int relcol = recipe ? tps_csv_column(f, nf, "release") : -1;
    if (relcol > last) last = relcol;
    for (int c = 0; !rc && c < ncols; c++) {
        if ((at[c] = tps_csv_column(f, nf, names[c])) < 0)
            rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "missing column '%s'",
                               names[c]);
        else if (at[c] > last)
            last = at[c];
    }
    for (int c = 0; c < R_N; c++)
        if (ropt[c] > last) last = ropt[c];
    int cpcol = !rc && fmt == E2E_TABLE5 ? tps_csv_column(f, nf, CP_COLUMN) : -1;
    if (cpcol > last) last = cpcol;
    long per_machine = 1; /* GPUs per machine of the platform */
    if (!rc) {
        struct plat_topo one = {0};
        rc = plat_spec_from_line(platform, &one, err);
        per_machine = one.ngpus > 0 ? one.ngpus : 1;
        plat_topo_release(&one);
    }
    /* every row is read and checked before any is simulated (minutes): a bad cell anywhere
     * costs nothing */
    double *abs_err = NULL;
    long(*vs)[C_N] = NULL;
    int *lines = NULL, cap = 0, ecap = 0, vcap = 0, lcap = 0, line = 1;
    for (const char *p = next; !rc;) {
        nf = tps_csv_row(&p, end, store, sizeof store, f, MAX_FIELDS, last, csv, &line, err);
        if (nf <= 0) {
            rc = nf < 0 ? err->code : 0;
            break;
        }
        int need = res->n + 1;
        if (tps_grow(&res->rows, &cap, need, sizeof *res->rows, 16) ||
            tps_grow(&abs_err, &ecap, need, sizeof *abs_err, 16) ||
            tps_grow(&vs, &vcap, need, sizeof *vs, 16) ||
            tps_grow(&lines, &lcap, need, sizeof *lines, 16)) {
            rc = tps_error_oom(err);
            break;
        }
        struct e2e_row *w = &res->rows[res->n];
        memset(w, 0, sizeof *w);
        w->async_grad_allreduce = true; /* Megatron-LM's default since late 2021 */
        long *v = vs[res->n];
        memset(v, 0, C_N * sizeof *v);
        rc = weak ? read_weak(f, at, ropt, csv, line, per_machine, runs_csv ? &runs : NULL, w, v,
                              err)
             : recipe ? read_recipe(f, at, relcol, csv, line, runs_csv ? &rruns : NULL, w, v, err)
             : tfl    ? read_tflops(f, at, csv, line, runs_csv ? &rruns : NULL, w, v, err)
                      : read_table5(f, at, cpcol, csv, line, w, v, err);
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
        struct scn_scenario sc;
        rc = row_scenario(w, v, dev, platform, per_machine, dtype, &sc, err);
        scn_release(&sc);
        if (rc) {
            if (!err->path[0]) {
                /* a row the job model refuses: say which */
                snprintf(err->path, sizeof err->path, "%s", csv);
                err->line = line;
            }
            break;
        }
        lines[res->n++] = line;
    }
    if (!rc && res->n == 0 && res->skipped == 0)
        rc = tps_error_set(err, TPS_EINVAL, csv, line, 1, NULL, "no rows");
    for (int i = 0; !rc && i < runs.n; i++)
        if (!runs.rows[i].used)
            rc = tps_error_set(err, TPS_EINVAL, runs_csv, runs.rows[i].line, 1, "model_size",
                               "'%s' names no row of %s", runs.rows[i].name, csv);
    for (int i = 0; !rc && i < rruns.n; i++)
        if (!rruns.rows[i].used && res->skipped == 0)
            rc = tps_error_set(err, TPS_EINVAL, runs_csv, rruns.rows[i].line, 1, "model",
                               "'%s %s' names no row of %s", rruns.rows[i].release,
                               rruns.rows[i].model, csv);
    for (int i = 0; !rc && i < res->n; i++) {
        struct e2e_row *w = &res->rows[i];
        if (progress) progress(i, w->name, ctx);
        if ((rc = simulate_row(w, vs[i], dev, platform, per_machine, dtype, err))) {
            if (!err->path[0]) {
                snprintf(err->path, sizeof err->path, "%s", csv);
                err->line = lines[i];
            }
            break;
        }
        abs_err[i] = fabs(w->err_pct);
    }
    runs_release(&runs);
    free(rruns.rows);
    if (!rc) tps_median_max(abs_err, res->n, &res->median_abs_err_pct, &res->max_abs_err_pct);
    free(abs_err);
    free(vs);
    free(lines);
    free(text);
    return rc;
}

void e2e_release(struct e2e_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}
