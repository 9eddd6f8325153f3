#!/usr/bin/env bash
# Packs what tools/gpu_check.sh needs on a GPU machine that has the NVIDIA
# driver and a CUDA 13 runtime but neither Bazel nor tvlab's Debian
# libraries (the device tool's H200 image is one: docs/gpu.md). Run here:
#   1. builds the check's targets (tools/gpu_check.sh --targets) with
#      --config=cuda for CUDA_ARCH (default 90: H100, H200);
#   2. copies the binaries into bin/ (bazel-bin's layout, for BIN_DIR);
#   3. copies every shared library they load (and the shared objects they
#      dlopen from their runfiles) into lib/, except the C/C++
#      runtime (glibc, libgcc_s, libstdc++: the GPU machine's own, which
#      must be as new as this machine's) and CUDA's (the driver, cudart,
#      cuBLAS, cuBLASLt, NCCL: hundreds of MB, which the GPU machine has and
#      gpu_check.sh finds there);
#   4. writes DIR/bundle.tgz (with a MANIFEST) and removes the rest of DIR.
# On the GPU machine: BUNDLE=DIR/bundle.tgz tools/gpu_check.sh OUT_DIR.
#
# usage: tools/gpu_bundle.sh [DIR]      (default: .gpu_bundle, git-ignored)
# environment: CUDA_ARCH (default 90), BAZEL (default bazel)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu_bundle}
CUDA_ARCH=${CUDA_ARCH:-90}
BAZEL=${BAZEL:-bazel}
mapfile -t TARGETS < <(bash tools/gpu_check.sh --targets)

echo "gpu_bundle: building ${#TARGETS[@]} targets for sm_$CUDA_ARCH"
"$BAZEL" build --config=cuda "--define=cuda_arch=$CUDA_ARCH" "${TARGETS[@]}"

rm -rf "$DIR"
mkdir -p "$DIR/stage/bin" "$DIR/stage/lib"
BINARIES=()
for t in "${TARGETS[@]}"; do
  path=${t#//}; path=${path/://}
  mkdir -p "$DIR/stage/bin/$(dirname "$path")"
  cp -L "bazel-bin/$path" "$DIR/stage/bin/$path"
  BINARIES+=("$DIR/stage/bin/$path")
done

# Shared objects the binaries load at run time from their runfiles (the
# SentencePiece shim, dlopen'ed by the tokenizer): into lib/, where
# gpu_check.sh points TVLAB_SENTENCEPIECE_SHIM; their own needs count below.
for t in "${TARGETS[@]}"; do
  path=${t#//}; path=${path/://}
  [ -d "bazel-bin/$path.runfiles/tvlab" ] || continue
  while read -r so; do
    cp -L "$so" "$DIR/stage/lib/$(basename "$so")"
    BINARIES+=("$DIR/stage/lib/$(basename "$so")")
  done < <(find -L "bazel-bin/$path.runfiles/tvlab" -name '*.so' -type f)
done

# ldd lines "name => /path (addr)": keep what the GPU machine lacks.
ldd "${BINARIES[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    case "$name" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libgcc_s.so.*|libstdc++.so.*) continue ;;
      libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) continue ;;
    esac
    case "$path" in /usr/local/cuda*) continue ;; esac
    cp -L "$path" "$DIR/stage/lib/$name"
  done
if grep -q "not found" <<< "$(ldd "${BINARIES[@]}")"; then  # not a pipe: grep -q would SIGPIPE ldd under pipefail
  echo "gpu_bundle: a binary needs a library this machine lacks:" >&2
  ldd "${BINARIES[@]}" | grep "not found" >&2
  exit 1
fi

{
  echo "commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "cuda_arch=$CUDA_ARCH"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  echo "nvcc=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "libraries=$(ls "$DIR/stage/lib" | tr '\n' ' ')"
} > "$DIR/stage/MANIFEST"
tar czf "$DIR/bundle.tgz" -C "$DIR/stage" .
rm -rf "$DIR/stage"
echo "gpu_bundle: $DIR/bundle.tgz ($(du -h "$DIR/bundle.tgz" | cut -f1)); on the GPU machine:"
echo "  BUNDLE=$DIR/bundle.tgz tools/gpu_check.sh OUT_DIR"
