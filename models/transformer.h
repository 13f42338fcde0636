/* transformer.h - transformer model shapes and presets.
 *
 * A model is the shape of one decoder layer repeated `layers` times, plus the per-micro-batch
 * input (micro_batch sequences of seq tokens) and the training dtype. ffn defaults to 4*hidden.
 */
#ifndef MDL_TRANSFORMER_H
#define MDL_TRANSFORMER_H

#include <stdbool.h>

#include "device.h"

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
};

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

/* Fills *out from a preset name ("gpt3-175b", "gpt3-13b", "megatron-22b", ...). 0 or -1. */
int mdl_model_preset(const char *name, struct mdl_model *out);
const char *const *mdl_model_names(void);

/* Forward GEMM FLOPs of one whole layer (all TP ranks together): 2bs(h*q + h^2 + h*u + ffn*h)
 * for the four linears, q the QKV width and u FC1's (2bs(4h^2 + 2h*ffn) for multi-head attention
 * and a plain MLP), plus 4bs^2h for the attention core. Backward is twice that. */
double mdl_model_layer_fwd_flop(const struct mdl_model *m);

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
