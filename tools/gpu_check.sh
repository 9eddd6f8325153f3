#!/usr/bin/env bash
# The prepared device check of the GPU path (issue #17; docs/gpu.md), in one
# run on a machine with an NVIDIA GPU, in under 8 minutes on an H200:
#   a. the GPU: nvidia-smi must list one, else this fails at once, saying so;
#   b. build with --config=cuda for the GPU's compute capability;
#   c. the backend conformance suite (every kernel of gpu_cuda against the
#      reference, fused attention and dropout included), the GPU backend's
#      own tests, autograd's per-op tests on every backend, and every
#      configs/*.pbtxt model trained a few steps on gpu_cuda and on the CPU
#      (same seed: the losses must agree);
#   d. configs/sort_digits.pbtxt trained in full on gpu_cuda and on the CPU:
#      token accuracy within seed noise, loss curve within 1e-3 over its
#      first half and 2.5e-3 over all of it (fp32; see step d);
#   e. a GPT-2-124M-shaped decoder (bench/configs/gpt2_124m_shape.pbtxt) for
#      a few steps: tokens/s, step time and MFU against the dense bf16 peak;
#   f. a log and summary.json in the directory it prints first.
# Exit status 0 only when every step passed.
#
# usage: tools/gpu_check.sh [OUT_DIR]
# environment (all optional):
#   CUDA_ARCH     compute capability without the dot, e.g. 90; default: from
#                 nvidia-smi (compute_cap), else 90
#   PRECISION     runtime.precision of the benchmark (step e): bf16 (default,
#                 the issue's target), tf32 or fp32. The training comparisons
#                 against the CPU (steps c, d) always run in fp32.
#   PEAK_TFLOPS   the chip's dense bf16 peak for MFU; default 989 (NVIDIA's
#                 H100/H200 SXM datasheet: 1,979 TFLOP/s bf16 with 2:4
#                 sparsity, half of it dense)
#   BENCH_STEPS   timed benchmark steps (default 8, after 2 warm-up steps)
#   PREBUILT=1    skip step b and use the binaries already in BIN_DIR (built
#                 with --config=cuda elsewhere, e.g. where Bazel is installed)
#   BIN_DIR       where the binaries are (default: bazel-bin)
#   MODEL_CONFIGS the specs step c trains on both devices (default:
#                 configs/*.pbtxt)
#   BAZEL         the bazel command (default: bazel)
#   NVIDIA_SMI    the nvidia-smi command (default: nvidia-smi; the test points
#                 it at stubs)
#   BUDGET_SECONDS  the whole check's time limit (default 470): every step's
#                 timeout is cut to what is left of it, and a step with no time
#                 left fails, so the check ends in under 8 minutes
#   BUNDLE        a bundle.tgz made by tools/gpu_bundle.sh (the binaries built
#                 elsewhere and the Debian libraries they load): unpacked into
#                 OUT_DIR/bundle, it stands for PREBUILT=1 BIN_DIR=...; for a
#                 GPU machine without Bazel or those libraries
# tools/gpu_check.sh --targets prints the Bazel targets the check runs (what
# tools/gpu_bundle.sh builds) and exits.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TESTS=(//framework/backend:backend_conformance_test //framework/backend/gpu_cuda:gpu_cuda_backend_test
       //framework/backend/gpu_cuda:gpu_cuda_kernels_test //framework/backend:precision_conformance_test
       //framework/backend/gpu_cuda:philox_host_test //framework/backend/gpu_cuda:fused_attention_emulated_test
       //framework/autograd:ops_test)
if [ "${1:-}" = --targets ]; then
  printf '%s\n' //experiments:run "${TESTS[@]}"
  exit 0
fi
OUT=${1:-/tmp/tvlab_gpu_check_$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || { echo "gpu_check: cannot create $OUT" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/gpu_check.log
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1
echo "gpu_check: log and summary.json go to $OUT"
START=$(date +%s)
PRECISION=${PRECISION:-bf16}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
BENCH_STEPS=${BENCH_STEPS:-8}
BAZEL=${BAZEL:-bazel}
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
DEADLINE=$(( START + ${BUDGET_SECONDS:-470} ))
STEPS_TSV=$OUT/steps.tsv  # name, status, seconds, detail (summary.json is made from it)
: > "$STEPS_TSV"

record() {  # name status seconds detail
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >> "$STEPS_TSV"
  echo "gpu_check: [$2] $1 (${3}s) $4"
}

write_summary() {
  python3 - "$STEPS_TSV" "$OUT/summary.json" "$OUT" "$(( $(date +%s) - START ))" <<'PY' ||
import json, sys
steps_tsv, path, out, seconds = sys.argv[1:5]
steps, extra = [], {}
for line in open(steps_tsv):
    name, status, secs, detail = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    steps.append({"step": name, "status": status, "seconds": float(secs or 0), "detail": detail})
try:
    extra = json.load(open(out + "/measured.json"))
except (OSError, ValueError):
    pass
summary = {"passed": bool(steps) and all(s["status"] in ("pass", "skip") for s in steps),
           "seconds": int(seconds), "steps": steps, "measured": extra}
json.dump(summary, open(path, "w"), indent=2)
print(f"gpu_check: summary in {path}")
PY
  echo "gpu_check: python3 missing, summary.json not written (steps are in $STEPS_TSV)"
}

fail_now() {  # a step the rest cannot do without
  record "$1" fail "$2" "$3"
  write_summary
  echo "gpu_check: FAILED at $1: $3" >&2
  exit 1
}

# run_step NAME TIMEOUT_SECONDS COMMAND...: runs with a timeout, records it.
run_step() {
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s) rc
  local left=$(( DEADLINE - t0 ))
  if [ "$left" -lt 5 ]; then
    record "$name" fail 0 "not run: the ${BUDGET_SECONDS:-470}s budget is spent"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.out" 2>&1
  rc=$?
  local secs=$(( $(date +%s) - t0 ))
  tail -n 15 "$OUT/$name.out" | sed "s/^/  $name| /"
  if [ $rc -eq 0 ]; then
    record "$name" pass "$secs" ""
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    record "$name" fail "$secs" "timed out after ${limit}s"
  else
    record "$name" fail "$secs" "exit $rc (see $OUT/$name.out)"
  fi
  return $rc
}

# --- a. the GPU -------------------------------------------------------------
if ! command -v "$NVIDIA_SMI" > /dev/null 2>&1; then
  fail_now gpu 0 "nvidia-smi not found: this machine has no NVIDIA driver, so no GPU to check. Run tools/gpu_check.sh on a GPU machine (docs/gpu.md)."
fi
if ! GPU=$(timeout 30 "$NVIDIA_SMI" --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1) ||
   [ -z "$GPU" ]; then
  fail_now gpu 0 "nvidia-smi lists no usable GPU: ${GPU:-no output}"
fi
echo "gpu_check: GPU: $GPU"
if [ -z "${CUDA_ARCH:-}" ]; then
  CAP=$(timeout 30 "$NVIDIA_SMI" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  if [[ "$CAP" =~ ^[0-9]+$ ]]; then CUDA_ARCH=$CAP; else
    CUDA_ARCH=90
    echo "gpu_check: nvidia-smi did not report compute_cap; assuming sm_90 (set CUDA_ARCH to override)"
  fi
fi
record gpu pass 0 "$GPU; sm_$CUDA_ARCH"

# --- b. build (or a bundle built elsewhere) -------------------------------------
CUDA_FLAGS=(--config=cuda "--define=cuda_arch=$CUDA_ARCH")
if [ -n "${BUNDLE:-}" ]; then
  [ -f "$BUNDLE" ] || fail_now bundle 0 "BUNDLE=$BUNDLE: no such file (make it with tools/gpu_bundle.sh)"
  rm -rf "$OUT/bundle" && mkdir -p "$OUT/bundle" && tar xzf "$BUNDLE" -C "$OUT/bundle" ||
    fail_now bundle 0 "BUNDLE=$BUNDLE: cannot unpack it into $OUT/bundle"
  cat "$OUT/bundle/MANIFEST" 2>/dev/null | sed 's/^/gpu_check: bundle: /'
  BUILT_ARCH=$(sed -n 's/^cuda_arch=//p' "$OUT/bundle/MANIFEST" 2>/dev/null)
  [ -n "$BUILT_ARCH" ] && [ "$BUILT_ARCH" != "$CUDA_ARCH" ] &&
    fail_now bundle 0 "the bundle was built for sm_$BUILT_ARCH, this GPU is sm_$CUDA_ARCH: rebuild it with CUDA_ARCH=$CUDA_ARCH tools/gpu_bundle.sh"
  PREBUILT=1
  BIN_DIR=$OUT/bundle/bin
  export LD_LIBRARY_PATH=$OUT/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The tokenizer's dlopen'ed shim, from the bundle (no runfiles there).
  [ -f "$OUT/bundle/lib/libtvlab_sentencepiece.so" ] &&
    export TVLAB_SENTENCEPIECE_SHIM=$OUT/bundle/lib/libtvlab_sentencepiece.so
  record bundle pass 0 "$BUNDLE unpacked; sm_${BUILT_ARCH:-?}"
fi
if [ "${PREBUILT:-0}" = 1 ]; then
  record build skip 0 "PREBUILT=1: using the binaries in ${BIN_DIR:-bazel-bin}"
else
  command -v "$BAZEL" > /dev/null 2>&1 ||
    fail_now build 0 "$BAZEL not found: install it (tools/setup.sh) or build elsewhere with --config=cuda --define=cuda_arch=$CUDA_ARCH and rerun with PREBUILT=1"
  run_step build 300 "$BAZEL" build "${CUDA_FLAGS[@]}" //experiments:run "${TESTS[@]}" ||
    fail_now build 0 "bazel build --config=cuda failed (see $OUT/build.out)"
fi
BIN=${BIN_DIR:-$ROOT/bazel-bin}
RUN=$BIN/experiments/run
[ -x "$RUN" ] || fail_now build 0 "$RUN missing"

# Every shared library the binaries load must resolve. CUDA's own (cudart,
# cuBLAS, cuBLASLt, NCCL) are the GPU machine's: where the loader does not
# know them, they are looked for in the CUDA toolkit and in Python's
# site-packages (the nvidia-* wheels PyTorch brings), and their folders are
# added to LD_LIBRARY_PATH.
BINARIES=("$RUN")
for t in "${TESTS[@]}"; do path=${t#//}; BINARIES+=("$BIN/${path/://}"); done
[ -n "${TVLAB_SENTENCEPIECE_SHIM:-}" ] && BINARIES+=("$TVLAB_SENTENCEPIECE_SHIM")
missing_libraries() { ldd "${BINARIES[@]}" 2>/dev/null | awk '/not found/ {print $1}' | sort -u; }
if command -v ldd > /dev/null 2>&1; then
  SEARCH=(/usr/local/cuda/ /usr/lib/x86_64-linux-gnu/)
  for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    [ -d "$d/nvidia" ] && SEARCH+=("$d/nvidia/")
  done
  for name in $(missing_libraries); do
    found=$(find "${SEARCH[@]}" -maxdepth 4 -name "$name" -print -quit 2>/dev/null)
    [ -n "$found" ] && export LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
  MISSING=$(missing_libraries | tr '\n' ' ')
  [ -n "$MISSING" ] &&
    fail_now libraries 0 "the binaries need ${MISSING}and none was found (searched the loader's path and ${SEARCH[*]}): install them, or pack them with tools/gpu_bundle.sh"
  record libraries pass 0 "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
fi

# --- c. conformance and model-level tests on the GPU ----------------------------
for t in "${TESTS[@]}"; do
  path=${t#//}; path=${path/://}
  # gtest's own skip lines say when gpu_cuda was not usable: that is a failure here.
  run_step "test_$(basename "$path")" 120 "$BIN/$path"
  if grep -q "has no usable device here\|cudaGetDeviceCount" "$OUT/test_$(basename "$path").out"; then
    record "test_$(basename "$path")_on_gpu" fail 0 "gpu_cuda was skipped: no usable device seen by the test"
  fi
done

# Every configs/*.pbtxt, 3 steps on gpu_cuda and on cpu_onednn (8 runs at
# a time): the same seed and data, so the losses must agree to fp32 rounding.
model_pair() {  # config -> 0 when both runs agree
  local cfg=$1 name be
  name=$(basename "$cfg" .pbtxt)
  for be in cpu_onednn gpu_cuda; do
    "$RUN" "$cfg" --output_dir "$OUT/models/$name.$be" --set runtime.backend=$be \
        --set train.steps=3 --set train.log_every=1 --set eval.examples=1 \
        > "$OUT/models/$name.$be.log" 2>&1 ||
      { echo "$name on $be failed: $(tail -2 "$OUT/models/$name.$be.log")"; return 1; }
  done
  python3 - "$OUT/models/$name.cpu_onednn" "$OUT/models/$name.gpu_cuda" "$name" <<'PY'
import csv, sys
def losses(d):
    return [float(r["loss"]) for r in csv.DictReader(open(d + "/train_log.csv")) if r["loss"]]
cpu, gpu = losses(sys.argv[1]), losses(sys.argv[2])
worst = max((abs(a - b) / max(1.0, abs(a)) for a, b in zip(cpu, gpu)), default=float("inf"))
ok = len(cpu) == len(gpu) > 0 and worst <= 1e-3
print(f"{sys.argv[3]}: {len(gpu)} losses, largest relative difference {worst:.2e} {'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
}
model_level() {
  local failed=0 cfg pid
  local -a pids=()
  mkdir -p "$OUT/models"
  for cfg in $MODEL_CONFIGS; do
    model_pair "$cfg" > "$OUT/models/$(basename "$cfg" .pbtxt).result" 2>&1 &
    pids+=($!)
    while [ "$(jobs -rp | wc -l)" -ge 8 ]; do sleep 0.2; done
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  cat "$OUT"/models/*.result
  return $failed
}
MODEL_CONFIGS=${MODEL_CONFIGS:-configs/*.pbtxt}
export RUN OUT MODEL_CONFIGS
run_step models_gpu_vs_cpu 150 bash -c "$(declare -f model_pair model_level); model_level"

# --- d. sort_digits in full, GPU against CPU ----------------------------------------
# Both at once (different devices), each a recorded step.
run_step sort_digits_cpu 120 "$RUN" configs/sort_digits.pbtxt --output_dir "$OUT/sort_digits.cpu_onednn" \
    --set runtime.backend=cpu_onednn &
CPU_PID=$!
run_step sort_digits_gpu 120 "$RUN" configs/sort_digits.pbtxt --output_dir "$OUT/sort_digits.gpu_cuda" \
    --set runtime.backend=gpu_cuda
wait "$CPU_PID"
# Same seed on both: the dropout masks and the data are identical (Philox),
# so only float rounding separates the runs. "Seed noise" is taken as 0.02
# token accuracy (sort_digits' spread across seeds is larger than that).
# Training amplifies rounding differences: two correct CPU backends
# (reference and cpu_onednn, same seed) differ by 4.5e-5 at step 200,
# 6.9e-4 at step 400 and 1.2e-3 at step 1000 (docs/gpu.md). So the issue's
# 1e-3 applies to the first half of the curve, and the whole curve must stay
# within 2.5e-3 (twice that CPU-to-CPU spread).
run_step sort_digits_compare 30 python3 - "$OUT/sort_digits.cpu_onednn" "$OUT/sort_digits.gpu_cuda" "$OUT/measured.json" <<'PY'
import csv, json, sys
cpu_dir, gpu_dir, measured = sys.argv[1:4]
def read(d):
    rows = [r for r in csv.DictReader(open(d + "/train_log.csv")) if r["loss"]]
    return [(int(r["step"]), float(r["loss"])) for r in rows], json.load(open(d + "/metrics.json"))
(cpu_curve, cpu_m), (gpu_curve, gpu_m) = read(cpu_dir), read(gpu_dir)
diffs = [(a[0], abs(a[1] - b[1])) for a, b in zip(cpu_curve, gpu_curve)]
worst = max((d for _, d in diffs), default=float("inf"))
half = cpu_curve[-1][0] / 2 if cpu_curve else 0
worst_first_half = max((d for s, d in diffs if s <= half), default=float("inf"))
acc_cpu, acc_gpu = cpu_m.get("token_accuracy", 0.0), gpu_m.get("token_accuracy", 0.0)
ok = ([s for s, _ in cpu_curve] == [s for s, _ in gpu_curve] and len(cpu_curve) > 0 and
      worst_first_half <= 1e-3 and worst <= 2.5e-3 and abs(acc_cpu - acc_gpu) <= 0.02)
result = {"sort_digits": {"loss_curve_max_abs_diff": worst,
                          "loss_curve_max_abs_diff_first_half": worst_first_half,
                          "token_accuracy_cpu": acc_cpu, "token_accuracy_gpu": acc_gpu,
                          "logged_steps": len(cpu_curve), "ok": ok}}
try:
    result = {**json.load(open(measured)), **result}
except (OSError, ValueError):
    pass
json.dump(result, open(measured, "w"), indent=2)
print(json.dumps(result["sort_digits"]))
sys.exit(0 if ok else 1)
PY

# --- e. the GPT-2-124M-shaped benchmark ----------------------------------------------
BENCH_DIR=$OUT/gpt2_124m_shape
PRECISION_FLAG=()
[ "$PRECISION" != fp32 ] && PRECISION_FLAG=(--set "runtime.precision=$PRECISION")
run_step bench_gpt2_124m 180 "$RUN" bench/configs/gpt2_124m_shape.pbtxt --output_dir "$BENCH_DIR" \
    --set runtime.backend=gpu_cuda "${PRECISION_FLAG[@]}" --set train.steps=$((BENCH_STEPS + 2)) \
    --set train.log_every=1
run_step bench_report 30 python3 - "$BENCH_DIR" "$PEAK_TFLOPS" "$PRECISION" "$OUT/measured.json" <<'PY'
import csv, json, statistics, sys
run_dir, peak_tflops, precision, measured = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [r for r in csv.DictReader(open(run_dir + "/train_log.csv")) if r["elapsed_sec"]]
elapsed = [float(r["elapsed_sec"]) for r in rows]
steps = [b - a for a, b in zip(elapsed, elapsed[1:])][1:]  # after 2 warm-up steps
step_s = statistics.median(steps)
# The model of bench/configs/gpt2_124m_shape.pbtxt: L 12, d 768, T 1024, batch 8.
layers, d, t, batch = 12, 768, 1024, 8
params = json.load(open(run_dir + "/metrics.json")).get("parameters", 0)
# Training FLOP per token: 6 N (forward + backward of every weight) plus
# attention's 12 L d T (QK^T and PV, forward and backward; PaLM's appendix B).
flop_per_token = 6 * params + 12 * layers * d * t
tokens_per_s = batch * t / step_s
mfu = tokens_per_s * flop_per_token / (peak_tflops * 1e12)
bench = {"precision": precision, "step_seconds": step_s, "tokens_per_second": tokens_per_s,
         "parameters": params, "flop_per_token": flop_per_token, "peak_tflops_dense_bf16": peak_tflops,
         "mfu": mfu, "timed_steps": len(steps)}
print(f"gpt2_124m_shape ({precision}): step {step_s * 1e3:.1f} ms, {tokens_per_s:,.0f} tokens/s, "
      f"MFU {100 * mfu:.1f}% of {peak_tflops:g} TFLOP/s dense bf16")
try:
    merged = json.load(open(measured))
except (OSError, ValueError):
    merged = {}
merged["gpt2_124m_shape"] = bench
json.dump(merged, open(measured, "w"), indent=2)
PY

# --- f. summary ------------------------------------------------------------------------
write_summary
TOTAL=$(( $(date +%s) - START ))
echo "gpu_check: finished in ${TOTAL}s; log $LOG"
if cut -f2 "$STEPS_TSV" | grep -c '^fail$' >/dev/null; then  # -c reads all: no SIGPIPE under pipefail
  echo "gpu_check: FAILED steps:" >&2
  awk -F'\t' '$2 == "fail" { print "  " $1 ": " $4 }' "$STEPS_TSV" >&2
  exit 1
fi
echo "gpu_check: every step passed"
