/* e2e.h - whole training iterations measured against simulated: rows of an end-to-end table in
 * the format of ../shared/refdata/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv
 * (model shape, tensor/pipeline/data parallel degrees, batch, interleaving, recompute mode and
 * the measured iteration time) or of megatron_readme_2021_a100_weak_scaling.csv beside it (model
 * shape, tensor x pipeline degree, GPUs, batch, achieved TFLOP/s per GPU; mapped by Megatron-LM's
 * placement rule, e2e.c), each simulated as a whole job (models/job.h) on a platform of enough
 * machines. Units: seconds, FLOP/s.
 */
#ifndef VALIDATE_E2E_H
#define VALIDATE_E2E_H

#include <stdbool.h>

#include "common/error.h"
#include "core/report.h"
#include "models/device.h"

struct e2e_row {
    char name[64]; /* model and recompute mode */
    char mode[48]; /* recompute mode as the table says */
    long gpus, tp, pp, dp, global_batch, micro_batch, interleave;
    long cp;                  /* context-parallel degree: the optional column context_par, else 1 */
    bool overlap_grad_reduce; /* data-parallel gradients reduced under the backward (PyTorch's
                                 DDP); else after it (Megatron-LM's local DDP) */
    bool async_grad_allreduce; /* TP input gradient's all-reduce beside the weight gradient */
    /* a production recipe's row (the third format): its model's shape beyond the first two
     * formats' (0: 4h, multi-head, vocabulary 51,200) and how it ran (its runs table's row) */
    long ffn, kv_heads, vocab;
    bool glu;             /* a gated MLP (the long-context table's Llama) */
    bool recipe;          /* FlashAttention (Transformer Engine's fused attention), no dropout */
    bool fp8;             /* precision FP8: Transformer Engine's hybrid FP8 */
    bool tp_comm_overlap; /* Transformer Engine's userbuffers TP overlap */
    bool distributed_optimizer, overlap_param_gather, untied_embeddings;
    bool grad_reduce_in_bf16; /* the gradients reduced in bf16 (recipe tables' runs) */
    bool fp8_param_gather;    /* FP8 rows: the weights kept and gathered in FP8 */
    bool overlap_p2p_comm;    /* interleaved: the point-to-point messages overlapped */
    bool batch_p2p_nosync;    /* batched point-to-point calls without a device synchronize */
    char release[24];         /* the recipe's release, where the table gives one */
    double measured_s, simulated_s, err_pct;  /* (simulated - measured) / measured, % */
    double measured_tflops, simulated_tflops; /* model TFLOP/s per GPU */
    double memory_gb;                         /* simulated memory per GPU */
    int memory_fits;
    struct report_breakdown breakdown; /* where the simulated iteration goes (core/report.h) */
};

struct e2e_result {
    int n, skipped;
    struct e2e_row *rows; /* owned */
    double median_abs_err_pct, max_abs_err_pct;
};

/* The three formats of an end-to-end table, told by its header. */
enum e2e_format {
    E2E_TABLE5, /* korthikanti2022_table5_iteration_time_via_calculon.csv's */
    E2E_WEAK,   /* megatron_readme_2021_a100_weak_scaling.csv's (model_parallel_size) */
    E2E_RECIPE, /* dgxc_bench_eos_h100_gpt3_nemotron4.csv's (precision, step_time_s): production
                   recipes, each row's model, degrees, batch, precision and step time */
    E2E_TFLOPS  /* nemo_long_context_cp_llama2_7b_h100_fp8.csv's (tflops_per_gpu_with_cp): a
                   model preset by name, degrees with CP, batch, precision and the model TFLOP/s
                   per GPU by NeMo's formula of the model's family, which gives the step time */
};
/* The format of csv's header (*out), or an error (unreadable, no header). */
int e2e_format_of(const char *csv, enum e2e_format *out, struct tps_error *err);

/* Simulates every row of csv (those of at most max_gpus GPUs when max_gpus > 0; r->skipped
 * counts the others). runs (may be NULL): a runs table for a weak-scaling csv, how each row was
 * run where the table does not say (model_size, then any of attn_heads, micro_batch,
 * pipeline_interleaving, ddp: torch | local, async_grad_allreduce: true | false; '#' starts a
 * comment line); the weak-scaling csv may carry the same columns itself, which runs overrides.
 * Every runs row must name a row of csv. A recipe table's runs table names rows by release and
 * model (columns release, model, then any of recompute: none | selective | full,
 * tp_comm_overlap, distributed_optimizer, overlap_grad_reduce, overlap_param_gather,
 * untied_embeddings, grad_reduce_in_bf16, fp8_param_gather, overlap_p2p_comm, batch_p2p_sync
 * (empty: true): true | false, and virtual_stages where the table leaves vp empty); each row's
 * precision (BF16, FP8) overrides dtype. A TFLOP/s table (E2E_TFLOPS) takes the same runs table,
 * its rows keyed by model alone (release empty). With device dev on `platform` machines (a preset
 * name such as "dgx-a100"; nodes=ceil(gpus / GPUs per machine) is added). dtype: the table's
 * training dtype. progress (may be NULL) is called before each row. */
int e2e_run(const char *csv, const char *runs, const struct mdl_device *dev, const char *platform,
            enum mdl_dtype dtype, long max_gpus,
            void (*progress)(int i, const char *name, void *ctx), void *ctx, struct e2e_result *r,
            struct tps_error *err);
void e2e_release(struct e2e_result *r);

#endif
