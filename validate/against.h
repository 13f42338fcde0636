/* against.h - two recordings of one run set side by side, op by op (`tpsim validate trace A
 * --against B`): the tracer's recording and the PyTorch profiler's trace of the same process
 * (imported with `tpsim import kineto`), say.
 *
 * Pairing: rank k of A with rank k of B; iterations aligned at the end (B's last with A's last,
 * since a profiler window covers a run's last iterations and the tracer all of them); within a
 * pair of iterations, the i-th op of a kind in A with the i-th of that kind in B. Only recorded
 * ops of kinds both recordings hold take part: B's opaque kernels and A's collectives that
 * launched no kernel (one-rank NCCL calls) are counted apart, per kind. A pair whose FLOPs
 * (compute) or bytes (collectives) differ is a mismatch: counted, not compared.
 *
 * Each pair's difference is A's recorded duration less B's. B's gap before the op (its recorded
 * start less the latest end of B's earlier ops on that rank and stream) says whether the GPU ran
 * it back to back (gap at most REC_HOST_GAP_S) or was idle, waiting for the host, before it: the
 * tracer's events bracket the whole call, so after an idle GPU they also hold the host's time to
 * launch the kernel. B should therefore be the recording that holds every kernel. Units: seconds.
 */
#ifndef VAL_AGAINST_H
#define VAL_AGAINST_H

#include "common/error.h"
#include "models/program.h"

/* The classes of pairs the summary reports. */
enum { AGN_ALL, AGN_BACK_TO_BACK, AGN_AFTER_IDLE, AGN_NCLASS };

struct agn_stat {
    int n;             /* pairs */
    double median_s;   /* median of A - B */
    double median_pct; /* median of (A - B) / B, percent */
    double max_abs_s;  /* the largest |A - B| */
};

struct agn_pair {
    int rank, a_op, b_op, kind; /* ops' indices in their ranks; enum mdl_op_kind */
    double a_s, b_s, gap_s;     /* recorded durations; B's idle gap before it (1 for the first) */
};

struct agn_result {
    char against[1024];           /* B's directory, as read */
    int b_ranks, b_recorded;      /* B's ranks and recorded ops */
    int a_first, b_first, niters; /* A's iterations a_first.. paired with B's b_first.. */
    int mismatched;               /* pairs of differing FLOPs or bytes, left out */
    int only_a[MDL_OP_NKINDS];    /* ops of a kind B does not hold, or beyond B's count */
    int only_b[MDL_OP_NKINDS];
    struct agn_stat cls[AGN_NCLASS];
    struct agn_stat kind[MDL_OP_NKINDS];
    int npairs, cap;
    struct agn_pair *pairs; /* owned: by rank, iteration, kind, then A's program order */
};

/* Pairs the recorded ops of program a (iterations marked: rec_mark_iterations) with those of
 * the trace in b_dir (a trace directory, or a recording that trace-merge merged). Release *r even
 * on failure. */
int agn_compare(const struct mdl_program *a, const char *b_dir, struct agn_result *r,
                struct tps_error *err);
void agn_release(struct agn_result *r);

/* Writes the pairs to path (rank a_op b_op kind a_s b_s gap_s). */
int agn_write(const struct agn_result *r, const char *path, struct tps_error *err);

#endif
