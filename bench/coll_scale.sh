#!/usr/bin/env bash
# bench/coll_scale.sh - wall time and peak memory of one 1 GiB all-reduce on large fabrics:
# dgx-a100 x512 nodes (4096 GPUs) and x2048 nodes (16384 GPUs), one NIC per GPU, non-blocking
# fat-tree, with the tuner's choices (NCCL's tree; flow-level past 32 nodes). Also times the
# 4096-GPU case with per-node zones in a 2:1 oversubscribed fat-tree, and dgx-h100 x512 nodes
# (4096 GPUs, where the tuner takes NVLS-tree). Prints every run and medians
# of wall time, CPU time (user + system) and peak RSS.
#   bench/coll_scale.sh [RUNS=3]
# Needs a built tpsim in build/ (scripts/setup.sh) and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for plat in "dgx-a100 nodes=512" "dgx-a100 nodes=512 oversubscription=2" "dgx-a100 nodes=2048" "dgx-h100 nodes=512"; do
  walls=() ; mems=() ; cpus=()
  for i in $(seq "$runs"); do
    out=$( { /usr/bin/time -f '%e %M %U %S' ./build/tpsim collective --platform "$plat" --bytes 1G; } 2>&1 )
    row=$(echo "$out" | grep -E '^ +[0-9]' | tail -1)
    wall=$(echo "$out" | tail -1 | cut -d' ' -f1); kb=$(echo "$out" | tail -1 | cut -d' ' -f2)
    cpu=$(echo "$out" | tail -1 | awk '{print $3 + $4}')
    echo "$plat, run $i: wall ${wall} s, CPU ${cpu} s, peak RSS ${kb} KiB; row: $row"
    walls+=("$wall"); mems+=("$kb"); cpus+=("$cpu")
  done
  echo "== $plat: median of $runs: wall $(median "${walls[@]}") s, CPU $(median "${cpus[@]}") s, peak RSS $(median "${mems[@]}") KiB"
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
