#!/usr/bin/env bash
# bench/sweep_slurm.sh - a 1,000-point sweep run two ways on this machine: `tpsim sweep -j 2`,
# and as a SLURM job array of 10 shards (each task -j 1, the one-node SLURM of
# scripts/slurm-local.sh running 2 at a time on 2 CPUs), from submission to the merged CSV. On
# one machine the two should take about the same: the point of the array is that N machines
# divide it by N. Also the sharding's own cost per point: the split (each point's scenario
# loaded and its ops counted, the manifest written), `sweep merge` and `sweep status`. Prints
# every run and the medians. Needs root and slurm-wlm (scripts/install-deps.sh), a built
# build/tpsim.
#   bench/sweep_slurm.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
src=$PWD
T=$PWD/build/tpsim
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-bench-XXXXXX")
trap '"$src/scripts/slurm-local.sh" stop "$tmp/slurm" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
eval "$(scripts/slurm-local.sh start "$tmp/slurm")"
cat >"$tmp/s.yaml" <<'YAML'
model: gpt3-1.3b
device: A100-80GB
platform: dgx-a100
strategy: {tp: 2}
run: {layers: 4}
sweep:
  strategy.tp: [1, 2, 4, 8]
  strategy.chunks: [1, 2]
  platform.nodes: [1, 2, 4, 8, 16]
  model.seq: [512, 1024, 2048, 4096, 8192]
  run.micro_batches: {from: 1, to: 5, step: 1}
YAML
cd "$tmp"
now() { date +%s.%N; }
# el T0 T1 [SCALE]: (T1 - T0) x SCALE
el() { awk -v a="$1" -v b="$2" -v k="${3:-1}" 'BEGIN { printf "%.6f\n", (b - a) * k }'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
: >one.t
: >slurm.t
: >split.t
: >merge.t
: >status.t
for r in $(seq "$runs"); do
  t0=$(now)
  "$T" sweep s.yaml -j 2 -o one.csv 2>/dev/null
  t1=$(now)
  el "$t0" "$t1" >>one.t
  rm -rf arr split
  t0=$(now)
  "$T" sweep s.yaml --slurm --array-size 10 -o split >/dev/null 2>&1
  t1=$(now)
  el "$t0" "$t1" 1000 >>split.t # us per point
  t0=$(now)
  job=$("$T" sweep s.yaml --slurm --array-size 10 -o arr --submit 2>/dev/null)
  while [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; do sleep 0.2; done
  "$T" sweep merge arr -o merged.csv 2>/dev/null
  t1=$(now)
  el "$t0" "$t1" >>slurm.t
  cmp -s merged.csv one.csv || { echo "sweep_slurm: the merged CSV differs" >&2; exit 1; }
  t0=$(now)
  "$T" sweep merge arr -o merged.csv 2>/dev/null
  t1=$(now)
  el "$t0" "$t1" 1000 >>merge.t
  t0=$(now)
  "$T" sweep status arr >/dev/null
  t1=$(now)
  el "$t0" "$t1" 1000 >>status.t
  printf "run %d: -j 2 %.1f s, SLURM array (10 shards, submit to merged CSV) %.1f s\n" "$r" \
    "$(tail -n1 one.t)" "$(tail -n1 slurm.t)"
done
printf "median of %d: 1,000 points with -j 2: %.1f s; as a SLURM array of 10 shards: %.1f s\n" \
  "$runs" "$(median <one.t)" "$(median <slurm.t)"
printf "sharding per point: split %.0f us, merge %.0f us; status of 10 shards %.0f ms\n" \
  "$(median <split.t)" "$(median <merge.t)" "$(median <status.t)"
