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

bazel test //... "$@"
status=$?

python3 - <<'PY'
import glob, os, xml.etree.ElementTree as ET
passed = failed = skipped = 0
root = os.path.realpath("bazel-testlogs")
for path in glob.glob(os.path.join(root, "**", "test.xml"), recursive=True):
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
