#!/usr/bin/env bash
# Activation checkpointing on a deep model: bench/configs/checkpoint_deep_decoder.pbtxt
# (24 layers, d 512, T 1024, batch 1) trained a few steps with each
# train.activation_checkpointing setting (NONE, SELECTIVE, BLOCK side by
# side). Prints the median step time after one warm-up step, the peak RSS
# (/usr/bin/time: the whole process, final evaluation included),
# metrics.json's train_peak_rss_bytes and train_peak_memory_bytes (the
# process's peak RSS and the live tensors' high-water mark when training
# ends, before the evaluation), the step's MFU (the
# cost model's FLOPs of one step over the median step time, against the
# run's peak: a recomputation is not counted, so BLOCK's MFU is lower by
# what it recomputes) and the ratios to NONE (the first setting listed). The
# issue's target: BLOCK cuts the peak RSS >= 3x for <= 1.4x the step time.
# SELECTIVE keeps the matrix products and reruns only the elementwise ops:
# its memory lies between the two, its step time close to NONE's.
# usage: bash bench/checkpoint_bench.sh [THREADS]
#        env STEPS=2 LAYERS=24 CONTEXT=1024 BATCH=1 SETTINGS="NONE SELECTIVE BLOCK" REPEATS=1
# REPEATS > 1 runs the settings again, in reversed order every other
# repeat, and ends with each setting's median step and step ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
STEPS=${STEPS:-2}
LAYERS=${LAYERS:-24}
CONTEXT=${CONTEXT:-1024}
BATCH=${BATCH:-1}
SETTINGS=${SETTINGS:-"NONE SELECTIVE BLOCK"}
REPEATS=${REPEATS:-1}
export OMP_WAIT_POLICY=passive
bazel build //experiments:run //bench:fma_peak >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
echo "model: $LAYERS layers, d 512, T $CONTEXT, batch $BATCH; $THREADS thread(s); median of $STEPS steps after 1 warm-up"
# One run of setting $1 into $OUT/$1.$2: prints "step rss train_rss tensors mfu".
run_setting() {
  local dir="$OUT/$1.$2"
  /usr/bin/time -f "%M" -o "$dir.rss" "$RUN" bench/configs/checkpoint_deep_decoder.pbtxt --output_dir "$dir" \
      --set runtime.threads="$THREADS" --set train.activation_checkpointing="$1" \
      --set train.steps=$((STEPS + 1)) --set model.num_layers="$LAYERS" --set train.batch_size="$BATCH" \
      --set task.options.context_length="$CONTEXT" >/dev/null 2>"$dir.err" ||
    { echo "$1 failed: $(tail -3 "$dir.err")" >&2; return 1; }
  /usr/bin/python3 - "$dir" "$(cat "$dir.rss")" "$((BATCH * CONTEXT))" "$1" <<'PY'
import csv, json, statistics, sys
run_dir, rss_kb, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
elapsed = [float(r["elapsed_sec"]) for r in csv.DictReader(open(f"{run_dir}/train_log.csv"))]
step = statistics.median(b - a for a, b in zip(elapsed, elapsed[1:]))
m = json.load(open(f"{run_dir}/metrics.json"))
peak = m.get("efficiency", {}).get("peak_flops_per_second")
mfu = m["train_flops_per_token"] * tokens / step / peak if peak else None
assert m.get("activation_checkpointing") == sys.argv[4], m.get("activation_checkpointing")
train_rss = m["train_peak_rss_bytes"] / 2**20
tensors = m["train_peak_memory_bytes"] / 2**20
print(f"{step:.3f} {rss_kb / 1024:.0f} {train_rss:.0f} {tensors:.0f} {'-' if mfu is None else f'{100 * mfu:.1f}%'}")
PY
}
# Each repeat runs every setting, in the listed order and then reversed
# (this machine's speed drifts over minutes, so the setting run second
# would otherwise always meet the later phase); a repeat's rows follow it,
# with ratios to the first listed setting of the same repeat.
read -r -a listed <<<"$SETTINGS"
printf '%-6s %-9s %9s %9s %14s %16s %8s %10s %10s\n' repeat setting step_s rss_MB train_rss_MB train_tensors_MB \
  step_MFU step_x rss_x
for rep in $(seq 1 "$REPEATS"); do
  order=("${listed[@]}")
  if [ $((rep % 2)) -eq 0 ]; then
    order=(); for ((i = ${#listed[@]} - 1; i >= 0; i--)); do order+=("${listed[i]}"); done
  fi
  for setting in "${order[@]}"; do run_setting "$setting" "$rep" >"$OUT/$setting.$rep.row" || rm -f "$OUT/$setting.$rep.row"; done
  base="$OUT/${listed[0]}.$rep.row"
  for setting in "${listed[@]}"; do
    row="$OUT/$setting.$rep.row"
    [ -s "$row" ] || continue
    read -r step rss train_rss tensors mfu <"$row"
    step_x=- rss_x=-  # no ratios when the first listed setting failed in this repeat
    if [ -s "$base" ]; then
      read -r base_step base_rss _ <"$base"
      step_x=$(/usr/bin/python3 -c "print(f'{$step / $base_step:.2f}x')")
      rss_x=$(/usr/bin/python3 -c "print(f'{$base_rss / $rss:.2f}x less')")
    fi
    printf '%-6s %-9s %9s %9s %14s %16s %8s %10s %10s\n' "$rep" "$setting" "$step" "$rss" "$train_rss" "$tensors" \
      "$mfu" "$step_x" "$rss_x"
  done
done
if [ "$REPEATS" -gt 1 ]; then  # medians over the repeats
  /usr/bin/python3 - "$OUT" "${listed[0]}" "$REPEATS" "${listed[@]}" <<'PY'
import os, statistics, sys
out, base, repeats, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def step(setting, rep):
    path = f"{out}/{setting}.{rep}.row"
    return float(open(path).read().split()[0]) if os.path.exists(path) and os.path.getsize(path) else None
for s in settings:
    pairs = [(step(s, r), step(base, r)) for r in range(1, repeats + 1)]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    if pairs:
        ratios = sorted(a / b for a, b in pairs)
        print(f"median of {len(pairs)} repeats: {s} step {statistics.median(a for a, _ in pairs):.3f} s, "
              f"{statistics.median(ratios):.2f}x {base} (repeats {', '.join(f'{x:.2f}' for x in ratios)})")
PY
fi
rm -rf "$OUT"
