/* report.c - summaries of a replay: times, TFLOP/s, per-layer table; printed, JSON (jansson),
 * CSV and Chrome-trace timeline (see report.h). Units: seconds, FLOP, bytes. */
#include "core/report.h"
#include "common/csv.h"
#include "common/inputs.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int iv_cmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts and merges in place; returns the count of disjoint intervals. */
static int merge(double (*iv)[2], int n)
{
    qsort(iv, (size_t)n, sizeof *iv, iv_cmp);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (iv[i][1] <= iv[i][0]) continue;
        if (m && iv[i][0] <= iv[m - 1][1]) {
            if (iv[i][1] > iv[m - 1][1]) iv[m - 1][1] = iv[i][1];
        } else {
            iv[m][0] = iv[i][0];
            iv[m][1] = iv[i][1];
            m++;
        }
    }
    return m;
}

double report_interval_union(double (*iv)[2], int n)
{
    int m = merge(iv, n);
    double sum = 0;
    for (int i = 0; i < m; i++)
        sum += iv[i][1] - iv[i][0];
    return sum;
}

double report_interval_exposed(double (*a)[2], int na, double (*b)[2], int nb)
{
    int ma = merge(a, na), mb = merge(b, nb);
    double total = 0, inter = 0;
    for (int i = 0; i < ma; i++)
        total += a[i][1] - a[i][0];
    for (int i = 0, j = 0; i < ma && j < mb;) {
        double lo = a[i][0] > b[j][0] ? a[i][0] : b[j][0];
        double hi = a[i][1] < b[j][1] ? a[i][1] : b[j][1];
        if (hi > lo) inter += hi - lo;
        if (a[i][1] < b[j][1])
            i++;
        else
            j++;
    }
    return total - inter;
}

/* Buffers for one rank's breakdown, maxops + 1 entries each. */
struct bd_bufs {
    double (*cov)[2];     /* what is already accounted for */
    double (*all)[2];     /* every op's interval */
    double (*dim)[2];     /* one dimension's intervals */
    double *launch_bound; /* starts of the ops that waited for their launch, sorted */
};

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Adds rank k's partition of [0, T] to *bd (rest_s left for the caller): compute, each
 * dimension's exposed collectives in TP, CP, EP, DP order, and the idle gaps that end where an
 * op started as soon as the host launched it (the engine's host: ops launched in program
 * order, each after its launch_s, a host_sync op only once every op before it is done). */
static void rank_breakdown(const struct mdl_program *p, const struct timing *tm, int k,
                           int dims_named, struct bd_bufs *b, struct report_breakdown *bd)
{
    const struct mdl_rank *rk = &p->ranks[k];
    int nc = 0, na = 0, nlb = 0;
    double host = 0, last_end = 0, tol = 1e-9 * (tm->end_s > 1 ? tm->end_s : 1);
    for (int i = 0; i < rk->nops; i++) {
        const struct mdl_op *op = &rk->ops[i];
        const struct timing_span *ts = timing_op(tm, k, i);
        if (op->host_sync && last_end > host) host = last_end;
        host += op->launch_s;
        if (ts->end > last_end) last_end = ts->end;
        if (host > 0 && ts->start <= host + tol) b->launch_bound[nlb++] = ts->start;
        b->all[na][0] = ts->start;
        b->all[na++][1] = ts->end;
        if (op->stream == MDL_STREAM_COMPUTE) {
            b->cov[nc][0] = ts->start;
            b->cov[nc++][1] = ts->end;
        }
    }
    nc = merge(b->cov, nc);
    for (int i = 0; i < nc; i++)
        bd->compute_s += b->cov[i][1] - b->cov[i][0];
    /* TP, CP, EP, DP; in a job, a collective that serves no one dimension (the gradient norm
     * over the stages, where the stages that finish first wait for the last) goes with the
     * pipeline's */
    for (int d = 0; d < MDL_NDIMS; d++) {
        if (d == MDL_DIM_PP) continue;
        int n = 0;
        for (int i = 0; i < rk->nops; i++) {
            const struct mdl_op *op = &rk->ops[i];
            int od = op->dim > 0 && op->dim < MDL_OP_DIMS ? op->dim - 1
                     : dims_named                         ? MDL_DIM_PP
                                                          : MDL_DIM_TP;
            if (op->stream == MDL_STREAM_COMPUTE || od != d) continue;
            const struct timing_span *ts = timing_op(tm, k, i);
            b->dim[n][0] = ts->start;
            b->dim[n++][1] = ts->end;
        }
        if (!n) continue;
        bd->comm_s[d] += report_interval_exposed(b->dim, n, b->cov, nc);
        n = merge(b->dim, n);
        memcpy(b->cov + nc, b->dim, (size_t)n * sizeof *b->dim);
        nc = merge(b->cov, nc + n);
    }
    qsort(b->launch_bound, (size_t)nlb, sizeof *b->launch_bound, dbl_cmp);
    na = merge(b->all, na);
    for (int i = 0, j = 0; i < na; i++) { /* the gap before busy interval i */
        double gap0 = i ? b->all[i - 1][1] : 0, gap1 = b->all[i][0];
        if (gap1 - gap0 <= 0) continue;
        while (j < nlb && b->launch_bound[j] < gap1 - tol)
            j++;
        if (j < nlb && b->launch_bound[j] <= gap1 + tol) bd->host_wait_s += gap1 - gap0;
    }
}

int report_build(const struct mdl_program *p, const struct timing *tm, struct report *r)
{
    memset(r, 0, sizeof *r);
    r->nranks = p->nranks;
    r->nlayers = p->layers;
    r->micro_batches = p->micro_batches > 0 ? p->micro_batches : 1;
    r->iteration_s = tm->end_s;
    r->hardware_flop = mdl_program_flop(p);
    r->model_flop = p->model_flop;
    r->peak_flops = p->peak_flops;
    r->dropped = p->dropped;
    r->migrated_bytes = p->migrated_bytes;
    int maxops = 0;
    for (int k = 0; k < p->nranks; k++)
        if (p->ranks[k].nops > maxops) maxops = p->ranks[k].nops;
    double(*comp)[2] = malloc((size_t)(maxops + 1) * sizeof *comp);
    double(*comm)[2] = malloc((size_t)(maxops + 1) * sizeof *comm);
    /* each dimension's intervals, maxops + 1 apiece */
    double(*dimc)[2] = malloc((size_t)(maxops + 1) * MDL_NDIMS * sizeof *dimc);
    double(*nonpp)[2] = malloc((size_t)(maxops + 1) * sizeof *nonpp);
    r->layers = calloc((size_t)(p->layers > 0 ? p->layers : 1), sizeof *r->layers);
    /* [layer][mb][phase] first start and last end */
    size_t nspan = (size_t)(p->layers > 0 ? p->layers : 1) * (size_t)r->micro_batches * 2;
    double(*span)[2] = malloc(nspan * sizeof *span);
    struct bd_bufs bb = {malloc((size_t)(maxops + 1) * sizeof *bb.cov),
                         malloc((size_t)(maxops + 1) * sizeof *bb.all),
                         malloc((size_t)(maxops + 1) * sizeof *bb.dim),
                         malloc((size_t)(maxops + 1) * sizeof *bb.launch_bound)};
    if (!comp || !comm || !dimc || !nonpp || !r->layers || !span || !bb.cov || !bb.all || !bb.dim ||
        !bb.launch_bound) {
        free(bb.cov);
        free(bb.all);
        free(bb.dim);
        free(bb.launch_bound);
        free(comp);
        free(comm);
        free(dimc);
        free(nonpp);
        free(span);
        report_release(r);
        return TPS_ENOMEM;
    }
    for (size_t i = 0; i < nspan; i++) {
        span[i][0] = 1e300;
        span[i][1] = -1e300;
    }
    /* a program whose collectives name their dimensions (a job): those that name none serve
     * several (the gradient norm); otherwise every collective is the TP group's */
    int dims_named = 0;
    for (int k = 0; k < p->nranks && !dims_named; k++)
        for (int i = 0; i < p->ranks[k].nops && !dims_named; i++)
            dims_named = p->ranks[k].ops[i].dim > 0 && p->ranks[k].ops[i].dim < MDL_OP_DIMS;
    /* a folded replica's GPUs are left out: the ranks simulated in full stand for them */
    int counted = 0;
    double counted_flop = 0, a2a_lo = 1e300, a2a_hi = 0;
    for (int k = 0; k < p->nranks; k++) {
        if (p->shadow && p->shadow[k]) continue;
        counted++;
        int nc = 0, nm = 0, nn = 0, nd[MDL_NDIMS] = {0};
        double a2a = 0;
        for (int i = 0; i < p->ranks[k].nops; i++) {
            const struct mdl_op *op = &p->ranks[k].ops[i];
            counted_flop += op->flop;
            const struct timing_span *ts = timing_op(tm, k, i);
            if (op->kind == MDL_OP_ALL_TO_ALL && op->dim == MDL_OP_DIM(MDL_DIM_EP))
                a2a += ts->end - ts->start;
            double(*dst)[2] = op->stream == MDL_STREAM_COMPUTE ? &comp[nc++] : &comm[nm++];
            (*dst)[0] = ts->start;
            (*dst)[1] = ts->end;
            if (op->dim > 0 && op->dim < MDL_OP_DIMS) {
                int d = op->dim - 1;
                double(*kc)[2] = &dimc[(size_t)d * (size_t)(maxops + 1) + (size_t)nd[d]++];
                (*kc)[0] = ts->start;
                (*kc)[1] = ts->end;
                r->dim_used[d] = 1;
                if (d != MDL_DIM_PP) {
                    nonpp[nn][0] = ts->start;
                    nonpp[nn++][1] = ts->end;
                }
            }
            if (op->layer < 0 || op->layer >= p->layers || op->mb < 0 ||
                op->mb >= r->micro_batches || op->phase > MDL_PHASE_BWD)
                continue;
            size_t s =
                ((size_t)op->layer * (size_t)r->micro_batches + (size_t)op->mb) * 2 + op->phase;
            if (ts->start < span[s][0]) span[s][0] = ts->start;
            if (ts->end > span[s][1]) span[s][1] = ts->end;
        }
        /* union() merges in place; exposed() merging again gives the same union */
        r->compute_s += report_interval_union(comp, nc);
        r->comm_s += report_interval_union(comm, nm);
        r->exposed_comm_s += report_interval_exposed(comm, nm, comp, nc);
        r->exposed_non_pp_s += report_interval_exposed(nonpp, nn, comp, nc);
        for (int d = 0; d < MDL_NDIMS; d++) {
            r->exposed_dim_s[d] +=
                report_interval_exposed(&dimc[(size_t)d * (size_t)(maxops + 1)], nd[d], comp, nc);
            r->bytes_dim[d] += tm->bytes_dim ? tm->bytes_dim[(size_t)k * MDL_OP_DIMS + 1 + d] : 0;
        }
        r->bytes_sent += tm->bytes_sent ? tm->bytes_sent[k] : 0;
        rank_breakdown(p, tm, k, dims_named, &bb, &r->breakdown);
        if (a2a > 0 && a2a < a2a_lo) {
            a2a_lo = a2a;
            r->ep_straggler = k;
        }
        if (a2a > a2a_hi) {
            a2a_hi = a2a;
            r->ep_waiter = k;
        }
    }
    if (a2a_hi > 0 && a2a_hi - a2a_lo > 0.05 * a2a_hi) r->ep_wait_s = a2a_hi - a2a_lo;
    if (p->shadow && counted > 0) r->hardware_flop = counted_flop * p->nranks / counted;
    if (counted < 1) counted = 1;
    r->compute_s /= counted;
    r->comm_s /= counted;
    r->exposed_comm_s /= counted;
    r->exposed_non_pp_s /= counted;
    for (int d = 0; d < MDL_NDIMS; d++) {
        r->exposed_dim_s[d] /= counted;
        r->bytes_dim[d] /= counted;
    }
    r->bytes_sent /= counted;
    struct report_breakdown *bd = &r->breakdown;
    bd->compute_s /= counted;
    bd->host_wait_s /= counted;
    for (int d = 0; d < MDL_NDIMS; d++)
        bd->comm_s[d] /= counted;
    report_breakdown_close(r);
    if (r->iteration_s > 0) {
        r->hardware_tflops_per_gpu = r->hardware_flop / r->iteration_s / p->nranks / 1e12;
        r->model_tflops_per_gpu = r->model_flop / r->iteration_s / p->nranks / 1e12;
        if (r->peak_flops > 0) r->mfu = r->model_tflops_per_gpu * 1e12 / r->peak_flops;
    }
    for (int l = 0; l < p->layers; l++) {
        for (int mb = 0; mb < r->micro_batches; mb++) {
            size_t s = ((size_t)l * (size_t)r->micro_batches + (size_t)mb) * 2;
            if (span[s][1] >= span[s][0]) r->layers[l].fwd_s += span[s][1] - span[s][0];
            if (span[s + 1][1] >= span[s + 1][0])
                r->layers[l].bwd_s += span[s + 1][1] - span[s + 1][0];
        }
        r->layers[l].fwd_s /= r->micro_batches;
        r->layers[l].bwd_s /= r->micro_batches;
    }
    free(bb.cov);
    free(bb.all);
    free(bb.dim);
    free(bb.launch_bound);
    free(comp);
    free(comm);
    free(dimc);
    free(nonpp);
    free(span);
    return TPS_OK;
}

void report_set_training(struct report *r, double tokens, double train_tokens, double tdp_w,
                         double idle_w, double gpu_hour_price)
{
    struct report_training *t = &r->training;
    memset(t, 0, sizeof *t);
    double T = r->iteration_s;
    if (!(T > 0) || !(tokens > 0) || r->nranks < 1) return;
    t->known = 1;
    t->tokens = tokens;
    t->tokens_per_s = tokens / T;
    t->tokens_per_s_per_gpu = t->tokens_per_s / r->nranks;
    double busy = r->breakdown.compute_s / T, idle = idle_w > 0 ? idle_w : tdp_w;
    t->power_w = tdp_w > 0 ? idle + (tdp_w - idle) * (busy < 1 ? busy : 1) : 0;
    t->idle_given = idle_w > 0;
    t->gpu_hour_price = gpu_hour_price;
    if (!(train_tokens > 0)) return;
    t->train_tokens = train_tokens;
    t->time_to_train_s = train_tokens / t->tokens_per_s;
    t->gpu_hours = t->time_to_train_s * r->nranks / 3600;
    t->energy_kwh = t->gpu_hours * t->power_w / 1000;
    t->cost = t->gpu_hours * gpu_hour_price;
}

void report_breakdown_close(struct report *r)
{
    struct report_breakdown *bd = &r->breakdown;
    double used = bd->compute_s + bd->host_wait_s;
    for (int d = 0; d < MDL_NDIMS; d++)
        used += bd->comm_s[d];
    bd->rest_s = r->iteration_s - used;
    if (fabs(bd->rest_s) < 1e-12 * r->iteration_s) bd->rest_s = 0; /* rounding */
    if (r->job) r->pipeline_bubble_s = bd->rest_s;
}

int report_extrapolate(const struct report *a, const struct report *b, int nlayers,
                       struct report *out)
{
    double k = nlayers - a->nlayers; /* added layers, each b - a */
    *out = *b;
    out->layers = calloc((size_t)nlayers, sizeof *out->layers);
    if (!out->layers) return TPS_ENOMEM;
    out->nlayers = nlayers;
#define EXTRA(f) out->f = a->f + k * (b->f - a->f)
    EXTRA(iteration_s);
    EXTRA(compute_s);
    EXTRA(comm_s);
    EXTRA(exposed_comm_s);
    EXTRA(exposed_non_pp_s);
    for (int d = 0; d < MDL_NDIMS; d++) {
        EXTRA(exposed_dim_s[d]);
        EXTRA(bytes_dim[d]);
    }
    EXTRA(pipeline_bubble_s);
    EXTRA(breakdown.compute_s);
    EXTRA(breakdown.host_wait_s);
    EXTRA(breakdown.rest_s);
    for (int d = 0; d < MDL_NDIMS; d++)
        EXTRA(breakdown.comm_s[d]);
    EXTRA(model_flop);
    EXTRA(hardware_flop);
    EXTRA(bytes_sent);
    EXTRA(migrated_bytes);
    EXTRA(ep_wait_s);
#undef EXTRA
    out->hardware_tflops_per_gpu = out->model_tflops_per_gpu = out->mfu = 0;
    if (out->iteration_s > 0) {
        out->hardware_tflops_per_gpu = out->hardware_flop / out->iteration_s / out->nranks / 1e12;
        out->model_tflops_per_gpu = out->model_flop / out->iteration_s / out->nranks / 1e12;
        if (out->peak_flops > 0) out->mfu = out->model_tflops_per_gpu * 1e12 / out->peak_flops;
    }
    /* the first and last layer as b ran them, every middle one as b's second */
    for (int l = 0; l < nlayers; l++)
        out->layers[l] = b->layers[l == 0 ? 0 : l == nlayers - 1 ? b->nlayers - 1 : 1];
    return TPS_OK;
}

void report_release(struct report *r)
{
    free(r->layers);
    r->layers = NULL;
}

void report_set_memory(struct report *r, const struct mdl_memory *m, double capacity,
                       double reserved)
{
    r->has_memory = 1;
    r->memory = *m;
    r->device_mem_bytes = capacity;
    r->reserved_bytes = reserved;
    r->memory_fits = m->total <= capacity - reserved;
}

void report_warn_memory(const struct report *r, const char *device, FILE *f)
{
    if (!r->has_memory || r->memory_fits) return;
    fprintf(f,
            "tpsim: warning: does not fit in memory: %.1f GB per GPU needed, %s has %.1f GB "
            "usable (%.1f GB short; device.memory_reserved holds back %.1f GB)\n",
            r->memory.total / 1e9, device && device[0] ? device : "the device",
            (r->device_mem_bytes - r->reserved_bytes) / 1e9,
            (r->memory.total - r->device_mem_bytes + r->reserved_bytes) / 1e9,
            r->reserved_bytes / 1e9);
}

static const char *or_dash(const char *s)
{
    return s && s[0] ? s : "-";
}

/* "1234567" as "1,234,567" (rounded to an integer). */
static const char *grouped(double v, char *buf, size_t len)
{
    char t[64];
    snprintf(t, sizeof t, "%.0f", v);
    size_t n = strlen(t), o = 0, lead = t[0] == '-';
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        if (i > lead && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = t[i];
    }
    buf[o] = '\0';
    return buf;
}

/* The rest of the iteration is a job's pipeline bubble, a TP group's idle time. */
json_t *report_breakdown_json(const struct report_breakdown *b, bool job)
{
    json_t *bd = json_pack("{s:f}", "compute_s", b->compute_s);
    for (int d = 0; bd && d < MDL_NDIMS; d++) {
        char key[40];
        snprintf(key, sizeof key, "%s_s", mdl_dim_names[d]);
        if (d != MDL_DIM_PP) json_object_set_new(bd, key, json_real(b->comm_s[d]));
    }
    if (bd) json_object_set_new(bd, "host_wait_s", json_real(b->host_wait_s));
    if (bd) json_object_set_new(bd, job ? "pipeline_bubble_s" : "idle_s", json_real(b->rest_s));
    return bd;
}

static void print_part(const char *name, double v, double T, const char *what, FILE *f)
{
    fprintf(f, "  %-20s%12.6f ms  %5.1f%%%s%s\n", name, v * 1e3, T > 0 ? v / T * 100 : 0,
            what[0] ? "  " : "", what);
}

static void print_breakdown(const struct report *r, FILE *f)
{
    const struct report_breakdown *b = &r->breakdown;
    double T = r->iteration_s;
    fprintf(f, "where the time goes   (per GPU, mean; the parts sum to the iteration time)\n");
    print_part("compute", b->compute_s, T, "", f);
    for (int d = 0; d < MDL_NDIMS; d++) {
        if (d == MDL_DIM_PP || (!r->dim_used[d] && !(b->comm_s[d] > 0))) continue;
        char name[40];
        snprintf(name, sizeof name, "exposed %s", mdl_dim_labels[d]);
        print_part(name, b->comm_s[d], T, mdl_dim_titles[d], f);
    }
    print_part("host launch waits", b->host_wait_s, T, "(the GPU waited for its host's launches)",
               f);
    if (r->job)
        print_part("pipeline bubble", b->rest_s, T,
                   "(stage waits and transfers, schedule fill and drain)", f);
    else
        print_part("idle", b->rest_s, T, "(waiting for the other GPUs to finish)", f);
    const struct report_training *t = &r->training;
    if (!t->known) return;
    char a[64], c[64];
    fprintf(f, "tokens/s              %12s  (%.1f per GPU, %s tokens per iteration)\n",
            grouped(t->tokens_per_s, a, sizeof a), t->tokens_per_s_per_gpu,
            grouped(t->tokens, c, sizeof c));
    if (t->power_w > 0)
        fprintf(f, "power per GPU         %12.0f W  (%s)\n", t->power_w,
                t->idle_given ? "mean: the TDP while computing, device.idle_power otherwise"
                              : "the TDP throughout, an upper bound: device.idle_power sets the "
                                "power while not computing");
    if (!(t->train_tokens > 0)) {
        fprintf(f, "time to train         %12s  (give training.tokens)\n", "-");
        return;
    }
    fprintf(f, "time to train         %12.2f days  (%.4g tokens)\n", t->time_to_train_s / 86400,
            t->train_tokens);
    fprintf(f, "GPU-hours             %12s\n", grouped(t->gpu_hours, a, sizeof a));
    if (t->energy_kwh > 0)
        fprintf(f, "energy                %12.1f MWh  (the GPUs alone)\n", t->energy_kwh / 1e3);
    if (t->cost > 0)
        fprintf(f, "cost                  %12s  (at %.4g a GPU-hour)\n",
                grouped(t->cost, a, sizeof a), t->gpu_hour_price);
}

void report_print(const struct report *r, const struct report_meta *m, FILE *f)
{
    fprintf(f, "scenario        %s\n", or_dash(m->scenario));
    fprintf(f, "model           %s\n", or_dash(m->model));
    if (m->params > 0 && m->active_params < m->params * (1 - 1e-9))
        fprintf(f, "                %.2f B parameters, %.2f B active per token\n", m->params / 1e9,
                m->active_params / 1e9);
    else if (m->params > 0)
        fprintf(f, "                %.2f B parameters\n", m->params / 1e9);
    fprintf(f, "device          %s\n", or_dash(m->device));
    if (m->assumed && m->assumed[0]) fprintf(f, "                (assumed: %s)\n", m->assumed);
    fprintf(f, "platform        %s\n", or_dash(m->platform));
    fprintf(f, "strategy        %s\n", or_dash(m->strategy));
    fprintf(f, "simulated       %d layer(s) x %d micro-batch(es) on %d GPU(s)\n", r->nlayers,
            r->micro_batches, r->nranks);
    if (m->folding && m->folding[0]) fprintf(f, "folded          %s\n", m->folding);
    if (m->hetero && m->hetero[0]) fprintf(f, "heterogeneity   %s\n", m->hetero);
    fputc('\n', f);
    fprintf(f, "iteration time        %12.6f ms\n", r->iteration_s * 1e3);
    fprintf(f, "compute time          %12.6f ms  (mean per GPU)\n", r->compute_s * 1e3);
    fprintf(f, "communication time    %12.6f ms  (mean per GPU)\n", r->comm_s * 1e3);
    fprintf(f, "exposed communication %12.6f ms  (not hidden under compute)\n",
            r->exposed_comm_s * 1e3);
    if (r->job) {
        for (int d = 0; d < MDL_NDIMS; d++) {
            if (!r->dim_used[d]) continue;
            fprintf(f, "  of which %-11s%12.6f ms  (%s)\n", mdl_dim_labels[d],
                    r->exposed_dim_s[d] * 1e3, mdl_dim_titles[d]);
        }
        fprintf(f,
                "pipeline bubble       %12.6f ms  (idle: schedule fill and drain, stage waits and "
                "transfers)\n",
                r->pipeline_bubble_s * 1e3);
    }
    print_breakdown(r, f);
    if (r->model_flop > 0) {
        fprintf(f, "model TFLOP/s/GPU     %12.3f", r->model_tflops_per_gpu);
        if (r->peak_flops > 0)
            fprintf(f, "  (MFU %.1f%% of the %.1f TFLOP/s dense peak)", r->mfu * 100,
                    r->peak_flops / 1e12);
        fputc('\n', f);
    } else {
        fprintf(f, "model TFLOP/s/GPU     %12s  (the trace names no model)\n", "-");
    }
    fprintf(f, "hardware TFLOP/s/GPU  %12.3f  (executed, with recomputation and replicated work)\n",
            r->hardware_tflops_per_gpu);
    if (m->hetero && m->hetero[0])
        fprintf(f,
                "columns dropped       %12.3f %%  (ZERO-resizing's accuracy proxy)\n"
                "migrated              %12.3f MB  (weights and gradients of moved columns)\n",
                r->dropped * 100, r->migrated_bytes / 1e6);
    if (r->ep_wait_s > 0)
        fprintf(f,
                "expert all-to-alls    %12.6f ms  more spent in them by GPU %d than by GPU %d, the "
                "straggler they wait for\n",
                r->ep_wait_s * 1e3, r->ep_waiter, r->ep_straggler);
    if (r->has_memory) {
        const struct mdl_memory *mm = &r->memory;
        fprintf(f,
                "memory per GPU        %12.1f GB of %.1f GB usable (%.1f of %.1f reserved): %s\n",
                mm->total / 1e9, (r->device_mem_bytes - r->reserved_bytes) / 1e9,
                r->reserved_bytes / 1e9, r->device_mem_bytes / 1e9,
                r->memory_fits ? "fits" : "DOES NOT FIT");
        fprintf(f,
                "                      (weights %.1f, gradients %.1f, optimizer %.1f, "
                "activations %.1f GB)\n",
                mm->weights / 1e9, mm->gradients / 1e9, mm->optimizer / 1e9, mm->activations / 1e9);
    }
    if (r->nlayers > 0) {
        double fwd = 0, bwd = 0;
        for (int l = 0; l < r->nlayers; l++) {
            fwd += r->layers[l].fwd_s;
            bwd += r->layers[l].bwd_s;
        }
        fprintf(f, "time per layer        %12.6f ms  (fwd %.6f + bwd %.6f, mean)\n",
                (fwd + bwd) / r->nlayers * 1e3, fwd / r->nlayers * 1e3, bwd / r->nlayers * 1e3);
    }
}

/* A number, or null where it is unknown (0). */
static json_t *num_or_null(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

static json_t *meta_json(const struct report_meta *m)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "scenario", or_dash(m->scenario), "model",
                          or_dash(m->model), "device", or_dash(m->device), "platform",
                          or_dash(m->platform), "strategy", or_dash(m->strategy));
    if (j && m->folding && m->folding[0])
        json_object_set_new(j, "folding", json_string(m->folding));
    if (j && m->hetero && m->hetero[0])
        json_object_set_new(j, "heterogeneity", json_string(m->hetero));
    if (j && m->assumed && m->assumed[0])
        json_object_set_new(j, "assumed_gemm_efficiency", json_string(m->assumed));
    if (j) json_object_set_new(j, "parameters", num_or_null(m->params));
    if (j) json_object_set_new(j, "active_parameters", num_or_null(m->active_params));
    return j;
}

static int dump(json_t *j, const char *path, struct tps_error *err)
{
    if (tps_output_check(path, err)) {
        json_decref(j);
        return TPS_EINVAL;
    }
    int rc = j && json_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) == 0
                 ? TPS_OK
                 : tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write JSON");
    json_decref(j);
    return rc;
}

json_t *report_json(const struct report *r, const struct report_meta *m)
{
    json_t *layers = json_array();
    for (int l = 0; l < r->nlayers; l++)
        json_array_append_new(layers, json_pack("{s:i, s:f, s:f}", "layer", l, "fwd_s",
                                                r->layers[l].fwd_s, "bwd_s", r->layers[l].bwd_s));
    json_t *j = json_pack(
        "{s:s, s:o, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:f, s:f, s:f, s:i, s:i, s:i, s:o}",
        "tpsim_version", "1", "meta", meta_json(m), "iteration_time_s", r->iteration_s,
        "compute_time_s", r->compute_s, "comm_time_s", r->comm_s, "exposed_comm_time_s",
        r->exposed_comm_s, "model_flop", num_or_null(r->model_flop), "model_tflops_per_gpu",
        num_or_null(r->model_flop > 0 ? r->model_tflops_per_gpu : 0), "mfu",
        num_or_null(r->model_flop > 0 ? r->mfu : 0), "hardware_flop", r->hardware_flop,
        "hardware_tflops_per_gpu", r->hardware_tflops_per_gpu, "bytes_sent_per_gpu", r->bytes_sent,
        "gpus", r->nranks, "layers_simulated", r->nlayers, "micro_batches", r->micro_batches,
        "layers", layers);
    if (j) {
        for (int d = 0; d < MDL_NDIMS; d++) {
            char key[40];
            snprintf(key, sizeof key, "%s_exposed_comm_s", mdl_dim_names[d]);
            json_object_set_new(j, key, r->job ? json_real(r->exposed_dim_s[d]) : json_null());
            snprintf(key, sizeof key, "%s_bytes_sent_per_gpu", mdl_dim_names[d]);
            json_object_set_new(j, key, r->job ? json_real(r->bytes_dim[d]) : json_null());
        }
        json_object_set_new(j, "pipeline_bubble_s",
                            r->job ? json_real(r->pipeline_bubble_s) : json_null());
        json_object_set_new(j, "breakdown", report_breakdown_json(&r->breakdown, r->job));
        const struct report_training *t = &r->training;
        json_object_set_new(j, "tokens_per_s", t->known ? json_real(t->tokens_per_s) : json_null());
        json_object_set_new(j, "tokens_per_s_per_gpu",
                            t->known ? json_real(t->tokens_per_s_per_gpu) : json_null());
        json_object_set_new(j, "tokens_per_iteration",
                            t->known ? json_real(t->tokens) : json_null());
        json_object_set_new(j, "power_w_per_gpu", num_or_null(t->power_w));
        json_object_set_new(j, "time_to_train_s", num_or_null(t->time_to_train_s));
        json_object_set_new(j, "gpu_hours", num_or_null(t->gpu_hours));
        json_object_set_new(j, "energy_kwh", num_or_null(t->energy_kwh));
        json_object_set_new(j, "cost", num_or_null(t->cost));
        if (r->ep_wait_s > 0) {
            json_object_set_new(j, "ep_wait_s", json_real(r->ep_wait_s));
            json_object_set_new(j, "ep_straggler_gpu", json_integer(r->ep_straggler));
            json_object_set_new(j, "ep_waiting_gpu", json_integer(r->ep_waiter));
        }
    }
    if (j && m->hetero && m->hetero[0]) {
        json_object_set_new(j, "dropped_fraction", json_real(r->dropped));
        json_object_set_new(j, "migrated_bytes", json_real(r->migrated_bytes));
    }
    if (j && r->has_memory) {
        const struct mdl_memory *mm = &r->memory;
        json_object_set_new(j, "memory_gb_per_gpu", json_real(mm->total / 1e9));
        json_object_set_new(j, "memory_fits", json_boolean(r->memory_fits));
        json_object_set_new(j, "memory",
                            json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "weights_gb",
                                      mm->weights / 1e9, "gradients_gb", mm->gradients / 1e9,
                                      "optimizer_gb", mm->optimizer / 1e9, "activations_gb",
                                      mm->activations / 1e9, "device_gb", r->device_mem_bytes / 1e9,
                                      "reserved_gb", r->reserved_bytes / 1e9));
    } else if (j) {
        json_object_set_new(j, "memory_gb_per_gpu", json_null());
        json_object_set_new(j, "memory_fits", json_null());
    }
    return j;
}

int report_write_json(const struct report *r, const struct report_meta *m, const char *path,
                      struct tps_error *err)
{
    return dump(report_json(r, m), path, err);
}

int report_write_csv(const struct report *r, const struct report_meta *m, const char *path,
                     struct tps_error *err)
{
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "scenario,iteration_time_s,compute_time_s,comm_time_s,exposed_comm_time_s,"
               "model_tflops_per_gpu,mfu,hardware_tflops_per_gpu,memory_gb_per_gpu,memory_fits,"
               "gpus,layers_simulated,micro_batches");
    for (int d = 0; d < MDL_NDIMS; d++)
        fprintf(f, ",%s_exposed_comm_s", mdl_dim_names[d]);
    fprintf(f, ",pipeline_bubble_s,breakdown_compute_s");
    for (int d = 0; d < MDL_NDIMS; d++)
        if (d != MDL_DIM_PP) fprintf(f, ",breakdown_%s_s", mdl_dim_names[d]);
    fprintf(f, ",breakdown_host_wait_s,breakdown_rest_s,tokens_per_s,tokens_"
               "per_s_per_gpu,"
               "time_to_train_s,gpu_hours,energy_kwh,cost\n");
    char model[32] = "", mfu[32] = "", mem[32] = "";
    if (r->model_flop > 0) snprintf(model, sizeof model, "%.6g", r->model_tflops_per_gpu);
    if (r->model_flop > 0 && r->peak_flops > 0) snprintf(mfu, sizeof mfu, "%.6g", r->mfu);
    if (r->has_memory) snprintf(mem, sizeof mem, "%.6g", r->memory.total / 1e9);
    tps_csv_fput(f, or_dash(m->scenario)); /* RFC 4180: quoted when it needs to be */
    fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%s,%s,%.6g,%s,%s,%d,%d,%d", r->iteration_s, r->compute_s,
            r->comm_s, r->exposed_comm_s, model, mfu, r->hardware_tflops_per_gpu, mem,
            r->has_memory ? (r->memory_fits ? "true" : "false") : "", r->nranks, r->nlayers,
            r->micro_batches);
    for (int d = 0; d < MDL_NDIMS; d++) /* empty but for a whole job */
        fprintf(f, r->job ? ",%.9g" : ",", r->exposed_dim_s[d]);
    fprintf(f, r->job ? ",%.9g" : ",", r->pipeline_bubble_s);
    const struct report_breakdown *b = &r->breakdown;
    fprintf(f, ",%.9g", b->compute_s);
    for (int d = 0; d < MDL_NDIMS; d++)
        if (d != MDL_DIM_PP) fprintf(f, ",%.9g", b->comm_s[d]);
    fprintf(f, ",%.9g,%.9g", b->host_wait_s, b->rest_s);
    const struct report_training *t = &r->training;
    double tv[] = {t->known ? t->tokens_per_s : 0,
                   t->known ? t->tokens_per_s_per_gpu : 0,
                   t->time_to_train_s,
                   t->gpu_hours,
                   t->energy_kwh,
                   t->cost};
    for (size_t i = 0; i < sizeof tv / sizeof tv[0]; i++)
        fprintf(f, tv[i] > 0 ? ",%.9g" : ",", tv[i]);
    fputc('\n', f);
    if (fclose(f) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    return TPS_OK;
}

int report_write_timeline(const struct mdl_program *p, const struct timing *tm, const char *path,
                          struct tps_error *err)
{
    static const char *const stream_names[MDL_MAX_STREAMS] = {
        "compute",         "comm",        "comm2 (dp)", "comm3 (pp recv fwd)", "pp send fwd",
        "pp recv bwd",     "pp send bwd", "grad norm",  "zero-3 gather",       "ring shift send",
        "ring shift recv", "tp columns",  "tp pillars", "migration",           "cp ring send",
        "cp ring recv"};
    json_t *ev = json_array();
    for (int r = 0; r < p->nranks; r++) {
        char pname[32];
        snprintf(pname, sizeof pname, "GPU %d", r);
        json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "process_name",
                                            "ph", "M", "pid", r, "tid", 0, "args", "name", pname));
        bool used[MDL_MAX_STREAMS] = {true}; /* the compute stream, and those the GPU uses */
        for (int i = 0; i < p->ranks[r].nops; i++)
            used[p->ranks[r].ops[i].stream] = true;
        for (int s = 0; s < MDL_MAX_STREAMS; s++)
            if (used[s])
                json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                                                    "thread_name", "ph", "M", "pid", r, "tid", s,
                                                    "args", "name", stream_names[s]));
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const struct mdl_op *op = &p->ranks[r].ops[i];
            const struct timing_span *ts = timing_op(tm, r, i);
            json_t *args = json_pack("{s:s, s:i, s:i, s:s}", "kind",
                                     mdl_op_kind_name((enum mdl_op_kind)op->kind), "layer",
                                     op->layer, "micro_batch", op->mb, "phase",
                                     mdl_phase_name((enum mdl_phase)op->phase));
            if (op->bytes > 0) json_object_set_new(args, "bytes", json_real(op->bytes));
            if (op->flop > 0) json_object_set_new(args, "flop", json_real(op->flop));
            if (op->dim > 0 && op->dim < MDL_OP_DIMS)
                json_object_set_new(args, "dim", json_string(mdl_dim_names[op->dim - 1]));
            char name[96];
            snprintf(name, sizeof name, "L%d %s", op->layer, p->names[op->name]);
            json_array_append_new(
                ev, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat",
                              op->stream == MDL_STREAM_COMPUTE ? "compute" : "comm", "ph", "X",
                              "ts", ts->start * 1e6, "dur", (ts->end - ts->start) * 1e6, "pid", r,
                              "tid", op->stream, "args", args));
        }
    }
    json_t *j = json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ns");
    return dump(j, path, err);
}
