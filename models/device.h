/* device.h - GPU device presets and the parameters of the compute cost model.
 *
 * A device is plain data: peak dense throughput per dtype (FLOP/s), HBM bandwidth (bytes/s) and
 * the calibratable constants of the compute model in compute.h. Preset figures come from
 * ../shared/refdata/hardware.csv where it has them; the source of every number is cited in
 * device.c next to it.
 */
#ifndef MDL_DEVICE_H
#define MDL_DEVICE_H

#include <stdbool.h>

/* MDL_FP8: the GEMM rate of Transformer Engine's FP8 (E4M3/E5M2 operands, higher-precision
 * output); a model never holds its activations in it (transformer.h: mdl_model.fp8). */
enum mdl_dtype { MDL_FP32 = 0, MDL_FP16 = 1, MDL_BF16 = 2, MDL_FP8 = 3, MDL_NDTYPES = 4 };

struct mdl_gemm_table;

/* What a report's meta says of a device whose GEMM curve is assumed (mdl_device.assumed_gemm). */
#define MDL_DEVICE_ASSUMED_GEMM                                                                    \
    "no GEMM table of this GPU: the H100's fitted curve with its asymptote scaled by the mamf "    \
    "table's achieved fraction of peak (docs/platforms.md, Devices)"

#define MDL_RESERVED_CONTEXT       0.6e9
#define MDL_RESERVED_NCCL          1.0e9
#define MDL_RESERVED_FRAGMENTATION 0.03

struct mdl_device {
    char name[32];                  /* preset name, e.g. "A100-80GB" */
    double peak_flops[MDL_NDTYPES]; /* dense peak FLOP/s per dtype (tensor cores where any) */
    double hbm_Bps;                 /* memory bandwidth, bytes/s */
    double mem_bytes;               /* device memory, bytes */
    double gemm_eff_max;            /* asymptotic fraction of peak reached by large GEMMs */
    double gemm_overhead_s;         /* fixed time per GEMM kernel (launch, ramp, tail), s */
    double mem_eff;                 /* fraction of hbm_Bps reached by memory-bound kernels */
    double kernel_overhead_s;       /* fixed time per memory-bound kernel, s */
    double norm_eff;    /* fraction of hbm_Bps reached by layer-norm kernels (row reductions) */
    double softmax_eff; /* fraction of hbm_Bps reached by softmax kernels (fp32 row math) */
    double flash_eff;   /* fraction of peak a fused (flash) attention kernel reaches */
    /* The host that launches kernels (docs/compute-model.md, "The host"). */
    double launch_s;       /* host time per kernel launched by the forward (Python, eager), s */
    double bwd_launch_s;   /* host time per kernel launched by the backward (autograd), s */
    double graph_launch_s; /* host time to launch one CUDA graph, s */
    /* host time of the fused attention call (scaled_dot_product_attention: backend selection,
     * input checks, its autograd node) in the forward and the backward, eager, s */
    double flash_launch_s, flash_bwd_launch_s;
    /* Measured GEMM times (gemmtable.h), borrowed from its owner (a scenario), or NULL: GEMMs it
     * covers take its interpolated time, the others the roofline. */
    const struct mdl_gemm_table *gemm_table;
    /* FP8 GEMMs (peak_flops[MDL_FP8]; 0 there: no FP8 tensor cores): their own asymptotic
     * fraction of peak and fixed time, fitted on an FP8 GEMM table (device.c) */
    double fp8_gemm_eff, fp8_gemm_overhead_s;
    int sms; /* streaming multiprocessors: a GEMM beside communication kernels that hold some of
                them runs on the rest (tp_comm_overlap) */
    double tdp_w; /* board power at full load (thermal design power), W */
    /* the GEMM curve is an assumption carried from another GPU's fit (no table of this one's):
     * said in the output's meta */
    bool assumed_gemm;
    /* memory the job cannot have (CUDA context and libraries' workspaces, NCCL's buffers, the
     * allocator's fragmentation), bytes; < 0: mdl_device_reserved's default */
    double mem_reserved_bytes;
    double idle_w; /* power while no kernel computes (device.idle_power), W; 0: tdp_w (the
                      energy then an upper bound) */
    /* Fused attention's measured rates (16-bit), or NULL: flash_eff of the peak at every size.
     * Set by a preset measured on its GPU, used where faster than flash_eff's (lw_flash);
     * device.flash_efficiency drops it. */
    const struct mdl_flash_curve *flash;
};

/* A fused attention kernel's rate of computed FLOPs against the FLOPs one call computes,
 * measured (causal s x s blocks, and dense blocks): log-log between points, the first point's
 * time below it, the last point's rate above. Backward rates are at 2.5 times the forward's
 * FLOPs of the same call. */
#define MDL_FLASH_POINTS 8
struct mdl_flash_curve {
    int n;
    double flop[2][MDL_FLASH_POINTS]; /* [dense]: forward FLOPs computed per call, increasing */
    double fwd[2][MDL_FLASH_POINTS];  /* [dense]: forward FLOP/s there */
    double bwd[2][MDL_FLASH_POINTS];  /* [dense]: backward FLOP/s there */
};

/* Seconds a fused attention call computing `flop` FLOPs (forward count, or the backward's) takes
 * on curve c, causal (dense 0) or dense (1), forward or backward. */
double mdl_flash_time(const struct mdl_flash_curve *c, int dense, int bwd, double flop);

/* Fills *out from a preset name (case-sensitive). Returns 0, or -1 if the name is unknown. */
int mdl_device_preset(const char *name, struct mdl_device *out);
/* NULL-terminated list of preset names. */
const char *const *mdl_device_names(void);

/* dtype helpers: name <-> enum and element size in bytes. */
int mdl_dtype_parse(const char *name, enum mdl_dtype *out);
const char *mdl_dtype_name(enum mdl_dtype t);
int mdl_dtype_bytes(enum mdl_dtype t);
/* The GEMM curve's two constants for dtype t on d: FP8's own, else gemm_eff_max and
 * gemm_overhead_s. */
double mdl_device_gemm_eff(const struct mdl_device *d, enum mdl_dtype t);
double mdl_device_gemm_overhead(const struct mdl_device *d, enum mdl_dtype t);
/* The memory a job cannot have on d, bytes: mem_reserved_bytes, or where that is < 0 the default
 * (docs/platforms.md, "Memory headroom"): the CUDA context with cuBLAS/cuDNN handles
 * (MDL_RESERVED_CONTEXT), NCCL's buffers for a job's communicators (MDL_RESERVED_NCCL) and the
 * caching allocator's fragmentation (MDL_RESERVED_FRAGMENTATION of the memory). */
double mdl_device_reserved(const struct mdl_device *d);
/* What a job may use on d: mem_bytes less mdl_device_reserved. */
double mdl_device_usable(const struct mdl_device *d);

#endif
