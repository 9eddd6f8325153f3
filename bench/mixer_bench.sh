#!/usr/bin/env bash
# Recurrent mixers against fused softmax attention at long context, one
# thread: one decoder layer of bench/configs/mixer_layer.pbtxt (d 128, 2
# heads of 64, d_ff 512, GELU, pre-LN, no positions), batch 1, one forward +
# backward + AdamW step per measurement, with the token mixer gla, retnet or
# linear_attention (their chunked form: the fused scan,
# Backend::GatedLinearScan) or softmax attention (layout mha,
# runtime.attention "fused"). Prints the median step time of the timed steps
# (after one warm-up) and the process's peak RSS per length; then decoding
# at CONTEXT tokens (bench/mixer_decode.cc): tokens/s of single-token steps
# and the decoding state's bytes (gla's fixed state against softmax's KV
# cache), after the prefill and after the NEW tokens.
# usage: bash bench/mixer_bench.sh [THREADS]
#        env LENGTHS="1024 2048 4096 8192 16384 32768" SOFTMAX_MAX=32768 STEPS=2
#            MIXERS="gla retnet linear_attention" CONTEXT=32768 NEW=256
#            BEFORE=path/to/an/older/run (optional: gla with that binary, up to BEFORE_MAX)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
LENGTHS=${LENGTHS:-"1024 2048 4096 8192 16384 32768"}
SOFTMAX_MAX=${SOFTMAX_MAX:-32768}
STEPS=${STEPS:-2}
MIXERS=${MIXERS:-"gla retnet linear_attention"}
CONTEXT=${CONTEXT:-32768}
NEW=${NEW:-256}
BEFORE=${BEFORE:-}
BEFORE_MAX=${BEFORE_MAX:-8192}
export OMP_WAIT_POLICY=passive
bazel build //experiments:run //bench:fma_peak //bench:mixer_decode >/dev/null 2>&1
RUN=bazel-bin/experiments/run
CONFIG=bench/configs/mixer_layer.pbtxt
OUT=$(mktemp -d)
TEXT="$OUT/text.txt"  # ~1.2 MB: the held-out tenth holds a 32k window
for i in 1 2 3 4 5; do cat /usr/share/common-licenses/*; done > "$TEXT"
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
echo "threads $THREADS, $STEPS timed steps after one warm-up"
mixer_args() {  # the --set flags of a mixer name ("softmax" = mha, fused kernel)
  if [ "$1" = softmax ]; then
    echo "--set model.attention.layout=mha --set runtime.attention=fused"
  else
    echo "--set model.attention.layout=$1"
  fi
}
printf '%6s %-26s %9s %9s\n' T mixer step_s rss_MB
train() {  # binary label mixer length
  local bin=$1 label=$2 mixer=$3 len=$4 dir="$OUT/$2_$4"
  # shellcheck disable=SC2046
  /usr/bin/time -f "%M" -o "$dir.rss" "$bin" "$CONFIG" --output_dir "$dir" $(mixer_args "$mixer") \
      --set runtime.threads="$THREADS" --set train.steps=$((STEPS + 1)) \
      --set "task.options.path=$TEXT" --set task.options.context_length="$len" >/dev/null 2>"$dir.err" ||
    { echo "$label failed at T $len: $(tail -3 "$dir.err")"; return; }
  /usr/bin/python3 - "$(/usr/bin/python3 bench/tvlab_steps.py "$dir" "$label" "$THREADS" "$len" "$(cat "$dir.rss")" 1)" "$len" <<'PY'
import json, sys
m = json.loads(sys.argv[1])
print(f"{sys.argv[2]:>6} {m['peer']:<26} {m['step_seconds']:>9.3f} {m['peak_rss_mb']:>9.0f}")
PY
}
for len in $LENGTHS; do
  for mixer in $MIXERS; do train "$RUN" "$mixer" "$mixer" "$len"; done
  if [ -n "$BEFORE" ] && [ "$len" -le "$BEFORE_MAX" ]; then train "$BEFORE" "gla_before" gla "$len"; fi
  if [ "$len" -le "$SOFTMAX_MAX" ]; then train "$RUN" "softmax_fused" softmax "$len"; fi
done
echo "decoding: $CONTEXT tokens of context (prefill in pieces of 1024), then $NEW single-token steps"
for mixer in gla softmax; do
  # shellcheck disable=SC2046
  line=$(bazel-bin/bench/mixer_decode "$CONFIG" "$CONTEXT" "$NEW" \
      $(mixer_args "$mixer" | sed 's/--set //g') "runtime.threads=$THREADS" \
      "task.options.path=$TEXT" "task.options.context_length=$((CONTEXT + NEW))" 2>"$OUT/decode_$mixer.err") ||
    { echo "decoding $mixer failed: $(tail -3 "$OUT/decode_$mixer.err")"; continue; }
  echo "$mixer $line"
done
rm -rf "$OUT"
