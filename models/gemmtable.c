/* gemmtable.c - GEMM table reading and log-space trilinear interpolation (see gemmtable.h).
 * GSL's gsl_interp_bsearch locates a shape between grid values. */
#include "models/gemmtable.h"

#include <errno.h>
#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/grow.h"
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
    static const char *const alias[] = {"float32", "float16", "bfloat16", "float8"};
    return !strcasecmp(s, mdl_dtype_name(t)) || !strcasecmp(s, alias[t]);
}

/* Splits a CSV line in place (double-quoted fields allowed) into at most MAX_FIELDS fields and
 * their 1-based columns. Returns the field count. */
static int split(char *line, char **fields, int *cols)
{
    int n = 0;
    char *p = line;
    while (n < MAX_FIELDS) {
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

/* The next line of the text at *p (split off in place, CR dropped), or NULL at the end. */
static char *next_line(char **p)
{
    if (!**p) return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    *p = nl ? nl + 1 : line + strlen(line);
    if (nl) *nl = '\0';
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[n - 1] = '\0';
    return line;
}

int mdl_gemm_rows_read(const char *csv, enum mdl_dtype t, struct mdl_gemm_row **rows, int *nrows,
                       struct tps_error *err)
{
    *rows = NULL;
    *nrows = 0;
    size_t len = 0;
    char *text = tps_read_file(csv, MAX_TABLE, "a GEMM table", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    char *p = text, *hline = next_line(&p), *h[MAX_FIELDS];
    int hcols[MAX_FIELDS], nh = hline ? split(hline, h, hcols) : 0, rc = TPS_OK;
    char tfname[32];
    snprintf(tfname, sizeof tfname, "%s_tflops", mdl_dtype_name(t));
    int im = tps_csv_column(h, nh, "m"), in = tps_csv_column(h, nh, "n");
    int ik = tps_csv_column(h, nh, "k"), ib = tps_csv_column(h, nh, "b");
    if (ib < 0) ib = tps_csv_column(h, nh, "batch");
    int idt = tps_csv_column(h, nh, "dtype"), itime = tps_csv_column(h, nh, "time_s");
    int itf = tps_csv_column(h, nh, "tflops");
    if (itf < 0) itf = tps_csv_column(h, nh, tfname);
    if (!hline || !hline[0])
        rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, NULL, "empty GEMM table");
    else if (im < 0 || in < 0 || ik < 0 || (itime < 0 && itf < 0))
        rc = tps_error_set(err, TPS_EINVAL, csv, 1, 1, "header",
                           "a GEMM table needs columns m, n, k and time_s, tflops or %s", tfname);
    int cap = 0, lineno = 1;
    for (char *line; !rc && (line = next_line(&p));) {
        lineno++;
        if (!line[0]) continue;
        char *fl[MAX_FIELDS];
        int cols[MAX_FIELDS], nf = split(line, fl, cols);
        if (nf < nh) {
            rc = tps_error_set(err, TPS_EINVAL, csv, lineno, 1, NULL,
                               "expected %d columns, found %d", nh, nf);
            break;
        }
        if (idt >= 0 && !dtype_matches(fl[idt], t)) continue;
        struct mdl_gemm_row r = {.batch = 1};
        const int idx[] = {im, in, ik, itime >= 0 ? itime : itf, ib};
        double *dst[] = {&r.m, &r.n, &r.k, &r.time_s, &r.batch};
        for (int i = 0; i < 5 && !rc; i++) {
            if (idx[i] < 0 || (i == 4 && !fl[idx[i]][0])) continue; /* no batch: 1 */
            if (num(fl[idx[i]], dst[i]) != 0)
                rc = tps_error_set(err, TPS_EINVAL, csv, lineno, cols[idx[i]], h[idx[i]],
                                   "expected a positive number, got '%s'", fl[idx[i]]);
        }
        if (rc) break;
        if (itime < 0) /* from TFLOP/s */
            r.time_s = 2 * r.batch * r.m * r.n * r.k / (r.time_s * 1e12);
        if (tps_grow(rows, &cap, *nrows + 1, sizeof **rows, 256)) {
            rc = tps_error_oom(err);
            break;
        }
        (*rows)[(*nrows)++] = r;
    }
    free(text);
    if (rc) {
        free(*rows);
        *rows = NULL;
        *nrows = 0;
    }
    return rc;
}

int mdl_gemm_table_load(const char *csv, enum mdl_dtype t, struct mdl_gemm_table *tab,
                        struct tps_error *err)
{
    memset(tab, 0, sizeof *tab);
    snprintf(tab->path, sizeof tab->path, "%s", csv);
    tab->dtype = t;
    struct mdl_gemm_row *rows = NULL;
    int n = 0, rc = mdl_gemm_rows_read(csv, t, &rows, &n, err);
    struct shape *s = rc ? NULL : malloc(((size_t)n + 1) * sizeof *s);
    if (!rc && !s) rc = tps_error_oom(err);
    for (int i = 0; !rc && i < n; i++)
        s[i] = (struct shape){{rows[i].batch * rows[i].m, rows[i].n, rows[i].k}, rows[i].time_s};
    free(rows);
    if (!rc && n == 0)
        rc = tps_error_set(err, TPS_EINVAL, csv, 0, 0, "dtype", "no row of dtype %s",
                           mdl_dtype_name(t));
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
