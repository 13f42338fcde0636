/* fabric.h - a scenario of several training jobs sharing one platform (docs/heterogeneity.md).
 *
 * The file names a platform and a list `jobs:`; each job is a scenario of its own (model, device,
 * strategy, run, training, stragglers...) without a platform, placed on a set of the platform's
 * GPUs (`gpus:`, or the lowest free ones). Jobs never share a GPU; their traffic meets on the
 * links between them. Loading checks everything the scenario loader checks for each job, plus the
 * placement, and names file, line, column and field (jobs[i].field) on failure.
 */
#ifndef CORE_FABRIC_H
#define CORE_FABRIC_H

#include "common/error.h"
#include "core/scenario.h"
#include "platforms/topo.h"

#define SCN_FABRIC_MAX_JOBS 64

struct scn_fabric_job {
    char name[64];
    int ngpus;
    int *gpus;               /* owned: the platform GPU of the job's rank i */
    struct scn_scenario scn; /* owned: the job, on its own copy of the platform */
};

struct scn_fabric {
    char path[512];
    char name[64];
    char platform_spec[512]; /* the platform as a command-line spec */
    struct plat_topo topo;   /* owned: the platform every job runs on */
    int njobs;
    struct scn_fabric_job *jobs; /* owned, njobs entries */
};

/* 1 when `path` is a readable YAML mapping with a top-level `jobs` key, else 0. */
int scn_fabric_probe(const char *path);
/* Loads a scenario of several jobs. Release *f even on failure. */
int scn_fabric_load(const char *path, struct scn_fabric *f, struct tps_error *err);
void scn_fabric_release(struct scn_fabric *f);
/* Names err's field as job i's: "strategy.tp" becomes "jobs[i].strategy.tp". */
void scn_fabric_field(int i, struct tps_error *err);
/* "0-3,8-11": a job's GPUs as ranges, cut to len. */
void scn_fabric_gpus_text(const struct scn_fabric_job *j, char *buf, size_t len);

#endif
