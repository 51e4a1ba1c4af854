#!/usr/bin/env bash
# Configures and builds parasim into build/ (Release). Extra arguments go to CMake's configure.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
