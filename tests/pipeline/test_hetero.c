/* test_hetero.c - heterogeneous TP groups simulated (models/hetero.h through the pipeline): equal
 * speeds give every policy the plain iteration, a seeded noisy run is bit-identical, and one slow
 * rank's cost is recovered by each policy. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>

#include "pipeline/pipeline_int.h"
#include "tests/testdir.h"

TestSuite(hetero_sim, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Simulates the scenario text (8 A100s of `platform`, GPT-3 13B, 2 layers) with the given
 * strategy and stragglers lines; returns the iteration time, the report in *out when not NULL. */
static double simulate_on(const char *platform, const char *strategy, const char *stragglers,
                          struct report *out)
{
    char dir[256], path[512];
    cr_assert(testdir_make(dir, sizeof dir) != NULL);
    testdir_path(path, sizeof path, dir, "s.yaml");
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL);
    fprintf(f,
            "model: {preset: gpt3-13b, micro_batch: 1}\ndevice: A100-80GB\nplatform: %s\n"
            "strategy: %s\n%s\nrun: {layers: 2}\n",
            platform, strategy, stragglers);
    fclose(f);
    struct pipeline_job j;
    struct tps_error err = {0};
    struct report r;
    cr_assert(eq(int, pipeline_load_scenario(path, NULL, &j, &err), 0), "%s", err.msg);
    cr_assert(eq(int, pipeline_simulate(&j, NULL, &r, &err), 0), "%s", err.msg);
    double t = r.iteration_s;
    if (out)
        *out = r;
    else
        report_release(&r);
    pipeline_release(&j);
    testdir_remove(dir);
    return t;
}

static double simulate(const char *strategy, const char *stragglers, struct report *out)
{
    return simulate_on("dgx-a100", strategy, stragglers, out);
}

static const char *const policies[] = {"none", "zero_resize", "migrate", "semi"};

Test(hetero_sim, equal_speeds_give_every_policy_the_plain_iteration)
{
    double plain = simulate("{tp: 8}", "", NULL);
    for (int i = 0; i < 4; i++) {
        char st[64];
        snprintf(st, sizeof st, "{tp: 8, balance: %s}", policies[i]);
        double t = simulate(st, "stragglers: {slowdown: [1, 1, 1, 1, 1, 1, 1, 1]}", NULL);
        cr_expect(eq(dbl, t, plain), "%s: %.17g against %.17g", policies[i], t, plain);
    }
}

Test(hetero_sim, a_seeded_noisy_run_is_bit_identical_and_the_seed_matters)
{
    const char *noise = "stragglers: {noise: stall, sigma: 0.05, stall_probability: 0.01, "
                        "stall_factor: 8, per: op, seed: %d}";
    char a[256], b[256];
    snprintf(a, sizeof a, noise, 3);
    snprintf(b, sizeof b, noise, 4);
    double t1 = simulate("{tp: 8}", a, NULL), t2 = simulate("{tp: 8}", a, NULL);
    double t3 = simulate("{tp: 8}", b, NULL);
    cr_expect(eq(dbl, t1, t2));
    cr_expect(t1 != t3);
}

/* Rank 0 three times as slow: the synchronous group runs at its pace (close to 3x the plain
 * compute); ZERO-resizing brings it back to the plain time within the slow rank's unsharded
 * kernels' cost and drops columns; migration moves weights and drops none; both beat none. */
Test(hetero_sim, one_slow_rank_stalls_the_group_and_each_policy_recovers_it)
{
    double plain = simulate("{tp: 8}", "", NULL);
    const char *slow = "stragglers: {slowdown: [3, 1, 1, 1, 1, 1, 1, 1]}";
    struct report r[4];
    for (int i = 0; i < 4; i++) {
        char st[64];
        snprintf(st, sizeof st, "{tp: 8, balance: %s}", policies[i]);
        simulate(st, slow, &r[i]);
    }
    cr_expect(r[0].iteration_s > 1.8 * plain, "none %g plain %g", r[0].iteration_s, plain);
    cr_expect(r[1].iteration_s < 1.15 * plain, "zero_resize %g plain %g", r[1].iteration_s, plain);
    cr_expect(r[1].dropped > 0.05 && r[1].dropped < 1.0 / 8, "dropped %g", r[1].dropped);
    cr_expect(eq(dbl, r[1].migrated_bytes, 0));
    cr_expect(r[2].iteration_s < 0.75 * r[0].iteration_s, "migrate %g none %g", r[2].iteration_s,
              r[0].iteration_s);
    cr_expect(eq(dbl, r[2].dropped, 0));
    cr_expect(r[2].migrated_bytes > 0);
    /* 3x is heavy for semi's 10%: it migrates */
    cr_expect(eq(dbl, r[3].iteration_s, r[2].iteration_s));
    /* model FLOPs never depend on the policy; the executed ones drop with ZERO-resizing */
    cr_expect(eq(dbl, r[1].model_flop, r[0].model_flop));
    cr_expect(r[1].hardware_flop < r[0].hardware_flop);
    cr_expect(fabs(r[2].hardware_flop - r[0].hardware_flop) < 1e-9 * r[0].hardware_flop);
    for (int i = 0; i < 4; i++)
        report_release(&r[i]);
}

/* A platform whose link from GPU 3 to the NVSwitch runs at a quarter of its rate: every ring
 * through it slows, and the group with it. */
Test(hetero_sim, a_degraded_link_slows_the_group)
{
    struct report r[2];
    simulate_on("dgx-a100", "{tp: 8}", "", &r[0]);
    simulate_on("{preset: dgx-a100, degraded_links: [{between: [gpu3, n0nvswitch], factor: 0.25}]}",
                "{tp: 8}", "", &r[1]);
    cr_expect(r[1].exposed_comm_s > 2 * r[0].exposed_comm_s, "exposed communication %g against %g",
              r[1].exposed_comm_s, r[0].exposed_comm_s);
    report_release(&r[0]);
    report_release(&r[1]);
}

/* The same link slowed for a while (platform.degraded_links with for): the group loses less than
 * with the link slow all along; a window that opens after the iteration changes nothing; a
 * periodic one is bit-identical run after run. */
Test(hetero_sim, a_link_slowed_for_a_while_costs_while_it_lasts)
{
    const char *on = "{preset: dgx-a100, degraded_links: [{between: [gpu3, n0nvswitch], "
                     "factor: 0.1%s}]}";
    char spec[256];
    double plain = simulate("{tp: 8}", "", NULL);
    snprintf(spec, sizeof spec, on, "");
    double always = simulate_on(spec, "{tp: 8}", "", NULL);
    snprintf(spec, sizeof spec, on, ", from: 2ms, for: 3ms");
    double window = simulate_on(spec, "{tp: 8}", "", NULL);
    cr_expect(gt(dbl, window, plain), "%g against %g", window, plain);
    cr_expect(lt(dbl, window, always), "%g against %g", window, always);
    /* at most the window's length lost, when nothing moves but through the link */
    cr_expect(le(dbl, window - plain, 3e-3 + 1e-12), "%g against %g", window, plain);
    snprintf(spec, sizeof spec, on, ", from: 1s, for: 3ms");
    cr_expect(eq(dbl, simulate_on(spec, "{tp: 8}", "", NULL), plain));
    snprintf(spec, sizeof spec, on, ", from: 2ms, for: 1ms, every: 2ms");
    double flap = simulate_on(spec, "{tp: 8}", "", NULL);
    cr_expect(gt(dbl, flap, window), "half of every 2 ms from 2 ms on, against 3 ms");
    cr_expect(eq(dbl, simulate_on(spec, "{tp: 8}", "", NULL), flap));
}
