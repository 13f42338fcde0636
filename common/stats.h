/* stats.h - the summary statistics every comparison reports: median and maximum.
 *
 * One helper, GSL underneath, for the errors of validation tables, calibration fits and GEMM
 * table fits.
 */
#ifndef TPS_STATS_H
#define TPS_STATS_H

/* Sorts v[0..n) in place and sets *median and *max (both 0 when n is 0; max may be NULL). */
void tps_median_max(double *v, int n, double *median, double *max);

#endif
