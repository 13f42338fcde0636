/* test_ncclog.c - the nccl-tests reader on every refdata log and on broken ones. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "validate/ncclog.h"

TestSuite(ncclog, .timeout = 60 * TPSIM_TIMEOUT_SCALE);

Test(ncclog, reads_every_refdata_log_in_both_layouts)
{
    DIR *d = opendir(TPSIM_REFDATA "/nccl");
    cr_assert(ne(ptr, d, NULL));
    int seen[3] = {0}, logs = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 8 || strcmp(e->d_name + n - 8, ".raw.txt")) continue;
        char path[1024], meta[1024];
        snprintf(path, sizeof path, "%s/nccl/%s", TPSIM_REFDATA, e->d_name);
        snprintf(meta, sizeof meta, "%s/nccl/%.*s.meta.yaml", TPSIM_REFDATA, (int)(n - 8),
                 e->d_name);
        struct ncl_log l;
        struct tps_error err = {0};
        cr_assert(eq(int, ncl_log_read(path, &l, &err), 0), "%s: %s", path, err.msg);
        cr_assert(gt(int, l.nrows, 10), "%s", path);
        seen[l.layout]++;
        logs++;
        struct ncl_meta m;
        cr_assert(eq(int, ncl_meta_read(meta, &m, &err), 0), "%s: %s", meta, err.msg);
        cr_assert(ge(int, m.op, 0), "%s: no collective", meta);
        if (l.op >= 0) cr_assert(eq(int, l.op, m.op), "%s", path);
        if (l.ranks) cr_assert(eq(int, l.ranks, m.ranks), "%s", path);
        for (int i = 1; i < l.nrows; i++)
            cr_assert(gt(int, l.rows[i].line, l.rows[i - 1].line));
        ncl_log_release(&l);
    }
    closedir(d);
    cr_assert(ge(int, logs, 11));
    cr_assert(gt(int, seen[0], 0), "current layout");
    cr_assert(gt(int, seen[1], 0), "old layout (no root column)");
    cr_assert(gt(int, seen[2], 0), "trimmed layout");
}

/* Writes the first `keep` lines of a refdata log to a temporary file, then `extra`. */
static void cut(const char *name, int keep, const char *extra, char *out)
{
    char src[1024];
    snprintf(src, sizeof src, "%s/nccl/%s", TPSIM_REFDATA, name);
    snprintf(out, 64, "/tmp/tpsim-ncclog-XXXXXX");
    int fd = mkstemp(out);
    FILE *w = fdopen(fd, "w"), *r = fopen(src, "r");
    cr_assert(ne(ptr, r, NULL));
    char line[4096];
    for (int i = 0; i < keep && fgets(line, sizeof line, r); i++)
        fputs(line, w);
    fputs(extra, w);
    fclose(r);
    fclose(w);
}

static void expect_error(const char *path, int line, const char *field, const char *what)
{
    struct ncl_log l;
    struct tps_error err = {0};
    cr_assert(ne(int, ncl_log_read(path, &l, &err), 0), "%s accepted", what);
    cr_assert(eq(int, err.line, line), "%s: line %d: %s", what, err.line, err.msg);
    if (field) cr_assert(eq(str, err.field, (char *)field), "%s: field '%s'", what, err.field);
    cr_assert(eq(str, err.path, (char *)path));
    remove(path);
}

Test(ncclog, rejects_truncated_and_garbled_logs_naming_the_line)
{
    char p[64];
    /* the log stops in the middle of the table: no closing line */
    cut("h100_hgx_4gpu_all_reduce.raw.txt", 30, "", p);
    expect_error(p, 30, NULL, "truncated log");
    /* the last row is cut inside its out-of-place columns */
    cut("h100_hgx_4gpu_all_reduce.raw.txt", 30,
        "    33554432       8388608     float     sum      -1    176.20\n", p);
    expect_error(p, 31, "algbw", "truncated row");
    /* a number replaced by text */
    cut("abci_a100_1node_8gpu_all_reduce.raw.txt", 20,
        "        1024           256   float     sum    3x.44    0.03    0.05  4e-07\n", p);
    expect_error(p, 21, "time", "garbled time");
    /* digits changed: algbw no longer size/time */
    cut("abci_a100_1node_8gpu_all_reduce.raw.txt", 20,
        "     1048576        262144   float     sum    146.5    71.6   13.42  5e-07\n", p);
    expect_error(p, 21, "algbw", "inconsistent algbw");
    /* text inside the table */
    cut("rtx2080ti_2gpu_pcie_nop2p_all_reduce.raw.txt", 20, "Segmentation fault (core dumped)\n",
        p);
    expect_error(p, 21, "size", "text in the table");
    /* no table at all */
    cut("rtx2080ti_2gpu_pcie_nop2p_all_reduce.raw.txt", 8, "", p);
    expect_error(p, 8, "size", "no header");
}

Test(ncclog, names_the_collective_by_its_program_reduce_apart_from_all_reduce)
{
    /* the same table under reduce_perf's name: "all_reduce_perf" contains "reduce_perf" */
    char src[1024], p[64] = "/tmp/tpsim-ncclog-XXXXXX", line[4096];
    snprintf(src, sizeof src, "%s/nccl/h100_hgx_4gpu_all_reduce.raw.txt", TPSIM_REFDATA);
    int fd = mkstemp(p);
    FILE *w = fdopen(fd, "w"), *r = fopen(src, "r");
    cr_assert(ne(ptr, r, NULL));
    while (fgets(line, sizeof line, r)) {
        char *at = strstr(line, "all_reduce_perf");
        if (at) memmove(at, at + 4, strlen(at + 4) + 1); /* "all_reduce_perf" -> "reduce_perf" */
        fputs(line, w);
    }
    fclose(r);
    fclose(w);
    struct ncl_log l, a;
    struct tps_error err = {0};
    cr_assert(eq(int, ncl_log_read(p, &l, &err), 0), "%s", err.msg);
    cr_assert(eq(int, ncl_log_read(src, &a, &err), 0), "%s", err.msg);
    cr_assert(eq(int, l.op, MDL_OP_REDUCE));
    cr_assert(eq(int, a.op, MDL_OP_ALL_REDUCE));
    ncl_log_release(&l);
    ncl_log_release(&a);
    remove(p);
}

/* Writes a refdata log with `tag` before every line (a launcher's: Open MPI's --tag-output, srun
 * --label); with `garble`, line `garble` (1-based) has its time replaced by text. */
static void tagged(const char *name, const char *tag, int garble, char *out)
{
    char src[1024], line[4096];
    snprintf(src, sizeof src, "%s/nccl/%s", TPSIM_REFDATA, name);
    snprintf(out, 64, "/tmp/tpsim-ncclog-XXXXXX");
    int fd = mkstemp(out);
    FILE *w = fdopen(fd, "w"), *r = fopen(src, "r");
    cr_assert(ne(ptr, r, NULL));
    for (int i = 1; fgets(line, sizeof line, r); i++) {
        if (i == garble) {
            char *t = strstr(line, "  -1  ");
            cr_assert(ne(ptr, t, NULL), "line %d has no root column", i);
            memcpy(t + 8, "x", 1);
        }
        fprintf(w, "%s%s", tag, line);
    }
    fclose(r);
    fclose(w);
}

/* A log as a launcher prints it, each line tagged with the rank that wrote it, reads as the log
 * itself; an error in it names the file's own column. */
Test(ncclog, reads_logs_tagged_by_the_launcher)
{
    static const char *const tags[] = {"[1,0]<stdout>:", "0: ", "  12: "};
    const char *name = "h100_2node_16gpu_ib400_all_reduce_gjaion.raw.txt";
    char src[1024];
    snprintf(src, sizeof src, "%s/nccl/%s", TPSIM_REFDATA, name);
    struct ncl_log a, l;
    struct tps_error err = {0};
    cr_assert(eq(int, ncl_log_read(src, &a, &err), 0), "%s", err.msg);
    for (int k = 0; k < 3; k++) {
        char p[64];
        tagged(name, tags[k], 0, p);
        cr_assert(eq(int, ncl_log_read(p, &l, &err), 0), "%s: %s", tags[k], err.msg);
        cr_assert(eq(int, l.nrows, a.nrows), "%s", tags[k]);
        cr_assert(eq(int, l.op, a.op));
        for (int i = 0; i < a.nrows; i++)
            cr_assert(l.rows[i].bytes == a.rows[i].bytes && l.rows[i].time_us == a.rows[i].time_us,
                      "%s: row %d", tags[k], i);
        ncl_log_release(&l);
        remove(p);
    }
    int row = a.rows[2].line;
    char p[64];
    tagged(name, tags[0], row, p);
    cr_assert(ne(int, ncl_log_read(p, &l, &err), 0));
    cr_assert(eq(int, err.line, row), "%s", err.msg);
    cr_assert(eq(str, err.field, "time"), "%s", err.msg);
    FILE *f = fopen(p, "r");
    char line[4096] = "";
    for (int i = 0; i < row && fgets(line, sizeof line, f); i++)
        ;
    fclose(f);
    cr_assert(gt(int, err.col, (int)strlen(tags[0])), "%s", err.msg);
    cr_assert(eq(int, line[err.col - 1] != ' ' && line[err.col - 2] == ' ', 1), "col %d: %s",
              err.col, line);
    remove(p);
    ncl_log_release(&a);
}
