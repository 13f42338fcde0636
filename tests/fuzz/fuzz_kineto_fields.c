/* fuzz_kineto_fields.c - libFuzzer target: PyTorch profiler traces built field by field from the
 * input, so that every field the importer reads takes values of each kind its type allows
 * (ranks, correlation and External ids, times, sizes, dtypes, shapes, process groups, names with
 * separators and control bytes, ProfilerStep and layer annotations), where fuzz_kineto's raw JSON
 * rarely reaches past the syntax. One or two ranks, imported as `tpsim import kineto` does. */
#include <jansson.h>

#include "fuzz.h"
#include "validate/kineto.h"

struct bytes {
    const uint8_t *p;
    size_t n;
};

static unsigned take(struct bytes *b)
{
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static int flag(struct bytes *b)
{
    return take(b) & 1;
}

static json_t *integer(struct bytes *b)
{
    static const json_int_t v[] = {0,
                                   1,
                                   2,
                                   3,
                                   7,
                                   -1,
                                   64,
                                   1048575,
                                   1048576,
                                   2147483647,
                                   -2147483647 - 1,
                                   1000000000,
                                   100000001,
                                   (json_int_t)1 << 53};
    return json_integer(v[take(b) % (sizeof v / sizeof v[0])]);
}

static json_t *number(struct bytes *b)
{
    static const double v[] = {
        0,    1,      5,  12.5,   100,   1e3,    1e6,      1e12,
        1e15, 1.7e15, -1, -1e300, 1e300, 1e-300, 4.9e-324, 9007199254740993.0,
        1e308};
    unsigned k = take(b);
    if (k & 0x80) return integer(b);
    return json_real(v[k % (sizeof v / sizeof v[0])]);
}

static json_t *string(struct bytes *b)
{
    static const char *const v[] = {"aten::mm",
                                    "aten::addmm",
                                    "aten::bmm",
                                    "aten::baddbmm",
                                    "aten::linear",
                                    "aten::matmul",
                                    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                                    "ncclKernel_AllGather_RING_LL_Sum_int8_t",
                                    "ncclDevKernel_ReduceScatter_Sum_f32",
                                    "ncclDevKernel_Broadcast_RING",
                                    "ncclDevKernel_Reduce",
                                    "ncclDevKernel_SendRecv",
                                    "ncclDevKernel_AllToAll",
                                    "ProfilerStep#3",
                                    "ProfilerStep#-9",
                                    "ProfilerStep#99999999999",
                                    "layer 3 forward",
                                    "Layer12 backward",
                                    "layer",
                                    "fwd bwd",
                                    "autograd::engine::evaluate_function",
                                    "void gemm<(anonymous namespace)::x>(int)",
                                    "evil\n0 0 compute fwd 0 -1 x 1 0 0 -1 - 0 0 0 0 0 0\r",
                                    "\x1b[31mred",
                                    "#comment",
                                    "",
                                    "a b\tc",
                                    "memset (Device)",
                                    "Memcpy HtoD",
                                    "BFloat16",
                                    "c10::Half",
                                    "float",
                                    "Float8_e4m3fn",
                                    "double",
                                    "long int",
                                    "bool",
                                    "kernel",
                                    "gpu_memcpy",
                                    "gpu_memset",
                                    "cuda_runtime",
                                    "cuda_driver",
                                    "cpu_op",
                                    "user_annotation",
                                    "gpu_user_annotation",
                                    "X",
                                    "B",
                                    "i"};
    return json_string(v[take(b) % (sizeof v / sizeof v[0])]);
}

/* A value of any kind: what a field of the wrong type gets. */
static json_t *any(struct bytes *b, int depth)
{
    switch (take(b) % 6) {
    case 0:
        return integer(b);
    case 1:
        return number(b);
    case 2:
        return string(b);
    case 3:
        return json_null();
    case 4: {
        json_t *a = json_array();
        for (unsigned i = 0, k = take(b) % 5; depth < 3 && i < k; i++)
            json_array_append_new(a, any(b, depth + 1));
        return a;
    }
    default:
        return json_object();
    }
}

/* Shapes ("Input Dims"): a list of lists of dimensions. */
static json_t *dims(struct bytes *b)
{
    json_t *a = json_array();
    for (unsigned i = 0, n = take(b) % 4; i < n; i++) {
        json_t *d = json_array();
        for (unsigned k = 0, m = take(b) % 5; k < m; k++)
            json_array_append_new(d, flag(b) ? integer(b) : any(b, 2));
        json_array_append_new(a, d);
    }
    return a;
}

static const char *const arg_keys[] = {"correlation",         "External id", "stream",
                                       "In msg nelems",       "dtype",       "Group size",
                                       "Process Group Ranks", "Input Dims",  "Input type"};

static json_t *event(struct bytes *b)
{
    static const char *const cats[] = {"kernel",          "gpu_memcpy",          "gpu_memset",
                                       "cuda_runtime",    "cuda_driver",         "cpu_op",
                                       "user_annotation", "gpu_user_annotation", "python_function"};
    json_t *e = json_object(), *args = json_object();
    json_object_set_new(e, "ph", json_string(take(b) % 8 ? "X" : "B"));
    json_object_set_new(e, "cat", json_string(cats[take(b) % (sizeof cats / sizeof cats[0])]));
    json_object_set_new(e, "name", flag(b) ? string(b) : any(b, 0));
    if (take(b) % 8) json_object_set_new(e, "ts", number(b));
    if (take(b) % 4) json_object_set_new(e, "dur", number(b));
    unsigned mask = take(b) | take(b) << 8;
    for (size_t k = 0; k < sizeof arg_keys / sizeof arg_keys[0]; k++) {
        if (!(mask >> k & 1)) continue;
        json_t *v;
        if (k == 7)
            v = dims(b);
        else if (k == 4)
            v = string(b);
        else if (k == 6 || k == 8) {
            v = json_array();
            for (unsigned i = 0, m = take(b) % 5; i < m; i++)
                json_array_append_new(v, k == 6 ? integer(b) : string(b));
        } else
            v = flag(b) ? integer(b) : number(b);
        json_object_set_new(args, arg_keys[k], v);
    }
    json_object_set_new(e, "args", args);
    return e;
}

static const char *rank_file(struct bytes *b, const char *name)
{
    json_t *root = json_object(), *evs = json_array();
    if (take(b) % 4) {
        json_t *di = json_object();
        json_object_set_new(di, "rank", flag(b) ? integer(b) : any(b, 1));
        json_object_set_new(root, "distributedInfo", di);
    }
    for (unsigned i = 0, n = 1 + take(b) % 48; i < n && b->n; i++)
        json_array_append_new(evs, event(b));
    json_object_set_new(root, "traceEvents", evs);
    static char path[2][600];
    char *p = path[name[1] == '1'];
    snprintf(p, sizeof path[0], "%s/%s.json", fuzz_scratch(), name);
    if (json_dump_file(root, p, 0) != 0) abort();
    json_decref(root);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct bytes b = {data, n};
    int ranks = 1 + flag(&b);
    const char *files[2];
    files[0] = rank_file(&b, "r0");
    if (ranks > 1) files[1] = rank_file(&b, "r1");
    static char out[600];
    snprintf(out, sizeof out, "%s/out", fuzz_scratch());
    struct kin_summary s;
    struct tps_error err = {0};
    kin_import(files, ranks, ranks == 1 && flag(&b) ? (int)take(&b) : -1, out, NULL, &s, &err);
    return 0;
}
