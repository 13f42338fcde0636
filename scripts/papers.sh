#!/bin/sh
# Runs the paper-curve sweeps of scenarios/papers/ into docs/papers/ (CSV, PNG, SVG) and prints
# the summary tables of docs/papers.md. Usage: scripts/papers.sh [path/to/tpsim] [-j N]
set -eu
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
J=${2:-$(nproc)}
mkdir -p docs/papers
for s in atp-dgx-a100 atp-pcie-8gpu atp-multinode oases-rtx3090; do
  "$T" sweep scenarios/papers/$s.yaml -j "$J" -o docs/papers/$s.csv --plot
done
echo
echo "ATP: TFLOP/s per GPU by model and strategy (best mesh and placement against 1D)"
for s in atp-dgx-a100 atp-pcie-8gpu; do
  echo "== $s"
  awk -F, 'NR > 1 && $5 == "ok" { key = $2; v = $7; st = $3 " " $4;
             if (!(key in best) || v > best[key]) { best[key] = v; arg[key] = st }
             if ($3 == "[8 1]") one[key] = v }
           END { for (k in best) printf "%-10s best %-26s %7.1f TFLOP/s/GPU, 1D %7.1f (x%.2f)\n",
                 k, arg[k], best[k], one[k], one[k] ? best[k] / one[k] : 0 }' docs/papers/$s.csv | sort
done
echo "== atp-multinode (nodes, mesh, placement: iteration s)"
awk -F, 'NR > 1 && $5 == "ok" { printf "nodes %s mesh %-8s %-12s %.4f s %.1f TFLOP/s/GPU\n", $4, $2, $3, $6, $7 }' \
  docs/papers/atp-multinode.csv | sort
echo
echo "Oases: throughput normalised to Megatron 1D (both with recomputation), TP=8 on 32 RTX 3090"
awk -F, 'NR > 1 && $5 == "ok" { k = $2 " " $3; t[k, $4] = $6 }
         END { for (x in t) { split(x, a, SUBSEP); keys[a[1]] = 1 }
               for (k in keys) printf "hidden %-6s nvlink_bridges %-5s oases/megatron %.3f\n",
                 substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1),
                 t[k, "false"] / t[k, "true"] }' docs/papers/oases-rtx3090.csv | sort -n -k2
