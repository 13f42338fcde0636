/* transformer.h - transformer model shapes and presets.
 *
 * A model is the shape of one decoder layer repeated `layers` times, plus the per-micro-batch
 * input (micro_batch sequences of seq tokens) and the training dtype. ffn defaults to 4*hidden.
 */
#ifndef MDL_TRANSFORMER_H
#define MDL_TRANSFORMER_H

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
};

/* Fills *out from a preset name ("gpt3-175b", "gpt3-13b", "megatron-22b", ...). 0 or -1. */
int mdl_model_preset(const char *name, struct mdl_model *out);
const char *const *mdl_model_names(void);

/* Forward GEMM FLOPs of one whole layer (all TP ranks together): 2bs(4h^2 + 2h*ffn) for the four
 * linears plus 4bs^2h for the attention core. Backward is twice that. */
double mdl_model_layer_fwd_flop(const struct mdl_model *m);

#endif
