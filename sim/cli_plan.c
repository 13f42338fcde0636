/* cli_plan.c - `tpsim plan SCENARIO`: the ranked strategy table (sim/plan.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cliutil.h"
#include "sim/collplan.h"
#include "sim/plan.h"
#include "sim/scenario.h"

static const char plan_help[] =
    "usage: tpsim plan SCENARIO [--sp] [--simulate N] [--top N] [--json FILE]\n"
    "\n"
    "Ranks tensor-parallel strategies of the scenario's TP degree on its model and platform:\n"
    "1D, every 2D mesh d1 x d2 in row-first and column-first placement, ATP chunk overlap\n"
    "(k = 1, 2, 4, 8) and the Oases schedule on and off (the scenario's recompute setting is\n"
    "kept). Every candidate is ranked by an analytic schedule (closed-form collectives on the\n"
    "platform's routes, in-order streams); the best N are then simulated with SimGrid (one layer,\n"
    "scaled: the layers are identical). Prints a table ranked by simulated time, with the\n"
    "predicted time and the memory per GPU, and the effective bandwidth each axis of the best\n"
    "strategy gets.\n"
    "\n"
    "options:\n"
    "  --sp           also try 1D with sequence parallelism\n"
    "  --simulate N   simulate the N best predictions (default 8)\n"
    "  --top N        print the N best rows (default 20; 0 = all)\n"
    "  --json FILE    write every row as JSON\n"
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
        struct sim_group_env e;
        struct tps_error err = {0};
        if (sim_group_env(&s->topo, &g, &e, &err)) continue;
        printf("  %s axis (%d GPUs, e.g. %d..%d): ring bandwidth %.1f GB/s per GPU, route "
               "latency %.2f us\n",
               axis ? "d2 (rows)" : "d1 (columns)", n, ranks[0], ranks[n - 1], e.flat_bw / 1e9,
               e.flat_lat * 1e6);
        sim_group_env_release(&e);
    }
}

int cli_plan(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    struct sim_plan_opts o = {.simulate = 8};
    int top = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(plan_help, stdout);
            return 0;
        }
        if (!strcmp(a, "--sp")) {
            o.sequence_parallel = 1;
        } else if (!strcmp(a, "--simulate") || !strcmp(a, "--top") || !strcmp(a, "--json")) {
            if (i + 1 >= argc) return cli_usage_error("plan", "option '%s' needs a value", a);
            const char *v = argv[++i];
            char *end;
            if (!strcmp(a, "--json")) {
                json = v;
                continue;
            }
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 100000) return cli_usage_error("plan", "bad count '%s'", v);
            if (!strcmp(a, "--top"))
                top = (int)n;
            else
                o.simulate = (int)n;
        } else if (a[0] == '-') {
            return cli_usage_error("plan", "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("plan", "unexpected argument '%s'", a);
        } else {
            path = a;
        }
    }
    if (!path) return cli_usage_error("plan", "%s", "missing SCENARIO");
    struct scn_scenario s;
    struct tps_error err = {0};
    if (scn_load(path, &s, &err)) {
        scn_release(&s);
        return cli_report_error(&err);
    }
    struct sim_plan_row *rows = NULL;
    int n = 0;
    fprintf(stderr, "tpsim plan: ranking strategies of TP degree %d...\n", s.strategy.tp);
    int rc = sim_plan(&s, &o, &rows, &n, &err);
    if (rc) {
        scn_release(&s);
        return cli_report_error(&err);
    }
    char model[256];
    scn_describe_model(&s, model, sizeof model);
    printf("model      %s\nplatform   %s (%s)\niteration  %d layer(s) x %d micro-batch(es); "
           "%d candidates, %d simulated\n\n",
           model, s.platform_spec, s.topo.desc, s.layers, s.micro_batches, n,
           o.simulate < n ? o.simulate : n);
    printf("%4s  %-62s %13s %13s %10s\n", "rank", "strategy", "simulated ms", "predicted ms",
           "mem GB/GPU");
    for (int i = 0; i < n && (top == 0 || i < top); i++) {
        char sim[32] = "-";
        if (rows[i].simulated_s > 0) snprintf(sim, sizeof sim, "%.3f", rows[i].simulated_s * 1e3);
        printf("%4d  %-62s %13s %13.3f %10.1f\n", i + 1, rows[i].desc, sim,
               rows[i].predicted_s * 1e3, rows[i].mem_bytes / 1e9);
    }
    printf("\nbest: %s\n", rows[0].desc);
    print_axes(&s, &rows[0].st);
    int code = 0;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                arr,
                json_pack("{s:s, s:i, s:i, s:i, s:s, s:i, s:b, s:b, s:f, s:f, s:f}", "strategy",
                          rows[i].desc, "tp", rows[i].st.tp, "d1", rows[i].st.d1, "d2",
                          rows[i].st.d2, "placement",
                          rows[i].st.placement == MDL_COLUMN_FIRST ? "column-first" : "row-first",
                          "chunks", rows[i].st.chunks ? rows[i].st.chunks : 1, "oases",
                          rows[i].st.oases, "sequence_parallel", rows[i].st.sequence_parallel,
                          "predicted_s", rows[i].predicted_s, "simulated_s", rows[i].simulated_s,
                          "memory_bytes", rows[i].mem_bytes));
        code = cli_write_json(json_pack("{s:s, s:o}", "scenario", path, "rows", arr), json, "plan");
    }
    free(rows);
    scn_release(&s);
    return code;
}
