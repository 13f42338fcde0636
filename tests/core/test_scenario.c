/* test_scenario.c - scenario loading; every malformed fixture in tests/data/bad gives one error
 * naming file, line, column and field. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <gsl/gsl_errno.h>
#include <string.h>

#include "core/fabric.h"
#include "core/scenario.h"

#define BAD TPSIM_SOURCE_DIR "/tests/data/bad/"

static void setup(void)
{
    gsl_set_error_handler_off();
}

TestSuite(scenario, .init = setup);

struct bad_case {
    const char *file;
    int line, col;
    const char *field; /* "" when the error is the YAML syntax itself */
    const char *needle;
};

static const struct bad_case cases[] = {
    {"syntax.yaml", 4, 9, "", "invalid YAML"},
    {"unknown_key.yaml", 6, 3, "strategy.pipeline", "unknown key"},
    {"wrong_type.yaml", 5, 7, "strategy.tp", "expected an integer"},
    {"negative_size.yaml", 3, 11, "model.hidden", "at least 1"},
    {"zero_size.yaml", 3, 16, "model.micro_batch", "at least 1"},
    {"tp_too_large.yaml", 6, 7, "strategy.tp", "larger than the platform"},
    {"tp_not_dividing_heads.yaml", 5, 7, "strategy.tp", "must divide model.heads"},
    {"model_kv_heads.yaml", 1, 55, "model.kv_heads", "must divide model.heads"},
    {"model_glu_too_small.yaml", 1, 28, "model.hidden", "too small for a gated MLP"},
    {"tp_not_dividing_kv_heads.yaml", 5, 7, "strategy.tp", "must divide model.kv_heads"},
    {"unknown_device.yaml", 3, 11, "device.preset", "unknown device"},
    {"bad_platform_param.yaml", 5, 13, "platform.pcie_gen", "3, 4 or 5"},
    {"bad_rate.yaml", 4, 18, "device.hbm_bandwidth", "expected a rate"},
    {"device_efficiency_tiny.yaml", 4, 20, "device.gemm_efficiency",
     "a fraction of the peak from 0.01 to 1"},
    {"run_layers_too_many.yaml", 7, 11, "run.layers", "only 40 layers"},
    {"missing_strategy.yaml", 1, 1, "strategy", "missing"},
    {"job_bad_recompute.yaml", 5, 23, "training.recompute", "none, selective or full"},
    {"job_bad_schedule.yaml", 5, 22, "pipeline.schedule", "1f1b, gpipe or interleaved"},
    {"job_global_batch.yaml", 5, 26, "training.global_batch", "multiple of dp x"},
    {"job_pp_not_dividing_layers.yaml", 4, 23, "strategy.pp", "must divide model.layers"},
    {"job_run_layers.yaml", 5, 15, "run.layers", "a job runs the whole model"},
    {"job_too_many_gpus.yaml", 4, 30, "strategy.dp", "the platform has 16"},
    {"job_virtual_stages.yaml", 5, 44, "pipeline.virtual_stages", "interleaved only"},
    {"job_overlap_p2p_comm.yaml", 5, 46, "pipeline.overlap_p2p_comm", "interleaved only"},
    {"job_batch_p2p_sync.yaml", 5, 44, "pipeline.batch_p2p_sync", "expected true or false"},
    {"job_overlap_param_gather.yaml", 5, 61, "training.overlap_param_gather",
     "needs the distributed optimizer"},
    {"job_zero_stage.yaml", 5, 36, "training.zero", "expected 0, 1, 2 or 3"},
    {"job_bad_order.yaml", 4, 33, "strategy.order", "expected tp-dp-pp"},
    {"job_zero_contradicts.yaml", 7, 26, "training.distributed_optimizer", "contradicts"},
    {"job_zero3_param_gather.yaml", 5, 43, "training.overlap_param_gather", "ZeRO-3"},
    {"job_grad_reduce_in_bf16_fp16.yaml", 5, 62, "training.grad_reduce_in_bf16",
     "applies to bf16 training"},
    {"job_fp8_param_gather_bf16.yaml", 5, 59, "training.fp8_param_gather", "needs model.dtype fp8"},
    {"job_tp_only_amax_red_bf16.yaml", 5, 59, "training.tp_only_amax_red", "needs model.dtype fp8"},
    {"job_bad_fold.yaml", 5, 13, "run.fold", "auto, true or false"},
    {"mesh_not_tp.yaml", 7, 9, "strategy.mesh", "must multiply to tp"},
    {"bad_placement.yaml", 4, 55, "strategy.placement", "row-first or column-first"},
    {"mesh_on_1d.yaml", 4, 25, "strategy.mesh", "kind: 2d only"},
    {"primepar_mesh.yaml", 4, 41, "strategy.mesh", "kind: 2d only"},
    {"primepar_sequence_parallel.yaml", 4, 54, "strategy.sequence_parallel", "kind 1d only"},
    {"primepar_chunks.yaml", 4, 43, "strategy.chunks", "kinds 1d and 2d only"},
    {"unknown_strategy_kind.yaml", 4, 18, "strategy.kind", "expected 1d, 2d, primepar, summa2d"},
    {"summa2d_tp_not_square.yaml", 4, 31, "strategy.tp", "must be a square q x q"},
    {"tesseract_no_depth.yaml", 4, 11, "strategy.depth", "missing"},
    {"depth_on_1d.yaml", 4, 36, "strategy.depth", "kind: tesseract only"},
    {"tp3d_micro_batch.yaml", 4, 28, "strategy.tp", "splits the micro-batch over 4 GPUs"},
    {"mlp_tp_not_dividing.yaml", 4, 27, "strategy.mlp_tp", "must divide tp (8), got 3"},
    {"attention_tp_on_2d.yaml", 4, 50, "strategy.attention_tp", "kind 1d only"},
    {"attention_tp_micro_batch.yaml", 4, 33, "strategy.attention_tp",
     "splits the micro-batch over 4 replicas"},
    {"mlp_tp_in_a_job.yaml", 4, 27, "strategy.mlp_tp", "not yet to a whole job"},
    {"async_tp_without_sp.yaml", 4, 42, "strategy.async_tensor_parallel",
     "needs sequence_parallel: true"},
    {"async_tp_with_tp_comm_overlap.yaml", 4, 90, "strategy.async_tensor_parallel",
     "replaces tp_comm_overlap"},
    {"ring_on_1d.yaml", 4, 25, "strategy.ring", "kind primepar only"},
    {"ring_micro_batch.yaml", 4, 41, "strategy.ring", "4 rings split the micro-batch"},
    {"ring_in_a_job.yaml", 4, 41, "strategy.ring", "not yet to a whole job"},
    {"devices_length.yaml", 5, 10, "devices", "expected a list of device presets, one"},
    {"devices_unknown.yaml", 5, 55, "devices", "unknown device 'X900' (expected one of:"},
    {"devices_in_a_job.yaml", 5, 10, "devices", "applies to a TP group alone, not yet to"},
    {"slowdown_length.yaml", 5, 24, "stragglers.slowdown",
     "expected a list of 8 speed factors, one"},
    {"slowdown_negative.yaml", 5, 28, "stragglers.slowdown",
     "must be between 0.01 and 1000, got -1"},
    {"noise_unknown.yaml", 5, 21, "stragglers.noise", "expected none, lognormal or stall, got"},
    {"sigma_without_noise.yaml", 5, 57, "stragglers.sigma", "applies with stragglers.noise"},
    {"stall_without_probability.yaml", 5, 21, "stragglers.stall_probability",
     "missing: how often a kernel (or an"},
    {"stall_factor_on_lognormal.yaml", 5, 58, "stragglers.stall_factor",
     "applies with stragglers.noise: stall"},
    {"lognormal_without_sigma.yaml", 5, 21, "stragglers.sigma",
     "missing: the spread of log(factor)"},
    {"noise_per_unknown.yaml", 5, 49, "stragglers.per", "expected op or iteration, got 'step'"},
    {"stall_probability_range.yaml", 5, 47, "stragglers.stall_probability",
     "must be between 0 and 1, got 1.5"},
    {"straggler_seed_negative.yaml", 5, 50, "stragglers.seed",
     "must be between 0 and 4294967295, got -3"},
    {"stragglers_unknown_key.yaml", 5, 50, "stragglers.speed",
     "unknown key 'speed' (expected one of:"},
    {"cp_seq_chunks.yaml", 4, 23, "strategy.cp", "2 x cp = 6 chunks, which must divide"},
    {"cp_a2a_heads.yaml", 4, 41, "strategy.cp_comm_type", "tp x cp = 64 GPUs, which must divide"},
    {"cp_on_primepar.yaml", 4, 39, "strategy.cp", "applies to kinds 1d and 2d, not primepar"},
    {"cp_comm_without_cp.yaml", 4, 33, "strategy.cp_comm_type", "applies with context"},
    {"cp_core_attention.yaml", 5, 24, "framework.attention", "fused kernels: flash, not core"},
    {"cp_too_many_gpus.yaml", 4, 23, "strategy.cp", "tp x cp = 16 GPUs, but the platform has 8"},
    {"cp_stragglers.yaml", 5, 13, "stragglers", "not yet with context parallelism"},
    {"cp_comm_unknown.yaml", 4, 40, "strategy.cp_comm_type", "expected p2p, all_gather or a2a"},
    {"moe_ep_experts.yaml", 4, 48, "strategy.ep", "must divide model.moe.experts (8), got 3"},
    {"moe_top_k.yaml", 3, 28, "model.moe.top_k", "must be at most model.moe.experts (4), got 6"},
    {"moe_shares.yaml", 3, 24, "model.moe.expert_shares", "expected a list of 8 numbers"},
    {"moe_without_sp.yaml", 4, 16, "strategy.sequence_parallel", "needs sequence parallelism"},
    {"ep_without_moe.yaml", 4, 23, "strategy.ep", "applies to a mixture of experts"},
    {"moe_job_expert_layout.yaml", 4, 37, "strategy.ep", "expert_tp x ep (16) must divide them"},
    {"moe_stragglers.yaml", 5, 13, "stragglers", "not yet with a mixture of experts"},
    {"moe_zero3.yaml", 5, 36, "training.zero", "do not combine with a mixture of experts"},
    {"moe_skew_and_shares.yaml", 3, 23, "model.moe.routing_skew", "not both"},
    {"pp_uneven_middle.yaml", 5, 32, "pipeline.first_stage_layers",
     "leaves 113 layers of model.layers (126) for 14 other stage(s)"},
    {"pp_uneven_interleaved.yaml", 5, 73, "pipeline.last_stage_layers", "not yet the interleaved"},
    {"pp_account_not_dividing.yaml", 4, 23, "strategy.pp", "the embedding counted as a layer (+1)"},
    {"balance_unknown.yaml", 4, 28, "strategy.balance", "expected none, zero_resize, migrate or"},
    {"balance_on_2d.yaml", 4, 45, "strategy.balance", "balancing applies to kind: 1d with one"},
    {"balance_in_a_job.yaml", 4, 35, "strategy.balance", "applies to a TP group alone, not yet to"},
    {"max_drop_without_semi.yaml", 4, 47, "strategy.max_drop", "applies with balance: semi"},
    {"max_drop_range.yaml", 4, 44, "strategy.max_drop", "must be between 0 and 1, got 2"},
    {"sigma_range.yaml", 5, 39, "stragglers.sigma", "must be between 0 and 3, got 5"},
    {"degraded_unknown_node.yaml", 3, 64, "platform.degraded_links[0].between",
     "unknown node 'gpu99' (tpsim platform"},
    {"degraded_no_link.yaml", 3, 57, "platform.degraded_links[0].between",
     "no link joins gpu3 and gpu4"},
    {"degraded_factor.yaml", 3, 85, "platform.degraded_links[0].factor",
     "must be above 0 and at most 1, got 2"},
    {"degraded_from_without_for.yaml", 3, 96, "platform.degraded_links[0].for", "needs `for`"},
    {"degraded_for_zero.yaml", 3, 95, "platform.degraded_links[0].for", "must be above 0"},
    {"degraded_for_bad.yaml", 3, 95, "platform.degraded_links[0].for", "expected a time"},
    {"degraded_every_short.yaml", 3, 107, "platform.degraded_links[0].every", "longer than `for`"},
    {"degraded_both.yaml", 3, 47, "platform.degraded_links[0]", "give one of factor or bandwidth"},
    {"degraded_not_a_list.yaml", 3, 46, "platform.degraded_links",
     "expected a list of {between: [A, B],"},
    {"summa2d_sequence_parallel.yaml", 4, 53, "strategy.sequence_parallel",
     "does not apply to kind summa2d"},
    {"bad_collective_algorithm.yaml", 5, 26, "collectives.algorithm", "expected auto, ring"},
    {"bad_collective_channels.yaml", 5, 25, "collectives.channels", "at most 8"},
    {"bad_framework_launch.yaml", 5, 21, "framework.launch", "expected none, eager or graphs"},
    {"bad_framework_connections.yaml", 5, 42, "framework.cuda_device_max_connections",
     "at most 32"},
    {"bad_launch_overhead.yaml", 2, 45, "device.launch_overhead", ""},
    {"bad_device_memory.yaml", 2, 32, "device.memory", "expected a size"},
    {"bad_device_memory_reserved.yaml", 2, 45, "device.memory_reserved", "less than the device's"},
    {"bad_device_tdp.yaml", 2, 30, "device.tdp", "greater than 0"},
    {"bad_nvlink_domain.yaml", 3, 48, "platform.nvlink_domain", "whole trays of 4"},
    {"compare_not_list.yaml", 5, 10, "compare", "expected a list of settings"},
    {"compare_bad_key.yaml", 6, 20, "compare[0].strategy", "unknown key 'strategy'"},
    {"bad_flash_launch_overhead.yaml", 2, 51, "device.flash_launch_overhead", "expected a time"},
    {"bad_nvls_efficiency.yaml", 5, 32, "collectives.nvls_efficiency", "from 0.01 to 1, got 1.5"},
    {"bad_nvls.yaml", 5, 21, "collectives.nvls", "true or false"},
    {"bad_nvls_tree.yaml", 5, 26, "collectives.nvls_tree", "true or false"},
    {"bad_collnet.yaml", 5, 24, "collectives.collnet", "true or false"},
    {"bad_tree_rate.yaml", 5, 26, "collectives.tree_rate", "must be greater than 0"},
    {"fabric_jobs_not_list.yaml", 3, 7, "jobs", "expected a list of 1 to 64 jobs"},
    {"fabric_jobs_empty.yaml", 3, 7, "jobs", "expected a list of 1 to 64 jobs"},
    {"fabric_job_not_map.yaml", 3, 8, "jobs[0]", "expected a mapping"},
    {"fabric_job_platform.yaml", 9, 5, "jobs[0].platform", "unknown key 'platform'"},
    {"fabric_missing_platform.yaml", 1, 1, "platform", "missing section"},
    {"fabric_sweep.yaml", 9, 1, "sweep", "unknown key 'sweep'"},
    {"fabric_gpus_not_list.yaml", 9, 11, "jobs[0].gpus", "expected a list of GPU indices"},
    {"fabric_gpu_out_of_range.yaml", 9, 17, "jobs[0].gpus", "from 0 to 15"},
    {"fabric_gpu_bad_range.yaml", 9, 17, "jobs[0].gpus", "got '7-4'"},
    {"fabric_gpu_twice.yaml", 9, 17, "jobs[0].gpus", "GPU 3 is listed twice"},
    {"fabric_gpu_count.yaml", 9, 11, "jobs[0].gpus", "runs on 8 GPUs, but 4 are listed"},
    {"fabric_gpu_too_many.yaml", 9, 12, "jobs[0].gpus", "but more are listed"},
    {"fabric_gpu_shared.yaml", 15, 12, "jobs[1].gpus", "already jobs[0]'s"},
    {"fabric_no_free_gpus.yaml", 14, 5, "jobs[2].gpus", "only 0 of the platform's 16 are free"},
    {"fabric_job_names.yaml", 9, 11, "jobs[1].name", "already named 'a'"},
    {"fabric_job_devices.yaml", 9, 14, "jobs[0].devices", "not yet to jobs sharing"},
    {"fabric_job_fold.yaml", 9, 17, "jobs[0].run.fold", "replayed op by op"},
    {"fabric_job_tp.yaml", 7, 30, "jobs[0].strategy.tp", "larger than the platform"},
    {"oversubscription_huge.yaml", 3, 58, "platform.oversubscription", "at most 100"},
    {"nvls_efficiency_tiny.yaml", 3, 54, "platform.nccl.nvls_efficiency", "from 0.01 to 1"},
    {"fabric_ops_total.yaml", 10, 5, "jobs[1]", "jobs[0..1] together would make 2.23e+07 ops"},
};

Test(scenario, every_bad_fixture_names_file_line_column_and_field)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bad_case *c = &cases[i];
        char path[1024];
        snprintf(path, sizeof path, BAD "%s", c->file);
        struct scn_scenario s;
        struct scn_fabric f;
        struct tps_error err = {0};
        int rc;
        if (scn_fabric_probe(path)) { /* several jobs on one platform */
            rc = scn_fabric_load(path, &f, &err);
            scn_fabric_release(&f);
        } else {
            rc = scn_load(path, &s, &err);
            scn_release(&s);
        }
        cr_assert(lt(int, rc, 0), "%s: accepted", c->file);
        cr_assert(eq(str, err.path, path), "%s", c->file);
        cr_assert(eq(int, err.line, c->line), "%s: line %d", c->file, err.line);
        cr_assert(eq(int, err.col, c->col), "%s: col %d", c->file, err.col);
        cr_assert(eq(str, err.field, (char *)c->field), "%s: field '%s'", c->file, err.field);
        cr_assert(strstr(err.msg, c->needle) != NULL, "%s: '%s'", c->file, err.msg);
    }
}

Test(scenario, loads_the_quickstart)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml", &s, &err), 0), "%s",
              err.msg);
    cr_assert(eq(int, s.strategy.tp, 8));
    cr_assert(eq(long, s.model.hidden, 5120));
    cr_assert(eq(int, s.topo.ngpus, 8));
    cr_assert(eq(int, s.layers, 40));
    cr_assert(eq(str, s.platform_spec, "dgx-a100"));
    scn_release(&s);
}

Test(scenario, framework_section_and_its_default)
{
    char path[] = "/tmp/tpsim-scn-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    FILE *f = fdopen(fd, "w");
    fputs("model: gpt3-13b\ndevice: {preset: H100-SXM, launch_overhead: 25us}\n"
          "platform: dgx-h100\nstrategy: {tp: 8}\n"
          "framework: {launch: graphs, kernels: eager, attention: flash}\n",
          f);
    fclose(f);
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(path, &s, &err), 0), "%s", err.msg);
    cr_assert(eq(int, s.framework.launch, MDL_LAUNCH_GRAPHS));
    cr_assert(eq(int, s.framework.kernels, MDL_KERNELS_EAGER));
    cr_assert(eq(int, s.framework.attention, MDL_ATTENTION_FLASH));
    cr_assert(ieee_ulp_eq(dbl, s.device.launch_s, 25e-6, 4));
    scn_release(&s);
    remove(path);
    /* without the section: Megatron-LM's defaults */
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml", &s, &err), 0));
    cr_assert(eq(int, s.framework.launch, MDL_LAUNCH_EAGER));
    cr_assert(eq(int, s.framework.kernels, MDL_KERNELS_FUSED));
    cr_assert(eq(int, s.framework.attention, MDL_ATTENTION_CORE));
    scn_release(&s);
}

Test(scenario, explicit_model_and_calibrated_device)
{
    char path[] = "/tmp/tpsim-scn-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    FILE *f = fdopen(fd, "w");
    fprintf(f,
            "model: {layers: 4, hidden: 1024, heads: 16, seq: 512, dtype: fp16}\n"
            "device: {preset: A100-80GB, gemm_table: "
            "%s/gemm/a100_sxm4_80gb_azure_ndv4_cublaslt_fp16.csv}\n"
            "platform: {preset: pcie-8gpu, sockets: 2}\n"
            "strategy: {tp: 8, sequence_parallel: true}\n",
            TPSIM_REFDATA);
    fclose(f);
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_load(path, &s, &err), 0), "%s", err.msg);
    cr_assert(eq(long, s.model.ffn, 4096));
    cr_assert(eq(int, s.model.dtype, MDL_FP16));
    cr_assert(s.strategy.sequence_parallel);
    cr_assert(ne(dbl, s.device.gemm_eff_max, 0.869)); /* refitted */
    cr_assert(eq(str, s.platform_spec, "pcie-8gpu sockets=2"));
    scn_release(&s);
    remove(path);
}

static int load_text(const char *text, struct scn_scenario *s, struct tps_error *err)
{
    char path[] = "/tmp/tpsim-scn-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    int rc = scn_load(path, s, err);
    remove(path);
    return rc;
}

/* A gated MLP's ffn defaults to Megatron's 2/3 of 4h rounded down to 64; a Llama preset keeps
 * its own ffn and key/value heads unless the shape is changed. */
Test(scenario, gated_mlp_and_grouped_query_keys)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int,
                 load_text("model: {layers: 2, hidden: 4096, heads: 32, kv_heads: 8, glu: true, "
                           "seq: 256}\ndevice: H100-SXM\nplatform: dgx-h100\nstrategy: {tp: 8}\n",
                           &s, &err),
                 0),
              "%s", err.msg);
    cr_assert(eq(long, s.model.ffn, 10880)); /* 8 * 4096 / 3 = 10922, down to 64 */
    char desc[256];
    scn_describe_model(&s, desc, sizeof desc);
    cr_assert(ne(ptr, strstr(desc, "kv_heads 8, ffn 10880 SwiGLU"), NULL), "%s", desc);
    cr_assert(eq(long, mdl_model_kv_heads(&s.model), 8));
    cr_assert(s.model.glu);
    scn_release(&s);
    cr_assert(eq(int,
                 load_text("model: {preset: llama3-70b, seq: 2048}\ndevice: H100-SXM\n"
                           "platform: dgx-h100\nstrategy: {tp: 8}\n",
                           &s, &err),
                 0),
              "%s", err.msg);
    cr_assert(eq(long, s.model.ffn, 28672));
    cr_assert(eq(long, s.model.kv_heads, 8));
    cr_assert(eq(long, s.model.seq, 2048));
    scn_release(&s);
    cr_assert(eq(int,
                 load_text("model: {preset: gpt3-13b}\ndevice: A100-80GB\nplatform: dgx-a100\n"
                           "strategy: {tp: 8}\n",
                           &s, &err),
                 0),
              "%s", err.msg);
    cr_assert(eq(long, mdl_model_kv_heads(&s.model), 40));
    cr_assert(not(s.model.glu));
    scn_release(&s);
}

/* Attention dropout: off unless asked for, read as a bool, named in the model's description; a
 * value that is not a bool is refused at its line and column. */
Test(scenario, attention_dropout_key)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    const char *rest = "device: A100-80GB\nplatform: dgx-a100\nstrategy: {tp: 8}\n";
    char text[256];
    snprintf(text, sizeof text, "model: {preset: gpt3-13b}\n%s", rest);
    cr_assert(eq(int, load_text(text, &s, &err), 0), "%s", err.msg);
    cr_assert(not(s.model.attn_dropout));
    scn_release(&s);
    snprintf(text, sizeof text, "model: {preset: gpt3-13b, attention_dropout: true}\n%s", rest);
    cr_assert(eq(int, load_text(text, &s, &err), 0), "%s", err.msg);
    cr_assert(s.model.attn_dropout);
    char desc[256];
    scn_describe_model(&s, desc, sizeof desc);
    cr_assert(ne(ptr, strstr(desc, "attention dropout"), NULL), "%s", desc);
    scn_release(&s);
    snprintf(text, sizeof text, "model: {preset: gpt3-13b, attention_dropout: 0.1}\n%s", rest);
    cr_assert(eq(int, load_text(text, &s, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "model.attention_dropout"));
    cr_assert(eq(int, err.line, 1));
    cr_assert(eq(int, err.col, 46));
}

/* A job's ZeRO stage and rank order: read, and named in the strategy's description. */
Test(scenario, zero_stage_and_rank_order)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    cr_assert(eq(int,
                 load_text("model: gpt3-1.3b\ndevice: A100-80GB\nplatform: {preset: dgx-a100, "
                           "nodes: 2}\nstrategy: {tp: 4, dp: 4, order: tp-pp-dp}\n"
                           "training: {zero: 3}\n",
                           &s, &err),
                 0),
              "%s", err.msg);
    cr_assert(eq(int, s.job.zero, 3));
    cr_assert(eq(int, s.job.order, MDL_ORDER_TP_PP_DP));
    char desc[256];
    scn_describe_strategy(&s, desc, sizeof desc);
    cr_assert(ne(ptr, strstr(desc, "+ZeRO-3"), NULL), "%s", desc);
    cr_assert(ne(ptr, strstr(desc, "rank order tp-pp-dp"), NULL), "%s", desc);
    scn_release(&s);
    cr_assert(eq(int,
                 load_text("model: gpt3-1.3b\ndevice: A100-80GB\nplatform: {preset: dgx-a100, "
                           "nodes: 2}\nstrategy: {tp: 4, dp: 4}\n"
                           "training: {distributed_optimizer: true}\n",
                           &s, &err),
                 0),
              "%s", err.msg);
    cr_assert(eq(int, s.job.zero, 1), "the distributed optimizer is ZeRO-1");
    scn_release(&s);
}

/* The pipeline's point-to-point keys: overlap_p2p_comm (interleaved) and batch_p2p_sync, whose
 * default, true, synchronizes the device after every batched call. */
Test(scenario, point_to_point_keys)
{
    struct scn_scenario s;
    struct tps_error err = {0};
    static const char base[] = "model: gpt3-1.3b\ndevice: A100-80GB\nplatform: {preset: dgx-a100, "
                               "nodes: 2}\nstrategy: {tp: 2, pp: 4}\ntraining: {global_batch: 8}\n";
    char text[512];
    snprintf(text, sizeof text, "%spipeline: {schedule: interleaved, overlap_p2p_comm: true}\n",
             base);
    cr_assert(eq(int, load_text(text, &s, &err), 0), "%s", err.msg);
    cr_assert(s.job.overlap_p2p_comm);
    cr_assert(not(s.job.batch_p2p_nosync));
    char desc[256];
    scn_describe_strategy(&s, desc, sizeof desc);
    cr_assert(ne(ptr, strstr(desc, "interleaved x2 +p2p overlap"), NULL), "%s", desc);
    scn_release(&s);
    snprintf(text, sizeof text, "%spipeline: {batch_p2p_sync: false}\n", base);
    cr_assert(eq(int, load_text(text, &s, &err), 0), "%s", err.msg);
    cr_assert(s.job.batch_p2p_nosync);
    cr_assert(not(s.job.overlap_p2p_comm));
    scn_release(&s);
}

/* devices per machine spread over the machines' GPUs (the scenario's own device as -1), degraded
 * links by factor and by bandwidth, the stragglers' and balancing keys. */
Test(scenario, heterogeneity_keys)
{
    struct scn_scenario s, plain;
    struct tps_error err = {0};
    cr_assert(
        eq(int, scn_load(TPSIM_SOURCE_DIR "/tests/data/good/hetero-machines.yaml", &s, &err), 0),
        "%s", err.msg);
    const struct mdl_hetero *h = &s.hetero;
    cr_assert(eq(int, h->ngpus, 16));
    cr_assert(eq(int, h->ndevices, 1));
    cr_assert(eq(str, (char *)h->devices[0].name, "H100-SXM"));
    for (int g = 0; g < 16; g++)
        cr_assert(eq(int, h->gpu_device[g], g < 8 ? -1 : 0), "GPU %d", g);
    cr_assert(eq(int, h->noise, MDL_NOISE_LOGNORMAL));
    cr_assert(eq(int, h->per, MDL_NOISE_PER_ITERATION));
    cr_assert(eq(dbl, h->sigma, 0.05));
    cr_assert(eq(u64, (uint64_t)h->seed, 9));
    cr_assert(eq(int, h->balance, MDL_BALANCE_SEMI));
    cr_assert(eq(dbl, h->max_drop, 0.2));
    cr_assert(eq(int, scn_load(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml", &plain, &err), 0));
    double nvlink = plain.topo.links[0].bw_Bps;
    int seen = 0;
    for (int l = 0; l < s.topo.nlinks; l++) {
        const struct plat_link *k = &s.topo.links[l];
        const char *a = s.topo.nodes[k->a].name, *b = s.topo.nodes[k->b].name;
        if (!strcmp(a, "gpu3") && !strcmp(b, "n0nvswitch")) {
            cr_expect(eq(dbl, k->bw_Bps, 0.5 * nvlink));
            seen++;
        } else if (!strcmp(a, "gpu9") && !strcmp(b, "n1nvswitch")) {
            cr_expect(eq(dbl, k->bw_Bps, 50e9));
            seen++;
        } else if (k->level == PLAT_LVL_NVLINK) {
            cr_expect(eq(dbl, k->bw_Bps, nvlink), "%s", k->name);
        }
    }
    cr_expect(eq(int, seen, 2));
    scn_release(&plain);
    scn_release(&s);
}

Test(scenario, jobs_sharing_a_platform)
{
    const char *path = TPSIM_SOURCE_DIR "/tests/data/good/fabric-two-jobs.yaml";
    struct scn_fabric f;
    struct tps_error err = {0};
    cr_assert(eq(int, scn_fabric_probe(path), 1));
    cr_assert(eq(int, scn_fabric_probe(TPSIM_SOURCE_DIR "/scenarios/quickstart.yaml"), 0));
    cr_assert(eq(int, scn_fabric_load(path, &f, &err), 0), "%s", err.msg);
    cr_assert(eq(str, f.name, "fabric-two-jobs"));
    cr_assert(eq(int, f.topo.ngpus, 16));
    cr_assert(eq(int, f.njobs, 2));
    /* listed GPUs, then the lowest free ones for the job that lists none */
    static const int a[] = {0, 1, 2, 3, 8, 9, 10, 11}, b[] = {4, 5, 6, 7, 12, 13, 14, 15};
    cr_assert(eq(str, f.jobs[0].name, "tp-across"));
    cr_assert(eq(str, f.jobs[1].name, "dp-job"));
    cr_assert(eq(int, f.jobs[0].ngpus, 8));
    cr_assert(eq(int, f.jobs[1].ngpus, 8));
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(int, f.jobs[0].gpus[i], a[i]));
        cr_assert(eq(int, f.jobs[1].gpus[i], b[i]));
    }
    cr_assert(eq(int, f.jobs[0].scn.is_job, 0));
    cr_assert(eq(int, f.jobs[0].scn.layers, 2));
    cr_assert(eq(int, f.jobs[1].scn.is_job, 1));
    cr_assert(eq(int, f.jobs[1].scn.fold, 0), "a job sharing a platform is not folded");
    cr_assert(eq(int, f.jobs[1].scn.topo.ngpus, 16), "each job sees the whole platform");
    char text[64];
    scn_fabric_gpus_text(&f.jobs[0], text, sizeof text);
    cr_assert(eq(str, text, "0-3,8-11"));
    scn_fabric_release(&f);
    /* a command that takes one scenario says where such a file runs */
    struct scn_scenario s;
    cr_assert(lt(int, scn_load(path, &s, &err), 0));
    scn_release(&s);
    cr_assert(eq(str, err.field, "jobs"));
    cr_assert(strstr(err.msg, "tpsim run") != NULL, "%s", err.msg);
}
