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
#include <string.h>

#define GB 1e9

static const char *const names[] = {"dgx-a100", "dgx-h100", "pcie-8gpu", "rtx3090-4gpu", NULL};

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

/* What the NVSwitch presets take from the joint fits of their systems' shared nccl-tests logs
 * (scripts/calibrate-validation.sh; docs/validation.md, "Presets out of the box"): NVLink as
 * NCCL's copies use it (the rate a ring reaches per GPU and direction, where the datasheet's 300
 * and 450 GB/s are signalling rates, and the latency per link) and the protocol costs (per
 * protocol LL, LL128, Simple; index 0 unused). */
struct fit {
    const char *preset;
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
};

static const struct fit fits[] = {
    /* abci_a100_1node_8gpu + 4gpu all_reduce. The fit disables LL128: the rows are better
     * explained by LL up to the Simple switch point. */
    {"dgx-a100",
     220.67 * GB,
     0.348e-6,
     {0, 9.9287e-6, 8e-6, 72.5738e-6},
     {0, 0, 1e-6, 1.7966e-6},
     {0, 0.1, 0, 1},
     false,
     1,
     0,
     0,
     /* a100_sxm4_64gb_leonardo_2gpu_nvlink_sendrecv_info (the same GPU): 13.5 us a send on
      * the pair's platform less this preset's route (2 x 0.348 us) and Simple step latency,
      * 16.05 GB/s a channel; 12 NVLinks per GPU */
     13.4946e-6 - 2 * 0.348e-6 - 1.7966e-6,
     32,
     16.05 * GB},
    /* h100_hgx_4gpu all_reduce + all_gather. Hopper's NVSwitch reduces and multicasts (NVLink
     * SHARP): NVLS reaches 475 GB/s bus bandwidth on an 8-GPU all-reduce of 4 GiB on H100/H200
     * (real nccl-tests logs quoted in docs/validation.md), 2(n-1)/(n+1) of its per-link rate:
     * 0.886 of the ring's. */
    {"dgx-h100",
     344.64 * GB,
     0.4275e-6,
     {0, 10.0813e-6, 17.2780e-6, 18.0803e-6},
     {0, 1.4441e-6, 0, 4.1450e-6},
     {0, 0.3730, 0.9375, 1},
     true,
     0.886,
     /* h100_2node_16gpu_ib400_all_reduce_ring_minctas24_qps2_gjaion: the Ring's floor (1 and 2
      * MiB, 156.75 us) less tpsim's without it (70.66 us) over its 4 crossings of 2 ends;
      * h100_8node_64gpu_ib400_all_reduce_gjaion: 320.70 GB/s bus bandwidth at 8 GiB, NCCL's
      * Ring in its 16 channels (2 per NIC) */
     10.76e-6,
     20.04 * GB,
     /* the Leonardo pair's 13.5 us a send less the route and Simple step latency; 18 NVLinks;
      * no point-to-point log on Hopper gives a channel's rate */
     13.4946e-6 - 2 * 0.4275e-6 - 4.1450e-6,
     32,
     0},
};

static const struct fit *fit_of(const char *preset)
{
    for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++)
        if (!strcmp(fits[i].preset, preset)) return &fits[i];
    return NULL;
}

int plat_params_default(const char *preset, struct plat_params *p)
{
    memset(p, 0, sizeof *p);
    int known = 0;
    for (const char *const *n = names; *n; n++)
        known |= strcmp(*n, preset) == 0;
    if (!known) return -1;
    snprintf(p->preset, sizeof p->preset, "%s", preset);
    p->nodes = 1;
    p->sockets = 1;
    p->nic_Bps = 25 * GB; /* InfiniBand HDR 200 Gb/s (hardware.csv) */
    p->oversub = 1;
    p->leaf_ports = 32;
    p->xsocket_Bps = 20 * GB; /* assumption: one UPI-class link, see docs/platforms.md */
    p->lat_nvlink_s = 1.5e-6;
    p->lat_pcie_s = 1.5e-6;
    p->lat_net_s = 2e-6;
    if (!strcmp(preset, "dgx-h100")) p->nic_Bps = 50 * GB; /* NDR 400 Gb/s */
    const struct fit *ft = fit_of(preset);
    if (ft) {
        p->gpu_link_Bps = ft->gpu_link_Bps;
        p->lat_nvlink_s = ft->lat_nvlink_s;
        p->lat_nic_s = ft->lat_nic_s;
    }
    return 0;
}

void plat_nccl_preset(const char *preset, struct mdl_nccl *nc)
{
    mdl_nccl_default(nc);
    const struct fit *ft = fit_of(preset);
    if (!ft) return;
    memcpy(nc->base_s, ft->base_s, sizeof nc->base_s);
    memcpy(nc->hop_s, ft->hop_s, sizeof nc->hop_s);
    memcpy(nc->eff, ft->eff, sizeof nc->eff);
    nc->nvls = ft->nvls;
    nc->nvls_eff = ft->nvls_eff;
    nc->net_channel_Bps = ft->net_channel_Bps;
    nc->p2p_base_s = ft->p2p_base_s;
    nc->p2p_channels = ft->p2p_channels;
    nc->p2p_channel_Bps = ft->p2p_channel_Bps;
    if (!strcmp(preset, "dgx-h100")) {
        /* NCCL's per-channel tree bus bandwidth on Hopper over one, two and more machines
         * (38.7, 41.4, 36.0 GB/s), a quarter per tree as on Ampere (mdl_nccl_default) */
        const double hopper[3] = {38.7e9 / 4, 41.4e9 / 4, 36.0e9 / 4};
        memcpy(nc->tree_rate_Bps, hopper, sizeof hopper);
    }
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

/* Builds server m; gpus[] receives its GPU node indices and attach[] the node each GPU's NIC
 * path starts from. Returns the GPU count. */
static int build_server(struct builder *b, int m, int *gpus)
{
    const struct plat_params *p = b->p;
    const char *pr = p->preset;
    int first = m * 8;
    if (!strncmp(pr, "dgx-", 4)) {
        double bw = p->gpu_link_Bps > 0       ? p->gpu_link_Bps
                    : !strcmp(pr, "dgx-h100") ? 450 * GB  /* hardware.csv NVLink 4 */
                                              : 300 * GB; /* hardware.csv NVLink 3 */
        int sw = node(b, PLAT_SWITCH, m, 0, "n%dnvswitch", m, 0);
        for (int i = 0; i < 8; i++) {
            gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
            if (b->oom) return 0;
            link(b, gpus[i], sw, bw, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
        }
        return 8;
    }
    int gen = p->pcie_gen ? p->pcie_gen : 4;
    double pcie = p->pcie_Bps > 0 ? p->pcie_Bps : plat_pcie_Bps(gen);
    if (!strcmp(pr, "pcie-8gpu")) {
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
        for (int i = 0; i < 8; i++) {
            gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
            if (b->oom) return 0;
            link(b, gpus[i], sw[i / 4], pcie, p->lat_pcie_s, false, PLAT_LVL_PCIE);
        }
        return 8;
    }
    /* rtx3090-4gpu */
    first = m * 4;
    int cpu = node(b, PLAT_CPU, m, pcie, "n%dcpu%d", m, 0);
    for (int i = 0; i < 4 && !b->oom; i++) {
        gpus[i] = node(b, PLAT_GPU, m, 0, "gpu%d", first + i, 0);
        if (!b->oom) link(b, gpus[i], cpu, pcie, p->lat_pcie_s, false, PLAT_LVL_PCIE);
    }
    /* RTX 3090 NVLink bridge: 112.5 GB/s total, 56.25 GB/s per direction (NVIDIA GeForce RTX
     * 3090 specifications; not in refdata). */
    if (p->nvlink_bridges && !b->oom) {
        link(b, gpus[0], gpus[1], 56.25 * GB, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
        link(b, gpus[2], gpus[3], 56.25 * GB, p->lat_nvlink_s, false, PLAT_LVL_NVLINK);
    }
    return 4;
}

static int check(const struct plat_params *p, struct tps_error *err)
{
    if (p->nodes < 1 || p->nodes > 65536)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nodes", "must be 1..65536, got %d",
                             p->nodes);
    if (p->pcie_gen && !plat_pcie_Bps(p->pcie_gen))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "pcie_gen", "must be 3, 4 or 5, got %d",
                             p->pcie_gen);
    if (p->sockets != 1 && p->sockets != 2)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sockets", "must be 1 or 2, got %d",
                             p->sockets);
    if (p->sockets == 2 && strcmp(p->preset, "pcie-8gpu"))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "sockets",
                             "two sockets exist only for pcie-8gpu");
    if (p->nvlink_bridges && strcmp(p->preset, "rtx3090-4gpu"))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nvlink_bridges",
                             "NVLink bridges exist only for rtx3090-4gpu");
    int g = !strcmp(p->preset, "rtx3090-4gpu") ? 4 : 8;
    if (p->nics_per_node < 0 || (p->nics_per_node && g % p->nics_per_node))
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "nics_per_node",
                             "must divide the %d GPUs of a node, got %d", g, p->nics_per_node);
    if (p->oversub < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "oversubscription",
                             "must be at least 1, got %g", p->oversub);
    if (p->leaf_ports < 1)
        return tps_error_set(err, TPS_EINVAL, NULL, 0, 0, "leaf_ports", "must be at least 1");
    return TPS_OK;
}

double plat_nic_rate(const struct plat_params *p, const struct mdl_nccl *nc, int nics)
{
    if (!(nc->net_channel_Bps > 0) || nics < 1) return p->nic_Bps;
    int per = 2;
    if (nc->min_ctas > per * nics) per = (nc->min_ctas + nics - 1) / nics;
    double r = per * nc->net_channel_Bps;
    return r < p->nic_Bps ? r : p->nic_Bps;
}

int plat_preset_build(const struct plat_params *p, const struct mdl_nccl *nc, struct plat_topo *t,
                      struct tps_error *err)
{
    plat_topo_init(t, p->preset);
    plat_nccl_preset(p->preset, &t->nccl);
    if (nc) t->nccl = *nc;
    int rc = check(p, err);
    if (rc) return rc;
    struct builder b = {.t = t, .p = p};
    t->machines = p->nodes;
    int core = -1, leaf = -1, uplink = -1, nic_count = 0, leaf_nics = 0;
    double nic = 0, lat_nic = p->lat_pcie_s + p->lat_nic_s;
    double pcie_nic = plat_pcie_Bps(p->pcie_gen                      ? p->pcie_gen
                                    : !strcmp(p->preset, "dgx-h100") ? 5
                                                                     : 4);
    if (p->nodes > 1) core = node(&b, PLAT_SWITCH, -1, 0, "core%d", 0, 0);
    for (int m = 0; m < p->nodes && !b.oom; m++) {
        int gpus[8];
        int g = build_server(&b, m, gpus);
        if (p->nodes == 1 || b.oom) continue;
        int k = p->nics_per_node ? p->nics_per_node : g;
        if (!nic) nic = plat_nic_rate(p, &t->nccl, k);
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
            if (p->oversub <= 1) {
                link(&b, nn, core, nic, p->lat_net_s, false, PLAT_LVL_NET);
                continue;
            }
            if (nic_count % p->leaf_ports == 0) {
                leaf = node(&b, PLAT_SWITCH, -1, 0, "leaf%d", nic_count / p->leaf_ports, 0);
                if (b.oom) break;
                uplink = link(&b, leaf, core, 0, p->lat_net_s, false, PLAT_LVL_NET);
                leaf_nics = 0;
                if (b.oom) break;
            }
            nic_count++;
            leaf_nics++;
            link(&b, nn, leaf, nic, p->lat_net_s, false, PLAT_LVL_NET);
            /* the leaf uplink carries what its NICs can send, divided by the oversubscription */
            t->links[uplink].bw_Bps = leaf_nics * p->nic_Bps / p->oversub;
        }
    }
    if (b.oom) return tps_error_oom(err);
    snprintf(t->desc, sizeof t->desc, "%s x%d node%s", p->preset, p->nodes,
             p->nodes > 1 ? "s" : "");
    return plat_topo_finish(t, err);
}
