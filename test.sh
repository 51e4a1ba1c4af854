#!/usr/bin/env bash
# One command: build (if needed) and run the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")"
bash tools/scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
