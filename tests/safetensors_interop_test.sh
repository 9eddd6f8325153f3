#!/usr/bin/env bash
# Trains a tiny encoder-decoder, then reads its model.safetensors with an
# independent Python reader (tests/safetensors_reader.py) into PyTorch.
set -euo pipefail
RUN="$TEST_SRCDIR/tvlab/experiments/run"
DIR="$TEST_TMPDIR/interop"
cat > "$TEST_TMPDIR/tiny.pbtxt" <<'SPEC'
name: "interop"
model { family: ENCODER_DECODER d_model: 16 num_layers: 1 num_heads: 2 }
task { plugin: "reverse" options { [type.googleapis.com/tvlab.ReverseOptions] { max_length: 4 } } }
train { steps: 3 }
eval { examples: 10 decode_examples: 2 }
SPEC
"$RUN" "$TEST_TMPDIR/tiny.pbtxt" --output_dir "$DIR" >/dev/null 2>&1
/usr/bin/python3 "$TEST_SRCDIR/tvlab/tests/safetensors_reader.py" "$DIR"
