#!/usr/bin/env bash
# Configures and builds parasim into build/ (Release). Extra arguments go to CMake's configure.
# PARASIM_TARGET=parasim builds only the command line tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
launcher=()
# ccache, when installed, makes rebuilds (and builds of other checkouts of the tree) cheap.
# The sloppiness lets ccache cache sources built with the precompiled headers (CMakeLists.txt).
if command -v ccache >/dev/null 2>&1; then
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache")
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)" ${PARASIM_TARGET:+--target "$PARASIM_TARGET"}
