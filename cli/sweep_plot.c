/* sweep_plot.c - a sweep's plot (see sweep_plot.h): the gnuplot script, its labels from two
 * tables (what a metric and a key mean, with units), the lines and panels from the swept
 * columns. */
#include "cli/sweep_plot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gnuplot.h"

/* What a result column means, and the factor that puts it in the label's unit. */
static const struct {
    const char *col, *label;
    double scale;
} metrics[] = {
    {"iteration_s", "iteration time (s)", 1},
    {"model_tflops_per_gpu", "model TFLOP/s per GPU", 1},
    {"mfu", "MFU (%)", 100},
    {"hardware_tflops_per_gpu", "hardware TFLOP/s per GPU", 1},
    {"exposed_comm_s", "exposed communication (s)", 1},
    {"compute_s", "compute time (s)", 1},
    {"comm_s", "communication time (s)", 1},
    {"memory_gb_per_gpu", "memory per GPU (GB)", 1},
    {"tp_exposed_s", "exposed TP communication (s)", 1},
    {"cp_exposed_s", "exposed CP communication (s)", 1},
    {"ep_exposed_s", "exposed EP communication (s)", 1},
    {"dp_exposed_s", "exposed DP communication (s)", 1},
    {"host_wait_s", "host launch waits (s)", 1},
    {"pipeline_bubble_s", "pipeline bubble (s)", 1},
    {"tokens_per_s", "tokens/s", 1},
    {"tokens_per_s_per_gpu", "tokens/s per GPU", 1},
    {"time_to_train_s", "time to train (days)", 1.0 / 86400},
    {"gpu_hours", "GPU-hours", 1},
    {"energy_kwh", "energy of the GPUs (MWh)", 1e-3},
    {"cost", "cost", 1},
    {"gpus", "GPUs", 1},
};

/* What a swept key means, for an axis label or a legend. */
static const struct {
    const char *key, *label;
} keys[] = {
    {"strategy.tp", "TP degree"},
    {"strategy.pp", "pipeline stages"},
    {"strategy.dp", "data-parallel replicas"},
    {"strategy.cp", "context-parallel degree"},
    {"strategy.ep", "expert-parallel degree"},
    {"strategy.mesh", "2D mesh"},
    {"strategy.chunks", "ATP chunks"},
    {"strategy.kind", "strategy"},
    {"strategy.sequence_parallel", "sequence parallelism"},
    {"platform.nodes", "machines"},
    {"platform.preset", "platform"},
    {"model.hidden", "hidden size"},
    {"model.seq", "sequence length (tokens)"},
    {"model.layers", "layers"},
    {"model.heads", "attention heads"},
    {"model.micro_batch", "micro-batch (sequences)"},
    {"model.preset", "model"},
    {"training.global_batch", "global batch (sequences)"},
    {"pipeline.virtual_stages", "virtual stages"},
    {"strategy.oases", "Oases"},
    {"strategy.attention_tp", "attention TP"},
    {"strategy.mlp_tp", "MLP TP"},
    {"strategy.recompute", "recomputation"},
    {"strategy.placement", "placement"},
    {"strategy.tp_comm_overlap", "TP overlap"},
    {"strategy.async_tensor_parallel", "async TP"},
    {"model.dtype", "dtype"},
    {"training.recompute", "recomputation"},
};

static const char *key_label(const char *key)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(keys[i].key, key)) return keys[i].label;
    const char *dot = strrchr(key, '.'); /* strategy.ring: "ring" */
    return dot && dot[1] ? dot + 1 : key;
}

static int metric_of(const char *col)
{
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        if (!strcmp(metrics[i].col, col)) return (int)i;
    return -1;
}

static int axis_of(const struct sweep *sw, const char *key)
{
    for (int k = 0; key && k < sw->nkeys; k++)
        if (!strcmp(sw->keys[k], key)) return k;
    return -1;
}

/* The index of col among the comma-separated cols, or -1. */
static int col_index(const char *cols, const char *col)
{
    int i = 0;
    size_t n = strlen(col);
    for (const char *p = cols; *p; i++) {
        if (!strncmp(p, col, n) && (p[n] == ',' || !p[n])) return i;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    return -1;
}

int sweep_plot_check(const struct sweep *sw, const struct sweep_plot_opts *o, const char *cols,
                     struct tps_error *err)
{
    const char *y = o->y ? o->y : "model_tflops_per_gpu";
    if (col_index(cols, y) < 0 || metric_of(y) < 0) {
        char list[1024];
        size_t n = 0;
        for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", metrics[i].col);
        return tps_error_set(err, TPS_EINVAL, "--y", 0, 0, NULL,
                             "'%s' is not a result to plot (expected one of: %s)", y, list);
    }
    const char *opt[] = {"--x", "--group", "--facet"}, *val[] = {o->x, o->group, o->facet};
    int used[3] = {-1, -1, -1};
    for (int i = 0; i < 3; i++) {
        if (!val[i]) continue;
        int a = axis_of(sw, val[i]);
        if (a < 0)
            return tps_error_set(err, TPS_EINVAL, opt[i], 0, 0, NULL,
                                 "'%s' is not a swept key of %s (its columns: %s%s%s...)", val[i],
                                 sw->path, sw->keys[0], sw->nkeys > 1 ? ", " : "",
                                 sw->nkeys > 1 ? sw->keys[1] : "");
        for (int j = 0; j < i; j++)
            if (used[j] == a)
                return tps_error_set(err, TPS_EINVAL, opt[i], 0, 0, NULL, "'%s' is %s already",
                                     val[i], opt[j]);
        used[i] = a;
    }
    if (o->x && !o->x[0]) return tps_error_set(err, TPS_EINVAL, "--x", 0, 0, NULL, "empty");
    return TPS_OK;
}

int sweep_plot_x(const struct sweep *sw, const struct sweep_plot_opts *o)
{
    int x = axis_of(sw, o->x);
    return x < 0 ? 0 : x;
}

static int numeric_axis(const struct sweep *sw, int k)
{
    for (int i = 0; i < sw->nvals[k]; i++) {
        char t[512], *end;
        sweep_value_text(sw, k, i, t, sizeof t);
        strtod(t, &end);
        if (end == t || *end) return 0;
    }
    return 1;
}

/* The plot's shape: which column is x, which make the lines, which the panels. */
struct shape {
    const struct sweep *sw;
    const struct sweep_plot_opts *o;
    const char *data;
    int x, facet;                      /* axes; facet -1: one panel */
    int lines[SWEEP_MAX_KEYS], nlines; /* the axes whose values make a line */
    long ncurves;                      /* lines per panel */
    int ycol;                          /* gnuplot's column of the metric (1-based) */
    int metric;
    char xexpr[6000], tics[4096];
    char title[600]; /* the scenario's name, and the columns --group left at their first value */
};

/* A gnuplot single-quoted string: quotes doubled. */
static void gq(FILE *g, const char *s)
{
    fputc('\'', g);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', g);
        fputc(*s, g);
    }
    fputc('\'', g);
}

/* Condition and title of curve c: the line columns' values (c in mixed radix over them, the
 * last varying fastest). A title names a key's column ("TP degree 8", "Oases true") and shows a
 * zip's or a variant's value alone ("H100-SXM / dgx-h100"). */
static void curve(const struct shape *s, long c, char *cond, size_t clen, char *title, size_t tlen)
{
    int j[SWEEP_MAX_KEYS];
    for (int l = s->nlines - 1; l >= 0; l--) {
        j[l] = (int)(c % s->sw->nvals[s->lines[l]]);
        c /= s->sw->nvals[s->lines[l]];
    }
    size_t cn = 0, tn = 0;
    cond[0] = title[0] = '\0';
    for (int l = 0; l < s->nlines; l++) {
        int k = s->lines[l];
        char v[256];
        sweep_value_text(s->sw, k, j[l], v, sizeof v);
        cn += (size_t)snprintf(cond + cn, cn < clen ? clen - cn : 0, " && strcol(%d) eq '%s'",
                               k + 2, v);
        int named = s->sw->kind[k] == SWEEP_KEY; /* a zip's or a variant's values speak alone */
        const char *lab = key_label(s->sw->keys[k]), *unit = strstr(lab, " (");
        int ln = named ? (int)(unit ? unit - lab : (long)strlen(lab)) : 0; /* no unit in a legend */
        tn += (size_t)snprintf(title + tn, tn < tlen ? tlen - tn : 0, "%s%.*s%s%s", l ? ", " : "",
                               ln, lab, named ? " " : "", v);
    }
}

/* The grid of panels: facet values, and with several a cell for the legend. */
static void grid(const struct shape *s, int *panels, int *cols, int *rows)
{
    *panels = s->facet >= 0 ? s->sw->nvals[s->facet] : 1;
    int cells = *panels > 1 ? *panels + 1 : 1;
    *cols = cells <= 1 ? 1 : cells <= 4 ? 2 : 3;
    *rows = (cells + *cols - 1) / *cols;
}

static void body(FILE *g, void *ctx)
{
    const struct shape *s = ctx;
    const struct sweep *sw = s->sw;
    int panels, cols, rows;
    grid(s, &panels, &cols, &rows);
    fprintf(g, "set datafile separator ','\nset grid\nset termoption noenhanced\n%s", s->tics);
    fprintf(g, "set key outside right top vertical box opaque\n");
    if (s->o->logx) fprintf(g, "set logscale x 2\n");
    if (s->o->logy) fprintf(g, "set logscale y\n");
    fprintf(g, "set xlabel ");
    gq(g, key_label(sw->keys[s->x]));
    fprintf(g, "\nset ylabel ");
    gq(g, metrics[s->metric].label);
    fprintf(g, "\nset multiplot layout %d,%d title ", rows, cols);
    gq(g, s->title);
    fprintf(g, " font ',14'\n");
    for (int p = 0; p < panels; p++) {
        char fcond[512] = "", ftitle[400] = "";
        if (s->facet >= 0) {
            char v[256];
            sweep_value_text(sw, s->facet, p, v, sizeof v);
            snprintf(fcond, sizeof fcond, " && strcol(%d) eq '%s'", s->facet + 2, v);
            snprintf(ftitle, sizeof ftitle, "%s %s", key_label(sw->keys[s->facet]), v);
        }
        fprintf(g, "set title ");
        gq(g, ftitle);
        /* several panels: the legend once, in a cell of its own after them */
        fprintf(g, panels > 1 ? "\nunset key\nplot " : "\nplot ");
        for (long c = 0; c < s->ncurves; c++) {
            char cond[2048], title[800];
            curve(s, c, cond, sizeof cond, title, sizeof title);
            fprintf(g,
                    "%s'%s' using %s:((strcol(%d) eq 'ok'%s%s) ? $%d * %.17g : 1/0) "
                    "with linespoints lw 2 pt %ld title ",
                    c ? ", \\\n  " : "", s->data, s->xexpr, sw->nkeys + 2, cond, fcond, s->ycol,
                    metrics[s->metric].scale, 1 + c % 13);
            gq(g, s->nlines ? title : metrics[s->metric].label);
        }
        fprintf(g, "\n");
    }
    if (panels > 1 && s->nlines) { /* the legend's cell: the same lines, drawn nowhere */
        fprintf(g, "set key center center vertical box opaque\nunset border\nunset tics\n"
                   "unset xlabel\nunset ylabel\nunset title\nunset grid\nset xrange [0:1]\n"
                   "set yrange [0:1]\nunset logscale\nplot ");
        for (long c = 0; c < s->ncurves; c++) {
            char cond[2048], title[800];
            curve(s, c, cond, sizeof cond, title, sizeof title);
            fprintf(g, "%s2 with linespoints lw 2 pt %ld title ", c ? ", " : "", 1 + c % 13);
            gq(g, title);
        }
        fprintf(g, "\n");
    }
    fprintf(g, "unset multiplot\n");
}

int sweep_plot_draw(const struct sweep *sw, const struct sweep_plot_opts *o, const char *cols,
                    const char *data, const char *stem)
{
    struct shape s = {.sw = sw, .o = o, .data = data, .facet = -1};
    const char *y = o->y ? o->y : "model_tflops_per_gpu";
    s.metric = metric_of(y);
    if (s.metric < 0 || col_index(cols, y) < 0) return -1;
    s.ycol = sw->nkeys + 2 + col_index(cols, y); /* point, keys, then cols from the status */
    s.x = sweep_plot_x(sw, o);
    s.facet = axis_of(sw, o->facet);
    int group = axis_of(sw, o->group);
    long lines = 1;
    for (int k = 0; k < sw->nkeys; k++)
        if (k != s.x && k != s.facet && (group < 0 || k == group)) lines *= sw->nvals[k];
    /* many lines: a panel per value of the non-x, non-group column with the most values; still
     * too many: lines of the remaining column with the most values, the others held */
    if (s.facet < 0 && !o->group && lines > 8 && sw->nkeys > 2) {
        for (int k = 0; k < sw->nkeys; k++)
            if (k != s.x && (s.facet < 0 || sw->nvals[k] > sw->nvals[s.facet])) s.facet = k;
        lines /= sw->nvals[s.facet];
    }
    if (group < 0 && lines > 12) {
        for (int k = 0; k < sw->nkeys; k++)
            if (k != s.x && k != s.facet && (group < 0 || sw->nvals[k] > sw->nvals[group]))
                group = k;
    }
    s.ncurves = 1;
    for (int k = 0; k < sw->nkeys; k++) {
        int line = k != s.x && k != s.facet && (group < 0 || k == group);
        if (line) {
            s.lines[s.nlines++] = k;
            s.ncurves *= sw->nvals[k];
        }
    }
    /* with --group, the other columns (not x, not the panels) are fixed at their first value */
    char fixed[1024] = "";
    size_t fn = 0, ttl = (size_t)snprintf(s.title, sizeof s.title, "%s", sw->name);
    for (int k = 0; group >= 0 && k < sw->nkeys; k++) {
        if (k == s.x || k == s.facet || k == group) continue;
        char v[256];
        sweep_value_text(sw, k, 0, v, sizeof v);
        fn += (size_t)snprintf(fixed + fn, fn < sizeof fixed ? sizeof fixed - fn : 0,
                               " && strcol(%d) eq '%s'", k + 2, v);
        ttl += (size_t)snprintf(s.title + ttl, ttl < sizeof s.title ? sizeof s.title - ttl : 0,
                                "%s%s %s", ttl == strlen(sw->name) ? " (" : ", ",
                                key_label(sw->keys[k]), v);
    }
    if (ttl > strlen(sw->name) && ttl + 1 < sizeof s.title)
        snprintf(s.title + ttl, sizeof s.title - ttl, ")");
    /* a numeric x is its value; a categorical one its position, with its values as tics */
    if (numeric_axis(sw, s.x)) {
        snprintf(s.xexpr, sizeof s.xexpr, "($%d)", s.x + 2);
        if (o->logx) { /* the swept values as tics on a log axis */
            size_t tn = (size_t)snprintf(s.tics, sizeof s.tics, "set xtics (");
            for (int i = 0; i < sw->nvals[s.x]; i++) {
                char v[256];
                sweep_value_text(sw, s.x, i, v, sizeof v);
                tn += (size_t)snprintf(s.tics + tn, tn < sizeof s.tics ? sizeof s.tics - tn : 0,
                                       "%s'%s' %s", i ? ", " : "", v, v);
            }
            if (tn < sizeof s.tics) snprintf(s.tics + tn, sizeof s.tics - tn, ")\n");
        }
    } else {
        size_t xn = 0, tn = (size_t)snprintf(s.tics, sizeof s.tics, "set xtics (");
        for (int i = 0; i < sw->nvals[s.x]; i++) {
            char v[256];
            sweep_value_text(sw, s.x, i, v, sizeof v);
            xn += (size_t)snprintf(s.xexpr + xn, xn < sizeof s.xexpr ? sizeof s.xexpr - xn : 0,
                                   "%sstrcol(%d) eq '%s' ? %d : ", i ? "" : "(", s.x + 2, v, i);
            tn += (size_t)snprintf(s.tics + tn, tn < sizeof s.tics ? sizeof s.tics - tn : 0,
                                   "%s'%s' %d", i ? ", " : "", v, i);
        }
        if (xn < sizeof s.xexpr) snprintf(s.xexpr + xn, sizeof s.xexpr - xn, "1/0)");
        if (tn < sizeof s.tics)
            snprintf(s.tics + tn, sizeof s.tics - tn, ") rotate by -30\nset xrange [-0.5:%d.5]\n",
                     sw->nvals[s.x] - 1);
    }
    if (fixed[0]) { /* the fixed columns join every curve's condition through the x expression */
        char t[sizeof s.xexpr];
        snprintf(t, sizeof t, "%s", s.xexpr);
        snprintf(s.xexpr, sizeof s.xexpr, "((1%.1000s) ? %.4900s : 1/0)", fixed, t);
    }
    char gp[700];
    snprintf(gp, sizeof gp, "%s.gp", stem);
    int panels, pc, pr;
    grid(&s, &panels, &pc, &pr);
    return tps_gnuplot_plot(gp, stem, panels > 1 ? 560 * pc : 1150,
                            panels > 1 ? 420 * pr + 60 : 600, body, &s);
}
