#!/usr/bin/env bash
# bench/run_gpt3_175b.sh - wall time, CPU time (user + system, the forked SimGrid runs included)
# and peak memory of one simulated iteration (forward and backward, all 96 layers) of GPT-3 175B,
# TP=8 on dgx-a100; then the CPU of `tpsim --help` as often, which only loads the binary and its
# libraries (the part of every run that is not tpsim's work). Prints every run and the medians.
#   bench/run_gpt3_175b.sh [RUNS=5] [SCENARIO]   (another scenario: bench/job_gpt3_175b_1024.sh)
# Needs a built tpsim in build/ (scripts/setup.sh) and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scn=${2:-bench/gpt3-175b-tp8-dgx-a100.yaml}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
walls=() ; mems=() ; cpus=() ; starts=()
for i in $(seq "$runs"); do
  out=$( { /usr/bin/time -f '%e %M %U %S' ./build/tpsim run "$scn" -q; } 2>&1 )
  read -r wall kb user sys <<< "$(echo "$out" | tail -1)"
  cpu=$(echo "$user $sys" | awk '{printf "%.2f", $1 + $2}')
  echo "run $i: wall ${wall} s, CPU ${cpu} s, peak RSS ${kb} KiB"
  walls+=("$wall"); mems+=("$kb"); cpus+=("$cpu")
  out=$( { /usr/bin/time -f '%U %S' ./build/tpsim --help >/dev/null; } 2>&1 )
  starts+=("$(echo "$out" | tail -1 | awk '{printf "%.2f", $1 + $2}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median of $runs: wall $(median "${walls[@]}") s, CPU $(median "${cpus[@]}") s, peak RSS $(median "${mems[@]}") KiB"
echo "median CPU of tpsim --help (loading the binary and its libraries): $(median "${starts[@]}") s"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
