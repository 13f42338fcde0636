/* compute.c - GEMM and memory-bound kernel cost, and GEMM-table calibration (see compute.h).
 * Calls GSL (gsl_fit_wlinear) for the fit. Units: FLOP, bytes, seconds. */
#include "compute.h"
#include "gemmtable.h"

#include "common/stats.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <math.h>
#include <stdlib.h>

double mdl_gemm_flop(double batch, double m, double n, double k)
{
    return 2.0 * batch * m * n * k;
}

double mdl_gemm_bytes(enum mdl_dtype t, double batch, double m, double n, double k)
{
    /* FP8 GEMMs read one-byte operands and write a 16-bit output */
    if (t == MDL_FP8) return batch * (m * k + k * n + 2 * m * n);
    return batch * (m * k + k * n + m * n) * mdl_dtype_bytes(t);
}

double mdl_gemm_time_wb(const struct mdl_device *d, enum mdl_dtype t, double flop, double bytes)
{
    double tc =
        mdl_device_gemm_overhead(d, t) + flop / (mdl_device_gemm_eff(d, t) * d->peak_flops[t]);
    double tm = bytes / (d->mem_eff * d->hbm_Bps); /* streaming operands, as any kernel */
    return tc > tm ? tc : tm;
}

double mdl_gemm_time(const struct mdl_device *d, enum mdl_dtype t, double batch, double m, double n,
                     double k)
{
    if (d->gemm_table && d->gemm_table->dtype == t) {
        double x = mdl_gemm_table_time(d->gemm_table, batch, m, n, k);
        if (x > 0) return x;
    }
    return mdl_gemm_time_wb(d, t, mdl_gemm_flop(batch, m, n, k), mdl_gemm_bytes(t, batch, m, n, k));
}

double mdl_mem_time(const struct mdl_device *d, double bytes)
{
    return d->kernel_overhead_s + bytes / (d->mem_eff * d->hbm_Bps);
}

double mdl_mem_time_kind(const struct mdl_device *d, enum mdl_mem_kind k, double bytes)
{
    double eff = k == MDL_MEM_NORM      ? d->norm_eff
                 : k == MDL_MEM_SOFTMAX ? d->softmax_eff
                                        : d->mem_eff;
    return d->kernel_overhead_s + bytes / (eff * d->hbm_Bps);
}

int mdl_compute_calibrate(struct mdl_device *d, enum mdl_dtype t, const char *csv_path,
                          struct mdl_calib *out, struct tps_error *err)
{
    struct mdl_gemm_row *tab = NULL;
    int rows = 0, rc = mdl_gemm_rows_read(csv_path, t, &tab, &rows, err);
    double *w = NULL, *ts = NULL, *wt = NULL, *rel = NULL;
    if (rc) goto done;
    w = malloc(((size_t)rows + 1) * sizeof *w), ts = malloc(((size_t)rows + 1) * sizeof *ts);
    wt = malloc(((size_t)rows + 1) * sizeof *wt), rel = malloc(((size_t)rows + 1) * sizeof *rel);
    if (!w || !ts || !wt || !rel) {
        rc = tps_error_oom(err);
        goto done;
    }
    for (int i = 0; i < rows; i++) {
        w[i] = mdl_gemm_flop(tab[i].batch, tab[i].m, tab[i].n, tab[i].k);
        ts[i] = tab[i].time_s;
        wt[i] = 1.0 / (ts[i] * ts[i]);
    }
    if (rows < 2) {
        rc = tps_error_set(err, TPS_EINVAL, csv_path, 0, 0, NULL,
                           "need at least 2 %s rows to calibrate, found %d", mdl_dtype_name(t),
                           rows);
        goto done;
    }
    double c0, c1, cov00, cov01, cov11, chisq;
    gsl_fit_wlinear(w, 1, wt, 1, ts, 1, (size_t)rows, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
    if (c0 < 0) { /* no negative overhead: refit through the origin */
        c0 = 0;
        gsl_fit_wmul(w, 1, wt, 1, ts, 1, (size_t)rows, &c1, &cov11, &chisq);
    }
    if (!(c1 > 0)) {
        rc = tps_error_set(err, TPS_EINVAL, csv_path, 0, 0, NULL,
                           "GEMM table gives no positive throughput fit");
        goto done;
    }
    *(t == MDL_FP8 ? &d->fp8_gemm_overhead_s : &d->gemm_overhead_s) = c0;
    *(t == MDL_FP8 ? &d->fp8_gemm_eff : &d->gemm_eff_max) = 1.0 / (c1 * d->peak_flops[t]);
    for (int i = 0; i < rows; i++)
        rel[i] = fabs((c0 + c1 * w[i]) - ts[i]) / ts[i];
    if (out) {
        out->rows = rows;
        tps_median_max(rel, rows, &out->median_err, &out->max_err);
    }
done:
    free(tab);
    free(w);
    free(ts);
    free(wt);
    free(rel);
    return rc;
}
