/* layers.c - layer shards measured against simulated (see layers.h). */
#include "validate/layers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/grow.h"
#include "common/csv.h"
#include "common/gnuplot.h"
#include "common/readall.h"
#include "common/stats.h"
#include "core/report.h"
#include "models/compute.h"
#include "pipeline/pipeline.h"
#include "platforms/spec.h"
#include "common/inputs.h"

#define MAX_FIELDS 32
#define MAX_CSV    (16 << 20)

/* The columns a row needs, by name. */
enum {
    C_NAME,
    C_HIDDEN,
    C_HEADS,
    C_SEQ,
    C_BATCH,
    C_TP,
    C_DTYPE,
    C_ATTN,
    C_EXEC,
    C_LAYERS,
    C_FWD,
    C_BWD,
    C_NREQ, /* the columns before are required */
    C_FWD_MIN = C_NREQ,
    C_BWD_MIN,
    C_SPREAD_REPS, /* rows measured in several processes: (slowest - fastest) / median */
    C_N
};
static const char *const cols[C_N] = {"name",      "hidden",    "heads",        "seq",
                                      "batch",     "tp",        "dtype",        "attn",
                                      "execution", "layers",    "fwd_s_median", "bwd_s_median",
                                      "fwd_s_min", "bwd_s_min", "spread_reps"};

static int parse_dtype(const char *s, enum mdl_dtype *t)
{
    if (!strcmp(s, "bfloat16") || !strcmp(s, "bf16"))
        *t = MDL_BF16;
    else if (!strcmp(s, "float16") || !strcmp(s, "fp16"))
        *t = MDL_FP16;
    else if (!strcmp(s, "float32") || !strcmp(s, "fp32"))
        *t = MDL_FP32;
    else
        return -1;
    return 0;
}

/* Simulates one row; fills sim_fwd_s and sim_bwd_s. */
static int simulate_row(struct lay_row *w, enum mdl_dtype dt, const struct mdl_device *dev,
                        const struct plat_topo *t, struct tps_error *err)
{
    struct scn_scenario s;
    memset(&s, 0, sizeof s);
    s.model = (struct mdl_model){.layers = w->layers,
                                 .hidden = w->hidden,
                                 .heads = w->heads,
                                 .ffn = 4 * w->hidden,
                                 .seq = w->seq,
                                 .micro_batch = w->batch,
                                 .dtype = dt};
    snprintf(s.model.name, sizeof s.model.name, "%.*s", (int)sizeof s.model.name - 1, w->name);
    s.device = *dev;
    s.strategy = (struct mdl_strategy){.kind = MDL_STRAT_1D, .tp = (int)w->tp};
    s.framework = (struct mdl_framework){
        .launch = strcmp(w->execution, "graphs") ? MDL_LAUNCH_EAGER : MDL_LAUNCH_GRAPHS,
        .kernels = MDL_KERNELS_EAGER,
        .attention = strcmp(w->attn, "flash") ? MDL_ATTENTION_CORE : MDL_ATTENTION_FLASH};
    s.layers = (int)w->layers;
    s.micro_batches = 1;
    struct mdl_program full, shard = {0};
    struct timing tm = {0};
    struct report r = {0};
    int rc = pipeline_lower(&s, NULL, 0, 0, &full, err);
    if (!rc && mdl_program_shard(&full, 0, &shard) != 0) rc = tps_error_oom(err);
    if (!rc) rc = pipeline_run_program(&shard, t, &tm, err);
    if (!rc && report_build(&shard, &tm, &r) != TPS_OK) rc = tps_error_oom(err);
    if (!rc) {
        w->sim_fwd_s = w->sim_bwd_s = 0;
        for (int l = 0; l < r.nlayers; l++) {
            w->sim_fwd_s += r.layers[l].fwd_s / r.nlayers;
            w->sim_bwd_s += r.layers[l].bwd_s / r.nlayers;
        }
    }
    report_release(&r);
    timing_release(&tm);
    mdl_program_release(&shard);
    mdl_program_release(&full);
    return rc;
}

/* Reads csv whole (*text, owned) and finds the named columns of its header (at[]); *next is
 * the first data record. Columns from nreq on are optional (at[c] = -1 when absent). */
static int read_csv(const char *csv, const char *const *names, int n, int nreq, int *at,
                    char **text, size_t *len, const char **next, struct tps_error *err)
{
    *text = tps_read_file(csv, MAX_CSV, "a layer table", len, err);
    if (!*text) return err->code ? err->code : TPS_EIO;
    char store[4096], *f[MAX_FIELDS];
    int nf = tps_csv_record(*text, *text + *len, store, sizeof store, f, MAX_FIELDS, next);
    if (nf <= 0) return tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "no header line");
    for (int c = 0; c < n; c++)
        if ((at[c] = tps_csv_column(f, nf, names[c])) < 0 && c < nreq)
            return tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header", "missing column '%s'",
                                 names[c]);
    return TPS_OK;
}

/* Reads a count or a time of column c of a row. */
static int num(const char *path, int line, char **f, const int *at, int c, double lo, double *out,
               struct tps_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(f[at[c]], &end);
    if (end == f[at[c]] || *end || errno || !isfinite(v) || v < lo || v > 1e9)
        return tps_error_set(err, TPS_EINVAL, path, line, 0, cols[c],
                             "expected a number of at least %g, got '%s'", lo, f[at[c]]);
    *out = v;
    return TPS_OK;
}

int lay_run(const char *csv, const struct mdl_device *dev, struct lay_result *res,
            struct tps_error *err)
{
    memset(res, 0, sizeof *res);
    size_t len = 0;
    char *text = NULL, store[4096], *f[MAX_FIELDS];
    const char *p, *next = NULL;
    int at[C_N], line = 1, nf;
    int rc = read_csv(csv, cols, C_N, C_NREQ, at, &text, &len, &next, err);
    const char *end = text ? text + len : NULL;
    struct plat_topo t = {0};
    if (!rc) rc = plat_spec_from_line("dgx-h100", &t, err); /* one GPU of it is used */
    int cap = 0, ecap = 0, scap = 0, last = 0;              /* the rightmost column read */
    for (int c = 0; !rc && c < C_N; c++)
        if (at[c] > last) last = at[c];
    int mins = !rc && at[C_FWD_MIN] >= 0 && at[C_BWD_MIN] >= 0;
    res->has_reps = !rc && at[C_SPREAD_REPS] >= 0;
    double *abs_err = NULL, *spread = NULL;
    int nspread = 0;
    for (p = next; !rc;) {
        nf = tps_csv_row(&p, end, store, sizeof store, f, MAX_FIELDS, last, csv, &line, err);
        if (nf <= 0) {
            rc = nf < 0 ? err->code : 0;
            break;
        }
        if (tps_grow(&res->rows, &cap, res->n + 1, sizeof *res->rows, 64) ||
            tps_grow(&abs_err, &ecap, res->n + 1, sizeof *abs_err, 64) ||
            tps_grow(&spread, &scap, res->n + 1, sizeof *spread, 64)) {
            rc = tps_error_oom(err);
            break;
        }
        struct lay_row *w = &res->rows[res->n];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "%s", f[at[C_NAME]]);
        snprintf(w->attn, sizeof w->attn, "%s", f[at[C_ATTN]]);
        snprintf(w->execution, sizeof w->execution, "%s", f[at[C_EXEC]]);
        double v[C_N];
        for (int c = C_HIDDEN; !rc && c <= C_BWD; c++)
            if (c != C_DTYPE && c != C_ATTN && c != C_EXEC)
                rc = num(csv, line, f, at, c, c >= C_FWD ? 1e-9 : 1, &v[c], err);
        enum mdl_dtype dt = MDL_BF16;
        if (!rc && parse_dtype(f[at[C_DTYPE]], &dt))
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, "dtype",
                               "expected bfloat16, float16 or float32, got '%s'", f[at[C_DTYPE]]);
        if (!rc && strcmp(w->attn, "bmm") && strcmp(w->attn, "flash"))
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, "attn",
                               "expected bmm or flash, got '%s'", w->attn);
        if (!rc && strcmp(w->execution, "eager") && strcmp(w->execution, "graphs"))
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, "execution",
                               "expected eager or graphs, got '%s'", w->execution);
        if (rc) break;
        w->hidden = (long)v[C_HIDDEN];
        w->heads = (long)v[C_HEADS];
        w->seq = (long)v[C_SEQ];
        w->batch = (long)v[C_BATCH];
        w->tp = (long)v[C_TP];
        w->layers = (long)v[C_LAYERS];
        w->meas_fwd_s = v[C_FWD];
        w->meas_bwd_s = v[C_BWD];
        w->spread_pct = w->reps_spread_pct = -1;
        if (at[C_SPREAD_REPS] >= 0) {
            double sr;
            if ((rc = num(csv, line, f, at, C_SPREAD_REPS, 0, &sr, err))) break;
            w->reps_spread_pct = sr * 100;
        }
        if (mins) {
            double lo[2];
            for (int c = C_FWD_MIN; !rc && c <= C_BWD_MIN; c++)
                rc = num(csv, line, f, at, c, 1e-9, &lo[c - C_FWD_MIN], err);
            if (rc) break;
            double med = w->meas_fwd_s + w->meas_bwd_s;
            w->spread_pct = (med - lo[0] - lo[1]) / med * 100;
            spread[nspread++] = w->spread_pct;
        }
        if ((rc = simulate_row(w, dt, dev, &t, err))) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            memset(err, 0, sizeof *err);
            rc = tps_error_set(err, rc, csv, line, 0, NULL, "%s", msg);
            break;
        }
        double meas = w->meas_fwd_s + w->meas_bwd_s, sim = w->sim_fwd_s + w->sim_bwd_s;
        w->err_pct = (sim - meas) / meas * 100;
        abs_err[res->n++] = fabs(w->err_pct);
    }
    if (!rc && res->n == 0) rc = tps_error_set(err, TPS_EINVAL, csv, 0, 0, NULL, "no rows");
    if (!rc) {
        tps_median_max(abs_err, res->n, &res->median_abs_err_pct, &res->max_abs_err_pct);
        res->median_spread_pct = -1;
        if (nspread) tps_median_max(spread, nspread, &res->median_spread_pct, NULL);
    }
    free(spread);
    free(abs_err);
    free(text);
    plat_topo_release(&t);
    return rc;
}

static void layers_body(FILE *g, void *dir)
{
    fprintf(g,
            "set logscale xy\nset xlabel 'measured forward + backward per layer (s)'\n"
            "set ylabel 'simulated (s)'\nset key top left\nset grid\n"
            "set title 'tpsim validate layers' noenhanced\n"
            "plot '%s/layers.dat' using 6:(strcol(5) eq \"eager\" ? $7 : 1/0) with points pt 7 "
            "title 'eager', '' using 6:(strcol(5) eq \"graphs\" ? $7 : 1/0) with points pt 5 "
            "title 'CUDA graphs', x with lines title 'equal'\n",
            (const char *)dir);
}

int lay_write_plot(const struct lay_result *r, const char *dir, int *plotted, struct tps_error *err)
{
    if (plotted) *plotted = 0;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tps_error_set(err, TPS_EIO, dir, 0, 0, NULL, "cannot create: %s", strerror(errno));
    char path[1200];
    snprintf(path, sizeof path, "%s/layers.dat", dir);
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "# name tp batch attn execution measured_s simulated_s err_pct\n");
    for (int i = 0; i < r->n; i++) {
        const struct lay_row *w = &r->rows[i];
        fprintf(f, "%s %ld %ld %s %s %.9g %.9g %.4g\n", w->name, w->tp, w->batch, w->attn,
                w->execution, w->meas_fwd_s + w->meas_bwd_s, w->sim_fwd_s + w->sim_bwd_s,
                w->err_pct);
    }
    if (fclose(f) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    snprintf(path, sizeof path, "%s/layers.gp", dir);
    char stem[1200];
    snprintf(stem, sizeof stem, "%s/layers", dir);
    int drawn = tps_gnuplot_plot(path, stem, 640, 560, layers_body, (void *)dir);
    if (plotted) *plotted = drawn == 1;
    return TPS_OK;
}

void lay_release(struct lay_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ per kernel */

enum { K_MODEL, K_TP, K_DTYPE, K_OP, K_PHASE, K_M, K_N, K_K, K_BATCH, K_BYTES, K_TIME, K_N_COLS };
static const char *const kcols[K_N_COLS] = {"model", "tp", "dtype", "op",    "phase", "m",
                                            "n",     "k",  "batch", "bytes", "time_s"};

static int is_gemm(const char *op)
{
    static const char *const gemms[] = {"qkv", "proj", "fc1", "fc2", "attn_score", "attn_ctx"};
    for (size_t i = 0; i < sizeof gemms / sizeof *gemms; i++)
        if (!strcmp(op, gemms[i])) return 1;
    return 0;
}

/* The simulated time of one kernel row; -1 for an op this model does not know. */
static double kernel_time(const struct mdl_device *d, enum mdl_dtype dt, const char *op,
                          const double *v)
{
    if (is_gemm(op))
        return mdl_gemm_time(d, dt, v[K_BATCH] > 0 ? v[K_BATCH] : 1, v[K_M], v[K_N], v[K_K]);
    double b = v[K_BYTES];
    if (!strcmp(op, "layer_norm")) return mdl_mem_time_kind(d, MDL_MEM_NORM, b);
    if (!strcmp(op, "softmax")) return mdl_mem_time_kind(d, MDL_MEM_SOFTMAX, b);
    if (!strcmp(op, "gelu")) return mdl_mem_time(d, b);
    if (!strcmp(op, "dropout_add")) {
        /* bytes = 3n elements (x + dropout(y)): the dropout kernel reads y and writes its output
         * and a one-byte mask, then the add reads both and writes the sum */
        double n = b / 3 / mdl_dtype_bytes(dt);
        return mdl_mem_time(d, (2 * n) * mdl_dtype_bytes(dt) + n) + mdl_mem_time(d, b);
    }
    return -1;
}

static int by_kind(const void *a, const void *b)
{
    const struct lay_kernel *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    return c ? c : strcmp(x->phase, y->phase);
}

/* GEMM rows by phase and shape, the others after them */
static int by_shape(const void *a, const void *b)
{
    const struct lay_kernel *x = a, *y = b;
    if (x->gemm != y->gemm) return y->gemm - x->gemm;
    int c = strcmp(x->phase, y->phase);
    for (int i = 0; !c && i < 4; i++)
        c = (x->shape[i] > y->shape[i]) - (x->shape[i] < y->shape[i]);
    return c;
}

/* Fills *rp from the GEMM rows of the n rows (reordered); dev and t are scratch of n each. */
static void repeatability(struct lay_kernel *rows, int n, double *dev, double *t,
                          struct lay_repeat *rp)
{
    memset(rp, 0, sizeof *rp);
    qsort(rows, (size_t)n, sizeof *rows, by_shape);
    int nd = 0;
    for (int i = 0; i < n && rows[i].gemm;) {
        int j = i;
        while (j < n && !by_shape(&rows[i], &rows[j]))
            j++;
        if (j - i > 1) {
            for (int q = i; q < j; q++)
                t[q - i] = rows[q].measured_s;
            double med;
            tps_median_max(t, j - i, &med, NULL);
            for (int q = i; q < j; q++)
                dev[nd++] = fabs(rows[q].measured_s - med) / med * 100;
            rp->shapes++;
        }
        i = j;
    }
    rp->rows = nd;
    tps_median_max(dev, nd, &rp->median_pct, &rp->max_pct);
}

int lay_kernels(const char *csv, const struct mdl_device *dev, struct lay_kresult *res,
                struct tps_error *err)
{
    memset(res, 0, sizeof *res);
    size_t len = 0;
    char *text = NULL, store[4096], *f[MAX_FIELDS];
    const char *next = NULL;
    int at[K_N_COLS], line = 1, cap = 0, nf;
    int rc = read_csv(csv, kcols, K_N_COLS, K_N_COLS, at, &text, &len, &next, err);
    const char *end = text ? text + len : NULL;
    for (const char *p = next; !rc && p < end; p = next) {
        line++;
        nf = tps_csv_record(p, end, store, sizeof store, f, MAX_FIELDS, &next);
        if (nf == 0) break;
        if (nf < 0 || nf <= at[K_TIME]) {
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 1, NULL, "short or cut record");
            break;
        }
        double v[K_N_COLS] = {0};
        for (int c = K_M; c < K_N_COLS; c++) {
            char *e;
            v[c] = f[at[c]][0] ? strtod(f[at[c]], &e) : 0;
            if (f[at[c]][0] && (*e || !isfinite(v[c]) || v[c] < 0)) {
                rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, kcols[c],
                                   "expected a non-negative number, got '%s'", f[at[c]]);
                break;
            }
        }
        enum mdl_dtype dt = MDL_BF16;
        if (!rc && parse_dtype(f[at[K_DTYPE]], &dt))
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, "dtype", "unknown dtype '%s'",
                               f[at[K_DTYPE]]);
        if (!rc && !(v[K_TIME] > 0))
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 0, "time_s", "expected a time > 0");
        if (rc) break;
        double t = kernel_time(dev, dt, f[at[K_OP]], v);
        if (t < 0) continue; /* an op this model does not price */
        if (tps_grow(&res->rows, &cap, res->n + 1, sizeof *res->rows, 256)) {
            rc = tps_error_oom(err);
            break;
        }
        struct lay_kernel *w = &res->rows[res->n++];
        memset(w, 0, sizeof *w);
        snprintf(w->model, sizeof w->model, "%s", f[at[K_MODEL]]);
        snprintf(w->op, sizeof w->op, "%s", f[at[K_OP]]);
        snprintf(w->phase, sizeof w->phase, "%s", f[at[K_PHASE]]);
        w->tp = strtol(f[at[K_TP]], NULL, 10);
        w->gemm = is_gemm(w->op);
        w->shape[0] = v[K_M];
        w->shape[1] = v[K_N];
        w->shape[2] = v[K_K];
        w->shape[3] = v[K_BATCH] > 0 ? v[K_BATCH] : 1;
        w->measured_s = v[K_TIME];
        w->simulated_s = t;
        w->err_pct = (t - v[K_TIME]) / v[K_TIME] * 100;
    }
    if (!rc && res->n == 0) rc = tps_error_set(err, TPS_EINVAL, csv, 0, 0, NULL, "no rows");
    double *e = rc ? NULL : malloc((size_t)res->n * 2 * sizeof *e);
    if (!rc && !e) rc = tps_error_oom(err);
    if (!rc) {
        struct lay_kernel *sorted = malloc((size_t)res->n * sizeof *sorted);
        res->kinds = calloc((size_t)res->n, sizeof *res->kinds);
        if (!sorted || !res->kinds) rc = tps_error_oom(err);
        if (!rc) {
            memcpy(sorted, res->rows, (size_t)res->n * sizeof *sorted);
            qsort(sorted, (size_t)res->n, sizeof *sorted, by_kind);
            for (int i = 0; i < res->n;) {
                int j = i, m = 0;
                while (j < res->n && !by_kind(&sorted[i], &sorted[j]))
                    j++;
                struct lay_kind *k = &res->kinds[res->nkinds++];
                snprintf(k->op, sizeof k->op, "%s", sorted[i].op);
                snprintf(k->phase, sizeof k->phase, "%s", sorted[i].phase);
                k->n = j - i;
                for (int q = i; q < j; q++) {
                    e[m] = sorted[q].err_pct;
                    e[res->n + m++] = fabs(sorted[q].err_pct);
                }
                tps_median_max(e, m, &k->median_err_pct, NULL);
                tps_median_max(e + res->n, m, &k->median_abs_err_pct, &k->max_abs_err_pct);
                i = j;
            }
            repeatability(sorted, res->n, e, e + res->n, &res->repeat);
        }
        free(sorted);
    }
    free(e);
    free(text);
    return rc;
}

void lay_kresult_release(struct lay_kresult *r)
{
    free(r->rows);
    free(r->kinds);
    memset(r, 0, sizeof *r);
}
