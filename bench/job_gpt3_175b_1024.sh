#!/usr/bin/env bash
# bench/job_gpt3_175b_1024.sh - wall time and peak memory of one simulated iteration of a whole
# job: GPT-3 175B, TP 8 x PP 16 x DP 8 on 1,024 A100s, global batch 1536 (layers folded).
#   bench/job_gpt3_175b_1024.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/run_gpt3_175b.sh "${1:-3}" bench/gpt3-175b-1024-a100.yaml
