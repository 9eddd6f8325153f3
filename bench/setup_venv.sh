#!/usr/bin/env bash
# Creates bench/.venv with the peers a researcher would really use: modern
# PyTorch 2.x and JAX (CPU) from PyPI, plus the readers the interop checks
# compare against (docs/interop.md): transformers (Hugging Face export),
# tensorboard (event files), sacrebleu (BLEU parity) and sentencepiece
# (tokenizer ids). Idempotent: a venv
# that already imports all of them is left alone; one that lacks some gets
# only what is missing. Only benchmarks and interop checks use it; the
# framework never does.
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
IMPORTS="import torch, jax, safetensors, transformers, tensorboard, sacrebleu, sentencepiece"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null; then
  echo "bench venv ready: $("$VENV/bin/python" -c "$IMPORTS"'; print("torch", torch.__version__, "jax", jax.__version__, "transformers", transformers.__version__, "tensorboard", tensorboard.__version__, "sacrebleu", sacrebleu.__version__)')"
  exit 0
fi
dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# pip skips what is already installed, so a rerun only adds what is missing.
"$VENV/bin/pip" install -q torch "jax[cpu]" numpy safetensors transformers tensorboard sacrebleu sentencepiece
"$VENV/bin/python" -c "$IMPORTS"'; print("bench venv ready: torch", torch.__version__, "jax", jax.__version__, "transformers", transformers.__version__, "tensorboard", tensorboard.__version__, "sacrebleu", sacrebleu.__version__)'
