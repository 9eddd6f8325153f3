#!/usr/bin/env bash
# adafactor_parity.py's formula against transformers' Adafactor, with
# bench/.venv's Python of the workspace this test was built from (or
# $TVLAB_BENCH_VENV); skipped, saying so, where that venv lacks transformers.
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
venv="${TVLAB_BENCH_VENV:-$(dirname "$(dirname "$(dirname "$here")")")/bench/.venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import transformers" 2>/dev/null; then
  echo "SKIPPED: $venv has no transformers (run bash bench/setup_venv.sh, or set TVLAB_BENCH_VENV)"
  exit 0
fi
export OMP_NUM_THREADS=1
exec "$venv/bin/python" "$here/adafactor_vs_transformers.py"
