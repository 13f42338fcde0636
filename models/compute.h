/* compute.h - compute cost of GPU kernels: GEMMs on a size-dependent efficiency curve and
 * memory-bound kernels priced by bytes over HBM bandwidth.
 *
 * GEMM of batch x (m x k)(k x n), W = 2*batch*m*n*k FLOP, B = batch*(mk+kn+mn)*dtype bytes:
 *     t = max(overhead + W / (eff_max * peak), B / (mem_eff * hbm))
 * so the achieved efficiency W/(t*peak) rises with size towards eff_max. Memory-bound kernel of
 * B bytes: t = kernel_overhead + B / (mem_eff * hbm). Units: FLOP, bytes, seconds.
 * The two GEMM constants can be fitted to a measured GEMM table (mdl_compute_calibrate); a device
 * that carries the table itself (device.gemm_table, gemmtable.h) prices the GEMMs it covers by
 * interpolation and the others by this roofline.
 */
#ifndef MDL_COMPUTE_H
#define MDL_COMPUTE_H

#include "common/error.h"
#include "device.h"

double mdl_gemm_flop(double batch, double m, double n, double k);
double mdl_gemm_time(const struct mdl_device *d, enum mdl_dtype t, double batch, double m, double n,
                     double k);
/* The same from the FLOPs and the bytes a GEMM moves (mdl_gemm_bytes). */
double mdl_gemm_bytes(enum mdl_dtype t, double batch, double m, double n, double k);
double mdl_gemm_time_wb(const struct mdl_device *d, enum mdl_dtype t, double flop, double bytes);
/* Memory-bound kernels by kind: streaming element-wise kernels reach mem_eff of the bandwidth,
 * layer norms norm_eff and softmaxes softmax_eff (row reductions with fp32 arithmetic). */
enum mdl_mem_kind { MDL_MEM_ELEMENTWISE, MDL_MEM_NORM, MDL_MEM_SOFTMAX };
double mdl_mem_time(const struct mdl_device *d, double bytes);
double mdl_mem_time_kind(const struct mdl_device *d, enum mdl_mem_kind k, double bytes);

struct mdl_calib {
    int rows;          /* GEMM table rows used in the fit */
    double median_err; /* median |relative error| of fitted vs measured time over those rows */
    double max_err;    /* max |relative error| */
};

/* Fits gemm_overhead_s and gemm_eff_max of *d to a GEMM table in the format of
 * ../shared/refdata/gemm (CSV with m,n,k[,b][,dtype] and a tflops or <dtype>_tflops column).
 * Rows whose dtype column names another dtype are skipped. Weighted least squares on time
 * (weights 1/t^2, i.e. relative error) with GSL. Needs at least 2 rows. */
int mdl_compute_calibrate(struct mdl_device *d, enum mdl_dtype t, const char *csv_path,
                          struct mdl_calib *out, struct tps_error *err);

#endif
