/* gemmtable.h - GEMM times measured on a grid, interpolated in log space.
 *
 * A table in the format of ../shared/refdata/gemm (CSV: m, n, k, optional b and dtype, and
 * time_s, or tflops / <dtype>_tflops) is read for one dtype. Its shapes are placed on the grid of
 * their distinct m, n and k values; the time of a GEMM (batch x m x n x k, priced as
 * batch*m x n x k) is the trilinear interpolation of log time over log m, log n and log k between
 * the eight surrounding grid points, exact at a measured point. A shape outside the grid, or next
 * to a grid point the table lacks, has no table time: the caller prices it with the roofline
 * (compute.h). Units: seconds.
 */
#ifndef MDL_GEMMTABLE_H
#define MDL_GEMMTABLE_H

#include "common/error.h"
#include "device.h"

struct mdl_gemm_table {
    int na[3];       /* grid values along m, n, k */
    double *axis[3]; /* owned: log of the grid values, ascending */
    double *logt;    /* owned: [im][in][ik] log time, NAN where not measured */
    int points;      /* measured shapes used */
    char path[512];  /* the file */
    enum mdl_dtype dtype;
};

/* One measured GEMM: batch x (m x k)(k x n) took time_s seconds. */
struct mdl_gemm_row {
    double m, n, k, batch, time_s;
};

/* The rows of dtype t of a table (rows naming another dtype, or bfloat16/float16/float32 for it,
 * are skipped; a table without a dtype column is all of t). The time is time_s, or derived from
 * tflops or <dtype>_tflops; batch from b or batch (1 if absent or empty). A bad value fails
 * naming line, column and field. *rows is malloc'ed (NULL on failure). */
int mdl_gemm_rows_read(const char *csv, enum mdl_dtype t, struct mdl_gemm_row **rows, int *nrows,
                       struct tps_error *err);

/* Reads the rows of dtype t from csv (rows naming another dtype are skipped). Needs at least one
 * row. *tab is initialised here; release it even on failure. */
int mdl_gemm_table_load(const char *csv, enum mdl_dtype t, struct mdl_gemm_table *tab,
                        struct tps_error *err);
void mdl_gemm_table_release(struct mdl_gemm_table *tab);

/* The interpolated time of a batch x (m x k)(k x n) GEMM, or -1 when the table has none. */
double mdl_gemm_table_time(const struct mdl_gemm_table *tab, double batch, double m, double n,
                           double k);

#endif
