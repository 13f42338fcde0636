/* fabric.c - jobs sharing one platform: lowered each as `run` lowers it, placed on their GPUs,
 * simulated together and each alone, and reported side by side (see fabric.h). */
#include "pipeline/fabric.h"
#include "pipeline/pipeline_int.h"
#include "common/inputs.h"
#include "common/csv.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int fabric_load(const char *path, long seed, struct fabric_run *r, struct tps_error *err)
{
    memset(r, 0, sizeof *r);
    int rc = scn_fabric_load(path, &r->f, err);
    if (rc) return rc;
    const struct plat_topo *t = &r->f.topo;
    snprintf(r->platform, sizeof r->platform, "%s (%s)", r->f.platform_spec, t->desc);
    if (!(r->jobs = calloc((size_t)r->f.njobs, sizeof *r->jobs))) return tps_error_oom(err);
    r->njobs = r->f.njobs;
    for (int i = 0; i < r->njobs && !rc; i++) {
        struct fabric_job_run *J = &r->jobs[i];
        struct scn_fabric_job *fj = &r->f.jobs[i];
        if (!(J->pj = pipeline_job_new())) return tps_error_oom(err);
        scn_move(&J->pj->scn, &fj->scn); /* the fabric keeps an empty scenario */
        J->pj->topo = &J->pj->scn.topo;
        snprintf(J->pj->input, sizeof J->pj->input, "%s", path);
        J->ngpus = fj->ngpus;
        J->gpus = fj->gpus;
        scn_fabric_gpus_text(fj, J->gpus_text, sizeof J->gpus_text);
        if (seed >= 0) J->pj->scn.hetero.seed = (unsigned long)seed;
        if ((rc = pipeline_lower_job(J->pj, err)))
            scn_fabric_field(i, err);
        else if (J->pj->prog.nranks != J->ngpus) {
            rc = tps_error_set(err, TPS_EINVAL, path, 0, 0, "jobs",
                               "jobs[%d] lowered to %d ranks for %d GPUs", i, J->pj->prog.nranks,
                               J->ngpus);
        }
    }
    return rc;
}

/* Simulates jobs [first, first + n) placed together on the platform; *all and *tm receive the
 * program and its times, and each job's report goes to its `alone` or its `shared`. */
static int simulate_together(struct fabric_run *r, int first, int n, int alone,
                             struct mdl_program *all, struct timing *tm, struct tps_error *err)
{
    memset(tm, 0, sizeof *tm);
    memset(all, 0, sizeof *all);
    if (mdl_program_init(all, r->f.topo.ngpus) != 0) return tps_error_oom(err);
    for (int i = first; i < first + n; i++)
        if (mdl_program_merge(all, &r->jobs[i].pj->prog, r->jobs[i].gpus) != 0)
            return tps_error_oom(err);
    int rc = pipeline_run_program(all, &r->f.topo, tm, err);
    for (int i = first; i < first + n && !rc; i++) {
        struct fabric_job_run *J = &r->jobs[i];
        struct timing own;
        if ((rc = timing_gather(tm, &J->pj->prog, J->gpus, &own)) != TPS_OK) {
            rc = tps_error_set(err, rc, r->f.path, 0, 0, "jobs",
                               "jobs[%d]: its op times could not be gathered", i);
            break;
        }
        rc = pipeline_report(J->pj, &own, alone ? &J->alone : &J->shared, err);
        timing_release(&own);
    }
    return rc;
}

int fabric_simulate(struct fabric_run *r, FILE *progress, struct tps_error *err)
{
    if (progress)
        fprintf(progress, "tpsim: simulating %d job(s) together on %d GPU(s)...\n", r->njobs,
                r->f.topo.ngpus);
    int rc = simulate_together(r, 0, r->njobs, 0, &r->all, &r->tm, err);
    for (int i = 0; i < r->njobs && !rc; i++) {
        if (progress)
            fprintf(progress, "tpsim: simulating %s alone (%d of %d)...\n", r->jobs[i].pj->scn.name,
                    i + 1, r->njobs);
        struct mdl_program one;
        struct timing tm;
        rc = simulate_together(r, i, 1, 1, &one, &tm, err);
        timing_release(&tm);
        mdl_program_release(&one);
        struct fabric_job_run *J = &r->jobs[i];
        if (!rc) J->slowdown = J->shared.iteration_s / J->alone.iteration_s;
    }
    return rc;
}

void fabric_release(struct fabric_run *r)
{
    for (int i = 0; i < r->njobs; i++) {
        report_release(&r->jobs[i].alone);
        report_release(&r->jobs[i].shared);
        pipeline_free(r->jobs[i].pj);
    }
    free(r->jobs);
    mdl_program_release(&r->all);
    timing_release(&r->tm);
    scn_fabric_release(&r->f);
    memset(r, 0, sizeof *r);
}

static double mfu_pct(const struct report *p)
{
    return p->model_flop > 0 && p->peak_flops > 0 ? p->mfu * 100 : 0;
}

void fabric_print(const struct fabric_run *r, FILE *f)
{
    fprintf(f, "scenario        %s (%s)\n", r->f.path, r->f.name);
    fprintf(f, "platform        %s\n", r->platform);
    int used = 0;
    for (int i = 0; i < r->njobs; i++)
        used += r->jobs[i].ngpus;
    fprintf(f, "jobs            %d on %d of the platform's %d GPUs, started together\n", r->njobs,
            used, r->f.topo.ngpus);
    for (int i = 0; i < r->njobs; i++) {
        const struct fabric_job_run *J = &r->jobs[i];
        const struct report_meta *m = &J->pj->meta;
        fprintf(f, "\njob %-11s GPUs %s\n", J->pj->scn.name, J->gpus_text);
        fprintf(f, "  model         %s\n", m->model);
        fprintf(f, "  device        %s\n", m->device);
        fprintf(f, "  strategy      %s\n", m->strategy);
        fprintf(f, "  simulated     %d layer(s) x %d micro-batch(es) on %d GPU(s)\n",
                J->shared.nlayers, J->shared.micro_batches, J->shared.nranks);
        if (m->hetero && m->hetero[0]) fprintf(f, "  heterogeneity %s\n", m->hetero);
        if (J->shared.has_memory && !J->shared.memory_fits)
            fprintf(f, "  memory        %.1f GB per GPU of %.1f GB usable: DOES NOT FIT\n",
                    J->shared.memory.total / 1e9,
                    (J->shared.device_mem_bytes - J->shared.reserved_bytes) / 1e9);
    }
    fprintf(f, "\n%-12s %13s %13s %9s %16s %16s %8s %8s\n", "job", "alone (ms)", "shared (ms)",
            "slowdown", "exposed alone", "exposed shared", "MFU", "MFU");
    fprintf(f, "%-12s %13s %13s %9s %16s %16s %8s %8s\n", "", "", "", "", "comm (ms)", "comm (ms)",
            "alone", "shared");
    for (int i = 0; i < r->njobs; i++) {
        const struct fabric_job_run *J = &r->jobs[i];
        fprintf(f, "%-12s %13.6f %13.6f %8.4fx %16.6f %16.6f %7.1f%% %7.1f%%\n", J->pj->scn.name,
                J->alone.iteration_s * 1e3, J->shared.iteration_s * 1e3, J->slowdown,
                J->alone.exposed_comm_s * 1e3, J->shared.exposed_comm_s * 1e3, mfu_pct(&J->alone),
                mfu_pct(&J->shared));
    }
}

int fabric_write_json(const struct fabric_run *r, const char *path, struct tps_error *err)
{
    json_t *jobs = json_array();
    for (int i = 0; jobs && i < r->njobs; i++) {
        const struct fabric_job_run *J = &r->jobs[i];
        json_t *gpus = json_array();
        for (int k = 0; gpus && k < J->ngpus; k++)
            json_array_append_new(gpus, json_integer(J->gpus[k]));
        json_array_append_new(jobs, json_pack("{s:s, s:o, s:f, s:o, s:o}", "name", J->pj->scn.name,
                                              "gpus", gpus, "slowdown", J->slowdown, "alone",
                                              report_json(&J->alone, &J->pj->meta), "shared",
                                              report_json(&J->shared, &J->pj->meta)));
    }
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:f, s:o}", "tpsim_version", "1", "scenario",
                             r->f.path, "name", r->f.name, "platform", r->platform,
                             "iteration_time_s", r->tm.end_s, "jobs", jobs);
    int rc = tps_output_check(path, err) ? TPS_EINVAL
             : root && json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) == 0
                 ? TPS_OK
                 : tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write JSON");
    json_decref(root);
    return rc;
}

int fabric_write_csv(const struct fabric_run *r, const char *path, struct tps_error *err)
{
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write CSV");
    fprintf(f, "job,gpus,alone_time_s,shared_time_s,slowdown,alone_exposed_comm_s,"
               "shared_exposed_comm_s,alone_mfu,shared_mfu\n");
    for (int i = 0; i < r->njobs; i++) {
        const struct fabric_job_run *J = &r->jobs[i];
        char gpus[sizeof J->gpus_text];
        snprintf(gpus, sizeof gpus, "%s", J->gpus_text);
        for (char *c = gpus; *c; c++)
            if (*c == ',') *c = ' ';
        char name[3 * sizeof J->pj->scn.name];
        size_t nn = 0;
        tps_csv_put(name, sizeof name, &nn, J->pj->scn.name); /* RFC 4180: quoted when needed */
        fprintf(f, "%s,%s,%.9g,%.9g,%.6f,%.9g,%.9g,%.6f,%.6f\n", name, gpus, J->alone.iteration_s,
                J->shared.iteration_s, J->slowdown, J->alone.exposed_comm_s,
                J->shared.exposed_comm_s, mfu_pct(&J->alone) / 100, mfu_pct(&J->shared) / 100);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write CSV");
    return TPS_OK;
}
