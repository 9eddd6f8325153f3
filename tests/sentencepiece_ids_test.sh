#!/usr/bin/env bash
# Trains a tiny text_lm run with a SentencePiece tokenizer trained at run
# start, then checks with the real Python sentencepiece package (bench/.venv)
# that its saved tokenizer.model encodes text to the ids tvlab uses and that
# perplexity_per_byte is consistent (tests/sentencepiece_ids.py). Skipped,
# saying so, when the venv lacks sentencepiece.
set -euo pipefail
source "$TEST_SRCDIR/tvlab/tests/bench_venv.sh" sentencepiece
RUN="$TEST_SRCDIR/tvlab/experiments/run"
GENERATE="$TEST_SRCDIR/tvlab/experiments/generate"
DIR="$TEST_TMPDIR/sentencepiece"
cat > "$TEST_TMPDIR/tiny.pbtxt" <<'SPEC'
name: "sentencepiece"
model { family: DECODER_ONLY d_model: 16 num_layers: 1 num_heads: 2 d_ff: 32 }
task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] {
  path: "/usr/share/common-licenses/GPL-3" context_length: 16
  tokenizer { kind: SENTENCEPIECE vocab_size: 1000 } } } }
train { steps: 4 batch_size: 4 }
eval { examples: 40 }
SPEC
"$RUN" "$TEST_TMPDIR/tiny.pbtxt" --output_dir "$DIR" >/dev/null
"$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/sentencepiece_ids.py" "$DIR" "$GENERATE"
