#!/usr/bin/env bash
# bench/plan_job_1024.sh - wall time and peak memory of `tpsim plan` on a whole job of 1,024 GPUs
# (GPT-3 175B on 128 DGX A100, global batch 1536: bench/gpt3-175b-1024-a100.yaml): every
# tp x pp x dp, micro-batch, schedule and recomputation enumerated, ranked by the closed form,
# the best simulated as a folded job. Issue 15 asks for under 10 s.
#   bench/plan_job_1024.sh [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/plan_gpt3_175b.sh "${1:-3}" bench/gpt3-175b-1024-a100.yaml
