#!/usr/bin/env bash
# bench/tracer_overhead.sh - host-side cost of the tracer per intercepted call: a loop of N
# all-reduces and N GEMMs against the mock libraries (tests/tracer), without and with
# LD_PRELOAD=libtpsim_tracer.so. The events are resolved at exit, outside the timed loop (that
# cost is reported separately as the whole run's wall time). Median of RUNS runs.
#   bench/tracer_overhead.sh [RUNS=5] [N=100000]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; n=${2:-100000}
inc=/usr/local/cuda/include
b=build/tests
[ -f build/libtpsim_tracer.so ] || { echo "bench: build the tracer first (scripts/setup.sh)" >&2; exit 2; }
cc -O2 -I$inc bench/tracer_loop.c -L$b -lmock_nccl -lmock_cublas -lmock_cudart \
   -Wl,-rpath,"$PWD/$b" -o /tmp/tpsim_tracer_loop
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
plain=() ; traced=() ; walls=()
for i in $(seq "$runs"); do
  plain+=("$(/tmp/tpsim_tracer_loop "$n" | cut -d' ' -f1)")
  rm -rf /tmp/tpsim_tracer_bench
  start=$(date +%s.%N)
  traced+=("$(TPSIM_TRACE_DIR=/tmp/tpsim_tracer_bench LD_PRELOAD=$PWD/build/libtpsim_tracer.so /tmp/tpsim_tracer_loop "$n" | cut -d' ' -f1)")
  walls+=("$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')")
done
echo "calls per run: $((2 * n)); median of $runs"
echo "  without tracer: $(median "${plain[@]}") ns per call"
echo "  with tracer:    $(median "${traced[@]}") ns per call (host side, in the loop)"
echo "  traced run wall time including event resolution and trace writing: $(median "${walls[@]}") s"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
