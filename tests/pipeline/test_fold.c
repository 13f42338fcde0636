/* test_fold.c - a plain run's identical layers folded (3 and 4 layers simulated, the rest added
 * as the fourth) against the full replay of every layer, strategy by strategy. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/pipeline_int.h"

TestSuite(fold, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Loads `text` as a scenario from a file of the test's own temporary directory, lowered
 * (pipeline_load_scenario) or, when `open`, left for pipeline_simulate to lower if it must. */
static void load_as(const char *text, int open, struct pipeline_job *j)
{
    char dir[] = "/tmp/tpsim-fold-XXXXXX", path[64];
    cr_assert(ne(ptr, mkdtemp(dir), NULL));
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL));
    fputs(text, f);
    fclose(f);
    struct tps_error err = {0};
    int rc = open ? pipeline_open_scenario(path, NULL, j, &err)
                  : pipeline_load_scenario(path, NULL, j, &err);
    cr_assert(eq(int, rc, 0), "%s", err.msg);
    remove(path);
    rmdir(dir);
}

static void load(const char *text, struct pipeline_job *j)
{
    load_as(text, 0, j);
}

static void near(double folded, double full, const char *what, const char *text)
{
    cr_assert(fabs(folded - full) <= 1e-7 * fabs(full) + 1e-15, "%s: folded %.12g, full %.12g\n%s",
              what, folded, full, text);
}

Test(fold, folded_layers_give_the_full_replay_for_every_strategy)
{
    static const char *const strategies[] = {
        "strategy: {tp: 8}\n",
        "strategy: {tp: 8, sequence_parallel: true}\nrun: {micro_batches: 2}\n",
        "strategy: {tp: 4, recompute: true}\n",
        "strategy: {kind: 2d, mesh: [4, 2]}\n",
        "strategy: {tp: 8, chunks: 2}\n",
        "strategy: {tp: 8, oases: true}\n",
        ("strategy: {tp: 8, sequence_parallel: true, recompute: true}\n"
         "framework: {launch: eager, kernels: eager, attention: flash}\n"),
        "strategy: {tp: 2}\nframework: {launch: eager, kernels: eager}\n",
    };
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "model: {preset: gpt3-13b, seq: 1024, layers: 12}\ndevice: H100-SXM\n"
                 "platform: dgx-h100\n%s",
                 strategies[i]);
        struct pipeline_job a, b;
        struct report ra, rb;
        struct timing tm = {0};
        struct tps_error err = {0};
        load(text, &a);
        load_as(text, 1, &b); /* as `run` opens it: the folded runs lower their own layers */
        cr_assert(eq(int, b.deferred, 1));
        cr_assert(eq(int, b.prog.nranks, 0));
        cr_assert(eq(int, pipeline_simulate(&a, &tm, &ra, &err), 0), "%s", err.msg);
        cr_assert(eq(int, pipeline_simulate(&b, NULL, &rb, &err), 0), "%s", err.msg);
        cr_assert(ne(ptr, strstr(b.folding, "3 and 4 layers simulated"), NULL), "%s: %s", text,
                  b.folding);
        cr_assert(eq(str, a.folding, ""), "a timeline replays every layer");
        cr_assert(eq(int, rb.nlayers, 12));
        near(rb.iteration_s, ra.iteration_s, "iteration", text);
        near(rb.compute_s, ra.compute_s, "compute", text);
        near(rb.comm_s, ra.comm_s, "communication", text);
        near(rb.exposed_comm_s, ra.exposed_comm_s, "exposed", text);
        near(rb.bytes_sent, ra.bytes_sent, "bytes", text);
        near(rb.hardware_flop, ra.hardware_flop, "executed FLOPs", text);
        near(rb.model_flop, ra.model_flop, "model FLOPs", text);
        near(rb.mfu, ra.mfu, "MFU", text);
        double fa = 0, fb = 0;
        for (int l = 0; l < 12; l++) {
            fa += ra.layers[l].fwd_s + ra.layers[l].bwd_s;
            fb += rb.layers[l].fwd_s + rb.layers[l].bwd_s;
        }
        near(fb, fa, "per-layer times", text);
        cr_assert(eq(int, rb.memory_fits, ra.memory_fits));
        report_release(&ra);
        report_release(&rb);
        timing_release(&tm);
        pipeline_release(&a);
        pipeline_release(&b);
    }
}

/* run.fold: false replays every layer; a program of fewer than 6 layers is never folded. */
Test(fold, fold_false_and_few_layers_replay_every_layer)
{
    const char *texts[] = {"model: {preset: gpt3-13b, seq: 512}\ndevice: H100-SXM\nplatform: "
                           "dgx-h100\nstrategy: {tp: 8}\nrun: {fold: false}\n",
                           "model: {preset: gpt3-13b, seq: 512}\ndevice: H100-SXM\nplatform: "
                           "dgx-h100\nstrategy: {tp: 8}\nrun: {layers: 5}\n"};
    for (int i = 0; i < 2; i++) {
        struct pipeline_job j;
        struct report r;
        struct tps_error err = {0};
        load(texts[i], &j);
        cr_assert(eq(int, pipeline_simulate(&j, NULL, &r, &err), 0), "%s", err.msg);
        cr_assert(eq(str, j.folding, ""));
        report_release(&r);
        pipeline_release(&j);
    }
}

/* An opened scenario is lowered in full only when every layer is replayed: with a timeline, with
 * run.fold: false, below 6 layers, and with heterogeneous devices (whose lowering describes them).
 */
Test(fold, an_opened_scenario_is_lowered_when_every_layer_is_replayed)
{
    const char *base = "model: {preset: gpt3-13b, seq: 512, layers: 8}\ndevice: H100-SXM\n"
                       "platform: dgx-h100\nstrategy: {tp: 8}\n";
    char text[512];
    snprintf(text, sizeof text, "%s", base);
    struct pipeline_job a, b;
    struct report ra, rb;
    struct timing ta = {0}, tb = {0};
    struct tps_error err = {0};
    load(text, &a);
    load_as(text, 1, &b);
    cr_assert(eq(int, b.deferred, 1));
    cr_assert(eq(int, pipeline_simulate(&a, &ta, &ra, &err), 0), "%s", err.msg);
    cr_assert(eq(int, pipeline_simulate(&b, &tb, &rb, &err), 0), "%s", err.msg);
    cr_assert(eq(int, b.deferred, 0));
    cr_assert(eq(int, b.prog.nranks, 8));
    cr_assert(eq(int, b.prog.layers, 8));
    cr_assert(eq(dbl, rb.iteration_s, ra.iteration_s));
    report_release(&ra);
    report_release(&rb);
    timing_release(&ta);
    timing_release(&tb);
    pipeline_release(&a);
    pipeline_release(&b);
    const char *never[] = {"run: {fold: false}\n", "run: {layers: 5}\n",
                           "stragglers: {slowdown: [1, 1, 1, 1, 1, 1, 1, 2]}\n"};
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "%s%s", base, never[i]);
        load_as(text, 1, &b);
        cr_assert(eq(int, b.deferred, 0), "%s", text);
        cr_assert(eq(int, b.prog.nranks, 8), "%s", text);
        pipeline_release(&b);
    }
}
