/* ydoc.h - a loaded YAML document with checked, position-aware accessors.
 *
 * Wraps libyaml's document API. Nodes are referred to by libyaml's int node ids (0 = absent).
 * Every accessor that can fail records file, 1-based line and column of the offending node, and
 * the dotted field name passed by the caller, into a struct tps_error. The document owns all
 * strings it hands out; they live until tps_ydoc_release().
 */
#ifndef TPS_YDOC_H
#define TPS_YDOC_H

#include <stdbool.h>
#include <yaml.h>

#include "error.h"

struct tps_ydoc {
    yaml_document_t doc; /* libyaml document, valid when loaded */
    bool loaded;         /* doc must be deleted on release */
    char path[512];      /* file name used in errors */
};

/* Limits on a YAML input, checked before parsing: its size, and its nesting depth (flow
 * brackets, or block sequence dashes chained on one line). */
#define TPS_YDOC_MAX_BYTES (4 << 20)
#define TPS_YDOC_MAX_DEPTH 64

int tps_ydoc_load_file(struct tps_ydoc *d, const char *path, struct tps_error *err);
int tps_ydoc_load_string(struct tps_ydoc *d, const char *text, const char *name,
                         struct tps_error *err);
void tps_ydoc_release(struct tps_ydoc *d);

/* Command-line overrides (--set KEY=VALUE): every later tps_ydoc_load_file of `path` sets the
 * dotted key to the YAML value (a missing key is added; a preset name standing where a
 * mapping is needed becomes {preset: name}); an error in a value so set names the assignment
 * ("--set strategy.tp=x") instead of a position in the file. One file; at most
 * TPS_YDOC_MAX_SETS, applied in order. */
#define TPS_YDOC_MAX_SETS 32
int tps_ydoc_override(const char *path, const char *kv, struct tps_error *err);
void tps_ydoc_override_clear(void);

/* Sets the dotted `key` of mapping `root` of a libyaml document to the YAML value `text` (the
 * same rules). 0, or -1 when the text is not YAML or the key goes through a non-mapping. */
int tps_ydoc_doc_set(yaml_document_t *doc, int root, const char *key, const char *text);

int tps_ydoc_root(const struct tps_ydoc *d);
bool tps_ydoc_is_map(const struct tps_ydoc *d, int id);
bool tps_ydoc_is_seq(const struct tps_ydoc *d, int id);
bool tps_ydoc_is_scalar(const struct tps_ydoc *d, int id);

/* Records an error positioned at node `id` (or the document start if id is 0). Returns code. */
int tps_ydoc_fail(const struct tps_ydoc *d, int id, const char *field, struct tps_error *err,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Requires `id` to be a mapping whose keys are all in the NULL-terminated `allowed` list and
 * unique. `field` is the mapping's own dotted name ("" for the root). */
int tps_ydoc_check_map(const struct tps_ydoc *d, int id, const char *field,
                       const char *const *allowed, struct tps_error *err);

/* Value node of `key` in mapping `map`, or 0 when absent. */
int tps_ydoc_get(const struct tps_ydoc *d, int map, const char *key);

/* Number of entries of a mapping or sequence, and the i-th key/value/item. */
int tps_ydoc_len(const struct tps_ydoc *d, int id);
int tps_ydoc_seq_at(const struct tps_ydoc *d, int seq, int i);
int tps_ydoc_map_key(const struct tps_ydoc *d, int map, int i);
int tps_ydoc_map_val(const struct tps_ydoc *d, int map, int i);

/* Scalar text of a node, or NULL if it is not a scalar. */
const char *tps_ydoc_text(const struct tps_ydoc *d, int id);

/* Typed readers: fail with a message naming the expected type. */
int tps_ydoc_str(const struct tps_ydoc *d, int id, const char *field, const char **out,
                 struct tps_error *err);
int tps_ydoc_long(const struct tps_ydoc *d, int id, const char *field, long *out,
                  struct tps_error *err);
/* A string that names something the reports print and CSVs hold: control characters (CR, LF,
 * ESC, ...) are refused at the field. */
int tps_ydoc_name(const struct tps_ydoc *d, int id, const char *field, const char **out,
                  struct tps_error *err);
int tps_ydoc_double(const struct tps_ydoc *d, int id, const char *field, double *out,
                    struct tps_error *err);
/* The index in NULL-terminated names[] of scalar id's text, or an error listing them. */
int tps_ydoc_enum(const struct tps_ydoc *d, int id, const char *field, const char *const *names,
                  int *out, struct tps_error *err);
int tps_ydoc_bool(const struct tps_ydoc *d, int id, const char *field, bool *out,
                  struct tps_error *err);
/* Quantities with units (see units.h). */
/* Physical bounds every rate and time must respect (beyond them a simulation overflows or
 * divides by almost nothing): 1 kB/s to 10 PB/s, 0 to 3600 s. */
#define TPS_YDOC_MIN_RATE 1e3
#define TPS_YDOC_MAX_RATE 1e16
#define TPS_YDOC_MAX_TIME 3600.0
/* A size in bytes (tps_units_size: 80GB, 141GiB, 4096), greater than 0. */
int tps_ydoc_size(const struct tps_ydoc *d, int id, const char *field, double *bytes,
                  struct tps_error *err);
int tps_ydoc_rate(const struct tps_ydoc *d, int id, const char *field, double *bps,
                  struct tps_error *err);
int tps_ydoc_time(const struct tps_ydoc *d, int id, const char *field, double *s,
                  struct tps_error *err);

/* Same readers that require a value > 0 (positive) or >= 1 (for counts). */
int tps_ydoc_count(const struct tps_ydoc *d, int id, const char *field, long *out,
                   struct tps_error *err);
int tps_ydoc_positive(const struct tps_ydoc *d, int id, const char *field, double *out,
                      struct tps_error *err);

/* The least efficiency (a fraction of a peak) a device key takes: below 1% a kernel's time is no
 * longer a physical one (1e-300 gave iterations of 1e297 ms, 1e-320 a SimGrid abort). */
#define TPS_YK_MIN_FRACTION 0.01

/* Table-driven reading of a mapping: one row per allowed key says what kind of value it holds,
 * where it goes (an offset into the caller's struct) and its bounds, so that a key is added in
 * one place. */
enum tps_ykind {
    TPS_YK_SKIP,     /* allowed here, read by the caller */
    TPS_YK_INT,      /* int count: >= 1, and <= hi when hi > 0 */
    TPS_YK_LONG,     /* long count: >= 1, and <= hi when hi > 0 */
    TPS_YK_BOOL,     /* bool */
    TPS_YK_RATE,     /* double, bytes/s with units (tps_ydoc_rate) */
    TPS_YK_TIME,     /* double, seconds with units (tps_ydoc_time) */
    TPS_YK_POSITIVE, /* double > 0, and <= hi when hi > 0 */
    TPS_YK_FRACTION, /* double, an efficiency: TPS_YK_MIN_FRACTION to 1 */
    TPS_YK_ENUM,     /* int: the index of the value in names ("expected a, b or c" otherwise) */
    TPS_YK_FN,       /* read by fn */
};

struct tps_ykey {
    const char *key;
    enum tps_ykind kind;
    size_t off; /* where the value goes: offsetof(struct ..., field) */
    double hi;  /* upper bound (counts, positives), 0 for none */
    union {
        /* TPS_YK_FN: reads node id (field names it) into the value at dst */
        int (*fn)(const struct tps_ydoc *d, int id, const char *field, void *dst,
                  struct tps_error *err);
        const char *const *names; /* TPS_YK_ENUM: the values, NULL-terminated, in enum order */
    };
};

/* Checks that `id` is a mapping whose keys are all in the table (ended by a row with key NULL),
 * each once, then reads every present key that is not TPS_YK_SKIP into base + off, in document
 * order, naming errors `field.key`. */
int tps_ydoc_read_map(const struct tps_ydoc *d, int id, const char *field,
                      const struct tps_ykey *keys, void *base, struct tps_error *err);

#endif
