/* cli_import.c - `tpsim import kineto`: PyTorch profiler traces into tpsim's trace format
 * (validate/kineto.h); `tpsim import megatron`: a Megatron-LM launch into a scenario
 * (validate/megatron.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cliutil.h"
#include "validate/kineto.h"
#include "validate/megatron.h"

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

static const char megatron_help[] =
    "usage: tpsim import megatron SCRIPT.sh [-o SCENARIO.yaml] [--device D] [--platform P]\n"
    "                             [--gpus N] [--name NAME]\n"
    "       tpsim import megatron [options] -- MEGATRON-LM FLAGS...\n"
    "\n"
    "Turns a Megatron-LM launch into a tpsim scenario: the flags of the command in SCRIPT that\n"
    "runs a training script (pretrain_gpt.py), or the flags after '--'. The script's\n"
    "assignments, expansions, quotes, eval and if/else tests are evaluated as the shell would;\n"
    "what cannot be (a command's output, a file test, a loop) is said on stderr. The model's\n"
    "shape, the parallel sizes (tensor, pipeline, context, expert, virtual pipeline), batch\n"
    "sizes, recomputation, sequence parallelism, the distributed optimizer, the overlap flags,\n"
    "FP8, TE's TP overlap and the tokens to train on become scenario keys (docs/import.md);\n"
    "every other flag is named on stderr and in the scenario's header as ignored. The GPUs are\n"
    "the launcher's (torchrun --nproc_per_node x --nnodes, srun), else what the parallel sizes\n"
    "need; the data-parallel size is what is left.\n"
    "\n"
    "options:\n"
    "  -o FILE          write the scenario there (default: standard output)\n"
    "  --device D       the device preset (default H100-SXM)\n"
    "  --platform P     the platform preset, machines of 8 GPUs (default dgx-h100)\n"
    "  --gpus N         all GPUs of the job (default: the launcher's)\n"
    "  --name NAME      the scenario's name (default: the script's file name)\n"
    "  -h, --help       show this help\n";

struct mg_cli {
    const char *out, *device, *platform, *name, *gpus;
};

static int megatron_option(int opt, const char *arg, void *ctx)
{
    struct mg_cli *o = ctx;
    if (opt == 'o') o->out = arg;
    if (opt == 'd') o->device = arg;
    if (opt == 'p') o->platform = arg;
    if (opt == 'n') o->name = arg;
    if (opt == 'g') o->gpus = arg;
    return 0;
}

static int import_megatron(int argc, char **argv)
{
    static const struct option longs[] = {{"device", required_argument, NULL, 'd'},
                                          {"platform", required_argument, NULL, 'p'},
                                          {"gpus", required_argument, NULL, 'g'},
                                          {"name", required_argument, NULL, 'n'},
                                          {0}};
    const char *cmd = "import megatron";
    int dash = argc; /* the flags after "--" are Megatron-LM's */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            dash = i;
            break;
        }
    struct mg_cli o = {0};
    const char *script = NULL;
    int n = 0, rc = cli_parse(dash, argv, 2, cmd, megatron_help, "o:", longs, megatron_option, &o,
                              &script, 1, &n);
    if (rc) return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (!script == (dash == argc))
        return cli_usage_error(cmd, "%s", "give a launch script, or the flags after '--'");
    long gpus = 0;
    if (o.gpus && cli_parse_count(cmd, "--gpus", o.gpus, 1, 1L << 24, &gpus)) return CLI_EXIT_INPUT;
    struct stat a, b;
    if (o.out && script && stat(o.out, &a) == 0 && stat(script, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return cli_usage_error(cmd, "-o '%s' is the script itself", o.out);
    static struct mg_launch l;
    struct tps_error err = {0};
    rc = script ? mg_read_script(script, &l, &err)
                : mg_read_args(argc - dash - 1, (const char *const *)argv + dash + 1, &l, &err);
    if (rc) return cli_report_error(&err);
    char name[64] = "megatron";
    if (o.name) {
        snprintf(name, sizeof name, "%s", o.name);
    } else if (script) {
        const char *base = strrchr(script, '/') ? strrchr(script, '/') + 1 : script;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
    }
    struct mg_opts mo = {name, o.device, o.platform, 8, gpus};
    char *yaml, *ignored, *notes;
    if (mg_scenario(&l, &mo, &yaml, &ignored, &notes, &err)) return cli_report_error(&err);
    FILE *f = o.out ? fopen(o.out, "w") : stdout;
    int ok = f && fputs(yaml, f) >= 0;
    if (o.out && f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "tpsim %s: %s: cannot write\n", cmd, o.out ? o.out : "stdout");
    if (ok && ignored[0]) fprintf(stderr, "tpsim %s: ignored (not modelled): %s\n", cmd, ignored);
    for (char *s = notes, *e; ok && *s; s = *e ? e + 1 : e) {
        e = strchr(s, '\n') ? strchr(s, '\n') : s + strlen(s);
        fprintf(stderr, "tpsim %s: note: %.*s\n", cmd, (int)(e - s), s);
    }
    if (ok && o.out)
        fprintf(stderr, "tpsim %s: wrote %s; 'tpsim run %s' runs it\n", cmd, o.out, o.out);
    free(yaml);
    free(ignored);
    free(notes);
    return ok ? 0 : CLI_EXIT_INPUT;
}

int cli_import(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "megatron")) return import_megatron(argc, argv);
    if (argc < 2 || strcmp(argv[1], "kineto") != 0) {
        if (argc >= 2 && cli_is_help(argv[1])) {
            fputs(import_help, stdout);
            fputs("\n", stdout);
            fputs(megatron_help, stdout);
            return 0;
        }
        if (argc < 2)
            return cli_usage_error("import", "%s", "missing the format (kineto or megatron)");
        return cli_usage_error("import", "unknown format '%s' (expected kineto or megatron)",
                               argv[1]);
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
    if (o.rank && cli_parse_count("import kineto", "--rank", o.rank, 0, KIN_MAX_RANK, &rank))
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
