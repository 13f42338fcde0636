/* layers.h - `tpsim validate layers`: measured transformer-layer shards against their simulation.
 *
 * Reads a layer-times CSV in the format of ../shared/refdata/layers/h100_megatron_1d_layer_times
 * (name, hidden, heads, seq, batch, tp, dtype, attn, execution, layers, ..., fwd_s_median,
 * bwd_s_median: seconds per layer). Each row is one rank's share of Megatron 1D tensor
 * parallelism at degree tp, run alone on one GPU (no communication), in eager PyTorch: unfused
 * kernels, attention `bmm` (batched GEMMs) or `flash`, execution `eager` (kernels launched one by
 * one) or `graphs` (one CUDA graph per layer forward and backward). tpsim lowers the same shard
 * (ffn = 4 hidden) under those conditions, drops its collectives (mdl_program_shard), simulates
 * the row's layers with the host launching the kernels, and compares the mean forward and
 * backward time per layer. Units: seconds.
 */
#ifndef VAL_LAYERS_H
#define VAL_LAYERS_H

#include "common/error.h"
#include "models/device.h"

struct lay_row {
    char name[64];
    long hidden, heads, seq, batch, tp, layers;
    char attn[16], execution[16]; /* as the CSV says: bmm|flash, eager|graphs */
    double meas_fwd_s, meas_bwd_s;
    double sim_fwd_s, sim_bwd_s;
    double err_pct; /* (simulated - measured) / measured forward + backward, % */
    /* the measurement's own scatter: (median - min) / median of forward + backward, %, from
     * the optional fwd_s_min and bwd_s_min columns; -1 without them */
    double spread_pct;
    /* rows measured in several processes (the optional spread_reps column): (slowest - fastest)
     * / median of the processes' forward + backward, %; -1 without it */
    double reps_spread_pct;
};

struct lay_result {
    int n;
    struct lay_row *rows; /* owned */
    double median_abs_err_pct, max_abs_err_pct;
    double median_spread_pct; /* over the rows that have one; -1 if none */
    int has_reps;             /* the CSV has spread_reps */
};

/* Simulates every row of `csv` on device *dev. Release *r even on failure. */
int lay_run(const char *csv, const struct mdl_device *dev, struct lay_result *r,
            struct tps_error *err);
void lay_release(struct lay_result *r);

/* Writes dir/layers.dat (name tp batch attn execution measured_s simulated_s err_pct, forward +
 * backward per layer) and dir/layers.gp, and plots simulated against measured time with gnuplot
 * into dir/layers.png and layers.svg; *plotted (may be NULL) says whether gnuplot ran. */
int lay_write_plot(const struct lay_result *r, const char *dir, int *plotted,
                   struct tps_error *err);

/* The same per kernel, for a layer-kernels CSV in the format of ../shared/refdata/layers/
 * h100_megatron_1d_layer_kernels (model, tp, ..., dtype, op, phase, m, n, k, batch, bytes,
 * time_s): each GEMM (qkv, proj, fc1, fc2 forward, dgrad and wgrad; attn_score and attn_ctx
 * batched) is priced by the device's GEMM model, each memory-bound kernel by its kind
 * (layer_norm, softmax, gelu; dropout_add as PyTorch's two kernels). Rows are summarised per
 * (op, phase). */
struct lay_kernel {
    char model[64], op[32], phase[16];
    long tp;
    int gemm; /* a GEMM row: shape is m, n, k, batch */
    double shape[4];
    double measured_s, simulated_s, err_pct;
};

struct lay_kind {
    char op[32], phase[16];
    int n;
    double median_err_pct;     /* signed */
    double median_abs_err_pct; /* |error| */
    double max_abs_err_pct;
};

/* The measurement's repeatability: GEMMs of the same shape and phase (so the same layout)
 * measured more than once, under different op names or models. Each such row's deviation from
 * its shape's median time: a model of shapes cannot get closer than this. */
struct lay_repeat {
    int shapes, rows;           /* shapes measured more than once; their rows */
    double median_pct, max_pct; /* |time - shape median| / shape median, % */
};

struct lay_kresult {
    int n, nkinds;
    struct lay_kernel *rows; /* owned */
    struct lay_kind *kinds;  /* owned */
    struct lay_repeat repeat;
};

int lay_kernels(const char *csv, const struct mdl_device *dev, struct lay_kresult *r,
                struct tps_error *err);
void lay_kresult_release(struct lay_kresult *r);

#endif
