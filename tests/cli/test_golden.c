/* test_golden.c - outputs do not move: `run --json`, `collective --json`, `plan --json` and one
 * sweep CSV of the shipped scenarios equal the committed files in tests/golden (numbers to a
 * relative 1e-9 in JSON, 1e-7 in the CSV's 9-digit text; everything else exactly). A change meant
 * to move them regenerates the files with scripts/golden.sh and says why. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testcmd.h"
#include "../testdir.h"
#include "common/csv.h"

TestSuite(golden, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

#define G TPSIM_SOURCE_DIR "/tests/golden/"

static int near(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-300;
}

/* Compares two JSON values; on a difference, describes it in why (path first). */
static int same_json(json_t *a, json_t *b, const char *path, char *why, size_t len)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        if (near(x, y, 1e-9)) return 1;
        snprintf(why, len, "%s: %.17g, golden %.17g", path, x, y);
        return 0;
    }
    if (json_typeof(a) != json_typeof(b)) {
        snprintf(why, len, "%s: type differs", path);
        return 0;
    }
    char sub[512];
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) {
            snprintf(why, len, "%s: %zu keys, golden %zu", path, json_object_size(a),
                     json_object_size(b));
            return 0;
        }
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v)
        {
            snprintf(sub, sizeof sub, "%s.%s", path, k);
            json_t *w = json_object_get(b, k);
            if (!w) {
                snprintf(why, len, "%s: not in the golden file", sub);
                return 0;
            }
            if (!same_json(v, w, sub, why, len)) return 0;
        }
        return 1;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(why, len, "%s: %zu entries, golden %zu", path, json_array_size(a),
                     json_array_size(b));
            return 0;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!same_json(json_array_get(a, i), json_array_get(b, i), sub, why, len)) return 0;
        }
        return 1;
    }
    if (json_equal(a, b)) return 1;
    snprintf(why, len, "%s differs", path);
    return 0;
}

/* A run's breakdown (core/report.h) adds up: its parts, none negative, sum to the iteration
 * time within 1e-9 s; a job's bubble is the pipeline_bubble_s it prints. */
static void check_breakdown(json_t *run, const char *what)
{
    json_t *bd = json_object_get(run, "breakdown");
    if (!json_object_get(run, "iteration_time_s")) return; /* not a run */
    cr_assert(bd && json_is_object(bd), "%s: no breakdown", what);
    double sum = 0, T = json_number_value(json_object_get(run, "iteration_time_s"));
    const char *k;
    json_t *v;
    json_object_foreach(bd, k, v)
    {
        cr_assert(v && json_is_number(v), "%s: breakdown.%s", what, k);
        cr_assert(ge(dbl, json_number_value(v), -1e-12), "%s: breakdown.%s", what, k);
        sum += json_number_value(v);
    }
    cr_assert(le(dbl, fabs(sum - T), 1e-9), "%s: the parts sum to %.12g s, the iteration %.12g s",
              what, sum, T);
    json_t *bubble = json_object_get(run, "pipeline_bubble_s");
    if (json_is_number(bubble))
        cr_assert(ieee_ulp_eq(dbl, json_number_value(bubble),
                              json_number_value(json_object_get(bd, "pipeline_bubble_s")), 4));
}

/* Runs `tpsim ARGS`, whose JSON goes to the file %s stands for in args, and compares it. */
static void check_json(const char *args, const char *golden)
{
    char d[256], out[300], cmd[2048], log[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(out, sizeof out, d, "out.json");
    char a[1024];
    snprintf(a, sizeof a, args, out);
    snprintf(cmd, sizeof cmd, "cd %s && %s %s > /dev/null 2>&1", TPSIM_SOURCE_DIR, TPSIM_BIN, a);
    cr_assert(eq(int, testcmd_run(log, sizeof log, cmd), 0), "%s", cmd);
    json_error_t e;
    json_t *x = json_load_file(out, 0, &e), *y = json_load_file(golden, 0, &e);
    cr_assert(x && y, "%s", e.text);
    char why[1024] = "";
    check_breakdown(x, a);
    cr_assert(same_json(x, y, "$", why, sizeof why), "%s vs %s: %s", a, golden, why);
    json_decref(x);
    json_decref(y);
    testdir_remove(d);
}

Test(golden, run_json_of_the_shipped_scenarios)
{
    static const char *const s[] = {"quickstart", "atp-2d-2node", "pcie-8gpu-sp",
                                    "dgx-h100-2node-tp16", "job-llama31-70b-cp2-64-h100"};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        char args[256], golden[512];
        snprintf(args, sizeof args, "run scenarios/%s.yaml --json %%s -q", s[i]);
        snprintf(golden, sizeof golden, G "run-%s.json", s[i]);
        check_json(args, golden);
    }
}

Test(golden, collective_json)
{
    check_json("collective --platform dgx-a100 --min 1K --max 1G --factor 8 --json %s",
               G "collective-dgx-a100.json");
    check_json("collective --platform 'dgx-a100 nodes=4' --op all_gather --min 1M --max 256M "
               "--factor 16 --json %s",
               G "collective-dgx-a100-4node-ag.json");
}

Test(golden, plan_json)
{
    check_json("plan scenarios/atp-2d-2node.yaml --json %s", G "plan-atp-2d-2node.json");
}

/* The whole file as a string (caller frees). */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = '\0';
    fclose(f);
    return b;
}

Test(golden, sweep_csv)
{
    char d[256], csv[300], cmd[2048], log[4096];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(csv, sizeof csv, d, "s.csv");
    snprintf(cmd, sizeof cmd, "cd %s && %s sweep scenarios/sweep-example.yaml -j 2 -o %s 2>&1",
             TPSIM_SOURCE_DIR, TPSIM_BIN, csv);
    cr_assert(eq(int, testcmd_run(log, sizeof log, cmd), 0), "%s", log);
    size_t na, nb;
    char *a = slurp(csv, &na), *b = slurp(G "sweep-example.csv", &nb);
    const char *pa = a, *pb = b, *ea = a + na, *eb = b + nb, *na_, *nb_;
    static char sa[8192], sb[8192];
    char *fa[64], *fb[64];
    int row = 0, ka, kb;
    while ((ka = tps_csv_record(pa, ea, sa, sizeof sa, fa, 64, &na_)) > 0) {
        kb = tps_csv_record(pb, eb, sb, sizeof sb, fb, 64, &nb_);
        cr_assert(eq(int, ka, kb), "row %d: %d fields, golden %d", row, ka, kb);
        for (int k = 0; k < ka; k++) {
            char *e1, *e2;
            double x = strtod(fa[k], &e1), y = strtod(fb[k], &e2);
            int num = *fa[k] && *fb[k] && !*e1 && !*e2;
            cr_assert(num ? near(x, y, 1e-7) : !strcmp(fa[k], fb[k]),
                      "row %d field %d: '%s', golden '%s'", row, k, fa[k], fb[k]);
        }
        pa = na_;
        pb = nb_;
        row++;
    }
    cr_assert(eq(int, tps_csv_record(pb, eb, sb, sizeof sb, fb, 64, &nb_), 0),
              "the golden file has more rows than %d", row);
    cr_assert(gt(int, row, 20));
    free(a);
    free(b);
    testdir_remove(d);
}
