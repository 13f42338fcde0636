#!/usr/bin/env bash
# bench/plan_gpt3_175b.sh - wall time and peak memory of `tpsim plan` for GPT-3 175B at TP=64 on
# 8 DGX A100 nodes (bench/gpt3-175b-tp64-8node.yaml): every mesh, placement, chunk count and
# Oases variant ranked analytically, the best 8 simulated. Prints every run and the median.
#   bench/plan_gpt3_175b.sh [RUNS=5] [SCENARIO]   (a whole job: bench/plan_job_1024.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scn=${2:-bench/gpt3-175b-tp64-8node.yaml}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
walls=() ; mems=()
for i in $(seq "$runs"); do
  out=$( { /usr/bin/time -f '%e %M' ./build/tpsim plan "$scn" >/dev/null; } 2>&1 )
  wall=$(echo "$out" | tail -1 | cut -d' ' -f1); kb=$(echo "$out" | tail -1 | cut -d' ' -f2)
  echo "run $i: wall ${wall} s, peak RSS ${kb} KiB"
  walls+=("$wall"); mems+=("$kb")
done
echo "median of $runs: wall $(median "${walls[@]}") s, peak RSS $(median "${mems[@]}") KiB"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
