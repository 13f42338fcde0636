/* stats.c - median and maximum of a sample (see stats.h). */
#include "stats.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

void tps_median_max(double *v, int n, double *median, double *max)
{
    *median = 0;
    if (max) *max = 0;
    if (n <= 0) return;
    gsl_sort(v, 1, (size_t)n);
    *median = gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
    if (max) *max = v[n - 1];
}
