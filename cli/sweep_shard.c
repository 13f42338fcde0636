/* sweep_shard.c - a sweep across machines: `--shard I/N` (the split, core/shard.h, then one
 * shard's points), `merge DIR` (the shards' rows checked and joined in point order), `status
 * DIR` (what each shard has done) and `--slurm` (an sbatch job array of the shards, submitted
 * when asked). Each shard is an ordinary sweep of part of the points into its own CSV, so a
 * killed shard keeps its finished rows and `--resume` runs the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cliutil.h"
#include "cli/sweep_int.h"
#include "common/clock.h"
#include "common/csv.h"
#include "common/inputs.h"
#include "common/readall.h"
#include "common/ydoc.h"
#include "core/scenario.h"
#include "pipeline/pipeline.h"

#define ROW_MAX 16384 /* a row's text, as cli_sweep.c writes at most 4,096 */

/* The split's cheap part: per point whether where: keeps it and its row start; the header, the
 * identity, the --set assignments. Returns 0 or the exit status. */
static int split_rows(const struct sweep *sw, int nshards, struct shard_manifest *m)
{
    memset(m, 0, sizeof *m);
    char head[4096], line[4096];
    if (!realpath(sw->path, m->scenario)) snprintf(m->scenario, sizeof m->scenario, "%s", sw->path);
    snprintf(m->name, sizeof m->name, "%s", sw->name);
    snprintf(m->sweep_id, sizeof m->sweep_id, "%s", sw->id);
    m->npoints = sw->npoints;
    m->nshards = nshards;
    sweepcli_header(sw, head, sizeof head);
    head[strcspn(head, "\n")] = '\0';
    m->header = strdup(head);
    m->nsets = cli_sets_given();
    m->sets = calloc((size_t)m->nsets + 1, sizeof *m->sets);
    m->owner = malloc((size_t)sw->npoints * sizeof *m->owner);
    m->cost = malloc((size_t)sw->npoints * sizeof *m->cost);
    m->row = calloc((size_t)sw->npoints, sizeof *m->row);
    if (!m->header || !m->sets || !m->owner || !m->cost || !m->row) goto oom;
    for (int i = 0; i < m->nsets; i++)
        if (!(m->sets[i] = strdup(cli_set_at(i)))) goto oom;
    for (long i = 0; i < sw->npoints; i++) {
        struct tps_error err = {0};
        int keep = sweep_keep(sw, i, &err);
        if (keep < 0) return cli_report_error(&err);
        m->cost[i] = keep ? 0 : -1;
        m->owner[i] = -1;
        if (!keep) continue;
        sweepcli_row_start(sw, i, line, sizeof line);
        if (!(m->row[i] = strdup(line))) goto oom;
    }
    shard_points_hash(m->sweep_id, m->row, m->npoints, m->points_hash);
    return 0;
oom:
    fprintf(stderr, "tpsim sweep: out of memory\n");
    return CLI_EXIT_SIM;
}

/* Each kept point's predicted cost (pipeline_scenario_ops of its scenario; 0 for a point whose
 * scenario is invalid: its row is an error at once), then the assignment. */
static int split_costs(const struct sweep *sw, struct shard_manifest *m)
{
    double t0 = tps_clock_now(), last = t0;
    for (long i = 0; i < sw->npoints; i++) {
        if (!m->row[i]) continue;
        char tmp[64];
        struct scn_scenario s;
        struct tps_error e = {0};
        memset(&s, 0, sizeof s);
        int rc = sweepcli_point_file(tmp) ? -1 : sweep_write_point(sw, i, tmp, &e);
        if (!rc) rc = scn_load_in(tmp, sw->path, &s, &e);
        m->cost[i] = rc ? 0 : pipeline_scenario_ops(&s);
        scn_release(&s);
        tps_input_forget(tmp);
        unlink(tmp);
        double now = tps_clock_now();
        if (now - last > 10) {
            fprintf(stderr, "tpsim sweep: predicting the points' costs: %ld/%ld, %.0f s\n", i,
                    sw->npoints, now - t0);
            last = now;
        }
    }
    if (shard_assign(m->npoints, m->cost, m->nshards, m->owner) != 0) {
        fprintf(stderr, "tpsim sweep: out of memory\n");
        return CLI_EXIT_SIM;
    }
    return 0;
}

/* The split of sw into nshards in dir (nshards 0: the one there) into *m: the manifest's when
 * dir has one of this sweep, else made and written. Returns 0 or the exit status. */
static int split_get(const struct sweep *sw, const char *dir, int nshards, struct shard_manifest *m)
{
    struct tps_error err = {0};
    struct shard_manifest found;
    char path[1024];
    shard_manifest_path(dir, path, sizeof path);
    int have = access(path, F_OK) == 0;
    if (have && shard_manifest_load(dir, &found, &err)) {
        shard_manifest_release(&found);
        return cli_report_error(&err);
    }
    if (have && nshards == 0) nshards = found.nshards;
    int code = split_rows(sw, nshards > 0 ? nshards : 1, m);
    if (!code && have && shard_manifest_same(m, &found, path, &err)) code = cli_report_error(&err);
    if (code || have) {
        shard_manifest_release(m);
        if (!code)
            *m = found; /* its assignment, whatever this build would predict */
        else
            shard_manifest_release(&found);
        return code;
    }
    if (nshards == 0) { /* --slurm's default: a task per point to run, at most 100 */
        long kept = 0;
        for (long i = 0; i < m->npoints; i++)
            kept += m->row[i] != NULL;
        m->nshards = (int)(kept < 1 ? 1 : kept < 100 ? kept : 100);
    }
    fprintf(stderr, "tpsim sweep: splitting the points into %d shards by predicted cost\n",
            m->nshards);
    code = split_costs(sw, m);
    if (!code && shard_manifest_save(dir, m, &found, &err)) code = cli_report_error(&err);
    if (!code && found.header) { /* another shard wrote it first: take its split */
        shard_manifest_release(m);
        *m = found;
    } else {
        shard_manifest_release(&found);
    }
    return code;
}

int sweepcli_shard(const struct sweep *sw, const char *dir, int shard, int nshards, int jobs,
                   int resume)
{
    if (cli_output_ok(dir)) return CLI_EXIT_INPUT;
    struct shard_manifest m;
    int code = split_get(sw, dir, nshards, &m);
    if (!code && shard >= 0) {
        char csv[1100];
        shard_csv_path(dir, shard, m.nshards, csv, sizeof csv);
        struct sweepcli_part part = {m.owner, shard, m.nshards};
        code = sweepcli_run(sw, csv, jobs, resume, &part, 0, NULL);
    }
    shard_manifest_release(&m);
    return code;
}

/* What a shard's CSV holds. */
struct shard_state {
    int exists, running;
    long assigned, rows, ok, cut; /* cut: a last row cut short (left out) */
};

/* Reads shard s's CSV in dir: every row must be of this split (the sweep's identity, a point of
 * this shard, the point's values). Its rows go to row[point] (owned, may be NULL: counted only).
 * Returns 0, or -1 with err located at the file and line. */
static int shard_read(const struct shard_manifest *m, const char *dir, int s, char **row,
                      struct shard_state *st, struct tps_error *err)
{
    char path[1100];
    shard_csv_path(dir, s, m->nshards, path, sizeof path);
    memset(st, 0, sizeof *st);
    for (long i = 0; i < m->npoints; i++)
        st->assigned += m->owner[i] == s;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot read: %s", strerror(errno));
    }
    st->exists = 1;
    st->running = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    size_t len = 0;
    char *buf = tps_read_all(fd, (size_t)1 << 40, &len);
    close(fd);
    char *store = malloc(ROW_MAX), *f[64];
    int rc = 0;
    if (!buf || !store) {
        rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot read: %s",
                           strerror(errno ? errno : ENOMEM));
        goto done;
    }
    size_t hl = strlen(m->header);
    if (len > 0 && (len <= hl || strncmp(buf, m->header, hl) || buf[hl] != '\n')) {
        rc = tps_error_set(err, TPS_EINVAL, path, 1, 1, NULL,
                           "not a shard of this sweep: its header is not the sweep's (%s)",
                           m->header);
        goto done;
    }
    if (len == 0) goto done; /* created, no header yet */
    /* the header's fields: the status column, and how many a row has */
    const char *hend = buf + hl + 1;
    int nf = tps_csv_record(buf, hend, store, ROW_MAX, f, 64, &hend);
    int status = nf > 0 ? tps_csv_column(f, nf, "status") : -1;
    const char *p = buf + hl + 1, *end = buf + len, *next;
    int line = 2, n;
    while (p < end && (n = tps_csv_record(p, end, store, ROW_MAX, f, 64, &next)) != 0) {
        if (n < 0) { /* a row cut short by a kill: not a row */
            st->cut = 1;
            break;
        }
        char *e;
        long i = strtol(f[0], &e, 10);
        size_t plen = i >= 0 && i < m->npoints && m->row[i] ? strlen(m->row[i]) : 0;
        if (n != nf || strcmp(f[n - 1], m->sweep_id))
            rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "sweep_id",
                               "a row of another sweep (%s; this one is %s)",
                               n == nf ? f[n - 1] : "other columns", m->sweep_id);
        else if (*e || e == f[0] || i < 0 || i >= m->npoints || m->owner[i] < 0)
            rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "point",
                               "'%s' is not a point this sweep runs", f[0]);
        else if (m->owner[i] != s)
            rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "point",
                               "point %ld is shard %d's in this split, not shard %d's: a shard "
                               "of another split",
                               i, m->owner[i], s);
        else if (strncmp(p, m->row[i], plen) || p[plen] != ',')
            rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "point",
                               "point %ld's values are not the sweep's (%s): a stale row", i,
                               m->row[i]);
        else if (row && row[i])
            rc = tps_error_set(err, TPS_EINVAL, path, line, 1, "point",
                               "point %ld has a second row", i);
        if (rc) break;
        if (row && !(row[i] = strndup(p, (size_t)(next - p)))) {
            rc = tps_error_oom(err);
            break;
        }
        st->rows++;
        st->ok += status >= 0 && !strcmp(f[status], "ok");
        for (const char *q = p; q < next; q++)
            line += *q == '\n';
        p = next;
    }
done:
    free(buf);
    free(store);
    return rc;
}

static const char *state_text(const struct shard_state *st)
{
    return st->running                  ? "running"
           : st->rows >= st->assigned   ? "done"
           : st->exists && st->rows > 0 ? "partial"
           : st->exists                 ? "started"
                                        : "not started";
}

/* The shards' rows into row[] (when not NULL) and their states into st[m->nshards]. Returns 0,
 * or the exit status after a located error. */
static int shards_read(const struct shard_manifest *m, const char *dir, char **row,
                       struct shard_state *st)
{
    for (int s = 0; s < m->nshards; s++) {
        struct tps_error err = {0};
        if (shard_read(m, dir, s, row, &st[s], &err)) return cli_report_error(&err);
    }
    return 0;
}

/* Whether a shard has points left to run and no sweep running them: what a resume reruns. */
static int unfinished(const struct shard_state *st)
{
    return !st->running && st->rows < st->assigned;
}

/* "0-3,5,8-9": the unfinished shards (st NULL: all) in SLURM's --array form into out; returns
 * how many, or -1 when out is too short. */
static int array_list(const struct shard_manifest *m, const struct shard_state *st, char *out,
                      size_t len)
{
    size_t n = 0;
    int count = 0;
    out[0] = '\0';
    for (int s = 0; s < m->nshards; s++) {
        if (st && !unfinished(&st[s])) continue;
        int e = s;
        while (e + 1 < m->nshards && (!st || unfinished(&st[e + 1])))
            e++;
        n += (size_t)snprintf(out + n, n < len ? len - n : 0, e > s ? "%s%d-%d" : "%s%d",
                              count ? "," : "", s, e);
        count += e - s + 1;
        s = e;
    }
    return n < len ? count : -1;
}

/* Writes v single-quoted for sh to f. */
static void sh_quote(FILE *f, const char *v)
{
    fputc('\'', f);
    for (; *v; v++)
        if (*v == '\'')
            fputs("'\\''", f);
        else
            fputc(*v, f);
    fputc('\'', f);
}

int sweepcli_slurm(const struct sweep *sw, const char *dir, int nshards, int jobs, int resume,
                   const char *sbatch_args, int submit)
{
    if (sbatch_args && strpbrk(sbatch_args, "\n\r"))
        return cli_usage_error("sweep", "%s", "--sbatch-args: one line of sbatch options");
    if (cli_output_ok(dir)) return CLI_EXIT_INPUT;
    struct shard_manifest m;
    int code = split_get(sw, dir, nshards, &m);
    if (code) {
        shard_manifest_release(&m);
        return code;
    }
    struct shard_state *st = resume ? calloc((size_t)m.nshards, sizeof *st) : NULL;
    char *list = malloc(8 * (size_t)m.nshards + 16), adir[PATH_MAX], exe[PATH_MAX],
         script[PATH_MAX + 32];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (!list || (resume && !st) || el <= 0 || !realpath(dir, adir)) {
        fprintf(stderr, "tpsim sweep: cannot set up the SLURM array in %s\n", dir);
        code = CLI_EXIT_SIM;
        goto out;
    }
    exe[el] = '\0';
    if (resume && (code = shards_read(&m, dir, NULL, st))) goto out;
    int ntasks = array_list(&m, st, list, 8 * (size_t)m.nshards + 16);
    if (ntasks == 0) {
        fprintf(stderr,
                "tpsim sweep: every shard in %s is done or running: nothing to submit "
                "(tpsim sweep status %s)\n",
                dir, dir);
        goto out;
    }
    char logs[PATH_MAX + 8];
    snprintf(logs, sizeof logs, "%s/logs", adir);
    snprintf(script, sizeof script, "%s/sweep.sbatch", adir);
    FILE *f = mkdir(logs, 0755) == 0 || errno == EEXIST ? fopen(script, "w") : NULL;
    if (!f) {
        fprintf(stderr, "tpsim sweep: cannot write %s: %s\n", script, strerror(errno));
        code = CLI_EXIT_INPUT;
        goto out;
    }
    fprintf(f,
            "#!/bin/sh\n"
            "# written by tpsim sweep --slurm: one task per shard of the sweep of %s\n"
            "# (%d shards, the split in sweep.json; the task id is the shard). Rerun\n"
            "# `tpsim sweep SCENARIO --slurm --resume -o DIR` to submit the unfinished ones.\n"
            "#SBATCH --job-name=tpsim-%s\n"
            "#SBATCH --array=%s\n"
            "#SBATCH --ntasks=1\n"
            "#SBATCH --output=%s/shard-%%a.log\n"
            "#SBATCH --open-mode=append\n"
            "exec ",
            m.scenario, m.nshards, m.name, list, logs);
    sh_quote(f, exe);
    fputs(" sweep ", f);
    sh_quote(f, m.scenario);
    fprintf(f, " --shard \"$SLURM_ARRAY_TASK_ID/%d\" -o ", m.nshards);
    sh_quote(f, adir);
    if (jobs > 0)
        fprintf(f, " --resume -j %d", jobs);
    else
        fputs(" --resume -j \"${SLURM_CPUS_PER_TASK:-1}\"", f);
    for (int i = 0; i < m.nsets; i++) {
        fputs(" --set ", f);
        sh_quote(f, m.sets[i]);
    }
    fputc('\n', f);
    if (fclose(f) != 0) {
        fprintf(stderr, "tpsim sweep: cannot write %s\n", script);
        code = CLI_EXIT_INPUT;
        goto out;
    }
    chmod(script, 0755);
    fprintf(stderr, "tpsim sweep: %s: a SLURM array of %d task(s), shards %s of %d\n", script,
            ntasks, list, m.nshards);
    if (!submit) {
        printf("sbatch %s%s%s\n", sbatch_args ? sbatch_args : "", sbatch_args ? " " : "", script);
        goto out;
    }
    /* sh splits the user's options as their shell would */
    char cmd[PATH_MAX + 4200];
    snprintf(cmd, sizeof cmd, "sbatch --parsable %s '%s'", sbatch_args ? sbatch_args : "", script);
    if (strchr(script, '\'')) {
        fprintf(stderr, "tpsim sweep: %s: a quote in the path; submit it by hand\n", script);
        code = CLI_EXIT_INPUT;
        goto out;
    }
    FILE *p = popen(cmd, "r");
    char id[256] = "";
    if (p && !fgets(id, sizeof id, p)) id[0] = '\0';
    int st_sb = p ? pclose(p) : -1;
    id[strcspn(id, ";\n")] = '\0';
    if (st_sb != 0 || !id[0]) {
        fprintf(stderr,
                "tpsim sweep: sbatch failed (%s): is SLURM's client installed and a controller "
                "reachable? The script stays in %s\n",
                cmd, script);
        code = CLI_EXIT_SIM;
        goto out;
    }
    char jl[PATH_MAX + 16];
    snprintf(jl, sizeof jl, "%s/slurm-jobs.txt", adir);
    FILE *j = fopen(jl, "a");
    if (j) {
        fprintf(j, "%s %s\n", id, list);
        fclose(j);
    }
    printf("%s\n", id);
    fprintf(stderr, "tpsim sweep: submitted SLURM job %s; tpsim sweep status %s\n", id, dir);
out:
    free(st);
    free(list);
    shard_manifest_release(&m);
    return code;
}

/* Loads the sweep the manifest names (with its --set assignments) for a rerun of its shards. */
static int sweep_of(const struct shard_manifest *m, struct sweep *sw)
{
    struct tps_error err = {0};
    for (int i = 0; i < m->nsets; i++)
        if (tps_ydoc_override(m->scenario, m->sets[i], &err)) return cli_report_error(&err);
    if (sweep_load(m->scenario, sw, &err)) return cli_report_error(&err);
    if (strcmp(sw->id, m->sweep_id)) {
        fprintf(stderr,
                "tpsim sweep: %s changed since the shards were split (sweep id %s, the shards "
                "are %s): cannot run their missing points\n",
                m->scenario, sw->id, m->sweep_id);
        sweep_release(sw);
        return CLI_EXIT_INPUT;
    }
    return 0;
}

/* Loads dir's manifest into *m (released here on failure); 0, or the exit status after the
 * error. */
static int manifest_open(const char *dir, struct shard_manifest *m)
{
    struct tps_error err = {0};
    if (!shard_manifest_load(dir, m, &err)) return 0;
    shard_manifest_release(m);
    return cli_report_error(&err);
}

struct merge_args {
    const char *out;
    long jobs;
    int resume;
};

static int merge_option(int opt, const char *v, void *ctx)
{
    struct merge_args *a = ctx;
    if (opt == 'o') a->out = v;
    if (opt == 'r') a->resume = 1;
    if (opt == 'j') return cli_parse_count("sweep merge", "-j", v, 1, 1024, &a->jobs);
    return 0;
}

static const char merge_help[] =
    "usage: tpsim sweep merge DIR [-o FILE.csv] [--resume] [-j N]\n"
    "\n"
    "Joins the rows of the shards in DIR (tpsim sweep SCENARIO --shard I/N -o DIR) in point\n"
    "order into one CSV, byte for byte what `tpsim sweep SCENARIO` writes on one machine. Every\n"
    "row is checked against DIR/sweep.json: a row of another sweep, of another split or with\n"
    "other values (a stale shard) is refused with its file and line (exit 2). Points without a\n"
    "row (a shard killed, failed or not run) are listed and the exit status is 1; the CSV then\n"
    "holds the rows there are.\n"
    "\n"
    "options:\n"
    "  -o FILE     the merged CSV (default DIR/merged.csv)\n"
    "  --resume    first run the missing points here, shard by shard (not those of a shard\n"
    "              running now)\n"
    "  -j N        worker processes for --resume (default: the number of CPUs)\n"
    "  -h, --help  show this help\n";

int sweepcli_merge(int argc, char **argv)
{
    static const struct option longs[] = {{"resume", no_argument, NULL, 'r'}, {0}};
    struct merge_args a = {.jobs = (long)sysconf(_SC_NPROCESSORS_ONLN)};
    const char *dir = NULL;
    int npos, prc = cli_parse(argc, argv, 1, "sweep merge", merge_help, "o:j:", longs, merge_option,
                              &a, &dir, 1, &npos);
    if (prc) return prc == CLI_HELP_SHOWN ? 0 : prc;
    if (!dir) return cli_usage_error("sweep merge", "%s", "missing DIR");
    struct shard_manifest m;
    int opened = manifest_open(dir, &m);
    if (opened) return opened;
    char outbuf[1100];
    if (!a.out) snprintf(outbuf, sizeof outbuf, "%s/merged.csv", dir);
    const char *out = a.out ? a.out : outbuf;
    struct shard_state *st = calloc((size_t)m.nshards, sizeof *st);
    char **row = calloc((size_t)m.npoints, sizeof *row);
    int code = !st || !row ? CLI_EXIT_SIM : cli_output_ok(out);
    if (!code) code = shards_read(&m, dir, NULL, st);
    if (!code && a.resume) {
        struct sweep sw;
        int todo = 0;
        for (int s = 0; s < m.nshards; s++)
            todo += unfinished(&st[s]);
        if (todo && !(code = sweep_of(&m, &sw))) {
            for (int s = 0; s < m.nshards && !code; s++) {
                if (!unfinished(&st[s])) continue;
                struct sweepcli_part part = {m.owner, s, m.nshards};
                char csv[1100];
                shard_csv_path(dir, s, m.nshards, csv, sizeof csv);
                code = sweepcli_run(&sw, csv, (int)a.jobs, 1, &part, 0, NULL);
                if (code == CLI_EXIT_INPUT) code = 0; /* every point of the shard an error row */
            }
            sweep_release(&sw);
        }
    }
    if (!code) code = shards_read(&m, dir, row, st);
    long missing = 0, rows = 0, ok = 0;
    int running = 0;
    for (int s = 0; !code && s < m.nshards; s++) {
        rows += st[s].rows;
        ok += st[s].ok;
        running += st[s].running;
    }
    if (!code) {
        char tmp[1200];
        snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", out);
        int fd = mkstemp(tmp);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int bad = !f || fprintf(f, "%s\n", m.header) < 0;
        for (long i = 0; !bad && i < m.npoints; i++)
            if (row[i]) bad = fputs(row[i], f) == EOF;
        if (!f && fd >= 0) close(fd);
        if ((f && fclose(f) != 0) || bad || chmod(tmp, 0644) != 0 || rename(tmp, out) != 0) {
            if (fd >= 0) unlink(tmp);
            fprintf(stderr, "tpsim sweep merge: cannot write %s: %s\n", out, strerror(errno));
            code = CLI_EXIT_INPUT;
        }
    }
    if (!code) {
        fprintf(stderr,
                "tpsim sweep merge: %ld rows from %d shards into %s, %ld ok, %ld with "
                "errors\n",
                rows, m.nshards, out, ok, rows - ok);
        int shown = 0;
        for (long i = 0; i < m.npoints; i++) {
            if (m.owner[i] < 0 || row[i]) continue;
            if (missing++ == 0) fprintf(stderr, "tpsim sweep merge: points without a row:");
            if (shown++ < 20) fprintf(stderr, " %ld (shard %d)", i, m.owner[i]);
        }
        if (missing) {
            fprintf(stderr,
                    "%s\ntpsim sweep merge: %ld point(s) missing%s: rerun them with "
                    "`tpsim sweep merge %s --resume`, or on SLURM `tpsim sweep %s "
                    "--slurm --resume -o %s --submit`\n",
                    missing > 20 ? " ..." : "", missing,
                    running ? " (some shards are still running)" : "", dir, m.scenario, dir);
            code = CLI_EXIT_SIM;
        }
    }
    for (long i = 0; row && i < m.npoints; i++)
        free(row[i]);
    free(row);
    free(st);
    shard_manifest_release(&m);
    return code;
}

static const char status_help[] =
    "usage: tpsim sweep status DIR\n"
    "\n"
    "What each shard in DIR has done: its points, the rows its CSV holds, and whether it is\n"
    "done, running (its CSV locked by a sweep), partial (killed, or failed, before its last\n"
    "point) or not started; then the shards to rerun in SLURM's --array form. Exit status 0 when\n"
    "every shard is done, 1 otherwise, 2 when a shard holds rows of another sweep.\n";

int sweepcli_status(int argc, char **argv)
{
    const char *dir = NULL;
    int npos, prc = cli_parse(argc, argv, 1, "sweep status", status_help, "", NULL, NULL, NULL,
                              &dir, 1, &npos);
    if (prc) return prc == CLI_HELP_SHOWN ? 0 : prc;
    if (!dir) return cli_usage_error("sweep status", "%s", "missing DIR");
    struct shard_manifest m;
    int opened = manifest_open(dir, &m);
    if (opened) return opened;
    struct shard_state *st = calloc((size_t)m.nshards, sizeof *st);
    char *list = malloc(8 * (size_t)m.nshards + 16);
    int code = !st || !list ? CLI_EXIT_SIM : shards_read(&m, dir, NULL, st);
    if (!code) {
        long points = 0, rows = 0, ok = 0;
        int done = 0, running = 0;
        printf("sweep %s (%s), %d shards, split in %s/sweep.json\n", m.name, m.scenario, m.nshards,
               dir);
        printf("%-7s %8s %8s %8s  %s\n", "shard", "points", "rows", "ok", "state");
        for (int s = 0; s < m.nshards; s++) {
            printf("%-7d %8ld %8ld %8ld  %s%s\n", s, st[s].assigned, st[s].rows, st[s].ok,
                   state_text(&st[s]), st[s].cut ? " (a cut last row, left out)" : "");
            points += st[s].assigned;
            rows += st[s].rows;
            ok += st[s].ok;
            done += !st[s].running && st[s].rows >= st[s].assigned;
            running += st[s].running;
        }
        printf("done %d of %d shards (%d running), %ld of %ld points (%ld ok)\n", done, m.nshards,
               running, rows, points, ok);
        if (array_list(&m, st, list, 8 * (size_t)m.nshards + 16) > 0)
            printf("to rerun: %s\n", list);
        code = done == m.nshards ? 0 : CLI_EXIT_SIM;
    }
    free(list);
    free(st);
    shard_manifest_release(&m);
    return code;
}
