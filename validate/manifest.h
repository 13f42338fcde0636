/* manifest.h - `tpsim validate nccl`: real nccl-tests logs against simulated collectives.
 *
 * A manifest (scenarios/validation/nccl.yaml, docs/validation.md) lists logs under
 * REFDATA/nccl and the platform each ran on. For every log the collective it measured and its
 * rank count come from the log, else from its .meta.yaml; every size is simulated through the
 * pipeline, and the error on time is kept per size, with a median and max over sizes of 1 MiB and
 * up. Logs with `role: fit` calibrated the platform and are not scored. Units: bytes, us, GB/s.
 */
#ifndef VAL_MANIFEST_H
#define VAL_MANIFEST_H

#include "common/error.h"
#include "validate/ncclog.h"

struct man_row {
    double bytes, meas_us, sim_us, meas_bus, sim_bus;
    double err;   /* (simulated - measured) / measured time, % */
    char how[32]; /* algorithm/protocol the tuner chose */
};

struct man_log {
    char name[160], platform[256];
    int fit, op, ranks, nrows; /* op: enum mdl_op_kind */
    struct man_row *rows;      /* owned */
    double median, max;        /* over rows >= 1 MiB, |err| % */
    int scored;                /* rows >= 1 MiB */
};

struct man_result {
    int n;                /* logs run (all of them unless an error stopped the run) */
    struct man_log *logs; /* owned */
};

/* Called before each log is simulated (a progress line). */
typedef void (*man_progress_fn)(int i, int n, const char *log, void *ctx);

/* Runs every log of `manifest` with logs under `refdata`/nccl. Release *res even on failure. */
int man_run(const char *manifest, const char *refdata, man_progress_fn progress, void *ctx,
            struct man_result *res, struct tps_error *err);
void man_release(struct man_result *res);

/* Over the evaluation logs only: sizes of 1 MiB and up, and the median and max |error| %. */
void man_eval_summary(const struct man_result *res, int *nsizes, double *median, double *max);

/* Writes out/<log>.dat per log and out/busbw.gp, and runs gnuplot (busbw.png, busbw.svg);
 * *plotted (may be NULL) says whether gnuplot ran. */
int man_write(const struct man_result *res, const char *out, int *plotted, struct tps_error *err);

/* The collective (*op, enum mdl_op_kind) and rank count of a log at `path`: values already in
 * *op (>= 0) and *ranks (> 0) are kept, then the log's own, then its NAME.meta.yaml's. */
int man_log_shape(const struct ncl_log *l, const char *path, int *op, int *ranks,
                  struct tps_error *err);

#endif
