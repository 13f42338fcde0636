/* manifest.c - `tpsim validate nccl`: every log of a manifest against its simulation (see
 * manifest.h). */
#include "validate/manifest.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/gnuplot.h"
#include "common/stats.h"
#include "models/collective.h"
#include "pipeline/pipeline.h"
#include "platforms/spec.h"

/* NAME.meta.yaml beside NAME.raw.txt (or beside any LOG: LOG.meta.yaml); "" if none. */
static void meta_path(const char *log, char *out, size_t len)
{
    size_t n = strlen(log);
    if (n > 8 && !strcmp(log + n - 8, ".raw.txt"))
        snprintf(out, len, "%.*s.meta.yaml", (int)(n - 8), log);
    else
        snprintf(out, len, "%s.meta.yaml", log);
    struct stat st;
    if (stat(out, &st) != 0) out[0] = '\0';
}

/* The collective and rank count of a log: options first, then the log, then its meta file. */
int man_log_shape(const struct ncl_log *l, const char *path, int *op, int *ranks,
                  struct tps_error *err)
{
    char mp[1024];
    meta_path(path, mp, sizeof mp);
    struct ncl_meta m = {.op = -1};
    if (mp[0]) {
        int rc = ncl_meta_read(mp, &m, err);
        if (rc) return rc;
    }
    if (*op < 0) *op = l->op >= 0 ? l->op : m.op;
    if (*ranks <= 0) *ranks = l->ranks ? l->ranks : m.ranks;
    if (*op < 0)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "op",
                             "the log does not say which collective it measured: give --op");
    if (*ranks <= 0)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "ranks",
                             "the log does not say how many ranks took part: give --ranks");
    return TPS_OK;
}

/* ------------------------------------------------------------------ calibrate */

/* Simulates one manifest entry. */
static int validate_log(const struct tps_ydoc *d, int entry, int idx, const char *refdata,
                        const char *base, struct man_log *v, struct tps_error *err)
{
    static const char *const keys[] = {"log", "platform", "role", "note", NULL};
    char f[64];
    snprintf(f, sizeof f, "logs[%d]", idx);
    int rc = tps_ydoc_check_map(d, entry, f, keys, err);
    const char *name = NULL, *role = "eval";
    int lid = tps_ydoc_get(d, entry, "log"), pid = tps_ydoc_get(d, entry, "platform");
    int rid = tps_ydoc_get(d, entry, "role");
    if (!rc && !lid) rc = tps_ydoc_fail(d, entry, "log", err, "missing");
    if (!rc && !pid) rc = tps_ydoc_fail(d, entry, "platform", err, "missing");
    if (!rc) rc = tps_ydoc_str(d, lid, "log", &name, err);
    if (!rc && rid) rc = tps_ydoc_str(d, rid, "role", &role, err);
    if (!rc && strcmp(role, "fit") && strcmp(role, "eval"))
        rc = tps_ydoc_fail(d, rid, "role", err, "expected fit or eval, got '%s'", role);
    if (rc) return rc;
    snprintf(v->name, sizeof v->name, "%s", name);
    v->fit = !strcmp(role, "fit");
    char path[1024];
    snprintf(path, sizeof path, "%s/nccl/%s.raw.txt", refdata, name);
    struct ncl_log l;
    if ((rc = ncl_log_read(path, &l, err))) return rc;
    v->op = -1;
    v->ranks = 0;
    rc = man_log_shape(&l, path, &v->op, &v->ranks, err);
    struct plat_topo t;
    if (!rc)
        rc = plat_spec_parse(d, pid, "platform", base, &t, err);
    else
        plat_topo_init(&t, "");
    if (!rc && v->ranks > t.ngpus)
        rc =
            tps_error_set(err, TPS_EINVAL, d->path, 0, 0, "platform",
                          "%s has %d ranks but its platform only %d GPUs", name, v->ranks, t.ngpus);
    snprintf(v->platform, sizeof v->platform, "%s", t.desc[0] ? t.desc : t.name);
    v->rows = calloc((size_t)l.nrows + 1, sizeof *v->rows);
    if (!rc && !v->rows) rc = tps_error_oom(err);
    double *errs = calloc((size_t)l.nrows + 1, sizeof *errs);
    double factor = mdl_coll_busbw_factor((enum mdl_op_kind)v->op, v->ranks);
    for (int i = 0; !rc && i < l.nrows; i++) {
        const struct ncl_row *m = &l.rows[i];
        if (m->bytes <= 0) continue;
        struct pipeline_coll_how how = {0};
        double ts = 0;
        rc = pipeline_collective(&t, (enum mdl_op_kind)v->op, v->ranks, m->bytes, &how, &ts, err);
        if (rc) break;
        struct man_row *r = &v->rows[v->nrows++];
        r->bytes = m->bytes;
        r->meas_us = m->time_us;
        r->sim_us = ts * 1e6;
        r->meas_bus = m->busbw;
        r->sim_bus = m->bytes / ts / 1e9 * factor;
        r->err = (r->sim_us - r->meas_us) / r->meas_us * 100;
        snprintf(r->how, sizeof r->how, "%s/%s", mdl_algo_name((enum mdl_coll_algo)how.algo),
                 mdl_proto_name((enum mdl_coll_proto)how.proto));
        if (m->bytes >= 1 << 20 && errs) errs[v->scored++] = fabs(r->err);
    }
    if (!rc) tps_median_max(errs, v->scored, &v->median, &v->max);
    free(errs);
    plat_topo_release(&t);
    ncl_log_release(&l);
    return rc;
}

int man_run(const char *manifest, const char *refdata, man_progress_fn progress, void *ctx,
            struct man_result *res, struct tps_error *err)
{
    memset(res, 0, sizeof *res);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, manifest, err);
    if (rc) return rc;
    int root = tps_ydoc_root(&d), logs = tps_ydoc_get(&d, root, "logs");
    static const char *const keys[] = {"description", "logs", NULL};
    rc = tps_ydoc_is_map(&d, root) ? tps_ydoc_check_map(&d, root, "", keys, err)
                                   : tps_ydoc_fail(&d, root, "", err, "expected a mapping");
    if (!rc && (!logs || !tps_ydoc_is_seq(&d, logs)))
        rc = tps_ydoc_fail(&d, logs ? logs : root, "logs", err, "expected a list of logs");
    int n = rc ? 0 : tps_ydoc_len(&d, logs);
    res->logs = calloc((size_t)n + 1, sizeof *res->logs);
    if (!rc && !res->logs) rc = tps_error_oom(err);
    char base[512];
    plat_path_dir(manifest, base, sizeof base);
    for (int i = 0; !rc && i < n; i++) {
        int entry = tps_ydoc_seq_at(&d, logs, i);
        if (progress) {
            const char *name = tps_ydoc_text(&d, tps_ydoc_get(&d, entry, "log"));
            progress(i, n, name ? name : "?", ctx);
        }
        res->n = i + 1;
        rc = validate_log(&d, entry, i, refdata, base, &res->logs[i], err);
    }
    tps_ydoc_release(&d);
    return rc;
}

void man_release(struct man_result *res)
{
    for (int i = 0; i < res->n; i++)
        free(res->logs[i].rows);
    free(res->logs);
    memset(res, 0, sizeof *res);
}

void man_eval_summary(const struct man_result *res, int *nsizes, double *median, double *max)
{
    int nall = 0;
    for (int i = 0; i < res->n; i++)
        nall += res->logs[i].fit ? 0 : res->logs[i].nrows;
    double *all = malloc((size_t)(nall + 1) * sizeof *all);
    nall = 0;
    for (int i = 0; all && i < res->n; i++)
        for (int r = 0; !res->logs[i].fit && r < res->logs[i].nrows; r++)
            if (res->logs[i].rows[r].bytes >= 1 << 20) all[nall++] = fabs(res->logs[i].rows[r].err);
    *median = *max = 0;
    if (all) tps_median_max(all, nall, median, max);
    *nsizes = nall;
    free(all);
}

struct busbw_plot {
    const struct man_result *res;
    const char *out;
    int rows, cols;
};

static void busbw_body(FILE *g, void *ctx)
{
    const struct busbw_plot *bp = ctx;
    fprintf(g,
            "set multiplot layout %d,%d title 'nccl-tests bus bandwidth: measured (points) "
            "vs tpsim (line)'\n",
            bp->rows, bp->cols);
    fprintf(g, "set logscale x 2\nset format x '%%.0b%%BB'\nset xtics 256\n"
               "set xlabel 'message size (bytes)'\n"
               "set ylabel 'bus bandwidth (GB/s)'\nset key top left\nset grid\n");
    for (int i = 0; i < bp->res->n; i++) {
        const struct man_log *v = &bp->res->logs[i];
        /* a long log name in a smaller font, so that it stays over its own panel */
        fprintf(g,
                "set title '%s%s' noenhanced%s\nplot '%s/%s.dat' using 1:2 with points pt 7 "
                "title 'measured', '' using 1:3 with lines lw 2 title 'tpsim'\n",
                v->name, v->fit ? " (fit)" : "", strlen(v->name) > 44 ? " font ',9'" : " font ''",
                bp->out, v->name);
    }
    fprintf(g, "unset multiplot\n");
}

int man_write(const struct man_result *res, const char *out, int *plotted, struct tps_error *err)
{
    const struct man_log *v = res->logs;
    int n = res->n;
    if (plotted) *plotted = 0;
    char path[1200];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s.dat", out, v[i].name);
        FILE *f = fopen(path, "w");
        if (!f) goto fail;
        fprintf(f, "# bytes measured_busbw_GBps simulated_busbw_GBps measured_us simulated_us\n");
        for (int r = 0; r < v[i].nrows; r++)
            fprintf(f, "%.0f %.4f %.4f %.3f %.3f\n", v[i].rows[r].bytes, v[i].rows[r].meas_bus,
                    v[i].rows[r].sim_bus, v[i].rows[r].meas_us, v[i].rows[r].sim_us);
        if (fclose(f) != 0) goto fail;
    }
    snprintf(path, sizeof path, "%s/busbw.gp", out);
    int cols = n < 4 ? n : 4, rows = (n + cols - 1) / cols;
    char stem[1200];
    snprintf(stem, sizeof stem, "%s/busbw", out);
    struct busbw_plot bp = {res, out, rows, cols};
    int drawn = tps_gnuplot_plot(path, stem, 420 * cols, 340 * rows, busbw_body, &bp);
    if (drawn < 0) goto fail;
    if (plotted) *plotted = drawn == 1;
    return TPS_OK;
fail:
    return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
}
