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
    "$T" run "$tmp/s.yaml" --json "$tmp/r.json" -q 2>/dev/null
    python3 - "$1" "$fold" "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[3]))
print(f"{sys.argv[1]:<16} fold={sys.argv[2]:<5} {r['iteration_time_s'] * 1e3:9.1f} ms  "
      f"{r['memory_gb_per_gpu']:5.1f} GB/GPU")
PY
  done
}
for z in 0 1 2 3; do run "zero $z" "s/^training: {/training: {zero: $z, /"; done
for o in tp-dp-pp tp-pp-dp dp-tp-pp pp-dp-tp; do
  run "order $o" "s/sequence_parallel: true}/sequence_parallel: true, order: $o}/"
done
