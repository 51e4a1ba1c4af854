#!/usr/bin/env bash
# The one prepared script for a GPU machine (e.g. the project's H200 device). Run from the
# repository root: bash tools/scripts/device-calibrate.sh. Everything lands under $OUT (default
# out/), at most eight files:
#   context.txt        date, GPU, driver, clocks, power limit, nvcc and library versions
#   dmon.txt           nvidia-smi dmon every second through the whole run (SM/memory clocks, power)
#   train_bench.json   whole training steps in eager PyTorch (tools/scripts/torch_train_step.py)
#   <gpu>.measured.json  parasim-calibrate --quick: cuBLASLt GEMMs, memory, unfused attention
#   layer_bench.json   eager-PyTorch layers, their kernels and GEMMs (torch_layer_bench.py)
#   memory_bench.json  PyTorch's memory-bound kernels alone, by kind (torch_memory_bench.py)
#   run.log            every step's output
# PARASIM_CALIBRATE=path uses a prebuilt harness (the device image has CUDA but not the
# simulator's build dependencies; PARASIM_CALIBRATE_LIBS=dir[:dir] adds libraries it was built
# with, such as libfmt); otherwise it is built here with CMake. The profile diff and
# the comparisons with parasim run on any machine afterwards (tools/README.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-out}"
mkdir -p "$OUT"
LOG="$OUT/run.log"
exec > >(tee -a "$LOG") 2>&1
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit \
    --format=csv || true
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE || true
  nvcc --version | tail -1 || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" || true
  uname -r
} > "$OUT/context.txt" 2>&1
nvidia-smi dmon -s pc -d 1 -o T > "$OUT/dmon.txt" 2>&1 &
DMON=$!
trap 'kill $DMON 2>/dev/null' EXIT
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
case "$gpu" in
  *B200*) base=b200-sxm-180g ;;
  *H200*) base=h200-sxm-141g ;;
  *H100*) base=h100-sxm5-80g ;;
  *A100*40*) base=a100-sxm4-40g ;;
  *A100*) base=a100-sxm4-80g ;;
  *) echo "no base profile for $gpu" >&2; exit 2 ;;
esac
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
export PYTHONUNBUFFERED=1
# 1. Whole training steps (the validation rows), first: the GPU is at its coolest start here
#    and dmon.txt shows the clocks the steps ran at.
if [ $have_torch = 1 ]; then
  echo "== train bench $(date -u +%T)"
  timeout "${TRAIN_TIMEOUT:-170}" python3 tools/scripts/torch_train_step.py -o "$OUT/train_bench.json" || echo "train bench exit $?"
fi
# 2. The calibration harness.
echo "== parasim-calibrate $(date -u +%T)"
harness="${PARASIM_CALIBRATE:-}"
if [ -z "$harness" ]; then
  cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DPARASIM_BUILD_TESTS=OFF -DPARASIM_BUILD_BENCHMARKS=OFF >/dev/null \
    && cmake --build build-device -j"$(nproc)" --target parasim-calibrate && harness=build-device/calibrate/parasim-calibrate
fi
libs="${PARASIM_CALIBRATE_LIBS:-}"
if [ -n "$harness" ] && ldd "$harness" | grep -q "not found"; then
  # A harness built elsewhere: find its CUDA libraries (the toolkit's, or the pip wheels' that
  # PyTorch uses) for this one command only.
  for d in $(find /usr/local /opt /usr/lib \( -name 'libcublasLt.so.1[0-9]' -o -name 'libnccl.so.2' -o -name 'libcudart.so.1[0-9]' \) \
               2>/dev/null | xargs -r -n1 dirname | sort -u); do libs="$libs:$d"; done
  LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}" ldd "$harness" | grep -E "not found|cublas|nccl|cudart|fmt"
fi
if [ -n "$harness" ]; then
  LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}" timeout "${CALIBRATE_TIMEOUT:-240}" "$harness" --quick --dtypes bf16 fp8 --data-dir . --base "$base" \
    -o "$OUT/$base.measured.json" \
    || echo "parasim-calibrate exit $?"
fi
# 3. Layers alone, their kernels and GEMMs; memory-bound kernels alone.
if [ $have_torch = 1 ]; then
  echo "== layer bench $(date -u +%T)"
  timeout "${LAYER_TIMEOUT:-150}" python3 tools/scripts/torch_layer_bench.py -o "$OUT/layer_bench.json" || echo "layer bench exit $?"
  echo "== memory bench $(date -u +%T)"
  timeout "${MEMORY_TIMEOUT:-120}" python3 tools/scripts/torch_memory_bench.py -o "$OUT/memory_bench.json" || echo "memory bench exit $?"
else
  echo "no PyTorch on this machine: training-step, layer and memory-kernel benchmarks skipped"
fi
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >> "$OUT/context.txt" 2>&1 || true
echo "== done $(date -u +%T)"
