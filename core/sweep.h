/* sweep.h - the `sweep:` section of a scenario and the scenarios of its points.
 *
 *   sweep:
 *     strategy.tp: [2, 4, 8]                            # a list of values (any YAML values)
 *     model.hidden: {from: 1024, to: 4096, step: 1024}  # a range: step, or factor
 *     platform.nodes: {from: 1, to: 8, factor: 2}
 *
 * Keys are dotted paths into the scenario; the points are the cartesian product of the values,
 * the last key varying fastest. A point's scenario is the scenario with those values set (a
 * missing key is added; a preset name standing where a mapping is needed becomes
 * {preset: name}), written as YAML with libyaml's emitter. No SimGrid here.
 */
#ifndef CORE_SWEEP_H
#define CORE_SWEEP_H

#include "common/error.h"

#define SWEEP_MAX_KEYS 8

struct sweep {
    char path[512];
    int nkeys;
    char keys[SWEEP_MAX_KEYS][96];
    int nvals[SWEEP_MAX_KEYS];
    char **vals[SWEEP_MAX_KEYS]; /* owned: each value as a YAML flow text ("8", "[2, 4]") */
    long npoints;
    char id[17]; /* identity of the sweep's definition: a hash of the scenario without its
                    sweep section (as libyaml emits it) and of the swept keys, not their values */
};

/* Reads the sweep section of scenario `path` (an error if it has none). */
int sweep_load(const char *path, struct sweep *sw, struct tps_error *err);
void sweep_release(struct sweep *sw);

/* Value index of key k at point i. */
int sweep_index(const struct sweep *sw, long point, int k);

/* Computes sw->id (sweep_load does). */
int sweep_identity(struct sweep *sw, struct tps_error *err);

/* A value as a person reads it: a scalar unquoted, a list "[8 1]". */
void sweep_display(const char *flow, char *out, size_t len);

/* Writes the scenario of point i to `out` (a file path). */
int sweep_write_point(const struct sweep *sw, long point, const char *out, struct tps_error *err);

#endif
