/* ncclog.c - nccl-tests log and .meta.yaml reader (see ncclog.h). Units: B, us, GB/s. */
#include "ncclog.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/readall.h"
#include "common/ydoc.h"
#include "common/grow.h"
#include "common/inputs.h"

#define MAX_TOK 32

struct tok {
    char *s;
    int col; /* 1-based */
};

static int split(char *line, struct tok *t)
{
    int n = 0;
    char *p = line;
    while (*p && n < MAX_TOK) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p) break;
        t[n].s = p;
        t[n].col = (int)(p - line) + 1;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p) *p++ = '\0';
        n++;
    }
    return n;
}

/* nccl-tests program names to op kinds: "all_reduce_perf", "alltoall_perf", ... */
static int op_from_text(const char *line)
{
    static const struct {
        const char *prog;
        int kind;
    } progs[] = {{"all_reduce_perf", MDL_OP_ALL_REDUCE},
                 {"all_gather_perf", MDL_OP_ALL_GATHER},
                 {"reduce_scatter_perf", MDL_OP_REDUCE_SCATTER},
                 {"broadcast_perf", MDL_OP_BROADCAST},
                 {"alltoall_perf", MDL_OP_ALL_TO_ALL},
                 {"all_to_all_perf", MDL_OP_ALL_TO_ALL},
                 {"sendrecv_perf", MDL_OP_SEND_RECV},
                 {"send_recv_perf", MDL_OP_SEND_RECV},
                 {"reduce_perf", MDL_OP_REDUCE}}; /* last: all_reduce_perf contains it */
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        if (strstr(line, progs[i].prog)) return progs[i].kind;
    return -1;
}

/* Length of a launcher's tag before a line of output, 0 if none: Open MPI's --tag-output
 * ("[1,0]<stdout>:") or Slurm's srun --label ("0: "). An nccl-tests row starts with its size
 * followed by spaces, never by a colon, so neither is mistaken for one. */
static size_t launcher_tag_len(const char *s)
{
    const char *p = s;
    if (*p == '[') {
        for (p++; isdigit((unsigned char)*p) || *p == ','; p++)
            ;
        if (p[0] != ']' || p[1] != '<') return 0;
        for (p += 2; islower((unsigned char)*p); p++)
            ;
        return p[0] == '>' && p[1] == ':' ? (size_t)(p + 2 - s) : 0;
    }
    while (*p == ' ')
        p++;
    const char *d = p;
    while (isdigit((unsigned char)*p))
        p++;
    return p > d && p[0] == ':' && p[1] == ' ' ? (size_t)(p + 2 - s) : 0;
}

void ncl_log_release(struct ncl_log *l)
{
    free(l->rows);
    l->rows = NULL;
    l->nrows = 0;
}

/* Parses a number token: digits with optional '_' group separators (sizes), or a float. */
static int number(const char *s, double *out)
{
    char buf[64];
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < sizeof buf; p++)
        if (*p != '_') buf[n++] = *p;
    buf[n] = '\0';
    if (!n || n + 1 >= sizeof buf) return -1;
    char *end;
    *out = strtod(buf, &end);
    return *end || !isfinite(*out) ? -1 : 0;
}

struct layout {
    int kind;               /* 0 current, 1 old, 2 trimmed */
    int need;               /* out-of-place fields a row must have */
    int time, algbw, busbw; /* column indices */
};

static int header_layout(struct tok *t, int n, struct layout *L)
{
    if (n < 4 || strcmp(t[0].s, "size")) return -1;
    L->time = L->algbw = L->busbw = -1;
    int root = 0, wrong = -1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(t[i].s, "time") && L->time < 0) L->time = i;
        if (!strcmp(t[i].s, "algbw") && L->algbw < 0) L->algbw = i;
        if (!strcmp(t[i].s, "busbw") && L->busbw < 0) L->busbw = i;
        if (!strcmp(t[i].s, "root")) root = 1;
        if ((!strcmp(t[i].s, "#wrong") || !strcmp(t[i].s, "error")) && wrong < 0) wrong = i;
    }
    if (L->time < 0 || L->algbw < 0 || L->busbw < 0) return -1;
    L->kind = n == 4 ? 2 : root ? 0 : 1;
    /* a row must hold every column read from it, wherever the header puts them */
    int last = wrong > L->busbw ? wrong : L->busbw;
    if (L->time > last) last = L->time;
    if (L->algbw > last) last = L->algbw;
    L->need = last + 1;
    return 0;
}

static const char *col_name(const struct layout *L, int i)
{
    if (i == 0) return "size";
    if (i == L->time) return "time";
    if (i == L->algbw) return "algbw";
    if (i == L->busbw) return "busbw";
    return L->kind == 2 ? "?" : i == 1 ? "count" : i == 2 ? "type" : i == 3 ? "redop" : "#wrong";
}

int ncl_log_read(const char *path, struct ncl_log *out, struct tps_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    out->op = -1;
    FILE *f = fopen(path, "r");
    if (!f) return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %m");
    tps_input_note(path);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, header = 0, trailer = 0, table_done = 0, devices = 0, cap_rows = 0;
    int preamble = 0; /* nccl-tests' own "# nThread ..." line: a whole run's output */
    int rc = TPS_OK;
    struct layout L = {0};
    while (rc == TPS_OK && getline(&line, &cap, f) >= 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (out->op < 0) out->op = op_from_text(line);
        /* the line's text after a byte-order mark and a launcher's tag; columns stay the file's */
        char *text = line + (lineno == 1 ? tps_bom_len(line) : 0);
        text += launcher_tag_len(text);
        int at = (int)(text - line);
        char *p = text;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p) continue;
        if (*p == '#' || !isdigit((unsigned char)*p)) {
            char copy[1024];
            snprintf(copy, sizeof copy, "%s", *p == '#' ? p + 1 : p);
            struct tok t[MAX_TOK];
            int n = split(copy, t);
            if (*p == '#' && n >= 2 && !strcmp(t[0].s, "Rank") && isdigit((unsigned char)t[1].s[0]))
                devices++;
            if (*p == '#' && n >= 3 && !strcmp(t[0].s, "tpsim:") && !strcmp(t[2].s, "ranks,"))
                out->ranks = atoi(t[1].s);
            if (*p == '#' && strstr(p, "nThread")) preamble = 1;
            if (*p == '#' && strstr(p, "Avg bus bandwidth") && out->nrows) {
                trailer = 1;
                break; /* what follows is nccl-tests' epilogue */
            }
            if (!header && header_layout(t, n, &L) == 0) {
                header = lineno;
                continue;
            }
            if (!header || *p == '#' || table_done || strstr(p, "NCCL INFO") ||
                strstr(p, "NCCL WARN"))
                continue;
            if (L.kind == 2 && out->nrows) {
                table_done = 1; /* a trimmed table ends at the first line of other text */
                continue;
            }
            if (L.kind == 2) continue;
            rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, (int)(p - line) + 1, "size",
                               "expected a table row (a size in bytes), got '%.40s'", p);
            break;
        }
        if (!header || table_done) continue;
        struct tok t[MAX_TOK];
        int end = (int)strlen(line) + 1; /* before split() cuts the line into tokens */
        int n = split(text, t);
        for (int i = 0; i < n; i++)
            t[i].col += at;
        if (n < L.need) {
            rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, end, col_name(&L, n),
                               "truncated row: %d fields, the out-of-place columns need %d", n,
                               L.need);
            break;
        }
        struct ncl_row r = {.line = lineno};
        const int idx[4] = {0, L.time, L.algbw, L.busbw};
        double *dst[4] = {&r.bytes, &r.time_us, &r.algbw, &r.busbw};
        for (int k = 0; k < 4 && rc == TPS_OK; k++)
            if (number(t[idx[k]].s, dst[k]) != 0 || *dst[k] < 0)
                rc =
                    tps_error_set(err, TPS_ESYNTAX, path, lineno, t[idx[k]].col,
                                  col_name(&L, idx[k]), "expected a number, got '%s'", t[idx[k]].s);
        if (rc) break;
        if (!(r.time_us > 0)) {
            rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, t[L.time].col, "time",
                               "time must be positive, got '%s'", t[L.time].s);
            break;
        }
        double alg = r.bytes / r.time_us / 1e3;
        if (fabs(r.algbw - alg) > 0.02 * alg + 0.011) {
            rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, t[L.algbw].col, "algbw",
                               "algbw %s GB/s disagrees with size/time = %.2f GB/s (garbled row?)",
                               t[L.algbw].s, alg);
            break;
        }
        if (tps_grow(&out->rows, &cap_rows, out->nrows + 1, sizeof *out->rows, 32)) {
            rc = tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
            break;
        }
        out->rows[out->nrows++] = r;
    }
    free(line);
    fclose(f);
    if (rc == TPS_OK && !header)
        rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "size",
                           "no nccl-tests table: no column header line naming size, time, "
                           "algbw and busbw");
    else if (rc == TPS_OK && !out->nrows)
        rc = tps_error_set(err, TPS_ESYNTAX, path, header, 1, "size", "the table has no rows");
    else if (rc == TPS_OK && L.kind != 2 && preamble && !trailer)
        rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, NULL,
                           "truncated log: it ends at line %d without nccl-tests' closing "
                           "'# Avg bus bandwidth' line",
                           lineno);
    out->layout = L.kind;
    if (!out->ranks) out->ranks = devices;
    if (rc) ncl_log_release(out);
    return rc;
}

int ncl_meta_read(const char *path, struct ncl_meta *out, struct tps_error *err)
{
    memset(out, 0, sizeof *out);
    out->op = -1;
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    if (rc) return rc;
    int root = tps_ydoc_root(&d);
    if (!tps_ydoc_is_map(&d, root)) {
        rc = tps_ydoc_fail(&d, root, "", err, "expected a mapping");
        goto done;
    }
    long v;
    const char *s;
    int id = tps_ydoc_get(&d, root, "gpus_per_node");
    if (!id || (rc = tps_ydoc_count(&d, id, "gpus_per_node", &v, err))) {
        if (!id) rc = tps_ydoc_fail(&d, root, "gpus_per_node", err, "missing");
        goto done;
    }
    if (v > 1000000) {
        rc = tps_ydoc_fail(&d, id, "gpus_per_node", err, "at most 1000000, got %ld", v);
        goto done;
    }
    out->gpus_per_node = (int)v;
    id = tps_ydoc_get(&d, root, "nodes");
    if (!id || (rc = tps_ydoc_count(&d, id, "nodes", &v, err))) {
        if (!id) rc = tps_ydoc_fail(&d, root, "nodes", err, "missing");
        goto done;
    }
    if (v > 1000000 || (long long)v * out->gpus_per_node > 16777216) {
        rc = tps_ydoc_fail(&d, id, "nodes", err,
                           "nodes x gpus_per_node must be at most 16777216, got %ld x %d", v,
                           out->gpus_per_node);
        goto done;
    }
    out->nodes = (int)v;
    out->ranks = out->nodes * out->gpus_per_node;
    if ((id = tps_ydoc_get(&d, root, "gpus_used"))) {
        if ((rc = tps_ydoc_count(&d, id, "gpus_used", &v, err))) goto done;
        if (v > out->ranks) {
            rc = tps_ydoc_fail(&d, id, "gpus_used", err,
                               "at most nodes x gpus_per_node (%d), got %ld", out->ranks, v);
            goto done;
        }
        out->ranks = (int)v;
    }
    if ((id = tps_ydoc_get(&d, root, "gpu")) && tps_ydoc_str(&d, id, "gpu", &s, err) == 0)
        snprintf(out->gpu, sizeof out->gpu, "%s", s);
    if ((id = tps_ydoc_get(&d, root, "collective")) &&
        tps_ydoc_str(&d, id, "collective", &s, err) == 0)
        out->op = op_from_text(s);
    memset(err, 0, sizeof *err);
done:
    tps_ydoc_release(&d);
    return rc;
}
