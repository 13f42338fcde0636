/* transformer.c - model presets (GPT-3 family, Megatron models, Llama) and layer FLOP counts.
 * Shapes: GPT-3 paper (Brown et al. 2020, Table 2.1) and Megatron-LM/Korthikanti et al. 2022
 * (see ../shared/refdata/e2e/korthikanti2022_table5_iteration_time_via_calculon.csv). The
 * vocabulary is GPT-2's 50,257 tokens padded to 51,200, as Megatron-LM pads it. */
#include "transformer.h"

#include <math.h>
#include <string.h>

#define P(n, l, h, a, s)                                                                           \
    {                                                                                              \
        n, l, h, a, 4 * (h), s, 1, MDL_BF16, 51200, 0, false, false, {0}, false, false             \
    }

/* Llama family (Touvron et al. 2023; Meta's Llama 3 model cards): SwiGLU MLP, grouped-query
 * attention for the larger models, Llama 2's 32,000-token and Llama 3's 128,256-token vocabulary */
#define G(n, l, h, a, kv, f, s, v)                                                                 \
    {                                                                                              \
        n, l, h, a, f, s, 1, MDL_BF16, v, kv, true, false, {0}, false, false                       \
    }

/* Mixtures of experts: layers, width, heads, key/value heads, the dense ffn (of the leading dense
 * layers), tokens, vocabulary, then experts, top-k, expert ffn, shared experts, dense layers */
#define E(n, l, h, a, kv, f, s, v, ne, k, ef, sh, fd)                                              \
    {                                                                                              \
        .name = n, .layers = l, .hidden = h, .heads = a, .ffn = f, .seq = s, .micro_batch = 1,     \
        .dtype = MDL_BF16, .vocab = v, .kv_heads = kv, .glu = true, .moe = {                       \
            .experts = ne,                                                                         \
            .top_k = k,                                                                            \
            .expert_ffn = ef,                                                                      \
            .shared_experts = sh,                                                                  \
            .first_dense_layers = fd                                                               \
        }                                                                                          \
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
    /* Mixtral 8x7B and 8x22B (Jiang et al. 2024, Table 1; Mistral's model cards): every layer a
     * mixture of 8 SwiGLU experts, top 2, no shared expert; trained here at 4,096 tokens */
    E("mixtral-8x7b", 32, 4096, 32, 8, 14336, 4096, 32000, 8, 2, 14336, 0, 0),
    E("mixtral-8x22b", 56, 6144, 48, 8, 16384, 4096, 32768, 8, 2, 16384, 0, 0),
    /* DeepSeek-V3-like (DeepSeek-AI 2024, section 4.2): 61 layers of width 7,168, the first 3
     * dense (ffn 18,432), the others 256 routed experts of width 2,048, top 8, and one shared
     * expert; 129,280-token vocabulary, 4,096-token pre-training sequences. Approximated:
     * multi-head latent attention runs here as plain multi-head attention over 128 heads of
     * 7,168 / 128 = 56 dimensions (its low-rank projections and 192/128-dimensional heads are
     * not modelled), multi-token prediction's extra module is left out, and the node-limited
     * routing (at most 4 machines per token) is not modelled: tokens go where the shares say */
    E("deepseek-v3", 61, 7168, 128, 0, 18432, 4096, 129280, 256, 8, 2048, 1, 3),
};

static const char *const names[] = {
    "gpt3-1.3b",     "gpt3-2.7b",     "gpt3-6.7b",     "gpt3-13b",    "gpt3-175b",
    "megatron-22b",  "megatron-530b", "megatron-1t",   "llama2-7b",   "llama2-70b",
    "llama3-8b",     "llama3-70b",    "llama3-405b",   "llama3.1-8b", "llama3.1-70b",
    "llama3.1-405b", "mixtral-8x7b",  "mixtral-8x22b", "deepseek-v3", NULL};

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

enum mdl_dtype mdl_model_gemm_dtype(const struct mdl_model *m)
{
    return m->fp8 ? MDL_FP8 : m->dtype;
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

bool mdl_model_is_moe_layer(const struct mdl_model *m, long l)
{
    return m->moe.experts > 0 && l >= m->moe.first_dense_layers;
}

long mdl_model_moe_layers(const struct mdl_model *m, long n)
{
    long fd = m->moe.first_dense_layers;
    return m->moe.experts <= 0 || n <= fd ? 0 : n - fd;
}

double mdl_model_expert_share(const struct mdl_model *m, int e)
{
    return m->moe.skewed ? (double)m->moe.share[e] : 1.0 / m->moe.experts;
}

/* Parameters of a (gated) MLP f wide. */
static double mlp_params(const struct mdl_model *m, double f)
{
    double h = (double)m->hidden, u = (m->glu ? 2.0 : 1.0) * f;
    return h * u + u + f * h + h;
}

double mdl_model_expert_params(const struct mdl_model *m)
{
    return m->moe.experts > 0 ? mlp_params(m, (double)m->moe.expert_ffn) : 0;
}

double mdl_model_router_params(const struct mdl_model *m)
{
    return (double)m->hidden * m->moe.experts;
}

double mdl_model_shared_params(const struct mdl_model *m)
{
    double f = (double)m->moe.shared_experts * (double)m->moe.expert_ffn;
    return f > 0 ? mlp_params(m, f) : 0;
}

double mdl_model_params(const struct mdl_model *m, bool untied, double *active)
{
    double attn = mdl_model_sublayer_params(m, 0), dense = mdl_model_sublayer_params(m, 1);
    double h = (double)m->hidden, emb = (double)m->vocab * h * (untied ? 2 : 1);
    long moe = mdl_model_moe_layers(m, m->layers), dl = m->layers - moe;
    /* a MoE layer: its second layer norm, the router, every expert and the shared ones */
    double moe_layer = 2 * h + mdl_model_router_params(m) + mdl_model_shared_params(m);
    double all = (double)m->layers * attn + (double)dl * dense + emb + 2 * h;
    double act = all + (double)moe * (moe_layer + m->moe.top_k * mdl_model_expert_params(m));
    all += (double)moe * (moe_layer + m->moe.experts * mdl_model_expert_params(m));
    if (active) *active = act;
    return all;
}

double mdl_model_mlp_fwd_flop(const struct mdl_model *m, long l)
{
    double bs = (double)m->micro_batch * (double)m->seq, h = (double)m->hidden;
    double g = m->glu ? 2.0 : 1.0;
    if (!mdl_model_is_moe_layer(m, l))
        return 2.0 * bs * (h * g * (double)m->ffn + (double)m->ffn * h);
    double fe = (double)m->moe.expert_ffn, per = h * g * fe + fe * h;
    double active = m->moe.top_k + m->moe.shared_experts;
    return 2.0 * bs * (h * m->moe.experts + active * per);
}

void mdl_moe_zipf(struct mdl_moe *moe, double skew, unsigned long seed)
{
    int n = moe->experts;
    if (n <= 0 || n > MDL_MOE_MAX_EXPERTS) return;
    int order[MDL_MOE_MAX_EXPERTS];
    for (int i = 0; i < n; i++)
        order[i] = i;
    /* Fisher-Yates with a 64-bit linear congruential generator (Knuth's MMIX constants): the
     * same seed gives the same hot experts on every machine */
    unsigned long long x = seed * 2654435761ULL + 1;
    for (int i = n - 1; i > 0; i--) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((x >> 33) % (unsigned long long)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += pow(i + 1.0, -skew);
    for (int i = 0; i < n; i++)
        moe->share[order[i]] = (float)(pow(i + 1.0, -skew) / sum);
    moe->skewed = skew > 0;
}

double mdl_model_layer_fwd_flop_at(const struct mdl_model *m, long l)
{
    double b = (double)m->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    double attn = 2.0 * b * s * (h * mdl_model_qkv_width(m) + h * h) + 4.0 * b * s * s * h;
    if (m->moe.experts > 0) return attn + mdl_model_mlp_fwd_flop(m, l);
    double f = (double)m->ffn;
    double linears = h * mdl_model_qkv_width(m) + h * h + h * mdl_model_fc1_width(m) + f * h;
    return 2.0 * b * s * linears + 4.0 * b * s * s * h;
}

double mdl_model_layer_fwd_flop(const struct mdl_model *m)
{
    return mdl_model_layer_fwd_flop_at(m, m->layers - 1);
}

double mdl_model_logits_fwd_flop(const struct mdl_model *m)
{
    return 2.0 * (double)m->micro_batch * (double)m->seq * (double)m->hidden * (double)m->vocab;
}

double mdl_model_flop(const struct mdl_model *m, long layers, long micro_batches)
{
    if (m->moe.experts <= 0)
        return 3.0 * mdl_model_layer_fwd_flop(m) * (double)layers * (double)micro_batches;
    /* the leading dense layers and the mixtures of experts, each at its own count */
    long moe = mdl_model_moe_layers(m, layers), dense = layers - moe;
    double per = (double)dense * mdl_model_layer_fwd_flop_at(m, 0) +
                 (double)moe * mdl_model_layer_fwd_flop_at(m, m->moe.first_dense_layers);
    return 3.0 * per * (double)micro_batches;
}
