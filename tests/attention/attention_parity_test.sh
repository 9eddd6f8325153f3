#!/usr/bin/env bash
# Parity of every attention score x layout with PyTorch: the C++ dump tool
# writes inputs, weights, outputs and gradients; attention_parity.py
# recomputes them from the published formulas with Debian's python3-torch.
# usage: attention_parity_test.sh DUMP_TOOL PARITY_SCRIPT
set -euo pipefail
out="${TEST_TMPDIR:-$(mktemp -d)}/attention_parity"
mkdir -p "$out"
"$1" "$out"
OMP_NUM_THREADS=1 /usr/bin/python3 "$2" "$out"
