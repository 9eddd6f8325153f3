#!/usr/bin/env bash
# tools/gpu_check.sh on a machine without a GPU must fail loudly: non-zero
# exit, a message that says there is no GPU, and a summary.json that says
# it did not pass. Both ways a machine can lack one: no nvidia-smi at all,
# and an nvidia-smi that finds no device (as on a driver without a GPU).
# Then the script's plumbing end to end on a pretend GPU (an nvidia-smi stub
# and stub binaries in BIN_DIR, PREBUILT=1): every step runs, the compare
# steps read the runs, the summary holds the measured numbers; and a GPU run
# whose losses differ from the CPU's makes it fail. Then BUNDLE (binaries
# packed by tools/gpu_bundle.sh): a bundle runs like PREBUILT=1, one built
# for another compute capability is refused, and a binary whose shared
# library is nowhere to be found stops the check before any step, naming
# the library. No GPU code runs here.
set -uo pipefail
SCRIPT=tools/gpu_check.sh
TMP=${TEST_TMPDIR:-$(mktemp -d)}
failures=0
passed=0

expect_loud_failure() {  # label, nvidia-smi command, expected message fragment
  local label=$1 smi=$2 fragment=$3 out=$TMP/$1
  local output rc before=$failures
  output=$(NVIDIA_SMI=$smi bash "$SCRIPT" "$out" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then echo "FAIL $label: exit 0 without a GPU"; failures=$((failures + 1)); fi
  if ! grep -q "$fragment" <<< "$output"; then
    echo "FAIL $label: no '$fragment' in the output:"; echo "$output"; failures=$((failures + 1))
  fi
  if ! grep -q '"passed": false' "$out/summary.json" 2>/dev/null; then
    echo "FAIL $label: summary.json missing or not failed"; failures=$((failures + 1))
  fi
  if ! grep -q "FAILED at gpu" "$out/gpu_check.log" 2>/dev/null; then
    echo "FAIL $label: the log does not record the failure"; failures=$((failures + 1))
  fi
  if [ "$failures" -eq "$before" ]; then echo "ok $label (exit $rc)"; passed=$((passed + 1)); fi
}

expect_loud_failure no_nvidia_smi /nonexistent/nvidia-smi "nvidia-smi not found: this machine has no NVIDIA driver"
STUB=$TMP/nvidia-smi-no-device
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' > "$STUB"
chmod +x "$STUB"
expect_loud_failure no_device "$STUB" "nvidia-smi lists no usable GPU: No devices were found"

# --- the plumbing on a pretend GPU -------------------------------------------
FAKE=$TMP/fake
mkdir -p "$FAKE/bin/experiments"
printf '#!/bin/sh\ncase "$*" in *compute_cap*) echo "9.0" ;; *) echo "NVIDIA H200, 143771 MiB, 580.159.03" ;; esac\n' > "$FAKE/nvidia-smi"
# A passing stand-in for every test binary the check runs.
for t in $(bash tools/gpu_check.sh --targets | grep -v '^//experiments:run$'); do
  path=${t#//}
  mkdir -p "$(dirname "$FAKE/bin/${path/://}")"
  printf '#!/bin/sh\necho "[  PASSED  ] 1 test."\n' > "$FAKE/bin/${path/://}"
done
# A stand-in for experiments/run: writes train_log.csv and metrics.json like
# a real run; the loss on gpu_cuda is off by $GPU_LOSS_OFFSET.
cat > "$FAKE/bin/experiments/run" <<'PY'
#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--output_dir") + 1]
sets = dict(a.split("=", 1) for i, a in enumerate(args) if i and args[i - 1] == "--set")
steps = int(sets.get("train.steps", "5"))
offset = float(os.environ.get("GPU_LOSS_OFFSET", "0")) if sets.get("runtime.backend") == "gpu_cuda" else 0.0
os.makedirs(out, exist_ok=True)
with open(out + "/train_log.csv", "w") as f:
    f.write("step,loss,lr,grad_norm,tokens_per_sec,elapsed_sec,eval_loss,eval_token_accuracy\n")
    for s in range(1, steps + 1):
        f.write(f"{s},{2.0 - 0.001 * s + offset},0.001,1.0,100,{0.25 * s},,\n")
json.dump({"token_accuracy": 0.95, "parameters": 86000000}, open(out + "/metrics.json", "w"))
PY
chmod +x "$FAKE/nvidia-smi" "$FAKE"/bin/experiments/run
find "$FAKE/bin/framework" -type f -exec chmod +x {} +

output=$(NVIDIA_SMI=$FAKE/nvidia-smi PREBUILT=1 BIN_DIR=$FAKE/bin BENCH_STEPS=3 MODEL_CONFIGS="configs/sort_digits.pbtxt configs/lm_copy.pbtxt" bash "$SCRIPT" "$TMP/pretend" 2>&1)
rc=$?
summary=$TMP/pretend/summary.json
if [ "$rc" -eq 0 ] && grep -q '"passed": true' "$summary" && grep -q '"mfu"' "$summary" &&
   grep -q '"loss_curve_max_abs_diff": 0.0' "$summary" && grep -q 'sm_90' "$summary" &&
   grep -q 'MFU' <<< "$output"; then
  echo "ok pretend_gpu"; passed=$((passed + 1))
else
  echo "FAIL pretend_gpu (exit $rc):"; echo "$output"; cat "$summary" 2>/dev/null
fi
# tokens/s = 8 x 1024 / 0.25 s; MFU = that x (6 x 86e6 + 12 x 12 x 768 x 1024) / 989e12.
if python3 - "$summary" <<'PY'
import json, sys
bench = json.load(open(sys.argv[1]))["measured"]["gpt2_124m_shape"]
want_tps = 8 * 1024 / 0.25
want_mfu = want_tps * (6 * 86e6 + 12 * 12 * 768 * 1024) / 989e12
assert abs(bench["tokens_per_second"] - want_tps) < 1e-6 * want_tps, bench
assert abs(bench["mfu"] - want_mfu) < 1e-9, bench
PY
then echo "ok pretend_gpu_numbers"; passed=$((passed + 1)); else echo "FAIL pretend_gpu_numbers"; fi

output=$(GPU_LOSS_OFFSET=0.01 NVIDIA_SMI=$FAKE/nvidia-smi PREBUILT=1 BIN_DIR=$FAKE/bin BENCH_STEPS=3 \
         MODEL_CONFIGS="configs/sort_digits.pbtxt" bash "$SCRIPT" "$TMP/mismatch" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -q "sort_digits_compare" <<< "$output" &&
   grep -q "MISMATCH" "$TMP/mismatch/models_gpu_vs_cpu.out" &&
   grep -q '"passed": false' "$TMP/mismatch/summary.json"; then
  echo "ok loss_mismatch_fails"; passed=$((passed + 1))
else
  echo "FAIL loss_mismatch_fails (exit $rc):"; echo "$output"
fi

# --- BUNDLE: binaries packed elsewhere (tools/gpu_bundle.sh's layout) ---------
make_bundle() {  # dir, cuda_arch -> dir/bundle.tgz holding the stub binaries
  mkdir -p "$1/stage"
  cp -r "$FAKE/bin" "$1/stage/bin"
  mkdir -p "$1/stage/lib"
  printf 'commit=test\ncuda_arch=%s\n' "$2" > "$1/stage/MANIFEST"
  tar czf "$1/bundle.tgz" -C "$1/stage" .
}
make_bundle "$TMP/bundle90" 90
output=$(NVIDIA_SMI=$FAKE/nvidia-smi BUNDLE=$TMP/bundle90/bundle.tgz BENCH_STEPS=3 \
         MODEL_CONFIGS="configs/sort_digits.pbtxt" bash "$SCRIPT" "$TMP/bundled" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q '"step": "bundle"' "$TMP/bundled/summary.json" &&
   grep -q '"passed": true' "$TMP/bundled/summary.json" &&
   [ -x "$TMP/bundled/bundle/bin/experiments/run" ]; then
  echo "ok bundle_runs"; passed=$((passed + 1))
else
  echo "FAIL bundle_runs (exit $rc):"; echo "$output"
fi

make_bundle "$TMP/bundle80" 80
output=$(NVIDIA_SMI=$FAKE/nvidia-smi BUNDLE=$TMP/bundle80/bundle.tgz bash "$SCRIPT" "$TMP/wrong_arch" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && grep -q "the bundle was built for sm_80, this GPU is sm_90" <<< "$output"; then
  echo "ok bundle_for_another_gpu_fails"; passed=$((passed + 1))
else
  echo "FAIL bundle_for_another_gpu_fails (exit $rc):"; echo "$output"
fi

# A binary that needs a library nowhere to be found: the check stops before
# running anything and names the library.
NOLIB=$TMP/nolib
mkdir -p "$NOLIB/src"
cp -r "$FAKE/bin" "$NOLIB/bin"
if printf 'int tvlab_absent(void) { return 1; }\n' > "$NOLIB/src/absent.c" &&
   cc -shared -fPIC -o "$NOLIB/src/libtvlab_absent.so" "$NOLIB/src/absent.c" &&
   printf 'int tvlab_absent(void);\nint main(void) { return tvlab_absent(); }\n' > "$NOLIB/src/main.c" &&
   cc -o "$NOLIB/bin/framework/backend/gpu_cuda/philox_host_test" "$NOLIB/src/main.c" -L"$NOLIB/src" -ltvlab_absent &&
   rm "$NOLIB/src/libtvlab_absent.so"; then
  output=$(NVIDIA_SMI=$FAKE/nvidia-smi PREBUILT=1 BIN_DIR=$NOLIB/bin bash "$SCRIPT" "$TMP/nolib_out" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "the binaries need libtvlab_absent.so" <<< "$output" &&
     grep -q '"step": "libraries"' "$TMP/nolib_out/summary.json" &&
     [ ! -e "$TMP/nolib_out/test_backend_conformance_test.out" ]; then
    echo "ok missing_library_fails"; passed=$((passed + 1))
  else
    echo "FAIL missing_library_fails (exit $rc):"; echo "$output"
  fi
else
  echo "FAIL missing_library_fails: could not build the test binary with cc"
fi

echo "$passed passed, $((8 - passed)) failed"
[ "$passed" -eq 8 ]
