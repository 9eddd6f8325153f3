#!/usr/bin/env bash
# tools/findings.py's ladder(variant, rung, column) on a fabricated
# ladder.csv as the grid report writes it (a depth dial; a rung whose target
# was not reached), and on one of explicit rungs in a study's sub-folder:
# the values, then the errors (no such variant or rung, an unknown column, an
# empty value quoting the row's note), and a study named from the repository
# root (experiments/studies/STUDY/...) that does not exist.
set -uo pipefail
FINDINGS=tools/findings.py
source tools/findings_test_lib.sh
TMP=${TEST_TMPDIR:-$(mktemp -d)}
study="$TMP/ladder_study"
rm -rf "$study"
mkdir -p "$study/results/olmo"
cat > "$study/results/ladder.csv" <<'CSV'
variant,depth,parameters,target_flops_mean,target_flops_ci_low,note
ffn=relu,1,279073,,,target not reached by 3 of 3 seed(s): no mean
ffn=relu,2,628609,3.88481419e+11,3.40827599e+11,
ffn=swiglu,2,661729,3.33e+11,3.07e+11,
CSV
cat > "$study/results/olmo/ladder.csv" <<'CSV'
variant,rung,parameters,target_flops_mean,note
baseline,L2-d32,1000,2.5e+09,
CSV
# 3.88481419e11 / 3.33e11 = 1.16661..., relu at depth 2 has 628,609
# parameters, the sub-folder's rung L2-d32 2.5e9.
cat > "$study/README.md" <<'MD'
ReLU needs 1.167<!--= ladder("ffn=relu", 2, "target_flops_mean") / ladder("ffn=swiglu", 2, "target_flops_mean") | .3f -->x
SwiGLU's FLOPs at depth 2 (628,609<!--= ladder("ffn=relu", 2, "parameters") | ,.0f --> parameters), and the
OLMo-style rung 2.5e+09<!--= ladder("olmo/baseline", "L2-d32", "target_flops_mean") | .2g -->.
MD
out=$(python3 "$FINDINGS" --check "$study/README.md" 2>&1)
if [[ $? -ne 0 ]] || [[ "$out" != *"findings: 3 number(s) in 1 README(s) match their results"* ]]; then
  echo "FAIL: the hand-computed numbers do not match:"; echo "$out"; exit 1
fi
expect_error "$study" 'ladder("ffn=relu", 1, "target_flops_mean")' \
  "ladder('ffn=relu', 1): no target_flops_mean (target not reached by 3 of 3 seed(s): no mean)"
expect_error "$study" 'ladder("ffn=gelu", 2, "parameters")' "ladder.csv has no variant 'ffn=gelu' at rung 2"
expect_error "$study" 'ladder("ffn=relu", 3, "parameters")' "ladder.csv has no variant 'ffn=relu' at rung 3"
expect_error "$study" 'ladder("ffn=relu", 2, "flops")' "ladder.csv has no column 'flops'"
# From the repository root a study is "experiments/studies/STUDY/...".
expect_error "$study" 'mean("experiments/studies/missing/x", "eval_loss")' \
  "'experiments/studies/missing/x': no study 'missing' under experiments/studies with a results/ folder"
echo "PASS: ladder() values and errors"
