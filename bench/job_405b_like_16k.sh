#!/usr/bin/env bash
# bench/job_405b_like_16k.sh - wall time, CPU and peak memory of one simulated iteration of issue
# 52's scale case: a Llama-405B-like job, TP 8 x PP 16 (interleaved x8) x DP 128 on 16,384 H100
# (bench/llama-405b-like-16k-h100.yaml; layers folded, replicas 1..127 mirroring replica 0's
# collectives over replicas). Issue 52 asks for <= 10 s CPU and <= 1 GB peak RSS on 2 cores.
#   bench/job_405b_like_16k.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/run_gpt3_175b.sh "${1:-3}" bench/llama-405b-like-16k-h100.yaml
