/* sweep.c - sweep section reading and point scenarios (see sweep.h). Uses libyaml's document
 * API and emitter. */
#include "core/sweep.h"
#include "common/hash.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/ydoc.h"
#include "common/inputs.h"

void sweep_release(struct sweep *sw)
{
    for (int k = 0; k < sw->nkeys; k++) {
        for (int i = 0; i < sw->nvals[k]; i++) {
            free(sw->vals[k][i]);
            if (sw->maps[k]) free(sw->maps[k][i]);
        }
        free(sw->vals[k]);
        free(sw->maps[k]);
    }
    memset(sw, 0, sizeof *sw);
}

static int push(struct sweep *sw, int k, const char *text)
{
    char **v = realloc(sw->vals[k], (size_t)(sw->nvals[k] + 1) * sizeof *v);
    if (!v) return -1;
    sw->vals[k] = v;
    if (!(v[sw->nvals[k]] = strdup(text))) return -1;
    sw->nvals[k]++;
    return 0;
}

/* Appends `v` as a double-quoted YAML scalar: quotes, backslashes and control characters are
 * escaped, so any value (a quote, a newline) reads back exactly. */
static size_t quoted(char *out, size_t len, size_t n, const char *v)
{
    if (n + 1 < len) out[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)v; *p && n + 6 < len; p++) {
        if (*p == '"' || *p == '\\') {
            out[n++] = '\\';
            out[n++] = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            n += (size_t)snprintf(out + n, len - n, "\\x%02x", *p);
        } else {
            out[n++] = (char)*p;
        }
    }
    if (n + 1 < len) out[n++] = '"';
    out[n < len ? n : len - 1] = '\0';
    return n;
}

static int read_range(const struct tps_ydoc *d, int id, const char *f, struct sweep *sw, int k,
                      struct tps_error *err);

/* Flow text of a scalar or a sequence of scalars. */
static int flow_text(const struct tps_ydoc *d, int id, const char *field, char *out, size_t len,
                     struct tps_error *err)
{
    if (tps_ydoc_is_scalar(d, id)) {
        quoted(out, len, 0, tps_ydoc_text(d, id));
        return TPS_OK;
    }
    if (!tps_ydoc_is_seq(d, id))
        return tps_ydoc_fail(d, id, field, err, "a sweep value is a scalar or a list of scalars");
    size_t n = (size_t)snprintf(out, len, "[");
    for (int i = 0; i < tps_ydoc_len(d, id) && n < len; i++) {
        int it = tps_ydoc_seq_at(d, id, i);
        if (!tps_ydoc_is_scalar(d, it))
            return tps_ydoc_fail(d, it, field, err, "nested lists are not sweep values");
        if (i) n += (size_t)snprintf(out + n, len - n, ", ");
        if (n < len) n = quoted(out, len, n, tps_ydoc_text(d, it));
    }
    if (n < len) snprintf(out + n, len - n, "]");
    return TPS_OK;
}

static int read_range(const struct tps_ydoc *d, int id, const char *f, struct sweep *sw, int k,
                      struct tps_error *err)
{
    static const char *const keys[] = {"from", "to", "step", "factor", NULL};
    int rc = tps_ydoc_check_map(d, id, f, keys, err);
    double from = 0, to = 0, step = 0, factor = 0;
    int fid = tps_ydoc_get(d, id, "from"), tid = tps_ydoc_get(d, id, "to");
    int sid = tps_ydoc_get(d, id, "step"), xid = tps_ydoc_get(d, id, "factor");
    if (!rc && (!fid || !tid)) rc = tps_ydoc_fail(d, id, f, err, "a range needs from and to");
    if (!rc && !!sid == !!xid) rc = tps_ydoc_fail(d, id, f, err, "give either step or factor");
    if (!rc) rc = tps_ydoc_double(d, fid, f, &from, err);
    if (!rc) rc = tps_ydoc_double(d, tid, f, &to, err);
    if (!rc && sid && !(rc = tps_ydoc_double(d, sid, f, &step, err)) && !(step > 0))
        rc = tps_ydoc_fail(d, sid, f, err, "step must be positive");
    if (!rc && xid && !(rc = tps_ydoc_double(d, xid, f, &factor, err)) && !(factor > 1))
        rc = tps_ydoc_fail(d, xid, f, err, "factor must be above 1");
    if (!rc && (to < from || (factor && from <= 0)))
        rc = tps_ydoc_fail(d, id, f, err, "the range is empty");
    for (double v = from; !rc && v <= to * (1 + 1e-12); v = factor ? v * factor : v + step) {
        char t[64];
        snprintf(t, sizeof t, "%.15g", v);
        if (push(sw, k, t)) rc = tps_error_oom(err);
        if (sw->nvals[k] > 10000) rc = tps_ydoc_fail(d, id, f, err, "more than 10000 values");
    }
    return rc;
}

/* Flow text of any node: scalars quoted, [a, b], {k: v}. */
static void node_flow(const struct tps_ydoc *d, int id, char *out, size_t len, size_t *n)
{
    if (*n >= len) return;
    if (tps_ydoc_is_scalar(d, id)) {
        *n = quoted(out, len, *n, tps_ydoc_text(d, id));
        return;
    }
    int map = tps_ydoc_is_map(d, id);
    *n += (size_t)snprintf(out + *n, len - *n, map ? "{" : "[");
    for (int i = 0; i < tps_ydoc_len(d, id) && *n < len; i++) {
        if (i && *n < len) *n += (size_t)snprintf(out + *n, len - *n, ", ");
        if (map) {
            node_flow(d, tps_ydoc_map_key(d, id, i), out, len, n);
            if (*n < len) *n += (size_t)snprintf(out + *n, len - *n, ": ");
            node_flow(d, tps_ydoc_map_val(d, id, i), out, len, n);
        } else {
            node_flow(d, tps_ydoc_seq_at(d, id, i), out, len, n);
        }
    }
    if (*n < len) *n += (size_t)snprintf(out + *n, len - *n, map ? "}" : "]");
}

/* A key's values: a list, or a range. */
static int read_values(const struct tps_ydoc *d, int v, const char *f, struct sweep *sw, int k,
                       struct tps_error *err)
{
    if (tps_ydoc_is_map(d, v)) return read_range(d, v, f, sw, k, err);
    if (!tps_ydoc_is_seq(d, v) || tps_ydoc_len(d, v) == 0)
        return tps_ydoc_fail(d, v, f, err,
                             "expected a list of values or a range {from, to, step|factor}");
    int rc = 0;
    for (int j = 0; !rc && j < tps_ydoc_len(d, v); j++) {
        char t[512];
        rc = flow_text(d, tps_ydoc_seq_at(d, v, j), f, t, sizeof t, err);
        if (!rc && push(sw, k, t)) rc = tps_error_oom(err);
    }
    return rc;
}

static int dotted_key(const char *key, size_t max)
{
    return key && key[0] && strlen(key) < max && !strstr(key, "..") && key[0] != '.' &&
           strcmp(key, "sweep") && strncmp(key, "sweep.", 6);
}

/* zip: {key: [values], ...}, every list as long: one axis whose value i sets each key's i-th. */
static int read_zip(const struct tps_ydoc *d, int id, struct sweep *sw, int k,
                    struct tps_error *err)
{
    if (sw->nzip) return tps_ydoc_fail(d, id, "sweep.zip", err, "one zip group per sweep");
    if (!tps_ydoc_is_map(d, id) || tps_ydoc_len(d, id) < 2 || tps_ydoc_len(d, id) > SWEEP_MAX_ZIP)
        return tps_ydoc_fail(d, id, "sweep.zip", err,
                             "expected 2 to %d keys, each with a list of values (the i-th values "
                             "of each go together)",
                             SWEEP_MAX_ZIP);
    int n = -1;
    char name[512] = "";
    size_t cn = 0;
    for (int i = 0; i < tps_ydoc_len(d, id); i++) {
        const char *key = tps_ydoc_text(d, tps_ydoc_map_key(d, id, i));
        int v = tps_ydoc_map_val(d, id, i);
        char f[160];
        snprintf(f, sizeof f, "sweep.zip.%s", key ? key : "?");
        if (!dotted_key(key, sizeof sw->zip[0]))
            return tps_ydoc_fail(d, tps_ydoc_map_key(d, id, i), f, err,
                                 "expected a dotted scenario key such as strategy.tp");
        if (!tps_ydoc_is_seq(d, v) || tps_ydoc_len(d, v) < 1)
            return tps_ydoc_fail(d, v, f, err, "expected a list of values");
        if (n >= 0 && tps_ydoc_len(d, v) != n)
            return tps_ydoc_fail(d, v, f, err,
                                 "%d values, where the zip's first key has %d: the i-th values "
                                 "go together",
                                 tps_ydoc_len(d, v), n);
        n = tps_ydoc_len(d, v);
        snprintf(sw->zip[sw->nzip++], sizeof sw->zip[0], "%s", key);
        cn += (size_t)snprintf(name + cn, sizeof name - cn, "%s%s", i ? " / " : "", key);
    }
    if (cn >= sizeof sw->keys[k])
        return tps_ydoc_fail(d, id, "sweep.zip", err, "the keys' names are too long together");
    snprintf(sw->keys[k], sizeof sw->keys[k], "%.95s", name);
    sw->kind[k] = SWEEP_ZIP;
    for (int j = 0; j < n; j++) { /* value j: the list of each key's j-th */
        char t[1024];
        size_t tn = (size_t)snprintf(t, sizeof t, "[");
        for (int i = 0; i < sw->nzip; i++) {
            int it = tps_ydoc_seq_at(d, tps_ydoc_map_val(d, id, i), j);
            if (!tps_ydoc_is_scalar(d, it))
                return tps_ydoc_fail(d, it, "sweep.zip", err, "a zip's values are scalars");
            if (i) tn += (size_t)snprintf(t + tn, sizeof t - tn, ", ");
            if (tn < sizeof t) tn = quoted(t, sizeof t, tn, tps_ydoc_text(d, it));
        }
        if (tn + 2 >= sizeof t) return tps_ydoc_fail(d, id, "sweep.zip", err, "values too long");
        snprintf(t + tn, sizeof t - tn, "]");
        if (push(sw, k, t)) return tps_error_oom(err);
    }
    return TPS_OK;
}

/* variants: {name: {key: value, ...}, ...}: one axis of named settings. */
static int read_variants(const struct tps_ydoc *d, int id, struct sweep *sw, int k,
                         struct tps_error *err)
{
    if (!tps_ydoc_is_map(d, id) || tps_ydoc_len(d, id) < 1)
        return tps_ydoc_fail(d, id, "sweep.variants", err,
                             "expected named mappings of scenario keys, such as {megatron: "
                             "{strategy: {kind: 1d, tp: 8}}, atp: {strategy: {kind: 2d, mesh: "
                             "[4, 2]}}}");
    snprintf(sw->keys[k], sizeof sw->keys[k], "variant");
    sw->kind[k] = SWEEP_VARIANTS;
    int n = tps_ydoc_len(d, id);
    if (n > 10000) return tps_ydoc_fail(d, id, "sweep.variants", err, "more than 10000 values");
    if (!(sw->maps[k] = calloc((size_t)n, sizeof *sw->maps[k]))) return tps_error_oom(err);
    for (int i = 0; i < n; i++) {
        const char *name = tps_ydoc_text(d, tps_ydoc_map_key(d, id, i));
        int m = tps_ydoc_map_val(d, id, i);
        char f[160];
        snprintf(f, sizeof f, "sweep.variants.%s", name ? name : "?");
        if (!name || !name[0])
            return tps_ydoc_fail(d, tps_ydoc_map_key(d, id, i), "sweep.variants", err,
                                 "a variant's name is a plain word");
        if (!tps_ydoc_is_map(d, m) || tps_ydoc_len(d, m) < 1)
            return tps_ydoc_fail(d, m, f, err,
                                 "expected a mapping of scenario keys to values, such as "
                                 "{strategy: {kind: 1d, tp: 8}}");
        for (int j = 0; j < tps_ydoc_len(d, m); j++) {
            const char *key = tps_ydoc_text(d, tps_ydoc_map_key(d, m, j));
            if (!dotted_key(key, 96))
                return tps_ydoc_fail(d, tps_ydoc_map_key(d, m, j), f, err,
                                     "expected a dotted scenario key such as strategy.tp");
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(tps_ydoc_text(d, tps_ydoc_map_key(d, id, j)), name))
                return tps_ydoc_fail(d, tps_ydoc_map_key(d, id, i), f, err,
                                     "two variants are named '%s'", name);
        char t[2048], q[300];
        size_t tn = 0;
        node_flow(d, m, t, sizeof t, &tn);
        if (tn >= sizeof t - 1)
            return tps_ydoc_fail(d, m, f, err, "longer than %zu characters", sizeof t - 2);
        quoted(q, sizeof q, 0, name);
        if (push(sw, k, q) || !(sw->maps[k][sw->nvals[k] - 1] = strdup(t)))
            return tps_error_oom(err);
    }
    return TPS_OK;
}

/* where: a condition or a list of them. */
static int read_where(const struct tps_ydoc *d, int id, struct sweep *sw, struct tps_error *err)
{
    int n = tps_ydoc_is_seq(d, id) ? tps_ydoc_len(d, id) : 1;
    if (sw->nwhere || n < 1 || n > SWEEP_MAX_WHERE)
        return tps_ydoc_fail(d, id, "sweep.where", err,
                             "expected a condition or a list of 1 to %d, such as \"strategy.tp "
                             "<= 8\"",
                             SWEEP_MAX_WHERE);
    for (int i = 0; i < n; i++) {
        int c = tps_ydoc_is_seq(d, id) ? tps_ydoc_seq_at(d, id, i) : id;
        const char *t = tps_ydoc_text(d, c);
        if (!t || !t[0] || strlen(t) >= sizeof sw->where[0])
            return tps_ydoc_fail(d, c, "sweep.where", err,
                                 "expected a condition such as \"strategy.tp <= 8\"");
        snprintf(sw->where[sw->nwhere++], sizeof sw->where[0], "%s", t);
    }
    return TPS_OK;
}

int sweep_load(const char *path, struct sweep *sw, struct tps_error *err)
{
    memset(sw, 0, sizeof *sw);
    snprintf(sw->path, sizeof sw->path, "%s", path);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    if (rc) return rc;
    int root = tps_ydoc_root(&d),
        id = tps_ydoc_is_map(&d, root) ? tps_ydoc_get(&d, root, "sweep") : 0;
    const char *slash = strrchr(path, '/'),
               *nm = id ? tps_ydoc_text(&d, tps_ydoc_get(&d, root, "name")) : NULL;
    if (nm)
        snprintf(sw->name, sizeof sw->name, "%s", nm);
    else
        snprintf(sw->name, sizeof sw->name, "%.*s", (int)strcspn(slash ? slash + 1 : path, "."),
                 slash ? slash + 1 : path);
    if (!id)
        rc = tps_ydoc_fail(&d, root, "sweep", err, "the scenario has no sweep section");
    else if (!tps_ydoc_is_map(&d, id) || tps_ydoc_len(&d, id) == 0)
        rc = tps_ydoc_fail(&d, id, "sweep", err, "expected a mapping of scenario keys to values");
    else if (tps_ydoc_len(&d, id) > SWEEP_MAX_KEYS)
        rc = tps_ydoc_fail(&d, id, "sweep", err, "at most %d keys", SWEEP_MAX_KEYS);
    sw->npoints = 1;
    for (int i = 0; !rc && i < tps_ydoc_len(&d, id); i++) {
        const char *key = tps_ydoc_text(&d, tps_ydoc_map_key(&d, id, i));
        int v = tps_ydoc_map_val(&d, id, i);
        char f[128];
        snprintf(f, sizeof f, "sweep.%s", key ? key : "?");
        if (key && !strcmp(key, "where")) {
            rc = read_where(&d, v, sw, err);
            continue;
        }
        if (key && (!strcmp(key, "zip") || !strcmp(key, "variants"))) {
            int k = sw->nkeys++;
            rc = key[0] == 'z' ? read_zip(&d, v, sw, k, err) : read_variants(&d, v, sw, k, err);
            if (!rc) sw->npoints *= sw->nvals[k];
            if (!rc && sw->npoints > SWEEP_MAX_POINTS)
                rc = tps_ydoc_fail(&d, id, "sweep", err, "more than a million points");
            continue;
        }
        if (!dotted_key(key, sizeof sw->keys[0])) {
            rc = tps_ydoc_fail(&d, tps_ydoc_map_key(&d, id, i), f, &*err,
                               "expected a dotted scenario key such as strategy.tp");
            break;
        }
        for (int j = 0; !rc && j < sw->nkeys; j++)
            if (!strcmp(sw->keys[j], key))
                rc = tps_ydoc_fail(&d, tps_ydoc_map_key(&d, id, i), f, err,
                                   "the key is swept twice");
        if (rc) break;
        int k = sw->nkeys++;
        snprintf(sw->keys[k], sizeof sw->keys[k], "%s", key);
        rc = read_values(&d, v, f, sw, k, err);
        if (!rc) sw->npoints *= sw->nvals[k];
        if (!rc && sw->npoints > SWEEP_MAX_POINTS)
            rc = tps_ydoc_fail(&d, id, "sweep", err, "more than a million points");
    }
    if (!rc && sw->nkeys == 0)
        rc = tps_ydoc_fail(&d, id, "sweep", err, "no key to sweep (where: only filters them)");
    for (int z = 0; !rc && z < sw->nzip; z++) /* a key set by the zip and swept alone */
        for (int k = 0; !rc && k < sw->nkeys; k++)
            if (sw->kind[k] == SWEEP_KEY && !strcmp(sw->keys[k], sw->zip[z]))
                rc = tps_ydoc_fail(&d, tps_ydoc_get(&d, id, "zip"), "sweep.zip", err,
                                   "'%s' is swept on its own too", sw->zip[z]);
    for (int w = 0; !rc && w < sw->nwhere; w++) { /* every name in a condition is an axis */
        struct tps_error e2 = {0};
        if (sweep_keep_one(sw, 0, w, &e2) < 0) {
            int wid = tps_ydoc_get(&d, id, "where");
            rc = tps_ydoc_fail(&d, tps_ydoc_is_seq(&d, wid) ? tps_ydoc_seq_at(&d, wid, w) : wid,
                               "sweep.where", err, "%s", e2.msg);
        }
    }
    tps_ydoc_release(&d);
    if (!rc) rc = sweep_identity(sw, err);
    if (rc) sweep_release(sw);
    return rc;
}

void sweep_display(const char *flow, char *out, size_t len)
{
    size_t n = 0;
    int list = flow[0] == '[', inq = 0;
    for (const char *p = flow + list; *p && n + 1 < len; p++) {
        if (inq) {
            if (*p == '\\' && p[1] == 'x' && p[2] && p[3]) { /* \xHH, as quoted() writes */
                char hex[3] = {p[2], p[3], 0};
                out[n++] = (char)strtol(hex, NULL, 16);
                p += 3;
            } else if (*p == '\\' && p[1]) {
                out[n++] = *++p;
            } else if (*p == '"') {
                inq = 0;
            } else {
                out[n++] = *p;
            }
        } else if (*p == '"') {
            inq = 1;
        } else if (list && *p == ']' && !p[1]) {
            break;
        } else if (list && *p == ',') {
            continue; /* "[8, 1]" shows as "[8 1]" */
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    if (list) {
        char t[512];
        snprintf(t, sizeof t, "[%s]", out);
        snprintf(out, len, "%s", t);
    }
}

void sweep_value_text(const struct sweep *sw, int k, int j, char *out, size_t len)
{
    if (sw->kind[k] != SWEEP_ZIP) {
        sweep_display(sw->vals[k][j], out, len);
        return;
    }
    struct tps_ydoc v; /* the zip's list, its items joined */
    struct tps_error e = {0};
    out[0] = '\0';
    if (tps_ydoc_load_string(&v, sw->vals[k][j], "sweep", &e)) return;
    size_t n = 0;
    for (int i = 0; i < tps_ydoc_len(&v, tps_ydoc_root(&v)) && n < len; i++) {
        const char *t = tps_ydoc_text(&v, tps_ydoc_seq_at(&v, tps_ydoc_root(&v), i));
        n += (size_t)snprintf(out + n, len - n, "%s%s", i ? " / " : "", t ? t : "");
    }
    tps_ydoc_release(&v);
}

int sweep_index(const struct sweep *sw, long point, int k)
{
    for (int j = sw->nkeys - 1; j > k; j--)
        point /= sw->nvals[j];
    return (int)(point % sw->nvals[k]);
}

/* ------------------------------------------------------------------ writing a point */

/* Sets the keys of axis k's value j in doc: the key's value, each zip key's, a variant's keys. */
static int apply_axis(const struct sweep *sw, int k, int j, yaml_document_t *doc, int root)
{
    if (sw->kind[k] == SWEEP_KEY) return tps_ydoc_doc_set(doc, root, sw->keys[k], sw->vals[k][j]);
    struct tps_ydoc v;
    struct tps_error e = {0};
    const char *text = sw->kind[k] == SWEEP_ZIP ? sw->vals[k][j] : sw->maps[k][j];
    if (tps_ydoc_load_string(&v, text, "sweep", &e)) return -1;
    int r = tps_ydoc_root(&v), rc = 0;
    for (int i = 0; !rc && i < tps_ydoc_len(&v, r); i++) {
        char flow[2048];
        size_t n = 0;
        int node =
            sw->kind[k] == SWEEP_ZIP ? tps_ydoc_seq_at(&v, r, i) : tps_ydoc_map_val(&v, r, i);
        node_flow(&v, node, flow, sizeof flow, &n);
        const char *key =
            sw->kind[k] == SWEEP_ZIP ? sw->zip[i] : tps_ydoc_text(&v, tps_ydoc_map_key(&v, r, i));
        rc = n < sizeof flow - 1 && key ? tps_ydoc_doc_set(doc, root, key, flow) : -1;
    }
    tps_ydoc_release(&v);
    return rc;
}

/* Loads the scenario without its sweep section and, for point >= 0, with the point's values
 * set. 0, or -1 with *err set (doc then released). */
static int point_doc(const struct sweep *sw, long point, yaml_document_t *doc,
                     struct tps_error *err)
{
    struct tps_ydoc d; /* through the ydoc loader: the command line's --set applies */
    int rc = tps_ydoc_load_file(&d, sw->path, err);
    if (rc) return rc;
    *doc = d.doc; /* the document is ours now */
    int root = 1;
    yaml_node_t *r = yaml_document_get_root_node(doc);
    /* drop the sweep section */
    if (r && r->type == YAML_MAPPING_NODE) {
        yaml_node_pair_t *p = r->data.mapping.pairs.start;
        for (; p < r->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, "sweep"))
                break;
        }
        if (p < r->data.mapping.pairs.top) {
            memmove(p, p + 1, (size_t)(r->data.mapping.pairs.top - p - 1) * sizeof *p);
            r->data.mapping.pairs.top--;
        }
    } else {
        rc = -1;
    }
    for (int k = 0; !rc && point >= 0 && k < sw->nkeys; k++)
        rc = apply_axis(sw, k, sweep_index(sw, point, k), doc, root);
    if (rc) {
        yaml_document_delete(doc);
        return tps_error_set(err, TPS_EINVAL, sw->path, 0, 0, "sweep",
                             "cannot apply the sweep values to the scenario");
    }
    return TPS_OK;
}

/* Emits *doc (which the emitter deletes) through `handler`. */
static int emit_doc(yaml_document_t *doc, yaml_write_handler_t *handler, void *data)
{
    yaml_emitter_t em;
    yaml_emitter_initialize(&em);
    yaml_emitter_set_output(&em, handler, data);
    int ok = yaml_emitter_open(&em) && yaml_emitter_dump(&em, doc) && yaml_emitter_close(&em);
    yaml_emitter_delete(&em);
    return ok ? 0 : -1;
}

static int write_file(void *data, unsigned char *buf, size_t size)
{
    return fwrite(buf, 1, size, (FILE *)data) == size;
}

/* FNV-1a, 64 bits. */
static int write_hash(void *data, unsigned char *buf, size_t size)
{
    tps_fnv1a(data, buf, size);
    return 1;
}

int sweep_identity(struct sweep *sw, struct tps_error *err)
{
    yaml_document_t doc;
    int rc = point_doc(sw, -1, &doc, err);
    if (rc) return rc;
    uint64_t h = TPS_FNV_OFFSET;
    if (emit_doc(&doc, write_hash, &h))
        return tps_error_set(err, TPS_EINVAL, sw->path, 0, 0, NULL, "cannot read the scenario");
    for (int k = 0; k < sw->nkeys; k++) {
        write_hash(&h, (unsigned char *)sw->keys[k], strlen(sw->keys[k]) + 1);
        for (int j = 0; sw->maps[k] && j < sw->nvals[k]; j++) /* what a variant sets */
            write_hash(&h, (unsigned char *)sw->maps[k][j], strlen(sw->maps[k][j]) + 1);
    }
    snprintf(sw->id, sizeof sw->id, "%016llx", (unsigned long long)h);
    return TPS_OK;
}

int sweep_write_point(const struct sweep *sw, long point, const char *out, struct tps_error *err)
{
    yaml_document_t doc;
    if (tps_output_check(out, err)) return TPS_EINVAL;
    int rc = point_doc(sw, point, &doc, err);
    if (rc) return rc;
    FILE *f = fopen(out, "wb");
    if (!f) {
        yaml_document_delete(&doc);
        return tps_error_set(err, TPS_EIO, out, 0, 0, NULL, "cannot write the point scenario");
    }
    rc = emit_doc(&doc, write_file, f);
    if (fclose(f) != 0) rc = -1;
    return rc ? tps_error_set(err, TPS_EIO, out, 0, 0, NULL, "cannot write the point scenario")
              : TPS_OK;
}
