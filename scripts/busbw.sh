#!/bin/sh
# Prints one table row per machine count: the bus bandwidth (GB/s) of a 1 GiB all-reduce over
# every GPU of PRESET with that many machines, for each algorithm named, as
# `tpsim collective --platform "PRESET nodes=N" --algorithm A --bytes 1GiB` prints it.
# tests/docs/doc-figures.sh checks docs/collectives.md's tables against it.
# Usage: scripts/busbw.sh PRESET "NODES..." "ALGORITHMS..." [path/to/tpsim]
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: scripts/busbw.sh PRESET \"NODES...\" \"ALGORITHMS...\" [tpsim]" >&2; exit 2; }
T=${4:-build/tpsim}
for n in $2; do
  line="| $n |"
  for a in $3; do
    bw=$("$T" collective --platform "$1 nodes=$n" --algorithm "$a" --bytes 1GiB |
      awk '/^ *[0-9]/ { print $8 }')
    line="$line $(printf '%.1f' "$bw") |"
  done
  echo "$line"
done
