#!/bin/sh
# Runs the paper-curve sweeps of scenarios/papers/ into docs/papers/ (CSV, PNG, SVG) and prints
# the summary tables of docs/papers.md. Strategies are compared by iteration time
# (speed-up = t_1D / t_strategy); model TFLOP/s per GPU is the same ratio, since the model FLOPs
# do not depend on the strategy. The CSVs are in point order: a rerun rewrites them byte for byte.
# Usage: scripts/papers.sh [path/to/tpsim] [-j N]
set -eu
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
J=${2:-$(nproc)}
mkdir -p docs/papers
for s in atp-dgx-a100 atp-pcie-8gpu atp-multinode oases-rtx3090 primepar-dgx-a100 primepar-dgx-h100 \
  colossal-dgx-a100 colossal-tesseract-dgx-a100; do
  "$T" sweep scenarios/papers/$s.yaml -j "$J" -o docs/papers/$s.csv --plot
done
# CSV columns: point, the swept keys, status, iteration_s, model_tflops_per_gpu, mfu, ...
echo
echo "ATP, TP=8: speed-up over Megatron 1D (mesh 8x1) by iteration time, t_1D / t_strategy"
for s in atp-dgx-a100 atp-pcie-8gpu; do
  echo "== $s"
  awk -F, 'NR > 1 && $5 == "ok" {
             m = $2; st = ($3 == "[8 1]") ? "1D" : $3 " " substr($4, 1, 3); t[m, st] = $6
             if (!(st in seen)) { seen[st] = 1; cols[++nc] = st }
             if (!(m in ms)) { ms[m] = 1; rows[++nr] = m } }
           END {
             printf "%-10s %9s", "model", "1D ms"
             for (c = 1; c <= nc; c++) if (cols[c] != "1D") printf " %9s", cols[c]
             printf "  best\n"
             for (r = 1; r <= nr; r++) {
               m = rows[r]; one = t[m, "1D"]; best = "1D"; bt = one
               printf "%-10s %9.3f", m, one * 1e3
               for (c = 1; c <= nc; c++) {
                 st = cols[c]; if (st == "1D") continue
                 printf " %8.2fx", one / t[m, st]
                 if (t[m, st] < bt) { bt = t[m, st]; best = st }
               }
               printf "  %s %.2fx\n", best, one / bt
             } }' docs/papers/$s.csv
done
echo "== atp-multinode, GPT-3 13B (1D is not possible: 16 and 32 do not divide its 40 heads)"
awk -F, 'NR > 1 && $5 == "ok" { printf "nodes %s mesh %-8s %-12s %8.3f ms %6.1f model TFLOP/s/GPU\n", $4, $2, $3, $6 * 1e3, $7 }' \
  docs/papers/atp-multinode.csv | sort
echo
echo "Oases: speed-up over Megatron 1D (both with recomputation), t_megatron / t_oases, TP=8 on 32 RTX 3090"
awk -F, 'NR > 1 && $5 == "ok" { k = $2 " " $3; t[k, $4] = $6 }
         END { for (x in t) { split(x, a, SUBSEP); keys[a[1]] = 1 }
               for (k in keys) printf "hidden %-6s nvlink_bridges %-5s oases/megatron %.3f\n",
                 substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1),
                 t[k, "false"] / t[k, "true"] }' docs/papers/oases-rtx3090.csv | sort -n -k2
echo
echo "PrimePar (all-temporal ring) against Megatron 1D: t_1D / t_primepar, memory per GPU (GB)"
for s in primepar-dgx-a100 primepar-dgx-h100; do
  echo "== $s"
  awk -F, 'NR > 1 && $5 == "ok" { k = sprintf("%3d %2d", $2, $3); t[k, $4] = $6; m[k, $4] = $13
             if (!(k in seen)) { seen[k] = 1; rows[++n] = k } }
           END { printf "%-9s %10s %12s %8s %8s %8s\n", "mb tp", "1D ms", "primepar ms", "speed-up",
                   "1D GB", "pp GB"
                 for (r = 1; r <= n; r++) { k = rows[r]
                   printf "%-9s %10.3f %12.3f %7.3fx %8.1f %8.1f\n", k, t[k, "1d"] * 1e3,
                     t[k, "primepar"] * 1e3, t[k, "1d"] / t[k, "primepar"], m[k, "1d"],
                     m[k, "primepar"] } }' docs/papers/$s.csv
done
echo
echo "Colossal-AI's 2D/2.5D/3D against Megatron 1D, DGX A100: t_1D / t_strategy, memory per GPU (GB)"
{
  awk -F, 'NR > 1 && $5 == "ok" { print $2, $3, $4, $6, $13 }' docs/papers/colossal-dgx-a100.csv
  awk -F, 'NR > 1 && $3 == "ok" { print $2, 8, "tesseract", $4, $11 }' \
    docs/papers/colossal-tesseract-dgx-a100.csv
} | awk '{ k = sprintf("%3d %2d", $1, $2); t[k, $3] = $4; m[k, $3] = $5
           if ($3 != "1d") { row[++n] = k SUBSEP $3 } }
         END { printf "%-7s %-10s %9s %12s %9s %7s %7s\n", "mb tp", "kind", "1D ms", "kind ms",
                 "speed-up", "1D GB", "GB"
               for (r = 1; r <= n; r++) { split(row[r], a, SUBSEP); k = a[1]; x = a[2]
                 printf "%-7s %-10s %9.3f %12.3f %8.3fx %7.1f %7.1f\n", k, x, t[k, "1d"] * 1e3,
                   t[k, x] * 1e3, t[k, "1d"] / t[k, x], m[k, "1d"], m[k, x] } }'
