#!/usr/bin/env bash
# Builds the libFuzzer target for the safetensors reader with clang
# (-fsanitize=fuzzer,address,undefined; UB is fatal), replays the checked-in
# seed corpus, then fuzzes for a bounded time.
#
#   tools/fuzz.sh                 # corpus + 60 s of fuzzing
#   FUZZ_SECONDS=600 tools/fuzz.sh
#   FUZZ_SECONDS=0 tools/fuzz.sh  # corpus only
#
# Exit status: 0 when nothing crashed; non-zero otherwise, with the
# reproducer left in $FUZZ_DIR/crashes/ (default bazel-fuzz/, git-ignored).
# Replay one with: $FUZZ_DIR/safetensors_fuzzer <file>. A fixed crash
# belongs in framework/train/fuzz/corpus/ as a regression file.
#
# Why not Bazel: the auto-configured C++ toolchain is gcc, and switching it to
# clang for one target reconfigures the whole workspace (a full rebuild each
# way); the fuzzer needs only three source files.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_DIR=${FUZZ_DIR:-bazel-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
CXX=${FUZZ_CXX:-clang++}
CORPUS=framework/train/fuzz/corpus
mkdir -p "$FUZZ_DIR/crashes" "$FUZZ_DIR/work"

command -v "$CXX" >/dev/null || { echo "fuzz.sh: $CXX not found (apt-get install clang)" >&2; exit 2; }

libs=$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format protobuf)
echo "building $FUZZ_DIR/safetensors_fuzzer"
# shellcheck disable=SC2086
"$CXX" -std=c++17 -O1 -g -fno-omit-frame-pointer -I. \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  framework/train/fuzz/safetensors_fuzzer.cc framework/train/safetensors_parse.cc \
  framework/tensor/tensor.cc framework/tensor/device_memory.cc \
  -o "$FUZZ_DIR/safetensors_fuzzer" $libs

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
flags=(-artifact_prefix="$FUZZ_DIR/crashes/" -timeout=10 -rss_limit_mb=2048 -max_len=65536)

echo "replaying $(ls "$CORPUS" | wc -l) seed files from $CORPUS"
"$FUZZ_DIR/safetensors_fuzzer" "${flags[@]}" "$CORPUS"/*

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  echo "fuzzing for $FUZZ_SECONDS s (new inputs in $FUZZ_DIR/work)"
  "$FUZZ_DIR/safetensors_fuzzer" "${flags[@]}" -max_total_time="$FUZZ_SECONDS" \
    -dict=framework/train/fuzz/safetensors.dict "$FUZZ_DIR/work" "$CORPUS"
fi
echo "fuzz.sh: no crash"
