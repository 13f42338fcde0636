/* kineto.c - PyTorch profiler traces to tpsim traces (see kineto.h). */
#include "validate/kineto.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "core/trace.h"
#include "models/program.h"
#include "common/inputs.h"

/* One GPU event of a rank, with what the host and the launching op say about it. */
struct kev {
    double ts, dur, launch; /* us, the JSON's clock; launch < 0: not found */
    long long stream, corr, ext;
    const char *name; /* owned by the JSON document */
    int kind;         /* enum mdl_op_kind */
    int is_kernel;    /* a kernel (not a memcpy or memset) */
    double flop, bytes;
    int layer, phase, iter;
    json_t *pg_ranks; /* collective: the process group's ranks, if the trace names them */
};

struct krank {
    int rank;
    json_t *doc;
    struct kev *ev;
    int nev;
};

/* ------------------------------------------------------------------ reading */

/* jansson's reader callback: the next bytes of the (gzip'ed or plain) file. */
static size_t gz_source(void *buf, size_t len, void *z)
{
    int n = gzread((gzFile)z, buf, len > (1u << 30) ? 1u << 30 : (unsigned)len);
    return n < 0 ? (size_t)-1 : (size_t)n;
}

static int read_json(const char *path, json_t **doc, struct tps_error *err)
{
    gzFile z = gzopen(path, "rb"); /* reads plain files too */
    if (!z) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open");
    tps_input_note(path);
    json_error_t je;
    *doc = json_load_callback(gz_source, z, 0, &je);
    gzclose(z);
    if (!*doc)
        return tps_error_set(err, TPS_ESYNTAX, path, je.line, je.column, "json", "%s", je.text);
    if (!json_is_array(json_object_get(*doc, "traceEvents"))) {
        json_decref(*doc);
        *doc = NULL;
        return tps_error_set(err, TPS_ESYNTAX, path, 1, 1, "traceEvents",
                             "not a PyTorch profiler trace: no traceEvents array");
    }
    return TPS_OK;
}

static const char *str_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double num_of(json_t *o, const char *key, double dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static double esize_of(const char *type)
{
    if (strstr(type, "BFloat16") || strstr(type, "Half")) return 2;
    if (strstr(type, "double") || strstr(type, "long")) return 8;
    if (strstr(type, "float") || strstr(type, "int")) return 4;
    if (strstr(type, "Float8") || strstr(type, "char") || strstr(type, "bool")) return 1;
    return 2;
}

/* Dimension d of input i of a cpu op ("Input Dims"), or -1. */
static double dim(json_t *dims, int i, int d)
{
    json_t *v = json_array_get(json_array_get(dims, (size_t)i), (size_t)d);
    return json_is_integer(v) ? (double)json_integer_value(v) : -1;
}

static int ndims(json_t *dims, int i)
{
    json_t *a = json_array_get(dims, (size_t)i);
    return json_is_array(a) ? (int)json_array_size(a) : -1;
}

/* A GEMM from the launching op's shapes: sets kind, flop and bytes; 0 if it is none. */
static int gemm_of(json_t *op, struct kev *e)
{
    const char *name = str_of(op, "name");
    json_t *args = json_object_get(op, "args"), *dims = json_object_get(args, "Input Dims");
    const char *type = json_string_value(json_array_get(json_object_get(args, "Input type"), 0));
    double es = esize_of(type ? type : ""), b = 1, m, k, n;
    int a = 0; /* index of the first matrix input */
    if (!strcmp(name, "aten::mm") || !strcmp(name, "aten::matmul")) {
        a = 0;
    } else if (!strcmp(name, "aten::addmm")) {
        a = 1;
    } else if (!strcmp(name, "aten::bmm")) {
        a = 0;
    } else if (!strcmp(name, "aten::baddbmm")) {
        a = 1;
    } else if (!strcmp(name, "aten::linear")) { /* x (.., K) by W (N, K) */
        int nd = ndims(dims, 0);
        if (nd < 2 || ndims(dims, 1) != 2) return 0;
        m = 1;
        for (int d = 0; d < nd - 1; d++)
            m *= dim(dims, 0, d);
        k = dim(dims, 0, nd - 1), n = dim(dims, 1, 0);
        goto done;
    } else {
        return 0;
    }
    int na = ndims(dims, a), nb = ndims(dims, a + 1);
    if (na < 2 || na != nb || na > 3) return 0;
    if (na == 3) b = dim(dims, a, 0);
    m = dim(dims, a, na - 2), k = dim(dims, a, na - 1), n = dim(dims, a + 1, nb - 1);
done:
    if (m <= 0 || k <= 0 || n <= 0 || b <= 0) return 0;
    e->kind = b > 1 ? MDL_OP_ATTN : MDL_OP_GEMM;
    e->flop = 2 * b * m * n * k;
    e->bytes = b * (m * k + k * n + m * n) * es;
    return 1;
}

/* A collective from an NCCL kernel's name, sized from the launching c10d op. */
static int coll_of(const char *kname, json_t *op, struct kev *e, int nranks_hint)
{
    if (strncmp(kname, "nccl", 4)) return 0;
    static const struct {
        const char *key;
        int kind;
    } kinds[] = {{"AllReduce", MDL_OP_ALL_REDUCE},
                 {"AllGather", MDL_OP_ALL_GATHER},
                 {"ReduceScatter", MDL_OP_REDUCE_SCATTER},
                 {"Broadcast", MDL_OP_BROADCAST},
                 {"SendRecv", MDL_OP_SEND_RECV},
                 {"AllToAll", MDL_OP_ALL_TO_ALL},
                 {"Reduce", MDL_OP_REDUCE}}; /* after AllReduce and ReduceScatter */
    e->kind = -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && e->kind < 0; i++)
        if (strstr(kname, kinds[i].key)) e->kind = kinds[i].kind;
    if (e->kind < 0 || e->kind == MDL_OP_SEND_RECV || e->kind == MDL_OP_ALL_TO_ALL) {
        e->kind = MDL_OP_COMPUTE; /* point-to-point: no peer in the trace; kept opaque */
        return 0;
    }
    json_t *args = json_object_get(op, "args");
    double nel = num_of(args, "In msg nelems", -1), es = esize_of(str_of(args, "dtype"));
    int group = (int)num_of(args, "Group size", nranks_hint);
    if (nel < 0) { /* the input's shape */
        json_t *dims = json_object_get(args, "Input Dims");
        const char *type =
            json_string_value(json_array_get(json_object_get(args, "Input type"), 0));
        int nd = ndims(dims, 0);
        nel = nd > 0 ? 1 : -1;
        for (int d = 0; d < nd; d++)
            nel *= dim(dims, 0, d);
        es = esize_of(type ? type : "");
    }
    if (nel < 0) {
        e->kind = MDL_OP_COMPUTE;
        return 0;
    }
    e->bytes = nel * es;
    if (e->kind == MDL_OP_ALL_GATHER) e->bytes *= group > 0 ? group : 1; /* the gathered size */
    e->pg_ranks = json_object_get(args, "Process Group Ranks");
    return 1;
}

/* Layer and phase from an annotation's name (as the tracer reads NVTX ranges). */
static void annotate(const char *msg, int *layer, int *phase)
{
    for (const char *p = msg; *p; p++) {
        if (!strncasecmp(p, "layer", 5)) {
            const char *q = p + 5;
            for (int k = 0; k < 8 && *q && (*q < '0' || *q > '9'); k++)
                q++;
            if (*q >= '0' && *q <= '9' && *layer < 0) *layer = atoi(q);
        }
        if (!strncasecmp(p, "backward", 8) || !strncasecmp(p, "bwd", 3)) *phase = MDL_PHASE_BWD;
        if ((!strncasecmp(p, "forward", 7) || !strncasecmp(p, "fwd", 3)) &&
            *phase == MDL_PHASE_OTHER)
            *phase = MDL_PHASE_FWD;
    }
}

static int by_ts(const void *a, const void *b)
{
    const struct kev *x = a, *y = b;
    double ka = x->launch >= 0 ? x->launch : x->ts, kb = y->launch >= 0 ? y->launch : y->ts;
    if (ka != kb) return ka < kb ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

struct corr {
    long long id;
    double ts;
};

static int by_corr(const void *a, const void *b)
{
    const struct corr *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Host ranges used for a kernel's context: annotations and autograd ops, by launch time. */
struct range {
    double t0, t1;
    const char *name;
    int step; /* ProfilerStep#N: N; -1 otherwise */
    int gpu;  /* a GPU annotation: holds kernels by their start, not their launch */
};

static int load_rank(const char *path, struct krank *kr, int nranks_hint, struct tps_error *err)
{
    int rc = read_json(path, &kr->doc, err);
    if (rc) return rc;
    json_t *evs = json_object_get(kr->doc, "traceEvents");
    size_t n = json_array_size(evs);
    if (kr->rank < 0)
        kr->rank = (int)num_of(json_object_get(kr->doc, "distributedInfo"), "rank", 0);
    kr->ev = calloc(n + 1, sizeof *kr->ev);
    struct corr *launch = calloc(n + 1, sizeof *launch);
    struct range *ranges = calloc(n + 1, sizeof *ranges);
    json_t **byext = NULL;
    long long maxext = -1;
    int nl = 0, nr = 0;
    if (!kr->ev || !launch || !ranges) goto oom;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(evs, i), *args = json_object_get(e, "args");
        long long ext = (long long)num_of(args, "External id", -1);
        const char *cat = str_of(e, "cat");
        if ((!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation")) && ext > maxext)
            maxext = ext;
    }
    if (maxext > 100000000) maxext = 100000000; /* bounds the index; larger ids go unlinked */
    byext = calloc((size_t)maxext + 2, sizeof *byext);
    if (!byext) goto oom;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(evs, i), *args = json_object_get(e, "args");
        const char *cat = str_of(e, "cat"), *name = str_of(e, "name");
        double ts = num_of(e, "ts", -1), dur = num_of(e, "dur", 0);
        if (strcmp(str_of(e, "ph"), "X") || ts < 0) continue;
        if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset")) {
            struct kev *k = &kr->ev[kr->nev++];
            k->ts = ts;
            k->dur = dur > 0 ? dur : 0;
            k->launch = -1;
            k->stream = (long long)num_of(args, "stream", 0);
            k->corr = (long long)num_of(args, "correlation", -1);
            k->ext = (long long)num_of(args, "External id", -1);
            k->name = name;
            k->kind = MDL_OP_COMPUTE;
            k->is_kernel = !strcmp(cat, "kernel");
            k->layer = -1;
            k->phase = MDL_PHASE_OTHER;
            k->iter = 0;
        } else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
            long long c = (long long)num_of(args, "correlation", -1);
            if (c >= 0) launch[nl++] = (struct corr){c, ts};
        } else if (!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation") ||
                   !strcmp(cat, "gpu_user_annotation")) {
            long long ext = (long long)num_of(args, "External id", -1);
            if (ext >= 0 && ext <= maxext && strcmp(cat, "gpu_user_annotation") && !byext[ext])
                byext[ext] = e;
            if (strcmp(cat, "cpu_op") || !strncmp(name, "autograd::engine", 16))
                ranges[nr++] = (struct range){
                    ts, ts + dur, name, !strncmp(name, "ProfilerStep#", 13) ? atoi(name + 13) : -1,
                    !strcmp(cat, "gpu_user_annotation")};
        }
    }
    qsort(launch, (size_t)nl, sizeof *launch, by_corr);
    int steps = 0, autograd = 0; /* autograd ran: kernels outside it are the forward's */
    for (int i = 0; i < nr; i++) {
        steps |= ranges[i].step >= 0;
        autograd |= !strncmp(ranges[i].name, "autograd::engine", 16);
    }
    for (int i = 0; i < kr->nev; i++) {
        struct kev *k = &kr->ev[i];
        struct corr key = {k->corr, 0}, *l = NULL;
        if (k->corr >= 0) l = bsearch(&key, launch, (size_t)nl, sizeof *launch, by_corr);
        while (l && l > launch && l[-1].id == k->corr) /* the earliest call of the launch */
            l--;
        if (l) k->launch = l->ts;
        json_t *op = k->ext >= 0 && k->ext <= maxext ? byext[k->ext] : NULL;
        /* the memsets and copies a GEMM or collective launches stay opaque */
        if (op && k->is_kernel && !coll_of(k->name, op, k, nranks_hint)) gemm_of(op, k);
        /* context: ranges holding the launch (host) or the kernel (GPU annotations) */
        double t = k->launch >= 0 ? k->launch : k->ts;
        int step = -1, bwd = 0;
        for (int r = 0; r < nr; r++) {
            const struct range *g = &ranges[r];
            double at = g->gpu ? k->ts : t;
            if (at < g->t0 || at > g->t1) continue;
            if (g->step >= 0) step = g->step;
            if (!strncmp(g->name, "autograd::engine", 16)) bwd = 1;
            annotate(g->name, &k->layer, &k->phase);
        }
        if (bwd) k->phase = MDL_PHASE_BWD;
        if (k->phase == MDL_PHASE_OTHER && (k->layer >= 0 || autograd)) k->phase = MDL_PHASE_FWD;
        k->iter = steps ? step : 0;
    }
    /* steps numbered from the first one recorded */
    int first = -1;
    for (int i = 0; i < kr->nev; i++)
        if (kr->ev[i].iter >= 0 && (first < 0 || kr->ev[i].iter < first)) first = kr->ev[i].iter;
    for (int i = 0; i < kr->nev && first > 0; i++)
        if (kr->ev[i].iter >= 0) kr->ev[i].iter -= first;
    qsort(kr->ev, (size_t)kr->nev, sizeof *kr->ev, by_ts);
    free(launch);
    free(ranges);
    free(byext);
    if (!kr->nev)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "traceEvents",
                             "no GPU events (kernel, gpu_memcpy, gpu_memset): was the profiler "
                             "run with ProfilerActivity.CUDA?");
    return TPS_OK;
oom:
    free(launch);
    free(ranges);
    free(byext);
    return tps_error_oom(err);
}

/* ------------------------------------------------------------------ writing */

/* The group of a collective: its process group's ranks when named, else every rank. */
static int group_of(struct mdl_program *p, const struct kev *k, const int *rank_index, int nall)
{
    int members[1024], n = 0;
    if (json_is_array(k->pg_ranks) && json_array_size(k->pg_ranks) <= 1024) {
        size_t i;
        json_t *v;
        json_array_foreach(k->pg_ranks, i, v)
        {
            long long g = json_integer_value(v);
            if (g >= 0 && g < nall && rank_index[g] >= 0) members[n++] = rank_index[g];
        }
    }
    if (!n)
        for (int r = 0; r < p->nranks && r < 1024; r++)
            members[n++] = r;
    for (int g = 0; g < p->ngroups; g++) {
        const struct mdl_group *G = &p->groups[g];
        if (G->n == n && !memcmp(G->ranks, members, (size_t)n * sizeof *members)) return g;
    }
    return mdl_program_group(p, n, members);
}

/* An op's name: its kind for GEMMs and collectives (full names are C++ types), memset or memcpy,
 * else the kernel's function name without return type, anonymous namespace, template or
 * argument list. */
static void op_name(const struct kev *k, char *name, size_t len)
{
    if (k->kind != MDL_OP_COMPUTE) {
        snprintf(name, len, "%s", mdl_op_kind_name((enum mdl_op_kind)k->kind));
        return;
    }
    if (!k->is_kernel) {
        snprintf(name, len, "%s", strcasestr(k->name, "memset") ? "memset" : "memcpy");
        return;
    }
    char full[256];
    snprintf(full, sizeof full, "%s", k->name);
    for (char *an; (an = strstr(full, "(anonymous namespace)::")) != NULL;)
        memmove(an, an + 23, strlen(an + 23) + 1);
    full[strcspn(full, "<(")] = '\0';
    const char *base = strrchr(full, ' ');
    snprintf(name, len, "%.60s", base ? base + 1 : full);
    for (char *c = name; *c; c++)
        if (*c == '\t' || *c == '#') *c = '_';
    if (!name[0]) snprintf(name, len, "kernel");
}

static int build_rank(struct mdl_program *p, int r, const struct krank *kr, const int *rank_index,
                      int nall, struct kin_summary *sum)
{
    double t0 = 1e300, lat = 1e300;
    for (int i = 0; i < kr->nev; i++) {
        const struct kev *k = &kr->ev[i];
        t0 = fmin(t0, k->ts);
        if (k->launch >= 0) lat = fmin(lat, k->ts - k->launch);
    }
    if (lat > 1e299 || lat < 0) lat = 0;
    long long streams[3] = {-1, -1, -1};
    double launched = 0;
    int last_of[MDL_MAX_STREAMS]; /* each stream's last op */
    for (int s = 0; s < MDL_MAX_STREAMS; s++)
        last_of[s] = -1;
    for (int i = 0; i < kr->nev; i++) {
        const struct kev *k = &kr->ev[i];
        int coll = mdl_op_is_coll((enum mdl_op_kind)k->kind), stream = 0;
        if (coll) {
            int s = 0;
            while (s < 2 && streams[s] >= 0 && streams[s] != k->stream)
                s++;
            if (streams[s] < 0) streams[s] = k->stream;
            stream = 1 + s;
        }
        struct mdl_op o = {.kind = (uint8_t)k->kind,
                           .stream = (uint8_t)stream,
                           .phase = (uint8_t)k->phase,
                           .layer = k->layer,
                           .mb = -1,
                           .group = -1,
                           .dur_s = coll ? 0 : k->dur * 1e-6,
                           .flop = k->flop,
                           .bytes = k->bytes,
                           .recorded = 1,
                           .rec_start = (k->ts - t0) * 1e-6,
                           .rec_end = (k->ts + k->dur - t0) * 1e-6,
                           .iter = k->iter};
        /* the host launched it at its launch call plus the launch latency */
        double at = k->launch >= 0 ? (k->launch + lat - t0) * 1e-6 : o.rec_start;
        if (at < launched) at = launched;
        o.launch_s = at - launched;
        launched = at;
        char name[64];
        op_name(k, name, sizeof name);
        o.name = mdl_program_name(p, name);
        if (coll) o.group = group_of(p, k, rank_index, nall);
        /* the last op of another stream that ended before this one started */
        int dep = -1;
        for (int s = 0; s < MDL_MAX_STREAMS; s++) {
            int j = last_of[s];
            if (s == stream || j < 0) continue;
            const struct mdl_op *pj = &p->ranks[r].ops[j];
            if (pj->rec_end <= o.rec_start && (dep < 0 || j > dep)) dep = j;
        }
        if (dep >= 0) o.deps[o.ndeps++] = dep;
        int idx = o.name < 0 || (coll && o.group < 0) ? -1 : mdl_program_add(p, r, &o);
        if (idx < 0) return -1;
        last_of[stream] = idx;
        if (r == 0) {
            sum->ops++;
            sum->gemms += k->kind == MDL_OP_GEMM;
            sum->attns += k->kind == MDL_OP_ATTN;
            sum->colls += coll;
            sum->opaque += k->kind == MDL_OP_COMPUTE;
            sum->busy_s += k->dur * 1e-6;
            sum->span_s = fmax(sum->span_s, o.rec_end);
            sum->launch_latency_s = lat * 1e-6;
        }
    }
    return 0;
}

static int by_rank(const void *a, const void *b)
{
    return ((const struct krank *)a)->rank - ((const struct krank *)b)->rank;
}

int kin_import(const char *const *files, int n, int rank, const char *out, const char *platform,
               struct kin_summary *sum, struct tps_error *err)
{
    memset(sum, 0, sizeof *sum);
    struct krank *kr = calloc((size_t)n + 1, sizeof *kr);
    if (!kr) return tps_error_oom(err);
    int rc = TPS_OK;
    for (int i = 0; i < n && !rc; i++) {
        kr[i].rank = n == 1 ? rank : -1;
        rc = load_rank(files[i], &kr[i], n, err);
    }
    qsort(kr, (size_t)n, sizeof *kr, by_rank);
    for (int i = 1; i < n && !rc; i++)
        if (kr[i].rank == kr[i - 1].rank)
            rc = tps_error_set(err, TPS_EINVAL, files[i], 0, 0, "rank",
                               "two files say they are rank %d (distributedInfo.rank)", kr[i].rank);
    int nall = n ? kr[n - 1].rank + 1 : 0;
    int *rank_index = rc ? NULL : malloc(((size_t)nall + 1) * sizeof *rank_index);
    if (!rc && !rank_index) rc = tps_error_oom(err);
    struct mdl_program p;
    memset(&p, 0, sizeof p);
    if (!rc) {
        for (int g = 0; g < nall; g++)
            rank_index[g] = -1;
        for (int i = 0; i < n; i++)
            rank_index[kr[i].rank] = i;
        if (mdl_program_init(&p, n) != 0) rc = tps_error_oom(err);
    }
    int layers = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (build_rank(&p, i, &kr[i], rank_index, nall, sum) != 0) rc = tps_error_oom(err);
        for (int k = 0; k < kr[i].nev; k++)
            if (kr[i].ev[k].layer + 1 > layers) layers = kr[i].ev[k].layer + 1;
    }
    if (!rc) {
        p.layers = layers > 0 ? layers : 1;
        p.micro_batches = 1;
        sum->nranks = n;
        struct mdl_check_at at;
        rc = mdl_program_check(&p, &at, err);
        if (!rc) rc = trace_write(&p, platform, out, err);
    }
    mdl_program_release(&p);
    for (int i = 0; i < n; i++) {
        free(kr[i].ev);
        json_decref(kr[i].doc);
    }
    free(kr);
    free(rank_index);
    return rc;
}
