/* test_compute.c - GEMM cost curve, memory-bound cost and GEMM-table calibration. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "models/compute.h"
#include "models/gemmtable.h"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(compute, .init = setup);

Test(compute, gemm_time_is_overhead_plus_work_over_rate)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &d), 0));
    double t = mdl_gemm_time(&d, MDL_BF16, 1, 8192, 8192, 8192);
    double expect = d.gemm_overhead_s + 2.0 * 8192 * 8192 * 8192 / (d.gemm_eff_max * 312e12);
    cr_assert(ieee_ulp_eq(dbl, t, expect, 4));
    /* efficiency rises with size */
    double e_small =
        mdl_gemm_flop(1, 512, 512, 512) / mdl_gemm_time(&d, MDL_BF16, 1, 512, 512, 512);
    double e_big = mdl_gemm_flop(1, 8192, 8192, 8192) / t;
    cr_assert(lt(dbl, e_small, e_big));
}

Test(compute, skinny_gemm_is_memory_bound)
{
    struct mdl_device d;
    mdl_device_preset("A100-80GB", &d);
    /* (1 x 16384)(16384 x 16384): bytes dominate, streamed at the memory-bound efficiency */
    double t = mdl_gemm_time(&d, MDL_BF16, 1, 1, 16384, 16384);
    double bytes = (16384.0 + 16384.0 * 16384 + 16384.0) * 2;
    cr_assert(ieee_ulp_eq(dbl, t, bytes / (d.mem_eff * d.hbm_Bps), 4));
}

Test(compute, mem_time_is_overhead_plus_bytes_over_bandwidth)
{
    struct mdl_device d;
    mdl_device_preset("H100-SXM", &d);
    cr_assert(ieee_ulp_eq(dbl, mdl_mem_time(&d, 1e9),
                          d.kernel_overhead_s + 1e9 / (d.mem_eff * 3350e9), 4));
}

Test(compute, calibration_recovers_known_parameters)
{
    char path[] = "/tmp/tpsim-gemm-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "m,n,k,dtype,tflops\n");
    double t0 = 7e-6, eff = 0.83, peak = 312e12;
    for (int s = 512; s <= 16384; s *= 2) {
        double w = 2.0 * s * s * s;
        double t = t0 + w / (eff * peak);
        fprintf(f, "%d,%d,%d,BF16,%.12g\n", s, s, s, w / t / 1e12);
    }
    fprintf(f, "1024,1024,1024,FP8,999\n"); /* other dtype: skipped */
    fclose(f);
    struct mdl_device d;
    mdl_device_preset("A100-80GB", &d);
    struct mdl_calib c;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_compute_calibrate(&d, MDL_BF16, path, &c, &err), 0), "%s", err.msg);
    cr_assert(eq(int, c.rows, 6));
    cr_assert(ieee_ulp_eq(dbl, d.gemm_eff_max, eff, 1 << 20), "eff %g", d.gemm_eff_max);
    cr_assert(lt(dbl, fabs(d.gemm_overhead_s - t0), 1e-12), "t0 %g", d.gemm_overhead_s);
    cr_assert(lt(dbl, c.max_err, 1e-9));
    remove(path);
}

Test(compute, calibrates_on_published_a100_table)
{
    struct mdl_device d;
    mdl_device_preset("A100-80GB", &d);
    struct mdl_calib c;
    struct tps_error err = {0};
    const char *path = TPSIM_REFDATA "/gemm/a100_sxm4_80gb_azure_ndv4_cublaslt_fp16.csv";
    cr_assert(eq(int, mdl_compute_calibrate(&d, MDL_FP16, path, &c, &err), 0), "%s", err.msg);
    cr_assert(ge(int, c.rows, 8));
    cr_assert(gt(dbl, d.gemm_eff_max, 0.6));
    cr_assert(le(dbl, d.gemm_eff_max, 1.0));
    cr_assert(lt(dbl, d.gemm_overhead_s, 50e-6));
    cr_log_info("A100 fp16 fit: eff_max %.3f, overhead %.2f us, median err %.1f%%, max %.1f%%",
                d.gemm_eff_max, d.gemm_overhead_s * 1e6, c.median_err * 100, c.max_err * 100);
}

Test(compute, rejects_garbled_table_naming_line_and_column)
{
    char path[] = "/tmp/tpsim-gemm-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "m,n,k,dtype,tflops\n1024,1024,1024,BF16,100\n2048,abc,2048,BF16,200\n");
    fclose(f);
    struct mdl_device d;
    mdl_device_preset("A100-80GB", &d);
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_compute_calibrate(&d, MDL_BF16, path, NULL, &err), TPS_EINVAL));
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(int, err.col, 6));
    cr_assert(eq(str, err.field, "n"));
    remove(path);
}

Test(compute, norms_and_softmaxes_stream_at_their_own_efficiency)
{
    struct mdl_device d;
    mdl_device_preset("H100-SXM", &d);
    double b = 1e8;
    cr_assert(eq(dbl, mdl_mem_time_kind(&d, MDL_MEM_ELEMENTWISE, b), mdl_mem_time(&d, b)));
    cr_assert(ieee_ulp_eq(dbl, mdl_mem_time_kind(&d, MDL_MEM_NORM, b),
                          d.kernel_overhead_s + b / (d.norm_eff * d.hbm_Bps), 4));
    cr_assert(ieee_ulp_eq(dbl, mdl_mem_time_kind(&d, MDL_MEM_SOFTMAX, b),
                          d.kernel_overhead_s + b / (d.softmax_eff * d.hbm_Bps), 4));
    cr_assert(gt(dbl, mdl_mem_time_kind(&d, MDL_MEM_NORM, b), mdl_mem_time(&d, b)));
}

/* ------------------------------------------------------------------ GEMM tables */

/* Writes a 3 x 3 x 3 grid of t = c * m^0.9 * n * k^1.1 (a power law: log-linear) into path, the
 * shape (4096, 4096, 4096) left out. */
static void power_table(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL));
    fputs("m,n,k,dtype,layout,time_s,tflops\n", f);
    for (int a = 1024; a <= 4096; a *= 2)
        for (int b = 1024; b <= 4096; b *= 2)
            for (int c = 1024; c <= 4096; c *= 2) {
                if (a == 4096 && b == 4096 && c == 4096) continue;
                double t = 1e-12 * pow(a, 0.9) * b * pow(c, 1.1);
                fprintf(f, "%d,%d,%d,bfloat16,nn,%.17g,0\n", a, b, c, t);
                fprintf(f, "%d,%d,%d,float16,nn,%.17g,0\n", a, b, c, 2 * t);
            }
    fclose(f);
}

Test(compute, gemm_table_interpolates_in_log_space)
{
    char path[] = "/tmp/tpsim-gemm-XXXXXX.csv";
    int fd = mkstemps(path, 4);
    cr_assert(ge(int, fd, 0));
    close(fd);
    power_table(path);
    struct mdl_gemm_table tab;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_gemm_table_load(path, MDL_BF16, &tab, &err), 0), "%s", err.msg);
    cr_assert(eq(int, tab.points, 26));
    /* exact at a measured point, and between points for a power law */
    double want = 1e-12 * pow(2048, 0.9) * 1024 * pow(4096, 1.1);
    cr_assert(ieee_ulp_eq(dbl, mdl_gemm_table_time(&tab, 1, 2048, 1024, 4096), want, 64));
    want = 1e-12 * pow(1500, 0.9) * 3000 * pow(1200, 1.1);
    cr_assert(le(dbl, fabs(mdl_gemm_table_time(&tab, 1, 1500, 3000, 1200) - want), 1e-9 * want));
    /* batch folds into m */
    cr_assert(ieee_ulp_eq(dbl, mdl_gemm_table_time(&tab, 2, 1024, 1024, 1024),
                          mdl_gemm_table_time(&tab, 1, 2048, 1024, 1024), 64));
    /* beyond the grid, or next to the missing shape: no table time */
    cr_assert(eq(dbl, mdl_gemm_table_time(&tab, 1, 512, 1024, 1024), -1));
    cr_assert(eq(dbl, mdl_gemm_table_time(&tab, 1, 3000, 3000, 3000), -1));
    /* the device uses it, and the roofline where it has none */
    struct mdl_device d;
    mdl_device_preset("H100-SXM", &d);
    double roof = mdl_gemm_time(&d, MDL_BF16, 1, 512, 512, 512);
    d.gemm_table = &tab;
    cr_assert(ieee_ulp_eq(dbl, mdl_gemm_time(&d, MDL_BF16, 1, 2048, 1024, 4096),
                          1e-12 * pow(2048, 0.9) * 1024 * pow(4096, 1.1), 64));
    cr_assert(eq(dbl, mdl_gemm_time(&d, MDL_BF16, 1, 512, 512, 512), roof));
    /* another dtype's table is not used */
    cr_assert(ne(dbl, mdl_gemm_time(&d, MDL_FP16, 1, 2048, 1024, 4096),
                 1e-12 * pow(2048, 0.9) * 1024 * pow(4096, 1.1)));
    mdl_gemm_table_release(&tab);
    remove(path);
}

Test(compute, gemm_table_is_exact_at_the_h100_grid_points)
{
    const char *csv = TPSIM_REFDATA "/gemm/h100_sxm_torch_mm_grid_bf16_fp16.csv";
    struct mdl_gemm_table tab;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_gemm_table_load(csv, MDL_BF16, &tab, &err), 0), "%s", err.msg);
    cr_assert(gt(int, tab.points, 300));
    FILE *f = fopen(csv, "r");
    char line[256];
    int checked = 0;
    cr_assert(ne(ptr, fgets(line, sizeof line, f), NULL));
    while (fgets(line, sizeof line, f)) {
        double m, n, k, t;
        char dt[32];
        if (sscanf(line, "%lf,%lf,%lf,%31[^,],nn,%lf", &m, &n, &k, dt, &t) != 5) continue;
        if (strcmp(dt, "bfloat16")) continue;
        double got = mdl_gemm_table_time(&tab, 1, m, n, k);
        cr_assert(le(dbl, fabs(got - t), 1e-9 * t), "%g x %g x %g: %g vs %g", m, n, k, got, t);
        checked++;
    }
    fclose(f);
    cr_assert(eq(int, checked, tab.points));
    mdl_gemm_table_release(&tab);
}
