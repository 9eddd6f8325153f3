#!/usr/bin/env bash
# Every number a committed study README ties to its results
# (`<!--= expr | format -->`, tools/findings.py) is what those results give.
# Then the check itself: a copy of the glu_variants README with one number
# changed must fail, naming the line and both numbers.
set -uo pipefail
readmes=(experiments/studies/*/README.md)
python3 tools/findings.py --check "${readmes[@]}" || exit 1

TMP=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$TMP/glu/results"
cp experiments/studies/glu_variants/results/*.csv "$TMP/glu/results/"
# GEGLU's mean eval loss, 2.284, stated as 2.294.
sed 's/2\.284<!--= mean("geglu", "eval_loss")/2.294<!--= mean("geglu", "eval_loss")/' \
  experiments/studies/glu_variants/README.md > "$TMP/glu/README.md"
if cmp -s experiments/studies/glu_variants/README.md "$TMP/glu/README.md"; then
  echo "FAIL: the test's edit did not apply (is 2.284 still GEGLU's generated mean?)"
  exit 1
fi
out=$(python3 tools/findings.py --check "$TMP/glu/README.md" 2>&1)
if [[ $? -eq 0 ]] || [[ "$out" != *'states 2.294, its results give 2.284 (mean("geglu", "eval_loss"))'* ]]; then
  echo "FAIL: a changed number was not caught:"
  echo "$out"
  exit 1
fi
echo "PASS: ${#readmes[@]} READMEs match their results; a changed number fails the check"
