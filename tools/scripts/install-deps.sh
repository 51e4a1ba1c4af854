#!/usr/bin/env bash
# Installs parasim's build dependencies from Debian 12 packages (nothing else is downloaded).
set -euo pipefail
pkgs=(build-essential cmake libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
      libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin
      python3-dev pybind11-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
