/* trace.c - reading and writing the text trace format (see trace.h, docs/trace-format.md).
 * Lines are whitespace-separated tokens; errors name file, line, column and field.
 * Units: seconds, FLOP, bytes. */
#include "core/trace.h"
#include "common/inputs.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_LEN 8192
#define MAX_SECONDS  TRACE_MAX_SECONDS
#define MAX_BYTES    TRACE_MAX_BYTES
#define MAX_FLOP     TRACE_MAX_FLOP
#define MAX_FLOPS    TRACE_MAX_FLOPS
#define MAX_TOK      4200

static int write_rank(const struct mdl_program *p, int r, const char *dir, struct tps_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, r);
    if (tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "tpsim-trace %d rank %d\n", TRACE_VERSION, r);
    fprintf(f, "# id stream kind phase layer mb name dur_s flop bytes group deps rec_start rec_end "
               "launch_s iter warmup sync\n");
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const struct mdl_op *op = &p->ranks[r].ops[i];
        fprintf(f, "%d %d %s %s %d %d %s %.17g %.17g %.17g %d", i, op->stream,
                mdl_op_kind_name((enum mdl_op_kind)op->kind),
                mdl_phase_name((enum mdl_phase)op->phase), op->layer, op->mb, p->names[op->name],
                op->dur_s, op->flop, op->bytes, op->group);
        if (op->root) fprintf(f, ":%d", op->root); /* a broadcast's or reduce's root member */
        fputc(' ', f);
        if (!op->ndeps) fputc('-', f);
        for (int d = 0; d < op->ndeps; d++)
            fprintf(f, "%s%d", d ? "," : "", op->deps[d]);
        if (op->recorded)
            fprintf(f, " %.17g %.17g", op->rec_start, op->rec_end);
        else
            fputs(" - -", f);
        fprintf(f, " %.17g %d %d %d\n", op->launch_s, op->iter, op->warmup, op->host_sync);
    }
    if (fclose(f) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    return TPS_OK;
}

int trace_name_byte_ok(int c)
{
    return c > ' ' && c != 0x7f;
}

/* What the reader would refuse in op i of rank r: a name that is not one token, a number beyond
 * the format's bounds. The writer checks every op before it writes anything, so that no command
 * writes a trace that `run` refuses. */
static int check_op(const struct mdl_program *p, int r, int i, struct tps_error *err)
{
    const struct mdl_op *op = &p->ranks[r].ops[i];
    const char *name = op->name >= 0 && op->name < p->nnames ? p->names[op->name] : "";
    int token = name[0] && name[0] != '#' && strlen(name) < MAX_TOK;
    for (const char *c = name; token && *c; c++)
        token = trace_name_byte_ok((unsigned char)*c);
    if (!token)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "name",
                             "rank %d op %d: the name is not one token of the trace format "
                             "(blanks, control bytes, a leading '#')",
                             r, i);
    static const struct {
        const char *field;
        size_t off;
        double max;
    } nums[] = {{"dur_s", offsetof(struct mdl_op, dur_s), MAX_SECONDS},
                {"flop", offsetof(struct mdl_op, flop), MAX_FLOP},
                {"bytes", offsetof(struct mdl_op, bytes), MAX_BYTES},
                {"rec_start", offsetof(struct mdl_op, rec_start), MAX_SECONDS},
                {"rec_end", offsetof(struct mdl_op, rec_end), MAX_SECONDS},
                {"launch_s", offsetof(struct mdl_op, launch_s), MAX_SECONDS}};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        double v = *(const double *)((const char *)op + nums[k].off);
        if (!(v >= 0 && v <= nums[k].max) && (op->recorded || strncmp(nums[k].field, "rec_", 4)))
            return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, nums[k].field,
                                 "rank %d op %d: %g is beyond what a trace holds (0..%g)", r, i, v,
                                 nums[k].max);
    }
    return TPS_OK;
}

int trace_write(const struct mdl_program *p, const char *platform, const char *dir,
                struct tps_error *err)
{
    if (p->shadow)
        return tps_error_set(err, TPS_EINVAL, dir, 0, 0, NULL,
                             "a program with folded replicas has no ops of its own for them: "
                             "lower every replica to write it");
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (check_op(p, r, i, err)) return TPS_EINVAL;
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    int trace = stat(path, &sb) == 0;
    snprintf(path, sizeof path, "%s/rank-00000.tps", dir);
    if (!trace && stat(path, &sb) == 0) /* the tracer's recording: its rank files are the data */
        return tps_error_set(err, TPS_EINVAL, dir, 0, 0, NULL,
                             "holds a tracer recording (rank-00000.tps, no meta.tps): writing a "
                             "trace there would replace its rank files; write it elsewhere");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tps_error_set(err, TPS_EIO, dir, 0, 0, NULL, "cannot create directory: %s",
                             strerror(errno));
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    if (tps_output_check(dir, err) || tps_output_check(path, err)) return TPS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "tpsim-trace %d\nranks %d\nlayers %d\nmicro_batches %d\n", TRACE_VERSION, p->nranks,
            p->layers, p->micro_batches);
    if (platform && platform[0]) fprintf(f, "platform %s\n", platform);
    if (p->model_flop > 0) fprintf(f, "model_flop %.17g\n", p->model_flop);
    if (p->peak_flops > 0) fprintf(f, "peak_flops %.17g\n", p->peak_flops);
    if (p->hw_queues > 0) fprintf(f, "hw_queues %d\n", p->hw_queues);
    for (int g = 0; g < p->ngroups; g++) {
        fprintf(f, "group %d", g);
        for (int m = 0; m < p->groups[g].n; m++)
            fprintf(f, " %d", p->groups[g].ranks[m]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
    for (int r = 0; r < p->nranks; r++) {
        int rc = write_rank(p, r, dir, err);
        if (rc) return rc;
    }
    return TPS_OK;
}

/* ------------------------------------------------------------------ reading */

struct lexer {
    const char *path;
    int line;
    char buf[LINE_MAX_LEN];
    int ntok;
    int version; /* of the file being read */
    char *tok[MAX_TOK];
    int col[MAX_TOK];
};

/* Reads the next non-empty, non-comment line and splits it. Returns 0, 1 at EOF, <0 on error. */
static int next_line(struct lexer *L, FILE *f, struct tps_error *err)
{
    while (fgets(L->buf, sizeof L->buf, f)) {
        L->line++;
        size_t n = strlen(L->buf);
        if (n == sizeof L->buf - 1 && L->buf[n - 1] != '\n')
            return tps_error_set(err, TPS_ESYNTAX, L->path, L->line, 1, NULL, "line too long");
        L->ntok = 0;
        char *p = L->buf;
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                *p++ = '\0';
            if (!*p || *p == '#') break;
            if (L->ntok == MAX_TOK)
                return tps_error_set(err, TPS_ESYNTAX, L->path, L->line, (int)(p - L->buf) + 1,
                                     NULL, "too many fields");
            L->col[L->ntok] = (int)(p - L->buf) + 1;
            L->tok[L->ntok++] = p;
            while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
                p++;
        }
        if (*p == '#') *p = '\0';
        if (L->ntok) return 0;
    }
    return 1;
}

static int fail(struct lexer *L, int t, const char *field, struct tps_error *err, const char *msg,
                const char *got)
{
    return tps_error_set(err, TPS_ESYNTAX, L->path, L->line, t < L->ntok ? L->col[t] : 1, field,
                         "%s%s%s%s", msg, got ? ", got '" : "", got ? got : "", got ? "'" : "");
}

static int tok_long(struct lexer *L, int t, const char *field, long lo, long hi, long *out,
                    struct tps_error *err)
{
    if (t >= L->ntok) return fail(L, t, field, err, "missing field", NULL);
    char *end;
    errno = 0;
    long v = strtol(L->tok[t], &end, 10);
    if (errno || *end || v < lo || v > hi) {
        char msg[96];
        snprintf(msg, sizeof msg, "expected an integer in %ld..%ld", lo, hi);
        return fail(L, t, field, err, msg, L->tok[t]);
    }
    *out = v;
    return TPS_OK;
}

/* Token t as a number in [0, max]. */
static int tok_double(struct lexer *L, int t, const char *field, double max, double *out,
                      struct tps_error *err)
{
    if (t >= L->ntok) return fail(L, t, field, err, "missing field", NULL);
    char *end;
    double v = strtod(L->tok[t], &end);
    if (*end || !isfinite(v) || v < 0)
        return fail(L, t, field, err, "expected a non-negative number", L->tok[t]);
    if (v > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "must be at most %g", max);
        return fail(L, t, field, err, msg, L->tok[t]);
    }
    *out = v;
    return TPS_OK;
}

static int header(struct lexer *L, FILE *f, struct tps_error *err)
{
    int rc = next_line(L, f, err);
    if (rc < 0) return rc;
    if (rc > 0 || strcmp(L->tok[0], "tpsim-trace") != 0)
        return fail(L, 0, "header", err, "not a tpsim trace: first line must be 'tpsim-trace 1'",
                    rc ? NULL : L->tok[0]);
    long v;
    if ((rc = tok_long(L, 1, "version", 1, 1000, &v, err))) return rc;
    L->version = (int)v;
    if (v < 1 || v > TRACE_VERSION) {
        char msg[96];
        snprintf(msg, sizeof msg, "unsupported trace version (this tpsim reads version %d)",
                 TRACE_VERSION);
        return fail(L, 1, "version", err, msg, L->tok[1]);
    }
    return TPS_OK;
}

static int read_meta(const char *dir, struct mdl_program *p, char *platform, size_t plen,
                     struct tps_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    tps_input_note(dir); /* a trace: neither it nor its files may be written over */
    tps_input_note(path);
    struct lexer *L = calloc(1, sizeof *L);
    int *members = malloc(MAX_TOK * sizeof *members);
    int rc = L && members ? TPS_OK : TPS_ENOMEM;
    if (rc) goto done;
    L->path = path;
    if ((rc = header(L, f, err))) goto done;
    long ranks = 0, layers = 0, mbs = 1, queues = 0;
    double model_flop = 0, peak_flops = 0;
    while ((rc = next_line(L, f, err)) == 0) {
        const char *k = L->tok[0];
        long v;
        if (!strcmp(k, "ranks")) {
            if (ranks) {
                rc = fail(L, 0, "ranks", err, "'ranks' given twice", NULL);
                goto done;
            }
            if ((rc = tok_long(L, 1, "ranks", 1, 1 << 20, &ranks, err))) goto done;
            if (mdl_program_init(p, (int)ranks) != 0) {
                rc = TPS_ENOMEM;
                goto done;
            }
        } else if (!strcmp(k, "layers")) {
            if ((rc = tok_long(L, 1, "layers", 0, TRACE_MAX_LAYERS, &layers, err))) goto done;
        } else if (!strcmp(k, "micro_batches")) {
            if ((rc = tok_long(L, 1, "micro_batches", 1, TRACE_MAX_LAYERS, &mbs, err))) goto done;
        }
        if ((!strcmp(k, "layers") || !strcmp(k, "micro_batches")) &&
            layers * mbs > TRACE_MAX_SPANS) {
            rc = fail(L, 1, k, err, "layers x micro_batches is above the limit of 4194304",
                      L->tok[1]);
            goto done;
        }
        if (!strcmp(k, "ranks") || !strcmp(k, "layers") || !strcmp(k, "micro_batches")) continue;
        if (!strcmp(k, "model_flop") || !strcmp(k, "peak_flops")) {
            int mf = k[0] == 'm';
            if ((rc = tok_double(L, 1, k, mf ? MAX_FLOP : MAX_FLOPS, mf ? &model_flop : &peak_flops,
                                 err)))
                goto done;
        } else if (!strcmp(k, "hw_queues")) {
            if ((rc = tok_long(L, 1, "hw_queues", 1, 32, &queues, err))) goto done;
        } else if (!strcmp(k, "platform")) {
            if (platform) {
                size_t n = 0;
                platform[0] = '\0';
                for (int t = 1; t < L->ntok && n < plen; t++)
                    n += (size_t)snprintf(platform + n, plen - n, "%s%s", t > 1 ? " " : "",
                                          L->tok[t]);
            }
        } else if (!strcmp(k, "group")) {
            if (!ranks) {
                rc = fail(L, 0, "group", err, "'ranks' must come before the groups", NULL);
                goto done;
            }
            if ((rc = tok_long(L, 1, "group", p->ngroups, p->ngroups, &v, err))) goto done;
            if (L->ntok < 3) {
                rc = fail(L, 2, "group", err, "a group needs at least one rank", NULL);
                goto done;
            }
            for (int t = 2; t < L->ntok; t++) {
                long m;
                if ((rc = tok_long(L, t, "group", 0, ranks - 1, &m, err))) goto done;
                for (int u = 2; u < t; u++) {
                    if (members[u - 2] == m) {
                        rc = fail(L, t, "group", err, "rank listed twice in a group", L->tok[t]);
                        goto done;
                    }
                }
                members[t - 2] = (int)m;
            }
            /* two groups may hold the same ranks (two communicators, two directions) */
            if (mdl_program_group_add(p, L->ntok - 2, members) < 0) {
                rc = tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
                goto done;
            }
        } else {
            rc = fail(L, 0, "key", err,
                      "unknown key (expected ranks, layers, micro_batches, "
                      "model_flop, peak_flops, hw_queues, platform or group)",
                      k);
            goto done;
        }
    }
    if (rc > 0) rc = TPS_OK;
    if (rc == TPS_OK && !ranks)
        rc = tps_error_set(err, TPS_ESYNTAX, path, L->line, 1, "ranks", "missing 'ranks' line");
    p->layers = (int)layers;
    p->micro_batches = (int)mbs;
    p->model_flop = model_flop;
    p->peak_flops = peak_flops;
    p->hw_queues = (int)queues;
done:
    if (rc == TPS_ENOMEM) tps_error_set(err, rc, path, 0, 0, NULL, "out of memory");
    free(L);
    free(members);
    fclose(f);
    return rc;
}

static int read_rank(const char *dir, struct mdl_program *p, int r, struct tps_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, r);
    FILE *f = fopen(path, "r");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    tps_input_note(path);
    struct lexer *L = calloc(1, sizeof *L);
    int rc = L ? TPS_OK : tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
    if (rc) goto done;
    L->path = path;
    if ((rc = header(L, f, err))) goto done;
    long v;
    if (L->ntok != 4 || strcmp(L->tok[2], "rank") != 0) {
        rc = fail(L, 2, "header", err, "expected 'tpsim-trace 1 rank N'", NULL);
        goto done;
    }
    if ((rc = tok_long(L, 3, "rank", r, r, &v, err))) goto done;
    while ((rc = next_line(L, f, err)) == 0) {
        struct mdl_op op = {0};
        long id, stream, layer, mb, group;
        enum mdl_op_kind kind;
        static const int fields[] = {0, 12, 14, 15, 17, 18}; /* per version */
        int nf = fields[L->version];
        if (L->ntok != nf) {
            char msg[96];
            snprintf(msg, sizeof msg, "expected %d fields, found %d", nf, L->ntok);
            rc = fail(L, L->ntok < nf ? L->ntok - 1 : nf, "op", err, msg, NULL);
            goto done;
        }
        if (nf >= 15 && (rc = tok_double(L, 14, "launch_s", MAX_SECONDS, &op.launch_s, err)))
            goto done;
        op.iter = -1; /* versions 1 to 3 do not say */
        if (nf >= 17) {
            long it, wu;
            if ((rc = tok_long(L, 15, "iter", -1, INT32_MAX, &it, err))) goto done;
            if ((rc = tok_long(L, 16, "warmup", 0, 1, &wu, err))) goto done;
            op.iter = (int32_t)it;
            op.warmup = (uint8_t)wu;
        }
        if (nf >= 18) {
            long sy;
            if ((rc = tok_long(L, 17, "sync", 0, 1, &sy, err))) goto done;
            op.host_sync = (uint8_t)sy;
        }
        if (nf >= 14 && (strcmp(L->tok[12], "-") || strcmp(L->tok[13], "-"))) {
            if ((rc = tok_double(L, 12, "rec_start", MAX_SECONDS, &op.rec_start, err))) goto done;
            if ((rc = tok_double(L, 13, "rec_end", MAX_SECONDS, &op.rec_end, err))) goto done;
            if (op.rec_end < op.rec_start) {
                rc = fail(L, 13, "rec_end", err, "ends before it starts", L->tok[13]);
                goto done;
            }
            op.recorded = 1;
        }
        if ((rc = tok_long(L, 0, "id", p->ranks[r].nops, p->ranks[r].nops, &id, err))) goto done;
        if ((rc = tok_long(L, 1, "stream", 0, MDL_MAX_STREAMS - 1, &stream, err))) goto done;
        if (mdl_op_kind_parse(L->tok[2], &kind) != 0) {
            rc = fail(L, 2, "kind", err, "unknown op kind", L->tok[2]);
            goto done;
        }
        const char *ph = L->tok[3];
        op.phase = !strcmp(ph, "fwd")   ? MDL_PHASE_FWD
                   : !strcmp(ph, "bwd") ? MDL_PHASE_BWD
                                        : MDL_PHASE_OTHER;
        if (op.phase == MDL_PHASE_OTHER && strcmp(ph, "other")) {
            rc = fail(L, 3, "phase", err, "expected fwd, bwd or other", ph);
            goto done;
        }
        if ((rc = tok_long(L, 4, "layer", -1, p->layers - 1, &layer, err))) goto done;
        if ((rc = tok_long(L, 5, "mb", -1, p->micro_batches - 1, &mb, err))) goto done;
        op.kind = (uint8_t)kind;
        op.stream = (uint8_t)stream;
        op.layer = (int32_t)layer;
        op.mb = (int32_t)mb;
        for (const char *c = L->tok[6]; *c; c++)
            if (!trace_name_byte_ok((unsigned char)*c)) { /* names reach the terminal */
                rc = fail(L, 6, "name", err, "a control character in an op's name", NULL);
                goto done;
            }
        op.name = mdl_program_name(p, L->tok[6]);
        if ((rc = tok_double(L, 7, "dur_s", MAX_SECONDS, &op.dur_s, err))) goto done;
        if ((rc = tok_double(L, 8, "flop", MAX_FLOP, &op.flop, err))) goto done;
        if ((rc = tok_double(L, 9, "bytes", MAX_BYTES, &op.bytes, err))) goto done;
        bool coll = mdl_op_is_coll(kind);
        char *root = strchr(L->tok[10], ':'); /* group:root for a rooted collective */
        if (root) *root++ = '\0';
        if ((rc = tok_long(L, 10, "group", coll ? 0 : -1, coll ? p->ngroups - 1 : -1, &group, err)))
            goto done;
        op.group = (int32_t)group;
        if (root) {
            char *end;
            errno = 0;
            long rv = strtol(root, &end, 10);
            bool rooted = kind == MDL_OP_BROADCAST || kind == MDL_OP_REDUCE;
            if (!rooted || errno || end == root || *end || rv < 0 || rv >= p->groups[group].n) {
                rc = fail(L, 10, "group", err,
                          rooted ? "expected group:root with root a member index of the group"
                                 : "only a broadcast or a reduce names a root (group:root)",
                          root);
                goto done;
            }
            op.root = (uint16_t)rv;
        }
        if ((stream == MDL_STREAM_COMPUTE) == coll) {
            rc = fail(L, 1, "stream", err,
                      coll ? "collectives run on a communication stream (1..12)"
                           : "compute ops run on stream 0",
                      L->tok[1]);
            goto done;
        }
        if (strcmp(L->tok[11], "-") != 0) {
            char *s = L->tok[11];
            while (*s) {
                char *end;
                errno = 0;
                long dep = strtol(s, &end, 10);
                if (end == s || errno || dep < 0 || dep >= id || (*end && *end != ',') ||
                    op.ndeps == MDL_MAX_DEPS) {
                    rc = fail(L, 11, "deps", err,
                              "expected '-' or up to 8 comma-separated ids of earlier ops",
                              L->tok[11]);
                    goto done;
                }
                op.deps[op.ndeps++] = (int32_t)dep;
                s = *end ? end + 1 : end;
            }
        }
        if (op.name < 0 || mdl_program_add(p, r, &op) < 0) {
            rc = tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
            goto done;
        }
    }
    if (rc > 0) rc = TPS_OK;
done:
    free(L);
    fclose(f);
    return rc;
}

/* The line of op `op` in a rank file: ops are numbered in file order after the header, blank and
 * comment lines aside. 0 when not found. */
static int op_line(const char *path, int op)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[4096];
    int line = 0, seen = -1, found = 0, bol = 1;
    while (!found && fgets(buf, sizeof buf, f)) {
        int start = bol;
        bol = strchr(buf, '\n') != NULL;
        if (!start) continue; /* the rest of a long line */
        line++;
        const char *t = buf + strspn(buf, " \t");
        if (line == 1 || *t == '#' || *t == '\n' || *t == '\0') continue;
        if (++seen == op) found = line;
    }
    fclose(f);
    return found;
}

int trace_read(const char *dir, struct mdl_program *p, char *platform, size_t platform_len,
               struct tps_error *err)
{
    memset(p, 0, sizeof *p);
    if (platform && platform_len) platform[0] = '\0';
    int rc = read_meta(dir, p, platform, platform_len, err);
    for (int r = 0; rc == TPS_OK && r < p->nranks; r++)
        rc = read_rank(dir, p, r, err);
    if (rc) return rc;
    /* what a replay would trip on, found here with the file and line at fault */
    struct mdl_check_at at;
    struct tps_error e = {0};
    if ((rc = mdl_program_check(p, &at, &e)) == 0) return TPS_OK;
    char path[1024];
    if (at.rank >= 0) {
        snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, at.rank);
        if (at.op < 0) return tps_error_set(err, rc, path, 0, 0, e.field, "%s", e.msg);
        return tps_error_set(err, rc, path, op_line(path, at.op), 1, e.field, "op %d: %s", at.op,
                             e.msg);
    }
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    return tps_error_set(err, rc, path, 0, 0, e.field, "%s", e.msg);
}

int trace_meta_line(const char *dir, const char *key)
{
    char path[1024], buf[4096];
    snprintf(path, sizeof path, "%s/meta.tps", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int line = 0, found = 0;
    size_t n = strlen(key);
    while (!found && fgets(buf, sizeof buf, f)) {
        line++;
        const char *t = buf + strspn(buf, " \t");
        if (!strncmp(t, key, n) && (t[n] == ' ' || t[n] == '\t')) found = line;
    }
    fclose(f);
    return found;
}

const char *trace_dir_resolve(const char *input, char *buf, size_t len)
{
    struct stat sb;
    snprintf(buf, len, "%s/meta.tps", input);
    if (access(buf, F_OK) == 0) return input;
    snprintf(buf, len, "%s/merged", input);
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode) ? buf : input;
}
