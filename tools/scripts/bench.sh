#!/usr/bin/env bash
# Regenerates every speed figure of docs/performance.md: builds the Google Benchmark suite
# (tests/bench/engine_bench.cpp) in build/ and runs it with repetitions, printing the medians.
# BENCH_FILTER narrows the cases (a Google Benchmark regex); BENCH_REPS sets the repetitions (5).
# BENCH_BASELINE=path/to/parasim_bench also runs an older build of the suite, in the same run,
# for a before/after table.
set -euo pipefail
cd "$(dirname "$0")/../.."
filter="${BENCH_FILTER:-.}"
reps="${BENCH_REPS:-5}"
cmake --build build -j2 --target parasim_bench >/dev/null
args=(--benchmark_filter="$filter" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
      --benchmark_counters_tabular=true)
if [[ -n "${BENCH_BASELINE:-}" ]]; then
  echo "== before: $BENCH_BASELINE"
  "$BENCH_BASELINE" "${args[@]}" | grep -E "median|^Benchmark|^-"
  echo "== after: build/tests/parasim_bench"
fi
build/tests/parasim_bench "${args[@]}" | grep -E "median|^Benchmark|^-"
