#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs every test, then prints the gtest case
# count from the test.xml files Bazel writes, ending with the line
# "N passed, N failed". Exit status is Bazel's.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || exit 1

# Threads spin-wait in OpenMP by default; on a shared 2-core machine that
# makes a busy neighbour slow everyone down (docs/building.md).
export OMP_WAIT_POLICY=passive

# Target patterns among the arguments (default //...); flags pass through.
patterns=()
for a in "$@"; do [[ "$a" == -* ]] || patterns+=("$a"); done
[ ${#patterns[@]} -gt 0 ] || set -- //... "$@"
[ ${#patterns[@]} -gt 0 ] || patterns=(//...)
query="tests(${patterns[0]})"
for p in "${patterns[@]:1}"; do query="$query + tests($p)"; done

# The layering of docs/architecture.md: no package cycle, no upward
# dependency or include (a violation counts as one failed test).
python3 tools/check_layers.py
layers=$?

bazel test "$@"
status=$?
[ $status -ne 0 ] || [ $layers -eq 0 ] || status=1
export TVLAB_LAYERS_FAILED=$(( layers != 0 ))

# Count only the current test targets' results: bazel-testlogs keeps files
# of targets (and shardings, --runs_per_test runs) that no longer exist.
bazel query "$query" 2>/dev/null > bazel-testlogs-targets.txt || true
bazel query "attr(shard_count, \"^([2-9]|[1-9][0-9]+)\$\", $query)" 2>/dev/null \
  > bazel-testlogs-sharded.txt || true

python3 - <<'PY'
import glob, os, xml.etree.ElementTree as ET
passed = failed = skipped = 0
failed += int(os.environ.get("TVLAB_LAYERS_FAILED", "0"))
root = os.path.realpath("bazel-testlogs")
sharded = set(open("bazel-testlogs-sharded.txt").read().split())
paths = []
for label in open("bazel-testlogs-targets.txt").read().split():
    package, name = label.lstrip("/").split(":")
    folder = os.path.join(root, package, name)
    if label in sharded:
        found = glob.glob(os.path.join(folder, "shard_*", "test.xml"))
    else:
        found = glob.glob(os.path.join(folder, "test.xml"))
    if not found:  # did not build, or did not run: a failure, not silence
        print(f"no test results for {label}")
        failed += 1
    paths += found
for f in ("bazel-testlogs-targets.txt", "bazel-testlogs-sharded.txt"):
    os.remove(f)
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
