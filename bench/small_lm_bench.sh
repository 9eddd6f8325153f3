#!/usr/bin/env bash
# A small text model's training step, side by side in one run (issue #33):
# bench/configs/small_byte_lm.pbtxt (d 128, 2 layers, 4 heads, d_ff 512,
# T 128, batch 16) in tvlab captured (train.step_capture, the default) and
# eager (CAPTURE_OFF), PyTorch 2.x eager and through torch.compile, and
# JAX's jitted step, at each thread count given; one-thread runs pinned to
# core 0. Prints the CPU, the FP32 FMA peak measured now and the best
# measured on this machine (framework/perf/peak.h; the fractions are of the
# best), and per peer the median step time (after warm-up: compilation and
# tvlab's recording steps are not timed), tokens/s, the fraction of the FMA
# peak and peak RSS.
# usage: bash bench/small_lm_bench.sh [THREADS...]      (env STEPS=30)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=("${@:-1}")
STEPS=${STEPS:-30}
export OMP_WAIT_POLICY=passive
[ -x bench/.venv/bin/python ] || { echo "bench/.venv missing: bash bench/setup_venv.sh" >&2; exit 1; }
bazel build //experiments:run //bench:fma_peak >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
PEAK_NOW=$(bazel-bin/bench/fma_peak)
PEAK=$(bazel-bin/bench/fma_peak --best)
echo "measured FP32 FMA peak, one thread: $PEAK_NOW GFLOP/s now; %peak is of $PEAK, the best measured on this machine"
MODEL="--d 128 --layers 2 --heads 4 --ff 512 --context 128 --batch 16 --positions learned"
# The FLOPs per trained token of tvlab's cost model (metrics.json), read
# from the first tvlab run.
FLOP_PER_TOKEN=""
row() {  # json line -> table row
  /usr/bin/python3 - "$1" "$PEAK" "$FLOP_PER_TOKEN" <<'PY'
import json, sys
m = json.loads(sys.argv[1]); peak = float(sys.argv[2]) * 1e9; fpt = float(sys.argv[3])
threads = m["threads"]
mfu = m["tokens_per_second"] * fpt / (peak * threads)
note = f"  (+{m['compile_seconds']:.1f}s compile)" if m.get("compile_seconds") else ""
print(f"{m['peer']:<40} {threads:>3} {1e3 * m['step_seconds']:>8.2f} {m['tokens_per_second']:>9.0f} "
      f"{100 * mfu:>6.1f}% {m['peak_rss_mb']:>8.0f}{note}")
PY
}
printf '%-40s %3s %8s %9s %7s %8s\n' peer thr step_ms tok/s "%peak" rss_MB
for t in "${THREADS[@]}"; do
  pin=""; [ "$t" = 1 ] && command -v taskset >/dev/null && pin="taskset -c 0"
  if [ "$t" = 1 ]; then xla="--xla_cpu_multi_thread_eigen=false"; else xla="--xla_cpu_multi_thread_eigen=true"; fi
  for capture in CAPTURE_AUTO CAPTURE_OFF; do
    dir="$OUT/tvlab_${capture}_$t"
    $pin /usr/bin/time -f "%M" -o "$dir.rss" "$RUN" bench/configs/small_byte_lm.pbtxt --output_dir "$dir" \
        --set runtime.threads="$t" --set train.step_capture="$capture" --set train.steps=$((STEPS + 6)) \
        --set train.log_every=1 >/dev/null 2>"$dir.err" || { echo "tvlab failed: $(tail -3 "$dir.err")"; continue; }
    [ -n "$FLOP_PER_TOKEN" ] || FLOP_PER_TOKEN=$(/usr/bin/python3 -c "import json;print(json.load(open('$dir/metrics.json'))['train_flops_per_token'])")
    label="tvlab captured"; [ "$capture" = CAPTURE_OFF ] && label="tvlab eager"
    # Steps 0-3 are the warm-up, recordings and the check: timed from step 6.
    row "$(/usr/bin/python3 bench/tvlab_steps.py "$dir" "$label" "$t" 2048 "$(cat "$dir.rss")" 6)"
  done
  row "$($pin bench/.venv/bin/python bench/torch_lm.py $MODEL --threads "$t" --steps "$STEPS" 2>/dev/null | tail -1)"
  row "$($pin bench/.venv/bin/python bench/torch_lm.py $MODEL --threads "$t" --steps "$STEPS" --warmup 3 --compile 2>/dev/null | tail -1)"
  row "$(env XLA_FLAGS="$xla" $pin bench/.venv/bin/python bench/jax_lm.py $MODEL --threads "$t" --steps "$STEPS" 2>/dev/null | tail -1)"
done
echo "%peak = tokens/s x tvlab's FLOPs per token (${FLOP_PER_TOKEN}) / (threads x the one-thread FMA peak)"
rm -rf "$OUT"
