/* sweep.h - the `sweep:` section of a scenario and the scenarios of its points.
 *
 *   sweep:
 *     strategy.tp: [2, 4, 8]                            # a list of values (any YAML values)
 *     model.hidden: {from: 1024, to: 4096, step: 1024}  # a range: step, or factor
 *     platform.nodes: {from: 1, to: 8, factor: 2}
 *
 *     zip:                                              # keys that move together: one axis
 *       device: [A100-80GB, H100-SXM]                   #   of the i-th values of each
 *       platform: [dgx-a100, dgx-h100]
 *     variants:                                         # named sub-mappings: one axis
 *       megatron: {strategy: {kind: 1d, tp: 8}}
 *       atp: {strategy: {kind: 2d, mesh: [4, 2]}}
 *     where: ["strategy.tp <= 8", "model.hidden % strategy.tp == 0"]   # points kept
 *
 * Keys are dotted paths into the scenario. Each key, the zip group and the variants is an axis
 * (a CSV column: a zip's values shown joined by " / ", a variant by its name); the points are
 * the cartesian product of the axes, the last varying fastest, less those a `where:` condition
 * refuses (sweep_keep). A point's scenario is the scenario with its values set (a missing key is
 * added; a preset name standing where a mapping is needed becomes {preset: name}), written as
 * YAML with libyaml's emitter. No SimGrid here.
 */
#ifndef CORE_SWEEP_H
#define CORE_SWEEP_H

#include "common/error.h"

#define SWEEP_MAX_KEYS 8

#define SWEEP_MAX_ZIP    8
#define SWEEP_MAX_POINTS 1000000
#define SWEEP_MAX_WHERE  16

enum sweep_axis { SWEEP_KEY, SWEEP_ZIP, SWEEP_VARIANTS };

struct sweep {
    char path[512];
    int nkeys;                     /* axes, each a CSV column */
    char keys[SWEEP_MAX_KEYS][96]; /* its column name: the key, "a / b" for a zip, "variant" */
    enum sweep_axis kind[SWEEP_MAX_KEYS];
    int nvals[SWEEP_MAX_KEYS];
    char **vals[SWEEP_MAX_KEYS]; /* owned: each value as a YAML flow text ("8", "[2, 4]"); a
                                    zip's the list of its keys' values, a variant's its name */
    char **maps[SWEEP_MAX_KEYS]; /* owned, variants only: each variant's mapping, flow text */
    int nzip;                    /* the zip group's keys */
    char zip[SWEEP_MAX_ZIP][96];
    int nwhere; /* the where: conditions, each an expression over the axes' values */
    char where[SWEEP_MAX_WHERE][256];
    long npoints;
    char name[64]; /* the scenario's name: its name: key, else the file's name without .yaml */
    char id[17];   /* identity of the sweep's definition: a hash of the scenario without its
                      sweep section (as libyaml emits it) and of the swept keys, not their values */
};

/* Reads the sweep section of scenario `path` (an error if it has none). */
int sweep_load(const char *path, struct sweep *sw, struct tps_error *err);
void sweep_release(struct sweep *sw);

/* Value index of key k at point i. */
int sweep_index(const struct sweep *sw, long point, int k);

/* Whether point i passes every where: condition (1), fails one (0), or a condition cannot be
 * evaluated there (-1, why in *err naming the condition). Names in a condition: a swept key
 * (a zip's keys each by name), `variant`; numbers, 'strings', + - * / %, == != < <= > >=, &&,
 * ||, !, parentheses. */
int sweep_keep(const struct sweep *sw, long point, struct tps_error *err);
/* The same for condition w alone (core/sweep_where.c). */
int sweep_keep_one(const struct sweep *sw, long point, int w, struct tps_error *err);

/* Computes sw->id (sweep_load does). */
int sweep_identity(struct sweep *sw, struct tps_error *err);

/* A value as a person reads it: a scalar unquoted, a list "[8 1]". */
void sweep_display(const char *flow, char *out, size_t len);
/* Value j of axis k as the CSV shows it: the key's value (sweep_display), the zip's values
 * joined by " / ", the variant's name. */
void sweep_value_text(const struct sweep *sw, int k, int j, char *out, size_t len);

/* Writes the scenario of point i to `out` (a file path). */
int sweep_write_point(const struct sweep *sw, long point, const char *out, struct tps_error *err);

#endif
