/* calibrate.h - fitting a preset platform's link and latency parameters to nccl-tests logs.
 *
 * The fitted bandwidth parameter is the one a collective of that log is bound by: nic_rate when
 * its ranks span machines, gpu_link on one dgx machine, pcie_rate on PCIe machines. The fit uses
 * the closed form of the algorithm the tuner picks at the log's largest size (or --algorithm):
 * t = A_p + (D_fixed(S) + D_param(S) / sigma) / eff_p, where D_param is the bandwidth time
 * spent on links of the fitted parameter and D_fixed the rest. Rows are split, by size, into an
 * LL, an LL128 and a Simple range; every split is tried and each range fitted by weighted linear
 * least squares (GSL, weights 1/t^2, so relative errors count), Simple first (it gives sigma),
 * and the split with the best information criterion wins; LL must deliver 10-50% of the
 * bandwidth and LL128 40-94% (their wire formats), else the split is rejected. Intercepts give each
 * protocol's base latency (the per-step latencies are kept); when the route latencies alone exceed
 * an intercept, the link latency parameter of the same links (nvlink_latency, net_latency or
 * pcie_latency) is lowered first, then the per-step latency.
 *
 * Several logs at once (joint calibration): each log's rows are split into protocols as above,
 * then every protocol's rows of all logs are fitted together (GSL gsl_multifit_wlinear):
 * t = base_p + steps_log * h_p + (D_fixed + D_param / sigma) / eff_p. When the logs' step counts
 * differ (other rank counts, all-gather beside all-reduce), base_p and the per-step latency h_p
 * (route latency + hop_latency) are told apart; otherwise the intercept is split as for one log.
 * A coefficient the data cannot carry is held: h_p at the model's value when negative, base_p
 * at 0 when negative, the efficiency at its wire format's bound.
 * Logs inside one machine beside logs across machines (several node counts of one system): each
 * group has its own rate (gpu_link, nic_rate: a Simple slope per group, sigma_g) and all share
 * the protocols (base_p, h_p, eff_p): the node's logs pin its protocol costs, the network's its
 * rate. Each log's route latency (NVLink inside, the network across) is taken off its times at
 * the platform's link latencies, which are kept; h_p is then hop_latency alone.
 * Units: bytes, seconds, bytes/s.
 */
#ifndef VAL_CALIBRATE_H
#define VAL_CALIBRATE_H

#include <stdio.h>

#include "common/error.h"
#include "models/collective.h"
#include "ncclog.h"

struct cal_options {
    const char *preset; /* preset name */
    int nkv;            /* preset parameters "key=value" */
    char **kv;
    int algo; /* enum mdl_coll_algo, AUTO = the tuner's choice at the first log's largest size */
    const char *hold; /* NULL, or a rate parameter to keep as given (one of two groups') */
};

/* One log to fit, with the collective and rank count it measured (GPUs 0..ranks-1). */
struct cal_input {
    const struct ncl_log *log;
    int op; /* enum mdl_op_kind */
    int ranks;
};

#define CAL_MAX_LOGS 16

/* How the fitted platform prices one log's rows. */
struct cal_log_fit {
    double steps;           /* latency steps of the collective on the platform */
    int first[MDL_PROTO_N]; /* rows [first[p], last[p]) fitted protocol p; empty if equal */
    int last[MDL_PROTO_N];
    double median_err, max_err; /* |fit - measured| / measured over its rows, % */
    int nrows;
};

struct cal_result {
    char param[16];          /* gpu_link | nic_rate | pcie_rate */
    double param_old;        /* bytes/s before the fit */
    double param_new;        /* fitted, bytes/s */
    char lat_param[16];      /* nvlink_latency | net_latency | pcie_latency */
    double lat_old, lat_new; /* per link, s: lowered when routes alone outlast the latencies */
    struct mdl_nccl nccl;    /* fitted collective tuning */
    int algo;                /* algorithm the closed form assumed */
    int forced;              /* the caller chose it (else the tuner did) */
    int joint_steps;         /* 1: the logs' step counts differ, base and per-step latency apart */
    int ngroups;             /* 2: logs inside one machine and across machines fitted together */
    char param2[16];         /* the second group's rate parameter (nic_rate) */
    double param2_old, param2_new;
    char lat_param2[16]; /* its link latency (net_latency): kept, as the routes are taken off */
    int held;            /* 0, or 1 + the group whose rate was kept (--hold) */
    int nlogs;
    struct cal_log_fit logs[CAL_MAX_LOGS];
    double median_err, max_err; /* over the rows of every log, % */
    int nrows;
};

/* Fits one platform to nin (1..CAL_MAX_LOGS) logs at once; the logs are bound by one rate
 * parameter, or by two (logs inside one machine beside logs across machines). */
int cal_fit(const struct cal_input *in, int nin, const struct cal_options *o, struct cal_result *r,
            struct tps_error *err);

/* Writes the calibrated platform file (a preset with parameters and an nccl: section). */
int cal_write(const struct cal_result *r, const struct cal_options *o, const struct cal_input *in,
              int nin, FILE *f);

#endif
