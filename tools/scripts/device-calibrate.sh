#!/usr/bin/env bash
# The one prepared script for a GPU machine (e.g. the project's H200 device): builds parasim and
# the harness, runs `parasim-calibrate --quick`, and leaves the profile and its context under
# $OUT (default: out/). Run from the repository root: bash tools/scripts/device-calibrate.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-out}"
mkdir -p "$OUT"
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv || true
  nvcc --version | tail -1 || true
} > "$OUT/context.txt" 2>&1
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DPARASIM_BUILD_TESTS=OFF >/dev/null
cmake --build build-device -j"$(nproc)" --target parasim-calibrate parasim
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
case "$gpu" in
  *B200*) base=b200-sxm-180g ;;
  *H200*) base=h200-sxm-141g ;;
  *H100*) base=h100-sxm5-80g ;;
  *A100*40*) base=a100-sxm4-40g ;;
  *A100*) base=a100-sxm4-80g ;;
  *) echo "no base profile for $gpu" >&2; exit 2 ;;
esac
timeout 540 ./build-device/calibrate/parasim-calibrate --quick --base "$base" -o "$OUT/$base.measured.json" 2>&1 | tee "$OUT/calibrate.log"
./build-device/tools/parasim profile diff "$base" "$OUT/$base.measured.json" | tee "$OUT/diff.txt"
# Real eager-PyTorch layers on the same GPU (forward, backward, their kernels, their GEMMs alone),
# held against the datasheet and the measured profile: where simulated training runs differ
# from measured ones (README, Accuracy), kernel by kernel.
if python3 -c "import torch" 2>/dev/null; then
  timeout 240 python3 tools/scripts/torch_layer_bench.py -o "$OUT/layer_bench.json" 2>&1 | tee "$OUT/layer_bench.log" || true
  if [ -s "$OUT/layer_bench.json" ]; then
    for prof in "$base" "$OUT/$base.measured.json"; do
      python3 tools/scripts/compare_layer_bench.py "$OUT/layer_bench.json" --gpu "$prof" --parasim build-device/tools/parasim \
        | tee -a "$OUT/layer_bench_vs_parasim.md" || true
    done
  fi
else
  echo "no PyTorch on this machine: layer benchmark skipped" | tee "$OUT/layer_bench.log"
fi
