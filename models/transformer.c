/* transformer.c - model presets (GPT-3 family, Megatron models, Llama) and layer FLOP counts.
 * Shapes: GPT-3 paper (Brown et al. 2020, Table 2.1) and Megatron-LM/Korthikanti et al. 2022
 * (see ../shared/refdata/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv). The
 * vocabulary is GPT-2's 50,257 tokens padded to 51,200, as Megatron-LM pads it. */
#include "transformer.h"

#include <string.h>

#define P(n, l, h, a, s)                                                                           \
    {                                                                                              \
        n, l, h, a, 4 * (h), s, 1, MDL_BF16, 51200, 0, false, false                                \
    }

/* Llama family (Touvron et al. 2023; Meta's Llama 3 model cards): SwiGLU MLP, grouped-query
 * attention for the larger models, Llama 2's 32,000-token and Llama 3's 128,256-token vocabulary */
#define G(n, l, h, a, kv, f, s, v)                                                                 \
    {                                                                                              \
        n, l, h, a, f, s, 1, MDL_BF16, v, kv, true, false                                          \
    }

static const struct mdl_model presets[] = {
    P("gpt3-1.3b", 24, 2048, 16, 2048),
    P("gpt3-2.7b", 32, 2560, 32, 2048),
    P("gpt3-6.7b", 32, 4096, 32, 2048), /* GPT-3 13B: the paper's d_model 5140 is not a
                                         * multiple of its 40 heads; Megatron uses 5120 */
    P("gpt3-13b", 40, 5120, 40, 2048),
    P("gpt3-175b", 96, 12288, 96, 2048),
    P("megatron-22b", 48, 6144, 64, 2048),
    P("megatron-530b", 105, 20480, 128, 2048),
    P("megatron-1t", 128, 25600, 160, 2048),
    G("llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000),
    G("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000),
    G("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256),
    G("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256),
    /* Llama 3 405B (Llama 3 paper, Dubey et al. 2024, Table 3: 126 layers, width 16,384, FFN
     * 53,248, 128 heads, 8 key/value heads); Llama 3.1 keeps the Llama 3 shapes (its model
     * cards), NVIDIA's recipes train them at 8,192 tokens */
    G("llama3-405b", 126, 16384, 128, 8, 53248, 8192, 128256),
    G("llama3.1-8b", 32, 4096, 32, 8, 14336, 8192, 128256),
    G("llama3.1-70b", 80, 8192, 64, 8, 28672, 8192, 128256),
    G("llama3.1-405b", 126, 16384, 128, 8, 53248, 8192, 128256),
};

static const char *const names[] = {
    "gpt3-1.3b",     "gpt3-2.7b",   "gpt3-6.7b",    "gpt3-13b",      "gpt3-175b", "megatron-22b",
    "megatron-530b", "megatron-1t", "llama2-7b",    "llama2-70b",    "llama3-8b", "llama3-70b",
    "llama3-405b",   "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", NULL};

int mdl_model_preset(const char *name, struct mdl_model *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i];
            return 0;
        }
    }
    return -1;
}

const char *const *mdl_model_names(void)
{
    return names;
}

long mdl_model_kv_heads(const struct mdl_model *m)
{
    return m->kv_heads > 0 ? m->kv_heads : m->heads;
}

double mdl_model_qkv_width(const struct mdl_model *m)
{
    double h = (double)m->hidden;
    return h + 2.0 * (double)mdl_model_kv_heads(m) * (h / (double)m->heads);
}

double mdl_model_fc1_width(const struct mdl_model *m)
{
    return (m->glu ? 2.0 : 1.0) * (double)m->ffn;
}

double mdl_model_sublayer_params(const struct mdl_model *m, int mlp)
{
    double h = (double)m->hidden, f = (double)m->ffn;
    double q = mdl_model_qkv_width(m), u = mdl_model_fc1_width(m);
    return mlp ? h * u + u + f * h + h + 2 * h : h * q + q + h * h + h + 2 * h;
}

double mdl_model_layer_fwd_flop(const struct mdl_model *m)
{
    double b = (double)m->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    double f = (double)m->ffn;
    double linears = h * mdl_model_qkv_width(m) + h * h + h * mdl_model_fc1_width(m) + f * h;
    return 2.0 * b * s * linears + 4.0 * b * s * s * h;
}

double mdl_model_logits_fwd_flop(const struct mdl_model *m)
{
    return 2.0 * (double)m->micro_batch * (double)m->seq * (double)m->hidden * (double)m->vocab;
}

double mdl_model_flop(const struct mdl_model *m, long layers, long micro_batches)
{
    return 3.0 * mdl_model_layer_fwd_flop(m) * (double)layers * (double)micro_batches;
}
