#!/usr/bin/env bash
# Runs tools/corpus/debian_corpus_test.py (unittest; Debian's python3).
set -euo pipefail
exec python3 "$TEST_SRCDIR/tvlab/tools/corpus/debian_corpus_test.py"
