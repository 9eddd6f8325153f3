#!/usr/bin/env bash
# Every number a committed study README, or the top README's table of
# studies, ties to its results (`<!--= expr | format -->`, tools/findings.py)
# is what those results give. Then the check itself: a copy of the
# glu_variants README with one number changed must fail, naming the line and
# both numbers, and so must a copy of the top README with one changed.
set -uo pipefail
readmes=(README.md experiments/studies/*/README.md)
python3 tools/findings.py --check "${readmes[@]}" || exit 1

TMP=${TEST_TMPDIR:-$(mktemp -d)}

# expect_caught README COPY EXPR: COPY is README with the number before EXPR
# (a marker's opening, `<!--= mean(...)`) restated 0.010 higher; the check
# must fail on COPY, naming both numbers and the expression.
expect_caught() {
  local readme=$1 copy=$2 expr=$3 stated wrong out rc want
  stated=$(grep -o "[0-9.]*${expr}" "$readme" | head -1 | sed "s#${expr}##")
  if [[ -z "$stated" ]]; then
    echo "FAIL: $readme no longer states ${expr#<!--= }"
    exit 1
  fi
  wrong=$(python3 -c "print(f'{$stated + 0.010:.3f}')")
  sed "s#${stated}${expr}#${wrong}${expr}#" "$readme" > "$copy"
  if cmp -s "$readme" "$copy"; then
    echo "FAIL: the test's edit of $readme (${stated} -> ${wrong}) did not apply"
    exit 1
  fi
  out=$(python3 tools/findings.py --check "$copy" 2>&1)
  rc=$?
  want="states ${wrong}, its results give ${stated} (${expr#<!--= }"
  if [[ $rc -eq 0 ]] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: a changed number in $readme was not caught (wanted: $want):"
    echo "$out"
    exit 1
  fi
}

# A study README: a copy beside a copy of its results, GEGLU's mean eval
# loss (generated, so it is what the results give) restated.
mkdir -p "$TMP/glu/results"
cp experiments/studies/glu_variants/results/*.csv "$TMP/glu/results/"
expect_caught experiments/studies/glu_variants/README.md "$TMP/glu/README.md" \
  '<!--= mean("geglu", "eval_loss")'
# The top README reads the studies as experiments/studies/STUDY/cell: a
# copy beside the same experiments/ folder, SwiGLU's mean restated.
mkdir -p "$TMP/root"
ln -sfn "$PWD/experiments" "$TMP/root/experiments"
expect_caught README.md "$TMP/root/README.md" \
  '<!--= mean("experiments/studies/glu_variants/swiglu", "eval_loss")'
echo "PASS: ${#readmes[@]} READMEs match their results; a changed number fails the check"
