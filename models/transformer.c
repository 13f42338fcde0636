/* transformer.c - model presets (GPT-3 family, Megatron models) and layer FLOP counts.
 * Shapes: GPT-3 paper (Brown et al. 2020, Table 2.1) and Megatron-LM/Korthikanti et al. 2022
 * (see ../shared/refdata/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv). The
 * vocabulary is GPT-2's 50,257 tokens padded to 51,200, as Megatron-LM pads it. */
#include "transformer.h"

#include <string.h>

#define P(n, l, h, a, s)                                                                           \
    {                                                                                              \
        n, l, h, a, 4 * (h), s, 1, MDL_BF16, 51200                                                 \
    }

static const struct mdl_model presets[] = {
    P("gpt3-1.3b", 24, 2048, 16, 2048),      P("gpt3-2.7b", 32, 2560, 32, 2048),
    P("gpt3-6.7b", 32, 4096, 32, 2048), /* GPT-3 13B: the paper's d_model 5140 is not a
                                         * multiple of its 40 heads; Megatron uses 5120 */
    P("gpt3-13b", 40, 5120, 40, 2048),       P("gpt3-175b", 96, 12288, 96, 2048),
    P("megatron-22b", 48, 6144, 64, 2048),   P("megatron-530b", 105, 20480, 128, 2048),
    P("megatron-1t", 128, 25600, 160, 2048),
};

static const char *const names[] = {"gpt3-1.3b",     "gpt3-2.7b",   "gpt3-6.7b",
                                    "gpt3-13b",      "gpt3-175b",   "megatron-22b",
                                    "megatron-530b", "megatron-1t", NULL};

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

double mdl_model_layer_fwd_flop(const struct mdl_model *m)
{
    double b = (double)m->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    double f = (double)m->ffn;
    return 2.0 * b * s * (4.0 * h * h + 2.0 * h * f) + 4.0 * b * s * s * h;
}

double mdl_model_logits_fwd_flop(const struct mdl_model *m)
{
    return 2.0 * (double)m->micro_batch * (double)m->seq * (double)m->hidden * (double)m->vocab;
}

double mdl_model_flop(const struct mdl_model *m, long layers, long micro_batches)
{
    return 3.0 * mdl_model_layer_fwd_flop(m) * (double)layers * (double)micro_batches;
}
