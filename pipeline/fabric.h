/* fabric.h - several jobs sharing one platform, simulated together and each alone.
 *
 * Each job of a scenario of several jobs (core/fabric.h) is lowered as `run` lowers a scenario
 * (pipeline.h), and its ranks are placed on its GPUs of the one platform (mdl_program_merge).
 * All jobs then run in one simulation, from time 0, so that their collectives and transfers
 * contend on whatever links they share (a node's NIC, a leaf's uplink); then each job runs alone
 * on the same GPUs of the same platform. A job's report is built from its own ops' times in each
 * run; its slowdown is its shared iteration time over its time alone. Units: seconds.
 */
#ifndef PIPELINE_FABRIC_H
#define PIPELINE_FABRIC_H

#include <stdio.h>

#include "common/error.h"
#include "core/fabric.h"
#include "pipeline/pipeline.h"

struct fabric_job_run {
    struct pipeline_job *pj;     /* the job, lowered (owns its scenario) */
    int ngpus;                   /* borrowed from the fabric: */
    const int *gpus;             /* the platform GPU of rank i */
    char gpus_text[256];         /* "0-3,8-11" */
    struct report alone, shared; /* owned */
    double slowdown;             /* shared.iteration_s / alone.iteration_s */
};

struct fabric_run {
    struct scn_fabric f; /* owned: the loaded scenario (its jobs' scenarios moved out) */
    char platform[1100]; /* "spec (description)" */
    int njobs;
    struct fabric_job_run *jobs; /* owned */
    struct mdl_program all;      /* owned: every job on its GPUs, tuned */
    struct timing tm;            /* owned: its op times in the shared run */
};

/* Loads scenario `path` (scn_fabric_load) and lowers every job; with seed >= 0 every job's
 * stragglers use that seed. Release *r even on failure. */
int fabric_load(const char *path, long seed, struct fabric_run *r, struct tps_error *err);
/* Simulates the jobs together, then each alone, and fills the reports. progress (may be NULL)
 * gets a line before each simulation. */
int fabric_simulate(struct fabric_run *r, FILE *progress, struct tps_error *err);
void fabric_release(struct fabric_run *r);

void fabric_print(const struct fabric_run *r, FILE *f);
/* {scenario, name, platform, iteration_time_s, jobs: [{name, gpus, slowdown, alone, shared}]},
 * alone and shared as `run --json` writes a report (docs/output.md). */
int fabric_write_json(const struct fabric_run *r, const char *path, struct tps_error *err);

/* One row per job: name, GPUs (ranges apart by spaces: "0-3 8-11"), times, slowdown, MFU. */
int fabric_write_csv(const struct fabric_run *r, const char *path, struct tps_error *err);

#endif
