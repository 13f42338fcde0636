/* spec.h - reading a platform specification from YAML into a topology.
 *
 * A spec is one of:
 *   - a preset name:            platform: dgx-a100
 *   - a preset with parameters: platform: {preset: pcie-8gpu, sockets: 2, nodes: 4, ib: NDR}
 *   - a topology file:          platform: {file: platforms/dgx1-v100.yaml}   (or a bare path)
 *   - a SimGrid XML platform:   platform: {simgrid_xml: my.xml}              (or a bare .xml path)
 * A topology file holds either a preset with parameters, or an explicit graph (gpus, nodes,
 * links). Schema: docs/platforms.md. Relative paths are resolved against `base_dir`.
 */
#ifndef PLAT_SPEC_H
#define PLAT_SPEC_H

#include "common/ydoc.h"
#include "topo.h"

int plat_spec_parse(const struct tps_ydoc *d, int id, const char *field, const char *base_dir,
                    struct plat_topo *out, struct tps_error *err);

/* Reads a `nccl:` mapping (collective tuning, docs/collectives.md) over the values in *n. */
int plat_nccl_parse(const struct tps_ydoc *d, int id, const char *field, struct mdl_nccl *n,
                    struct tps_error *err);

/* Parses "NAME_OR_FILE [key=value ...]" as given on the command line. */
int plat_spec_from_args(const char *spec, int nkv, char **kv, struct plat_topo *out,
                        struct tps_error *err);

/* The same for one line "NAME_OR_FILE [key=value ...]" (a --platform argument, a trace's
 * recorded platform). */
int plat_spec_from_line(const char *line, struct plat_topo *out, struct tps_error *err);
/* Splits a line at spaces into at most `max` words kept in buf; returns their count. */
int plat_spec_split_words(const char *line, char *buf, size_t len, char **words, int max);

/* Directory part of path into out ("." when it has none). */
void plat_path_dir(const char *path, char *out, size_t len);
/* Joins base_dir and a relative path into out (absolute paths are kept). */
void plat_path_resolve(const char *base_dir, const char *path, char *out, size_t len);

#endif
