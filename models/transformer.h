/* transformer.h - transformer model shapes and presets.
 *
 * A model is the shape of one decoder layer repeated `layers` times, plus the per-micro-batch
 * input (micro_batch sequences of seq tokens) and the training dtype. ffn defaults to 4*hidden.
 */
#ifndef MDL_TRANSFORMER_H
#define MDL_TRANSFORMER_H

#include <stdbool.h>

#include "device.h"

/* The deepest transformers trained have about a thousand layers (DeepNet, 2022: 1,000); a
 * bound well above that keeps a count of a job's ops (mdl_job_ops) cheap. */
#define MDL_MAX_LAYERS 16384

/* Mixture of experts (Megatron-LM's --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
 * --moe-shared-expert-intermediate-size as a count of experts, --moe-layer-freq's leading dense
 * layers, --moe-expert-capacity-factor): the MLP of every layer from first_dense_layers on is a
 * router and `experts` expert MLPs (each expert_ffn wide, gated like the dense one), each token
 * going through top_k of them and through the shared experts. docs/moe.md. */
#define MDL_MOE_MAX_EXPERTS 512
struct mdl_moe {
    int experts;                      /* routed experts; 0: a dense model */
    int top_k;                        /* experts a token is routed to */
    long expert_ffn;                  /* FFN width of one expert */
    int shared_experts;               /* experts every token goes through (one MLP shared_experts x
                                         expert_ffn wide, tensor-parallel like the dense MLP) */
    int first_dense_layers;           /* the leading layers keep the dense MLP (model.ffn wide) */
    double capacity_factor;           /* 0: dropless; else every expert takes capacity_factor x its
                                         balanced share of the tokens, its input padded to that and the
                                         tokens beyond it dropped */
    bool skewed;                      /* routing not balanced: share[] holds each expert's share */
    float share[MDL_MOE_MAX_EXPERTS]; /* of the routed tokens, summing to 1 (skewed only) */
};

struct mdl_model {
    char name[32];        /* preset or user name */
    long layers;          /* transformer layers */
    long hidden;          /* h, model width */
    long heads;           /* a, attention heads */
    long ffn;             /* FFN inner width (4h by default) */
    long seq;             /* s, tokens per sequence */
    long micro_batch;     /* b, sequences per micro-batch */
    enum mdl_dtype dtype; /* training dtype of activations and GEMMs */
    long vocab;           /* vocabulary: embedding and logits layers; 0 = none (layers only) */
    long kv_heads;        /* key/value heads (grouped-query attention); 0 = heads (multi-head) */
    bool glu;             /* gated MLP (SwiGLU): FC1 holds the gate and the up projection */
    bool attn_dropout;    /* dropout on the attention probabilities (Megatron-LM GPT's
                             attention_dropout > 0): a kernel of its own each way, unless fused
                             into FlashAttention */
    struct mdl_moe moe;   /* mixture of experts; moe.experts 0: dense */
    bool fp8;             /* Transformer Engine's FP8 (`dtype: fp8`, Megatron-LM's --fp8-format
                             hybrid): the linear layers' GEMMs in FP8 with their casts, dtype
                             (bf16) everywhere else; docs/fp8.md */
    bool fp8_attention;   /* the attention core's GEMMs in FP8 too (TE's fp8_dpa) */
};

/* The dtype the linear layers' GEMMs run in: MDL_FP8 for an FP8 model, else dtype. */
enum mdl_dtype mdl_model_gemm_dtype(const struct mdl_model *m);

/* Key/value heads: kv_heads, or heads when 0. */
long mdl_model_kv_heads(const struct mdl_model *m);

/* Width of the fused QKV projection's output: h queries plus 2 * kv_heads * h/a keys and
 * values (3h for multi-head attention). */
double mdl_model_qkv_width(const struct mdl_model *m);

/* Width of FC1's output: ffn, or 2 * ffn with a gated MLP (gate and up projections). */
double mdl_model_fc1_width(const struct mdl_model *m);

/* Parameters of one layer's sublayer (mlp 0: QKV h*q+q, projection h^2+h and the first layer
 * norm 2h; 1: FC1 h*u+u, FC2 f*h+h and the second layer norm 2h), unsharded. */
double mdl_model_sublayer_params(const struct mdl_model *m, int mlp);

/* Whether layer l (from 0) has a mixture of experts as its MLP. */
bool mdl_model_is_moe_layer(const struct mdl_model *m, long l);
/* Layers among [0, n) with a mixture of experts. */
long mdl_model_moe_layers(const struct mdl_model *m, long n);
/* Expert e's share of the routed tokens: 1/experts, or share[e] when skewed. */
double mdl_model_expert_share(const struct mdl_model *m, int e);
/* Parameters of one expert (FC1 h*u+u and FC2 f*h+h for its width f, u = 2f gated), of the
 * router (h x experts) and of the shared experts' MLP (the same for its width); 0 when dense. */
double mdl_model_expert_params(const struct mdl_model *m);
double mdl_model_router_params(const struct mdl_model *m);
double mdl_model_shared_params(const struct mdl_model *m);
/* Parameters of the whole model: the layers (Megatron-LM's with biases and layer norms of two
 * vectors), the embedding (and the logits' own copy when untied) and the final norm; with
 * experts every one of them. *active (may be NULL): those a token goes through (top_k experts
 * and the shared ones). */
double mdl_model_params(const struct mdl_model *m, bool untied, double *active);
/* Forward FLOPs of layer l's MLP side: 2bs(h*u + f*h) dense; with experts, the router's 2bsh E
 * plus top_k + shared_experts experts' MLPs per token (the activated experts only). */
double mdl_model_mlp_fwd_flop(const struct mdl_model *m, long l);
/* Skewed routing for `experts` experts: shares proportional to 1/(rank + 1)^skew, the ranks
 * shuffled by `seed` (a Zipf law, skew 0: balanced). */
void mdl_moe_zipf(struct mdl_moe *moe, double skew, unsigned long seed);

/* Fills *out from a preset name ("gpt3-175b", "gpt3-13b", "megatron-22b", ...). 0 or -1. */
int mdl_model_preset(const char *name, struct mdl_model *out);
const char *const *mdl_model_names(void);

/* Forward GEMM FLOPs of one whole layer (all TP ranks together): 2bs(h*q + h^2 + h*u + ffn*h)
 * for the four linears, q the QKV width and u FC1's (2bs(4h^2 + 2h*ffn) for multi-head attention
 * and a plain MLP), plus 4bs^2h for the attention core. Backward is twice that. */
double mdl_model_layer_fwd_flop(const struct mdl_model *m);
/* The same for layer l (from 0): with a mixture of experts, its MLP side is
 * mdl_model_mlp_fwd_flop's; mdl_model_layer_fwd_flop is the last layer's. */
double mdl_model_layer_fwd_flop_at(const struct mdl_model *m, long l);

/* Model FLOPs of one training iteration of `layers` layers over `micro_batches` micro-batches
 * (every TP rank together): forward plus backward, 3 x mdl_model_layer_fwd_flop per layer and
 * micro-batch. This is the standard Megatron count of the layers (Narayanan et al. 2021,
 * 72bslh^2(1 + s/6h) for ffn = 4h); a whole job adds the logits layer's 3 x
 * mdl_model_logits_fwd_flop per micro-batch (the V/12hl term). It depends on
 * the model, batch and sequence only: never on the strategy, and recomputation or a 2D mesh's
 * replicated work are not counted (that is mdl_program_flop, the executed FLOPs). */
double mdl_model_flop(const struct mdl_model *m, long layers, long micro_batches);

/* Forward FLOPs of the logits layer for one micro-batch: 2bshV (0 without a vocabulary). */
double mdl_model_logits_fwd_flop(const struct mdl_model *m);

#endif
