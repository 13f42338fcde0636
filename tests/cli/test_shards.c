/* test_shards.c - a sweep across machines without SLURM: shards merged byte for byte into what
 * one machine writes, foreign and stale shards refused at their file and line, a killed shard's
 * missing points listed and run by `merge --resume`, `status`, and the --slurm script (the real
 * SLURM run is tests/slurm/sweep-slurm.sh). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(shards, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

static const char scn_text[] =
    "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
    "run: {layers: 4}\nsweep:\n  strategy.tp: [1, 2, 3, 4, 8]\n"
    "  platform.nodes: {from: 1, to: 4, factor: 2}\n  strategy.chunks: [1, 2]\n"
    "  where: [\"strategy.tp != 4 || strategy.chunks == 1\"]\n";

/* Runs "cd DIR && tpsim ARGS 2>&1"; its exit status, output into out. */
static int run_in(const char *d, char *out, size_t len, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s 2>&1", d, TPSIM_BIN, args);
    return testcmd_run(out, len, cmd);
}

static void put(const char *d, const char *name, const char *text)
{
    char p[400];
    FILE *f = fopen(testdir_path(p, sizeof p, d, name), "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs shell command `cmd` in d; its exit status. */
static int sh_in(const char *d, const char *cmd)
{
    char full[2048], out[4096];
    snprintf(full, sizeof full, "cd %s && %s", d, cmd);
    return testcmd_run(out, sizeof out, full);
}

/* Whether two files hold the same bytes. */
static int same(const char *d, const char *a, const char *b)
{
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd, "cd %s && cmp %s %s", d, a, b);
    return testcmd_run(out, sizeof out, cmd) == 0;
}

Test(shards, three_shards_merge_into_the_one_machine_csv_byte_for_byte)
{
    char d[256], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    put(d, "s.yaml", scn_text);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml -j 2 -o one.csv"), 0), "%s", out);
    for (int i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof args, "sweep s.yaml --shard %d/3 -o parts -j 1", i);
        cr_assert(eq(int, run_in(d, out, sizeof out, args), 0), "%s", out);
    }
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep status parts"), 0), "%s", out);
    cr_assert(ne(ptr, strstr(out, "done 3 of 3 shards"), NULL), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge parts -o merged.csv"), 0), "%s", out);
    cr_assert(same(d, "merged.csv", "one.csv"), "merged differs");
    /* the default shard directory is the scenario's name with .shards; one shard = the sweep */
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml --shard 0/1 -j 2"), 0), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge s.shards"), 0), "%s", out);
    cr_assert(same(d, "s.shards/merged.csv", "one.csv"), "one shard differs");
    testdir_remove(d);
}

Test(shards, a_foreign_or_stale_shard_is_refused_at_its_file_and_line)
{
    char d[256], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    put(d, "s.yaml", scn_text);
    /* another sweep (another model) and the same sweep with other values, both split in 2 */
    char other[sizeof scn_text + 16];
    snprintf(other, sizeof other, "%s", scn_text);
    memcpy(strstr(other, "1.3b"), "2.7b", 4);
    put(d, "other.yaml", other);
    char moved[sizeof scn_text + 16];
    snprintf(moved, sizeof moved, "%s", scn_text);
    memcpy(strstr(moved, "[1, 2]\n  where"), "[1, 4]", 6);
    put(d, "moved.yaml", moved);
    const char *runs[] = {
        "sweep s.yaml --shard 0/2 -o a -j 2", "sweep s.yaml --shard 1/2 -o a -j 2",
        "sweep other.yaml --shard 1/2 -o b -j 2", "sweep moved.yaml --shard 1/2 -o c -j 2"};
    for (int i = 0; i < 4; i++)
        cr_assert(eq(int, run_in(d, out, sizeof out, runs[i]), 0), "%s: %s", runs[i], out);
    /* another sweep's shard copied in */
    cr_assert(eq(int, sh_in(d, "cp b/shard-1-of-2.csv a/"), 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge a"), 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "a/shard-1-of-2.csv:2:1: field 'sweep_id'"), NULL), "%s", out);
    /* a shard of the same sweep whose values changed: its rows are not this split's points */
    cr_assert(eq(int, sh_in(d, "cp c/shard-1-of-2.csv a/"), 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge a"), 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "a/shard-1-of-2.csv:"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "field 'point'"), NULL), "%s", out);
    /* and starting a shard of the changed sweep in a's directory is refused before it runs */
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep moved.yaml --shard 0/2 -o a"), 2), "%s",
              out);
    cr_assert(ne(ptr, strstr(out, "a/sweep.json: field 'points_hash'"), NULL), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml --shard 0/3 -o a"), 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "field 'shards'"), NULL), "%s", out);
    testdir_remove(d);
}

Test(shards, a_killed_shard_loses_nothing_and_merge_resume_runs_only_its_missing_points)
{
    char d[256], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    put(d, "s.yaml", scn_text);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml -j 2 -o one.csv"), 0), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml --shard 0/2 -o p -j 2"), 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep s.yaml --shard 1/2 -o p -j 2"), 0));
    /* shard 1 as a kill leaves it: its header, its first 3 rows and a row cut short */
    cr_assert(eq(int,
                 sh_in(d, "head -n 4 p/shard-1-of-2.csv > cut && sed -n 5p "
                          "p/shard-1-of-2.csv | head -c 20 >> cut && mv cut "
                          "p/shard-1-of-2.csv"),
                 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep status p"), 1), "%s", out);
    cr_assert(ne(ptr, strstr(out, "partial (a cut last row, left out)"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "to rerun: 1"), NULL), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge p -o m.csv"), 1), "%s", out);
    cr_assert(ne(ptr, strstr(out, "point(s) missing"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "(shard 1)"), NULL), "%s", out);
    /* --resume runs the missing points of shard 1 only, keeping its 3 rows */
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep merge p -o m.csv --resume -j 2"), 0), "%s",
              out);
    cr_assert(ne(ptr, strstr(out, "shard 1/2: "), NULL), "%s", out);
    cr_assert_null(strstr(out, "shard 0/2: "), "%s", out);
    cr_assert(same(d, "m.csv", "one.csv"), "resumed merge differs");
    testdir_remove(d);
}

Test(shards, slurm_writes_an_array_script_of_the_shards_and_the_command_to_submit_it)
{
    char d[256], out[16384], p[400];
    cr_assert_not_null(testdir_make(d, sizeof d));
    put(d, "s.yaml", scn_text);
    cr_assert(eq(int,
                 run_in(d, out, sizeof out,
                        "sweep s.yaml --slurm --array-size 4 -o out/arr --set run.layers=2 "
                        "--sbatch-args '--partition=gpu --time=30'"),
                 0),
              "%s", out);
    cr_assert(ne(ptr, strstr(out, "sbatch --partition=gpu --time=30 /"), NULL), "%s", out);
    FILE *f = fopen(testdir_path(p, sizeof p, d, "out/arr/sweep.sbatch"), "r");
    cr_assert_not_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    cr_assert(ne(ptr, strstr(out, "#SBATCH --array=0-3\n"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "--shard \"$SLURM_ARRAY_TASK_ID/4\""), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "-j \"${SLURM_CPUS_PER_TASK:-1}\""), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "--set 'run.layers=2'"), NULL), "%s", out);
    cr_assert(ne(ptr, strstr(out, "/shard-%a.log"), NULL), "%s", out);
    /* out/ did not exist: made with its parents. The script runs as written: shard 2 by hand, as
     * SLURM's task 2 would */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cd %s && SLURM_ARRAY_TASK_ID=2 sh out/arr/sweep.sbatch 2>&1", d);
    cr_assert(eq(int, testcmd_run(out, sizeof out, cmd), 0), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "sweep status out/arr"), 1), "%s", out);
    cr_assert(ne(ptr, strstr(out, "to rerun: 0-1,3"), NULL), "%s", out);
    /* --resume with shard 2 done: only the others */
    cr_assert(eq(int,
                 run_in(d, out, sizeof out,
                        "sweep s.yaml --slurm --resume -o out/arr --set run.layers=2"),
                 0),
              "%s", out);
    cr_assert(ne(ptr, strstr(out, "shards 0-1,3 of 4"), NULL), "%s", out);
    testdir_remove(d);
}

Test(shards, bad_shard_options_are_usage_errors)
{
    char d[256], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    put(d, "s.yaml", scn_text);
    const char *bad[][2] = {
        {"sweep s.yaml --shard 3/3", "0 <= I < N"},
        {"sweep s.yaml --shard 1/2 --plot", "merge the shards"},
        {"sweep s.yaml --shard 0/2 --slurm", "--shard and --slurm"},
        {"sweep s.yaml --submit", "go with --slurm"},
        {"sweep merge nowhere", "no manifest"},
        {"sweep status", "missing DIR"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert(eq(int, run_in(d, out, sizeof out, bad[i][0]), 2), "%s: %s", bad[i][0], out);
        cr_assert(ne(ptr, strstr(out, bad[i][1]), NULL), "%s: %s", bad[i][0], out);
    }
    testdir_remove(d);
}

/* The planner's simulations over 3 shards: the merge prints what one machine prints; a missing
 * shard is named (exit 1); a shard of an edited scenario, or with another candidate, refused. */
Test(shards, plan_shards_merge_into_the_one_machine_plan)
{
    char d[256], out[16384];
    cr_assert_not_null(testdir_make(d, sizeof d));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/scenarios/quickstart.yaml q.yaml", TPSIM_SOURCE_DIR);
    cr_assert(eq(int, sh_in(d, cmd), 0));
    cr_assert(eq(int, sh_in(d, TPSIM_BIN " plan q.yaml > one.txt 2>/dev/null"), 0));
    for (int i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof args, "plan q.yaml --shard %d/3 -o ps", i);
        cr_assert(eq(int, run_in(d, out, sizeof out, args), 0), "%s", out);
        cr_assert(ne(ptr, strstr(out, "candidate(s) simulated into ps/plan-shard-"), NULL), "%s",
                  out);
    }
    cr_assert(eq(int, sh_in(d, TPSIM_BIN " plan q.yaml --merge ps > merged.txt"), 0));
    cr_assert(same(d, "merged.txt", "one.txt"), "the merged plan differs");
    /* a shard missing */
    cr_assert(eq(int, sh_in(d, "mv ps/plan-shard-1-of-3.json keep.json"), 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "plan q.yaml --merge ps"), 1), "%s", out);
    cr_assert(ne(ptr, strstr(out, "run shard(s) 1 of 3"), NULL), "%s", out);
    cr_assert_null(strstr(out, "rank"), "a table printed without every simulation: %s", out);
    /* a candidate's description edited: stale */
    cr_assert(eq(int,
                 sh_in(d, "sed 's/\"desc\": \"/\"desc\": \"x/' keep.json > "
                          "ps/plan-shard-1-of-3.json"),
                 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "plan q.yaml --merge ps"), 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "ps/plan-shard-1-of-3.json: field 'results[0].desc'"), NULL),
              "%s", out);
    /* the scenario edited since the shards ran */
    cr_assert(eq(int,
                 sh_in(d, "mv keep.json ps/plan-shard-1-of-3.json && echo '# edited' >> "
                          "q.yaml"),
                 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "plan q.yaml --merge ps"), 2), "%s", out);
    cr_assert(ne(ptr, strstr(out, "field 'plan_id'"), NULL), "%s", out);
    /* the scenario as the shards ran it, planned with --async-tp: another plan */
    cr_assert(eq(int, sh_in(d, "sed -i '$d' q.yaml"), 0));
    cr_assert(eq(int, run_in(d, out, sizeof out, "plan q.yaml --merge ps"), 0), "%s", out);
    cr_assert(eq(int, run_in(d, out, sizeof out, "plan q.yaml --async-tp --merge ps"), 2), "%s",
              out);
    cr_assert(ne(ptr, strstr(out, "field 'plan_id'"), NULL), "%s", out);
    testdir_remove(d);
}

/* A compare: list of whole-job plans over 3 shards: the n-th simulation counted over the
 * settings, the merge ranking the settings as one machine does. */
Test(shards, a_compare_plan_over_shards_ranks_as_one_machine)
{
    char d[256], out[16384], cmd[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    snprintf(cmd, sizeof cmd, "cp %s/tests/data/good/plan-compare.yaml c.yaml", TPSIM_SOURCE_DIR);
    cr_assert(eq(int, sh_in(d, cmd), 0));
    cr_assert(eq(int, sh_in(d, TPSIM_BIN " plan c.yaml --simulate 2 > one.txt 2>/dev/null"), 0));
    for (int i = 0; i < 3; i++) {
        char args[128];
        snprintf(args, sizeof args, "plan c.yaml --simulate 2 --shard %d/3", i);
        cr_assert(eq(int, run_in(d, out, sizeof out, args), 0), "%s", out);
    }
    cr_assert(eq(int,
                 sh_in(d, TPSIM_BIN " plan c.yaml --simulate 2 --merge c.plan-shards > "
                                    "merged.txt 2>/dev/null"),
                 0));
    cr_assert(same(d, "merged.txt", "one.txt"), "the merged compare differs");
    testdir_remove(d);
}
