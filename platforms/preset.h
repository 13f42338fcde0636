/* preset.h - parametric builders of the preset fabrics: dgx-a100, dgx-h100, dgx-h200, dgx-b200,
 * pcie-8gpu, rtx3090-4gpu, each on one node or on N nodes, and gb200-nvl72 on N racks (one NVLink
 * domain each), joined by InfiniBand (fat-tree).
 * Figures and their sources: docs/platforms.md. Units: bytes/s, seconds.
 */
#ifndef PLAT_PRESET_H
#define PLAT_PRESET_H

#include <stdbool.h>

#include "common/error.h"
#include "topo.h"

/* The most GPUs a preset's machine (its NVLink domain) holds. */
#define PLAT_MAX_LOCAL 72

/* How the machines' NICs meet: a fat-tree whose leaves take consecutive NICs, or a
 * rail-optimised network whose leaf r of a group of leaf_ports machines takes their NICs r. */
enum plat_fabric { PLAT_FABRIC_FAT_TREE, PLAT_FABRIC_RAIL };
/* The scale-out network's link layer: InfiniBand, or Ethernet with RoCEv2 (its per-packet
 * headers). */
enum plat_network { PLAT_NET_INFINIBAND, PLAT_NET_ROCE };
extern const char *const plat_fabric_names[];  /* "fat_tree", "rail" */
extern const char *const plat_network_names[]; /* "infiniband", "roce" */

struct plat_params {
    char preset[32];      /* dgx-a100 | dgx-h100 | dgx-h200 | dgx-b200 | gb200-nvl72 | pcie-8gpu |
                           * rtx3090-4gpu */
    int nodes;            /* servers, >= 1 */
    int pcie_gen;         /* 3, 4 or 5; 0 = the preset's own */
    int sockets;          /* pcie-8gpu: 1 or 2 CPU sockets */
    bool nvlink_bridges;  /* rtx3090-4gpu: NVLink bridges join GPU pairs (0,1) and (2,3) */
    int nics_per_node;    /* 0 = one NIC per GPU; else GPUs share NICs evenly */
    double nic_Bps;       /* NIC port rate per direction */
    double oversub;       /* fat-tree oversubscription at the leaves, 1 = non-blocking */
    int leaf_ports;       /* NICs per leaf switch (rail: machines per rail leaf) */
    int fabric;           /* enum plat_fabric */
    int pod_leaves;       /* 0: two tiers; else leaves per pod under a spine, pods under the core */
    double spine_oversub; /* the spines' uplinks: what their leaves send up divided by it */
    int network;          /* enum plat_network */
    double gpu_link_Bps;  /* dgx: NVLink bandwidth per GPU per direction, 0 = preset's */
    double xsocket_Bps;   /* pcie-8gpu with 2 sockets: CPU interconnect per direction */
    double pcie_Bps;      /* GPU PCIe links and root complexes per direction, 0 = pcie_gen's */
    double lat_nvlink_s;  /* per NVLink/NVSwitch link */
    double lat_pcie_s;    /* per PCIe link */
    double lat_net_s;     /* per network link */
    double lat_nic_s;     /* per network crossing and end: what NCCL's network transport adds
                           * between a GPU and its NIC (proxy thread, RDMA post, completion) */
    int domain_gpus;      /* rack-scale presets: GPUs per NVLink domain (a machine), 0 = the
                           * preset's (gb200-nvl72: 72; NVL36: 36) */
};

/* The GPU a preset's machines are built around, as device presets begin ("H100"), or NULL
 * (an unknown preset, or one for any GPU). */
const char *plat_preset_gpu(const char *preset);
/* Whether the preset's machines are racks (one NVLink domain of compute trays each). */
bool plat_preset_racks(const char *preset);
/* Defaults for a preset name; returns -1 for an unknown name. */
int plat_params_default(const char *preset, struct plat_params *p);
const char *const *plat_preset_names(void);
/* A preset's collective tuning: mdl_nccl_default with the preset's fitted protocol costs and its
 * NVLS (docs/validation.md, "Presets"). */
void plat_nccl_preset(const char *preset, struct mdl_nccl *nc);
/* The rate a NIC carries NCCL's traffic at: its port rate (less RoCE's longer headers), or less
 * where its channels cannot fill it (mdl_nccl.net_channel_Bps times the channels through it:
 * NCCL builds one ring per NIC and doubles them, or NCCL_MIN_CTAS shared among a machine's
 * `nics` NICs). */
double plat_nic_rate(const struct plat_params *p, const struct mdl_nccl *nc, int nics);
/* Builds the topology with collective tuning nc (NULL: the preset's) (initialises *t; release it
 * even on failure). */
int plat_preset_build(const struct plat_params *p, const struct mdl_nccl *nc, struct plat_topo *t,
                      struct tps_error *err);
/* PCIe x16 bandwidth per direction of a generation (3, 4, 5), 0 if unknown. */
double plat_pcie_Bps(int gen);

#endif
