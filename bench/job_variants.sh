#!/usr/bin/env bash
# bench/job_variants.sh - iteration time and memory per GPU of tests/data/good/job-32.yaml (GPT-3
# 1.3B, TP 4 x PP 2 x DP 4 on 4 DGX A100s with 2 NICs each) under each ZeRO stage and rank order,
# replayed op by op and folded (docs/jobs.md quotes these). Simulated figures, not wall times:
# every run is deterministic, so one run each.
#   bench/job_variants.sh [path/to/tpsim]
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=tests/data/good/job-32.yaml
run() { # NAME SED-EXPRESSION
  for fold in false true; do
    sed -e "$2" -e "s/fold: false/fold: $fold/" "$base" > "$tmp/s.yaml"
    "$T" run "$tmp/s.yaml" --csv "$tmp/r.csv" -q 2>/dev/null
    # columns 2 and 9: iteration_time_s, memory_gb_per_gpu (docs/output.md)
    tail -1 "$tmp/r.csv" | awk -F, -v n="$1" -v f="$fold" \
      '{printf "%-16s fold=%-5s %9.1f ms  %5.1f GB/GPU\n", n, f, $2 * 1e3, $9}'
  done
}
for z in 0 1 2 3; do run "zero $z" "s/^training: {/training: {zero: $z, /"; done
for o in tp-dp-pp tp-pp-dp dp-tp-pp pp-dp-tp; do
  run "order $o" "s/sequence_parallel: true}/sequence_parallel: true, order: $o}/"
done
