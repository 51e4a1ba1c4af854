#!/usr/bin/env bash
# `mpirun -np 2 parasim sweep|plan` gives byte-identical output to the serial run (issue 41):
# the layouts are split between the processes by expected cost and gathered on the first.
# Usage: mpi_identical.sh PARASIM MPIEXEC DATA_DIR
set -euo pipefail
parasim="$1" mpiexec="$2" data="$3"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's libraries keep allocations to exit by design: no leak report under a sanitizer build.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
sweep=(sweep "$data/scenarios/default.json" --vary tp=1,2,4,8 --vary micro_batch=1,2,4 --vary recompute=none,selective,full --json)
plan=(plan --model llama3-8b --gpu h100-sxm5-80g --gpus 8 --seq 4096 --global-batch 32 --max-vpp 2 --json)
for cmd in sweep plan; do
  declare -n args="$cmd"
  "$parasim" --data-dir "$data" "${args[@]}" > "$out/$cmd.serial" 2>/dev/null
  "$mpiexec" --oversubscribe -np 2 "$parasim" --data-dir "$data" "${args[@]}" > "$out/$cmd.mpi" 2>"$out/$cmd.err" ||
    { cat "$out/$cmd.err"; exit 1; }
  grep -q "in each of 2 processes" "$out/$cmd.err" || { echo "$cmd: not split over 2 processes"; cat "$out/$cmd.err"; exit 1; }
  cmp "$out/$cmd.serial" "$out/$cmd.mpi"
  echo "$cmd: $(grep -c '"rank"' "$out/$cmd.serial") rows, identical under mpirun -np 2"
done
