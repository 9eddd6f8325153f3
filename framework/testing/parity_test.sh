#!/usr/bin/env bash
# Runs a plugin's PyTorch parity script: parity_test.sh <parity_dump> <script.py>.
# Debian's PyTorch is used through /usr/bin/python3 (docs/building.md).
set -euo pipefail
here="${TEST_SRCDIR}/${TEST_WORKSPACE:-tvlab}/framework/testing"
export PYTHONPATH="${here}${PYTHONPATH:+:${PYTHONPATH}}"
# One thread: CI machines have two cores, and these tensors are tiny.
export OMP_NUM_THREADS=1
exec /usr/bin/python3 "$2" "$1"
