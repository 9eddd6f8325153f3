#!/usr/bin/env bash
# Sliding-window attention against full causal attention at the same long
# context: one decoder layer of bench/configs/long_context_layer.pbtxt
# (d 256, 8 heads, d_ff 1024, GELU, pre-LN, no positions), batch 1, one
# forward + backward + AdamW step per measurement, with
# model.attention.window = W and without (runtime.attention auto: the fused
# kernel in both). Prints the median step time of each, their ratio, and the
# KV-cache bytes one sequence holds at T: the full cache's
# (metrics.json's kv_cache_bytes_per_token x T) and the windowed one's bound
# (kv_cache_bytes_bound: at most W tokens per layer).
# usage: bash bench/window_bench.sh [THREADS]     env T=16384 W=512 STEPS=3
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
T=${T:-16384}
W=${W:-512}
STEPS=${STEPS:-3}
export OMP_WAIT_POLICY=passive
bazel build //experiments:run //bench:fma_peak >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
TEXT="$OUT/text.txt"  # ~1.2 MB: the held-out tenth holds a 16k window
for i in 1 2 3 4 5; do cat /usr/share/common-licenses/*; done > "$TEXT"
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
echo "T $T, W $W, threads $THREADS, $STEPS timed steps after one warm-up"
declare -A STEP
for window in 0 "$W"; do
  dir="$OUT/window_$window"
  "$RUN" bench/configs/long_context_layer.pbtxt --output_dir "$dir" \
      --set runtime.threads="$THREADS" --set train.steps=$((STEPS + 1)) \
      --set model.attention.window="$window" \
      --set "task.options.path=$TEXT" --set task.options.context_length="$T" >/dev/null 2>"$dir.err" ||
    { echo "tvlab failed at window $window: $(tail -3 "$dir.err")"; exit 1; }
  STEP[$window]=$(/usr/bin/python3 - "$dir" "$T" <<'PY'
import csv, json, statistics, sys
run_dir, t = sys.argv[1], int(sys.argv[2])
with open(f"{run_dir}/train_log.csv") as f:
    elapsed = [float(r["elapsed_sec"]) for r in csv.DictReader(f) if r["elapsed_sec"]]
step = statistics.median([b - a for a, b in zip(elapsed, elapsed[1:])])
m = json.load(open(f"{run_dir}/metrics.json"))
full = int(m["kv_cache_bytes_per_token"]) * t
bound = int(float(m.get("kv_cache_bytes_bound", 0)))
held = min(full, bound) if bound else full
print(f"{step:.3f} {held}")
PY
)
done
read -r full_s full_kv <<<"${STEP[0]}"
read -r win_s win_kv <<<"${STEP[$W]}"
printf '%-22s %9s %16s\n' attention step_s kv_bytes_at_T
printf '%-22s %9s %16s\n' "full causal" "$full_s" "$full_kv"
printf '%-22s %9s %16s\n' "window $W" "$win_s" "$win_kv"
/usr/bin/python3 -c "import sys; f, w = float(sys.argv[1]), float(sys.argv[2]); print(f'windowed step {f / w:.2f}x faster; KV cache {int(sys.argv[3]) / int(sys.argv[4]):.0f}x smaller')" \
    "$full_s" "$win_s" "$full_kv" "$win_kv"
rm -rf "$OUT"
