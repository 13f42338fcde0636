/* gemmtable.c - GEMM table reading and log-space trilinear interpolation (see gemmtable.h).
 * GSL's gsl_interp_bsearch locates a shape between grid values. */
#include "models/gemmtable.h"

#include <errno.h>
#include <fcntl.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/csv.h"
#include "common/readall.h"

#define MAX_FIELDS 32
#define MAX_TABLE  (64 << 20)

struct shape {
    double v[3], t; /* m, n, k (batch folded into m); seconds */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Distinct sorted logs of coordinate c of the shapes. */
static int make_axis(const struct shape *s, int n, int c, double **axis, int *na)
{
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++)
        v[i] = log(s[i].v[c]);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || v[i] > v[u - 1] + 1e-12) v[u++] = v[i];
    *axis = v;
    *na = u;
    return 0;
}

/* The grid index of a value the axis holds (it was built from these values). */
static size_t axis_index(const double *axis, int na, double x)
{
    size_t i = na > 1 ? gsl_interp_bsearch(axis, x, 0, (size_t)na - 1) : 0;
    if (i + 1 < (size_t)na && fabs(axis[i + 1] - x) < fabs(axis[i] - x)) i++;
    return i;
}

static int col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(hdr[i], name)) return i;
    return -1;
}

static int num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || !(v > 0)) return -1;
    *out = v;
    return 0;
}

static int dtype_matches(const char *s, enum mdl_dtype t)
{
    static const char *const names[][3] = {
        {"fp32", "float32", "FP32"}, {"fp16", "float16", "FP16"}, {"bf16", "bfloat16", "BF16"}};
    for (int i = 0; i < 3; i++)
        if (!strcasecmp(s, names[t][i])) return 1;
    return 0;
}

int mdl_gemm_table_load(const char *csv, enum mdl_dtype t, struct mdl_gemm_table *tab,
                        struct tps_error *err)
{
    memset(tab, 0, sizeof *tab);
    snprintf(tab->path, sizeof tab->path, "%s", csv);
    tab->dtype = t;
    int fd = open(csv, O_RDONLY);
    if (fd < 0)
        return tps_error_set(err, TPS_EIO, csv, 0, 0, NULL, "cannot open: %s", strerror(errno));
    size_t len = 0;
    char *text = tps_read_all(fd, MAX_TABLE, &len);
    close(fd);
    if (!text)
        return tps_error_set(err, TPS_EIO, csv, 0, 0, NULL, "cannot read: %s", strerror(errno));
    char store[4096], hstore[4096], *f[MAX_FIELDS], *h[MAX_FIELDS];
    const char *next, *end = text + len;
    int nh = tps_csv_record(text, end, hstore, sizeof hstore, h, MAX_FIELDS, &next), rc = 0;
    int im = -1, in = -1, ik = -1, ib = -1, idt = -1, itime = -1, itf = -1;
    if (nh > 0) {
        char tfname[32];
        snprintf(tfname, sizeof tfname, "%s_tflops",
                 t == MDL_FP32   ? "fp32"
                 : t == MDL_FP16 ? "fp16"
                                 : "bf16");
        im = col(h, nh, "m"), in = col(h, nh, "n"), ik = col(h, nh, "k"), ib = col(h, nh, "b");
        if (ib < 0) ib = col(h, nh, "batch");
        idt = col(h, nh, "dtype"), itime = col(h, nh, "time_s"), itf = col(h, nh, "tflops");
        if (itf < 0) itf = col(h, nh, tfname);
    }
    if (nh <= 0 || im < 0 || in < 0 || ik < 0 || (itime < 0 && itf < 0))
        rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header",
                           "a GEMM table needs columns m, n, k and time_s or tflops");
    struct shape *s = NULL;
    int n = 0, cap = 0, line = 1;
    for (const char *p = next; !rc && p < end; p = next) {
        line++;
        int nf = tps_csv_record(p, end, store, sizeof store, f, MAX_FIELDS, &next);
        if (nf == 0) break;
        if (nf < nh) {
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 1, NULL, "expected %d columns, found %d",
                               nh, nf < 0 ? 0 : nf);
            break;
        }
        if (idt >= 0 && !dtype_matches(f[idt], t)) continue;
        struct shape x;
        double b = 1;
        if (num(f[im], &x.v[0]) || num(f[in], &x.v[1]) || num(f[ik], &x.v[2]) ||
            (ib >= 0 && f[ib][0] && num(f[ib], &b)) ||
            (itime >= 0 ? num(f[itime], &x.t) : num(f[itf], &x.t))) {
            rc = tps_error_set(err, TPS_EINVAL, csv, line, 1, NULL,
                               "expected positive numbers for m, n, k, b and the time");
            break;
        }
        x.v[0] *= b;
        if (itime < 0) x.t = 2 * x.v[0] * x.v[1] * x.v[2] / (x.t * 1e12); /* from TFLOP/s */
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct shape *ns = realloc(s, (size_t)cap * sizeof *ns);
            if (!ns) {
                rc = tps_error_oom(err);
                break;
            }
            s = ns;
        }
        s[n++] = x;
    }
    if (!rc && n == 0)
        rc = tps_error_set(err, TPS_EINVAL, csv, 0, 0, "dtype", "no row of dtype %s",
                           t == MDL_FP32   ? "fp32"
                           : t == MDL_FP16 ? "fp16"
                                           : "bf16");
    for (int c = 0; !rc && c < 3; c++)
        if (make_axis(s, n, c, &tab->axis[c], &tab->na[c])) rc = tps_error_oom(err);
    size_t cells = rc ? 0 : (size_t)tab->na[0] * (size_t)tab->na[1] * (size_t)tab->na[2];
    if (!rc && cells > (size_t)MAX_TABLE / sizeof(double))
        rc = tps_error_set(err, TPS_EINVAL, csv, 0, 0, NULL, "the table's grid is too large");
    if (!rc && !(tab->logt = malloc(cells * sizeof *tab->logt))) rc = tps_error_oom(err);
    for (size_t i = 0; !rc && i < cells; i++)
        tab->logt[i] = NAN;
    for (int i = 0; !rc && i < n; i++) {
        size_t a = axis_index(tab->axis[0], tab->na[0], log(s[i].v[0]));
        size_t b = axis_index(tab->axis[1], tab->na[1], log(s[i].v[1]));
        size_t c = axis_index(tab->axis[2], tab->na[2], log(s[i].v[2]));
        size_t at = (a * (size_t)tab->na[1] + b) * (size_t)tab->na[2] + c;
        tab->logt[at] = log(s[i].t); /* a repeated shape: the last row wins */
    }
    tab->points = rc ? 0 : n;
    free(s);
    free(text);
    return rc;
}

void mdl_gemm_table_release(struct mdl_gemm_table *tab)
{
    for (int c = 0; c < 3; c++)
        free(tab->axis[c]);
    free(tab->logt);
    memset(tab, 0, sizeof *tab);
}

double mdl_gemm_table_time(const struct mdl_gemm_table *tab, double batch, double m, double n,
                           double k)
{
    if (!tab || !tab->logt) return -1;
    double x[3] = {log(batch * m), log(n), log(k)}, w[3];
    size_t lo[3];
    for (int c = 0; c < 3; c++) {
        const double *a = tab->axis[c];
        int na = tab->na[c];
        if (x[c] < a[0] - 1e-9 || x[c] > a[na - 1] + 1e-9) return -1; /* beyond the table */
        if (na == 1) {
            lo[c] = 0;
            w[c] = 0;
            continue;
        }
        lo[c] = gsl_interp_bsearch(a, x[c], 0, (size_t)na - 1);
        if (lo[c] >= (size_t)na - 1) lo[c] = (size_t)na - 2;
        w[c] = (x[c] - a[lo[c]]) / (a[lo[c] + 1] - a[lo[c]]);
        if (w[c] < 0) w[c] = 0;
        if (w[c] > 1) w[c] = 1;
    }
    double sum = 0;
    for (int corner = 0; corner < 8; corner++) {
        double wt = 1;
        size_t idx[3];
        for (int c = 0; c < 3; c++) {
            int hi = (corner >> c) & 1;
            double wc = hi ? w[c] : 1 - w[c];
            idx[c] = lo[c] + (size_t)(hi && tab->na[c] > 1);
            wt *= wc;
        }
        if (wt == 0) continue;
        double v = tab->logt[(idx[0] * (size_t)tab->na[1] + idx[1]) * (size_t)tab->na[2] + idx[2]];
        if (isnan(v)) return -1; /* a corner the table lacks */
        sum += wt * v;
    }
    return exp(sum);
}
