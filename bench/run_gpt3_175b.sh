#!/usr/bin/env bash
# bench/run_gpt3_175b.sh - wall time and peak memory of one simulated iteration (forward and
# backward, all 96 layers) of GPT-3 175B, TP=8 on dgx-a100. Prints every run and the median.
#   bench/run_gpt3_175b.sh [RUNS=5] [SCENARIO]   (another scenario: bench/job_gpt3_175b_1024.sh)
# Needs a built tpsim in build/ (scripts/setup.sh) and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scn=${2:-bench/gpt3-175b-tp8-dgx-a100.yaml}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
walls=() ; mems=()
for i in $(seq "$runs"); do
  out=$( { /usr/bin/time -f '%e %M' ./build/tpsim run "$scn" -q; } 2>&1 )
  wall=$(echo "$out" | tail -1 | cut -d' ' -f1); kb=$(echo "$out" | tail -1 | cut -d' ' -f2)
  echo "run $i: wall ${wall} s, peak RSS ${kb} KiB"
  walls+=("$wall"); mems+=("$kb")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median of $runs: wall $(median "${walls[@]}") s, peak RSS $(median "${mems[@]}") KiB"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
