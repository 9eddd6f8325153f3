#!/usr/bin/env bash
# Trains configs/sort_digits.pbtxt with tvlab and the same model in PyTorch,
# one after the other on this machine at the same thread count, and prints
# both times and the ratio. Peers:
#   - Debian's python3-torch 1.13 with OpenBLAS (libopenblas0-pthread is
#     installed here so it is not measured on the slow reference BLAS),
#   - PyTorch 2.x from PyPI in bench/.venv (bench/setup_venv.sh), if present,
#   - the same PyTorch 2.x through torch.compile (bench/torch_sort.py
#     --compile; the compiling first step is timed apart),
#   - JAX on CPU from the same venv (bench/jax_sort.py: one jitted step;
#     compilation time excluded and printed separately).
# tvlab runs eager (train.step_capture: CAPTURE_OFF) and captured (the
# default), and prints its FLOPs, achieved rate and MFU against the
# measured FMA peak; then every peer runs between two captured tvlab runs
# and its ratio is to their mean (this machine's speed moves between
# phases, by 10-50% within minutes: bench/README.md). At one thread every
# run is pinned to core 0. With REPEATS=N all of it runs N times at each
# thread count, and the script ends with each peer's median ratio.
# With ISA=AVX2 every side runs as on an AVX2-only CPU: tvlab and every
# oneDNN under ONEDNN_MAX_CPU_ISA (framework/core/cpu_features.h), PyTorch's
# own kernels under ATEN_CPU_CAPABILITY, MKL under MKL_ENABLE_INSTRUCTIONS,
# OpenBLAS under OPENBLAS_CORETYPE=Haswell, XLA under --xla_cpu_max_isa,
# Inductor's code at 256 bits (an emulation: this machine's clock and
# caches, and tvlab's target_clones loops keep their AVX-512 clone).
# With PRECISION=bf16 tvlab runs runtime.precision bf16 (its Linear products
# in bf16 with fp32 accumulation: bf16_medium_gemm.h on CPUs with
# AVX512_BF16) and PyTorch 2.x eager runs twice, in fp32 and under bf16
# autocast (torch_sort.py --bf16); the other peers stay fp32.
# usage: bash bench/sort_bench.sh [THREADS...]   (default: 1; env REPEATS=1, ISA=, PRECISION=fp32)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=("${@:-1}")
REPEATS=${REPEATS:-1}
PRECISION=${PRECISION:-fp32}
case "$PRECISION" in fp32|bf16) ;; *) echo "PRECISION='$PRECISION': fp32 or bf16" >&2; exit 2 ;; esac
TV_PRECISION=(--set runtime.precision="$PRECISION")
export OMP_WAIT_POLICY=passive  # see docs/building.md: spinning threads on a shared box
XLA_ISA=""
case "${ISA:-}" in
  "") ;;
  AVX2)
    export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Haswell
    XLA_ISA="--xla_cpu_max_isa=AVX2" ;;
  *) echo "ISA='$ISA': only AVX2 is emulated (or leave ISA unset)" >&2; exit 2 ;;
esac

dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed" || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread >/dev/null; }

bazel build //experiments:run >/dev/null 2>&1  # -c opt -O3 from .bazelrc
RUN=bazel-bin/experiments/run
OUT=$(mktemp -d)

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)${ISA:+, every side capped at $ISA}; tvlab in $PRECISION"
echo "debian torch BLAS: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
printf '%-22s %7s %10s %10s %8s %8s\n' peer threads train_s tok/s tok_acc ratio
for t in "${THREADS[@]}"; do
 for r in $(seq "$REPEATS"); do
  # At one thread every peer is pinned to core 0 (taskset).
  pin=""; [ "$t" = 1 ] && command -v taskset >/dev/null && pin="taskset -c 0"
  # tvlab eager (train.step_capture off), then captured (the default).
  $pin "$RUN" configs/sort_digits.pbtxt "${TV_PRECISION[@]}" --set runtime.threads="$t" --set train.step_capture=CAPTURE_OFF \
    --output_dir "$OUT/tvlab_eager_${t}_$r" >/dev/null 2>&1
  $pin "$RUN" configs/sort_digits.pbtxt "${TV_PRECISION[@]}" --set runtime.threads="$t" --output_dir "$OUT/tvlab_${t}_$r" >/dev/null 2>&1
  eager=$(/usr/bin/python3 -c "import json;m=json.load(open('$OUT/tvlab_eager_${t}_$r/metrics.json'));print(m['train_seconds'],m['tokens_per_second'],m['token_accuracy'])")
  tv=$(/usr/bin/python3 -c "import json;m=json.load(open('$OUT/tvlab_${t}_$r/metrics.json'));print(m['train_seconds'],m['tokens_per_second'],m['token_accuracy'])")
  read -r ev_s ev_tps ev_acc <<<"$eager"
  read -r tv_s tv_tps tv_acc <<<"$tv"
  /usr/bin/python3 - "$OUT/tvlab_${t}_$r/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); e = m.get("efficiency", {})
print(f"tvlab: {m.get('step_capture', '?')}; {m['train_flops_per_token']:.0f} FLOPs/token, "
      f"{m['achieved_flops_per_second'] / 1e9:.1f} GFLOP/s, MFU {100 * e.get('mfu', 0):.1f}% of "
      f"{e.get('peak_flops_per_second', 0) / 1e9:.1f} GFLOP/s ({e.get('basis', 'no peak')})")
PY
  printf '%-22s %7s %10.2f %10.0f %8.3f %7.2fx\n' "tvlab eager" "$t" "$ev_s" "$ev_tps" "$ev_acc" \
    "$(/usr/bin/python3 -c "print($ev_s / $tv_s)")"
  printf '%-22s %7s %10.2f %10.0f %8.3f %8s\n' "tvlab (captured)" "$t" "$tv_s" "$tv_tps" "$tv_acc" "1.00"
  peers=("/usr/bin/python3")
  [ -x bench/.venv/bin/python ] && peers+=("bench/.venv/bin/python")
  runs=()
  for py in "${peers[@]}"; do runs+=("$pin $py bench/torch_sort.py --threads $t"); done
  [ "$PRECISION" = bf16 ] && [ -x bench/.venv/bin/python ] &&
    runs+=("$pin bench/.venv/bin/python bench/torch_sort.py --threads $t --bf16")
  # torch.compile (PyTorch 2.x only; Inductor needs a C++ compiler, present here).
  # Under ISA=AVX2 Inductor writes AVX2 code (--simdlen 256) with ATen's
  # capability left as is: capped, torch.compile crashed (a segfault).
  compile_env="" compile_simd=""
  [ -n "${ISA:-}" ] && compile_env="env -u ATEN_CPU_CAPABILITY" compile_simd="--simdlen 256"
  [ -x bench/.venv/bin/python ] &&
    runs+=("$compile_env $pin bench/.venv/bin/python bench/torch_sort.py --threads $t --compile $compile_simd")
  if [ -x bench/.venv/bin/python ]; then
    # XLA's CPU client uses every core unless Eigen threading is off; this
    # machine has 2, so "2 threads" is its default.
    if [ "$t" = 1 ]; then xla="--xla_cpu_multi_thread_eigen=false $XLA_ISA";
    else xla="--xla_cpu_multi_thread_eigen=true $XLA_ISA"; fi
    runs+=("env XLA_FLAGS='$xla' $pin bench/.venv/bin/python bench/jax_sort.py --threads $t")
  fi
  # Each peer is bracketed by captured tvlab runs (the one before it, then
  # one after it, which is also the next peer's before): its ratio is its
  # time over the mean of the two, so a drift of the machine's speed during
  # the peer's run moves both sides.
  before=$tv_s
  for i in "${!runs[@]}"; do
    line=$(eval "${runs[$i]}" 2>/dev/null | tail -1) || true
    if [[ "$line" != "{"* ]]; then  # a peer that failed is said, and the others still run
      echo "peer failed, no result: ${runs[$i]}"
      continue
    fi
    $pin "$RUN" configs/sort_digits.pbtxt "${TV_PRECISION[@]}" --set runtime.threads="$t" --output_dir "$OUT/tvlab_${t}_${r}_after$i" \
      >/dev/null 2>&1
    after=$(/usr/bin/python3 -c "import json;print(json.load(open('$OUT/tvlab_${t}_${r}_after$i/metrics.json'))['train_seconds'])")
    /usr/bin/python3 - "$line" "$before" "$after" "$t" "$OUT/ratios.txt" <<'PY'
import json, sys
m = json.loads(sys.argv[1]); before, after = float(sys.argv[2]), float(sys.argv[3])
tv = (before + after) / 2
note = f"  (+{m['compile_seconds']:.1f}s compile)" if "compile_seconds" in m else ""
print(f"{m['peer']:<22} {m['threads']:>7} {m['train_seconds']:>10.2f} {m['tokens_per_second']:>10.0f} "
      f"{m['token_accuracy']:>8.3f} {m['train_seconds'] / tv:>7.2f}x{note}  (tvlab {before:.2f} / {after:.2f} s)")
with open(sys.argv[5], "a") as f:
    f.write(f"{sys.argv[4]}\t{m['peer']}\t{m['train_seconds'] / tv}\n")
PY
    before=$after
  done
 done
done
echo "ratio = peer train seconds / the mean of the captured tvlab runs just before and after it (> 1: tvlab is faster)"
/usr/bin/python3 - "$OUT/ratios.txt" <<'PY'
import collections, statistics, sys
ratios = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, peer, ratio = line.rstrip("\n").split("\t")
    ratios[(t, peer)].append(float(ratio))
print("medians over the repeats (issue #33's one-thread targets: >= 5x PyTorch 2.x eager, >= 3x JAX):")
for (t, peer), rs in ratios.items():
    print(f"  {peer:<30} threads {t}: median {statistics.median(rs):.2f}x  repeats {', '.join(f'{r:.2f}' for r in rs)}")
PY
rm -rf "$OUT"
