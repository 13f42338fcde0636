/* hetero.h - heterogeneous and noisy TP groups: a device per GPU, straggler speed factors, and
 * FlexTP's balancing policies (arXiv 2401.11469; ../shared/design/strategies.md section 5),
 * applied to a lowered TP-group program (strategy.h) before it is simulated.
 *
 * Rank r runs on GPU r. Its compute kernels are priced on its own device and then stretched by
 * its speed factor: a fixed slowdown (FlexTP's emulation: 8, 6, 4, 2, 1, 1, 1, 1), times a
 * factor drawn from a seeded distribution once per iteration or once per kernel (lognormal
 * jitter of median 1, or a mixture of that jitter and a rare stall). The host that launches
 * kernels is not slowed. The same seed gives the same draws, in rank then op order (GSL's
 * MT19937).
 * Balancing (1D Megatron, where a rank's share of its columns and heads is a free parameter)
 * uses each rank's expected compute time as a function of its share, T_r(k) = U_r + k S_r
 * (U: the unsharded kernels, norms and residual adds; S: the sharded ones; both from lowering
 * the rank at shares 1 and 1/2 on its device, times its per-iteration factor; per-kernel noise
 * cannot be foreseen and is left out):
 *   zero_resize: k_r = min(1, (T_fast - U_r) / S_r), T_fast the fastest rank's T(1). The columns
 *                a rank leaves out are dropped (the accuracy proxy: the dropped fraction of
 *                all sharded columns); no data moves; collectives keep their size.
 *   migrate:     k_r = (T* - U_r) / S_r with sum k_r = n (every column computed by someone).
 *                Each slow rank's surplus goes to fast ranks (the largest surplus to the
 *                largest room first): the weights of the moved columns are sent to the helper
 *                on the fabric ahead of its first GEMM of the layer, the helper computes them
 *                in its own GEMMs (their partial outputs reduced with its own by the layer's
 *                all-reduce), and their weight gradients are sent back after its last backward
 *                of the layer. Nothing is dropped.
 *   semi:        a rank that zero_resize would make drop at most max_drop of its columns is
 *                zero-resized; if any rank would drop more, the others are balanced by
 *                migration among themselves first, and the mild ones then drop only what the
 *                migrated target still asks.
 * Shares are continuous (a column count rounded away). Units: seconds, bytes.
 */
#ifndef MDL_HETERO_H
#define MDL_HETERO_H

#include <stddef.h>

#include "common/error.h"
#include "device.h"
#include "framework.h"
#include "program.h"
#include "strategy.h"
#include "transformer.h"

enum mdl_balance { MDL_BALANCE_NONE, MDL_BALANCE_ZERO, MDL_BALANCE_MIGRATE, MDL_BALANCE_SEMI };
extern const char *const mdl_balance_names[]; /* "none", "zero_resize", "migrate", "semi" */

enum mdl_noise { MDL_NOISE_NONE, MDL_NOISE_LOGNORMAL, MDL_NOISE_STALL };
extern const char *const mdl_noise_names[]; /* "none", "lognormal", "stall" */

enum mdl_noise_per { MDL_NOISE_PER_OP, MDL_NOISE_PER_ITERATION };
extern const char *const mdl_noise_per_names[]; /* "op", "iteration" */

#define MDL_HETERO_MAX_DEVICES 8

struct mdl_hetero {
    /* Devices per GPU: gpu_device[g] indexes devices (-1: the scenario's device); NULL when
     * every GPU has the scenario's device. */
    int ngpus;
    int *gpu_device; /* owned */
    int ndevices;
    struct mdl_device devices[MDL_HETERO_MAX_DEVICES];
    /* Fixed slowdowns of ranks 0..nslow-1 (>= 1 slows; NULL: none). */
    int nslow;
    double *slowdown; /* owned */
    /* Noise: factor exp(sigma Z), Z standard normal; with stall, stall_factor instead with
     * probability stall_prob. Drawn per op or per iteration from `seed`. */
    int noise; /* enum mdl_noise */
    int per;   /* enum mdl_noise_per */
    double sigma, stall_prob, stall_factor;
    unsigned long seed;
    int balance;     /* enum mdl_balance */
    double max_drop; /* semi: the most of its columns a rank may drop (default 0.1) */
};

/* What apply did, for reports. */
struct mdl_hetero_result {
    double dropped;        /* fraction of all sharded columns left out (zero_resize, semi) */
    double migrated_bytes; /* bytes the migration sent, weights and gradients, all ranks */
    char desc[512];        /* one line: factors, policy, shares */
};

void mdl_hetero_init(struct mdl_hetero *h);
void mdl_hetero_release(struct mdl_hetero *h);
/* Whether h changes anything (devices, slowdowns, noise or a balancing policy). */
int mdl_hetero_active(const struct mdl_hetero *h);

/* Applies h to p, the program mdl_strategy_lower made of st, m on dev with fw (layers x
 * micro_batches): re-prices each rank on its device and share, stretches its kernels by its
 * factors drawn from `seed`, and adds the migration's transfers. p->peak_flops becomes the mean
 * of the ranks' peaks. Balancing takes 1D strategies without per-sublayer plans (the scenario
 * checks it). Fills *res (may be NULL). 0, or an error. */
int mdl_hetero_apply(const struct mdl_hetero *h, const struct mdl_strategy *st,
                     const struct mdl_model *m, const struct mdl_device *dev,
                     const struct mdl_framework *fw, int layers, int micro_batches,
                     unsigned long seed, struct mdl_program *p, struct mdl_hetero_result *res,
                     struct tps_error *err);

#endif
