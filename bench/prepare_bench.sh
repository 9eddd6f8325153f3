#!/usr/bin/env bash
# Prepare throughput (MB/s of text): tvlab's //experiments:prepare against
# the pipeline a researcher would write (bench/prepare_peer.py: nanoGPT
# style, SentencePiece from bench/.venv, numpy memmap .bin files), for the
# byte tokenizer and a SentencePiece model trained at prepare time, at each
# thread count given, one run after the other on the same input. Prints per
# run the wall seconds, MB/s of text and peak RSS (GNU time), and each
# peer's own phases (read, train, encode, write) as a JSON line.
# The input defaults to the offline Debian corpus (docs/corpus.md), built
# first when missing.
# usage: bash bench/prepare_bench.sh [THREADS...]
#        (env INPUT=corpus.jsonl SPM_VOCAB=8000 TOKENIZERS="bytes sentencepiece")
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=("${@:-2}")
SPM_VOCAB=${SPM_VOCAB:-8000}
TOKENIZERS=${TOKENIZERS:-bytes sentencepiece}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/tvlab/corpus"
INPUT=${INPUT:-$CACHE/corpus.jsonl}
export OMP_WAIT_POLICY=passive
[ -x bench/.venv/bin/python ] && bench/.venv/bin/python -c "import numpy, sentencepiece" 2>/dev/null ||
  { echo "bench/.venv lacks numpy or sentencepiece: bash bench/setup_venv.sh" >&2; exit 1; }
if [ ! -f "$INPUT" ]; then
  [ "$INPUT" = "$CACHE/corpus.jsonl" ] || { echo "no such input: $INPUT" >&2; exit 1; }
  bash tools/corpus/build_debian_corpus.sh "$CACHE"
fi
bazel build //experiments:prepare //bench:fma_peak >/dev/null 2>&1 ||
  { echo "bazel build //experiments:prepare failed (the token store, issue 29)" >&2; exit 1; }
PREPARE=bazel-bin/experiments/prepare
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "machine: $(nproc) vCPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); measured FP32 FMA peak, one thread: $(bazel-bin/bench/fma_peak) GFLOP/s"
echo "input: $INPUT ($(du -h "$INPUT" | cut -f1)); SentencePiece vocabulary $SPM_VOCAB"

# The command of one prepare (tvlab or peer, tokenizer, threads) in CMD.
command_of() {  # peer tokenizer threads
  local spm=()
  if [ "$1" = tvlab ]; then
    [ "$2" = sentencepiece ] && spm=(--spm_vocab_size "$SPM_VOCAB")
    CMD=("$PREPARE" --input "$INPUT" --output "$OUT/tvlab" --overwrite --tokenizer "$2" "${spm[@]}"
         --threads "$3" --progress=false)
  else
    CMD=(bench/.venv/bin/python bench/prepare_peer.py --input "$INPUT" --output "$OUT/peer"
         --tokenizer "$2" --spm_vocab_size "$SPM_VOCAB" --threads "$3")
  fi
}
# Runs CMD under GNU time; prints "seconds peak_rss_MB".
timed() {
  rm -rf "$OUT/tvlab" "$OUT/peer"
  /usr/bin/time -f "%e %M" -o "$OUT/time" "${CMD[@]}" > "$OUT/stdout"
  awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$OUT/time"
}

text_mb=$(stat -c %s "$INPUT" | awk '{printf "%.1f", $1 / 1e6}')
printf '%-8s %-14s %3s %9s %8s %8s\n' peer tokenizer thr seconds "MB/s" rss_MB
for t in "${THREADS[@]}"; do
  for tok in $TOKENIZERS; do
    for peer in tvlab peer; do
      command_of "$peer" "$tok" "$t"
      read -r seconds rss < <(timed)
      printf '%-8s %-14s %3s %9s %8s %8s\n' "$peer" "$tok" "$t" "$seconds" \
        "$(awk -v mb="$text_mb" -v s="$seconds" 'BEGIN {printf "%.2f", mb / s}')" "$rss"
      [ "$peer" = peer ] && sed 's/^/         /' "$OUT/stdout"
    done
  done
done
echo "MB/s counts the input file's bytes ($text_mb MB: JSON Lines, so text plus a little JSON)."
