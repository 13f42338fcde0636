/* test_user.c - starting from what a user has and getting the answer asked for: --set on the
 * command line, a job's tokens/s, time to train, GPU-hours, energy and cost (issue 49). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../testcmd.h"
#include "../testdir.h"

TestSuite(user, .timeout = 300 * TPSIM_TIMEOUT_SCALE);

/* Runs "cd SOURCE && tpsim ARGS 2>&1" and returns its exit status, output into out. */
static int tpsim(char *out, size_t len, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s 2>&1", TPSIM_SOURCE_DIR, TPSIM_BIN, args);
    return testcmd_run(out, len, cmd);
}

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    return j;
}

static double num(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    cr_assert(v && json_is_number(v), "%s is not a number", key);
    return json_number_value(v);
}

Test(user, set_overrides_a_key_as_the_file_would)
{
    char d[256], a[300], b[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(a, sizeof a, d, "a.json");
    testdir_path(b, sizeof b, d, "b.json");
    /* the file with tp 4 written into it, and the shipped file with --set strategy.tp=4 */
    char scn[300];
    testdir_path(scn, sizeof scn, d, "tp4.yaml");
    FILE *f = fopen(scn, "w");
    fputs("model: {preset: gpt3-13b, micro_batch: 1, dtype: bf16}\ndevice: A100-80GB\n"
          "platform: dgx-a100\nstrategy: {kind: 1d, tp: 4, sequence_parallel: false}\n"
          "run: {layers: 40, micro_batches: 1}\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "run %s --json %s -q", scn, a);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    snprintf(args, sizeof args, "run scenarios/quickstart.yaml --set strategy.tp=4 --json %s -q",
             b);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    json_t *x = load(a), *y = load(b);
    cr_assert(eq(dbl, num(x, "iteration_time_s"), num(y, "iteration_time_s")));
    cr_assert(eq(int, (int)num(y, "gpus"), 4));
    json_decref(x);
    json_decref(y);
    /* a preset standing where a mapping is needed becomes {preset: ...} */
    snprintf(args, sizeof args,
             "run scenarios/quickstart.yaml --set platform.nodes=2 --set strategy.tp=8 --json %s "
             "-q",
             b);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    testdir_remove(d);
}

Test(user, a_bad_set_names_the_assignment_and_the_field)
{
    static const char *const cases[][2] = {
        {"--set strategy.tp=x", "tpsim: --set strategy.tp=x: field 'strategy.tp': expected an "
                                "integer, got 'x'"},
        {"--set strategy.tpp=4", "tpsim: --set strategy.tpp=4: field 'strategy.tpp': unknown key"},
        {"--set 'model.hidden=[1'", "tpsim: --set model.hidden=[1: field 'model.hidden': invalid "
                                    "YAML value"},
        {"--set 'bad key=1'", "tpsim: --set: expected KEY=VALUE"},
        {"--set strategy", "tpsim: --set: expected KEY=VALUE"},
        {"--set model.preset.x=1",
         "tpsim: --set model.preset.x=1: field 'model.preset': expected a "
         "string"},
        {"--set training.tokens=lots",
         "tpsim: --set training.tokens=lots: field 'training.tokens': "
         "expected a count of tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512], out[4096];
        snprintf(args, sizeof args, "run scenarios/quickstart.yaml %s -q", cases[i][0]);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s: %s", cases[i][0], out);
        cr_assert(strstr(out, cases[i][1]) == out, "%s: '%s'", cases[i][0], out);
        cr_assert(eq(int, (int)(strchr(out, '\n') - out + 1), (int)strlen(out)), "%s", out);
    }
}

Test(user, set_is_refused_on_a_trace_directory)
{
    char d[256], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    snprintf(args, sizeof args, "trace scenarios/quickstart.yaml -o %s/tr", d);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    snprintf(args, sizeof args, "run %s/tr --set strategy.tp=4", d);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s", out);
    cr_assert(strstr(out, "tpsim run: --set applies to scenarios, not to a trace directory") == out,
              "%s", out);
    testdir_remove(d);
}

Test(user, set_applies_to_every_point_of_a_sweep_and_to_plan)
{
    char d[256], csv[300], out[8192], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(csv, sizeof csv, d, "s.csv");
    snprintf(args, sizeof args,
             "sweep scenarios/sweep-example.yaml -j 2 -o %s --set run.layers=2 --set "
             "'sweep={model.hidden: [1024, 2048]}'",
             csv);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    FILE *f = fopen(csv, "r");
    cr_assert_not_null(f);
    int rows = 0;
    char line[4096];
    while (fgets(line, sizeof line, f))
        rows += strstr(line, ",ok,") != NULL;
    fclose(f);
    cr_assert(eq(int, rows, 2), "%s", out);
    cr_assert(eq(int,
                 tpsim(out, sizeof out,
                       "plan scenarios/quickstart.yaml --set strategy.tp=4 "
                       "--simulate 1 --top 1"),
                 0),
              "%s", out);
    cr_assert(strstr(out, "best: 1d tp=4") != NULL, "%s", out); /* the TP degree set */
    testdir_remove(d);
}

/* Llama 3.1 70B on 64 H100 (TP 4, CP 2, PP 4, DP 2): the job answers for 15T tokens at 2 a GPU-hour
 * follow from its iteration and tokens per iteration by hand. */
Test(user, a_job_says_tokens_per_second_time_to_train_gpu_hours_energy_and_cost)
{
    char d[256], j[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(j, sizeof j, d, "j.json");
    snprintf(args, sizeof args,
             "run scenarios/job-llama31-70b-cp2-64-h100.yaml --set training.tokens=15T "
             "--set cost.gpu_hour=2.5 --set device.idle_power=100 --json %s",
             j);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    json_t *r = load(j);
    double T = num(r, "iteration_time_s"), tok = num(r, "tokens_per_iteration");
    double gpus = num(r, "gpus");
    json_t *bd = json_object_get(r, "breakdown");
    double busy = json_number_value(json_object_get(bd, "compute_s")) / T;
    cr_assert(eq(dbl, tok, 64.0 * 8192)); /* the scenario's global batch x its sequence */
    cr_assert(ieee_ulp_eq(dbl, num(r, "tokens_per_s"), tok / T, 4));
    cr_assert(ieee_ulp_eq(dbl, num(r, "tokens_per_s_per_gpu"), tok / T / gpus, 4));
    double days = 15e12 / (tok / T);
    cr_assert(ieee_ulp_eq(dbl, num(r, "time_to_train_s"), days, 4));
    cr_assert(ieee_ulp_eq(dbl, num(r, "gpu_hours"), days * gpus / 3600, 8));
    cr_assert(ieee_ulp_eq(dbl, num(r, "cost"), days * gpus / 3600 * 2.5, 8));
    double watts = 100 + (700 - 100) * busy;
    cr_assert(le(dbl, fabs(num(r, "power_w_per_gpu") - watts), 1e-9 * watts));
    cr_assert(le(dbl, fabs(num(r, "energy_kwh") - days * gpus / 3600 * watts / 1000),
                 1e-9 * num(r, "energy_kwh")));
    cr_assert(strstr(out, "time to train") && strstr(out, "GPU-hours"), "%s", out);
    json_decref(r);
    testdir_remove(d);
}

/* Three published HuggingFace configs give the published parameter counts within 1%: Llama 3
 * 8B 8.03 B (its model card), Mixtral 8x7B 46.7 B with 12.9 B active (Mistral AI's announcement),
 * Qwen1.5-MoE-A2.7B 14.3 B with 2.7 B active (Qwen's model card). */
Test(user, hf_configs_give_the_published_parameter_counts)
{
    static const struct {
        const char *file;
        double params, active;
        const char *name;
    } m[] = {{"llama3-8b.json", 8.03e9, 8.03e9,
              "llama3-8b (layers 32, hidden 4096, heads 32, "
              "kv_heads 8, ffn 14336 SwiGLU, seq 8192"},
             {"mixtral-8x7b.json", 46.7e9, 12.9e9, "; 8 experts of ffn 14336, top 2)"},
             {"qwen1.5-moe-a2.7b.json", 14.3e9, 2.7e9, "; 60 experts of ffn 1408, top 4 + shared"}};
    char d[256], j[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(j, sizeof j, d, "r.json");
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        snprintf(args, sizeof args,
                 "run tests/data/good/hf-llama3-8b.yaml --set model.hf_config=../hf/%s --json %s "
                 "-q",
                 m[i].file, j);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s: %s", m[i].file, out);
        json_t *r = load(j), *meta = json_object_get(r, "meta");
        double p = num(meta, "parameters"), a = num(meta, "active_parameters");
        cr_assert(lt(dbl, fabs(p / m[i].params - 1), 0.01), "%s: %.4g", m[i].file, p);
        cr_assert(lt(dbl, fabs(a / m[i].active - 1), 0.01), "%s: %.4g active", m[i].file, a);
        const char *desc = json_string_value(json_object_get(meta, "model"));
        cr_assert(desc && strstr(desc, m[i].name), "%s", desc);
        json_decref(r);
    }
    testdir_remove(d);
}

Test(user, a_bad_hf_config_names_its_file_and_field)
{
    static const char *const cases[][2] = {
        {"{\"model_type\": \"gpt_neox\"}", "field 'model_type': model type 'gpt_neox' is not one"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 4096}",
         "field 'num_hidden_layers': missing: a llama config gives it"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 4096, "
         "\"num_attention_heads\": 32, \"intermediate_size\": 1.5, \"vocab_size\": 10}",
         "field 'intermediate_size': expected an integer"},
        {"{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"hidden_size\": 5120, "
         "\"num_attention_heads\": 32, \"head_dim\": 128, \"intermediate_size\": 8, "
         "\"vocab_size\": 10}",
         "field 'head_dim': 128, where hidden_size / num_attention_heads is 160"},
        {"{\"model_type\": \"llama\",\n  \"hidden_size\": }", ":2:18: invalid JSON"},
    };
    char d[256], cfg[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(cfg, sizeof cfg, d, "config.json");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(cfg, "w");
        fputs(cases[i][0], f);
        fclose(f);
        snprintf(args, sizeof args,
                 "run tests/data/good/hf-llama3-8b.yaml --set model.hf_config=%s", cfg);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s: %s", cases[i][0], out);
        cr_assert(strstr(out, cfg) == out + 7, "%s", out); /* "tpsim: FILE..." */
        cr_assert(strstr(out, cases[i][1]) != NULL, "%s: %s", cases[i][1], out);
    }
    /* no sequence: the config has none to train at */
    snprintf(
        args, sizeof args,
        "run tests/data/good/hf-llama3-8b.yaml --set 'model={hf_config: ../hf/llama3-8b.json}'");
    cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s", out);
    cr_assert(strstr(out, "field 'model.seq': missing: a HuggingFace config gives no training "
                          "sequence length") != NULL,
              "%s", out);
    testdir_remove(d);
}

/* The scenario `tpsim import megatron` wrote, as a string (the caller frees). */
static char *import_megatron(const char *args, char *log, size_t len, const char *yaml)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "import megatron -o %s %s", yaml, args);
    cr_assert(eq(int, tpsim(log, len, cmd), 0), "%s: %s", args, log);
    FILE *f = fopen(yaml, "r");
    cr_assert_not_null(f);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return strdup(text);
}

/* Megatron-LM's examples (tests/data/megatron: their flags, in their scripts' shell styles)
 * give the scenarios their flags say, and `run` runs them. */
Test(user, import_megatron_reads_the_examples_scripts)
{
    static const struct {
        const char *args;
        const char *keys[12];
    } cases[] = {
        {"tests/data/megatron/gpt3-175b.sh --gpus 1024",
         {"  layers: 96\n  hidden: 12288\n  heads: 96\n  seq: 2048\n  micro_batch: 1\n"
          "  vocab: 51200\n  dtype: fp16\n",
          "platform: {preset: dgx-h100, nodes: 128}\n", "  tp: 8\n  pp: 16\n  dp: 8\n",
          "  global_batch: 1536\n  recompute: none\n", "  tokens: 1572864000000\n",
          "ignored: --rampup-batch-size, --weight-decay", NULL}},
        {"tests/data/megatron/llama3-8b-fp8.sh",
         {"  ffn: 14336\n  kv_heads: 8\n  glu: true\n  seq: 8192\n",
          "  vocab: 128256\n  dtype: fp8\n",
          "  tp: 1\n  pp: 1\n  dp: 8\n  sequence_parallel: false\n",
          "  distributed_optimizer: true\n  overlap_grad_reduce: true\n  overlap_param_gather: "
          "true\n  untied_embeddings: true\n  grad_reduce_in_bf16: true\n  fp8_param_gather: "
          "true\n",
          "  tokens: 16000000000000\n", NULL}},
        {"tests/data/megatron/llama2-70b.sh",
         {"  layers: 80\n  hidden: 8192\n  heads: 64\n  ffn: 28672\n  kv_heads: 8\n",
          "platform: {preset: dgx-h100, nodes: 4}\n",
          "  tp: 8\n  pp: 4\n  dp: 1\n  sequence_parallel: true\n",
          "  schedule: interleaved\n  virtual_stages: 4\n  overlap_p2p_comm: true\n",
          "  recompute: none\n", NULL}},
    };
    char d[256], yaml[300], log[8192], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(yaml, sizeof yaml, d, "s.yaml");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *y = import_megatron(cases[i].args, log, sizeof log, yaml);
        for (int k = 0; cases[i].keys[k]; k++)
            cr_assert(strstr(y, cases[i].keys[k]) || strstr(log, cases[i].keys[k]),
                      "%s: '%s' not in\n%s\n%s", cases[i].args, cases[i].keys[k], y, log);
        free(y);
        snprintf(args, sizeof args, "run %s -q", yaml);
        cr_assert(eq(int, tpsim(log, sizeof log, args), 0), "%s: %s", cases[i].args, log);
    }
    /* the GPT-3 example launches one machine: the scenario needs the 128 GPUs TP x PP take */
    char *y = import_megatron("tests/data/megatron/gpt3-175b.sh", log, sizeof log, yaml);
    cr_assert(strstr(y, "  dp: 1\n") && strstr(log, "the launch's 8 GPUs cannot hold tp x pp x cp "
                                                    "= 128"),
              "%s", log);
    free(y);
    /* interleaving overlaps the pipeline's messages unless the launch says not to */
    y = import_megatron("-- --num-layers 8 --hidden-size 1024 --num-attention-heads 16 "
                        "--seq-length 1024 --pipeline-model-parallel-size 2 "
                        "--num-layers-per-virtual-pipeline-stage 2 --no-overlap-p2p-communication",
                        log, sizeof log, yaml);
    cr_assert(strstr(y, "  virtual_stages: 2\n") && !strstr(y, "overlap_p2p_comm"), "%s\n%s", y,
              log);
    free(y);
    /* --tp-only-amax-red goes with FP8, and is dropped without it (Megatron-LM ignores it) */
    for (int fp8 = 0; fp8 < 2; fp8++) {
        char a[512];
        snprintf(a, sizeof a,
                 "-- --num-layers 2 --hidden-size 1024 --num-attention-heads 16 "
                 "--seq-length 1024 --tensor-model-parallel-size 2 --bf16 %s --tp-only-amax-red",
                 fp8 ? "--fp8-format hybrid" : "");
        y = import_megatron(a, log, sizeof log, yaml);
        cr_assert(eq(int, strstr(y, "  tp_only_amax_red: true\n") != NULL, fp8), "%s\n%s", y, log);
        free(y);
    }
    /* the flags themselves, after -- */
    y = import_megatron("-- --num-layers 2 --hidden-size 1024 --num-attention-heads 16 "
                        "--seq-length=1024 --tensor-model-parallel-size 2 --sequence-parallel "
                        "--recompute-activations --made-up-flag 3",
                        log, sizeof log, yaml);
    cr_assert(strstr(y, "  tp: 2\n  pp: 1\n  dp: 1\n  sequence_parallel: true\n") &&
                  strstr(y, "  recompute: selective\n") &&
                  strstr(log, "ignored (not modelled): --made-up-flag"),
              "%s\n%s", y, log);
    free(y);
    testdir_remove(d);
}

Test(user, import_megatron_refuses_what_it_cannot_read_with_the_flag)
{
    char d[256], sh[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(sh, sizeof sh, d, "x.sh");
    static const char *const cases[][2] = {
        {"TP=x\ntorchrun pretrain_gpt.py --num-layers 2 --tensor-model-parallel-size $TP\n",
         "x.sh:2:0: field '--tensor-model-parallel-size': expected a positive integer, got 'x'"},
        {"echo no training here\n", "x.sh: no command that runs a training script"},
        {"python pretrain_gpt.py --num-layers 2 --hidden-size 64 --seq-length 8\n",
         "field '--num-attention-heads': missing"},
        {"python pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 2 "
         "--seq-length 8 --fp8-format e5m2\n",
         "field '--fp8-format': expected hybrid or e4m3, got 'e5m2'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(sh, "w");
        fputs(cases[i][0], f);
        fclose(f);
        snprintf(args, sizeof args, "import megatron %s", sh);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s: %s", cases[i][0], out);
        cr_assert(strstr(out, cases[i][1]) != NULL, "'%s' not in '%s'", cases[i][1], out);
    }
    snprintf(args, sizeof args, "import megatron %s -o %s", sh, sh); /* never over the script */
    cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s", out);
    cr_assert(strstr(out, "is the script itself") != NULL, "%s", out);
    testdir_remove(d);
}

/* Planned on two settings with their own prices, the same job ranks B200 first by time and the
 * H100 first by cost per token (at 6 against 2 a GPU-hour); each row's cost is its GPU-hours at
 * its price, and --rank cost refuses a setting without one. */
Test(user, plan_compare_ranks_settings_by_time_cost_or_energy)
{
    char d[256], scn[300], j[300], out[8192], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(scn, sizeof scn, d, "cmp.yaml");
    testdir_path(j, sizeof j, d, "plan.json");
    FILE *f = fopen(scn, "w");
    fputs("model: {preset: gpt3-1.3b, micro_batch: 1}\ndevice: A100-80GB\n"
          "platform: {preset: dgx-a100, nodes: 4}\nstrategy: {tp: 4, pp: 2, dp: 4}\n"
          "training: {global_batch: 32, tokens: 1B}\ncompare:\n"
          "  - {name: H100, device: H100-SXM, platform: {preset: dgx-h100, nodes: 4}, "
          "cost: {gpu_hour: 2}}\n"
          "  - {name: B200, device: B200, platform: {preset: dgx-b200, nodes: 4}, "
          "cost: {gpu_hour: 6}}\n",
          f);
    fclose(f);
    const char *first[] = {"B200", "H100"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "plan %s --rank %s --json %s", scn, k ? "cost" : "time", j);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
        json_t *r = load(j), *rows = json_object_get(r, "compare");
        cr_assert(eq(int, (int)json_array_size(rows), 2));
        json_t *top = json_array_get(rows, 0);
        cr_assert(
            eq(str, (char *)json_string_value(json_object_get(top, "setting")), (char *)first[k]));
        for (int i = 0; i < 2; i++) {
            json_t *w = json_array_get(rows, (size_t)i);
            double price =
                !strcmp(json_string_value(json_object_get(w, "setting")), "H100") ? 2 : 6;
            double t = num(w, "iteration_s"), tps = num(w, "tokens_per_s");
            cr_assert(ieee_ulp_eq(dbl, tps, 32.0 * 2048 / t, 4));
            cr_assert(ieee_ulp_eq(dbl, num(w, "gpu_hours"), 1e9 / tps * 32 / 3600, 8));
            cr_assert(ieee_ulp_eq(dbl, num(w, "cost"), num(w, "gpu_hours") * price, 8));
        }
        json_decref(r);
    }
    /* by cost, a setting with no price is kept with its reason */
    f = fopen(scn, "a");
    fputs("  - {name: unpriced, device: H100-SXM, platform: {preset: dgx-h100, nodes: 4}}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "plan %s --rank cost", scn);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    cr_assert(strstr(out, "unpriced") && strstr(out, "no price to rank by cost"), "%s", out);
    cr_assert(
        eq(int, tpsim(out, sizeof out, "plan tests/data/good/plan-compare.yaml --rank speed"), 2));
    testdir_remove(d);
}

/* A sweep with a zip (device and platform together), named variants and where: conditions: the
 * points it can never run are listed before any runs, the filtered ones have no row, failures
 * count in the progress, and a device on another GPU's platform is warned of. */
Test(user, sweep_zips_variants_filters_and_lists_impossible_points_first)
{
    char d[256], scn[300], csv[300], out[16384], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(scn, sizeof scn, d, "s.yaml");
    testdir_path(csv, sizeof csv, d, "s.csv");
    FILE *f = fopen(scn, "w");
    fputs("model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
          "run: {layers: 2}\nsweep:\n  strategy.tp: [1, 2, 16]\n"
          "  zip:\n    device: [A100-80GB, H100-SXM, A100-80GB]\n"
          "    platform: [dgx-a100, dgx-h100, dgx-h100]\n"
          "  variants:\n    plain: {strategy.sequence_parallel: false}\n"
          "    sp: {strategy: {tp: 2, sequence_parallel: true}}\n"
          "  where: [\"strategy.tp >= 2 || variant == 'plain'\"]\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "sweep %s -j 2 -o %s", scn, csv);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    /* 3 x 3 x 2 = 18 points, tp 1 with sp left out (3); tp 16 cannot run on 8 GPUs (3 points:
     * the sp variant's strategy mapping, set after strategy.tp, replaces it with its tp 2):
     * listed before the run line */
    const char *list = strstr(out, "points that cannot run:"), *run = strstr(out, "(12 to run)");
    cr_assert(list && run && list < run, "%s", out);
    cr_assert(strstr(out, "  point 12 (strategy.tp=16 device / platform=A100-80GB / dgx-a100 "
                          "variant=plain): strategy.tp: TP degree 16 is larger than the "
                          "platform's 8 GPUs\n") != NULL,
              "%s", out);
    cr_assert(strstr(out, "18 points, 3 left out by where:") != NULL, "%s", out);
    cr_assert(strstr(out, "warning: 4 point(s): device A100-80GB on dgx-h100, a platform of H100 "
                          "machines") != NULL,
              "%s", out);
    cr_assert(strstr(out, "15 points in") && strstr(out, "12 ok, 3 with errors"), "%s", out);
    f = fopen(csv, "r");
    char line[4096];
    int rows = 0, sp_tp1 = 0;
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert(strncmp(line, "point,strategy.tp,device / platform,variant,status,", 50) == 0, "%s",
              line);
    while (fgets(line, sizeof line, f)) {
        rows++;
        sp_tp1 += strncmp(strchr(line, ',') + 1, "1,", 2) == 0 && strstr(line, ",sp,") != NULL;
    }
    fclose(f);
    cr_assert(eq(int, rows, 15));
    cr_assert(eq(int, sp_tp1, 0));
    testdir_remove(d);
}

Test(user, a_bad_sweep_section_is_one_located_error)
{
    static const char *const cases[][2] = {
        {"  zip:\n    device: [A100-80GB, H100-SXM]\n    platform: [dgx-a100]\n",
         ":9:15: field 'sweep.zip.platform': 1 values, where the zip's first key has 2"},
        {"  strategy.tp: [2, 4]\n  where: \"strategy.pp > 1\"\n",
         ":8:10: field 'sweep.where': 'strategy.pp > 1': 'strategy.pp' is not a swept key"},
        {"  strategy.tp: [2, 4]\n  where: [\"strategy.tp >\"]\n",
         "field 'sweep.where': 'strategy.tp >': a condition cut short"},
        {"  variants:\n    a: {strategy.tp: 2}\n    b: 4\n",
         ":9:8: field 'sweep.variants.b': expected a mapping of scenario keys"},
        {"  where: \"1 == 1\"\n", "field 'sweep': no key to sweep"},
    };
    char d[256], scn[300], out[4096], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(scn, sizeof scn, d, "s.yaml");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(scn, "w");
        fprintf(f,
                "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 2}\n"
                "run: {layers: 2}\nsweep:\n%s",
                cases[i][0]);
        fclose(f);
        snprintf(args, sizeof args, "sweep %s -j 1 -o %s/s.csv", scn, d);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s", out);
        cr_assert(strstr(out, cases[i][1]) != NULL, "'%s' not in '%s'", cases[i][1], out);
    }
    testdir_remove(d);
}

/* The 200-point example: a zip and a where: filter, its impossible points listed before any
 * runs, and a plot whose script says what a reader needs: the metric with its unit, the x key's
 * meaning, one panel per sequence length, the held column in the title. */
Test(user, a_200_point_sweep_lists_what_cannot_run_and_plots_for_a_reader)
{
    char d[256], csv[300], gp[300], out[65536], args[1024];
    cr_assert_not_null(testdir_make(d, sizeof d));
    testdir_path(csv, sizeof csv, d, "hw.csv");
    testdir_path(gp, sizeof gp, d, "hw.gp");
    snprintf(args, sizeof args,
             "sweep scenarios/sweep-hardware.yaml -j 2 -o %s --y mfu --x model.hidden --group "
             "strategy.tp --facet model.seq",
             csv);
    cr_assert(eq(int, tpsim(out, sizeof out, args), 0), "%s", out);
    const char *list = strstr(out, "32 point(s) cannot run"),
               *run = strstr(out, "200 points, 16 left out by where: (152 to run)");
    cr_assert(list && run && list < run, "%s", out);
    FILE *f = fopen(gp, "r");
    cr_assert_not_null(f, "no gnuplot script");
    static char g[1 << 20];
    size_t n = fread(g, 1, sizeof g - 1, f);
    g[n] = '\0';
    fclose(f);
    cr_assert(strstr(g, "set ylabel 'MFU (%)'") && strstr(g, "set xlabel 'hidden size'"), "%s", g);
    cr_assert(strstr(g, "set multiplot layout 2,3 title 'two layers on a DGX A100 and a DGX H100 "
                        "(device / platform A100-80GB / dgx-a100)'") != NULL);
    cr_assert(strstr(g, "set title 'sequence length (tokens) 8192'") != NULL);
    cr_assert(strstr(g, "title 'TP degree 16'") != NULL);
    /* options the sweep cannot honour are refused before anything runs */
    static const char *const bad[][2] = {
        {"--y nope", "tpsim: --y: 'nope' is not a result to plot"},
        {"--x model.seq --group model.seq", "tpsim: --group: 'model.seq' is --x already"},
        {"--facet strategy.pp", "tpsim: --facet: 'strategy.pp' is not a swept key"},
        {"--log z", "tpsim sweep: bad --log 'z'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "sweep scenarios/sweep-hardware.yaml -o %s/x.csv %s", d,
                 bad[i][0]);
        cr_assert(eq(int, tpsim(out, sizeof out, args), 2), "%s: %s", bad[i][0], out);
        cr_assert(strstr(out, bad[i][1]) == out, "%s: '%s'", bad[i][0], out);
    }
    testdir_remove(d);
}
