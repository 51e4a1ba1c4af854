#!/usr/bin/env bash
# One command: install dependencies, build, and predict the default scenario.
set -euo pipefail
cd "$(dirname "$0")"
bash tools/scripts/install-deps.sh
PARASIM_TARGET=parasim bash tools/scripts/build.sh
./build/tools/parasim run scenarios/default.json
