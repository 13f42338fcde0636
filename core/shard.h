/* shard.h - a sweep split into shards: which shard runs each point, and the manifest that every
 * shard of one split shares.
 *
 * `tpsim sweep FILE --shard I/N -o DIR` runs the points shard_assign gives shard I (0-based) of
 * N, writing DIR/shard-I-of-N.csv; DIR/sweep.json, the manifest, records the split once: the
 * sweep's identity (sweep.h), a hash of its expanded points, the CSV header, and per point its
 * shard, its predicted cost and the start of its row ("12,8,1024": the point and its values as
 * the CSV shows them). The first shard (or `--slurm`) writes it; every later one must find the
 * same split there, and `merge` and `status` read only it and the shards' CSVs. The assignment
 * is the longest-processing-time rule: points by predicted cost, most expensive first (ties by
 * point), each to the shard with the least cost so far (ties by shard), so it is deterministic
 * and within one point's cost of balanced. No SimGrid here.
 */
#ifndef CORE_SHARD_H
#define CORE_SHARD_H

#include "common/error.h"

#define SHARD_MAX 100000 /* shards of one split */

struct shard_manifest {
    char scenario[512];   /* the scenario, absolute */
    char name[64];        /* the sweep's name */
    char sweep_id[17];    /* struct sweep's id */
    char points_hash[17]; /* shard_points_hash of the rows below */
    long npoints;         /* points of the sweep, those left out by where: included */
    int nshards;
    char *header; /* owned: the CSV header line, without its LF */
    int nsets;    /* the --set assignments the sweep ran with (they are in its id) */
    char **sets;  /* owned */
    int *owner;   /* owned, per point: its shard, -1 when where: leaves it out */
    double *cost; /* owned, per point: the predicted cost the assignment used */
    char **row;   /* owned, per point: its row's start, NULL when left out */
};

/* Parses "I/N" (0 <= I < N <= SHARD_MAX) into *index and *count; the error names `field`. */
int shard_parse(const char *spec, const char *field, int *index, int *count, struct tps_error *err);

/* Gives each of n items with cost[i] >= 0 a shard in 0..nshards-1 (owner[i]); items with a
 * negative cost get -1. Returns 0, or -1 when out of memory. */
int shard_assign(long n, const double *cost, int nshards, int *owner);

/* The hash of a split's expanded points: the sweep id and every kept point's row start, in
 * point order (16 hex digits into out). */
void shard_points_hash(const char *sweep_id, char *const *row, long n, char out[17]);

/* Creates dir and its parents (mkdir -p); 0, or -1 with errno set. */
int shard_make_dirs(const char *dir);

/* The paths of a split's files in dir. */
void shard_manifest_path(const char *dir, char *out, size_t len);
void shard_csv_path(const char *dir, int shard, int nshards, char *out, size_t len);

/* Writes m to dir/sweep.json, creating dir (and its parents) when needed, unless a manifest is
 * there already: then that one is loaded into *found (released by the caller; zeroed when none was
 * there) and must be of the same split (same sweep id, points hash and shard count), else an error
 * naming the manifest and the field that differs. Never replaces a manifest. */
int shard_manifest_save(const char *dir, const struct shard_manifest *m,
                        struct shard_manifest *found, struct tps_error *err);
/* Reads dir/sweep.json into *m; an error names the file and field when it is missing or not a
 * manifest. Release *m even on failure. */
int shard_manifest_load(const char *dir, struct shard_manifest *m, struct tps_error *err);
void shard_manifest_release(struct shard_manifest *m);
/* Whether `found` (read from path) is the split `want` describes: the same sweep id, points hash
 * and shard count; else an error naming path and the field that differs. */
int shard_manifest_same(const struct shard_manifest *want, const struct shard_manifest *found,
                        const char *path, struct tps_error *err);

#endif
