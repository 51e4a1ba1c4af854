#!/usr/bin/env bash
# Configures and builds parasim into build/ (Release). Extra arguments go to CMake's configure.
# PARASIM_TARGET=parasim builds only the command line tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
launcher=()
# ccache, when installed, makes rebuilds (and builds of other checkouts of the tree) cheap.
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)" ${PARASIM_TARGET:+--target "$PARASIM_TARGET"}
