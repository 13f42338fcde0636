/* compute.c - GEMM and memory-bound kernel cost, and GEMM-table calibration (see compute.h).
 * Calls GSL (gsl_fit_wlinear) for the fit. Units: FLOP, bytes, seconds. */
#include "compute.h"
#include "gemmtable.h"

#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

double mdl_gemm_flop(double batch, double m, double n, double k)
{
    return 2.0 * batch * m * n * k;
}

double mdl_gemm_bytes(enum mdl_dtype t, double batch, double m, double n, double k)
{
    return batch * (m * k + k * n + m * n) * mdl_dtype_bytes(t);
}

double mdl_gemm_time_wb(const struct mdl_device *d, enum mdl_dtype t, double flop, double bytes)
{
    double tc = d->gemm_overhead_s + flop / (d->gemm_eff_max * d->peak_flops[t]);
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

/* ---------------------------------------------------------------- GEMM table reading */

#define MAX_COLS 16
#define MAX_ROWS 4096

/* Splits a CSV line in place (double-quoted fields allowed). Returns the field count. */
static int csv_split(char *line, char **fields, int *cols)
{
    int n = 0;
    char *p = line;
    while (n < MAX_COLS) {
        cols[n] = (int)(p - line) + 1;
        if (*p == '"') {
            fields[n++] = ++p;
            while (*p && *p != '"')
                p++;
            if (*p) *p++ = '\0';
        } else {
            fields[n++] = p;
        }
        while (*p && *p != ',')
            p++;
        if (!*p) break;
        *p++ = '\0';
    }
    return n;
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

static int col_index(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(hdr[i], name) == 0) return i;
    return -1;
}

static int parse_num(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int mdl_compute_calibrate(struct mdl_device *d, enum mdl_dtype t, const char *csv_path,
                          struct mdl_calib *out, struct tps_error *err)
{
    FILE *f = fopen(csv_path, "r");
    if (!f)
        return tps_error_set(err, TPS_EIO, csv_path, 0, 0, NULL, "cannot open: %s",
                             strerror(errno));
    char hline[1024], line[1024];
    char *hdr[MAX_COLS];
    int hcols[MAX_COLS];
    int rc = TPS_OK;
    double *w = calloc(MAX_ROWS, sizeof *w), *ts = calloc(MAX_ROWS, sizeof *ts);
    double *wt = calloc(MAX_ROWS, sizeof *wt), *rel = calloc(MAX_ROWS, sizeof *rel);
    if (!w || !ts || !wt || !rel) {
        rc = tps_error_set(err, TPS_ENOMEM, csv_path, 0, 0, NULL, "out of memory");
        goto done;
    }
    if (!fgets(hline, sizeof hline, f)) {
        rc = tps_error_set(err, TPS_EINVAL, csv_path, 1, 1, NULL, "empty GEMM table");
        goto done;
    }
    chomp(hline);
    int nh = csv_split(hline, hdr, hcols);
    int im = col_index(hdr, nh, "m"), in = col_index(hdr, nh, "n"), ik = col_index(hdr, nh, "k");
    int ib = col_index(hdr, nh, "b"), idt = col_index(hdr, nh, "dtype");
    char tfname[32];
    snprintf(tfname, sizeof tfname, "%s_tflops", mdl_dtype_name(t));
    int itf = col_index(hdr, nh, "tflops");
    if (itf < 0) itf = col_index(hdr, nh, tfname);
    if (im < 0 || in < 0 || ik < 0 || itf < 0) {
        rc = tps_error_set(err, TPS_EINVAL, csv_path, 1, 1, "header",
                           "a GEMM table needs columns m, n, k and tflops (or %s)", tfname);
        goto done;
    }
    int rows = 0, lineno = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        chomp(line);
        if (!line[0]) continue;
        char *fl[MAX_COLS];
        int cols[MAX_COLS];
        int nf = csv_split(line, fl, cols);
        if (nf < nh) {
            rc = tps_error_set(err, TPS_EINVAL, csv_path, lineno, 1, NULL,
                               "expected %d columns, found %d", nh, nf);
            goto done;
        }
        if (idt >= 0 && strcasecmp(fl[idt], mdl_dtype_name(t)) != 0) continue;
        double m, n, k, b = 1, tf;
        const int idx[] = {im, in, ik, itf};
        double *dst[] = {&m, &n, &k, &tf};
        for (int i = 0; i < 4; i++) {
            if (parse_num(fl[idx[i]], dst[i]) != 0 || !(*dst[i] > 0)) {
                rc = tps_error_set(err, TPS_EINVAL, csv_path, lineno, cols[idx[i]], hdr[idx[i]],
                                   "expected a positive number, got '%s'", fl[idx[i]]);
                goto done;
            }
        }
        if (ib >= 0 && (parse_num(fl[ib], &b) != 0 || !(b > 0))) {
            rc = tps_error_set(err, TPS_EINVAL, csv_path, lineno, cols[ib], "b",
                               "expected a positive number, got '%s'", fl[ib]);
            goto done;
        }
        if (rows == MAX_ROWS) break;
        w[rows] = mdl_gemm_flop(b, m, n, k);
        ts[rows] = w[rows] / (tf * 1e12);
        wt[rows] = 1.0 / (ts[rows] * ts[rows]);
        rows++;
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
    d->gemm_overhead_s = c0;
    d->gemm_eff_max = 1.0 / (c1 * d->peak_flops[t]);
    for (int i = 0; i < rows; i++)
        rel[i] = fabs((c0 + c1 * w[i]) - ts[i]) / ts[i];
    gsl_sort(rel, 1, (size_t)rows);
    if (out) {
        out->rows = rows;
        out->median_err = gsl_stats_median_from_sorted_data(rel, 1, (size_t)rows);
        out->max_err = rel[rows - 1];
    }
done:
    free(w);
    free(ts);
    free(wt);
    free(rel);
    fclose(f);
    return rc;
}
