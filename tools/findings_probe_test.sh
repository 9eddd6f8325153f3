#!/usr/bin/env bash
# tools/findings.py's probe(cell, name, stat) and probe_seed(cell, name, stat, s)
# on fabricated results: probes.csv as the grid report writes it (a cell with
# a missing seed, a diverged seed, a study's sub-folder results/NAME/). The
# expected numbers are worked out by hand below; then the errors: an unknown
# probe, statistic, cell or seed, no probes.csv, and a number that differs.
set -uo pipefail
FINDINGS=tools/findings.py
source tools/findings_test_lib.sh
TMP=${TEST_TMPDIR:-$(mktemp -d)}
study="$TMP/study"
rm -rf "$study"
mkdir -p "$study/results/lr"
header="cell,seed,state,probe,first,last,max,mean,first_step,last_step,count"
# pre_ln: seeds 0 and 1 (seed 2 never finished); post_ln: seed 0 finished,
# seed 1 diverged at step 7 (its probes up to there).
cat > "$study/results/probes.csv" <<CSV
$header
placement=pre_ln,0,finished,grad_norm/decoder.layers.0,1.5,0.25,3,0.75,0,10,3
placement=pre_ln,0,finished,logits/max,2,8,8,5,0,10,3
placement=pre_ln,1,finished,grad_norm/decoder.layers.0,2.5,0.5,5,1,0,10,3
placement=pre_ln,1,finished,logits/max,4,6,6,5,0,10,3
placement=post_ln,0,finished,grad_norm/decoder.layers.0,0.125,0.1,0.5,0.15,0,10,3
placement=post_ln,1,diverged,grad_norm/decoder.layers.0,0.25,nan,64,nan,0,5,2
CSV
cat > "$study/results/lr/probes.csv" <<CSV
$header
lr=1e-2,0,finished,attention_max_logit/decoder.layers.0.attention,4,12,12,8,0,20,5
lr=1e-2,1,finished,attention_max_logit/decoder.layers.0.attention,4.5,13,13,9,0,20,5
CSV

# (1.5 + 2.5) / 2 = 2; (3 + 5) / 2 = 4; post_ln's mean max leaves the
# diverged seed out: 0.5 alone; its seed 1 reads 64; count 3; the ratio of
# post_ln's to pre_ln's mean first 0.125 / 2 = 0.0625; results/lr/: (12 + 13) / 2.
cat > "$study/README.md" <<'MD'
Pre-LN's first-layer gradient norm at initialisation is 2.00<!--= probe("placement=pre_ln", "grad_norm/decoder.layers.0", "first") | .2f -->,
at most 4.0<!--= probe("placement=pre_ln", "grad_norm/decoder.layers.0", "max") | .1f --> (seed 1 alone:
2.5<!--= probe_seed("placement=pre_ln", "grad_norm/decoder.layers.0", "first", 1) | .1f -->). Post-LN's largest
is 0.50<!--= probe("placement=post_ln", "grad_norm/decoder.layers.0", "max") | .2f --> over its finished seeds; the
diverged seed reached 64<!--= probe_seed("placement=post_ln", "grad_norm/decoder.layers.0", "max", 1) | .0f -->.
Probed 3<!--= probe("placement=pre_ln", "logits/max", "count") | .0f --> times; ratio
0.0625<!--= probe("placement=post_ln", "grad_norm/decoder.layers.0", "first") / probe("placement=pre_ln", "grad_norm/decoder.layers.0", "first") | .4f -->.
The max attention logit at lr 1e-2 reached 12.5<!--= probe("lr/lr=1e-2", "attention_max_logit/decoder.layers.0.attention", "max") | .1f -->.
MD
out=$(python3 "$FINDINGS" --check "$study/README.md" 2>&1)
if [[ $? -ne 0 ]] || [[ "$out" != *"findings: 8 number(s) in 1 README(s) match their results"* ]]; then
  echo "FAIL: the hand-computed numbers do not match:"; echo "$out"; exit 1
fi

# Each must fail with a message naming what is wrong.
expect_error "$study" 'probe("placement=pre_ln", "grad_norm/decoder.layers.9", "first")' \
  "cell 'placement=pre_ln' has no probe 'grad_norm/decoder.layers.9'; its probes: grad_norm/decoder.layers.0, logits/max"
expect_error "$study" 'probe("placement=pre_ln", "logits/max", "median")' \
  "probe statistic 'median' is not one of first, last, max, mean, first_step, last_step, count"
expect_error "$study" 'probe("placement=none", "logits/max", "max")' "no cell 'placement=none' in"
expect_error "$study" 'probe_seed("placement=pre_ln", "logits/max", "max", 2)' \
  "cell 'placement=pre_ln' has no seed 2 with probe 'logits/max' max"
expect_error "$study" 'probe("lr/lr=1e-3", "logits/max", "max")' "no cell 'lr=1e-3' in"

# A changed number is caught, and only that one.
sed -i 's/is 2\.00<!--=/is 2.10<!--=/' "$study/README.md"
out=$(python3 "$FINDINGS" --check "$study/README.md" 2>&1)
if [[ $? -eq 0 ]] || [[ "$out" != *'states 2.10, its results give 2.00'* ]] || [[ "$out" != *'findings: 1 problem(s)'* ]]; then
  echo "FAIL: a changed number was not caught:"; echo "$out"; exit 1
fi
rm "$study/results/lr/probes.csv"
expect_error "$study" 'probe("lr/lr=1e-2", "logits/max", "max")' "results/lr/probes.csv does not exist"
echo "PASS: probe() and probe_seed() give the hand-computed values; errors name what is wrong"
