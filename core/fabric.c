/* fabric.c - loading a scenario of several jobs sharing one platform (see fabric.h). The jobs'
 * own sections are read by the scenario loader (scn_load_node); this file owns the file's root,
 * the list of jobs and where each is placed. */
#include "core/fabric.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ydoc.h"
#include "platforms/spec.h"

static const char *const root_keys[] = {"name",        "description", "platform",
                                        "collectives", "jobs",        NULL};
/* a scenario's keys, less the platform's (shared) and a sweep's (not over several jobs yet) */
static const char *const job_keys[] = {
    "name",     "gpus",     "model",   "device",     "strategy", "run", "framework",
    "pipeline", "training", "devices", "stragglers", "cost",     NULL};

int scn_fabric_probe(const char *path)
{
    struct tps_ydoc d;
    struct tps_error err = {0};
    if (tps_ydoc_load_file(&d, path, &err)) return 0;
    int root = tps_ydoc_root(&d);
    int yes = root && tps_ydoc_is_map(&d, root) && tps_ydoc_get(&d, root, "jobs") != 0;
    tps_ydoc_release(&d);
    return yes;
}

void scn_fabric_field(int i, struct tps_error *err)
{
    char f[sizeof err->field + 32];
    if (strncmp(err->field, "jobs[", 5) == 0) return;
    snprintf(f, sizeof f, "jobs[%d]%s%s", i, err->field[0] ? "." : "", err->field);
    memcpy(err->field, f, sizeof err->field - 1);
    err->field[sizeof err->field - 1] = 0;
}

static int job_fail(int i, int rc, struct tps_error *err)
{
    scn_fabric_field(i, err);
    return rc;
}

/* One entry of gpus: an index, or a range "A-B"; *lo..*hi. */
static int read_gpu_item(const struct tps_ydoc *d, int v, const char *field, int ngpus, long *lo,
                         long *hi, struct tps_error *err)
{
    const char *t = tps_ydoc_text(d, v);
    char tail = 0;
    if (t && sscanf(t, "%ld-%ld%c", lo, hi, &tail) == 2 && *lo <= *hi && *lo >= 0 && *hi < ngpus)
        return TPS_OK;
    if (t && !strchr(t, '-') && tps_ydoc_long(d, v, field, lo, err) == TPS_OK && *lo >= 0 &&
        *lo < ngpus) {
        *hi = *lo;
        return TPS_OK;
    }
    return tps_ydoc_fail(d, v, field, err,
                         "expected a GPU index from 0 to %d or a range A-B of them, got '%s'",
                         ngpus - 1, t ? t : "a collection");
}

/* gpus: of job i, checked against `taken` (owner job + 1 per GPU, 0 free) and marked there. */
static int read_gpus(const struct tps_ydoc *d, int v, int i, long need, int ngpus, int *taken,
                     struct scn_fabric_job *j, struct tps_error *err)
{
    char field[48];
    snprintf(field, sizeof field, "jobs[%d].gpus", i);
    if (!tps_ydoc_is_seq(d, v) || tps_ydoc_len(d, v) == 0)
        return tps_ydoc_fail(d, v, field, err, "expected a list of GPU indices or ranges A-B");
    j->gpus = malloc((size_t)need * sizeof *j->gpus);
    if (!j->gpus) return tps_error_oom(err);
    int n = 0;
    for (int k = 0; k < tps_ydoc_len(d, v); k++) {
        int it = tps_ydoc_seq_at(d, v, k);
        long lo, hi;
        int rc = read_gpu_item(d, it, field, ngpus, &lo, &hi, err);
        if (rc) return rc;
        for (long g = lo; g <= hi; g++) {
            if (taken[g] == i + 1)
                return tps_ydoc_fail(d, it, field, err, "GPU %ld is listed twice", g);
            if (taken[g])
                return tps_ydoc_fail(d, it, field, err,
                                     "GPU %ld is already jobs[%d]'s (jobs never share a GPU)", g,
                                     taken[g] - 1);
            if (n == need)
                return tps_ydoc_fail(d, it, field, err,
                                     "the job runs on %ld GPUs, but more are listed", need);
            taken[g] = i + 1;
            j->gpus[n++] = (int)g;
        }
    }
    if (n != need)
        return tps_ydoc_fail(d, v, field, err, "the job runs on %ld GPUs, but %d are listed", need,
                             n);
    j->ngpus = n;
    return TPS_OK;
}

/* The GPUs a job's program has: a TP group's or a whole job's. */
static long job_need(const struct scn_scenario *s)
{
    return s->is_job ? mdl_job_gpus(&s->job, &s->strategy)
                     : mdl_strategy_lower_gpus(&s->strategy, &s->model);
}

/* Job i at node id: its scenario, then checks that only apply on a shared platform. */
static int load_one(const struct tps_ydoc *d, int root, int id, int i, const char *path,
                    const char *base, struct scn_fabric_job *j, struct tps_error *err)
{
    int rc = tps_ydoc_check_map(d, id, "", job_keys, err), v;
    if (rc) return job_fail(i, rc, err);
    snprintf(j->name, sizeof j->name, "job%d", i + 1);
    if ((v = tps_ydoc_get(d, id, "name"))) {
        const char *t;
        if ((rc = tps_ydoc_name(d, v, "name", &t, err))) return job_fail(i, rc, err);
        snprintf(j->name, sizeof j->name, "%s", t);
    }
    if ((v = tps_ydoc_get(d, id, "devices")))
        return job_fail(i,
                        tps_ydoc_fail(d, v, "devices", err,
                                      "a device per GPU applies to a scenario of one job, not "
                                      "yet to jobs sharing a platform (give each job its "
                                      "device:)"),
                        err);
    if ((rc = scn_load_node(d, id, root, path, base, &j->scn, err))) return job_fail(i, rc, err);
    snprintf(j->scn.name, sizeof j->scn.name, "%s", j->name);
    struct scn_scenario *s = &j->scn;
    if (s->is_job && s->fold != 0) {
        int r = tps_ydoc_get(d, id, "run"), f = r ? tps_ydoc_get(d, r, "fold") : 0;
        if (s->fold == 1)
            return job_fail(i,
                            tps_ydoc_fail(d, f, "run.fold", err,
                                          "a job sharing a platform is replayed op by op "
                                          "(folded layers would not meet the other jobs' "
                                          "traffic)"),
                            err);
        double nops =
            mdl_job_ops(&s->job, &s->strategy, &s->model, &s->device, &s->framework, NULL);
        char n[48];
        if (nops > mdl_max_ops())
            return job_fail(i,
                            tps_ydoc_fail(d, id, "run", err,
                                          "the job op by op would make %s ops, above the limit "
                                          "of %.3g (a job sharing a platform is not folded)",
                                          mdl_ops_text(nops, n, sizeof n), mdl_max_ops()),
                            err);
        s->fold = 0;
    }
    return TPS_OK;
}

int scn_fabric_load(const char *path, struct scn_fabric *f, struct tps_error *err)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    const char *slash = strrchr(path, '/');
    snprintf(f->name, sizeof f->name, "%s", slash ? slash + 1 : path);
    char base[512];
    plat_path_dir(path, base, sizeof base);
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    int root = rc ? 0 : tps_ydoc_root(&d), jobs = 0, v;
    if (!rc) rc = tps_ydoc_check_map(&d, root, "", root_keys, err);
    if (!rc && (v = tps_ydoc_get(&d, root, "name"))) {
        const char *t;
        if (!(rc = tps_ydoc_str(&d, v, "name", &t, err)))
            snprintf(f->name, sizeof f->name, "%s", t);
    }
    if (!rc) {
        int pid = tps_ydoc_get(&d, root, "platform");
        rc = pid ? plat_spec_parse(&d, pid, "platform", base, &f->topo, err)
                 : tps_ydoc_fail(&d, root, "platform", err, "missing section");
    }
    if (!rc && (v = tps_ydoc_get(&d, root, "collectives")))
        rc = plat_nccl_parse(&d, v, "collectives", &f->topo.nccl, err);
    if (!rc) {
        jobs = tps_ydoc_get(&d, root, "jobs");
        int n = tps_ydoc_is_seq(&d, jobs) ? tps_ydoc_len(&d, jobs) : 0;
        if (n < 1 || n > SCN_FABRIC_MAX_JOBS)
            rc = tps_ydoc_fail(&d, jobs, "jobs", err,
                               "expected a list of 1 to %d jobs, each a mapping of a scenario's "
                               "sections without a platform",
                               SCN_FABRIC_MAX_JOBS);
        else if (!(f->jobs = calloc((size_t)n, sizeof *f->jobs)))
            rc = tps_error_oom(err);
        else
            f->njobs = n; /* zeroed scenarios, which scn_release accepts */
    }
    double total = 0; /* the ops of the jobs so far: they are simulated together */
    for (int i = 0; !rc && i < f->njobs; i++) {
        rc = load_one(&d, root, tps_ydoc_seq_at(&d, jobs, i), i, path, base, &f->jobs[i], err);
        const struct scn_scenario *s = &f->jobs[i].scn;
        double nops = rc          ? 0
                      : s->is_job ? mdl_job_ops(&s->job, &s->strategy, &s->model, &s->device,
                                                &s->framework, NULL)
                                  : mdl_strategy_ops(&s->strategy, &s->model, &s->device,
                                                     &s->framework, s->layers, s->micro_batches);
        total += nops > 0 ? nops : 0;
        char n[48];
        if (!rc && total > mdl_max_ops())
            rc = job_fail(i,
                          tps_ydoc_fail(&d, tps_ydoc_seq_at(&d, jobs, i), "", err,
                                        "jobs[0..%d] together would make %s ops, above the "
                                        "limit of %.3g (TPSIM_MAX_OPS): the jobs share one "
                                        "simulation",
                                        i, mdl_ops_text(total, n, sizeof n), mdl_max_ops()),
                          err);
        char field[48];
        snprintf(field, sizeof field, "jobs[%d].name", i);
        int jid = tps_ydoc_seq_at(&d, jobs, i), nid = tps_ydoc_get(&d, jid, "name");
        for (int k = 0; !rc && k < i; k++) /* a name given, or the one a job without gets */
            if (!strcmp(f->jobs[k].name, f->jobs[i].name))
                rc = tps_ydoc_fail(&d, nid ? nid : jid, field, err,
                                   "jobs[%d] is already named '%s'", k, f->jobs[i].name);
    }
    if (!rc)
        snprintf(f->platform_spec, sizeof f->platform_spec, "%s", f->jobs[0].scn.platform_spec);
    /* placement: the listed GPUs first, then each other job on the lowest free ones */
    int *taken = rc ? NULL : calloc((size_t)f->topo.ngpus + 1, sizeof *taken);
    if (!rc && !taken) rc = tps_error_oom(err);
    for (int i = 0; !rc && i < f->njobs; i++) {
        int id = tps_ydoc_seq_at(&d, jobs, i);
        if ((v = tps_ydoc_get(&d, id, "gpus")))
            rc = read_gpus(&d, v, i, job_need(&f->jobs[i].scn), f->topo.ngpus, taken, &f->jobs[i],
                           err);
    }
    for (int i = 0; !rc && i < f->njobs; i++) {
        struct scn_fabric_job *j = &f->jobs[i];
        if (j->gpus) continue;
        long need = job_need(&j->scn);
        if (!(j->gpus = malloc((size_t)need * sizeof *j->gpus))) rc = tps_error_oom(err);
        for (int g = 0; !rc && g < f->topo.ngpus && j->ngpus < need; g++)
            if (!taken[g]) {
                taken[g] = i + 1;
                j->gpus[j->ngpus++] = g;
            }
        char field[48];
        snprintf(field, sizeof field, "jobs[%d].gpus", i);
        if (!rc && j->ngpus < need)
            rc = tps_ydoc_fail(&d, tps_ydoc_seq_at(&d, jobs, i), field, err,
                               "the job runs on %ld GPUs, but only %d of the platform's %d are "
                               "free",
                               need, j->ngpus, f->topo.ngpus);
    }
    free(taken);
    tps_ydoc_release(&d);
    return rc;
}

void scn_fabric_release(struct scn_fabric *f)
{
    for (int i = 0; i < f->njobs; i++) {
        free(f->jobs[i].gpus);
        scn_release(&f->jobs[i].scn);
    }
    free(f->jobs);
    plat_topo_release(&f->topo);
    memset(f, 0, sizeof *f);
}

void scn_fabric_gpus_text(const struct scn_fabric_job *j, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < j->ngpus && used < len;) {
        int k = i;
        while (k + 1 < j->ngpus && j->gpus[k + 1] == j->gpus[k] + 1)
            k++;
        int w = k > i ? snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "", j->gpus[i],
                                 j->gpus[k])
                      : snprintf(buf + used, len - used, "%s%d", i ? "," : "", j->gpus[i]);
        if (w < 0) break;
        used += (size_t)w;
        i = k + 1;
    }
}
