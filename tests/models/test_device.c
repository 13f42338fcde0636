/* test_device.c - device presets agree with ../shared/refdata/hardware.csv. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/device.h"

TestSuite(device);

/* Value column of the hardware.csv row (gpu_or_link, metric), or -1. */
static double hw_value(const char *gpu, const char *metric)
{
    FILE *f = fopen(TPSIM_REFDATA "/hardware.csv", "r");
    cr_assert_not_null(f, "cannot open hardware.csv");
    char line[4096];
    double v = -1;
    size_t gl = strlen(gpu), ml = strlen(metric);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, gpu, gl) || line[gl] != ',') continue;
        if (strncmp(line + gl + 1, metric, ml) || line[gl + 1 + ml] != ',') continue;
        v = strtod(line + gl + ml + 2, NULL);
        break;
    }
    fclose(f);
    return v;
}

static void check(const char *preset, const char *gpu, const char *peak_metric, double peak_scale,
                  const char *mem_gpu, const char *mem_metric, double mem_scale)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset(preset, &d), 0));
    double peak = hw_value(gpu, peak_metric), mem = hw_value(mem_gpu, mem_metric);
    cr_assert(gt(dbl, peak, 0), "%s %s missing in hardware.csv", gpu, peak_metric);
    cr_assert(gt(dbl, mem, 0), "%s %s missing in hardware.csv", mem_gpu, mem_metric);
    cr_assert(ieee_ulp_eq(dbl, d.peak_flops[MDL_BF16], peak * peak_scale, 4), "%s peak", preset);
    cr_assert(ieee_ulp_eq(dbl, d.hbm_Bps, mem * mem_scale, 4), "%s hbm", preset);
}

Test(device, presets_match_hardware_csv)
{
    check("A100-80GB", "A100 SXM4", "bf16_peak_dense", 1e12, "A100 SXM4 80GB", "hbm_bandwidth",
          1e12);
    check("H100-SXM", "H100 SXM5", "bf16_peak_dense", 1e12, "H100 SXM5", "hbm_bandwidth", 1e12);
    check("H200", "H200 SXM", "bf16_peak_dense", 1e12, "H200 SXM", "hbm_bandwidth", 1e12);
    check("V100", "V100 SXM2", "tensor_peak_fp16_dense", 1e12, "V100 SXM2", "hbm_bandwidth", 1e9);
    check("RTX-4090", "RTX 4090", "bf16_tensor_peak_dense", 1e12, "RTX 4090", "memory_bandwidth",
          1e9);
    struct mdl_device d;
    mdl_device_preset("RTX-3090", &d);
    cr_assert(ieee_ulp_eq(dbl, d.hbm_Bps, hw_value("RTX 3090", "memory_bandwidth") * 1e9, 4));
    mdl_device_preset("A100-40GB", &d);
    cr_assert(ieee_ulp_eq(dbl, d.peak_flops[MDL_BF16],
                          hw_value("A100 SXM4", "bf16_peak_dense") * 1e12, 4));
}

Test(device, unknown_preset_is_refused)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("TPU-v4", &d), -1));
}

/* theory_tflops and efficiency_pct of the mamf table's row (accelerator, dtype), or -1. */
static void mamf_row(const char *acc, const char *dtype, double *theory, double *eff)
{
    FILE *f = fopen(TPSIM_REFDATA "/gemm/mamf_max_achievable_matmul_stas00.csv", "r");
    cr_assert_not_null(f, "cannot open the mamf table");
    char line[4096], key[128];
    snprintf(key, sizeof key, "\"%s\",%s,", acc, dtype);
    *theory = *eff = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key))) continue;
        char *p = line + strlen(key), *end;
        strtod(p, &end); /* mamf_tflops */
        *theory = strtod(end + 1, &end);
        *eff = strtod(end + 1, NULL);
        break;
    }
    fclose(f);
}

/* Blackwell's peaks are the mamf table's theory_tflops; with no GEMM table of their own, their
 * GEMM curve is the H100's with its asymptote scaled by the table's achieved fraction of peak
 * (device.c), flagged as an assumption. */
Test(device, blackwell_peaks_and_assumed_gemm_curves_follow_the_mamf_table)
{
    static const struct {
        const char *preset, *acc;
        double tdp;
    } b[] = {{"B200", "NVIDIA B200 SXM", 1000},
             {"B300", "NVIDIA B300 SXM", 1100},
             {"GB200", "NVIDIA GB200 SXM", 1200}};
    struct mdl_device h;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &h), 0));
    double hb, hbe, hf, hfe;
    mamf_row("NVIDIA H100 SXM", "bf16", &hb, &hbe);
    mamf_row("NVIDIA H100 SXM", "fp8_e4m3fn", &hf, &hfe);
    cr_assert(eq(dbl, hb * 1e12, h.peak_flops[MDL_BF16]));
    cr_assert(not(h.assumed_gemm));
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        struct mdl_device d;
        cr_assert(eq(int, mdl_device_preset(b[i].preset, &d), 0));
        double t, e, tf, ef;
        mamf_row(b[i].acc, "bf16", &t, &e);
        mamf_row(b[i].acc, "fp8_e4m3fn", &tf, &ef);
        cr_assert(gt(dbl, t, 0), "%s", b[i].acc);
        cr_assert(ieee_ulp_eq(dbl, d.peak_flops[MDL_BF16], t * 1e12, 4), "%s", b[i].preset);
        cr_assert(ieee_ulp_eq(dbl, d.peak_flops[MDL_FP8], tf * 1e12, 4), "%s", b[i].preset);
        cr_assert(ieee_ulp_eq(dbl, d.gemm_eff_max, h.gemm_eff_max * e / hbe, 8), "%s", b[i].preset);
        cr_assert(ieee_ulp_eq(dbl, d.fp8_gemm_eff, h.fp8_gemm_eff * ef / hfe, 8), "%s",
                  b[i].preset);
        cr_assert(eq(dbl, d.gemm_overhead_s, h.gemm_overhead_s));
        cr_assert(d.assumed_gemm);
        cr_assert(eq(dbl, d.tdp_w, b[i].tdp));
        cr_assert(gt(dbl, d.mem_bytes, h.mem_bytes * 2));
    }
}

/* What a job may have: the device's memory less its context, NCCL's buffers and 3% for the
 * allocator, or what memory_reserved says. */
Test(device, usable_memory_holds_back_the_documented_default_or_what_is_set)
{
    struct mdl_device d;
    cr_assert(eq(int, mdl_device_preset("H100-SXM", &d), 0));
    double r = 0.6e9 + 1.0e9 + 0.03 * 80 * 1073741824.0;
    cr_assert(ieee_ulp_eq(dbl, mdl_device_reserved(&d), r, 4));
    cr_assert(ieee_ulp_eq(dbl, mdl_device_usable(&d), 80 * 1073741824.0 - r, 4));
    d.mem_reserved_bytes = 0;
    cr_assert(eq(dbl, mdl_device_usable(&d), d.mem_bytes));
    d.mem_reserved_bytes = 5e9;
    cr_assert(eq(dbl, mdl_device_usable(&d), d.mem_bytes - 5e9));
    d.mem_reserved_bytes = -1;
    d.mem_bytes = 2e9; /* a small device set by hand keeps half */
    cr_assert(eq(dbl, mdl_device_usable(&d), 1e9));
}
