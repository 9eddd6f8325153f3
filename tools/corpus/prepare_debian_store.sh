#!/usr/bin/env bash
# Prepares the offline Debian corpus (docs/corpus.md) into the token store
# that configs/lm_corpus.pbtxt trains on: builds the corpus first when it is
# missing or out of date (tools/corpus/build_debian_corpus.sh, about a
# second when it is current), then runs //experiments:prepare on it with a
# SentencePiece model of 4,096 pieces trained on its first 20 MB of training
# text, documents as the corpus's records, split 98 / 1 / 1 % by a hash of
# each document. Replaces an existing store at the output.
#
#   bash tools/corpus/prepare_debian_store.sh [STORE_DIR]
#
# STORE_DIR defaults to configs/data/debian_corpus_store (not in the
# repository; the path configs/lm_corpus.pbtxt names).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
corpus="${XDG_CACHE_HOME:-$HOME/.cache}/tvlab/corpus"
store=$(realpath -m "${1:-$root/configs/data/debian_corpus_store}")
bash "$root/tools/corpus/build_debian_corpus.sh" "$corpus"
cd "$root"
started=$SECONDS
bazel run //experiments:prepare -- --input "$corpus/corpus.jsonl" --output "$store" --overwrite \
  --tokenizer sentencepiece --spm_vocab_size 4096 \
  --train_fraction 0.98 --validation_fraction 0.01 --test_fraction 0.01 --threads "$(nproc)"
echo "prepare_debian_store: $((SECONDS - started)) s; store: $store (manifest.json)"
