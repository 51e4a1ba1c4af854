#!/usr/bin/env bash
# Configures and builds parasim into build/ (Release). Extra arguments go to CMake's configure.
# PARASIM_TARGET=parasim builds only the command line tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)" ${PARASIM_TARGET:+--target "$PARASIM_TARGET"}
