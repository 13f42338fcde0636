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
    int layer_idx, step_idx; /* the ranges that gave layer and iter (file order), or -1 */
    size_t idx;              /* its index in traceEvents */
    json_t *pg_ranks;        /* collective: the process group's ranks, if the trace names them */
};

struct krank {
    int rank;
    const char *path;
    json_t *doc;
    struct kev *ev;
    int nev;
};

/* ------------------------------------------------------------------ reading */

/* jansson's reader callback: the next bytes of the (gzip'ed or plain) file, at most
 * KIN_MAX_JSON_MIB in all (a small gzip can inflate without end). */
struct gz_in {
    gzFile z;
    size_t total, max;
};

static size_t gz_source(void *buf, size_t len, void *arg)
{
    struct gz_in *in = arg;
    if (in->total >= in->max) {
        in->total = in->max + 1; /* over the bound: the reader stops here */
        return (size_t)-1;
    }
    if (len > in->max - in->total) len = in->max - in->total;
    if (len == 0) len = 1;
    int n = gzread(in->z, buf, len > (1u << 30) ? 1u << 30 : (unsigned)len);
    if (n > 0) in->total += (size_t)n;
    return n < 0 ? (size_t)-1 : (size_t)n;
}

/* The bound on a trace's JSON text (decompressed): KIN_MAX_JSON_MIB, or TPSIM_MAX_JSON_MIB. */
static size_t json_bound(void)
{
    const char *e = getenv("TPSIM_MAX_JSON_MIB");
    char *end;
    long v = e ? strtol(e, &end, 10) : 0;
    if (!e || *end || v < 1 || v > (1L << 20)) v = KIN_MAX_JSON_MIB;
    return (size_t)v << 20;
}

static int read_json(const char *path, json_t **doc, struct tps_error *err)
{
    gzFile z = gzopen(path, "rb"); /* reads plain files too */
    if (!z) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open");
    tps_input_note(path);
    json_error_t je;
    struct gz_in in = {z, 0, json_bound()};
    *doc = json_load_callback(gz_source, &in, 0, &je);
    gzclose(z);
    if (in.total > in.max) {
        json_decref(*doc);
        *doc = NULL;
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "traceEvents",
                             "more than %zu MiB of JSON (decompressed): beyond the importer's "
                             "bound (TPSIM_MAX_JSON_MIB raises it)",
                             in.max >> 20);
    }
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

/* An id or count: an integer, or a whole number within +-2^62; else dflt (a value no id is). */
static long long id_of(json_t *o, const char *key, long long dflt)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) return (long long)json_integer_value(v);
    double x = json_is_real(v) ? json_real_value(v) : NAN;
    return x >= -4.6e18 && x <= 4.6e18 && x == floor(x) ? (long long)x : dflt;
}

/* The decimal number at s (layer and step numbers): -1 when negative, at most 2^30. */
static int count_at(const char *s)
{
    long v = strtol(s, NULL, 10);
    return v < 0 ? -1 : v > (1L << 30) ? 1 << 30 : (int)v;
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
    long long gs = id_of(args, "Group size", nranks_hint);
    int group = gs < 1 || gs > KIN_MAX_RANK + 1 ? nranks_hint : (int)gs;
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
            if (*q >= '0' && *q <= '9' && *layer < 0) *layer = count_at(q);
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

/* Host ranges used for a kernel's context: annotations and autograd ops, by launch time. What a
 * range says is read from its name once (annotate): a kernel's context is then found by binary
 * search and a sweep, never by scanning every range for every kernel. */
struct range {
    double t0, t1;
    int idx;      /* order in the file: the first range naming a layer wins, the last step */
    int step;     /* ProfilerStep#N: N; -1 otherwise */
    int gpu;      /* a GPU annotation: holds kernels by their start, not their launch */
    int layer;    /* the layer its name says, or -1 */
    int phase;    /* MDL_PHASE_BWD, _FWD or _OTHER from its name */
    int autograd; /* autograd::engine: the backward */
};

/* A kernel's query: the time a class of ranges is matched at, and what it found. */
struct kq {
    double at;
    int ev; /* index in kr->ev */
    int layer_idx, layer, step_idx, step;
};

static int by_t0(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static int by_at(const void *a, const void *b)
{
    const struct kq *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->ev - y->ev;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Entries of v (sorted) <= x, or < x when strict. */
static size_t count_le(const double *v, size_t n, double x, int strict)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strict ? v[mid] < x : v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A binary heap of ranges by file order (min-heap, or max-heap when `max`). */
struct rheap {
    const struct range **h;
    int n, max;
};

static int rheap_before(const struct rheap *H, int a, int b)
{
    return H->max ? H->h[a]->idx > H->h[b]->idx : H->h[a]->idx < H->h[b]->idx;
}

static void rheap_push(struct rheap *H, const struct range *r)
{
    int i = H->n++;
    H->h[i] = r;
    while (i > 0 && rheap_before(H, i, (i - 1) / 2)) {
        const struct range *t = H->h[i];
        H->h[i] = H->h[(i - 1) / 2];
        H->h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void rheap_pop(struct rheap *H)
{
    H->h[0] = H->h[--H->n];
    for (int i = 0;;) {
        int c = 2 * i + 1, best = i;
        if (c < H->n && rheap_before(H, c, best)) best = c;
        if (c + 1 < H->n && rheap_before(H, c + 1, best)) best = c + 1;
        if (best == i) break;
        const struct range *t = H->h[i];
        H->h[i] = H->h[best];
        H->h[best] = t;
        i = best;
    }
}

/* The first range (in file order) naming a layer, and the last naming a step, among the ranges
 * r[0..n) (sorted by t0) that hold each query's time; q sorted by time. A range ended before a
 * query's time has ended before every later query's, so the heaps drop it lazily. */
static int sweep_ranges(const struct range *r, int n, struct kq *q, int nq)
{
    struct rheap L = {calloc((size_t)n + 1, sizeof *L.h), 0, 0};
    struct rheap S = {calloc((size_t)n + 1, sizeof *S.h), 0, 1};
    if (!L.h || !S.h) {
        free(L.h);
        free(S.h);
        return -1;
    }
    int next = 0;
    for (int i = 0; i < nq; i++) {
        double at = q[i].at;
        for (; next < n && r[next].t0 <= at; next++) {
            if (r[next].layer >= 0) rheap_push(&L, &r[next]);
            if (r[next].step >= 0) rheap_push(&S, &r[next]);
        }
        while (L.n && L.h[0]->t1 < at)
            rheap_pop(&L);
        while (S.n && S.h[0]->t1 < at)
            rheap_pop(&S);
        if (L.n && (q[i].layer_idx < 0 || L.h[0]->idx < q[i].layer_idx))
            q[i].layer_idx = L.h[0]->idx, q[i].layer = L.h[0]->layer;
        if (S.n && S.h[0]->idx > q[i].step_idx)
            q[i].step_idx = S.h[0]->idx, q[i].step = S.h[0]->step;
    }
    free(L.h);
    free(S.h);
    return 0;
}

/* Ranges of one class that hold time `at`: t0 <= at and not t1 < at. */
static size_t holding(const double *t0s, const double *t1s, size_t n, double at)
{
    return count_le(t0s, n, at, 0) - count_le(t1s, n, at, 1);
}

/* Sets each kernel's layer, phase and iteration from the ranges holding it: host ranges at its
 * launch (its start when no launch was found), GPU annotations at its start. */
static int kernel_context(struct krank *kr, struct range *ranges, int nr)
{
    int steps = 0, autograd = 0, rc = -1; /* autograd ran: kernels outside it are the forward's */
    for (int i = 0; i < nr; i++) {
        steps |= ranges[i].step >= 0;
        autograd |= ranges[i].autograd;
    }
    qsort(ranges, (size_t)nr, sizeof *ranges, by_t0);
    /* per class (host 0, GPU 1) and flag (bwd, fwd): sorted starts and ends */
    double *t[2][2][2] = {{{NULL}}};
    size_t nt[2][2] = {{0}};
    struct range *cls[2] = {calloc((size_t)nr + 1, sizeof **cls),
                            calloc((size_t)nr + 1, sizeof **cls)};
    int ncls[2] = {0, 0};
    struct kq *q = calloc((size_t)kr->nev + 1, sizeof *q);
    int ok = cls[0] && cls[1] && q;
    for (int c = 0; c < 2 && ok; c++)
        for (int f = 0; f < 2 && ok; f++)
            for (int e = 0; e < 2 && ok; e++)
                ok = (t[c][f][e] = malloc(((size_t)nr + 1) * sizeof(double))) != NULL;
    if (!ok) goto out;
    for (int i = 0; i < nr; i++) {
        const struct range *g = &ranges[i];
        int c = g->gpu;
        cls[c][ncls[c]++] = *g;
        int f = g->autograd || g->phase == MDL_PHASE_BWD ? 0 : g->phase == MDL_PHASE_FWD ? 1 : -1;
        if (f < 0) continue;
        t[c][f][0][nt[c][f]] = g->t0;
        t[c][f][1][nt[c][f]++] = g->t1;
    }
    for (int c = 0; c < 2; c++)
        for (int f = 0; f < 2; f++)
            for (int e = 0; e < 2; e++)
                qsort(t[c][f][e], nt[c][f], sizeof(double), cmp_dbl);
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < kr->nev; i++) {
            const struct kev *k = &kr->ev[i];
            /* what an earlier pass found carries over */
            q[i] = (struct kq){c ? k->ts : (k->launch >= 0 ? k->launch : k->ts),
                               i,
                               k->layer_idx,
                               k->layer,
                               k->step_idx,
                               k->iter};
        }
        qsort(q, (size_t)kr->nev, sizeof *q, by_at);
        if (sweep_ranges(cls[c], ncls[c], q, kr->nev)) goto out;
        for (int i = 0; i < kr->nev; i++) {
            struct kev *k = &kr->ev[q[i].ev];
            k->layer_idx = q[i].layer_idx, k->layer = q[i].layer;
            k->step_idx = q[i].step_idx, k->iter = q[i].step;
            if (holding(t[c][0][0], t[c][0][1], nt[c][0], q[i].at)) k->phase = MDL_PHASE_BWD;
            if (holding(t[c][1][0], t[c][1][1], nt[c][1], q[i].at) && k->phase == MDL_PHASE_OTHER)
                k->phase = MDL_PHASE_FWD;
        }
    }
    for (int i = 0; i < kr->nev; i++) {
        struct kev *k = &kr->ev[i];
        if (k->phase == MDL_PHASE_OTHER && (k->layer >= 0 || autograd)) k->phase = MDL_PHASE_FWD;
        if (!steps) k->iter = 0;
    }
    rc = 0;
out:
    for (int c = 0; c < 2; c++)
        for (int f = 0; f < 2; f++)
            for (int e = 0; e < 2; e++)
                free(t[c][f][e]);
    free(cls[0]);
    free(cls[1]);
    free(q);
    return rc;
}

/* The op an External id names: the first cpu_op or user_annotation carrying it (refs sorted by
 * id, one entry per id). */
struct extref {
    long long ext;
    size_t at; /* index in traceEvents */
};

static int by_ext(const void *a, const void *b)
{
    const struct extref *x = a, *y = b;
    return (x->ext > y->ext) - (x->ext < y->ext);
}

static int by_ext_then_at(const void *a, const void *b)
{
    const struct extref *x = a, *y = b;
    int c = by_ext(a, b);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static json_t *op_of(json_t *evs, const struct extref *refs, size_t nrefs, long long ext)
{
    struct extref key = {ext, 0};
    const struct extref *r = ext >= 0 ? bsearch(&key, refs, nrefs, sizeof *refs, by_ext) : NULL;
    return r ? json_array_get(evs, r->at) : NULL;
}

/* The rank a file says it is (distributedInfo.rank), checked: 0..KIN_MAX_RANK. */
static int rank_of(const char *path, json_t *doc, int *rank, struct tps_error *err)
{
    json_t *v = json_object_get(json_object_get(doc, "distributedInfo"), "rank");
    if (!v) {
        *rank = 0;
        return TPS_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > KIN_MAX_RANK)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "distributedInfo.rank",
                             "expected an integer in 0..%d", KIN_MAX_RANK);
    *rank = (int)json_integer_value(v);
    return TPS_OK;
}

/* A number of an event beyond what a trace holds: the field and its bound. */
static int event_bound(const char *path, size_t i, const char *field, const char *what, double v,
                       double max, struct tps_error *err)
{
    if (isfinite(v) && v <= max) return TPS_OK;
    char f[64];
    snprintf(f, sizeof f, "traceEvents[%zu]%s%s", i, field[0] ? "." : "", field);
    return tps_error_set(err, TPS_EINVAL, path, 0, 0, f,
                         "%s %g is beyond what a trace holds (at most %g)", what, v, max);
}

static int load_rank(const char *path, struct krank *kr, int nranks_hint, struct tps_error *err)
{
    int rc = read_json(path, &kr->doc, err);
    if (rc) return rc;
    json_t *evs = json_object_get(kr->doc, "traceEvents");
    size_t n = json_array_size(evs);
    if (kr->rank < 0 && (rc = rank_of(path, kr->doc, &kr->rank, err))) return rc;
    kr->ev = calloc(n + 1, sizeof *kr->ev);
    struct corr *launch = calloc(n + 1, sizeof *launch);
    struct range *ranges = calloc(n + 1, sizeof *ranges);
    struct extref *refs = calloc(n + 1, sizeof *refs);
    size_t nrefs = 0;
    int nl = 0, nr = 0;
    if (!kr->ev || !launch || !ranges || !refs) goto oom;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(evs, i), *args = json_object_get(e, "args");
        const char *cat = str_of(e, "cat"), *name = str_of(e, "name");
        double ts = num_of(e, "ts", -1), dur = num_of(e, "dur", 0);
        if (!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation")) {
            long long ext = id_of(args, "External id", -1);
            if (ext >= 0) refs[nrefs++] = (struct extref){ext, i};
        }
        if (strcmp(str_of(e, "ph"), "X") || ts < 0) continue;
        if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset")) {
            if ((rc = event_bound(path, i, "dur", "a duration of", dur, TRACE_MAX_SECONDS * 1e6,
                                  err)))
                goto fail;
            struct kev *k = &kr->ev[kr->nev++];
            k->idx = i;
            k->ts = ts;
            k->dur = dur > 0 ? dur : 0;
            k->launch = -1;
            k->stream = id_of(args, "stream", 0);
            k->corr = id_of(args, "correlation", -1);
            k->ext = id_of(args, "External id", -1);
            k->name = name;
            k->kind = MDL_OP_COMPUTE;
            k->is_kernel = !strcmp(cat, "kernel");
            k->layer = k->layer_idx = k->step_idx = -1;
            k->phase = MDL_PHASE_OTHER;
            k->iter = -1; /* no step yet (kernel_context) */
        } else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
            long long c = id_of(args, "correlation", -1);
            if (c >= 0) launch[nl++] = (struct corr){c, ts};
        } else if ((!strcmp(cat, "cpu_op") && !strncmp(name, "autograd::engine", 16)) ||
                   !strcmp(cat, "user_annotation") || !strcmp(cat, "gpu_user_annotation")) {
            struct range *g = &ranges[nr];
            *g = (struct range){ts,
                                ts + dur,
                                nr,
                                -1,
                                !strcmp(cat, "gpu_user_annotation"),
                                -1,
                                MDL_PHASE_OTHER,
                                !strncmp(name, "autograd::engine", 16)};
            if (!strncmp(name, "ProfilerStep#", 13)) g->step = count_at(name + 13);
            annotate(name, &g->layer, &g->phase);
            nr++;
        }
    }
    /* each External id's first op in the file (a stable order: the index breaks ties) */
    qsort(refs, nrefs, sizeof *refs, by_ext_then_at);
    size_t nd = 0;
    for (size_t i = 0; i < nrefs; i++)
        if (!nd || refs[nd - 1].ext != refs[i].ext) refs[nd++] = refs[i];
    nrefs = nd;
    /* each correlation's earliest launch call */
    qsort(launch, (size_t)nl, sizeof *launch, by_corr);
    int nu = 0;
    for (int i = 0; i < nl; i++)
        if (!nu || launch[nu - 1].id != launch[i].id)
            launch[nu++] = launch[i];
        else if (launch[i].ts < launch[nu - 1].ts)
            launch[nu - 1].ts = launch[i].ts;
    nl = nu;
    for (int i = 0; i < kr->nev; i++) {
        struct kev *k = &kr->ev[i];
        struct corr key = {k->corr, 0}, *l = NULL;
        if (k->corr >= 0) l = bsearch(&key, launch, (size_t)nl, sizeof *launch, by_corr);
        if (l) k->launch = l->ts;
        json_t *op = op_of(evs, refs, nrefs, k->ext);
        /* the memsets and copies a GEMM or collective launches stay opaque */
        if (op && k->is_kernel && !coll_of(k->name, op, k, nranks_hint)) gemm_of(op, k);
        if ((rc = event_bound(path, k->idx, "", "the launching op's shapes give FLOPs =", k->flop,
                              TRACE_MAX_FLOP, err)) ||
            (rc = event_bound(path, k->idx, "", "the launching op's sizes give bytes =", k->bytes,
                              TRACE_MAX_BYTES, err)))
            goto fail;
    }
    if (kernel_context(kr, ranges, nr)) goto oom;
    /* steps numbered from the first one recorded */
    int first = -1;
    for (int i = 0; i < kr->nev; i++)
        if (kr->ev[i].iter >= 0 && (first < 0 || kr->ev[i].iter < first)) first = kr->ev[i].iter;
    for (int i = 0; i < kr->nev && first > 0; i++)
        if (kr->ev[i].iter >= 0) kr->ev[i].iter -= first;
    qsort(kr->ev, (size_t)kr->nev, sizeof *kr->ev, by_ts);
    /* a trace holds times up to TRACE_MAX_SECONDS from its first event */
    double t0 = kr->nev ? kr->ev[0].ts : 0;
    for (int i = 0; i < kr->nev; i++)
        t0 = fmin(t0, kr->ev[i].ts);
    for (int i = 0; i < kr->nev; i++)
        if ((rc = event_bound(path, kr->ev[i].idx, "ts",
                              "an end or launch (us) after the first GPU event of",
                              fmax(kr->ev[i].ts + kr->ev[i].dur, kr->ev[i].launch) - t0,
                              TRACE_MAX_SECONDS * 1e6, err)))
            goto fail;
    free(launch);
    free(ranges);
    free(refs);
    if (!kr->nev)
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, "traceEvents",
                             "no GPU events (kernel, gpu_memcpy, gpu_memset): was the profiler "
                             "run with ProfilerActivity.CUDA?");
    return TPS_OK;
oom:
    rc = tps_error_oom(err);
fail:
    free(launch);
    free(ranges);
    free(refs);
    return rc;
}

/* ------------------------------------------------------------------ writing */

static int by_rank(const void *a, const void *b)
{
    return ((const struct krank *)a)->rank - ((const struct krank *)b)->rank;
}

/* The index of the file that is global rank g (kr sorted by rank, ranks distinct), or -1. */
static int index_of(const struct krank *kr, int n, long long g)
{
    if (g < 0 || g > KIN_MAX_RANK) return -1;
    struct krank key = {.rank = (int)g};
    const struct krank *k = bsearch(&key, kr, (size_t)n, sizeof *kr, by_rank);
    return k ? (int)(k - kr) : -1;
}

/* The group of a collective: its process group's ranks when named, else every rank; -1 when out
 * of memory, -2 past KIN_MAX_GROUPS groups. */
static int group_of(struct mdl_program *p, const struct kev *k, const struct krank *kr)
{
    int members[1024], n = 0;
    if (json_is_array(k->pg_ranks) && json_array_size(k->pg_ranks) <= 1024) {
        size_t i;
        json_t *v;
        json_array_foreach(k->pg_ranks, i, v)
        {
            int m = index_of(kr, p->nranks, json_integer_value(v));
            if (m >= 0) members[n++] = m;
        }
    }
    if (!n)
        for (int r = 0; r < p->nranks && r < 1024; r++)
            members[n++] = r;
    for (int g = 0; g < p->ngroups; g++) {
        const struct mdl_group *G = &p->groups[g];
        if (G->n == n && !memcmp(G->ranks, members, (size_t)n * sizeof *members)) return g;
    }
    if (p->ngroups >= KIN_MAX_GROUPS) return -2;
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
    for (char *c = name; *c; c++) /* one token of the trace format: no blank, no control byte */
        if (!trace_name_byte_ok((unsigned char)*c) || *c == '#') *c = '_';
    if (!name[0]) snprintf(name, len, "kernel");
}

static int build_rank(struct mdl_program *p, int r, const struct krank *all,
                      struct kin_summary *sum, struct tps_error *err)
{
    const struct krank *kr = &all[r];
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
        if (coll) o.group = group_of(p, k, all);
        if (o.group == -2)
            return tps_error_set(err, TPS_EINVAL, kr->path, 0, 0, "Process Group Ranks",
                                 "more than %d distinct process groups: beyond the importer's "
                                 "bound",
                                 KIN_MAX_GROUPS);
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
        if (idx < 0) return tps_error_oom(err);
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

int kin_import(const char *const *files, int n, int rank, const char *out, const char *platform,
               struct kin_summary *sum, struct tps_error *err)
{
    memset(sum, 0, sizeof *sum);
    struct krank *kr = calloc((size_t)n + 1, sizeof *kr);
    if (!kr) return tps_error_oom(err);
    int rc = TPS_OK;
    for (int i = 0; i < n && !rc; i++) {
        kr[i].rank = n == 1 ? rank : -1;
        kr[i].path = files[i];
        rc = load_rank(files[i], &kr[i], n, err);
    }
    if (!rc) qsort(kr, (size_t)n, sizeof *kr, by_rank);
    for (int i = 1; i < n && !rc; i++)
        if (kr[i].rank == kr[i - 1].rank)
            rc = tps_error_set(err, TPS_EINVAL, kr[i].path, 0, 0, "distributedInfo.rank",
                               "two files say they are rank %d (the other: %s)", kr[i].rank,
                               kr[i - 1].path);
    struct mdl_program p;
    memset(&p, 0, sizeof p);
    if (!rc && mdl_program_init(&p, n) != 0) rc = tps_error_oom(err);
    int layers = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = build_rank(&p, i, kr, sum, err);
        for (int k = 0; k < kr[i].nev; k++)
            if (kr[i].ev[k].layer + 1 > layers) layers = kr[i].ev[k].layer + 1;
    }
    if (!rc && layers > TRACE_MAX_LAYERS)
        rc = tps_error_set(err, TPS_EINVAL, files[0], 0, 0, "user_annotation",
                           "an annotation names layer %d: a trace holds at most %d layers",
                           layers - 1, TRACE_MAX_LAYERS);
    if (!rc) {
        p.layers = layers > 0 ? layers : 1;
        p.micro_batches = 1;
        sum->nranks = n;
        struct mdl_check_at at;
        rc = mdl_program_check(&p, &at, err);
        if (rc && !err->path[0]) /* name the file of the rank the check found at fault */
            snprintf(err->path, sizeof err->path, "%s",
                     at.rank >= 0 && at.rank < n ? kr[at.rank].path : files[0]);
        if (!rc && (rc = trace_write(&p, platform, out, err)) && !err->path[0])
            snprintf(err->path, sizeof err->path, "%s", out);
    }
    mdl_program_release(&p);
    for (int i = 0; i < n; i++) {
        free(kr[i].ev);
        json_decref(kr[i].doc);
    }
    free(kr);
    return rc;
}
