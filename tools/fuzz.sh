#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined;
# UB is fatal), replays each one's checked-in seed corpus, then fuzzes each
# for a bounded time:
#   safetensors_fuzzer  the safetensors reader (framework/train/fuzz/)
#   grid_spec_fuzzer    the grid spec: text format, size bound, axis
#                       expansion (experiments/grid/fuzz/)
#   hf_config_fuzzer    an HF directory's config.json as --init_from checks
#                       it (experiments/hf/fuzz/)
#
#   tools/fuzz.sh                 # corpora + 60 s of fuzzing, split evenly between the targets
#   FUZZ_SECONDS=600 tools/fuzz.sh
#   FUZZ_SECONDS=0 tools/fuzz.sh  # corpora only
#
# Exit status: 0 when nothing crashed; non-zero otherwise, with the
# reproducer left in $FUZZ_DIR/crashes/ (default bazel-fuzz/, git-ignored).
# Replay one with: $FUZZ_DIR/<target> <file>. A fixed crash belongs in the
# target's corpus/ as a regression file.
#
# Why not Bazel: the auto-configured C++ toolchain is gcc, and switching it to
# clang for one target reconfigures the whole workspace (a full rebuild each
# way); each fuzzer needs only a few source files (and protoc's output).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_DIR=${FUZZ_DIR:-bazel-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
CXX=${FUZZ_CXX:-clang++}
mkdir -p "$FUZZ_DIR/crashes" "$FUZZ_DIR/gen"

command -v "$CXX" >/dev/null || { echo "fuzz.sh: $CXX not found (apt-get install clang)" >&2; exit 2; }

# absl_raw_hash_set and absl_hash: framework/tensor's allocator keeps its
# live blocks in an absl::flat_hash_map.
libs=$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format absl_raw_hash_set absl_hash protobuf)
cxxflags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -I. -I"$FUZZ_DIR/gen"
          -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)

protoc --cpp_out="$FUZZ_DIR/gen" framework/schema/experiment.proto framework/schema/grid.proto \
  framework/train/metrics.proto

# Each fuzzer's sources. The grid spec fuzzer has the expansion's size bound,
# the hypotheses' checks (which name metrics: run_dir.cc's CheckMetricName),
# the size ladder's rungs and report_probes. framework/tensor's allocator
# keeps its live blocks in an absl::flat_hash_map (absl_raw_hash_set above).
gen="$FUZZ_DIR/gen"
safetensors_srcs=(framework/train/fuzz/safetensors_fuzzer.cc framework/train/safetensors_parse.cc
  framework/tensor/tensor.cc framework/tensor/device_memory.cc)
grid_spec_srcs=(experiments/grid/fuzz/grid_spec_fuzzer.cc experiments/grid/expand/grid_axes.cc
  experiments/grid/expand/hypotheses.cc experiments/grid/expand/ladder_rungs.cc
  experiments/grid/expand/report_probes.cc framework/report/run_dir.cc
  "$gen/framework/schema/experiment.pb.cc" "$gen/framework/schema/grid.pb.cc"
  "$gen/framework/train/metrics.pb.cc")
hf_config_srcs=(experiments/hf/fuzz/hf_config_fuzzer.cc experiments/hf/hf_config_checks.cc
  "$gen/framework/schema/experiment.pb.cc")

# Every source compiles once, two at a time (CI has two cores), then each
# fuzzer links its objects.
object_of() { local o="${1#"$gen"/}"; echo "$FUZZ_DIR/obj/${o%.cc}.o"; }
compile_one() {  # SOURCE
  local o; o=$(object_of "$1"); mkdir -p "$(dirname "$o")"
  "$CXX" "${cxxflags[@]}" -c "$1" -o "$o" || { echo "fuzz.sh: compiling $1 failed" >&2; return 1; }
}
export -f compile_one object_of
export CXX FUZZ_DIR gen
export CXXFLAGS_FUZZ="${cxxflags[*]}"
printf '%s\n' "${safetensors_srcs[@]}" "${grid_spec_srcs[@]}" "${hf_config_srcs[@]}" | sort -u |
  xargs -P 2 -I{} bash -c 'cxxflags=($CXXFLAGS_FUZZ); compile_one "$1"' _ {}
link() {  # TARGET SOURCES...
  local target="$1" objects=() s; shift
  for s in "$@"; do objects+=("$(object_of "$s")"); done
  echo "building $FUZZ_DIR/$target"
  # shellcheck disable=SC2086
  "$CXX" "${cxxflags[@]}" "${objects[@]}" -o "$FUZZ_DIR/$target" $libs
}
link safetensors_fuzzer "${safetensors_srcs[@]}"
link grid_spec_fuzzer "${grid_spec_srcs[@]}"
link hf_config_fuzzer "${hf_config_srcs[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
flags=(-artifact_prefix="$FUZZ_DIR/crashes/" -timeout=10 -rss_limit_mb=2048 -max_len=65536)
# The three fuzzers run at once on two cores for FUZZ_SECONDS / 2 of wall
# time: about FUZZ_SECONDS / 3 of CPU time each, FUZZ_SECONDS in all. Each
# one's output goes to $FUZZ_DIR/<target>.log, printed when it ends.
seconds_each=$((FUZZ_SECONDS / 2))

fuzz() {  # TARGET CORPUS [DICT]
  local target="$1" corpus="$2" dict=()
  [ -n "${3:-}" ] && dict=(-dict="$3")
  echo "$target: replaying $(ls "$corpus" | wc -l) seed files from $corpus"
  "$FUZZ_DIR/$target" "${flags[@]}" "$corpus"/* || return 1
  if [ "$seconds_each" -gt 0 ]; then
    echo "$target: fuzzing for $seconds_each s (new inputs in $FUZZ_DIR/work_$target)"
    mkdir -p "$FUZZ_DIR/work_$target"
    "$FUZZ_DIR/$target" "${flags[@]}" -max_total_time="$seconds_each" "${dict[@]}" \
      "$FUZZ_DIR/work_$target" "$corpus"
  fi
}
targets=(safetensors_fuzzer grid_spec_fuzzer hf_config_fuzzer)
fuzz safetensors_fuzzer framework/train/fuzz/corpus framework/train/fuzz/safetensors.dict \
  > "$FUZZ_DIR/safetensors_fuzzer.log" 2>&1 &
pids=($!)
fuzz grid_spec_fuzzer experiments/grid/fuzz/corpus experiments/grid/fuzz/grid_spec.dict \
  > "$FUZZ_DIR/grid_spec_fuzzer.log" 2>&1 &
pids+=($!)
fuzz hf_config_fuzzer experiments/hf/fuzz/corpus experiments/hf/fuzz/hf_config.dict \
  > "$FUZZ_DIR/hf_config_fuzzer.log" 2>&1 &
pids+=($!)
crashed=0
for i in 0 1 2; do
  if wait "${pids[$i]}"; then
    grep -E '^(Done|.*: (replaying|fuzzing))' "$FUZZ_DIR/${targets[$i]}.log"
  else
    cat "$FUZZ_DIR/${targets[$i]}.log"
    echo "fuzz.sh: ${targets[$i]} failed (its log above; reproducer in $FUZZ_DIR/crashes/)" >&2
    crashed=1
  fi
done
[ "$crashed" -eq 0 ] || exit 1
echo "fuzz.sh: no crash"
