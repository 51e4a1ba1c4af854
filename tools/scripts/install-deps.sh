#!/usr/bin/env bash
# Installs parasim's build dependencies from Debian 12 packages (nothing else is downloaded).
set -euo pipefail
pkgs=(build-essential cmake libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
      libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin libtomlplusplus-dev libyaml-cpp-dev
      python3-dev pybind11-dev)
# Optional, for tests only: a headless browser loads `parasim report`'s HTML (the test is skipped
# without it). PARASIM_NO_BROWSER=1 leaves it out.
optional=(chromium)
# tools/scripts/sanitize.sh (CI): clang's sanitizers and libFuzzer. `install-deps.sh --sanitizers`.
if [ "${1:-}" = "--sanitizers" ]; then pkgs+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
missing_optional=()
if [ "${PARASIM_NO_BROWSER:-0}" != 1 ]; then
  for p in "${optional[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing_optional+=("$p"); done
fi
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  echo "installing (optional, for tests): ${missing_optional[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing_optional[@]}" ||
    echo "warning: could not install ${missing_optional[*]}; the browser test of parasim report will be skipped"
fi
