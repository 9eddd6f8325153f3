#!/usr/bin/env bash
# The GPT-size step, side by side in one run: tvlab (fused attention, and
# runtime.attention=unfused), PyTorch 2.x (SDPA) and JAX (one jitted step)
# on bench/configs/gpt_byte_lm.pbtxt's model (d 256, 4 layers, 8 heads,
# d_ff 1024, T 256, batch 16, 3.36 M parameters, 22.4 MFLOP per token), at
# each thread count given, each peer REPEATS times (default 3). Prints the
# CPU, the FP32 FMA peak measured now and the best measured on this machine
# (framework/perf/peak.h; the fractions are of the best), and per peer the
# median step time, tokens/s, fraction of the FMA peak and peak RSS, and the
# fraction of the peak measured around that repeat (%adj: the higher of the
# peaks measured just before and just after it, as a single measurement
# can dip too; this shared host's speed moves between phases, and a step
# measured in a slow phase reads low against the best); at the end each
# peer's medians; then
# the peak measured again at the end (a shared host's drift shows there)
# and the MFU bound its GEMMs set (bench/step_gemm_bound.cc) at each thread
# count.
# With PRECISIONS="fp32 bf16" each repeat also runs tvlab with
# runtime.precision bf16 and PyTorch under bf16 autocast (bf16 matmuls, fp32
# weights), reported as separate rows; %peak stays against the FP32 peak.
# usage: bash bench/gpt_bench.sh [THREADS...]      (env REPEATS=3 STEPS=10 PRECISIONS=fp32)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=("${@:-1}")
REPEATS=${REPEATS:-3}
STEPS=${STEPS:-10}
PRECISIONS=${PRECISIONS:-fp32}
export OMP_WAIT_POLICY=passive
[ -x bench/.venv/bin/python ] || { echo "bench/.venv missing: bash bench/setup_venv.sh" >&2; exit 1; }
bazel build //experiments:run //bench:fma_peak //bench:step_gemm_bound >/dev/null 2>&1
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
PEAK_NOW=$(bazel-bin/bench/fma_peak)
PEAK=$(bazel-bin/bench/fma_peak --best)
echo "measured FP32 FMA peak, one thread: $PEAK_NOW GFLOP/s now; %peak is of $PEAK, the best measured on this machine"
MODEL="--d 256 --layers 4 --heads 8 --ff 1024 --context 256 --batch 16 --positions learned"
FLOP_PER_TOKEN=22.4e6
ROWS="$OUT/rows.tsv" PENDING="$OUT/pending.jsonl"
row() { echo "$1" >>"$PENDING"; }  # a peer's json line, printed once the repeat's peaks are in
# The repeat's rows, against the higher of the peaks measured before ($1)
# and after it, never above the best.
flush_rows() {
  local after adj
  [ -f "$PENDING" ] || return 0
  after=$(bazel-bin/bench/fma_peak)
  adj=$(/usr/bin/python3 -c "print(min(max($1, $after), $PEAK))")
  while read -r line; do print_row "$line" "$adj"; done <"$PENDING"
  rm -f "$PENDING"
}
print_row() {  # json line, adjacent peak -> table row (and a line of $ROWS for the medians)
  /usr/bin/python3 - "$1" "$PEAK" "$FLOP_PER_TOKEN" "$2" "$ROWS" <<'PY'
import json, sys
m = json.loads(sys.argv[1]); peak = float(sys.argv[2]) * 1e9; fpt = float(sys.argv[3])
adjacent = float(sys.argv[4]) * 1e9
threads = m["threads"]
mfu = m["tokens_per_second"] * fpt / (peak * threads)
adj = m["tokens_per_second"] * fpt / (adjacent * threads)
print(f"{m['peer']:<34} {threads:>3} {m['step_seconds']:>8.3f} {m['tokens_per_second']:>9.0f} "
      f"{100 * mfu:>6.1f}% {100 * adj:>6.1f}% {m['peak_rss_mb']:>8.0f}")
with open(sys.argv[5], "a") as f:
    f.write(f"{m['peer']}\t{threads}\t{m['step_seconds']}\t{mfu}\t{adj}\n")
PY
}
printf '%-34s %3s %8s %9s %7s %7s %8s\n' peer thr step_s tok/s "%peak" "%adj" rss_MB
for t in "${THREADS[@]}"; do
  if [ "$t" = 1 ]; then xla="--xla_cpu_multi_thread_eigen=false"; else xla="--xla_cpu_multi_thread_eigen=true"; fi
  for r in $(seq "$REPEATS"); do
    peak_before=$(bazel-bin/bench/fma_peak)  # this repeat's phase of the host (%adj)
    for mode in auto unfused; do
      dir="$OUT/tvlab_${mode}_${t}_$r"
      /usr/bin/time -f "%M" -o "$dir.rss" "$RUN" bench/configs/gpt_byte_lm.pbtxt --output_dir "$dir" \
          --set runtime.threads="$t" --set runtime.attention="$mode" --set train.steps=$((STEPS + 2)) \
          --set train.log_every=1 >/dev/null 2>"$dir.err" || { echo "tvlab failed: $(tail -3 "$dir.err")"; continue; }
      row "$(/usr/bin/python3 bench/tvlab_steps.py "$dir" "tvlab attention=$mode" "$t" 4096 "$(cat "$dir.rss")")"
    done
    row "$(bench/.venv/bin/python bench/torch_lm.py $MODEL --threads "$t" --steps "$STEPS" 2>/dev/null | tail -1)"
    row "$(env XLA_FLAGS="$xla" bench/.venv/bin/python bench/jax_lm.py $MODEL --threads "$t" --steps "$STEPS" 2>/dev/null | tail -1)"
    if [[ " $PRECISIONS " == *" bf16 "* ]]; then
      dir="$OUT/tvlab_bf16_${t}_$r"
      /usr/bin/time -f "%M" -o "$dir.rss" "$RUN" bench/configs/gpt_byte_lm.pbtxt --output_dir "$dir" \
          --set runtime.threads="$t" --set runtime.precision=bf16 --set train.steps=$((STEPS + 2)) \
          --set train.log_every=1 >/dev/null 2>"$dir.err" || { echo "tvlab bf16 failed: $(tail -3 "$dir.err")"; }
      [ -f "$dir/metrics.json" ] && row "$(/usr/bin/python3 bench/tvlab_steps.py "$dir" "tvlab attention=auto bf16" "$t" 4096 "$(cat "$dir.rss")")"
      row "$(bench/.venv/bin/python bench/torch_lm.py $MODEL --threads "$t" --steps "$STEPS" --bf16 2>/dev/null | tail -1)"
    fi
    flush_rows "$peak_before"
  done
done
echo "%peak = tokens/s x 22.4 MFLOP per token / (threads x the one-thread FMA peak)"
echo "%adj = the same of the higher of the peaks measured just before and just after the repeat"
echo "medians over the repeats (step_s, %peak, %adj):"
/usr/bin/python3 - "$ROWS" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    peer, threads, step, mfu, adj = line.rstrip("\n").split("\t")
    runs[(peer, int(threads))].append((float(step), float(mfu), float(adj)))
for (peer, threads), rs in runs.items():
    med = [statistics.median(r[i] for r in rs) for i in range(3)]
    print(f"  {peer:<34} {threads:>3} {med[0]:>8.3f} {100 * med[1]:>6.1f}% {100 * med[2]:>6.1f}%  ({len(rs)} repeats)")
PY
echo "measured FP32 FMA peak at the end: $(bazel-bin/bench/fma_peak) GFLOP/s now"
# The bound the GEMMs set (bench/step_gemm_bound.cc): the MFU this model's
# step would reach if only its linear layers' products took time.
for t in "${THREADS[@]}"; do
  pin=(); [ "$t" = 1 ] && pin=(taskset -c 0)
  echo "GEMM bound at $t thread(s): $("${pin[@]}" bazel-bin/bench/step_gemm_bound 256 4 1024 16 256 256 "$FLOP_PER_TOKEN" "$t" \
      | grep -E '^(step|MFU bound)' | paste -sd ';' -)"
done
rm -rf "$OUT"
