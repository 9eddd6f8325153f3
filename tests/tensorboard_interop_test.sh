#!/usr/bin/env bash
# Trains a tiny language model (with periodic evaluation), then reads its
# TensorBoard event file with the real tensorboard package (bench/.venv) and
# compares every scalar with train_log.csv and metrics.json. Skipped, saying
# so, when the venv lacks tensorboard.
set -euo pipefail
source "$TEST_SRCDIR/tvlab/tests/bench_venv.sh" tensorboard
RUN="$TEST_SRCDIR/tvlab/experiments/run"
DIR="$TEST_TMPDIR/tensorboard"
cat > "$TEST_TMPDIR/tiny.pbtxt" <<'SPEC'
name: "tensorboard"
model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }
task { plugin: "copy" options { [type.googleapis.com/tvlab.CopyOptions] { min_length: 1 max_length: 4 } } }
train { steps: 6 batch_size: 4 log_every: 2 eval_every: 3 }
eval { examples: 8 decode_examples: 4 }
SPEC
"$RUN" "$TEST_TMPDIR/tiny.pbtxt" --output_dir "$DIR" >/dev/null
# A sequence-pair task with decoded examples: exact_match is scored too.
"$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/tensorboard_reader.py" "$DIR" exact_match
