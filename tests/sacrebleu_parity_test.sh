#!/usr/bin/env bash
# tvlab's BLEU against sacrebleu (bench/.venv; skipped, saying so, without
# it): tests/sacrebleu_parity.py. docs/interop.md.
set -euo pipefail
source "$TEST_SRCDIR/tvlab/tests/bench_venv.sh" sacrebleu
"$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/sacrebleu_parity.py" "$TEST_SRCDIR/tvlab/experiments/bleu"
