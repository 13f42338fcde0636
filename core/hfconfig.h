/* hfconfig.h - a HuggingFace model's config.json as a tpsim model (model: {hf_config: FILE}).
 *
 * Reads the fields of the decoder families whose shapes tpsim models (Llama, Mistral, Mixtral,
 * Qwen2, Qwen2-MoE, DeepSeek-V3): layers, width, heads, key/value heads, FFN width, vocabulary,
 * the gated MLP, the experts. What tpsim would model differently is refused with the field that
 * says so (a head_dim that is not hidden / heads, experts on some layers only); DeepSeek-V3's
 * multi-head latent attention runs as plain attention, as its preset does (docs/moe.md).
 * Errors name the file and the JSON field (jansson gives no position of a value; a syntax
 * error has its line and column).
 */
#ifndef CORE_HFCONFIG_H
#define CORE_HFCONFIG_H

#include <stdbool.h>

#include "common/error.h"
#include "models/transformer.h"

/* Fills *m (its shape; micro-batch, dtype and sequence are left as they are) from the config at
 * path, and *untied with its tie_word_embeddings == false (Llama's default). */
int hf_config_load(const char *path, struct mdl_model *m, bool *untied, struct tps_error *err);

#endif
