#!/usr/bin/env bash
# bench/input_scale.sh - time of tpsim on large or hostile inputs, the cases the hardening issue
# found super-linear: a trace of 100,000 ops with distinct names (read and replayed), calibration
# on a 1,206-row nccl-tests log, a 50,000-node topology file, the refusal of a scenario of one
# million nested brackets, Kineto traces with many or long annotations, a small run on a
# 2,048-machine preset and a link slowed every 2 ns. Prints every run and the median of each.
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
import json
def kineto(nk, na, annname):
    ev = []
    for i in range(nk):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 100 + i * 10, "dur": 2, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "ts": 105 + i * 10, "dur": 5, "args": {"stream": 7, "correlation": i + 1}})
    for j in range(na):
        ev.append({"ph": "X", "cat": "user_annotation", "name": annname, "ts": 50 + j * 0.001, "dur": 1e6, "args": {}})
    return json.dumps({"traceEvents": ev})
open(d + "/kineto-quad.json", "w").write(kineto(20000, 20000, "layer 1 forward"))
open(d + "/kineto-name.json", "w").write(kineto(2000, 1, "x" * 1000000))
open(d + "/wide.yaml", "w").write("model: gpt3-13b\ndevice: A100-80GB\n"
    "platform: {preset: dgx-a100, nodes: 2048}\nstrategy: {tp: 8}\nrun: {layers: 1}\n")
open(d + "/flap.yaml", "w").write("model: gpt3-13b\ndevice: A100-80GB\nplatform: {preset: dgx-a100, "
    "degraded_links: [{between: [gpu3, n0nvswitch], factor: 0.5, for: 1ns, every: 2ns}]}\n"
    "strategy: {tp: 8}\n")
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
measure "Kineto trace, 20,000 kernels under 20,000 annotations (import)" 0 \
  "$T" import kineto "$tmp/kineto-quad.json" -o "$tmp/kq"
measure "Kineto trace, 2,000 kernels under a 1 MB annotation name (import)" 0 \
  "$T" import kineto "$tmp/kineto-name.json" -o "$tmp/kn"
measure "one 8-GPU layer on a preset of 2,048 machines" 0 "$T" run "$tmp/wide.yaml" -q
measure "a link slowed for 1 ns every 2 ns (refused at 100,000 periods)" 2 "$T" run "$tmp/flap.yaml" -q
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
