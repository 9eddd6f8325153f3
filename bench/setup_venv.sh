#!/usr/bin/env bash
# Creates bench/.venv with the peers a researcher would really use: modern
# PyTorch 2.x and JAX (CPU) from PyPI. Idempotent: a venv that already imports
# both is left alone. Only benchmarks use it; the framework never does.
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import torch, jax, safetensors" 2>/dev/null; then
  echo "bench venv ready: $("$VENV/bin/python" -c 'import torch, jax; print("torch", torch.__version__, "jax", jax.__version__)')"
  exit 0
fi
dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q torch "jax[cpu]" numpy safetensors
"$VENV/bin/python" -c 'import torch, jax; print("bench venv ready: torch", torch.__version__, "jax", jax.__version__)'
