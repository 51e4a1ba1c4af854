#!/usr/bin/env bash
# The checks that keep parasim correct under every input (issue 40), run by CI after the main tests:
#  1. the whole test suite (slow-labelled validation excepted) built by clang with AddressSanitizer
#     and UndefinedBehaviorSanitizer, in build-fuzz/;
#  2. a short libFuzzer pass over each loader of user input (tests/fuzz: scenario, profile, measured
#     run, nccl-tests log), FUZZ_SECONDS each (default 20), on a copy of the seed corpus.
# One instrumented build serves both (-DPARASIM_FUZZ=ON: fuzzer coverage, ASan and UBSan on every
# object). A sanitizer report or failed test fails the script, and so does a fuzzer failing on its
# seed corpus; what a fuzzer finds beyond it is reported and left in build-fuzz/findings/.
# Warnings are not errors here: the gcc build of test.sh judges them (-DPARASIM_WERROR=ON in CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-20}"
bash tools/scripts/install-deps.sh --sanitizers
launcher=()
# The sloppiness lets ccache cache sources built with the precompiled headers (CMakeLists.txt).
if command -v ccache >/dev/null 2>&1; then
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache")
fi
# -O1: what the sanitizers' documentation advises, and a shorter build than -O2 for CI. A unity build
# (16 sources per compiler run) parses the shared headers once per batch: a cold build of parasim_core
# here took 224 CPU-seconds against 398 one source at a time (clang 14, 2026-12-05).
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DPARASIM_FUZZ=ON \
  -DPARASIM_BUILD_BENCHMARKS=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "${launcher[@]}" "$@" >/dev/null
cmake --build build-fuzz -j"$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-fuzz --output-on-failure -j"$(nproc)" -LE slow
rm -rf build-fuzz/corpus-* build-fuzz/findings
mkdir -p build-fuzz/findings
for target in scenario profile measured nccl_tests; do
  # The seed corpus (with every input a past fuzz pass found) must pass: a regression fails CI.
  "build-fuzz/tests/fuzz/fuzz_$target" -runs=0 "tests/fuzz/corpus/$target" >/dev/null 2>&1 ||
    { echo "fuzz_$target fails on its seed corpus (tests/fuzz/corpus/$target)" >&2; exit 1; }
  # Then new inputs for FUZZ_SECONDS. What they find is reported and kept for the next session
  # to turn into a seed and a fix; a random find does not fail the build.
  cp -r "tests/fuzz/corpus/$target" "build-fuzz/corpus-$target"
  echo "fuzz_$target: ${seconds} s"
  "build-fuzz/tests/fuzz/fuzz_$target" "build-fuzz/corpus-$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/findings/$target-" -print_final_stats=1 2>&1 |
    grep -E "^(stat::number_of_executed_units|stat::new_units_added|==[0-9]+==ERROR|SUMMARY)" || true
  if compgen -G "build-fuzz/findings/$target-*" >/dev/null; then
    echo "WARNING: fuzz_$target found an input that fails; it is in build-fuzz/findings/ (add it to the seed corpus with a fix)" >&2
  fi
done
