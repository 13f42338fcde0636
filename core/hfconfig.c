/* hfconfig.c - HuggingFace config.json to a model (see hfconfig.h). Uses jansson. */
#include "core/hfconfig.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/readall.h"

/* The families read, by model_type: all decoders with a gated (SwiGLU) MLP and RMSNorm. */
static const char *const families[] = {"llama", "mistral",   "mixtral",     "qwen2", "qwen2_moe",
                                       "qwen3", "qwen3_moe", "deepseek_v3", NULL};

struct hf {
    const char *path;
    json_t *root;
    struct tps_error *err;
};

static int hf_fail(const struct hf *h, const char *field, const char *msg)
{
    return tps_error_set(h->err, TPS_EINVAL, h->path, 0, 0, field, "%s", msg);
}

/* An integer field in [lo, hi]: 0 and *out set, 1 when absent (and not required), or an error. */
static int hf_int(const struct hf *h, const char *key, long lo, long hi, int required, long *out)
{
    json_t *v = json_object_get(h->root, key);
    if (!v || json_is_null(v)) {
        if (!required) return 1;
        char msg[160];
        snprintf(msg, sizeof msg, "missing: a %s config gives it",
                 json_string_value(json_object_get(h->root, "model_type")));
        return hf_fail(h, key, msg);
    }
    double x = json_is_integer(v) ? (double)json_integer_value(v) : json_number_value(v);
    if (!json_is_number(v) || x != (double)(long)x || x < lo || x > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "expected an integer from %ld to %ld", lo, hi);
        return hf_fail(h, key, msg);
    }
    *out = (long)x;
    return 0;
}

int hf_config_load(const char *path, struct mdl_model *m, bool *untied, struct tps_error *err)
{
    size_t len = 0;
    char *text = tps_read_file(path, 1 << 20, "a HuggingFace config.json", &len, err);
    if (!text) return err->code ? err->code : TPS_EIO;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return tps_error_set(err, TPS_ESYNTAX, path, je.line, je.column, NULL, "invalid JSON: %s",
                             je.text);
    struct hf h = {path, root, err};
    int rc = TPS_OK;
    const char *type = json_string_value(json_object_get(root, "model_type"));
    int known = 0;
    for (const char *const *f = families; type && *f; f++)
        known |= !strcmp(*f, type);
    if (!json_is_object(root)) {
        rc = hf_fail(&h, NULL, "expected a JSON object (a model's config.json)");
    } else if (!known) {
        char list[200], msg[320];
        tps_names_join(families, list, sizeof list);
        snprintf(msg, sizeof msg, "%s%s%s: tpsim reads %s", type ? "model type '" : "missing",
                 type ? type : "", type ? "' is not one tpsim models" : "", list);
        rc = hf_fail(&h, "model_type", msg);
    }
    long layers = 0, hidden = 0, heads = 0, kv = 0, ffn = 0, vocab = 0, hd = 0;
    const long BIG = 1L << 40;
    if (!rc) rc = hf_int(&h, "num_hidden_layers", 1, MDL_MAX_LAYERS, 1, &layers);
    if (!rc) rc = hf_int(&h, "hidden_size", 1, BIG, 1, &hidden);
    if (!rc) rc = hf_int(&h, "num_attention_heads", 1, 100000, 1, &heads);
    if (!rc && (rc = hf_int(&h, "num_key_value_heads", 1, 100000, 0, &kv)) == 1) {
        kv = heads; /* absent: multi-head attention */
        rc = 0;
    }
    if (!rc) rc = hf_int(&h, "intermediate_size", 1, BIG, 1, &ffn);
    if (!rc) rc = hf_int(&h, "vocab_size", 1, BIG, 1, &vocab);
    if (!rc && hidden % heads) rc = hf_fail(&h, "num_attention_heads", "must divide hidden_size");
    if (!rc && heads % kv)
        rc = hf_fail(&h, "num_key_value_heads", "must divide num_attention_heads");
    if (!rc && !strcmp(type, "deepseek_v3")) {
        /* multi-head latent attention: modelled as plain multi-head attention (hfconfig.h) */
    } else if (!rc && (rc = hf_int(&h, "head_dim", 1, BIG, 0, &hd)) == 0 && hd != hidden / heads) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "%ld, where hidden_size / num_attention_heads is %ld: tpsim's attention takes "
                 "heads of hidden / heads",
                 hd, hidden / heads);
        rc = hf_fail(&h, "head_dim", msg);
    } else if (rc == 1) {
        rc = 0;
    }
    if (!rc) {
        /* its name: the file's (mixtral-8x7b.json), or the model type for a config.json */
        char name[32];
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        size_t n = strcspn(base, ".");
        if (n == 0 || !strcmp(base, "config.json") || n >= sizeof name)
            snprintf(name, sizeof name, "%s", type);
        else
            snprintf(name, sizeof name, "%.*s", (int)n, base);
        memset(&m->moe, 0, sizeof m->moe);
        m->layers = layers;
        m->hidden = hidden;
        m->heads = heads;
        m->kv_heads = kv;
        m->ffn = ffn;
        m->vocab = vocab;
        m->glu = true;
        snprintf(m->name, sizeof m->name, "%s", name);
    }
    /* experts: Mixtral's num_local_experts, Qwen2-MoE's num_experts, DeepSeek-V3's
     * n_routed_experts; each expert moe_intermediate_size wide where given (else the FFN's) */
    long experts = 0, topk = 0, eff = ffn, shared = 0, first_dense = 0, v;
    static const char *const expert_keys[] = {"num_local_experts", "num_experts",
                                              "n_routed_experts"};
    for (size_t i = 0; !rc && i < 3 && !experts; i++)
        if ((rc = hf_int(&h, expert_keys[i], 0, MDL_MOE_MAX_EXPERTS, 0, &v)) == 1)
            rc = 0;
        else if (!rc)
            experts = v;
    if (!rc && experts > 0) {
        rc = hf_int(&h, "num_experts_per_tok", 1, experts, 1, &topk);
        if (!rc && (rc = hf_int(&h, "moe_intermediate_size", 1, BIG, 0, &v)) == 0) eff = v;
        if (rc == 1) rc = 0;
        /* shared experts: DeepSeek's count, or Qwen2-MoE's one MLP of a width that is a
         * whole number of experts */
        if (!rc && (rc = hf_int(&h, "n_shared_experts", 0, 100000, 0, &v)) == 0) shared = v;
        if (rc == 1) rc = 0;
        if (!rc && (rc = hf_int(&h, "shared_expert_intermediate_size", 0, BIG, 0, &v)) == 0) {
            if (v % eff)
                rc = hf_fail(&h, "shared_expert_intermediate_size",
                             "not a whole number of experts (moe_intermediate_size): tpsim's "
                             "shared experts are experts of the routed ones' width");
            else
                shared = v / eff;
        }
        if (rc == 1) rc = 0;
        if (!rc && (rc = hf_int(&h, "first_k_dense_replace", 0, layers, 0, &v)) == 0)
            first_dense = v;
        if (rc == 1) rc = 0;
        if (!rc && (rc = hf_int(&h, "decoder_sparse_step", 1, layers, 0, &v)) == 0 && v != 1)
            rc = hf_fail(&h, "decoder_sparse_step",
                         "experts on every n-th layer only are not modelled (1: every layer)");
        if (rc == 1) rc = 0;
        json_t *mlp_only = json_object_get(root, "mlp_only_layers");
        if (!rc && mlp_only && json_array_size(mlp_only) > 0)
            rc = hf_fail(&h, "mlp_only_layers", "dense layers among the experts' are not modelled");
        json_t *moe_freq = json_object_get(root, "moe_layer_freq");
        if (!rc && moe_freq && json_is_integer(moe_freq) && json_integer_value(moe_freq) != 1)
            rc = hf_fail(&h, "moe_layer_freq",
                         "experts on every n-th layer only are not modelled (1: every layer)");
        if (!rc) {
            m->moe.experts = (int)experts;
            m->moe.top_k = (int)topk;
            m->moe.expert_ffn = eff;
            m->moe.shared_experts = (int)shared;
            m->moe.first_dense_layers = (int)first_dense;
        }
    }
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    /* absent: false, these families' default in transformers (LlamaConfig, Qwen2Config, ...) */
    if (!rc) *untied = !(tie && json_is_true(tie));
    json_decref(root);
    return rc;
}
