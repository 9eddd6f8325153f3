#!/usr/bin/env bash
# Trains a tiny Llama-shaped run (GQA, INTERLEAVED RoPE, so the q/k
# permutation is exercised) and a tiny GPT-2-shaped one (learned positions,
# LayerNorm, tanh GELU), exports each with //experiments/hf:export --format hf,
# and compares logits and greedy generations with the real transformers
# package (bench/.venv; skipped, saying so, without it). docs/interop.md.
set -euo pipefail
source "$TEST_SRCDIR/tvlab/tests/bench_venv.sh" transformers torch
RUN="$TEST_SRCDIR/tvlab/experiments/run"
EXPORT="$TEST_SRCDIR/tvlab/experiments/hf/export"
DUMP="$TEST_SRCDIR/tvlab/tests/hf_logits_dump"
TASK='task { plugin: "text_lm" options { [type.googleapis.com/tvlab.TextLmOptions] { path: "/usr/share/common-licenses/GPL-3" context_length: 16 } } }
train { steps: 20 batch_size: 8 optimizer { adamw { lr: 3e-3 } } log_every: 10 }
eval { examples: 16 }'
cat > "$TEST_TMPDIR/llama.pbtxt" <<SPEC
name: "llama"
model {
  family: DECODER_ONLY d_model: 32 num_layers: 2 num_heads: 4 d_ff: 48 dropout: 0
  bias: false head_bias: false
  attention { layout: "gqa" layout_options { [type.googleapis.com/tvlab.GqaOptions] { num_kv_heads: 2 } } }
  position { plugin: "rope" options { [type.googleapis.com/tvlab.RopeOptions] { pairing: INTERLEAVED } } }
  norm { plugin: "rmsnorm" placement: "pre_ln" }
  ffn { plugin: "swiglu" }
}
$TASK
SPEC
cat > "$TEST_TMPDIR/gpt2.pbtxt" <<SPEC
name: "gpt2"
model {
  family: DECODER_ONLY d_model: 32 num_layers: 2 num_heads: 4 dropout: 0 head_bias: false
  position { plugin: "learned" }
  norm { plugin: "layernorm" placement: "pre_ln" }
  ffn { plugin: "gelu" options { [type.googleapis.com/tvlab.GeluFfnOptions] { tanh_approximation: true } } }
}
$TASK
SPEC
for arch in llama gpt2; do
  "$RUN" "$TEST_TMPDIR/$arch.pbtxt" --output_dir "$TEST_TMPDIR/run_$arch" >/dev/null
  "$EXPORT" --run_dir "$TEST_TMPDIR/run_$arch" --format hf --out "$TEST_TMPDIR/hf_$arch"
  "$BENCH_PYTHON" "$TEST_SRCDIR/tvlab/tests/hf_interop.py" "$TEST_TMPDIR/run_$arch" "$TEST_TMPDIR/hf_$arch" "$DUMP"
done
