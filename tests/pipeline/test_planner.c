/* test_planner.c - the planner: analytic ranking, simulation of the best, placement choice. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "pipeline/planner.h"
#include "core/scenario.h"
#include "pruned.h"

TestSuite(plan, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

static const struct planner_row *find(const struct planner_row *r, int n, int d1, int d2,
                                      enum mdl_placement pl)
{
    for (int i = 0; i < n; i++)
        if (r[i].st.atp.d1 == d1 && r[i].st.atp.d2 == d2 && r[i].st.chunks <= 1 && !r[i].st.oases &&
            !r[i].st.sequence_parallel && (d2 == 1 || r[i].st.atp.placement == pl))
            return &r[i];
    return NULL;
}

Test(plan, ranks_every_mesh_and_picks_the_placement_that_keeps_the_heavy_axis_in_a_node)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/plan-2node.yaml", &s, &err), 0),
              "%s", err.msg);
    struct planner_opts o = {.simulate = 4};
    struct planner_row *rows;
    struct planner_info info;
    int n;
    cr_assert(eq(int, planner_run(&s, &o, &rows, &n, &info, &err), 0), "%s", err.msg);
    /* d1 in {1, 2, 4, 8} (it must divide 40 heads), two placements for 2D, k in 1..8, Oases */
    cr_assert(eq(int, n, (1 + 2 * 3) * 4 * 2 + 0 * 1), "candidates: %d", n);
    double bsh = 2048.0 * 5120;
    const int meshes[][2] = {{2, 8}, {4, 4}, {8, 2}};
    for (int k = 0; k < 3; k++) {
        int d1 = meshes[k][0], d2 = meshes[k][1];
        const struct planner_row *row = find(rows, n, d1, d2, MDL_ROW_FIRST);
        const struct planner_row *col = find(rows, n, d1, d2, MDL_COLUMN_FIRST);
        cr_assert(ne(ptr, (void *)row, NULL));
        cr_assert(ne(ptr, (void *)col, NULL));
        double v2 = 2.0 * (d2 - 1) / d2 * 12 * bsh / d1, v1 = 2.0 * (d1 - 1) / d1 * 4 * bsh / d2;
        cr_assert(eq(int, row->predicted_s<col->predicted_s, v2> v1), "%dx%d", d1, d2);
    }
    /* the simulated rows come first, sorted, and confirm their predictions: the analytic model
     * splits links among all concurrent groups of an axis, as the simulation does. The axis
     * crossing machines runs rings of NVLink and network routes, whose pipelined steps the
     * closed form bounds from below (mdl_coll_ring); chunked overlap runs several at once */
    for (int i = 0; i < 4; i++) {
        cr_assert(gt(dbl, rows[i].simulated_s, 0));
        cr_assert(
            le(dbl, fabs(rows[i].simulated_s - rows[i].predicted_s), 0.05 * rows[i].predicted_s),
            "%s: simulated %.6g predicted %.6g", rows[i].desc, rows[i].simulated_s,
            rows[i].predicted_s);
        if (i) cr_assert(ge(dbl, rows[i].simulated_s, rows[i - 1].simulated_s));
    }
    cr_assert(eq(dbl, rows[4].simulated_s, 0));
    free(rows);
    scn_release(&s);
}

Test(plan, analytic_ranking_sees_groups_contending_for_a_shared_nic)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/plan-1nic.yaml", &s, &err), 0),
              "%s", err.msg);
    struct planner_opts o = {.simulate = 12};
    struct planner_row *rows;
    struct planner_info info;
    int n;
    cr_assert(eq(int, planner_run(&s, &o, &rows, &n, &info, &err), 0), "%s", err.msg);
    /* within 3%: the axis across the machines runs NCCL's tree, whose closed form and per-step
     * pipeline differ by a few percent at these sizes (docs/collectives.md) */
    for (int i = 0; i < 12; i++)
        cr_assert(
            le(dbl, fabs(rows[i].simulated_s - rows[i].predicted_s), 0.03 * rows[i].predicted_s),
            "%s: simulated %.6g predicted %.6g", rows[i].desc, rows[i].simulated_s,
            rows[i].predicted_s);
    free(rows);
    scn_release(&s);
}

/* The rows with desc `desc` among n. */
static const struct planner_row *by_desc(const struct planner_row *r, int n, const char *desc)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].desc, desc)) return &r[i];
    return NULL;
}

Test(plan, folded_layers_simulate_what_every_layer_does)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/plan-fold.yaml", &s, &err), 0),
              "%s", err.msg);
    cr_assert(eq(int, s.layers, 12));
    struct planner_opts o = {.simulate = 8};
    struct planner_row *fr, *ur;
    struct planner_info fi, ui;
    int fn, un;
    cr_assert(eq(int, planner_run(&s, &o, &fr, &fn, &fi, &err), 0), "%s", err.msg);
    s.fold = 0;
    cr_assert(eq(int, planner_run(&s, &o, &ur, &un, &ui, &err), 0), "%s", err.msg);
    cr_assert(eq(int, fi.folded, 8));
    cr_assert(eq(int, ui.folded, 0));
    cr_assert(eq(int, fn, un));
    int exact = 0;
    for (int i = 0; i < 8; i++) {
        const struct planner_row *u = by_desc(ur, un, fr[i].desc);
        cr_assert(ne(ptr, (void *)u, NULL), "%s", fr[i].desc);
        cr_assert(eq(dbl, u->fold_spread, -1));
        cr_assert(ge(dbl, fr[i].fold_spread, 0));
        /* an exact fold is the full replay; an inexact one is off by at most what its middle
         * layers disagreed, for each of the 8 layers added */
        double tol = fr[i].fold_spread <= PLANNER_FOLD_EXACT
                         ? 1e-7
                         : 8 * fr[i].fold_spread * 2 / s.layers + 1e-7;
        exact += fr[i].fold_spread <= PLANNER_FOLD_EXACT;
        cr_assert(le(dbl, fabs(fr[i].simulated_s - u->simulated_s), tol * u->simulated_s),
                  "%s: folded %.9g, every layer %.9g (spread %.3g)", fr[i].desc, fr[i].simulated_s,
                  u->simulated_s, fr[i].fold_spread);
    }
    cr_assert(ge(int, exact, 6), "exact folds: %d of 8", exact);
    free(fr);
    free(ur);
    scn_release(&s);
}

Test(plan, enumerates_every_kind_whatever_the_scenarios_own_kind)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/plan-ring.yaml", &s, &err), 0),
              "%s", err.msg);
    struct planner_opts o = {.simulate = 0, .ignore_memory = 1};
    struct planner_row *rows;
    struct planner_info info;
    int n;
    cr_assert(eq(int, planner_run(&s, &o, &rows, &n, &info, &err), 0), "%s", err.msg);
    static const char *const want[] = {
        "1d tp=8",
        "2d tp=8 mesh 4x2 row-first",
        "1d tp=8 attention tp=2 x4, mlp tp=4 x2",
        "1d tp=8 attention tp=4 x2, mlp tp=4 x2 +oases",
        "primepar tp=8 (spatial-temporal ring)",
        "primepar tp=8 (2 rings of 4, spatial-temporal)",
        "primepar tp=8 (4 rings of 2, spatial-temporal)",
        "tp3d tp=8 (2x2x2 cube)",
        "tesseract tp=8 (2x2 x depth 2)",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(ne(ptr, (void *)by_desc(rows, n, want[i]), NULL), "missing: %s", want[i]);
    free(rows);
    scn_release(&s);
}

Test(plan, a_mixture_of_experts_plans_with_sequence_parallelism_unasked)
{
    /* Megatron-LM's MoE layer on tp > 1 needs sequence parallelism: the planner tries it without
     * --sp, and only it (Megatron's 1D with ATP's chunks; the other kinds take no experts) */
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/moe-layer.yaml", &s, &err), 0),
              "%s", err.msg);
    struct planner_opts o = {.simulate = 1, .ignore_memory = true};
    struct planner_row *rows;
    struct planner_info info;
    int n;
    cr_assert(eq(int, planner_run(&s, &o, &rows, &n, &info, &err), 0), "%s", err.msg);
    /* chunks 1, 2, 4 and 8, and Transformer Engine's TP overlap on the first */
    cr_assert(eq(int, n, 5), "candidates: %d", n);
    int te = 0;
    for (int i = 0; i < n; i++) {
        te += rows[i].st.tp_comm_overlap;
        cr_assert(rows[i].st.sequence_parallel, "%d", i);
        cr_assert(eq(int, rows[i].st.kind, MDL_STRAT_1D));
        cr_assert(eq(int, rows[i].st.ep, 4));
    }
    cr_assert(eq(int, te, 1));
    free(rows);
    scn_release(&s);
}

/* With sequence parallelism the TP planner adds, to each 1D candidate on the whole group without
 * ATP's chunks or Oases, its variant with Transformer Engine's TP overlap, and with PyTorch's
 * async TP where asked; no other candidate carries either, and each has its plain twin. */
Test(plan, sequence_parallel_candidates_carry_the_tp_overlaps)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int,
                 scn_load(TPSIM_SOURCE_DIR "/scenarios/tp-overlap-gpt3-175b-h100.yaml", &s, &err),
                 0),
              "%s", err.msg);
    for (int ask = 0; ask < 3; ask++) {
        struct planner_opts o = {.simulate = 0, .sequence_parallel = ask > 0, .async_tp = ask == 2};
        struct planner_row *rows;
        struct planner_info info;
        int n;
        cr_assert(eq(int, planner_run(&s, &o, &rows, &n, &info, &err), 0), "%s", err.msg);
        int te = 0, at = 0;
        for (int i = 0; i < n; i++) {
            const struct mdl_strategy *st = &rows[i].st;
            if (!st->tp_comm_overlap && !st->async_tp) continue;
            te += st->tp_comm_overlap;
            at += st->async_tp;
            cr_assert(st->kind == MDL_STRAT_1D && st->sequence_parallel && st->chunks <= 1 &&
                          !st->oases && !mdl_strategy_is_mixed(st),
                      "%s", rows[i].desc);
            int twin = 0;
            for (int k = 0; k < n && !twin; k++)
                twin = rows[k].st.kind == MDL_STRAT_1D && rows[k].st.sequence_parallel &&
                       !rows[k].st.tp_comm_overlap && !rows[k].st.async_tp &&
                       rows[k].st.chunks <= 1 && !rows[k].st.oases &&
                       !mdl_strategy_is_mixed(&rows[k].st);
            cr_assert(twin, "%s", rows[i].desc);
            cr_assert(gt(dbl, rows[i].predicted_s, 0));
        }
        cr_assert(eq(int, te, ask > 0), "ask %d", ask);
        cr_assert(eq(int, at, ask == 2), "ask %d", ask);
        free(rows);
    }
    scn_release(&s);
}

static double program_ops(const struct mdl_program *p)
{
    double n = 0;
    for (int r = 0; r < p->nranks; r++)
        n += p->ranks[r].nops;
    return n;
}

/* A sweep's shards are balanced by pipeline_scenario_ops: a TP group's is one layer's ops times
 * its layers and micro-batches (the program of them all, lowered), a whole job's mdl_job_ops. */
Test(plan, a_scenarios_predicted_cost_is_the_ops_its_program_holds)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml", &s, &err), 0), "%s",
              err.msg);
    struct mdl_program p;
    int mb = s.micro_batches > 0 ? s.micro_batches : 1;
    cr_assert(eq(int, pipeline_lower(&s, NULL, s.layers, mb, &p, &err), 0), "%s", err.msg);
    cr_assert(eq(dbl, pipeline_scenario_ops(&s), program_ops(&p)), "%d layers x %d", s.layers, mb);
    mdl_program_release(&p);
    scn_release(&s);
    cr_assert(
        eq(int, scn_load(TPSIM_SOURCE_DIR "/scenarios/job-llama3-70b-512-h100.yaml", &s, &err), 0),
        "%s", err.msg);
    double ops = mdl_job_ops(&s.job, &s.strategy, &s.model, &s.device, &s.framework, NULL);
    cr_assert(gt(dbl, ops, 1e5));
    cr_assert(eq(dbl, pipeline_scenario_ops(&s), ops));
    scn_release(&s);
}

/* The TP planner prunes as the job planner does (pipeline/plansim.h): on a device 20 times
 * slower, where the layers' kernels dominate, the candidates whose busiest GPU's kernels take
 * longer than a better candidate's simulated iteration are left unsimulated, the same ones on
 * one core and on two; every simulated row takes at least its bound. */
Test(plan, prunes_by_the_lower_bound_the_same_candidates_on_any_cores)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/plan-2node.yaml", &s, &err), 0),
              "%s", err.msg);
    pruned_slow_device(&s.device);
    struct planner_row *rows[2];
    struct planner_info info[2];
    struct pruned_row *view[2];
    int n[2];
    for (int j = 0; j < 2; j++) {
        struct planner_opts o = {.simulate = 1000, .jobs = j + 1};
        cr_assert(eq(int, planner_run(&s, &o, &rows[j], &n[j], &info[j], &err), 0), "%s", err.msg);
        view[j] = malloc((size_t)n[j] * sizeof *view[j]);
        cr_assert(ne(ptr, view[j], NULL));
        for (int i = 0; i < n[j]; i++)
            view[j][i] = (struct pruned_row){rows[j][i].desc, rows[j][i].pruned,
                                             rows[j][i].simulated_s, rows[j][i].bound_s};
    }
    int simulated = pruned_agree(view, n, (int[2]){info[0].pruned, info[1].pruned});
    cr_assert(eq(int, simulated + info[0].pruned, n[0]));
    for (int j = 0; j < 2; j++) {
        free(view[j]);
        free(rows[j]);
    }
    scn_release(&s);
}
