#!/usr/bin/env bash
# bench/scale_curve.sh - CPU time (user + system, the forked SimGrid runs included) and peak RSS
# against GPUs, 1,024 to 32,768: one iteration of the Llama-405B-like job of
# bench/llama-405b-like-16k-h100.yaml with the data-parallel degree scaled (TP 8, PP 16
# interleaved x8, DP = GPUs / 128, 16 micro-batches per replica), and one 1 GiB all-reduce over
# every GPU of dgx-h100 x GPUs/8. Writes OUT.csv (gpus, what, cpu_s, rss_mb; medians of RUNS) and
# OUT.png, a log-log plot of both against GPUs (gnuplot).
#   bench/scale_curve.sh [RUNS=3] [OUT=out/scale-curve]
# Needs a built tpsim in build/, GNU time and gnuplot.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=${2:-out/scale-curve}
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
measure() { # what gpus command...
  local what=$1 gpus=$2; shift 2
  local cpus=() mems=()
  for i in $(seq "$runs"); do
    /usr/bin/time -o "$out.time" -f '%M %U %S' "$@" >/dev/null 2>&1
    local t; t=$(tail -1 "$out.time")
    cpus+=("$(echo "$t" | awk '{printf "%.2f", $2 + $3}')"); mems+=("$(echo "$t" | awk '{printf "%.0f", $1 / 1024}')")
  done
  echo "$gpus,$what,$(median "${cpus[@]}"),$(median "${mems[@]}")" | tee -a "$out.csv"
}
echo "gpus,what,cpu_s,rss_mb" > "$out.csv"
for gpus in 1024 2048 4096 8192 16384 32768; do
  dp=$((gpus / 128))
  measure job "$gpus" ./build/tpsim run bench/llama-405b-like-16k-h100.yaml -q --set strategy.dp=$dp \
    --set platform.nodes=$((gpus / 8)) --set training.global_batch=$((dp * 16))
  measure allreduce "$gpus" ./build/tpsim collective --platform "dgx-h100 nodes=$((gpus / 8))" --bytes 1G
done
gnuplot <<GP
set terminal pngcairo size 900,560 font "sans,11"
set output "$out.png"
set datafile separator ","
set logscale xy 2
set xlabel "GPUs"
set ylabel "CPU seconds / peak RSS (GB)"
set title "tpsim: one simulated iteration (Llama-405B-like job) and a 1 GiB all-reduce against GPUs"
set key top left
set grid
plot "< grep ',job,' $out.csv" using 1:3 with linespoints lw 2 title "job: CPU s", \
     "< grep ',job,' $out.csv" using 1:(\$4/1024) with linespoints lw 2 dt 2 title "job: peak RSS GB", \
     "< grep ',allreduce,' $out.csv" using 1:3 with linespoints lw 2 title "1 GiB all-reduce: CPU s", \
     "< grep ',allreduce,' $out.csv" using 1:(\$4/1024) with linespoints lw 2 dt 2 title "1 GiB all-reduce: peak RSS GB"
GP
rm -f "$out.time"
echo "wrote $out.csv and $out.png; machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
