#!/usr/bin/env bash
# Long context, side by side: one decoder layer (d 256, 8 heads, d_ff 1024,
# GELU, pre-LN, no positions), batch 1, one forward + backward + AdamW step
# at each context length, in tvlab (fused attention; and unfused up to
# UNFUSED_MAX, whose (T, T) buffers grow quadratically) and PyTorch 2.x
# (SDPA); JAX (jax.nn.dot_product_attention, which materialises the scores
# on CPU) up to JAX_MAX. Prints the median step time and the peak RSS.
# usage: bash bench/long_context_bench.sh [THREADS...]
#        env LENGTHS="1024 4096 8192 16384 32768" UNFUSED_MAX=4096 JAX_MAX=8192 STEPS=3
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=("${@:-1}")
LENGTHS=${LENGTHS:-"1024 4096 8192 16384 32768"}
UNFUSED_MAX=${UNFUSED_MAX:-4096}
JAX_MAX=${JAX_MAX:-8192}
STEPS=${STEPS:-3}
export OMP_WAIT_POLICY=passive
[ -x bench/.venv/bin/python ] || { echo "bench/.venv missing: bash bench/setup_venv.sh" >&2; exit 1; }
bazel build //experiments:run //bench:fma_peak >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
TEXT="$OUT/text.txt"  # ~1.2 MB: the held-out tenth holds a 32k window
for i in 1 2 3 4 5; do cat /usr/share/common-licenses/*; done > "$TEXT"
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
row() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
m = json.loads(sys.argv[1])
print(f"{sys.argv[2]:>6} {m['peer']:<34} {m['threads']:>3} {m['step_seconds']:>9.3f} {m['peak_rss_mb']:>9.0f}")
PY
}
printf '%6s %-34s %3s %9s %9s\n' T peer thr step_s rss_MB
for t in "${THREADS[@]}"; do
  if [ "$t" = 1 ]; then xla="--xla_cpu_multi_thread_eigen=false"; else xla="--xla_cpu_multi_thread_eigen=true"; fi
  for len in $LENGTHS; do
    modes="auto"; [ "$len" -le "$UNFUSED_MAX" ] && modes="auto unfused"
    for mode in $modes; do
      dir="$OUT/tvlab_${mode}_${t}_$len"
      /usr/bin/time -f "%M" -o "$dir.rss" "$RUN" bench/configs/long_context_layer.pbtxt --output_dir "$dir" \
          --set runtime.threads="$t" --set runtime.attention="$mode" --set train.steps=$((STEPS + 1)) \
          --set "task.options.path=$TEXT" --set task.options.context_length="$len" >/dev/null 2>"$dir.err" ||
        { echo "tvlab failed at T $len ($mode): $(tail -3 "$dir.err")"; continue; }
      row "$(/usr/bin/python3 bench/tvlab_steps.py "$dir" "tvlab attention=$mode" "$t" "$len" "$(cat "$dir.rss")" 1)" "$len"
    done
    row "$(bench/.venv/bin/python bench/torch_lm.py --d 256 --layers 1 --heads 8 --ff 1024 --batch 1 \
        --positions none --context "$len" --threads "$t" --steps "$STEPS" --warmup 1 2>/dev/null | tail -1)" "$len"
    if [ "$len" -le "$JAX_MAX" ]; then
      row "$(env XLA_FLAGS="$xla" bench/.venv/bin/python bench/jax_lm.py --d 256 --layers 1 --heads 8 --ff 1024 \
          --batch 1 --positions none --context "$len" --threads "$t" --steps "$STEPS" --warmup 1 2>/dev/null | tail -1)" "$len"
    fi
  done
done
rm -rf "$OUT"
