/* test_trace.c - the text trace format round-trips exactly and rejects bad files with a
 * position and a field. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/strategy.h"
#include "core/trace.h"

TestSuite(trace);

static void lower(struct mdl_program *p, bool sp)
{
    struct mdl_model m;
    struct mdl_device d;
    mdl_model_preset("gpt3-2.7b", &m);
    mdl_device_preset("H100-SXM", &d);
    struct mdl_strategy st = {
        .kind = MDL_STRAT_1D, .tp = 4, .sequence_parallel = sp, .async_grad_allreduce = true};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &d, NULL, 3, 2, p, &err), 0));
}

static void tmpdir(char *buf)
{
    strcpy(buf, "/tmp/tpsim-trace-XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
}

static void rmdir_all(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert(eq(int, system(cmd), 0));
}

Test(trace, written_then_read_is_identical)
{
    struct mdl_program a, b;
    lower(&a, true);
    a.hw_queues = 2; /* framework.cuda_device_max_connections */
    char dir[64];
    tmpdir(dir);
    struct tps_error err = {0};
    cr_assert(eq(int, trace_write(&a, "dgx-h100 nodes=1", dir, &err), 0), "%s", err.msg);
    char plat[128];
    cr_assert(eq(int, trace_read(dir, &b, plat, sizeof plat, &err), 0), "%s:%d: %s", err.path,
              err.line, err.msg);
    cr_assert(eq(str, plat, "dgx-h100 nodes=1"));
    cr_assert(eq(int, b.nranks, a.nranks));
    cr_assert(eq(int, b.ngroups, a.ngroups));
    cr_assert(eq(int, b.layers, 3));
    cr_assert(eq(int, b.micro_batches, 2));
    cr_assert(eq(int, b.hw_queues, 2));
    for (int r = 0; r < a.nranks; r++) {
        cr_assert(eq(int, b.ranks[r].nops, a.ranks[r].nops));
        for (int i = 0; i < a.ranks[r].nops; i++) {
            const struct mdl_op *x = &a.ranks[r].ops[i], *y = &b.ranks[r].ops[i];
            cr_assert(eq(int, x->kind, y->kind));
            cr_assert(eq(int, x->stream, y->stream));
            cr_assert(eq(int, x->ndeps, y->ndeps));
            cr_assert(eq(dbl, x->dur_s, y->dur_s));
            cr_assert(eq(dbl, x->flop, y->flop));
            cr_assert(eq(dbl, x->bytes, y->bytes));
            cr_assert(eq(str, a.names[x->name], b.names[y->name]));
        }
    }
    mdl_program_release(&a);
    mdl_program_release(&b);
    rmdir_all(dir);
}

/* Writes a valid trace, then replaces line `line` of rank 0's file with `text`. */
static void corrupt(const char *dir, int line, const char *text)
{
    char path[256], tmp[300];
    snprintf(path, sizeof path, "%s/rank-00000.tps", dir);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
    char buf[4096];
    for (int n = 1; fgets(buf, sizeof buf, in); n++)
        fputs(n == line ? text : buf, out);
    fclose(in);
    fclose(out);
    rename(tmp, path);
}

struct bad_line {
    const char *text;
    int col;
    const char *field;
};

Test(trace, rejects_bad_lines_naming_line_column_and_field)
{
    static const struct bad_line cases[] = {
        {"0 0 warp fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 0 0 0\n", 5, "kind"},
        {"0 0 mem fwd 0 0 ln1 -1 0 100 -1 - - - 0 0 0 0\n", 21, "dur_s"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0\n", 41, "op"},
        {"0 0 mem sideways 0 0 ln1 1e-6 0 100 -1 - - - 0 0 0 0\n", 9, "phase"},
        {"0 0 mem fwd 7 0 ln1 1e-6 0 100 -1 - - - 0 0 0 0\n", 13, "layer"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 5 - - 0 0 0 0\n", 35, "deps"},
        {"0 1 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 0 0 0\n", 3, "stream"},
        {"3 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 0 0 0\n", 1, "id"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - 2.0 1.0 0 0 0 0\n", 41, "rec_end"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - x 1.0 0 0 0 0\n", 37, "rec_start"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - x 0 0 0\n", 41, "launch_s"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 -2 0 0\n", 43, "iter"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 0 2 0\n", 45, "warmup"},
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1 - - - 0 0 0 2\n", 47, "sync"},
        /* a root names a member of a broadcast's or a reduce's group, and nothing else's */
        {"0 0 mem fwd 0 0 ln1 1e-6 0 100 -1:1 - - - 0 0 0 0\n", 32, "group"},
        {"0 1 all_reduce fwd 0 0 ar 0 0 100 0:1 - - - 0 0 0 0\n", 35, "group"},
        {"0 1 broadcast fwd 0 0 b 0 0 100 0:99 - - - 0 0 0 0\n", 33, "group"},
        {"0 1 reduce fwd 0 0 r 0 0 100 0:x - - - 0 0 0 0\n", 30, "group"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mdl_program a, b;
        lower(&a, false);
        char dir[64];
        tmpdir(dir);
        struct tps_error err = {0};
        trace_write(&a, NULL, dir, &err);
        corrupt(dir, 3, cases[i].text);
        cr_assert(ne(int, trace_read(dir, &b, NULL, 0, &err), 0), "case %zu accepted", i);
        cr_assert(strstr(err.path, "rank-00000.tps") != NULL);
        cr_assert(eq(int, err.line, 3), "case %zu line %d", i, err.line);
        cr_assert(eq(int, err.col, cases[i].col), "case %zu col %d (%s)", i, err.col, err.msg);
        cr_assert(eq(str, err.field, (char *)cases[i].field), "case %zu", i);
        mdl_program_release(&a);
        mdl_program_release(&b);
        rmdir_all(dir);
    }
}

Test(trace, rejects_truncated_meta_and_wrong_version)
{
    char dir[64];
    tmpdir(dir);
    char path[128];
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    FILE *f = fopen(path, "w");
    fputs("tpsim-trace 6\nranks 1\n", f);
    fclose(f);
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(ne(int, trace_read(dir, &p, NULL, 0, &err), 0));
    cr_assert(eq(str, err.field, "version"));
    cr_assert(eq(int, err.line, 1));
    mdl_program_release(&p);
    f = fopen(path, "w");
    fputs("tpsim-trace 1\nlayers 2\n", f);
    fclose(f);
    struct tps_error e2 = {0};
    cr_assert(ne(int, trace_read(dir, &p, NULL, 0, &e2), 0));
    cr_assert(eq(str, e2.field, "ranks"));
    mdl_program_release(&p);
    /* hardware queues outside 1..32 (framework.cuda_device_max_connections) */
    f = fopen(path, "w");
    fputs("tpsim-trace 5\nranks 1\nhw_queues 0\n", f);
    fclose(f);
    struct tps_error e3 = {0};
    cr_assert(ne(int, trace_read(dir, &p, NULL, 0, &e3), 0));
    cr_assert(eq(str, e3.field, "hw_queues"), "%s", e3.msg);
    cr_assert(eq(int, e3.line, 3));
    mdl_program_release(&p);
    rmdir_all(dir);
}

Test(trace, version_1_still_reads_and_recorded_times_round_trip)
{
    struct mdl_program a, b;
    lower(&a, false);
    for (int i = 0; i < a.ranks[0].nops; i++) {
        a.ranks[0].ops[i].recorded = 1;
        a.ranks[0].ops[i].rec_start = i * 1e-3 + 1.0 / 3;
        a.ranks[0].ops[i].rec_end = i * 1e-3 + 2.0 / 3;
        a.ranks[0].ops[i].iter = i % 3 - 1;
        a.ranks[0].ops[i].warmup = (uint8_t)(i % 2);
        a.ranks[0].ops[i].host_sync = (uint8_t)(i % 3 == 0);
    }
    char dir[64];
    tmpdir(dir);
    struct tps_error err = {0};
    cr_assert(eq(int, trace_write(&a, NULL, dir, &err), 0));
    cr_assert(eq(int, trace_read(dir, &b, NULL, 0, &err), 0), "%s", err.msg);
    for (int i = 0; i < a.ranks[0].nops; i++) {
        cr_assert(eq(int, b.ranks[0].ops[i].recorded, 1));
        cr_assert(eq(dbl, b.ranks[0].ops[i].rec_start, a.ranks[0].ops[i].rec_start));
        cr_assert(eq(dbl, b.ranks[0].ops[i].rec_end, a.ranks[0].ops[i].rec_end));
        cr_assert(eq(int, b.ranks[0].ops[i].iter, i % 3 - 1));
        cr_assert(eq(int, b.ranks[0].ops[i].warmup, i % 2));
        cr_assert(eq(int, b.ranks[0].ops[i].host_sync, i % 3 == 0));
    }
    cr_assert(eq(int, b.ranks[1].ops[0].recorded, 0));
    mdl_program_release(&b);
    /* rewrite every file as version 1: no recorded-time columns */
    for (int r = -1; r < a.nranks; r++) {
        char path[256], tmp[300], buf[4096];
        if (r < 0)
            snprintf(path, sizeof path, "%s/meta.tps", dir);
        else
            snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, r);
        snprintf(tmp, sizeof tmp, "%s.v1", path);
        FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
        for (int n = 1; fgets(buf, sizeof buf, in); n++) {
            if (n == 1) {
                char *v = strstr(buf, "tpsim-trace 5");
                if (v) v[12] = '1';
            } else if (r >= 0 && buf[0] != '#') {
                for (int k = 0; k < 6; k++) {
                    char *sp = strrchr(buf, ' ');
                    if (sp) strcpy(sp, "\n");
                }
            }
            fputs(buf, out);
        }
        fclose(in);
        fclose(out);
        rename(tmp, path);
    }
    cr_assert(eq(int, trace_read(dir, &b, NULL, 0, &err), 0), "%s", err.msg);
    cr_assert(eq(int, b.ranks[0].nops, a.ranks[0].nops));
    cr_assert(eq(int, b.ranks[0].ops[0].recorded, 0));
    cr_assert(eq(int, b.ranks[0].ops[0].iter, -1), "version 1 does not say the iteration");
    mdl_program_release(&a);
    mdl_program_release(&b);
    rmdir_all(dir);
}

Test(trace, a_program_with_folded_replicas_is_refused_and_nothing_written)
{
    struct mdl_program a;
    lower(&a, false);
    a.shadow = calloc((size_t)a.nranks, 1);
    cr_assert_not_null(a.shadow);
    a.shadow[1] = 1;
    char dir[64], sub[128];
    tmpdir(dir);
    snprintf(sub, sizeof sub, "%s/t", dir);
    struct tps_error err = {0};
    cr_assert(eq(int, trace_write(&a, NULL, sub, &err), TPS_EINVAL));
    cr_assert(ne(ptr, strstr(err.msg, "folded replicas"), NULL), "%s", err.msg);
    cr_assert(ne(int, access(sub, F_OK), 0), "no directory made");
    mdl_program_release(&a);
    rmdir_all(dir);
}
