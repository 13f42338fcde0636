/* test_kind.c - the strategy kind table: a toy kind registered from this file alone (no edit
 * under models/) is parsed, checked, described, sized and lowered like a built-in one. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "models/collective.h"
#include "models/kind.h"

/* The toy: every rank of the group holds the whole layer and runs it on 1/tp of the
 * micro-batch (data parallelism inside the group); each sublayer is one h x h GEMM forward, its
 * input- and weight-gradient GEMMs backward, and the weight gradient all-reduced over the group
 * right after. */
static void toy_mesh(const struct mdl_strategy *st, int *d1, int *d2)
{
    *d1 = st->tp;
    *d2 = 1;
}

static int toy_check(const struct mdl_strategy *st, const struct mdl_model *m, long *deg,
                     struct tps_error *err)
{
    if (m->micro_batch % st->tp)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "tp",
                             "must divide model.micro_batch (%ld)", m->micro_batch);
    *deg = 1; /* nothing is split */
    return TPS_OK;
}

static void toy_describe(const struct mdl_strategy *st, const char *opts, char *buf, size_t len)
{
    snprintf(buf, len, "toy tp=%d (replicas)%s", st->tp, opts);
}

static double toy_shards(const struct mdl_strategy *st)
{
    (void)st;
    return 1;
}

static void toy_fwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    lw_gemm(L, MDL_OP_GEMM, "toy_fwd", 1, D.bs / L->d1, D.h, D.h);
}

static void toy_bwd(struct mdl_lower *L)
{
    struct mdl_dims D = lw_dims(L);
    lw_gemm(L, MDL_OP_GEMM, "toy_dgrad", 1, D.bs / L->d1, D.h, D.h);
    int w = lw_gemm(L, MDL_OP_GEMM, "toy_wgrad", 1, D.h, D.h, D.bs / L->d1);
    lw_coll_on(L, MDL_OP_ALL_REDUCE, "toy_ar_wgrad", D.h * D.h, w, LW_AXIS_D1, 0);
}

static void toy_nothing(struct mdl_lower *L)
{
    (void)L;
}

static int toy_kind = -1;

/* The planner's one toy candidate: the whole group as replicas. */
static int toy_candidates(enum mdl_strategy_kind self, const struct mdl_strategy *base, bool sp,
                          mdl_strategy_add add, void *ctx)
{
    (void)sp;
    struct mdl_strategy st = mdl_strategy_candidate(base, self);
    return add(ctx, &st);
}

static const struct mdl_kind toy = {
    .name = "toy",
    .candidates = toy_candidates,
    .mesh = toy_mesh,
    .check = toy_check,
    .describe = toy_describe,
    .param_shards = toy_shards,
    .attn_fwd = toy_fwd,
    .mlp_fwd = toy_fwd,
    .mlp_bwd = toy_bwd,
    .attn_bwd = toy_bwd,
    .embedding = toy_nothing,
    .logits = toy_nothing,
};

static void register_toy(void)
{
    toy_kind = mdl_kind_register(&toy);
}

TestSuite(kind, .init = register_toy);

static struct mdl_model model(void)
{
    struct mdl_model m;
    mdl_model_preset("gpt3-1.3b", &m);
    m.micro_batch = 8;
    return m;
}

Test(kind, a_registered_kind_is_named_and_parsed_like_a_built_in_one)
{
    cr_assert(eq(int, toy_kind, MDL_STRAT_TP3D + 1));
    cr_assert(eq(str, (char *)mdl_strategy_kind_name((enum mdl_strategy_kind)toy_kind), "toy"));
    enum mdl_strategy_kind k;
    cr_assert(eq(int, mdl_strategy_kind_parse("toy", &k), 0));
    cr_assert(eq(int, (int)k, toy_kind));
    /* names are unique: the toy again, or a built-in name, are refused */
    cr_assert(eq(int, mdl_kind_register(&toy), -1));
    struct mdl_kind clash = toy;
    clash.name = "primepar";
    cr_assert(eq(int, mdl_kind_register(&clash), -1));
}

Test(kind, the_common_checks_run_around_the_kinds_own)
{
    struct mdl_model m = model();
    struct mdl_strategy st = {.kind = (enum mdl_strategy_kind)toy_kind, .tp = 4};
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_strategy_check(&st, &m, &err), TPS_OK), "%s", err.msg);
    st.tp = 3; /* the toy's own check */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), TPS_OK));
    cr_assert(eq(str, err.field, "tp"));
    cr_assert(not(eq(ptr, strstr(err.msg, "micro_batch"), NULL)), "%s", err.msg);
    err = (struct tps_error){0};
    st.tp = 0; /* the common range check, before the kind's */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), TPS_OK));
    cr_assert(eq(str, err.msg, "must be at least 1"));
    st.tp = 4;
    err = (struct tps_error){0};
    st.sublayer.attention_tp = 2; /* a key of another kind */
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), TPS_OK));
    cr_assert(eq(str, err.field, "attention_tp"));
    st.sublayer.attention_tp = 0;
    st.primepar.ring = 2;
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_strategy_check(&st, &m, &err), TPS_OK));
    cr_assert(eq(str, err.field, "ring"));
}

Test(kind, its_description_and_memory_come_from_its_row)
{
    struct mdl_model m = model();
    struct mdl_strategy st = {
        .kind = (enum mdl_strategy_kind)toy_kind, .tp = 4, .async_grad_allreduce = true};
    char buf[128];
    mdl_strategy_describe(&st, buf, sizeof buf);
    cr_assert(eq(str, buf, "toy tp=4 (replicas)"));
    st.recompute = true;
    mdl_strategy_describe(&st, buf, sizeof buf);
    cr_assert(eq(str, buf, "toy tp=4 (replicas) +recompute"));
    /* every rank holds the whole layer */
    double whole = mdl_model_sublayer_params(&m, 0) + mdl_model_sublayer_params(&m, 1);
    cr_assert(ieee_ulp_eq(dbl, mdl_strategy_layer_params(&st, &m), whole, 4));
}

Test(kind, it_lowers_through_the_common_driver_with_one_group_per_axis)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    mdl_device_preset("A100-80GB", &dev);
    struct mdl_strategy st = {
        .kind = (enum mdl_strategy_kind)toy_kind, .tp = 4, .async_grad_allreduce = true};
    struct mdl_program p;
    struct tps_error err = {0};
    int layers = 2, mbs = 3;
    cr_assert(eq(int, mdl_strategy_lower(&st, &m, &dev, NULL, layers, mbs, &p, &err), 0), "%s",
              err.msg);
    double h = (double)m.hidden, tok = (double)m.micro_batch * (double)m.seq / st.tp;
    for (int r = 0; r < st.tp; r++) {
        const struct mdl_rank *rk = &p.ranks[r];
        /* per layer and micro-batch: 2 forward GEMMs, 4 backward GEMMs, 2 all-reduces */
        cr_assert(eq(int, rk->nops, layers *mbs * 8), "rank %d: %d ops", r, rk->nops);
        int colls = 0;
        for (int i = 0; i < rk->nops; i++) {
            const struct mdl_op *op = &rk->ops[i];
            if (op->kind == MDL_OP_GEMM) cr_assert(ieee_ulp_eq(dbl, op->flop, 2 * tok * h * h, 4));
            if (op->kind != MDL_OP_ALL_REDUCE) continue;
            colls++;
            cr_assert(eq(int, p.groups[op->group].n, st.tp));
            cr_assert(ieee_ulp_eq(dbl, op->bytes, h * h * mdl_dtype_bytes(m.dtype), 4));
            cr_assert(eq(int, op->ndeps, 1)); /* after its weight-gradient GEMM */
            cr_assert(eq(int, rk->ops[op->deps[0]].kind, MDL_OP_GEMM));
        }
        cr_assert(eq(int, colls, 2 * layers * mbs));
    }
    cr_assert(eq(dbl, mdl_strategy_ops(&st, &m, &dev, NULL, layers, mbs),
                 (double)(st.tp * layers * mbs * 8)));
    mdl_program_release(&p);
}

/* Collects the planner's candidates. */
struct seen {
    int n, toy, at_toy, sublayer, sp;
};

static int see(void *ctx, const struct mdl_strategy *st)
{
    struct seen *s = ctx;
    if ((int)st->kind == toy_kind) {
        s->toy++;
        s->at_toy = s->n;
    }
    if (st->sublayer.attention_tp) s->sublayer++;
    if (st->sequence_parallel) s->sp++;
    s->n++;
    return 0;
}

static int stop_at_third(void *ctx, const struct mdl_strategy *st)
{
    (void)st;
    return ++*(int *)ctx == 3 ? 7 : 0;
}

Test(kind, the_planner_asks_every_row_for_its_candidates_the_toy_last)
{
    struct mdl_strategy base = {.kind = MDL_STRAT_1D, .tp = 4, .atp.d1 = 4, .atp.d2 = 1};
    struct seen s = {0};
    cr_assert(eq(int, mdl_strategy_candidates(&base, true, see, &s), 0));
    cr_assert(eq(int, s.toy, 1));
    cr_assert(eq(int, s.at_toy, s.n - 1), "registered after the built-in kinds");
    /* 1D: sp x chunks x Oases = 16, and the per-sublayer plans: (3 x 3 - 1) x 2 = 16 */
    cr_assert(eq(int, s.sp, 8));
    cr_assert(eq(int, s.sublayer, 16));
    struct seen none = {0};
    cr_assert(eq(int, mdl_strategy_candidates(&base, false, see, &none), 0));
    cr_assert(eq(int, none.sp, 0));
    cr_assert(eq(int, none.n, s.n - 8));
    int k = 0;
    cr_assert(eq(int, mdl_strategy_candidates(&base, true, stop_at_third, &k), 7), "add stops it");
    cr_assert(eq(int, k, 3));
}
