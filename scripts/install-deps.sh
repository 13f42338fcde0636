#!/usr/bin/env bash
# install-deps.sh - installs tpsim's build and test dependencies from Debian packages (as root).
# gnuplot-nox draws the validation and sweep plots; time is used by the benchmarks.
# Skips apt entirely when everything is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libsimgrid-dev libgsl-dev libyaml-dev libcriterion-dev
      libjansson-dev gnuplot-nox time)
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
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
