#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs every test, then prints the gtest case
# count from the test.xml files Bazel writes, ending with the line
# "N passed, N failed". This is what CI runs (.ci/run).
#
#   bash tools/test.sh                 every leg (below)
#   bash tools/test.sh //framework/... only the main leg, on those targets
#
# Legs of a full run, each counted in the closing line:
#   layering   tools/check_layers.py (one case)
#   asan       the unit tests of //framework/... that link no plugin, under
#              ASan + UBSan (--config=asan, its own output tree;
#              docs/reliability.md), less tests tagged noasan; the
#              model-level tests that link plugins run in the main leg;
#              TVLAB_SKIP_ASAN=1 skips it
#   host_access tools/check_host_access.py (one case)
#   sizes      tools/check_sizes.py: no file over 400 lines, no function over
#              80, in framework/, experiments/ and plugins/ (one case)
#   cuda       //framework/tensor/..., //framework/backend/... and the NCCL
#              reducer's test built and tested with --config=cuda (nvcc,
#              NCCL; GPU cases skip without a GPU), less the CUDA
#              emulator's tests (tag emulated: the main leg has them);
#              it shares the plain build's output tree, so the main leg
#              compiles only gpu_cuda's dependants again; only where
#              /usr/local/cuda/bin/nvcc exists; TVLAB_SKIP_CUDA=1 skips it
#   fuzz       tools/fuzz.sh: the safetensors and grid spec corpora, then TVLAB_FUZZ_SECONDS
#              (default 60) of libFuzzer (one case)
#   main       bazel test //... (in a full run, less the tests the asan leg
#              ran: the same assertions, run there under ASan + UBSan)
#   plugin_copy tools/plugin_copy_check.sh: a plugin folder copied under a
#              new name into a scratch copy of the tree is registered,
#              conformance- and parity-tested with no other edit, and a
#              copy registered under a wrong name fails (one case)
# The main leg and the copy check share one disk cache ($TVLAB_DISK_CACHE,
# default ~/.cache/tvlab/disk_cache), so the scratch tree reuses the main
# build's work.
# Exit status: non-zero when any leg failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || exit 1

# Threads spin-wait in OpenMP by default; on a shared 2-core machine that
# makes a busy neighbour slow everyone down (docs/building.md).
export OMP_WAIT_POLICY=passive

# Target patterns among the arguments (default //...); flags pass through.
patterns=()
flags=()
for a in "$@"; do if [[ "$a" == -* ]]; then flags+=("$a"); else patterns+=("$a"); fi; done
full=0
[ ${#patterns[@]} -gt 0 ] || { full=1; set -- //... "$@"; patterns=(//...); }
query="tests(${patterns[0]})"
for p in "${patterns[@]:1}"; do query="$query + tests($p)"; done

disk_cache=(--disk_cache="${TVLAB_DISK_CACHE:-$HOME/.cache/tvlab/disk_cache}")
status=0
# Wall time of each leg, printed as it ends and again in a summary before
# the closing line.
legs_timed=()
leg_started=$SECONDS
leg_begin() { leg_started=$SECONDS; }
leg_end() {  # name
  local took=$((SECONDS - leg_started))
  legs_timed+=("$1 $took")
  printf 'leg %s: %dm%02ds\n' "$1" $((took / 60)) $((took % 60))
}
extra_passed=0
extra_failed=0
count_leg() {  # name, exit status
  if [ "$2" -eq 0 ]; then extra_passed=$((extra_passed + 1)); else
    echo "leg $1 failed"; extra_failed=$((extra_failed + 1)); status=1; fi
}

# The layering of docs/architecture.md: no package cycle, no upward
# dependency or include.
leg_begin
python3 tools/check_layers.py
count_leg layering $?
leg_end layering
# Tensor data is read on the host only at the framework's edges.
leg_begin
python3 tools/check_host_access.py
count_leg host_access $?
leg_end host_access
leg_begin
python3 tools/check_sizes.py
count_leg sizes $?
leg_end sizes

counts=()  # "testlogs_root targets_file sharded_file" per counted bazel leg
asan_ran=()  # the tests the asan leg ran (the main leg leaves them out)
record_leg() {  # config flags..., then the query; $TESTLOGS_ROOT overrides the root
  local q="${@: -1}" root tag
  root=${TESTLOGS_ROOT:-$(bazel info "${@:1:$#-1}" bazel-testlogs 2>/dev/null)}
  tag=$(echo "$root" | md5sum | cut -c1-8)
  bazel query "$q" 2>/dev/null > "bazel-testlogs-targets-$tag.txt" || true
  bazel query "attr(shard_count, \"^([2-9]|[1-9][0-9]+)\$\", $q)" 2>/dev/null \
    > "bazel-testlogs-sharded-$tag.txt" || true
  counts+=("$root bazel-testlogs-targets-$tag.txt bazel-testlogs-sharded-$tag.txt")
}

# .bazelrc's ASan options with detect_stack_use_after_return=0; fails
# (non-empty message, exit 1) when .bazelrc no longer sets the option, so the
# emulator's tests never run with the rest of the options silently dropped.
asan_options_without_fake_stacks() {
  local opts
  opts=$(sed -n 's/^build:asan --test_env=ASAN_OPTIONS=//p' .bazelrc)
  if [[ "$opts" != *detect_stack_use_after_return=1* ]]; then
    echo "tools/test.sh: .bazelrc's build:asan ASAN_OPTIONS no longer sets detect_stack_use_after_return=1; update asan_options_without_fake_stacks" >&2
    return 1
  fi
  echo "${opts/detect_stack_use_after_return=1/detect_stack_use_after_return=0}"
}
# The sanitizer leg: the framework's unit tests that link no plugin (the
# kernels, tensors, autograd, io, readers, statistics...), so no plugin is
# compiled twice; the tests beside the framework code that link plugins
# (model-level) and the end-to-end tests under //tests/ run in the main leg.
# Tests tagged "noasan" (the slowest of the CUDA emulator's, which the
# emulated conformance suite covers under ASan too) stay out of it.
asan_tests='tests(//framework/...) except attr(tags, noasan, tests(//framework/...))'
asan_tests="$asan_tests except rdeps(tests(//framework/...), //plugins/...)"
if [ $full -eq 1 ] && [ "${TVLAB_SKIP_ASAN:-0}" != 1 ]; then
  leg_begin
  # The CUDA emulator's tests (tag "emulated") run every CUDA thread on a
  # fiber, where ASan's fake stacks for stack-use-after-return cost 3-13x
  # (docs/reliability.md): they run in a second invocation with that one
  # check off; everything else keeps it.
  bazel query "$asan_tests except attr(tags, emulated, tests(//framework/...))" 2>/dev/null \
    > bazel-testlogs-asan-targets.txt
  bazel query "$asan_tests intersect attr(tags, emulated, tests(//framework/...))" 2>/dev/null \
    > bazel-testlogs-asan-emulated.txt
  bazel test --config=asan --build_tests_only --target_pattern_file=bazel-testlogs-asan-targets.txt
  [ $? -eq 0 ] || status=1
  if emulated_asan_options=$(asan_options_without_fake_stacks); then
    bazel test --config=asan --build_tests_only --target_pattern_file=bazel-testlogs-asan-emulated.txt \
      --test_env=ASAN_OPTIONS="$emulated_asan_options"
    [ $? -eq 0 ] || status=1
  else
    status=1
  fi
  # The main leg does not run these again (below).
  mapfile -t asan_ran < <(cat bazel-testlogs-asan-targets.txt bazel-testlogs-asan-emulated.txt)
  rm -f bazel-testlogs-asan-targets.txt bazel-testlogs-asan-emulated.txt
  record_leg --config=asan "$asan_tests"
  leg_end asan
fi
# The CUDA leg: the GPU backend compiles and its tests skip cleanly here.
cuda_targets=(//framework/tensor/... //framework/backend/... //framework/distributed:nccl_reducer_test)
if [ $full -eq 1 ] && [ "${TVLAB_SKIP_CUDA:-0}" != 1 ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  # The CUDA emulator's tests (tag "emulated") do not depend on
  # --config=cuda: the main leg runs them, this one neither builds nor runs them.
  leg_begin
  # --config=cuda shares the plain build's output tree (.bazelrc), so the
  # main leg reuses every object this leg compiles but gpu_cuda's. The two
  # legs' test logs share it too: this leg's are copied aside before the
  # main leg overwrites them.
  bazel test "${disk_cache[@]}" --config=cuda --build_tests_only --test_tag_filters=-emulated \
    "${cuda_targets[@]}"
  [ $? -eq 0 ] || status=1
  rm -rf bazel-cuda-testlogs && mkdir bazel-cuda-testlogs &&
    (cd bazel-testlogs && cp -r --parents framework/tensor framework/backend \
       framework/distributed "$OLDPWD/bazel-cuda-testlogs")
  cuda_tests="tests(${cuda_targets[0]}) + tests(${cuda_targets[1]}) + tests(${cuda_targets[2]})"
  TESTLOGS_ROOT="$PWD/bazel-cuda-testlogs" \
    record_leg --config=cuda "($cuda_tests) except attr(tags, emulated, $cuda_tests)"
  leg_end cuda
fi
if [ $full -eq 1 ]; then
  leg_begin
  FUZZ_SECONDS=${TVLAB_FUZZ_SECONDS:-60} bash tools/fuzz.sh
  count_leg fuzz $?
  leg_end fuzz
fi

leg_begin
if [ ${#asan_ran[@]} -gt 0 ]; then
  # A full run's main leg leaves out the tests the asan leg ran: the same
  # assertions, there under ASan and UBSan at -O1 (and -O1 and -O3 give the
  # same floating-point results: no -ffast-math, no FMA contraction).
  excluded=()
  for t in "${asan_ran[@]}"; do excluded+=("-$t"); done
  echo "main leg: all tests less the ${#asan_ran[@]} the asan leg ran"
  bazel test "${disk_cache[@]}" ${flags[@]+"${flags[@]}"} -- //... "${excluded[@]}"
  [ $? -eq 0 ] || status=1
  query="$query except ($asan_tests)"
else
  bazel test "${disk_cache[@]}" "$@"
  [ $? -eq 0 ] || status=1
fi
record_leg ${flags[@]+"${flags[@]}"} "$query"
leg_end main
if [ $full -eq 1 ]; then
  leg_begin
  TVLAB_BAZEL_FLAGS="${disk_cache[*]}" bash tools/plugin_copy_check.sh &&
    ! TVLAB_BAZEL_FLAGS="${disk_cache[*]}" bash tools/plugin_copy_check.sh --break
  count_leg plugin_copy $?
  leg_end plugin_copy
fi

echo "wall time per leg (total ${SECONDS}s, setup included):"
for l in "${legs_timed[@]}"; do
  set -- $l
  printf '  %-12s %4dm%02ds\n' "$1" $(($2 / 60)) $(($2 % 60))
done

export TVLAB_EXTRA_PASSED=$extra_passed TVLAB_EXTRA_FAILED=$extra_failed
printf '%s\n' "${counts[@]}" > bazel-testlogs-legs.txt
python3 - <<'PY'
import glob, os, xml.etree.ElementTree as ET
passed = int(os.environ["TVLAB_EXTRA_PASSED"])
failed = int(os.environ["TVLAB_EXTRA_FAILED"])
skipped = 0
paths = []
for leg in open("bazel-testlogs-legs.txt").read().splitlines():
    root, targets_file, sharded_file = leg.split()
    # Count only the current test targets' results: testlogs keep files of
    # targets (and shardings) that no longer exist.
    sharded = set(open(sharded_file).read().split())
    for label in open(targets_file).read().split():
        package, name = label.lstrip("/").split(":")
        folder = os.path.join(root, package, name)
        if label in sharded:
            found = glob.glob(os.path.join(folder, "shard_*", "test.xml"))
        else:
            found = glob.glob(os.path.join(folder, "test.xml"))
        if not found:  # did not build, or did not run: a failure, not silence
            print(f"no test results for {label} in {root}")
            failed += 1
        paths += found
    os.remove(targets_file)
    os.remove(sharded_file)
os.remove("bazel-testlogs-legs.txt")
for path in paths:
    try:
        tree = ET.parse(path)
    except ET.ParseError:
        failed += 1
        continue
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.get("result") == "skipped" or case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
tail = f", {skipped} skipped" if skipped else ""
print(f"{passed} passed, {failed} failed{tail}")
PY
exit $status
