#!/usr/bin/env bash
# Data-parallel overhead (docs/distributed.md): trains the GPT-shaped byte
# LM (configs/lm_text.pbtxt: decoder-only, d_model 128, 2 layers, RoPE,
# batch 32 x 64 tokens) for STEPS steps as one process and under
# `mpirun -np 2` (each rank: 16 rows of every global batch of 32), one
# thread per process, and prints tokens/s (global tokens over the training
# loop's wall time) and rank 0's all-reduce time per step, with the part of
# it spent waiting for the other rank to finish its backward pass, next to
# rank 0's backward time per step (what an all-reduce overlapped with
# backward could at best hide behind).
# usage: bash bench/mpi_bench.sh [STEPS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="${1:-200}"
export OMP_WAIT_POLICY=passive  # docs/building.md: spinning threads on a shared box
command -v mpirun >/dev/null || { echo "mpirun not found: bash tools/setup.sh" >&2; exit 1; }
bazel build //experiments:run >/dev/null 2>&1  # -c opt -O3 from .bazelrc
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# Open MPI refuses root unless told (containers); shared-memory transport.
MPIRUN=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe --mca btl self,vader)
SET=(--set train.steps="$STEPS" --set runtime.threads=1 --set train.log_every=1000000)

echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "config: configs/lm_text.pbtxt, $STEPS steps, 1 thread per process"
printf '%-10s %10s %12s %18s %14s %18s %14s\n' processes train_s tokens/s allreduce_ms/step of_which_wait backward_ms/step final_loss
report() {
  /usr/bin/python3 - "$1" "$2" "$STEPS" <<'PY'
import json, sys
m = json.load(open(sys.argv[2] + "/metrics.json"))
steps = int(sys.argv[3])
def per_step(key):  # ms per step; "-" where the run has no such figure (one process)
    return f"{m[key] / steps * 1000:.2f}" if key in m else "-"
print(f"{sys.argv[1]:<10} {m['train_seconds']:10.2f} {m['tokens_per_second']:12.0f} {per_step('allreduce_seconds'):>18} "
      f"{per_step('allreduce_wait_seconds'):>14} {per_step('backward_seconds'):>18} {m['final_train_loss']:14.6f}")
PY
}
"$RUN" configs/lm_text.pbtxt "${SET[@]}" --output_dir "$OUT/one" >/dev/null 2>&1
report 1 "$OUT/one"
"${MPIRUN[@]}" -np 2 "$RUN" configs/lm_text.pbtxt "${SET[@]}" --output_dir "$OUT/two" >/dev/null 2>&1
report 2 "$OUT/two"
