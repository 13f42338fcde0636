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
