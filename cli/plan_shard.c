/* plan_shard.c - the planner's candidate simulations split over shards: the hook each shard and
 * the merge give the planners, and the shard files (plan_shard.h). */
#include "cli/plan_shard.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cliutil.h"
#include "common/hash.h"
#include "common/readall.h"
#include "core/shard.h"
#include "pipeline/jobplan.h"
#include "pipeline/planner.h"

#define PLAN_KIND "tpsim plan shard"

/* The plan's identity: the scenario file's bytes, the --set assignments, the options. */
static int plan_identity(const char *path, const char *options, char out[17])
{
    struct tps_error err = {0};
    size_t len = 0;
    char *text = tps_read_file(path, (size_t)64 << 20, "a scenario", &len, &err);
    if (!text) return cli_report_error(&err);
    uint64_t h = TPS_FNV_OFFSET;
    tps_fnv1a(&h, text, len);
    free(text);
    for (int i = 0; cli_set_at(i); i++)
        tps_fnv1a(&h, cli_set_at(i), strlen(cli_set_at(i)) + 1);
    tps_fnv1a(&h, options, strlen(options) + 1);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return 0;
}

/* A row's simulated fields as JSON, and back. */
static json_t *row_json(const struct plan_shard *ps, int k, const char *desc, const void *row)
{
    json_t *o = json_pack("{s:i, s:i, s:s}", "setting", ps->setting, "k", k, "desc", desc);
    if (!o) return NULL;
    if (ps->job) {
        const struct jobplan_row *w = row;
        json_t *ex = json_array(), *used = json_array();
        for (int d = 0; d < MDL_NDIMS; d++) {
            json_array_append_new(ex, json_real(w->exposed_dim_s[d]));
            json_array_append_new(used, json_integer(w->dim_used[d]));
        }
        json_object_set_new(o, "simulated_s", json_real(w->simulated_s));
        json_object_set_new(o, "bubble_s", json_real(w->bubble_s));
        json_object_set_new(o, "compute_s", json_real(w->compute_s));
        json_object_set_new(o, "exposed_dim_s", ex);
        json_object_set_new(o, "dim_used", used);
    } else {
        const struct planner_row *w = row;
        json_object_set_new(o, "simulated_s", json_real(w->simulated_s));
        json_object_set_new(o, "fold_spread", json_real(w->fold_spread));
    }
    return o;
}

static int num(json_t *o, const char *key, double *v, const char *path, int i,
               struct tps_error *err)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x)) {
        char field[96];
        snprintf(field, sizeof field, "results[%d].%s", i, key);
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, field, "missing or not a number");
    }
    *v = json_number_value(x);
    return 0;
}

static int row_fill(const struct plan_shard *ps, json_t *o, void *row, const char *path, int i,
                    struct tps_error *err)
{
    if (!ps->job) {
        struct planner_row *w = row;
        return num(o, "simulated_s", &w->simulated_s, path, i, err) ||
               num(o, "fold_spread", &w->fold_spread, path, i, err);
    }
    struct jobplan_row *w = row;
    json_t *ex = json_object_get(o, "exposed_dim_s"), *used = json_object_get(o, "dim_used");
    if (json_array_size(ex) != MDL_NDIMS || json_array_size(used) != MDL_NDIMS) {
        char field[96];
        snprintf(field, sizeof field, "results[%d].exposed_dim_s", i);
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, field,
                             "not a job plan's result (%d dimensions)", MDL_NDIMS);
    }
    for (int d = 0; d < MDL_NDIMS; d++) {
        w->exposed_dim_s[d] = json_number_value(json_array_get(ex, (size_t)d));
        w->dim_used[d] = (int)json_integer_value(json_array_get(used, (size_t)d));
    }
    return num(o, "simulated_s", &w->simulated_s, path, i, err) ||
           num(o, "bubble_s", &w->bubble_s, path, i, err) ||
           num(o, "compute_s", &w->compute_s, path, i, err);
}

static int run_before(void *ctx, int k, const char *desc, void *row, struct tps_error *err)
{
    (void)k;
    (void)desc;
    (void)row;
    (void)err;
    struct plan_shard *ps = ctx;
    return ps->asked++ % ps->nshards == ps->shard ? PLAN_SIMULATE : PLAN_SKIP;
}

static int run_after(void *ctx, int k, const char *desc, const void *row, struct tps_error *err)
{
    struct plan_shard *ps = ctx;
    json_t *o = row_json(ps, k, desc, row);
    if (!o || json_array_append_new(ps->results, o)) return tps_error_oom(err);
    return 0;
}

static int merge_before(void *ctx, int k, const char *desc, void *row, struct tps_error *err)
{
    struct plan_shard *ps = ctx;
    int owner = (int)(ps->asked++ % ps->nshards);
    size_t i;
    json_t *o;
    json_array_foreach(ps->results, i, o)
    {
        if (json_integer_value(json_object_get(o, "setting")) != ps->setting ||
            json_integer_value(json_object_get(o, "k")) != k)
            continue;
        json_t *from = json_array_get(ps->origin, i);
        const char *path = json_string_value(json_object_get(from, "path"));
        size_t at = (size_t)json_integer_value(json_object_get(from, "i"));
        const char *d = json_string_value(json_object_get(o, "desc"));
        if (!d || strcmp(d, desc)) {
            char field[64];
            snprintf(field, sizeof field, "results[%zu].desc", at);
            tps_error_set(err, TPS_EINVAL, path, 0, 0, field,
                          "candidate %d is '%s' in this plan, '%s' in the shard: a stale shard "
                          "(rerun it)",
                          k + 1, desc, d ? d : "(none)");
            ps->err = *err;
            return -1;
        }
        if (row_fill(ps, o, row, path, (int)at, err)) {
            ps->err = *err;
            return -1;
        }
        return PLAN_FILLED;
    }
    ps->missing[owner] = 1;
    ps->nmissing++;
    ps->hook.no_variants = 1; /* the best is not known: no variants of it */
    return PLAN_SKIP;
}

/* Reads every plan-shard-I-of-N.json in ps->dir into ps->results. */
static int merge_load(struct plan_shard *ps)
{
    DIR *d = opendir(ps->dir);
    if (!d) {
        fprintf(stderr, "tpsim plan: cannot read %s: %s\n", ps->dir, strerror(errno));
        return CLI_EXIT_INPUT;
    }
    struct dirent *e;
    int code = 0, files = 0;
    struct tps_error err = {0};
    while (!code && (e = readdir(d))) {
        int i, n, end = 0;
        if (sscanf(e->d_name, "plan-shard-%d-of-%d.json%n", &i, &n, &end) != 2 || e->d_name[end])
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", ps->dir, e->d_name);
        json_error_t je;
        json_t *f = json_load_file(path, 0, &je);
        const char *kind = json_string_value(json_object_get(f, "kind"));
        const char *id = json_string_value(json_object_get(f, "plan_id"));
        json_t *res = json_object_get(f, "results");
        if (!f)
            tps_error_set(&err, TPS_EINVAL, path, je.line, je.column, NULL, "not JSON: %s",
                          je.text);
        else if (!kind || strcmp(kind, PLAN_KIND) || !json_is_array(res))
            tps_error_set(&err, TPS_EINVAL, path, 0, 0, "kind",
                          "not a plan shard (tpsim plan --shard writes one)");
        else if (json_integer_value(json_object_get(f, "shards")) != n ||
                 json_integer_value(json_object_get(f, "shard")) != i || n < 1 || i >= n)
            tps_error_set(&err, TPS_EINVAL, path, 0, 0, "shard",
                          "its shard and count are not the file name's");
        else if (ps->nshards && n != ps->nshards)
            tps_error_set(&err, TPS_EINVAL, path, 0, 0, "shards",
                          "a split into %d shards beside one into %d: remove the other split's "
                          "files",
                          n, ps->nshards);
        else if (!id || strcmp(id, ps->plan_id))
            tps_error_set(&err, TPS_EINVAL, path, 0, 0, "plan_id",
                          "a shard of another plan (%s; this one is %s: the scenario, a --set or "
                          "an option differs)",
                          id ? id : "none", ps->plan_id);
        if (err.code) {
            code = cli_report_error(&err);
        } else {
            ps->nshards = n;
            files++;
            size_t k;
            json_t *o;
            json_array_foreach(res, k, o)
            {
                json_array_append(ps->results, o);
                json_array_append_new(ps->origin,
                                      json_pack("{s:s, s:i}", "path", path, "i", (json_int_t)k));
            }
        }
        json_decref(f);
    }
    closedir(d);
    if (!code && !files) {
        fprintf(stderr,
                "tpsim plan: %s holds no plan shards (tpsim plan SCENARIO --shard I/N -o "
                "DIR writes them)\n",
                ps->dir);
        code = CLI_EXIT_INPUT;
    }
    if (!code && !(ps->missing = calloc((size_t)ps->nshards, 1))) code = CLI_EXIT_SIM;
    return code;
}

int plancli_shard_open(struct plan_shard *ps, int mode, const char *spec, const char *dir,
                       const char *path, const char *options, int job)
{
    memset(ps, 0, sizeof *ps);
    ps->mode = mode;
    ps->job = job;
    snprintf(ps->dir, sizeof ps->dir, "%s", dir);
    struct tps_error err = {0};
    if (mode == PLAN_SHARD_RUN && shard_parse(spec, "--shard", &ps->shard, &ps->nshards, &err))
        return cli_usage_error("plan", "%s", err.msg);
    int code = plan_identity(path, options, ps->plan_id);
    if (code) return code;
    ps->results = json_array();
    ps->origin = json_array();
    if (!ps->results || !ps->origin) return CLI_EXIT_SIM;
    if (mode == PLAN_SHARD_MERGE && (code = merge_load(ps))) return code;
    ps->hook =
        (struct plan_hook){mode == PLAN_SHARD_RUN ? run_before : merge_before,
                           mode == PLAN_SHARD_RUN ? run_after : NULL, ps, mode == PLAN_SHARD_RUN};
    return 0;
}

static int write_shard(const struct plan_shard *ps)
{
    char path[1100], tmp[1200];
    if (shard_make_dirs(ps->dir) != 0) {
        fprintf(stderr, "tpsim plan: cannot create %s: %s\n", ps->dir, strerror(errno));
        return CLI_EXIT_INPUT;
    }
    snprintf(path, sizeof path, "%s/plan-shard-%d-of-%d.json", ps->dir, ps->shard, ps->nshards);
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:O}", "kind", PLAN_KIND, "plan_id", ps->plan_id,
                          "shard", ps->shard, "shards", ps->nshards, "results", ps->results);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int bad = !o || !f || json_dumpf(o, f, JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0 ||
              fputc('\n', f) == EOF;
    json_decref(o);
    if (!f && fd >= 0) close(fd);
    if ((f && fclose(f) != 0) || bad || chmod(tmp, 0644) != 0 || rename(tmp, path) != 0) {
        if (fd >= 0) unlink(tmp);
        fprintf(stderr, "tpsim plan: cannot write %s\n", path);
        return CLI_EXIT_INPUT;
    }
    fprintf(stderr, "tpsim plan: shard %d/%d: %zu candidate(s) simulated into %s\n", ps->shard,
            ps->nshards, json_array_size(ps->results), path);
    return 0;
}

int plancli_shard_close(struct plan_shard *ps, int failed)
{
    int code = 0;
    if (!failed && ps->mode == PLAN_SHARD_RUN) code = write_shard(ps);
    if (!failed && ps->mode == PLAN_SHARD_MERGE && ps->nmissing) {
        fprintf(stderr, "tpsim plan: %ld candidate(s) have no simulation in %s; run shard(s)",
                ps->nmissing, ps->dir);
        for (int s = 0; s < ps->nshards; s++)
            if (ps->missing[s]) fprintf(stderr, " %d", s);
        fprintf(stderr, " of %d (tpsim plan SCENARIO --shard I/%d -o %s), then merge again\n",
                ps->nshards, ps->nshards, ps->dir);
        code = CLI_EXIT_SIM;
    }
    json_decref(ps->results);
    json_decref(ps->origin);
    free(ps->missing);
    memset(ps, 0, sizeof *ps);
    return code;
}
