#!/bin/sh
# Runs the heterogeneity curves of docs/heterogeneity.md into docs/heterogeneity/: iteration time
# against straggler slowdown for each balancing policy (a sweep, CSV and PNG/SVG), the columns
# ZERO-resizing drops, and the distribution over seeds of noisy GPUs under each policy.
# Usage: scripts/heterogeneity.sh [path/to/tpsim] [-j N]
#        scripts/heterogeneity.sh --tables   the FlexTP table of the committed CSV, nothing run
#        scripts/heterogeneity.sh --noise    the noisy-GPU runs only (build/tpsim)
#        scripts/heterogeneity.sh --links    the degraded-link example only (build/tpsim)
# (tests/docs/doc-figures.sh checks docs/heterogeneity.md's figures with the last three.)
set -eu
cd "$(dirname "$0")/.."
mode=all
case "${1:-}" in
  --tables) mode=tables; shift ;; --noise) mode=noise; shift ;; --links) mode=links; shift ;;
esac
T=${1:-build/tpsim}
J=${2:-$(nproc)}
mkdir -p docs/heterogeneity
if [ $mode = all ]; then
  "$T" sweep scenarios/papers/flextp-dgx-a100.yaml -j "$J" -o docs/heterogeneity/flextp-dgx-a100.csv --plot
fi
noise() {
  echo "Noisy GPUs over 64 seeds (scenarios/papers/flextp-noise-dgx-a100.yaml)"
  for b in none zero_resize migrate semi; do
    sed "s/balance: none/balance: $b/" scenarios/papers/flextp-noise-dgx-a100.yaml > "$tmp/n.yaml"
    printf '%-12s ' "$b"
    "$T" run "$tmp/n.yaml" --seeds 64 | tail -1
  done
}
links() {
  echo "GPU 3's NVLink at 0.1x of its rate, for a while (scenarios/papers/flextp-dgx-a100.yaml, no stragglers)"
  for w in none "" ", from: 2ms, for: 3ms" ", from: 2ms, for: 1ms, every: 2ms"; do
    if [ "$w" = none ]; then plat="platform: dgx-a100"; label="never"
    else plat="platform: {preset: dgx-a100, degraded_links: [{between: [gpu3, n0nvswitch], factor: 0.1$w}]}"
         label=${w:-"the whole run"}; label=${label#, }; fi
    sed -e "s/^platform:.*/$plat/" -e '/^stragglers:/d' -e '/^sweep:/,$d' scenarios/papers/flextp-dgx-a100.yaml > "$tmp/l.yaml"
    printf '%-34s %s\n' "$label" "$("$T" run "$tmp/l.yaml" | grep '^iteration time' | sed 's/iteration time *//')"
  done
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $mode = noise ]; then noise; exit 0; fi
if [ $mode = links ]; then links; exit 0; fi
echo
echo "FlexTP on 8 A100s: iteration time (ms) by slowdown and policy; speed-up over none"
awk -F, 'NR > 1 && $4 == "ok" {
           s = $2; b = $3; t[s, b] = $5
           if (!(s in seen)) { seen[s] = 1; rows[++n] = s } }
         END {
           printf "%-20s %9s %17s %17s %17s\n", "slowdown", "none", "zero_resize", "migrate", "semi"
           for (r = 1; r <= n; r++) {
             s = rows[r]; none = t[s, "none"]
             printf "%-20s %9.3f", s, none * 1e3
             split("zero_resize migrate semi", P, " ")
             for (p = 1; p <= 3; p++) printf " %9.3f (%4.2fx)", t[s, P[p]] * 1e3, none / t[s, P[p]]
             printf "\n"
           } }' docs/heterogeneity/flextp-dgx-a100.csv
[ $mode = tables ] && exit 0
echo
echo "Columns dropped and bytes migrated per iteration (4 layers)"
for s in "1.1, 1, 1, 1, 1, 1, 1, 1" "2, 1, 1, 1, 1, 1, 1, 1" "8, 6, 4, 2, 1, 1, 1, 1"; do
  for b in zero_resize migrate semi; do
    sed -e "s/^stragglers:.*/stragglers: {slowdown: [$s]}/" -e "s/^strategy:.*/strategy: {kind: 1d, tp: 8, balance: $b}/" \
      -e '/^sweep:/,$d' scenarios/papers/flextp-dgx-a100.yaml > "$tmp/p.yaml"
    "$T" run "$tmp/p.yaml" -q --json "$tmp/p.json"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%-26s %-12s dropped %5.1f%%  migrated %8.1f MB' % ('[' + sys.argv[2] + ']', sys.argv[3], 100 * r['dropped_fraction'], r['migrated_bytes'] / 1e6))" "$tmp/p.json" "$s" "$b"
  done
done
echo
noise
echo
echo "Columns ZERO-resizing drops under that noise, seeds 1 to 3"
sed "s/balance: none/balance: zero_resize/" scenarios/papers/flextp-noise-dgx-a100.yaml > "$tmp/n.yaml"
for s in 1 2 3; do
  "$T" run "$tmp/n.yaml" --seed $s -q --json "$tmp/n.json"
  python3 -c "import json,sys; print('seed %s: %.1f%% dropped' % (sys.argv[2], 100 * json.load(open(sys.argv[1]))['dropped_fraction']))" "$tmp/n.json" $s
done
echo
echo "Two jobs sharing NICs (scenarios/papers/shared-nic-dgx-a100.yaml): slowdown against alone"
csv=docs/heterogeneity/shared-nic.csv
echo "nics_per_node,nic_rate_GBps,job,alone_time_s,shared_time_s,slowdown" > "$csv"
point() { # NICS RATE: one run, its rows appended to the CSV
  if [ "$2" = preset ]; then kv="nics_per_node: $1}"; else kv="nics_per_node: $1, nic_rate: ${2}GBps}"; fi
  sed "s/nics_per_node: 1}/$kv/" scenarios/papers/shared-nic-dgx-a100.yaml > "$tmp/f.yaml"
  "$T" run "$tmp/f.yaml" -q --csv "$tmp/f.csv"
  awk -F, -v n="$1" -v r="$2" 'NR > 1 { print n "," r "," $1 "," $3 "," $4 "," $5 }' "$tmp/f.csv" >> "$csv"
}
for r in 3.125 6.25 12.5 25 50 100; do point 1 $r; done
for n in 1 2 4 8; do point $n preset; done
awk -F, 'NR > 1 { printf "%-4s NICs/server  rate %-7s  %-3s  alone %9.3f ms  shared %9.3f ms  slowdown %.3fx\n",
                  $1, $2, $3, $4 * 1e3, $5 * 1e3, $6 }' "$csv"
cat > docs/heterogeneity/shared-nic.gp <<'GP'
set datafile separator ","
set xlabel "NIC rate, one NIC per server (GB/s)"
set ylabel "slowdown against running alone"
set logscale x 2
set key top right
set grid
set yrange [1:2]
GP
for ext in png svg; do
  if [ $ext = png ]; then term="pngcairo size 800,500"; else term="svg size 800,500"; fi
  cat >> docs/heterogeneity/shared-nic.gp <<GP
set terminal $term
set output "docs/heterogeneity/shared-nic.$ext"
plot "< awk -F, '\$1 == 1 && \$2 != \"preset\" && \$3 == \"dp\"' $csv" using 2:6 with linespoints title "job dp (1.3B, TP 4 x DP 2)", \\
     "< awk -F, '\$1 == 1 && \$2 != \"preset\" && \$3 == \"tp\"' $csv" using 2:6 with linespoints title "job tp (13B, TP 8 across servers)"
GP
done
gnuplot docs/heterogeneity/shared-nic.gp 2>/dev/null || echo "(gnuplot missing: $csv written, no plot)"
echo
links
