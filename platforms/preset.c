/* preset.c - builders of the preset fabrics (see preset.h and docs/platforms.md).
 *
 * Per server: dgx-* = 8 GPUs on one NVSwitch crossbar; pcie-8gpu = 2 PCIe switches of 4 GPUs
 * under one root complex (or one per socket, joined by the CPU interconnect); rtx3090-4gpu = 4
 * GPUs on the root complex, optional NVLink bridges. A root complex forwards peer traffic at
 * most at one x16 link's rate, shared by all flows crossing it. Multi-node: each NIC is reached
 * over PCIe; NICs hang off leaf switches of a two-level fat-tree whose leaf uplink carries
 * leaf NICs x rate / oversubscription. Units: bytes/s, seconds.
 */
#include "preset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GB 1e9

/* What the NVSwitch presets take from the joint fits of their systems' shared nccl-tests logs
 * (scripts/calibrate-validation.sh; docs/validation.md, "Presets out of the box"): NVLink as
 * NCCL's copies use it (the rate a ring reaches per GPU and direction, where the datasheet's 300
 * and 450 GB/s are signalling rates, and the latency per link) and the protocol costs (per
 * protocol LL, LL128, Simple; index 0 unused). */
struct fit {
    double gpu_link_Bps, lat_nvlink_s;
    double base_s[MDL_PROTO_N], hop_s[MDL_PROTO_N], eff[MDL_PROTO_N];
    bool nvls;
    double nvls_eff;
    /* across machines, from the multi-node logs of the system where there are some: the
     * network transport's latency per end of a crossing, and one channel's rate */
    double lat_nic_s, net_channel_Bps;
    /* point-to-point (mdl_nccl): latency per send, channels per peer (NCCL: twice the NVLinks
     * joining the pair, to a power of 2, at most its 32 channels), a channel's rate */
    double p2p_base_s;
    int p2p_channels;
    double p2p_channel_Bps;
    /* NVLS's channels (NCCL src/transport/nvls.cc: NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100
     * 32 across machines, where NVLS-tree runs); 0: mdl_nccl_default's */
    int nvls_channels;
};

/* abci_a100_1node_8gpu + 4gpu all_reduce. The fit disables LL128: the rows are better explained
 * by LL up to the Simple switch point. */
static const struct fit ampere = {
    220.67 * GB,
    0.348e-6,
    {0, 9.9287e-6, 8e-6, 72.5738e-6},
    {0, 0, 1e-6, 1.7966e-6},
    {0, 0.1, 0, 1},
    false,
    1,
    0,
    0,
    /* a100_sxm4_64gb_leonardo_2gpu_nvlink_sendrecv_info (the same GPU): 12.43 us a send on the
     * pair's platform less this preset's route (2 x 0.348 us) and Simple step latency, 16.59
     * GB/s a channel (fitted with this Simple step latency after each chunk); 12 NVLinks per
     * GPU */
    12.43e-6 - 2 * 0.348e-6 - 1.7966e-6,
    32,
    16.59 * GB,
    0};

/* h100_hgx_4gpu all_reduce + all_gather. Hopper's NVSwitch reduces and multicasts (NVLink
 * SHARP): NVLS reaches 475 GB/s bus bandwidth on an 8-GPU all-reduce of 4 GiB on H100/H200 (real
 * nccl-tests logs quoted in docs/validation.md), 2(n-1)/(n+1) of its per-link rate: 0.886 of the
 * ring's. */
static const struct fit hopper = {
    344.64 * GB,
    0.4275e-6,
    {0, 10.0813e-6, 17.2780e-6, 18.0803e-6},
    {0, 1.4441e-6, 0, 4.1450e-6},
    {0, 0.3730, 0.9375, 1},
    true,
    0.886,
    /* h100_2node_16gpu_ib400_all_reduce_ring_minctas24_qps2_gjaion: the Ring's floor (1 and 2
     * MiB, 156.75 us) less tpsim's without it (70.66 us) over its 4 crossings of 2 ends;
     * h100_8node_64gpu_ib400_all_reduce_gjaion: 320.70 GB/s bus bandwidth at 8 GiB, NCCL's Ring
     * in its 16 channels (2 per NIC) */
    10.76e-6,
    20.04 * GB,
    /* the Leonardo pair's 12.43 us a send less the route and Simple step latency; 18 NVLinks; no
     * point-to-point log on Hopper gives a channel's rate */
    12.43e-6 - 2 * 0.4275e-6 - 4.1450e-6,
    32,
    0,
    16};

/* NCCL's per-channel tree bus bandwidth on Hopper over one, two and more machines (38.7, 41.4,
 * 36.0 GB/s), a quarter per tree as on Ampere (mdl_nccl_default) */
static const double hopper_tree[3] = {38.7e9 / 4, 41.4e9 / 4, 36.0e9 / 4};

/* Blackwell (B200, GB200): no shared log measures NVLink 5 or its NVSwitch, so the fit is
 * Hopper's carried over as stated assumptions (docs/platforms.md): NCCL's copies reach the same
 * fraction of the datasheet's NVLink rate (344.64 of 450 GB/s: 689.28 of 900), the protocol
 * costs, latencies and the network transport are Hopper's (the same NCCL, the same ConnectX-7
 * NICs), and NVLS delivers Hopper's fitted 0.886 scaled by NCCL's own ratio of its Blackwell to
 * its Hopper NVLS efficiency (0.74 / 0.85, NCCL src/graph/tuning.cc nvlsEfficiency). */
static const struct fit blackwell = {900 * GB * (344.64 / 450),
                                     0.4275e-6,
                                     {0, 10.0813e-6, 17.2780e-6, 18.0803e-6},
                                     {0, 1.4441e-6, 0, 4.1450e-6},
                                     {0, 0.3730, 0.9375, 1},
                                     true,
                                     0.886 * 0.74 / 0.85,
                                     10.76e-6,
                                     20.04 * GB,
                                     12.43e-6 - 2 * 0.4275e-6 - 4.1450e-6,
                                     32,
                                     0,
                                     32};

/* How a preset's machine is built (build_server). */
enum shape {
    NVSWITCH, /* every GPU on one NVLink switch */
    PCIE_SW,  /* 2 PCIe switches of 4 GPUs under the root complex (or one per socket) */
    ROOT      /* the GPUs on the root complex, optional NVLink bridges */
};

/* A preset: its machine, its NICs and what its fits give (docs/platforms.md has the sources). */
struct preset {
    const char *name;
    enum shape shape;
    int gpus;          /* per machine */
    double nvlink_Bps; /* NVSWITCH without a fit: the datasheet's NVLink per GPU and direction */
    double nic_Bps;    /* NIC port per direction */
    int nic_pcie_gen;  /* the PCIe generation GPUs reach their NICs over */
    const struct fit *fit;
    const double *tree_rate; /* NCCL's per-channel tree rates, NULL: mdl_nccl_default's */
    int tray; /* a rack-scale preset: GPUs per compute tray (its NVLink domain, `nvlink_domain`,
                 holds whole trays); 0: a server */
    const char *gpu; /* the GPU its machines are built around (device presets' prefix), NULL:
                        any */
};

static const struct preset presets[] = {
    /* NVLink 3 (hardware.csv), InfiniBand HDR 200 Gb/s (hardware.csv) */
    {"dgx-a100", NVSWITCH, 8, 300 * GB, 25 * GB, 4, &ampere, NULL, 0, "A100"},
    /* NVLink 4 (hardware.csv), NDR 400 Gb/s, ConnectX-7 on PCIe Gen5 */
    {"dgx-h100", NVSWITCH, 8, 450 * GB, 50 * GB, 5, &hopper, hopper_tree, 0, "H100"},
    {"pcie-8gpu", PCIE_SW, 8, 0, 25 * GB, 4, NULL, NULL, 0, NULL},
    {"rtx3090-4gpu", ROOT, 4, 0, 25 * GB, 4, NULL, NULL, 0, "RTX-3090"},
    /* DGX H200: the DGX H100's NVLink 4 NVSwitch and 8 ConnectX-7 NDR NICs with H200 GPUs
     * (hardware.csv: NVLink 4 for H100, H200, GH200); the H100 fit (same NVSwitch, NCCL) */
    {"dgx-h200", NVSWITCH, 8, 450 * GB, 50 * GB, 5, &hopper, hopper_tree, 0, "H200"},
    /* DGX B200: NVLink 5, 18 links of 50 GB/s, 900 GB/s per GPU and direction (1.8 TB/s
     * bidirectional, NVIDIA DGX B200 datasheet); 8 single-port ConnectX-7 at 400 Gb/s for the
     * compute fabric (DGX B200 user guide) */
    {"dgx-b200", NVSWITCH, 8, 900 * GB, 50 * GB, 5, &blackwell, hopper_tree, 0, "B200"},
    /* GB200 NVL72: 18 compute trays of 4 GPUs (2 GB200 superchips) in one NVLink 5 domain of
     * 72 GPUs through the rack's 9 NVLink switch trays (130 TB/s = 72 x 1.8 TB/s), one
     * ConnectX-7 400 Gb/s per GPU to the scale-out fabric (NVIDIA GB200 NVL72 specifications) */
    {"gb200-nvl72", NVSWITCH, 72, 900 * GB, 50 * GB, 5, &blackwell, hopper_tree, 4, "GB200"},
};

#define NPRESETS (sizeof presets / sizeof presets[0])

static const char *const names[] = {"dgx-a100", "dgx-h100", "pcie-8gpu",   "rtx3090-4gpu",
                                    "dgx-h200", "dgx-b200", "gb200-nvl72", NULL};
_Static_assert(sizeof names / sizeof names[0] == NPRESETS + 1, "a name per preset");

static double wire_ratio(const struct plat_params *p);

const char *const plat_fabric_names[] = {"fat_tree", "rail", NULL};
const char *const plat_network_names[] = {"infiniband", "roce", NULL};

const char *const *plat_preset_names(void)
{
    return names;
}

double plat_pcie_Bps(int gen)
{
    /* hardware.csv: Gen3 x16 32 GB/s bidirectional; Gen4 x16 31 GB/s, Gen5 x16 63 GB/s per
     * direction. */
    return gen == 3 ? 16 * GB : gen == 4 ? 31 * GB : gen == 5 ? 63 * GB : 0;
}

static const struct preset *preset_of(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

/* GPUs in one machine of p: a rack-scale preset's NVLink domain, or the preset's server. */
static int machine_gpus(const struct plat_params *p, const struct preset *pr)
{
    return pr->tray && p->domain_gpus ? p->domain_gpus : pr->gpus;
}

const char *plat_preset_gpu(const char *preset)
{
    const struct preset *pr = preset_of(preset);
    return pr ? pr->gpu : NULL;
}

bool plat_preset_racks(const char *preset)
{
    const struct preset *pr = preset_of(preset);
    return pr && pr->tray;
}

int plat_params_default(const char *preset, struct plat_params *p)
{
    memset(p, 0, sizeof *p);
    const struct preset *pr = preset_of(preset);
    if (!pr) return -1;
    snprintf(p->preset, sizeof p->preset, "%s", preset);
    p->nodes = 1;
    p->sockets = 1;
    p->nic_Bps = pr->nic_Bps;
    p->oversub = 1;
    p->spine_oversub = 1;
    p->leaf_ports = 32;
    p->xsocket_Bps = 20 * GB; /* assumption: one UPI-class link, see docs/platforms.md */
    p->lat_nvlink_s = 1.5e-6;
    p->lat_pcie_s = 1.5e-6;
    p->lat_net_s = 2e-6;
    if (pr->fit) {
        p->gpu_link_Bps = pr->fit->gpu_link_Bps;
        p->lat_nvlink_s = pr->fit->lat_nvlink_s;
        p->lat_nic_s = pr->fit->lat_nic_s;
    }
    return 0;
}

void plat_nccl_preset(const char *preset, struct mdl_nccl *nc)
{
    mdl_nccl_default(nc);
    const struct preset *pr = preset_of(preset);
    if (!pr || !pr->fit) return;
    const struct fit *ft = pr->fit;
    memcpy(nc->base_s, ft->base_s, sizeof nc->base_s);
    memcpy(nc->hop_s, ft->hop_s, sizeof nc->hop_s);
    memcpy(nc->eff, ft->eff, sizeof nc->eff);
    nc->nvls = ft->nvls;
    nc->nvls_eff = ft->nvls_eff;
    nc->net_channel_Bps = ft->net_channel_Bps;
    nc->p2p_base_s = ft->p2p_base_s;
    nc->p2p_channels = ft->p2p_channels;
    nc->p2p_channel_Bps = ft->p2p_channel_Bps;
    if (ft->nvls_channels) nc->nvls_channels = ft->nvls_channels;
    if (pr->tree_rate) memcpy(nc->tree_rate_Bps, pr->tree_rate, sizeof nc->tree_rate_Bps);
}

struct builder {
    struct plat_topo *t;
    const struct plat_params *p;
    int oom;
};

static int node(struct builder *b, enum plat_kind k, int machine, double fwd, const char *fmt,
                int i, int j)
{
    char name[48];
    snprintf(name, sizeof name, fmt, i, j);
    int n = plat_topo_node(b->t, name, k, machine, fwd);
    if (n < 0) b->oom = 1;
    return n;
}

static int link(struct builder *b, int x, int y, double bw, double lat, bool shared,
                enum plat_level lvl)
{
    char name[128];
    snprintf(name, sizeof name, "%s-%s", b->t->nodes[x].name, b->t->nodes[y].name);
    int l = plat_topo_link(b->t, name, x, y, bw, lat, shared, lvl);
    if (l < 0) b->oom = 1;
    return l;
}

/* Builds machine m of preset pr; gpus[] receives its GPU node indices. Returns the GPU count. */
static int build_server(struct builder *b, const struct preset *pr, int m, int *gpus)
{
    const struct plat_params *p = b->p;
    int n = machine_gpus(p, pr), first = m * n;
    if (pr->shape == NVSWITCH) {
        double bw = p->gpu_link_Bps > 0 ? p->gpu_link_Bps : pr->nvlink_Bps;
        int sw = node(b, PLAT_SWITCH, m, 0, "n%dnvswitch", m, 0);
        for (int i = 0; i < n; i++) {
            gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
            if (b->oom) return 0;
            link(b, gpus[i], sw, bw, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
        }
        return n;
    }
    int gen = p->pcie_gen ? p->pcie_gen : 4;
    double pcie = p->pcie_Bps > 0 ? p->pcie_Bps : plat_pcie_Bps(gen);
    if (pr->shape == PCIE_SW) {
        int cpu[2], sw[2];
        for (int s = 0; s < p->sockets; s++)
            cpu[s] = node(b, PLAT_CPU, m, pcie, "n%dcpu%d", m, s);
        if (b->oom) return 0;
        if (p->sockets == 2) link(b, cpu[0], cpu[1], p->xsocket_Bps, 0, false, PLAT_LVL_XSOCKET);
        for (int s = 0; s < 2; s++) {
            sw[s] = node(b, PLAT_SWITCH, m, 0, "n%dpcisw%d", m, s);
            if (b->oom) return 0;
            link(b, sw[s], cpu[p->sockets == 2 ? s : 0], pcie, p->lat_pcie_s, false, PLAT_LVL_PCIE);
        }
        for (int i = 0; i < pr->gpus; i++) {
            gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
            if (b->oom) return 0;
            link(b, gpus[i], sw[i / 4], pcie, p->lat_pcie_s, false, PLAT_LVL_PCIE);
        }
        return pr->gpus;
    }
    /* ROOT */
    int cpu = node(b, PLAT_CPU, m, pcie, "n%dcpu%d", m, 0);
    for (int i = 0; i < pr->gpus && !b->oom; i++) {
        gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
        if (!b->oom) link(b, gpus[i], cpu, pcie, p->lat_pcie_s, false, PLAT_LVL_PCIE);
    }
    /* RTX 3090 NVLink bridge: 112.5 GB/s total, 56.25 GB/s per direction (NVIDIA GeForce RTX
     * 3090 specifications; not in refdata). */
    if (p->nvlink_bridges && !b->oom) {
        link(b, gpus[0], gpus[1], 56.25 * GB, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
        link(b, gpus[2], gpus[3], 56.25 * GB, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
    }
    return pr->gpus;
}

static int check(const struct plat_params *p, const struct preset *pr, struct tps_error *err)
{
    if (!pr)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "preset", "unknown platform preset '%s'",
                             p->preset);
    if (p->nodes < 1 || p->nodes > 65536)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nodes", "must be 1..65536, got %d",
                             p->nodes);
    if (p->pcie_gen && !plat_pcie_Bps(p->pcie_gen))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pcie_gen", "must be 3, 4 or 5, got %d",
                             p->pcie_gen);
    if (p->sockets != 1 && p->sockets != 2)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sockets", "must be 1 or 2, got %d",
                             p->sockets);
    if (p->sockets == 2 && pr->shape != PCIE_SW)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sockets",
                             "two sockets exist only for pcie-8gpu");
    if (p->nvlink_bridges && pr->shape != ROOT)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nvlink_bridges",
                             "NVLink bridges exist only for rtx3090-4gpu");
    if (p->domain_gpus && !pr->tray)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nvlink_domain",
                             "only a rack-scale preset (gb200-nvl72) sets its NVLink domain");
    if (p->domain_gpus &&
        (p->domain_gpus % pr->tray || p->domain_gpus < 2 * pr->tray || p->domain_gpus > pr->gpus))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nvlink_domain",
                             "must be whole trays of %d GPUs, %d to %d (NVL36: 36), got %d",
                             pr->tray, 2 * pr->tray, pr->gpus, p->domain_gpus);
    int g = machine_gpus(p, pr);
    if (p->nics_per_node < 0 || (p->nics_per_node && g % p->nics_per_node))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nics_per_node",
                             "must divide the %d GPUs of a node, got %d", g, p->nics_per_node);
    if (p->oversub < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "oversubscription",
                             "must be at least 1, got %g", p->oversub);
    if (p->leaf_ports < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "leaf_ports", "must be at least 1");
    if (p->spine_oversub < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "spine_oversubscription",
                             "must be at least 1, got %g", p->spine_oversub);
    if (p->spine_oversub > 1 && !p->pod_leaves)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "spine_oversubscription",
                             "needs a third tier: give pod_leaves (leaves per pod)");
    int nics = p->nics_per_node ? p->nics_per_node : g;
    if (p->fabric == PLAT_FABRIC_RAIL && p->pod_leaves && p->pod_leaves % nics)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pod_leaves",
                             "on a rail-optimised fabric a pod holds every rail of its machines: "
                             "a multiple of the %d NICs per machine, got %d",
                             nics, p->pod_leaves);
    return TPS_OK;
}

double plat_nic_rate(const struct plat_params *p, const struct mdl_nccl *nc, int nics)
{
    double port = p->nic_Bps * wire_ratio(p);
    if (!(nc->net_channel_Bps > 0) || nics < 1) return port;
    int per = 2;
    if (nc->min_ctas > per * nics) per = (nc->min_ctas + nics - 1) / nics;
    double r = per * nc->net_channel_Bps;
    return r < port ? r : port;
}

/* What the network's links carry of their rate as payload, relative to the InfiniBand the
 * presets' network figures were fitted on: a 4096-byte MTU packet is 4122 bytes on InfiniBand
 * (LRH 8, BTH 12, ICRC 4, VCRC 2) and 4178 on RoCEv2 Ethernet (preamble and SFD 8, Ethernet
 * header 14, FCS 4, inter-frame gap 12, IPv4 20, UDP 8, BTH 12, ICRC 4). */
static double wire_ratio(const struct plat_params *p)
{
    return p->network == PLAT_NET_ROCE ? 4122.0 / 4178.0 : 1;
}

/* The network above the NICs when it has leaves (an oversubscribed fat-tree, a rail-optimised
 * network, three tiers): per leaf its node, its uplink and NICs; per pod its spine and uplink. */
struct fabric {
    int *leaf, *up, *nics; /* [leaves]: node, uplink link, NICs attached (-1: not built);
                              leaf NULL: no leaves, every NIC meets the core */
    int *spine, *spine_up; /* [pods] */
    double *pod_Bps;       /* [pods]: what the pod's leaves send up */
};

static void fabric_release(struct fabric *f)
{
    free(f->leaf);
    free(f->up);
    free(f->nics);
    free(f->spine);
    free(f->spine_up);
    free(f->pod_Bps);
    memset(f, 0, sizeof *f);
}

/* Sizes f for p with k NICs per machine: no leaves where every NIC meets the core. */
static int fabric_init(struct fabric *f, const struct plat_params *p, int k)
{
    if (p->fabric != PLAT_FABRIC_RAIL && !p->pod_leaves && p->oversub <= 1) return 0;
    long n = p->fabric == PLAT_FABRIC_RAIL
                 ? (long)(p->nodes + p->leaf_ports - 1) / p->leaf_ports * k
                 : ((long)p->nodes * k + p->leaf_ports - 1) / p->leaf_ports;
    long pods = p->pod_leaves ? (n + p->pod_leaves - 1) / p->pod_leaves : 0;
    f->leaf = malloc((size_t)n * sizeof *f->leaf);
    f->up = malloc((size_t)n * sizeof *f->up);
    f->nics = calloc((size_t)n, sizeof *f->nics);
    /* pods + 1: never a 0-byte allocation, which may come back NULL */
    f->spine = malloc((size_t)(pods + 1) * sizeof *f->spine);
    f->spine_up = malloc((size_t)(pods + 1) * sizeof *f->spine_up);
    f->pod_Bps = calloc((size_t)(pods + 1), sizeof *f->pod_Bps);
    if (!f->leaf || !f->up || !f->nics || !f->spine || !f->spine_up || !f->pod_Bps) return -1;
    for (long i = 0; i < n; i++)
        f->leaf[i] = -1;
    for (long i = 0; i < pods; i++)
        f->spine[i] = -1;
    return 0;
}

/* NIC nn (its port at `nic`) on leaf L, the leaf built with its uplink to its pod's spine (or the
 * core) on first use. A leaf's uplink carries what its NICs can send divided by the
 * oversubscription; a spine's, what its leaves send up divided by spine_oversubscription. */
static int attach(struct builder *b, struct fabric *f, int L, int core, int nn, double nic)
{
    const struct plat_params *p = b->p;
    struct plat_topo *t = b->t;
    int pod = p->pod_leaves ? L / p->pod_leaves : -1;
    if (f->leaf[L] < 0) {
        int above = core;
        if (pod >= 0 && f->spine[pod] < 0) {
            f->spine[pod] = node(b, PLAT_SWITCH, -1, 0, "spine%d", pod, 0);
            if (b->oom) return -1;
            f->spine_up[pod] = link(b, f->spine[pod], core, 0, p->lat_net_s, false, PLAT_LVL_NET);
        }
        if (pod >= 0) above = f->spine[pod];
        f->leaf[L] = node(b, PLAT_SWITCH, -1, 0, "leaf%d", L, 0);
        if (b->oom) return -1;
        f->up[L] = link(b, f->leaf[L], above, 0, p->lat_net_s, false, PLAT_LVL_NET);
        if (b->oom) return -1;
    }
    f->nics[L]++;
    link(b, nn, f->leaf[L], nic, p->lat_net_s, false, PLAT_LVL_NET);
    if (b->oom) return -1;
    t->links[f->up[L]].bw_Bps = f->nics[L] * p->nic_Bps * wire_ratio(p) / p->oversub;
    if (pod >= 0) {
        f->pod_Bps[pod] += p->nic_Bps * wire_ratio(p) / p->oversub;
        t->links[f->spine_up[pod]].bw_Bps = f->pod_Bps[pod] / p->spine_oversub;
    }
    return 0;
}

int plat_preset_build(const struct plat_params *p, const struct mdl_nccl *nc, struct plat_topo *t,
                      struct tps_error *err)
{
    plat_topo_init(t, p->preset);
    plat_nccl_preset(p->preset, &t->nccl);
    if (nc) t->nccl = *nc;
    const struct preset *pr = preset_of(p->preset);
    int rc = check(p, pr, err);
    if (rc) return rc;
    struct builder b = {.t = t, .p = p};
    t->machines = p->nodes;
    int core = -1, nic_count = 0;
    struct fabric f = {0};
    double nic = 0, lat_nic = p->lat_pcie_s + p->lat_nic_s;
    double pcie_nic = plat_pcie_Bps(p->pcie_gen ? p->pcie_gen : pr->nic_pcie_gen);
    if (p->nodes > 1) core = node(&b, PLAT_SWITCH, -1, 0, "core%d", 0, 0);
    for (int m = 0; m < p->nodes && !b.oom; m++) {
        int gpus[PLAT_MAX_LOCAL];
        int g = build_server(&b, pr, m, gpus);
        if (p->nodes == 1 || b.oom) continue;
        int k = p->nics_per_node ? p->nics_per_node : g;
        if (!nic) {
            nic = plat_nic_rate(p, &t->nccl, k);
            if (fabric_init(&f, p, k)) b.oom = 1;
            if (p->fabric == PLAT_FABRIC_RAIL) {
                t->rail_local = g;
                t->rail_gpus_per_nic = g / k;
            }
        }
        for (int j = 0; j < k && !b.oom; j++) {
            int nn = node(&b, PLAT_NIC, m, 0, "n%dnic%d", m, j);
            int per = g / k;
            if (per == 1) {
                link(&b, gpus[j], nn, pcie_nic, lat_nic, false, PLAT_LVL_PCIE);
            } else {
                int sw = node(&b, PLAT_SWITCH, m, 0, "n%dnicsw%d", m, j);
                if (b.oom) break;
                link(&b, sw, nn, pcie_nic, lat_nic, false, PLAT_LVL_PCIE);
                for (int i = 0; i < per; i++)
                    link(&b, gpus[j * per + i], sw, pcie_nic, p->lat_pcie_s, false, PLAT_LVL_PCIE);
            }
            if (!f.leaf) {
                link(&b, nn, core, nic, p->lat_net_s, false, PLAT_LVL_NET);
                continue;
            }
            int L = p->fabric == PLAT_FABRIC_RAIL ? m / p->leaf_ports * k + j
                                                  : nic_count / p->leaf_ports;
            nic_count++;
            if (attach(&b, &f, L, core, nn, nic)) break;
        }
    }
    fabric_release(&f);
    if (b.oom) return tps_error_oom(err);
    int n;
    if (pr->tray)
        n = snprintf(t->desc, sizeof t->desc, "%s x%d rack%s of %d GPUs (one NVLink domain each)",
                     p->preset, p->nodes, p->nodes > 1 ? "s" : "", machine_gpus(p, pr));
    else
        n = snprintf(t->desc, sizeof t->desc, "%s x%d node%s", p->preset, p->nodes,
                     p->nodes > 1 ? "s" : "");
    if (p->nodes > 1 && n > 0 && (size_t)n < sizeof t->desc)
        snprintf(t->desc + n, sizeof t->desc - (size_t)n, "%s%s%s",
                 p->fabric == PLAT_FABRIC_RAIL ? ", rail-optimised" : "",
                 p->pod_leaves ? ", three tiers" : "", p->network == PLAT_NET_ROCE ? ", RoCE" : "");
    return plat_topo_finish(t, err);
}
