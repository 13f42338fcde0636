/* cli_sweep.c - `tpsim sweep SCENARIO`: every point of the scenario's sweep section, simulated
 * in parallel worker processes, each finished point appended to a CSV at once (one write of one
 * line, so a killed sweep keeps whole rows; RFC 4180 fields), the rows put in point order at the
 * end, `--resume` checking that the CSV is this sweep's and running only the missing points, and
 * `--plot` drawing model TFLOP/s per GPU and iteration time against the first swept key.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/csv.h"
#include "cli/sweep_plot.h"
#include "core/scenario.h"
#include "common/gnuplot.h"
#include "common/readall.h"
#include "models/strategy.h"
#include "cli/cliutil.h"
#include "common/clock.h"
#include "pipeline/pipeline.h"
#include "core/pool.h"
#include "core/sweep.h"
#include "common/inputs.h"
#include "cli/sweep_int.h"

static const char sweep_help[] =
    "usage: tpsim sweep SCENARIO [-j N] [-o FILE.csv] [--resume] [--plot]\n"
    "       tpsim sweep SCENARIO --shard I/N [-o DIR] [-j N] [--resume]\n"
    "       tpsim sweep SCENARIO --slurm [-o DIR] [--array-size N] [--sbatch-args \"...\"]\n"
    "                                    [--submit] [--resume] [-j N]\n"
    "       tpsim sweep merge DIR [-o FILE.csv] [--resume] [-j N]\n"
    "       tpsim sweep status DIR\n"
    "\n"
    "Simulates every point of the scenario's sweep: section (the cartesian product of its keys'\n"
    "values, docs/sweeps.md) in N worker processes, with a progress bar on stderr. Each finished\n"
    "point is appended to the CSV at once, so a killed sweep keeps every point it finished; at\n"
    "the end the rows are put in point order. A point whose scenario is invalid gets a row with\n"
    "status 'error' and its message. Each row carries the sweep's identity (a hash of the\n"
    "scenario outside its sweep: section), so --resume refuses a CSV of another sweep (exit 2)\n"
    "and reruns points whose values changed. Exit status 2 when every point failed.\n"
    "\n"
    "options:\n"
    "  -j N        worker processes (default: the number of CPUs)\n"
    "  -o FILE     CSV to write (default: SCENARIO with .csv instead of .yaml)\n"
    "  --resume    keep the CSV's rows of this sweep and run only the missing points\n"
    "  --plot      draw FILE.png and FILE.svg (gnuplot; FILE.gp kept): a metric against a swept\n"
    "              key, a line per group, a panel per value of a facet key (docs/sweeps.md)\n"
    "  --y COLUMN  the metric: a result column (default model_tflops_per_gpu; iteration_s, mfu,\n"
    "              tokens_per_s_per_gpu, time_to_train_s, cost, memory_gb_per_gpu, ...)\n"
    "  --x KEY     the swept column along x (default the first)\n"
    "  --group KEY one line per value of KEY (default: per combination of the other columns)\n"
    "  --facet KEY one panel per value of KEY (default: when more than 8 lines, the column with\n"
    "              the most values)\n"
    "  --log x|y|xy  logarithmic axes (each of --y, --x, --group, --facet, --log implies --plot)\n"
    "  --set KEY=VALUE  set a scenario key of every point (strategy.tp=8); repeatable\n"
    "\n"
    "Across machines (docs/sweeps.md):\n"
    "  --shard I/N runs shard I (from 0) of N: the points split by predicted cost (the ops each\n"
    "              point's program holds), the split kept in DIR/sweep.json (DIR by default:\n"
    "              SCENARIO with .shards for .yaml), the rows in DIR/shard-I-of-N.csv\n"
    "  --slurm     writes DIR/sweep.sbatch, a SLURM job array of one task per shard (task id =\n"
    "              shard, -j from --cpus-per-task, log DIR/logs/shard-I.log); with --resume, only\n"
    "              the shards not finished and not running\n"
    "  --array-size N  shards of --slurm (default: the points to run, at most 100)\n"
    "  --sbatch-args \"...\"  options for sbatch (--partition=..., --time=...; split as sh does)\n"
    "  --submit    submits the script with sbatch\n"
    "  merge DIR   joins the shards' rows in point order into one CSV (default DIR/merged.csv),\n"
    "              byte for byte what one machine's sweep writes; refuses rows of another sweep\n"
    "              or split; lists missing points (exit 1); --resume runs them here first\n"
    "  status DIR  each shard: points, rows, done, running or not started (exit 1 until done)\n"
    "  -h, --help  show this help\n";

/* The sweep's CSV columns after the point and the keys. */
static const char result_cols[] =
    "status,iteration_s,model_tflops_per_gpu,mfu,hardware_tflops_per_gpu,exposed_comm_s,"
    "compute_s,comm_s,memory_gb_per_gpu,memory_fits,gpus,tp_exposed_s,cp_exposed_s,"
    "ep_exposed_s,dp_exposed_s,host_wait_s,pipeline_bubble_s,tokens_per_s,tokens_per_s_per_gpu,"
    "time_to_train_s,gpu_hours,energy_kwh,cost,message,sweep_id";
#define NRESULT 25 /* fields in result_cols */

/* Appends ",field" to line. */
static void put(char *line, size_t len, size_t *n, const char *v)
{
    if (*n + 1 < len) {
        line[(*n)++] = ',';
        line[*n] = '\0';
    }
    tps_csv_put(line, len, n, v);
}

/* The header line (with its LF). */
void sweepcli_header(const struct sweep *sw, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "point");
    for (int k = 0; k < sw->nkeys; k++)
        put(out, len, &n, sw->keys[k]);
    snprintf(out + n, len - n, ",%s\n", result_cols);
}

/* The fields of a point that failed: status error, the message (its field and text: the point's
 * own file is temporary), up to the sweep id. */
static void error_fields(const struct tps_error *err, char *line, size_t len, size_t *n)
{
    char msg[700];
    snprintf(msg, sizeof msg, "%s%s%s", err->field[0] ? err->field : "", err->field[0] ? ": " : "",
             err->msg);
    *n += (size_t)snprintf(line + *n, len - *n, ",error,,,,,,,,,,,,,,,,,,,,,,,");
    tps_csv_put(line, len, n, msg);
}

/* Point i's number and values (the start of its row). */
size_t sweepcli_row_start(const struct sweep *sw, long i, char *line, size_t len)
{
    char field[512];
    size_t n = (size_t)snprintf(line, len, "%ld", i);
    for (int k = 0; k < sw->nkeys; k++) {
        sweep_value_text(sw, k, sweep_index(sw, i, k), field, sizeof field);
        put(line, len, &n, field);
    }
    return n;
}

/* A temporary file name for a point's scenario into tmp (64 bytes); 0, or -1. */
int sweepcli_point_file(char *tmp)
{
    const char *tdir = getenv("TMPDIR");
    snprintf(tmp, 64, "%s/tpsim-point-XXXXXX", tdir && strlen(tdir) < 40 ? tdir : "/tmp");
    int tfd = mkstemp(tmp);
    if (tfd < 0) return -1;
    close(tfd);
    return 0;
}

/* Runs point i in this (child) process and writes its CSV row to fd. */
static _Noreturn void run_point(const struct sweep *sw, long i, int fd)
{
    char tmp[64], line[4096];
    int tfd = sweepcli_point_file(tmp);
    struct tps_error err = {0};
    struct pipeline_job *j = pipeline_job_new();
    int rc = tfd < 0 ? tps_error_set(&err, TPS_EIO, NULL, 0, 0, NULL, "no temporary file")
             : !j    ? tps_error_oom(&err)
                     : sweep_write_point(sw, i, tmp, &err);
    if (!rc) rc = pipeline_open_scenario(tmp, sw->path, j, &err);
    tps_input_forget(tmp);
    unlink(tmp); /* loaded: a killed worker leaves no file behind */
    struct report r = {0};
    if (!rc) rc = pipeline_simulate(j, NULL, &r, &err);
    size_t n = sweepcli_row_start(sw, i, line, sizeof line);
    if (!rc) {
        n += (size_t)snprintf(
            line + n, sizeof line - n, ",ok,%.9g,%.6g,%.6g,%.6g,%.9g,%.9g,%.9g,%.4g,%s,",
            r.iteration_s, r.model_tflops_per_gpu, r.mfu, r.hardware_tflops_per_gpu,
            r.exposed_comm_s, r.compute_s, r.comm_s, pipeline_job_memory(j)->total / 1e9,
            r.memory_fits ? "true" : "false");
        /* the GPUs; the breakdown (each dimension's exposed collectives, an instant counted once,
         * the host waits, a job's bubble); a job's answers (empty where unknown) */
        const struct report_breakdown *b = &r.breakdown;
        const struct report_training *t = &r.training;
        double v[] = {b->comm_s[MDL_DIM_TP],
                      b->comm_s[MDL_DIM_CP],
                      b->comm_s[MDL_DIM_EP],
                      b->comm_s[MDL_DIM_DP],
                      b->host_wait_s,
                      r.job ? b->rest_s : -1,
                      t->known ? t->tokens_per_s : -1,
                      t->known ? t->tokens_per_s_per_gpu : -1,
                      t->time_to_train_s > 0 ? t->time_to_train_s : -1,
                      t->gpu_hours > 0 ? t->gpu_hours : -1,
                      t->energy_kwh > 0 ? t->energy_kwh : -1,
                      t->cost > 0 ? t->cost : -1};
        n += (size_t)snprintf(line + n, sizeof line - n, "%d,", r.nranks);
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            n += (size_t)snprintf(line + n, sizeof line - n, v[k] >= 0 ? "%.9g," : ",", v[k]);
    } else {
        error_fields(&err, line, sizeof line, &n);
    }
    snprintf(line + n, sizeof line - n, ",%s\n", sw->id);
    report_release(&r);
    pipeline_free(j);
    unlink(tmp);
    ssize_t w = write(fd, line, strlen(line));
    _exit(w != (ssize_t)strlen(line) ? 3 : rc ? POOL_ITEM_ERROR : 0);
}

/* The rows of a sweep CSV, by point. */
struct rows {
    long npoints;
    char **line;    /* owned; line[i] is point i's row (with its LF), or NULL */
    char *ok;       /* owned; ok[i]: point i's row has status ok */
    long stale;     /* rows whose values are no longer in the sweep */
    long nok, nerr; /* rows by status, counted by rows_write */
};

static void rows_release(struct rows *R)
{
    for (long i = 0; R->line && i < R->npoints; i++)
        free(R->line[i]);
    free(R->line);
    free(R->ok);
    R->line = NULL;
    R->ok = NULL;
}

/* Room for every point's row (none yet). */
static int rows_alloc(struct rows *R, long npoints)
{
    memset(R, 0, sizeof *R);
    R->npoints = npoints;
    R->line = calloc((size_t)npoints + 1, sizeof *R->line);
    R->ok = calloc((size_t)npoints + 1, 1);
    return R->line && R->ok ? 0 : -1;
}

/* The point whose values are the row's key fields f[1..nkeys], or -1. */
static long point_of(const struct sweep *sw, char **f)
{
    long point = 0;
    for (int k = 0; k < sw->nkeys; k++) {
        int found = -1;
        for (int j = 0; j < sw->nvals[k] && found < 0; j++) {
            char v[512];
            sweep_value_text(sw, k, j, v, sizeof v);
            if (!strcmp(v, f[k + 1])) found = j;
        }
        if (found < 0) return -1;
        point = point * sw->nvals[k] + found;
    }
    return point;
}

/* The whole file at fd, from its start. */
static char *slurp(int fd, size_t *len)
{
    return lseek(fd, 0, SEEK_SET) < 0 ? NULL : tps_read_all(fd, (size_t)1 << 40, len);
}

/* Reads the CSV at fd into R, checking that it belongs to this sweep: the same header and, on
 * every row, the same sweep identity. A cut last record is dropped. Returns 0, or exit status 2
 * with a message printed. */
static int rows_read(const struct sweep *sw, const char *csv, int fd, struct rows *R)
{
    size_t len = 0;
    char *buf = rows_alloc(R, sw->npoints) == 0 ? slurp(fd, &len) : NULL;
    char head[4096], *store = malloc(8192), *f[SWEEP_MAX_KEYS + NRESULT + 2];
    if (!buf || !store) {
        fprintf(stderr, "tpsim sweep: cannot read %s: %s\n", csv, strerror(errno ? errno : ENOMEM));
        free(buf);
        free(store);
        return CLI_EXIT_INPUT;
    }
    sweepcli_header(sw, head, sizeof head);
    int code = 0;
    const char *p = buf, *end = buf + len, *next;
    if (len > 0 && (len < strlen(head) || strncmp(buf, head, strlen(head)))) {
        const char *nl = memchr(buf, '\n', len);
        fprintf(stderr,
                "tpsim sweep: %s was not written by this sweep: its header is\n  %.*s\n"
                "but this sweep's is\n  %s"
                "Give another -o FILE, or run without --resume to overwrite it.\n",
                csv, (int)(nl ? nl - buf : (long)(len < 300 ? len : 300)), buf, head);
        code = CLI_EXIT_INPUT;
    }
    if (len > 0) p += strlen(head);
    int nf;
    while (!code &&
           (nf = tps_csv_record(p, end, store, 8192, f, SWEEP_MAX_KEYS + NRESULT + 2, &next)) > 0) {
        const char *row = p;
        p = next;
        if (nf != 1 + sw->nkeys + NRESULT || strcmp(f[nf - 1], sw->id)) {
            fprintf(stderr,
                    "tpsim sweep: %s holds rows of another sweep definition (the scenario "
                    "outside its sweep: section changed since they ran, or they come from "
                    "another scenario). Give another -o FILE, or run without --resume to start "
                    "over.\n",
                    csv);
            code = CLI_EXIT_INPUT;
            break;
        }
        long i = point_of(sw, f);
        if (i < 0) {
            R->stale++;
            continue;
        }
        /* the row again, with its point index as it is now */
        char *nl = memchr(row, ',', (size_t)(next - row));
        size_t rest = (size_t)(next - nl);
        char idx[32];
        int il = snprintf(idx, sizeof idx, "%ld", i);
        char *line = malloc((size_t)il + rest + 1);
        if (!line) {
            code = CLI_EXIT_SIM;
            break;
        }
        memcpy(line, idx, (size_t)il);
        memcpy(line + il, nl, rest);
        line[(size_t)il + rest] = '\0';
        free(R->line[i]);
        R->line[i] = line;
        R->ok[i] = !strcmp(f[1 + sw->nkeys], "ok");
    }
    free(buf);
    free(store);
    if (code) rows_release(R);
    return code;
}

/* Writes header and rows in point order to a new file beside csv, locks it, and renames it over
 * csv. Returns the new file's descriptor (open for appending), or -1. */
static int rows_write(const struct sweep *sw, const char *csv, struct rows *R)
{
    char tmp[700], head[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", csv);
    int fd = mkstemp(tmp);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX) != 0 || fchmod(fd, 0644) != 0) goto fail;
    sweepcli_header(sw, head, sizeof head);
    size_t hl = strlen(head);
    if (write(fd, head, hl) != (ssize_t)hl) goto fail;
    R->nok = R->nerr = 0;
    for (long i = 0; i < R->npoints; i++) {
        if (!R->line[i]) continue;
        size_t l = strlen(R->line[i]);
        if (write(fd, R->line[i], l) != (ssize_t)l) goto fail;
        R->nok += R->ok[i];
        R->nerr += !R->ok[i];
    }
    /* workers append to this file through fd; it stays locked while the sweep runs */
    if (fcntl(fd, F_SETFL, O_APPEND) != 0 || rename(tmp, csv) != 0) goto fail;
    return fd;
fail:
    unlink(tmp);
    close(fd);
    return -1;
}

/* A bar redrawn in place on a terminal; on a log file or pipe, a line at most every 10 s and at
 * the end. */
static void progress(long done, long total, long failed, double t0)
{
    static double last = -1e9;
    double el = tps_clock_now() - t0;
    int tty = isatty(2);
    if (!tty && done < total && el - last < 10) return;
    last = el;
    int w = 30, fill = total ? (int)(w * done / total) : w;
    fprintf(stderr, "%s[%.*s%*s] %ld/%ld points, %ld failed, %.0f s", tty ? "\r" : "", fill,
            "==============================", w - fill, "", done, total, failed, el);
    if (done && done < total) fprintf(stderr, ", about %.0f s left", el / done * (total - done));
    fprintf(stderr, tty ? "   " : "\n");
}

/* Writes the rows (R, in point order) into `out`, header first, grouped by curve: ordered by the
 * other columns' values, then by column x's. */
static int sort_rows(const struct sweep *sw, const struct rows *R, int x, const char *out)
{
    long nx = sw->nvals[x], inner = 1; /* points between two values of x */
    for (int k = x + 1; k < sw->nkeys; k++)
        inner *= sw->nvals[k];
    FILE *o = cli_output_ok(out) ? NULL : fopen(out, "w");
    if (!o) return -1;
    char head[4096];
    sweepcli_header(sw, head, sizeof head);
    fputs(head, o);
    for (long pos = 0; pos < sw->npoints; pos++) {
        /* pos: the other columns in mixed radix (slow), then x (fast) */
        long xi = pos % nx, rest = pos / nx, lo = rest % inner, hi = rest / inner;
        long i = (hi * nx + xi) * inner + lo;
        if (R->line[i]) fputs(R->line[i], o);
    }
    return fclose(o) != 0 ? -1 : 0;
}

/* Draws the plot of the rows (R) beside csv: the rows ordered by curve into STEM.plot.csv,
 * then cli/sweep_plot.c's script. */
static void plot(const struct sweep *sw, const struct rows *R, const char *csv,
                 const struct sweep_plot_opts *po)
{
    char base[600], data[700];
    snprintf(base, sizeof base, "%.*s",
             (int)(strlen(csv) > 4 && !strcmp(csv + strlen(csv) - 4, ".csv") ? strlen(csv) - 4
                                                                             : strlen(csv)),
             csv);
    snprintf(data, sizeof data, "%s.plot.csv", base);
    if (sort_rows(sw, R, sweep_plot_x(sw, po), data) != 0) return;
    int drawn = sweep_plot_draw(sw, po, result_cols, data, base);
    if (drawn < 0) return; /* no script: nothing to say beyond the CSV */
    if (drawn == 0)
        fprintf(stderr,
                "tpsim sweep: gnuplot failed or is missing (apt-get install gnuplot-nox); "
                "script kept in %s.gp\n",
                base);
    else
        fprintf(stderr, "tpsim sweep: plots in %s.png and %s.svg\n", base, base);
}

/* What the pool's callbacks need. */
struct point_ctx {
    const struct sweep *sw;
    const struct rows *R;
    const char *state; /* per point: POINT_RUN, POINT_LEFT_OUT (where:), POINT_CANNOT (checked),
                          POINT_OTHER (another shard's) */
    int fd;            /* the CSV, rows appended */
    double t0;
};

enum { POINT_RUN, POINT_LEFT_OUT, POINT_CANNOT, POINT_OTHER };

static int point_wanted(long i, void *ctx)
{
    const struct point_ctx *pc = ctx;
    return !pc->R->line[i] && pc->state[i] == POINT_RUN;
}

/* Before any point runs: the points a where: condition leaves out, and those (of part, when
 * given) whose scenario is invalid (TP 16 on 8 GPUs), each of these an error row at once, listed;
 * the warnings of valid ones (a device on another GPU's platform), counted. Returns 0, or the
 * exit status after an error in a condition. */
static int check_points(const struct sweep *sw, const struct rows *R, int fd,
                        const struct sweepcli_part *part, char *state, long *left_out, long *cannot)
{
    struct tps_error err = {0};
    char warn[4][256];
    long nwarn[4] = {0}, shown = 0;
    int kinds = 0;
    *left_out = *cannot = 0;
    for (long i = 0; i < sw->npoints; i++) {
        int keep = sweep_keep(sw, i, &err);
        if (keep < 0) return cli_report_error(&err);
        state[i] = keep ? POINT_RUN : POINT_LEFT_OUT;
        *left_out += !keep;
        if (keep && part && part->owner[i] != part->shard) state[i] = POINT_OTHER;
        if (state[i] != POINT_RUN || R->line[i]) continue;
        char tmp[64], line[4096];
        struct scn_scenario s;
        struct tps_error e = {0};
        int rc = sweepcli_point_file(tmp)
                     ? tps_error_set(&e, TPS_EIO, NULL, 0, 0, NULL, "no temporary file")
                     : sweep_write_point(sw, i, tmp, &e);
        if (!rc) rc = scn_load_in(tmp, sw->path, &s, &e);
        if (!rc && s.warning[0]) {
            int w = 0;
            while (w < kinds && strcmp(warn[w], s.warning))
                w++;
            if (w == kinds && kinds < 4) snprintf(warn[kinds++], sizeof warn[0], "%s", s.warning);
            if (w < 4) nwarn[w]++;
        }
        scn_release(&s);
        tps_input_forget(tmp); /* its inode may be reused by a later file */
        unlink(tmp);
        if (!rc) continue;
        state[i] = POINT_CANNOT;
        size_t n = sweepcli_row_start(sw, i, line, sizeof line);
        error_fields(&e, line, sizeof line, &n);
        snprintf(line + n, sizeof line - n, ",%s\n", sw->id);
        if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) return CLI_EXIT_SIM;
        if ((*cannot)++ == 0) fprintf(stderr, "tpsim sweep: points that cannot run:\n");
        if (shown++ < 10) {
            char vals[1024] = "";
            size_t vn = 0;
            for (int k = 0; k < sw->nkeys; k++) {
                char v[256];
                sweep_value_text(sw, k, sweep_index(sw, i, k), v, sizeof v);
                vn += (size_t)snprintf(vals + vn, vn < sizeof vals ? sizeof vals - vn : 0,
                                       "%s%s=%s", k ? " " : "", sw->keys[k], v);
            }
            fprintf(stderr, "  point %ld (%s): %s%s%s\n", i, vals, e.field, e.field[0] ? ": " : "",
                    e.msg);
        }
    }
    if (*cannot > 10) fprintf(stderr, "  ... and %ld more\n", *cannot - 10);
    if (*cannot)
        fprintf(stderr,
                "tpsim sweep: %ld point(s) cannot run: their rows say why, with status "
                "error\n",
                *cannot);
    for (int w = 0; w < kinds; w++)
        fprintf(stderr, "tpsim sweep: warning: %ld point(s): %s\n", nwarn[w], warn[w]);
    return 0;
}

static void point_work(long i, void *ctx)
{
    const struct point_ctx *pc = ctx;
    run_point(pc->sw, i, pc->fd);
}

static void point_progress(long finished, long todo, long failed, long errors, void *ctx)
{
    progress(finished, todo, failed + errors, ((struct point_ctx *)ctx)->t0);
}

int sweepcli_run(const struct sweep *sw, const char *csv, int jobs, int resume,
                 const struct sweepcli_part *part, int want_plot, const struct sweep_plot_opts *po)
{
    struct stat sb;
    if (stat(csv, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "tpsim sweep: %s is not a regular file: give a CSV file path with -o\n",
                csv);
        return CLI_EXIT_INPUT;
    }
    if (cli_output_ok(csv)) return CLI_EXIT_INPUT;
    /* one sweep at a time per CSV: the file is locked while a sweep writes it */
    int fd = open(csv, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        fprintf(stderr, "tpsim sweep: cannot write %s: %s\n", csv, strerror(errno));
        return CLI_EXIT_INPUT;
    }
    /* a sweep killed a moment ago may hold the lock until its last worker is torn down: wait up
     * to 2 s before calling the file busy */
    int locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
    for (int t = 0; !locked && errno == EWOULDBLOCK && t < 100; t++) {
        usleep(20000);
        locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
    }
    if (!locked) {
        fprintf(stderr, "tpsim sweep: %s is being written by another sweep\n", csv);
        close(fd);
        return CLI_EXIT_INPUT;
    }
    struct rows R = {.npoints = sw->npoints};
    int code = 0;
    if (resume) {
        code = rows_read(sw, csv, fd, &R);
    } else if (rows_alloc(&R, sw->npoints) != 0) {
        rows_release(&R);
        code = CLI_EXIT_SIM;
    }
    if (code) {
        close(fd);
        return code;
    }
    if (R.stale)
        fprintf(stderr, "tpsim sweep: dropped %ld row(s) whose values are no longer swept\n",
                R.stale);
    int wfd = rows_write(sw, csv, &R);
    close(fd); /* the old file's lock: wfd's now holds */
    if (wfd < 0) {
        fprintf(stderr, "tpsim sweep: cannot write %s: %s\n", csv, strerror(errno));
        rows_release(&R);
        return CLI_EXIT_SIM;
    }
    long todo = 0, failed = 0, left_out = 0, cannot = 0;
    char *state = calloc((size_t)sw->npoints, 1);
    if (!state) {
        rows_release(&R);
        close(wfd);
        return CLI_EXIT_SIM;
    }
    if ((code = check_points(sw, &R, wfd, part, state, &left_out, &cannot))) {
        free(state);
        rows_release(&R);
        close(wfd);
        return code;
    }
    long mine = 0; /* the points this run answers for: not left out, not another shard's */
    for (long i = 0; i < sw->npoints; i++) {
        todo += !R.line[i] && state[i] == POINT_RUN;
        mine += state[i] == POINT_RUN || state[i] == POINT_CANNOT;
    }
    double t0 = tps_clock_now();
    if (part)
        fprintf(stderr, "tpsim sweep: shard %d/%d: %ld of %ld points", part->shard, part->nshards,
                mine, sw->npoints - left_out);
    else
        fprintf(stderr, "tpsim sweep: %ld points", sw->npoints);
    if (left_out && !part) fprintf(stderr, ", %ld left out by where:", left_out);
    fprintf(stderr, " (%ld to run) on %d workers, rows in %s\n", todo, jobs, csv);
    struct point_ctx pc = {sw, &R, state, wfd, t0};
    static const struct pool_ops ops = {
        .want = point_wanted, .work = point_work, .progress = point_progress};
    failed = pool_run(sw->npoints, jobs, &ops, &pc);
    if (isatty(2)) fprintf(stderr, "\n");
    /* every row in point order, so that a rerun writes the same file */
    rows_release(&R);
    code = rows_read(sw, csv, wfd, &R);
    int sorted = code ? -1 : rows_write(sw, csv, &R);
    close(wfd);
    if (sorted >= 0) close(sorted);
    if (!code && sorted < 0) {
        fprintf(stderr, "tpsim sweep: cannot write %s: %s\n", csv, strerror(errno));
        code = CLI_EXIT_SIM;
    }
    free(state);
    if (!code) {
        fprintf(stderr, "tpsim sweep: %ld points in %s, %ld ok, %ld with errors",
                part ? mine : sw->npoints - left_out, csv, R.nok, R.nerr);
        if (left_out && !part) fprintf(stderr, " (%ld more left out by where:)", left_out);
        fprintf(stderr, "\n");
        if (failed) {
            fprintf(stderr, "tpsim sweep: %ld worker(s) failed to write their row\n", failed);
            code = CLI_EXIT_SIM;
        } else if (R.nok == 0 && (!part || mine > 0)) {
            fprintf(stderr, "tpsim sweep: every point failed (see the message column)\n");
            code = CLI_EXIT_INPUT;
        }
        if (want_plot && R.nok == 0)
            fprintf(stderr, "tpsim sweep: nothing to plot: no point succeeded\n");
        else if (want_plot)
            plot(sw, &R, csv, po);
    }
    rows_release(&R);
    return code;
}

struct sweep_args {
    const char *csv;
    long jobs;
    int jobs_given, resume, plot;
    struct sweep_plot_opts po;
    const char *shard;       /* --shard I/N */
    int slurm, submit;       /* --slurm, --submit */
    long array_size;         /* --array-size N (0: not given) */
    const char *sbatch_args; /* --sbatch-args */
};

static int sweep_option(int opt, const char *v, void *ctx)
{
    struct sweep_args *a = ctx;
    switch (opt) {
    case 'r':
        a->resume = 1;
        break;
    case 'p':
        a->plot = 1;
        break;
    case 'o':
        a->csv = v;
        break;
    case 'S':
        a->shard = v;
        break;
    case 'L':
        a->slurm = 1;
        break;
    case 'U':
        a->submit = 1;
        break;
    case 'A':
        return cli_parse_count("sweep", "--array-size", v, 1, SHARD_MAX, &a->array_size);
    case 'B':
        a->sbatch_args = v;
        break;
    case 'j':
        a->jobs_given = 1;
        return cli_parse_count("sweep", "-j", v, 1, 1024, &a->jobs);
    case 'y':
    case 'x':
    case 'g':
    case 'f':
        *(opt == 'y'   ? &a->po.y
          : opt == 'x' ? &a->po.x
          : opt == 'g' ? &a->po.group
                       : &a->po.facet) = v;
        a->plot = 1;
        break;
    case 'l':
        if (strcmp(v, "x") && strcmp(v, "y") && strcmp(v, "xy"))
            return cli_usage_error("sweep", "bad --log '%s' (x, y or xy)", v);
        a->po.logx = strchr(v, 'x') != NULL;
        a->po.logy = strchr(v, 'y') != NULL;
        a->plot = 1;
        break;
    }
    return 0;
}

int cli_sweep(int argc, char **argv)
{
    static const struct option longs[] = {{"resume", no_argument, NULL, 'r'},
                                          {"plot", no_argument, NULL, 'p'},
                                          {"y", required_argument, NULL, 'y'},
                                          {"x", required_argument, NULL, 'x'},
                                          {"group", required_argument, NULL, 'g'},
                                          {"facet", required_argument, NULL, 'f'},
                                          {"log", required_argument, NULL, 'l'},
                                          {"shard", required_argument, NULL, 'S'},
                                          {"slurm", no_argument, NULL, 'L'},
                                          {"submit", no_argument, NULL, 'U'},
                                          {"array-size", required_argument, NULL, 'A'},
                                          {"sbatch-args", required_argument, NULL, 'B'},
                                          CLI_SET_OPTION,
                                          {0}};
    if (argc > 1 && !strcmp(argv[1], "merge")) return sweepcli_merge(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "status")) return sweepcli_status(argc - 1, argv + 1);
    struct sweep_args a = {.jobs = (long)sysconf(_SC_NPROCESSORS_ONLN)};
    const char *path = NULL;
    int npos, prc = cli_parse(argc, argv, 1, "sweep", sweep_help, "j:o:", longs, sweep_option, &a,
                              &path, 1, &npos);
    if (prc) return prc == CLI_HELP_SHOWN ? 0 : prc;
    const char *csv = a.csv;
    int jobs = (int)a.jobs, resume = a.resume, want_plot = a.plot;
    if (!path) return cli_usage_error("sweep", "%s", "missing SCENARIO");
    int shard = -1, nshards = 0;
    struct tps_error err = {0};
    if (a.shard && shard_parse(a.shard, "--shard", &shard, &nshards, &err))
        return cli_usage_error("sweep", "%s", err.msg);
    if (a.shard && a.slurm)
        return cli_usage_error("sweep", "%s", "--shard and --slurm: the script runs the shards");
    if ((a.submit || a.sbatch_args) && !a.slurm)
        return cli_usage_error("sweep", "%s", "--submit and --sbatch-args go with --slurm");
    if (a.array_size && !a.slurm)
        return cli_usage_error("sweep", "%s",
                               "--array-size goes with --slurm (--shard I/N names "
                               "the shard count itself)");
    if (want_plot && (a.shard || a.slurm))
        return cli_usage_error("sweep", "%s",
                               "--plot draws a whole sweep: merge the shards, then run "
                               "tpsim sweep SCENARIO -o MERGED.csv --resume --plot");
    if ((prc = cli_sets_apply(path))) return prc;
    if (jobs < 1) jobs = 1;
    struct sweep sw;
    if (sweep_load(path, &sw, &err)) return cli_report_error(&err);
    char csvbuf[600];
    if (!csv) { /* the scenario's name: FILE.csv, or FILE.shards/ for shards */
        size_t n = strlen(path);
        int yaml = n > 5 && !strcmp(path + n - 5, ".yaml");
        snprintf(csvbuf, sizeof csvbuf, "%.*s.%s", (int)(yaml ? n - 5 : n), path,
                 a.shard || a.slurm ? "shards" : "csv");
        csv = csvbuf;
    }
    if (a.shard || a.slurm) {
        int code = a.slurm ? sweepcli_slurm(&sw, csv, (int)a.array_size, a.jobs_given ? jobs : 0,
                                            resume, a.sbatch_args, a.submit)
                           : sweepcli_shard(&sw, csv, shard, nshards, jobs, resume);
        sweep_release(&sw);
        return code;
    }
    if (want_plot && sweep_plot_check(&sw, &a.po, result_cols, &err)) {
        sweep_release(&sw);
        return cli_report_error(&err);
    }
    int code = sweepcli_run(&sw, csv, jobs, resume, NULL, want_plot, &a.po);
    sweep_release(&sw);
    return code;
}
