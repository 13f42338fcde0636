/* device.c - device presets (peak FLOP/s, HBM bytes/s, memory bytes) with their sources.
 *
 * Sources: "hw.csv" is ../shared/refdata/hardware.csv (row named in each comment); numbers it
 * lacks are marked "not in refdata" with their public source. GEMM efficiency maxima come from
 * ../shared/refdata/gemm/mamf_max_achievable_matmul_stas00.csv where the accelerator is listed;
 * others use the documented default (docs/compute-model.md). tests/models/test_device.c checks
 * the hw.csv-derived figures against the CSV itself.
 */
#include "device.h"

#include <math.h>
#include <string.h>

#define T   1e12
#define GB  1e9
#define GIB 1073741824.0

/* Defaults of the compute model for presets without data of their own (docs/compute-model.md):
 * the fixed GPU costs per kernel are the H100's, measured inside CUDA graphs (no host in them). */
#define EFF_DEFAULT     0.80
#define GEMM_OVERHEAD   2e-6
#define MEM_EFF         0.80
#define KERNEL_OVERHEAD 1e-6
/* Memory-bound kernel kinds, fused attention and the host, fitted on the H100 SXM layer data of
 * ../shared/refdata/layers and validate/data/layers (docs/compute-model.md has the fit and its
 * error): layer norm and softmax reach about half the HBM bandwidth on the kernel rows; the host
 * launches one kernel of PyTorch's forward in 54 us and of autograd's backward in 40 us (eager
 * bmm rows of both tables: the median of a host whose time per launch varies between about 35
 * and 90 us), a CUDA graph in 10 us (graphs rows); one scaled_dot_product_attention call takes
 * the host 225 us forward and 325 us backward (eager flash rows). Every preset uses them: the
 * host is the framework's. */
#define NORM_EFF      0.52
#define SOFTMAX_EFF   0.51
#define FLASH_EFF     0.55
#define LAUNCH        54e-6
#define BWD_LAUNCH    40e-6
#define GRAPH_LAUNCH  10e-6
#define FLASH_LAUNCH  225e-6
#define FLASH_BWD     325e-6
#define A100_EFF      0.761
#define A100_OVERHEAD 10.1e-6
#define H100_EFF      0.75
/* FP8 (Transformer Engine's E4M3/E5M2 GEMMs), Hopper: dense peak 1979 TFLOP/s (twice BF16; the
 * theory_tflops of gemm/mamf_max_achievable_matmul_stas00 for H200/GH200, and the peak the DGX
 * Cloud recipes' MFU divides by, e2e/dgxc_bench_eos_h100_gpt3_nemotron4.meta.yaml). The curve's
 * two constants: mdl_compute_calibrate (least squares on relative time) over the 9 cuBLASLt
 * shapes of gemm/h100_sxm_azure_ndv5_cublaslt_fp8 (65.9% of peak, 6.3 us; median |error| 5.8%,
 * the memory-bound 802816x192x768 row aside, which the roofline prices) and of
 * gemm/h200_sxm_azure_ndv5_cublaslt_fp8 (65.3%, 6.0 us) (tests/models/test_fp8.c refits
 * them). Earlier GPUs have no FP8 tensor cores: peak 0, and an FP8 model is refused. */
#define FP8_PEAK          (1979 * T)
#define H100_FP8_EFF      0.6587
#define H100_FP8_OVERHEAD 6.33e-6
#define H200_FP8_EFF      0.6535
#define H200_FP8_OVERHEAD 6.02e-6
/* Blackwell: no GEMM table yet. The curve's asymptote is the H100's fitted one scaled by the
 * ratio of the two GPUs' best achievable matmul to peak in gemm/mamf_max_achievable_matmul_stas00
 * (BF16: H100 80.3%, B200 77.6%, B300 78.6%, GB200 72.9%; FP8: H100 70.9%, B200 76.3%, B300
 * 74.5%, GB200 72.3%), its fixed time the H100's: a stated assumption (docs/platforms.md,
 * "Devices"), flagged in the output's meta as `assumed_gemm_efficiency`. */
#define MAMF_SCALE(eff, ratio) ((eff) * (ratio))
#define TAIL                                                                                       \
    NORM_EFF, SOFTMAX_EFF, FLASH_EFF, LAUNCH, BWD_LAUNCH, GRAPH_LAUNCH, FLASH_LAUNCH, FLASH_BWD,   \
        NULL
/* a device without FP8 tensor cores: no FP8 GEMM curve */
#define NO_FP8 TAIL, 0, 0
/* Streaming multiprocessors per GPU: NVIDIA's architecture whitepapers (V100 80, A100 108, H100
 * SXM5 132, GA102 of the RTX 3090 82, AD102 of the RTX 4090 128); not in refdata. */

/* Hopper's fused attention (PyTorch's FlashAttention-2 backend, bf16, head dim 128): the rate
 * of computed FLOPs grows with the work of a call, as its fixed costs (launch, each block's
 * prologue and epilogue, the last wave) spread over more tiles, from 25 TFLOP/s for a causal
 * 512-token block of 16 heads to 344 at 32,768 tokens; the causal kernel, whose diagonal tiles
 * are part masked, reaches less than a dense block of the same work. Measured for this project
 * on one H100 SXM (validate/data/attention/h100_flash_blocks.csv and its meta: batch 1, 16 heads,
 * s = 512 to 32,768; flop = 4 x 16 x s^2 x 128, halved when causal; checked against the file by
 * tests/models/test_compute.c). */
static const struct mdl_flash_curve H100_FLASH = {
    7,
    {{1.07374e9, 4.29497e9, 1.71799e10, 6.87195e10, 2.74878e11, 1.09951e12, 4.39805e12},
     {2.14748e9, 8.58993e9, 3.43597e10, 1.37439e11, 5.49756e11, 2.19902e12, 8.79609e12}},
    {{25.27e12, 107.81e12, 157.55e12, 214.35e12, 279.80e12, 327.27e12, 344.20e12},
     {42.26e12, 226.51e12, 318.35e12, 339.44e12, 357.13e12, 365.10e12, 355.16e12}},
    {{13.40e12, 76.16e12, 133.37e12, 200.08e12, 256.40e12, 305.44e12, 303.45e12},
     {31.77e12, 152.22e12, 229.74e12, 269.96e12, 292.34e12, 297.13e12, 306.28e12}}};

static const struct mdl_device presets[] = {
    /* V100 SXM2: hw.csv tensor_peak_fp16_dense 125; hbm_bandwidth 900 GB/s. No BF16 on Volta:
     * bf16 slot uses the fp16 rate. fp32 15.7 TFLOP/s: NVIDIA V100 datasheet (not in refdata). */
    {"V100",
     {15.7 * T, 125 * T, 125 * T},
     900 * GB,
     32 * GIB,
     EFF_DEFAULT,
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     NO_FP8,
     80,
     300,
     false,
     -1,
     0,
     NULL},
    /* A100 SXM4 40GB: hw.csv bf16_peak_dense 312 (fp16 312, tf32 156 in its notes). HBM 1555
     * GB/s: NVIDIA A100 datasheet (not in refdata: hw.csv lists the 80GB variant only).
     * GEMM eff_max 0.761 and overhead 10.1 us: the A100 80GB fit below (same chip). */
    {"A100-40GB",
     {156 * T, 312 * T, 312 * T},
     1555 * GB,
     40 * GIB,
     A100_EFF,
     A100_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     NO_FP8,
     108,
     400,
     false,
     -1,
     0,
     NULL},
    /* A100 SXM4 80GB: hw.csv bf16_peak_dense 312, hbm_bandwidth 2.00 TB/s. GEMM eff_max 0.761
     * and overhead 10.1 us: least squares on relative time over the 8 cuBLASLt shapes of
     * gemm/a100_sxm4_80gb_azure_ndv4_cublaslt_fp16 (median |error| 6.8%, max 32.8%). */
    {"A100-80GB",
     {156 * T, 312 * T, 312 * T},
     2000 * GB,
     80 * GIB,
     A100_EFF,
     A100_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     NO_FP8,
     108,
     400,
     false,
     -1,
     0,
     NULL},
    /* H100 SXM5: hw.csv bf16_peak_dense 989, hbm_bandwidth 3.35 TB/s. tf32 494.7: NVIDIA H100
     * datasheet dense (not in refdata). GEMM eff_max 0.75, overhead 2 us and kernel overhead
     * 1 us (the defaults above): fitted on the CUDA-graphs rows of
     * layers/h100_megatron_1d_layer_times (GPU time with no host in it; docs/compute-model.md). */
    {"H100-SXM",
     {494.7 * T, 989 * T, 989 * T, FP8_PEAK},
     3350 * GB,
     80 * GIB,
     H100_EFF,
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     TAIL,
     H100_FP8_EFF,
     H100_FP8_OVERHEAD,
     132,
     700,
     false,
     -1,
     0,
     &H100_FLASH},
    /* H200 SXM: hw.csv bf16_peak_dense 989, hbm_bandwidth 4.80 TB/s, 141 GB. The H100's
     * compute (same GH100 chip; mamf says "H200 is the same" as H100 SXM). */
    {"H200",
     {494.7 * T, 989 * T, 989 * T, FP8_PEAK},
     4800 * GB,
     141 * GB,
     H100_EFF,
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     TAIL,
     H200_FP8_EFF,
     H200_FP8_OVERHEAD,
     132,
     700,
     false,
     -1,
     0,
     &H100_FLASH},
    /* RTX 3090: hw.csv memory_bandwidth 936.2 GB/s; its notes give FP16 non-tensor 35.58
     * TFLOP/s, which is the GA102 FP32 rate. Tensor fp16/bf16 with fp32 accumulate 71 TFLOP/s:
     * NVIDIA GA102 whitepaper (hw.csv: NOT FOUND offline). */
    {"RTX-3090",
     {35.58 * T, 71 * T, 71 * T},
     936.2 * GB,
     24 * GIB,
     EFF_DEFAULT,
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     NO_FP8,
     82,
     350,
     false,
     -1,
     0,
     NULL},
    /* RTX 4090: hw.csv bf16_tensor_peak_dense 165.15, memory_bandwidth 1008 GB/s. fp32 82.6:
     * NVIDIA Ada whitepaper (not in refdata). */
    {"RTX-4090",
     {82.6 * T, 165.15 * T, 165.15 * T},
     1008 * GB,
     24 * GIB,
     EFF_DEFAULT,
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     NO_FP8,
     128,
     450,
     false,
     -1,
     0,
     NULL},
    /* B200 (HGX/DGX B200, 1000 W): dense BF16/FP16 2250, FP8 4500 TFLOP/s (mamf theory_tflops;
     * glennklockwood.com/garden/processors/B200, HGX variant at 1,000 W; FP4 9000), TF32 1100
     * in the fp32 slot as for H100; 180 GB (DGX B200: 1,440 GB for 8 GPUs); HBM3e 7.68 TB/s: the
     * driver's 7680-bit bus at 3996 MHz (pytorch/ao#4002; the datasheet rounds to 8 TB/s);
     * 148 SMs (the same query). */
    {"B200",
     {1100 * T, 2250 * T, 2250 * T, 4500 * T},
     7680 * GB,
     180 * GB,
     MAMF_SCALE(H100_EFF, 77.6 / 80.3),
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     TAIL,
     MAMF_SCALE(H100_FP8_EFF, 76.3 / 70.9),
     H100_FP8_OVERHEAD,
     148,
     1000,
     true,
     -1,
     0,
     NULL},
    /* B300 (Blackwell Ultra, HGX B300, 1100 W): dense BF16 2250 and FP8 4500 TFLOP/s (mamf:
     * "same as B200"; FP4 dense 14 PFLOP/s), 288 GB HBM3e (NVIDIA B300 datasheet), its memory
     * system the B200's (8 stacks, 7.68 TB/s as above; verda.com's GB300 table gives 7.7 TB/s),
     * 160 SMs (NVIDIA's Blackwell Ultra architecture brief). */
    {"B300",
     {1100 * T, 2250 * T, 2250 * T, 4500 * T},
     7680 * GB,
     288 * GB,
     MAMF_SCALE(H100_EFF, 78.6 / 80.3),
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     TAIL,
     MAMF_SCALE(H100_FP8_EFF, 74.5 / 70.9),
     H100_FP8_OVERHEAD,
     160,
     1100,
     true,
     -1,
     0,
     NULL},
    /* GB200 (one Blackwell GPU of a GB200 superchip at 1,200 W): dense BF16 2500, FP8 5000
     * TFLOP/s (mamf theory_tflops; glennklockwood.com, GB200 variant; FP4 10000), TF32 1250;
     * 186 GB and 8 TB/s (GB200 NVL72: 13.4 TB and 576 TB/s for 72 GPUs); 148 SMs (the B200
     * die). */
    {"GB200",
     {1250 * T, 2500 * T, 2500 * T, 5000 * T},
     8000 * GB,
     186 * GB,
     MAMF_SCALE(H100_EFF, 72.9 / 80.3),
     GEMM_OVERHEAD,
     MEM_EFF,
     KERNEL_OVERHEAD,
     TAIL,
     MAMF_SCALE(H100_FP8_EFF, 72.3 / 70.9),
     H100_FP8_OVERHEAD,
     148,
     1200,
     true,
     -1,
     0,
     NULL},
};

static const char *const names[] = {"V100", "A100-40GB", "A100-80GB", "H100-SXM",
                                    "H200", "RTX-3090",  "RTX-4090",  "B200",
                                    "B300", "GB200",     NULL};

double mdl_flash_time(const struct mdl_flash_curve *c, int dense, int bwd, double flop)
{
    const double *f = c->flop[dense], *r = bwd ? c->bwd[dense] : c->fwd[dense];
    double k = bwd ? 2.5 : 1; /* a backward point's FLOPs */
    int n = c->n;
    if (flop <= k * f[0]) return k * f[0] / r[0]; /* the smallest call's time: fixed costs */
    if (flop >= k * f[n - 1]) return flop / r[n - 1];
    int i = 1;
    while (flop > k * f[i])
        i++;
    double t = log(flop / (k * f[i - 1])) / log(f[i] / f[i - 1]);
    return flop / exp(log(r[i - 1]) + t * (log(r[i]) - log(r[i - 1])));
}

int mdl_device_preset(const char *name, struct mdl_device *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i];
            return 0;
        }
    }
    return -1;
}

const char *const *mdl_device_names(void)
{
    return names;
}

int mdl_dtype_parse(const char *name, enum mdl_dtype *out)
{
    static const char *n[] = {"fp32", "fp16", "bf16", "fp8"};
    for (int i = 0; i < MDL_NDTYPES; i++) {
        if (strcmp(n[i], name) == 0) {
            *out = (enum mdl_dtype)i;
            return 0;
        }
    }
    return -1;
}

const char *mdl_dtype_name(enum mdl_dtype t)
{
    return t == MDL_FP32 ? "fp32" : t == MDL_FP16 ? "fp16" : t == MDL_FP8 ? "fp8" : "bf16";
}

int mdl_dtype_bytes(enum mdl_dtype t)
{
    return t == MDL_FP32 ? 4 : t == MDL_FP8 ? 1 : 2;
}

double mdl_device_gemm_eff(const struct mdl_device *d, enum mdl_dtype t)
{
    return t == MDL_FP8 ? d->fp8_gemm_eff : d->gemm_eff_max;
}

double mdl_device_gemm_overhead(const struct mdl_device *d, enum mdl_dtype t)
{
    return t == MDL_FP8 ? d->fp8_gemm_overhead_s : d->gemm_overhead_s;
}

double mdl_device_reserved(const struct mdl_device *d)
{
    if (d->mem_reserved_bytes >= 0) return d->mem_reserved_bytes;
    double r = MDL_RESERVED_CONTEXT + MDL_RESERVED_NCCL + MDL_RESERVED_FRAGMENTATION * d->mem_bytes;
    return r < d->mem_bytes / 2 ? r : d->mem_bytes / 2; /* a small device set by hand */
}

double mdl_device_usable(const struct mdl_device *d)
{
    return d->mem_bytes - mdl_device_reserved(d);
}
