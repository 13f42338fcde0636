/* spec.c - platform specifications in YAML: presets with parameters, explicit topology files
 * and SimGrid XML files (see spec.h, docs/platforms.md). Calls preset.c and topo.c; errors
 * carry file:line:col of the offending YAML node. Units: bytes/s, seconds. */
#include "spec.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/units.h"
#include "preset.h"
#include "common/grow.h"
#include "common/strindex.h"
#include "common/inputs.h"

void plat_path_resolve(const char *base_dir, const char *path, char *out, size_t len)
{
    if (path[0] == '/' || !base_dir || !base_dir[0] || !strcmp(base_dir, "."))
        snprintf(out, len, "%s", path);
    else
        snprintf(out, len, "%s/%s", base_dir, path);
}

void plat_path_dir(const char *path, char *out, size_t len)
{
    snprintf(out, len, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(out, len, ".");
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "a.b" (or "b") into out, ending in "..." when it does not fit: a field name in a message. */
static void join(char *out, size_t len, const char *a, const char *b)
{
    int n = a && a[0] ? snprintf(out, len, "%s.%s", a, b) : snprintf(out, len, "%s", b);
    if (n >= (int)len && len > 4) memcpy(out + len - 4, "...", 4);
}

/* ------------------------------------------------------------ SimGrid XML platform files */

/* Lists the ids of <host> elements in document order: those are the GPUs. */
/* Checks, before SimGrid sees them, the values SimGrid would abort on: every bandwidth and
 * speed must be a positive finite number, every latency a non-negative one. */
static int xml_check_values(const char *text, const char *path, struct tps_error *err)
{
    static const char *const attrs[] = {
        " bandwidth=", " speed=",      " latency=", "\tbandwidth=", "\tspeed=",
        "\tlatency=",  "\nbandwidth=", "\nspeed=",  "\nlatency="};
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
        for (const char *p = strstr(text, attrs[a]); p; p = strstr(p + 1, attrs[a])) {
            const char *v = p + strlen(attrs[a]);
            if (*v != '"' && *v != '\'') continue;
            char *end;
            double x = strtod(v + 1, &end);
            int lat = strstr(attrs[a], "latency") != NULL;
            if (end != v + 1 && isfinite(x) && (lat ? x >= 0 : x > 0)) continue;
            int line = 1, col = 1;
            for (const char *q = text; q < v; q++) {
                col = *q == '\n' ? 1 : col + 1;
                line += *q == '\n';
            }
            char field[16];
            snprintf(field, sizeof field, "%.*s", (int)strlen(attrs[a]) - 2, attrs[a] + 1);
            return tps_error_set(err, TPS_EINVAL, path, line, col, field,
                                 "must be a %s number (SimGrid would abort on it)",
                                 lat ? "non-negative" : "positive");
        }
    }
    return TPS_OK;
}

static int load_xml(const char *path, struct plat_topo *t, struct tps_error *err)
{
    plat_topo_init(t, path);
    snprintf(t->xml_path, sizeof t->xml_path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return tps_error_set(err, TPS_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    tps_input_note(path);
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (64 << 20)) {
        fclose(f);
        return tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL, "not a SimGrid platform file (%s)",
                             S_ISDIR(sb.st_mode) ? "a directory"
                                                 : "not a regular file of 64 MiB or less");
    }
    long size = (long)sb.st_size;
    char *text = malloc((size_t)size + 1);
    if (!text) {
        fclose(f);
        return tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
    }
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
    fclose(f);
    int rc = TPS_OK, cap = 0;
    if (!strstr(text, "<platform")) {
        rc = tps_error_set(err, TPS_EINVAL, path, 1, 1, NULL,
                           "not a SimGrid platform file (no <platform> element)");
        goto done;
    }
    for (char *p = strstr(text, "<host"); p; p = strstr(p + 5, "<host")) {
        if (p[5] != ' ' && p[5] != '\t' && p[5] != '\n') continue; /* <host_link> etc. */
        char *end = strchr(p, '>');
        char *id = strstr(p, "id=");
        if (!end || !id || id > end || (id[3] != '"' && id[3] != '\'')) continue;
        char q = id[3];
        char *v = id + 4, *ve = strchr(v, q);
        if (!ve) break;
        if (tps_grow(&t->xml_hosts, &cap, t->ngpus + 1, sizeof *t->xml_hosts, 16)) {
            rc = tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
            goto done;
        }
        t->xml_hosts[t->ngpus] = strndup(v, (size_t)(ve - v));
        if (!t->xml_hosts[t->ngpus]) {
            rc = tps_error_set(err, TPS_ENOMEM, path, 0, 0, NULL, "out of memory");
            goto done;
        }
        t->ngpus++;
    }
    if (t->ngpus == 0)
        rc = tps_error_set(err, TPS_EINVAL, path, 0, 0, NULL, "no <host> element: no GPU to use");
    if (!rc) rc = xml_check_values(text, path, err);
    snprintf(t->desc, sizeof t->desc, "SimGrid platform file, %d hosts used as GPUs", t->ngpus);
done:
    free(text);
    return rc;
}

/* ------------------------------------------------------------ preset with parameters */

static int parse_ib(const struct tps_ydoc *d, int id, const char *f, double *out,
                    struct tps_error *err)
{
    const char *t = tps_ydoc_text(d, id);
    static const struct {
        const char *n;
        double bps;
    } rates[] = {{"EDR", 12.5e9}, {"HDR", 25e9}, {"NDR", 50e9}, {"XDR", 100e9}};
    for (size_t i = 0; t && i < sizeof rates / sizeof rates[0]; i++) {
        if (!strcmp(t, rates[i].n)) {
            *out = rates[i].bps;
            return TPS_OK;
        }
    }
    return tps_ydoc_fail(d, id, f, err, "expected EDR, HDR, NDR or XDR, got '%s'", t ? t : "");
}

/* ------------------------------------------------------------ collective tuning */

static int parse_per_proto(const struct tps_ydoc *d, int id, const char *field, int is_time,
                           double *v, struct tps_error *err)
{
    static const char *const keys[] = {"LL", "LL128", "Simple", NULL};
    int rc = tps_ydoc_check_map(d, id, field, keys, err);
    for (int p = MDL_PROTO_LL; !rc && p < MDL_PROTO_N; p++) {
        int vid = tps_ydoc_get(d, id, mdl_proto_name((enum mdl_coll_proto)p));
        if (!vid) continue;
        char f[200];
        join(f, sizeof f, field, mdl_proto_name((enum mdl_coll_proto)p));
        if (is_time) {
            rc = tps_ydoc_time(d, vid, f, &v[p], err);
        } else if (!(rc = tps_ydoc_double(d, vid, f, &v[p], err)) && !(v[p] >= 0 && v[p] <= 1)) {
            rc = tps_ydoc_fail(d, vid, f, err,
                               "an efficiency lies in [0, 1] (0 disables the protocol), got %g",
                               v[p]);
        }
    }
    return rc;
}

static int read_chunk(const struct tps_ydoc *d, int v, const char *f, void *dst,
                      struct tps_error *err)
{
    const char *str = tps_ydoc_text(d, v);
    if (!str || tps_units_size(str, (double *)dst) || !(*(double *)dst >= 1))
        return tps_ydoc_fail(d, v, f, err, "expected a size such as 4MiB, got '%s'",
                             str ? str : "");
    return TPS_OK;
}

static int read_per_proto(const struct tps_ydoc *d, int v, const char *f, int is_time, void *dst,
                          struct tps_error *err)
{
    if (!tps_ydoc_is_map(d, v))
        return tps_ydoc_fail(d, v, f, err, "expected a mapping of LL, LL128 and Simple");
    return parse_per_proto(d, v, f, is_time, (double *)dst, err);
}

static int read_latencies(const struct tps_ydoc *d, int v, const char *f, void *dst,
                          struct tps_error *err)
{
    return read_per_proto(d, v, f, 1, dst, err);
}

static int read_efficiencies(const struct tps_ydoc *d, int v, const char *f, void *dst,
                             struct tps_error *err)
{
    return read_per_proto(d, v, f, 0, dst, err);
}

/* tree_rate: one rate for groups over any number of machines */
static int read_tree_rate(const struct tps_ydoc *d, int v, const char *f, void *dst,
                          struct tps_error *err)
{
    double r, *out = dst;
    int rc = tps_ydoc_rate(d, v, f, &r, err);
    if (rc) return rc;
    out[0] = out[1] = out[2] = r;
    return TPS_OK;
}

/* a rate, or 0 for none (a channel without a limit) */
static int read_rate_or_zero(const struct tps_ydoc *d, int v, const char *f, void *dst,
                             struct tps_error *err)
{
    const char *s = tps_ydoc_text(d, v);
    if (s && !strcmp(s, "0")) {
        *(double *)dst = 0;
        return TPS_OK;
    }
    return tps_ydoc_rate(d, v, f, (double *)dst, err);
}

/* a count up to `most`, or 0 for NCCL's own */
static int read_count_or_zero(const struct tps_ydoc *d, int v, const char *f, int *dst, long most,
                              struct tps_error *err)
{
    const char *s = tps_ydoc_text(d, v);
    long n = 0;
    if (s && s[0] == '-')
        return tps_ydoc_fail(d, v, f, err, "expected 0 (NCCL's own) or a count, got %s", s);
    int rc = s && !strcmp(s, "0") ? TPS_OK : tps_ydoc_count(d, v, f, &n, err);
    if (rc) return rc;
    if (n > most) return tps_ydoc_fail(d, v, f, err, "too large: %ld (at most %ld)", n, most);
    *dst = (int)n;
    return TPS_OK;
}

static int read_min_ctas(const struct tps_ydoc *d, int v, const char *f, void *dst,
                         struct tps_error *err)
{
    return read_count_or_zero(d, v, f, dst, 64, err);
}

static int read_p2p_channels(const struct tps_ydoc *d, int v, const char *f, void *dst,
                             struct tps_error *err)
{
    return read_count_or_zero(d, v, f, dst, 32, err);
}

#define NC(field) offsetof(struct mdl_nccl, field)
static const struct tps_ykey nccl_keys[] = {
    {"algorithm", TPS_YK_ENUM, NC(algo), 0, {.names = mdl_algo_names}},
    {"protocol", TPS_YK_ENUM, NC(proto), 0, {.names = mdl_proto_names}},
    {"granularity", TPS_YK_ENUM, NC(gran), 0, {.names = mdl_gran_names}},
    {"flow_threshold", TPS_YK_INT, NC(flow_threshold), 0, {NULL}},
    {"channels", TPS_YK_INT, NC(channels), MDL_MAX_CHANNELS, {NULL}},
    {"chunk", TPS_YK_FN, NC(chunk_bytes), 0, {.fn = read_chunk}},
    {"base_latency", TPS_YK_FN, NC(base_s), 0, {.fn = read_latencies}},
    {"hop_latency", TPS_YK_FN, NC(hop_s), 0, {.fn = read_latencies}},
    {"efficiency", TPS_YK_FN, NC(eff), 0, {.fn = read_efficiencies}},
    {"nvls", TPS_YK_BOOL, NC(nvls), 0, {NULL}},
    {"nvls_efficiency", TPS_YK_FRACTION, NC(nvls_eff), 0, {NULL}},
    {"nvls_tree", TPS_YK_BOOL, NC(nvls_tree), 0, {NULL}},
    {"nvls_channels", TPS_YK_INT, NC(nvls_channels), 64, {NULL}},
    {"nvls_chunk", TPS_YK_FN, NC(nvls_chunk_bytes), 0, {.fn = read_chunk}},
    {"collnet", TPS_YK_BOOL, NC(collnet), 0, {NULL}},
    {"tree_rate", TPS_YK_FN, NC(tree_rate_Bps), 0, {.fn = read_tree_rate}},
    {"net_channel_rate", TPS_YK_FN, NC(net_channel_Bps), 0, {.fn = read_rate_or_zero}},
    {"min_ctas", TPS_YK_FN, NC(min_ctas), 0, {.fn = read_min_ctas}},
    {"p2p_base_latency", TPS_YK_TIME, NC(p2p_base_s), 0, {NULL}},
    {"p2p_channel_rate", TPS_YK_FN, NC(p2p_channel_Bps), 0, {.fn = read_rate_or_zero}},
    {"p2p_channels", TPS_YK_FN, NC(p2p_channels), 0, {.fn = read_p2p_channels}},
    {"p2p_net_channels", TPS_YK_INT, NC(p2p_net_channels), 32, {NULL}},
    {"p2p_net_chunk", TPS_YK_FN, NC(p2p_net_chunk_bytes), 0, {.fn = read_chunk}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef NC

int plat_nccl_parse(const struct tps_ydoc *d, int id, const char *field, struct mdl_nccl *n,
                    struct tps_error *err)
{
    return tps_ydoc_read_map(d, id, field, nccl_keys, n, err);
}

static int read_ib(const struct tps_ydoc *d, int v, const char *f, void *dst, struct tps_error *err)
{
    return parse_ib(d, v, f, (double *)dst, err);
}

/* A tier's oversubscription (down-link over up-link rate): built fabrics run 1:1 to 8:1; beyond
 * 100:1 a value is a typo, and the up-links' rate would fall towards nothing. */
#define MAX_OVERSUB 100

/* The keys of a preset with parameters: "preset" and "nccl" are read by read_preset. */
#define PP(field) offsetof(struct plat_params, field)
static const struct tps_ykey preset_keys[] = {
    {"preset", TPS_YK_SKIP, 0, 0, {NULL}},
    {"nodes", TPS_YK_INT, PP(nodes), 65536, {NULL}},
    {"racks", TPS_YK_INT, PP(nodes), 65536, {NULL}},
    {"nvlink_domain", TPS_YK_INT, PP(domain_gpus), PLAT_MAX_LOCAL, {NULL}},
    {"pcie_gen", TPS_YK_INT, PP(pcie_gen), 65536, {NULL}},
    {"sockets", TPS_YK_INT, PP(sockets), 65536, {NULL}},
    {"nvlink_bridges", TPS_YK_BOOL, PP(nvlink_bridges), 0, {NULL}},
    {"nics_per_node", TPS_YK_INT, PP(nics_per_node), 65536, {NULL}},
    {"ib", TPS_YK_FN, PP(nic_Bps), 0, {.fn = read_ib}},
    {"nic_rate", TPS_YK_RATE, PP(nic_Bps), 0, {NULL}},
    {"oversubscription", TPS_YK_POSITIVE, PP(oversub), MAX_OVERSUB, {NULL}},
    {"leaf_ports", TPS_YK_INT, PP(leaf_ports), 65536, {NULL}},
    {"fabric", TPS_YK_ENUM, PP(fabric), 0, {.names = plat_fabric_names}},
    {"pod_leaves", TPS_YK_INT, PP(pod_leaves), 65536, {NULL}},
    {"spine_oversubscription", TPS_YK_POSITIVE, PP(spine_oversub), MAX_OVERSUB, {NULL}},
    {"network", TPS_YK_ENUM, PP(network), 0, {.names = plat_network_names}},
    {"gpu_link", TPS_YK_RATE, PP(gpu_link_Bps), 0, {NULL}},
    {"xsocket", TPS_YK_RATE, PP(xsocket_Bps), 0, {NULL}},
    {"nvlink_latency", TPS_YK_TIME, PP(lat_nvlink_s), 0, {NULL}},
    {"pcie_latency", TPS_YK_TIME, PP(lat_pcie_s), 0, {NULL}},
    {"net_latency", TPS_YK_TIME, PP(lat_net_s), 0, {NULL}},
    {"nic_latency", TPS_YK_TIME, PP(lat_nic_s), 0, {NULL}},
    {"pcie_rate", TPS_YK_RATE, PP(pcie_Bps), 0, {NULL}},
    {"nccl", TPS_YK_SKIP, 0, 0, {NULL}},
    {"degraded_links", TPS_YK_SKIP, 0, 0, {NULL}},
    {NULL, TPS_YK_SKIP, 0, 0, {NULL}}};
#undef PP

/* Node `name` of t: through index x (explicit topologies), or by a scan when x is NULL. */
static int find_node(const struct tps_strindex *x, const struct plat_topo *t, const char *name);

/* between: [A, B] of link entry l: the two nodes' indices into ends (field names errors). */
static int read_ends(const struct tps_ydoc *d, int l, const char *field, const struct plat_topo *t,
                     const struct tps_strindex *x, int ends[2], struct tps_error *err)
{
    int bt = tps_ydoc_get(d, l, "between");
    if (!bt || !tps_ydoc_is_seq(d, bt) || tps_ydoc_len(d, bt) != 2)
        return tps_ydoc_fail(d, bt ? bt : l, field, err, "expected [A, B]: the link's two nodes");
    for (int e = 0; e < 2; e++) {
        int en = tps_ydoc_seq_at(d, bt, e);
        const char *nm = tps_ydoc_text(d, en);
        ends[e] = nm ? find_node(x, t, nm) : -1;
        if (ends[e] < 0)
            return tps_ydoc_fail(d, en, field, err,
                                 "unknown node '%s' (tpsim platform show lists them)",
                                 nm ? nm : "");
    }
    return TPS_OK;
}

/* degraded_links: [{between: [A, B], factor: F | bandwidth: RATE}, ...] on a built preset: the
 * link joining nodes A and B runs at F times its rate, or at RATE (a degraded NVLink, a slow
 * NIC; docs/heterogeneity.md). */
static int apply_degraded(const struct tps_ydoc *d, int id, const char *field, struct plat_topo *t,
                          struct tps_error *err)
{
    static const char *const keys[] = {"between", "factor", "bandwidth", "from",
                                       "for",     "every",  NULL};
    char f[160], fi[192], fk[224];
    join(f, sizeof f, field, "degraded_links");
    int lid = tps_ydoc_get(d, id, "degraded_links"), rc;
    if (!lid) return TPS_OK;
    if (!tps_ydoc_is_seq(d, lid))
        return tps_ydoc_fail(d, lid, f, err,
                             "expected a list of {between: [A, B], factor: F} (or bandwidth: "
                             "RATE)");
    for (int i = 0; i < tps_ydoc_len(d, lid); i++) {
        int l = tps_ydoc_seq_at(d, lid, i);
        snprintf(fi, sizeof fi, "%s[%d]", f, i);
        if ((rc = tps_ydoc_check_map(d, l, fi, keys, err))) return rc;
        int bt = tps_ydoc_get(d, l, "between"), fn = tps_ydoc_get(d, l, "factor");
        int bn = tps_ydoc_get(d, l, "bandwidth");
        snprintf(fk, sizeof fk, "%s.between", fi);
        int ends[2];
        if ((rc = read_ends(d, l, fk, t, NULL, ends, err))) return rc;
        int link = -1;
        for (int k = 0; k < t->nlinks && link < 0; k++)
            if ((t->links[k].a == ends[0] && t->links[k].b == ends[1]) ||
                (t->links[k].a == ends[1] && t->links[k].b == ends[0]))
                link = k;
        if (link < 0)
            return tps_ydoc_fail(d, bt, fk, err, "no link joins %s and %s", t->nodes[ends[0]].name,
                                 t->nodes[ends[1]].name);
        if (!fn == !bn) return tps_ydoc_fail(d, l, fi, err, "give one of factor or bandwidth");
        double x;
        if (fn) {
            snprintf(fk, sizeof fk, "%s.factor", fi);
            if ((rc = tps_ydoc_double(d, fn, fk, &x, err))) return rc;
            if (!(x > 0 && x <= 1))
                return tps_ydoc_fail(d, fn, fk, err, "must be above 0 and at most 1, got %g", x);
            x *= t->links[link].bw_Bps;
            if (x < TPS_YDOC_MIN_RATE)
                return tps_ydoc_fail(d, fn, fk, err, "leaves the link below 1 kB/s");
        } else {
            snprintf(fk, sizeof fk, "%s.bandwidth", fi);
            if ((rc = tps_ydoc_rate(d, bn, fk, &x, err))) return rc;
        }
        int from = tps_ydoc_get(d, l, "from"), dur = tps_ydoc_get(d, l, "for");
        int every = tps_ydoc_get(d, l, "every");
        snprintf(fk, sizeof fk, "%s.for", fi);
        if (!dur && (from || every))
            return tps_ydoc_fail(d, from ? from : every, fk, err,
                                 "a link slowed for a while needs `for`: how long");
        if (!dur) { /* for the whole run */
            t->links[link].bw_Bps = x;
            continue;
        }
        if (t->nevents == PLAT_MAX_LINK_EVENTS)
            return tps_ydoc_fail(d, l, fi, err, "at most %d links slowed for a while",
                                 PLAT_MAX_LINK_EVENTS);
        struct plat_link_event ev = {.link = link, .ratio = x / t->links[link].bw_Bps};
        if ((rc = tps_ydoc_time(d, dur, fk, &ev.for_s, err))) return rc;
        if (!(ev.for_s > 0)) return tps_ydoc_fail(d, dur, fk, err, "must be above 0");
        snprintf(fk, sizeof fk, "%s.from", fi);
        if (from && (rc = tps_ydoc_time(d, from, fk, &ev.from_s, err))) return rc;
        snprintf(fk, sizeof fk, "%s.every", fi);
        if (every && (rc = tps_ydoc_time(d, every, fk, &ev.every_s, err))) return rc;
        if (every && !(ev.every_s > ev.for_s))
            return tps_ydoc_fail(d, every, fk, err,
                                 "the period must be longer than `for` (%g s), got %g s", ev.for_s,
                                 ev.every_s);
        if (every) /* where an error of the simulation points (PLAT_MAX_LINK_PERIODS) */
            tps_ydoc_fail(d, every, fk, &ev.where, "period");
        t->events[t->nevents++] = ev;
    }
    return TPS_OK;
}

/* Applies the preset parameters of mapping `id` onto *pp and *nc; a `preset:` key starts from
 * that preset's defaults. */
static int read_preset(const struct tps_ydoc *d, int id, const char *field,
                       const struct tps_ykey *keys, struct plat_params *pp, struct mdl_nccl *nc,
                       struct tps_error *err)
{
    if (!tps_ydoc_is_map(d, id))
        return tps_ydoc_fail(d, id, field, err, "expected a mapping of keys to values");
    char f[160];
    join(f, sizeof f, field, "preset");
    int pid = tps_ydoc_get(d, id, "preset");
    const char *name;
    int rc;
    if (pid) {
        if ((rc = tps_ydoc_str(d, pid, f, &name, err))) return rc;
        if (plat_params_default(name, pp) != 0) {
            char list[256];
            tps_names_join(plat_preset_names(), list, sizeof list);
            return tps_ydoc_fail(d, pid, f, err,
                                 "unknown platform preset '%s' (expected one of: %s)", name, list);
        }
        plat_nccl_preset(name, nc);
    }
    struct plat_params p = *pp;
    struct mdl_nccl nccl = *nc;
    /* racks: the machines of a rack-scale preset, whose NVLink domain is a rack */
    int rid = tps_ydoc_get(d, id, "racks");
    join(f, sizeof f, field, "racks");
    if (rid && tps_ydoc_get(d, id, "nodes"))
        return tps_ydoc_fail(d, rid, f, err, "give racks or nodes, not both (a rack is a machine)");
    if (rid && !plat_preset_racks(p.preset))
        return tps_ydoc_fail(d, rid, f, err, "'%s' is built of servers: give nodes", p.preset);
    if ((rc = tps_ydoc_read_map(d, id, field, keys, &p, err))) return rc;
    int nid = tps_ydoc_get(d, id, "nccl");
    join(f, sizeof f, field, "nccl");
    if (nid && (rc = plat_nccl_parse(d, nid, f, &nccl, err))) return rc;
    *pp = p;
    *nc = nccl;
    return TPS_OK;
}

/* Builds a preset, positioning a parameter error on its key in mapping `id`. */
static int build_preset(const struct tps_ydoc *d, int id, const char *field,
                        const struct plat_params *pp, const struct mdl_nccl *nc,
                        struct plat_topo *out, struct tps_error *err)
{
    struct plat_params p = *pp;
    char f[160];
    int rc;
    struct tps_error e2 = {0};
    rc = plat_preset_build(&p, nc, out, &e2);
    if (rc) {
        /* position the error on the offending key, or on the mapping */
        int vid = e2.field[0] ? tps_ydoc_get(d, id, e2.field) : 0;
        join(f, sizeof f, field, e2.field[0] ? e2.field : "preset");
        return tps_ydoc_fail(d, vid ? vid : id, f, err, "%s", e2.msg);
    }
    out->nccl = *nc;
    return TPS_OK;
}

static int parse_preset(const struct tps_ydoc *d, int id, const char *field, struct plat_topo *out,
                        struct tps_error *err)
{
    struct plat_params p;
    struct mdl_nccl nc;
    int rc = read_preset(d, id, field, preset_keys, &p, &nc, err);
    if (!rc) rc = build_preset(d, id, field, &p, &nc, out, err);
    return rc ? rc : apply_degraded(d, id, field, out, err);
}

/* {file: F, key: value...}: the preset file F with some of its parameters replaced. */
static int parse_file_override(const struct tps_ydoc *d, int id, const char *field,
                               const char *path, struct plat_topo *out, struct tps_error *err)
{
    struct tps_ykey keys[sizeof preset_keys / sizeof preset_keys[0] + 1];
    int k = 0;
    for (; preset_keys[k].key; k++)
        keys[k] = preset_keys[k];
    keys[k++] = (struct tps_ykey){"file", TPS_YK_SKIP, 0, 0, {NULL}};
    keys[k] = (struct tps_ykey){NULL, TPS_YK_SKIP, 0, 0, {NULL}};
    struct tps_ydoc fd;
    int rc = tps_ydoc_load_file(&fd, path, err);
    if (rc) return rc;
    struct plat_params p;
    struct mdl_nccl nc;
    int root = tps_ydoc_root(&fd);
    if (!tps_ydoc_is_map(&fd, root) || !tps_ydoc_get(&fd, root, "preset"))
        rc = tps_ydoc_fail(&fd, root, "preset", err,
                           "parameters can only replace those of a preset file");
    if (!rc) rc = read_preset(&fd, root, "", preset_keys, &p, &nc, err);
    if (!rc) rc = read_preset(d, id, field, keys, &p, &nc, err);
    if (!rc) rc = build_preset(d, id, field, &p, &nc, out, err);
    if (!rc) rc = apply_degraded(d, id, field, out, err);
    /* the name shown for the platform: the file's path, shortened at its start if it must be */
    size_t pl = strlen(path), cap = sizeof out->name;
    if (!rc && pl < cap) {
        memcpy(out->name, path, pl + 1);
    } else if (!rc) {
        memcpy(out->name, "...", 3);
        memcpy(out->name + 3, path + pl - (cap - 4), cap - 3); /* with the final NUL */
    }
    tps_ydoc_release(&fd);
    return rc;
}

/* ------------------------------------------------------------ explicit topology */

static const char *const topo_keys[] = {"name",  "description", "gpus", "gpus_per_machine",
                                        "nodes", "links",       "nccl", NULL};
static const char *const node_keys[] = {"name", "kind", "forward", NULL};
static const char *const link_keys[] = {"between", "bandwidth", "latency", "shared", "level", NULL};

/* Topology node names are looked up through a hash index (common/strindex.h), so that a
 * topology of n nodes and links is read in O(n), not O(n^2). */
static const char *node_key(const void *ctx, int i)
{
    return ((const struct plat_topo *)ctx)->nodes[i].name;
}

static int find_node(const struct tps_strindex *x, const struct plat_topo *t, const char *name)
{
    if (x) return tps_strindex_find(x, name, node_key, t);
    for (int n = 0; n < t->nnodes; n++)
        if (!strcmp(t->nodes[n].name, name)) return n;
    return -1;
}

static int parse_explicit_in(const struct tps_ydoc *d, int id, const char *field,
                             struct plat_topo *t, struct tps_strindex *x, struct tps_error *err);

static int parse_explicit(const struct tps_ydoc *d, int id, const char *field, struct plat_topo *t,
                          struct tps_error *err)
{
    struct tps_strindex x = {0};
    int rc = parse_explicit_in(d, id, field, t, &x, err);
    tps_strindex_release(&x);
    return rc;
}

static int parse_explicit_in(const struct tps_ydoc *d, int id, const char *field,
                             struct plat_topo *t, struct tps_strindex *x, struct tps_error *err)
{
    int rc = tps_ydoc_check_map(d, id, field, topo_keys, err);
    if (rc) return rc;
    char f[160];
    long ngpu = 0, per = 0;
    join(f, sizeof f, field, "gpus");
    int gid = tps_ydoc_get(d, id, "gpus");
    if (!gid) return tps_ydoc_fail(d, id, f, err, "missing: a topology needs 'gpus' or 'preset'");
    if ((rc = tps_ydoc_count(d, gid, f, &ngpu, err))) return rc;
    if (ngpu > 65536) return tps_ydoc_fail(d, gid, f, err, "too large: %ld", ngpu);
    per = ngpu;
    int pid = tps_ydoc_get(d, id, "gpus_per_machine");
    join(f, sizeof f, field, "gpus_per_machine");
    if (pid && (rc = tps_ydoc_count(d, pid, f, &per, err))) return rc;
    int nid = tps_ydoc_get(d, id, "name");
    if (nid)
        snprintf(t->name, sizeof t->name, "%s", tps_ydoc_text(d, nid) ? tps_ydoc_text(d, nid) : "");
    int did = tps_ydoc_get(d, id, "description");
    if (did && tps_ydoc_text(d, did))
        snprintf(t->desc, sizeof t->desc, "%s", tps_ydoc_text(d, did));
    for (long g = 0; g < ngpu; g++) {
        char name[32];
        snprintf(name, sizeof name, "gpu%ld", g);
        if (plat_topo_node(t, name, PLAT_GPU, (int)(g / per), 0) < 0) return tps_error_oom(err);
    }
    t->machines = (int)((ngpu + per - 1) / per);
    if (tps_strindex_update(x, t->nnodes, node_key, t)) return tps_error_oom(err);
    int nodes = tps_ydoc_get(d, id, "nodes");
    join(f, sizeof f, field, "nodes");
    if (nodes && !tps_ydoc_is_seq(d, nodes))
        return tps_ydoc_fail(d, nodes, f, err, "expected a list of nodes");
    for (int i = 0; i < tps_ydoc_len(d, nodes); i++) {
        int n = tps_ydoc_seq_at(d, nodes, i);
        char fi[176], fk[200];
        snprintf(fi, sizeof fi, "%s[%d]", f, i);
        if ((rc = tps_ydoc_check_map(d, n, fi, node_keys, err))) return rc;
        const char *name, *kind = "switch";
        snprintf(fk, sizeof fk, "%s.name", fi);
        int nn = tps_ydoc_get(d, n, "name");
        if (!nn) return tps_ydoc_fail(d, n, fk, err, "missing");
        if ((rc = tps_ydoc_str(d, nn, fk, &name, err))) return rc;
        if (find_node(x, t, name) >= 0)
            return tps_ydoc_fail(d, nn, fk, err, "duplicate node '%s'", name);
        snprintf(fk, sizeof fk, "%s.kind", fi);
        int kn = tps_ydoc_get(d, n, "kind");
        if (kn && (rc = tps_ydoc_str(d, kn, fk, &kind, err))) return rc;
        enum plat_kind k = !strcmp(kind, "switch") ? PLAT_SWITCH
                           : !strcmp(kind, "nic")  ? PLAT_NIC
                           : !strcmp(kind, "cpu")  ? PLAT_CPU
                                                   : (enum plat_kind) - 1;
        if ((int)k < 0)
            return tps_ydoc_fail(d, kn, fk, err, "expected switch, nic or cpu, got '%s'", kind);
        double fwd = 0;
        snprintf(fk, sizeof fk, "%s.forward", fi);
        int fn = tps_ydoc_get(d, n, "forward");
        if (fn && (rc = tps_ydoc_rate(d, fn, fk, &fwd, err))) return rc;
        if (plat_topo_node(t, name, k, -1, fwd) < 0 ||
            tps_strindex_update(x, t->nnodes, node_key, t))
            return tps_error_oom(err);
    }
    int links = tps_ydoc_get(d, id, "links");
    join(f, sizeof f, field, "links");
    if (!links || !tps_ydoc_is_seq(d, links))
        return tps_ydoc_fail(d, links ? links : id, f, err, "expected a list of links");
    static const char *const lvl_names[] = {"nvlink", "pcie", "xsocket", "net"};
    for (int i = 0; i < tps_ydoc_len(d, links); i++) {
        int l = tps_ydoc_seq_at(d, links, i);
        char fi[176], fk[200];
        snprintf(fi, sizeof fi, "%s[%d]", f, i);
        if ((rc = tps_ydoc_check_map(d, l, fi, link_keys, err))) return rc;
        snprintf(fk, sizeof fk, "%s.between", fi);
        int ends[2], bt = tps_ydoc_get(d, l, "between");
        if ((rc = read_ends(d, l, fk, t, x, ends, err))) return rc;
        if (ends[0] == ends[1])
            return tps_ydoc_fail(d, bt, fk, err, "a link needs two different nodes");
        double bw = 0, lat = 0;
        bool shared = false;
        int level = PLAT_LVL_NVLINK;
        snprintf(fk, sizeof fk, "%s.bandwidth", fi);
        int bn = tps_ydoc_get(d, l, "bandwidth");
        if (!bn) return tps_ydoc_fail(d, l, fk, err, "missing");
        if ((rc = tps_ydoc_rate(d, bn, fk, &bw, err))) return rc;
        snprintf(fk, sizeof fk, "%s.latency", fi);
        int ln = tps_ydoc_get(d, l, "latency");
        if (ln && (rc = tps_ydoc_time(d, ln, fk, &lat, err))) return rc;
        snprintf(fk, sizeof fk, "%s.shared", fi);
        int sn = tps_ydoc_get(d, l, "shared");
        if (sn && (rc = tps_ydoc_bool(d, sn, fk, &shared, err))) return rc;
        snprintf(fk, sizeof fk, "%s.level", fi);
        int vn = tps_ydoc_get(d, l, "level");
        if (vn) {
            const char *lv = tps_ydoc_text(d, vn);
            level = -1;
            for (int k = 0; k < 4 && lv; k++)
                if (!strcmp(lv, lvl_names[k])) level = k;
            if (level < 0)
                return tps_ydoc_fail(d, vn, fk, err, "expected nvlink, pcie, xsocket or net");
        }
        char name[64];
        snprintf(name, sizeof name, "l%d", i);
        if (plat_topo_link(t, name, ends[0], ends[1], bw, lat, shared, (enum plat_level)level) < 0)
            return tps_error_oom(err);
    }
    struct tps_error e2 = {0};
    if (plat_topo_finish(t, &e2)) {
        char fl[160];
        join(fl, sizeof fl, field, e2.field[0] ? e2.field : "");
        int at = e2.field[0] && tps_ydoc_get(d, id, e2.field) ? tps_ydoc_get(d, id, e2.field) : id;
        return tps_ydoc_fail(d, at, e2.field[0] ? fl : field, err, "%s", e2.msg);
    }
    int ncid = tps_ydoc_get(d, id, "nccl");
    if (ncid) {
        char fn[160];
        join(fn, sizeof fn, field, "nccl");
        return plat_nccl_parse(d, ncid, fn, &t->nccl, err);
    }
    return TPS_OK;
}

/* ------------------------------------------------------------ entry points */

static int parse_file_inner(const char *path, struct plat_topo *out, struct tps_error *err);
static int include_file(const struct tps_ydoc *d, int id, const char *field, const char *path,
                        struct plat_topo *out, struct tps_error *err);

/* The chain of platform files being read (real paths), for include_file. */
#define PLAT_MAX_INCLUDE 8
static char include_chain[PLAT_MAX_INCLUDE][PATH_MAX];
static int include_depth;

static int parse_node(const struct tps_ydoc *d, int id, const char *field, const char *base_dir,
                      struct plat_topo *out, struct tps_error *err)
{
    char path[512];
    if (tps_ydoc_is_scalar(d, id)) {
        const char *s = tps_ydoc_text(d, id);
        if (ends_with(s, ".xml") || ends_with(s, ".yaml") || ends_with(s, ".yml")) {
            plat_path_resolve(base_dir, s, path, sizeof path);
            return ends_with(s, ".xml") ? load_xml(path, out, err)
                                        : include_file(d, id, field, path, out, err);
        }
        struct plat_params p;
        plat_topo_init(out, s);
        if (plat_params_default(s, &p) != 0) {
            char list[256];
            tps_names_join(plat_preset_names(), list, sizeof list);
            return tps_ydoc_fail(d, id, field, err,
                                 "unknown platform '%s' (expected one of: %s, or a .yaml/.xml "
                                 "file)",
                                 s, list);
        }
        return plat_preset_build(&p, NULL, out, err);
    }
    plat_topo_init(out, "");
    if (!tps_ydoc_is_map(d, id))
        return tps_ydoc_fail(d, id, field, err, "expected a preset name, a file or a mapping");
    int fid = tps_ydoc_get(d, id, "file"), xid = tps_ydoc_get(d, id, "simgrid_xml");
    if (fid && !xid && tps_ydoc_len(d, id) > 1) {
        const char *s;
        char f[160];
        join(f, sizeof f, field, "file");
        int rc = tps_ydoc_str(d, fid, f, &s, err);
        if (rc) return rc;
        plat_path_resolve(base_dir, s, path, sizeof path);
        return parse_file_override(d, id, field, path, out, err);
    }
    if (fid || xid) {
        static const char *const keys[] = {"file", "simgrid_xml", NULL};
        int rc = tps_ydoc_check_map(d, id, field, keys, err);
        if (rc) return rc;
        if (fid && xid)
            return tps_ydoc_fail(d, xid, field, err, "give either 'file' or 'simgrid_xml'");
        const char *s;
        char f[160];
        join(f, sizeof f, field, fid ? "file" : "simgrid_xml");
        if ((rc = tps_ydoc_str(d, fid ? fid : xid, f, &s, err))) return rc;
        plat_path_resolve(base_dir, s, path, sizeof path);
        return xid ? load_xml(path, out, err) : include_file(d, fid, f, path, out, err);
    }
    if (tps_ydoc_get(d, id, "preset")) return parse_preset(d, id, field, out, err);
    return parse_explicit(d, id, field, out, err);
}

/* Reads the platform file `path` (whose real path is `real`) with it on the include chain. */
static int parse_file_at(const char *path, const char *real, struct plat_topo *out,
                         struct tps_error *err)
{
    plat_topo_init(out, path); /* releasable whatever fails below */
    TPS_ASSERT(include_depth < PLAT_MAX_INCLUDE);
    snprintf(include_chain[include_depth++], PATH_MAX, "%s", real);
    int rc = parse_file_inner(path, out, err);
    include_depth--;
    return rc;
}

static void real_path(const char *path, char *real)
{
    if (!realpath(path, real)) snprintf(real, PATH_MAX, "%s", path);
}

/* Reads the platform file `path` that node `id` of d names, refusing a file that includes
 * itself, directly or through others, and chains deeper than PLAT_MAX_INCLUDE. */
static int include_file(const struct tps_ydoc *d, int id, const char *field, const char *path,
                        struct plat_topo *out, struct tps_error *err)
{
    char real[PATH_MAX];
    real_path(path, real);
    const char *why = NULL;
    for (int i = 0; i < include_depth && !why; i++)
        if (!strcmp(include_chain[i], real))
            why = i + 1 < include_depth ? " through other files" : "";
    if (why || include_depth >= PLAT_MAX_INCLUDE) {
        plat_topo_init(out, path);
        return why ? tps_ydoc_fail(d, id, field, err,
                                   "'%s' includes itself%s: platform files may not form a cycle",
                                   path, why)
                   : tps_ydoc_fail(d, id, field, err,
                                   "platform files include each other more than %d deep",
                                   PLAT_MAX_INCLUDE);
    }
    return parse_file_at(path, real, out, err);
}

static int parse_file_inner(const char *path, struct plat_topo *out, struct tps_error *err)
{
    struct tps_ydoc d;
    int rc = tps_ydoc_load_file(&d, path, err);
    if (rc == TPS_OK) {
        char base[512];
        plat_path_dir(path, base, sizeof base);
        int root = tps_ydoc_root(&d);
        if (!tps_ydoc_is_map(&d, root))
            rc = tps_ydoc_fail(&d, root, "", err, "a topology file holds a mapping");
        else
            rc = parse_node(&d, root, "", base, out, err);
        if (rc == TPS_OK && !out->name[0]) snprintf(out->name, sizeof out->name, "%s", path);
    }
    tps_ydoc_release(&d);
    return rc;
}

int plat_spec_parse(const struct tps_ydoc *d, int id, const char *field, const char *base_dir,
                    struct plat_topo *out, struct tps_error *err)
{
    return parse_node(d, id, field, base_dir, out, err);
}

int plat_spec_from_args(const char *spec, int nkv, char **kv, struct plat_topo *out,
                        struct tps_error *err)
{
    plat_topo_init(out, spec); /* releasable whatever fails below */
    /* Build a YAML flow mapping and parse it like a scenario's platform section. */
    char text[4096];
    size_t n = 0;
    int is_yaml = ends_with(spec, ".yaml") || ends_with(spec, ".yml");
    if (nkv == 0 || ends_with(spec, ".xml")) {
        n = (size_t)snprintf(text, sizeof text, "'%s'", spec);
        if (nkv)
            return tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "platform",
                                 "parameters like '%s' apply to presets and platform YAML files, "
                                 "not to SimGrid XML",
                                 kv[0]);
    } else {
        /* a preset with parameters, or a platform file with the same overrides a manifest's
         * {file: F, nodes: 8} gives */
        n = (size_t)snprintf(text, sizeof text, is_yaml ? "{file: '%s'" : "{preset: '%s'", spec);
        for (int i = 0; i < nkv && n < sizeof text; i++) {
            char *eq = strchr(kv[i], '=');
            if (!eq || eq == kv[i] || strchr(kv[i], '\''))
                return tps_error_set(err, TPS_EINVAL, "command line", 0, 0, "platform",
                                     "expected key=value (no quotes), got '%s'", kv[i]);
            /* a value in braces or brackets is a YAML flow collection (nccl={...}) */
            int raw = eq[1] == '{' || eq[1] == '[';
            n += (size_t)snprintf(text + n, sizeof text - n, raw ? ", %.*s: %s" : ", %.*s: '%s'",
                                  (int)(eq - kv[i]), kv[i], eq + 1);
        }
        if (n < sizeof text) n += (size_t)snprintf(text + n, sizeof text - n, "}");
    }
    if (n >= sizeof text)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, NULL, "platform arguments too long");
    struct tps_ydoc d;
    int rc = tps_ydoc_load_string(&d, text, "command line", err);
    if (rc == TPS_OK) rc = plat_spec_parse(&d, tps_ydoc_root(&d), "platform", ".", out, err);
    tps_ydoc_release(&d);
    return rc;
}

int plat_spec_split_words(const char *spec, char *buf, size_t len, char **words, int max)
{
    snprintf(buf, len, "%s", spec);
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    return n;
}

int plat_spec_from_line(const char *spec, struct plat_topo *t, struct tps_error *err)
{
    char buf[1024];
    char *words[64];
    int n = plat_spec_split_words(spec, buf, sizeof buf, words, 64);
    if (n == 0) {
        plat_topo_init(t, "");
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "platform", "empty platform");
    }
    return plat_spec_from_args(words[0], n - 1, words + 1, t, err);
}
