/* ydoc.c - libyaml document loading and checked accessors with file:line:col errors.
 * See ydoc.h. Numbers are parsed with strtol/strtod; quantities with units via units.c. */
#include "ydoc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readall.h"
#include "units.h"

static yaml_node_t *node_of(const struct tps_ydoc *d, int id)
{
    if (!d->loaded || id <= 0) return NULL;
    return yaml_document_get_node((yaml_document_t *)&d->doc, id);
}

static int parser_fail(struct tps_ydoc *d, yaml_parser_t *p, struct tps_error *err)
{
    const char *what = p->problem ? p->problem : "malformed YAML";
    yaml_mark_t m = p->problem_mark;
    if (p->context)
        return tps_error_set(err, TPS_ESYNTAX, d->path, (int)m.line + 1, (int)m.column + 1, NULL,
                             "invalid YAML: %s %s", p->context, what);
    return tps_error_set(err, TPS_ESYNTAX, d->path, (int)m.line + 1, (int)m.column + 1, NULL,
                         "invalid YAML: %s", what);
}

/* Loads the one document of the stream; on failure nothing stays allocated (callers need not
 * release a document that failed to load). */
static int load(struct tps_ydoc *d, yaml_parser_t *p, struct tps_error *err)
{
    if (!yaml_parser_load(p, &d->doc)) return parser_fail(d, p, err);
    d->loaded = true;
    yaml_document_t extra;
    int rc = TPS_OK;
    if (!yaml_parser_load(p, &extra)) {
        rc = parser_fail(d, p, err);
    } else {
        bool more = yaml_document_get_root_node(&extra) != NULL;
        yaml_mark_t at = extra.start_mark;
        yaml_document_delete(&extra);
        if (more)
            rc = tps_error_set(err, TPS_ESYNTAX, d->path, (int)at.line + 1, (int)at.column + 1,
                               NULL, "a second YAML document: a file holds one");
        else if (!yaml_document_get_root_node(&d->doc))
            rc = tps_error_set(err, TPS_EINVAL, d->path, 1, 1, NULL, "file is empty");
    }
    if (rc) tps_ydoc_release(d);
    return rc;
}

/* Refuses, before libyaml sees it, text nested deeper than TPS_YDOC_MAX_DEPTH: flow brackets
 * and block sequence dashes chained on one line ("- - - x"). libyaml's scanner is quadratic in
 * the nesting depth, and no scenario, platform or sweep needs more than a few levels. Quoted
 * scalars and comments are skipped. */
static int nesting_check(const char *t, size_t n, const char *path, struct tps_error *err)
{
    int depth = 0, line = 1, col = 0, dashes = 0, at_start = 1;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        col++;
        if (c == '\n') {
            line++;
            col = 0;
            dashes = 0;
            at_start = 1;
            continue;
        }
        if (c == '#' && (i == 0 || t[i - 1] == ' ' || t[i - 1] == '\t' || t[i - 1] == '\n')) {
            while (i + 1 < n && t[i + 1] != '\n')
                i++;
            continue;
        }
        if (c == '\'' || c == '"') { /* a quoted scalar, possibly over several lines */
            for (i++; i < n && t[i] != c; i++) {
                if (c == '"' && t[i] == '\\' && i + 1 < n) i++;
                if (t[i] == '\n') line++, col = 0;
            }
            at_start = 0;
            continue;
        }
        if (at_start && c == '-' && (i + 1 >= n || t[i + 1] == ' ' || t[i + 1] == '\n')) {
            if (++dashes > TPS_YDOC_MAX_DEPTH) goto deep;
            continue;
        }
        if (c != ' ' && c != '\t') at_start = 0;
        if (c == '[' || c == '{') {
            if (++depth > TPS_YDOC_MAX_DEPTH) goto deep;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return TPS_OK;
deep:
    return tps_error_set(err, TPS_ESYNTAX, path, line, col, NULL, "nested more than %d levels deep",
                         TPS_YDOC_MAX_DEPTH);
}

static int load_text(struct tps_ydoc *d, const char *text, size_t len, struct tps_error *err)
{
    int rc = nesting_check(text, len, d->path, err);
    if (rc) return rc;
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    rc = load(d, &p, err);
    yaml_parser_delete(&p);
    return rc;
}

/* ------------------------------------------------------------------ setting a dotted key */

static int copy_node(yaml_document_t *dst, yaml_document_t *src, int id)
{
    yaml_node_t *n = yaml_document_get_node(src, id);
    if (!n) return 0;
    if (n->type == YAML_SCALAR_NODE)
        return yaml_document_add_scalar(dst, NULL, n->data.scalar.value, (int)n->data.scalar.length,
                                        YAML_ANY_SCALAR_STYLE);
    if (n->type == YAML_SEQUENCE_NODE) {
        int s = yaml_document_add_sequence(dst, NULL, YAML_FLOW_SEQUENCE_STYLE);
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             s && it < n->data.sequence.items.top; it++) {
            int c = copy_node(dst, src, *it);
            if (!c || !yaml_document_append_sequence_item(dst, s, c)) return 0;
        }
        return s;
    }
    int m = yaml_document_add_mapping(dst, NULL, YAML_BLOCK_MAPPING_STYLE);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; m && p < n->data.mapping.pairs.top;
         p++) {
        int k = copy_node(dst, src, p->key), v = copy_node(dst, src, p->value);
        if (!k || !v || !yaml_document_append_mapping_pair(dst, m, k, v)) return 0;
    }
    return m;
}

static yaml_node_pair_t *find_pair(yaml_document_t *doc, int map, const char *key)
{
    yaml_node_t *n = yaml_document_get_node(doc, map);
    if (!n || n->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
            return p;
    }
    return NULL;
}

/* Sets the dotted `key` of the mapping `root` to node `value`. */
static int set_path(yaml_document_t *doc, int root, const char *key, int value)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", key);
    int map = root;
    char *save = NULL;
    yaml_node_t *rn = yaml_document_get_node(doc, root);
    if (!rn || rn->type != YAML_MAPPING_NODE) return -1;
    for (char *seg = strtok_r(buf, ".", &save); seg; seg = strtok_r(NULL, ".", &save)) {
        int last = save == NULL || *save == '\0';
        yaml_node_pair_t *p = find_pair(doc, map, seg);
        if (last) {
            if (p) {
                p->value = value;
                return 0;
            }
            int k =
                yaml_document_add_scalar(doc, NULL, (yaml_char_t *)seg, -1, YAML_ANY_SCALAR_STYLE);
            return k && yaml_document_append_mapping_pair(doc, map, k, value) ? 0 : -1;
        }
        if (!p) {
            int k =
                yaml_document_add_scalar(doc, NULL, (yaml_char_t *)seg, -1, YAML_ANY_SCALAR_STYLE);
            int m = yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
            if (!k || !m || !yaml_document_append_mapping_pair(doc, map, k, m)) return -1;
            map = m;
            continue;
        }
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (v->type == YAML_SCALAR_NODE) { /* `platform: dgx-a100` becomes {preset: dgx-a100} */
            int m = yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
            int k = yaml_document_add_scalar(doc, NULL, (yaml_char_t *)"preset", -1,
                                             YAML_ANY_SCALAR_STYLE);
            int pv = p->value;
            if (!m || !k || !yaml_document_append_mapping_pair(doc, m, k, pv)) return -1;
            p = find_pair(doc, map, seg); /* the pair array may have moved */
            p->value = m;
            map = m;
        } else if (v->type == YAML_MAPPING_NODE) {
            map = p->value;
        } else {
            return -1;
        }
    }
    return 0;
}

int tps_ydoc_doc_set(yaml_document_t *doc, int root, const char *key, const char *text)
{
    yaml_parser_t vp;
    yaml_document_t vd;
    yaml_parser_initialize(&vp);
    yaml_parser_set_input_string(&vp, (const unsigned char *)text, strlen(text));
    int rc = -1;
    if (yaml_parser_load(&vp, &vd)) {
        int v = yaml_document_get_root_node(&vd)
                    ? copy_node(doc, &vd, 1)
                    : yaml_document_add_scalar(doc, NULL, (yaml_char_t *)"", 0,
                                               YAML_ANY_SCALAR_STYLE); /* "key=": empty */
        rc = v ? set_path(doc, root, key, v) : -1;
        yaml_document_delete(&vd);
    }
    yaml_parser_delete(&vp);
    return rc;
}

/* ------------------------------------------------------------------ command-line overrides */

/* The --set assignments of the one file they apply to. A node they add is marked with line
 * SET_LINE and the assignment's index as its column, so that an error in it names the
 * assignment instead of a position in the file. */
#define SET_LINE ((size_t)-1)
static struct {
    char path[512];
    int n;
    char kv[TPS_YDOC_MAX_SETS][256];
} overrides;

int tps_ydoc_override(const char *path, const char *kv, struct tps_error *err)
{
    const char *eq = strchr(kv, '=');
    size_t klen = eq ? (size_t)(eq - kv) : 0;
    int ok = eq && klen > 0 && kv[0] != '.' && kv[klen - 1] != '.';
    for (size_t i = 0; ok && i < klen; i++)
        ok = (isalnum((unsigned char)kv[i]) || kv[i] == '_' || kv[i] == '-' ||
              (kv[i] == '.' && kv[i + 1] != '.'));
    if (!ok)
        return tps_error_set(err, TPS_EINVAL, "--set", 0, 0, NULL,
                             "expected KEY=VALUE with a dotted scenario key such as "
                             "strategy.tp=8, got '%s'",
                             kv);
    if (strlen(kv) >= sizeof overrides.kv[0] || strlen(path) >= sizeof overrides.path)
        return tps_error_set(err, TPS_EINVAL, "--set", 0, 0, NULL, "'%.40s...' is too long", kv);
    if (overrides.n && strcmp(overrides.path, path))
        return tps_error_set(err, TPS_EINVAL, "--set", 0, 0, NULL, "applies to one scenario file");
    if (overrides.n == TPS_YDOC_MAX_SETS)
        return tps_error_set(err, TPS_EINVAL, "--set", 0, 0, NULL, "at most %d of them",
                             TPS_YDOC_MAX_SETS);
    snprintf(overrides.path, sizeof overrides.path, "%s", path);
    snprintf(overrides.kv[overrides.n++], sizeof overrides.kv[0], "%s", kv);
    return TPS_OK;
}

void tps_ydoc_override_clear(void)
{
    memset(&overrides, 0, sizeof overrides);
}

static int apply_overrides(struct tps_ydoc *d, struct tps_error *err)
{
    for (int k = 0; k < overrides.n; k++) {
        const char *kv = overrides.kv[k], *eq = strchr(kv, '=');
        char key[256], where[300];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        snprintf(where, sizeof where, "--set %s", kv);
        int before = (int)(d->doc.nodes.top - d->doc.nodes.start);
        yaml_parser_t vp;
        yaml_document_t vd;
        yaml_parser_initialize(&vp);
        yaml_parser_set_input_string(&vp, (const unsigned char *)(eq + 1), strlen(eq + 1));
        int ok = yaml_parser_load(&vp, &vd);
        const char *problem = vp.problem ? vp.problem : "malformed";
        if (ok) yaml_document_delete(&vd);
        if (!ok) {
            int rc = tps_error_set(err, TPS_ESYNTAX, where, 0, 0, key, "invalid YAML value: %s",
                                   problem);
            yaml_parser_delete(&vp);
            return rc;
        }
        yaml_parser_delete(&vp);
        if (tps_ydoc_doc_set(&d->doc, 1, key, eq + 1))
            return tps_error_set(err, TPS_EINVAL, where, 0, 0, key,
                                 "the key goes through a value that is not a mapping (--set "
                                 "reaches keys of mappings only)");
        for (yaml_node_t *n = d->doc.nodes.start + before; n < d->doc.nodes.top; n++) {
            n->start_mark.line = SET_LINE;
            n->start_mark.column = (size_t)k;
        }
    }
    return TPS_OK;
}

int tps_ydoc_load_file(struct tps_ydoc *d, const char *path, struct tps_error *err)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    size_t len = 0;
    char *text = tps_read_file(path, TPS_YDOC_MAX_BYTES, "a scenario or platform file", &len, err);
    int rc = text ? load_text(d, text, len, err) : err->code ? err->code : TPS_EIO;
    free(text);
    if (rc == TPS_OK && overrides.n && !strcmp(path, overrides.path) &&
        (rc = apply_overrides(d, err)))
        tps_ydoc_release(d);
    return rc;
}

int tps_ydoc_load_string(struct tps_ydoc *d, const char *text, const char *name,
                         struct tps_error *err)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", name);
    return load_text(d, text, strlen(text), err);
}

void tps_ydoc_release(struct tps_ydoc *d)
{
    if (d->loaded) yaml_document_delete(&d->doc);
    d->loaded = false;
}

int tps_ydoc_root(const struct tps_ydoc *d)
{
    return node_of(d, 1) ? 1 : 0;
}

static bool is_type(const struct tps_ydoc *d, int id, yaml_node_type_t t)
{
    yaml_node_t *n = node_of(d, id);
    return n && n->type == t;
}

bool tps_ydoc_is_map(const struct tps_ydoc *d, int id)
{
    return is_type(d, id, YAML_MAPPING_NODE);
}
bool tps_ydoc_is_seq(const struct tps_ydoc *d, int id)
{
    return is_type(d, id, YAML_SEQUENCE_NODE);
}
bool tps_ydoc_is_scalar(const struct tps_ydoc *d, int id)
{
    return is_type(d, id, YAML_SCALAR_NODE);
}

static int vfail(const struct tps_ydoc *d, int id, const char *field, struct tps_error *err,
                 const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    yaml_node_t *n = node_of(d, id);
    if (n && n->start_mark.line == SET_LINE && n->start_mark.column < (size_t)overrides.n) {
        char where[300]; /* a value the command line set: name the assignment */
        snprintf(where, sizeof where, "--set %s", overrides.kv[n->start_mark.column]);
        return tps_error_set(err, TPS_EINVAL, where, 0, 0, field, "%s", msg);
    }
    int line = n ? (int)n->start_mark.line + 1 : 0;
    int col = n ? (int)n->start_mark.column + 1 : 0;
    return tps_error_set(err, TPS_EINVAL, d->path, line, col, field, "%s", msg);
}

int tps_ydoc_fail(const struct tps_ydoc *d, int id, const char *field, struct tps_error *err,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(d, id, field, err, fmt, ap);
    va_end(ap);
    return rc;
}

int tps_ydoc_len(const struct tps_ydoc *d, int id)
{
    yaml_node_t *n = node_of(d, id);
    if (!n) return 0;
    if (n->type == YAML_MAPPING_NODE)
        return (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (n->type == YAML_SEQUENCE_NODE)
        return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    return 0;
}

int tps_ydoc_seq_at(const struct tps_ydoc *d, int seq, int i)
{
    yaml_node_t *n = node_of(d, seq);
    if (!n || n->type != YAML_SEQUENCE_NODE || i < 0 || i >= tps_ydoc_len(d, seq)) return 0;
    return n->data.sequence.items.start[i];
}

int tps_ydoc_map_key(const struct tps_ydoc *d, int map, int i)
{
    yaml_node_t *n = node_of(d, map);
    if (!n || n->type != YAML_MAPPING_NODE || i < 0 || i >= tps_ydoc_len(d, map)) return 0;
    return n->data.mapping.pairs.start[i].key;
}

int tps_ydoc_map_val(const struct tps_ydoc *d, int map, int i)
{
    yaml_node_t *n = node_of(d, map);
    if (!n || n->type != YAML_MAPPING_NODE || i < 0 || i >= tps_ydoc_len(d, map)) return 0;
    return n->data.mapping.pairs.start[i].value;
}

const char *tps_ydoc_text(const struct tps_ydoc *d, int id)
{
    yaml_node_t *n = node_of(d, id);
    if (!n || n->type != YAML_SCALAR_NODE) return NULL;
    return (const char *)n->data.scalar.value;
}

int tps_ydoc_get(const struct tps_ydoc *d, int map, const char *key)
{
    int len = tps_ydoc_len(d, map);
    if (!tps_ydoc_is_map(d, map)) return 0;
    for (int i = 0; i < len; i++) {
        const char *k = tps_ydoc_text(d, tps_ydoc_map_key(d, map, i));
        if (k && strcmp(k, key) == 0) return tps_ydoc_map_val(d, map, i);
    }
    return 0;
}

static void join(char *out, size_t len, const char *prefix, const char *key)
{
    if (prefix && prefix[0])
        snprintf(out, len, "%s.%s", prefix, key);
    else
        snprintf(out, len, "%s", key);
}

int tps_ydoc_check_map(const struct tps_ydoc *d, int id, const char *field,
                       const char *const *allowed, struct tps_error *err)
{
    if (!tps_ydoc_is_map(d, id))
        return tps_ydoc_fail(d, id, field, err, "expected a mapping of keys to values");
    int len = tps_ydoc_len(d, id);
    for (int i = 0; i < len; i++) {
        int kid = tps_ydoc_map_key(d, id, i);
        const char *k = tps_ydoc_text(d, kid);
        if (!k) return tps_ydoc_fail(d, kid, field, err, "keys must be plain names");
        char f[128];
        join(f, sizeof f, field, k);
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            known = known || strcmp(*a, k) == 0;
        if (!known) {
            char list[400];
            tps_names_join(allowed, list, sizeof list);
            return tps_ydoc_fail(d, kid, f, err, "unknown key '%s' (expected one of: %s)", k, list);
        }
        for (int j = 0; j < i; j++) {
            const char *kj = tps_ydoc_text(d, tps_ydoc_map_key(d, id, j));
            if (kj && strcmp(kj, k) == 0)
                return tps_ydoc_fail(d, kid, f, err, "key '%s' appears twice", k);
        }
    }
    return TPS_OK;
}

static const char *scalar_or_fail(const struct tps_ydoc *d, int id, const char *field,
                                  const char *what, struct tps_error *err)
{
    const char *t = tps_ydoc_text(d, id);
    if (!t || !t[0]) tps_ydoc_fail(d, id, field, err, "expected %s", what);
    return t && t[0] ? t : NULL;
}

int tps_ydoc_str(const struct tps_ydoc *d, int id, const char *field, const char **out,
                 struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "a string", err);
    if (!t) return TPS_EINVAL;
    *out = t;
    return TPS_OK;
}

int tps_ydoc_name(const struct tps_ydoc *d, int id, const char *field, const char **out,
                  struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "a name", err);
    if (!t) return TPS_EINVAL;
    for (const unsigned char *c = (const unsigned char *)t; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return tps_ydoc_fail(d, id, field, err,
                                 "a name may not hold a control character (\\x%02x): names are "
                                 "printed and written to CSV",
                                 *c);
    *out = t;
    return TPS_OK;
}

int tps_ydoc_long(const struct tps_ydoc *d, int id, const char *field, long *out,
                  struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "an integer", err);
    if (!t) return TPS_EINVAL;
    char *end = NULL;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (errno || *end || end == t)
        return tps_ydoc_fail(d, id, field, err, "expected an integer, got '%s'", t);
    *out = v;
    return TPS_OK;
}

int tps_ydoc_double(const struct tps_ydoc *d, int id, const char *field, double *out,
                    struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "a number", err);
    if (!t) return TPS_EINVAL;
    char *end = NULL;
    double v = strtod(t, &end);
    if (*end || end == t || !isfinite(v))
        return tps_ydoc_fail(d, id, field, err, "expected a number, got '%s'", t);
    *out = v;
    return TPS_OK;
}

int tps_ydoc_bool(const struct tps_ydoc *d, int id, const char *field, bool *out,
                  struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "true or false", err);
    if (!t) return TPS_EINVAL;
    if (!strcmp(t, "true") || !strcmp(t, "yes") || !strcmp(t, "on")) {
        *out = true;
        return TPS_OK;
    }
    if (!strcmp(t, "false") || !strcmp(t, "no") || !strcmp(t, "off")) {
        *out = false;
        return TPS_OK;
    }
    return tps_ydoc_fail(d, id, field, err, "expected true or false, got '%s'", t);
}

typedef int (*unit_fn)(const char *, double *);

static int quantity(const struct tps_ydoc *d, int id, const char *field, double *out, unit_fn fn,
                    const char *what, struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, what, err);
    if (!t) return TPS_EINVAL;
    double v;
    if (fn(t, &v) != 0) return tps_ydoc_fail(d, id, field, err, "expected %s, got '%s'", what, t);
    if (!(v > 0)) return tps_ydoc_fail(d, id, field, err, "must be greater than 0, got '%s'", t);
    *out = v;
    return TPS_OK;
}

int tps_ydoc_size(const struct tps_ydoc *d, int id, const char *field, double *bytes,
                  struct tps_error *err)
{
    return quantity(d, id, field, bytes, tps_units_size, "a size such as 80GB or 141GiB", err);
}

int tps_ydoc_rate(const struct tps_ydoc *d, int id, const char *field, double *bps,
                  struct tps_error *err)
{
    int rc = quantity(d, id, field, bps, tps_units_rate, "a rate such as 300GBps or 200Gbps", err);
    if (!rc && (*bps < TPS_YDOC_MIN_RATE || *bps > TPS_YDOC_MAX_RATE))
        return tps_ydoc_fail(d, id, field, err,
                             "must be between 1 kB/s and 10 PB/s, got %g bytes/s", *bps);
    return rc;
}

int tps_ydoc_time(const struct tps_ydoc *d, int id, const char *field, double *s,
                  struct tps_error *err)
{
    const char *t = scalar_or_fail(d, id, field, "a time such as 1.5us", err);
    if (!t) return TPS_EINVAL;
    double v;
    if (tps_units_time(t, &v) != 0)
        return tps_ydoc_fail(d, id, field, err, "expected a time such as 1.5us, got '%s'", t);
    if (v < 0) return tps_ydoc_fail(d, id, field, err, "must not be negative, got '%s'", t);
    if (!(v <= TPS_YDOC_MAX_TIME))
        return tps_ydoc_fail(d, id, field, err, "must be at most an hour, got '%s'", t);
    *s = v;
    return TPS_OK;
}

int tps_ydoc_count(const struct tps_ydoc *d, int id, const char *field, long *out,
                   struct tps_error *err)
{
    long v = 0;
    int rc = tps_ydoc_long(d, id, field, &v, err);
    if (rc) return rc;
    if (v < 1) return tps_ydoc_fail(d, id, field, err, "must be at least 1, got %ld", v);
    *out = v;
    return TPS_OK;
}

int tps_ydoc_positive(const struct tps_ydoc *d, int id, const char *field, double *out,
                      struct tps_error *err)
{
    double v = 0;
    int rc = tps_ydoc_double(d, id, field, &v, err);
    if (rc) return rc;
    if (!(v > 0)) return tps_ydoc_fail(d, id, field, err, "must be greater than 0, got %g", v);
    *out = v;
    return TPS_OK;
}

/* The index of a scalar among names, or a failure listing them: "expected a, b or c, got 'x'". */
int tps_ydoc_enum(const struct tps_ydoc *d, int id, const char *field, const char *const *names,
                  int *out, struct tps_error *err)
{
    const char *t = tps_ydoc_text(d, id);
    for (int i = 0; t && names[i]; i++)
        if (!strcmp(t, names[i])) {
            *out = i;
            return TPS_OK;
        }
    char list[400];
    size_t n = 0;
    int count = 0;
    while (names[count])
        count++;
    list[0] = '\0';
    for (int i = 0; i < count && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                              i == 0           ? ""
                              : i == count - 1 ? " or "
                                               : ", ",
                              names[i]);
    return tps_ydoc_fail(d, id, field, err, "expected %s, got '%s'", list, t ? t : "");
}

int tps_ydoc_read_map(const struct tps_ydoc *d, int id, const char *field,
                      const struct tps_ykey *keys, void *base, struct tps_error *err)
{
    const char *allowed[65];
    int nk = 0;
    for (; keys[nk].key && nk < 64; nk++)
        allowed[nk] = keys[nk].key;
    allowed[nk] = NULL;
    int rc = tps_ydoc_check_map(d, id, field, allowed, err);
    int len = rc ? 0 : tps_ydoc_len(d, id);
    for (int i = 0; i < len && !rc; i++) {
        const char *k = tps_ydoc_text(d, tps_ydoc_map_key(d, id, i));
        int v = tps_ydoc_map_val(d, id, i);
        const struct tps_ykey *row = keys;
        while (strcmp(row->key, k))
            row++;
        char f[128];
        join(f, sizeof f, field, k);
        void *dst = (char *)base + row->off;
        long n = 0;
        double x = 0;
        switch (row->kind) {
        case TPS_YK_SKIP:
            break;
        case TPS_YK_INT:
        case TPS_YK_LONG:
            if ((rc = tps_ydoc_count(d, v, f, &n, err))) break;
            if (row->hi > 0 && n > row->hi)
                rc = tps_ydoc_fail(d, v, f, err, "too large: %ld (at most %.0f)", n, row->hi);
            else if (row->kind == TPS_YK_INT)
                *(int *)dst = (int)n;
            else
                *(long *)dst = n;
            break;
        case TPS_YK_BOOL:
            rc = tps_ydoc_bool(d, v, f, (bool *)dst, err);
            break;
        case TPS_YK_RATE:
            rc = tps_ydoc_rate(d, v, f, (double *)dst, err);
            break;
        case TPS_YK_TIME:
            rc = tps_ydoc_time(d, v, f, (double *)dst, err);
            break;
        case TPS_YK_POSITIVE:
            if ((rc = tps_ydoc_positive(d, v, f, &x, err))) break;
            if (row->hi > 0 && x > row->hi)
                rc = tps_ydoc_fail(d, v, f, err, "must be at most %g, got %g", row->hi, x);
            else
                *(double *)dst = x;
            break;
        case TPS_YK_FRACTION:
            if ((rc = tps_ydoc_positive(d, v, f, &x, err))) break;
            if (x < TPS_YK_MIN_FRACTION || x > 1)
                rc = tps_ydoc_fail(d, v, f, err,
                                   "an efficiency is a fraction of the peak from %g to 1, got %g",
                                   TPS_YK_MIN_FRACTION, x);
            else
                *(double *)dst = x;
            break;
        case TPS_YK_ENUM:
            rc = tps_ydoc_enum(d, v, f, row->names, (int *)dst, err);
            break;
        case TPS_YK_FN:
            rc = row->fn(d, v, f, dst, err);
            break;
        }
    }
    return rc;
}
