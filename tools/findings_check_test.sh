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
mkdir -p "$TMP/glu/results"
cp experiments/studies/glu_variants/results/*.csv "$TMP/glu/results/"
# GEGLU's mean eval loss as the README states it (generated, so it is what
# the results give), restated 0.010 higher.
expr='<!--= mean("geglu", "eval_loss")'
stated=$(grep -o "[0-9.]*${expr}" experiments/studies/glu_variants/README.md \
  | head -1 | sed "s/${expr}//")
if [[ -z "$stated" ]]; then
  echo "FAIL: glu_variants/README.md no longer states GEGLU's mean eval loss"
  exit 1
fi
wrong=$(python3 -c "print(f'{$stated + 0.010:.3f}')")
sed "s/${stated}${expr}/${wrong}${expr}/" \
  experiments/studies/glu_variants/README.md > "$TMP/glu/README.md"
if cmp -s experiments/studies/glu_variants/README.md "$TMP/glu/README.md"; then
  echo "FAIL: the test's edit (${stated} -> ${wrong}) did not apply"
  exit 1
fi
out=$(python3 tools/findings.py --check "$TMP/glu/README.md" 2>&1)
rc=$?
want="states ${wrong}, its results give ${stated} (mean(\"geglu\", \"eval_loss\"))"
if [[ $rc -eq 0 ]] || [[ "$out" != *"$want"* ]]; then
  echo "FAIL: a changed number was not caught (wanted: $want):"
  echo "$out"
  exit 1
fi
# The top README reads the studies as experiments/studies/STUDY/cell: a
# copy beside the same experiments/ folder, SwiGLU's mean restated.
mkdir -p "$TMP/root"
ln -sfn "$PWD/experiments" "$TMP/root/experiments"
expr='<!--= mean("experiments/studies/glu_variants/swiglu", "eval_loss")'
stated=$(grep -o "[0-9.]*${expr}" README.md | head -1 | sed "s#${expr}##")
if [[ -z "$stated" ]]; then
  echo "FAIL: README.md no longer states glu_variants' SwiGLU mean eval loss"
  exit 1
fi
wrong=$(python3 -c "print(f'{$stated + 0.010:.3f}')")
sed "s#${stated}${expr}#${wrong}${expr}#" README.md > "$TMP/root/README.md"
out=$(python3 tools/findings.py --check "$TMP/root/README.md" 2>&1)
rc=$?
want="states ${wrong}, its results give ${stated}"
if [[ $rc -eq 0 ]] || [[ "$out" != *"$want"* ]]; then
  echo "FAIL: a changed number in the top README was not caught (wanted: $want):"
  echo "$out"
  exit 1
fi
echo "PASS: ${#readmes[@]} READMEs match their results; a changed number fails the check"
