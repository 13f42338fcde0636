#!/usr/bin/env bash
# bench/input_scale.sh - time of tpsim on large or hostile inputs, the cases the hardening issue
# found super-linear: a trace of 100,000 ops with distinct names (read and replayed), calibration
# on a 1,206-row nccl-tests log, a 50,000-node topology file, and the refusal of a scenario of one
# million nested brackets. Prints every run and the median of each.
#   bench/input_scale.sh [RUNS=5]
# Needs a built tpsim in build/ (scripts/setup.sh) and python3 to generate the inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
T=$PWD/build/tpsim
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import os, sys
d = sys.argv[1]
os.makedirs(d + "/names")
open(d + "/names/meta.tps", "w").write("tpsim-trace 2\nranks 1\nlayers 1\nmicro_batches 1\n")
with open(d + "/names/rank-00000.tps", "w") as f:
    f.write("tpsim-trace 2 rank 0\n")
    for i in range(100000):
        f.write(f"{i} 0 compute fwd 0 0 op{i} 1e-06 0 0 -1 - - -\n")
with open(d + "/topo.yaml", "w") as f:
    f.write("name: chain\ngpus: 8\nnodes:\n")
    for i in range(50000):
        f.write(f"  - {{name: sw{i}}}\n")
    f.write("links:\n")
    for g in range(8):
        f.write(f"  - {{between: [gpu{g}, sw0], bandwidth: 100GBps}}\n")
    for i in range(1, 50000):
        f.write(f"  - {{between: [sw{i-1}, sw{i}], bandwidth: 100GBps}}\n")
open(d + "/deep.yaml", "w").write("model: " + "[" * 1000000 + "\n")
PY
"$T" collective --platform dgx-a100 --min 8 --max 8G --factor 1.0174 > "$tmp/log1206.txt"
"$T" collective --platform dgx-a100 --ranks 4 --op all_gather --min 8 --max 8G --factor 1.0174 \
  > "$tmp/ag1206.txt"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
measure() { # name, expected exit status, command...
  local name=$1 want=$2 t=()
  shift 2
  for i in $(seq "$runs"); do
    local s e rc=0
    s=$(date +%s%N)
    "$@" > /dev/null 2>&1 || rc=$?
    e=$(date +%s%N)
    [ "$rc" -eq "$want" ] || { echo "$name: exit $rc, expected $want" >&2; exit 1; }
    t+=("$(awk -v n=$((e - s)) 'BEGIN {printf "%.3f", n / 1e9}')")
  done
  echo "$name: ${t[*]} s; median $(median "${t[@]}") s"
}
measure "trace of 100,000 distinct op names, read and replayed" 0 \
  "$T" run "$tmp/names" --platform dgx-a100 -q
measure "calibrate on 1,206 rows" 0 "$T" calibrate "$tmp/log1206.txt" --platform dgx-a100 -o "$tmp/c.yaml"
measure "joint calibrate on 2 x 1,206 rows" 0 "$T" calibrate "$tmp/log1206.txt" "$tmp/ag1206.txt" \
  --platform dgx-a100 -o "$tmp/c2.yaml"
measure "topology of 50,000 nodes (platform show)" 0 "$T" platform show "$tmp/topo.yaml"
measure "scenario of 1,000,000 nested brackets (refused)" 2 "$T" run "$tmp/deep.yaml"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
