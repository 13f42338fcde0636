#!/usr/bin/env bash
# bench/job_llama3_405b_16k.sh - wall time and peak memory of one simulated iteration of Llama 3
# 405B as Meta trained it at 131,072 tokens: TP 8 x CP 16 x PP 16 (interleaved, uneven stages) x
# DP 8 on 16,384 H100 (scenarios/job-llama3-405b-16k-h100.yaml; layers folded, the replicas and
# CP ranks mirrored). Issue 45 asks for under 60 s on 2 cores.
#   bench/job_llama3_405b_16k.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/run_gpt3_175b.sh "${1:-3}" scenarios/job-llama3-405b-16k-h100.yaml
