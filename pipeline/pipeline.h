/* pipeline.h - the one chain every command runs: a scenario (or a trace) becomes a program, the
 * program is checked and its collectives tuned, the engine simulates it, and a report says what
 * the times mean.
 *
 *   scn_load (core/scenario.h)  -> pipeline_lower (the only caller of mdl_strategy_lower)
 *   trace_read (core/trace.h)   -/
 *   -> mdl_program_check (models/program.h) -> tune_program (core/tune.h: the collectives'
 *   choices, written into the ops, and the communication plan, core/commplan.h)
 *   -> sim_engine_run (sim/engine.h, reading program and plan) -> report_build (core/report.h)
 *
 * run, trace, sweep, plan, validate and profile all go through here; validate/ reaches the
 * engine only through this header. Units: seconds, bytes.
 */
#ifndef PIPELINE_PIPELINE_H
#define PIPELINE_PIPELINE_H

#include "common/error.h"
#include "core/report.h"
#include "core/scenario.h"
#include "core/timing.h"
#include "models/program.h"
#include "platforms/topo.h"

/* A loaded input, ready to simulate: opaque to callers, which make one with pipeline_job_new,
 * load it, simulate it, read it through the accessors below and free it with pipeline_free
 * (pipeline/pipeline_int.h holds its fields, for pipeline/ and white-box tests). */
struct pipeline_job;

/* A new empty job (NULL when out of memory). */
struct pipeline_job *pipeline_job_new(void);
/* Releases what j holds and frees it (NULL: nothing). */
void pipeline_free(struct pipeline_job *j);
/* What reports say about j: scenario (or trace), model, device, platform, strategy, folding. */
const struct report_meta *pipeline_job_meta(const struct pipeline_job *j);
/* The loaded scenario (a trace's: empty but for what it records). */
const struct scn_scenario *pipeline_job_scenario(const struct pipeline_job *j);
/* The lowered (or read) program, tuned once simulated; empty while deferred. */
struct mdl_program *pipeline_job_program(struct pipeline_job *j);
/* The platform it runs on. */
const struct plat_topo *pipeline_job_topo(const struct pipeline_job *j);
/* Memory per GPU (the most loaded GPU; zero for a trace). */
const struct mdl_memory *pipeline_job_memory(const struct pipeline_job *j);
/* The trace directory a trace was read from ("" for a scenario). */
const char *pipeline_job_trace_dir(const struct pipeline_job *j);
/* Whether its lowering waits for pipeline_simulate (pipeline_open_scenario). */
int pipeline_job_deferred(const struct pipeline_job *j);

/* Loads scenario `path` and lowers it. `like` (or NULL) is the file whose directory resolves the
 * scenario's relative paths (scn_load_in). j holds what was loaded even on failure (pipeline_free
 * it). */
int pipeline_load_scenario(const char *path, const char *like, struct pipeline_job *j,
                           struct tps_error *err);
/* pipeline_load_scenario for a caller that only simulates (pipeline_simulate): a plain run whose
 * layers may fold (not a whole job, `run.fold` not false, at least 6 layers, no heterogeneity)
 * is not lowered, since folding simulates 3 and 4 layers of their own; j->prog stays empty
 * (j->deferred) until pipeline_simulate replays every layer. pipeline_lower_job defers it again.
 * j holds what was loaded even on failure (pipeline_free it). */
int pipeline_open_scenario(const char *path, const char *like, struct pipeline_job *j,
                           struct tps_error *err);
/* What j simulates: its program's layers, micro-batches and GPUs, or while it is deferred
 * (pipeline_open_scenario) its scenario's. */
void pipeline_job_shape(const struct pipeline_job *j, int *layers, int *micro_batches, int *gpus);
/* What simulating scenario s would cost, predicted: the ops its program holds before any folding
 * (a job's: mdl_job_ops; a TP group's: one layer's ops, lowered, times its layers and
 * micro-batches), 0 when that cannot be said (its lowering fails). A sweep balances its shards by
 * it (core/shard.h). */
double pipeline_scenario_ops(const struct scn_scenario *s);
/* Reads trace directory `dir` (a merged recording is found by trace_dir_resolve) to run on
 * `platform` (a --platform line); when that is NULL, on `on` (borrowed, may be NULL), else on the
 * platform the trace records. j holds what was loaded even on failure (pipeline_free it). */
int pipeline_load_trace(const char *dir, const char *platform, const struct plat_topo *on,
                        struct pipeline_job *j, struct tps_error *err);
/* Lowers j->scn (loaded, j->topo set; its fold and job may have been changed since) into
 * j->prog, with the descriptions and the memory; what pipeline_load_scenario does after
 * loading (deferred as pipeline_open_scenario says when j->defer is set). */
int pipeline_lower_job(struct pipeline_job *j, struct tps_error *err);

/* Lowers j's scenario again with heterogeneity seed `seed` (models/hetero.h). */
int pipeline_reseed(struct pipeline_job *j, unsigned long seed, struct tps_error *err);
/* Lowers a whole job whose replicas were folded again with every replica op by op (a trace
 * holds every GPU's ops); nothing when none was folded. */
int pipeline_unfold_replicas(struct pipeline_job *j, struct tps_error *err);
/* Moves j's program to *out (the caller releases it); j keeps an empty one. */
void pipeline_take_program(struct pipeline_job *j, struct mdl_program *out);
/* Simulates scenario s's whole job with strategy st, job shape `job` and micro-batch size
 * micro_batch instead of its own, its layers folded, into *r (a planner's candidate; s is only
 * read). Release *r even on failure. */
int pipeline_simulate_variant(const struct scn_scenario *s, const struct mdl_strategy *st,
                              const struct mdl_job *job, long micro_batch, struct report *r,
                              struct tps_error *err);

/* Simulates scenario s on s->topo as `run` does (a whole job's layers and replicas folded where
 * s->fold allows) into *r, as pipeline_report builds it: a folded chunk's collectives counted
 * as theirs, not as its compute (no memory). Release *r with report_release even on failure. */
int pipeline_simulate_scenario(const struct scn_scenario *s, struct report *r,
                               struct tps_error *err);

/* Lowers `layers` layers and `micro_batches` micro-batches of the scenario's model on its device
 * with strategy st (NULL: the scenario's own, with its layers and micro-batches). *p is
 * initialised here; release it even on failure. */
int pipeline_lower(const struct scn_scenario *s, const struct mdl_strategy *st, int layers,
                   int micro_batches, struct mdl_program *p, struct tps_error *err);

/* Simulates one model chunk of the scenario's job (its layers, one micro-batch, forward then
 * backward) on the job's first TP group with strategy st, and fills *fold with the times and
 * executed FLOPs that stand for the chunk when a job's layers are folded. */
int pipeline_fold(const struct scn_scenario *s, const struct mdl_strategy *st,
                  struct mdl_job_fold *fold, struct tps_error *err);

/* Checks p (mdl_program_check), tunes its collectives for t (tune_program, writing the choices
 * into p's ops and making the plan) and simulates it with that plan into *tm (release it even on
 * failure). */
int pipeline_run_program(struct mdl_program *p, const struct plat_topo *t, struct timing *tm,
                         struct tps_error *err);

/* Simulates the scenario's layers and micro-batches (not a whole job) with strategy st on t into
 * *r. Folded as `run` folds them when s->fold allows (3 and 4 layers simulated, each further
 * layer adding what the fourth added; docs/scenarios.md): `run` folds only when the 4-layer
 * run's middle layers took the same time and otherwise replays every layer; with `always` the
 * fold is kept whatever they took. *spread: how far apart the middle layers ended, relative to
 * a layer's time (0 for an exact fold), or -1 when every layer was replayed. Release *r even on
 * failure. */
int pipeline_simulate_layers(const struct scn_scenario *s, const struct mdl_strategy *st,
                             const struct plat_topo *t, int always, struct report *r,
                             double *spread, struct tps_error *err);

/* Whether the simulations that follow report their progress on stderr (sim_engine_progress): for
 * a terminal running one at a time. */
void pipeline_progress(int on);

/* pipeline_run_program on the job's program, then its report (with the memory for a scenario).
 * *tm (may be NULL) keeps the op times; release *r and *tm even on failure. */
int pipeline_simulate(struct pipeline_job *j, struct timing *tm, struct report *r,
                      struct tps_error *err);

/* The report of the job's program from its op times *tm (the memory, and a whole job's
 * exposed communication by kind, as pipeline_simulate gives them). Release *r even on
 * failure. */
int pipeline_report(const struct pipeline_job *j, const struct timing *tm, struct report *r,
                    struct tps_error *err);

/* How a lone collective runs: enum mdl_coll_{algo,proto,gran} values, 0 = tuner's choice. */
struct pipeline_coll_how {
    int algo, proto, gran;
};

/* Simulates one collective k of `bytes` over GPUs 0..ranks-1 and stores its time; *how gives
 * forced choices and receives those made. */
int pipeline_collective(const struct plat_topo *t, enum mdl_op_kind k, int ranks, double bytes,
                        struct pipeline_coll_how *how, double *time_s, struct tps_error *err);
/* The same over the m GPUs `members` of the platform (a data-parallel group: one per machine). */
int pipeline_collective_on(const struct plat_topo *t, enum mdl_op_kind k, const int *members, int m,
                           double bytes, struct pipeline_coll_how *how, double *time_s,
                           struct tps_error *err);

#endif
