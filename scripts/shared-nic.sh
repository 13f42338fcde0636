#!/bin/sh
# Prints the table of docs/heterogeneity.md ("two jobs on one NIC per server"): both jobs of
# scenarios/papers/shared-nic-dgx-a100.yaml alone and shared, at several NIC rates with one NIC per
# server, and with more NICs at the preset's rate. tests/docs/doc-figures.sh checks the doc's
# table against it. Usage: scripts/shared-nic.sh [path/to/tpsim]
set -eu
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
row() { # NICS RATE LABEL
  if [ "$2" = preset ]; then kv="nics_per_node: $1}"; else kv="nics_per_node: $1, nic_rate: ${2}GBps}"; fi
  sed "s/nics_per_node: 1}/$kv/" scenarios/papers/shared-nic-dgx-a100.yaml > "$tmp/f.yaml"
  "$T" run "$tmp/f.yaml" -q --csv "$tmp/f.csv"
  awk -F, -v n="$1" -v r="$3" 'NR > 1 { a[$1] = $3; s[$1] = $4 }
    END { printf "| %s | %s | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx |\n", n, r,
                 a["dp"] * 1e3, s["dp"] * 1e3, s["dp"] / a["dp"], a["tp"] * 1e3, s["tp"] * 1e3,
                 s["tp"] / a["tp"] }' "$tmp/f.csv"
}
echo "| NICs per server | NIC rate (GB/s) | \`dp\` alone (ms) | \`dp\` shared (ms) | \`dp\` slowdown | \`tp\` alone (ms) | \`tp\` shared (ms) | \`tp\` slowdown |"
echo "|---|---|---|---|---|---|---|---|"
row 1 3.125 3.125
row 1 12.5 12.5
row 1 preset "25 (HDR, the preset's)"
row 1 100 100
row 2 preset 25
row 8 preset 25
