/* cli_plan.c - `tpsim plan SCENARIO`: the ranked strategy table (pipeline/planner.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cliutil.h"
#include "cli/plan_shard.h"
#include "core/report.h"
#include "core/tune.h"
#include "pipeline/jobplan.h"
#include "pipeline/planner.h"
#include "core/scenario.h"
#include "common/inputs.h"

/* What compare ranks the settings by (--rank): the iteration, or per token trained the cost
 * (GPUs x price) or the energy (GPUs x mean power): the same order as for any token count. */
enum { RANK_TIME, RANK_COST, RANK_ENERGY };
static const char *const rank_names[] = {"time", "cost", "energy", NULL};
static int rank_by = RANK_TIME;

static const char plan_help[] =
    "usage: tpsim plan SCENARIO [--sp] [--async-tp] [--simulate N] [--top N] [--ignore-memory]\n"
    "                  [--json FILE]\n"
    "       tpsim plan SCENARIO --shard I/N [-o DIR] [options]    (then: --merge DIR)\n"
    "\n"
    "A whole job (a scenario with strategy.pp/dp, pipeline: or training:, docs/jobs.md) is\n"
    "planned over its GPUs and global batch: every tp x pp x dp of that many GPUs (tp inside\n"
    "one machine), micro-batch 1, 2, 4 or 8, the 1F1B and interleaved schedules (virtual\n"
    "stages up to 8), recomputation none, selective or full, 1D TP with and without sequence\n"
    "parallelism (GPipe runs as long as 1F1B with more memory: not listed); then, on the job\n"
    "shapes of the 8 best predicted 1D candidates, ATP's 2D meshes (both placements), ATP's\n"
    "chunk overlap (2, 4 chunks), Oases' schedule and, with sequence parallelism, Transformer\n"
    "Engine's TP overlap (and PyTorch's async TP where the scenario sets\n"
    "strategy.async_tensor_parallel or --async-tp asks). Model, platform and device stay the\n"
    "scenario's; the training knobs (ZeRO stage, overlap_grad_reduce, overlap_param_gather,\n"
    "and overlap_p2p_comm on interleaved candidates) are searched too, except those the\n"
    "scenario gives under training: (overlap_p2p_comm under pipeline:), which pins them.\n"
    "Candidates that do not fit in memory are dropped; the rest are ranked by a closed form\n"
    "(docs/jobs.md) and the best N (default 1) simulated as whole jobs, layers and replicas\n"
    "folded, in order: one whose compute alone (a lower bound) takes longer than a simulated\n"
    "one is pruned. With a `compare:` list of settings\n"
    "(device, platform, collectives), the job is planned once per setting and the settings\n"
    "ranked by their best configuration's iteration (docs/jobs.md).\n"
    "\n"
    "Otherwise:\n"
    "Ranks tensor-parallel strategies of the scenario's TP degree on its model and platform:\n"
    "1D, every 2D mesh d1 x d2 in row-first and column-first placement, ATP chunk overlap\n"
    "(k = 1, 2, 4, 8), the Oases schedule on and off, Oases' per-sublayer plans (1D with the\n"
    "attention and the MLP each at a degree dividing the TP degree, the rest of the group\n"
    "splitting the micro-batch; with and without Oases' schedule), PrimePar's\n"
    "spatial-temporal ring (whole, and as smaller rings side by side) and the block meshes the "
    "degree allows (summa2d, tesseract, tp3d); with sequence parallelism (--sp, or a scenario\n"
    "that sets a TP overlap), 1D with it, and on it Transformer Engine's TP overlap (and\n"
    "PyTorch's async TP where the scenario sets it or --async-tp asks);\n"
    "the scenario's recompute setting is kept. Every candidate is ranked by an analytic\n"
    "schedule (closed-form collectives on the platform's routes, in-order streams; one layer,\n"
    "scaled); the best N are then simulated with SimGrid over every layer and micro-batch, the\n"
    "identical layers folded as `run` folds them (3 and 4 layers simulated; run.fold: false\n"
    "replays every layer), in order, one whose busiest GPU's kernels alone (a lower bound)\n"
    "take longer than a simulated candidate's iteration pruned (marked in the table).\n"
    "Candidates that do not fit in the device's memory are dropped (the count is printed).\n"
    "Prints a table ranked by simulated time, with the predicted\n"
    "time, model TFLOP/s per GPU and MFU (model FLOPs: the same for every strategy), and the\n"
    "memory per GPU, then the effective bandwidth each axis of the best strategy gets.\n"
    "\n"
    "options:\n"
    "  --sp           also try 1D with sequence parallelism (a job always does), and on it\n"
    "                 Transformer Engine's TP overlap\n"
    "  --async-tp     also try PyTorch's async TP (on 1D with sequence parallelism, which it\n"
    "                 needs: tried then without --sp)\n"
    "  --simulate N   simulate the N best predictions (default 8; a job: 1)\n"
    "  -j, --jobs N   simulate N candidates at a time, each in a process of its own (default:\n"
    "                 the machine's cores); the plan is the same for any N\n"
    "  --top N        print the N best rows (default 20; 0 = all)\n"
    "  --ignore-memory  rank candidates that do not fit in the device's memory too\n"
    "  --rank time|cost|energy  with compare: rank the settings by iteration (default), or per\n"
    "                 token by cost (cost.gpu_hour) or by the GPUs' energy\n" CLI_SET_HELP
    "  --json FILE    write every row as JSON\n"
    "  --shard I/N    simulate only shard I (from 0) of N of the chosen candidates (the n-th\n"
    "                 candidate simulated, over every compare: setting, is shard n mod N's),\n"
    "                 into DIR/plan-shard-I-of-N.json; no table (docs/sweeps.md)\n"
    "  -o DIR         the directory of --shard (default: SCENARIO with .plan-shards)\n"
    "  --merge DIR    the plan with every simulation taken from the shards in DIR: what the\n"
    "                 plan on one machine prints (the variants of the best, FP8 and the TP\n"
    "                 overlap toggled, are simulated here); exit 1 naming the shards missing\n"
    "  -h, --help     show this help\n";

/* Effective ring bandwidth of the group through GPU 0 along one mesh axis. */
static void print_axes(const struct scn_scenario *s, const struct mdl_strategy *st)
{
    int d1, d2;
    mdl_strategy_mesh(st, &d1, &d2);
    for (int axis = 0; axis < 2; axis++) {
        int n = axis ? d2 : d1, ranks[4096];
        if (n < 2) continue;
        for (int k = 0; k < n; k++)
            ranks[k] = axis ? mdl_strategy_device(st, 0, k) : mdl_strategy_device(st, k, 0);
        struct mdl_group g = {.n = n, .ranks = ranks};
        struct tune_group_env e;
        struct tps_error err = {0};
        if (tune_group_env(&s->topo, &g, &e, &err)) continue;
        printf("  %s axis (%d GPUs, e.g. %d..%d): ring bandwidth %.1f GB/s per GPU, route "
               "latency %.2f us\n",
               axis ? "d2 (rows)" : "d1 (columns)", n, ranks[0], ranks[n - 1], e.flat.bw / 1e9,
               e.flat.lat * 1e6);
        tune_group_env_release(&e);
    }
}

/* The header's model, platform and device lines. */
static void print_setting(const struct scn_scenario *s)
{
    char model[256];
    scn_describe_model(s, model, sizeof model);
    printf("model      %s\nplatform   %s (%s)\ndevice     %s, %.1f GB (%.1f usable)\n", model,
           s->platform_spec, s->topo.desc, s->device.name, s->device.mem_bytes / 1e9,
           mdl_device_usable(&s->device) / 1e9);
}

/* The header's memory line: how many candidates were left out (or kept) for memory. */
static void print_dropped(const struct scn_scenario *s, int dropped, int candidates,
                          int ignore_memory)
{
    if (!dropped) return;
    printf("memory     %d of %d candidates do not fit in %.1f GB usable per GPU: %s\n", dropped,
           candidates, mdl_device_usable(&s->device) / 1e9,
           ignore_memory ? "ranked anyway (--ignore-memory)"
                         : "left out (--ignore-memory keeps them)");
}

/* The rest of a plan's header line: how many of the `chosen` to simulate were pruned. */
static void print_pruned(int pruned, int chosen)
{
    if (pruned)
        printf("; %d more of the best %d pruned: their lower bound is above a simulated time",
               pruned, chosen);
    printf("\n");
}

/* A job plan's training knobs: those searched, and those the scenario pins with their values. */
static void print_knobs(const struct scn_scenario *s)
{
    char a[128] = "", b[128] = "";
    size_t na = 0, nb = 0;
    for (int k = 0; k < JOBPLAN_NKNOBS; k++) {
        bool pin = s->pinned & (1u << k);
        char *d = pin ? b : a;
        size_t *n = pin ? &nb : &na;
        int w = pin ? snprintf(d + *n, 128 - *n, "%s%s %d", *n ? ", " : "", jobplan_knobs[k],
                               jobplan_knob(&s->job, k))
                    : snprintf(d + *n, 128 - *n, "%s%s", *n ? ", " : "", jobplan_knobs[k]);
        if (w > 0 && *n + (size_t)w < 128) *n += (size_t)w;
    }
    printf("training   %s%s%s%s%s\n", na ? "searched: " : "", a, na && nb ? "; " : "",
           nb ? "pinned by the scenario: " : "", b);
}

/* The ranked table, the best strategy and its mesh axes. */
static void print_plan(const struct scn_scenario *s, const struct planner_opts *o, int top,
                       const struct planner_row *rows, int n, const struct planner_info *info)
{
    print_setting(s);
    int chosen = o->simulate < n ? o->simulate : n, nsim = chosen - info->pruned;
    printf("iteration  %d layer(s) x %d micro-batch(es); %d candidates, %d simulated", s->layers,
           s->micro_batches, info->candidates, nsim);
    if (nsim > 0 && info->folded == 0)
        printf(" (every layer)");
    else if (nsim > 0)
        printf(" (%s: 3 and 4 layers simulated)",
               info->folded == nsim ? "layers folded" : "some with layers folded");
    print_pruned(info->pruned, chosen);
    print_dropped(s, info->dropped, info->candidates, o->ignore_memory);
    double peak = s->device.peak_flops[mdl_model_gemm_dtype(&s->model)];
    printf("\n%4s  %-62s %13s %13s %9s %6s %10s\n", "rank", "strategy", "simulated ms",
           "predicted ms", "model TF/s", "MFU", "mem GB/GPU");
    for (int i = 0; i < n && (top == 0 || i < top); i++) {
        char sim[32] = "-";
        if (rows[i].simulated_s > 0)
            snprintf(sim, sizeof sim, "%s%.3f", rows[i].fold_spread > PLANNER_FOLD_EXACT ? "~" : "",
                     rows[i].simulated_s * 1e3);
        if (rows[i].pruned) snprintf(sim, sizeof sim, "pruned");
        double t = rows[i].simulated_s > 0 ? rows[i].simulated_s : rows[i].predicted_s;
        double tf = t > 0 ? info->model_flop / t / mdl_strategy_gpus(&rows[i].st) / 1e12 : 0;
        printf("%4d  %-62s %13s %13.3f %9.1f %5.1f%% %9.1f%s\n", i + 1, rows[i].desc, sim,
               rows[i].predicted_s * 1e3, tf, peak > 0 ? tf * 1e12 / peak * 100 : 0,
               rows[i].mem.total / 1e9, rows[i].fits ? "" : "!");
    }
    printf("(model TF/s and MFU from the simulated time where there is one, else the predicted)\n");
    if (info->dropped && o->ignore_memory) printf("(! does not fit in the device's memory)\n");
    if (info->inexact)
        printf("(~ folded although the 4-layer run's middle layers ended up to %.3f%% of a layer "
               "apart: run.fold: false replays every layer)\n",
               info->worst_spread * 100);
    printf("\nbest: %s\n", rows[0].desc);
    print_axes(s, &rows[0].st);
}

/* The table as JSON (docs/output.md). */
static int write_plan_json(const struct scn_scenario *s, const char *path, const char *json,
                           const struct planner_row *rows, int n, const struct planner_info *info)
{
    double peak = s->device.peak_flops[mdl_model_gemm_dtype(&s->model)];
    int code = 0;
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        const struct planner_row *w = &rows[i];
        double t = w->simulated_s > 0 ? w->simulated_s : w->predicted_s;
        double tf = t > 0 ? info->model_flop / t / mdl_strategy_gpus(&w->st) / 1e12 : 0;
        int d1, d2;
        mdl_strategy_mesh(&w->st, &d1, &d2);
        json_t *row =
            json_pack("{s:s, s:i, s:i, s:i, s:s, s:i, s:b, s:b, s:f, s:o, s:f, s:f, s:f, s:b}",
                      "strategy", w->desc, "tp", w->st.tp, "d1", d1, "d2", d2, "placement",
                      w->st.atp.placement == MDL_COLUMN_FIRST ? "column-first" : "row-first",
                      "chunks", w->st.chunks ? w->st.chunks : 1, "oases", w->st.oases,
                      "sequence_parallel", w->st.sequence_parallel, "predicted_s", w->predicted_s,
                      "simulated_s", w->simulated_s > 0 ? json_real(w->simulated_s) : json_null(),
                      "model_tflops_per_gpu", tf, "mfu", peak > 0 ? tf * 1e12 / peak : 0,
                      "memory_gb_per_gpu", w->mem.total / 1e9, "memory_fits", w->fits);
        json_object_set_new(row, "lower_bound_s",
                            w->bound_s > 0 ? json_real(w->bound_s) : json_null());
        json_object_set_new(row, "pruned", json_boolean(w->pruned));
        json_object_set_new(row, "tp_comm_overlap", json_boolean(w->st.tp_comm_overlap));
        json_object_set_new(row, "async_tensor_parallel", json_boolean(w->st.async_tp));
        json_object_set_new(row, "attention_tp", json_integer(mdl_strategy_sub_tp(&w->st, 0)));
        json_object_set_new(row, "mlp_tp", json_integer(mdl_strategy_sub_tp(&w->st, 1)));
        if (w->simulated_s > 0)
            json_object_set_new(row, "fold_spread",
                                w->fold_spread >= 0 ? json_real(w->fold_spread) : json_null());
        json_object_set_new(row, "memory",
                            json_pack("{s:f, s:f, s:f, s:f}", "weights_gb", w->mem.weights / 1e9,
                                      "gradients_gb", w->mem.gradients / 1e9, "optimizer_gb",
                                      w->mem.optimizer / 1e9, "activations_gb",
                                      w->mem.activations / 1e9));
        json_array_append_new(arr, row);
    }
    code = cli_write_json(json_pack("{s:s, s:f, s:f, s:i, s:i, s:o}", "scenario", path,
                                    "model_flop", info->model_flop, "device_memory_gb",
                                    s->device.mem_bytes / 1e9, "candidates", info->candidates,
                                    "dropped_for_memory", info->dropped, "rows", arr),
                          json, "plan");
    return code;
}

/* A job's answers (core/report.h) for an iteration of t seconds on gpus GPUs, of which compute_s
 * computing (0: not simulated, the TDP throughout then). */
static struct report_training answers(const struct scn_scenario *s, double t, int gpus,
                                      double compute_s)
{
    struct report r = {.iteration_s = t, .nranks = gpus, .job = 1};
    r.breakdown.compute_s = compute_s > 0 ? compute_s : t;
    report_set_training(&r, (double)s->global_batch * (double)s->model.seq, s->train_tokens,
                        s->device.tdp_w, s->device.idle_w, s->gpu_hour_price);
    return r.training;
}

/* The best configuration's answers: tokens/s, and with training.tokens its time, GPU-hours,
 * energy and cost. */
static void print_answers(const struct report_training *a)
{
    if (!a->known) return;
    printf("  %.0f tokens/s (%.1f per GPU)", a->tokens_per_s, a->tokens_per_s_per_gpu);
    if (a->train_tokens > 0) {
        printf("; %.4g tokens in %.2f days, %.0f GPU-hours, %.1f MWh", a->train_tokens,
               a->time_to_train_s / 86400, a->gpu_hours, a->energy_kwh / 1e3);
        if (a->cost > 0) printf(", cost %.0f", a->cost);
    }
    printf("\n");
}

/* A job's plan: the ranked table. */
static void print_job_plan(const struct scn_scenario *s, int simulate, int ignore_memory, int top,
                           const struct jobplan_row *rows, int n, const struct jobplan_info *info)
{
    print_setting(s);
    int chosen = simulate < n ? simulate : n;
    printf("job        %d GPUs, global batch %ld; %d candidates, %d simulated", info->gpus,
           info->global_batch, info->candidates, chosen - info->pruned);
    print_pruned(info->pruned, chosen);
    print_knobs(s);
    print_dropped(s, info->dropped, info->candidates, ignore_memory);
    double peak = s->device.peak_flops[mdl_model_gemm_dtype(&s->model)];
    int width = 76; /* the configurations' column: 76, or the longest shown */
    for (int i = 0; i < n && (top == 0 || i < top); i++)
        if ((int)strlen(rows[i].desc) > width) width = (int)strlen(rows[i].desc);
    printf("\n%4s  %-*s %11s %11s %9s %6s %10s\n", "rank", width, "configuration", "simulated s",
           "predicted s", "model TF/s", "MFU", "mem GB/GPU");
    for (int i = 0; i < n && (top == 0 || i < top); i++) {
        const struct jobplan_row *w = &rows[i];
        char sim[32] = "-";
        if (w->simulated_s > 0) snprintf(sim, sizeof sim, "%.3f", w->simulated_s);
        if (w->pruned) snprintf(sim, sizeof sim, "pruned");
        double t = w->simulated_s > 0 ? w->simulated_s : w->predicted_s;
        double tf = t > 0 ? info->model_flop / t / info->gpus / 1e12 : 0;
        printf("%4d  %-*s %11s %11.3f %9.1f %5.1f%% %9.1f%s\n", i + 1, width, w->desc, sim,
               w->predicted_s, tf, peak > 0 ? tf * 1e12 / peak * 100 : 0, w->mem.total / 1e9,
               w->fits ? "" : "!");
    }
    printf("(model TF/s and MFU from the simulated time where there is one, else the predicted)\n");
    if (info->dropped && ignore_memory) printf("(! does not fit in the device's memory)\n");
    const struct jobplan_row *b = &rows[0];
    printf("\nbest: %s\n", b->desc);
    if (b->simulated_s > 0) {
        printf("  simulated %.3f s per iteration: pipeline bubble %.3f s", b->simulated_s,
               b->bubble_s);
        for (int d = 0; d < MDL_NDIMS; d++)
            if (b->dim_used[d])
                printf(", exposed %s %.3f s", mdl_dim_labels[d], b->exposed_dim_s[d]);
        printf(" (mean per GPU)\n");
    }
    printf("  memory %.1f GB per GPU (weights %.1f, gradients %.1f, optimizer %.1f, activations "
           "%.1f)\n",
           b->mem.total / 1e9, b->mem.weights / 1e9, b->mem.gradients / 1e9, b->mem.optimizer / 1e9,
           b->mem.activations / 1e9);
    struct report_training a = answers(s, b->simulated_s > 0 ? b->simulated_s : b->predicted_s,
                                       info->gpus, b->simulated_s > 0 ? b->compute_s : 0);
    print_answers(&a);
    /* what Transformer Engine's switches buy it */
    for (int k = 0; k < JOBPLAN_NBUYS; k++) {
        const struct jobplan_buy *x = &info->buys[k];
        if (!x->tried) continue;
        printf("  %s %s: %.3f s per iteration (%+.1f%%)\n",
               k == JOBPLAN_BUY_FP8 ? "with FP8 (Transformer Engine)"
               : x->async_tp        ? "with async TP"
                                    : "with the TP overlap",
               x->on ? "on" : "off", x->simulated_s, (x->simulated_s / b->simulated_s - 1) * 100);
    }
}

static int write_job_plan_json(const struct scn_scenario *s, const char *path, const char *json,
                               const struct jobplan_row *rows, int n,
                               const struct jobplan_info *info)
{
    double peak = s->device.peak_flops[mdl_model_gemm_dtype(&s->model)];
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        const struct jobplan_row *w = &rows[i];
        double t = w->simulated_s > 0 ? w->simulated_s : w->predicted_s;
        double tf = t > 0 ? info->model_flop / t / info->gpus / 1e12 : 0;
        const char *rc = w->st.recompute ? "full" : w->st.selective ? "selective" : "none";
        json_t *row = json_pack(
            "{s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:s, s:b, s:f, s:o, s:f, s:f, s:f, s:b}",
            "configuration", w->desc, "tp", w->st.tp, "pp", w->job.pp, "dp", w->job.dp,
            "micro_batch", w->micro_batch, "micro_batches", w->job.micro_batches, "schedule",
            mdl_schedule_names[w->job.schedule], "virtual_stages", w->job.virtual_stages,
            "recompute", rc, "sequence_parallel", w->st.sequence_parallel, "predicted_s",
            w->predicted_s, "simulated_s",
            w->simulated_s > 0 ? json_real(w->simulated_s) : json_null(), "model_tflops_per_gpu",
            tf, "mfu", peak > 0 ? tf * 1e12 / peak : 0, "memory_gb_per_gpu", w->mem.total / 1e9,
            "memory_fits", w->fits);
        json_object_set_new(row, "cp", json_integer(mdl_strategy_cp(&w->st)));
        json_object_set_new(row, "cp_comm_type",
                            json_string(mdl_cp_comm_names[w->st.cp > 1 ? w->st.cp_comm : 0]));
        /* the TP kind: 1d (with ATP chunks or Oases' schedule) or a 2d mesh */
        json_object_set_new(row, "tp_kind", json_string(mdl_strategy_kind_name(w->st.kind)));
        json_object_set_new(row, "mesh",
                            w->st.kind == MDL_STRAT_2D
                                ? json_pack("[i, i]", w->st.atp.d1, w->st.atp.d2)
                                : json_null());
        json_object_set_new(
            row, "placement",
            json_string(w->st.atp.placement == MDL_COLUMN_FIRST ? "column-first" : "row-first"));
        json_object_set_new(row, "chunks", json_integer(w->st.chunks > 1 ? w->st.chunks : 1));
        json_object_set_new(row, "oases", json_boolean(w->st.oases));
        json_object_set_new(row, "tp_comm_overlap", json_boolean(w->st.tp_comm_overlap));
        json_object_set_new(row, "async_tensor_parallel", json_boolean(w->st.async_tp));
        json_object_set_new(row, "lower_bound_s",
                            w->bound_s > 0 ? json_real(w->bound_s) : json_null());
        json_object_set_new(row, "pruned", json_boolean(w->pruned));
        json_object_set_new(row, "zero", json_integer(w->job.zero));
        json_object_set_new(row, "distributed_optimizer", json_boolean(w->job.zero >= 1));
        json_object_set_new(row, "overlap_grad_reduce", json_boolean(w->job.overlap_grad_reduce));
        json_object_set_new(row, "overlap_param_gather", json_boolean(w->job.overlap_param_gather));
        json_object_set_new(row, "overlap_p2p_comm", json_boolean(w->job.overlap_p2p_comm));
        json_object_set_new(row, "pipeline_bubble_s",
                            w->simulated_s > 0 ? json_real(w->bubble_s) : json_null());
        for (int d = 0; d < MDL_NDIMS; d++) {
            char key[40];
            snprintf(key, sizeof key, "%s_exposed_comm_s", mdl_dim_names[d]);
            json_object_set_new(row, key,
                                w->simulated_s > 0 ? json_real(w->exposed_dim_s[d]) : json_null());
        }
        json_array_append_new(arr, row);
    }
    json_t *top =
        json_pack("{s:s, s:i, s:I, s:f, s:f, s:i, s:i, s:o}", "scenario", path, "gpus", info->gpus,
                  "global_batch", (json_int_t)info->global_batch, "model_flop", info->model_flop,
                  "device_memory_gb", s->device.mem_bytes / 1e9, "candidates", info->candidates,
                  "dropped_for_memory", info->dropped, "rows", arr);
    json_object_set_new(top, "pruned", json_integer(info->pruned));
    /* the best simulated again with each of Transformer Engine's switches toggled */
    json_t *buys = json_object();
    for (int k = 0; k < JOBPLAN_NBUYS; k++) {
        const struct jobplan_buy *b = &info->buys[k];
        if (b->tried)
            json_object_set_new(
                buys,
                k == JOBPLAN_BUY_FP8 ? "fp8"
                : b->async_tp        ? "async_tensor_parallel"
                                     : "tp_comm_overlap",
                json_pack("{s:b, s:f}", "on", b->on, "simulated_s", b->simulated_s));
    }
    json_object_set_new(top, "what_each_buys", buys);
    /* the training knobs searched, and those the scenario pins */
    json_t *searched = json_array(), *pinned = json_object();
    for (int k = 0; k < JOBPLAN_NKNOBS; k++) {
        if (!(s->pinned & (1u << k)))
            json_array_append_new(searched, json_string(jobplan_knobs[k]));
        else
            json_object_set_new(pinned, jobplan_knobs[k],
                                k ? json_boolean(jobplan_knob(&s->job, k))
                                  : json_integer(jobplan_knob(&s->job, k)));
    }
    json_object_set_new(top, "searched_knobs", searched);
    json_object_set_new(top, "pinned_knobs", pinned);
    return cli_write_json(top, json, "plan");
}

struct plan_args {
    struct planner_opts o;
    int top;
    const char *json;
    const char *shard, *dir, *merge; /* --shard I/N, -o DIR, --merge DIR */
};

static int plan_option(int opt, const char *v, void *ctx)
{
    struct plan_args *a = ctx;
    long n;
    int rc = 0;
    switch (opt) {
    case 's':
        a->o.sequence_parallel = 1;
        break;
    case 'i':
        a->o.ignore_memory = 1;
        break;
    case 'a':
        a->o.async_tp = 1;
        break;
    case 'w':
        a->json = v;
        break;
    case 'j':
        if ((rc = cli_parse_count("plan", "-j", v, 1, 1024, &n))) return rc;
        a->o.jobs = (int)n;
        break;
    case 'S':
        a->shard = v;
        break;
    case 'o':
        a->dir = v;
        break;
    case 'M':
        a->merge = v;
        break;
    case 'r':
        for (int k = 0; rank_names[k]; k++)
            if (!strcmp(v, rank_names[k])) {
                rank_by = k;
                return 0;
            }
        return cli_usage_error("plan", "bad --rank '%s' (time, cost or energy)", v);
    case 'n':
    case 't':
        if ((rc = cli_parse_count("plan", opt == 'n' ? "--simulate" : "--top", v, 0, 100000, &n)))
            return rc;
        if (opt == 'n')
            a->o.simulate = (int)n;
        else
            a->top = (int)n;
        break;
    }
    return 0;
}

/* The best configuration of one setting of a scenario's `compare:` list. */
struct setting {
    char name[256], device[32], platform[512], best[256], error[512];
    int gpus, candidates, dropped;
    double t, tflops, mfu, mem_gb, peak;
    int simulated;
    struct report_training a; /* its answers */
};

static double rank_key(const struct setting *w)
{
    if (rank_by == RANK_TIME || !(w->a.tokens_per_s > 0)) return w->t;
    double per = w->gpus / w->a.tokens_per_s; /* GPU-seconds per token */
    return per * (rank_by == RANK_COST ? w->a.gpu_hour_price : w->a.power_w);
}

static int by_rank(const void *a, const void *b)
{
    const struct setting *x = a, *y = b;
    if (!x->error[0] != !y->error[0]) return x->error[0] ? 1 : -1;
    double kx = rank_key(x), ky = rank_key(y);
    return (kx > ky) - (kx < ky);
}

/* Plans setting k of the job scenario at path into *w (a failure to plan it is kept in w->error:
 * the others still rank). Returns nonzero only when the setting cannot be loaded. */
static int plan_setting(const char *path, int k, const struct jobplan_opts *jo, struct setting *w,
                        struct tps_error *err)
{
    struct scn_scenario s;
    memset(w, 0, sizeof *w);
    int rc = scn_load_compare(path, k, &s, err);
    if (!rc && !s.is_job)
        rc = tps_error_set(err, TPS_EINVAL, path, 0, 0, "compare",
                           "compare ranks whole-job plans: give strategy.pp/dp, pipeline: or "
                           "training: (docs/jobs.md)");
    if (rc) {
        scn_release(&s);
        return rc;
    }
    snprintf(w->name, sizeof w->name, "%s", s.name);
    snprintf(w->device, sizeof w->device, "%s", s.device.name);
    snprintf(w->platform, sizeof w->platform, "%s", s.platform_spec);
    if (isatty(2)) fprintf(stderr, "tpsim plan: setting %d: %s\n", k + 1, w->name);
    struct jobplan_row *jr = NULL;
    struct jobplan_info ji;
    struct tps_error e2 = {0};
    int n = 0;
    if (jobplan_run(&s, jo, &jr, &n, &ji, &e2)) {
        snprintf(w->error, sizeof w->error, "%s", e2.msg);
    } else {
        const struct jobplan_row *b = &jr[0];
        w->simulated = b->simulated_s > 0;
        w->t = w->simulated ? b->simulated_s : b->predicted_s;
        w->gpus = ji.gpus;
        w->candidates = ji.candidates;
        w->dropped = ji.dropped;
        w->peak = s.device.peak_flops[mdl_model_gemm_dtype(&s.model)];
        w->tflops = ji.model_flop / w->t / ji.gpus / 1e12;
        w->mfu = w->peak > 0 ? w->tflops * 1e12 / w->peak : 0;
        w->mem_gb = b->mem.total / 1e9;
        snprintf(w->best, sizeof w->best, "%s", b->desc);
        w->a = answers(&s, w->t, ji.gpus, w->simulated ? b->compute_s : 0);
        if (rank_by == RANK_COST && !(w->a.gpu_hour_price > 0))
            snprintf(w->error, sizeof w->error,
                     "no price to rank by cost: give cost.gpu_hour (in the setting or the "
                     "scenario)");
    }
    free(jr);
    scn_release(&s);
    return 0;
}

/* `compare:`: every setting planned, ranked by the best configuration's iteration time. */
static int plan_compare(const char *path, int nsettings, const struct jobplan_opts *jo,
                        const char *json, struct plan_shard *ps)
{
    struct setting *w = calloc((size_t)nsettings, sizeof *w);
    struct tps_error err = {0};
    if (!w) {
        tps_error_oom(&err);
        return cli_report_error(&err);
    }
    int rc = 0, code = 0;
    for (int k = 0; !rc && k < nsettings; k++) {
        if (ps) ps->setting = k;
        rc = plan_setting(path, k, jo, &w[k], &err);
        if (!rc && ps && ps->err.code) rc = cli_report_error(&ps->err);
    }
    if (rc) {
        free(w);
        return ps && ps->err.code ? rc : cli_report_error_in(path, &err);
    }
    if (ps && (ps->mode == PLAN_SHARD_RUN || ps->nmissing)) { /* nothing to rank yet */
        free(w);
        return 0;
    }
    qsort(w, (size_t)nsettings, sizeof *w, by_rank);
    int width = 7;
    for (int k = 0; k < nsettings; k++)
        if ((int)strlen(w[k].name) > width) width = (int)strlen(w[k].name);
    static const char *const by[] = {"iteration", "cost per token", "energy per token"};
    int trained = 0, priced = 0;
    for (int k = 0; k < nsettings; k++) {
        trained |= w[k].a.train_tokens > 0;
        priced |= w[k].a.cost > 0;
    }
    printf("compare    %d settings of %s, each planned (best %s first)\n\n", nsettings, path,
           by[rank_by]);
    printf("%4s  %-*s %5s %11s %9s %6s %10s %10s", "rank", width, "setting", "GPUs", "iteration s",
           "model TF/s", "MFU", "mem GB/GPU", "tok/s/GPU");
    if (trained) printf(" %9s %9s", "days", "MWh");
    if (priced) printf(" %12s", "cost");
    printf("  %s\n", "best configuration");
    for (int k = 0; k < nsettings; k++) {
        if (w[k].error[0]) {
            printf("%4s  %-*s  %s\n", "-", width, w[k].name, w[k].error);
            continue;
        }
        printf("%4d  %-*s %5d %10.3f%s %9.1f %5.1f%% %10.1f %10.1f", k + 1, width, w[k].name,
               w[k].gpus, w[k].t, w[k].simulated ? " " : "*", w[k].tflops, w[k].mfu * 100,
               w[k].mem_gb, w[k].a.tokens_per_s_per_gpu);
        if (trained)
            printf(" %9.2f %9.1f", w[k].a.time_to_train_s / 86400, w[k].a.energy_kwh / 1e3);
        if (priced) printf(" %12.0f", w[k].a.cost);
        printf("  %s\n", w[k].best);
    }
    printf("(iteration simulated; * predicted where the best was not simulated)\n");
    if (json) {
        json_t *arr = json_array();
        for (int k = 0; arr && k < nsettings; k++) {
            json_t *row =
                w[k].error[0]
                    ? json_pack("{s:s, s:s, s:s, s:s}", "setting", w[k].name, "device", w[k].device,
                                "platform", w[k].platform, "error", w[k].error)
                    : json_pack("{s:s, s:s, s:s, s:i, s:s, s:f, s:b, s:f, s:f, s:f, s:i, s:i}",
                                "setting", w[k].name, "device", w[k].device, "platform",
                                w[k].platform, "gpus", w[k].gpus, "best", w[k].best, "iteration_s",
                                w[k].t, "simulated", w[k].simulated, "model_tflops_per_gpu",
                                w[k].tflops, "mfu", w[k].mfu, "memory_gb_per_gpu", w[k].mem_gb,
                                "candidates", w[k].candidates, "dropped_for_memory", w[k].dropped);
            const struct report_training *a = &w[k].a;
            if (row && !w[k].error[0]) {
                json_object_set_new(row, "tokens_per_s", json_real(a->tokens_per_s));
                json_object_set_new(row, "tokens_per_s_per_gpu",
                                    json_real(a->tokens_per_s_per_gpu));
                json_object_set_new(row, "power_w_per_gpu", json_real(a->power_w));
                const double v[] = {a->time_to_train_s, a->gpu_hours, a->energy_kwh, a->cost};
                const char *const key[] = {"time_to_train_s", "gpu_hours", "energy_kwh", "cost"};
                for (int q = 0; q < 4; q++)
                    json_object_set_new(row, key[q], v[q] > 0 ? json_real(v[q]) : json_null());
            }
            json_array_append_new(arr, row);
        }
        code =
            cli_write_json(json_pack("{s:s, s:o}", "scenario", path, "compare", arr), json, "plan");
    }
    free(w);
    return code;
}

/* Whether the plan's table is printed: not by a shard (it knows only its candidates), nor by a
 * merge that misses some. */
static int show_table(const struct plan_shard *ps)
{
    return !ps || (ps->mode == PLAN_SHARD_MERGE && !ps->nmissing);
}

int cli_plan(int argc, char **argv)
{
    static const struct option longs[] = {{"sp", no_argument, NULL, 's'},
                                          {"ignore-memory", no_argument, NULL, 'i'},
                                          {"async-tp", no_argument, NULL, 'a'},
                                          {"simulate", required_argument, NULL, 'n'},
                                          {"top", required_argument, NULL, 't'},
                                          {"json", required_argument, NULL, 'w'},
                                          {"jobs", required_argument, NULL, 'j'},
                                          {"rank", required_argument, NULL, 'r'},
                                          {"shard", required_argument, NULL, 'S'},
                                          {"merge", required_argument, NULL, 'M'},
                                          CLI_SET_OPTION,
                                          {0}};
    struct plan_args a = {.o = {.simulate = -1, .jobs = (int)sysconf(_SC_NPROCESSORS_ONLN)},
                          .top = 20};
    const char *path = NULL;
    int npos, prc = cli_parse(argc, argv, 1, "plan", plan_help, "o:j:", longs, plan_option, &a,
                              &path, 1, &npos);
    if (prc) return prc == CLI_HELP_SHOWN ? 0 : prc;
    const char *json = a.json;
    struct planner_opts o = a.o;
    int top = a.top;
    if (!path) return cli_usage_error("plan", "%s", "missing SCENARIO");
    if (a.shard && a.merge)
        return cli_usage_error("plan", "%s", "--shard runs a shard, --merge joins them: one");
    if (a.dir && !a.shard)
        return cli_usage_error("plan", "%s", "-o DIR names the directory of --shard");
    if (a.json && a.shard)
        return cli_usage_error("plan", "%s", "--json writes the whole plan: give it to --merge");
    if ((prc = cli_sets_apply(path))) return prc;
    struct scn_scenario s;
    struct tps_error err = {0};
    struct planner_row *rows = NULL;
    struct planner_info info;
    int n = 0, code = 0;
    int rc = scn_load(path, &s, &err);
    if (!rc && json && tps_output_check(json, &err)) rc = TPS_EINVAL; /* read: not an output */
    if (!rc && s.warning[0]) fprintf(stderr, "tpsim: warning: %s\n", s.warning);
    /* --shard and --merge: the candidates' simulations split over shards (cli/plan_shard.h) */
    struct plan_shard ps, *psp = NULL;
    int job = !rc && (s.ncompare || s.is_job);
    if (!rc && (a.shard || a.merge)) {
        char opts[160], dirbuf[600];
        snprintf(opts, sizeof opts, "simulate=%d sp=%d ignore_memory=%d async_tp=%d",
                 o.simulate >= 0 ? o.simulate
                 : job           ? 1
                                 : 8,
                 o.sequence_parallel, o.ignore_memory, o.async_tp);
        size_t pl = strlen(path);
        int yaml = pl > 5 && !strcmp(path + pl - 5, ".yaml");
        snprintf(dirbuf, sizeof dirbuf, "%.*s.plan-shards", (int)(yaml ? pl - 5 : pl), path);
        const char *dir = a.merge ? a.merge : a.dir ? a.dir : dirbuf;
        code = plancli_shard_open(&ps, a.shard ? PLAN_SHARD_RUN : PLAN_SHARD_MERGE, a.shard, dir,
                                  path, opts, job);
        if (code) {
            plancli_shard_close(&ps, 1);
            scn_release(&s);
            return code;
        }
        psp = &ps;
    }
    const struct plan_hook *hook = psp ? &psp->hook : NULL;
    if (!rc && s.ncompare) {
        struct jobplan_opts jo = {.simulate = o.simulate < 0 ? 1 : o.simulate,
                                  .ignore_memory = o.ignore_memory,
                                  .async_tp = o.async_tp,
                                  .hook = hook,
                                  .jobs = o.jobs};
        int nsettings = s.ncompare;
        scn_release(&s);
        code = plan_compare(path, nsettings, &jo, json, psp);
        int sc = psp ? plancli_shard_close(psp, code != 0) : 0;
        return code ? code : sc;
    }
    if (!rc && s.is_job) {
        struct jobplan_opts jo = {.simulate = o.simulate < 0 ? 1 : o.simulate,
                                  .ignore_memory = o.ignore_memory,
                                  .async_tp = o.async_tp,
                                  .hook = hook,
                                  .jobs = o.jobs};
        struct jobplan_row *jr = NULL;
        struct jobplan_info ji;
        if (isatty(2)) /* progress for a person: an error stays the first line in a log */
            fprintf(stderr, "tpsim plan: ranking configurations of %ld GPUs...\n",
                    mdl_job_gpus(&s.job, &s.strategy));
        rc = jobplan_run(&s, &jo, &jr, &n, &ji, &err);
        if (rc) {
            code = cli_report_error_in(path, &err);
        } else if (show_table(psp)) {
            print_job_plan(&s, jo.simulate, jo.ignore_memory, top, jr, n, &ji);
            if (json) code = write_job_plan_json(&s, path, json, jr, n, &ji);
        }
        free(jr);
        scn_release(&s);
        int sc = psp ? plancli_shard_close(psp, code != 0) : 0;
        return code ? code : sc;
    }
    if (o.simulate < 0) o.simulate = 8;
    o.hook = hook;
    if (!rc) {
        if (isatty(2))
            fprintf(stderr, "tpsim plan: ranking strategies of TP degree %d...\n", s.strategy.tp);
        rc = planner_run(&s, &o, &rows, &n, &info, &err);
    }
    if (rc) {
        code = cli_report_error_in(path, &err);
    } else if (show_table(psp)) {
        print_plan(&s, &o, top, rows, n, &info);
        if (json) code = write_plan_json(&s, path, json, rows, n, &info);
    }
    if (psp) {
        int sc = plancli_shard_close(psp, code != 0);
        code = code ? code : sc;
    }
    free(rows);
    scn_release(&s);
    return code;
}
