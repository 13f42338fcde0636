/* cli_import.c - `tpsim import kineto`: PyTorch profiler traces into tpsim's trace format
 * (validate/kineto.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cliutil.h"
#include "validate/kineto.h"

#define MAX_FILES 4096

static const char import_help[] =
    "usage: tpsim import kineto TRACE.json[.gz] [TRACE ...] [-o DIR] [--rank N]\n"
    "                           [--platform SPEC]\n"
    "\n"
    "Converts PyTorch profiler (Kineto) traces, Chrome trace JSON, gzip'ed or not, into a tpsim\n"
    "trace with recorded times: one rank per file (its distributedInfo.rank), several files\n"
    "merged as ranks. GPU kernels become ops: GEMMs and batched GEMMs sized from the launching\n"
    "aten op's shapes, NCCL kernels as their collectives sized from the c10d op, any other\n"
    "kernel an opaque compute op with its measured duration. Each op keeps its host launch time,\n"
    "so 'tpsim replay DIR --platform P' on the platform it ran on reproduces the recording, and\n"
    "'tpsim validate trace DIR --scenario S' prices its GEMMs with the compute model. No\n"
    "LD_PRELOAD is needed: this is the path for any PyTorch program (docs/tracer.md).\n"
    "\n"
    "options:\n"
    "  -o DIR           where the trace goes (default kineto-trace)\n"
    "  --rank N         the rank of a single file (default: its distributedInfo.rank)\n"
    "  --platform SPEC  record the platform the run happened on\n"
    "  -h, --help       show this help\n";

struct import_opts {
    const char *out, *plat, *rank;
};

static int import_option(int opt, const char *arg, void *ctx)
{
    struct import_opts *o = ctx;
    if (opt == 'o') o->out = arg;
    if (opt == 'p') o->plat = arg;
    if (opt == 'r') o->rank = arg;
    return 0;
}

int cli_import(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "kineto") != 0) {
        if (argc >= 2 && cli_is_help(argv[1])) {
            fputs(import_help, stdout);
            return 0;
        }
        if (argc < 2) return cli_usage_error("import", "%s", "missing the format (kineto)");
        return cli_usage_error("import", "unknown format '%s' (expected kineto)", argv[1]);
    }
    static const struct option longs[] = {
        {"platform", required_argument, NULL, 'p'}, {"rank", required_argument, NULL, 'r'}, {0}};
    struct import_opts o = {"kineto-trace", NULL, NULL};
    static const char *files[MAX_FILES];
    int n = 0, rc = cli_parse(argc, argv, 2, "import kineto", import_help, "o:", longs,
                              import_option, &o, files, MAX_FILES, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (!n) return cli_usage_error("import kineto", "%s", "missing TRACE.json[.gz]");
    long rank = -1;
    if (o.rank && cli_parse_count("import kineto", "--rank", o.rank, 0, 1 << 20, &rank))
        return CLI_EXIT_INPUT;
    if (o.rank && n > 1)
        return cli_usage_error("import kineto", "%s", "--rank applies to a single file");
    struct tps_error err = {0};
    struct kin_summary s;
    if (kin_import(files, n, (int)rank, o.out, o.plat, &s, &err)) return cli_report_error(&err);
    printf("imported   %d rank%s into %s\n", s.nranks, s.nranks == 1 ? "" : "s", o.out);
    printf("rank 0     %d ops: %d GEMMs, %d batched GEMMs, %d collectives, %d opaque kernels\n",
           s.ops, s.gemms, s.attns, s.colls, s.opaque);
    printf("           GPU busy %.3f ms of a %.3f ms span; launch latency %.1f us\n",
           s.busy_s * 1e3, s.span_s * 1e3, s.launch_latency_s * 1e6);
    return 0;
}
