/* test_job.c - whole jobs: schedules, model FLOPs, memory per GPU, the lowered program. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/compute.h"
#include "models/device.h"
#include "models/job.h"

static struct mdl_model model(void)
{
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("gpt3-1.3b", &m), 0));
    return m;
}

static struct mdl_strategy tp_of(int tp)
{
    return (struct mdl_strategy){
        .kind = MDL_STRAT_1D, .tp = tp, .chunks = 1, .async_grad_allreduce = true};
}

/* "F0 F1 B0 ..." of stage s */
static void order(const struct mdl_job *j, int s, char *buf, size_t len)
{
    int n = 2 * j->virtual_stages * j->micro_batches;
    struct mdl_job_step *st = malloc((size_t)n * sizeof *st);
    mdl_job_schedule(j, s, st);
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%c%d", i ? " " : "",
                              st[i].phase == MDL_PHASE_FWD ? 'F' : 'B', st[i].mb);
    free(st);
}

Test(job, one_f_one_b_warms_up_p_minus_s_minus_1_forwards_then_alternates)
{
    struct mdl_job j = {
        .pp = 4, .dp = 1, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 6};
    char buf[256];
    order(&j, 0, buf, sizeof buf);
    cr_assert(eq(str, buf, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5"));
    order(&j, 3, buf, sizeof buf);
    cr_assert(eq(str, buf, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5"));
    /* micro-batches in flight: p - s on stage s, all of them in GPipe */
    for (int s = 0; s < 4; s++)
        cr_assert(eq(int, mdl_job_in_flight(&j, s), 4 - s));
    j.schedule = MDL_SCHED_GPIPE;
    order(&j, 1, buf, sizeof buf);
    cr_assert(eq(str, buf, "F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5"));
    cr_assert(eq(int, mdl_job_in_flight(&j, 1), 6));
}

Test(job, interleaving_runs_chunks_in_groups_of_p_and_keeps_more_in_flight)
{
    struct mdl_job j = {.pp = 2,
                        .dp = 1,
                        .schedule = MDL_SCHED_INTERLEAVED,
                        .virtual_stages = 2,
                        .micro_batches = 4};
    int n = 2 * 2 * 4;
    struct mdl_job_step st[16];
    mdl_job_schedule(&j, 0, st);
    /* warm-up 2(p - s - 1) + (v - 1)p = 4 forwards: chunk 0 of mb 0, 1, then chunk 1 of mb 0, 1 */
    int want[][3] = {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {0, 0, 2}, {1, 1, 0}};
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(int, st[i].phase == MDL_PHASE_BWD, want[i][0]), "step %d", i);
        cr_assert(eq(int, st[i].chunk, want[i][1]), "step %d", i);
        cr_assert(eq(int, st[i].mb, want[i][2]), "step %d", i);
    }
    int f = 0, b = 0;
    for (int i = 0; i < n; i++)
        *(st[i].phase == MDL_PHASE_FWD ? &f : &b) += 1;
    cr_assert(eq(int, f, 8));
    cr_assert(eq(int, b, 8));
    cr_assert(eq(int, mdl_job_in_flight(&j, 0), 5)); /* chunks of half a stage's layers */
}

Test(job, the_peak_in_flight_is_what_walking_the_schedule_finds)
{
    static struct mdl_job_step steps[2 * 8 * 64];
    for (int sched = MDL_SCHED_1F1B; sched <= MDL_SCHED_INTERLEAVED; sched++)
        for (int p = 1; p <= 8; p++)
            for (int v = 1; v <= (sched == MDL_SCHED_INTERLEAVED ? 8 : 1); v++)
                for (int M = 1; M <= 64; M++) {
                    if (sched == MDL_SCHED_INTERLEAVED && (p < 2 || v < 2 || M % p)) continue;
                    struct mdl_job j = {.pp = p,
                                        .dp = 1,
                                        .schedule = (enum mdl_schedule)sched,
                                        .virtual_stages = v,
                                        .micro_batches = M};
                    for (int s = 0; s < p; s++) {
                        mdl_job_schedule(&j, s, steps);
                        int live = 0, peak = 0;
                        for (int k = 0; k < 2 * v * M; k++) {
                            live += steps[k].phase == MDL_PHASE_FWD ? 1 : -1;
                            if (live > peak) peak = live;
                        }
                        cr_assert(eq(int, mdl_job_in_flight(&j, s), peak),
                                  "schedule %d p %d v %d M %d stage %d", sched, p, v, M, s);
                    }
                }
}

Test(job, model_flops_are_megatrons_count_and_ignore_the_parallelism)
{
    struct mdl_model m = model();
    double b = 1, s = 2048, h = 2048, l = 24, v = 51200;
    /* Narayanan et al. 2021: 72 b s l h^2 (1 + s/6h + V/12hl) per micro-batch */
    double per_mb = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l));
    struct mdl_job a = {.pp = 1, .dp = 1, .virtual_stages = 1, .micro_batches = 16};
    struct mdl_job c = {.pp = 4, .dp = 4, .virtual_stages = 1, .micro_batches = 4};
    cr_assert(fabs(mdl_job_model_flop(&a, &m) / (16 * per_mb) - 1) < 1e-12);
    cr_assert(fabs(mdl_job_model_flop(&c, &m) / (16 * per_mb) - 1) < 1e-12);
}

Test(job, memory_keeps_p_micro_batches_on_the_first_stage_and_shards_the_optimizer)
{
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(2);
    struct mdl_framework fw = {0};
    struct mdl_job j = {
        .pp = 4, .dp = 2, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 8};
    struct mdl_memory mem, dist;
    mdl_job_memory(&j, &st, &m, &fw, &mem);
    double act, input;
    mdl_strategy_layer_activations(&st, &m, &fw, &act, &input);
    double bsh = 2048.0 * 2048, emb_out = 2 * bsh; /* the first stage's embedding output */
    cr_assert(fabs(mem.activations - (4 * 6 * act + emb_out)) < 1, "%g", mem.activations);
    double params = 6 * mdl_strategy_layer_params(&st, &m) + 51200.0 * 2048 / 2;
    cr_assert(fabs(mem.weights - 2 * params) < 1);
    cr_assert(fabs(mem.optimizer - 12 * params) < 1);
    j.zero = 1;
    mdl_job_memory(&j, &st, &m, &fw, &dist);
    cr_assert(fabs(dist.optimizer - 6 * params) < 1);
}

Test(job, lowering_places_tp_fastest_and_pairs_every_send_with_a_receive)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {
        .pp = 2, .dp = 2, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 3};
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_lower(&j, &st, &m, &dev, NULL, NULL, MDL_REPLICAS_FULL, &p, &err), 0),
              "%s", err.msg);
    cr_assert(eq(int, p.nranks, 8));
    cr_assert(eq(int, mdl_program_check(&p, NULL, &err), 0), "%s", err.msg);
    cr_assert(eq(int, mdl_job_rank(&j, &st, 1, 1, 0), 6));
    double act = 2048.0 * 2048 * 2 / 2; /* b s h bytes / tp */
    int sends = 0, recvs = 0, dp_ar = 0;
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < p.ranks[r].nops; i++) {
            const struct mdl_op *o = &p.ranks[r].ops[i];
            if (o->kind == MDL_OP_SEND_RECV) {
                cr_assert(eq(dbl, o->bytes, act));
                const struct mdl_group *g = &p.groups[o->group];
                int peer = g->ranks[0] == r ? g->ranks[1] : g->ranks[0];
                cr_assert(eq(int, abs(peer - r), 4), "stage neighbours are tp x dp apart");
                if (g->ranks[0] == r)
                    sends++;
                else
                    recvs++;
            }
            if (o->kind == MDL_OP_ALL_REDUCE && o->stream == MDL_STREAM_DP &&
                p.groups[o->group].n == 2 &&
                p.groups[o->group].ranks[1] - p.groups[o->group].ranks[0] == 2)
                dp_ar++;
        }
    }
    cr_assert(eq(int, sends, recvs));
    cr_assert(eq(int, sends, 8 * 3 * 1)); /* each GPU: 3 micro-batches one way */
    cr_assert(eq(int, dp_ar, 8), "every GPU all-reduces its gradients with its other replica");
    double total = 0;
    for (int r = 0; r < 8; r++)
        total += p.ranks[r].nops;
    cr_assert(fabs(mdl_job_ops(&j, &st, &m, &dev, NULL, NULL) / total - 1) < 0.02);
    cr_assert(fabs(p.model_flop - mdl_job_model_flop(&j, &m)) < 1);
    mdl_program_release(&p);
}

Test(job, check_names_what_does_not_fit)
{
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(2);
    struct tps_error err = {0};
    struct mdl_job j = {.pp = 5, .dp = 1, .virtual_stages = 1, .micro_batches = 4};
    cr_assert(ne(int, mdl_job_check(&j, &st, &m, &err), 0));
    cr_assert(eq(str, err.field, "pp"));
    j = (struct mdl_job){.pp = 4,
                         .dp = 1,
                         .schedule = MDL_SCHED_INTERLEAVED,
                         .virtual_stages = 2,
                         .micro_batches = 6};
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_job_check(&j, &st, &m, &err), 0));
    cr_assert(eq(str, err.field, "micro_batches"), "%s", err.msg);
    j.schedule = MDL_SCHED_1F1B;
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_job_check(&j, &st, &m, &err), 0));
    cr_assert(eq(str, err.field, "virtual_stages"));
}

/* Lowers j on A100s, every replica in full, and checks the program. */
/* Whether op `to` of a rank waits, through its dependencies or its stream's order, for op
 * `from`. */
static bool reaches(const struct mdl_rank *rk, int to, int from, char *seen)
{
    if (to == from) return true;
    if (to < from || seen[to]) return false;
    seen[to] = 1;
    for (int k = 0; k < rk->ops[to].ndeps; k++)
        if (reaches(rk, rk->ops[to].deps[k], from, seen)) return true;
    for (int i = to - 1; i >= from; i--)
        if (rk->ops[i].stream == rk->ops[to].stream) return reaches(rk, i, from, seen);
    return false;
}

static bool waits_for(const struct mdl_rank *rk, int to, int from)
{
    char *seen = calloc((size_t)rk->nops, 1);
    cr_assert(ne(ptr, seen, NULL));
    bool r = reaches(rk, to, from, seen);
    free(seen);
    return r;
}

/* Megatron-LM's point-to-point calls block (p2p_communication.py): a receive is posted at the
 * call after the step before it, not ahead, the next step's compute waits for every send of
 * the call, and the host for the device. 1F1B sends and then receives between steps of the same
 * direction; the interleaved schedule sends a steady-state forward's output only after the backward
 * that follows it. */
Test(job, point_to_point_calls_block_as_megatrons)
{
    struct mdl_model m = model();
    m.layers = 8;
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct mdl_strategy st = tp_of(1);
    for (int sched = 0; sched < 2; sched++) {
        struct mdl_job j = {.pp = 2,
                            .dp = 1,
                            .schedule = sched ? MDL_SCHED_INTERLEAVED : MDL_SCHED_1F1B,
                            .virtual_stages = sched ? 2 : 1,
                            .micro_batches = 4};
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(
            eq(int, mdl_job_lower(&j, &st, &m, &dev, NULL, NULL, MDL_REPLICAS_FULL, &p, &err), 0),
            "%s", err.msg);
        int sends = 0, recvs = 0, seq = 0, late = 0, syncs = 0;
        for (int r = 0; r < 2; r++) {
            const struct mdl_rank *rk = &p.ranks[r];
            int last_send = -1, last_compute = -1;
            for (int i = 0; i < rk->nops; i++) {
                const struct mdl_op *o = &rk->ops[i];
                const char *name = p.names[o->name];
                if (!strcmp(name, "wait_p2p")) {
                    cr_assert(o->host_sync, "the host waits for the call (device synchronize)");
                    syncs++;
                }
                if (o->kind == MDL_OP_SEND_RECV && !strncmp(name, "recv", 4)) {
                    recvs++;
                    if (last_compute >= 0)
                        cr_assert(waits_for(rk, i, last_compute), "%s posted ahead", name);
                    seq += last_send > last_compute && waits_for(rk, i, last_send);
                } else if (o->kind == MDL_OP_SEND_RECV) {
                    sends++;
                    last_send = i;
                    /* a steady forward's output leaves after the next backward ran */
                    late += o->phase == MDL_PHASE_FWD && rk->ops[o->deps[0]].phase == MDL_PHASE_BWD;
                } else if (o->stream == MDL_STREAM_COMPUTE && o->dur_s > 0 &&
                           o->phase != MDL_PHASE_OTHER) {
                    if (last_send >= 0)
                        cr_assert(waits_for(rk, i, last_send),
                                  "%s runs under a send (sched %d rank %d op %d, send %d)", name,
                                  sched, r, i, last_send);
                    last_compute = i;
                }
            }
        }
        cr_assert(eq(int, sends, recvs));
        cr_assert(eq(int, sends, 2 * j.micro_batches * (sched ? 3 : 1)));
        cr_assert(gt(int, syncs, j.micro_batches), "a call between steps");
        if (sched) {
            cr_assert(eq(int, seq, 0), "interleaved: every call is one batch");
            cr_assert(gt(int, late, 0));
        } else {
            cr_assert(gt(int, seq, 0), "1F1B: send, then receive, in the warm-up");
            cr_assert(eq(int, late, 0));
        }
        mdl_program_release(&p);
    }
}

static void lower_checked(const struct mdl_job *j, const struct mdl_strategy *st,
                          const struct mdl_model *m, struct mdl_program *p)
{
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_lower(j, st, m, &dev, NULL, NULL, MDL_REPLICAS_FULL, p, &err), 0),
              "%s", err.msg);
    cr_assert(eq(int, mdl_program_check(p, NULL, &err), 0), "%s", err.msg);
}

/* A two-stage job of gpt3-1.3b cut to 8 layers, TP 1, 4 micro-batches: 1F1B, or interleaved over
 * 2 chunks a stage. */
static struct mdl_job pipe_job(bool interleaved)
{
    return (struct mdl_job){.pp = 2,
                            .dp = 1,
                            .schedule = interleaved ? MDL_SCHED_INTERLEAVED : MDL_SCHED_1F1B,
                            .virtual_stages = interleaved ? 2 : 1,
                            .micro_batches = 4};
}

/* Lowers pipe_job's kind of job j into *p (checked). */
static void lower_pipe(const struct mdl_job *j, struct mdl_program *p)
{
    struct mdl_model m = model();
    m.layers = 8;
    struct mdl_strategy st = tp_of(1);
    lower_checked(j, &st, &m, p);
}

/* batch_p2p_sync: false (NeMo's sync_batch_comm: false): the calls stay batched, every compute
 * after a call still waits for its messages, but no call synchronizes the device. */
Test(job, batched_calls_without_the_device_synchronize)
{
    for (int sched = 0; sched < 2; sched++) {
        struct mdl_job j = pipe_job(sched);
        j.batch_p2p_nosync = true;
        struct mdl_program p;
        lower_pipe(&j, &p);
        int waits = 0;
        for (int r = 0; r < 2; r++) {
            const struct mdl_rank *rk = &p.ranks[r];
            int last_send = -1;
            for (int i = 0; i < rk->nops; i++) {
                const struct mdl_op *o = &rk->ops[i];
                if (!strcmp(p.names[o->name], "wait_p2p")) {
                    cr_assert(not(o->host_sync), "op %d of rank %d", i, r);
                    waits++;
                }
                if (o->kind == MDL_OP_SEND_RECV && strncmp(p.names[o->name], "recv", 4))
                    last_send = i;
                else if (o->stream == MDL_STREAM_COMPUTE && o->dur_s > 0 &&
                         o->phase != MDL_PHASE_OTHER && last_send >= 0)
                    cr_assert(waits_for(rk, i, last_send), "batched: op %d waits for %d", i,
                              last_send);
            }
        }
        cr_assert(gt(int, waits, j.micro_batches));
        mdl_program_release(&p);
    }
}

/* Megatron-LM's --overlap-p2p-communication (the interleaved schedule): a step's send and the
 * next same-direction step's receive are posted as soon as the step computes, unbatched; only
 * that next step waits for them and the host never synchronizes, so the step of the other
 * direction in between runs under them. With the batched calls every compute after a send waits
 * for it, so each check below fails there. */
Test(job, overlapped_point_to_point_runs_under_the_other_direction_as_megatrons)
{
    struct mdl_job j = pipe_job(true);
    j.overlap_p2p_comm = true;
    struct mdl_program p;
    lower_pipe(&j, &p);
    int sends = 0, recvs = 0, waits = 0, under = 0, ahead = 0;
    for (int r = 0; r < 2; r++) {
        const struct mdl_rank *rk = &p.ranks[r];
        for (int i = 0; i < rk->nops; i++) {
            const struct mdl_op *o = &rk->ops[i];
            const char *name = p.names[o->name];
            if (!strcmp(name, "wait_p2p")) {
                cr_assert(not(o->host_sync), "no device synchronize (op %d of rank %d)", i, r);
                waits++;
            }
            if (o->kind != MDL_OP_SEND_RECV) continue;
            bool send = strncmp(name, "recv", 4) != 0;
            sends += send;
            recvs += !send;
            /* posted right after its own direction's compute: a forward's after a forward */
            const struct mdl_op *after = &rk->ops[o->deps[0]];
            if (send) cr_assert(eq(int, after->phase, o->phase), "%s after its step", name);
            /* the next compute of the other direction does not wait for it; a later compute of
             * its own direction does */
            int other = -1, own = -1;
            for (int k = i + 1; k < rk->nops && (other < 0 || own < 0); k++) {
                const struct mdl_op *c = &rk->ops[k];
                if (c->stream != MDL_STREAM_COMPUTE || !(c->dur_s > 0) ||
                    c->phase == MDL_PHASE_OTHER)
                    continue;
                if (c->phase != o->phase && other < 0 && own < 0) other = k;
                if (c->phase == o->phase && own < 0) own = k;
            }
            if (other >= 0) {
                cr_assert(not(waits_for(rk, other, i)), "%s (op %d, rank %d) holds op %d", name, i,
                          r, other);
                under++;
                ahead += !send; /* a receive posted before the step in between */
            }
            if (own >= 0) cr_assert(waits_for(rk, own, i), "%s (op %d) is waited for", name, i);
        }
    }
    cr_assert(eq(int, sends, recvs));
    cr_assert(eq(int, sends, 2 * j.micro_batches * 3));
    cr_assert(gt(int, waits, j.micro_batches));
    cr_assert(gt(int, under, j.micro_batches), "the steady state overlaps");
    cr_assert(gt(int, ahead, 0), "receives posted a step ahead");
    mdl_program_release(&p);
    /* refused with the other schedules, as Megatron-LM turns it off there */
    j.schedule = MDL_SCHED_1F1B;
    j.virtual_stages = 1;
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(1);
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "overlap_p2p_comm"));
}

/* 2 stages x 2 replicas, 1F1B, 3 micro-batches, ZeRO stage `zero`. */
static struct mdl_job small_job(int zero)
{
    return (struct mdl_job){.pp = 2,
                            .dp = 2,
                            .schedule = MDL_SCHED_1F1B,
                            .virtual_stages = 1,
                            .micro_batches = 3,
                            .zero = zero};
}

/* Lowers j and counts, over all ranks, the ops named `name` and their FLOPs. */
static int count_ops(const struct mdl_job *j, const struct mdl_strategy *st,
                     const struct mdl_model *m, const char *name, double *flop, int *stream)
{
    struct mdl_program p;
    lower_checked(j, st, m, &p);
    int n = 0;
    *flop = 0;
    for (int r = 0; r < p.nranks; r++)
        for (int i = 0; i < p.ranks[r].nops; i++)
            if (!strcmp(p.names[p.ranks[r].ops[i].name], name)) {
                n++;
                *flop += p.ranks[r].ops[i].flop;
                *stream = p.ranks[r].ops[i].stream;
            }
    mdl_program_release(&p);
    return n;
}

Test(job, the_last_stage_alone_runs_the_logits_and_the_distributed_optimizer_shards_the_update)
{
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {
        .pp = 2, .dp = 2, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 3};
    double flop;
    int stream;
    /* 2 GPUs of the last stage in each of 2 replicas, 3 micro-batches, 2 b s h V / tp each */
    cr_assert(eq(int, count_ops(&j, &st, &m, "logits", &flop, &stream), 2 * 2 * 3));
    cr_assert(fabs(flop / (12 * 2.0 * 2048 * 2048 * 51200 / 2) - 1) < 1e-12);
    cr_assert(eq(int, count_ops(&j, &st, &m, "embedding", &flop, &stream), 2 * 2 * 3));
    cr_assert(eq(int, count_ops(&j, &st, &m, "ar_grads_dp", &flop, &stream), 8));
    cr_assert(eq(int, count_ops(&j, &st, &m, "rs_grads_dp", &flop, &stream), 0));
    j.zero = 1;
    cr_assert(eq(int, count_ops(&j, &st, &m, "rs_grads_dp", &flop, &stream), 8));
    cr_assert(eq(int, count_ops(&j, &st, &m, "ag_params_dp", &flop, &stream), 8));
    cr_assert(eq(int, stream, MDL_STREAM_DP));
    cr_assert(eq(int, count_ops(&j, &st, &m, "ar_grad_norm", &flop, &stream), 8));
    cr_assert(eq(int, stream, MDL_STREAM_NORM));
}

Test(job, interleaving_wraps_the_last_stage_back_to_the_first_and_checks)
{
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {.pp = 2,
                        .dp = 1,
                        .schedule = MDL_SCHED_INTERLEAVED,
                        .virtual_stages = 3,
                        .micro_batches = 4};
    double flop;
    int stream;
    /* chunks 0..5 over 2 stages: 5 hops forward per micro-batch, each TP rank sending */
    cr_assert(eq(int, count_ops(&j, &st, &m, "send_activations", &flop, &stream), 5 * 4 * 2));
    cr_assert(eq(int, count_ops(&j, &st, &m, "recv_activations", &flop, &stream), 5 * 4 * 2));
    cr_assert(eq(int, count_ops(&j, &st, &m, "send_gradients", &flop, &stream), 5 * 4 * 2));
}

Test(job, selective_recompute_repeats_the_attention_core_and_drops_its_activations)
{
    struct mdl_model m = model();
    m.attn_dropout = true; /* Korthikanti et al.'s layer: softmax, dropout mask, dropout output */
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {
        .pp = 1, .dp = 1, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 1};
    double flop;
    int stream;
    cr_assert(eq(int, count_ops(&j, &st, &m, "attn_score_recompute", &flop, &stream), 0));
    struct mdl_framework fw = {0};
    struct mdl_memory all, sel;
    mdl_job_memory(&j, &st, &m, &fw, &all);
    st.selective = true;
    cr_assert(eq(int, count_ops(&j, &st, &m, "attn_score_recompute", &flop, &stream), 24 * 2));
    mdl_job_memory(&j, &st, &m, &fw, &sel);
    /* 5 a s^2 b / t bytes per layer fewer (Korthikanti et al. 2022) */
    double sq = 5.0 * 16 * 2048 * 2048 / 2;
    cr_assert(fabs((all.activations - sel.activations) / (24 * sq) - 1) < 1e-12);
}

Test(job, folded_replicas_keep_only_mirrored_collectives_of_replica_zero)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {.pp = 2,
                        .dp = 3,
                        .schedule = MDL_SCHED_1F1B,
                        .virtual_stages = 1,
                        .micro_batches = 3,
                        .zero = 1};
    for (int rep = MDL_REPLICAS_MIRROR; rep <= MDL_REPLICAS_SHARED; rep++) {
        struct mdl_program p;
        struct tps_error err = {0};
        cr_assert(eq(int,
                     mdl_job_lower(&j, &st, &m, &dev, NULL, NULL, (enum mdl_replicas)rep, &p, &err),
                     0),
                  "%s", err.msg);
        cr_assert(eq(int, mdl_program_check(&p, NULL, &err), 0), "%s", err.msg);
        for (int s = 0; s < 2; s++)
            for (int d = 0; d < 3; d++)
                for (int t = 0; t < 2; t++) {
                    int r = mdl_job_rank(&j, &st, s, d, t), r0 = mdl_job_rank(&j, &st, s, 0, t);
                    cr_assert(eq(int, p.shadow[r], d > 0));
                    int p2p = 0;
                    for (int i = 0; d > 0 && i < p.ranks[r].nops; i++) {
                        const struct mdl_op *o = &p.ranks[r].ops[i];
                        cr_assert(mdl_op_is_coll((enum mdl_op_kind)o->kind), "no compute");
                        cr_assert(o->mirrored && o->mirror_rank == r0);
                        const struct mdl_op *x = &p.ranks[r0].ops[o->mirror_op];
                        cr_assert(eq(int, x->kind, o->kind));
                        cr_assert(eq(str, p.names[x->name], p.names[o->name]));
                        p2p += o->kind == MDL_OP_SEND_RECV;
                    }
                    /* shared: the data-parallel reduce-scatter and all-gather, and the norm */
                    if (d > 0 && rep == MDL_REPLICAS_SHARED) cr_assert(eq(int, p.ranks[r].nops, 3));
                    if (d > 0 && rep == MDL_REPLICAS_MIRROR) cr_assert(eq(int, p2p, 3 * 2));
                }
        mdl_program_release(&p);
    }
}

Test(job, a_mirror_must_name_an_op_of_a_rank_simulated_in_full)
{
    struct mdl_model m = model();
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {
        .pp = 2, .dp = 2, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 2};
    struct mdl_program p;
    struct tps_error err = {0};
    cr_assert(
        eq(int, mdl_job_lower(&j, &st, &m, &dev, NULL, NULL, MDL_REPLICAS_SHARED, &p, &err), 0));
    int r = mdl_job_rank(&j, &st, 0, 1, 0);
    cr_assert(gt(int, p.ranks[r].nops, 0));
    p.ranks[r].ops[0].mirror_rank = mdl_job_rank(&j, &st, 0, 1, 1); /* another shadow */
    struct mdl_check_at at;
    cr_assert(ne(int, mdl_program_check(&p, &at, &err), 0));
    cr_assert(eq(str, err.field, "mirror"));
    cr_assert(eq(int, at.rank, r));
    mdl_program_release(&p);
}

/* Sums the bytes of rank r's ops named `name`, and counts them; *after_opt: how many come after
 * the optimizer step. */
static int sum_ops(const struct mdl_program *p, int r, const char *name, double *bytes,
                   int *after_opt)
{
    int n = 0, seen_opt = 0;
    *bytes = 0;
    *after_opt = 0;
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *o = &p->ranks[r].ops[i];
        if (!strcmp(p->names[o->name], "optimizer_step")) seen_opt = 1;
        if (strcmp(p->names[o->name], name)) continue;
        n++;
        *bytes += o->bytes;
        *after_opt += seen_opt;
    }
    return n;
}

Test(job, overlapped_reduction_and_gather_split_the_same_bytes_into_buckets)
{
    struct mdl_model m = model(); /* 24 layers, hidden 2048 */
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = small_job(1);
    double rs0, ag0, rs1, ag1;
    int after;
    struct mdl_program a, b;
    lower_checked(&j, &st, &m, &a);
    cr_assert(eq(int, sum_ops(&a, 0, "rs_grads_dp", &rs0, &after), 1));
    cr_assert(eq(int, sum_ops(&a, 0, "ag_params_dp", &ag0, &after), 1));
    cr_assert(eq(int, after, 1), "gathered after the optimizer step");
    j.overlap_grad_reduce = j.overlap_param_gather = true;
    lower_checked(&j, &st, &m, &b);
    /* 12 layers of 12 h^2 / 2 = 25.2 M parameters a GPU: one bucket of 40 M holds 1 layer, so 12
     * buckets, plus the embedding's share on the first stage, reduced at the end */
    double lp = mdl_strategy_layer_params(&st, &m);
    cr_assert(eq(dbl, mdl_job_bucket_params(&j, &st), 4e7));
    int k = (int)(4e7 / lp), nb = (12 + k - 1) / k;
    cr_assert(eq(int, sum_ops(&b, 0, "rs_grads_dp", &rs1, &after), nb + 1));
    cr_assert(lt(dbl, fabs(rs1 / rs0 - 1), 1e-12), "the same bytes in all");
    cr_assert(eq(int, sum_ops(&b, 0, "ag_params_dp", &ag1, &after), nb + 1));
    cr_assert(eq(int, after, 0), "gathered under the forward, not after the optimizer");
    cr_assert(lt(dbl, fabs(ag1 / ag0 - 1), 1e-12));
    /* the last stage holds the tied copy of the embedding: its share is reduced at the end too */
    int last = mdl_job_rank(&j, &st, 1, 0, 0);
    cr_assert(eq(int, sum_ops(&b, last, "rs_grads_dp", &rs1, &after), nb + 1));
    /* every bucket's reduction follows the last backward of its layers, before the stage ends */
    int first_rs = -1, last_bwd = -1;
    for (int i = 0; i < b.ranks[0].nops; i++) {
        const struct mdl_op *o = &b.ranks[0].ops[i];
        if (!strcmp(b.names[o->name], "rs_grads_dp") && first_rs < 0) first_rs = i;
        if (o->phase == MDL_PHASE_BWD && o->stream == MDL_STREAM_COMPUTE) last_bwd = i;
    }
    cr_assert(lt(int, first_rs, last_bwd), "the first bucket is reduced under the backward");
    /* Megatron-Core's launch order (distrib_optimizer.py, _finish_param_sync_helper): the
     * embedding's and the first bucket's all-gathers before the first forward, then each
     * further bucket's right after the forward waited for the bucket before */
    int ags = 0, waits = 0, first_fwd = -1;
    for (int i = 0; i < b.ranks[0].nops; i++) {
        const struct mdl_op *o = &b.ranks[0].ops[i];
        const char *name = b.names[o->name];
        if (o->phase == MDL_PHASE_FWD && first_fwd < 0) first_fwd = i;
        if (!strcmp(name, "wait_params")) waits++;
        if (strcmp(name, "ag_params_dp")) continue;
        ags++;
        if (ags <= 2) {
            cr_assert(lt(int, i, first_fwd < 0 ? i + 1 : first_fwd), "all-gather %d", ags);
        } else {
            const struct mdl_op *w = &b.ranks[0].ops[i - 1];
            cr_assert(eq(str, b.names[w->name], "wait_params"), "all-gather %d", ags);
            cr_assert(eq(int, waits, ags - 2), "all-gather %d", ags);
        }
    }
    cr_assert(eq(int, ags, nb + 1));
    mdl_program_release(&a);
    mdl_program_release(&b);
}

Test(job, the_optimizer_work_is_priced_per_byte_of_each_pass)
{
    struct mdl_model m = model(); /* bf16 */
    struct mdl_device dev;
    cr_assert(eq(int, mdl_device_preset("A100-80GB", &dev), 0));
    struct mdl_job j = {.pp = 1, .dp = 4, .virtual_stages = 1, .micro_batches = 1};
    struct mdl_strategy st = {.kind = MDL_STRAT_1D, .tp = 1};
    double P = 1e9;
    /* zeroing 4 B of every parameter, then the norm 4 B and Adam 30 B of the GPU's share */
    double full =
        mdl_mem_time(&dev, 4 * P) + mdl_mem_time(&dev, 4 * P) + mdl_mem_time(&dev, 30 * P);
    cr_assert(lt(dbl, fabs(mdl_job_update_time(&j, &st, &m, &dev, P) / full - 1), 1e-12));
    j.zero = 1;
    double shard =
        mdl_mem_time(&dev, 4 * P) + mdl_mem_time(&dev, 1 * P) + mdl_mem_time(&dev, 7.5 * P);
    cr_assert(lt(dbl, fabs(mdl_job_update_time(&j, &st, &m, &dev, P) / shard - 1), 1e-12));
    m.dtype = MDL_FP16; /* fp16: unscaling, 8 B of the share, and the gradients in fp16 */
    cr_assert(eq(dbl, mdl_job_grad_bytes(&j, &m), 2));
    double fp16 = shard + mdl_mem_time(&dev, 2 * P);
    cr_assert(lt(dbl, fabs(mdl_job_update_time(&j, &st, &m, &dev, P) / fp16 - 1), 1e-12));
}

/* ZeRO-2 reduce-scatters every bucket after every micro-batch's backward (M times ZeRO-1's
 * bytes for the layers); ZeRO-3 also gathers every bucket before each forward and backward on a
 * stream and communicator of its own, and after the optimizer only the embedding's share. */
Test(job, zero_stages_move_the_bytes_of_their_sharding)
{
    struct mdl_model m = model(); /* 24 layers, hidden 2048 */
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = small_job(2);
    double lp = mdl_strategy_layer_params(&st, &m), emb = 51200.0 * 2048 / 2, wb = 2, gb = 4;
    int k = mdl_job_bucket_layers(&j, &st, &m), nb = (12 + k - 1) / k, M = 3, after;
    double bytes;
    struct mdl_program p;
    lower_checked(&j, &st, &m, &p);
    cr_assert(eq(int, sum_ops(&p, 0, "rs_grads_dp", &bytes, &after), M *nb + 1));
    cr_assert(lt(dbl, fabs(bytes / ((M * 12 * lp + emb) * gb) - 1), 1e-12));
    cr_assert(eq(int, sum_ops(&p, 0, "ag_params_dp", &bytes, &after), 1));
    cr_assert(lt(dbl, fabs(bytes / ((12 * lp + emb) * wb) - 1), 1e-12));
    mdl_program_release(&p);

    j.zero = 3;
    lower_checked(&j, &st, &m, &p);
    double fwd, bwd;
    cr_assert(eq(int, sum_ops(&p, 0, "ag_params_fwd", &fwd, &after), M *nb));
    cr_assert(eq(int, sum_ops(&p, 0, "ag_params_bwd", &bwd, &after), M *nb));
    cr_assert(lt(dbl, fabs(fwd / (M * 12 * lp * wb) - 1), 1e-12));
    cr_assert(lt(dbl, fabs(bwd / fwd - 1), 1e-12));
    /* after the step only the embedding's share is gathered; the middle has none */
    cr_assert(eq(int, sum_ops(&p, 0, "ag_params_dp", &bytes, &after), 1));
    cr_assert(lt(dbl, fabs(bytes / (emb * wb) - 1), 1e-12));
    int g = -1;
    for (int i = 0; i < p.ranks[0].nops; i++) {
        const struct mdl_op *o = &p.ranks[0].ops[i];
        if (strcmp(p.names[o->name], "ag_params_fwd")) continue;
        cr_assert(eq(int, o->stream, MDL_STREAM_GATHER));
        g = o->group;
    }
    for (int i = 0; i < p.ranks[0].nops; i++) {
        const struct mdl_op *o = &p.ranks[0].ops[i];
        if (!strcmp(p.names[o->name], "rs_grads_dp"))
            cr_assert(ne(int, o->group, g), "a communicator of its own");
    }
    mdl_program_release(&p);
}

/* Memory by ZeRO stage: the optimizer state over dp from stage 1, the layers' gradients from
 * stage 2 and their weights from stage 3 (plus the buckets in flight); the embedding stays. */
/* grad_reduce_in_bf16 (Megatron-LM's --grad-reduce-in-bf16): the distributed optimizer's
 * reduce-scatter moves 2 B per parameter instead of the fp32 main gradients' 4, the gradient
 * buffer holds 2 B per parameter, the rest stays; an fp16 model is refused at the field. */
Test(job, bf16_gradients_halve_the_reduction_and_the_buffer)
{
    struct mdl_model m = model(); /* bf16 */
    struct mdl_strategy st = tp_of(2);
    struct mdl_framework fw = {0};
    struct mdl_job j = small_job(1);
    double lp = mdl_strategy_layer_params(&st, &m), emb = 51200.0 * 2048 / 2, fp32, bf16;
    int after;
    struct mdl_program p;
    struct mdl_memory a, b;
    mdl_job_memory(&j, &st, &m, &fw, &a);
    lower_checked(&j, &st, &m, &p);
    sum_ops(&p, 0, "rs_grads_dp", &fp32, &after);
    mdl_program_release(&p);
    cr_assert(lt(dbl, fabs(fp32 / ((12 * lp + emb) * 4) - 1), 1e-12));
    j.grad_reduce_in_bf16 = true;
    cr_assert(eq(dbl, mdl_job_grad_bytes(&j, &m), 2));
    mdl_job_memory(&j, &st, &m, &fw, &b);
    lower_checked(&j, &st, &m, &p);
    sum_ops(&p, 0, "rs_grads_dp", &bf16, &after);
    mdl_program_release(&p);
    cr_assert(lt(dbl, fabs(bf16 / fp32 - 0.5), 1e-12));
    cr_assert(lt(dbl, fabs(b.gradients / a.gradients - 0.5), 1e-12));
    cr_assert(eq(dbl, b.weights, a.weights));
    cr_assert(eq(dbl, b.optimizer, a.optimizer));
    cr_assert(eq(dbl, b.activations, a.activations));
    m.dtype = MDL_FP16;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "grad_reduce_in_bf16"));
}

Test(job, zero_stages_shard_their_memory)
{
    struct mdl_model m = model();
    struct mdl_strategy st = tp_of(2);
    struct mdl_framework fw = {0};
    struct mdl_job j = {
        .pp = 4, .dp = 4, .schedule = MDL_SCHED_1F1B, .virtual_stages = 1, .micro_batches = 8};
    double lp = mdl_strategy_layer_params(&st, &m), layers = 6 * lp, emb = 51200.0 * 2048 / 2;
    double bucket = mdl_job_bucket_layers(&j, &st, &m) * lp;
    struct mdl_memory z[4];
    for (int k = 0; k < 4; k++) {
        j.zero = k;
        mdl_job_memory(&j, &st, &m, &fw, &z[k]);
    }
    cr_assert(fabs(z[0].optimizer - 12 * (layers + emb)) < 1);
    cr_assert(fabs(z[1].optimizer - 3 * (layers + emb)) < 1);
    /* bf16 training: Megatron-LM's fp32 main gradients, 4 B per parameter */
    cr_assert(eq(int, m.dtype, MDL_BF16));
    cr_assert(fabs(z[1].gradients - 4 * (layers + emb)) < 1);
    cr_assert(fabs(z[2].gradients - 4 * (layers / 4 + emb + bucket)) < 1);
    cr_assert(fabs(z[2].weights - 2 * (layers + emb)) < 1);
    cr_assert(fabs(z[3].weights - 2 * (layers / 4 + emb + 2 * bucket)) < 1);
    for (int k = 1; k < 4; k++)
        cr_assert(le(dbl, z[k].total, z[k - 1].total), "stage %d", k);
    j.zero = 4;
    struct tps_error err = {0};
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), TPS_EINVAL));
    cr_assert(eq(str, err.field, "zero"));
}

/* Every rank order places (t, d, s) on distinct ranks, mdl_job_coords inverts it, and the
 * default is Megatron-LM's t + tp (d + dp s); tp-pp-dp puts the stages next. */
Test(job, rank_orders_are_permutations_that_coords_invert)
{
    struct mdl_strategy st = tp_of(4);
    struct mdl_job j = {.pp = 3, .dp = 2, .virtual_stages = 1, .micro_batches = 1};
    for (int o = MDL_ORDER_TP_DP_PP; o <= MDL_ORDER_PP_DP_TP; o++) {
        j.order = (enum mdl_rank_order)o;
        int seen[24] = {0};
        for (int s = 0; s < 3; s++)
            for (int d = 0; d < 2; d++)
                for (int t = 0; t < 4; t++) {
                    int r = mdl_job_rank(&j, &st, s, d, t), s2, d2, t2;
                    cr_assert(r >= 0 && r < 24 && !seen[r], "order %s", mdl_rank_order_names[o]);
                    seen[r] = 1;
                    mdl_job_coords(&j, &st, r, &s2, &d2, &t2);
                    cr_assert(s2 == s && d2 == d && t2 == t, "order %s rank %d",
                              mdl_rank_order_names[o], r);
                    if (o == MDL_ORDER_TP_DP_PP) cr_assert(eq(int, r, t + 4 * (d + 2 * s)));
                    if (o == MDL_ORDER_TP_PP_DP) cr_assert(eq(int, r, t + 4 * (s + 3 * d)));
                    if (o == MDL_ORDER_PP_DP_TP) cr_assert(eq(int, r, s + 3 * (d + 2 * t)));
                }
    }
}

/* Every layer once, in order, over the virtual stages: each chunk starts where the one before
 * it ends. Returns the sum of the chunks' layers. */
static int covered(const struct mdl_job *j, const struct mdl_model *m)
{
    int next = 0;
    for (int c = 0; c < j->virtual_stages; c++)
        for (int s = 0; s < j->pp; s++) {
            int first, n = mdl_job_chunk_range(j, m, s, c, &first);
            cr_assert(eq(int, first, next), "stage %d chunk %d", s, c);
            cr_assert(ge(int, n, 1));
            next = first + n;
        }
    return next;
}

/* Llama 3 405B's 126 layers over 16 stages, as Meta ran them: one layer fewer on the first and
 * the last stage, given as their layer counts or by counting the embedding and the loss as
 * layers (and so also with 4 interleaved chunks a stage). */
Test(job, uneven_stages_split_126_layers_over_16_stages)
{
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("llama3-405b", &m), 0));
    struct mdl_strategy st = tp_of(8);
    struct tps_error err = {0};
    struct mdl_job j = {.pp = 16, .dp = 1, .virtual_stages = 1, .micro_batches = 16};
    cr_assert(ne(int, mdl_job_check(&j, &st, &m, &err), 0), "16 does not divide 126");
    j.first_stage_layers = j.last_stage_layers = 7;
    err = (struct tps_error){0};
    cr_assert(eq(int, mdl_job_check(&j, &st, &m, &err), 0), "%s", err.msg);
    cr_assert(eq(int, covered(&j, &m), 126));
    cr_assert(eq(int, mdl_job_chunk_range(&j, &m, 0, 0, NULL), 7));
    cr_assert(eq(int, mdl_job_chunk_range(&j, &m, 1, 0, NULL), 8));
    cr_assert(eq(int, mdl_job_chunk_range(&j, &m, 15, 0, NULL), 7));
    cr_assert(eq(int, mdl_job_chunk_layers(&j, &m), 8));
    /* the same split by counting the embedding and the loss */
    struct mdl_job a = {.pp = 16,
                        .dp = 1,
                        .virtual_stages = 1,
                        .micro_batches = 16,
                        .account_embedding = true,
                        .account_loss = true};
    cr_assert(eq(int, mdl_job_check(&a, &st, &m, &err), 0), "%s", err.msg);
    for (int s = 0; s < 16; s++) {
        int f1, f2;
        cr_assert(eq(int, mdl_job_chunk_range(&a, &m, s, 0, &f1),
                     mdl_job_chunk_range(&j, &m, s, 0, &f2)));
        cr_assert(eq(int, f1, f2));
    }
    /* interleaved: 128 over 64 virtual stages, 2 layers each but the first and the last */
    a.schedule = MDL_SCHED_INTERLEAVED;
    a.virtual_stages = 4;
    cr_assert(eq(int, mdl_job_check(&a, &st, &m, &err), 0), "%s", err.msg);
    cr_assert(eq(int, covered(&a, &m), 126));
    cr_assert(eq(int, mdl_job_chunk_range(&a, &m, 0, 0, NULL), 1));
    cr_assert(eq(int, mdl_job_chunk_range(&a, &m, 15, 3, NULL), 1));
    cr_assert(eq(int, mdl_job_chunk_range(&a, &m, 0, 1, NULL), 2));
    /* what does not split: a middle share that is not even, uneven ends with interleaving */
    struct mdl_job b = j;
    b.first_stage_layers = 6;
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_job_check(&b, &st, &m, &err), 0));
    cr_assert(eq(str, err.field, "first_stage_layers"));
    b = j;
    b.schedule = MDL_SCHED_INTERLEAVED;
    b.virtual_stages = 2;
    err = (struct tps_error){0};
    cr_assert(ne(int, mdl_job_check(&b, &st, &m, &err), 0));
    cr_assert(eq(str, err.field, "first_stage_layers"));
}

/* An uneven job lowers every layer once per micro-batch, each stage its own, with the model
 * FLOPs of the even split; its first stage holds fewer weights. */
Test(job, uneven_stages_lower_every_layer_once)
{
    struct mdl_model m = model(); /* 24 layers */
    struct mdl_strategy st = tp_of(2);
    struct mdl_job j = {.pp = 4, .dp = 1, .virtual_stages = 1, .micro_batches = 4};
    struct mdl_program even, p;
    lower_checked(&j, &st, &m, &even);
    j.first_stage_layers = 3;
    j.last_stage_layers = 5; /* 16 for the 2 middle stages */
    lower_checked(&j, &st, &m, &p);
    cr_assert(eq(dbl, p.model_flop, even.model_flop));
    cr_assert(lt(dbl, fabs(mdl_program_flop(&p) / mdl_program_flop(&even) - 1), 1e-12));
    int seen[24] = {0};
    for (int r = 0; r < p.nranks; r++)
        for (int i = 0; i < p.ranks[r].nops; i++) {
            const struct mdl_op *o = &p.ranks[r].ops[i];
            if (o->layer >= 0 && o->phase == MDL_PHASE_FWD && o->mb == 0 &&
                !strcmp(p.names[o->name], "qkv"))
                seen[o->layer]++;
        }
    for (int l = 0; l < 24; l++)
        cr_assert(eq(int, seen[l], 2), "layer %d: once on each of its stage's 2 TP ranks", l);
    /* the first stage: the embedding (26 M a GPU) and 3 layers (25 M each), the second 8 */
    double lp = mdl_strategy_layer_params(&st, &m), emb = 51200.0 * 2048 / 2;
    cr_assert(lt(dbl, fabs(mdl_job_stage_params(&j, &st, &m, 0) / (3 * lp + emb) - 1), 1e-12));
    cr_assert(lt(dbl, fabs(mdl_job_stage_params(&j, &st, &m, 1) / (8 * lp) - 1), 1e-12));
    mdl_program_release(&even);
    mdl_program_release(&p);
}

/* Megatron-LM's --report-theoretical-memory (megatron/training/theoretical_memory_usage.py,
 * compute_activation_memory: sequence parallelism with selective recomputation) for the first
 * stage: s b h (18 + 4 f / h) bytes per layer for all L layers (p micro-batches of L / p layers in
 * flight), the embedding's input ids (8 s b p) and dropout mask (s b h p), times the interleaved
 * schedule's 1 + (p - 1) / (p v), over t. */
static double megatron_activations(const struct mdl_model *m, int t, int p, int v)
{
    double s = (double)m->seq, b = (double)m->micro_batch, h = (double)m->hidden;
    double f = (double)m->ffn, L = (double)m->layers;
    double a = s * b * h * (18 + 4 * f / h) * L + 8 * s * b * p + s * b * h * p;
    return a * (1 + (p - 1.0) / (p * v)) / t;
}

Test(job, interleaved_activations_are_megatrons_theoretical_memory_and_korthikantis_layer)
{
    /* GPT-3 175B on 128 GPUs, TP 4 with sequence parallelism, PP 8 interleaved x12 (the DGX
     * Cloud recipe's shape): the first stage holds v p + p - 1 chunk forwards of L / (v p)
     * layers, L (1 + (p - 1) / (p v)) layers of one micro-batch */
    struct mdl_model m;
    cr_assert(eq(int, mdl_model_preset("gpt3-175b", &m), 0));
    m.micro_batch = 1;
    struct mdl_strategy st = tp_of(4);
    st.sequence_parallel = true;
    st.selective = true;
    struct mdl_framework fw = {0};
    struct mdl_job j = {.pp = 8,
                        .dp = 4,
                        .schedule = MDL_SCHED_INTERLEAVED,
                        .virtual_stages = 12,
                        .micro_batches = 64};
    struct mdl_memory mem;
    mdl_job_memory(&j, &st, &m, &fw, &mem);
    double want = megatron_activations(&m, 4, 8, 12);
    /* the layers' part alike; of the embedding's, tpsim keeps its output once (2 s b h / t: 12.6
     * MB), where Megatron-LM counts the token ids and the embedding dropout's mask of p
     * micro-batches in flight (54 MB): 0.19% of the whole */
    double emb = 2 * 2048.0 * 12288 / 4;
    double meg_emb = (8 * 2048.0 * 8 + 2048.0 * 12288 * 8) * (1 + 7.0 / 96) / 4;
    cr_assert(fabs((mem.activations - emb) / (want - meg_emb) - 1) < 1e-12,
              "tpsim %g, Megatron-LM %g", mem.activations, want);
    cr_assert(fabs(mem.activations / want - 1) < 2e-3, "tpsim %g, Megatron-LM %g", mem.activations,
              want);
    /* no recomputation, the attention core unfused, dropout on its probabilities: Korthikanti
     * et al.'s s b h (34 + 5 a s / h) / t per layer (Table 2), under the same schedule */
    st.selective = false;
    m.attn_dropout = true;
    mdl_job_memory(&j, &st, &m, &fw, &mem);
    double s = 2048, h = 12288, a = 96, L = 96, penalty = 1 + 7.0 / 96;
    double layers = s * h * (34 + 5 * a * s / h) / 4 * L * penalty;
    cr_assert(fabs((mem.activations - emb) / layers - 1) < 1e-12, "tpsim %g, Korthikanti et al. %g",
              mem.activations, layers + emb);
}
