#!/bin/sh
# Prints the median and max |error| of `tpsim validate layers` over groups of a table's rows, as
# docs/compute-model.md's tables give them: all rows, CUDA graphs, eager with bmm attention, eager
# with FlashAttention, the GPU-bound gpt3-175b rows and the host-bound ones (gpt3-1.3b and 6.7b at
# tp >= 4, eager); a group without rows is left out. The median of an even count is the mean of
# the two middle values, as the command's own summary line computes it.
# tests/docs/doc-figures.sh checks the doc's tables against it.
# Usage: scripts/layer-groups.sh TABLE.csv [path/to/tpsim]
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/layer-groups.sh TABLE.csv [tpsim]" >&2; exit 2; }
T=${2:-build/tpsim}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$T" validate layers "$1" --device H100-SXM --json "$tmp" > /dev/null
# the JSON has one key per line: a row's name, tp, attn and execution come before its err_pct
awk '
  { gsub(/[",]/, "") }
  $1 == "name:" { name = $2 } $1 == "tp:" { tp = $2 + 0 } $1 == "attn:" { attn = $2 }
  $1 == "execution:" { exec = $2 }
  $1 == "err_pct:" && name != "" {
    e = $2 + 0; if (e < 0) e = -e
    add("all", e)
    if (exec == "graphs") add("graphs", e)
    if (exec == "eager" && attn == "bmm") add("eager, bmm", e)
    if (exec == "eager" && attn == "flash") add("eager, flash", e)
    if (name == "gpt3-175b") add("GPU-bound (gpt3-175b,", e)
    if ((name == "gpt3-1.3b" || name == "gpt3-6.7b") && tp >= 4 && exec == "eager")
      add("host-bound (gpt3-1.3b and 6.7b at tp >= 4, eager,", e)
  }
  function add(g, e) { v[g, ++n[g]] = e }
  END {
    split("all|graphs|eager, bmm|eager, flash|GPU-bound (gpt3-175b,|host-bound (gpt3-1.3b and 6.7b at tp >= 4, eager,", order, "|")
    for (k = 1; k <= 6; k++) {
      g = order[k]; m = n[g]
      if (!m) continue
      for (i = 1; i <= m; i++) a[i] = v[g, i]
      for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
      label = (g ~ /,$/) ? g " " m ")" : g " (" m ")"
      printf "| %s | %.1f%% | %.1f%% |\n", label, med, a[m]
    }
  }' "$tmp"
