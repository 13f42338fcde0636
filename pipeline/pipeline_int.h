/* pipeline_int.h - the fields of a loaded job (struct pipeline_job), for pipeline/ and for
 * white-box tests; every other caller goes through pipeline.h's functions. */
#ifndef PIPELINE_PIPELINE_INT_H
#define PIPELINE_PIPELINE_INT_H

#include "models/job.h"
#include "pipeline/pipeline.h"

/* A loaded input, ready to simulate. */
struct pipeline_job {
    int from_trace;               /* 1: a trace directory, 0: a scenario */
    struct scn_scenario scn;      /* the scenario (from_trace == 0) */
    struct plat_topo trace_topo;  /* the platform a trace runs on (from_trace) */
    const struct plat_topo *topo; /* &scn.topo, &trace_topo, or a borrowed one */
    struct mdl_program prog;      /* lowered or read; tuned by pipeline_simulate */
    struct mdl_job_fold fold;     /* a job's folded chunk (zeroed when op by op) */
    int full_replicas;            /* a folded job: lower every replica in full all the same */
    int defer;    /* set by pipeline_open_scenario: a plain run that may fold is lowered later */
    int deferred; /* prog not lowered yet: pipeline_simulate lowers it if it replays every layer */
    int has_memory; /* a scenario: memory per GPU against the device */
    struct mdl_memory mem;
    double capacity;         /* bytes of one GPU */
    double reserved;         /* of which a job cannot have (mdl_device_reserved) */
    struct report_meta meta; /* descriptions for reports; point into the buffers below */
    char input[512], trace_dir[1024], model[256], strategy[256], device[64], platform[1100];
    char folding[256]; /* what the lowering folded, "" when nothing */
    char hetero[512];  /* devices, speed factors and balancing (models/hetero.h), "" when none */
};

/* Releases what j holds, leaving it empty (pipeline_free also frees it). */
void pipeline_release(struct pipeline_job *j);

#endif
