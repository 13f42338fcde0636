/* tracemerge.c - turns a tracer's output directory into a replayable trace (see tracemerge.h).
 *
 * The tracer writes, per rank, rank-NNNNN.tps (group column = the rank's local communicator
 * index) and comms-NNNNN.tps ("comm LOCAL IDENTITY NRANKS RANK"). A communicator's members are
 * the ranks that name the same identity, ordered by their rank in it. The merge checks that every
 * communicator was traced on all its ranks, rewrites the group columns to global group ids and
 * writes meta.tps.
 */
#include "core/tracemerge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/trace.h"
#include "common/grow.h"
#include "common/inputs.h"

#define MAX_LOCAL 256

struct member {
    unsigned long long id;
    int nranks, crank, rank, local;
};

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->crank - y->crank;
}

static int rank_count(const char *dir)
{
    int n = 0;
    for (;; n++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, n);
        FILE *f = fopen(path, "r");
        if (!f) break;
        fclose(f);
    }
    return n;
}

/* Groups of the merged trace: member lists (a communicator, or a send/recv direction). */
struct groups {
    int n, ncomm, cap;   /* groups, of which the first ncomm are communicators; allocated */
    struct mdl_group *g; /* owned, each g[i].ranks owned */
};

/* Room for n groups. */
static int reserve(struct groups *G, int n)
{
    return tps_grow(&G->g, &G->cap, n, sizeof *G->g, 64);
}

static int pair_group(struct groups *G, int from, int to)
{
    for (int g = G->ncomm; g < G->n; g++)
        if (G->g[g].ranks[0] == from && G->g[g].ranks[1] == to) return g;
    if (reserve(G, G->n + 1) || !(G->g[G->n].ranks = malloc(2 * sizeof(int)))) return -1;
    G->g[G->n].n = 2;
    G->g[G->n].ranks[0] = from;
    G->g[G->n].ranks[1] = to;
    return G->n++;
}

/* Global rank of rank `crank` of the communicator at m[start..end). */
static int global_of(const struct member *m, int start, int end, int crank)
{
    for (int k = start; k < end; k++)
        if (m[k].crank == crank) return m[k].rank;
    return -1;
}

/* Rewrites the group column (field 11) of rank r's collectives through map[local]; a send:P or
 * recv:P gets the group of its direction. */
static int rewrite_rank(const char *dir, const char *odir, int r, const int *map, int *max_layer,
                        struct groups *G, const struct member *m, int (*span)[2],
                        struct tps_error *err)
{
    char path[1100], tmp[1100 + 32], line[8192];
    snprintf(path, sizeof path, "%s/rank-%05d.tps", dir, r);
    snprintf(tmp, sizeof tmp, "%s/rank-%05d.tps", odir, r);
    FILE *in = fopen(path, "r"), *out = in ? fopen(tmp, "w") : NULL;
    if (!in || !out) {
        if (in) fclose(in);
        return tps_error_set(err, TPS_EIO, in ? tmp : path, 0, 0, NULL, "cannot %s: %s",
                             in ? "write" : "read", strerror(errno));
    }
    int rc = TPS_OK, lineno = 0;
    while (fgets(line, sizeof line, in)) {
        lineno++;
        if (line[0] == '#' || lineno == 1 || line[0] == '\n') {
            fputs(line, out);
            continue;
        }
        char *tok[20];
        int n = 0;
        char copy[8192];
        snprintf(copy, sizeof copy, "%s", line);
        for (char *s = strtok(copy, " \t\n"); s && n < 20; s = strtok(NULL, " \t\n"))
            tok[n++] = s;
        if (n != 14 && n != 17) { /* trace versions 2 and 4 */
            rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "op",
                               "expected 14 or 17 fields from the tracer, found %d", n);
            break;
        }
        char *lend, *gend;
        long layer = strtol(tok[4], &lend, 10), g = strtol(tok[10], &gend, 10);
        if (*gend || g < -1 || g > MAX_LOCAL) g = MAX_LOCAL; /* reported below */
        if (*lend || layer < -1 || layer >= TRACE_MAX_LAYERS) {
            rc =
                tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "layer",
                              "expected a layer in -1..%d, got '%s'", TRACE_MAX_LAYERS - 1, tok[4]);
            break;
        }
        if (layer > *max_layer) *max_layer = (int)layer;
        if (g >= 0) {
            if (g >= MAX_LOCAL || map[g] < 0) {
                rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "group",
                                   "communicator %ld is not in comms-%05d.tps", g, r);
                break;
            }
            g = map[g];
            int send = !strncmp(tok[6], "send:", 5), recv = !strncmp(tok[6], "recv:", 5);
            if (send || recv) {
                int peer = global_of(m, span[g][0], span[g][1], atoi(tok[6] + 5));
                g = peer < 0 ? -1 : send ? pair_group(G, r, peer) : pair_group(G, peer, r);
                if (g < 0) {
                    rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "name",
                                       "peer of '%s' is not in its communicator", tok[6]);
                    break;
                }
            }
        }
        fprintf(out, "%s %s %s %s %s %s %s %s %s %s %ld", tok[0], tok[1], tok[2], tok[3], tok[4],
                tok[5], tok[6], tok[7], tok[8], tok[9], g);
        for (int t = 11; t < n; t++)
            fprintf(out, " %s", tok[t]);
        fputc('\n', out);
    }
    fclose(in);
    if (fclose(out) != 0 && !rc) rc = tps_error_set(err, TPS_EIO, tmp, 0, 0, NULL, "cannot write");
    return rc;
}

/* Removes a directory of trace files (meta.tps, rank-*.tps) and the directory. */
static void remove_trace_dir(const char *d)
{
    char path[1100 + 32];
    snprintf(path, sizeof path, "%s/meta.tps", d);
    remove(path);
    for (int r = 0;; r++) {
        snprintf(path, sizeof path, "%s/rank-%05d.tps", d, r);
        if (remove(path) != 0) break;
    }
    rmdir(d);
}

int trace_merge(const char *dir, const char *outdir, const char *platform, int force,
                struct tps_error *err)
{
    char odef[1024], odir[1100];
    if (!outdir) {
        snprintf(odef, sizeof odef, "%s/merged", dir);
        outdir = odef;
    }
    struct stat sb;
    snprintf(odir, sizeof odir, "%s/meta.tps", dir);
    if (stat(odir, &sb) == 0)
        return tps_error_set(err, TPS_EINVAL, dir, 0, 0, NULL,
                             "already a replayable trace (it has meta.tps): replay it as it is");
    if (stat(outdir, &sb) == 0 && !force)
        return tps_error_set(err, TPS_EINVAL, outdir, 0, 0, NULL,
                             "exists: the recording was merged already (--force merges again)");
    int R = rank_count(dir);
    if (R == 0)
        return tps_error_set(err, TPS_EIO, dir, 0, 0, NULL,
                             "no rank-00000.tps: not a tracer output directory");
    tps_input_note(dir); /* the recording: --force never replaces it */
    if (tps_output_check(outdir, err)) return TPS_EINVAL;
    /* the merged trace is written beside, then renamed: the recording is never changed */
    snprintf(odir, sizeof odir, "%s.tmp-XXXXXX", outdir);
    if (!mkdtemp(odir))
        return tps_error_set(err, TPS_EIO, outdir, 0, 0, NULL, "cannot create: %s",
                             strerror(errno));
    struct member *m = NULL;
    int nm = 0, cap = 0, rc = TPS_OK;
    for (int r = 0; r < R && !rc; r++) {
        char path[1024], line[512];
        snprintf(path, sizeof path, "%s/comms-%05d.tps", dir, r);
        FILE *f = fopen(path, "r");
        if (!f) {
            rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
            break;
        }
        for (int lineno = 1; !rc && fgets(line, sizeof line, f); lineno++) {
            if (line[0] == '#' || line[0] == '\n') continue;
            struct member x = {.rank = r};
            if (sscanf(line, "comm %d %llx %d %d", &x.local, &x.id, &x.nranks, &x.crank) != 4 ||
                x.local < 0 || x.local >= MAX_LOCAL || x.nranks < 1 || x.crank < 0 ||
                x.crank >= x.nranks) {
                rc = tps_error_set(err, TPS_ESYNTAX, path, lineno, 1, "comm",
                                   "expected 'comm LOCAL IDENTITY NRANKS RANK'");
                break;
            }
            if (tps_grow(&m, &cap, nm + 1, sizeof *m, 64)) {
                rc = tps_error_oom(err);
                break;
            }
            m[nm++] = x;
        }
        fclose(f);
    }
    if (!rc && nm) qsort(m, (size_t)nm, sizeof *m, member_cmp);
    /* groups: runs of equal identity */
    int *gmap = calloc((size_t)R * MAX_LOCAL, sizeof *gmap), ng = 0;
    int(*gstart)[2] = calloc((size_t)nm + 1, sizeof *gstart); /* at most one group per member */
    if (!rc && (!gmap || !gstart))
        rc = tps_error_set(err, TPS_ENOMEM, NULL, 0, 0, NULL, "no memory");
    for (int i = 0; !rc && i < R * MAX_LOCAL; i++)
        gmap[i] = -1;
    for (int i = 0; !rc && i < nm;) {
        int j = i;
        while (j < nm && m[j].id == m[i].id)
            j++;
        if (j - i != m[i].nranks) {
            rc = tps_error_set(err, TPS_EINVAL, dir, 0, 0, "comm",
                               "communicator %016llx has %d ranks, but %d traced it: trace every "
                               "rank of a job",
                               m[i].id, m[i].nranks, j - i);
            break;
        }
        gstart[ng][0] = i;
        gstart[ng][1] = j;
        for (int k = i; k < j; k++)
            gmap[m[k].rank * MAX_LOCAL + m[k].local] = ng;
        ng++;
        i = j;
    }
    struct groups G = {0};
    if (!rc && reserve(&G, ng + 1)) rc = tps_error_oom(err);
    for (int g = 0; !rc && g < ng; g++) {
        G.g[g].n = gstart[g][1] - gstart[g][0];
        G.g[g].ranks = malloc((size_t)G.g[g].n * sizeof(int));
        if (!G.g[g].ranks) {
            rc = tps_error_oom(err);
            break;
        }
        for (int k = gstart[g][0]; k < gstart[g][1]; k++)
            G.g[g].ranks[k - gstart[g][0]] = m[k].rank;
        G.n = G.ncomm = g + 1;
    }
    int max_layer = -1;
    for (int r = 0; !rc && r < R; r++)
        rc = rewrite_rank(dir, odir, r, &gmap[r * MAX_LOCAL], &max_layer, &G, m, gstart, err);
    if (!rc) {
        char path[1200];
        snprintf(path, sizeof path, "%s/meta.tps", odir);
        FILE *f = fopen(path, "w");
        if (!f) {
            rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
        } else {
            fprintf(f, "tpsim-trace %d\n# merged by tpsim trace-merge from a tracer recording\n",
                    TRACE_VERSION);
            fprintf(f, "ranks %d\nlayers %d\nmicro_batches 1\n", R,
                    max_layer + 1 > 0 ? max_layer + 1 : 1);
            if (platform && platform[0]) fprintf(f, "platform %s\n", platform);
            for (int g = 0; g < G.n; g++) {
                fprintf(f, "group %d", g);
                for (int k = 0; k < G.g[g].n; k++)
                    fprintf(f, " %d", G.g[g].ranks[k]);
                fputc('\n', f);
            }
            if (fclose(f) != 0) rc = tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot write");
        }
    }
    if (!rc && force && stat(outdir, &sb) == 0) remove_trace_dir(outdir);
    if (!rc && rename(odir, outdir) != 0)
        rc = tps_error_set(err, TPS_EIO, outdir, 0, 0, NULL, "cannot create: %s", strerror(errno));
    if (rc) remove_trace_dir(odir);
    for (int g = 0; g < G.n; g++)
        free(G.g[g].ranks);
    free(G.g);
    free(m);
    free(gmap);
    free(gstart);
    return rc;
}
