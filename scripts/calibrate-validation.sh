#!/bin/sh
# Regenerates the calibrated platforms of scenarios/validation/ from the fit logs named in
# scenarios/validation/nccl.yaml (role: fit; a joint fit takes several), then runs the
# validation into docs/validation/:
# per-log .dat files, busbw.gp, the busbw.png/busbw.svg plot and table.md (the table that
# docs/validation.md shows). Usage: scripts/calibrate-validation.sh [path/to/tpsim]
set -eu
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
R=../shared/refdata/nccl
V=scenarios/validation
# joint fits: two step counts (8 and 4 GPUs; all-reduce and all-gather) tell the base latency
# from the per-step latency
"$T" calibrate $R/abci_a100_1node_8gpu_all_reduce.raw.txt $R/abci_a100_1node_4gpu_all_reduce.raw.txt \
    --platform dgx-a100 -o $V/a100-nvswitch.yaml
G=$(awk '/^gpu_link:/ {print $2}' $V/a100-nvswitch.yaml)
# the fitted NVLink latency, where the fit moved it from the preset's
NL=$(awk '/^nvlink_latency:/ {print $2}' $V/a100-nvswitch.yaml)
# ABCI does not state its HCAs; one effective HDR rail per node is what its 2-node log shows.
# Fitted across node counts: the 1-node logs and the 2-node log together share the protocols
# (NCCL's per-step and base costs are the node's), the 2-node log's Simple rows give the network
# rate; the node's NVLink rate and latency are the ones fitted above (--hold gpu_link). Ring
# (NCCL's default for large all-reduces): with one NIC per node, trees and rails would load it in
# proportion to 2(N-1)/N of the node count N, a ring with 2(n-1)/n of the GPUs whatever N;
# docs/validation.md.
"$T" calibrate $R/abci_a100_1node_8gpu_all_reduce.raw.txt $R/abci_a100_1node_4gpu_all_reduce.raw.txt \
    $R/abci_a100_2node_16gpu_all_reduce.raw.txt --algorithm ring --hold gpu_link \
    --platform "dgx-a100 nodes=2 nics_per_node=1 ib=HDR gpu_link=$G${NL:+ nvlink_latency=$NL}" \
    -o $V/a100-abci-ib.yaml
"$T" calibrate $R/h100_hgx_4gpu_all_reduce.raw.txt $R/h100_hgx_4gpu_all_gather.raw.txt \
    --platform dgx-h100 -o $V/h100-hgx.yaml
"$T" calibrate $R/rtx2080ti_2gpu_pcie_nop2p_all_reduce.raw.txt \
    --platform "rtx3090-4gpu pcie_gen=3" -o $V/rtx2080ti-pcie-nop2p.yaml
"$T" validate nccl --out docs/validation --markdown docs/validation/table.md
