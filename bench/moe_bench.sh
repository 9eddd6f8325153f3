#!/usr/bin/env bash
# A top-2-of-8 mixture-of-experts step against the FLOP-matched dense step:
# bench/configs/moe_top2_of_8.pbtxt (8 SwiGLU experts of d_ff 256, capacity
# factor 1.25) and bench/configs/moe_dense_matched.pbtxt (one SwiGLU of d_ff
# 512: the FFN FLOPs of two experts), one forward + backward + AdamW step
# per measurement on THREADS threads (default 1). Prints the median step
# time of each after one warm-up step, their ratio, and parameters (total /
# active, from metrics.json) side by side, with the CPU model and load.
# usage: bash bench/moe_bench.sh [THREADS]     env STEPS=6
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
STEPS=${STEPS:-6}
export OMP_WAIT_POLICY=passive
bazel build //experiments:run >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "threads $THREADS, $STEPS timed steps after one warm-up; batch 16 x T 128, d 256, 2 layers"
printf '%-34s %9s %11s %11s\n' model step_s parameters active
declare -A STEP
for config in moe_dense_matched moe_top2_of_8; do
  dir="$OUT/$config"
  "$RUN" "bench/configs/$config.pbtxt" --output_dir "$dir" --set runtime.threads="$THREADS" \
      --set train.steps=$((STEPS + 1)) >/dev/null 2>"$dir.err" ||
    { echo "tvlab failed on $config: $(tail -3 "$dir.err")"; exit 1; }
  read -r step params active < <(/usr/bin/python3 - "$dir" <<'PY'
import csv, json, statistics, sys
run_dir = sys.argv[1]
with open(f"{run_dir}/train_log.csv") as f:
    elapsed = [float(r["elapsed_sec"]) for r in csv.DictReader(f) if r["elapsed_sec"]]
step = statistics.median([b - a for a, b in zip(elapsed, elapsed[1:])])
m = json.load(open(f"{run_dir}/metrics.json"))
print(f"{step:.4f} {int(m['parameters'])} {int(m.get('active_parameters', m['parameters']))}")
PY
)
  STEP[$config]=$step
  printf '%-34s %9s %11s %11s\n' "$config" "$step" "$params" "$active"
done
/usr/bin/python3 -c "import sys; print(f'MoE step / dense step: {float(sys.argv[2]) / float(sys.argv[1]):.2f}x')" \
    "${STEP[moe_dense_matched]}" "${STEP[moe_top2_of_8]}"
rm -rf "$OUT"
