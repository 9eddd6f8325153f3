# Sourced by the interop tests: sets BENCH_PYTHON to bench/.venv/bin/python
# of the workspace these tests were built from (or $TVLAB_BENCH_VENV), or
# exits 0 saying the test is skipped when that venv lacks the given modules.
# usage: source bench_venv.sh MODULE...
_tvlab_here="$(readlink -f "${BASH_SOURCE[0]}")"
_tvlab_venv="${TVLAB_BENCH_VENV:-$(dirname "$(dirname "$_tvlab_here")")/bench/.venv}"
BENCH_PYTHON="$_tvlab_venv/bin/python"
for _tvlab_module in "$@"; do
  if [ ! -x "$BENCH_PYTHON" ] || ! "$BENCH_PYTHON" -c "import $_tvlab_module" 2>/dev/null; then
    echo "SKIPPED: $_tvlab_venv has no '$_tvlab_module' (run bash bench/setup_venv.sh, or set TVLAB_BENCH_VENV)"
    exit 0
  fi
done
