#!/usr/bin/env bash
# bench/plan_fold.sh - what folding identical layers buys the planner: wall time of `tpsim plan`
# on GPT-3 175B at TP=8 on one DGX A100 (bench/gpt3-175b-tp8-dgx-a100.yaml) with 12 and with 96
# layers (every candidate ranked, memory ignored), the best 8 simulated with the layers folded
# (3 and 4 simulated), and once each with run.fold: false (every layer replayed). Prints every
# run, the medians and the 96-to-12 ratio (issue 16 asks for under 1.5x).
#   bench/plan_fold.sh [RUNS=5]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# one scenario per depth and fold setting, from the benchmark scenario
scenario() { # LAYERS FOLD
  sed "s/^run: .*/run: {layers: $1, micro_batches: 1, fold: $2}/" \
    bench/gpt3-175b-tp8-dgx-a100.yaml > "$tmp/l$1-$2.yaml"
  echo "$tmp/l$1-$2.yaml"
}
# GPT-3 175B needs more than an A100's memory at TP 8 alone: --ignore-memory ranks every candidate
wall() {
  /usr/bin/time -f '%e' -o "$tmp/time" ./build/tpsim plan "$1" --ignore-memory >/dev/null 2>&1
  tail -1 "$tmp/time"
}
declare -A med
for L in 12 96; do
  scn=$(scenario "$L" auto)
  walls=()
  for i in $(seq "$runs"); do
    w=$(wall "$scn"); echo "$L layers, folded, run $i: wall $w s"; walls+=("$w")
  done
  med[$L]=$(median "${walls[@]}")
  echo "$L layers, folded: median of $runs: wall ${med[$L]} s"
done
for L in 12 96; do
  echo "$L layers, every layer replayed (run.fold: false), one run: wall $(wall "$(scenario "$L" false)") s"
done
echo "96 / 12 layers, folded: $(awk -v a="${med[96]}" -v b="${med[12]}" 'BEGIN {printf "%.2fx", a / b}') (target < 1.5x)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
