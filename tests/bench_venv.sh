# Sourced by the interop tests: sets BENCH_PYTHON to bench/.venv/bin/python
# of the workspace these tests were built from (or $TVLAB_BENCH_VENV), or
# exits 0 saying the test is skipped when that venv lacks the given modules
# (and writes a test.xml whose one case is marked skipped).
# usage: source bench_venv.sh MODULE...
_tvlab_here="$(readlink -f "${BASH_SOURCE[0]}")"
_tvlab_venv="${TVLAB_BENCH_VENV:-$(dirname "$(dirname "$_tvlab_here")")/bench/.venv}"
BENCH_PYTHON="$_tvlab_venv/bin/python"
for _tvlab_module in "$@"; do
  if [ ! -x "$BENCH_PYTHON" ] || ! "$BENCH_PYTHON" -c "import $_tvlab_module" 2>/dev/null; then
    _tvlab_why="$_tvlab_venv has no '$_tvlab_module' (run bash bench/setup_venv.sh, or set TVLAB_BENCH_VENV)"
    echo "SKIPPED: $_tvlab_why"
    # Reported as skipped, not passed, in the test.xml that tools/test.sh counts.
    if [ -n "${XML_OUTPUT_FILE:-}" ]; then
      _tvlab_name="$(basename "${TEST_TARGET:-${0%.sh}}")"
      printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" skipped="1"><testsuite name="%s" tests="1" skipped="1"><testcase name="%s" status="run" result="skipped"><skipped message="%s"/></testcase></testsuite></testsuites>\n' \
        "$_tvlab_name" "$_tvlab_name" "${_tvlab_why//\'/}" > "$XML_OUTPUT_FILE"
    fi
    exit 0
  fi
done
