/* scenario.h - loading a YAML scenario (docs/scenarios.md) into validated plain data.
 *
 * A scenario names a model, a device, a platform, a strategy and how much to simulate. Every
 * check that SimGrid or the models would otherwise trip on is made here, and each failure names
 * file, line, column and field. The scenario owns its topology; scn_release() frees it.
 */
#ifndef SCN_SCENARIO_H
#define SCN_SCENARIO_H

#include "common/error.h"
#include "models/device.h"
#include "models/gemmtable.h"
#include "models/hetero.h"
#include "models/job.h"
#include "models/strategy.h"
#include "models/transformer.h"
#include "platforms/topo.h"

struct scn_scenario {
    char path[512]; /* scenario file */
    char name[64];  /* scenario name (default: file name) */
    struct mdl_model model;
    struct mdl_device device;
    struct mdl_strategy strategy;
    struct mdl_framework framework; /* how the framework runs a layer (framework: section) */
    struct plat_topo topo;          /* owned */
    char platform_spec[512];        /* platform as a command-line spec, recorded in traces */
    char gemm_table[512];           /* GEMM table the device was calibrated with, "" if none */
    struct mdl_gemm_table
        gemm;          /* owned: that table, interpolated (device.gemm_table points here) */
    int layers;        /* layers to simulate */
    int micro_batches; /* micro-batches to simulate */
    /* A whole job (strategy.pp or .dp, or a pipeline: or training: section): every GPU of
     * tp x pp x dp, the whole model with its embedding and logits, one iteration of the global
     * batch. Otherwise one TP group runs `layers` x `micro_batches`. */
    int is_job;
    struct mdl_job job;
    long global_batch;     /* sequences per iteration (a job) */
    double train_tokens;   /* training.tokens: what to train on (a job), 0 not given */
    bool hf_untied;        /* model.hf_config says the logits have their own weights: the default of
                              training.untied_embeddings */
    double gpu_hour_price; /* cost.gpu_hour: the price of one GPU for an hour, 0 not given */
    struct mdl_hetero hetero; /* owned: devices per GPU, stragglers, balancing (TP group) */
    int ncompare;             /* settings in `compare:` (tpsim plan ranks them), 0 when none */
    char warning[256];        /* what may not be meant, though valid (a device on a platform preset
                                 built for another GPU), "" when nothing; the commands print it */
    int fold;        /* run.fold: 1 yes, 0 no, -1 auto (a job: when too many ops; a plain run: when
                        nothing needs every op's times) */
    unsigned pinned; /* SCN_PIN_*: the training knobs the scenario gives, which `tpsim plan`
                        keeps instead of searching */
};

/* Training knobs a job scenario pins by giving them under `training:` (zero or
 * distributed_optimizer for the ZeRO stage), or under `pipeline:` (overlap_p2p_comm). */
enum {
    SCN_PIN_ZERO = 1u << 0,
    SCN_PIN_OVERLAP_GRAD_REDUCE = 1u << 1,
    SCN_PIN_OVERLAP_PARAM_GATHER = 1u << 2,
    SCN_PIN_OVERLAP_P2P_COMM = 1u << 3
};

int scn_load(const char *path, struct scn_scenario *s, struct tps_error *err);
/* Setting k of the scenario's `compare:` list (0..ncompare-1): the scenario with that setting's
 * device, platform and collectives where it gives them (tpsim plan ranks the settings); its name
 * the setting's, or "DEVICE on PLATFORM". Release *s even on failure. */
int scn_load_compare(const char *path, int k, struct scn_scenario *s, struct tps_error *err);
/* The same, resolving the scenario's relative paths (platform and GEMM-table files) against the
 * directory of `like` instead of `path`'s: a sweep point written to a temporary file reads like
 * the scenario it came from. */
int scn_load_in(const char *path, const char *like, struct scn_scenario *s, struct tps_error *err);
void scn_release(struct scn_scenario *s);
/* Moves a loaded scenario to dst (its owned topology, tables and arrays, and the device's
 * pointer to the scenario's own GEMM table); src is left zeroed, which scn_release accepts. */
void scn_move(struct scn_scenario *dst, struct scn_scenario *src);

struct tps_ydoc;
/* The scenario at mapping `root` of a loaded document (its keys already checked by the caller),
 * whose platform and collectives sections are read from mapping `at` (root itself, or the file's
 * root for one of several jobs on one platform, core/fabric.h). path names the scenario; base is
 * the directory its relative paths resolve against. Release *s even on failure. */
int scn_load_node(const struct tps_ydoc *d, int root, int at, const char *path, const char *base,
                  struct scn_scenario *s, struct tps_error *err);

/* Applies "key=value" to a device as the scenario's device: section would (the same keys and
 * checks: gemm_efficiency=0.75, launch_overhead=30us); the field names the command line. */
int scn_device_set(struct mdl_device *dev, enum mdl_dtype dtype, const char *kv,
                   struct tps_error *err);

/* One-line descriptions for reports. */
void scn_describe_model(const struct scn_scenario *s, char *buf, size_t len);
void scn_describe_strategy(const struct scn_scenario *s, char *buf, size_t len);

#endif
