#!/usr/bin/env bash
# A tiny grid through a real one-node Slurm cluster (tools/slurm_local.sh:
# munged, slurmctld, slurmd on localhost) with --launcher slurm, against the
# same grid through --launcher local:
#   - results.md equal apart from the timing columns (tokens/s, train s);
#   - the failing cells' failed.txt equal: a run that fails on the cluster is
#     recorded exactly as a local failure;
#   - a second invocation (either launcher) while the first is queued is refused;
#   - --retry_failed resubmits only the failed runs;
#   - bad input, each a clear error with nothing marked finished: no sbatch
#     on PATH, a partition that does not exist, a job no node can run,
#     --jobs with slurm, a malformed --slurm_time.
# Uses a cluster already up (tools/test.sh starts one; TVLAB_SLURM_DIR,
# default /tmp/tvlab-slurm), else starts one and stops it at the end. Skipped,
# saying why, where Slurm is not installed or its daemons cannot start.
set -euo pipefail

RUN="$(readlink -f "$TEST_SRCDIR/tvlab/experiments/run")"
SLURM_LOCAL="$(readlink -f "$TEST_SRCDIR/tvlab/tools/slurm_local.sh")"
export TVLAB_SLURM_DIR="${TVLAB_SLURM_DIR:-/tmp/tvlab-slurm}"
export SLURM_CONF="$TVLAB_SLURM_DIR/slurm.conf"
# The run directories must be visible to slurmd, outside any sandbox.
WORK="$(mktemp -d /tmp/tvlab-grid-slurm-test.XXXXXX)"

skip() {
  echo "SKIPPED: $1"
  if [ -n "${XML_OUTPUT_FILE:-}" ]; then
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" skipped="1"><testsuite name="grid_slurm_test" tests="1" skipped="1"><testcase name="grid_slurm_test" status="run" result="skipped"><skipped message="%s"/></testcase></testsuite></testsuites>\n' \
      "${1//\"/}" >"$XML_OUTPUT_FILE"
  fi
  exit 0
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

started_here=0
cleanup() {
  if [ "$started_here" = 1 ]; then "$SLURM_LOCAL" stop || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v slurmctld >/dev/null && command -v sbatch >/dev/null ||
  skip "Slurm is not installed (tools/setup.sh installs slurm-wlm and munge)"
if ! "$SLURM_LOCAL" status >/dev/null 2>&1; then
  started_here=1
  "$SLURM_LOCAL" start >"$WORK/start.log" 2>&1 || skip "the one-node Slurm cluster did not start: $(tail -n 20 "$WORK/start.log" | tr '\n' ' ')"
fi

cat >"$WORK/base.pbtxt" <<'SPEC'
name: "tiny_sort"
model { family: ENCODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }
task { plugin: "sort_digits" options { [type.googleapis.com/tvlab.SortDigitsOptions] { length: 6 } } }
train { steps: 20 log_every: 5 fail_on_divergence: true }
eval { examples: 50 batch_size: 50 }
SPEC
# 4 runs; lr 1e30 makes the first update overflow, and with
# train.fail_on_divergence a diverged run is a failure: those two runs fail.
NAME="slurm_test_$$"
cat >"$WORK/grid.pbtxt" <<GRID
name: "$NAME"
base_spec: "base.pbtxt"
axis { field: "model.position.plugin" values: ["none", "sinusoidal"] label: "position" }
axis { field: "train.optimizer.adamw.lr" values: ["1e-3", "1e30"] label: "lr" }
baseline: ["position=sinusoidal", "lr=1e-3"]
GRID

# results.md without the timing columns (by header name) and without the
# lines that name the output directory.
strip_timing() {
  awk -F'|' -v OFS='|' '
    /^\| / && !cols { for (i = 1; i <= NF; ++i) if ($i ~ /tokens\/s|train s/) drop[i] = 1; cols = 1 }
    /^\|/ { out = ""; for (i = 1; i <= NF; ++i) if (!(i in drop)) out = out $i OFS; print out; next }
    /^$/ { cols = 0 }
    { print }' "$1" | sed "s#$2#OUT#g"
}

# Waits until Slurm no longer lists the job (it ended, however it ended).
wait_for_job() {
  for _ in $(seq 1 240); do
    [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  squeue >&2 || true
  fail "job $1 did not end within 120 s"
}

# --- the same grid through both launchers -----------------------------------
set +e
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/local" --launcher local >"$WORK/local.log" 2>&1
local_rc=$?
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/slurm" --launcher slurm >"$WORK/submit.log" 2>&1
submit_rc=$?
# A second invocation while the first is queued would train the runs twice,
# with either launcher.
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/slurm" --launcher slurm >"$WORK/again.log" 2>&1
again_rc=$?
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/slurm" --launcher local >"$WORK/again_local.log" 2>&1
again_local_rc=$?
set -e
cat "$WORK/submit.log"
[ "$local_rc" = 1 ] || { cat "$WORK/local.log"; fail "local grid: exit $local_rc, expected 1 (two runs fail)"; }
[ "$submit_rc" = 0 ] || fail "slurm submission: exit $submit_rc"
array="$(awk '/^slurm_array_job /{print $2}' "$WORK/submit.log")"
report="$(awk '/^slurm_report_job /{print $2}' "$WORK/submit.log")"
[ -n "$array" ] && [ -n "$report" ] || fail "no job ids printed"
grep -q "job array $array (4 tasks" "$WORK/submit.log" || fail "expected 4 array tasks"
grep -q "squeue -j $array,$report" "$WORK/submit.log" || fail "no squeue command to follow the jobs"
grep -q "$WORK/slurm/slurm/logs/${array}_<task>.out" "$WORK/submit.log" || fail "the logs' place is not printed"
[ "$again_rc" = 2 ] || { cat "$WORK/again.log"; fail "second submission while queued: exit $again_rc, expected 2"; }
grep -q "still queued or running" "$WORK/again.log" || { cat "$WORK/again.log"; fail "second submission: no clear error"; }
[ "$again_local_rc" = 2 ] && grep -q "still queued or running" "$WORK/again_local.log" ||
  { cat "$WORK/again_local.log"; fail "a local run while the submission is queued: exit $again_local_rc"; }

wait_for_job "$report"
[ -f "$WORK/slurm/results.md" ] || { cat "$WORK"/slurm/slurm/logs/*; fail "the report job wrote no results.md"; }
strip_timing "$WORK/local/results.md" "$WORK/local" >"$WORK/local.md"
strip_timing "$WORK/slurm/results.md" "$WORK/slurm" >"$WORK/slurm.md"
grep -q "^| none | 1e30 | 0/1 |" "$WORK/local.md" || { cat "$WORK/local.md"; fail "local results.md lacks the failed cell's row"; }
grep -q "^| sinusoidal | 1e-3 (baseline) | 1 | 0\.[0-9]" "$WORK/local.md" || fail "local results.md lacks the baseline's value"
diff "$WORK/local.md" "$WORK/slurm.md" || fail "results.md differs between the local and the slurm launcher"
failed=0
for d in "$WORK"/local/runs/*/; do
  key="$(basename "$d")"
  if [ -f "$d/metrics.json" ]; then
    [ -f "$WORK/slurm/runs/$key/metrics.json" ] || fail "run $key finished locally, not on slurm"
  else
    failed=$((failed + 1))
    diff <(sed "s#$WORK/local#OUT#g" "$d/failed.txt") <(sed "s#$WORK/slurm#OUT#g" "$WORK/slurm/runs/$key/failed.txt") ||
      fail "run $key: failed.txt differs between the launchers"
    [ ! -f "$WORK/slurm/runs/$key/metrics.json" ] || fail "failed run $key marked finished on slurm"
  fi
done
[ "$failed" = 2 ] || fail "expected 2 failed runs, saw $failed"

# --- --retry_failed resubmits the two failed runs only ----------------------
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/slurm" --launcher slurm --retry_failed >"$WORK/retry.log" 2>&1 ||
  { cat "$WORK/retry.log"; fail "retry submission failed"; }
grep -q "job array [0-9]* (2 tasks" "$WORK/retry.log" || { cat "$WORK/retry.log"; fail "expected 2 tasks on retry"; }
[ "$(grep -c 'lr=1e30' "$WORK/slurm/slurm/cells.txt")" = 2 ] || fail "the retried cells are not the failed ones"
wait_for_job "$(awk '/^slurm_report_job /{print $2}' "$WORK/retry.log")"
strip_timing "$WORK/slurm/results.md" "$WORK/slurm" >"$WORK/slurm2.md"
diff "$WORK/local.md" "$WORK/slurm2.md" || fail "results.md after the retry differs"
# Nothing left to run: no submission, the report at once (exit 1: runs failed).
set +e
"$RUN" "$WORK/grid.pbtxt" --output_dir "$WORK/slurm" --launcher slurm >"$WORK/none.log" 2>&1
none_rc=$?
set -e
[ "$none_rc" = 1 ] && grep -q "nothing to submit to Slurm" "$WORK/none.log" ||
  { cat "$WORK/none.log"; fail "a grid with nothing to run: exit $none_rc"; }

# --- bad input: a clear error, exit 2, nothing submitted or finished -------
expect_error() {  # name, expected text, command...
  local name="$1" text="$2"
  shift 2
  set +e
  "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  set -e
  [ "$rc" = 2 ] || { cat "$WORK/$name.log"; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$text" "$WORK/$name.log" || { cat "$WORK/$name.log"; fail "$name: no '$text' in the error"; }
  if ls "$WORK/$name"/runs/*/metrics.json >/dev/null 2>&1; then fail "$name: a run was marked finished"; fi
  echo "ok: $name: $(grep error: "$WORK/$name.log" | head -n 1)"
}
expect_error no_sbatch "no \`sbatch\` on PATH" env PATH=/nonexistent "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/no_sbatch" --launcher slurm
expect_error bad_partition "--slurm_partition 'no_such_partition'" "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/bad_partition" --launcher slurm --slurm_partition no_such_partition
grep -q "Invalid partition name" "$WORK/bad_partition.log" || fail "sbatch's own message is not passed on"
expect_error too_many_cpus "--slurm_cpus_per_task 999" "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/too_many_cpus" --launcher slurm --slurm_cpus_per_task 999
expect_error bad_time "--slurm_time: '1h'" "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/bad_time" --launcher slurm --slurm_time 1h
expect_error jobs "--jobs is for --launcher local" "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/jobs" --launcher slurm --jobs 2
expect_error no_launcher "no launcher named 'pbs'; launchers: local, slurm" "$RUN" "$WORK/grid.pbtxt" \
  --output_dir "$WORK/no_launcher" --launcher pbs
[ -z "$(squeue -h -n "tvlab-$NAME" -o %i)" ] || { squeue; fail "a refused submission left jobs queued"; }
echo "PASS"
