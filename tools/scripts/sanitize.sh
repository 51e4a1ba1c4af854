#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/ (Debug
# with -O1 would be slower to run; Release keeps the suite's time low). Slow-labelled tests
# (the validation ratchet, which re-runs every measured run) are left to the main test run.
set -euo pipefail
cd "$(dirname "$0")/../.."
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DPARASIM_SANITIZE=ON -DPARASIM_BUILD_BENCHMARKS=OFF \
  "${launcher[@]}" "$@" >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -LE slow
