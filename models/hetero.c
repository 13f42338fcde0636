/* hetero.c - per-GPU devices, straggler factors and FlexTP's balancing applied to a lowered
 * TP-group program: the rules are in hetero.h. Owns the draws (GSL's MT19937), the shares each
 * policy gives, the re-pricing of ranks and the migration's transfers.
 */
#include "hetero.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mdl_balance_names[] = {"none", "zero_resize", "migrate", "semi", NULL};
const char *const mdl_noise_names[] = {"none", "lognormal", "stall", NULL};
const char *const mdl_noise_per_names[] = {"op", "iteration", NULL};

/* The least share a rank keeps: its kernels still run, on a sliver of columns. */
#define SHARE_MIN 0.01
/* Shares this close to 1 are 1 (equal speeds give every policy the plain program). */
#define SHARE_EPS 1e-9

void mdl_hetero_init(struct mdl_hetero *h)
{
    memset(h, 0, sizeof *h);
    h->max_drop = 0.1;
    h->stall_factor = 1;
    h->seed = 1;
}

void mdl_hetero_release(struct mdl_hetero *h)
{
    free(h->gpu_device);
    free(h->slowdown);
    h->gpu_device = NULL;
    h->slowdown = NULL;
}

int mdl_hetero_active(const struct mdl_hetero *h)
{
    return h->gpu_device || h->slowdown || h->noise != MDL_NOISE_NONE ||
           h->balance != MDL_BALANCE_NONE;
}

/* Index of rank r's device in h->devices, -1 for the scenario's. */
static int device_of(const struct mdl_hetero *h, int r)
{
    return h->gpu_device && r < h->ngpus ? h->gpu_device[r] : -1;
}

static const struct mdl_device *device_ptr(const struct mdl_hetero *h, const struct mdl_device *dev,
                                           int di)
{
    return di >= 0 ? &h->devices[di] : dev;
}

static double draw(gsl_rng *g, const struct mdl_hetero *h)
{
    if (h->noise == MDL_NOISE_STALL && gsl_rng_uniform(g) < h->stall_prob) return h->stall_factor;
    return h->sigma > 0 ? exp(gsl_ran_gaussian(g, h->sigma)) : 1;
}

/* GPU time of the compute kernels of rank 0 of q. */
static double compute_time(const struct mdl_program *q)
{
    double t = 0;
    for (int i = 0; i < q->ranks[0].nops; i++)
        if (q->ranks[0].ops[i].stream == MDL_STREAM_COMPUTE) t += q->ranks[0].ops[i].dur_s;
    return t;
}

/* One layer of one micro-batch on device d: its unsharded time U and sharded time S (share 1
 * costs U + S, share 1/2 costs U + S/2). */
static int shape(const struct mdl_strategy *st, const struct mdl_model *m,
                 const struct mdl_device *d, const struct mdl_framework *fw, double *U, double *S)
{
    struct mdl_program a, b;
    int ra = mdl_strategy_lower_share(st, m, d, fw, 1, 1, 1, &a);
    int rb = mdl_strategy_lower_share(st, m, d, fw, 1, 1, 0.5, &b);
    if (ra == 0 && rb == 0) {
        double t1 = compute_time(&a), th = compute_time(&b);
        *S = 2 * (t1 - th);
        *U = t1 - *S;
    }
    mdl_program_release(&a);
    mdl_program_release(&b);
    return ra || rb ? -1 : 0;
}

static double clamp_share(double k, double hi)
{
    if (fabs(k - 1) < SHARE_EPS) return 1;
    return k < SHARE_MIN ? SHARE_MIN : k > hi ? hi : k;
}

/* Migration over the ranks with in[r]: shares (T* - U)/S summing to their count, a rank that
 * would fall below SHARE_MIN held there and the rest solved again. Returns T*. */
static double solve_migrate(int n, const double *U, const double *S, const int *in, double *k)
{
    int *fixed = calloc((size_t)n, sizeof *fixed);
    double T = 0;
    for (int pass = 0; pass <= n; pass++) {
        double want = 0, a = 0, b = 0;
        for (int r = 0; r < n; r++) {
            if (!in[r]) continue;
            want += 1;
            if (fixed && fixed[r]) {
                want -= SHARE_MIN;
                continue;
            }
            a += U[r] / S[r];
            b += 1 / S[r];
        }
        T = b > 0 ? (want + a) / b : 0;
        int again = 0;
        for (int r = 0; r < n; r++) {
            if (!in[r]) continue;
            k[r] = fixed && fixed[r] ? SHARE_MIN : (T - U[r]) / S[r];
            if (k[r] < SHARE_MIN && fixed && !fixed[r]) fixed[r] = again = 1;
        }
        if (!again) break;
    }
    for (int r = 0; r < n; r++)
        if (in[r]) k[r] = clamp_share(k[r], INFINITY);
    free(fixed);
    return T;
}

/* Shares of the policy; zres[r] = 1 for the ranks whose left-out columns are dropped. */
static void shares(const struct mdl_hetero *h, int n, const double *U, const double *S, double *k,
                   int *zres)
{
    double fast = INFINITY;
    for (int r = 0; r < n; r++) {
        k[r] = 1;
        zres[r] = 0;
        if (U[r] + S[r] < fast) fast = U[r] + S[r];
    }
    if (h->balance == MDL_BALANCE_NONE) return;
    int *in = calloc((size_t)n, sizeof *in);
    if (!in) return;
    if (h->balance == MDL_BALANCE_MIGRATE) {
        for (int r = 0; r < n; r++)
            in[r] = 1;
        solve_migrate(n, U, S, in, k);
        free(in);
        return;
    }
    int heavy = 0;
    for (int r = 0; r < n; r++) {
        k[r] = clamp_share((fast - U[r]) / S[r], 1);
        zres[r] = k[r] < 1;
        if (1 - k[r] > h->max_drop) heavy = 1;
    }
    if (h->balance == MDL_BALANCE_ZERO || !heavy) {
        free(in);
        return;
    }
    /* semi: the fast and the heavy ranks migrate, the mild ones drop what is left to drop */
    for (int r = 0; r < n; r++)
        in[r] = k[r] >= 1 || 1 - k[r] > h->max_drop;
    double T = solve_migrate(n, U, S, in, k);
    for (int r = 0; r < n; r++) {
        if (in[r]) {
            zres[r] = 0;
            continue;
        }
        k[r] = clamp_share((T - U[r]) / S[r], 1);
        zres[r] = k[r] < 1;
    }
    free(in);
}

/* A migration: `share` of a rank's columns from rank `from` to rank `to`. */
struct move {
    int from, to;
    double share;
    int wgroup, ggroup; /* the weights' pair (from sends), the gradients' pair (to sends) */
};

/* The largest surplus to the largest room first (north-west corner over both sorted lists). */
static int plan_moves(int n, const double *k, struct move **out)
{
    int *don = malloc((size_t)n * sizeof *don), *hel = malloc((size_t)n * sizeof *hel);
    double *give = malloc((size_t)n * sizeof *give), *room = malloc((size_t)n * sizeof *room);
    struct move *mv = malloc((size_t)(2 * n + 1) * sizeof *mv);
    int nd = 0, nh = 0, nm = 0;
    if (!don || !hel || !give || !room || !mv) {
        free(don), free(hel), free(give), free(room), free(mv);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        give[r] = k[r] < 1 ? 1 - k[r] : 0;
        room[r] = k[r] > 1 ? k[r] - 1 : 0;
        if (give[r] > SHARE_EPS) don[nd++] = r;
        if (room[r] > SHARE_EPS) hel[nh++] = r;
    }
    /* insertion sorts, descending, ties by rank */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && give[don[j]] > give[don[j - 1]]; j--) {
            int t = don[j];
            don[j] = don[j - 1], don[j - 1] = t;
        }
    for (int i = 1; i < nh; i++)
        for (int j = i; j > 0 && room[hel[j]] > room[hel[j - 1]]; j--) {
            int t = hel[j];
            hel[j] = hel[j - 1], hel[j - 1] = t;
        }
    for (int i = 0, j = 0; i < nd && j < nh;) {
        double a = give[don[i]] < room[hel[j]] ? give[don[i]] : room[hel[j]];
        if (a > SHARE_EPS) mv[nm++] = (struct move){.from = don[i], .to = hel[j], .share = a};
        give[don[i]] -= a;
        room[hel[j]] -= a;
        if (give[don[i]] <= SHARE_EPS) i++;
        if (room[hel[j]] <= SHARE_EPS) j++;
    }
    free(don), free(hel), free(give), free(room);
    *out = mv;
    return nm;
}

/* Puts `pre` ops before rank rk's ops and `post` after them (the old ops moved by npre, their
 * dependencies shifted); 0, or -1 on allocation failure. */
static int splice(struct mdl_rank *rk, const struct mdl_op *pre, int npre,
                  const struct mdl_op *post, int npost)
{
    int n = npre + rk->nops + npost;
    struct mdl_op *ops = malloc((size_t)(n + 1) * sizeof *ops);
    if (!ops) return -1;
    memcpy(ops, pre, (size_t)npre * sizeof *ops);
    for (int i = 0; i < rk->nops; i++) {
        ops[npre + i] = rk->ops[i];
        for (int d = 0; d < ops[npre + i].ndeps; d++)
            ops[npre + i].deps[d] += npre;
    }
    memcpy(ops + npre + rk->nops, post, (size_t)npost * sizeof *ops);
    free(rk->ops);
    rk->ops = ops;
    rk->nops = n;
    rk->cap = n + 1;
    return 0;
}

/* One transfer of the migration: a send/recv on its stream, outside any layer's span. */
static struct mdl_op move_op(int name, int group, double bytes)
{
    return (struct mdl_op){.kind = MDL_OP_SEND_RECV,
                           .stream = MDL_STREAM_MIGRATE,
                           .dim = MDL_OP_DIM(MDL_DIM_TP), /* columns move within the TP group */
                           .phase = MDL_PHASE_OTHER,
                           .name = name,
                           .layer = -1,
                           .mb = -1,
                           .group = group,
                           .bytes = bytes};
}

/* The migration's transfers on rank r: weights before its ops (in layer, then move order), the
 * gradients after (last layer first). A helper's first GEMM of layer l waits for its last
 * weights of l (the stream is in order); its gradient sends wait for its last backward kernel of
 * the layer. */
static int add_moves(struct mdl_program *p, int r, const struct move *mv, int nm, int layers,
                     double layer_bytes, int wname, int gname)
{
    struct mdl_rank *rk = &p->ranks[r];
    int mine = 0;
    for (int i = 0; i < nm; i++)
        mine += mv[i].from == r || mv[i].to == r;
    if (!mine) return 0;
    size_t n = (size_t)mine * (size_t)layers;
    struct mdl_op *pre = calloc(n, sizeof *pre), *post = calloc(n, sizeof *post);
    /* per layer: the helper's last weights received, its first forward GEMM (micro-batch 0),
     * its last backward kernel; found in one pass over its ops */
    int *at = malloc(3 * (size_t)layers * sizeof *at), *last_w = at, *first_gemm = at + layers,
        *last_bwd = at + 2 * layers;
    if (!pre || !post || !at) {
        free(pre), free(post), free(at);
        return -1;
    }
    for (int l = 0; l < 3 * layers; l++)
        at[l] = -1;
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *op = &rk->ops[i];
        if (op->stream != MDL_STREAM_COMPUTE || op->layer < 0 || op->layer >= layers) continue;
        if (op->kind == MDL_OP_GEMM && op->mb == 0 && op->phase == MDL_PHASE_FWD &&
            first_gemm[op->layer] < 0)
            first_gemm[op->layer] = i;
        if (op->phase == MDL_PHASE_BWD) last_bwd[op->layer] = i;
    }
    int npre = 0, npost = 0;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < nm; i++) {
            if (mv[i].from != r && mv[i].to != r) continue;
            pre[npre++] = move_op(wname, mv[i].wgroup, mv[i].share * layer_bytes);
            if (mv[i].to == r) last_w[l] = npre - 1;
        }
    /* the helper's first forward GEMM of each layer waits for the layer's weights; the
     * dependency is relative to the old ops (negative: a prefix op), splice shifts it */
    for (int l = 0; l < layers; l++) {
        struct mdl_op *op = first_gemm[l] >= 0 ? &rk->ops[first_gemm[l]] : NULL;
        if (last_w[l] >= 0 && op && op->ndeps < MDL_MAX_DEPS)
            op->deps[op->ndeps++] = last_w[l] - npre;
    }
    for (int l = layers - 1; l >= 0; l--)
        for (int i = 0; i < nm; i++) {
            if (mv[i].from != r && mv[i].to != r) continue;
            struct mdl_op op = move_op(gname, mv[i].ggroup, mv[i].share * layer_bytes);
            if (mv[i].to == r && last_bwd[l] >= 0) {
                op.ndeps = 1;
                op.deps[0] = last_bwd[l] + npre;
            }
            post[npost++] = op;
        }
    int rc = splice(rk, pre, npre, post, npost);
    free(pre), free(post), free(at);
    return rc;
}

/* Re-prices rank r's ops from q, the same ops lowered on its device and share. */
static int reprice(struct mdl_program *p, int r, const struct mdl_program *q, struct tps_error *err)
{
    struct mdl_rank *rk = &p->ranks[r];
    const struct mdl_rank *src = &q->ranks[0];
    if (src->nops != rk->nops)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "strategy",
                             "rank %d's ops do not match its re-lowering (%d against %d)", r,
                             src->nops, rk->nops);
    for (int i = 0; i < rk->nops; i++) {
        struct mdl_op *op = &rk->ops[i];
        op->launch_s = src->ops[i].launch_s;
        if (op->stream != MDL_STREAM_COMPUTE) continue;
        op->dur_s = src->ops[i].dur_s;
        op->flop = src->ops[i].flop;
        op->bytes = src->ops[i].bytes;
    }
    return TPS_OK;
}

static void describe(const struct mdl_hetero *h, int n, const double *f, const double *k,
                     double moved, double dropped, struct mdl_hetero_result *res)
{
    char *b = res->desc;
    size_t len = sizeof res->desc, at = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (at < len) at += (size_t)snprintf(b + at, len - at, __VA_ARGS__);                       \
    } while (0)
    if (h->gpu_device) PUT("devices per GPU; ");
    PUT("speed factors");
    for (int r = 0; r < n && r < 16; r++)
        PUT(" %.3g", f[r]);
    if (n > 16) PUT(" ...");
    if (h->noise != MDL_NOISE_NONE)
        PUT(" (%s noise per %s, seed %lu)", mdl_noise_names[h->noise], mdl_noise_per_names[h->per],
            h->seed);
    PUT("; balance %s", mdl_balance_names[h->balance]);
    if (h->balance != MDL_BALANCE_NONE) {
        PUT(": shares");
        for (int r = 0; r < n && r < 16; r++)
            PUT(" %.3f", k[r]);
        if (n > 16) PUT(" ...");
        PUT(", %.1f%% of columns dropped, %.3g MB moved", dropped * 100, moved / 1e6);
    }
#undef PUT
    if (at >= len) b[len - 1] = 0;
}

int mdl_hetero_apply(const struct mdl_hetero *h, const struct mdl_strategy *st,
                     const struct mdl_model *m, const struct mdl_device *dev,
                     const struct mdl_framework *fw, int layers, int micro_batches,
                     unsigned long seed, struct mdl_program *p, struct mdl_hetero_result *res,
                     struct tps_error *err)
{
    struct mdl_hetero_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    if (!mdl_hetero_active(h)) return TPS_OK;
    int n = p->nranks, rc = TPS_OK;
    double *f = calloc((size_t)n, sizeof *f), *k = calloc((size_t)n, sizeof *k);
    double *U = calloc((size_t)n, sizeof *U), *S = calloc((size_t)n, sizeof *S);
    int *zres = calloc((size_t)n, sizeof *zres);
    double du[MDL_HETERO_MAX_DEVICES + 1], ds[MDL_HETERO_MAX_DEVICES + 1];
    int have[MDL_HETERO_MAX_DEVICES + 1] = {0};
    struct move *mv = NULL;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    if (!f || !k || !U || !S || !zres || !g) {
        rc = tps_error_oom(err);
        goto done;
    }
    gsl_rng_set(g, seed);
    /* per-iteration factors, in rank order, then the policy's shares */
    double peak = 0;
    for (int r = 0; r < n; r++) {
        f[r] = h->slowdown && r < h->nslow ? h->slowdown[r] : 1;
        if (h->noise != MDL_NOISE_NONE && h->per == MDL_NOISE_PER_ITERATION) f[r] *= draw(g, h);
        int di = device_of(h, r);
        peak += device_ptr(h, dev, di)->peak_flops[mdl_model_gemm_dtype(m)];
        if (h->balance != MDL_BALANCE_NONE && !have[di + 1]) {
            if (shape(st, m, device_ptr(h, dev, di), fw, &du[di + 1], &ds[di + 1]) != 0) {
                rc = tps_error_oom(err);
                goto done;
            }
            have[di + 1] = 1;
        }
        U[r] = have[di + 1] ? f[r] * du[di + 1] : 0;
        S[r] = have[di + 1] ? f[r] * ds[di + 1] : 1;
    }
    p->peak_flops = peak / n;
    shares(h, n, U, S, k, zres);
    /* re-price the ranks whose device or share differs; consecutive ranks alike (a policy's
     * helpers, a machine of one device) share one lowering */
    struct mdl_program q = {0};
    int qdev = -2;
    double qshare = 0;
    for (int r = 0; r < n && rc == TPS_OK; r++) {
        int di = device_of(h, r);
        if (di < 0 && k[r] == 1) continue;
        if (di != qdev || k[r] != qshare) {
            mdl_program_release(&q);
            qdev = di;
            qshare = k[r];
            if (mdl_strategy_lower_share(st, m, device_ptr(h, dev, di), fw, layers, micro_batches,
                                         k[r], &q) != 0) {
                rc = tps_error_oom(err);
                break;
            }
        }
        rc = reprice(p, r, &q, err);
    }
    mdl_program_release(&q);
    if (rc) goto done;
    /* stretch every kernel by its rank's factor and, per op, a fresh draw */
    for (int r = 0; r < n; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            struct mdl_op *op = &p->ranks[r].ops[i];
            if (op->stream != MDL_STREAM_COMPUTE) continue;
            double x = f[r];
            if (h->noise != MDL_NOISE_NONE && h->per == MDL_NOISE_PER_OP) x *= draw(g, h);
            op->dur_s *= x;
        }
    /* the migration's transfers */
    int nm = plan_moves(n, k, &mv);
    if (nm < 0) {
        rc = tps_error_oom(err);
        goto done;
    }
    double layer_bytes = mdl_strategy_layer_params(st, m) * mdl_dtype_bytes(m->dtype);
    int wname = mdl_program_name(p, "migrate_weights");
    int gname = mdl_program_name(p, "migrate_grads");
    for (int i = 0; i < nm; i++) {
        mv[i].wgroup = mdl_program_group_add(p, 2, (int[]){mv[i].from, mv[i].to});
        mv[i].ggroup = mdl_program_group_add(p, 2, (int[]){mv[i].to, mv[i].from});
        if (mv[i].wgroup < 0 || mv[i].ggroup < 0) rc = tps_error_oom(err);
        res->migrated_bytes += 2 * layers * mv[i].share * layer_bytes;
    }
    if (wname < 0 || gname < 0) rc = tps_error_oom(err);
    for (int r = 0; r < n && rc == TPS_OK; r++)
        if (add_moves(p, r, mv, nm, layers, layer_bytes, wname, gname) != 0)
            rc = tps_error_oom(err);
    if (rc) goto done;
    for (int r = 0; r < n; r++)
        if (zres[r]) res->dropped += (1 - k[r]) / n;
    p->dropped = res->dropped;
    p->migrated_bytes = res->migrated_bytes;
    describe(h, n, f, k, res->migrated_bytes, res->dropped, res);
done:
    if (g) gsl_rng_free(g);
    free(f), free(k), free(U), free(S), free(zres), free(mv);
    return rc;
}
