#!/bin/sh
# Regenerates tests/golden/: the outputs tests/cli/test_golden.c compares against (run, collective
# and plan JSON, one sweep CSV, for the shipped scenarios). Run it only when a change is meant to
# move the numbers (a bug fix or a model change that says so), and say so in the commit.
# Usage: scripts/golden.sh [path/to/tpsim]
set -eu
cd "$(dirname "$0")/.."
T=${1:-build/tpsim}
G=tests/golden
for s in quickstart atp-2d-2node pcie-8gpu-sp dgx-h100-2node-tp16 job-llama31-70b-cp2-64-h100; do
  "$T" run scenarios/$s.yaml --json $G/run-$s.json -q 2>/dev/null
done
"$T" collective --platform dgx-a100 --min 1K --max 1G --factor 8 --json $G/collective-dgx-a100.json > /dev/null
"$T" collective --platform "dgx-a100 nodes=4" --op all_gather --min 1M --max 256M --factor 16 \
  --json $G/collective-dgx-a100-4node-ag.json > /dev/null
"$T" plan scenarios/atp-2d-2node.yaml --json $G/plan-atp-2d-2node.json > /dev/null 2>&1
"$T" sweep scenarios/sweep-example.yaml -j 2 -o $G/sweep-example.csv 2>/dev/null
echo "golden.sh: tests/golden regenerated; review the diff"
