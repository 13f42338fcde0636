/* cli_sweep.c - `tpsim sweep SCENARIO`: every point of the scenario's sweep section, simulated
 * in parallel worker processes, each finished point appended to a CSV at once (one write of one
 * line, so a killed sweep keeps whole rows), `--resume` skipping the points already there, and
 * `--plot` drawing TFLOP/s per GPU and iteration time against the first swept key with gnuplot.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "models/strategy.h"
#include "sim/cliutil.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/sweep.h"

static const char sweep_help[] =
    "usage: tpsim sweep SCENARIO [-j N] [-o FILE.csv] [--resume] [--plot]\n"
    "\n"
    "Simulates every point of the scenario's sweep: section (the cartesian product of its keys'\n"
    "values, docs/sweeps.md) in N worker processes, with a progress bar on stderr. Each finished\n"
    "point is appended to the CSV at once, so a killed sweep keeps every point it finished;\n"
    "--resume skips the points already in the CSV. A point whose scenario is invalid gets a row\n"
    "with status 'error' and its message.\n"
    "\n"
    "options:\n"
    "  -j N        worker processes (default: the number of CPUs)\n"
    "  -o FILE     CSV to write (default: SCENARIO with .csv instead of .yaml)\n"
    "  --resume    keep the CSV's rows and run only the missing points\n"
    "  --plot      draw FILE.png and FILE.svg: TFLOP/s per GPU and iteration time against the\n"
    "              first swept key, one curve per value of the other keys\n"
    "  -h, --help  show this help\n";

/* A CSV field. Sweep values are YAML flow text: quotes are dropped and a list "[8, 1]" becomes
 * "[8 1]", so that no value needs CSV quoting (gnuplot's CSV reading does not unquote). Other
 * text (error messages) is quoted when it holds a comma or a quote. */
static void csv_field(char *out, size_t len, const char *v)
{
    char t[512];
    size_t n = 0;
    int list = v[0] == '[';
    for (const char *p = v; *p && n + 1 < sizeof t; p++) {
        if (*p == '\'' || (list && *p == ',')) continue;
        t[n++] = *p;
    }
    t[n] = '\0';
    if (!strpbrk(t, ",\"")) {
        snprintf(out, len, "%s", t);
        return;
    }
    size_t m = 0;
    if (m + 1 < len) out[m++] = '"';
    for (const char *p = t; *p && m + 3 < len; p++) {
        if (*p == '"') out[m++] = '"';
        out[m++] = *p;
    }
    if (m + 1 < len) out[m++] = '"';
    out[m < len ? m : len - 1] = '\0';
}

/* Whether every value of key k is a number. */
static int numeric_key(const struct sweep *sw, int k)
{
    for (int i = 0; i < sw->nvals[k]; i++) {
        char t[512], *end;
        csv_field(t, sizeof t, sw->vals[k][i]);
        strtod(t, &end);
        if (end == t || *end) return 0;
    }
    return 1;
}

/* Runs point i in this (child) process and writes its CSV row to fd. */
static _Noreturn void run_point(const struct sweep *sw, long i, int fd)
{
    char tmp[64], line[2048], field[512];
    snprintf(tmp, sizeof tmp, "/tmp/tpsim-point-XXXXXX");
    int tfd = mkstemp(tmp);
    if (tfd >= 0) close(tfd);
    struct tps_error err = {0};
    struct scn_scenario s;
    memset(&s, 0, sizeof s);
    int rc = tfd < 0 ? tps_error_set(&err, TPS_EIO, NULL, 0, 0, NULL, "no temporary file")
                     : sweep_write_point(sw, i, tmp, &err);
    int loaded = 0;
    if (!rc) {
        rc = scn_load(tmp, &s, &err);
        loaded = 1;
    }
    struct mdl_program p;
    struct sim_stats st = {0};
    struct sim_report r = {0};
    int lowered = 0;
    if (!rc) {
        rc = mdl_strategy_lower(&s.strategy, &s.model, &s.device, s.layers, s.micro_batches, &p,
                                &err);
        lowered = 1;
    }
    if (!rc) rc = sim_engine_run(&p, &s.topo, &st, &err);
    if (!rc) rc = sim_report_build(&p, &st, &r) ? TPS_ENOMEM : 0;
    size_t n = (size_t)snprintf(line, sizeof line, "%ld", i);
    for (int k = 0; k < sw->nkeys; k++) {
        csv_field(field, sizeof field, sw->vals[k][sweep_index(sw, i, k)]);
        n += (size_t)snprintf(line + n, sizeof line - n, ",%s", field);
    }
    if (!rc) {
        double mem = mdl_strategy_memory(&s.strategy, &s.model, s.model.layers);
        snprintf(line + n, sizeof line - n, ",ok,%.9g,%.6g,%.9g,%.9g,%.9g,%.4g,\n", r.iteration_s,
                 r.tflops_per_gpu, r.exposed_comm_s, r.compute_s, r.comm_s, mem / 1e9);
    } else {
        char msg[700];
        /* the point's own file is temporary: name the field and the message only */
        snprintf(msg, sizeof msg, "%s%s%s", err.field[0] ? err.field : "", err.field[0] ? ": " : "",
                 err.msg);
        csv_field(field, sizeof field, msg);
        snprintf(line + n, sizeof line - n, ",error,,,,,,,%s\n", field);
    }
    sim_report_release(&r);
    sim_stats_release(&st);
    if (lowered) mdl_program_release(&p);
    if (loaded) scn_release(&s);
    unlink(tmp);
    ssize_t w = write(fd, line, strlen(line));
    _exit(w == (ssize_t)strlen(line) ? 0 : 3);
}

/* Point indices already in the CSV (and a cut last line removed). */
static int read_done(const char *csv, char *done, long npoints)
{
    FILE *f = fopen(csv, "r+");
    if (!f) return errno == ENOENT ? 0 : -1;
    char line[4096];
    long good_end = 0, count = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') break; /* cut by a kill: dropped below */
        good_end = ftell(f);
        char *end;
        long i = strtol(line, &end, 10);
        if (end != line && *end == ',' && i >= 0 && i < npoints) {
            done[i] = 1;
            count++;
        }
    }
    fclose(f);
    if (truncate(csv, good_end) != 0) return -1;
    return (int)(count > 0);
}

static void progress(long done, long total, long failed, double t0)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double el = ts.tv_sec + ts.tv_nsec * 1e-9 - t0;
    int w = 30, fill = total ? (int)(w * done / total) : w;
    fprintf(stderr, "\r[%.*s%*s] %ld/%ld points, %ld failed, %.0f s", fill,
            "==============================", w - fill, "", done, total, failed, el);
    if (done && done < total) fprintf(stderr, ", about %.0f s left", el / done * (total - done));
    fprintf(stderr, "   ");
}

/* Copies the CSV's rows into `out` (header first) grouped by curve: ordered by the other keys'
 * values, then by the first key's (which has n0 values). */
static int sort_rows(const char *csv, const char *out, long npoints, long n0)
{
    long rest = npoints / n0;
    FILE *f = fopen(csv, "r");
    if (!f) return -1;
    char **rows = calloc((size_t)npoints + 1, sizeof *rows), line[4096], head[4096] = "";
    int rc = rows && fgets(head, sizeof head, f) ? 0 : -1;
    while (!rc && fgets(line, sizeof line, f)) {
        long i = strtol(line, NULL, 10);
        if (i < 0 || i >= npoints) continue;
        long pos = (i % rest) * n0 + i / rest;
        if (!rows[pos]) rows[pos] = strdup(line);
    }
    fclose(f);
    FILE *o = rc ? NULL : fopen(out, "w");
    if (o) {
        fputs(head, o);
        for (long i = 0; i < npoints; i++)
            if (rows[i]) fputs(rows[i], o);
        if (fclose(o) != 0) rc = -1;
    } else {
        rc = -1;
    }
    for (long i = 0; rows && i < npoints; i++)
        free(rows[i]);
    free(rows);
    return rc;
}

static void plot(const struct sweep *sw, const char *csv)
{
    char base[600], gp[700];
    snprintf(base, sizeof base, "%.*s",
             (int)(strlen(csv) > 4 && !strcmp(csv + strlen(csv) - 4, ".csv") ? strlen(csv) - 4
                                                                             : strlen(csv)),
             csv);
    snprintf(gp, sizeof gp, "%s.gp", base);
    /* rows grouped by curve (they were appended as they finished): gnuplot breaks a line at
     * every row that is not the curve's */
    char data[700];
    snprintf(data, sizeof data, "%s.plot.csv", base);
    if (sort_rows(csv, data, sw->npoints, sw->nvals[0]) != 0) return;
    FILE *g = fopen(gp, "w");
    if (!g) return;
    /* one curve per combination of the other keys: gnuplot filters rows by those columns */
    long curves = sw->npoints / sw->nvals[0];
    /* a categorical first key is drawn at positions 0, 1, ... with its values as tic labels */
    char xexpr[4096] = "($2)", tics[4096] = "";
    if (!numeric_key(sw, 0)) {
        size_t xn = 0, tn = (size_t)snprintf(tics, sizeof tics, "set xtics (");
        for (int i = 0; i < sw->nvals[0]; i++) {
            char v[256];
            csv_field(v, sizeof v, sw->vals[0][i]);
            xn += (size_t)snprintf(xexpr + xn, sizeof xexpr - xn,
                                   "%sstrcol(2) eq '%s' ? %d : ", i ? "" : "(", v, i);
            tn += (size_t)snprintf(tics + tn, sizeof tics - tn, "%s'%s' %d", i ? ", " : "", v, i);
        }
        snprintf(xexpr + xn, sizeof xexpr - xn, "1/0)");
        snprintf(tics + tn, sizeof tics - tn, ") rotate by -30\n");
    }
    for (int term = 0; term < 2; term++) {
        fprintf(g, "set terminal %s size 1200,640\nset output '%s.%s'\n", term ? "svg" : "pngcairo",
                base, term ? "svg" : "png");
        fprintf(g,
                "set datafile separator ','\nset key outside below maxrows 4\nset grid\n%s"
                "set multiplot layout 1,2 title '%s' noenhanced\n",
                tics, sw->path);
        for (int panel = 0; panel < 2; panel++) {
            int col = sw->nkeys + (panel ? 4 : 3); /* point, keys, status, iteration_s, tflops */
            fprintf(g, "set xlabel '%s' noenhanced\nset ylabel '%s'\nplot ", sw->keys[0],
                    panel ? "TFLOP/s per GPU" : "iteration time (s)");
            for (long c = 0; c < curves; c++) {
                char cond[1024] = "1", title[512] = "";
                size_t cn = 1, tn = 0;
                for (int k = 1; k < sw->nkeys; k++) {
                    long idx = c;
                    for (int j = sw->nkeys - 1; j > k; j--)
                        idx /= sw->nvals[j];
                    idx %= sw->nvals[k];
                    char v[256];
                    csv_field(v, sizeof v, sw->vals[k][idx]);
                    cn += (size_t)snprintf(cond + cn, sizeof cond - cn, " && strcol(%d) eq '%s'",
                                           k + 2, v[0] == '"' ? "" : v);
                    tn += (size_t)snprintf(title + tn, sizeof title - tn, "%s%s=%s",
                                           k > 1 ? " " : "", sw->keys[k], v);
                }
                fprintf(g,
                        "%s'%s' using %s:((strcol(%d) eq 'ok' && %s) ? $%d : 1/0) "
                        "with linespoints title '%s' noenhanced",
                        c ? ", " : "", data, xexpr, sw->nkeys + 2, cond, col,
                        curves > 1 ? title : "tpsim");
            }
            fprintf(g, "\n");
        }
        fprintf(g, "unset multiplot\n");
    }
    fclose(g);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>/dev/null", gp);
    int st = system(cmd);
    if (st != 0)
        fprintf(stderr,
                "tpsim sweep: gnuplot failed or is missing (apt-get install gnuplot-nox); "
                "script kept in %s\n",
                gp);
    else
        fprintf(stderr, "tpsim sweep: plots in %s.png and %s.svg\n", base, base);
}

int cli_sweep(int argc, char **argv)
{
    const char *path = NULL, *csv = NULL;
    int jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), resume = 0, want_plot = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(sweep_help, stdout);
            return 0;
        }
        if (!strcmp(a, "--resume"))
            resume = 1;
        else if (!strcmp(a, "--plot"))
            want_plot = 1;
        else if (!strcmp(a, "-j") || !strcmp(a, "-o")) {
            if (i + 1 >= argc) return cli_usage_error("sweep", "option '%s' needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "-o")) {
                csv = v;
            } else {
                char *end;
                jobs = (int)strtol(v, &end, 10);
                if (*end || jobs < 1 || jobs > 1024)
                    return cli_usage_error("sweep", "bad -j '%s'", v);
            }
        } else if (a[0] == '-')
            return cli_usage_error("sweep", "unknown option '%s'", a);
        else if (path)
            return cli_usage_error("sweep", "unexpected argument '%s'", a);
        else
            path = a;
    }
    if (!path) return cli_usage_error("sweep", "%s", "missing SCENARIO");
    if (jobs < 1) jobs = 1;
    struct tps_error err = {0};
    struct sweep sw;
    if (sweep_load(path, &sw, &err)) return cli_report_error(&err);
    char csvbuf[600];
    if (!csv) {
        size_t n = strlen(path);
        int yaml = n > 5 && !strcmp(path + n - 5, ".yaml");
        snprintf(csvbuf, sizeof csvbuf, "%.*s.csv", (int)(yaml ? n - 5 : n), path);
        csv = csvbuf;
    }
    char *done = calloc((size_t)sw.npoints + 1, 1);
    int had = 0;
    if (!done) {
        sweep_release(&sw);
        return CLI_EXIT_SIM;
    }
    if (resume && (had = read_done(csv, done, sw.npoints)) < 0) {
        fprintf(stderr, "tpsim sweep: cannot read %s: %s\n", csv, strerror(errno));
        free(done);
        sweep_release(&sw);
        return CLI_EXIT_INPUT;
    }
    int fd = open(csv, O_WRONLY | O_CREAT | O_APPEND | (resume ? 0 : O_TRUNC), 0644);
    if (fd < 0) {
        fprintf(stderr, "tpsim sweep: cannot write %s: %s\n", csv, strerror(errno));
        free(done);
        sweep_release(&sw);
        return CLI_EXIT_INPUT;
    }
    if (!had) {
        char head[2048];
        size_t n = (size_t)snprintf(head, sizeof head, "point");
        for (int k = 0; k < sw.nkeys; k++)
            n += (size_t)snprintf(head + n, sizeof head - n, ",%s", sw.keys[k]);
        snprintf(head + n, sizeof head - n,
                 ",status,iteration_s,tflops_per_gpu,exposed_comm_s,compute_s,comm_s,"
                 "memory_gb_per_gpu,message\n");
        if (write(fd, head, strlen(head)) < 0) fprintf(stderr, "tpsim sweep: write failed\n");
    }
    long todo = 0, finished = 0, failed = 0;
    for (long i = 0; i < sw.npoints; i++)
        todo += !done[i];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t0 = ts.tv_sec + ts.tv_nsec * 1e-9;
    fprintf(stderr, "tpsim sweep: %ld points (%ld to run) on %d workers, rows in %s\n", sw.npoints,
            todo, jobs, csv);
    fflush(NULL);
    long next = 0;
    int running = 0;
    while (finished < todo) {
        while (running < jobs && next < sw.npoints) {
            if (done[next]) {
                next++;
                continue;
            }
            pid_t pid = fork();
            if (pid == 0) run_point(&sw, next, fd);
            if (pid < 0) break;
            running++;
            next++;
        }
        int status;
        pid_t pid = wait(&status);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        running--;
        finished++;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
        progress(finished, todo, failed, t0);
    }
    fprintf(stderr, "\n");
    close(fd);
    /* count error rows for the exit status */
    FILE *f = fopen(csv, "r");
    long errors = 0;
    char line[4096];
    while (f && fgets(line, sizeof line, f))
        errors += strstr(line, ",error,") != NULL;
    if (f) fclose(f);
    fprintf(stderr, "tpsim sweep: %ld points in %s, %ld with errors\n", sw.npoints, csv, errors);
    if (want_plot) plot(&sw, csv);
    free(done);
    sweep_release(&sw);
    return failed ? CLI_EXIT_SIM : 0;
}
