/* test_hardening.c - one regression test per item of the hardening issue (crashes, runaways,
 * silent output loss, unlocated errors): each bad input must exit 2 with one line naming file,
 * line, column and field (or exit non-zero when output is lost), quickly and without a signal.
 * Fixtures: tests/data/hardening, and inputs generated into a private scratch directory. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(hardening, .timeout = 120 * TPSIM_TIMEOUT_SCALE);

#define FIX TPSIM_SOURCE_DIR "/tests/data/hardening/"

/* Runs `cmd` with its stderr (and stdout unless cmd redirects it) into out. */
static int sh(char *out, size_t len, const char *cmd)
{
    char full[8192];
    snprintf(full, sizeof full, "(%s) 2>&1", cmd);
    return testcmd_run(out, len, full);
}

/* Expects exit status `code`, one output line, and each of the NULL-terminated substrings. */
static void expect(const char *cmd, int code, const char *const *want)
{
    static char out[65536];
    int rc = sh(out, sizeof out, cmd);
    cr_assert(eq(int, rc, code), "%s\n-> %s", cmd, out);
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    cr_assert(le(int, lines, 1), "more than one line: %s\n-> %s", cmd, out);
    for (; *want; want++)
        cr_assert(strstr(out, *want) != NULL, "%s\n-> %s\n(missing '%s')", cmd, out, *want);
}

static char dir[256];

static void scratch_fini(void)
{
    if (dir[0]) testdir_remove(dir);
}

static const char *put(const char *name, const char *text)
{
    if (!dir[0]) cr_assert_not_null(testdir_make(dir, sizeof dir));
    static char paths[8][400];
    static int k;
    char *p = paths[k++ % 8];
    snprintf(p, 400, "%s/%s", dir, name);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir(p, 0700);
    *slash = '/';
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

TestSuite(hardening_gen, .timeout = 120 * TPSIM_TIMEOUT_SCALE, .fini = scratch_fini);

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})
#define T      TPSIM_BIN

/* 1. A platform file that includes itself, or two that include each other. */
Test(hardening, 01_platform_includes_form_no_cycle)
{
    expect(T " platform show " FIX "self.yaml", 2,
           W("self.yaml:1:7: field 'file'", "includes itself"));
    expect(T " run " FIX "includes-cycle.yaml", 2,
           W("mutual-b.yaml:1:7: field 'file'", "through other files"));
}

/* 2. An nccl-tests header with algbw after busbw/#wrong, and a row without its algbw field. */
Test(hardening, 02_nccl_log_rows_hold_every_column_the_header_names)
{
    expect(T " calibrate " FIX "algbw-last.raw.txt --platform dgx-a100 --op all_reduce --ranks 8",
           2, W("algbw-last.raw.txt:5:", "field 'algbw'", "the out-of-place columns need 9"));
}

/* 3. 16,384 layers x 100,000 micro-batches: refused before anything is allocated; a job of 1e8
 * layers (its op count once built 1e8 layers' ops: 32 GiB) at the layer bound; a tiny trace
 * meta with huge counts too. */
Test(hardening_gen, 03_huge_programs_are_refused_before_allocation)
{
    expect(T " run " FIX "layers-huge.yaml", 2,
           W("layers-huge.yaml:5:15: field 'run.layers'", "TPSIM_MAX_OPS"));
    expect(T " run " FIX "job-layers-1e8.yaml", 2,
           W("job-layers-1e8.yaml:1:40: field 'model.layers'", "at most 16384"));
    const char *meta =
        put("huge/meta.tps", "tpsim-trace 2\nranks 1\nlayers 1000000\nmicro_batches 1000000\n");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, T " run %.*s --platform dgx-a100", (int)(strlen(meta) - 9), meta);
    expect(cmd, 2, W("meta.tps:4:15: field 'micro_batches'", "above the limit"));
}

/* 3b. Work the input does not bound: a link slowed for 1 ns every 2 ns (63 s for a 29 ms
 * iteration, the work growing with simulated time over the period) stops at PLAT_MAX_LINK_PERIODS
 * periods with an error located at its `every`. */
Test(hardening, 03b_a_periodic_slowdown_stops_at_its_bound_with_a_located_error)
{
    expect(T " run " FIX "degraded-every-2ns.yaml", 2,
           W("degraded-every-2ns.yaml:3:107: field 'platform.degraded_links[0].every'",
             "100000 periods", "give a longer period"));
}

/* 3c. Errors a later stage raises (folding, planning) name the scenario's file, line and field,
 * and a job named by default as another job is named is located at the job. */
Test(hardening, 03c_errors_of_later_stages_are_located_in_the_scenario)
{
    expect("TPSIM_MAX_OPS=1000 " T " run " FIX "job-small.yaml", 2,
           W("job-small.yaml:1:8: field 'layers'", "above the limit of 1e+03"));
    expect(T " plan " FIX "plan-none-fits.yaml", 2,
           W("plan-none-fits.yaml:4:16: field 'strategy.tp'", "none of the"));
    expect(T " run " FIX "jobs-default-name.yaml", 2,
           W("jobs-default-name.yaml:8:5: field 'jobs[1].name'", "already named 'job2'"));
}

/* 4. A sweep into a device that is not a regular file ends at once. */
Test(hardening, 04_sweep_into_dev_full_ends)
{
    expect(T " sweep " TPSIM_SOURCE_DIR "/scenarios/sweep-example.yaml -o /dev/full", 2,
           W("/dev/full is not a regular file"));
}

/* 5. A million nested brackets: refused in linear time before libyaml sees them. */
Test(hardening_gen, 05_deep_nesting_is_refused_before_parsing)
{
    char *text = malloc(1000020);
    strcpy(text, "model: ");
    memset(text + 7, '[', 1000000);
    strcpy(text + 1000007, "\n");
    const char *p = put("deep.yaml", text);
    free(text);
    char cmd[512];
    snprintf(cmd, sizeof cmd, T " run %s", p);
    expect(cmd, 2, W("deep.yaml:1:72:", "nested more than 64 levels"));
    p = put("dashes.yaml", "model:\n- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - "
                           "- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - "
                           "- - x\n");
    snprintf(cmd, sizeof cmd, T " run %s", p);
    expect(cmd, 2, W("dashes.yaml:2:", "nested more than 64 levels"));
}

/* 6. A trace of 100k ops with distinct names: names are interned through a hash (it took 12.6 s
 * with a linear scan; the test's timeout would catch a return to quadratic behaviour on 300k). */
Test(hardening_gen, 06_many_distinct_op_names_read_in_linear_time,
     .timeout = 60 * TPSIM_TIMEOUT_SCALE)
{
    put("names/meta.tps", "tpsim-trace 2\nranks 1\nlayers 1\nmicro_batches 1\n");
    char *rank = malloc(300000 * 64 + 64), *q = rank;
    q += sprintf(q, "tpsim-trace 2 rank 0\n");
    for (int i = 0; i < 300000; i++)
        q += sprintf(q, "%d 0 compute fwd 0 0 op%d 1e-06 0 0 -1 - - -\n", i, i);
    const char *p = put("names/rank-00000.tps", rank);
    free(rank);
    char cmd[512];
    snprintf(cmd, sizeof cmd, T " run %.*s --platform dgx-a100 -q", (int)(strlen(p) - 15), p);
    expect(cmd, 0, W(""));
}

/* 7. Output that cannot be written (a full device) is a failure, never exit 0. */
Test(hardening_gen, 07_lost_output_exits_non_zero)
{
    static const char *const cmds[] = {
        T " run " TPSIM_SOURCE_DIR "/tests/data/good/tiny.yaml > /dev/full",
        T " collective --platform dgx-a100 --bytes 1M > /dev/full",
        T " platform show dgx-a100 > /dev/full",
        T " calibrate " TPSIM_REFDATA "/nccl/h100_hgx_4gpu_all_reduce.raw.txt --platform dgx-h100 "
          "2>&1 > /dev/full | tail -1",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        expect(cmds[i], i == 3 ? 0 : 1, W("cannot write the standard output"));
    /* (calibrate prints its fit on stderr: the last line is the one that matters; its exit
     * status, through the pipe, is checked here) */
    char out[4096];
    cr_assert(eq(int,
                 sh(out, sizeof out,
                    T " calibrate " TPSIM_REFDATA "/nccl/h100_hgx_4gpu_all_reduce.raw.txt "
                      "--platform dgx-h100 > /dev/full 2>/dev/null"),
                 1));
    put("ro/x", "");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, T " validate nccl --out /dev/full/x > /dev/null");
    expect(cmd, 2, W("cannot create /dev/full/x"));
}

/* 8. trace-merge never rewrites the recording: tests/tracer (with the mocks) runs a merge twice;
 * here a merged trace directory given as a recording is refused. */
Test(hardening_gen, 08_trace_merge_refuses_a_merged_trace)
{
    put("merged/meta.tps", "tpsim-trace 2\nranks 1\nlayers 1\nmicro_batches 1\n");
    put("merged/rank-00000.tps", "tpsim-trace 2 rank 0\n");
    char cmd[512];
    snprintf(cmd, sizeof cmd, T " trace-merge %s/merged", dir);
    expect(cmd, 2, W("already a replayable trace"));
}

/* 9. A sweep killed after its header and before its first row resumes with one header. */
Test(hardening_gen, 09_resume_after_a_kill_before_the_first_row_has_one_header)
{
    char out[4096], cmd[1024];
    const char *scn = put("s.yaml", "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\n"
                                    "strategy: {tp: 2}\nrun: {layers: 1}\nsweep:\n"
                                    "  strategy.tp: [1, 2]\n");
    snprintf(cmd, sizeof cmd, T " sweep %s -j 1 -o %s/s.csv && head -1 %s/s.csv > %s/h.csv", scn,
             dir, dir, dir);
    cr_assert(eq(int, sh(out, sizeof out, cmd), 0), "%s", out);
    snprintf(cmd, sizeof cmd,
             T " sweep %s -j 1 -o %s/h.csv --resume > /dev/null 2>&1 && grep -c '^point,' %s/h.csv",
             scn, dir, dir);
    cr_assert(eq(int, sh(out, sizeof out, cmd), 0), "%s", out);
    cr_assert(eq(str, out, "1\n"));
}

/* 10. A key swept twice is an error (values with quotes and newlines: tests/cli/test_cli.c). */
Test(hardening, 10_a_key_swept_twice_is_an_error)
{
    expect(T " sweep " FIX "sweep-duplicate-key.yaml -o /dev/null", 2,
           W("sweep-duplicate-key.yaml:8:3: field 'sweep.strategy.tp'", "swept twice"));
}

/* 11. Values that pass a type check but overflow the simulation are refused at load. */
Test(hardening_gen, 11_values_out_of_physical_range_are_refused_at_load)
{
    expect(T " run " FIX "peak-tiny.yaml", 2,
           W("peak-tiny.yaml:2:42: field 'device.peak_tflops'", "between"));
    expect(T " run " FIX "hbm-tiny.yaml", 2,
           W("hbm-tiny.yaml:2:44: field 'device.hbm_bandwidth'", "1 kB/s"));
    static const char *const meta = "tpsim-trace 2\nranks 2\nlayers 1\nmicro_batches 1\n"
                                    "group 0 0 1\n";
    static const char *const bad[][3] = {
        {"0 0 gemm fwd 0 0 g 1e308 1e9 0 -1 - - -", "field 'dur_s'", "at most"},
        {"0 0 gemm fwd 0 0 g 1e-05 1e308 0 -1 - - -", "field 'flop'", "at most"},
        {"0 0 gemm fwd 0 0 g 1e-05 1e9 1e300 -1 - - -", "field 'bytes'", "at most"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[64], text[512], cmd[1024];
        snprintf(name, sizeof name, "v%zu/meta.tps", i);
        put(name, meta);
        for (int r = 0; r < 2; r++) {
            snprintf(name, sizeof name, "v%zu/rank-%05d.tps", i, r);
            snprintf(text, sizeof text,
                     "tpsim-trace 2 rank %d\n%s\n1 1 all_reduce fwd 0 0 ar 0 0 1048576 0 0 - -\n",
                     r, r ? "0 0 gemm fwd 0 0 g 1e-05 1e9 0 -1 - - -" : bad[i][0]);
            put(name, text);
        }
        snprintf(cmd, sizeof cmd, T " run %s/v%zu --platform dgx-a100", dir, i);
        expect(cmd, 2, (const char *const[]){"rank-00000.tps:2:", bad[i][1], bad[i][2], NULL});
    }
}

/* A two-rank trace whose rank files hold the given op lines (after the header). */
static const char *trace(const char *name, const char *meta, const char *r0, const char *r1)
{
    char path[128];
    snprintf(path, sizeof path, "%s/meta.tps", name);
    put(path, meta);
    const char *ops[2] = {r0, r1};
    for (int r = 0; r < 2; r++) {
        snprintf(path, sizeof path, "%s/rank-%05d.tps", name, r);
        size_t len = strlen(ops[r]) + 64;
        char *text = malloc(len);
        snprintf(text, len, "tpsim-trace 2 rank %d\n%s", r, ops[r]);
        put(path, text);
        free(text);
    }
    static char d[400];
    snprintf(d, sizeof d, "%s/%s", dir, name);
    return d;
}

/* 11 and 12. What a replay would trip on is found when the trace is read, at file and line. */
Test(hardening_gen, 12_trace_errors_are_found_at_read_with_their_line)
{
    const char *meta2 = "tpsim-trace 2\nranks 2\nlayers 1\nmicro_batches 1\ngroup 0 0 1\n";
    const char *ar = "0 1 all_reduce fwd 0 0 ar 0 0 1048576 0 - - -\n";
    char cmd[1024];
    /* collectives of different sizes across the members */
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100",
             trace("sizes", meta2, ar, "0 1 all_reduce fwd 0 0 ar 0 0 2097152 0 - - -\n"));
    expect(cmd, 2, W("sizes/rank-00001.tps:2:1: field 'bytes'", "same collectives"));
    /* a rank that issues fewer collectives than its peers would hang them: found at read */
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100",
             trace("fewer", meta2,
                   "0 1 all_reduce fwd 0 0 ar 0 0 1048576 0 - - -\n"
                   "1 1 all_reduce fwd 0 0 ar 0 0 1048576 0 - - -\n",
                   ar));
    expect(cmd, 2, W("fewer/rank-00001.tps:2:1: field 'group'", "issues 1 collectives on group 0"));
    /* a rank not in its group */
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100",
             trace("member",
                   "tpsim-trace 2\nranks 2\nlayers 1\nmicro_batches 1\ngroup 0 0 1\ngroup 1 0\n",
                   ar, "0 1 all_reduce fwd 0 0 ar 0 0 1048576 1 - - -\n"));
    expect(cmd, 2, W("member/rank-00001.tps:2:1: field 'group'", "not in group 1"));
    /* a group used from two streams */
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100",
             trace("streams", meta2,
                   "0 1 all_reduce fwd 0 0 a 0 0 64 0 - - -\n1 2 all_reduce fwd 0 0 b 0 0 64 0 - "
                   "- -\n",
                   "0 1 all_reduce fwd 0 0 a 0 0 64 0 - - -\n1 2 all_reduce fwd 0 0 b 0 0 64 0 - "
                   "- -\n"));
    expect(cmd, 2, W("streams/rank-00000.tps:3:1: field 'stream'", "deadlock"));
    /* send/recv in a group of one (over three it is a shift, docs/collectives.md) */
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100",
             trace("sr1", "tpsim-trace 2\nranks 2\nlayers 1\nmicro_batches 1\ngroup 0 0\n",
                   "0 1 send_recv fwd 0 0 s 0 0 64 0 - - -\n", ""));
    expect(cmd, 2, W("sr1/rank-00000.tps:2:1: field 'group'", "group of at least 2"));
    /* more ranks than the platform's GPUs */
    snprintf(cmd, sizeof cmd,
             T " trace " TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml -o %s/q8 > /dev/null && " T
               " run %s/q8 --platform rtx3090-4gpu",
             dir, dir);
    expect(cmd, 2, W("q8/meta.tps:2:1: field 'ranks'", "only 4 GPUs"));
    /* 5,000 groups are fine: there is no hidden limit */
    char *meta = malloc(5000 * 24 + 128), *ops = malloc(5000 * 64 + 64);
    char *m = meta + sprintf(meta, "tpsim-trace 2\nranks 2\nlayers 1\nmicro_batches 1\n"), *o = ops;
    for (int g = 0; g < 5000; g++) {
        m += sprintf(m, "group %d 0 1\n", g);
        o += sprintf(o, "%d 1 all_reduce fwd 0 0 ar 0 0 64 %d - - -\n", g, g);
    }
    snprintf(cmd, sizeof cmd, T " run %s --platform dgx-a100 -q", trace("g5000", meta, ops, ops));
    free(meta);
    free(ops);
    expect(cmd, 0, W(""));
    /* a topology whose route between two GPUs is longer than a route can be */
    char *topo = malloc(8192), *tq = topo;
    tq += sprintf(tq, "name: chain\ngpus: 2\nnodes:\n");
    for (int i = 0; i < 40; i++)
        tq += sprintf(tq, "  - {name: sw%d}\n", i);
    tq += sprintf(tq, "links:\n  - {between: [gpu0, sw0], bandwidth: 100GBps}\n");
    for (int i = 1; i < 40; i++)
        tq += sprintf(tq, "  - {between: [sw%d, sw%d], bandwidth: 100GBps}\n", i - 1, i);
    sprintf(tq, "  - {between: [sw39, gpu1], bandwidth: 100GBps}\n");
    const char *lp = put("long.yaml", topo);
    free(topo);
    snprintf(cmd, sizeof cmd, T " collective --platform %s --bytes 1M", lp);
    expect(cmd, 2, W("long.yaml:45:3: field 'links'", "more than 32"));
    /* user SimGrid XML with a zero bandwidth: located before SimGrid sees it */
    expect(T " collective --platform " FIX "zero-bandwidth.xml --bytes 1M", 2,
           W("zero-bandwidth.xml:6:24: field 'bandwidth'", "positive"));
}

/* 13. Integer overflows, positions, and what an error echoes. */
Test(hardening_gen, 13_overflows_positions_and_echoes)
{
    expect(T " calibrate " FIX "huge.raw.txt --platform dgx-a100", 2,
           W("huge.meta.yaml:3:8: field 'nodes'", "16777216"));
    /* a traced layer of 2^31-1 is refused by the merge, not wrapped */
    put("rec/rank-00000.tps", "tpsim-trace 2 rank 0\n0 0 gemm fwd 2147483647 -1 sgemm 0.0001 "
                              "1000 0 -1 - 0 0.0001\n");
    put("rec/comms-00000.tps", "");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, T " trace-merge %s/rec", dir);
    expect(cmd, 2, W("rank-00000.tps:2:1: field 'layer'"));
    /* a directory named like a SimGrid file */
    put("plat.xml/x", "");
    snprintf(cmd, sizeof cmd, T " platform show %s/plat.xml", dir);
    expect(cmd, 2, W("plat.xml: not a SimGrid platform file (a directory)"));
    expect(T " run " FIX "two-documents.yaml", 2, W("two-documents.yaml:5:1:", "second YAML"));
    expect(T " platform show dgx-a100 =5", 2, W("field 'platform'", "key=value"));
    expect(T " collective --platform dgx-a100 --ranks 99999999999 --bytes 1M 2>&1 | head -1", 0,
           W("bad --ranks"));
    /* control bytes in a bad value are escaped, not sent to the terminal */
    const char *p = put("ctl.yaml", "model: \"gpt\\e[31mred\"\n");
    snprintf(cmd, sizeof cmd, T " run %s", p);
    expect(cmd, 2, W("gpt\\x1b[31mred"));
}

/* A process's parent and state from /proc/PID/stat (0 when it is gone). */
static int proc_stat(pid_t pid, int *ppid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    char *rp = strrchr(buf, ')'); /* the command name may hold spaces */
    return rp && sscanf(rp + 2, "%c %d", state, ppid) == 2;
}

/* A child of ppid that is running (not a zombie), or 0. */
static pid_t child_of(pid_t ppid)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        int pp;
        char st;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid > 0 && proc_stat(pid, &pp, &st) && pp == ppid && st != 'Z') found = pid;
    }
    if (d) closedir(d);
    return found;
}

/* A signal to tpsim ends its forked simulation too: no orphan goes on computing after a kill
 * (the 1,024-GPU job simulates for about 6 s; it is killed once its simulation has run 0.5 s). */
Test(hardening_gen, 14_a_signal_to_tpsim_ends_its_simulation)
{
    pid_t pid = fork();
    cr_assert(ge(int, pid, 0));
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(TPSIM_BIN, "tpsim", "run", TPSIM_SOURCE_DIR "/bench/gpt3-175b-1024-a100.yaml",
              (char *)NULL);
        _exit(127);
    }
    pid_t sim = 0;
    int seen = 0; /* polls in a row that found the same simulation */
    for (int i = 0; i < 6000 && seen < 50; i++) {
        usleep(10000);
        pid_t c = child_of(pid);
        seen = c && c == sim ? seen + 1 : 0;
        sim = c;
    }
    cr_assert(ge(int, seen, 50), "tpsim ran no simulation for 0.5 s");
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    int pp, alive = 1;
    char st = 0;
    for (int i = 0; i < 300 && alive; i++) {
        usleep(10000);
        alive = proc_stat(sim, &pp, &st) && st != 'Z';
    }
    if (alive) kill(sim, SIGKILL);
    cr_assert(eq(int, alive, 0), "the simulation (pid %d, state %c) outlived tpsim by 3 s",
              (int)sim, st);
}
