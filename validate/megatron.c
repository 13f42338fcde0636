/* megatron.c - Megatron-LM's flags as a tpsim scenario (see megatron.h): one table says which
 * flag sets which scenario key; the data-parallel size, the padded vocabulary, the virtual
 * stages and the tokens to train on are derived as Megatron-LM derives them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate/megatron.h"

/* What the flags say, before it is written as YAML. */
struct mg_in {
    long layers, hidden, heads, ffn, seq, mbs, gbs, kv, vocab, tp, pp, cp, ep, etp, vp, vp_layers;
    long experts, topk, moe_ffn, shared_ffn, first_dense, first_stage, last_stage, train_iters,
        train_samples, divisible_by, world, dp, gpn; /* world, dp, gpn: derived */
    int glu, sp, gqa, fp16, bf16, fp8, fp8_param, tp_overlap, dist_opt, overlap_grad, overlap_param,
        untied, grad_bf16, recompute; /* recompute: 0 none, 1 selective, 2 full */
    int tp_amax; /* --tp-only-amax-red (FP8 only: Megatron-LM ignores it otherwise) */
    int p2p_overlap, no_p2p_overlap; /* --overlap-p2p-communication (on anyway with interleaving:
                                        read, not ignored), --no-overlap-p2p-communication */
    char tokenizer[64], vocab_file[256], cp_comm[32], moe_freq[128];
};

enum mg_kind {
    K_LONG, /* an integer value into a long */
    K_FLAG, /* no value: sets an int to 1 */
    K_STR,  /* a string value */
    K_FN,   /* read by fn */
};

struct mg_key {
    const char *flag;
    enum mg_kind kind;
    size_t off;
    size_t len; /* K_STR: the buffer's size */
    int (*fn)(struct mg_in *in, const struct mg_flag *f, char *why, size_t len);
};

static int fp8_format(struct mg_in *in, const struct mg_flag *f, char *why, size_t len)
{
    if (!strcmp(f->value, "hybrid") || !strcmp(f->value, "e4m3")) {
        in->fp8 = 1;
        return 0;
    }
    snprintf(why, len, "expected hybrid or e4m3, got '%s'", f->value);
    return -1;
}

static int recompute_gran(struct mg_in *in, const struct mg_flag *f, char *why, size_t len)
{
    if (!strcmp(f->value, "full") || !strcmp(f->value, "selective")) {
        in->recompute = f->value[0] == 'f' ? 2 : 1;
        return 0;
    }
    snprintf(why, len, "expected full or selective, got '%s'", f->value);
    return -1;
}

static int recompute_act(struct mg_in *in, const struct mg_flag *f, char *why, size_t len)
{
    (void)f, (void)why, (void)len;
    in->recompute = 1; /* --recompute-activations: selective */
    return 0;
}

#define I(field) offsetof(struct mg_in, field)
static const struct mg_key keys[] = {
    {"--num-layers", K_LONG, I(layers), 0, NULL},
    {"--hidden-size", K_LONG, I(hidden), 0, NULL},
    {"--num-attention-heads", K_LONG, I(heads), 0, NULL},
    {"--ffn-hidden-size", K_LONG, I(ffn), 0, NULL},
    {"--seq-length", K_LONG, I(seq), 0, NULL},
    {"--micro-batch-size", K_LONG, I(mbs), 0, NULL},
    {"--global-batch-size", K_LONG, I(gbs), 0, NULL},
    {"--group-query-attention", K_FLAG, I(gqa), 0, NULL},
    {"--num-query-groups", K_LONG, I(kv), 0, NULL},
    {"--swiglu", K_FLAG, I(glu), 0, NULL},
    {"--vocab-size", K_LONG, I(vocab), 0, NULL},
    {"--make-vocab-size-divisible-by", K_LONG, I(divisible_by), 0, NULL},
    {"--tokenizer-type", K_STR, I(tokenizer), sizeof(((struct mg_in *)0)->tokenizer), NULL},
    {"--vocab-file", K_STR, I(vocab_file), sizeof(((struct mg_in *)0)->vocab_file), NULL},
    {"--fp16", K_FLAG, I(fp16), 0, NULL},
    {"--bf16", K_FLAG, I(bf16), 0, NULL},
    {"--fp8-format", K_FN, 0, 0, fp8_format},
    {"--fp8-param-gather", K_FLAG, I(fp8_param), 0, NULL},
    {"--tp-only-amax-red", K_FLAG, I(tp_amax), 0, NULL},
    {"--tensor-model-parallel-size", K_LONG, I(tp), 0, NULL},
    {"--pipeline-model-parallel-size", K_LONG, I(pp), 0, NULL},
    {"--context-parallel-size", K_LONG, I(cp), 0, NULL},
    {"--cp-comm-type", K_STR, I(cp_comm), sizeof(((struct mg_in *)0)->cp_comm), NULL},
    {"--expert-model-parallel-size", K_LONG, I(ep), 0, NULL},
    {"--expert-tensor-parallel-size", K_LONG, I(etp), 0, NULL},
    {"--virtual-pipeline-model-parallel-size", K_LONG, I(vp), 0, NULL},
    {"--num-layers-per-virtual-pipeline-stage", K_LONG, I(vp_layers), 0, NULL},
    {"--decoder-first-pipeline-num-layers", K_LONG, I(first_stage), 0, NULL},
    {"--decoder-last-pipeline-num-layers", K_LONG, I(last_stage), 0, NULL},
    {"--sequence-parallel", K_FLAG, I(sp), 0, NULL},
    {"--tp-comm-overlap", K_FLAG, I(tp_overlap), 0, NULL},
    {"--use-distributed-optimizer", K_FLAG, I(dist_opt), 0, NULL},
    {"--overlap-grad-reduce", K_FLAG, I(overlap_grad), 0, NULL},
    {"--overlap-param-gather", K_FLAG, I(overlap_param), 0, NULL},
    {"--overlap-p2p-communication", K_FLAG, I(p2p_overlap), 0, NULL},
    {"--no-overlap-p2p-communication", K_FLAG, I(no_p2p_overlap), 0, NULL},
    {"--untie-embeddings-and-output-weights", K_FLAG, I(untied), 0, NULL},
    {"--grad-reduce-in-bf16", K_FLAG, I(grad_bf16), 0, NULL},
    {"--recompute-granularity", K_FN, 0, 0, recompute_gran},
    {"--recompute-activations", K_FN, 0, 0, recompute_act},
    {"--num-experts", K_LONG, I(experts), 0, NULL},
    {"--moe-router-topk", K_LONG, I(topk), 0, NULL},
    {"--moe-ffn-hidden-size", K_LONG, I(moe_ffn), 0, NULL},
    {"--moe-shared-expert-intermediate-size", K_LONG, I(shared_ffn), 0, NULL},
    {"--moe-layer-freq", K_STR, I(moe_freq), sizeof(((struct mg_in *)0)->moe_freq), NULL},
    {"--train-iters", K_LONG, I(train_iters), 0, NULL},
    {"--train-samples", K_LONG, I(train_samples), 0, NULL},
    {NULL, K_FLAG, 0, 0, NULL}};
#undef I

/* Flags that are understood and change nothing tpsim models (defaults it already has, or the
 * data, logging and checkpointing): not listed as ignored. */
static const char *const same[] = {"--use-mcore-models",        "--transformer-impl",
                                   "--use-flash-attn",          "--attention-backend",
                                   "--max-position-embeddings", "--position-embedding-type",
                                   "--normalization",           "--disable-bias-linear",
                                   "--no-position-embedding",   NULL};

static int fail(const struct mg_launch *l, const struct mg_flag *f, struct tps_error *err,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(const struct mg_launch *l, const struct mg_flag *f, struct tps_error *err,
                const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tps_error_set(err, TPS_EINVAL, l->source, f ? f->line : 0, 0, f ? f->name : NULL, "%s",
                         msg);
}

/* Appends to a malloc'ed string. */
static int cat(char **s, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cat(char **s, size_t *n, const char *fmt, ...)
{
    char t[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    if (k < 0) return -1;
    char *r = realloc(*s, *n + (size_t)k + 1);
    if (!r) return -1;
    memcpy(r + *n, t, (size_t)k + 1);
    *s = r;
    *n += (size_t)k;
    return 0;
}

static int read_flags(const struct mg_launch *l, struct mg_in *in, char **ign, size_t *ni,
                      struct tps_error *err)
{
    for (int i = 0; i < l->nflags; i++) {
        const struct mg_flag *f = &l->flags[i];
        const struct mg_key *k = keys;
        while (k->flag && strcmp(k->flag, f->name))
            k++;
        if (!k->flag) {
            int known = 0;
            for (const char *const *s = same; *s; s++)
                known |= !strcmp(*s, f->name);
            if (!known && cat(ign, ni, "%s%s", *ni ? ", " : "", f->name)) return tps_error_oom(err);
            continue;
        }
        char why[200] = "";
        if (k->kind == K_FLAG) {
            *(int *)((char *)in + k->off) = 1;
        } else if (k->kind == K_FN) {
            if (k->fn(in, f, why, sizeof why)) return fail(l, f, err, "%s", why);
        } else if (!f->has_value) {
            return fail(l, f, err, "needs a value");
        } else if (k->kind == K_STR) {
            snprintf((char *)in + k->off, k->len, "%s", f->value);
        } else {
            char *end;
            long v = strtol(f->value, &end, 10);
            if (end == f->value || *end || v < 1 || v > (1L << 40))
                return fail(l, f, err, "expected a positive integer, got '%s'", f->value);
            *(long *)((char *)in + k->off) = v;
        }
    }
    return TPS_OK;
}

/* The vocabulary Megatron-LM builds: the tokenizer's, padded to a multiple of
 * make-vocab-size-divisible-by x tp (megatron/training/tokenizer: _vocab_size_with_padding). */
static long padded_vocab(const struct mg_in *in, char **notes, size_t *nn)
{
    long v = in->vocab;
    if (!v && (!strcmp(in->tokenizer, "GPT2BPETokenizer") ||
               (!in->tokenizer[0] && strstr(in->vocab_file, "gpt2"))))
        v = 50257; /* GPT-2's BPE vocabulary (gpt2-vocab.json) */
    if (!v) {
        cat(notes, nn,
            "the vocabulary is not known from the tokenizer (%s): model.vocab not set, "
            "the embedding and logits are left out; give it with --set model.vocab=N\n",
            in->tokenizer[0] ? in->tokenizer : "none given");
        return 0;
    }
    long m = (in->divisible_by ? in->divisible_by : 128) * (in->tp ? in->tp : 1);
    return (v + m - 1) / m * m;
}

/* Writes the scenario into *y. 0, or -1 out of memory. */
static int write_yaml(const struct mg_launch *l, const struct mg_opts *o, const struct mg_in *inp,
                      const char *ign, size_t ni, char **y, size_t *ny_, char **nt, size_t *nn_)
{
    const struct mg_in in = *inp;
    long tp = in.tp, pp = in.pp, cp = in.cp, dp = in.dp, world = in.world, gpn = in.gpn;
    long mbs = in.mbs, gbs = in.gbs, vocab = in.vocab;
    size_t ny = *ny_, nn = *nn_;
    int rc = 0;
    const char *dtype = in.fp8 ? "fp8" : in.bf16 ? "bf16" : in.fp16 ? "fp16" : "fp32";
    rc =
        cat(y, &ny, "# Imported by 'tpsim import megatron' from %s (docs/import.md).\n", l->source);
    if (!rc && ni) rc = cat(y, &ny, "# Flags tpsim does not model, ignored: %s\n", ign);
    if (!rc)
        rc = cat(y, &ny, "name: %s\nmodel:\n  layers: %ld\n  hidden: %ld\n  heads: %ld\n", o->name,
                 in.layers, in.hidden, in.heads);
    if (!rc && in.ffn) rc = cat(y, &ny, "  ffn: %ld\n", in.ffn);
    if (!rc && in.gqa && in.kv) rc = cat(y, &ny, "  kv_heads: %ld\n", in.kv);
    if (!rc && in.glu) rc = cat(y, &ny, "  glu: true\n");
    if (!rc) rc = cat(y, &ny, "  seq: %ld\n  micro_batch: %ld\n", in.seq, mbs);
    if (!rc && vocab) rc = cat(y, &ny, "  vocab: %ld\n", vocab);
    if (!rc) rc = cat(y, &ny, "  dtype: %s\n", dtype);
    if (!rc && in.experts) {
        long eff = in.moe_ffn ? in.moe_ffn : in.ffn ? in.ffn : 4 * in.hidden;
        rc = cat(y, &ny, "  moe: {experts: %ld, top_k: %ld, expert_ffn: %ld", in.experts,
                 in.topk ? in.topk : 2, eff);
        if (!rc && in.shared_ffn) rc = cat(y, &ny, ", shared_experts: %ld", in.shared_ffn / eff);
        long k = 0, n = 0; /* --moe-layer-freq "([0]*K+[1]*N)": K leading dense layers */
        if (!rc && in.moe_freq[0] && sscanf(in.moe_freq, "([0]*%ld+[1]*%ld)", &k, &n) == 2)
            rc = cat(y, &ny, ", first_dense_layers: %ld", k);
        else if (!rc && in.moe_freq[0] && strcmp(in.moe_freq, "1"))
            cat(nt, &nn,
                "--moe-layer-freq %s: only [0]*K+[1]*N (K leading dense layers) is "
                "modelled; every layer has experts\n",
                in.moe_freq);
        if (!rc) rc = cat(y, &ny, "}\n");
    }
    if (!rc)
        rc = cat(y, &ny, "device: %s\nplatform: {preset: %s, nodes: %ld}\n",
                 o->device ? o->device : "H100-SXM", o->platform ? o->platform : "dgx-h100",
                 (world + gpn - 1) / gpn);
    if (!rc) rc = cat(y, &ny, "strategy:\n  tp: %ld\n  pp: %ld\n  dp: %ld\n", tp, pp, dp);
    if (!rc && cp > 1) rc = cat(y, &ny, "  cp: %ld\n", cp);
    if (!rc && in.cp_comm[0]) rc = cat(y, &ny, "  cp_comm_type: %s\n", in.cp_comm);
    if (!rc && in.ep > 1) rc = cat(y, &ny, "  ep: %ld\n", in.ep);
    if (!rc && in.etp) rc = cat(y, &ny, "  expert_tp: %ld\n", in.etp);
    if (!rc) rc = cat(y, &ny, "  sequence_parallel: %s\n", in.sp && tp > 1 ? "true" : "false");
    if (!rc && in.tp_overlap) rc = cat(y, &ny, "  tp_comm_overlap: true\n");
    long vs = in.vp ? in.vp : in.vp_layers ? in.layers / (pp * in.vp_layers) : 1;
    if (!rc && (vs > 1 || in.first_stage || in.last_stage)) {
        rc = cat(y, &ny, "pipeline:\n");
        if (!rc && vs > 1) rc = cat(y, &ny, "  schedule: interleaved\n  virtual_stages: %ld\n", vs);
        /* Megatron-LM overlaps the interleaved schedule's point-to-point messages unless told
         * not to (arguments.py: --no-overlap-p2p-communication; before 2024 the opposite flag,
         * --overlap-p2p-communication, turned it on), and never with the other schedules */
        if (!rc && vs > 1 && !in.no_p2p_overlap) rc = cat(y, &ny, "  overlap_p2p_comm: true\n");
        if (!rc && in.first_stage) rc = cat(y, &ny, "  first_stage_layers: %ld\n", in.first_stage);
        if (!rc && in.last_stage) rc = cat(y, &ny, "  last_stage_layers: %ld\n", in.last_stage);
    }
    static const char *const rec[] = {"none", "selective", "full"};
    if (!rc)
        rc = cat(y, &ny, "training:\n  global_batch: %ld\n  recompute: %s\n", gbs,
                 rec[in.recompute]);
    const struct {
        int on;
        const char *key;
    } sw[] = {{in.dist_opt, "distributed_optimizer"},     {in.overlap_grad, "overlap_grad_reduce"},
              {in.overlap_param, "overlap_param_gather"}, {in.untied, "untied_embeddings"},
              {in.grad_bf16, "grad_reduce_in_bf16"},      {in.fp8_param, "fp8_param_gather"},
              {in.tp_amax && in.fp8, "tp_only_amax_red"}};
    for (size_t i = 0; !rc && i < sizeof sw / sizeof sw[0]; i++)
        if (sw[i].on) rc = cat(y, &ny, "  %s: true\n", sw[i].key);
    double tokens = in.train_samples ? (double)in.train_samples * in.seq
                    : in.train_iters ? (double)in.train_iters * gbs * in.seq
                                     : 0;
    if (!rc && tokens > 0) rc = cat(y, &ny, "  tokens: %.0f\n", tokens);
    *ny_ = ny;
    *nn_ = nn;
    return rc;
}

int mg_scenario(const struct mg_launch *l, const struct mg_opts *o, char **yaml, char **ignored,
                char **notes, struct tps_error *err)
{
    struct mg_in in = {.recompute = 0};
    char *y = NULL, *ign = NULL, *nt = NULL;
    size_t ny = 0, ni = 0, nn = 0;
    *yaml = *ignored = *notes = NULL;
    int rc = read_flags(l, &in, &ign, &ni, err);
    static const char *const need[] = {"--num-layers", "--hidden-size", "--num-attention-heads",
                                       "--seq-length"};
    long *needv[] = {&in.layers, &in.hidden, &in.heads, &in.seq};
    for (int i = 0; !rc && i < 4; i++)
        if (!*needv[i])
            rc = tps_error_set(err, TPS_EINVAL, l->source, 0, 0, need[i],
                               "missing: the model's shape needs it");
    long tp = in.tp ? in.tp : 1, pp = in.pp ? in.pp : 1, cp = in.cp ? in.cp : 1;
    long mp = tp * pp * cp,
         world = o->gpus ? o->gpus : l->nproc_per_node * (l->nnodes ? l->nnodes : 1);
    for (int i = 0; !rc && i < l->nnotes; i++)
        rc = cat(&nt, &nn, "%s\n", l->notes[i]);
    if (!rc && world < mp) {
        if (world)
            cat(&nt, &nn,
                "the launch's %ld GPUs cannot hold tp x pp x cp = %ld: planned on %ld "
                "(data-parallel size 1); --gpus N sets the GPUs\n",
                world, mp, mp);
        world = mp;
    } else if (!rc && world % mp) {
        rc = tps_error_set(err, TPS_EINVAL, l->source, 0, 0, NULL,
                           "%ld GPUs are not a multiple of tp x pp x cp = %ld", world, mp);
    }
    long dp = world / mp, gpn = o->gpus_per_node > 0 ? o->gpus_per_node : 8;
    long mbs = in.mbs ? in.mbs : 1, gbs = in.gbs ? in.gbs : mbs * dp;
    if (!rc && gbs % (mbs * dp))
        rc = tps_error_set(err, TPS_EINVAL, l->source, 0, 0, "--global-batch-size",
                           "%ld is not a multiple of micro-batch x data-parallel size (%ld x %ld)",
                           gbs, mbs, dp);
    long vocab = rc ? 0 : padded_vocab(&in, &nt, &nn);
    in.tp = tp, in.pp = pp, in.cp = cp, in.dp = dp, in.world = world, in.gpn = gpn;
    in.mbs = mbs, in.gbs = gbs, in.vocab = vocab;
    if (!rc && write_yaml(l, o, &in, ign, ni, &y, &ny, &nt, &nn)) rc = tps_error_oom(err);
    if (!rc && (rc = (!ign && cat(&ign, &ni, "%s", "")) || (!nt && cat(&nt, &nn, "%s", ""))))
        rc = tps_error_oom(err);
    if (rc) {
        free(y);
        free(ign);
        free(nt);
        return rc;
    }
    *yaml = y;
    *ignored = ign;
    *notes = nt;
    return TPS_OK;
}
