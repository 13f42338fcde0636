/* shard.c - splitting a sweep's points over shards (longest processing time first) and the
 * split's manifest, DIR/sweep.json (jansson). */
#include "core/shard.h"
#include "common/hash.h"
#include "core/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_KIND    "tpsim sweep shards"
#define MANIFEST_VERSION 1

int shard_parse(const char *spec, const char *field, int *index, int *count, struct tps_error *err)
{
    char *end;
    errno = 0;
    long i = strtol(spec, &end, 10);
    long n = *end == '/' ? strtol(end + 1, &end, 10) : -1;
    if (errno || *end || !(spec[0] >= '0' && spec[0] <= '9') || n < 1 || n > SHARD_MAX || i < 0 ||
        i >= n)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, field,
                             "expected I/N, shard I (from 0) of N shards, 0 <= I < N <= %d, got "
                             "'%s'",
                             SHARD_MAX, spec);
    *index = (int)i;
    *count = (int)n;
    return TPS_OK;
}

struct item {
    double cost;
    long i;
};

static int by_cost(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* A min-heap of shards by (load, shard). */
struct heap {
    double *load;
    int *h, n;
};

static int less(const struct heap *H, int a, int b)
{
    double la = H->load[H->h[a]], lb = H->load[H->h[b]];
    return la < lb || (la == lb && H->h[a] < H->h[b]);
}

static void sift_down(struct heap *H, int k)
{
    for (;;) {
        int l = 2 * k + 1, r = l + 1, m = k;
        if (l < H->n && less(H, l, m)) m = l;
        if (r < H->n && less(H, r, m)) m = r;
        if (m == k) return;
        int t = H->h[k];
        H->h[k] = H->h[m];
        H->h[m] = t;
        k = m;
    }
}

int shard_assign(long n, const double *cost, int nshards, int *owner)
{
    struct item *it = malloc(((size_t)n + 1) * sizeof *it);
    double *load = calloc((size_t)nshards, sizeof *load);
    int *h = malloc((size_t)nshards * sizeof *h);
    if (!it || !load || !h) {
        free(it);
        free(load);
        free(h);
        return -1;
    }
    long m = 0;
    for (long i = 0; i < n; i++) {
        owner[i] = -1;
        if (cost[i] >= 0) it[m++] = (struct item){cost[i], i};
    }
    qsort(it, (size_t)m, sizeof *it, by_cost);
    /* loads start equal, so shards in order already form a heap */
    for (int s = 0; s < nshards; s++)
        h[s] = s;
    struct heap H = {load, h, nshards};
    for (long k = 0; k < m; k++) {
        int s = h[0];
        owner[it[k].i] = s;
        load[s] += it[k].cost;
        sift_down(&H, 0);
    }
    free(it);
    free(load);
    free(h);
    return 0;
}

void shard_points_hash(const char *sweep_id, char *const *row, long n, char out[17])
{
    uint64_t h = TPS_FNV_OFFSET;
    tps_fnv1a(&h, sweep_id, strlen(sweep_id) + 1);
    for (long i = 0; i < n; i++)
        if (row[i]) tps_fnv1a(&h, row[i], strlen(row[i]) + 1);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void shard_manifest_path(const char *dir, char *out, size_t len)
{
    snprintf(out, len, "%s/sweep.json", dir);
}

void shard_csv_path(const char *dir, int shard, int nshards, char *out, size_t len)
{
    snprintf(out, len, "%s/shard-%d-of-%d.csv", dir, shard, nshards);
}

void shard_manifest_release(struct shard_manifest *m)
{
    for (long i = 0; m->row && i < m->npoints; i++)
        free(m->row[i]);
    for (int i = 0; m->sets && i < m->nsets; i++)
        free(m->sets[i]);
    free(m->row);
    free(m->sets);
    free(m->owner);
    free(m->cost);
    free(m->header);
    memset(m, 0, sizeof *m);
}

static json_t *to_json(const struct shard_manifest *m)
{
    json_t *o = json_object(), *sh = json_array(), *co = json_array(), *rw = json_array(),
           *st = json_array();
    if (!o || !sh || !co || !rw || !st) goto fail;
    for (long i = 0; i < m->npoints; i++) {
        if (json_array_append_new(sh, json_integer(m->owner[i])) ||
            json_array_append_new(co, json_real(m->cost[i] >= 0 ? m->cost[i] : -1)) ||
            json_array_append_new(rw, m->row[i] ? json_string(m->row[i]) : json_null()))
            goto fail;
    }
    for (int i = 0; i < m->nsets; i++)
        if (json_array_append_new(st, json_string(m->sets[i]))) goto fail;
    if (json_object_set_new(o, "kind", json_string(MANIFEST_KIND)) ||
        json_object_set_new(o, "version", json_integer(MANIFEST_VERSION)) ||
        json_object_set_new(o, "scenario", json_string(m->scenario)) ||
        json_object_set_new(o, "name", json_string(m->name)) ||
        json_object_set_new(o, "sweep_id", json_string(m->sweep_id)) ||
        json_object_set_new(o, "points_hash", json_string(m->points_hash)) ||
        json_object_set_new(o, "points", json_integer(m->npoints)) ||
        json_object_set_new(o, "shards", json_integer(m->nshards)) ||
        json_object_set_new(o, "header", json_string(m->header)) ||
        json_object_set_new(o, "sets", st) || json_object_set_new(o, "shard", sh) ||
        json_object_set_new(o, "cost", co) || json_object_set_new(o, "row", rw))
        goto fail_o;
    return o;
fail:
    json_decref(sh);
    json_decref(co);
    json_decref(rw);
    json_decref(st);
fail_o:
    json_decref(o);
    return NULL;
}

/* Copies string member `key` of o into out (len bytes); an error naming it otherwise. */
static int get_text(json_t *o, const char *key, char *out, size_t len, const char *path,
                    struct tps_error *err)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) >= len)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, key,
                             "missing or not a string of at most %zu bytes: not a manifest "
                             "tpsim wrote",
                             len - 1);
    memcpy(out, v, strlen(v) + 1);
    return TPS_OK;
}

static int from_json(json_t *o, const char *path, struct shard_manifest *m, struct tps_error *err)
{
    memset(m, 0, sizeof *m);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!json_is_object(o) || !kind || strcmp(kind, MANIFEST_KIND))
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "kind",
                             "not a manifest of sweep shards (tpsim sweep --shard writes one)");
    if (json_integer_value(json_object_get(o, "version")) != MANIFEST_VERSION)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "version",
                             "a manifest of another version of tpsim (this one reads version "
                             "%d)",
                             MANIFEST_VERSION);
    char header[8192];
    int rc = get_text(o, "scenario", m->scenario, sizeof m->scenario, path, err);
    if (!rc) rc = get_text(o, "name", m->name, sizeof m->name, path, err);
    if (!rc) rc = get_text(o, "sweep_id", m->sweep_id, sizeof m->sweep_id, path, err);
    if (!rc) rc = get_text(o, "points_hash", m->points_hash, sizeof m->points_hash, path, err);
    if (!rc) rc = get_text(o, "header", header, sizeof header, path, err);
    if (rc) return rc;
    json_t *np = json_object_get(o, "points"), *ns = json_object_get(o, "shards"),
           *sh = json_object_get(o, "shard"), *co = json_object_get(o, "cost"),
           *rw = json_object_get(o, "row"), *st = json_object_get(o, "sets");
    json_int_t n = json_integer_value(np), k = json_integer_value(ns);
    if (!json_is_integer(np) || n < 1 || n > SWEEP_MAX_POINTS)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "points", "not a point count");
    if (!json_is_integer(ns) || k < 1 || k > SHARD_MAX)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "shards", "not a shard count (1 to %d)",
                             SHARD_MAX);
    const char *arr[] = {"shard", "cost", "row"};
    json_t *a[] = {sh, co, rw};
    for (int i = 0; i < 3; i++)
        if (!json_is_array(a[i]) || (json_int_t)json_array_size(a[i]) != n)
            return tps_error_set(err, TPS_EINVAL, path, 0, 0, arr[i],
                                 "not a list of %lld entries, one per point", (long long)n);
    if (st && !json_is_array(st))
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "sets", "not a list of strings");
    m->npoints = (long)n;
    m->nshards = (int)k;
    m->header = strdup(header);
    m->owner = malloc((size_t)n * sizeof *m->owner);
    m->cost = malloc((size_t)n * sizeof *m->cost);
    m->row = calloc((size_t)n, sizeof *m->row);
    m->nsets = st ? (int)json_array_size(st) : 0;
    m->sets = calloc((size_t)m->nsets + 1, sizeof *m->sets);
    if (!m->header || !m->owner || !m->cost || !m->row || !m->sets) return tps_error_oom(err);
    for (long i = 0; i < m->npoints; i++) {
        json_t *s = json_array_get(sh, (size_t)i), *c = json_array_get(co, (size_t)i),
               *r = json_array_get(rw, (size_t)i);
        json_int_t v = json_integer_value(s);
        if (!json_is_integer(s) || v < -1 || v >= k || !json_is_number(c) ||
            (!json_is_null(r) && !json_is_string(r)) || (v < 0) != json_is_null(r))
            return tps_error_set(err, TPS_EINVAL, path, 0, 0, "shard",
                                 "point %ld: its shard, cost or row is not one tpsim writes", i);
        m->owner[i] = (int)v;
        m->cost[i] = json_number_value(c);
        if (json_is_string(r) && !(m->row[i] = strdup(json_string_value(r))))
            return tps_error_oom(err);
    }
    for (int i = 0; i < m->nsets; i++) {
        const char *v = json_string_value(json_array_get(st, (size_t)i));
        if (!v) return tps_error_set(err, TPS_EINVAL, path, 0, 0, "sets", "not a string");
        if (!(m->sets[i] = strdup(v))) return tps_error_oom(err);
    }
    char hash[17];
    shard_points_hash(m->sweep_id, m->row, m->npoints, hash);
    if (strcmp(hash, m->points_hash))
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "points_hash",
                             "does not match the rows it lists (%s): the manifest was edited",
                             hash);
    return TPS_OK;
}

int shard_manifest_load(const char *dir, struct shard_manifest *m, struct tps_error *err)
{
    char path[1024];
    shard_manifest_path(dir, path, sizeof path);
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o) {
        if (access(path, F_OK) != 0)
            return tps_error_set(err, TPS_EIO, path, 0, 0, NULL,
                                 "no manifest: %s holds no sweep shards (tpsim sweep FILE --shard "
                                 "I/N -o DIR writes them)",
                                 dir);
        return tps_error_set(err, TPS_EINVAL, path, je.line > 0 ? je.line : 0,
                             je.column > 0 ? je.column : 0, NULL, "not JSON: %s", je.text);
    }
    int rc = from_json(o, path, m, err);
    json_decref(o);
    return rc;
}

int shard_manifest_same(const struct shard_manifest *m, const struct shard_manifest *found,
                        const char *path, struct tps_error *err)
{
    if (strcmp(m->sweep_id, found->sweep_id))
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "sweep_id",
                             "these shards are of another sweep (%s, this one is %s: the "
                             "scenario outside its sweep: section differs, or another --set); "
                             "give another -o DIR, or remove this one to start over",
                             found->sweep_id, m->sweep_id);
    if (strcmp(m->points_hash, found->points_hash))
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "points_hash",
                             "these shards ran other points of this sweep (its values or where: "
                             "changed since): give another -o DIR, or remove this one to start "
                             "over");
    if (m->nshards != found->nshards)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "shards",
                             "this directory holds a split into %d shards, not %d: use --shard "
                             "I/%d, or another -o DIR",
                             found->nshards, m->nshards, found->nshards);
    return TPS_OK;
}

int shard_make_dirs(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *q = p + 1; *q; q++) {
        if (*q != '/') continue;
        *q = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
        *q = '/';
    }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int shard_manifest_save(const char *dir, const struct shard_manifest *m,
                        struct shard_manifest *found, struct tps_error *err)
{
    char path[1024], tmp[1100];
    memset(found, 0, sizeof *found);
    if (shard_make_dirs(dir) != 0)
        return tps_error_set(err, TPS_EIO, dir, 0, 0, NULL, "cannot create the directory: %s",
                             strerror(errno));
    shard_manifest_path(dir, path, sizeof path);
    if (access(path, F_OK) != 0) {
        json_t *o = to_json(m);
        if (!o) return tps_error_oom(err);
        snprintf(tmp, sizeof tmp, "%s/.sweep.json.XXXXXX", dir);
        int fd = mkstemp(tmp);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int bad = !f || json_dumpf(o, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 ||
                  fputc('\n', f) == EOF;
        json_decref(o);
        if (!f && fd >= 0) close(fd);
        if (!f || fclose(f) != 0 || bad) {
            if (fd >= 0) unlink(tmp);
            return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write the manifest");
        }
        chmod(tmp, 0644);
        /* link, not rename: of shards starting at once, one manifest wins and none replaces it */
        int linked = link(tmp, path) == 0;
        int e = errno;
        unlink(tmp);
        if (linked) return TPS_OK;
        if (e != EEXIST)
            return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write the manifest: %s",
                                 strerror(e));
    }
    int rc = shard_manifest_load(dir, found, err);
    if (!rc) rc = shard_manifest_same(m, found, path, err);
    return rc;
}
