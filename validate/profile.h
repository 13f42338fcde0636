/* profile.h - calibrating a device's compute model against per-sublayer measurements.
 *
 * Reads Oases' RTX 3090 profile (../shared/refdata/profiles/oases_profile_3090.csv: hidden, tp,
 * bs, attn_fp, attn_bp, mlp_fp, mlp_bp in ms per layer and GPU; fp32, sequence 1024, 64-wide
 * heads). For every row tpsim lowers one 1D layer of that shape and sums its compute ops per
 * sublayer (attention or MLP, forward or backward). The fit searches gemm_eff_max, gemm_overhead
 * and mem_eff on a grid for the smallest median relative error over all sublayer times, re-pricing
 * the lowered ops (their FLOPs and bytes) without lowering again. Units: seconds, bytes.
 */
#ifndef VAL_PROFILE_H
#define VAL_PROFILE_H

#include "common/error.h"
#include "models/device.h"

struct prof_result {
    int rows;                         /* profile rows, each with 4 sublayer times */
    double median_before, max_before; /* |relative error| %, with the device as given */
    double median_after, max_after;   /* after the fit */
    double eff, overhead_s, mem_eff;  /* fitted */
};

/* Fits *dev (fp32) to the profile; dev keeps the fitted values. */
int prof_calibrate(const char *csv, struct mdl_device *dev, struct prof_result *r,
                   struct tps_error *err);

#endif
