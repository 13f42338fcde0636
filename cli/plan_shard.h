/* plan_shard.h - `tpsim plan --shard I/N` and `--merge DIR`: the planner's candidate simulations
 * split over shards (pipeline/planhook.h). Every shard enumerates and predicts the same
 * candidates (deterministic), simulates those it owns (the n-th candidate asked for, counted over
 * every compare: setting, is shard n mod N's) and writes what they gave to
 * DIR/plan-shard-I-of-N.json; `--merge DIR` plans again, takes every simulation from the shards,
 * and prints what a plan on one machine prints. A plan's identity (a hash of the scenario file,
 * the --set assignments and the options that choose the candidates) and each candidate's
 * description are checked, so a shard of another plan, or of the same scenario since edited, is
 * refused at its file and field.
 */
#ifndef CLI_PLAN_SHARD_H
#define CLI_PLAN_SHARD_H

#include <jansson.h>

#include "common/error.h"

#include "pipeline/planhook.h"

enum { PLAN_SHARD_RUN = 1, PLAN_SHARD_MERGE };

struct plan_shard {
    int mode;           /* PLAN_SHARD_RUN or PLAN_SHARD_MERGE */
    int shard, nshards; /* RUN: this shard; MERGE: the shards' count */
    int job;            /* rows are struct jobplan_row (else struct planner_row) */
    int setting;        /* the compare: setting being planned (0 without compare:) */
    long asked;         /* candidates asked for so far */
    char dir[512];
    char plan_id[17];
    json_t *results; /* RUN: what this shard simulated; MERGE: every shard's */
    json_t *origin;  /* MERGE: per result, its file and index there ({path, i}) */
    char *missing;   /* MERGE: per shard, whether a candidate it owns had no result */
    long nmissing;
    struct tps_error err; /* MERGE: a shard refused (kept here too: a compare: setting's error
                             only ends its row) */
    struct plan_hook hook;
};

/* Opens a shard run (spec "I/N") or a merge of dir for scenario path, planned with `options`
 * (the text of the options that choose the candidates). Returns 0, or an exit status after a
 * message. */
int plancli_shard_open(struct plan_shard *ps, int mode, const char *spec, const char *dir,
                       const char *path, const char *options, int job);
/* RUN: writes the shard's file; MERGE: reports candidates no shard simulated. Returns 0 or the
 * exit status (1 when candidates are missing). Releases ps. */
int plancli_shard_close(struct plan_shard *ps, int failed);

#endif
