#!/usr/bin/env bash
# One-shot mixture-of-experts measurement on one GPU (issue 45), about six minutes. Run from the
# folder holding torch_moe_bench.py or from the repository root: bash tools/scripts/device-moe.sh.
# Everything lands under $OUT (default out/), seven files:
#   context.txt   date, GPU, driver, clocks, power limit, torch / CUDA / cuDNN versions (before and after)
#   dmon.txt      nvidia-smi dmon every second through the whole run (SM/memory clocks, power)
#   launch.json   PyTorch eager's launch rate, and the same kernels replayed from a CUDA graph
#   train.json    whole training steps of few-layer MoE models (their parasim scenarios were
#                 predicted and committed before the run: calibrate/measurements/<dir>/)
#   gemm.json     the zoo's expert GEMMs: torch._grouped_mm and a per-expert loop, fwd and fwd+bwd
#   kernels.json  router and permute / unpermute kernels at the zoo models' widths
#   run.log       every step's output
# MOE_RUN=2 runs only the second set of training steps (TRAIN_CASES_2), writing context.txt,
# dmon.txt, train.json and run.log; MOE_RUN=3 only the CUDA-graph timings (graph.json).
# Each section runs in its own process under its own timeout, so one failure keeps the rest.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bench="$here/torch_moe_bench.py"
OUT="${OUT:-out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
export PYTHONUNBUFFERED=1
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit \
    --format=csv || true
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'grouped_mm', hasattr(torch, '_grouped_mm'))" || true
  uname -r
  nproc
} > "$OUT/context.txt" 2>&1
nvidia-smi dmon -s pc -d 1 -o T > "$OUT/dmon.txt" 2>&1 &
DMON=$!
trap 'kill $DMON 2>/dev/null' EXIT
section() {  # name budget_s timeout_s [extra arguments]
  echo "== $1 $(date -u +%T)"
  timeout "$3" python3 "$bench" "$1" -o "$OUT/$1.json" --budget-s "$2" "${@:4}" || echo "$1 exit $?"
}
if [ "${MOE_RUN:-1}" = 2 ]; then
  # The second run: training-step variants only (torch_moe_bench.py's TRAIN_CASES_2).
  section train 150 200 --cases 2
elif [ "${MOE_RUN:-1}" = 3 ]; then
  # The third run: GPU time alone, from CUDA-graph replays (graph.json).
  section graph 100 150
else
  section launch 20 60
  section train 100 140
  section gemm 120 160
  section kernels 30 60
fi
{ echo "== after"; date -u +"%Y-%m-%dT%H:%M:%SZ"; nvidia-smi -q -d CLOCK,POWER,PERFORMANCE; } >> "$OUT/context.txt" 2>&1 || true
echo "== done $(date -u +%T)"
