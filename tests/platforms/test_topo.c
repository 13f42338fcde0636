/* test_topo.c - preset fabrics, routes, bandwidth matrix entries and topology files. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "platforms/preset.h"
#include "platforms/spec.h"
#include "tests/testdir.h"

TestSuite(topo);

static void build(const char *spec, int nkv, char **kv, struct plat_topo *t)
{
    struct tps_error err = {0};
    int rc = plat_spec_from_args(spec, nkv, kv, t, &err);
    cr_assert(eq(int, rc, 0), "%s: %s", spec, err.msg);
}

Test(topo, dgx_a100_is_a_uniform_crossbar)
{
    struct plat_topo t;
    build("dgx-a100", 0, NULL, &t);
    cr_assert(eq(int, t.ngpus, 8));
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            if (i == j) continue;
            struct plat_route r;
            cr_assert(eq(int, plat_topo_route(&t, i, j, &r), 0));
            /* NVLink 3 as NCCL reaches it, fitted on the shared A100 logs (datasheet: 300) */
            cr_assert(eq(dbl, r.bw_Bps, 220.67e9));
            cr_assert(eq(int, r.nhops, 2));
        }
    plat_topo_release(&t);
}

Test(topo, pcie_cross_switch_traffic_crosses_the_root_complex)
{
    struct plat_topo t;
    build("pcie-8gpu", 0, NULL, &t);
    struct plat_route in, cross;
    plat_topo_route(&t, 0, 1, &in);
    plat_topo_route(&t, 3, 4, &cross);
    cr_assert(eq(int, in.nhops, 2));
    cr_assert(eq(int, cross.nhops, 5)); /* 4 links + root-complex forwarding */
    int fwd = 0;
    for (int h = 0; h < cross.nhops; h++)
        fwd += cross.hops[h].link < 0;
    cr_assert(eq(int, fwd, 1));
    plat_topo_release(&t);
}

Test(topo, two_socket_pcie_crosses_the_cpu_interconnect)
{
    struct plat_topo t;
    char *kv[] = {"sockets=2", "pcie_gen=5"};
    build("pcie-8gpu", 2, kv, &t);
    struct plat_route r;
    plat_topo_route(&t, 1, 6, &r);
    cr_assert(eq(dbl, r.bw_Bps, 20e9));
    plat_topo_route(&t, 1, 2, &r);
    cr_assert(eq(dbl, r.bw_Bps, 63e9));
    plat_topo_release(&t);
}

Test(topo, rtx3090_bridges_join_pairs)
{
    struct plat_topo t;
    char *kv[] = {"nvlink_bridges=true"};
    build("rtx3090-4gpu", 1, kv, &t);
    struct plat_route r;
    plat_topo_route(&t, 0, 1, &r);
    cr_assert(eq(int, r.nhops, 1));
    cr_assert(eq(dbl, r.bw_Bps, 56.25e9));
    plat_topo_route(&t, 1, 2, &r);
    cr_assert(eq(dbl, r.bw_Bps, 31e9));
    plat_topo_release(&t);
}

Test(topo, multi_node_routes_cross_the_nics)
{
    struct plat_topo t;
    char *kv[] = {"nodes=4", "ib=HDR"};
    build("dgx-a100", 2, kv, &t);
    cr_assert(eq(int, t.ngpus, 32));
    struct plat_route r;
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(eq(dbl, r.bw_Bps, 25e9));
    plat_topo_route(&t, 0, 7, &r);
    cr_assert(eq(dbl, r.bw_Bps, 220.67e9));
    plat_topo_release(&t);
}

Test(topo, oversubscribed_leaf_uplink_is_sized_by_its_nics)
{
    struct plat_topo t;
    char *kv[] = {"nodes=8", "oversubscription=4", "leaf_ports=16"};
    build("dgx-a100", 3, kv, &t);
    int uplinks = 0;
    for (int l = 0; l < t.nlinks; l++) {
        if (strncmp(t.links[l].name, "leaf", 4)) continue;
        if (strstr(t.links[l].name, "core")) {
            uplinks++;
            cr_assert(eq(dbl, t.links[l].bw_Bps, 16 * 25e9 / 4));
        }
    }
    cr_assert(eq(int, uplinks, 4));
    struct plat_route r;
    plat_topo_route(&t, 0, 63, &r); /* leaf 0 to leaf 3 */
    cr_assert(eq(dbl, r.bw_Bps, 25e9));
    plat_topo_release(&t);
}

Test(topo, explicit_topology_file_loads)
{
    struct plat_topo t;
    build(TPSIM_SOURCE_DIR "/platforms/dgx1-v100.yaml", 0, NULL, &t);
    cr_assert(eq(int, t.ngpus, 8));
    struct plat_route r;
    cr_assert(eq(int, plat_topo_route(&t, 0, 1, &r), 0));
    cr_assert(eq(int, r.nhops, 1));
    plat_topo_release(&t);
}

Test(topo, bad_parameter_is_refused_with_its_name)
{
    struct plat_topo t;
    struct tps_error err = {0};
    char *kv[] = {"sockets=2"};
    cr_assert(ne(int, plat_spec_from_args("dgx-a100", 1, kv, &t, &err), 0));
    cr_assert(eq(str, err.field, "platform.sockets"));
    plat_topo_release(&t);
}

Test(topo, explicit_topology_errors_name_the_position)
{
    char path[] = "/tmp/tpsim-topo-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "gpus: 2\nlinks:\n  - {between: [gpu0, gpu9], bandwidth: 10GBps}\n");
    fclose(f);
    struct plat_topo t;
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(path, 0, NULL, &t, &err), TPS_EINVAL));
    cr_assert(eq(str, err.path, path));
    cr_assert(eq(int, err.line, 3));
    cr_assert(eq(int, err.col, 22));
    cr_assert(eq(str, err.field, "links[0].between"));
    plat_topo_release(&t);
    remove(path);
}

Test(topo, a_platform_file_takes_overrides_as_a_preset_does)
{
    /* the calibrated ABCI platform is two nodes; nodes=4 makes it four, as a manifest's
     * {file: F, nodes: 4} does */
    const char *abci = TPSIM_SOURCE_DIR "/scenarios/validation/a100-abci-ib.yaml";
    struct plat_topo t2, t4;
    build(abci, 0, NULL, &t2);
    char *kv[] = {"nodes=4"};
    build(abci, 1, kv, &t4);
    cr_assert(eq(int, t4.ngpus, 2 * t2.ngpus));
    plat_topo_release(&t2);
    plat_topo_release(&t4);
    /* an unknown key is named; SimGrid XML takes none */
    struct plat_topo t;
    struct tps_error err = {0};
    char *bad[] = {"nodez=4"};
    cr_assert(ne(int, plat_spec_from_args(abci, 1, bad, &t, &err), 0));
    cr_assert(eq(str, err.field, "platform.nodez"), "%s", err.msg);
    plat_topo_release(&t);
    memset(&err, 0, sizeof err);
    cr_assert(ne(int, plat_spec_from_args("x.xml", 1, kv, &t, &err), 0));
    cr_assert(strstr(err.msg, "SimGrid XML") != NULL, "%s", err.msg);
    plat_topo_release(&t);
}

Test(topo, a_trees_channel_rate_follows_the_gpu_and_the_machines_and_nccl_tree_rate_sets_it)
{
    /* NCCL's per-channel tree bus bandwidth over one, two and more machines, a quarter per tree */
    struct plat_topo t;
    build("dgx-a100", 0, NULL, &t);
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 1, MDL_PROTO_SIMPLE), 24.0e9 / 4));
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 2, MDL_PROTO_SIMPLE), 23.6e9 / 4));
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 9, MDL_PROTO_SIMPLE), 17.8e9 / 4));
    plat_topo_release(&t);
    build("dgx-h100", 0, NULL, &t);
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 1, MDL_PROTO_SIMPLE), 38.7e9 / 4));
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 2, MDL_PROTO_SIMPLE), 41.4e9 / 4));
    cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, 3, MDL_PROTO_SIMPLE), 36.0e9 / 4));
    plat_topo_release(&t);
    /* one rate for every machine count; a value that is no rate is refused where it stands */
    char dir[256], path[512];
    cr_assert(ne(ptr, testdir_make(dir, sizeof dir), NULL));
    testdir_path(path, sizeof path, dir, "p.yaml");
    FILE *f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL));
    fprintf(f, "preset: dgx-a100\nnodes: 2\nnccl: {tree_rate: 10GB/s}\n");
    fclose(f);
    build(path, 0, NULL, &t);
    for (int m = 1; m <= 3; m++)
        cr_assert(eq(dbl, mdl_nccl_tree_rate(&t.nccl, m, MDL_PROTO_SIMPLE), 10e9));
    plat_topo_release(&t);
    f = fopen(path, "w");
    fprintf(f, "preset: dgx-a100\nnccl: {tree_rate: fast}\n");
    fclose(f);
    struct tps_error err = {0};
    cr_assert(eq(int, plat_spec_from_args(path, 0, NULL, &t, &err), TPS_EINVAL));
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(int, err.col, 19));
    cr_assert(eq(str, err.field, "nccl.tree_rate"), "%s", err.field);
    cr_assert(ne(ptr, strstr(err.msg, "rate"), NULL), "%s", err.msg);
    testdir_remove(dir);
}

/* Builds the platform file text `good` into *t (the caller checks and releases it), then checks
 * that the file text `bad` is refused at line 2, column col, in `field`. */
static void nccl_key(const char *good, const char *bad, int col, const char *field,
                     struct plat_topo *t)
{
    char dir[256], path[512];
    cr_assert(ne(ptr, testdir_make(dir, sizeof dir), NULL));
    testdir_path(path, sizeof path, dir, "p.yaml");
    FILE *f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL));
    fputs(bad, f);
    fclose(f);
    struct tps_error err = {0};
    struct plat_topo b;
    cr_assert(eq(int, plat_spec_from_args(path, 0, NULL, &b, &err), TPS_EINVAL));
    cr_assert(eq(int, err.line, 2));
    cr_assert(eq(int, err.col, col));
    cr_assert(eq(str, err.field, (char *)field), "%s", err.field);
    f = fopen(path, "w");
    cr_assert(ne(ptr, f, NULL));
    fputs(good, f);
    fclose(f);
    build(path, 0, NULL, t);
    testdir_remove(dir);
}

Test(topo, nvls_tree_follows_nvls_and_nccl_nvls_tree_turns_it_off)
{
    struct plat_topo t;
    build("dgx-h100", 0, NULL, &t);
    cr_assert(t.nccl.nvls && t.nccl.nvls_tree);
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnodes: 2\nnccl: {nvls_tree: false}\n",
             "preset: dgx-h100\nnccl: {nvls_tree: 2}\n", 19, "nccl.nvls_tree", &t);
    cr_assert(t.nccl.nvls && !t.nccl.nvls_tree);
    plat_topo_release(&t);
}

Test(topo, collnet_is_off_unless_nccl_collnet_says_the_switches_reduce)
{
    struct plat_topo t;
    build("dgx-a100", 0, NULL, &t);
    cr_assert(eq(int, t.nccl.collnet, 0));
    plat_topo_release(&t);
    nccl_key("preset: dgx-a100\nnodes: 4\nnccl: {collnet: true}\n",
             "preset: dgx-a100\nnccl: {collnet: sharp}\n", 17, "nccl.collnet", &t);
    cr_assert(eq(int, t.nccl.collnet, 1));
    plat_topo_release(&t);
}

/* NVLS-tree's channels and chunk (NCCL_NVLS_NCHANNELS, NCCL_NVLS_CHUNKSIZE): Hopper's 16 and
 * Blackwell's 32 from the presets, 128 KiB; both keys set them, a count of at least 1 and a size */
Test(topo, nvls_channels_and_chunk_come_from_the_device_and_the_nccl_keys)
{
    struct plat_topo t;
    build("dgx-h100", 0, NULL, &t);
    cr_assert(eq(int, t.nccl.nvls_channels, 16));
    cr_assert(eq(dbl, t.nccl.nvls_chunk_bytes, 128 << 10));
    plat_topo_release(&t);
    build("dgx-b200", 0, NULL, &t);
    cr_assert(eq(int, t.nccl.nvls_channels, 32));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnccl: {nvls_channels: 24, nvls_chunk: 64KiB}\n",
             "preset: dgx-h100\nnccl: {nvls_channels: 0}\n", 23, "nccl.nvls_channels", &t);
    cr_assert(eq(int, t.nccl.nvls_channels, 24));
    cr_assert(eq(dbl, t.nccl.nvls_chunk_bytes, 64 << 10));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnccl: {min_ctas: 24}\n",
             "preset: dgx-h100\nnccl: {nvls_chunk: big}\n", 20, "nccl.nvls_chunk", &t);
    cr_assert(eq(int, mdl_nccl_nvls_channels(&t.nccl), 24)); /* raised to NCCL_MIN_CTAS */
    plat_topo_release(&t);
}

/* NCCL_NCHANNELS_PER_NET_PEER and NCCL_P2P_NET_CHUNKSIZE: 2 and 128 KiB by default on every
 * preset, nccl.p2p_net_channels and nccl.p2p_net_chunk set them */
Test(topo, p2p_net_channels_and_chunk_default_to_ncclS_and_come_from_the_nccl_keys)
{
    struct plat_topo t;
    build("dgx-h100", 0, NULL, &t);
    cr_assert(eq(int, t.nccl.p2p_net_channels, 2));
    cr_assert(eq(dbl, t.nccl.p2p_net_chunk_bytes, 128 << 10));
    plat_topo_release(&t);
    build("dgx-a100", 0, NULL, &t);
    cr_assert(eq(int, t.nccl.p2p_net_channels, 2));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnccl: {p2p_net_channels: 4}\n",
             "preset: dgx-h100\nnccl: {p2p_net_channels: 0}\n", 26, "nccl.p2p_net_channels", &t);
    cr_assert(eq(int, t.nccl.p2p_net_channels, 4));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnccl: {p2p_net_channels: 32, p2p_net_chunk: 2MiB}\n",
             "preset: dgx-h100\nnccl: {p2p_net_channels: 33}\n", 26, "nccl.p2p_net_channels", &t);
    cr_assert(eq(dbl, t.nccl.p2p_net_chunk_bytes, 2 << 20));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnccl: {p2p_net_chunk: 128KiB}\n",
             "preset: dgx-h100\nnccl: {p2p_net_chunk: 0}\n", 23, "nccl.p2p_net_chunk", &t);
    plat_topo_release(&t);
}

/* Across machines on dgx-h100: each end of a crossing adds the network transport's latency
 * (nic_latency, fitted on the 2-node Ring log) to the GPU's PCIe link to its NIC, and a NIC
 * carries what NCCL's channels through it can move: 2 channels per NIC of 20.04 GB/s (fitted on
 * the 8-node log), 3 with NCCL_MIN_CTAS=24 over 8 NICs, never more than the port's 50 GB/s. The
 * presets without those fits keep their NICs' port rate and the PCIe latency. */
Test(topo, a_nic_carries_ncclS_channels_and_a_crossing_pays_the_transport_latency)
{
    struct plat_topo t;
    char *kv[] = {"nodes=2"};
    build("dgx-h100", 1, kv, &t);
    struct plat_route r;
    cr_assert(eq(int, plat_topo_route(&t, 0, 8, &r), 0));
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 2 * 20.04e9, 4));
    /* gpu -> nic (PCIe + transport) -> core -> nic -> gpu */
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * (1.5e-6 + 10.76e-6) + 2 * 2e-6, 4));
    plat_topo_route(&t, 0, 7, &r);
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * 0.4275e-6, 4));
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnodes: 2\nnccl: {min_ctas: 24}\n",
             "preset: dgx-h100\nnccl: {min_ctas: 65}\n", 18, "nccl.min_ctas", &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(eq(dbl, r.bw_Bps, 50e9)); /* 3 x 20.04 > the port */
    plat_topo_release(&t);
    nccl_key("preset: dgx-h100\nnodes: 2\nnic_latency: 0\nnccl: {net_channel_rate: 10GB/s}\n",
             "preset: dgx-h100\nnccl: {net_channel_rate: fast}\n", 26, "nccl.net_channel_rate", &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 20e9, 4));
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * 1.5e-6 + 2 * 2e-6, 4));
    plat_topo_release(&t);
    /* 0: no limit, the port's rate (as documented for mdl_nccl_default) */
    nccl_key("preset: dgx-h100\nnodes: 2\nnccl: {net_channel_rate: 0, p2p_channel_rate: 0, "
             "min_ctas: 0, p2p_channels: 0}\n",
             "preset: dgx-h100\nnccl: {p2p_channel_rate: -1GB/s}\n", 26, "nccl.p2p_channel_rate",
             &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(eq(dbl, r.bw_Bps, 50e9));
    cr_assert(eq(dbl, t.nccl.p2p_channel_Bps, 0));
    cr_assert(eq(int, t.nccl.min_ctas, 0));
    cr_assert(eq(int, t.nccl.p2p_channels, 0));
    plat_topo_release(&t);
    char *a[] = {"nodes=2"};
    build("dgx-a100", 1, a, &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(eq(dbl, r.bw_Bps, 25e9));
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * 1.5e-6 + 2 * 2e-6, 4));
    plat_topo_release(&t);
}

Test(topo, gb200_nvl72_racks_are_nvlink_domains_of_72_gpus_joined_by_the_network)
{
    struct plat_topo t;
    char *kv[] = {"racks=2"};
    build("gb200-nvl72", 1, kv, &t);
    cr_assert(eq(int, t.ngpus, 144));
    cr_assert(eq(int, t.machines, 2));
    cr_assert_not_null(strstr(t.desc, "x2 racks of 72 GPUs"), "%s", t.desc);
    struct plat_route r;
    /* inside a rack: GPU, NVLink switch, GPU at NVLink 5 as Hopper's NCCL reaches NVLink 4
     * (900 x 344.64 / 450) */
    cr_assert(eq(int, plat_topo_route(&t, 0, 71, &r), 0));
    cr_assert(eq(int, r.nhops, 2));
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 900e9 * (344.64 / 450), 4));
    /* across: through both GPUs' NICs (one ConnectX-7 each, 2 channels of 20.04 GB/s) */
    cr_assert(eq(int, plat_topo_route(&t, 0, 72, &r), 0));
    cr_assert(gt(int, r.nhops, 2));
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 2 * 20.04e9, 4));
    int nics = 0;
    for (int n = 0; n < t.nnodes; n++)
        nics += t.nodes[n].kind == PLAT_NIC;
    cr_assert(eq(int, nics, 144));
    plat_topo_release(&t);

    char *nvl36[] = {"racks=2", "nvlink_domain=36"};
    build("gb200-nvl72", 2, nvl36, &t);
    cr_assert(eq(int, t.ngpus, 72));
    cr_assert(eq(int, plat_topo_route(&t, 0, 35, &r), 0));
    cr_assert(eq(int, r.nhops, 2));
    cr_assert(eq(int, plat_topo_route(&t, 0, 36, &r), 0));
    cr_assert(gt(int, r.nhops, 2));
    plat_topo_release(&t);
}

Test(topo, the_new_dgx_presets_carry_their_nvlink_and_hopper_or_blackwell_nvls)
{
    struct plat_topo t;
    struct plat_route r;
    build("dgx-h200", 0, NULL, &t);
    cr_assert(eq(int, t.ngpus, 8));
    plat_topo_route(&t, 0, 7, &r);
    cr_assert(eq(dbl, r.bw_Bps, 344.64e9));
    cr_assert(eq(dbl, t.nccl.nvls_eff, 0.886));
    plat_topo_release(&t);
    char *kv[] = {"nodes=2"};
    build("dgx-b200", 1, kv, &t);
    cr_assert(eq(int, t.ngpus, 16));
    plat_topo_route(&t, 0, 7, &r);
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 689.28e9, 4));
    /* NCCL's Blackwell to Hopper NVLS efficiency (0.74 / 0.85) on Hopper's fitted 0.886 */
    cr_assert(ieee_ulp_eq(dbl, t.nccl.nvls_eff, 0.886 * 0.74 / 0.85, 4));
    plat_topo_release(&t);
}

Test(topo, racks_nvlink_domain_and_fabric_keys_are_refused_where_they_do_not_apply)
{
    static const struct {
        const char *preset, *kv[2], *field, *msg;
    } cases[] = {
        {"dgx-h100", {"racks=2", NULL}, "platform.racks", "built of servers"},
        {"gb200-nvl72", {"racks=2", "nodes=2"}, "platform.racks", "not both"},
        {"gb200-nvl72", {"nvlink_domain=30", NULL}, "platform.nvlink_domain", "whole trays"},
        {"gb200-nvl72", {"nvlink_domain=4", NULL}, "platform.nvlink_domain", "whole trays"},
        {"dgx-b200", {"nvlink_domain=8", NULL}, "platform.nvlink_domain", "rack-scale"},
        {"dgx-h100", {"fabric=torus", NULL}, "platform.fabric", "expected fat_tree or rail"},
        {"dgx-h100",
         {"spine_oversubscription=2", NULL},
         "platform.spine_oversubscription",
         "third tier"},
        {"dgx-h100", {"fabric=rail", "pod_leaves=4"}, "platform.pod_leaves", "multiple of the 8"},
        {"dgx-h100", {"network=ethernet", NULL}, "platform.network", "infiniband or roce"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct plat_topo t;
        struct tps_error err = {0};
        char *kv[2] = {(char *)cases[i].kv[0], (char *)cases[i].kv[1]};
        int n = kv[1] ? 2 : 1;
        cr_assert(ne(int, plat_spec_from_args(cases[i].preset, n, kv, &t, &err), 0), "%zu", i);
        cr_assert(eq(str, err.field, (char *)cases[i].field), "%zu: %s", i, err.msg);
        cr_assert_not_null(strstr(err.msg, cases[i].msg), "%zu: %s", i, err.msg);
        plat_topo_release(&t);
    }
}

/* The links of gpu a -> gpu b's route, by name, joined by spaces. */
static void route_names(const struct plat_topo *t, int a, int b, char *out, size_t len,
                        struct plat_route *r)
{
    cr_assert(eq(int, plat_topo_route(t, a, b, r), 0));
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < r->nhops && n < len; i++)
        if (r->hops[i].link >= 0)
            n += (size_t)snprintf(out + n, len - n, "%s ", t->links[r->hops[i].link].name);
}

/* A rail-optimised network: rail r of every pair of machines (leaf_ports 2) on its own leaf.
 * Same rail, same pair: the leaf only; same rail, other pair: up to the core and down; another
 * rail: NCCL's PXN, over NVLink to the GPU of the destination's rail, out by its NIC. */
Test(topo, a_rail_optimised_network_keeps_a_rail_on_its_leaf_and_crosses_rails_by_pxn)
{
    struct plat_topo t;
    char *kv[] = {"nodes=4", "fabric=rail", "leaf_ports=2"};
    build("dgx-h100", 3, kv, &t);
    cr_assert_not_null(strstr(t.desc, "rail-optimised"), "%s", t.desc);
    char n[1024];
    struct plat_route r;
    route_names(&t, 0, 8, n, sizeof n, &r); /* machine 0 rail 0 -> machine 1 rail 0 */
    cr_assert(eq(str, n, "gpu0-n0nic0 n0nic0-leaf0 n1nic0-leaf0 gpu8-n1nic0 "));
    double pcie = 1.5e-6 + 10.76e-6, net = 2e-6;
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * pcie + 2 * net, 8), "%g", r.lat_s);
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 40.08e9, 4));
    route_names(&t, 0, 16, n, sizeof n, &r); /* rail 0 of machine 2: the other pair's leaf */
    cr_assert(
        eq(str, n, "gpu0-n0nic0 n0nic0-leaf0 leaf0-core0 leaf8-core0 n2nic0-leaf8 gpu16-n2nic0 "));
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * pcie + 4 * net, 8), "%g", r.lat_s);
    route_names(&t, 0, 9, n, sizeof n, &r); /* rail 1 of machine 1: PXN through gpu1 */
    cr_assert(eq(str, n,
                 "gpu0-n0nvswitch gpu1-n0nvswitch gpu1-n0nic1 n0nic1-leaf1 n1nic1-leaf1 "
                 "gpu9-n1nic1 "));
    cr_assert(ieee_ulp_eq(dbl, r.lat_s, 2 * 0.4275e-6 + 2 * pcie + 2 * net, 8), "%g", r.lat_s);
    plat_topo_release(&t);
    /* the fat-tree's leaves take consecutive NICs: machine 0 and 1's rail 0 meet at the core */
    char *ft[] = {"nodes=4", "leaf_ports=8", "oversubscription=2"};
    build("dgx-h100", 3, ft, &t);
    route_names(&t, 0, 8, n, sizeof n, &r);
    cr_assert(
        eq(str, n, "gpu0-n0nic0 n0nic0-leaf0 leaf0-core0 leaf1-core0 n1nic0-leaf1 gpu8-n1nic0 "));
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 40.08e9, 4)); /* 8 x 50 / 2 = 200 GB/s uplinks */
    plat_topo_release(&t);
}

/* Three tiers: leaves under pod spines under the core; a spine's uplink carries what its
 * leaves send up divided by spine_oversubscription. */
Test(topo, three_tiers_put_pods_of_leaves_under_spines_with_their_own_oversubscription)
{
    struct plat_topo t;
    char *kv[] = {"nodes=4", "leaf_ports=8", "oversubscription=2", "pod_leaves=2",
                  "spine_oversubscription=4"};
    build("dgx-h100", 5, kv, &t);
    cr_assert_not_null(strstr(t.desc, "three tiers"), "%s", t.desc);
    char n[1024];
    struct plat_route r;
    route_names(&t, 0, 8, n, sizeof n, &r); /* machines 0 and 1: one pod */
    cr_assert(
        eq(str, n, "gpu0-n0nic0 n0nic0-leaf0 leaf0-spine0 leaf1-spine0 n1nic0-leaf1 gpu8-n1nic0 "));
    route_names(&t, 0, 16, n, sizeof n, &r); /* machine 2: the other pod, through the core */
    cr_assert(eq(str, n,
                 "gpu0-n0nic0 n0nic0-leaf0 leaf0-spine0 spine0-core0 spine1-core0 leaf2-spine1 "
                 "n2nic0-leaf2 gpu16-n2nic0 "));
    for (int l = 0; l < t.nlinks; l++) {
        if (!strcmp(t.links[l].name, "leaf0-spine0"))
            cr_assert(eq(dbl, t.links[l].bw_Bps, 8 * 50e9 / 2));
        if (!strcmp(t.links[l].name, "spine0-core0"))
            cr_assert(eq(dbl, t.links[l].bw_Bps, 16 * 50e9 / 2 / 4));
    }
    plat_topo_release(&t);
}

/* RoCEv2 carries a 4096-byte packet in 4178 bytes on the wire where InfiniBand takes 4122: a
 * port-bound NIC (NCCL_MIN_CTAS 24: 3 channels of 20.04 GB/s would exceed 50) loses that ratio;
 * a channel-bound one (2 channels, 40.08 GB/s) does not. */
Test(topo, roce_headers_cost_a_port_bound_nic_their_ratio_and_a_channel_bound_one_nothing)
{
    struct plat_topo t;
    struct plat_route r;
    char *ib[] = {"nodes=2", "nccl={min_ctas: 24}"},
         *roce[] = {"nodes=2", "nccl={min_ctas: 24}", "network=roce"};
    build("dgx-h100", 2, ib, &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(eq(dbl, r.bw_Bps, 50e9));
    plat_topo_release(&t);
    build("dgx-h100", 3, roce, &t);
    cr_assert_not_null(strstr(t.desc, "RoCE"), "%s", t.desc);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 50e9 * 4122 / 4178, 4));
    plat_topo_release(&t);
    char *ch[] = {"nodes=2", "network=roce"};
    build("dgx-h100", 2, ch, &t);
    plat_topo_route(&t, 0, 8, &r);
    cr_assert(ieee_ulp_eq(dbl, r.bw_Bps, 40.08e9, 4));
    plat_topo_release(&t);
}

Test(topo, remembered_routes_are_the_searched_ones_whatever_the_order_and_evictions)
{
    /* 256 GPUs: 65,280 ordered pairs through 8,192 memo slots, asked in two orders */
    char *kv[] = {"nodes=32"};
    struct plat_topo a, b;
    build("dgx-h100", 1, kv, &a);
    build("dgx-h100", 1, kv, &b);
    int n = a.ngpus;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            struct plat_route x, y;
            int rx = plat_topo_route(&a, i, j, &x);
            /* b: reverse order, each pair twice (the second from the memo when it stayed) */
            int ry = plat_topo_route(&b, n - 1 - i, n - 1 - j, &y);
            ry |= plat_topo_route(&b, n - 1 - i, n - 1 - j, &y);
            cr_assert(eq(int, rx, 0));
            cr_assert(eq(int, ry, 0));
        }
    for (int i = 0; i < n; i += 7)
        for (int j = 0; j < n; j += 3) {
            struct plat_route x, y;
            cr_assert(eq(int, plat_topo_route(&a, i, j, &x), 0));
            cr_assert(eq(int, plat_topo_route(&b, i, j, &y), 0));
            cr_assert(eq(int, x.nhops, y.nhops), "route %d -> %d", i, j);
            cr_assert(eq(dbl, x.lat_s, y.lat_s), "route %d -> %d", i, j);
            cr_assert(eq(dbl, x.bw_Bps, y.bw_Bps), "route %d -> %d", i, j);
            for (int h = 0; h < x.nhops; h++) {
                cr_assert(eq(int, x.hops[h].link, y.hops[h].link), "route %d -> %d", i, j);
                cr_assert(eq(int, x.hops[h].node, y.hops[h].node), "route %d -> %d", i, j);
                cr_assert(eq(int, x.hops[h].up, y.hops[h].up), "route %d -> %d", i, j);
            }
        }
    /* a link made slower after its routes were remembered: the route's figures follow it */
    struct plat_route r0, r1;
    cr_assert(eq(int, plat_topo_route(&a, 0, 8, &r0), 0));
    for (int h = 0; h < r0.nhops; h++)
        if (r0.hops[h].link >= 0) a.links[r0.hops[h].link].bw_Bps = r0.bw_Bps / 2;
    cr_assert(eq(int, plat_topo_route(&a, 0, 8, &r1), 0));
    cr_assert(eq(dbl, r1.bw_Bps, r0.bw_Bps / 2));
    plat_topo_release(&a);
    plat_topo_release(&b);
}
