/* cli.c - the tpsim command line: run, trace, collective, platform show (calibrate and validate
 * are in cli_validate.c). The only main().
 *
 * Exit status: 0 success, 1 simulation failure, 2 usage or input error. Calls the scenario
 * loader, the models' lowering, the trace reader/writer, the engine and the reports.
 */
#include <errno.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/units.h"
#include "models/collective.h"
#include "models/strategy.h"
#include "platforms/preset.h"
#include "platforms/spec.h"
#include "core/trace.h"
#include "core/tracemerge.h"
#include "pipeline/fabric.h"
#include "pipeline/pipeline.h"
#include "cli/cliutil.h"
#include "common/inputs.h"

#ifndef TPSIM_VERSION
#define TPSIM_VERSION "dev"
#endif

/* ------------------------------------------------------------------ run */

static const char run_help[] =
    "usage: tpsim run SCENARIO.yaml|TRACE_DIR [options]\n"
    "\n"
    "Simulates one training iteration (the layers and micro-batches the scenario names) and\n"
    "prints iteration time, compute time, exposed communication time, model TFLOP/s per GPU and\n"
    "MFU (model FLOPs: the same for every strategy), hardware TFLOP/s per GPU (what the ops\n"
    "executed), the memory per GPU against the device (a warning when it does not fit) and the\n"
    "time per layer. A trace directory written by 'tpsim trace' (or recorded) is replayed alike.\n"
    "A scenario with a list jobs: (several jobs on one platform, docs/heterogeneity.md) runs\n"
    "them together and each alone, and prints each job's slowdown from sharing the links.\n"
    "\n"
    "options:\n"
    "  --json FILE        write the results as JSON (docs/output.md)\n"
    "  --csv FILE         write a one-row CSV summary\n"
    "  --timeline FILE    write a Chrome trace JSON of every GPU's streams (open in Perfetto)\n"
    "  --platform SPEC    platform for a trace directory, e.g. 'dgx-a100' or\n"
    "                     'pcie-8gpu sockets=2' or a .yaml/.xml file (default: the recorded one)\n"
    "  --seed S           the stragglers' seed (default: stragglers.seed, else 1)\n"
    "  --seeds N          simulate N seeds (S, S+1, ...) and print each iteration time and their\n"
    "                     mean, p50 and p99 (docs/heterogeneity.md); --json writes them "
    "all\n" CLI_SET_HELP "  -q, --quiet        print nothing but errors\n"
    "  -h, --help         show this help\n";

struct run_opts {
    const char *input, *json, *csv, *timeline, *platform;
    int quiet;
    long seed, seeds; /* -1: the scenario's seed; 0: one run */
};

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Before simulating: no output of the run names one of the files it has read. */
static int outputs_check(const struct run_opts *o, struct tps_error *err)
{
    const char *out[] = {o->json, o->csv, o->timeline};
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        if (out[i] && tps_output_check(out[i], err)) return TPS_EINVAL;
    return TPS_OK;
}

/* Loads the input, simulates it and writes the report. */
static int run_input(const struct run_opts *o)
{
    struct tps_error err = {0};
    struct pipeline_job *j = pipeline_job_new();
    int rc = !j                 ? tps_error_oom(&err)
             : is_dir(o->input) ? pipeline_load_trace(o->input, o->platform, NULL, j, &err)
                                : pipeline_open_scenario(o->input, NULL, j, &err);
    if (!rc && o->seed >= 0) rc = pipeline_reseed(j, (unsigned long)o->seed, &err);
    if (!rc) rc = outputs_check(o, &err); /* the inputs are read: none is an output */
    if (!rc && !is_dir(o->input) && pipeline_job_scenario(j)->warning[0])
        fprintf(stderr, "tpsim: warning: %s\n", pipeline_job_scenario(j)->warning);
    if (!rc && !o->quiet && isatty(2)) {
        int L, M, R;
        pipeline_job_shape(j, &L, &M, &R);
        fprintf(stderr, "tpsim: simulating %d layer(s)%s x %d micro-batch(es) on %d GPU(s)...\n", L,
                pipeline_job_deferred(j) ? " (folded if they all take the same)" : "", M, R);
    }
    struct timing tm = {0};
    struct report r = {0};
    /* a long simulation says how far it is (one at a time here) */
    pipeline_progress(!o->quiet && isatty(2));
    /* every op's times only for a timeline: without one, a plain run may fold its layers */
    if (!rc) rc = pipeline_simulate(j, o->timeline ? &tm : NULL, &r, &err);
    const struct report_meta *meta = rc ? NULL : pipeline_job_meta(j);
    if (!rc) {
        report_warn_memory(&r, meta->device, stderr);
        if (!o->quiet) report_print(&r, meta, stdout);
    }
    if (!rc && o->json) rc = report_write_json(&r, meta, o->json, &err);
    if (!rc && o->csv) rc = report_write_csv(&r, meta, o->csv, &err);
    if (!rc && o->timeline)
        rc = report_write_timeline(pipeline_job_program(j), &tm, o->timeline, &err);
    report_release(&r);
    timing_release(&tm);
    pipeline_free(j);
    return rc ? cli_report_error_in(is_dir(o->input) ? NULL : o->input, &err) : 0;
}

/* Several jobs on one platform: together, then each alone. */
static int run_fabric(const struct run_opts *o)
{
    struct tps_error err = {0};
    struct fabric_run fr;
    int rc = fabric_load(o->input, o->seed, &fr, &err);
    if (!rc) rc = outputs_check(o, &err);
    if (!rc) rc = fabric_simulate(&fr, !o->quiet && isatty(2) ? stderr : NULL, &err);
    for (int i = 0; !rc && i < fr.njobs; i++)
        report_warn_memory(&fr.jobs[i].shared, pipeline_job_meta(fr.jobs[i].pj)->device, stderr);
    if (!rc && !o->quiet) fabric_print(&fr, stdout);
    if (!rc && o->json) rc = fabric_write_json(&fr, o->json, &err);
    if (!rc && o->csv) rc = fabric_write_csv(&fr, o->csv, &err);
    if (!rc && o->timeline) rc = report_write_timeline(&fr.all, &fr.tm, o->timeline, &err);
    fabric_release(&fr);
    return rc ? cli_report_error_in(o->input, &err) : 0;
}

/* The iteration times of o->seeds seeds, their summary on stdout and in --json. */
static int run_seeds(const struct run_opts *o)
{
    struct tps_error err = {0};
    struct pipeline_job *j = pipeline_job_new();
    int rc = j ? pipeline_open_scenario(o->input, NULL, j, &err) : tps_error_oom(&err);
    double *t = calloc((size_t)o->seeds, sizeof *t), *sorted = calloc((size_t)o->seeds, sizeof *t);
    if (!rc && (!t || !sorted)) rc = tps_error_oom(&err);
    const struct scn_scenario *scn = j ? pipeline_job_scenario(j) : NULL;
    const char *het = j ? pipeline_job_meta(j)->hetero : NULL;
    if (!het) het = "";
    unsigned long s0 = o->seed >= 0 ? (unsigned long)o->seed : scn ? scn->hetero.seed : 0;
    /* a seed is 32 bits (stragglers.seed, --seed): the last one must be one too */
    if (!rc && s0 + (unsigned long)o->seeds - 1 > 4294967295UL)
        rc = tps_error_set(&err, TPS_EINVAL, "command line", 0, 0, "--seeds",
                           "seeds %lu to %lu pass 4294967295, the largest seed", s0,
                           s0 + (unsigned long)o->seeds - 1);
    if (!rc) rc = outputs_check(o, &err);
    for (long i = 0; !rc && i < o->seeds; i++) {
        rc = pipeline_reseed(j, s0 + (unsigned long)i, &err);
        struct report r = {0};
        if (!rc) rc = pipeline_simulate(j, NULL, &r, &err);
        if (!rc) t[i] = r.iteration_s;
        report_release(&r);
        if (!rc && !o->quiet && isatty(2))
            fprintf(stderr, "\rtpsim: seed %ld of %ld", i + 1, o->seeds);
    }
    if (!o->quiet && isatty(2)) fputc('\n', stderr);
    double mean = 0, p50 = 0, p99 = 0;
    if (!rc) {
        memcpy(sorted, t, (size_t)o->seeds * sizeof *t);
        gsl_sort(sorted, 1, (size_t)o->seeds);
        mean = gsl_stats_mean(t, 1, (size_t)o->seeds);
        p50 = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)o->seeds, 0.5);
        p99 = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)o->seeds, 0.99);
    }
    if (!rc && !o->quiet) {
        printf("scenario        %s\n", scn->path);
        printf("heterogeneity   %s\n", het[0] ? het : "-");
        printf("seeds           %lu to %lu (the line above: the last)\n", s0,
               s0 + (unsigned long)o->seeds - 1);
        printf("\n%-12s %16s\n", "seed", "iteration (ms)");
        for (long i = 0; i < o->seeds; i++)
            printf("%-12lu %16.6f\n", s0 + (unsigned long)i, t[i] * 1e3);
        printf("\n%ld seeds: mean %.6f ms, p50 %.6f ms, p99 %.6f ms, min %.6f ms, max %.6f ms\n",
               o->seeds, mean * 1e3, p50 * 1e3, p99 * 1e3, sorted[0] * 1e3,
               sorted[o->seeds - 1] * 1e3);
    }
    if (!rc && o->json) {
        json_t *runs = json_array();
        for (long i = 0; i < o->seeds; i++)
            json_array_append_new(runs, json_pack("{s:I, s:f}", "seed",
                                                  (json_int_t)(s0 + (unsigned long)i),
                                                  "iteration_time_s", t[i]));
        json_t *root =
            json_pack("{s:s, s:s, s:o, s:{s:f, s:f, s:f, s:f, s:f}}", "scenario", scn->path,
                      "heterogeneity", het, "seeds", runs, "iteration_time_s", "mean", mean, "p50",
                      p50, "p99", p99, "min", sorted[0], "max", sorted[o->seeds - 1]);
        if (!root || json_dump_file(root, o->json, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0)
            rc = tps_error_set(&err, TPS_EIO, o->json, 0, 0, NULL, "cannot write JSON");
        json_decref(root);
    }
    free(t);
    free(sorted);
    pipeline_free(j);
    return rc ? cli_report_error_in(o->input, &err) : 0;
}

static const struct option run_longs[] = {{"json", required_argument, NULL, 'j'},
                                          {"csv", required_argument, NULL, 'c'},
                                          {"timeline", required_argument, NULL, 't'},
                                          {"platform", required_argument, NULL, 'p'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"seed", required_argument, NULL, 's'},
                                          {"seeds", required_argument, NULL, 'S'},
                                          CLI_SET_OPTION,
                                          {0}};

static int run_option(int opt, const char *arg, void *ctx)
{
    struct run_opts *o = ctx;
    switch (opt) {
    case 'j':
        o->json = arg;
        break;
    case 'c':
        o->csv = arg;
        break;
    case 't':
        o->timeline = arg;
        break;
    case 'p':
        o->platform = arg;
        break;
    case 'q':
        o->quiet = 1;
        break;
    case 's':
        return cli_parse_count("run", "--seed", arg, 0, 4294967295L, &o->seed);
    case 'S':
        return cli_parse_count("run", "--seeds", arg, 1, 100000, &o->seeds);
    }
    return 0;
}

/* run and replay: the same options; replay needs a trace directory and --platform. */
static int run_command(int argc, char **argv, const char *cmd, const char *help)
{
    struct run_opts o = {.seed = -1};
    int n,
        rc = cli_parse(argc, argv, 1, cmd, help, "q", run_longs, run_option, &o, &o.input, 1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    int replay = !strcmp(cmd, "replay");
    if (!o.input)
        return cli_usage_error(cmd, "%s", replay ? "missing TRACE_DIR" : "missing SCENARIO");
    if (replay && !o.platform) return cli_usage_error(cmd, "%s", "missing --platform");
    if (cli_sets_given() && (replay || is_dir(o.input)))
        return cli_usage_error(cmd, "%s", "--set applies to scenarios, not to a trace directory");
    if ((rc = cli_sets_apply(o.input))) return rc;
    if (o.platform && !is_dir(o.input))
        return cli_usage_error(cmd, "%s", "--platform applies to trace directories");
    if ((o.seed >= 0 || o.seeds) && (replay || is_dir(o.input)))
        return cli_usage_error(cmd, "%s", "--seed and --seeds apply to scenarios");
    if (o.seeds && (o.csv || o.timeline))
        return cli_usage_error(cmd, "%s", "--seeds writes --json only");
    if (!replay && !is_dir(o.input) && scn_fabric_probe(o.input)) {
        if (o.seeds) return cli_usage_error(cmd, "%s", "--seeds applies to a scenario of one job");
        return run_fabric(&o);
    }
    if (o.seeds) return run_seeds(&o);
    return run_input(&o);
}

static int cmd_run(int argc, char **argv)
{
    return run_command(argc, argv, "run", run_help);
}

/* ------------------------------------------------------------------ trace */

static const char trace_help[] =
    "usage: tpsim trace SCENARIO.yaml -o DIR\n"
    "\n"
    "Writes the per-rank operations of the scenario (compute ops with their modelled durations,\n"
    "collectives with sizes and groups) in tpsim's text trace format (docs/trace-format.md).\n"
    "'tpsim run DIR' replays it.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR   directory to write (created if needed)\n" CLI_SET_HELP
    "  -h, --help         show this help\n";

static int trace_option(int opt, const char *arg, void *ctx)
{
    if (opt == 'o') *(const char **)ctx = arg;
    return 0;
}

static int cmd_trace(int argc, char **argv)
{
    static const struct option longs[] = {
        {"output", required_argument, NULL, 'o'}, CLI_SET_OPTION, {0}};
    const char *in = NULL, *out = NULL;
    int n, rc = cli_parse(argc, argv, 1, "trace", trace_help, "o:", longs, trace_option, &out, &in,
                          1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (!in || !out) return cli_usage_error("trace", "%s", "need SCENARIO and -o DIR");
    if ((rc = cli_sets_apply(in))) return rc;
    struct tps_error err = {0};
    struct pipeline_job *j = pipeline_job_new();
    rc = j ? pipeline_load_scenario(in, NULL, j, &err) : tps_error_oom(&err);
    if (!rc) rc = pipeline_unfold_replicas(j, &err); /* a trace holds every GPU's ops */
    if (!rc)
        rc = trace_write(pipeline_job_program(j), pipeline_job_scenario(j)->platform_spec, out,
                         &err);
    if (!rc) printf("wrote %d rank file(s) to %s\n", pipeline_job_program(j)->nranks, out);
    pipeline_free(j);
    return rc ? cli_report_error(&err) : 0;
}

/* ------------------------------------------------------------------ collective */

static const char coll_help[] =
    "usage: tpsim collective --platform SPEC [--op OP] [--ranks N] (--bytes SIZE | --min SIZE\n"
    "                        --max SIZE [--factor F]) [--algorithm A] [--protocol P]\n"
    "                        [--granularity G] [--json FILE]\n"
    "\n"
    "Simulates one collective over GPUs 0..N-1 of a platform and prints the table nccl-tests\n"
    "prints (size, count, type, redop, root, time, algbw, busbw, #wrong; out-of-place only), so\n"
    "that `tpsim calibrate` and `tpsim validate` read it like a real log. The algorithm and\n"
    "protocol the tuner chose are in the last columns.\n"
    "\n"
    "options:\n"
    "  --platform SPEC    'dgx-a100', 'dgx-a100 nodes=512', 'pcie-8gpu sockets=2', or a file\n"
    "  --op OP            all_reduce (default) | all_gather | reduce_scatter | broadcast |\n"
    "                     all_to_all | send_recv | reduce\n"
    "  --ranks N          GPUs taking part (default: all of the platform; send_recv: 2, one\n"
    "                     message; over more, every GPU sends to the next at once, as\n"
    "                     nccl-tests' sendrecv_perf)\n"
    "  --bytes SIZE       buffer size as nccl-tests counts it, e.g. 256MiB, 1G, 4096\n"
    "  --min/--max SIZE   size range; --factor F multiplies the size each row (default 2)\n"
    "  --algorithm A      auto (default) | ring | tree | direct | hierarchical |\n"
    "                     hierarchical_tree | nvls (NVSwitch machines with nvls: true) |\n"
    "                     nvls_tree (across such machines) | collnet (nccl collnet: true)\n"
    "  --protocol P       auto (default) | LL | LL128 | Simple\n"
    "  --granularity G    auto (default: flow-level above the platform's flow_threshold ranks,\n"
    "                     and everywhere past flow_threshold machines) | step | flow\n"
    "  --json FILE        write {\"rows\": [{bytes, time_s, algbw_GBps, busbw_GBps, algorithm,\n"
    "                     protocol, granularity}]}: the granularity used ('step', 'flow', or\n"
    "                     'step+flow' for a hierarchical one that runs both)\n"
    "  -h, --help         show this help\n";

/* The granularity a collective over GPUs 0..ranks-1 ran at. "auto" resolves per phase: phases
 * over more than the platform's flow_threshold ranks run flow-level, so a hierarchical one can be
 * per-step inside machines and flow-level across them ("step+flow"). */
static const char *gran_used(const struct plat_topo *t, const struct pipeline_coll_how *how,
                             int ranks)
{
    if (how->gran != MDL_GRAN_AUTO) return mdl_gran_name((enum mdl_coll_gran)how->gran);
    int thr = t->nccl.flow_threshold;
    if ((how->algo == MDL_ALGO_HIER || how->algo == MDL_ALGO_HTREE) && t->machines > 1) {
        int per = t->ngpus / t->machines;
        int inner = ranks < per ? ranks : per, outer = (ranks + per - 1) / per;
        int fi = mdl_coll_flow_level(MDL_GRAN_AUTO, inner, outer, thr);
        int fo = mdl_coll_flow_level(MDL_GRAN_AUTO, outer, outer, thr);
        return fi == fo ? (fi ? "flow" : "step") : fi ? "flow+step" : "step+flow";
    }
    if ((how->algo == MDL_ALGO_NVLS_TREE || how->algo == MDL_ALGO_COLLNET) && t->machines > 1) {
        /* as its stage across machines */
        int outer = (ranks + t->ngpus / t->machines - 1) / (t->ngpus / t->machines);
        return mdl_coll_flow_level(MDL_GRAN_AUTO, outer, outer, thr) ? "flow" : "step";
    }
    return ranks > thr ? "flow" : "step";
}

struct coll_opts {
    const char *plat, *op, *json;
    double bytes, lo, hi, factor;
    long ranks;
    struct pipeline_coll_how force;
};

static int coll_option(int opt, const char *v, void *ctx)
{
    struct coll_opts *o = ctx;
    char *end = NULL;
    switch (opt) {
    case 'p':
        o->plat = v;
        break;
    case 'o':
        o->op = v;
        break;
    case 'j':
        o->json = v;
        break;
    case 'r':
        return cli_parse_count("collective", "--ranks", v, 1, 1L << 24, &o->ranks);
    case 'b':
    case 'm':
    case 'M': {
        double *dst = opt == 'b' ? &o->bytes : opt == 'm' ? &o->lo : &o->hi;
        if (tps_units_size(v, dst) != 0 || !(*dst > 0))
            return cli_usage_error("collective", "bad size '%s'", v);
        break;
    }
    case 'f':
        o->factor = strtod(v, &end);
        if (*end || !(o->factor > 1)) return cli_usage_error("collective", "bad --factor '%s'", v);
        break;
    case 'a': {
        enum mdl_coll_algo x;
        if (mdl_algo_parse(v, &x))
            return cli_usage_error("collective", "unknown --algorithm '%s'", v);
        o->force.algo = x;
        break;
    }
    case 'P': {
        enum mdl_coll_proto x;
        if (mdl_proto_parse(v, &x))
            return cli_usage_error("collective", "unknown --protocol '%s'", v);
        o->force.proto = x;
        break;
    }
    case 'g': {
        enum mdl_coll_gran x;
        if (mdl_gran_parse(v, &x))
            return cli_usage_error("collective", "unknown --granularity '%s'", v);
        o->force.gran = x;
        break;
    }
    }
    return 0;
}

/* Simulates the collective at every size and prints the nccl-tests table (and the JSON). */
static int collective_table(const struct plat_topo *tp, const struct coll_opts *o,
                            enum mdl_op_kind kind)
{
    const char *plat = o->plat, *op = o->op, *json = o->json;
    double lo = o->bytes > 0 ? o->bytes : o->lo, hi = o->bytes > 0 ? o->bytes : o->hi;
    double factor = o->factor;
    long ranks = o->ranks;
    struct tps_error err = {0};
    json_t *rows = json_array();
    int code = 0;
    double bus_sum = 0;
    int nrows = 0;
    for (double s = lo; s <= hi * (1 + 1e-12) && !code; s *= factor) {
        double size = floor(s), time = 0;
        struct pipeline_coll_how how = o->force;
        int rc = pipeline_collective(tp, kind, (int)ranks, size, &how, &time, &err);
        if (rc) {
            code = cli_report_error(&err);
            break;
        }
        if (nrows == 0) { /* the header once the first size ran: an error prints nothing else */
            printf("# Collective test starting: %s_perf (simulated by tpsim on %s)\n", op,
                   tp->desc[0] ? tp->desc : plat);
            printf("# tpsim: %ld ranks, platform \"%s\"\n#\n", ranks, plat);
            printf("#%77s\n", "out-of-place");
            printf("#%12s %12s %9s %7s %6s %10s %8s %8s %7s  %s\n", "size", "count", "type",
                   "redop", "root", "time", "algbw", "busbw", "#wrong", "algorithm/protocol");
            printf("#%12s %12s %9s %7s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "",
                   "(us)", "(GB/s)", "(GB/s)", "");
        }
        double alg = time > 0 ? size / time / 1e9 : 0;
        double bus = alg * mdl_coll_busbw_factor(kind, (int)ranks);
        bus_sum += bus;
        nrows++;
        printf(" %12.0f %12.0f %9s %7s %6d %10.2f %8.2f %8.2f %7s  %s/%s\n", size, floor(size / 4),
               "float", kind == MDL_OP_ALL_GATHER || kind == MDL_OP_ALL_TO_ALL ? "none" : "sum",
               kind == MDL_OP_BROADCAST || kind == MDL_OP_REDUCE ? 0 : -1, time * 1e6, alg, bus,
               "N/A", mdl_algo_name((enum mdl_coll_algo)how.algo),
               mdl_proto_name((enum mdl_coll_proto)how.proto));
        fflush(stdout);
        json_array_append_new(rows,
                              json_pack("{s:f, s:f, s:f, s:f, s:s, s:s, s:s}", "bytes", size,
                                        "time_s", time, "algbw_GBps", alg, "busbw_GBps", bus,
                                        "algorithm", mdl_algo_name((enum mdl_coll_algo)how.algo),
                                        "protocol", mdl_proto_name((enum mdl_coll_proto)how.proto),
                                        "granularity", gran_used(tp, &how, (int)ranks)));
    }
    if (!code) {
        printf("# Out of bounds values : 0 OK\n");
        printf("# Avg bus bandwidth    : %g\n#\n", nrows ? bus_sum / nrows : 0);
    }
    if (!code && json) {
        code = cli_write_json(json_pack("{s:s, s:i, s:s, s:O}", "op", op, "ranks", (int)ranks,
                                        "platform", plat, "rows", rows),
                              json, "collective");
    }
    json_decref(rows);
    return code;
}

static int cmd_collective(int argc, char **argv)
{
    static const struct option longs[] = {
        {"platform", required_argument, NULL, 'p'},    {"op", required_argument, NULL, 'o'},
        {"json", required_argument, NULL, 'j'},        {"ranks", required_argument, NULL, 'r'},
        {"bytes", required_argument, NULL, 'b'},       {"min", required_argument, NULL, 'm'},
        {"max", required_argument, NULL, 'M'},         {"factor", required_argument, NULL, 'f'},
        {"algorithm", required_argument, NULL, 'a'},   {"protocol", required_argument, NULL, 'P'},
        {"granularity", required_argument, NULL, 'g'}, {0}};
    struct coll_opts o = {.op = "all_reduce", .factor = 2};
    int n, rc = cli_parse(argc, argv, 1, "collective", coll_help, "", longs, coll_option, &o, NULL,
                          0, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    const char *plat = o.plat, *op = o.op;
    double bytes = o.bytes, lo = o.lo, hi = o.hi;
    long ranks = o.ranks;
    enum mdl_op_kind kind;
    if (mdl_op_kind_parse(op, &kind) != 0 || !mdl_op_is_coll(kind))
        return cli_usage_error("collective", "unknown --op '%s'", op);
    if (!plat) return cli_usage_error("collective", "%s", "missing --platform");
    if (bytes > 0) lo = hi = bytes;
    if (!(lo > 0) || hi < lo)
        return cli_usage_error("collective", "%s", "give --bytes or --min <= --max");
    struct tps_error err = {0};
    struct plat_topo t;
    int code = 0;
    if (plat_spec_from_line(plat, &t, &err)) {
        code = cli_report_error(&err);
    } else {
        if (!ranks) ranks = kind == MDL_OP_SEND_RECV ? 2 : t.ngpus;
        if (ranks > t.ngpus) {
            fprintf(stderr, "tpsim collective: --ranks %ld is larger than the platform's %d GPUs\n",
                    ranks, t.ngpus);
            code = CLI_EXIT_INPUT;
        } else {
            o.ranks = ranks;
            code = collective_table(&t, &o, kind);
        }
    }
    plat_topo_release(&t);
    return code;
}

/* ------------------------------------------------------------------ platform show */

static const char platform_help[] =
    "usage: tpsim platform show NAME|FILE [key=value ...]\n"
    "\n"
    "Prints a platform's topology (nodes, links, forwarding limits) and the GPU-to-GPU bandwidth\n"
    "matrix (bottleneck of the route, GB/s per direction) with route latencies.\n"
    "NAME is a preset: dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, pcie-8gpu,\n"
    "rtx3090-4gpu; parameters such as nodes=2, racks=2 (gb200-nvl72), nvlink_domain=36,\n"
    "pcie_gen=5, sockets=2, nvlink_bridges=true, ib=NDR, nics_per_node=2, oversubscription=2,\n"
    "fabric=rail, pod_leaves=4, spine_oversubscription=2, network=roce\n"
    "are documented in docs/platforms.md. FILE is a topology .yaml or a SimGrid .xml.\n";

/* Prints an n x n matrix of route bandwidth in GB/s (what = 0) or latency in us (what = 1). */
static void print_matrix(const struct plat_topo *t, int n, int what)
{
    printf("%8s", "");
    for (int j = 0; j < n; j++)
        printf(" %7d", j);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%8d", i);
        for (int j = 0; j < n; j++) {
            struct plat_route r;
            if (i == j || plat_topo_route(t, i, j, &r) != 0)
                printf(" %7s", "-");
            else if (what == 0)
                printf(" %7.1f", r.bw_Bps / 1e9);
            else
                printf(" %7.2f", r.lat_s * 1e6);
        }
        printf("\n");
    }
}

/* The hierarchical communication matrix: from GPU 0, the GPUs reached at each level (the
 * highest level a route crosses) and the bandwidth and latency there. */
static void print_levels(const struct plat_topo *t)
{
    int count[4] = {0};
    double bw_min[4], bw_max[4], lat[4] = {0};
    for (int l = 0; l < 4; l++)
        bw_min[l] = bw_max[l] = 0;
    for (int g = 1; g < t->ngpus; g++) {
        struct plat_route r;
        if (plat_topo_route(t, 0, g, &r) != 0) continue;
        int lvl = 0;
        for (int h = 0; h < r.nhops; h++)
            if (r.hops[h].link >= 0 && t->links[r.hops[h].link].level > lvl)
                lvl = t->links[r.hops[h].link].level;
        if (!count[lvl]++ || r.bw_Bps < bw_min[lvl]) bw_min[lvl] = r.bw_Bps;
        if (r.bw_Bps > bw_max[lvl]) bw_max[lvl] = r.bw_Bps;
        if (r.lat_s > lat[lvl]) lat[lvl] = r.lat_s;
    }
    printf("\ncommunication levels from gpu0 (the highest level a route crosses):\n");
    printf("  %-8s %6s %22s %12s\n", "level", "GPUs", "bandwidth GB/s", "latency us");
    for (int l = 0; l < 4; l++) {
        if (!count[l]) continue;
        char bw[48];
        if (bw_min[l] == bw_max[l])
            snprintf(bw, sizeof bw, "%.2f", bw_min[l] / 1e9);
        else
            snprintf(bw, sizeof bw, "%.2f-%.2f", bw_min[l] / 1e9, bw_max[l] / 1e9);
        printf("  %-8s %6d %22s %12.2f\n", plat_level_name((enum plat_level)l), count[l], bw,
               lat[l] * 1e6);
    }
    printf("(one flow alone; `tpsim plan` prints what each mesh axis gets with its own traffic)\n");
}

static void show_topology(const struct plat_topo *t)
{
    printf("platform  %s\n", t->name);
    if (t->desc[0]) printf("          %s\n", t->desc);
    if (t->xml_path[0]) {
        printf("SimGrid XML file %s; GPUs are its hosts in document order:\n", t->xml_path);
        for (int g = 0; g < t->ngpus; g++)
            printf("  gpu %d = host '%s'\n", g, t->xml_hosts[g]);
        printf("(routes and bandwidths are resolved by SimGrid when the file is loaded)\n");
        return;
    }
    int counts[4] = {0};
    for (int n = 0; n < t->nnodes; n++)
        counts[t->nodes[n].kind]++;
    printf("GPUs %d, switches %d, NICs %d, CPUs/root complexes %d, links %d, %s %d\n\n",
           counts[PLAT_GPU], counts[PLAT_SWITCH], counts[PLAT_NIC], counts[PLAT_CPU], t->nlinks,
           plat_preset_racks(t->name) ? "racks (NVLink domains)" : "servers", t->machines);
    int limit = t->nlinks <= 80 ? t->nlinks : 40;
    printf("links (bandwidth per direction unless shared):\n");
    for (int l = 0; l < limit; l++) {
        const struct plat_link *k = &t->links[l];
        printf("  %-16s -- %-16s %9.2f GB/s %s %6.2f us  %s\n", t->nodes[k->a].name,
               t->nodes[k->b].name, k->bw_Bps / 1e9, k->shared ? "shared" : "duplex",
               k->lat_s * 1e6, plat_level_name((enum plat_level)k->level));
    }
    if (limit < t->nlinks) printf("  ... %d more links\n", t->nlinks - limit);
    for (int n = 0; n < t->nnodes; n++)
        if (t->nodes[n].fwd_Bps > 0)
            printf("  %-16s forwards at most %.2f GB/s (shared by all crossing traffic)\n",
                   t->nodes[n].name, t->nodes[n].fwd_Bps / 1e9);
    int n = t->ngpus <= 32 ? t->ngpus : 16;
    printf("\nGPU-to-GPU bandwidth, GB/s (route bottleneck, one flow alone)%s:\n",
           n < t->ngpus ? " - first 16 GPUs" : "");
    print_matrix(t, n, 0);
    printf("\nroute latency, us:\n");
    print_matrix(t, n, 1);
    print_levels(t);
}

static int cmd_platform(int argc, char **argv)
{
    const char *pos[66];
    int n,
        rc = cli_parse(argc, argv, 1, "platform", platform_help, "", NULL, NULL, NULL, pos, 66, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (n < 1) {
        fputs(platform_help, stderr);
        return CLI_EXIT_INPUT;
    }
    if (strcmp(pos[0], "show"))
        return cli_usage_error("platform", "unknown subcommand '%s'", pos[0]);
    if (n < 2) return cli_usage_error("platform show", "%s", "missing NAME or FILE");
    struct tps_error err = {0};
    struct plat_topo t;
    /* 'NAME k=v' as one word, as --platform takes it elsewhere, or NAME k=v ... as words */
    rc = n == 2 && strchr(pos[1], ' ')
             ? plat_spec_from_line(pos[1], &t, &err)
             : plat_spec_from_args(pos[1], n - 2, (char **)pos + 2, &t, &err);
    if (!rc) show_topology(&t);
    plat_topo_release(&t);
    return rc ? cli_report_error(&err) : 0;
}

/* ------------------------------------------------------------------ replay, trace-merge */

static const char replay_help[] =
    "usage: tpsim replay TRACE_DIR --platform SPEC [run options]\n"
    "\n"
    "Replays a recorded trace (the CUDA/NCCL tracer's, after tpsim trace-merge) on a modelled\n"
    "platform: compute ops take their recorded durations, collectives are simulated on the new\n"
    "fabric. The same as 'tpsim run TRACE_DIR --platform SPEC'; see tpsim run --help for the\n"
    "output options. Scaling a trace to another TP degree or GPU count is not supported.\n";

static int cmd_replay(int argc, char **argv)
{
    return run_command(argc, argv, "replay", replay_help);
}

static const char merge_help[] =
    "usage: tpsim trace-merge DIR [--platform SPEC] [-o OUT] [--force]\n"
    "\n"
    "Assembles the tracer's per-rank output in DIR (rank-NNNNN.tps, comms-NNNNN.tps) into a\n"
    "trace tpsim can replay: communicator groups across ranks, send/recv directions, meta.tps.\n"
    "The trace is written to OUT (default DIR/merged) through a temporary directory renamed into\n"
    "place: the recording in DIR is never changed, and a failed merge leaves nothing behind.\n"
    "'tpsim run DIR' and 'tpsim replay DIR' find DIR/merged by themselves.\n"
    "\n"
    "options:\n"
    "  --platform SPEC  record the platform the run happened on\n"
    "  -o OUT           where the merged trace goes (default DIR/merged)\n"
    "  --force          replace OUT when it exists (a recording merged before)\n"
    "  -h, --help       show this help\n";

struct merge_opts {
    const char *plat, *out;
    int force;
};

static int merge_option(int opt, const char *arg, void *ctx)
{
    struct merge_opts *o = ctx;
    if (opt == 'p') o->plat = arg;
    if (opt == 'o') o->out = arg;
    if (opt == 'f') o->force = 1;
    return 0;
}

static int cmd_trace_merge(int argc, char **argv)
{
    static const struct option longs[] = {
        {"platform", required_argument, NULL, 'p'}, {"force", no_argument, NULL, 'f'}, {0}};
    struct merge_opts o = {0};
    const char *dir = NULL;
    int n, rc = cli_parse(argc, argv, 1, "trace-merge", merge_help, "o:", longs, merge_option, &o,
                          &dir, 1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    const char *plat = o.plat, *out = o.out;
    int force = o.force;
    if (!dir) return cli_usage_error("trace-merge", "%s", "missing DIR");
    struct tps_error err = {0};
    if (trace_merge(dir, out, plat, force, &err)) return cli_report_error(&err);
    if (out)
        fprintf(stderr, "tpsim trace-merge: %s is ready to replay\n", out);
    else
        fprintf(stderr, "tpsim trace-merge: %s/merged is ready to replay ('tpsim run %s')\n", dir,
                dir);
    return 0;
}

/* ------------------------------------------------------------------ main */

/* The commands: dispatch and the main help both read this table. */
struct command {
    const char *name;
    const char *synopsis; /* operands shown in the help */
    const char *summary;  /* one line */
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"run", "SCENARIO|TRACE_DIR", "simulate one iteration and report (tpsim run --help)", cmd_run},
    {"trace", "SCENARIO -o DIR", "write the scenario's per-rank operations as a trace", cmd_trace},
    {"collective", "--platform P ...", "simulate one collective, nccl-tests style table",
     cmd_collective},
    {"platform", "show NAME|FILE", "print a topology and its GPU-to-GPU bandwidth matrix",
     cmd_platform},
    {"plan", "SCENARIO", "rank TP strategies (1D, 2D meshes, overlap) for a scenario", cli_plan},
    {"replay", "DIR --platform P", "replay a recorded trace on another fabric", cmd_replay},
    {"trace-merge", "DIR", "assemble the CUDA/NCCL tracer's per-rank output", cmd_trace_merge},
    {"import", "kineto|megatron ...",
     "PyTorch profiler traces to a trace; a Megatron-LM launch to a scenario", cli_import},
    {"sweep", "SCENARIO -j N", "run the scenario's sweep: points in parallel, rows to a CSV",
     cli_sweep},
    {"calibrate", "LOG --platform P", "fit a platform's links and latencies to an nccl-tests log",
     cli_calibrate},
    {"validate", "nccl|profile|trace", "compare simulations with real logs, profiles, traces",
     cli_validate},
};
#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void main_help(FILE *f)
{
    fputs("usage: tpsim COMMAND [options]\n"
          "\n"
          "tpsim simulates tensor-parallel training of transformers on modelled GPU fabrics with\n"
          "SimGrid, and tells how long an iteration takes and where the time goes.\n"
          "\n"
          "commands:\n",
          f);
    for (int i = 0; i < NCOMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].synopsis);
        fprintf(f, "  %-30s %s\n", head, commands[i].summary);
    }
    fputs("\n"
          "  -h, --help                     show this help; 'tpsim COMMAND --help' for a command\n"
          "  --version                      print the version\n"
          "\n"
          "Exit status: 0 success, 1 simulation failure, 2 usage or input error.\n",
          f);
}

/* Runs the command named by argv[1]. */
static int dispatch(int argc, char **argv)
{
    const char *cmd = argv[1];
    if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
        main_help(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tpsim %s\n", TPSIM_VERSION);
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tpsim: unknown command '%s'\nTry 'tpsim --help'.\n", cmd);
    return CLI_EXIT_INPUT;
}

/* Ends the process once everything of ours is released and standard output is closed. The
 * libraries' static destructors are skipped (ns-3's, loaded with SimGrid, take about 7 ms of a
 * 0.1 s run; the kernel returns their memory): tpsim registers none of its own. Sanitizer builds
 * exit normally, so that the leak checker still runs. */
static int main_exit(int code)
{
#ifdef TPSIM_SANITIZE
    return code;
#else
    fflush(stderr);
    _exit(code);
#endif
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    tps_inputs_guard(1); /* no output of this command may be written over one of its inputs */
    if (argc < 2) {
        main_help(stderr);
        return CLI_EXIT_INPUT;
    }
    int code = dispatch(argc, argv);
    /* output that did not reach standard output (a full disk, a closed pipe) is a failure */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        fprintf(stderr, "tpsim: cannot write the standard output: %s\n",
                errno ? strerror(errno) : "write error");
        return code ? code : CLI_EXIT_SIM;
    }
    return main_exit(code);
}
