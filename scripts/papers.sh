#!/bin/sh
# Runs the paper-curve sweeps of scenarios/papers/ into docs/papers/ (CSV, PNG, SVG) and prints
# the summary tables of docs/papers.md. Strategies are compared by iteration time
# (speed-up = t_1D / t_strategy); model TFLOP/s per GPU is the same ratio, since the model FLOPs
# do not depend on the strategy. The CSVs are in point order: a rerun rewrites them byte for byte.
# Usage: scripts/papers.sh [path/to/tpsim] [-j N]
#        scripts/papers.sh --tables   (the tables of the committed CSVs, no sweep run:
#                                      tests/docs/doc-figures.sh checks docs/papers.md with it)
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" != --tables ]; then
  T=${1:-build/tpsim}
  J=${2:-$(nproc)}
  mkdir -p docs/papers
  for s in atp-dgx-a100 atp-pcie-8gpu atp-multinode oases-rtx3090 oases-plan-rtx3090 \
    primepar-dgx-a100 primepar-dgx-h100 primepar-rings-dgx-a100 colossal-dgx-a100 \
    colossal-tesseract-dgx-a100; do
    "$T" sweep scenarios/papers/$s.yaml -j "$J" -o docs/papers/$s.csv --plot
  done
fi
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
echo "== atp-multinode as docs/papers.md's table: GPUs, mesh, row-first ms (TF/s), column-first ms (TF/s), column-first slower by"
awk -F, 'NR > 1 && $5 == "ok" { m = $2; gsub(/[][]/, "", m); t[$4, m, $3] = $6; f[$4, m, $3] = $7 }
  END { split("2:8 2,2:4 4,2:2 8,2:1 16,4:8 4,4:4 8,4:2 16,4:1 32", rows, ",")
        for (i = 1; i <= 8; i++) {
          split(rows[i], a, ":"); n = a[1]; m = a[2]; split(m, d, " ")
          r = t[n, m, "row-first"]; c = t[n, m, "column-first"]
          printf "%d %sx%s %.3f ms (%.1f) %.3f ms (%.1f) %.0f%%\n", n * 8, d[1], d[2], r * 1e3,
                 f[n, m, "row-first"], c * 1e3, f[n, m, "column-first"], (c / r - 1) * 100 } }' \
  docs/papers/atp-multinode.csv
echo
echo "Oases: speed-up over Megatron 1D (both with recomputation), t_megatron / t_oases, TP=8 on 32 RTX 3090"
awk -F, 'NR > 1 && $5 == "ok" { k = $2 " " $3; t[k, $4] = $6 }
         END { for (x in t) { split(x, a, SUBSEP); keys[a[1]] = 1 }
               for (k in keys) printf "hidden %-6s nvlink_bridges %-5s oases/megatron %.3f\n",
                 substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1),
                 t[k, "false"] / t[k, "true"] }' docs/papers/oases-rtx3090.csv | sort -n -k2
echo
echo "Oases' per-sublayer plan: the fastest attention/MLP degrees with Oases' schedule that fit in"
echo "memory, against Megatron 1D at TP=8 and at its best uniform degree t (t x 8/t), both with full"
echo "recomputation, and against uniform Oases at TP=8: speed-up = t_baseline / t_plan"
{
  awk -F, 'NR > 1 && $5 == "ok" && $4 == "false" { print "M", $2, $3, $6 }' docs/papers/oases-rtx3090.csv
  awk -F, 'BEGIN { d[1024] = 24; d[2048] = 24; d[3072] = 24; d[4096] = 16; d[6144] = 16
                   d[8192] = 8; d[12288] = 4 }
           NR > 1 && $8 == "ok" && $17 == "true" && d[$2] == $3 {
             print ($5 == "true" ? "P" : "U"), $2, $4, $9, $6, $7 }' \
    docs/papers/oases-plan-rtx3090.csv
} | awk '{ k = sprintf("%6d %-5s", $2, $3); if (!(k in seen)) { seen[k] = 1; rows[++n] = k }
           if ($1 == "M") mt[k] = $4
           else if ($1 == "U") { if ($5 == $6 && (!(k in ub) || $4 < ub[k])) { ub[k] = $4; ut[k] = $5 } }
           else { if ($5 == 8 && $6 == 8) u[k] = $4
                  if (!(k in bt) || $4 < bt[k]) { bt[k] = $4; plan[k] = "attn " $5 ", mlp " $6 } } }
         END { printf "%-12s %9s %13s %9s %-14s %9s %9s %9s %9s\n", "hidden nvl", "meg8 ms",
                 "meg best ms", "oases8 ms", "oases plan", "plan ms", "/meg8", "/meg best", "/oases8"
               for (r = 1; r <= n; r++) { k = rows[r]
                 printf "%-12s %9.3f %8.3f (t=%d)%9.3f %-14s %9.3f %8.3fx %8.3fx %8.3fx\n", k,
                   mt[k] * 1e3, ub[k] * 1e3, ut[k], u[k] * 1e3, plan[k], bt[k] * 1e3, mt[k] / bt[k],
                   ub[k] / bt[k], u[k] / bt[k] } }' | sort -n -k1
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
echo "== PrimePar's mixed partitions on DGX A100, TP 8: tp/ring rings side by side, against 1D TP 8"
{
  awk -F, 'NR > 1 && $5 == "ok" && $3 == 8 && $4 == "1d" { print "M", $2, $6, $13 }' \
    docs/papers/primepar-dgx-a100.csv
  awk -F, 'NR > 1 && $4 == "ok" { print "R", $2, $5, $12, $3 }' docs/papers/primepar-rings-dgx-a100.csv
} | awk '$1 == "M" { t[$2] = $3; m[$2] = $4; next }
         { printf "mb %3d ring %d (x%d) %9.3f ms %6.1f GB   1D TP8 %9.3f ms %6.1f GB   %.3fx\n",
             $2, $5, 8 / $5, $3 * 1e3, $4, t[$2] * 1e3, m[$2], t[$2] / $3 }'
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
