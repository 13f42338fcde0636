#!/usr/bin/env bash
# install-deps.sh - installs tpsim's build and test dependencies from Debian packages (as root).
# gnuplot-nox draws the validation and sweep plots; time is used by the benchmarks; zlib reads
# gzip'ed PyTorch profiler traces (tpsim import kineto); slurm-wlm is the one-node SLURM the
# sweep test starts (tests/slurm/sweep-slurm.sh, scripts/slurm-local.sh).
# Skips apt entirely when everything is already there. When another apt or dpkg holds the package
# manager's lock, waits for it (up to TPSIM_APT_WAIT seconds, default 600) instead of failing.
set -euo pipefail
# Extra Debian packages may be named as arguments (scripts/test.sh --clang asks for clang).
pkgs=(build-essential cmake pkg-config libsimgrid-dev libgsl-dev libyaml-dev libcriterion-dev
      libjansson-dev zlib1g-dev gnuplot-nox time slurm-wlm "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all dependencies present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
wait_s=${TPSIM_APT_WAIT:-600}
lock=(-o "DPkg::Lock::Timeout=$wait_s")
# apt-get update takes the lists lock, which DPkg::Lock::Timeout does not cover: retry it.
start=$(date +%s)
until $SUDO apt-get "${lock[@]}" update -q; do
  if [ $(( $(date +%s) - start )) -ge "$wait_s" ]; then
    echo "install-deps: apt-get update kept failing for ${wait_s} s (is another package manager" \
         "running? see above); giving up" >&2
    exit 1
  fi
  echo "install-deps: apt-get update failed (another package manager may hold its lock);" \
       "retrying in 10 s" >&2
  sleep 10
done
$SUDO apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}"
