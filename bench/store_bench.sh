#!/usr/bin/env bash
# Data at scale (issue 29), on token stores of synthetic text (bytes
# tokenizer) of 10 MB and LARGE_MB (default 2048) MB of text:
#  (a) trainer start-up and peak RSS: a run of one step (start-up dominates
#      its wall time) and a run of 30 steps (bench/configs/store_scale.pbtxt),
#      each store, REPEATS times alternating; medians and large / small;
#  (b) data loading's share of a training step: the spec's training batches
#      built alone (//bench:data_loading_time, 30 batches) over the run's
#      seconds per step.
# Prints the CPU, a measured FP32 FMA peak and the load. The stores go under
# $TMPDIR (default /tmp; about 4 x LARGE_MB MB free needed) and are deleted
# at the end. Run it alone: flock /tmp/tvlab-bazel.lock bash bench/store_bench.sh
# usage: bash bench/store_bench.sh [LARGE_MB]   (env REPEATS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
LARGE_MB=${1:-2048}
REPEATS=${REPEATS:-3}
export OMP_WAIT_POLICY=passive
bazel build //experiments:run //experiments:prepare //bench:fma_peak //bench:data_loading_time >/dev/null 2>&1 ||
  { echo "bazel build of the benchmark's binaries failed" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tvlab_store_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
free_mb=$(df -m --output=avail "$WORK" | tail -1)
[ "$free_mb" -gt $((LARGE_MB * 4)) ] ||
  { echo "need $((LARGE_MB * 4)) MB free under $WORK for the large store; $free_mb MB free (set TMPDIR)" >&2; exit 1; }
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD)"
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
RUN=bazel-bin/experiments/run
SPEC=bench/configs/store_scale.pbtxt

for size in small large; do
  mb=10; [ $size = large ] && mb=$LARGE_MB
  python3 bench/synthetic_corpus.py --megabytes "$mb" --output "$WORK/$size.jsonl" > /dev/null
  started=$(date +%s.%N)
  bazel-bin/experiments/prepare --input "$WORK/$size.jsonl" --output "$WORK/$size" --threads "$(nproc)" \
    --progress=false > "$WORK/prepare_$size.log"
  echo "$size store: $mb MB of text, $(du -sm "$WORK/$size" | cut -f1) MB on disk, prepared in" \
    "$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s"
  rm "$WORK/$size.jsonl"
done

# One run: prints "wall_seconds peak_rss_MB train_seconds".
timed_run() {  # store steps
  rm -rf "$WORK/run"
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$RUN" "$SPEC" --set "task.options.path=$WORK/$1" \
    --set "train.steps=$2" --output_dir "$WORK/run" > "$WORK/run.log" 2>&1
  read -r wall rss < "$WORK/time"
  echo "$wall $((rss / 1024)) $(python3 -c "import json; print(json.load(open('$WORK/run/metrics.json'))['train_seconds'])")"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

: > "$WORK/results"
for r in $(seq "$REPEATS"); do
  for size in small large; do
    echo "$size start $(timed_run $size 1)" >> "$WORK/results"
    echo "$size run $(timed_run $size 30)" >> "$WORK/results"
    load=$(bazel-bin/bench/data_loading_time "$SPEC" 30 "task.options.path=$WORK/$size")
    echo "$size load $(python3 -c "import json,sys; print(json.loads(sys.argv[1])['seconds_per_batch'])" "$load")" \
      >> "$WORK/results"
  done
done
echo "raw (store, kind, wall s / RSS MB / train s, or loading s per batch):"
sed 's/^/  /' "$WORK/results"
col() { awk -v s="$1" -v k="$2" -v c="$3" '$1 == s && $2 == k {print $c}' "$WORK/results" | median; }
printf '%-6s %16s %18s %14s %14s %18s %14s\n' store "start-up s (1 step)" "start-up RSS MB" "30-step RSS MB" \
  "step s" "loading s/batch" "loading share"
for size in small large; do
  step=$(awk -v s="$size" '$1 == s && $2 == "run" {print $5 / 30}' "$WORK/results" | median)
  loadt=$(col "$size" load 3)
  printf '%-6s %16s %18s %14s %14.4f %18.6f %13.2f%%\n' "$size" "$(col "$size" start 3)" "$(col "$size" start 4)" \
    "$(col "$size" run 4)" "$step" "$loadt" "$(awk -v l="$loadt" -v s="$step" 'BEGIN {print 100 * l / s}')"
done
for k in "start 3 start-up time" "start 4 start-up peak RSS" "run 4 30-step peak RSS"; do
  set -- $k
  echo "large / small, ${*:3}: $(awk -v a="$(col large "$1" "$2")" -v b="$(col small "$1" "$2")" 'BEGIN {printf "%.3f", a / b}')"
done
echo "medians of $REPEATS runs each; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
