/* test_hetero.c - heterogeneity applied to a lowered program (models/hetero.h): equal speeds give
 * every policy the plain program, one slow rank balanced by hand-computed shares, the migration's
 * transfers and their bytes, seeded noise reproducible, per-GPU devices re-priced. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <string.h>

#include "models/compute.h"
#include "models/hetero.h"

TestSuite(hetero);

static struct mdl_model model(void)
{
    struct mdl_model m;
    mdl_model_preset("gpt3-13b", &m);
    m.micro_batch = 2;
    return m;
}

static struct mdl_strategy tp(int d)
{
    return (struct mdl_strategy){.kind = MDL_STRAT_1D, .tp = d, .async_grad_allreduce = true};
}

/* Lowers st, applies h; the caller releases *p. */
static void lowered(const struct mdl_strategy *st, const struct mdl_hetero *h, int layers,
                    unsigned long seed, struct mdl_program *p, struct mdl_hetero_result *res)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(st, &m, &dev, NULL, layers, 2, p, &err), 0), "%s",
              err.msg);
    cr_assert(eq(int, mdl_hetero_apply(h, st, &m, &dev, NULL, layers, 2, seed, p, res, &err), 0),
              "%s", err.msg);
    cr_assert(eq(int, mdl_program_check(p, NULL, &err), 0), "%s", err.msg);
}

static double compute_time(const struct mdl_program *p, int r)
{
    double t = 0;
    for (int i = 0; i < p->ranks[r].nops; i++)
        if (p->ranks[r].ops[i].stream == MDL_STREAM_COMPUTE) t += p->ranks[r].ops[i].dur_s;
    return t;
}

/* One layer of one micro-batch of rank 0 at a share: its compute time. */
static double share_time(double share)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = tp(2);
    struct mdl_program q;
    cr_assert(eq(int, mdl_strategy_lower_share(&st, &m, &dev, NULL, 1, 1, share, &q), 0));
    double t = compute_time(&q, 0);
    mdl_program_release(&q);
    return t;
}

static void with_slowdown(struct mdl_hetero *h, int n, const double *f)
{
    mdl_hetero_init(h);
    h->nslow = n;
    h->slowdown = malloc((size_t)n * sizeof *h->slowdown);
    memcpy(h->slowdown, f, (size_t)n * sizeof *f);
}

Test(hetero, equal_speeds_give_every_policy_the_plain_program)
{
    struct mdl_strategy st = tp(4);
    struct mdl_program plain;
    struct mdl_hetero none;
    mdl_hetero_init(&none);
    lowered(&st, &none, 2, 1, &plain, NULL);
    for (int b = MDL_BALANCE_NONE; b <= MDL_BALANCE_SEMI; b++) {
        struct mdl_hetero h;
        with_slowdown(&h, 4, (double[]){1, 1, 1, 1});
        h.balance = b;
        struct mdl_program p;
        struct mdl_hetero_result res;
        lowered(&st, &h, 2, 1, &p, &res);
        cr_expect(eq(dbl, res.dropped, 0), "%s", mdl_balance_names[b]);
        cr_expect(eq(dbl, res.migrated_bytes, 0), "%s", mdl_balance_names[b]);
        cr_assert(eq(int, p.ngroups, plain.ngroups), "%s", mdl_balance_names[b]);
        for (int r = 0; r < 4; r++) {
            cr_assert(eq(int, p.ranks[r].nops, plain.ranks[r].nops));
            cr_assert(eq(int,
                         memcmp(p.ranks[r].ops, plain.ranks[r].ops,
                                (size_t)p.ranks[r].nops * sizeof *p.ranks[r].ops),
                         0),
                      "%s rank %d", mdl_balance_names[b], r);
        }
        mdl_program_release(&p);
        mdl_hetero_release(&h);
    }
    mdl_program_release(&plain);
}

Test(hetero, a_fixed_slowdown_stretches_its_ranks_kernels_only)
{
    struct mdl_strategy st = tp(2);
    struct mdl_hetero none, h;
    mdl_hetero_init(&none);
    with_slowdown(&h, 2, (double[]){3, 1});
    struct mdl_program a, b;
    lowered(&st, &none, 2, 1, &a, NULL);
    lowered(&st, &h, 2, 1, &b, NULL);
    for (int i = 0; i < a.ranks[0].nops; i++) {
        const struct mdl_op *x = &a.ranks[0].ops[i], *y = &b.ranks[0].ops[i];
        cr_assert(ieee_ulp_eq(dbl, y->dur_s,
                              x->stream == MDL_STREAM_COMPUTE ? 3 * x->dur_s : x->dur_s, 2));
        cr_assert(eq(dbl, y->launch_s, x->launch_s)); /* the host is not slowed */
        cr_assert(eq(dbl, b.ranks[1].ops[i].dur_s, a.ranks[1].ops[i].dur_s));
    }
    mdl_program_release(&a);
    mdl_program_release(&b);
    mdl_hetero_release(&h);
}

/* Slowdown 2 on rank 0 of 2: T(k) = U + k S per layer, measured at shares 1 and 1/2; ZERO-resizing
 * gives k = (T_fast - 2U) / 2S (the slow rank's stretched time meets the fast one's), and drops
 * (1 - k) / 2 of all columns. */
Test(hetero, zero_resizing_one_slow_rank_meets_the_fast_one)
{
    double t1 = share_time(1), th = share_time(0.5);
    double S = 2 * (t1 - th), U = t1 - S, k = (t1 - 2 * U) / (2 * S);
    cr_assert(k > 0.3 && k < 0.6, "k = %g", k);
    struct mdl_strategy st = tp(2);
    struct mdl_hetero h;
    with_slowdown(&h, 2, (double[]){2, 1});
    h.balance = MDL_BALANCE_ZERO;
    struct mdl_program p;
    struct mdl_hetero_result res;
    lowered(&st, &h, 2, 1, &p, &res);
    cr_expect(ieee_ulp_eq(dbl, res.dropped, (1 - k) / 2, 64), "dropped %.17g, by hand %.17g",
              res.dropped, (1 - k) / 2);
    cr_expect(eq(dbl, res.migrated_bytes, 0));
    double slow = compute_time(&p, 0), fast = compute_time(&p, 1);
    cr_expect(fabs(slow - fast) < 1e-9 * fast, "slow %.9g fast %.9g", slow, fast);
    /* the collectives keep their size */
    for (int i = 0; i < p.ranks[0].nops; i++)
        cr_assert(p.ranks[0].ops[i].stream == MDL_STREAM_COMPUTE ||
                  p.ranks[0].ops[i].bytes == p.ranks[1].ops[i].bytes);
    mdl_program_release(&p);
    mdl_hetero_release(&h);
}

/* Slowdown 3 on rank 0 of 2: migration gives k0 + k1 = 2 with 3(U + k0 S) = U + k1 S, so
 * k0 = (2S - 2U) / 4S; the moved share 1 - k0 of a rank's layer weights goes over and its
 * gradients come back, once per layer. */
Test(hetero, migrating_one_slow_rank_balances_and_moves_its_columns_weights)
{
    double t1 = share_time(1), th = share_time(0.5);
    double S = 2 * (t1 - th), U = t1 - S, k0 = (2 * S - 2 * U) / (4 * S);
    struct mdl_strategy st = tp(2);
    struct mdl_model m = model();
    struct mdl_hetero h;
    with_slowdown(&h, 2, (double[]){3, 1});
    h.balance = MDL_BALANCE_MIGRATE;
    struct mdl_program p;
    struct mdl_hetero_result res;
    int layers = 3;
    lowered(&st, &h, layers, 1, &p, &res);
    double moved = (1 - k0) * mdl_strategy_layer_params(&st, &m) * 2; /* bf16 */
    cr_expect(ieee_ulp_eq(dbl, res.migrated_bytes, 2 * layers * moved, 256), "%.17g vs %.17g",
              res.migrated_bytes, 2 * layers * moved);
    cr_expect(eq(dbl, res.dropped, 0));
    double slow = compute_time(&p, 0), fast = compute_time(&p, 1);
    cr_expect(fabs(slow - fast) < 1e-9 * fast, "slow %.9g fast %.9g", slow, fast);
    /* each rank: layers weight transfers first, layers gradient transfers last */
    for (int r = 0; r < 2; r++) {
        const struct mdl_rank *rk = &p.ranks[r];
        int first = 0, last = 0;
        for (int i = 0; i < rk->nops; i++)
            if (rk->ops[i].stream == MDL_STREAM_MIGRATE) {
                cr_assert(eq(int, rk->ops[i].kind, MDL_OP_SEND_RECV));
                cr_assert(ieee_ulp_eq(dbl, rk->ops[i].bytes, moved, 256));
                if (i < layers) first++;
                if (i >= rk->nops - layers) last++;
            }
        cr_expect(eq(int, first, layers), "rank %d", r);
        cr_expect(eq(int, last, layers), "rank %d", r);
    }
    /* rank 0 sends the weights, rank 1 the gradients */
    cr_expect(eq(int, p.groups[p.ranks[0].ops[0].group].ranks[0], 0));
    cr_expect(eq(int, p.groups[p.ranks[0].ops[p.ranks[0].nops - 1].group].ranks[0], 1));
    mdl_program_release(&p);
    mdl_hetero_release(&h);
}

Test(hetero, semi_zero_resizes_a_mild_straggler_and_migrates_a_heavy_one)
{
    struct mdl_strategy st = tp(2);
    for (int heavy = 0; heavy < 2; heavy++) {
        struct mdl_hetero h;
        with_slowdown(&h, 2, (double[]){heavy ? 2 : 1.02, 1});
        h.balance = MDL_BALANCE_SEMI;
        struct mdl_program p;
        struct mdl_hetero_result res;
        lowered(&st, &h, 1, 1, &p, &res);
        if (heavy) {
            cr_expect(eq(dbl, res.dropped, 0));
            cr_expect(res.migrated_bytes > 0);
        } else {
            cr_expect(res.dropped > 0 && res.dropped <= h.max_drop / 2, "%g", res.dropped);
            cr_expect(eq(dbl, res.migrated_bytes, 0));
        }
        mdl_program_release(&p);
        mdl_hetero_release(&h);
    }
}

Test(hetero, seeded_noise_is_reproducible_and_the_seed_matters)
{
    struct mdl_strategy st = tp(4);
    struct mdl_program p[3];
    for (int i = 0; i < 3; i++) {
        struct mdl_hetero h;
        mdl_hetero_init(&h);
        h.noise = MDL_NOISE_STALL;
        h.sigma = 0.1;
        h.stall_prob = 0.05;
        h.stall_factor = 10;
        lowered(&st, &h, 2, i == 2 ? 8 : 7, &p[i], NULL);
    }
    int differ = 0, stalls = 0;
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < p[0].ranks[r].nops; i++) {
            cr_assert(eq(dbl, p[0].ranks[r].ops[i].dur_s, p[1].ranks[r].ops[i].dur_s));
            differ += p[0].ranks[r].ops[i].dur_s != p[2].ranks[r].ops[i].dur_s;
        }
    struct mdl_program plain;
    struct mdl_hetero none;
    mdl_hetero_init(&none);
    lowered(&st, &none, 2, 1, &plain, NULL);
    for (int i = 0; i < plain.ranks[0].nops; i++)
        stalls += plain.ranks[0].ops[i].stream == MDL_STREAM_COMPUTE &&
                  p[0].ranks[0].ops[i].dur_s > 5 * plain.ranks[0].ops[i].dur_s;
    cr_expect(differ > 0);
    cr_expect(stalls > 0, "a 5%% stall probability over %d kernels stalls some",
              plain.ranks[0].nops);
    for (int i = 0; i < 3; i++)
        mdl_program_release(&p[i]);
    mdl_program_release(&plain);
}

Test(hetero, a_gpu_of_another_device_is_priced_on_it)
{
    struct mdl_strategy st = tp(2);
    struct mdl_hetero h;
    mdl_hetero_init(&h);
    h.ngpus = 2;
    h.gpu_device = malloc(2 * sizeof *h.gpu_device);
    h.gpu_device[0] = -1;
    h.gpu_device[1] = 0;
    h.ndevices = 1;
    mdl_device_preset("H100-SXM", &h.devices[0]);
    struct mdl_program p;
    lowered(&st, &h, 1, 1, &p, NULL);
    struct mdl_model m = model();
    for (int i = 0; i < p.ranks[1].nops; i++) {
        const struct mdl_op *op = &p.ranks[1].ops[i];
        if (op->kind != MDL_OP_GEMM || op->dur_s <= 0) continue;
        cr_assert(op->dur_s < p.ranks[0].ops[i].dur_s, "op %d", i);
        cr_assert(ieee_ulp_eq(dbl, op->dur_s,
                              mdl_gemm_time_wb(&h.devices[0], m.dtype, op->flop, op->bytes), 64),
                  "op %d", i);
    }
    struct mdl_device a100;
    mdl_device_preset("A100-80GB", &a100);
    cr_expect(ieee_ulp_eq(dbl, p.peak_flops,
                          (a100.peak_flops[m.dtype] + h.devices[0].peak_flops[m.dtype]) / 2, 4));
    mdl_program_release(&p);
    mdl_hetero_release(&h);
}
