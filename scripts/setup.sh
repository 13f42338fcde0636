#!/usr/bin/env bash
# setup.sh - README command 1: install dependencies, build tpsim, run the quickstart scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
./build/tpsim run scenarios/quickstart.yaml
